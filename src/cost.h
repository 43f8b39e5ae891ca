/* cost.h -- the pricing formulas of the cost model (docs/cost-model.md).
 *
 * Three layers, cheapest first:
 *  1. pure formulas (schedule.c): 1F1B pipeline time, exact min-max
 *     micro-batch assignment, ring all-reduce;
 *  2. per-stage pricing against a cost model (cost.c, cost_memory.c): one
 *     stage's per-micro-batch time and its peak memory per GPU, read from the
 *     lookup tables the cost model precomputes at create time;
 *  3. whole-plan pricing (ar_plan_price in plan.h, and ar_plan_price_placed
 *     below for callers that already know the placement).
 *
 * Nothing here allocates except ar_template_place(); everything reads the
 * cost model only, so any number of threads may price with one cost model.
 * Internal. */
#ifndef ARACHNE_COST_H
#define ARACHNE_COST_H

#include "plan.h"

/* Fixed per-GPU framework overhead in bytes (CUDA context, NCCL buffers,
 * allocator fragmentation).  Sailor's planner assumes 2-3 GB; we take the
 * middle.  See docs/cost-model.md. */
#define AR_FRAMEWORK_OVERHEAD_BYTES 2.5e9

/* ---- lookup cache (built by create and by setters; read-only after) ------- */

#define AR_TP_LEVELS 11   /* cached TP degrees 1, 2, 4, ..., 1024 */
#define AR_MBS_LEVELS 13  /* cached micro-batch sizes 1, 2, 4, ..., 4096 */

/* One profile entry in the form pricing uses, under the current setup. */
typedef struct ar_cost_entry {
    double time_s;     /* fwd + bwd (+ fwd again under full recomputation), one layer, one micro-batch */
    double fwd_s;      /* forward alone */
    double tp_comm_s;  /* TP collectives (x 1.5 under full recomputation: the forward's share again) */
    double tp_fwd_s;   /* the forward's TP collectives: half of the profile's */
    double act_bytes;  /* stored activations, scaled from selective to the recompute mode */
    double act_sel;    /* the profile's activations (selective recomputation) */
    int present;
} ar_cost_entry;

typedef struct ar_cost_cache {
    ar_cost_entry tab[AR_MAX_TYPES][AR_LAYER_KINDS][AR_TP_LEVELS][AR_MBS_LEVELS];
    int blocks;
    int *moe_before;                     /* moe_before[b]: blocks with routed experts among [0, b) */
    int *kind_before[AR_LAYER_KINDS];    /* kind_before[k][b]: blocks of kind k among [0, b) (block
                                          * kinds the model has; NULL for the others) */
    int nkinds, kinds[AR_LAYER_KINDS];   /* the block kinds the model has, in increasing order */
    unsigned char needed[AR_LAYER_KINDS];/* 1: stages may need the kind's entry (embed, head, kinds[]) */
    double dense_params[AR_LAYER_KINDS]; /* non-routed-expert parameters of one layer */
    double expert_params[AR_LAYER_KINDS];/* routed-expert parameters of one layer */
    double expert_frac[AR_LAYER_KINDS];  /* phi: routed-expert share of a routed kind's forward FLOPs */
    double flops_per_sample;             /* model FLOPs (fwd + bwd) of one sample */
    double attn_frac[AR_LAYER_KINDS];    /* attention-core (QK^T, AV) share of a layer's forward FLOPs at
                                          * the setup's sequence length: the compute that hides the
                                          * ring-attention transfers of context parallelism */
    ar_plan_inputs inputs;               /* set by arachne_cost_model_create (have_inputs) */
    int have_inputs;
} ar_cost_cache;

/* Blocks of kind k (one of c->kinds) among a stage's [first, end).
 * Pricing loops go over c->kinds in order, so a transformer model adds
 * its dense then its MoE blocks as it always did. */
static inline int ar_stage_kind_n(const ar_cost_cache *c, const ar_stage *S, int k)
{
    return c->kind_before[k][S->end] - c->kind_before[k][S->first];
}

/* Entry for (cluster type index, kind, tp, mbs).  Powers of two come from
 * the cache; other sizes are looked up and converted into *tmp.
 * ARACHNE_E_INFEASIBLE naming the key when the profile lacks it. */
