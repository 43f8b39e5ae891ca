/* test_plan_json.c -- plan JSON v1: the writer's fields, exact round trip
 * through the strict reader, and rejection of malformed or invalid plans
 * with messages naming the place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"
#include "plan_fixture.h"

/* Parses text into a fresh plan bound to f's cost model; on success the
 * plan is finished and returned in *out (caller clears). */
static int parse_plan(fx *f, const char *text, arachne_plan *out)
{
    int st;
    memset(out, 0, sizeof *out);
    st = ar_plan_init(out, &f->cm);
    if (!st) st = ar_plan_parse_json(out, &f->cm, text, strlen(text), "t.json");
    if (!st) st = ar_plan_finish(out);
    if (st) ar_plan_clear(out);
    return st;
}

/* parse + validate, the structural half of arachne_plan_load. */
static int parse_validate(fx *f, const char *text)
{
    arachne_plan q;
    int st = parse_plan(f, text, &q);
    if (st) return st;
    st = ar_plan_validate(&f->cm, &q);
    ar_plan_clear(&q);
    return st;
}

TEST(writer_emits_the_v2_fields)
{
    fx f;
    ar_json *root = NULL;
    const ar_json *t, *st, *rk, *pl;
    const char *js;
    double v;
    long n;
    ASSERT_OK(fx_init(&f));
    ASSERT_OK(arachne_plan_to_json(&f.plan, &js));
    ASSERT_OK(ar_json_parse(&root, js, strlen(js), "plan"));
    ASSERT_STR(ar_json_get(root, "format")->string, "arachne-plan");
    ASSERT_EQ(ar_json_get(root, "version")->number, 2);
    ASSERT_STR(ar_json_get(root, "model")->string, "llama3-8b");
    ASSERT_STR(ar_json_get(root, "cluster")->string, "a100-40:2x4,h100:1x8");
    ASSERT_OK(ar_json_num(root, "iteration_s", 1, &v));
    ASSERT(v == f.plan.iteration_s);
    ASSERT_OK(ar_json_num(root, "tokens_per_s", 1, &v));
    ASSERT(v == f.plan.tokens_per_s);
    ASSERT_OK(ar_json_int(root, "global_batch", 1, 0, 1 << 30, &n));
    ASSERT_EQ(n, 64);
    ASSERT_OK(ar_json_int(root, "gpus_used", 1, 0, 1 << 30, &n));
    ASSERT_EQ(n, 14);
    t = ar_json_get(root, "templates");
    ASSERT(t && t->count == 2);
    ASSERT_OK(ar_json_int(t->items[1], "micro_batch", 1, 0, 99, &n));
    ASSERT_EQ(n, 2);
    st = ar_json_get(t->items[1], "stages");
    ASSERT(st && st->count == 2);
    ASSERT_STR(ar_json_get(st->items[0], "gpu")->string, "H100");
    ASSERT_EQ(ar_json_get(st->items[1], "layers")->items[0]->number, 20);
    ASSERT_EQ(ar_json_get(st->items[1], "layers")->items[1]->number, 32);
    ASSERT_OK(ar_json_num(st->items[1], "memory_bytes", 1, &v));
    ASSERT(v == f.plan.t[1].stages[1].mem_bytes);
    rk = ar_json_get(t->items[1], "ranks");
    ASSERT(rk && rk->count == 6);
    ASSERT_EQ(ar_json_get(rk->items[5], "rank")->number, 13);
    ASSERT_EQ(ar_json_get(rk->items[5], "gpu")->number, 5);
    pl = ar_json_get(root, "planner");
    ASSERT_STR(ar_json_get(pl, "method")->string, "test");
    ASSERT_OK(ar_json_int(pl, "evaluations", 1, 0, 1 << 30, &n));
    ASSERT_EQ(n, 4242);
    ar_json_free(root);
    fx_free(&f);
}

