/* test_cost.c -- the cost model: pure formulas (min-max assignment, ring
 * all-reduce), and (below) stage pricing, memory, options and plan pricing. */
#include <stdlib.h>

#include "harness.h"
#include "calib.h"
#include "cost.h"

/* ---- min-max assignment ------------------------------------------------- */

static double tj(double tmax, double tsum, long m) { return m <= 0 ? 0.0 : (double)(m - 1) * tmax + tsum; }

/* Brute force over every m_j in [0, ceil(B/w_j)]: minimise the slowest
 * finishing time, then the overshoot, where a template that can run one
 * micro-batch within the optimal time must run at least one. */
static void brute(int B, int n, const int *r, const int *b, const double *tmax, const double *tsum,
                  double *best_T, long *best_over)
{
    long m[AR_MAX_TEMPLATES], mmax[AR_MAX_TEMPLATES];
    int j;
    *best_T = HUGE_VAL;
    for (j = 0; j < n; j++) { m[j] = 0; mmax[j] = (B + (long)r[j] * b[j] - 1) / ((long)r[j] * b[j]); }
    /* pass 1: optimal max time */
    for (;;) {
        long cap = 0;
        double T = 0.0;
        for (j = 0; j < n; j++) { cap += (long)r[j] * b[j] * m[j]; if (tj(tmax[j], tsum[j], m[j]) > T) T = tj(tmax[j], tsum[j], m[j]); }
        if (cap >= B && T < *best_T) *best_T = T;
        for (j = 0; j < n && ++m[j] > mmax[j]; j++) m[j] = 0;
        if (j == n) break;
    }
    /* pass 2: least overshoot at that time */
    *best_over = -1;
    for (j = 0; j < n; j++) m[j] = 0;
    for (;;) {
        long cap = 0;
        double T = 0.0;
        int ok = 1;
        for (j = 0; j < n; j++) {
            cap += (long)r[j] * b[j] * m[j];
            if (tj(tmax[j], tsum[j], m[j]) > T) T = tj(tmax[j], tsum[j], m[j]);
            if (tsum[j] <= *best_T && m[j] == 0) ok = 0;
        }
        if (ok && cap >= B && T <= *best_T && (*best_over < 0 || cap - B < *best_over)) *best_over = cap - B;
        for (j = 0; j < n && ++m[j] > mmax[j]; j++) m[j] = 0;
        if (j == n) break;
    }
}

/* n random templates for the assignment tests: 1..rmax replicas, micro-batch
 * 1..4, 1F1B times with integer-valued stage times (ties, the hard case,
 * are common) unless `fraction` adds a random fraction. */
static void draw_templates(ar_rng *rng, int n, int rmax, int fraction, int *r, int *b, double *tmax, double *tsum)
{
    int j;
    for (j = 0; j < n; j++) {
        r[j] = 1 + ar_rng_int(rng, rmax);
        b[j] = 1 << ar_rng_int(rng, 3);
        tmax[j] = (double)(1 + ar_rng_int(rng, 5));
        if (fraction) tmax[j] += ar_rng_uniform(rng);
        tsum[j] = tmax[j] * (1 + ar_rng_int(rng, 4));
    }
}

TEST(assignment_matches_brute_force)
{
    ar_rng rng;
    int it;
    ar_rng_seed(&rng, 7);
    for (it = 0; it < 400; it++) {
        int n = 1 + ar_rng_int(&rng, 3), B = 1 + ar_rng_int(&rng, 40), r[3], b[3], m[3], j;
        double tmax[3], tsum[3], T, bT;
        long cap = 0, bover;
        draw_templates(&rng, n, 4, it % 2, r, b, tmax, tsum);
        ASSERT_OK(ar_assign_microbatches(B, n, r, b, tmax, tsum, m, &T));
        brute(B, n, r, b, tmax, tsum, &bT, &bover);
        for (j = 0; j < n; j++) { ASSERT(m[j] >= 0); cap += (long)r[j] * b[j] * m[j]; }
        ASSERT(cap >= B);
        ASSERT_NEAR(T, bT, 1e-12);
        ASSERT_EQ(cap - B, bover);
        for (j = 0; j < n; j++) ASSERT_LE(tj(tmax[j], tsum[j], m[j]), T);
        if (n == 1) { /* one template: ceil(B / w) steps, its time exactly (the shortcut) */
            ASSERT_EQ(m[0], (B + r[0] * b[0] - 1) / (r[0] * b[0]));
            ASSERT(T == tj(tmax[0], tsum[0], m[0]));
        }
    }
}

/* The least max T over the divisions that run B exactly (every m_j >= 0),
 * by enumeration; HUGE_VAL when none does. */
static double brute_exact(int B, int n, const int *r, const int *b, const double *tmax, const double *tsum)
{
    long m[3], mmax[3];
    double best = HUGE_VAL;
    int j;
    for (j = 0; j < n; j++) { m[j] = 0; mmax[j] = B / ((long)r[j] * b[j]); }
    for (;;) {
        long run = 0;
        double T = 0.0;
        for (j = 0; j < n; j++) { run += (long)r[j] * b[j] * m[j]; if (tj(tmax[j], tsum[j], m[j]) > T) T = tj(tmax[j], tsum[j], m[j]); }
        if (run == B && T < best) best = T;
        for (j = 0; j < n && ++m[j] > mmax[j]; j++) m[j] = 0;
        if (j == n) break;
    }
    return best;
}

TEST(exact_assignment_matches_brute_force)
{
    ar_rng rng;
    int it, found = 0, none = 0;
    ar_rng_seed(&rng, 11);
    for (it = 0; it < 600; it++) {
        int n = 1 + ar_rng_int(&rng, 3), B = 1 + ar_rng_int(&rng, 60), r[3], b[3], m[3] = { -1, -1, -1 }, j, ok;
        double tmax[3], tsum[3], T = -1.0, bT;
        long run = 0;
        draw_templates(&rng, n, 6, it % 2, r, b, tmax, tsum);
        ok = ar_assign_microbatches_exact(B, n, r, b, tmax, tsum, HUGE_VAL, m, &T);
        bT = brute_exact(B, n, r, b, tmax, tsum);
        ASSERT_EQ(ok, bT < HUGE_VAL);
        if (!ok) { none++; ASSERT_EQ(m[0], -1); continue; }
        found++;
        for (j = 0; j < n; j++) {
            ASSERT(m[j] >= 0);
            run += (long)r[j] * b[j] * m[j];
            ASSERT_LE(tj(tmax[j], tsum[j], m[j]), T);
        }
        ASSERT_EQ(run, B);
        ASSERT_NEAR(T, bT, 1e-12);
        /* a cap at the least value, or above, gives the same division bit
         * for bit; one below it, none */
        {
            int mc[3] = { -1, -1, -1 }, k;
            double Tc = -1.0, caps[2];
            caps[0] = T;
            caps[1] = T * 1.5 + 1.0;
            for (k = 0; k < 2; k++) {
                ASSERT_EQ(ar_assign_microbatches_exact(B, n, r, b, tmax, tsum, caps[k], mc, &Tc), 1);
                ASSERT_EQ(Tc, T);
                for (j = 0; j < n; j++) ASSERT_EQ(mc[j], m[j]);
            }
            mc[0] = -1;
            ASSERT_EQ(ar_assign_microbatches_exact(B, n, r, b, tmax, tsum, nextafter(T, -HUGE_VAL), mc, &Tc), 0);
            ASSERT_EQ(mc[0], -1);
        }
    }
    /* both outcomes are exercised */
    ASSERT_GT(found, 100);
    ASSERT_GT(none, 20);
    /* above the bitset's range: no answer, the caller keeps its division */
    {
        int r[2] = { 3, 5 }, b[2] = { 1, 1 }, m[2] = { -1, -1 };
        double tmax[2] = { 1.0, 1.0 }, tsum[2] = { 2.0, 2.0 };
        ASSERT_EQ(ar_assign_microbatches_exact(AR_EXACT_MAX_BATCH + 1, 2, r, b, tmax, tsum, HUGE_VAL, m, NULL), 0);
        ASSERT_EQ(m[0], -1);
        ASSERT_EQ(ar_assign_microbatches_exact(AR_EXACT_MAX_BATCH, 2, r, b, tmax, tsum, HUGE_VAL, m, NULL), 1);
        ASSERT_EQ(3L * m[0] + 5L * m[1], AR_EXACT_MAX_BATCH);
    }
}

