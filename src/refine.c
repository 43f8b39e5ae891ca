/* refine.c -- arachne_plan_refine: improves a plan with the cost model.
 *
 * A plan is a list of template structures (depth, per stage a GPU type and
 * a TP degree); the fill turns each, in order, into replicas, micro-batch
 * size, layer split and expert tiling on the GPUs the earlier templates left
 * free.  The refinement works on that list:
 *  1. on small clusters (<= AR_REFINE_EXACT_GPUS GPUs) an exact search of the
 *     one-template plans (the enumeration behind arachne_search_exhaustive),
 *     given at most an eighth of the budget (it completes only on tiny
 *     clusters; a larger share cost more than it found on the validation
 *     set broad-val-small) and 16,384 prefixes per plan of that share
 *     (AR_REFINE_EXACT_NODES_PER_PLAN); complete or not, its best plan
 *     competes with the start;
 *  2. a first-improvement local search from the better of the two over the
 *     template decisions, per template in this order: two neighbouring
 *     stages swapped (which GPUs hold which layers), a stage split into two
 *     stages of half its GPUs and two equal neighbouring stages joined
 *     (pipeline for tensor/context parallelism at the same GPUs per
 *     replica), every stage's GPUs doubled or halved (data parallelism for
 *     tensor/context parallelism), a stage's GPU type, its TP degree x2 and
 *     /2, two neighbouring templates joined into one pipeline (either
 *     first), depth +1 (a stage duplicated) and -1 (a stage removed),
 *     dropping a template (its GPUs go to the templates after it), swapping
 *     neighbours (which template takes the GPUs first), and adding a
 *     one-type copy of a template on the GPUs left free.  The structural
 *     moves come first: on broad-val-small they found more per fill than
 *     the single-decision ones.  The fill prices every one of its own
 *     alternatives (micro-batch sizes, layer splits, expert tilings) for each
 *     candidate and keeps the fastest, so every candidate is the best fill of
 *     its structure;
 *  3. iterated local search with the budget left once the climb stops: two
 *     random changes (a fixed-seed RNG) to a copy of the best plan, then a
 *     climb from there; repeated until the budget is spent.
 * Each candidate is filled template by template and every prefix is priced;
 * the fastest plan priced anywhere is returned.  A table of the structures
 * already filled (hash, value) answers repeats, which the climbs and their
 * restarts meet often, without a fill.
 *
 * The budget is a count of fills (templates filled and priced, the unit of
 * `evaluations` everywhere), so the result depends only on the inputs; the
 * optional wall-clock cap only guards against a slow machine, and a plan it
 * cut says so in its method ("...+refine-capped"). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "refine.h"

#define AR_REFINE_EXACT_GPUS 64
/* Prefixes the exact search may examine per plan of its share of the
 * budget: the share counts the plans it keeps, and a model that fits few
 * templates can make it walk millions of prefixes for one plan (8.1 M, 1 s,
 * for a 31-block MoE model on 16 GPUs that the model_plan fuzz target
 * found).  The most any of 331 validation and held-out compositions of at
 * most 64 GPUs walks is 610 k, inside the default plan's 16,384 x 62. */
#define AR_REFINE_EXACT_NODES_PER_PLAN 16384L

/* *d = *s for the templates and stages in use (a whole rf_spec is tens of
 * kilobytes, and the climb copies one per candidate, most of them answered
 * from the table). */
void ar_rf_copy(rf_spec *d, const rf_spec *s)
{
    int i;
    d->n = s->n;
    for (i = 0; i < s->n; i++) {
        d->t[i].depth = s->t[i].depth;
        memcpy(d->t[i].types, s->t[i].types, (size_t)s->t[i].depth * sizeof s->t[i].types[0]);
        memcpy(d->t[i].tps, s->t[i].tps, (size_t)s->t[i].depth * sizeof s->t[i].tps[0]);
    }
}

/* Hash of a structure: the climbs and their restarts meet the same
 * candidates again and again; a repeat is answered from the table instead
 * of being filled again. */
uint64_t ar_rf_hash(const rf_spec *s)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    int i, j;
#define MIX(x) do { h ^= (uint64_t)(unsigned)(x); h *= 0x100000001b3ULL; h ^= h >> 29; } while (0)
    MIX(s->n);
    for (i = 0; i < s->n; i++) {
        MIX(s->t[i].depth);
        for (j = 0; j < s->t[i].depth; j++) { MIX(s->t[i].types[j]); MIX(s->t[i].tps[j]); }
    }
