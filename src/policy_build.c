/* policy_build.c -- arachne_plan_build: greedy and best-of-K planning with
 * a policy as the decision source of the construction loop.  Built with
 * OpenMP (make OPENMP=1) the K rollouts run on all threads; each has its
 * own seed, builder and work space, and the best plan is chosen by
 * (throughput, rollout index), so the plan is the same for any number of
 * threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "policy.h"

/* Keeps the first k templates of a constructed plan and reprices it.  The
 * fill of a template never depends on the templates placed after it, so
 * this is exactly the plan the construction had after its k-th template.
 * Ranks are numbered template by template, so the prefix keeps 0..n-1. */
static int keep_prefix(const arachne_cost_model *cm, arachne_plan *p, int k)
{
    int r, n = 0;
    if (k >= p->ntemplates) return ARACHNE_OK;
    for (r = 0; r < p->nranks; r++)
        if (p->ranks[r].tmpl < k) p->ranks[n++] = p->ranks[r];
    p->nranks = n;
    p->ntemplates = k;
    return ar_plan_price(cm, p);
}

/* Number of templates after which the construction's plan ranked highest
 * (ar_plan_rank: a policy may place a template that lowers the throughput
 * or leaves the batch inexact: the decoder returns the best plan it passed
 * through, not a worse final one). */
static int best_prefix(const ar_trace *tr, int ntemplates)
{
    int i, placed = 0, best_k = ntemplates;
    double best = -1.0; /* below every rank (>= 0) */
    for (i = 0; i < tr->nsteps; i++) {
        const ar_step_rec *s = &tr->steps[i];
        if (s->depth <= 0 || !s->feasible) continue;
        placed++;
        if (s->rank_after > best) { best = s->rank_after; best_k = placed; }
    }
    return best_k < 1 ? ntemplates : AR_MIN(best_k, ntemplates);
}

int ar_policy_keep_best_prefix(const arachne_cost_model *cm, arachne_plan *p, const ar_trace *tr)
{
    return keep_prefix(cm, p, best_prefix(tr, p->ntemplates));
}

/* One worker of the best-of-K loop: its own builder, decision source,
 * trace and plans, so rollouts share nothing but the read-only policy and
 * cost model.  It keeps the best plan of the rollouts it ran and the index
 * of that rollout, so the workers' bests reduce by (throughput, index) to
 * the plan the serial loop keeps, whatever the thread count. */
typedef struct pb_worker {
    ar_builder b;
    ar_policy_src src;
    ar_trace tr;
    arachne_plan *trial, *best; /* heap slots, swapped by pointer; the winner's best is handed out */
    arachne_plan *spare;        /* a third slot: a rollout's exact split (ar_plan_keep_form) */
    arachne_plan *greedy;       /* a copy of rollout 0's plan, when asked for (keep_greedy) */
    arachne_plan *alt;          /* the best rollout whose GPU types differ from best's (keep_alt) */
    int keep_greedy;            /* 1: copy rollout 0's plan into greedy */
    int keep_alt;               /* 1: keep alt */
    int have_alt, alt_k;        /* alt holds rollout alt_k */
    unsigned best_types;        /* the GPU types best uses (ar_plan_gpu_types) */
    int ready;          /* init succeeded */
    int have, best_k;   /* best holds rollout best_k */
    int st, st_k;       /* first error (other than a failed rollout) and its rollout */
    int infeasible_k;   /* lowest rollout that found no plan (-1: none) */
    char msg[512];      /* message of st, or of the infeasible rollout */
} pb_worker;

/* The worker's memory comes from malloc: init sets every field a later
 * read depends on (the builder, decision source and trace zero themselves;
 * the two plans only have to own nothing: ar_builder_run initialises the
 * plan it builds, and `best` is read only once a rollout has filled it),
 * instead of zeroing the whole worker (0.3 MB of builder) and both plans
 * (0.2 MB each).  The plans live on the heap: a rollout that beats the
 * best swaps two pointers, and the winner is handed out as it is. */
