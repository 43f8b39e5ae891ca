/* test_regress.c -- inputs that once crashed, leaked, hung or misbehaved
 * (found by the fuzz targets in tests/fuzz or by review; see
 * docs/reliability.md).  Each test names the finding and the fix.  Inputs
 * are C string literals here, or small files under tests/data/regress/. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "json.h"
#include "util.h"

/* ar_read_file read /dev/zero (or any endless or huge input) until memory
 * ran out.  Fix: reads stop at AR_FILE_MAX_BYTES with ARACHNE_E_IO. */
TEST(endless_file_is_refused_not_read_forever)
{
    arachne_model *m = (arachne_model *)1;
    arachne_cluster *c = (arachne_cluster *)1;
    struct stat st;
    if (stat("/dev/zero", &st) != 0) SKIP("no /dev/zero");
    ASSERT_STATUS(arachne_model_load(&m, "/dev/zero"), ARACHNE_E_IO);
    ASSERT(m == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "/dev/zero");
    ASSERT_STATUS(arachne_cluster_load(&c, "/dev/zero"), ARACHNE_E_IO);
    ASSERT(c == NULL);
}

/* A directory given as a file: ARACHNE_E_IO with the reason. */
TEST(directory_as_input_file)
{
    arachne_model *m = (arachne_model *)1;
    const char *dir = th_tmpdir();
    ASSERT(dir != NULL);
    ASSERT_STATUS(arachne_model_load(&m, dir), ARACHNE_E_IO);
    ASSERT(m == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "Is a directory");
}

/* Writes a Sailor-format directory (profiles.json, llm_info.json) for model
 * "M": one cell (GPU "A100-40", mbs 2, tp 2) of `layers` layers and the
 * activation table at tp 1; keys in order, or reversed when `reversed`. */
static int write_sailor(const char *dir, int layers, int reversed)
{
    char path[600];
    FILE *f;
    int i;
    snprintf(path, sizeof path, "%s/profiles.json", dir);
    if (!(f = fopen(path, "wb"))) return 0;
    fputs("{\"M\": {\"A100-40\": {\"2\": {\"2\": {", f);
    for (i = 0; i < layers; i++) {
        int k = reversed ? layers - 1 - i : i;
        fprintf(f, "%s\"%d\": [%g, %g, 0]", i ? ", " : "", k, 0.001 + 1e-6 * (k % 7), 0.002 + 1e-6 * (k % 5));
    }
    fputs("}}}}}\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/llm_info.json", dir);
    if (!(f = fopen(path, "wb"))) return 0;
    fputs("{\"M\": {\"1\": {", f);
    for (i = 0; i < layers; i++) {
        int k = reversed ? layers - 1 - i : i;
        /* layer 0: sequence 2048 (ids, positions, 2048 x 2048 mask); blocks: fp32 output */
        fprintf(f, "%s\"%d\": {\"act_mem_bytes\": %d%s}", i ? ", " : "", k, 1000 + k % 3,
                k == 0 ? ", \"act_input_floats\": 4198400" : ", \"act_output_floats\": 8, \"act_output_bytes\": 32");
    }
    fputs("}}}\n", f);
    return fclose(f) == 0;
}

/* 1 when both profiles write the same JSON text. */
static int same_profile_json(const arachne_profile *a, const arachne_profile *b)
{
    size_t na = 0, nb = 0;
    char *ja, *jb;
    int same;
    if (arachne_profile_to_json(a, NULL, 0, &na) != ARACHNE_E_BUFFER_TOO_SMALL ||
        arachne_profile_to_json(b, NULL, 0, &nb) != ARACHNE_E_BUFFER_TOO_SMALL || na != nb)
        return 0;
    ja = malloc(na);
    jb = malloc(nb);
    same = ja && jb && arachne_profile_to_json(a, ja, na, NULL) == ARACHNE_OK &&
           arachne_profile_to_json(b, jb, nb, NULL) == ARACHNE_OK && strcmp(ja, jb) == 0;
    free(ja);
    free(jb);
    return same;
}

/* The Sailor importer looked every layer up by name with a linear scan:
 * O(L^2) per cell, so a 3 MB file with a 50,000-layer cell took 23 s
 * (a hang for a long-running caller).  Fix: layers are indexed once per
 * cell and the activation table once per TP degree.  Here: 4,000 layers,
 * keys in file order or reversed, must give the same table. */
TEST(sailor_import_many_layers_in_any_order)
{
    const char *d1 = th_tmpdir(), *d2 = th_tmpdir();
    arachne_profile *a = NULL, *b = NULL;
    double fwd = 0, act = 0;
    ASSERT(d1 && d2);
    ASSERT(write_sailor(d1, 4000, 0));
    ASSERT(write_sailor(d2, 4000, 1));
    ASSERT_OK(arachne_profile_import_sailor(&a, d1, "M"));
    ASSERT_OK(arachne_profile_import_sailor(&b, d2, "M"));
    ASSERT(same_profile_json(a, b));
    ASSERT_OK(arachne_profile_lookup(a, "A100-40", ARACHNE_LAYER_HEAD, 2, 2, &fwd, NULL, NULL, &act));
    ASSERT_NEAR(fwd, 0.001 + 1e-6 * (3999 % 7), 1e-12);
    /* tp 2 reads the tp 1 table scaled by 1/2, times mbs 2 */
    ASSERT_NEAR(act, (1000 + 3999 % 3) * 0.5 * 2, 1e-12);
    arachne_profile_destroy(a);
    arachne_profile_destroy(b);
}

