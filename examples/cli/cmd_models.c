/* cmd_models.c -- `arachne models [--json] [NAME|FILE ...]`: the model
 * presets (or the given models) with their sizes and parameter counts. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static double get(const arachne_model *m, int field)
{
    double v = 0;
    arachne_model_get(m, field, &v);
    return v;
}

/* print_row's name column: at least 18 wide, else the longest name's width */
static void print_row(const arachne_model *m, int json, int first, int width)
{
    const char *name = "";
    arachne_model_name(m, &name);
    if (json) {
        printf("%s\n  {\"name\":", first ? "" : ",");
        cli_json_string(stdout, name);
        printf(",\"blocks\":%.0f,\"hidden\":%.0f,\"heads\":%.0f,\"kv_heads\":%.0f,\"head_dim\":%.0f,"
               "\"ffn\":%.0f,\"vocab\":%.0f,\"experts\":%.0f,\"top_k\":%.0f,\"shared_experts\":%.0f,"
               "\"expert_ffn\":%.0f,\"dense_prefix\":%.0f,\"mla\":%s,"
               "\"total_params\":%.0f,\"active_params\":%.0f",
               get(m, ARACHNE_MODEL_BLOCKS), get(m, ARACHNE_MODEL_HIDDEN), get(m, ARACHNE_MODEL_HEADS),
               get(m, ARACHNE_MODEL_KV_HEADS), get(m, ARACHNE_MODEL_HEAD_DIM), get(m, ARACHNE_MODEL_FFN),
               get(m, ARACHNE_MODEL_VOCAB), get(m, ARACHNE_MODEL_EXPERTS), get(m, ARACHNE_MODEL_TOP_K),
               get(m, ARACHNE_MODEL_SHARED_EXPERTS), get(m, ARACHNE_MODEL_EXPERT_FFN),
               get(m, ARACHNE_MODEL_DENSE_PREFIX), get(m, ARACHNE_MODEL_MLA) != 0 ? "true" : "false",
               get(m, ARACHNE_MODEL_TOTAL_PARAMS), get(m, ARACHNE_MODEL_ACTIVE_PARAMS));
        /* a hybrid stack's layers by kind, and a LatentMoE width: only for
         * the models that have them */
        if (get(m, ARACHNE_MODEL_DENSE_BLOCKS) + get(m, ARACHNE_MODEL_MOE_BLOCKS) < get(m, ARACHNE_MODEL_BLOCKS))
            printf(",\"hybrid_layers\":{\"mamba\":%.0f,\"attention\":%.0f,\"mlp\":%.0f,\"moe\":%.0f}",
                   get(m, ARACHNE_MODEL_MAMBA_LAYERS), get(m, ARACHNE_MODEL_ATTENTION_LAYERS),
                   get(m, ARACHNE_MODEL_MLP_LAYERS), get(m, ARACHNE_MODEL_MOE_MLP_LAYERS));
        if (get(m, ARACHNE_MODEL_EXPERT_LATENT) > 0) printf(",\"expert_latent\":%.0f", get(m, ARACHNE_MODEL_EXPERT_LATENT));
        printf("}");
    } else {
        char experts[32];
        if (get(m, ARACHNE_MODEL_EXPERTS) > 0)
            snprintf(experts, sizeof experts, "%.0f top-%.0f", get(m, ARACHNE_MODEL_EXPERTS),
                     get(m, ARACHNE_MODEL_TOP_K));
        else
            snprintf(experts, sizeof experts, "-");
        printf("%-*s %6.0f %7.0f %12s %10.2fB %10.2fB\n", width, name, get(m, ARACHNE_MODEL_BLOCKS),
               get(m, ARACHNE_MODEL_HIDDEN), experts, get(m, ARACHNE_MODEL_TOTAL_PARAMS) / 1e9,
               get(m, ARACHNE_MODEL_ACTIVE_PARAMS) / 1e9);
    }
}

int cmd_models(int argc, char **argv)
{
    int json = 0, npos = 0, n, i, rc = CLI_OK;
    const char *pos[64];
    arachne_model *models[64] = { NULL };
    cli_opt opts[] = { { "json", 0, NULL, &json } };
    rc = cli_parse("models", argc, argv, opts, 1, pos, 64, &npos);
    if (rc) return rc;
    n = npos > 0 ? npos : arachne_model_preset_count();
    if (n > 64) n = 64;
    /* Open everything first so a bad argument prints nothing on stdout. */
    for (i = 0; i < n && rc == CLI_OK; i++) {
        const char *what = npos > 0 ? pos[i] : arachne_model_preset_name(i);
        int st = npos > 0 ? arachne_model_open(&models[i], what) : arachne_model_preset(&models[i], what);
        if (st != ARACHNE_OK) rc = cli_lib_fail(st, what);
    }
    if (rc == CLI_OK) {
        int width = 18;
        for (i = 0; i < n; i++) {
            const char *name = "";
            arachne_model_name(models[i], &name);
            if ((int)strlen(name) > width) width = (int)strlen(name);
        }
        if (json) printf("[");
        else printf("%-*s %6s %7s %12s %11s %11s\n", width, "name", "blocks", "hidden", "experts", "total", "active");
        for (i = 0; i < n; i++) print_row(models[i], json, i == 0, width);
        if (json) printf("\n]\n");
    }
    for (i = 0; i < n; i++) arachne_model_destroy(models[i]);
    return rc;
}
