/* construct.c -- the construction loop and its feasibility masks.
 *
 * Lookahead.  A choice is allowed only when some completion of the current
 * template exists: a depth-first search over the remaining stages' (type,
 * TP) -- GPU types with the most memory first, larger TP first, pruned by
 * the one-replica packing test -- that ends in a trial fill (AR_FILL_CHECK)
 * that succeeds.  The search has a node budget; when it runs out the choice
 * is masked, which is conservative.  Every completion found is kept as a
 * witness for the rest of the step.  When no depth of the first template
 * has a completion within the budget, the search runs again with 64 times
 * the budget, and then once more trying the stage options least memory
 * first, before the model is called infeasible.  The first step's depth
 * mask is the same for every run of a builder; it is computed once and
 * replayed (ar_step0_cache).
 *
 * Why a rollout never reaches a dead end: an allowed choice has a witness
 * W.  At the next decision the search for W's next choice explores a
 * subtree of the search that found W, in the same order, so it reaches W
 * within the same budget (or the cached witness answers at once).  The last
 * TP choice of a template is allowed only when the trial fill of exactly
 * that template succeeded, and the real fill (AR_FILL_BEST) prices a
 * superset of the candidates the trial fill tried, so it succeeds too. */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "construct.h"

/* ---------------------------------------------------------------------- */
/* trace                                                                   */

void ar_trace_init(ar_trace *t) { memset(t, 0, sizeof *t); }

void ar_trace_reset(ar_trace *t)
{
    ar_decision *d = t->dec;
    int cap = t->cap;
    memset(t, 0, sizeof *t);
    t->dec = d;
    t->cap = cap;
}

void ar_trace_free(ar_trace *t)
{
    if (!t) return;
    free(t->dec);
    memset(t, 0, sizeof *t);
}

static int trace_add(ar_trace *t, const ar_dec_ctx *c, int choice)
{
    ar_decision *d;
    if (!t) return ARACHNE_OK;
    if (t->ndec == t->cap) {
        int ncap = t->cap ? t->cap * 2 : 64;
        ar_decision *nd = (ar_decision *)ar_realloc(t->dec, (size_t)ncap * sizeof(ar_decision));
        if (!nd) return ARACHNE_E_NO_MEMORY;
        t->dec = nd;
        t->cap = ncap;
    }
    d = &t->dec[t->ndec++];
    memset(d, 0, sizeof *d);
    d->kind = (int)c->kind; d->step = c->step; d->stage = c->stage; d->n = c->n; d->choice = choice;
    memcpy(d->mask, c->mask, (size_t)c->n);
    t->steps[t->nsteps].ndec++;
    return ARACHNE_OK;
}

/* ---------------------------------------------------------------------- */
/* options and builder                                                     */

void ar_construct_opts_default(ar_construct_opts *o)
{
    o->max_steps = AR_MAX_TEMPLATES;
    o->lookahead = 1;
    o->lookahead_budget = 48;
    o->penalty = 1.0;
    o->replica_first = 0;
}

/* Zeroes every member of b but its fill work space (ar_fill_ws_init and
 * ar_fill_ws_free zero that one; it holds a 214 KB plan, so zeroing it
 * twice per builder is measurable in a greedy plan). */
static void zero_but_ws(ar_builder *b)
{
    size_t at = offsetof(ar_builder, ws), after = at + sizeof b->ws;
    memset(b, 0, at);
    memset((char *)b + after, 0, sizeof *b - after);
}

/* What ar_builder_init refuses before it allocates anything. */
static int builder_args(const arachne_cost_model *cm, const ar_construct_opts *o)
{
    if (!cm || !cm->cluster || !cm->model || !cm->profile)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: cost model is NULL or incomplete");
    if (cm->cluster->nnodes < 1 || cm->cluster->total_gpus < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: the cluster has no GPUs");
    if (o->max_steps < 1 || o->max_steps > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: step limit %d outside [1, %d]", o->max_steps,
                        AR_MAX_TEMPLATES);
    return ARACHNE_OK;
}

int ar_builder_init(ar_builder *b, const arachne_cost_model *cm, const ar_construct_opts *opts)
{
    const arachne_cluster *cl;
    int st, i, j, maxnode = 1, dcap;
    zero_but_ws(b);
    if (opts) b->opts = *opts; else ar_construct_opts_default(&b->opts);
    if ((st = builder_args(cm, &b->opts))) {
        memset(&b->ws, 0, sizeof b->ws); /* a builder ar_builder_free accepts */
        return st;
    }
    cl = cm->cluster;
    b->cm = cm;
    if (b->opts.lookahead_budget < 1) b->opts.lookahead_budget = 1;
    dcap = cm->setup.max_depth > 0 ? cm->setup.max_depth : AR_SEARCH_MAX_DEPTH;
    b->max_depth = AR_MIN(AR_MIN(dcap, AR_SEARCH_MAX_DEPTH), cm->model->blocks);
    for (i = 0; i < cl->nnodes; i++) if (cl->nodes[i].gpus > maxnode) maxnode = cl->nodes[i].gpus;
    b->ntp = AR_MIN(ar_ilog2(maxnode), AR_MAX_TP_LOG) + 1;
    for (i = 0; i < cl->ntypes; i++) b->type_order[i] = i;
    for (i = 1; i < cl->ntypes; i++) { /* stable insertion: memory descending */
        int v = b->type_order[i];
        for (j = i - 1; j >= 0 && cl->types[b->type_order[j]].mem_bytes < cl->types[v].mem_bytes; j--)
            b->type_order[j + 1] = b->type_order[j];
        b->type_order[j + 1] = v;
    }
    st = ar_fill_ws_init(&b->ws, cm); /* zeroes b->ws first */
    if (!st) st = ar_avail_init(&b->base, cl);
    if (!st) st = ar_avail_init(&b->avail, cl);
    if (st) { ar_builder_free(b); return st; }
    return ARACHNE_OK;
}

void ar_builder_free(ar_builder *b)
{
    if (!b) return;
    ar_fill_ws_free(&b->ws); /* frees and zeroes b->ws */
    ar_avail_free(&b->base);
    ar_avail_free(&b->avail);
    zero_but_ws(b);
}

/* ---------------------------------------------------------------------- */
/* lookahead                                                               */

/* Per-step packing supply: sum over nodes of a type of floor(free / 2^m). */
typedef struct look {
    ar_builder *b;
    const arachne_plan *plan;
    long supply[AR_MAX_TYPES][AR_MAX_TP_LOG + 1];
    long demand[AR_MAX_TYPES][AR_MAX_TP_LOG + 1];
    /* memory terms (see "Memory bounds" below) */
    double R0;                     /* replicas of the plan so far */
    int dist;                      /* optimizer state sharded over all replicas (ZeRO-1) */
    double wg, ob;                 /* weight + gradient, optimizer bytes per parameter */
    double X;                      /* under ZeRO-1: expert data-parallel ranks of the plan so far, at most */
    double D, E;                   /* dense / routed-expert parameters of the whole model */
    double acts;                   /* least activation bytes of one replica (one sample per layer) */
    double pd[AR_LAYER_KINDS], pe[AR_LAYER_KINDS]; /* dense / routed-expert parameters of a block per kind */
    double pd_embed, pd_head;      /* parameters of the embedding / head */
    int kinds[AR_LAYER_KINDS];     /* the model has blocks of the kind */
    double rmax[AR_MAX_DEPTH + 1]; /* most replicas of a template of depth d */
    double rmem[AR_MAX_DEPTH + 1]; /* most replicas whose least bytes the free GPUs hold */
    double free_cap;               /* usable bytes of all free GPUs */
    int blocks;                    /* blocks of the model */
    /* stage options (type, tp) of the lookahead, most memory per stage first */
    int nopt, opt_type[AR_MAX_TYPES * (AR_MAX_TP_LOG + 1)], opt_tp[AR_MAX_TYPES * (AR_MAX_TP_LOG + 1)];
    double ablk;                   /* least activation bytes of one block per sample */
    double akind[AR_LAYER_KINDS];  /* least activation bytes of one layer of a kind per sample */
    int nkind[AR_LAYER_KINDS];     /* blocks of each kind */
    double embed_a, head_a;
    double gpu_cap[AR_MAX_TYPES];  /* usable bytes of one GPU after the fixed overhead */
    double stage_cap;              /* most bytes one stage can hold (one replica) */
    double pcap[AR_MAX_DEPTH];     /* bytes of the stages fixed so far (tp x usable GPU bytes) */
    int rep;                       /* replicas every candidate template must pack (>= 1) */
    int ascending;                 /* 1: the search tries the stage options least memory first */
    int pin;                       /* > 0: judge the bounds at pin replicas, which the prefix must pack
                                    * (a heuristic, never a proof) */
    int gpus;                      /* 1: the proof search's tighter bounds (prefix_fits_span) */
} look;

/* Least activation bytes of one layer of each kind for one sample of a
 * micro-batch, over a whole TP group, across every profiled (type, tp, mbs). */
static void least_acts(const arachne_cost_model *cm, double *act)
{
    const ar_cost_cache *cc = (const ar_cost_cache *)cm->cache;
    int k, t, lt, lm;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        act[k] = -1.0;
        for (t = 0; t < cm->cluster->ntypes; t++)
            for (lt = 0; lt < AR_TP_LEVELS; lt++)
                for (lm = 0; lm < AR_MBS_LEVELS; lm++) {
                    const ar_cost_entry *e = &cc->tab[t][k][lt][lm];
                    double v;
                    if (!e->present) continue;
                    v = e->act_bytes * (double)(1 << lt) / (double)(1 << lm); /* per sample, whole TP group */
                    if (act[k] < 0 || v < act[k]) act[k] = v;
                }
        if (act[k] < 0) act[k] = 0.0;
    }
}

