/* test_hybrid.c -- hybrid layer stacks (Mamba-2 / attention / MLP / MoE
 * layers in a pattern, Nemotron-H): parameter counts and FLOPs by hand,
 * validation, JSON, the profile generator's kinds and TP rule, and plans
 * (layer splits over mixed kinds, expert tiling, CP refused). */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "harness.h"
#include "cost.h"
#include "model.h"

#define NANO "examples/models/nemotron3-nano-30b-a3b.json"
#define NANO_PATTERN "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"

#define field model_field
#define kparams model_layer_params

/* Nemotron 3 Nano written out by hand from its configuration
 * (docs/models.md): 23 Mamba-2, 6 attention and 23 MoE layers. */
TEST(nemotron_nano_parameters_by_hand)
{
    arachne_model *m = NULL;
    double h = 2688, V = 131072, di = 64 * 64, bc = 8 * 128, mamba, attn, expert, moe_common, total, active;
    ASSERT_OK(arachne_model_load(&m, NANO));
    mamba = h + h * (2 * di + 2 * bc + 64) + di * h + (di + 2 * bc) * (4 + 1) + 3 * 64 + di;
    attn = h + h * 32 * 128 + 2 * h * 2 * 128 + 32 * 128 * h;
    expert = 2 * h * 1856; /* squared ReLU: up and down */
    moe_common = h + h * 128 + 2 * expert;
    total = 2 * V * h + h + 23 * mamba + 6 * attn + 23 * (moe_common + 128 * expert);
    active = 2 * V * h + h + 23 * mamba + 6 * attn + 23 * (moe_common + 6 * expert);
    ASSERT_EQ((long long)kparams(m, ARACHNE_LAYER_MAMBA), 38744896LL);
    ASSERT_EQ((long long)kparams(m, ARACHNE_LAYER_MAMBA), (long long)mamba);
    ASSERT_EQ((long long)kparams(m, ARACHNE_LAYER_ATTENTION), (long long)attn);
    ASSERT_EQ((long long)kparams(m, ARACHNE_LAYER_MOE_MLP), (long long)(moe_common + 128 * expert));
    ASSERT_EQ((long long)kparams(m, ARACHNE_LAYER_DENSE), 0);
    ASSERT_EQ((long long)kparams(m, ARACHNE_LAYER_MLP), 0);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_TOTAL_PARAMS), (long long)total);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_TOTAL_PARAMS), 31577937344LL);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_ACTIVE_PARAMS), (long long)active);
    /* the model card: 31.6 B in all, 3.6 B active with the embeddings */
    ASSERT_NEAR(field(m, ARACHNE_MODEL_TOTAL_PARAMS), 31.6e9, 0.002);
    ASSERT_NEAR(field(m, ARACHNE_MODEL_ACTIVE_PARAMS), 3.6e9, 0.01);
    ASSERT_EQ(field(m, ARACHNE_MODEL_MAMBA_LAYERS), 23);
    ASSERT_EQ(field(m, ARACHNE_MODEL_ATTENTION_LAYERS), 6);
    ASSERT_EQ(field(m, ARACHNE_MODEL_MLP_LAYERS), 0);
    ASSERT_EQ(field(m, ARACHNE_MODEL_MOE_MLP_LAYERS), 23);
    ASSERT_EQ(field(m, ARACHNE_MODEL_DENSE_BLOCKS), 0);
    ASSERT_EQ(field(m, ARACHNE_MODEL_MOE_BLOCKS), 0);
    ASSERT_EQ(field(m, ARACHNE_MODEL_MAMBA_CHUNK), 128);
    ASSERT_EQ(ar_model_block_kind(m, 0), AR_LAYER_MAMBA);
    ASSERT_EQ(ar_model_block_kind(m, 1), AR_LAYER_MOE_MLP);
    ASSERT_EQ(ar_model_block_kind(m, 5), AR_LAYER_ATTENTION);
    ASSERT(ar_model_block_routed(m, 1) && !ar_model_block_routed(m, 0));
    arachne_model_destroy(m);
}

