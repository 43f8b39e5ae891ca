/* plan_export.c -- a plan in the formats launchers take: the shared
 * lookup tables and comment helpers, the per-rank JSON lines with process
 * groups, and the dispatch to the launcher exports (plan_export_mt.c:
 * Megatron-LM and torchtitan; plan_export_peers.c: FlashFlex and Sailor).
 * Layouts, target versions and limits are in docs/exports.md.  Every export
 * is a pure read of the plan and gives the same bytes for the same plan. */
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "plan_export.h"

static int order_cmp_rank(const arachne_plan *p, int a, int b) { return p->ranks[a].rank - p->ranks[b].rank; }

static int xctx_init(xctx *x, const arachne_plan *p)
{
    int t, s, i, j;
    long slots = 0;
    memset(x, 0, sizeof *x);
    x->p = p;
    if (p->ntemplates < 1 || p->ntemplates > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_PLAN, "plan export: plan has %d templates", p->ntemplates);
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        if (T->depth < 1 || T->depth > AR_MAX_DEPTH || T->replicas < 1)
            return ar_error(ARACHNE_E_INVALID_PLAN, "plan export: template %d has depth %d and %d replicas", t,
                            T->depth, T->replicas);
        x->slot_off[t] = (int)slots;
        x->stage_off[t][0] = 0;
        x->min_tp[t] = T->stages[0].tp;
        for (s = 0; s < T->depth; s++) {
            if (T->stages[s].tp < 1)
                return ar_error(ARACHNE_E_INVALID_PLAN, "plan export: template %d stage %d has TP %d", t, s,
                                T->stages[s].tp);
            x->stage_off[t][s + 1] = x->stage_off[t][s] + ar_stage_gpus(T, s);
            if (T->stages[s].tp < x->min_tp[t]) x->min_tp[t] = T->stages[s].tp;
        }
        slots += (long)T->replicas * x->stage_off[t][T->depth];
        if (slots > (1L << 28)) return ar_error(ARACHNE_E_INVALID_PLAN, "plan export: too many ranks");
    }
    x->slot_off[p->ntemplates] = (int)slots;
    x->blocks = p->t[0].stages[p->t[0].depth - 1].end;
    x->order = ar_malloc(((size_t)p->nranks + 1) * sizeof *x->order);
    x->slot_idx = ar_malloc(((size_t)slots + 1) * sizeof *x->slot_idx);
    if (!x->order || !x->slot_idx) return ARACHNE_E_NO_MEMORY;
    for (i = 0; i < slots; i++) x->slot_idx[i] = -1;
    /* insertion order by global rank (usually already sorted: linear) */
    for (i = 0; i < p->nranks; i++) {
        j = i;
        while (j > 0 && order_cmp_rank(p, x->order[j - 1], i) > 0) {
            x->order[j] = x->order[j - 1];
            j--;
        }
        x->order[j] = i;
    }
    for (i = 0; i < p->nranks; i++) {
        const ar_rank *R = &p->ranks[i];
        const ar_template *T;
        if (R->tmpl < 0 || R->tmpl >= p->ntemplates) goto bad;
        T = &p->t[R->tmpl];
        if (R->replica < 0 || R->replica >= T->replicas || R->stage < 0 || R->stage >= T->depth || R->tp_rank < 0 ||
            R->tp_rank >= T->stages[R->stage].tp || R->cp_rank < 0 || R->cp_rank >= ar_tmpl_cp(T))
            goto bad; /* validated plans carry cp_rank 0 outside CP templates */
        /* a stage's GPUs of one replica: k = cp_rank * tp + tp_rank */
        x->slot_idx[x->slot_off[R->tmpl] + R->replica * x->stage_off[R->tmpl][T->depth] +
                    x->stage_off[R->tmpl][R->stage] + R->cp_rank * T->stages[R->stage].tp + R->tp_rank] = i;
        continue;
    bad:
        return ar_error(ARACHNE_E_INVALID_PLAN, "plan export: rank %d names a template/replica/stage/tp_rank/"
                        "cp_rank outside the plan", R->rank);
    }
    for (i = 0; i < slots; i++)
        if (x->slot_idx[i] < 0)
            return ar_error(ARACHNE_E_INVALID_PLAN, "plan export: the plan's ranks are incomplete (%d listed, %ld "
                            "needed)", p->nranks, slots);
    /* the model's shape and the nodes' sizes, from what the plan embeds;
     * an export that needs them says so when they are missing */
    if (p->in.model && arachne_model_from_json(&x->model, p->in.model, strlen(p->in.model)) != ARACHNE_OK)
        x->model = NULL;
    if (p->in.cluster) {
        if (arachne_cluster_from_json(&x->cluster, p->in.cluster, strlen(p->in.cluster)) != ARACHNE_OK)
            x->cluster = NULL;
    } else if (p->cluster_spec && arachne_cluster_parse(&x->cluster, p->cluster_spec) != ARACHNE_OK) {
        x->cluster = NULL;
    }
    arachne_clear_error();
    return ARACHNE_OK;
}

