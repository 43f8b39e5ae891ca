/* eval.c -- eval configs and the evaluation runner behind `arachne eval`
 * (eval.h, docs/evaluation.md). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "construct.h"
#include "eval.h"
#include "json.h"
#include "policy.h"

const char *ar_eval_method_name(int method, int samples, int random_factor)
{
    static const char *fixed[AR_EVAL_METHODS] = { "policy", "policy-best", "random-same", "random-many", "exhaustive",
                                                  "flat", "flat-best", "policy-best+refine", "policy-rollout" };
    static _Thread_local char buf[AR_EVAL_METHODS][32];
    if (method < 0 || method >= AR_EVAL_METHODS) return "?";
    switch (method) {
    case AR_EVAL_POLICY_BEST: snprintf(buf[method], 32, "policy-best%d", samples); return buf[method];
    case AR_EVAL_FLAT_BEST: snprintf(buf[method], 32, "flat-best%d", samples); return buf[method];
    case AR_EVAL_POLICY_REFINED: snprintf(buf[method], 32, "policy-best%d+refine", samples); return buf[method];
    case AR_EVAL_RANDOM_MANY: snprintf(buf[method], 32, "random-x%d", random_factor); return buf[method];
    default: return fixed[method];
    }
}

const int ar_eval_method_order[AR_EVAL_METHODS] = { AR_EVAL_POLICY_GREEDY, AR_EVAL_POLICY_BEST, AR_EVAL_POLICY_REFINED,
                                                    AR_EVAL_POLICY_ROLLOUT, AR_EVAL_RANDOM_SAME, AR_EVAL_RANDOM_MANY,
                                                    AR_EVAL_EXHAUSTIVE,     AR_EVAL_FLAT_GREEDY, AR_EVAL_FLAT_BEST };

/* ---------------------------------------------------------------------- */
/* config                                                                  */

void ar_eval_config_free(ar_eval_config *c)
{
    if (!c) return;
    free(c->comps);
    free(c->flat_train);
    free(c);
}

/* base + "/" + rel unless rel is absolute or base is "" / ".". */
static int resolve(const ar_json *at, const char *base, const char *rel, char *out, size_t cap)
{
    int n;
    if (!rel[0]) return ar_json_error_at(at, "empty path");
    if (rel[0] == '/' || !base[0] || strcmp(base, ".") == 0) n = snprintf(out, cap, "%s", rel);
    else n = snprintf(out, cap, "%s/%s", base, rel);
    if (n < 0 || (size_t)n >= cap) return ar_json_error_at(at, "path is longer than %zu bytes", cap - 1);
    return ARACHNE_OK;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && ar_strcasecmp(s + a - b, suf) == 0;
}

static int copy_text(const ar_json *at, const char *s, char *out, size_t cap)
{
    if (strlen(s) >= cap) return ar_json_error_at(at, "text is longer than %zu bytes", cap - 1);
    snprintf(out, cap, "%s", s);
    return ARACHNE_OK;
}

static int parse_comp(const ar_json *v, const char *base, int need_name, int index, ar_eval_comp *c)
{
    static const char *const keys[] = { "name", "model", "cluster", "global_batch", "seq_len", "recompute",
                                        "dist_optimizer", "headroom", "max_depth", "exhaustive", NULL };
    const char *s;
    const ar_json *m;
    int st;
    memset(c, 0, sizeof *c);
    c->recompute = -1;
    c->dist_optimizer = -1;
    c->headroom = -1.0;
    c->exhaustive = -1;
    if (v->type != AR_JSON_OBJECT) return ar_json_error_at(v, "composition: expected an object");
    if ((st = ar_json_only_keys(v, keys))) return st;
    s = NULL;
    if ((st = ar_json_str(v, "name", need_name, &s))) return st;
    if (s) {
        if (!s[0]) return ar_json_error_at(ar_json_get(v, "name"), "name: empty");
        if ((st = copy_text(ar_json_get(v, "name"), s, c->name, sizeof c->name))) return st;
    } else {
        snprintf(c->name, sizeof c->name, "train-%d", index);
    }
    if ((st = ar_json_str(v, "model", 1, &s))) return st;
    m = ar_json_get(v, "model");
    if (!s[0]) return ar_json_error_at(m, "model: empty");
    if (ends_with(s, ".json") || strchr(s, '/')) st = resolve(m, base, s, c->model, sizeof c->model);
    else st = copy_text(m, s, c->model, sizeof c->model);
    if (st) return st;
    if ((st = ar_json_str(v, "cluster", 1, &s))) return st;
    m = ar_json_get(v, "cluster");
    if (!s[0]) return ar_json_error_at(m, "cluster: empty");
    if (ends_with(s, ".json")) st = resolve(m, base, s, c->cluster, sizeof c->cluster);
    else st = copy_text(m, s, c->cluster, sizeof c->cluster);
    if (st) return st;
    if ((st = ar_json_int(v, "global_batch", 0, 1, 1L << 30, &c->global_batch))) return st;
    if ((st = ar_json_int(v, "seq_len", 0, 1, 1L << 24, &c->seq_len))) return st;
    if ((st = ar_json_int(v, "max_depth", 0, 1, AR_SEARCH_MAX_DEPTH, &c->max_depth))) return st;
    s = NULL;
    if ((st = ar_json_str(v, "recompute", 0, &s))) return st;
    if (s) {
        if (strcmp(s, "none") == 0) c->recompute = ARACHNE_RECOMPUTE_NONE;
        else if (strcmp(s, "selective") == 0) c->recompute = ARACHNE_RECOMPUTE_SELECTIVE;
        else if (strcmp(s, "full") == 0) c->recompute = ARACHNE_RECOMPUTE_FULL;
        else return ar_json_error_at(ar_json_get(v, "recompute"), "recompute: '%s' is not none, selective or full", s);
    }
    if (ar_json_get(v, "dist_optimizer") && (st = ar_json_bool(v, "dist_optimizer", 1, &c->dist_optimizer))) return st;
    if (ar_json_get(v, "exhaustive") && (st = ar_json_bool(v, "exhaustive", 1, &c->exhaustive))) return st;
    if (ar_json_get(v, "headroom")) {
        if ((st = ar_json_num(v, "headroom", 1, &c->headroom))) return st;
        if (!(c->headroom >= 0.0 && c->headroom < 1.0))
            return ar_json_error_at(ar_json_get(v, "headroom"), "headroom: %g is outside [0, 1)", c->headroom);
    }
    return ARACHNE_OK;
}

