/* test_threads.c -- handles shared read-only between threads.
 *
 * 8 threads share one model and one cluster and call every read-only getter
 * (names, fields, per-layer parameters, FLOPs, activation bytes, text forms)
 * many times; each thread's results must equal the serial run's, bit for
 * bit.  The last-error message must stay per thread.  Concurrent saves to
 * one path must each succeed and leave one complete file.  `make check-tsan`
 * runs these under ThreadSanitizer.  Pricing: 8 threads load and price one
 * plan with a shared cost model.  Planning: 8 threads build plans with
 * one shared policy, cost model, cluster and model (arachne_plan_build,
 * best-of-4) and get the serial run's plan JSON, apart from planning_s. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "util.h"

#define NTHREADS 8
#define ROUNDS 40
#define NVALS 256

typedef struct shared_in {
    const arachne_model *model;
    const arachne_cluster *cluster;
} shared_in;

typedef struct digest {
    double v[NVALS];
    int n;
    uint64_t text_hash;   /* FNV-1a over every text form read */
    int errors;           /* calls that failed unexpectedly */
} digest;

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void put(digest *d, int st, double v)
{
    if (st != ARACHNE_OK) d->errors++;
    if (d->n < NVALS) d->v[d->n++] = v;
}

/* Everything a planner thread reads from a shared model and cluster. */
static void read_all(const shared_in *in, digest *d)
{
    const char *s = NULL;
    double v = 0;
    int f, k, seq, n = 0, i, g = 0;
    d->n = 0;
    d->text_hash = 1469598103934665603ULL;
    d->errors = 0;
    if (arachne_model_name(in->model, &s) != ARACHNE_OK) d->errors++;
    d->text_hash = fnv(d->text_hash, s);
    if (arachne_model_to_json(in->model, &s) != ARACHNE_OK) d->errors++;
    d->text_hash = fnv(d->text_hash, s);
    for (f = ARACHNE_MODEL_BLOCKS; f <= ARACHNE_MODEL_MOE_BLOCKS; f++) put(d, arachne_model_get(in->model, f, &v), v);
    for (k = ARACHNE_LAYER_EMBED; k <= ARACHNE_LAYER_HEAD; k++) {
        put(d, arachne_model_layer_params(in->model, k, &v), v);
        for (seq = 1024; seq <= 8192; seq *= 2) {
            put(d, arachne_model_layer_flops(in->model, k, seq, 2, &v), v);
            put(d, arachne_model_layer_act_bytes(in->model, k, seq, 1, 4, ARACHNE_RECOMPUTE_SELECTIVE, &v), v);
            put(d, arachne_model_layer_act_bytes(in->model, k, seq, 2, 8, ARACHNE_RECOMPUTE_FULL, &v), v);
        }
    }
    if (arachne_cluster_to_string(in->cluster, &s) != ARACHNE_OK) d->errors++;
    d->text_hash = fnv(d->text_hash, s);
    if (arachne_cluster_to_json(in->cluster, &s) != ARACHNE_OK) d->errors++;
    d->text_hash = fnv(d->text_hash, s);
    if (arachne_cluster_type_count(in->cluster, &n) != ARACHNE_OK) d->errors++;
    for (i = 0; i < n; i++) {
        const char *name = NULL, *other = NULL;
        if (arachne_cluster_type_name(in->cluster, i, &name) != ARACHNE_OK) { d->errors++; continue; }
        d->text_hash = fnv(d->text_hash, name);
        put(d, arachne_cluster_gpu_count(in->cluster, name, &g), g);
        put(d, arachne_cluster_node_count(in->cluster, name, &g), g);
        put(d, arachne_cluster_largest_node(in->cluster, name, &g), g);
        for (f = ARACHNE_GPU_MEMORY_BYTES; f <= ARACHNE_GPU_INTER_LATENCY_S; f++)
            put(d, arachne_cluster_gpu_get(in->cluster, name, f, &v), v);
        if (arachne_cluster_type_name(in->cluster, (i + 1) % n, &other) != ARACHNE_OK) d->errors++;
        put(d, arachne_cluster_link_bandwidth(in->cluster, name, other, &v), v);
    }
    if (arachne_cluster_node_count(in->cluster, NULL, &n) != ARACHNE_OK) d->errors++;
    for (i = 0; i < n; i += 7) {
        if (arachne_cluster_node(in->cluster, i, &s, &g) != ARACHNE_OK) d->errors++;
        d->text_hash = fnv(d->text_hash, s);
        put(d, ARACHNE_OK, g);
    }
}

