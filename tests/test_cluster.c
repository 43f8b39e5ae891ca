/* test_cluster.c -- the cluster handle, its compact string and JSON forms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "cluster.h"

#define EXAMPLE "a100-40:32x4,a6000:8x4+16x1,h100:16x8"

static int count_of(const arachne_cluster *c, const char *type, int nodes)
{
    int v = -1;
    if ((nodes ? arachne_cluster_node_count(c, type, &v) : arachne_cluster_gpu_count(c, type, &v)) != ARACHNE_OK)
        return -1;
    return v;
}

/* A cluster and its JSON read back must print the same compact string and
 * the same JSON bytes; so must the cluster parsed from its compact string
 * (when every type is a catalog type: the figures of user-defined types
 * travel only in JSON). */
static int same_after_round_trips(const arachne_cluster *c)
{
    int t, catalog_only = 1;
    for (t = 0; t < c->ntypes; t++)
        if (!ar_gpu_catalog_find(c->types[t].name)) catalog_only = 0;
    arachne_cluster *a = NULL, *b = NULL;
    const char *s0, *j0, *s1, *j1, *s2, *j2;
    int ok;
    if (arachne_cluster_to_string(c, &s0) || arachne_cluster_to_json(c, &j0)) return 0;
    if (arachne_cluster_from_json(&a, j0, strlen(j0)) != ARACHNE_OK) {
        th_fail(__FILE__, __LINE__, "own JSON rejected: %s\n%s", arachne_last_error(), j0);
        return 0;
    }
    arachne_cluster_to_string(a, &s1);
    arachne_cluster_to_json(a, &j1);
    ok = strcmp(s0, s1) == 0 && strcmp(j0, j1) == 0;
    if (!ok) th_fail(__FILE__, __LINE__, "JSON round trip differs:\n%s\n%s\n%s\n%s", s0, s1, j0, j1);
    if (ok && s0[0] && catalog_only) {
        if (arachne_cluster_parse(&b, s0) != ARACHNE_OK) {
            th_fail(__FILE__, __LINE__, "own spec '%s' rejected: %s", s0, arachne_last_error());
            ok = 0;
        } else {
            arachne_cluster_to_string(b, &s2);
            arachne_cluster_to_json(b, &j2);
            ok = strcmp(s0, s2) == 0;
            if (!ok) th_fail(__FILE__, __LINE__, "spec round trip differs: '%s' vs '%s'", s0, s2);
            (void)j2;
        }
    }
    arachne_cluster_destroy(a);
    arachne_cluster_destroy(b);
    return ok;
}

TEST(parses_the_example)
{
    arachne_cluster *c = NULL;
    const char *s = NULL, *t = NULL;
    int n = -1, g = -1;
    ASSERT_OK(arachne_cluster_parse(&c, EXAMPLE));
    ASSERT_OK(arachne_cluster_to_string(c, &s));
    ASSERT_STR(s, EXAMPLE);
    ASSERT_OK(arachne_cluster_type_count(c, &n));
    ASSERT_EQ(n, 3);
    ASSERT_OK(arachne_cluster_type_name(c, 0, &t));
    ASSERT_STR(t, "A100-40");
    ASSERT_OK(arachne_cluster_type_name(c, 2, &t));
    ASSERT_STR(t, "H100");
    ASSERT_EQ(count_of(c, NULL, 0), 128 + 48 + 128);
    ASSERT_EQ(count_of(c, NULL, 1), 32 + 24 + 16);
    ASSERT_EQ(count_of(c, "a100-40", 0), 128);
    ASSERT_EQ(count_of(c, "A6000", 0), 48);
    ASSERT_EQ(count_of(c, "rtx-a6000", 1), 24);
    ASSERT_EQ(count_of(c, "h100-sxm", 1), 16);
    ASSERT_EQ(count_of(c, "v100", 0), 0); /* catalog type, not in this cluster */
    ASSERT_OK(arachne_cluster_largest_node(c, NULL, &n));
    ASSERT_EQ(n, 8);
    ASSERT_OK(arachne_cluster_largest_node(c, "a6000", &n));
    ASSERT_EQ(n, 4);
    ASSERT_OK(arachne_cluster_largest_node(c, "l40s", &n));
    ASSERT_EQ(n, 0);
    ASSERT_OK(arachne_cluster_node(c, 0, &t, &g));
    ASSERT_STR(t, "A100-40");
    ASSERT_EQ(g, 4);
    ASSERT_OK(arachne_cluster_node(c, 39, &t, &g));
    ASSERT_STR(t, "A6000");
    ASSERT_EQ(g, 4);
    ASSERT_OK(arachne_cluster_node(c, 40, &t, &g));
    ASSERT_EQ(g, 1);
    ASSERT_OK(arachne_cluster_node(c, 71, &t, &g));
    ASSERT_STR(t, "H100");
    ASSERT_EQ(g, 8);
    ASSERT_STATUS(arachne_cluster_node(c, 72, &t, &g), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_node(c, -1, &t, &g), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_type_name(c, 3, &t), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_gpu_count(c, "h10", &n), ARACHNE_E_NOT_FOUND);
    ASSERT(same_after_round_trips(c));
    arachne_cluster_destroy(c);
}

