/* bench_profile_measured.c -- the analytic profile generator against layer
 * times measured on a real GPU (examples/profile/profile_layers.py) and
 * against measured BF16 matrix products (examples/profile/gemm_efficiency.py).
 *
 *   bench_profile_measured [--dir DIR]
 *
 * DIR (default tests/data/h200-measured) holds arachne-profile files, one
 * per model, optionally gemm-*.jsonl files, and in DIR/models the model
 * files of the measurements that were not of a preset.  For every measured entry it
 * generates the same key -- same GPU type from the catalog, same model
 * preset, TP, micro-batch and sequence length -- with the library's
 * constants, twice: as the library prices a plan (fused element-wise
 * kernels) and with the generator's eager element-wise option, which is how
 * profile_layers.py runs its layers (plain PyTorch, no torch.compile).  It
 * prints per entry the measured forward and backward times and the ratio
 * generated / measured of their sum (both ways) and of the kept activation
 * bytes; per file and layer kind the median, smallest and largest ratio; and
 * per measured GEMM the generator's roofline time for the same shape
 * (ar_profile_gen_gemm_s) against the measured one.  A table, then JSON
 * lines.  Nothing is fitted here: these measurements are reported beside the
 * calibration set (docs/cost-model.md), not used to set constants. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "bench_stats.h"
#include "cluster.h"
#include "json.h"
#include "profile.h"

#define MAX_FILES 32
#define MAX_ROWS 4096

typedef struct row {
    int file, kind, mbs;
    double mf, mb, ma;     /* measured fwd s, bwd s, act bytes */
    double gf, gb, ga;     /* generated (fused element-wise) */
    double ef, eb;         /* generated, eager element-wise */
} row;

static char files[MAX_FILES][256];
static int nfiles;
static row rows[MAX_ROWS];
static int nrows;

static int by_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* The names in dir ending in suffix, sorted (so the output is the same on
 * every file system). */
