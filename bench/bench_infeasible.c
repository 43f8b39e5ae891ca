/* bench_infeasible.c -- how long greedy planning takes to answer, on random
 * compositions of which many have no plan at all (the first step's
 * lookahead then searches every depth with its raised budgets, and the
 * proof searches try to settle them; docs/search.md, "Masks").
 *
 * The draw (fixed by --seed): a preset model (the 8 presets, uniform);
 * 1 to 3 node groups, each of a GPU type drawn from 14 (old and new parts),
 * 1 to 12 nodes (1 to 40 for deepseek-v3) of 1, 2, 4 or 8 GPUs; global
 * batch 64, 128, 256 or 512; the optimizer state replicated with
 * probability 1/4 (ZeRO-1 otherwise).  Each composition is planned once,
 * greedily (arachne_plan_build, one sample), with the bundled policy
 * ($ARACHNE_POLICY, else examples/policies/default.arpol, else a fresh
 * untrained policy: the masks and the proofs do not depend on it).
 *
 * The table groups the compositions by the answer: a plan, no plan with a
 * proof, no plan without one (the message says "not proven"); per group the
 * count and the total, median and largest wall time.  One JSON line per
 * group.  The cost model and its generated profile are built outside the
 * timing.  Usage: bench_infeasible [--n N] [--seed S] [--policy FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "bench_policy.h"
#include "bench_stats.h"
#include "util.h"

enum { GROUP_PLAN, GROUP_PROVEN, GROUP_UNPROVEN, NGROUPS };

static const char *group_name[NGROUPS] = { "plan", "no-plan-proven", "no-plan-unproven" };

int main(int argc, char **argv)
{
    static const char *models[] = { "llama3-8b", "llama3-70b", "qwen3-8b", "qwen3-32b",
                                    "qwen3-64b", "qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3" };
    static const char *gpus[] = { "a100-40", "a100-80", "h100", "a6000", "a5000", "l40s", "v100-16",
                                  "rtx-2080ti", "rtx-3090", "h200", "b200", "l4", "rtx-4090", "gh-96" };
    const char *policy_path = getenv("ARACHNE_POLICY"), *policy_desc;
    arachne_policy *pol = NULL;
    double *times[NGROUPS];
    int count[NGROUPS] = { 0, 0, 0 }, n = 200, i, g, st, other = 0;
    unsigned long seed = 11;
    ar_rng rng;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--policy") && i + 1 < argc) policy_path = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--n N] [--seed S] [--policy FILE]\n", argv[0]);
            return 2;
        }
    }
    if (n < 1) n = 1;
    if ((st = bench_policy_open(&pol, policy_path, &policy_desc, NULL))) {
        fprintf(stderr, "bench_infeasible: %s\n", arachne_last_error());
        return 1;
    }
    for (g = 0; g < NGROUPS; g++)
        if (!(times[g] = malloc(sizeof(double) * (size_t)n))) return 1;
    ar_rng_seed(&rng, seed);
    printf("policy: %s; %d compositions, seed %lu\n", policy_desc, n, seed);
    for (i = 0; i < n; i++) {
        const char *model = models[ar_rng_int(&rng, (int)(sizeof models / sizeof models[0]))];
        int groups = 1 + ar_rng_int(&rng, 3), k, batch = 64 << ar_rng_int(&rng, 4), dist = ar_rng_int(&rng, 4) != 0;
        int max_nodes = strcmp(model, "deepseek-v3") ? 12 : 40;
        char spec[256];
        size_t len = 0;
        arachne_model *m = NULL;
        arachne_cluster *cl = NULL;
        arachne_profile *p = NULL;
        arachne_cost_model *cm = NULL;
        arachne_plan *plan = NULL;
        double t0, t;
        spec[0] = '\0';
        for (k = 0; k < groups; k++) {
            int type = ar_rng_int(&rng, (int)(sizeof gpus / sizeof gpus[0])), nodes = 1 + ar_rng_int(&rng, max_nodes);
            len += (size_t)snprintf(spec + len, sizeof spec - len, "%s%s:%dx%d", k ? "," : "", gpus[type], nodes,
                                    1 << ar_rng_int(&rng, 4));
        }
        if (arachne_model_preset(&m, model) || arachne_cluster_parse(&cl, spec) ||
            arachne_profile_generate(&p, m, cl, 4096) || arachne_cost_model_create(&cm, m, cl, p) ||
            arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, batch) ||
            arachne_cost_model_set(cm, ARACHNE_OPT_DIST_OPTIMIZER, dist)) {
            fprintf(stderr, "bench_infeasible: %s on %s: %s\n", model, spec, arachne_last_error());
            other++;
        } else {
            t0 = ar_now();
            st = arachne_plan_build(&plan, pol, cm, 1, 1);
            t = ar_now() - t0;
            if (st == ARACHNE_OK) g = GROUP_PLAN;
            else if (st == ARACHNE_E_INFEASIBLE) g = strstr(arachne_last_error(), "not proven") ? GROUP_UNPROVEN : GROUP_PROVEN;
            else {
                fprintf(stderr, "bench_infeasible: %s on %s: %s\n", model, spec, arachne_last_error());
                g = -1;
                other++;
            }
            if (g >= 0) times[g][count[g]++] = t;
            if (g == GROUP_UNPROVEN) printf("not proven: %s on %s, batch %d, %.2f s\n", model, spec, batch, t);
        }
        arachne_plan_destroy(plan);
        arachne_cost_model_destroy(cm);
        arachne_profile_destroy(p);
        arachne_cluster_destroy(cl);
        arachne_model_destroy(m);
    }
    printf("%-18s %6s %10s %10s %10s\n", "answer", "count", "total s", "median s", "max s");
    for (g = 0; g < NGROUPS; g++) {
        double total = 0.0, med = 0.0, max = 0.0;
        for (i = 0; i < count[g]; i++) {
            total += times[g][i];
            if (times[g][i] > max) max = times[g][i];
        }
        if (count[g] > 0) med = bench_median(times[g], count[g]);
        printf("%-18s %6d %10.3f %10.4f %10.3f\n", group_name[g], count[g], total, med, max);
        printf("{\"bench\":\"infeasible\",\"answer\":\"%s\",\"seed\":%lu,\"compositions\":%d,\"count\":%d,"
               "\"total_s\":%.6f,\"median_s\":%.6f,\"max_s\":%.6f}\n",
               group_name[g], seed, n, count[g], total, med, max);
        free(times[g]);
    }
    if (other) printf("%d compositions could not be set up or failed otherwise (stderr)\n", other);
    arachne_policy_destroy(pol);
    return 0;
}