/* Activation bytes every replica holds at least: one sample of every
 * layer. */
static double least_replica_acts(const arachne_cost_model *cm, const double *act)
{
    double v = act[AR_LAYER_EMBED] + act[AR_LAYER_HEAD];
    int k;
    for (k = 0; k < AR_LAYER_KINDS; k++)
        if (ar_kind_is_block(k) && ar_model_kind_count(cm->model, k) > 0) v += ar_model_kind_count(cm->model, k) * act[k];
    return v;
}

/* Memory bounds of one replica (weights, gradients, optimizer state, one
 * micro-batch of activations; every term taken in the direction that makes
 * it smaller), for a template of depth d that will have at most r replicas.
 * r is what the packing of the stages fixed so far admits (prefix_replicas),
 * capped by the free GPUs and the batch left, so the bounds tighten as the
 * search fixes stages.  Dense parameters are held once per replica; under
 * ZeRO-1 their optimizer state is divided over every replica of the plan,
 * and the fill judges a template with the replicas it will have when placed:
 * the plan's so far (R0) and its own (at most r), never with replicas later
 * templates may add.  Routed-expert weights and gradients are spread over
 * at most min(r, experts) replicas of the template; under ZeRO-1 their
 * optimizer state over the stage's expert data-parallel ranks of every
 * template: one replica holds at least 1 / (r (1 + X)) of it (X: those
 * ranks of the templates placed so far; 0 for the first template, whose
 * replicas then hold exactly 1 / r each).
 *  - bytes: the stages of a replica must hold need_bytes(d, r) in all;
 *  - blocks: a stage of capacity C holds at most floor(C / blk) blocks
 *    (blk: the cheapest block, its activations times the samples the stage
 *    holds in flight), the first stage also the embedding and the last the
 *    head; the stages together must hold every block, each at least one.
 * A partial template whose fixed stages plus the largest possible remaining
 * stages fail either test has no completion. */

/* Weight, gradient and optimizer bytes of one dense parameter of a replica
 * in a template of at most r replicas. */
static double dense_bpp(const look *L, double r)
{
    return L->wg + (L->dist ? L->ob / (L->R0 + r) : L->ob);
}

/* r clamped to [1, rmax[d]]. */
static double clamp_r(const look *L, int d, double r)
{
    if (r > L->rmax[d]) r = L->rmax[d];
    return r < 1.0 ? 1.0 : r;
}

/* Replicas at least one routed expert's copy is spread over (EP x ETP <=
 * tp x replicas, EP <= experts, ETP <= tp); 1 without expert tiling. */
static double expert_spread(const look *L, double r)
{
    const arachne_cost_model *cm = L->b->cm;
    return cm->setup.expert_tiling ? AR_MIN(r, (double)AR_MAX(cm->model->experts, 1)) : 1.0;
}

/* The same for one routed-expert parameter. */
static double expert_bpp(const look *L, double r)
{
    double es = expert_spread(L, r);
    return L->wg / es + (L->dist ? L->ob / (r * (1.0 + L->X)) : L->ob / es);
}

/* Least bytes one replica of depth d holds in all. */
static double need_bytes(const look *L, int d, double r)
{
    r = clamp_r(L, d, r);
    return dense_bpp(L, r) * L->D + expert_bpp(L, r) * L->E + L->acts;
}

/* Least weight/grad/optimizer bytes of one block of a replica. */
static double block_static(const look *L, double r)
{
    double stat = -1.0, ebpp = expert_bpp(L, r), bpp = dense_bpp(L, r);
    int k;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        double v;
        if (!L->kinds[k]) continue;
        v = bpp * L->pd[k] + ebpp * L->pe[k];
        if (stat < 0 || v < stat) stat = v;
    }
    return stat > 0 ? stat : 1.0;
}

static void look_bounds(look *L)
{
    const arachne_cost_model *cm = L->b->cm;
    const ar_cost_cache *cc = (const ar_cost_cache *)cm->cache;
    const ar_setup *su = &cm->setup;
    const ar_avail *a = &L->b->avail;
    int k, t, d, free_total = ar_avail_total(a), R0 = 0;
    int batch_left = su->global_batch - ar_plan_batch_floor(L->plan);
    double act[AR_LAYER_KINDS], ab = -1.0;
    L->dist = su->dist_optimizer != 0;
    L->wg = su->weight_bytes + su->grad_bytes;
    L->ob = su->optim_bytes;
    L->X = 0.0;
    for (k = 0; k < L->plan->ntemplates; k++) {
        const ar_template *t = &L->plan->t[k];
        int s, e = 0;
        for (s = 0; s < t->depth; s++) e = AR_MAX(e, t->stages[s].edp);
        L->X += e;
    }
    L->D = L->E = 0.0;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        int n = (k == AR_LAYER_EMBED || k == AR_LAYER_HEAD) ? 1 : ar_model_kind_count(cm->model, k);
        L->D += n * cc->dense_params[k];
        L->E += n * cc->expert_params[k];
    }
    least_acts(cm, act);
    L->acts = least_replica_acts(cm, act);
    /* optimizer shards of the plan so far: replicas x CP ranks (with
     * them, a new replica of any cp still holds at least D ob / (R0 + r)) */
    for (k = 0; k < L->plan->ntemplates; k++) R0 += L->plan->t[k].replicas * ar_tmpl_cp(&L->plan->t[k]);
    L->R0 = R0;
    L->blocks = cm->model->blocks;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        L->kinds[k] = ar_kind_is_block(k) && ar_model_kind_count(cm->model, k) > 0;
        L->nkind[k] = L->kinds[k] ? ar_model_kind_count(cm->model, k) : 0;
        L->akind[k] = act[k];
        L->pd[k] = cc->dense_params[k];
        L->pe[k] = cc->expert_params[k];
        if (L->kinds[k] && (ab < 0 || act[k] < ab)) ab = act[k];
    }
    L->ablk = ab > 0 ? ab : 0.0;
    L->pd_embed = cc->dense_params[AR_LAYER_EMBED];
    L->pd_head = cc->dense_params[AR_LAYER_HEAD];
    L->free_cap = 0.0;
    for (t = 0; t < cm->cluster->ntypes; t++) {
        double c = ar_type_capacity(cm, t) - AR_FRAMEWORK_OVERHEAD_BYTES;
        if (c > 0) L->free_cap += c * a->type_free[t];
    }
    for (d = 1; d <= AR_MAX_DEPTH; d++) {
        /* every replica gets at least one sample of the batch left */
        int lo = 1, hi = AR_MAX(1, AR_MIN(free_total / d, AR_MAX(batch_left, 1)));
        L->rmax[d] = hi;
        /* r replicas hold r x need_bytes(r) on distinct GPUs, which grows
         * with r: the largest r whose bytes the free GPUs hold */
        while (lo < hi) {
            int mid = lo + (hi - lo + 1) / 2;
            if ((double)mid * need_bytes(L, d, mid) <= L->free_cap) lo = mid; else hi = mid - 1;
        }
        L->rmem[d] = lo;
    }
    L->embed_a = act[AR_LAYER_EMBED];
    L->head_a = act[AR_LAYER_HEAD];
    L->stage_cap = 0.0;
    L->nopt = 0;
    for (t = 0; t < cm->cluster->ntypes; t++) {
        double c = ar_type_capacity(cm, t) - AR_FRAMEWORK_OVERHEAD_BYTES;
        int tp = a->type_max_free[t];
        L->gpu_cap[t] = c > 0 ? c : 0.0;
        if (tp > (1 << (L->b->ntp - 1))) tp = 1 << (L->b->ntp - 1);
        if (tp > 0) tp = 1 << ar_ilog2(tp);
        if (L->gpu_cap[t] * tp > L->stage_cap) L->stage_cap = L->gpu_cap[t] * tp;
    }
    for (t = 0; t < cm->cluster->ntypes; t++) {
        int k2;
        if (a->type_free[t] <= 0) continue;
        for (k2 = 0; k2 < L->b->ntp && (1 << k2) <= a->type_max_free[t]; k2++) {
            int n = L->nopt++, j;
            double c = L->gpu_cap[t] * (1 << k2);
            /* insertion: capacity descending, then type order, then wider TP */
            for (j = n - 1; j >= 0 && L->gpu_cap[L->opt_type[j]] * L->opt_tp[j] < c; j--) {
                L->opt_type[j + 1] = L->opt_type[j];
                L->opt_tp[j + 1] = L->opt_tp[j];
            }
            L->opt_type[j + 1] = t;
            L->opt_tp[j + 1] = 1 << k2;
        }
    }
}