static void xctx_free(xctx *x)
{
    free(x->order);
    free(x->slot_idx);
    arachne_model_destroy(x->model);
    arachne_cluster_destroy(x->cluster);
}

const ar_rank *ar_xslot(const xctx *x, int t, int replica, int stage, int tp_rank)
{
    const ar_template *T = &x->p->t[t];
    return &x->p->ranks[x->slot_idx[x->slot_off[t] + replica * x->stage_off[t][T->depth] + x->stage_off[t][stage] +
                                    tp_rank]];
}

int ar_xslot_rank(const xctx *x, int t, int replica, int stage, int tp_rank)
{
    return ar_xslot(x, t, replica, stage, tp_rank)->rank;
}

#define slot ar_xslot
#define slot_rank ar_xslot_rank

/* Pipeline lane of a TP rank: with L = the template's smallest TP degree,
 * lane = tp_rank * L / tp.  Lanes partition each pipeline replica; with one
 * TP degree for every stage the lane is the TP rank (Megatron's PP group). */
static int lane_of(int tp_rank, int tp, int min_tp) { return (int)((long)tp_rank * min_tp / tp); }

static void put_int_list_open(ar_buf *b, int *first)
{
    ar_buf_puts(b, "[");
    *first = 1;
}

static void put_list_item(ar_buf *b, int *first, int v)
{
    ar_buf_printf(b, "%s%d", *first ? "" : ",", v);
    *first = 0;
}

long ar_xshare(const ar_template *T) { return (long)T->replicas * T->micro_batch * T->micro_batches; }