TEST(json_round_trips_to_identical_bytes_and_numbers)
{
    fx f;
    arachne_plan q;
    const char *a, *b;
    int t, s;
    ASSERT_OK(fx_init(&f));
    ASSERT_OK(arachne_plan_to_json(&f.plan, &a));
    ASSERT_OK(parse_plan(&f, a, &q));
    ASSERT_OK(arachne_plan_to_json(&q, &b));
    ASSERT_STR(b, a);
    ASSERT(q.iteration_s == f.plan.iteration_s);
    ASSERT(q.file_iteration_s == f.plan.iteration_s);
    ASSERT(q.mfu == f.plan.mfu);
    ASSERT(q.planning_s == f.plan.planning_s);
    for (t = 0; t < 2; t++)
        for (s = 0; s < 2; s++) {
            const ar_stage *x = &q.t[t].stages[s], *y = &f.plan.t[t].stages[s];
            ASSERT(x->compute_s == y->compute_s && x->stage_s == y->stage_s && x->mem_bytes == y->mem_bytes);
            ASSERT(x->p2p_s == y->p2p_s && x->sync_s == y->sync_s && x->tp_comm_s == y->tp_comm_s);
            ASSERT_EQ(x->type, y->type);
        }
    ASSERT_EQ(memcmp(q.ranks, f.plan.ranks, 14 * sizeof *q.ranks), 0);
    ASSERT_OK(ar_plan_validate(&f.cm, &q));
    ar_plan_clear(&q);
    fx_free(&f);
}

TEST(reader_accepts_gpu_aliases_and_optional_fields)
{
    fx f;
    arachne_plan q;
    const char *a;
    char *x, *y;
    ASSERT_OK(fx_init(&f));
    ASSERT_OK(arachne_plan_to_json(&f.plan, &a));
    x = fx_replace(a, "\"gpu\": \"H100\"", "\"gpu\": \"h100-sxm\"");
    ASSERT(x != NULL);
    /* drop the optional "bubble" */
    y = fx_replace(x, "\"bubble\": 0.0625,", "");
    free(x);
    ASSERT(y != NULL);
    ASSERT_OK(parse_plan(&f, y, &q));
    ASSERT_EQ(q.t[1].stages[0].type, 1);
    ASSERT(q.bubble == 0.0);
    ar_plan_clear(&q);
    free(y);
    fx_free(&f);
}

#define EXPECT_TEXT(from, to, status, needle)                                        \
    do {                                                                             \
        fx f_;                                                                       \
        const char *a_;                                                              \
        char *x_;                                                                    \
        int st_;                                                                     \
        ASSERT_OK(fx_init(&f_));                                                     \
        ASSERT_OK(arachne_plan_to_json(&f_.plan, &a_));                              \
        x_ = fx_replace(a_, from, to);                                               \
        if (!x_) { fx_free(&f_); ASSERT_MSG(0, "fixture JSON lacks %s", from); }     \
        arachne_clear_error();                                                       \
        st_ = parse_validate(&f_, x_);                                               \
        free(x_);                                                                    \
        fx_free(&f_);                                                                \
        ASSERT_MSG(st_ == (status), "%s -> %s: status %d, want %d (%s)", from, to, st_, (int)(status), \
                   arachne_last_error());                                            \
        ASSERT_CONTAINS(arachne_last_error(), needle);                               \
    } while (0)

