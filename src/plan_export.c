/* plan_export.c -- a plan in the formats launchers take: per-rank JSON
 * lines with process groups, Megatron-LM arguments, torchtitan TOML,
 * FlashFlex arguments and Sailor's pipeline_list.  Layouts and their limits
 * are written out in docs/exports.md.  Every export is a pure read of the
 * plan and gives the same bytes for the same plan. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plan.h"

/* Lookup tables built once per export. */
typedef struct xctx {
    const arachne_plan *p;
    int *order;       /* rank indices sorted by global rank */
    int *slot_idx;    /* (template, replica, stage, tp_rank) -> index into p->ranks */
    int slot_off[AR_MAX_TEMPLATES + 1];
    int stage_off[AR_MAX_TEMPLATES][AR_MAX_DEPTH + 1];
    int min_tp[AR_MAX_TEMPLATES];
    int blocks;       /* transformer blocks (end of the last stage) */
} xctx;

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
            x->stage_off[t][s + 1] = x->stage_off[t][s] + T->stages[s].tp;
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
            R->tp_rank >= T->stages[R->stage].tp)
            goto bad;
        x->slot_idx[x->slot_off[R->tmpl] + R->replica * x->stage_off[R->tmpl][T->depth] +
                    x->stage_off[R->tmpl][R->stage] + R->tp_rank] = i;
        continue;
    bad:
        return ar_error(ARACHNE_E_INVALID_PLAN, "plan export: rank %d names a template/replica/stage/tp_rank "
                        "outside the plan", R->rank);
    }
    for (i = 0; i < slots; i++)
        if (x->slot_idx[i] < 0)
            return ar_error(ARACHNE_E_INVALID_PLAN, "plan export: the plan's ranks are incomplete (%d listed, %ld "
                            "needed)", p->nranks, slots);
    return ARACHNE_OK;
}

static void xctx_free(xctx *x)
{
    free(x->order);
    free(x->slot_idx);
}

static const ar_rank *slot(const xctx *x, int t, int replica, int stage, int tp_rank)
{
    const ar_template *T = &x->p->t[t];
    return &x->p->ranks[x->slot_idx[x->slot_off[t] + replica * x->stage_off[t][T->depth] + x->stage_off[t][stage] +
                                    tp_rank]];
}

static int slot_rank(const xctx *x, int t, int replica, int stage, int tp_rank)
{
    return slot(x, t, replica, stage, tp_rank)->rank;
}

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

static const char *recompute_word(int r)
{
    return r == AR_RECOMPUTE_NONE ? "none" : r == AR_RECOMPUTE_FULL ? "full" : "selective";
}

static long batch_share(const ar_template *T) { return (long)T->replicas * T->micro_batch * T->micro_batches; }

/* ---- ranks: one JSON object per line, global-rank order ---- */
static void export_ranks(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int i, k, s, f;
    for (i = 0; i < p->nranks; i++) {
        const ar_rank *R = &p->ranks[x->order[i]];
        const ar_template *T = &p->t[R->tmpl];
        const ar_stage *S = &T->stages[R->stage];
        int lane = lane_of(R->tp_rank, S->tp, x->min_tp[R->tmpl]);
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
        ar_buf_puts(b, "\"tp_group\":");
        put_int_list_open(b, &f);
        for (k = 0; k < S->tp; k++) put_list_item(b, &f, slot_rank(x, R->tmpl, R->replica, R->stage, k));
        ar_buf_puts(b, "],\"pp_group\":");
        put_int_list_open(b, &f);
        for (s = 0; s < T->depth; s++)
            for (k = 0; k < T->stages[s].tp; k++)
                if (lane_of(k, T->stages[s].tp, x->min_tp[R->tmpl]) == lane)
                    put_list_item(b, &f, slot_rank(x, R->tmpl, R->replica, s, k));
        ar_buf_puts(b, "],\"dp_group\":");
        put_int_list_open(b, &f);
        for (k = 0; k < T->replicas; k++) put_list_item(b, &f, slot_rank(x, R->tmpl, k, R->stage, R->tp_rank));
        ar_buf_puts(b, "]}\n");
    }
}

