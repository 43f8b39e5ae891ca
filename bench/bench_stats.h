/* bench_stats.h -- the order statistics the benchmarks quote (medians),
 * shared so that each benchmark does not carry its own copy. */
#ifndef ARACHNE_BENCH_STATS_H
#define ARACHNE_BENCH_STATS_H

#include <stdlib.h>

/* qsort comparator for doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n), n >= 1; sorts v in place. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
