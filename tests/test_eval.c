/* test_eval.c -- eval configs (defaults, paths, rejected configs with
 * file:line:col messages) and a tiny evaluation run with every method, in
 * the library and through `arachne eval`. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "eval.h"
#include "json.h"

static const char *write_cfg(const char *name, const char *text)
{
    static char path[600];
    const char *dir = th_tmpdir();
    if (!dir) return NULL;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (ar_write_file_atomic(path, text, strlen(text)) != ARACHNE_OK) return NULL;
    return path;
}

/* A tiny config: 8 GPUs, depth <= 4, a flat policy trained for 64 evaluations. */
static const char *tiny =
    "{\"format\": \"arachne-eval\", \"version\": 1, \"samples\": 4, \"random_factor\": 3, \"rollout\": true,\n"
    " \"exhaustive\": {\"max_gpus\": 16, \"max_templates\": 1, \"max_depth\": 2, \"time_budget_s\": 30},\n"
    " \"flat\": {\"train\": [{\"model\": \"llama3-8b\", \"cluster\": \"a100-40:2x4\", \"max_depth\": 4}],\n"
    "          \"evaluations\": 64, \"group\": 4, \"hidden\": 16, \"layers\": 1},\n"
    " \"compositions\": [{\"name\": \"tiny\", \"model\": \"llama3-8b\", \"cluster\": \"a100-40:1x4,h100:1x4\",\n"
    "                    \"max_depth\": 4, \"global_batch\": 256}]}\n";

TEST(config_defaults_and_relative_paths)
{
    ar_eval_config *c = NULL;
    const char *text =
        "{\"format\": \"arachne-eval\", \"version\": 1, \"policy\": \"../policies/p.arpol\",\n"
        " \"flat\": {\"policy\": \"flat.arflat\"},\n"
        " \"compositions\": [{\"name\": \"a\", \"model\": \"qwen3-64b\", \"cluster\": \"h100:4x8\",\n"
        "   \"recompute\": \"full\", \"dist_optimizer\": true, \"headroom\": 0.1, \"exhaustive\": false},\n"
        "  {\"name\": \"b\", \"model\": \"m.json\", \"cluster\": \"c.json\"}]}";
    ASSERT_OK(ar_eval_config_parse(&c, text, strlen(text), "dir/sub/eval.json"));
    ASSERT_EQ(c->samples, 16);
    ASSERT_EQ(c->random_factor, 100);
    ASSERT_EQ(c->exh_max_gpus, 64);
    ASSERT_STR(c->policy, "dir/sub/../policies/p.arpol");
    ASSERT_STR(c->flat_policy, "dir/sub/flat.arflat");
    ASSERT_EQ(c->flat_enabled, 1);
    ASSERT_EQ(c->ncomps, 2);
    ASSERT_STR(c->comps[0].model, "qwen3-64b");
    ASSERT_EQ(c->comps[0].recompute, ARACHNE_RECOMPUTE_FULL);
    ASSERT_EQ(c->comps[0].dist_optimizer, 1);
    ASSERT_EQ(c->comps[0].exhaustive, 0);
    ASSERT_STR(c->comps[1].model, "dir/sub/m.json");
    ASSERT_STR(c->comps[1].cluster, "dir/sub/c.json");
    ASSERT_EQ(c->comps[1].recompute, -1);
    ASSERT_EQ(c->comps[1].exhaustive, -1);
    ar_eval_config_free(c);
}

