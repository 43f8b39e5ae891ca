/* test_schedule_vp.c -- a discrete-event simulator of Megatron's
 * interleaved 1F1B schedule checks the exact evaluation
 * ar_pipeline_interleaved (to 1e-9 relative) on random pipelines: depth,
 * chunks per stage, micro-batches (multiples of the depth), independent
 * per-chunk forward and backward times, per-link send times including the
 * wrap from the last stage to the first.  It also checks the activation
 * rule of the memory model (a stage holds at most min(w_s + 1, M v) chunk
 * activations, w_s its warm-up forwards) and the layer ranges of chunks.
 *
 * The simulator is written from the schedule's description, not from the
 * evaluation: each stage's operation list is built the way Megatron-Core
 * builds it (a virtual micro-batch id k maps to chunk (k mod p v) / p,
 * reversed for backwards; each chunk takes its micro-batches in order, one
 * counter per chunk), stages and directed links are resources in a
 * priority queue of completion events, and every message waits in its
 * link's FIFO queue. */
#include <stdlib.h>

#include "harness.h"
#include "event_heap.h"
#include "fixture.h"
#include "cost.h"
#include "plan.h"
#include "fill.h"

#define VQ_P 24
#define VQ_V 8
#define VQ_M 96
#define VQ_OPS (2 * VQ_V * VQ_M)

enum { VE_OP, VE_LINK_F, VE_LINK_B };

typedef struct vq_link {      /* a FIFO of messages (virtual stage, micro-batch) waiting to be sent */
    int vs[VQ_OPS], mb[VQ_OPS];
    int head, tail, busy;
} vq_link;

typedef struct vq_sim {
    int p, v, M;
    const double *f, *b, *c;
    sim_ev heap[8 * VQ_P];
    sim_heap ev;                 /* queue over heap[] */
    int n[VQ_P], next[VQ_P], busy[VQ_P];
    int dir[VQ_P][VQ_OPS], chunk[VQ_P][VQ_OPS], mb[VQ_P][VQ_OPS];
    unsigned char fdone[VQ_P * VQ_V][VQ_M], has_act[VQ_P * VQ_V][VQ_M], has_grad[VQ_P * VQ_V][VQ_M];
    vq_link lf[VQ_P], lb[VQ_P];  /* lf[s]: s -> s+1 mod p (activations); lb[s]: s+1 mod p -> s (gradients) */
    int inflight[VQ_P], peak[VQ_P];
    long done;
    double makespan;
} vq_sim;

/* Megatron-Core's chunk of virtual micro-batch k (forward or backward). */
static int mc_chunk(int p, int v, int k, int forward)
{
    int c = (k % (p * v)) / p;
    return forward ? c : v - 1 - c;
}

static void vq_build_order(vq_sim *q, int s)
{
    int p = q->p, v = q->v, total = q->M * v, warm, k, n = 0;
    int fnext[VQ_V] = { 0 }, bnext[VQ_V] = { 0 };
    warm = (p - s - 1) * 2 + (v - 1) * p;
    if (warm > total) warm = total;
#define ADD_F(k_) do { int c_ = mc_chunk(p, v, (k_), 1); q->dir[s][n] = 0; q->chunk[s][n] = c_; q->mb[s][n++] = fnext[c_]++; } while (0)
#define ADD_B(k_) do { int c_ = mc_chunk(p, v, (k_), 0); q->dir[s][n] = 1; q->chunk[s][n] = c_; q->mb[s][n++] = bnext[c_]++; } while (0)
    for (k = 0; k < warm; k++) ADD_F(k);
    for (k = 0; k < total - warm; k++) { ADD_F(k + warm); ADD_B(k); }
    for (k = total - warm; k < total; k++) ADD_B(k);
#undef ADD_F
#undef ADD_B
    q->n[s] = n;
}

static void vq_try_stage(vq_sim *q, int s, double now)
{
    int i = q->next[s], vs, j;
    if (q->busy[s] || i >= q->n[s]) return;
    vs = q->chunk[s][i] * q->p + s;
    j = q->mb[s][i];
    if (q->dir[s][i] == 0) {
        if (vs > 0 && !q->has_act[vs][j]) return;
        sim_heap_push(&q->ev, now + q->f[vs], VE_OP, s, i);
    } else {
        if (vs < q->p * q->v - 1 ? !q->has_grad[vs][j] : !q->fdone[vs][j]) return;
        sim_heap_push(&q->ev, now + q->b[vs], VE_OP, s, i);
    }
    q->busy[s] = 1;
}