TEST(assignment_idles_only_a_template_that_would_slow_the_iteration)
{
    /* template 1 needs 100 s for a single micro-batch: it gets none */
    int r[2] = { 4, 1 }, b[2] = { 1, 1 }, m[2];
    double tmax[2] = { 1.0, 100.0 }, tsum[2] = { 4.0, 100.0 }, T;
    ASSERT_OK(ar_assign_microbatches(64, 2, r, b, tmax, tsum, m, &T));
    ASSERT_EQ(m[0], 16);
    ASSERT_EQ(m[1], 0);
    ASSERT_NEAR(T, 19.0, 1e-15);
    /* two equal templates share the batch evenly */
    tmax[1] = 1.0; tsum[1] = 4.0; r[1] = 4;
    ASSERT_OK(ar_assign_microbatches(64, 2, r, b, tmax, tsum, m, &T));
    ASSERT_EQ(m[0], 8);
    ASSERT_EQ(m[1], 8);
    ASSERT_NEAR(T, 11.0, 1e-15);
}

TEST(assignment_large_overshoot_stays_feasible_and_minimal)
{
    /* 20,000 samples per micro-batch step in each template: the overshoot
     * (29,999 at the optimal time) is beyond the exact knapsack's range, and
     * the greedy cut still reaches the least overshoot here (9,999) */
    int r[2] = { 10000, 5000 }, b[2] = { 2, 4 }, m[2];
    double tmax[2] = { 1.0, 1.0 }, tsum[2] = { 3.0, 3.0 }, T;
    ASSERT_OK(ar_assign_microbatches(50001, 2, r, b, tmax, tsum, m, &T));
    ASSERT_NEAR(T, 4.0, 1e-15);
    ASSERT_EQ(m[0] + m[1], 3);
    ASSERT(m[0] >= 1 && m[1] >= 1);
}

TEST(assignment_rejects_bad_input)
{
    int r[1] = { 1 }, b[1] = { 1 }, m[1];
    double tmax[1] = { 1.0 }, tsum[1] = { 0.5 };
    ASSERT_STATUS(ar_assign_microbatches(8, 1, r, b, tmax, tsum, m, NULL), ARACHNE_E_INVALID_ARGUMENT);
    tsum[0] = 2.0;
    ASSERT_STATUS(ar_assign_microbatches(0, 1, r, b, tmax, tsum, m, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_assign_microbatches(8, 0, r, b, tmax, tsum, m, NULL), ARACHNE_E_INVALID_ARGUMENT);
    r[0] = 0;
    ASSERT_STATUS(ar_assign_microbatches(8, 1, r, b, tmax, tsum, m, NULL), ARACHNE_E_INVALID_ARGUMENT);
}

/* ---- ring all-reduce ------------------------------------------------------ */

TEST(ring_allreduce_formula)
{
    /* 8 ranks, 1 GB over 10 GB/s, 5 us per step: 2*7/8 * 0.1 s + 14 * 5 us */
    ASSERT_NEAR(ar_ring_allreduce_s(1e9, 8, 10e9, 5e-6), 1.75 * 0.1 + 14 * 5e-6, 1e-12);
    ASSERT_EQ(ar_ring_allreduce_s(1e9, 1, 10e9, 5e-6), 0);
    ASSERT_EQ(ar_ring_allreduce_s(0.0, 8, 10e9, 5e-6), 0);
    /* without a distributed optimizer the sync is the all-reduce of the grads */
    ASSERT_NEAR(ar_sync_s(1e8, 4, 4.0, 2.0, 0, 1e10, 0.0), ar_ring_allreduce_s(4e8, 4, 1e10, 0.0), 1e-15);
    /* with it: reduce-scatter of 4-byte grads + all-gather of 2-byte weights */
    ASSERT_NEAR(ar_sync_s(1e8, 4, 4.0, 2.0, 1, 1e10, 0.0), 0.75 * 1e8 * 6.0 / 1e10, 1e-12);
}


/* ---- fixtures: model, cluster, profile, hand-built plans ------------------ */

typedef struct fx {
    arachne_model *m;
    arachne_cluster *c;
    arachne_profile *p;
    arachne_cost_model *cm;
} fx;

static void fx_free(fx *f)
{
    arachne_cost_model_destroy(f->cm);
    arachne_profile_destroy(f->p);
    arachne_cluster_destroy(f->c);
    arachne_model_destroy(f->m);
    memset(f, 0, sizeof *f);
}

/* Per-layer seconds of the synthetic profile: forward = base x mbs / tp,
 * backward = 2 x forward, TP comm = 10 % of forward when tp > 1,
 * activations = the model's own selective-recompute bytes. */
static double gpu_base(const char *gpu)
{
    return strcmp(gpu, "H100") == 0 ? 0.004 : strcmp(gpu, "A100-40") == 0 ? 0.010 : 0.020;
}

static int add_entries(arachne_profile *p, const arachne_model *m, const char *gpu, int kind, int seq)
{
    int tp, mbs, st;
    for (tp = 1; tp <= 8; tp *= 2)
        for (mbs = 1; mbs <= 4; mbs *= 2) {
            double f = gpu_base(gpu) * mbs / tp * (kind == ARACHNE_LAYER_DENSE || kind == ARACHNE_LAYER_MOE ? 1.0 : 0.5);
            double act = 0.0;
            if ((st = arachne_model_layer_act_bytes(m, kind, seq, mbs, tp, ARACHNE_RECOMPUTE_SELECTIVE, &act)) != ARACHNE_OK) return st;
            if ((st = arachne_profile_add(p, gpu, kind, tp, mbs, f, 2.0 * f, tp > 1 ? 0.1 * f : 0.0, act)) != ARACHNE_OK) return st;
        }
    return ARACHNE_OK;
}

static int fx_init(fx *f, const char *model, const char *spec, int seq)
{
    int st, i, k;
    memset(f, 0, sizeof *f);
    if ((st = arachne_model_preset(&f->m, model)) != ARACHNE_OK) return st;
    if ((st = arachne_cluster_parse(&f->c, spec)) != ARACHNE_OK) return st;
    if ((st = arachne_profile_create(&f->p, f->m->name, seq)) != ARACHNE_OK) return st;
    for (i = 0; i < f->c->ntypes; i++)
        for (k = 0; k < 4; k++) {
            if (k == ARACHNE_LAYER_MOE && f->m->experts == 0) continue;
            if (k == ARACHNE_LAYER_DENSE && ar_model_kind_count(f->m, AR_LAYER_DENSE) == 0) continue;
            if ((st = add_entries(f->p, f->m, f->c->types[i].name, k, seq)) != ARACHNE_OK) return st;
        }
    return arachne_cost_model_create(&f->cm, f->m, f->c, f->p);
}

/* Appends a template (stage types by name, TP, block bounds) with replicas
 * placed first-fit replica by replica, stage by stage, on nodes of the
 * stage's type (used[] tracks GPUs taken per node). */
static int add_template(arachne_plan *pl, const arachne_cluster *c, int *used, int depth, const char *const *types,
                        const int *tps, const int *bounds, int replicas, int mbs)
{
    ar_template *t = &pl->t[pl->ntemplates];
    int s, q, a, nd;
    memset(t, 0, sizeof *t);
    t->depth = depth;
    t->replicas = replicas;
    t->micro_batch = mbs;
    for (s = 0; s < depth; s++) {
        ar_stage *S = &t->stages[s];
        S->type = ar_cluster_type_index(c, types[s]);
        if (S->type < 0) return -1;
        S->tp = tps[s];
        S->first = bounds[s];
        S->end = bounds[s + 1];
        S->ep = 1; S->etp = S->tp; S->edp = replicas;
    }
    for (q = 0; q < replicas; q++)
        for (s = 0; s < depth; s++) {
            const ar_stage *S = &t->stages[s];
            for (nd = 0; nd < c->nnodes; nd++)
                if (c->nodes[nd].type == S->type && c->nodes[nd].gpus - used[nd] >= S->tp) break;
            if (nd == c->nnodes) return -1;
            pl->ranks = realloc(pl->ranks, sizeof *pl->ranks * (size_t)(pl->nranks + S->tp));
            for (a = 0; a < S->tp; a++) {
                ar_rank *r = &pl->ranks[pl->nranks];
                r->rank = pl->nranks++;
                r->node = nd;
                r->gpu = used[nd]++;
                r->tmpl = pl->ntemplates;
                r->replica = q;
                r->stage = s;
                r->tp_rank = a;
            }
        }
    pl->ntemplates++;
    return 0;
}

static void plan_free(arachne_plan *pl)
{
    ar_plan_clear(pl); /* ranks, and the JSON text pricing leaves */
    memset(pl, 0, sizeof *pl);
}

/* ---- stage times ------------------------------------------------------------- */

TEST(stage_time_sums_profile_and_prices_the_send_over_the_real_link)
{
    fx f;
    arachne_plan pl;
    int used[16] = { 0 };
    static const char *const ty[2] = { "H100", "H100" };
    const int tp2[2] = { 2, 2 }, tp4[2] = { 4, 4 }, bounds[3] = { 0, 16, 32 };
    const ar_gpu_spec *g;
    double f1 = gpu_base("H100") * 1 / 2, bytes, compute0, tpc0;
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:2x4", 4096));
    g = &f.c->types[0];
    memset(&pl, 0, sizeof pl);
    /* tp 2 x 2 stages: both stages of a replica share a node */
    ASSERT_EQ(add_template(&pl, f.c, used, 2, ty, tp2, bounds, 1, 1), 0);
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 8));
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    compute0 = 16 * 3.0 * f1 + 3.0 * f1 * 0.5;   /* 16 blocks + embedding (half-cost entry) */
    tpc0 = 16 * 0.1 * f1 + 0.1 * f1 * 0.5;
    bytes = 4096.0 * 1 * 4096 * 2;
    ASSERT_NEAR(pl.t[0].stages[0].compute_s, compute0, 1e-12);
    ASSERT_NEAR(pl.t[0].stages[0].tp_comm_s, tpc0, 1e-12);
    ASSERT_NEAR(pl.t[0].stages[0].p2p_s, 2.0 * (bytes / g->intra_bw + g->intra_lat), 1e-12);
    ASSERT_EQ(pl.t[0].stages[1].p2p_s, 0);
    ASSERT_NEAR(pl.t[0].stages[0].stage_s, compute0 + tpc0 + pl.t[0].stages[0].p2p_s, 1e-12);
    ASSERT_EQ(pl.t[0].micro_batches, 8);
    plan_free(&pl);
    /* tp 4 x 2 stages: each stage fills a node, the send crosses nodes */
    memset(used, 0, sizeof used);
    ASSERT_EQ(add_template(&pl, f.c, used, 2, ty, tp4, bounds, 1, 1), 0);
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    ASSERT_NEAR(pl.t[0].stages[0].p2p_s, 2.0 * (bytes / f.c->link_bw[0][0] + g->inter_lat), 1e-12);
    plan_free(&pl);
    fx_free(&f);
}