typedef struct worker {
    pthread_t tid;
    int index;
    const shared_in *in;
    const digest *want;
    int mismatches;
    int bad_errors;     /* last-error message seen from another thread */
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    digest d;
    char mine[64], name[64];
    int r;
    snprintf(mine, sizeof mine, "nosuch-gpu-%d", w->index);
    snprintf(name, sizeof name, "thread-%d", w->index);
    for (r = 0; r < ROUNDS; r++) {
        double v;
        read_all(w->in, &d);
        if (d.errors || d.n != w->want->n || d.text_hash != w->want->text_hash ||
            memcmp(d.v, w->want->v, sizeof d.v[0] * (size_t)d.n) != 0)
            w->mismatches++;
        /* A failure on this thread must leave this thread's message. */
        if (arachne_cluster_gpu_get(w->in->cluster, mine, ARACHNE_GPU_FLOPS, &v) == ARACHNE_OK ||
            !strstr(arachne_last_error(), mine))
            w->bad_errors++;
    }
    return NULL;
}

static int make_shared(arachne_model **m, arachne_cluster **c)
{
    *m = NULL;
    *c = NULL;
    if (arachne_model_preset(m, "qwen3-30b-a3b") != ARACHNE_OK) return 0;
    if (arachne_cluster_parse(c, "a100-40:32x4,a6000:8x4+16x1,h100:16x8") != ARACHNE_OK) return 0;
    return arachne_cluster_set_link_bandwidth(*c, "h100", "a6000", 6.25e9) == ARACHNE_OK;
}

TEST(shared_model_and_cluster_read_by_8_threads)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    shared_in in;
    digest want;
    worker w[NTHREADS];
    int i, started = 0;
    ASSERT_MSG(make_shared(&m, &c), "setup: %s", arachne_last_error());
    in.model = m;
    in.cluster = c;
    read_all(&in, &want);
    ASSERT_EQ(want.errors, 0);
    ASSERT(want.n > 40);
    for (i = 0; i < NTHREADS; i++) {
        w[i].index = i;
        w[i].in = &in;
        w[i].want = &want;
        w[i].mismatches = w[i].bad_errors = 0;
        if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0) break;
        started++;
    }
    for (i = 0; i < started; i++) pthread_join(w[i].tid, NULL);
    arachne_model_destroy(m);
    arachne_cluster_destroy(c);
    ASSERT_EQ(started, NTHREADS);
    for (i = 0; i < NTHREADS; i++) {
        ASSERT_MSG(w[i].mismatches == 0, "thread %d: %d rounds differ from the serial run", i, w[i].mismatches);
        ASSERT_MSG(w[i].bad_errors == 0, "thread %d: %d failures without this thread's message", i, w[i].bad_errors);
    }
}

/* Threads that each parse their own handles at the same time (the parsers
 * share the GPU catalog, the JSON number locale and nothing else). */
typedef struct parser_job {
    pthread_t tid;
    int index, failures;
    const char *want_json;
} parser_job;

static void *parse_work(void *arg)
{
    parser_job *p = arg;
    int r;
    for (r = 0; r < ROUNDS; r++) {
        arachne_cluster *c = NULL, *d = NULL;
        const char *j = NULL, *j2 = NULL;
        if (arachne_cluster_parse(&c, "a100-40:32x4,a6000:8x4+16x1,h100:16x8") != ARACHNE_OK ||
            arachne_cluster_to_json(c, &j) != ARACHNE_OK || strcmp(j, p->want_json) != 0 ||
            arachne_cluster_from_json(&d, j, strlen(j)) != ARACHNE_OK || arachne_cluster_to_json(d, &j2) != ARACHNE_OK ||
            strcmp(j2, p->want_json) != 0)
            p->failures++;
        arachne_cluster_destroy(c);
        arachne_cluster_destroy(d);
    }
    return NULL;
}

