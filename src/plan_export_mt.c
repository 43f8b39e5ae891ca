/* plan_export_mt.c -- the exports for one-structure-per-job launchers:
 * Megatron-LM arguments (Megatron-Core core_v0.15.0, with the layout
 * fallback for core_v0.12.0), torchtitan's TOML job config (v0.2.2 and
 * older) and torchtitan's --section.option overrides (after the Feb-2026
 * config refactor).  Every flag printed exists in the named version
 * (tests/data/flags/); what the target cannot express is a NOTE line. */
#include <string.h>

#include "plan_export.h"

/* ---- megatron ---- */

/* The model-shape flags the price assumes (the plan's embedded model). */
static void megatron_model_flags(const xctx *x, ar_buf *b)
{
    const arachne_model *m = x->model;
    int s = x->p->setup.seq_len;
    if (!m) {
        ar_buf_printf(b, "--num-layers %d --seq-length %d", x->blocks, s);
        return;
    }
    ar_buf_printf(b, "--num-layers %d --hidden-size %d --ffn-hidden-size %d --num-attention-heads %d", m->blocks,
                  m->hidden, m->ffn > 0 ? m->ffn : m->expert_ffn, m->heads);
    if (m->pattern[0]) {
        /* Megatron's hybrid stack (pretrain_mamba.py) reads the same symbols */
        ar_buf_printf(b, " --hybrid-override-pattern %s", m->pattern);
        if (m->mamba_heads > 0)
            ar_buf_printf(b, " --mamba-num-heads %d --mamba-head-dim %d --mamba-state-dim %d --mamba-num-groups %d",
                          m->mamba_heads, m->mamba_head_dim, m->mamba_state, m->mamba_groups);
    }
    if (m->mla) {
        ar_buf_puts(b, " --multi-latent-attention");
        if (m->q_lora_rank > 0) ar_buf_printf(b, " --q-lora-rank %d", m->q_lora_rank);
        ar_buf_printf(b, " --kv-lora-rank %d --qk-head-dim %d --qk-pos-emb-head-dim %d --v-head-dim %d",
                      m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim, m->v_head_dim);
    } else {
        if (m->kv_heads != m->heads) ar_buf_printf(b, " --group-query-attention --num-query-groups %d", m->kv_heads);
        ar_buf_printf(b, " --kv-channels %d", m->head_dim);
    }
    if (m->qk_norm) ar_buf_puts(b, " --qk-layernorm");
    if (m->gated_mlp) ar_buf_puts(b, " --swiglu");
    if (!m->tied_embeddings) ar_buf_puts(b, " --untie-embeddings-and-output-weights");
    ar_buf_printf(b, " --vocab-size %d --seq-length %d --max-position-embeddings %d", m->vocab, s, s);
    if (m->experts > 0) {
        ar_buf_printf(b, " --num-experts %d --moe-router-topk %d --moe-ffn-hidden-size %d", m->experts, m->top_k,
                      m->expert_ffn);
        if (m->shared_experts > 0)
            ar_buf_printf(b, " --moe-shared-expert-intermediate-size %d", m->shared_experts * m->expert_ffn);
        if (m->dense_prefix > 0) /* 0 in a hybrid model: its pattern places the MoE layers */
            ar_buf_printf(b, " --moe-layer-freq \"([0]*%d+[1]*%d)\"", m->dense_prefix, m->blocks - m->dense_prefix);
    }
}

/* Uneven splits for releases without --pipeline-model-parallel-layout:
 * first and last stage given, the middle stages even.  0 when that cannot
 * express the template's split. */
static int megatron_first_last(const ar_template *T, int *first, int *last)
{
    int s, mid;
    *first = T->stages[0].end - T->stages[0].first;
    *last = T->stages[T->depth - 1].end - T->stages[T->depth - 1].first;
    if (T->depth < 2) return 0;
    mid = T->depth > 2 ? T->stages[1].end - T->stages[1].first : 0;
    for (s = 1; s < T->depth - 1; s++)
        if (T->stages[s].end - T->stages[s].first != mid) return 0;
    return 1;
}

