/* bench_value_decoding.c -- how far greedy decoding is from what the same
 * policy could reach if it chose by value instead of by probability.
 *
 * Greedy decoding takes, at every decision, the choice the policy gives the
 * highest probability.  "Value greedy" takes the choice with the highest
 * expected plan rank (ar_plan_rank: iter/s, a batch surplus charged) under
 * the policy itself: for every allowed choice it runs N completions sampled
 * from the policy and averages their ranks, keeps the best choice, and moves
 * to the next decision (one step of policy improvement, decision by
 * decision).  It prices hundreds of plans per composition, so it is not a
 * planner; it measures the ceiling of a value head trained to predict those
 * averages (docs/experiments.md, "Greedy by value").
 *
 * For every composition of an `arachne eval` config the bench runs the eval
 * itself (ar_eval_run: the reference, exhaustive search where it ran, else
 * random search with random_factor x the evaluations) and then, on the same
 * cost model, three decodings through one construction path (the full
 * constructed plan, without best-of-k's prefix and exact-split passes):
 * greedy, best-of-16 (greedy + 15 sampled rollouts) and value greedy.
 * Prints, per population (all, dense, MoE), the geometric mean of each
 * method's iter/s over the reference, the minimum and the share >= 0.95, the
 * rollouts value greedy priced and its time; then one JSON line per
 * composition and per population.
 *
 * The policy: --policy FILE, $ARACHNE_POLICY, else
 * examples/policies/default.arpol (the bundled one, from the source tree).
 * --margin M keeps the policy's own choice unless another choice's mean rank
 * beats it by more than the fraction M (0: pure value greedy).
 * --greedy-completions values each choice by its one greedy completion
 * instead: the library's rollout decoding (arachne_plan_rollout), whose
 * plan, fills ("rollouts") and wall time the value-greedy columns then
 * report.
 * Usage: bench_value_decoding [--config EVAL.json] [--policy FILE] [--n N] [--margin M]
 *                             [--greedy-completions] [--first K]
 * (default config examples/eval/quick.json: three compositions, minutes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "bench_stats.h"
#include "construct.h"
#include "eval.h"
#include "plan.h"
#include "policy.h"
#include "util.h"

#define MAX_DECISIONS 1024

typedef struct decoder {
    ar_builder b;
    ar_policy_src src;
    ar_trace tr;
    arachne_plan plan;
    long rollouts;
} decoder;

/* Builds a plan that follows choices[0..n) and then the policy (greedy,
 * or sampled from seed).  Returns the plan's rank, 0 when no plan. */
static double rollout(decoder *d, const int *choices, int n, int greedy, uint64_t seed, double *iter_per_s)
{
    ar_policy_script s;
    memset(&s, 0, sizeof s);
    s.src = &d->src;
    s.choices = choices;
    s.n = n;
    ar_policy_src_reset(&d->src, seed, greedy, NULL);
    d->rollouts++;
    if (ar_builder_run(&d->b, ar_policy_script_decide, &s, &d->plan, &d->tr) != ARACHNE_OK) return 0.0;
    if (iter_per_s) *iter_per_s = d->plan.iter_per_s;
    return ar_plan_rank(&d->plan);
}

/* Value greedy: decision by decision, the allowed choice whose N sampled
 * completions have the highest mean rank (ties: the lowest index).  With
 * margin > 0 it keeps the policy's own choice unless another's mean is
 * above that choice's by more than the margin (a fraction). */
static double value_greedy(decoder *d, int N, double margin, double *iter_per_s, int *decisions)
{
    int choices[MAX_DECISIONS], n = 0, i, j;
    for (;;) {
        ar_policy_script s;
        int st, allowed = 0, only = -1, best = -1;
        double best_q = -1.0;
        memset(&s, 0, sizeof s);
        s.src = &d->src;
        s.choices = choices;
        s.n = n;
        s.capture = 1;
        ar_policy_src_reset(&d->src, 0, 1, NULL);
        st = ar_builder_run(&d->b, ar_policy_script_decide, &s, &d->plan, &d->tr);
        if (st != AR_POLICY_SCRIPT_STOP) { /* the script ran to the end of the construction */
            *decisions = n;
            *iter_per_s = st == ARACHNE_OK ? d->plan.iter_per_s : 0.0;
            return st == ARACHNE_OK ? ar_plan_rank(&d->plan) : 0.0;
        }
        if (n == MAX_DECISIONS) return 0.0;
        for (i = 0; i < s.nopt; i++)
            if (s.mask[i]) { allowed++; only = i; }
        if (allowed == 1) {
            choices[n++] = only;
            continue;
        }
        {
            double q_policy = 0.0;
            for (i = 0; i < s.nopt; i++) {
                double q = 0.0;
                if (!s.mask[i]) continue;
                choices[n] = i;
                for (j = 0; j < N; j++)
                    q += rollout(d, choices, n + 1, 0, (uint64_t)n * 1000003u + (uint64_t)i * 1009u + (uint64_t)j + 1u,
                                 NULL);
                q /= N;
                if (i == s.policy_choice) q_policy = q;
                if (q > best_q) { best_q = q; best = i; }
            }
            if (margin > 0.0 && best_q <= (1.0 + margin) * q_policy) best = s.policy_choice;
        }
        choices[n++] = best;
    }
}