/* FLOPs per token of each layer kind against the shapes. */
TEST(hybrid_flops_by_hand)
{
    arachne_model *m = NULL;
    double h = 2688, di = 4096, bc = 1024, f = -1, seq = 4096, ssd, gemms, attn;
    ASSERT_OK(arachne_model_load(&m, NANO));
    /* SSD scan per token, chunk 128: C B^T per group + per head the masked
     * product with x, the chunk states and their outputs */
    ssd = 2.0 * 128 * 128 * 8 + 64 * (2.0 * 128 * 64 + 4.0 * 128 * 64);
    gemms = h * (2 * di + 2 * bc + 64) + di * h;
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_MAMBA, (int)seq, 2, &f));
    ASSERT_NEAR(f, 2 * seq * (2 * gemms + 2 * (di + 2 * bc) * 4 + ssd), 1e-12);
    /* shorter than a chunk: the chunk shrinks to the sequence */
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_MAMBA, 64, 1, &f));
    ASSERT_NEAR(f, 64 * (2 * gemms + 2 * (di + 2 * bc) * 4 + 2.0 * 64 * 128 * 8 + 64 * (2.0 * 64 * 64 + 4.0 * 128 * 64)),
                1e-12);
    attn = h * 4096 + 2 * h * 256 + 4096 * h;
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_ATTENTION, (int)seq, 1, &f));
    ASSERT_NEAR(f, seq * (2 * attn + 4 * seq * 32 * 128), 1e-12);
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_MOE_MLP, (int)seq, 1, &f));
    ASSERT_NEAR(f, seq * 2 * (h * 128 + (6 + 2) * 2 * h * 1856), 1e-12);
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_DENSE, (int)seq, 1, &f));
    ASSERT_EQ(f, 0);
    /* activations: full recomputation keeps each layer's input only */
    ASSERT_OK(arachne_model_layer_act_bytes(m, ARACHNE_LAYER_MAMBA, 4096, 1, 1, ARACHNE_RECOMPUTE_FULL, &f));
    ASSERT_NEAR(f, 4096 * 2 * h, 1e-12);
    ASSERT_OK(arachne_model_layer_act_bytes(m, ARACHNE_LAYER_MAMBA, 4096, 1, 2, ARACHNE_RECOMPUTE_SELECTIVE, &f));
    ASSERT_NEAR(f, 4096 * (4 * h + 2 * (2 * di + 2 * bc + 64) + 4 * di) / 2, 1e-12);
    arachne_model_destroy(m);
}

static int try_json(const char *hybrid_member, const char *moe)
{
    char buf[1024];
    arachne_model *m = NULL;
    int st;
    snprintf(buf, sizeof buf,
             "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"h\",\"blocks\":4,\"hidden\":64,\"heads\":4,"
             "\"kv_heads\":2,\"head_dim\":16,\"ffn\":128,\"vocab\":100%s%s}",
             moe, hybrid_member);
    arachne_clear_error();
    st = arachne_model_from_json(&m, buf, strlen(buf));
    if (st == ARACHNE_OK) {
        const char *txt = NULL;
        arachne_model *back = NULL;
        /* a valid model writes JSON that reads back to the same text */
        if (arachne_model_to_json(m, &txt) || arachne_model_from_json(&back, txt, strlen(txt))) st = -1;
        else {
            const char *t2 = NULL;
            if (arachne_model_to_json(back, &t2) || strcmp(txt, t2)) st = -2;
        }
        arachne_model_destroy(back);
        arachne_model_destroy(m);
    } else if (m != NULL) {
        st = -3;
    }
    return st;
}

#define MAMBA_SIZES "\"mamba_heads\":4,\"mamba_head_dim\":16,\"mamba_state\":8,\"mamba_groups\":2,\"mamba_conv\":4,\"mamba_chunk\":32"
#define MOE ",\"experts\":4,\"top_k\":2,\"expert_ffn\":32"

TEST(hybrid_validation_names_the_problem)
{
    ASSERT_OK(try_json(",\"hybrid\":{\"pattern\":\"M*-M\"," MAMBA_SIZES "}", ""));
    ASSERT_OK(try_json(",\"hybrid\":{\"pattern\":\"*-*-\"}", ""));
    ASSERT_OK(try_json(",\"hybrid\":{\"pattern\":\"ME*E\"," MAMBA_SIZES "}", MOE));
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"M*x-\"," MAMBA_SIZES "}", ""), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "symbol 3");
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"M*-\"," MAMBA_SIZES "}", ""), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "3 layers, but blocks = 4");
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"M*-M\"}", ""), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "mamba_heads");
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"*-*-\"," MAMBA_SIZES "}", ""), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "no M layer");
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"*E*E\"}", ""), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "E layers but experts");
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"*-*-\"}", MOE), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "no E layer");
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"M*-M\",\"mamba_heads\":3,\"mamba_head_dim\":16,\"mamba_state\":8,"
                       "\"mamba_groups\":2,\"mamba_conv\":4,\"mamba_chunk\":32}", ""),
              ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "mamba_groups");
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"\"}", ""), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "pattern");
    ASSERT_EQ(try_json(",\"hybrid\":{\"pattern\":\"*E*E\",\"bogus\":1}", MOE), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "bogus");
    ASSERT_EQ(try_json(",\"dense_prefix\":1,\"hybrid\":{\"pattern\":\"*E*E\"}", MOE), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "dense_prefix");
}

