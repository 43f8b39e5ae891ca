/* schedule.c -- the pure formulas of the cost model: the exact 1F1B
 * pipeline time (and its closed-form bound), exact min-max micro-batch
 * assignment across templates, ring all-reduce.  No cost-model state; no
 * allocation except a memo's init (ar_pipe_memo_init).  Formulas and
 * sources: docs/cost-model.md. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "util.h"

double ar_pipeline_time(int M, const double *t_s, int depth, double max_g)
{
    double mx = 0.0, sum = 0.0;
    int s;
    if (M <= 0 || depth <= 0) return 0.0;
    for (s = 0; s < depth; s++) {
        sum += t_s[s];
        if (t_s[s] > mx) mx = t_s[s];
    }
    return (double)(M - 1) * mx + sum + max_g;
}

double ar_ring_allreduce_s(double bytes, int ranks, double bw, double lat)
{
    double k = (double)ranks;
    if (ranks <= 1 || !(bytes > 0.0)) return 0.0;
    return 2.0 * (k - 1.0) / k * bytes / bw + 2.0 * (k - 1.0) * lat;
}

void ar_sync_split(double params, int ranks, double grad_bytes, double weight_bytes, int dist_optimizer,
                   double bw, double lat, double *grad_s, double *gather_s)
{
    double k = (double)ranks;
    *grad_s = *gather_s = 0.0;
    if (ranks <= 1 || !(params > 0.0)) return;
    if (!dist_optimizer) {
        *grad_s = ar_ring_allreduce_s(params * grad_bytes, ranks, bw, lat);
        return;
    }
    *grad_s = (k - 1.0) / k * params * grad_bytes / bw + (k - 1.0) * lat;
    *gather_s = (k - 1.0) / k * params * weight_bytes / bw + (k - 1.0) * lat;
}

double ar_sync_s(double params, int ranks, double grad_bytes, double weight_bytes,
                 int dist_optimizer, double bw, double lat)
{
    double k = (double)ranks;
    if (ranks <= 1 || !(params > 0.0)) return 0.0;
    if (!dist_optimizer) return ar_ring_allreduce_s(params * grad_bytes, ranks, bw, lat);
    /* reduce-scatter of gradients + all-gather of updated weights */
    return (k - 1.0) / k * params * (grad_bytes + weight_bytes) / bw + 2.0 * (k - 1.0) * lat;
}

/* ---- min-max assignment ---------------------------------------------------- */

/* T_j(m): finishing time of template j running m micro-batches per replica. */
static double t_of(double tmax, double tsum, long m)
{
    return m <= 0 ? 0.0 : (double)(m - 1) * tmax + tsum;
}

/* Largest m in [0, mmax] with T(m) <= T.  Evaluates T(m) with t_of() so the
 * comparison is consistent with the candidate values it is compared to. */
static long m_at(double tmax, double tsum, long mmax, double T)
{
    long m;
    if (tsum > T) return 0;
    if (!(tmax > 0.0)) return mmax;
    {
        double q = floor((T - tsum) / tmax) + 1.0;
        m = q >= (double)mmax ? mmax : (q < 1.0 ? 1 : (long)q);
    }
    while (m < mmax && t_of(tmax, tsum, m + 1) <= T) m++;
    while (m > 0 && t_of(tmax, tsum, m) > T) m--;
    return m;
}

typedef struct asg_ctx {
    int n;
    long B;
    long w[AR_MAX_TEMPLATES];     /* samples per micro-batch step: replicas x mbs */
    long mmax[AR_MAX_TEMPLATES];  /* ceil(B / w): more is never needed */
    double tmax[AR_MAX_TEMPLATES], tsum[AR_MAX_TEMPLATES];
} asg_ctx;

static long capacity(const asg_ctx *c, double T, long *m)
{
    long cap = 0;
    int j;
    for (j = 0; j < c->n; j++) {
        long mj = m_at(c->tmax[j], c->tsum[j], c->mmax[j], T);
        if (m) m[j] = mj;
        cap += c->w[j] * mj;
    }
    return cap;
}

