/* search.c -- the baseline planners: random search and exhaustive search,
 * both driving the construction loop (construct.c) with their own decision
 * callbacks, so they explore exactly the space the learned policy does. */
#include <stdlib.h>
#include <string.h>

#include "construct.h"

/* Keeps the best plan seen (ar_plan_rank: the fastest, after the ones that
 * run the batch exactly): the plan after each placed template is
 * visible at the next depth decision, and the final plan after the run. */
typedef struct best_keeper {
    const arachne_cost_model *cm;
    arachne_plan *best;
    arachne_plan *split; /* scratch for a plan's exact split (ar_plan_keep_form) */
    int have;
} best_keeper;

static int keep_if_better(best_keeper *k, const arachne_plan *p)
{
    int kept;
    if (p->ntemplates < 1) return ARACHNE_OK;
    return ar_plan_keep_better(k->cm, p, k->best, &k->have, k->split, &kept);
}

static arachne_plan *new_plan(const arachne_cost_model *cm)
{
    arachne_plan *p = (arachne_plan *)ar_calloc(1, sizeof *p);
    if (!p) return NULL;
    if (ar_plan_init(p, cm) != ARACHNE_OK) { free(p); return NULL; }
    return p;
}

static void free_plan(arachne_plan *p) { arachne_plan_destroy(p); }

/* Runs one construction that takes the first allowed choice everywhere:
 * when no first template exists it fails with the construction's message. */
static int first_choice(void *user, const ar_dec_ctx *c, int *choice);
static int infeasible_reason(ar_builder *b, arachne_plan *scratch)
{
    int st = ar_builder_run(b, first_choice, NULL, scratch, NULL);
    return st ? st : ar_error(ARACHNE_E_INFEASIBLE, "search: no plan found");
}

static int pick_allowed(const ar_dec_ctx *c, int j)
{
    int i;
    for (i = 0; i < c->n; i++)
        if (c->mask[i] && j-- == 0) return i;
    return -1;
}

static int first_choice(void *user, const ar_dec_ctx *c, int *choice)
{
    (void)user;
    *choice = pick_allowed(c, 0);
    return ARACHNE_OK;
}

/* ---------------------------------------------------------------------- */
/* random                                                                  */

typedef struct rnd_user {
    ar_rng rng;
    best_keeper keep;
} rnd_user;

static int rnd_decide(void *user, const ar_dec_ctx *c, int *choice)
{
    rnd_user *u = (rnd_user *)user;
    if (c->kind == AR_DEC_DEPTH && c->step > 0) {
        int st = keep_if_better(&u->keep, c->plan);
        if (st) return st;
    }
    *choice = pick_allowed(c, ar_rng_int(&u->rng, c->nallowed));
    return ARACHNE_OK;
}