int ar_cost_entry_get(const arachne_cost_model *cm, int type, int kind, int tp, int mbs,
                      ar_cost_entry *tmp, const ar_cost_entry **out);
/* "embed", "dense", "moe", "head". */
const char *ar_cost_kind_name(int kind);
/* Range checks of stage s of t (type, tp, layers, micro-batch, expert
 * tiling on MoE stages).  ARACHNE_E_INVALID_PLAN with a message. */
int ar_stage_check(const arachne_cost_model *cm, const ar_template *t, int s);

/* ---- 1. pure formulas (schedule.c) -------------------------------------- */

/* The 1F1B closed form over M >= 1 micro-batches with per-micro-batch stage
 * times t_s[0..depth) (fwd + bwd + both sends, seconds):
 * (M-1) max t + sum t + max_g.  M <= 0 gives 0 (an idle pipeline).  An
 * upper bound on ar_pipeline_exact (tests/test_schedule_sim.c); the batch
 * division (ar_assign_microbatches) and the fill's bounds use it, reported
 * prices do not. */
double ar_pipeline_time(int M, const double *t_s, int depth, double max_g);

/* Micro-batches per pipeline up to which both schedules are evaluated step
 * by step; past it their times are extrapolated along the steady state
 * from two evaluations within it (ar_pipeline_exact,
 * ar_pipeline_interleaved).  Twice the largest global batch the bundled
 * training draws (8,192): a pipeline's count can pass the batch (rounded
 * up to whole groups of p under interleaving: training priced 8,196 at
 * p = 6), so a limit at the batch itself moved training's prices. */
#define AR_PIPE_STEP_MAX 16384

/* T(M) on the line through the stepped times (M0, t0) and (M1, t1), M0 < M1:
 * the steady state adds the same time per micro-batch.  Both schedules'
 * extrapolation past AR_PIPE_STEP_MAX. */
static inline double ar_pipe_extend(int M0, double t0, int M1, double t1, int M)
{
    return t1 + (t1 - t0) * ((double)(M - M1) / (double)(M1 - M0));
}

/* Exact time of one non-interleaved 1F1B pipeline (PipeDream-Flush /
 * Megatron) of depth stages over M micro-batches, in seconds from the first
 * forward's start to the last backward's end.  Stage s runs
 * min(depth-s-1, M) warm-up forwards, then one forward and one backward
 * alternately, then the remaining backwards; fwd[s] and bwd[s] are its
 * per-micro-batch forward and backward times.  send[s] (s < depth-1) is one
 * transfer over the link between stages s and s+1: the activation forward
 * after F(s,j), the gradient back after B(s+1,j).  Sends are asynchronous:
 * they occupy the link (one per direction, in micro-batch order), not the
 * stages; a stage starts an operation when it is free and its input has
 * arrived.  A max-plus recurrence over micro-batches x stages, O(M depth)
 * time (less where it finds the steady state repeating: the shortcut in
 * schedule.c), O(depth) stack, no allocation, thread-safe.  Past
 * AR_PIPE_STEP_MAX micro-batches, extrapolated from the times at
 * AR_PIPE_STEP_MAX and half of it.  M <= 0 gives 0;
 * depth in [1, AR_MAX_DEPTH] (0 otherwise). */
double ar_pipeline_exact(int M, int depth, const double *fwd, const double *bwd, const double *send);

/* Exact time of Megatron's interleaved 1F1B schedule: p >= 2 stages, each
 * holding v >= 2 model chunks (virtual stage k = c p + s is chunk c of
 * stage s; the model runs through the virtual stages in order), M
 * micro-batches, M a multiple of p (Megatron's rule).  Stage s runs
 * ar_vp_warmup(p, v, M, s) warm-up forwards, then one forward and one
 * backward alternately, then the remaining backwards; its forwards take
 * micro-batches in groups of p, chunk 0..v-1 within a group, its
 * backwards chunk v-1..0.  fwd[k], bwd[k] (k < p v) are the operation
 * times of virtual stage k; send[s] (s < p) is one transfer over the link
 * between stages s and s+1 mod p (send[p-1]: the wrap from the last stage
 * back to the first, between chunks).  Sends are asynchronous as in
 * ar_pipeline_exact, one link per direction and stage pair.  Seconds from
 * the first forward's start to the last backward's end; 0 for M <= 0; -1
 * for arguments outside these rules (or no memory: it allocates
 * (2 p v + 1) M doubles, M at most AR_PIPE_STEP_MAX: past it the time is
 * extrapolated from two evaluations within it).  Thread-safe. */