/* Exact overshoot minimisation by a bitset knapsack when the overshoot is
 * below this many samples; greedy beyond. */
#define AR_KNAP_BITS 8192
#define AR_KNAP_WORDS (AR_KNAP_BITS / 64)

static void shift_or(uint64_t *dst, const uint64_t *src, long sh, int words)
{
    long ws = sh / 64, bs = sh % 64, i;
    for (i = words - 1; i >= ws; i--) {
        uint64_t v = src[i - ws] << bs;
        if (bs && i - ws - 1 >= 0) v |= src[i - ws - 1] >> (64 - bs);
        dst[i] |= v;
    }
}

static int bit_get(const uint64_t *b, long i) { return (int)((b[i / 64] >> (i % 64)) & 1u); }

/* Bounded knapsack over the templates' division steps as bitsets: row j of
 * rows (stride words each) holds the sums w_i k_i, 0 <= k_i <= lim[i],
 * reachable with templates i < j, bits 0..top (row n: all of them).  Row
 * j+1 = row j + {0, w, 2w, ..., lim w} by binary splitting of the bounded
 * item (chunks 1, 2, 4, ..., remainder). */
static void knap_rows(const asg_ctx *c, const long *lim, long top, uint64_t *rows, int stride)
{
    int nw = (int)(top / 64) + 1, i, j;
    for (i = 0; i < nw; i++) rows[i] = 0;
    rows[0] = 1u;
    for (j = 0; j < c->n; j++) {
        long left = lim[j] < top / c->w[j] ? lim[j] : top / c->w[j], chunk = 1;
        uint64_t *cur = rows + (size_t)(j + 1) * (size_t)stride;
        for (i = 0; i < nw; i++) cur[i] = cur[i - stride];
        while (left > 0) {
            long k = chunk < left ? chunk : left;
            shift_or(cur, cur, k * c->w[j], nw);
            left -= k;
            chunk *= 2;
        }
        /* bits above `top` are meaningless; clear them */
        if ((top + 1) % 64) cur[nw - 1] &= ((uint64_t)1 << ((top + 1) % 64)) - 1u;
    }
}

/* The steps k[j] of a sum s that row n of knap_rows reaches: last template
 * first, the most steps that leave the rest reachable by the templates
 * before it. */
static void knap_take(const asg_ctx *c, const long *lim, long s, const uint64_t *rows, int stride, long *k)
{
    int j;
    for (j = c->n - 1; j >= 0; j--) {
        long d = lim[j] < s / c->w[j] ? lim[j] : s / c->w[j];
        while (d > 0 && !bit_get(rows + (size_t)j * (size_t)stride, s - d * c->w[j])) d--;
        k[j] = d;
        s -= d * c->w[j];
    }
}

static void reduce_overshoot(const asg_ctx *c, long *m, long over)
{
    long lim[AR_MAX_TEMPLATES];
    int j;
    long wmin = 0;
    for (j = 0; j < c->n; j++) {
        lim[j] = m[j] >= 1 ? m[j] - 1 : 0;  /* never cut a working template to 0 */
        if (lim[j] > 0 && (wmin == 0 || c->w[j] < wmin)) wmin = c->w[j];
    }
    /* every cut is a sum of whole steps, so one below the smallest step
     * that may be cut is none: both methods below would cut nothing (a
     * single template always lands here -- its overshoot is below its step) */
    if (over <= 0 || over < wmin || wmin == 0) return;
    if (over < AR_KNAP_BITS) {
        uint64_t reach[(AR_MAX_TEMPLATES + 1) * AR_KNAP_WORDS];
        long best, d[AR_MAX_TEMPLATES];
        knap_rows(c, lim, over, reach, AR_KNAP_WORDS);
        for (best = over; best > 0 && !bit_get(reach + (size_t)c->n * AR_KNAP_WORDS, best); best--) {}
        /* the largest cut that stays reachable */
        knap_take(c, lim, best, reach, AR_KNAP_WORDS, d);
        for (j = 0; j < c->n; j++) m[j] -= d[j];
        return;
    }
    /* greedy: cut the template that finishes last first */
    {
        int order[AR_MAX_TEMPLATES], a, b;
        for (j = 0; j < c->n; j++) order[j] = j;
        for (a = 1; a < c->n; a++)
            for (b = a; b > 0; b--) {
                double tb = t_of(c->tmax[order[b]], c->tsum[order[b]], m[order[b]]);
                double ta = t_of(c->tmax[order[b - 1]], c->tsum[order[b - 1]], m[order[b - 1]]);
                if (tb > ta) { int x = order[b]; order[b] = order[b - 1]; order[b - 1] = x; }
                else break;
            }
        for (a = 0; a < c->n; a++) {
            long d;
            j = order[a];
            d = over / c->w[j];
            if (d > lim[j]) d = lim[j];
            m[j] -= d;
            over -= d * c->w[j];
        }
    }
}

