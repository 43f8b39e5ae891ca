/* test_profile.c -- profile table, JSON format, Sailor importer, generator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "harness.h"
#include "model.h"
#include "profile.h"

static char *to_json(const arachne_profile *p)
{
    size_t need = 0;
    char *buf;
    if (arachne_profile_to_json(p, NULL, 0, &need) != ARACHNE_E_BUFFER_TOO_SMALL || need == 0) return NULL;
    buf = malloc(need);
    if (buf && arachne_profile_to_json(p, buf, need, NULL) != ARACHNE_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

TEST(add_lookup_exact_keys)
{
    arachne_profile *p = NULL;
    double f = -1, b = -1, c = -1, a = -1;
    int n = -1;
    ASSERT_OK(arachne_profile_create(&p, "toy", 4096));
    ASSERT_OK(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 2, 4, 1e-3, 2e-3, 3e-4, 5e8));
    ASSERT_OK(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 1, 4, 2e-3, 4e-3, 0, 9e8));
    ASSERT_OK(arachne_profile_add(p, "A6000", ARACHNE_LAYER_HEAD, 1, 1, 5e-3, 6e-3, 0, 1e9));
    ASSERT_OK(arachne_profile_count(p, &n));
    ASSERT_EQ(n, 3);
    ASSERT_OK(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_DENSE, 2, 4, &f, &b, &c, &a));
    ASSERT(f == 1e-3 && b == 2e-3 && c == 3e-4 && a == 5e8);
    ASSERT_OK(arachne_profile_lookup(p, "h100", ARACHNE_LAYER_DENSE, 1, 4, &f, NULL, NULL, NULL));
    ASSERT(f == 2e-3);
    /* exact match only: neighbours are not interpolated */
    ASSERT_STATUS(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_DENSE, 2, 8, &f, &b, &c, &a), ARACHNE_E_NOT_FOUND);
    ASSERT_CONTAINS(arachne_last_error(), "H100 dense tp 2 mbs 8");
    ASSERT_STATUS(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_MOE, 2, 4, NULL, NULL, NULL, NULL),
                  ARACHNE_E_NOT_FOUND);
    ASSERT_STATUS(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_HEAD, 1, 1, NULL, NULL, NULL, NULL),
                  ARACHNE_E_NOT_FOUND);
    ASSERT(ar_profile_find(p, "A6000", AR_LAYER_HEAD, 1, 1) != NULL);
    ASSERT(ar_profile_find(p, "A6000", AR_LAYER_HEAD, 1, 2) == NULL);
    ASSERT_STATUS(arachne_profile_lookup(NULL, "H100", 1, 1, 1, NULL, NULL, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    arachne_profile_destroy(p);
    arachne_profile_destroy(NULL);
}

TEST(duplicate_add_replaces)
{
    arachne_profile *p = NULL;
    double f = 0;
    int n = 0;
    ASSERT_OK(arachne_profile_create(&p, "toy", 2048));
    ASSERT_OK(arachne_profile_add(p, "A100-40", ARACHNE_LAYER_EMBED, 1, 1, 1.0, 1.0, 0, 1));
    ASSERT_OK(arachne_profile_add(p, "a100-40gb", ARACHNE_LAYER_EMBED, 1, 1, 2.0, 1.0, 0, 1)); /* alias, same key */
    ASSERT_OK(arachne_profile_count(p, &n));
    ASSERT_EQ(n, 1);
    ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_EMBED, 1, 1, &f, NULL, NULL, NULL));
    ASSERT(f == 2.0);
    ASSERT_OK(arachne_profile_lookup(p, "a100_40", ARACHNE_LAYER_EMBED, 1, 1, &f, NULL, NULL, NULL));
    ASSERT(f == 2.0);
    arachne_profile_destroy(p);
}

