/* replan.c -- arachne_replan: plan the changed cluster, carry the running
 * plan over to it when its GPUs are all still there, price the switch and
 * decide keep or switch; the options and decision handles.  The rules are
 * in docs/replan.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "json.h"
#include "replan.h"

struct arachne_replan_options {
    double horizon_s, restart_s;
    int samples;
    uint64_t seed;
    long refine; /* refinement fills for the new plan, 0: none */
};

struct arachne_replan_decision {
    int action, reason, running_valid, gpus_left, idle_total;
    double old_sps, new_sps, gained, lost, net, cost_s, horizon_s, restart_s;
    ar_migration mig;
    int ntypes;
    char type_names[AR_MAX_TYPES][AR_NAME_MAX];
    int idle[AR_MAX_TYPES];
    char *explain;
    char *json;
};

#define DEFAULT_HORIZON_S 1800.0
#define DEFAULT_RESTART_S 20.0
#define MAX_SPAN_S 1e9 /* horizon and restart cost at most (about 32 years) */
#define MAX_SEED 9007199254740992.0 /* 2^53: every integer up to it is a double */

/* ---- options ---------------------------------------------------------------- */

static void opts_default(arachne_replan_options *o)
{
    o->horizon_s = DEFAULT_HORIZON_S;
    o->restart_s = DEFAULT_RESTART_S;
    o->samples = 1;
    o->seed = 0;
    o->refine = 0;
}

int arachne_replan_options_create(arachne_replan_options **out)
{
    arachne_replan_options *o;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan options: out is NULL");
    *out = NULL;
    o = ar_calloc(1, sizeof *o);
    if (!o) return ARACHNE_E_NO_MEMORY;
    opts_default(o);
    *out = o;
    return ARACHNE_OK;
}

void arachne_replan_options_destroy(arachne_replan_options *opts) { free(opts); }

int arachne_replan_options_set(arachne_replan_options *o, int key, double v)
{
    if (!o) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan options: NULL options");
    if (!isfinite(v)) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan option %d: value is not finite", key);
    switch (key) {
    case ARACHNE_REPLAN_OPT_HORIZON_S:
        /* bounded so that samples = throughput x horizon stays finite
         * (1e308 made the decision's gains inf and its net NaN) */
        if (!(v > 0.0 && v <= MAX_SPAN_S))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan option horizon: %g s, expected in (0, 1e9]", v);
        o->horizon_s = v;
        return ARACHNE_OK;
    case ARACHNE_REPLAN_OPT_RESTART_S:
        if (!(v >= 0.0 && v <= MAX_SPAN_S))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan option restart cost: %g s, expected in [0, 1e9]", v);
        o->restart_s = v;
        return ARACHNE_OK;
    case ARACHNE_REPLAN_OPT_SAMPLES:
        if (v != floor(v) || v < 1.0 || v > 100000.0)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan option samples: %g, expected an integer in 1..100000", v);
        o->samples = (int)v;
        return ARACHNE_OK;
    case ARACHNE_REPLAN_OPT_SEED:
        if (v != floor(v) || v < 0.0 || v > MAX_SEED)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan option seed: %g, expected an integer in 0..2^53", v);
        o->seed = (uint64_t)v;
        return ARACHNE_OK;
    case ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS:
        if (v != floor(v) || v < 0.0 || v > 1e8)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "replan option refine evaluations: %g, expected an integer in 0..100000000", v);
        o->refine = (long)v;
        return ARACHNE_OK;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan option %d: unknown key (0..4)", key);
    }
}

int arachne_replan_options_get(const arachne_replan_options *o, int key, double *out)
{
    if (!o || !out) return AR_NULL_ARG("replan options get", o, out);
    switch (key) {
    case ARACHNE_REPLAN_OPT_HORIZON_S: *out = o->horizon_s; return ARACHNE_OK;
    case ARACHNE_REPLAN_OPT_RESTART_S: *out = o->restart_s; return ARACHNE_OK;
    case ARACHNE_REPLAN_OPT_SAMPLES: *out = o->samples; return ARACHNE_OK;
    case ARACHNE_REPLAN_OPT_SEED: *out = (double)o->seed; return ARACHNE_OK;
    case ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS: *out = (double)o->refine; return ARACHNE_OK;
    default: return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan option %d: unknown key (0..4)", key);
    }
}

