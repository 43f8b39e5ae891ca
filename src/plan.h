/* plan.h -- plans (templates -> stages -> ranks), the training setup, the
 * cost model handle, and the fill/pricing entry points the construction loop
 * (policy, random search, exhaustive search) calls.  Internal. */
#ifndef ARACHNE_PLAN_H
#define ARACHNE_PLAN_H

#include <string.h>

#include "cluster.h"
#include "model.h"
#include "profile.h"

#define AR_MAX_DEPTH 128      /* pipeline stages per template (plans, pricing, files, exports) */
#define AR_SEARCH_MAX_DEPTH 32 /* deepest template the planners construct: the MAX_DEPTH option's
                                * upper bound, the policy's depth candidates (STOP + 1..32) and the
                                * trainer's per-depth buffers (checkpoint format) */
#define AR_MAX_TEMPLATES 16   /* templates per plan */
#define AR_MAX_CP 1024        /* context-parallel degree of a template */
#define AR_MAX_VP 16          /* model chunks per pipeline rank (interleaved 1F1B) */

/* Training setup (defaults in docs/cost-model.md). */
typedef struct ar_setup {
    int global_batch;        /* samples per iteration (default 512) */
    int seq_len;             /* tokens per sample (default 4096) */
    double weight_bytes;     /* bytes per parameter: weights (2, bf16) */
    double grad_bytes;       /* bytes per parameter: gradients (4, fp32) */
    double optim_bytes;      /* bytes per parameter: fp32 master + Adam moments (12) */
    int dist_optimizer;      /* 1: optimizer state sharded over DP (ZeRO-1) */
    int recompute;           /* AR_RECOMPUTE_* (default selective) */
    double headroom;         /* fraction of GPU memory kept free (0.08) */
    int expert_tiling;       /* 1: search EP x ETP x EDP for MoE stages */
    int max_depth;           /* largest pipeline depth considered */
    int overlap_grad_reduce; /* 1: DP gradient reduction overlaps the last backward (bucketed) */
    int overlap_param_gather;/* 1: distributed optimizer's all-gather overlaps the first forward */
    int tp_comm_overlap;     /* 1: TP collectives overlap the GEMMs they feed */
    int recompute_norm_act;  /* 1: norms and routed-expert activations recomputed too (memory only) */
    int recompute_alt_mm;    /* 1: every second matmul of dense blocks recomputed (torchtitan per-op SAC) */
    int context_parallel;    /* 1: the fill may split a stage's GPU group into tp x cp */
    int max_vp;              /* most chunks per stage the fill tries (interleaved 1F1B); 1: off */
    int ep_hierarchical;     /* 1: EP dispatch crosses the network once per node (DeepEP) */
    int exact_batch;         /* 1: the division prefers an exact split of the global batch and the
                              * planners charge a surplus (ar_plan_rank, plan_exact.c); plan files
                              * do not record it: repricing follows the cost model's setting */
    int stage_reversal;      /* 1: the fill also tries each template's stages reversed (fill.c);
                              * a planner setting, not recorded in plan files */
    int priced_resplit;      /* 1: the fill splits again on the priced stage times (fill.c);
                              * a planner setting, not recorded in plan files */
    int stage_moves;         /* 1: the fill also tries each stage moved to the front and the end
                              * (fill.c); a planner setting, not recorded in plan files */
    int stage_major;         /* 1: the fill also places each template in Megatron's order (a stage's
                              * replicas together) and keeps the faster (fill.c); a planner setting */
    int fsdp_search;         /* 1: the fill also shards a template over its data-parallel ranks
                              * (FSDP) where memory refused a candidate (fill.c); a planner setting */
    int recompute_search;    /* the default planner also plans with full recomputation, 1: where a
                              * probe says it pays, 2: always; keeps the faster plan
                              * (plan_default.c); a planner setting */
    int exact_division;      /* 1 or 2: the division takes the fastest exact split whenever one
                              * exists (cost_plan.c), and exact plans rank first; 2 also makes
                              * the default planner plan first as with 0 (plan_default.c); not
                              * recorded in plan files, as exact_batch */
} ar_setup;

void ar_setup_defaults(ar_setup *s);
/* The recompute argument of ar_model_act_bytes for this setup (mode plus
 * AR_RECOMPUTE_NORM_ACT_BIT). */
