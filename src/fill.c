/* fill.c -- the template fill (DESIGN.md section 6).
 *
 * Given a template structure (depth; per stage a GPU type and a TP degree)
 * the fill decides everything arithmetic, by rules and bounded pricing:
 *   1. replicas: the largest count whose TP groups pack into free nodes
 *      (fill_pack.c), capped so every replica gets one micro-batch of the
 *      global batch;
 *   2. micro-batch size: every profiled power of two (largest first);
 *   3. layer split: balanced from the profiled block times (fill_split.c);
 *      when it does not fit, the balanced split within each stage's block
 *      capacity (estimated from its memory, lowered on overflow up to
 *      AR_FILL_MAX_CAPPED times), then a fixed list of alternatives (the balanced
 *      split shifted by 1..AR_FILL_MAX_SHIFT blocks off the overflowing
 *      stage towards either neighbour, the even split, the split in
 *      proportion to each stage's memory), keeping the fastest that fits;
 *      then (ARACHNE_OPT_PRICED_RESPLIT) the balanced split again on the
 *      priced stage times of the fastest, expert all-to-all included;
 *   4. expert tiling of MoE stages (fill_experts.c): start from the most
 *      sharded tiling of every stage (the least memory), take each stage's
 *      fastest candidate with the others fixed, then re-select stage by
 *      stage against the whole iteration until nothing improves;
 *   5. device assignment: ranks template by template, replica by replica,
 *      stage by stage, TP rank.
 * Every candidate is priced as part of the whole plan so far
 * (ar_plan_price); the fastest iteration wins.  The work space holds every
 * buffer, so the candidate loops allocate nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"

/* ---------------------------------------------------------------------- */
/* work space                                                              */

struct stage_tab;
static void stage_tab_free(struct stage_tab *tb);

int ar_fill_ws_init(ar_fill_ws *ws, const arachne_cost_model *cm)
{
    int n, nn;
    memset(ws, 0, sizeof *ws);
    if (!cm || !cm->cluster || !cm->model || !cm->profile)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "fill: cost model is NULL or incomplete");
    ws->cm = cm;
    n = cm->cluster->total_gpus > 0 ? cm->cluster->total_gpus : 1;
    nn = cm->cluster->nnodes > 0 ? cm->cluster->nnodes : 1;
    ws->rank_cap = n;
    ws->place_cap = n;
    ws->nnodes = nn;
    ws->trial.ranks = (ar_rank *)ar_calloc((size_t)n, sizeof(ar_rank));
    ws->node_of = (int *)ar_calloc((size_t)n, sizeof(int));
    ws->gpu_of = (int *)ar_calloc((size_t)n, sizeof(int));
    ws->free_scratch = (int *)ar_calloc((size_t)nn * 3, sizeof(int));
    if (ar_price_prefix_init(&ws->prefix, cm) != ARACHNE_OK || !ws->trial.ranks || !ws->node_of || !ws->gpu_of ||
        !ws->free_scratch) {
        ar_fill_ws_free(ws);
        return ARACHNE_E_NO_MEMORY;
    }
    /* candidates that overflow are expected; find_oom describes the one
     * the fill reports, so pricing need not format a message per candidate */
    ws->prefix.quiet = 1;
    ws->reverse_stages = cm->setup.stage_reversal;
    ws->resplit = cm->setup.priced_resplit;
    ws->move_stages = cm->setup.stage_moves;
    ws->stage_major = cm->setup.stage_major;
    /* off in every fill but the refinement's FSDP fills (its last fills and
     * its FSDP phase, refine.c): a template the
     * fill shards with FSDP is faster alone, but the plan it starts can lose
     * the exact division of the batch that splitting its replicas gives
     * (plan_exact.c; FSDP groups move whole), so FSDP is tried only where
     * the whole plan is ranked before it is kept */
    ws->fsdp_search = 0;
    return ARACHNE_OK;
}

void ar_fill_ws_free(ar_fill_ws *ws)
{
    if (!ws) return;
    free(ws->trial.ranks);
    free(ws->node_of);
    free(ws->gpu_of);
    free(ws->free_scratch);
    free(ws->rev_ctx);
    free(ws->fsdp_ctx);
    stage_tab_free(ws->stage_tab);
    ar_price_prefix_free(&ws->prefix);
    memset(ws, 0, sizeof *ws);
}

void ar_fill_ws_reset(ar_fill_ws *ws)
{
    ws->trial_synced = 0;
    ar_price_prefix_reset(&ws->prefix);
}

/* Makes ws->trial mirror plan (templates, ranks, setup, prices) and
 * summarises the placement of the plan's templates. */
static int ws_sync(ar_fill_ws *ws, const arachne_plan *plan)
{
    ar_rank *keep = ws->trial.ranks;
    int j, st;
    if (ws->trial_synced && ws->trial.ntemplates == plan->ntemplates && ws->trial.nranks == plan->nranks)
        return ARACHNE_OK;
    if (plan->nranks > ws->rank_cap || plan->ntemplates < 0 || plan->ntemplates > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_PLAN, "fill: the plan holds %d ranks for a cluster of %d GPUs",
                        plan->nranks, ws->rank_cap);
    ar_price_prefix_reset(&ws->prefix);
    st = ar_plan_place(plan, ws->place);
    if (st) return st;
    for (j = 0; j < plan->ntemplates; j++) ar_template_copy(&ws->trial.t[j], &plan->t[j]);
    ws->trial.ntemplates = plan->ntemplates;
    memcpy((char *)&ws->trial + offsetof(arachne_plan, nranks), (const char *)plan + offsetof(arachne_plan, nranks),
           sizeof(arachne_plan) - offsetof(arachne_plan, nranks));
    ws->trial.ranks = keep;
    ws->trial.json_cache = NULL;
    if (plan->nranks > 0 && plan->ranks)
        memcpy(keep, plan->ranks, (size_t)plan->nranks * sizeof(ar_rank));
    ws->trial_synced = 1;
    return ARACHNE_OK;
}

int ar_plan_batch_floor(const arachne_plan *plan)
{
    int j, n = 0;
    /* an interleaved template runs its micro-batches in groups of its depth */
    for (j = 0; j < plan->ntemplates; j++)
        n += plan->t[j].replicas * plan->t[j].micro_batch * (plan->t[j].vp > 1 ? plan->t[j].depth : 1);
    return n;
}

/* ---------------------------------------------------------------------- */
/* one fill                                                                */

typedef struct fill_ctx {
    ar_fill_ws *ws;
    const arachne_cost_model *cm;
    const arachne_plan *plan;
    int n;                       /* index of the new template */
    int depth;
    const int *types, *tps;      /* tps[s]: GPUs of one replica of stage s (tp x cp) */
    int cp;                      /* context-parallel degree of the candidate (1: off) */
    int ttp[AR_MAX_DEPTH];       /* TP degree of stage s: tps[s] / cp */
    int moe[AR_MAX_DEPTH];       /* stage holds MoE blocks (depends on split) */
    int r;                       /* replicas of the candidate */
    int mbs;
    int placed_r;                /* replica count ws->node_of holds (0: none) */
    int stage_major;             /* placement order (ar_pack_place): 1 Megatron's, 0 replica by replica */
    int nranks_new;              /* trial rank count with the placed replicas */
    int tiles_w;                 /* W the tile lists were built for (tp*r) */
    int fsdp;                    /* FSDP group of the candidate: consecutive replicas (0: none) */
    unsigned oom_mbs[AR_MAX_TP_LOG + 2]; /* per CP choice, bit log2(mbs): memory refused the size or
                                          * its balanced split (BEST; what the FSDP search retries) */
    int mode;
    /* The arrays below are written before they are read (build_tiles when
     * tiles_w != r, place, the micro-batch loop), so a fill clears only the
     * fields above: clearing ~20 KB per fill cost 4.6 % of a rollout. */
    ar_stage_speed sp[AR_MAX_DEPTH];
    ar_tile tiles[AR_MAX_DEPTH][AR_MAX_TILES];
    int ntiles[AR_MAX_DEPTH];
    unsigned char tile_inter[AR_MAX_DEPTH][AR_MAX_TILES]; /* EP groups span nodes (for the placement) */
    ar_stage_place pl[AR_MAX_DEPTH]; /* placement summary of the placed replicas */
} fill_ctx;

typedef struct fill_cand {
    int valid, mbs, r, cp, fsdp;
    int stage_major;             /* placed in Megatron's order (ARACHNE_OPT_STAGE_MAJOR) */
    int firsts[AR_MAX_DEPTH + 1];
    int tile[AR_MAX_DEPTH];      /* index into ctx->tiles[s] (MoE stages) */
    double iter_s;
} fill_cand;

/* Overflow information of the last OOM pricing. */
typedef struct oom_info { int stage; double need, have; int first, end, mbs; } oom_info;

static int stage_is_moe(const arachne_model *m, int first, int end)
{
    int b;
    if (m->experts <= 0) return 0;
    for (b = first; b < end; b++) if (ar_model_block_routed(m, b)) return 1;
    return 0;
}

static void build_tiles(fill_ctx *c)
{
    int s;
    if (c->tiles_w == c->r) return;
    for (s = 0; s < c->depth; s++) {
        int w = c->tps[s] * c->r, q;
        /* stages of one TP and CP degree have the same list */
        for (q = 0; q < s && (c->tps[q] != c->tps[s] || c->ttp[q] != c->ttp[s]); q++) {}
        if (q < s) {
            memcpy(c->tiles[s], c->tiles[q], (size_t)c->ntiles[q] * sizeof c->tiles[q][0]);
            c->ntiles[s] = c->ntiles[q];
            continue;
        }
        if (c->cm->setup.expert_tiling && c->cm->model->experts > 0) {
            c->ntiles[s] = ar_tiles_enumerate(w, c->ttp[s], c->cm->model->experts, c->tiles[s], AR_MAX_TILES);
        } else {
            c->tiles[s][0].ep = 1; c->tiles[s][0].etp = c->ttp[s]; c->tiles[s][0].edp = c->r * c->cp;
            c->ntiles[s] = 1;
        }
        if (c->ntiles[s] < 1) { /* cannot happen (1 x 1 x W always qualifies) */
            c->tiles[s][0].ep = 1; c->tiles[s][0].etp = 1; c->tiles[s][0].edp = w;
            c->ntiles[s] = 1;
        }
    }
    c->tiles_w = c->r;
}

/* Writes the ranks of the placement in ws->node_of / gpu_of (replicas c->r)
 * after the plan's ranks in the trial. */
/* Writes the trial's ranks of the placed replicas.  Only the commit needs
 * them: candidate pricing reads the placement summary (c->pl), so a fill
 * that prices many candidates writes its O(GPUs) ranks once. */