TEST(add_rejects_bad_entries)
{
    arachne_profile *p = NULL;
    int n = -1;
    ASSERT_STATUS(arachne_profile_create(&p, "", 2048), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(p == NULL);
    ASSERT_STATUS(arachne_profile_create(&p, "toy", 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_profile_create(&p, "toy", 2048));
    ASSERT_STATUS(arachne_profile_add(p, "H100", 1, 1, 1, -1e-3, 1, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "H100 dense tp 1 mbs 1");
    ASSERT_CONTAINS(arachne_last_error(), "fwd_s");
    ASSERT_STATUS(arachne_profile_add(p, "H100", 1, 1, 1, 1, NAN, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "bwd_s");
    ASSERT_STATUS(arachne_profile_add(p, "H100", 1, 1, 1, 1, 1, INFINITY, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_profile_add(p, "H100", 1, 1, 1, 1, 1, 0, -5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "act_bytes");
    ASSERT_STATUS(arachne_profile_add(p, "H100", 8, 1, 1, 1, 1, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_profile_add(p, "H100", -1, 1, 1, 1, 1, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_profile_add(p, "H100", 1, 0, 1, 1, 1, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_profile_add(p, "H100", 1, 3, 1, 1, 1, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "power of two");
    ASSERT_STATUS(arachne_profile_add(p, "H100", 1, 1, 0, 1, 1, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_profile_add(p, "", 1, 1, 1, 1, 1, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_profile_add(p, "A-GPU-NAME-THAT-IS-FAR-TOO-LONG-TO-STORE", 1, 1, 1, 1, 1, 0, 1),
                  ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_profile_count(p, &n));
    ASSERT_EQ(n, 0);
    arachne_profile_destroy(p);
}

TEST(many_entries_stay_sorted)
{
    arachne_profile *p = NULL;
    const char *g = NULL;
    int i, n, kind, tp, mbs, pk = -1, ptp = -1, pm = -1;
    double f;
    ASSERT_OK(arachne_profile_create(&p, "toy", 2048));
    for (i = 0; i < 300; i++) { /* insert in a scrambled order */
        int j = (i * 97) % 300;
        ASSERT_OK(arachne_profile_add(p, j % 2 ? "H100" : "A6000", j % 4, 1 << (j % 3), 1 + j / 12, j + 1, j + 1, 0, j));
    }
    ASSERT_OK(arachne_profile_count(p, &n));
    ASSERT_EQ(n, 300);
    for (i = 0; i < 300; i++) {
        ASSERT_OK(arachne_profile_lookup(p, i % 2 ? "H100" : "A6000", i % 4, 1 << (i % 3), 1 + i / 12, &f, NULL,
                                         NULL, NULL));
        ASSERT(f == i + 1);
    }
    for (i = 0; i < n; i++) {
        ASSERT_OK(arachne_profile_entry(p, i, &g, &kind, &tp, &mbs, NULL, NULL, NULL, NULL));
        if (i == 150) ASSERT_STR(g, "H100");
        if (i > 0 && i != 150)
            ASSERT(kind > pk || (kind == pk && (tp > ptp || (tp == ptp && mbs > pm))));
        pk = kind; ptp = tp; pm = mbs;
    }
    ASSERT_STATUS(arachne_profile_entry(p, n, &g, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                  ARACHNE_E_INVALID_ARGUMENT);
    arachne_profile_destroy(p);
}

TEST(json_round_trip_is_exact)
{
    arachne_profile *p = NULL, *q = NULL, *r = NULL;
    char *a, *b, path[512], small[16];
    size_t need = 0;
    int n = 0, seq = 0;
    const char *name;
    ASSERT_OK(arachne_profile_create(&p, "toy \"quoted\"", 8192));
    ASSERT_OK(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 8, 32, 0.1 + 0.2, 1.0 / 3.0, 1e-300, 123456789.0));
    ASSERT_OK(arachne_profile_add(p, "A6000", ARACHNE_LAYER_MOE, 1, 1, 2.5e-9, 5e-7, 0, 0));
    a = to_json(p);
    ASSERT(a != NULL);
    ASSERT_CONTAINS(a, "\"format\": \"arachne-profile\"");
    ASSERT_CONTAINS(a, "\"kind\": \"moe\"");
    ASSERT_OK(arachne_profile_from_json(&q, a, strlen(a)));
    b = to_json(q);
    ASSERT(b != NULL);
    ASSERT_STR(a, b);
    ASSERT_OK(arachne_profile_model_name(q, &name));
    ASSERT_STR(name, "toy \"quoted\"");
    ASSERT_OK(arachne_profile_seq_len(q, &seq));
    ASSERT_EQ(seq, 8192);
    ASSERT_STATUS(arachne_profile_to_json(p, small, sizeof small, &need), ARACHNE_E_BUFFER_TOO_SMALL);
    ASSERT_EQ(need, strlen(a) + 1);
    snprintf(path, sizeof path, "%s/p.json", th_tmpdir());
    ASSERT_OK(arachne_profile_save(p, path));
    ASSERT_OK(arachne_profile_load(&r, path));
    ASSERT_OK(arachne_profile_count(r, &n));
    ASSERT_EQ(n, 2);
    free(b);
    b = to_json(r);
    ASSERT_STR(a, b);
    free(a);
    free(b);
    arachne_profile_destroy(p);
    arachne_profile_destroy(q);
    arachne_profile_destroy(r);
}

#define HDR "{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 2048, \"entries\": ["
#define ENT(kind, tp, mbs, f) "{\"gpu\": \"H100\", \"kind\": " kind ", \"tp\": " tp ", \"mbs\": " mbs \
    ", \"fwd_s\": " f ", \"bwd_s\": 0.002, \"tp_comm_s\": 0, \"act_bytes\": 1000}"

static int parse(const char *s, arachne_profile **p)
{
    return arachne_profile_from_json(p, s, strlen(s));
}

TEST(json_bad_input_is_rejected_with_position)
{
    arachne_profile *p = NULL;
    char path[512];
    ASSERT_OK(parse(HDR ENT("\"dense\"", "1", "1", "0.001") "]}", &p));
    arachne_profile_destroy(p);
    p = NULL;
    ASSERT_STATUS(parse(HDR ENT("\"dense\"", "1", "1", "-0.001") "]}", &p), ARACHNE_E_PARSE);
    ASSERT(p == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "fwd_s");
    ASSERT_CONTAINS(arachne_last_error(), "entries[0]");
    ASSERT_CONTAINS(arachne_last_error(), "<profile>:1:");
    ASSERT_STATUS(parse(HDR ENT("\"swiglu\"", "1", "1", "0.001") "]}", &p), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "unknown kind 'swiglu'");
    ASSERT_STATUS(parse(HDR ENT("1", "1", "1", "0.001") "]}", &p), ARACHNE_E_PARSE);
    ASSERT_STATUS(parse(HDR ENT("\"dense\"", "0", "1", "0.001") "]}", &p), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "tp");
    ASSERT_STATUS(parse(HDR ENT("\"dense\"", "3", "1", "0.001") "]}", &p), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "power of two");
    ASSERT_STATUS(parse(HDR ENT("\"dense\"", "1", "2.5", "0.001") "]}", &p), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "mbs");
    ASSERT_STATUS(parse(HDR ENT("\"dense\"", "1", "\"4\"", "0.001") "]}", &p), ARACHNE_E_PARSE);
    ASSERT_STATUS(parse(HDR ENT("\"dense\"", "1", "1", "0.001") "," ENT("\"dense\"", "1", "1", "0.002") "]}", &p),
                  ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "duplicate");
    ASSERT_STATUS(parse(HDR ENT("\"dense\"", "1", "1", "0.001"), &p), ARACHNE_E_PARSE); /* truncated */
    ASSERT_STATUS(parse("{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\"", &p),
                  ARACHNE_E_PARSE);
    ASSERT_STATUS(parse("", &p), ARACHNE_E_PARSE);
    ASSERT_STATUS(parse("{\"format\": \"arachne-profile\", \"version\": 2, \"model\": \"m\", \"seq_len\": 1, "
                        "\"entries\": []}", &p), ARACHNE_E_UNSUPPORTED);
    ASSERT_STATUS(parse("{\"format\": \"arachne-plan\", \"version\": 1, \"model\": \"m\", \"seq_len\": 1, "
                        "\"entries\": []}", &p), ARACHNE_E_PARSE);
    ASSERT_STATUS(parse("{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 1, "
                        "\"entries\": [], \"extra\": 1}", &p), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "extra");
    ASSERT_STATUS(parse("{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 0, "
                        "\"entries\": []}", &p), ARACHNE_E_PARSE);
    ASSERT_STATUS(parse(HDR "{\"gpu\": \"H100\", \"kind\": \"dense\", \"tp\": 1, \"mbs\": 1, \"fwd_s\": 1, "
                        "\"bwd_s\": 1, \"act_bytes\": 1, \"typo\": 1}]}", &p), ARACHNE_E_PARSE);
    ASSERT_STATUS(arachne_profile_from_json(&p, NULL, 0), ARACHNE_E_INVALID_ARGUMENT);
    snprintf(path, sizeof path, "%s/missing.json", th_tmpdir());
    ASSERT_STATUS(arachne_profile_load(&p, path), ARACHNE_E_IO);
    ASSERT_CONTAINS(arachne_last_error(), "missing.json");
    snprintf(path, sizeof path, "%s/bad.json", th_tmpdir());
    write_text(path, HDR ENT("\"dense\"", "1", "1", "0.001") ",\n" ENT("\"dense\"", "1", "1", "-1") "]}");
    ASSERT_STATUS(arachne_profile_load(&p, path), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "bad.json:2:");
    ASSERT(p == NULL);
}

TEST(sailor_import_all_models)
{
    const char *dir = th_sailor_dir();
    const char *names[3] = { "GPT-Neo-2.7", "OPT-350", "OPT-30" };
    arachne_profile *p = NULL;
    double f = 0, b = 0, c = -1, a = 0;
    int i, n = 0, seq = 0;
    if (!dir) SKIP("measured Sailor profiles not available");
    for (i = 0; i < 3; i++) {
        ASSERT_OK(arachne_profile_import_sailor(&p, dir, names[i]));
        ASSERT_OK(arachne_profile_count(p, &n));
        ASSERT(n > 30);
        ASSERT_OK(arachne_profile_seq_len(p, &seq));
        ASSERT_EQ(seq, 2048);
        arachne_profile_destroy(p);
        p = NULL;
    }
    /* OPT-30 on A100-40, mbs 1, tp 1: every block measured 0.145 s / 0.2961 s */
    ASSERT_OK(arachne_profile_import_sailor(&p, dir, "OPT-30"));
    ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_DENSE, 1, 1, &f, &b, &c, &a));
    ASSERT(f == 0.145 && b == 0.2961 && c == 0.0);
    /* its tp 7 cells are not TP degrees we plan: skipped */
    ASSERT_STATUS(arachne_profile_lookup(p, "V100-16", ARACHNE_LAYER_DENSE, 7, 1, NULL, NULL, NULL, NULL),
                  ARACHNE_E_NOT_FOUND);
    /* tp 8 has no activation sizes in llm_info: tp 4 scaled by 4/8 */
    ASSERT_OK(arachne_profile_lookup(p, "V100-16", ARACHNE_LAYER_DENSE, 8, 2, NULL, NULL, NULL, &a));
    ASSERT(a == 528498688.0 * 2 * 4 / 8);
    arachne_profile_destroy(p);
    p = NULL;
    /* OPT-350 on A100-40, mbs 1, tp 1: embedding and head are single layers */
    ASSERT_OK(arachne_profile_import_sailor(&p, dir, "OPT-350"));
    ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_EMBED, 1, 1, &f, &b, &c, &a));
    ASSERT(f == 0.0004 && b == 3e-06 && a == 8388608.0);
    ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_HEAD, 1, 1, &f, &b, NULL, NULL));
    ASSERT(f == 0.004508 && b == 0.003989);
    /* activation bytes: llm_info tp 2 block, scaled to mbs 4 */
    ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_DENSE, 2, 4, NULL, NULL, NULL, &a));
    ASSERT(a == 192954368.0 * 4);
    /* V100-16 never measured mbs 8 at tp 1 (out of memory): missing */
    ASSERT_STATUS(arachne_profile_lookup(p, "V100-16", ARACHNE_LAYER_DENSE, 1, 8, NULL, NULL, NULL, NULL),
                  ARACHNE_E_NOT_FOUND);
    arachne_profile_destroy(p);
    p = NULL;
    ASSERT_OK(arachne_profile_import_sailor(&p, dir, "GPT-Neo-2.7"));
    /* measured in FP32, activations without recomputation: recorded */
    ASSERT_EQ(p->precision, AR_PREC_FP32);
    ASSERT_EQ(p->act_recompute, AR_RECOMPUTE_NONE);
    ASSERT_NEAR(ar_profile_elt_bytes(p), 4.0, 0);
    /* its layer 33 (the final norm, 5,120 parameters) is the head: A100-40 mbs 1 tp 1 */
    ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_HEAD, 1, 1, &f, &b, NULL, &a));
    ASSERT(f == 0.00021 && b == 0.000522 && a == 41970688.0);
    ASSERT_STATUS(arachne_profile_lookup(p, "V100-16", ARACHNE_LAYER_DENSE, 1, 8, NULL, NULL, NULL, NULL),
                  ARACHNE_E_NOT_FOUND);
    ASSERT_OK(arachne_profile_lookup(p, "V100-16", ARACHNE_LAYER_DENSE, 2, 8, NULL, NULL, NULL, NULL));
    arachne_profile_destroy(p);
    p = NULL;
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "GPT-7"), ARACHNE_E_NOT_FOUND);
    ASSERT_CONTAINS(arachne_last_error(), "GPT-7");
    ASSERT(p == NULL);
}

