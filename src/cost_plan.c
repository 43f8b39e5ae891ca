/* cost_plan.c -- prices a whole plan: stage times, min-max division of the
 * global batch across templates, gradient synchronisation across every
 * replica of every template, optimizer step, memory check, throughputs.
 * Formulas: docs/cost-model.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cost.h"

/* ---- placement from ranks ------------------------------------------------- */

/* Fewest data-parallel peers on one node among the nodes holding a
 * stage's w GPUs nd[0..w) (TP groups of tp GPUs never cross a node):
 * min over those nodes of (GPUs of the stage there) / tp, at least 1.
 * count[] (indexed by node, zero on entry) is left zeroed. */
int ar_stage_dp_local(const int *nd, int w, int tp, int *count, int *most)
{
    int k, least = -1, top = 1;
    for (k = 0; k < w; k++) count[nd[k]]++;
    for (k = 0; k < w; k++)
        if (count[nd[k]] > 0) {
            int c = count[nd[k]] / (tp > 0 ? tp : 1);
            if (least < 0 || c < least) least = c;
            if (c > top) top = c;
            count[nd[k]] = 0;
        }
    if (most) *most = top;
    return least > 1 ? least : 1;
}

int ar_fsdp_spans_nodes(const int *nd, int replicas, int stride, int width, int f)
{
    int q, k;
    for (q = 1; f > 1 && q < replicas; q++)
        for (k = 0; k < width; k++)
            if (nd[q * stride + k] != nd[(q - q % f) * stride + k]) return 1;
    return 0;
}

int ar_template_place(const arachne_plan *p, int tmpl, ar_stage_place *out)
{
    const ar_template *t;
    int off[AR_MAX_DEPTH + 1], *node_of, *count, i, s, q, maxnode = 0;
    long n;
    if (tmpl < 0 || tmpl >= p->ntemplates) return ar_error(ARACHNE_E_INVALID_PLAN, "template %d out of range", tmpl);
    t = &p->t[tmpl];
    if (t->depth < 1 || t->depth > AR_MAX_DEPTH || t->replicas < 1)
        return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: depth %d, %d replicas", tmpl, t->depth, t->replicas);
    off[0] = 0;
    for (s = 0; s < t->depth; s++) {
        if (t->stages[s].tp < 1 || t->stages[s].tp > AR_MAX_NODE_GPUS)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: tp %d out of range", tmpl, s, t->stages[s].tp);
        off[s + 1] = off[s] + t->replicas * ar_stage_gpus(t, s);
    }
    n = off[t->depth];
    for (i = 0; i < p->nranks; i++)
        if (p->ranks[i].node > maxnode) maxnode = p->ranks[i].node;
    node_of = ar_malloc((size_t)n * sizeof *node_of);
    count = ar_calloc((size_t)maxnode + 1, sizeof *count);
    if (!node_of || !count) {
        free(node_of);
        free(count);
        return ARACHNE_E_NO_MEMORY;
    }
    for (i = 0; i < n; i++) node_of[i] = -1;
    for (i = 0; i < p->nranks; i++) {
        const ar_rank *r = &p->ranks[i];
        int slot, cpr;
        if (r->tmpl != tmpl) continue;
        cpr = ar_tmpl_cp(t) > 1 ? r->cp_rank : 0; /* meaningful in CP templates only */
        if (r->stage < 0 || r->stage >= t->depth || r->replica < 0 || r->replica >= t->replicas ||
            r->tp_rank < 0 || r->tp_rank >= t->stages[r->stage].tp || cpr < 0 || cpr >= ar_tmpl_cp(t) ||
            r->node < 0) {
            free(node_of);
            free(count);
            return ar_error(ARACHNE_E_INVALID_PLAN, "rank %d: template %d replica %d stage %d tp rank %d node %d out of range",
                            r->rank, tmpl, r->replica, r->stage, r->tp_rank, r->node);
        }
        slot = off[r->stage] + r->replica * ar_stage_gpus(t, r->stage) + cpr * t->stages[r->stage].tp + r->tp_rank;
        if (node_of[slot] >= 0) {
            free(node_of);
            free(count);
            return ar_error(ARACHNE_E_INVALID_PLAN,
                            "rank %d: template %d replica %d stage %d tp rank %d cp rank %d has two GPUs",
                            r->rank, tmpl, r->replica, r->stage, r->tp_rank, cpr);
        }
        node_of[slot] = r->node;
    }
    for (s = 0; s < t->depth; s++) {
        int gw = ar_stage_gpus(t, s), tp = t->stages[s].tp, a;
        for (q = 0; q < t->replicas; q++)
            for (a = 0; a < gw; a++)
                if (node_of[off[s] + q * gw + a] < 0) {
                    free(node_of);
                    free(count);
                    return ar_error(ARACHNE_E_INVALID_PLAN,
                                    "template %d replica %d stage %d tp rank %d cp rank %d has no GPU",
                                    tmpl, q, s, a % tp, a / tp);
                }
    }
    for (s = 0; s < t->depth; s++) {
        const ar_stage *S = &t->stages[s];
        const int *nd = node_of + off[s];
        int gw = ar_stage_gpus(t, s), w = t->replicas * gw, k, grp;
        out[s].node = nd[0];
        for (k = 1; k < w; k++)
            if (nd[k] != nd[0]) { out[s].node = -1; break; }
        /* data-parallel peers per node: replicas x cp (weights are
         * replicated over the CP ranks too) */
        out[s].dp_local = ar_stage_dp_local(nd, w, S->tp, count, &out[s].dp_most);
        out[s].cp_inter = 0;
        for (q = 0; q < t->replicas && !out[s].cp_inter && gw > S->tp; q++)
            for (k = 1; k < gw; k++)
                if (nd[q * gw + k] != nd[q * gw]) { out[s].cp_inter = 1; break; }
        /* a CP ring (one TP rank's cp GPUs of a replica) with two ranks on one node */
        out[s].cp_hop = 0;
        for (k = 0; k < w && !out[s].cp_hop && gw > S->tp; k++) {
            int k2;
            for (k2 = k + S->tp; k2 < (k / gw + 1) * gw; k2 += S->tp)
                if (nd[k2] == nd[k]) { out[s].cp_hop = 1; break; }
        }
        out[s].fsdp_inter = ar_fsdp_spans_nodes(nd, t->replicas, gw, gw, t->fsdp);
        out[s].p2p_inter = 0;
        if (t->depth > 1) {   /* the last stage: the wrap to stage 0 (interleaved 1F1B) */
            const int *nn = node_of + off[(s + 1) % t->depth];
            int tn = ar_stage_gpus(t, (s + 1) % t->depth);
            for (q = 0; q < t->replicas && !out[s].p2p_inter; q++) {
                int home = nd[q * gw];
                for (k = 0; k < gw; k++) if (nd[q * gw + k] != home) out[s].p2p_inter = 1;
                for (k = 0; k < tn; k++) if (nn[q * tn + k] != home) out[s].p2p_inter = 1;
            }
        }
        /* Expert groups follow Megatron's order over the stage's GPUs
         * (replica-major, TP rank minor): ETP innermost, then EP, so an EP
         * group lies within one block of ep x etp consecutive GPUs. */
        out[s].ep_inter = 0;
        grp = S->ep * S->etp;
        if (S->ep > 1 && grp > 0) {
            if (w % grp) out[s].ep_inter = 1;
            else
                for (k = 0; k < w && !out[s].ep_inter; k++)
                    if (nd[k] != nd[k - k % grp]) out[s].ep_inter = 1;
        }
    }
    free(node_of);
    free(count);
    return ARACHNE_OK;
}

