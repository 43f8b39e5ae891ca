/* test_refine.c -- arachne_plan_refine: never slower than its start, finds
 * what the exact search finds on a tiny cluster, improves a poor start,
 * reaches the optimum through its stage moves where the exact search's share
 * is too small, splits a plan that runs more samples than the batch into one that runs
 * it exactly at the same speed (as the searches do), gives the same bytes for the same budget, stops at its budget, names a
 * time-capped run, and rejects bad arguments and foreign plans. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "plan.h"
#include "policy.h"
#include "refine.h"

/* The JSON text without the value of "planning_s" (wall time). */
static char *json_without_time(const arachne_plan *p)
{
    const char *j = NULL;
    char *c, *k;
    if (arachne_plan_to_json(p, &j)) return NULL;
    c = malloc(strlen(j) + 1);
    if (!c) return NULL;
    strcpy(c, j);
    k = strstr(c, "\"planning_s\"");
    if (k) {
        char *e = k += 12;
        while (*e && *e != ',' && *e != '}') e++;
        memmove(k, e, strlen(e) + 1); /* drop the value */
    }
    return c;
}

static double pget(const arachne_plan *p, int field)
{
    double v = -1;
    arachne_plan_get(p, field, &v);
    return v;
}

/* An untrained policy's greedy plan: a poor start. */
static int poor_start(env *e, arachne_plan **out)
{
    arachne_policy *pol = NULL;
    int st = arachne_policy_create(&pol, 5, 16, 1);
    if (!st) st = arachne_plan_build(out, pol, e->cm, 1, 0);
    arachne_policy_destroy(pol);
    return st;
}

TEST(refine_improves_a_poor_start_and_never_loses)
{
    env e;
    arachne_plan *start = NULL, *r = NULL;
    const char *m = NULL;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:4x4,a6000:4x4,h100:2x8"));
    ASSERT_OK(poor_start(&e, &start));
    ASSERT_OK(arachne_plan_refine(&r, start, e.cm, 400, 0.0));
    ASSERT(pget(r, ARACHNE_PLAN_ITER_PER_S) >= pget(start, ARACHNE_PLAN_ITER_PER_S));
    ASSERT_GT(pget(r, ARACHNE_PLAN_ITER_PER_S), 1.05 * pget(start, ARACHNE_PLAN_ITER_PER_S));
    ASSERT_OK(ar_plan_validate(e.cm, r));
    ASSERT_OK(arachne_plan_method(r, &m));
    ASSERT_STR(m, "policy-greedy+refine");
    /* the evaluations are the start's plus the budget (the last candidate
     * may overrun it by less than one plan's templates) */
    ASSERT_GT(pget(r, ARACHNE_PLAN_EVALUATIONS), pget(start, ARACHNE_PLAN_EVALUATIONS));
    ASSERT_LE(pget(r, ARACHNE_PLAN_EVALUATIONS), pget(start, ARACHNE_PLAN_EVALUATIONS) + 400 + AR_MAX_TEMPLATES - 1);
    arachne_plan_destroy(r);
    /* budget 0: the start as it is (repriced) */
    ASSERT_OK(arachne_plan_refine(&r, start, e.cm, 0, 0.0));
    ASSERT_NEAR(pget(r, ARACHNE_PLAN_ITER_PER_S), pget(start, ARACHNE_PLAN_ITER_PER_S), 1e-12);
    ASSERT_EQ(pget(r, ARACHNE_PLAN_EVALUATIONS), pget(start, ARACHNE_PLAN_EVALUATIONS));
    arachne_plan_destroy(r);
    arachne_plan_destroy(start);
    env_close(&e);
}

/* The climb fills in the fill's own placement order; with
 * ARACHNE_OPT_STAGE_MAJOR on, its best structure is filled once more with
 * Megatron's order as well, so the result is never slower than with the
 * option off and costs one fill per template more. */