static void put_ranks(fill_ctx *c)
{
    ar_fill_ws *ws = c->ws;
    int s, q, k, rk = c->plan->nranks;
    for (q = 0; q < c->r; q++)
        for (s = 0; s < c->depth; s++)
            for (k = 0; k < c->tps[s]; k++) {
                ar_rank *R = &ws->trial.ranks[rk];
                R->rank = rk;
                R->node = ws->node_of[q * c->depth + s];
                R->gpu = ws->gpu_of[q * c->depth + s] + k;
                R->tmpl = c->n; R->replica = q; R->stage = s;
                R->tp_rank = k % c->ttp[s]; R->cp_rank = k / c->ttp[s]; /* TP fastest, then CP */
                rk++;
            }
}

/* Whether an FSDP group of each stage (c->fsdp consecutive replicas) spans
 * nodes, as pricing a plan's ranks decides it: a replica's TP x CP group
 * sits in one node, so its stage's node (node_of) stands for its GPUs. */
static void fsdp_inter_update(fill_ctx *c)
{
    int s;
    for (s = 0; s < c->depth; s++)
        c->pl[s].fsdp_inter = ar_fsdp_spans_nodes(c->ws->node_of + s, c->r, c->depth, 1, c->fsdp);
}

/* Stage placement summary (one node or several; p2p across nodes) and,
 * for every tiling candidate, whether an EP group spans nodes.  The W GPUs
 * of a stage are numbered g = replica * tp + tp_rank; expert groups are laid
 * out ETP innermost, then EP, then EDP: g = e_t + ETP * (e_p + EP * e_d). */
static void summarise_place(fill_ctx *c)
{
    const int *no = c->ws->node_of;
    int s, q, i, d = c->depth;
    for (s = 0; s < d; s++) {
        ar_stage_place *p = &c->pl[s];
        p->node = no[s];
        p->p2p_inter = 0;
        p->ep_inter = 0;
        for (q = 0; q < c->r; q++) {
            if (no[q * d + s] != p->node) p->node = -1;
            /* the last stage: its wrap to stage 0 (used by interleaved 1F1B only) */
            if (d > 1 && no[q * d + s] != no[q * d + (s + 1) % d]) p->p2p_inter = 1;
        }
        /* replicas of the stage per node (TP groups sit whole in one
         * node); free_scratch is the packer's scratch, free again here */
        {
            int *cnt = c->ws->free_scratch, least = -1, most = 1;
            for (q = 0; q < c->r; q++) cnt[no[q * d + s]] = 0;
            for (q = 0; q < c->r; q++) cnt[no[q * d + s]]++;
            for (q = 0; q < c->r; q++)
                if (cnt[no[q * d + s]] > 0) {
                    if (least < 0 || cnt[no[q * d + s]] < least) least = cnt[no[q * d + s]];
                    if (cnt[no[q * d + s]] > most) most = cnt[no[q * d + s]];
                    cnt[no[q * d + s]] = 0;
                }
            /* every CP rank of a replica is a data-parallel peer too */
            p->dp_local = (least > 1 ? least : 1) * c->cp;
            p->dp_most = most * c->cp;
        }
        p->cp_inter = 0; /* a stage's tp x cp GPUs of one replica sit in one node */
        p->cp_hop = c->cp > 1;
        /* a trial fill prices the most sharded tiling (index 0) only */
        for (i = 0; i < (c->mode == AR_FILL_CHECK ? 1 : c->ntiles[s]); i++) {
            const ar_tile *tl = &c->tiles[s][i];
            int tp = c->tps[s], et, ed, ep, inter = 0;
            if (p->node >= 0 || tl->ep <= 1) { c->tile_inter[s][i] = 0; continue; }
            for (ed = 0; ed < tl->edp && !inter; ed++)
                for (et = 0; et < tl->etp && !inter; et++) {
                    int g0 = et + tl->etp * (tl->ep * ed);
                    int n0 = no[(g0 / tp) * d + s];
                    for (ep = 1; ep < tl->ep; ep++) {
                        int g = et + tl->etp * (ep + tl->ep * ed);
                        if (no[(g / tp) * d + s] != n0) { inter = 1; break; }
                    }
                }
            c->tile_inter[s][i] = (unsigned char)inter;
        }
    }
    fsdp_inter_update(c);
}

/* Places c->r replicas (unless already placed) and writes their ranks. */
static int place(fill_ctx *c, const ar_avail *a)
{
    int st;
    if (c->placed_r == c->r) return ARACHNE_OK;
    st = ar_pack_place(c->cm->cluster, a, c->depth, c->types, c->tps, c->r, c->stage_major, c->ws->node_of,
                       c->ws->gpu_of, c->ws->free_scratch);
    if (st) return st;
    c->placed_r = c->r;
    {
        int s, per = 0;
        for (s = 0; s < c->depth; s++) per += c->tps[s];
        c->nranks_new = c->plan->nranks + c->r * per;
    }
    summarise_place(c);
    return ARACHNE_OK;
}

/* Writes the candidate template into trial slot n. */
static void put_template(fill_ctx *c, const int *firsts, const int *tile)
{
    ar_fill_ws *ws = c->ws;
    ar_template *t = &ws->trial.t[c->n];
    int s;
    memset(t->stages, 0, (size_t)c->depth * sizeof(ar_stage)); /* the used slots only: a template has 128 */
    t->micro_batches = 0;
    t->pipeline_s = 0.0;
    t->vp = 0;             /* interleaving is tried on the chosen candidate only (choose_vp) */
    t->depth = c->depth;
    t->replicas = c->r;
    t->micro_batch = c->mbs;
    t->cp = c->cp > 1 ? c->cp : 0;
    t->fsdp = c->fsdp > 1 ? c->fsdp : 0;
    for (s = 0; s < c->depth; s++) {
        ar_stage *st = &t->stages[s];
        st->type = c->types[s];
        st->tp = c->ttp[s];
        st->first = firsts[s];
        st->end = firsts[s + 1];
        ws->place[c->n][s] = c->pl[s];
        if (c->moe[s]) {
            int i = tile ? tile[s] : 0;
            const ar_tile *tl = &c->tiles[s][i];
            st->ep = tl->ep; st->etp = tl->etp; st->edp = tl->edp;
            ws->place[c->n][s].ep_inter = c->tile_inter[s][i];
        } else {
            st->ep = 1; st->etp = 1; st->edp = c->tps[s] * c->r;
            ws->place[c->n][s].ep_inter = 0;
        }
    }
    ws->trial.ntemplates = c->n + 1;
    ws->trial.nranks = c->nranks_new;
}

/* One stage of the least-memory screen: 1 when stage s of t fits at its
 * least memory (optimizer state shared by every replica of the cluster,
 * one micro-batch in flight), 0 when not (*mm: need and capacity), -1 when
 * its memory cannot be computed (pricing reports why).  (An upper bound
 * that would let a candidate skip the memory check of pricing saves
 * nothing: pricing computes the memory anyway.) */
static int stage_screen(const arachne_cost_model *cm, const ar_template *t, int s, ar_stage_mem *mm)
{
    if (ar_stage_memory(cm, t, s, 1 << 30, 1 << 30, 1, mm) != ARACHNE_OK) return -1;
    return mm->total <= mm->capacity;
}

/* What the fill has computed of one stage of its candidate, kept for one
 * context: a micro-batch size, replica count and CP degree with their
 * placement, on top of the plan's templates.  Within a context the
 * candidates differ in their layer split and their expert tilings, and what
 * a stage's least-memory screen, its per-micro-batch times, its
 * gradient-ring terms and its memory at a micro-batch count depend on is
 * the stage's own block range and tiling (with the context and the
 * template's GPU types, which are fixed): a neighbour enters only through
 * its GPU type and the placement.  So each is computed once per (stage,
 * range, tiling) and context; the pricer gets the stage's memo
 * (ar_stage_memo) and computes only what couples the stages (the exposed
 * sync, the batch division, the pipeline).  Same arithmetic on the same
 * inputs: bit-identical prices.
 *
 * Each stage has AR_STAGE_SLOTS slots, indexed by tiling + a hash of the
 * range: the tilings of one range never share a slot (AR_STAGE_SLOTS >=
 * AR_MAX_TILES), so the expert-tiling search of one split keeps all of its
 * stages' results; ranges that meet in a slot just compute again. */
#define AR_STAGE_SLOTS 64
#define ENTRY_FIT 1u   /* fit, need, cap are set */
#define ENTRY_TIMES 2u /* times_st and memo.times are set */
#define ENTRY_OOM 4u   /* oom_st, oom_need, oom_cap are set (find_oom) */

typedef struct stage_entry {
    unsigned gen;               /* == stage_tab.gen: the key is this context's */
    int first, end, tile;       /* the key: block range, tiling index (0: no MoE block) */
    unsigned have;              /* ENTRY_FIT | ENTRY_TIMES */
    int fit;                    /* stage_screen's answer */
    double need, cap;           /* its figures (what a stage that does not fit reports) */
    int times_st;               /* ar_stage_price_checked's status for memo.times */
    int oom_st;                 /* find_oom's figures: status, need, capacity */
    double oom_need, oom_cap;
    ar_stage_memo memo;
} stage_entry;

/* One row of slots per stage position, allocated when a candidate of that
 * depth first needs it (a row is 17 KB; a whole table would be zeroed on
 * every work space's first fill, which is measurable in a greedy plan). */
typedef struct stage_tab {
    unsigned gen;
    stage_entry *row[AR_MAX_DEPTH];
} stage_tab;

static void stage_tab_free(stage_tab *tb)
{
    int s;
    if (!tb) return;
    for (s = 0; s < AR_MAX_DEPTH; s++) free(tb->row[s]);
    free(tb);
}

/* A new context (after place()): the table's entries are stale.  The table
 * is allocated at first use; without it (allocation failed, or the plain
 * search asked for) every candidate is priced whole. */
static void stage_tab_begin(ar_fill_ws *ws)
{
    stage_tab *tb = ws->stage_tab;
    int s;
    if (ws->plain_tile_search) return;
    if (!tb && !(tb = ws->stage_tab = ar_calloc(1, sizeof *tb))) return;
    if (++tb->gen == 0) { /* wrapped: clear the marks */
        for (s = 0; s < AR_MAX_DEPTH; s++)
            if (tb->row[s]) memset(tb->row[s], 0, AR_STAGE_SLOTS * sizeof *tb->row[s]);
        tb->gen = 1;
    }
}

/* Stage s's entry for its range and tiling, emptied when it held another
 * key or another context's; NULL when its row cannot be allocated. */
