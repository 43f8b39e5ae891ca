/* test_model.c -- presets, parameter counts, FLOPs, activation bytes,
 * validation, JSON round trips and the `arachne models` command. */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "harness.h"
#include "json.h"
#include "model.h"

#define field model_field
#define kind_params model_layer_params

/* Published totals (the model cards; sources in docs/models.md) and the exact counts our shapes give. */
static const struct {
    const char *name;
    double published_total, published_active; /* active 0: dense, equals total */
    double exact_total;
} want[] = {
    { "llama3-8b", 8030261248.0, 0, 8030261248.0 },
    { "llama3-70b", 70553706496.0, 0, 70553706496.0 },
    { "qwen3-8b", 8.19e9, 0, 8190735360.0 },
    { "qwen3-32b", 32.76e9, 0, 32762123264.0 },
    { "qwen3-64b", 63.97e9, 0, 63968416768.0 },
    { "qwen3-30b-a3b", 30.53e9, 3.35e9, 30532122624.0 },
    { "mixtral-8x7b", 46.70e9, 12.88e9, 46702792704.0 },
    { "deepseek-v3", 671.0e9, 37.5e9, 671026404352.0 },
};

TEST(presets_match_published_totals)
{
    size_t i;
    ASSERT_EQ(arachne_model_preset_count(), (int)(sizeof want / sizeof want[0]));
    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        arachne_model *m = NULL;
        double total, active;
        ASSERT_STR(arachne_model_preset_name((int)i), want[i].name); /* same order as the table */
        ASSERT_OK(arachne_model_preset(&m, want[i].name));
        total = field(m, ARACHNE_MODEL_TOTAL_PARAMS);
        active = field(m, ARACHNE_MODEL_ACTIVE_PARAMS);
        arachne_model_destroy(m);
        ASSERT_NEAR(total, want[i].published_total, 0.002);
        ASSERT_EQ((long long)total, (long long)want[i].exact_total);
        if (want[i].published_active > 0) ASSERT_NEAR(active, want[i].published_active, 0.002);
        else ASSERT_EQ((long long)active, (long long)total);
    }
}

TEST(llama3_8b_exact_layer_params)
{
    arachne_model *m = NULL;
    double h = 4096, V = 128256, attn, mlp;
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    attn = h * 32 * 128 + 2 * h * 8 * 128 + 32 * 128 * h;
    mlp = 3 * h * 14336;
    ASSERT_EQ((long long)kind_params(m, ARACHNE_LAYER_EMBED), (long long)(V * h));
    ASSERT_EQ((long long)kind_params(m, ARACHNE_LAYER_DENSE), (long long)(attn + mlp + 2 * h));
    ASSERT_EQ((long long)kind_params(m, ARACHNE_LAYER_HEAD), (long long)(h + V * h));
    ASSERT_EQ((long long)kind_params(m, ARACHNE_LAYER_MOE), 0);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_TOTAL_PARAMS), 8030261248LL);
    ASSERT_EQ(ar_model_kind_count(m, AR_LAYER_DENSE), 32);
    ASSERT_EQ(ar_model_kind_count(m, AR_LAYER_MOE), 0);
    ASSERT_EQ(ar_model_kind_count(m, AR_LAYER_EMBED), 1);
    ASSERT_EQ(ar_model_block_kind(m, 31), AR_LAYER_DENSE);
    arachne_model_destroy(m);
}