TEST(bad_configs_are_rejected_with_positions)
{
    static const struct { const char *text; int status; const char *where; const char *what; } cases[] = {
        { "{\"format\": \"arachne-eval\", \"version\": 1,\n \"sample\": 4, \"compositions\": []}", ARACHNE_E_PARSE,
          ":2:", "sample" },
        { "{\"format\": \"arachne-eval\", \"version\": 1}", ARACHNE_E_PARSE, ":1:1:", "compositions" },
        { "{\"format\": \"arachne-eval\", \"version\": 1, \"compositions\": []}", ARACHNE_E_PARSE, ":1:", "at least one" },
        { "{\"format\": \"arachne-eval\", \"version\": 2, \"compositions\": []}", ARACHNE_E_UNSUPPORTED, ":1:",
          "version 2" },
        { "{\"format\": \"other\", \"version\": 1, \"compositions\": []}", ARACHNE_E_PARSE, ":1:", "arachne-eval" },
        { "{\"format\": \"arachne-eval\", \"version\": 1,\n \"compositions\": [\n  {\"name\": \"x\", \"model\": 3, "
          "\"cluster\": \"h100:1x8\"}]}", ARACHNE_E_PARSE, ":3:", "model" },
        { "{\"format\": \"arachne-eval\", \"version\": 1, \"compositions\": [\n {\"name\": \"x\", \"model\": \"m\", "
          "\"cluster\": \"c\"},\n {\"name\": \"x\", \"model\": \"m\", \"cluster\": \"c\"}]}", ARACHNE_E_PARSE, ":3:",
          "duplicate" },
        { "{\"format\": \"arachne-eval\", \"version\": 1, \"samples\": 0, \"compositions\": []}", ARACHNE_E_PARSE,
          ":1:", "samples" },
        { "{\"format\": \"arachne-eval\", \"version\": 1, \"compositions\": [{\"name\": \"x\", \"model\": \"m\", "
          "\"cluster\": \"c\", \"recompute\": \"some\"}]}", ARACHNE_E_PARSE, ":1:", "recompute" },
        { "{\"format\": \"arachne-eval\", \"version\": 1, \"flat\": {\"evaluations\": 5},\n \"compositions\": "
          "[{\"name\": \"x\", \"model\": \"m\", \"cluster\": \"c\"}]}", ARACHNE_E_PARSE, ":1:", "flat" },
        { "{\"format\": \"arachne-eval\", \"version\": 1, \"exhaustive\": {\"max_depth\": 99}, \"compositions\": "
          "[{\"name\": \"x\", \"model\": \"m\", \"cluster\": \"c\"}]}", ARACHNE_E_PARSE, ":1:", "max_depth" },
        { "{\"format\": \"arachne-eval\", \"version\": 1, \"rollout\": 1, \"compositions\": "
          "[{\"name\": \"x\", \"model\": \"m\", \"cluster\": \"c\"}]}", ARACHNE_E_PARSE, ":1:", "rollout" },
        { "{\"format\": \"arachne-eval\", \"version\": 1, \"rollout_evaluations\": -1, \"compositions\": "
          "[{\"name\": \"x\", \"model\": \"m\", \"cluster\": \"c\"}]}", ARACHNE_E_PARSE, ":1:",
          "rollout_evaluations" },
        { "{\"format\": \"arachne-eval\",, }", ARACHNE_E_PARSE, ":1:", "" },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ar_eval_config *c = (ar_eval_config *)1;
        const char *path = write_cfg("bad.json", cases[i].text), *msg;
        ASSERT(path != NULL);
        arachne_clear_error();
        ASSERT_MSG(ar_eval_config_load(&c, path) == cases[i].status, "case %zu: status %d, wanted %d (%s)", i,
                   ar_eval_config_load(&c, path), cases[i].status, arachne_last_error());
        ASSERT(c == NULL);
        msg = arachne_last_error();
        ASSERT_MSG(strncmp(msg, path, strlen(path)) == 0, "case %zu: message does not start with the path: %s", i, msg);
        ASSERT_MSG(strstr(msg, cases[i].where) != NULL, "case %zu: no '%s' in: %s", i, cases[i].where, msg);
        ASSERT_MSG(strstr(msg, cases[i].what) != NULL, "case %zu: no '%s' in: %s", i, cases[i].what, msg);
    }
    {
        ar_eval_config *c = NULL;
        ASSERT_STATUS(ar_eval_config_load(&c, "/nonexistent/eval.json"), ARACHNE_E_IO);
    }
}

/* Writes `text` as the config file `name`, loads it and runs it with a
 * small untrained policy (1 layer of 16): the caller frees *c, *pol and,
 * once the run has started, *res. */
static int run_config(const char *name, const char *text, ar_eval_config **c, arachne_policy **pol,
                      ar_eval_result *res)
{
    const char *path = write_cfg(name, text);
    int st;
    memset(res, 0, sizeof *res);
    if (!path) return ARACHNE_E_IO;
    if ((st = ar_eval_config_load(c, path)) || (st = arachne_policy_create(pol, 1, 16, 1))) return st;
    return ar_eval_run(*c, *pol, NULL, NULL, res);
}

