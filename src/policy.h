/* policy.h -- the arachne_policy handle and the policy as a decision source
 * of the construction loop (greedy or sampled), with an optional recording
 * of every decision for training.  Internal. */
#ifndef ARACHNE_POLICY_H
#define ARACHNE_POLICY_H

#include "construct.h"
#include "nn.h"
#include "policy_state.h"

struct arachne_policy {
    ar_nn *nn;
    char *meta;      /* JSON metadata stored in the file ("" when none) */
};

/* One decision as the network saw it (for PPO re-evaluation). */
typedef struct ar_decision_rec {
    int head;        /* ar_head */
    int K;           /* candidates */
    int choice;
    double logp;     /* log-probability under the rule that drew it: the policy's, or
                      * for a forced choice the uniform draw's -log(allowed) */
    int step;        /* template step it belongs to */
    int forced;      /* 1: drawn by an exploration rule, not the policy */
    size_t x_off;    /* offsets into the rollout's feature pool */
    size_t c_off;
    size_t cand_off; /* (size_t)-1 when none */
    size_t mask_off;
} ar_decision_rec;

/* Exploration rules for training rollouts (all off for planning). */
typedef struct ar_explore {
    double force_depth_p;   /* probability this rollout's depths are drawn uniformly */
    int uniform_types;      /* 1: GPU types drawn uniformly */
} ar_explore;

/* A decision source driven by a policy. */
typedef struct ar_policy_src {
    const ar_nn *nn;
    ar_state_static st;
    ar_nn_ws *ws;
    ar_rng rng;
    int greedy;
    int force_depth;        /* decided once per rollout from ar_explore */
    int uniform_types;
    /* A teacher (training's replay of a refined plan): when set, it makes
     * every choice and the policy only records what it saw; the choice must
     * be allowed.  Cleared by ar_policy_src_reset. */
    ar_decide_fn teach;
    void *teach_user;
    /* Recording (record = 1): decisions and their inputs. */
    int record;
    ar_decision_rec *recs;
    int nrecs, cap_recs;
    double *pool;           /* x, c, candidate rows */
    size_t pool_len, pool_cap;
    unsigned char *masks;
    size_t masks_len, masks_cap;
} ar_policy_src;

int ar_policy_src_init(ar_policy_src *s, const ar_nn *nn, const arachne_cost_model *cm, uint64_t seed,
                       int greedy, int record);
void ar_policy_src_reset(ar_policy_src *s, uint64_t seed, int greedy, const ar_explore *ex);
void ar_policy_src_free(ar_policy_src *s);
/* The ar_decide_fn of the construction loop (user = ar_policy_src *). */
int ar_policy_decide(void *user, const ar_dec_ctx *ctx, int *choice);

/* Construction options of the policy (the defaults plus replica_first:
 * feature schema 6 asks for the width first): every path that runs the
 * policy or replays its decisions builds with these. */
void ar_policy_construct_opts(ar_construct_opts *o);

/* A decision source that replays choices[0..n), then either stops the
 * construction at the next decision (capture 1: the builder returns
 * AR_POLICY_SCRIPT_STOP, and mask, nopt and the policy's own choice there
 * are kept) or lets the policy decide the rest (capture 0).  Rollout
 * decoding and bench_value_decoding study one decision at a time so. */
#define AR_POLICY_SCRIPT_STOP (-7777) /* not a library status: the builder passes it through */
typedef struct ar_policy_script {
    ar_policy_src *src;
    const int *choices;
    int n, idx, capture;
    int policy_choice, nopt;
    unsigned char mask[AR_MAX_CHOICES];
    int *taken;             /* optional: every choice made, scripted or the policy's */
    int ntaken, cap_taken;  /* (a construction with more than cap_taken decisions fails) */
} ar_policy_script;
/* The ar_decide_fn of a script (user = ar_policy_script *). */
int ar_policy_script_decide(void *user, const ar_dec_ctx *ctx, int *choice);

/* Decisions of one construction at most: templates (and the STOP) x
 * (replicas, depth, a type and a TP degree per stage of the deepest
 * template the planners build). */
#define AR_POLICY_MAX_DECISIONS ((AR_MAX_TEMPLATES + 1) * (2 + 2 * AR_SEARCH_MAX_DEPTH))