TEST(sailor_import_bad_input)
{
    const char *dir = th_tmpdir();
    char path[512];
    arachne_profile *p = NULL;
    snprintf(path, sizeof path, "%s/nope", dir);
    ASSERT_STATUS(arachne_profile_import_sailor(&p, path, "OPT-350"), ARACHNE_E_IO);
    ASSERT_CONTAINS(arachne_last_error(), "profiles.json");
    snprintf(path, sizeof path, "%s/llm_info.json", dir);
    write_text(path, "{\"M\": {\"1\": {\"0\": {\"act_mem_bytes\": 10, \"act_input_floats\": 24}, "
                     "\"1\": {\"act_mem_bytes\": 20, \"act_output_floats\": 8, \"act_output_bytes\": 32}, "
                     "\"2\": {\"act_mem_bytes\": 30}}}}");
    snprintf(path, sizeof path, "%s/profiles.json", dir);
    write_text(path, "{\"M\": {\"A100-40\": {\"1\": {\"1\": {\"0\": [1, 2, 3], \"1\": [4, 5, 6], \"2\": [7, 8, 9]}}}}}");
    ASSERT_OK(arachne_profile_import_sailor(&p, dir, "M"));
    arachne_profile_destroy(p);
    p = NULL;
    write_text(path, "{\"M\": {\"A100-40\": {\"1\": {\"1\": {\"0\": [1, 2, 3], \"1\": [4, 5, 6], \"2\": [7, 8");
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "M"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "profiles.json:1:");
    write_text(path, "{\"M\": {\"A100-40\": {\"x\": {\"1\": {\"0\": [1, 2, 3], \"1\": [4, 5, 6], \"2\": [7, 8, 9]}}}}}");
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "M"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "[\"M\"][\"A100-40\"][\"x\"]");
    write_text(path, "{\"M\": {\"A100-40\": {\"1\": {\"1\": {\"0\": [1, 2, 3], \"1\": [-4, 5, 6], \"2\": [7, 8, 9]}}}}}");
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "M"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "[\"M\"][\"A100-40\"][\"1\"][\"1\"][\"1\"][0]");
    write_text(path, "{\"M\": {\"A100-40\": {\"1\": {\"1\": {\"0\": [1, 2, 3], \"5\": [4, 5, 6], \"2\": [7, 8, 9]}}}}}");
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "M"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "missing layer \"1\"");
    ASSERT(p == NULL);
}

