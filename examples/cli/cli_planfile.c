/* cli_planfile.c -- opening a plan file for price, export and replan: the
 * cost model is rebuilt from what the file records (the model, cluster and
 * profile a version-2 plan embeds; a version-1 plan's preset name and
 * compact cluster string), the user's options override it, and what the
 * user changed is reported next to the price it moved.  A plan file's
 * fields are text: they are never opened as paths. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* One header field as malloc'ed text; *out stays NULL when the file does not
 * record it.  CLI_OK or CLI_FAIL after printing. */
static int header_text(const char *cmd, const char *path, int key, char **out)
{
    size_t need = 0;
    int st;
    *out = NULL;
    st = arachne_plan_file_header(path, key, NULL, 0, &need);
    if (st == ARACHNE_E_NOT_FOUND) return CLI_OK;
    if (st != ARACHNE_E_BUFFER_TOO_SMALL && st != ARACHNE_OK) return cli_lib_fail(st, cmd);
    if (!(*out = malloc(need ? need : 1))) return cli_fail("%s: out of memory", cmd);
    st = arachne_plan_file_header(path, key, *out, need, NULL);
    if (st != ARACHNE_OK) {
        free(*out);
        *out = NULL;
        return cli_lib_fail(st, cmd);
    }
    return CLI_OK;
}

enum { H_MODEL, H_CLUSTER, H_BATCH, H_SEQ, H_RECOMPUTE, H_DIST, H_HEADROOM, H_WBYTES, H_GBYTES, H_OBYTES, H_MODEL_JSON,
       H_CLUSTER_JSON, H_PROFILE_JSON, H_OVERLAP_GRAD, H_OVERLAP_PARAM, H_TP_OVERLAP, H_COUNT };
static const int header_keys[H_COUNT] = {
    ARACHNE_PLAN_HEADER_MODEL,        ARACHNE_PLAN_HEADER_CLUSTER,      ARACHNE_PLAN_HEADER_GLOBAL_BATCH,
    ARACHNE_PLAN_HEADER_SEQ_LEN,      ARACHNE_PLAN_HEADER_RECOMPUTE,    ARACHNE_PLAN_HEADER_DIST_OPTIMIZER,
    ARACHNE_PLAN_HEADER_HEADROOM,     ARACHNE_PLAN_HEADER_WEIGHT_BYTES, ARACHNE_PLAN_HEADER_GRAD_BYTES,
    ARACHNE_PLAN_HEADER_OPTIM_BYTES,  ARACHNE_PLAN_HEADER_MODEL_JSON,   ARACHNE_PLAN_HEADER_CLUSTER_JSON,
    ARACHNE_PLAN_HEADER_PROFILE_JSON, ARACHNE_PLAN_HEADER_OVERLAP_GRAD_REDUCE,
    ARACHNE_PLAN_HEADER_OVERLAP_PARAM_GATHER, ARACHNE_PLAN_HEADER_TP_COMM_OVERLAP,
};

static int is_off(const char *v) { return v && strcmp(v, "0") == 0; }
static int is_on(const char *v) { return v && strcmp(v, "1") == 0; }
/* the header texts live until the process ends: o points into them */
static char *hdr[H_COUNT];

/* Prints the lines of two texts that differ (same line count), or one
 * summary line; returns 1 when they differ. */
static int diff_lines(FILE *f, const char *what, const char *a, const char *b)
{
    int shown = 0, na = 0, nb = 0;
    const char *p;
    if (strcmp(a, b) == 0) return 0;
    for (p = a; *p; p++) na += *p == '\n';
    for (p = b; *p; p++) nb += *p == '\n';
    if (na != nb || na == 0) {
        fprintf(f, "  %s: differs from the plan's\n", what);
        return 1;
    }
    while (*a && *b && shown < 12) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || memcmp(a, b, la) != 0) {
            const char *x = a, *y = b;
            while (*x == ' ') x++, la--;
            while (*y == ' ') y++, lb--;
            fprintf(f, "  %s: plan %.*s -> given %.*s\n", what, (int)la, x, (int)lb, y);
            shown++;
        }
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
    if (shown == 0) fprintf(f, "  %s: differs from the plan's\n", what);
    return 1;
}

static int diff_model(FILE *f, const cli_costenv *env)
{
    arachne_model *m = NULL;
    const char *a = "", *b = "";
    int d;
    if (!hdr[H_MODEL_JSON] || arachne_model_from_json(&m, hdr[H_MODEL_JSON], strlen(hdr[H_MODEL_JSON]))) return 0;
    arachne_model_to_json(m, &a);
    arachne_model_to_json(env->model, &b);
    d = diff_lines(f, "model", a, b);
    arachne_model_destroy(m);
    return d;
}

