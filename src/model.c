/* model.c -- model architecture: validation, parameter counts derived from
 * the tensor shapes, forward FLOPs and stored activation bytes per layer
 * kind.  Every formula is written out in docs/models.md. */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Largest accepted size of any dimension or count (keeps every product far
 * inside the exact range of a double). */
#define AR_MODEL_DIM_MAX (1 << 24)

/* ---- validation -------------------------------------------------------- */

static int check_range(const char *model, const char *field, int v, int lo, int hi)
{
    if (v < lo || v > hi)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model '%s': %s = %d: must be in [%d, %d]",
                        model, field, v, lo, hi);
    return ARACHNE_OK;
}

/* Symbol of a hybrid pattern -> layer kind; -1 for any other byte. */
static int pattern_kind(char c)
{
    switch (c) {
    case 'M': return AR_LAYER_MAMBA;
    case '*': return AR_LAYER_ATTENTION;
    case '-': return AR_LAYER_MLP;
    case 'E': return AR_LAYER_MOE_MLP;
    default: return -1;
    }
}

/* The hybrid pattern and the sizes its layers need. */
static int validate_hybrid(const arachne_model *m)
{
    const char *n = m->name, *nul = memchr(m->pattern, '\0', sizeof m->pattern);
    int len = nul ? (int)(nul - m->pattern) : (int)sizeof m->pattern, i, has[AR_LAYER_KINDS] = { 0 }, st;
    if (len > AR_MODEL_PATTERN_MAX)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model '%s': pattern: longer than %d layers", n,
                        AR_MODEL_PATTERN_MAX);
    for (i = 0; i < len; i++) {
        int k = pattern_kind(m->pattern[i]);
        if (k < 0)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "model '%s': pattern: symbol %d (byte 0x%02x) is not one of M * - E", n, i + 1,
                            (unsigned char)m->pattern[i]);
        has[k] = 1;
    }
    if (len != m->blocks)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model '%s': pattern: %d layers, but blocks = %d", n, len,
                        m->blocks);
    if (m->dense_prefix != 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "model '%s': dense_prefix = %d: a hybrid pattern places its MoE layers itself (use 0)", n,
                        m->dense_prefix);
    if (has[AR_LAYER_MOE_MLP] != (m->experts > 0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        m->experts > 0 ? "model '%s': experts = %d but the pattern has no E layer"
                                       : "model '%s': the pattern has E layers but experts = %d",
                        n, m->experts);
    if (has[AR_LAYER_MLP] && m->ffn < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "model '%s': ffn = %d: must be positive when the pattern has - (MLP) layers", n, m->ffn);
    if (has[AR_LAYER_MAMBA]) {
        if ((st = check_range(n, "mamba_heads", m->mamba_heads, 1, AR_MODEL_DIM_MAX)) ||
            (st = check_range(n, "mamba_head_dim", m->mamba_head_dim, 1, AR_MODEL_DIM_MAX)) ||
            (st = check_range(n, "mamba_state", m->mamba_state, 1, AR_MODEL_DIM_MAX)) ||
            (st = check_range(n, "mamba_groups", m->mamba_groups, 1, m->mamba_heads)) ||
            (st = check_range(n, "mamba_conv", m->mamba_conv, 1, 64)) ||
            (st = check_range(n, "mamba_chunk", m->mamba_chunk, 1, AR_MODEL_DIM_MAX)))
            return st;
        if (m->mamba_heads % m->mamba_groups != 0)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "model '%s': mamba_heads = %d is not divisible by mamba_groups = %d", n, m->mamba_heads,
                            m->mamba_groups);
    } else if (m->mamba_heads || m->mamba_head_dim || m->mamba_state || m->mamba_groups || m->mamba_conv ||
               m->mamba_chunk) {
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model '%s': Mamba sizes given but the pattern has no M layer", n);
    }
    return ARACHNE_OK;
}