TEST(spaces_aliases_and_merging)
{
    arachne_cluster *c = NULL;
    const char *s = NULL;
    ASSERT_OK(arachne_cluster_parse(&c, "  A100_40 : 2 x 4 , h100-sxm:1X8,a100:1x4 + 2x4 ,a6000:1x4+1x1+1x4 "));
    ASSERT_OK(arachne_cluster_to_string(c, &s));
    ASSERT_STR(s, "a100-40:5x4,h100:1x8,a6000:1x4+1x1+1x4");
    ASSERT_EQ(count_of(c, "a100-40", 1), 5);
    ASSERT(same_after_round_trips(c));
    arachne_cluster_destroy(c);
    ASSERT_OK(arachne_cluster_parse(&c, "rtx pro 6000:2x8,gh200:3x4,2080:1x8,titan-rtx:1x8,3090:1x8,v100:1x8"));
    ASSERT_OK(arachne_cluster_to_string(c, &s));
    ASSERT_STR(s, "rtx-pro-6000:2x8,gh-96:3x4,rtx-2080ti:1x8,titan-rtx:1x8,rtx-3090:1x8,v100-16:1x8");
    ASSERT(same_after_round_trips(c));
    arachne_cluster_destroy(c);
}

/* Each bad spec: status, and a message naming the spec and the offset. */
static int bad_spec(const char *spec, int status, int offset, const char *what)
{
    arachne_cluster *c = (arachne_cluster *)1;
    char want[160];
    int st;
    arachne_clear_error();
    st = arachne_cluster_parse(&c, spec);
    if (st != status || c != NULL) {
        th_fail(__FILE__, __LINE__, "spec '%s': status %d (want %d), out %p: %s", spec, st, status, (void *)c,
                arachne_last_error());
        return 0;
    }
    snprintf(want, sizeof want, "cluster spec '%s': offset %d: ", spec, offset);
    if (strncmp(arachne_last_error(), want, strlen(want)) != 0 || !strstr(arachne_last_error(), what)) {
        th_fail(__FILE__, __LINE__, "spec '%s': message \"%s\", want \"%s...%s\"", spec, arachne_last_error(), want,
                what);
        return 0;
    }
    return 1;
}
#define BAD_SPEC(s, st, off, what) do { if (!bad_spec(s, st, off, what)) return; } while (0)

TEST(rejects_unknown_gpu_type)
{
    BAD_SPEC("a100-40:2x4,h10:1x8", ARACHNE_E_NOT_FOUND, 13, "unknown GPU type 'h10'");
    BAD_SPEC("tpu:1x4", ARACHNE_E_NOT_FOUND, 1, "unknown GPU type 'tpu'");
}

TEST(rejects_zero_and_negative_counts)
{
    BAD_SPEC("a100:0x4", ARACHNE_E_PARSE, 6, "node count must be at least 1");
    BAD_SPEC("a100:4x0", ARACHNE_E_PARSE, 8, "GPUs per node must be at least 1");
    BAD_SPEC("a100:-1x4", ARACHNE_E_PARSE, 6, "not negative");
    BAD_SPEC("a100:2x-4", ARACHNE_E_PARSE, 8, "not negative");
}

TEST(rejects_missing_gpu_count)
{
    BAD_SPEC("a100:4x", ARACHNE_E_PARSE, 8, "expected a GPU count after 'x'");
    BAD_SPEC("a100:4x,h100:1x8", ARACHNE_E_PARSE, 8, "expected a GPU count after 'x'");
    BAD_SPEC("a100:4", ARACHNE_E_PARSE, 7, "expected 'x' after the node count");
}

TEST(rejects_missing_node_count)
{
    BAD_SPEC("a100:x4", ARACHNE_E_PARSE, 6, "expected a node count before 'x'");
    BAD_SPEC("a100:", ARACHNE_E_PARSE, 6, "expected a node group");
    BAD_SPEC("a100:2x4+", ARACHNE_E_PARSE, 10, "expected a node group");
}

TEST(rejects_lone_colon_and_missing_colon)
{
    BAD_SPEC(":", ARACHNE_E_PARSE, 1, "expected a GPU type name before ':'");
    BAD_SPEC(":4x4", ARACHNE_E_PARSE, 1, "expected a GPU type name before ':'");
    BAD_SPEC("a100-40", ARACHNE_E_PARSE, 8, "expected ':' after GPU type 'a100-40'");
    BAD_SPEC("a100-40 32x4", ARACHNE_E_PARSE, 13, "expected ':'");
    BAD_SPEC("", ARACHNE_E_PARSE, 1, "empty cluster spec");
    BAD_SPEC("   ", ARACHNE_E_PARSE, 4, "empty cluster spec");
    BAD_SPEC(",a100:1x4", ARACHNE_E_PARSE, 1, "expected a GPU type name");
}

TEST(rejects_trailing_garbage)
{
    BAD_SPEC("a100:2x4 junk", ARACHNE_E_PARSE, 10, "unexpected 'j'");
    BAD_SPEC("a100:2x4x8", ARACHNE_E_PARSE, 9, "unexpected 'x'");
    BAD_SPEC("a100:2x4,", ARACHNE_E_PARSE, 10, "expected a GPU type after ','");
    BAD_SPEC("a100:2x4;h100:1x8", ARACHNE_E_PARSE, 9, "unexpected ';'");
    BAD_SPEC("a100:2x4.5", ARACHNE_E_PARSE, 9, "unexpected '.'");
}

TEST(rejects_node_larger_than_1024)
{
    arachne_cluster *c = NULL;
    BAD_SPEC("a100:1x1025", ARACHNE_E_PARSE, 6, "a node of 1025 GPUs exceeds the limit of 1024");
    ASSERT_OK(arachne_cluster_parse(&c, "a100:1x1024"));
    ASSERT_EQ(count_of(c, NULL, 0), 1024);
    arachne_cluster_destroy(c);
}