/* Writes llm_info.json (tp 1 table) and profiles.json (A100-40, mbs 2, tp 1)
 * for model "M": layer i has parameter count params[i], times (i+1) ms fwd,
 * 2(i+1) ms bwd, activation bytes 100(i+1); layer 0 says sequence `seq`
 * (-1: no input sizes), block outputs are `elt`-byte elements. */
static void write_sailor_dir(const char *dir, int n, const long *params, long seq, int elt)
{
    char path[512], buf[8192];
    size_t o = 0;
    int i;
    o += (size_t)snprintf(buf + o, sizeof buf - o, "{\"M\": {\"1\": {");
    for (i = 0; i < n; i++) {
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s\"%d\": {\"params_floats\": %ld, \"act_mem_bytes\": %d", i ? ", " : "",
                              i, params[i], 100 * (i + 1));
        if (i == 0 && seq > 0)
            o += (size_t)snprintf(buf + o, sizeof buf - o, ", \"act_input_floats\": %ld, \"act_input_bytes\": %ld",
                                  seq * seq + 2 * seq, seq * seq + 16 * seq);
        if (i > 0) o += (size_t)snprintf(buf + o, sizeof buf - o, ", \"act_output_floats\": 64, \"act_output_bytes\": %d", 64 * elt);
        o += (size_t)snprintf(buf + o, sizeof buf - o, "}");
    }
    snprintf(buf + o, sizeof buf - o, "}}}");
    snprintf(path, sizeof path, "%s/llm_info.json", dir);
    write_text(path, buf);
    o = (size_t)snprintf(buf, sizeof buf, "{\"M\": {\"A100-40\": {\"2\": {\"1\": {");
    for (i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s\"%d\": [%g, %g, 0]", i ? ", " : "", i, 1e-3 * (i + 1),
                              2e-3 * (i + 1));
    snprintf(buf + o, sizeof buf - o, "}}}}}");
    snprintf(path, sizeof path, "%s/profiles.json", dir);
    write_text(path, buf);
}

