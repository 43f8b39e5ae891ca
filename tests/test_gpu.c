/* test_gpu.c -- the built-in GPU catalog and name resolution. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "cluster.h"

static double field(const char *name, int f)
{
    double v = -1;
    if (arachne_gpu_get(name, f, &v) != ARACHNE_OK) return -1;
    return v;
}

TEST(catalog_has_the_required_types)
{
    static const char *want[] = { "A100-40", "A100-80", "H100", "H100-PCIe", "A6000", "A5000", "RTX-PRO-6000",
                                  "L40S", "V100-16", "GH-96", "Titan-RTX", "RTX-2080", "RTX-3090" };
    int n = arachne_gpu_catalog_count(), i, k, count = 0;
    const ar_gpu_spec *cat = ar_gpu_catalog(&count);
    ASSERT_EQ(n, (int)(sizeof want / sizeof want[0]));
    ASSERT_EQ(count, n);
    for (i = 0; i < n; i++) {
        const char *name = NULL;
        ASSERT_OK(arachne_gpu_catalog_name(i, &name));
        ASSERT_STR(name, want[i]);
        ASSERT_STR(cat[i].name, want[i]);
        for (k = 0; k <= ARACHNE_GPU_INTER_LATENCY_S; k++) ASSERT_GT(field(name, k), 0);
        ASSERT_GT(cat[i].intra_bw, cat[i].inter_bw * 0.99); /* inside a node is never slower */
        ASSERT_GT(cat[i].inter_lat, cat[i].intra_lat);
    }
    ASSERT_STATUS(arachne_gpu_catalog_name(n, &want[0]), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_gpu_catalog_name(-1, &want[0]), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_gpu_catalog_name(0, NULL), ARACHNE_E_INVALID_ARGUMENT);
}

TEST(memory_matches_the_sailor_testbed)
{
    ASSERT_EQ(field("A100-40", ARACHNE_GPU_MEMORY_BYTES), 42338615296LL);
    ASSERT_EQ(field("A100-80", ARACHNE_GPU_MEMORY_BYTES), 85899345920LL);
    ASSERT_EQ(field("V100-16", ARACHNE_GPU_MEMORY_BYTES), 17179869184LL);
    ASSERT_EQ(field("GH-96", ARACHNE_GPU_MEMORY_BYTES), 102625181696LL);
    ASSERT_EQ(field("Titan-RTX", ARACHNE_GPU_MEMORY_BYTES), 25769803776LL);
    ASSERT_EQ(field("RTX-3090", ARACHNE_GPU_MEMORY_BYTES), 25769803776LL);
    ASSERT_EQ(field("RTX-2080", ARACHNE_GPU_MEMORY_BYTES), 11811160064LL);
    ASSERT_EQ(field("H100", ARACHNE_GPU_MEMORY_BYTES), 80000000000LL);
    ASSERT_EQ(field("A6000", ARACHNE_GPU_MEMORY_BYTES), 48000000000LL);
}

TEST(datasheet_figures)
{
    ASSERT_NEAR(field("A100-40", ARACHNE_GPU_FLOPS), 312e12, 1e-12);
    ASSERT_NEAR(field("H100", ARACHNE_GPU_FLOPS), 989e12, 1e-12);
    ASSERT_NEAR(field("A6000", ARACHNE_GPU_FLOPS), 154.8e12, 1e-12);
    ASSERT_NEAR(field("V100", ARACHNE_GPU_FLOPS), 125e12, 1e-12);
    ASSERT_NEAR(field("H100", ARACHNE_GPU_HBM_BYTES_PER_S), 3350e9, 1e-12);
    ASSERT_NEAR(field("A100-80", ARACHNE_GPU_HBM_BYTES_PER_S), 2039e9, 1e-12);
    /* per direction: NVLink3 600 GB/s bidirectional -> 300 */
    ASSERT_NEAR(field("A100-40", ARACHNE_GPU_INTRA_BYTES_PER_S), 300e9, 1e-12);
    ASSERT_NEAR(field("H100", ARACHNE_GPU_INTRA_BYTES_PER_S), 450e9, 1e-12);
    ASSERT_NEAR(field("A6000", ARACHNE_GPU_INTRA_BYTES_PER_S), 32e9, 1e-12);
    ASSERT_NEAR(field("A100-40", ARACHNE_GPU_INTER_BYTES_PER_S), 25e9, 1e-12);
    ASSERT_NEAR(field("A6000", ARACHNE_GPU_INTER_BYTES_PER_S), 12.5e9, 1e-12);
    ASSERT_NEAR(field("Titan-RTX", ARACHNE_GPU_FLOPS), 130e12, 1e-12);
    ASSERT_NEAR(field("RTX-2080", ARACHNE_GPU_HBM_BYTES_PER_S), 448e9, 1e-12);
    ASSERT_NEAR(field("RTX-3090", ARACHNE_GPU_FLOPS), 71e12, 1e-12);
}