static int validate(const arachne_model *m)
{
    const char *n = m->name;
    const int D = AR_MODEL_DIM_MAX;
    const char *nul = memchr(m->name, '\0', sizeof m->name);
    size_t len = nul ? (size_t)(nul - m->name) : sizeof m->name;
    size_t i;
    int st;
    if (len == 0) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model: name: must not be empty");
    if (len >= sizeof m->name)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model: name: longer than %d bytes", (int)sizeof m->name - 1);
    for (i = 0; i < len; i++)
        if ((unsigned char)n[i] < 0x20 || n[i] == 0x7f)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model '%s': name: control character at byte %d", n, (int)i);
#define CHECK(field, lo, hi) do { if ((st = check_range(n, #field, m->field, lo, hi)) != ARACHNE_OK) return st; } while (0)
    CHECK(blocks, 1, D);
    CHECK(hidden, 1, D);
    CHECK(heads, 1, D);
    CHECK(kv_heads, 1, D);
    CHECK(head_dim, 1, D);
    CHECK(ffn, 0, D);
    CHECK(vocab, 1, D);
    CHECK(experts, 0, D);
    CHECK(gated_mlp, 0, 1);
    CHECK(qk_norm, 0, 1);
    CHECK(tied_embeddings, 0, 1);
    CHECK(mla, 0, 1);
    if (m->heads % m->kv_heads != 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "model '%s': heads = %d is not divisible by kv_heads = %d", n, m->heads, m->kv_heads);
    if (m->experts > 0) {
        CHECK(top_k, 1, m->experts);
        CHECK(shared_experts, 0, D);
        CHECK(expert_ffn, 1, D);
        CHECK(dense_prefix, 0, m->blocks);
        CHECK(expert_latent, 0, D);
    } else {
        CHECK(expert_latent, 0, 0);
        CHECK(top_k, 0, 0);
        CHECK(shared_experts, 0, 0);
        CHECK(expert_ffn, 0, 0);
        CHECK(dense_prefix, 0, 0);
    }
    if (m->pattern[0]) {
        if ((st = validate_hybrid(m)) != ARACHNE_OK) return st;
    } else {
        if ((m->experts == 0 || m->dense_prefix > 0) && m->ffn < 1)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "model '%s': ffn = %d: must be positive when the model has dense blocks", n, m->ffn);
        CHECK(mamba_heads, 0, 0);
        CHECK(mamba_head_dim, 0, 0);
        CHECK(mamba_state, 0, 0);
        CHECK(mamba_groups, 0, 0);
        CHECK(mamba_conv, 0, 0);
        CHECK(mamba_chunk, 0, 0);
    }
    if (m->mla) {
        CHECK(q_lora_rank, 0, D);
        CHECK(kv_lora_rank, 1, D);
        CHECK(qk_nope_dim, 1, D);
        CHECK(qk_rope_dim, 1, D);
        CHECK(v_head_dim, 1, D);
        if (m->kv_heads != m->heads)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "model '%s': kv_heads = %d: must equal heads = %d with MLA", n, m->kv_heads, m->heads);
        if (m->head_dim != m->qk_nope_dim + m->qk_rope_dim)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "model '%s': head_dim = %d: must equal qk_nope_dim + qk_rope_dim = %d with MLA",
                            n, m->head_dim, m->qk_nope_dim + m->qk_rope_dim);
        if (m->qk_norm)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model '%s': qk_norm: not supported with MLA", n);
    } else {
        CHECK(q_lora_rank, 0, 0);
        CHECK(kv_lora_rank, 0, 0);
        CHECK(qk_nope_dim, 0, 0);
        CHECK(qk_rope_dim, 0, 0);
        CHECK(v_head_dim, 0, 0);
    }
#undef CHECK
    return ARACHNE_OK;
}

/* ---- parameter counts -------------------------------------------------- */

/* Matrices of one MLP: SwiGLU gate/up/down or GELU fc1/fc2. */
static double mlp_mats(const arachne_model *m) { return m->gated_mlp ? 3.0 : 2.0; }

/* Parameters of the attention GEMMs of one block. */
static double attn_matmul(const arachne_model *m)
{
    double h = m->hidden, H = m->heads;
    if (m->mla) {
        double ql = m->q_lora_rank, kl = m->kv_lora_rank, qk = m->qk_nope_dim + m->qk_rope_dim;
        double q = ql > 0 ? h * ql + ql * H * qk : h * H * qk;
        return q + h * (kl + m->qk_rope_dim) + kl * H * (m->qk_nope_dim + m->v_head_dim) +
               H * m->v_head_dim * h;
    }
    return h * H * m->head_dim + 2.0 * h * m->kv_heads * m->head_dim + H * m->head_dim * h;
}

