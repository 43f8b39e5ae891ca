/* train.c -- arachne_trainer: options, compositions, and the update loop
 * (rollouts, group-relative advantages, PPO epochs with PCGrad, periodic
 * self-imitation).  See docs/training.md. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct opt_spec {
    const char *name;
    double lo, hi;
    int lo_open, integer;
    double def;
} opt_spec;

static const opt_spec OPTS[AR_TRAIN_NOPT] = {
    { "UPDATES", 1, 1e9, 0, 1, 200 },
    { "GROUP_SIZE", 2, 1024, 0, 1, 8 },
    { "PPO_EPOCHS", 1, 64, 0, 1, 3 },
    { "CLIP", 0, 0.999999, 1, 0, 0.2 },
    { "LEARNING_RATE", 0, 1, 1, 0, 1e-3 },
    { "ENTROPY", 0, 10, 0, 0, 0.01 },
    { "FORCE_DEPTH_START", 0, 1, 0, 0, 0.8 },
    { "FORCE_DEPTH_END", 0, 1, 0, 0, 0.25 },
    { "SIL_INTERVAL", 0, 1e9, 0, 1, 5 },
    { "SIL_WEIGHT", 0, 100, 0, 0, 0.5 },
    { "PENALTY", 0, 1e6, 0, 0, 1 },
    { "MAX_GRAD_NORM", 0, 1e9, 0, 0, 1 },
    { "SIL_NEIGHBOURS", 0, 64, 0, 1, 2 },
    { "SIL_PER_DEPTH", 1, AR_TRAIN_MAX_SIL, 0, 1, 2 },
    { "MAX_STEPS", 1, AR_MAX_TEMPLATES, 0, 1, AR_MAX_TEMPLATES },
    { "WEIGHT_DECAY", 0, 0.999999, 0, 0, 0 },
    { "SIL_CLIP", 0, 1e6, 1, 0, 1 },
    { "UNIFORM_TYPE_ROLLOUTS", 0, 1024, 0, 1, 1 },
    { "THREADS", 0, 1024, 0, 1, 0 },
    { "PCGRAD", 0, 1, 0, 1, 1 },
    { "SIL_TOP", 0, 1, 0, 0, 0.9 },
    { "GREEDY_ROLLOUTS", 0, 1023, 0, 1, 0 },
    { "SIZE_CURRICULUM", 0, 1e9, 0, 1, 0 },
    { "REFINE_INTERVAL", 0, 1e9, 0, 1, 0 },
    { "REFINE_EVALUATIONS", 1, 1e6, 0, 1, ARACHNE_REFINE_EVALUATIONS },
    { "ENTROPY_END_SCALE", 0, 1, 0, 0, 1 },
    { "ENTROPY_DECAY_START", 0, 1e9, 0, 1, 0 },
    { "ROLLOUT_INTERVAL", 0, 1e9, 0, 1, 0 },
    { "ROLLOUT_EVALUATIONS", 0, 1e7, 0, 1, 2000 },
    { "ROLLOUT_WEIGHT", 0, 100, 0, 0, 1 },
    { "SIL_EPOCHS", 1, 64, 0, 1, 1 },
};

int arachne_trainer_create(arachne_trainer **out, arachne_policy *policy, uint64_t seed)
{
    arachne_trainer *t;
    int i;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_create: out is NULL");
    *out = NULL;
    if (!policy) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_create: policy is NULL");
    t = ar_calloc(1, sizeof *t);
    if (!t) return ARACHNE_E_NO_MEMORY;
    t->policy = policy;
    t->seed = seed;
    ar_rng_seed(&t->rng, seed ^ 0x7452a1e5c0ffee11ULL);
    for (i = 0; i < AR_TRAIN_NOPT; i++) t->opt[i] = OPTS[i].def;
    *out = t;
    return ARACHNE_OK;
}

static void free_slots(arachne_trainer *t)
{
    int i;
    for (i = 0; i < t->nslots; i++) {
        ar_train_slot *s = &t->slots[i];
        if (!s->ready) continue;
        ar_builder_free(&s->b);
        ar_policy_src_free(&s->src);
        ar_trace_free(&s->trace);
        ar_plan_clear(&s->plan);
    }
    free(t->slots);
    t->slots = NULL;
    t->nslots = 0;
    t->slots_g = 0;
}

static void free_grads(arachne_trainer *t)
{
    int i;
    for (i = 0; i < t->ngrads; i++) {
        free(t->grads[i]);
        ar_nn_ws_destroy(t->ws[i]);
    }
    free(t->grads);
    free(t->ws);
    t->grads = NULL;
    t->ws = NULL;
    t->ngrads = 0;
}

void ar_train_comp_clear_plans(ar_train_comp *c)
{
    int d, k;
    for (d = 0; d < AR_SEARCH_MAX_DEPTH; d++) {
        if (c->buf[d])
            for (k = 0; k < AR_TRAIN_MAX_SIL; k++) ar_sil_plan_free(&c->buf[d][k]);
        free(c->buf[d]);
        c->buf[d] = NULL;
        c->nbuf[d] = 0;
    }
    ar_sil_plan_free(&c->best);
    ar_sil_plan_free(&c->roll);
}

void arachne_trainer_destroy(arachne_trainer *t)
{
    int i;
    if (!t) return;
    free_slots(t);
    free_grads(t);
    for (i = 0; i < t->ncomp; i++) {
        ar_train_comp_clear_plans(&t->comp[i]);
        free(t->comp[i].name);
    }
    free(t->comp);
    free(t->best_buf);
    free(t);
}

/* Decision source of the feasibility check at add time: first allowed choice. */
static int first_allowed(void *user, const ar_dec_ctx *ctx, int *choice)
{
    int i;
    (void)user;
    for (i = 0; i < ctx->n; i++)
        if (ctx->mask[i]) { *choice = i; return ARACHNE_OK; }
    return ar_error(ARACHNE_E_INVALID_ARGUMENT, "trainer: a decision with no allowed choice");
}