TEST(moe_structure_and_expert_share)
{
    arachne_model *m = NULL;
    double h = 7168, expert = 3 * h * 2048, moe;
    ASSERT_OK(arachne_model_preset(&m, "DeepSeek-V3")); /* case-insensitive */
    ASSERT_EQ(ar_model_kind_count(m, AR_LAYER_DENSE), 3);
    ASSERT_EQ(ar_model_kind_count(m, AR_LAYER_MOE), 58);
    ASSERT_EQ(field(m, ARACHNE_MODEL_DENSE_BLOCKS), 3);
    ASSERT_EQ(field(m, ARACHNE_MODEL_MOE_BLOCKS), 58);
    ASSERT_EQ(ar_model_block_kind(m, 2), AR_LAYER_DENSE);
    ASSERT_EQ(ar_model_block_kind(m, 3), AR_LAYER_MOE);
    ASSERT_EQ(ar_model_block_kind(m, 60), AR_LAYER_MOE);
    ASSERT_EQ((long long)m->expert_params[AR_LAYER_MOE], (long long)(256 * expert));
    moe = kind_params(m, ARACHNE_LAYER_MOE);
    /* router + 1 shared expert + attention + norms on top of the routed experts */
    ASSERT_EQ((long long)(moe - m->expert_params[AR_LAYER_MOE] - h * 256 - expert),
              (long long)(m->params[AR_LAYER_DENSE] - 3 * h * 18432));
    ASSERT_EQ((long long)(moe - m->active_params[AR_LAYER_MOE]), (long long)(248 * expert));
    arachne_model_destroy(m);
}

