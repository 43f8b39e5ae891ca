/* test_schedule_sim.c -- two discrete-event simulators of the
 * non-interleaved 1F1B schedule check the cost model's pipeline times.
 *
 * 1. A readiness sweep without sends checks the closed form
 *        T = (M-1) max_s t_s + sum_s t_s         (t_s = f_s + b_s)
 *    (exact when every stage splits its time alike and the slowest stage
 *    is last, an upper bound otherwise) and the activation memory rule
 *    (stage i of p holds min(p-i, M) micro-batches).
 * 2. An event queue with stages and per-direction links as resources
 *    (sends as their own events) checks the exact evaluation
 *    ar_pipeline_exact to 1e-12 on random pipelines -- independent forward
 *    and backward times, sends, the slowest stage anywhere, depths up to
 *    AR_MAX_DEPTH, long runs where the evaluation skips steady periods --
 *    and the plans the pricer produces (pipeline_s = simulation + sync). */
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "event_heap.h"
#include "fixture.h"
#include "construct.h"
#include "cost.h"

#define SIM_P 16
#define SIM_M 64

typedef struct sim_out {
    double makespan;
    int peak[SIM_P]; /* max micro-batches whose forward ran but backward did not */
} sim_out;

/* Runs the 1F1B schedule: stage i does min(p-i-1, M) warm-up forwards, then
 * alternates one forward and one backward, then the remaining backwards.
 * F(i,j) waits for F(i-1,j); B(i,j) waits for B(i+1,j) (the last stage's
 * backward waits for its own forward); each stage runs one op at a time in
 * its order. */
static int simulate(int p, int M, const double *f, const double *b, sim_out *out)
{
    int order_op[SIM_P][2 * SIM_M], order_mb[SIM_P][2 * SIM_M], len[SIM_P], pos[SIM_P];
    double endF[SIM_P][SIM_M], endB[SIM_P][SIM_M], tfree[SIM_P];
    int doneF[SIM_P][SIM_M], doneB[SIM_P][SIM_M], inflight[SIM_P];
    int i, j, k, total = 0, done = 0;
    memset(doneF, 0, sizeof doneF);
    memset(doneB, 0, sizeof doneB);
    for (i = 0; i < p; i++) {
        int w = p - i - 1 < M ? p - i - 1 : M, n = 0;
        for (j = 0; j < w; j++) { order_op[i][n] = 0; order_mb[i][n++] = j; }
        for (k = 0; k < M - w; k++) {
            order_op[i][n] = 0; order_mb[i][n++] = w + k;
            order_op[i][n] = 1; order_mb[i][n++] = k;
        }
        for (j = M - w; j < M; j++) { order_op[i][n] = 1; order_mb[i][n++] = j; }
        len[i] = n;
        pos[i] = 0;
        tfree[i] = 0.0;
        inflight[i] = 0;
        out->peak[i] = 0;
        total += n;
    }
    while (done < total) {
        int progress = 0;
        for (i = 0; i < p; i++) {
            while (pos[i] < len[i]) {
                int op = order_op[i][pos[i]], mb = order_mb[i][pos[i]];
                double dep, st;
                if (op == 0) {
                    if (i > 0 && !doneF[i - 1][mb]) break;
                    dep = i > 0 ? endF[i - 1][mb] : 0.0;
                    st = dep > tfree[i] ? dep : tfree[i];
                    endF[i][mb] = tfree[i] = st + f[i];
                    doneF[i][mb] = 1;
                    if (++inflight[i] > out->peak[i]) out->peak[i] = inflight[i];
                } else {
                    if (i < p - 1 && !doneB[i + 1][mb]) break;
                    if (!doneF[i][mb]) return -1; /* schedule bug */
                    dep = i < p - 1 ? endB[i + 1][mb] : endF[i][mb];
                    st = dep > tfree[i] ? dep : tfree[i];
                    endB[i][mb] = tfree[i] = st + b[i];
                    doneB[i][mb] = 1;
                    inflight[i]--;
                }
                pos[i]++;
                done++;
                progress = 1;
            }
        }
        if (!progress) return -1; /* deadlock */
    }
    out->makespan = 0.0;
    for (i = 0; i < p; i++)
        if (tfree[i] > out->makespan) out->makespan = tfree[i];
    return 0;
}