/* Norm weights inside the attention (QK-norm, MLA latent norms) plus the
 * block's two RMSNorms. */
static double block_norms(const arachne_model *m)
{
    double p = 2.0 * m->hidden;
    if (m->mla) p += (double)m->q_lora_rank + m->kv_lora_rank;
    else if (m->qk_norm) p += 2.0 * m->head_dim;
    return p;
}

static double one_expert(const arachne_model *m) { return mlp_mats(m) * m->hidden * m->expert_ffn; }
/* One routed expert: in a LatentMoE model it works in the latent width. */
static double routed_expert(const arachne_model *m)
{
    return m->expert_latent > 0 ? mlp_mats(m) * m->expert_latent * m->expert_ffn : one_expert(m);
}
/* LatentMoE's projections hidden -> latent and latent -> hidden. */
static double latent_proj(const arachne_model *m) { return 2.0 * m->hidden * m->expert_latent; }

/* Expert parameters one token runs through (routed top_k and shared, and
 * LatentMoE's projections). */
static double expert_path(const arachne_model *m)
{
    if (m->expert_latent == 0) return (m->top_k + m->shared_experts) * one_expert(m);
    return m->top_k * routed_expert(m) + m->shared_experts * one_expert(m) + latent_proj(m);
}

/* Mamba-2 mixer sizes: inner width (heads x head dim) and the B/C width
 * (groups x state). */
static double mamba_inner(const arachne_model *m) { return (double)m->mamba_heads * m->mamba_head_dim; }
static double mamba_bc(const arachne_model *m) { return (double)m->mamba_groups * m->mamba_state; }

/* Parameters of the GEMMs of one Mamba-2 mixer: in_proj (hidden -> z, x,
 * B, C and one dt per head) and out_proj (inner -> hidden). */
static double mamba_matmul(const arachne_model *m)
{
    double di = mamba_inner(m);
    return m->hidden * (2.0 * di + 2.0 * mamba_bc(m) + m->mamba_heads) + di * m->hidden;
}

/* All parameters of one Mamba-2 layer: its pre-norm, the GEMMs, the
 * depthwise causal conv over x, B, C (weights + bias), A, D and the dt
 * bias per head, and the gated RMSNorm over the inner width. */
static double mamba_params(const arachne_model *m)
{
    double di = mamba_inner(m), conv_ch = di + 2.0 * mamba_bc(m);
    return m->hidden + mamba_matmul(m) + conv_ch * (m->mamba_conv + 1.0) + 3.0 * m->mamba_heads + di;
}

int ar_model_tp_ok(const arachne_model *m, int tp)
{
    if (tp < 1 || m->heads % tp != 0) return 0;
    if (m->pattern[0] && m->kind_count[AR_LAYER_MAMBA] > 0)
        return m->mamba_heads % tp == 0 && m->mamba_groups % tp == 0;
    return 1;
}

void ar_model_mean_layer(const arachne_model *m, double *params, double *expert_params)
{
    double p = 0.0, e = 0.0;
    int k;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        if (!ar_kind_is_block(k)) continue;
        p += ar_model_kind_count(m, k) * m->params[k];
        e += ar_model_kind_count(m, k) * m->expert_params[k];
    }
    *params = p / m->blocks;
    *expert_params = e / m->blocks;
}

int ar_model_kind_count(const arachne_model *m, int kind)
{
    if (!m) return 0;
    if (m->pattern[0] && ar_kind_is_block(kind)) return m->kind_count[kind];
    switch (kind) {
    case AR_LAYER_EMBED: case AR_LAYER_HEAD: return 1;
    case AR_LAYER_DENSE: return m->experts > 0 ? m->dense_prefix : m->blocks;
    case AR_LAYER_MOE: return m->experts > 0 ? m->blocks - m->dense_prefix : 0;
    default: return 0;
    }
}

int ar_model_block_kind(const arachne_model *m, int block)
{
    if (m->pattern[0]) return m->block_kinds[block];
    if (m->experts > 0 && block >= m->dense_prefix) return AR_LAYER_MOE;
    return AR_LAYER_DENSE;
}

