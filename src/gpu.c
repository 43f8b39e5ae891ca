/* gpu.c -- the built-in GPU catalog, name resolution and the public
 * arachne_gpu_* getters.
 *
 * Sources: vendor datasheets as summarised in docs/formats.md ("GPU catalog").
 * Every figure is SI: bytes, FLOP/s, bytes/s per direction, seconds.
 *
 * Choices worth knowing (also in docs/formats.md):
 *  - memory: ONE convention for every type: a part sold as "N GB" holds
 *    N GiB = N * 2^30 bytes (the driver reports GiB-class capacities: an
 *    A100-80GB 81,920 MiB, an H100 80GB about 81,559 MiB).  Where the vendor
 *    quotes a usable capacity below the physical one (B200 180 of 192,
 *    Blackwell Ultra about 279 of 288, GB200 186) N is the usable figure;
 *  - flops: dense BF16 tensor throughput; FP16 with FP32 accumulate for the
 *    parts without BF16 (V100, Titan RTX, RTX 2080 Ti);
 *  - intra_bw: GPU-to-GPU inside a node per direction (NVLink aggregate per
 *    GPU halved; PCIe x16 per direction for PCIe-only parts; through host
 *    memory for GeForce cards without peer-to-peer);
 *  - intra_link: the class of that link (cluster.h AR_LINK_*): NVLink /
 *    NVSwitch, PCIe with peer-to-peer, or PCIe staged through the host.  A
 *    node is one such domain: an NVL72 rack is a node of 72 GPUs;
 *  - inter_bw: per GPU per direction across nodes, a class default:
 *    H100 / H200 / B200 / GB200 50 GB/s (one NDR 400 Gb/s port per GPU),
 *    B300 / GB300 100 GB/s (one 800 Gb/s port per GPU), other datacenter
 *    parts 25 GB/s (one HDR 200 Gb/s port per GPU; Slingshot 200 Gb/s per
 *    GH200 on the GH-96 testbed), workstation, consumer and L4 cards
 *    12.5 GB/s (a 100 GbE port);
 *  - latency: 3 us per message over NVLink, 5 us over PCIe, 10 us across nodes.
 */
#include <string.h>

#include "cluster.h"

#define GIB 1073741824.0 /* 2^30 bytes */
#define NV AR_LINK_NVLINK
#define P2P AR_LINK_PCIE_P2P
#define HOST AR_LINK_PCIE_HOST

static const ar_gpu_spec catalog[] = {
    /* name           memory      FLOP/s    HBM B/s  intra   inter   lat intra, inter (s)  link */
    { "A100-40",      40 * GIB,   312e12,   1555e9,  300e9,  25e9,   3e-6, 10e-6, NV },
    { "A100-80",      80 * GIB,   312e12,   2039e9,  300e9,  25e9,   3e-6, 10e-6, NV },
    { "H100",         80 * GIB,   989e12,   3350e9,  450e9,  50e9,   3e-6, 10e-6, NV },
    { "H100-PCIe",    80 * GIB,   756e12,   2000e9,  64e9,   25e9,   5e-6, 10e-6, P2P },
    { "A6000",        48 * GIB,   154.8e12, 768e9,   32e9,   12.5e9, 5e-6, 10e-6, P2P },
    { "A5000",        24 * GIB,   111e12,   768e9,   32e9,   12.5e9, 5e-6, 10e-6, P2P },
    { "RTX-PRO-6000", 96 * GIB,   504e12,   1792e9,  64e9,   12.5e9, 5e-6, 10e-6, P2P },
    { "L40S",         48 * GIB,   362e12,   864e9,   32e9,   25e9,   5e-6, 10e-6, P2P },
    { "V100-16",      16 * GIB,   125e12,   900e9,   150e9,  25e9,   3e-6, 10e-6, NV },
    { "GH-96",        96 * GIB,   989e12,   4000e9,  150e9,  25e9,   3e-6, 10e-6, NV },
    { "Titan-RTX",    24 * GIB,   130e12,   672e9,   16e9,   12.5e9, 5e-6, 10e-6, P2P },
    { "RTX-2080Ti",   11 * GIB,   53.8e12,  616e9,   16e9,   12.5e9, 5e-6, 10e-6, HOST },
    { "RTX-3090",     24 * GIB,   71e12,    936e9,   32e9,   12.5e9, 5e-6, 10e-6, HOST },
    { "H200",         141 * GIB,  989e12,   4800e9,  450e9,  50e9,   3e-6, 10e-6, NV },
    { "B200",         180 * GIB,  2250e12,  8000e9,  900e9,  50e9,   3e-6, 10e-6, NV },
    { "B300",         279 * GIB,  2250e12,  8000e9,  900e9,  100e9,  3e-6, 10e-6, NV },
    { "GB200",        186 * GIB,  2500e12,  8000e9,  900e9,  50e9,   3e-6, 10e-6, NV },
    { "GB300",        279 * GIB,  2500e12,  8000e9,  900e9,  100e9,  3e-6, 10e-6, NV },
    { "RTX-4090",     24 * GIB,   165e12,   1008e9,  25e9,   12.5e9, 5e-6, 10e-6, HOST },
    { "L4",           24 * GIB,   121e12,   300e9,   32e9,   12.5e9, 5e-6, 10e-6, P2P },
};