static void vq_try_link(vq_sim *q, vq_link *l, int kind, int s, double now)
{
    if (l->busy || l->head == l->tail) return;
    l->busy = 1;
    sim_heap_push(&q->ev, now + q->c[s], kind, s, l->head);
}

/* Returns 0, or -1 when the simulation stalls or the input is out of range. */
static int vq_run(vq_sim *q, int p, int v, int M, const double *f, const double *b, const double *c)
{
    int s;
    if (p < 2 || p > VQ_P || v < 2 || v > VQ_V || M < 1 || M > VQ_M) return -1;
    memset(q, 0, sizeof *q);
    q->p = p; q->v = v; q->M = M; q->f = f; q->b = b; q->c = c;
    q->ev.ev = q->heap;
    for (s = 0; s < p; s++) vq_build_order(q, s);
    for (s = 0; s < p; s++) vq_try_stage(q, s, 0.0);
    while (q->ev.n > 0) {
        sim_ev e = sim_heap_pop(&q->ev);
        s = e.s;
        if (e.t > q->makespan) q->makespan = e.t;
        if (e.kind == VE_OP) {
            int i = e.x, vs = q->chunk[s][i] * p + s, j = q->mb[s][i];
            q->busy[s] = 0;
            q->next[s]++;
            q->done++;
            if (q->dir[s][i] == 0) {
                q->fdone[vs][j] = 1;
                if (++q->inflight[s] > q->peak[s]) q->peak[s] = q->inflight[s];
                if (vs + 1 < p * v) {
                    vq_link *l = &q->lf[s];
                    l->vs[l->tail] = vs + 1; l->mb[l->tail++] = j;
                    vq_try_link(q, l, VE_LINK_F, s, e.t);
                }
            } else {
                q->inflight[s]--;
                if (vs > 0) {
                    int li = (s + p - 1) % p;
                    vq_link *l = &q->lb[li];
                    l->vs[l->tail] = vs - 1; l->mb[l->tail++] = j;
                    vq_try_link(q, l, VE_LINK_B, li, e.t);
                }
            }
            vq_try_stage(q, s, e.t);
        } else {
            vq_link *l = e.kind == VE_LINK_F ? &q->lf[s] : &q->lb[s];
            int vs = l->vs[l->head], j = l->mb[l->head];
            l->head++;
            l->busy = 0;
            if (e.kind == VE_LINK_F) q->has_act[vs][j] = 1;
            else q->has_grad[vs][j] = 1;
            vq_try_link(q, l, e.kind, s, e.t);
            vq_try_stage(q, vs % p, e.t);
        }
    }
    return q->done == 2L * p * v * M ? 0 : -1;
}

/* Random interleaved pipeline: p 2..maxp, v 2..VQ_V, M a multiple of p up
 * to VQ_M; per-chunk times drawn independently (one stage sometimes much
 * slower), sends 0 (sometimes), small or above the compute times. */
static void vq_random(ar_rng *r, int maxp, int *p, int *v, int *M, double *f, double *b, double *c)
{
    int k, style = ar_rng_int(r, 4), groups;
    *p = 2 + ar_rng_int(r, maxp - 1);
    *v = 2 + ar_rng_int(r, VQ_V - 1);
    groups = VQ_M / *p;
    *M = *p * (1 + ar_rng_int(r, groups < 6 ? groups : 6));
    for (k = 0; k < *p * *v; k++) {
        f[k] = 0.05 + ar_rng_uniform(r);
        b[k] = f[k] * (0.5 + 2.5 * ar_rng_uniform(r));
    }
    for (k = 0; k < *p; k++) c[k] = style == 0 ? 0.0 : (style == 1 ? 2.0 : 0.3) * ar_rng_uniform(r);
    if (style == 3) {
        int s = ar_rng_int(r, *p), ch;
        for (ch = 0; ch < *v; ch++) { f[ch * *p + s] *= 4.0; b[ch * *p + s] *= 4.0; }
    }
}