int ar_setup_act_mode(const ar_setup *s);

typedef struct ar_stage {
    int type;              /* GPU type index in the cluster */
    int tp;                /* TP degree */
    int first, end;        /* transformer blocks [first, end) */
    int ep, etp, edp;      /* expert tiling of MoE layers (1,1,W for dense) */
    /* Filled by pricing (seconds / bytes): */
    double compute_s;      /* fwd+bwd of its layers for one micro-batch */
    double tp_comm_s;      /* TP collectives for one micro-batch */
    double ep_comm_s;      /* expert all-to-all for one micro-batch */
    double p2p_s;          /* activation send to the next stage (fwd+bwd) */
    double stage_s;        /* t_s = compute + tp + ep + p2p */
    double fwd_s, bwd_s;   /* forward and backward parts of compute + tp + ep (the
                            * 1F1B evaluation's operation times); one send to the
                            * next stage takes p2p_s / 2 */
    double sync_s;         /* g_s: gradient all-reduce of this stage */
    double mem_bytes;      /* peak bytes per GPU */
} ar_stage;

typedef struct ar_template {
    int depth;
    ar_stage stages[AR_MAX_DEPTH];
    int replicas;          /* pipelines of this structure */
    int micro_batch;       /* sequences per micro-batch */
    int micro_batches;     /* M: micro-batches per replica per iteration (from min-max assignment) */
    int fsdp;              /* FSDP / ZeRO-3 sharding group (data-parallel ranks sharing weights,
                            * gradients and optimizer state); 0 or 1: off (ZeRO-1 at most) */
    int cp;                /* context parallelism: every stage splits each sequence over cp groups of
                            * tp GPUs (ring attention), so a stage occupies tp x cp GPUs per replica,
                            * laid out TP fastest, then CP (Megatron-Core's order); 0 or 1: off */
    int vp;                /* model chunks per pipeline rank (interleaved 1F1B, Megatron's virtual
                            * pipeline stages); 0 or 1: not interleaved.  The stages' [first, end)
                            * still tile the model in stage order and give each stage its layer
                            * count n_s; the chunks' real ranges follow from those counts by
                            * ar_vp_chunk_range (docs/cost-model.md, "Interleaved 1F1B") */
    double pipeline_s;     /* exact 1F1B time of M micro-batches + max g_s */
} ar_template;

/* Copies a template's used part: its scalars and stages [0, depth) (a
 * template holds AR_MAX_DEPTH stage slots, 13 KB; most use a few). */
static inline void ar_template_copy(ar_template *dst, const ar_template *src)
{
    int n = src->depth < 0 ? 0 : (src->depth > AR_MAX_DEPTH ? AR_MAX_DEPTH : src->depth);
    dst->depth = src->depth;
    memcpy(dst->stages, src->stages, (size_t)n * sizeof(ar_stage));
    dst->replicas = src->replicas;
    dst->micro_batch = src->micro_batch;
    dst->micro_batches = src->micro_batches;
    dst->fsdp = src->fsdp;
    dst->cp = src->cp;
    dst->vp = src->vp;
    dst->pipeline_s = src->pipeline_s;
}

/* Layers [*first, *end) of chunk c of stage s of an interleaved template:
 * stage s's n_s = end - first layers split into v chunks, the first
 * n_s mod v of them one layer longer; the model's order is chunk-major
 * (chunk 0 of stages 0..p-1, then chunk 1, ...).  With vp <= 1 it is the
 * stage's own range. */
void ar_vp_chunk_range(const ar_template *t, int s, int c, int *first, int *end);

typedef struct ar_rank {
    int rank;              /* global rank, 0..gpus_used-1 */
    int node, gpu;         /* cluster node index and local GPU index */
    int tmpl, replica, stage, tp_rank;
    int cp_rank;           /* context-parallel rank in [0, cp) (0 without CP) */
} ar_rank;

/* Context-parallel degree of a template (>= 1). */
static inline int ar_tmpl_cp(const ar_template *t) { return t->cp > 1 ? t->cp : 1; }
/* GPUs of one replica of stage s: tp x cp.  The GPU of (tp_rank, cp_rank)
 * in that group is cp_rank * tp + tp_rank. */