/* Aliases, written in any spelling: they are compared after ar_gpu_name_key
 * (lowercase, '-', '_' and ' ' removed).  Canonical names match themselves.
 * "a100" alone means the 40 GB part (docs/formats.md says so); "rtx-2080"
 * and "2080" are the old name of the RTX-2080Ti entry (Sailor's profiles and
 * plans call its 11 GB 2080 Ti machines "RTX-2080"). */
static const struct { const char *alias, *name; } aliases[] = {
    { "a100-40gb", "A100-40" },       { "a100", "A100-40" },           { "a100-sxm4-40gb", "A100-40" },
    { "a100-40g", "A100-40" },        { "a100-80gb", "A100-80" },      { "a100-sxm4-80gb", "A100-80" },
    { "a100-80g", "A100-80" },        { "h100-sxm", "H100" },          { "h100-80", "H100" },
    { "h100-80gb", "H100" },          { "h100-sxm5", "H100" },         { "h100-sxm5-80gb", "H100" },
    { "h100-pcie-80gb", "H100-PCIe" }, { "rtx-a6000", "A6000" },       { "a6000-48gb", "A6000" },
    { "rtx-a5000", "A5000" },         { "a5000-24gb", "A5000" },       { "pro6000", "RTX-PRO-6000" },
    { "rtx-pro-6000-blackwell", "RTX-PRO-6000" }, { "rtx-6000-pro", "RTX-PRO-6000" },
    { "pro-6000", "RTX-PRO-6000" },   { "l40s-48gb", "L40S" },         { "v100", "V100-16" },
    { "v100-16gb", "V100-16" },       { "v100-sxm2", "V100-16" },      { "v100-sxm2-16gb", "V100-16" },
    { "gh200", "GH-96" },             { "gh200-96gb", "GH-96" },       { "titan", "Titan-RTX" },
    { "rtx-2080", "RTX-2080Ti" },     { "2080", "RTX-2080Ti" },        { "2080ti", "RTX-2080Ti" },
    { "geforce-rtx-2080-ti", "RTX-2080Ti" }, { "geforce-rtx-2080", "RTX-2080Ti" },
    { "3090", "RTX-3090" },           { "geforce-rtx-3090", "RTX-3090" },
    { "h200-sxm", "H200" },           { "h200-141gb", "H200" },        { "b200-sxm", "B200" },
    { "b300-sxm", "B300" },           { "blackwell-ultra", "B300" },   { "gb200-nvl72", "GB200" },
    { "gb300-nvl72", "GB300" },       { "4090", "RTX-4090" },          { "geforce-rtx-4090", "RTX-4090" },
    { "l4-24gb", "L4" },
};

static const char *const link_names[] = { "nvlink", "pcie-p2p", "pcie-host" };

const char *ar_link_class_name(int link)
{
    return (link >= AR_LINK_NVLINK && link <= AR_LINK_PCIE_HOST) ? link_names[link - AR_LINK_NVLINK] : NULL;
}

int ar_link_class_from_name(const char *name)
{
    int k;
    for (k = AR_LINK_NVLINK; name && k <= AR_LINK_PCIE_HOST; k++)
        if (strcmp(name, link_names[k - AR_LINK_NVLINK]) == 0) return k;
    return 0;
}

int ar_gpu_name_key(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    if (!name || cap == 0) return 0;
    for (; *name; name++) {
        char ch = *name;
        if (ch == '-' || ch == '_' || ch == ' ') continue;
        if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
        if (n + 1 >= cap) { out[0] = '\0'; return 0; }
        out[n++] = ch;
    }
    out[n] = '\0';
    return n > 0;
}

const ar_gpu_spec *ar_gpu_catalog(int *count)
{
    if (count) *count = (int)AR_COUNT(catalog);
    return catalog;
}

