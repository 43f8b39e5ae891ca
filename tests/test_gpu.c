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
                                  "L40S", "V100-16", "GH-96", "Titan-RTX", "RTX-2080Ti", "RTX-3090",
                                  "H200", "B200", "B300", "GB200", "GB300", "RTX-4090", "L4" };
    int n = arachne_gpu_catalog_count(), i, k, count = 0;
    const ar_gpu_spec *cat = ar_gpu_catalog(&count);
    ASSERT_EQ(n, (int)(sizeof want / sizeof want[0]));
    ASSERT_EQ(count, n);
    for (i = 0; i < n; i++) {
        const char *name = NULL;
        ASSERT_OK(arachne_gpu_catalog_name(i, &name));
        ASSERT_STR(name, want[i]);
        ASSERT_STR(cat[i].name, want[i]);
        for (k = 0; k <= ARACHNE_GPU_INTRA_LINK; k++) ASSERT_GT(field(name, k), 0);
        ASSERT(ar_link_class_name(cat[i].intra_link) != NULL);
        ASSERT_GT(cat[i].intra_bw, cat[i].inter_bw * 0.99); /* inside a node is never slower */
        ASSERT_GT(cat[i].inter_lat, cat[i].intra_lat);
    }
    ASSERT_STATUS(arachne_gpu_catalog_name(n, &want[0]), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_gpu_catalog_name(-1, &want[0]), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_gpu_catalog_name(0, NULL), ARACHNE_E_INVALID_ARGUMENT);
}

/* One convention for every type: a part sold as N GB holds N GiB. */
TEST(memory_is_nominal_gib_for_every_type)
{
    static const struct { const char *name; double gib; } want[] = {
        { "A100-40", 40 }, { "A100-80", 80 }, { "H100", 80 }, { "H100-PCIe", 80 }, { "A6000", 48 },
        { "A5000", 24 }, { "RTX-PRO-6000", 96 }, { "L40S", 48 }, { "V100-16", 16 }, { "GH-96", 96 },
        { "Titan-RTX", 24 }, { "RTX-2080Ti", 11 }, { "RTX-3090", 24 }, { "H200", 141 }, { "B200", 180 },
        { "B300", 279 }, { "GB200", 186 }, { "GB300", 279 }, { "RTX-4090", 24 }, { "L4", 24 },
    };
    size_t i;
    ASSERT_EQ((int)(sizeof want / sizeof want[0]), arachne_gpu_catalog_count());
    for (i = 0; i < sizeof want / sizeof want[0]; i++)
        ASSERT_MSG(field(want[i].name, ARACHNE_GPU_MEMORY_BYTES) == want[i].gib * 1073741824.0, "%s: %.0f bytes",
                   want[i].name, field(want[i].name, ARACHNE_GPU_MEMORY_BYTES));
    /* the Sailor testbed's byte counts for its 80 GB, 16 GB and 24 GB parts */
    ASSERT_EQ(field("A100-80", ARACHNE_GPU_MEMORY_BYTES), 85899345920LL);
    ASSERT_EQ(field("V100-16", ARACHNE_GPU_MEMORY_BYTES), 17179869184LL);
    ASSERT_EQ(field("RTX-3090", ARACHNE_GPU_MEMORY_BYTES), 25769803776LL);
    ASSERT_EQ(field("RTX-2080", ARACHNE_GPU_MEMORY_BYTES), 11811160064LL);
}

TEST(link_classes)
{
    static const struct { const char *name; int link; } want[] = {
        { "A100-40", ARACHNE_LINK_NVLINK }, { "H100", ARACHNE_LINK_NVLINK }, { "GB200", ARACHNE_LINK_NVLINK },
        { "GB300", ARACHNE_LINK_NVLINK }, { "GH-96", ARACHNE_LINK_NVLINK }, { "H100-PCIe", ARACHNE_LINK_PCIE_P2P },
        { "A6000", ARACHNE_LINK_PCIE_P2P }, { "L4", ARACHNE_LINK_PCIE_P2P }, { "RTX-4090", ARACHNE_LINK_PCIE_HOST },
        { "RTX-3090", ARACHNE_LINK_PCIE_HOST }, { "RTX-2080Ti", ARACHNE_LINK_PCIE_HOST },
    };
    size_t i;
    for (i = 0; i < sizeof want / sizeof want[0]; i++)
        ASSERT_MSG(field(want[i].name, ARACHNE_GPU_INTRA_LINK) == want[i].link, "%s", want[i].name);
    ASSERT_EQ(ARACHNE_LINK_NVLINK, 1);
    ASSERT_EQ(ARACHNE_LINK_PCIE_P2P, 2);
    ASSERT_EQ(ARACHNE_LINK_PCIE_HOST, 3);
    ASSERT_STR(ar_link_class_name(ARACHNE_LINK_PCIE_HOST), "pcie-host");
    ASSERT(ar_link_class_name(0) == NULL);
    ASSERT(ar_link_class_name(4) == NULL);
    ASSERT_EQ(ar_link_class_from_name("nvlink"), ARACHNE_LINK_NVLINK);
    ASSERT_EQ(ar_link_class_from_name("pcie-p2p"), ARACHNE_LINK_PCIE_P2P);
    ASSERT_EQ(ar_link_class_from_name("NVLink"), 0);
    ASSERT_EQ(ar_link_class_from_name(NULL), 0);
}