TEST(parsers_run_concurrently)
{
    arachne_cluster *c = NULL;
    const char *j = NULL;
    parser_job p[NTHREADS];
    char *want;
    int i, started = 0;
    ASSERT_OK(arachne_cluster_parse(&c, "a100-40:32x4,a6000:8x4+16x1,h100:16x8"));
    ASSERT_OK(arachne_cluster_to_json(c, &j));
    want = ar_strdup(j);
    arachne_cluster_destroy(c);
    ASSERT(want != NULL);
    for (i = 0; i < NTHREADS; i++) {
        p[i].index = i;
        p[i].failures = 0;
        p[i].want_json = want;
        if (pthread_create(&p[i].tid, NULL, parse_work, &p[i]) != 0) break;
        started++;
    }
    for (i = 0; i < started; i++) pthread_join(p[i].tid, NULL);
    free(want);
    ASSERT_EQ(started, NTHREADS);
    for (i = 0; i < NTHREADS; i++) ASSERT_MSG(p[i].failures == 0, "thread %d: %d failures", i, p[i].failures);
}

/* Several threads of one process saving to the SAME path: every save must
 * succeed and the file must always be one complete, loadable document. */
typedef struct saver {
    pthread_t tid;
    const arachne_model *m;
    const char *path;
    int failures;
    char msg[256];
} saver;

static void *save_work(void *arg)
{
    saver *s = arg;
    int r;
    for (r = 0; r < ROUNDS; r++) {
        if (arachne_model_save(s->m, s->path) != ARACHNE_OK) {
            if (!s->failures) snprintf(s->msg, sizeof s->msg, "%s", arachne_last_error());
            s->failures++;
        }
    }
    return NULL;
}

TEST(concurrent_saves_to_one_path_stay_whole)
{
    static const char *presets[NTHREADS] = { "llama3-8b", "qwen3-8b", "qwen3-32b", "qwen3-64b",
                                             "qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3", "llama3-8b" };
    const char *dir = th_tmpdir();
    char path[512];
    arachne_model *m[NTHREADS] = { NULL }, *back = NULL;
    saver s[NTHREADS];
    int i, started = 0, ok = 1;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/model.json", dir);
    for (i = 0; i < NTHREADS; i++) ok = ok && arachne_model_preset(&m[i], presets[i]) == ARACHNE_OK;
    for (i = 0; ok && i < NTHREADS; i++) {
        s[i].m = m[i];
        s[i].path = path;
        s[i].failures = 0;
        s[i].msg[0] = '\0';
        if (pthread_create(&s[i].tid, NULL, save_work, &s[i]) != 0) break;
        started++;
    }
    for (i = 0; i < started; i++) pthread_join(s[i].tid, NULL);
    for (i = 0; i < NTHREADS; i++) arachne_model_destroy(m[i]);
    ASSERT(ok);
    ASSERT_EQ(started, NTHREADS);
    for (i = 0; i < NTHREADS; i++)
        ASSERT_MSG(s[i].failures == 0, "thread %d: %d saves failed: %s", i, s[i].failures, s[i].msg);
    ASSERT_OK(arachne_model_load(&back, path));
    arachne_model_destroy(back);
    {
        const char *out = NULL;
        char cmd[600];
        snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
        ASSERT_EQ(th_run(cmd, &out), 0);
        ASSERT_STR(out, "model.json\n");
    }
}

/* 8 threads load, validate and price the same plan text with ONE shared
 * cost model (arachne_plan_from_json reprices), then price their plan again
 * with arachne_cost_model_price: every thread's JSON must equal the serial
 * run's.  The plan comes from tests/fuzz/corpus/plan/dense-valid (a
 * llama3-8b plan for "a100-40:2x4,h100:1x8"). */
typedef struct pricer {
    pthread_t tid;
    const arachne_cost_model *cm;
    const char *text, *want;
    int failures;
    char msg[256];
} pricer;