#undef MIX
    return h | 1; /* 0 marks an empty slot */
}

rf_seen *ar_rf_seen_slot(rf_ctx *R, uint64_t h)
{
    unsigned k = (unsigned)(h >> 17) & (RF_SEEN_SLOTS - 1);
    while (R->seen[k].hash && R->seen[k].hash != h) k = (k + 1) & (RF_SEEN_SLOTS - 1);
    return &R->seen[k];
}

static int rf_out_of_budget(rf_ctx *R)
{
    if (R->used >= R->budget) return 1;
    if (R->deadline > 0 && ar_now() >= R->deadline) { R->capped = 1; return 1; }
    return 0;
}

/* Keeps p, or its exact split (ar_plan_keep_form), when it ranks above the
 * best so far (ar_plan_rank).  The climbs move by throughput alone
 * (rf_eval's value): a plan that runs more samples than the batch can be
 * the step towards a faster exact one.  The kicks start from the structure
 * of the plan kept, so what is kept steers the later climbs. */
int ar_rf_keep(rf_ctx *R, const arachne_plan *p, const rf_spec *s, int k)
{
    int st, kept;
    long B = R->cm->setup.global_batch;
    /* From the last fill on (R->keep_exact), a plan that runs more samples
     * than the batch does not replace one that runs it exactly
     * (ARACHNE_OPT_EXACT_BATCH): FSDP groups move whole when a template is
     * split for the exact division (plan_exact.c), so a sharded plan that
     * ranks higher can be one that no split makes exact, and the commands
     * refuse such a plan. */
    if (R->keep_exact && R->have && R->cm->setup.exact_batch && ar_plan_samples_run(R->best) == B &&
        ar_plan_samples_run(ar_plan_keep_form(R->cm, p, ar_plan_rank(R->best), R->split)) != B)
        return ARACHNE_OK;
    if ((st = ar_plan_keep_better(R->cm, p, R->best, &R->have, R->split, &kept)) || !kept) return st;
    R->best_spec = *s;
    R->best_spec.n = k;
    return ARACHNE_OK;
}

int ar_rf_fill_spec(ar_builder *b, arachne_plan *work, const rf_spec *s, rf_keep_fn keep, void *user, double *value,
                    int *kbest, long *used)
{
    int i, st;
    *value = 0.0;
    *kbest = 0;
    ar_plan_clear(work);
    if ((st = ar_plan_init(work, b->cm))) return st;
    if ((st = ar_avail_copy(&b->avail, &b->base))) return st;
    ar_fill_ws_reset(&b->ws);
    for (i = 0; i < s->n; i++) {
        const rf_tmpl *t = &s->t[i];
        (*used)++;
        st = ar_fill_template_ws(&b->ws, &b->avail, work, t->depth, t->types, t->tps, AR_FILL_BEST);
        if (st == ARACHNE_E_INFEASIBLE) break;
        if (st) return st;
        b->fills++;
        if (work->iter_per_s > *value) { *value = work->iter_per_s; *kbest = i + 1; }
        if ((st = keep(user, work, s, i + 1))) return st;
    }
    arachne_clear_error();
    return ARACHNE_OK;
}

static int rf_keep_prefix(void *user, const arachne_plan *p, const rf_spec *s, int k)
{
    return ar_rf_keep((rf_ctx *)user, p, s, k);
}

/* Adds the first k templates of s, whose throughput is v, to the fastest
 * structures filled (R->top; a structure already listed is not added
 * again).  Ties keep the earlier one: the list depends on the order of the
 * fills only, which is the same for any thread count. */
static void rf_top_add(rf_ctx *R, const rf_spec *s, int k, double v)
{
    rf_spec t;
    uint64_t h;
    int i, j;
    if (R->ntop == RF_TOP && !(v > R->top_value[RF_TOP - 1])) return;
    ar_rf_copy(&t, s);
    t.n = k;
    h = ar_rf_hash(&t);
    for (i = 0; i < R->ntop; i++) if (R->top_hash[i] == h) return;
    for (i = 0; i < R->ntop && R->top_value[i] >= v; i++) {}
    if (R->ntop < RF_TOP) R->ntop++;
    for (j = R->ntop - 1; j > i; j--) {
        ar_rf_copy(&R->top[j], &R->top[j - 1]);
        R->top_value[j] = R->top_value[j - 1];
        R->top_hash[j] = R->top_hash[j - 1];
    }
    ar_rf_copy(&R->top[i], &t);
    R->top_value[i] = v;
    R->top_hash[i] = h;
}