/* Profile text with n "dense" entries (mbs 1..n), in key order or reversed. */
static char *profile_text(int n, int reversed)
{
    ar_buf b;
    int i;
    ar_buf_init(&b);
    ar_buf_puts(&b, "{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 64, \"entries\": [");
    for (i = 0; i < n; i++) {
        int mbs = reversed ? n - i : i + 1;
        ar_buf_printf(&b, "%s{\"gpu\": \"H100\", \"kind\": \"dense\", \"tp\": 1, \"mbs\": %d, \"fwd_s\": %d, "
                      "\"bwd_s\": 2, \"act_bytes\": 3}", i ? ", " : "", mbs, mbs);
    }
    ar_buf_puts(&b, "]}");
    return b.data;
}

/* The profile reader inserted each entry into the sorted table with a
 * memmove: O(n^2) for a file in reverse key order (10 MB, 100,000 entries:
 * over 100 s).  Fix: entries are read, then sorted once; the first problem
 * in file order (malformed entry or duplicate key) is still the one
 * reported.  Here: 5,000 entries either way give the same table. */
TEST(profile_entries_in_any_order)
{
    char *fwd = profile_text(5000, 0), *rev = profile_text(5000, 1);
    arachne_profile *a = NULL, *b = NULL;
    double f = 0;
    ASSERT(fwd && rev);
    ASSERT_OK(arachne_profile_from_json(&a, fwd, strlen(fwd)));
    ASSERT_OK(arachne_profile_from_json(&b, rev, strlen(rev)));
    free(fwd);
    free(rev);
    ASSERT(same_profile_json(a, b));
    ASSERT_OK(arachne_profile_lookup(b, "h100", ARACHNE_LAYER_DENSE, 1, 4321, &f, NULL, NULL, NULL));
    ASSERT_EQ(f, 4321);
    arachne_profile_destroy(a);
    arachne_profile_destroy(b);
}

/* Which error wins when a file has both a duplicate and a malformed entry:
 * the one that comes first in the file. */
TEST(profile_first_problem_in_file_order)
{
#define E(g, m, f) "{\"gpu\": \"" g "\", \"kind\": \"dense\", \"tp\": 1, \"mbs\": " m ", \"fwd_s\": " f \
                   ", \"bwd_s\": 2, \"act_bytes\": 3}"
#define DOC(entries) "{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 64, " \
                     "\"entries\": [" entries "]}"
    static const char dup_first[] = DOC(E("H100", "2", "1") ", " E("mine", "1", "1") ", " E("h100-sxm", "2", "1") ", "
                                        E("H100", "3", "-1"));
    static const char bad_first[] = DOC(E("H100", "2", "1") ", " E("H100", "3", "-1") ", " E("MINE", "1", "1") ", "
                                        E("mine", "1", "1"));
    static const char dup_case[] = DOC(E("mine", "1", "1") ", " E("H100", "1", "1") ", " E("MINE", "1", "1"));
    arachne_profile *p = (arachne_profile *)1;
    ASSERT_STATUS(arachne_profile_from_json(&p, dup_first, sizeof dup_first - 1), ARACHNE_E_PARSE);
    ASSERT(p == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "entries[2]: duplicate entry h100-sxm dense tp 1 mbs 2");
    ASSERT_STATUS(arachne_profile_from_json(&p, bad_first, sizeof bad_first - 1), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "entries[1]");
    ASSERT_CONTAINS(arachne_last_error(), "fwd_s");
    ASSERT_STATUS(arachne_profile_from_json(&p, dup_case, sizeof dup_case - 1), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "entries[2]: duplicate entry MINE dense tp 1 mbs 1");
#undef E
#undef DOC
}

/* Runs a saved fuzz input of the plan target (first byte: cost model
 * selector, even = llama3-8b on "a100-40:2x4,h100:1x8", 4096 tokens, global
 * batch 64, ZeRO-1) through arachne_plan_from_json; returns the status, or
 * 1 when the setup failed (reported), 2 when the file is missing. */
static int run_plan_input(const char *path)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *pr = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *plan = (arachne_plan *)1;
    char *text = NULL;
    size_t len = 0;
    int st;
    if (ar_read_file(path, &text, &len) != ARACHNE_OK || len < 1) { free(text); return 2; }
    if (arachne_model_preset(&m, "llama3-8b") || arachne_cluster_parse(&c, "a100-40:2x4,h100:1x8") ||
        arachne_profile_generate(&pr, m, c, 4096) || arachne_cost_model_create(&cm, m, c, pr) ||
        arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, 64) ||
        arachne_cost_model_set(cm, ARACHNE_OPT_DIST_OPTIMIZER, 1)) {
        th_fail(__FILE__, __LINE__, "setup: %s", arachne_last_error());
        st = 1;
    } else {
        arachne_clear_error();
        st = arachne_plan_from_json(&plan, cm, text + 1, len - 1);
        if (st != ARACHNE_OK && plan != NULL) th_fail(__FILE__, __LINE__, "failed load left *out set");
        if (st == ARACHNE_OK) arachne_plan_destroy(plan);
    }
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(pr);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
    free(text);
    return st;
}

/* Found by fuzz_plan: a stage's "layers" end of 3.6e99 was converted to
 * long before the range check (undefined behaviour; UBSan aborts under
 * make check-asan).  Fix: range check first. */
TEST(plan_layers_out_of_long_range)
{
    int st = run_plan_input("tests/data/regress/plan-layers-out-of-range.fuzz");
    if (st == 2) SKIP("tests/data/regress/plan-layers-out-of-range.fuzz not found (run from the repository root)");
    if (st == 1) return;
    ASSERT_EQ(st, ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "layers: expected [first, end]");
}

SUITE(regress, T(endless_file_is_refused_not_read_forever), T(directory_as_input_file),
      T(sailor_import_many_layers_in_any_order), T(profile_entries_in_any_order),
      T(profile_first_problem_in_file_order), T(plan_layers_out_of_long_range));