TEST(tiny_run_has_every_method)
{
    ar_eval_config *c = NULL;
    ar_eval_result res;
    arachne_policy *pol = NULL;
    ar_buf b;
    ar_json *j = NULL;
    const ar_json *comps, *results;
    int k;
    ASSERT_OK(run_config("tiny.json", tiny, &c, &pol, &res));
    ASSERT_EQ(res.nrows, 1);
    ASSERT_EQ(res.rows[0].gpus, 8);
    ASSERT_GT(res.rows[0].best, 0);
    for (k = 0; k < AR_EVAL_METHODS; k++) {
        const ar_eval_cell *cell = &res.rows[0].cell[k];
        ASSERT_MSG(cell->ran, "method %d did not run", k);
        ASSERT(cell->rel <= 1.0);
        ASSERT(cell->evaluations >= 1 || cell->status != ARACHNE_OK);
        if (cell->status == ARACHNE_OK) {
            ASSERT_GT(cell->rel, 0);
            /* what the plan runs, and whether that is the asked batch */
            ASSERT(cell->samples_run >= res.rows[0].comp.global_batch);
            ASSERT_EQ(cell->exact, cell->samples_run == res.rows[0].comp.global_batch);
            ASSERT_NEAR(res.pop[AR_EVAL_POP_ALL][k].share_exact, cell->exact, 0);
        }
        ASSERT_EQ(res.ran[k], 1);
    }
    /* the random baseline gets as many evaluations as best-of-K used */
    ASSERT_EQ(res.rows[0].cell[AR_EVAL_RANDOM_SAME].evaluations >= res.rows[0].cell[AR_EVAL_POLICY_BEST].evaluations, 1);
    ASSERT_EQ(res.rows[0].cell[AR_EVAL_RANDOM_MANY].evaluations >= 3 * res.rows[0].cell[AR_EVAL_POLICY_BEST].evaluations, 1);
    /* refinement starts from the best-of-K plan and never loses */
    ASSERT(res.rows[0].cell[AR_EVAL_POLICY_REFINED].iter_per_s >= res.rows[0].cell[AR_EVAL_POLICY_BEST].iter_per_s);
    ASSERT(res.rows[0].cell[AR_EVAL_POLICY_REFINED].evaluations > res.rows[0].cell[AR_EVAL_POLICY_BEST].evaluations);
    /* rollout decoding never plans slower than greedy decoding */
    ASSERT(res.rows[0].cell[AR_EVAL_POLICY_ROLLOUT].iter_per_s >= res.rows[0].cell[AR_EVAL_POLICY_GREEDY].iter_per_s);
    ASSERT_STR(res.rows[0].cell[AR_EVAL_POLICY_ROLLOUT].method, "policy-rollout");
    /* the reference of a small row is the exhaustive search; populations count it */
    ASSERT_EQ(res.rows[0].ref, AR_EVAL_EXHAUSTIVE);
    ASSERT_EQ(res.pop[AR_EVAL_POP_ALL][AR_EVAL_EXHAUSTIVE].rows, 1);
    ASSERT_NEAR(res.pop[AR_EVAL_POP_ALL][AR_EVAL_EXHAUSTIVE].geomean, 1.0, 1e-12);
    ASSERT_EQ(res.pop[AR_EVAL_POP_DENSE][AR_EVAL_POLICY_REFINED].rows + res.pop[AR_EVAL_POP_MOE][AR_EVAL_POLICY_REFINED].rows, 1);
    ASSERT_NEAR(res.pop[AR_EVAL_POP_ALL][AR_EVAL_POLICY_REFINED].geomean,
                res.rows[0].cell[AR_EVAL_POLICY_REFINED].iter_per_s / res.rows[0].cell[AR_EVAL_EXHAUSTIVE].iter_per_s, 1e-9);
    ASSERT_STR(res.flat_source, "trained");
    ASSERT(res.flat_train_evaluations >= 64);

    ar_buf_init(&b);
    ar_eval_result_table(c, &res, "test policy", &b);
    ASSERT_OK(ar_buf_status(&b));
    ar_buf_put(&b, "", 1);
    for (k = 0; k < AR_EVAL_METHODS; k++) ASSERT_CONTAINS(b.data, ar_eval_method_name(k, 4, 3));
    ASSERT_CONTAINS(b.data, "tiny");
    ASSERT_CONTAINS(b.data, "geometric mean");
    ASSERT_CONTAINS(b.data, "share>=0.95");
    ASSERT_CONTAINS(b.data, "exact-batch");
    ar_buf_free(&b);

    ar_buf_init(&b);
    ar_eval_result_json(c, &res, "test policy", &b);
    ASSERT_OK(ar_buf_status(&b));
    ASSERT_OK(ar_json_parse(&j, b.data, b.len, "<result>"));
    ASSERT_OK(ar_json_arr(j, "compositions", 1, &comps));
    ASSERT_EQ(comps->count, 1);
    ASSERT_OK(ar_json_obj(comps->items[0], "results", 1, &results));
    ASSERT_EQ(results->count, AR_EVAL_METHODS);
    ASSERT(ar_json_get(results, "random-x3") != NULL);
    ASSERT(ar_json_get(results, "flat-best4") != NULL);
    ASSERT(ar_json_get(results, "policy-best4+refine") != NULL);
    ASSERT(ar_json_get(results, "policy-rollout") != NULL);
    {
        const ar_json *pop = NULL, *all = NULL;
        ASSERT_OK(ar_json_obj(j, "population", 1, &pop));
        ASSERT_OK(ar_json_obj(pop, "all", 1, &all));
        ASSERT(ar_json_get(all, "policy-best4+refine") != NULL);
        ASSERT(ar_json_get(pop, "dense") != NULL && ar_json_get(pop, "moe") != NULL);
        ASSERT(ar_json_get(ar_json_get(all, "exhaustive"), "share_exact_batch") != NULL);
        ASSERT(ar_json_get(ar_json_get(results, "exhaustive"), "samples_run") != NULL);
    }
    ar_json_free(j);
    ar_buf_free(&b);

    ar_eval_result_free(&res);
    arachne_policy_destroy(pol);
    ar_eval_config_free(c);
}