/* Most replicas the one-replica demand so far admits (packing levels). */
static double prefix_replicas(const look *L)
{
    double r = 1e300;
    int t, m;
    for (t = 0; t < L->b->cm->cluster->ntypes; t++)
        for (m = 0; m <= AR_MAX_TP_LOG && L->demand[t][m] > 0; m++)
            {
                double q = floor((double)L->supply[t][m] / (double)L->demand[t][m]);
                if (q < r) r = q;
            }
    return r;
}

/* Weight, gradient and optimizer bytes of one block of kind k in a replica
 * of a template of at most r replicas. */
static double kind_static(const look *L, int k, double r)
{
    return dense_bpp(L, r) * L->pd[k] + expert_bpp(L, r) * L->pe[k];
}

/* Blocks of e static bytes and a activation bytes per sample that a stage
 * of c bytes holds at position p of a template of depth d: it holds
 * min(d - p, f1) samples in flight, so a block costs it e + that many
 * times a (*unit); position 0 also holds the embedding, position d - 1 the
 * head (bpp: bytes per dense parameter). */
static double position_blocks(const look *L, double c, int p, int d, double e, double a, double bpp, double f1,
                              double *unit)
{
    double f = AR_MIN((double)(d - p), f1);
    *unit = e + f * a;
    if (p == 0) c -= bpp * L->pd_embed + f * L->embed_a;
    if (p == d - 1) c -= bpp * L->pd_head + L->head_a;
    return c > 0 && *unit > 0 ? floor(c / *unit) : 0.0;
}

/* Most blocks of e static bytes and a activation bytes per sample that the
 * stages of a template of depth d can hold when stages [0, i) are fixed
 * (L->pcap) and the open ones share at most `left` bytes, with the stages
 * in the order asked (rev 0) or reversed (rev 1): a trial fill calls a
 * template feasible when either order fits (ar_fill_template_ws).  The
 * stage at position p holds min(d - p, f1) samples in flight, so a block
 * costs it e + that many times a, and it holds at most floor(capacity /
 * cost) of them (position 0 less the embedding, position d - 1 less the
 * head; an open stage at most stage_cap).  The open stages' blocks are
 * counted cheapest first -- from the last position, which holds the fewest
 * samples -- until `left` runs out: no other share of `left` holds more.
 * Returns -1 when a fixed stage cannot hold one such block. */
static double stages_hold(const look *L, int d, int i, double e, double a, double bpp, double f1, double left, int rev)
{
    double n = 0.0;
    int p;
    for (p = d - 1; p >= 0; p--) {
        int s = rev ? d - 1 - p : p;
        double unit, y = position_blocks(L, s < i ? L->pcap[s] : L->stage_cap, p, d, e, a, bpp, f1, &unit);
        if (s < i && y < 1.0) return -1.0;
        if (s >= i) {
            y = AR_MIN(y, floor(left / unit));
            left -= y * unit;
        }
        n += y;
    }
    return n;
}

/* Whether the stages, in one order (stages_hold), hold every block: the
 * cheapest block's bytes and activations (each the least over the kinds)
 * for all of them, and for each kind k the blocks at least as dear as k
 * in both. */
static int order_holds(const look *L, int d, int i, double rb, double bpp, double blk, double f1, double left, int rev)
{
    int k, j;
    if (stages_hold(L, d, i, blk, L->ablk, bpp, f1, left, rev) < (double)L->blocks) return 0;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        double ek, n = 0.0;
        if (!L->kinds[k]) continue;
        ek = kind_static(L, k, rb);
        for (j = 0; j < AR_LAYER_KINDS; j++)
            if (L->kinds[j] && kind_static(L, j, rb) >= ek && L->akind[j] >= L->akind[k]) n += L->nkind[j];
        if (stages_hold(L, d, i, ek, L->akind[k], bpp, f1, left, rev) < n) return 0;
    }
    return 1;
}

/* Can stages [0, i) of a template of depth d (L->pcap, whose demand L holds)
 * still be completed with some replica count in [ra, rb], as far as memory
 * bounds tell?  Every term is taken at the end of the span that makes it
 * smaller: bytes per parameter and samples in flight at rb (both fall as
 * replicas rise), the GPUs a replica may use at ra.  The first template is
 * alone in the plan, its replicas run the whole global batch, M x mbs x r
 * >= B, so the stage at position p holds at least min(d - p, B / r) samples
 * (1F1B warm-up); the first stage also holds the embedding, the last the
 * head.
 *  - The bounds of the searches with the lookahead budget (L->gpus 0): the
 *    bytes of a replica, and the blocks, each the cheapest block with the
 *    samples its stage holds in the order asked, every open stage as large
 *    as any (stage_cap) and holding one sample.
 *  - The bounds of the proof searches (step0_prove, L->gpus 1): r replicas of a
 *    template hold r times its GPUs of each type, so with r >= ra the open
 *    stages have at most floor(free of type t / ra) less the fixed stages'
 *    GPUs of each type t, at least one per stage, and their bytes; the
 *    blocks of each kind and the dearer ones must fit (order_holds), in the
 *    order asked or reversed, as a trial fill tries them.  Only that search
 *    uses them: in the first one, pruning harder lets the budgeted search
 *    reach, and trial-fill, many more leaves per query (rollouts cost 2.5x
 *    more for a few masked choices fewer). */
static int prefix_fits_span(const look *L, int d, int i, double ra, double rb)
{
    const arachne_cost_model *cm = L->b->cm;
    double cap = 0.0, nb = 0.0, bpp = dense_bpp(L, rb), blk = block_static(L, rb), f1;
    int s;
    f1 = L->plan->ntemplates == 0 ? AR_MAX(1.0, floor((double)cm->setup.global_batch / rb)) : 1.0;
    if (L->gpus) {
        const ar_avail *a = &L->b->avail;
        double used[AR_MAX_TYPES] = {0}, left = 0.0, gpus_left = 0.0;
        int t;
        for (s = 0; s < i; s++) {
            used[L->b->q_types[s]] += L->b->q_tps[s];
            cap += L->pcap[s];
        }
        for (t = 0; t < cm->cluster->ntypes; t++) {
            double g = floor((double)a->type_free[t] / ra) - used[t];
            if (g < 0) return 0;
            left += g * L->gpu_cap[t];
            gpus_left += g;
        }
        if (gpus_left < d - i) return 0;
        if (cap + AR_MIN((d - i) * L->stage_cap, left) < need_bytes(L, d, rb)) return 0;
        return order_holds(L, d, i, rb, bpp, blk, f1, left, 0) || order_holds(L, d, i, rb, bpp, blk, f1, left, 1);
    }
    for (s = 0; s < i; s++) {
        double unit, sb = position_blocks(L, L->pcap[s], s, d, blk, L->ablk, bpp, f1, &unit);
        if (sb < 1.0) return 0; /* cannot hold one block (in the order asked) */
        cap += L->pcap[s];
        nb += sb;
    }
    if (cap + (d - i) * L->stage_cap < need_bytes(L, d, rb)) return 0;
    return nb + (d - i) * floor(L->stage_cap / (blk + L->ablk)) >= (double)L->blocks;
}

