/* plan_default.c -- arachne_plan_build_refined: the default planner.
 *
 * Best-of-K, then the refinement from up to three starts: the best sample,
 * the greedy plan, and the best sample on another set of GPU types (below).
 * The refinement is a local search (refine.c): it stays near
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
 * share was chosen).
 *
 * The third start: where the best sample and the greedy plan both use one
 * set of GPU types, the climb rarely adds the others (llama3-8b on
 * a100-40:140x1,gb300:2x72 at seed 1: both GB300 alone, refined to 0.1527
 * iter/s, while the best rollout with A100-40 in it refines to 0.1581).  It gets
 * half the budget, as the greedy plan does; on six evaluation sets (218
 * compositions) it made none slower and 17 faster, by up to 10 %
 * (docs/search.md, "Three starts"). */
#include <stdio.h>
#include <string.h>

#include "arachne.h"
#include "cost.h"
#include "plan.h"
#include "policy.h"
#include "util.h"

/* The budget of the greedy start and of the third: the best sample's / this. */
#define AR_SECOND_START_SHARE 2

/* The higher-ranked of *keep and *other (ties: *keep) is left in *keep, the
 * other destroyed and *other set to NULL. */
static void keep_better(arachne_plan **keep, arachne_plan **other)
{
    if (*other && (!*keep || ar_plan_rank(*other) > ar_plan_rank(*keep))) {
        arachne_plan *t = *keep;
        *keep = *other;
        *other = t;
    }
    arachne_plan_destroy(*other);
    *other = NULL;
}

/* Refines a further start (none: *out NULL) with evaluations /
 * AR_SECOND_START_SHARE fills into *out.  Its time: `share` of what the
 * cap leaves of the call that began at t0 (at least a first candidate). */
static int refine_other_start(arachne_plan **out, const arachne_plan *start, const arachne_cost_model *cm,
                              long evaluations, double t0, double time_cap_s, double share)
{
    double left = 0.0;
    *out = NULL;
    if (!start) return ARACHNE_OK;
    if (time_cap_s > 0) {
        left = (time_cap_s - (ar_now() - t0)) * share;
        if (left < 1e-9) left = 1e-9; /* spent: this start gets its first candidate only */
    }
    return arachne_plan_refine(out, start, cm, AR_MAX(1, evaluations / AR_SECOND_START_SHARE), left);
}

int ar_plan_refine_starts(arachne_plan **out, const arachne_plan *best, const arachne_plan *greedy,
                          const arachne_plan *alt, const arachne_cost_model *cm, long evaluations, double time_cap_s)
{
    double t0 = ar_now(), first_cap = 0.0;
    arachne_plan *rb = NULL, *rg = NULL, *ra = NULL;
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
    /* the greedy plan and the alternative are best-of-K's rollouts: their
     * fills are in best's count, and their refinements' counts start from
     * their own (0) */
    spent = rb->evaluations;
    {
        /* each further start only where its structure is new */
        const arachne_plan *g = greedy && !ar_plan_same_structure(greedy, best) ? greedy : NULL;
        const arachne_plan *a =
            alt && !ar_plan_same_structure(alt, best) && !(greedy && ar_plan_same_structure(alt, greedy)) ? alt : NULL;
        /* the greedy start: what the cap leaves, or half of it when the
         * third follows */
        if ((st = refine_other_start(&rg, g, cm, evaluations, t0, time_cap_s, a ? 0.5 : 1.0))) goto done;
        if (rg) spent += rg->evaluations - g->evaluations;
        if ((st = refine_other_start(&ra, a, cm, evaluations, t0, time_cap_s, 1.0))) goto done;
        if (ra) spent += ra->evaluations - a->evaluations;
    }
    /* named for what ran: the best-of-K planner refined (capped if any
     * refinement was) */
    {
        int capped = strstr(rb->method, "capped") || (rg && strstr(rg->method, "capped")) ||
                     (ra && strstr(ra->method, "capped"));
        char m[sizeof rb->method];
        keep_better(&rb, &rg); /* the fastest, ties to the earlier start */
        keep_better(&rb, &ra);
        snprintf(m, sizeof m, "%.*s%s", (int)(sizeof m - 15), best->method, capped ? "+refine-capped" : "+refine");
        memcpy(rb->method, m, sizeof m);
    }
    rb->samples = best->samples;
    rb->evaluations = spent;
    rb->planning_s = best->planning_s + (ar_now() - t0); /* the greedy decode is inside best's build */
    if ((st = ar_plan_finish(rb))) goto done;
    *out = rb;
    rb = NULL;
done:
    arachne_plan_destroy(rb);
    arachne_plan_destroy(rg);
    arachne_plan_destroy(ra);
    return st;
}

