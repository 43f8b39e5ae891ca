/* calib.h -- the fitted constants of the cost model, each with a physical
 * meaning, in one place.  docs/cost-model.md ("Calibration") gives every
 * value, its source and the data that fixed it; bench/bench_fidelity
 * reproduces the fit against tests/data/published-runs.json.  Internal. */
#ifndef ARACHNE_CALIB_H
#define ARACHNE_CALIB_H

#include "cluster.h"

/* Fraction of a link's per-direction bandwidth that NCCL-style collectives
 * and point-to-point sends achieve, by link class. */
typedef struct ar_link_consts {
    double nvlink;   /* NVLink / NVSwitch inside a node or an NVL72 rack */
    double pcie;     /* PCIe with peer-to-peer */
    double net;      /* InfiniBand / RoCE / Ethernet between nodes */
} ar_link_consts;

extern const ar_link_consts ar_link_default_consts;

/* Share of a layer's forward + backward time spent in the backward pass:
 * the window in which bucketed gradient reduction overlaps compute.  Fixed
 * by the measured backward / forward ratio (Sailor's profiles: 1.9-2.2). */
#define AR_BWD_SHARE (2.0 / 3.0)

/* GEMM efficiency ceiling of a GPU generation relative to the generator's
 * e_max (fitted on Ampere / Volta measurements): Hopper and Blackwell
 * tensor cores reach a smaller fraction of their much higher BF16 peak. */
typedef struct ar_gen_scale {
    double hopper;     /* H100, H200, GH200 */
    double blackwell;  /* B200, B300, GB200, GB300, RTX PRO 6000 */
} ar_gen_scale;

extern const ar_gen_scale ar_gen_default_scale;

/* ar_gen_scale factor of g's generation (1 for older parts). */
double ar_gemm_eff_scale(const ar_gpu_spec *g);

/* Collective efficiency of g's intra-node link (ar_link_consts by class). */
double ar_intra_link_eff(const ar_gpu_spec *g);
/* Efficiency of links between nodes. */
double ar_inter_link_eff(void);

#endif
