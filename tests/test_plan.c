/* test_plan.c -- the plan handle: init, getters, index checks, deep copy,
 * finish/to_json/save, and structural validation of hand-built plans. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "plan_fixture.h"

TEST(init_binds_setup_cluster_and_model)
{
    fx f;
    double v;
    ASSERT_OK(fx_init(&f));
    ASSERT_STR(f.plan.model, "llama3-8b");
    ASSERT_STR(f.plan.cluster_spec, "a100-40:2x4,h100:1x8");
    ASSERT_EQ(f.plan.gpus_total, 16);
    ASSERT_EQ(f.plan.ntypes, 2);
    ASSERT_STR(ar_plan_type_name(&f.plan, 1), "H100");
    ASSERT_STR(ar_plan_type_name(&f.plan, 7), "?");
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_GLOBAL_BATCH, &v));
    ASSERT_EQ(v, 64);
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_SEQ_LEN, &v));
    ASSERT_EQ(v, 4096);
    fx_free(&f);
}

TEST(init_formats_the_cluster_when_it_has_no_cached_string)
{
    fx f;
    arachne_cluster bare;
    arachne_cost_model cm;
    arachne_plan p;
    ASSERT_OK(fx_init(&f));
    bare = *f.cluster;
    bare.spec_cache = NULL;
    bare.json_cache = NULL;
    cm = f.cm;
    cm.cluster = &bare;
    ASSERT_OK(ar_plan_init(&p, &cm));
    ASSERT_STR(p.cluster_spec, "A100-40:2x4,H100:1x8");
    ar_plan_clear(&p);
    ASSERT_STATUS(ar_plan_init(&p, NULL), ARACHNE_E_INVALID_ARGUMENT);
    fx_free(&f);
}

TEST(plan_getters_read_every_field)
{
    fx f;
    double v;
    const char *s;
    int i;
    ASSERT_OK(fx_init(&f));
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_ITERATION_S, &v));
    ASSERT(v == f.plan.iteration_s);
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_MFU, &v));
    ASSERT(v == f.plan.mfu);
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_TEMPLATES, &v));
    ASSERT_EQ(v, 2);
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_RANKS, &v));
    ASSERT_EQ(v, 14);
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_EVALUATIONS, &v));
    ASSERT_EQ(v, 4242);
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_RECOMPUTE, &v));
    ASSERT_EQ(v, f.plan.setup.recompute);
    for (i = ARACHNE_PLAN_ITERATION_S; i <= ARACHNE_PLAN_RECOMPUTE; i++) ASSERT_OK(arachne_plan_get(&f.plan, i, &v));
    ASSERT_STATUS(arachne_plan_get(&f.plan, 16, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "valid 0..15");
    ASSERT_STATUS(arachne_plan_get(NULL, 0, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_get(&f.plan, 0, NULL), ARACHNE_E_INVALID_ARGUMENT);

    ASSERT_OK(arachne_plan_template_get(&f.plan, 1, ARACHNE_TEMPLATE_MICRO_BATCH, &v));
    ASSERT_EQ(v, 2);
    ASSERT_OK(arachne_plan_template_get(&f.plan, 0, ARACHNE_TEMPLATE_REPLICAS, &v));
    ASSERT_EQ(v, 2);
    ASSERT_OK(arachne_plan_template_get(&f.plan, 0, ARACHNE_TEMPLATE_PIPELINE_S, &v));
    ASSERT(v == 7.0 / 3.0);
    ASSERT_OK(arachne_plan_stage_get(&f.plan, 1, 0, ARACHNE_STAGE_TP, &v));
    ASSERT_EQ(v, 4);
    ASSERT_OK(arachne_plan_stage_get(&f.plan, 1, 1, ARACHNE_STAGE_FIRST_LAYER, &v));
    ASSERT_EQ(v, 20);
    ASSERT_OK(arachne_plan_stage_get(&f.plan, 1, 1, ARACHNE_STAGE_END_LAYER, &v));
    ASSERT_EQ(v, 32);
    ASSERT_OK(arachne_plan_stage_get(&f.plan, 0, 1, ARACHNE_STAGE_EDP, &v));
    ASSERT_EQ(v, 4);
    ASSERT_OK(arachne_plan_stage_get(&f.plan, 0, 1, ARACHNE_STAGE_MEMORY_BYTES, &v));
    ASSERT(v == f.plan.t[0].stages[1].mem_bytes);
    for (i = ARACHNE_STAGE_TP; i <= ARACHNE_STAGE_MEMORY_BYTES; i++)
        ASSERT_OK(arachne_plan_stage_get(&f.plan, 0, 0, i, &v));
    ASSERT_OK(arachne_plan_stage_gpu(&f.plan, 1, 1, &s));
    ASSERT_STR(s, "H100");
    ASSERT_OK(arachne_plan_method(&f.plan, &s));
    ASSERT_STR(s, "test");
    fx_free(&f);
}

/* SAMPLES_RUN adds replicas x micro-batch x micro-batches over templates;
 * the planners' rank is iter/s for an exact plan and charges a plan that
 * runs S > B samples for the surplus (iter/s x B / S); exact_batch 0: speed. */