static int parse_comps(const ar_json *arr, const char *base, int need_name, const char *what, ar_eval_comp **out,
                       int *n)
{
    size_t i, j;
    int st;
    *out = NULL;
    *n = 0;
    if (arr->count < 1) return ar_json_error_at(arr, "%s: expected at least one composition", what);
    if (arr->count > AR_EVAL_MAX_COMPS)
        return ar_json_error_at(arr, "%s: %zu compositions (at most %d)", what, arr->count, AR_EVAL_MAX_COMPS);
    *out = ar_calloc(arr->count, sizeof **out);
    if (!*out) return ARACHNE_E_NO_MEMORY;
    for (i = 0; i < arr->count; i++) {
        st = parse_comp(arr->items[i], base, need_name, (int)i, &(*out)[i]);
        if (st) { free(*out); *out = NULL; return st; }
        for (j = 0; need_name && j < i; j++)
            if (strcmp((*out)[j].name, (*out)[i].name) == 0) {
                st = ar_json_error_at(ar_json_get(arr->items[i], "name"), "%s: duplicate name '%s'", what,
                                      (*out)[i].name);
                free(*out);
                *out = NULL;
                return st;
            }
    }
    *n = (int)arr->count;
    return ARACHNE_OK;
}

static int parse_root(ar_eval_config *c, const ar_json *root, const char *base)
{
    static const char *const keys[] = { "format", "version", "policy", "samples", "seed", "random_factor",
                                        "random_time_budget_s", "refine_evaluations", "refine_time_cap_s",
                                        "exhaustive", "flat", "rollout", "rollout_evaluations", "compositions", NULL };
    static const char *const exh_keys[] = { "max_gpus", "max_templates", "max_depth", "time_budget_s", NULL };
    static const char *const flat_keys[] = { "policy", "save", "train", "evaluations", "group", "hidden", "layers",
                                             "seed", NULL };
    const char *s;
    const ar_json *o, *arr;
    long l, ver;
    int st;
    if (root->type != AR_JSON_OBJECT) return ar_json_error_at(root, "expected an object (an arachne-eval config)");
    if ((st = ar_json_only_keys(root, keys))) return st;
    if ((st = ar_json_str(root, "format", 1, &s))) return st;
    if (strcmp(s, "arachne-eval") != 0)
        return ar_json_error_at(ar_json_get(root, "format"), "format: '%s' is not \"arachne-eval\"", s);
    if ((st = ar_json_int(root, "version", 1, 0, 1L << 30, &ver))) return st;
    if (ver != 1) {
        ar_json_error_at(ar_json_get(root, "version"), "version %ld is not supported (this library reads 1)", ver);
        return ARACHNE_E_UNSUPPORTED;
    }
    s = NULL;
    if ((st = ar_json_str(root, "policy", 0, &s))) return st;
    if (s && (st = resolve(ar_json_get(root, "policy"), base, s, c->policy, sizeof c->policy))) return st;
    l = c->samples;
    if ((st = ar_json_int(root, "samples", 0, 1, 100000, &l))) return st;
    c->samples = (int)l;
    l = (long)c->seed;
    if ((st = ar_json_int(root, "seed", 0, 0, 0x7fffffffL, &l))) return st;
    c->seed = (uint64_t)l;
    if ((st = ar_json_int(root, "random_factor", 0, 1, 100000, &c->random_factor))) return st;
    if (ar_json_get(root, "random_time_budget_s")) {
        if ((st = ar_json_num(root, "random_time_budget_s", 1, &c->random_time_budget_s))) return st;
        if (!(c->random_time_budget_s >= 0 && c->random_time_budget_s <= 1e7))
            return ar_json_error_at(ar_json_get(root, "random_time_budget_s"),
                                    "random_time_budget_s: %g is outside [0, 1e7]", c->random_time_budget_s);
    }
    if ((st = ar_json_int(root, "refine_evaluations", 0, 0, 100000000L, &c->refine_evaluations))) return st;
    if (ar_json_get(root, "refine_time_cap_s")) {
        if ((st = ar_json_num(root, "refine_time_cap_s", 1, &c->refine_time_cap_s))) return st;
        if (!(c->refine_time_cap_s >= 0 && c->refine_time_cap_s <= 1e7))
            return ar_json_error_at(ar_json_get(root, "refine_time_cap_s"), "refine_time_cap_s: %g is outside [0, 1e7]",
                                    c->refine_time_cap_s);
    }
    if ((st = ar_json_bool(root, "rollout", 0, &c->rollout))) return st;
    if ((st = ar_json_int(root, "rollout_evaluations", 0, 0, 100000000L, &c->rollout_evaluations))) return st;
    o = NULL;
    if ((st = ar_json_obj(root, "exhaustive", 0, &o))) return st;
    if (o) {
        if ((st = ar_json_only_keys(o, exh_keys))) return st;
        l = c->exh_max_gpus;
        if ((st = ar_json_int(o, "max_gpus", 0, 0, AR_MAX_TOTAL_GPUS, &l))) return st;
        c->exh_max_gpus = (int)l;
        l = c->exh_max_templates;
        if ((st = ar_json_int(o, "max_templates", 0, 1, AR_MAX_TEMPLATES, &l))) return st;
        c->exh_max_templates = (int)l;
        l = c->exh_max_depth;
        if ((st = ar_json_int(o, "max_depth", 0, 1, AR_SEARCH_MAX_DEPTH, &l))) return st;
        c->exh_max_depth = (int)l;
        if (ar_json_get(o, "time_budget_s")) {
            if ((st = ar_json_num(o, "time_budget_s", 1, &c->exh_time_budget_s))) return st;
            if (!(c->exh_time_budget_s >= 0 && c->exh_time_budget_s <= 1e7))
                return ar_json_error_at(ar_json_get(o, "time_budget_s"), "time_budget_s: %g is outside [0, 1e7]",
                                        c->exh_time_budget_s);
        }
    }
    o = NULL;
    if ((st = ar_json_obj(root, "flat", 0, &o))) return st;
    if (o) {
        const ar_json *tr = NULL;
        c->flat_enabled = 1;
        if ((st = ar_json_only_keys(o, flat_keys))) return st;
        s = NULL;
        if ((st = ar_json_str(o, "policy", 0, &s))) return st;
        if (s && (st = resolve(ar_json_get(o, "policy"), base, s, c->flat_policy, sizeof c->flat_policy))) return st;
        s = NULL;
        if ((st = ar_json_str(o, "save", 0, &s))) return st;
        if (s && (st = resolve(ar_json_get(o, "save"), base, s, c->flat_save, sizeof c->flat_save))) return st;
        if ((st = ar_json_int(o, "evaluations", 0, 1, 1L << 40, &c->flat_evaluations))) return st;
        l = c->flat_group;
        if ((st = ar_json_int(o, "group", 0, 2, 4096, &l))) return st;
        c->flat_group = (int)l;
        l = c->flat_hidden;
        if ((st = ar_json_int(o, "hidden", 0, 1, AR_NN_MAX_DIM, &l))) return st;
        c->flat_hidden = (int)l;
        l = c->flat_layers;
        if ((st = ar_json_int(o, "layers", 0, 1, AR_NN_MAX_LAYERS, &l))) return st;
        c->flat_layers = (int)l;
        l = (long)c->flat_seed;
        if ((st = ar_json_int(o, "seed", 0, 0, 0x7fffffffL, &l))) return st;
        c->flat_seed = (uint64_t)l;
        if ((st = ar_json_arr(o, "train", 0, &tr))) return st;
        if (tr && (st = parse_comps(tr, base, 0, "flat.train", &c->flat_train, &c->nflat_train))) return st;
        if (c->flat_policy[0] && tr)
            return ar_json_error_at(o, "flat: give either \"policy\" (a trained flat policy) or \"train\", not both");
        if (!c->flat_policy[0] && !tr)
            return ar_json_error_at(o, "flat: needs \"policy\" (a trained flat policy file) or \"train\" "
                                       "(compositions to train it on)");
    }
    if ((st = ar_json_arr(root, "compositions", 1, &arr))) return st;
    return parse_comps(arr, base, 1, "compositions", &c->comps, &c->ncomps);
}

