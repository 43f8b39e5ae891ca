/* fill_split.c -- layer splits of a template: the balanced split from the
 * profiled per-block times, and the fixed alternatives priced when it does
 * not fit in memory (even, memory-proportional, shifted). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "fill.h"

int ar_stage_speed_get(const arachne_cost_model *cm, int type, int tp, int mbs, ar_stage_speed *sp)
{
    const ar_cost_cache *cc = (const ar_cost_cache *)cm->cache;
    int k, ok = 1, lt = 0, lm = 0;
    while ((1 << lt) < tp) lt++;
    while ((1 << lm) < mbs) lm++;
    if ((1 << lt) != tp || (1 << lm) != mbs || lt >= AR_TP_LEVELS || lm >= AR_MBS_LEVELS || !cc) {
        for (k = 0; k < AR_LAYER_KINDS; k++) sp->block_s[k] = -1.0;
        return 0;
    }
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        const ar_cost_entry *e = &cc->tab[type][k][lt][lm];
        sp->block_s[k] = -1.0;
        if (!cc->needed[k]) continue;
        if (!e->present) { ok = 0; continue; }
        sp->block_s[k] = e->time_s + e->tp_comm_s;
    }
    return ok;
}

/* Seconds of block b on a stage: ar_model_block_kind written out, since
 * the split search below asks for every block dozens of times per split. */
static double block_s(const arachne_model *m, const ar_stage_speed *sp, int b)
{
    if (m->pattern[0]) return sp->block_s[m->block_kinds[b]];
    return sp->block_s[m->experts > 0 && b >= m->dense_prefix ? AR_LAYER_MOE : AR_LAYER_DENSE];
}

/* Seconds of blocks [b0, b1) on a stage (kinds per block). */
static double range_s(const arachne_model *m, const ar_stage_speed *sp, int b0, int b1)
{
    double t = 0.0;
    int b;
    if (m->experts <= 0) return (double)(b1 - b0) * sp->block_s[AR_LAYER_DENSE];
    for (b = b0; b < b1; b++) t += block_s(m, sp, b);
    return t;
}

double ar_split_range_s(const arachne_model *m, const ar_stage_speed *sp, int b0, int b1)
{
    return range_s(m, sp, b0, b1);
}

/* Narrow [*a, *b) to the values of T on the same side of v as T is. */
static void keep_le(double v, double *a) { if (v > *a) *a = v; }
static void keep_gt(double v, double *b) { if (v < *b) *b = v; }

/* Greedy from the last stage backwards: each stage takes as many blocks as
 * keep it within T and within its cap (caps may be NULL: no cap), at least
 * one, leaving one per earlier stage; the first stage takes the rest.
 * Returns 1 and fills firsts when the first stage also stays within T and
 * its cap.  Taking as much as possible from the back leaves the shortest
 * prefix to the earlier stages; since a stage that fits a range also fits
 * any range inside it (time and memory only grow with blocks), no other
 * split within T exists when this one fails, so the binary search below
 * finds the least T.  [*a, *b_out): the values of T for which every
 * comparison made with T comes out the same (a: the largest value compared
 * that was <= T, b_out: the smallest that was > T); every T in it takes the
 * same path and gives the same result and firsts. */
static int greedy_back(const arachne_model *m, int depth, const ar_stage_speed *sp, const int *caps, double T,
                       int *firsts, double *a, double *b_out)
{
    int s, end = m->blocks;
    *a = -HUGE_VAL;
    *b_out = HUGE_VAL;
    firsts[depth] = m->blocks;
    for (s = depth - 1; s >= 1; s--) {
        double extra = s == depth - 1 ? sp[s].block_s[AR_LAYER_HEAD] : 0.0;
        double t = extra;
        int b = end, minb = s; /* leave >= 1 block to each of stages 0..s-1 */
        if (caps && end - caps[s] > minb) minb = end - caps[s];
        /* take at least one block */
        t += block_s(m, &sp[s], b - 1);
        b--;
        while (b - 1 >= minb) {
            double dt = block_s(m, &sp[s], b - 1);
            if (t + dt > T) { keep_gt(t + dt, b_out); break; }
            keep_le(t + dt, a);
            t += dt;
            b--;
        }
        if (t > T) { keep_gt(t, b_out); return 0; }
        keep_le(t, a);
        firsts[s] = b;
        end = b;
    }
    firsts[0] = 0;
    if (caps && end > caps[0]) return 0;
    {
        double t = range_s(m, &sp[0], 0, end) + sp[0].block_s[AR_LAYER_EMBED] +
                   (depth == 1 ? sp[0].block_s[AR_LAYER_HEAD] : 0.0);
        if (t <= T) { keep_le(t, a); return 1; }
        keep_gt(t, b_out);
        return 0;
    }
}

/* The bisection below asks greedy_back about ~60 values of T, most of them
 * inside a range an earlier call already answered (the same comparisons
 * outcomes, so the same answer): those are answered from the record of
 * earlier calls' ranges.  The bisection takes the same steps and ends on
 * the same T, whose split the last call computes.  (With excess precision
 * a comparison might see another value than the one recorded: no reuse.) */