/* Parameters of one layer of each kind of a hybrid pattern: every layer
 * has its own pre-norm (h weights) and one mixer. */
static void hybrid_params(arachne_model *m)
{
    double h = m->hidden;
    if (m->kind_count[AR_LAYER_MAMBA] > 0)
        m->params[AR_LAYER_MAMBA] = m->active_params[AR_LAYER_MAMBA] = mamba_params(m);
    if (m->kind_count[AR_LAYER_ATTENTION] > 0)
        m->params[AR_LAYER_ATTENTION] = m->active_params[AR_LAYER_ATTENTION] =
            attn_matmul(m) + block_norms(m) - h; /* one norm, not a block's two */
    if (m->kind_count[AR_LAYER_MLP] > 0)
        m->params[AR_LAYER_MLP] = m->active_params[AR_LAYER_MLP] = h + mlp_mats(m) * h * m->ffn;
    if (m->kind_count[AR_LAYER_MOE_MLP] > 0) {
        double common = h + h * m->experts + m->shared_experts * one_expert(m) + latent_proj(m);
        m->expert_params[AR_LAYER_MOE_MLP] = m->experts * routed_expert(m);
        m->params[AR_LAYER_MOE_MLP] = common + m->expert_params[AR_LAYER_MOE_MLP];
        m->active_params[AR_LAYER_MOE_MLP] = common + m->top_k * routed_expert(m);
    }
}

int ar_model_finish(arachne_model *m)
{
    int st, k;
    double h, V;
    if (!m) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "model: NULL");
    if ((st = validate(m)) != ARACHNE_OK) return st;
    h = m->hidden;
    V = m->vocab;
    for (k = 0; k < AR_LAYER_KINDS; k++) m->params[k] = m->expert_params[k] = m->active_params[k] = 0;
    memset(m->kind_count, 0, sizeof m->kind_count);
    memset(m->block_kinds, 0, sizeof m->block_kinds);
    if (m->pattern[0]) {
        int b;
        for (b = 0; b < m->blocks; b++) {
            m->block_kinds[b] = (unsigned char)pattern_kind(m->pattern[b]);
            m->kind_count[m->block_kinds[b]]++;
        }
        hybrid_params(m);
    }
    m->params[AR_LAYER_EMBED] = m->active_params[AR_LAYER_EMBED] = V * h;
    m->params[AR_LAYER_HEAD] = m->active_params[AR_LAYER_HEAD] = h + (m->tied_embeddings ? 0.0 : V * h);
    if (ar_model_kind_count(m, AR_LAYER_DENSE) > 0)
        m->params[AR_LAYER_DENSE] = m->active_params[AR_LAYER_DENSE] =
            attn_matmul(m) + block_norms(m) + mlp_mats(m) * h * m->ffn;
    if (ar_model_kind_count(m, AR_LAYER_MOE) > 0) {
        double common = attn_matmul(m) + block_norms(m) + h * m->experts + m->shared_experts * one_expert(m) +
                        latent_proj(m);
        m->expert_params[AR_LAYER_MOE] = m->experts * routed_expert(m);
        m->params[AR_LAYER_MOE] = common + m->expert_params[AR_LAYER_MOE];
        m->active_params[AR_LAYER_MOE] = common + m->top_k * routed_expert(m);
    }
    m->total_params = m->params[AR_LAYER_EMBED] + m->params[AR_LAYER_HEAD];
    m->active_total = m->active_params[AR_LAYER_EMBED] + m->active_params[AR_LAYER_HEAD];
    for (k = AR_LAYER_DENSE; k < AR_LAYER_KINDS; k++) {
        if (!ar_kind_is_block(k)) continue;
        m->total_params += ar_model_kind_count(m, k) * m->params[k];
        m->active_total += ar_model_kind_count(m, k) * m->active_params[k];
    }
    return ARACHNE_OK;
}

/* ---- FLOPs -------------------------------------------------------------- */

