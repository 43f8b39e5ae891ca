/* policy_build.c -- arachne_plan_build: greedy and best-of-K planning with
 * a policy as the decision source of the construction loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/* A plan is better when it has more throughput; ties keep the earlier. */
static int better(const arachne_plan *a, const arachne_plan *b)
{
    return b->ntemplates == 0 || a->iter_per_s > b->iter_per_s;
}

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

/* Number of templates after which the construction's throughput was
 * highest (a policy may place a template that lowers it: the decoder
 * returns the best plan it passed through, not a worse final one). */
static int best_prefix(const ar_trace *tr, int ntemplates)
{
    int i, placed = 0, best_k = ntemplates;
    double best = -1.0;
    for (i = 0; i < tr->nsteps; i++) {
        const ar_step_rec *s = &tr->steps[i];
        if (s->depth <= 0 || !s->feasible) continue;
        placed++;
        if (s->thr_after > best) { best = s->thr_after; best_k = placed; }
    }
    return best_k < 1 ? ntemplates : AR_MIN(best_k, ntemplates);
}

int arachne_plan_build(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                       int samples, uint64_t seed)
{
    double t0 = ar_now();
    arachne_plan *best = NULL, trial;
    ar_policy_src src;
    ar_builder b;
    ar_construct_opts opts;
    ar_rng seeds;
    ar_trace tr;
    int st, k, have = 0, runs;
    long evals = 0;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build: out is NULL");
    *out = NULL;
    if (!policy || !cm)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build: %s is NULL", policy ? "cost model" : "policy");
    if (samples < 0 || samples > 1000000)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build: samples %d outside 0..1000000", samples);
    runs = samples < 1 ? 1 : samples;
    memset(&trial, 0, sizeof trial);
    memset(&src, 0, sizeof src);
    ar_trace_init(&tr);
    ar_policy_construct_opts(&opts);
    st = ar_builder_init(&b, cm, &opts);
    if (st) return st;
    best = ar_calloc(1, sizeof *best);
    if (!best) { st = ARACHNE_E_NO_MEMORY; goto done; }
    if ((st = ar_plan_init(best, cm)) || (st = ar_plan_init(&trial, cm))) goto done;
    if ((st = ar_policy_src_init(&src, policy->nn, cm, seed, 1, 0))) goto done;
    ar_rng_seed(&seeds, seed);
    for (k = 0; k < runs; k++) {
        /* Run 0 is greedy; the others sample, each from its own seed so a
         * run's choices do not depend on how many came before. */
        ar_policy_src_reset(&src, ar_rng_next(&seeds), k == 0, NULL);
        st = ar_builder_run(&b, ar_policy_decide, &src, &trial, &tr);
        if (st == ARACHNE_E_INFEASIBLE && !have && k + 1 < runs) continue;
        if (st) goto done;
        if ((st = keep_prefix(cm, &trial, best_prefix(&tr, trial.ntemplates)))) goto done;
        evals++;
        if (!have || better(&trial, best)) {
            arachne_plan tmp = *best;
            *best = trial;
            trial = tmp;
            have = 1;
        }
    }
    if (!have) { st = ar_error(ARACHNE_E_INFEASIBLE, "arachne_plan_build: no plan found"); goto done; }
    snprintf(best->method, sizeof best->method, "%s", runs == 1 ? "policy-greedy" : "policy-best-of-k");
    best->samples = runs;
    best->evaluations = b.fills + b.check_fills;
    best->planning_s = ar_now() - t0;
    (void)evals;
    if ((st = ar_plan_finish(best))) goto done;
    *out = best;
    best = NULL;
done:
    ar_policy_src_free(&src);
    ar_trace_free(&tr);
    ar_plan_clear(&trial);
    if (best) arachne_plan_destroy(best);
    ar_builder_free(&b);
    return st;
}
