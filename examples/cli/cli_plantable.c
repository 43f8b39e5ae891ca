/* cli_plantable.c -- the plan table that `plan`, `search` and `price`
 * print: one block per template (its stages with GPU type x TP, layers,
 * stage time and memory per GPU), then the iteration time, throughput and
 * MFU.  Uses only the public API. */
#include "cli.h"

double cli_tget(const arachne_plan *p, int t, int field)
{
    double v = 0;
    arachne_plan_template_get(p, t, field, &v);
    return v;
}

static double sget(const arachne_plan *p, int t, int s, int field)
{
    double v = 0;
    arachne_plan_stage_get(p, t, s, field, &v);
    return v;
}

double cli_pget(const arachne_plan *p, int field)
{
    double v = 0;
    arachne_plan_get(p, field, &v);
    return v;
}

/* The layer ranges of an interleaved stage's chunks, by the rule of
 * docs/formats.md: stage s's n_s layers split into vp chunks (the first
 * n_s mod vp one longer), the model running chunk-major over the stages. */
static void put_chunks(FILE *f, const arachne_plan *p, int t, int s, int depth, int vp)
{
    int c, k, at = 0;
    fputs("  chunks", f);
    for (c = 0; c < vp; c++)
        for (k = 0; k < depth; k++) {
            int n = (int)(sget(p, t, k, ARACHNE_STAGE_END_LAYER) - sget(p, t, k, ARACHNE_STAGE_FIRST_LAYER));
            int len = n / vp + (c < n % vp ? 1 : 0);
            if (k == s) fprintf(f, "%s%d-%d", c ? "," : " ", at, at + len);
            at += len;
        }
}

int cli_print_plan(FILE *f, const arachne_plan *p, const char *title)
{
    int t, s, nt;
    const char *method = "";
    double it;
    if (!p) return CLI_FAIL;
    nt = (int)cli_pget(p, ARACHNE_PLAN_TEMPLATES);
    arachne_plan_method(p, &method);
    if (title) fprintf(f, "%s\n", title);
    fprintf(f, "%d template%s, %d of %d GPUs, global batch %d x %d tokens%s%s\n", nt, nt == 1 ? "" : "s",
            (int)cli_pget(p, ARACHNE_PLAN_GPUS_USED), (int)cli_pget(p, ARACHNE_PLAN_GPUS_TOTAL),
            (int)cli_pget(p, ARACHNE_PLAN_GLOBAL_BATCH), (int)cli_pget(p, ARACHNE_PLAN_SEQ_LEN),
            method && method[0] ? ", planner " : "", method && method[0] ? method : "");
    for (t = 0; t < nt; t++) {
        int depth = (int)cli_tget(p, t, ARACHNE_TEMPLATE_DEPTH), reps = (int)cli_tget(p, t, ARACHNE_TEMPLATE_REPLICAS);
        int cp = (int)cli_tget(p, t, ARACHNE_TEMPLATE_CP);
        int vp = (int)cli_tget(p, t, ARACHNE_TEMPLATE_VP), fsdp = (int)cli_tget(p, t, ARACHNE_TEMPLATE_FSDP);
        fprintf(f, "\ntemplate %d: %d replica%s x %d stage%s, micro-batch %d x %d per replica, pipeline %.4f s", t,
                reps, reps == 1 ? "" : "s", depth, depth == 1 ? "" : "s", (int)cli_tget(p, t, ARACHNE_TEMPLATE_MICRO_BATCH),
                (int)cli_tget(p, t, ARACHNE_TEMPLATE_MICRO_BATCHES), cli_tget(p, t, ARACHNE_TEMPLATE_PIPELINE_S));
        /* each stage of a replica runs on tp x cp GPUs */
        if (cp > 1) fprintf(f, ", context parallel %d (each stage: tp x %d GPUs)", cp, cp);
        if (vp > 1) fprintf(f, ", interleaved 1F1B with %d chunks per stage", vp);
        if (fsdp > 1) fprintf(f, ", FSDP over %d replicas", fsdp);
        fputc('\n', f);
        fprintf(f, "  %-5s %-14s %-3s %-9s %-8s %-10s %-10s %s\n", "stage", "gpu", "tp", "layers", "replicas",
                "stage s", "sync s", "mem/GPU GB");
        for (s = 0; s < depth; s++) {
            const char *gpu = "?";
            char layers[32];
            arachne_plan_stage_gpu(p, t, s, &gpu);
            snprintf(layers, sizeof layers, "%d-%d", (int)sget(p, t, s, ARACHNE_STAGE_FIRST_LAYER),
                     (int)sget(p, t, s, ARACHNE_STAGE_END_LAYER));
            fprintf(f, "  %-5d %-14s %-3d %-9s %-8d %-10.4f %-10.4f %.2f", s, gpu, (int)sget(p, t, s, ARACHNE_STAGE_TP),
                    layers, reps, sget(p, t, s, ARACHNE_STAGE_STAGE_S), sget(p, t, s, ARACHNE_STAGE_SYNC_S),
                    sget(p, t, s, ARACHNE_STAGE_MEMORY_BYTES) / 1e9);
            if (vp > 1) put_chunks(f, p, t, s, depth, vp);
            if (sget(p, t, s, ARACHNE_STAGE_EP) > 1 || sget(p, t, s, ARACHNE_STAGE_ETP) > 1)
                fprintf(f, "  (EP %d x ETP %d x EDP %d)", (int)sget(p, t, s, ARACHNE_STAGE_EP),
                        (int)sget(p, t, s, ARACHNE_STAGE_ETP), (int)sget(p, t, s, ARACHNE_STAGE_EDP));
            fputc('\n', f);
        }
    }
    it = cli_pget(p, ARACHNE_PLAN_ITERATION_S);
    fprintf(f, "\niteration %.4f s, %.4f iter/s, %.2f samples/s, %.0f tokens/s, MFU %.1f%%, bubble %.1f%%\n", it,
            cli_pget(p, ARACHNE_PLAN_ITER_PER_S), cli_pget(p, ARACHNE_PLAN_SAMPLES_PER_S),
            cli_pget(p, ARACHNE_PLAN_TOKENS_PER_S), 100.0 * cli_pget(p, ARACHNE_PLAN_MFU),
            100.0 * cli_pget(p, ARACHNE_PLAN_BUBBLE));
    return CLI_OK;
}

int cli_put_plan_json(const arachne_plan *p)
{
    const char *text = NULL;
    int st = arachne_plan_to_json(p, &text);
    if (st != ARACHNE_OK) return cli_lib_fail(st, "plan JSON");
    fputs(text, stdout);
    return CLI_OK;
}