#define SPLIT_KNOWN 66
typedef struct split_known {
    int n;
    double a[SPLIT_KNOWN], b[SPLIT_KNOWN];
    int ok[SPLIT_KNOWN];
} split_known;

static int greedy_known(split_known *K, const arachne_model *m, int depth, const ar_stage_speed *sp,
                        const int *caps, double T, int *firsts)
{
    double a, b;
    int i, ok;
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    for (i = 0; i < K->n; i++)
        if (T >= K->a[i] && T < K->b[i]) return K->ok[i];
#endif
    ok = greedy_back(m, depth, sp, caps, T, firsts, &a, &b);
    if (K->n < SPLIT_KNOWN) {
        K->a[K->n] = a;
        K->b[K->n] = b;
        K->ok[K->n] = ok;
        K->n++;
    }
    return ok;
}

/* Binary search on the slowest stage's time T with greedy_back. */
static int split_search(const arachne_model *m, int depth, const ar_stage_speed *sp, const int *caps, int *firsts)
{
    double lo = 0.0, hi = 0.0, a, b;
    split_known K;
    int s, it;
    K.n = 0;
    for (s = 0; s < depth; s++) {
        double t;
        int q;
        /* stages of one GPU type and TP degree have the same speeds, and
         * the same sum: one of them is enough for the largest */
        for (q = 0; q < s && memcmp(&sp[q], &sp[s], sizeof sp[s]) != 0; q++) {}
        if (q < s) continue;
        t = range_s(m, &sp[s], 0, m->blocks) + sp[s].block_s[AR_LAYER_EMBED] + sp[s].block_s[AR_LAYER_HEAD];
        if (t > hi) hi = t;
    }
    hi = hi * 1.000001 + 1e-12;
    if (!greedy_known(&K, m, depth, sp, caps, hi, firsts)) return 0;
    for (it = 0; it < 64; it++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) break;
        if (greedy_known(&K, m, depth, sp, caps, mid, firsts)) hi = mid; else lo = mid;
    }
    (void)greedy_back(m, depth, sp, caps, hi, firsts, &a, &b);
    return 1;
}

void ar_split_balanced(const arachne_model *m, int depth, const ar_stage_speed *sp, int *firsts)
{
    if (depth == 1) { firsts[0] = 0; firsts[1] = m->blocks; return; }
    if (!split_search(m, depth, sp, NULL, firsts)) ar_split_even(m->blocks, depth, firsts);
}

int ar_split_balanced_capped(const arachne_model *m, int depth, const ar_stage_speed *sp, const int *caps,
                             int *firsts)
{
    int s, total = 0;
    for (s = 0; s < depth; s++) {
        if (caps[s] < 1) return 0;
        total += caps[s] > m->blocks ? m->blocks : caps[s];
    }
    if (depth > m->blocks || total < m->blocks) return 0;
    if (depth == 1) { firsts[0] = 0; firsts[1] = m->blocks; return 1; }
    return split_search(m, depth, sp, caps, firsts);
}

void ar_split_even(int blocks, int depth, int *firsts)
{
    int base = blocks / depth, rem = blocks % depth, lo = (depth - rem) / 2, s, b = 0;
    for (s = 0; s < depth; s++) {
        firsts[s] = b;
        b += base + (s >= lo && s < lo + rem ? 1 : 0);
    }
    firsts[depth] = blocks;
}

void ar_split_weighted(int blocks, int depth, const double *w, int *firsts)
{
    int cnt[AR_MAX_DEPTH];
    double frac[AR_MAX_DEPTH], wsum = 0.0;
    int s, left = blocks - depth, given = 0, b = 0;
    for (s = 0; s < depth; s++) wsum += w[s] > 0 ? w[s] : 0.0;
    for (s = 0; s < depth; s++) {
        double share = wsum > 0 ? (double)left * (w[s] > 0 ? w[s] : 0.0) / wsum : (double)left / depth;
        cnt[s] = 1 + (int)share;
        frac[s] = share - (double)(int)share;
        given += (int)share;
    }
    while (given < left) {
        int best = 0;
        for (s = 1; s < depth; s++) if (frac[s] > frac[best]) best = s;
        cnt[best]++;
        frac[best] = -1.0;
        given++;
    }
    for (s = 0; s < depth; s++) { firsts[s] = b; b += cnt[s]; }
    firsts[depth] = blocks;
}

int ar_split_shift(int depth, const int *src, int s, int dir, int k, int *dst)
{
    int n = src[s + 1] - src[s];
    if (k < 1 || n - k < 1) return 0;
    if (dir > 0 && s + 1 >= depth) return 0;
    if (dir < 0 && s < 1) return 0;
    memcpy(dst, src, (size_t)(depth + 1) * sizeof(int));
    if (dir > 0) dst[s + 1] -= k;
    else dst[s] += k;
    return 1;
}
