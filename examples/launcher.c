/* launcher.c -- what a heterogeneous training runtime needs to start a plan
 * (docs/launcher.md).
 *
 * Plans the cluster given on the command line with the policy, then prints,
 * per node, a torchrun-style command line and, per rank on that node, the
 * environment: RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/MASTER_PORT
 * (placeholders), CUDA_VISIBLE_DEVICES, and the plan's place for the rank
 * (template, replica, stage, layers, embedding/head, micro-batch, and the
 * global ranks of its TP, PP and DP groups).  Everything comes from the
 * plan's `ranks` export (arachne_plan_export with ARACHNE_EXPORT_RANKS).
 *
 * usage: launcher --model M --cluster SPEC [--policy FILE] [--samples K]
 *                 [--seed S] [--script FILE] [--plan-out FILE]
 * Exit 0 on success, 1 on a library error, 2 for a usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"

static int fail(int st, const char *what)
{
    fprintf(stderr, "launcher: %s: %s (%s)\n", what, arachne_last_error(), arachne_status_string(st));
    return 1;
}

/* Copies the raw JSON value of "key" in one export line: the text inside
 * [ ] for arrays, inside quotes for strings, else up to ',' or '}'. */
static const char *field(const char *line, const char *key, char *buf, size_t cap)
{
    char pat[64];
    const char *p, *e;
    size_t n;
    snprintf(pat, sizeof pat, "\"%s\":", key);
    buf[0] = '\0';
    p = strstr(line, pat);
    if (!p) return buf;
    p += strlen(pat);
    if (*p == '[') { p++; e = strchr(p, ']'); }
    else if (*p == '"') { p++; e = strchr(p, '"'); }
    else e = p + strcspn(p, ",}");
    if (!e) return buf;
    n = (size_t)(e - p) < cap - 1 ? (size_t)(e - p) : cap - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

static long ifield(const char *line, const char *key)
{
    char buf[64];
    return strtol(field(line, key, buf, sizeof buf), NULL, 10);
}

typedef struct rankline { const char *text; long node, gpu; } rankline;

static int by_node_gpu(const void *a, const void *b)
{
    const rankline *x = a, *y = b;
    if (x->node != y->node) return (x->node > y->node) - (x->node < y->node);
    return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* A whole decimal integer in [lo, hi], or a usage error naming the option:
 * "5x", "", "1e3" and out-of-range values are refused, not truncated. */
static int parse_long(const char *opt, const char *v, long lo, long hi, long *out)
{
    char *end = NULL;
    long x;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "launcher: %s: '%s' is not an integer in %ld..%ld\n", opt, v, lo, hi);
        return 0;
    }
    *out = x;
    return 1;
}

