/* schedule.c -- the pure formulas of the cost model: 1F1B pipeline time,
 * exact min-max micro-batch assignment across templates, ring all-reduce.
 * No allocation, no cost-model state.  Formulas and sources:
 * docs/cost-model.md. */
#include <math.h>
#include <string.h>

#include "cost.h"

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

static void reduce_overshoot(const asg_ctx *c, long *m, long over)
{
    long lim[AR_MAX_TEMPLATES];
    int j;
    for (j = 0; j < c->n; j++) lim[j] = m[j] >= 1 ? m[j] - 1 : 0;  /* never cut a working template to 0 */
    if (over <= 0) return;
    if (over < AR_KNAP_BITS) {
        uint64_t reach[AR_MAX_TEMPLATES + 1][AR_KNAP_WORDS];
        long best, s, d;
        int nw = (int)(over / 64) + 1, i;
        for (i = 0; i < nw; i++) reach[0][i] = 0;
        reach[0][0] = 1u;
        for (j = 0; j < c->n; j++) {
            /* reach[j+1] = reach[j] + {0, w, 2w, ..., lim w}: binary splitting
             * of the bounded item (chunks 1, 2, 4, ..., remainder) */
            long left = lim[j] < over / c->w[j] ? lim[j] : over / c->w[j], chunk = 1;
            uint64_t *cur = reach[j + 1];
            for (i = 0; i < nw; i++) cur[i] = reach[j][i];
            while (left > 0) {
                long k = chunk < left ? chunk : left;
                shift_or(cur, cur, k * c->w[j], nw);
                left -= k;
                chunk *= 2;
            }
            /* bits above `over` are meaningless; clear them */
            if ((over + 1) % 64) cur[nw - 1] &= ((uint64_t)1 << ((over + 1) % 64)) - 1u;
        }
        for (best = over; best > 0 && !bit_get(reach[c->n], best); best--) {}
        /* reconstruct: last template first, largest cut that stays reachable */
        s = best;
        for (j = c->n - 1; j >= 0; j--) {
            for (d = lim[j] < s / c->w[j] ? lim[j] : s / c->w[j]; d >= 0; d--)
                if (bit_get(reach[j], s - d * c->w[j])) break;
            if (d < 0) d = 0; /* unreachable: cannot happen */
            m[j] -= d;
            s -= d * c->w[j];
        }
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
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "micro-batch assignment: NULL argument");
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
