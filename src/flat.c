/* flat.c -- the flat policy baseline: a policy over the raw template knobs
 * (flat.h), its rollouts, best-of-K planning, training and file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flat.h"
#include "policy.h"
#include "policy_file.h"

const int ar_flat_replica_grid[AR_FLAT_NREP] = { 1,   2,   3,   4,   6,    8,    12,   16,   24,   32,   48,  64,
                                                 96,  128, 192, 256, 384,  512,  768,  1024, 1536, 2048, 3072 };

#define MEM_NORM 100e9

static double clamp01(double v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }
static double log2p1(double v) { return log2(1.0 + (v > 0 ? v : 0)); }

/* ---------------------------------------------------------------------- */
/* networks                                                                */

static void net_config(ar_nn_config *cfg, int which, int hidden, int layers)
{
    ar_policy_nn_config(cfg, hidden, layers);
    cfg->state_dim = AR_FLAT_STATE_DIM;
    if (which == 1) {
        /* arithmetic net: DEPTH head = replicas, DEVICE head = shares, TP head = micro-batch */
        cfg->max_depth_cands = AR_FLAT_NREP;
        cfg->max_type_cands = AR_FLAT_SHARES;
        cfg->n_tp = AR_FLAT_NMBS;
    }
}

int ar_flat_create(ar_flat **out, uint64_t seed, int hidden, int layers)
{
    ar_flat *f;
    ar_nn_config cfg;
    int st, i;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat policy: out is NULL");
    *out = NULL;
    if (hidden < 0 || hidden > AR_NN_MAX_DIM || layers < 0 || layers > AR_NN_MAX_LAYERS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat policy: hidden %d or layers %d out of range", hidden, layers);
    f = ar_calloc(1, sizeof *f);
    if (!f) return ARACHNE_E_NO_MEMORY;
    for (i = 0; i < 2; i++) {
        net_config(&cfg, i, hidden, layers);
        st = ar_nn_create(&f->net[i], &cfg, seed + (uint64_t)i * 0x9e3779b97f4a7c15ULL);
        if (st) { ar_flat_destroy(f); return st; }
    }
    *out = f;
    return ARACHNE_OK;
}

void ar_flat_destroy(ar_flat *f)
{
    if (!f) return;
    ar_nn_destroy(f->net[0]);
    ar_nn_destroy(f->net[1]);
    free(f);
}

size_t ar_flat_param_count(const ar_flat *f)
{
    return f ? ar_nn_param_count(f->net[0]) + ar_nn_param_count(f->net[1]) : 0;
}

/* File: "ARFLAT\0\1", u32 version 1, u32 0, u64 len0, u64 len1, then the
 * two policy-file images (little-endian). */
#define FLAT_MAGIC "ARFLAT\0\1"
#define FLAT_HDR 32

static void put_u64(unsigned char *p, uint64_t v)
{
    int i;
    for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

int ar_flat_save(const ar_flat *f, const char *path, const char *meta_json)
{
    ar_buf a, b, out;
    unsigned char hdr[FLAT_HDR];
    int st;
    if (!f || !path) return AR_NULL_ARG("flat policy save", f, path);
    ar_buf_init(&a);
    ar_buf_init(&b);
    ar_buf_init(&out);
    st = ar_policy_encode(&a, f->net[0], AR_FLAT_STATE_VERSION, meta_json);
    if (!st) st = ar_policy_encode(&b, f->net[1], AR_FLAT_STATE_VERSION, NULL);
    if (!st) {
        memset(hdr, 0, sizeof hdr);
        memcpy(hdr, FLAT_MAGIC, 8);
        hdr[8] = 1;
        put_u64(hdr + 16, a.len);
        put_u64(hdr + 24, b.len);
        ar_buf_put(&out, (const char *)hdr, sizeof hdr);
        ar_buf_put(&out, a.data, a.len);
        ar_buf_put(&out, b.data, b.len);
        st = ar_buf_status(&out);
    }
    if (!st) st = ar_write_file_atomic(path, out.data, out.len);
    ar_buf_free(&a);
    ar_buf_free(&b);
    ar_buf_free(&out);
    return st;
}

int ar_flat_load(ar_flat **out, const char *path)
{
    char *data = NULL;
    size_t len = 0;
    uint64_t l0, l1;
    ar_flat *f = NULL;
    int st, i;
    const unsigned char *u;
    if (!out || !path) return AR_NULL_ARG("flat policy load", out, path);
    *out = NULL;
    st = ar_read_file(path, &data, &len);
    if (st) return st;
    u = (const unsigned char *)data;
    if (len < FLAT_HDR || memcmp(u, FLAT_MAGIC, 8) != 0) {
        free(data);
        return ar_error(ARACHNE_E_CORRUPT, "%s: not a flat policy file (bad magic)", path);
    }
    if (u[8] != 1 || u[9] || u[10] || u[11]) {
        unsigned v = (unsigned)u[8];
        free(data);
        return ar_error(ARACHNE_E_UNSUPPORTED, "%s: flat policy file version %u is not 1", path, v);
    }
    l0 = get_u64(u + 16);
    l1 = get_u64(u + 24);
    if (l0 > len || l1 > len || FLAT_HDR + l0 + l1 != len) {
        free(data);
        return ar_error(ARACHNE_E_CORRUPT, "%s: image sizes %llu + %llu do not match the file size %zu", path,
                        (unsigned long long)l0, (unsigned long long)l1, len);
    }
    f = ar_calloc(1, sizeof *f);
    if (!f) { free(data); return ARACHNE_E_NO_MEMORY; }
    st = ar_policy_decode(&f->net[0], u + FLAT_HDR, (size_t)l0, path, AR_FLAT_STATE_VERSION, NULL, NULL);
    if (!st) st = ar_policy_decode(&f->net[1], u + FLAT_HDR + l0, (size_t)l1, path, AR_FLAT_STATE_VERSION, NULL, NULL);
    free(data);
    if (st) { ar_flat_destroy(f); return st; }
    for (i = 0; i < 2; i++) {
        const ar_nn_config *c = ar_nn_get_config(f->net[i]);
        ar_nn_config want;
        net_config(&want, i, c->hidden, c->layers);
        if (c->state_dim != want.state_dim || c->comp_dim != want.comp_dim || c->cand_dim != want.cand_dim ||
            c->max_depth_cands != want.max_depth_cands || c->max_type_cands != want.max_type_cands ||
            c->n_tp != want.n_tp) {
            ar_flat_destroy(f);
            return ar_error(ARACHNE_E_CORRUPT, "%s: network %d has sizes of another kind of policy", path, i);
        }
    }
    *out = f;
    return ARACHNE_OK;
}

/* ---------------------------------------------------------------------- */
/* runner                                                                  */

void ar_flat_opts_default(ar_flat_opts *o)
{
    o->max_steps = AR_MAX_TEMPLATES;
    o->penalty = 1.0;
}

int ar_flat_runner_init(ar_flat_runner *r, const ar_flat *f, const arachne_cost_model *cm, const ar_flat_opts *opts)
{
    const arachne_cluster *cl;
    int st, i, maxnode = 1, n, dcap;
    memset(r, 0, sizeof *r);
    if (!f || !cm || !cm->cluster || !cm->model || !cm->profile)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat policy: NULL policy or incomplete cost model");
    cl = cm->cluster;
    if (cl->nnodes < 1 || cl->total_gpus < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat policy: the cluster has no GPUs");
    if (cl->ntypes > AR_MAX_TYPES) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat policy: too many GPU types");
    r->f = f;
    r->cm = cm;
    if (opts) r->opts = *opts; else ar_flat_opts_default(&r->opts);
    if (r->opts.max_steps < 1 || r->opts.max_steps > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat policy: step limit %d outside [1, %d]", r->opts.max_steps,
                        AR_MAX_TEMPLATES);
    if (!(r->opts.penalty >= 0.0)) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat policy: negative penalty");
    dcap = cm->setup.max_depth > 0 ? cm->setup.max_depth : AR_SEARCH_MAX_DEPTH;
    r->max_depth = AR_MIN(AR_MIN(dcap, AR_SEARCH_MAX_DEPTH), cm->model->blocks);
    for (i = 0; i < cl->nnodes; i++) if (cl->nodes[i].gpus > maxnode) maxnode = cl->nodes[i].gpus;
    r->ntp = AR_MIN(ar_ilog2(maxnode), AR_MAX_TP_LOG) + 1;
    n = cl->total_gpus;
    st = ar_state_static_init(&r->st, cm);
    if (!st) st = ar_nn_ws_create(&r->ws[0], f->net[0]);
    if (!st) st = ar_nn_ws_create(&r->ws[1], f->net[1]);
    if (!st) st = ar_avail_init(&r->base, cl);
    if (!st) st = ar_avail_init(&r->avail, cl);
    if (!st) st = ar_plan_init(&r->plan, cm);
    if (!st) st = ar_plan_init(&r->trial, cm);
    if (st) { ar_flat_runner_free(r); return st; }
    r->plan.ranks = ar_calloc((size_t)n, sizeof(ar_rank));
    r->trial.ranks = ar_calloc((size_t)n, sizeof(ar_rank));
    r->node_of = ar_calloc((size_t)n, sizeof(int));
    r->gpu_of = ar_calloc((size_t)n, sizeof(int));
    r->scratch = ar_calloc((size_t)cl->nnodes * 3, sizeof(int));
    if (!r->plan.ranks || !r->trial.ranks || !r->node_of || !r->gpu_of || !r->scratch) {
        ar_flat_runner_free(r);
        return ARACHNE_E_NO_MEMORY;
    }
    return ARACHNE_OK;
}

void ar_flat_runner_free(ar_flat_runner *r)
{
    if (!r) return;
    ar_nn_ws_destroy(r->ws[0]);
    ar_nn_ws_destroy(r->ws[1]);
    ar_avail_free(&r->base);
    ar_avail_free(&r->avail);
    ar_plan_clear(&r->plan);
    ar_plan_clear(&r->trial);
    free(r->node_of);
    free(r->gpu_of);
    free(r->scratch);
    free(r->recs);
    free(r->pool);
    free(r->masks);
    memset(r, 0, sizeof *r);
}

static int reserve(ar_flat_runner *r, size_t more_d, size_t more_m)
{
    if (r->pool_len + more_d > r->pool_cap) {
        size_t cap = r->pool_cap ? r->pool_cap : 4096;
        double *p;
        while (cap < r->pool_len + more_d) cap *= 2;
        p = ar_realloc(r->pool, cap * sizeof *p);
        if (!p) return ARACHNE_E_NO_MEMORY;
        r->pool = p;
        r->pool_cap = cap;
    }
    if (r->masks_len + more_m > r->masks_cap) {
        size_t cap = r->masks_cap ? r->masks_cap : 1024;
        unsigned char *m;
        while (cap < r->masks_len + more_m) cap *= 2;
        m = ar_realloc(r->masks, cap);
        if (!m) return ARACHNE_E_NO_MEMORY;
        r->masks = m;
        r->masks_cap = cap;
    }
    if (r->nrecs == r->cap_recs) {
        int cap = r->cap_recs ? 2 * r->cap_recs : 64;
        ar_flat_rec *p = ar_realloc(r->recs, (size_t)cap * sizeof *p);
        if (!p) return ARACHNE_E_NO_MEMORY;
        r->recs = p;
        r->cap_recs = cap;
    }
    return ARACHNE_OK;
}

/* What the template being sampled holds so far. */
typedef struct partial {
    int step, depth, nst;              /* nst: stages whose type is chosen */
    int types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH], shares[AR_MAX_DEPTH];
    int ntp_chosen;                    /* stages whose TP is chosen */
    int nshare;                        /* stages whose share is chosen */
    int reps;                          /* 0 until chosen */
    int batch_left;
} partial;

/* State: the policy's encoding of the nearest structured decision, then the
 * flat entries. */
static void encode(const ar_flat_runner *r, int knob, const partial *p, int stage, int K,
                   const unsigned char *mask, double *x, double *cand)
{
    const arachne_cluster *c = r->cm->cluster;
    const ar_avail *a = &r->avail;
    ar_dec_ctx ctx;
    double *e = x + AR_STATE_DIM;
    int free_total = ar_avail_total(a), gpr = 0, s, nallowed = 0, i, wsum = 0, cur_type = -1;
    double cap = 0.0;
    memset(&ctx, 0, sizeof ctx);
    for (i = 0; i < K; i++) nallowed += mask[i] != 0;
    ctx.kind = knob == AR_FLAT_DEPTH ? AR_DEC_DEPTH : knob == AR_FLAT_TYPE ? AR_DEC_TYPE : AR_DEC_TP;
    ctx.step = p->step;
    ctx.stage = knob == AR_FLAT_DEPTH ? 0 : stage;
    ctx.depth = knob == AR_FLAT_DEPTH ? 0 : p->depth;
    ctx.types = p->types;
    ctx.tps = p->tps;
    ctx.type_left = NULL;
    ctx.avail = a;
    ctx.plan = &r->plan;
    ctx.cm = r->cm;
    ctx.max_depth = r->max_depth;
    ctx.n = K;
    ctx.mask = mask;
    ctx.nallowed = nallowed;
    ar_state_encode(&r->st, &ctx, x,
                    (knob == AR_FLAT_DEPTH || knob == AR_FLAT_TYPE) ? cand : NULL);
    if (knob == AR_FLAT_TYPE) /* the flat schema's device rows stop at entry 7 (see AR_FLAT_STATE_VERSION) */
        for (i = 0; i < K; i++) memset(cand + i * AR_STATE_CAND + 8, 0, sizeof(double) * (AR_STATE_CAND - 8));
    for (s = 0; s < p->ntp_chosen; s++) {
        gpr += p->tps[s];
        cap += p->tps[s] * c->types[p->types[s]].mem_bytes;
    }
    for (s = 0; s < p->nshare; s++) wsum += p->shares[s];
    if (knob != AR_FLAT_DEPTH && stage < p->nst) cur_type = p->types[stage];
    memset(e, 0, sizeof(double) * AR_FLAT_EXTRA);
    e[knob] = 1.0;
    e[6] = p->depth > 0 ? (double)stage / p->depth : 0.0;
    e[7] = log2p1(gpr) / 10.0;
    e[8] = free_total > 0 ? AR_MIN(2.0, (double)gpr / free_total) / 2.0 : 1.0;
    e[9] = log2p1(p->reps) / 12.0;
    e[10] = p->nshare > 0 ? (double)wsum / (p->nshare * AR_FLAT_SHARES) : 0.0;
    e[11] = p->depth > 0 ? (double)r->cm->model->blocks / p->depth / 64.0 : 0.0;
    e[12] = (double)p->batch_left / r->cm->setup.global_batch;
    e[13] = log2p1(p->batch_left) / 12.0;
    e[14] = cap > 0 ? clamp01(r->st.state_bytes / cap / 4.0) : 0.0;
    e[15] = cur_type >= 0 ? (double)a->type_free[cur_type] / c->type_gpus[cur_type] : 0.0;

    if (knob == AR_FLAT_REPLICAS) {
        for (i = 0; i < K; i++) {
            double *f = cand + i * AR_STATE_CAND, rep = ar_flat_replica_grid[i];
            memset(f, 0, sizeof(double) * AR_STATE_CAND);
            f[0] = log2p1(rep) / 12.0;
            f[1] = free_total > 0 ? AR_MIN(2.0, rep * gpr / free_total) / 2.0 : 1.0;
            f[2] = p->batch_left > 0 ? AR_MIN(1.0, rep / p->batch_left) : 1.0;
            f[3] = rep * gpr <= free_total;
            f[4] = 1.0;
        }
    } else if (knob == AR_FLAT_SHARE) {
        int ty = p->types[stage];
        for (i = 0; i < K; i++) {
            double *f = cand + i * AR_STATE_CAND;
            memset(f, 0, sizeof(double) * AR_STATE_CAND);
            f[0] = (double)(i + 1) / AR_FLAT_SHARES;
            f[1] = r->st.speed[ty];
            f[2] = c->types[ty].mem_bytes / MEM_NORM;
            f[3] = log2((double)p->tps[stage]) / 10.0;
            f[4] = (double)stage / p->depth;
            f[5] = stage == 0;
            f[6] = stage == p->depth - 1;
            f[7] = 1.0;
        }
    }
}

/* Runs one decision through the knob's network and head. */
static int decide(ar_flat_runner *r, int knob, const partial *p, int stage, int K, const unsigned char *mask,
                  int *choice)
{
    double x[AR_FLAT_STATE_DIM], cand[(AR_MAX_DEPTH + 1) * AR_STATE_CAND], logp[AR_MAX_DEPTH + 1];
    int net = knob <= AR_FLAT_TP ? 0 : 1, head, rec, i, pick = -1, has_cand;
    switch (knob) {
    case AR_FLAT_DEPTH: case AR_FLAT_REPLICAS: head = AR_HEAD_DEPTH; break;
    case AR_FLAT_TYPE: case AR_FLAT_SHARE: head = AR_HEAD_DEVICE; break;
    default: head = AR_HEAD_TP; break;
    }
    has_cand = head != AR_HEAD_TP;
    encode(r, knob, p, stage, K, mask, x, cand);
    rec = ar_nn_forward(r->f->net[net], r->ws[net], (ar_head)head, x, r->st.comp, has_cand ? cand : NULL, K, mask,
                        logp);
    if (rec < 0) return rec;
    if (r->greedy) {
        double best = -INFINITY;
        for (i = 0; i < K; i++)
            if (mask[i] && logp[i] > best) { best = logp[i]; pick = i; }
    } else {
        double u = ar_rng_uniform(&r->rng), acc = 0;
        for (i = 0; i < K; i++) {
            if (!mask[i]) continue;
            acc += exp(logp[i]);
            pick = i;
            if (u < acc) break;
        }
    }
    ar_nn_ws_reset(r->ws[net]);
    if (pick < 0) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat policy: no allowed choice");
    *choice = pick;
    if (r->record) {
        size_t nd = AR_FLAT_STATE_DIM + (has_cand ? (size_t)K * AR_STATE_CAND : 0);
        ar_flat_rec *R;
        int st = reserve(r, nd, (size_t)K);
        if (st) return st;
        R = &r->recs[r->nrecs++];
        R->net = net;
        R->head = head;
        R->K = K;
        R->choice = pick;
        R->step = p->step;
        R->logp = logp[pick];
        R->x_off = r->pool_len;
        memcpy(r->pool + r->pool_len, x, sizeof x);
        r->pool_len += AR_FLAT_STATE_DIM;
        R->cand_off = (size_t)-1;
        if (has_cand) {
            R->cand_off = r->pool_len;
            memcpy(r->pool + r->pool_len, cand, sizeof(double) * (size_t)K * AR_STATE_CAND);
            r->pool_len += (size_t)K * AR_STATE_CAND;
        }
        R->mask_off = r->masks_len;
        memcpy(r->masks + r->masks_len, mask, (size_t)K);
        r->masks_len += (size_t)K;
    }
    return ARACHNE_OK;
}

/* Builds, places and prices the sampled template on top of r->plan.
 * ARACHNE_OK (committed), or the reason it cannot run. */
static int try_template(ar_flat_runner *r, const partial *p, int mbs)
{
    const arachne_cost_model *cm = r->cm;
    const arachne_cluster *cl = cm->cluster;
    arachne_plan *T = &r->trial;
    ar_template *t;
    double w[AR_MAX_DEPTH];
    int firsts[AR_MAX_DEPTH + 1], s, q, k, rmax, n = r->plan.ntemplates, rk, st, d = p->depth;
    r->evaluations++;
    r->templates_tried++;
    rmax = ar_pack_max_replicas(cl, &r->avail, d, p->types, p->tps);
    if (rmax < p->reps) {
        snprintf(r->why, sizeof r->why, "%d replicas of the template do not fit in the free GPUs (at most %d)", p->reps,
                 rmax);
        return ARACHNE_E_INFEASIBLE;
    }
    st = ar_pack_place(cl, &r->avail, d, p->types, p->tps, p->reps, 0, r->node_of, r->gpu_of, r->scratch);
    if (st) { snprintf(r->why, sizeof r->why, "%s", arachne_last_error()); return st; }
    for (s = 0; s < d; s++) w[s] = p->shares[s];
    ar_split_weighted(cm->model->blocks, d, w, firsts);
    /* trial = plan + template */
    for (s = 0; s < n; s++) ar_template_copy(&T->t[s], &r->plan.t[s]);
    if (r->plan.nranks > 0) memcpy(T->ranks, r->plan.ranks, (size_t)r->plan.nranks * sizeof(ar_rank));
    T->ntemplates = n + 1;
    t = &T->t[n];
    memset(t, 0, sizeof *t);
    t->depth = d;
    t->replicas = p->reps;
    t->micro_batch = mbs;
    for (s = 0; s < d; s++) {
        ar_stage *S = &t->stages[s];
        int moe = 0, b;
        S->type = p->types[s];
        S->tp = p->tps[s];
        S->first = firsts[s];
        S->end = firsts[s + 1];
        if (cm->model->experts > 0)
            for (b = S->first; b < S->end; b++) if (ar_model_block_routed(cm->model, b)) moe = 1;
        if (moe) { S->ep = 1; S->etp = S->tp; S->edp = p->reps; }
        else { S->ep = 1; S->etp = 1; S->edp = S->tp * p->reps; }
    }
    rk = r->plan.nranks;
    for (q = 0; q < p->reps; q++)
        for (s = 0; s < d; s++)
            for (k = 0; k < p->tps[s]; k++) {
                ar_rank *R = &T->ranks[rk];
                R->rank = rk;
                R->node = r->node_of[q * d + s];
                R->gpu = r->gpu_of[q * d + s] + k;
                R->tmpl = n; R->replica = q; R->stage = s; R->tp_rank = k; R->cp_rank = 0;
                rk++;
            }
    T->nranks = rk;
    st = ar_plan_price(cm, T);
    if (st) {
        snprintf(r->why, sizeof r->why, "%s", arachne_last_error());
        return st;
    }
    /* commit: swap plan and trial; consume the GPUs */
    {
        arachne_plan tmp = r->plan;
        r->plan = *T;
        *T = tmp;
    }
    for (q = 0; q < p->reps; q++)
        for (s = 0; s < d; s++) r->avail.free[r->node_of[q * d + s]] -= p->tps[s];
    ar_avail_refresh(&r->avail, cl);
    return ARACHNE_OK;
}

int ar_flat_rollout(ar_flat_runner *r, int greedy, uint64_t seed, int record)
{
    const arachne_cost_model *cm;
    unsigned char mask[AR_MAX_DEPTH + 1];
    int step, st, i, s, choice;
    if (!r || !r->f) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat rollout: runner not initialised");
    cm = r->cm;
    ar_rng_seed(&r->rng, seed);
    r->greedy = greedy;
    r->record = record;
    r->nrecs = 0;
    r->pool_len = 0;
    r->masks_len = 0;
    r->plan.ntemplates = 0;
    r->plan.nranks = 0;
    r->plan.iteration_s = r->plan.iter_per_s = r->plan.samples_per_s = r->plan.tokens_per_s = 0.0;
    r->plan.mfu = r->plan.bubble = 0.0;
    r->plan.gpus_used = 0;
    st = ar_avail_copy(&r->avail, &r->base);
    if (st) return st;
    r->feasible = 0;
    r->templates_tried = 0;
    r->ret = 0.0;
    r->best_step_thr = 0.0;
    r->why[0] = '\0';
    memset(r->step_dec, 0, sizeof r->step_dec);

    for (step = 0; step < r->opts.max_steps; step++) {
        partial p;
        int ndec = 0, mbs, free_total;
        memset(&p, 0, sizeof p);
        p.step = step;
        p.batch_left = cm->setup.global_batch - ar_plan_batch_floor(&r->plan);
        if (p.batch_left < 1) break; /* no sample left for another template */
        /* depth: STOP (not first), 1..Dmax */
        free_total = ar_avail_total(&r->avail);
        if (free_total < 1) break; /* no GPU left for another template */
        memset(mask, 0, sizeof mask);
        mask[0] = step > 0;
        for (i = 1; i <= r->max_depth; i++) mask[i] = i <= free_total;
        st = decide(r, AR_FLAT_DEPTH, &p, 0, r->max_depth + 1, mask, &choice);
        if (st) return st;
        ndec++;
        if (choice == 0) { r->step_dec[step] = ndec; break; }
        p.depth = choice;
        for (s = 0; s < p.depth; s++) {
            int K = cm->cluster->ntypes;
            memset(mask, 1, (size_t)K);
            st = decide(r, AR_FLAT_TYPE, &p, s, K, mask, &choice);
            if (st) return st;
            p.types[s] = choice;
            p.nst = s + 1;
            memset(mask, 0, sizeof mask);
            for (i = 0; i < r->ntp; i++) mask[i] = 1;
            st = decide(r, AR_FLAT_TP, &p, s, AR_POLICY_TP, mask, &choice);
            if (st) return st;
            p.tps[s] = 1 << choice;
            p.ntp_chosen = s + 1;
            memset(mask, 1, AR_FLAT_SHARES);
            st = decide(r, AR_FLAT_SHARE, &p, s, AR_FLAT_SHARES, mask, &choice);
            if (st) return st;
            p.shares[s] = choice + 1;
            p.nshare = s + 1;
            ndec += 3;
        }
        for (i = 0; i < AR_FLAT_NREP; i++)
            mask[i] = ar_flat_replica_grid[i] <= p.batch_left && ar_flat_replica_grid[i] <= free_total;
        st = decide(r, AR_FLAT_REPLICAS, &p, p.depth - 1, AR_FLAT_NREP, mask, &choice);
        if (st) return st;
        p.reps = ar_flat_replica_grid[choice];
        memset(mask, 0, sizeof mask);
        for (i = 0; i < AR_FLAT_NMBS; i++) mask[i] = (long)p.reps << i <= (long)p.batch_left;
        st = decide(r, AR_FLAT_MBS, &p, p.depth - 1, AR_FLAT_NMBS, mask, &choice);
        if (st) return st;
        mbs = 1 << choice;
        ndec += 2;
        r->step_dec[step] = ndec;
        st = try_template(r, &p, mbs);
        if (st == ARACHNE_E_NO_MEMORY) return st;
        if (st) {
            if (step == 0) {
                r->ret = -r->opts.penalty;
                return ARACHNE_OK;
            }
            break; /* a later template that cannot run ends the rollout */
        }
        if (r->plan.iter_per_s > r->best_step_thr) r->best_step_thr = r->plan.iter_per_s;
    }
    r->feasible = r->plan.ntemplates > 0;
    r->ret = r->feasible ? r->plan.iter_per_s / r->st.thr_ref : -r->opts.penalty;
    return ARACHNE_OK;
}

int ar_flat_plan(arachne_plan **out, const ar_flat *f, const arachne_cost_model *cm, int samples, uint64_t seed,
                 long *evals_out)
{
    double t0 = ar_now();
    ar_flat_runner r;
    arachne_plan *best = NULL;
    ar_rng seeds;
    char why[256];
    int st, k, runs, have = 0;
    if (evals_out) *evals_out = 0;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat plan: out is NULL");
    *out = NULL;
    if (!f || !cm) return AR_NULL_ARG("flat plan", f, cm);
    if (samples < 0 || samples > 1000000)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat plan: samples %d outside 0..1000000", samples);
    runs = samples < 1 ? 1 : samples;
    st = ar_flat_runner_init(&r, f, cm, NULL);
    if (st) return st;
    best = ar_calloc(1, sizeof *best);
    if (!best) { st = ARACHNE_E_NO_MEMORY; goto done; }
    if ((st = ar_plan_init(best, cm))) goto done;
    why[0] = '\0';
    ar_rng_seed(&seeds, seed);
    for (k = 0; k < runs; k++) {
        st = ar_flat_rollout(&r, k == 0, ar_rng_next(&seeds), 0);
        if (st) goto done;
        if (!r.feasible) { snprintf(why, sizeof why, "%s", r.why); continue; }
        if (!have || ar_plan_rank(&r.plan) > ar_plan_rank(best)) {
            if ((st = ar_plan_copy(best, &r.plan))) goto done;
            have = 1;
        }
    }
    if (!have) {
        st = ar_error(ARACHNE_E_INFEASIBLE, "flat plan: none of %d rollouts priced a plan (last: %s)", runs, why);
        goto done;
    }
    snprintf(best->method, sizeof best->method, "%s", runs == 1 ? "flat-greedy" : "flat-best-of-k");
    best->samples = runs;
    best->evaluations = r.evaluations;
    best->planning_s = ar_now() - t0;
    if ((st = ar_plan_finish(best))) goto done;
    *out = best;
    best = NULL;
done:
    if (evals_out) *evals_out = r.evaluations;
    if (best) arachne_plan_destroy(best);
    ar_flat_runner_free(&r);
    return st;
}

int ar_flat_mean_return(const ar_flat *f, const arachne_cost_model *cm, int rollouts, uint64_t seed, double *mean,
                        long *evals)
{
    ar_flat_runner r;
    ar_rng seeds;
    double sum = 0.0;
    int st, k;
    if (!mean || rollouts < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat mean return: bad arguments");
    st = ar_flat_runner_init(&r, f, cm, NULL);
    if (st) return st;
    ar_rng_seed(&seeds, seed);
    for (k = 0; k < rollouts; k++) {
        st = ar_flat_rollout(&r, 0, ar_rng_next(&seeds), 0);
        if (st) break;
        sum += r.ret;
    }
    if (!st) {
        *mean = sum / rollouts;
        if (evals) *evals = r.evaluations;
    }
    ar_flat_runner_free(&r);
    return st;
}

/* ---------------------------------------------------------------------- */
/* training                                                                */

void ar_flat_train_opts_default(ar_flat_train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->evaluations = 20000;
    o->group = 16;
    o->epochs = 2;
    o->clip = 0.2;
    o->entropy = 0.01;
    o->lr = 1e-3;
    o->seed = 1;
    ar_flat_opts_default(&o->flat);
}

/* Decisions of one update, copied out of the runners. */
typedef struct batch {
    ar_flat_rec *recs;
    int *roll;          /* rollout of each record */
    double *ent_w;      /* entropy weight: 1 / decisions of its template step */
    int n, cap;
    double *pool;
    size_t plen, pcap;
    unsigned char *masks;
    size_t mlen, mcap;
    double *adv;        /* per rollout */
    int *comp;          /* composition of each rollout */
    int nroll, rcap;
} batch;

static void batch_free(batch *b)
{
    free(b->recs); free(b->roll); free(b->ent_w); free(b->pool); free(b->masks); free(b->adv); free(b->comp);
    memset(b, 0, sizeof *b);
}

static int batch_add(batch *b, const ar_flat_runner *r, int comp, double ret)
{
    int i;
    if (b->nroll == b->rcap) {
        int cap = b->rcap ? 2 * b->rcap : 64;
        double *a = ar_realloc(b->adv, (size_t)cap * sizeof *a);
        int *c;
        if (!a) return ARACHNE_E_NO_MEMORY;
        b->adv = a;
        c = ar_realloc(b->comp, (size_t)cap * sizeof *c);
        if (!c) return ARACHNE_E_NO_MEMORY;
        b->comp = c;
        b->rcap = cap;
    }
    if (b->n + r->nrecs > b->cap) {
        int cap = b->cap ? b->cap : 256;
        ar_flat_rec *nr;
        int *ro;
        double *ew;
        while (cap < b->n + r->nrecs) cap *= 2;
        nr = ar_realloc(b->recs, (size_t)cap * sizeof *nr);
        if (!nr) return ARACHNE_E_NO_MEMORY;
        b->recs = nr;
        ro = ar_realloc(b->roll, (size_t)cap * sizeof *ro);
        if (!ro) return ARACHNE_E_NO_MEMORY;
        b->roll = ro;
        ew = ar_realloc(b->ent_w, (size_t)cap * sizeof *ew);
        if (!ew) return ARACHNE_E_NO_MEMORY;
        b->ent_w = ew;
        b->cap = cap;
    }
    if (b->plen + r->pool_len > b->pcap) {
        size_t cap = b->pcap ? b->pcap : 65536;
        double *p;
        while (cap < b->plen + r->pool_len) cap *= 2;
        p = ar_realloc(b->pool, cap * sizeof *p);
        if (!p) return ARACHNE_E_NO_MEMORY;
        b->pool = p;
        b->pcap = cap;
    }
    if (b->mlen + r->masks_len > b->mcap) {
        size_t cap = b->mcap ? b->mcap : 16384;
        unsigned char *m;
        while (cap < b->mlen + r->masks_len) cap *= 2;
        m = ar_realloc(b->masks, cap);
        if (!m) return ARACHNE_E_NO_MEMORY;
        b->masks = m;
        b->mcap = cap;
    }
    for (i = 0; i < r->nrecs; i++) {
        ar_flat_rec R = r->recs[i];
        int nd = R.step >= 0 && R.step < AR_MAX_TEMPLATES ? r->step_dec[R.step] : 1;
        R.x_off += b->plen;
        if (R.cand_off != (size_t)-1) R.cand_off += b->plen;
        R.mask_off += b->mlen;
        b->recs[b->n] = R;
        b->roll[b->n] = b->nroll;
        b->ent_w[b->n] = 1.0 / (nd > 0 ? nd : 1);
        b->n++;
    }
    if (r->pool_len) memcpy(b->pool + b->plen, r->pool, r->pool_len * sizeof(double));
    b->plen += r->pool_len;
    if (r->masks_len) memcpy(b->masks + b->mlen, r->masks, r->masks_len);
    b->mlen += r->masks_len;
    b->adv[b->nroll] = ret; /* the return; turned into an advantage per group */
    b->comp[b->nroll] = comp;
    b->nroll++;
    return ARACHNE_OK;
}

/* One PPO epoch over the batch: accumulates the gradient of the clipped
 * objective plus the entropy bonus into each network's gradient array. */
static int ppo_epoch(ar_flat *f, ar_nn_ws *ws[2], const batch *b, ar_flat_runner *runners,
                     const ar_flat_train_opts *o)
{
    double logp[AR_MAX_DEPTH + 1], dlog[AR_MAX_DEPTH + 1];
    double norm = 1.0 / (b->nroll > 0 ? b->nroll : 1);
    int i, st;
    for (i = 0; i < b->n; i++) {
        const ar_flat_rec *R = &b->recs[i];
        const unsigned char *mask = b->masks + R->mask_off;
        double A = b->adv[b->roll[i]], ratio, coef = 0.0;
        int rec;
        ar_nn_ws_reset(ws[R->net]);
        rec = ar_nn_forward(f->net[R->net], ws[R->net], (ar_head)R->head, b->pool + R->x_off,
                            runners[b->comp[b->roll[i]]].st.comp,
                            R->cand_off == (size_t)-1 ? NULL : b->pool + R->cand_off, R->K, mask, logp);
        if (rec < 0) return rec;
        ratio = exp(logp[R->choice] - R->logp);
        if ((A >= 0 && ratio <= 1.0 + o->clip) || (A < 0 && ratio >= 1.0 - o->clip)) coef = -A * ratio * norm;
        st = ar_cat_grad(logp, mask, R->K, R->choice, coef, -o->entropy * b->ent_w[i] * norm, dlog);
        if (st) return st;
        st = ar_nn_backward_into(f->net[R->net], ws[R->net], rec, dlog, ar_nn_grads(f->net[R->net]));
        if (st) return st;
    }
    ar_nn_ws_reset(ws[0]);
    ar_nn_ws_reset(ws[1]);
    return ARACHNE_OK;
}

int ar_flat_train(ar_flat *f, const arachne_cost_model *const *cms, int n, const ar_flat_train_opts *o,
                  ar_flat_train_stats *stats)
{
    ar_flat_runner *runners = NULL;
    ar_nn_ws *ws[2] = { NULL, NULL };
    ar_adam_config adam;
    batch b;
    ar_rng seeds;
    double *best = NULL;
    long evals = 0, rollouts = 0, feasible = 0;
    int st = ARACHNE_OK, i, k, g, e, updates = 0;
    ar_flat_train_stats S;

    memset(&b, 0, sizeof b);
    memset(&S, 0, sizeof S);
    if (stats) memset(stats, 0, sizeof *stats);
    if (!f || !cms || n < 1 || !o) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "flat train: NULL argument or no composition");
    if (o->group < 2 || o->epochs < 1 || o->evaluations < 1 || !(o->lr > 0) || !(o->clip > 0) || !(o->entropy >= 0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "flat train: group %d (>= 2), epochs %d (>= 1), evaluations %ld (>= 1), lr %g, clip %g, "
                        "entropy %g out of range", o->group, o->epochs, o->evaluations, o->lr, o->clip, o->entropy);
    runners = ar_calloc((size_t)n, sizeof *runners);
    best = ar_calloc((size_t)n, sizeof *best);
    if (!runners || !best) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (k = 0; k < n; k++) {
        st = ar_flat_runner_init(&runners[k], f, cms[k], &o->flat);
        if (st) goto done;
    }
    if ((st = ar_nn_ws_create(&ws[0], f->net[0])) || (st = ar_nn_ws_create(&ws[1], f->net[1]))) goto done;
    ar_adam_config_default(&adam);
    adam.lr = o->lr;
    ar_rng_seed(&seeds, o->seed);

    while (evals < o->evaluations) {
        double sum_ret = 0.0;
        int nr0;
        b.n = 0; b.plen = 0; b.mlen = 0; b.nroll = 0;
        for (k = 0; k < n && evals < o->evaluations; k++) {
            ar_flat_runner *r = &runners[k];
            double mean = 0.0, var = 0.0, sd;
            long before = r->evaluations;
            nr0 = b.nroll;
            for (g = 0; g < o->group; g++) {
                st = ar_flat_rollout(r, 0, ar_rng_next(&seeds), 1);
                if (st) goto done;
                if (r->best_step_thr > best[k]) best[k] = r->best_step_thr;
                if ((st = batch_add(&b, r, k, r->ret))) goto done;
                rollouts++;
                feasible += r->feasible;
            }
            evals += r->evaluations - before;
            for (g = nr0; g < b.nroll; g++) mean += b.adv[g];
            mean /= o->group;
            sum_ret += mean * o->group;
            for (g = nr0; g < b.nroll; g++) var += (b.adv[g] - mean) * (b.adv[g] - mean);
            sd = sqrt(var / o->group);
            for (g = nr0; g < b.nroll; g++) b.adv[g] = sd > 1e-9 ? (b.adv[g] - mean) / sd : 0.0;
            if (o->progress && o->progress(o->user, evals, k, best[k], mean)) {
                st = ar_error(ARACHNE_E_CANCELLED, "flat train: stopped by the progress callback");
                goto done;
            }
        }
        if (b.nroll == 0) break;
        if (updates == 0) S.first_mean_return = sum_ret / b.nroll;
        S.last_mean_return = sum_ret / b.nroll;
        for (e = 0; e < o->epochs; e++) {
            ar_nn_zero_grad(f->net[0]);
            ar_nn_zero_grad(f->net[1]);
            if ((st = ppo_epoch(f, ws, &b, runners, o))) goto done;
            for (i = 0; i < 2; i++) {
                st = ar_nn_adam_step(f->net[i], &adam, NULL);
                if (st) goto done;
            }
        }
        updates++;
    }
    S.evaluations = evals;
    S.rollouts = rollouts;
    S.updates = updates;
    S.feasible_frac = rollouts > 0 ? (double)feasible / rollouts : 0.0;
    if (stats) *stats = S;
    st = ARACHNE_OK;
done:
    if (runners)
        for (k = 0; k < n; k++) ar_flat_runner_free(&runners[k]);
    free(runners);
    free(best);
    ar_nn_ws_destroy(ws[0]);
    ar_nn_ws_destroy(ws[1]);
    batch_free(&b);
    return st;
}
