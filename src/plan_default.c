/* plan_default.c -- arachne_plan_build_refined: the default planner.
 *
 * Best-of-K, then the refinement from two starts: the best sample and the
 * greedy plan.  The refinement is a local search (refine.c): it stays near
 * the structure it starts from, and the best sample and the greedy plan
 * are often different pipelines (on small-mixtral-8x7b-22 of the held-out
 * set, a one-replica 8-stage template with context parallelism against a
 * 6-stage one).  Refining both and keeping the faster costs half the
 * budget more: the greedy plan is best-of-K's rollout 0, kept by the build
 * (ar_policy_build).  On the 100 small validation
 * compositions (docs/search.md, "Two starts"): one start 1.021 of
 * exhaustive search; a second start with the whole budget 1.026, with a
 * half 1.024, with a quarter 1.023; 250 + 250 fills 1.015, as a start
 * needs its budget to climb.  Half keeps the time on 16,384 GPUs, where
 * greedy's structure fills slowly, below the whole budget's; a quarter
 * left a held-out composition at 0.939 (docs/search.md says how the
 * share was chosen). */
#include <stdio.h>
#include <string.h>

#include "arachne.h"
#include "cost.h"
#include "plan.h"
#include "policy.h"
#include "util.h"

/* The greedy start's budget: the best sample's / this. */
#define AR_SECOND_START_SHARE 2

/* 1 when a and b have the same templates, depths, stage GPU types and
 * stage group sizes (what the refinement starts from; refine.c). */
static int same_structure(const arachne_plan *a, const arachne_plan *b)
{
    int j, s;
    if (a->ntemplates != b->ntemplates) return 0;
    for (j = 0; j < a->ntemplates; j++) {
        const ar_template *x = &a->t[j], *y = &b->t[j];
        if (x->depth != y->depth) return 0;
        for (s = 0; s < x->depth; s++)
            if (x->stages[s].type != y->stages[s].type || ar_stage_gpus(x, s) != ar_stage_gpus(y, s)) return 0;
    }
    return 1;
}

int ar_plan_refine_two_starts(arachne_plan **out, const arachne_plan *best, const arachne_plan *greedy,
                              const arachne_cost_model *cm, long evaluations, double time_cap_s)
{
    double t0 = ar_now(), first_cap = 0.0, left = 0.0;
    arachne_plan *rb = NULL, *rg = NULL, *win;
    long spent;
    int st;
    *out = NULL;
    if (evaluations == 0) { /* no refinement: the best-of-K plan itself, as arachne_plan_build_refined gives it */
        arachne_plan *copy = ar_calloc(1, sizeof *copy);
        if (!copy) return ARACHNE_E_NO_MEMORY;
        if ((st = ar_plan_copy(copy, best)) || (st = ar_plan_finish(copy))) {
            arachne_plan_destroy(copy);
            return st;
        }
        *out = copy;
        return ARACHNE_OK;
    }
    if (time_cap_s > 0) first_cap = time_cap_s / 2;
    if ((st = arachne_plan_refine(&rb, best, cm, evaluations, first_cap))) return st;
    /* the greedy plan is best-of-K's rollout 0: its fills are in best's
     * count, and its refinement's count starts from its own */
    spent = rb->evaluations;
    if (greedy && !same_structure(greedy, best)) {
        if (time_cap_s > 0) {
            left = time_cap_s - (ar_now() - t0);
            if (left < 1e-9) left = 1e-9; /* spent: the second start gets its first candidate only */
        }
        if ((st = arachne_plan_refine(&rg, greedy, cm, AR_MAX(1, evaluations / AR_SECOND_START_SHARE), left)))
            goto done;
        spent += rg->evaluations - greedy->evaluations;
    }
    win = rg && ar_plan_rank(rg) > ar_plan_rank(rb) ? rg : rb;
    /* named for what ran: the best-of-K planner refined (capped if either
     * refinement was) */
    {
        int capped = strstr(rb->method, "capped") || (rg && strstr(rg->method, "capped"));
        char m[sizeof win->method];
        snprintf(m, sizeof m, "%.*s%s", (int)(sizeof m - 15), best->method, capped ? "+refine-capped" : "+refine");
        memcpy(win->method, m, sizeof m);
    }
    win->samples = best->samples;
    win->evaluations = spent;
    win->planning_s = best->planning_s + (ar_now() - t0); /* the greedy decode is inside best's build */
    if ((st = ar_plan_finish(win))) goto done;
    *out = win;
    if (win == rg) rg = NULL;
    else rb = NULL;
done:
    arachne_plan_destroy(rb);
    arachne_plan_destroy(rg);
    return st;
}

