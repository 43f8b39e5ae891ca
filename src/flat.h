/* flat.h -- the flat policy: the baseline that learns the raw plan knobs.
 *
 * Where the structured planner (construct.h + policy.h) lets the network
 * pick only the structure of a template (depth, per stage a GPU type and a
 * TP degree) and fills the arithmetic by rules behind feasibility masks,
 * the flat policy samples every knob of a template itself:
 *
 *   depth  (STOP from the second template on, 1..Dmax)
 *   per stage: GPU type, TP degree, layer share (a weight bucket 1..8)
 *   replica count (from a fixed grid 1, 2, 3, 4, 6, 8, ..., 2048)
 *   micro-batch size (1, 2, 4, ..., 1024)
 *
 * The only masks are the structural ones that keep an action well formed:
 * STOP not on the first template, depth <= model blocks and Dmax, a depth
 * or a replica count no larger than the GPUs left (each needs one GPU at
 * least), TP no larger than the largest node of the cluster, no replica
 * count or micro-batch that leaves a replica without a sample of the global
 * batch.  Nothing else is masked: a GPU type with no GPU left, a TP group larger
 * than that type's nodes, more replicas than the free GPUs hold, a
 * configuration the profile lacks, a split that runs out of memory -- all
 * are sampled and earn the penalty (first template) or end the rollout
 * (later templates), exactly the reward rule of the structured policy.
 * The layer split is the chosen weights turned into block counts
 * (ar_split_weighted); replicas are placed with the fill's packing
 * (ar_pack_max_replicas / ar_pack_place); MoE stages keep EP = 1,
 * ETP = TP (the flat space has no tiling knob).  The plan is priced by
 * ar_plan_price, the same cost model as every other planner.
 *
 * Network: two ar_nn networks of the policy's kind (nn.h) over the policy's
 * state vector (policy_state.h) plus AR_FLAT_EXTRA flat-specific entries.
 * Net 0 ("structure") uses its DEPTH, DEVICE and TP heads for depth, GPU
 * type and TP; net 1 ("arithmetic") uses its DEPTH head for the replica
 * count (candidate-scored), its DEVICE head for the layer share
 * (candidate-scored) and its TP head for the micro-batch size.
 *
 * Training (ar_flat_train): the structured trainer's algorithm family --
 * groups of sampled rollouts per composition, group-relative advantages of
 * the rollout's return (normalised throughput, or -penalty), a clipped PPO
 * objective over a few epochs, a per-decision entropy bonus, Adam with
 * gradient clipping.  No value network.  See docs/evaluation.md.
 *
 * Evaluations: every template the flat policy completes counts as one
 * plan evaluation, whether it prices, runs out of memory, misses a profile
 * entry or does not pack.
 *
 * Threads: an ar_flat may be shared read-only by runners on different
 * threads; a runner is used by one thread at a time. */
#ifndef ARACHNE_FLAT_H
#define ARACHNE_FLAT_H

#include "fill.h"
#include "nn.h"
#include "policy_state.h"

#define AR_FLAT_SHARES 8                           /* layer-share buckets: weight 1..8 */
#define AR_FLAT_NREP 23                            /* replica-count grid entries */
#define AR_FLAT_NMBS 11                            /* micro-batch sizes 1..1024 */
/* Feature-schema version of flat policy files: the structured state of
 * schema 2 (device rows carry entries 0-7 only; the structured policy's
 * device-ranking entries of schema 3 are cleared) plus the flat entries. */
#define AR_FLAT_STATE_VERSION 2
#define AR_FLAT_EXTRA 16                           /* flat entries after the policy state */
#define AR_FLAT_STATE_DIM (AR_STATE_DIM + AR_FLAT_EXTRA)

/* The knobs, in decision order within a template. */
typedef enum ar_flat_knob {
    AR_FLAT_DEPTH = 0, AR_FLAT_TYPE = 1, AR_FLAT_TP = 2, AR_FLAT_SHARE = 3, AR_FLAT_REPLICAS = 4,
    AR_FLAT_MBS = 5, AR_FLAT_KNOBS = 6
} ar_flat_knob;

/* The replica-count grid (AR_FLAT_NREP entries, ascending). */
extern const int ar_flat_replica_grid[AR_FLAT_NREP];

typedef struct ar_flat {
    ar_nn *net[2];   /* 0: structure, 1: arithmetic */
} ar_flat;

/* Fresh networks from seed (hidden, layers: 0 = the policy defaults 128, 2). */
int ar_flat_create(ar_flat **out, uint64_t seed, int hidden, int layers);
void ar_flat_destroy(ar_flat *f);                 /* NULL is a no-op */
size_t ar_flat_param_count(const ar_flat *f);
/* Saves both networks in one file (two policy-file images behind a small
 * header; docs/evaluation.md), atomically.  meta_json may be NULL. */
int ar_flat_save(const ar_flat *f, const char *path, const char *meta_json);
/* Loads a file written by ar_flat_save.  ARACHNE_E_IO, ARACHNE_E_CORRUPT,
 * ARACHNE_E_UNSUPPORTED as ar_policy_decode. */
int ar_flat_load(ar_flat **out, const char *path);