TEST(rejects_count_overflow_and_huge_totals)
{
    arachne_cluster *c = NULL;
    BAD_SPEC("a100:99999999999x4", ARACHNE_E_PARSE, 6, "node count 99999999999 is too large");
    BAD_SPEC("a100:4x99999999999999999999", ARACHNE_E_PARSE, 8, "too large");
    BAD_SPEC("a100:250001x4", ARACHNE_E_PARSE, 6, "more than 1000000 GPUs");
    BAD_SPEC("a100:250000x4,h100:1x1", ARACHNE_E_PARSE, 20, "more than 1000000 GPUs");
    ASSERT_OK(arachne_cluster_parse(&c, "a100:250000x4"));
    ASSERT_EQ(count_of(c, NULL, 0), 1000000);
    ASSERT_STATUS(arachne_cluster_add_nodes(c, "a100", 1, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_EQ(count_of(c, NULL, 0), 1000000);
    arachne_cluster_destroy(c);
}

TEST(rejects_more_than_max_types)
{
    arachne_cluster *c = NULL;
    char name[32];
    int i, n = 0;
    ASSERT_OK(arachne_cluster_create(&c));
    for (i = 0; i < AR_MAX_TYPES; i++) {
        snprintf(name, sizeof name, "custom-%d", i);
        ASSERT_OK(arachne_cluster_add_gpu_type(c, name, 1e10, 1e14, 1e12, 1e11, 1e10));
    }
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "one-more", 1e10, 1e14, 1e12, 1e11, 1e10), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "at most 16 GPU types");
    ASSERT_STATUS(arachne_cluster_add_nodes(c, "h100", 1, 8), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_cluster_type_count(c, &n));
    ASSERT_EQ(n, AR_MAX_TYPES);
    /* overriding an existing one still works */
    ASSERT_OK(arachne_cluster_add_gpu_type(c, "CUSTOM_3", 2e10, 1e14, 1e12, 1e11, 1e10));
    ASSERT_OK(arachne_cluster_type_count(c, &n));
    ASSERT_EQ(n, AR_MAX_TYPES);
    arachne_cluster_destroy(c);
}

TEST(long_specs_are_shortened_in_messages)
{
    char spec[400];
    arachne_cluster *c = NULL;
    int i, n = 0;
    for (i = 0; i < 40; i++) n += snprintf(spec + n, sizeof spec - (size_t)n, "a100:1x4,");
    snprintf(spec + n, sizeof spec - (size_t)n, "bogus:1x1");
    ASSERT_STATUS(arachne_cluster_parse(&c, spec), ARACHNE_E_NOT_FOUND);
    ASSERT_CONTAINS(arachne_last_error(), "...': offset 361: unknown GPU type 'bogus'");
    ASSERT(strlen(arachne_last_error()) < 200);
}