int arachne_trainer_add_composition(arachne_trainer *t, const arachne_cost_model *cm, const char *name)
{
    ar_train_comp *c;
    arachne_plan plan;
    char nbuf[32];
    double md;
    int st;
    if (!t || !cm)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_add_composition: %s is NULL",
                        t ? "cost model" : "trainer");
    if (t->updates_done > 0 || t->slots)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "arachne_trainer_add_composition: compositions are fixed once training started");
    if (t->ncomp >= AR_TRAIN_MAX_COMPS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_add_composition: more than %d compositions",
                        AR_TRAIN_MAX_COMPS);
    if (!name) {
        snprintf(nbuf, sizeof nbuf, "comp%d", t->ncomp);
        name = nbuf;
    }
    /* A composition with no feasible plan has nothing to teach. */
    memset(&plan, 0, sizeof plan);
    st = ar_plan_init(&plan, cm);
    if (!st) st = ar_construct(cm, first_allowed, NULL, 1, &plan, NULL);
    ar_plan_clear(&plan);
    if (st) {
        ar_error_prefix(name);
        return st;
    }
    if (t->ncomp == t->cap_comp) {
        int cap = t->cap_comp ? 2 * t->cap_comp : 8;
        ar_train_comp *nc = ar_realloc(t->comp, (size_t)cap * sizeof *nc);
        double *nb;
        if (!nc) return ARACHNE_E_NO_MEMORY;
        t->comp = nc;
        nb = ar_realloc(t->best_buf, (size_t)cap * sizeof *nb);
        if (!nb) return ARACHNE_E_NO_MEMORY;
        t->best_buf = nb;
        t->cap_comp = cap;
    }
    c = &t->comp[t->ncomp];
    memset(c, 0, sizeof *c);
    c->cm = cm;
    c->name = ar_strdup(name);
    if (!c->name) return ARACHNE_E_NO_MEMORY;
    st = ar_state_static_init(&c->st, cm);
    if (st) { free(c->name); return st; }
    st = arachne_cost_model_get(cm, ARACHNE_OPT_MAX_DEPTH, &md);
    if (st) { free(c->name); return st; }
    c->max_depth = (int)md;
    t->ncomp++;
    return ARACHNE_OK;
}

