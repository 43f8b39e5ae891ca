/* cmd_train.c -- `arachne train --config FILE [--resume CKPT] [--threads N]`:
 * trains a policy on the compositions a JSON config lists (docs/training.md,
 * "Config file") and writes the policy (with JSON metadata), a CSV training
 * log, an SVG training curve and, when asked, checkpoints. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "util.h"

#define MAX_COMPS 4096

typedef struct setup {
    long global_batch, seq_len, max_depth;
    double headroom;
    int recompute, dist_optimizer, expert_tiling, exact_batch, stage_reversal, priced_resplit, stage_moves,
        stage_major, fsdp_search;
} setup;

typedef struct comp_env {
    arachne_model *m;
    arachne_cluster *c;
    arachne_profile *p;
    arachne_cost_model *cm;
    char name[160];
} comp_env;

typedef struct row {
    int update;
    double reward, best, entropy, grad_norm, seconds;
} row;

typedef struct run_ctx {
    arachne_trainer *t;
    int ncomp, tty, log_every, total;
    long start_update;
    double t0, seconds_before;
    row *rows;
    int nrows, cap_rows;
    const char *ckpt;
    long ckpt_every;
    int failed;
    /* model selection ("select_every"): the plans are scored every
     * select_every updates and the best-scoring weights kept in snap_path;
     * the score is validation_score on the "validation" compositions
     * (envs[ncomp .. ncomp + nval)) when the config has them, else the
     * greedy plans' mean normalised throughput on the training ones */
    arachne_policy *pol;
    const struct comp_env *envs;
    int nval;
    long select_every;
    double best_score;
    long best_update;
    char *snap_path;
} run_ctx;

static const char *const HYPER_KEYS[] = {
    "updates_schedule", "group_size", "ppo_epochs", "clip", "learning_rate", "entropy", "force_depth_start",
    "force_depth_end", "sil_interval", "sil_weight", "penalty", "max_grad_norm", "sil_neighbours", "sil_per_depth",
    "max_steps", "weight_decay", "sil_clip", "uniform_type_rollouts", "threads", "pcgrad",
    "sil_top", "greedy_rollouts", "size_curriculum", "refine_interval", "refine_evaluations",
    "entropy_end_scale", "entropy_decay_start", "rollout_interval", "rollout_evaluations", "rollout_weight",
    "sil_epochs", NULL
};

static int parse_setup(const ar_json *o, setup *s)
{
    static const char *const keys[] = { "global_batch", "seq_len", "recompute", "dist_optimizer", "headroom",
                                         "max_depth", "expert_tiling", "exact_batch", "stage_reversal",
                                         "priced_resplit", "stage_moves", "stage_major", "fsdp_search", NULL };
    const char *rc = NULL;
    int st;
    if (!o) return ARACHNE_OK;
    if (o->type != AR_JSON_OBJECT) return ar_json_error_at(o, "setup: expected an object");
    if ((st = ar_json_only_keys(o, keys)) || (st = ar_json_int(o, "global_batch", 0, 1, 1000000000L, &s->global_batch)) ||
        (st = ar_json_int(o, "seq_len", 0, 1, 10000000L, &s->seq_len)) ||
        (st = ar_json_int(o, "max_depth", 0, 1, 32, &s->max_depth)) ||
        (st = ar_json_num(o, "headroom", 0, &s->headroom)) || (st = ar_json_bool(o, "dist_optimizer", 0, &s->dist_optimizer)) ||
        (st = ar_json_bool(o, "expert_tiling", 0, &s->expert_tiling)) ||
        (st = ar_json_bool(o, "exact_batch", 0, &s->exact_batch)) ||
        (st = ar_json_bool(o, "stage_reversal", 0, &s->stage_reversal)) ||
        (st = ar_json_bool(o, "priced_resplit", 0, &s->priced_resplit)) ||
        (st = ar_json_bool(o, "stage_moves", 0, &s->stage_moves)) ||
        (st = ar_json_bool(o, "stage_major", 0, &s->stage_major)) ||
        (st = ar_json_bool(o, "fsdp_search", 0, &s->fsdp_search)) || (st = ar_json_str(o, "recompute", 0, &rc)))
        return st;
    if (rc) {
        if (!strcmp(rc, "none")) s->recompute = ARACHNE_RECOMPUTE_NONE;
        else if (!strcmp(rc, "selective")) s->recompute = ARACHNE_RECOMPUTE_SELECTIVE;
        else if (!strcmp(rc, "full")) s->recompute = ARACHNE_RECOMPUTE_FULL;
        else return ar_json_error_at(ar_json_get(o, "recompute"), "recompute: '%s' is not none, selective or full", rc);
    }
    return ARACHNE_OK;
}