TEST(aliases_resolve_case_and_separator_insensitively)
{
    static const char *pairs[][2] = {
        { "a100-40gb", "A100-40" }, { "a100_40", "A100-40" }, { "a100", "A100-40" }, { "A100 40", "A100-40" },
        { "a100-80", "A100-80" }, { "h100-sxm", "H100" }, { "h100-80", "H100" }, { "H100", "H100" },
        { "h100-pcie", "H100-PCIe" }, { "rtx-pro-6000", "RTX-PRO-6000" }, { "rtxpro6000", "RTX-PRO-6000" },
        { "pro6000", "RTX-PRO-6000" }, { "a6000", "A6000" }, { "rtx-a6000", "A6000" }, { "RTX_A5000", "A5000" },
        { "v100", "V100-16" }, { "v100-16gb", "V100-16" }, { "gh200", "GH-96" }, { "gh-96", "GH-96" },
        { "titan-rtx", "Titan-RTX" }, { "titanrtx", "Titan-RTX" }, { "2080", "RTX-2080" }, { "3090", "RTX-3090" },
        { "l40s", "L40S" },
    };
    size_t i;
    for (i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *out = NULL;
        const ar_gpu_spec *g = ar_gpu_catalog_find(pairs[i][0]);
        ASSERT_MSG(g != NULL, "alias '%s' not found", pairs[i][0]);
        ASSERT_STR(g->name, pairs[i][1]);
        ASSERT_OK(arachne_gpu_canonical_name(pairs[i][0], &out));
        ASSERT_STR(out, pairs[i][1]);
    }
}

TEST(unknown_names_and_fields_fail_cleanly)
{
    const char *out = "x";
    double v = 7;
    ASSERT(ar_gpu_catalog_find("h10") == NULL);
    ASSERT(ar_gpu_catalog_find("") == NULL);
    ASSERT(ar_gpu_catalog_find("---") == NULL);
    ASSERT(ar_gpu_catalog_find(NULL) == NULL);
    ASSERT_STATUS(arachne_gpu_canonical_name("h10", &out), ARACHNE_E_NOT_FOUND);
    ASSERT_CONTAINS(arachne_last_error(), "'h10'");
    ASSERT(out == NULL);
    ASSERT_STATUS(arachne_gpu_get("h10", ARACHNE_GPU_FLOPS, &v), ARACHNE_E_NOT_FOUND);
    ASSERT_STATUS(arachne_gpu_get("h100", 7, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_gpu_get("h100", -1, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_EQ(v, 7);
    ASSERT_STATUS(arachne_gpu_get(NULL, 0, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_gpu_get("h100", 0, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_gpu_canonical_name(NULL, &out), ARACHNE_E_INVALID_ARGUMENT);
    {
        char huge[300];
        memset(huge, 'a', sizeof huge - 1);
        huge[sizeof huge - 1] = '\0';
        ASSERT(ar_gpu_catalog_find(huge) == NULL);
    }
}

TEST(field_numbers_are_pinned)
{
    ASSERT_EQ(ARACHNE_GPU_MEMORY_BYTES, 0);
    ASSERT_EQ(ARACHNE_GPU_FLOPS, 1);
    ASSERT_EQ(ARACHNE_GPU_HBM_BYTES_PER_S, 2);
    ASSERT_EQ(ARACHNE_GPU_INTRA_BYTES_PER_S, 3);
    ASSERT_EQ(ARACHNE_GPU_INTER_BYTES_PER_S, 4);
    ASSERT_EQ(ARACHNE_GPU_INTRA_LATENCY_S, 5);
    ASSERT_EQ(ARACHNE_GPU_INTER_LATENCY_S, 6);
}

SUITE(gpu,
      T(catalog_has_the_required_types),
      T(memory_matches_the_sailor_testbed),
      T(datasheet_figures),
      T(aliases_resolve_case_and_separator_insensitively),
      T(unknown_names_and_fields_fail_cleanly),
      T(field_numbers_are_pinned));