TEST(refine_fills_its_best_structure_in_megatron_order_last)
{
    env e;
    int seed, faster = 0;
    ASSERT_OK(env_open(&e, "qwen3-30b-a3b", "h100:2x8,a100-80:2x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    /* Megatron's order alone: FSDP groups would add their own last fills */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_FSDP_SEARCH, 0));
    for (seed = 1; seed <= 6; seed++) {
        arachne_policy *pol = NULL;
        arachne_plan *start = NULL, *off = NULL, *on = NULL;
        double n;
        ASSERT_OK(arachne_policy_create(&pol, (uint64_t)seed, 16, 1));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MAJOR, 0));
        ASSERT_OK(arachne_plan_build(&start, pol, e.cm, 1, 1));
        ASSERT_OK(arachne_plan_refine(&off, start, e.cm, 40, 0.0));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MAJOR, 1));
        ASSERT_OK(arachne_plan_refine(&on, start, e.cm, 40, 0.0));
        ASSERT(ar_plan_rank(on) >= ar_plan_rank(off));
        faster += ar_plan_rank(on) > ar_plan_rank(off);
        n = pget(off, ARACHNE_PLAN_TEMPLATES);
        ASSERT_MSG(pget(on, ARACHNE_PLAN_EVALUATIONS) <= pget(off, ARACHNE_PLAN_EVALUATIONS) + AR_MAX_TEMPLATES &&
                       pget(on, ARACHNE_PLAN_EVALUATIONS) >= pget(off, ARACHNE_PLAN_EVALUATIONS) + n,
                   "seed %d: %g evaluations with the last fill, %g without (%g templates)", seed,
                   pget(on, ARACHNE_PLAN_EVALUATIONS), pget(off, ARACHNE_PLAN_EVALUATIONS), n);
        ASSERT_OK(ar_plan_validate(e.cm, on));
        arachne_plan_destroy(start);
        arachne_plan_destroy(off);
        arachne_plan_destroy(on);
        arachne_policy_destroy(pol);
    }
    (void)faster;
    env_close(&e);
    /* two TP-1 stages of 8 replicas on h100:2x8, filled replica by replica
     * (each stage's expert groups cross both nodes): with a budget of one
     * fill the climb refills that structure the same way, and the last
     * fill places each stage on its own node */
    {
        arachne_plan p, *start = NULL, *off = NULL, *on = NULL;
        ar_avail a;
        int types[2] = { 0, 0 }, tps[2] = { 1, 1 };
        ASSERT_OK(env_open(&e, "qwen3-30b-a3b", "h100:2x8"));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_FSDP_SEARCH, 0));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MAJOR, 0));
        memset(&p, 0, sizeof p);
        ASSERT_OK(ar_plan_init(&p, e.cm));
        ASSERT_OK(ar_avail_init(&a, e.c));
        ASSERT_OK(ar_fill_template(e.cm, &a, &p, 2, types, tps));
        ar_avail_free(&a);
        ASSERT_OK(ar_plan_finish(&p));
        start = &p;
        ASSERT_OK(arachne_plan_refine(&off, start, e.cm, 1, 0.0));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MAJOR, 1));
        ASSERT_OK(arachne_plan_refine(&on, start, e.cm, 1, 0.0));
        ASSERT_NEAR(pget(off, ARACHNE_PLAN_ITER_PER_S), pget(start, ARACHNE_PLAN_ITER_PER_S), 1e-12);
        ASSERT_MSG(pget(on, ARACHNE_PLAN_ITER_PER_S) > 1.8 * pget(off, ARACHNE_PLAN_ITER_PER_S),
                   "with the last fill %.4f iter/s, without %.4f", pget(on, ARACHNE_PLAN_ITER_PER_S),
                   pget(off, ARACHNE_PLAN_ITER_PER_S));
        ASSERT_OK(ar_plan_validate(e.cm, on));
        arachne_plan_destroy(off);
        arachne_plan_destroy(on);
        ar_plan_clear(&p);
        env_close(&e);
    }
}

/* ARACHNE_OPT_FSDP_SEARCH: llama3-8b on 16 A100-40 at batch 64 is memory
 * bound.  The climbs fill without FSDP; the last fill tries FSDP groups in
 * the best structure and the fastest others the climbs filled (then, as
 * FSDP won there, the climbs go on with it), and here one of them shards (4 replicas of one CP-2 stage, micro-batch 4: 0.2353
 * iter/s against 0.2229 without, 2026-12-07).  The plan still runs the
 * batch exactly and reprices to itself from its file; the policy's own
 * construction never shards. */
TEST(refine_tries_fsdp_groups_in_its_last_fill)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_plan *start = NULL, *off = NULL, *on = NULL, *back = NULL;
    const char *json = NULL;
    int t, sharded = 0;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:4x4"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    if (arachne_policy_load(&pol, "examples/policies/default.arpol") != ARACHNE_OK) {
        arachne_clear_error();
        ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    }
    ASSERT_OK(arachne_plan_build(&start, pol, e.cm, 16, 0));
    for (t = 0; t < start->ntemplates; t++) ASSERT_EQ(start->t[t].fsdp, 0);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_FSDP_SEARCH, 0));
    ASSERT_OK(arachne_plan_refine(&off, start, e.cm, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_FSDP_SEARCH, 1));
    ASSERT_OK(arachne_plan_refine(&on, start, e.cm, ARACHNE_REFINE_EVALUATIONS, 0.0));
    for (t = 0; t < off->ntemplates; t++) ASSERT_EQ(off->t[t].fsdp, 0);
    for (t = 0; t < on->ntemplates; t++) {
        double f = 0;
        ASSERT_OK(arachne_plan_template_get(on, t, ARACHNE_TEMPLATE_FSDP, &f));
        ASSERT_EQ((int)f, on->t[t].fsdp > 1 ? on->t[t].fsdp : 1);
        sharded |= f > 1;
    }
    ASSERT(sharded);
    ASSERT_MSG(ar_plan_rank(on) > 1.03 * ar_plan_rank(off), "with FSDP %.4f iter/s, without %.4f",
               pget(on, ARACHNE_PLAN_ITER_PER_S), pget(off, ARACHNE_PLAN_ITER_PER_S));
    ASSERT_EQ(ar_plan_samples_run(on), 64);
    /* FSDP won in the last fill, so the climbs went on with it for a
     * quarter of the budget more */
    ASSERT_GT(pget(on, ARACHNE_PLAN_EVALUATIONS), pget(off, ARACHNE_PLAN_EVALUATIONS) + ARACHNE_REFINE_EVALUATIONS / 4 - 8);
    ASSERT_OK(ar_plan_validate(e.cm, on));
    ASSERT_OK(arachne_plan_to_json(on, &json));
    ASSERT_OK(arachne_plan_from_json(&back, e.cm, json, strlen(json)));
    ASSERT_NEAR(pget(back, ARACHNE_PLAN_ITERATION_S), pget(on, ARACHNE_PLAN_ITERATION_S), 1e-9);
    arachne_plan_destroy(back);
    arachne_plan_destroy(start);
    arachne_plan_destroy(off);
    arachne_plan_destroy(on);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* The FSDP groups only add candidates: from the same start the plan never
 * ranks lower with them, and the evaluations grow by at most the last
 * fills (five structures) and the FSDP phase's quarter of the budget. */