TEST(samples_run_and_the_planners_rank)
{
    fx f;
    double v, it;
    ASSERT_OK(fx_init(&f));
    ASSERT_OK(arachne_plan_get(&f.plan, ARACHNE_PLAN_SAMPLES_RUN, &v));
    ASSERT_EQ(v, 2 * 1 * 16 + 1 * 2 * 16);
    ASSERT_EQ(ar_plan_samples_run(&f.plan), 64);
    it = f.plan.iter_per_s;
    f.plan.setup.exact_batch = 1;
    ASSERT(ar_plan_rank(&f.plan) == it); /* exact: the throughput, bit for bit */
    /* one more micro-batch on template 1: 66 samples for a batch of 64 */
    f.plan.t[1].micro_batches = 17;
    ASSERT_EQ(ar_plan_samples_run(&f.plan), 66);
    ASSERT_NEAR(ar_plan_rank(&f.plan), it * 64.0 / 66.0, 1e-15);
    /* an exact plan 3% slower beats it; one 4% slower does not */
    ASSERT(0.97 * it > ar_plan_rank(&f.plan));
    ASSERT(0.96 * it < ar_plan_rank(&f.plan));
    /* exact_batch 0: speed alone, whatever the batch */
    f.plan.setup.exact_batch = 0;
    ASSERT(ar_plan_rank(&f.plan) == it);
    fx_free(&f);
}

