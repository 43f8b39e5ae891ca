/* test_plan_exact.c -- ar_plan_split_exact: a plan that runs more samples
 * than the global batch split into templates that run it exactly at the
 * same speed (k replicas one micro-batch fewer), or with k replicas
 * dropped when they run a single micro-batch; ranks stay dense and in
 * order; nothing happens with ARACHNE_OPT_EXACT_BATCH off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "cost.h"
#include "plan.h"

/* Every rank number 0..n-1 once, in array order, and every rank's template
 * and replica inside the plan. */
static int ranks_dense(const arachne_plan *q)
{
    int r;
    for (r = 0; r < q->nranks; r++) {
        const ar_rank *R = &q->ranks[r];
        if (R->rank != r || R->tmpl < 0 || R->tmpl >= q->ntemplates || R->replica < 0 ||
            R->replica >= q->t[R->tmpl].replicas)
            return 0;
    }
    return 1;
}

/* Three TP8 replicas of micro-batch 8 (built at a batch they divide, 48),
 * priced at `batch`. */
static arachne_plan *three_replicas(env *e, int batch)
{
    arachne_plan *p = NULL;
    if (arachne_cost_model_set(e->cm, ARACHNE_OPT_GLOBAL_BATCH, 48) ||
        arachne_plan_from_parallel(&p, e->cm, "tp=8,pp=1,dp=3,mbs=8") ||
        arachne_cost_model_set(e->cm, ARACHNE_OPT_GLOBAL_BATCH, batch) || ar_plan_price(e->cm, p)) {
        arachne_plan_destroy(p);
        return NULL;
    }
    return p;
}

TEST(split_runs_the_batch_exactly_at_the_same_speed)
{
    env e;
    arachne_plan *p, q;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:3x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_BATCH, 0));
    p = three_replicas(&e, 64);
    ASSERT(p != NULL);
    ASSERT_EQ(ar_plan_samples_run(p), 72); /* 3 replicas x 8 x 3 */
    memset(&q, 0, sizeof q);
    ASSERT_EQ(ar_plan_split_exact(e.cm, p, &q), 0); /* the option is off */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_BATCH, 1));
    ASSERT_OK(ar_plan_price(e.cm, p));
    ASSERT_EQ(ar_plan_split_exact(e.cm, p, &q), 1);
    ASSERT_EQ(ar_plan_samples_run(&q), 64);
    ASSERT_EQ(q.ntemplates, 2);
    ASSERT_EQ(q.t[0].replicas, 2);
    ASSERT_EQ(q.t[0].micro_batches, 3);
    ASSERT_EQ(q.t[1].replicas, 1);
    ASSERT_EQ(q.t[1].micro_batches, 2);
    ASSERT_EQ(q.nranks, 24);
    ASSERT(ranks_dense(&q));
    ASSERT_OK(ar_plan_validate(e.cm, &q));
    /* the slowest replica runs what it ran: the iteration is no longer */
    ASSERT(q.iteration_s <= p->iteration_s * (1 + 1e-12));
    ASSERT(ar_plan_rank(&q) > ar_plan_rank(p));
    /* a one-structure job runner is told what the split is and how to avoid it */
    {
        size_t need = 0;
        char *text;
        ASSERT_OK(ar_plan_finish(&q));
        ASSERT_STATUS(arachne_plan_export(&q, ARACHNE_EXPORT_MEGATRON, NULL, 0, &need), ARACHNE_E_BUFFER_TOO_SMALL);
        text = malloc(need);
        ASSERT(text != NULL);
        ASSERT_OK(arachne_plan_export(&q, ARACHNE_EXPORT_MEGATRON, text, need, NULL));
        ASSERT_CONTAINS(text, "the 2 templates are one structure whose replicas run different micro-batch counts");
        ASSERT_CONTAINS(text, "--allow-batch-rounding");
        free(text);
    }
    ar_plan_clear(&q);
    arachne_plan_destroy(p);
    env_close(&e);
}

/* An FSDP group (fsdp consecutive replicas) moves whole: four TP8 replicas
 * in groups of two at batch 48 run 64 samples (two steps of 8 each); the
 * split runs one group a step fewer, and both parts keep their groups.
 * Groups of four (every replica) leave nothing to split. */