static stage_entry *stage_entry_get(stage_tab *tb, int s, const ar_stage *st, int tile)
{
    stage_entry *e;
    if (!tb->row[s] && !(tb->row[s] = ar_calloc(AR_STAGE_SLOTS, sizeof *tb->row[s]))) return NULL;
    e = &tb->row[s][(unsigned)(tile + 7 * st->first + 13 * st->end) & (AR_STAGE_SLOTS - 1)];
    if (e->gen != tb->gen || e->first != st->first || e->end != st->end || e->tile != tile) {
        e->gen = tb->gen;
        e->first = st->first;
        e->end = st->end;
        e->tile = tile;
        e->have = 0;
    }
    return e;
}

/* Names the stage that overflows (oi) after the pricer found the candidate
 * out of memory: the pricer stops at the first stage that does not fit and
 * keeps no memory figures, so they are recomputed, with M = depth (every
 * stage holds its full 1F1B warm-up), and the stage with the largest need
 * over capacity is named.  ent (NULL: none) are the candidate's stage
 * entries, which keep these figures for the context. */
static void find_oom(fill_ctx *c, oom_info *oi, stage_entry *const *ent)
{
    const ar_template *t = &c->ws->trial.t[c->n];
    double best = 0.0;
    int s, j, R = 0;
    for (j = 0; j <= c->n; j++) R += c->ws->trial.t[j].replicas * ar_tmpl_cp(&c->ws->trial.t[j]);
    oi->stage = -1;
    for (s = 0; s < c->depth; s++) {
        stage_entry *e = ent ? ent[s] : NULL;
        double need, cap;
        if (e && (e->have & ENTRY_OOM)) {
            if (e->oom_st != ARACHNE_OK) continue;
            need = e->oom_need; cap = e->oom_cap;
        } else {
            ar_stage_mem mm;
            int st = ar_stage_memory(c->cm, t, s, R, t->stages[s].edp, c->depth, &mm);
            need = mm.total; cap = mm.capacity;
            if (e) { e->oom_st = st; e->oom_need = need; e->oom_cap = cap; e->have |= ENTRY_OOM; }
            if (st != ARACHNE_OK) continue;
        }
        if (cap > 0 && need / cap > best) {
            best = need / cap; oi->stage = s; oi->need = need; oi->have = cap;
            oi->first = t->stages[s].first; oi->end = t->stages[s].end;
        }
    }
}

/* Prices trial = plan + candidate (split firsts, tilings tile).  OK
 * (iteration in *iter_s), ARACHNE_E_OUT_OF_MEMORY_PLAN (oi, when not NULL,
 * names the stage that overflows), or another pricing error.  A stage that
 * does not fit even at its least memory stops it before the pricer. */
static int price(fill_ctx *c, const int *firsts, const int *tile, double *iter_s, oom_info *oi)
{
    ar_fill_ws *ws = c->ws;
    stage_tab *tb = ws->plain_tile_search ? NULL : ws->stage_tab;
    const ar_template *t;
    ar_stage_memo *memo[AR_MAX_DEPTH];
    stage_entry *ent[AR_MAX_DEPTH];
    int s, st, all, screened;
    put_template(c, firsts, tile);
    t = &ws->trial.t[c->n];
    for (s = 0; s < c->depth; s++) {
        const ar_stage *S = &t->stages[s];
        ar_stage_mem mm;
        stage_entry *e = NULL;
        int fit;
        double need, cap;
        if (tb && !(e = ent[s] = stage_entry_get(tb, s, S, c->moe[s] && tile ? tile[s] : 0)))
            tb = NULL; /* no row: this candidate is priced whole */
        if (e && (e->have & ENTRY_FIT)) {
            fit = e->fit; need = e->need; cap = e->cap;
        } else {
            fit = stage_screen(c->cm, t, s, &mm);
            need = mm.total; cap = mm.capacity;
            if (e) { e->fit = fit; e->need = need; e->cap = cap; e->have |= ENTRY_FIT; }
        }
        if (fit < 0) break; /* pricing reports it */
        if (!fit) {
            if (oi) { oi->stage = s; oi->need = need; oi->have = cap; oi->first = S->first; oi->end = S->end; }
            return ARACHNE_E_OUT_OF_MEMORY_PLAN;
        }
    }
    /* memos only when every stage passed its checks (the screen ran
     * ar_stage_check) and priced; else the pricer reports the failure */
    screened = tb && s == c->depth; /* every stage has its entry */
    all = screened;
    for (s = 0; s < c->depth && all; s++) {
        stage_entry *e = ent[s]; /* distinct rows: no stage's lookup evicted another's */
        if (!(e->have & ENTRY_TIMES)) {
            e->memo.have = 0;
            e->times_st = ar_stage_price_checked(c->cm, t, s, &ws->place[c->n][s], &e->memo.times);
            e->have |= ENTRY_TIMES;
        }
        memo[s] = &e->memo;
        all = e->times_st == ARACHNE_OK;
    }
    ws->prefix.last_memo = all ? memo : NULL;
    st = ar_plan_price_prefix(c->cm, &ws->trial, (const ar_stage_place (*)[AR_MAX_DEPTH])ws->place, &ws->prefix);
    ws->prefix.last_memo = NULL;
    ws->pricings++;
    if (st == ARACHNE_OK) { *iter_s = ws->trial.iteration_s; return st; }
    if (st == ARACHNE_E_OUT_OF_MEMORY_PLAN && oi) find_oom(c, oi, screened ? ent : NULL);
    return st;
}

/* Optimises the tiling of the MoE stages for a split that fits with the
 * most sharded tiling (tile[] all 0, exact iteration *iter_s).  The search
 * compares tilings by the closed-form pipeline time (an upper bound on the
 * exact one, and many times cheaper); the tiling it picks is then priced
 * exactly and kept only if it beats the most sharded one exactly too. */
static void optimise_tiles(fill_ctx *c, const int *firsts, int *tile, double *iter_s)
{
    int best_tile[AR_MAX_DEPTH], seen[AR_MAX_DEPTH], s, i, pass, changed, nchanges = 0;
    double exact0 = *iter_s, base, it;
    int any = 0;
    for (s = 0; s < c->depth; s++) if (c->moe[s] && c->ntiles[s] > 1) any = 1;
    if (!any) return;
    c->ws->prefix.bound_only = 1;
    if (price(c, firsts, tile, &base, NULL) != ARACHNE_OK) { c->ws->prefix.bound_only = 0; return; }
    *iter_s = base;
    /* per stage: fastest with the other stages at the most sharded tiling */
    for (s = 0; s < c->depth; s++) {
        double bs = base;
        best_tile[s] = 0;
        if (!c->moe[s]) continue;
        for (i = 1; i < c->ntiles[s]; i++) {
            tile[s] = i;
            if (price(c, firsts, tile, &it, NULL) == ARACHNE_OK && it < bs) { bs = it; best_tile[s] = i; }
        }
        tile[s] = 0;
    }
    memcpy(tile, best_tile, (size_t)c->depth * sizeof(int));
    if (price(c, firsts, tile, &it, NULL) != ARACHNE_OK || it > base) {
        /* per-stage picks did not combine: start from the most sharded */
        memset(tile, 0, (size_t)c->depth * sizeof(int));
        it = base;
    }
    *iter_s = it;
    /* re-select against the whole iteration, stage by stage.  A stage whose
     * every alternative was priced against the tilings the other stages
     * still have (no change since: seen[s] == nchanges) is skipped: each
     * would price as before, and none beat the stage's choice then, which
     * is the current iteration.  The passes, their changes and the result
     * are those of trying every stage. */
    for (s = 0; s < c->depth; s++) seen[s] = -1;
    for (pass = 0, changed = 1; changed && pass < 8; pass++) {
        changed = 0;
        for (s = 0; s < c->depth; s++) {
            int keep = tile[s];
            if (!c->moe[s] || (seen[s] == nchanges && !c->ws->plain_tile_search)) continue;
            for (i = 0; i < c->ntiles[s]; i++) {
                if (i == keep) continue;
                tile[s] = i;
                if (price(c, firsts, tile, &it, NULL) == ARACHNE_OK && it < *iter_s) {
                    *iter_s = it; keep = i; changed = 1; nchanges++;
                }
            }
            tile[s] = keep;
            seen[s] = nchanges;
        }
    }
    c->ws->prefix.bound_only = 0;
    for (s = 0; s < c->depth && !tile[s]; s++) {}
    if (s == c->depth || price(c, firsts, tile, &it, NULL) != ARACHNE_OK || !(it < exact0)) {
        memset(tile, 0, (size_t)c->depth * sizeof(int));
        *iter_s = exact0;
    } else *iter_s = it;
}

/* Evaluates one split: most sharded tiling first (the memory test), then
 * (BEST) the tiling search.  Updates *best. */
static int eval_split(fill_ctx *c, const int *firsts, fill_cand *best, oom_info *oi)
{
    int tile[AR_MAX_DEPTH], s, st;
    double it;
    for (s = 0; s < c->depth; s++) {
        c->moe[s] = stage_is_moe(c->cm->model, firsts[s], firsts[s + 1]);
        tile[s] = 0;
    }
    st = price(c, firsts, tile, &it, oi);
    if (st != ARACHNE_OK) return st;
    if (c->mode == AR_FILL_CHECK) return ARACHNE_OK;
    optimise_tiles(c, firsts, tile, &it);
    if (!best->valid || it < best->iter_s) {
        best->valid = 1; best->mbs = c->mbs; best->r = c->r; best->cp = c->cp; best->iter_s = it;
        best->fsdp = c->fsdp;
        best->stage_major = c->stage_major;
        memcpy(best->firsts, firsts, (size_t)(c->depth + 1) * sizeof(int));
        memcpy(best->tile, tile, (size_t)c->depth * sizeof(int));
        for (s = 0; s < c->depth; s++) if (!c->moe[s]) best->tile[s] = 0;
    }
    return ARACHNE_OK;
}

/* The splits one micro-batch size has priced, with their outcome: the
 * capped split and the fixed alternatives often coincide, and pricing a
 * split again (for MoE models, its whole expert-tiling search) cannot
 * change the result, since the best candidate is only replaced by a
 * strictly faster one. */
#define AR_SPLIT_MEMO 24
typedef struct split_memo {
    int n;
    int firsts[AR_SPLIT_MEMO][AR_MAX_DEPTH + 1];
    int st[AR_SPLIT_MEMO];
    oom_info oi[AR_SPLIT_MEMO];
} split_memo;