static int pb_worker_init(pb_worker *w, const arachne_policy *policy, const arachne_cost_model *cm, int keep_alt)
{
    ar_construct_opts opts;
    int st;
    w->ready = w->have = w->best_k = w->st = w->keep_greedy = 0;
    w->keep_alt = keep_alt;
    w->have_alt = w->alt_k = 0;
    w->best_types = 0u;
    w->greedy = NULL;
    w->st_k = -1;
    w->infeasible_k = -1;
    w->msg[0] = '\0';
    memset(&w->src, 0, sizeof w->src);
    ar_trace_init(&w->tr);
    w->trial = ar_malloc(sizeof *w->trial);
    w->best = ar_malloc(sizeof *w->best);
    w->spare = ar_malloc(sizeof *w->spare);
    w->alt = keep_alt ? ar_malloc(sizeof *w->alt) : NULL; /* a fourth slot only when asked for */
    if (w->trial) ar_plan_empty(w->trial);
    if (w->best) ar_plan_empty(w->best);
    if (w->spare) ar_plan_empty(w->spare);
    if (w->alt) ar_plan_empty(w->alt);
    if (!w->trial || !w->best || !w->spare || (keep_alt && !w->alt)) return ARACHNE_E_NO_MEMORY;
    ar_policy_construct_opts(&opts);
    if ((st = ar_builder_init(&w->b, cm, &opts))) return st;
    w->ready = 1;
    return ar_policy_src_init(&w->src, policy->nn, cm, 0, 1, 0);
}

static void pb_worker_free(pb_worker *w)
{
    ar_policy_src_free(&w->src);
    ar_trace_free(&w->tr);
    if (w->trial) ar_plan_clear(w->trial);
    if (w->best) ar_plan_clear(w->best);
    if (w->spare) ar_plan_clear(w->spare);
    if (w->alt) ar_plan_clear(w->alt);
    if (w->greedy) arachne_plan_destroy(w->greedy);
    free(w->trial);
    free(w->best);
    free(w->spare);
    free(w->alt);
    if (w->ready) ar_builder_free(&w->b);
}

/* Names a plan handed out by the build and records what it cost. */
static int pb_label(arachne_plan *p, const char *method, int samples, long evaluations, double planning_s)
{
    snprintf(p->method, sizeof p->method, "%s", method);
    p->samples = samples;
    p->evaluations = evaluations;
    p->planning_s = planning_s;
    return ar_plan_finish(p);
}

static void pb_swap(arachne_plan **a, arachne_plan **b)
{
    arachne_plan *t = *a;
    *a = *b;
    *b = t;
}

/* Keeps the worker's best rollout, and (keep_alt) its best rollout whose
 * GPU types differ from that one's.  Rollouts reach a worker in rising
 * index, and only a higher rank replaces a plan, so ties keep the lower
 * index and the pair is what the serial loop would keep over the same
 * rollouts.  A new best whose types differ makes the old best the
 * alternative: it outranks every earlier rollout. */
static void pb_keep(pb_worker *w, int k)
{
    unsigned types = w->keep_alt ? ar_plan_gpu_types(w->trial) : 0u;
    int alt_k = -1, new_best = !w->have || ar_plan_rank(w->trial) > ar_plan_rank(w->best);
    arachne_plan **alt_from = NULL;
    if (new_best) {
        if (w->keep_alt && w->have && types != w->best_types) {
            alt_from = &w->best; /* the old best becomes the alternative */
            alt_k = w->best_k;
        }
    } else if (w->keep_alt && types != w->best_types &&
               (!w->have_alt || ar_plan_rank(w->trial) > ar_plan_rank(w->alt))) {
        alt_from = &w->trial;
        alt_k = k;
    }
    if (alt_from) {
        pb_swap(&w->alt, alt_from);
        w->have_alt = 1;
        w->alt_k = alt_k;
    }
    if (new_best) { /* best may hold the old alternative's slot now: trial takes it */
        pb_swap(&w->best, &w->trial);
        w->have = 1;
        w->best_k = k;
        w->best_types = types;
    }
}

/* Runs rollout k (0: greedy; others sampled from their own seed, so a
 * rollout's choices depend only on (seed, k)). */
