/* profile_gen.c -- the analytic profile generator: a roofline over the real
 * GEMM shapes of each layer with an efficiency curve, memory-bound terms,
 * and Megatron TP collectives.  The method, the constants and their
 * calibration against the Sailor measurements are in docs/profiles.md
 * (bench/bench_profile_calibration.c reproduces the fit and the errors). */
#include <math.h>
#include <string.h>

#include "calib.h"
#include "profile.h"

/* Calibrated against all 202 measured transformer-block entries of the three
 * Sailor models (bench_profile_calibration --fit; docs/profiles.md).  e_max
 * is bounded at 0.8 during the fit (see the docs for why). */
const ar_gen_consts ar_gen_default_consts = {
    0.80,     /* e_max (at its bound) */
    0.0,      /* m_half: fitted to 0 -- small GEMMs are slowed by the roofline's memory term */
    0.80,     /* hbm_eff (fixed, not fitted) */
    1.0,      /* comm_eff: scale on the link class's collective efficiency (calib.c) */
    1.6,      /* mem_bwd_ratio: refit on Sailor's separate fwd / bwd times (was 1.085 on their sums) */
    5.3e-4,   /* layer_overhead_s */
    9.55      /* score_passes (eager attention only) */
};

void ar_gen_default_opts(ar_gen_opts *o)
{
    o->elt_bytes = 2.0;
    o->flops = 0.0;
    o->eager_attention = 0;
    o->sequence_parallel = 1;
    o->eager_elementwise = 0;
    o->recompute_elementwise = 0;
}

/* Extra element passes (16-bit element reads + writes) of PyTorch eager
 * element-wise code over the fused kernels the generator prices, counted
 * from the ops each one runs (docs/profiles.md, "Eager element-wise ops"):
 *  - RMSNorm computed in fp32 (upcast 1+2, square 2+2, mean 2, scale 2+2,
 *    downcast 2+1, weight 1+1 = 18) instead of one fused pass (1+1 = 2);
 *  - SwiGLU as silu then multiply (1+1, 2+1 = 5) instead of 2+1 = 3;
 *  - rotary embedding of q and k through fp32 complex numbers (upcast 1+2,
 *    multiply 2+2, downcast 2+1 = 10) instead of a fused 1+1 = 2. */
#define EAGER_NORM_EXTRA 16.0
#define EAGER_SWIGLU_EXTRA 2.0
#define EAGER_ROPE_EXTRA 8.0

typedef struct gen {
    const ar_gen_consts *k;
    double e_max;  /* ceiling: k->e_max, scaled for the generation on tensor cores */
    double m_half; /* half-ceiling GEMM size: k->m_half, or the tensor-core one */
    double peak;   /* FLOP/s of the data type */
    double bw;     /* achieved HBM bytes/s */
    double elt;    /* bytes per element */
} gen;

static double eff(const gen *x, double m)
{
    if (m <= 0) return x->e_max;
    return x->e_max * m / (m + x->m_half);
}

/* Seconds of one GEMM (M x K) . (K x N): the slower of its compute at the
 * size-dependent efficiency and its memory traffic (read A and B, write C). */
static double gemm(const gen *x, double M, double N, double K)
{
    double mn = M < N ? M : N, tc, tm;
    if (K < mn) mn = K;
    if (M <= 0 || N <= 0 || K <= 0) return 0.0;
    tc = 2.0 * M * N * K / (x->peak * eff(x, mn));
    tm = (M * K + K * N + M * N) * x->elt / x->bw;
    return tc > tm ? tc : tm;
}

/* Heads held by one GPU of a TP group (KV heads are replicated when fewer). */
static double local_heads(int heads, int t) { return heads >= t ? (double)heads / t : 1.0; }

/* Ring all-reduce of n bytes over t GPUs inside a node. */
static double allreduce(const ar_gpu_spec *g, const ar_gen_consts *k, double n, int t)
{
    if (t <= 1) return 0.0;
    return 2.0 * (t - 1) / t * n / (g->intra_bw * ar_intra_link_eff(g) * k->comm_eff) + 2.0 * (t - 1) * g->intra_lat;
}

/* Seconds accumulated for one layer. */
typedef struct parts {
    double gemm;       /* forward GEMM seconds (backward: 2x) */
    double attn_f, attn_b; /* attention core (or Mamba scan) forward / backward seconds */
    double mem;        /* forward elementwise bytes (converted at the end) */
} parts;

/* The MLP of a block: 2 matrices (GELU) or 3 (SwiGLU, gate+up fused).  `m`
 * tokens, width f, split over t.  Adds its GEMM seconds and elementwise
 * elements to *pt. */