int ar_template_same_stages(const ar_template *a, const ar_template *b)
{
    int s;
    if (a->depth != b->depth || a->fsdp != b->fsdp || ar_tmpl_cp(a) != ar_tmpl_cp(b)) return 0;
    for (s = 0; s < a->depth; s++) {
        const ar_stage *x = &a->stages[s], *y = &b->stages[s];
        if (x->type != y->type || x->tp != y->tp || x->first != y->first || x->end != y->end || x->ep != y->ep ||
            x->etp != y->etp)
            return 0;
    }
    return 1;
}

int ar_plan_place(const arachne_plan *p, ar_stage_place (*place)[AR_MAX_DEPTH])
{
    int cls[AR_MAX_TEMPLATES], j, k, s, i, st, maxnode = 0, *nd = NULL, *count = NULL;
    for (j = 0; j < p->ntemplates; j++)
        if ((st = ar_template_place(p, j, place[j])) != ARACHNE_OK) return st;
    for (j = 0; j < p->ntemplates; j++) {
        cls[j] = j;
        for (k = 0; k < j; k++)
            if (cls[k] == k && ar_template_same_stages(&p->t[k], &p->t[j])) { cls[j] = k; break; }
    }
    for (j = 0; j < p->ntemplates; j++) {
        int twins = 0;
        for (k = j + 1; k < p->ntemplates; k++) twins += cls[k] == j;
        if (cls[j] != j || !twins) continue;
        if (!nd) {
            for (i = 0; i < p->nranks; i++)
                if (p->ranks[i].node > maxnode) maxnode = p->ranks[i].node;
            nd = ar_malloc((size_t)(p->nranks > 0 ? p->nranks : 1) * sizeof *nd);
            count = ar_calloc((size_t)maxnode + 1, sizeof *count);
            if (!nd || !count) {
                free(nd);
                free(count);
                return ARACHNE_E_NO_MEMORY;
            }
        }
        for (s = 0; s < p->t[j].depth; s++) {
            int w = 0, kl, most;
            for (i = 0; i < p->nranks; i++) {
                const ar_rank *r = &p->ranks[i];
                if (r->tmpl >= 0 && r->tmpl < p->ntemplates && cls[r->tmpl] == j && r->stage == s) nd[w++] = r->node;
            }
            kl = ar_stage_dp_local(nd, w, p->t[j].stages[s].tp, count, &most);
            for (k = j; k < p->ntemplates; k++)
                if (cls[k] == j) { place[k][s].dp_local = kl; place[k][s].dp_most = most; }
        }
    }
    free(nd);
    free(count);
    return ARACHNE_OK;
}

/* ---- whole-plan pricing ------------------------------------------------------- */

/* Per-block holder summary over every template (ar_holder, cost.h). */
typedef ar_holder holder;

#define AR_PRICE_STACK_BLOCKS 512
/* Per-stage results of up to this many stages (all templates together) live
 * on the stack; more (deep templates) on the heap.  Rows are addressed
 * out[j][s] through one pointer per template. */
#define AR_PRICE_STACK_STAGES 256

typedef struct stage_out {
    double compute_s, tp_comm_s, ep_comm_s, p2p_s, stage_s, fwd_s, bwd_s, sync_s, mem_bytes;
} stage_out;

static void holder_add(holder *h, int type, int node, int edp, int klocal, double hop)
{
    h->mask |= (uint32_t)1u << type;
    if (h->node == -2) h->node = node;
    else if (h->node != node) h->node = -1;
    h->edp += edp;
    if (h->klocal == 0 || klocal < h->klocal) h->klocal = klocal;
    if (hop < h->hop) h->hop = hop;
}

/* The intra-node hop a gradient ring over nodes passes in a stage of GPU
 * type g with at most `most` data-parallel peers on one node: none (HUGE_VAL)
 * with one, else the node's own ring rate -- on PCIe parts far below the
 * network's k channels. */
static double ring_hop(const ar_gpu_spec *g, int most)
{
    return most >= 2 ? g->intra_bw * ar_intra_link_eff(g) : HUGE_VAL;
}

/* Slowest link among the types in `mask` when a ring crosses nodes. */
static void ring_link(const arachne_cluster *c, uint32_t mask, double *bw, double *lat)
{
    int a, b;
    *bw = HUGE_VAL;
    *lat = 0.0;
    for (a = 0; a < c->ntypes; a++) {
        if (!(mask >> a & 1u)) continue;
        if (c->types[a].inter_lat > *lat) *lat = c->types[a].inter_lat;
        for (b = a; b < c->ntypes; b++) {
            if (!(mask >> b & 1u)) continue;
            {
                double x = ar_cluster_link_bw(c, a, b);
                if (x < *bw) *bw = x;
            }
        }
    }
}

/* FSDP (ZeRO-3) with a sharding group of f data-parallel ranks: every
 * micro-batch all-gathers the stage's parameters for the forward and again
 * for the backward and reduce-scatters its gradients over the group
 * (bandwidth bw_f, latency lat_f: the group's own ring), prefetched under
 * the stage's compute, so only what outlasts one micro-batch's stage time
 * is added to it (to the forward and backward in proportion).  *grad_s is
 * the all-reduce of the gradient shards over the R / f groups (hybrid
 * sharding, on the data-parallel ring bw, lat; 0 when one group holds every
 * replica). */