/* Fills the templates of s in order from the whole cluster, stopping at the
 * first that does not fit (ar_rf_fill_spec; h: ar_rf_hash(s)).  *value: the best
 * throughput among its priced prefixes (0 when not even the first template
 * fits), *kbest the number of templates of that prefix; every prefix that
 * beats the best so far is kept.  A candidate filled ahead on another
 * thread gives the same. */
static int rf_eval(rf_ctx *R, const rf_spec *s, uint64_t h, double *value, int *kbest)
{
    int st, done = 0;
    if (!(R->ahead && ((st = ar_rf_ahead_take(R, s, h, value, kbest, &done)) || done)))
        st = ar_rf_fill_spec(&R->b, &R->work, s, rf_keep_prefix, R, value, kbest, &R->used);
    if (st == ARACHNE_OK && R->top && *kbest > 0) rf_top_add(R, s, *kbest, *value);
    return st;
}

/* Tries candidate c: moves the search to it when it beats *cur_value.
 * *moved is set to 1 then. */
static int rf_try(rf_ctx *R, rf_spec *cur, double *cur_value, const rf_spec *c, int *moved)
{
    double v;
    int st, k;
    uint64_t h = ar_rf_hash(c);
    rf_seen *e = ar_rf_seen_slot(R, h);
    if (rf_out_of_budget(R)) return ARACHNE_OK;
    if (e->hash == h) {
        v = e->value;
        k = e->kbest;
    } else {
        if ((st = rf_eval(R, c, h, &v, &k))) return st;
        if (R->nseen < RF_SEEN_SLOTS / 4 * 3) { e->hash = h; e->value = v; e->kbest = k; R->nseen++; }
    }
    if (v > *cur_value) {
        /* continue from the prefix that priced best (the whole candidate or less) */
        ar_rf_copy(cur, c);
        cur->n = k;
        *cur_value = v;
        *moved = 1;
    }
    return ARACHNE_OK;
}

static void rf_insert_stage(rf_tmpl *t, int at, int type, int tp)
{
    int j;
    for (j = t->depth; j > at; j--) { t->types[j] = t->types[j - 1]; t->tps[j] = t->tps[j - 1]; }
    t->types[at] = type;
    t->tps[at] = tp;
    t->depth++;
}

static void rf_remove_stage(rf_tmpl *t, int at)
{
    int j;
    for (j = at; j + 1 < t->depth; j++) { t->types[j] = t->types[j + 1]; t->tps[j] = t->tps[j + 1]; }
    t->depth--;
}

/* Stage s of t split into two stages of half its GPUs, same type. */
static void rf_split_stage(rf_tmpl *t, int s)
{
    t->tps[s] /= 2;
    rf_insert_stage(t, s + 1, t->types[s], t->tps[s]);
}

/* Stage s of t swapped with stage s + 1. */
static void rf_swap_stages(rf_tmpl *t, int s)
{
    int ty = t->types[s], tp = t->tps[s];
    t->types[s] = t->types[s + 1];
    t->tps[s] = t->tps[s + 1];
    t->types[s + 1] = ty;
    t->tps[s + 1] = tp;
}

/* One pass over the neighbourhood of *cur in a fixed order; returns with
 * *moved = 1 at the first improvement (first-improvement hill climbing).
 * With R->collecting it only lists the candidates (ar_rf_ahead_collect). */