static inline int ar_stage_gpus(const ar_template *t, int s) { return t->stages[s].tp * ar_tmpl_cp(t); }

/* The model, cluster and profile text a plan embeds as its "inputs"
 * (ar_plan_finish), with the CRC-32 of the profile text.  The cost model
 * builds them once at create time (its inputs may not change while it
 * lives), so finishing a plan copies text instead of formatting the
 * profile table again.  profile is NULL for a cost model without one. */
typedef struct ar_plan_inputs {
    char *model, *cluster, *profile;
    unsigned long profile_crc;
} ar_plan_inputs;

struct arachne_plan {
    int ntemplates;
    ar_template t[AR_MAX_TEMPLATES];
    int nranks;
    ar_rank *ranks;
    char model[64];
    char *cluster_spec;    /* compact string of the cluster planned for */
    ar_setup setup;
    /* Prices (filled by ar_plan_price): */
    double iteration_s, iter_per_s, samples_per_s, tokens_per_s, mfu, bubble;
    int gpus_used, gpus_total;
    /* Planner record: */
    char method[32];
    double planning_s;
    long evaluations;
    int samples;
    char *json_cache;
    /* Added by plan I/O (plan.c): the GPU type names of the cluster the plan
     * was made for (index = ar_stage.type), so a plan names its GPUs without
     * the cluster handle; filled by ar_plan_init. */
    int ntypes;
    char type_names[AR_MAX_TYPES][AR_NAME_MAX];
    /* iteration_s recorded in the file a plan was loaded from (0 otherwise);
     * lets `arachne price` show file vs. repriced time. */
    double file_iteration_s;
    /* What repricing needs, embedded in the plan file (docs/formats.md,
     * "inputs"): the cost model the plan was built or priced with is bound
     * by ar_plan_init / ar_plan_bind (borrowed; valid only inside the call
     * that builds the plan) and ar_plan_finish copies its model, cluster
     * and profile text here, then drops the binding.  Owned; NULL before. */
    const arachne_cost_model *bound_cm;
    ar_plan_inputs in;
};

int ar_plan_inputs_build(const arachne_cost_model *cm, ar_plan_inputs *in); /* ARACHNE_E_NO_MEMORY */
/* *dst = a copy of *src (dst's old text is not freed); on
 * ARACHNE_E_NO_MEMORY *dst owns nothing. */
int ar_plan_inputs_copy(ar_plan_inputs *dst, const ar_plan_inputs *src);
void ar_plan_inputs_free(ar_plan_inputs *in);
/* The text arachne_cost_model_create built; NULL for a cost model
 * assembled by hand (tests), whose plans build it when they finish. */
const ar_plan_inputs *ar_cost_model_inputs(const arachne_cost_model *cm);

struct arachne_cost_model {
    const arachne_model *model;      /* borrowed */
    const arachne_cluster *cluster;  /* borrowed */
    const arachne_profile *profile;  /* borrowed */
    ar_setup setup;
    void *cache;                     /* private precomputation (owned) */
};

/* Free GPUs per node while a plan is being built. */
#define AR_AVAIL_LEVELS 11    /* 2^0 .. 2^10: AR_MAX_TP_LOG + 1 (fill.h) */
typedef struct ar_avail {
    int nnodes;
    int *free;             /* free[node] = GPUs still unused on that node */
    int type_free[AR_MAX_TYPES];
    int type_max_free[AR_MAX_TYPES]; /* largest free node of each type */
    /* supply[t][m] = sum over nodes of type t of floor(free / 2^m): the
     * packing test's right-hand side, kept by ar_avail_refresh so that
     * the test costs O(types x levels) instead of a pass over the nodes. */
    long supply[AR_MAX_TYPES][AR_AVAIL_LEVELS];
    /* Node indices grouped by type, ascending inside a type: type t owns
     * by_type[type_first[t] .. type_first[t + 1]).  Fixed for a cluster;
     * set by ar_avail_init (NULL in an ar_avail built by hand: the packer
     * then scans every node). */
    int *by_type;
    int type_first[AR_MAX_TYPES + 1];
} ar_avail;