static void fsdp_stage(const ar_setup *su, int f, int R, double params, double bw_f, double lat_f, double bw,
                       double lat, stage_out *o, double *grad_s)
{
    double k = (double)f, ag = (k - 1.0) / k * params * su->weight_bytes / bw_f + (k - 1.0) * lat_f;
    double rs = (k - 1.0) / k * params * su->grad_bytes / bw_f + (k - 1.0) * lat_f;
    double comm = 2.0 * ag + rs, extra = comm - o->stage_s;
    if (extra > 0.0) {
        o->stage_s += extra;
        o->fwd_s += extra * ag / comm;
        o->bwd_s += extra * (ag + rs) / comm;
    }
    *grad_s = R / f > 1 ? ar_ring_allreduce_s(params / k * su->grad_bytes, R / f, bw, lat) : 0.0;
}

/* What of a stage's gradient reduction `grad` and parameter all-gather
 * `gather` is not hidden (step 3 of price_plan): upto is the stage time of
 * stages [0, s]. */
static double exposed_sync(const ar_setup *su, double grad, double gather, double upto)
{
    double exposed = su->overlap_grad_reduce ? AR_MAX(0.0, grad - AR_BWD_SHARE * upto) : grad;
    exposed += su->dist_optimizer && su->overlap_param_gather ? AR_MAX(0.0, gather - (1.0 - AR_BWD_SHARE) * upto)
                                                             : gather;
    return exposed;
}

/* 1 when the plan names a model other than the cost model's (case aside).
 * strcmp first: the fill prices the same trial plan many times a second. */
static int other_model(const arachne_cost_model *cm, const arachne_plan *plan)
{
    return plan->model[0] && strcmp(plan->model, cm->model->name) != 0 &&
           ar_strcasecmp(plan->model, cm->model->name) != 0;
}

/* Largest expert data-parallel group over the stage's MoE blocks (1 if none). */
static int expert_ranks(const ar_cost_cache *c, const holder *h, const ar_stage *S)
{
    int b, ke = 1;
    if (c->moe_before[S->end] == c->moe_before[S->first]) return 1;
    for (b = S->first; b < S->end; b++)
        if (c->moe_before[b + 1] > c->moe_before[b] && h[b].edp > ke) ke = h[b].edp;
    return ke;
}

/* The bandwidths and latency of stage S's gradient rings, from what its
 * blocks' holders say: the GPU types holding them (mask), whether a ring
 * crosses nodes, the fewest data-parallel peers a node holds (kl) and the
 * slowest intra-node hop on the way (hop).  A ring that crosses nodes runs
 * one channel per peer on a node, each on its own network port, so its
 * bandwidth is k x the per-GPU link (at most the intra-node link); it also
 * runs through the peers inside each node, so it is no faster than their
 * own ring (PCIe parts: intra x 0.30 or 0.35; NVLink parts intra x 0.8, the
 * bound before).  The expert ring's peers are the node's ranks with the
 * same experts, kl x TP / (EP x ETP), at least 1. */
static void ring_bw(const arachne_cluster *cl, const ar_stage *S, uint32_t mask, int cross, int kl, double hop,
                    double *bw, double *bw_e, double *lat)
{
    const ar_gpu_spec *g = &cl->types[S->type];
    if (cross) {
        double link;
        int kle = AR_MAX(1, AR_MAX(kl, 1) * S->tp / (S->ep * S->etp));
        ring_link(cl, mask, &link, lat);
        *bw = AR_MIN(AR_MIN(link * AR_MAX(kl, 1), g->intra_bw) * ar_inter_link_eff(), hop);
        *bw_e = AR_MIN(AR_MIN(link * kle, g->intra_bw) * ar_inter_link_eff(), hop);
    } else {
        *bw = *bw_e = g->intra_bw * ar_intra_link_eff(g);
        *lat = g->intra_lat;
    }
}

/* Stage s's gradient reduction, parameter all-gather and optimizer step
 * (seconds) without FSDP: the dense part over the R data-parallel ranks of
 * the plan, the experts over the stage's ke expert data-parallel ranks;
 * the Adam step reads grad + master + 2 moments and writes master + 2
 * moments + the low-precision weight, at HBM bandwidth. */
static void sync_terms(const arachne_cost_model *cm, const ar_template *t, int s, int moe, int ke, int R, double bw,
                       double bw_e, double lat, double *grad, double *gather, double *upd)
{
    const ar_setup *su = &cm->setup;
    double dense, expert, g2, a2, u;
    ar_stage_params(cm, t, s, &dense, &expert);
    ar_sync_split(dense, R, su->grad_bytes, su->weight_bytes, su->dist_optimizer, bw, lat, grad, gather);
    if (moe > 0) {
        ar_sync_split(expert, ke, su->grad_bytes, su->weight_bytes, su->dist_optimizer, bw_e, lat, &g2, &a2);
        *grad += g2;
        *gather += a2;
    }
    u = su->dist_optimizer ? dense / R + expert / ke : dense + expert;
    *upd = u * (2.0 * su->optim_bytes + su->grad_bytes + su->weight_bytes) / cm->cluster->types[t->stages[s].type].hbm_bw;
}

/* A one-template plan's stage s memoised with its ring terms: the stage
 * alone holds its blocks (and the embedding or head at the ends), so its
 * holders are one GPU type, its placement's node (-1: several) and
 * data-parallel peers per node, and its own expert data-parallel group --
 * what price_plan's holders give it, without building them for every
 * block. */
static void stage_sync_alone(const arachne_cost_model *cm, const ar_template *t, int s, const ar_stage_place *pl,
                             int R, ar_stage_memo *sm)
{
    const ar_cost_cache *c = cm->cache;
    const ar_stage *S = &t->stages[s];
    int moe = c->moe_before[S->end] - c->moe_before[S->first];
    int node = pl ? pl->node : -1, kh = pl ? AR_MAX(1, pl->dp_local) : 1, cross = 0, kl = 0;
    uint32_t mask = 0, mine = (uint32_t)1u << S->type;
    double bw, bw_e, lat, hop = ring_hop(&cm->cluster->types[S->type], pl ? pl->dp_most : 2);
    /* price_plan's reading of the holders: its blocks, then the ends */
    if (S->end > S->first) { mask = mine; cross = node == -1; kl = kh; }
    if (s == 0) { mask |= mine; if (node == -1) cross = 1; kl = AR_MIN(kl, kh); }
    if (s == t->depth - 1) { mask |= mine; if (node == -1) cross = 1; kl = AR_MIN(kl, kh); }
    sm->ke = moe > 0 ? AR_MAX(1, S->edp) : 1;
    ring_bw(cm->cluster, S, mask, cross, kl, hop, &bw, &bw_e, &lat);
    sync_terms(cm, t, s, moe, sm->ke, R, bw, bw_e, lat, &sm->grad, &sm->gather, &sm->upd);
    sm->have |= AR_MEMO_SYNC;
}