static void *price_work(void *arg)
{
    pricer *w = arg;
    int r;
    for (r = 0; r < ROUNDS / 4; r++) {
        arachne_plan *p = NULL;
        const char *j = NULL;
        int st = arachne_plan_from_json(&p, w->cm, w->text, strlen(w->text));
        if (st == ARACHNE_OK) st = arachne_cost_model_price(w->cm, p);
        if (st == ARACHNE_OK) st = arachne_plan_to_json(p, &j);
        if (st != ARACHNE_OK || strcmp(j, w->want) != 0) {
            if (!w->failures) snprintf(w->msg, sizeof w->msg, "%d %s", st, arachne_last_error());
            w->failures++;
        }
        arachne_plan_destroy(p);
    }
    return NULL;
}

TEST(shared_cost_model_prices_from_8_threads)
{
    env e;
    arachne_plan *p = NULL;
    const char *j = NULL;
    char *file = NULL, *want = NULL;
    size_t len = 0;
    pricer w[NTHREADS];
    int i, started = 0;
    if (ar_read_file("tests/fuzz/corpus/plan/dense-valid", &file, &len) != ARACHNE_OK)
        SKIP("tests/fuzz/corpus/plan/dense-valid not found (run from the repository root)");
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:2x4,h100:1x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_DIST_OPTIMIZER, 1));
    ASSERT_OK(arachne_plan_from_json(&p, e.cm, file + 1, len - 1));
    ASSERT_OK(arachne_cost_model_price(e.cm, p));
    ASSERT_OK(arachne_plan_to_json(p, &j));
    want = ar_strdup(j);
    ASSERT(want != NULL);
    for (i = 0; i < NTHREADS; i++) {
        w[i].cm = e.cm;
        w[i].text = file + 1;
        w[i].want = want;
        w[i].failures = 0;
        w[i].msg[0] = '\0';
        if (pthread_create(&w[i].tid, NULL, price_work, &w[i]) != 0) break;
        started++;
    }
    for (i = 0; i < started; i++) pthread_join(w[i].tid, NULL);
    arachne_plan_destroy(p);
    env_close(&e);
    free(file);
    free(want);
    ASSERT_EQ(started, NTHREADS);
    for (i = 0; i < NTHREADS; i++)
        ASSERT_MSG(w[i].failures == 0, "thread %d: %d plans differ from the serial run: %s", i, w[i].failures, w[i].msg);
}

/* ---- planning from 8 threads with one policy and one cost model -------- */

typedef struct plan_job {
    const arachne_policy *pol;
    const arachne_cost_model *cm;
    char *json;   /* plan JSON without the planning_s value (owned) */
    int st;
} plan_job;

static void *plan_worker(void *arg)
{
    plan_job *job = arg;
    arachne_plan *p = NULL;
    job->st = arachne_plan_build(&p, job->pol, job->cm, 4, 7);
    if (job->st == ARACHNE_OK) job->json = plan_json_sans_time(p);
    arachne_plan_destroy(p);
    return NULL;
}

TEST(shared_policy_plans_from_8_threads)
{
    env e;
    arachne_policy *pol = NULL;
    plan_job serial, jobs[NTHREADS];
    pthread_t th[NTHREADS];
    int i, ok = 1;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:8x4,a6000:4x4+4x1,h100:4x8"));
    ASSERT_OK(arachne_policy_create(&pol, 3, 0, 0));
    memset(&serial, 0, sizeof serial);
    serial.pol = pol;
    serial.cm = e.cm;
    plan_worker(&serial);
    ASSERT_OK(serial.st);
    ASSERT(serial.json != NULL);
    for (i = 0; i < NTHREADS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].pol = pol;
        jobs[i].cm = e.cm;
        ASSERT(pthread_create(&th[i], NULL, plan_worker, &jobs[i]) == 0);
    }
    for (i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    for (i = 0; i < NTHREADS; i++) {
        if (jobs[i].st != ARACHNE_OK || !jobs[i].json || strcmp(jobs[i].json, serial.json) != 0) ok = 0;
        free(jobs[i].json);
    }
    free(serial.json);
    arachne_policy_destroy(pol);
    env_close(&e);
    ASSERT_MSG(ok, "a thread's plan differs from the serial plan");
}

SUITE(threads, T(shared_model_and_cluster_read_by_8_threads), T(parsers_run_concurrently),
      T(concurrent_saves_to_one_path_stay_whole), T(shared_cost_model_prices_from_8_threads),
      T(shared_policy_plans_from_8_threads));