TEST(preset_lookup)
{
    arachne_model *m = (arachne_model *)1;
    const char *name = NULL;
    int i;
    for (i = 0; i < arachne_model_preset_count(); i++) ASSERT(arachne_model_preset_name(i) != NULL);
    ASSERT(arachne_model_preset_name(-1) == NULL);
    ASSERT(arachne_model_preset_name(arachne_model_preset_count()) == NULL);
    ASSERT_STATUS(arachne_model_preset(&m, "llama-9000"), ARACHNE_E_NOT_FOUND);
    ASSERT(m == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "llama-9000");
    ASSERT_STATUS(arachne_model_preset(NULL, "llama3-8b"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_model_preset(&m, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_model_preset(&m, "QWEN3-32B"));
    ASSERT_OK(arachne_model_name(m, &name));
    ASSERT_STR(name, "qwen3-32b");
    /* head_dim is not hidden / heads for Qwen3-32B */
    ASSERT_EQ(field(m, ARACHNE_MODEL_HEAD_DIM), 128);
    ASSERT_EQ(field(m, ARACHNE_MODEL_HIDDEN), 5120);
    ASSERT_EQ(field(m, ARACHNE_MODEL_QK_NORM), 1);
    ASSERT_STATUS(arachne_model_get(m, 999, NULL), ARACHNE_E_INVALID_ARGUMENT);
    {
        double v;
        ASSERT_STATUS(arachne_model_get(m, 999, &v), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT_STATUS(arachne_model_get(m, -1, &v), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT_STATUS(arachne_model_layer_params(m, 8, &v), ARACHNE_E_INVALID_ARGUMENT);
    }
    arachne_model_destroy(m);
    arachne_model_destroy(NULL);
}

TEST(flops_follow_the_shapes)
{
    arachne_model *m = NULL;
    double h = 4096, s = 4096, b = 2, f, attn_mm, want_dense, want_moe;
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    attn_mm = h * 32 * 128 + 2 * h * 8 * 128 + 32 * 128 * h;
    want_dense = (2 * (attn_mm + 3 * h * 14336) + 4 * s * 32 * 128) * s * b;
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_DENSE, 4096, 2, &f));
    ASSERT_NEAR(f, want_dense, 1e-12);
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_HEAD, 4096, 2, &f));
    ASSERT_NEAR(f, 2 * h * 128256 * s * b, 1e-12);
    ASSERT_OK(arachne_model_layer_flops(m, ARACHNE_LAYER_EMBED, 4096, 2, &f));
    ASSERT_EQ(f, 0);
    ASSERT_STATUS(arachne_model_layer_flops(m, ARACHNE_LAYER_DENSE, 0, 2, &f), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_EQ(ar_model_flops_fwd(m, AR_LAYER_MOE, 4096, 2), 0); /* a dense model has no MoE block */
    ASSERT_EQ(ar_model_act_bytes(m, AR_LAYER_MOE, 4096, 2, 1, AR_RECOMPUTE_NONE), 0);
    /* whole-model forward ~ 2 x params per token plus attention */
    ASSERT_NEAR(32 * ar_model_flops_fwd(m, AR_LAYER_DENSE, 1, 1) + ar_model_flops_fwd(m, AR_LAYER_HEAD, 1, 1),
                2 * (field(m, ARACHNE_MODEL_TOTAL_PARAMS) - 128256 * h), 0.001);
    arachne_model_destroy(m);

    ASSERT_OK(arachne_model_preset(&m, "mixtral-8x7b"));
    want_moe = (2 * (attn_mm + 8 * h + 2 * 3 * h * 14336) + 4 * s * 32 * 128) * s * b;
    ASSERT_NEAR(ar_model_flops_fwd(m, AR_LAYER_MOE, 4096, 2), want_moe, 1e-12);
    arachne_model_destroy(m);

    ASSERT_OK(arachne_model_preset(&m, "deepseek-v3"));
    {
        double H = 128, hd = 7168, mla = hd * 1536 + 1536 * H * 192 + hd * (512 + 64) + 512 * H * 256 + H * 128 * hd;
        double core = 2 * s * H * 192 + 2 * s * H * 128;
        double want = (2 * (mla + hd * 256 + 9 * 3 * hd * 2048) + core) * s;
        ASSERT_NEAR(ar_model_flops_fwd(m, AR_LAYER_MOE, 4096, 1), want, 1e-12);
    }
    arachne_model_destroy(m);
}

/* Hand computation for LLaMA-3-8B (h = 4096, 32 heads of 128, 8 KV heads,
 * SwiGLU 14336 = 3.5 h), bytes per token of one block, tp = 1:
 *   norm1 in 2h + norm1 out 2h + q 2h + k 0.5h + v 0.5h + context 2h
 *   + norm2 in 2h + norm2 out 2h + gate/up/product 6 x 3.5h = 21h  -> 34 h
 * selective adds the FlashAttention log-sum-exp 4 x heads; none adds the
 * softmax output 2 x heads x s; full keeps only the block input 2h.
 * With TP t and sequence parallelism every term is divided by t. */
TEST(llama3_8b_activation_bytes_by_hand)
{
    arachne_model *m = NULL;
    double s = 4096, b = 2, h = 4096, a = 32, v;
    int t;
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    for (t = 1; t <= 8; t *= 2) {
        double sel = s * b * (34 * h + 4 * a) / t;
        double none = s * b * (34 * h + 2 * a * s) / t;
        double full = s * b * 2 * h / t;
        ASSERT_OK(arachne_model_layer_act_bytes(m, ARACHNE_LAYER_DENSE, 4096, 2, t, ARACHNE_RECOMPUTE_SELECTIVE, &v));
        ASSERT_NEAR(v, sel, 1e-12);
        ASSERT_OK(arachne_model_layer_act_bytes(m, ARACHNE_LAYER_DENSE, 4096, 2, t, ARACHNE_RECOMPUTE_NONE, &v));
        ASSERT_NEAR(v, none, 1e-12);
        ASSERT_OK(arachne_model_layer_act_bytes(m, ARACHNE_LAYER_DENSE, 4096, 2, t, ARACHNE_RECOMPUTE_FULL, &v));
        ASSERT_NEAR(v, full, 1e-12);
        /* head: norm in/out in 16-bit + fp32 logits = 4sbh + 4sbV (docs/models.md, "Activation bytes") */
        ASSERT_NEAR(ar_model_act_bytes(m, AR_LAYER_HEAD, 4096, 2, t, AR_RECOMPUTE_SELECTIVE),
                    (4 * s * b * h + 4 * s * b * 128256) / t, 1e-12);
    }
    ASSERT_NEAR(ar_model_act_bytes(m, AR_LAYER_EMBED, 4096, 2, 1, AR_RECOMPUTE_NONE), 8 * s * b, 1e-12);
    ASSERT_NEAR(ar_model_boundary_bytes(m, 4096, 2), s * b * h * 2, 1e-12);
    ASSERT_STATUS(arachne_model_layer_act_bytes(m, ARACHNE_LAYER_DENSE, 4096, 2, 1, 3, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_model_layer_act_bytes(m, ARACHNE_LAYER_DENSE, 4096, 2, 0, 1, &v), ARACHNE_E_INVALID_ARGUMENT);
    arachne_model_destroy(m);
}

/* Mixtral MoE block (h = 4096, 8 experts top-2 of width 14336 = 3.5 h):
 * attention part as LLaMA (2+2+2+0.5+0.5+2+2 = 11 h), norm2 out 2h,
 * router logits 2 x 8, and per routed copy: input 2h + 21h + output 2h. */
TEST(moe_activation_bytes_by_hand)
{
    arachne_model *m = NULL;
    double s = 4096, h = 4096, a = 32;
    ASSERT_OK(arachne_model_preset(&m, "mixtral-8x7b"));
    ASSERT_NEAR(ar_model_act_bytes(m, AR_LAYER_MOE, 4096, 1, 1, AR_RECOMPUTE_SELECTIVE),
                s * (11 * h + 2 * h + 2 * 8 + 2 * (2 * h + 21 * h + 2 * h) + 4 * a), 1e-12);
    ASSERT_NEAR(ar_model_act_bytes(m, AR_LAYER_MOE, 4096, 1, 4, AR_RECOMPUTE_FULL), s * 2 * h / 4, 1e-12);
    arachne_model_destroy(m);
    /* Qwen3-30B-A3B: 4 KV heads; at tp 8 each GPU keeps one KV head. */
    ASSERT_OK(arachne_model_preset(&m, "qwen3-30b-a3b"));
    {
        double H = 32, hd = 128, hh = 2048, t = 8, e = 768;
        double attn = 4 * hh / t + 2 * (H / t + 1) * hd + 2 * (H / t) * hd + 2 * 1 * hd * 2 + 2 * (H / t) * hd + 2 * hh / t;
        double want = s * (attn + 2 * hh / t + 2 * 128 / t + 8 * (4 * hh / t + 6 * e / t) + 4 * H / t);
        ASSERT_NEAR(ar_model_act_bytes(m, AR_LAYER_MOE, 4096, 1, 8, AR_RECOMPUTE_SELECTIVE), want, 1e-12);
    }
    arachne_model_destroy(m);
}

static int try_spec(const arachne_model *spec)
{
    arachne_model *m = (arachne_model *)1;
    int st;
    arachne_clear_error();
    st = ar_model_create(&m, spec);
    if (st == ARACHNE_OK) arachne_model_destroy(m);
    else if (m != NULL) return 12345;
    return st;
}

TEST(validation_names_the_field)
{
    arachne_model s;
    const arachne_model *llama = ar_model_preset_spec("llama3-8b"), *mix = ar_model_preset_spec("mixtral-8x7b");
    const arachne_model *ds = ar_model_preset_spec("deepseek-v3");
    ASSERT(llama && mix && ds);
    ASSERT_EQ(try_spec(llama), ARACHNE_OK);

    s = *llama; s.hidden = -4;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "hidden");
    s = *llama; s.kv_heads = 5;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "kv_heads");
    s = *llama; s.blocks = 0;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "blocks");
    s = *llama; s.ffn = 0;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "ffn");
    s = *llama; s.top_k = 2;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "top_k");
    s = *llama; s.name[0] = '\0';
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "name");
    s = *llama; s.gated_mlp = 2;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "gated_mlp");

    s = *mix; s.top_k = 9;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "top_k");
    s = *mix; s.dense_prefix = 33;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "dense_prefix");
    s = *mix; s.dense_prefix = 2; /* dense blocks need a dense FFN */
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "ffn");
    s = *mix; s.expert_ffn = 0;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "expert_ffn");

    s = *ds; s.head_dim = 128;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "head_dim");
    s = *ds; s.kv_lora_rank = 0;
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "kv_lora_rank");
    s = *llama; s.v_head_dim = 128; /* MLA sizes without MLA */
    ASSERT_EQ(try_spec(&s), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "v_head_dim");
}

