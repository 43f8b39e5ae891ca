/* fuzz_model_plan.c -- extreme model JSON all the way through planning:
 * arachne_model_from_json, then (for an accepted model) a generated
 * profile on "a100-40:2x4,h100:1x8", a cost model, an untrained policy's
 * greedy plan, its refinement (12 fills, twice: the same plan), rollout
 * decoding (24 fills: never slower than greedy) and a 3-plan random search.  Input: the model text (any
 * sizes the reader accepts: a 1e6 vocabulary, one block, 1,000 experts).
 * Properties: no crash, leak or hang; every failure has a known status and
 * a message (INFEASIBLE for a model that fits nowhere); a plan has finite
 * non-negative numbers, a positive iteration time and an MFU within 0..1
 * (docs/concepts.md), and its JSON reads back against the cost model. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "fuzz_common.h"
#include "../fixture.h" /* plan_json_sans_time */

static arachne_cluster *cluster;
static arachne_policy *policy;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (arachne_cluster_parse(&cluster, "a100-40:2x4,h100:1x8") || arachne_policy_create(&policy, 2, 16, 1)) {
        fprintf(stderr, "fuzz_model_plan setup: %s\n", arachne_last_error());
        abort();
    }
    return 0;
}

static void check_plan(const arachne_cost_model *cm, const arachne_plan *p)
{
    double v;
    const char *js = NULL;
    arachne_plan *q = NULL;
    int f;
    for (f = ARACHNE_PLAN_ITERATION_S; f <= ARACHNE_PLAN_SEQ_LEN; f++) {
        FUZZ_CHECK(arachne_plan_get(p, f, &v) == ARACHNE_OK);
        FUZZ_CHECK(isfinite(v) && v >= 0);
    }
    FUZZ_CHECK(arachne_plan_get(p, ARACHNE_PLAN_ITERATION_S, &v) == ARACHNE_OK && v > 0);
    FUZZ_CHECK(arachne_plan_get(p, ARACHNE_PLAN_MFU, &v) == ARACHNE_OK && v <= 1.0);
    FUZZ_CHECK(arachne_plan_to_json(p, &js) == ARACHNE_OK && js);
    FUZZ_CHECK(arachne_plan_from_json(&q, cm, js, strlen(js)) == ARACHNE_OK);
    arachne_plan_destroy(q);
}

/* A planning call's outcome: a failure has a known status, a message and
 * no plan (0); a plan has the properties above (1). */
static int planned(const arachne_cost_model *cm, int st, const arachne_plan *p)
{
    if (st != ARACHNE_OK) {
        FUZZ_CHECK_FAILURE(st);
        FUZZ_CHECK(p == NULL);
        return 0;
    }
    check_plan(cm, p);
    return 1;
}

/* p runs at least as many iterations per second as base. */
static void no_slower(const arachne_plan *p, const arachne_plan *base)
{
    double v = 0, vb = 0;
    FUZZ_CHECK(arachne_plan_get(p, ARACHNE_PLAN_ITER_PER_S, &v) == ARACHNE_OK);
    FUZZ_CHECK(arachne_plan_get(base, ARACHNE_PLAN_ITER_PER_S, &vb) == ARACHNE_OK);
    FUZZ_CHECK(v >= vb * (1 - 1e-12));
}

/* The refinement of the greedy plan with a small budget: never slower than
 * the start (both run the batch exactly here: the planner's plans do), and
 * the same bytes when asked again. */
static void check_refine(const arachne_cost_model *cm, const arachne_plan *start)
{
    arachne_plan *a = NULL, *b = NULL;
    char *ja, *jb;
    int st;
    arachne_clear_error();
    st = arachne_plan_refine(&a, start, cm, 12, 0);
    if (!planned(cm, st, a)) return;
    no_slower(a, start);
    FUZZ_CHECK(arachne_plan_refine(&b, start, cm, 12, 0) == ARACHNE_OK);
    ja = plan_json_sans_time(a);
    jb = plan_json_sans_time(b);
    FUZZ_CHECK(ja && jb && strcmp(ja, jb) == 0);
    free(ja);
    free(jb);
    arachne_plan_destroy(b);
    arachne_plan_destroy(a);
}

/* Rollout decoding with a small budget: never slower than the greedy plan
 * of the same policy (the header's promise, budget or not: once the budget
 * is spent the policy decides as greedy does). */
static void check_rollout(const arachne_cost_model *cm, const arachne_plan *greedy)
{
    arachne_plan *r = NULL;
    int st;
    arachne_clear_error();
    st = arachne_plan_rollout(&r, policy, cm, 24, 0);
    if (!planned(cm, st, r)) return;
    no_slower(r, greedy);
    arachne_plan_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    arachne_model *m = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *plan = NULL;
    char *text;
    double blocks = 0;
    int st;
    if (size > 65536) return 0;
    text = fuzz_copy(data, size);
    if (!text) return 0;
    st = arachne_model_from_json(&m, text, size);
    free(text);
    if (st != ARACHNE_OK) return 0;
    /* planning is linear in the blocks: 100,000 blocks take about 1 s
     * natively and over 10 s under ASan, which libFuzzer reports as a hang */
    if (arachne_model_get(m, ARACHNE_MODEL_BLOCKS, &blocks) != ARACHNE_OK || blocks > 2000) goto done;
    arachne_clear_error();
    st = arachne_profile_generate(&p, m, cluster, 4096);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK_FAILURE(st);
        FUZZ_CHECK(p == NULL);
        goto done;
    }
    st = arachne_cost_model_create(&cm, m, cluster, p);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK_FAILURE(st);
        goto done;
    }
    FUZZ_CHECK(arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, 64) == ARACHNE_OK);
    arachne_clear_error();
    st = arachne_plan_build(&plan, policy, cm, 1, 0);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK_FAILURE(st);
        FUZZ_CHECK(plan == NULL);
    } else {
        check_plan(cm, plan);
        check_refine(cm, plan);
        check_rollout(cm, plan);
        arachne_plan_destroy(plan);
        plan = NULL;
    }
    arachne_clear_error();
    st = arachne_search_random(&plan, cm, 3, 1, 0);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK_FAILURE(st);
        FUZZ_CHECK(plan == NULL);
    } else {
        check_plan(cm, plan);
        arachne_plan_destroy(plan);
    }
done:
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_model_destroy(m);
    return 0;
}