/* Best-of-K, then the refinement from two starts, with cm's setup. */
static int build_refined_one(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                             int samples, uint64_t seed, long evaluations, double time_cap_s)
{
    arachne_plan *best = NULL, *greedy = NULL;
    int st;
    /* rollout 0 of best-of-K is the greedy decode: kept, not decoded again */
    if ((st = ar_policy_build(&best, evaluations > 0 ? &greedy : NULL, policy, cm, samples, seed))) return st;
    if (evaluations == 0) {
        *out = best;
        return ARACHNE_OK;
    }
    st = ar_plan_refine_two_starts(out, best, greedy, cm, evaluations, time_cap_s);
    arachne_plan_destroy(best);
    arachne_plan_destroy(greedy);
    return st;
}

/* ARACHNE_OPT_RECOMPUTE_SEARCH: the default planner with cm's mode, then
 * on a copy of cm with full recomputation, keeping the plan that ranks
 * higher (ties: cm's mode).  Only "nothing fits" lets the other mode
 * answer alone; any other error is returned as it comes. */
static int build_refined_both_modes(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                                    int samples, uint64_t seed, long evaluations, double time_cap_s)
{
    double t0 = ar_now(), cap = time_cap_s > 0 ? time_cap_s / 2 : 0.0;
    arachne_plan *a = NULL, *b = NULL, *win;
    arachne_cost_model *full = NULL;
    char first_error[AR_ERRMSG_CAP];
    int sa, sb, st;
    first_error[0] = '\0';
    sa = build_refined_one(&a, policy, cm, samples, seed, evaluations, cap);
    if (sa && sa != ARACHNE_E_INFEASIBLE) return sa;
    if (sa) snprintf(first_error, sizeof first_error, "%s", arachne_last_error());
    if ((st = ar_cost_model_with_recompute(&full, cm, AR_RECOMPUTE_FULL))) {
        arachne_plan_destroy(a);
        return st;
    }
    if (time_cap_s > 0) {
        cap = time_cap_s - (ar_now() - t0);
        if (cap < 1e-9) cap = 1e-9; /* spent: the refinement keeps its first candidate */
    }
    sb = build_refined_one(&b, policy, full, samples, seed, evaluations, cap);
    arachne_cost_model_destroy(full);
    if (sb && sb != ARACHNE_E_INFEASIBLE) {
        arachne_plan_destroy(a);
        return sb;
    }
    if (sa && sb) return ar_error(sa, "%s (and with full recomputation)", first_error);
    arachne_clear_error();
    win = !a ? b : !b ? a : ar_plan_rank(b) > ar_plan_rank(a) ? b : a;
    /* the plan counts the work of both runs */
    win->evaluations = (a ? a->evaluations : 0) + (b ? b->evaluations : 0);
    win->planning_s = ar_now() - t0;
    if ((st = ar_plan_finish(win))) win = NULL;
    *out = win;
    if (a != win) arachne_plan_destroy(a);
    if (b != win) arachne_plan_destroy(b);
    return st;
}

int arachne_plan_build_refined(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                               int samples, uint64_t seed, long evaluations, double time_cap_s)
{
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build_refined: out is NULL");
    *out = NULL;
    if (!policy || !cm)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build_refined: %s is NULL",
                        policy ? "cost model" : "policy");
    if (evaluations < 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build_refined: evaluations %ld is negative",
                        evaluations);
    if (!(time_cap_s >= 0.0 && time_cap_s <= 1e7))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_build_refined: time cap %g s is outside [0, 1e7]",
                        time_cap_s);
    if (cm->setup.recompute_search && cm->setup.recompute != AR_RECOMPUTE_FULL)
        return build_refined_both_modes(out, policy, cm, samples, seed, evaluations, time_cap_s);
    return build_refined_one(out, policy, cm, samples, seed, evaluations, time_cap_s);
}