int arachne_trainer_set(arachne_trainer *t, int option, double value)
{
    const opt_spec *o;
    if (!t) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_set: trainer is NULL");
    if (option < 0 || option >= AR_TRAIN_NOPT)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_set: unknown option %d (0..%d)", option,
                        AR_TRAIN_NOPT - 1);
    o = &OPTS[option];
    if (!isfinite(value) || value < o->lo || value > o->hi || (o->lo_open && value <= o->lo))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_set: ARACHNE_TRAIN_%s = %g outside %c%g, %g]",
                        o->name, value, o->lo_open ? '(' : '[', o->lo, o->hi);
    if (o->integer && value != floor(value))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_set: ARACHNE_TRAIN_%s = %g is not an integer",
                        o->name, value);
    t->opt[option] = value;
    return ARACHNE_OK;
}

int arachne_trainer_get_option(const arachne_trainer *t, int option, double *out)
{
    if (!t || !out) return AR_NULL_ARG("arachne_trainer_get_option", t, out);
    if (option < 0 || option >= AR_TRAIN_NOPT)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_get_option: unknown option %d (0..%d)", option,
                        AR_TRAIN_NOPT - 1);
    *out = t->opt[option];
    return ARACHNE_OK;
}

double ar_train_option_default(int option)
{
    return option >= 0 && option < AR_TRAIN_NOPT ? OPTS[option].def : 0.0;
}

/* Where update u stands on a linear schedule from update `from` to update
 * `to`: 0 up to `from`, 1 from `to` on (a step after `from` when to <= from). */
static double schedule_frac(double u, double from, double to)
{
    if (u <= from) return 0;
    if (to <= from || u >= to) return 1;
    return (u - from) / (to - from);
}

double ar_train_force_p(const arachne_trainer *t)
{
    double a = t->opt[ARACHNE_TRAIN_FORCE_DEPTH_START], b = t->opt[ARACHNE_TRAIN_FORCE_DEPTH_END];
    return a + (b - a) * schedule_frac((double)t->updates_done, 0, t->opt[ARACHNE_TRAIN_UPDATES]);
}

double ar_train_entropy(const arachne_trainer *t)
{
    double f = schedule_frac((double)t->updates_done, t->opt[ARACHNE_TRAIN_ENTROPY_DECAY_START],
                             t->opt[ARACHNE_TRAIN_UPDATES]);
    return t->opt[ARACHNE_TRAIN_ENTROPY] * (1 + (t->opt[ARACHNE_TRAIN_ENTROPY_END_SCALE] - 1) * f);
}

int arachne_trainer_get(const arachne_trainer *t, int composition, int field, double *out)
{
    const ar_train_comp *c = NULL;
    int i;
    if (!t || !out) return AR_NULL_ARG("arachne_trainer_get", t, out);
    if (field < 0 || field > ARACHNE_TRAIN_ENTROPY_COEF)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_get: unknown field %d", field);
    if (field <= ARACHNE_TRAIN_REF_ITER_PER_S) {
        if (composition < 0 || composition >= t->ncomp)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_get: composition %d outside 0..%d",
                            composition, t->ncomp - 1);
        c = &t->comp[composition];
    }
    switch (field) {
    case ARACHNE_TRAIN_BEST_ITER_PER_S: *out = c->best.ndec ? c->best.iter_per_s : 0.0; break;
    case ARACHNE_TRAIN_MEAN_REWARD: *out = c->mean_return; break;
    case ARACHNE_TRAIN_EVALUATIONS: *out = c->evaluations; break;
    case ARACHNE_TRAIN_REF_ITER_PER_S: *out = c->st.thr_ref; break;
    case ARACHNE_TRAIN_UPDATES_DONE: *out = (double)t->updates_done; break;
    case ARACHNE_TRAIN_MEAN_NORM_REWARD: *out = t->last_norm_reward; break;
    case ARACHNE_TRAIN_MEAN_NORM_BEST: {
        double s = 0;
        for (i = 0; i < t->ncomp; i++)
            s += (t->comp[i].best.ndec ? t->comp[i].best.iter_per_s : 0.0) / t->comp[i].st.thr_ref;
        *out = t->ncomp ? s / t->ncomp : 0.0;
        break;
    }
    case ARACHNE_TRAIN_ENTROPY_MEAN: *out = t->last_entropy; break;
    case ARACHNE_TRAIN_GRAD_NORM: *out = t->last_grad_norm; break;
    case ARACHNE_TRAIN_COMPOSITIONS: *out = t->ncomp; break;
    case ARACHNE_TRAIN_REFINED_PLANS: *out = (double)t->refined_plans; break;
    case ARACHNE_TRAIN_REFINE_MISSES: *out = (double)t->refine_misses; break;
    case ARACHNE_TRAIN_ENTROPY_COEF: *out = ar_train_entropy(t); break;
    default: *out = ar_train_force_p(t); break;
    }
    return ARACHNE_OK;
}