TEST(full_recompute_adds_a_forward_and_scales_activations)
{
    fx f;
    arachne_plan pl;
    int used[16] = { 0 };
    static const char *const ty[1] = { "H100" };
    const int tp[1] = { 1 }, bounds[2] = { 0, 32 };
    double c_sel, m_sel, full_act, sel_act;
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:1x4", 4096));
    memset(&pl, 0, sizeof pl);
    ASSERT_EQ(add_template(&pl, f.c, used, 1, ty, tp, bounds, 1, 1), 0);
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 4));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_HEADROOM, 0.0));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_OPTIM_BYTES, 0.0)); /* fit one GPU */
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    c_sel = pl.t[0].stages[0].compute_s;
    m_sel = pl.t[0].stages[0].mem_bytes;
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    /* one more forward per layer: 32 x f + embed/head forwards (half-cost) */
    ASSERT_NEAR(pl.t[0].stages[0].compute_s - c_sel, 32 * 0.004 + 2 * 0.002, 1e-12);
    ASSERT_OK(arachne_model_layer_act_bytes(f.m, ARACHNE_LAYER_DENSE, 4096, 1, 1, ARACHNE_RECOMPUTE_FULL, &full_act));
    ASSERT_OK(arachne_model_layer_act_bytes(f.m, ARACHNE_LAYER_DENSE, 4096, 1, 1, ARACHNE_RECOMPUTE_SELECTIVE, &sel_act));
    /* one micro-batch in flight: 32 layers change from selective to full, plus one layer rebuilt */
    ASSERT_NEAR(m_sel - pl.t[0].stages[0].mem_bytes, 32 * (sel_act - full_act) - sel_act, 1e-9);
    plan_free(&pl);
    fx_free(&f);
}

/* torchtitan's per-op selective checkpointing recomputes every second matmul
 * of a dense block: k, the output projection and the up projection of
 * Llama's SwiGLU -- 2 (h kv d + H d h + h f) FLOPs per token, charged as
 * that share of the block's forward; embedding and head are not recomputed. */
TEST(alternate_matmul_recompute_adds_their_forward_share)
{
    fx f;
    arachne_plan pl;
    int used[16] = { 0 };
    static const char *const ty[1] = { "H100" };
    const int tp[1] = { 1 }, bounds[2] = { 0, 32 };
    double c_sel, m_sel, share, h = 4096, seq = 4096;
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:1x4", 4096));
    memset(&pl, 0, sizeof pl);
    ASSERT_EQ(add_template(&pl, f.c, used, 1, ty, tp, bounds, 1, 1), 0);
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 4));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_HEADROOM, 0.0));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_OPTIM_BYTES, 0.0));
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    c_sel = pl.t[0].stages[0].compute_s;
    m_sel = pl.t[0].stages[0].mem_bytes;
    share = 2.0 * (h * 8 * 128 + 32 * 128 * h + h * 14336) / (ar_model_flops_fwd(f.m, AR_LAYER_DENSE, 4096, 1) / seq);
    ASSERT_NEAR(ar_model_alt_mm_share(f.m, AR_LAYER_DENSE, 4096), share, 1e-12);
    ASSERT(share > 0.3 && share < 0.4);
    {
        /* the forward's two TP all-gathers run again: 5 all-reduce
         * equivalents per block instead of 4 */
        ar_cost_entry t0, t1;
        const ar_cost_entry *e0, *e1;
        double tp0;
        ASSERT_OK(ar_cost_entry_get(f.cm, 0, AR_LAYER_DENSE, 4, 1, &t0, &e0));
        tp0 = e0->tp_comm_s;
        ASSERT_GT(tp0, 0.0);
        ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_RECOMPUTE_ALT_MM, 1));
        ASSERT_OK(ar_cost_entry_get(f.cm, 0, AR_LAYER_DENSE, 4, 1, &t1, &e1));
        ASSERT_NEAR(e1->tp_comm_s, 1.25 * tp0, 1e-12);
    }
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    ASSERT_NEAR(pl.t[0].stages[0].compute_s - c_sel, 32 * 0.004 * share, 1e-9);
    ASSERT_NEAR(pl.t[0].stages[0].mem_bytes, m_sel, 1e-12);
    /* under full recomputation the whole forward is repeated already */
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    ASSERT_NEAR(pl.t[0].stages[0].compute_s - c_sel, 32 * 0.004 + 2 * 0.002, 1e-9);
    plan_free(&pl);
    fx_free(&f);
}