void ar_export_megatron(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int t, s, l;
    ar_xplan_header(x, b, "Megatron-LM");
    ar_buf_puts(b, "# target: " AR_MEGATRON_VERSION " (megatron/training/arguments.py); pretrain_gpt.py takes each "
                   "line below plus your data and tokenizer flags\n");
    ar_xassumptions(x, b);
    ar_xprecision_note(x, b, "Megatron-LM");
    ar_xmulti_template_note(x, b, "Megatron-LM");
    if (!x->model) ar_buf_puts(b, "# NOTE: the plan embeds no model: add the model-shape flags yourself\n");
    ar_xlatent_note(x, b, "Megatron-LM " AR_MEGATRON_VERSION);
    if (x->model && x->model->pattern[0])
        ar_buf_puts(b, "# NOTE: hybrid model: run pretrain_mamba.py (Megatron's hybrid stack) instead of pretrain_gpt.py; "
                       "it reads --hybrid-override-pattern. The activation is not recorded in the plan: add "
                       "--squared-relu for Nemotron-H models. Check that your release splits the pattern over the "
                       "pipeline stages as the layer ranges below do.\n");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        int moe = ar_xmoe(x, T), first = 0, last = 0, tp = T->stages[0].tp;
        ar_buf_puts(b, "\n");
        ar_xtemplate_header(x, b, t);
        if (!ar_xuniform(T, 0)) {
            ar_buf_puts(b, "# NOTE: Megatron-LM cannot express this template: its stages use TP ");
            ar_xstage_list(b, T, 0);
            ar_buf_printf(b, " and Megatron runs one TP degree for every stage. The line below uses TP %d "
                             "everywhere and does NOT reproduce the plan; use the 'ranks' or 'flashflex' export "
                             "with a runtime that takes per-stage TP.\n", tp);
        } else {
            ar_xjob_rank_map(x, b, t, 0, "Megatron's tp-pp-dp (--use-tp-pp-dp-mapping)");
        }
        if (moe && !ar_xuniform(T, 1)) {
            ar_buf_puts(b, "# NOTE: Megatron-LM cannot express per-stage EP (");
            ar_xstage_list(b, T, 1);
            ar_buf_printf(b, "); the line below uses EP %d everywhere.\n", T->stages[0].ep);
        }
        if (moe && !ar_xuniform(T, 2)) {
            ar_buf_puts(b, "# NOTE: Megatron-LM cannot express per-stage expert TP (");
            ar_xstage_list(b, T, 2);
            ar_buf_printf(b, "); the line below uses ETP %d everywhere.\n", T->stages[0].etp);
        }
        if (T->fsdp > 1)
            ar_buf_printf(b, "# NOTE: the plan shards weights, gradients and optimizer state over groups of %d "
                             "data-parallel ranks (FSDP); this line keeps Megatron's distributed optimizer (ZeRO-1). "
                             "Megatron-FSDP (--use-megatron-fsdp --data-parallel-sharding-strategy "
                             "optim_grads_params, newer releases) shards over the whole data-parallel group.\n",
                          T->fsdp);
        megatron_model_flags(x, b);
        ar_buf_printf(b, " --tensor-model-parallel-size %d", tp);
        if (tp > 1) ar_buf_puts(b, " --sequence-parallel");
        /* ring attention (p2p), as priced */
        if (T->cp > 1) ar_buf_printf(b, " --context-parallel-size %d --cp-comm-type p2p", T->cp);
        ar_buf_printf(b, " --pipeline-model-parallel-size %d --use-tp-pp-dp-mapping --micro-batch-size %d "
                         "--global-batch-size %ld --bf16",
                      T->depth, T->micro_batch, ar_xshare(T));
        if (T->depth > 1) {
            /* interleaved: one segment per model chunk in chunk-major order
             * (segment k runs on pipeline rank k mod pp); Megatron takes the
             * virtual stages per rank from the segment count */
            int v = T->vp > 1 ? T->vp : 1, c, fi, en;
            ar_buf_puts(b, " --pipeline-model-parallel-layout \"E");
            for (c = 0; c < v; c++)
                for (s = 0; s < T->depth; s++) {
                    if (s || c) ar_buf_puts(b, "|");
                    ar_vp_chunk_range(T, s, c, &fi, &en);
                    for (l = fi; l < en; l++) ar_buf_puts(b, "t");
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
        if (p->setup.overlap_grad_reduce) ar_buf_puts(b, " --overlap-grad-reduce");
        if (p->setup.overlap_param_gather && p->setup.dist_optimizer) ar_buf_puts(b, " --overlap-param-gather");
        if (p->setup.tp_comm_overlap && tp > 1) ar_buf_puts(b, " --tp-comm-overlap");
        ar_buf_puts(b, "\n");
        if (T->depth > 1 && T->vp > 1) {
            int fi, en, c, even = 1, n0;
            ar_vp_chunk_range(T, 0, 0, &fi, &en);
            n0 = en - fi;
            for (c = 0; c < T->vp; c++)
                for (s = 0; s < T->depth; s++) {
                    ar_vp_chunk_range(T, s, c, &fi, &en);
                    if (en - fi != n0) even = 0;
                }
            if (even)
                ar_buf_printf(b, "# releases without --pipeline-model-parallel-layout (" AR_MEGATRON_OLD_VERSION
                                 " and older): replace it with --num-layers-per-virtual-pipeline-stage %d "
                                 "(interleaved 1F1B, %d chunks per stage)\n", n0, T->vp);
            else
                ar_buf_printf(b, "# releases without --pipeline-model-parallel-layout (" AR_MEGATRON_OLD_VERSION
                                 " and older) cannot express this interleaved split: its %d chunks per stage differ "
                                 "in size and --num-layers-per-virtual-pipeline-stage takes one\n", T->vp);
        } else if (T->depth > 1) {
            if (megatron_first_last(T, &first, &last))
                ar_buf_printf(b, "# releases without --pipeline-model-parallel-layout (" AR_MEGATRON_OLD_VERSION
                                 " and older): replace it with --decoder-first-pipeline-num-layers %d "
                                 "--decoder-last-pipeline-num-layers %d\n",
                              first, last);
            else {
                ar_buf_puts(b, "# releases without --pipeline-model-parallel-layout (" AR_MEGATRON_OLD_VERSION
                               " and older) cannot express this split: its middle stages hold ");
                for (s = 1; s < T->depth - 1; s++)
                    ar_buf_printf(b, "%s%d", s > 1 ? "," : "", T->stages[s].end - T->stages[s].first);
                ar_buf_puts(b, " blocks and --decoder-first/last-pipeline-num-layers split the middle evenly\n");
            }
        }
    }
}

/* ---- torchtitan ---- */

/* module_fqns_per_model_part = [...] with torchtitan's Llama module names. */
static void torchtitan_fqns(const ar_template *T, ar_buf *b)
{
    int s, l, c, v = T->vp > 1 ? T->vp : 1;
    ar_buf_puts(b, "[");
    /* interleaved: one model part per chunk, chunk-major; torchtitan's
     * looped placement puts part k on pipeline rank k mod pp */
    for (c = 0; c < v; c++)
        for (s = 0; s < T->depth; s++) {
            int first = 1, fi, en;
            ar_buf_puts(b, s || c ? ", [" : "[");
            if (s == 0 && c == 0) {
                ar_buf_puts(b, "\"tok_embeddings\"");
                first = 0;
            }
            ar_vp_chunk_range(T, s, c, &fi, &en);
            for (l = fi; l < en; l++) {
                ar_buf_printf(b, "%s\"layers.%d\"", first ? "" : ", ", l);
                first = 0;
            }
            if (s == T->depth - 1 && c == v - 1) ar_buf_printf(b, "%s\"norm\", \"output\"", first ? "" : ", ");
            ar_buf_puts(b, "]");
        }
    ar_buf_puts(b, "]");
}

/* torchtitan's schedule name: 1F1B, or Interleaved1F1B for vp chunks */
static const char *torchtitan_schedule(const ar_template *T)
{
    return T->vp > 1 && T->depth > 1 ? "Interleaved1F1B" : "1F1B";
}

/* NOTE lines shared by both torchtitan forms. */
/* torchtitan's data-parallel degrees of a template: an FSDP plan (fsdp = F)
 * shards over groups of F and replicates over replicas / F (HSDP); a ZeRO-1
 * plan maps to FSDP over all replicas (its closest, noted above); else DDP. */
static void torchtitan_dp(const arachne_plan *p, const ar_template *T, int *replicate, int *shard)
{
    if (T->fsdp > 1) {
        *shard = T->fsdp;
        *replicate = T->replicas / T->fsdp;
    } else if (p->setup.dist_optimizer) {
        *shard = T->replicas;
        *replicate = 1;
    } else {
        *shard = 1;
        *replicate = T->replicas;
    }
}

static void torchtitan_notes(const xctx *x, ar_buf *b, int t, int has_etp)
{
    const ar_template *T = &x->p->t[t];
    int moe = ar_xmoe(x, T);
    if (!ar_xuniform(T, 0)) {
        ar_buf_puts(b, "# NOTE: torchtitan cannot express this template: its stages use TP ");
        ar_xstage_list(b, T, 0);
        ar_buf_printf(b, " and torchtitan runs one tensor_parallel_degree per job. tensor_parallel_degree = "
                         "%d below does NOT reproduce the plan.\n", T->stages[0].tp);
    } else {
        ar_xjob_rank_map(x, b, t, 1, "torchtitan's device mesh (pp outermost, then dp, tp innermost)");
    }
    if (moe && (!ar_xuniform(T, 1) || !ar_xuniform(T, 2)))
        ar_buf_puts(b, "# NOTE: the stages use different expert tilings; torchtitan takes one per job "
                       "(stage 0's below).\n");
    if (moe && !has_etp && T->stages[0].etp > 1)
        ar_buf_printf(b, "# NOTE: this torchtitan has no expert tensor parallel degree (the plan uses ETP %d): "
                         "its experts are sharded over EP and FSDP instead.\n", T->stages[0].etp);
    else if (moe && has_etp && T->stages[0].ep == 1 && T->stages[0].tp > 1 && T->stages[0].etp != T->stages[0].tp)
        ar_buf_printf(b, "# NOTE: with EP 1 torchtitan shards the experts over TP (%d; its expert tensor parallel "
                         "degree has no effect then), the plan keeps them at ETP %d: more expert memory per GPU "
                         "and other traffic than it runs.\n", T->stages[0].tp, T->stages[0].etp);
    else if (moe && has_etp && T->stages[0].etp != 1 && T->stages[0].etp != T->stages[0].tp)
        ar_buf_printf(b, "# NOTE: torchtitan takes an expert tensor parallel degree of 1 or the TP degree only; "
                         "the plan's ETP %d (TP %d) is refused at start.\n", T->stages[0].etp, T->stages[0].tp);
    if (x->p->setup.dist_optimizer && T->fsdp <= 1)
        ar_buf_puts(b, "# NOTE: the plan shards optimizer state (ZeRO-1); torchtitan's closest is FSDP "
                       "(data_parallel_shard_degree), which also shards weights and gradients: less memory than "
                       "priced, plus weight all-gathers the price does not include.\n");
    if (x->p->setup.tp_comm_overlap && T->stages[0].tp > 1)
        ar_buf_puts(b, "# NOTE: the price assumes TP communication overlapped with the GEMMs; torchtitan does that "
                       "only with async tensor parallelism under torch.compile (not set below).\n");
    if (!x->p->setup.overlap_grad_reduce)
        ar_buf_puts(b, "# NOTE: the price charges the gradient reduction after the backward; torchtitan's DDP/FSDP "
                       "overlap it, so the run can only be faster.\n");
    if (x->model && x->model->experts > 0)
        ar_buf_puts(b, "# NOTE: module names are torchtitan's Llama/DeepSeek layout (tok_embeddings, layers.N, norm, "
                       "output); check them against your model.\n");
}

void ar_export_torchtitan_toml(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int t;
    ar_xplan_header(x, b, "torchtitan");
    ar_buf_puts(b, "# target: " AR_TORCHTITAN_TOML_VERSION " and older (TOML job files; the Feb-2026 refactor "
                   "removed them: use --format torchtitan-cli for newer torchtitan)\n");
    ar_buf_puts(b, "# one TOML document per template (save each as its own job config); they are separated by\n"
                   "# '# ---- template N ----' lines. Sequence parallelism is on with TP in torchtitan, as priced.\n");
    ar_xassumptions(x, b);
    ar_xprecision_note(x, b, "torchtitan");
    ar_xmulti_template_note(x, b, "torchtitan");
    ar_xlayer_notes(x, b, "torchtitan");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        ar_buf_printf(b, "\n# ---- template %d ----\n", t);
        ar_xtemplate_header(x, b, t);
        int rep, shard;
        torchtitan_notes(x, b, t, 1);
        ar_buf_puts(b, "[parallelism]\n");
        torchtitan_dp(p, T, &rep, &shard);
        ar_buf_printf(b, "data_parallel_replicate_degree = %d\n", rep);
        ar_buf_printf(b, "data_parallel_shard_degree = %d\n", shard);
        ar_buf_printf(b, "tensor_parallel_degree = %d\n", T->stages[0].tp);
        if (T->cp > 1) ar_buf_printf(b, "context_parallel_degree = %d\n", T->cp);
        ar_buf_printf(b, "pipeline_parallel_degree = %d\n", T->depth);
        ar_buf_printf(b, "pipeline_parallel_schedule = \"%s\"\n", torchtitan_schedule(T));
        ar_buf_printf(b, "pipeline_parallel_microbatch_size = %d\n", T->micro_batch);
        if (T->depth > 1) {
            ar_buf_puts(b, "module_fqns_per_model_part = ");
            torchtitan_fqns(T, b);
            ar_buf_puts(b, "\n");
        }
        if (ar_xmoe(x, T)) {
            ar_buf_printf(b, "expert_parallel_degree = %d\n", T->stages[0].ep);
            ar_buf_printf(b, "expert_tensor_parallel_degree = %d\n", T->stages[0].etp);
        }
        ar_buf_puts(b, "\n[training]\n");
        /* a pipeline splits one replica's samples into micro-batches; without
         * one, torchtitan runs local_batch_size at once and accumulates
         * gradients over global / (local x data-parallel degree) steps */
        ar_buf_printf(b, "local_batch_size = %ld\n",
                      T->depth > 1 ? (long)T->micro_batch * T->micro_batches : (long)T->micro_batch);
        ar_buf_printf(b, "global_batch_size = %ld\n", ar_xshare(T));
        ar_buf_printf(b, "seq_len = %d\n", p->setup.seq_len);
        ar_buf_puts(b, "mixed_precision_param = \"bfloat16\"\n");
        ar_buf_puts(b, "\n[activation_checkpoint]\n");
        ar_buf_printf(b, "mode = \"%s\"\n", ar_recompute_name(p->setup.recompute));
        /* "op": per-op selective AC (what is priced); the default "2" means every 2nd layer in full */
        if (p->setup.recompute == AR_RECOMPUTE_SELECTIVE) ar_buf_puts(b, "selective_ac_option = \"op\"\n");
    }
}

