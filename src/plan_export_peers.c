/* plan_export_peers.c -- the exports for heterogeneous-pipeline runtimes:
 * FlashFlex (HexiScale) arguments, checked against FlashFlex's
 * llama/arguments.py, and Sailor's plan JSON as its simulator and runtime
 * read it (pipeline_list; a replica is [[[gpu, gpus_per_node, zone]], tp]). */
#include <string.h>

#include "plan_export.h"

/* ---- flashflex: per-pipeline TP lists, layer partitions and batches ---- */

static void flashflex_notes(const xctx *x, ar_buf *b, int any_tp)
{
    const arachne_model *m = x->model;
    const arachne_plan *p = x->p;
    int t;
    if (m && m->experts > 0)
        ar_buf_puts(b, "# NOTE: FlashFlex trains dense Llama models; the plan's MoE layers cannot run there.\n");
    if (m && !m->mla && m->kv_heads != m->heads)
        ar_buf_printf(b, "# NOTE: FlashFlex's Llama config has no key/value head count: it runs %d KV heads, the "
                         "plan %d (more attention memory and time than priced).\n", m->heads, m->kv_heads);
    if (m)
        ar_buf_printf(b, "# NOTE: FlashFlex takes no FFN width flag: its Llama config derives it from "
                         "--hidden_size; the plan's is %d.\n", m->ffn);
    if (p->setup.recompute == AR_RECOMPUTE_SELECTIVE)
        ar_buf_puts(b, "# NOTE: FlashFlex has no selective recomputation: without --checkpoint-layers it keeps "
                       "every activation (more memory than priced), with it it recomputes whole layers (slower).\n");
    if (p->setup.seq_len != 4096)
        ar_buf_printf(b, "# NOTE: FlashFlex sets the sequence length to 4096 whatever --seq_length says "
                         "(hexiscale/process_args.py); the plan's is %d.\n", p->setup.seq_len);
    if (p->setup.dist_optimizer)
        ar_buf_puts(b, "# NOTE: the plan shards optimizer state (ZeRO-1); FlashFlex's closest is "
                       "--default_dp_type zero2, which also shards gradients (less memory than priced).\n");
    if (!any_tp) return;
    for (t = 0; t < p->ntemplates; t++)
        if (!ar_xuniform(&p->t[t], 0)) {
            ar_buf_puts(b, "# per-stage TP: FlashFlex sends activations between stages of different TP itself\n");
            break;
        }
}