TEST(interleaved_equals_event_simulation)
{
    static vq_sim q;   /* large; one test at a time touches it */
    ar_rng r;
    int it, n = th_quick() ? 300 : 1200, agree = 0;
    ar_rng_seed(&r, 2021);
    for (it = 0; it < n; it++) {
        double f[VQ_P * VQ_V], b[VQ_P * VQ_V], c[VQ_P], exact;
        int p, v, M, s;
        vq_random(&r, it % 2 ? 8 : VQ_P, &p, &v, &M, f, b, c);
        ASSERT_EQ(vq_run(&q, p, v, M, f, b, c), 0);
        exact = ar_pipeline_interleaved(M, p, v, f, b, c);
        ASSERT_MSG(fabs(exact - q.makespan) <= 1e-9 * q.makespan, "p %d v %d M %d: exact %.17g sim %.17g",
                   p, v, M, exact, q.makespan);
        agree++;
        /* the memory rule: stage s holds at most min(w_s + 1, M v) chunk activations */
        for (s = 0; s < p; s++) {
            int w = ar_vp_warmup(p, v, M, s);
            ASSERT_EQ(q.peak[s], w + 1 < M * v ? w + 1 : M * v);
        }
    }
    ASSERT_EQ(agree, n);
}

/* Equal chunks, no sends: the interleaved bubble is (p-1)/v of a stage's
 * work, i.e. T = (M v + (p - 1)) (f + b) for chunk times f, b, when the
 * sends are free (Narayanan et al. 2021). */
TEST(interleaved_known_cases)
{
    double f[64], b[64], c[8] = { 0 };
    int k, p, v;
    for (p = 2; p <= 8; p *= 2)
        for (v = 2; v <= 4; v++) {
            for (k = 0; k < p * v; k++) { f[k] = 1.0; b[k] = 2.0; }
            ASSERT_NEAR(ar_pipeline_interleaved(4 * p, p, v, f, b, c), (4.0 * p * v + (p - 1)) * 3.0, 1e-12);
        }
    /* one micro-batch group's chain with sends: more than the compute alone */
    for (k = 0; k < 8; k++) { f[k] = 1.0; b[k] = 2.0; }
    c[0] = c[1] = c[2] = c[3] = 0.5;
    ASSERT_GT(ar_pipeline_interleaved(4, 4, 2, f, b, c), (8.0 + 3) * 3.0);
    /* rules: M a multiple of p, p >= 2, v >= 2; M = 0 is an idle pipeline */
    ASSERT_EQ(ar_pipeline_interleaved(6, 4, 2, f, b, c), -1.0);
    ASSERT_EQ(ar_pipeline_interleaved(4, 1, 2, f, b, c), -1.0);
    ASSERT_EQ(ar_pipeline_interleaved(4, 4, 1, f, b, c), -1.0);
    ASSERT_EQ(ar_pipeline_interleaved(0, 4, 2, f, b, c), 0.0);
    /* warm-up counts (Megatron-Core): stage 0 of p = 4, v = 2: 2*3 + 4 = 10 */
    ASSERT_EQ(ar_vp_warmup(4, 2, 8, 0), 10);
    ASSERT_EQ(ar_vp_warmup(4, 2, 8, 3), 4);
    ASSERT_EQ(ar_vp_warmup(4, 2, 4, 0), 8);   /* capped at M v */
}

/* Past AR_PIPE_STEP_MAX micro-batches the interleaved time is extrapolated
 * from the steady state.  A global batch of 10^9 samples used to store an
 * arrival time per (virtual stage, micro-batch): 17.6 GB and 82 s for one
 * price (2^28 micro-batches here ask for 19 GB: the old code fails).  The
 * closed form of equal chunks without sends holds at any M, and on random
 * pipelines the extrapolated increments continue the simulated ones. */
