/* construct.h -- the construction loop shared by the learned policy, random
 * search and exhaustive search (DESIGN.md section 7).
 *
 * A plan is built one structural template per step.  A step asks a
 * decision callback (with opts.replica_first, first for the replicas the
 * template must fit: choice k = at least 2^k) for a depth (choice 0 = STOP,
 * d = depth d), then per
 * stage a GPU type (choice = cluster type index) and a TP degree (choice k
 * means tp = 2^k).  Before every decision a mask removes the choices that
 * cannot run; with the lookahead on (the default) a choice stays only if the
 * current template can still be completed into one that fills and prices,
 * so a rollout never reaches a dead end.  As soon as a template is complete
 * it is filled (ar_fill_template) and the plan so far is priced; the step's
 * reward is the throughput gained (iter/s after minus before).
 *
 * Threads: a builder is used by one thread at a time; builders on the same
 * cost model may run in parallel. */
#ifndef ARACHNE_CONSTRUCT_H
#define ARACHNE_CONSTRUCT_H

#include "fill.h"

typedef enum ar_dec_kind { AR_DEC_DEPTH = 0, AR_DEC_TYPE = 1, AR_DEC_TP = 2, AR_DEC_REPLICAS = 3 } ar_dec_kind;

/* REPLICAS choices (with opts.replica_first): choice k asks for a template
 * of which at least 2^k replicas pack into the free GPUs. */
#define AR_REP_CHOICES 12

/* Most choices of one decision: STOP + AR_MAX_DEPTH depths (types <=
 * AR_MAX_TYPES, TP degrees <= AR_MAX_TP_LOG + 1 are fewer). */
#define AR_MAX_CHOICES (AR_SEARCH_MAX_DEPTH + 1)

/* What a decision callback sees.  Every pointer is borrowed for the call. */
typedef struct ar_dec_ctx {
    ar_dec_kind kind;
    int step;                 /* 0-based step (= templates placed so far) */
    int stage;                /* stage being decided (TYPE, TP); 0 for DEPTH */
    int depth;                /* depth chosen in this step; 0 during DEPTH and REPLICAS */
    int replicas;             /* with replica_first: replicas asked for in this step (0 during REPLICAS);
                               * 0 without replica_first */
    const int *rep_min_depth; /* REPLICAS: per choice, the least depth found to fit that many replicas */
    const int *types;         /* types[0..stage) chosen in this step; for TP also types[stage] */
    const int *tps;           /* tps[0..stage) chosen in this step (TP degrees, not exponents) */
    const int *type_left;     /* free GPUs per type after one replica (replica_first: `replicas`
                               * replicas) of stages [0, stage) */
    const ar_avail *avail;    /* free GPUs before this template */
    const arachne_plan *plan; /* plan so far, priced (ntemplates == 0 at step 0) */
    const arachne_cost_model *cm;
    int max_depth;            /* Dmax: DEPTH choices are 0..max_depth */
    int n;                    /* number of choices */
    const unsigned char *mask;/* mask[i] = 1 when choice i is allowed */
    int nallowed;             /* allowed choices (>= 1) */
} ar_dec_ctx;

/* Sets *choice to an allowed index in [0, ctx->n).  Returns ARACHNE_OK, or
 * any error to abort the construction (returned by the builder as is). */
typedef int (*ar_decide_fn)(void *user, const ar_dec_ctx *ctx, int *choice);

/* One recorded decision. */
typedef struct ar_decision {
    int kind, step, stage, n, choice;
    unsigned char mask[AR_MAX_CHOICES];
} ar_decision;

/* One step: the decisions [first_dec, first_dec + ndec) and its reward. */
typedef struct ar_step_rec {
    int first_dec, ndec;
    int depth;                /* 0: STOP (or forced stop) */
    int feasible;             /* 1: template placed (or STOP); 0: the fill failed */
    double thr_before, thr_after; /* iter/s */
    double rank_after;        /* ar_plan_rank of the plan after a placed template (set only then) */
    double reward;            /* thr_after - thr_before, or -penalty (infeasible first template) */
} ar_step_rec;