TEST(split_moves_whole_fsdp_groups)
{
    env e;
    arachne_plan *p = NULL, q;
    int f;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:4x8"));
    for (f = 2; f <= 4; f += 2) {
        char spec[64];
        snprintf(spec, sizeof spec, "tp=8,pp=1,dp=4,mbs=8,fsdp=%d", f);
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
        ASSERT_OK(arachne_plan_from_parallel(&p, e.cm, spec));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 48));
        ASSERT_OK(ar_plan_price(e.cm, p));
        ASSERT_EQ(ar_plan_samples_run(p), 64);
        /* Sailor's format has no FSDP: the export refuses, naming it */
        ASSERT_STATUS(arachne_plan_export(p, ARACHNE_EXPORT_SAILOR, NULL, 0, NULL), ARACHNE_E_UNSUPPORTED);
        ASSERT_CONTAINS(arachne_last_error(), "shards over FSDP groups of");
        memset(&q, 0, sizeof q);
        if (f == 4) {
            ASSERT_EQ(ar_plan_split_exact(e.cm, p, &q), 0);
        } else {
            ASSERT_EQ(ar_plan_split_exact(e.cm, p, &q), 1);
            ASSERT_EQ(ar_plan_samples_run(&q), 48);
            ASSERT_EQ(q.ntemplates, 2);
            ASSERT_EQ(q.t[0].replicas, 2);
            ASSERT_EQ(q.t[1].replicas, 2);
            ASSERT_EQ(q.t[0].fsdp, 2);
            ASSERT_EQ(q.t[1].fsdp, 2);
            ASSERT(ranks_dense(&q));
            ASSERT_OK(ar_plan_validate(e.cm, &q));
            ASSERT(q.iteration_s <= p->iteration_s * (1 + 1e-12));
            ar_plan_clear(&q);
        }
        arachne_plan_destroy(p);
        p = NULL;
    }
    env_close(&e);
}

TEST(split_drops_replicas_that_run_one_micro_batch)
{
    env e;
    arachne_plan *p, q;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:3x8"));
    p = three_replicas(&e, 16);
    ASSERT(p != NULL);
    ASSERT_EQ(ar_plan_samples_run(p), 24); /* one micro-batch of 8 each */
    memset(&q, 0, sizeof q);
    ASSERT_EQ(ar_plan_split_exact(e.cm, p, &q), 1);
    ASSERT_EQ(q.ntemplates, 1);
    ASSERT_EQ(q.t[0].replicas, 2);
    ASSERT_EQ(ar_plan_samples_run(&q), 16);
    ASSERT_EQ(q.nranks, 16);
    ASSERT_EQ(q.gpus_used, 16);
    ASSERT(ranks_dense(&q));
    ASSERT_OK(ar_plan_validate(e.cm, &q));
    ar_plan_clear(&q);
    arachne_plan_destroy(p);
    env_close(&e);
}

/* The bundled policy and a composition at batch 256: 0, a status, or -1
 * when the policy file is not there (the caller skips; e is closed). */
static int bundled_at_256(env *e, arachne_policy **pol, const char *model, const char *cluster)
{
    int st = env_open(e, model, cluster);
    if (!st && (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_GLOBAL_BATCH, 256))) env_close(e);
    if (st) return st;
    if (arachne_policy_load(pol, "examples/policies/default.arpol") == ARACHNE_OK) return 0;
    arachne_policy_destroy(*pol);
    *pol = NULL;
    env_close(e);
    return -1;
}

#define NO_BUNDLED "examples/policies/default.arpol not found (run from the repository root)"

/* ARACHNE_OPT_EXACT_DIVISION: a plan whose fastest division runs a
 * surplus that costs less than it gains (EXACT_BATCH keeps it) is priced
 * with its exact division instead, and the default planner, comparing the
 * plans' exact divisions, returns one that runs the batch exactly and is
 * faster than that repricing (the composition arachne plan --max-vp 8
 * refused before the CLI repriced with the option; docs/cost-model.md). */