static void pb_rollout(pb_worker *w, const arachne_cost_model *cm, int k, uint64_t rseed)
{
    int st;
    if (w->st) return;
    ar_policy_src_reset(&w->src, rseed, k == 0, NULL);
    st = ar_builder_run(&w->b, ar_policy_decide, &w->src, w->trial, &w->tr);
    if (st == ARACHNE_E_INFEASIBLE) {
        if (w->infeasible_k < 0) {
            w->infeasible_k = k;
            if (!w->st) snprintf(w->msg, sizeof w->msg, "%s", arachne_last_error());
        }
        return;
    }
    if (!st) st = ar_policy_keep_best_prefix(cm, w->trial, &w->tr);
    if (st) {
        w->st = st;
        w->st_k = k;
        snprintf(w->msg, sizeof w->msg, "%s", arachne_last_error());
        return;
    }
    if (ar_plan_keep_form(cm, w->trial, w->have ? ar_plan_rank(w->best) : -HUGE_VAL, w->spare) == w->spare) {
        arachne_plan *tmp = w->trial; /* the rollout's plan is its exact split */
        w->trial = w->spare;
        w->spare = tmp;
    }
    if (k == 0 && w->keep_greedy) { /* the greedy plan, as a build with one sample gives it */
        if (!(w->greedy = ar_malloc(sizeof *w->greedy))) st = ARACHNE_E_NO_MEMORY;
        else {
            ar_plan_empty(w->greedy);
            st = ar_plan_copy(w->greedy, w->trial);
        }
        if (st) {
            w->st = ar_error(st, "arachne_plan_build: out of memory copying the greedy plan");
            w->st_k = k;
            snprintf(w->msg, sizeof w->msg, "%s", arachne_last_error());
            return;
        }
    }
    pb_keep(w, k);
}

/* The first step's depth mask is the same for every rollout (ar_step0_cache).
 * Each worker's builder would compute it on its own, every thread at once,
 * so the threads search its depths between them instead, deepest (the
 * dearest) first, and every worker replays the merged mask; it is the one a
 * builder computes alone, byte for byte.  When a part cannot be computed
 * (no memory), the workers compute the mask themselves as before. */
#ifdef _OPENMP
static void pb_step0(pb_worker *w, int nw)
{
    int n = ar_builder_step0_depths(&w[0].b), k, ok = 1;
    ar_step0_part *parts;
    int *sts;
    if (n < 2) return;
    parts = ar_malloc((size_t)n * sizeof *parts);
    sts = ar_calloc((size_t)n, sizeof *sts);
    if (parts && sts) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nw)
        for (k = 0; k < n; k++) {
            pb_worker *me = &w[omp_get_thread_num()];
            int d = n - k;
            sts[d - 1] = ar_builder_step0_part(&me->b, me->trial, d, &parts[d - 1]);
        }
        for (k = 0; k < n; k++) if (sts[k] != ARACHNE_OK) ok = 0;
        if (ok && ar_builder_step0_merge(&w[0].b, w[0].trial, parts, n) == ARACHNE_OK)
            for (k = 1; k < nw; k++) w[k].b.s0 = w[0].b.s0;
    }
    free(parts);
    free(sts);
}
#endif

int ar_policy_threads(int runs)
{
#ifdef _OPENMP
    int n = omp_get_max_threads();
    return n < 1 ? 1 : n > runs ? runs : n;
#else
    (void)runs;
    return 1;
#endif
}

int arachne_plan_build(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                       int samples, uint64_t seed)
{
    return ar_policy_build(out, NULL, NULL, policy, cm, samples, seed);
}

/* The worker holding the best rollout (rank, then lowest index) whose GPU
 * types differ from `types`, the winner's: a worker's best where its types
 * differ, else its alternative.  -1: none.  *from_best says which. */
static int pb_alt_worker(const pb_worker *w, int nw, unsigned types, int *from_best)
{
    int i, pick = -1, pick_best = 0;
    double pick_rank = 0.0;
    for (i = 0; i < nw; i++) {
        const arachne_plan *c;
        int k, is_best = w[i].have && w[i].best_types != types;
        if (is_best) { c = w[i].best; k = w[i].best_k; }
        else if (w[i].have_alt) { c = w[i].alt; k = w[i].alt_k; }
        else continue;
        if (pick < 0 || ar_plan_rank(c) > pick_rank ||
            (ar_plan_rank(c) == pick_rank && k < (pick_best ? w[pick].best_k : w[pick].alt_k))) {
            pick = i;
            pick_best = is_best;
            pick_rank = ar_plan_rank(c);
        }
    }
    *from_best = pick_best;
    return pick;
}

