/* test_cost.c -- the cost model: pure formulas (min-max assignment, ring
 * all-reduce), and (below) stage pricing, memory, options and plan pricing. */
#include <stdlib.h>

#include "harness.h"
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

TEST(assignment_matches_brute_force)
{
    ar_rng rng;
    int it;
    ar_rng_seed(&rng, 7);
    for (it = 0; it < 400; it++) {
        int n = 1 + ar_rng_int(&rng, 3), B = 1 + ar_rng_int(&rng, 40), r[3], b[3], m[3], j;
        double tmax[3], tsum[3], T, bT;
        long cap = 0, bover;
        for (j = 0; j < n; j++) {
            r[j] = 1 + ar_rng_int(&rng, 4);
            b[j] = 1 << ar_rng_int(&rng, 3);
            /* integer-valued times make ties (the hard case) common */
            tmax[j] = (double)(1 + ar_rng_int(&rng, 5));
            if (it % 2) tmax[j] += ar_rng_uniform(&rng);
            tsum[j] = tmax[j] * (1 + ar_rng_int(&rng, 4));
        }
        ASSERT_OK(ar_assign_microbatches(B, n, r, b, tmax, tsum, m, &T));
        brute(B, n, r, b, tmax, tsum, &bT, &bover);
        for (j = 0; j < n; j++) { ASSERT(m[j] >= 0); cap += (long)r[j] * b[j] * m[j]; }
        ASSERT(cap >= B);
        ASSERT_NEAR(T, bT, 1e-12);
        ASSERT_EQ(cap - B, bover);
        for (j = 0; j < n; j++) ASSERT_LE(tj(tmax[j], tsum[j], m[j]), T);
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

SUITE(cost, T(assignment_matches_brute_force), T(assignment_idles_only_a_template_that_would_slow_the_iteration),
      T(assignment_large_overshoot_stays_feasible_and_minimal), T(assignment_rejects_bad_input),
      T(ring_allreduce_formula));
