/* launcher.c -- what a heterogeneous training runtime needs to start a plan
 * (docs/launcher.md).
 *
 * Plans the cluster given on the command line with the policy, writes the
 * plan file and a rank map, and prints lines an operator can run:
 *   - per node, a torchrun line; node ranks follow the plan's rank order
 *     (the node running plan rank 0 is node_rank 0, MASTER_ADDR's node), so
 *     torchrun's global ranks are the plan's whenever each node's plan ranks
 *     are contiguous (the planners place them so); the rank map says which
 *     plan rank every torchrun rank is in any case;
 *   - the rank map file (JSON) the training script reads: per torchrun rank
 *     (node rank, local rank) its CUDA device, plan rank, template, replica,
 *     stage, layers, TP rank and the global ranks of its TP, PP and DP groups;
 *   - a Slurm form (SLURM_HOSTFILE + srun --distribution=arbitrary, one task
 *     per GPU in torchrun-rank order) and an MPI-style hostfile.
 * Everything comes from the plan's `ranks` export (ARACHNE_EXPORT_RANKS).
 * The policy: --policy, else $ARACHNE_POLICY, else the bundled one next to
 * the binary (bin/../examples/policies/default.arpol) or installed
 * (bin/../share/arachne/default.arpol), found from any working directory.
 *
 * usage: launcher --model M --cluster SPEC|FILE [--profile FILE] [--global-batch N]
 *                 [--policy FILE] [--samples K] [--seed S] [--refine N] [--script FILE]
 *                 [--plan-out FILE] [--rank-map FILE]
 * Exit 0 on success, 1 on a library error, 2 for a usage error. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arachne.h"

static int fail(int st, const char *what)
{
    fprintf(stderr, "launcher: %s: %s (%s)\n", what, arachne_last_error(), arachne_status_string(st));
    return 1;
}

/* Copies the raw JSON value of "key" in one export line: the text inside
 * the [ ] of an array (nested arrays whole: "chunks":[[0,5],[17,21]] gives
 * "[0,5],[17,21]"), inside quotes for strings, else up to ',' or '}'; ""
 * when the line has no such key (the export writes the cp and chunk fields
 * only where they apply). */
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
    if (*p == '[') {
        int depth = 1;
        for (e = ++p; *e && depth > 0; e++) depth += (*e == '[') - (*e == ']');
        if (depth > 0) return buf;
        e--; /* the closing bracket */
    } else if (*p == '"') { p++; e = strchr(p, '"'); }
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

typedef struct rankline { const char *text; long node, gpu, rank; } rankline;

/* Nodes in plan order: by the lowest plan rank each node runs; inside a
 * node, ranks by plan rank (local rank order). */