double ar_pipeline_interleaved(int M, int p, int v, const double *fwd, const double *bwd, const double *send);
/* Warm-up forwards of stage s in the interleaved schedule (Megatron-Core):
 * min(2 (p - s - 1) + (v - 1) p, M v). */
int ar_vp_warmup(int p, int v, int M, int s);

/* A direct-mapped memo of ar_pipeline_exact results, keyed by the whole
 * input (M, depth, fwd, bwd, send; compared exactly, so a hit returns the
 * very value the evaluation would).  The fill prices many candidates whose
 * pipelines repeat (the kept templates at the same micro-batch counts, the
 * candidate under tilings that leave its stage times alone).  Not
 * thread-safe: one per workspace. */
#define AR_PIPE_MEMO 64
typedef struct ar_pipe_memo {
    uint64_t hash[AR_PIPE_MEMO];
    int M[AR_PIPE_MEMO], depth[AR_PIPE_MEMO];
    unsigned char used[AR_PIPE_MEMO];
    double value[AR_PIPE_MEMO];
    double *keys;   /* [AR_PIPE_MEMO][3][AR_MAX_DEPTH]: fwd, bwd, send */
} ar_pipe_memo;

int ar_pipe_memo_init(ar_pipe_memo *pm);      /* ARACHNE_E_NO_MEMORY */
void ar_pipe_memo_free(ar_pipe_memo *pm);
/* ar_pipeline_exact through the memo (pm NULL or uninitialised: direct). */
double ar_pipe_memo_time(ar_pipe_memo *pm, int M, int depth, const double *fwd, const double *bwd,
                         const double *send);

/* Exact min-max division of global_batch samples into whole micro-batches.
 * Template j has replicas[j] pipelines of micro-batch size mbs[j]; running m
 * micro-batches takes T_j(m) = (m-1) tmax[j] + tsum[j] (0 for m = 0).
 * Chooses m_out[j] >= 0 with sum replicas*mbs*m >= global_batch that
 * minimises max_j T_j(m_j); among those, the smallest overshoot
 * sum replicas*mbs*m - global_batch, where a template that gets work at the
 * min-max optimum is never cut to zero (m_j = 0 only when even one
 * micro-batch would make that template the slowest).  finish_out (may be
 * NULL) receives the optimal max_j T_j(m_j).  n in [1, AR_MAX_TEMPLATES].
 * Returns ARACHNE_OK, or ARACHNE_E_INVALID_ARGUMENT for bad inputs.
 * Allocation free. */
int ar_assign_microbatches(int global_batch, int n, const int *replicas, const int *mbs,
                           const double *tmax, const double *tsum, int *m_out, double *finish_out);

/* The least max_j T_j(m_j) over the divisions that run the global batch
 * exactly: whole m_j >= 0 with sum replicas*mbs*m = global_batch (a
 * template may get none).  Same arguments as ar_assign_microbatches, whose
 * checks the caller has passed, and `cap`: only divisions whose max_j
 * T_j(m_j) <= cap count (HUGE_VAL: all).  Returns 1 and fills m_out /
 * finish_out when such a division exists, 0 when none does or the batch is
 * above AR_EXACT_MAX_BATCH (then m_out is untouched).  With a cap at or
 * above the least value the result is the uncapped one, bit for bit: the
 * cap only spares the searches a caller that would reject a slower
 * division (cost_plan.c).  Allocation free (about 40 KB of stack). */
#define AR_EXACT_MAX_BATCH 16384
int ar_assign_microbatches_exact(int global_batch, int n, const int *replicas, const int *mbs,
                                 const double *tmax, const double *tsum, double cap, int *m_out,
                                 double *finish_out);

/* Ring all-reduce of `bytes` over `ranks` ranks: every rank sends
 * 2 (k-1)/k * bytes over a link of `bw` bytes/s, in 2 (k-1) steps of
 * latency `lat` seconds.  0 for ranks <= 1 or bytes <= 0. */
double ar_ring_allreduce_s(double bytes, int ranks, double bw, double lat);

