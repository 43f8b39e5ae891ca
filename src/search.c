/* search.c -- the baseline planners: random search and exhaustive search,
 * both driving the construction loop (construct.c) with their own decision
 * callbacks, so they explore exactly the space the learned policy does. */
#include <stdlib.h>
#include <string.h>

#include "construct.h"

/* Keeps the fastest plan seen: the plan after each placed template is
 * visible at the next depth decision, and the final plan after the run. */
typedef struct best_keeper {
    arachne_plan *best;
    int have;
} best_keeper;

static int keep_if_better(best_keeper *k, const arachne_plan *p)
{
    if (p->ntemplates < 1) return ARACHNE_OK;
    if (k->have && !(p->iter_per_s > k->best->iter_per_s)) return ARACHNE_OK;
    {
        int st = ar_plan_copy(k->best, p);
        if (st) return st;
    }
    k->have = 1;
    return ARACHNE_OK;
}

static arachne_plan *new_plan(const arachne_cost_model *cm)
{
    arachne_plan *p = (arachne_plan *)ar_calloc(1, sizeof *p);
    if (!p) return NULL;
    if (ar_plan_init(p, cm) != ARACHNE_OK) { free(p); return NULL; }
    return p;
}

static void free_plan(arachne_plan *p) { arachne_plan_destroy(p); }

static int pick_allowed(const ar_dec_ctx *c, int j)
{
    int i;
    for (i = 0; i < c->n; i++)
        if (c->mask[i] && j-- == 0) return i;
    return -1;
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
    if (!out || !cm) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search random: NULL argument");
    if (budget < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search random: budget %ld < 1", budget);
    if (!(time_budget_s >= 0.0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search random: time budget %g s is negative", time_budget_s);
    st = ar_builder_init(&b, cm, NULL);
    if (st) return st;
    memset(&u, 0, sizeof u);
    ar_rng_seed(&u.rng, seed);
    u.keep.best = new_plan(cm);
    cur = (arachne_plan *)ar_calloc(1, sizeof *cur);
    if (!u.keep.best || !cur) { st = ARACHNE_E_NO_MEMORY; goto done; }
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
    if (!u.keep.have) { st = ar_error(ARACHNE_E_INFEASIBLE, "search random: no plan found"); goto done; }
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
    free_plan(cur);
    ar_builder_free(&b);
    return st;
}

/* ---------------------------------------------------------------------- */
/* exhaustive                                                              */

/* Depth-first enumeration of the decision tree: each rollout replays the
 * path prefix and then takes the first allowed choice at every new
 * decision; afterwards the last decision that has a later allowed choice
 * advances (an odometer over the masks). */
typedef struct exh_user {
    int *path;               /* choices of the current rollout */
    unsigned char (*masks)[AR_MAX_CHOICES];
    int *ns;
    int npath, cap, pos;     /* pos: decisions taken in this rollout */
    best_keeper keep;
} exh_user;

static int exh_decide(void *user, const ar_dec_ctx *c, int *choice)
{
    exh_user *u = (exh_user *)user;
    if (c->kind == AR_DEC_DEPTH && c->step > 0) {
        int st = keep_if_better(&u->keep, c->plan);
        if (st) return st;
    }
    if (u->pos >= u->cap) {
        int ncap = u->cap ? 2 * u->cap : 256;
        int *np = (int *)ar_realloc(u->path, (size_t)ncap * sizeof(int));
        int *nn;
        unsigned char (*nm)[AR_MAX_CHOICES];
        if (!np) return ARACHNE_E_NO_MEMORY;
        u->path = np;
        nn = (int *)ar_realloc(u->ns, (size_t)ncap * sizeof(int));
        if (!nn) return ARACHNE_E_NO_MEMORY;
        u->ns = nn;
        nm = (unsigned char (*)[AR_MAX_CHOICES])ar_realloc(u->masks, (size_t)ncap * AR_MAX_CHOICES);
        if (!nm) return ARACHNE_E_NO_MEMORY;
        u->masks = nm;
        u->cap = ncap;
    }
    if (u->pos < u->npath) {
        *choice = u->path[u->pos];
    } else {
        *choice = pick_allowed(c, 0);
        u->path[u->pos] = *choice;
        u->npath = u->pos + 1;
    }
    memcpy(u->masks[u->pos], c->mask, (size_t)c->n);
    u->ns[u->pos] = c->n;
    u->pos++;
    return ARACHNE_OK;
}

/* Advances the odometer; returns 0 when the tree is exhausted. */
static int exh_next(exh_user *u)
{
    int i, c;
    u->npath = u->pos;
    for (i = u->npath - 1; i >= 0; i--) {
        for (c = u->path[i] + 1; c < u->ns[i]; c++)
            if (u->masks[i][c]) {
                u->path[i] = c;
                u->npath = i + 1;
                return 1;
            }
    }
    return 0;
}

int arachne_search_exhaustive(arachne_plan **out, const arachne_cost_model *cm,
                              int max_templates, double time_budget_s)
{
    ar_builder b;
    ar_construct_opts o;
    exh_user u;
    arachne_plan *cur = NULL;
    double t0 = ar_now();
    long rollouts = 0;
    int st, complete = 0;

    if (out) *out = NULL;
    if (!out || !cm) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search exhaustive: NULL argument");
    if (max_templates < 1 || max_templates > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search exhaustive: max templates %d outside [1, %d]",
                        max_templates, AR_MAX_TEMPLATES);
    if (!(time_budget_s >= 0.0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "search exhaustive: time budget %g s is negative", time_budget_s);
    ar_construct_opts_default(&o);
    o.max_steps = max_templates;
    st = ar_builder_init(&b, cm, &o);
    if (st) return st;
    memset(&u, 0, sizeof u);
    u.keep.best = new_plan(cm);
    cur = (arachne_plan *)ar_calloc(1, sizeof *cur);
    if (!u.keep.best || !cur) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (;;) {
        u.pos = 0;
        st = ar_builder_run(&b, exh_decide, &u, cur, NULL);
        if (st) goto done;
        rollouts++;
        st = keep_if_better(&u.keep, cur);
        if (st) goto done;
        if (!exh_next(&u)) { complete = 1; break; }
        if (time_budget_s > 0 && ar_now() - t0 >= time_budget_s) break;
    }
    if (!u.keep.have) { st = ar_error(ARACHNE_E_INFEASIBLE, "search exhaustive: no plan found"); goto done; }
    strcpy(u.keep.best->method, complete ? "exhaustive" : "exhaustive-partial");
    u.keep.best->evaluations = b.fills;
    u.keep.best->samples = (int)(rollouts > 0x7fffffffL ? 0x7fffffffL : rollouts);
    u.keep.best->planning_s = ar_now() - t0;
    st = ar_plan_finish(u.keep.best);
    if (st) goto done;
    *out = u.keep.best;
    u.keep.best = NULL;
    st = ARACHNE_OK;
done:
    free(u.path);
    free(u.ns);
    free(u.masks);
    free_plan(u.keep.best);
    free_plan(cur);
    ar_builder_free(&b);
    return st;
}