static long *node_first; /* lowest plan rank per cluster node */
static int by_plan_order(const void *a, const void *b)
{
    const rankline *x = a, *y = b;
    if (x->node != y->node) return (node_first[x->node] > node_first[y->node]) - (node_first[x->node] < node_first[y->node]);
    return (x->rank > y->rank) - (x->rank < y->rank);
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

/* The bundled policy, found from any working directory: $ARACHNE_POLICY,
 * then next to the source tree or install prefix of this binary. */
static const char *find_policy(void)
{
    static char path[4096];
    static const char *const rel[] = { "../examples/policies/default.arpol", "../share/arachne/default.arpol" };
    char exe[4000], *slash;
    const char *env = getenv("ARACHNE_POLICY");
    ssize_t n;
    size_t i;
    if (env && env[0]) return env;
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = '\0';
    if (!(slash = strrchr(exe, '/'))) return NULL;
    *slash = '\0';
    for (i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", exe, rel[i]);
        if (access(path, R_OK) == 0) return path;
    }
    return NULL;
}

/* Writes the rank map (JSON, docs/launcher.md) for the ranks in torchrun
 * order; nodes[k] is the cluster node of node rank k. */
static int write_rank_map(const char *path, const char *plan_path, const rankline *l, int n, const long *nodes,
                          int nnodes_used)
{
    FILE *f;
    int i, k = 0, nr;
    /* one buffer for every field: a field is never longer than its line
     * (a data-parallel group of thousands of replicas is tens of KB) */
    size_t cap = 1;
    char *v;
    for (i = 0; i < n; i++)
        if (strlen(l[i].text) + 1 > cap) cap = strlen(l[i].text) + 1;
    if (!(v = malloc(cap))) {
        fprintf(stderr, "launcher: %s: out of memory\n", path);
        return 1;
    }
    if (!(f = fopen(path, "w"))) {
        fprintf(stderr, "launcher: %s: cannot write: %s\n", path, strerror(errno));
        free(v);
        return 1;
    }
    fprintf(f, "{\"format\": \"arachne-rank-map\", \"version\": 1, \"plan\": \"%s\", \"world_size\": %d,\n", plan_path, n);
    /* the memory setup the price assumes, the same on every rank */
    if (n > 0) {
        fprintf(f, " \"recompute\": \"%s\", ", field(l[0].text, "recompute", v, cap));
        fprintf(f, "\"dist_optimizer\": %s,\n", field(l[0].text, "dist_optimizer", v, cap));
    }
    fprintf(f, " \"plan_rank_by_torch_rank\": [");
    for (i = 0; i < n; i++) fprintf(f, "%s%ld", i ? ", " : "", l[i].rank);
    fprintf(f, "],\n \"nodes\": [");
    for (nr = 0; nr < nnodes_used; nr++) {
        int start = k;
        fprintf(f, "%s\n  {\"node_rank\": %d, \"node\": %ld, \"torch_rank_start\": %d, \"local\": [", nr ? "," : "", nr,
                nodes[nr], start);
        for (; k < n && l[k].node == nodes[nr]; k++) {
            const char *t = l[k].text;
            fprintf(f, "%s\n    {\"local_rank\": %d, \"cuda_device\": %ld, \"rank\": %ld, \"template\": %ld, "
                       "\"replica\": %ld, \"stage\": %ld, ",
                    k > start ? "," : "", k - start, l[k].gpu, l[k].rank, ifield(t, "template"), ifield(t, "replica"),
                    ifield(t, "stage"));
            fprintf(f, "\"layers\": [%s], ", field(t, "layers", v, cap));
            /* an interleaved stage runs its chunks, not [first, end) */
            if (field(t, "chunks", v, cap)[0]) fprintf(f, "\"vp\": %ld, \"chunks\": [%s], ", ifield(t, "vp"), v);
            fprintf(f, "\"tp_rank\": %ld, \"tp_group\": [%s], ", ifield(t, "tp_rank"), field(t, "tp_group", v, cap));
            /* context parallelism: the ranks that split this stage's sequence */
            if (field(t, "cp_group", v, cap)[0]) fprintf(f, "\"cp_rank\": %ld, \"cp_group\": [%s], ", ifield(t, "cp_rank"), v);
            /* FSDP: the ranks that shard this stage's weights, gradients and optimizer state */
            if (field(t, "fsdp_group", v, cap)[0]) fprintf(f, "\"fsdp_group\": [%s], ", v);
            fprintf(f, "\"pp_group\": [%s], ", field(t, "pp_group", v, cap));
            fprintf(f, "\"dp_group\": [%s]}", field(t, "dp_group", v, cap));
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n]}\n");
    free(v);
    if (fclose(f) != 0) {
        fprintf(stderr, "launcher: %s: cannot write\n", path);
        return 1;
    }
    return 0;
}

static double plan_field(const arachne_plan *p, int field)
{
    double v = 0.0;
    arachne_plan_get(p, field, &v);
    return v;
}

/* A launcher runs the batch it was asked for.  The default planner charges
 * a plan that runs more samples than the batch for its surplus
 * (ARACHNE_OPT_EXACT_BATCH) and can return one, faster even so.  With
 * ARACHNE_OPT_EXACT_DIVISION 2 it plans again when its plan runs a surplus,
 * ranking the plans that run the batch first, refines the first plan that
 * way too, and returns the best plan that runs the batch (docs/search.md,
 * "Which plan wins"; `arachne plan` does the same).  It returns a surplus
 * only when it found no plan that runs the batch: returns 0, or 1 after
 * saying which batch the plan runs. */
static int runs_asked_batch(const arachne_plan *plan)
{
    double want = plan_field(plan, ARACHNE_PLAN_GLOBAL_BATCH), runs = plan_field(plan, ARACHNE_PLAN_SAMPLES_RUN);
    if (runs == want) return 0;
    fprintf(stderr, "launcher: no plan found runs the global batch of %.0f; the best runs %.0f (give "
                    "--global-batch %.0f)\n", want, runs, runs);
    return 1;
}

int main(int argc, char **argv)
{
    const char *model_name = NULL, *spec = NULL, *policy_path = NULL, *script = "train.py", *plan_out = "plan.json";
    const char *rank_map = "ranks.json", *profile_path = NULL;
    /* the default planner, as `arachne plan`: best of 16, then the refinement */
    long samples = 16, seed = 0, batch = 0, refine = ARACHNE_REFINE_EVALUATIONS;
    arachne_model *model = NULL;
    arachne_cluster *cluster = NULL;
    arachne_profile *profile = NULL;
    arachne_cost_model *cm = NULL;
    arachne_policy *pol = NULL;
    arachne_plan *plan = NULL;
    rankline *lines = NULL;
    long *nodes = NULL;
    char *text = NULL, *p;
    size_t need = 0;
    int i, st, rc = 1, nlines = 0, nnodes = 0, used = 0, world, k;

    for (i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) goto usage;
        if (strcmp(a, "--model") == 0) model_name = v;
        else if (strcmp(a, "--cluster") == 0) spec = v;
        else if (strcmp(a, "--profile") == 0) profile_path = v;
        else if (strcmp(a, "--global-batch") == 0) { if (!parse_long(a, v, 1, 1000000000L, &batch)) goto usage; }
        else if (strcmp(a, "--policy") == 0) policy_path = v;
        else if (strcmp(a, "--samples") == 0) { if (!parse_long(a, v, 1, 100000, &samples)) goto usage; }
        else if (strcmp(a, "--seed") == 0) { if (!parse_long(a, v, 0, 0x7fffffffL, &seed)) goto usage; }
        else if (strcmp(a, "--refine") == 0) { if (!parse_long(a, v, 0, 100000000L, &refine)) goto usage; }
        else if (strcmp(a, "--script") == 0) script = v;
        else if (strcmp(a, "--plan-out") == 0) plan_out = v;
        else if (strcmp(a, "--rank-map") == 0) rank_map = v;
        else goto usage;
    }
    if (!model_name || !spec) goto usage;

    if ((st = arachne_model_open(&model, model_name))) { rc = fail(st, model_name); goto done; }
    if ((st = arachne_cluster_open(&cluster, spec))) { rc = fail(st, spec); goto done; }
    if (profile_path) st = arachne_profile_load(&profile, profile_path);
    else st = arachne_profile_generate(&profile, model, cluster, 4096);
    if (st) { rc = fail(st, "profile"); goto done; }
    if ((st = arachne_cost_model_create(&cm, model, cluster, profile))) { rc = fail(st, "cost model"); goto done; }
    if (batch && (st = arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, (double)batch))) {
        rc = fail(st, "--global-batch");
        goto done;
    }
    if (!policy_path) policy_path = find_policy();
    if (policy_path) st = arachne_policy_load(&pol, policy_path);
    else {
        fprintf(stderr, "launcher: no bundled policy found; using an untrained policy (seed 1)\n");
        st = arachne_policy_create(&pol, 1, 0, 0);
    }
    if (st) { rc = fail(st, "policy"); goto done; }
    if ((st = arachne_cost_model_set(cm, ARACHNE_OPT_EXACT_DIVISION, 2)) ||
        (st = arachne_plan_build_refined(&plan, pol, cm, (int)samples, (uint64_t)seed, refine, 0.0))) {
        rc = fail(st, "plan");
        goto done;
    }
    if (runs_asked_batch(plan)) goto done;
    if ((st = arachne_plan_save(plan, plan_out))) { rc = fail(st, plan_out); goto done; }

    /* the ranks export: one JSON object per line */
    if ((st = arachne_plan_export(plan, ARACHNE_EXPORT_RANKS, NULL, 0, &need)) != ARACHNE_E_BUFFER_TOO_SMALL &&
        st != ARACHNE_OK) { rc = fail(st, "export"); goto done; }
    text = malloc(need);
    if (!text) { fprintf(stderr, "launcher: out of memory\n"); goto done; }
    if ((st = arachne_plan_export(plan, ARACHNE_EXPORT_RANKS, text, need, NULL))) { rc = fail(st, "export"); goto done; }
    for (p = text; *p; p++) nlines += *p == '\n';
    arachne_cluster_node_count(cluster, NULL, &nnodes);
    lines = calloc((size_t)nlines + 1, sizeof *lines);
    node_first = malloc(((size_t)nnodes + 1) * sizeof *node_first);
    nodes = calloc((size_t)nnodes + 1, sizeof *nodes);
    if (!lines || !node_first || !nodes) { fprintf(stderr, "launcher: out of memory\n"); goto done; }
    for (i = 0; i < nnodes; i++) node_first[i] = -1;
    nlines = 0;
    for (p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
        rankline *r = &lines[nlines++];
        r->text = p;
        r->node = ifield(p, "node");
        r->gpu = ifield(p, "local_gpu");
        r->rank = ifield(p, "rank");
        if (r->node < 0 || r->node >= nnodes) { fprintf(stderr, "launcher: rank on node %ld\n", r->node); goto done; }
        if (node_first[r->node] < 0 || r->rank < node_first[r->node]) node_first[r->node] = r->rank;
    }
    world = nlines;
    qsort(lines, (size_t)nlines, sizeof *lines, by_plan_order);
    for (i = 0; i < nlines; i++)
        if (i == 0 || lines[i].node != lines[i - 1].node) nodes[used++] = lines[i].node;
    if (write_rank_map(rank_map, plan_out, lines, nlines, nodes, used)) goto done;

    {
        double v = 0.0;
        int same = 1;
        for (i = 0; i < nlines; i++) same &= lines[i].rank == i;
        arachne_plan_get(plan, ARACHNE_PLAN_SAMPLES_PER_S, &v);
        printf("# %s on %s: %d ranks on %d of %d nodes, %.3f samples/s\n", model_name, spec, world, used, nnodes, v);
        printf("# wrote %s (the plan) and %s (the rank map: torchrun rank -> plan rank, CUDA device, stage, groups)\n",
               plan_out, rank_map);
        printf("# node ranks follow the plan: node_rank 0 runs plan rank 0; set MASTER_ADDR to its address\n");
        printf("# torchrun ranks %s the plan ranks%s\n", same ? "equal" : "differ from",
               same ? "" : ": the training script maps them with the rank map's plan_rank_by_torch_rank");
    }
    for (k = 0, i = 0; k < used; k++) {
        const char *type = "?";
        int gpus = 0, cnt = 0, j;
        arachne_cluster_node(cluster, (int)nodes[k], &type, &gpus);
        for (j = i; j < nlines && lines[j].node == nodes[k]; j++) cnt++;
        printf("\n## node_rank %d = cluster node %ld (%s, %d GPU%s): %d rank%s, plan ranks", k, nodes[k], type, gpus,
               gpus == 1 ? "" : "s", cnt, cnt == 1 ? "" : "s");
        for (j = i; j < i + cnt; j++) printf(" %ld", lines[j].rank);
        printf("\ntorchrun --nnodes=%d --node_rank=%d --nproc_per_node=%d --master_addr=$MASTER_ADDR "
               "--master_port=29500 %s --arachne-plan %s --arachne-rank-map %s\n", used, k, cnt, script, plan_out,
               rank_map);
        i += cnt;
    }
    for (i = 0; i < nnodes; i++)
        if (node_first[i] < 0) printf("# cluster node %d: idle (the plan leaves it out)\n", i);
    printf("\n## Slurm: one task per GPU in torchrun-rank order (replace nodeN with the host names)\n");
    printf("cat > hostfile.slurm <<'EOF'\n");
    for (i = 0; i < nlines; i++) printf("node%ld\n", lines[i].node);
    printf("EOF\nSLURM_HOSTFILE=hostfile.slurm srun --ntasks=%d --distribution=arbitrary python %s --arachne-plan %s "
           "--arachne-rank-map %s\n", world, script, plan_out, rank_map);
    printf("\n## MPI-style hostfile, node_rank order\n");
    for (k = 0, i = 0; k < used; k++) {
        int cnt = 0;
        while (i < nlines && lines[i].node == nodes[k]) { i++; cnt++; }
        printf("node%ld slots=%d\n", nodes[k], cnt);
    }
    rc = 0;
    goto done;
usage:
    fprintf(stderr, "usage: launcher --model M --cluster SPEC|FILE [--profile FILE] [--global-batch N] "
                    "[--policy FILE] [--samples K] [--seed S] [--refine N] [--script FILE] [--plan-out FILE]\n"
                    "                [--rank-map FILE]\n");
    rc = 2;
done:
    free(lines);
    free(nodes);
    free(node_first);
    free(text);
    arachne_plan_destroy(plan);
    arachne_policy_destroy(pol);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(profile);
    arachne_cluster_destroy(cluster);
    arachne_model_destroy(model);
    return rc;
}
