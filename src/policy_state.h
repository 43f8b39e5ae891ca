/* policy_state.h -- the planner state the policy sees: a fixed-size vector
 * whatever the cluster, a composition summary for FiLM, and per-candidate
 * feature rows for the depth and device heads.  Every feature and its
 * normalisation is listed in docs/policy.md ("State"). */
#ifndef ARACHNE_POLICY_STATE_H
#define ARACHNE_POLICY_STATE_H

#include "construct.h"
#include "plan.h"

#define AR_STATE_VERSION 7    /* feature-schema version stored in policy files (2: 12 candidate features;
                                 * 3: device rows rank the free types, entries 8-11; 6: the width
                                 * decision first (replica_first), its rows, x[126..127]; 7: the model
                                 * state r replicas hold counts routed experts and a ZeRO-1 optimizer
                                 * once, not r times.  4 and 5 were experiments that never shipped:
                                 * skipped so no such file loads) */
#define AR_STATE_DIM 128      /* x */
#define AR_STATE_COMP 16      /* c: composition summary */
#define AR_STATE_CAND 12      /* F: features per depth/device candidate */
#define AR_STATE_SLOTS 8      /* per-type slots in x (types beyond are summarised by the device head only) */
#define AR_STATE_SLOT_FEATS 10
#define AR_STATE_DEPTHS 16    /* GPUs-left-over-depth entries */

/* Features that depend only on the composition (model x cluster x setup):
 * computed once per planning call. */
typedef struct ar_state_static {
    int ntypes;
    int slot_type[AR_STATE_SLOTS];   /* cluster type in each slot, -1 empty */
    int type_slot[AR_MAX_TYPES];     /* slot of each type, -1 if none */
    double speed[AR_MAX_TYPES];      /* blocks/s at tp 1 relative to the fastest type, in (0, 1] */
    double comp[AR_STATE_COMP];      /* composition summary */
    double model_feat[8];
    double thr_ref;                  /* iter/s scale: ideal throughput at 40 % MFU */
    double state_bytes;              /* weights + grads + optimizer of the whole model, bytes */
    double state_rep;                /* the part of it each replica holds a copy of, bytes */
    double state_shared;             /* the part r replicas hold once between them (routed experts
                                      * under expert tiling, a ZeRO-1 optimizer), bytes */
    double max_stage_mem;            /* largest memory one TP group can offer, bytes */
} ar_state_static;

int ar_state_static_init(ar_state_static *st, const arachne_cost_model *cm);
/* Model state one of r replicas holds on average: state_rep + state_shared / r
 * (state_bytes exactly for r <= 1), bytes. */
double ar_state_per_replica(const ar_state_static *st, int r);

/* Encodes the state of decision ctx into x (AR_STATE_DIM) and, for DEPTH and
 * TYPE decisions, the candidate rows cand (ctx->n x AR_STATE_CAND). */
void ar_state_encode(const ar_state_static *st, const ar_dec_ctx *ctx, double *x, double *cand);

#endif