typedef struct ar_flat_opts {
    int max_steps;     /* templates per plan, 1..AR_MAX_TEMPLATES [AR_MAX_TEMPLATES] */
    double penalty;    /* return of an infeasible first template, in units of the
                          composition's ideal throughput [1.0] */
} ar_flat_opts;
void ar_flat_opts_default(ar_flat_opts *o);

/* One recorded decision (for the PPO re-evaluation). */
typedef struct ar_flat_rec {
    int net, head, K, choice, step;
    double logp;               /* log-probability when sampled */
    size_t x_off, cand_off;    /* into the runner's pool; cand_off (size_t)-1 for TP-head decisions */
    size_t mask_off;           /* into the runner's masks */
} ar_flat_rec;

/* Builds flat plans for one cost model. */
typedef struct ar_flat_runner {
    const ar_flat *f;
    const arachne_cost_model *cm;
    ar_flat_opts opts;
    ar_state_static st;
    ar_nn_ws *ws[2];
    ar_rng rng;
    ar_avail base, avail;
    arachne_plan plan;         /* the plan of the last rollout (ntemplates 0: nothing priced) */
    arachne_plan trial;        /* scratch: plan + the candidate template */
    int *node_of, *gpu_of, *scratch;
    int max_depth, ntp;
    int greedy;
    /* recording */
    int record;
    ar_flat_rec *recs;
    int nrecs, cap_recs;
    double *pool;
    size_t pool_len, pool_cap;
    unsigned char *masks;
    size_t masks_len, masks_cap;
    /* outcome of the last rollout */
    int feasible;              /* 1: the first template priced */
    int templates_tried;
    double ret;                /* return: plan iter/s over the ideal throughput, or -penalty */
    double best_step_thr;      /* best iter/s of any plan the rollout passed through (0: none) */
    int step_dec[AR_MAX_TEMPLATES]; /* decisions of each template step */
    char why[256];             /* why the last template failed ("" if none did) */
    /* cumulative */
    long evaluations;          /* templates completed (priced or rejected) */
} ar_flat_runner;

int ar_flat_runner_init(ar_flat_runner *r, const ar_flat *f, const arachne_cost_model *cm,
                        const ar_flat_opts *opts);
void ar_flat_runner_free(ar_flat_runner *r);
/* One rollout: greedy (argmax) or sampled from seed; record = 1 keeps every
 * decision's inputs.  ARACHNE_OK whether or not the plan is feasible (see
 * r->feasible, r->plan, r->ret); other statuses for real failures (memory,
 * a network error). */
int ar_flat_rollout(ar_flat_runner *r, int greedy, uint64_t seed, int record);

/* Greedy (samples <= 1) or greedy + samples-1 sampled rollouts, keeping the
 * fastest priced plan; the plan records method "flat-greedy" /
 * "flat-best-of-k", samples, evaluations (templates completed) and
 * planning_s.  ARACHNE_E_INFEASIBLE when no rollout priced a plan (the
 * message gives the last reason).  evals_out (may be NULL) receives the
 * templates completed, also on failure.  The caller owns *out. */
int ar_flat_plan(arachne_plan **out, const ar_flat *f, const arachne_cost_model *cm, int samples,
                 uint64_t seed, long *evals_out);

/* ---- training -------------------------------------------------------- */

/* Called after every group of rollouts: total evaluations so far, the
 * composition index, the best iter/s that composition has seen (0 when
 * none), the group's mean return.  A nonzero return stops training (the
 * status is returned by ar_flat_train as ARACHNE_E_CANCELLED). */
typedef int (*ar_flat_progress_fn)(void *user, long evaluations, int comp, double best_iter_per_s,
                                   double mean_return);

typedef struct ar_flat_train_opts {
    long evaluations;    /* budget: stop once this many templates were completed [20000] */
    int group;           /* rollouts per composition per update [16] */
    int epochs;          /* PPO epochs per update [2] */
    double clip;         /* PPO ratio clip [0.2] */
    double entropy;      /* entropy bonus per decision [0.01] */
    double lr;           /* Adam learning rate [1e-3] */
    uint64_t seed;       /* rollout seeds [1] */
    ar_flat_opts flat;   /* rollout options */
    ar_flat_progress_fn progress;
    void *user;
} ar_flat_train_opts;
void ar_flat_train_opts_default(ar_flat_train_opts *o);

typedef struct ar_flat_train_stats {
    long evaluations, rollouts;
    int updates;
    double first_mean_return, last_mean_return;  /* mean return of the first / last update */
    double feasible_frac;                         /* share of rollouts whose first template priced */
} ar_flat_train_stats;

/* Trains f on the n cost models (round robin: one group per composition
 * per update) until the evaluation budget is spent.  Deterministic for the
 * same inputs.  Errors: ARACHNE_E_INVALID_ARGUMENT, ARACHNE_E_NO_MEMORY,
 * ARACHNE_E_CANCELLED (progress asked to stop). */
int ar_flat_train(ar_flat *f, const arachne_cost_model *const *cms, int n, const ar_flat_train_opts *o,
                  ar_flat_train_stats *stats);

/* Mean return of `rollouts` sampled rollouts (seeds from seed) on one cost
 * model: a fixed measurement for before/after comparisons.  evals (may be
 * NULL) receives the templates completed. */
int ar_flat_mean_return(const ar_flat *f, const arachne_cost_model *cm, int rollouts, uint64_t seed,
                        double *mean, long *evals);

#endif