TEST(exact_division_prices_and_plans_the_asked_batch)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_plan *p = NULL, *q = NULL;
    double v = -1, fast, slow;
    int st;
    if ((st = bundled_at_256(&e, &pol, "qwen3-8b", "a100-40:1x4,h200:1x4,h100:8x1+2x4,b300:3x2")) < 0) SKIP(NO_BUNDLED);
    ASSERT_OK(st);
    ASSERT_OK(arachne_cost_model_get(e.cm, ARACHNE_OPT_EXACT_DIVISION, &v));
    ASSERT_EQ(v, 0); /* the default */
    ASSERT_OK(arachne_plan_build_refined(&p, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_MSG(ar_plan_samples_run(p) > 256, "the planner's plan runs %ld samples: pick a composition whose best plan "
               "keeps a surplus", (long)ar_plan_samples_run(p));
    ASSERT(p->ntemplates >= 2);
    fast = p->iter_per_s;
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_DIVISION, 1));
    ASSERT_OK(ar_plan_price(e.cm, p));
    ASSERT_EQ(ar_plan_samples_run(p), 256);
    slow = p->iter_per_s;
    ASSERT(slow < fast);
    ASSERT_OK(ar_plan_validate(e.cm, p));
    /* planned with the option: an exact plan at least as fast as the repricing */
    ASSERT_OK(arachne_plan_build_refined(&q, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_EQ(ar_plan_samples_run(q), 256);
    ASSERT(q->iter_per_s >= slow);
    /* back at 0, the repriced plan runs its surplus again */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_DIVISION, 0));
    ASSERT_OK(ar_plan_price(e.cm, p));
    ASSERT_NEAR(p->iter_per_s, fast, 1e-12 * fast);
    ASSERT_STATUS(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_DIVISION, 3), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "exact_division");
    arachne_plan_destroy(p);
    arachne_plan_destroy(q);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* ARACHNE_OPT_EXACT_DIVISION ranks every plan that runs the batch exactly
 * above every plan that does not: a plan with a surplus ranks in (-1, 0),
 * in the order of its charged rate; the default planner then returns an
 * exact plan where, without the option, its best plan (interleaved, vp 2:
 * micro-batches in groups of 5 stages, steps of 20) runs 260 of 256 and no
 * division of that structure runs 256 (what the commands plan again for). */