/* ---- node matching ------------------------------------------------------------ */

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

static int read_count(const char *spec, const char **p, long *out)
{
    char *end;
    long v;
    const char *q = skip_ws(*p);
    if (*q < '0' || *q > '9')
        return ar_error(ARACHNE_E_PARSE, "running plan's cluster '%s': offset %d: expected a number", spec,
                        (int)(q - spec) + 1);
    v = strtol(q, &end, 10);
    if (v < 1 || v > AR_MAX_TOTAL_GPUS)
        return ar_error(ARACHNE_E_PARSE, "running plan's cluster '%s': offset %d: count %ld out of range", spec,
                        (int)(q - spec) + 1, v);
    *out = v;
    *p = skip_ws(end);
    return ARACHNE_OK;
}

int ar_replan_node_map(const char *spec, const arachne_cluster *to, int **node_map, int **node_gpus, int *nold)
{
    const char *p = spec;
    int *map = NULL, *gpus = NULL, n = 0, cap = 0, st = ARACHNE_OK;
    char keys[AR_MAX_TYPES * 4][AR_NAME_MAX];
    int seen[AR_MAX_TYPES * 4], nkeys = 0;
    *node_map = *node_gpus = NULL;
    *nold = 0;
    if (!spec || !to) return AR_NULL_ARG("node map", spec, to);
    p = skip_ws(p);
    while (*p) {
        char name[AR_NAME_MAX], key[AR_NAME_MAX];
        size_t len = 0;
        int type, k, ordinal;
        const char *start = p;
        while (*p && *p != ':' && *p != ',') {
            if (len + 1 < sizeof name) name[len++] = *p;
            p++;
        }
        while (len > 0 && name[len - 1] == ' ') len--;
        name[len] = '\0';
        if (*p != ':' || len == 0 || !ar_gpu_name_key(name, key, sizeof key)) {
            st = ar_error(ARACHNE_E_PARSE, "running plan's cluster '%s': offset %d: expected TYPE:NODESxGPUS", spec,
                          (int)(start - spec) + 1);
            goto fail;
        }
        p++;
        type = ar_cluster_type_index(to, name);
        for (k = 0; k < nkeys; k++)
            if (strcmp(keys[k], key) == 0) break;
        if (k == nkeys) {
            if (nkeys == (int)AR_COUNT(seen)) {
                st = ar_error(ARACHNE_E_PARSE, "running plan's cluster '%s': too many GPU types", spec);
                goto fail;
            }
            memcpy(keys[nkeys], key, sizeof key);
            seen[nkeys++] = 0;
        }
        for (;;) {
            long cnt, g, i;
            if ((st = read_count(spec, &p, &cnt))) goto fail;
            if (*p != 'x' && *p != 'X') {
                st = ar_error(ARACHNE_E_PARSE, "running plan's cluster '%s': offset %d: expected 'x'", spec,
                              (int)(p - spec) + 1);
                goto fail;
            }
            p++;
            if ((st = read_count(spec, &p, &g))) goto fail;
            if ((long)n + cnt > AR_MAX_TOTAL_GPUS) {
                st = ar_error(ARACHNE_E_PARSE, "running plan's cluster '%s': too many nodes", spec);
                goto fail;
            }
            if (n + cnt > cap) {
                int nc = (int)AR_MAX(2L * cap, n + cnt);
                int *nm = ar_realloc(map, (size_t)nc * sizeof *nm), *ng;
                if (!nm) { st = ARACHNE_E_NO_MEMORY; goto fail; }
                map = nm;
                ng = ar_realloc(gpus, (size_t)nc * sizeof *ng);
                if (!ng) { st = ARACHNE_E_NO_MEMORY; goto fail; }
                gpus = ng;
                cap = nc;
            }
            for (i = 0; i < cnt; i++) {
                int node = -1, idx;
                ordinal = seen[k]++;
                if (type >= 0)
                    for (idx = 0; idx < to->nnodes; idx++)
                        if (to->nodes[idx].type == type && ordinal-- == 0) { node = idx; break; }
                map[n] = node;
                gpus[n] = (int)g;
                n++;
            }
            if (*p != '+') break;
            p++;
        }
        p = skip_ws(p);
        if (*p == ',') p = skip_ws(p + 1);
        else if (*p) {
            st = ar_error(ARACHNE_E_PARSE, "running plan's cluster '%s': offset %d: expected ',' or '+'", spec,
                          (int)(p - spec) + 1);
            goto fail;
        }
    }
    *node_map = map;
    *node_gpus = gpus;
    *nold = n;
    return ARACHNE_OK;
fail:
    free(map);
    free(gpus);
    return st;
}