/* ---- ranks: one JSON object per line, global-rank order ---- */
static void export_ranks(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int i, k, s, f;
    for (i = 0; i < p->nranks; i++) {
        const ar_rank *R = &p->ranks[x->order[i]];
        const ar_template *T = &p->t[R->tmpl];
        const ar_stage *S = &T->stages[R->stage];
        int lane = lane_of(R->tp_rank, S->tp, x->min_tp[R->tmpl]), cp = ar_tmpl_cp(T), base = R->cp_rank * S->tp;
        ar_buf_printf(b, "{\"rank\":%d,\"node\":%d,\"local_gpu\":%d,\"gpu_type\":", R->rank, R->node, R->gpu);
        ar_json_put_string(b, ar_plan_type_name(p, S->type));
        ar_buf_printf(b, ",\"template\":%d,\"replica\":%d,\"stage\":%d,\"tp_rank\":%d,\"tp_size\":%d,"
                         "\"pp_rank\":%d,\"pp_size\":%d,\"pp_lane\":%d,\"dp_rank\":%d,\"dp_size\":%d,"
                         "\"layers\":[%d,%d],\"embedding\":%s,\"head\":%s,\"micro_batch\":%d,\"micro_batches\":%d,"
                         "\"ep\":%d,\"etp\":%d,\"edp\":%d,",
                      R->tmpl, R->replica, R->stage, R->tp_rank, S->tp, R->stage, T->depth, lane, R->replica,
                      T->replicas, S->first, S->end, R->stage == 0 ? "true" : "false",
                      R->stage == T->depth - 1 ? "true" : "false", T->micro_batch, T->micro_batches, S->ep, S->etp,
                      S->edp);
        if (T->vp > 1) { /* only in interleaved templates, as cp below: the blocks the rank runs are its
                          * stage's chunks, not the stage's [first, end) */
            int c, f0, e0;
            ar_buf_printf(b, "\"vp\":%d,\"chunks\":[", T->vp);
            for (c = 0; c < T->vp; c++) {
                ar_vp_chunk_range(T, R->stage, c, &f0, &e0);
                ar_buf_printf(b, "%s[%d,%d]", c ? "," : "", f0, e0);
            }
            ar_buf_puts(b, "],");
        }
        /* what the price assumes of memory, which a launcher must set up
         * alike for the plan to fit: the recompute mode and whether the
         * optimizer state is sharded over the data-parallel ranks (ZeRO-1) */
        ar_buf_printf(b, "\"recompute\":\"%s\",\"dist_optimizer\":%s,", ar_recompute_name(p->setup.recompute),
                      p->setup.dist_optimizer ? "true" : "false");
        if (T->fsdp > 1) { /* only in FSDP templates: the F consecutive replicas that shard this stage */
            int g0 = R->replica / T->fsdp * T->fsdp;
            ar_buf_printf(b, "\"fsdp_size\":%d,\"fsdp_group\":", T->fsdp);
            put_int_list_open(b, &f);
            for (k = g0; k < g0 + T->fsdp && k < T->replicas; k++)
                put_list_item(b, &f, slot_rank(x, R->tmpl, k, R->stage, base + R->tp_rank));
            ar_buf_puts(b, "],");
        }
        if (cp > 1) { /* only in CP templates: other exports stay byte-identical */
            ar_buf_printf(b, "\"cp_rank\":%d,\"cp_size\":%d,\"cp_group\":", R->cp_rank, cp);
            put_int_list_open(b, &f);
            for (k = 0; k < cp; k++) put_list_item(b, &f, slot_rank(x, R->tmpl, R->replica, R->stage, k * S->tp + R->tp_rank));
            ar_buf_puts(b, "],");
        }
        ar_buf_puts(b, "\"tp_group\":");
        put_int_list_open(b, &f);
        for (k = 0; k < S->tp; k++) put_list_item(b, &f, slot_rank(x, R->tmpl, R->replica, R->stage, base + k));
        ar_buf_puts(b, "],\"pp_group\":");
        put_int_list_open(b, &f);
        for (s = 0; s < T->depth; s++)
            for (k = 0; k < T->stages[s].tp; k++)
                if (lane_of(k, T->stages[s].tp, x->min_tp[R->tmpl]) == lane)
                    put_list_item(b, &f, slot_rank(x, R->tmpl, R->replica, s, R->cp_rank * T->stages[s].tp + k));
        ar_buf_puts(b, "],\"dp_group\":");
        put_int_list_open(b, &f);
        for (k = 0; k < T->replicas; k++) put_list_item(b, &f, slot_rank(x, R->tmpl, k, R->stage, base + R->tp_rank));
        ar_buf_puts(b, "]}\n");
    }
}

/* "#   stage 0: A100-40 x TP 4, blocks [0, 16), ranks 0,1,2,3@node0 ..." for each stage (a group over
 * several nodes: "@node0,1"). */
static void stage_comments(const xctx *x, ar_buf *b, int t)
{
    const arachne_plan *p = x->p;
    const ar_template *T = &p->t[t];
    int s, r, k;
    for (s = 0; s < T->depth; s++) {
        const ar_stage *S = &T->stages[s];
        ar_buf_printf(b, "#   stage %d: %s x TP %d", s, ar_plan_type_name(p, S->type), S->tp);
        if (T->cp > 1) ar_buf_printf(b, " x CP %d", T->cp);
        ar_buf_printf(b, ", blocks [%d, %d)", S->first, S->end);
        if (S->ep > 1 || S->etp > 1) ar_buf_printf(b, ", EP %d x ETP %d x EDP %d", S->ep, S->etp, S->edp);
        ar_buf_puts(b, ", ranks");
        for (r = 0; r < T->replicas; r++) {
            ar_buf_puts(b, " ");
            for (k = 0; k < ar_stage_gpus(T, s); k++) ar_buf_printf(b, "%s%d", k ? "," : "", slot_rank(x, t, r, s, k));
            /* the nodes in the ranks' order (a CP ring or a TP x CP group
             * can span several) */
            ar_buf_printf(b, "@node%d", slot(x, t, r, s, 0)->node);
            for (k = 1; k < ar_stage_gpus(T, s); k++) {
                int n = slot(x, t, r, s, k)->node, seen = 0, q;
                for (q = 0; q < k && !seen; q++) seen = slot(x, t, r, s, q)->node == n;
                if (!seen) ar_buf_printf(b, ",%d", n);
            }
        }
        ar_buf_puts(b, "\n");
    }
}