static int rf_pass(rf_ctx *R, rf_spec *cur, double *cur_value, int *moved)
{
    const int ntypes = R->cm->cluster->ntypes, max_depth = R->b.max_depth;
    rf_spec c;
    int i, s, t, st, o;
    *moved = 0;
#define TRY() do { if (R->collecting) { ar_rf_ahead_collect(R, &c, ar_rf_hash(&c)); break; } \
                   if ((st = rf_try(R, cur, cur_value, &c, moved))) return st; \
                   if (*moved || rf_out_of_budget(R)) return ARACHNE_OK; } while (0)
    for (i = 0; i < cur->n; i++) {
        const rf_tmpl *ti = &cur->t[i];
        int up = 1, down = 1;
        /* two neighbouring stages swapped (which GPUs hold the first layers) */
        for (s = 0; s + 1 < ti->depth; s++) {
            if (ti->types[s] == ti->types[s + 1] && ti->tps[s] == ti->tps[s + 1]) continue;
            ar_rf_copy(&c, cur);
            rf_swap_stages(&c.t[i], s);
            TRY();
        }
        /* a stage split into two stages of half its GPUs (pipeline for
         * tensor/context parallelism, same GPUs per replica), and two equal
         * neighbouring stages joined into one */
        if (ti->depth < max_depth)
            for (s = 0; s < ti->depth; s++) {
                if (ti->tps[s] < 2) continue;
                ar_rf_copy(&c, cur);
                rf_split_stage(&c.t[i], s);
                TRY();
            }
        for (s = 0; s + 1 < ti->depth; s++) {
            if (ti->types[s] != ti->types[s + 1] || ti->tps[s] != ti->tps[s + 1] || ti->tps[s] * 2 > R->max_tp) continue;
            ar_rf_copy(&c, cur);
            c.t[i].tps[s] *= 2;
            rf_remove_stage(&c.t[i], s + 1);
            TRY();
        }
        /* every stage's GPUs doubled (half the replicas) or halved (twice
         * as many): data parallelism for tensor/context parallelism */
        for (s = 0; s < ti->depth; s++) {
            if (ti->tps[s] * 2 > R->max_tp) up = 0;
            if (ti->tps[s] < 2) down = 0;
        }
        if (up) { ar_rf_copy(&c, cur); for (s = 0; s < ti->depth; s++) c.t[i].tps[s] *= 2; TRY(); }
        if (down) { ar_rf_copy(&c, cur); for (s = 0; s < ti->depth; s++) c.t[i].tps[s] /= 2; TRY(); }
        for (s = 0; s < ti->depth; s++) {
            /* a stage's GPU type */
            for (t = 0; t < ntypes; t++) {
                if (t == ti->types[s]) continue;
                ar_rf_copy(&c, cur);
                c.t[i].types[s] = t;
                TRY();
            }
            /* its TP degree, doubled and halved */
            if (ti->tps[s] * 2 <= R->max_tp) { ar_rf_copy(&c, cur); c.t[i].tps[s] *= 2; TRY(); }
            if (ti->tps[s] > 1) { ar_rf_copy(&c, cur); c.t[i].tps[s] /= 2; TRY(); }
        }
        /* join: templates i and i + 1 become one pipeline over both stage
         * lists (either first) */
        if (i + 1 < cur->n && ti->depth + cur->t[i + 1].depth <= max_depth)
            for (o = 0; o < 2; o++) {
                const rf_tmpl *a = &cur->t[i + o], *z = &cur->t[i + 1 - o];
                ar_rf_copy(&c, cur);
                c.t[i] = *a;
                for (s = 0; s < z->depth; s++) {
                    c.t[i].types[a->depth + s] = z->types[s];
                    c.t[i].tps[a->depth + s] = z->tps[s];
                }
                c.t[i].depth = a->depth + z->depth;
                memmove(&c.t[i + 1], &c.t[i + 2], (size_t)(c.n - i - 2) * sizeof c.t[0]);
                c.n--;
                TRY();
            }
        /* depth + 1: a stage duplicated; depth - 1: a stage removed */
        if (ti->depth < max_depth)
            for (s = 0; s < ti->depth; s++) {
                ar_rf_copy(&c, cur);
                rf_insert_stage(&c.t[i], s + 1, ti->types[s], ti->tps[s]);
                TRY();
            }
        if (ti->depth > 1)
            for (s = 0; s < ti->depth; s++) {
                ar_rf_copy(&c, cur);
                rf_remove_stage(&c.t[i], s);
                TRY();
            }
        /* merge: drop template i, the templates after it take its GPUs */
        if (cur->n > 1) {
            ar_rf_copy(&c, cur);
            memmove(&c.t[i], &c.t[i + 1], (size_t)(c.n - i - 1) * sizeof c.t[0]);
            c.n--;
            TRY();
        }
        /* order: template i + 1 first */
        if (i + 1 < cur->n) {
            ar_rf_copy(&c, cur);
            c.t[i] = cur->t[i + 1];
            c.t[i + 1] = cur->t[i];
            TRY();
        }
        /* split: a copy of template i on one GPU type, after the others */
        if (cur->n < AR_MAX_TEMPLATES && R->best->gpus_used < R->best->gpus_total)
            for (t = 0; t < ntypes; t++) {
                ar_rf_copy(&c, cur);
                c.t[c.n] = *ti;
                for (s = 0; s < ti->depth; s++) c.t[c.n].types[s] = t;
                c.n++;
                TRY();
            }
    }