TEST(variants_tied_gelu_and_uncompressed_q)
{
    arachne_model s = *ar_model_preset_spec("llama3-8b"), *m = NULL;
    double h = 4096;
    s.tied_embeddings = 1;
    ASSERT_OK(ar_model_create(&m, &s));
    ASSERT_EQ((long long)kind_params(m, ARACHNE_LAYER_HEAD), (long long)h);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_TOTAL_PARAMS), 8030261248LL - 128256LL * 4096LL);
    /* the head still computes the logits */
    ASSERT_NEAR(ar_model_flops_fwd(m, AR_LAYER_HEAD, 1, 1), 2 * h * 128256, 1e-12);
    arachne_model_destroy(m);

    s = *ar_model_preset_spec("llama3-8b");
    s.gated_mlp = 0;
    ASSERT_OK(ar_model_create(&m, &s));
    ASSERT_EQ((long long)(218112000.0 - kind_params(m, ARACHNE_LAYER_DENSE)), (long long)(h * 14336));
    /* GELU MLP stores 4 x ffn instead of 6 x ffn per token */
    ASSERT_NEAR(ar_model_act_bytes(m, AR_LAYER_DENSE, 1, 1, 1, AR_RECOMPUTE_SELECTIVE),
                13 * h + 4 * 14336 + 4 * 32, 1e-12);
    arachne_model_destroy(m);

    s = *ar_model_preset_spec("deepseek-v3");
    s.q_lora_rank = 0; /* DeepSeek-V2-Lite style: q projected directly */
    ASSERT_OK(ar_model_create(&m, &s));
    {
        double hd = 7168, full_q = hd * 128 * 192, lora_q = hd * 1536 + 1536 + 1536 * 128 * 192;
        arachne_model *ref = NULL;
        ASSERT_OK(arachne_model_preset(&ref, "deepseek-v3"));
        ASSERT_EQ((long long)(ref->params[AR_LAYER_DENSE] - m->params[AR_LAYER_DENSE]), (long long)(lora_q - full_q));
        arachne_model_destroy(ref);
    }
    arachne_model_destroy(m);
}