int ar_eval_config_parse(ar_eval_config **out, const char *text, size_t len, const char *source)
{
    ar_eval_config *c;
    ar_json *root = NULL;
    char base[AR_EVAL_TEXT];
    const char *slash;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "eval config: out is NULL");
    *out = NULL;
    if (!text || !source) return AR_NULL_ARG("eval config", text, source);
    if (strlen(source) >= sizeof base) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "eval config: path too long");
    slash = strrchr(source, '/');
    if (slash) {
        size_t n = (size_t)(slash - source);
        memcpy(base, source, n);
        base[n] = '\0';
        if (n == 0) strcpy(base, "/");
    } else {
        strcpy(base, ".");
    }
    c = ar_calloc(1, sizeof *c);
    if (!c) return ARACHNE_E_NO_MEMORY;
    snprintf(c->path, sizeof c->path, "%s", source);
    c->samples = 16;
    c->seed = 1;
    c->random_factor = 100;
    c->random_time_budget_s = 0.0;
    c->refine_evaluations = ARACHNE_REFINE_EVALUATIONS;
    c->refine_time_cap_s = 0.0;
    c->exh_max_gpus = 64;
    c->exh_max_templates = 1;
    c->exh_max_depth = 6;
    c->exh_time_budget_s = 60.0;
    c->flat_evaluations = 20000;
    c->flat_group = 16;
    c->flat_seed = 1;
    st = ar_json_parse(&root, text, len, source);
    if (!st) st = parse_root(c, root, base);
    ar_json_free(root);
    if (st) { ar_eval_config_free(c); return st; }
    *out = c;
    return ARACHNE_OK;
}

int ar_eval_config_load(ar_eval_config **out, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "eval config: out is NULL");
    *out = NULL;
    if (!path) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "eval config: path is NULL");
    st = ar_read_file(path, &text, &len);
    if (st) return st;
    st = ar_eval_config_parse(out, text, len, path);
    free(text);
    return st;
}

/* ---------------------------------------------------------------------- */
/* random search counted in fills                                          */

typedef struct rnd_user {
    ar_rng rng;
    const arachne_cost_model *cm;
    arachne_plan *best;
    arachne_plan *split; /* scratch for a plan's exact split (ar_plan_keep_form) */
    int have;
} rnd_user;

static int rnd_keep(rnd_user *u, const arachne_plan *p)
{
    int kept;
    if (p->ntemplates < 1) return ARACHNE_OK;
    return ar_plan_keep_better(u->cm, p, u->best, &u->have, u->split, &kept);
}

static int rnd_decide(void *user, const ar_dec_ctx *c, int *choice)
{
    rnd_user *u = (rnd_user *)user;
    int i, j;
    if (c->kind == AR_DEC_DEPTH && c->step > 0) {
        int st = rnd_keep(u, c->plan); /* the plans a rollout passes through count */
        if (st) return st;
    }
    j = ar_rng_int(&u->rng, c->nallowed);
    for (i = 0; i < c->n; i++)
        if (c->mask[i] && j-- == 0) { *choice = i; return ARACHNE_OK; }
    return ar_error(ARACHNE_E_INVALID_ARGUMENT, "random: no allowed choice");
}