TEST(refine_with_fsdp_groups_is_never_slower)
{
    static const char *const cases[][3] = { { "llama3-8b", "a100-40:4x4,a6000:2x4", "128" },
                                            { "qwen3-30b-a3b", "l40s:2x4,a100-40:2x4", "256" },
                                            { "qwen3-32b", "rtx-4090:4x8,a100-40:2x4", "256" } };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        env e;
        int seed;
        ASSERT_OK(env_open(&e, cases[i][0], cases[i][1]));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, atoi(cases[i][2])));
        for (seed = 1; seed <= 2; seed++) {
            arachne_policy *pol = NULL;
            arachne_plan *start = NULL, *off = NULL, *on = NULL;
            ASSERT_OK(arachne_policy_create(&pol, (uint64_t)seed, 16, 1));
            ASSERT_OK(arachne_plan_build(&start, pol, e.cm, 4, 1));
            ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_FSDP_SEARCH, 0));
            ASSERT_OK(arachne_plan_refine(&off, start, e.cm, 80, 0.0));
            ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_FSDP_SEARCH, 1));
            ASSERT_OK(arachne_plan_refine(&on, start, e.cm, 80, 0.0));
            ASSERT_MSG(ar_plan_rank(on) >= ar_plan_rank(off), "%s on %s, seed %d: %.6f with FSDP, %.6f without",
                       cases[i][0], cases[i][1], seed, ar_plan_rank(on), ar_plan_rank(off));
            ASSERT_LE(pget(on, ARACHNE_PLAN_EVALUATIONS),
                      pget(off, ARACHNE_PLAN_EVALUATIONS) + 80 / 4 + (RF_TOP + 2) * AR_MAX_TEMPLATES);
            ASSERT_OK(ar_plan_validate(e.cm, on));
            arachne_plan_destroy(start);
            arachne_plan_destroy(off);
            arachne_plan_destroy(on);
            arachne_policy_destroy(pol);
        }
        env_close(&e);
    }
}

TEST(refine_reaches_the_exact_optimum_on_a_tiny_cluster)
{
    env e;
    arachne_plan *start = NULL, *r = NULL, *exh = NULL;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:1x4,h100:1x2+2x1"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, 3));
    ASSERT_OK(arachne_search_exhaustive(&exh, e.cm, 1, 0.0));
    ASSERT_OK(poor_start(&e, &start));
    ASSERT_OK(arachne_plan_refine(&r, start, e.cm, 2 * (long)pget(exh, ARACHNE_PLAN_EVALUATIONS) + 50, 0.0));
    ASSERT(pget(r, ARACHNE_PLAN_ITER_PER_S) >= pget(exh, ARACHNE_PLAN_ITER_PER_S) * (1 - 1e-12));
    arachne_plan_destroy(r);
    arachne_plan_destroy(exh);
    arachne_plan_destroy(start);
    env_close(&e);
}

/* Clusters where the exact search does not finish in its eighth of the
 * budget and the optimum (one pipeline mixing the types) is several
 * single-decision changes away from the start, through slower plans: the
 * stage moves (swap, split/join, all GPUs x2 or /2) and the table of
 * filled structures reach it in 200 fills.  (Without them: 0.991 of the
 * optimum for the dense model, 0.740 and 0.587 for the MoE model.) */
TEST(refine_stage_moves_reach_the_optimum_the_exact_share_cannot)
{
    static const struct { const char *model, *cluster; int depth; } cases[] = {
        { "llama3-8b", "a100-40:4x4,h100:2x4", 4 },
        { "qwen3-30b-a3b", "a100-40:4x4,h100:2x4", 3 },
        { "qwen3-30b-a3b", "h100:2x4,a6000:2x4", 3 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        env e;
        arachne_plan *start = NULL, *r = NULL, *exh = NULL;
        ASSERT_OK(env_open(&e, cases[i].model, cases[i].cluster));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, cases[i].depth));
        ASSERT_OK(arachne_search_exhaustive(&exh, e.cm, 1, 0.0));
        ASSERT_GT(pget(exh, ARACHNE_PLAN_EVALUATIONS), 200 / 8);
        ASSERT_OK(poor_start(&e, &start));
        ASSERT_OK(arachne_plan_refine(&r, start, e.cm, 200, 0.0));
        ASSERT(pget(r, ARACHNE_PLAN_ITER_PER_S) >= pget(exh, ARACHNE_PLAN_ITER_PER_S) * (1 - 1e-12));
        ASSERT_OK(ar_plan_validate(e.cm, r));
        arachne_plan_destroy(r);
        arachne_plan_destroy(exh);
        arachne_plan_destroy(start);
        env_close(&e);
    }
}