TEST(builder_api)
{
    arachne_cluster *c = NULL;
    const char *s = NULL;
    double v = 0;
    int n = 0;
    ASSERT_OK(arachne_cluster_create(&c));
    ASSERT_OK(arachne_cluster_to_string(c, &s));
    ASSERT_STR(s, "");
    ASSERT_EQ(count_of(c, NULL, 0), 0);
    ASSERT(same_after_round_trips(c));
    ASSERT_OK(arachne_cluster_add_nodes(c, "h100", 2, 8));
    ASSERT_OK(arachne_cluster_add_nodes(c, "a100-40", 3, 4));
    ASSERT_OK(arachne_cluster_add_nodes(c, "h100", 1, 4)); /* joins the h100 block, before the a100 nodes */
    ASSERT_OK(arachne_cluster_to_string(c, &s));
    ASSERT_STR(s, "h100:2x8+1x4,a100-40:3x4");
    ASSERT_OK(arachne_cluster_node(c, 2, NULL, &n));
    ASSERT_EQ(n, 4);
    ASSERT_STATUS(arachne_cluster_add_nodes(c, "nope", 1, 1), ARACHNE_E_NOT_FOUND);
    ASSERT_STATUS(arachne_cluster_add_nodes(c, "h100", 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_add_nodes(c, "h100", 1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_add_nodes(c, "l40s", 1, 2000), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_cluster_type_count(c, &n));
    ASSERT_EQ(n, 2); /* the failed l40s call added no type */
    ASSERT_OK(arachne_cluster_to_string(c, &s));
    ASSERT_STR(s, "h100:2x8+1x4,a100-40:3x4");

    /* link default: the slower side */
    ASSERT_OK(arachne_cluster_link_bandwidth(c, "h100", "a100", &v));
    ASSERT_EQ(v, 25e9);
    ASSERT_OK(arachne_cluster_link_bandwidth(c, "h100", "h100", &v));
    ASSERT_EQ(v, 50e9);
    ASSERT_OK(arachne_cluster_set_link_bandwidth(c, "a100-40", "h100", 3e9));
    ASSERT_OK(arachne_cluster_link_bandwidth(c, "h100", "a100-40", &v));
    ASSERT_EQ(v, 3e9);
    ASSERT(ar_cluster_link_bw(c, 0, 1) == 3e9 && ar_cluster_link_bw(c, 1, 0) == 3e9);
    ASSERT_STATUS(arachne_cluster_set_link_bandwidth(c, "a100-40", "v100", 3e9), ARACHNE_E_NOT_FOUND);
    ASSERT_STATUS(arachne_cluster_set_link_bandwidth(c, "a100-40", "h100", -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_set_link_bandwidth(c, "a100-40", "h100", 1.0 / 0.0), ARACHNE_E_INVALID_ARGUMENT);

    /* overriding a catalog type in the cluster keeps its name and latencies */
    ASSERT_OK(arachne_cluster_add_gpu_type(c, "a100", 40e9, 300e12, 1.5e12, 250e9, 12.5e9));
    ASSERT_OK(arachne_cluster_gpu_get(c, "A100-40", ARACHNE_GPU_MEMORY_BYTES, &v));
    ASSERT_EQ(v, 40e9);
    ASSERT_OK(arachne_cluster_gpu_get(c, "a100_40", ARACHNE_GPU_INTRA_LATENCY_S, &v));
    ASSERT_NEAR(v, 3e-6, 1e-12);
    ASSERT_OK(arachne_cluster_link_bandwidth(c, "a100", "a100", &v));
    ASSERT_EQ(v, 12.5e9); /* default follows the new figure */
    ASSERT_OK(arachne_cluster_link_bandwidth(c, "a100", "h100", &v));
    ASSERT_EQ(v, 3e9); /* the explicit one stays */
    /* the catalog itself is untouched */
    ASSERT_OK(arachne_gpu_get("a100-40", ARACHNE_GPU_MEMORY_BYTES, &v));
    ASSERT_EQ(v, 42949672960LL); /* 40 GiB */

    /* a custom type */
    ASSERT_OK(arachne_cluster_add_gpu_type(c, "MI300X", 192e9, 1307e12, 5.3e12, 448e9, 50e9));
    ASSERT_OK(arachne_cluster_set_gpu_field(c, "mi300x", ARACHNE_GPU_INTER_LATENCY_S, 8e-6));
    ASSERT_OK(arachne_cluster_add_nodes(c, "mi300x", 2, 8));
    ASSERT_OK(arachne_cluster_gpu_get(c, "MI300X", ARACHNE_GPU_INTER_LATENCY_S, &v));
    ASSERT_NEAR(v, 8e-6, 1e-12);
    ASSERT_OK(arachne_cluster_gpu_get(c, "MI300X", ARACHNE_GPU_INTRA_LATENCY_S, &v));
    ASSERT_NEAR(v, 5e-6, 1e-12);
    ASSERT_OK(arachne_cluster_to_string(c, &s));
    ASSERT_STR(s, "h100:2x8+1x4,a100-40:3x4,mi300x:2x8");
    ASSERT_STATUS(arachne_cluster_gpu_get(c, "v100", 0, &v), ARACHNE_E_NOT_FOUND);
    ASSERT_STATUS(arachne_cluster_gpu_get(c, "h100", 9, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "h100", 9, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "v100", 0, 1), ARACHNE_E_NOT_FOUND);
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "bad name", 1, 1, 1, 1, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "-x", 1, 1, 1, 1, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "", 1, 1, 1, 1, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "x", 0, 1, 1, 1, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "x", 1e9, 1e12, 1e9, 1e9, 0.0 / 0.0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "nan is outside [1e+06, 1e+15] B/s");
    /* physical bounds, inclusive, on every entry point */
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "x", 1e9, 1e12, 1e9, 1e-300, 1e9), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "GPU type 'x': intra_bytes_per_s 1e-300 is outside");
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "x", 1e16, 1e12, 1e9, 1e9, 1e9), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "memory_bytes 1e+16 is outside [1e+06, 1e+15] B");
    ASSERT_STATUS(arachne_cluster_add_gpu_type(c, "x", 1e6, 1e9, 1e8, 1e6, 1e6), ARACHNE_OK);
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "x", ARACHNE_GPU_INTER_LATENCY_S, 1e308), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "GPU type 'x': inter_latency_s 1e+308 is outside [1e-09, 1] s");
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "x", ARACHNE_GPU_FLOPS, 1e19), ARACHNE_OK);
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "x", ARACHNE_GPU_INTRA_LATENCY_S, 1.0), ARACHNE_OK);
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "x", ARACHNE_GPU_INTRA_LINK, 0.0 / 0.0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_add_nodes(c, "x", 1, 4), ARACHNE_OK);
    ASSERT_STATUS(arachne_cluster_set_link_bandwidth(c, "x", "x", 1e-300), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "bandwidth 1e-300 is outside [1e+06, 1e+15] bytes/s");
    ASSERT_STATUS(arachne_cluster_set_link_bandwidth(c, "x", "x", 1e15), ARACHNE_OK);
    ASSERT(same_after_round_trips(c));
    arachne_cluster_destroy(c);
}

