/* bench_plan.c -- planning time of the structured policy (greedy,
 * best-of-16, and the default planner arachne_plan_build_refined: best-of-16
 * refined from the best sample and the greedy plan with the default budget,
 * as `arachne plan` runs) on large heterogeneous clusters:
 * llama3-8b on the paper's 512-GPU mix, and on 4,096 and 16,384 GPUs of 8
 * GPU types with 4- and 8-GPU nodes.  Prints a table and one JSON line per
 * case; times are medians over repeated runs (the cost model and its
 * generated profile are built once per cluster, outside the timing).
 * Built with OpenMP (make OPENMP=1 bench) best-of-16 runs with 1 and with
 * 2 threads (the rollouts in parallel, the same plan); without, 1 thread.
 *
 * The policy: $ARACHNE_POLICY, else examples/policies/default.arpol (the
 * bundled policy, when the bench runs from the source tree), else a fresh
 * untrained policy (seed 1); the output says which.  Besides wall time the
 * bench reports the process CPU time (clock()), which a busy machine does
 * not inflate.
 * --no-cp plans with context parallelism off (ARACHNE_OPT_CONTEXT_PARALLEL
 * 0), the planner without it, for a before/after comparison; --max-vp V
 * sets the MAX_VP option (1: plain 1F1B only; interleaved 1F1B up to V
 * chunks per stage otherwise); --cases N runs the first N clusters.
 * Usage: bench_plan [--reps N] [--policy FILE] [--no-cp] [--max-vp V] [--cases N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arachne.h"
#include "bench_policy.h"
#include "bench_stats.h"
#include "util.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* The modes: samples, threads (0: all), refine. */
typedef struct bmode { const char *name; int samples, threads, refine; } bmode;
static const bmode modes[] = {
    { "greedy", 1, 1, 0 },
    { "best-of-16", 16, 1, 0 },
#ifdef _OPENMP
    { "best-of-16", 16, 2, 0 },
    { "best16+ref", 16, 2, 1 },
#else
    { "best16+ref", 16, 1, 1 },
#endif
};

typedef struct bcase {
    const char *name;
    const char *spec;
} bcase;

static const bcase cases[] = {
    { "paper-512", "a100-40:32x4,a6000:32x4,h100:64x4" },
    { "mix-4096", "h100:128x8,a100-80:128x8,a100-40:128x4,l40s:64x8,a6000:64x4,rtx-pro-6000:64x4,a5000:64x4,"
                  "v100-16:64x4" },
    { "mix-16384", "h100:512x8,a100-80:512x8,a100-40:512x4,l40s:256x8,a6000:256x4,rtx-pro-6000:256x4,"
                   "a5000:256x4,v100-16:256x4" },
};