/* Embedding, 3 blocks, a final-norm layer and a head layer: the norm folds
 * into the head (times and bytes added), never into the blocks. */
TEST(sailor_final_norm_folds_into_the_head)
{
    const char *dir = th_tmpdir();
    static const long params[6] = { 5000, 900, 900, 900, 8, 5000 };
    arachne_profile *p = NULL;
    double f = 0, b = 0, a = 0;
    int seq = 0;
    write_sailor_dir(dir, 6, params, 256, 4);
    ASSERT_OK(arachne_profile_import_sailor(&p, dir, "M"));
    ASSERT_OK(arachne_profile_seq_len(p, &seq));
    ASSERT_EQ(seq, 256);
    ASSERT_EQ(p->precision, AR_PREC_FP32);
    ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_HEAD, 1, 2, &f, &b, NULL, &a));
    ASSERT_NEAR(f, 5e-3 + 6e-3, 1e-15);
    ASSERT_NEAR(b, 10e-3 + 12e-3, 1e-15);
    ASSERT_NEAR(a, (500.0 + 600.0) * 2, 0); /* mbs 2 */
    ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_DENSE, 1, 2, &f, &b, NULL, &a));
    ASSERT_NEAR(f, 3e-3, 1e-15); /* median of blocks 1..3 */
    ASSERT_NEAR(a, 300.0 * 2, 0);
    arachne_profile_destroy(p);
    p = NULL;
    /* without parameter counts the last layer alone is the head (L+2 layout) */
    {
        static const long none[4] = { 0, 0, 0, 0 };
        write_sailor_dir(dir, 4, none, 64, 2);
        ASSERT_OK(arachne_profile_import_sailor(&p, dir, "M"));
        ASSERT_EQ(p->precision, AR_PREC_FP16);
        ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_HEAD, 1, 2, &f, NULL, NULL, NULL));
        ASSERT_NEAR(f, 4e-3, 1e-15);
        ASSERT_OK(arachne_profile_lookup(p, "A100-40", ARACHNE_LAYER_DENSE, 1, 2, &f, NULL, NULL, NULL));
        ASSERT_NEAR(f, 2.5e-3, 1e-15);
        arachne_profile_destroy(p);
        p = NULL;
    }
}

/* The sequence length comes from llm_info or the import is refused; a
 * training config that names the model must agree with it. */
TEST(sailor_sequence_length_from_llm_info)
{
    const char *dir = th_tmpdir();
    static const long params[4] = { 50, 9, 9, 50 };
    char path[512];
    arachne_profile *p = NULL;
    write_sailor_dir(dir, 4, params, -1, 4);
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "M"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "sequence length cannot be derived");
    ASSERT_CONTAINS(arachne_last_error(), "llm_info.json");
    ASSERT(p == NULL);
    write_sailor_dir(dir, 4, params, 128, 3); /* 3-byte elements: no data type */
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "M"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "cannot tell the data type");
    write_sailor_dir(dir, 4, params, 128, 4);
    snprintf(path, sizeof path, "%s/training_config_m.json", dir);
    write_text(path, "{\"model\": \"M\", \"sequence_length\": 2048, \"num_layers\": 2}");
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "M"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "sequence_length 2048");
    ASSERT(p == NULL);
    write_text(path, "{\"model\": \"M\", \"sequence_length\": 128, \"num_layers\": 3}");
    ASSERT_STATUS(arachne_profile_import_sailor(&p, dir, "M"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "2 blocks");
    write_text(path, "{\"model\": \"M\", \"sequence_length\": 128, \"num_layers\": 2}");
    ASSERT_OK(arachne_profile_import_sailor(&p, dir, "M"));
    arachne_profile_destroy(p);
}

/* "precision" and "act_recompute" are saved, loaded, and default to bf16 /
 * selective in files written before them; the conversion helper. */
