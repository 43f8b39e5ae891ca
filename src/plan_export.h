/* plan_export.h -- what the launcher exports share (plan_export*.c): the
 * per-export lookup tables, the plan's model and node sizes read back from
 * what the plan embeds, and comment helpers.  Internal. */
#ifndef ARACHNE_PLAN_EXPORT_H
#define ARACHNE_PLAN_EXPORT_H

#include "json.h"
#include "plan.h"

/* The target versions every export names and its flags were checked against
 * (tests/data/flags/). */
#define AR_MEGATRON_VERSION "Megatron-Core core_v0.15.0"
#define AR_MEGATRON_OLD_VERSION "core_v0.12.0"
#define AR_TORCHTITAN_TOML_VERSION "torchtitan v0.2.2"
#define AR_TORCHTITAN_CLI_VERSION "torchtitan main at b5bcd76 (after the Feb-2026 config refactor, #2386)"
#define AR_FLASHFLEX_VERSION "FlashFlex main at 5ee1726"
#define AR_SAILOR_VERSION "Sailor (eth-easl/sailor) at cf2c8e3"
#define AR_SAILOR_ZONE "us-central1-a"

/* Lookup tables built once per export. */
typedef struct xctx {
    const arachne_plan *p;
    int *order;       /* rank indices sorted by global rank */
    int *slot_idx;    /* (template, replica, stage, k = cp_rank x tp + tp_rank) -> index into p->ranks */
    int slot_off[AR_MAX_TEMPLATES + 1];
    int stage_off[AR_MAX_TEMPLATES][AR_MAX_DEPTH + 1];
    int min_tp[AR_MAX_TEMPLATES];
    int blocks;       /* transformer blocks (end of the last stage) */
    arachne_model *model;     /* the plan's model (from its embedded inputs), or NULL */
    arachne_cluster *cluster; /* the plan's cluster (embedded, else its compact string), or NULL */
} xctx;

/* The rank of GPU k = cp_rank x tp + tp_rank of (replica, stage) of template t. */
const ar_rank *ar_xslot(const xctx *x, int t, int replica, int stage, int tp_rank);
int ar_xslot_rank(const xctx *x, int t, int replica, int stage, int tp_rank);
/* 1 when every stage of template T has the same TP (which 0), EP (1) or ETP (2). */
int ar_xuniform(const ar_template *T, int which);
/* "4,2" : the per-stage TP (0), EP (1) or ETP (2) list. */
void ar_xstage_list(ar_buf *b, const ar_template *T, int which);
/* 1 when the template's expert tiling must be written: the model has routed
 * experts (a tiling of EP 1, ETP 1 still differs from the targets' default,
 * ETP = TP), or (no model known) a stage tiles experts over several GPUs. */
int ar_xmoe(const xctx *x, const ar_template *T);
/* Samples per iteration of template T: replicas x micro-batch x micro-batches. */
long ar_xshare(const ar_template *T);
/* "# arachne plan for TOOL: ..." header lines. */
void ar_xplan_header(const xctx *x, ar_buf *b, const char *tool);
/* "# template t: ..." and one comment line per stage with its ranks and nodes. */
void ar_xtemplate_header(const xctx *x, ar_buf *b, int t);
/* Job rank of (replica, stage, k) of template t under a launcher's rank
 * order, k = cp_rank x tp + tp_rank (TP fastest, then CP); pp_outer:
 * torchtitan (pp, dp, cp, tp), else Megatron --use-tp-pp-dp-mapping
 * (dp, pp, cp, tp).  Needs one TP degree for every stage. */
int ar_xjob_rank(const xctx *x, int t, int replica, int stage, int tp_rank, int pp_outer);
/* "# job ranks (ORDER): ..." comment: where each job rank of template t runs. */
void ar_xjob_rank_map(const xctx *x, ar_buf *b, int t, int pp_outer, const char *order);
/* "# the price assumes: ..." from the plan's setup (precision, recompute,
 * optimizer sharding, overlaps). */
void ar_xassumptions(const xctx *x, ar_buf *b);
/* The NOTE printed above multi-template plans for one-structure launchers. */
void ar_xmulti_template_note(const xctx *x, ar_buf *b, const char *tool);
/* NOTE lines for a target that builds plain transformer blocks: the
 * model's LatentMoE experts (ar_xlatent_note) and a hybrid stack's Mamba /
 * attention-only / MLP-only layers; nothing for a plain transformer. */
void ar_xlayer_notes(const xctx *x, ar_buf *b, const char *tool);
/* NOTE line for a target without LatentMoE experts. */
void ar_xlatent_note(const xctx *x, ar_buf *b, const char *tool);
/* The NOTE printed when the plan's bytes per parameter are not bf16 weights,
 * fp32 gradients and fp32 master + two Adam moments. */
void ar_xprecision_note(const xctx *x, ar_buf *b, const char *tool);

void ar_export_megatron(const xctx *x, ar_buf *b);
void ar_export_torchtitan_toml(const xctx *x, ar_buf *b);
void ar_export_torchtitan_cli(const xctx *x, ar_buf *b);
void ar_export_flashflex(const xctx *x, ar_buf *b);
int ar_export_sailor(const xctx *x, ar_buf *b);   /* ARACHNE_E_UNSUPPORTED when Sailor cannot express the plan */

#endif