static int eval_split_once(fill_ctx *c, split_memo *mm, const int *firsts, fill_cand *best, oom_info *oi)
{
    size_t len = (size_t)(c->depth + 1) * sizeof(int);
    int i, st;
    for (i = 0; i < mm->n; i++)
        if (memcmp(mm->firsts[i], firsts, len) == 0) {
            *oi = mm->oi[i];
            return mm->st[i];
        }
    st = eval_split(c, firsts, best, oi);
    if (mm->n < AR_SPLIT_MEMO) {
        memcpy(mm->firsts[mm->n], firsts, len);
        mm->st[mm->n] = st;
        mm->oi[mm->n] = *oi;
        mm->n++;
    }
    return st;
}

/* Capacity weights: how many blocks each stage could hold, from its usable
 * memory, the sharding of its weights (TP; experts at most over the
 * stage's W = tp * replicas GPUs) and the micro-batches it keeps in flight
 * (1F1B: stage s of p holds min(p - s, M)).  Splitting in proportion to
 * them lets deep pipelines of large models give the early stages, which
 * hold the most activations, fewer blocks. */
static void capacity_weights(const fill_ctx *c, double *w)
{
    const arachne_cost_model *cm = c->cm;
    const arachne_model *m = cm->model;
    const ar_setup *su = &cm->setup;
    int kind = m->experts > 0 ? AR_LAYER_MOE : AR_LAYER_DENSE, s;
    int M = su->global_batch / AR_MAX(1, c->r * c->mbs);
    double p_all = m->params[kind], p_exp = m->expert_params[kind];
    if (m->pattern[0]) ar_model_mean_layer(m, &p_all, &p_exp); /* layers of a hybrid differ: their mean */
    if (M < 1) M = 1;
    for (s = 0; s < c->depth; s++) {
        int tp = c->ttp[s], W = c->tps[s] * AR_MAX(1, c->r), cp = c->cp;
        double optim = su->dist_optimizer ? su->optim_bytes / AR_MAX(1, c->r * cp) : su->optim_bytes;
        /* FSDP shards gradients and optimizer state over its group and
         * gathers the weights of two blocks at a time (cost_memory.c) */
        double per_param = c->fsdp > 1 ? (su->grad_bytes + su->optim_bytes) / c->fsdp
                                       : su->weight_bytes + su->grad_bytes + optim;
        double shard = su->expert_tiling && m->experts > 0 ? (double)W : (double)tp;
        double fixed = ((p_all - p_exp) / tp + p_exp / shard) * per_param;
        double act = ar_model_act_bytes(m, kind, su->seq_len, c->mbs, tp, ar_setup_act_mode(su)) / cp;
        double usable = cm->cluster->types[c->types[s]].mem_bytes * (1.0 - su->headroom) - AR_FRAMEWORK_OVERHEAD_BYTES;
        double per_block = fixed + AR_MIN(c->depth - s, M) * act;
        /* the embedding lives on the first stage, the head on the last */
        if (s == 0)
            usable -= m->params[AR_LAYER_EMBED] / tp * per_param +
                      AR_MIN(c->depth, M) * ar_model_act_bytes(m, AR_LAYER_EMBED, su->seq_len, c->mbs, tp, su->recompute) / cp;
        if (s == c->depth - 1)
            usable -= m->params[AR_LAYER_HEAD] / tp * per_param +
                      ar_model_act_bytes(m, AR_LAYER_HEAD, su->seq_len, c->mbs, tp, su->recompute) / cp;
        w[s] = per_block > 0 && usable > 0 ? usable / per_block : 0.0;
        if (w[s] < 0.05) w[s] = 0.05;
    }
}

/* One micro-batch size's capacity weights, computed when a split first
 * needs them (the capped split, once the balanced one runs out of memory):
 * a size whose balanced split fits, as most do in CHECK's lookahead fills
 * too, never does.  They depend only on the size's replicas, CP degree and
 * stages, which stay fixed while its splits are searched. */
typedef struct cap_weights {
    int have;
    double w[AR_MAX_DEPTH];
} cap_weights;

static const double *cap_weights_get(const fill_ctx *c, cap_weights *cw)
{
    if (!cw->have) {
        capacity_weights(c, cw->w);
        cw->have = 1;
    }
    return cw->w;
}

/* The balanced split within the stages' block capacities caps[] (from
 * capacity_weights), on per-block times sp: a cap the estimate set too
 * high is lowered to what the overflowing stage held less one, and the
 * split searched again.  Returns 1 when a split fitted. */
static int eval_capped(fill_ctx *c, split_memo *mm, const ar_stage_speed *sp, int *caps, fill_cand *best)
{
    int alt[AR_MAX_DEPTH + 1], k, st;
    oom_info oi;
    for (k = 0; k < AR_FILL_MAX_CAPPED; k++) {
        if (!ar_split_balanced_capped(c->cm->model, c->depth, sp, caps, alt)) break;
        oi.stage = -1;
        st = eval_split_once(c, mm, alt, best, &oi);
        if (st == ARACHNE_OK) return 1;
        if (st != ARACHNE_E_OUT_OF_MEMORY_PLAN || oi.stage < 0) break;
        caps[oi.stage] = alt[oi.stage + 1] - alt[oi.stage] - 1;
    }
    return 0;
}

/* Block capacities from the capacity weights (at most the model's blocks). */
static void caps_from_weights(const fill_ctx *c, const double *capw, int *caps)
{
    int s, nb = c->cm->model->blocks;
    for (s = 0; s < c->depth; s++) caps[s] = capw[s] >= (double)nb ? nb : (int)capw[s];
}

/* The split on the priced stage times.  The split weighs each stage's
 * blocks by the profile (compute and TP collectives), but the priced
 * stage also pays what the split cannot see before the expert tiling is
 * chosen: the expert all-to-all (across nodes when an EP group spans
 * them) and the other terms of the cost model.  A stage the tiling made
 * slow then sets the pipeline's pace while its neighbours wait.  So the
 * best candidate of this micro-batch size is priced, each stage's blocks
 * are scaled by priced / profiled time, and the balanced split (within
 * the capacities when it does not fit) is searched again on those times;
 * the new candidate is kept only when it prices faster.  Up to
 * AR_FILL_RESPLIT_ROUNDS rounds, since the new split's tiling can differ. */
static void resplit_on_prices(fill_ctx *c, split_memo *mm, fill_cand *loc, cap_weights *cw)
{
    const arachne_model *m = c->cm->model;
    ar_stage_speed sp2[AR_MAX_DEPTH];
    int firsts[AR_MAX_DEPTH + 1], prev[AR_MAX_DEPTH + 1], caps[AR_MAX_DEPTH], round, s, k;
    size_t len = (size_t)(c->depth + 1) * sizeof(int);
    if (c->depth < 2) return;
    for (round = 0; round < AR_FILL_RESPLIT_ROUNDS && loc->valid; round++) {
        const ar_template *t = &c->ws->trial.t[c->n];
        oom_info oi;
        double it;
        double fmin = 0.0, fmax = 0.0;
        int st;
        for (s = 0; s < c->depth; s++) c->moe[s] = stage_is_moe(m, loc->firsts[s], loc->firsts[s + 1]);
        if (price(c, loc->firsts, loc->tile, &it, NULL) != ARACHNE_OK) return;
        for (s = 0; s < c->depth; s++) {
            const ar_stage *g = &t->stages[s];
            double ends = (s == 0 ? c->sp[s].block_s[AR_LAYER_EMBED] : 0.0) +
                          (s == c->depth - 1 ? c->sp[s].block_s[AR_LAYER_HEAD] : 0.0);
            double prof = ar_split_range_s(m, &c->sp[s], g->first, g->end) + ends;
            double real = g->compute_s + g->tp_comm_s + g->ep_comm_s, f;
            f = prof > 0.0 && real > 0.0 ? real / prof : 1.0;
            if (f < 1.0 / 64) f = 1.0 / 64;
            if (f > 64.0) f = 64.0;
            if (s == 0 || f < fmin) fmin = f;
            if (s == 0 || f > fmax) fmax = f;
            sp2[s] = c->sp[s];
            for (k = 0; k < AR_LAYER_KINDS; k++)
                if (sp2[s].block_s[k] > 0.0) sp2[s].block_s[k] *= f;
        }
        /* a factor common to every stage leaves the split as it is */
        if (fmax <= fmin * (1.0 + AR_FILL_RESPLIT_SPREAD)) return;
        memcpy(prev, loc->firsts, len);
        ar_split_balanced(m, c->depth, sp2, firsts);
        oi.stage = -1;
        st = eval_split_once(c, mm, firsts, loc, &oi);
        if (st == ARACHNE_E_OUT_OF_MEMORY_PLAN) {
            caps_from_weights(c, cap_weights_get(c, cw), caps);
            (void)eval_capped(c, mm, sp2, caps, loc);
        } else if (st != ARACHNE_OK) {
            return;
        }
        if (memcmp(prev, loc->firsts, len) == 0) return; /* no faster split: done */
    }
}