int ar_assign_microbatches(int global_batch, int n, const int *replicas, const int *mbs,
                           const double *tmax, const double *tsum, int *m_out, double *finish_out)
{
    asg_ctx c;
    long m[AR_MAX_TEMPLATES], cap;
    double best = HUGE_VAL;
    int j;
    if (global_batch < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "micro-batch assignment: global batch %d < 1", global_batch);
    if (n < 1 || n > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "micro-batch assignment: %d templates (1..%d)", n, AR_MAX_TEMPLATES);
    if (!replicas || !mbs || !tmax || !tsum || !m_out)
        return AR_NULL_ARG("micro-batch assignment", replicas, mbs, tmax, tsum, m_out);
    c.n = n;
    c.B = global_batch;
    for (j = 0; j < n; j++) {
        if (replicas[j] < 1 || mbs[j] < 1)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "micro-batch assignment: template %d has %d replicas of micro-batch %d",
                            j, replicas[j], mbs[j]);
        if (!(tmax[j] >= 0.0) || !(tsum[j] >= tmax[j]) || !isfinite(tsum[j]))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "micro-batch assignment: template %d: bad stage times (max %g, sum %g)",
                            j, tmax[j], tsum[j]);
        c.w[j] = (long)replicas[j] * (long)mbs[j];
        c.mmax[j] = (c.B + c.w[j] - 1) / c.w[j];
        c.tmax[j] = tmax[j];
        c.tsum[j] = tsum[j];
    }
    if (n == 1) {
        /* one template runs the whole batch: ceil(B / w) steps, the value the
         * search below arrives at (its overshoot is below one step) */
        double t = t_of(c.tmax[0], c.tsum[0], c.mmax[0]);
        m_out[0] = (int)c.mmax[0];
        if (finish_out) *finish_out = t > 0.0 ? t : 0.0;
        return ARACHNE_OK;
    }
    /* The optimum is one of the values T_j(m).  Feasibility (capacity >= B)
     * is monotone in T, so for each template binary-search its smallest
     * feasible m; the optimum is the least of those values. */
    for (j = 0; j < n; j++) {
        long lo = 1, hi = c.mmax[j];
        if (best < HUGE_VAL) {
            /* only values below the best so far can improve it */
            hi = m_at(c.tmax[j], c.tsum[j], c.mmax[j], best);
            while (hi >= 1 && t_of(c.tmax[j], c.tsum[j], hi) >= best) hi--;
            if (hi < 1 || capacity(&c, t_of(c.tmax[j], c.tsum[j], hi), NULL) < c.B) continue;
        }
        while (lo < hi) {
            long mid = lo + (hi - lo) / 2;
            if (capacity(&c, t_of(c.tmax[j], c.tsum[j], mid), NULL) >= c.B) hi = mid;
            else lo = mid + 1;
        }
        {
            double T = t_of(c.tmax[j], c.tsum[j], lo);
            if (T < best && capacity(&c, T, NULL) >= c.B) best = T;
        }
    }
    cap = capacity(&c, best, m);
    reduce_overshoot(&c, m, cap - c.B);
    for (j = 0; j < n; j++) m_out[j] = (int)m[j];
    if (finish_out) {
        double f = 0.0;
        for (j = 0; j < n; j++) {
            double t = t_of(c.tmax[j], c.tsum[j], m[j]);
            if (t > f) f = t;
        }
        *finish_out = f;
    }
    return ARACHNE_OK;
}

