/* calib.c -- link-class efficiencies (calib.h, docs/cost-model.md). */
#include <ctype.h>

#include "calib.h"

const ar_gen_scale ar_gen_default_scale = {
    0.85, /* hopper */
    0.85  /* blackwell */
};

static int has_prefix(const char *name, const char *pre)
{
    for (; *pre; pre++, name++)
        if (tolower((unsigned char)*name) != *pre) return 0;
    return 1;
}

double ar_gemm_eff_scale(const ar_gpu_spec *g)
{
    const char *n = g->name;
    if (has_prefix(n, "h100") || has_prefix(n, "h200") || has_prefix(n, "h800") || has_prefix(n, "gh"))
        return ar_gen_default_scale.hopper;
    if (has_prefix(n, "b200") || has_prefix(n, "b300") || has_prefix(n, "gb") || has_prefix(n, "rtx-pro"))
        return ar_gen_default_scale.blackwell;
    return 1.0;
}

const ar_link_consts ar_link_default_consts = {
    0.80, /* nvlink: Sailor's NCCL measurements reach 0.81-0.83 of the link */
    0.70, /* pcie */
    0.80  /* net */
};

/* NVLink-class parts move >= 100 GB/s per direction between GPUs; PCIe
 * parts (with or without peer-to-peer) at most 64. */
double ar_intra_link_eff(const ar_gpu_spec *g)
{
    return g->intra_bw >= 100e9 ? ar_link_default_consts.nvlink : ar_link_default_consts.pcie;
}

double ar_inter_link_eff(void) { return ar_link_default_consts.net; }
