/* policy_state.c -- state, composition summary and candidate features.
 * All entries are fractions or normalised device properties (roughly in
 * [0, 1]); sizes enter on a log scale, so one policy transfers across
 * clusters of 16 and 16,384 GPUs. */
#include <math.h>
#include <string.h>

#include "policy_state.h"

/* Normalisers: the largest values in the catalog, so features stay <= ~1. */
#define MEM_NORM 100e9      /* bytes */
#define INTRA_NORM 450e9    /* bytes/s, NVLink4 per direction */
#define INTER_NORM 50e9     /* bytes/s, NDR per GPU */

static double clamp01(double v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }
static double log2p1(double v) { return log2(1.0 + (v > 0 ? v : 0)); }

double ar_state_per_replica(const ar_state_static *st, int r)
{
    return r <= 1 ? st->state_bytes : st->state_rep + st->state_shared / r;
}

/* Seconds of the mean layer of a hybrid model at (tp, mbs) on a type,
 * per sample; negative when a kind lacks the entry. */
static double hybrid_layer_time(const arachne_cost_model *cm, int type, int tp, int mbs)
{
    const arachne_model *m = cm->model;
    double sum = 0.0;
    int k;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        const ar_profile_entry *e;
        if (!ar_kind_is_block(k) || ar_model_kind_count(m, k) == 0) continue;
        e = ar_profile_find(cm->profile, cm->cluster->types[type].name, k, tp, mbs);
        if (!e) return -1.0;
        sum += ar_model_kind_count(m, k) * (e->fwd_s + e->bwd_s + e->tp_comm_s);
    }
    return sum / m->blocks * tp / mbs;
}

/* Seconds per dense (or MoE) block -- a hybrid model's mean layer -- at
 * the smallest TP and micro-batch with entries on a type, per sample. */
static double block_time(const arachne_cost_model *cm, int type)
{
    const arachne_model *m = cm->model;
    int kind = m->experts > 0 && m->dense_prefix < m->blocks ? AR_LAYER_MOE : AR_LAYER_DENSE;
    static const int mbs_list[] = { 1, 2, 4, 8, 16, 32 };
    const int tps[] = { 1, 2, 4, 8 };
    size_t i, k;
    for (k = 0; k < AR_COUNT(tps); k++) {
        for (i = 0; i < AR_COUNT(mbs_list); i++) {
            const ar_profile_entry *e;
            if (m->pattern[0]) {
                double v = hybrid_layer_time(cm, type, tps[k], mbs_list[i]);
                if (v >= 0.0) return v;
                continue;
            }
            e = ar_profile_find(cm->profile, cm->cluster->types[type].name, kind, tps[k], mbs_list[i]);
            if (e) return (e->fwd_s + e->bwd_s + e->tp_comm_s) * tps[k] / mbs_list[i];
        }
    }
    /* No entry: fall back on peak FLOP/s so the feature stays defined. */
    return 1e12 / cm->cluster->types[type].flops;
}