static void random_pipeline(ar_rng *r, int *p, int *M, double *a, double *t)
{
    int i;
    *p = 1 + ar_rng_int(r, SIM_P);
    *M = 1 + ar_rng_int(r, SIM_M);
    *a = 0.2 + 0.3 * ar_rng_uniform(r); /* forward share of a stage's time */
    for (i = 0; i < *p; i++) t[i] = 0.05 + 2.0 * ar_rng_uniform(r);
}

static void split(int p, double a, const double *t, double *f, double *b)
{
    int i;
    for (i = 0; i < p; i++) { f[i] = a * t[i]; b[i] = t[i] - f[i]; }
}

TEST(closed_form_exact_when_bottleneck_is_last)
{
    ar_rng r;
    int it;
    ar_rng_seed(&r, 11);
    for (it = 0; it < 500; it++) {
        double t[SIM_P], f[SIM_P], b[SIM_P], a, closed, x;
        int p, M, i, k = 0;
        sim_out o;
        random_pipeline(&r, &p, &M, &a, t);
        for (i = 1; i < p; i++) if (t[i] > t[k]) k = i;
        x = t[k]; t[k] = t[p - 1]; t[p - 1] = x;   /* slowest stage last */
        split(p, a, t, f, b);
        ASSERT_EQ(simulate(p, M, f, b, &o), 0);
        closed = ar_pipeline_time(M, t, p, 0.0);
        ASSERT_NEAR(o.makespan, closed, 1e-9);
        for (i = 0; i < p; i++) ASSERT_EQ(o.peak[i], (p - i < M ? p - i : M));
    }
}

TEST(closed_form_exact_for_equal_stages)
{
    ar_rng r;
    int it;
    ar_rng_seed(&r, 12);
    for (it = 0; it < 300; it++) {
        double t[SIM_P], f[SIM_P], b[SIM_P], a;
        int p, M, i;
        sim_out o;
        random_pipeline(&r, &p, &M, &a, t);
        for (i = 1; i < p; i++) t[i] = t[0];
        split(p, a, t, f, b);
        ASSERT_EQ(simulate(p, M, f, b, &o), 0);
        ASSERT_NEAR(o.makespan, ar_pipeline_time(M, t, p, 0.0), 1e-9);
        /* the textbook form (M + p - 1)(f + b) */
        ASSERT_NEAR(o.makespan, (M + p - 1) * t[0], 1e-9);
    }
}

TEST(closed_form_is_upper_bound_for_any_order)
{
    ar_rng r;
    int it, strict = 0;
    ar_rng_seed(&r, 13);
    for (it = 0; it < 500; it++) {
        double t[SIM_P], f[SIM_P], b[SIM_P], a, closed, mx = 0.0;
        int p, M, i;
        sim_out o;
        random_pipeline(&r, &p, &M, &a, t);
        split(p, a, t, f, b);
        ASSERT_EQ(simulate(p, M, f, b, &o), 0);
        closed = ar_pipeline_time(M, t, p, 0.0);
        for (i = 0; i < p; i++) if (t[i] > mx) mx = t[i];
        ASSERT_LE(o.makespan, closed * (1.0 + 1e-12));
        ASSERT_LE(M * mx, o.makespan * (1.0 + 1e-12)); /* the bottleneck's own work */
        for (i = 0; i < p; i++) ASSERT_EQ(o.peak[i], (p - i < M ? p - i : M));
        if (o.makespan < closed * (1.0 - 1e-9)) strict++;
    }
    ASSERT_GT(strict, 0); /* the bound is not always tight: the test can tell */
}

TEST(pipeline_time_adds_sync_and_handles_idle)
{
    double t[3] = { 1.0, 3.0, 2.0 };
    ASSERT_NEAR(ar_pipeline_time(4, t, 3, 0.5), 3.0 * 3.0 + 6.0 + 0.5, 1e-15);
    ASSERT_NEAR(ar_pipeline_time(1, t, 3, 0.0), 6.0, 1e-15);
    ASSERT_EQ(ar_pipeline_time(0, t, 3, 0.5), 0);
}

/* ---- exact evaluation against an event-queue simulation ------------------------
 *
 * An independent simulator of 1F1B with sends as their own events: a
 * priority queue of completion events in time order; resources are the
 * stages (one operation at a time, in the 1F1B order) and two links per
 * stage boundary (activations forward, gradients back), each sending one
 * micro-batch at a time in the order the data became ready.  Whatever
 * becomes possible at an event's time starts at that time, so every start
 * is the time its last condition came true. */