/* Gradient synchronisation of one parameter shard over `ranks` data-parallel
 * ranks.  Without a distributed optimizer: ring all-reduce of
 * params*grad_bytes.  With it (ZeRO-1 / Megatron distributed optimizer):
 * reduce-scatter of the gradients plus all-gather of the updated weights,
 * (k-1)/k * params * (grad_bytes + weight_bytes) / bw + 2 (k-1) lat. */
double ar_sync_s(double params, int ranks, double grad_bytes, double weight_bytes,
                 int dist_optimizer, double bw, double lat);
/* ar_sync_s in its two parts: *grad_s the gradient reduction (all-reduce,
 * or reduce-scatter with the distributed optimizer), *gather_s the
 * parameter all-gather (0 without it); their sum is ar_sync_s. */
void ar_sync_split(double params, int ranks, double grad_bytes, double weight_bytes, int dist_optimizer,
                   double bw, double lat, double *grad_s, double *gather_s);

/* ---- 2. per-stage pricing (cost.c, cost_memory.c) ------------------------ */

/* Where a stage's GPUs sit, as far as pricing cares. */
typedef struct ar_stage_place {
    int node;        /* node holding every GPU of this stage (all replicas), -1 if several */
    int p2p_inter;   /* 1: in some replica the send to the next stage crosses nodes */
    int ep_inter;    /* 1: some expert-parallel group of the stage spans nodes */
    int cp_inter;    /* 1: some context-parallel ring of the stage spans nodes */
    int dp_local;    /* fewest data-parallel peers (replicas of one TP rank) the stage has on
                      * any node it uses, >= 1: a ring that crosses nodes runs that many
                      * channels side by side, one per GPU's network port */
    int fsdp_inter;  /* 1: some FSDP sharding group of the stage (fsdp consecutive replicas at
                      * one TP x CP position) spans nodes; 0 as well without FSDP */
    int dp_most;     /* most data-parallel peers the stage has on one node, >= 1: with 2 or
                      * more a gradient ring over nodes also passes intra-node hops */
    int cp_hop;      /* 1: some context-parallel ring of the stage has two ranks on one node
                      * (a ring over nodes then passes an intra-node hop too) */
} ar_stage_place;

/* Per-micro-batch time of stage s of template t: fills st->compute_s,
 * tp_comm_s, ep_comm_s, p2p_s, stage_s, fwd_s and bwd_s (other fields untouched; st may
 * be &t->stages[s]).  pl describes the placement (NULL: everything that can
 * cross nodes does -- the pessimistic assumption).  Errors:
 * ARACHNE_E_INFEASIBLE naming the missing profile key;
 * ARACHNE_E_INVALID_PLAN for an out-of-range stage description. */
int ar_stage_price(const arachne_cost_model *cm, const ar_template *t, int s,
                   const ar_stage_place *pl, ar_stage *st);
/* ar_stage_price for a stage that ar_stage_check has passed (0 <= s < depth):
 * the plan pricer checks every stage once, before pricing any. */
int ar_stage_price_checked(const arachne_cost_model *cm, const ar_template *t, int s,
                           const ar_stage_place *pl, ar_stage *st);

/* Memory of one GPU of a stage, bytes. */
typedef struct ar_stage_mem {
    double weights, grads, optim, acts, overhead;
    double total;      /* sum of the above */
    double capacity;   /* GPU memory x (1 - headroom) */
    int in_flight;     /* micro-batches whose activations are held: min(p - s, max(M, 1));
                        * interleaved: min(w_s + 1, M v) chunks, rounded up to micro-batches */
} ar_stage_mem;

/* Peak memory per GPU of stage s of template t when the dense parameters of
 * its layers are replicated over dp_ranks data-parallel ranks, its expert
 * shards over edp_ranks ranks (both only matter with the distributed
 * optimizer), and the pipeline runs M micro-batches.  Errors as
 * ar_stage_price. */
int ar_stage_memory(const arachne_cost_model *cm, const ar_template *t, int s,
                    int dp_ranks, int edp_ranks, int M, ar_stage_mem *out);
/* ar_stage_memory for a stage that ar_stage_check has passed (0 <= s < depth). */
int ar_stage_memory_checked(const arachne_cost_model *cm, const ar_template *t, int s,
                            int dp_ranks, int edp_ranks, int M, ar_stage_mem *out);