TEST(exact_division_ranks_exact_plans_first)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_plan *p, *q = NULL;
    double r44, r40, charged;
    int st;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:3x8"));
    p = three_replicas(&e, 44); /* runs 48 */
    ASSERT(p != NULL);
    ASSERT_EQ(ar_plan_samples_run(p), 48);
    charged = ar_plan_rank(p);
    ASSERT_NEAR(charged, p->iter_per_s * 44.0 / 48.0, 1e-12);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_DIVISION, 1));
    ASSERT_OK(ar_plan_price(e.cm, p));
    ASSERT_EQ(ar_plan_samples_run(p), 48); /* no exact division: priced as before */
    r44 = ar_plan_rank(p);
    ASSERT(r44 < 0 && r44 > -1);
    ASSERT_NEAR(r44, -1.0 / (1.0 + charged), 1e-12);
    /* a larger surplus is charged more and ranks lower */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 40));
    ASSERT_OK(ar_plan_price(e.cm, p));
    r40 = ar_plan_rank(p);
    ASSERT(r40 < r44 && r40 > -1);
    /* the exact plan: its throughput, the same number as without the option */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 48));
    ASSERT_OK(ar_plan_price(e.cm, p));
    ASSERT_EQ(ar_plan_rank(p), p->iter_per_s);
    arachne_plan_destroy(p);
    env_close(&e);

    if ((st = bundled_at_256(&e, &pol, "llama3-8b", "h100:2x4,gh-96:1x4,b200:2x4")) < 0) SKIP(NO_BUNDLED);
    ASSERT_OK(st);
    ASSERT_OK(arachne_plan_build_refined(&p, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_MSG(ar_plan_samples_run(p) == 260 && p->ntemplates == 1 && p->t[0].vp == 2,
               "the planner's plan runs %ld samples in %d templates: pick a composition whose best plan cannot run "
               "the batch", (long)ar_plan_samples_run(p), p->ntemplates);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_DIVISION, 1));
    ASSERT_OK(ar_plan_price(e.cm, p));
    ASSERT_EQ(ar_plan_samples_run(p), 260); /* the structure has no exact division */
    ASSERT_OK(arachne_plan_build_refined(&q, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_EQ(ar_plan_samples_run(q), 256);
    ASSERT_OK(ar_plan_validate(e.cm, q));
    ASSERT(ar_plan_rank(q) > ar_plan_rank(p));
    arachne_plan_destroy(p);
    arachne_plan_destroy(q);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* ARACHNE_OPT_EXACT_DIVISION 2: the default planner plans as with 0 and,
 * when that plan runs a surplus, plans again exact-first and refines the
 * first plan under the option, returning the better: never below planning
 * with 1 from the start (that second run is the same run), the batch
 * asked, every evaluation counted, and a price that repricing with the
 * same cost model reproduces.  Where the first plan runs the batch, it is
 * the plan, as with 0. */
TEST(exact_division_2_plans_again_for_the_asked_batch)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_plan *p = NULL, *q = NULL, *r = NULL;
    double v = -1, rate;
    int st;
    if ((st = bundled_at_256(&e, &pol, "llama3-8b", "h100:2x4,gh-96:1x4,b200:2x4")) < 0) SKIP(NO_BUNDLED);
    ASSERT_OK(st);
    ASSERT_OK(arachne_plan_build_refined(&p, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_EQ(ar_plan_samples_run(p), 260);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_DIVISION, 1));
    ASSERT_OK(arachne_plan_build_refined(&q, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_EQ(ar_plan_samples_run(q), 256);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_DIVISION, 2));
    ASSERT_OK(arachne_cost_model_get(e.cm, ARACHNE_OPT_EXACT_DIVISION, &v));
    ASSERT_EQ(v, 2);
    ASSERT_OK(arachne_plan_build_refined(&r, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_EQ(ar_plan_samples_run(r), 256);
    ASSERT_OK(ar_plan_validate(e.cm, r));
    ASSERT(r->iter_per_s >= q->iter_per_s);
    ASSERT(r->evaluations > p->evaluations + q->evaluations / 2); /* both runs and the refinement */
    ASSERT(r->planning_s > 0);
    rate = r->iter_per_s;
    ASSERT_OK(ar_plan_price(e.cm, r));
    ASSERT_NEAR(r->iter_per_s, rate, 1e-12 * rate);
    /* 2 prices as 1: the surplus plan has no exact division and ranks below */
    ASSERT_OK(ar_plan_price(e.cm, p));
    ASSERT_EQ(ar_plan_samples_run(p), 260);
    ASSERT(ar_plan_rank(p) < 0 && ar_plan_rank(r) > 0);
    arachne_plan_destroy(p);
    arachne_plan_destroy(q);
    arachne_plan_destroy(r);
    p = q = r = NULL;
    env_close(&e);

    /* the first plan runs the batch: the same plan and count as with 0 */
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:2x8,a100-80:1x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    ASSERT_OK(arachne_plan_build_refined(&p, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_EQ(ar_plan_samples_run(p), 256);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXACT_DIVISION, 2));
    ASSERT_OK(arachne_plan_build_refined(&r, pol, e.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    ASSERT_EQ(r->iter_per_s, p->iter_per_s);
    ASSERT_EQ(r->evaluations, p->evaluations);
    ASSERT_EQ(r->ntemplates, p->ntemplates);
    arachne_plan_destroy(p);
    arachne_plan_destroy(r);
    arachne_policy_destroy(pol);
    env_close(&e);
}

TEST(split_leaves_exact_and_unsplittable_plans)
{
    env e;
    arachne_plan *p, q;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:3x8"));
    p = three_replicas(&e, 48); /* 3 x 8 x 2 = 48 */
    ASSERT(p != NULL);
    memset(&q, 0, sizeof q);
    ASSERT_EQ(ar_plan_split_exact(e.cm, p, &q), 0);
    arachne_plan_destroy(p);
    /* a surplus of 4 with steps of 8 samples: no split reaches it */
    p = three_replicas(&e, 44);
    ASSERT(p != NULL);
    ASSERT_EQ(ar_plan_samples_run(p), 48);
    ASSERT_EQ(ar_plan_split_exact(e.cm, p, &q), 0);
    ASSERT_STR(arachne_last_error(), "");
    ar_plan_clear(&q);
    arachne_plan_destroy(p);
    env_close(&e);
}

/* The two halves of a split reduce gradients in one ring: their per-node
 * peer count is taken over both (4 TP4 replicas on two nodes: 2 per node),
 * so the split prices the same gradient sync as the plan it came from.
 * Counted per template, the moved replica (alone on its node) would read
 * as 1 peer per node and a ring at half the bandwidth. */
TEST(split_halves_share_one_gradient_ring)
{
    env e;
    arachne_plan *p = NULL, q;
    ar_stage_place place[2][AR_MAX_DEPTH], alone;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:2x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 16));
    ASSERT_OK(arachne_plan_from_parallel(&p, e.cm, "tp=4,pp=1,dp=4,mbs=2"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 14));
    ASSERT_OK(ar_plan_price(e.cm, p));
    ASSERT_EQ(ar_plan_samples_run(p), 16);
    memset(&q, 0, sizeof q);
    ASSERT_EQ(ar_plan_split_exact(e.cm, p, &q), 1);
    ASSERT_EQ(q.ntemplates, 2);
    ASSERT_EQ(q.t[0].replicas, 3);
    ASSERT_EQ(q.t[1].replicas, 1);
    ASSERT_OK(ar_template_place(&q, 1, &alone));
    ASSERT_EQ(alone.dp_local, 1);
    ASSERT_OK(ar_plan_place(&q, place));
    ASSERT_EQ(place[0][0].dp_local, 2);
    ASSERT_EQ(place[1][0].dp_local, 2);
    ASSERT_EQ(place[0][0].dp_most, 2);
    ASSERT_EQ(place[1][0].dp_most, 2);
    ASSERT(p->t[0].stages[0].sync_s > 0);
    ASSERT_NEAR(q.t[0].stages[0].sync_s, p->t[0].stages[0].sync_s, 1e-12);
    ASSERT_NEAR(q.t[1].stages[0].sync_s, p->t[0].stages[0].sync_s, 1e-12);
    ASSERT(q.iteration_s <= p->iteration_s * (1 + 1e-12));
    ar_plan_clear(&q);
    arachne_plan_destroy(p);
    env_close(&e);
}

/* The fill can place a template with the same stages as an earlier one (here
 * the batch caps the first at 3 TP4 replicas on two 8-GPU nodes, then a
 * larger batch leaves room for one more).  The two share one gradient ring,
 * 2 peers per node over both; the price the fill records for the plan must
 * count it so, the price repricing gives.  Before the fill counted the new
 * template's ring from its own placement (its one replica alone on its node:
 * 1 peer), so the plan it returned reprices faster than it said. */
TEST(fill_prices_a_twin_template_with_the_shared_ring)
{
    env e;
    arachne_plan p, q;
    ar_avail a;
    ar_stage_place place[2][AR_MAX_DEPTH];
    int types[1] = { 0 }, tps[1] = { 4 };
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:2x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_CONTEXT_PARALLEL, 0));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 3));
    memset(&p, 0, sizeof p);
    memset(&q, 0, sizeof q);
    ASSERT_OK(ar_plan_init(&p, e.cm));
    ASSERT_OK(ar_avail_init(&a, e.c));
    ASSERT_OK(ar_fill_template(e.cm, &a, &p, 1, types, tps));
    ASSERT_EQ(p.t[0].replicas, 3);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 4));
    ASSERT_OK(ar_fill_template(e.cm, &a, &p, 1, types, tps));
    ASSERT_EQ(p.ntemplates, 2);
    ASSERT_EQ(p.t[1].replicas, 1);
    ASSERT(ar_template_same_stages(&p.t[0], &p.t[1]));
    ASSERT_OK(ar_plan_place(&p, place));
    ASSERT_EQ(place[1][0].dp_local, 2);
    ASSERT_OK(ar_plan_copy(&q, &p));
    ASSERT_OK(ar_plan_price(e.cm, &q));
    ASSERT_NEAR(p.t[1].stages[0].sync_s, q.t[1].stages[0].sync_s, 1e-12);
    ASSERT_NEAR(p.t[0].stages[0].sync_s, q.t[0].stages[0].sync_s, 1e-12);
    ASSERT_NEAR(p.iteration_s, q.iteration_s, 1e-12 * q.iteration_s);
    ar_plan_clear(&q);
    ar_plan_clear(&p);
    ar_avail_free(&a);
    env_close(&e);
}

SUITE(plan_exact, T(split_runs_the_batch_exactly_at_the_same_speed), T(split_moves_whole_fsdp_groups), T(split_drops_replicas_that_run_one_micro_batch),
      T(split_leaves_exact_and_unsplittable_plans), T(exact_division_prices_and_plans_the_asked_batch),
      T(exact_division_ranks_exact_plans_first), T(exact_division_2_plans_again_for_the_asked_batch),
      T(split_halves_share_one_gradient_ring), T(fill_prices_a_twin_template_with_the_shared_ring));