#define EQ_P AR_MAX_DEPTH
#define EQ_M 512   /* simulated micro-batches at most (random pipelines draw up to 64) */

enum { EV_OP, EV_SEND_F, EV_SEND_B };

typedef struct eq_sim {
    int p, M;
    const double *f, *b, *c;
    sim_ev heap[4 * EQ_P + 4];
    sim_heap ev;                     /* queue over heap[] */
    int next[EQ_P];                  /* index of the stage's next operation in its order */
    int op_kind[EQ_P][2 * EQ_M], op_mb[EQ_P][2 * EQ_M];
    int stage_busy[EQ_P];
    unsigned char got_act[EQ_P][EQ_M], got_grad[EQ_P][EQ_M];
    int lf_ready[EQ_P], lf_sent[EQ_P], lf_busy[EQ_P];   /* link s -> s+1 */
    int lb_ready[EQ_P], lb_sent[EQ_P], lb_busy[EQ_P];   /* link s+1 -> s */
    int inflight[EQ_P], peak[EQ_P];
    long done;
    double makespan;
} eq_sim;

static void eq_try_stage(eq_sim *q, int s, double now)
{
    int k = q->next[s], j;
    if (q->stage_busy[s] || k >= 2 * q->M) return;
    j = q->op_mb[s][k];
    if (q->op_kind[s][k] == 0) {
        if (s > 0 && !q->got_act[s][j]) return;
        sim_heap_push(&q->ev, now + q->f[s], EV_OP, s, k);
    } else {
        if (s < q->p - 1 && !q->got_grad[s][j]) return;
        sim_heap_push(&q->ev, now + q->b[s], EV_OP, s, k);
    }
    q->stage_busy[s] = 1;
}

static void eq_try_links(eq_sim *q, int s, double now)
{
    if (!q->lf_busy[s] && q->lf_sent[s] < q->lf_ready[s]) {
        q->lf_busy[s] = 1;
        sim_heap_push(&q->ev, now + q->c[s], EV_SEND_F, s, q->lf_sent[s]++);
    }
    if (!q->lb_busy[s] && q->lb_sent[s] < q->lb_ready[s]) {
        q->lb_busy[s] = 1;
        sim_heap_push(&q->ev, now + q->c[s], EV_SEND_B, s, q->lb_sent[s]++);
    }
}

/* Returns 0, or -1 when the simulation stalls (a schedule bug). */
static int eq_run(eq_sim *q, int p, int M, const double *f, const double *b, const double *c)
{
    int s, j, k;
    if (p < 1 || p > EQ_P || M < 1 || M > EQ_M) return -1;
    memset(q, 0, sizeof *q);
    q->p = p; q->M = M; q->f = f; q->b = b; q->c = c;
    q->ev.ev = q->heap;
    for (s = 0; s < p; s++) {       /* the 1F1B order, written out */
        int w = p - s - 1 < M ? p - s - 1 : M, n = 0;
        for (j = 0; j < w; j++) { q->op_kind[s][n] = 0; q->op_mb[s][n++] = j; }
        for (k = 0; k < M - w; k++) {
            q->op_kind[s][n] = 0; q->op_mb[s][n++] = w + k;
            q->op_kind[s][n] = 1; q->op_mb[s][n++] = k;
        }
        for (j = M - w; j < M; j++) { q->op_kind[s][n] = 1; q->op_mb[s][n++] = j; }
    }
    for (s = 0; s < p; s++) eq_try_stage(q, s, 0.0);
    while (q->ev.n > 0) {
        sim_ev e = sim_heap_pop(&q->ev);
        s = e.s;
        if (e.t > q->makespan) q->makespan = e.t;
        if (e.kind == EV_OP) {
            int kind = q->op_kind[s][e.x];
            q->stage_busy[s] = 0;
            q->next[s]++;
            q->done++;
            if (kind == 0) {
                if (++q->inflight[s] > q->peak[s]) q->peak[s] = q->inflight[s];
                if (s < p - 1) { q->lf_ready[s]++; eq_try_links(q, s, e.t); }
            } else {
                q->inflight[s]--;
                if (s > 0) { q->lb_ready[s - 1]++; eq_try_links(q, s - 1, e.t); }
            }
            eq_try_stage(q, s, e.t);
        } else if (e.kind == EV_SEND_F) {
            q->lf_busy[s] = 0;
            q->got_act[s + 1][e.x] = 1;
            eq_try_links(q, s, e.t);
            eq_try_stage(q, s + 1, e.t);
        } else {
            q->lb_busy[s] = 0;
            q->got_grad[s][e.x] = 1;
            eq_try_links(q, s, e.t);
            eq_try_stage(q, s, e.t);
        }
    }
    return q->done == 2L * p * M ? 0 : -1;
}