typedef struct ar_trace {
    int ndec, cap;
    ar_decision *dec;
    int nsteps;
    ar_step_rec steps[AR_MAX_TEMPLATES + 1];
    double total_reward;
} ar_trace;

void ar_trace_init(ar_trace *t);
void ar_trace_reset(ar_trace *t);  /* keeps the buffer */
void ar_trace_free(ar_trace *t);

typedef struct ar_construct_opts {
    int max_steps;          /* templates at most, 1..AR_MAX_TEMPLATES (default AR_MAX_TEMPLATES) */
    int lookahead;          /* 1 (default): mask choices with no feasible completion */
    int lookahead_budget;   /* DFS nodes per query on top of 2 x depth (default 48) */
    double penalty;         /* delta: reward of an infeasible first template is -delta (default 1.0) */
    int replica_first;      /* 1: every step first decides how many replicas its template must fit
                             * (AR_DEC_REPLICAS), then depth, types and TP under that width; the
                             * fill still places the most replicas that pack (default 0) */
} ar_construct_opts;

void ar_construct_opts_default(ar_construct_opts *o);

#define AR_MAX_WITNESS 64

/* A completion the lookahead found: a whole template that fills. */
typedef struct ar_witness { int depth; double rmax; int types[AR_SEARCH_MAX_DEPTH], tps[AR_SEARCH_MAX_DEPTH]; } ar_witness;

/* The first step's depth mask of a builder, as computed once: every run
 * starts from the same free cluster and an empty plan, so the lookahead
 * gives the same mask, witnesses and counts each time (its searches are
 * deterministic).  Replaying it adds the recorded counts to the
 * statistics, so the evaluations a run reports do not depend on whether
 * the mask was computed or replayed. */
typedef struct ar_step0_cache {
    int valid;
    int lookahead, budget;   /* the options it was computed under */
    unsigned char mask[AR_MAX_CHOICES];
    int any, proven, wn;
    ar_witness wit[AR_MAX_WITNESS];
    long queries, check_fills, budget_outs;
} ar_step0_cache;

typedef struct ar_builder {
    const arachne_cost_model *cm;
    ar_construct_opts opts;
    ar_fill_ws ws;           /* fills of the plan itself */
    ar_avail base;           /* the whole cluster free */
    ar_avail avail;          /* free GPUs of the plan being built */
    int max_depth;           /* Dmax */
    int ntp;                 /* TP choices: 0..ntp-1 */
    int type_order[AR_MAX_TYPES]; /* types by GPU memory, largest first */
    /* lookahead state of the current step */
    int budget_left;
    int wn;                  /* witnesses found in this step */
    ar_witness wit[AR_MAX_WITNESS];
    int q_types[AR_MAX_DEPTH], q_tps[AR_MAX_DEPTH];
    /* statistics (cumulative) */
    long fills;              /* templates placed */
    long check_fills;        /* lookahead trial fills */
    long queries;            /* lookahead queries */
    long budget_outs;        /* queries masked because the budget ran out */
    int infeasible_proven;   /* last run failed at step 0 with no search cut by its budget */
    ar_step0_cache s0;       /* the first step's depth mask (see ar_step0_cache) */
} ar_builder;

int ar_builder_init(ar_builder *b, const arachne_cost_model *cm, const ar_construct_opts *opts);
void ar_builder_free(ar_builder *b);

/* Builds one plan into *out (an initialised plan or an all-zero struct; its
 * contents are replaced).  trace may be NULL.  Returns ARACHNE_OK with a plan
 * of at least one template; ARACHNE_E_INFEASIBLE when no first template fits
 * (message says why: total memory needed vs available, or the fill's
 * reason); ARACHNE_E_INVALID_ARGUMENT when the callback picks a masked or
 * out-of-range choice; any error the callback returns. */
int ar_builder_run(ar_builder *b, ar_decide_fn fn, void *user, arachne_plan *out, ar_trace *trace);

