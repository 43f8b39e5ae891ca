/* test_policy.c -- the policy handle, arachne_plan_build, the state
 * encoder and the bundled-policy file path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "cluster.h"
#include "plan.h"
#include "policy.h"


/* Every rank on a distinct GPU and every TP group inside one node. */
static int plan_is_sane(const arachne_plan *p, const arachne_cluster *c)
{
    int r, q;
    if (p->ntemplates < 1 || p->nranks != p->gpus_used || !(p->iter_per_s > 0)) return 0;
    for (r = 0; r < p->nranks; r++) {
        const ar_rank *a = &p->ranks[r];
        if (a->node < 0 || a->node >= c->nnodes || a->gpu < 0 || a->gpu >= c->nodes[a->node].gpus) return 0;
        for (q = r + 1; q < p->nranks; q++) {
            const ar_rank *b = &p->ranks[q];
            if (a->node == b->node && a->gpu == b->gpu) return 0;
            if (a->tmpl == b->tmpl && a->replica == b->replica && a->stage == b->stage && a->node != b->node)
                return 0;
        }
    }
    return 1;
}

TEST(untrained_policy_plans_every_preset_on_the_paper_mix)
{
    static const char *clusters[] = { "a100-40:32x4,a6000:32x4,h100:64x4", "a6000:16x1+8x4,a100-40:8x4,h100:8x4" };
    arachne_policy *pol = NULL;
    int i, k, n = arachne_model_preset_count();
    /* A quick run (check-valgrind, check-tsan) plans every preset but
     * deepseek-v3 on the second, 48-GPU mix: deepseek-v3 is four fifths of
     * this test's time (its 512-GPU plan and its infeasibility proof on 48
     * GPUs); construct.infeasible_model_reports_memory keeps the memory
     * message covered. */
    int quick = th_quick();
    ASSERT_OK(arachne_policy_create(&pol, 7, 0, 0));
    for (k = quick ? 1 : 0; k < 2; k++) {
        for (i = 0; i < n; i++) {
            const char *name = arachne_model_preset_name(i);
            env e;
            arachne_plan *plan = NULL;
            int st;
            if (quick && !strcmp(name, "deepseek-v3")) continue;
            ASSERT_OK(env_open(&e, name, clusters[k]));
            /* DeepSeek-V3 needs activation checkpointing to fit the 512-GPU
             * mix at depth <= 16 (as the paper trains its large models):
             * with selective recomputation the early stages' in-flight
             * activations overflow H100 memory at every tiling. */
            if (!strcmp(name, "deepseek-v3"))
                ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
            st = arachne_plan_build(&plan, pol, e.cm, 1, 3);
            if (k == 1 && !strcmp(name, "deepseek-v3")) {
                /* 671 B parameters x 18 bytes cannot fit in 48 GPUs. */
                ASSERT_EQ(st, ARACHNE_E_INFEASIBLE);
                ASSERT_CONTAINS(arachne_last_error(), "need at least");
                ASSERT_CONTAINS(arachne_last_error(), "GB usable");
                ASSERT(plan == NULL);
            } else {
                ASSERT_MSG(st == ARACHNE_OK, "%s on %s: %s", name, clusters[k], arachne_last_error());
                ASSERT_MSG(plan_is_sane(plan, e.c), "%s on %s: plan not sane", name, clusters[k]);
                ASSERT_STR(plan->method, "policy-greedy");
                ASSERT(plan->evaluations > 0);
            }
            arachne_plan_destroy(plan);
            env_close(&e);
        }
    }
    arachne_policy_destroy(pol);
}