/* Whether some replica count in [ra, rb] passes prefix_fits_span: a span
 * that fails is settled, one that passes is halved until single counts
 * pass.  *work caps the spans judged; when it runs out the answer is yes,
 * which prunes nothing. */
static int prefix_fits_some(const look *L, int d, int i, double ra, double rb, int *work)
{
    double mid;
    if (!prefix_fits_span(L, d, i, ra, rb)) return 0;
    if (ra >= rb || --*work <= 0) return 1;
    mid = floor((ra + rb) / 2.0);
    return prefix_fits_some(L, d, i, ra, mid, work) || prefix_fits_some(L, d, i, mid + 1.0, rb, work);
}

/* Can stages [0, i) of a template of depth d still be completed?  Every
 * fixed stage is judged at the replicas the whole prefix admits (at most;
 * prefix_fits_span), so fixing a stage that lowers that count tightens the
 * bounds of the stages before it.  A pinned search judges its pinned count
 * alone. */
static int prefix_fits(const look *L, int d, int i)
{
    double r = prefix_replicas(L);
    int work = 64;
    r = AR_MIN(r, L->rmem[d]);
    if (r < 1.0) return 0;
    r = L->pin > 0 ? (double)L->pin : clamp_r(L, d, r);
    if (!L->gpus) return prefix_fits_span(L, d, i, r, r);
    return prefix_fits_some(L, d, i, L->pin > 0 ? r : 1.0, r, &work);
}

static void look_supply(look *L)
{
    /* ar_avail_refresh keeps the same sums */
    memcpy(L->supply, L->b->avail.supply, sizeof L->supply);
}

/* Adds one group of tp GPUs of type t to the one-replica demand; returns 0
 * (and changes nothing) when L->rep replicas of the demand no longer pack. */
static int demand_push(look *L, int t, int tp)
{
    int k = ar_ilog2(tp), m;
    for (m = 0; m <= k; m++)
        if ((L->demand[t][m] + (tp >> m)) * L->rep > L->supply[t][m]) return 0;
    for (m = 0; m <= k; m++) L->demand[t][m] += tp >> m;
    return 1;
}

static void demand_pop(look *L, int t, int tp)
{
    int k = ar_ilog2(tp), m;
    for (m = 0; m <= k; m++) L->demand[t][m] -= tp >> m;
}

static void demand_set(look *L, int n, const int *types, const int *tps)
{
    int s;
    memset(L->demand, 0, sizeof L->demand);
    for (s = 0; s < n; s++) {
        int k = ar_ilog2(tps[s]), m;
        for (m = 0; m <= k; m++) L->demand[types[s]][m] += tps[s] >> m;
    }
}

static int witness_match(const look *L, int depth, int nfixed, int fixed_type)
{
    const ar_builder *b = L->b;
    int w, s;
    for (w = 0; w < b->wn; w++) {
        if (b->wit[w].depth != depth || b->wit[w].rmax < L->rep) continue;
        for (s = 0; s < nfixed; s++)
            if (b->wit[w].types[s] != b->q_types[s] || b->wit[w].tps[s] != b->q_tps[s]) break;
        if (s < nfixed) continue;
        if (fixed_type >= 0 && b->wit[w].types[nfixed] != fixed_type) continue;
        return 1;
    }
    return 0;
}

/* Loads the prefix b->q_types/q_tps[0, nfixed) into L: its one-replica
 * demand and its stages' capacities (L->pcap).  Returns 0 when L->rep
 * replicas of it do not pack. */
static int prefix_load(look *L, int nfixed)
{
    const ar_builder *b = L->b;
    int s;
    memset(L->demand, 0, sizeof L->demand);
    for (s = 0; s < nfixed; s++) {
        if (!demand_push(L, b->q_types[s], b->q_tps[s])) return 0;
        L->pcap[s] = b->q_tps[s] * L->gpu_cap[b->q_types[s]];
    }
    return 1;
}

/* Depth-first search for a completion of q_types/q_tps[0, i) to depth
 * (their capacities in L->pcap, their demand in L->demand).  fixed_type >= 0
 * pins stage i's type. */
static int dfs(look *L, int depth, int i, int fixed_type)
{
    ar_builder *b = L->b;
    int ti;
    if (!prefix_fits(L, depth, i)) return 0;
    if (b->budget_left <= 0) return 0;
    b->budget_left--;
    if (i == depth) {
        b->check_fills++;
        if (ar_fill_template_ws(&b->ws, &b->avail, (arachne_plan *)L->plan, depth, b->q_types, b->q_tps,
                                AR_FILL_CHECK) != ARACHNE_OK)
            return 0;
        if (b->wn < AR_MAX_WITNESS) {
            b->wit[b->wn].depth = depth;
            b->wit[b->wn].rmax = prefix_replicas(L);
            memcpy(b->wit[b->wn].types, b->q_types, (size_t)depth * sizeof(int));
            memcpy(b->wit[b->wn].tps, b->q_tps, (size_t)depth * sizeof(int));
            b->wn++;
        }
        return 1;
    }
    for (ti = 0; ti < L->nopt; ti++) {
        int oi = L->ascending ? L->nopt - 1 - ti : ti;
        int t = L->opt_type[oi], found;
        int tp = L->opt_tp[oi];
        if (fixed_type >= 0 && t != fixed_type) continue;
        if (!demand_push(L, t, tp)) continue;
        b->q_types[i] = t;
        b->q_tps[i] = tp;
        L->pcap[i] = tp * L->gpu_cap[t];
        found = dfs(L, depth, i + 1, -1);
        demand_pop(L, t, tp);
        if (found) return 1;
        if (b->budget_left <= 0) return 0;
    }
    return 0;
}

/* Is there a completion of the template whose stages [0, nfixed) are
 * b->q_types/q_tps (already set), with stage nfixed of type fixed_type
 * (-1: free)?  nfixed may equal depth (the template is complete). */
static int query(look *L, int depth, int nfixed, int fixed_type)
{
    ar_builder *b = L->b;
    int found;
    b->queries++;
    if (witness_match(L, depth, nfixed, fixed_type)) return 1;
    /* the prefix as the search that found it saw it: the bounds of a node
     * depend on its prefix alone, so the pruning along a witness's path is
     * the same */
    if (!prefix_load(L, nfixed)) return 0;
    b->budget_left = b->opts.lookahead_budget + 2 * depth;
    found = dfs(L, depth, nfixed, fixed_type);
    if (!found && b->budget_left <= 0) b->budget_outs++;
    return found;
}

/* Queries every depth of a first template that todo[] holds and sets
 * mask[depth] for each that has a completion; a depth leaves todo[] when
 * its search is settled (a completion found, or none within the budget's
 * reach; a search with pinned replicas only settles what it finds).
 * Returns whether any depth was found. */
static int query_depths(look *L, unsigned char *mask, unsigned char *todo)
{
    ar_builder *b = L->b;
    int depth, any = 0;
    for (depth = 1; depth <= b->max_depth; depth++) {
        long outs = b->budget_outs;
        if (!todo[depth]) continue;
        if (query(L, depth, 0, -1)) { mask[depth] = 1; any = 1; todo[depth] = 0; }
        else if (b->budget_outs == outs && L->pin == 0) todo[depth] = 0; /* a pinned search settles nothing */
    }
    return any;
}