/* ---- memory by hand ------------------------------------------------------------ */

TEST(memory_matches_hand_computation_llama3_8b)
{
    /* llama3-8b, 4 stages of 8 blocks, tp 2, mbs 1, M = 8 (one replica, B = 8).
     * Parameters by hand (the presets' shapes, docs/models.md):
     *   block = attention 4096 x (4096 + 1024 + 1024 + 4096) + SwiGLU 3 x 4096 x 14336 + 2 norms x 4096
     *         = 41,943,040 + 176,160,768 + 8,192 = 218,112,000
     *   embedding = 128,256 x 4,096 = 525,336,576; head = 525,336,576 + final norm 4,096 */
    const double block = 218112000.0, embed = 525336576.0, headp = 525340672.0;
    fx f;
    arachne_plan pl;
    int used[16] = { 0 }, s;
    static const char *const ty[4] = { "H100", "H100", "H100", "H100" };
    const int tp[4] = { 2, 2, 2, 2 }, bounds[5] = { 0, 8, 16, 24, 32 };
    double act_dense, act_embed, act_head, x;
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:2x4", 4096));
    ASSERT_OK(arachne_model_layer_params(f.m, ARACHNE_LAYER_DENSE, &x));
    ASSERT_EQ(x, block);
    ASSERT_OK(arachne_model_layer_params(f.m, ARACHNE_LAYER_EMBED, &x));
    ASSERT_EQ(x, embed);
    ASSERT_OK(arachne_model_layer_params(f.m, ARACHNE_LAYER_HEAD, &x));
    ASSERT_EQ(x, headp);
    ASSERT_OK(arachne_profile_lookup(f.p, "H100", ARACHNE_LAYER_DENSE, 2, 1, NULL, NULL, NULL, &act_dense));
    ASSERT_OK(arachne_profile_lookup(f.p, "H100", ARACHNE_LAYER_EMBED, 2, 1, NULL, NULL, NULL, &act_embed));
    ASSERT_OK(arachne_profile_lookup(f.p, "H100", ARACHNE_LAYER_HEAD, 2, 1, NULL, NULL, NULL, &act_head));
    memset(&pl, 0, sizeof pl);
    ASSERT_EQ(add_template(&pl, f.c, used, 4, ty, tp, bounds, 1, 1), 0);
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 8));
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    ASSERT_EQ(pl.t[0].micro_batches, 8);
    for (s = 0; s < 4; s++) {
        double params = 8 * block + (s == 0 ? embed : 0) + (s == 3 ? headp : 0);
        double per_gpu = params / 2;                              /* tp 2 */
        double weights = 2 * per_gpu, grads = 4 * per_gpu, optim = 12 * per_gpu;
        int in_flight = 4 - s;                                    /* min(p - s, M = 8) */
        double acts = in_flight * (8 * act_dense + (s == 0 ? act_embed : 0) + (s == 3 ? act_head : 0));
        double want = weights + grads + optim + acts + 2.5e9;
        ar_stage_mem mm;
        ASSERT_NEAR(pl.t[0].stages[s].mem_bytes, want, 1e-12);
        ASSERT_OK(ar_stage_memory(f.cm, &pl.t[0], s, 1, 1, 8, &mm));
        ASSERT_NEAR(mm.weights, weights, 1e-12);
        ASSERT_NEAR(mm.grads, grads, 1e-12);
        ASSERT_NEAR(mm.optim, optim, 1e-12);
        ASSERT_NEAR(mm.acts, acts, 1e-12);
        ASSERT_EQ(mm.in_flight, in_flight);
        ASSERT_NEAR(mm.capacity, 80.0 * 1073741824.0 * 0.92, 1e-12); /* H100: 80 GiB */
    }
    /* stage 0 by the numbers: 1,135,116,288 params per GPU x 18 B = 20.43 GB */
    ASSERT_NEAR((8 * block + embed) / 2 * 18, 20432093184.0, 1e-12);
    /* distributed optimizer over the 2 replicas: 6 + 12/2 bytes per parameter */
    {
        ar_stage_mem mm;
        ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_DIST_OPTIMIZER, 1));
        ASSERT_OK(ar_stage_memory(f.cm, &pl.t[0], 1, 2, 2, 8, &mm));
        ASSERT_NEAR(mm.optim, 12 * (8 * block / 2) / 2, 1e-12);
        ASSERT_NEAR(mm.weights + mm.grads, 6 * (8 * block / 2), 1e-12);
        ASSERT_EQ(mm.in_flight, 3);
    }
    plan_free(&pl);
    fx_free(&f);
}

TEST(over_memory_plan_names_stage_and_bytes)
{
    fx f;
    arachne_plan pl, before;
    int used[16] = { 0 };
    static const char *const ty[2] = { "H100", "A6000" };
    const int tp[2] = { 4, 1 }, bounds[3] = { 0, 20, 32 };
    ar_stage_mem mm;
    char want[256];
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:1x4,a6000:1x4", 4096));
    memset(&pl, 0, sizeof pl);
    ASSERT_EQ(add_template(&pl, f.c, used, 2, ty, tp, bounds, 1, 1), 0);
    pl.iteration_s = 123.0;
    memcpy(&before, &pl, sizeof pl);
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_OUT_OF_MEMORY_PLAN);
    ASSERT_OK(ar_stage_memory(f.cm, &pl.t[0], 1, 1, 1, 512, &mm));
    snprintf(want, sizeof want, "template 0 stage 1 (A6000, tp 1, layers 20-32): needs %.1f GB, has 47.4 GB (over by %.1f GB)",
             mm.total / 1e9, (mm.total - 48.0 * 1073741824.0 * 0.92) / 1e9); /* A6000: 48 GiB x 0.92 */
    ASSERT_STR(arachne_last_error(), want);
    ASSERT(memcmp(&before, &pl, sizeof pl) == 0); /* nothing written on failure */
    plan_free(&pl);
    fx_free(&f);
}

/* ---- gradient sync: ring size, slowest link ------------------------------------ */