/* Random pipeline: depth 1..maxp, M 1..EQ_M, forward and backward times
 * drawn independently, sends from 0 (sometimes exactly 0) to above the
 * compute times; one stage is sometimes made the bottleneck at a random
 * position. */
static void eq_random(ar_rng *r, int maxp, int *p, int *M, double *f, double *b, double *c)
{
    int s, style = ar_rng_int(r, 4);
    *p = 1 + ar_rng_int(r, maxp);
    *M = 1 + ar_rng_int(r, 64);
    for (s = 0; s < *p; s++) {
        f[s] = 0.05 + ar_rng_uniform(r);
        b[s] = f[s] * (0.5 + 2.5 * ar_rng_uniform(r));
        c[s] = style == 0 ? 0.0 : (style == 1 ? 2.0 : 0.3) * ar_rng_uniform(r);
    }
    if (style == 3) {
        s = ar_rng_int(r, *p);
        f[s] *= 4.0;
        b[s] *= 4.0;
    }
}

static void closed_times(int p, const double *f, const double *b, const double *c, double *t)
{
    int s;
    for (s = 0; s < p; s++) t[s] = f[s] + b[s] + (s + 1 < p ? 2.0 * c[s] : 0.0);
}

TEST(exact_equals_event_simulation)
{
    static eq_sim q;   /* large; one test at a time touches it */
    ar_rng r;
    int it, n = th_quick() ? 300 : 1500, not_last = 0;
    ar_rng_seed(&r, 21);
    for (it = 0; it < n; it++) {
        double f[EQ_P], b[EQ_P], c[EQ_P], t[EQ_P], exact, mx = 0.0;
        int p, M, s, k = 0;
        /* a third of the pipelines up to depth 32, the rest up to the limit */
        eq_random(&r, it % 3 == 0 ? 32 : AR_MAX_DEPTH, &p, &M, f, b, c);
        ASSERT_EQ(eq_run(&q, p, M, f, b, c), 0);
        exact = ar_pipeline_exact(M, p, f, b, c);
        ASSERT_NEAR(exact, q.makespan, 1e-12);
        /* the memory rule: stage s holds at most min(p - s, M) micro-batches */
        for (s = 0; s < p; s++) ASSERT_EQ(q.peak[s], (p - s < M ? p - s : M));
        /* the closed form with both sends in t_s is an upper bound, and the
         * bottleneck's own work a lower one */
        closed_times(p, f, b, c, t);
        for (s = 0; s < p; s++) if (f[s] + b[s] > mx) { mx = f[s] + b[s]; k = s; }
        ASSERT_LE(exact, ar_pipeline_time(M, t, p, 0.0) * (1.0 + 1e-12));
        ASSERT_LE(M * mx, exact * (1.0 + 1e-12));
        if (k != p - 1) not_last++;
    }
    ASSERT_GT(not_last, n / 2);   /* most draws have the slowest stage elsewhere than last */
}

/* Long pipelines (M up to 512): the evaluation skips whole periods of the
 * steady state once it repeats; it must still agree with the simulation.
 * Equal stages, near-equal stages and a dominant link included. */
