/* model.h -- model architecture, derived parameter counts, FLOPs and
 * activation sizes per layer kind.  Internal; public API in arachne.h. */
#ifndef ARACHNE_MODEL_H
#define ARACHNE_MODEL_H

#include "util.h"

/* Layer kinds (same numbers as the public ARACHNE_LAYER_*).  DENSE and MOE
 * are whole transformer blocks (attention + MLP); the four after HEAD are
 * the single-mixer layers of a hybrid stack (Megatron's hybrid pattern
 * symbols M, *, - and E). */
enum {
    AR_LAYER_EMBED = 0, AR_LAYER_DENSE = 1, AR_LAYER_MOE = 2, AR_LAYER_HEAD = 3,
    AR_LAYER_MAMBA = 4, AR_LAYER_ATTENTION = 5, AR_LAYER_MLP = 6, AR_LAYER_MOE_MLP = 7,
    AR_LAYER_KINDS = 8
};
/* Longest hybrid pattern (layers of a hybrid model), NUL excluded. */
#define AR_MODEL_PATTERN_MAX 1023

/* 1 for the kinds a model's blocks can have (all but EMBED and HEAD). */
static inline int ar_kind_is_block(int kind)
{
    return kind > AR_LAYER_EMBED && kind < AR_LAYER_KINDS && kind != AR_LAYER_HEAD;
}
/* 1 for the kinds with routed experts (expert tiling, EP all-to-all). */
static inline int ar_kind_routed(int kind) { return kind == AR_LAYER_MOE || kind == AR_LAYER_MOE_MLP; }
/* 1 for the kinds with an attention core (context parallelism's ring). */
static inline int ar_kind_has_attention(int kind)
{
    return kind == AR_LAYER_DENSE || kind == AR_LAYER_MOE || kind == AR_LAYER_ATTENTION;
}
/* Recomputation modes (same numbers as the public ARACHNE_RECOMPUTE_*). */
enum { AR_RECOMPUTE_NONE = 0, AR_RECOMPUTE_SELECTIVE = 1, AR_RECOMPUTE_FULL = 2 };
/* OR-ed into the recompute argument of ar_model_act_bytes: the norm outputs
 * and the routed experts' activation-function outputs are recomputed too
 * (Megatron --recompute-modules layernorm moe_act; ARACHNE_OPT_RECOMPUTE_NORM_ACT) */
#define AR_RECOMPUTE_NORM_ACT_BIT 8
#define AR_RECOMPUTE_MODE_MASK 7

struct arachne_model {
    char name[64];
    int blocks;          /* transformer blocks (dense + MoE), or the layers of a hybrid pattern */
    int hidden;
    int heads, kv_heads, head_dim;
    int ffn;             /* dense FFN size (dense blocks, incl. the dense prefix of MoE models) */
    int vocab;
    int experts;         /* routed experts; 0 = dense model */
    int top_k;
    int shared_experts;
    int expert_ffn;      /* FFN size of one expert */
    int dense_prefix;    /* first blocks that are dense in a MoE model */
    int gated_mlp;       /* 1: SwiGLU (3 matrices, the presets); 0: GELU MLP (2 matrices, GPT/OPT) */
    int qk_norm;         /* Qwen3-style per-head RMSNorm on q and k */
    int tied_embeddings;
    /* MLA (DeepSeek); mla == 0 means standard GQA attention. */
    int mla, q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
    /* Hybrid stack (Megatron --hybrid-override-pattern, Nemotron-H): one
     * symbol per layer -- M Mamba-2 mixer, * attention, - MLP, E MoE MLP;
     * "" means every block is a transformer block (dense_prefix decides
     * which are MoE).  Mamba-2 sizes (0 when the pattern has no M): heads,
     * head dimension, SSM state size, B/C groups, causal-conv kernel width
     * and the chunk length of the chunked (SSD) scan. */
    char pattern[AR_MODEL_PATTERN_MAX + 1];
    int mamba_heads, mamba_head_dim, mamba_state, mamba_groups, mamba_conv, mamba_chunk;
    int expert_latent;   /* LatentMoE: width the routed experts work in (tokens projected hidden ->
                          * latent before dispatch, back after); 0: the hidden size */