/* "# stage 0: A100-40 x TP 4, blocks [0, 16), nodes 0 1" for each stage. */
static void stage_comments(const xctx *x, ar_buf *b, int t)
{
    const arachne_plan *p = x->p;
    const ar_template *T = &p->t[t];
    int s, r, k;
    for (s = 0; s < T->depth; s++) {
        const ar_stage *S = &T->stages[s];
        ar_buf_printf(b, "#   stage %d: %s x TP %d, blocks [%d, %d)", s, ar_plan_type_name(p, S->type), S->tp,
                      S->first, S->end);
        if (S->ep > 1 || S->etp > 1) ar_buf_printf(b, ", EP %d x ETP %d x EDP %d", S->ep, S->etp, S->edp);
        ar_buf_puts(b, ", ranks");
        for (r = 0; r < T->replicas; r++) {
            ar_buf_puts(b, " ");
            for (k = 0; k < S->tp; k++) ar_buf_printf(b, "%s%d", k ? "," : "", slot_rank(x, t, r, s, k));
            ar_buf_printf(b, "@node%d", slot(x, t, r, s, 0)->node);
        }
        ar_buf_puts(b, "\n");
    }
}

static void template_header(const xctx *x, ar_buf *b, int t)
{
    const ar_template *T = &x->p->t[t];
    ar_buf_printf(b, "# template %d: %d replica%s x %d stage%s, micro-batch %d x %d, batch share %ld of %d\n", t,
                  T->replicas, T->replicas == 1 ? "" : "s", T->depth, T->depth == 1 ? "" : "s", T->micro_batch,
                  T->micro_batches, batch_share(T), x->p->setup.global_batch);
    stage_comments(x, b, t);
}

static void plan_header(const xctx *x, ar_buf *b, const char *tool)
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

/* 1 when every stage of template t has the same value of the field. */
static int uniform(const ar_template *T, int which)
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

static void stage_list(ar_buf *b, const ar_template *T, int which)
{
    int s;
    for (s = 0; s < T->depth; s++) {
        const ar_stage *S = &T->stages[s];
        ar_buf_printf(b, "%s%d", s ? "," : "", which == 0 ? S->tp : which == 1 ? S->ep : S->etp);
    }
}

/* ---- megatron: one argument line per template ---- */
static void export_megatron(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int t, s, l;
    plan_header(x, b, "Megatron-LM");
    ar_buf_puts(b, "# one launch per template; each launch's ranks are listed per stage below\n");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        int moe = 0;
        for (s = 0; s < T->depth; s++) moe |= T->stages[s].ep > 1 || T->stages[s].etp > 1;
        ar_buf_puts(b, "\n");
        template_header(x, b, t);
        if (!uniform(T, 0)) {
            ar_buf_puts(b, "# NOTE: Megatron-LM cannot express this template: its stages use TP ");
            stage_list(b, T, 0);
            ar_buf_printf(b, " and Megatron runs one TP degree for every stage. The line below uses TP %d "
                             "everywhere and does NOT reproduce the plan; use the 'ranks' or 'flashflex' export "
                             "with a runtime that takes per-stage TP.\n", T->stages[0].tp);
        }
        if (moe && !uniform(T, 1)) {
            ar_buf_puts(b, "# NOTE: Megatron-LM cannot express per-stage EP (");
            stage_list(b, T, 1);
            ar_buf_printf(b, "); the line below uses EP %d everywhere.\n", T->stages[0].ep);
        }
        if (moe && !uniform(T, 2)) {
            ar_buf_puts(b, "# NOTE: Megatron-LM cannot express per-stage expert TP (");
            stage_list(b, T, 2);
            ar_buf_printf(b, "); the line below uses ETP %d everywhere.\n", T->stages[0].etp);
        }
        ar_buf_printf(b, "--num-layers %d --seq-length %d --tensor-model-parallel-size %d "
                         "--pipeline-model-parallel-size %d --micro-batch-size %d --global-batch-size %ld",
                      x->blocks, p->setup.seq_len, T->stages[0].tp, T->depth, T->micro_batch, batch_share(T));
        if (T->depth > 1) {
            ar_buf_puts(b, " --pipeline-model-parallel-layout \"E");
            for (s = 0; s < T->depth; s++) {
                if (s) ar_buf_puts(b, "|");
                for (l = T->stages[s].first; l < T->stages[s].end; l++) ar_buf_puts(b, "t");
            }
            ar_buf_puts(b, "L\"");
        }
        if (moe)
            ar_buf_printf(b, " --expert-model-parallel-size %d --expert-tensor-parallel-size %d", T->stages[0].ep,
                          T->stages[0].etp);
        if (p->setup.recompute == AR_RECOMPUTE_SELECTIVE) ar_buf_puts(b, " --recompute-granularity selective");
        else if (p->setup.recompute == AR_RECOMPUTE_FULL)
            ar_buf_puts(b, " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
        if (p->setup.dist_optimizer) ar_buf_puts(b, " --use-distributed-optimizer");
        ar_buf_puts(b, "\n");
    }
}