/* All splits of one micro-batch size.  Returns OK when one fitted. */
static int eval_mbs_splits(fill_ctx *c, split_memo *mm, cap_weights *cw, fill_cand *best, oom_info *first_oom)
{
    int base[AR_MAX_DEPTH + 1], alt[AR_MAX_DEPTH + 1], caps[AR_MAX_DEPTH];
    double w[AR_MAX_DEPTH];
    const double *capw;
    oom_info oi, oi2;
    int st, k, dir, s, fitted = 0;
    const arachne_model *m = c->cm->model;

    memset(&oi2, 0, sizeof oi2);
    ar_split_balanced(m, c->depth, c->sp, base);
    oi.stage = -1;
    st = eval_split_once(c, mm, base, best, &oi);
    if (st == ARACHNE_OK) return ARACHNE_OK;
    if (st != ARACHNE_E_OUT_OF_MEMORY_PLAN) return st;
    *first_oom = oi;
    /* the balanced split within each stage's block capacity */
    capw = cap_weights_get(c, cw);
    caps_from_weights(c, capw, caps);
    if (eval_capped(c, mm, c->sp, caps, best)) {
        fitted = 1;
        if (c->mode == AR_FILL_CHECK) return ARACHNE_OK;
    }
    /* fixed alternatives */
    if (oi.stage >= 0) {
        /* shifting k blocks off the stage frees about k blocks' share of its
         * memory: skip the shifts when even the largest cannot close the gap */
        int n_o = base[oi.stage + 1] - base[oi.stage];
        double per_block = n_o > 0 ? oi.need / n_o : 0.0;
        int kmax = AR_MIN(AR_FILL_MAX_SHIFT, n_o - 1);
        if (per_block > 0 && oi.need - kmax * per_block > oi.have) kmax = 0;
        for (k = 1; k <= kmax; k++)
            for (dir = -1; dir <= 1; dir += 2) {
                if (!ar_split_shift(c->depth, base, oi.stage, dir, k, alt)) continue;
                if (eval_split_once(c, mm, alt, best, &oi2) == ARACHNE_OK) {
                    fitted = 1;
                    if (c->mode == AR_FILL_CHECK) return ARACHNE_OK;
                }
            }
    }
    ar_split_even(m->blocks, c->depth, alt);
    if (eval_split_once(c, mm, alt, best, &oi2) == ARACHNE_OK) {
        fitted = 1;
        if (c->mode == AR_FILL_CHECK) return ARACHNE_OK;
    }
    for (s = 0; s < c->depth; s++)
        w[s] = c->cm->cluster->types[c->types[s]].mem_bytes * (double)c->tps[s];
    ar_split_weighted(m->blocks, c->depth, w, alt);
    if (eval_split_once(c, mm, alt, best, &oi2) == ARACHNE_OK) {
        fitted = 1;
        if (c->mode == AR_FILL_CHECK) return ARACHNE_OK;
    }
    ar_split_weighted(m->blocks, c->depth, capw, base);
    oi2.stage = -1;
    st = eval_split_once(c, mm, base, best, &oi2);
    if (st == ARACHNE_OK) {
        fitted = 1;
        if (c->mode == AR_FILL_CHECK) return ARACHNE_OK;
    } else if (oi2.stage >= 0) {
        /* rounding can leave one stage a block over: move it to a neighbour */
        for (dir = -1; dir <= 1; dir += 2) {
            if (!ar_split_shift(c->depth, base, oi2.stage, dir, 1, alt)) continue;
            if (eval_split_once(c, mm, alt, best, &oi) == ARACHNE_OK) {
                fitted = 1;
                if (c->mode == AR_FILL_CHECK) return ARACHNE_OK;
            }
        }
    }
    return fitted ? ARACHNE_OK : ARACHNE_E_OUT_OF_MEMORY_PLAN;
}

/* One micro-batch size: its splits, then (BEST mode with
 * ARACHNE_OPT_PRICED_RESPLIT) the split on the priced stage times.  best
 * keeps the fastest candidate of every size; a size's own best is gathered
 * apart, so that the re-split starts from it (ties keep the earlier
 * candidate, as before).  Returns OK when one fitted. */
static int eval_mbs(fill_ctx *c, fill_cand *best, oom_info *first_oom)
{
    cap_weights cw;
    split_memo mm;
    fill_cand loc;
    int st;
    mm.n = 0;
    cw.have = 0;
    loc.valid = 0;
    st = eval_mbs_splits(c, &mm, &cw, &loc, first_oom);
    if (st == ARACHNE_OK && c->mode != AR_FILL_CHECK && c->ws->resplit) resplit_on_prices(c, &mm, &loc, &cw);
    if (loc.valid && (!best->valid || loc.iter_s < best->iter_s)) *best = loc;
    return st;
}

/* 1 when the profile has any entry for GPU type gpu: a profile made for
 * other GPUs gets a message naming the missing type, not one stage. */
static int profile_has_gpu(const arachne_profile *p, const char *gpu)
{
    int i;
    for (i = 0; i < p->n; i++)
        if (ar_strcasecmp(p->e[i].gpu, gpu) == 0) return 1;
    return 0;
}

static void why(ar_fill_ws *ws, int mode, const char *fmt, ...) AR_PRINTF(3, 4);
static void why(ar_fill_ws *ws, int mode, const char *fmt, ...)
{
    va_list ap;
    if (mode == AR_FILL_CHECK) { ws->why[0] = '\0'; return; }
    va_start(ap, fmt);
    vsnprintf(ws->why, sizeof ws->why, fmt, ap);
    va_end(ap);
}

/* Explains why not even one replica packs. */
static void why_gpus(ar_fill_ws *ws, int mode, const arachne_cluster *cl, const ar_avail *a, int depth,
                     const int *types, const int *tps)
{
    int need[AR_MAX_TYPES], s, t;
    if (mode == AR_FILL_CHECK) { ws->why[0] = '\0'; return; }
    memset(need, 0, sizeof need);
    for (s = 0; s < depth; s++) {
        if (tps[s] > a->type_max_free[types[s]]) {
            why(ws, mode, "stage %d needs a TP group of %d %s GPUs inside one node; the largest free %s node has %d",
                s, tps[s], cl->types[types[s]].name, cl->types[types[s]].name, a->type_max_free[types[s]]);
            return;
        }
        need[types[s]] += tps[s];
    }
    for (t = 0; t < cl->ntypes; t++)
        if (need[t] > a->type_free[t]) {
            why(ws, mode, "one replica needs %d %s GPUs; %d are free", need[t], cl->types[t].name, a->type_free[t]);
            return;
        }
    why(ws, mode, "the TP groups of one replica do not pack into the free nodes");
}

/* Sets the candidate's context-parallel degree: stage s runs TP tps[s] / cp;
 * the tilings and the ranks of a placement depend on it. */
static void set_cp(fill_ctx *c, int cp)
{
    int s;
    c->cp = cp;
    for (s = 0; s < c->depth; s++) c->ttp[s] = c->tps[s] / cp;
    c->tiles_w = 0;
    c->placed_r = 0;
}

/* The FSDP groups the FSDP search prices for c->r placed replicas, into
 * out (at most 2): the most replicas that every node holding a stage
 * holds of it (a power of two dividing r; the gathers then stay on the
 * node's links, replicated across nodes as HSDP), and all r replicas. */
static int fsdp_groups(const fill_ctx *c, int *out)
{
    int s, local = c->r, f = 1, n = 0;
    for (s = 0; s < c->depth; s++) local = AR_MIN(local, c->pl[s].dp_local / c->cp);
    while (f * 2 <= local && c->r % (f * 2) == 0) f *= 2;
    if (f >= 2 && f < c->r) out[n++] = f;
    if (c->r >= 2) out[n++] = c->r;
    return n;
}

/* The candidate's FSDP group (0: none) on the placed replicas. */
static void set_fsdp(fill_ctx *c, int f)
{
    c->fsdp = f;
    fsdp_inter_update(c);
}

/* The context-parallel degrees the template may use, smallest first (1
 * always): powers of two that divide every stage's GPU group (so TP stays
 * a power of two, >= 1), with the sequence divisible by 2 cp (Megatron's
 * load-balanced chunks under the causal mask).  Nothing else is offered. */
static int cp_choices(const arachne_cost_model *cm, int depth, const int *tps, int *out)
{
    int n = 0, cp, s, g = 1 << AR_MAX_TP_LOG;
    out[n++] = 1;
    /* Mamba layers have no ring attention to split (cost.c refuses them) */
    if (!cm->setup.context_parallel || ar_model_kind_count(cm->model, AR_LAYER_MAMBA) > 0) return n;
    for (s = 0; s < depth; s++) if (tps[s] < g) g = tps[s];
    for (cp = 2; cp <= g && cp <= AR_MAX_CP; cp *= 2)
        if (cm->setup.seq_len % (2 * cp) == 0) out[n++] = cp;
    return n;
}

/* Whether splitting the groups into tp x cp can make some stage faster at
 * micro-batch mbs: some stage's block (compute + TP collectives, profile
 * at tps / cp, 1/cp of the tokens) costs less than at TP tps.  The ring
 * transfers only add to the CP side, so when no block gets cheaper even
 * without them, CP could pay only through memory; the fill then tries it
 * only when nothing fits without it (docs/fill.md). */
static int cp_may_pay(const fill_ctx *c, int cp, int mbs)
{
    const arachne_model *m = c->cm->model;
    int kind = m->experts > 0 ? AR_LAYER_MOE : AR_LAYER_DENSE, s;
    if (m->pattern[0]) kind = AR_LAYER_ATTENTION; /* the only hybrid layers CP splits are attention layers */
    for (s = 0; s < c->depth; s++) {
        ar_stage_speed a, b;
        if (!ar_stage_speed_get(c->cm, c->types[s], c->tps[s], mbs, &a) ||
            !ar_stage_speed_get(c->cm, c->types[s], c->tps[s] / cp, mbs, &b))
            continue;
        if (b.block_s[kind] >= 0.0 && a.block_s[kind] >= 0.0 && b.block_s[kind] / cp < a.block_s[kind]) return 1;
    }
    return 0;
}

/* Layer counts for v chunks per stage from the chosen split's counts n[]:
 * every stage needs at least v layers (one per chunk); a stage short of
 * that takes layers from the stage with the most (the split otherwise stays
 * the speed- and memory-weighted one the fill chose).  Writes the new
 * firsts; 0 when the model has too few layers or a stage would change
 * between dense and MoE (its expert tiling was chosen for its kind). */
static int vp_split(const fill_ctx *c, const int *firsts, int v, int *out)
{
    int n[AR_MAX_DEPTH], s, k;
    if (c->cm->model->blocks < c->depth * v) return 0;
    for (s = 0; s < c->depth; s++) n[s] = firsts[s + 1] - firsts[s];
    for (s = 0; s < c->depth; s++)
        while (n[s] < v) {
            int big = 0;
            for (k = 1; k < c->depth; k++)
                if (n[k] > n[big]) big = k;
            n[big]--;
            n[s]++;
        }
    out[0] = 0;
    for (s = 0; s < c->depth; s++) {
        out[s + 1] = out[s] + n[s];
        if (stage_is_moe(c->cm->model, out[s], out[s + 1]) != c->moe[s]) return 0;
    }
    return 1;
}

/* Interleaved 1F1B on top of the chosen candidate, which the trial holds
 * priced (plan + candidate, plain 1F1B, iteration *iter_s): tries vp = 2,
 * 4, 8 model chunks per stage (up to the MAX_VP option; stages short of v
 * layers get them from the largest, vp_split) and keeps the fastest; ties
 * keep plain 1F1B.  A vp is an option only when it can never make the plan
 * fail later: every stage fits in memory with the most chunk activations
 * the schedule ever holds (any micro-batch count), and the batch still
 * covers the template's smallest share (p micro-batches per replica:
 * Megatron runs them in groups of p).  On return the trial holds the
 * chosen vp and split, priced. */