TEST(to_json_and_save)
{
    arachne_model *m = NULL;
    const char *js = NULL, *dir = th_tmpdir();
    char path[512], *data = NULL;
    size_t len = 0;
    ASSERT(dir != NULL);
    ASSERT_OK(arachne_model_preset(&m, "deepseek-v3"));
    ASSERT_OK(arachne_model_to_json(m, &js));
    ASSERT_CONTAINS(js, "\"format\": \"arachne-model\"");
    ASSERT_CONTAINS(js, "\"name\": \"deepseek-v3\"");
    ASSERT_CONTAINS(js, "\"dense_prefix\": 3");
    ASSERT_CONTAINS(js, "\"kv_lora_rank\": 512");
    snprintf(path, sizeof path, "%s/ds.json", dir);
    ASSERT_OK(arachne_model_save(m, path));
    ASSERT_OK(ar_read_file(path, &data, &len));
    ASSERT_EQ(len, strlen(js));
    ASSERT(memcmp(data, js, len) == 0);
    free(data);
    snprintf(path, sizeof path, "%s/no/such/dir/x.json", dir);
    ASSERT_STATUS(arachne_model_save(m, path), ARACHNE_E_IO);
    ASSERT_STATUS(arachne_model_to_json(NULL, &js), ARACHNE_E_INVALID_ARGUMENT);
    arachne_model_destroy(m);
}

