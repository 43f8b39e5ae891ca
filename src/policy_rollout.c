/* policy_rollout.c -- arachne_plan_rollout: rollout decoding of a policy.
 *
 * Greedy decoding takes, at every decision, the choice the policy rates
 * most probable.  Rollout decoding (the rollout algorithm of approximate
 * dynamic programming, with greedy decoding as its base policy) takes the
 * choice whose greedy completion prices best: at each decision with more
 * than one allowed choice, every other allowed choice is completed
 * greedily into a whole plan and priced, and the decoder moves on with the
 * best one.  The policy's own choice completes to the plan the decoder
 * already holds, so it costs nothing, and ties keep it: the plan can only
 * get better from decision to decision, and the result is never slower
 * than greedy decoding (docs/search.md, "Rollout decoding").
 *
 * A decision's completions are independent; built with OpenMP they run on
 * all threads, each worker with its own builder and decision source, and
 * the best is chosen by (rank, choice index), so the plan does not depend
 * on the thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "policy.h"


typedef struct ro_worker {
    ar_builder b;
    ar_policy_src src;
    ar_trace tr;
    arachne_plan plan;
    int ready;
} ro_worker;

static int ro_worker_init(ro_worker *w, const arachne_policy *policy, const arachne_cost_model *cm,
                          const ar_construct_opts *o)
{
    ar_construct_opts opts;
    int st;
    memset(w, 0, sizeof *w);
    ar_trace_init(&w->tr);
    ar_plan_empty(&w->plan);
    if (o) opts = *o;
    else ar_policy_construct_opts(&opts);
    if ((st = ar_builder_init(&w->b, cm, &opts))) return st;
    w->ready = 1;
    return ar_policy_src_init(&w->src, policy->nn, cm, 0, 1, 0);
}

static void ro_worker_free(ro_worker *w)
{
    ar_policy_src_free(&w->src);
    ar_trace_free(&w->tr);
    ar_plan_clear(&w->plan);
    if (w->ready) ar_builder_free(&w->b);
}

static long ro_fills(const ro_worker *w) { return w->b.fills + w->b.check_fills; }

/* Builds choices[0..n) and then the policy's greedy decisions into w->plan
 * (capture 0), or stops at decision n (capture 1: *s holds its mask).
 * Returns the builder's status (AR_POLICY_SCRIPT_STOP for a capture that stopped). */
static int ro_run(ro_worker *w, const int *choices, int n, int capture, ar_policy_script *s)
{
    memset(s, 0, sizeof *s);
    s->src = &w->src;
    s->choices = choices;
    s->n = n;
    s->capture = capture;
    ar_policy_src_reset(&w->src, 0, 1, NULL);
    return ar_builder_run(&w->b, ar_policy_script_decide, s, &w->plan, &w->tr);
}

/* The greedy completion of choices[0..n) (a plan that ranks -1 when it
 * does not fill).  Errors other than an infeasible construction abort. */
static int ro_complete(ro_worker *w, const int *choices, int n, double *rank)
{
    ar_policy_script s;
    int st = ro_run(w, choices, n, 0, &s);
    *rank = -1.0;
    if (st == ARACHNE_E_INFEASIBLE) return ARACHNE_OK;
    if (st) return st;
    *rank = ar_plan_rank(&w->plan);
    return ARACHNE_OK;
}

/* The greedy decoder's finishing passes (arachne_plan_build's): the
 * completion of choices[0..n) on w, cut to its best template prefix and
 * given its exact split when that ranks higher, copied into *out. */
static int ro_finish(ro_worker *w, const arachne_cost_model *cm, const int *choices, int n, arachne_plan *out,
                     double *raw_rank)
{
    arachne_plan spare;
    const arachne_plan *kept;
    ar_policy_script s;
    int st = ro_run(w, choices, n, 0, &s);
    if (st) return st;
    if (raw_rank) *raw_rank = ar_plan_rank(&w->plan); /* before the passes: what completions compare with */
    if ((st = ar_policy_keep_best_prefix(cm, &w->plan, &w->tr))) return st;
    ar_plan_empty(&spare);
    kept = ar_plan_keep_form(cm, &w->plan, -HUGE_VAL, &spare);
    st = ar_plan_copy(out, kept);
    ar_plan_clear(&spare);
    return st;
}

