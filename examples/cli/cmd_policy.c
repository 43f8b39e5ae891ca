/* cmd_policy.c -- `arachne policy init --out FILE [--seed S] [--hidden H]
 * [--layers L]` and `arachne policy info FILE [--json]`. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int policy_init(int argc, char **argv)
{
    const char *out = NULL, *seed_s = "1", *hidden_s = "0", *layers_s = "0", *pos[1];
    int npos, rc, st;
    long seed, hidden, layers;
    arachne_policy *p = NULL;
    cli_opt opts[] = { { "out", 1, &out, NULL }, { "seed", 1, &seed_s, NULL },
                       { "hidden", 1, &hidden_s, NULL }, { "layers", 1, &layers_s, NULL } };
    rc = cli_parse("policy init", argc, argv, opts, 4, pos, 0, &npos);
    if (rc) return rc;
    if (!out) return cli_usage_error("policy init", "--out FILE is required");
    if ((rc = cli_int("policy init", "seed", seed_s, 0, 0x7fffffffL, &seed)) ||
        (rc = cli_int("policy init", "hidden", hidden_s, 0, 4096, &hidden)) ||
        (rc = cli_int("policy init", "layers", layers_s, 0, 8, &layers)))
        return rc;
    st = arachne_policy_create(&p, (uint64_t)seed, (int)hidden, (int)layers);
    if (st) return cli_lib_fail(st, "policy init");
    st = arachne_policy_save(p, out);
    arachne_policy_destroy(p);
    if (st) return cli_lib_fail(st, "policy init");
    printf("wrote %s (randomly initialised, seed %ld)\n", out, seed);
    return CLI_OK;
}

static int policy_info(int argc, char **argv)
{
    const char *pos[1], *meta = "";
    int npos, rc, st, json = 0, i;
    arachne_policy *p = NULL;
    static const struct { int field; const char *name; } fields[] = {
        { ARACHNE_POLICY_PARAMS, "parameters" },       { ARACHNE_POLICY_HIDDEN, "hidden" },
        { ARACHNE_POLICY_LAYERS, "layers" },           { ARACHNE_POLICY_STATE_DIM, "state_dim" },
        { ARACHNE_POLICY_COMP_DIM, "composition_dim" }, { ARACHNE_POLICY_SCHEMA_VERSION, "feature_schema" },
        { ARACHNE_POLICY_TRAIN_STEPS, "train_steps" },
    };
    cli_opt opts[] = { { "json", 0, NULL, &json } };
    rc = cli_parse("policy info", argc, argv, opts, 1, pos, 1, &npos);
    if (rc) return rc;
    if (npos != 1) return cli_usage_error("policy info", "expected one policy FILE");
    st = arachne_policy_load(&p, pos[0]);
    if (st) return cli_lib_fail(st, "policy info");
    arachne_policy_metadata(p, &meta);
    if (json) printf("{\"file\":"), cli_json_string(stdout, pos[0]);
    else printf("file             %s\n", pos[0]);
    for (i = 0; i < (int)(sizeof fields / sizeof fields[0]); i++) {
        double v = 0;
        arachne_policy_info(p, fields[i].field, &v);
        if (json) printf(",\"%s\":%.0f", fields[i].name, v);
        else printf("%-16s %.0f\n", fields[i].name, v);
    }
    if (json) printf(",\"metadata\":%s}\n", meta[0] ? meta : "null");
    else if (meta[0]) printf("metadata         %s\n", meta);
    arachne_policy_destroy(p);
    return CLI_OK;
}

int cmd_policy(int argc, char **argv)
{
    if (argc < 2) return cli_usage_error("policy", "expected 'init' or 'info'");
    if (!strcmp(argv[1], "init")) return policy_init(argc - 1, argv + 1);
    if (!strcmp(argv[1], "info")) return policy_info(argc - 1, argv + 1);
    return cli_usage_error("policy", "unknown action '%s' (expected 'init' or 'info')", argv[1]);
}