TEST(cli_models_json_lists_every_preset)
{
    const char *out = NULL;
    char cmd[600];
    ar_json *root = NULL;
    int i;
    snprintf(cmd, sizeof cmd, "%s models --json", th_arachne_bin());
    ASSERT_EQ(th_run(cmd, &out), 0);
    ASSERT_OK(ar_json_parse(&root, out, strlen(out), "models --json"));
    ASSERT(root->type == AR_JSON_ARRAY);
    ASSERT_EQ(root->count, arachne_model_preset_count());
    for (i = 0; i < arachne_model_preset_count(); i++) {
        const ar_json *row = root->items[i];
        arachne_model *m = NULL;
        const char *name = NULL;
        double v = 0;
        ASSERT_OK(arachne_model_preset(&m, arachne_model_preset_name(i)));
        ASSERT_OK(ar_json_str(row, "name", 1, &name));
        ASSERT_STR(name, arachne_model_preset_name(i));
        ASSERT_OK(ar_json_num(row, "blocks", 1, &v));
        ASSERT_EQ(v, field(m, ARACHNE_MODEL_BLOCKS));
        ASSERT_OK(ar_json_num(row, "hidden", 1, &v));
        ASSERT_EQ(v, field(m, ARACHNE_MODEL_HIDDEN));
        ASSERT_OK(ar_json_num(row, "total_params", 1, &v));
        ASSERT_EQ((long long)v, (long long)field(m, ARACHNE_MODEL_TOTAL_PARAMS));
        ASSERT_NEAR(v, want[i].published_total, 0.002);
        ASSERT_OK(ar_json_num(row, "active_params", 1, &v));
        ASSERT_EQ((long long)v, (long long)field(m, ARACHNE_MODEL_ACTIVE_PARAMS));
        arachne_model_destroy(m);
    }
    ar_json_free(root);
    snprintf(cmd, sizeof cmd, "%s models", th_arachne_bin());
    ASSERT_EQ(th_run(cmd, &out), 0);
    ASSERT_CONTAINS(out, "qwen3-30b-a3b");
    snprintf(cmd, sizeof cmd, "%s models --bogus 2>/dev/null", th_arachne_bin());
    ASSERT_EQ(th_run(cmd, &out), 2);
}

/* ---- JSON reading (needs src/json.c) ---- */

static int from_text(const char *text)
{
    arachne_model *m = (arachne_model *)1;
    int st;
    arachne_clear_error();
    st = arachne_model_from_json(&m, text, strlen(text));
    if (st == ARACHNE_OK) arachne_model_destroy(m);
    else if (m != NULL) return 12345;
    return st;
}

TEST(json_round_trip_every_preset)
{
    int i, f;
    for (i = 0; i < arachne_model_preset_count(); i++) {
        arachne_model *a = NULL, *b = NULL;
        const char *ja = NULL, *jb = NULL;
        ASSERT_OK(arachne_model_preset(&a, arachne_model_preset_name(i)));
        ASSERT_OK(arachne_model_to_json(a, &ja));
        ASSERT_OK(arachne_model_from_json(&b, ja, strlen(ja)));
        ASSERT_OK(arachne_model_to_json(b, &jb));
        ASSERT_STR(ja, jb);
        for (f = ARACHNE_MODEL_BLOCKS; f <= ARACHNE_MODEL_MOE_BLOCKS; f++) ASSERT_EQ(field(a, f), field(b, f));
        for (f = 0; f < AR_LAYER_KINDS; f++) {
            ASSERT_EQ(kind_params(a, f), kind_params(b, f));
            ASSERT_EQ(ar_model_act_bytes(a, f, 4096, 1, 2, 1), ar_model_act_bytes(b, f, 4096, 1, 2, 1));
        }
        arachne_model_destroy(a);
        arachne_model_destroy(b);
    }
}

TEST(json_save_load_open)
{
    arachne_model *a = NULL, *b = NULL;
    const char *dir = th_tmpdir();
    char path[512];
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/q30.json", dir);
    ASSERT_OK(arachne_model_preset(&a, "qwen3-30b-a3b"));
    ASSERT_OK(arachne_model_save(a, path));
    ASSERT_OK(arachne_model_load(&b, path));
    ASSERT_EQ((long long)field(b, ARACHNE_MODEL_ACTIVE_PARAMS), (long long)field(a, ARACHNE_MODEL_ACTIVE_PARAMS));
    arachne_model_destroy(b);
    ASSERT_OK(arachne_model_open(&b, path));
    ASSERT_EQ((long long)field(b, ARACHNE_MODEL_TOTAL_PARAMS), (long long)field(a, ARACHNE_MODEL_TOTAL_PARAMS));
    arachne_model_destroy(b);
    ASSERT_OK(arachne_model_open(&b, "Mixtral-8x7B"));
    ASSERT_EQ(field(b, ARACHNE_MODEL_EXPERTS), 8);
    arachne_model_destroy(b);
    b = (arachne_model *)1;
    ASSERT_STATUS(arachne_model_open(&b, "no-such-model-or-file"), ARACHNE_E_NOT_FOUND);
    ASSERT(b == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "no-such-model-or-file");
    snprintf(path, sizeof path, "%s/missing.json", dir);
    ASSERT_STATUS(arachne_model_load(&b, path), ARACHNE_E_IO);
    arachne_model_destroy(a);
}