/* The search: from the incumbent choices[0..n) (ranked cur), decision by
 * decision, every other allowed choice completed greedily on the workers
 * and the best completion taken.  Sets changed when a choice differs from
 * the policy's, capped when the time cap stopped it, cut when the fill
 * budget stopped it before a decision with a choice to make, and complete
 * when no decision was left (choices[0..n) is then the whole construction). */
typedef struct ro_search {
    ro_worker *w;
    int nw;
    long evaluations;
    double time_cap_s, t0;
    int *choices, n;
    double cur;
    double *values;           /* NULL, or the weighed choices' ranks (rows of AR_MAX_CHOICES) */
    int changed, capped, cut, complete;
} ro_search;

/* Whether a fill budget of `evaluations` (0: none), `used` of it spent,
 * stops the search (or the relabelling) before a decision with `allowed`
 * choices.  It stops only at a decision it would weigh: one allowed choice
 * is the same choice either way, so a stop says exactly that a weighing
 * was left out (rollout_choices' *cut, relabel's *nlabels < n). */
static int ro_cap_spent(long evaluations, long used, int allowed)
{
    return allowed > 1 && evaluations > 0 && used >= evaluations;
}

/* Allowed choices of the captured decision s: their count, and into
 * cand[0..*nc) the ones other than the policy's own, in index order. */
static int ro_others(const ar_policy_script *s, int *cand, int *nc)
{
    int i, allowed = 0;
    *nc = 0;
    for (i = 0; i < s->nopt; i++) {
        if (!s->mask[i]) continue;
        allowed++;
        if (i != s->policy_choice) cand[(*nc)++] = i;
    }
    return allowed;
}

/* One decision of the search: decision n (captured in s, after
 * R->choices[0..n)) takes the choice among cand[0..nc) whose greedy
 * completion ranks above R->cur, the best one, ties to the lowest index;
 * else the policy's own.  Completions run on R's workers.  Sets *pick and
 * raises R->cur; R->choices[n] is left scratch. */
static int ro_decide(ro_search *R, const ar_policy_script *s, int n, const int *cand, int nc, int *pick)
{
    ro_worker *w = R->w;
    int *choices = R->choices, cst[AR_MAX_CHOICES], nt, i;
    double rank[AR_MAX_CHOICES];
    *pick = s->policy_choice;
    nt = R->nw > 1 ? ar_policy_threads(nc) : 1;
    for (i = 0; i < nc; i++) cst[i] = ARACHNE_OK;
    if (nt <= 1) {
        for (i = 0; i < nc; i++) {
            choices[n] = cand[i];
            cst[i] = ro_complete(&w[0], choices, n + 1, &rank[i]);
        }
    } else {
#ifdef _OPENMP
        /* each completion copies the prefix: choices is shared */
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (i = 0; i < nc; i++) {
            int mine[AR_POLICY_MAX_DECISIONS];
            memcpy(mine, choices, (size_t)n * sizeof *mine);
            mine[n] = cand[i];
            cst[i] = ro_complete(&w[omp_get_thread_num()], mine, n + 1, &rank[i]);
        }
#endif
    }
    /* the first error by choice index (its message stayed with the
     * thread that ran it); else the best completion, ties to the
     * policy's choice, then to the lowest index */
    for (i = 0; i < nc; i++)
        if (cst[i])
            return ar_error(cst[i], "arachne_plan_rollout: completing choice %d of decision %d failed (%s)", cand[i],
                            n, arachne_status_string(cst[i]));
    if (R->values) {
        double *row = R->values + (size_t)n * AR_MAX_CHOICES;
        row[s->policy_choice] = R->cur; /* the incumbent is the policy choice's completion */
        for (i = 0; i < nc; i++) row[cand[i]] = rank[i];
    }
    for (i = 0; i < nc; i++)
        if (rank[i] > R->cur) { R->cur = rank[i]; *pick = cand[i]; }
    return ARACHNE_OK;
}