static int build_env(comp_env *e, const char *model, const char *cluster, const setup *s)
{
    int st;
    if ((st = arachne_model_open(&e->m, model)) || (st = arachne_cluster_open(&e->c, cluster)) ||
        (st = arachne_profile_generate(&e->p, e->m, e->c, (int)s->seq_len)) ||
        (st = arachne_cost_model_create(&e->cm, e->m, e->c, e->p)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_GLOBAL_BATCH, (double)s->global_batch)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_RECOMPUTE, s->recompute)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_HEADROOM, s->headroom)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_MAX_DEPTH, (double)s->max_depth)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_DIST_OPTIMIZER, s->dist_optimizer)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_EXPERT_TILING, s->expert_tiling)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_EXACT_BATCH, s->exact_batch)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_STAGE_REVERSAL, s->stage_reversal)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_PRICED_RESPLIT, s->priced_resplit)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_STAGE_MOVES, s->stage_moves)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_STAGE_MAJOR, s->stage_major)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_FSDP_SEARCH, s->fsdp_search)))
        return st;
    return ARACHNE_OK;
}

static void free_env(comp_env *e)
{
    arachne_cost_model_destroy(e->cm);
    arachne_profile_destroy(e->p);
    arachne_cluster_destroy(e->c);
    arachne_model_destroy(e->m);
    memset(e, 0, sizeof *e);
}

/* One entry of "compositions": model or models x cluster or clusters. */
static int add_entry(const ar_json *item, const setup *global, comp_env *envs, int *n)
{
    static const char *const keys[] = { "model", "models", "cluster", "clusters", "name", "setup", NULL };
    const ar_json *models = NULL, *clusters = NULL;
    const char *model = NULL, *cluster = NULL, *name = NULL;
    setup s = *global;
    size_t nm, nc, i, j;
    int st;
    if (item->type != AR_JSON_OBJECT) return ar_json_error_at(item, "compositions: expected an object");
    if ((st = ar_json_only_keys(item, keys)) || (st = ar_json_str(item, "model", 0, &model)) ||
        (st = ar_json_arr(item, "models", 0, &models)) || (st = ar_json_str(item, "cluster", 0, &cluster)) ||
        (st = ar_json_arr(item, "clusters", 0, &clusters)) || (st = ar_json_str(item, "name", 0, &name)) ||
        (st = parse_setup(ar_json_get(item, "setup"), &s)))
        return st;
    if (!model == !models) return ar_json_error_at(item, "a composition needs exactly one of 'model' and 'models'");
    if (!cluster == !clusters) return ar_json_error_at(item, "a composition needs exactly one of 'cluster' and 'clusters'");
    nm = models ? models->count : 1;
    nc = clusters ? clusters->count : 1;
    if (name && nm * nc != 1) return ar_json_error_at(item, "'name' needs a single model and cluster");
    for (i = 0; i < nm; i++)
        for (j = 0; j < nc; j++) {
            const char *mi = model, *cj = cluster;
            comp_env *e;
            if (models) {
                if (models->items[i]->type != AR_JSON_STRING) return ar_json_error_at(models->items[i], "models: expected strings");
                mi = models->items[i]->string;
            }
            if (clusters) {
                if (clusters->items[j]->type != AR_JSON_STRING)
                    return ar_json_error_at(clusters->items[j], "clusters: expected strings");
                cj = clusters->items[j]->string;
            }
            if (*n >= MAX_COMPS) return ar_json_error_at(item, "more than %d compositions", MAX_COMPS);
            e = &envs[(*n)++];
            if (name) snprintf(e->name, sizeof e->name, "%s", name);
            else snprintf(e->name, sizeof e->name, "%s@%s", mi, cj);
            if ((st = build_env(e, mi, cj, &s))) {
                ar_error_prefix(e->name);
                return st;
            }
        }
    return ARACHNE_OK;
}

static void fmt_dur(char *buf, size_t cap, double s)
{
    long v = s < 0 ? 0 : (long)(s + 0.5);
    if (v >= 3600) snprintf(buf, cap, "%ldh%02ldm", v / 3600, (v / 60) % 60);
    else snprintf(buf, cap, "%ldm%02lds", v / 60, v % 60);
}

static int greedy_mean(const arachne_policy *pol, const arachne_trainer *t, const comp_env *envs, int n, double *out);
static int select_score(const run_ctx *r, const arachne_policy *pol, double *out);
static int select_step(run_ctx *r, int update);