/* ---- torchtitan: a [parallelism] TOML document per template ---- */
static void export_torchtitan(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int t, s, l;
    plan_header(x, b, "torchtitan");
    ar_buf_puts(b, "# one TOML document per template (save each as its own job config); they are separated by\n"
                   "# '# ---- template N ----' lines\n");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        int moe = 0;
        for (s = 0; s < T->depth; s++) moe |= T->stages[s].ep > 1 || T->stages[s].etp > 1;
        ar_buf_printf(b, "\n# ---- template %d ----\n", t);
        template_header(x, b, t);
        if (!uniform(T, 0)) {
            ar_buf_puts(b, "# NOTE: torchtitan cannot express this template: its stages use TP ");
            stage_list(b, T, 0);
            ar_buf_printf(b, " and torchtitan runs one tensor_parallel_degree per job. tensor_parallel_degree = "
                             "%d below does NOT reproduce the plan.\n", T->stages[0].tp);
        }
        if (moe && (!uniform(T, 1) || !uniform(T, 2)))
            ar_buf_puts(b, "# NOTE: the stages use different expert tilings; torchtitan takes one per job "
                           "(stage 0's below).\n");
        ar_buf_puts(b, "[parallelism]\n");
        ar_buf_printf(b, "data_parallel_replicate_degree = %d\n", p->setup.dist_optimizer ? 1 : T->replicas);
        ar_buf_printf(b, "data_parallel_shard_degree = %d\n", p->setup.dist_optimizer ? T->replicas : 1);
        ar_buf_printf(b, "tensor_parallel_degree = %d\n", T->stages[0].tp);
        ar_buf_printf(b, "pipeline_parallel_degree = %d\n", T->depth);
        ar_buf_puts(b, "pipeline_parallel_schedule = \"1F1B\"\n");
        ar_buf_printf(b, "pipeline_parallel_microbatch_size = %d\n", T->micro_batch);
        if (T->depth > 1) {
            ar_buf_puts(b, "module_fqns_per_model_part = [");
            for (s = 0; s < T->depth; s++) {
                int first = 1;
                ar_buf_puts(b, s ? ", [" : "[");
                if (s == 0) {
                    ar_buf_puts(b, "\"tok_embeddings\"");
                    first = 0;
                }
                for (l = T->stages[s].first; l < T->stages[s].end; l++) {
                    ar_buf_printf(b, "%s\"layers.%d\"", first ? "" : ", ", l);
                    first = 0;
                }
                if (s == T->depth - 1) ar_buf_printf(b, "%s\"norm\", \"output\"", first ? "" : ", ");
                ar_buf_puts(b, "]");
            }
            ar_buf_puts(b, "]\n");
        }
        if (moe) {
            ar_buf_printf(b, "expert_parallel_degree = %d\n", T->stages[0].ep);
            ar_buf_printf(b, "expert_tensor_parallel_degree = %d\n", T->stages[0].etp);
        }
        ar_buf_puts(b, "\n[training]\n");
        ar_buf_printf(b, "local_batch_size = %ld\n", (long)T->micro_batch * T->micro_batches);
        ar_buf_printf(b, "global_batch_size = %ld\n", batch_share(T));
        ar_buf_printf(b, "seq_len = %d\n", p->setup.seq_len);
        ar_buf_puts(b, "\n[activation_checkpoint]\n");
        ar_buf_printf(b, "mode = \"%s\"\n", recompute_word(p->setup.recompute));
    }
}