TEST(sync_uses_intra_node_ring_inside_one_node_and_slowest_link_across)
{
    fx f;
    arachne_plan pl;
    int used[16] = { 0 }, h, a;
    static const char *const tyh[1] = { "H100" }, *const tya[1] = { "A6000" };
    const int tp1[1] = { 1 }, bounds[2] = { 0, 32 };
    double params, want, bw;
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:2x4,a6000:1x4", 4096));
    h = ar_cluster_type_index(f.c, "H100");
    a = ar_cluster_type_index(f.c, "A6000");
    /* 1-byte weights and gradients, no optimizer state: a whole model fits one GPU */
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_WEIGHT_BYTES, 1.0));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GRAD_BYTES, 1.0));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_OPTIM_BYTES, 0.0));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_HEADROOM, 0.0));
    /* replicated optimizer, the whole all-reduce charged after the backward */
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_DIST_OPTIMIZER, 0));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_OVERLAP_GRAD_REDUCE, 0));
    params = f.m->total_params;
    /* 4 replicas on one node: ring over NVLink */
    memset(&pl, 0, sizeof pl);
    ASSERT_EQ(add_template(&pl, f.c, used, 1, tyh, tp1, bounds, 4, 1), 0);
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    want = ar_ring_allreduce_s(params * 1.0, 4, f.c->types[h].intra_bw * ar_intra_link_eff(&f.c->types[h]),
                               f.c->types[h].intra_lat);
    ASSERT_NEAR(pl.t[0].stages[0].sync_s, want, 1e-12);
    plan_free(&pl);
    /* 8 replicas over two H100 nodes: the H100-H100 inter-node link, one
     * ring channel per replica on a node (4, each on its own port) */
    memset(used, 0, sizeof used);
    ASSERT_EQ(add_template(&pl, f.c, used, 1, tyh, tp1, bounds, 8, 1), 0);
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    bw = 4 * f.c->link_bw[h][h];
    if (bw > f.c->types[h].intra_bw) bw = f.c->types[h].intra_bw;
    want = ar_ring_allreduce_s(params * 1.0, 8, bw * ar_inter_link_eff(), f.c->types[h].inter_lat);
    ASSERT_NEAR(pl.t[0].stages[0].sync_s, want, 1e-12);
    /* add an A6000 template: every layer now syncs over 8 + 2 replicas and
     * the slowest link among the types holding it */
    ASSERT_EQ(add_template(&pl, f.c, used, 1, tya, tp1, bounds, 2, 1), 0);
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    bw = f.c->link_bw[h][a];
    if (f.c->link_bw[a][a] < bw) bw = f.c->link_bw[a][a];
    ASSERT_NEAR(bw, f.c->types[a].inter_bw, 1e-12); /* default: the slower side */
    /* the A6000 node holds 2 replicas: two channels on that side, and the
     * ring passes the hop between them, PCIe at its own ring's rate (9.6 GB/s,
     * below the two ports' 20 GB/s) */
    bw = 2 * bw * ar_inter_link_eff();
    ASSERT(f.c->types[a].intra_bw * ar_intra_link_eff(&f.c->types[a]) < bw);
    bw = f.c->types[a].intra_bw * ar_intra_link_eff(&f.c->types[a]);
    want = ar_ring_allreduce_s(params * 1.0, 10, bw, f.c->types[a].inter_lat);
    ASSERT_NEAR(pl.t[0].stages[0].sync_s, want, 1e-12);
    ASSERT_NEAR(pl.t[1].stages[0].sync_s, want, 1e-12);
    /* iteration = slowest pipeline + slowest sync + optimizer step (no optimizer
     * state: reads gradients, writes weights) */
    {
        double fin = 0.0, opt = 0.0;
        int j;
        for (j = 0; j < 2; j++) {
            const ar_template *t = &pl.t[j];
            double T = (t->micro_batches - 1) * t->stages[0].stage_s + t->stages[0].stage_s;
            double u = params * (1.0 + 1.0) / f.c->types[t->stages[0].type].hbm_bw;
            if (T > fin) fin = T;
            if (u > opt) opt = u;
        }
        ASSERT_NEAR(pl.iteration_s, fin + want + opt, 1e-12);
        ASSERT_NEAR(pl.samples_per_s, 512 / pl.iteration_s, 1e-12);
        ASSERT_NEAR(pl.tokens_per_s, pl.samples_per_s * 4096, 1e-12);
        ASSERT_EQ(pl.gpus_used, 10);
        ASSERT_EQ(pl.gpus_total, 12);
        ASSERT_EQ(8 * pl.t[0].micro_batches + 2 * pl.t[1].micro_batches >= 512, 1);
        ASSERT(pl.mfu > 0.0 && pl.mfu < 1.0);
        ASSERT_NEAR(pl.mfu, ar_cost_model_flops_per_sample(f.cm) * 512 /
                    (pl.iteration_s * (8 * f.c->types[h].flops + 2 * f.c->types[a].flops)), 1e-12);
    }
    plan_free(&pl);
    fx_free(&f);
}

/* ---- errors: missing profile key, options ------------------------------------ */

TEST(missing_profile_entry_is_infeasible_naming_the_key)
{
    fx f;
    arachne_plan pl;
    int used[16] = { 0 };
    static const char *const ty[1] = { "H100" };
    const int tp[1] = { 1 }, bounds[2] = { 0, 32 };
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:1x4", 4096));
    memset(&pl, 0, sizeof pl);
    ASSERT_EQ(add_template(&pl, f.c, used, 1, ty, tp, bounds, 1, 8), 0); /* mbs 8 is not profiled */
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INFEASIBLE);
    ASSERT_CONTAINS(arachne_last_error(), "(GPU H100, layer embed, tp 1, micro-batch 8)");
    pl.t[0].micro_batch = 3; /* not a power of two: the slow path, same rule */
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INFEASIBLE);
    ASSERT_CONTAINS(arachne_last_error(), "micro-batch 3");
    plan_free(&pl);
    fx_free(&f);
}

TEST(options_defaults_and_rejections)
{
    fx f;
    double v;
    static const double defaults[19] = { 512, 4096, 2, 4, 12, 1, 1, 0.08, 1, 16, 1, 1, 0, 0, 0, 1, 8, 0, 1 };
    int k;
    ar_setup su;
    ar_setup_defaults(&su);
    ASSERT_EQ(su.global_batch, 512);
    ASSERT_EQ(su.seq_len, 4096);
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:1x4", 4096));
    for (k = 0; k < 19; k++) {
        ASSERT_OK(arachne_cost_model_get(f.cm, k, &v));
        ASSERT_NEAR(v, defaults[k], 1e-15);
    }
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "global_batch");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 12.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_SEQ_LEN, 2048), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "2048");
    ASSERT_CONTAINS(arachne_last_error(), "4096");
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_SEQ_LEN, 4096));
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_WEIGHT_BYTES, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_GRAD_BYTES, -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_OPTIM_BYTES, NAN), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "optim_bytes");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_DIST_OPTIMIZER, 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_RECOMPUTE, 3), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "recompute");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_HEADROOM, 1.0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_EXPERT_TILING, 0.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_MAX_DEPTH, 33), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "max_depth");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_OVERLAP_GRAD_REDUCE, 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "overlap_grad_reduce");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_TP_COMM_OVERLAP, -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_CONTEXT_PARALLEL, 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "context_parallel");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_MAX_VP, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "max_vp");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_MAX_VP, 17), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_EP_HIERARCHICAL, 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "ep_hierarchical");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_EXACT_BATCH, 0.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "exact_batch");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_STAGE_REVERSAL, 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "stage_reversal");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_PRICED_RESPLIT, -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "priced_resplit");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_STAGE_MOVES, 3), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "stage_moves");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_STAGE_MAJOR, 0.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "stage_major");
    ASSERT_OK(arachne_cost_model_get(f.cm, ARACHNE_OPT_STAGE_MAJOR, &v));
    ASSERT(v == 1.0);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_FSDP_SEARCH, 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "fsdp_search");
    ASSERT_OK(arachne_cost_model_get(f.cm, ARACHNE_OPT_FSDP_SEARCH, &v));
    ASSERT(v == 1.0);
    ASSERT_OK(arachne_cost_model_get(f.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, &v));
    ASSERT(v == 1.0); /* full recomputation where a probe says it pays */
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "recompute_search");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, 3), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "recompute_search");
    ASSERT_OK(arachne_cost_model_get(f.cm, ARACHNE_OPT_EXACT_DIVISION, &v));
    ASSERT(v == 0.0);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_EXACT_DIVISION, 0.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "exact_division");
    ASSERT_STATUS(arachne_cost_model_set(f.cm, 26, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "0..25");
    ASSERT_STATUS(arachne_cost_model_get(f.cm, 26, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_get(f.cm, -1, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_set(NULL, 0, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_cost_model_price(f.cm, NULL), ARACHNE_E_INVALID_ARGUMENT);
    /* the setup is unchanged by the failures */
    for (k = 0; k < 19; k++) {
        ASSERT_OK(arachne_cost_model_get(f.cm, k, &v));
        ASSERT_NEAR(v, defaults[k], 1e-15);
    }
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_HEADROOM, 0.2));
    ASSERT_OK(arachne_cost_model_get(f.cm, ARACHNE_OPT_HEADROOM, &v));
    ASSERT_NEAR(v, 0.2, 1e-15);
    arachne_cost_model_destroy(NULL);
    fx_free(&f);
}

TEST(create_rejects_mismatched_profile)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = (arachne_cost_model *)&m; /* must be reset to NULL */
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ASSERT_OK(arachne_cluster_parse(&c, "h100:1x4"));
    ASSERT_OK(arachne_profile_create(&p, "qwen3-8b", 4096));
    ASSERT_STATUS(arachne_cost_model_create(&cm, m, c, p), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(cm == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "qwen3-8b");
    ASSERT_STATUS(arachne_cost_model_create(&cm, NULL, c, p), ARACHNE_E_INVALID_ARGUMENT);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
}

TEST(bad_plans_are_rejected_not_crashed)
{
    fx f;
    arachne_plan pl;
    int used[16] = { 0 };
    static const char *const ty[2] = { "H100", "H100" };
    const int tp[2] = { 2, 2 }, bounds[3] = { 0, 16, 32 };
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:2x4", 4096));
    memset(&pl, 0, sizeof pl);
    ASSERT_EQ(add_template(&pl, f.c, used, 2, ty, tp, bounds, 1, 1), 0);
    pl.t[0].stages[1].first = 15;
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INVALID_PLAN);
    pl.t[0].stages[1].first = 16;
    pl.t[0].stages[1].end = 33;
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INVALID_PLAN);
    pl.t[0].stages[1].end = 32;
    pl.t[0].stages[0].type = 7;
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INVALID_PLAN);
    pl.t[0].stages[0].type = 0;
    pl.ranks[0].node = 9;
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INVALID_PLAN);
    pl.ranks[0].node = 0;
    pl.ranks[1].tp_rank = 0; /* two GPUs on one slot, one slot empty */
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INVALID_PLAN);
    pl.ranks[1].tp_rank = 1;
    snprintf(pl.model, sizeof pl.model, "qwen3-8b");
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INVALID_ARGUMENT);
    pl.model[0] = '\0';
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    ASSERT_STR(pl.model, "llama3-8b");
    plan_free(&pl);
    fx_free(&f);
}