/* Rollout decoding's search without its finishing passes, on one thread
 * (training runs compositions in parallel): the choices of the decoded
 * construction, every decision from the first, into choices[0..*n) (cap:
 * its length, at least AR_POLICY_MAX_DECISIONS), built with opts (NULL:
 * ar_policy_construct_opts).  At most `evaluations` fills are spent on
 * lookahead (0: no cap; the policy decides the rest once spent); *fills
 * receives the fills spent, and *cut (NULL: not wanted) 1 when the cap
 * stopped the search before a decision with more than one allowed choice
 * (the rest is then the policy's greedy choices), else 0.  Errors: ARACHNE_E_INVALID_ARGUMENT (cap too
 * small), those of the construction; ARACHNE_E_INFEASIBLE when no plan
 * fills.
 * values (NULL: not wanted; else room for AR_POLICY_MAX_DECISIONS rows of
 * AR_MAX_CHOICES): row i receives the rank (ar_plan_rank, iter/s; -1: the
 * completion did not fill) of the greedy completion of every allowed
 * choice of decision i that the search weighed, the policy's own choice
 * included; a decision it did not weigh (one allowed choice, or the budget
 * spent) and a choice not allowed read AR_ROLLOUT_NO_VALUE.  These are the
 * teacher's values of its choices (cost-sensitive imitation). */
#define AR_ROLLOUT_NO_VALUE (-2.0)
int ar_policy_rollout_choices(const arachne_policy *policy, const arachne_cost_model *cm,
                              const ar_construct_opts *opts, long evaluations, int *choices, int cap, int *n,
                              long *fills, int *cut, double *values);

/* Rollout decoding as an expert for another decoder's construction
 * (DAgger's relabelling): for the construction choices[0..n) (a student's
 * greedy choices, say), labels[i] is the choice rollout decoding of
 * `policy` would take at decision i after choices[0..i): the allowed
 * choice whose greedy completion under `policy` prices best, ties to the
 * policy's own choice, then to the lowest index.  A decision with one
 * allowed choice is labelled with it.  On rollout decoding's own choices
 * (no budget) the labels are those choices.  Labelling stops before a
 * decision with more than one allowed choice once `evaluations` fills are
 * spent (0: no cap), so *nlabels < n exactly when the cap left a weighing
 * out; *nlabels receives the decisions labelled and *fills the fills
 * spent.  One thread.
 * Errors: ARACHNE_E_INVALID_ARGUMENT (n outside 0..AR_POLICY_MAX_DECISIONS,
 * or the construction ends before decision n-1), those of the
 * construction.  values: as ar_policy_rollout_choices's, for the decisions
 * labelled. */
int ar_policy_rollout_relabel(const arachne_policy *policy, const arachne_cost_model *cm,
                              const ar_construct_opts *opts, long evaluations, const int *choices, int n,
                              int *labels, int *nlabels, long *fills, double *values);

/* Threads for `runs` independent constructions (best-of-K's rollouts, a
 * rollout decision's completions): all the OpenMP threads, at most one per
 * run; 1 without OpenMP. */
int ar_policy_threads(int runs);
/* arachne_plan_build that also hands out, in *greedy (when not NULL and
 * samples > 1), rollout 0's plan: the greedy plan a build with one sample
 * gives, with method "policy-greedy", 0 evaluations and 0 s (both are
 * counted in *out's).  *greedy is NULL when rollout 0 found no plan, when
 * samples <= 1 (*out is then that plan) and on error.  In *alt (when not
 * NULL and samples > 1): the highest-ranked rollout (ties: the lowest
 * index) whose stages use another set of GPU types than *out's, with
 * method "policy-best-of-k", 0 evaluations and 0 s; NULL when every
 * rollout that found a plan uses *out's types, and on error.  The same
 * for any thread count.  The caller destroys all three. */
int ar_policy_build(arachne_plan **out, arachne_plan **greedy, arachne_plan **alt, const arachne_policy *policy,
                    const arachne_cost_model *cm, int samples, uint64_t seed);

/* The greedy decoder's first finishing pass on a constructed plan p whose
 * construction trace is tr: p cut to the template prefix after which the
 * construction's plan ranked highest, repriced (arachne_plan_build and
 * arachne_plan_rollout both finish their plans so). */
int ar_policy_keep_best_prefix(const arachne_cost_model *cm, arachne_plan *p, const ar_trace *tr);

/* Fixed TP head width: options 1, 2, ..., 2^(AR_POLICY_TP-1). */
#define AR_POLICY_TP 11

void ar_policy_nn_config(ar_nn_config *cfg, int hidden, int layers);

#endif