/* The generator profiles the kinds the pattern has, at the TP degrees
 * that split every Mamba head and B/C group whole. */
TEST(hybrid_profile_kinds_and_tp_rule)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    double fwd, bwd, comm, act;
    const char *json =
        "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"h\",\"blocks\":4,\"hidden\":256,\"heads\":8,"
        "\"kv_heads\":8,\"head_dim\":32,\"ffn\":512,\"vocab\":1000,\"hybrid\":{\"pattern\":\"M*-M\","
        "\"mamba_heads\":8,\"mamba_head_dim\":32,\"mamba_state\":16,\"mamba_groups\":2,\"mamba_conv\":4,"
        "\"mamba_chunk\":64}}";
    ASSERT_OK(arachne_model_from_json(&m, json, strlen(json)));
    ASSERT_OK(arachne_cluster_parse(&c, "h100:1x8"));
    ASSERT_OK(arachne_profile_generate(&p, m, c, 1024));
    ASSERT_OK(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_MAMBA, 2, 1, &fwd, &bwd, &comm, &act));
    ASSERT(fwd > 0 && bwd > fwd && comm > 0 && act > 0);
    ASSERT_OK(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_ATTENTION, 1, 4, &fwd, &bwd, &comm, &act));
    ASSERT_OK(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_MLP, 1, 4, &fwd, &bwd, &comm, &act));
    ASSERT_STATUS(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_DENSE, 1, 4, &fwd, &bwd, &comm, &act),
                  ARACHNE_E_NOT_FOUND);
    /* 2 B/C groups: tp 4 would split a group */
    ASSERT_STATUS(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_MAMBA, 4, 1, &fwd, &bwd, &comm, &act),
                  ARACHNE_E_NOT_FOUND);
    ASSERT_STATUS(arachne_profile_lookup(p, "H100", ARACHNE_LAYER_ATTENTION, 4, 1, &fwd, &bwd, &comm, &act),
                  ARACHNE_E_NOT_FOUND);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
}

typedef env henv;

static int h_open(henv *e, const char *cluster) { return env_open_file(e, NANO, cluster); }

static void h_close(henv *e) { env_close(e); }

/* A stage's price is the sum over its layers' kinds: a two-stage pipeline
 * split between layers prices each side from its own mix of Mamba, MoE
 * and attention layers, and the layers with experts get the EP tiling. */
TEST(hybrid_plan_prices_each_stage_from_its_kinds)
{
    henv e;
    arachne_plan *a = NULL, *b = NULL;
    double first = 0, end = 0, ep = 0;
    ASSERT_OK(h_open(&e, "h100:2x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    ASSERT_OK(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=2,dp=8,mbs=1,ep=8"));
    ASSERT_OK(arachne_plan_stage_get(a, 0, 1, ARACHNE_STAGE_FIRST_LAYER, &first));
    ASSERT_OK(arachne_plan_stage_get(a, 0, 1, ARACHNE_STAGE_END_LAYER, &end));
    ASSERT(first > 0 && end == 52);
    ASSERT_OK(arachne_plan_stage_get(a, 0, 0, ARACHNE_STAGE_EP, &ep));
    ASSERT_EQ(ep, 8);
    ASSERT(a->iteration_s > 0);
    /* full recomputation adds a forward: slower, less memory */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
    ASSERT_OK(arachne_plan_from_parallel(&b, e.cm, "tp=1,pp=2,dp=8,mbs=1,ep=8"));
    ASSERT(b->iteration_s > a->iteration_s);
    arachne_plan_destroy(b);
    b = NULL;
    /* context parallelism over Mamba layers is refused with a reason */
    ASSERT_STATUS(arachne_plan_from_parallel(&b, e.cm, "tp=1,pp=1,cp=2,dp=8,mbs=1,ep=8"), ARACHNE_E_INVALID_PLAN);
    ASSERT_CONTAINS(arachne_last_error(), "Mamba");
    ASSERT(b == NULL);
    arachne_plan_destroy(a);
    h_close(&e);
}

/* The planner covers the 52 layers, never offers CP for a Mamba model, and
 * gives the same plan on a second run. */