/* Checks templates [from, ntemplates) (the first `from` were checked when
 * a price prefix kept them; the last template's stages not again when
 * last_memo is given). */
static int check_cover(const arachne_cost_model *cm, const arachne_plan *plan, int from,
                       ar_stage_memo *const *last_memo)
{
    int j, s;
    if (plan->ntemplates < 1 || plan->ntemplates > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_PLAN, "plan has %d templates (1..%d)", plan->ntemplates, AR_MAX_TEMPLATES);
    for (j = from; j < plan->ntemplates; j++) {
        const ar_template *t = &plan->t[j];
        if (t->depth < 1 || t->depth > AR_MAX_DEPTH)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: depth %d (1..%d)", j, t->depth, AR_MAX_DEPTH);
        if (t->replicas < 1) return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: %d replicas", j, t->replicas);
        if (t->micro_batch < 1) return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: micro-batch %d", j, t->micro_batch);
        for (s = 0; s < t->depth; s++) {
            int want = s == 0 ? 0 : t->stages[s - 1].end;
            /* a memo's stage was checked by its owner (ar_stage_memo) */
            int rc = last_memo && j == plan->ntemplates - 1 ? ARACHNE_OK : ar_stage_check(cm, t, s);
            if (rc != ARACHNE_OK) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", arachne_last_error());
                return ar_error(rc, "template %d %s", j, msg);
            }
            if (t->stages[s].first != want)
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d starts at block %d, expected %d",
                                j, s, t->stages[s].first, want);
        }
        if (t->stages[t->depth - 1].end != cm->model->blocks)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d ends at block %d, the model has %d",
                            j, t->stages[t->depth - 1].end, cm->model->blocks);
    }
    return ARACHNE_OK;
}

int ar_price_prefix_init(ar_price_prefix *pp, const arachne_cost_model *cm)
{
    memset(pp, 0, sizeof *pp);
    pp->n = -1;
    pp->blocks = cm->model->blocks;
    pp->h = ar_malloc((size_t)(pp->blocks > 0 ? pp->blocks : 1) * sizeof *pp->h);
    pp->times = ar_malloc(AR_MAX_TEMPLATES * sizeof *pp->times);
    if (!pp->h || !pp->times || ar_pipe_memo_init(&pp->memo) != ARACHNE_OK) {
        ar_price_prefix_free(pp);
        return ARACHNE_E_NO_MEMORY;
    }
    return ARACHNE_OK;
}

void ar_price_prefix_free(ar_price_prefix *pp)
{
    if (!pp) return;
    free(pp->h);
    free(pp->times);
    ar_pipe_memo_free(&pp->memo);
    memset(pp, 0, sizeof *pp);
    pp->n = -1;
}

void ar_price_prefix_reset(ar_price_prefix *pp) { pp->n = -1; }

/* Interleaved template: the closed-form estimate the batch division uses,
 * from per-stage times with v sends per micro-batch: a stage's time t_s,
 * and a pipeline fill of (sum - max) / v (the bubble shrinks v-fold). */
static void vp_bound(const ar_template *t, const stage_out *o, double *tmax, double *tsum)
{
    int s, v = t->vp;
    double mx = 0.0, sum = 0.0;
    for (s = 0; s < t->depth; s++) {
        double x = o[s].stage_s + (v - 1) * o[s].p2p_s;
        sum += x;
        if (x > mx) mx = x;
    }
    *tmax = mx;
    *tsum = mx + (sum - mx) / v;
}

/* Exact interleaved time of M micro-batches: chunk c of stage s takes the
 * share (its layers / the stage's layers) of the stage's forward and
 * backward; every send over a link takes half the stage's p2p_s (the last
 * stage's p2p_s is its send back to stage 0). */
static int vp_time(const ar_template *t, const stage_out *o, int M, int bound_only, double *out)
{
    const int p = t->depth, v = t->vp;
    double f[AR_MAX_DEPTH * AR_MAX_VP], b[AR_MAX_DEPTH * AR_MAX_VP], c[AR_MAX_DEPTH], x;
    int s, ch;
    if (v > AR_MAX_VP)
        return ar_error(ARACHNE_E_INVALID_PLAN, "vp %d: at most %d chunks per pipeline stage", v, AR_MAX_VP);
    if (M <= 0) { *out = 0.0; return ARACHNE_OK; }
    if (bound_only) {
        double tmax, tsum;
        vp_bound(t, o, &tmax, &tsum);
        *out = (double)(M - 1) * tmax + tsum;
        return ARACHNE_OK;
    }
    for (s = 0; s < p; s++) {
        int n = t->stages[s].end - t->stages[s].first;
        c[s] = 0.5 * o[s].p2p_s;
        for (ch = 0; ch < v; ch++) {
            double share = n > 0 ? (double)(n / v + (ch < n % v ? 1 : 0)) / n : 1.0 / v;
            f[ch * p + s] = o[s].fwd_s * share;
            b[ch * p + s] = o[s].bwd_s * share;
        }
    }
    if (M % p != 0)
        return ar_error(ARACHNE_E_INVALID_PLAN, "interleaved schedule of %d stages x %d chunks over %d micro-batches: "
                        "the micro-batches must be a multiple of the depth", p, v, M);
    x = ar_pipeline_interleaved(M, p, v, f, b, c);
    if (x < 0.0) return ar_error(ARACHNE_E_NO_MEMORY, "interleaved schedule: no memory for %d x %d x %d arrival times",
                                 p, v, M);
    *out = x;
    return ARACHNE_OK;
}

/* Prices the plan; pp (may be NULL) keeps the first ntemplates - 1
 * templates between calls (ar_price_prefix). */