static int any_set(const unsigned char *v, int n)
{
    int i;
    for (i = 0; i < n; i++) if (v[i]) return 1;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* memory bound                                                            */

void ar_construct_memory_bound(const arachne_cost_model *cm, double *need, double *have)
{
    const arachne_cluster *cl = cm->cluster;
    const ar_setup *su = &cm->setup;
    double act[AR_LAYER_KINDS];
    int t;
    least_acts(cm, act);
    *need = (su->weight_bytes + su->grad_bytes + su->optim_bytes) * cm->model->total_params + least_replica_acts(cm, act);
    *have = 0.0;
    for (t = 0; t < cl->ntypes; t++) {
        double cap = ar_type_capacity(cm, t) - AR_FRAMEWORK_OVERHEAD_BYTES;
        if (cap > 0) *have += cap * (double)cl->type_gpus[t];
    }
}

/* The message when not even a first template fits. */
static int infeasible_start(ar_builder *b, arachne_plan *plan)
{
    const arachne_cost_model *cm = b->cm;
    const arachne_cluster *cl = cm->cluster;
    double need, have;
    int types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH], d, t = b->type_order[0], st;
    ar_construct_memory_bound(cm, &need, &have);
    if (need > have)
        return ar_error(ARACHNE_E_INFEASIBLE,
                        "%s does not fit on this cluster: weights, gradients and optimizer state of %.4g B "
                        "parameters and one micro-batch of activations need at least %.1f GB, the %d GPUs hold "
                        "%.1f GB usable",
                        cm->model->name, cm->model->total_params / 1e9, need / 1e9, cl->total_gpus, have / 1e9);
    /* a representative template: as deep as one replica packs, each stage
     * the option with the most memory that still packs */
    {
        look L;
        int k;
        memset(&L, 0, sizeof L);
        L.b = b;
        L.plan = plan;
        L.rep = 1;
        look_supply(&L);
        look_bounds(&L);
        for (d = 0; d < b->max_depth; d++) {
            for (k = 0; k < L.nopt; k++)
                if (demand_push(&L, L.opt_type[k], L.opt_tp[k])) break;
            if (k == L.nopt) break;
            types[d] = L.opt_type[k];
            tps[d] = L.opt_tp[k];
        }
        if (d < 1) { d = 1; types[0] = t; tps[0] = 1; }
    }
    st = ar_fill_template_ws(&b->ws, &b->avail, plan, d, types, tps, AR_FILL_BEST);
    if (st == ARACHNE_OK) /* budget too small to find it: say so rather than hide a plan */
        return ar_error(ARACHNE_E_INFEASIBLE,
                        "no first template was found within the lookahead budget (%d nodes per query); "
                        "raise the budget", b->opts.lookahead_budget);
    {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", arachne_last_error());
        /* not proven: some depth's searches ran out of budget, so a
         * template the searches did not reach may still fit */
        return ar_error(ARACHNE_E_INFEASIBLE, "no template of depth 1..%d fits %s on this cluster%s; for example %s",
                        b->max_depth, cm->model->name,
                        b->infeasible_proven ? "" : " as far as the lookahead reached (not proven: some depths' searches "
                                                    "ran out of budget)", msg);
    }
}

/* ---------------------------------------------------------------------- */
/* the first step's depth mask, computed once per builder                  */

static int step0_replay(ar_builder *b, unsigned char *mask, int *any)
{
    ar_step0_cache *k = &b->s0;
    if (!k->valid || k->lookahead != b->opts.lookahead || k->budget != b->opts.lookahead_budget) return 0;
    memcpy(mask, k->mask, sizeof k->mask);
    *any = k->any;
    b->wn = k->wn;
    memcpy(b->wit, k->wit, (size_t)k->wn * sizeof b->wit[0]);
    b->queries += k->queries;
    b->check_fills += k->check_fills;
    b->budget_outs += k->budget_outs;
    if (!k->any) b->infeasible_proven = k->proven;
    return 1;
}

static void step0_record(ar_builder *b, const unsigned char *mask, int any, long q0, long f0, long outs0)
{
    ar_step0_cache *k = &b->s0;
    k->lookahead = b->opts.lookahead;
    k->budget = b->opts.lookahead_budget;
    memcpy(k->mask, mask, sizeof k->mask);
    k->any = any;
    k->proven = b->infeasible_proven;
    k->wn = b->wn;
    memcpy(k->wit, b->wit, (size_t)b->wn * sizeof b->wit[0]);
    k->queries = b->queries - q0;
    k->check_fills = b->check_fills - f0;
    k->budget_outs = b->budget_outs - outs0;
    k->valid = 1;
}

/* One query of the first step's depth search, as query_depths makes it:
 * 1 found, 0 settled without a completion, -1 not settled (the budget ran
 * out, or the search was pinned, which settles nothing). */
static int step0_query(look *L, int depth)
{
    ar_builder *b = L->b;
    long outs = b->budget_outs;
    if (query(L, depth, 0, -1)) return 1;
    return b->budget_outs == outs && L->pin == 0 ? 0 : -1;
}

/* The searches of one depth of the first template, in the order the whole
 * mask asks them:
 *   pass 0: the lookahead budget, stage options most memory first;
 *   pass 1 (when pass 0 ran out of budget): 64x the budget;
 *   pass 2 (when still open): the same, least memory first;
 *   passes 3, 4, ... (ZeRO-1, still open): the bounds judged at 1, 2, 4, ...
 *     replicas that the prefix must pack.
 * Why the later passes: the memory-first order spends the budget on big TP
 * groups that exhaust fragmented node supply; and a prefix of small stages
 * may look like the start of many replicas, each holding a small share of
 * the optimizer state, so the exact bounds prune little there.  The pinned
 * searches find the templates that fit with that replica count's share
 * (their trial fills still decide) and prove nothing.
 * The bounds of a prefix and the trial fills depend on that prefix alone,
 * never on what another depth found, so a depth's outcome is the same
 * searched alone as beside the others; only the 1024x fallback, which runs
 * when no depth was found, needs every depth (step0_merge).  Each depth
 * keeps at most one witness: its search stops at the first completion.
 * b's statistics are left as they were; *p keeps the depth's own. */
#define STEP0_PASS_PIN 3
static void step0_depth(look *L, int depth, ar_step0_part *p)
{
    ar_builder *b = L->b;
    const int keep = b->opts.lookahead_budget, free_total = ar_avail_total(&b->avail);
    long q0 = b->queries, f0 = b->check_fills, o0 = b->budget_outs;
    int r, pass = 0, pin;
    memset(p, 0, sizeof *p);
    p->depth = depth;
    b->wn = 0;
    r = step0_query(L, depth);
    if (r < 0) {
        p->escalated = 1;
        b->opts.lookahead_budget = keep * 64;
        pass = 1;
        r = step0_query(L, depth);
        p->open2 = r < 0;
        if (r < 0) {
            L->ascending = 1;
            pass = 2;
            r = step0_query(L, depth);
            if (b->cm->setup.dist_optimizer) {
                for (pin = 1; pin <= free_total && r < 0; pin *= 2) {
                    L->pin = L->rep = pin;
                    pass = STEP0_PASS_PIN + ar_ilog2(pin);
                    r = step0_query(L, depth);
                }
                L->pin = 0;
                L->rep = 1;
            }
            L->ascending = 0;
        }
        b->opts.lookahead_budget = keep;
    }
    p->found = r > 0;
    p->pass = pass;
    p->open = r < 0;
    if (p->found && b->wn > 0) p->wit = b->wit[b->wn - 1]; /* the only one: the search stops at it */
    p->queries = b->queries - q0;
    p->check_fills = b->check_fills - f0;
    p->budget_outs = b->budget_outs - o0;
    b->queries = q0;
    b->check_fills = f0;
    b->budget_outs = o0;
    b->wn = 0;
}

/* When no depth was found: the proof searches, one per depth whose search
 * with 64x the budget ran out (parts[].open2), with that budget and the
 * tighter bounds (prefix_fits_span).  A search that settles without a
 * completion proves that the depth has none; the depth leaves todo[] (the
 * 1024x searches could only confirm it, slowly).  A completion a proof
 * search finds is not kept: the 1024x searches decide, as they did without
 * it, so the mask and its witnesses stay the same.  Returns whether every
 * such depth was proven. */
static int step0_prove(ar_builder *b, look *L, const ar_step0_part *parts, int n, unsigned char *todo)
{
    const int keep = b->opts.lookahead_budget, wn = b->wn;
    int d, all = 1;
    b->opts.lookahead_budget = keep * 64;
    L->gpus = 1;
    for (d = 0; d < n; d++) {
        if (!parts[d].open2) continue;
        if (step0_query(L, parts[d].depth) == 0) todo[parts[d].depth] = 0;
        else all = 0;
        b->wn = wn;
    }
    L->gpus = 0;
    b->opts.lookahead_budget = keep;
    return all;
}