int arachne_search_random(arachne_plan **out, const arachne_cost_model *cm, long budget,
                          uint64_t seed, double time_budget_s)
{
    ar_builder b;
    rnd_user u;
    arachne_plan *cur = NULL;
    double t0 = ar_now();
    long evals = 0, rollouts = 0;
    int st;

    if (out) *out = NULL;
    if (!out || !cm) return AR_NULL_ARG("search random", out, cm);
    if (budget < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search random: budget %ld < 1", budget);
    if (!(time_budget_s >= 0.0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search random: time budget %g s is negative", time_budget_s);
    st = ar_builder_init(&b, cm, NULL);
    if (st) return st;
    memset(&u, 0, sizeof u);
    ar_rng_seed(&u.rng, seed);
    u.keep.cm = cm;
    u.keep.best = new_plan(cm);
    u.keep.split = (arachne_plan *)ar_calloc(1, sizeof *u.keep.split);
    cur = (arachne_plan *)ar_calloc(1, sizeof *cur);
    if (!u.keep.best || !u.keep.split || !cur) { st = ARACHNE_E_NO_MEMORY; goto done; }
    while (evals < budget) {
        long before = b.fills;
        st = ar_builder_run(&b, rnd_decide, &u, cur, NULL);
        if (st) goto done;
        rollouts++;
        evals += b.fills - before;
        st = keep_if_better(&u.keep, cur);
        if (st) goto done;
        if (time_budget_s > 0 && ar_now() - t0 >= time_budget_s) break;
    }
    if (!u.keep.have) { st = infeasible_reason(&b, cur); goto done; }
    strcpy(u.keep.best->method, "random");
    u.keep.best->evaluations = evals;
    u.keep.best->samples = (int)(rollouts > 0x7fffffffL ? 0x7fffffffL : rollouts);
    u.keep.best->planning_s = ar_now() - t0;
    st = ar_plan_finish(u.keep.best);
    if (st) goto done;
    *out = u.keep.best;
    u.keep.best = NULL;
    st = ARACHNE_OK;
done:
    free_plan(u.keep.best);
    free_plan(u.keep.split);
    free_plan(cur);
    ar_builder_free(&b);
    return st;
}

/* ---------------------------------------------------------------------- */
/* exhaustive                                                              */

static int exh_visit(void *user, const arachne_plan *p)
{
    return keep_if_better((best_keeper *)user, p);
}

int arachne_search_exhaustive(arachne_plan **out, const arachne_cost_model *cm,
                              int max_templates, double time_budget_s)
{
    ar_builder b;
    best_keeper keep;
    arachne_plan *cur = NULL;
    double t0 = ar_now();
    long leaves = 0;
    int st, complete = 1;

    if (out) *out = NULL;
    if (!out || !cm) return AR_NULL_ARG("search exhaustive", out, cm);
    if (max_templates < 1 || max_templates > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search exhaustive: max templates %d outside [1, %d]",
                        max_templates, AR_MAX_TEMPLATES);
    if (!(time_budget_s >= 0.0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search exhaustive: time budget %g s is negative", time_budget_s);
    st = ar_builder_init(&b, cm, NULL);
    if (st) return st;
    memset(&keep, 0, sizeof keep);
    keep.cm = cm;
    keep.best = new_plan(cm);
    keep.split = (arachne_plan *)ar_calloc(1, sizeof *keep.split);
    cur = (arachne_plan *)ar_calloc(1, sizeof *cur);
    if (!keep.best || !keep.split || !cur) { st = ARACHNE_E_NO_MEMORY; goto done; }
    st = ar_builder_enumerate(&b, max_templates, time_budget_s > 0 ? t0 + time_budget_s : 0.0, exh_visit, &keep,
                              cur, &leaves);
    if (st == ARACHNE_E_CANCELLED) { complete = 0; st = ARACHNE_OK; }
    if (st) goto done;
    if (!keep.have && !complete) {
        /* the time ran out before the enumeration reached a plan: one
         * construction taking the first allowed choice everywhere gives the
         * best so far, or says why nothing fits (a budget of 1e-6 s used to
         * report a feasible cluster as "no plan found") */
        st = ar_builder_run(&b, first_choice, NULL, cur, NULL);
        if (st) goto done;
        leaves++;
        if ((st = keep_if_better(&keep, cur))) goto done;
    }
    if (!keep.have) {
        /* nothing fits: let the construction explain why */
        st = infeasible_reason(&b, cur);
        goto done;
    }
    strcpy(keep.best->method, complete ? "exhaustive" : "exhaustive-partial");
    keep.best->evaluations = leaves;
    keep.best->samples = 1;
    keep.best->planning_s = ar_now() - t0;
    st = ar_plan_finish(keep.best);
    if (st) goto done;
    *out = keep.best;
    keep.best = NULL;
    st = ARACHNE_OK;
done:
    free_plan(keep.best);
    free_plan(keep.split);
    free_plan(cur);
    ar_builder_free(&b);
    return st;
}
