/* test_rollout.c -- arachne_plan_rollout: rollout decoding of a policy
 * (src/policy_rollout.c, docs/search.md "Rollout decoding"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "harness.h"
#include "plan.h"
#include "policy.h"

/* The bundled policy (the tests run from the repository root), else an
 * untrained one: the properties below hold for any policy. */
static arachne_policy *bundled_policy(void)
{
    arachne_policy *pol = NULL;
    if (arachne_policy_load(&pol, "examples/policies/default.arpol") != ARACHNE_OK) {
        arachne_clear_error();
        if (arachne_policy_create(&pol, 1, 0, 0) != ARACHNE_OK) return NULL;
    }
    return pol;
}

/* Two small validation compositions on which the bundled policy's greedy
 * plan is 13 % and 69 % slower than the rollout's (bench_value_decoding
 * --greedy-completions), and two where it may not be: the rollout plan is
 * never slower than greedy, records itself, and is the same every time. */
TEST(rollout_is_never_slower_than_greedy_and_repeats_itself)
{
    static const struct { const char *model, *cluster; int batch; } cases[] = {
        { "qwen3-8b", "a100-80:1x8,b300:1x8", 256 },
        { "mixtral-8x7b", "b200:2x2+1x8,h100:4x1,rtx-3090:1x4", 256 },
        { "llama3-8b", "a100-40:2x4,a6000:1x4,h100:1x8", 512 },
        { "qwen3-30b-a3b", "a100-80:2x4,h100:1x8", 256 },
    };
    arachne_policy *pol = bundled_policy();
    /* a quick (sanitizer) run plans the first, cheapest gaining case only */
    int i, faster = 0, n = th_quick() ? 1 : (int)(sizeof cases / sizeof cases[0]);
    ASSERT(pol != NULL);
    for (i = 0; i < n; i++) {
        env e;
        arachne_plan *g = NULL, *r = NULL, *again = NULL;
        const char *method = NULL;
        char *a, *b;
        ASSERT_OK(env_open(&e, cases[i].model, cases[i].cluster));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, cases[i].batch));
        ASSERT_OK(arachne_plan_build(&g, pol, e.cm, 1, 0));
        ASSERT_OK(arachne_plan_rollout(&r, pol, e.cm, 0, 0));
        ASSERT_MSG(ar_plan_rank(r) >= ar_plan_rank(g), "%s on %s: rollout %.6g below greedy %.6g", cases[i].model,
                   cases[i].cluster, ar_plan_rank(r), ar_plan_rank(g));
        if (ar_plan_rank(r) > 1.05 * ar_plan_rank(g)) faster++;
        ASSERT_OK(arachne_plan_method(r, &method));
        ASSERT_STR(method, "policy-rollout");
        ASSERT_EQ(1, r->samples);
        ASSERT(r->evaluations > g->evaluations);
        ASSERT_OK(ar_plan_validate(e.cm, r));
        ASSERT_OK(arachne_plan_rollout(&again, pol, e.cm, 0, 0));
        a = plan_json_sans_time(r);
        b = plan_json_sans_time(again);
        ASSERT(a && b);
        ASSERT_STR(a, b);
        free(a);
        free(b);
        arachne_plan_destroy(g);
        arachne_plan_destroy(r);
        arachne_plan_destroy(again);
        env_close(&e);
    }
    /* the bundled policy gains on the first two; an untrained one (no
     * bundled file) need not */
    if (pol->meta && strstr(pol->meta, "\"updates\""))
        ASSERT_MSG(faster >= (n < 2 ? n : 2), "faster on %d of %d", faster, n);
    arachne_policy_destroy(pol);
}

/* A budget spent before the first decision leaves the greedy plan; a
 * larger one stops part-way with a plan between the two, and each spends
 * no more than the uncapped run. */
TEST(rollout_budget_stops_the_lookahead)
{
    arachne_policy *pol = bundled_policy();
    arachne_plan *g = NULL, *full = NULL, *none = NULL, *part = NULL;
    env e;
    ASSERT(pol != NULL);
    /* a quick (sanitizer) run takes the cheaper composition of the two */
    ASSERT_OK(th_quick() ? env_open(&e, "qwen3-8b", "a100-80:1x8,b300:1x8")
                         : env_open(&e, "mixtral-8x7b", "b200:2x2+1x8,h100:4x1,rtx-3090:1x4"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    ASSERT_OK(arachne_plan_build(&g, pol, e.cm, 1, 0));
    ASSERT_OK(arachne_plan_rollout(&full, pol, e.cm, 0, 0));
    ASSERT_OK(arachne_plan_rollout(&none, pol, e.cm, 1, 0));
    ASSERT_OK(arachne_plan_rollout(&part, pol, e.cm, full->evaluations / 3, 0));
    ASSERT(ar_plan_rank(none) == ar_plan_rank(g));
    ASSERT(ar_plan_rank(part) >= ar_plan_rank(g));
    ASSERT(ar_plan_rank(part) <= ar_plan_rank(full));
    ASSERT(none->evaluations < part->evaluations);
    ASSERT(part->evaluations <= full->evaluations);
    {
        /* a time cap that has passed before the first decision: the greedy
         * plan, and the method says the cap cut it */
        arachne_plan *cut = NULL;
        const char *m = NULL;
        ASSERT_OK(arachne_plan_rollout(&cut, pol, e.cm, 0, 1e-12));
        ASSERT(ar_plan_rank(cut) == ar_plan_rank(g));
        ASSERT_OK(arachne_plan_method(cut, &m));
        ASSERT_STR(m, "policy-rollout-capped");
        arachne_plan_destroy(cut);
    }
    arachne_plan_destroy(g);
    arachne_plan_destroy(full);
    arachne_plan_destroy(none);
    arachne_plan_destroy(part);
    arachne_policy_destroy(pol);
    env_close(&e);
}

TEST(rollout_rejects_bad_arguments)
{
    arachne_policy *pol = NULL;
    arachne_plan *p = (arachne_plan *)&p; /* set to NULL by every failing call */
    env e;
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:2x4"));
    ASSERT_STATUS(arachne_plan_rollout(NULL, pol, e.cm, 0, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "arachne_plan_rollout: out is NULL");
    ASSERT_STATUS(arachne_plan_rollout(&p, NULL, e.cm, 0, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(p == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "policy is NULL");
    p = (arachne_plan *)&p;
    ASSERT_STATUS(arachne_plan_rollout(&p, pol, NULL, 0, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(p == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "cost model is NULL");
    ASSERT_STATUS(arachne_plan_rollout(&p, pol, e.cm, -1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "evaluations -1");
    ASSERT_STATUS(arachne_plan_rollout(&p, pol, e.cm, 0, -1.0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "time_cap_s");
    ASSERT_STATUS(arachne_plan_rollout(&p, pol, e.cm, 0, NAN), ARACHNE_E_INVALID_ARGUMENT);
    env_close(&e);
    /* a model that fits nowhere: infeasible, as arachne_plan_build says */
    ASSERT_OK(env_open(&e, "deepseek-v3", "a5000:1x2"));
    ASSERT_STATUS(arachne_plan_rollout(&p, pol, e.cm, 0, 0), ARACHNE_E_INFEASIBLE);
    ASSERT(p == NULL);
    env_close(&e);
    arachne_policy_destroy(pol);
}

SUITE(rollout, T(rollout_is_never_slower_than_greedy_and_repeats_itself), T(rollout_budget_stops_the_lookahead),
      T(rollout_rejects_bad_arguments));