/* Attention scores (q.k) and context (p.v) FLOPs per token with seq keys. */
static double attn_core_flops(const arachne_model *m, double seq)
{
    if (m->mla)
        return 2.0 * seq * m->heads * (m->qk_nope_dim + m->qk_rope_dim) + 2.0 * seq * m->heads * m->v_head_dim;
    return 2.0 * 2.0 * seq * m->heads * m->head_dim;
}

double ar_model_ssd_flops(const arachne_model *m, int seq)
{
    double q = m->mamba_chunk < seq ? m->mamba_chunk : seq, N = m->mamba_state, p = m->mamba_head_dim;
    /* per chunk of q tokens: C B^T per group (q x q x N), its masked product
     * with x per head (q x q x p), the chunk's final states B^T x and their
     * contribution C . state per head (q x N x p each); the state passing
     * between chunks is O(1) per token per head and left out */
    return 2.0 * q * N * m->mamba_groups + m->mamba_heads * (2.0 * q * p + 4.0 * N * p);
}

double ar_model_flops_fwd(const arachne_model *m, int kind, int seq, int mbs)
{
    double per_token, h = m->hidden, s = seq;
    if (ar_kind_is_block(kind) && ar_model_kind_count(m, kind) == 0) return 0.0;
    switch (kind) {
    case AR_LAYER_EMBED: return 0.0; /* a gather: no arithmetic */
    case AR_LAYER_HEAD: per_token = 2.0 * h * m->vocab; break;
    case AR_LAYER_DENSE:
        per_token = 2.0 * (attn_matmul(m) + mlp_mats(m) * h * m->ffn) + attn_core_flops(m, s);
        break;
    case AR_LAYER_MOE:
        per_token = 2.0 * (attn_matmul(m) + h * m->experts + expert_path(m)) + attn_core_flops(m, s);
        break;
    case AR_LAYER_MAMBA:
        per_token = 2.0 * mamba_matmul(m) + 2.0 * (mamba_inner(m) + 2.0 * mamba_bc(m)) * m->mamba_conv +
                    ar_model_ssd_flops(m, seq);
        break;
    case AR_LAYER_ATTENTION: per_token = 2.0 * attn_matmul(m) + attn_core_flops(m, s); break;
    case AR_LAYER_MLP: per_token = 2.0 * mlp_mats(m) * h * m->ffn; break;
    case AR_LAYER_MOE_MLP:
        per_token = 2.0 * (h * m->experts + expert_path(m));
        break;
    default: return 0.0;
    }
    return per_token * s * mbs;
}

double ar_model_alt_mm_share(const arachne_model *m, int kind, int seq)
{
    double h = m->hidden, hd = m->head_dim, per_token, all;
    if (kind != AR_LAYER_DENSE || m->mla || ar_model_kind_count(m, kind) == 0) return 0.0;
    /* call order q, k, v, o, then gate, up, down (gated: w1, w3, w2) or
     * fc1, fc2: the 2nd, 4th and 6th are k, o and the up projection
     * (gated) or the down projection (fc2) -- h x ffn either way */
    per_token = 2.0 * (h * m->kv_heads * hd + m->heads * hd * h + h * m->ffn);
    all = ar_model_flops_fwd(m, kind, seq, 1) / seq;
    return all > 0.0 ? per_token / all : 0.0;
}

/* ---- activation bytes ---------------------------------------------------- */

/* Heads held by one GPU of a TP group of t: KV heads are replicated when
 * there are fewer of them than GPUs. */
static double local_heads(int heads, int t) { return heads >= t ? (double)heads / t : 1.0; }

/* Bytes per token (16-bit) stored by the attention half of a block on one
 * GPU, without the seq x seq terms: norm1 input and output, the q/k/v inputs
 * of the attention core, the context (out-projection input), and the norm2
 * input (the residual after attention).  Returns also the heads per GPU. */