/* The default-plan column is what arachne_plan_build_refined returns,
 * recompute probe included (the compositions of
 * refine.the_default_planner_chooses_the_recompute_mode where full
 * recomputation wins), and a composition that names its mode keeps it. */
TEST(the_default_plan_column_is_the_default_planners_plan)
{
    static const char *cfg =
        "{\"format\": \"arachne-eval\", \"version\": 1, \"samples\": 4, \"seed\": 7, \"random_factor\": 1,\n"
        " \"refine_evaluations\": 60, \"exhaustive\": {\"max_gpus\": 1},\n"
        " \"compositions\": [\n"
        "  {\"name\": \"only-full-fits\", \"model\": \"qwen3-30b-a3b\", \"cluster\": \"a100-40:4x4\", \"global_batch\": 512},\n"
        "  {\"name\": \"full-is-faster\", \"model\": \"qwen3-30b-a3b\", \"cluster\": \"l40s:22x1\", \"global_batch\": 512},\n"
        "  {\"name\": \"named-selective\", \"model\": \"qwen3-30b-a3b\", \"cluster\": \"a100-40:4x4\", \"global_batch\": 512,\n"
        "   \"recompute\": \"selective\"}]}\n";
    ar_eval_config *c = NULL;
    ar_eval_result res;
    arachne_policy *pol = NULL;
    int i;
    ASSERT_OK(run_config("recompute.json", cfg, &c, &pol, &res));
    ASSERT_EQ(res.nrows, 3);
    for (i = 0; i < 2; i++) {
        const ar_eval_cell *cell = &res.rows[i].cell[AR_EVAL_POLICY_REFINED];
        ar_eval_env env;
        arachne_plan *want = NULL;
        double v;
        ASSERT_OK(ar_eval_env_build(&env, &c->comps[i]));
        ASSERT_OK(arachne_plan_build_refined(&want, pol, env.cm, 4, 7, 60, 0.0));
        ASSERT_OK(arachne_plan_get(want, ARACHNE_PLAN_RECOMPUTE, &v));
        ASSERT_EQ(v, (double)ARACHNE_RECOMPUTE_FULL);
        ASSERT_OK(cell->status);
        ASSERT_OK(arachne_plan_get(want, ARACHNE_PLAN_ITER_PER_S, &v));
        ASSERT_EQ(cell->iter_per_s, v);
        ASSERT_OK(arachne_plan_get(want, ARACHNE_PLAN_EVALUATIONS, &v));
        ASSERT_EQ((double)cell->evaluations, v);
        /* the other columns plan in the composition's mode */
        if (i == 0) ASSERT_EQ(res.rows[i].cell[AR_EVAL_POLICY_BEST].status, ARACHNE_E_INFEASIBLE);
        else ASSERT(cell->iter_per_s > res.rows[i].cell[AR_EVAL_POLICY_BEST].iter_per_s);
        arachne_plan_destroy(want);
        ar_eval_env_free(&env);
    }
    /* a named mode: no probe, as arachne plan --recompute selective */
    ASSERT_EQ(res.rows[2].cell[AR_EVAL_POLICY_REFINED].status, ARACHNE_E_INFEASIBLE);
    ASSERT(strstr(res.rows[2].cell[AR_EVAL_POLICY_REFINED].note, "full recomputation") == NULL);
    /* best-of-K's own error, taken before the probe's runs */
    ASSERT(res.rows[0].cell[AR_EVAL_POLICY_BEST].note[0] != '\0');
    ASSERT(strstr(res.rows[0].cell[AR_EVAL_POLICY_BEST].note, "full recomputation") == NULL);
    ar_eval_result_free(&res);
    arachne_policy_destroy(pol);
    ar_eval_config_free(c);
}