#undef TRY
    return ARACHNE_OK;
}

/* Hill climbing from *cur (value *v) until no change helps or the budget
 * is spent. */
static int rf_climb(rf_ctx *R, rf_spec *cur, double *v)
{
    int st, moved;
    do {
        if (R->ahead) { /* the pass's candidates, for the fills ahead */
            ar_rf_ahead_begin(R);
            R->collecting = 1;
            st = rf_pass(R, cur, v, &moved);
            R->collecting = 0;
            if (st) return st;
        }
        if ((st = rf_pass(R, cur, v, &moved))) return st;
    } while (moved && !rf_out_of_budget(R));
    return ARACHNE_OK;
}

/* A kick of the iterated local search: two random changes of the kinds
 * the climb makes (type, TP, depth +1 / -1, a stage split, two stages
 * swapped), to one template, drawn from the refinement's own RNG (fixed
 * seed), so a run is the same every time. */
static void rf_kick(rf_ctx *R, ar_rng *rng, rf_spec *c)
{
    const int ntypes = R->cm->cluster->ntypes;
    rf_tmpl *t = &c->t[ar_rng_int(rng, c->n)];
    int j;
    for (j = 0; j < 2; j++) {
        int s = ar_rng_int(rng, t->depth);
        switch (ar_rng_int(rng, 6)) {
        case 0: t->types[s] = ar_rng_int(rng, ntypes); break;
        case 1: if (t->tps[s] * 2 <= R->max_tp) t->tps[s] *= 2; else if (t->tps[s] > 1) t->tps[s] /= 2; break;
        case 2: if (t->depth < R->b.max_depth) rf_insert_stage(t, s + 1, t->types[s], t->tps[s]); break;
        case 3: if (t->depth > 1) rf_remove_stage(t, s); break;
        case 4: /* a stage split in two of half its GPUs */
            if (t->tps[s] > 1 && t->depth < R->b.max_depth) rf_split_stage(t, s);
            break;
        default: if (s + 1 < t->depth) rf_swap_stages(t, s); break;
        }
    }
}

/* The local search (steps 2 and 3 of docs/search.md, "Refinement"): a
 * climb from the best plan's structure, then climbs from kicked copies of
 * it until the budget is spent. */
static int rf_search(rf_ctx *R, ar_rng *rng)
{
    rf_spec cur;
    double v;
    int st, k;
    if (R->have) {
        cur = R->best_spec;
        v = R->best->iter_per_s;
        if ((st = rf_climb(R, &cur, &v))) return st;
    }
    while (R->have && !rf_out_of_budget(R)) {
        cur = R->best_spec;
        rf_kick(R, rng, &cur);
        if ((st = rf_eval(R, &cur, ar_rf_hash(&cur), &v, &k))) return st;
        if (k < 1) continue;
        cur.n = k;
        if ((st = rf_climb(R, &cur, &v))) return st;
    }
    return ARACHNE_OK;
}

/* The last fill: the best structure filled once more with Megatron's
 * order (stage_major) and FSDP groups (fsdp), then, with `others`, the
 * fastest other structures the climbs filled (FSDP pays where memory binds,
 * which can be in a structure the climbs, filling without it, ranked below
 * the best). */
static int rf_last_fill(rf_ctx *R, int stage_major, int fsdp, int others)
{
    /* a copy: keeping a faster prefix rewrites R->best_spec (and its
     * template count) while the fill still walks the structure */
    rf_spec fin = R->best_spec;
    uint64_t hb = ar_rf_hash(&fin);
    double v;
    int st, k, i;
    R->b.ws.stage_major = stage_major;
    R->b.ws.fsdp_search = fsdp;
    if ((st = ar_rf_fill_spec(&R->b, &R->work, &fin, rf_keep_prefix, R, &v, &k, &R->used))) return st;
    for (i = 0; others && R->top && i < R->ntop; i++) {
        if (R->top_hash[i] == hb) continue;
        ar_rf_copy(&fin, &R->top[i]);
        if ((st = ar_rf_fill_spec(&R->b, &R->work, &fin, rf_keep_prefix, R, &v, &k, &R->used))) return st;
    }
    return ARACHNE_OK;
}