int main(int argc, char **argv)
{
    const char *model_name = NULL, *spec = NULL, *policy_path = NULL, *script = "train.py", *plan_out = NULL;
    long samples = 16, seed = 0; /* best of 16, as `arachne plan` */
    arachne_model *model = NULL;
    arachne_cluster *cluster = NULL;
    arachne_profile *profile = NULL;
    arachne_cost_model *cm = NULL;
    arachne_policy *pol = NULL;
    arachne_plan *plan = NULL;
    rankline *lines = NULL;
    char *text = NULL, *p;
    size_t need = 0;
    int i, st, rc = 1, nlines = 0, nnodes = 0, used_nodes = 0, node_rank = 0, world;

    for (i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) goto usage;
        if (strcmp(a, "--model") == 0) model_name = v;
        else if (strcmp(a, "--cluster") == 0) spec = v;
        else if (strcmp(a, "--policy") == 0) policy_path = v;
        else if (strcmp(a, "--samples") == 0) { if (!parse_long(a, v, 1, 100000, &samples)) goto usage; }
        else if (strcmp(a, "--seed") == 0) { if (!parse_long(a, v, 0, 0x7fffffffL, &seed)) goto usage; }
        else if (strcmp(a, "--script") == 0) script = v;
        else if (strcmp(a, "--plan-out") == 0) plan_out = v;
        else goto usage;
    }
    if (!model_name || !spec) goto usage;

    if ((st = arachne_model_open(&model, model_name))) { rc = fail(st, model_name); goto done; }
    if ((st = arachne_cluster_open(&cluster, spec))) { rc = fail(st, spec); goto done; }
    if ((st = arachne_profile_generate(&profile, model, cluster, 4096))) { rc = fail(st, "profile"); goto done; }
    if ((st = arachne_cost_model_create(&cm, model, cluster, profile))) { rc = fail(st, "cost model"); goto done; }
    if (!policy_path) {
        FILE *f;
        policy_path = getenv("ARACHNE_POLICY");
        if ((!policy_path || !policy_path[0]) && (f = fopen("examples/policies/default.arpol", "rb"))) {
            fclose(f);
            policy_path = "examples/policies/default.arpol";
        }
    }
    if (policy_path && policy_path[0]) st = arachne_policy_load(&pol, policy_path);
    else {
        fprintf(stderr, "launcher: no bundled policy found; using an untrained policy (seed 1)\n");
        st = arachne_policy_create(&pol, 1, 0, 0);
    }
    if (st) { rc = fail(st, "policy"); goto done; }
    if ((st = arachne_plan_build(&plan, pol, cm, (int)samples, (uint64_t)seed))) { rc = fail(st, "plan"); goto done; }
    if (plan_out && (st = arachne_plan_save(plan, plan_out))) { rc = fail(st, plan_out); goto done; }

    /* the ranks export: one JSON object per line */
    if ((st = arachne_plan_export(plan, ARACHNE_EXPORT_RANKS, NULL, 0, &need)) != ARACHNE_E_BUFFER_TOO_SMALL &&
        st != ARACHNE_OK) { rc = fail(st, "export"); goto done; }
    text = malloc(need);
    if (!text) { fprintf(stderr, "launcher: out of memory\n"); goto done; }
    if ((st = arachne_plan_export(plan, ARACHNE_EXPORT_RANKS, text, need, NULL))) { rc = fail(st, "export"); goto done; }
    for (p = text; *p; p++) nlines += *p == '\n';
    lines = calloc((size_t)nlines + 1, sizeof *lines);
    if (!lines) { fprintf(stderr, "launcher: out of memory\n"); goto done; }
    nlines = 0;
    for (p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
        lines[nlines].text = p;
        lines[nlines].node = ifield(p, "node");
        lines[nlines].gpu = ifield(p, "local_gpu");
        nlines++;
    }
    world = nlines;
    qsort(lines, (size_t)nlines, sizeof *lines, by_node_gpu);
    arachne_cluster_node_count(cluster, NULL, &nnodes);
    for (i = 0; i < nlines; i++) used_nodes += i == 0 || lines[i].node != lines[i - 1].node;

    {
        double v = 0.0;
        arachne_plan_get(plan, ARACHNE_PLAN_SAMPLES_PER_S, &v);
        printf("# %s on %s: %d ranks on %d of %d nodes, %.3f samples/s\n", model_name, spec, world, used_nodes, nnodes,
               v);
        printf("# set MASTER_ADDR to the address of the node with rank 0; the runtime reads the ARACHNE_* variables\n"
               "# (torchrun numbers ranks by node; the plan's rank is RANK below, also in ARACHNE_RANK)\n");
    }
    for (int n = 0, k = 0; n < nnodes; n++) {
        const char *type = "?";
        int gpus = 0, start = k, cnt = 0, j;
        arachne_cluster_node(cluster, n, &type, &gpus);
        while (k < nlines && lines[k].node == n) { k++; cnt++; }
        printf("\n## node %d (%s, %d GPU%s): ", n, type, gpus, gpus == 1 ? "" : "s");
        if (!cnt) { printf("idle (the plan leaves it out)\n"); continue; }
        printf("%d rank%s\n", cnt, cnt == 1 ? "" : "s");
        printf("torchrun --nnodes=%d --node_rank=%d --nproc_per_node=%d --master_addr=$MASTER_ADDR "
               "--master_port=29500 %s --arachne-plan plan.json\n", used_nodes, node_rank++, cnt, script);
        for (j = start; j < k; j++) {
            const char *l = lines[j].text;
            char a[8192], b[8192], c[8192], layers[64], gtype[64];
            long lr = j - start;
            field(l, "layers", layers, sizeof layers);
            for (p = layers; *p; p++) if (*p == ',') *p = '-';
            printf("  RANK=%ld LOCAL_RANK=%ld WORLD_SIZE=%d MASTER_ADDR=$MASTER_ADDR MASTER_PORT=29500 "
                   "CUDA_VISIBLE_DEVICES=%ld ARACHNE_RANK=%ld ARACHNE_GPU_TYPE=%s ARACHNE_TEMPLATE=%ld "
                   "ARACHNE_REPLICA=%ld ARACHNE_STAGE=%ld ARACHNE_PP_SIZE=%ld ARACHNE_LAYERS=%s ARACHNE_EMBEDDING=%d "
                   "ARACHNE_HEAD=%d ARACHNE_MICRO_BATCH=%ld ARACHNE_MICRO_BATCHES=%ld ARACHNE_TP_RANK=%ld "
                   "ARACHNE_TP_SIZE=%ld ARACHNE_DP_RANK=%ld ARACHNE_DP_SIZE=%ld ARACHNE_TP_GROUP=%s "
                   "ARACHNE_PP_GROUP=%s ARACHNE_DP_GROUP=%s\n",
                   ifield(l, "rank"), lr, world, lines[j].gpu, ifield(l, "rank"), field(l, "gpu_type", gtype, sizeof gtype),
                   ifield(l, "template"), ifield(l, "replica"), ifield(l, "stage"), ifield(l, "pp_size"), layers,
                   strstr(l, "\"embedding\":true") != NULL, strstr(l, "\"head\":true") != NULL, ifield(l, "micro_batch"),
                   ifield(l, "micro_batches"), ifield(l, "tp_rank"), ifield(l, "tp_size"), ifield(l, "dp_rank"),
                   ifield(l, "dp_size"), field(l, "tp_group", a, sizeof a), field(l, "pp_group", b, sizeof b),
                   field(l, "dp_group", c, sizeof c));
        }
    }
    rc = 0;
    goto done;
usage:
    fprintf(stderr, "usage: launcher --model M --cluster SPEC [--policy FILE] [--samples K] [--seed S] "
                    "[--script FILE] [--plan-out FILE]\n");
    rc = 2;
done:
    free(lines);
    free(text);
    arachne_plan_destroy(plan);
    arachne_policy_destroy(pol);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(profile);
    arachne_cluster_destroy(cluster);
    arachne_model_destroy(model);
    return rc;
}