/* ---- the running plan on the new cluster ------------------------------------- */

/* Samples a plan trains per second.  Under the exact-batch rule (the
 * default) a plan that runs more samples than the batch counts the batch
 * (the surplus is lost time, as the planners rank it); without it
 * (ARACHNE_OPT_EXACT_BATCH 0, the CLI's --allow-batch-rounding) the plan
 * trains the batch it runs. */
static double trained_sps(const arachne_plan *p)
{
    long run = ar_plan_samples_run(p);
    if (p->setup.exact_batch || run <= p->setup.global_batch) return p->samples_per_s;
    return (double)run * p->iter_per_s;
}

/* Moves `running` onto cm's cluster (old_node per rank, all >= 0) and
 * prices it there.  On failure the message says why it cannot run. */
static int carry_over(const arachne_cost_model *cm, const arachne_plan *running, const int *old_node,
                      arachne_plan *out)
{
    const arachne_cluster *c = cm->cluster;
    const char *spec = NULL;
    int st, j, s, i;
    char *dup;
    if ((st = ar_plan_copy(out, running))) return st;
    if ((st = arachne_cluster_to_string(c, &spec))) return st;
    if (!(dup = ar_strdup(spec))) return ARACHNE_E_NO_MEMORY;
    free(out->cluster_spec);
    out->cluster_spec = dup;
    for (j = 0; j < out->ntemplates; j++)
        for (s = 0; s < out->t[j].depth; s++) {
            ar_stage *S = &out->t[j].stages[s];
            int nt = ar_cluster_type_index(c, ar_plan_type_name(running, S->type));
            if (nt < 0)
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: GPU type %s is not in the new cluster",
                                j, s, ar_plan_type_name(running, S->type));
            S->type = nt;
        }
    for (i = 0; i < out->nranks; i++) out->ranks[i].node = old_node[i];
    out->ntypes = c->ntypes;
    memset(out->type_names, 0, sizeof out->type_names);
    for (i = 0; i < c->ntypes && i < AR_MAX_TYPES; i++) snprintf(out->type_names[i], AR_NAME_MAX, "%s", c->types[i].name);
    out->gpus_total = c->total_gpus;
    out->file_iteration_s = 0.0;
    if ((st = ar_plan_validate(cm, out)) || (st = ar_plan_price(cm, out))) return st;
    ar_plan_bind(out, cm); /* its file records the new cluster, not the old one */
    return ar_plan_finish(out);
}

/* ---- decision text ------------------------------------------------------------ */

static const char *action_name(int a) { return a == ARACHNE_REPLAN_SWITCH ? "switch" : "keep"; }

static const char *reason_name(int r)
{
    switch (r) {
    case ARACHNE_REPLAN_REASON_NOT_FASTER: return "not-faster";
    case ARACHNE_REPLAN_REASON_GAIN_TOO_SMALL: return "gain-too-small";
    case ARACHNE_REPLAN_REASON_GAIN: return "gain";
    default: return "running-invalid";
    }
}

