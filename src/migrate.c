/* migrate.c -- what a switch from one plan to another has to move.
 *
 * Every layer's parameters are seen as the interval [0, 1).  A rank holds a
 * part of each part of each layer it computes (an interleaved stage: the
 * layers of its chunks):
 *   dense weights   its TP shard [k/t, (k+1)/t) (embedding and head too);
 *   dense optimizer the same, or with the distributed optimizer its slice:
 *                   the layer is cut into T cells (T: the largest TP degree
 *                   among the layer's holders in the plan), each cell into
 *                   R slices, and the rank holds slice g of each cell of its
 *                   TP shard (g: the rank's replica x CP rank counted over
 *                   all templates, R: all replicas x CP).  The slices of all
 *                   holders tile the layer once, whatever their TP degrees;
 *                   with one TP degree t it is [k/t + g/(tR), k/t + (g+1)/(tR));
 *   expert weights  (MoE blocks) shard e = w mod (EP*ETP) of EP*ETP, where
 *                   w = replica * TP * CP + cp_rank * TP + tp_rank;
 *   expert optimizer the same, or slice w / (EP*ETP) of EDP of that shard.
 * A new rank must receive every piece of its intervals that the old rank on
 * the same GPU did not hold.  Each piece comes from an old rank that still
 * exists and holds it: one on the receiver's node first, then the fastest
 * link, then the lowest rank; from a checkpoint when none does.  Details
 * and formulas: docs/replan.md. */
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "cost.h"
#include "replan.h"

#define EPS 1e-12
enum { PART_DW = 0, PART_DO = 1, PART_EW = 2, PART_EO = 3, PARTS = 4 };

typedef struct rinfo {
    int tmpl, stage, replica, tp_rank, cp_rank, g; /* g: replica over all templates */
    int node, gpu;                        /* node in the new cluster (-1: gone) */
} rinfo;

typedef struct piece { int src, li; double bytes; } piece; /* src: old rank index, -1 checkpoint */

typedef struct pbuf { piece *p; int n, cap; } pbuf;

static int pbuf_add(pbuf *b, int src, int li, double bytes)
{
    if (b->n == b->cap) {
        int nc = b->cap ? 2 * b->cap : 64;
        piece *np = ar_realloc(b->p, (size_t)nc * sizeof *np);
        if (!np) return ARACHNE_E_NO_MEMORY;
        b->p = np;
        b->cap = nc;
    }
    b->p[b->n].src = src;
    b->p[b->n].li = li;
    b->p[b->n].bytes = bytes;
    b->n++;
    return ARACHNE_OK;
}