    /* Derived by ar_model_finish(): parameters of ONE layer of each kind. */
    double params[AR_LAYER_KINDS];
    double expert_params[AR_LAYER_KINDS]; /* routed-expert share of params[kind] */
    double active_params[AR_LAYER_KINDS]; /* parameters touched per token */
    double total_params, active_total;    /* whole model incl. embedding + head */
    int kind_count[AR_LAYER_KINDS];       /* hybrid models: layers of each kind */
    unsigned char block_kinds[AR_MODEL_PATTERN_MAX]; /* hybrid models: kind of each layer */
    char *json_cache;
};

/* Validates the fields and fills the derived ones.  ARACHNE_E_INVALID_ARGUMENT
 * naming the bad field. */
int ar_model_finish(arachne_model *m);
/* Kind of block b (0-based): AR_LAYER_DENSE or AR_LAYER_MOE, or for a
 * hybrid model the kind of its pattern symbol. */
int ar_model_block_kind(const arachne_model *m, int block);
/* 1 when block b has routed experts. */
static inline int ar_model_block_routed(const arachne_model *m, int block)
{
    return m->experts > 0 && ar_kind_routed(ar_model_block_kind(m, block));
}
/* 1 when TP degree tp splits every layer of the model into whole heads
 * (attention heads; Mamba heads and B/C groups). */
int ar_model_tp_ok(const arachne_model *m, int tp);
/* Mean parameters of one block, and of its routed experts, over the
 * model's blocks (for a hybrid model, whose layers differ in size). */
void ar_model_mean_layer(const arachne_model *m, double *params, double *expert_params);
/* Number of transformer blocks of a kind in the model. */
int ar_model_kind_count(const arachne_model *m, int kind);
/* Forward FLOPs of one layer of `kind` for mbs sequences of seq tokens,
 * whole layer (before any TP split), attention score/context FLOPs included
 * (causal masking not discounted).  Backward is 2x forward. */
double ar_model_flops_fwd(const arachne_model *m, int kind, int seq, int mbs);
/* Forward FLOPs per token of a Mamba-2 layer's chunked (SSD) scan at
 * sequence seq: the batched matmuls inside and across chunks. */
double ar_model_ssd_flops(const arachne_model *m, int seq);
/* Share of a dense block's forward FLOPs (at sequence seq) in its
 * even-numbered matmuls by call order -- the ones torchtitan's per-op
 * selective checkpointing recomputes (ARACHNE_OPT_RECOMPUTE_ALT_MM);
 * 0 for other kinds and for MLA attention. */
double ar_model_alt_mm_share(const arachne_model *m, int kind, int seq);
/* Bytes of activations one GPU stores for backward, for one layer of `kind`,
 * mbs sequences of seq tokens, TP degree tp (sequence parallel on), in 16-bit,
 * under the recompute mode.  Derived from the real tensor shapes (SwiGLU,
 * GQA, MoE routing with top_k).  Embedding/head include their own tensors
 * (logits for the head). */
double ar_model_act_bytes(const arachne_model *m, int kind, int seq, int mbs, int tp, int recompute);
/* Width of the vectors a routed expert reads and writes (and EP
 * dispatches): the latent width of a LatentMoE model, else hidden. */
static inline double ar_model_expert_width(const arachne_model *m)
{
    return m->expert_latent > 0 ? (double)m->expert_latent : (double)m->hidden;
}
/* Bytes sent from one stage to the next for one micro-batch (the hidden
 * state, 16-bit): seq * mbs * hidden * 2. */
double ar_model_boundary_bytes(const arachne_model *m, int seq, int mbs);

/* Additions (model module): */
/* Allocates a model from `spec` (name and architecture fields filled; the
 * derived fields and json_cache are ignored): validates, derives the counts
 * and builds the JSON text eagerly, so the result can be shared read-only.
 * Release with arachne_model_destroy(). */
int ar_model_create(arachne_model **out, const arachne_model *spec);
/* Appends the model's JSON text ("arachne-model" version 1) to b. */
void ar_model_write_json(const arachne_model *m, ar_buf *b);
/* Architecture of a built-in preset (case-insensitive name), not finished;
 * NULL when unknown. */
const arachne_model *ar_model_preset_spec(const char *name);

/* The preset name closest to name (case-insensitive edit distance at most 2,
 * or a third of the name's length when longer), or NULL: the "did you mean"
 * of an unknown model name. */
const char *ar_model_preset_suggest(const char *name);

#endif
