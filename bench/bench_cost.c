/* bench_cost.c -- plans priced per second.
 *
 * Cluster a100-40:32x4,a6000:32x4,h100:64x4 (512 GPUs), llama3-8b, the
 * generated profile at sequence 4096, default setup.  A few representative
 * plans are built by hand (one template; three single-type templates; a
 * template whose stages mix GPU types next to single-type ones; many small
 * templates) with ranks packed first-fit.  Each plan is priced repeatedly
 * two ways:
 *   price   ar_plan_price (placement read from the ranks every call)
 *   placed  ar_plan_price_placed with the placement computed once (what
 *           the fill helper does while it tries micro-batch sizes / tilings)
 *   stage   ar_stage_price + ar_stage_memory of one stage (the per-candidate
 *           work of a fill that scores stages before pricing the plan)
 * Reported: median over 7 runs of the evaluations per second; a table, then one
 * JSON line per plan and mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "bench_stats.h"
#include "cost.h"

#define RUNS 7

typedef struct tspec {
    int depth;
    const char *types[8];
    int tp[8];
    int replicas, mbs;
} tspec;

typedef struct pspec {
    const char *name;
    int ntemplates;
    tspec t[16];
} pspec;

static int pack(arachne_plan *pl, const arachne_cluster *c, int *used, const tspec *ts, int blocks)
{
    ar_template *t = &pl->t[pl->ntemplates];
    int s, q, a, nd, total = 0, share[8];
    double w[8];
    memset(t, 0, sizeof *t);
    t->depth = ts->depth;
    t->replicas = ts->replicas;
    t->micro_batch = ts->mbs;
    /* layers in proportion to stage FLOP/s x tp */
    for (s = 0; s < ts->depth; s++) {
        int ty = ar_cluster_type_index(c, ts->types[s]);
        if (ty < 0) return -1;
        w[s] = c->types[ty].flops * ts->tp[s];
    }
    {
        double sum = 0.0, acc = 0.0;
        int prev = 0;
        for (s = 0; s < ts->depth; s++) sum += w[s];
        for (s = 0; s < ts->depth; s++) {
            int end;
            acc += w[s];
            end = s == ts->depth - 1 ? blocks : (int)(acc / sum * blocks + 0.5);
            if (end <= prev) end = prev + 1;
            share[s] = end - prev;
            prev = end;
            total += share[s];
        }
        if (total != blocks) return -1;
    }
    total = 0;
    for (s = 0; s < ts->depth; s++) {
        ar_stage *S = &t->stages[s];
        S->type = ar_cluster_type_index(c, ts->types[s]);
        S->tp = ts->tp[s];
        S->first = total;
        S->end = total + share[s];
        total = S->end;
        S->ep = 1; S->etp = S->tp; S->edp = ts->replicas;
    }
    for (q = 0; q < ts->replicas; q++)
        for (s = 0; s < ts->depth; s++) {
            const ar_stage *S = &t->stages[s];
            ar_rank *nr;
            for (nd = 0; nd < c->nnodes; nd++)
                if (c->nodes[nd].type == S->type && c->nodes[nd].gpus - used[nd] >= S->tp) break;
            if (nd == c->nnodes) return -1;
            nr = realloc(pl->ranks, sizeof *pl->ranks * (size_t)(pl->nranks + S->tp));
            if (!nr) return -1;
            pl->ranks = nr;
            for (a = 0; a < S->tp; a++) {
                ar_rank *r = &pl->ranks[pl->nranks];
                r->rank = pl->nranks++;
                r->node = nd;
                r->gpu = used[nd]++;
                r->tmpl = pl->ntemplates;
                r->replica = q;
                r->stage = s;
                r->tp_rank = a;
            }
        }
    pl->ntemplates++;
    return 0;
}

/* n repetitions of one measured operation; returns the evaluations done
 * (plans for modes 0 and 1, stages for mode 2). */
static long run(const arachne_cost_model *cm, arachne_plan *pl, ar_stage_place (*place)[AR_MAX_DEPTH], int mode,
                long n, int *st)
{
    long k, evals = 0;
    int j, s;
    for (k = 0; k < n; k++) {
        if (mode == 0) *st |= ar_plan_price(cm, pl);
        else if (mode == 1) *st |= ar_plan_price_placed(cm, pl, (const ar_stage_place (*)[AR_MAX_DEPTH])place);
        else
            for (j = 0; j < pl->ntemplates; j++)
                for (s = 0; s < pl->t[j].depth; s++) {
                    ar_stage out;
                    ar_stage_mem mm;
                    *st |= ar_stage_price(cm, &pl->t[j], s, &place[j][s], &out);
                    *st |= ar_stage_memory(cm, &pl->t[j], s, pl->t[j].replicas, 1, pl->t[j].micro_batches, &mm);
                    evals++;
                }
        if (mode < 2) evals++;
    }
    return evals;
}