static int list_dir(const char *dir, const char *suffix, char names[][256], int cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    size_t ls = strlen(suffix);
    if (!d) return -1;
    while ((e = readdir(d)) != NULL && n < cap) {
        size_t l = strlen(e->d_name);
        if (l > ls && l < 256 && strcmp(e->d_name + l - ls, suffix) == 0) snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    return n;
}

/* Loads dir/name and appends one row per entry.  0 on success. */
static int load_profile(const char *dir, int fi)
{
    char path[600];
    arachne_profile *p = NULL;
    arachne_model *m = NULL;
    const char *model;
    int cnt, seq, j;
    ar_gen_opts eager;
    snprintf(path, sizeof path, "%s/%s", dir, files[fi]);
    if (arachne_profile_load(&p, path) != ARACHNE_OK || arachne_profile_model_name(p, &model) != ARACHNE_OK) {
        fprintf(stderr, "bench_profile_measured: %s: %s\n", path, arachne_last_error());
        arachne_profile_destroy(p);
        return -1;
    }
    /* the model: DIR/models/NAME.json where the measurement used a model
     * file (MLA ranks, custom shapes), else the preset of that name */
    {
        char mpath[700];
        FILE *mf;
        snprintf(mpath, sizeof mpath, "%s/models/%s.json", dir, model);
        mf = fopen(mpath, "r");
        if (mf) fclose(mf);
        if ((mf ? arachne_model_load(&m, mpath) : arachne_model_preset(&m, model)) != ARACHNE_OK) {
            fprintf(stderr, "bench_profile_measured: %s: model %s: %s\n", path, model, arachne_last_error());
            arachne_profile_destroy(p);
            return -1;
        }
    }
    ar_gen_default_opts(&eager);
    eager.eager_elementwise = 1;
    arachne_profile_count(p, &cnt);
    arachne_profile_seq_len(p, &seq);
    for (j = 0; j < cnt && nrows < MAX_ROWS; j++) {
        const char *gpu;
        int kind, tp, mbs;
        double f, b, comm, act;
        ar_profile_entry g, e;
        const ar_gpu_spec *spec;
        row *r;
        arachne_profile_entry(p, j, &gpu, &kind, &tp, &mbs, &f, &b, &comm, &act);
        spec = ar_gpu_catalog_find(gpu);
        if (!spec || ar_profile_gen_entry(m, spec, kind, tp, mbs, seq, NULL, NULL, &g) != ARACHNE_OK ||
            ar_profile_gen_entry(m, spec, kind, tp, mbs, seq, NULL, &eager, &e) != ARACHNE_OK) {
            fprintf(stderr, "bench_profile_measured: %s: entry %d (%s): %s\n", path, j, gpu,
                    spec ? arachne_last_error() : "GPU type not in the catalog");
            arachne_model_destroy(m);
            arachne_profile_destroy(p);
            return -1;
        }
        r = &rows[nrows++];
        r->file = fi;
        r->kind = kind;
        r->mbs = mbs;
        r->mf = f + comm / 2;
        r->mb = b + comm / 2;
        r->ma = act;
        r->gf = g.fwd_s + g.tp_comm_s / 2;
        r->gb = g.bwd_s + g.tp_comm_s / 2;
        r->ga = g.act_bytes;
        r->ef = e.fwd_s + e.tp_comm_s / 2;
        r->eb = e.bwd_s + e.tp_comm_s / 2;
    }
    arachne_model_destroy(m);
    arachne_profile_destroy(p);
    return 0;
}

static const char *label(int fi, char *buf, size_t cap)
{
    size_t l = strlen(files[fi]);
    snprintf(buf, cap, "%.*s", (int)(l > 5 ? l - 5 : l), files[fi]);
    return buf;
}

/* Median, smallest and largest of gen/meas of the sum over the rows of file
 * fi (-1: all) and kind (-1: every block kind), `eager` picking the variant.
 * Returns the number of rows. */
static int ratios(int fi, int kind, int eager, double st[3])
{
    static double v[MAX_ROWS];
    int i, n = 0;
    for (i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        if ((fi >= 0 && r->file != fi) || (kind >= 0 && r->kind != kind) ||
            (kind < 0 && r->kind != ARACHNE_LAYER_DENSE && r->kind != ARACHNE_LAYER_MOE))
            continue;
        v[n++] = ((eager ? r->ef + r->eb : r->gf + r->gb)) / (r->mf + r->mb);
    }
    if (n == 0) return 0;
    st[0] = bench_median(v, n);
    st[1] = v[0];
    st[2] = v[n - 1];
    return n;
}

static void profiles_table(void)
{
    char lb[256];
    int i, fi, kind;
    printf("%-32s %-5s %4s %9s %9s %9s %9s %9s %9s\n", "profile", "kind", "mbs", "meas_fwd", "meas_bwd", "gen_fwd",
           "gen_bwd", "gen/meas", "eager/m");
    for (i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        printf("%-32s %-5s %4d %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", label(r->file, lb, sizeof lb),
               ar_layer_kind_name(r->kind), r->mbs, 1e3 * r->mf, 1e3 * r->mb, 1e3 * r->gf, 1e3 * r->gb,
               (r->gf + r->gb) / (r->mf + r->mb), (r->ef + r->eb) / (r->mf + r->mb));
    }
    printf("\n(times in ms; ratios of forward + backward, generated / measured)\n");
    printf("%-32s %-5s %4s %9s %9s %9s %9s %9s\n", "profile", "kind", "rows", "median", "min", "max", "eager_med",
           "act_med");
    for (fi = 0; fi < nfiles; fi++)
        for (kind = 0; kind < 4; kind++) {
            double st[3], es[3], a[64];
            int n = ratios(fi, kind, 0, st), na = 0;
            if (n == 0) continue;
            ratios(fi, kind, 1, es);
            for (i = 0; i < nrows && na < 64; i++)
                if (rows[i].file == fi && rows[i].kind == kind && rows[i].ma > 0) a[na++] = rows[i].ga / rows[i].ma;
            printf("%-32s %-5s %4d %9.3f %9.3f %9.3f %9.3f", label(fi, lb, sizeof lb), ar_layer_kind_name(kind), n,
                   st[0], st[1], st[2], es[0]);
            if (na) printf(" %9.3f\n", bench_median(a, na));
            else printf(" %9s\n", "-");
        }
}

static void profiles_json(void)
{
    char lb[256];
    int i, fi, kind;
    for (i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        printf("{\"bench\":\"profile_measured\",\"profile\":\"%s\",\"kind\":\"%s\",\"mbs\":%d,"
               "\"measured_fwd_s\":%.6g,\"measured_bwd_s\":%.6g,\"generated_fwd_s\":%.6g,\"generated_bwd_s\":%.6g,"
               "\"eager_fwd_s\":%.6g,\"eager_bwd_s\":%.6g,\"measured_act_bytes\":%.6g,\"generated_act_bytes\":%.6g}\n",
               label(r->file, lb, sizeof lb), ar_layer_kind_name(r->kind), r->mbs, r->mf, r->mb, r->gf, r->gb,
               r->ef, r->eb, r->ma, r->ga);
    }
    for (fi = 0; fi < nfiles; fi++)
        for (kind = 0; kind < 4; kind++) {
            double st[3], es[3];
            int n = ratios(fi, kind, 0, st);
            if (n == 0) continue;
            ratios(fi, kind, 1, es);
            printf("{\"bench\":\"profile_measured\",\"summary\":\"%s\",\"kind\":\"%s\",\"rows\":%d,"
                   "\"median_ratio\":%.4f,\"min_ratio\":%.4f,\"max_ratio\":%.4f,\"median_ratio_eager\":%.4f}\n",
                   label(fi, lb, sizeof lb), ar_layer_kind_name(kind), n, st[0], st[1], st[2], es[0]);
        }
}

/* One measured GEMM per line of dir/name: the generator's time for the
 * shape next to it.  Returns the number of lines compared, -1 on error. */
static int gemm_file(const char *dir, const char *name, int json)
{
    char path[600], line[2048];
    FILE *f;
    int n = 0, ln = 0;
    double big[256], small[256];
    int nb = 0, ns = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "r");
    if (!f) return -1;
    if (!json)
        printf("\n%-26s %6s %6s %6s %9s %9s %9s %8s %8s %9s\n", "gemm (measured)", "M", "N", "K", "alone_us",
               "meas_us", "gen_us", "meas/pk", "gen/pk", "gen/meas");
    while (fgets(line, sizeof line, f)) {
        ar_json *v = NULL;
        const char *shape = NULL, *gpu = NULL;
        double m, nn, k, s, r, alone = 0;
        const ar_gpu_spec *spec;
        ln++;
        if (ar_json_parse(&v, line, strlen(line), path) != ARACHNE_OK ||
            ar_json_str(v, "shape", 1, &shape) != ARACHNE_OK || ar_json_str(v, "gpu", 1, &gpu) != ARACHNE_OK ||
            ar_json_num(v, "m", 1, &m) != ARACHNE_OK || ar_json_num(v, "n", 1, &nn) != ARACHNE_OK ||
            ar_json_num(v, "k", 1, &k) != ARACHNE_OK || ar_json_num(v, "seconds", 1, &s) != ARACHNE_OK ||
            !(s > 0) || (spec = ar_gpu_catalog_find(strncmp(gpu, "NVIDIA ", 7) == 0 ? gpu + 7 : gpu)) == NULL) {
            fprintf(stderr, "bench_profile_measured: %s:%d: %s\n", path, ln,
                    shape && gpu ? "GPU type not in the catalog or bad numbers" : arachne_last_error());
            ar_json_free(v);
            fclose(f);
            return -1;
        }
        ar_json_num(v, "seconds_single", 0, &alone); /* optional: one product launched alone */
        r = ar_profile_gen_gemm_s(spec, m, nn, k) / s;
        if (json)
            printf("{\"bench\":\"profile_measured\",\"gemm\":\"%s\",\"gpu\":\"%s\",\"m\":%.0f,\"n\":%.0f,\"k\":%.0f,"
                   "\"measured_s\":%.6g,\"measured_alone_s\":%.6g,\"generated_s\":%.6g}\n", shape, spec->name, m, nn, k, s,
                   alone, r * s);
        else
            printf("%-26s %6.0f %6.0f %6.0f %9.1f %9.1f %9.1f %8.3f %8.3f %9.3f\n", shape, m, nn, k, 1e6 * alone,
                   1e6 * s, 1e6 * r * s,
                   2 * m * nn * k / s / spec->flops, 2 * m * nn * k / (r * s) / spec->flops, r);
        if (m >= 4096 && nb < 256) big[nb++] = r;
        if (m <= 256 && ns < 256) small[ns++] = r;
        ar_json_free(v);
        n++;
    }
    fclose(f);
    if (!json && nb && ns)
        printf("gen/meas median: M >= 4096 %.3f (%d products), M <= 256 %.3f (%d)\n", bench_median(big, nb), nb,
               bench_median(small, ns), ns);
    return n;
}

int main(int argc, char **argv)
{
    const char *dir = "tests/data/h200-measured";
    char gemms[8][256];
    int i, ng;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir = argv[++i];
        else {
            fprintf(stderr, "usage: bench_profile_measured [--dir DIR]\n");
            return 2;
        }
    }
    nfiles = list_dir(dir, ".json", files, MAX_FILES);
    if (nfiles <= 0) {
        printf("bench_profile_measured: no measured profiles in %s (run from the repository root, or give "
               "--dir); skipped\n", dir);
        return 0;
    }
    for (i = 0; i < nfiles; i++)
        if (load_profile(dir, i) != 0) return 1;
    ng = list_dir(dir, ".jsonl", gemms, 8);
    profiles_table();
    for (i = 0; i < ng; i++)
        if (gemm_file(dir, gemms[i], 0) < 0) return 1;
    profiles_json();
    for (i = 0; i < ng; i++) gemm_file(dir, gemms[i], 1);
    return 0;
}
