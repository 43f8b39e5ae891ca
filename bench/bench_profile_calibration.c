/* bench_profile_calibration.c -- how close the analytic profile generator
 * comes to the measured Sailor profiles.
 *
 * For every measured (model, GPU, TP, micro-batch) cell of GPT-Neo-2.7,
 * OPT-350 and OPT-30, prints the measured forward and backward seconds of
 * one transformer block (median over the blocks, as imported) next to the
 * generated ones (the TP-comm share split half to each pass: two of a
 * block's four collectives are in the forward) and the relative errors of
 * forward, backward and their sum; then per GPU and overall the median and
 * worst |error| of the sum, the median |error| of forward and backward, and
 * the median backward/forward ratio measured and generated; then the same
 * against EVERY measured block entry (each block of each cell, read from
 * profiles.json, not the median).  A table, then JSON lines.
 *
 *   bench_profile_calibration [--fit] [--emax-bound X] [--dir DIR]
 *                             [--precision measured|fp32|tf32|bf16]
 *
 * --precision sets the data type the generator models: "measured" (the
 * default) is what the measurements were taken in (below); fp32 / tf32 use
 * that peak for every cell; bf16 is the generator's library setting (BF16
 * peak, 2-byte elements, FlashAttention, sequence parallelism) -- the error
 * a planner using generated BF16 tables would see against these runs.
 *
 * --fit re-runs the calibration (deterministic random search minimising the
 * mean |log(generated / measured)|, e_max bounded at 0.8 or at X) and reports
 * the errors with the fitted constants instead of the library's.
 *
 * The Sailor runs were not BF16: the achieved FLOP/s show FP32 (V100 and the
 * Turing/GeForce cards, and OPT-30 everywhere) and TF32 (GPT-Neo and OPT-350
 * on A100 and GH200).  The generator is therefore evaluated with the peak of
 * the data type that was used (datasheet values below), 4-byte elements,
 * eager attention (the HF models materialise the seq x seq scores) and no
 * sequence parallelism -- the way the measurements were taken.  Everything
 * else (HBM and link bandwidths, latencies) is the built-in catalog entry. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arachne.h"
#include "bench_stats.h"
#include "json.h"
#include "profile.h"

typedef struct peak { const char *gpu; double tf32, fp32; } peak;
/* Dense FP32 / TF32 tensor peaks (vendor datasheets, FLOP/s). */
static const peak peaks[] = {
    { "A100-40", 156e12, 19.5e12 }, { "A100-80", 156e12, 19.5e12 }, { "GH-96", 494e12, 67e12 },
    { "V100-16", 15.7e12, 15.7e12 }, { "Titan-RTX", 16.3e12, 16.3e12 }, { "RTX-2080Ti", 13.45e12, 13.45e12 },
    { "RTX-3090", 35.6e12, 35.6e12 },
};

typedef struct mspec { const char *name; int blocks, hidden, heads, head_dim, vocab; int fp32_only; } mspec;
static const mspec models[] = {
    { "GPT-Neo-2.7", 32, 2560, 32, 80, 50257, 0 },
    { "OPT-350", 24, 1024, 16, 64, 50272, 0 },
    { "OPT-30", 48, 7168, 56, 128, 50272, 1 },
};
#define NMODELS 3

/* What the generator models (--precision). */
enum { PREC_MEASURED, PREC_FP32, PREC_TF32, PREC_BF16 };
static int precision = PREC_MEASURED;

typedef struct cell {
    int model;
    char gpu[AR_NAME_MAX];
    int tp, mbs;
    double measured, mfwd, mbwd; /* fwd + bwd, fwd, bwd (median over the blocks) */
    ar_gpu_spec spec; /* with the measurement data type's peak */
    arachne_model *m;
    int seq;
} cell;

/* Generated forward and backward seconds of one block of the cell (the TP
 * collectives split half to each pass); returns their sum. */
static double gen_split(const cell *c, const ar_gen_consts *k, double *fwd, double *bwd)
{
    ar_gen_opts o;
    ar_profile_entry e;
    ar_gpu_spec g = c->spec;
    ar_gen_default_opts(&o);
    if (precision != PREC_BF16) {
        o.elt_bytes = 4.0;
        o.eager_attention = 1;
        o.sequence_parallel = 0;
    } else {
        const ar_gpu_spec *cat = ar_gpu_catalog_find(c->gpu);
        if (cat) g.flops = cat->flops;
    }
    if (ar_profile_gen_entry(c->m, &g, AR_LAYER_DENSE, c->tp, c->mbs, c->seq, k, &o, &e) != ARACHNE_OK) {
        if (fwd) *fwd = NAN;
        if (bwd) *bwd = NAN;
        return NAN;
    }
    if (fwd) *fwd = e.fwd_s + 0.5 * e.tp_comm_s;
    if (bwd) *bwd = e.bwd_s + 0.5 * e.tp_comm_s;
    return e.fwd_s + e.bwd_s + e.tp_comm_s;
}