int ar_policy_build(arachne_plan **out, arachne_plan **greedy, arachne_plan **alt, const arachne_policy *policy,
                    const arachne_cost_model *cm, int samples, uint64_t seed)
{
    double t0 = ar_now();
    arachne_plan *best = NULL;
    pb_worker *w = NULL;
    uint64_t *rseed = NULL;
    ar_rng seeds;
    int st = ARACHNE_OK, k, i, runs, nw, win = -1, err_w = -1, inf_w = -1;
    long evals = 0;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build: out is NULL");
    *out = NULL;
    if (greedy) *greedy = NULL;
    if (alt) *alt = NULL;
    if (!policy || !cm)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build: %s is NULL", policy ? "cost model" : "policy");
    if (samples < 0 || samples > 1000000)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build: samples %d outside 0..1000000", samples);
    runs = samples < 1 ? 1 : samples;
    nw = ar_policy_threads(runs);
    w = ar_malloc((size_t)nw * sizeof *w); /* pb_worker_init sets what is read */
    rseed = ar_calloc((size_t)runs, sizeof *rseed);
    if (!w || !rseed) { nw = 0; st = ARACHNE_E_NO_MEMORY; goto done; } /* no worker to free */
    /* rollout k's seed is the k-th draw of one stream: fixed before any runs */
    ar_rng_seed(&seeds, seed);
    for (k = 0; k < runs; k++) rseed[k] = ar_rng_next(&seeds);
    for (i = 0; i < nw; i++) {
        st = pb_worker_init(&w[i], policy, cm, alt != NULL && runs > 1);
        if (st) { nw = i + 1; goto done; }
        w[i].keep_greedy = greedy != NULL && runs > 1;
    }
    if (nw == 1) {
        for (k = 0; k < runs; k++) pb_rollout(&w[0], cm, k, rseed[k]);
    } else {
#ifdef _OPENMP
        pb_step0(w, nw);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nw)
        for (k = 0; k < runs; k++) pb_rollout(&w[omp_get_thread_num()], cm, k, rseed[k]);
#endif
    }
    /* reduce: highest rank (ar_plan_rank), ties to the lowest rollout index */
    for (i = 0; i < nw; i++) {
        if (w[i].st && (err_w < 0 || w[i].st_k < w[err_w].st_k)) err_w = i;
        if (w[i].infeasible_k >= 0 && (inf_w < 0 || w[i].infeasible_k < w[inf_w].infeasible_k)) inf_w = i;
        if (w[i].have && (win < 0 || ar_plan_rank(w[i].best) > ar_plan_rank(w[win].best) ||
                          (ar_plan_rank(w[i].best) == ar_plan_rank(w[win].best) && w[i].best_k < w[win].best_k)))
            win = i;
        evals += w[i].b.fills + w[i].b.check_fills;
    }
    if (err_w >= 0) { st = ar_error(w[err_w].st, "%s", w[err_w].msg); goto done; }
    if (win < 0) {
        st = inf_w >= 0 ? ar_error(ARACHNE_E_INFEASIBLE, "%s", w[inf_w].msg)
                        : ar_error(ARACHNE_E_INFEASIBLE, "arachne_plan_build: no plan found");
        goto done;
    }
    if (alt && runs > 1) { /* before the winner's plan is taken over */
        int from_best, a = pb_alt_worker(w, nw, w[win].best_types, &from_best);
        if (a >= 0) {
            arachne_plan **slot = from_best ? &w[a].best : &w[a].alt;
            if ((st = pb_label(*slot, "policy-best-of-k", runs, 0, 0.0))) goto done;
            *alt = *slot; /* taken over: the worker's slot is freed as empty */
            *slot = NULL;
        }
    }
    best = w[win].best; /* take the plan over */
    w[win].best = NULL;
    if ((st = pb_label(best, runs == 1 ? "policy-greedy" : "policy-best-of-k", runs, evals, ar_now() - t0))) goto done;
    /* rollout 0's plan: its fills are counted in best's evaluations */
    for (i = 0; greedy && i < nw; i++)
        if (w[i].greedy) {
            if ((st = pb_label(w[i].greedy, "policy-greedy", 1, 0, 0.0))) goto done;
            *greedy = w[i].greedy;
            w[i].greedy = NULL;
        }
    *out = best;
    best = NULL;
done:
    if (st && alt && *alt) {
        arachne_plan_destroy(*alt);
        *alt = NULL;
    }
    if (w)
        for (i = 0; i < nw; i++) pb_worker_free(&w[i]);
    free(w);
    free(rseed);
    if (best) arachne_plan_destroy(best);
    return st;
}