TEST(null_arguments_fail_cleanly)
{
    arachne_cluster *c = NULL;
    const char *s;
    int n;
    ASSERT_STATUS(arachne_cluster_create(NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_parse(&c, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_parse(NULL, "a100:1x1"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_from_json(&c, NULL, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_load(&c, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_open(&c, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_to_string(NULL, &s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_to_json(NULL, &s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_type_count(NULL, &n), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_gpu_count(NULL, NULL, &n), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_add_nodes(NULL, "a100", 1, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_save(NULL, "x.json"), ARACHNE_E_INVALID_ARGUMENT);
    arachne_cluster_destroy(NULL);
}

TEST(copy_is_deep)
{
    arachne_cluster *a = NULL, *b = NULL;
    const char *sa, *sb;
    ASSERT_OK(arachne_cluster_parse(&a, EXAMPLE));
    ASSERT_OK(arachne_cluster_set_link_bandwidth(a, "a6000", "h100", 5e9));
    ASSERT_OK(ar_cluster_copy(&b, a));
    ASSERT_OK(arachne_cluster_to_json(a, &sa));
    ASSERT_OK(arachne_cluster_to_json(b, &sb));
    ASSERT(sa != sb);
    ASSERT_STR(sa, sb);
    ASSERT_OK(arachne_cluster_add_nodes(b, "a6000", 1, 2));
    ASSERT_EQ(count_of(a, "a6000", 1), 24);
    ASSERT_EQ(count_of(b, "a6000", 1), 25);
    ASSERT_OK(arachne_cluster_to_string(a, &sa));
    ASSERT_STR(sa, EXAMPLE);
    ASSERT_OK(arachne_cluster_to_string(b, &sb));
    ASSERT_STR(sb, "a100-40:32x4,a6000:8x4+16x1+1x2,h100:16x8");
    arachne_cluster_destroy(a);
    arachne_cluster_destroy(b);
}

TEST(json_form_and_round_trip)
{
    arachne_cluster *c = NULL, *d = NULL;
    const char *j = NULL, *j2 = NULL;
    ASSERT_OK(arachne_cluster_parse(&c, EXAMPLE));
    ASSERT_OK(arachne_cluster_to_json(c, &j));
    ASSERT_STR(j, "{\n  \"format\": \"arachne-cluster\",\n  \"version\": 1,\n  \"nodes\": [\n"
                  "    {\"type\": \"a100-40\", \"count\": 32, \"gpus\": 4},\n"
                  "    {\"type\": \"a6000\", \"count\": 8, \"gpus\": 4},\n"
                  "    {\"type\": \"a6000\", \"count\": 16, \"gpus\": 1},\n"
                  "    {\"type\": \"h100\", \"count\": 16, \"gpus\": 8}\n  ]\n}\n");
    ASSERT_OK(arachne_cluster_set_link_bandwidth(c, "h100", "a6000", 6.25e9));
    ASSERT_OK(arachne_cluster_add_gpu_type(c, "h100", 80e9, 900e12, 3.35e12, 450e9, 50e9));
    ASSERT_OK(arachne_cluster_add_gpu_type(c, "my-gpu", 16e9, 1e14, 1e12, 32e9, 12.5e9));
    ASSERT_OK(arachne_cluster_to_json(c, &j));
    ASSERT_CONTAINS(j, "\"gpu_types\": [\n    {\"name\": \"H100\", \"memory_bytes\": 80000000000, \"flops\": 900000000000000,");
    ASSERT_CONTAINS(j, "{\"name\": \"my-gpu\"");
    ASSERT_CONTAINS(j, "\"links\": [\n    {\"a\": \"a6000\", \"b\": \"h100\", \"bytes_per_s\": 6250000000}\n  ]");
    ASSERT(same_after_round_trips(c));
    ASSERT_OK(arachne_cluster_from_json(&d, j, strlen(j)));
    ASSERT_OK(arachne_cluster_to_json(d, &j2));
    ASSERT_STR(j2, j);
    {
        double v = 0;
        int n = 0;
        ASSERT_OK(arachne_cluster_gpu_get(d, "h100", ARACHNE_GPU_FLOPS, &v));
        ASSERT_EQ(v, 900e12);
        ASSERT_OK(arachne_cluster_link_bandwidth(d, "a6000", "h100", &v));
        ASSERT_EQ(v, 6.25e9);
        ASSERT_OK(arachne_cluster_type_count(d, &n));
        ASSERT_EQ(n, 4);
    }
    arachne_cluster_destroy(c);
    arachne_cluster_destroy(d);
}

TEST(json_reader_accepts_minimal_files)
{
    static const char *text = "{\"nodes\": [{\"type\": \"H100-SXM\", \"count\": 2, \"gpus\": 8},"
                              " {\"type\": \"mine\", \"count\": 1, \"gpus\": 2}],"
                              " \"gpu_types\": [{\"name\": \"mine\", \"memory_bytes\": 1e10, \"flops\": 1e14,"
                              " \"hbm_bytes_per_s\": 1e12, \"intra_bytes_per_s\": 1e11, \"inter_bytes_per_s\": 1e10,"
                              " \"inter_latency_s\": 2e-5}]}";
    arachne_cluster *c = NULL;
    const char *s = NULL;
    double v = 0;
    ASSERT_OK(arachne_cluster_from_json(&c, text, strlen(text)));
    ASSERT_OK(arachne_cluster_to_string(c, &s));
    ASSERT_STR(s, "h100:2x8,mine:1x2");
    ASSERT_OK(arachne_cluster_gpu_get(c, "mine", ARACHNE_GPU_INTER_LATENCY_S, &v));
    ASSERT_NEAR(v, 2e-5, 1e-12);
    ASSERT(same_after_round_trips(c));
    arachne_cluster_destroy(c);
}

/* The intra-node link class: catalog default, set per cluster, carried by
 * the JSON form only where it differs from what the reader assumes. */
TEST(intra_link_class_in_clusters_and_json)
{
    static const char *text = "{\"nodes\": [{\"type\": \"mine\", \"count\": 1, \"gpus\": 2},"
                              " {\"type\": \"rtx-4090\", \"count\": 1, \"gpus\": 4}],"
                              " \"gpu_types\": [{\"name\": \"mine\", \"memory_bytes\": 1e10, \"flops\": 1e14,"
                              " \"hbm_bytes_per_s\": 1e12, \"intra_bytes_per_s\": 1e11, \"inter_bytes_per_s\": 1e10,"
                              " \"intra_link\": \"nvlink\"}]}";
    arachne_cluster *c = NULL;
    const char *js = NULL;
    double v = 0;
    ASSERT_OK(arachne_cluster_from_json(&c, text, strlen(text)));
    ASSERT_OK(arachne_cluster_gpu_get(c, "mine", ARACHNE_GPU_INTRA_LINK, &v));
    ASSERT_EQ(v, ARACHNE_LINK_NVLINK);
    ASSERT_OK(arachne_cluster_gpu_get(c, "rtx-4090", ARACHNE_GPU_INTRA_LINK, &v));
    ASSERT_EQ(v, ARACHNE_LINK_PCIE_HOST);
    ASSERT_OK(arachne_cluster_to_json(c, &js));
    ASSERT_CONTAINS(js, "\"intra_link\": \"nvlink\"");
    ASSERT(same_after_round_trips(c));
    /* a catalog type overridden keeps its class unless told; the JSON names it only when changed */
    ASSERT_OK(arachne_cluster_set_gpu_field(c, "rtx-4090", ARACHNE_GPU_INTRA_LINK, ARACHNE_LINK_PCIE_P2P));
    ASSERT_OK(arachne_cluster_to_json(c, &js));
    ASSERT_CONTAINS(js, "\"intra_link\": \"pcie-p2p\"");
    ASSERT(same_after_round_trips(c));
    ASSERT_OK(arachne_cluster_set_gpu_field(c, "rtx-4090", ARACHNE_GPU_INTRA_LINK, ARACHNE_LINK_PCIE_HOST));
    ASSERT_OK(arachne_cluster_set_gpu_field(c, "mine", ARACHNE_GPU_INTRA_LINK, ARACHNE_LINK_PCIE_P2P));
    ASSERT_OK(arachne_cluster_to_json(c, &js));
    ASSERT(strstr(js, "intra_link") == NULL);
    /* only 1, 2, 3 */
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "mine", ARACHNE_GPU_INTRA_LINK, 4), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "mine", ARACHNE_GPU_INTRA_LINK, 1.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "link class");
    ASSERT_STATUS(arachne_cluster_set_gpu_field(c, "mine", 8, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_cluster_gpu_get(c, "mine", ARACHNE_GPU_INTRA_LINK, &v));
    ASSERT_EQ(v, ARACHNE_LINK_PCIE_P2P);
    arachne_cluster_destroy(c);
    c = NULL;
    /* a user-given type without the key is PCIe peer-to-peer */
    ASSERT_OK(arachne_cluster_create(&c));
    ASSERT_OK(arachne_cluster_add_gpu_type(c, "x1", 1e10, 1e14, 1e12, 1e11, 1e10));
    ASSERT_OK(arachne_cluster_gpu_get(c, "x1", ARACHNE_GPU_INTRA_LINK, &v));
    ASSERT_EQ(v, ARACHNE_LINK_PCIE_P2P);
    arachne_cluster_destroy(c);
}

static int bad_json(const char *text, int status, const char *pos, const char *what)
{
    arachne_cluster *c = (arachne_cluster *)1;
    int st;
    arachne_clear_error();
    st = arachne_cluster_from_json(&c, text, strlen(text));
    if (st != status || c != NULL) {
        th_fail(__FILE__, __LINE__, "json <%.60s>: status %d (want %d): %s", text, st, status, arachne_last_error());
        return 0;
    }
    if (!strstr(arachne_last_error(), pos) || !strstr(arachne_last_error(), what)) {
        th_fail(__FILE__, __LINE__, "json <%.60s>: message \"%s\", want \"%s\" and \"%s\"", text, arachne_last_error(),
                pos, what);
        return 0;
    }
    return 1;
}
#define BAD_JSON(t, st, pos, what) do { if (!bad_json(t, st, pos, what)) return; } while (0)

TEST(json_rejects_duplicate_keys)
{
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1, \"count\": 2, \"gpus\": 4}]}", ARACHNE_E_PARSE,
             "<cluster json>:1:41: ", "duplicate key \"count\"");
}

TEST(json_rejects_truncated_input)
{
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1, \"gp", ARACHNE_E_PARSE, "<cluster json>:1:41: ",
             "unterminated string");
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1", ARACHNE_E_PARSE, "<cluster json>:1:39: ",
             "expected ',' or '}'");
}

TEST(json_rejects_overflowing_number)
{
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1e400, \"gpus\": 4}]}", ARACHNE_E_PARSE,
             "<cluster json>:1:38: ", "out of range");
}

TEST(json_rejects_invalid_utf8)
{
    BAD_JSON("{\"nodes\": [{\"type\": \"a1\xc0\xb0\", \"count\": 1, \"gpus\": 4}]}", ARACHNE_E_PARSE,
             "<cluster json>:1:24: ", "invalid UTF-8");
}

TEST(json_rejects_bad_content)
{
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1, \"gpus\": 4, \"extra\": 1}]}", ARACHNE_E_PARSE,
             "<cluster json>:1:61: ", "unknown key 'extra'");
    BAD_JSON("{\"nodez\": []}", ARACHNE_E_PARSE, "<cluster json>:1:11: ", "unknown key 'nodez'");
    BAD_JSON("{}", ARACHNE_E_PARSE, "<cluster json>:1:1: ", "missing key 'nodes'");
    BAD_JSON("[]", ARACHNE_E_PARSE, "<cluster json>:1:1: ", "expected a cluster object");
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"gpus\": 4}]}", ARACHNE_E_PARSE, "<cluster json>:1:12: ",
             "missing key 'count'");
    BAD_JSON("{\"nodes\": [{\"type\": 7, \"count\": 1, \"gpus\": 4}]}", ARACHNE_E_PARSE, "<cluster json>:1:21: ",
             "type: expected a string, got a number");
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1.5, \"gpus\": 4}]}", ARACHNE_E_PARSE,
             "<cluster json>:1:38: ", "count: expected an integer in [1, 1000000]");
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 0, \"gpus\": 4}]}", ARACHNE_E_PARSE, ":1:38: ",
             "count: expected an integer");
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1, \"gpus\": 2048}]}", ARACHNE_E_PARSE, ":1:49: ",
             "gpus: expected an integer in [1, 1024]");
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 300000, \"gpus\": 4}]}", ARACHNE_E_PARSE, ":1:12: ",
             "past 1000000 GPUs");
    BAD_JSON("{\"nodes\": [\n  {\"type\": \"h10\", \"count\": 1, \"gpus\": 4}]}", ARACHNE_E_NOT_FOUND,
             "<cluster json>:2:12: ", "unknown GPU type 'h10'");
    BAD_JSON("{\"format\": \"sailor\", \"nodes\": []}", ARACHNE_E_PARSE, ":1:12: ", "format: expected \"arachne-cluster\"");
    BAD_JSON("{\"version\": 2, \"nodes\": []}", ARACHNE_E_UNSUPPORTED, ":1:13: ", "version 2 is newer");
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1, \"gpus\": 4}],"
             " \"links\": [{\"a\": \"a100\", \"b\": \"h100\", \"bytes_per_s\": 1e9}]}",
             ARACHNE_E_PARSE, ":1:83: ", "b: GPU type 'h100' is not in the cluster");
    BAD_JSON("{\"nodes\": [], \"gpu_types\": [{\"name\": \"x\", \"memory_bytes\": -1, \"flops\": 1,"
             " \"hbm_bytes_per_s\": 1, \"intra_bytes_per_s\": 1, \"inter_bytes_per_s\": 1}]}",
             ARACHNE_E_PARSE, ":1:59: ", "memory_bytes: -1 is outside [1e+06, 1e+15] B");
    BAD_JSON("{\"nodes\": [], \"gpu_types\": [{\"name\": \"x\", \"memory_bytes\": 1e9}]}", ARACHNE_E_PARSE,
             ":1:29: ", "missing key 'flops'");
    BAD_JSON("{\"nodes\": [], \"gpu_types\": [{\"name\": \"x\", \"memory_bytes\": 1e9, \"flops\": 1e12,"
             " \"hbm_bytes_per_s\": 1e9, \"intra_bytes_per_s\": 1e9, \"inter_bytes_per_s\": 1e9, \"intra_link\": \"ib\"}]}",
             ARACHNE_E_PARSE, ":1:169: ", "intra_link: 'ib': expected \"nvlink\"");
    BAD_JSON("{\"nodes\": [], \"gpu_types\": [{\"name\": \"x\", \"memory_bytes\": 1e9, \"flops\": 1e12,"
             " \"hbm_bytes_per_s\": 1e9, \"intra_bytes_per_s\": 1e9, \"inter_bytes_per_s\": 1e9, \"intra_link\": 2}]}",
             ARACHNE_E_PARSE, ":1:", "intra_link");
    /* physical bounds: an inter-node bandwidth of 1e-300 B/s priced an MFU of 13,883 % */
    BAD_JSON("{\"nodes\": [], \"gpu_types\": [{\"name\": \"x\", \"memory_bytes\": 1e9, \"flops\": 1e12,"
             " \"hbm_bytes_per_s\": 1e9, \"intra_bytes_per_s\": 1e9, \"inter_bytes_per_s\": 1e-300}]}",
             ARACHNE_E_PARSE, ":1:150: ", "inter_bytes_per_s: 1e-300 is outside [1e+06, 1e+15] B/s");
    BAD_JSON("{\"nodes\": [], \"gpu_types\": [{\"name\": \"h100\", \"memory_bytes\": 1e9, \"flops\": 1e12,"
             " \"hbm_bytes_per_s\": 1e9, \"intra_bytes_per_s\": 1e9, \"inter_bytes_per_s\": 1e9,"
             " \"inter_latency_s\": 1e308}]}",
             ARACHNE_E_PARSE, ":1:", "inter_latency_s: 1e+308 is outside [1e-09, 1] s");
    BAD_JSON("{\"nodes\": [], \"gpu_types\": [{\"name\": \"x\", \"memory_bytes\": 1e9, \"flops\": 1e20,"
             " \"hbm_bytes_per_s\": 1e9, \"intra_bytes_per_s\": 1e9, \"inter_bytes_per_s\": 1e9}]}",
             ARACHNE_E_PARSE, ":1:", "flops: 1e+20 is outside [1e+09, 1e+19] FLOP/s");
    BAD_JSON("{\"nodes\": [{\"type\": \"a100\", \"count\": 1, \"gpus\": 4}, {\"type\": \"h100\", \"count\": 1, \"gpus\": 4}],"
             " \"links\": [{\"a\": \"a100\", \"b\": \"h100\", \"bytes_per_s\": 1e-300}]}",
             ARACHNE_E_PARSE, ":1:", "bytes_per_s: 1e-300 is outside [1e+06, 1e+15] B/s");
}

