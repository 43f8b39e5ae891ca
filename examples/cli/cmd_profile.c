/* cmd_profile.c -- `arachne profile`: generate a profile table with the
 * analytic generator, or import Sailor's measured profiles.
 *
 *   arachne profile --model M --cluster SPEC [--seq-len N] [--out FILE] [--json]
 *   arachne profile --import-sailor DIR --model NAME [--out FILE] [--json]
 *
 * Without --out: a summary table (or, with --json, the profile JSON).
 * With --out: the file is written atomically and a summary is printed (with
 * --json a one-line JSON summary). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *kind_name(int kind)
{
    static const char *const names[4] = { "embed", "dense", "moe", "head" };
    return (kind >= 0 && kind < 4) ? names[kind] : "?";
}

/* One row per (GPU, kind, TP): the values at the smallest micro-batch. */
static void print_summary(const arachne_profile *p)
{
    int n = 0, i, seq = 0;
    const char *model = "";
    arachne_profile_count(p, &n);
    arachne_profile_seq_len(p, &seq);
    arachne_profile_model_name(p, &model);
    printf("profile for %s at seq %d: %d entries\n", model, seq, n);
    printf("%-12s %-6s %3s %-14s %10s %10s %10s %10s\n", "gpu", "kind", "tp", "mbs", "fwd_ms", "bwd_ms", "comm_ms",
           "act_MiB");
    for (i = 0; i < n;) {
        const char *gpu, *g2;
        int kind, tp, mbs, k2, t2, m2, j, last = 0;
        double f, b, c, a;
        char range[32];
        arachne_profile_entry(p, i, &gpu, &kind, &tp, &mbs, &f, &b, &c, &a);
        for (j = i + 1; j < n; j++) {
            arachne_profile_entry(p, j, &g2, &k2, &t2, &m2, NULL, NULL, NULL, NULL);
            if (strcmp(g2, gpu) != 0 || k2 != kind || t2 != tp) break;
            last = m2;
        }
        if (last) snprintf(range, sizeof range, "%d..%d (%d)", mbs, last, j - i);
        else snprintf(range, sizeof range, "%d", mbs);
        printf("%-12s %-6s %3d %-14s %10.3f %10.3f %10.3f %10.1f\n", gpu, kind_name(kind), tp, range, f * 1e3,
               b * 1e3, c * 1e3, a / 1048576.0);
        i = j;
    }
}

int cmd_profile(int argc, char **argv)
{
    const char *model = NULL, *cluster = NULL, *seq_s = NULL, *out = NULL, *sailor = NULL;
    const char *pos[1];
    int json = 0, npos = 0, rc, st, n = 0;
    long seq = 4096;
    arachne_profile *p = NULL;
    cli_opt opts[] = {
        { "model", 1, &model, NULL },        { "cluster", 1, &cluster, NULL }, { "seq-len", 1, &seq_s, NULL },
        { "out", 1, &out, NULL },            { "json", 0, NULL, &json },       { "import-sailor", 1, &sailor, NULL },
    };
    rc = cli_parse("profile", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), pos, 0, &npos);
    if (rc) return rc;
    if (!model) return cli_usage_error("profile", "--model is required");
    if (sailor) {
        if (cluster) return cli_usage_error("profile", "--cluster cannot be used with --import-sailor");
        if (seq_s) return cli_usage_error("profile", "--seq-len cannot be used with --import-sailor (it comes from the data)");
        st = arachne_profile_import_sailor(&p, sailor, model);
        if (st != ARACHNE_OK) return cli_lib_fail(st, "import-sailor");
    } else {
        arachne_model *m = NULL;
        arachne_cluster *c = NULL;
        if (!cluster) return cli_usage_error("profile", "--cluster is required (or use --import-sailor DIR)");
        if (seq_s && (rc = cli_int("profile", "seq-len", seq_s, 1, 1048576, &seq)) != 0) return rc;
        st = arachne_model_open(&m, model);
        if (st != ARACHNE_OK) return cli_lib_fail(st, model);
        st = arachne_cluster_open(&c, cluster);
        if (st != ARACHNE_OK) {
            arachne_model_destroy(m);
            return cli_lib_fail(st, cluster);
        }
        st = arachne_profile_generate(&p, m, c, (int)seq);
        arachne_model_destroy(m);
        arachne_cluster_destroy(c);
        if (st != ARACHNE_OK) return cli_lib_fail(st, "generate");
    }
    arachne_profile_count(p, &n);
    if (out) {
        st = arachne_profile_save(p, out);
        if (st != ARACHNE_OK) {
            arachne_profile_destroy(p);
            return cli_lib_fail(st, out);
        }
        if (json) {
            const char *name = "";
            int s = 0;
            arachne_profile_model_name(p, &name);
            arachne_profile_seq_len(p, &s);
            printf("{\"out\":");
            cli_json_string(stdout, out);
            printf(",\"model\":");
            cli_json_string(stdout, name);
            printf(",\"seq_len\":%d,\"entries\":%d}\n", s, n);
        } else {
            print_summary(p);
            printf("wrote %s\n", out);
        }
    } else if (json) {
        size_t need = 0;
        char *buf;
        arachne_profile_to_json(p, NULL, 0, &need);
        buf = malloc(need ? need : 1);
        if (!buf || arachne_profile_to_json(p, buf, need, NULL) != ARACHNE_OK) {
            free(buf);
            arachne_profile_destroy(p);
            return cli_fail("profile: out of memory");
        }
        fputs(buf, stdout);
        free(buf);
    } else {
        print_summary(p);
    }
    arachne_profile_destroy(p);
    return CLI_OK;
}
