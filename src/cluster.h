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
    int intra_link;         /* class of the intra-node link, AR_LINK_* (= arachne_link_class) */
} ar_gpu_spec;

/* Intra-node link classes (the public arachne_link_class numbers).  A node
 * is one link domain: every GPU of a node reaches every other over it. */
#define AR_LINK_NVLINK ARACHNE_LINK_NVLINK       /* NVLink / NVSwitch (an NVL72 rack is one node) */
#define AR_LINK_PCIE_P2P ARACHNE_LINK_PCIE_P2P   /* PCIe, peer-to-peer DMA between GPUs */
#define AR_LINK_PCIE_HOST ARACHNE_LINK_PCIE_HOST /* PCIe without peer-to-peer: staged through host memory */
/* Default class of a user-given type that is not in the catalog. */
#define AR_LINK_DEFAULT AR_LINK_PCIE_P2P
/* Name of a link class ("nvlink", "pcie-p2p", "pcie-host") or NULL; and the
 * class of a name (case-sensitive), or 0. */
const char *ar_link_class_name(int link);
int ar_link_class_from_name(const char *name);

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

/* Bounds of a measured GPU figure: its JSON key, SI unit, least and most
 * value (both allowed). */
typedef struct ar_gpu_bound {
    const char *key, *unit;
    double lo, hi;
} ar_gpu_bound;
/* Bounds of field (an arachne_gpu_field other than the link class); NULL
 * otherwise. */
const ar_gpu_bound *ar_gpu_field_bound(int field);
/* 1 when value lies within field's bounds (NaN never does), else 0. */
int ar_gpu_field_in_bounds(int field, double value);

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
    char *spec_cache;                 /* compact string, rebuilt by every mutator (borrowed out) */
    char *json_cache;                 /* JSON text, rebuilt by every mutator (borrowed out) */
    /* Added by the cluster module: */
    int type_custom[AR_MAX_TYPES];    /* 1: spec given by the user (add_gpu_type, JSON gpu_types) */
};

/* Index of the type with that name (alias-aware, case-insensitive) in the
 * cluster, or -1. */
int ar_cluster_type_index(const arachne_cluster *c, const char *name);
/* Inter-node bandwidth between types i and j (bytes/s). */
double ar_cluster_link_bw(const arachne_cluster *c, int i, int j);

/* Deep copy (nodes, links, caches).  *out is NULL on failure. */
int ar_cluster_copy(arachne_cluster **out, const arachne_cluster *src);
/* Recomputes the derived fields, the default link bandwidths and both text
 * caches.  Every mutator ends with it.  ARACHNE_E_NO_MEMORY if a cache could
 * not be built (then the text getters fail until the next mutation). */
int ar_cluster_refresh(arachne_cluster *c);
/* Finds the type `name` in c, or adds it from the catalog (spec copied, not
 * custom).  Returns the index, or a negative status with a message:
 * ARACHNE_E_NOT_FOUND (unknown name), ARACHNE_E_INVALID_ARGUMENT (more than
 * AR_MAX_TYPES types).  Does not refresh. */
int ar_cluster_intern_type(arachne_cluster *c, const char *name);
/* Appends `count` nodes of `gpus` GPUs of type index `type` (kept grouped by
 * type).  Checks the per-node and total limits; messages start with `where`.
 * Does not refresh. */
int ar_cluster_push_nodes(arachne_cluster *c, int type, long count, long gpus, const char *where);
/* Builds the JSON text of c into a malloc'd string (cluster_json.c). */
int ar_cluster_build_json(const arachne_cluster *c, char **out);
/* Checks a user-given GPU type name: 1..AR_NAME_MAX-1 characters of
 * [A-Za-z0-9._-], starting with a letter or digit. */
int ar_cluster_valid_type_name(const char *name);

#define AR_MAX_TOTAL_GPUS 1000000

#endif