static int choose_vp(fill_ctx *c, double *iter_s)
{
    ar_fill_ws *ws = c->ws;
    ar_template *t = &ws->trial.t[c->n];
    int v, s, j, best = 0, R = 0, st, tried = 0, orig[AR_MAX_DEPTH + 1], split[AR_MAX_DEPTH + 1],
        best_split[AR_MAX_DEPTH + 1];
    double best_s = *iter_s;
    if (c->depth < 2 || c->cm->setup.max_vp < 2) return ARACHNE_OK;
    if ((long)c->r * c->mbs * c->depth + ar_plan_batch_floor(c->plan) > c->cm->setup.global_batch)
        return ARACHNE_OK;
    /* data-parallel ranks as the pricer counts them: every CP rank of a
     * replica holds the weights too */
    for (j = 0; j <= c->n; j++) R += ws->trial.t[j].replicas * ar_tmpl_cp(&ws->trial.t[j]);
    for (s = 0; s < c->depth; s++) orig[s] = t->stages[s].first;
    orig[c->depth] = t->stages[c->depth - 1].end;
    memcpy(best_split, orig, sizeof orig);
    for (v = 2; v <= c->cm->setup.max_vp; v *= 2) {
        int ok;
        if (!vp_split(c, orig, v, split)) break;   /* larger v only needs more layers */
        tried = 1;
        for (s = 0; s < c->depth; s++) {
            t->stages[s].first = split[s];
            t->stages[s].end = split[s + 1];
        }
        t->vp = v;
        for (s = 0, ok = 1; s < c->depth && ok; s++) {
            ar_stage_mem mm;
            if (ar_stage_memory(c->cm, t, s, R, t->stages[s].edp, 1 << 20, &mm) != ARACHNE_OK ||
                mm.total > mm.capacity) ok = 0;
        }
        if (ok && ar_plan_price_prefix(c->cm, &ws->trial, (const ar_stage_place (*)[AR_MAX_DEPTH])ws->place,
                                       &ws->prefix) == ARACHNE_OK) {
            ws->pricings++;
            if (ws->trial.iteration_s < best_s) {
                best_s = ws->trial.iteration_s;
                best = v;
                memcpy(best_split, split, sizeof split);
            }
        }
    }
    /* nothing tried: the trial still holds the template as priced */
    if (!tried) return ARACHNE_OK;
    /* the trial's figures must be the chosen ones': price it again */
    t->vp = best;
    for (s = 0; s < c->depth; s++) {
        t->stages[s].first = best_split[s];
        t->stages[s].end = best_split[s + 1];
    }
    st = ar_plan_price_prefix(c->cm, &ws->trial, (const ar_stage_place (*)[AR_MAX_DEPTH])ws->place, &ws->prefix);
    if (st == ARACHNE_OK) *iter_s = ws->trial.iteration_s;
    return st;
}

/* Sets the context of candidate b: micro-batch size, CP degree, replicas
 * and their expert tilings (the placement is left to place()). */
static void set_context(fill_ctx *c, const fill_cand *b)
{
    c->mbs = b->mbs;
    if (c->cp != b->cp) set_cp(c, b->cp);
    if (c->r != b->r) c->tiles_w = 0;
    c->r = b->r;
    if (c->fsdp != b->fsdp) c->placed_r = 0; /* place() summarises the groups again */
    c->fsdp = b->fsdp;
    build_tiles(c);
}

/* ARACHNE_OPT_STAGE_MAJOR: the context of the fill's best candidate *b
 * (micro-batch size, replicas, CP degree) placed again in Megatron's order,
 * a stage's replicas together, and its splits and expert tilings searched
 * again there; *b becomes the faster.  Pricing reads a placement through
 * its summary (summarise_place: per stage, the nodes its groups share, its
 * peers per node, which expert tilings cross nodes), so when Megatron's
 * order gives the same summary, nothing is searched.
 * Only the winning context is searched again: a placement that favoured
 * another micro-batch size or replica count is not looked for. */
static int retry_stage_major(fill_ctx *c, ar_avail *a, fill_cand *b)
{
    ar_fill_ws *ws = c->ws;
    oom_info oom;
    ar_stage_place pl[AR_MAX_DEPTH];
    unsigned char inter[AR_MAX_DEPTH][AR_MAX_TILES];
    int s, st, same;
    set_context(c, b);
    c->stage_major = 0;
    c->placed_r = 0;
    if ((st = place(c, a)) != ARACHNE_OK) return st;
    memcpy(pl, c->pl, (size_t)c->depth * sizeof pl[0]);
    for (s = 0; s < c->depth; s++) memcpy(inter[s], c->tile_inter[s], (size_t)c->ntiles[s]);
    c->stage_major = 1;
    c->placed_r = 0;
    if ((st = place(c, a)) != ARACHNE_OK) return st;
    same = !memcmp(pl, c->pl, (size_t)c->depth * sizeof pl[0]);
    for (s = 0; s < c->depth && same; s++) same = !memcmp(inter[s], c->tile_inter[s], (size_t)c->ntiles[s]);
    if (!same) {
        stage_tab_begin(ws);
        for (s = 0; s < c->depth; s++) (void)ar_stage_speed_get(c->cm, c->types[s], c->ttp[s], c->mbs, &c->sp[s]);
        oom.stage = -1;
        /* a context that fitted in the fill's order fits in this one
         * (memory does not depend on the nodes); what does not price is
         * no better candidate */
        st = eval_mbs(c, b, &oom);
        if (st == ARACHNE_E_NO_MEMORY) return st;
    }
    c->placed_r = 0; /* commit places *b in its order */
    return ARACHNE_OK;
}

static int commit(fill_ctx *c, ar_avail *a, arachne_plan *plan, const fill_cand *b)
{
    ar_fill_ws *ws = c->ws;
    double it;
    int st, s, q, nr;
    ar_rank *nranks;
    set_context(c, b);
    for (s = 0; s < c->depth; s++) c->moe[s] = stage_is_moe(c->cm->model, b->firsts[s], b->firsts[s + 1]);
    if (c->stage_major != b->stage_major) c->placed_r = 0;
    c->stage_major = b->stage_major;
    st = place(c, a);
    if (st) return st;
    stage_tab_begin(ws);
    put_ranks(c);
    ws->prefix.quiet = 0; /* a failure here is the fill's error: keep its message */
    st = price(c, b->firsts, b->tile, &it, NULL);
    if (st == ARACHNE_OK) st = choose_vp(c, &it);
    ws->prefix.quiet = 1;
    if (st != ARACHNE_OK) return st;
    nr = ws->trial.nranks;
    nranks = (ar_rank *)ar_realloc(plan->ranks, (size_t)(nr > 0 ? nr : 1) * sizeof(ar_rank));
    if (!nranks) return ARACHNE_E_NO_MEMORY;
    plan->ranks = nranks;
    memcpy(plan->ranks + plan->nranks, ws->trial.ranks + plan->nranks,
           (size_t)(nr - plan->nranks) * sizeof(ar_rank));
    plan->nranks = nr;
    for (q = 0; q <= c->n; q++) ar_template_copy(&plan->t[q], &ws->trial.t[q]);
    plan->ntemplates = c->n + 1;
    plan->iteration_s = ws->trial.iteration_s;
    plan->iter_per_s = ws->trial.iter_per_s;
    plan->samples_per_s = ws->trial.samples_per_s;
    plan->tokens_per_s = ws->trial.tokens_per_s;
    plan->mfu = ws->trial.mfu;
    plan->bubble = ws->trial.bubble;
    plan->gpus_used = ws->trial.gpus_used;
    plan->gpus_total = ws->trial.gpus_total;
    free(plan->json_cache);
    plan->json_cache = NULL;
    for (q = 0; q < c->r; q++)
        for (s = 0; s < c->depth; s++) a->free[ws->node_of[q * c->depth + s]] -= c->tps[s];
    ar_avail_refresh(a, c->cm->cluster);
    /* A template with the same stages as an earlier one shares its gradient
     * ring, whose peers per node ar_plan_place counts over both; the trial
     * priced the new one from its own placement (c->pl), so the plan is
     * priced whole, and the work space re-syncs before the next fill. */
    for (q = 0; q < c->n; q++)
        if (ar_template_same_stages(&plan->t[q], &plan->t[c->n])) break;
    if (q < c->n) {
        ws->trial_synced = 0;
        return ar_plan_price(c->cm, plan);
    }
    /* the trial now mirrors the plan */
    ws->trial_synced = 1;
    return ARACHNE_OK;
}

/* The fill's search: every candidate of the template with the stages in
 * the order given, into *best (mode BEST), or the first that fits (CHECK).
 * Changes neither *a nor plan.  ARACHNE_OK (BEST: best->valid), or
 * ARACHNE_E_INFEASIBLE with the reason in ws->why and the error message
 * (CHECK: ws->why only), or another error. */