/* Parameters held by one GPU of stage s (dense part divided by tp, expert
 * part by ep x etp), before optimizer sharding. */
void ar_stage_params(const arachne_cost_model *cm, const ar_template *t, int s,
                     double *dense_per_gpu, double *expert_per_gpu);

/* The usable memory of a GPU of cluster type `type`: mem x (1 - headroom). */
double ar_type_capacity(const arachne_cost_model *cm, int type);

/* Writes "template J stage S (TYPE, tp T, layers F-E): needs X GB, has Y GB
 * (over by Z GB)" as the last error; returns ARACHNE_E_OUT_OF_MEMORY_PLAN. */
int ar_oom_error(const arachne_cost_model *cm, int tmpl, const ar_template *t, int s,
                 const ar_stage_mem *m);

/* ---- 3. whole plans (cost.c) --------------------------------------------- */

/* Placement summary of every stage of template `tmpl` from plan->ranks.
 * Allocates scratch (r x GPUs per replica ints).  ARACHNE_E_INVALID_PLAN when
 * a rank is out of range or a (replica, stage, tp rank) has no GPU. */
int ar_template_place(const arachne_plan *p, int tmpl, ar_stage_place *out);

/* 1 when templates a and b run the same stages: depth, FSDP, CP, and per
 * stage the GPU type, TP, layers and expert tiling (a split's halves;
 * their replicas reduce gradients in one ring). */
int ar_template_same_stages(const ar_template *a, const ar_template *b);

/* ar_template_place for every template, then twin templates (the same
 * stages: type, TP, layers, expert tiling; the two halves of an exact
 * split) counted as one data-parallel group: their stages' dp_local is the
 * fewest peers per node over the union of their GPUs, as one gradient ring
 * runs over all of them.  Allocates scratch; errors as ar_template_place. */
int ar_plan_place(const arachne_plan *p, ar_stage_place (*place)[AR_MAX_DEPTH]);

/* Fewest data-parallel peers per node of a stage whose w GPUs sit on nodes
 * nd[0..w) (ar_stage_place.dp_local); *most (unless NULL) gets the most
 * (ar_stage_place.dp_most).  count[] is zero-filled scratch indexed by node
 * and is zero again on return. */
int ar_stage_dp_local(const int *nd, int w, int tp, int *count, int *most);

/* 1 when some FSDP group of f consecutive replicas (f > 1) spans nodes
 * (ar_stage_place.fsdp_inter): replica q's `width` positions sit on nodes
 * nd[q * stride + k], k < width; a group is on one node when every
 * replica's positions match its first replica's. */
int ar_fsdp_spans_nodes(const int *nd, int replicas, int stride, int width, int f);

/* ar_plan_price with the placement given (place[j][s]; NULL: pessimistic),
 * for callers that know it without ranks (fill).  Allocation free. */
int ar_plan_price_placed(const arachne_cost_model *cm, arachne_plan *plan,
                         const ar_stage_place (*place)[AR_MAX_DEPTH]);

/* Which GPU types hold a block, on which node, and how many copies of each
 * expert shard exist (summed over the templates priced so far). */
typedef struct ar_holder {
    uint32_t mask;  /* bit per cluster type */
    int node;       /* -2 none yet, -1 several nodes, else the one node */
    int edp;        /* sum over templates of the holding stage's EDP (MoE blocks) */
    int klocal;     /* fewest data-parallel peers per node among the holding stages */
    double hop;     /* slowest intra-node hop (B/s, efficiency applied) among the holding
                     * stages with two or more peers on a node; HUGE_VAL if none */
} ar_holder;

/* What the pricer may keep of one stage of the candidate (the last
 * template) across calls that change nothing that stage's figures depend
 * on except its own expert tiling, as in the fill's expert-tiling search,
 * which keeps one memo per (stage, tiling) for the span of one search:
 * the split, micro-batch, replicas, CP, placement and the other templates
 * stay fixed there.  The caller checked the stage (ar_stage_check), priced
 * it into `times` (ar_stage_price_checked, with this template, stage and
 * placement) and cleared `have`; the pricer then skips those steps for the
 * stage and adds the rest of what it computes of the stage alone: the
 * gradient-ring terms (which depend on the stage's own tiling) and its
 * memory at a micro-batch count.  Same arithmetic on the same inputs, so
 * prices are bit-identical to pricing without memos. */