void ar_export_torchtitan_cli(const xctx *x, ar_buf *b)
{
    const arachne_plan *p = x->p;
    int t;
    long tok;
    ar_xplan_header(x, b, "torchtitan");
    ar_buf_puts(b, "# target: " AR_TORCHTITAN_CLI_VERSION "; append each line to your recipe's launch, e.g.\n"
                   "#   MODULE=torchtitan_recipes.llama3 CONFIG=llama3_8b ./run_train.sh <line>\n");
    ar_xassumptions(x, b);
    ar_buf_printf(b, "# activation checkpointing: the recipe's activation_checkpoint must be %s\n",
                  p->setup.recompute == AR_RECOMPUTE_NONE   ? "None"
                  : p->setup.recompute == AR_RECOMPUTE_FULL ? "FullAC.Config()"
                                                            : "SelectiveAC.Config() (the default; per-op)");
    ar_buf_puts(b, "# batch in tokens: num_tokens_per_microbatch_per_dp_rank = micro-batch x seq_len; "
                   "num_tokens_per_train_step = the template's batch share x seq_len (no gradient accumulation); "
                   "sequence parallelism stays on (enable_sequence_parallel defaults to true), as priced\n");
    ar_xprecision_note(x, b, "torchtitan");
    ar_xmulti_template_note(x, b, "torchtitan");
    ar_xlayer_notes(x, b, "torchtitan");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        ar_buf_printf(b, "\n# ---- template %d ----\n", t);
        int rep, shard;
        ar_xtemplate_header(x, b, t);
        torchtitan_notes(x, b, t, 0);
        torchtitan_dp(p, T, &rep, &shard);
        if (T->depth > 1) {
            /* a list of lists: set in the recipe (Python), not on the command line */
            ar_buf_puts(b, "# in the recipe: config.parallelism.module_fqns_per_model_part = ");
            torchtitan_fqns(T, b);
            ar_buf_puts(b, "\n");
        }
        ar_buf_printf(b, "--parallelism.data_parallel_replicate_degree %d --parallelism.data_parallel_shard_degree %d "
                         "--parallelism.tensor_parallel_degree %d --parallelism.pipeline_parallel_degree %d "
                         "--parallelism.pipeline_parallel_schedule %s --parallelism.num_pp_microbatches %d",
                      rep, shard,
                      T->stages[0].tp, T->depth, torchtitan_schedule(T), T->micro_batches);
        if (T->cp > 1) ar_buf_printf(b, " --parallelism.context_parallel_degree %d", T->cp);
        if (ar_xmoe(x, T)) ar_buf_printf(b, " --parallelism.expert_parallel_degree %d", T->stages[0].ep);
        tok = (long)T->micro_batch * p->setup.seq_len;
        ar_buf_printf(b, " --training.num_tokens_per_microbatch_per_dp_rank %ld --training.num_tokens_per_train_step "
                         "%ld --training.max_context_length %d --training.mixed_precision_param bfloat16\n",
                      tok, ar_xshare(T) * p->setup.seq_len, p->setup.seq_len);
    }
}