TEST(profile_precision_fields)
{
    arachne_profile *p = NULL, *q = NULL;
    char buf[2048];
    const ar_profile_entry *e;
    arachne_model *m = NULL;
    ASSERT_OK(parse(HDR ENT("\"dense\"", "1", "1", "0.001") "]}", &p));
    ASSERT_EQ(p->precision, AR_PREC_BF16);
    ASSERT_EQ(p->act_recompute, AR_RECOMPUTE_SELECTIVE);
    ASSERT_OK(arachne_profile_to_json(p, buf, sizeof buf, NULL));
    ASSERT(strstr(buf, "precision") == NULL && strstr(buf, "act_recompute") == NULL); /* old bytes kept */
    p->precision = AR_PREC_FP32;
    p->act_recompute = AR_RECOMPUTE_NONE;
    ASSERT_OK(arachne_profile_to_json(p, buf, sizeof buf, NULL));
    ASSERT_CONTAINS(buf, "\"precision\": \"fp32\"");
    ASSERT_CONTAINS(buf, "\"act_recompute\": \"none\"");
    ASSERT_OK(arachne_profile_from_json(&q, buf, strlen(buf)));
    ASSERT_EQ(q->precision, AR_PREC_FP32);
    ASSERT_EQ(q->act_recompute, AR_RECOMPUTE_NONE);
    arachne_profile_destroy(q);
    q = NULL;
    /* conversion: fp32 no-recompute bytes -> 16-bit selective: /2, then the model's ratio */
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    e = ar_profile_find(p, "H100", AR_LAYER_DENSE, 1, 1);
    ASSERT(e != NULL);
    ASSERT_NEAR(ar_profile_act_bytes_as(p, e, m, 4096, AR_RECOMPUTE_NONE), e->act_bytes / 2, 1e-12);
    ASSERT_NEAR(ar_profile_act_bytes_as(p, e, m, 4096, AR_RECOMPUTE_SELECTIVE),
                e->act_bytes / 2 * ar_model_act_bytes(m, AR_LAYER_DENSE, 4096, 1, 1, AR_RECOMPUTE_SELECTIVE) /
                    ar_model_act_bytes(m, AR_LAYER_DENSE, 4096, 1, 1, AR_RECOMPUTE_NONE), 1e-12);
    p->precision = AR_PREC_BF16;
    p->act_recompute = AR_RECOMPUTE_SELECTIVE;
    ASSERT_NEAR(ar_profile_act_bytes_as(p, e, m, 4096, AR_RECOMPUTE_SELECTIVE), e->act_bytes, 0);
    arachne_model_destroy(m);
    ASSERT_STR(ar_precision_name(AR_PREC_FP16), "fp16");
    ASSERT_EQ(ar_precision_from_name("fp32"), AR_PREC_FP32);
    ASSERT_EQ(ar_precision_from_name("FP32"), -1);
    ASSERT_EQ(ar_recompute_from_name("full"), AR_RECOMPUTE_FULL);
    ASSERT_STATUS(parse("{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 8, "
                        "\"precision\": \"fp8\", \"entries\": []}", &q), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "precision 'fp8'");
    ASSERT_STATUS(parse("{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 8, "
                        "\"act_recompute\": 1, \"entries\": []}", &q), ARACHNE_E_PARSE);
    arachne_profile_destroy(p);
}

/* A small cluster built with the cluster API. */
static arachne_cluster *three_types(void)
{
    arachne_cluster *c = NULL;
    if (arachne_cluster_parse(&c, "h100:2x8,a100-40:2x4,a6000:1x4+2x2") != ARACHNE_OK) return NULL;
    return c;
}

TEST(generator_covers_every_key)
{
    arachne_model *m = NULL;
    arachne_cluster *c = three_types();
    arachne_profile *p = NULL;
    const char *types[3] = { "H100", "A100-40", "A6000" };
    int maxtp[3] = { 8, 4, 4 }, t, kind, tp, mbs, n = 0, want = 0;
    ASSERT(c != NULL);
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ASSERT_OK(arachne_profile_generate(&p, m, c, 4096));
    for (t = 0; t < 3; t++)
        for (kind = 0; kind < 4; kind++)
            for (tp = 1; tp <= 8; tp *= 2)
                for (mbs = 1; mbs <= 32; mbs *= 2) {
                    double f = 0, b = 0, cm = -1, a = 0;
                    int st = arachne_profile_lookup(p, types[t], kind, tp, mbs, &f, &b, &cm, &a);
                    if (kind == ARACHNE_LAYER_MOE || tp > maxtp[t]) {
                        ASSERT_EQ(st, ARACHNE_E_NOT_FOUND);
                        continue;
                    }
                    want++;
                    ASSERT_OK(st);
                    ASSERT(f > 0 && b > 0 && a > 0 && isfinite(f + b + cm + a));
                    if (tp == 1) ASSERT(cm == 0.0);
                    else ASSERT(cm > 0.0);
                    ASSERT(a == ar_model_act_bytes(m, kind, 4096, mbs, tp, AR_RECOMPUTE_SELECTIVE));
                }
    ASSERT_OK(arachne_profile_count(p, &n));
    ASSERT_EQ(n, want);
    arachne_profile_destroy(p);
    arachne_model_destroy(m);
    arachne_cluster_destroy(c);
}

TEST(generator_is_monotone_and_orders_gpus)
{
    arachne_model *m = NULL;
    arachne_cluster *c = three_types();
    arachne_profile *p = NULL;
    const char *types[3] = { "H100", "A100-40", "A6000" };
    double prev_gpu = 0;
    int t, kind, tp, mbs;
    ASSERT(c != NULL);
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ASSERT_OK(arachne_profile_generate(&p, m, c, 4096));
    for (t = 0; t < 3; t++) {
        double f, b, cm;
        for (kind = 0; kind < 4; kind++) {
            if (kind == ARACHNE_LAYER_MOE) continue;
            for (tp = 1; tp <= 4; tp *= 2) {
                double pf = 0, pb = 0, pc = 0;
                for (mbs = 1; mbs <= 32; mbs *= 2) {
                    ASSERT_OK(arachne_profile_lookup(p, types[t], kind, tp, mbs, &f, &b, &cm, NULL));
                    ASSERT_GT(f, pf);
                    ASSERT_GT(b, pb);
                    if (tp > 1) ASSERT_GT(cm, pc);
                    pf = f; pb = b; pc = cm;
                }
            }
        }
        /* H100 faster than A100-40 faster than A6000 (dense block, tp 1, mbs 4) */
        ASSERT_OK(arachne_profile_lookup(p, types[t], ARACHNE_LAYER_DENSE, 1, 4, &f, &b, NULL, NULL));
        if (t > 0) ASSERT_GT(f + b, prev_gpu);
        prev_gpu = f + b;
    }
    arachne_profile_destroy(p);
    arachne_model_destroy(m);
    arachne_cluster_destroy(c);
}