static int build_texts(arachne_replan_decision *d, const char *why_invalid, const arachne_cluster *c)
{
    ar_buf b;
    int i, t;
    double pct = d->old_sps > 0.0 ? 100.0 * (d->new_sps - d->old_sps) / d->old_sps : 0.0;
    double move_s = d->cost_s - d->restart_s;
    ar_buf_init(&b);
    switch (d->reason) {
    case ARACHNE_REPLAN_REASON_NOT_FASTER:
        ar_buf_printf(&b, "keep: the new plan (%.4g samples/s) is not faster than the running plan (%.4g samples/s)",
                      d->new_sps, d->old_sps);
        break;
    case ARACHNE_REPLAN_REASON_GAIN_TOO_SMALL:
        ar_buf_printf(&b, "keep: the new plan is %.1f%% faster (%.4g vs %.4g samples/s), but after a %.1f s switch "
                      "it gains %.0f samples over the %.0f s horizon, not more than the %.0f samples lost while "
                      "switching", pct, d->new_sps, d->old_sps, d->cost_s, d->gained, d->horizon_s, d->lost);
        break;
    case ARACHNE_REPLAN_REASON_GAIN:
        ar_buf_printf(&b, "switch: the new plan is %.1f%% faster (%.4g vs %.4g samples/s); after a %.1f s switch "
                      "(%.1f s moving %.3g GB + %.1f s restart) it gains %.0f samples over the %.0f s horizon, "
                      "more than the %.0f samples lost while switching", pct, d->new_sps, d->old_sps, d->cost_s,
                      move_s, d->mig.bytes / 1e9, d->restart_s, d->gained, d->horizon_s, d->lost);
        break;
    default:
        ar_buf_printf(&b, "switch: the running plan cannot run on the new cluster (%s); the new plan runs at %.4g "
                      "samples/s after a %.1f s switch (%.1f s moving %.3g GB + %.1f s restart)",
                      why_invalid ? why_invalid : "?", d->new_sps, d->cost_s, move_s, d->mig.bytes / 1e9, d->restart_s);
        break;
    }
    if (ar_buf_status(&b)) { ar_buf_free(&b); return ARACHNE_E_NO_MEMORY; }
    d->explain = b.data;

    ar_buf_init(&b);
    ar_buf_puts(&b, "{\n  \"format\": \"arachne-replan\",\n  \"version\": 1,\n  \"action\": ");
    ar_json_put_string(&b, action_name(d->action));
    ar_buf_puts(&b, ",\n  \"reason\": ");
    ar_json_put_string(&b, reason_name(d->reason));
    ar_buf_puts(&b, ",\n  \"explanation\": ");
    ar_json_put_string(&b, d->explain);
    ar_buf_puts(&b, ",\n  \"cluster\": ");
    ar_json_put_string(&b, c->spec_cache ? c->spec_cache : "");
    ar_buf_printf(&b, ",\n  \"running_valid\": %s,\n  \"gpus_left\": %d", d->running_valid ? "true" : "false",
                  d->gpus_left);
#define NUM(key, v) do { ar_buf_puts(&b, ",\n  \"" key "\": "); ar_json_put_number(&b, (v)); } while (0)
    NUM("old_samples_per_s", d->old_sps);
    NUM("new_samples_per_s", d->new_sps);
    NUM("horizon_s", d->horizon_s);
    NUM("restart_s", d->restart_s);
    NUM("migration_s", d->mig.max_rank_s);
    NUM("cost_s", d->cost_s);
    NUM("samples_gained", d->gained);
    NUM("samples_lost", d->lost);
    NUM("net_samples", d->net);
    NUM("bytes_moved", d->mig.bytes);
#undef NUM
    ar_buf_printf(&b, ",\n  \"slowest_rank\": %d,\n  \"idle_gpus\": {", d->mig.slowest_rank);
    for (t = 0, i = 0; t < d->ntypes; t++) {
        if (!d->idle[t]) continue;
        ar_buf_puts(&b, i++ ? ", " : "");
        ar_json_put_string(&b, d->type_names[t]);
        ar_buf_printf(&b, ": %d", d->idle[t]);
    }
    ar_buf_puts(&b, "},\n  \"migration\": [");
    for (i = 0; i < d->mig.n; i++) {
        const ar_mig_entry *e = &d->mig.e[i];
        static const char *links[] = { "intra", "inter", "checkpoint" };
        ar_buf_printf(&b, "%s\n    {\"src_rank\": %d, \"dst_rank\": %d, \"first_layer\": %d, \"end_layer\": %d, "
                      "\"bytes\": ", i ? "," : "", e->src_rank, e->dst_rank, e->first, e->end);
        ar_json_put_number(&b, e->bytes);
        ar_buf_puts(&b, ", \"seconds\": ");
        ar_json_put_number(&b, e->seconds);
        ar_buf_printf(&b, ", \"src_node\": %d, \"dst_node\": %d, \"link\": \"%s\"}", e->src_node, e->dst_node,
                      links[e->link]);
    }
    ar_buf_puts(&b, d->mig.n ? "\n  ]\n}\n" : "]\n}\n");
    if (ar_buf_status(&b)) { ar_buf_free(&b); return ARACHNE_E_NO_MEMORY; }
    d->json = b.data;
    return ARACHNE_OK;
}