/* Three 8-GPU H100 nodes.  At a batch of 64 the fastest plan, three TP8
 * replicas of micro-batch 8, runs 3 x 8 x 3 = 72 samples.  With
 * ARACHNE_OPT_EXACT_BATCH (the default) the searches and the refinement
 * split it (plan_exact.c): two replicas run three micro-batches and one
 * runs two, 64 samples at the same speed, faster than the exact 3-stage
 * pipeline.  At 512 the same split turns 516 samples into 512. */
TEST(planners_rank_plans_that_run_the_batch_exactly_first)
{
    env e;
    arachne_plan *fast = NULL, *exact = NULL, *rnd = NULL, *r1 = NULL, *r0 = NULL, *big = NULL;
    double v;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:3x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, 4));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    ASSERT_OK(arachne_cost_model_get(e.cm, ARACHNE_OPT_EXACT_BATCH, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_BATCH, 0));
    ASSERT_OK(arachne_search_exhaustive(&fast, e.cm, 1, 0.0));
    ASSERT_EQ(pget(fast, ARACHNE_PLAN_SAMPLES_RUN), 72);
    ASSERT_EQ(pget(fast, ARACHNE_PLAN_TEMPLATES), 1);
    ASSERT_OK(arachne_plan_refine(&r0, fast, e.cm, 100, 0.0));
    ASSERT(pget(r0, ARACHNE_PLAN_ITER_PER_S) >= pget(fast, ARACHNE_PLAN_ITER_PER_S));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_BATCH, 1));
    ASSERT_OK(arachne_search_exhaustive(&exact, e.cm, 1, 0.0));
    ASSERT_EQ(pget(exact, ARACHNE_PLAN_SAMPLES_RUN), 64);
    ASSERT_EQ(pget(exact, ARACHNE_PLAN_TEMPLATES), 2); /* the split: 2 x 8 x 3 + 1 x 8 x 2 */
    ASSERT_EQ(pget(exact, ARACHNE_PLAN_GPUS_USED), 24);
    ASSERT_GT(pget(exact, ARACHNE_PLAN_ITER_PER_S), 0.999 * pget(fast, ARACHNE_PLAN_ITER_PER_S));
    ASSERT_OK(ar_plan_validate(e.cm, exact));
    ASSERT_OK(arachne_search_random(&rnd, e.cm, 300, 1, 0.0));
    ASSERT_EQ(pget(rnd, ARACHNE_PLAN_SAMPLES_RUN), 64);
    ASSERT_OK(arachne_plan_refine(&r1, fast, e.cm, 100, 0.0));
    ASSERT_EQ(pget(r1, ARACHNE_PLAN_SAMPLES_RUN), 64);
    ASSERT(pget(r1, ARACHNE_PLAN_ITER_PER_S) >= pget(exact, ARACHNE_PLAN_ITER_PER_S) * (1 - 1e-12));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 512));
    ASSERT_OK(arachne_search_exhaustive(&big, e.cm, 1, 0.0));
    ASSERT_EQ(pget(big, ARACHNE_PLAN_SAMPLES_RUN), 512);
    arachne_plan_destroy(fast);
    arachne_plan_destroy(exact);
    arachne_plan_destroy(rnd);
    arachne_plan_destroy(r1);
    arachne_plan_destroy(r0);
    arachne_plan_destroy(big);
    env_close(&e);
}

TEST(refine_is_deterministic_and_capped_runs_say_so)
{
    env e;
    arachne_plan *start = NULL, *a = NULL, *b = NULL;
    const char *m = NULL;
    char *ja, *jb;
    /* a quick (sanitizer) run refines with a third of the fills: under
     * memcheck this test was the dearest of the runner (186 s) */
    long evals = th_quick() ? 100 : 300;
    ASSERT_OK(env_open(&e, "qwen3-30b-a3b", "a100-80:4x8,h100:2x8,a6000:4x4"));
    ASSERT_OK(poor_start(&e, &start));
    ASSERT_OK(arachne_plan_refine(&a, start, e.cm, evals, 0.0));
    ASSERT_OK(arachne_plan_refine(&b, start, e.cm, evals, 0.0));
    /* same bytes apart from the wall-clock field */
    ja = json_without_time(a);
    jb = json_without_time(b);
    ASSERT(ja != NULL && jb != NULL);
    ASSERT_CONTAINS(ja, "\"planning_s\"");
    ASSERT_STR(ja, jb);
    free(ja);
    free(jb);
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    /* a cap far below one fill's time stops it and the method says so */
    ASSERT_OK(arachne_plan_refine(&a, start, e.cm, 1000000, 1e-9));
    ASSERT_OK(arachne_plan_method(a, &m));
    ASSERT_STR(m, "policy-greedy+refine-capped");
    ASSERT(pget(a, ARACHNE_PLAN_ITER_PER_S) >= pget(start, ARACHNE_PLAN_ITER_PER_S));
    arachne_plan_destroy(a);
    arachne_plan_destroy(start);
    env_close(&e);
}