TEST(exact_equals_event_simulation_long)
{
    static eq_sim q;
    ar_rng r;
    int it, n = th_quick() ? 60 : 300;
    ar_rng_seed(&r, 23);
    for (it = 0; it < n; it++) {
        double f[EQ_P], b[EQ_P], c[EQ_P];
        int p, M, s, style = it % 4;
        eq_random(&r, 16, &p, &M, f, b, c);
        M = 150 + ar_rng_int(&r, 363);
        for (s = 0; s < p; s++) {
            if (style == 1) { f[s] = f[0]; b[s] = b[0]; c[s] = c[0]; }            /* equal stages */
            if (style == 2) { f[s] = 1.0 + 1e-9 * s; b[s] = 2.0 - 1e-9 * s; }     /* near ties */
            if (style == 3 && s == p / 2) c[s] = 4.0;                               /* a slow link */
        }
        ASSERT_EQ(eq_run(&q, p, M, f, b, c), 0);
        ASSERT_NEAR(ar_pipeline_exact(M, p, f, b, c), q.makespan, 1e-12);
    }
}

TEST(exact_matches_known_cases)
{
    double f[4] = { 1, 1, 1, 1 }, b[4] = { 2, 2, 2, 2 }, c[4] = { 0, 0, 0, 0 };
    double f2[3] = { 1, 3, 1 }, b2[3] = { 1, 3, 1 };
    /* equal stages, no sends: (M + p - 1)(f + b) */
    ASSERT_NEAR(ar_pipeline_exact(8, 4, f, b, c), (8 + 4 - 1) * 3.0, 1e-15);
    ASSERT_NEAR(ar_pipeline_exact(1, 4, f, b, c), 4 * 3.0, 1e-15);
    /* one micro-batch: every forward, send and backward in a chain */
    c[0] = 0.5; c[1] = 0.25; c[2] = 0.125;
    ASSERT_NEAR(ar_pipeline_exact(1, 4, f, b, c), 12.0 + 2 * 0.875, 1e-15);
    /* idle and single-stage pipelines */
    ASSERT_EQ(ar_pipeline_exact(0, 4, f, b, c), 0);
    ASSERT_NEAR(ar_pipeline_exact(5, 1, f, b, c), 15.0, 1e-15);
    /* a slow middle stage: the closed form (M-1) 6 + 10 over-estimates */
    {
        double t[3] = { 2, 6, 2 }, z[3] = { 0, 0, 0 };
        double e = ar_pipeline_exact(4, 3, f2, b2, z);
        ASSERT_LE(e, ar_pipeline_time(4, t, 3, 0.0));
        ASSERT_LE(4 * 6.0, e);
    }
}

/* Past AR_PIPE_STEP_MAX micro-batches the time is extrapolated along the
 * steady state.  --global-batch 10^9 looped 5 x 10^8 times per price on
 * one-stage plans (21 s for a plan at 10^7), and on pipelines bound by
 * their links, whose state the shortcut never finds repeating (297 s for a
 * plan at 10^9 with 1 s latencies).  M = INT_MAX takes over 10 s in the
 * loop; the alarm fails the run there.  Up to the limit, the loop's sum. */
TEST(huge_batches_follow_the_steady_state)
{
    double f[16], b[16], c[16], sum = 0.0, at, below, far;
    int m, s;
    f[0] = 0.1;
    b[0] = 0.2;
    c[0] = 0.0;
    alarm(10);
    ASSERT_NEAR(ar_pipeline_exact(INT_MAX, 1, f, b, c) / (INT_MAX * 0.30000000000000004), 1.0, 1e-12);
    for (s = 0; s < 15; s++) {  /* links of 1 to 1.14 s against stages of 0.3 s */
        f[s] = 0.1;
        b[s] = 0.2;
        c[s] = 1.0 + 0.01 * s;
    }
    at = ar_pipeline_exact(AR_PIPE_STEP_MAX, 15, f, b, c);
    below = ar_pipeline_exact(AR_PIPE_STEP_MAX - 1000, 15, f, b, c);   /* both stepped */
    far = ar_pipeline_exact(INT_MAX, 15, f, b, c);
    alarm(0);
    /* the rate stepped over the last 1,000 micro-batches carries on (near-
     * equal links end their transient slowly: 8e-6 apart here) */
    ASSERT_NEAR((far - at) / (INT_MAX - (double)AR_PIPE_STEP_MAX) / ((at - below) / 1000.0), 1.0, 1e-4);
    ASSERT_GT(at - below, 1000 * 2.0);  /* bound by the links, not the 0.3 s stages */
    for (m = 0; m < AR_PIPE_STEP_MAX; m++) {
        sum += f[0];
        sum += b[0];
    }
    f[0] = 0.1;
    b[0] = 0.2;
    ASSERT_EQ(ar_pipeline_exact(AR_PIPE_STEP_MAX, 1, f, b, c), sum);
}