TEST(reader_rejects_wrong_format_version_and_missing_fields)
{
    EXPECT_TEXT("\"arachne-plan\"", "\"sailor-plan\"", ARACHNE_E_PARSE, "t.json:2:13: format: expected \"arachne-plan\"");
    EXPECT_TEXT("\"version\": 2", "\"version\": 3", ARACHNE_E_UNSUPPORTED, "t.json:3:14: version 3 is not supported");
    EXPECT_TEXT("\"version\": 2", "\"version\": 0", ARACHNE_E_UNSUPPORTED, "reads versions 1 to 2");
    EXPECT_TEXT("\"version\": 2", "\"version\": \"1\"", ARACHNE_E_PARSE, "t.json:3:14");
    /* version 1 (no inputs) still reads; inputs belong to version 2 only */
    EXPECT_TEXT("\"version\": 2", "\"version\": 1", ARACHNE_OK, "");
    EXPECT_TEXT("\"version\": 2,", "\"version\": 1, \"inputs\": {},", ARACHNE_E_PARSE, "inputs: not part of a version-1 plan");
    EXPECT_TEXT("\"version\": 2,", "\"version\": 2, \"inputs\": {\"profile_crc32\": \"0\"},", ARACHNE_E_PARSE,
                "profile_crc32: expected 8 lowercase hex digits");
    EXPECT_TEXT("\"version\": 2,", "\"version\": 2, \"inputs\": {\"profile_crc32\": \"00000000\"},", ARACHNE_E_PARSE,
                "missing key 'model'");
    EXPECT_TEXT("\"format\": \"arachne-plan\",", "", ARACHNE_E_PARSE, "missing key 'format'");
    EXPECT_TEXT("\"seq_len\": 4096,", "", ARACHNE_E_PARSE, "missing key 'seq_len'");
    EXPECT_TEXT("\"iteration_s\"", "\"iteration\"", ARACHNE_E_PARSE, "t.json:9:16: unknown key 'iteration'");
    EXPECT_TEXT("\"tp\": 4", "\"tp\": 4.5", ARACHNE_E_PARSE, "tp");
    EXPECT_TEXT("\"tp\": 4", "\"tp\": 0", ARACHNE_E_PARSE, "tp");
    EXPECT_TEXT("\"layers\": [0, 20]", "\"layers\": [0]", ARACHNE_E_PARSE, "layers: expected [first, end]");
    EXPECT_TEXT("\"replicas\": 1", "\"replicas\": 1, \"replicas\": 1", ARACHNE_E_PARSE, "t.json:");
    EXPECT_TEXT("\"mfu\": 0.41234567890123", "\"mfu\": -1", ARACHNE_E_PARSE, "mfu: expected a number >= 0");
    EXPECT_TEXT("{\"rank\": 13,", "{\"rank\": 13, \"host\": 1,", ARACHNE_E_PARSE, "unknown key 'host'");
    EXPECT_TEXT("\"method\": \"test\"", "\"method\": 3", ARACHNE_E_PARSE, "method");
    EXPECT_TEXT("\"recompute\": \"selective\"", "\"recompute\": \"some\"", ARACHNE_E_PARSE,
                "recompute: 'some' is not none, selective or full");
    EXPECT_TEXT("\n}\n", "\n", ARACHNE_E_PARSE, "t.json:");
}

TEST(reader_rejects_unknown_gpu_types)
{
    EXPECT_TEXT("\"gpu\": \"H100\"", "\"gpu\": \"B200\"", ARACHNE_E_INVALID_PLAN,
                "template 1 stage 0: GPU type 'B200' is not in the cluster");
    EXPECT_TEXT("\"gpu\": \"H100\"", "\"gpu\": \"A6000\"", ARACHNE_E_INVALID_PLAN, "GPU type 'A6000' is not in the cluster");
}

