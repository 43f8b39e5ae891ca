/* cmd_cluster.c -- `arachne cluster SPEC|--file FILE [--json]`: reads a
 * cluster (compact spec, or a JSON file) and prints a per-type summary, or
 * with --json the cluster's JSON form (which reads back to the same cluster). */
#include <string.h>

#include "cli.h"

/* Node groups of type t as "8x4+16x1" (consecutive equal sizes merged). */
static void node_groups(const arachne_cluster *c, const char *type, char *buf, size_t cap)
{
    int nodes = 0, i, run = 0, size = 0;
    size_t len = 0;
    buf[0] = '\0';
    arachne_cluster_node_count(c, NULL, &nodes);
    for (i = 0; i <= nodes; i++) {
        const char *t = NULL;
        int g = 0;
        if (i < nodes) arachne_cluster_node(c, i, &t, &g);
        if (i < nodes && strcmp(t, type) == 0 && (run == 0 || g == size)) {
            size = g;
            run++;
            continue;
        }
        if (run > 0 && len < cap) {
            len += (size_t)snprintf(buf + len, cap - len, "%s%dx%d", len ? "+" : "", run, size);
            run = 0;
        }
        if (i < nodes && strcmp(t, type) == 0) {
            size = g;
            run = 1;
        }
    }
}

int cmd_cluster(int argc, char **argv)
{
    int json = 0, npos = 0, st, ntypes = 0, t, total = 0, nodes = 0, largest = 0;
    const char *pos[1], *file = NULL, *spec = NULL, *text = NULL;
    arachne_cluster *c = NULL;
    cli_opt opts[] = { { "json", 0, NULL, &json }, { "file", 1, &file, NULL } };
    int rc = cli_parse("cluster", argc, argv, opts, 2, pos, 1, &npos);
    if (rc) return rc;
    if (npos == 1 && file) return cli_usage_error("cluster", "give either SPEC or --file FILE, not both");
    if (npos == 0 && !file) return cli_usage_error("cluster", "missing SPEC or --file FILE");
    spec = npos ? pos[0] : file;
    st = file ? arachne_cluster_load(&c, file) : arachne_cluster_open(&c, spec);
    if (st != ARACHNE_OK) return cli_fail("%s", arachne_last_error());
    if (!file) cli_note_spec_aliases(spec);
    if (json) {
        if (arachne_cluster_to_json(c, &text) != ARACHNE_OK) rc = cli_lib_fail(ARACHNE_E_NO_MEMORY, "cluster");
        else fputs(text, stdout);
        arachne_cluster_destroy(c);
        return rc;
    }
    arachne_cluster_to_string(c, &text);
    arachne_cluster_type_count(c, &ntypes);
    printf("cluster %s\n", text && text[0] ? text : "(empty)");
    printf("%-13s %8s %7s %-24s %7s %10s %8s\n", "type", "GPUs", "nodes", "node sizes", "largest", "memory GB",
           "TFLOP/s");
    for (t = 0; t < ntypes; t++) {
        const char *name = NULL;
        char groups[256];
        int g = 0, n = 0, l = 0;
        double mem = 0, flops = 0;
        arachne_cluster_type_name(c, t, &name);
        arachne_cluster_gpu_count(c, name, &g);
        arachne_cluster_node_count(c, name, &n);
        arachne_cluster_largest_node(c, name, &l);
        arachne_cluster_gpu_get(c, name, ARACHNE_GPU_MEMORY_BYTES, &mem);
        arachne_cluster_gpu_get(c, name, ARACHNE_GPU_FLOPS, &flops);
        node_groups(c, name, groups, sizeof groups);
        printf("%-13s %8d %7d %-24s %7d %10.2f %8.1f\n", name, g, n, groups[0] ? groups : "-", l, mem / 1e9,
               flops / 1e12);
    }
    arachne_cluster_gpu_count(c, NULL, &total);
    arachne_cluster_node_count(c, NULL, &nodes);
    arachne_cluster_largest_node(c, NULL, &largest);
    printf("%-13s %8d %7d %-24s %7d\n", "total", total, nodes, "", largest);
    arachne_cluster_destroy(c);
    return CLI_OK;
}