void ar_export_flashflex(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int t, r, s, k, pipe = 0, f, any_tp = 0;
    ar_xplan_header(x, b, "FlashFlex");
    ar_buf_puts(b, "# target: " AR_FLASHFLEX_VERSION " (llama/arguments.py); append to llama_train.py's launch\n");
    ar_xassumptions(x, b);
    ar_buf_puts(b, "# one pipeline per replica of every template, in this order (--pp_layouts names the ranks):\n");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        for (s = 0; s < T->depth; s++) any_tp |= T->stages[s].tp > 1;
        for (r = 0; r < T->replicas; r++, pipe++) {
            ar_buf_printf(b, "#   pipeline %d = template %d replica %d, ranks by stage:", pipe, t, r);
            for (s = 0; s < T->depth; s++) {
                ar_buf_puts(b, s ? " |" : "");
                for (k = 0; k < T->stages[s].tp; k++) ar_buf_printf(b, " %d", ar_xslot_rank(x, t, r, s, k));
            }
            ar_buf_puts(b, "\n");
        }
    }
    ar_xprecision_note(x, b, "FlashFlex");
    ar_xlayer_notes(x, b, "FlashFlex");
    flashflex_notes(x, b, any_tp);
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
    /* which ranks run each stage: without it FlashFlex numbers them pipeline
     * by pipeline, stage by stage, which is not the plan's order (a plan
     * from `price --parallel` numbers them Megatron's way) */
    ar_buf_puts(b, "]\" --pp_layouts \"[");
    f = 1;
    for (t = 0; t < p->ntemplates; t++)
        for (r = 0; r < p->t[t].replicas; r++) {
            ar_buf_puts(b, f ? "[" : ", [");
            f = 0;
            for (s = 0; s < p->t[t].depth; s++) {
                ar_buf_puts(b, s ? ", [" : "[");
                for (k = 0; k < p->t[t].stages[s].tp; k++)
                    ar_buf_printf(b, "%s%d", k ? ", " : "", ar_xslot_rank(x, t, r, s, k));
                ar_buf_puts(b, "]");
            }
            ar_buf_puts(b, "]");
        }
    /* batch per pipeline and micro-batches per pipeline (micro-batch = batch / chunks) */
    ar_buf_puts(b, "]\" --global_bsz_size");
    for (t = 0; t < p->ntemplates; t++)
        for (r = 0; r < p->t[t].replicas; r++)
            ar_buf_printf(b, " %ld", (long)p->t[t].micro_batch * p->t[t].micro_batches);
    ar_buf_puts(b, " --chunks");
    for (t = 0; t < p->ntemplates; t++)
        for (r = 0; r < p->t[t].replicas; r++) ar_buf_printf(b, " %d", p->t[t].micro_batches);
    ar_buf_printf(b, " --total-layer-num %d --seq_length %d", x->blocks, p->setup.seq_len);
    if (x->model)
        ar_buf_printf(b, " --overwrite_config 1 --hidden_size %d --num_hidden_layers %d --num_attention_heads %d "
                         "--vocab_size %d",
                      x->model->hidden, x->model->blocks, x->model->heads, x->model->vocab);
    ar_buf_printf(b, " --mixed_precision bf16 --default_dp_type %s --pipeline-type 1F1B",
                  p->setup.dist_optimizer ? "zero2" : "ddp");
    if (any_tp) ar_buf_puts(b, " --seq-parallel");
    if (p->setup.recompute == AR_RECOMPUTE_FULL) ar_buf_puts(b, " --checkpoint-layers");
    ar_buf_puts(b, "\n");
}

/* ---- sailor: {"pipeline_list": [...], "mbs", "iter_time", ...} ---- */

/* Sailor's name of a GPU type: its profiles call the 11 GB RTX 2080 Ti
 * machines "RTX-2080" (the catalog's RTX-2080Ti); others are the same. */
static const char *sailor_type_name(const arachne_plan *p, int type)
{
    const char *n = ar_plan_type_name(p, type);
    return strcmp(n, "RTX-2080Ti") == 0 ? "RTX-2080" : n;
}

/* GPUs per node of the node running (t, r, s); 0 when unknown. */
static int node_gpus(const xctx *x, int t, int r, int s)
{
    int node = ar_xslot(x, t, r, s, 0)->node;
    if (!x->cluster || node < 0 || node >= x->cluster->nnodes) return 0;
    return x->cluster->nodes[node].gpus;
}

int ar_export_sailor(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int used[AR_MAX_TYPES];
    int t, s, r, l, i, f;
    for (t = 1; t < p->ntemplates; t++)
        if (p->t[t].micro_batch != p->t[0].micro_batch)
            return ar_error(ARACHNE_E_UNSUPPORTED, "sailor export: template %d uses micro-batch %d and template 0 "
                            "micro-batch %d; a Sailor plan has one micro-batch size",
                            t, p->t[t].micro_batch, p->t[0].micro_batch);
    for (t = 0; t < p->ntemplates; t++)
        for (s = 0; s < p->t[t].depth; s++)
            for (r = 0; r < p->t[t].replicas; r++)
                if (node_gpus(x, t, r, s) < 1)
                    return ar_error(ARACHNE_E_UNSUPPORTED, "sailor export: the plan's cluster is unknown, so the "
                                    "GPUs per node Sailor needs cannot be given");
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
                ar_buf_puts(b, r ? ", [[[" : "[[[");
                ar_json_put_string(b, sailor_type_name(p, T->stages[s].type));
                ar_buf_printf(b, ", %d, \"" AR_SAILOR_ZONE "\"]], %d]", node_gpus(x, t, r, s), T->stages[s].tp);
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
    return ARACHNE_OK;
}
