/* fuzz_plan.c -- the plan JSON reader, validation and re-pricing
 * (arachne_plan_from_json) against small fixed cost models.
 * The first input byte picks the cost model (even: llama3-8b, odd: a small
 * MoE model "fuzz-moe" (8 blocks, 16 experts, top-2), both on cluster "a100-40:2x4,h100:1x8" with a generated
 * profile at 4096 tokens, global batch 64, ZeRO-1); the rest is the plan
 * text.  Properties: no crash, leak or hang; *out NULL and a message on
 * failure; an accepted plan answers every getter with finite values, its
 * JSON loads back to the same bytes, re-pricing it changes nothing, and
 * every export format succeeds with the size it announced. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "fuzz_common.h"

static arachne_model *models[2];
static arachne_cluster *cluster;
static arachne_profile *profiles[2];
static arachne_cost_model *cms[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char moe[] =
        "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"fuzz-moe\",\"blocks\":8,\"hidden\":1024,"
        "\"heads\":8,\"kv_heads\":4,\"head_dim\":128,\"ffn\":2048,\"vocab\":32000,\"experts\":16,\"top_k\":2,"
        "\"shared_experts\":1,\"expert_ffn\":512,\"dense_prefix\":1}";
    int i;
    (void)argc;
    (void)argv;
    if (arachne_cluster_parse(&cluster, "a100-40:2x4,h100:1x8") != ARACHNE_OK) abort();
    for (i = 0; i < 2; i++) {
        if ((i == 0 ? arachne_model_preset(&models[i], "llama3-8b")
                    : arachne_model_from_json(&models[i], moe, sizeof moe - 1)) != ARACHNE_OK ||
            arachne_profile_generate(&profiles[i], models[i], cluster, 4096) != ARACHNE_OK ||
            arachne_cost_model_create(&cms[i], models[i], cluster, profiles[i]) != ARACHNE_OK ||
            arachne_cost_model_set(cms[i], ARACHNE_OPT_GLOBAL_BATCH, 64) != ARACHNE_OK ||
            arachne_cost_model_set(cms[i], ARACHNE_OPT_DIST_OPTIMIZER, 1) != ARACHNE_OK) {
            fprintf(stderr, "fuzz_plan setup: %s\n", arachne_last_error());
            abort();
        }
    }
    return 0;
}

static void check_plan(const arachne_cost_model *cm, arachne_plan *p)
{
    arachne_plan *q = NULL;
    const char *j1 = NULL, *j2 = NULL, *s = NULL;
    char *copy;
    double v, nt = 0, nr = 0, depth = 0;
    int f, t, st, r, iv;
    for (f = ARACHNE_PLAN_ITERATION_S; f <= ARACHNE_PLAN_SEQ_LEN; f++) {
        FUZZ_CHECK(arachne_plan_get(p, f, &v) == ARACHNE_OK);
        FUZZ_CHECK(isfinite(v) && v >= 0);
    }
    FUZZ_CHECK(arachne_plan_get(p, ARACHNE_PLAN_TEMPLATES, &nt) == ARACHNE_OK && nt >= 1 && nt <= 16);
    FUZZ_CHECK(arachne_plan_get(p, ARACHNE_PLAN_RANKS, &nr) == ARACHNE_OK);
    for (t = 0; t < (int)nt; t++) {
        for (f = ARACHNE_TEMPLATE_DEPTH; f <= ARACHNE_TEMPLATE_PIPELINE_S; f++)
            FUZZ_CHECK(arachne_plan_template_get(p, t, f, &v) == ARACHNE_OK && isfinite(v));
        FUZZ_CHECK(arachne_plan_template_get(p, t, ARACHNE_TEMPLATE_DEPTH, &depth) == ARACHNE_OK);
        for (st = 0; st < (int)depth; st++) {
            FUZZ_CHECK(arachne_plan_stage_gpu(p, t, st, &s) == ARACHNE_OK && s && s[0]);
            for (f = ARACHNE_STAGE_TP; f <= ARACHNE_STAGE_MEMORY_BYTES; f++)
                FUZZ_CHECK(arachne_plan_stage_get(p, t, st, f, &v) == ARACHNE_OK && isfinite(v) && v >= 0);
        }
        FUZZ_CHECK(arachne_plan_stage_get(p, t, (int)depth, 0, &v) == ARACHNE_E_INVALID_ARGUMENT);
    }
    FUZZ_CHECK(arachne_plan_template_get(p, (int)nt, 0, &v) == ARACHNE_E_INVALID_ARGUMENT);
    for (r = 0; r < (int)nr; r++)
        for (f = ARACHNE_RANK_RANK; f <= ARACHNE_RANK_TP_RANK; f++)
            FUZZ_CHECK(arachne_plan_rank_get(p, r, f, &iv) == ARACHNE_OK && iv >= 0);
    FUZZ_CHECK(arachne_plan_method(p, &s) == ARACHNE_OK && s);
    fuzz_check_exports(p);
    FUZZ_CHECK(arachne_plan_to_json(p, &j1) == ARACHNE_OK && j1);
    st = arachne_plan_from_json(&q, cm, j1, strlen(j1));
    FUZZ_CHECK(st == ARACHNE_OK);
    FUZZ_CHECK(arachne_plan_to_json(q, &j2) == ARACHNE_OK && strcmp(j1, j2) == 0);
    arachne_plan_destroy(q);
    copy = strdup(j1);
    FUZZ_CHECK(copy != NULL);
    FUZZ_CHECK(arachne_cost_model_price(cm, p) == ARACHNE_OK);
    FUZZ_CHECK(arachne_plan_to_json(p, &j2) == ARACHNE_OK && strcmp(copy, j2) == 0);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const arachne_cost_model *cm;
    arachne_plan *p = (arachne_plan *)1;
    char *text;
    int st;
    if (size < 1) return 0;
    cm = cms[data[0] & 1];
    text = fuzz_copy(data + 1, size - 1);
    if (!text) return 0;
    arachne_clear_error();
    st = arachne_plan_from_json(&p, cm, text, size - 1);
    free(text);
    if (getenv("FUZZ_PLAN_VERBOSE")) fprintf(stderr, "plan: %d %s\n", st, st ? arachne_last_error() : "ok");
    if (st != ARACHNE_OK) {
        FUZZ_CHECK(p == NULL);
        FUZZ_CHECK_FAILURE(st);
        return 0;
    }
    check_plan(cm, p);
    arachne_plan_destroy(p);
    return 0;
}