/* The first step's mask from the parts of depths 1..n (parts[d - 1]) on b
 * and L (set up for step 0): the mask, b's statistics and its witnesses
 * (by depth: a query asks whether any witness matches, so their order
 * does not matter), then, when no depth was found and some is still open,
 * the searches with 1024x the budget in both orders before the model is
 * called infeasible (the failure path only).  Returns whether a depth is
 * allowed. */
static int step0_merge(ar_builder *b, look *L, const ar_step0_part *parts, int n, unsigned char *mask)
{
    unsigned char todo[AR_MAX_CHOICES];
    int d, any = 0, any2 = 0, escalated = 0, open2 = 0;
    memset(todo, 0, sizeof todo);
    b->wn = 0;
    for (d = 0; d < n; d++) {
        const ar_step0_part *p = &parts[d];
        b->queries += p->queries;
        b->check_fills += p->check_fills;
        b->budget_outs += p->budget_outs;
        escalated |= p->escalated;
        open2 |= p->open2;
        todo[p->depth] = (unsigned char)p->open;
        if (!p->found) continue;
        mask[p->depth] = 1;
        any = 1;
        if (p->pass <= 1) any2 = 1;
    }
    for (d = 0; d < n; d++)
        if (parts[d].found && b->wn < AR_MAX_WITNESS) b->wit[b->wn++] = parts[d].wit;
    if (!escalated) {
        /* every search settled at once: none ran out of budget */
        if (!any) b->infeasible_proven = 1;
        return any;
    }
    b->infeasible_proven = !any2 && !open2;
    if (!any && open2) b->infeasible_proven = step0_prove(b, L, parts, n, todo);
    if (!any && any_set(todo, AR_MAX_CHOICES)) {
        int keep = b->opts.lookahead_budget;
        b->opts.lookahead_budget = keep * 1024;
        any = query_depths(L, mask, todo);
        if (!any && any_set(todo, AR_MAX_CHOICES)) {
            L->ascending = 1;
            any = query_depths(L, mask, todo);
            L->ascending = 0;
        }
        b->opts.lookahead_budget = keep;
    }
    return any;
}

/* Depths the first step asks: at most one GPU per stage. */
static int step0_ndepths(const ar_builder *b)
{
    return AR_MIN(b->max_depth, ar_avail_total(&b->base));
}

/* The first step's depth mask on b, searched depth by depth (L set up for
 * step 0), and recorded in b's cache. */
static int step0_search(ar_builder *b, look *L, unsigned char *mask)
{
    ar_step0_part parts[AR_MAX_CHOICES];
    long q0 = b->queries, f0 = b->check_fills, o0 = b->budget_outs;
    int n = step0_ndepths(b), d, any;
    for (d = 1; d <= n; d++) step0_depth(L, d, &parts[d - 1]);
    any = step0_merge(b, L, parts, n, mask);
    step0_record(b, mask, any, q0, f0, o0);
    return any;
}

/* b, its free cluster and an empty plan in scratch, as a run's first step
 * sees them. */
static int step0_setup(ar_builder *b, arachne_plan *scratch, look *L)
{
    int st;
    ar_plan_clear(scratch);
    if ((st = ar_plan_init(scratch, b->cm))) return st;
    if ((st = ar_avail_copy(&b->avail, &b->base))) return st;
    ar_fill_ws_reset(&b->ws);
    memset(L, 0, sizeof *L);
    L->b = b;
    L->plan = scratch;
    L->rep = 1;
    b->wn = 0;
    look_supply(L);
    look_bounds(L);
    return ARACHNE_OK;
}

int ar_builder_step0_depths(const ar_builder *b)
{
    const ar_step0_cache *k = &b->s0;
    if (!b->cm || !b->opts.lookahead) return 0;
    if (k->valid && k->lookahead == b->opts.lookahead && k->budget == b->opts.lookahead_budget) return 0;
    return step0_ndepths(b);
}

int ar_builder_step0_part(ar_builder *b, arachne_plan *scratch, int depth, ar_step0_part *out)
{
    look L;
    int st;
    if (!b || !b->cm || !scratch || !out)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: step 0 part: NULL argument");
    if (depth < 1 || depth > step0_ndepths(b))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: step 0 part: depth %d outside [1, %d]", depth,
                        step0_ndepths(b));
    if ((st = step0_setup(b, scratch, &L))) return st;
    step0_depth(&L, depth, out);
    return ARACHNE_OK;
}

int ar_builder_step0_merge(ar_builder *b, arachne_plan *scratch, const ar_step0_part *parts, int n)
{
    unsigned char mask[AR_MAX_CHOICES];
    long q0, f0, o0;
    look L;
    int st, d;
    if (!b || !b->cm || !scratch || !parts)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: step 0 merge: NULL argument");
    if (n < 1 || n != ar_builder_step0_depths(b))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: step 0 merge: %d parts, the mask asks %d depths", n,
                        ar_builder_step0_depths(b));
    for (d = 0; d < n; d++)
        if (parts[d].depth != d + 1)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: step 0 merge: part %d is of depth %d, not %d", d,
                            parts[d].depth, d + 1);
    if ((st = step0_setup(b, scratch, &L))) return st;
    q0 = b->queries;
    f0 = b->check_fills;
    o0 = b->budget_outs;
    memset(mask, 0, sizeof mask);
    step0_record(b, mask, step0_merge(b, &L, parts, n, mask), q0, f0, o0);
    /* the counts go to the statistics when a run replays the cache */
    b->queries = q0;
    b->check_fills = f0;
    b->budget_outs = o0;
    return ARACHNE_OK;
}

/* ---------------------------------------------------------------------- */
/* the loop                                                                */

static int decide(ar_decide_fn fn, void *user, ar_dec_ctx *c, ar_trace *trace, int *choice)
{
    int st, i;
    c->nallowed = 0;
    for (i = 0; i < c->n; i++) c->nallowed += c->mask[i] ? 1 : 0;
    *choice = -1;
    st = fn(user, c, choice);
    if (st != ARACHNE_OK) return st;
    if (*choice < 0 || *choice >= c->n || !c->mask[*choice])
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: step %d: the decision callback chose %d, "
                        "which is %s", c->step, *choice, *choice < 0 || *choice >= c->n ? "out of range" : "masked");
    return trace_add(trace, c, *choice);
}

/* The REPLICAS decision of a step (opts.replica_first).  On entry mask holds
 * the DEPTH mask for one replica (at least one depth allowed); choice k is
 * allowed when some template of 2^k replicas has a completion (the count is
 * monotone: what does not pack for r does not for 2r, so the scan stops at
 * the first failure).  Then the DEPTH mask is redone for the chosen count
 * and left in mask (STOP kept as it was); L->rep, c->replicas and *r are set. */
static int decide_replicas(ar_builder *b, look *L, ar_decide_fn fn, void *user, ar_dec_ctx *c, ar_trace *trace,
                           unsigned char *mask, unsigned char *dmask, int *rep_min_depth, int *r)
{
    int free_total = ar_avail_total(&b->avail), k, d, choice, st;
    int batch_left = b->cm->setup.global_batch - ar_plan_batch_floor(L->plan);
    memcpy(dmask, mask, AR_MAX_CHOICES);
    memset(mask, 0, AR_MAX_CHOICES);
    for (d = 1; d <= b->max_depth && !dmask[d]; d++) {}
    mask[0] = 1;
    rep_min_depth[0] = d;
    for (k = 1; k < AR_REP_CHOICES; k++) {
        int rk = 1 << k, found = 0;
        if (rk > free_total || rk > batch_left) break;
        L->rep = rk;
        for (d = 1; d <= b->max_depth && d * rk <= free_total && !found; d++)
            if (query(L, d, 0, -1)) found = d;
        if (!found) break;
        mask[k] = 1;
        rep_min_depth[k] = found;
    }
    c->kind = AR_DEC_REPLICAS;
    c->n = k;
    c->rep_min_depth = rep_min_depth;
    st = decide(fn, user, c, trace, &choice);
    if (st) return st;
    *r = 1 << choice;
    L->rep = *r;
    c->replicas = *r;
    c->rep_min_depth = NULL;
    c->kind = AR_DEC_DEPTH;
    c->n = b->max_depth + 1;
    memset(mask, 0, AR_MAX_CHOICES);
    mask[0] = dmask[0];
    /* Under a width r > 1 a depth is allowed when it completes with r
     * replicas, even if the width-free mask refused it: that search can run
     * out of budget where the r-replica one, which prunes more, does not --
     * and the width may have been allowed on such a depth alone. */
    for (d = 1; d <= b->max_depth; d++) {
        if (d * *r > free_total) continue;
        if (*r == 1 ? dmask[d] : query(L, d, 0, -1)) mask[d] = 1;
    }
    return ARACHNE_OK;
}