static double attn_bytes_per_token(const arachne_model *m, int t, double *heads_local)
{
    double h = m->hidden, Hl = local_heads(m->heads, t), b;
    b = 2.0 * h / t + 2.0 * h / t;  /* norm1 input (block input) + norm1 output */
    if (m->mla) {
        double qk = m->qk_nope_dim + m->qk_rope_dim;
        if (m->q_lora_rank > 0) b += 2.0 * 2.0 * m->q_lora_rank / t;          /* q_a out, q_a_norm out */
        b += 2.0 * (m->kv_lora_rank + m->qk_rope_dim) / t + 2.0 * m->kv_lora_rank / t; /* kv_a out, kv_a_norm out */
        b += 2.0 * Hl * qk * 2.0;                                              /* q and k */
        b += 2.0 * Hl * m->v_head_dim * 2.0;                                   /* v and context */
    } else {
        double KVl = local_heads(m->kv_heads, t), hd = m->head_dim;
        if (m->qk_norm) b += 2.0 * (Hl + KVl) * hd;                            /* q, k before their norms */
        b += 2.0 * Hl * hd + 2.0 * KVl * hd + 2.0 * KVl * hd;                  /* q, k, v */
        b += 2.0 * Hl * hd;                                                    /* context */
    }
    b += 2.0 * h / t;  /* norm2 input */
    *heads_local = Hl;
    return b;
}

/* Bytes per token of one MLP's intermediates of width f (before TP). */
static double mlp_inner_bytes(const arachne_model *m, double f, int t)
{
    return (m->gated_mlp ? 6.0 : 4.0) * f / t;
}

/* b plus the bytes per token one GPU keeps for the experts of a MoE block
 * or layer: router logits, each of the top_k routed experts' input, MLP
 * intermediates and output (in the expert width), the shared experts'
 * intermediates; with the norm/act recompute bit, less each routed
 * expert's activation output (rebuilt from fc1's output). */
static double add_expert_bytes(const arachne_model *m, double b, int tp, int norm_act)
{
    double t = tp, w = ar_model_expert_width(m);
    b += 2.0 * m->experts / t; /* router logits (16-bit) */
    b += m->top_k * (2.0 * w / t + mlp_inner_bytes(m, m->expert_ffn, tp) + 2.0 * w / t);
    b += m->shared_experts * mlp_inner_bytes(m, m->expert_ffn, tp);
    if (norm_act) b -= m->top_k * 2.0 * m->expert_ffn / t;
    return b;
}

/* Bytes per token one GPU keeps for a layer of a hybrid pattern (16-bit,
 * sequence parallel, selective or no recomputation): every layer keeps its
 * pre-norm's input and output, then its mixer's own tensors. */
static double hybrid_act_per_token(const arachne_model *m, int kind, int seq, int tp, int recompute, int norm_act)
{
    double h = m->hidden, t = tp, b = 0.0, Hl = 0.0;
    switch (kind) {
    case AR_LAYER_MAMBA: {
        double di = mamba_inner(m), zxbcdt = 2.0 * di + 2.0 * mamba_bc(m) + m->mamba_heads;
        /* Megatron's memory-efficient Mamba path keeps the in_proj output
         * (conv input, z, dt), the scan output and the gated norm's output
         * (the out_proj input); the conv output and the chunk states are
         * rebuilt in the backward */
        b = 4.0 * h / t + 2.0 * zxbcdt / t + 2.0 * di / t + 2.0 * di / t;
        break;
    }
    case AR_LAYER_ATTENTION:
        b = attn_bytes_per_token(m, tp, &Hl) - 2.0 * h / t; /* no second norm */
        if (recompute == AR_RECOMPUTE_NONE) b += 2.0 * Hl * seq;
        else b += 4.0 * Hl;
        break;
    case AR_LAYER_MLP: b = 4.0 * h / t + mlp_inner_bytes(m, m->ffn, tp); break;
    case AR_LAYER_MOE_MLP: b = add_expert_bytes(m, 4.0 * h / t, tp, norm_act); break;
    default: return 0.0;
    }
    if (norm_act) b -= 2.0 * h / t; /* the norm's output is rebuilt from its input */
    return b;
}