int ar_avail_init(ar_avail *a, const arachne_cluster *c);  /* everything free */
void ar_avail_free(ar_avail *a);
int ar_avail_copy(ar_avail *dst, const ar_avail *src);

/* Fills one template from its structure (depth, per-stage type and TP):
 * layer split, replicas (packing TP groups into free nodes, consuming them
 * from *a), micro-batch size, expert tiling, device assignment; then prices
 * the plan `plan` + this template.  On success `plan` holds the new
 * template and its new prices.  On failure *a and `plan` are unchanged and
 * the status is ARACHNE_E_INFEASIBLE (nothing fits; message says why). */
int ar_fill_template(const arachne_cost_model *cm, ar_avail *a, arachne_plan *plan,
                     int depth, const int *types, const int *tps);

/* Prices a complete plan in place (stage times, min-max batch assignment,
 * iteration time, throughputs, memory).  ARACHNE_E_OUT_OF_MEMORY_PLAN names
 * the stage and the excess bytes. */
int ar_plan_price(const arachne_cost_model *cm, arachne_plan *plan);

/* Empty plan bound to the cost model's setup and cluster. */
int ar_plan_init(arachne_plan *p, const arachne_cost_model *cm);
/* Samples one iteration of a priced plan runs: the sum over templates of
 * replicas x micro-batch x micro-batches (>= the global batch). */
long ar_plan_samples_run(const arachne_plan *p);
/* The planners' order on priced plans as one number: iter/s for a plan
 * that runs its global batch exactly, or for any plan when
 * setup.exact_batch is 0; under exact_batch 1 a plan that runs S samples
 * for a batch of B < S is charged for the surplus, iter/s x B / S (the
 * rate of the asked samples, the surplus counted as wasted work), so an
 * exact plan wins unless the other is faster by more than its surplus.
 * Under setup.exact_division every plan that runs more samples than the
 * batch ranks below every plan that runs it exactly: -1 / (1 + its
 * charged rate), in (-1, 0). */
double ar_plan_rank(const arachne_plan *p);
/* The GPU types p's stages use, bit t for type t (AR_MAX_TYPES <= 16). */
unsigned ar_plan_gpu_types(const arachne_plan *p);
/* 1 when a and b have the same templates, depths, stage GPU types and
 * stage group sizes (tp x cp): what arachne_plan_refine starts from. */
int ar_plan_same_structure(const arachne_plan *a, const arachne_plan *b);

/* The default planner's refinement (plan_default.c) from plans already
 * built: `best` (best-of-K) with `evaluations` fills; `greedy`, when given
 * and of another structure, with half of them; `alt` (ar_policy_build's
 * best rollout on other GPU types), when given and of a structure neither
 * had, with half of them.  The fastest refined plan, named "<best's
 * method>+refine" ("+refine-capped" when a cap cut any), with best's
 * samples, best's evaluations and planning time plus those of the
 * refinements (`greedy` and `alt` are best-of-K's rollouts, whose fills
 * and time best's build already counts).  time_cap_s (0: none) caps the
 * refinements together: half to the first, then half of what is left to
 * greedy when alt follows.  evaluations 0: a copy of best.  Arguments as
 * arachne_plan_build_refined checks them; *out owned by the caller. */
int ar_plan_refine_starts(arachne_plan **out, const arachne_plan *best, const arachne_plan *greedy,
                          const arachne_plan *alt, const arachne_cost_model *cm, long evaluations, double time_cap_s);
/* ARACHNE_OPT_RECOMPUTE_SEARCH after the default planner's first run in
 * cm's mode (src/plan_default.c): first is that run's plan (taken over)
 * or NULL, first_status its status (any error but ARACHNE_E_INFEASIBLE
 * is returned at once, its message still the last error), first_s its wall
 * time.  With the search on and cm's mode not full: the probe, and the
 * planner again with full recomputation where the probe ranks higher or
 * nothing fitted; the highest-ranked plan in *out, counting every run's
 * evaluations and time.  With it off, first (or first_status) as it came.
 * The remaining arguments as for arachne_plan_build_refined. */
int ar_plan_recompute_search_after(arachne_plan **out, arachne_plan *first, int first_status, double first_s,
                                   const arachne_policy *policy, const arachne_cost_model *cm, int samples,
                                   uint64_t seed, long evaluations, double time_cap_s);