/* ---- the fastest exact division ------------------------------------------------ */

#define EXACT_WORDS (AR_EXACT_MAX_BATCH / 64 + 1)

/* Whether B is reachable with 0 <= m_j <= M[j] (every template's steps
 * bounded), the rows left in reach for knap_take. */
static int exact_at(const asg_ctx *c, double T, long *M, uint64_t *reach)
{
    int j;
    for (j = 0; j < c->n; j++) M[j] = m_at(c->tmax[j], c->tsum[j], c->mmax[j], T);
    knap_rows(c, M, c->B, reach, EXACT_WORDS);
    return bit_get(reach + (size_t)c->n * EXACT_WORDS, c->B);
}

int ar_assign_microbatches_exact(int global_batch, int n, const int *replicas, const int *mbs,
                                 const double *tmax, const double *tsum, double cap, int *m_out,
                                 double *finish_out)
{
    uint64_t reach[(AR_MAX_TEMPLATES + 1) * EXACT_WORDS];
    asg_ctx c;
    long M[AR_MAX_TEMPLATES], k[AR_MAX_TEMPLATES], g = 0;
    double best = HUGE_VAL, f = 0.0;
    int j;
    if (global_batch < 1 || global_batch > AR_EXACT_MAX_BATCH || n < 1 || n > AR_MAX_TEMPLATES) return 0;
    c.n = n;
    c.B = global_batch;
    for (j = 0; j < n; j++) {
        c.w[j] = (long)replicas[j] * (long)mbs[j];
        c.mmax[j] = c.B / c.w[j]; /* more would overshoot on its own */
        c.tmax[j] = tmax[j];
        c.tsum[j] = tsum[j];
        g = ar_gcd(c.w[j], g);
    }
    /* the sums are multiples of the gcd; then: is B reachable at all? */
    if (c.B % g) return 0;
    /* every template at its most steps within the cap (all of them without one) */
    if (!exact_at(&c, cap, M, reach)) return 0;
    /* Reachability is monotone in T (every bound M_j grows with T), so the
     * least T is, over the templates, the least of each one's smallest
     * feasible T_j(m), found by binary search as in ar_assign_microbatches. */
    for (j = 0; j < n; j++) {
        long lo = 1, hi = c.mmax[j];
        if (hi < 1) continue;
        if (best < HUGE_VAL) {
            hi = m_at(c.tmax[j], c.tsum[j], c.mmax[j], best);
            while (hi >= 1 && t_of(c.tmax[j], c.tsum[j], hi) >= best) hi--;
            if (hi < 1 || !exact_at(&c, t_of(c.tmax[j], c.tsum[j], hi), M, reach)) continue;
        } else {
            /* the first search: values up to the cap.  A template whose least
             * feasible value is above it is skipped, where without the cap
             * it set `best` for the others to undercut: the least value,
             * when at most the cap, is found either way */
            if (cap < HUGE_VAL && (hi = m_at(c.tmax[j], c.tsum[j], c.mmax[j], cap)) < 1) continue;
            if (!exact_at(&c, t_of(c.tmax[j], c.tsum[j], hi), M, reach))
                continue; /* even its most micro-batches leave B out of reach with the others bounded by them */
        }
        while (lo < hi) {
            long mid = lo + (hi - lo) / 2;
            if (exact_at(&c, t_of(c.tmax[j], c.tsum[j], mid), M, reach)) hi = mid;
            else lo = mid + 1;
        }
        {
            double T = t_of(c.tmax[j], c.tsum[j], lo);
            if (T < best) best = T;
        }
    }
    if (!(best < HUGE_VAL) || !exact_at(&c, best, M, reach)) return 0;
    knap_take(&c, M, c.B, reach, EXACT_WORDS, k);
    for (j = 0; j < n; j++) {
        m_out[j] = (int)k[j];
        if (k[j] > 0 && t_of(c.tmax[j], c.tsum[j], k[j]) > f) f = t_of(c.tmax[j], c.tsum[j], k[j]);
    }
    if (finish_out) *finish_out = f;
    return 1;
}