TEST(exact_grows_with_micro_batches)
{
    ar_rng r;
    int it;
    ar_rng_seed(&r, 22);
    for (it = 0; it < 200; it++) {
        double f[EQ_P], b[EQ_P], c[EQ_P], prev = 0.0;
        int p, M, m;
        eq_random(&r, 24, &p, &M, f, b, c);
        for (m = 1; m <= M; m++) {
            double e = ar_pipeline_exact(m, p, f, b, c);
            ASSERT_LE(prev, e * (1.0 + 1e-12));
            prev = e;
        }
    }
}

/* Uniform choice among the allowed ones. */
static int pick_any(void *user, const ar_dec_ctx *c, int *choice)
{
    ar_rng *r = user;
    int i, k = ar_rng_int(r, c->nallowed);
    for (i = 0; i < c->n; i++)
        if (c->mask[i] && k-- == 0) { *choice = i; return ARACHNE_OK; }
    return ARACHNE_E_INVALID_ARGUMENT;  /* nallowed disagrees with the mask */
}

/* Every plain-1F1B template's pipeline_s in a priced plan is the event simulation of
 * its stages (forward, backward, half of p2p_s per send, its micro-batch
 * count) plus its largest gradient sync; the iteration is the slowest of
 * those pipelines plus syncs and the optimizer step, so it is at least the
 * slowest simulated pipeline. */
TEST(plan_prices_use_the_exact_schedule)
{
    static eq_sim q;
    static const char *const models[] = { "llama3-8b", "mixtral-8x7b" };
    int mi, seed, templates = 0, below = 0;
    for (mi = 0; mi < 2; mi++) {
        env e;
        ar_builder bld;
        arachne_plan p;
        ASSERT_OK(env_open(&e, models[mi], "a100-40:4x4,h100:3x8,a6000:4x2"));
        /* the whole sync charged after the pipeline, so pipeline_s = makespan + max sync */
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_OVERLAP_GRAD_REDUCE, 0));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_OVERLAP_PARAM_GATHER, 0));
        ASSERT_OK(ar_builder_init(&bld, e.cm, NULL));
        memset(&p, 0, sizeof p);
        for (seed = 0; seed < (th_quick() ? 4 : 12); seed++) {
            ar_rng r;
            int j, s;
            double slowest = 0.0;
            ar_rng_seed(&r, (uint64_t)(100 + seed));
            ASSERT_OK(ar_builder_run(&bld, pick_any, &r, &p, NULL));
            ASSERT_OK(ar_plan_price(e.cm, &p));
            for (j = 0; j < p.ntemplates; j++) {
                const ar_template *t = &p.t[j];
                double f[AR_MAX_DEPTH], b[AR_MAX_DEPTH], c[AR_MAX_DEPTH], g = 0.0, closed[AR_MAX_DEPTH];
                for (s = 0; s < t->depth; s++) {
                    const ar_stage *S = &t->stages[s];
                    f[s] = S->fwd_s;
                    b[s] = S->bwd_s;
                    c[s] = S->p2p_s / 2.0;
                    closed[s] = S->stage_s;
                    ASSERT_MSG(f[s] > 0.0 && b[s] > f[s], "%s t%d s%d f %g b %g compute %g tp %g ep %g", models[mi], j, s, f[s], b[s], S->compute_s, S->tp_comm_s, S->ep_comm_s);
                    ASSERT_NEAR(f[s] + b[s] + S->p2p_s, S->stage_s, 1e-12);
                    if (S->sync_s > g) g = S->sync_s;
                }
                if (t->micro_batches < 1) { ASSERT_EQ(t->pipeline_s, 0); continue; }
                /* interleaved templates (vp > 1) run another schedule:
                 * test_schedule_vp.c simulates those */
                if (t->vp > 1) continue;
                ASSERT_EQ(eq_run(&q, t->depth, t->micro_batches, f, b, c), 0);
                ASSERT_NEAR(t->pipeline_s, q.makespan + g, 1e-12);
                if (q.makespan > slowest) slowest = q.makespan;
                if (q.makespan < ar_pipeline_time(t->micro_batches, closed, t->depth, 0.0) * (1.0 - 1e-9)) below++;
                templates++;
            }
            ASSERT_LE(slowest, p.iteration_s);
        }
        ar_plan_clear(&p);
        ar_builder_free(&bld);
        env_close(&e);
    }
    ASSERT_GT(templates, th_quick() ? 5 : 20);
    ASSERT_GT(below, 0);   /* some templates price below the closed form: the test can tell them apart */
}