int ar_state_static_init(ar_state_static *st, const arachne_cost_model *cm)
{
    const arachne_cluster *c = cm->cluster;
    const arachne_model *m = cm->model;
    const ar_setup *su = &cm->setup;
    double t[AR_MAX_TYPES], tmin = 1e300, flops_total = 0, entropy = 0, share_max = 0;
    double mean_speed = 0, var_speed = 0, one_gpu = 0, per_param;
    int order[AR_MAX_TYPES], i, j, n;
    memset(st, 0, sizeof *st);
    st->ntypes = c->ntypes;
    for (i = 0; i < AR_STATE_SLOTS; i++) st->slot_type[i] = -1;
    for (i = 0; i < AR_MAX_TYPES; i++) st->type_slot[i] = -1;
    for (i = 0; i < c->ntypes; i++) {
        t[i] = block_time(cm, i);
        if (t[i] < tmin) tmin = t[i];
        flops_total += c->types[i].flops * c->type_gpus[i];
    }
    for (i = 0; i < c->ntypes; i++) st->speed[i] = tmin / t[i];
    /* Slots: types ordered by GPU count (then speed, then index), so the
     * largest groups always have a slot and the order is deterministic. */
    for (i = 0; i < c->ntypes; i++) order[i] = i;
    for (i = 1; i < c->ntypes; i++) {
        int v = order[i];
        for (j = i; j > 0; j--) {
            int u = order[j - 1];
            int before = c->type_gpus[v] > c->type_gpus[u] ||
                         (c->type_gpus[v] == c->type_gpus[u] && st->speed[v] > st->speed[u]);
            if (!before) break;
            order[j] = u;
        }
        order[j] = v;
    }
    n = c->ntypes < AR_STATE_SLOTS ? c->ntypes : AR_STATE_SLOTS;
    for (i = 0; i < n; i++) {
        st->slot_type[i] = order[i];
        st->type_slot[order[i]] = i;
    }
    /* Composition summary: size, share of each slot, how uneven the mix is. */
    st->comp[0] = log2p1(c->total_gpus) / 14.0;
    for (i = 0; i < c->ntypes; i++) {
        double p = (double)c->type_gpus[i] / c->total_gpus;
        if (st->type_slot[i] >= 0) st->comp[1 + st->type_slot[i]] = p;
        if (p > 0) entropy -= p * log(p);
        if (p > share_max) share_max = p;
        mean_speed += p * st->speed[i];
    }
    for (i = 0; i < c->ntypes; i++) {
        double p = (double)c->type_gpus[i] / c->total_gpus, d = st->speed[i] - mean_speed;
        var_speed += p * d * d;
    }
    for (i = 0; i < c->nnodes; i++)
        if (c->nodes[i].gpus == 1) one_gpu += 1;
    st->comp[9] = c->ntypes > 1 ? 1.0 - entropy / log((double)c->ntypes) : 1.0; /* unevenness */
    st->comp[10] = share_max;
    st->comp[11] = one_gpu / c->total_gpus;                                      /* GPUs in 1-GPU nodes */
    st->comp[12] = log2p1((double)c->total_gpus / c->nnodes) / 4.0;             /* mean node size */
    st->comp[13] = c->ntypes / 8.0;
    st->comp[14] = sqrt(var_speed);                                              /* speed spread */
    st->comp[15] = mean_speed;
    /* Model and setup. */
    per_param = su->weight_bytes + su->grad_bytes + su->optim_bytes;
    st->state_bytes = m->total_params * per_param;
    /* Replicas share what the fill shards across them: the routed experts
     * (the most sharded tiling spreads EP over the stage's TP x replicas
     * GPUs, fill_experts.c) and, with ZeRO-1, the optimizer state. */
    {
        double rep_pp = su->weight_bytes + su->grad_bytes + (su->dist_optimizer ? 0.0 : su->optim_bytes);
        double experts = 0.0;
        int k;
        if (m->experts > 0 && su->expert_tiling)
            for (k = 0; k < AR_LAYER_KINDS; k++) experts += ar_model_kind_count(m, k) * m->expert_params[k];
        st->state_rep = (m->total_params - experts) * rep_pp;
        st->state_shared = experts * rep_pp + (su->dist_optimizer ? m->total_params * su->optim_bytes : 0.0);
    }
    st->model_feat[0] = log10(m->total_params) / 12.0;
    st->model_feat[1] = m->blocks / 128.0;
    st->model_feat[2] = m->hidden / 8192.0;
    st->model_feat[3] = m->experts > 0;
    st->model_feat[4] = log2p1(m->experts) / 8.0;
    st->model_feat[5] = m->top_k / 8.0;
    st->model_feat[6] = su->seq_len / 8192.0;
    st->model_feat[7] = log2p1(su->global_batch) / 12.0;
    /* Throughput scale: the whole cluster at 40 % of peak on the model's
     * 6 * active params * tokens FLOPs per iteration. */
    st->thr_ref = 0.4 * flops_total / (6.0 * m->active_total * (double)su->global_batch * su->seq_len);
    for (i = 0; i < c->ntypes; i++) {
        double cap = c->types[i].mem_bytes * c->type_max_node[i];
        if (cap > st->max_stage_mem) st->max_stage_mem = cap;
    }
    return ARACHNE_OK;
}