/* ---- exact 1F1B --------------------------------------------------------------- */

/* Steady-state shortcut.  In the keys where every stage runs one forward
 * and one backward (w_0 <= r < M), one key maps the state -- per stage its
 * last end, its two links' last send ends and the gradient it waits for --
 * by the same max-plus map, which is monotone and additive-homogeneous and
 * so non-expansive in the max norm.  Such a map is eventually periodic:
 * from some key on, c keys move every component by the same amount
 * (c times the schedule's cycle time; c is often 1, not always).  Once c
 * keys have moved every component alike, every later block of c steady
 * keys does too, and the blocks up to the last forward can be skipped by
 * adding that amount per block.  Floating-point rounding makes the
 * increments differ in their last bits, so "alike" means within SHIFT_TOL
 * of the state's magnitude; by non-expansiveness each skipped block then
 * errs by at most the measured spread.  The search compares each key
 * with a snapshot up to SHIFT_SPAN keys old, then takes a new snapshot. */
#define SHIFT_TOL (8.0 * DBL_EPSILON)
#define SHIFT_SPAN 8

enum { SHIFT_N = 4 * AR_MAX_DEPTH };

/* Packs the state: busy[0..p), link_f[0..p-1), link_b[0..p-1), pend[0..p-1). */
static void steady_pack(int p, const double *busy, const double *link_f, const double *link_b,
                        const double *pend, double *x)
{
    memcpy(x, busy, (size_t)p * sizeof *x);
    memcpy(x + p, link_f, (size_t)(p - 1) * sizeof *x);
    memcpy(x + 2 * p - 1, link_b, (size_t)(p - 1) * sizeof *x);
    memcpy(x + 3 * p - 2, pend, (size_t)(p - 1) * sizeof *x);
}

/* 1 when x - snap is the same positive amount in every component (within
 * SHIFT_TOL); *shift receives it. */
static int steady_uniform(int n, const double *x, const double *snap, double *shift)
{
    double lo = HUGE_VAL, hi = -HUGE_VAL, mag = 0.0;
    int i;
    for (i = 0; i < n; i++) {
        double d = x[i] - snap[i];
        if (d != d) return 0;   /* inf - inf: an overflowed state has no shift */
        if (d < lo) lo = d;
        if (d > hi) hi = d;
        if (fabs(x[i]) > mag) mag = fabs(x[i]);
    }
    if (!(lo > 0.0) || !(hi - lo <= SHIFT_TOL * mag)) return 0;
    *shift = 0.5 * (lo + hi);
    return 1;
}

/* The recurrence, with w_s = min(p-s-1, M) warm-up forwards on stage s:
 *
 *   F(s,j) = max(prev_s, A(s,j)) + f_s        A(s,j) = max(F(s-1,j), A(s,j-1)) + c_{s-1}
 *   B(s,j) = max(prev_s, G(s,j)) + b_s        G(s,j) = max(B(s+1,j), G(s,j-1)) + c_s
 *
 * (A: arrival of micro-batch j's activation at stage s, the link sending in
 * micro-batch order; G: arrival of its gradient; A(0,j) = 0 and the last
 * stage's G is its own forward, which precedes B on the stage anyway.)
 * prev_s is the end of the stage's previous operation in the 1F1B order.
 *
 * Evaluation order: give F(s,j) the key j and B(s,j) the key j + w_s (the
 * forward it is paired with in the steady state).  Every dependency then
 * has a smaller key or the same key and an earlier place in this sweep:
 * per key, the forwards from the first stage down (F(s-1,j) before F(s,j)),
 * then the backwards from the last stage up (B(s+1,j) has key j + w_{s+1},
 * w_{s+1} in {w_s - 1, w_s}).  Per stage the sweep visits the operations
 * in 1F1B order, so prev_s is one register per stage.  The gradient of
 * micro-batch j waits for stage s at most one key (w_s - w_{s+1} <= 1):
 * two registers per stage, by parity. */
