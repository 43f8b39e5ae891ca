/* calib.c -- the fitted constants: tensor-core GEMM ceilings by generation
 * and collective efficiencies by link class (calib.h, docs/cost-model.md). */
#include <ctype.h>

#include "calib.h"

const ar_tc_consts ar_tc_default_consts = {
    0.92, /* hopper: fitted on the H100 rows of tests/data/published-runs.json */
    0.56, /* blackwell: refitted on the 9 expressible B200 / GB200 rows (all MoE: see docs) */
    64.0  /* m_half: fitted on the same rows (MoE expert GEMMs are the small ones) */
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
        return ar_tc_default_consts.hopper;
    if (has_prefix(n, "b200") || has_prefix(n, "b300") || has_prefix(n, "gb") || has_prefix(n, "rtx-pro"))
        return ar_tc_default_consts.blackwell;
    return 1.0;
}

const ar_link_consts ar_link_default_consts = {
    0.80, /* nvlink: Sailor's NCCL measurements reach 0.81-0.83 of the link */
    0.30, /* pcie: fitted on Sailor's measured TP layers of the Titan RTX (PCIe peer-to-peer) */
    0.35, /* host: fitted on Sailor's RTX 2080 Ti and RTX 3090 layers (no peer-to-peer) */
    0.80  /* net */
};

double ar_intra_link_eff(const ar_gpu_spec *g)
{
    switch (g->intra_link) {
    case AR_LINK_NVLINK: return ar_link_default_consts.nvlink;
    case AR_LINK_PCIE_HOST: return ar_link_default_consts.host;
    default: return ar_link_default_consts.pcie;
    }
}

double ar_inter_link_eff(void) { return ar_link_default_consts.net; }