/* Best-of-K, then the refinement from its starts, with cm's setup. */
static int build_refined_one(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                             int samples, uint64_t seed, long evaluations, double time_cap_s)
{
    arachne_plan *best = NULL, *greedy = NULL, *alt = NULL;
    int st;
    /* rollout 0 of best-of-K is the greedy decode: kept, not decoded again;
     * likewise the best rollout on other GPU types */
    if ((st = ar_policy_build(&best, evaluations > 0 ? &greedy : NULL, evaluations > 0 ? &alt : NULL, policy, cm,
                              samples, seed)))
        return st;
    if (evaluations == 0) {
        *out = best;
        return ARACHNE_OK;
    }
    st = ar_plan_refine_starts(out, best, greedy, alt, cm, evaluations, time_cap_s);
    arachne_plan_destroy(best);
    arachne_plan_destroy(greedy);
    arachne_plan_destroy(alt);
    return st;
}

/* ARACHNE_OPT_RECOMPUTE_SEARCH: the default planner with cm's mode, then,
 * on a copy of cm with full recomputation, a probe and the planner again,
 * keeping the plan that ranks higher (ties: cm's mode).  The probe refills
 * the first plan's structure with full recomputation (arachne_plan_refine
 * with one evaluation); with search 1 the second run follows only when
 * the probe ranks higher or the first run found nothing: on the 146
 * validation and held-out compositions the probe never won and the first
 * plan stands, on 7 of the 8 memory-tight ones where full recomputation
 * plans faster it did (docs/search.md).  Only "nothing fits" lets the
 * other mode answer alone; any other error is returned as it comes.
 * This is the part after the first run, shared with arachne eval's
 * default-plan column, which builds the first run from its own greedy and
 * best-of-K plans (plan.h). */
int ar_plan_recompute_search_after(arachne_plan **out, arachne_plan *first, int first_status, double first_s,
                                   const arachne_policy *policy, const arachne_cost_model *cm, int samples,
                                   uint64_t seed, long evaluations, double time_cap_s)
{
    double t0 = ar_now(), cap;
    arachne_plan *a = first, *probe = NULL, *b = NULL;
    arachne_cost_model *full = NULL;
    char first_error[AR_ERRMSG_CAP];
    long spent = 0;
    int st;
    *out = NULL;
    first_error[0] = '\0';
    if (first_status && first_status != ARACHNE_E_INFEASIBLE) goto fail_first;
    if (first_status) snprintf(first_error, sizeof first_error, "%s", arachne_last_error());
    if (!cm->setup.recompute_search || cm->setup.recompute == AR_RECOMPUTE_FULL) goto fail_first;
    if (a) spent = a->evaluations;
    if ((st = ar_cost_model_with_recompute(&full, cm, AR_RECOMPUTE_FULL))) goto fail;
    if (a) {
        st = arachne_plan_refine(&probe, a, full, 1, 0.0);
        if (st == ARACHNE_OK) {
            spent += probe->evaluations - a->evaluations;
            memcpy(probe->method, a->method, sizeof probe->method); /* the planner that made it */
        } else if (st != ARACHNE_E_INFEASIBLE) {
            goto fail;
        }
    }
    if (cm->setup.recompute_search == 2 || !a || (probe && ar_plan_rank(probe) > ar_plan_rank(a))) {
        cap = 0.0;
        if (time_cap_s > 0) {
            cap = time_cap_s - first_s - (ar_now() - t0);
            if (cap < 1e-9) cap = 1e-9; /* spent: the refinement keeps its first candidate */
        }
        st = build_refined_one(&b, policy, full, samples, seed, evaluations, cap);
        if (st && st != ARACHNE_E_INFEASIBLE) goto fail;
        if (b) spent += b->evaluations;
    }
    arachne_cost_model_destroy(full);
    full = NULL;
    keep_better(&a, &probe);
    keep_better(&a, &b);
    if (!a) return ar_error(first_status, "%s (and with full recomputation)", first_error);
    arachne_clear_error();
    /* the plan counts the work of every run */
    a->evaluations = spent;
    a->planning_s = first_s + (ar_now() - t0);
    if ((st = ar_plan_finish(a))) goto fail;
    *out = a;
    return ARACHNE_OK;
fail_first: /* no search: the first run's answer as it came */
    if (first_status) {
        arachne_plan_destroy(first);
        return first_status; /* its message is still the last error */
    }
    *out = first;
    return ARACHNE_OK;
fail:
    arachne_cost_model_destroy(full);
    arachne_plan_destroy(a);
    arachne_plan_destroy(probe);
    arachne_plan_destroy(b);
    return st;
}

