/* test_search.c -- the baseline planners: exhaustive search finds the best
 * plan the construction can reach (checked against random rollouts),
 * random search is deterministic and records itself, MoE models need the
 * expert tiling on large-expert models, and bad arguments fail cleanly. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "construct.h"


static double pget(const arachne_plan *p, int field)
{
    double v = -1;
    arachne_plan_get(p, field, &v);
    return v;
}

typedef struct rnd { ar_rng rng; } rnd;
static int rnd_decide(void *user, const ar_dec_ctx *c, int *choice)
{
    rnd *u = (rnd *)user;
    int i, j = ar_rng_int(&u->rng, c->nallowed);
    for (i = 0; i < c->n; i++)
        if (c->mask[i] && j-- == 0) { *choice = i; break; }
    return ARACHNE_OK;
}

typedef struct counter { long n; double best; } counter;
static int count_visit(void *user, const arachne_plan *p)
{
    counter *c = (counter *)user;
    c->n++;
    if (p->iter_per_s > c->best) c->best = p->iter_per_s;
    return ARACHNE_OK;
}

TEST(exhaustive_beats_every_rollout_of_the_same_space)
{
    env e;
    arachne_plan *best = NULL;
    ar_builder b;
    ar_construct_opts o;
    arachne_plan p;
    int k;
    const char *method = NULL;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:1x4,h100:1x2+2x1"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, 3));
    ASSERT_OK(arachne_search_exhaustive(&best, e.cm, 2, 0.0));
    ASSERT_OK(arachne_plan_method(best, &method));
    ASSERT_STR(method, "exhaustive");
    ASSERT_GT(pget(best, ARACHNE_PLAN_EVALUATIONS), 10);
    ASSERT(pget(best, ARACHNE_PLAN_PLANNING_S) >= 0);
    ASSERT_OK(ar_plan_validate(e.cm, best));
    /* no random rollout of at most two templates does better */
    ar_construct_opts_default(&o);
    o.max_steps = 2;
    ASSERT_OK(ar_builder_init(&b, e.cm, &o));
    memset(&p, 0, sizeof p);
    for (k = 0; k < 300; k++) {
        rnd u;
        ar_rng_seed(&u.rng, (uint64_t)k);
        ASSERT_OK(ar_builder_run(&b, rnd_decide, &u, &p, NULL));
        ASSERT_MSG(p.iter_per_s <= best->iter_per_s * (1 + 1e-12), "rollout %d: %.9g iter/s beats exhaustive %.9g",
                   k, p.iter_per_s, best->iter_per_s);
    }
    /* the enumeration visits exactly what it reports */
    {
        counter c = { 0, 0.0 };
        long leaves = 0;
        ASSERT_OK(ar_builder_enumerate(&b, 2, 0.0, count_visit, &c, &p, &leaves));
        ASSERT_EQ(c.n, leaves);
        ASSERT_EQ(leaves, (long)pget(best, ARACHNE_PLAN_EVALUATIONS));
        ASSERT_NEAR(c.best, best->iter_per_s, 1e-12);
    }
    /* the enumeration visits every order of every template itself: the
     * fill's stage reversal and stage moves are off in it, whatever the
     * options say */
    {
        arachne_plan *off = NULL;
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_REVERSAL, 0));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MOVES, 0));
        ASSERT_OK(arachne_search_exhaustive(&off, e.cm, 2, 0.0));
        ASSERT(memcmp(&off->iter_per_s, &best->iter_per_s, sizeof(double)) == 0);
        ASSERT_EQ(pget(off, ARACHNE_PLAN_EVALUATIONS), pget(best, ARACHNE_PLAN_EVALUATIONS));
        arachne_plan_destroy(off);
    }
    ar_plan_clear(&p);
    ar_builder_free(&b);
    arachne_plan_destroy(best);
    env_close(&e);
}

/* The whole enumeration of this space takes about 9 minutes (4 M plans);
 * a 1 s budget ends it early on any machine, and leaves time for the first
 * complete plan even under a sanitizer on a loaded machine (0.05 s did not:
 * check-asan failed here once while a training ran on both cores). */
TEST(exhaustive_time_budget_returns_partial)
{
    env e;
    arachne_plan *best = NULL;
    const char *method = NULL;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:2x4,h100:2x4"));
    ASSERT_OK(arachne_search_exhaustive(&best, e.cm, 1, 1.0));
    ASSERT_OK(arachne_plan_method(best, &method));
    ASSERT_STR(method, "exhaustive-partial");
    ASSERT_GT(pget(best, ARACHNE_PLAN_ITER_PER_S), 0);
    arachne_plan_destroy(best);
    best = NULL;
    /* a budget that runs out before the first plan: still a plan (one
     * construction of first choices), not "no plan found" on a cluster
     * that has plans */
    ASSERT_OK(arachne_search_exhaustive(&best, e.cm, 1, 1e-9));
    ASSERT_OK(arachne_plan_method(best, &method));
    ASSERT_STR(method, "exhaustive-partial");
    ASSERT_GT(pget(best, ARACHNE_PLAN_ITER_PER_S), 0);
    arachne_plan_destroy(best);
    env_close(&e);
}