static int price_plan(const arachne_cost_model *cm, arachne_plan *plan,
                      const ar_stage_place (*place)[AR_MAX_DEPTH], ar_price_prefix *pp)
{
    const arachne_cluster *cl = cm->cluster;
    const ar_setup *su = &cm->setup;
    const int nb = cm->model->blocks;
    holder stack_h[AR_PRICE_STACK_BLOCKS], *h = stack_h, embed_h, head_h;
    stage_out stack_out[AR_PRICE_STACK_STAGES], *rows = stack_out, *out[AR_MAX_TEMPLATES];
    int stack_ranks[AR_PRICE_STACK_STAGES], *ranks_rows = stack_ranks;
    int *ranks_e[AR_MAX_TEMPLATES]; /* expert data-parallel group per stage (step 3, reused in 5) */
    int nstages = 0;
    int rep[AR_MAX_TEMPLATES], mbs[AR_MAX_TEMPLATES], m[AR_MAX_TEMPLATES];
    double tmax[AR_MAX_TEMPLATES], tsum[AR_MAX_TEMPLATES], gmax[AR_MAX_TEMPLATES], pipe[AR_MAX_TEMPLATES];
    double finish = 0.0, sync_max = 0.0, opt_max = 0.0, peak = 0.0, busy = 0.0, iter;
    int j, s, b, rc, R = 0, n, gpus = 0, kept = 0, keep = 0;

    if (pp && pp->blocks == nb && plan->ntemplates >= 1 && pp->n == plan->ntemplates - 1) kept = pp->n;
    else if (pp) { pp->n = -1; keep = plan->ntemplates - 1; }
    ar_stage_memo *const *memo = pp ? pp->last_memo : NULL;
    if ((rc = check_cover(cm, plan, kept, memo)) != ARACHNE_OK) return rc;
    if (other_model(cm, plan))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan is for model '%s', the cost model for '%s'",
                        plan->model, cm->model->name);
    n = plan->ntemplates;
    for (j = 0; j < n; j++) nstages += plan->t[j].depth;
    if (nstages > AR_PRICE_STACK_STAGES) {
        rows = ar_malloc((size_t)nstages * sizeof *rows);
        ranks_rows = ar_malloc((size_t)nstages * sizeof *ranks_rows);
        if (!rows || !ranks_rows) { rc = ARACHNE_E_NO_MEMORY; goto done; }
    }
    for (j = 0, s = 0; j < n; s += plan->t[j].depth, j++) {
        out[j] = rows + s;
        ranks_e[j] = ranks_rows + s;
    }
    if (nb > AR_PRICE_STACK_BLOCKS) {
        h = ar_malloc((size_t)nb * sizeof *h);
        if (!h) { rc = ARACHNE_E_NO_MEMORY; goto done; }
    }

    /* 1. stage times per micro-batch */
    if (kept) {
        gpus = pp->gpus;
        peak = pp->peak;
        for (j = 0; j < kept; j++) {
            const ar_template *t = &plan->t[j];
            tmax[j] = pp->tmax[j];
            tsum[j] = pp->tsum[j];
            for (s = 0; s < t->depth; s++) {
                const ar_stage *st = &pp->times[j][s];
                out[j][s].compute_s = st->compute_s;
                out[j][s].tp_comm_s = st->tp_comm_s;
                out[j][s].ep_comm_s = st->ep_comm_s;
                out[j][s].p2p_s = st->p2p_s;
                out[j][s].stage_s = st->stage_s;
                out[j][s].fwd_s = st->fwd_s;
                out[j][s].bwd_s = st->bwd_s;
            }
            rep[j] = t->replicas;
            mbs[j] = t->micro_batch;
            R += t->replicas * ar_tmpl_cp(t);
        }
    }
    for (j = kept; j < n; j++) {
        const ar_template *t = &plan->t[j];
        if (keep > 0 && j == keep) { pp->gpus = gpus; pp->peak = peak; }
        tmax[j] = tsum[j] = 0.0;
        for (s = 0; s < t->depth; s++) {
            ar_stage st;
            if (memo && j == n - 1) st = memo[s]->times;
            else if ((rc = ar_stage_price_checked(cm, t, s, place ? &place[j][s] : NULL, &st)) != ARACHNE_OK) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", arachne_last_error());
                rc = ar_error(rc, "template %d stage %d: %s", j, s, msg);
                goto done;
            }
            if (j < keep) pp->times[j][s] = st;
            out[j][s].compute_s = st.compute_s;
            out[j][s].tp_comm_s = st.tp_comm_s;
            out[j][s].ep_comm_s = st.ep_comm_s;
            out[j][s].p2p_s = st.p2p_s;
            out[j][s].stage_s = st.stage_s;
            out[j][s].fwd_s = st.fwd_s;
            out[j][s].bwd_s = st.bwd_s;
            tsum[j] += st.stage_s;
            if (st.stage_s > tmax[j]) tmax[j] = st.stage_s;
            gpus += t->replicas * ar_stage_gpus(t, s);
            peak += (double)t->replicas * ar_stage_gpus(t, s) * cl->types[t->stages[s].type].flops;
        }
        if (j < keep) { pp->tmax[j] = tmax[j]; pp->tsum[j] = tsum[j]; }
        rep[j] = t->replicas;
        mbs[j] = t->micro_batch;
        /* data-parallel ranks of the gradient rings: the weights are
         * replicated over the CP ranks of every replica */
        R += t->replicas * ar_tmpl_cp(t);
    }

    /* 2. who holds each block (for the gradient rings).  Only the rings of
     * step 3 read the holders: a memoised one-template plan needs none, as
     * each stage alone holds its blocks (stage_sync_alone fills the ring
     * terms a memo lacks). */
    if (n == 1 && memo && plan->t[0].fsdp <= 1) {
        for (s = 0; s < plan->t[0].depth; s++)
            if (!(memo[s]->have & AR_MEMO_SYNC))
                stage_sync_alone(cm, &plan->t[0], s, place ? &place[0][s] : NULL, R, memo[s]);
        goto holders_done;
    }
    if (kept) {
        memcpy(h, pp->h, (size_t)nb * sizeof *h);
        embed_h = pp->embed_h;
        head_h = pp->head_h;
    } else {
        for (b = 0; b < nb; b++) { h[b].mask = 0; h[b].node = -2; h[b].edp = 0; h[b].klocal = 0; h[b].hop = HUGE_VAL; }
        embed_h = head_h = h[0];
        embed_h.mask = head_h.mask = 0; embed_h.node = head_h.node = -2; embed_h.edp = head_h.edp = 0;
        embed_h.klocal = head_h.klocal = 0;
        embed_h.hop = head_h.hop = HUGE_VAL;
    }
    for (j = kept; j < n; j++) {
        const ar_template *t = &plan->t[j];
        if (keep > 0 && j == keep) {
            memcpy(pp->h, h, (size_t)nb * sizeof *h);
            pp->embed_h = embed_h;
            pp->head_h = head_h;
            pp->n = keep; /* stage times, sums and holders of [0, keep) are in */
        }
        for (s = 0; s < t->depth; s++) {
            const ar_stage *S = &t->stages[s];
            int node = place ? place[j][s].node : -1, kl = place ? AR_MAX(1, place[j][s].dp_local) : 1;
            double hop = ring_hop(&cl->types[S->type], place ? place[j][s].dp_most : 2);
            for (b = S->first; b < S->end; b++) holder_add(&h[b], S->type, node, S->edp, kl, hop);
            if (s == 0) holder_add(&embed_h, S->type, node, 0, kl, hop);
            if (s == t->depth - 1) holder_add(&head_h, S->type, node, 0, kl, hop);
        }
    }

