/* train.h -- the trainer (arachne_trainer): group-relative PPO across
 * compositions with PCGrad, forced exploration, self-imitation from
 * per-depth replay buffers, OpenMP rollouts and checkpoints.  The method and
 * every formula: docs/training.md.  Internal. */
#ifndef ARACHNE_TRAIN_H
#define ARACHNE_TRAIN_H

#include "policy.h"

#define AR_TRAIN_NOPT 31          /* arachne_train_option values 0..30 */
#define AR_TRAIN_NOPT_V5 27       /* options in a checkpoint written before the rollout targets and SIL_EPOCHS */
#define AR_TRAIN_NOPT_V1 20       /* options in a checkpoint written before SIL_TOP and GREEDY_ROLLOUTS */
#define AR_TRAIN_NOPT_V2 22       /* options in a checkpoint written before SIZE_CURRICULUM */
#define AR_TRAIN_NOPT_V3 23       /* options in a checkpoint written before REFINE_INTERVAL */
#define AR_TRAIN_NOPT_V4 25       /* options in a checkpoint written before the entropy schedule */
#define AR_TRAIN_MAX_COMPS 4096
#define AR_TRAIN_MAX_SIL 16       /* ARACHNE_TRAIN_SIL_PER_DEPTH at most */
#define AR_PPO_DUAL_CLIP 3.0      /* dual-clip bound c of the PPO ratio for negative advantages */

/* One decision of a plan kept for self-imitation: the inputs the network
 * saw (as float, in the plan's pool) and the choice made. */
typedef struct ar_sil_dec {
    int head, K, choice, step;
    size_t in_off;    /* x (S), c (C), then K x F candidate rows unless TP */
    size_t mask_off;  /* K bytes */
} ar_sil_dec;

/* A plan found in training: its throughput, the depth of its first
 * template, the choice sequence (replays the construction) and the
 * decision inputs (self-imitation). */
typedef struct ar_sil_plan {
    double iter_per_s;
    int depth;
    int ndec;
    ar_sil_dec *dec;
    float *in;
    size_t in_len;
    unsigned char *masks;
    size_t masks_len;
} ar_sil_plan;

/* Per-composition state. */
typedef struct ar_train_comp {
    const arachne_cost_model *cm;
    char *name;
    ar_state_static st;
    double penalty;            /* iter/s: PENALTY x thr_ref */
    int max_depth;
    /* buffers: buf[d-1][0..nbuf[d-1]) best first, depth d = 1..max_depth */
    ar_sil_plan *buf[AR_SEARCH_MAX_DEPTH];
    int nbuf[AR_SEARCH_MAX_DEPTH];
    ar_sil_plan best;          /* ndec == 0: none yet */
    ar_sil_plan roll;          /* the last rollout-decoding round's plan (ndec == 0: none) */
    /* statistics */
    double mean_return, std_return; /* last update's group, iter/s */
    double evaluations;
    int have_group;            /* mean/std_return are set */
    int active;                /* takes part in the current update (SIZE_CURRICULUM) */
    double refined_from;       /* best.iter_per_s the last refinement started from (0: none);
                                * not in checkpoints: refining the same plan again gives the
                                * same plan, which the buffers do not take twice */
    int refine_gain, refine_miss; /* the last round's outcome (summed by the trainer) */
    int neighbours[64];        /* most similar compositions (SIL) */
    int nneighbours;
} ar_train_comp;

/* One rollout slot (composition i, member g): persistent workspaces. */
typedef struct ar_train_slot {
    ar_builder b;
    ar_policy_src src;
    ar_trace trace;
    arachne_plan plan;
    int ready;
    int status;
    char err[256];
    double ret;                /* episode return (iter/s) */
    long evals;                /* fills + lookahead fills of the rollout */
    double adv[AR_MAX_TEMPLATES + 1]; /* advantage of each step */
} ar_train_slot;

