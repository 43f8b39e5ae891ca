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

int arachne_plan_build(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                       int samples, uint64_t seed)
{
    double t0 = ar_now();
    arachne_plan *best = NULL, trial;
    ar_policy_src src;
    ar_builder b;
    ar_construct_opts opts;
    ar_rng seeds;
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
    ar_construct_opts_default(&opts);
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
        st = ar_builder_run(&b, ar_policy_decide, &src, &trial, NULL);
        if (st == ARACHNE_E_INFEASIBLE && !have && k + 1 < runs) continue;
        if (st) goto done;
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
    ar_plan_clear(&trial);
    if (best) arachne_plan_destroy(best);
    ar_builder_free(&b);
    return st;
}