/* When p (priced with cm) runs S > B samples and cm's setup has
 * exact_batch, tries to run B exactly at p's speed by splitting templates
 * in two groups of replicas, one running a division step fewer
 * (src/plan_exact.c).  Returns 1 with the split plan priced in q (a plan
 * owning nothing, or one to be overwritten) when it ranks higher than p;
 * 0 otherwise (q then holds anything; the error state is cleared). */
int ar_plan_split_exact(const arachne_cost_model *cm, const arachne_plan *p, arachne_plan *q);
/* What a planner keeping the best plan compares against its best, whose
 * rank is `bar` (-HUGE_VAL: none yet): p, or p's exact split in *scratch
 * when p runs a surplus, could beat bar were it exact, and the split ranks
 * higher (ar_plan_split_exact).  scratch NULL: always p. */
const arachne_plan *ar_plan_keep_form(const arachne_cost_model *cm, const arachne_plan *p, double bar,
                                      arachne_plan *scratch);
/* The keeper of the searches and the refinement: copies p, or its exact
 * split (ar_plan_keep_form, built in *scratch), into *best when it ranks
 * above *best or *have is 0; then *have = 1 and *kept = 1, else *kept = 0.
 * ARACHNE_E_NO_MEMORY when the copy fails. */
int ar_plan_keep_better(const arachne_cost_model *cm, const arachne_plan *p, arachne_plan *best, int *have,
                        arachne_plan *scratch, int *kept);
void ar_plan_clear(arachne_plan *p);   /* frees owned memory, keeps the struct */
/* Marks p as owning nothing (its owned pointers NULL, no templates or
 * ranks) without touching the rest: a slot that ar_plan_clear and
 * ar_plan_init accept, or the source of a plan moved out by struct copy.
 * Not a usable plan until ar_plan_init.  Costs a few stores where a
 * memset of the plan writes 214 KB. */
void ar_plan_empty(arachne_plan *p);
int ar_plan_copy(arachne_plan *dst, const arachne_plan *src);

/* ---- Plan I/O (plan.c, plan_json.c, plan_validate.c, plan_export.c) ---- */

/* Call when a plan is complete (priced): sorts ranks by global rank and
 * builds json_cache, so the public getters are pure reads.  Any later change
 * to the plan must be followed by ar_plan_finish again. */
int ar_plan_finish(arachne_plan *p);
/* qsort order of ar_rank by global rank number (the order ar_plan_finish
 * leaves the ranks in). */
int ar_rank_cmp(const void *a, const void *b);
/* Binds p to cm so the next ar_plan_finish records cm's model, cluster and
 * profile as the plan's inputs (after repricing p with another cost model). */
void ar_plan_bind(arachne_plan *p, const arachne_cost_model *cm);
/* Appends the plan's JSON (docs/formats.md, "Plan") to b. */
int ar_plan_write_json(const arachne_plan *p, ar_buf *b);
/* Parses plan JSON text into p (initialised by ar_plan_init(p, cm) first):
 * strict keys and types, GPU names resolved against cm's cluster.  Does not
 * validate structure or price.  ARACHNE_E_PARSE / ARACHNE_E_INVALID_PLAN with
 * "<source>:<line>:<col>: ..." messages. */
int ar_plan_parse_json(arachne_plan *p, const arachne_cost_model *cm, const char *text, size_t len,
                       const char *source);
/* Structural validation of a plan against cm's cluster and model (GPUs exist
 * and are used once, TP groups within a node, ranks complete, layer cover,
 * expert tiling, batch cover).  ARACHNE_E_INVALID_PLAN naming template,
 * stage or rank.  Pure read. */
int ar_plan_validate(const arachne_cost_model *cm, const arachne_plan *p);
/* A plan names its stages' GPU types by index into the type table of the
 * cluster it was made for (p->type_names); ARACHNE_E_INVALID_PLAN when cm's
 * cluster holds another type at an index a stage uses (a cluster of the
 * same nodes listed in another order priced H100 stages as A100s). */
int ar_plan_check_type_names(const arachne_cost_model *cm, const arachne_plan *p);
/* GPU type name of a type index of the plan ("?" when out of range). */
const char *ar_plan_type_name(const arachne_plan *p, int type);

#endif