int ar_eval_random(arachne_plan **out, const arachne_cost_model *cm, long budget, uint64_t seed, double time_budget_s,
                   ar_eval_random_cb cb, void *user)
{
    ar_builder b;
    rnd_user u;
    arachne_plan cur;
    double t0 = ar_now();
    long rollouts = 0;
    int st;
    if (out) *out = NULL;
    if (!out || !cm) return AR_NULL_ARG("random search", out, cm);
    if (budget < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "random search: budget %ld < 1", budget);
    if (!(time_budget_s >= 0.0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "random search: time budget %g s is negative", time_budget_s);
    if ((st = ar_builder_init(&b, cm, NULL))) return st;
    memset(&u, 0, sizeof u);
    memset(&cur, 0, sizeof cur);
    ar_rng_seed(&u.rng, seed);
    u.cm = cm;
    u.best = ar_calloc(1, sizeof *u.best);
    u.split = ar_calloc(1, sizeof *u.split);
    if (!u.best || !u.split) { st = ARACHNE_E_NO_MEMORY; goto done; }
    if ((st = ar_plan_init(u.best, cm))) goto done;
    while (b.fills + b.check_fills < budget) {
        if ((st = ar_builder_run(&b, rnd_decide, &u, &cur, NULL))) goto done;
        rollouts++;
        if ((st = rnd_keep(&u, &cur))) goto done;
        if (cb) cb(user, b.fills + b.check_fills, u.have ? u.best->iter_per_s : 0.0);
        if (time_budget_s > 0 && ar_now() - t0 >= time_budget_s) break;
    }
    if (!u.have) { st = ar_error(ARACHNE_E_INFEASIBLE, "random search: no plan found"); goto done; }
    snprintf(u.best->method, sizeof u.best->method, "random");
    u.best->evaluations = b.fills + b.check_fills;
    u.best->samples = (int)(rollouts > 0x7fffffffL ? 0x7fffffffL : rollouts);
    u.best->planning_s = ar_now() - t0;
    if ((st = ar_plan_finish(u.best))) goto done;
    *out = u.best;
    u.best = NULL;
done:
    if (u.best) arachne_plan_destroy(u.best);
    arachne_plan_destroy(u.split);
    ar_plan_clear(&cur);
    ar_builder_free(&b);
    return st;
}

/* ---------------------------------------------------------------------- */
/* environments                                                            */

void ar_eval_env_free(ar_eval_env *env)
{
    if (!env) return;
    arachne_cost_model_destroy(env->cm);
    arachne_profile_destroy(env->profile);
    arachne_cluster_destroy(env->cluster);
    arachne_model_destroy(env->model);
    memset(env, 0, sizeof *env);
}

static int env_fail(ar_eval_env *env, const ar_eval_comp *c, const char *what, int st)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", arachne_last_error());
    ar_eval_env_free(env);
    return ar_error(st, "composition '%s': %s: %s", c->name, what, msg);
}

int ar_eval_env_build(ar_eval_env *env, const ar_eval_comp *c)
{
    int st;
    memset(env, 0, sizeof *env);
    if ((st = arachne_model_open(&env->model, c->model))) return env_fail(env, c, "model", st);
    if ((st = arachne_cluster_open(&env->cluster, c->cluster))) return env_fail(env, c, "cluster", st);
    if ((st = arachne_profile_generate(&env->profile, env->model, env->cluster, c->seq_len > 0 ? (int)c->seq_len : 4096)))
        return env_fail(env, c, "profile", st);
    if ((st = arachne_cost_model_create(&env->cm, env->model, env->cluster, env->profile)))
        return env_fail(env, c, "cost model", st);
    if (c->global_batch > 0 && (st = arachne_cost_model_set(env->cm, ARACHNE_OPT_GLOBAL_BATCH, (double)c->global_batch)))
        return env_fail(env, c, "global_batch", st);
    /* a mode the composition names is kept, as the CLI keeps --recompute
     * MODE: the default planner's recompute probe runs only without one */
    if (c->recompute >= 0 && ((st = arachne_cost_model_set(env->cm, ARACHNE_OPT_RECOMPUTE, c->recompute)) ||
                              (st = arachne_cost_model_set(env->cm, ARACHNE_OPT_RECOMPUTE_SEARCH, 0))))
        return env_fail(env, c, "recompute", st);
    if (c->dist_optimizer >= 0 && (st = arachne_cost_model_set(env->cm, ARACHNE_OPT_DIST_OPTIMIZER, c->dist_optimizer)))
        return env_fail(env, c, "dist_optimizer", st);
    if (c->headroom >= 0 && (st = arachne_cost_model_set(env->cm, ARACHNE_OPT_HEADROOM, c->headroom)))
        return env_fail(env, c, "headroom", st);
    if (c->max_depth > 0 && (st = arachne_cost_model_set(env->cm, ARACHNE_OPT_MAX_DEPTH, (double)c->max_depth)))
        return env_fail(env, c, "max_depth", st);
    return ARACHNE_OK;
}

/* ---------------------------------------------------------------------- */
/* runner                                                                  */

void ar_eval_result_free(ar_eval_result *res)
{
    if (!res) return;
    free(res->rows);
    memset(res, 0, sizeof *res);
}

static int say(ar_eval_progress_fn fn, void *user, const char *fmt, ...) AR_PRINTF(3, 4);
static int say(ar_eval_progress_fn fn, void *user, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    if (!fn) return ARACHNE_OK;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (fn(user, line)) return ar_error(ARACHNE_E_CANCELLED, "eval: stopped by the progress callback");
    return ARACHNE_OK;
}

/* Records the outcome of one planner call; frees the plan. */
static int take(ar_eval_cell *cell, int st, arachne_plan *p)
{
    cell->ran = 1;
    cell->status = st;
    if (st == ARACHNE_OK) {
        const char *m = NULL;
        double v;
        arachne_plan_get(p, ARACHNE_PLAN_ITER_PER_S, &cell->iter_per_s);
        arachne_plan_get(p, ARACHNE_PLAN_EVALUATIONS, &v);
        cell->evaluations = (long)v;
        arachne_plan_get(p, ARACHNE_PLAN_PLANNING_S, &cell->planning_s);
        arachne_plan_get(p, ARACHNE_PLAN_SAMPLES_RUN, &v);
        cell->samples_run = (long)v;
        arachne_plan_get(p, ARACHNE_PLAN_GLOBAL_BATCH, &v);
        cell->exact = cell->samples_run == (long)v;
        if (arachne_plan_method(p, &m) == ARACHNE_OK && m) snprintf(cell->method, sizeof cell->method, "%s", m);
        arachne_plan_destroy(p);
        return ARACHNE_OK;
    }
    snprintf(cell->note, sizeof cell->note, "%s", arachne_last_error());
    /* "no plan" outcomes are results; anything else is an error */
    if (st == ARACHNE_E_INFEASIBLE || st == ARACHNE_E_UNSUPPORTED) return ARACHNE_OK;
    return st;
}

static int flat_progress(void *user, long evals, int comp, double best, double mean)
{
    (void)user; (void)evals; (void)comp; (void)best; (void)mean;
    return 0;
}