int arachne_trainer_composition_name(const arachne_trainer *t, int composition, const char **out)
{
    if (!t || !out) return AR_NULL_ARG("arachne_trainer_composition_name", t, out);
    if (composition < 0 || composition >= t->ncomp)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_composition_name: composition %d outside 0..%d",
                        composition, t->ncomp - 1);
    *out = t->comp[composition].name;
    return ARACHNE_OK;
}

int arachne_trainer_best_plan(const arachne_trainer *t, int composition, arachne_plan **out)
{
    const ar_train_comp *c;
    arachne_plan *p;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_best_plan: out is NULL");
    *out = NULL;
    if (!t) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_best_plan: trainer is NULL");
    if (composition < 0 || composition >= t->ncomp)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_best_plan: composition %d outside 0..%d",
                        composition, t->ncomp - 1);
    c = &t->comp[composition];
    if (c->best.ndec == 0)
        return ar_error(ARACHNE_E_NOT_FOUND, "arachne_trainer_best_plan: no plan found yet for '%s'", c->name);
    p = ar_calloc(1, sizeof *p);
    if (!p) return ARACHNE_E_NO_MEMORY;
    st = ar_plan_init(p, c->cm);
    if (!st) st = ar_sil_replay(c->cm, &c->best, (int)t->opt[ARACHNE_TRAIN_MAX_STEPS], p);
    if (!st) {
        snprintf(p->method, sizeof p->method, "%s", "policy-training");
        st = ar_plan_finish(p);
    }
    if (st) {
        arachne_plan_destroy(p);
        return st;
    }
    *out = p;
    return ARACHNE_OK;
}

/* ---- the update loop ------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The seed of rollout (update u, composition i, member g): a function of
 * these numbers and the trainer seed only, never of the thread that runs it. */
static uint64_t rollout_seed(uint64_t seed, long u, int i, int g)
{
    uint64_t h = mix64(seed);
    h = mix64(h ^ (uint64_t)u);
    h = mix64(h ^ ((uint64_t)(unsigned)i << 20));
    return mix64(h ^ (uint64_t)(unsigned)g);
}

/* Curriculum over cluster size (SIZE_CURRICULUM = C): the first update a
 * composition of N GPUs takes part in.  Up to 1,024 GPUs from the start;
 * above, ceil(C log2(N/1024) / 4), so 2,048 GPUs join at C/4 and 16,384 at
 * C.  Rollouts on large clusters cost tens of times those on small ones,
 * and an untrained policy builds the most templates there; joining once the
 * policy has learnt on the small ones spends the budget where it teaches. */
long ar_train_join_update(const arachne_trainer *t, int i)
{
    double C = t->opt[ARACHNE_TRAIN_SIZE_CURRICULUM];
    int n = t->comp[i].cm->cluster->total_gpus;
    if (C <= 0 || n <= 1024) return 0;
    return (long)ceil(C * log2((double)n / 1024.0) / 4.0 - 1e-9);
}

static int nthreads_of(const arachne_trainer *t)
{
#ifdef _OPENMP
    return t->opt[ARACHNE_TRAIN_THREADS] > 0 ? (int)t->opt[ARACHNE_TRAIN_THREADS] : omp_get_max_threads();
#else
    (void)t;
    return 1;
#endif
}

