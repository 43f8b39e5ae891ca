/* test_flat.c -- the flat policy baseline: rollouts give priced plans or
 * the penalty (never a crash), planning, file round trip, and training that
 * raises the mean return on a tiny composition. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "flat.h"

/* env_open with the cost model's depth limit set (0 keeps the default). */
static int env_open_depth(env *e, const char *model, const char *spec, int max_depth)
{
    int st = env_open(e, model, spec);
    if (!st && max_depth > 0) st = arachne_cost_model_set(e->cm, ARACHNE_OPT_MAX_DEPTH, max_depth);
    return st;
}

TEST(rollouts_give_priced_plans_or_the_penalty)
{
    env e;
    ar_flat *f = NULL;
    ar_flat_runner r;
    int k, feasible = 0, infeasible = 0, st;
    ASSERT_OK(env_open_depth(&e, "llama3-8b", "a100-40:2x4,h100:2x4", 0));
    ASSERT_OK(ar_flat_create(&f, 3, 16, 1));
    ASSERT_OK(ar_flat_runner_init(&r, f, e.cm, NULL));
    for (k = 0; k < 300; k++) {
        st = ar_flat_rollout(&r, 0, (uint64_t)k + 1, k % 2);
        if (st) break;
        if (r.feasible) {
            feasible++;
            if (r.plan.ntemplates < 1 || !(r.plan.iter_per_s > 0) || !(r.ret > 0)) { st = -100; break; }
            if (ar_plan_validate(e.cm, &r.plan) != ARACHNE_OK) { st = -101; break; }
            if (r.plan.gpus_used > 16) { st = -102; break; }
        } else {
            infeasible++;
            if (r.plan.ntemplates != 0 || r.ret != -1.0 || !r.why[0]) { st = -103; break; }
        }
        if (r.templates_tried < 1) { st = -104; break; }
    }
    ar_flat_runner_free(&r);
    ar_flat_destroy(f);
    env_close(&e);
    ASSERT_EQ(st, 0);
    /* an untrained flat policy samples both kinds: that is the point of the baseline */
    ASSERT_GT(feasible, 0);
    ASSERT_GT(infeasible, feasible);
}

TEST(moe_and_impossible_compositions_do_not_crash)
{
    env e;
    ar_flat *f = NULL;
    arachne_plan *p = NULL;
    long evals = 0;
    int k;
    ASSERT_OK(ar_flat_create(&f, 5, 16, 1));
    /* Mixtral: MoE stages keep EP = 1, ETP = TP */
    ASSERT_OK(env_open_depth(&e, "mixtral-8x7b", "h100:2x8,a100-80:2x4", 0));
    for (k = 0; k < 4; k++) {
        int st = ar_flat_plan(&p, f, e.cm, 32, (uint64_t)k, &evals);
        ASSERT(st == ARACHNE_OK || st == ARACHNE_E_INFEASIBLE);
        ASSERT_GT(evals, 31);
        if (st == ARACHNE_OK) {
            double v;
            ASSERT_OK(arachne_plan_get(p, ARACHNE_PLAN_ITER_PER_S, &v));
            ASSERT_GT(v, 0);
            arachne_plan_destroy(p);
            p = NULL;
        }
    }
    env_close(&e);
    /* nothing fits: a 32B model on one A6000 */
    ASSERT_OK(env_open_depth(&e, "qwen3-32b", "a6000:1x1", 0));
    ASSERT_STATUS(ar_flat_plan(&p, f, e.cm, 8, 1, &evals), ARACHNE_E_INFEASIBLE);
    ASSERT(p == NULL);
    ASSERT_EQ(evals, 8);
    ASSERT_CONTAINS(arachne_last_error(), "none of 8 rollouts");
    env_close(&e);
    ar_flat_destroy(f);
}

TEST(flat_plan_is_deterministic_and_records_the_method)
{
    env e;
    ar_flat *f = NULL;
    arachne_plan *a = NULL, *b = NULL;
    const char *ja, *jb, *m;
    double samples, evals;
    ASSERT_OK(env_open_depth(&e, "llama3-8b", "a100-40:2x4,h100:2x4", 4));
    ASSERT_OK(ar_flat_create(&f, 11, 16, 1));
    ASSERT_OK(ar_flat_plan(&a, f, e.cm, 64, 9, NULL));
    ASSERT_OK(ar_flat_plan(&b, f, e.cm, 64, 9, NULL));
    ASSERT_OK(arachne_plan_to_json(a, &ja));
    ASSERT_OK(arachne_plan_to_json(b, &jb));
    /* the planning time differs; everything before the planner record matches */
    ASSERT(strncmp(ja, jb, (size_t)(strstr(ja, "\"planner\"") - ja)) == 0);
    ASSERT_OK(arachne_plan_method(a, &m));
    ASSERT_STR(m, "flat-best-of-k");
    ASSERT_OK(arachne_plan_get(a, ARACHNE_PLAN_EVALUATIONS, &evals));
    ASSERT(evals >= 64);
    (void)samples;
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    ar_flat_destroy(f);
    env_close(&e);
}