TEST(hybrid_planner_builds_and_repeats)
{
    henv e;
    arachne_policy *pol = NULL;
    arachne_plan *p1 = NULL, *p2 = NULL;
    const char *j1 = NULL, *j2 = NULL;
    int t, n;
    if (arachne_policy_load(&pol, "examples/policies/default.arpol") != ARACHNE_OK) {
        arachne_clear_error();
        ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    }
    ASSERT_OK(h_open(&e, "h100:2x8,a100-80:2x8"));
    ASSERT_OK(arachne_plan_build(&p1, pol, e.cm, 4, 0));
    ASSERT_OK(arachne_plan_build(&p2, pol, e.cm, 4, 0));
    ASSERT_OK(arachne_plan_to_json(p1, &j1));
    ASSERT_OK(arachne_plan_to_json(p2, &j2));
    /* the same bytes up to the planner's own record (its wall time differs) */
    ASSERT(strstr(j1, "\"planner\"") != NULL);
    ASSERT_EQ(strstr(j1, "\"planner\"") - j1, strstr(j2, "\"planner\"") - j2);
    ASSERT(memcmp(j1, j2, (size_t)(strstr(j1, "\"planner\"") - j1)) == 0);
    n = (int)p1->ntemplates;
    ASSERT(n >= 1);
    for (t = 0; t < n; t++) {
        double cp = 0, depth = 0, end = 0;
        ASSERT_OK(arachne_plan_template_get(p1, t, ARACHNE_TEMPLATE_CP, &cp));
        ASSERT(cp <= 1);
        ASSERT_OK(arachne_plan_template_get(p1, t, ARACHNE_TEMPLATE_DEPTH, &depth));
        ASSERT_OK(arachne_plan_stage_get(p1, t, (int)depth - 1, ARACHNE_STAGE_END_LAYER, &end));
        ASSERT_EQ(end, 52);
    }
    arachne_plan_destroy(p1);
    arachne_plan_destroy(p2);
    arachne_policy_destroy(pol);
    h_close(&e);
}

/* Megatron gets the pattern and the Mamba flags; torchtitan and FlashFlex,
 * which build transformer blocks only, say they cannot run it. */
TEST(hybrid_exports)
{
    henv e;
    arachne_plan *a = NULL;
    static char buf[1 << 16];
    size_t need = 0;
    ASSERT_OK(h_open(&e, "h100:2x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    ASSERT_OK(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=2,dp=8,mbs=1,ep=8"));
    ASSERT_OK(arachne_plan_export(a, ARACHNE_EXPORT_MEGATRON, buf, sizeof buf, &need));
    ASSERT_CONTAINS(buf, "--hybrid-override-pattern " NANO_PATTERN);
    ASSERT_CONTAINS(buf, "--mamba-num-heads 64 --mamba-head-dim 64 --mamba-state-dim 128 --mamba-num-groups 8");
    ASSERT_CONTAINS(buf, "pretrain_mamba.py");
    ASSERT(strstr(buf, "--moe-layer-freq") == NULL);
    ASSERT_OK(arachne_plan_export(a, ARACHNE_EXPORT_TORCHTITAN, buf, sizeof buf, &need));
    ASSERT_CONTAINS(buf, "NOTE: the model is a hybrid layer stack");
    ASSERT_OK(arachne_plan_export(a, ARACHNE_EXPORT_TORCHTITAN_CLI, buf, sizeof buf, &need));
    ASSERT_CONTAINS(buf, "torchtitan builds transformer blocks only");
    ASSERT_OK(arachne_plan_export(a, ARACHNE_EXPORT_FLASHFLEX, buf, sizeof buf, &need));
    ASSERT_CONTAINS(buf, "FlashFlex builds transformer blocks only");
    ASSERT_STATUS(arachne_plan_export(a, ARACHNE_EXPORT_SAILOR, buf, sizeof buf, &need), ARACHNE_E_UNSUPPORTED);
    ASSERT_CONTAINS(arachne_last_error(), "hybrid layer stack");
    arachne_plan_destroy(a);
    h_close(&e);
}

/* LatentMoE: routed experts in the latent width, the two projections,
 * and EP moving latent-width vectors. */
