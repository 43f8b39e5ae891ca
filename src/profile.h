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
    int sorted;            /* always 1: ar_profile_add keeps e[] sorted */
    char *json_cache;      /* unused (to_json writes into caller buffers) */
    /* What the numbers were measured in (profile_precision.c; JSON keys
     * "precision" and "act_recompute", written only when not the default): */
    int precision;         /* AR_PREC_*: data type of the run (element size of activations and sends) */
    int act_recompute;     /* AR_RECOMPUTE_* under which act_bytes were measured (default selective) */
};

/* Data types a profile can be measured in.  AR_PREC_BF16 (0) is the default:
 * generated tables and files without a "precision" key. */
enum { AR_PREC_BF16 = 0, AR_PREC_FP16 = 1, AR_PREC_FP32 = 2, AR_PREC_COUNT = 3 };
/* "bf16", "fp16", "fp32", or NULL; and back (exact, lowercase), or -1. */
const char *ar_precision_name(int prec);
int ar_precision_from_name(const char *name);
/* Bytes per element of the precision (2 or 4; 2 for an unknown value). */
double ar_precision_bytes(int prec);
/* Bytes per element of the profile's activations and pipeline sends. */
double ar_profile_elt_bytes(const arachne_profile *p);
/* "none", "selective", "full", or NULL; and back, or -1. */
const char *ar_recompute_name(int rc);
int ar_recompute_from_name(const char *name);
/* act_bytes of entry e of p converted to what a 16-bit run under recompute
 * mode `recompute` stores (the cost model's meaning of act_bytes): scaled by
 * 2 / ar_profile_elt_bytes(p), and for blocks by the ratio of the model's
 * formula (ar_model_act_bytes) under `recompute` to it under the mode the
 * profile was measured in.  e->act_bytes when nothing differs. */
double ar_profile_act_bytes_as(const arachne_profile *p, const ar_profile_entry *e, const arachne_model *m,
                               int seq, int recompute);

/* Exact-match lookup (GPU name compared case-insensitively, canonical names
 * expected).  NULL when the key is absent: that configuration is not in the
 * search space. */
const ar_profile_entry *ar_profile_find(const arachne_profile *p, const char *gpu, int kind, int tp, int mbs);

/* ---- Additions (profile module) ---------------------------------------- */

/* Limits on keys (checked by ar_profile_add). */
#define AR_PROFILE_MAX_TP 1024
#define AR_PROFILE_MAX_MBS (1 << 20)
#define AR_PROFILE_MIN_FWD_S 1e-9 /* seconds: smallest forward time of an entry */
#define AR_PROFILE_MAX_SEQ_LEN 100000000 /* tokens; the reader's and the writer's bound */

/* Adds or replaces one entry (validates it; message names the entry).
 * Keeps p->e sorted by key so ar_profile_find stays a pure read. */
int ar_profile_add(arachne_profile *p, const char *gpu, int kind, int tp, int mbs,
                   double fwd_s, double bwd_s, double tp_comm_s, double act_bytes);
/* Empty table (model name 1..63 bytes, seq_len >= 1). */
int ar_profile_new(arachne_profile **out, const char *model, int seq_len);
/* Appends the table's JSON text to b (docs/formats.md "Profile"). */
void ar_profile_write_json(const arachne_profile *p, ar_buf *b);
/* Layer kind name ("embed", "dense", "moe", "head") or NULL. */
const char *ar_layer_kind_name(int kind);

/* The analytic generator (src/profile_gen.c, docs/profiles.md).
 * Calibrated constants: */
typedef struct ar_gen_consts {
    double e_max;          /* GEMM efficiency ceiling (fraction of peak FLOP/s) */
    double m_half;         /* GEMM size (smallest of M, N, K) at which efficiency is e_max / 2 */
    double hbm_eff;        /* achieved fraction of HBM bandwidth */
    double comm_eff;       /* achieved fraction of the intra-node link bandwidth in TP all-reduces */
    double mem_bwd_ratio;  /* backward / forward time of the memory-bound work */
    double layer_overhead_s; /* fixed seconds per layer per pass (launches, framework) */
    double score_passes;   /* eager attention: element passes over the seq x seq scores (fwd) */
} ar_gen_consts;
/* How the run being modelled executes. */
typedef struct ar_gen_opts {
    double elt_bytes;      /* bytes per activation/weight element (2: BF16) */
    double flops;          /* peak FLOP/s of that data type; 0: the spec's (BF16) value */
    int eager_attention;   /* 0: FlashAttention (no seq x seq traffic); 1: eager softmax */
    int sequence_parallel; /* 1: norms/elementwise over tokens/tp */
    int eager_elementwise; /* 1: PyTorch eager element-wise ops (no torch.compile / fused kernels) */
    int recompute_elementwise; /* 1: a block's backward re-runs its forward element-wise ops (per-op
                                * selective checkpointing recomputes every op it does not save) */
} ar_gen_opts;
/* The constants the library uses (docs/profiles.md) and the default options
 * (BF16, FlashAttention, sequence parallel). */
extern const ar_gen_consts ar_gen_default_consts;
void ar_gen_default_opts(ar_gen_opts *o);
/* One generated entry for model m on GPU g: fills fwd_s, bwd_s, tp_comm_s,
 * act_bytes (and the key fields) of *out.  k / o NULL: the defaults.
 * ARACHNE_E_INVALID_ARGUMENT for a kind the model lacks or bad sizes. */
int ar_profile_gen_entry(const arachne_model *m, const ar_gpu_spec *g, int kind, int tp, int mbs, int seq,
                         const ar_gen_consts *k, const ar_gen_opts *o, ar_profile_entry *out);
/* Seconds of one BF16 GEMM (M x K) . (K x N) on GPU g as the generator
 * prices it (the roofline of docs/profiles.md, "Method", with the library's
 * constants); 0 for a g without flops or HBM bandwidth.  bench_profile_measured
 * sets it beside measured products. */
double ar_profile_gen_gemm_s(const ar_gpu_spec *g, double M, double N, double K);
/* Adds the generated entries of GPU type g (TP up to max_tp) to p. */
int ar_profile_gen_type(arachne_profile *p, const arachne_model *m, const ar_gpu_spec *g, int max_tp);
/* The same for a run executed as o describes (NULL: the defaults); the
 * fidelity bench uses it for runs without FlashAttention or sequence
 * parallelism. */
int ar_profile_gen_type_opts(arachne_profile *p, const arachne_model *m, const ar_gpu_spec *g, int max_tp,
                             const ar_gen_opts *o);

#endif