static int diff_cluster(FILE *f, const cli_costenv *env)
{
    arachne_cluster *c = NULL;
    const char *a = "", *b = "";
    int d;
    if (!hdr[H_CLUSTER_JSON] || arachne_cluster_from_json(&c, hdr[H_CLUSTER_JSON], strlen(hdr[H_CLUSTER_JSON])))
        return 0;
    arachne_cluster_to_json(c, &a);
    arachne_cluster_to_json(env->cluster, &b);
    d = diff_lines(f, "cluster", a, b);
    arachne_cluster_destroy(c);
    return d;
}

/* Entries that differ, and the largest relative change of a time. */
static int diff_profile(FILE *f, const cli_costenv *env)
{
    arachne_profile *p = NULL;
    int na = 0, nb = 0, i, changed = 0, missing = 0;
    double worst = 0.0;
    if (!hdr[H_PROFILE_JSON] || arachne_profile_from_json(&p, hdr[H_PROFILE_JSON], strlen(hdr[H_PROFILE_JSON])))
        return 0;
    arachne_profile_count(p, &na);
    arachne_profile_count(env->profile, &nb);
    for (i = 0; i < na; i++) {
        const char *gpu = NULL;
        int kind = 0, tp = 0, mbs = 0;
        double v[4], w[4];
        int k;
        if (arachne_profile_entry(p, i, &gpu, &kind, &tp, &mbs, &v[0], &v[1], &v[2], &v[3])) continue;
        if (arachne_profile_lookup(env->profile, gpu, kind, tp, mbs, &w[0], &w[1], &w[2], &w[3])) {
            missing++;
            continue;
        }
        for (k = 0; k < 4; k++)
            if (v[k] != w[k]) break;
        if (k == 4) continue;
        changed++;
        for (k = 0; k < 3; k++)
            if (v[k] > 0 && fabs(w[k] / v[k] - 1.0) > worst) worst = fabs(w[k] / v[k] - 1.0);
    }
    arachne_profile_destroy(p);
    if (!changed && !missing && na == nb) return 0;
    fprintf(f, "  profile: %d of the plan's %d entries changed (times by up to %.1f%%), %d missing; given %d entries\n",
            changed, na, 100.0 * worst, missing, nb);
    return 1;
}

static int diff_setting(FILE *f, const char *name, const char *file, const char *given)
{
    if (!file || !given || strcmp(file, given) == 0) return 0;
    if (strtod(file, NULL) == strtod(given, NULL) && strtod(file, NULL) != 0.0) return 0;
    fprintf(f, "  %s: plan %s -> given %s\n", name, file, given);
    return 1;
}

static int diff_switch(FILE *f, const char *name, const char *file, const char *now)
{
    if (!file || strcmp(file, now) == 0) return 0;
    fprintf(f, "  %s: plan %s -> given %s\n", name, strcmp(file, "1") == 0 ? "on" : "off",
            strcmp(now, "1") == 0 ? "on" : "off");
    return 1;
}

/* Model names compare case aside, as the library matches them. */
static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