int ar_builder_run(ar_builder *b, ar_decide_fn fn, void *user, arachne_plan *out, ar_trace *trace)
{
    const arachne_cost_model *cm;
    const arachne_cluster *cl;
    look L;
    unsigned char mask[AR_MAX_CHOICES], dmask[AR_MAX_CHOICES], todo[AR_MAX_CHOICES];
    int types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH], type_left[AR_MAX_TYPES], rep_min_depth[AR_REP_CHOICES];
    int step, st, i;
    ar_dec_ctx c;

    if (!b || !b->cm || !fn || !out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: NULL argument");
    cm = b->cm;
    cl = cm->cluster;
    ar_plan_clear(out);
    st = ar_plan_init(out, cm);
    if (st) return st;
    st = ar_avail_copy(&b->avail, &b->base);
    if (st) return st;
    ar_fill_ws_reset(&b->ws);
    if (trace) ar_trace_reset(trace);
    memset(&L, 0, sizeof L);
    L.b = b;
    L.plan = out;
    L.rep = 1;

    for (step = 0; step < b->opts.max_steps; step++) {
        int depth, s, any = 0, free_total = ar_avail_total(&b->avail), r = 1;
        long outs0 = b->budget_outs, q0 = b->queries, f0 = b->check_fills;
        ar_step_rec *rec = trace ? &trace->steps[trace->nsteps] : NULL;
        double before = out->ntemplates > 0 ? out->iter_per_s : 0.0;
        if (rec) { memset(rec, 0, sizeof *rec); rec->first_dec = trace->ndec; rec->thr_before = before; }
        b->wn = 0;
        look_supply(&L);
        look_bounds(&L);
        memset(&c, 0, sizeof c);
        c.step = step; c.avail = &b->avail; c.plan = out; c.cm = cm; c.max_depth = b->max_depth;
        c.types = types; c.tps = tps; c.type_left = type_left; c.mask = mask;
        for (i = 0; i < cl->ntypes; i++) type_left[i] = b->avail.type_free[i];
        L.rep = 1;

        /* depth */
        c.kind = AR_DEC_DEPTH;
        c.n = b->max_depth + 1;
        memset(mask, 0, sizeof mask);
        if (step == 0 && step0_replay(b, mask, &any)) goto depth_mask_done;
        if (step == 0 && b->opts.lookahead) {
            any = step0_search(b, &L, mask);
            goto depth_mask_done;
        }
        memset(todo, 0, sizeof todo);
        for (depth = 1; depth <= b->max_depth && depth <= free_total; depth++) todo[depth] = 1;
        if (b->opts.lookahead) {
            any = query_depths(&L, mask, todo);
        } else {
            for (depth = 1; depth <= b->max_depth && depth <= free_total; depth++) { mask[depth] = 1; any = 1; }
        }
        if (!any && step == 0) b->infeasible_proven = 1; /* lookahead off: nothing was cut */
        if (step == 0) step0_record(b, mask, any, q0, f0, outs0);
depth_mask_done:
        if (!any) {
            if (step == 0) { st = infeasible_start(b, out); ar_plan_clear(out); ar_plan_init(out, cm); return st; }
            if (rec) { rec->feasible = 1; rec->thr_after = before; trace->nsteps++; }
            break; /* nothing but STOP: the step is STOP */
        }
        mask[0] = step > 0;
        if (b->opts.replica_first) {
            st = decide_replicas(b, &L, fn, user, &c, trace, mask, dmask, rep_min_depth, &r);
            if (st) return st;
        }
        st = decide(fn, user, &c, trace, &depth);
        if (st) return st;
        if (depth == 0) {
            if (rec) { rec->feasible = 1; rec->thr_after = before; trace->nsteps++; }
            break;
        }
        c.depth = depth;
        if (rec) rec->depth = depth;
        for (s = 0; s < depth; s++) {
            int t, k, choice;
            c.stage = s;
            /* GPU type */
            c.kind = AR_DEC_TYPE;
            c.n = cl->ntypes;
            memset(mask, 0, sizeof mask);
            for (t = 0; t < cl->ntypes; t++) {
                if (type_left[t] < r) continue;
                if (b->opts.lookahead) {
                    memcpy(b->q_types, types, (size_t)s * sizeof(int));
                    memcpy(b->q_tps, tps, (size_t)s * sizeof(int));
                    if (!query(&L, depth, s, t)) continue;
                }
                mask[t] = 1;
            }
            for (t = 0, any = 0; t < cl->ntypes; t++) any |= mask[t];
            if (!any) goto template_infeasible; /* only without the lookahead */
            st = decide(fn, user, &c, trace, &choice);
            if (st) return st;
            types[s] = choice;
            /* TP degree */
            c.kind = AR_DEC_TP;
            c.n = b->ntp;
            memset(mask, 0, sizeof mask);
            for (k = 0; k < b->ntp; k++) {
                int tp = 1 << k;
                if (tp > b->avail.type_max_free[choice] || tp * r > type_left[choice]) continue;
                if (b->opts.lookahead) {
                    memcpy(b->q_types, types, (size_t)(s + 1) * sizeof(int));
                    memcpy(b->q_tps, tps, (size_t)s * sizeof(int));
                    b->q_tps[s] = tp;
                    demand_set(&L, s, b->q_types, b->q_tps);
                    if (!demand_push(&L, choice, tp)) continue;
                    if (!query(&L, depth, s + 1, -1)) continue;
                }
                mask[k] = 1;
            }
            for (k = 0, any = 0; k < b->ntp; k++) any |= mask[k];
            if (!any) goto template_infeasible;
            st = decide(fn, user, &c, trace, &k);
            if (st) return st;
            tps[s] = 1 << k;
            type_left[choice] -= tps[s] * r;
        }
        st = ar_fill_template_ws(&b->ws, &b->avail, out, depth, types, tps, AR_FILL_BEST);
        if (st == ARACHNE_E_INFEASIBLE) goto template_infeasible;
        if (st) return st;
        b->fills++;
        if (rec) {
            rec->feasible = 1;
            rec->thr_after = out->iter_per_s;
            rec->rank_after = ar_plan_rank(out);
            rec->reward = out->iter_per_s - before;
            trace->total_reward += rec->reward;
            trace->nsteps++;
        }
        continue;

    template_infeasible:
        /* reached only without the lookahead (or a fill that disagrees with its check) */
        if (rec) {
            rec->feasible = 0;
            rec->thr_after = before;
            rec->reward = step == 0 ? -b->opts.penalty : 0.0;
            trace->total_reward += rec->reward;
            trace->nsteps++;
        }
        if (step == 0) {
            if (!arachne_last_error()[0] || st != ARACHNE_E_INFEASIBLE)
                ar_error(ARACHNE_E_INFEASIBLE, "construct: the first template cannot be completed");
            return ARACHNE_E_INFEASIBLE;
        }
        break;
    }
    return ARACHNE_OK;
}

int ar_construct(const arachne_cost_model *cm, ar_decide_fn fn, void *user, int max_steps,
                 arachne_plan *out, ar_trace *trace)
{
    ar_builder b;
    ar_construct_opts o;
    int st;
    ar_construct_opts_default(&o);
    if (max_steps > 0) o.max_steps = max_steps;
    st = ar_builder_init(&b, cm, &o);
    if (st) return st;
    st = ar_builder_run(&b, fn, user, out, trace);
    ar_builder_free(&b);
    return st;
}

/* ---------------------------------------------------------------------- */
/* enumeration (exhaustive search)                                         */

typedef struct saved_prices {
    double iteration_s, iter_per_s, samples_per_s, tokens_per_s, mfu, bubble;
    int gpus_used, gpus_total;
} saved_prices;

typedef struct enum_ctx {
    ar_builder *b;
    int max_steps;
    double deadline;
    ar_plan_visit_fn fn;
    void *user;
    arachne_plan *plan;
    int types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH];
    ar_template *saved_t;    /* [max_steps][AR_MAX_TEMPLATES] */
    int *saved_free;         /* [max_steps][nnodes] */
    long leaves, nodes;
    long max_nodes;          /* 0: no limit */
    int cut;                 /* the walk stopped at max_nodes */
} enum_ctx;