static void mlp_on(const gen *x, const arachne_model *mo, double m, double f, int t, double h, parts *pt)
{
    double s, fl = f / t;
    s = gemm(x, m, (mo->gated_mlp ? 2.0 : 1.0) * fl, h) + gemm(x, m, h, fl);
    pt->gemm += s;
    /* activation function: GELU reads and writes m x f/t; SwiGLU reads two, writes one */
    pt->mem += (mo->gated_mlp ? 3.0 : 2.0) * m * fl;
}

/* An MLP that reads and writes the hidden width. */
static void mlp(const gen *x, const arachne_model *mo, double m, double f, int t, parts *pt)
{
    mlp_on(x, mo, m, f, t, mo->hidden, pt);
}

static void attention(const gen *x, const arachne_model *mo, const ar_gen_opts *o, double seq, double mbs,
                      int t, parts *pt)
{
    double T = seq * mbs, h = mo->hidden, Hl = (double)mo->heads / t, dqk, dv, nb, fl, tm, tc;
    if (mo->mla) {
        double nope = mo->qk_nope_dim, rope = mo->qk_rope_dim;
        dqk = nope + rope;
        dv = mo->v_head_dim;
        if (mo->q_lora_rank > 0) {
            pt->gemm += gemm(x, T, mo->q_lora_rank, h);               /* q down (replicated) */
            pt->gemm += gemm(x, T, Hl * dqk, mo->q_lora_rank);        /* q up */
            pt->mem += 2.0 * T * mo->q_lora_rank;                     /* q norm */
        } else {
            pt->gemm += gemm(x, T, Hl * dqk, h);
        }
        pt->gemm += gemm(x, T, mo->kv_lora_rank + rope, h);           /* kv down (replicated) */
        pt->gemm += gemm(x, T, Hl * (nope + dv), mo->kv_lora_rank);   /* kv up */
        pt->mem += 2.0 * T * mo->kv_lora_rank;                        /* kv norm */
        pt->gemm += gemm(x, T, h, Hl * dv);                           /* out projection */
        tm = T * (2.0 * Hl * dqk + 2.0 * Hl * dv);                    /* q, k, v, context */
    } else {
        double KVl = local_heads(mo->kv_heads, t);
        dqk = dv = mo->head_dim;
        pt->gemm += gemm(x, T, (Hl + 2.0 * KVl) * dqk, h);            /* fused q, k, v */
        pt->gemm += gemm(x, T, h, Hl * dv);                           /* out projection */
        if (mo->qk_norm) pt->mem += 2.0 * T * (Hl + KVl) * dqk;
        tm = T * (Hl * dqk + KVl * dqk + KVl * dv + Hl * dv);
    }
    nb = mbs * Hl; /* independent (sequence, head) attention problems on this GPU */
    if (o->eager_attention) {
        /* Explicit QK^T and PV batched GEMMs plus the elementwise passes over
         * the seq x seq scores (scale, mask, softmax, dropout). */
        double s = nb * (gemm(x, seq, seq, dqk) + gemm(x, seq, dv, seq));
        pt->gemm += s;
        pt->mem += x->k->score_passes * nb * seq * seq;
        return;
    }
    /* FlashAttention: the same FLOPs (causal masking not discounted) at the
     * efficiency of a GEMM whose smallest dimension is the head dimension,
     * no seq x seq traffic; backward recomputes the scores (2.5x forward). */
    fl = nb * (2.0 * seq * seq * dqk + 2.0 * seq * seq * dv);
    tc = fl / (x->peak * eff(x, dqk < dv ? dqk : dv));
    tm = tm * x->elt / x->bw;
    pt->attn_f += tc > tm ? tc : tm;
    pt->attn_b += (2.5 * tc > 2.0 * tm) ? 2.5 * tc : 2.0 * tm;
}

/* Width (per token, before TP) of the q and k that rotary embedding
 * touches: eager PyTorch rotates them through fp32. */
static double eager_rope_width(const arachne_model *m)
{
    return m->mla ? (double)m->heads * (m->qk_rope_dim) + m->qk_rope_dim
                  : ((double)m->heads + m->kv_heads) * m->head_dim;
}

/* The routed and shared experts of a MoE layer on m tokens: the router
 * (replicated), LatentMoE's projections, the softmax / top-k and the
 * permutations, and one MLP per expert at the tokens it serves under
 * balanced routing (routed experts in the latent width, shared in the
 * hidden). */