TEST(save_load_open)
{
    const char *dir = th_tmpdir();
    char path[512], bad[512];
    arachne_cluster *c = NULL, *d = NULL, *e = NULL;
    const char *j1, *j2;
    FILE *f;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/cluster.json", dir);
    ASSERT_OK(arachne_cluster_parse(&c, EXAMPLE));
    ASSERT_OK(arachne_cluster_save(c, path));
    ASSERT_OK(arachne_cluster_load(&d, path));
    ASSERT_OK(arachne_cluster_to_json(c, &j1));
    ASSERT_OK(arachne_cluster_to_json(d, &j2));
    ASSERT_STR(j1, j2);
    ASSERT_OK(arachne_cluster_open(&e, path));
    arachne_cluster_destroy(e);
    e = NULL;
    ASSERT_OK(arachne_cluster_open(&e, EXAMPLE));
    ASSERT_OK(arachne_cluster_to_json(e, &j2));
    ASSERT_STR(j1, j2);
    arachne_cluster_destroy(e);
    e = NULL;
    ASSERT_STATUS(arachne_cluster_open(&e, "/nonexistent/c.json"), ARACHNE_E_IO);
    ASSERT_CONTAINS(arachne_last_error(), "/nonexistent/c.json");
    /* an existing file without the .json suffix is read as a file */
    snprintf(bad, sizeof bad, "%s/cluster.txt", dir);
    f = fopen(bad, "w");
    ASSERT(f != NULL);
    fputs("{\"nodes\": [{\"type\": \"a100\", \"count\": 1,\n \"gpus\": 4,}]}", f);
    fclose(f);
    ASSERT_STATUS(arachne_cluster_open(&e, bad), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), bad);
    ASSERT_CONTAINS(arachne_last_error(), ":2:12: expected a string key");
    ASSERT(e == NULL);
    ASSERT_STATUS(arachne_cluster_save(c, "/nonexistent/dir/c.json"), ARACHNE_E_IO);
    arachne_cluster_destroy(c);
    arachne_cluster_destroy(d);
}