/* NVL72: a rack of 72 GPUs is one NVLink domain, i.e. one node. */
TEST(nvl72_racks_parse_as_nodes_of_72)
{
    arachne_cluster *c = NULL;
    int n = 0, g = 0;
    double v = 0;
    ASSERT_OK(arachne_cluster_parse(&c, "gb200:4x72,gb300:1x72"));
    ASSERT_OK(arachne_cluster_gpu_count(c, NULL, &g));
    ASSERT_EQ(g, 360);
    ASSERT_OK(arachne_cluster_largest_node(c, "GB200", &n));
    ASSERT_EQ(n, 72);
    ASSERT_OK(arachne_cluster_gpu_get(c, "gb200", ARACHNE_GPU_INTRA_LINK, &v));
    ASSERT_EQ(v, ARACHNE_LINK_NVLINK);
    ASSERT_OK(arachne_cluster_gpu_get(c, "gb300", ARACHNE_GPU_INTER_BYTES_PER_S, &v));
    ASSERT_NEAR(v, 100e9, 1e-12);
    arachne_cluster_destroy(c);
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
    /* Sailor's "RTX-2080" machines are 11 GB 2080 Ti cards: the Ti's figures */
    ASSERT_NEAR(field("RTX-2080", ARACHNE_GPU_HBM_BYTES_PER_S), 616e9, 1e-12);
    ASSERT_NEAR(field("RTX-2080Ti", ARACHNE_GPU_FLOPS), 53.8e12, 1e-12);
    ASSERT_NEAR(field("H200", ARACHNE_GPU_HBM_BYTES_PER_S), 4800e9, 1e-12);
    ASSERT_NEAR(field("B200", ARACHNE_GPU_FLOPS), 2250e12, 1e-12);
    ASSERT_NEAR(field("B200", ARACHNE_GPU_INTRA_BYTES_PER_S), 900e9, 1e-12);
    ASSERT_NEAR(field("GB200", ARACHNE_GPU_FLOPS), 2500e12, 1e-12);
    ASSERT_NEAR(field("B300", ARACHNE_GPU_INTER_BYTES_PER_S), 100e9, 1e-12);
    ASSERT_NEAR(field("RTX-4090", ARACHNE_GPU_INTRA_BYTES_PER_S), 25e9, 1e-12);
    ASSERT_NEAR(field("L4", ARACHNE_GPU_FLOPS), 121e12, 1e-12);
    ASSERT_NEAR(field("L4", ARACHNE_GPU_HBM_BYTES_PER_S), 300e9, 1e-12);
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
        { "titan-rtx", "Titan-RTX" }, { "titanrtx", "Titan-RTX" }, { "2080", "RTX-2080Ti" }, { "3090", "RTX-3090" },
        { "l40s", "L40S" }, { "RTX-2080", "RTX-2080Ti" }, { "rtx-2080-ti", "RTX-2080Ti" }, { "h200", "H200" },
        { "GB200", "GB200" }, { "gb200-nvl72", "GB200" }, { "gb300", "GB300" }, { "b300", "B300" },
        { "4090", "RTX-4090" }, { "rtx4090", "RTX-4090" }, { "l4", "L4" }, { "B200", "B200" },
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
    ASSERT_STATUS(arachne_gpu_get("h100", 8, &v), ARACHNE_E_INVALID_ARGUMENT);
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
    ASSERT_EQ(ARACHNE_GPU_INTRA_LINK, 7);
}

SUITE(gpu,
      T(catalog_has_the_required_types),
      T(memory_is_nominal_gib_for_every_type),
      T(link_classes),
      T(nvl72_racks_parse_as_nodes_of_72),
      T(datasheet_figures),
      T(aliases_resolve_case_and_separator_insensitively),
      T(unknown_names_and_fields_fail_cleanly),
      T(field_numbers_are_pinned));