double ar_model_act_bytes(const arachne_model *m, int kind, int seq, int mbs, int tp, int recompute)
{
    double s = seq, tokens = (double)seq * mbs, h = m->hidden, t, per_token, Hl = 0;
    int norm_act = (recompute & AR_RECOMPUTE_NORM_ACT_BIT) != 0;
    recompute &= AR_RECOMPUTE_MODE_MASK;
    if (tp < 1) tp = 1;
    t = tp;
    switch (kind) {
    case AR_LAYER_EMBED: return 8.0 * tokens;                      /* int64 token ids */
    case AR_LAYER_HEAD: return tokens * (4.0 * h / t + 4.0 * m->vocab / t); /* norm in/out + fp32 logits */
    default:
        if (!ar_kind_is_block(kind) || ar_model_kind_count(m, kind) == 0) return 0.0; /* no such block */
        break;
    }
    if (recompute == AR_RECOMPUTE_FULL) return tokens * 2.0 * h / t;
    if (kind != AR_LAYER_DENSE && kind != AR_LAYER_MOE) return hybrid_act_per_token(m, kind, seq, tp, recompute,
                                                                                  norm_act) * tokens;
    per_token = attn_bytes_per_token(m, tp, &Hl);
    per_token += 2.0 * h / t;  /* norm2 output: MLP / router / shared-expert input */
    if (kind == AR_LAYER_DENSE) {
        per_token += mlp_inner_bytes(m, m->ffn, tp);
    } else {
        per_token = add_expert_bytes(m, per_token, tp, norm_act);
    }
    /* layernorm: the two norm outputs are rebuilt from their inputs, which stay stored */
    if (norm_act) per_token -= 2.0 * (2.0 * h / t);
    if (recompute == AR_RECOMPUTE_NONE) per_token += 2.0 * Hl * s;  /* softmax output, one row per head */
    else per_token += 4.0 * Hl;                                    /* FlashAttention log-sum-exp (fp32) */
    return per_token * tokens;
}

double ar_model_boundary_bytes(const arachne_model *m, int seq, int mbs)
{
    return (double)seq * mbs * m->hidden * 2.0;
}

/* ---- creation and public accessors --------------------------------------- */

int ar_model_create(arachne_model **out, const arachne_model *spec)
{
    arachne_model *m;
    ar_buf b;
    int st;
    *out = NULL;
    m = ar_malloc(sizeof *m);
    if (!m) return ARACHNE_E_NO_MEMORY;
    *m = *spec;
    m->json_cache = NULL;
    if ((st = ar_model_finish(m)) != ARACHNE_OK) {
        free(m);
        return st;
    }
    ar_buf_init(&b);
    ar_model_write_json(m, &b);
    if ((st = ar_buf_status(&b)) != ARACHNE_OK) {
        ar_buf_free(&b);
        free(m);
        return st;
    }
    m->json_cache = b.data; /* ownership moves to the model */
    *out = m;
    return ARACHNE_OK;
}

void arachne_model_destroy(arachne_model *m)
{
    if (!m) return;
    free(m->json_cache);
    free(m);
}

int arachne_model_name(const arachne_model *m, const char **out)
{
    if (!m || !out) return AR_NULL_ARG("arachne_model_name", m, out);
    *out = m->name;
    return ARACHNE_OK;
}