holders_done:

    /* 3. gradient sync and optimizer step per stage.  A ring that crosses
     * nodes runs one channel per data-parallel peer on a node, each on its
     * own network port, so its bandwidth is k x the per-GPU link (at most
     * the intra-node link).  With overlap only the part of the gradient
     * reduction longer than the backward work still to come after this
     * stage's last backward (its own and that of the stages before it) is
     * exposed; likewise the parameter all-gather against the first
     * forward. */
    for (j = 0; j < n; j++) {
        const ar_template *t = &plan->t[j];
        double upto = 0.0; /* stage times of stages [0, s] */
        gmax[j] = 0.0;
        for (s = 0; s < t->depth; s++) {
            const ar_stage *S = &t->stages[s];
            const ar_gpu_spec *g = &cl->types[S->type];
            const ar_cost_cache *c = cm->cache;
            ar_stage_memo *sm = memo && j == n - 1 && t->fsdp <= 1 ? memo[s] : NULL;
            uint32_t mask = 0;
            int cross = 0, ke = 1, moe = c->moe_before[S->end] - c->moe_before[S->first], kl = 0;
            double dense, expert, bw, bw_e, lat, grad, gather, exposed, upd, hop = HUGE_VAL;
            if (sm && (sm->have & AR_MEMO_SYNC)) {
                ranks_e[j][s] = sm->ke;
                grad = sm->grad;
                gather = sm->gather;
                upd = sm->upd;
                goto exposed;
            }
            for (b = S->first; b < S->end; b++) {
                mask |= h[b].mask;
                if (h[b].node == -1) cross = 1;
                if (kl == 0 || h[b].klocal < kl) kl = h[b].klocal;
                if (h[b].hop < hop) hop = h[b].hop;
            }
            if (moe > 0) ke = expert_ranks(c, h, S);
            ranks_e[j][s] = ke;
            if (s == 0) {
                mask |= embed_h.mask;
                if (embed_h.node == -1) cross = 1;
                kl = AR_MIN(kl, embed_h.klocal);
                hop = AR_MIN(hop, embed_h.hop);
            }
            if (s == t->depth - 1) {
                mask |= head_h.mask;
                if (head_h.node == -1) cross = 1;
                kl = AR_MIN(kl, head_h.klocal);
                hop = AR_MIN(hop, head_h.hop);
            }
            ring_bw(cl, S, mask, cross, kl, hop, &bw, &bw_e, &lat);
            if (t->fsdp > 1) {
                ar_stage_params(cm, t, s, &dense, &expert);
                {
                    /* a sharding group inside one node gathers over the node's
                     * links, whatever the whole data-parallel ring crosses */
                    int in_node = place && !place[j][s].fsdp_inter;
                    fsdp_stage(su, t->fsdp, R, dense + expert, in_node ? g->intra_bw * ar_intra_link_eff(g) : bw,
                               in_node ? g->intra_lat : lat, bw, lat, &out[j][s], &grad);
                }
                upto += out[j][s].stage_s;
                out[j][s].sync_s = grad;
                exposed = su->overlap_grad_reduce ? AR_MAX(0.0, grad - AR_BWD_SHARE * upto) : grad;
                if (exposed > gmax[j]) gmax[j] = exposed;
                if (exposed > sync_max) sync_max = exposed;
                upd = (dense + expert) / t->fsdp * (2.0 * su->optim_bytes + su->grad_bytes + su->weight_bytes) / g->hbm_bw;
                if (upd > opt_max) opt_max = upd;
                continue;
            }
            sync_terms(cm, t, s, moe, ke, R, bw, bw_e, lat, &grad, &gather, &upd);
            if (sm) {
                sm->ke = ke;
                sm->grad = grad;
                sm->gather = gather;
                sm->upd = upd;
                sm->have |= AR_MEMO_SYNC;
            }
        exposed:
            upto += out[j][s].stage_s;
            out[j][s].sync_s = grad + gather;
            exposed = exposed_sync(su, grad, gather, upto);
            if (exposed > gmax[j]) gmax[j] = exposed;
            if (exposed > sync_max) sync_max = exposed;
            if (upd > opt_max) opt_max = upd;
        }
    }

    /* FSDP templates' stage times now include their exposed gathers */
    for (j = 0; j < n; j++) {
        const ar_template *t = &plan->t[j];
        if (t->fsdp <= 1) continue;
        tmax[j] = tsum[j] = 0.0;
        for (s = 0; s < t->depth; s++) {
            tsum[j] += out[j][s].stage_s;
            if (out[j][s].stage_s > tmax[j]) tmax[j] = out[j][s].stage_s;
        }
    }

    /* 4. divide the global batch (by the closed form, an upper bound).  An
     * interleaved template takes micro-batches in groups of its depth p
     * (Megatron's rule): its unit is p micro-batches, T(m') = (p m' - 1)
     * tmax + tsum with the interleaved estimate of tmax, tsum (vp_bound) */
    for (j = 0; j < n; j++) {
        const ar_template *t = &plan->t[j];
        if (t->vp > 1 && t->depth > 1) {
            vp_bound(t, out[j], &tmax[j], &tsum[j]);
            tsum[j] += (t->depth - 1) * tmax[j];
            tmax[j] *= t->depth;
            mbs[j] = t->micro_batch * t->depth;
        }
    }
    if ((rc = ar_assign_microbatches(su->global_batch, n, rep, mbs, tmax, tsum, m, &finish)) != ARACHNE_OK) goto done;
    if (su->exact_batch || su->exact_division) {
        /* ARACHNE_OPT_EXACT_BATCH: when the fastest division runs S > B
         * samples, the fastest exact one replaces it unless it takes
         * longer than the surplus is worth (its finish x B > the fastest's
         * x S: the planners' rank, ar_plan_rank, charges the surplus the
         * same way); ARACHNE_OPT_EXACT_DIVISION: whatever it takes */
        int mx[AR_MAX_TEMPLATES];
        long run = 0;
        double fx = 0.0, cap;
        for (j = 0; j < n; j++) run += (long)rep[j] * mbs[j] * m[j];
        /* without EXACT_DIVISION only an exact division within the surplus's
         * worth can replace the fastest: the search skips the slower ones
         * (most of pricing's time on large clusters with many templates).
         * The cap sits a hair above that worth and the test below decides,
         * so it changes no choice (ar_assign_microbatches_exact) */
        cap = su->exact_division ? HUGE_VAL : finish * (double)run / (double)su->global_batch * (1.0 + 1e-9);
        if (run > su->global_batch &&
            ar_assign_microbatches_exact(su->global_batch, n, rep, mbs, tmax, tsum, cap, mx, &fx) &&
            (su->exact_division || fx * (double)su->global_batch <= finish * (double)run)) {
            memcpy(m, mx, (size_t)n * sizeof *m);
            finish = fx;
        }
    }
    for (j = 0; j < n; j++)
        if (plan->t[j].vp > 1 && plan->t[j].depth > 1) m[j] *= plan->t[j].depth;

    /* 5. memory at the assigned micro-batch counts */
    for (j = 0; j < n; j++) {
        const ar_template *t = &plan->t[j];
        for (s = 0; s < t->depth; s++) {
            ar_stage_mem mm;
            ar_stage_memo *sm = memo && j == n - 1 ? memo[s] : NULL;
            if (sm && (sm->have & AR_MEMO_MEM) && sm->mem_m == m[j]) mm = sm->mem;
            else if ((rc = ar_stage_memory_checked(cm, t, s, R, ranks_e[j][s], m[j], &mm)) != ARACHNE_OK) goto done;
            else if (sm) {
                sm->mem = mm;
                sm->mem_m = m[j];
                sm->have |= AR_MEMO_MEM;
            }
            if (mm.total > mm.capacity) {
                rc = pp && pp->quiet ? ARACHNE_E_OUT_OF_MEMORY_PLAN : ar_oom_error(cm, j, t, s, &mm);
                goto done;
            }
            out[j][s].mem_bytes = mm.total;
            /* a stage is busy for its forwards and backwards; its sends are
             * asynchronous (they occupy the link, not the stage: the
             * schedules of 5b), so p2p_s is not busy time */
            busy += (double)t->replicas * ar_stage_gpus(t, s) * m[j] * (out[j][s].fwd_s + out[j][s].bwd_s);
        }
    }

    /* 5b. time each template's pipeline exactly at its share (after the
     * memory check: a plan that does not fit needs no time) */
    finish = 0.0;
    for (j = 0; j < n; j++) {
        const ar_template *t = &plan->t[j];
        double f[AR_MAX_DEPTH], bw[AR_MAX_DEPTH], c[AR_MAX_DEPTH];
        for (s = 0; s < t->depth; s++) {
            f[s] = out[j][s].fwd_s;
            bw[s] = out[j][s].bwd_s;
            c[s] = 0.5 * out[j][s].p2p_s;
        }
        if (t->vp > 1 && t->depth > 1) {
            if ((rc = vp_time(t, out[j], m[j], pp && pp->bound_only, &pipe[j])) != ARACHNE_OK) goto done;
        } else if (pp && pp->bound_only) pipe[j] = m[j] > 0 ? (double)(m[j] - 1) * tmax[j] + tsum[j] : 0.0;
        else pipe[j] = ar_pipe_memo_time(pp ? &pp->memo : NULL, m[j], t->depth, f, bw, c);
        if (pipe[j] > finish) finish = pipe[j];
    }

    /* 6. commit */
    iter = finish + sync_max + opt_max;
    if (!isfinite(iter) || !isfinite(busy)) {  /* huge profile times by a batch of 10^9 */
        rc = ar_error(ARACHNE_E_INFEASIBLE, "the iteration's time overflows (%g s, %g GPU-seconds busy): the "
                      "profile or batch figures are beyond what can be priced", iter, busy);
        goto done;
    }
    for (j = 0; j < n; j++) {
        ar_template *t = &plan->t[j];
        for (s = 0; s < t->depth; s++) {
            ar_stage *S = &t->stages[s];
            S->compute_s = out[j][s].compute_s;
            S->tp_comm_s = out[j][s].tp_comm_s;
            S->ep_comm_s = out[j][s].ep_comm_s;
            S->p2p_s = out[j][s].p2p_s;
            S->stage_s = out[j][s].stage_s;
            S->fwd_s = out[j][s].fwd_s;
            S->bwd_s = out[j][s].bwd_s;
            S->sync_s = out[j][s].sync_s;
            S->mem_bytes = out[j][s].mem_bytes;
        }
        t->micro_batches = m[j];
        t->pipeline_s = m[j] > 0 ? pipe[j] + gmax[j] : 0.0;
    }
    plan->setup = *su;
    if (!plan->model[0]) snprintf(plan->model, sizeof plan->model, "%s", cm->model->name);
    plan->iteration_s = iter;
    plan->iter_per_s = iter > 0.0 ? 1.0 / iter : 0.0;
    plan->samples_per_s = su->global_batch * plan->iter_per_s;
    plan->tokens_per_s = plan->samples_per_s * su->seq_len;
    plan->mfu = iter > 0.0 && peak > 0.0 ? ar_cost_model_flops_per_sample(cm) * su->global_batch / (iter * peak) : 0.0;
    /* every stage runs its m forwards and backwards one after another
     * inside its template's pipeline time, so busy <= gpus x finish; a
     * pipeline without idle time rounds to a few ulps either side of 0 */
    plan->bubble = finish > 0.0 && gpus > 0 ? AR_MAX(0.0, 1.0 - busy / ((double)gpus * finish)) : 0.0;
    plan->gpus_used = gpus;
    plan->gpus_total = cl->total_gpus;
    rc = ARACHNE_OK;