/* ---- MoE: expert tiling ---------------------------------------------------------- */

TEST(moe_tiling_ep1_etp_tp_reproduces_profile_and_ep_pays_all_to_all)
{
    fx f;
    arachne_plan pl;
    int used[16] = { 0 }, nmoe, ndense;
    static const char *const ty[1] = { "H100" };
    const int tp[1] = { 2 }, bounds[2] = { 0, 48 };
    const ar_gpu_spec *g;
    double base, ep_bytes, dense_mem, c0;
    ASSERT_OK(fx_init(&f, "qwen3-30b-a3b", "h100:2x4", 4096));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_WEIGHT_BYTES, 1.0)); /* fit 48 blocks on a tp-2 group */
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GRAD_BYTES, 1.0));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_OPTIM_BYTES, 0.0));
    g = &f.c->types[0];
    nmoe = ar_model_kind_count(f.m, AR_LAYER_MOE);
    ndense = ar_model_kind_count(f.m, AR_LAYER_DENSE);
    ASSERT_EQ(nmoe + ndense, 48);
    memset(&pl, 0, sizeof pl);
    /* 4 replicas x tp 2 = 8 GPUs over two nodes, default tiling ep 1, etp 2, edp 4 */
    ASSERT_EQ(add_template(&pl, f.c, used, 1, ty, tp, bounds, 4, 1), 0);
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    base = gpu_base("H100") / 2;   /* entry (MoE, tp 2, mbs 1): forward */
    c0 = nmoe * 3 * base + 2 * 3 * base * 0.5;  /* blocks + embed + head (half-cost entries) */
    ASSERT_NEAR(pl.t[0].stages[0].compute_s, c0, 1e-12);
    ASSERT_EQ(pl.t[0].stages[0].ep_comm_s, 0);
    dense_mem = pl.t[0].stages[0].mem_bytes;
    /* ep 2 within a node (blocks of 2 x 2 consecutive GPUs sit on one node):
     * same compute, all-to-all over NVLink, experts halved in memory */
    pl.t[0].stages[0].ep = 2; pl.t[0].stages[0].etp = 2; pl.t[0].stages[0].edp = 2;
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    ASSERT_NEAR(pl.t[0].stages[0].compute_s, c0, 1e-12);
    ep_bytes = 4096.0 * 1 / 2 * f.m->top_k * f.m->hidden * 2 * 0.5;
    ASSERT_NEAR(pl.t[0].stages[0].ep_comm_s, nmoe * 4 * (ep_bytes / g->intra_bw + g->intra_lat), 1e-12);
    ASSERT(pl.t[0].stages[0].mem_bytes < dense_mem);
    /* ep 8: the group spans both nodes -> inter-node link */
    pl.t[0].stages[0].ep = 8; pl.t[0].stages[0].etp = 1; pl.t[0].stages[0].edp = 1;
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    ep_bytes = 4096.0 * 1 / 2 * f.m->top_k * f.m->hidden * 2 * 7.0 / 8;
    ASSERT_NEAR(pl.t[0].stages[0].ep_comm_s, nmoe * 4 * (ep_bytes / f.c->link_bw[0][0] + 7 * g->inter_lat), 1e-12);
    /* etp 1 < tp 2: routed-expert share priced at the tp-1 entry x (1/2) */
    {
        const ar_cost_cache *cc = f.cm->cache;
        double phi = cc->expert_frac[AR_LAYER_MOE], e1 = 3 * gpu_base("H100");
        ASSERT(phi > 0.3 && phi < 1.0);
        ASSERT_NEAR(pl.t[0].stages[0].compute_s,
                    nmoe * ((1 - phi) * 3 * base + phi * e1 * 0.5) + 2 * 3 * base * 0.5, 1e-12);
    }
    /* a tiling that does not factor the stage's GPUs is rejected */
    pl.t[0].stages[0].edp = 2;
    ASSERT_STATUS(arachne_cost_model_price(f.cm, &pl), ARACHNE_E_INVALID_PLAN);
    ASSERT_CONTAINS(arachne_last_error(), "expert tiling");
    plan_free(&pl);
    fx_free(&f);
}

TEST(bubble_of_one_pipeline)
{
    fx f;
    arachne_plan pl;
    int used[16] = { 0 }, s;
    static const char *const ty[4] = { "H100", "H100", "H100", "H100" };
    const int tp[4] = { 1, 1, 1, 1 }, bounds[5] = { 0, 8, 16, 24, 32 };
    double busy = 0.0, T;
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:1x4", 4096));
    memset(&pl, 0, sizeof pl);
    ASSERT_EQ(add_template(&pl, f.c, used, 4, ty, tp, bounds, 1, 1), 0);
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 16));
    ASSERT_OK(arachne_cost_model_price(f.cm, &pl));
    ASSERT_EQ(pl.t[0].micro_batches, 16);
    /* busy time is the forwards and backwards; sends only occupy links */
    for (s = 0; s < 4; s++) busy += 16 * (pl.t[0].stages[s].fwd_s + pl.t[0].stages[s].bwd_s);
    T = pl.t[0].pipeline_s; /* one replica: no sync */
    ASSERT_EQ(pl.t[0].stages[0].sync_s, 0);
    ASSERT_NEAR(pl.bubble, 1.0 - busy / (4 * T), 1e-12);
    ASSERT(pl.bubble > 0.0 && pl.bubble < 0.5);
    plan_free(&pl);
    fx_free(&f);
}

/* Over a slow network a 1F1B stage waits for its neighbours' sends: that
 * wait is bubble, not work.  Pricing the sends as busy time (stage_s, which
 * includes p2p_s) put this pipeline's bubble near 0.003 and could take it
 * below 0, where the plan's own JSON no longer read back.  One GPU per node,
 * inter-node links at 2 GB/s: each send is about a quarter of a stage. */