/* ---- replan ------------------------------------------------------------------- */

int arachne_replan(arachne_plan **new_plan, arachne_replan_decision **decision, const arachne_policy *policy,
                   const arachne_cost_model *cm, const arachne_plan *running, const arachne_replan_options *opts)
{
    arachne_replan_options defaults;
    arachne_replan_decision *d = NULL;
    arachne_plan *kept = NULL, *cand = NULL, *chosen;
    int *node_map = NULL, *node_gpus = NULL, *old_node = NULL, nold = 0, st, i, t;
    int used[AR_MAX_TYPES];
    char why[512] = "";
    const arachne_cluster *c;

    if (new_plan) *new_plan = NULL;
    if (decision) *decision = NULL;
    if (!new_plan && !decision)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_replan: new_plan and decision are both NULL");
    if (!policy || !cm || !running)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_replan: %s is NULL",
                        !policy ? "policy" : !cm ? "cost model" : "running plan");
    if (!cm->cluster || !cm->model || !cm->cache)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_replan: incomplete cost model");
    if (!running->cluster_spec || running->nranks < 1 || running->ntemplates < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_replan: the running plan is empty or records no cluster");
    if (running->model[0] && ar_strcasecmp(running->model, cm->model->name) != 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_replan: the running plan is for model '%s', the cost "
                        "model for '%s'", running->model, cm->model->name);
    if (!opts) {
        opts_default(&defaults);
        opts = &defaults;
    }
    c = cm->cluster;

    /* 1. which GPUs of the running plan are still there */
    if ((st = ar_replan_node_map(running->cluster_spec, c, &node_map, &node_gpus, &nold))) goto done;
    d = ar_calloc(1, sizeof *d);
    old_node = ar_malloc((size_t)running->nranks * sizeof *old_node);
    if (!d || !old_node) { st = ARACHNE_E_NO_MEMORY; goto done; }
    d->horizon_s = opts->horizon_s;
    d->restart_s = opts->restart_s;
    for (i = 0; i < running->nranks; i++) {
        const ar_rank *r = &running->ranks[i];
        int n = -1;
        if (r->node < 0 || r->node >= nold || r->gpu < 0 || r->gpu >= node_gpus[r->node]) {
            st = ar_error(ARACHNE_E_INVALID_PLAN, "arachne_replan: running rank %d names GPU %d of node %d, which its "
                          "cluster '%s' does not have", r->rank, r->gpu, r->node, running->cluster_spec);
            goto done;
        }
        n = node_map[r->node];
        if (n >= 0 && r->gpu >= c->nodes[n].gpus) n = -1;
        old_node[i] = n;
        if (n < 0) d->gpus_left++;
    }

    /* 2. the running plan on the new cluster */
    if (d->gpus_left) {
        snprintf(why, sizeof why, "%d of its %d GPUs left", d->gpus_left, running->nranks);
    } else {
        /* a running plan that recomputes fully is priced so when the
         * planner may choose that mode (ARACHNE_OPT_RECOMPUTE_SEARCH):
         * under cm's own mode it might not even fit */
        arachne_cost_model *full = NULL;
        if (cm->setup.recompute_search && running->setup.recompute == AR_RECOMPUTE_FULL &&
            cm->setup.recompute != AR_RECOMPUTE_FULL &&
            (st = ar_cost_model_with_recompute(&full, cm, AR_RECOMPUTE_FULL)))
            goto done;
        kept = ar_calloc(1, sizeof *kept);
        if (!kept) { arachne_cost_model_destroy(full); st = ARACHNE_E_NO_MEMORY; goto done; }
        st = carry_over(full ? full : cm, running, old_node, kept);
        arachne_cost_model_destroy(full);
        if (st == ARACHNE_E_NO_MEMORY) goto done;
        if (st) {
            snprintf(why, sizeof why, "%s", arachne_last_error());
            ar_plan_clear(kept);
            free(kept);
            kept = NULL;
        } else {
            d->running_valid = 1;
            d->old_sps = trained_sps(kept);
        }
    }

    /* 3. the new plan */
    /* the planner `arachne plan` runs: best-of-K, refined from the best
     * sample and the greedy plan (never slower than the sampled plan) */
    st = arachne_plan_build_refined(&cand, policy, cm, opts->samples, opts->seed, opts->refine, 0.0);
    if (st) {
        if (!kept || st == ARACHNE_E_NO_MEMORY) goto done; /* nothing to run */
        cand = NULL;
    }

    /* 4. what switching moves, and the decision */
    if (cand) {
        if ((st = ar_migration_compute(cm, running, old_node, cand, &d->mig))) goto done;
        d->new_sps = trained_sps(cand);
    }
    d->cost_s = d->mig.max_rank_s + d->restart_s;
    if (!d->running_valid) {
        d->action = ARACHNE_REPLAN_SWITCH;
        d->reason = ARACHNE_REPLAN_REASON_RUNNING_INVALID;
        d->gained = d->new_sps * (d->horizon_s - d->cost_s);
        d->lost = 0.0;
    } else {
        d->gained = (d->new_sps - d->old_sps) * (d->horizon_s - d->cost_s);
        d->lost = d->old_sps * d->cost_s;
        if (cand && d->gained > d->lost) {
            d->action = ARACHNE_REPLAN_SWITCH;
            d->reason = ARACHNE_REPLAN_REASON_GAIN;
        } else {
            d->action = ARACHNE_REPLAN_KEEP;
            d->reason = d->new_sps > d->old_sps ? ARACHNE_REPLAN_REASON_GAIN_TOO_SMALL
                                                : ARACHNE_REPLAN_REASON_NOT_FASTER;
        }
    }
    d->net = d->gained - d->lost;
    chosen = d->action == ARACHNE_REPLAN_SWITCH ? cand : kept;

    /* 5. idle GPUs of the chosen plan */
    memset(used, 0, sizeof used);
    for (i = 0; i < chosen->nranks; i++) {
        int n = chosen->ranks[i].node;
        if (n >= 0 && n < c->nnodes) used[c->nodes[n].type]++;
    }
    d->ntypes = c->ntypes;
    for (t = 0; t < c->ntypes && t < AR_MAX_TYPES; t++) {
        snprintf(d->type_names[t], AR_NAME_MAX, "%s", c->types[t].name);
        d->idle[t] = c->type_gpus[t] - used[t];
        d->idle_total += d->idle[t];
    }
    if ((st = build_texts(d, why, c))) goto done;

    if (new_plan) {
        *new_plan = chosen;
        if (chosen == cand) cand = NULL;
        else kept = NULL;
    }
    if (decision) {
        *decision = d;
        d = NULL;
    }
    st = ARACHNE_OK;
done:
    if (kept) { ar_plan_clear(kept); free(kept); }
    arachne_plan_destroy(cand);
    arachne_replan_decision_destroy(d);
    free(node_map);
    free(node_gpus);
    free(old_node);
    return st;
}