int main(int argc, char **argv)
{
    const char *policy_path = getenv("ARACHNE_POLICY"), *policy_desc;
    arachne_policy *pol = NULL;
    int reps = 5, i, st, cp = 1, max_vp = 0, fresh = 0;
    size_t c, ncases = sizeof cases / sizeof cases[0];
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--policy") && i + 1 < argc) policy_path = argv[++i];
        else if (!strcmp(argv[i], "--no-cp")) cp = 0;
        else if (!strcmp(argv[i], "--max-vp") && i + 1 < argc) max_vp = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cases") && i + 1 < argc) ncases = (size_t)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--reps N] [--policy FILE] [--no-cp] [--max-vp V] [--cases N]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if ((st = bench_policy_open(&pol, policy_path, &policy_desc, &fresh))) {
        fprintf(stderr, "bench_plan: %s\n", arachne_last_error());
        return 1;
    }
    printf("policy: %s; context parallelism %s\n", policy_desc, cp ? "on" : "off (--no-cp)");
    printf("%-10s %6s %5s %-10s %3s %5s %12s %12s %12s %12s %10s %9s\n", "cluster", "GPUs", "types", "mode", "thr",
           "runs", "median s", "min s", "max s", "median cpu s", "iter/s", "evals");
    if (max_vp > 0) printf("max_vp: %d (interleaved 1F1B up to that many chunks per stage)\n", max_vp);
    for (c = 0; c < ncases && c < sizeof cases / sizeof cases[0]; c++) {
        arachne_model *m = NULL;
        arachne_cluster *cl = NULL;
        arachne_profile *p = NULL;
        arachne_cost_model *cm = NULL;
        int gpus = 0, types = 0, mode;
        if ((st = arachne_model_preset(&m, "llama3-8b")) || (st = arachne_cluster_parse(&cl, cases[c].spec)) ||
            (st = arachne_profile_generate(&p, m, cl, 4096)) || (st = arachne_cost_model_create(&cm, m, cl, p)) ||
            (st = arachne_cost_model_set(cm, ARACHNE_OPT_CONTEXT_PARALLEL, cp)) ||
            (max_vp > 0 && (st = arachne_cost_model_set(cm, ARACHNE_OPT_MAX_VP, max_vp)))) {
            fprintf(stderr, "bench_plan: %s: %s\n", cases[c].name, arachne_last_error());
            return 1;
        }
        arachne_cluster_gpu_count(cl, NULL, &gpus);
        arachne_cluster_type_count(cl, &types);
        for (mode = 0; mode < (int)(sizeof modes / sizeof modes[0]); mode++) {
            const bmode *md = &modes[mode];
            int samples = md->samples, n = samples > 1 ? (reps + 1) / 2 : reps, r;
            double *t = malloc(sizeof(double) * (size_t)n * 2), *cpu, thr = 0, ev = 0;
            if (!t) return 1;
            cpu = t + n;
            for (r = 0; r < n; r++) {
                arachne_plan *plan = NULL;
                double t0 = ar_now();
                clock_t c0 = clock();
#ifdef _OPENMP
                omp_set_num_threads(md->threads);
#endif
                st = md->refine ? arachne_plan_build_refined(&plan, pol, cm, samples, 1, ARACHNE_REFINE_EVALUATIONS, 0.0)
                                : arachne_plan_build(&plan, pol, cm, samples, 1);
                t[r] = ar_now() - t0;
                cpu[r] = (double)(clock() - c0) / CLOCKS_PER_SEC;
                if (st) {
                    fprintf(stderr, "bench_plan: %s: %s\n", cases[c].name, arachne_last_error());
                    return 1;
                }
                arachne_plan_get(plan, ARACHNE_PLAN_ITER_PER_S, &thr);
                arachne_plan_get(plan, ARACHNE_PLAN_EVALUATIONS, &ev);
                arachne_plan_destroy(plan);
            }
            qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
            qsort(cpu, (size_t)n, sizeof *cpu, bench_cmp_double);
            {
                double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
                double cmed = n % 2 ? cpu[n / 2] : 0.5 * (cpu[n / 2 - 1] + cpu[n / 2]);
                const char *mname = md->name;
                printf("%-10s %6d %5d %-10s %3d %5d %12.4f %12.4f %12.4f %12.4f %10.4f %9.0f\n", cases[c].name, gpus,
                       types, mname, md->threads, n, med, t[0], t[n - 1], cmed, thr, ev);
                printf("{\"bench\":\"plan\",\"case\":\"%s\",\"model\":\"llama3-8b\",\"cluster\":\"%s\",\"gpus\":%d,"
                       "\"types\":%d,\"mode\":\"%s\",\"threads\":%d,\"runs\":%d,\"median_s\":%.6f,\"min_s\":%.6f,"
                       "\"max_s\":%.6f,\"median_cpu_s\":%.6f,\"iter_per_s\":%.6g,\"evaluations\":%.0f,\"policy\":\"%s\","
                       "\"context_parallel\":%s}\n",
                       cases[c].name, cases[c].spec, gpus, types, mname, md->threads, n, med, t[0], t[n - 1], cmed, thr,
                       ev, fresh ? "fresh" : "bundled-or-given", cp ? "true" : "false");
            }
            free(t);
        }
        arachne_cost_model_destroy(cm);
        arachne_profile_destroy(p);
        arachne_cluster_destroy(cl);
        arachne_model_destroy(m);
    }
    arachne_policy_destroy(pol);
    return 0;
}