TEST(interleaved_extrapolates_huge_batches)
{
    double f[64], b[64], c[8] = { 0 };
    ar_rng r;
    int k, p, v, it;
    for (p = 2; p <= 8; p *= 2)
        for (v = 2; v <= 4; v++) {
            const int M = (1 << 28) / p * p;
            for (k = 0; k < p * v; k++) { f[k] = 1.0; b[k] = 2.0; }
            ASSERT_NEAR(ar_pipeline_interleaved(M, p, v, f, b, c) / ((double)M * v + (p - 1)) / 3.0, 1.0, 1e-12);
        }
    ar_rng_seed(&r, 2028);
    for (it = 0; it < 20; it++) {
        double cf[VQ_P * VQ_V], cb[VQ_P * VQ_V], cc[VQ_P], below, at, above, far;
        int M, top;
        vq_random(&r, 8, &p, &v, &M, cf, cb, cc);
        top = AR_PIPE_STEP_MAX / p * p;    /* the last simulated count */
        below = ar_pipeline_interleaved(top - p, p, v, cf, cb, cc);
        at = ar_pipeline_interleaved(top, p, v, cf, cb, cc);
        above = ar_pipeline_interleaved(top + p, p, v, cf, cb, cc);
        far = ar_pipeline_interleaved(top + 1000 * p, p, v, cf, cb, cc);
        ASSERT_GT(below, 0.0);
        ASSERT_MSG(fabs((above - at) - (at - below)) <= 1e-9 * at, "p %d v %d: steps %.17g then %.17g", p, v,
                   at - below, above - at);
        ASSERT_NEAR((far - at) / (1000.0 * (above - at)), 1.0, 1e-9);
    }
}

/* Interleaving shortens the pipeline of equal stages with free sends. */
TEST(interleaved_beats_plain_when_sends_are_free)
{
    double f[32], b[32], c[8] = { 0 }, f1[8], b1[8];
    int k;
    for (k = 0; k < 8; k++) { f1[k] = 2.0; b1[k] = 4.0; }
    for (k = 0; k < 16; k++) { f[k] = 1.0; b[k] = 2.0; }
    ASSERT_GT(ar_pipeline_exact(16, 8, f1, b1, c), ar_pipeline_interleaved(16, 8, 2, f, b, c));
}

/* Chunk ranges: chunk-major order over the stages' layer counts. */
TEST(chunk_ranges_are_chunk_major)
{
    ar_template t;
    int s, c, fi, en, seen[40], i;
    memset(&t, 0, sizeof t);
    t.depth = 3;
    t.vp = 2;
    t.stages[0].first = 0;  t.stages[0].end = 6;
    t.stages[1].first = 6;  t.stages[1].end = 11;   /* 5 layers: chunks of 3 and 2 */
    t.stages[2].first = 11; t.stages[2].end = 16;
    ar_vp_chunk_range(&t, 0, 0, &fi, &en); ASSERT_EQ(fi, 0);  ASSERT_EQ(en, 3);
    ar_vp_chunk_range(&t, 1, 0, &fi, &en); ASSERT_EQ(fi, 3);  ASSERT_EQ(en, 6);
    ar_vp_chunk_range(&t, 2, 0, &fi, &en); ASSERT_EQ(fi, 6);  ASSERT_EQ(en, 9);
    ar_vp_chunk_range(&t, 0, 1, &fi, &en); ASSERT_EQ(fi, 9);  ASSERT_EQ(en, 12);
    ar_vp_chunk_range(&t, 1, 1, &fi, &en); ASSERT_EQ(fi, 12); ASSERT_EQ(en, 14);
    ar_vp_chunk_range(&t, 2, 1, &fi, &en); ASSERT_EQ(fi, 14); ASSERT_EQ(en, 16);
    memset(seen, 0, sizeof seen);
    for (c = 0; c < 2; c++)
        for (s = 0; s < 3; s++) {
            ar_vp_chunk_range(&t, s, c, &fi, &en);
            for (i = fi; i < en; i++) seen[i]++;
        }
    for (i = 0; i < 16; i++) ASSERT_EQ(seen[i], 1);
}

/* Chunk times of a priced interleaved template, as the pricer splits them:
 * chunk c of stage s gets its share of the stage's layers. */
static void chunk_times(const ar_template *t, double *f, double *b, double *c)
{
    int s, ch, p = t->depth, v = t->vp;
    for (s = 0; s < p; s++) {
        const ar_stage *S = &t->stages[s];
        int n = S->end - S->first;
        c[s] = S->p2p_s / 2.0;
        for (ch = 0; ch < v; ch++) {
            int fi, en;
            ar_vp_chunk_range(t, s, ch, &fi, &en);
            f[ch * p + s] = S->fwd_s * (en - fi) / n;
            b[ch * p + s] = S->bwd_s * (en - fi) / n;
        }
    }
}