static int piece_cmp(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    if (x->src != y->src) return (x->src > y->src) - (x->src < y->src);
    return (x->li > y->li) - (x->li < y->li);
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Where a plan keeps each layer: per template, the stage that computes
 * each block (an interleaved template's stages compute their chunks,
 * ar_vp_chunk_range); per layer (index l + 1: -1 the embedding, blocks
 * the head), the largest TP degree among the stages that hold it. */
typedef struct lmap {
    int *stage_at[AR_MAX_TEMPLATES]; /* [blocks]: -1 where no stage holds the block */
    int *tmax;                       /* [blocks + 2] */
} lmap;

static void lmap_free(lmap *mp)
{
    int j;
    for (j = 0; j < AR_MAX_TEMPLATES; j++) free(mp->stage_at[j]);
    free(mp->tmax);
    memset(mp, 0, sizeof *mp);
}

/* The stage of template j that holds layer l (-1 embedding, blocks head);
 * -1 when none does. */
static int stage_of(const arachne_plan *p, const lmap *mp, int j, int l, int blocks)
{
    if (l < 0) return 0;
    if (l >= blocks) return p->t[j].depth - 1;
    return mp->stage_at[j][l];
}

static int lmap_build(const arachne_plan *p, int blocks, lmap *mp)
{
    int j, s, c, l;
    memset(mp, 0, sizeof *mp);
    if (p->ntemplates < 0 || p->ntemplates > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_PLAN, "migration: plan has %d templates", p->ntemplates);
    mp->tmax = ar_calloc((size_t)blocks + 2, sizeof *mp->tmax);
    if (!mp->tmax) return ARACHNE_E_NO_MEMORY;
    for (j = 0; j < p->ntemplates; j++) {
        const ar_template *t = &p->t[j];
        int v = t->vp > 1 ? t->vp : 1;
        if (!(mp->stage_at[j] = ar_malloc(((size_t)blocks + 1) * sizeof(int)))) {
            lmap_free(mp);
            return ARACHNE_E_NO_MEMORY;
        }
        for (l = 0; l < blocks; l++) mp->stage_at[j][l] = -1;
        for (s = 0; s < t->depth; s++)
            for (c = 0; c < v; c++) {
                int first, end;
                ar_vp_chunk_range(t, s, c, &first, &end);
                for (l = AR_MAX(first, 0); l < end && l < blocks; l++) mp->stage_at[j][l] = s;
            }
        for (l = -1; l <= blocks; l++) {
            s = stage_of(p, mp, j, l, blocks);
            if (s >= 0 && t->stages[s].tp > mp->tmax[l + 1]) mp->tmax[l + 1] = t->stages[s].tp;
        }
    }
    return ARACHNE_OK;
}

/* A list of disjoint intervals [a[i], b[i]) in increasing order. */
typedef struct ivl { double *a, *b; int n, cap; } ivl;

static int ivl_add(ivl *v, double a, double b)
{
    if (v->n == v->cap) {
        int nc = v->cap ? 2 * v->cap : 16;
        double *na = ar_realloc(v->a, (size_t)nc * sizeof *na), *nb;
        if (!na) return ARACHNE_E_NO_MEMORY;
        v->a = na;
        if (!(nb = ar_realloc(v->b, (size_t)nc * sizeof *nb))) return ARACHNE_E_NO_MEMORY;
        v->b = nb;
        v->cap = nc;
    }
    v->a[v->n] = a;
    v->b[v->n] = b;
    v->n++;
    return ARACHNE_OK;
}

static void ivl_free(ivl *v)
{
    free(v->a);
    free(v->b);
    memset(v, 0, sizeof *v);
}

/* The intervals of `part` of layer l that rank r of plan p holds (out is
 * emptied first); T: the layer's largest TP degree among its holders. */
static int intervals(const arachne_plan *p, int R, const rinfo *r, int part, int dist, int T, ivl *out)
{
    const ar_template *t = &p->t[r->tmpl];
    const ar_stage *S = &t->stages[r->stage];
    double lo, w;
    out->n = 0;
    if (part == PART_DW || part == PART_DO) {
        if (part == PART_DO && dist && R > 1) {
            /* slice g of each of the T / tp cells of the rank's TP shard */
            int per = T > S->tp ? T / S->tp : 1, c, st;
            for (c = r->tp_rank * per; c < (r->tp_rank + 1) * per; c++) {
                w = 1.0 / (S->tp * per);
                lo = c * w;
                w /= R;
                lo += r->g * w;
                if ((st = ivl_add(out, lo, lo + w))) return st;
            }
            return ARACHNE_OK;
        }
        w = 1.0 / S->tp;
        lo = r->tp_rank * w;
    } else {
        int E = S->ep * S->etp, flat = r->replica * ar_stage_gpus(t, r->stage) + r->cp_rank * S->tp + r->tp_rank;
        if (E < 1) E = 1;
        w = 1.0 / E;
        lo = (flat % E) * w;
        if (part == PART_EO && dist && S->edp > 1) {
            w /= S->edp;
            lo += ((flat / E) % S->edp) * w;
        }
    }
    return ivl_add(out, lo, lo + w);
}

/* out = want minus have (both sorted and disjoint); out is emptied first. */
static int ivl_minus(const ivl *want, const ivl *have, ivl *out)
{
    int i, k = 0, st;
    out->n = 0;
    for (i = 0; i < want->n; i++) {
        double a = want->a[i], b = want->b[i];
        while (k < have->n && have->b[k] <= a + EPS) k++;
        for (; k < have->n && have->a[k] < b - EPS; k++) {
            if (have->a[k] > a + EPS && (st = ivl_add(out, a, have->a[k]))) return st;
            if (have->b[k] > a) a = have->b[k];
            if (a >= b - EPS) break;
        }
        if (b - a > EPS && (st = ivl_add(out, a, b))) return st;
    }
    return ARACHNE_OK;
}

static int fill_info(const arachne_plan *p, const int *node_override, rinfo **out)
{
    int goff[AR_MAX_TEMPLATES + 1], j, i;
    rinfo *ri;
    goff[0] = 0;
    /* the distributed optimizer shards over replicas x CP ranks */
    for (j = 0; j < p->ntemplates; j++) goff[j + 1] = goff[j] + p->t[j].replicas * ar_tmpl_cp(&p->t[j]);
    ri = ar_calloc(p->nranks > 0 ? (size_t)p->nranks : 1, sizeof *ri);
    if (!ri) return ARACHNE_E_NO_MEMORY;
    for (i = 0; i < p->nranks; i++) {
        const ar_rank *r = &p->ranks[i];
        if (r->tmpl < 0 || r->tmpl >= p->ntemplates || r->stage < 0 || r->stage >= p->t[r->tmpl].depth) {
            free(ri);
            return ar_error(ARACHNE_E_INVALID_PLAN, "migration: rank %d names template %d stage %d", r->rank, r->tmpl,
                            r->stage);
        }
        ri[i].tmpl = r->tmpl;
        ri[i].stage = r->stage;
        ri[i].replica = r->replica;
        ri[i].tp_rank = r->tp_rank;
        ri[i].cp_rank = r->cp_rank;
        ri[i].g = goff[r->tmpl] + r->replica * ar_tmpl_cp(&p->t[r->tmpl]) + r->cp_rank;
        ri[i].node = node_override ? node_override[i] : r->node;
        ri[i].gpu = r->gpu;
    }
    *out = ri;
    return ARACHNE_OK;
}

void ar_migration_free(ar_migration *m)
{
    if (!m) return;
    free(m->e);
    memset(m, 0, sizeof *m);
}

static int add_entry(ar_migration *m, const ar_mig_entry *e)
{
    if (m->n == m->cap) {
        int nc = m->cap ? 2 * m->cap : 32;
        ar_mig_entry *ne = ar_realloc(m->e, (size_t)nc * sizeof *ne);
        if (!ne) return ARACHNE_E_NO_MEMORY;
        m->e = ne;
        m->cap = nc;
    }
    m->e[m->n++] = *e;
    return ARACHNE_OK;
}

/* Bandwidth (bytes/s) of a transfer into a GPU on node dst from one on node
 * src (-1: a checkpoint, read at the receiver's inter-node bandwidth). */
static double link_bw(const arachne_cluster *c, int src, int dst, int *link)
{
    int td = c->nodes[dst].type;
    if (src < 0) { *link = AR_LINK_CHECKPOINT; return c->types[td].inter_bw; }
    if (src == dst) { *link = AR_LINK_INTRA; return c->types[td].intra_bw; }
    *link = AR_LINK_INTER;
    return ar_cluster_link_bw(c, c->nodes[src].type, td);
}

typedef struct mctx {
    const arachne_cost_model *cm;
    const arachne_plan *old, *newp;
    const rinfo *oi;
    lmap om;                         /* where the old plan keeps each layer */
    int R_old, dist, blocks;
    int *hold_off[AR_MAX_TEMPLATES]; /* per old template: offsets of its stages' rank lists */
    int *hold;                       /* old rank indices grouped by (template, stage) */
    ivl held;                        /* scratch: one old rank's intervals */
    ivl cands;                       /* the intervals of the candidates of route() */
    int *cand, ncand_cap;            /* their old ranks */
    double *bounds;                  /* [2 x cands.cap + 2] */
} mctx;

/* Adds candidate (old rank o, [a, b)) to route()'s lists. */
static int add_cand(mctx *x, int o, double a, double b)
{
    int st;
    if ((st = ivl_add(&x->cands, a, b))) return st;
    if (x->ncand_cap < x->cands.cap) {
        int *nc = ar_realloc(x->cand, (size_t)x->cands.cap * sizeof *nc);
        double *nb;
        if (!nc) return ARACHNE_E_NO_MEMORY;
        x->cand = nc;
        if (!(nb = ar_realloc(x->bounds, ((size_t)x->cands.cap * 2 + 2) * sizeof *nb))) return ARACHNE_E_NO_MEMORY;
        x->bounds = nb;
        x->ncand_cap = x->cands.cap;
    }
    x->cand[x->cands.n - 1] = o;
    return ARACHNE_OK;
}

/* Sends piece [pa, pb) of `part` of layer l (params P, bpp bytes per
 * parameter) to the new rank on node dst_node; records pieces in pb. */
static int route(mctx *x, int l, int part, double pa, double pb, double bytes_per_unit, int dst_node, pbuf *out)
{
    const arachne_cluster *c = x->cm->cluster;
    int nc, nb = 0, j, k, q, st;
    x->cands.n = 0;
    for (j = 0; j < x->old->ntemplates; j++) {
        int s = stage_of(x->old, &x->om, j, l, x->blocks), *lst, cnt;
        if (s < 0) continue;
        lst = x->hold + x->hold_off[j][s];
        cnt = x->hold_off[j][s + 1] - x->hold_off[j][s];
        for (k = 0; k < cnt; k++) {
            const rinfo *o = &x->oi[lst[k]];
            if (o->node < 0) continue;
            if ((st = intervals(x->old, x->R_old, o, part, x->dist, x->om.tmax[l + 1], &x->held))) return st;
            for (q = 0; q < x->held.n; q++) {
                double a = x->held.a[q], b = x->held.b[q];
                if (b <= pa + EPS || a >= pb - EPS) continue;
                if ((st = add_cand(x, lst[k], a, b))) return st;
                if (a > pa + EPS && a < pb - EPS) x->bounds[nb++] = a;
                if (b > pa + EPS && b < pb - EPS) x->bounds[nb++] = b;
            }
        }
    }
    nc = x->cands.n;
    x->bounds[nb++] = pa;
    x->bounds[nb++] = pb;
    qsort(x->bounds, (size_t)nb, sizeof *x->bounds, dbl_cmp);
    for (k = 0; k + 1 < nb; k++) {
        double lo = x->bounds[k], hi = x->bounds[k + 1], best_bw = -1.0;
        int best = -1, best_same = 0, i;
        if (hi - lo <= EPS) continue;
        for (i = 0; i < nc; i++) {
            const rinfo *o = &x->oi[x->cand[i]];
            int same, link;
            double bw;
            if (x->cands.a[i] > lo + EPS || x->cands.b[i] < hi - EPS) continue;
            same = o->node == dst_node;
            bw = link_bw(c, o->node, dst_node, &link);
            /* same node first, then the fastest link, then the lowest rank
             * (candidates come in template, stage, rank order) */
            if (best < 0 || (same && !best_same) || (same == best_same && bw > best_bw)) {
                best = x->cand[i];
                best_same = same;
                best_bw = bw;
            }
        }
        st = pbuf_add(out, best, l + 1, (hi - lo) * bytes_per_unit);
        if (st) return st;
    }
    return ARACHNE_OK;
}

int ar_migration_compute(const arachne_cost_model *cm, const arachne_plan *old, const int *old_node,
                         const arachne_plan *newp, ar_migration *out)
{
    const arachne_cluster *c;
    const ar_cost_cache *cc;
    mctx x;
    rinfo *oi = NULL, *ni = NULL;
    int *node_off = NULL, *old_at = NULL, *rank_of = NULL;
    pbuf pb;
    lmap nm;
    ivl want, have, left;
    int st = ARACHNE_OK, i, j, s, l, part, total_gpus, nh = 0, R_new = 0;
    double wb, ob;

    if (!cm || !old || !newp || !out) return AR_NULL_ARG("migration", cm, old, newp, out);
    memset(out, 0, sizeof *out);
    out->slowest_rank = -1;
    memset(&x, 0, sizeof x);
    memset(&pb, 0, sizeof pb);
    memset(&nm, 0, sizeof nm);
    memset(&want, 0, sizeof want);
    memset(&have, 0, sizeof have);
    memset(&left, 0, sizeof left);
    c = cm->cluster;
    cc = cm->cache;
    if (!cc) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "migration: cost model has no lookup cache");
    x.cm = cm;
    x.old = old;
    x.newp = newp;
    x.blocks = cm->model->blocks;
    x.dist = cm->setup.dist_optimizer;
    wb = cm->setup.weight_bytes;
    ob = cm->setup.optim_bytes;
    for (j = 0; j < old->ntemplates; j++) x.R_old += old->t[j].replicas * ar_tmpl_cp(&old->t[j]);
    for (j = 0; j < newp->ntemplates; j++) R_new += newp->t[j].replicas * ar_tmpl_cp(&newp->t[j]);

    if ((st = fill_info(old, old_node, &oi)) || (st = fill_info(newp, NULL, &ni))) goto done;
    x.oi = oi;

    /* flat GPU index of the new cluster -> old rank that ran there */
    node_off = ar_malloc(((size_t)c->nnodes + 1) * sizeof *node_off);
    if (!node_off) { st = ARACHNE_E_NO_MEMORY; goto done; }
    node_off[0] = 0;
    for (i = 0; i < c->nnodes; i++) node_off[i + 1] = node_off[i] + c->nodes[i].gpus;
    total_gpus = node_off[c->nnodes];
    old_at = ar_malloc(((size_t)total_gpus + 1) * sizeof *old_at);
    if (!old_at) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (i = 0; i < total_gpus; i++) old_at[i] = -1;
    for (i = 0; i < old->nranks; i++) {
        int n = oi[i].node;
        if (n < 0 || n >= c->nnodes || oi[i].gpu < 0 || oi[i].gpu >= c->nodes[n].gpus) { oi[i].node = -1; continue; }
        old_at[node_off[n] + oi[i].gpu] = i;
    }

    /* old ranks grouped by (template, stage) */
    x.hold = ar_malloc(((size_t)old->nranks + 1) * sizeof *x.hold);
    if (!x.hold) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (j = 0; j < old->ntemplates; j++) {
        int depth = old->t[j].depth;
        x.hold_off[j] = ar_calloc((size_t)depth + 1, sizeof(int));
        if (!x.hold_off[j]) { st = ARACHNE_E_NO_MEMORY; goto done; }
        x.hold_off[j][0] = nh;
        for (s = 0; s < depth; s++) {
            for (i = 0; i < old->nranks; i++)
                if (oi[i].tmpl == j && oi[i].stage == s) x.hold[nh++] = i;
            x.hold_off[j][s + 1] = nh;
        }
    }
    /* route()'s candidates: one interval per old rank unless their TP
     * degrees differ (then add_cand grows the lists) */
    x.ncand_cap = x.cands.cap = old->nranks + 16;
    x.cands.a = ar_malloc((size_t)x.cands.cap * sizeof *x.cands.a);
    x.cands.b = ar_malloc((size_t)x.cands.cap * sizeof *x.cands.b);
    x.cand = ar_malloc((size_t)x.cands.cap * sizeof *x.cand);
    x.bounds = ar_malloc(((size_t)x.cands.cap * 2 + 2) * sizeof *x.bounds);
    if (!x.cands.a || !x.cands.b || !x.cand || !x.bounds) { st = ARACHNE_E_NO_MEMORY; goto done; }
    if ((st = lmap_build(old, x.blocks, &x.om)) || (st = lmap_build(newp, x.blocks, &nm))) goto done;

    /* new ranks in global-rank order */
    rank_of = ar_malloc(((size_t)newp->nranks + 1) * sizeof *rank_of);
    if (!rank_of) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (i = 0; i < newp->nranks; i++) rank_of[i] = i;
    for (i = 1; i < newp->nranks; i++) { /* insertion sort: already sorted when finished */
        int v = rank_of[i], k = i - 1;
        while (k >= 0 && newp->ranks[rank_of[k]].rank > newp->ranks[v].rank) { rank_of[k + 1] = rank_of[k]; k--; }
        rank_of[k + 1] = v;
    }

    for (i = 0; i < newp->nranks; i++) {
        const rinfo *r = &ni[rank_of[i]];
        int dst_node = r->node, local = -1, k;
        double rank_s = 0.0;
        if (dst_node < 0 || dst_node >= c->nnodes || r->gpu < 0 || r->gpu >= c->nodes[dst_node].gpus) {
            st = ar_error(ARACHNE_E_INVALID_PLAN, "migration: new rank %d names GPU %d of node %d, not in the cluster",
                          newp->ranks[rank_of[i]].rank, r->gpu, dst_node);
            goto done;
        }
        local = old_at[node_off[dst_node] + r->gpu];
        pb.n = 0;
        for (l = -1; l <= x.blocks; l++) {
            int kind, local_holds;
            if (stage_of(newp, &nm, r->tmpl, l, x.blocks) != r->stage) continue;
            kind = l < 0 ? AR_LAYER_EMBED : l >= x.blocks ? AR_LAYER_HEAD : ar_model_block_kind(cm->model, l);
            local_holds = local >= 0 && stage_of(old, &x.om, oi[local].tmpl, l, x.blocks) == oi[local].stage;
            for (part = 0; part < PARTS; part++) {
                double P = part < PART_EW ? cc->dense_params[kind] : cc->expert_params[kind];
                double bpp = (part == PART_DW || part == PART_EW) ? wb : ob;
                const ivl *send = &want;
                int q;
                if (P <= 0.0 || bpp <= 0.0) continue;
                if ((st = intervals(newp, R_new, r, part, x.dist, nm.tmax[l + 1], &want))) goto done;
                if (local_holds) {
                    if ((st = intervals(old, x.R_old, &oi[local], part, x.dist, x.om.tmax[l + 1], &have)) ||
                        (st = ivl_minus(&want, &have, &left)))
                        goto done;
                    send = &left;
                }
                for (q = 0; q < send->n; q++)
                    if (send->b[q] - send->a[q] > EPS &&
                        (st = route(&x, l, part, send->a[q], send->b[q], P * bpp, dst_node, &pb)))
                        goto done;
            }
        }
        if (pb.n == 0) continue;
        /* merge pieces into entries: per source, runs of consecutive layers */
        qsort(pb.p, (size_t)pb.n, sizeof *pb.p, piece_cmp);
        k = 0;
        while (k < pb.n) {
            ar_mig_entry e;
            int src = pb.p[k].src, li0 = pb.p[k].li, li = li0, link = 0, src_node = -1;
            double bytes = 0.0, bw;
            while (k < pb.n && pb.p[k].src == src && pb.p[k].li <= li + 1) {
                li = pb.p[k].li;
                bytes += pb.p[k].bytes;
                k++;
            }
            if (src >= 0) src_node = oi[src].node;
            bw = link_bw(c, src_node, dst_node, &link);
            memset(&e, 0, sizeof e);
            e.src_rank = src >= 0 ? old->ranks[src].rank : -1;
            e.dst_rank = newp->ranks[rank_of[i]].rank;
            e.first = li0 - 1;
            e.end = li;   /* layer li - 1 is the last one: end = li */
            e.src_node = src_node;
            e.dst_node = dst_node;
            e.link = link;
            e.bytes = floor(bytes + 0.5); /* whole bytes: the parts are fractions of a layer's bytes */
            e.seconds = bw > 0.0 ? bytes / bw : 0.0;
            rank_s += e.seconds;
            out->bytes += e.bytes; /* the entries' sum, as listed */
            if ((st = add_entry(out, &e))) goto done;
        }
        if (rank_s > out->max_rank_s) {
            out->max_rank_s = rank_s;
            out->slowest_rank = newp->ranks[rank_of[i]].rank;
        }
    }

done:
    if (st) ar_migration_free(out);
    for (j = 0; j < AR_MAX_TEMPLATES; j++) free(x.hold_off[j]);
    free(x.hold);
    free(x.cand);
    free(x.bounds);
    ivl_free(&x.cands);
    ivl_free(&x.held);
    ivl_free(&want);
    ivl_free(&have);
    ivl_free(&left);
    lmap_free(&x.om);
    lmap_free(&nm);
    free(pb.p);
    free(oi);
    free(ni);
    free(node_off);
    free(old_at);
    free(rank_of);
    return st;
}