static int prepare(arachne_trainer *t)
{
    int G = (int)t->opt[ARACHNE_TRAIN_GROUP_SIZE], i, j, k, st;
    size_t P = ar_nn_param_count(t->policy->nn);
    if (t->slots && t->slots_g != G) free_slots(t);
    if (!t->slots) {
        t->slots = ar_calloc((size_t)t->ncomp * (size_t)G, sizeof *t->slots);
        if (!t->slots) return ARACHNE_E_NO_MEMORY;
        t->nslots = t->ncomp * G;
        t->slots_g = G;
        for (k = 0; k < t->nslots; k++) {
            ar_train_slot *s = &t->slots[k];
            const arachne_cost_model *cm = t->comp[k / G].cm;
            ar_construct_opts o;
            ar_policy_construct_opts(&o);
            if ((st = ar_builder_init(&s->b, cm, &o))) { ar_builder_free(&s->b); return st; }
            if ((st = ar_policy_src_init(&s->src, t->policy->nn, cm, 0, 0, 1))) {
                ar_builder_free(&s->b);
                ar_policy_src_free(&s->src);
                return st;
            }
            ar_trace_init(&s->trace);
            memset(&s->plan, 0, sizeof s->plan);
            if ((st = ar_plan_init(&s->plan, cm))) {
                ar_builder_free(&s->b);
                ar_policy_src_free(&s->src);
                ar_plan_clear(&s->plan);
                return st;
            }
            s->ready = 1;
        }
    }
    if (!t->grads) {
        t->grads = ar_calloc((size_t)t->ncomp, sizeof *t->grads);
        t->ws = ar_calloc((size_t)t->ncomp, sizeof *t->ws);
        if (!t->grads || !t->ws) return ARACHNE_E_NO_MEMORY;
        t->ngrads = t->ncomp;
        for (i = 0; i < t->ncomp; i++) {
            t->grads[i] = ar_malloc(P * sizeof(double));
            if (!t->grads[i]) return ARACHNE_E_NO_MEMORY;
            if ((st = ar_nn_ws_create(&t->ws[i], t->policy->nn))) return st;
        }
    }
    /* SIL neighbours: nearest compositions by the composition summary (ties: lower index) */
    for (i = 0; i < t->ncomp; i++) {
        ar_train_comp *c = &t->comp[i];
        int want = AR_MIN((int)t->opt[ARACHNE_TRAIN_SIL_NEIGHBOURS], t->ncomp - 1);
        c->nneighbours = 0;
        while (c->nneighbours < want) {
            int bestj = -1, q, taken;
            double bestd = 0;
            for (j = 0; j < t->ncomp; j++) {
                double d = 0;
                int e;
                if (j == i) continue;
                for (q = 0, taken = 0; q < c->nneighbours; q++) taken |= c->neighbours[q] == j;
                if (taken) continue;
                for (e = 0; e < AR_STATE_COMP; e++) {
                    double x = c->st.comp[e] - t->comp[j].st.comp[e];
                    d += x * x;
                }
                if (bestj < 0 || d < bestd) { bestj = j; bestd = d; }
            }
            if (bestj < 0) break;
            c->neighbours[c->nneighbours++] = bestj;
        }
    }
    return ARACHNE_OK;
}

static void run_rollout(arachne_trainer *t, int k, double force_p)
{
    ar_train_slot *s = &t->slots[k];
    int G = t->slots_g, i = k / G, g = k % G;
    ar_train_comp *c = &t->comp[i];
    ar_explore ex;
    long ev0 = s->b.fills + s->b.check_fills;
    int st, greedy;
    /* The last GREEDY_ROLLOUTS members decode greedily: the plan the policy
     * would return joins the group, so its decisions get the group-relative
     * advantage like any sampled plan's and a sampled plan that beats it
     * pulls the most likely choices its way. */
    greedy = g >= G - (int)t->opt[ARACHNE_TRAIN_GREEDY_ROLLOUTS];
    ex.force_depth_p = force_p;
    ex.uniform_types = g < (int)t->opt[ARACHNE_TRAIN_UNIFORM_TYPE_ROLLOUTS];
    s->b.opts.max_steps = (int)t->opt[ARACHNE_TRAIN_MAX_STEPS];
    s->b.opts.penalty = c->penalty;
    ar_policy_src_reset(&s->src, rollout_seed(t->seed, t->updates_done, i, g), greedy, greedy ? NULL : &ex);
    st = ar_builder_run(&s->b, ar_policy_decide, &s->src, &s->plan, &s->trace);
    if (st == ARACHNE_E_INFEASIBLE && s->trace.nsteps == 1 && !s->trace.steps[0].feasible) st = ARACHNE_OK;
    s->status = st;
    s->err[0] = '\0';
    if (st) snprintf(s->err, sizeof s->err, "%s: %s", c->name, arachne_last_error());
    s->ret = s->trace.total_reward;
    s->evals = s->b.fills + s->b.check_fills - ev0;
}

