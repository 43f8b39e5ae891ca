/* fuzz_replan.c -- arachne_replan onto a fuzzed cluster.  A llama3-8b plan
 * made by an untrained policy on "a100-40:2x4,h100:1x8" is replanned for a
 * new cluster read from the input: byte 0 bit 0 picks the reader (0: the
 * compact spec, 1: cluster JSON, which may define GPU types with any
 * figures), bit 1 best-of-2 instead of greedy, bits 2-7 the horizon; the
 * rest is the cluster text.  Clusters over 64 GPUs are skipped (planning
 * time grows with the cluster; the parsers are fuzzed on their own).
 * Properties: no crash, leak or hang; failures leave both outputs NULL and
 * a message; a decision has action/reason in range, finite non-negative
 * numbers, consistent counts, JSON that parses, and a plan whose getters
 * are finite. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "fuzz_common.h"
#include "json.h"

static arachne_model *model;
static arachne_policy *policy;
static arachne_plan *running;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    (void)argc;
    (void)argv;
    if (arachne_model_preset(&model, "llama3-8b") || arachne_cluster_parse(&c, "a100-40:2x4,h100:1x8") ||
        arachne_profile_generate(&p, model, c, 4096) || arachne_cost_model_create(&cm, model, c, p) ||
        arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, 64) || arachne_policy_create(&policy, 1, 16, 1) ||
        arachne_plan_build(&running, policy, cm, 1, 0)) {
        fprintf(stderr, "fuzz_replan setup: %s\n", arachne_last_error());
        abort();
    }
    /* the running plan keeps what it needs (model, cluster text) */
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    return 0;
}

static void check_decision(const arachne_replan_decision *d, const arachne_plan *np)
{
    double v, n = 0, action = -1, reason = -1, valid = -1;
    const char *js = NULL;
    ar_json *tree = NULL;
    int f, i;
    for (f = ARACHNE_DECISION_ACTION; f <= ARACHNE_DECISION_GPUS_LEFT; f++) {
        FUZZ_CHECK(arachne_replan_get(d, f, &v) == ARACHNE_OK);
        FUZZ_CHECK(isfinite(v));
        /* gained and net samples are negative when the new plan is slower */
        if (f != ARACHNE_DECISION_SLOWEST_RANK && f != ARACHNE_DECISION_NET_SAMPLES &&
            f != ARACHNE_DECISION_SAMPLES_GAINED)
            FUZZ_CHECK(v >= 0);
    }
    FUZZ_CHECK(arachne_replan_get(d, ARACHNE_DECISION_ACTION, &action) == ARACHNE_OK && (action == 0 || action == 1));
    FUZZ_CHECK(arachne_replan_get(d, ARACHNE_DECISION_REASON, &reason) == ARACHNE_OK && reason >= 0 && reason <= 3);
    FUZZ_CHECK(arachne_replan_get(d, ARACHNE_DECISION_RUNNING_VALID, &valid) == ARACHNE_OK);
    if (valid == 0) FUZZ_CHECK(action == ARACHNE_REPLAN_SWITCH && reason == ARACHNE_REPLAN_REASON_RUNNING_INVALID);
    FUZZ_CHECK(arachne_replan_get(d, ARACHNE_DECISION_MIGRATIONS, &n) == ARACHNE_OK);
    for (i = 0; i < (int)n; i++)
        for (f = ARACHNE_MIGRATION_SRC_RANK; f <= ARACHNE_MIGRATION_LINK; f++) {
            FUZZ_CHECK(arachne_replan_migration_get(d, i, f, &v) == ARACHNE_OK);
            FUZZ_CHECK(isfinite(v));
        }
    FUZZ_CHECK(arachne_replan_migration_get(d, (int)n, 0, &v) == ARACHNE_E_INVALID_ARGUMENT);
    FUZZ_CHECK(arachne_replan_explain(d, &js) == ARACHNE_OK && js && js[0]);
    FUZZ_CHECK(arachne_replan_to_json(d, &js) == ARACHNE_OK && js);
    FUZZ_CHECK(ar_json_parse(&tree, js, strlen(js), "decision") == ARACHNE_OK);
    ar_json_free(tree);
    for (f = ARACHNE_PLAN_ITERATION_S; f <= ARACHNE_PLAN_SEQ_LEN; f++) {
        FUZZ_CHECK(arachne_plan_get(np, f, &v) == ARACHNE_OK);
        FUZZ_CHECK(isfinite(v) && v >= 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_replan_options *o = NULL;
    arachne_plan *np = (arachne_plan *)1;
    arachne_replan_decision *d = (arachne_replan_decision *)1;
    char *text;
    int st, gpus = 0;
    if (size < 1 || size > 8192) return 0;
    text = fuzz_cstr(data + 1, size - 1);
    if (!text) return 0;
    st = (data[0] & 1) ? arachne_cluster_from_json(&c, text, size - 1) : arachne_cluster_parse(&c, text);
    free(text);
    if (st != ARACHNE_OK) return 0;
    if (arachne_cluster_gpu_count(c, NULL, &gpus) != ARACHNE_OK || gpus > 64) goto done;
    if (arachne_profile_generate(&p, model, c, 4096) != ARACHNE_OK) goto done;
    if (arachne_cost_model_create(&cm, model, c, p) != ARACHNE_OK ||
        arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, 64) != ARACHNE_OK)
        goto done;
    FUZZ_CHECK(arachne_replan_options_create(&o) == ARACHNE_OK);
    FUZZ_CHECK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_SAMPLES, (data[0] & 2) ? 2 : 1) == ARACHNE_OK);
    FUZZ_CHECK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_HORIZON_S, 1.0 + 60.0 * (data[0] >> 2)) == ARACHNE_OK);
    arachne_clear_error();
    st = arachne_replan(&np, &d, policy, cm, running, o);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK_FAILURE(st);
        FUZZ_CHECK(np == NULL && d == NULL);
    } else {
        FUZZ_CHECK(np != NULL && d != NULL);
        check_decision(d, np);
        arachne_plan_destroy(np);
        arachne_replan_decision_destroy(d);
    }
done:
    arachne_replan_options_destroy(o);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    return 0;
}