int arachne_model_get(const arachne_model *m, int field, double *out)
{
    double v;
    if (!m || !out) return AR_NULL_ARG("arachne_model_get", m, out);
    switch (field) {
    case ARACHNE_MODEL_BLOCKS: v = m->blocks; break;
    case ARACHNE_MODEL_HIDDEN: v = m->hidden; break;
    case ARACHNE_MODEL_HEADS: v = m->heads; break;
    case ARACHNE_MODEL_KV_HEADS: v = m->kv_heads; break;
    case ARACHNE_MODEL_HEAD_DIM: v = m->head_dim; break;
    case ARACHNE_MODEL_FFN: v = m->ffn; break;
    case ARACHNE_MODEL_VOCAB: v = m->vocab; break;
    case ARACHNE_MODEL_EXPERTS: v = m->experts; break;
    case ARACHNE_MODEL_TOP_K: v = m->top_k; break;
    case ARACHNE_MODEL_SHARED_EXPERTS: v = m->shared_experts; break;
    case ARACHNE_MODEL_EXPERT_FFN: v = m->expert_ffn; break;
    case ARACHNE_MODEL_DENSE_PREFIX: v = m->dense_prefix; break;
    case ARACHNE_MODEL_TOTAL_PARAMS: v = m->total_params; break;
    case ARACHNE_MODEL_ACTIVE_PARAMS: v = m->active_total; break;
    case ARACHNE_MODEL_QK_NORM: v = m->qk_norm; break;
    case ARACHNE_MODEL_GATED_MLP: v = m->gated_mlp; break;
    case ARACHNE_MODEL_TIED_EMBEDDINGS: v = m->tied_embeddings; break;
    case ARACHNE_MODEL_MLA: v = m->mla; break;
    case ARACHNE_MODEL_Q_LORA_RANK: v = m->q_lora_rank; break;
    case ARACHNE_MODEL_KV_LORA_RANK: v = m->kv_lora_rank; break;
    case ARACHNE_MODEL_QK_NOPE_DIM: v = m->qk_nope_dim; break;
    case ARACHNE_MODEL_QK_ROPE_DIM: v = m->qk_rope_dim; break;
    case ARACHNE_MODEL_V_HEAD_DIM: v = m->v_head_dim; break;
    case ARACHNE_MODEL_DENSE_BLOCKS: v = ar_model_kind_count(m, AR_LAYER_DENSE); break;
    case ARACHNE_MODEL_MOE_BLOCKS: v = ar_model_kind_count(m, AR_LAYER_MOE); break;
    case ARACHNE_MODEL_MAMBA_HEADS: v = m->mamba_heads; break;
    case ARACHNE_MODEL_MAMBA_HEAD_DIM: v = m->mamba_head_dim; break;
    case ARACHNE_MODEL_MAMBA_STATE: v = m->mamba_state; break;
    case ARACHNE_MODEL_MAMBA_GROUPS: v = m->mamba_groups; break;
    case ARACHNE_MODEL_MAMBA_CONV: v = m->mamba_conv; break;
    case ARACHNE_MODEL_MAMBA_CHUNK: v = m->mamba_chunk; break;
    case ARACHNE_MODEL_MAMBA_LAYERS: v = ar_model_kind_count(m, AR_LAYER_MAMBA); break;
    case ARACHNE_MODEL_ATTENTION_LAYERS: v = ar_model_kind_count(m, AR_LAYER_ATTENTION); break;
    case ARACHNE_MODEL_MLP_LAYERS: v = ar_model_kind_count(m, AR_LAYER_MLP); break;
    case ARACHNE_MODEL_MOE_MLP_LAYERS: v = ar_model_kind_count(m, AR_LAYER_MOE_MLP); break;
    case ARACHNE_MODEL_EXPERT_LATENT: v = m->expert_latent; break;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_model_get: unknown field %d", field);
    }
    *out = v;
    return ARACHNE_OK;
}

static int check_kind(const char *fn, const arachne_model *m, int kind, const void *out)
{
    if (!m || !out) return AR_NULL_ARG(fn, m, out);
    if (kind < 0 || kind >= AR_LAYER_KINDS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: unknown layer kind %d", fn, kind);
    return ARACHNE_OK;
}

int arachne_model_layer_params(const arachne_model *m, int kind, double *out)
{
    int st = check_kind("arachne_model_layer_params", m, kind, out);
    if (st) return st;
    *out = m->params[kind];
    return ARACHNE_OK;
}

int arachne_model_layer_flops(const arachne_model *m, int kind, int seq, int mbs, double *out)
{
    int st = check_kind("arachne_model_layer_flops", m, kind, out);
    if (st) return st;
    if (seq < 1 || mbs < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_model_layer_flops: seq = %d, mbs = %d: must be >= 1",
                        seq, mbs);
    *out = ar_model_flops_fwd(m, kind, seq, mbs);
    return ARACHNE_OK;
}

int arachne_model_layer_act_bytes(const arachne_model *m, int kind, int seq, int mbs, int tp, int recompute,
                                  double *out)
{
    int st = check_kind("arachne_model_layer_act_bytes", m, kind, out);
    if (st) return st;
    if (seq < 1 || mbs < 1 || tp < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "arachne_model_layer_act_bytes: seq = %d, mbs = %d, tp = %d: must be >= 1", seq, mbs, tp);
    if (recompute < AR_RECOMPUTE_NONE || recompute > AR_RECOMPUTE_FULL)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_model_layer_act_bytes: unknown recompute mode %d",
                        recompute);
    *out = ar_model_act_bytes(m, kind, seq, mbs, tp, recompute);
    return ARACHNE_OK;
}