/* price --parallel with vp: the template is interleaved, its pipeline time
 * is the event simulation of its chunks plus its largest sync, stage 0
 * holds 2 (p - 1) + (v - 1) p + 1 chunk activations, and the plan JSON
 * carries "vp" and reads back to the same price. */
TEST(parallel_vp_prices_the_interleaved_schedule)
{
    static vq_sim q;
    env e;
    arachne_plan *a = NULL, *b = NULL, *back = NULL;
    const char *json = NULL;
    double f[VQ_P * VQ_V], bw[VQ_P * VQ_V], c[VQ_P], g = 0.0;
    ar_stage_mem m1, m2;
    int s;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:4x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_OVERLAP_GRAD_REDUCE, 0));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_OVERLAP_PARAM_GATHER, 0));
    ASSERT_OK(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=4,vp=2,dp=8,mbs=1"));
    ASSERT_OK(arachne_plan_from_parallel(&b, e.cm, "tp=1,pp=4,dp=8,mbs=1"));
    ASSERT_EQ(a->t[0].vp, 2);
    ASSERT_EQ(b->t[0].vp, 0);
    ASSERT_EQ(a->t[0].micro_batches, 64);
    ASSERT_GT(a->t[0].stages[3].p2p_s, 0.0);     /* the wrap back to stage 0 */
    ASSERT_EQ(b->t[0].stages[3].p2p_s, 0.0);
    chunk_times(&a->t[0], f, bw, c);
    for (s = 0; s < 4; s++) if (a->t[0].stages[s].sync_s > g) g = a->t[0].stages[s].sync_s;
    ASSERT_EQ(vq_run(&q, 4, 2, 64, f, bw, c), 0);
    ASSERT_NEAR(a->t[0].pipeline_s, q.makespan + g, 1e-9 * q.makespan);
    /* stage 0: 11 chunks of half the stage's layers vs 4 whole micro-batches */
    ASSERT_OK(ar_stage_memory(e.cm, &a->t[0], 0, 8, 8, 64, &m1));
    ASSERT_OK(ar_stage_memory(e.cm, &b->t[0], 0, 8, 8, 64, &m2));
    ASSERT_EQ(m1.in_flight, 6);
    ASSERT_EQ(m2.in_flight, 4);
    ASSERT_NEAR(m1.acts / m2.acts, 5.5 / 4.0, 1e-12);
    /* the JSON carries vp only when interleaved, and reads back */
    ASSERT_OK(arachne_plan_to_json(b, &json));
    ASSERT(strstr(json, "\"vp\"") == NULL);
    ASSERT_OK(arachne_plan_to_json(a, &json));
    ASSERT(strstr(json, "\"vp\": 2") != NULL);
    ASSERT_OK(arachne_plan_from_json(&back, e.cm, json, strlen(json)));
    ASSERT_EQ(back->t[0].vp, 2);
    ASSERT_OK(ar_plan_price(e.cm, back));
    ASSERT_NEAR(back->iteration_s, a->iteration_s, 1e-15);
    /* the ranks export says which blocks an interleaved rank runs: 32
     * blocks, pp 4, vp 2, chunk-major, so stage s runs [4s, 4s + 4) and
     * [16 + 4s, 20 + 4s) while its layers still read its share [8s, 8s + 8);
     * a plain plan has no such fields */
    {
        static char ranks[1 << 16];
        ASSERT_OK(arachne_plan_export(a, ARACHNE_EXPORT_RANKS, ranks, sizeof ranks, NULL));
        ASSERT(strstr(ranks, "\"stage\":1,") != NULL);
        ASSERT_CONTAINS(strstr(ranks, "\"stage\":1,"), "\"layers\":[8,16]");
        ASSERT_CONTAINS(strstr(ranks, "\"stage\":1,"), "\"vp\":2,\"chunks\":[[4,8],[20,24]]");
        ASSERT_CONTAINS(strstr(ranks, "\"stage\":0,"), "\"chunks\":[[0,4],[16,20]]");
        ASSERT_OK(arachne_plan_export(b, ARACHNE_EXPORT_RANKS, ranks, sizeof ranks, NULL));
        ASSERT(strstr(ranks, "\"chunks\"") == NULL && strstr(ranks, "\"vp\"") == NULL);
    }
    arachne_plan_destroy(back);
    arachne_plan_destroy(b);
    arachne_plan_destroy(a);
    env_close(&e);
}