static int get_flat(const ar_eval_config *cfg, ar_flat **flat, ar_eval_result *res, ar_eval_progress_fn progress,
                    void *user)
{
    ar_eval_env *envs = NULL;
    const arachne_cost_model **cms = NULL;
    ar_flat_train_opts o;
    ar_flat_train_stats S;
    double t0;
    int st = ARACHNE_OK, i;
    *flat = NULL;
    if (!cfg->flat_enabled) { snprintf(res->flat_source, sizeof res->flat_source, "none"); return ARACHNE_OK; }
    if (cfg->flat_policy[0]) {
        snprintf(res->flat_source, sizeof res->flat_source, "loaded");
        return ar_flat_load(flat, cfg->flat_policy);
    }
    snprintf(res->flat_source, sizeof res->flat_source, "trained");
    if ((st = say(progress, user, "flat policy: training on %d composition(s), %ld evaluations", cfg->nflat_train,
                  cfg->flat_evaluations)))
        return st;
    envs = ar_calloc((size_t)cfg->nflat_train, sizeof *envs);
    cms = ar_calloc((size_t)cfg->nflat_train, sizeof *cms);
    if (!envs || !cms) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (i = 0; i < cfg->nflat_train; i++) {
        if ((st = ar_eval_env_build(&envs[i], &cfg->flat_train[i]))) goto done;
        cms[i] = envs[i].cm;
    }
    if ((st = ar_flat_create(flat, cfg->flat_seed, cfg->flat_hidden, cfg->flat_layers))) goto done;
    ar_flat_train_opts_default(&o);
    o.evaluations = cfg->flat_evaluations;
    o.group = cfg->flat_group;
    o.seed = cfg->flat_seed;
    o.progress = flat_progress;
    t0 = ar_now();
    st = ar_flat_train(*flat, cms, cfg->nflat_train, &o, &S);
    if (st) goto done;
    res->flat_train_evaluations = S.evaluations;
    res->flat_train_s = ar_now() - t0;
    res->flat_first_return = S.first_mean_return;
    res->flat_last_return = S.last_mean_return;
    if (cfg->flat_save[0]) {
        char meta[256];
        snprintf(meta, sizeof meta, "{\"trained_evaluations\":%ld,\"updates\":%d}", S.evaluations, S.updates);
        if ((st = ar_flat_save(*flat, cfg->flat_save, meta))) goto done;
    }
    st = say(progress, user, "flat policy: trained, %ld evaluations in %.1f s, mean return %.3f -> %.3f",
             S.evaluations, res->flat_train_s, S.first_mean_return, S.last_mean_return);
done:
    if (st && *flat) { ar_flat_destroy(*flat); *flat = NULL; }
    if (envs)
        for (i = 0; i < cfg->nflat_train; i++) ar_eval_env_free(&envs[i]);
    free(envs);
    free(cms);
    return st;
}

/* The population numbers of every method against each row's reference. */
static void populations(ar_eval_result *res)
{
    int g, k, i;
    for (g = 0; g < AR_EVAL_POPS; g++)
        for (k = 0; k < AR_EVAL_METHODS; k++) {
            ar_eval_pop *P = &res->pop[g][k];
            double s = 0.0;
            int ok95 = 0, exact = 0;
            memset(P, 0, sizeof *P);
            for (i = 0; i < res->nrows; i++) {
                const ar_eval_row *r = &res->rows[i];
                const ar_eval_cell *c = &r->cell[k];
                double rel;
                if (r->ref < 0 || !c->ran) continue;
                if ((g == AR_EVAL_POP_DENSE && r->moe) || (g == AR_EVAL_POP_MOE && !r->moe)) continue;
                if (c->status != ARACHNE_OK || !(c->iter_per_s > 0)) { P->missing++; continue; }
                rel = c->iter_per_s / r->cell[r->ref].iter_per_s;
                s += log(rel);
                if (P->rows == 0 || rel < P->min) P->min = rel;
                if (rel >= 0.95) ok95++;
                exact += c->exact;
                P->rows++;
            }
            if (P->rows) {
                P->geomean = exp(s / P->rows);
                P->share95 = (double)ok95 / P->rows;
                P->share_exact = (double)exact / P->rows;
            }
        }
}

int ar_eval_run(const ar_eval_config *cfg, const arachne_policy *policy, ar_eval_progress_fn progress, void *user,
                ar_eval_result *res)
{
    ar_flat *flat = NULL;
    arachne_plan *greedy = NULL; /* a row's greedy plan, until the refinement has started from it */
    int st = ARACHNE_OK, st_g, i, k;
    double t_first;
    if (!res) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "eval: result is NULL");
    memset(res, 0, sizeof *res);
    if (!cfg || !policy) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "eval: NULL config or policy");
    res->rows = ar_calloc((size_t)cfg->ncomps, sizeof *res->rows);
    if (!res->rows) return ARACHNE_E_NO_MEMORY;
    res->nrows = cfg->ncomps;
    if ((st = get_flat(cfg, &flat, res, progress, user))) goto done;
    for (i = 0; i < cfg->ncomps; i++) {
        ar_eval_row *row = &res->rows[i];
        ar_eval_env env;
        arachne_plan *p = NULL, *alt = NULL;
        long same;
        int run_exh;
        row->comp = cfg->comps[i];
        if ((st = ar_eval_env_build(&env, &cfg->comps[i]))) goto done;
        arachne_cluster_gpu_count(env.cluster, NULL, &row->gpus);
        arachne_cluster_type_count(env.cluster, &row->types);
        row->moe = env.model->experts > 0;
#define STEP(msg) do { if ((st = say(progress, user, "[%d/%d] %s: %s", i + 1, cfg->ncomps, row->comp.name, msg))) { \
        ar_eval_env_free(&env); goto done; } } while (0)