TEST(cli_eval_prints_the_table_and_fails_cleanly)
{
    char cmd[1400], dir[600];
    const char *out = NULL, *path = write_cfg("tiny.json", tiny);
    size_t n;
    ASSERT(path != NULL && strrchr(path, '/') != NULL);
    /* a policy written next to the config */
    n = (size_t)(strrchr(path, '/') - path);
    memcpy(dir, path, n);
    dir[n] = '\0';
    snprintf(cmd, sizeof cmd,
             "'%s' policy init --out '%s/p.arpol' --seed 3 --hidden 16 --layers 1 >/dev/null 2>&1 && "
             "'%s' eval --config '%s' --policy '%s/p.arpol' 2>&1", th_arachne_bin(), dir, th_arachne_bin(), path, dir);
    ASSERT_EQ(th_run(cmd, &out), 0);
    ASSERT_CONTAINS(out, "policy-best4");
    ASSERT_CONTAINS(out, "random-x3");
    ASSERT_CONTAINS(out, "exhaustive");
    ASSERT_CONTAINS(out, "flat-best4");
    ASSERT_CONTAINS(out, "geometric mean");
    ASSERT_CONTAINS(out, "p.arpol");
    /* a bad config: exit 1 and one "arachne: eval: PATH:LINE:COL" line */
    path = write_cfg("bad.json", "{\"format\": \"arachne-eval\", \"version\": 1,\n \"bogus\": 1}");
    snprintf(cmd, sizeof cmd, "'%s' eval --config '%s' 2>&1 >/dev/null", th_arachne_bin(), path);
    ASSERT_EQ(th_run(cmd, &out), 1);
    ASSERT_CONTAINS(out, "arachne: eval: ");
    ASSERT_CONTAINS(out, "bad.json:2:");
    ASSERT_CONTAINS(out, "bogus");
    /* usage errors: exit 2 */
    snprintf(cmd, sizeof cmd, "'%s' eval 2>&1", th_arachne_bin());
    ASSERT_EQ(th_run(cmd, &out), 2);
    ASSERT_CONTAINS(out, "--config");
}

SUITE(eval, T(config_defaults_and_relative_paths), T(bad_configs_are_rejected_with_positions),
      T(tiny_run_has_every_method), T(the_default_plan_column_is_the_default_planners_plan),
      T(cli_eval_prints_the_table_and_fails_cleanly));