TEST(validation_rejects_bad_plans_from_text)
{
    /* GPU reused: rank 1 onto node 0 GPU 0 */
    EXPECT_TEXT("{\"rank\": 1, \"node\": 0, \"gpu\": 1,", "{\"rank\": 1, \"node\": 0, \"gpu\": 0,",
                ARACHNE_E_INVALID_PLAN, "node 0 GPU 0 is already used by rank 0");
    /* TP group across nodes: rank 1 (tp_rank 1 of replica 0 stage 0) on node 1 */
    EXPECT_TEXT("{\"rank\": 1, \"node\": 0, \"gpu\": 1,", "{\"rank\": 1, \"node\": 1, \"gpu\": 0,",
                ARACHNE_E_INVALID_PLAN, "TP group of replica 0 crosses nodes");
    EXPECT_TEXT("\"layers\": [16, 32]", "\"layers\": [18, 32]", ARACHNE_E_INVALID_PLAN,
                "template 0 stage 1: layers [18, 32) leave blocks [16, 18) uncovered (gap)");
    EXPECT_TEXT("\"layers\": [20, 32]", "\"layers\": [12, 32]", ARACHNE_E_INVALID_PLAN,
                "template 1 stage 1: layers [12, 32) overlap the previous stage");
    EXPECT_TEXT("{\"rank\": 13, \"node\": 2,", "{\"rank\": 13, \"node\": 3,", ARACHNE_E_INVALID_PLAN,
                "template 1 stage 1 rank 13: node 3 out of range [0, 3)");
    EXPECT_TEXT("{\"rank\": 13, \"node\": 2, \"gpu\": 5,", "{\"rank\": 13, \"node\": 2, \"gpu\": 8,",
                ARACHNE_E_INVALID_PLAN, "GPU 8 out of range on node 2, which has 8 GPUs");
    EXPECT_TEXT("{\"rank\": 13, \"node\": 2, \"gpu\": 5,", "{\"rank\": 13, \"node\": 1, \"gpu\": 3,",
                ARACHNE_E_INVALID_PLAN, "node 1 holds A100-40 GPUs, the stage runs on H100");
    EXPECT_TEXT("\"tp_rank\": 1}\n      ]\n    }\n  ]", "\"tp_rank\": 2}\n      ]\n    }\n  ]", ARACHNE_E_INVALID_PLAN,
                "rank 13: tp_rank 2 out of range [0, 2)");
    EXPECT_TEXT(",\n        {\"rank\": 13, \"node\": 2, \"gpu\": 5, \"replica\": 0, \"stage\": 1, \"tp_rank\": 1}", "",
                ARACHNE_E_INVALID_PLAN, "template 1: 5 ranks, expected 6");
    EXPECT_TEXT("\"micro_batches\": 16", "\"micro_batches\": 1", ARACHNE_E_INVALID_PLAN,
                "micro-batches cover 34 samples");
    EXPECT_TEXT("\"ep\": 1, \"etp\": 1, \"edp\": 4", "\"ep\": 1, \"etp\": 1, \"edp\": 3", ARACHNE_E_INVALID_PLAN,
                "expert tiling ep 1 x etp 1 x edp 3 does not equal the stage's 4 GPUs");
}

