/* bench_fill.c -- template fills per second, and construction rollouts per
 * second, on the 512-GPU cluster a100-40:32x4,a6000:32x4,h100:64x4.
 *
 * For each model, 64 template structures are drawn from random rollouts
 * (the first template of each: depth, per-stage GPU type and TP degree, all
 * feasible).  One run fills every structure into an empty plan
 * (ar_fill_template_ws, AR_FILL_BEST: replicas, every micro-batch size,
 * layer split, expert tiling, device assignment, pricing), restoring the
 * free GPUs between fills; another runs whole random rollouts with the
 * lookahead masks (up to 16 templates each).  Reported: median over 7 runs
 * of fills/s and rollouts/s; a table, then one JSON line per model.  Also
 * the same fills priced plainly (every candidate priced whole: no stage
 * memo, no skipped stages in the tiling search; docs/fill.md, step 4) and
 * the ratio, measured in the same process; the run fails if the plain
 * fills fill a different set of structures.
 *
 * --ablate: also fills the same 64 structures with the fill's searches
 * turned off one after another (the stage moves, then the reversal, the
 * priced re-split, interleaving, context parallelism; each row keeps the
 * previous ones off) and reports fills/s and the ratio to the library's
 * defaults measured in the same process: where a fill's time goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "bench_stats.h"
#include "construct.h"

#define RUNS 7
#define NTEMPL 64
#define NROLL 8

typedef struct rnd { ar_rng rng; int depth, types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH]; } rnd;

static int rnd_decide(void *user, const ar_dec_ctx *c, int *choice)
{
    rnd *u = (rnd *)user;
    int i, j = ar_rng_int(&u->rng, c->nallowed);
    for (i = 0; i < c->n; i++)
        if (c->mask[i] && j-- == 0) { *choice = i; break; }
    if (c->step == 0) { /* remember the first template */
        if (c->kind == AR_DEC_DEPTH) u->depth = *choice;
        else if (c->kind == AR_DEC_TYPE) u->types[c->stage] = *choice;
        else u->tps[c->stage] = 1 << *choice;
    }
    return ARACHNE_OK;
}

/* The fill's optional searches, switched off cumulatively by --ablate. */
static const struct { const char *name; int option; double off; } ablations[] = {
    { "no stage-major placement", ARACHNE_OPT_STAGE_MAJOR, 0 },
    { "+ no stage moves", ARACHNE_OPT_STAGE_MOVES, 0 },
    { "+ no reversal", ARACHNE_OPT_STAGE_REVERSAL, 0 },
    { "+ no priced re-split", ARACHNE_OPT_PRICED_RESPLIT, 0 },
    { "+ max vp 1", ARACHNE_OPT_MAX_VP, 1 },
    { "+ no context parallel", ARACHNE_OPT_CONTEXT_PARALLEL, 0 },
};
#define NABL ((int)(sizeof ablations / sizeof ablations[0]))

/* Median fills/s of the n structures over RUNS runs; a structure the
 * options at hand cannot fill counts in *infeasible (its failed search is
 * timed like any fill). */
static int time_fills(ar_fill_ws *ws, const ar_avail *base, ar_avail *a, arachne_plan *pl, const arachne_plan *empty,
                      int n, const int *depth, int (*types)[AR_MAX_DEPTH], int (*tps)[AR_MAX_DEPTH], double *median,
                      int *infeasible)
{
    double fills[RUNS];
    int run, k, st;
    *infeasible = 0;
    for (run = 0; run < RUNS; run++) {
        double t0 = ar_now();
        for (k = 0; k < n; k++) {
            ar_avail_copy(a, base);
            ar_plan_copy(pl, empty);
            ar_fill_ws_reset(ws);
            st = ar_fill_template_ws(ws, a, pl, depth[k], types[k], tps[k], AR_FILL_BEST);
            if (st == ARACHNE_E_INFEASIBLE || st == ARACHNE_E_OUT_OF_MEMORY_PLAN) {
                if (run == 0) (*infeasible)++;
            } else if (st) {
                fprintf(stderr, "bench_fill: template %d: %s\n", k, arachne_last_error());
                return 1;
            }
        }
        fills[run] = n / (ar_now() - t0);
    }
    qsort(fills, RUNS, sizeof fills[0], bench_cmp_double);
    *median = fills[RUNS / 2];
    return 0;
}

