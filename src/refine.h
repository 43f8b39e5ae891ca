/* refine.h -- the refinement's types (src/refine.c), shared with
 * src/refine_ahead.c, which fills the candidates a climb is about to try on
 * several threads at once. */
#ifndef AR_REFINE_H
#define AR_REFINE_H

#include "construct.h"

typedef struct rf_ahead rf_ahead;

typedef struct rf_tmpl {
    int depth;
    int types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH];
} rf_tmpl;

typedef struct rf_spec {
    int n;
    rf_tmpl t[AR_MAX_TEMPLATES];
} rf_spec;

#define RF_SEEN_SLOTS 8192 /* a power of two; filled up to 3/4 */
#define RF_TOP 4           /* structures the last fill tries besides the best (refine.c) */

typedef struct rf_seen {
    uint64_t hash;           /* 0: empty */
    double value;
    int kbest;
} rf_seen;

typedef struct rf_ctx {
    const arachne_cost_model *cm;
    ar_builder b;            /* its fill work space and the free cluster */
    arachne_plan work;       /* the candidate being filled */
    arachne_plan *best;      /* fastest plan priced so far */
    arachne_plan *split;     /* scratch for a candidate's exact split (ar_plan_keep_form) */
    int have;
    rf_spec best_spec;       /* structure of best (its prefix that was kept) */
    long budget, used;
    double deadline;         /* ar_now() seconds; 0: none */
    int capped;
    int max_tp;              /* largest TP degree the nodes allow */
    rf_seen *seen;           /* candidates filled so far (RF_SEEN_SLOTS) */
    int nseen;
    int collecting;          /* 1: a pass only lists its candidates (ar_rf_ahead_collect) */
    rf_ahead *ahead;         /* the next candidates filled on several threads; NULL: one thread */
    rf_spec *top;            /* [RF_TOP] the fastest structures filled (their best prefixes), fastest
                              * first, for the last fill; NULL: not collected */
    double top_value[RF_TOP];
    uint64_t top_hash[RF_TOP];
    int ntop;
    int keep_exact;          /* 1: a plan that runs more samples than the batch does not replace a
                              * best that runs it exactly (the phases with FSDP groups) */
} rf_ctx;

/* Called with every prefix of a candidate that priced (its first k
 * templates, borrowed). */
typedef int (*rf_keep_fn)(void *user, const arachne_plan *p, const rf_spec *s, int k);

/* Fills the templates of s in order on b (from its whole cluster, into
 * work), stopping at the first that does not fit, and hands every priced
 * prefix to keep.  *value: the best throughput among them (0 when not even
 * the first template fits), *kbest its template count; *used and b->fills
 * count the templates tried and filled.  Depends on s and b's cost model
 * only: the same candidate gives the same results on any builder. */
int ar_rf_fill_spec(ar_builder *b, arachne_plan *work, const rf_spec *s, rf_keep_fn keep, void *user, double *value,
                    int *kbest, long *used);

uint64_t ar_rf_hash(const rf_spec *s);
void ar_rf_copy(rf_spec *d, const rf_spec *s);
/* The table's slot of hash h: h itself when seen, else the empty slot. */
rf_seen *ar_rf_seen_slot(rf_ctx *R, uint64_t h);
/* Keeps p (the first k templates of s) when it ranks above the best. */
int ar_rf_keep(rf_ctx *R, const arachne_plan *p, const rf_spec *s, int k);

/* refine_ahead.c.  With more than one OpenMP thread, each pass of a climb
 * first lists its candidates (R->collecting; ar_rf_ahead_collect); when the
 * pass then needs a fill, that candidate and the next ones it has not seen
 * are filled at once, one per thread, and the pass takes their results in
 * order as it reaches them, exactly as if it had filled them itself: a
 * candidate's results depend on the candidate alone, and of its prefixes
 * only those that could still rank above the best are kept for it (the
 * best only rises).  So the refinement returns the same plan and counts
 * for any thread count; what a pass does not reach is dropped.  Without
 * OpenMP, or without the memory of the builders ahead (ar_rf_ahead_open
 * then leaves R->ahead NULL), these do nothing. */
void ar_rf_ahead_open(rf_ctx *R);
void ar_rf_ahead_close(rf_ctx *R);
void ar_rf_ahead_begin(rf_ctx *R);
/* Drops every result filled ahead (the fills change: FSDP groups on). */
void ar_rf_ahead_forget(rf_ctx *R);
void ar_rf_ahead_collect(rf_ctx *R, const rf_spec *c, uint64_t h);
/* s's results when they were filled ahead (*done = 1; the table and the
 * budget are updated by the caller as for a fill), else *done = 0. */
int ar_rf_ahead_take(rf_ctx *R, const rf_spec *s, uint64_t h, double *value, int *kbest, int *done);

#endif