static void experts(const gen *x, const arachne_model *mo, double m, int t, parts *pt)
{
    double E = mo->experts, mt = m * mo->top_k / E, w = ar_model_expert_width(mo); /* tokens per expert */
    int e;
    pt->gemm += gemm(x, m, E, mo->hidden);
    if (mo->expert_latent > 0) /* LatentMoE: down to the latent before dispatch, up after the combine */
        pt->gemm += gemm(x, m, w, mo->hidden) + gemm(x, m, mo->hidden, w);
    pt->mem += 2.0 * m * E + 4.0 * m * mo->top_k * w;
    for (e = 0; e < mo->experts; e++) mlp_on(x, mo, mt, mo->expert_ffn, t, w, pt);
    for (e = 0; e < mo->shared_experts; e++) mlp(x, mo, m, mo->expert_ffn, t, pt);
}

/* A Mamba-2 mixer on m tokens, its heads and B/C groups split over t
 * (Megatron's MambaMixer): in_proj and out_proj GEMMs; the depthwise
 * causal conv over x, B, C and the gated RMSNorm, both memory-bound; the
 * chunked (SSD) scan priced like the attention core -- its batched matmul
 * FLOPs at the efficiency of a GEMM whose smallest side is the smallest of
 * head dimension, state size and chunk, or its traffic (x, B, C, dt read,
 * y written, the chunk states written and read in fp32) when that is
 * slower; backward 2.5x forward (it rebuilds the chunk states). */
static void mamba(const gen *x, const arachne_model *mo, double m, int t, parts *pt)
{
    double h = mo->hidden, nh = mo->mamba_heads, di = nh * mo->mamba_head_dim;
    double bc = (double)mo->mamba_groups * mo->mamba_state, q = mo->mamba_chunk, side, fl, tc, tm;
    pt->gemm += gemm(x, m, (2.0 * di + 2.0 * bc + nh) / t, h); /* in_proj: z, x, B, C, dt */
    pt->gemm += gemm(x, m, h, di / t);                         /* out_proj */
    pt->mem += 2.0 * m * (di + 2.0 * bc) / t;                  /* conv1d + SiLU: read, write */
    pt->mem += 3.0 * m * di / t;                               /* gated norm: y and z in, out */
    side = mo->mamba_head_dim < mo->mamba_state ? mo->mamba_head_dim : mo->mamba_state;
    if (q < side) side = q;
    /* per token, before TP; seq only caps the chunk, and chunks are whole
     * sequences' pieces, so the per-token count at the chunk length holds */
    fl = m * ar_model_ssd_flops(mo, mo->mamba_chunk) / t;
    tc = fl / (x->peak * eff(x, side));
    tm = (m * (2.0 * di + 2.0 * bc + nh) / t * x->elt +
          2.0 * (m / q) * nh * mo->mamba_head_dim * mo->mamba_state / t * 4.0) / x->bw;
    pt->attn_f += tc > tm ? tc : tm;
    pt->attn_b += (2.5 * tc > 2.0 * tm) ? 2.5 * tc : 2.0 * tm;
}

/* The GEMM curve and rooflines of GPU g for a run executed as o describes. */
static void gen_init(gen *x, const ar_gpu_spec *g, const ar_gen_consts *k, const ar_gen_opts *o)
{
    x->k = k;
    /* 16-bit data runs on tensor cores (calib.h); 32-bit keeps the curve
     * fitted on Sailor's FP32 / TF32 measurements */
    if (o->elt_bytes <= 2.0) {
        x->e_max = k->e_max * ar_gemm_eff_scale(g);
        x->m_half = ar_tc_default_consts.m_half;
    } else {
        x->e_max = k->e_max;
        x->m_half = k->m_half;
    }
    x->peak = o->flops > 0 ? o->flops : g->flops;
    x->bw = g->hbm_bw * k->hbm_eff;
    x->elt = o->elt_bytes;
}

double ar_profile_gen_gemm_s(const ar_gpu_spec *g, double M, double N, double K)
{
    ar_gen_opts o;
    gen x;
    if (!g || !(g->flops > 0) || !(g->hbm_bw > 0)) return 0.0;
    ar_gen_default_opts(&o);
    gen_init(&x, g, &ar_gen_default_consts, &o);
    return gemm(&x, M, N, K);
}