static int fill_search(ar_fill_ws *ws, ar_avail *a, const arachne_plan *plan, int depth, const int *types,
                       const int *tps, int mode, fill_ctx *cp_out, fill_cand *best_out)
{
    const arachne_cost_model *cm = ws->cm;
    const arachne_cluster *cl = cm->cluster;
    const arachne_model *m = cm->model;
    const fill_ctx *refused = (const fill_ctx *)ws->fsdp_src; /* the FSDP search: what it retries */
    fill_ctx *cx = cp_out;
    fill_cand *bp = best_out;
    oom_info oom, small_oom = { -1, 0.0, 0.0, 0, 0, 0 };
    int s, k, rpack, batch_left, nmbs = 0, mbs_list[AR_MAX_MBS_LOG + 1], st, missing_stage = -1;
    int last_err = ARACHNE_OK, any_fit = 0, expert_fallback, cps[AR_MAX_TP_LOG + 2], ncp, ci;

    if (!a || !plan || !types || !tps)
        return AR_NULL_ARG("fill", a, plan, types, tps);
    if (depth < 1 || depth > AR_MAX_DEPTH || depth > m->blocks)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "fill: depth %d outside [1, %d]", depth,
                        AR_MIN(AR_MAX_DEPTH, m->blocks));
    for (s = 0; s < depth; s++) {
        if (types[s] < 0 || types[s] >= cl->ntypes)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "fill: stage %d: GPU type index %d outside [0, %d)", s,
                            types[s], cl->ntypes);
        if (tps[s] < 1 || (tps[s] & (tps[s] - 1)) || tps[s] > (1 << AR_MAX_TP_LOG))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "fill: stage %d: TP degree %d is not a power of two", s, tps[s]);
    }
    if (a->nnodes != cl->nnodes)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "fill: availability has %d nodes, cluster %d", a->nnodes, cl->nnodes);

    memset(cx, 0, offsetof(fill_ctx, sp));
    cx->ws = ws; cx->cm = cm; cx->plan = plan; cx->n = plan->ntemplates;
    cx->depth = depth; cx->types = types; cx->tps = tps; cx->mode = mode;

    if (cx->n >= AR_MAX_TEMPLATES) {
        why(ws, mode, "the plan already holds %d templates (the most a plan can hold)", AR_MAX_TEMPLATES);
        goto infeasible;
    }
    rpack = ar_pack_max_replicas(cl, a, depth, types, tps);
    if (rpack < 1) { why_gpus(ws, mode, cl, a, depth, types, tps); goto infeasible; }
    batch_left = cm->setup.global_batch - ar_plan_batch_floor(plan);
    if (batch_left < 1) {
        why(ws, mode, "the global batch of %d samples is already used up by the replicas placed so far",
            cm->setup.global_batch);
        goto infeasible;
    }
    /* micro-batch sizes profiled for every stage */
    for (k = AR_MAX_MBS_LOG; k >= 0; k--) {
        int mbs = 1 << k, ok = 1;
        if (mbs > batch_left) continue;
        for (s = 0; s < depth && ok; s++) {
            ar_stage_speed sp;
            if (!ar_stage_speed_get(cm, types[s], tps[s], mbs, &sp)) { ok = 0; if (k == 0) missing_stage = s; }
        }
        if (ok) mbs_list[nmbs++] = mbs;
    }
    if (nmbs == 0) {
        if (missing_stage >= 0 && !profile_has_gpu(cm->profile, cl->types[types[missing_stage]].name))
            why(ws, mode, "the profile has no entries for GPU type %s", cl->types[types[missing_stage]].name);
        else if (missing_stage >= 0)
            why(ws, mode, "the profile has no entry for stage %d (%s tp %d) at any micro-batch size",
                missing_stage, cl->types[types[missing_stage]].name, tps[missing_stage]);
        else
            why(ws, mode, "no profiled micro-batch size fits the %d samples of the global batch left", batch_left);
        goto infeasible;
    }
    expert_fallback = cm->setup.expert_tiling && m->experts > 0;
    st = ws_sync(ws, plan);
    if (st) return st;
    memset(bp, 0, sizeof *bp);
    small_oom.stage = -1;
    ncp = cp_choices(cm, depth, tps, cps);
    /* Context parallelism: the same GPU groups split into tp x cp.  CHECK
     * stops at the first degree that fits; BEST tries a degree > 1 when
     * nothing fitted so far or when it can make a block cheaper, so both
     * modes find a fit for exactly the same templates. */
    for (ci = 0; ci < ncp; ci++) {
        int cp = cps[ci], nml = 0, ml[AR_MAX_MBS_LOG + 1];
        if (cp > 1) {
            if (mode == AR_FILL_CHECK && any_fit) break;
            if (mode != AR_FILL_CHECK && any_fit && !cp_may_pay(cx, cp, mbs_list[nmbs - 1])) continue;
            for (k = 0; k < nmbs; k++) {
                int ok = 1;
                for (s = 0; s < depth && ok; s++) {
                    ar_stage_speed sp;
                    if (!ar_stage_speed_get(cm, types[s], tps[s] / cp, mbs_list[k], &sp)) ok = 0;
                }
                if (ok) ml[nml++] = mbs_list[k];
            }
            if (nml == 0) continue;
        } else {
            memcpy(ml, mbs_list, (size_t)nmbs * sizeof(int));
            nml = nmbs;
        }
        set_cp(cx, cp);
        /* CHECK mode tries the smallest (most likely to fit) first */
        for (k = 0; k < nml; k++) {
            int mbs = mode == AR_FILL_CHECK ? ml[nml - 1 - k] : ml[k];
            int rlist[2], nr = 0, ri, fit_here = 0, lg = ar_ilog2(mbs);
            if (refused && !(refused->oom_mbs[ci] >> lg & 1u)) continue;
            rlist[nr++] = AR_MIN(rpack, batch_left / mbs);
            if (rlist[0] < 1) continue;
            /* An MoE stage's EP x ETP must divide tp x replicas and EP the
             * (power-of-two) expert count: an odd replica count can leave no
             * tiling that fits.  The largest power of two below is the fallback. */
            if (expert_fallback) {
                int p2 = 1;
                while (p2 * 2 <= rlist[0]) p2 *= 2;
                if (p2 != rlist[0]) rlist[nr++] = p2;
            }
            for (ri = 0; ri < nr && !fit_here; ri++) {
                int r = rlist[ri], groups[2], ng = 1, gi;
                cx->mbs = mbs;
                if (cx->r != r) { cx->r = r; cx->tiles_w = 0; }
                build_tiles(cx);
                st = place(cx, a);
                if (st) { ws->trial.ntemplates = cx->n; ws->trial.nranks = plan->nranks; return st; }
                groups[0] = 0;
                if (refused && (ng = fsdp_groups(cx, groups)) == 0) continue;
                for (gi = 0; gi < ng; gi++) {
                    if (refused) set_fsdp(cx, groups[gi]);
                    stage_tab_begin(ws);
                    for (s = 0; s < depth; s++) (void)ar_stage_speed_get(cm, types[s], cx->ttp[s], mbs, &cx->sp[s]);
                    oom.stage = -1;
                    st = eval_mbs(cx, bp, &oom);
                    if (!refused && mode != AR_FILL_CHECK && (st == ARACHNE_E_OUT_OF_MEMORY_PLAN || oom.stage >= 0))
                        cx->oom_mbs[ci] |= 1u << lg;
                    if (st == ARACHNE_OK) {
                        any_fit = fit_here = 1; /* fewer replicas only when the most do not fit */
                    } else if (st == ARACHNE_E_OUT_OF_MEMORY_PLAN) {
                        last_err = st;
                        if (oom.stage >= 0 && (small_oom.stage < 0 || mode != AR_FILL_CHECK)) {
                            small_oom = oom;
                            small_oom.mbs = mbs;
                        }
                    } else {
                        last_err = st;
                    }
                }
            }
            if (mode == AR_FILL_CHECK) {
                /* memory grows with the micro-batch: when the smallest size
                 * fits no split, the check stops there (conservative) */
                break;
            }
            (void)fit_here;
        }
    }
    /* restore the trial to mirror the plan */
    ws->trial.ntemplates = cx->n;
    ws->trial.nranks = plan->nranks;
    if (mode == AR_FILL_CHECK) {
        if (any_fit) return ARACHNE_OK;
        ws->why[0] = '\0';
        return ARACHNE_E_INFEASIBLE;
    }
    if (!bp->valid) {
        if (last_err == ARACHNE_E_OUT_OF_MEMORY_PLAN && small_oom.stage >= 0) {
            int so = small_oom.stage;
            why(ws, mode, "no split of %d blocks over %d stages fits in memory at any micro-batch size (%d..%d): "
                "at micro-batch %d stage %d (%s tp %d, blocks [%d, %d)) needs at least %.1f GB per GPU of %.1f GB usable",
                m->blocks, depth, mbs_list[nmbs - 1], mbs_list[0], small_oom.mbs, so,
                cl->types[types[so]].name, tps[so], small_oom.first, small_oom.end,
                small_oom.need / 1e9, small_oom.have / 1e9);
        } else if (last_err == ARACHNE_E_OUT_OF_MEMORY_PLAN) {
            why(ws, mode, "no split of %d blocks over %d stages fits in memory at any micro-batch size (%d..%d)",
                m->blocks, depth, mbs_list[nmbs - 1], mbs_list[0]);
        } else {
            char msg[200];
            snprintf(msg, sizeof msg, "%s", arachne_last_error());
            why(ws, mode, "no candidate of the template could be priced: %s", msg);
        }
        goto infeasible;
    }
    return ARACHNE_OK;

infeasible:
    if (mode == AR_FILL_CHECK) return ARACHNE_E_INFEASIBLE;
    {
        char desc[160];
        size_t len = 0;
        desc[0] = '\0';
        for (s = 0; s < depth && len + 24 < sizeof desc; s++)
            len += (size_t)snprintf(desc + len, sizeof desc - len, "%s%s tp %d", s ? ", " : "",
                                    cl->types[types[s]].name, tps[s]);
        return ar_error(ARACHNE_E_INFEASIBLE, "template [%s%s]: %s", desc, s < depth ? ", ..." : "", ws->why);
    }
}

/* The stages of a template in reverse order; 0 when that is the same
 * sequence (a palindrome: nothing to try). */
static int reversed_stages(int depth, const int *types, const int *tps, int *rt, int *rp)
{
    int s, differs = 0;
    for (s = 0; s < depth; s++) {
        rt[s] = types[depth - 1 - s];
        rp[s] = tps[depth - 1 - s];
        differs |= rt[s] != types[s] || rp[s] != tps[s];
    }
    return differs;
}

/* Whether Megatron's placement order can differ from the fill's: two
 * stages of one GPU type and group size (the packer places each type and
 * size on its own, so stages that share neither are placed alike). */
static int order_matters(int depth, const int *types, const int *tps)
{
    int s, q;
    for (s = 1; s < depth; s++)
        for (q = 0; q < s; q++)
            if (types[q] == types[s] && tps[q] == tps[s]) return 1;
    return 0;
}

/* Whether order (t, p) is one of the n orders in tried (depth each). */
static int order_tried(int depth, const int *t, const int *p, int (*tried_t)[AR_FILL_MOVE_MAX_DEPTH],
                       int (*tried_p)[AR_FILL_MOVE_MAX_DEPTH], int n)
{
    size_t len = (size_t)depth * sizeof(int);
    int i;
    for (i = 0; i < n; i++)
        if (!memcmp(tried_t[i], t, len) && !memcmp(tried_p[i], p, len)) return 1;
    return 0;
}

/* ARACHNE_OPT_STAGE_MOVES: from the faster of the asked and the reversed
 * order (the winner: context *pc, candidate *pb), every stage moved to the
 * front and to the end, one pass; each new order is searched whole and the
 * fastest is kept.  The two contexts (the stack one and the work space's
 * rev_ctx) and their candidates alternate: the loser's holds the next
 * order tried.  ord_t[k] / ord_p[k] hold the order context k searched
 * (k = 0: the stack one), since a context keeps pointers to its order
 * until the commit.  Sets *searched when it ran a search. */
