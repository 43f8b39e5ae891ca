/* bench_search_efficiency.c -- best throughput found versus plan
 * evaluations on one composition, for
 *   structured  the structured policy trained online from scratch on this
 *               one composition (arachne_trainer_*, evaluations as the
 *               trainer counts them: templates placed + lookahead fills),
 *   flat        the flat policy over the raw knobs trained the same way
 *               (src/flat.h; every completed template is one evaluation),
 *   random      random search over the structured construction, counted
 *               like the trainer (ar_eval_random: templates placed +
 *               lookahead fills).
 * Prints a table at fixed evaluation checkpoints (median over seeds), the
 * evaluations each method needs to reach 90 / 95 / 99 % of the best plan
 * any method found, JSON lines, and with --svg an SVG curve.
 * docs/search-efficiency.svg comes from
 *   bench_search_efficiency --budget 16384 --seeds 3 --svg docs/search-efficiency.svg
 * Usage: bench_search_efficiency [--budget N] [--seeds K] [--group G]
 *                                [--model M] [--cluster SPEC] [--svg FILE] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "bench_stats.h"
#include "eval.h"
#include "flat.h"
#include "util.h"

#define MAXREC 100000
#define NMETH 3

static const char *meth_name[NMETH] = { "structured", "flat", "random" };
static const char *meth_color[NMETH] = { "#1f77b4", "#d62728", "#7f7f7f" };

typedef struct curve {
    int n;
    long ev[MAXREC];
    double best[MAXREC];
} curve;

static curve curves[NMETH][16];

static void rec(curve *c, long ev, double best)
{
    if (c->n > 0 && best < c->best[c->n - 1]) best = c->best[c->n - 1];
    if (c->n < MAXREC) { c->ev[c->n] = ev; c->best[c->n] = best; c->n++; }
}

/* Best at or before `ev` evaluations (0 when nothing yet). */
static double best_at(const curve *c, long ev)
{
    double b = 0.0;
    int i;
    for (i = 0; i < c->n && c->ev[i] <= ev; i++) b = c->best[i];
    return b;
}