#define TAKE(m, call) do { p = NULL; st = (call); st = take(&row->cell[m], st, p); \
        if (st) { ar_eval_env_free(&env); goto done; } } while (0)
        STEP("policy greedy");
        /* the greedy plan is also the refinement's second start: kept
         * until the refinement has run */
        st_g = arachne_plan_build(&greedy, policy, env.cm, 1, cfg->seed);
        if (st_g != ARACHNE_OK) {
            arachne_plan_destroy(greedy);
            greedy = NULL;
            TAKE(AR_EVAL_POLICY_GREEDY, st_g);
        }
        STEP("policy best-of-K");
        p = NULL;
        t_first = ar_now();
        /* the best rollout on other GPU types is the refinement's third start */
        st = ar_policy_build(&p, NULL, &alt, policy, env.cm, cfg->samples, cfg->seed);
        {
            /* the default plan (arachne_plan_build_refined): the
             * refinement from the plans built above, then the recompute
             * probe with the library's rule */
            arachne_plan *r = NULL, *d = NULL;
            int sr = st;
            if (st == ARACHNE_OK) {
                if ((st = say(progress, user, "[%d/%d] %s: refinement of the best-of-K plan", i + 1, cfg->ncomps,
                              row->comp.name))) {
                    arachne_plan_destroy(p);
                    arachne_plan_destroy(alt);
                    ar_eval_env_free(&env);
                    goto done;
                }
                sr = ar_plan_refine_starts(&r, p, cfg->samples > 1 ? greedy : NULL, alt, env.cm,
                                           cfg->refine_evaluations, cfg->refine_time_cap_s);
                arachne_plan_destroy(alt);
                st = take(&row->cell[AR_EVAL_POLICY_BEST], ARACHNE_OK, p);
            } else {
                /* before the probe's runs replace the last error, which
                 * is this cell's note */
                st = take(&row->cell[AR_EVAL_POLICY_BEST], st, NULL);
            }
            if (!st && (sr == ARACHNE_OK || sr == ARACHNE_E_INFEASIBLE))
                sr = ar_plan_recompute_search_after(&d, r, sr, r ? r->planning_s : ar_now() - t_first, policy, env.cm,
                                                    cfg->samples, cfg->seed, cfg->refine_evaluations,
                                                    cfg->refine_time_cap_s);
            else
                arachne_plan_destroy(r);
            if (!st) st = take(&row->cell[AR_EVAL_POLICY_REFINED], sr, d);
            else arachne_plan_destroy(d);
            if (st) { ar_eval_env_free(&env); goto done; }
        }
        if (greedy) {
            st = take(&row->cell[AR_EVAL_POLICY_GREEDY], ARACHNE_OK, greedy);
            greedy = NULL;
            if (st) { ar_eval_env_free(&env); goto done; }
        }
        if (cfg->rollout) {
            STEP("policy rollout decoding");
            TAKE(AR_EVAL_POLICY_ROLLOUT, arachne_plan_rollout(&p, policy, env.cm, cfg->rollout_evaluations, 0.0));
        }
        same = row->cell[AR_EVAL_POLICY_BEST].evaluations;
        if (same < 1) same = cfg->samples;
        STEP("random search, same evaluations");
        TAKE(AR_EVAL_RANDOM_SAME, ar_eval_random(&p, env.cm, same, cfg->seed, cfg->random_time_budget_s, NULL, NULL));
        STEP("random search, more evaluations");
        TAKE(AR_EVAL_RANDOM_MANY, ar_eval_random(&p, env.cm, same * cfg->random_factor, cfg->seed,
                                                 cfg->random_time_budget_s, NULL, NULL));
        run_exh = row->comp.exhaustive == 1 || (row->comp.exhaustive < 0 && row->gpus <= cfg->exh_max_gpus);
        if (run_exh) {
            arachne_cost_model *cm2 = NULL;
            double depth;
            STEP("exhaustive search");
            arachne_cost_model_get(env.cm, ARACHNE_OPT_MAX_DEPTH, &depth);
            st = arachne_cost_model_create(&cm2, env.model, env.cluster, env.profile);
            if (!st) {
                double v;
                int opts[] = { ARACHNE_OPT_GLOBAL_BATCH, ARACHNE_OPT_RECOMPUTE, ARACHNE_OPT_DIST_OPTIMIZER,
                               ARACHNE_OPT_HEADROOM, ARACHNE_OPT_EXPERT_TILING, ARACHNE_OPT_WEIGHT_BYTES,
                               ARACHNE_OPT_GRAD_BYTES, ARACHNE_OPT_OPTIM_BYTES };
                size_t j;
                for (j = 0; j < AR_COUNT(opts) && !st; j++) {
                    arachne_cost_model_get(env.cm, opts[j], &v);
                    st = arachne_cost_model_set(cm2, opts[j], v);
                }
                if (!st) st = arachne_cost_model_set(cm2, ARACHNE_OPT_MAX_DEPTH, AR_MIN(depth, cfg->exh_max_depth));
            }
            if (st) { arachne_cost_model_destroy(cm2); ar_eval_env_free(&env); goto done; }
            p = NULL;
            st = arachne_search_exhaustive(&p, cm2, cfg->exh_max_templates, cfg->exh_time_budget_s);
            st = take(&row->cell[AR_EVAL_EXHAUSTIVE], st, p);
            arachne_cost_model_destroy(cm2);
            if (st) { ar_eval_env_free(&env); goto done; }
        }
        if (flat) {
            long fe = 0;
            STEP("flat policy greedy");
            TAKE(AR_EVAL_FLAT_GREEDY, ar_flat_plan(&p, flat, env.cm, 1, cfg->seed, &fe));
            row->cell[AR_EVAL_FLAT_GREEDY].evaluations = fe;
            STEP("flat policy best-of-K");
            TAKE(AR_EVAL_FLAT_BEST, ar_flat_plan(&p, flat, env.cm, cfg->samples, cfg->seed, &fe));
            row->cell[AR_EVAL_FLAT_BEST].evaluations = fe;
        }
#undef STEP
#undef TAKE
        ar_eval_env_free(&env);
        row->best = 0.0;
        for (k = 0; k < AR_EVAL_METHODS; k++)
            if (row->cell[k].ran && row->cell[k].status == ARACHNE_OK && row->cell[k].iter_per_s > row->best)
                row->best = row->cell[k].iter_per_s;
        for (k = 0; k < AR_EVAL_METHODS; k++)
            if (row->cell[k].ran && row->cell[k].status == ARACHNE_OK && row->best > 0)
                row->cell[k].rel = row->cell[k].iter_per_s / row->best;
        row->ref = -1;
        if (row->cell[AR_EVAL_EXHAUSTIVE].ran && row->cell[AR_EVAL_EXHAUSTIVE].status == ARACHNE_OK)
            row->ref = AR_EVAL_EXHAUSTIVE;
        else if (row->cell[AR_EVAL_RANDOM_MANY].ran && row->cell[AR_EVAL_RANDOM_MANY].status == ARACHNE_OK)
            row->ref = AR_EVAL_RANDOM_MANY;
    }
    populations(res);
    for (k = 0; k < AR_EVAL_METHODS; k++) {
        double s = 0.0;
        for (i = 0; i < res->nrows; i++) {
            const ar_eval_cell *c = &res->rows[i].cell[k];
            if (!c->ran) continue;
            res->ran[k]++;
            if (c->status == ARACHNE_OK && c->rel > 0) { res->planned[k]++; s += log(c->rel); }
        }
        res->geomean[k] = res->planned[k] ? exp(s / res->planned[k]) : 0.0;
    }
    st = ARACHNE_OK;