TEST(save_and_load_round_trip_and_reject_bad_files)
{
    ar_flat *f = NULL, *g = NULL;
    const char *dir = th_tmpdir();
    char path[512], bad[512];
    FILE *fp;
    char *data = NULL;
    size_t len = 0;
    int i;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/flat.arflat", dir);
    snprintf(bad, sizeof bad, "%s/bad.arflat", dir);
    ASSERT_OK(ar_flat_create(&f, 21, 24, 2));
    ASSERT_OK(ar_flat_save(f, path, "{\"note\":\"test\"}"));
    ASSERT_OK(ar_flat_load(&g, path));
    for (i = 0; i < 2; i++) {
        size_t n = ar_nn_param_count(f->net[i]);
        ASSERT_EQ(n, ar_nn_param_count(g->net[i]));
        ASSERT(memcmp(ar_nn_params_const(f->net[i]), ar_nn_params_const(g->net[i]), n * sizeof(double)) == 0);
    }
    ar_flat_destroy(g);
    g = NULL;
    /* truncated */
    ASSERT_OK(ar_read_file(path, &data, &len));
    ASSERT_OK(ar_write_file_atomic(bad, data, len - 9));
    ASSERT_STATUS(ar_flat_load(&g, bad), ARACHNE_E_CORRUPT);
    /* a flipped byte in the second image fails its checksum */
    data[len - 20] ^= 0x40;
    ASSERT_OK(ar_write_file_atomic(bad, data, len));
    ASSERT_STATUS(ar_flat_load(&g, bad), ARACHNE_E_CORRUPT);
    free(data);
    /* not a flat policy */
    fp = fopen(bad, "wb");
    ASSERT(fp != NULL);
    fputs("hello, this is not a policy file at all", fp);
    fclose(fp);
    ASSERT_STATUS(ar_flat_load(&g, bad), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "bad magic");
    ASSERT(g == NULL);
    ASSERT_STATUS(ar_flat_load(&g, "/nonexistent/dir/x.arflat"), ARACHNE_E_IO);
    ar_flat_destroy(f);
}

TEST(training_raises_the_mean_return)
{
    env e;
    ar_flat *f = NULL;
    ar_flat_train_opts o;
    ar_flat_train_stats S;
    const arachne_cost_model *cms[1];
    double before, after;
    long evals;
    ASSERT_OK(env_open_depth(&e, "llama3-8b", "a100-40:2x4,h100:2x4", 4));
    ASSERT_OK(ar_flat_create(&f, 2, 32, 1));
    ASSERT_OK(ar_flat_mean_return(f, e.cm, 128, 77, &before, &evals));
    ASSERT_EQ(evals >= 128, 1);
    cms[0] = e.cm;
    ar_flat_train_opts_default(&o);
    /* 1500 evaluations lift the mean return from -0.99 to about 0.3; the
     * quick run (check-valgrind, check-tsan) does 400, which lifts it to
     * about 0.1 -- both well clear of the +0.1 the test asks for. */
    o.evaluations = th_quick() ? 400 : 1500;
    o.group = 8;
    o.lr = 3e-3;
    ASSERT_OK(ar_flat_train(f, cms, 1, &o, &S));
    ASSERT(S.evaluations >= o.evaluations);
    ASSERT(S.updates > 10);
    ASSERT_OK(ar_flat_mean_return(f, e.cm, 128, 77, &after, NULL));
    ASSERT_GT(after, before + 0.1);
    ASSERT_GT(S.last_mean_return, S.first_mean_return);
    /* bad options */
    o.group = 1;
    ASSERT_STATUS(ar_flat_train(f, cms, 1, &o, &S), ARACHNE_E_INVALID_ARGUMENT);
    ar_flat_destroy(f);
    env_close(&e);
}

SUITE(flat, T(rollouts_give_priced_plans_or_the_penalty), T(moe_and_impossible_compositions_do_not_crash),
      T(flat_plan_is_deterministic_and_records_the_method), T(save_and_load_round_trip_and_reject_bad_files),
      T(training_raises_the_mean_return));