static int enum_step(enum_ctx *E, int step);

static int enum_leaf(enum_ctx *E, int step, int depth)
{
    ar_builder *b = E->b;
    arachne_plan *p = E->plan;
    int n = p->ntemplates, nr = p->nranks, st, st2;
    saved_prices sp;
    ar_template *tsave = E->saved_t + (size_t)step * AR_MAX_TEMPLATES;
    int *fsave = E->saved_free + (size_t)step * b->avail.nnodes;
    if (E->deadline > 0 && ar_now() >= E->deadline) return ARACHNE_E_CANCELLED;
    sp.iteration_s = p->iteration_s; sp.iter_per_s = p->iter_per_s; sp.samples_per_s = p->samples_per_s;
    sp.tokens_per_s = p->tokens_per_s; sp.mfu = p->mfu; sp.bubble = p->bubble;
    sp.gpus_used = p->gpus_used; sp.gpus_total = p->gpus_total;
    memcpy(tsave, p->t, (size_t)n * sizeof(ar_template));
    memcpy(fsave, b->avail.free, (size_t)b->avail.nnodes * sizeof(int));
    st = ar_fill_template_ws(&b->ws, &b->avail, p, depth, E->types, E->tps, AR_FILL_BEST);
    if (st == ARACHNE_E_INFEASIBLE) return ARACHNE_OK; /* this template does not fit: not a plan */
    if (st) return st;
    b->fills++;
    E->leaves++;
    st = E->fn(E->user, p);
    if (st == ARACHNE_OK && step + 1 < E->max_steps) {
        /* the next step writes its own stages into E->types / E->tps, which
         * this step's enum_stage frames still read: keep this step's */
        int types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH];
        memcpy(types, E->types, sizeof types);
        memcpy(tps, E->tps, sizeof tps);
        st = enum_step(E, step + 1);
        memcpy(E->types, types, sizeof types);
        memcpy(E->tps, tps, sizeof tps);
    }
    /* undo the template */
    p->ntemplates = n;
    p->nranks = nr;
    memcpy(p->t, tsave, (size_t)n * sizeof(ar_template));
    p->iteration_s = sp.iteration_s; p->iter_per_s = sp.iter_per_s; p->samples_per_s = sp.samples_per_s;
    p->tokens_per_s = sp.tokens_per_s; p->mfu = sp.mfu; p->bubble = sp.bubble;
    p->gpus_used = sp.gpus_used; p->gpus_total = sp.gpus_total;
    memcpy(b->avail.free, fsave, (size_t)b->avail.nnodes * sizeof(int));
    ar_avail_refresh(&b->avail, b->cm->cluster);
    ar_fill_ws_reset(&b->ws);
    st2 = st;
    return st2;
}

static int enum_stage(enum_ctx *E, look *L, int step, int depth, int i)
{
    ar_builder *b = E->b;
    const ar_avail *a = &b->avail;
    int t, k, st;
    if (++E->nodes > E->max_nodes && E->max_nodes > 0) {
        E->cut = 1;
        return ar_error(ARACHNE_E_CANCELLED, "enumerate: stopped at the limit of %ld prefixes", E->max_nodes);
    }
    if ((E->nodes & 1023) == 0 && E->deadline > 0 && ar_now() >= E->deadline) return ARACHNE_E_CANCELLED;
    if (!prefix_fits(L, depth, i)) return ARACHNE_OK;
    if (i == depth) return enum_leaf(E, step, depth);
    for (t = 0; t < b->cm->cluster->ntypes; t++) {
        for (k = 0; k < b->ntp; k++) {
            int tp = 1 << k;
            if (tp > a->type_max_free[t]) break;
            if (!demand_push(L, t, tp)) continue;
            E->types[i] = t;
            E->tps[i] = tp;
            L->pcap[i] = tp * L->gpu_cap[t];
                st = enum_stage(E, L, step, depth, i + 1);
            demand_pop(L, t, tp);
            if (st) return st;
        }
    }
    return ARACHNE_OK;
}

static int enum_step(enum_ctx *E, int step)
{
    ar_builder *b = E->b;
    look L;
    int d, st, free_total = ar_avail_total(&b->avail);
    memset(&L, 0, sizeof L);
    L.b = b;
    L.plan = E->plan;
    L.rep = 1;
    look_supply(&L);
    look_bounds(&L);
    for (d = 1; d <= b->max_depth && d <= free_total; d++) {
        memset(L.demand, 0, sizeof L.demand);
        st = enum_stage(E, &L, step, d, 0);
        if (st) return st;
    }
    return ARACHNE_OK;
}

int ar_builder_enumerate(ar_builder *b, int max_steps, double deadline, ar_plan_visit_fn fn, void *user,
                         arachne_plan *plan, long *leaves)
{
    return ar_builder_enumerate_limited(b, max_steps, deadline, 0, fn, user, plan, leaves, NULL);
}

int ar_builder_enumerate_limited(ar_builder *b, int max_steps, double deadline, long max_nodes, ar_plan_visit_fn fn,
                                 void *user, arachne_plan *plan, long *leaves, int *cut)
{
    enum_ctx E;
    int st, rev, moves;
    if (leaves) *leaves = 0;
    if (cut) *cut = 0;
    if (!b || !b->cm || !fn || !plan) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "enumerate: NULL argument");
    if (max_steps < 1 || max_steps > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "enumerate: step limit %d outside [1, %d]", max_steps,
                        AR_MAX_TEMPLATES);
    if (max_nodes < 0) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "enumerate: node limit %ld < 0", max_nodes);
    memset(&E, 0, sizeof E);
    E.b = b; E.max_steps = max_steps; E.deadline = deadline; E.fn = fn; E.user = user; E.plan = plan;
    E.max_nodes = max_nodes;
    ar_plan_clear(plan);
    st = ar_plan_init(plan, b->cm);
    if (!st) st = ar_avail_copy(&b->avail, &b->base);
    if (st) return st;
    ar_fill_ws_reset(&b->ws);
    E.saved_t = (ar_template *)ar_malloc((size_t)max_steps * AR_MAX_TEMPLATES * sizeof(ar_template));
    E.saved_free = (int *)ar_malloc((size_t)max_steps * (size_t)b->avail.nnodes * sizeof(int));
    if (!E.saved_t || !E.saved_free) {
        free(E.saved_t);
        free(E.saved_free);
        return ARACHNE_E_NO_MEMORY;
    }
    /* the enumeration visits every order of every template itself, so the
     * fill's stage reversal and stage moves (ARACHNE_OPT_STAGE_REVERSAL,
     * ARACHNE_OPT_STAGE_MOVES) would only price each leaf again and could
     * make two leaves the same plan */
    rev = b->ws.reverse_stages;
    moves = b->ws.move_stages;
    b->ws.reverse_stages = 0;
    b->ws.move_stages = 0;
    st = enum_step(&E, 0);
    b->ws.reverse_stages = rev;
    b->ws.move_stages = moves;
    free(E.saved_t);
    free(E.saved_free);
    if (leaves) *leaves = E.leaves;
    if (cut) *cut = E.cut;
    return st;
}

int ar_builder_prefix_fits(ar_builder *b, arachne_plan *scratch, int depth, const int *types, const int *tps, int nfixed,
                           int gpus, int *fits)
{
    look L;
    int s, st;
    if (!b || !b->cm || !scratch || !types || !tps || !fits)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: prefix bound: NULL argument");
    *fits = 0;
    if (depth < 1 || depth > AR_SEARCH_MAX_DEPTH || nfixed < 0 || nfixed > depth)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: prefix bound: %d of %d stages", nfixed, depth);
    if ((st = step0_setup(b, scratch, &L))) return st;
    L.gpus = gpus != 0;
    for (s = 0; s < nfixed; s++) {
        if (types[s] < 0 || types[s] >= b->cm->cluster->ntypes || tps[s] < 1 || (tps[s] & (tps[s] - 1)))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "construct: prefix bound: stage %d", s);
        b->q_types[s] = types[s];
        b->q_tps[s] = tps[s];
    }
    *fits = prefix_load(&L, nfixed) && prefix_fits(&L, depth, nfixed);
    return ARACHNE_OK;
}