TEST(same_seed_same_plan_and_best_of_k_is_no_worse_than_greedy)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_plan *a = NULL, *b = NULL, *g = NULL;
    const char *ja, *jb;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:8x4,a6000:8x4,h100:8x8"));
    ASSERT_OK(arachne_policy_create(&pol, 11, 0, 0));
    ASSERT_OK(arachne_plan_build(&a, pol, e.cm, 8, 99));
    ASSERT_OK(arachne_plan_build(&b, pol, e.cm, 8, 99));
    ASSERT_OK(arachne_plan_build(&g, pol, e.cm, 1, 99));
    ASSERT_OK(arachne_plan_to_json(a, &ja));
    ASSERT_OK(arachne_plan_to_json(b, &jb));
    /* planning_s differs between runs; everything else must match. */
    ASSERT_EQ(a->ntemplates, b->ntemplates);
    ASSERT(a->iter_per_s == b->iter_per_s);
    ASSERT_EQ(a->nranks, b->nranks);
    ASSERT(memcmp(a->ranks, b->ranks, sizeof *a->ranks * (size_t)a->nranks) == 0);
    ASSERT(a->iter_per_s >= g->iter_per_s);
    ASSERT_STR(a->method, "policy-best-of-k");
    ASSERT_EQ(a->samples, 8);
    ASSERT(strstr(ja, "\"planner\"") != NULL && strstr(jb, "\"planner\"") != NULL);
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    arachne_plan_destroy(g);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* Metadata that a policy file cannot hold is refused when set, with the
 * position, and leaves the old text; before, the next save failed. */
TEST(metadata_is_checked_when_set)
{
    arachne_policy *pol = NULL;
    const char *meta = NULL;
    static const char *const bad[] = { "not json", "{\"a\": 1} trailing", "{\"a\": NaN}", "\xff\xfe" };
    size_t i;
    ASSERT_OK(arachne_policy_create(&pol, 1, 16, 1));
    ASSERT_OK(arachne_policy_set_metadata(pol, "{\"run\": 1}"));
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_STATUS(arachne_policy_set_metadata(pol, bad[i]), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT_CONTAINS(arachne_last_error(), "arachne_policy_set_metadata");
        ASSERT_OK(arachne_policy_metadata(pol, &meta));
        ASSERT_STR(meta, "{\"run\": 1}");
    }
    ASSERT_CONTAINS((arachne_policy_set_metadata(pol, "not json"), arachne_last_error()), "1:1");
    ASSERT_OK(arachne_policy_set_metadata(pol, ""));
    ASSERT_OK(arachne_policy_metadata(pol, &meta));
    ASSERT_STR(meta, "");
    arachne_policy_destroy(pol);
}

TEST(saved_and_loaded_policy_gives_bit_identical_plans)
{
    const char *dir = th_tmpdir();
    char path[512];
    env e;
    arachne_policy *pol = NULL, *back = NULL;
    arachne_plan *a = NULL, *b = NULL;
    FILE *f;
    long size;
    unsigned char *bytes;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/p.arpol", dir);
    ASSERT_OK(env_open(&e, "qwen3-8b", "a100-40:4x4,h100:2x8"));
    ASSERT_OK(arachne_policy_create(&pol, 5, 64, 2));
    ASSERT_OK(arachne_policy_set_metadata(pol, "{\"note\":\"test\"}"));
    ASSERT_OK(arachne_policy_save(pol, path));
    ASSERT_OK(arachne_policy_load(&back, path));
    ASSERT_OK(arachne_plan_build(&a, pol, e.cm, 4, 1));
    ASSERT_OK(arachne_plan_build(&b, back, e.cm, 4, 1));
    ASSERT(a->iter_per_s == b->iter_per_s);
    ASSERT_EQ(a->nranks, b->nranks);
    ASSERT(memcmp(a->ranks, b->ranks, sizeof *a->ranks * (size_t)a->nranks) == 0);
    {
        const char *meta;
        ASSERT_OK(arachne_policy_metadata(back, &meta));
        ASSERT_STR(meta, "{\"note\":\"test\"}");
    }
    /* One flipped byte in the middle: corrupt. */
    f = fopen(path, "r+b");
    ASSERT(f != NULL);
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    bytes = malloc((size_t)size);
    ASSERT(bytes != NULL);
    fseek(f, 0, SEEK_SET);
    ASSERT_EQ(fread(bytes, 1, (size_t)size, f), size);
    bytes[size / 2] ^= 0x10;
    fseek(f, 0, SEEK_SET);
    ASSERT_EQ(fwrite(bytes, 1, (size_t)size, f), size);
    fclose(f);
    free(bytes);
    arachne_policy_destroy(back);
    back = NULL;
    ASSERT_STATUS(arachne_policy_load(&back, path), ARACHNE_E_CORRUPT);
    ASSERT(back == NULL);
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    arachne_policy_destroy(pol);
    env_close(&e);
}

