/* cmd_gpus.c -- `arachne gpus [--json]`: the built-in GPU catalog. */
#include <stdlib.h>

#include "cli.h"

/* Shortest of %.15g..%.17g that reads back to v (the command never calls
 * setlocale, so the "C" locale applies). */
static void put_number(double v)
{
    char buf[40];
    int prec;
    for (prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    fputs(buf, stdout);
}

static double field(const char *name, int f)
{
    double v = 0;
    arachne_gpu_get(name, f, &v);
    return v;
}

/* The names docs/formats.md and the cluster JSON use for arachne_link_class. */
static const char *link_name(double link)
{
    if (link == ARACHNE_LINK_NVLINK) return "nvlink";
    if (link == ARACHNE_LINK_PCIE_P2P) return "pcie-p2p";
    if (link == ARACHNE_LINK_PCIE_HOST) return "pcie-host";
    return "?";
}

int cmd_gpus(int argc, char **argv)
{
    int json = 0, npos = 0, i, n = arachne_gpu_catalog_count();
    const char *pos[1];
    cli_opt opts[] = { { "json", 0, NULL, &json } };
    int rc = cli_parse("gpus", argc, argv, opts, 1, pos, 0, &npos);
    if (rc) return rc;
    if (json) printf("[");
    else
        printf("%-13s %10s %9s %9s %9s %9s %9s %9s  %s\n", "name", "memory GB", "TFLOP/s", "HBM GB/s",
               "intra GB/s", "inter GB/s", "intra us", "inter us", "intra link");
    for (i = 0; i < n; i++) {
        const char *name = "";
        if (arachne_gpu_catalog_name(i, &name) != ARACHNE_OK) return cli_lib_fail(ARACHNE_E_INVALID_ARGUMENT, "gpus");
        if (json) {
            printf("%s\n  {\"name\":", i ? "," : "");
            cli_json_string(stdout, name);
            static const char *const keys[] = { "memory_bytes", "flops", "hbm_bytes_per_s", "intra_bytes_per_s",
                                                "inter_bytes_per_s", "intra_latency_s", "inter_latency_s" };
            int f;
            for (f = 0; f <= ARACHNE_GPU_INTER_LATENCY_S; f++) {
                printf(",\"%s\":", keys[f]);
                put_number(field(name, f));
            }
            printf(",\"intra_link\":");
            cli_json_string(stdout, link_name(field(name, ARACHNE_GPU_INTRA_LINK)));
            printf("}");
        } else {
            printf("%-13s %10.2f %9.1f %9.0f %10.1f %10.1f %9.1f %9.1f  %s\n", name,
                   field(name, ARACHNE_GPU_MEMORY_BYTES) / 1e9, field(name, ARACHNE_GPU_FLOPS) / 1e12,
                   field(name, ARACHNE_GPU_HBM_BYTES_PER_S) / 1e9, field(name, ARACHNE_GPU_INTRA_BYTES_PER_S) / 1e9,
                   field(name, ARACHNE_GPU_INTER_BYTES_PER_S) / 1e9, field(name, ARACHNE_GPU_INTRA_LATENCY_S) * 1e6,
                   field(name, ARACHNE_GPU_INTER_LATENCY_S) * 1e6, link_name(field(name, ARACHNE_GPU_INTRA_LINK)));
        }
    }
    if (json) printf("\n]\n");
    return CLI_OK;
}