int main(int argc, char **argv)
{
    static const char *models[] = { "llama3-8b", "qwen3-32b", "mixtral-8x7b" };
    const char *spec = "a100-40:32x4,a6000:32x4,h100:64x4";
    size_t mi;
    int ablate = argc == 2 && !strcmp(argv[1], "--ablate");
    if (argc > 2 || (argc == 2 && !ablate)) {
        fprintf(stderr, "usage: bench_fill [--ablate]\n");
        return 2;
    }
    printf("template fill and construction speed on %s (median of %d runs)\n", spec, RUNS);
    printf("%-14s %10s %12s %12s %14s\n", "model", "templates", "fills/s", "ms/fill", "rollouts/s");
    for (mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
        arachne_model *m = NULL;
        arachne_cluster *c = NULL;
        arachne_profile *p = NULL;
        arachne_cost_model *cm = NULL;
        ar_builder b;
        ar_construct_opts o;
        ar_fill_ws ws;
        arachne_plan pl, empty;
        ar_avail base, a;
        rnd u;
        int depth[NTEMPL], types[NTEMPL][AR_MAX_DEPTH], tps[NTEMPL][AR_MAX_DEPTH], k, run, n = 0, bad = 0;
        double fill_rate = 0.0, rolls[RUNS];
        if (arachne_model_preset(&m, models[mi]) || arachne_cluster_parse(&c, spec) ||
            arachne_profile_generate(&p, m, c, 4096) || arachne_cost_model_create(&cm, m, c, p)) {
            fprintf(stderr, "bench_fill: setup: %s\n", arachne_last_error());
            return 1;
        }
        ar_construct_opts_default(&o);
        if (ar_builder_init(&b, cm, &o) || ar_fill_ws_init(&ws, cm) || ar_avail_init(&base, c)) {
            fprintf(stderr, "bench_fill: %s\n", arachne_last_error());
            return 1;
        }
        memset(&a, 0, sizeof a);
        memset(&pl, 0, sizeof pl);
        memset(&empty, 0, sizeof empty);
        ar_plan_init(&empty, cm);
        for (k = 0; k < NTEMPL; k++) {
            /* one seed per structure: the first template's decisions come
             * before any fill, so every version of the library fills the
             * same 64 structures */
            ar_rng_seed(&u.rng, 42 + (uint64_t)k);
            if (ar_builder_run(&b, rnd_decide, &u, &pl, NULL)) { fprintf(stderr, "bench_fill: %s\n", arachne_last_error()); return 1; }
            depth[n] = u.depth;
            memcpy(types[n], u.types, sizeof u.types);
            memcpy(tps[n], u.tps, sizeof u.tps);
            n++;
        }
        /* the structures come from feasible rollouts: under the defaults
         * every one of them fills */
        if (time_fills(&ws, &base, &a, &pl, &empty, n, depth, types, tps, &fill_rate, &bad)) return 1;
        if (bad) {
            fprintf(stderr, "bench_fill: %s: %d of %d structures did not fill\n", models[mi], bad, n);
            return 1;
        }
        for (run = 0; run < RUNS; run++) {
            double t0 = ar_now();
            for (k = 0; k < NROLL; k++)
                if (ar_builder_run(&b, rnd_decide, &u, &pl, NULL)) { fprintf(stderr, "bench_fill: %s\n", arachne_last_error()); return 1; }
            rolls[run] = NROLL / (ar_now() - t0);
        }
        qsort(rolls, RUNS, sizeof rolls[0], bench_cmp_double);
        printf("%-14s %10d %12.0f %12.3f %14.1f\n", models[mi], n, fill_rate, 1e3 / fill_rate, rolls[RUNS / 2]);
        printf("{\"bench\":\"fill\",\"model\":\"%s\",\"cluster\":\"%s\",\"templates\":%d,\"runs\":%d,"
               "\"fills_per_s\":%.1f,\"ms_per_fill\":%.4f,\"rollouts_per_s\":%.2f}\n",
               models[mi], spec, n, RUNS, fill_rate, 1e3 / fill_rate, rolls[RUNS / 2]);
        {
            /* the fill's shortcuts (docs/fill.md, step 4): the same fills
             * priced plainly, in this process */
            double off;
            int bad_off;
            ws.plain_tile_search = 1;
            if (time_fills(&ws, &base, &a, &pl, &empty, n, depth, types, tps, &off, &bad_off)) return 1;
            ws.plain_tile_search = 0;
            if (bad_off != bad) { /* the shortcuts change no result */
                fprintf(stderr, "bench_fill: %s: the plain fills filled %d of %d, the library's %d\n",
                        models[mi], n - bad_off, n, n - bad);
                return 1;
            }
            printf("  %-24s %10.0f fills/s  (the shortcuts: x%.2f)\n", "priced plainly", off, fill_rate / off);
            printf("{\"bench\":\"fill_stage_memo\",\"model\":\"%s\",\"fills_per_s\":%.1f,"
                   "\"plain_fills_per_s\":%.1f,\"speedup\":%.4f}\n",
                   models[mi], fill_rate, off, fill_rate / off);
        }
        if (ablate) {
            double rate;
            int j;
            /* the baseline: the defaults' rate above, measured in this process */
            printf("  %-24s %10.0f fills/s  x%.2f  (%d of %d not fillable)\n", "library defaults", fill_rate, 1.0,
                   bad, n);
            for (j = 0; j < NABL; j++) {
                if (arachne_cost_model_set(cm, ablations[j].option, ablations[j].off)) {
                    fprintf(stderr, "bench_fill: %s\n", arachne_last_error());
                    return 1;
                }
                ar_fill_ws_free(&ws);
                if (ar_fill_ws_init(&ws, cm)) { fprintf(stderr, "bench_fill: %s\n", arachne_last_error()); return 1; }
                if (time_fills(&ws, &base, &a, &pl, &empty, n, depth, types, tps, &rate, &bad)) return 1;
                printf("  %-24s %10.0f fills/s  x%.2f  (%d of %d not fillable)\n", ablations[j].name, rate,
                       rate / fill_rate, bad, n);
                printf("{\"bench\":\"fill_ablate\",\"model\":\"%s\",\"off\":\"%s\",\"fills_per_s\":%.1f,"
                       "\"vs_defaults\":%.4f,\"not_fillable\":%d}\n",
                       models[mi], ablations[j].name, rate, rate / fill_rate, bad);
            }
        }
        ar_plan_clear(&pl);
        ar_plan_clear(&empty);
        ar_avail_free(&a);
        ar_avail_free(&base);
        ar_fill_ws_free(&ws);
        ar_builder_free(&b);
        arachne_cost_model_destroy(cm);
        arachne_profile_destroy(p);
        arachne_cluster_destroy(c);
        arachne_model_destroy(m);
    }
    return 0;
}