void ar_xtemplate_header(const xctx *x, ar_buf *b, int t)
{
    const ar_template *T = &x->p->t[t];
    ar_buf_printf(b, "# template %d: %d replica%s x %d stage%s, micro-batch %d x %d, batch share %ld of %d\n", t,
                  T->replicas, T->replicas == 1 ? "" : "s", T->depth, T->depth == 1 ? "" : "s", T->micro_batch,
                  T->micro_batches, ar_xshare(T), x->p->setup.global_batch);
    stage_comments(x, b, t);
}

void ar_xplan_header(const xctx *x, ar_buf *b, const char *tool)
{
    const arachne_plan *p = x->p;
    char it[40];
    ar_json_format_double(it, sizeof it, p->iteration_s);
    ar_buf_printf(b, "# arachne plan for %s: model %s, cluster %s\n", tool, p->model,
                  p->cluster_spec ? p->cluster_spec : "?");
    ar_buf_printf(b, "# %d template%s, %d GPUs used of %d, global batch %d x %d tokens, iteration %s s\n",
                  p->ntemplates, p->ntemplates == 1 ? "" : "s", p->nranks, p->gpus_total, p->setup.global_batch,
                  p->setup.seq_len, it);
}

int ar_xuniform(const ar_template *T, int which)
{
    int s;
    for (s = 1; s < T->depth; s++) {
        const ar_stage *a = &T->stages[0], *c = &T->stages[s];
        if (which == 0 && a->tp != c->tp) return 0;
        if (which == 1 && a->ep != c->ep) return 0;
        if (which == 2 && a->etp != c->etp) return 0;
    }
    return 1;
}

void ar_xstage_list(ar_buf *b, const ar_template *T, int which)
{
    int s;
    for (s = 0; s < T->depth; s++) {
        const ar_stage *S = &T->stages[s];
        ar_buf_printf(b, "%s%d", s ? "," : "", which == 0 ? S->tp : which == 1 ? S->ep : S->etp);
    }
}

int ar_xmoe(const xctx *x, const ar_template *T)
{
    int s, moe = x->model && x->model->experts > 0;
    for (s = 0; s < T->depth; s++) moe |= T->stages[s].ep > 1 || T->stages[s].etp > 1;
    return moe;
}

int ar_xjob_rank(const xctx *x, int t, int replica, int stage, int tp_rank, int pp_outer)
{
    const ar_template *T = &x->p->t[t];
    int tp = ar_stage_gpus(T, 0); /* TP fastest, then CP: one block of tp x cp */
    return pp_outer ? (stage * T->replicas + replica) * tp + tp_rank : (replica * T->depth + stage) * tp + tp_rank;
}

void ar_xjob_rank_map(const xctx *x, ar_buf *b, int t, int pp_outer, const char *order)
{
    const ar_template *T = &x->p->t[t];
    int n = T->replicas * T->depth * ar_stage_gpus(T, 0), base = -1, same = 1, r, s, k, j;
    int *at = ar_malloc((size_t)n * sizeof *at);
    if (!at) {
        ar_buf_puts(b, "# (rank map omitted: out of memory)\n");
        return;
    }
    for (r = 0; r < T->replicas; r++)
        for (s = 0; s < T->depth; s++)
            for (k = 0; k < ar_stage_gpus(T, 0); k++) {
                int idx = (int)(slot(x, t, r, s, k) - x->p->ranks);
                at[ar_xjob_rank(x, t, r, s, k, pp_outer)] = idx;
                if (base < 0 || x->p->ranks[idx].rank < base) base = x->p->ranks[idx].rank;
            }
    for (j = 0; j < n; j++) same &= x->p->ranks[at[j]].rank == base + j;
    ar_buf_printf(b, "# job ranks in %s order: ", order);
    if (same) {
        ar_buf_printf(b, "job rank = plan rank - %d (plan ranks %d..%d already follow it)\n", base, base, base + n - 1);
    } else {
        ar_buf_puts(b, "job rank -> node:gpu");
        for (j = 0; j < n; j++) ar_buf_printf(b, " %d->%d:%d", j, x->p->ranks[at[j]].node, x->p->ranks[at[j]].gpu);
        ar_buf_puts(b, "\n");
    }
    free(at);
}