int ar_profile_gen_entry(const arachne_model *m, const ar_gpu_spec *g, int kind, int tp, int mbs, int seq,
                         const ar_gen_consts *k, const ar_gen_opts *o, ar_profile_entry *out)
{
    ar_gen_opts def;
    gen x;
    parts pt;
    double T, h, Tn, comm = 0.0, mem_s;
    size_t n;
    if (!m || !g || !out) return AR_NULL_ARG("profile generator", m, g, out);
    if (!k) k = &ar_gen_default_consts;
    if (!o) {
        ar_gen_default_opts(&def);
        o = &def;
    }
    if (kind < 0 || kind >= AR_LAYER_KINDS || tp < 1 || mbs < 1 || seq < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "profile generator: kind %d, tp %d, mbs %d, seq %d out of range",
                        kind, tp, mbs, seq);
    if (ar_kind_is_block(kind) && ar_model_kind_count(m, kind) == 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "profile generator: model '%s' has no %s blocks", m->name,
                        ar_layer_kind_name(kind));
    if (!(g->flops > 0) || !(g->hbm_bw > 0) || !(g->intra_bw > 0) || !(o->elt_bytes > 0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "profile generator: GPU '%s' needs positive flops, hbm_bw and intra_bw", g->name);
    gen_init(&x, g, k, o);
    memset(&pt, 0, sizeof pt);
    T = (double)seq * mbs;
    h = m->hidden;
    Tn = o->sequence_parallel ? T / tp : T; /* tokens each GPU normalises */

    switch (kind) {
    case AR_LAYER_EMBED:
        /* Vocabulary-parallel gather: write T x h rows (read them too). */
        pt.mem = 2.0 * T * h;
        comm = allreduce(g, k, T * h * x.elt, tp); /* reduce-scatter fwd + all-gather bwd */
        break;
    case AR_LAYER_HEAD: {
        double V = (double)m->vocab / tp;
        pt.mem = 2.0 * Tn * h;                         /* final norm */
        if (o->eager_elementwise) pt.mem += EAGER_NORM_EXTRA * Tn * h;
        pt.gemm = gemm(&x, T, V, h);                   /* logits */
        pt.mem += T * V * (1.0 + 16.0 / x.elt);        /* logits + fp32 softmax/loss passes */
        comm = allreduce(g, k, T * h * x.elt, tp) + (tp > 1 ? 3.0 * allreduce(g, k, T * 4.0, tp) : 0.0);
        break;
    }
    case AR_LAYER_DENSE:
    case AR_LAYER_MOE:
        attention(&x, m, o, seq, mbs, tp, &pt);
        pt.mem += 4.0 * Tn * h + 6.0 * Tn * h;        /* two norms; two residual adds */
        if (o->eager_elementwise) {
            pt.mem += 2.0 * EAGER_NORM_EXTRA * Tn * h + EAGER_ROPE_EXTRA * T * eager_rope_width(m) / tp;
            if (m->gated_mlp) {
                double f = kind == AR_LAYER_DENSE ? m->ffn
                                                  : (double)m->expert_ffn * (m->top_k + m->shared_experts);
                pt.mem += EAGER_SWIGLU_EXTRA * T * f / tp;
            }
        }
        if (kind == AR_LAYER_DENSE) mlp(&x, m, T, m->ffn, tp, &pt);
        else experts(&x, m, T, tp, &pt);
        comm = 4.0 * allreduce(g, k, T * h * x.elt, tp);
        break;
    default: /* a layer of a hybrid pattern: one norm, one mixer, one residual add */
        pt.mem += 2.0 * Tn * h + 3.0 * Tn * h;
        if (o->eager_elementwise) pt.mem += EAGER_NORM_EXTRA * Tn * h;
        if (kind == AR_LAYER_MAMBA) {
            mamba(&x, m, T, tp, &pt);
            if (o->eager_elementwise) pt.mem += EAGER_NORM_EXTRA * T * m->mamba_heads * m->mamba_head_dim / tp;
        } else if (kind == AR_LAYER_ATTENTION) {
            attention(&x, m, o, seq, mbs, tp, &pt);
            if (o->eager_elementwise) pt.mem += EAGER_ROPE_EXTRA * T * eager_rope_width(m) / tp;
        } else {
            double f = kind == AR_LAYER_MLP ? m->ffn : (double)m->expert_ffn * (m->top_k + m->shared_experts);
            if (kind == AR_LAYER_MLP) mlp(&x, m, T, m->ffn, tp, &pt);
            else experts(&x, m, T, tp, &pt);
            if (o->eager_elementwise && m->gated_mlp) pt.mem += EAGER_SWIGLU_EXTRA * T * f / tp;
        }
        comm = 2.0 * allreduce(g, k, T * h * x.elt, tp); /* all-gather + reduce-scatter, fwd and bwd */
        break;
    }
    mem_s = pt.mem * x.elt / x.bw;
    memset(out, 0, sizeof *out);
    n = strlen(g->name);
    if (n >= sizeof out->gpu) n = sizeof out->gpu - 1;
    memcpy(out->gpu, g->name, n);
    out->kind = kind;
    out->tp = tp;
    out->mbs = mbs;
    out->fwd_s = pt.gemm + pt.attn_f + mem_s + k->layer_overhead_s;
    out->bwd_s = 2.0 * pt.gemm + pt.attn_b + k->mem_bwd_ratio * mem_s + k->layer_overhead_s;
    if (o->recompute_elementwise && ar_kind_is_block(kind)) out->bwd_s += mem_s;
    out->tp_comm_s = tp > 1 ? comm : 0.0;
    out->act_bytes = ar_model_act_bytes(m, kind, seq, mbs, tp, AR_RECOMPUTE_SELECTIVE);
    return ARACHNE_OK;
}

static const int gen_tps[] = { 1, 2, 4, 8 };
static const int gen_mbs[] = { 1, 2, 4, 8, 16, 32 };

int ar_profile_gen_type(arachne_profile *p, const arachne_model *m, const ar_gpu_spec *g, int max_tp)
{
    return ar_profile_gen_type_opts(p, m, g, max_tp, NULL);
}

int ar_profile_gen_type_opts(arachne_profile *p, const arachne_model *m, const ar_gpu_spec *g, int max_tp,
                             const ar_gen_opts *o)
{
    int kind, i, j, st;
    for (kind = 0; kind < AR_LAYER_KINDS; kind++) {
        if (ar_kind_is_block(kind) && ar_model_kind_count(m, kind) == 0) continue;
        for (i = 0; i < (int)AR_COUNT(gen_tps); i++) {
            int tp = gen_tps[i];
            if (tp > max_tp && tp > 1) break;
            if (!ar_model_tp_ok(m, tp)) continue; /* Megatron splits whole heads */
            for (j = 0; j < (int)AR_COUNT(gen_mbs); j++) {
                ar_profile_entry e;
                st = ar_profile_gen_entry(m, g, kind, tp, gen_mbs[j], p->seq_len, NULL, o, &e);
                if (st == ARACHNE_OK)
                    st = ar_profile_add(p, e.gpu, e.kind, e.tp, e.mbs, e.fwd_s, e.bwd_s, e.tp_comm_s, e.act_bytes);
                if (st != ARACHNE_OK) return st;
            }
        }
    }
    return ARACHNE_OK;
}

static int check_args(const char *fn, const arachne_model *m, const arachne_cluster *c)
{
    if (!m || !c) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: NULL model or cluster", fn);
    if (c->ntypes < 1 || c->ntypes > AR_MAX_TYPES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: the cluster has no GPU types", fn);
    return ARACHNE_OK;
}

static int max_node(const arachne_cluster *c, int i) { return c->type_max_node[i] > 1 ? c->type_max_node[i] : 1; }

int arachne_profile_generate(arachne_profile **out, const arachne_model *m, const arachne_cluster *c, int seq_len)
{
    arachne_profile *p = NULL;
    int i, st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_generate: NULL out");
    *out = NULL;
    if ((st = check_args("arachne_profile_generate", m, c)) != ARACHNE_OK) return st;
    if (seq_len < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_generate: seq_len %d: must be >= 1", seq_len);
    if ((st = ar_profile_new(&p, m->name, seq_len)) != ARACHNE_OK) return st;
    for (i = 0; i < c->ntypes; i++) {
        st = ar_profile_gen_type(p, m, &c->types[i], max_node(c, i));
        if (st != ARACHNE_OK) {
            arachne_profile_destroy(p);
            return st;
        }
    }
    *out = p;
    return ARACHNE_OK;
}

int arachne_profile_generate_gpu(arachne_profile *p, const arachne_model *m, const arachne_cluster *c,
                                 const char *gpu_type)
{
    int i, st;
    if (!p || !gpu_type) return AR_NULL_ARG("arachne_profile_generate_gpu", p, gpu_type);
    if ((st = check_args("arachne_profile_generate_gpu", m, c)) != ARACHNE_OK) return st;
    i = ar_cluster_type_index(c, gpu_type);
    if (i >= 0) return ar_profile_gen_type(p, m, &c->types[i], max_node(c, i));
    return ar_error(ARACHNE_E_NOT_FOUND, "arachne_profile_generate_gpu: the cluster has no GPU type '%s'", gpu_type);
}
