/* fuzz_plan_svg.c -- a fuzzed plan file read (arachne_plan_from_json),
 * then drawn (arachne_plan_to_svg, arachne_plan_save_svg) and exported in
 * every launcher format.  Byte 0 picks the cost model as in fuzz_plan.c
 * (even: llama3-8b, odd: an 8-block MoE model; cluster
 * "a100-40:2x4,h100:1x8"); the rest is the plan text.  Properties: no
 * crash, leak or hang; an accepted plan's SVG has the size it announced, is
 * one <svg> element without NUL bytes, and the saved file holds the same
 * bytes; every export succeeds with the size it announced, or refuses a
 * plan its launcher cannot express (fuzz_check_exports). */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "fuzz_common.h"
#include "fuzz_tmpdir.h"
#include "util.h"

static arachne_model *models[2];
static arachne_cluster *cluster;
static arachne_profile *profiles[2];
static arachne_cost_model *cms[2];
static char svg_path[512];
static const char *const scratch_files[] = { "plan.svg", NULL };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char moe[] =
        "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"fuzz-moe\",\"blocks\":8,\"hidden\":1024,"
        "\"heads\":8,\"kv_heads\":4,\"head_dim\":128,\"ffn\":2048,\"vocab\":32000,\"experts\":16,\"top_k\":2,"
        "\"shared_experts\":1,\"expert_ffn\":512,\"dense_prefix\":1}";
    int i;
    (void)argc;
    (void)argv;
    fuzz_tmpdir_make("svg", scratch_files);
    fuzz_tmpdir_path(svg_path, sizeof svg_path, scratch_files[0]);
    if (arachne_cluster_parse(&cluster, "a100-40:2x4,h100:1x8") != ARACHNE_OK) abort();
    for (i = 0; i < 2; i++) {
        if ((i == 0 ? arachne_model_preset(&models[i], "llama3-8b")
                    : arachne_model_from_json(&models[i], moe, sizeof moe - 1)) != ARACHNE_OK ||
            arachne_profile_generate(&profiles[i], models[i], cluster, 4096) != ARACHNE_OK ||
            arachne_cost_model_create(&cms[i], models[i], cluster, profiles[i]) != ARACHNE_OK ||
            arachne_cost_model_set(cms[i], ARACHNE_OPT_GLOBAL_BATCH, 64) != ARACHNE_OK ||
            arachne_cost_model_set(cms[i], ARACHNE_OPT_DIST_OPTIMIZER, 1) != ARACHNE_OK) {
            fprintf(stderr, "fuzz_plan_svg setup: %s\n", arachne_last_error());
            abort();
        }
    }
    return 0;
}

static void check_drawn(const arachne_plan *p)
{
    size_t need = 0, need2 = 0, flen = 0;
    char *svg, *file = NULL;
    FUZZ_CHECK(arachne_plan_to_svg(p, NULL, 0, &need) == ARACHNE_E_BUFFER_TOO_SMALL && need > 1);
    svg = malloc(need);
    FUZZ_CHECK(svg != NULL);
    FUZZ_CHECK(arachne_plan_to_svg(p, svg, need, &need2) == ARACHNE_OK && need2 == need);
    FUZZ_CHECK(strlen(svg) == need - 1);
    FUZZ_CHECK(strstr(svg, "<svg") != NULL);
    FUZZ_CHECK(need > 8 && strstr(svg + need - 1 - 8, "</svg>") != NULL);
    FUZZ_CHECK(arachne_plan_save_svg(p, svg_path) == ARACHNE_OK);
    FUZZ_CHECK(ar_read_file(svg_path, &file, &flen) == ARACHNE_OK);
    FUZZ_CHECK(flen == need - 1 && memcmp(file, svg, flen) == 0);
    free(file);
    free(svg);
    fuzz_check_exports(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    arachne_plan *p = (arachne_plan *)1;
    char *text;
    int st;
    if (size < 1) return 0;
    text = fuzz_copy(data + 1, size - 1);
    if (!text) return 0;
    arachne_clear_error();
    st = arachne_plan_from_json(&p, cms[data[0] & 1], text, size - 1);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK_FAILURE(st);
        FUZZ_CHECK(p == NULL);
    } else {
        check_drawn(p);
        arachne_plan_destroy(p);
    }
    free(text);
    return 0;
}