/* First evaluation count at which the curve reaches `target` (-1: never). */
static long reach(const curve *c, double target)
{
    int i;
    for (i = 0; i < c->n; i++) if (c->best[i] >= target) return c->ev[i];
    return -1;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

typedef struct flat_user { curve *c; } flat_user;

static int flat_cb(void *user, long evals, int comp, double best, double mean)
{
    (void)comp; (void)mean;
    rec(((flat_user *)user)->c, evals, best);
    return 0;
}

static int run_structured(const arachne_cost_model *cm, uint64_t seed, long budget, int group, curve *c)
{
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    double ev = 0, best = 0;
    int st, u = 0;
    if ((st = arachne_policy_create(&pol, seed, 0, 0))) return st;
    if ((st = arachne_trainer_create(&t, pol, seed)) || (st = arachne_trainer_add_composition(t, cm, "bench")) ||
        (st = arachne_trainer_set(t, ARACHNE_TRAIN_GROUP_SIZE, group)) ||
        (st = arachne_trainer_set(t, ARACHNE_TRAIN_UPDATES, 30)))
        goto done;
    while (ev < budget && u < 100000) {
        if ((st = arachne_trainer_run(t, 1, NULL, NULL))) goto done;
        u++;
        arachne_trainer_get(t, 0, ARACHNE_TRAIN_EVALUATIONS, &ev);
        arachne_trainer_get(t, 0, ARACHNE_TRAIN_BEST_ITER_PER_S, &best);
        rec(c, (long)ev, best);
    }
done:
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    return st;
}

static int run_flat(const arachne_cost_model *cm, uint64_t seed, long budget, int group, curve *c)
{
    ar_flat *f = NULL;
    ar_flat_train_opts o;
    ar_flat_train_stats S;
    flat_user fu;
    int st;
    if ((st = ar_flat_create(&f, seed, 0, 0))) return st;
    ar_flat_train_opts_default(&o);
    o.evaluations = budget;
    o.group = group;
    o.epochs = 3; /* the trainer's default PPO epochs */
    o.seed = seed;
    fu.c = c;
    o.progress = flat_cb;
    o.user = &fu;
    st = ar_flat_train(f, &cm, 1, &o, &S);
    ar_flat_destroy(f);
    return st;
}

static void random_cb(void *user, long evals, double best) { rec((curve *)user, evals, best); }

static int run_random(const arachne_cost_model *cm, uint64_t seed, long budget, curve *c)
{
    arachne_plan *p = NULL;
    int st = ar_eval_random(&p, cm, budget, seed, 0.0, random_cb, c);
    arachne_plan_destroy(p);
    return st == ARACHNE_E_INFEASIBLE ? ARACHNE_OK : st;
}

static void write_svg(const char *path, const char *title, const long *cps, int ncp, double med[NMETH][64],
                      double ymax)
{
    ar_buf b;
    const double W = 760, H = 440, L = 70, R = 150, T = 40, B = 50;
    double x0 = log2((double)cps[0]), x1 = log2((double)cps[ncp - 1]);
    int m, i, k;
    ar_buf_init(&b);
    ar_buf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    ar_buf_printf(&b, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
    ar_buf_printf(&b, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">Best plan found vs plan evaluations: %s</text>\n", L,
                  title);
    /* axes */
    ar_buf_printf(&b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
    ar_buf_printf(&b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T, L, H - B);
    for (i = 0; i < ncp; i++) {
        double x = L + (log2((double)cps[i]) - x0) / (x1 - x0) * (W - R - L);
        ar_buf_printf(&b, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n", x, T, x, H - B);
        ar_buf_printf(&b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%ld</text>\n", x, H - B + 16, cps[i]);
    }
    for (k = 0; k <= 5; k++) {
        double v = ymax * k / 5.0, y = H - B - v / ymax * (H - B - T);
        ar_buf_printf(&b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", L, y, W - R, y);
        ar_buf_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", L - 6, y + 4, v);
    }
    ar_buf_printf(&b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">plan evaluations (log scale)</text>\n",
                  (L + W - R) / 2, H - 12);
    ar_buf_printf(&b, "<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\">"
                      "best iterations / s</text>\n", (T + H - B) / 2, (T + H - B) / 2);
    for (m = 0; m < NMETH; m++) {
        int started = 0;
        ar_buf_printf(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", meth_color[m]);
        for (i = 0; i < ncp; i++) {
            double x = L + (log2((double)cps[i]) - x0) / (x1 - x0) * (W - R - L);
            double y = H - B - med[m][i] / ymax * (H - B - T);
            if (med[m][i] <= 0 && !started) continue;
            started = 1;
            ar_buf_printf(&b, "%.1f,%.1f ", x, y);
        }
        ar_buf_puts(&b, "\"/>\n");
        for (i = 0; i < ncp; i++) {
            double x = L + (log2((double)cps[i]) - x0) / (x1 - x0) * (W - R - L);
            double y = H - B - med[m][i] / ymax * (H - B - T);
            if (med[m][i] <= 0) continue;
            ar_buf_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x, y, meth_color[m]);
        }
        ar_buf_printf(&b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                      W - R + 12, T + 10 + 18.0 * m, W - R + 36, T + 10 + 18.0 * m, meth_color[m]);
        ar_buf_printf(&b, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", W - R + 42, T + 14 + 18.0 * m, meth_name[m]);
    }
    ar_buf_puts(&b, "</svg>\n");
    if (ar_buf_status(&b) == ARACHNE_OK && ar_write_file_atomic(path, b.data, b.len) == ARACHNE_OK)
        printf("wrote %s\n", path);
    else
        fprintf(stderr, "bench_search_efficiency: could not write %s: %s\n", path, arachne_last_error());
    ar_buf_free(&b);
}

int main(int argc, char **argv)
{
    const char *model = "llama3-8b", *spec = "a100-40:4x4,a6000:4x4,h100:8x4", *svg = NULL;
    long budget = 4096, cps[64];
    int seeds = 1, group = 8, i, m, s, ncp = 0, st;
    double med[NMETH][64], overall = 0.0, t0;
    arachne_model *mo = NULL;
    arachne_cluster *cl = NULL;
    arachne_profile *pr = NULL;
    arachne_cost_model *cm = NULL;
    char title[256];

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--budget") && i + 1 < argc) budget = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--group") && i + 1 < argc) group = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--cluster") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--svg") && i + 1 < argc) svg = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--budget N] [--seeds K] [--group G] [--model M] [--cluster SPEC] [--svg FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    if (budget < 32) budget = 32;
    if (seeds < 1) seeds = 1;
    if (seeds > 16) seeds = 16;
    if (group < 2) group = 2;
    for (i = 32; i < budget && ncp < 63; i *= 2) cps[ncp++] = i;
    cps[ncp++] = budget;

    if ((st = arachne_model_open(&mo, model)) || (st = arachne_cluster_parse(&cl, spec)) ||
        (st = arachne_profile_generate(&pr, mo, cl, 4096)) || (st = arachne_cost_model_create(&cm, mo, cl, pr))) {
        fprintf(stderr, "bench_search_efficiency: %s\n", arachne_last_error());
        return 1;
    }
    snprintf(title, sizeof title, "%s on %s", model, spec);
    printf("search efficiency: %s, budget %ld evaluations, %d seed(s), groups of %d\n", title, budget, seeds, group);
    for (s = 0; s < seeds; s++) {
        uint64_t seed = (uint64_t)s + 1;
        t0 = ar_now();
        if ((st = run_structured(cm, seed, budget, group, &curves[0][s]))) {
            fprintf(stderr, "bench_search_efficiency: structured: %s\n", arachne_last_error());
            return 1;
        }
        printf("  seed %d structured: %.1f s\n", s + 1, ar_now() - t0);
        t0 = ar_now();
        if ((st = run_flat(cm, seed, budget, group, &curves[1][s]))) {
            fprintf(stderr, "bench_search_efficiency: flat: %s\n", arachne_last_error());
            return 1;
        }
        printf("  seed %d flat: %.1f s\n", s + 1, ar_now() - t0);
        t0 = ar_now();
        if ((st = run_random(cm, seed, budget, &curves[2][s]))) {
            fprintf(stderr, "bench_search_efficiency: random: %s\n", arachne_last_error());
            return 1;
        }
        printf("  seed %d random: %.1f s\n", s + 1, ar_now() - t0);
    }
    for (m = 0; m < NMETH; m++)
        for (i = 0; i < ncp; i++) {
            double v[16];
            for (s = 0; s < seeds; s++) v[s] = best_at(&curves[m][s], cps[i]);
            med[m][i] = bench_median(v, seeds);
            if (med[m][i] > overall) overall = med[m][i];
        }
    printf("\n%-12s", "evaluations");
    for (m = 0; m < NMETH; m++) printf(" %14s", meth_name[m]);
    printf("   (median best iter/s over seeds; 0 = nothing priced yet)\n");
    for (i = 0; i < ncp; i++) {
        printf("%-12ld", cps[i]);
        for (m = 0; m < NMETH; m++) printf(" %14.5f", med[m][i]);
        printf("\n");
    }
    for (i = 0; i < ncp; i++)
        for (m = 0; m < NMETH; m++)
            printf("{\"bench\":\"search_efficiency\",\"model\":\"%s\",\"cluster\":\"%s\",\"method\":\"%s\","
                   "\"evaluations\":%ld,\"best_iter_per_s\":%.6g,\"seeds\":%d}\n",
                   model, spec, meth_name[m], cps[i], med[m][i], seeds);
    {
        static const double fr[3] = { 0.90, 0.95, 0.99 };
        long rv[3][NMETH];
        int f;
        for (f = 0; f < 3; f++)
            for (m = 0; m < NMETH; m++) {
                long v[16];
                for (s = 0; s < seeds; s++) {
                    v[s] = reach(&curves[m][s], fr[f] * overall);
                    if (v[s] < 0) v[s] = 1L << 40;
                }
                qsort(v, (size_t)seeds, sizeof *v, cmp_long);
                rv[f][m] = v[seeds / 2] >= 1L << 40 ? -1L : v[seeds / 2];
            }
        printf("\nevaluations to reach a fraction of the best plan found (%.5f iter/s), median over seeds:\n", overall);
        printf("%-12s", "fraction");
        for (m = 0; m < NMETH; m++) printf(" %14s", meth_name[m]);
        printf("\n");
        for (f = 0; f < 3; f++) {
            printf("%-12.2f", fr[f]);
            for (m = 0; m < NMETH; m++) {
                if (rv[f][m] < 0) printf(" %14s", "not reached");
                else printf(" %14ld", rv[f][m]);
            }
            printf("\n");
        }
        for (f = 0; f < 3; f++)
            for (m = 0; m < NMETH; m++)
                printf("{\"bench\":\"search_efficiency\",\"method\":\"%s\",\"reach_fraction\":%.2f,"
                       "\"best_iter_per_s\":%.6g,\"evaluations\":%ld}\n", meth_name[m], fr[f], overall, rv[f][m]);
    }
    if (svg) write_svg(svg, title, cps, ncp, med, overall > 0 ? overall * 1.1 : 1.0);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(pr);
    arachne_cluster_destroy(cl);
    arachne_model_destroy(mo);
    return 0;
}