static double exact_steps(int M, int depth, const double *fwd, const double *bwd, const double *send)
{
    double busy[AR_MAX_DEPTH], link_f[AR_MAX_DEPTH], link_b[AR_MAX_DEPTH], grad[AR_MAX_DEPTH][2];
    double pend[AR_MAX_DEPTH], snap[SHIFT_N];
    int w[AR_MAX_DEPTH];
    const int p = depth;
    long r, keys, snap_key = -1;
    int s, shortcut = 1;
    double end = 0.0;
    if (M <= 0 || p <= 0 || p > AR_MAX_DEPTH) return 0.0;
    for (s = 0; s < p; s++) {
        w[s] = p - s - 1 < M ? p - s - 1 : M;
        busy[s] = link_f[s] = link_b[s] = grad[s][0] = grad[s][1] = 0.0;
    }
    keys = (long)M + (p - 1 < M ? p - 1 : M);   /* = M + w_0 */
    for (r = 0; r < keys; r++) {
        if (r < M) {                    /* forwards of micro-batch r, down the pipeline */
            double arrive = 0.0;
            for (s = 0; s < p; s++) {
                double t = (busy[s] > arrive ? busy[s] : arrive) + fwd[s];
                busy[s] = t;
                if (s + 1 < p) {
                    link_f[s] = (t > link_f[s] ? t : link_f[s]) + send[s];
                    arrive = link_f[s];
                }
            }
        }
        for (s = p - 1; s >= 0; s--) {  /* backwards paired with key r, up the pipeline */
            long k = r - w[s];
            double t;
            if (k < 0 || k >= M) continue;
            t = busy[s];
            if (s + 1 < p && grad[s][k & 1] > t) t = grad[s][k & 1];
            t += bwd[s];
            busy[s] = t;
            if (s > 0) {
                link_b[s - 1] = (t > link_b[s - 1] ? t : link_b[s - 1]) + send[s - 1];
                grad[s - 1][k & 1] = link_b[s - 1];
            }
        }
        /* steady keys with enough left to skip: look for a uniform shift */
        if (shortcut && p > 1 && r >= w[0] && (M - 1) - r > 2L * SHIFT_SPAN) {
            double x[SHIFT_N], shift;
            for (s = 0; s + 1 < p; s++) pend[s] = grad[s][(r + 1 - w[s]) & 1]; /* micro-batch r + 1 - w_s */
            steady_pack(p, busy, link_f, link_b, pend, x);
            if (snap_key >= 0 && steady_uniform(4 * p - 3, x, snap, &shift)) {
                long c = r - snap_key, blocks = ((M - 2) - r) / c;
                double add = shift * (double)blocks;
                for (s = 0; s < p; s++) busy[s] += add;
                for (s = 0; s + 1 < p; s++) {
                    link_f[s] += add;
                    link_b[s] += add;
                    pend[s] += add;
                }
                r += blocks * c;    /* the next key is at most M - 1 */
                for (s = 0; s + 1 < p; s++) grad[s][(r + 1 - w[s]) & 1] = pend[s];
                shortcut = 0;
            } else if (snap_key < 0 || r - snap_key >= SHIFT_SPAN) {
                memcpy(snap, x, (size_t)(4 * p - 3) * sizeof *snap);
                snap_key = r;
            }
        }
    }
    for (s = 0; s < p; s++)
        if (!(busy[s] <= end)) end = busy[s];   /* a NaN (overflow) is kept, not dropped */
    return end;
}