int main(void)
{
    static const pspec plans[] = {
        { "h100-only", 1, { { 2, { "H100", "H100" }, { 2, 2 }, 64, 1 } } },
        { "three-types", 3, {
            { 2, { "H100", "H100" }, { 2, 2 }, 64, 1 },
            { 4, { "A100-40", "A100-40", "A100-40", "A100-40" }, { 2, 2, 2, 2 }, 16, 1 },
            { 4, { "A6000", "A6000", "A6000", "A6000" }, { 2, 2, 2, 2 }, 16, 1 } } },
        { "mixed-stages", 2, {
            { 3, { "A6000", "A100-40", "H100" }, { 4, 4, 4 }, 32, 1 },
            { 2, { "H100", "H100" }, { 4, 4 }, 16, 2 } } },
        { "eight-templates", 8, {
            { 2, { "H100", "H100" }, { 2, 2 }, 16, 1 }, { 2, { "H100", "H100" }, { 4, 4 }, 8, 1 },
            { 1, { "H100" }, { 4 }, 16, 1 }, { 4, { "H100", "H100", "H100", "H100" }, { 1, 1, 1, 1 }, 16, 1 },
            { 4, { "A100-40", "A100-40", "A100-40", "A100-40" }, { 2, 2, 2, 2 }, 8, 1 },
            { 4, { "A100-40", "A100-40", "A100-40", "A100-40" }, { 2, 2, 2, 2 }, 8, 2 },
            { 4, { "A6000", "A6000", "A6000", "A6000" }, { 2, 2, 2, 2 }, 8, 1 },
            { 8, { "A6000", "A6000", "A6000", "A6000", "A6000", "A6000", "A6000", "A6000" },
              { 2, 2, 2, 2, 2, 2, 2, 2 }, 4, 1 } } },
    };
    const char *spec = "a100-40:32x4,a6000:32x4,h100:64x4";
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    size_t i;
    int st;
    if ((st = arachne_model_preset(&m, "llama3-8b")) || (st = arachne_cluster_parse(&c, spec)) ||
        (st = arachne_profile_generate(&p, m, c, 4096)) || (st = arachne_cost_model_create(&cm, m, c, p))) {
        fprintf(stderr, "bench_cost: setup: %s\n", arachne_last_error());
        return 1;
    }
    printf("cost model pricing: llama3-8b on %s (median of %d runs)\n", spec, RUNS);
    printf("%-16s %5s %4s %10s %13s %13s %13s\n", "plan", "gpus", "tmpl", "iter_s", "price/s", "placed/s",
           "stage/s");
    for (i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        const pspec *ps = &plans[i];
        arachne_plan pl;
        ar_stage_place place[AR_MAX_TEMPLATES][AR_MAX_DEPTH];
        int used[1024] = { 0 }, j, r, mode;
        double rate[3];
        static const char *const what[3] = { "plan_price", "plan_price_placed", "stage_price_and_memory" };
        memset(&pl, 0, sizeof pl);
        for (j = 0; j < ps->ntemplates; j++)
            if (pack(&pl, c, used, &ps->t[j], m->blocks)) {
                fprintf(stderr, "bench_cost: plan %s: template %d does not pack\n", ps->name, j);
                return 1;
            }
        if ((st = ar_plan_price(cm, &pl)) != ARACHNE_OK) {
            fprintf(stderr, "bench_cost: plan %s: %s\n", ps->name, arachne_last_error());
            return 1;
        }
        for (j = 0; j < pl.ntemplates; j++) ar_template_place(&pl, j, place[j]);
        for (mode = 0; mode < 3; mode++) {
            double per_run[RUNS];
            long n = 64;
            /* calibrate to ~50 ms per run */
            for (;;) {
                double t0 = ar_now();
                run(cm, &pl, place, mode, n, &st);
                if (ar_now() - t0 > 0.05 || n > (1L << 24)) break;
                n *= 2;
            }
            for (r = 0; r < RUNS; r++) {
                double t0 = ar_now();
                long evals = run(cm, &pl, place, mode, n, &st);
                per_run[r] = evals / (ar_now() - t0);
            }
            if (st != ARACHNE_OK) {
                fprintf(stderr, "bench_cost: plan %s: %s\n", ps->name, arachne_last_error());
                return 1;
            }
            qsort(per_run, RUNS, sizeof per_run[0], bench_cmp_double);
            rate[mode] = per_run[RUNS / 2];
        }
        printf("%-16s %5d %4d %10.4f %13.0f %13.0f %13.0f\n", ps->name, pl.gpus_used, pl.ntemplates,
               pl.iteration_s, rate[0], rate[1], rate[2]);
        for (mode = 0; mode < 3; mode++)
            printf("{\"bench\":\"cost\",\"what\":\"%s\",\"plan\":\"%s\",\"model\":\"llama3-8b\",\"cluster\":\"%s\","
                   "\"gpus_used\":%d,\"templates\":%d,\"iteration_s\":%.6g,\"samples_per_s\":%.6g,"
                   "\"median_per_s\":%.6g,\"runs\":%d}\n",
                   what[mode], ps->name, spec, pl.gpus_used, pl.ntemplates,
                   pl.iteration_s, pl.samples_per_s, rate[mode], RUNS);
        free(pl.ranks);
    }
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
    return 0;
}