struct arachne_trainer {
    arachne_policy *policy;    /* borrowed */
    uint64_t seed;
    ar_rng rng;                /* PCGrad order */
    long updates_done;
    double opt[AR_TRAIN_NOPT];
    int ncomp, cap_comp;
    ar_train_comp *comp;
    ar_train_slot *slots;      /* ncomp * G, built at the first update */
    int nslots, slots_g;
    double **grads;            /* ncomp gradient buffers */
    ar_nn_ws **ws;             /* ncomp workspaces */
    int ngrads;
    double *best_buf;          /* ncomp, for the callback */
    /* global statistics */
    double last_norm_reward, last_entropy, last_grad_norm;
    long refined_plans, refine_misses; /* REFINE_INTERVAL outcomes (not in checkpoints) */
};

void ar_train_comp_clear_plans(ar_train_comp *c);
/* Forced-depth probability of the next update (linear schedule). */
double ar_train_force_p(const arachne_trainer *t);
/* Entropy bonus coefficient of the next update: ENTROPY, falling linearly
 * from update ENTROPY_DECAY_START to ENTROPY x ENTROPY_END_SCALE at update
 * UPDATES, constant after. */
double ar_train_entropy(const arachne_trainer *t);
/* SIZE_CURRICULUM: the first update composition i takes part in (0 without a curriculum). */
long ar_train_join_update(const arachne_trainer *t, int i);
/* The default of an arachne_train_option; options added after a checkpoint
 * format was written default to what runs did before they existed. */
double ar_train_option_default(int option);

/* ---- pieces with unit tests --------------------------------------------- */

/* Group-relative advantages of one group.  G rollouts; rollout g has nsteps[g]
 * steps with rewards r[g * stride + t].  Return-to-go G_{g,t} = sum_{t' >= t}
 * r_{g,t'} (0 past the end); R_g = G_{g,0}; with s = std_g R (population),
 *   A_{g,t} = (G_{g,t} - mean_g G_{.,t}) / (s + eps),  eps = 1e-6 mean_g |R_g| + 1e-300,
 * and A = 0 everywhere when s <= 1e-9 mean_g |R_g| (equal returns teach nothing).
 * Writes adv[g * stride + t] for t < nsteps[g]; *mean_out, *std_out (may be
 * NULL) receive mean_g R and s.  stride >= max nsteps. */
void ar_train_advantages(int G, const int *nsteps, const double *r, int stride, double *adv, double *mean_out,
                         double *std_out);

/* PCGrad over n gradients of P entries each (g[i], left unchanged): for each
 * i, for each other j in the order perm[i * n .. i * n + n) (j == i skipped),
 * if g_i' . g_j < 0 then g_i' -= (g_i' . g_j / |g_j|^2) g_j, projecting
 * against the ORIGINAL g_j.  out (P) receives sum_i g_i'.  Works on the Gram
 * matrix (computed here, in parallel over pairs when built with OpenMP; each
 * dot product in a fixed order), so results do not depend on threads.
 * nthreads <= 0: the OpenMP default.  ARACHNE_E_NO_MEMORY. */
int ar_train_pcgrad(int n, size_t P, double *const *g, const int *perm, double *out, int nthreads);

/* Adds composition ci's PPO gradient (clipped surrogate with advantages
 * slot->adv, entropy bonus per decision divided by the decisions of its step,
 * both averaged over the group) into grad, re-running the forward pass with
 * the current weights on every stored decision.  *ent_sum and *ndec receive
 * the summed entropy (nats) and the decision count.  Reads only. */
int ar_train_ppo_grad(const arachne_trainer *t, int ci, ar_nn_ws *ws, double *grad, double *ent_sum, long *ndec);

/* Self-imitation weight of a plan with throughput R against a group with
 * mean b and std s: min(max(R - b, 0) / (s + 1e-6 |b| + 1e-300), clip). */
double ar_train_sil_weight(double R, double b, double s, double clip);

/* ---- replay buffers (train_sil.c) --------------------------------------- */

/* Decision i of kept plan p through the network: its inputs unpacked, ws
 * reset, the forward pass's log-probabilities into logp (d->K entries).
 * Returns the tape record (>= 0) or a negative status. */