/* The made-up models in examples/models; expected counts from the formulas
 * of docs/models.md written out here. */
TEST(example_model_files_load)
{
    arachne_model *m = NULL;
    double h, attn, tot, act, moe_common, expert;
    ASSERT_OK(arachne_model_load(&m, "examples/models/custom-dense-12b.json"));
    h = 5120;
    attn = h * 40 * 128 + 2 * h * 8 * 128 + 40 * 128 * h;
    tot = 2 * 64000 * h + h + 40 * (attn + 2 * h + 3 * h * 13824);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_TOTAL_PARAMS), (long long)tot);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_TOTAL_PARAMS), 11665822720LL);
    ASSERT_EQ(ar_model_kind_count(m, AR_LAYER_MOE), 0);
    arachne_model_destroy(m);

    ASSERT_OK(arachne_model_load(&m, "examples/models/custom-moe-17b-a3b.json"));
    h = 2560;
    attn = h * 20 * 128 + 2 * h * 4 * 128 + 20 * 128 * h + 2 * 128;
    expert = 3 * h * 1408;
    moe_common = attn + 2 * h + h * 64 + 2 * expert;
    tot = 2 * 100000 * h + h + (attn + 2 * h + 3 * h * 6912) + 23 * (moe_common + 64 * expert);
    act = 2 * 100000 * h + h + (attn + 2 * h + 3 * h * 6912) + 23 * (moe_common + 6 * expert);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_TOTAL_PARAMS), (long long)tot);
    ASSERT_EQ((long long)field(m, ARACHNE_MODEL_ACTIVE_PARAMS), (long long)act);
    ASSERT_EQ(ar_model_kind_count(m, AR_LAYER_DENSE), 1);
    ASSERT_EQ(ar_model_kind_count(m, AR_LAYER_MOE), 23);
    ASSERT_EQ(field(m, ARACHNE_MODEL_SHARED_EXPERTS), 2);
    arachne_model_destroy(m);
}

#define HEAD "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"x\","
#define DENSE "\"blocks\":2,\"hidden\":64,\"heads\":4,\"kv_heads\":2,\"head_dim\":16,\"ffn\":128,\"vocab\":100"

