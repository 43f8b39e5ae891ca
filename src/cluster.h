/* cluster.h -- GPU type specs, the built-in catalog, and the cluster
 * (node list per GPU type).  Internal; the public API is in arachne.h. */
#ifndef ARACHNE_CLUSTER_H
#define ARACHNE_CLUSTER_H

#include "util.h"

#define AR_MAX_TYPES 16      /* GPU types per cluster */
#define AR_NAME_MAX 32       /* GPU type name, incl. NUL */
#define AR_MAX_NODE_GPUS 1024

/* One GPU type.  All SI units. */
typedef struct ar_gpu_spec {
    char name[AR_NAME_MAX]; /* canonical name, e.g. "A100-40", "H100", "RTX-PRO-6000" */
    double mem_bytes;       /* device memory, bytes */
    double flops;           /* dense BF16 tensor FLOP/s (FP16 for V100) */
    double hbm_bw;          /* device memory bandwidth, bytes/s */
    double intra_bw;        /* GPU-GPU inside a node, bytes/s per direction */
    double inter_bw;        /* across nodes, bytes/s per GPU per direction */
    double intra_lat;       /* seconds per message inside a node */
    double inter_lat;       /* seconds per message across nodes */
} ar_gpu_spec;

/* The built-in catalog (static, read-only). */
const ar_gpu_spec *ar_gpu_catalog(int *count);
/* Resolves a name or alias case-insensitively ("a100-40gb", "a100_40",
 * "H100-SXM") against the catalog.  NULL if unknown (no error set). */
const ar_gpu_spec *ar_gpu_catalog_find(const char *name);
/* Normalised lookup key of a GPU name: ASCII lowercase with '-', '_' and ' '
 * removed, into out[cap].  Returns 0 (out = "") when the key is empty or
 * does not fit. */
int ar_gpu_name_key(const char *name, char *out, size_t cap);
/* Reads field (an arachne_gpu_field) of g; ARACHNE_E_INVALID_ARGUMENT for an
 * unknown field. */
int ar_gpu_spec_field(const ar_gpu_spec *g, int field, double *out);

typedef struct ar_node {
    int type;   /* index into cluster->types */
    int gpus;   /* GPUs in this node, 1..AR_MAX_NODE_GPUS */
} ar_node;

struct arachne_cluster {
    int ntypes;
    ar_gpu_spec types[AR_MAX_TYPES];
    /* Bytes/s for a transfer that crosses nodes between a GPU of type i and a
     * GPU of type j (symmetric).  Default: min(inter_bw_i, inter_bw_j). */
    double link_bw[AR_MAX_TYPES][AR_MAX_TYPES];
    int link_set[AR_MAX_TYPES][AR_MAX_TYPES]; /* 1 when set explicitly */
    int nnodes, cap_nodes;
    ar_node *nodes;            /* node i; node ids are indices into this array */
    /* Derived (kept current by every mutator): */
    int total_gpus;
    int type_gpus[AR_MAX_TYPES];      /* GPUs per type */
    int type_nodes[AR_MAX_TYPES];     /* nodes per type */
    int type_max_node[AR_MAX_TYPES];  /* largest node of the type */
    char *spec_cache;                 /* compact string, built lazily (borrowed out) */
    char *json_cache;
};

/* Index of the type with that name (alias-aware, case-insensitive) in the
 * cluster, or -1. */
int ar_cluster_type_index(const arachne_cluster *c, const char *name);
/* Inter-node bandwidth between types i and j (bytes/s). */
double ar_cluster_link_bw(const arachne_cluster *c, int i, int j);

#endif