TEST(bubble_counts_waiting_for_sends)
{
    static const char slow[] =
        "{\"format\": \"arachne-cluster\", \"version\": 1, \"gpu_types\": [{\"name\": \"h100\", "
        "\"memory_bytes\": 80000000000, \"flops\": 9.89e14, \"hbm_bytes_per_s\": 3.35e12, "
        "\"intra_bytes_per_s\": 4.5e11, \"inter_bytes_per_s\": 2e9}], "
        "\"nodes\": [{\"type\": \"h100\", \"count\": 4, \"gpus\": 1}]}";
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *pl = NULL, *back = NULL;
    const char *js = NULL;
    double busy = 0.0, bubble = -1.0, T;
    int s, mb;
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ASSERT_OK(arachne_cluster_from_json(&c, slow, strlen(slow)));
    ASSERT_OK(arachne_profile_generate(&p, m, c, 4096));
    ASSERT_OK(arachne_cost_model_create(&cm, m, c, p));
    ASSERT_OK(arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    ASSERT_OK(arachne_plan_from_parallel(&pl, cm, "tp=1,pp=4,dp=1,mbs=1"));
    mb = pl->t[0].micro_batches;
    ASSERT_EQ(mb, 256);
    for (s = 0; s < 4; s++) {
        const ar_stage *S = &pl->t[0].stages[s];
        if (s < 3) ASSERT_GT(S->p2p_s, 0.2 * S->stage_s);
        busy += mb * (S->fwd_s + S->bwd_s);
    }
    T = pl->t[0].pipeline_s; /* one replica: no sync */
    ASSERT_OK(arachne_plan_get(pl, ARACHNE_PLAN_BUBBLE, &bubble));
    ASSERT_NEAR(bubble, 1.0 - busy / (4 * T), 1e-12);
    ASSERT(bubble > 0.1 && bubble < 0.5);
    ASSERT_OK(arachne_plan_to_json(pl, &js));
    ASSERT_OK(arachne_plan_from_json(&back, cm, js, strlen(js)));
    arachne_plan_destroy(back);
    arachne_plan_destroy(pl);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
}

/* Times past what a double holds are refused, never reported: a profile
 * of 1e299 s layers by a batch of 10^8 overflowed the busy time (bubble NaN)
 * and at 10^9 the iteration; every figure came out wrong or infinite.  Also
 * the interleaved schedule, whose extrapolation multiplies them again. */
TEST(overflowing_times_are_refused)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *pl = NULL;
    const char *spec[2] = { "tp=1,pp=2,dp=4,mbs=1", "tp=1,pp=2,dp=4,mbs=1,vp=2" };
    int k;
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ASSERT_OK(arachne_cluster_parse(&c, "h100:1x8"));
    ASSERT_OK(arachne_profile_generate(&p, m, c, 4096));
    ASSERT_OK(arachne_profile_add(p, "H100", ARACHNE_LAYER_DENSE, 1, 1, 1e299, 1e299, 0.0, 1e6));
    ASSERT_OK(arachne_cost_model_create(&cm, m, c, p));
    for (k = 0; k < 2; k++) {
        ASSERT_OK(arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
        ASSERT_OK(arachne_plan_from_parallel(&pl, cm, spec[k]));   /* huge but finite */
        arachne_plan_destroy(pl);
        pl = NULL;
        ASSERT_OK(arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, 1e8));
        ASSERT_STATUS(arachne_plan_from_parallel(&pl, cm, spec[k]), ARACHNE_E_INFEASIBLE);
        ASSERT_CONTAINS(arachne_last_error(), "overflows");
        ASSERT(pl == NULL);
    }
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
}

/* A profile measured at FP32 (Sailor's) sends 4-byte activations between
 * stages, and its activation bytes (measured without recomputation) are
 * converted to the run's recomputation mode, not read as selective ones. */
TEST(profile_precision_sets_send_bytes_and_activation_mode)
{
    fx f;
    arachne_plan *a = NULL, *b = NULL;
    arachne_cost_model *cm32 = NULL;
    const ar_gpu_spec *g;
    double lat, sel, none;
    ASSERT_OK(fx_init(&f, "llama3-8b", "h100:1x8", 4096));
    g = &f.c->types[0];
    lat = g->intra_lat;
    ASSERT_OK(arachne_plan_from_parallel(&a, f.cm, "tp=1,pp=2,dp=4,mbs=1"));
    f.p->precision = AR_PREC_FP32;
    f.p->act_recompute = AR_RECOMPUTE_NONE;
    ASSERT_OK(arachne_cost_model_create(&cm32, f.m, f.c, f.p));
    ASSERT_OK(arachne_plan_from_parallel(&b, cm32, "tp=1,pp=2,dp=4,mbs=1"));
    ASSERT(a->t[0].stages[0].p2p_s > 4 * lat);
    ASSERT_NEAR(b->t[0].stages[0].p2p_s - 2 * lat, 2.0 * (a->t[0].stages[0].p2p_s - 2 * lat), 1e-9);
    /* the same stored bytes mean more under "measured without recomputation
     * and priced with selective": selective keeps less than none */
    sel = ar_model_act_bytes(f.m, AR_LAYER_DENSE, 4096, 1, 1, AR_RECOMPUTE_SELECTIVE);
    none = ar_model_act_bytes(f.m, AR_LAYER_DENSE, 4096, 1, 1, AR_RECOMPUTE_NONE);
    ASSERT(none > sel);
    {
        const ar_cost_entry *e16, *e32;
        ar_cost_entry t16, t32;
        ASSERT_OK(ar_cost_entry_get(f.cm, 0, AR_LAYER_DENSE, 1, 1, &t16, &e16));
        ASSERT_OK(ar_cost_entry_get(cm32, 0, AR_LAYER_DENSE, 1, 1, &t32, &e32));
        ASSERT_NEAR(e32->act_bytes, e16->act_bytes * sel / none, 1e-6 * e16->act_bytes);
    }
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    arachne_cost_model_destroy(cm32);
    fx_free(&f);
}

/* Megatron --recompute-modules layernorm moe_act: every block drops its two
 * norm outputs (2 x 2h bytes per token) and each routed expert's activation
 * output (2 x expert_ffn bytes per token and expert); weights and time stay. */
TEST(recompute_norm_act_drops_norm_and_expert_activation_outputs)
{
    fx f;
    arachne_plan *a = NULL, *b = NULL;
    double tokens = 4096.0, per_token;
    ASSERT_OK(fx_init(&f, "qwen3-30b-a3b", "h100:1x8", 4096));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 8));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_HEADROOM, 0.0));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_OPTIM_BYTES, 0.0)); /* fit one GPU */
    ASSERT_OK(arachne_plan_from_parallel(&a, f.cm, "tp=1,pp=1,dp=8,mbs=1,ep=8"));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_RECOMPUTE_NORM_ACT, 1));
    ASSERT_OK(arachne_plan_from_parallel(&b, f.cm, "tp=1,pp=1,dp=8,mbs=1,ep=8"));
    per_token = 2.0 * 2.0 * f.m->hidden + f.m->top_k * 2.0 * f.m->expert_ffn;
    ASSERT_NEAR(a->t[0].stages[0].mem_bytes - b->t[0].stages[0].mem_bytes, f.m->blocks * tokens * per_token, 1e-9);
    ASSERT_NEAR(a->iteration_s, b->iteration_s, 1e-12);
    /* no effect under full recomputation (only block inputs are stored) */
    ASSERT_NEAR(ar_model_act_bytes(f.m, AR_LAYER_MOE, 4096, 1, 1, AR_RECOMPUTE_FULL | AR_RECOMPUTE_NORM_ACT_BIT),
              ar_model_act_bytes(f.m, AR_LAYER_MOE, 4096, 1, 1, AR_RECOMPUTE_FULL), 1e-12);
    ASSERT_STATUS(arachne_cost_model_set(f.cm, ARACHNE_OPT_RECOMPUTE_NORM_ACT, 2), ARACHNE_E_INVALID_ARGUMENT);
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    fx_free(&f);
}

