/* profile.h -- the profile table: per-layer measurements keyed exactly by
 * (GPU type, layer kind, TP degree, micro-batch size).  Internal. */
#ifndef ARACHNE_PROFILE_H
#define ARACHNE_PROFILE_H

#include "cluster.h"
#include "model.h"

typedef struct ar_profile_entry {
    char gpu[AR_NAME_MAX]; /* canonical GPU type name */
    int kind;              /* AR_LAYER_* */
    int tp;                /* TP degree */
    int mbs;               /* micro-batch size (sequences) */
    double fwd_s;          /* forward seconds of ONE layer on one GPU of the TP group */
    double bwd_s;          /* backward seconds (no recomputation) */
    double tp_comm_s;      /* TP collective seconds (fwd+bwd) for the layer; 0 when tp == 1 */
    double act_bytes;      /* activation bytes stored per GPU for the layer (selective recompute) */
} ar_profile_entry;

struct arachne_profile {
    char model[64];        /* model the table was measured/generated for */
    int seq_len;           /* sequence length of every entry */
    int n, cap;
    ar_profile_entry *e;
    /* lookup index: entries sorted by key after ar_profile_index() */
    int sorted;
    char *json_cache;
};

/* Exact-match lookup (GPU name compared case-insensitively, canonical names
 * expected).  NULL when the key is absent: that configuration is not in the
 * search space. */
const ar_profile_entry *ar_profile_find(const arachne_profile *p, const char *gpu, int kind, int tp, int mbs);

#endif