/* ---- flashflex: per-pipeline TP lists, layer partitions and batches ---- */
static void export_flashflex(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int t, r, s, k, pipe = 0, f;
    plan_header(x, b, "FlashFlex");
    ar_buf_puts(b, "# one pipeline per replica of every template, in this order:\n");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        for (r = 0; r < T->replicas; r++, pipe++) {
            ar_buf_printf(b, "#   pipeline %d = template %d replica %d, ranks by stage:", pipe, t, r);
            for (s = 0; s < T->depth; s++) {
                ar_buf_puts(b, s ? " |" : "");
                for (k = 0; k < T->stages[s].tp; k++) ar_buf_printf(b, " %d", slot_rank(x, t, r, s, k));
            }
            ar_buf_puts(b, "\n");
        }
    }
    ar_buf_puts(b, "--hetero_configs \"[");
    f = 1;
    for (t = 0; t < p->ntemplates; t++)
        for (r = 0; r < p->t[t].replicas; r++) {
            ar_buf_puts(b, f ? "[" : ", [");
            f = 0;
            for (s = 0; s < p->t[t].depth; s++) ar_buf_printf(b, "%s%d", s ? ", " : "", p->t[t].stages[s].tp);
            ar_buf_puts(b, "]");
        }
    ar_buf_puts(b, "]\" --layer_partitions \"[");
    f = 1;
    for (t = 0; t < p->ntemplates; t++)
        for (r = 0; r < p->t[t].replicas; r++) {
            ar_buf_puts(b, f ? "[" : ", [");
            f = 0;
            for (s = 0; s < p->t[t].depth; s++)
                ar_buf_printf(b, "%s%d", s ? ", " : "", p->t[t].stages[s].end - p->t[t].stages[s].first);
            ar_buf_puts(b, "]");
        }
    ar_buf_puts(b, "]\" --pipeline_batches \"[");
    f = 1;
    for (t = 0; t < p->ntemplates; t++)
        for (r = 0; r < p->t[t].replicas; r++) {
            ar_buf_printf(b, "%s%ld", f ? "" : ", ", (long)p->t[t].micro_batch * p->t[t].micro_batches);
            f = 0;
        }
    ar_buf_puts(b, "]\" --micro_batch_sizes \"[");
    f = 1;
    for (t = 0; t < p->ntemplates; t++)
        for (r = 0; r < p->t[t].replicas; r++) {
            ar_buf_printf(b, "%s%d", f ? "" : ", ", p->t[t].micro_batch);
            f = 0;
        }
    ar_buf_printf(b, "]\" --global_batch_size %d --seq_length %d\n", p->setup.global_batch, p->setup.seq_len);
}

/* ---- sailor: {"pipeline_list": [...], "mbs", "iter_time", ...} ---- */

/* Sailor's name of a GPU type: its profiles call the 11 GB RTX 2080 Ti
 * machines "RTX-2080" (the catalog's RTX-2080Ti); others are the same. */
static const char *sailor_type_name(const arachne_plan *p, int type)
{
    const char *n = ar_plan_type_name(p, type);
    return strcmp(n, "RTX-2080Ti") == 0 ? "RTX-2080" : n;
}