TEST(random_search_is_deterministic_and_records_itself)
{
    env e;
    arachne_plan *a = NULL, *b = NULL, *c = NULL;
    const char *ja, *jb, *method = NULL;
    char *copy;
    const int budget = th_quick() ? 50 : 150; /* quick: check-valgrind, check-tsan */
    ASSERT_OK(env_open(&e, "qwen3-8b", "a100-40:4x4,a6000:4x2,h100:2x8"));
    ASSERT_OK(arachne_search_random(&a, e.cm, budget, 7, 0.0));
    ASSERT_OK(arachne_search_random(&b, e.cm, budget, 7, 0.0));
    ASSERT_OK(arachne_search_random(&c, e.cm, budget, 8, 0.0));
    ASSERT_OK(arachne_plan_method(a, &method));
    ASSERT_STR(method, "random");
    ASSERT(pget(a, ARACHNE_PLAN_EVALUATIONS) >= budget);
    ASSERT_OK(ar_plan_validate(e.cm, a));
    /* identical but for the planning time */
    a->planning_s = b->planning_s = 0;
    ASSERT_OK(ar_plan_finish(a));
    ASSERT_OK(ar_plan_finish(b));
    ASSERT_OK(arachne_plan_to_json(a, &ja));
    copy = (char *)malloc(strlen(ja) + 1);
    ASSERT(copy != NULL);
    strcpy(copy, ja);
    ASSERT_OK(arachne_plan_to_json(b, &jb));
    ASSERT_STR(copy, jb);
    free(copy);
    ASSERT_GT(pget(c, ARACHNE_PLAN_ITER_PER_S), 0);
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    arachne_plan_destroy(c);
    env_close(&e);
}

TEST(deepseek_needs_expert_tiling)
{
    env e;
    arachne_plan *p = NULL;
    int j, s, ep = 0;
    ASSERT_OK(env_open(&e, "deepseek-v3", "h100:64x4"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXPERT_TILING, 0));
    ASSERT_STATUS(arachne_search_random(&p, e.cm, 5, 1, 0.0), ARACHNE_E_INFEASIBLE);
    ASSERT(p == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "deepseek-v3");
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXPERT_TILING, 1));
    ASSERT_OK(arachne_search_random(&p, e.cm, 5, 1, 0.0));
    ASSERT_OK(ar_plan_validate(e.cm, p));
    for (j = 0; j < p->ntemplates; j++)
        for (s = 0; s < p->t[j].depth; s++) ep += p->t[j].stages[s].ep > 1;
    ASSERT_GT(ep, 0);
    arachne_plan_destroy(p);
    env_close(&e);
}

TEST(search_arguments_are_checked)
{
    env e;
    arachne_plan *p = (arachne_plan *)&p;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:1x4"));
    ASSERT_STATUS(arachne_search_random(NULL, e.cm, 10, 1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_search_random(&p, NULL, 10, 1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(p == NULL);
    ASSERT_STATUS(arachne_search_random(&p, e.cm, 0, 1, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_search_random(&p, e.cm, 10, 1, -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_search_exhaustive(&p, e.cm, 0, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_search_exhaustive(&p, e.cm, 17, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_search_exhaustive(&p, e.cm, 1, -2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_search_exhaustive(NULL, e.cm, 1, 0), ARACHNE_E_INVALID_ARGUMENT);
    env_close(&e);
}

TEST(infeasible_search_says_why)
{
    env e;
    arachne_plan *p = NULL;
    ASSERT_OK(env_open(&e, "qwen3-32b", "a5000:1x2"));
    ASSERT_STATUS(arachne_search_exhaustive(&p, e.cm, 1, 0), ARACHNE_E_INFEASIBLE);
    ASSERT_CONTAINS(arachne_last_error(), "qwen3-32b does not fit");
    ASSERT_STATUS(arachne_search_random(&p, e.cm, 10, 3, 0), ARACHNE_E_INFEASIBLE);
    ASSERT(p == NULL);
    env_close(&e);
}

SUITE(search, T(exhaustive_beats_every_rollout_of_the_same_space), T(exhaustive_time_budget_returns_partial),
      T(random_search_is_deterministic_and_records_itself), T(deepseek_needs_expert_tiling),
      T(search_arguments_are_checked), T(infeasible_search_says_why));