TEST(from_json_checks_arguments)
{
    fx f;
    arachne_plan *p = (arachne_plan *)&f;
    ASSERT_OK(fx_init(&f));
    ASSERT_STATUS(arachne_plan_from_json(&p, NULL, "{}", 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(p == NULL);
    ASSERT_STATUS(arachne_plan_from_json(&p, &f.cm, NULL, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_from_json(NULL, &f.cm, "{}", 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_from_json(&p, &f.cm, "[1,", 3), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "<string>:1:");
    ASSERT_STATUS(arachne_plan_from_json(&p, &f.cm, "{\"format\": \"arachne-plan\", \"version\": 1}", 40),
                  ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "missing key");
    ASSERT_STATUS(arachne_plan_load(&p, &f.cm, "/nonexistent/plan.json"), ARACHNE_E_IO);
    ASSERT_CONTAINS(arachne_last_error(), "/nonexistent/plan.json");
    fx_free(&f);
}

TEST(file_header_reads_the_recorded_setup)
{
    fx f;
    const char *dir = th_tmpdir();
    char path[600], buf[64], *x;
    const char *a;
    size_t need = 0;
    FILE *fp;
    ASSERT(dir != NULL);
    ASSERT_OK(fx_init(&f));
    snprintf(path, sizeof path, "%s/p.json", dir);
    ASSERT_OK(arachne_plan_save(&f.plan, path));
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_MODEL, buf, sizeof buf, &need));
    ASSERT_STR(buf, "llama3-8b");
    ASSERT_EQ(need, 10);
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_CLUSTER, buf, sizeof buf, NULL));
    ASSERT_STR(buf, "a100-40:2x4,h100:1x8");
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_GLOBAL_BATCH, buf, sizeof buf, NULL));
    ASSERT_STR(buf, "64");
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_SEQ_LEN, buf, sizeof buf, NULL));
    ASSERT_STR(buf, "4096");
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_RECOMPUTE, buf, sizeof buf, NULL));
    ASSERT_STR(buf, "selective");
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_DIST_OPTIMIZER, buf, sizeof buf, NULL));
    ASSERT_STR(buf, "1");
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_HEADROOM, buf, sizeof buf, NULL));
    ASSERT_STR(buf, "0.08");
    ASSERT_STATUS(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_CLUSTER, buf, 4, &need),
                  ARACHNE_E_BUFFER_TOO_SMALL);
    ASSERT_EQ(need, 21);
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_ITERATION_S, buf, sizeof buf, NULL));
    ASSERT(strtod(buf, NULL) == f.plan.iteration_s);
    ASSERT_STATUS(arachne_plan_file_header(path, 18, buf, sizeof buf, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_plan_file_header("/nonexistent/p.json", 0, buf, sizeof buf, NULL), ARACHNE_E_IO);
    /* a file without a setup object: the setup keys are NOT_FOUND */
    ASSERT_OK(arachne_plan_to_json(&f.plan, &a));
    x = fx_replace(a, "\"setup\": {", "\"unused\": {");
    ASSERT(x != NULL);
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fputs(x, fp);
    fclose(fp);
    free(x);
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_MODEL, buf, sizeof buf, NULL));
    ASSERT_STATUS(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_RECOMPUTE, buf, sizeof buf, NULL),
                  ARACHNE_E_NOT_FOUND);
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fputs("{\"format\": \"arachne-plan\", \"version\": 3}", fp);
    fclose(fp);
    ASSERT_STATUS(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_MODEL, buf, sizeof buf, NULL),
                  ARACHNE_E_UNSUPPORTED);
    fx_free(&f);
}

/* ---- the full load path: parse + validate + reprice with a real cost
 * model (generated profile) ---- */

typedef struct fxc {
    fx f;
    arachne_profile *profile;
    arachne_cost_model *cm;
} fxc;

static int fxc_init(fxc *c)
{
    int st;
    memset(c, 0, sizeof *c);
    if ((st = fx_init(&c->f))) return st;
    if ((st = arachne_profile_generate(&c->profile, c->f.model, c->f.cluster, 4096))) return st;
    if ((st = arachne_cost_model_create(&c->cm, c->f.model, c->f.cluster, c->profile))) return st;
    if ((st = arachne_cost_model_set(c->cm, ARACHNE_OPT_GLOBAL_BATCH, 64))) return st;
    if ((st = arachne_cost_model_set(c->cm, ARACHNE_OPT_DIST_OPTIMIZER, 1))) return st;
    if ((st = ar_plan_price(c->cm, &c->f.plan))) return st;
    ar_plan_bind(&c->f.plan, c->cm); /* its file embeds this cost model's inputs */
    return ar_plan_finish(&c->f.plan);
}

static void fxc_free(fxc *c)
{
    arachne_cost_model_destroy(c->cm);
    arachne_profile_destroy(c->profile);
    fx_free(&c->f);
}

/* A plan priced with a cost model embeds its model, cluster and profile;
 * the header reader hands them out, and a changed profile is named. */