done:
    arachne_plan_destroy(greedy);
    ar_flat_destroy(flat);
    if (st) ar_eval_result_free(res);
    return st;
}

/* ---------------------------------------------------------------------- */
/* output                                                                  */

void ar_eval_result_json(const ar_eval_config *cfg, const ar_eval_result *res, const char *policy, ar_buf *b)
{
    static const char *const pop_names[AR_EVAL_POPS] = { "all", "dense", "moe" };
    int i, k, o, g, first;
    const char *names[AR_EVAL_METHODS];
    for (k = 0; k < AR_EVAL_METHODS; k++) names[k] = ar_eval_method_name(k, cfg->samples, (int)cfg->random_factor);
    ar_buf_puts(b, "{\"format\":\"arachne-eval-result\",\"version\":1,\"config\":");
    ar_json_put_string(b, cfg->path);
    ar_buf_puts(b, ",\"policy\":");
    ar_json_put_string(b, policy ? policy : "");
    ar_buf_printf(b, ",\"samples\":%d,\"seed\":%llu,\"random_factor\":%ld,\"refine_evaluations\":%ld,"
                  "\"methods\":[", cfg->samples, (unsigned long long)cfg->seed, cfg->random_factor,
                  cfg->refine_evaluations);
    for (o = 0; o < AR_EVAL_METHODS; o++) {
        if (o) ar_buf_puts(b, ",");
        ar_json_put_string(b, names[ar_eval_method_order[o]]);
    }
    ar_buf_puts(b, "],\"flat\":{\"source\":");
    ar_json_put_string(b, res->flat_source);
    ar_buf_printf(b, ",\"train_evaluations\":%ld,\"train_s\":", res->flat_train_evaluations);
    ar_json_put_number(b, res->flat_train_s);
    ar_buf_puts(b, ",\"first_mean_return\":");
    ar_json_put_number(b, res->flat_first_return);
    ar_buf_puts(b, ",\"last_mean_return\":");
    ar_json_put_number(b, res->flat_last_return);
    ar_buf_puts(b, "},\n\"population\":{");
    for (g = 0; g < AR_EVAL_POPS; g++) {
        ar_buf_printf(b, "%s\"%s\":{", g ? ",\n" : "", pop_names[g]);
        for (o = 0; o < AR_EVAL_METHODS; o++) {
            const ar_eval_pop *P = &res->pop[g][ar_eval_method_order[o]];
            if (o) ar_buf_puts(b, ",");
            ar_json_put_string(b, names[ar_eval_method_order[o]]);
            ar_buf_printf(b, ":{\"rows\":%d,\"missing\":%d,\"geomean\":", P->rows, P->missing);
            ar_json_put_number(b, P->geomean);
            ar_buf_puts(b, ",\"min\":");
            ar_json_put_number(b, P->min);
            ar_buf_puts(b, ",\"share_ge_095\":");
            ar_json_put_number(b, P->share95);
            ar_buf_puts(b, ",\"share_exact_batch\":");
            ar_json_put_number(b, P->share_exact);
            ar_buf_puts(b, "}");
        }
        ar_buf_puts(b, "}");
    }
    ar_buf_puts(b, "},\n\"compositions\":[");
    for (i = 0; i < res->nrows; i++) {
        const ar_eval_row *r = &res->rows[i];
        ar_buf_puts(b, i ? ",\n{" : "\n{");
        ar_buf_puts(b, "\"name\":");
        ar_json_put_string(b, r->comp.name);
        ar_buf_puts(b, ",\"model\":");
        ar_json_put_string(b, r->comp.model);
        ar_buf_puts(b, ",\"cluster\":");
        ar_json_put_string(b, r->comp.cluster);
        ar_buf_printf(b, ",\"gpus\":%d,\"types\":%d,\"moe\":%s,\"reference\":", r->gpus, r->types,
                      r->moe ? "true" : "false");
        if (r->ref < 0) ar_buf_puts(b, "null");
        else ar_json_put_string(b, names[r->ref]);
        ar_buf_puts(b, ",\"best_iter_per_s\":");
        ar_json_put_number(b, r->best);
        ar_buf_puts(b, ",\"results\":{");
        for (o = 0, first = 1; o < AR_EVAL_METHODS; o++) {
            const ar_eval_cell *c = &r->cell[k = ar_eval_method_order[o]];
            if (!c->ran) continue;
            if (!first) ar_buf_puts(b, ",");
            first = 0;
            ar_json_put_string(b, names[k]);
            ar_buf_puts(b, ":{\"plan\":");
            ar_buf_puts(b, c->status == ARACHNE_OK ? "true" : "false");
            ar_buf_puts(b, ",\"iter_per_s\":");
            ar_json_put_number(b, c->iter_per_s);
            ar_buf_puts(b, ",\"relative\":");
            ar_json_put_number(b, c->rel);
            ar_buf_printf(b, ",\"evaluations\":%ld,\"planning_s\":", c->evaluations);
            ar_json_put_number(b, c->planning_s);
            ar_buf_printf(b, ",\"samples_run\":%ld", c->samples_run);
            ar_buf_puts(b, ",\"method\":");
            ar_json_put_string(b, c->method);
            ar_buf_puts(b, ",\"error\":");
            if (c->status == ARACHNE_OK) ar_buf_puts(b, "null");
            else ar_json_put_string(b, c->note);
            ar_buf_puts(b, "}");
        }
        ar_buf_puts(b, "}}");
    }
    ar_buf_puts(b, "],\n\"geomean\":{");
    for (o = 0; o < AR_EVAL_METHODS; o++) {
        k = ar_eval_method_order[o];
        if (o) ar_buf_puts(b, ",");
        ar_json_put_string(b, names[k]);
        ar_buf_puts(b, ":{\"relative\":");
        ar_json_put_number(b, res->geomean[k]);
        ar_buf_printf(b, ",\"planned\":%d,\"ran\":%d}", res->planned[k], res->ran[k]);
    }
    ar_buf_puts(b, "}}\n");
}

