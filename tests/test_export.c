/* test_export.c -- launcher exports: the per-rank description covers every
 * used GPU once with node-local TP groups and consistent process groups;
 * Megatron, torchtitan, FlashFlex and Sailor outputs carry the plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"
#include "fixture.h"
#include "plan_fixture.h"

/* Exports into a malloc'd string (NULL on failure). */
static char *export_str(const arachne_plan *p, int format)
{
    size_t need = 0;
    char *buf;
    if (arachne_plan_export(p, format, NULL, 0, &need) != ARACHNE_E_BUFFER_TOO_SMALL || need == 0) return NULL;
    buf = malloc(need);
    if (!buf) return NULL;
    if (arachne_plan_export(p, format, buf, need, NULL) != ARACHNE_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int int_at(const ar_json *o, const char *key)
{
    const ar_json *v = ar_json_get(o, key);
    return v && v->type == AR_JSON_NUMBER ? (int)v->number : -999;
}

static int list_has(const ar_json *list, int v)
{
    size_t i;
    for (i = 0; list && i < list->count; i++)
        if ((int)list->items[i]->number == v) return 1;
    return 0;
}

/* The checks every `ranks` export must pass, for any valid plan. */
static int check_ranks_export(const arachne_plan *p, const arachne_cluster *c, const char *text, char *why,
                              size_t cap)
{
    ar_json *objs[256];
    int used[64];
    int n = 0, i, k;
    const char *line = text;
    memset(used, 0, sizeof used);
    while (*line) {
        const char *nl = strchr(line, '\n');
        if (!nl || n >= 256) return snprintf(why, cap, "line %d: no newline / too many lines", n + 1), 1;
        if (ar_json_parse(&objs[n], line, (size_t)(nl - line), "ranks")) {
            snprintf(why, cap, "line %d: %s", n + 1, arachne_last_error());
            goto fail;
        }
        n++;
        line = nl + 1;
    }
    if (n != p->nranks) { snprintf(why, cap, "%d lines for %d ranks", n, p->nranks); goto fail; }
    for (i = 0; i < n; i++) {
        const ar_json *o = objs[i], *tpg = ar_json_get(o, "tp_group"), *ppg = ar_json_get(o, "pp_group"),
                      *dpg = ar_json_get(o, "dp_group");
        int node = int_at(o, "node"), gpu = int_at(o, "local_gpu"), flat, g;
        if (int_at(o, "rank") != i) { snprintf(why, cap, "line %d holds rank %d", i, int_at(o, "rank")); goto fail; }
        if (node < 0 || node >= c->nnodes || gpu < 0 || gpu >= c->nodes[node].gpus) {
            snprintf(why, cap, "rank %d: node %d gpu %d not in the cluster", i, node, gpu);
            goto fail;
        }
        for (flat = 0, g = 0; g < node; g++) flat += c->nodes[g].gpus;
        flat += gpu;
        if (flat >= 64 || used[flat]++) { snprintf(why, cap, "rank %d: GPU %d:%d listed twice", i, node, gpu); goto fail; }
        if (!tpg || (int)tpg->count != int_at(o, "tp_size") || !list_has(tpg, i)) {
            snprintf(why, cap, "rank %d: tp_group does not hold tp_size ranks including itself", i);
            goto fail;
        }
        for (k = 0; k < (int)tpg->count; k++) {
            int other = (int)tpg->items[k]->number;
            if (other < 0 || other >= n || int_at(objs[other], "node") != node) {
                snprintf(why, cap, "rank %d: TP peer %d is on another node", i, other);
                goto fail;
            }
        }
        if (!ppg || !list_has(ppg, i) || !dpg || !list_has(dpg, i) ||
            (int)dpg->count != int_at(o, "dp_size")) {
            snprintf(why, cap, "rank %d: pp/dp group misses itself or has the wrong size", i);
            goto fail;
        }
        /* the memory setup the price assumes, and the FSDP group exactly in
         * FSDP templates: the template's consecutive replicas sharing the
         * rank's stage, CP rank and TP rank */
        {
            static const char *const modes[] = { "none", "selective", "full" };
            const ar_json *rc = ar_json_get(o, "recompute"), *dopt = ar_json_get(o, "dist_optimizer"),
                          *fg = ar_json_get(o, "fsdp_group");
            int tm = int_at(o, "template");
            const ar_template *T = tm >= 0 && tm < p->ntemplates ? &p->t[tm] : NULL;
            if (!T || !rc || rc->type != AR_JSON_STRING || strcmp(rc->string, modes[p->setup.recompute]) != 0 || !dopt ||
                dopt->type != AR_JSON_BOOL || dopt->boolean != p->setup.dist_optimizer) {
                snprintf(why, cap, "rank %d: template, recompute or dist_optimizer missing or not the plan's", i);
                goto fail;
            }
            if ((T->fsdp > 1) != (fg != NULL) ||
                (fg && ((int)fg->count != T->fsdp || int_at(o, "fsdp_size") != T->fsdp || !list_has(fg, i)))) {
                snprintf(why, cap, "rank %d: fsdp_group does not match the template's FSDP %d", i, T->fsdp);
                goto fail;
            }
            for (k = 0; fg && k < (int)fg->count; k++) {
                const ar_json *q = objs[(int)fg->items[k]->number];
                if (int_at(q, "template") != tm || int_at(q, "stage") != int_at(o, "stage") ||
                    int_at(q, "tp_rank") != int_at(o, "tp_rank") || int_at(q, "cp_rank") != int_at(o, "cp_rank") ||
                    int_at(q, "replica") / T->fsdp != int_at(o, "replica") / T->fsdp ||
                    !list_has(ar_json_get(q, "fsdp_group"), i)) {
                    snprintf(why, cap, "rank %d: FSDP peer %d is not its shard group's", i, (int)fg->items[k]->number);
                    goto fail;
                }
            }
        }
        /* groups are symmetric: every member lists the same group */
        for (k = 0; k < (int)ppg->count; k++) {
            int other = (int)ppg->items[k]->number;
            if (!list_has(ar_json_get(objs[other], "pp_group"), i)) {
                snprintf(why, cap, "rank %d: pp peer %d does not list it", i, other);
                goto fail;
            }
        }
        for (k = 0; k < (int)dpg->count; k++) {
            int other = (int)dpg->items[k]->number;
            if (!list_has(ar_json_get(objs[other], "dp_group"), i) ||
                int_at(objs[other], "stage") != int_at(o, "stage")) {
                snprintf(why, cap, "rank %d: dp peer %d inconsistent", i, other);
                goto fail;
            }
        }
    }
    for (i = 0; i < n; i++) ar_json_free(objs[i]);
    return 0;
fail:
    for (i = 0; i < n; i++) ar_json_free(objs[i]);
    return 1;
}

TEST(ranks_export_lists_every_gpu_once_with_node_local_tp)
{
    fx f;
    char *text, why[256];
    ASSERT_OK(fx_init(&f));
    text = export_str(&f.plan, ARACHNE_EXPORT_RANKS);
    ASSERT_MSG(text != NULL, "export failed: %s", arachne_last_error());
    if (check_ranks_export(&f.plan, f.cluster, text, why, sizeof why)) {
        free(text);
        fx_free(&f);
        ASSERT_MSG(0, "ranks export: %s", why);
    }
    /* rank 9: template 1 stage 0 (TP 4, H100), lane 0 of min TP 2 */
    ASSERT_CONTAINS(text, "{\"rank\":9,\"node\":2,\"local_gpu\":1,\"gpu_type\":\"H100\",\"template\":1,\"replica\":0,"
                          "\"stage\":0,\"tp_rank\":1,\"tp_size\":4,");
    ASSERT_CONTAINS(text, "\"tp_group\":[8,9,10,11],\"pp_group\":[8,9,12],\"dp_group\":[9]}");
    ASSERT_CONTAINS(text, "{\"rank\":5,\"node\":1,\"local_gpu\":1,");
    ASSERT_CONTAINS(text, "\"dp_group\":[1,5]}");
    free(text);
    fx_free(&f);
}

/* An FSDP template with full recomputation (the make-run plan is sharded
 * over 64 replicas): each line names the mode, the optimizer sharding and
 * its shard group, which the checks above verify rank by rank. */
TEST(ranks_export_carries_the_memory_setup_and_fsdp_groups)
{
    env e;
    arachne_plan *p = NULL;
    char *text = NULL, why[256];
    int bad;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-80:2x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
    ASSERT_OK(arachne_plan_from_parallel(&p, e.cm, "tp=2,pp=1,dp=8,mbs=1,fsdp=4"));
    text = export_str(p, ARACHNE_EXPORT_RANKS);
    if (!text) snprintf(why, sizeof why, "export failed: %s", arachne_last_error());
    bad = !text || check_ranks_export(p, e.c, text, why, sizeof why);
    if (!bad) {
        /* rank 0: replicas 0-3 of the TP-2 stage, tp rank 0 */
        bad = !strstr(text, "\"recompute\":\"full\",\"dist_optimizer\":true,\"fsdp_size\":4,\"fsdp_group\":[0,2,4,6],");
        snprintf(why, sizeof why, "rank 0's line lacks its mode and group: %.200s", text);
    }
    free(text);
    arachne_plan_destroy(p);
    env_close(&e);
    ASSERT_MSG(!bad, "ranks export: %s", why);
}

TEST(ranks_export_survives_other_valid_layouts)
{
    /* a single homogeneous template spread over both A100 nodes, plus an
     * H100 pipeline whose stages share a node: still every GPU once */
    fx f;
    char *text, why[256];
    int r;
    ASSERT_OK(fx_init(&f));
    /* move template 0 replica 1 stage 0 to node 1 GPUs 2,3 and stage 1 to 0,1 */
    for (r = 0; r < 8; r++)
        if (f.plan.ranks[r].replica == 1) f.plan.ranks[r].gpu = (f.plan.ranks[r].gpu + 2) % 4;
    ASSERT_OK(ar_plan_validate(&f.cm, &f.plan));
    ASSERT_OK(ar_plan_finish(&f.plan));
    text = export_str(&f.plan, ARACHNE_EXPORT_RANKS);
    ASSERT(text != NULL);
    r = check_ranks_export(&f.plan, f.cluster, text, why, sizeof why);
    free(text);
    fx_free(&f);
    ASSERT_MSG(r == 0, "ranks export: %s", why);
}

TEST(megatron_export_says_where_per_stage_tp_cannot_be_expressed)
{
    fx f;
    char *text;
    ASSERT_OK(fx_init(&f));
    text = export_str(&f.plan, ARACHNE_EXPORT_MEGATRON);
    ASSERT(text != NULL);
    ASSERT_CONTAINS(text, "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
                          "--group-query-attention --num-query-groups 8 --kv-channels 128 --swiglu");
    ASSERT_CONTAINS(text, "--tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2 "
                          "--use-tp-pp-dp-mapping --micro-batch-size 1 --global-batch-size 32 --bf16 "
                          "--pipeline-model-parallel-layout \"Etttttttttttttttt|ttttttttttttttttL\"");
    ASSERT_CONTAINS(text, "--tensor-model-parallel-size 4 --sequence-parallel --pipeline-model-parallel-size 2 "
                          "--use-tp-pp-dp-mapping --micro-batch-size 2 --global-batch-size 32");
    /* ranks 0..7 of template 0 are replica-major, stage, TP: Megatron's tp-pp-dp order */
    ASSERT_CONTAINS(text, "job ranks in Megatron's tp-pp-dp (--use-tp-pp-dp-mapping) order: job rank = plan rank - 0");
    ASSERT_CONTAINS(text, "replace it with --decoder-first-pipeline-num-layers 16 --decoder-last-pipeline-num-layers 16");
    ASSERT_CONTAINS(text, "2 separate jobs that never share gradients");
    ASSERT(strstr(text, "one structure whose replicas") == NULL); /* two structures, not an exact split */
    ASSERT_CONTAINS(text, "# NOTE: Megatron-LM cannot express this template: its stages use TP 4,2");
    ASSERT_CONTAINS(text, "--recompute-granularity selective --use-distributed-optimizer\n");
    ASSERT_CONTAINS(text, "#   stage 1: H100 x TP 2, blocks [20, 32), ranks 12,13@node2\n");
    /* template 0 has uniform TP: exactly one NOTE in the whole output */
    ASSERT(strstr(strstr(text, "cannot express") + 1, "cannot express") == NULL);
    free(text);
    fx_free(&f);
}

TEST(torchtitan_export_has_a_parallelism_section_per_template)
{
    fx f;
    char *text, *second;
    ASSERT_OK(fx_init(&f));
    text = export_str(&f.plan, ARACHNE_EXPORT_TORCHTITAN);
    ASSERT(text != NULL);
    second = strstr(text, "# ---- template 1 ----");
    ASSERT(second != NULL);
    ASSERT(strstr(text, "[parallelism]") < second);
    ASSERT_CONTAINS(second, "[parallelism]\n");
    ASSERT_CONTAINS(second, "tensor_parallel_degree = 4\npipeline_parallel_degree = 2\n");
    ASSERT_CONTAINS(second, "pipeline_parallel_microbatch_size = 2\n");
    ASSERT_CONTAINS(text, "module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\",");
    ASSERT_CONTAINS(text, "\"layers.31\", \"norm\", \"output\"]]\n");
    ASSERT_CONTAINS(second, "local_batch_size = 32\nglobal_batch_size = 32\nseq_len = 4096\n");
    ASSERT_CONTAINS(second, "data_parallel_shard_degree = 1\n");
    ASSERT_CONTAINS(second, "# NOTE: torchtitan cannot express this template");
    free(text);
    fx_free(&f);
}

TEST(flashflex_export_lists_every_pipeline)
{
    fx f;
    char *text;
    ASSERT_OK(fx_init(&f));
    text = export_str(&f.plan, ARACHNE_EXPORT_FLASHFLEX);
    ASSERT(text != NULL);
    ASSERT_CONTAINS(text, "--hetero_configs \"[[2, 2], [2, 2], [4, 2]]\"");
    ASSERT_CONTAINS(text, "--layer_partitions \"[[16, 16], [16, 16], [20, 12]]\"");
    ASSERT_CONTAINS(text, "--pp_layouts \"[[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9, 10, 11], [12, 13]]]\"");
    ASSERT_CONTAINS(text, "--global_bsz_size 16 16 32 --chunks 16 16 16 --total-layer-num 32 --seq_length 4096");
    ASSERT_CONTAINS(text, "--mixed_precision bf16 --default_dp_type zero2 --pipeline-type 1F1B --seq-parallel\n");
    ASSERT(strstr(text, "--pipeline_batches") == NULL && strstr(text, "--micro_batch_sizes") == NULL);
    ASSERT_CONTAINS(text, "#   pipeline 2 = template 1 replica 0, ranks by stage: 8 9 10 11 | 12 13\n");
    free(text);
    fx_free(&f);
}

TEST(sailor_export_is_a_pipeline_list)
{
    fx f;
    char *text;
    ar_json *root = NULL;
    const ar_json *pl, *lps, *tmp;
    size_t need = 0;
    ASSERT_OK(fx_init(&f));
    /* two micro-batch sizes: Sailor has one per plan, so the export refuses */
    ASSERT_STATUS(arachne_plan_export(&f.plan, ARACHNE_EXPORT_SAILOR, NULL, 0, &need), ARACHNE_E_UNSUPPORTED);
    ASSERT_CONTAINS(arachne_last_error(), "a Sailor plan has one micro-batch size");
    f.plan.t[1].micro_batch = 1;
    f.plan.t[1].micro_batches = 32;
    ASSERT_OK(ar_plan_finish(&f.plan));
    text = export_str(&f.plan, ARACHNE_EXPORT_SAILOR);
    ASSERT(text != NULL);
    ASSERT_OK(ar_json_parse(&root, text, strlen(text), "sailor"));
    pl = ar_json_get(root, "pipeline_list");
    ASSERT(pl && pl->count == 2);
    ASSERT_EQ(int_at(pl->items[1], "num_stages"), 2);
    lps = ar_json_get(pl->items[1], "layers_per_stage");
    ASSERT(lps && lps->count == 2);
    ASSERT_EQ(lps->items[0]->count, 21);  /* embedding (0) + blocks 1..20 */
    ASSERT_EQ(lps->items[1]->count, 13);  /* blocks 21..32 + head (33) */
    ASSERT_EQ(lps->items[1]->items[12]->number, 33);
    tmp = ar_json_get(pl->items[0], "tmp_per_stage");
    ASSERT(tmp && tmp->count == 2 && tmp->items[0]->count == 2);
    /* a replica is [[[gpu, gpus_per_node, zone]], tp] (Sailor's nesting) */
    ASSERT(tmp->items[0]->items[1]->count == 2 && tmp->items[0]->items[1]->items[0]->count == 1);
    ASSERT_STR(tmp->items[0]->items[1]->items[0]->items[0]->items[0]->string, "A100-40");
    ASSERT_EQ(tmp->items[0]->items[1]->items[0]->items[0]->items[1]->number, 4);
    ASSERT_STR(tmp->items[0]->items[1]->items[0]->items[0]->items[2]->string, "us-central1-a");
    ASSERT_EQ(tmp->items[0]->items[1]->items[1]->number, 2);
    tmp = ar_json_get(pl->items[1], "tmp_per_stage");
    ASSERT_EQ(tmp->items[0]->items[0]->items[0]->items[0]->items[1]->number, 8); /* the H100 node holds 8 */
    ASSERT_EQ(ar_json_get(pl->items[0], "dp")->items[1]->number, 2);
    ASSERT_EQ(int_at(ar_json_get(root, "used_gpus"), "A100-40"), 8);
    ASSERT_EQ(int_at(ar_json_get(root, "used_gpus"), "H100"), 6);
    ASSERT(ar_json_get(root, "iter_time")->number == f.plan.iteration_s);
    ar_json_free(root);
    free(text);
    fx_free(&f);
}

/* The export of a plan given by a parallel spec (NULL on failure). */
static char *spec_export(const char *model, const char *cluster, int seq, const char *spec, int format)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *pl = NULL;
    char *text = NULL;
    if (!arachne_model_preset(&m, model) && !arachne_cluster_parse(&c, cluster) &&
        !arachne_profile_generate(&p, m, c, seq) && !arachne_cost_model_create(&cm, m, c, p) &&
        !arachne_plan_from_parallel(&pl, cm, spec))
        text = export_str(pl, format);
    arachne_plan_destroy(pl);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
    return text;
}

/* From a probe of the exports against the targets' sources (torchtitan
 * v0.2.2 train.py and parallel_dims.py, Megatron-Core core_v0.15.0
 * arguments.py, FlashFlex 5ee1726 hexiscale/): each case ran, or was
 * refused at start, otherwise than the plan says. */
TEST(exports_say_what_the_targets_would_otherwise_change)
{
    static const struct { const char *model; int seq; const char *spec; int format; const char *want; } cases[] = {
        /* one stage: torchtitan runs local_batch_size at once, so it must be
         * the micro-batch, and accumulates over the 32 micro-batches */
        { "qwen3-8b", 4096, "tp=4,pp=1,dp=8,mbs=2", ARACHNE_EXPORT_TORCHTITAN,
          "local_batch_size = 2\nglobal_batch_size = 512\n" },
        /* a pipeline keeps one replica's samples per iteration */
        { "qwen3-8b", 4096, "tp=4,pp=2,dp=4,mbs=2", ARACHNE_EXPORT_TORCHTITAN,
          "local_batch_size = 128\nglobal_batch_size = 512\n" },
        /* experts kept whole (EP 1, ETP 1) under TP 2: Megatron's default
         * ETP is TP, so the flag is written; torchtitan shards them over TP */
        { "qwen3-30b-a3b", 4096, "tp=2,pp=4,dp=4,mbs=1,ep=1,etp=1", ARACHNE_EXPORT_MEGATRON,
          " --expert-model-parallel-size 1 --expert-tensor-parallel-size 1" },
        { "qwen3-30b-a3b", 4096, "tp=2,pp=4,dp=4,mbs=1,ep=1,etp=1", ARACHNE_EXPORT_TORCHTITAN,
          "# NOTE: with EP 1 torchtitan shards the experts over TP (2;" },
        /* torchtitan takes ETP 1 or TP only */
        { "mixtral-8x7b", 4096, "tp=4,pp=2,dp=4,mbs=1,ep=4,etp=2", ARACHNE_EXPORT_TORCHTITAN,
          "the plan's ETP 2 (TP 4) is refused at start" },
        /* FlashFlex numbers ranks pipeline by pipeline unless --pp_layouts
         * says otherwise; a spec's plan numbers them Megatron's way (stage 1
         * of replica 0 is ranks 16-19); and it fixes the sequence at 4096 */
        { "llama3-8b", 2048, "tp=4,pp=2,dp=4,mbs=1", ARACHNE_EXPORT_FLASHFLEX,
          "--pp_layouts \"[[[0, 1, 2, 3], [16, 17, 18, 19]], [[4, 5, 6, 7], [20, 21, 22, 23]], " },
        { "llama3-8b", 2048, "tp=4,pp=2,dp=4,mbs=1", ARACHNE_EXPORT_FLASHFLEX,
          "# NOTE: FlashFlex sets the sequence length to 4096 whatever --seq_length says" },
        /* a stage whose TP x CP group spans two nodes names both */
        { "llama3-70b", 4096, "tp=8,pp=2,dp=1,mbs=1,cp=2", ARACHNE_EXPORT_MEGATRON, ",14,15@node0,1\n" },
    };
    size_t k;
    for (k = 0; k < AR_COUNT(cases); k++) {
        char *t = spec_export(cases[k].model, "h100:4x8", cases[k].seq, cases[k].spec, cases[k].format);
        ASSERT(t != NULL);
        ASSERT_CONTAINS(t, cases[k].want);
        free(t);
    }
}

TEST(export_checks_format_and_buffer)
{
    fx f;
    char small[8];
    size_t need = 0, need2 = 0;
    char *a, *b;
    ASSERT_OK(fx_init(&f));
    ASSERT_STATUS(arachne_plan_export(&f.plan, 6, NULL, 0, &need), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_export(&f.plan, -1, NULL, 0, &need), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_export(NULL, 0, NULL, 0, &need), ARACHNE_E_INVALID_ARGUMENT);
    memcpy(small, "intact!", 8);
    ASSERT_STATUS(arachne_plan_export(&f.plan, ARACHNE_EXPORT_MEGATRON, small, sizeof small, &need),
                  ARACHNE_E_BUFFER_TOO_SMALL);
    ASSERT_STR(small, "intact!");
    ASSERT(need > 100);
    /* a NULL buffer with a capacity is a mistake, not a buffer too small */
    ASSERT_STATUS(arachne_plan_export(&f.plan, ARACHNE_EXPORT_MEGATRON, NULL, 1 << 20, &need2),
                  ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "NULL buffer with a capacity of 1048576 bytes");
    a = export_str(&f.plan, ARACHNE_EXPORT_MEGATRON);
    b = export_str(&f.plan, ARACHNE_EXPORT_MEGATRON);
    ASSERT(a && b);
    ASSERT_STR(a, b); /* deterministic */
    ASSERT_EQ(strlen(a) + 1, need);
    free(a);
    free(b);
    /* an incomplete rank list is refused, not exported with holes */
    f.plan.nranks = 13;
    ASSERT_STATUS(arachne_plan_export(&f.plan, ARACHNE_EXPORT_RANKS, NULL, 0, &need2), ARACHNE_E_INVALID_PLAN);
    f.plan.nranks = 14;
    fx_free(&f);
}

SUITE(export, T(exports_say_what_the_targets_would_otherwise_change),
      T(ranks_export_lists_every_gpu_once_with_node_local_tp),
      T(ranks_export_carries_the_memory_setup_and_fsdp_groups), T(ranks_export_survives_other_valid_layouts),
      T(megatron_export_says_where_per_stage_tp_cannot_be_expressed),
      T(torchtitan_export_has_a_parallelism_section_per_template),
      T(flashflex_export_lists_every_pipeline),
      T(sailor_export_is_a_pipeline_list),
      T(export_checks_format_and_buffer));