TEST(generator_moe_and_determinism)
{
    arachne_model *m = NULL;
    arachne_cluster *c = three_types();
    arachne_profile *p = NULL, *q = NULL;
    double f1, f8, d;
    char *a, *b;
    int n0 = 0, n1 = 0;
    ASSERT(c != NULL);
    ASSERT_OK(arachne_model_preset(&m, "qwen3-30b-a3b"));
    ASSERT_OK(arachne_profile_generate(&p, m, c, 4096));
    ASSERT_OK(arachne_profile_generate(&q, m, c, 4096));
    ASSERT_OK(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_MOE, 1, 1, &f1, NULL, NULL, NULL));
    ASSERT_OK(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_MOE, 8, 1, &f8, NULL, NULL, NULL));
    ASSERT_GT(f1, f8);
    ASSERT_STATUS(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_DENSE, 1, 1, &d, NULL, NULL, NULL),
                  ARACHNE_E_NOT_FOUND); /* qwen3-30b-a3b has no dense block */
    a = to_json(p);
    b = to_json(q);
    ASSERT(a && b);
    ASSERT_STR(a, b);
    free(a);
    free(b);
    /* generate_gpu tops up one type; unknown types are refused */
    arachne_profile_destroy(q);
    ASSERT_OK(arachne_profile_create(&q, "qwen3-30b-a3b", 4096));
    ASSERT_OK(arachne_profile_generate_gpu(q, m, c, "a100_40"));
    ASSERT_OK(arachne_profile_count(q, &n0));
    ASSERT_EQ(n0, 3 * 3 * 6); /* embed, moe, head x tp 1,2,4 x 6 mbs */
    ASSERT_OK(arachne_profile_generate_gpu(q, m, c, "A100-40"));
    ASSERT_OK(arachne_profile_count(q, &n1));
    ASSERT_EQ(n1, n0);
    ASSERT_STATUS(arachne_profile_generate_gpu(q, m, c, "L40S"), ARACHNE_E_NOT_FOUND);
    arachne_profile_destroy(p);
    ASSERT_STATUS(arachne_profile_generate(&p, NULL, c, 4096), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(p == NULL);
    arachne_profile_destroy(q);
    arachne_model_destroy(m);
    arachne_cluster_destroy(c);
}

/* Eager element-wise ops (no torch.compile) move more bytes than the fused
 * kernels: per token of a Llama block 2 x 16 h (fp32 RMSNorms), 8 (H + KV) d
 * (rotary embedding through fp32 complex numbers), 2 ffn (silu, then multiply)
 * 16-bit elements more, at the generator's HBM pace; backward pays
 * mem_bwd_ratio times that.  GEMMs and attention are unchanged. */
TEST(generator_eager_elementwise_adds_the_counted_passes)
{
    arachne_model *m = NULL;
    const ar_gpu_spec *g = ar_gpu_catalog_find("H100");
    ar_gen_opts o;
    ar_profile_entry fused, eager;
    double T = 4096.0, h = 4096.0, extra, s;
    ASSERT(g != NULL);
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ar_gen_default_opts(&o);
    ASSERT_OK(ar_profile_gen_entry(m, g, AR_LAYER_DENSE, 1, 1, 4096, NULL, &o, &fused));
    o.eager_elementwise = 1;
    ASSERT_OK(ar_profile_gen_entry(m, g, AR_LAYER_DENSE, 1, 1, 4096, NULL, &o, &eager));
    extra = 2.0 * 16.0 * T * h + 8.0 * T * (32 + 8) * 128 + 2.0 * T * 14336;
    s = extra * 2.0 / (g->hbm_bw * ar_gen_default_consts.hbm_eff);
    ASSERT_NEAR(eager.fwd_s - fused.fwd_s, s, 1e-9);
    ASSERT_NEAR(eager.bwd_s - fused.bwd_s, ar_gen_default_consts.mem_bwd_ratio * s, 1e-9);
    ASSERT_NEAR(eager.act_bytes, fused.act_bytes, 1e-15);
    /* per-op selective checkpointing re-runs the forward's element-wise
     * work in the backward: under eager ops that work grows by s, and so
     * does the recomputation */
    {
        ar_profile_entry rf, re;
        o.recompute_elementwise = 1;
        o.eager_elementwise = 0;
        ASSERT_OK(ar_profile_gen_entry(m, g, AR_LAYER_DENSE, 1, 1, 4096, NULL, &o, &rf));
        o.eager_elementwise = 1;
        ASSERT_OK(ar_profile_gen_entry(m, g, AR_LAYER_DENSE, 1, 1, 4096, NULL, &o, &re));
        ASSERT_NEAR(rf.fwd_s, fused.fwd_s, 1e-12);
        ASSERT_GT(rf.bwd_s, fused.bwd_s);
        ASSERT_NEAR((re.bwd_s - rf.bwd_s) - (eager.bwd_s - fused.bwd_s), s, 1e-9);
        o.recompute_elementwise = 0;
    }
    /* the head's final norm only */
    o.eager_elementwise = 0;
    ASSERT_OK(ar_profile_gen_entry(m, g, AR_LAYER_HEAD, 1, 1, 4096, NULL, &o, &fused));
    o.eager_elementwise = 1;
    ASSERT_OK(ar_profile_gen_entry(m, g, AR_LAYER_HEAD, 1, 1, 4096, NULL, &o, &eager));
    ASSERT_NEAR(eager.fwd_s - fused.fwd_s, 16.0 * T * h * 2.0 / (g->hbm_bw * ar_gen_default_consts.hbm_eff), 1e-9);
    arachne_model_destroy(m);
}