typedef struct row {
    int moe, decisions;
    double ref, greedy, best16, value;
    long rollouts;
    double value_s;
} row;

static double geo(const row *rows, int n, int pop, int which, double *mn, double *share)
{
    double s = 0.0, v;
    int i, k = 0, ge = 0;
    *mn = HUGE_VAL;
    for (i = 0; i < n; i++) {
        const row *r = &rows[i];
        if ((pop == 1 && r->moe) || (pop == 2 && !r->moe) || r->ref <= 0.0) continue;
        v = (which == 0 ? r->greedy : which == 1 ? r->best16 : r->value) / r->ref;
        if (v <= 0.0) v = 1e-9;
        s += log(v);
        k++;
        ge += v >= 0.95;
        if (v < *mn) *mn = v;
    }
    *share = k ? (double)ge / k : 0.0;
    if (!k) *mn = 0.0; /* an empty population: all zeros, valid JSON */
    return k ? exp(s / k) : 0.0;
}

int main(int argc, char **argv)
{
    const char *config = NULL, *policy_path = getenv("ARACHNE_POLICY");
    ar_eval_config *cfg = NULL;
    ar_eval_result res;
    arachne_policy *pol = NULL;
    row *rows = NULL;
    int N = 8, first = 0, i, k, st, nrows, greedy_completions = 0;
    double margin = 0.0;
    static const char *pop_name[3] = { "all", "dense", "moe" };
    static const char *meth_name[3] = { "greedy", "best-of-16", "value greedy" };
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
        else if (!strcmp(argv[i], "--policy") && i + 1 < argc) policy_path = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) N = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--first") && i + 1 < argc) first = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--margin") && i + 1 < argc) margin = atof(argv[++i]);
        else if (!strcmp(argv[i], "--greedy-completions")) greedy_completions = 1;
        else {
            fprintf(stderr, "usage: bench_value_decoding [--config EVAL.json] [--policy FILE] [--n N] [--margin M] "
                            "[--greedy-completions] [--first K]\n");
            return 2;
        }
    }
    if (N < 1 || !(margin >= 0.0)) {
        fprintf(stderr, "bench_value_decoding: --n must be >= 1 and --margin >= 0\n");
        return 2;
    }
    if (!config) config = "examples/eval/quick.json"; /* `make bench` runs every benchmark without arguments */
    if (!policy_path || !policy_path[0]) policy_path = "examples/policies/default.arpol";
    if ((st = arachne_policy_load(&pol, policy_path)) || (st = ar_eval_config_load(&cfg, config))) {
        fprintf(stderr, "bench_value_decoding: %s\n", arachne_last_error());
        arachne_policy_destroy(pol);
        return 1;
    }
    if (first > 0 && first < cfg->ncomps) cfg->ncomps = first;
    memset(&res, 0, sizeof res);
    if ((st = ar_eval_run(cfg, pol, NULL, NULL, &res))) {
        fprintf(stderr, "bench_value_decoding: %s\n", arachne_last_error());
        ar_eval_config_free(cfg);
        arachne_policy_destroy(pol);
        return 1;
    }
    nrows = res.nrows;
    rows = calloc((size_t)(nrows > 0 ? nrows : 1), sizeof *rows);
    if (!rows) {
        fprintf(stderr, "bench_value_decoding: out of memory\n");
        ar_eval_result_free(&res);
        ar_eval_config_free(cfg);
        arachne_policy_destroy(pol);
        return 1;
    }
    if (greedy_completions)
        printf("policy %s, config %s, %d compositions, one greedy completion per choice, margin %g\n", policy_path,
               config, nrows, margin);
    else
        printf("policy %s, config %s, %d compositions, %d completions per choice, margin %g\n", policy_path, config,
               nrows, N, margin);
    for (i = 0; i < nrows; i++) {
        const ar_eval_row *er = &res.rows[i];
        ar_eval_env env;
        ar_construct_opts opts;
        decoder *d = malloc(sizeof *d);
        row *r = &rows[i];
        double t0, best_rank = -1.0, ips = 0.0;
        int init = 0;
        r->moe = er->moe;
        r->ref = er->ref >= 0 ? er->cell[er->ref].iter_per_s : 0.0;
        memset(&env, 0, sizeof env);
        if (!d || ar_eval_env_build(&env, &er->comp) != ARACHNE_OK) {
            fprintf(stderr, "bench_value_decoding: %s: %s\n", er->comp.name, arachne_last_error());
            free(d);
            continue;
        }
        memset(d, 0, sizeof *d);
        ar_plan_empty(&d->plan);
        ar_trace_init(&d->tr);
        ar_policy_construct_opts(&opts);
        if (ar_builder_init(&d->b, env.cm, &opts) == ARACHNE_OK) {
            init = 1;
            if (ar_policy_src_init(&d->src, pol->nn, env.cm, 0, 1, 0) == ARACHNE_OK) {
                for (k = 0; k < 16; k++) { /* rollout 0 is greedy decoding */
                    double rank = rollout(d, NULL, 0, k == 0, 1000u + (uint64_t)k, &ips);
                    if (k == 0) r->greedy = ips;
                    if (rank > best_rank) { best_rank = rank; r->best16 = ips; }
                }
                d->rollouts = 0;
                t0 = ar_now();
                if (greedy_completions) {
                    /* the library's rollout decoding (arachne_plan_rollout):
                     * its plan, its fills and its wall time */
                    arachne_plan *ro = NULL;
                    if (arachne_plan_rollout(&ro, pol, env.cm, 0, 0) == ARACHNE_OK) {
                        r->value = ro->iter_per_s;
                        r->rollouts = ro->evaluations;
                        r->value_s = ro->planning_s;
                    }
                    arachne_plan_destroy(ro);
                } else {
                    value_greedy(d, N, margin, &r->value, &r->decisions);
                    r->value_s = ar_now() - t0;
                    r->rollouts = d->rollouts;
                }
            }
        }
        printf("{\"bench\":\"value_decoding\",\"composition\":\"%s\",\"moe\":%d,\"reference\":%.6g,\"greedy\":%.6g,"
               "\"best16\":%.6g,\"value_greedy\":%.6g,\"decisions\":%d,\"rollouts\":%ld,\"value_s\":%.3f}\n",
               er->comp.name, r->moe, r->ref, r->greedy, r->best16, r->value, r->decisions, r->rollouts, r->value_s);
        ar_policy_src_free(&d->src);
        ar_trace_free(&d->tr);
        ar_plan_clear(&d->plan);
        if (init) ar_builder_free(&d->b);
        free(d);
        ar_eval_env_free(&env);
    }
    {
        double g[3][3], mn[3][3], share[3][3]; /* [population][method] */
        int m;
        for (k = 0; k < 3; k++)
            for (m = 0; m < 3; m++) g[k][m] = geo(rows, nrows, k, m, &mn[k][m], &share[k][m]);
        printf("\n%-6s %-13s %8s %8s %10s\n", "pop", "method", "geomean", "min", "share>=.95");
        for (k = 0; k < 3; k++)
            for (m = 0; m < 3; m++)
                printf("%-6s %-13s %8.3f %8.3f %10.2f\n", m == 0 ? pop_name[k] : "", meth_name[m], g[k][m], mn[k][m],
                       share[k][m]);
        for (k = 0; k < 3; k++)
            for (m = 0; m < 3; m++)
                printf("{\"bench\":\"value_decoding\",\"population\":\"%s\",\"method\":\"%s\",\"geomean\":%.4f,"
                       "\"min\":%.4f,\"share95\":%.3f}\n", pop_name[k], meth_name[m], g[k][m], mn[k][m], share[k][m]);
    }
    {
        double *v = malloc((size_t)(nrows > 0 ? nrows : 1) * sizeof *v), *t = malloc((size_t)(nrows > 0 ? nrows : 1) * sizeof *t);
        if (v && t && nrows > 0) {
            for (i = 0; i < nrows; i++) { v[i] = (double)rows[i].rollouts; t[i] = rows[i].value_s; }
            printf("value greedy: median %.0f rollouts, median %.3f s per composition\n", bench_median(v, nrows),
                   bench_median(t, nrows));
        }
        free(v);
        free(t);
    }
    free(rows);
    ar_eval_result_free(&res);
    ar_eval_config_free(cfg);
    arachne_policy_destroy(pol);
    return 0;
}