TEST(out_of_range_indices_name_the_valid_range)
{
    fx f;
    double v;
    int iv;
    const char *s;
    ASSERT_OK(fx_init(&f));
    ASSERT_STATUS(arachne_plan_template_get(&f.plan, 2, ARACHNE_TEMPLATE_DEPTH, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "template index 2 out of range [0, 2)");
    ASSERT_STATUS(arachne_plan_template_get(&f.plan, -1, ARACHNE_TEMPLATE_DEPTH, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_template_get(&f.plan, 0, 99, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_stage_get(&f.plan, 0, 2, ARACHNE_STAGE_TP, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "stage index 2 of template 0 out of range [0, 2)");
    ASSERT_STATUS(arachne_plan_stage_get(&f.plan, 5, 0, ARACHNE_STAGE_TP, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_stage_get(&f.plan, 0, 0, 13, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_stage_gpu(&f.plan, 0, -1, &s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(s == NULL);
    ASSERT_STATUS(arachne_plan_rank_get(&f.plan, 14, ARACHNE_RANK_NODE, &iv), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "rank index 14 out of range [0, 14)");
    ASSERT_STATUS(arachne_plan_rank_get(&f.plan, 0, 7, &iv), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_method(NULL, &s), ARACHNE_E_INVALID_ARGUMENT);
    fx_free(&f);
}

TEST(rank_getters_and_canonical_rank_order)
{
    fx f;
    int v, r;
    ar_rank tmp;
    ASSERT_OK(fx_init(&f));
    /* scramble the rank array: finish must restore global-rank order */
    tmp = f.plan.ranks[0];
    f.plan.ranks[0] = f.plan.ranks[13];
    f.plan.ranks[13] = tmp;
    tmp = f.plan.ranks[3];
    f.plan.ranks[3] = f.plan.ranks[9];
    f.plan.ranks[9] = tmp;
    ASSERT_OK(ar_plan_finish(&f.plan));
    for (r = 0; r < 14; r++) {
        ASSERT_OK(arachne_plan_rank_get(&f.plan, r, ARACHNE_RANK_RANK, &v));
        ASSERT_EQ(v, r);
    }
    ASSERT_OK(arachne_plan_rank_get(&f.plan, 9, ARACHNE_RANK_TEMPLATE, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(arachne_plan_rank_get(&f.plan, 9, ARACHNE_RANK_NODE, &v));
    ASSERT_EQ(v, 2);
    ASSERT_OK(arachne_plan_rank_get(&f.plan, 9, ARACHNE_RANK_GPU, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(arachne_plan_rank_get(&f.plan, 9, ARACHNE_RANK_TP_RANK, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(arachne_plan_rank_get(&f.plan, 5, ARACHNE_RANK_REPLICA, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(arachne_plan_rank_get(&f.plan, 5, ARACHNE_RANK_STAGE, &v));
    ASSERT_EQ(v, 0);
    fx_free(&f);
}

TEST(copy_is_deep_and_equal)
{
    fx f;
    arachne_plan c;
    const char *a, *b;
    memset(&c, 0, sizeof c);
    ASSERT_OK(fx_init(&f));
    ASSERT_OK(ar_plan_copy(&c, &f.plan));
    ASSERT(c.ranks != f.plan.ranks);
    ASSERT(c.cluster_spec != f.plan.cluster_spec);
    ASSERT(c.json_cache != f.plan.json_cache);
    ASSERT_OK(arachne_plan_to_json(&c, &a));
    ASSERT_OK(arachne_plan_to_json(&f.plan, &b));
    ASSERT_STR(a, b);
    ASSERT_EQ(memcmp(c.ranks, f.plan.ranks, 14 * sizeof *c.ranks), 0);
    f.plan.ranks[0].node = 1; /* the copy must not see it */
    ASSERT_EQ(c.ranks[0].node, 0);
    /* copy over a non-empty plan frees its old memory (ASan checks) */
    ASSERT_OK(ar_plan_copy(&c, &f.plan));
    ASSERT_EQ(c.ranks[0].node, 1);
    ASSERT_OK(ar_plan_copy(&c, &c));
    ar_plan_clear(&c);
    ar_plan_clear(&c); /* twice is harmless */
    fx_free(&f);
}

TEST(to_json_needs_a_finished_plan_and_save_is_atomic)
{
    fx f;
    arachne_plan raw;
    const char *js, *dir = th_tmpdir();
    char path[600], *back = NULL;
    size_t len = 0;
    ASSERT(dir != NULL);
    ASSERT_OK(fx_init(&f));
    memset(&raw, 0, sizeof raw);
    ASSERT_STATUS(arachne_plan_to_json(&raw, &js), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_to_json(NULL, &js), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_plan_to_json(&f.plan, &js));
    ASSERT(strncmp(js, "{\n  \"format\": \"arachne-plan\",\n  \"version\": 2,", 44) == 0);
    snprintf(path, sizeof path, "%s/plan.json", dir);
    ASSERT_OK(arachne_plan_save(&f.plan, path));
    ASSERT_OK(ar_read_file(path, &back, &len));
    ASSERT_STR(back, js);
    free(back);
    snprintf(path, sizeof path, "%s/no/such/dir/plan.json", dir);
    ASSERT_STATUS(arachne_plan_save(&f.plan, path), ARACHNE_E_IO);
    arachne_plan_destroy(NULL);
    fx_free(&f);
}

/* ---- structural validation on the struct ---- */

TEST(fixture_plan_is_valid)
{
    fx f;
    ASSERT_OK(fx_init(&f));
    ASSERT_OK(ar_plan_validate(&f.cm, &f.plan));
    fx_free(&f);
}

#define EXPECT_INVALID(mutation, needle)                                  \
    do {                                                                  \
        fx f_;                                                            \
        arachne_plan *p = &f_.plan;                                       \
        ASSERT_OK(fx_init(&f_));                                          \
        mutation;                                                         \
        arachne_clear_error();                                            \
        if (ar_plan_validate(&f_.cm, p) != ARACHNE_E_INVALID_PLAN) {      \
            fx_free(&f_);                                                 \
            ASSERT_MSG(0, "%s: not rejected (%s)", #mutation, arachne_last_error()); \
        }                                                                 \
        if (!strstr(arachne_last_error(), needle)) {                      \
            th_fail(__FILE__, __LINE__, "%s: message \"%s\" lacks \"%s\"", #mutation, arachne_last_error(), needle); \
            fx_free(&f_);                                                 \
            return;                                                       \
        }                                                                 \
        fx_free(&f_);                                                     \
    } while (0)

TEST(validate_rejects_gpu_reuse_and_tp_across_nodes)
{
    EXPECT_INVALID(p->ranks[1].gpu = 0, "node 0 GPU 0 is already used by rank 0");
    EXPECT_INVALID((p->ranks[1].node = 1, p->ranks[1].gpu = 3), "TP group of replica 0 crosses nodes");
    EXPECT_INVALID(p->ranks[4].node = 5, "node 5 out of range [0, 3)");
    EXPECT_INVALID(p->ranks[4].gpu = 4, "GPU 4 out of range on node 1");
    EXPECT_INVALID((p->ranks[8].node = 0, p->ranks[8].gpu = 0), "node 0 holds A100-40 GPUs, the stage runs on H100");
}

TEST(validate_rejects_incomplete_or_duplicate_ranks)
{
    EXPECT_INVALID(p->ranks[3].tp_rank = 0, "replica 0 tp_rank 0 is already held");
    EXPECT_INVALID(p->ranks[3].tp_rank = 2, "tp_rank 2 out of range [0, 2)");
    EXPECT_INVALID(p->ranks[3].rank = 2, "global rank 2 listed twice");
    EXPECT_INVALID(p->ranks[3].rank = 20, "rank 20 out of range [0, 14)");
    EXPECT_INVALID(p->nranks = 13, "template 1: 5 ranks, expected 6");
    EXPECT_INVALID(p->ranks[13].tmpl = 0, "template 0: 9 ranks, expected 8");
    EXPECT_INVALID(p->ranks[13].stage = 2, "stage 2 out of range [0, 2)");
    EXPECT_INVALID(p->ranks[7].replica = 2, "replica 2 out of range [0, 2)");
}

TEST(validate_rejects_layer_gaps_overlaps_and_bad_tiling)
{
    EXPECT_INVALID(p->t[0].stages[1].first = 17, "leave blocks [16, 17) uncovered (gap)");
    EXPECT_INVALID(p->t[1].stages[1].first = 19, "overlap the previous stage, which ends at block 20");
    EXPECT_INVALID(p->t[1].stages[1].end = 31, "layers end at block 31 but llama3-8b has 32 blocks");
    EXPECT_INVALID(p->t[1].stages[1].end = 33, "run past the model's 32 blocks");
    EXPECT_INVALID((p->t[0].stages[0].end = 0, p->t[0].stages[1].first = 0), "hold no block");
    EXPECT_INVALID(p->t[0].stages[0].edp = 2, "expert tiling ep 1 x etp 1 x edp 2 does not equal the stage's 4 GPUs");
    EXPECT_INVALID((p->t[0].stages[0].ep = 2, p->t[0].stages[0].edp = 2), "EP 2 does not divide the model's 0 experts");
    EXPECT_INVALID(p->t[1].stages[0].type = 5, "GPU type index 5 not in the cluster");
    EXPECT_INVALID(p->t[0].stages[0].tp = 8, "TP 8 does not fit in a A100-40 node");
}

TEST(validate_rejects_uncovered_batch_and_empty_plans)
{
    EXPECT_INVALID(p->t[0].micro_batches = 15, "micro-batches cover 62 samples");
    EXPECT_INVALID(p->ntemplates = 0, "plan has 0 templates");
    EXPECT_INVALID(p->t[0].replicas = 0, "template 0: 0 replicas");
    EXPECT_INVALID(p->t[1].micro_batch = 0, "template 1: micro-batch size 0");
}

SUITE(plan,
      T(init_binds_setup_cluster_and_model),
      T(init_formats_the_cluster_when_it_has_no_cached_string),
      T(plan_getters_read_every_field),
      T(samples_run_and_the_planners_rank),
      T(out_of_range_indices_name_the_valid_range),
      T(rank_getters_and_canonical_rank_order),
      T(copy_is_deep_and_equal),
      T(to_json_needs_a_finished_plan_and_save_is_atomic),
      T(fixture_plan_is_valid),
      T(validate_rejects_gpu_reuse_and_tp_across_nodes),
      T(validate_rejects_incomplete_or_duplicate_ranks),
      T(validate_rejects_layer_gaps_overlaps_and_bad_tiling),
      T(validate_rejects_uncovered_batch_and_empty_plans));