/* Combines the per-composition gradients into the network's gradient and
 * takes one Adam step. */
static int combine_and_step(arachne_trainer *t, int nthreads)
{
    ar_nn *nn = t->policy->nn;
    size_t P = ar_nn_param_count(nn), p;
    double *g = ar_nn_grads(nn), norm = 0;
    ar_adam_config ac;
    int n = t->ncomp, i, j, st;
    if (t->opt[ARACHNE_TRAIN_PCGRAD] != 0 && n > 1) {
        int *perm = ar_malloc((size_t)n * (size_t)n * sizeof *perm);
        if (!perm) return ARACHNE_E_NO_MEMORY;
        for (i = 0; i < n; i++) {
            int *q = perm + (size_t)i * n;
            for (j = 0; j < n; j++) q[j] = j;
            for (j = n - 1; j > 0; j--) {
                int r = ar_rng_int(&t->rng, j + 1), tmp = q[j];
                q[j] = q[r];
                q[r] = tmp;
            }
        }
        st = ar_train_pcgrad(n, P, t->grads, perm, g, nthreads);
        free(perm);
        if (st) return st;
    } else {
        for (p = 0; p < P; p++) {
            double s = 0;
            for (i = 0; i < n; i++) s += t->grads[i][p];
            g[p] = s;
        }
    }
    ar_adam_config_default(&ac);
    ac.lr = t->opt[ARACHNE_TRAIN_LEARNING_RATE];
    ac.clip_norm = t->opt[ARACHNE_TRAIN_MAX_GRAD_NORM];
    ac.weight_decay = t->opt[ARACHNE_TRAIN_WEIGHT_DECAY];
    st = ar_nn_adam_step(nn, &ac, &norm);
    t->last_grad_norm = norm;
    return st;
}

static int first_error(const int *status, char (*err)[256], int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (status[i]) return ar_error(status[i], "trainer: %s", err[i]);
    return ARACHNE_OK;
}

/* Runs fn on every active composition with its first rollout slot (free
 * once the PPO gradients are taken), in parallel, one writer each; the
 * first error by composition index. */
static int slot_round(arachne_trainer *t, int nthreads, int (*fn)(arachne_trainer *, int, ar_train_slot *), int *cstat,
                      char (*cerr)[256])
{
    int i, n = t->ncomp;
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
#endif
    for (i = 0; i < n; i++) {
        ar_train_comp *c = &t->comp[i];
        cstat[i] = c->active ? fn(t, i, &t->slots[(size_t)i * t->slots_g]) : 0;
        if (cstat[i]) snprintf(cerr[i], sizeof cerr[i], "%s: %s", c->name, arachne_last_error());
    }
    return first_error(cstat, cerr, n);
}