/* ---- decision getters ----------------------------------------------------------- */

void arachne_replan_decision_destroy(arachne_replan_decision *d)
{
    if (!d) return;
    ar_migration_free(&d->mig);
    free(d->explain);
    free(d->json);
    free(d);
}

int arachne_replan_get(const arachne_replan_decision *d, int field, double *out)
{
    if (!d || !out) return AR_NULL_ARG("replan get", d, out);
    switch (field) {
    case ARACHNE_DECISION_ACTION: *out = d->action; break;
    case ARACHNE_DECISION_REASON: *out = d->reason; break;
    case ARACHNE_DECISION_RUNNING_VALID: *out = d->running_valid; break;
    case ARACHNE_DECISION_OLD_SAMPLES_PER_S: *out = d->old_sps; break;
    case ARACHNE_DECISION_NEW_SAMPLES_PER_S: *out = d->new_sps; break;
    case ARACHNE_DECISION_SAMPLES_GAINED: *out = d->gained; break;
    case ARACHNE_DECISION_SAMPLES_LOST: *out = d->lost; break;
    case ARACHNE_DECISION_NET_SAMPLES: *out = d->net; break;
    case ARACHNE_DECISION_COST_S: *out = d->cost_s; break;
    case ARACHNE_DECISION_MIGRATION_S: *out = d->mig.max_rank_s; break;
    case ARACHNE_DECISION_RESTART_S: *out = d->restart_s; break;
    case ARACHNE_DECISION_HORIZON_S: *out = d->horizon_s; break;
    case ARACHNE_DECISION_BYTES_MOVED: *out = d->mig.bytes; break;
    case ARACHNE_DECISION_MIGRATIONS: *out = d->mig.n; break;
    case ARACHNE_DECISION_SLOWEST_RANK: *out = d->mig.slowest_rank; break;
    case ARACHNE_DECISION_IDLE_GPUS: *out = d->idle_total; break;
    case ARACHNE_DECISION_GPUS_LEFT: *out = d->gpus_left; break;
    default: return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan get: unknown field %d (0..16)", field);
    }
    return ARACHNE_OK;
}