/* 1 when templates a and b have one structure: the same stages (GPU type,
 * TP, layers, expert group), micro-batch, CP, VP and FSDP; they may differ
 * in replicas and micro-batch count (the exact split, plan_exact.c). */
static int same_structure(const ar_template *a, const ar_template *b)
{
    return a->micro_batch == b->micro_batch && a->vp == b->vp && ar_template_same_stages(a, b);
}

void ar_xmulti_template_note(const xctx *x, ar_buf *b, const char *tool)
{
    int t, one = 1;
    if (x->p->ntemplates < 2) return;
    ar_buf_printf(b, "# NOTE: this plan has %d templates and %s runs one structure per job: the %d argument sets below "
                     "are %d separate jobs that never share gradients (each trains its own copy of the model on its "
                     "batch share). The plan's price assumes ONE run whose templates all-reduce the gradients of the "
                     "same layers; that needs a runtime that takes per-pipeline structures (the 'ranks' or "
                     "'flashflex' export), or a one-template plan.\n",
                  x->p->ntemplates, tool, x->p->ntemplates, x->p->ntemplates);
    for (t = 1; t < x->p->ntemplates; t++) one &= same_structure(&x->p->t[0], &x->p->t[t]);
    if (one)
        ar_buf_printf(b, "# NOTE: the %d templates are one structure whose replicas run different micro-batch counts, "
                         "so that together they run the global batch exactly (the exact split, docs/search.md); %s "
                         "gives every data-parallel rank the same count: plan with --allow-batch-rounding "
                         "(ARACHNE_OPT_EXACT_BATCH 0) for one template, one job, at the batch it runs.\n",
                      x->p->ntemplates, tool);
}

void ar_xassumptions(const xctx *x, ar_buf *b)
{
    const ar_setup *su = &x->p->setup;
    int t, vp = 0;
    for (t = 0; t < x->p->ntemplates; t++)
        if (x->p->t[t].vp > 1) vp = 1;
    ar_buf_printf(b, "# the price assumes: %g/%g/%g bytes per parameter (weights/gradients/optimizer), sequence "
                     "parallelism inside every TP group, %s, %s recomputation, %s, gradient reduction %s the "
                     "backward%s%s\n",
                  su->weight_bytes, su->grad_bytes, su->optim_bytes,
                  vp ? "1F1B (interleaved where a template has vp > 1)" : "1F1B",
                  su->recompute == AR_RECOMPUTE_NONE ? "no" : su->recompute == AR_RECOMPUTE_FULL ? "full" : "selective",
                  su->dist_optimizer ? "optimizer state sharded over data parallel (ZeRO-1)" : "replicated optimizer state",
                  su->overlap_grad_reduce ? "overlapped with" : "after",
                  su->dist_optimizer ? (su->overlap_param_gather ? ", parameter all-gather overlapped with the forward"
                                                                 : ", parameter all-gather before the forward")
                                     : "",
                  su->tp_comm_overlap ? ", TP communication overlapped with the GEMMs" : "");
}

void ar_xprecision_note(const xctx *x, ar_buf *b, const char *tool)
{
    const ar_setup *su = &x->p->setup;
    if (su->weight_bytes == 2.0 && su->grad_bytes == 4.0 && su->optim_bytes == 12.0) return;
    ar_buf_printf(b, "# NOTE: the plan was priced with %g/%g/%g bytes per parameter (weights/gradients/optimizer); "
                     "the flags below give %s's bf16 mixed precision (2/4/12), so memory and sync times differ from "
                     "the price.\n",
                  su->weight_bytes, su->grad_bytes, su->optim_bytes, tool);
}

void ar_xlayer_notes(const xctx *x, ar_buf *b, const char *tool)
{
    const arachne_model *m = x->model;
    ar_xlatent_note(x, b, tool);
    if (!m || !m->pattern[0]) return;
    ar_buf_printf(b, "# NOTE: the model is a hybrid layer stack (pattern %.60s%s); %s builds transformer blocks "
                     "only, so its Mamba / attention-only / MLP-only layers cannot run there.\n",
                  m->pattern, strlen(m->pattern) > 60 ? "..." : "", tool);
}