/* Visits every plan the construction can reach with at most max_steps
 * templates (the plan after each placed template), depth first: depths
 * ascending, then per stage GPU types in cluster order and TP degrees
 * ascending.  Prefixes are pruned only by exact tests (one-replica packing,
 * replica memory bounds), so the set is the one the masks allow (a superset
 * when a lookahead budget would have run out).  fn sees the plan borrowed;
 * a non-OK return stops the walk and is returned.  deadline (ar_now()
 * seconds, 0: none) stops it with ARACHNE_E_CANCELLED.  plan: scratch
 * storage as for ar_builder_run.  *leaves: plans visited. */
typedef int (*ar_plan_visit_fn)(void *user, const arachne_plan *plan);
int ar_builder_enumerate(ar_builder *b, int max_steps, double deadline, ar_plan_visit_fn fn, void *user,
                         arachne_plan *plan, long *leaves);

/* ar_builder_enumerate that also stops, with ARACHNE_E_CANCELLED and *cut
 * set (cut may be NULL), after max_nodes prefixes (0: no limit; the stages
 * tried, pruned or not, as the walk meets them).  The limit is a count, so
 * where it stops depends on the inputs alone: the walk is the same as
 * without it up to that point. */
int ar_builder_enumerate_limited(ar_builder *b, int max_steps, double deadline, long max_nodes, ar_plan_visit_fn fn,
                                 void *user, arachne_plan *plan, long *leaves, int *cut);

/* The first step's depth mask, one depth at a time.  Each depth's answer
 * depends on its own searches alone (construct.c, "the first step's depth
 * mask"), so the depths can be searched on several builders at once (one
 * per thread) and merged into one builder's ar_step0_cache, which the others
 * copy: arachne_plan_build does so for its parallel rollouts, which would
 * otherwise each compute the same mask.  ar_builder_run computes its own
 * cache the same way, one depth after another, so the merged cache is the
 * one a builder computes alone. */
typedef struct ar_step0_part {
    int depth;
    int found;               /* a completion found: the depth is allowed */
    int pass;                /* the search that found it (0: the first; 1: 64x the budget; ...) */
    int escalated;           /* the first search ran out of budget */
    int open2, open;         /* still unsettled after the 64x search / after every search */
    ar_witness wit;          /* the completion found */
    long queries, check_fills, budget_outs;
} ar_step0_part;

/* Depths the first step's mask asks (1..n): 0 when the mask is not searched
 * (lookahead off) or already cached. */
int ar_builder_step0_depths(const ar_builder *b);

/* Searches one depth on b (scratch: plan storage as for ar_builder_run);
 * b's statistics and cache are left as they were.  Thread rules: one call
 * per builder at a time; builders of one cost model may run at once. */
int ar_builder_step0_part(ar_builder *b, arachne_plan *scratch, int depth, ar_step0_part *out);

/* Merges the parts of depths 1..n (parts[d - 1]; n = ar_builder_step0_depths)
 * into b's cache (with the 1024x fallback searches when nothing was found). */
int ar_builder_step0_merge(ar_builder *b, arachne_plan *scratch, const ar_step0_part *parts, int n);

/* Tests: *fits = whether the lookahead's memory bounds let stages [0, nfixed)
 * of types/tps (GPU type, group size) start a first template of `depth`
 * stages on b's free cluster (0 when one replica of them does not pack).
 * gpus 0: the bounds of the searches; 1: those of the proof searches that
 * run when no depth was found (also the GPU count, both stage orders and
 * every block kind).  A sound bound says yes to every prefix of a template
 * whose trial fill succeeds. */
int ar_builder_prefix_fits(ar_builder *b, arachne_plan *scratch, int depth, const int *types, const int *tps, int nfixed,
                           int gpus, int *fits);

/* One-shot: init, run, free. */
int ar_construct(const arachne_cost_model *cm, ar_decide_fn fn, void *user, int max_steps,
                 arachne_plan *out, ar_trace *trace);

/* A lower bound on the bytes any plan needs over the whole cluster (the
 * weights, gradients and optimizer state of every parameter, each held at
 * least once, and one micro-batch of activations of every layer at the
 * least any profiled configuration stores) and the usable bytes of all GPUs
 * (capacity minus the fixed framework overhead).  need > have proves that
 * no plan exists. */
void ar_construct_memory_bound(const arachne_cost_model *cm, double *need, double *have);

#endif
