/* cmd_eval.c -- `arachne eval`: the structured policy against the
 * baselines (random search, exhaustive search, the flat policy) on the
 * held-out compositions of an eval config (docs/evaluation.md). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eval.h"

static int progress_line(void *user, const char *line)
{
    (void)user;
    fprintf(stderr, "eval: %s\n", line);
    return 0;
}

/* Keeps only the compositions named in the comma-separated list. */
static int keep_only(ar_eval_config *cfg, const char *list)
{
    int i, n = 0;
    for (i = 0; i < cfg->ncomps; i++) {
        const char *p = list, *name = cfg->comps[i].name;
        size_t len = strlen(name);
        int hit = 0;
        while (*p) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            if (l == len && strncmp(p, name, l) == 0) hit = 1;
            p += l;
            if (*p == ',') p++;
        }
        if (hit) cfg->comps[n++] = cfg->comps[i];
    }
    cfg->ncomps = n;
    return n;
}

int cmd_eval(int argc, char **argv)
{
    const char *config = NULL, *policy_path = NULL, *flat_path = NULL, *only = NULL, *out = NULL, *pos[1];
    int json = 0, verbose = 0, npos, rc, st;
    char desc[600];
    cli_opt opts[7];
    ar_eval_config *cfg = NULL;
    ar_eval_result res;
    arachne_policy *pol = NULL;
    ar_buf b;
    opts[0] = (cli_opt){ "config", 1, &config, NULL };
    opts[1] = (cli_opt){ "policy", 1, &policy_path, NULL };
    opts[2] = (cli_opt){ "only", 1, &only, NULL };
    opts[3] = (cli_opt){ "out", 1, &out, NULL };
    opts[4] = (cli_opt){ "json", 0, NULL, &json };
    opts[5] = (cli_opt){ "verbose", 0, NULL, &verbose };
    opts[6] = (cli_opt){ "flat", 1, &flat_path, NULL };
    if ((rc = cli_parse("eval", argc, argv, opts, 7, pos, 0, &npos))) return rc;
    if (!config) return cli_usage_error("eval", "--config FILE is required");
    if ((st = ar_eval_config_load(&cfg, config))) return cli_lib_fail(st, "eval");
    if (flat_path) {
        /* the flat baseline takes ~25 min to train on the held-out config:
         * reuse the file an earlier run saved */
        if (strlen(flat_path) >= sizeof cfg->flat_policy) {
            ar_eval_config_free(cfg);
            return cli_usage_error("eval", "--flat: path longer than %zu bytes", sizeof cfg->flat_policy - 1);
        }
        snprintf(cfg->flat_policy, sizeof cfg->flat_policy, "%s", flat_path);
        cfg->flat_save[0] = '\0';
        cfg->flat_enabled = 1;
    }
    if (only && keep_only(cfg, only) == 0) {
        ar_eval_config_free(cfg);
        return cli_usage_error("eval", "--only: no composition of %s is named '%s'", config, only);
    }
    if (!policy_path && cfg->policy[0]) policy_path = cfg->policy;
    if (!policy_path) policy_path = cli_find_policy();
    if (policy_path) {
        if ((st = arachne_policy_load(&pol, policy_path))) {
            ar_eval_config_free(cfg);
            return cli_lib_fail(st, "eval: policy");
        }
        snprintf(desc, sizeof desc, "%s", policy_path);
    } else {
        fprintf(stderr, "arachne: eval: no bundled policy found; evaluating an untrained policy (seed 1)\n");
        if ((st = arachne_policy_create(&pol, 1, 0, 0))) {
            ar_eval_config_free(cfg);
            return cli_lib_fail(st, "eval");
        }
        snprintf(desc, sizeof desc, "untrained (seed 1; no bundled policy found)");
    }
    st = ar_eval_run(cfg, pol, verbose ? progress_line : NULL, NULL, &res);
    arachne_policy_destroy(pol);
    if (st) {
        ar_eval_config_free(cfg);
        return cli_lib_fail(st, "eval");
    }
    rc = CLI_OK;
    ar_buf_init(&b);
    if (json) ar_eval_result_json(cfg, &res, desc, &b);
    else ar_eval_result_table(cfg, &res, desc, &b);
    if ((st = ar_buf_status(&b))) rc = cli_lib_fail(st, "eval");
    else fwrite(b.data, 1, b.len, stdout);
    ar_buf_free(&b);
    if (rc == CLI_OK && out) {
        ar_buf_init(&b);
        ar_eval_result_json(cfg, &res, desc, &b);
        st = ar_buf_status(&b);
        if (!st) st = ar_write_file_atomic(out, b.data, b.len);
        if (st) rc = cli_lib_fail(st, "eval: --out");
        ar_buf_free(&b);
    }
    ar_eval_result_free(&res);
    ar_eval_config_free(cfg);
    return rc;
}