TEST(json_bad_input_is_rejected_with_position)
{
    ASSERT_EQ(from_text(HEAD DENSE "}"), ARACHNE_OK);
    /* unknown key */
    ASSERT_EQ(from_text(HEAD DENSE ",\"hiden\":64}"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "hiden");
    ASSERT_CONTAINS(arachne_last_error(), "<model json>:1:");
    /* negative size */
    ASSERT_EQ(from_text(HEAD "\"blocks\":2,\"hidden\":-64,\"heads\":4,\"kv_heads\":2,\"head_dim\":16,\"ffn\":128,"
                             "\"vocab\":100}"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "hidden");
    /* heads not divisible by kv_heads */
    ASSERT_EQ(from_text(HEAD "\"blocks\":2,\"hidden\":64,\"heads\":4,\"kv_heads\":3,\"head_dim\":16,\"ffn\":128,"
                             "\"vocab\":100}"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "kv_heads");
    /* missing field */
    ASSERT_EQ(from_text(HEAD "\"blocks\":2,\"hidden\":64,\"heads\":4,\"kv_heads\":2,\"ffn\":128,\"vocab\":100}"),
              ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "head_dim");
    /* wrong types */
    ASSERT_EQ(from_text(HEAD "\"blocks\":\"2\",\"hidden\":64,\"heads\":4,\"kv_heads\":2,\"head_dim\":16,\"ffn\":128,"
                             "\"vocab\":100}"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "blocks");
    ASSERT_EQ(from_text(HEAD DENSE ",\"qk_norm\":1}"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "qk_norm");
    ASSERT_EQ(from_text(HEAD DENSE ",\"ffn\":1.5}"), ARACHNE_E_PARSE);
    ASSERT_EQ(from_text(HEAD DENSE ",\"mla\":[]}"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "mla");
    /* MoE consistency */
    ASSERT_EQ(from_text(HEAD DENSE ",\"experts\":4,\"top_k\":5,\"expert_ffn\":32}"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "top_k");
    ASSERT_EQ(from_text(HEAD DENSE ",\"experts\":4,\"top_k\":2,\"expert_ffn\":32,\"dense_prefix\":3}"),
              ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "dense_prefix");
    ASSERT_EQ(from_text(HEAD DENSE ",\"experts\":4,\"top_k\":2,\"expert_ffn\":32,\"dense_prefix\":1}"), ARACHNE_OK);
    /* MLA: unknown and missing keys inside the object */
    ASSERT_EQ(from_text(HEAD DENSE ",\"mla\":{\"q_lora_rank\":0,\"kv_lora_rank\":8,\"qk_nope_dim\":12,"
                                   "\"qk_rope_dim\":4,\"v_head_dim\":16}}"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "kv_heads"); /* MLA needs kv_heads == heads */
    ASSERT_EQ(from_text(HEAD DENSE ",\"mla\":{\"kv_lora_rank\":8}}"), ARACHNE_E_PARSE);
    ASSERT_EQ(from_text(HEAD DENSE ",\"mla\":{\"q_lora_rank\":0,\"kv_lora_rank\":8,\"qk_nope_dim\":12,"
                                   "\"qk_rope_dim\":4,\"v_head_dim\":16,\"x\":1}}"), ARACHNE_E_PARSE);
    /* format, version, name */
    ASSERT_EQ(from_text("{\"format\":\"arachne-plan\",\"version\":1,\"name\":\"x\"," DENSE "}"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "format");
    ASSERT_EQ(from_text("{\"format\":\"arachne-model\",\"version\":2,\"name\":\"x\"," DENSE "}"),
              ARACHNE_E_UNSUPPORTED);
    ASSERT_EQ(from_text("{\"format\":\"arachne-model\",\"version\":1,\"name\":\"\"," DENSE "}"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "name");
    /* not an object, truncated, empty */
    ASSERT_EQ(from_text("[1,2]"), ARACHNE_E_PARSE);
    ASSERT_EQ(from_text(HEAD DENSE), ARACHNE_E_PARSE);
    ASSERT_EQ(from_text(""), ARACHNE_E_PARSE);
    ASSERT_STATUS(arachne_model_from_json(NULL, "{}", 2), ARACHNE_E_INVALID_ARGUMENT);
}

TEST(cli_models_reads_files)
{
    const char *out = NULL;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s models --json llama3-8b examples/models/custom-moe-17b-a3b.json",
             th_arachne_bin());
    ASSERT_EQ(th_run(cmd, &out), 0);
    ASSERT_CONTAINS(out, "\"name\":\"llama3-8b\"");
    ASSERT_CONTAINS(out, "\"name\":\"custom-moe-17b-a3b\"");
    snprintf(cmd, sizeof cmd, "%s models no-such-model 2>&1", th_arachne_bin());
    ASSERT_EQ(th_run(cmd, &out), 1);
    ASSERT_CONTAINS(out, "arachne: ");
    ASSERT_CONTAINS(out, "no-such-model");
}

SUITE(model,
      T(presets_match_published_totals),
      T(llama3_8b_exact_layer_params),
      T(moe_structure_and_expert_share),
      T(preset_lookup),
      T(flops_follow_the_shapes),
      T(llama3_8b_activation_bytes_by_hand),
      T(moe_activation_bytes_by_hand),
      T(validation_names_the_field),
      T(variants_tied_gelu_and_uncompressed_q),
      T(to_json_and_save),
      T(cli_models_json_lists_every_preset),
      T(json_round_trip_every_preset),
      T(json_save_load_open),
      T(example_model_files_load),
      T(json_bad_input_is_rejected_with_position),
      T(cli_models_reads_files));