static double gen_cell(const cell *c, const ar_gen_consts *k) { return gen_split(c, k, NULL, NULL); }

static double loss(const cell *cs, int n, const ar_gen_consts *k)
{
    double s = 0;
    int i;
    for (i = 0; i < n; i++) s += fabs(log(gen_cell(&cs[i], k) / cs[i].measured));
    return s / n;
}

static double med(double *v, int n)
{
    return n == 0 ? 0 : bench_median(v, n);
}

/* Deterministic random search over the free constants. */
static void fit(const cell *cs, int n, ar_gen_consts *k, double emax_bound)
{
    double *p[6], lo[6] = { 0.2, 0, 0.05, 0.5, 0, 0 }, hi[6] = { 0.8, 512, 1.0, 4.0, 5e-3, 40 }, step[6];
    double best = loss(cs, n, k);
    ar_rng r;
    int it, j;
    p[0] = &k->e_max; p[1] = &k->m_half; p[2] = &k->comm_eff;
    p[3] = &k->mem_bwd_ratio; p[4] = &k->layer_overhead_s; p[5] = &k->score_passes;
    hi[0] = emax_bound;
    if (k->e_max > emax_bound) k->e_max = emax_bound;
    best = loss(cs, n, k);
    for (j = 0; j < 6; j++) step[j] = (hi[j] - lo[j]) / 10;
    ar_rng_seed(&r, 12345);
    for (it = 0; it < 6000; it++) {
        ar_gen_consts c = *k;
        double *q[6], v, l;
        q[0] = &c.e_max; q[1] = &c.m_half; q[2] = &c.comm_eff;
        q[3] = &c.mem_bwd_ratio; q[4] = &c.layer_overhead_s; q[5] = &c.score_passes;
        j = ar_rng_int(&r, 6);
        v = *q[j] + step[j] * ar_rng_normal(&r);
        *q[j] = v < lo[j] ? lo[j] : v > hi[j] ? hi[j] : v;
        l = loss(cs, n, &c);
        if (l < best) {
            best = l;
            *k = c;
        } else {
            step[j] *= 0.995;
            if (step[j] < (hi[j] - lo[j]) * 1e-4) step[j] = (hi[j] - lo[j]) / 50;
        }
    }
    (void)p;
}

static const char *find_dir(const char *arg)
{
    static char buf[1024];
    const char *c[3];
    struct stat st;
    int i;
    c[0] = arg;
    c[1] = getenv("ARACHNE_SHARED_DATA");
    c[2] = "tests/data/sailor-profiles"; /* vendored (MIT) */
    for (i = 0; i < 3; i++) {
        if (!c[i]) continue;
        snprintf(buf, sizeof buf, "%s/profiles.json", c[i]);
        if (stat(buf, &st) == 0) return c[i];
    }
    return NULL;
}

static const char *prec_name(void)
{
    static const char *const names[] = { "measured", "fp32", "tf32", "bf16" };
    return names[precision];
}

/* Median over the cells of GPU gpu (NULL: all) of column col of all[5i+col]. */
static double med_col(const cell *cs, int n, const double *all, double *tmp, const char *gpu, int col)
{
    int i, m = 0;
    for (i = 0; i < n; i++)
        if (!gpu || strcmp(cs[i].gpu, gpu) == 0) tmp[m++] = col <= 2 ? fabs(all[5 * i + col]) : all[5 * i + col];
    return med(tmp, m);
}

/* st: cells, median |err sum|, worst |err sum|, median |err fwd|, median
 * |err bwd|, median measured bwd/fwd. */
static void summarize(const cell *cs, int n, const double *all, double *tmp, const char *gpu, double st[6])
{
    int i, m = 0;
    double worst = 0;
    for (i = 0; i < n; i++)
        if (!gpu || strcmp(cs[i].gpu, gpu) == 0) {
            m++;
            if (fabs(all[5 * i]) > worst) worst = fabs(all[5 * i]);
        }
    st[0] = m;
    st[1] = med_col(cs, n, all, tmp, gpu, 0);
    st[2] = worst;
    st[3] = med_col(cs, n, all, tmp, gpu, 1);
    st[4] = med_col(cs, n, all, tmp, gpu, 2);
    st[5] = med_col(cs, n, all, tmp, gpu, 3);
}

