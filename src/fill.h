/* fill.h -- internals of the template fill (src/fill*.c) and of the
 * availability helpers beyond plan.h.  The public-facing internal entry
 * point is ar_fill_template() in plan.h; the construction loop uses the
 * workspace variants below so that repeated fills allocate nothing. */
#ifndef ARACHNE_FILL_H
#define ARACHNE_FILL_H

#include "plan.h"
#include "cost.h"

/* Largest TP exponent: tp = 2^k with k <= AR_MAX_TP_LOG (1024-GPU nodes). */
#define AR_MAX_TP_LOG 10
/* Largest micro-batch exponent tried: 2^AR_MAX_MBS_LOG sequences. */
#define AR_MAX_MBS_LOG 10
/* Expert-tiling candidates kept per MoE stage. */
#define AR_MAX_TILES 48
/* Alternative layer splits priced when the balanced split does not fit. */
#define AR_FILL_MAX_SHIFT 4
/* Searches of the balanced split within the stages' block capacities (each
 * retry lowers the cap of the stage that overflowed). */
#define AR_FILL_MAX_CAPPED 4
/* Rounds of the split searched again on the priced stage times (fill.c,
 * resplit_on_prices): each can change the expert tiling and so the times. */
#define AR_FILL_RESPLIT_ROUNDS 2
/* Deepest template whose stages the fill tries moving (ARACHNE_OPT_STAGE_MOVES). */
#define AR_FILL_MOVE_MAX_DEPTH 16
/* The re-split runs only when the stages' priced / profiled factors differ
 * by more than this fraction (a common factor leaves the split as it is). */
#define AR_FILL_RESPLIT_SPREAD 0.05

/* --- availability (avail.c) -------------------------------------------- */
/* ar_avail_copy (plan.h) needs dst all-zero or initialised; it reuses dst's
 * buffer when the node counts match (no allocation). */
/* Recomputes type_free / type_max_free from free[] and the node types. */
void ar_avail_refresh(ar_avail *a, const arachne_cluster *c);
/* Free GPUs of every type together. */
int ar_avail_total(const ar_avail *a);

/* --- packing (fill_pack.c) --------------------------------------------- */
/* Largest replica count r such that r copies of every stage's TP group
 * (tps[s] GPUs of type types[s], never crossing a node) fit into the free
 * GPUs of *a.  Item sizes are powers of two, so a level test is exact:
 * for every type and every 2^m, r * sum_{tp_s >= 2^m} tp_s / 2^m must not
 * exceed sum_nodes floor(free / 2^m).  0 when not even one replica fits. */
int ar_pack_max_replicas(const arachne_cluster *c, const ar_avail *a, int depth,
                         const int *types, const int *tps);
/* Places r replicas (r <= ar_pack_max_replicas): for replica q and stage s,
 * node_of[q*depth+s] and gpu_of[q*depth+s] (first local GPU index of the
 * contiguous TP group).  Groups are placed largest first, best fit: a node
 * whose free count equals the group size, else the smallest larger one;
 * ties go to the lowest node index.  Within one group size and type the
 * groups go replica by replica, stage by stage (stage_major 0: a replica's
 * consecutive stages share a node where they can), or stage by stage,
 * replica by replica (stage_major 1, Megatron's order: a stage's
 * data-parallel and expert-parallel peers share a node where they can).
 * scratch holds 3 * a->nnodes ints.  Does not modify *a.
 * ARACHNE_E_INFEASIBLE if r does not fit (in either order: the count of
 * groups each node takes does not depend on it). */
int ar_pack_place(const arachne_cluster *c, const ar_avail *a, int depth, const int *types,
                  const int *tps, int r, int stage_major, int *node_of, int *gpu_of, int *scratch);

/* --- layer splits (fill_split.c) --------------------------------------- */
/* Seconds of block b (0-based) / embedding / head on a stage, for one
 * micro-batch (fwd + bwd + TP comm, from the profile).  Negative when the
 * profile has no entry (configuration outside the search space). */
typedef struct ar_stage_speed {
    double block_s[AR_LAYER_KINDS]; /* per layer kind; < 0 when absent */
} ar_stage_speed;
int ar_stage_speed_get(const arachne_cost_model *cm, int type, int tp, int mbs, ar_stage_speed *sp);
/* Seconds the split charges blocks [b0, b1) on a stage (kinds per block;
 * no embedding or head). */
double ar_split_range_s(const arachne_model *m, const ar_stage_speed *sp, int b0, int b1);
/* Balanced contiguous split: minimises the largest stage time given each
 * stage's per-block time (embedding on stage 0, head on the last stage);
 * every stage gets at least one block.  firsts[depth+1] gets block starts
 * (firsts[depth] = blocks). */