TEST(file_embeds_model_cluster_and_profile)
{
    fxc c;
    arachne_model *m = NULL;
    arachne_cluster *cl = NULL;
    arachne_profile *pr = NULL;
    const char *dir = th_tmpdir(), *js, *mj = NULL;
    char path[600], bad[600], crc[16], *text = NULL, *x;
    size_t need = 0;
    ASSERT(dir != NULL);
    ASSERT_OK(fxc_init(&c));
    snprintf(path, sizeof path, "%s/embedded.json", dir);
    ASSERT_OK(arachne_plan_save(&c.f.plan, path));
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_PROFILE_CRC32, crc, sizeof crc, NULL));
    ASSERT_EQ(strlen(crc), 8);
    ASSERT_STATUS(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_MODEL_JSON, NULL, 0, &need),
                  ARACHNE_E_BUFFER_TOO_SMALL);
    text = malloc(need);
    ASSERT(text != NULL);
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_MODEL_JSON, text, need, NULL));
    ASSERT_OK(arachne_model_from_json(&m, text, strlen(text)));
    ASSERT_OK(arachne_model_to_json(m, &mj));
    ASSERT_OK(arachne_model_to_json(c.f.model, &js));
    ASSERT_STR(mj, js);
    free(text);
    ASSERT_STATUS(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_CLUSTER_JSON, NULL, 0, &need),
                  ARACHNE_E_BUFFER_TOO_SMALL);
    text = malloc(need);
    ASSERT(text != NULL);
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_CLUSTER_JSON, text, need, NULL));
    ASSERT_OK(arachne_cluster_from_json(&cl, text, strlen(text)));
    free(text);
    ASSERT_STATUS(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_PROFILE_JSON, NULL, 0, &need),
                  ARACHNE_E_BUFFER_TOO_SMALL);
    text = malloc(need);
    ASSERT(text != NULL);
    ASSERT_OK(arachne_plan_file_header(path, ARACHNE_PLAN_HEADER_PROFILE_JSON, text, need, NULL));
    ASSERT_OK(arachne_profile_from_json(&pr, text, strlen(text)));
    free(text);
    /* an edited profile time no longer matches the recorded CRC-32 */
    ASSERT_OK(arachne_plan_to_json(&c.f.plan, &js));
    x = fx_replace(js, "\"fwd_s\": 0", "\"fwd_s\": 1");
    ASSERT(x != NULL);
    snprintf(bad, sizeof bad, "%s/edited.json", dir);
    ASSERT_OK(ar_write_file_atomic(bad, x, strlen(x)));
    free(x);
    ASSERT_STATUS(arachne_plan_file_header(bad, ARACHNE_PLAN_HEADER_PROFILE_JSON, NULL, 0, &need), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "was changed after the plan was priced");
    ASSERT_STATUS(arachne_plan_file_header(path, 99, NULL, 0, &need), ARACHNE_E_INVALID_ARGUMENT);
    arachne_profile_destroy(pr);
    arachne_cluster_destroy(cl);
    arachne_model_destroy(m);
    fxc_free(&c);
}

TEST(load_reprices_to_identical_prices_and_bytes)
{
    fxc c;
    arachne_plan *q = NULL;
    const char *a, *b, *dir = th_tmpdir();
    char path[600];
    double x, y;
    int i, t, s;
    ASSERT(dir != NULL);
    ASSERT_OK(fxc_init(&c));
    snprintf(path, sizeof path, "%s/priced.json", dir);
    ASSERT_OK(arachne_plan_save(&c.f.plan, path));
    ASSERT_OK(arachne_plan_load(&q, c.cm, path));
    ASSERT_OK(arachne_plan_to_json(&c.f.plan, &a));
    ASSERT_OK(arachne_plan_to_json(q, &b));
    ASSERT_STR(b, a);
    for (i = ARACHNE_PLAN_ITERATION_S; i <= ARACHNE_PLAN_SEQ_LEN; i++) {
        ASSERT_OK(arachne_plan_get(&c.f.plan, i, &x));
        ASSERT_OK(arachne_plan_get(q, i, &y));
        ASSERT_NEAR(y, x, 1e-9);
    }
    for (t = 0; t < 2; t++)
        for (s = 0; s < 2; s++)
            for (i = ARACHNE_STAGE_TP; i <= ARACHNE_STAGE_MEMORY_BYTES; i++) {
                ASSERT_OK(arachne_plan_stage_get(&c.f.plan, t, s, i, &x));
                ASSERT_OK(arachne_plan_stage_get(q, t, s, i, &y));
                ASSERT_NEAR(y, x, 1e-9);
            }
    ASSERT_GT(q->iteration_s, 0);
    ASSERT(q->file_iteration_s == c.f.plan.iteration_s);
    arachne_plan_destroy(q);
    /* from_json gives the same plan */
    ASSERT_OK(arachne_plan_from_json(&q, c.cm, a, strlen(a)));
    ASSERT_OK(arachne_plan_to_json(q, &b));
    ASSERT_STR(b, a);
    arachne_plan_destroy(q);
    fxc_free(&c);
}