static int progress(void *user, int update, int updates, double mean_reward, const double *best, int n)
{
    run_ctx *r = user;
    double now = ar_now() - r->t0, nb = 0, ent = 0, gn = 0, lo = 1e300, hi = 0, eta;
    char el[32], et[32], refined[64];
    double riv = 0;
    int i;
    (void)updates;
    (void)best;
    for (i = 0; i < n; i++) {
        double b = 0, ref = 1;
        arachne_trainer_get(r->t, i, ARACHNE_TRAIN_BEST_ITER_PER_S, &b);
        arachne_trainer_get(r->t, i, ARACHNE_TRAIN_REF_ITER_PER_S, &ref);
        b /= ref;
        if (b < lo) lo = b;
        if (b > hi) hi = b;
    }
    arachne_trainer_get(r->t, -1, ARACHNE_TRAIN_MEAN_NORM_BEST, &nb);
    arachne_trainer_get(r->t, -1, ARACHNE_TRAIN_ENTROPY_MEAN, &ent);
    arachne_trainer_get(r->t, -1, ARACHNE_TRAIN_GRAD_NORM, &gn);
    if (r->nrows == r->cap_rows) {
        int cap = r->cap_rows ? 2 * r->cap_rows : 256;
        row *nr = realloc(r->rows, (size_t)cap * sizeof *nr);
        if (!nr) { r->failed = 1; return 1; }
        r->rows = nr;
        r->cap_rows = cap;
    }
    r->rows[r->nrows].update = update;
    r->rows[r->nrows].reward = mean_reward;
    r->rows[r->nrows].best = nb;
    r->rows[r->nrows].entropy = ent;
    r->rows[r->nrows].grad_norm = gn;
    r->rows[r->nrows].seconds = r->seconds_before + now;
    r->nrows++;
    eta = update > r->start_update ? now / (double)(update - r->start_update) * (double)(r->total - update) : 0;
    fmt_dur(el, sizeof el, now);
    fmt_dur(et, sizeof et, eta);
    refined[0] = '\0';
    if (arachne_trainer_get_option(r->t, ARACHNE_TRAIN_REFINE_INTERVAL, &riv) == ARACHNE_OK && riv > 0) {
        double got = 0, missed = 0;
        arachne_trainer_get(r->t, -1, ARACHNE_TRAIN_REFINED_PLANS, &got);
        arachne_trainer_get(r->t, -1, ARACHNE_TRAIN_REFINE_MISSES, &missed);
        snprintf(refined, sizeof refined, "  refined %.0f (%.0f not replayed)", got, missed);
    }
    if (r->tty) {
        fprintf(stderr, "\rupdate %d/%d  reward %.3f  best %.3f (min %.3f, max %.3f) x ref  entropy %.2f%s  %s  ETA %s   ",
                update, r->total, mean_reward, nb, lo, hi, ent, refined, el, et);
        if (update == r->total) fputc('\n', stderr);
    } else if (update % r->log_every == 0 || update == r->total) {
        fprintf(stderr, "update %d/%d  reward %.3f  best %.3f (min %.3f, max %.3f) x ref  entropy %.2f%s  %s  ETA %s\n",
                update, r->total, mean_reward, nb, lo, hi, ent, refined, el, et);
    }
    fflush(stderr);
    if (r->select_every > 0 && update % r->select_every == 0 && select_step(r, update)) {
        if (r->tty) fputc('\n', stderr);
        r->failed = 1;
        return 1;
    }
    if (r->ckpt && r->ckpt_every > 0 && update % r->ckpt_every == 0 && update < r->total) {
        int st = arachne_trainer_save_checkpoint(r->t, r->ckpt);
        if (st) {
            if (r->tty) fputc('\n', stderr);
            cli_lib_fail(st, "train: checkpoint");
            r->failed = 1;
            return 1;
        }
    }
    return 0;
}

/* Rows of an earlier run's CSV (resume): keeps those up to `upto`. */
static void read_csv(run_ctx *r, const char *path, long upto)
{
    char *text = NULL, *line, *save = NULL;
    size_t len = 0;
    if (ar_read_file(path, &text, &len)) { arachne_clear_error(); return; }
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        row w;
        if (sscanf(line, "%d,%lf,%lf,%lf,%lf,%lf", &w.update, &w.reward, &w.best, &w.entropy, &w.grad_norm,
                   &w.seconds) != 6 || w.update > upto)
            continue;
        if (r->nrows == r->cap_rows) {
            int cap = r->cap_rows ? 2 * r->cap_rows : 256;
            row *nr = realloc(r->rows, (size_t)cap * sizeof *nr);
            if (!nr) break;
            r->rows = nr;
            r->cap_rows = cap;
        }
        r->rows[r->nrows++] = w;
        r->seconds_before = w.seconds;
    }
    free(text);
}