/* The exact search of small clusters: every one-template plan, at most
 * `cap` of them; visit keeps each as a candidate start. */
typedef struct rf_exact {
    rf_ctx *R;
    long cap, seen;
} rf_exact;

static int rf_exact_visit(void *user, const arachne_plan *p)
{
    rf_exact *E = (rf_exact *)user;
    rf_spec s;
    int j;
    if (E->seen >= E->cap) return ARACHNE_E_CANCELLED;
    E->seen++;
    E->R->used++;
    s.n = 1;
    s.t[0].depth = p->t[0].depth;
    for (j = 0; j < p->t[0].depth; j++) { s.t[0].types[j] = p->t[0].stages[j].type; s.t[0].tps[j] = ar_stage_gpus(&p->t[0], j); }
    return ar_rf_keep(E->R, p, &s, 1);
}

static int rf_exact_run(rf_ctx *R, long cap)
{
    rf_exact E;
    arachne_plan scratch;
    long leaves = 0;
    int st, cut = 0;
    memset(&scratch, 0, sizeof scratch);
    E.R = R;
    E.cap = cap;
    E.seen = 0;
    /* saturated: a budget near LONG_MAX overflowed the product */
    st = ar_builder_enumerate_limited(&R->b, 1, R->deadline,
                                      cap > LONG_MAX / AR_REFINE_EXACT_NODES_PER_PLAN
                                          ? LONG_MAX
                                          : AR_REFINE_EXACT_NODES_PER_PLAN * (cap > 0 ? cap : 1),
                                      rf_exact_visit, &E, &scratch, &leaves, &cut);
    ar_plan_clear(&scratch);
    if (st == ARACHNE_E_CANCELLED) {
        if (E.seen < E.cap && !cut) R->capped = 1; /* the deadline, not a count, stopped it */
        st = ARACHNE_OK;
        arachne_clear_error();
    }
    return st;
}