/* What a depth d template would do to the 1F1B schedule, estimated before
 * any stage is chosen: the TP degree a stage needs so that its share of the
 * model state fits into 70 % of the largest free GPU (capped at the largest
 * free node), the replicas the free GPUs then hold, the micro-batches of
 * size 1 each replica gets from the global batch, and the bubble fraction
 * (d - 1) / (m + d - 1).  These tie the depth to the global batch and the
 * cluster size, which decide whether deep pipelines pay (few replicas, many
 * micro-batches) or not.  Writes 4 entries: 1 - bubble, share of replicas
 * with work min(1, B / R), log2(1 + m) / 10, log2(tp) / 4. */
static void depth_schedule_features(const ar_state_static *st, const ar_dec_ctx *ctx, int d, int free_total,
                                    double *f)
{
    const arachne_cluster *c = ctx->cm->cluster;
    const ar_avail *a = ctx->avail;
    double mem = 0, need, reps, m, batch = ctx->cm->setup.global_batch;
    int t, tp = 1, node = 1;
    for (t = 0; t < c->ntypes; t++) {
        if (a->type_free[t] <= 0) continue;
        if (c->types[t].mem_bytes > mem) mem = c->types[t].mem_bytes;
        if (a->type_max_free[t] > node) node = a->type_max_free[t];
    }
    f[0] = f[1] = f[2] = f[3] = 0.0;
    if (mem <= 0 || free_total <= 0) return;
    need = ar_state_per_replica(st, ctx->replicas) / d / (0.7 * mem);
    while (tp < node && tp < need) tp *= 2;
    reps = floor((double)free_total / ((double)d * tp));
    if (reps < 1) return;
    m = batch / reps;
    f[0] = 1.0 - (d - 1.0) / ((m > 1 ? m : 1.0) + d - 1.0);
    f[1] = clamp01(batch / reps);
    f[2] = log2p1(m) / 10.0;
    f[3] = log2((double)tp) / 4.0;
}

/* How a GPU type compares with the others still free, for the device head:
 * the per-type properties alone (speed, memory) do not say whether a type is
 * the best one left, which is what the choice of a stage's type turns on.
 * Free GPUs are those left after one replica of the stages already chosen
 * (ctx->type_left) when the construction provides them.  Writes 4 entries
 * per type: speed rank among the types with free GPUs (1 = fastest, 0 when
 * the type has none: such a type is masked, the entry only stays bounded); whether
 * the type's largest free node holds a stage's share of the model state in
 * 70 % of its memory (offer / need, capped at 1); the type's share of the
 * free compute (speed x free GPUs); its speed against the mean of the stages
 * chosen so far in this template (0.5 = equal, 0.5 at the first stage). */
static void device_rank_features(const ar_state_static *st, const ar_dec_ctx *ctx, const int *in_tmpl, double *f)
{
    const arachne_cluster *c = ctx->cm->cluster;
    const ar_avail *a = ctx->avail;
    double compute = 0.0, prev = 0.0, need;
    int left[AR_MAX_TYPES], t, u, nfree = 0, nprev = 0;
    for (t = 0; t < c->ntypes; t++) {
        left[t] = AR_MAX(0, ctx->type_left ? ctx->type_left[t] : a->type_free[t]);
        nfree += left[t] > 0;
        compute += st->speed[t] * left[t];
        prev += st->speed[t] * in_tmpl[t];
        nprev += in_tmpl[t];
    }
    need = ar_state_per_replica(st, ctx->replicas) / (ctx->depth > 0 ? ctx->depth : 1);
    for (t = 0; t < c->ntypes; t++) {
        double offer = 0.7 * c->types[t].mem_bytes * a->type_max_free[t];
        int slower = 0;
        for (u = 0; u < c->ntypes; u++)
            if (u != t && left[u] > 0 && st->speed[u] < st->speed[t]) slower++;
        f[4 * t + 0] = left[t] == 0 ? 0.0 : nfree > 1 ? (double)slower / (nfree - 1) : 1.0;
        f[4 * t + 1] = need > 0 ? clamp01(offer / need) : 1.0;
        f[4 * t + 2] = compute > 0 ? st->speed[t] * left[t] / compute : 0.0;
        f[4 * t + 3] = nprev > 0 ? clamp01(0.5 * st->speed[t] / (prev / nprev)) : 0.5;
    }
}