static int write_csv(const run_ctx *r, const char *path)
{
    ar_buf b;
    int i, st;
    ar_buf_init(&b);
    ar_buf_puts(&b, "update,mean_reward_norm,mean_best_norm,entropy,grad_norm,seconds\n");
    for (i = 0; i < r->nrows; i++) {
        const row *w = &r->rows[i];
        ar_buf_printf(&b, "%d,%.6f,%.6f,%.5f,%.5f,%.2f\n", w->update, w->reward, w->best, w->entropy, w->grad_norm,
                      w->seconds);
    }
    st = ar_buf_status(&b);
    if (!st) st = ar_write_file_atomic(path, b.data, b.len);
    ar_buf_free(&b);
    return st;
}

/* A "nice" tick step for a range. */
static double nice_step(double range, int want)
{
    double raw = range / want, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static int write_svg(const run_ctx *r, const char *path, const char *title)
{
    const double W = 760, H = 440, L = 70, R = 20, T = 50, B = 60;
    double ymin = 1e300, ymax = -1e300, xmax, ystep, xstep, v;
    ar_buf b;
    int i, k, st;
    if (r->nrows == 0) return ARACHNE_OK;
    for (i = 0; i < r->nrows; i++) {
        ymin = fmin(ymin, fmin(r->rows[i].reward, r->rows[i].best));
        ymax = fmax(ymax, fmax(r->rows[i].reward, r->rows[i].best));
    }
    if (ymin > 0) ymin = 0;
    if (ymax <= ymin) ymax = ymin + 1;
    ystep = nice_step(ymax - ymin, 6);
    ymin = floor(ymin / ystep) * ystep;
    ymax = ceil(ymax / ystep) * ystep;
    xmax = r->rows[r->nrows - 1].update > 1 ? r->rows[r->nrows - 1].update : 2;
    xstep = nice_step(xmax, 8);
    if (xstep < 1) xstep = 1;
#define PX(x) (L + (W - L - R) * (x) / xmax)
#define PY(y) (T + (H - T - B) * (1 - ((y) - ymin) / (ymax - ymin)))
    ar_buf_init(&b);
    ar_buf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
                      "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    ar_buf_printf(&b, "<rect width=\"%g\" height=\"%g\" fill=\"white\"/>\n", W, H);
    ar_buf_puts(&b, "<text x=\"380\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">Training curve: ");
    {
        const char *s;
        for (s = title; *s; s++) {
            if (*s == '<') ar_buf_puts(&b, "&lt;");
            else if (*s == '>') ar_buf_puts(&b, "&gt;");
            else if (*s == '&') ar_buf_puts(&b, "&amp;");
            else ar_buf_put(&b, s, 1);
        }
    }
    ar_buf_puts(&b, "</text>\n");
    /* grid and ticks */
    for (v = ymin, k = 0; v <= ymax + 1e-9 && k < 100; v += ystep, k++) {
        ar_buf_printf(&b, "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", L, PY(v), W - R, PY(v));
        ar_buf_printf(&b, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, PY(v) + 4,
                      fabs(v) < 1e-12 ? 0.0 : v);
    }
    for (v = 0, k = 0; v <= xmax + 1e-9 && k < 100; v += xstep, k++) {
        ar_buf_printf(&b, "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#333\"/>\n", PX(v), H - B, PX(v),
                      H - B + 5);
        ar_buf_printf(&b, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n", PX(v), H - B + 19, v);
    }
    ar_buf_printf(&b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#333\"/>\n", L, H - B, W - R, H - B);
    ar_buf_printf(&b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#333\"/>\n", L, T, L, H - B);
    ar_buf_printf(&b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">update</text>\n", (L + W - R) / 2, H - 18);
    ar_buf_printf(&b, "<text x=\"18\" y=\"%g\" text-anchor=\"middle\" transform=\"rotate(-90 18 %g)\">"
                      "throughput / reference throughput (mean over compositions)</text>\n", (T + H - B) / 2, (T + H - B) / 2);
    /* series */
    for (k = 0; k < 2; k++) {
        ar_buf_printf(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"",
                      k == 0 ? "#1f77b4" : "#ff7f0e", k == 0 ? "2" : "1.2");
        for (i = 0; i < r->nrows; i++)
            ar_buf_printf(&b, "%s%.1f,%.1f", i ? " " : "", PX(r->rows[i].update),
                          PY(k == 0 ? r->rows[i].best : r->rows[i].reward));
        ar_buf_puts(&b, "\"/>\n");
    }
    /* legend */
    ar_buf_printf(&b, "<rect x=\"%g\" y=\"%g\" width=\"300\" height=\"44\" fill=\"white\" stroke=\"#999\"/>\n", W - R - 310,
                  H - B - 54);
    ar_buf_printf(&b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#1f77b4\" stroke-width=\"2\"/>"
                      "<text x=\"%g\" y=\"%g\">best plan found (iter/s / reference)</text>\n",
                  W - R - 300, H - B - 40, W - R - 276, H - B - 40, W - R - 270, H - B - 36);
    ar_buf_printf(&b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ff7f0e\" stroke-width=\"1.2\"/>"
                      "<text x=\"%g\" y=\"%g\">mean rollout reward (iter/s / reference)</text>\n",
                  W - R - 300, H - B - 20, W - R - 276, H - B - 20, W - R - 270, H - B - 16);
    ar_buf_puts(&b, "</svg>\n");
#undef PX
#undef PY
    st = ar_buf_status(&b);
    if (!st) st = ar_write_file_atomic(path, b.data, b.len);
    ar_buf_free(&b);
    return st;
}

/* iter/s of pol's plan for cm with `samples` constructions (1: greedy). */
static int plan_iter_per_s(const arachne_policy *pol, const arachne_cost_model *cm, int samples, uint64_t seed,
                           double *v)
{
    arachne_plan *p = NULL;
    int st = arachne_plan_build(&p, pol, cm, samples, seed);
    *v = 0;
    if (st) return st;
    arachne_plan_get(p, ARACHNE_PLAN_ITER_PER_S, v);
    arachne_plan_destroy(p);
    return ARACHNE_OK;
}

/* Mean over compositions of the greedy plan's iter/s over the reference. */
static int greedy_mean(const arachne_policy *pol, const arachne_trainer *t, const comp_env *envs, int n, double *out)
{
    double s = 0;
    int i, st;
    for (i = 0; i < n; i++) {
        double v = 0, ref = 1;
        if ((st = plan_iter_per_s(pol, envs[i].cm, 1, 0, &v))) return st;
        arachne_trainer_get(t, i, ARACHNE_TRAIN_REF_ITER_PER_S, &ref);
        s += v / ref;
    }
    *out = n ? s / n : 0;
    return ARACHNE_OK;
}

/* The validation score: over the validation compositions, the geometric
 * mean of sqrt(greedy iter/s x best-of-VAL_SAMPLES iter/s), the two ways
 * the policy plans (greedy, and greedy plus sampled plans with the best
 * kept; sampling seed 1, so the score is deterministic).  A geometric mean
 * is scale-free: compositions whose throughputs differ by orders of
 * magnitude weigh alike without a reference.  No plan counts as 1e-9. */
#define VAL_SAMPLES 16
static int validation_score(const arachne_policy *pol, const comp_env *envs, int n, double *out)
{
    double s = 0;
    int i, k, st;
    for (i = 0; i < n; i++) {
        for (k = 0; k < 2; k++) {
            double v = 0;
            if ((st = plan_iter_per_s(pol, envs[i].cm, k ? VAL_SAMPLES : 1, 1, &v))) return st;
            s += 0.5 * log(v > 1e-9 ? v : 1e-9);
        }
    }
    *out = n ? exp(s / n) : 0;
    return ARACHNE_OK;
}

/* The model-selection score of pol's plans (see run_ctx). */
static int select_score(const run_ctx *r, const arachne_policy *pol, double *out)
{
    if (r->nval > 0) return validation_score(pol, r->envs + r->ncomp, r->nval, out);
    return greedy_mean(pol, r->t, r->envs, r->ncomp, out);
}

/* Scores the plans of the current weights (select_score); when they beat the best
 * so far, writes the weights (with the score in the metadata) to the
 * snapshot file.  Returns nonzero after printing an error. */
static int select_step(run_ctx *r, int update)
{
    double score = 0;
    char meta[96];
    int st = select_score(r, r->pol, &score);
    if (st) return cli_lib_fail(st, "train: scoring the plans for model selection");
    if (score <= r->best_score) return 0;
    snprintf(meta, sizeof meta, "{\"select_score\":%.17g,\"select_update\":%d}", score, update);
    if ((st = arachne_policy_set_metadata(r->pol, meta)) ||
        (st = arachne_policy_save(r->pol, r->snap_path)))
        return cli_lib_fail(st, "train: writing the selection snapshot");
    r->best_score = score;
    r->best_update = update;
    return 0;
}

/* After --resume: the snapshot an earlier run of the same config left, if
 * it is not newer than the checkpoint. */
static void select_restore(run_ctx *r)
{
    arachne_policy *p = NULL;
    ar_json *m = NULL;
    const char *meta = NULL;
    double sc = 0, up = 0;
    if (arachne_policy_load(&p, r->snap_path) != ARACHNE_OK) return;
    if (arachne_policy_metadata(p, &meta) == ARACHNE_OK && meta && ar_json_parse(&m, meta, strlen(meta), "snapshot") == ARACHNE_OK &&
        ar_json_num(m, "select_score", 1, &sc) == ARACHNE_OK && ar_json_num(m, "select_update", 1, &up) == ARACHNE_OK &&
        up <= (double)r->start_update) {
        r->best_score = sc;
        r->best_update = (long)up;
    }
    ar_json_free(m);
    arachne_policy_destroy(p);
}

static int set_hyper(arachne_trainer *t, const ar_json *h)
{
    int i, st;
    if (!h) return ARACHNE_OK;
    if (h->type != AR_JSON_OBJECT) return ar_json_error_at(h, "hyper: expected an object");
    if ((st = ar_json_only_keys(h, HYPER_KEYS))) return st;
    for (i = 0; HYPER_KEYS[i]; i++) {
        const ar_json *v = ar_json_get(h, HYPER_KEYS[i]);
        double d;
        if (!v) continue;
        if (v->type == AR_JSON_BOOL) d = v->boolean;
        else if (v->type == AR_JSON_NUMBER) d = v->number;
        else return ar_json_error_at(v, "%s: expected a number", HYPER_KEYS[i]);
        if ((st = arachne_trainer_set(t, i, d))) {
            ar_error_prefix(HYPER_KEYS[i]);
            return st;
        }
    }
    return ARACHNE_OK;
}

int cmd_train(int argc, char **argv)
{
    const char *config = NULL, *resume = NULL, *threads_s = NULL, *stop_s = NULL, *pos[1];
    const char *name = "train", *out_policy = NULL, *out_csv = NULL, *out_svg = NULL, *out_ckpt = NULL, *init = NULL;
    cli_opt opts[4] = { { "config", 1, &config, NULL }, { "resume", 1, &resume, NULL }, { "threads", 1, &threads_s, NULL },
                        { "stop-after", 1, &stop_s, NULL } };
    ar_json *cfg = NULL;
    const ar_json *comps = NULL, *vals = NULL, *out = NULL, *pol_o = NULL;
    comp_env *envs = NULL;
    setup global = { 512, 4096, 16, 0.08, ARACHNE_RECOMPUTE_SELECTIVE, 1, 1, 1, 1, 1, 1, 1, 1 };
    double greedy0 = 0, greedy1 = 0, final_score = 0;
    long updates = 100, seed = 1, threads = -1, stop_after = 0, run_to, hidden = 0, layers = 0, init_seed = 1, log_every = 10, ckpt_every = 0;
    long select_every = 0;
    arachne_policy *chosen = NULL;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    run_ctx r;
    int npos, rc, st, n = 0, nall = 0, i;
    size_t k;
    memset(&r, 0, sizeof r);
    if ((rc = cli_parse("train", argc, argv, opts, 4, pos, 0, &npos))) return rc;
    if (!config) return cli_usage_error("train", "--config is required");
    if (threads_s && (rc = cli_int("train", "threads", threads_s, 0, 1024, &threads))) return rc;
    if (stop_s && (rc = cli_int("train", "stop-after", stop_s, 1, 100000000L, &stop_after))) return rc;
    st = ar_json_parse_file(&cfg, config);
    if (st) return cli_lib_fail(st, "train: --config");
    {
        static const char *const keys[] = { "name", "seed", "updates", "log_every", "policy", "setup", "hyper",
                                             "compositions", "validation", "output", NULL };
        static const char *const pkeys[] = { "hidden", "layers", "init_seed", "init", NULL };
        static const char *const okeys[] = { "policy", "csv", "svg", "checkpoint", "checkpoint_every", "select_every", NULL };
        if (cfg->type != AR_JSON_OBJECT) { st = ar_json_error_at(cfg, "expected an object"); goto lib_fail; }
        if ((st = ar_json_only_keys(cfg, keys)) || (st = ar_json_str(cfg, "name", 0, &name)) ||
            (st = ar_json_int(cfg, "seed", 0, 0, 0x7fffffffL, &seed)) ||
            (st = ar_json_int(cfg, "updates", 1, 1, 100000000L, &updates)) ||
            (st = ar_json_int(cfg, "log_every", 0, 1, 100000000L, &log_every)) ||
            (st = ar_json_obj(cfg, "policy", 0, &pol_o)) || (st = parse_setup(ar_json_get(cfg, "setup"), &global)) ||
            (st = ar_json_arr(cfg, "compositions", 1, &comps)) || (st = ar_json_arr(cfg, "validation", 0, &vals)) ||
            (st = ar_json_obj(cfg, "output", 1, &out)))
            goto lib_fail;
        if (pol_o && ((st = ar_json_only_keys(pol_o, pkeys)) || (st = ar_json_int(pol_o, "hidden", 0, 1, 4096, &hidden)) ||
                      (st = ar_json_int(pol_o, "layers", 0, 1, 8, &layers)) ||
                      (st = ar_json_int(pol_o, "init_seed", 0, 0, 0x7fffffffL, &init_seed)) ||
                      (st = ar_json_str(pol_o, "init", 0, &init))))
            goto lib_fail;
        if ((st = ar_json_only_keys(out, okeys)) || (st = ar_json_str(out, "policy", 1, &out_policy)) ||
            (st = ar_json_str(out, "csv", 0, &out_csv)) || (st = ar_json_str(out, "svg", 0, &out_svg)) ||
            (st = ar_json_str(out, "checkpoint", 0, &out_ckpt)) ||
            (st = ar_json_int(out, "checkpoint_every", 0, 0, 100000000L, &ckpt_every)) ||
            (st = ar_json_int(out, "select_every", 0, 0, 100000000L, &select_every)))
            goto lib_fail;
    }
    {
        /* each output its own file: a CSV log named like the policy used to
         * overwrite it every log line (and the policy the log) */
        const char *outs[5] = { out_policy, out_csv, out_svg, out_ckpt, config };
        const char *keys[5] = { "policy", "csv", "svg", "checkpoint", "the config" };
        int a, b;
        for (a = 0; a < 4; a++)
            for (b = a + 1; b < 5; b++)
                if (outs[a] && outs[b] && cli_same_file(outs[a], outs[b])) {
                    rc = cli_fail("train: %s: output.%s and %s%s name the same file '%s'", config, keys[a],
                                  b < 4 ? "output." : "", keys[b], outs[a]);
                    goto done;
                }
    }
    envs = calloc(MAX_COMPS, sizeof *envs);
    if (!envs) { rc = cli_fail("train: out of memory"); goto done; }
    /* envs[0 .. n): training, envs[n .. nall): validation; nall counts every built one */
    for (k = 0; k < comps->count; k++)
        if ((st = add_entry(comps->items[k], &global, envs, &nall))) goto lib_fail;
    n = nall;
    if (n == 0) { rc = cli_fail("train: %s: no compositions", config); goto done; }
    for (k = 0; vals && k < vals->count; k++)
        if ((st = add_entry(vals->items[k], &global, envs, &nall))) goto lib_fail;
    if (vals && nall == n) { rc = cli_fail("train: %s: 'validation' lists no compositions", config); goto done; }
    if (vals && select_every == 0) { rc = cli_fail("train: %s: 'validation' needs output.select_every", config); goto done; }
    if (init) st = arachne_policy_load(&pol, init);
    else st = arachne_policy_create(&pol, (uint64_t)init_seed, (int)hidden, (int)layers);
    if (st) goto lib_fail;
    if ((st = arachne_trainer_create(&t, pol, (uint64_t)seed))) goto lib_fail;
    if ((st = arachne_trainer_set(t, ARACHNE_TRAIN_UPDATES, (double)updates))) goto lib_fail;
    if ((st = set_hyper(t, ar_json_get(cfg, "hyper")))) goto lib_fail;
    if (threads >= 0 && (st = arachne_trainer_set(t, ARACHNE_TRAIN_THREADS, (double)threads))) goto lib_fail;
    for (i = 0; i < n; i++)
        if ((st = arachne_trainer_add_composition(t, envs[i].cm, envs[i].name))) goto lib_fail;
    r.t = t;
    r.ncomp = n;
    r.tty = isatty(STDERR_FILENO);
    r.log_every = (int)log_every;
    r.total = (int)updates;
    r.ckpt = out_ckpt;
    r.ckpt_every = ckpt_every;
    r.pol = pol;
    r.envs = envs;
    r.nval = nall - n;
    r.select_every = select_every;
    r.best_score = -1;
    if (select_every > 0) {
        ar_buf b;
        ar_buf_init(&b);
        ar_buf_printf(&b, "%s.select", out_policy);
        if (ar_buf_status(&b)) { ar_buf_free(&b); rc = cli_fail("train: out of memory"); goto done; }
        r.snap_path = b.data;
    }
    if (resume) {
        double done_u = 0;
        if ((st = arachne_trainer_load_checkpoint(t, resume))) { rc = cli_lib_fail(st, "train: --resume"); goto done; }
        arachne_trainer_get(t, -1, ARACHNE_TRAIN_UPDATES_DONE, &done_u);
        r.start_update = (long)done_u;
        if (out_csv) read_csv(&r, out_csv, r.start_update);
        fprintf(stderr, "arachne: train: resuming %s after update %ld\n", resume, r.start_update);
        if (select_every > 0) select_restore(&r);
    }
    if ((st = greedy_mean(pol, t, envs, n, &greedy0))) goto lib_fail;
    fprintf(stderr, "arachne: train: %s: %d compositions, %ld updates; greedy plans %.3f x reference before\n", name, n,
            updates, greedy0);
    r.t0 = ar_now();
    run_to = updates;
    if (stop_after > 0 && r.start_update + stop_after < updates) run_to = r.start_update + stop_after;
    if (r.start_update < run_to) {
        st = arachne_trainer_run(t, (int)(run_to - r.start_update), progress, &r);
        if (st) {
            if (r.tty) fputc('\n', stderr);
            rc = r.failed ? CLI_FAIL : cli_lib_fail(st, "train");
            goto done;
        }
    }
    {
        ar_buf meta;
        double nb = 0;
        arachne_trainer_get(t, -1, ARACHNE_TRAIN_MEAN_NORM_BEST, &nb);
        if ((st = greedy_mean(pol, t, envs, n, &greedy1))) goto lib_fail;
        final_score = greedy1; /* select_score without a validation list */
        if (r.nval > 0 && (st = select_score(&r, pol, &final_score))) goto lib_fail;
        if (select_every > 0 && run_to == updates && r.best_score > final_score) {
            /* model selection: the weights whose plans scored best */
            if ((st = arachne_policy_load(&chosen, r.snap_path))) { rc = cli_lib_fail(st, "train: reading the selection snapshot"); goto done; }
            fprintf(stderr, "arachne: train: keeping the weights of update %ld (%s %.4g; last update %.4g)\n",
                    r.best_update, r.nval ? "validation score, iter/s" : "greedy plans x reference", r.best_score,
                    final_score);
            /* without a validation list the kept score is that greedy mean */
            if (r.nval == 0) greedy1 = r.best_score;
            else if ((st = greedy_mean(chosen, t, envs, n, &greedy1))) goto lib_fail;
            final_score = r.best_score;
        }
        ar_buf_init(&meta);
        ar_buf_puts(&meta, "{\"config\":");
        ar_json_put_string(&meta, name);
        ar_buf_printf(&meta, ",\"updates\":%ld,\"seed\":%ld,", run_to > r.start_update ? run_to : r.start_update, seed);
        if (chosen) ar_buf_printf(&meta, "\"selected_update\":%ld,", r.best_update);
        ar_buf_puts(&meta, "\"mean_norm_best\":");
        ar_json_put_number(&meta, nb);
        ar_buf_puts(&meta, ",\"mean_norm_greedy\":");
        ar_json_put_number(&meta, greedy1);
        ar_buf_puts(&meta, ",\"compositions\":[");
        for (i = 0; i < n; i++) {
            if (i) ar_buf_puts(&meta, ",");
            ar_json_put_string(&meta, envs[i].name);
        }
        ar_buf_puts(&meta, "]");
        if (r.nval > 0) {
            ar_buf_puts(&meta, ",\"validation_score_iter_per_s\":");
            ar_json_put_number(&meta, final_score);
            ar_buf_puts(&meta, ",\"validation\":[");
            for (i = n; i < nall; i++) {
                if (i > n) ar_buf_puts(&meta, ",");
                ar_json_put_string(&meta, envs[i].name);
            }
            ar_buf_puts(&meta, "]");
        }
        ar_buf_puts(&meta, "}");
        st = ar_buf_status(&meta);
        if (!st) st = arachne_policy_set_metadata(chosen ? chosen : pol, meta.data);
        ar_buf_free(&meta);
        if (st) goto lib_fail;
        if ((st = arachne_policy_save(chosen ? chosen : pol, out_policy))) { rc = cli_lib_fail(st, "train: writing the policy"); goto done; }
        if (select_every > 0 && run_to == updates) remove(r.snap_path);
        if (out_csv && (st = write_csv(&r, out_csv))) { rc = cli_lib_fail(st, "train: writing the CSV log"); goto done; }
        if (out_svg && (st = write_svg(&r, out_svg, name))) { rc = cli_lib_fail(st, "train: writing the SVG"); goto done; }
        if (out_ckpt && (st = arachne_trainer_save_checkpoint(t, out_ckpt))) {
            rc = cli_lib_fail(st, "train: checkpoint");
            goto done;
        }
        fprintf(stderr,
                "arachne: train: wrote %s (%.1f s); over the compositions, mean throughput / reference: "
                "greedy plans %.3f (before %.3f), best plans found %.3f\n",
                out_policy, ar_now() - r.t0, greedy1, greedy0, nb);
        if (run_to < updates)
            fprintf(stderr, "arachne: train: stopped after update %ld of %ld; continue with --resume %s\n", run_to, updates,
                    out_ckpt ? out_ckpt : "(no checkpoint configured)");
    }
    rc = CLI_OK;
    goto done;
lib_fail:
    rc = cli_lib_fail(st, "train");
done:
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    arachne_policy_destroy(chosen);
    free(r.snap_path);
    if (envs)
        for (i = 0; i < nall; i++) free_env(&envs[i]);
    free(envs);
    free(r.rows);
    ar_json_free(cfg);
    return rc;
}