static int move_stages(ar_fill_ws *ws, ar_avail *a, const arachne_plan *plan, int depth, const int *types,
                       const int *tps, const int *rt, const int *rp, int have_rev, fill_ctx **pc, fill_cand **pb,
                       fill_ctx *ctx0, fill_cand *cand0, fill_cand *cand1,
                       int (*ord_t)[AR_MAX_DEPTH], int (*ord_p)[AR_MAX_DEPTH], int *searched)
{
    int tried_t[2 * AR_FILL_MOVE_MAX_DEPTH + 2][AR_FILL_MOVE_MAX_DEPTH];
    int tried_p[2 * AR_FILL_MOVE_MAX_DEPTH + 2][AR_FILL_MOVE_MAX_DEPTH];
    int start_t[AR_FILL_MOVE_MAX_DEPTH], start_p[AR_FILL_MOVE_MAX_DEPTH];
    int ntried = 0, i, end, s, q, st;
    size_t len = (size_t)depth * sizeof(int);
    if (depth < 3 || depth > AR_FILL_MOVE_MAX_DEPTH) return ARACHNE_OK;
    if (!ws->rev_ctx && !(ws->rev_ctx = ar_malloc(sizeof(fill_ctx)))) return ARACHNE_E_NO_MEMORY;
    memcpy(tried_t[ntried], types, len); memcpy(tried_p[ntried++], tps, len);
    if (have_rev) { memcpy(tried_t[ntried], rt, len); memcpy(tried_p[ntried++], rp, len); }
    memcpy(start_t, (*pc)->types, len);
    memcpy(start_p, (*pc)->tps, len);
    for (i = 0; i < depth; i++)
        for (end = 0; end <= 1; end++) {
            int k = *pc == ctx0 ? 1 : 0; /* the context not holding the winner */
            fill_ctx *cx = k ? (fill_ctx *)ws->rev_ctx : ctx0;
            fill_cand *cb = k ? cand1 : cand0;
            int *t = ord_t[k], *p = ord_p[k];
            if ((end && i == depth - 1) || (!end && i == 0)) continue;
            /* stage i of the start order moved to the front or the end */
            q = 0;
            if (!end) { t[q] = start_t[i]; p[q++] = start_p[i]; }
            for (s = 0; s < depth; s++)
                if (s != i) { t[q] = start_t[s]; p[q++] = start_p[s]; }
            if (end) { t[q] = start_t[i]; p[q++] = start_p[i]; }
            if (order_tried(depth, t, p, tried_t, tried_p, ntried)) continue;
            memcpy(tried_t[ntried], t, len); memcpy(tried_p[ntried++], p, len);
            *searched = 1;
            st = fill_search(ws, a, plan, depth, t, p, AR_FILL_BEST, cx, cb);
            if (st != ARACHNE_OK && st != ARACHNE_E_INFEASIBLE) return st;
            if (st == ARACHNE_OK && cb->iter_s < (*pb)->iter_s) { *pc = cx; *pb = cb; }
        }
    return ARACHNE_OK;
}

/* 1 when memory refused some candidate of the winning search *c (what
 * FSDP, which needs less memory per GPU, can retry). */
static int fsdp_may_pay(const fill_ctx *c)
{
    int i;
    for (i = 0; i < (int)(sizeof c->oom_mbs / sizeof c->oom_mbs[0]); i++)
        if (c->oom_mbs[i]) return 1;
    return 0;
}

/* ARACHNE_OPT_FSDP_SEARCH: the winning order (*pc, its best candidate *pb)
 * searched again at the micro-batch sizes and CP degrees whose candidates
 * memory refused, each with the FSDP groups fsdp_groups offers; when the
 * fastest of them beats *pb (placed again in Megatron's order too, with
 * STAGE_MAJOR), or when *pb is not valid (the rescue), *pc and *pb
 * become that context and candidate (*fb holds it).  FSDP shards what ZeRO-1 keeps whole (weights and gradients) and
 * pays gathers per micro-batch instead (cost-model.md, "FSDP"), so it can
 * admit a larger micro-batch or a balanced split. */
static int fsdp_search(ar_fill_ws *ws, ar_avail *a, const arachne_plan *plan, fill_ctx **pc, fill_cand **pb,
                       fill_cand *fb)
{
    fill_ctx *fc;
    int st;
    if (!ws->fsdp_ctx && !(ws->fsdp_ctx = ar_malloc(sizeof(fill_ctx)))) return ARACHNE_E_NO_MEMORY;
    fc = (fill_ctx *)ws->fsdp_ctx;
    ws->fsdp_src = *pc;
    st = fill_search(ws, a, plan, (*pc)->depth, (*pc)->types, (*pc)->tps, AR_FILL_BEST, fc, fb);
    ws->fsdp_src = NULL;
    (*pc)->placed_r = 0; /* the search placed its own replicas */
    if (st == ARACHNE_E_INFEASIBLE) return ARACHNE_OK;
    if (st != ARACHNE_OK) return st;
    if ((*pb)->valid && !(fb->iter_s < (*pb)->iter_s)) return ARACHNE_OK;
    if (ws->stage_major && order_matters(fc->depth, fc->types, fc->tps) &&
        (st = retry_stage_major(fc, a, fb)) != ARACHNE_OK)
        return st;
    *pc = fc;
    *pb = fb;
    ws->fsdp_wins++;
    return ARACHNE_OK;
}

/* Why a search failed (the last error and ws->why), kept while another
 * search is tried: the stages reversed, or FSDP groups (the rescue).  When
 * that fails too, the first search's explanation is the one given. */
typedef struct fill_failure {
    char msg[AR_ERRMSG_CAP];
    char why[sizeof ((ar_fill_ws *)0)->why];
} fill_failure;

static void failure_keep(fill_failure *f, const ar_fill_ws *ws)
{
    snprintf(f->msg, sizeof f->msg, "%s", arachne_last_error());
    memcpy(f->why, ws->why, sizeof f->why);
}

/* Puts f back as ws->why and the last error; returns st. */
static int failure_restore(const fill_failure *f, ar_fill_ws *ws, int st)
{
    memcpy(ws->why, f->why, sizeof ws->why);
    return ar_error(st, "%s", f->msg);
}

int ar_fill_template_ws(ar_fill_ws *ws, ar_avail *a, arachne_plan *plan, int depth,
                        const int *types, const int *tps, int mode)
{
    fill_ctx c, *pc = &c;
    fill_cand best, rbest, fbest, *pb = &best;
    int rt[AR_MAX_DEPTH], rp[AR_MAX_DEPTH], st, rst, retry, have_rev = 0, searched = 0;
    int ord_t[2][AR_MAX_DEPTH], ord_p[2][AR_MAX_DEPTH];
    if (!ws) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "fill: NULL work space");
    st = fill_search(ws, a, plan, depth, types, tps, mode, &c, &best);
    /* ARACHNE_OPT_STAGE_REVERSAL: the same stages reversed, when that is
     * another sequence.  The pipeline's ends are not alike (the first stage
     * holds the embedding and, in 1F1B, the most micro-batches in flight;
     * the last the output layer and the loss), so a template whose weak
     * stages the policy put last may run faster the other way round.  BEST
     * keeps the faster of the two; CHECK calls the template feasible when
     * either order fits, as BEST decides.  A status of OK or INFEASIBLE
     * means the arguments (depth included) were valid. */
    retry = mode == AR_FILL_CHECK ? st == ARACHNE_E_INFEASIBLE : st == ARACHNE_OK || st == ARACHNE_E_INFEASIBLE;
    if (ws->reverse_stages && retry && depth > 1 && reversed_stages(depth, types, tps, rt, rp)) {
        fill_failure first;
        have_rev = 1;
        if (st) failure_keep(&first, ws);
        /* its context (tens of KB) lives in the work space, not on the
         * stack beside the first one */
        if (!ws->rev_ctx && !(ws->rev_ctx = ar_malloc(sizeof(fill_ctx)))) return ARACHNE_E_NO_MEMORY;
        rst = fill_search(ws, a, plan, depth, rt, rp, mode, (fill_ctx *)ws->rev_ctx, &rbest);
        if (rst != ARACHNE_OK && rst != ARACHNE_E_INFEASIBLE) return rst;
        if (rst == ARACHNE_OK && (st != ARACHNE_OK || rbest.iter_s < best.iter_s)) {
            if (mode == AR_FILL_CHECK) return ARACHNE_OK;
            pc = (fill_ctx *)ws->rev_ctx;
            pb = &rbest;
            st = ARACHNE_OK;
        } else if (st) {
            /* neither order fits: the order asked for explains why (CHECK
             * sets no error message); BEST goes on to the FSDP rescue */
            if (mode == AR_FILL_CHECK) {
                memcpy(ws->why, first.why, sizeof ws->why);
                return st;
            }
            (void)failure_restore(&first, ws, st);
        }
    }
    /* ARACHNE_OPT_STAGE_MOVES (BEST only: it adds orders to one that fits,
     * so CHECK's answer stays the same) */
    if (st == ARACHNE_OK && mode != AR_FILL_CHECK && ws->move_stages) {
        st = move_stages(ws, a, plan, depth, types, tps, rt, rp, have_rev, &pc, &pb, &c, &best, &rbest, ord_t,
                         ord_p, &searched);
        if (st != ARACHNE_OK) return st;
    }
    /* ARACHNE_OPT_STAGE_MAJOR (BEST only: the packing fits the same
     * replicas in either order, so CHECK's answer stays the same) */
    if (st == ARACHNE_OK && mode != AR_FILL_CHECK && ws->stage_major && order_matters(depth, pc->types, pc->tps)) {
        st = retry_stage_major(pc, a, pb);
        if (st != ARACHNE_OK) return st;
    }
    /* ARACHNE_OPT_FSDP_SEARCH (BEST only, and only where the work space
     * asks: the refinement's FSDP fills, which no mask depends on; CHECK's
     * answer stays the same).  It retries the candidates memory refused in
     * the winning order, or, when nothing fitted, in the order asked (the
     * rescue: the template fits if an FSDP candidate does) */
    if ((st == ARACHNE_OK || st == ARACHNE_E_INFEASIBLE) && mode != AR_FILL_CHECK && ws->fsdp_search &&
        fsdp_may_pay(pc)) {
        fill_failure without;
        if (st) { /* the rescue: the message of the search without FSDP, if it fails too */
            failure_keep(&without, ws);
            pb->valid = 0;
        }
        if ((st = fsdp_search(ws, a, plan, &pc, &pb, &fbest)) != ARACHNE_OK) return st;
        searched = 1;
        if (!pb->valid) return failure_restore(&without, ws, ARACHNE_E_INFEASIBLE);
    }
    /* the work space's placement arrays hold the last search's replicas */
    if (have_rev || searched) pc->placed_r = 0;
    if (st || mode == AR_FILL_CHECK) return st;
    st = commit(pc, a, plan, pb);
    if (st != ARACHNE_OK) ws->trial_synced = 0;
    return st;
}

int ar_fill_template(const arachne_cost_model *cm, ar_avail *a, arachne_plan *plan,
                     int depth, const int *types, const int *tps)
{
    ar_fill_ws ws;
    int st;
    if (!cm || !a || !plan) return AR_NULL_ARG("ar_fill_template", cm, a, plan);
    st = ar_fill_ws_init(&ws, cm);
    if (st) return st;
    st = ar_fill_template_ws(&ws, a, plan, depth, types, tps, AR_FILL_BEST);
    ar_fill_ws_free(&ws);
    return st;
}