static int ro_search_run(ro_search *R)
{
    ro_worker *w = R->w;
    int *choices = R->choices, cand[AR_MAX_CHOICES];
    int st, i;
    for (;;) {
        ar_policy_script s;
        int nc, allowed, pick, n = R->n;
        long used;
        st = ro_run(&w[0], choices, n, 1, &s);
        if (st != AR_POLICY_SCRIPT_STOP) { /* no decision left: the incumbent is complete */
            if (st != ARACHNE_OK && st != ARACHNE_E_INFEASIBLE) return st;
            R->complete = 1;
            return ARACHNE_OK;
        }
        if (n == AR_POLICY_MAX_DECISIONS) return ARACHNE_OK;
        allowed = ro_others(&s, cand, &nc);
        pick = s.policy_choice;
        /* the budgets are checked before a decision's completions; once one
         * is spent, the policy decides the rest: the incumbent's own path */
        used = 0;
        for (i = 0; i < R->nw; i++) used += ro_fills(&w[i]);
        if (ro_cap_spent(R->evaluations, used, allowed)) {
            R->cut = 1;
            return ARACHNE_OK;
        }
        if (R->time_cap_s > 0 && ar_now() - R->t0 >= R->time_cap_s) {
            R->capped = 1;
            return ARACHNE_OK;
        }
        if (allowed > 1) {
            if ((st = ro_decide(R, &s, n, cand, nc, &pick))) return st;
            if (pick != s.policy_choice) R->changed = 1;
        }
        choices[R->n++] = pick;
    }
}

static void no_values(double *values)
{
    size_t i;
    if (values)
        for (i = 0; i < (size_t)AR_POLICY_MAX_DECISIONS * AR_MAX_CHOICES; i++) values[i] = AR_ROLLOUT_NO_VALUE;
}

int ar_policy_rollout_choices(const arachne_policy *policy, const arachne_cost_model *cm,
                              const ar_construct_opts *opts, long evaluations, int *choices, int cap, int *n,
                              long *fills, int *cut, double *values)
{
    ro_worker w;
    ro_search R;
    ar_policy_script s;
    int st;
    *n = 0;
    *fills = 0;
    if (cut) *cut = 0;
    if (cap < AR_POLICY_MAX_DECISIONS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_policy_rollout_choices: room for %d decisions, %d needed", cap,
                        AR_POLICY_MAX_DECISIONS);
    memset(&R, 0, sizeof R);
    no_values(values);
    st = ro_worker_init(&w, policy, cm, opts);
    R.w = &w;
    R.nw = 1;
    R.values = values;
    R.evaluations = evaluations;
    R.t0 = ar_now();
    R.choices = choices;
    if (!st) st = ro_complete(&w, choices, 0, &R.cur);
    if (!st) st = ro_search_run(&R);
    *n = R.n;
    /* a budget stopped the search: the policy's greedy rest, logged after
     * the prefix (the log rewrites each prefix choice with itself) */
    if (!st && !R.complete) {
        memset(&s, 0, sizeof s);
        s.src = &w.src;
        s.choices = choices;
        s.n = R.n;
        s.taken = choices;
        s.cap_taken = cap;
        ar_policy_src_reset(&w.src, 0, 1, NULL);
        st = ar_builder_run(&w.b, ar_policy_script_decide, &s, &w.plan, &w.tr);
        *n = s.ntaken;
    }
    *fills = ro_fills(&w);
    if (cut && !st) *cut = R.cut;
    ro_worker_free(&w);
    return st;
}

int ar_policy_rollout_relabel(const arachne_policy *policy, const arachne_cost_model *cm,
                              const ar_construct_opts *opts, long evaluations, const int *choices, int n,
                              int *labels, int *nlabels, long *fills, double *values)
{
    ro_worker w;
    ro_search R;
    int pre[AR_POLICY_MAX_DECISIONS], cand[AR_MAX_CHOICES];
    int st, i;
    *nlabels = 0;
    *fills = 0;
    if (n < 0 || n > AR_POLICY_MAX_DECISIONS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_policy_rollout_relabel: %d decisions, at most %d", n,
                        AR_POLICY_MAX_DECISIONS);
    if (n) memcpy(pre, choices, (size_t)n * sizeof *pre);
    memset(&R, 0, sizeof R);
    no_values(values);
    R.w = &w;
    R.nw = 1;
    R.values = values;
    R.choices = pre;
    st = ro_worker_init(&w, policy, cm, opts);
    for (i = 0; i < n && !st; i++) {
        ar_policy_script s;
        int nc, pick, allowed;
        long before = ro_fills(&w); /* the cap is read before the decision is built */
        st = ro_run(&w, pre, i, 1, &s);
        if (st != AR_POLICY_SCRIPT_STOP) {
            if (st == ARACHNE_OK || st == ARACHNE_E_INFEASIBLE)
                st = ar_error(ARACHNE_E_INVALID_ARGUMENT,
                              "ar_policy_rollout_relabel: the construction ended at decision %d of %d", i, n);
            break;
        }
        st = ARACHNE_OK;
        pick = s.policy_choice;
        allowed = ro_others(&s, cand, &nc);
        if (ro_cap_spent(evaluations, before, allowed)) break;
        /* the policy's own choice is the incumbent (ties keep it); the
         * search's decision step weighs the others against it */
        if (allowed > 1) {
            pre[i] = s.policy_choice;
            st = ro_complete(&w, pre, i + 1, &R.cur);
            if (!st) st = ro_decide(&R, &s, i, cand, nc, &pick);
        }
        pre[i] = choices[i];
        if (st) break; /* a failed completion labels nothing */
        labels[i] = pick;
        *nlabels = i + 1;
    }
    *fills = ro_fills(&w);
    ro_worker_free(&w);
    return st;
}