static void cellf(ar_buf *b, const ar_eval_cell *c, int what)
{
    char s[32];
    if (!c->ran) snprintf(s, sizeof s, "-");
    else if (what == 0) {
        if (c->status != ARACHNE_OK) snprintf(s, sizeof s, "none");
        else snprintf(s, sizeof s, "%.3f", c->rel);
    } else if (what == 1) snprintf(s, sizeof s, "%ld", c->evaluations);
    else {
        if (c->status != ARACHNE_OK) snprintf(s, sizeof s, "-");
        else if (c->planning_s < 10) snprintf(s, sizeof s, "%.3f", c->planning_s);
        else snprintf(s, sizeof s, "%.1f", c->planning_s);
    }
    ar_buf_printf(b, " %20s", s);
}

/* Method columns: the methods in table order, without those that ran nowhere. */
static int shown(const ar_eval_result *res, int *cols)
{
    int o, n = 0;
    for (o = 0; o < AR_EVAL_METHODS; o++)
        if (res->ran[ar_eval_method_order[o]] > 0) cols[n++] = ar_eval_method_order[o];
    return n;
}

static void header(ar_buf *b, const ar_eval_config *cfg, const int *cols, int ncols, const char *first)
{
    int o;
    ar_buf_printf(b, "%-34s %-9s", first, "");
    for (o = 0; o < ncols; o++)
        ar_buf_printf(b, " %20s", ar_eval_method_name(cols[o], cfg->samples, (int)cfg->random_factor));
    ar_buf_puts(b, "\n");
}

/* The population block: per group, geometric mean, minimum and share >= 0.95
 * of each method against the rows' references, and the share of its plans
 * that run the global batch exactly (the CLI refuses the others). */
static void pop_table(const ar_eval_config *cfg, const ar_eval_result *res, const int *cols, int ncols, ar_buf *b)
{
    static const char *const pop_names[AR_EVAL_POPS] = { "all", "dense", "moe" };
    static const char *const what[4] = { "geomean", "min", "share>=0.95", "exact-batch" };
    int g, w, o;
    ar_buf_printf(b, "population: relative to exhaustive search where it ran, else random-x%ld\n", cfg->random_factor);
    header(b, cfg, cols, ncols, "population");
    for (g = 0; g < AR_EVAL_POPS; g++) {
        const ar_eval_pop *P0 = &res->pop[g][AR_EVAL_POLICY_GREEDY];
        for (w = 0; w < 4; w++) {
            char head[64];
            if (w == 0) snprintf(head, sizeof head, "%s (%d)", pop_names[g], P0->rows + P0->missing);
            else head[0] = '\0';
            ar_buf_printf(b, "%-34s %-9s", head, what[w]);
            for (o = 0; o < ncols; o++) {
                const ar_eval_pop *P = &res->pop[g][cols[o]];
                char v[32];
                double x = w == 0 ? P->geomean : w == 1 ? P->min : w == 2 ? P->share95 : P->share_exact;
                if (!P->rows) snprintf(v, sizeof v, "-");
                else if (P->missing) snprintf(v, sizeof v, "%.3f (%d none)", x, P->missing);
                else snprintf(v, sizeof v, "%.3f", x);
                ar_buf_printf(b, " %20s", v);
            }
            ar_buf_puts(b, "\n");
        }
    }
    ar_buf_puts(b, "\n");
}

void ar_eval_result_table(const ar_eval_config *cfg, const ar_eval_result *res, const char *policy, ar_buf *b)
{
    int i, k, o, cols[AR_EVAL_METHODS], ncols = shown(res, cols);
    ar_buf_printf(b, "policy: %s; best-of-%d sampling; +refine: %ld evaluations; random-same: as many evaluations "
                  "as policy-best%d; random-x%ld: %ld times that%s\n", policy ? policy : "", cfg->samples,
                  cfg->refine_evaluations, cfg->samples, cfg->random_factor, cfg->random_factor,
                  cfg->random_time_budget_s > 0 ? " (time-capped)" : "");
    pop_table(cfg, res, cols, ncols, b);
    header(b, cfg, cols, ncols, "composition");
    for (i = 0; i < res->nrows; i++) {
        const ar_eval_row *r = &res->rows[i];
        char head[64];
        snprintf(head, sizeof head, "%s", r->comp.name);
        ar_buf_printf(b, "%-34s %-9s", head, "rel thr");
        for (o = 0; o < ncols; o++) cellf(b, &r->cell[cols[o]], 0);
        ar_buf_puts(b, "\n");
        snprintf(head, sizeof head, "  %d GPUs, %d types, best %.4g it/s", r->gpus, r->types, r->best);
        ar_buf_printf(b, "%-34s %-9s", head, "evals");
        for (o = 0; o < ncols; o++) cellf(b, &r->cell[cols[o]], 1);
        ar_buf_puts(b, "\n");
        snprintf(head, sizeof head, "  %.30s", r->comp.model);
        ar_buf_printf(b, "%-34s %-9s", head, "time s");
        for (o = 0; o < ncols; o++) cellf(b, &r->cell[cols[o]], 2);
        ar_buf_puts(b, "\n");
    }
    ar_buf_printf(b, "%-34s %-9s", "geometric mean (of rel thr)", "rel thr");
    for (o = 0; o < ncols; o++) {
        char s[32];
        k = cols[o];
        if (!res->ran[k]) snprintf(s, sizeof s, "-");
        else snprintf(s, sizeof s, "%.3f", res->geomean[k]);
        ar_buf_printf(b, " %20s", s);
    }
    ar_buf_puts(b, "\n");
    ar_buf_printf(b, "%-34s %-9s", "  compositions planned", "");
    for (o = 0; o < ncols; o++) {
        char s[32];
        k = cols[o];
        snprintf(s, sizeof s, "%d/%d", res->planned[k], res->ran[k]);
        ar_buf_printf(b, " %20s", s);
    }
    ar_buf_puts(b, "\n");
    if (strcmp(res->flat_source, "trained") == 0)
        ar_buf_printf(b, "flat policy: trained here, %ld evaluations, %.1f s, mean return %.3f -> %.3f\n",
                      res->flat_train_evaluations, res->flat_train_s, res->flat_first_return,
                      res->flat_last_return);
    else if (strcmp(res->flat_source, "loaded") == 0)
        ar_buf_printf(b, "flat policy: loaded from %s\n", cfg->flat_policy);
}