static double plan_thr(const arachne_plan *p) { return p && p->ntemplates > 0 ? p->iter_per_s : 0.0; }

/* Rows of the REPLICAS decision, choice k = at least r = 2^k replicas
 * (entry 7 = -1 tells them from depth rows, where it is 1, and STOP, 0):
 * log r; GPUs one replica may use at most; the least depth that fits r
 * replicas (from the construction's lookahead) over Dmax; samples of the
 * global batch left per replica; r == 1; the pipeline bubble of the least
 * depth at one sample per micro-batch; the model state r replicas hold
 * (routed experts and a ZeRO-1 optimizer once, the rest r times) over the
 * free memory (the memory r replicas ask of the cluster); r over the free
 * GPUs. */
static void replica_features(const ar_state_static *st, const ar_dec_ctx *ctx, int free_total, double *cand)
{
    const arachne_cluster *c = ctx->cm->cluster;
    double mem = 0.0, batch = ctx->cm->setup.global_batch - ar_plan_batch_floor(ctx->plan);
    int i, t;
    for (t = 0; t < c->ntypes; t++) mem += (double)ctx->avail->type_free[t] * c->types[t].mem_bytes;
    if (batch < 1.0) batch = 1.0;
    for (i = 0; i < ctx->n; i++) {
        double *f = cand + i * AR_STATE_CAND, r = (double)(1 << i), m = batch / r;
        int d = ctx->rep_min_depth ? ctx->rep_min_depth[i] : 1;
        memset(f, 0, sizeof(double) * AR_STATE_CAND);
        if (!ctx->mask[i]) continue;
        f[1] = i / 11.0;
        f[2] = log2p1((double)free_total / r) / 12.0;
        f[3] = (double)d / ctx->max_depth;
        f[4] = log2p1(m) / 11.0;
        f[5] = i == 0;
        f[6] = (d - 1.0) / (AR_MAX(m, 1.0) + d - 1.0);
        f[7] = -1.0;
        f[8] = mem > 0 ? clamp01(ar_state_per_replica(st, 1 << i) * r / mem) : 1.0;
        f[9] = free_total > 0 ? clamp01(r / free_total) : 1.0;
    }
}