void ar_xlatent_note(const xctx *x, ar_buf *b, const char *tool)
{
    const arachne_model *m = x->model;
    if (!m || m->expert_latent <= 0) return;
    ar_buf_printf(b, "# NOTE: the routed experts work in a latent width of %d (LatentMoE) and %s has no flag for it "
                     "here: the run below uses full-width experts, which the price does not assume.\n",
                  m->expert_latent, tool);
}

int arachne_plan_export(const arachne_plan *p, int format, char *buf, size_t cap, size_t *needed)
{
    xctx x;
    ar_buf b;
    int st;
    if (needed) *needed = 0;
    if (!p) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_export: NULL plan");
    if (format < ARACHNE_EXPORT_RANKS || format > ARACHNE_EXPORT_TORCHTITAN_CLI)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_export: unknown format %d (valid 0..%d)", format,
                        ARACHNE_EXPORT_TORCHTITAN_CLI);
    if (format == ARACHNE_EXPORT_FLASHFLEX || format == ARACHNE_EXPORT_SAILOR) {
        /* what the peers' formats have no setting for */
        int t, cp, fsdp;
        for (t = 0; t < p->ntemplates && t < AR_MAX_TEMPLATES; t++) {
            cp = p->t[t].cp > 1;
            fsdp = !cp && p->t[t].fsdp > 1;
            if (cp || fsdp)
                return ar_error(ARACHNE_E_UNSUPPORTED,
                                "%s export: template %d %s %d%s, which %s cannot express (%s); use the megatron, "
                                "torchtitan or ranks export, or plan with %s off",
                                format == ARACHNE_EXPORT_SAILOR ? "sailor" : "flashflex", t,
                                cp ? "uses context parallelism (cp" : "shards over FSDP groups of",
                                cp ? p->t[t].cp : p->t[t].fsdp, cp ? ")" : " replicas",
                                format == ARACHNE_EXPORT_SAILOR ? "Sailor" : "FlashFlex",
                                cp ? "it has no context-parallel setting" : "its replicas keep whole weights",
                                cp ? "context parallelism" : "FSDP");
        }
    }
    st = xctx_init(&x, p);
    if (st) {
        xctx_free(&x);
        return st;
    }
    ar_buf_init(&b);
    st = ARACHNE_OK;
    if (format == ARACHNE_EXPORT_FLASHFLEX || format == ARACHNE_EXPORT_SAILOR) {
        /* neither runs an interleaved schedule: a plain 1F1B run would not be the plan */
        int t;
        for (t = 0; t < p->ntemplates && !st; t++)
            if (p->t[t].vp > 1)
                st = ar_error(ARACHNE_E_UNSUPPORTED, "%s export: template %d interleaves its pipeline (vp %d model "
                              "chunks per stage), which %s cannot run; export it for Megatron-LM or torchtitan",
                              format == ARACHNE_EXPORT_SAILOR ? "sailor" : "flashflex", t, p->t[t].vp,
                              format == ARACHNE_EXPORT_SAILOR ? "Sailor" : "FlashFlex");
    }
    /* Sailor's file has no room for a NOTE: a plan its simulator would
     * price as transformer blocks is refused instead */
    if (!st && format == ARACHNE_EXPORT_SAILOR && x.model && x.model->pattern[0])
        st = ar_error(ARACHNE_E_UNSUPPORTED, "sailor export: the model '%s' is a hybrid layer stack (Mamba / attention / "
                      "MoE layers), which Sailor's planner and simulator cannot express; use the megatron or ranks "
                      "export", x.model->name);
    if (!st) switch (format) {
    case ARACHNE_EXPORT_RANKS: export_ranks(&x, &b); break;
    case ARACHNE_EXPORT_MEGATRON: ar_export_megatron(&x, &b); break;
    case ARACHNE_EXPORT_TORCHTITAN: ar_export_torchtitan_toml(&x, &b); break;
    case ARACHNE_EXPORT_FLASHFLEX: ar_export_flashflex(&x, &b); break;
    case ARACHNE_EXPORT_SAILOR: st = ar_export_sailor(&x, &b); break;
    default: ar_export_torchtitan_cli(&x, &b); break;
    }
    xctx_free(&x);
    if (!st) st = ar_buf_status(&b);
    if (!st) st = ar_copy_out(buf, cap, needed, b.data ? b.data : "", b.len);
    ar_buf_free(&b);
    return st;
}