static int one_update(arachne_trainer *t, int nthreads)
{
    int G = t->slots_g, n = t->ncomp, k, i, g, st, ep;
    int epochs = (int)t->opt[ARACHNE_TRAIN_PPO_EPOCHS];
    int per_depth = (int)t->opt[ARACHNE_TRAIN_SIL_PER_DEPTH];
    int sil_iv = (int)t->opt[ARACHNE_TRAIN_SIL_INTERVAL];
    int refine_iv = (int)t->opt[ARACHNE_TRAIN_REFINE_INTERVAL];
    int roll_iv = (int)t->opt[ARACHNE_TRAIN_ROLLOUT_INTERVAL];
    size_t P = ar_nn_param_count(t->policy->nn);
    double force_p = ar_train_force_p(t), norm_sum = 0;
    int nactive = 0;
    int *cstat;
    char (*cerr)[256];
    double *cent;
    long *cdec;
    (void)nthreads;

    cstat = ar_calloc((size_t)n, sizeof *cstat);
    cerr = ar_calloc((size_t)n, sizeof *cerr);
    cent = ar_calloc((size_t)n, sizeof *cent);
    cdec = ar_calloc((size_t)n, sizeof *cdec);
    if (!cstat || !cerr || !cent || !cdec) { st = ARACHNE_E_NO_MEMORY; goto done; }

    for (i = 0; i < n; i++) {
        t->comp[i].penalty = t->opt[ARACHNE_TRAIN_PENALTY] * t->comp[i].st.thr_ref;
        t->comp[i].active = t->updates_done >= ar_train_join_update(t, i);
        nactive += t->comp[i].active;
    }

    /* 1. rollouts, in parallel over (composition, member) pairs; a
     * composition the size curriculum has not let in yet sits out */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
#endif
    for (k = 0; k < t->nslots; k++) {
        if (t->comp[k / G].active) run_rollout(t, k, force_p);
        else t->slots[k].status = ARACHNE_OK;
    }
    for (k = 0; k < t->nslots; k++)
        if (t->slots[k].status) {
            st = ar_error(t->slots[k].status, "trainer: %s", t->slots[k].err);
            goto done;
        }

    /* 2. advantages, statistics and replay buffers (serial, fixed order) */
    for (i = 0; i < n; i++) {
        ar_train_comp *c = &t->comp[i];
        int nsteps[1024];
        double *r, *adv;
        if (!c->active) continue;
        r = ar_calloc((size_t)G * (AR_MAX_TEMPLATES + 1), sizeof *r);
        adv = ar_calloc((size_t)G * (AR_MAX_TEMPLATES + 1), sizeof *adv);
        if (!r || !adv) { free(r); free(adv); st = ARACHNE_E_NO_MEMORY; goto done; }
        for (g = 0; g < G; g++) {
            ar_train_slot *s = &t->slots[(size_t)i * G + g];
            int tt;
            c->evaluations += (double)s->evals;
            nsteps[g] = s->trace.nsteps;
            for (tt = 0; tt < s->trace.nsteps; tt++) r[g * (AR_MAX_TEMPLATES + 1) + tt] = s->trace.steps[tt].reward;
            if (s->plan.ntemplates > 0) {
                st = ar_sil_offer(c, &s->src, s->plan.iter_per_s, s->plan.t[0].depth, per_depth);
                if (st) { free(r); free(adv); goto done; }
            }
        }
        ar_train_advantages(G, nsteps, r, AR_MAX_TEMPLATES + 1, adv, &c->mean_return, &c->std_return);
        c->have_group = 1;
        for (g = 0; g < G; g++) {
            ar_train_slot *s = &t->slots[(size_t)i * G + g];
            memset(s->adv, 0, sizeof s->adv);
            memcpy(s->adv, adv + g * (AR_MAX_TEMPLATES + 1), (size_t)nsteps[g] * sizeof(double));
        }
        norm_sum += c->mean_return / c->st.thr_ref;
        free(r);
        free(adv);
    }
    t->last_norm_reward = nactive ? norm_sum / nactive : 0.0;

    /* 3. PPO epochs: per-composition gradients in parallel, PCGrad, Adam */
    for (ep = 0; ep < epochs; ep++) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
#endif
        for (i = 0; i < n; i++) {
            memset(t->grads[i], 0, P * sizeof(double));
            cent[i] = 0;
            cdec[i] = 0;
            cstat[i] = t->comp[i].active ? ar_train_ppo_grad(t, i, t->ws[i], t->grads[i], &cent[i], &cdec[i]) : 0;
            if (cstat[i]) snprintf(cerr[i], sizeof cerr[i], "%s: %s", t->comp[i].name, arachne_last_error());
        }
        if ((st = first_error(cstat, cerr, n))) goto done;
        if (ep == 0) {
            double es = 0;
            long nd = 0;
            for (i = 0; i < n; i++) { es += cent[i]; nd += cdec[i]; }
            t->last_entropy = nd ? es / nd : 0.0;
        }
        if ((st = combine_and_step(t, nthreads))) goto done;
    }

    /* 4. expert iteration at a fixed interval: each composition's best plan
     * refined with the cost model and, when faster, recorded through the
     * policy's decisions into the buffers the self-imitation step reads; a
     * composition's first slot is free once its PPO gradients are taken */
    if (refine_iv > 0 && (t->updates_done + 1) % refine_iv == 0) {
        /* (a composition the curriculum has not let in was never refined: its counts are 0) */
        if ((st = slot_round(t, nthreads, ar_sil_refine_best, cstat, cerr))) goto done;
        for (i = 0; i < n; i++) {
            t->refined_plans += t->comp[i].refine_gain;
            t->refine_misses += t->comp[i].refine_miss;
        }
    }

    /* 4b. rollout targets at a fixed interval: each composition planned by
     * rollout decoding of the current policy; its decisions are imitated
     * (the policy improvement step of approximate policy iteration) */
    if (roll_iv > 0 && (t->updates_done + 1) % roll_iv == 0 &&
        (st = slot_round(t, nthreads, ar_sil_rollout_target, cstat, cerr)))
        goto done;

    /* 5. self-imitation at a fixed interval: SIL_EPOCHS optimizer steps,
     * each on the gradients of the weights the previous one left */
    for (ep = 0; sil_iv > 0 && (t->updates_done + 1) % sil_iv == 0 && t->opt[ARACHNE_TRAIN_SIL_WEIGHT] > 0 &&
                 ep < (int)t->opt[ARACHNE_TRAIN_SIL_EPOCHS];
         ep++) {
        int total = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
#endif
        for (i = 0; i < n; i++) {
            int np = 0;
            memset(t->grads[i], 0, P * sizeof(double));
            cstat[i] = t->comp[i].active ? ar_sil_grad(t, i, t->ws[i], t->grads[i], &np) : 0;
            cdec[i] = np;
            if (cstat[i]) snprintf(cerr[i], sizeof cerr[i], "%s: %s", t->comp[i].name, arachne_last_error());
        }
        if ((st = first_error(cstat, cerr, n))) goto done;
        for (i = 0; i < n; i++) total += (int)cdec[i];
        if (total == 0) break;
        if ((st = combine_and_step(t, nthreads))) goto done;
    }
    t->updates_done++;
    st = ARACHNE_OK;