/* What the interleaved schedule cannot run is refused with the numbers. */
TEST(parallel_vp_errors_name_the_numbers)
{
    env e;
    arachne_plan *a = NULL;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:4x8"));
    ASSERT_EQ(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=4,vp=3,dp=8"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "32 blocks");
    ASSERT_CONTAINS(arachne_last_error(), "= 12 chunks");
    ASSERT_EQ(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=1,vp=2,dp=8"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "pp >= 2");
    ASSERT_EQ(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=4,vp=99"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "vp=99");
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 36));
    ASSERT_EQ(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=4,vp=2,dp=6"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "6 micro-batches");
    ASSERT_CONTAINS(arachne_last_error(), "multiple of pp=4");
    /* a repeated key is refused (the last one used to win silently) */
    ASSERT_EQ(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=4,vp=2,dp=8,vp=4"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "key 'vp' is given twice");
    ASSERT(a == NULL);
    env_close(&e);
}

/* The plan reader checks vp: range, and at least two stages. */
TEST(plan_json_vp_is_validated)
{
    env e;
    arachne_plan *a = NULL, *back = NULL;
    const char *json = NULL;
    char *bad, *at;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:4x8"));
    ASSERT_OK(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=4,vp=2,dp=8"));
    ASSERT_OK(arachne_plan_to_json(a, &json));
    bad = malloc(strlen(json) + 8);
    ASSERT(bad != NULL);
    strcpy(bad, json);
    at = strstr(bad, "\"vp\": 2");
    ASSERT(at != NULL);
    memmove(at + 8, at + 7, strlen(at + 7) + 1);   /* "vp": 2 -> "vp": 99 */
    memcpy(at, "\"vp\": 99", 8);
    ASSERT_EQ(arachne_plan_from_json(&back, e.cm, bad, strlen(bad)), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "vp: expected an integer in [0, 16]");
    ASSERT_CONTAINS(arachne_last_error(), "<string>:");
    ASSERT(back == NULL);
    free(bad);
    arachne_plan_destroy(a);
    env_close(&e);
}

/* The fill tries interleaving on top of the plain template it chose: with
 * MAX_VP 1 it never interleaves; with MAX_VP 8 it keeps a vp only when the
 * plan prices faster, and the plan it returns prices as filled. */
TEST(fill_chooses_vp_where_it_pays)
{
    env e;
    int types[8] = { 0 }, tps[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, v;
    double it[2];
    for (v = 0; v < 2; v++) {
        ar_avail a;
        arachne_plan p;
        ASSERT_OK(env_open(&e, "llama3-8b", "h100:4x8"));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_VP, v ? 8 : 1));
        ASSERT_OK(ar_avail_init(&a, e.c));
        ASSERT_OK(ar_plan_init(&p, e.cm));
        ASSERT_OK(ar_fill_template(e.cm, &a, &p, 8, types, tps));
        it[v] = p.iteration_s;
        if (v == 0) ASSERT_EQ(p.t[0].vp, 0);
        else {
            double before = p.iteration_s;
            ASSERT_GT(p.t[0].vp, 1);
            ASSERT_EQ(p.t[0].micro_batches % 8, 0);
            ASSERT_OK(ar_plan_price(e.cm, &p));
            ASSERT_NEAR(p.iteration_s, before, 1e-12 * before);
        }
        ar_plan_clear(&p);
        ar_avail_free(&a);
        env_close(&e);
    }
    ASSERT_GT(it[0], it[1]);
}

SUITE(schedule_vp, T(interleaved_equals_event_simulation), T(interleaved_known_cases),
      T(interleaved_extrapolates_huge_batches), T(interleaved_beats_plain_when_sends_are_free),
      T(chunk_ranges_are_chunk_major),
      T(parallel_vp_prices_the_interleaved_schedule), T(parallel_vp_errors_name_the_numbers), T(plan_json_vp_is_validated),
      T(fill_chooses_vp_where_it_pays));