/* Random edits of valid inputs: every result is a cluster or a status with a
 * message; nothing crashes (run under check-asan too). */
TEST(mutated_inputs_never_crash)
{
    static const char alphabet[] = "0123456789x:,+ -aX{}[]\"\\\x80\xc3";
    arachne_cluster *seed = NULL;
    const char *json = NULL;
    char buf[1024];
    ar_rng r;
    int i, ok = 0, failed = 0;
    ASSERT_OK(arachne_cluster_parse(&seed, EXAMPLE));
    ASSERT_OK(arachne_cluster_set_link_bandwidth(seed, "a6000", "h100", 5e9));
    ASSERT_OK(arachne_cluster_add_gpu_type(seed, "my-gpu", 1e10, 1e14, 1e12, 1e11, 1e10));
    ASSERT_OK(arachne_cluster_to_json(seed, &json));
    ar_rng_seed(&r, 7);
    for (i = 0; i < 4000; i++) {
        const char *src = (i & 1) ? json : EXAMPLE;
        size_t n = strlen(src), k;
        int edits = 1 + ar_rng_int(&r, 3), e, st;
        arachne_cluster *c = NULL;
        if (n >= sizeof buf) n = sizeof buf - 1;
        memcpy(buf, src, n);
        buf[n] = '\0';
        for (e = 0; e < edits && n > 0; e++) {
            k = (size_t)ar_rng_int(&r, (int)n);
            switch (ar_rng_int(&r, 3)) {
            case 0: buf[k] = alphabet[ar_rng_int(&r, (int)sizeof alphabet - 1)]; break; /* replace */
            case 1: memmove(buf + k, buf + k + 1, n - k); n--; break;                  /* delete */
            default: n = k; buf[n] = '\0'; break;                                     /* truncate */
            }
        }
        arachne_clear_error();
        st = (i & 1) ? arachne_cluster_from_json(&c, buf, n) : arachne_cluster_parse(&c, buf);
        if (st == ARACHNE_OK) {
            ASSERT(c != NULL);
            ASSERT(same_after_round_trips(c));
            ok++;
        } else {
            ASSERT(c == NULL);
            ASSERT_MSG(arachne_last_error()[0] != '\0', "status %d without a message for <%s>", st, buf);
            ASSERT_MSG(st == ARACHNE_E_PARSE || st == ARACHNE_E_NOT_FOUND || st == ARACHNE_E_UNSUPPORTED,
                       "status %d for <%s>", st, buf);
            failed++;
        }
        arachne_cluster_destroy(c);
    }
    ASSERT_GT(ok, 0);
    ASSERT_GT(failed, 0);
    arachne_cluster_destroy(seed);
}

SUITE(cluster,
      T(parses_the_example),
      T(intra_link_class_in_clusters_and_json),
      T(spaces_aliases_and_merging),
      T(rejects_unknown_gpu_type),
      T(rejects_zero_and_negative_counts),
      T(rejects_missing_gpu_count),
      T(rejects_missing_node_count),
      T(rejects_lone_colon_and_missing_colon),
      T(rejects_trailing_garbage),
      T(rejects_node_larger_than_1024),
      T(rejects_count_overflow_and_huge_totals),
      T(rejects_more_than_max_types),
      T(long_specs_are_shortened_in_messages),
      T(builder_api),
      T(null_arguments_fail_cleanly),
      T(copy_is_deep),
      T(json_form_and_round_trip),
      T(json_reader_accepts_minimal_files),
      T(json_rejects_duplicate_keys),
      T(json_rejects_truncated_input),
      T(json_rejects_overflowing_number),
      T(json_rejects_invalid_utf8),
      T(json_rejects_bad_content),
      T(save_load_open),
      T(mutated_inputs_never_crash));