const ar_gpu_spec *ar_gpu_catalog_find(const char *name)
{
    char key[64], k2[64];
    size_t i, j;
    if (!ar_gpu_name_key(name, key, sizeof key)) return NULL;
    for (i = 0; i < AR_COUNT(catalog); i++) {
        ar_gpu_name_key(catalog[i].name, k2, sizeof k2);
        if (strcmp(key, k2) == 0) return &catalog[i];
    }
    for (i = 0; i < AR_COUNT(aliases); i++) {
        ar_gpu_name_key(aliases[i].alias, k2, sizeof k2);
        if (strcmp(key, k2) != 0) continue;
        for (j = 0; j < AR_COUNT(catalog); j++)
            if (strcmp(catalog[j].name, aliases[i].name) == 0) return &catalog[j];
    }
    return NULL;
}

int ar_gpu_spec_field(const ar_gpu_spec *g, int field, double *out)
{
    switch (field) {
    case ARACHNE_GPU_MEMORY_BYTES: *out = g->mem_bytes; break;
    case ARACHNE_GPU_FLOPS: *out = g->flops; break;
    case ARACHNE_GPU_HBM_BYTES_PER_S: *out = g->hbm_bw; break;
    case ARACHNE_GPU_INTRA_BYTES_PER_S: *out = g->intra_bw; break;
    case ARACHNE_GPU_INTER_BYTES_PER_S: *out = g->inter_bw; break;
    case ARACHNE_GPU_INTRA_LATENCY_S: *out = g->intra_lat; break;
    case ARACHNE_GPU_INTER_LATENCY_S: *out = g->inter_lat; break;
    case ARACHNE_GPU_INTRA_LINK: *out = (double)g->intra_link; break;
    default: return ar_error(ARACHNE_E_INVALID_ARGUMENT, "GPU field %d is not an arachne_gpu_field", field);
    }
    return ARACHNE_OK;
}

/* Physical bounds of each measured figure.  Wide enough for any part from
 * a 2010 card to racks a decade ahead of the catalog (which spans 11.8 GB
 * to 300 GB, 53.8 to 2,500 TFLOP/s, 12.5 GB/s to 8 TB/s and 3 to 10 us);
 * narrow enough that no time the cost model derives from them overflows,
 * underflows or rounds to nothing: an inter-node bandwidth of 1e-300 B/s
 * once priced a stage at 6.7e304 s and an MFU of 13,883 %.  Indexed by
 * arachne_gpu_field; docs/formats.md ("Cluster", "JSON") lists them. */
static const ar_gpu_bound bounds[] = {
    { "memory_bytes", "B", 1e6, 1e15 },
    { "flops", "FLOP/s", 1e9, 1e19 },
    { "hbm_bytes_per_s", "B/s", 1e8, 1e15 },
    { "intra_bytes_per_s", "B/s", 1e6, 1e15 },
    { "inter_bytes_per_s", "B/s", 1e6, 1e15 },
    { "intra_latency_s", "s", 1e-9, 1.0 },
    { "inter_latency_s", "s", 1e-9, 1.0 },
};

const ar_gpu_bound *ar_gpu_field_bound(int field)
{
    return field >= 0 && field < (int)AR_COUNT(bounds) ? &bounds[field] : NULL;
}

int ar_gpu_field_in_bounds(int field, double value)
{
    const ar_gpu_bound *b = ar_gpu_field_bound(field);
    return b && value >= b->lo && value <= b->hi;  /* false for NaN */
}

/* ---- public API --------------------------------------------------------- */

int arachne_gpu_catalog_count(void) { return (int)AR_COUNT(catalog); }

int arachne_gpu_catalog_name(int index, const char **out)
{
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_gpu_catalog_name: out is NULL");
    *out = NULL;
    if (index < 0 || index >= (int)AR_COUNT(catalog))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "GPU catalog index %d out of range [0, %d)", index,
                        (int)AR_COUNT(catalog));
    *out = catalog[index].name;
    return ARACHNE_OK;
}

int arachne_gpu_canonical_name(const char *name, const char **out)
{
    const ar_gpu_spec *g;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_gpu_canonical_name: out is NULL");
    *out = NULL;
    if (!name) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_gpu_canonical_name: name is NULL");
    g = ar_gpu_catalog_find(name);
    if (!g) return ar_error(ARACHNE_E_NOT_FOUND, "unknown GPU type '%.64s' (see 'arachne gpus')", name);
    *out = g->name;
    return ARACHNE_OK;
}

int arachne_gpu_get(const char *name, int field, double *out)
{
    const ar_gpu_spec *g;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_gpu_get: out is NULL");
    if (!name) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_gpu_get: name is NULL");
    g = ar_gpu_catalog_find(name);
    if (!g) return ar_error(ARACHNE_E_NOT_FOUND, "unknown GPU type '%.64s' (see 'arachne gpus')", name);
    return ar_gpu_spec_field(g, field, out);
}