int arachne_plan_rollout(arachne_plan **out, const arachne_policy *policy, const arachne_cost_model *cm,
                         long evaluations, double time_cap_s)
{
    double t0 = ar_now();
    ro_worker *w = NULL;
    ro_search R;
    arachne_plan *greedy = NULL, *best = NULL;
    int *choices = NULL;
    int st = ARACHNE_OK, nw = 0, i;
    long spent = 0;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_rollout: out is NULL");
    *out = NULL;
    if (!policy || !cm)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_rollout: %s is NULL", policy ? "cost model" : "policy");
    if (evaluations < 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_rollout: evaluations %ld is negative", evaluations);
    if (!(time_cap_s >= 0.0) || time_cap_s > 1e9)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_rollout: time_cap_s %g outside [0, 1e9]", time_cap_s);
    nw = ar_policy_threads(AR_MAX_CHOICES);
    w = ar_malloc((size_t)nw * sizeof *w);
    choices = ar_malloc(AR_POLICY_MAX_DECISIONS * sizeof *choices);
    greedy = ar_malloc(sizeof *greedy);
    best = ar_malloc(sizeof *best);
    if (greedy) ar_plan_empty(greedy);
    if (best) ar_plan_empty(best);
    if (!w || !choices || !greedy || !best) { nw = 0; st = ARACHNE_E_NO_MEMORY; goto done; }
    for (i = 0; i < nw; i++) {
        st = ro_worker_init(&w[i], policy, cm, NULL);
        if (st) { nw = i + 1; goto done; }
    }
    memset(&R, 0, sizeof R);
    R.w = w;
    R.nw = nw;
    R.evaluations = evaluations;
    R.time_cap_s = time_cap_s;
    R.t0 = t0;
    R.choices = choices;
    /* the base, greedy decoding as arachne_plan_build finishes it; the
     * incumbent's rank is its raw completion's, as completions are ranked */
    if ((st = ro_finish(&w[0], cm, choices, 0, greedy, &R.cur))) goto done;
    if ((st = ro_search_run(&R))) goto done;
    /* the incumbent, finished as greedy is; never below greedy itself */
    if (R.changed) {
        if ((st = ro_finish(&w[0], cm, choices, R.n, best, NULL))) goto done;
        if (ar_plan_rank(best) < ar_plan_rank(greedy)) {
            arachne_plan *tmp = best;
            best = greedy;
            greedy = tmp;
        }
    } else {
        arachne_plan *tmp = best;
        best = greedy;
        greedy = tmp;
    }
    for (i = 0; i < nw; i++) spent += ro_fills(&w[i]);
    /* a plan the wall-clock cap cut says so: it depends on the machine */
    snprintf(best->method, sizeof best->method, "%s", R.capped ? "policy-rollout-capped" : "policy-rollout");
    best->samples = 1;
    best->evaluations = spent;
    best->planning_s = ar_now() - t0;
    if ((st = ar_plan_finish(best))) goto done;
    *out = best;
    best = NULL;
done:
    if (w)
        for (i = 0; i < nw; i++) ro_worker_free(&w[i]);
    free(w);
    free(choices);
    if (greedy) arachne_plan_destroy(greedy);
    if (best) arachne_plan_destroy(best);
    return st;
}