TEST(policy_api_rejects_bad_arguments)
{
    arachne_policy *pol = NULL;
    double v;
    const char *s;
    env e;
    arachne_plan *plan = NULL;
    ASSERT_STATUS(arachne_policy_create(NULL, 1, 0, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_policy_create(&pol, 1, -1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_policy_create(&pol, 1, 0, 99), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_policy_load(&pol, "/nonexistent/x.arpol"), ARACHNE_E_IO);
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_OK(arachne_policy_info(pol, ARACHNE_POLICY_PARAMS, &v));
    ASSERT(v > 1000);
    ASSERT_OK(arachne_policy_info(pol, ARACHNE_POLICY_SCHEMA_VERSION, &v));
    ASSERT_EQ((int)v, AR_STATE_VERSION);
    ASSERT_STATUS(arachne_policy_info(pol, 999, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_policy_info(NULL, 0, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_policy_metadata(pol, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_policy_metadata(pol, &s));
    ASSERT_STR(s, "");
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:2x8"));
    ASSERT_STATUS(arachne_plan_build(NULL, pol, e.cm, 1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_build(&plan, NULL, e.cm, 1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_build(&plan, pol, NULL, 1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_build(&plan, pol, e.cm, -1, 0), ARACHNE_E_INVALID_ARGUMENT);
    arachne_policy_destroy(NULL);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* A decision context at the first step of an empty plan: every choice
 * allowed, maximum depth 16. */
static void ctx_first(ar_dec_ctx *ctx, unsigned char *mask, size_t mask_len, const ar_avail *av,
                      const arachne_cost_model *cm, ar_dec_kind kind, int n)
{
    memset(ctx, 0, sizeof *ctx);
    memset(mask, 1, mask_len);
    ctx->kind = kind;
    ctx->avail = av;
    ctx->cm = cm;
    ctx->max_depth = 16;
    ctx->n = n;
    ctx->mask = mask;
}

TEST(state_is_finite_bounded_and_independent_of_cluster_size)
{
    /* Encode the first decision on a small and a huge cluster: fixed size,
     * every entry finite and within [-1, 4]. */
    static const char *clusters[] = { "a6000:1x1", "a100-40:512x8,h100:1024x8,a6000:256x4+512x1" };
    int k, i;
    for (k = 0; k < 2; k++) {
        env e;
        ar_state_static st;
        ar_avail av;
        ar_dec_ctx ctx;
        unsigned char mask[AR_MAX_DEPTH + 1];
        double x[AR_STATE_DIM], cand[(AR_MAX_DEPTH + 1) * AR_STATE_CAND];
        ASSERT_OK(env_open(&e, "llama3-8b", clusters[k]));
        ASSERT_OK(ar_state_static_init(&st, e.cm));
        ASSERT_OK(ar_avail_init(&av, e.c));
        ctx_first(&ctx, mask, sizeof mask, &av, e.cm, AR_DEC_DEPTH, 17);
        ar_state_encode(&st, &ctx, x, cand);
        for (i = 0; i < AR_STATE_DIM; i++) ASSERT_MSG(isfinite(x[i]) && x[i] >= -1 && x[i] <= 4, "x[%d] = %g", i, x[i]);
        for (i = 0; i < AR_STATE_COMP; i++) ASSERT_MSG(isfinite(st.comp[i]) && st.comp[i] >= -1 && st.comp[i] <= 4, "c[%d]", i);
        for (i = 0; i < 17 * AR_STATE_CAND; i++) ASSERT_MSG(isfinite(cand[i]), "cand[%d]", i);
        ASSERT(x[80] > 0 && x[80] <= 1); /* log cluster size */
        /* a device decision right after: every entry of its rows is written
         * (8.. are the type ranking, in [0, 1]), nothing is left from the
         * depth rows in the buffer */
        {
            int types[1] = { 0 }, tps[1] = { 1 }, left[AR_MAX_TYPES] = { 0 };
            ctx.kind = AR_DEC_TYPE;
            ctx.depth = 1;
            ctx.types = types;
            ctx.tps = tps;
            ctx.type_left = left;
            ctx.n = e.c->ntypes;
            for (i = 0; i < 17 * AR_STATE_CAND; i++) cand[i] = 12345.0;
            ar_state_encode(&st, &ctx, x, cand);
            for (i = 0; i < ctx.n * AR_STATE_CAND; i++) {
                ASSERT_MSG(isfinite(cand[i]) && cand[i] != 12345.0, "device cand[%d] = %g", i, cand[i]);
                if (i % AR_STATE_CAND >= 8) ASSERT_MSG(cand[i] >= 0.0 && cand[i] <= 1.0, "device cand[%d] = %g", i, cand[i]);
            }
        }
        ar_avail_free(&av);
        env_close(&e);
    }
}

/* The device rows' ranking entries (8-11) order the free types: speed rank
 * 1 for the fastest and 0 for the slowest, the memory fit of a stage's
 * state share, shares of free compute that sum to 1, and the speed against
 * the stages already in the template (0.5 = the same type). */
TEST(device_rows_rank_the_free_types)
{
    env e;
    ar_state_static st;
    ar_avail av;
    ar_dec_ctx ctx;
    unsigned char mask[AR_MAX_DEPTH + 1];
    double x[AR_STATE_DIM], cand[(AR_MAX_DEPTH + 1) * AR_STATE_CAND], share = 0;
    int types[2], tps[2] = { 1, 1 }, left[AR_MAX_TYPES], h, a, v, i;
    ASSERT_OK(env_open(&e, "qwen3-32b", "a6000:2x4,h100:2x8,a100-40:2x4"));
    h = ar_cluster_type_index(e.c, "H100");
    a = ar_cluster_type_index(e.c, "A100-40");
    v = ar_cluster_type_index(e.c, "A6000");
    ASSERT(h >= 0 && a >= 0 && v >= 0);
    ASSERT_OK(ar_state_static_init(&st, e.cm));
    ASSERT_OK(ar_avail_init(&av, e.c));
    ASSERT(st.speed[h] > st.speed[a] && st.speed[a] > st.speed[v]);
    for (i = 0; i < e.c->ntypes; i++) left[i] = av.type_free[i];
    ctx_first(&ctx, mask, sizeof mask, &av, e.cm, AR_DEC_TYPE, e.c->ntypes);
    types[0] = h;
    ctx.depth = 2;
    ctx.stage = 1; /* stage 0 is an H100 stage */
    ctx.types = types;
    ctx.tps = tps;
    ctx.type_left = left;
    ar_state_encode(&st, &ctx, x, cand);
#define F(t, k) cand[(t) * AR_STATE_CAND + 8 + (k)]
    ASSERT_NEAR(F(h, 0), 1.0, 1e-12);
    ASSERT_NEAR(F(a, 0), 0.5, 1e-12);
    ASSERT_NEAR(F(v, 0), 0.0, 1e-12);
    /* 2 stages of a 32B model: half its state per stage; an 8-GPU H100 node
     * holds it, the 4-GPU A6000 node about half, the 4-GPU A100-40 node less */
    ASSERT(F(h, 1) > F(v, 1) && F(v, 1) > F(a, 1) && F(a, 1) > 0);
    for (i = 0; i < e.c->ntypes; i++) share += F(i, 2);
    ASSERT_NEAR(share, 1.0, 1e-12);
    ASSERT(F(h, 2) > F(a, 2));
    ASSERT_NEAR(F(h, 3), 0.5, 1e-12);
    ASSERT(F(v, 3) < F(a, 3) && F(a, 3) < 0.5);
    /* a type without free GPUs has no compute share and drops out of the rank */
    left[h] = 0;
    ar_state_encode(&st, &ctx, x, cand);
    ASSERT_EQ(F(h, 2), 0.0);
    ASSERT_EQ(F(h, 0), 0.0);
    ASSERT_NEAR(F(a, 0), 1.0, 1e-12);
    ASSERT_NEAR(F(v, 0), 0.0, 1e-12);
#undef F
    ar_avail_free(&av);
    env_close(&e);
}

/* Width rows, entry 8: the memory r replicas ask of the free GPUs.  A dense
 * model holds its whole state once per replica (r replicas ask r times
 * what one asks); a MoE model under expert tiling spreads its routed
 * experts over the replicas, so they count once, and so does a ZeRO-1
 * optimizer.  At r = 1 every count is the whole state. */
static double width_memory_entry(const char *model, const char *cluster, int dist_optimizer, int tiling, int k)
{
    env e;
    ar_state_static st;
    ar_avail av;
    ar_dec_ctx ctx;
    arachne_plan empty;
    unsigned char mask[AR_MAX_CHOICES];
    int mind[AR_MAX_CHOICES], i;
    double x[AR_STATE_DIM], cand[(AR_MAX_DEPTH + 1) * AR_STATE_CAND], v = -1.0;
    if (env_open(&e, model, cluster)) return -2.0;
    if (arachne_cost_model_set(e.cm, ARACHNE_OPT_DIST_OPTIMIZER, dist_optimizer) ||
        arachne_cost_model_set(e.cm, ARACHNE_OPT_EXPERT_TILING, tiling) || ar_state_static_init(&st, e.cm) ||
        ar_avail_init(&av, e.c)) {
        env_close(&e);
        return -3.0;
    }
    ctx_first(&ctx, mask, sizeof mask, &av, e.cm, AR_DEC_REPLICAS, 4);
    for (i = 0; i < AR_MAX_CHOICES; i++) mind[i] = 4;
    ctx.rep_min_depth = mind;
    memset(&empty, 0, sizeof empty);
    ctx.plan = &empty;
    ar_state_encode(&st, &ctx, x, cand);
    v = cand[k * AR_STATE_CAND + 8];
    ar_avail_free(&av);
    env_close(&e);
    return v;
}

TEST(width_rows_count_shared_model_state_once)
{
    /* big enough that 8 replicas of mixtral's whole state do not clip at 1 */
    const char *big = "h100:64x8";
    double d1 = width_memory_entry("llama3-8b", big, 0, 1, 0), d8 = width_memory_entry("llama3-8b", big, 0, 1, 3);
    double m1 = width_memory_entry("mixtral-8x7b", big, 0, 1, 0), m8 = width_memory_entry("mixtral-8x7b", big, 0, 1, 3);
    double n8 = width_memory_entry("mixtral-8x7b", big, 0, 0, 3);
    double z1 = width_memory_entry("llama3-8b", big, 1, 1, 0), z8 = width_memory_entry("llama3-8b", big, 1, 1, 3);
    ASSERT(d1 > 0 && d8 < 1 && m1 > 0 && m8 < 1 && n8 < 1 && z1 > 0);
    ASSERT_NEAR(d8, 8.0 * d1, 1e-12);
    ASSERT_NEAR(n8, 8.0 * m1, 1e-12);              /* without tiling the experts are copied */
    ASSERT_MSG(m8 < 0.4 * n8, "mixtral x8: %g, whole state x8: %g", m8, n8); /* most of mixtral is experts */
    ASSERT(m8 > m1);
    ASSERT_NEAR(z1, d1, 1e-12);                     /* one replica holds everything */
    ASSERT(z8 < d8 && z8 > z1);                     /* ZeRO-1: the optimizer once */
}

/* Exploration rules draw some choices uniformly (the first template's
 * depth, GPU types); the recording keeps the
 * log-probability of the rule that drew each choice (-log of the choices
 * the draw had), so PPO's ratio is an importance weight. */
TEST(forced_choices_record_the_behaviour_probability)
{
    env e;
    arachne_policy *pol = NULL;
    ar_policy_src src;
    ar_builder b;
    ar_explore ex;
    arachne_plan plan;
    int i, k, forced = 0, own = 0;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:4x4,h100:2x8"));
    ASSERT_OK(arachne_policy_create(&pol, 3, 0, 0));
    ASSERT_OK(ar_policy_src_init(&src, pol->nn, e.cm, 1, 0, 1));
    ASSERT_OK(ar_builder_init(&b, e.cm, NULL));
    memset(&plan, 0, sizeof plan);
    ex.force_depth_p = 1.0;
    ex.uniform_types = 1;
    ar_policy_src_reset(&src, 9, 0, &ex);
    ASSERT_OK(ar_builder_run(&b, ar_policy_decide, &src, &plan, NULL));
    ASSERT(src.nrecs > 0);
    for (i = 0; i < src.nrecs; i++) {
        const ar_decision_rec *r = &src.recs[i];
        const unsigned char *m = src.masks + r->mask_off;
        int n = 0;
        for (k = 0; k < r->K; k++) n += m[k] != 0;
        ASSERT_MSG(m[r->choice], "decision %d picked a masked choice", i);
        /* forced: the first template's depth and every GPU type */
        ASSERT_EQ(r->forced, r->head == AR_HEAD_DEVICE || (r->head == AR_HEAD_DEPTH && r->step == 0));
        if (r->forced) {
            ASSERT_NEAR(r->logp, -log((double)n), 1e-12);
            forced++;
        } else {
            ASSERT(r->logp <= 0 && isfinite(r->logp));
            own++;
        }
    }
    ASSERT(forced > 0 && own > 0);
    ar_plan_clear(&plan);
    ar_builder_free(&b);
    ar_policy_src_free(&src);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* Takes the widest allowed width, else the policy's choice. */
static int widest_then_policy(void *user, const ar_dec_ctx *c, int *choice)
{
    int st = ar_policy_decide(user, c, choice), k;
    if (st == ARACHNE_OK && c->kind == AR_DEC_REPLICAS)
        for (k = 0; k < c->n; k++) if (c->mask[k]) *choice = k;
    return st;
}

/* The policy's construction (feature schema 6) asks for the width first:
 * every step opens with a REPLICAS decision scored by the depth head on
 * rows of its own (entry 7 = -1) with x[126] set, and the template that
 * follows packs at least that many replicas. */
TEST(width_decision_comes_first_and_narrows_the_template)
{
    env e;
    arachne_policy *pol = NULL;
    ar_policy_src src;
    ar_builder b;
    ar_construct_opts o;
    ar_trace tr;
    ar_avail a;
    arachne_plan plan;
    int i, s, r, steps, tps[AR_MAX_DEPTH], types[AR_MAX_DEPTH], widths = 0;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:4x4,h100:2x8"));
    ASSERT_OK(arachne_policy_create(&pol, 3, 0, 0));
    ASSERT_OK(ar_policy_src_init(&src, pol->nn, e.cm, 1, 0, 1));
    ar_policy_construct_opts(&o);
    ASSERT_EQ(o.replica_first, 1);
    ASSERT_OK(ar_builder_init(&b, e.cm, &o));
    memset(&plan, 0, sizeof plan);
    memset(&a, 0, sizeof a);
    ar_trace_init(&tr);
    ar_policy_src_reset(&src, 5, 0, NULL);
    ASSERT_OK(ar_builder_run(&b, widest_then_policy, &src, &plan, &tr));
    for (s = 0, steps = 0; s < tr.nsteps; s++) {
        if (tr.steps[s].ndec == 0) continue; /* nothing fits: the step ended without a decision */
        ASSERT_EQ(tr.dec[tr.steps[s].first_dec].kind, AR_DEC_REPLICAS);
        steps++;
    }
    ASSERT(steps >= 1);
    for (i = 0; i < src.nrecs; i++) {
        const ar_decision_rec *rec = &src.recs[i];
        const double *x = src.pool + rec->x_off;
        if (x[126] != 1.0) continue;
        widths++;
        ASSERT_EQ(rec->head, AR_HEAD_DEPTH);
        ASSERT_EQ(src.pool[rec->cand_off + 7], -1.0);
    }
    ASSERT_EQ(widths, steps);
    /* the first template against the whole cluster */
    r = 1 << tr.dec[0].choice;
    ASSERT(r >= 8);
    for (s = 0; s < plan.t[0].depth; s++) { types[s] = plan.t[0].stages[s].type; tps[s] = plan.t[0].stages[s].tp; }
    ASSERT_OK(ar_avail_init(&a, e.c));
    ASSERT(ar_pack_max_replicas(e.c, &a, plan.t[0].depth, types, tps) >= r);
    ar_avail_free(&a);
    ar_trace_free(&tr);
    ar_plan_clear(&plan);
    ar_builder_free(&b);
    ar_policy_src_free(&src);
    arachne_policy_destroy(pol);
    env_close(&e);
}

SUITE(policy, T(forced_choices_record_the_behaviour_probability), T(width_rows_count_shared_model_state_once), T(width_decision_comes_first_and_narrows_the_template), T(device_rows_rank_the_free_types),
      T(untrained_policy_plans_every_preset_on_the_paper_mix),
      T(same_seed_same_plan_and_best_of_k_is_no_worse_than_greedy),
      T(metadata_is_checked_when_set), T(saved_and_loaded_policy_gives_bit_identical_plans),
      T(policy_api_rejects_bad_arguments),
      T(state_is_finite_bounded_and_independent_of_cluster_size));