TEST(refine_arguments_are_checked)
{
    env e, f;
    arachne_plan *start = NULL, *r = (arachne_plan *)&r;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:2x4"));
    ASSERT_OK(env_open(&f, "llama3-8b", "h100:1x8"));
    ASSERT_OK(poor_start(&e, &start));
    ASSERT_STATUS(arachne_plan_refine(NULL, start, e.cm, 10, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_refine(&r, NULL, e.cm, 10, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(r == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "plan is NULL");
    ASSERT_STATUS(arachne_plan_refine(&r, start, NULL, 10, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "cost model is NULL");
    ASSERT_STATUS(arachne_plan_refine(&r, start, e.cm, -1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "evaluations -1");
    ASSERT_STATUS(arachne_plan_refine(&r, start, e.cm, 10, -1), ARACHNE_E_INVALID_ARGUMENT);
    /* a plan for another cluster */
    ASSERT(arachne_plan_refine(&r, start, f.cm, 10, 0) != ARACHNE_OK);
    ASSERT(r == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "does not fit the cost model");
    arachne_plan_destroy(start);
    env_close(&f);
    env_close(&e);
}

/* The same nodes listed in another order number their GPU types the other
 * way round.  A plan's stages name their type by index, so pricing or
 * refining it with that cluster's cost model ran its H100 stages as
 * A100-80s and reported the result as its own (17.86 -> 48.99 s); both
 * now refuse, naming both types.  Reading the plan's JSON places it. */
TEST(a_plan_is_not_priced_on_another_type_order)
{
    env a, b;
    arachne_plan *start = NULL, *r = NULL;
    double before = 0.0, after = 0.0;
    ASSERT_OK(env_open(&a, "llama3-8b", "a100-80:1x8,h100:1x8"));
    ASSERT_OK(env_open(&b, "llama3-8b", "h100:1x8,a100-80:1x8"));
    ASSERT_OK(poor_start(&a, &start));
    before = pget(start, ARACHNE_PLAN_ITERATION_S);
    ASSERT_STATUS(arachne_cost_model_price(b.cm, start), ARACHNE_E_INVALID_PLAN);
    ASSERT_CONTAINS(arachne_last_error(), "but this cost model's cluster lists");
    after = pget(start, ARACHNE_PLAN_ITERATION_S);
    ASSERT_EQ(after, before);
    ASSERT_STATUS(arachne_plan_refine(&r, start, b.cm, 0, 0), ARACHNE_E_INVALID_PLAN);
    ASSERT(r == NULL);
    /* its own cost model still prices and refines it */
    ASSERT_OK(arachne_cost_model_price(a.cm, start));
    ASSERT_OK(arachne_plan_refine(&r, start, a.cm, 0, 0));
    arachne_plan_destroy(r);
    arachne_plan_destroy(start);
    env_close(&b);
    env_close(&a);
}

/* A budget near LONG_MAX overflowed the exact search's prefix limit
 * (16,384 per plan x the budget: UBSan aborts; a release build failed
 * with "node limit -16384").  The product saturates; the time cap ends it. */
TEST(refine_takes_any_budget)
{
    env e;
    arachne_plan *start = NULL, *r = NULL;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:1x4,h100:1x8"));
    ASSERT_OK(poor_start(&e, &start));
    ASSERT_OK(arachne_plan_refine(&r, start, e.cm, LONG_MAX, 0.05));
    ASSERT(pget(r, ARACHNE_PLAN_ITER_PER_S) >= pget(start, ARACHNE_PLAN_ITER_PER_S));
    arachne_plan_destroy(r);
    arachne_plan_destroy(start);
    env_close(&e);
}

/* The default planner is the faster of the refinements from the best
 * sample (the whole budget) and from the greedy plan (half of it): on several
 * untrained policies (whose best sample and greedy plan often differ) it
 * equals, byte for byte apart from the bookkeeping, the better of the two
 * refinements run by hand; it records every evaluation spent; budget 0
 * gives the best-of-K plan; one sample is one refinement of the greedy
 * plan; bad arguments are refused. */
TEST(the_default_planner_refines_the_best_sample_and_the_greedy_plan)
{
    env e;
    int seed, differed = 0, alts = 0, alt_starts = 0;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:4x4,a6000:4x4,h100:2x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    /* the two starts alone: the recompute search's probe (its own test)
     * would add its evaluations */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, 0));
    for (seed = 1; seed <= 4; seed++) {
        arachne_policy *pol = NULL;
        arachne_plan *best = NULL, *greedy = NULL, *alt = NULL, *rb = NULL, *rg = NULL, *ra = NULL, *d = NULL,
                     *d0 = NULL, *d1 = NULL, *r1 = NULL, *b1 = NULL, *g1 = NULL;
        const arachne_plan *win;
        const char *m = NULL;
        double want_evals;
        ASSERT_OK(arachne_policy_create(&pol, (uint64_t)seed, 16, 1));
        ASSERT_OK(ar_policy_build(&best, &greedy, &alt, pol, e.cm, 8, 3));
        /* best and greedy are the public builds' plans, not decoded again */
        ASSERT_OK(arachne_plan_build(&b1, pol, e.cm, 8, 3));
        ASSERT_OK(arachne_plan_build(&g1, pol, e.cm, 1, 3));
        ASSERT_EQ(pget(best, ARACHNE_PLAN_ITER_PER_S), pget(b1, ARACHNE_PLAN_ITER_PER_S));
        ASSERT_EQ(pget(best, ARACHNE_PLAN_EVALUATIONS), pget(b1, ARACHNE_PLAN_EVALUATIONS));
        ASSERT(greedy != NULL);
        ASSERT_EQ(pget(greedy, ARACHNE_PLAN_ITER_PER_S), pget(g1, ARACHNE_PLAN_ITER_PER_S));
        ASSERT_EQ(greedy->nranks, g1->nranks);
        ASSERT(memcmp(greedy->ranks, g1->ranks, (size_t)g1->nranks * sizeof *g1->ranks) == 0);
        ASSERT_OK(arachne_plan_method(greedy, &m));
        ASSERT_STR(m, "policy-greedy");
        ASSERT_EQ(pget(greedy, ARACHNE_PLAN_EVALUATIONS), 0.0); /* counted in best's */
        /* the alternative: other GPU types, ranked at most as best */
        if (alt) {
            ASSERT(ar_plan_gpu_types(alt) != ar_plan_gpu_types(best));
            ASSERT(ar_plan_rank(alt) <= ar_plan_rank(best));
            ASSERT_EQ(pget(alt, ARACHNE_PLAN_EVALUATIONS), 0.0);
            ASSERT_OK(ar_plan_validate(e.cm, alt));
            alts++;
        }
        /* the refinements by hand: best with the budget, each further
         * start of a new structure with half */
        ASSERT_OK(arachne_plan_refine(&rb, best, e.cm, 60, 0.0));
        want_evals = pget(rb, ARACHNE_PLAN_EVALUATIONS);
        win = rb;
        if (!ar_plan_same_structure(greedy, best)) {
            ASSERT_OK(arachne_plan_refine(&rg, greedy, e.cm, 60 / 2, 0.0));
            want_evals += pget(rg, ARACHNE_PLAN_EVALUATIONS);
            if (ar_plan_rank(rg) > ar_plan_rank(win)) { win = rg; differed++; }
        }
        if (alt && !ar_plan_same_structure(alt, best) && !ar_plan_same_structure(alt, greedy)) {
            ASSERT_OK(arachne_plan_refine(&ra, alt, e.cm, 60 / 2, 0.0));
            want_evals += pget(ra, ARACHNE_PLAN_EVALUATIONS);
            if (ar_plan_rank(ra) > ar_plan_rank(win)) win = ra;
            alt_starts++;
        }
        ASSERT_OK(arachne_plan_build_refined(&d, pol, e.cm, 8, 3, 60, 0.0));
        ASSERT_EQ(pget(d, ARACHNE_PLAN_ITER_PER_S), pget(win, ARACHNE_PLAN_ITER_PER_S));
        ASSERT_OK(arachne_plan_method(d, &m));
        ASSERT_STR(m, "policy-best-of-k+refine");
        ASSERT_EQ(d->samples, 8);
        /* every refinement's fills, and best-of-K's (which hold the
         * further starts' own) */
        ASSERT_EQ(pget(d, ARACHNE_PLAN_EVALUATIONS), want_evals);
        {
            arachne_plan *b2 = NULL, *g2 = (arachne_plan *)&e, *a2 = (arachne_plan *)&e;
            /* one sample: the build is the greedy plan, none handed out twice */
            ASSERT_OK(ar_policy_build(&b2, &g2, &a2, pol, e.cm, 1, 3));
            ASSERT(g2 == NULL && a2 == NULL);
            ASSERT_EQ(pget(b2, ARACHNE_PLAN_ITER_PER_S), pget(greedy, ARACHNE_PLAN_ITER_PER_S));
            arachne_plan_destroy(b2);
            /* the same plans again */
            ASSERT_OK(ar_policy_build(&b2, NULL, &a2, pol, e.cm, 8, 3));
            ASSERT((a2 == NULL) == (alt == NULL));
            if (alt) ASSERT_EQ(pget(a2, ARACHNE_PLAN_ITER_PER_S), pget(alt, ARACHNE_PLAN_ITER_PER_S));
            arachne_plan_destroy(b2);
            arachne_plan_destroy(a2);
        }
        ASSERT_OK(ar_plan_validate(e.cm, d));
        /* budget 0: the best-of-K plan itself */
        ASSERT_OK(arachne_plan_build_refined(&d0, pol, e.cm, 8, 3, 0, 0.0));
        ASSERT_EQ(pget(d0, ARACHNE_PLAN_ITER_PER_S), pget(best, ARACHNE_PLAN_ITER_PER_S));
        ASSERT_OK(arachne_plan_method(d0, &m));
        ASSERT_STR(m, "policy-best-of-k");
        /* one sample: the greedy plan refined once */
        ASSERT_OK(arachne_plan_build_refined(&d1, pol, e.cm, 1, 3, 60, 0.0));
        ASSERT_OK(arachne_plan_refine(&r1, g1, e.cm, 60, 0.0));
        ASSERT_EQ(pget(d1, ARACHNE_PLAN_ITER_PER_S), pget(r1, ARACHNE_PLAN_ITER_PER_S));
        ASSERT_EQ(pget(d1, ARACHNE_PLAN_EVALUATIONS), pget(r1, ARACHNE_PLAN_EVALUATIONS));
        ASSERT_OK(arachne_plan_method(d1, &m));
        ASSERT_STR(m, "policy-greedy+refine");
        arachne_plan_destroy(best);
        arachne_plan_destroy(greedy);
        arachne_plan_destroy(rb);
        arachne_plan_destroy(rg);
        arachne_plan_destroy(ra);
        arachne_plan_destroy(alt);
        arachne_plan_destroy(b1);
        arachne_plan_destroy(g1);
        arachne_plan_destroy(d);
        arachne_plan_destroy(d0);
        arachne_plan_destroy(d1);
        arachne_plan_destroy(r1);
        arachne_policy_destroy(pol);
    }
    ASSERT_GT(differed, 0);   /* some seed's greedy start won: the second start is exercised */
    ASSERT_GT(alt_starts, 0); /* and some seed refined an alternative */
    {
        arachne_policy *pol = NULL;
        arachne_plan *p = (arachne_plan *)&e; /* must be set to NULL on failure */
        ASSERT_OK(arachne_policy_create(&pol, 1, 16, 1));
        ASSERT_EQ(arachne_plan_build_refined(&p, pol, e.cm, 8, 3, -1, 0.0), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT(p == NULL);
        ASSERT(strstr(arachne_last_error(), "evaluations") != NULL);
        ASSERT_EQ(arachne_plan_build_refined(&p, pol, e.cm, 8, 3, 10, -1.0), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT_EQ(arachne_plan_build_refined(&p, NULL, e.cm, 8, 3, 10, 0.0), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT(strstr(arachne_last_error(), "policy") != NULL);
        ASSERT_EQ(arachne_plan_build_refined(NULL, pol, e.cm, 8, 3, 10, 0.0), ARACHNE_E_INVALID_ARGUMENT);
        arachne_policy_destroy(pol);
    }
    env_close(&e);
}

/* ARACHNE_OPT_RECOMPUTE_SEARCH against runs by hand: the default planner
 * with the mode pinned (search 0), selective and full; the probe (the
 * selective plan refilled with full recomputation, one evaluation of
 * arachne_plan_refine).  Search 2 returns the highest-ranked of the three
 * and counts the evaluations of all; search 1 does the same where the
 * probe ranks higher or selective found nothing, and otherwise returns the
 * selective plan with the probe's evaluations added. */
typedef struct recompute_runs {
    arachne_plan *sel, *probe, *full;
    int st_sel;
} recompute_runs;

static int recompute_runs_make(recompute_runs *r, env *e, arachne_policy *pol)
{
    int st;
    memset(r, 0, sizeof *r);
    if ((st = arachne_cost_model_set(e->cm, ARACHNE_OPT_RECOMPUTE_SEARCH, 0))) return st;
    r->st_sel = arachne_plan_build_refined(&r->sel, pol, e->cm, 4, 7, 60, 0.0);
    if ((st = arachne_cost_model_set(e->cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL))) return st;
    if (r->sel && (st = arachne_plan_refine(&r->probe, r->sel, e->cm, 1, 0.0))) return st;
    if ((st = arachne_plan_build_refined(&r->full, pol, e->cm, 4, 7, 60, 0.0))) return st;
    return arachne_cost_model_set(e->cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_SELECTIVE);
}

static void recompute_runs_free(recompute_runs *r)
{
    arachne_plan_destroy(r->sel);
    arachne_plan_destroy(r->probe);
    arachne_plan_destroy(r->full);
}

/* The run of the three that ranks highest (ties: the earlier). */
static const arachne_plan *recompute_runs_best(const recompute_runs *r)
{
    const arachne_plan *best = r->sel;
    if (r->probe && (!best || ar_plan_rank(r->probe) > ar_plan_rank(best))) best = r->probe;
    if (!best || ar_plan_rank(r->full) > ar_plan_rank(best)) best = r->full;
    return best;
}

TEST(the_default_planner_chooses_the_recompute_mode)
{
    /* a memory-tight draw (examples/eval/make_tight.py 60 7, no. 25), the
     * case docs/limits.md names, and one roomy cluster */
    static const struct { const char *model, *cluster; int batch, want; } cases[] = {
        { "qwen3-30b-a3b", "l40s:22x1", 512, ARACHNE_RECOMPUTE_FULL },       /* full is faster */
        { "qwen3-30b-a3b", "a100-40:4x4", 512, ARACHNE_RECOMPUTE_FULL },     /* only full fits */
        { "llama3-8b", "h100:2x8", 64, ARACHNE_RECOMPUTE_SELECTIVE },         /* selective is faster */
    };
    int i, search;
    double v = -1;
    arachne_policy *pol = NULL;
    ASSERT_OK(arachne_policy_create(&pol, 1, 16, 1));
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        env e;
        recompute_runs r;
        ASSERT_OK(env_open(&e, cases[i].model, cases[i].cluster));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, cases[i].batch));
        ASSERT_OK(arachne_cost_model_get(e.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, &v));
        ASSERT_EQ(v, 1); /* the default */
        ASSERT_OK(recompute_runs_make(&r, &e, pol));
        ASSERT_EQ(pget(r.full, ARACHNE_PLAN_RECOMPUTE), (double)ARACHNE_RECOMPUTE_FULL);
        if (i == 1) {
            ASSERT_EQ(r.st_sel, ARACHNE_E_INFEASIBLE);
        } else {
            ASSERT_OK(r.st_sel);
            ASSERT_EQ(pget(r.sel, ARACHNE_PLAN_RECOMPUTE), (double)ARACHNE_RECOMPUTE_SELECTIVE);
            ASSERT(r.probe != NULL);
            /* the probe wins exactly where full recomputation does */
            ASSERT_EQ(ar_plan_rank(r.probe) > ar_plan_rank(r.sel), cases[i].want == ARACHNE_RECOMPUTE_FULL);
        }
        for (search = 1; search <= 2; search++) {
            arachne_plan *got = NULL, *again = NULL;
            const arachne_plan *want = recompute_runs_best(&r);
            int second = search == 2 || !r.sel || ar_plan_rank(r.probe) > ar_plan_rank(r.sel);
            double evals = (r.probe ? pget(r.probe, ARACHNE_PLAN_EVALUATIONS) : 0) +
                           (second ? pget(r.full, ARACHNE_PLAN_EVALUATIONS) : 0);
            char *j1, *j2;
            if (!second) want = r.sel;
            ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, search));
            ASSERT_OK(arachne_plan_build_refined(&got, pol, e.cm, 4, 7, 60, 0.0));
            ASSERT_EQ(pget(got, ARACHNE_PLAN_RECOMPUTE), (double)cases[i].want);
            ASSERT_EQ(pget(got, ARACHNE_PLAN_ITER_PER_S), pget(want, ARACHNE_PLAN_ITER_PER_S));
            ASSERT_EQ(pget(got, ARACHNE_PLAN_EVALUATIONS), evals);
            /* the plan file records the mode, and a cost model in that mode
             * reprices it to the same time (from_json prices with cm's setup) */
            {
                const char *j = NULL;
                ASSERT_OK(arachne_plan_to_json(got, &j));
                ASSERT(strstr(j, cases[i].want == ARACHNE_RECOMPUTE_FULL ? "\"recompute\": \"full\""
                                                                         : "\"recompute\": \"selective\"") != NULL);
                ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, cases[i].want));
                ASSERT_OK(arachne_plan_from_json(&again, e.cm, j, strlen(j)));
                ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_SELECTIVE));
                ASSERT_NEAR(pget(again, ARACHNE_PLAN_ITERATION_S), pget(got, ARACHNE_PLAN_ITERATION_S), 1e-9);
                arachne_plan_destroy(again);
                again = NULL;
            }
            if (search == 2) {
                /* the same again: deterministic to the byte (wall time aside) */
                ASSERT_OK(arachne_plan_build_refined(&again, pol, e.cm, 4, 7, 60, 0.0));
                j1 = json_without_time(got);
                j2 = json_without_time(again);
                ASSERT(j1 && j2 && strcmp(j1, j2) == 0);
                free(j1);
                free(j2);
                arachne_plan_destroy(again);
            }
            arachne_plan_destroy(got);
        }
        {
            /* with the mode already full there is nothing to choose: one run */
            arachne_plan *one = NULL;
            ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
            ASSERT_OK(arachne_plan_build_refined(&one, pol, e.cm, 4, 7, 60, 0.0));
            ASSERT_EQ(pget(one, ARACHNE_PLAN_EVALUATIONS), pget(r.full, ARACHNE_PLAN_EVALUATIONS));
            ASSERT_EQ(pget(one, ARACHNE_PLAN_ITER_PER_S), pget(r.full, ARACHNE_PLAN_ITER_PER_S));
            arachne_plan_destroy(one);
        }
        recompute_runs_free(&r);
        env_close(&e);
    }
    {
        /* neither mode fits: the selective run's error, said to hold for both */
        env e;
        arachne_plan *p = (arachne_plan *)&e;
        ASSERT_OK(env_open(&e, "qwen3-64b", "a100-40:14x1"));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 128));
        ASSERT_EQ(arachne_plan_build_refined(&p, pol, e.cm, 4, 7, 60, 0.0), ARACHNE_E_INFEASIBLE);
        ASSERT(p == NULL);
        ASSERT_CONTAINS(arachne_last_error(), "(and with full recomputation)");
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, 0));
        ASSERT_EQ(arachne_plan_build_refined(&p, pol, e.cm, 4, 7, 60, 0.0), ARACHNE_E_INFEASIBLE);
        ASSERT(strstr(arachne_last_error(), "full recomputation") == NULL);
        env_close(&e);
    }
    arachne_policy_destroy(pol);
}

SUITE(refine, T(the_default_planner_refines_the_best_sample_and_the_greedy_plan),
      T(the_default_planner_chooses_the_recompute_mode), T(refine_tries_fsdp_groups_in_its_last_fill),
      T(refine_with_fsdp_groups_is_never_slower),
      T(refine_improves_a_poor_start_and_never_loses), T(refine_reaches_the_exact_optimum_on_a_tiny_cluster),
      T(refine_stage_moves_reach_the_optimum_the_exact_share_cannot),
      T(planners_rank_plans_that_run_the_batch_exactly_first),
      T(refine_is_deterministic_and_capped_runs_say_so), T(refine_arguments_are_checked),
      T(a_plan_is_not_priced_on_another_type_order), T(refine_takes_any_budget),
      T(refine_fills_its_best_structure_in_megatron_order_last));