/* Past AR_PIPE_STEP_MAX micro-batches the time is extrapolated along the
 * line through the times at AR_PIPE_STEP_MAX and half of it.  The steady
 * state adds the cycle time per micro-batch, so T is affine in M there,
 * but the shortcut above does not always find it: pipelines bound by
 * their links (several near-equal critical cycles) repeat with a period
 * beyond SHIFT_SPAN, or only after a long transient, and a batch of 10^9
 * samples then took 5 x 10^8 steps per price (297 s for a plan).  The
 * slope is averaged over 4,096 micro-batches; where the transient outlasts
 * them it errs a little: against the stepped time at 300,000 micro-batches
 * of 12 random pipelines, 8 of them link-bound, by at most 1.2e-4 relative
 * (docs/cost-model.md, "Long batches"). */
double ar_pipeline_exact(int M, int depth, const double *fwd, const double *bwd, const double *send)
{
    const int M1 = AR_PIPE_STEP_MAX, M0 = AR_PIPE_STEP_MAX / 2;
    double t0, t1;
    if (M <= AR_PIPE_STEP_MAX) return exact_steps(M, depth, fwd, bwd, send);
    t1 = exact_steps(M1, depth, fwd, bwd, send);
    t0 = exact_steps(M0, depth, fwd, bwd, send);
    return ar_pipe_extend(M0, t0, M1, t1, M);
}

/* ---- memo of exact pipeline times ---------------------------------------------- */

int ar_pipe_memo_init(ar_pipe_memo *pm)
{
    memset(pm, 0, sizeof *pm);
    pm->keys = ar_malloc((size_t)AR_PIPE_MEMO * 3 * AR_MAX_DEPTH * sizeof *pm->keys);
    return pm->keys ? ARACHNE_OK : ARACHNE_E_NO_MEMORY;
}

void ar_pipe_memo_free(ar_pipe_memo *pm)
{
    if (!pm) return;
    free(pm->keys);
    memset(pm, 0, sizeof *pm);
}

static uint64_t mix_doubles(uint64_t h, const double *x, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, &x[i], sizeof v);
        h = (h ^ v) * 0x9e3779b97f4a7c15u;
        h ^= h >> 29;
    }
    return h;
}

double ar_pipe_memo_time(ar_pipe_memo *pm, int M, int depth, const double *fwd, const double *bwd,
                         const double *send)
{
    uint64_t h;
    int slot, n = depth - 1;
    double *key, v;
    if (!pm || !pm->keys || M <= 0 || depth <= 0 || depth > AR_MAX_DEPTH)
        return ar_pipeline_exact(M, depth, fwd, bwd, send);
    h = mix_doubles(mix_doubles(mix_doubles((uint64_t)M * 0x100000001b3u + (uint64_t)depth, fwd, depth), bwd, depth),
                    send, n);
    slot = (int)(h % AR_PIPE_MEMO);
    key = pm->keys + (size_t)slot * 3 * AR_MAX_DEPTH;
    /* the whole key is compared: a hash collision costs a recomputation, never a wrong time */
    if (pm->used[slot] && pm->hash[slot] == h && pm->M[slot] == M && pm->depth[slot] == depth &&
        memcmp(key, fwd, (size_t)depth * sizeof *key) == 0 &&
        memcmp(key + AR_MAX_DEPTH, bwd, (size_t)depth * sizeof *key) == 0 &&
        (n == 0 || memcmp(key + 2 * AR_MAX_DEPTH, send, (size_t)n * sizeof *key) == 0))
        return pm->value[slot];
    v = ar_pipeline_exact(M, depth, fwd, bwd, send);
    pm->used[slot] = 1;
    pm->hash[slot] = h;
    pm->M[slot] = M;
    pm->depth[slot] = depth;
    pm->value[slot] = v;
    memcpy(key, fwd, (size_t)depth * sizeof *key);
    memcpy(key + AR_MAX_DEPTH, bwd, (size_t)depth * sizeof *key);
    if (n > 0) memcpy(key + 2 * AR_MAX_DEPTH, send, (size_t)n * sizeof *key);
    return v;
}