void ar_split_balanced(const arachne_model *m, int depth, const ar_stage_speed *sp, int *firsts);
/* The same with at most caps[s] blocks on stage s (the blocks its memory
 * holds): the split that minimises the largest stage time among those
 * within the caps.  Returns 0 (firsts undefined) when the caps hold fewer
 * blocks than the model has, or a cap is below 1. */
int ar_split_balanced_capped(const arachne_model *m, int depth, const ar_stage_speed *sp, const int *caps,
                             int *firsts);
/* Even split (remainder to the middle stages). */
void ar_split_even(int blocks, int depth, int *firsts);
/* Split proportional to weights w[s] > 0 (largest remainder, >= 1 each). */
void ar_split_weighted(int blocks, int depth, const double *w, int *firsts);
/* Moves k blocks off stage s to its neighbour (dir -1: to s-1, +1: to s+1)
 * keeping every stage >= 1 block.  Returns 0 when impossible. */
int ar_split_shift(int depth, const int *src, int s, int dir, int k, int *dst);

/* --- expert tiling (fill_experts.c) ------------------------------------ */
typedef struct ar_tile { int ep, etp, edp; } ar_tile;
/* Every EP x ETP x EDP = w with ETP | tp, EP | experts (EP, ETP >= 1);
 * ordered from most sharded (largest EP*ETP, then larger ETP) to least.
 * Returns the count (<= cap). */
int ar_tiles_enumerate(int w, int tp, int experts, ar_tile *out, int cap);

/* --- the fill ---------------------------------------------------------- */
enum { AR_FILL_BEST = 0,   /* price every candidate, keep the fastest */
       AR_FILL_CHECK = 1   /* stop at the first candidate that fits; change nothing */ };

typedef struct ar_fill_ws {
    const arachne_cost_model *cm;
    arachne_plan trial;      /* scratch: templates of the plan + the candidate */
    ar_stage_place place[AR_MAX_TEMPLATES][AR_MAX_DEPTH]; /* placement summary of trial's templates */
    int trial_synced;        /* templates [0, trial.ntemplates) mirror the plan */
    int rank_cap;            /* capacity of trial.ranks */
    int *node_of, *gpu_of;   /* placement of the candidate, [replicas * depth] */
    int place_cap;
    int *free_scratch;       /* [nnodes] */
    int nnodes;
    ar_price_prefix prefix;  /* the plan's templates, kept between candidate pricings */
    long pricings;           /* ar_plan_price calls made through this workspace */
    char why[256];           /* reason of the last infeasible fill */
    int reverse_stages;      /* BEST also tries each template's stages reversed (from the cost
                              * model's ARACHNE_OPT_STAGE_REVERSAL; the exhaustive search clears it) */
    void *rev_ctx;           /* the reversed search's context (fill.c), allocated at first use */
    int move_stages;         /* BEST also tries each stage moved to the front and the end (STAGE_MOVES) */
    int resplit;             /* BEST also splits again on the priced stage times (PRICED_RESPLIT) */
    int stage_major;         /* BEST also places the winning order in Megatron's order (STAGE_MAJOR) */
    int fsdp_search;         /* BEST also prices the winning order's candidates that memory refused
                              * with FSDP groups, and a template memory refused whole (FSDP_SEARCH;
                              * set by the refinement only) */
    void *fsdp_ctx;          /* the FSDP search's context (fill.c), allocated at first use */
    const void *fsdp_src;    /* during the FSDP search: the context whose refusals it retries */
    long fsdp_wins;          /* fills whose FSDP search beat their best without FSDP */
    void *stage_tab;         /* per (stage, block range, tiling): what pricing computed of the
                              * candidate's stage in the current context (fill.c), allocated at
                              * first use */
    int plain_tile_search;   /* 1: every candidate priced whole, without stage_tab, and the
                              * expert-tiling search skips no stage (tests and bench_fill compare) */
} ar_fill_ws;

int ar_fill_ws_init(ar_fill_ws *ws, const arachne_cost_model *cm);
void ar_fill_ws_free(ar_fill_ws *ws);
/* Marks the trial copy stale (call after the plan changed outside the fill). */
void ar_fill_ws_reset(ar_fill_ws *ws);

/* The fill with a workspace.  mode AR_FILL_BEST: as ar_fill_template.
 * mode AR_FILL_CHECK: returns ARACHNE_OK when some candidate fits (and the
 * caller may then run AR_FILL_BEST, which is guaranteed to succeed),
 * ARACHNE_E_INFEASIBLE otherwise; *a and plan are never changed and no
 * error message is set (ws->why says why). */
int ar_fill_template_ws(ar_fill_ws *ws, ar_avail *a, arachne_plan *plan, int depth,
                        const int *types, const int *tps, int mode);

/* Sum over the plan's templates of replicas * micro_batch (samples the
 * plan needs at one micro-batch per replica). */
int ar_plan_batch_floor(const arachne_plan *plan);

#endif