/* FSDP with EP: dense state is sharded over the whole group, experts (already
 * split over EP) only over the group's ranks holding the same experts; the
 * 16-bit copy exists for two gathered layers only. */
TEST(fsdp_shards_experts_over_expert_data_parallel_ranks_only)
{
    fx f;
    arachne_plan *a = NULL;
    ar_stage_mem mm;
    double dense, expert;
    const ar_setup *su;
    ASSERT_OK(fx_init(&f, "qwen3-30b-a3b", "h100:2x8", 4096));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_GLOBAL_BATCH, 16));
    ASSERT_OK(arachne_cost_model_set(f.cm, ARACHNE_OPT_HEADROOM, 0.0));
    ASSERT_OK(arachne_plan_from_parallel(&a, f.cm, "tp=1,pp=1,dp=16,mbs=1,ep=8,fsdp=16"));
    su = &f.cm->setup;
    ar_stage_params(f.cm, &a->t[0], 0, &dense, &expert);
    ASSERT_OK(ar_stage_memory(f.cm, &a->t[0], 0, 16, 2, 1, &mm));
    /* 16 FSDP ranks, EP 8: each expert shard is held by 16 / 8 = 2 ranks */
    ASSERT_NEAR(mm.optim, dense * su->optim_bytes / 16 + expert * su->optim_bytes / 2, 1e-9);
    ASSERT_NEAR(mm.grads, dense * su->grad_bytes / 16 + expert * su->grad_bytes / 2, 1e-9);
    ASSERT_NEAR(mm.weights, 2.0 * (dense + expert) / f.m->blocks * su->weight_bytes, 1e-9);
    arachne_plan_destroy(a);
    fx_free(&f);
}

/* The iteration of a parallel spec (seconds; -1 on failure), and stage 0's
 * time per micro-batch in *stage0.  inter_scale multiplies every type's
 * inter-node bandwidth. */
static double spec_iteration(const char *model, const char *cluster, const char *spec, int batch, double headroom,
                             double inter_scale, ar_stage *stage0)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *pl = NULL;
    double it = -1.0, bw = 0.0;
    int ok = !arachne_model_preset(&m, model) && !arachne_cluster_parse(&c, cluster);
    if (ok && inter_scale != 1.0) {
        const char *name = NULL;
        ok = !arachne_cluster_type_name(c, 0, &name) && !arachne_gpu_get(name, ARACHNE_GPU_INTER_BYTES_PER_S, &bw) &&
             !arachne_cluster_set_gpu_field(c, name, ARACHNE_GPU_INTER_BYTES_PER_S, bw * inter_scale);
    }
    if (ok && !arachne_profile_generate(&p, m, c, 4096) && !arachne_cost_model_create(&cm, m, c, p) &&
        !arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, batch) &&
        !arachne_cost_model_set(cm, ARACHNE_OPT_HEADROOM, headroom) && !arachne_plan_from_parallel(&pl, cm, spec)) {
        it = pl->iteration_s;
        if (stage0) *stage0 = pl->t[0].stages[0];
    }
    arachne_plan_destroy(pl);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
    return it;
}

/* An FSDP group inside one node gathers over NVLink, whatever the whole
 * data-parallel ring crosses: on b300:2x8, dp 8 in groups of 4 (replicas
 * 0-3 on node 0), the stage's time per micro-batch does not depend on the
 * network.  It was priced on the network ring: 0.438 s against 0.2415 s,
 * and 0.2415 s with 4x the network. */
TEST(an_fsdp_group_inside_a_node_gathers_over_its_links)
{
    ar_stage s1, s4, one_node;
    ASSERT(spec_iteration("mixtral-8x7b", "b300:2x8", "tp=2,pp=1,dp=8,mbs=1,fsdp=4", 64, 0.08, 1.0, &s1) > 0.0);
    ASSERT(spec_iteration("mixtral-8x7b", "b300:2x8", "tp=2,pp=1,dp=8,mbs=1,fsdp=4", 64, 0.08, 4.0, &s4) > 0.0);
    ASSERT(spec_iteration("mixtral-8x7b", "b300:1x8", "tp=2,pp=1,dp=4,mbs=1,fsdp=4", 64, 0.08, 1.0, &one_node) > 0.0);
    ASSERT_NEAR(s1.stage_s, s4.stage_s, 1e-12);
    ASSERT_NEAR(s1.stage_s, one_node.stage_s, 1e-12);
}

/* A gradient ring over nodes of PCIe GPUs also runs through the GPUs
 * inside each node, so it is no faster than the same ring inside one node:
 * with pp=4, dp=4 in Megatron's order stage 0's 4 replicas span two nodes
 * on a6000:8x2 (2 each) and sit in one on a6000:2x8; the network is not
 * the bound (4x its bandwidth leaves the sync as it is).  With one replica
 * per node (a6000:16x1) the ring has no intra-node hop and the network is
 * the bound again. */
TEST(a_ring_over_pcie_nodes_is_no_faster_than_inside_one)
{
    ar_stage over, over4, inside, one, one4;
    const char *spec = "tp=1,pp=4,dp=4,mbs=1";
    ASSERT(spec_iteration("llama3-8b", "a6000:8x2", spec, 64, 0.08, 1.0, &over) > 0.0);
    ASSERT(spec_iteration("llama3-8b", "a6000:8x2", spec, 64, 0.08, 4.0, &over4) > 0.0);
    ASSERT(spec_iteration("llama3-8b", "a6000:2x8", spec, 64, 0.08, 1.0, &inside) > 0.0);
    ASSERT(inside.sync_s > 0.0);
    ASSERT(over.sync_s >= inside.sync_s);
    ASSERT_NEAR(over.sync_s, over4.sync_s, 1e-12);
    ASSERT(spec_iteration("llama3-8b", "a6000:16x1", spec, 64, 0.08, 1.0, &one) > 0.0);
    ASSERT(spec_iteration("llama3-8b", "a6000:16x1", spec, 64, 0.08, 4.0, &one4) > 0.0);
    ASSERT(one4.sync_s < one.sync_s);
}

SUITE(cost, T(an_fsdp_group_inside_a_node_gathers_over_its_links), T(a_ring_over_pcie_nodes_is_no_faster_than_inside_one), T(assignment_matches_brute_force), T(exact_assignment_matches_brute_force), T(assignment_idles_only_a_template_that_would_slow_the_iteration),
      T(assignment_large_overshoot_stays_feasible_and_minimal), T(assignment_rejects_bad_input),
      T(ring_allreduce_formula), T(stage_time_sums_profile_and_prices_the_send_over_the_real_link),
      T(full_recompute_adds_a_forward_and_scales_activations), T(memory_matches_hand_computation_llama3_8b),
      T(over_memory_plan_names_stage_and_bytes), T(sync_uses_intra_node_ring_inside_one_node_and_slowest_link_across),
      T(missing_profile_entry_is_infeasible_naming_the_key), T(options_defaults_and_rejections),
      T(create_rejects_mismatched_profile), T(bad_plans_are_rejected_not_crashed),
      T(moe_tiling_ep1_etp_tp_reproduces_profile_and_ep_pays_all_to_all), T(bubble_of_one_pipeline), T(bubble_counts_waiting_for_sends),
      T(overflowing_times_are_refused),
      T(profile_precision_sets_send_bytes_and_activation_mode),
      T(recompute_norm_act_drops_norm_and_expert_activation_outputs),
      T(fsdp_shards_experts_over_expert_data_parallel_ranks_only),
      T(alternate_matmul_recompute_adds_their_forward_share));