typedef struct entry_stats { long count; double med_sum, med_fwd, med_bwd; } entry_stats;

/* The errors against every block entry of every imported cell: profiles.json
 * read again, blocks 1..L of each cell (L from the model), each compared
 * with the generated block of its cell.  0 on success. */
static int every_entry(const char *dir, const cell *cs, int n, const ar_gen_consts *k, entry_stats *es)
{
    char path[1100], key[24];
    ar_json *root = NULL;
    double *es_sum, *es_f, *es_b;
    long cap = 0, m = 0;
    int i, b;
    memset(es, 0, sizeof *es);
    snprintf(path, sizeof path, "%s/profiles.json", dir);
    if (ar_json_parse_file(&root, path) != ARACHNE_OK) return -1;
    for (i = 0; i < n; i++) cap += models[cs[i].model].blocks;
    es_sum = malloc((size_t)cap * sizeof *es_sum);
    es_f = malloc((size_t)cap * sizeof *es_f);
    es_b = malloc((size_t)cap * sizeof *es_b);
    if (!es_sum || !es_f || !es_b) { free(es_sum); free(es_f); free(es_b); ar_json_free(root); return -1; }
    for (i = 0; i < n; i++) {
        const ar_json *v = ar_json_get(root, models[cs[i].model].name);
        double gf, gb;
        snprintf(key, sizeof key, "%d", cs[i].mbs);
        /* the file's GPU key is Sailor's name, which the catalog resolves */
        if (v) {
            const ar_json *gv = NULL;
            size_t q;
            for (q = 0; q < v->count; q++) {
                const ar_gpu_spec *g = ar_gpu_catalog_find(v->keys[q]);
                if (g && strcmp(g->name, cs[i].gpu) == 0) gv = v->items[q];
            }
            v = gv;
        }
        if (v) v = ar_json_get(v, key);
        snprintf(key, sizeof key, "%d", cs[i].tp);
        if (v) v = ar_json_get(v, key);
        if (!v) continue;
        gen_split(&cs[i], k, &gf, &gb);
        for (b = 1; b <= models[cs[i].model].blocks; b++) {
            const ar_json *e;
            snprintf(key, sizeof key, "%d", b);
            e = ar_json_get(v, key);
            if (!e || e->type != AR_JSON_ARRAY || e->count < 2) continue;
            es_f[m] = fabs(gf / e->items[0]->number - 1.0);
            es_b[m] = fabs(gb / e->items[1]->number - 1.0);
            es_sum[m] = fabs((gf + gb) / (e->items[0]->number + e->items[1]->number) - 1.0);
            m++;
        }
    }
    es->count = m;
    es->med_sum = med(es_sum, (int)m);
    es->med_fwd = med(es_f, (int)m);
    es->med_bwd = med(es_b, (int)m);
    free(es_sum);
    free(es_f);
    free(es_b);
    ar_json_free(root);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir_arg = NULL, *dir;
    int do_fit = 0, i, j, n = 0, cap = 0, mi;
    double emax_bound = 0.8;
    cell *cs = NULL;
    arachne_model *ms[NMODELS] = { NULL, NULL, NULL };
    ar_gen_consts k = ar_gen_default_consts;
    double *errs, *all;
    const char *gpus[16];
    int ngpus = 0;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fit") == 0) do_fit = 1;
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir_arg = argv[++i];
        else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc) {
            static const char *const names[] = { "measured", "fp32", "tf32", "bf16" };
            const char *v = argv[++i];
            for (precision = 0; precision < 4 && strcmp(v, names[precision]) != 0; precision++) {}
            if (precision == 4) {
                fprintf(stderr, "bench_profile_calibration: --precision: measured, fp32, tf32 or bf16\n");
                return 2;
            }
        }
        else if (strcmp(argv[i], "--emax-bound") == 0 && i + 1 < argc) {
            emax_bound = atof(argv[++i]);
            if (!(emax_bound >= 0.2 && emax_bound <= 1.0)) {
                fprintf(stderr, "bench_profile_calibration: --emax-bound must be in [0.2, 1]\n");
                return 2;
            }
        }
        else {
            fprintf(stderr, "usage: bench_profile_calibration [--fit] [--emax-bound X] [--dir DIR] "
                            "[--precision measured|fp32|tf32|bf16]\n");
            return 2;
        }
    }
    dir = find_dir(dir_arg);
    if (!dir) {
        printf("bench_profile_calibration: measured profiles not found (run from the repository root, or "
               "give --dir / ARACHNE_SHARED_DATA); skipped\n");
        return 0;
    }
    for (mi = 0; mi < NMODELS; mi++) {
        arachne_model spec;
        arachne_profile *p = NULL;
        int cnt, seq;
        memset(&spec, 0, sizeof spec);
        snprintf(spec.name, sizeof spec.name, "%s", models[mi].name);
        spec.blocks = models[mi].blocks;
        spec.hidden = models[mi].hidden;
        spec.heads = spec.kv_heads = models[mi].heads;
        spec.head_dim = models[mi].head_dim;
        spec.ffn = 4 * models[mi].hidden;
        spec.vocab = models[mi].vocab;
        spec.gated_mlp = 0;
        spec.tied_embeddings = 1;
        if (ar_model_create(&ms[mi], &spec) != ARACHNE_OK ||
            arachne_profile_import_sailor(&p, dir, models[mi].name) != ARACHNE_OK) {
            fprintf(stderr, "bench_profile_calibration: %s\n", arachne_last_error());
            return 1;
        }
        arachne_profile_count(p, &cnt);
        arachne_profile_seq_len(p, &seq);
        for (j = 0; j < cnt; j++) {
            const char *gpu;
            int kind, tp, mbs, q;
            double f, b;
            const ar_gpu_spec *g;
            cell *c;
            arachne_profile_entry(p, j, &gpu, &kind, &tp, &mbs, &f, &b, NULL, NULL);
            if (kind != ARACHNE_LAYER_DENSE) continue;
            g = ar_gpu_catalog_find(gpu);
            if (!g) {
                fprintf(stderr, "bench_profile_calibration: GPU '%s' is not in the catalog\n", gpu);
                return 1;
            }
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                cs = realloc(cs, (size_t)cap * sizeof *cs);
                if (!cs) return 1;
            }
            c = &cs[n++];
            memset(c, 0, sizeof *c);
            c->model = mi;
            snprintf(c->gpu, sizeof c->gpu, "%s", g->name);
            c->tp = tp;
            c->mbs = mbs;
            c->measured = f + b;
            c->mfwd = f;
            c->mbwd = b;
            c->spec = *g;
            c->m = ms[mi];
            c->seq = seq;
            for (q = 0; q < (int)(sizeof peaks / sizeof peaks[0]); q++)
                if (strcmp(peaks[q].gpu, g->name) == 0)
                    c->spec.flops = precision == PREC_FP32 ? peaks[q].fp32
                                    : precision == PREC_TF32 ? peaks[q].tf32
                                    : models[mi].fp32_only ? peaks[q].fp32 : peaks[q].tf32;
            for (q = 0; q < ngpus && strcmp(gpus[q], g->name) != 0; q++) {}
            if (q == ngpus && ngpus < 16) gpus[ngpus++] = g->name;
        }
        arachne_profile_destroy(p);
    }
    if (do_fit) fit(cs, n, &k, emax_bound);

    printf("constants%s: e_max %.4f  m_half %.2f  hbm_eff %.2f  comm_eff %.4f  mem_bwd_ratio %.4f  "
           "layer_overhead_s %.3e  score_passes %.3f  (mean |log err| %.4f)\n",
           do_fit ? " (fitted)" : " (library)", k.e_max, k.m_half, k.hbm_eff, k.comm_eff, k.mem_bwd_ratio,
           k.layer_overhead_s, k.score_passes, loss(cs, n, &k));
    printf("precision modelled: %s\n", precision == PREC_MEASURED ? "as measured (TF32 / FP32 peaks, 4-byte elements, "
                                                                  "eager attention, no sequence parallelism)"
                                      : precision == PREC_FP32 ? "FP32 peak for every cell (4-byte elements, eager)"
                                      : precision == PREC_TF32 ? "TF32 peak for every cell (4-byte elements, eager)"
                                                               : "BF16 (the library's generator settings)");
    printf("%-12s %-10s %3s %4s %9s %9s %9s %9s %8s %8s %8s\n", "model", "gpu", "tp", "mbs", "meas_fwd", "meas_bwd",
           "gen_fwd", "gen_bwd", "err_fwd", "err_bwd", "err_sum");
    errs = malloc((size_t)n * sizeof *errs);
    all = malloc((size_t)n * 5 * sizeof *all);
    if (!errs || !all) return 1;
    /* all[5i ..]: error of the sum, of fwd, of bwd; measured and generated bwd/fwd */
    for (i = 0; i < n; i++) {
        double gf, gb, gsec = gen_split(&cs[i], &k, &gf, &gb);
        all[5 * i] = gsec / cs[i].measured - 1.0;
        all[5 * i + 1] = gf / cs[i].mfwd - 1.0;
        all[5 * i + 2] = gb / cs[i].mbwd - 1.0;
        all[5 * i + 3] = cs[i].mbwd / cs[i].mfwd;
        all[5 * i + 4] = gb / gf;
        printf("%-12s %-10s %3d %4d %9.3f %9.3f %9.3f %9.3f %+7.1f%% %+7.1f%% %+7.1f%%\n", models[cs[i].model].name,
               cs[i].gpu, cs[i].tp, cs[i].mbs, cs[i].mfwd * 1e3, cs[i].mbwd * 1e3, gf * 1e3, gb * 1e3,
               100 * all[5 * i + 1], 100 * all[5 * i + 2], 100 * all[5 * i]);
    }
    printf("\n(times in ms; per cell: the median block)\n%-12s %5s %9s %9s %9s %9s %9s %9s\n", "gpu", "cells",
           "med|sum|", "worst|sum|", "med|fwd|", "med|bwd|", "bwd/fwd", "gen b/f");
    for (j = 0; j <= ngpus; j++) {
        double st[6];
        summarize(cs, n, all, errs, j == ngpus ? NULL : gpus[j], st);
        printf("%-12s %5.0f %8.1f%% %8.1f%% %8.1f%% %8.1f%% %9.2f %9.2f\n", j == ngpus ? "overall" : gpus[j], st[0],
               100 * st[1], 100 * st[2], 100 * st[3], 100 * st[4], st[5], med_col(cs, n, all, errs, j == ngpus ? NULL : gpus[j], 4));
    }
    {
        entry_stats es;
        if (every_entry(dir, cs, n, &k, &es) == 0)
            printf("\nevery measured block entry (each block of each cell, %ld entries): median |error| sum %.1f%%, "
                   "fwd %.1f%%, bwd %.1f%%\n", es.count, 100 * es.med_sum, 100 * es.med_fwd, 100 * es.med_bwd);
        for (i = 0; i < n; i++)
            printf("{\"bench\":\"profile_calibration\",\"model\":\"%s\",\"gpu\":\"%s\",\"tp\":%d,\"mbs\":%d,"
                   "\"measured_fwd_s\":%.6g,\"measured_bwd_s\":%.6g,\"generated_fwd_s\":%.6g,"
                   "\"generated_bwd_s\":%.6g,\"rel_error\":%.4f,\"rel_error_fwd\":%.4f,\"rel_error_bwd\":%.4f}\n",
                   models[cs[i].model].name, cs[i].gpu, cs[i].tp, cs[i].mbs, cs[i].mfwd, cs[i].mbwd,
                   cs[i].mfwd * (1 + all[5 * i + 1]), cs[i].mbwd * (1 + all[5 * i + 2]), all[5 * i], all[5 * i + 1],
                   all[5 * i + 2]);
        for (j = 0; j <= ngpus; j++) {
            double st[6];
            summarize(cs, n, all, errs, j == ngpus ? NULL : gpus[j], st);
            printf("{\"bench\":\"profile_calibration\",\"summary\":\"%s\",\"precision\":\"%s\",\"cells\":%.0f,"
                   "\"median_abs_error\":%.4f,\"worst_abs_error\":%.4f,\"median_abs_error_fwd\":%.4f,"
                   "\"median_abs_error_bwd\":%.4f,\"median_bwd_over_fwd\":%.3f}\n",
                   j == ngpus ? "overall" : gpus[j], prec_name(), st[0], st[1], st[2], st[3], st[4], st[5]);
        }
        if (es.count > 0)
            printf("{\"bench\":\"profile_calibration\",\"summary\":\"every_block_entry\",\"precision\":\"%s\","
                   "\"entries\":%ld,\"median_abs_error\":%.4f,\"median_abs_error_fwd\":%.4f,"
                   "\"median_abs_error_bwd\":%.4f}\n", prec_name(), es.count, es.med_sum, es.med_fwd, es.med_bwd);
    }
    free(errs);
    free(all);
    free(cs);
    for (mi = 0; mi < NMODELS; mi++) arachne_model_destroy(ms[mi]);
    return 0;
}