typedef struct ar_stage_memo {
    ar_stage times;              /* per-micro-batch figures (the caller's) */
    unsigned have;               /* AR_MEMO_SYNC | AR_MEMO_MEM: the fields below are set */
    int ke;                      /* largest expert data-parallel group of the stage */
    double grad, gather, upd;    /* gradient reduction, parameter all-gather, optimizer step (s) */
    int mem_m;                   /* micro-batch count `mem` was computed for */
    ar_stage_mem mem;
} ar_stage_memo;
#define AR_MEMO_SYNC 1u
#define AR_MEMO_MEM 2u

/* What pricing can keep of a plan's first n templates while the fill prices
 * many candidates for template n on top of them: their checked structure,
 * per-micro-batch stage times, the running GPU and peak-FLOP/s sums, and the
 * block holders.  None of these depends on the candidate, and the running
 * sums continue in the same order, so a price through the prefix is
 * bit-identical to ar_plan_price_placed.  The owner invalidates it
 * (ar_price_prefix_reset) whenever the first n templates or their placement
 * change. */
typedef struct ar_price_prefix {
    int n;            /* templates cached; -1: nothing */
    int quiet;        /* 1: an out-of-memory plan returns its status without a message */
    int bound_only;   /* 1: time pipelines by the closed form (an upper bound) instead of
                       * exactly -- for the fill's expert-tiling search only */
    int gpus;
    double peak;
    double tmax[AR_MAX_TEMPLATES], tsum[AR_MAX_TEMPLATES];
    ar_stage (*times)[AR_MAX_DEPTH]; /* [AR_MAX_TEMPLATES]: compute_s .. bwd_s (heap, 16 x AR_MAX_DEPTH stages) */
    ar_holder *h;     /* [blocks]: holders after the first n templates */
    ar_holder embed_h, head_h;
    int blocks;
    ar_pipe_memo memo;  /* exact pipeline times of recent candidates */
    /* NULL, or one memo per stage of the last template (the candidate):
     * see ar_stage_memo.  Set by the fill's expert-tiling search for one
     * call at a time. */
    ar_stage_memo *const *last_memo;
    long memo_bound_prices; /* prices answered from the memos alone (price_memo_bound, cost_plan.c) */
} ar_price_prefix;

int ar_price_prefix_init(ar_price_prefix *pp, const arachne_cost_model *cm); /* ARACHNE_E_NO_MEMORY */
void ar_price_prefix_free(ar_price_prefix *pp);
void ar_price_prefix_reset(ar_price_prefix *pp);

/* ar_plan_price_placed for a plan whose last template is the candidate:
 * pp (not NULL, initialised for cm) keeps the first ntemplates - 1 templates
 * between calls (see ar_price_prefix). */
int ar_plan_price_prefix(const arachne_cost_model *cm, arachne_plan *plan,
                         const ar_stage_place (*place)[AR_MAX_DEPTH], ar_price_prefix *pp);

/* Model FLOPs of one training sample (3 x forward FLOPs of every layer at
 * the setup's sequence length: 6 N_active per token + attention).  */
double ar_cost_model_flops_per_sample(const arachne_cost_model *cm);

/* Rebuilds the private lookup cache after a setup change.  Called by
 * create and by the setters. */
int ar_cost_cache_build(arachne_cost_model *cm);

/* *out = a new cost model over cm's model, cluster and profile (borrowed,
 * as cm borrows them) with cm's setup but the recompute mode `recompute`
 * (ARACHNE_OPT_RECOMPUTE_SEARCH's second run); free it with
 * arachne_cost_model_destroy.  ARACHNE_E_NO_MEMORY; *out NULL then. */
int ar_cost_model_with_recompute(arachne_cost_model **out, const arachne_cost_model *cm, int recompute);
/* The same with cm's setup but ARACHNE_OPT_EXACT_DIVISION `exact_division`
 * (the default planner's first run under ARACHNE_OPT_EXACT_DIVISION 2). */
int ar_cost_model_with_exact_division(arachne_cost_model **out, const arachne_cost_model *cm, int exact_division);

#endif