int arachne_plan_refine(arachne_plan **out, const arachne_plan *start, const arachne_cost_model *cm,
                        long evaluations, double time_cap_s)
{
    double t0 = ar_now(), v;
    rf_ctx R;
    rf_spec cur;
    arachne_plan *given = NULL;
    ar_rng rng;
    int st, i, j, k, maxnode = 1, stage_major, fsdp_search;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_refine: out is NULL");
    *out = NULL;
    if (!start || !cm)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_refine: %s is NULL", start ? "cost model" : "plan");
    if (evaluations < 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_refine: evaluations %ld is negative", evaluations);
    if (!(time_cap_s >= 0.0 && time_cap_s <= 1e7))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_refine: time cap %g s is outside [0, 1e7]",
                        time_cap_s);
    if (start->ntemplates < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_refine: the plan has no template");
    if ((st = ar_plan_validate(cm, start))) {
        ar_error_prefix("arachne_plan_refine: the plan does not fit the cost model's cluster and model");
        return st;
    }
    memset(&R, 0, sizeof R);
    R.cm = cm;
    R.budget = evaluations;
    R.deadline = time_cap_s > 0 ? t0 + time_cap_s : 0.0;
    if ((st = ar_builder_init(&R.b, cm, NULL))) return st;
    /* the climb's own moves reorder stages (neighbours swapped), a fill at
     * a time; the fill's stage moves would multiply the cost of every
     * candidate (3-4.5x on bench_plan) */
    R.b.ws.move_stages = 0;
    /* and Megatron's placement order, tried on every fill, made a climb
     * 1.6-1.8 times as slow on bench_plan's 4,096- and 16,384-GPU clusters
     * and led it elsewhere (9.1618 -> 8.6375 iter/s at 16,384): the climb
     * fills in the fill's order, and its best structure is filled once
     * more with both orders at the end */
    stage_major = R.b.ws.stage_major;
    R.b.ws.stage_major = 0;
    /* FSDP groups (ARACHNE_OPT_FSDP_SEARCH) only from that last fill on
     * (and in the FSDP phase after it, below): tried in every climb's
     * fills, they led 3 of the 100 small validation compositions to slower
     * local optima (up to 11 %), none of which kept FSDP (2026-12-07); the
     * fill never tries them otherwise (fill.c) */
    fsdp_search = cm->setup.fsdp_search;
    ar_rf_ahead_open(&R);
    for (i = 0; i < cm->cluster->nnodes; i++) if (cm->cluster->nodes[i].gpus > maxnode) maxnode = cm->cluster->nodes[i].gpus;
    R.max_tp = 1;
    while (R.max_tp * 2 <= maxnode && R.max_tp * 2 <= (1 << AR_MAX_TP_LOG)) R.max_tp *= 2;
    R.best = ar_calloc(1, sizeof *R.best);
    R.split = ar_calloc(1, sizeof *R.split);
    given = ar_calloc(1, sizeof *given);
    R.seen = ar_calloc(RF_SEEN_SLOTS, sizeof *R.seen);
    if (!R.best || !R.split || !given || !R.seen) { st = ARACHNE_E_NO_MEMORY; goto done; }
    if (fsdp_search && evaluations > 0 && !(R.top = ar_calloc(RF_TOP, sizeof *R.top))) {
        st = ARACHNE_E_NO_MEMORY;
        goto done;
    }
    if ((st = ar_plan_init(R.best, cm)) || (st = ar_plan_init(&R.work, cm))) goto done;
    /* the plan as given, priced with this cost model, is the first candidate */
    if ((st = ar_plan_copy(given, start))) goto done;
    cur.n = start->ntemplates;
    for (i = 0; i < cur.n; i++) {
        cur.t[i].depth = start->t[i].depth;
        for (j = 0; j < start->t[i].depth; j++) {
            cur.t[i].types[j] = start->t[i].stages[j].type;
            cur.t[i].tps[j] = ar_stage_gpus(&start->t[i], j); /* the GPU group; the fill splits it into tp x cp */
        }
    }
    if (ar_plan_price(cm, given) == ARACHNE_OK) {
        if ((st = ar_rf_keep(&R, given, &cur, cur.n))) goto done;
    }
    arachne_clear_error();
    if (evaluations > 0) {
        /* its structure refilled (a plan made elsewhere may fill better here) */
        if ((st = rf_eval(&R, &cur, ar_rf_hash(&cur), &v, &k))) goto done;
        if (cm->cluster->total_gpus <= AR_REFINE_EXACT_GPUS && !rf_out_of_budget(&R) &&
            (st = rf_exact_run(&R, (R.budget - R.used) / 8)))
            goto done;
        ar_rng_seed(&rng, 0x72656669ULL);
        if ((st = rf_search(&R, &rng))) goto done;
    }
    if (R.have && (stage_major || fsdp_search) && evaluations > 0) {
        R.keep_exact = fsdp_search;
        if ((st = rf_last_fill(&R, stage_major, fsdp_search, 1))) goto done;
        /* FSDP paid in a last fill: memory binds, and the structures around
         * the best may shard better still, so the climbs go on with FSDP
         * groups in every fill, a quarter of the budget more (the table of
         * values seen held fills without them); the best so far stays the
         * bar, so this phase cannot make the plan slower */
        if (R.b.ws.fsdp_wins > 0 && !R.capped) {
            R.b.ws.stage_major = 0;
            memset(R.seen, 0, RF_SEEN_SLOTS * sizeof *R.seen);
            R.nseen = 0;
            ar_rf_ahead_forget(&R);
            R.budget = R.used + evaluations / 4;
            if ((st = rf_search(&R, &rng))) goto done;
            if ((st = rf_last_fill(&R, stage_major, fsdp_search, 0))) goto done;
        }
    }
    if (!R.have) {
        st = ar_error(ARACHNE_E_INFEASIBLE, "arachne_plan_refine: the plan does not price with this cost model "
                                            "and no variant of it fits");
        goto done;
    }
    {
        char m[sizeof R.best->method];
        snprintf(m, sizeof m, "%.*s%s", (int)(sizeof m - 1 - (R.capped ? 14 : 7)), start->method[0] ? start->method : "plan",
                 R.capped ? "+refine-capped" : "+refine");
        memcpy(R.best->method, m, sizeof m);
    }
    R.best->samples = start->samples;
    R.best->evaluations = start->evaluations + R.used;
    R.best->planning_s = start->planning_s + (ar_now() - t0);
    if ((st = ar_plan_finish(R.best))) goto done;
    *out = R.best;
    R.best = NULL;
done:
    if (R.best) arachne_plan_destroy(R.best);
    if (given) arachne_plan_destroy(given);
    if (R.split) arachne_plan_destroy(R.split);
    ar_rf_ahead_close(&R);
    free(R.seen);
    free(R.top);
    ar_plan_clear(&R.work);
    ar_builder_free(&R.b);
    return st;
}