done:
    if (h != stack_h) free(h);
    if (rows != stack_out) free(rows);
    if (ranks_rows != stack_ranks) free(ranks_rows);
    return rc;
}

int ar_plan_price_placed(const arachne_cost_model *cm, arachne_plan *plan,
                         const ar_stage_place (*place)[AR_MAX_DEPTH])
{
    return price_plan(cm, plan, place, NULL);
}

/* The closed-form iteration of a one-template plan whose stages the caller
 * memoised (ar_stage_memo: at least the times), as the fill's expert-tiling
 * search prices its candidates (pp->bound_only, pp->quiet): price_plan's
 * arithmetic on the same values in the same order, without what only the
 * plan's other figures need.  A stage's ring terms and its memory at this
 * batch division's count that the memo lacks are computed for that stage
 * alone (stage_sync_alone) and memoised; the memory stage by stage, as
 * price_plan checks it.  Returns 1 with *rc (OK: plan->iteration_s and
 * iter_per_s set, the plan's other figures left as they were; or the
 * status price_plan would return), 0 when the plan is not such a case
 * (price_plan prices it). */
static int price_memo_bound(const arachne_cost_model *cm, arachne_plan *plan,
                            const ar_stage_place (*place)[AR_MAX_DEPTH], ar_price_prefix *pp, int *rc)
{
    const ar_setup *su = &cm->setup;
    ar_stage_memo *const *memo = pp->last_memo;
    const ar_template *t = &plan->t[0];
    double tmax = 0.0, tsum = 0.0, upto = 0.0, sync_max = 0.0, opt_max = 0.0, pipe, finish, iter;
    int s, m, R;
    if (!memo || !pp->bound_only || !pp->quiet || plan->ntemplates != 1 || t->fsdp > 1 || t->vp > 1 ||
        t->depth < 1 || t->depth > AR_MAX_DEPTH)
        return 0;
    for (s = 0; s < t->depth; s++) {
        tsum += memo[s]->times.stage_s;
        if (memo[s]->times.stage_s > tmax) tmax = memo[s]->times.stage_s;
    }
    /* the division price_plan makes (one template runs the whole batch: its
     * exact division is this one or none); when it refuses, price_plan
     * says why */
    if (ar_assign_microbatches(su->global_batch, 1, &t->replicas, &t->micro_batch, &tmax, &tsum, &m, NULL) !=
        ARACHNE_OK)
        return 0;
    if (other_model(cm, plan)) return 0;
    /* from here on as price_plan: the prefix it would not keep is dropped
     * first, then the plan is checked */
    if (!(pp->blocks == cm->model->blocks && pp->n == 0)) pp->n = -1;
    if ((*rc = check_cover(cm, plan, 0, memo)) != ARACHNE_OK) return 1;
    pp->memo_bound_prices++;
    R = t->replicas * ar_tmpl_cp(t);
    for (s = 0; s < t->depth; s++) {
        ar_stage_memo *sm = memo[s];
        double exposed;
        if (!(sm->have & AR_MEMO_SYNC)) stage_sync_alone(cm, t, s, place ? &place[0][s] : NULL, R, sm);
        upto += sm->times.stage_s;
        exposed = exposed_sync(su, sm->grad, sm->gather, upto);
        if (exposed > sync_max) sync_max = exposed;
        if (sm->upd > opt_max) opt_max = sm->upd;
    }
    for (s = 0; s < t->depth; s++) {
        ar_stage_memo *sm = memo[s];
        if (!((sm->have & AR_MEMO_MEM) && sm->mem_m == m)) {
            if ((*rc = ar_stage_memory_checked(cm, t, s, R, sm->ke, m, &sm->mem)) != ARACHNE_OK) {
                sm->have &= ~AR_MEMO_MEM;
                return 1;
            }
            sm->mem_m = m;
            sm->have |= AR_MEMO_MEM;
        }
        if (sm->mem.total > sm->mem.capacity) {
            *rc = ARACHNE_E_OUT_OF_MEMORY_PLAN;
            return 1;
        }
    }
    pipe = m > 0 ? (double)(m - 1) * tmax + tsum : 0.0;
    finish = 0.0;
    if (pipe > finish) finish = pipe;
    iter = finish + sync_max + opt_max;
    if (!isfinite(iter)) return 0;  /* price_plan says why */
    plan->iteration_s = iter;
    plan->iter_per_s = iter > 0.0 ? 1.0 / iter : 0.0;
    *rc = ARACHNE_OK;
    return 1;
}