done:
    free(cstat);
    free(cerr);
    free(cent);
    free(cdec);
    return st;
}

int arachne_trainer_run(arachne_trainer *t, int updates, arachne_train_callback cb, void *user)
{
    int u, st, i, nthreads;
    if (!t) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_run: trainer is NULL");
    if (updates < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_run: updates = %d (>= 1)", updates);
    if (t->ncomp < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_run: no composition added");
    /* the callback counts updates in an int, across resumes */
    if (t->updates_done > (long)INT_MAX - updates)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_run: %ld updates done and %d more pass INT_MAX, "
                        "the callback's count", t->updates_done, updates);
    if ((int)t->opt[ARACHNE_TRAIN_GROUP_SIZE] > 1024)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_trainer_run: group size above 1024");
    if (t->opt[ARACHNE_TRAIN_GREEDY_ROLLOUTS] >= t->opt[ARACHNE_TRAIN_GROUP_SIZE])
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "arachne_trainer_run: GREEDY_ROLLOUTS = %g leaves no sampled rollout in a group of %g",
                        t->opt[ARACHNE_TRAIN_GREEDY_ROLLOUTS], t->opt[ARACHNE_TRAIN_GROUP_SIZE]);
    st = prepare(t);
    if (st) {
        free_slots(t); /* a half-built set would be reused by the next call */
        free_grads(t);
        return st;
    }
    nthreads = nthreads_of(t);
    for (u = 0; u < updates; u++) {
        st = one_update(t, nthreads);
        if (st) return st;
        if (cb) {
            for (i = 0; i < t->ncomp; i++) t->best_buf[i] = t->comp[i].best.ndec ? t->comp[i].best.iter_per_s : 0.0;
            if (cb(user, (int)t->updates_done, (int)(t->updates_done + (updates - u - 1)), t->last_norm_reward,
                   t->best_buf, t->ncomp))
                return ar_error(ARACHNE_E_CANCELLED, "arachne_trainer_run: cancelled by the callback after update %ld",
                                t->updates_done);
        }
    }
    return ARACHNE_OK;
}