static void export_sailor(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int used[AR_MAX_TYPES];
    int t, s, r, l, i, f;
    memset(used, 0, sizeof used);
    for (i = 0; i < p->nranks; i++) {
        const ar_rank *R = &p->ranks[i];
        int ty = p->t[R->tmpl].stages[R->stage].type;
        if (ty >= 0 && ty < AR_MAX_TYPES) used[ty]++;
    }
    ar_buf_puts(b, "{\"pipeline_list\": [");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        ar_buf_printf(b, "%s{\"num_stages\": %d, \"layers_per_stage\": [", t ? ", " : "", T->depth);
        for (s = 0; s < T->depth; s++) {
            const ar_stage *S = &T->stages[s];
            ar_buf_puts(b, s ? ", [" : "[");
            f = 1;
            if (s == 0) {
                ar_buf_puts(b, "0");
                f = 0;
            }
            for (l = S->first; l < S->end; l++) {
                ar_buf_printf(b, "%s%d", f ? "" : ", ", l + 1);
                f = 0;
            }
            if (s == T->depth - 1) ar_buf_printf(b, "%s%d", f ? "" : ", ", x->blocks + 1);
            ar_buf_puts(b, "]");
        }
        ar_buf_puts(b, "], \"tmp_per_stage\": [");
        for (s = 0; s < T->depth; s++) {
            ar_buf_puts(b, s ? ", [" : "[");
            for (r = 0; r < T->replicas; r++) {
                ar_buf_puts(b, r ? ", [" : "[");
                ar_json_put_string(b, sailor_type_name(p, T->stages[s].type));
                ar_buf_printf(b, ", %d, \"zone0\"]", T->stages[s].tp);
            }
            ar_buf_puts(b, "]");
        }
        ar_buf_puts(b, "], \"dp\": [");
        for (s = 0; s < T->depth; s++) ar_buf_printf(b, "%s%d", s ? ", " : "", T->replicas);
        ar_buf_printf(b, "], \"mbs\": %d, \"micro_batches\": %d}", T->micro_batch, T->micro_batches);
    }
    ar_buf_printf(b, "], \"mbs\": %d, \"iter_time\": ", p->t[0].micro_batch);
    ar_json_put_number(b, p->iteration_s);
    ar_buf_puts(b, ", \"estimated_throughput\": ");
    ar_json_put_number(b, p->iter_per_s);
    ar_buf_puts(b, ", \"used_gpus\": {");
    f = 1;
    for (i = 0; i < p->ntypes && i < AR_MAX_TYPES; i++) {
        if (!used[i]) continue;
        ar_buf_puts(b, f ? "" : ", ");
        ar_json_put_string(b, sailor_type_name(p, i));
        ar_buf_printf(b, ": %d", used[i]);
        f = 0;
    }
    ar_buf_puts(b, "}}\n");
}

int arachne_plan_export(const arachne_plan *p, int format, char *buf, size_t cap, size_t *needed)
{
    xctx x;
    ar_buf b;
    int st;
    if (needed) *needed = 0;
    if (!p) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_export: NULL plan");
    if (format < ARACHNE_EXPORT_RANKS || format > ARACHNE_EXPORT_SAILOR)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_export: unknown format %d (valid 0..%d)", format,
                        ARACHNE_EXPORT_SAILOR);
    st = xctx_init(&x, p);
    if (st) {
        xctx_free(&x);
        return st;
    }
    ar_buf_init(&b);
    switch (format) {
    case ARACHNE_EXPORT_RANKS: export_ranks(&x, &b); break;
    case ARACHNE_EXPORT_MEGATRON: export_megatron(&x, &b); break;
    case ARACHNE_EXPORT_TORCHTITAN: export_torchtitan(&x, &b); break;
    case ARACHNE_EXPORT_FLASHFLEX: export_flashflex(&x, &b); break;
    default: export_sailor(&x, &b); break;
    }
    xctx_free(&x);
    st = ar_buf_status(&b);
    if (!st) st = ar_copy_out(buf, cap, needed, b.data ? b.data : "", b.len);
    ar_buf_free(&b);
    return st;
}