int ar_sil_dec_forward(const ar_nn *nn, ar_nn_ws *ws, const ar_sil_plan *p, int i, double *logp);

void ar_sil_plan_free(ar_sil_plan *p);
/* Deep copy. */
int ar_sil_plan_copy(ar_sil_plan *dst, const ar_sil_plan *src);
/* Builds a kept plan from a recording decision source. */
int ar_sil_plan_from_src(ar_sil_plan *dst, const ar_policy_src *src, double iter_per_s, int depth);
/* Offers a plan to composition c's buffer of its depth and to its best
 * plan; a plan enters when it beats the worst kept (ties keep the older). */
int ar_sil_offer(ar_train_comp *c, const ar_policy_src *src, double iter_per_s, int depth, int per_depth);
/* Adds composition ci's self-imitation gradient into grad (ws: a workspace of
 * the network): the best plans of ci and its neighbours with a positive
 * weight, each decision's -w log pi(a|s) scaled by weight / plans.  Writes the
 * number of plans imitated into *nplans.  Reads only. */
int ar_sil_grad(const arachne_trainer *t, int ci, ar_nn_ws *ws, double *grad, int *nplans);
/* Adds the gradient of -w log pi(a|s) over the decisions of kept plan p
 * into grad (ws: a workspace of nn); *nll (may be NULL) is decreased by
 * each decision's log-probability, so it accumulates the negative log
 * likelihood.  Reads nn only.  Errors: ARACHNE_E_INVALID_ARGUMENT (a
 * decision the network cannot take), ARACHNE_E_NO_MEMORY. */
int ar_sil_plan_grad(const ar_nn *nn, ar_nn_ws *ws, const ar_sil_plan *p, double w, double *grad, double *nll);
/* Builds choices[0..n) with builder b while the policy source src only
 * records (a teacher makes every choice) into plan, and the recording into
 * *out: the inputs the policy saw at each choice.  ARACHNE_E_INVALID_PLAN
 * when the construction ended before using every choice or placed no
 * template; the construction's errors. */
int ar_sil_record_choices(ar_builder *b, ar_policy_src *src, const int *choices, int n, arachne_plan *plan,
                          ar_sil_plan *out);
/* Rebuilds a plan by replaying its choices through the construction. */
int ar_sil_replay(const arachne_cost_model *cm, const ar_sil_plan *p, int max_steps, arachne_plan *out);
/* Expert iteration (REFINE_INTERVAL): improves composition ci's best plan
 * with arachne_plan_refine (REFINE_EVALUATIONS fills, no time cap) and, when
 * the result is faster, builds it again with the policy recording while the
 * refined structure makes every choice, and offers that recording to the
 * buffers.  s: a slot of ci whose builder, source and plan are free to
 * reuse.  Sets c->refine_gain (the refined plan became the best) or
 * c->refine_miss (a choice of it is masked: not imitated).  Skips a best
 * plan it already refined.  Errors: ARACHNE_E_NO_MEMORY. */
int ar_sil_refine_best(arachne_trainer *t, int ci, ar_train_slot *s);

/* Rollout targets (ROLLOUT_INTERVAL): plans composition ci by rollout
 * decoding of the current policy (ROLLOUT_EVALUATIONS fills of lookahead)
 * with the training's construction options, replays its choices through
 * the recording policy source of slot s into c->roll (the imitation target)
 * and offers it to the buffers.  A composition with no plan that fills
 * keeps no target.  Errors: ARACHNE_E_NO_MEMORY and the construction's. */
int ar_sil_rollout_target(arachne_trainer *t, int ci, ar_train_slot *s);

/* ---- checkpoints (train_ckpt.c) ----------------------------------------- */

#define AR_CKPT_MAGIC "ARCKPT\0\1"
#define AR_CKPT_VERSION 1u

/* Appends the checkpoint image of t to b (arachne_trainer_save_checkpoint
 * writes it atomically).  ARACHNE_E_NO_MEMORY. */
int ar_train_ckpt_encode(const arachne_trainer *t, ar_buf *b);

#endif