int cli_plan_open(const char *cmd, const char *path, cli_costenv_opts *o, cli_costenv *env, arachne_plan **plan,
                  FILE *report)
{
    const char *user_batch = o->global_batch, *user_seq = o->seq_len, *user_rc = o->recompute;
    const char *user_head = o->headroom, *user_w = o->weight_bytes, *user_g = o->grad_bytes, *user_o = o->optim_bytes;
    int user_dist = o->dist_optimizer || o->no_dist_optimizer, user_model = o->model != NULL;
    int user_cluster = o->cluster != NULL;
    int user_profile = o->profile != NULL;
    int rc, st, i;
    *plan = NULL;
    memset(env, 0, sizeof *env);
    if ((rc = cli_check_regular(cmd, "plan", path))) return rc;
    for (i = 0; i < H_COUNT; i++) {
        free(hdr[i]);
        if ((rc = header_text(cmd, path, header_keys[i], &hdr[i]))) return rc;
    }
    /* the model, cluster and profile: the user's, else the embedded ones,
     * else (version 1) the preset name and the compact string as text */
    if (!o->model) {
        o->model_json = hdr[H_MODEL_JSON];
        o->model_name = hdr[H_MODEL];
    }
    if (!o->cluster) {
        o->cluster_json = hdr[H_CLUSTER_JSON];
        o->cluster_spec = hdr[H_CLUSTER];
    }
    if (!o->profile) o->profile_json = hdr[H_PROFILE_JSON];
    if (o->model && !o->profile && o->profile_json && hdr[H_MODEL]) {
        /* the embedded profile times the plan's model: for another model
         * given with --model a profile is generated, as `plan` would */
        arachne_model *m = NULL;
        const char *name = NULL;
        if (arachne_model_open(&m, o->model) == ARACHNE_OK && arachne_model_name(m, &name) == ARACHNE_OK &&
            !same_name(name, hdr[H_MODEL]))
            o->profile_json = NULL;
        arachne_model_destroy(m);
        arachne_clear_error();
    }
    if (!o->global_batch) o->global_batch = hdr[H_BATCH];
    if (!o->recompute) {
        o->recompute = hdr[H_RECOMPUTE];
        o->recompute_from_plan = 1;
    }
    if (!o->headroom) o->headroom = hdr[H_HEADROOM];
    /* the file's choices stand unless the command line made one */
    if (!o->dist_optimizer && !o->no_dist_optimizer && is_off(hdr[H_DIST])) o->no_dist_optimizer = 1;
    if (!o->no_overlap_grad_reduce && is_off(hdr[H_OVERLAP_GRAD])) o->no_overlap_grad_reduce = 1;
    if (!o->no_overlap_param_gather && is_off(hdr[H_OVERLAP_PARAM])) o->no_overlap_param_gather = 1;
    if (!o->tp_comm_overlap && is_on(hdr[H_TP_OVERLAP])) o->tp_comm_overlap = 1;
    if (!o->weight_bytes) o->weight_bytes = hdr[H_WBYTES];
    if (!o->grad_bytes) o->grad_bytes = hdr[H_GBYTES];
    if (!o->optim_bytes) o->optim_bytes = hdr[H_OBYTES];
    /* a profile fixes the sequence length itself */
    if (!o->profile && !o->profile_json && !o->seq_len) o->seq_len = hdr[H_SEQ];
    if (!o->model && !o->model_json && o->model_name && strchr(o->model_name, '/'))
        return cli_fail("%s: %s: the plan names model '%s' and embeds no model (a version-1 plan); give --model "
                        "with the model's preset name or JSON file",
                        cmd, path, o->model_name);
    if ((rc = cli_costenv_build(cmd, o, env)) != CLI_OK) return rc;
    if ((st = arachne_plan_load(plan, env->cm, path)) != ARACHNE_OK) {
        cli_costenv_free(env);
        return cli_lib_fail(st, cmd);
    }
    if (report && hdr[H_MODEL_JSON]) {
        int n = 0;
        char dist[4];
        double v = 0.0;
        fprintf(report, "inputs that differ from the plan's:\n");
        if (user_model) n += diff_model(report, env);
        if (user_cluster) n += diff_cluster(report, env);
        if (user_profile) n += diff_profile(report, env);
        n += diff_setting(report, "global batch", hdr[H_BATCH], user_batch);
        if (user_seq) n += diff_setting(report, "sequence length", hdr[H_SEQ], user_seq);
        n += diff_setting(report, "recompute", hdr[H_RECOMPUTE], user_rc);
        n += diff_setting(report, "headroom", hdr[H_HEADROOM], user_head);
        n += diff_setting(report, "weight bytes per parameter", hdr[H_WBYTES], user_w);
        n += diff_setting(report, "gradient bytes per parameter", hdr[H_GBYTES], user_g);
        n += diff_setting(report, "optimizer bytes per parameter", hdr[H_OBYTES], user_o);
        /* the switches: what the cost model now runs with, against the file */
        arachne_cost_model_get(env->cm, ARACHNE_OPT_DIST_OPTIMIZER, &v);
        snprintf(dist, sizeof dist, "%d", (int)v);
        if (user_dist) n += diff_setting(report, "distributed optimizer", hdr[H_DIST], dist);
        arachne_cost_model_get(env->cm, ARACHNE_OPT_OVERLAP_GRAD_REDUCE, &v);
        snprintf(dist, sizeof dist, "%d", (int)v);
        n += diff_switch(report, "overlap of the gradient reduction", hdr[H_OVERLAP_GRAD], dist);
        arachne_cost_model_get(env->cm, ARACHNE_OPT_OVERLAP_PARAM_GATHER, &v);
        snprintf(dist, sizeof dist, "%d", (int)v);
        n += diff_switch(report, "overlap of the parameter all-gather", hdr[H_OVERLAP_PARAM], dist);
        arachne_cost_model_get(env->cm, ARACHNE_OPT_TP_COMM_OVERLAP, &v);
        snprintf(dist, sizeof dist, "%d", (int)v);
        n += diff_switch(report, "TP communication overlap", hdr[H_TP_OVERLAP], dist);
        if (!n) fprintf(report, "  none\n");
    }
    return CLI_OK;
}