/* A template of AR_MAX_DEPTH stages (qwen3-64b, one block per stage, one
 * H100 per stage, full recomputation so stage 0's 128 micro-batches in
 * flight fit): validates, prices exactly (the event simulation agrees),
 * and survives the plan JSON round trip with the same price. */
TEST(deepest_template_prices_and_round_trips)
{
    static eq_sim q;
    env e;
    arachne_plan p, back;
    ar_template *t;
    double f[AR_MAX_DEPTH], b[AR_MAX_DEPTH], c[AR_MAX_DEPTH], g = 0.0;
    int s;
    ASSERT_OK(env_open(&e, "qwen3-64b", "h100:16x8"));
    ASSERT_EQ(e.m->blocks, AR_MAX_DEPTH);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
    ASSERT_OK(ar_plan_init(&p, e.cm));
    p.ntemplates = 1;
    t = &p.t[0];
    t->depth = AR_MAX_DEPTH;
    t->replicas = 1;
    t->micro_batch = 1;
    p.ranks = calloc(AR_MAX_DEPTH, sizeof *p.ranks);
    ASSERT(p.ranks != NULL);
    p.nranks = AR_MAX_DEPTH;
    for (s = 0; s < AR_MAX_DEPTH; s++) {
        ar_stage *S = &t->stages[s];
        ar_rank *r = &p.ranks[s];
        memset(S, 0, sizeof *S);
        S->type = 0; S->tp = 1; S->first = s; S->end = s + 1; S->ep = S->etp = S->edp = 1;
        r->rank = s; r->node = s / 8; r->gpu = s % 8; r->tmpl = 0; r->replica = 0; r->stage = s; r->tp_rank = 0;
    }
    ASSERT_OK(ar_plan_price(e.cm, &p));
    ASSERT_OK(ar_plan_validate(e.cm, &p));
    ASSERT_EQ(t->micro_batches, 512);
    for (s = 0; s < AR_MAX_DEPTH; s++) {
        f[s] = t->stages[s].fwd_s;
        b[s] = t->stages[s].bwd_s;
        c[s] = t->stages[s].p2p_s / 2.0;
        if (t->stages[s].sync_s > g) g = t->stages[s].sync_s;
    }
    ASSERT_EQ(eq_run(&q, AR_MAX_DEPTH, 512, f, b, c), 0);
    ASSERT_NEAR(t->pipeline_s, q.makespan + g, 1e-12);
    ASSERT_OK(ar_plan_finish(&p));
    ASSERT_OK(ar_plan_init(&back, e.cm));
    ASSERT_OK(ar_plan_parse_json(&back, e.cm, p.json_cache, strlen(p.json_cache), "deep.json"));
    ASSERT_EQ(back.t[0].depth, AR_MAX_DEPTH);
    ASSERT_OK(ar_plan_validate(e.cm, &back));
    ASSERT_OK(ar_plan_price(e.cm, &back));
    ASSERT_NEAR(back.iteration_s, p.iteration_s, 1e-15);
    /* one stage more is refused with a message, not priced */
    back.t[0].depth = AR_MAX_DEPTH + 1;
    ASSERT_EQ(ar_plan_price(e.cm, &back), ARACHNE_E_INVALID_PLAN);
    ASSERT_CONTAINS(arachne_last_error(), "depth");
    ar_plan_clear(&back);
    ar_plan_clear(&p);
    env_close(&e);
}

SUITE(schedule_sim, T(closed_form_exact_when_bottleneck_is_last), T(closed_form_exact_for_equal_stages),
      T(closed_form_is_upper_bound_for_any_order), T(pipeline_time_adds_sync_and_handles_idle),
      T(exact_equals_event_simulation), T(exact_equals_event_simulation_long), T(exact_matches_known_cases),
      T(huge_batches_follow_the_steady_state), T(exact_grows_with_micro_batches),
      T(plan_prices_use_the_exact_schedule), T(deepest_template_prices_and_round_trips));