void ar_state_encode(const ar_state_static *st, const ar_dec_ctx *ctx, double *x, double *cand)
{
    const arachne_cluster *c = ctx->cm->cluster;
    const ar_avail *a = ctx->avail;
    int free_total = 0, i, d, dmax = ctx->max_depth;
    int in_tmpl[AR_MAX_TYPES] = { 0 };
    int prev_type = ctx->stage > 0 ? ctx->types[ctx->stage - 1] : -1;
    int prev_tp = ctx->stage > 0 ? ctx->tps[ctx->stage - 1] : 0;
    double *o;
    memset(x, 0, sizeof(double) * AR_STATE_DIM);
    for (i = 0; i < c->ntypes; i++) free_total += a->type_free[i];
    for (i = 0; i < ctx->stage; i++) in_tmpl[ctx->types[i]]++;
    /* [0, 80): per-type slots. */
    for (i = 0; i < AR_STATE_SLOTS; i++) {
        int ty = st->slot_type[i];
        o = x + i * AR_STATE_SLOT_FEATS;
        if (ty < 0) continue;
        o[0] = 1.0;
        o[1] = (double)a->type_free[ty] / c->type_gpus[ty];
        o[2] = (double)c->type_gpus[ty] / c->total_gpus;
        o[3] = c->types[ty].mem_bytes / MEM_NORM;
        o[4] = st->speed[ty];
        o[5] = c->types[ty].intra_bw / INTRA_NORM;
        o[6] = c->types[ty].inter_bw / INTER_NORM;
        o[7] = log2p1(a->type_max_free[ty]) / 4.0;
        o[8] = ctx->depth > 0 ? (double)in_tmpl[ty] / ctx->depth : 0.0;
        o[9] = ty == prev_type;
    }
    /* [80, 88): cluster-wide. */
    o = x + 80;
    o[0] = log2p1(c->total_gpus) / 14.0;
    o[1] = (double)free_total / c->total_gpus;
    o[2] = (double)(ctx->plan ? ctx->plan->ntemplates : 0) / AR_MAX_TEMPLATES;
    o[3] = clamp01(plan_thr(ctx->plan) / st->thr_ref);
    o[4] = (double)ctx->step / AR_MAX_TEMPLATES;
    o[5] = log2p1(c->nnodes) / 12.0;
    o[6] = c->ntypes / 8.0;
    o[7] = clamp01(ar_state_per_replica(st, ctx->replicas) / (st->max_stage_mem * 8.0));
    /* [88, 96): model. */
    memcpy(x + 88, st->model_feat, sizeof st->model_feat);
    /* [96, 104): the partial template. */
    o = x + 96;
    o[0] = ctx->kind == AR_DEC_DEPTH;
    o[1] = ctx->kind == AR_DEC_TYPE;
    o[2] = ctx->kind == AR_DEC_TP;
    o[3] = (double)ctx->depth / dmax;
    o[4] = ctx->depth > 0 ? (double)ctx->stage / ctx->depth : 0.0;
    o[5] = prev_tp > 0 ? log2((double)prev_tp) / 10.0 : 0.0;
    o[6] = ctx->kind == AR_DEC_TP ? st->speed[ctx->types[ctx->stage]] : 0.0;
    o[7] = ctx->kind == AR_DEC_TP ? c->types[ctx->types[ctx->stage]].mem_bytes / MEM_NORM : 0.0;
    /* [104, 120): GPUs left over each candidate depth (most replicas a depth
     * can leave with one GPU per stage). */
    for (d = 1; d <= AR_STATE_DEPTHS; d++) x[103 + d] = log2p1((double)free_total / d) / 12.0;
    /* [120, 128): composition summary repeated for the backbone's own use. */
    for (i = 0; i < 8; i++) x[120 + i] = st->comp[i < 1 ? 0 : 8 + i];
    /* replica-first construction: the last two entries say whether this is
     * the REPLICAS decision and the replicas asked for in this step */
    if (ctx->kind == AR_DEC_REPLICAS || ctx->replicas > 0) {
        x[126] = ctx->kind == AR_DEC_REPLICAS;
        x[127] = ctx->replicas > 0 ? log2((double)ctx->replicas) / 11.0 : 0.0;
    }

    if (!cand) return;
    if (ctx->kind == AR_DEC_REPLICAS) {
        replica_features(st, ctx, free_total, cand);
    } else if (ctx->kind == AR_DEC_DEPTH) {
        for (i = 0; i < ctx->n; i++) {
            double *f = cand + i * AR_STATE_CAND;
            memset(f, 0, sizeof(double) * AR_STATE_CAND);
            if (i == 0) { /* STOP */
                f[0] = 1.0;
                f[6] = clamp01(plan_thr(ctx->plan) / st->thr_ref);
                continue;
            }
            f[1] = (double)i / dmax;
            f[2] = log2p1((double)free_total / (i * AR_MAX(ctx->replicas, 1))) / 12.0;
            f[3] = (double)ctx->cm->model->blocks / i / 64.0;
            f[4] = clamp01(ar_state_per_replica(st, ctx->replicas) / i / st->max_stage_mem / 4.0);
            f[5] = i == 1;
            f[7] = 1.0;
            depth_schedule_features(st, ctx, i, free_total, f + 8);
        }
    } else if (ctx->kind == AR_DEC_TYPE) {
        double dev[AR_MAX_TYPES * 4];
        device_rank_features(st, ctx, in_tmpl, dev);
        for (i = 0; i < ctx->n; i++) {
            double *f = cand + i * AR_STATE_CAND;
            memset(f, 0, sizeof(double) * AR_STATE_CAND);
            memcpy(f + 8, dev + 4 * i, 4 * sizeof(double));
            f[0] = st->speed[i];
            f[1] = c->types[i].mem_bytes / MEM_NORM;
            f[2] = (double)a->type_free[i] / c->type_gpus[i];
            f[3] = log2p1(a->type_max_free[i]) / 4.0;
            f[4] = c->types[i].intra_bw / INTRA_NORM;
            f[5] = c->types[i].inter_bw / INTER_NORM;
            f[6] = i == prev_type;
            f[7] = ctx->depth > 0 ? (double)in_tmpl[i] / ctx->depth : 0.0;
        }
    }
}