/* ar_profile_gen_gemm_s is the generator's GEMM roofline: a large product
 * at the Hopper tensor-core ceiling of the efficiency curve, a small one at
 * its traffic over the achieved HBM bandwidth (bench_profile_measured sets
 * both beside measured H200 products). */
TEST(generator_gemm_time_is_the_roofline)
{
    const ar_gpu_spec *g = ar_gpu_catalog_find("H200");
    double M = 65536, N = 28672, K = 4096, e, want, prev = 0, m;
    ASSERT(g != NULL);
    e = ar_gen_default_consts.e_max * ar_gemm_eff_scale(g) * K / (K + ar_tc_default_consts.m_half);
    want = 2.0 * M * N * K / (g->flops * e);
    ASSERT_NEAR(ar_profile_gen_gemm_s(g, M, N, K) / want, 1.0, 1e-12);
    M = 16, N = 6144;
    want = (M * K + K * N + M * N) * 2.0 / (g->hbm_bw * ar_gen_default_consts.hbm_eff);
    ASSERT_NEAR(ar_profile_gen_gemm_s(g, M, N, K) / want, 1.0, 1e-12);
    for (m = 16; m <= 65536; m *= 2) {
        double t = ar_profile_gen_gemm_s(g, m, N, K);
        ASSERT_GT(t, prev);
        prev = t;
    }
    ASSERT(ar_profile_gen_gemm_s(NULL, 1, 1, 1) == 0.0);
    ASSERT(ar_profile_gen_gemm_s(g, 0, N, K) == 0.0);
}

/* Issue 27 items 7 and 8: a profile with zero forward times was
 * accepted (by add and by the reader) and broke planning later ("state
 * vector has a non-finite entry", MFU of 1500 %); a seq_len above the
 * reader's 100,000,000 was accepted by create, saved, and refused on load. */
TEST(zero_times_and_unreadable_seq_len_are_refused)
{
    arachne_profile *p = NULL, *q = NULL;
    char path[512];
    static const char *const zero_json[] = {
        "{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 8, \"entries\": [{\"gpu\": "
        "\"H100\", \"kind\": \"dense\", \"tp\": 1, \"mbs\": 1, \"fwd_s\": 0, \"bwd_s\": 1e-3, \"act_bytes\": 1}]}",
        "{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 8, \"entries\": [{\"gpu\": "
        "\"H100\", \"kind\": \"dense\", \"tp\": 1, \"mbs\": 1, \"fwd_s\": 0.0, \"bwd_s\": 0.0, \"act_bytes\": 1}]}",
        "{\"format\": \"arachne-profile\", \"version\": 1, \"model\": \"m\", \"seq_len\": 8, \"entries\": [{\"gpu\": "
        "\"H100\", \"kind\": \"dense\", \"tp\": 1, \"mbs\": 1, \"fwd_s\": -0.0, \"bwd_s\": 1e-3, \"act_bytes\": 1}]}",
    };
    size_t i;
    ASSERT_OK(arachne_profile_create(&p, "m", 8));
    ASSERT_STATUS(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 1, 1, 0.0, 1e-3, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "fwd_s");
    ASSERT_STATUS(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 1, 1, -0.0, 1e-3, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 1, 1, 5e-324, 1e-3, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 1, 1, 1e-9, 1e-3, 0, 1));
    /* a backward pass measured as 0 s (Sailor's embedding rows), no TP
     * communication and no activation memory stay valid */
    ASSERT_OK(arachne_profile_add(p, "H100", ARACHNE_LAYER_EMBED, 1, 1, 1e-3, 0, 0, 0));
    arachne_profile_destroy(p);
    for (i = 0; i < sizeof zero_json / sizeof zero_json[0]; i++) {
        ASSERT_STATUS(arachne_profile_from_json(&q, zero_json[i], strlen(zero_json[i])), ARACHNE_E_PARSE);
        ASSERT(q == NULL);
        ASSERT_CONTAINS(arachne_last_error(), "fwd_s");
    }
    /* seq_len: create and the reader share one bound */
    ASSERT_STATUS(arachne_profile_create(&p, "m", 100000001), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_profile_create(&p, "m", 2147483647), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(p == NULL);
    ASSERT_OK(arachne_profile_create(&p, "m", 100000000));
    ASSERT_OK(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 1, 1, 1e-3, 2e-3, 0, 1));
    snprintf(path, sizeof path, "%s/long.json", th_tmpdir());
    ASSERT_OK(arachne_profile_save(p, path));
    ASSERT_OK(arachne_profile_load(&q, path));
    arachne_profile_destroy(q);
    arachne_profile_destroy(p);
}

SUITE(profile, T(zero_times_and_unreadable_seq_len_are_refused), T(add_lookup_exact_keys), T(duplicate_add_replaces), T(add_rejects_bad_entries),
      T(many_entries_stay_sorted), T(json_round_trip_is_exact), T(json_bad_input_is_rejected_with_position),
      T(sailor_import_all_models), T(sailor_import_bad_input),
      T(sailor_final_norm_folds_into_the_head), T(sailor_sequence_length_from_llm_info), T(profile_precision_fields), T(generator_covers_every_key),
      T(generator_is_monotone_and_orders_gpus), T(generator_moe_and_determinism),
      T(generator_eager_elementwise_adds_the_counted_passes), T(generator_gemm_time_is_the_roofline));