int ar_plan_price_prefix(const arachne_cost_model *cm, arachne_plan *plan,
                         const ar_stage_place (*place)[AR_MAX_DEPTH], ar_price_prefix *pp)
{
    int rc;
    if (pp && price_memo_bound(cm, plan, place, pp, &rc)) return rc;
    return price_plan(cm, plan, place, pp);
}

int ar_plan_price(const arachne_cost_model *cm, arachne_plan *plan)
{
    ar_stage_place (*place)[AR_MAX_DEPTH];
    int j, rc;
    if (!cm || !plan) return AR_NULL_ARG("price", cm, plan);
    if ((rc = check_cover(cm, plan, 0, NULL)) != ARACHNE_OK) return rc;
    if ((rc = ar_plan_check_type_names(cm, plan)) != ARACHNE_OK) return rc;
    if (plan->nranks < 1 || !plan->ranks)
        return ar_error(ARACHNE_E_INVALID_PLAN, "plan has no device assignment (ranks) to price");
    place = ar_malloc(sizeof(*place) * (size_t)plan->ntemplates);
    if (!place) return ARACHNE_E_NO_MEMORY;
    for (j = 0; j < plan->nranks; j++) {
        const ar_rank *r = &plan->ranks[j];
        const arachne_cluster *c = cm->cluster;
        if (r->tmpl < 0 || r->tmpl >= plan->ntemplates) {
            free(place);
            return ar_error(ARACHNE_E_INVALID_PLAN, "rank %d: template %d out of range", r->rank, r->tmpl);
        }
        if (r->node < 0 || r->node >= c->nnodes || r->gpu < 0 || r->gpu >= c->nodes[r->node].gpus) {
            free(place);
            return ar_error(ARACHNE_E_INVALID_PLAN, "rank %d: node %d GPU %d is not in the cluster", r->rank, r->node, r->gpu);
        }
        if (r->stage >= 0 && r->stage < plan->t[r->tmpl].depth &&
            c->nodes[r->node].type != plan->t[r->tmpl].stages[r->stage].type) {
            free(place);
            return ar_error(ARACHNE_E_INVALID_PLAN, "rank %d: node %d holds %s GPUs, template %d stage %d wants %s",
                            r->rank, r->node, c->types[c->nodes[r->node].type].name, r->tmpl, r->stage,
                            c->types[plan->t[r->tmpl].stages[r->stage].type].name);
        }
    }
    if ((rc = ar_plan_place(plan, place)) != ARACHNE_OK) { free(place); return rc; }
    rc = ar_plan_price_placed(cm, plan, (const ar_stage_place (*)[AR_MAX_DEPTH])place);
    free(place);
    return rc;
}

int arachne_cost_model_price(const arachne_cost_model *cm, arachne_plan *plan)
{
    int st;
    if (!cm || !plan) return AR_NULL_ARG("cost model price", cm, plan);
    st = ar_plan_price(cm, plan);
    /* The plan's JSON text must follow its new prices. */
    return st ? st : ar_plan_finish(plan);
}