/* The default planner with cm's setup: the refinement from its starts,
 * and the recompute search where cm asks for it. */
static int build_refined_modes(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                               int samples, uint64_t seed, long evaluations, double time_cap_s)
{
    *out = NULL;
    if (cm->setup.recompute_search && cm->setup.recompute != AR_RECOMPUTE_FULL) {
        /* a time cap: with search 2 each run gets half; with 1 the first
         * run the whole (where the probe loses, nothing changes) and a
         * second run what is left */
        double t0 = ar_now();
        arachne_plan *first = NULL;
        int st = build_refined_one(&first, policy, cm, samples, seed, evaluations,
                                   cm->setup.recompute_search == 2 ? time_cap_s / 2 : time_cap_s);
        return ar_plan_recompute_search_after(out, first, st, ar_now() - t0, policy, cm, samples, seed, evaluations,
                                              time_cap_s);
    }
    return build_refined_one(out, policy, cm, samples, seed, evaluations, time_cap_s);
}

/* ARACHNE_OPT_EXACT_DIVISION 2: the plan for the asked batch.  The planner
 * runs first on a copy of cm with the option 0, where a plan that runs a
 * surplus is charged for it and the climbs may step through such plans:
 * planning exact-first from the start loses those steps and planned 5 of
 * 206 compositions slower without interleaving and 10 with it, down to
 * 0.910 (docs/search.md, "Which plan wins").  When that plan runs the batch exactly, its price is the same
 * under cm (the fastest division was exact, or was the fastest exact one)
 * and it is returned.  Otherwise, with cm itself (exact plans first): the
 * planner again, and the first plan refined in its own recompute mode
 * (its structure at the exact division, where it has one, and the climb
 * from there); the higher-ranked of the two is returned, so a plan with a
 * surplus only when neither found an exact one.  This is what `arachne
 * plan` does (examples/cli/cmd_plan.c, which keeps its own copy to report
 * the first plan).  The time cap is the whole call's: the first run gets
 * it, the second run what is left, the refinement what is left then. */
static int build_for_asked_batch(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                                 int samples, uint64_t seed, long evaluations, double time_cap_s)
{
    double t0 = ar_now(), left = 0.0;
    arachne_cost_model *other = NULL;
    arachne_plan *first = NULL, *again = NULL, *refined = NULL;
    long spent;
    int st;
    if ((st = ar_cost_model_with_exact_division(&other, cm, 0))) return st;
    st = build_refined_modes(&first, policy, other, samples, seed, evaluations, time_cap_s);
    arachne_cost_model_destroy(other);
    other = NULL;
    if (st) return st;
    first->setup.exact_division = cm->setup.exact_division; /* it ranks as cm ranks */
    if (ar_plan_samples_run(first) == first->setup.global_batch) {
        *out = first;
        return ARACHNE_OK;
    }
    spent = first->evaluations;
    if (time_cap_s > 0) {
        left = time_cap_s - (ar_now() - t0);
        if (left < 1e-9) left = 1e-9; /* spent: each refinement keeps its first candidate */
    }
    st = build_refined_modes(&again, policy, cm, samples, seed, evaluations, left);
    if (st && st != ARACHNE_E_INFEASIBLE) goto done;
    if (again) spent += again->evaluations;
    if (time_cap_s > 0) {
        left = time_cap_s - (ar_now() - t0);
        if (left < 1e-9) left = 1e-9;
    }
    if ((st = ar_cost_model_with_recompute(&other, cm, first->setup.recompute))) goto done;
    st = arachne_plan_refine(&refined, first, other, AR_MAX(1, evaluations), left);
    arachne_cost_model_destroy(other);
    if (st && st != ARACHNE_E_INFEASIBLE) goto done;
    if (refined) {
        spent += refined->evaluations - first->evaluations;
        memcpy(refined->method, first->method, sizeof refined->method); /* the planner that made it */
    }
    keep_better(&again, &refined);
    keep_better(&again, &first); /* nothing exact found: the best plan with a surplus */
    arachne_clear_error();
    again->evaluations = spent;
    again->planning_s = ar_now() - t0;
    if ((st = ar_plan_finish(again))) goto done;
    *out = again;
    again = NULL;
done:
    arachne_plan_destroy(first);
    arachne_plan_destroy(again);
    arachne_plan_destroy(refined);
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
    if (cm->setup.exact_division == 2)
        return build_for_asked_batch(out, policy, cm, samples, seed, evaluations, time_cap_s);
    return build_refined_modes(out, policy, cm, samples, seed, evaluations, time_cap_s);
}