int arachne_replan_explain(const arachne_replan_decision *d, const char **out)
{
    if (!d || !out) return AR_NULL_ARG("replan explain", d, out);
    *out = d->explain;
    return ARACHNE_OK;
}

int arachne_replan_idle_gpus(const arachne_replan_decision *d, const char *type, int *out)
{
    char key[AR_NAME_MAX], k2[AR_NAME_MAX];
    const ar_gpu_spec *g;
    int t;
    if (!d || !out) return AR_NULL_ARG("replan idle GPUs", d, out);
    if (!type) { *out = d->idle_total; return ARACHNE_OK; }
    g = ar_gpu_catalog_find(type);
    if (ar_gpu_name_key(type, key, sizeof key))
        for (t = 0; t < d->ntypes; t++) {
            ar_gpu_name_key(d->type_names[t], k2, sizeof k2);
            if (strcmp(key, k2) == 0 || (g && strcmp(g->name, d->type_names[t]) == 0)) {
                *out = d->idle[t];
                return ARACHNE_OK;
            }
        }
    return ar_error(ARACHNE_E_NOT_FOUND, "replan idle GPUs: GPU type '%s' is not in the new cluster", type);
}

int arachne_replan_migration_get(const arachne_replan_decision *d, int i, int field, double *out)
{
    const ar_mig_entry *e;
    if (!d || !out) return AR_NULL_ARG("replan migration get", d, out);
    if (i < 0 || i >= d->mig.n)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan migration get: entry %d out of range (%d entries)", i,
                        d->mig.n);
    e = &d->mig.e[i];
    switch (field) {
    case ARACHNE_MIGRATION_SRC_RANK: *out = e->src_rank; break;
    case ARACHNE_MIGRATION_DST_RANK: *out = e->dst_rank; break;
    case ARACHNE_MIGRATION_FIRST_LAYER: *out = e->first; break;
    case ARACHNE_MIGRATION_END_LAYER: *out = e->end; break;
    case ARACHNE_MIGRATION_BYTES: *out = e->bytes; break;
    case ARACHNE_MIGRATION_SECONDS: *out = e->seconds; break;
    case ARACHNE_MIGRATION_SRC_NODE: *out = e->src_node; break;
    case ARACHNE_MIGRATION_DST_NODE: *out = e->dst_node; break;
    case ARACHNE_MIGRATION_LINK: *out = e->link; break;
    default: return ar_error(ARACHNE_E_INVALID_ARGUMENT, "replan migration get: unknown field %d (0..8)", field);
    }
    return ARACHNE_OK;
}

int arachne_replan_to_json(const arachne_replan_decision *d, const char **out)
{
    if (!d || !out) return AR_NULL_ARG("replan to_json", d, out);
    *out = d->json;
    return ARACHNE_OK;
}