TEST(latent_moe_params_flops_and_dispatch)
{
    arachne_model *m = NULL, *plain = NULL;
    const char *json =
        "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"lat\",\"blocks\":4,\"hidden\":512,"
        "\"heads\":8,\"kv_heads\":2,\"head_dim\":64,\"ffn\":0,\"vocab\":1000,\"experts\":16,\"top_k\":4,"
        "\"shared_experts\":1,\"expert_ffn\":256,\"expert_latent\":128,\"gated_mlp\":false,"
        "\"hybrid\":{\"pattern\":\"*E*E\"}}";
    const char *txt = NULL;
    double h = 512, L = 128, f = 256, moe, flops = 0;
    ASSERT_OK(arachne_model_from_json(&m, json, strlen(json)));
    moe = h + h * 16 + 2 * h * f + 2 * h * L + 16 * 2 * L * f;
    ASSERT_EQ((long long)kparams(m, ARACHNE_LAYER_MOE_MLP), (long long)moe);
    ASSERT_EQ(field(m, ARACHNE_MODEL_EXPERT_LATENT), 128);
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_MOE_MLP, 100, 1, &flops));
    ASSERT_NEAR(flops, 100 * 2 * (h * 16 + 4 * 2 * L * f + 2 * h * f + 2 * h * L), 1e-12);
    ASSERT_OK(arachne_model_to_json(m, &txt));
    ASSERT_CONTAINS(txt, "\"expert_latent\": 128");
    /* without experts the latent width is refused */
    {
        const char *bad = "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"x\",\"blocks\":2,\"hidden\":64,"
                          "\"heads\":4,\"kv_heads\":2,\"head_dim\":16,\"ffn\":128,\"vocab\":100,\"expert_latent\":8}";
        ASSERT_STATUS(arachne_model_from_json(&plain, bad, strlen(bad)), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT_CONTAINS(arachne_last_error(), "expert_latent");
    }
    arachne_model_destroy(m);
}

/* Hierarchical dispatch (DeepEP): across nodes a token crosses the network
 * once per remote node holding one of its experts; inside a node nothing
 * changes. */
TEST(ep_hierarchical_dispatch)
{
    henv e;
    arachne_plan *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    double ea = 0, eb = 0, ec = 0, ed = 0, E = 128, pnone = 1, tokens = 4096, dn, dg, net, nvl, want;
    const ar_gpu_spec *g;
    int i;
    ASSERT_OK(h_open(&e, "h100:8x8"));
    g = &e.c->types[0];
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 512));
    ASSERT_OK(arachne_plan_from_parallel(&a, e.cm, "tp=1,pp=1,dp=64,mbs=1,ep=64"));
    ASSERT_OK(arachne_plan_from_parallel(&c, e.cm, "tp=1,pp=1,dp=64,mbs=1,ep=8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EP_HIERARCHICAL, 1));
    ASSERT_OK(arachne_plan_from_parallel(&b, e.cm, "tp=1,pp=1,dp=64,mbs=1,ep=64"));
    ASSERT_OK(arachne_plan_from_parallel(&d, e.cm, "tp=1,pp=1,dp=64,mbs=1,ep=8"));
    ASSERT_OK(arachne_plan_stage_get(a, 0, 0, ARACHNE_STAGE_EP_COMM_S, &ea));
    ASSERT_OK(arachne_plan_stage_get(b, 0, 0, ARACHNE_STAGE_EP_COMM_S, &eb));
    ASSERT_OK(arachne_plan_stage_get(c, 0, 0, ARACHNE_STAGE_EP_COMM_S, &ec));
    ASSERT_OK(arachne_plan_stage_get(d, 0, 0, ARACHNE_STAGE_EP_COMM_S, &ed));
    ASSERT(eb < ea);
    ASSERT_EQ(ec, ed); /* EP 8 stays inside a node */
    /* by hand: 8 nodes of 16 experts, 64 GPUs of 2, top-6 */
    for (i = 0; i < 6; i++) pnone *= (E - 16 - i) / (E - i);
    dn = 8 * (1 - pnone);
    pnone = 1;
    for (i = 0; i < 6; i++) pnone *= (E - 2 - i) / (E - i);
    dg = 64 * (1 - pnone);
    net = tokens * dn * 7.0 / 8 * 2688 * 2;
    nvl = tokens * dg * 2688 * 2 * 7.0 / 8;
    want = 23 * 4 * (net / e.c->link_bw[0][0] + nvl / g->intra_bw + 7 * g->inter_lat + 7 * g->intra_lat);
    ASSERT_NEAR(eb, want, 1e-9);
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    arachne_plan_destroy(c);
    arachne_plan_destroy(d);
    h_close(&e);
}

SUITE(hybrid, T(nemotron_nano_parameters_by_hand), T(hybrid_flops_by_hand), T(hybrid_validation_names_the_problem),
      T(hybrid_profile_kinds_and_tp_rule), T(hybrid_plan_prices_each_stage_from_its_kinds),
      T(hybrid_planner_builds_and_repeats), T(hybrid_exports), T(latent_moe_params_flops_and_dispatch),
      T(ep_hierarchical_dispatch));