TEST(load_reprices_under_the_cost_models_setup)
{
    fxc c;
    arachne_plan *q = NULL;
    const char *a;
    double v;
    ASSERT_OK(fxc_init(&c));
    ASSERT_OK(arachne_plan_to_json(&c.f.plan, &a));
    ASSERT_OK(arachne_cost_model_set(c.cm, ARACHNE_OPT_GLOBAL_BATCH, 128));
    ASSERT_OK(arachne_plan_from_json(&q, c.cm, a, strlen(a)));
    ASSERT_OK(arachne_plan_get(q, ARACHNE_PLAN_GLOBAL_BATCH, &v));
    ASSERT_EQ(v, 128);
    ASSERT_GT(q->iteration_s, c.f.plan.iteration_s);
    ASSERT(q->file_iteration_s == c.f.plan.iteration_s);
    ASSERT_GT((long)q->t[0].replicas * q->t[0].micro_batch * q->t[0].micro_batches +
                  (long)q->t[1].replicas * q->t[1].micro_batch * q->t[1].micro_batches, 127);
    arachne_plan_destroy(q);
    fxc_free(&c);
}

TEST(load_rejects_plans_over_memory)
{
    fxc c;
    arachne_plan *q = (arachne_plan *)&c;
    const char *a;
    char *x;
    int st;
    ASSERT_OK(fxc_init(&c));
    ASSERT_OK(arachne_plan_to_json(&c.f.plan, &a));
    x = fx_replace(a, "\"micro_batch\": 1,", "\"micro_batch\": 32,");
    ASSERT(x != NULL);
    arachne_clear_error();
    st = arachne_plan_from_json(&q, c.cm, x, strlen(x));
    free(x);
    fxc_free(&c);
    ASSERT_MSG(st == ARACHNE_E_OUT_OF_MEMORY_PLAN, "status %d: %s", st, arachne_last_error());
    ASSERT(q == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "<string>: template 0 stage");
}

TEST(load_rejects_invalid_plans_with_the_source_named)
{
    fxc c;
    arachne_plan *q = NULL;
    const char *a, *dir = th_tmpdir();
    char path[600], *x;
    FILE *fp;
    ASSERT(dir != NULL);
    ASSERT_OK(fxc_init(&c));
    ASSERT_OK(arachne_plan_to_json(&c.f.plan, &a));
    x = fx_replace(a, "{\"rank\": 1, \"node\": 0, \"gpu\": 1,", "{\"rank\": 1, \"node\": 1, \"gpu\": 0,");
    ASSERT(x != NULL);
    snprintf(path, sizeof path, "%s/bad.json", dir);
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fputs(x, fp);
    fclose(fp);
    free(x);
    ASSERT_STATUS(arachne_plan_load(&q, c.cm, path), ARACHNE_E_INVALID_PLAN);
    ASSERT(q == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "bad.json: template 0 stage 0 rank 1: TP group of replica 0 crosses nodes");
    fxc_free(&c);
}

SUITE(plan_json,
      T(writer_emits_the_v2_fields),
      T(json_round_trips_to_identical_bytes_and_numbers),
      T(reader_accepts_gpu_aliases_and_optional_fields),
      T(reader_rejects_wrong_format_version_and_missing_fields),
      T(reader_rejects_unknown_gpu_types),
      T(validation_rejects_bad_plans_from_text),
      T(from_json_checks_arguments),
      T(file_header_reads_the_recorded_setup),
      T(file_embeds_model_cluster_and_profile),
      T(load_reprices_to_identical_prices_and_bytes),
      T(load_reprices_under_the_cost_models_setup),
      T(load_rejects_plans_over_memory),
      T(load_rejects_invalid_plans_with_the_source_named));
