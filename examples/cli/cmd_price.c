/* cmd_price.c -- `arachne price PLAN.json [--model M] [--cluster SPEC]
 * [setup options] [--json]`: rebuilds the cost model the plan was made for
 * (model, cluster and training setup default to what the file records),
 * loads the plan (strict read + validation + reprice) and prints the plan
 * table or the repriced plan JSON.  Also home of cli_plan_open(), which
 * `export` shares. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Fills an unset option from the plan file's header.  The strings live in
 * static storage: one plan is opened per process. */
static int header_default(const char *cmd, const char *path, int key, const char **slot, char *store, size_t cap)
{
    size_t need = 0;
    int st;
    if (*slot) return CLI_OK;
    st = arachne_plan_file_header(path, key, store, cap, &need);
    if (st == ARACHNE_E_NOT_FOUND) return CLI_OK; /* optional setup field: keep the default */
    if (st != ARACHNE_OK) {
        if (st == ARACHNE_E_BUFFER_TOO_SMALL) return cli_fail("%s: %s: header field of %zu bytes is too long", cmd, path, need);
        return cli_lib_fail(st, cmd);
    }
    *slot = store;
    return CLI_OK;
}

int cli_plan_open(const char *cmd, const char *path, cli_costenv_opts *o, cli_costenv *env, arachne_plan **plan)
{
    static char model[512], cluster[1 << 16], batch[32], seq[32], recompute[32], headroom[48], dist[8];
    const char *dist_s = NULL;
    int rc, st;
    *plan = NULL;
    memset(env, 0, sizeof *env);
    if ((rc = header_default(cmd, path, ARACHNE_PLAN_HEADER_MODEL, &o->model, model, sizeof model)) ||
        (rc = header_default(cmd, path, ARACHNE_PLAN_HEADER_CLUSTER, &o->cluster, cluster, sizeof cluster)) ||
        (rc = header_default(cmd, path, ARACHNE_PLAN_HEADER_GLOBAL_BATCH, &o->global_batch, batch, sizeof batch)) ||
        (rc = header_default(cmd, path, ARACHNE_PLAN_HEADER_RECOMPUTE, &o->recompute, recompute, sizeof recompute)) ||
        (rc = header_default(cmd, path, ARACHNE_PLAN_HEADER_HEADROOM, &o->headroom, headroom, sizeof headroom)) ||
        (rc = header_default(cmd, path, ARACHNE_PLAN_HEADER_DIST_OPTIMIZER, &dist_s, dist, sizeof dist)))
        return rc;
    /* a measured profile fixes the sequence length itself */
    if (!o->profile && (rc = header_default(cmd, path, ARACHNE_PLAN_HEADER_SEQ_LEN, &o->seq_len, seq, sizeof seq)))
        return rc;
    /* the file's choice stands unless the command line made one */
    if (!o->dist_optimizer && !o->no_dist_optimizer && dist_s && strcmp(dist_s, "0") == 0) o->no_dist_optimizer = 1;
    if ((rc = cli_costenv_build(cmd, o, env)) != CLI_OK) return rc;
    if ((st = arachne_plan_load(plan, env->cm, path)) != ARACHNE_OK) {
        cli_costenv_free(env);
        return cli_lib_fail(st, cmd);
    }
    return CLI_OK;
}

int cmd_price(int argc, char **argv)
{
    cli_costenv_opts o;
    cli_costenv env;
    cli_opt opts[CLI_COSTENV_NOPTS + 2];
    const char *pos[1];
    arachne_plan *plan = NULL;
    const char *parallel = NULL;
    int json = 0, npos = 0, n, rc;
    n = cli_costenv_options(&o, opts);
    opts[n].name = "json";
    opts[n].takes_value = 0;
    opts[n].value = NULL;
    opts[n].flag = &json;
    n++;
    opts[n].name = "parallel";
    opts[n].takes_value = 1;
    opts[n].value = &parallel;
    opts[n].flag = NULL;
    n++;
    if ((rc = cli_parse("price", argc, argv, opts, n, pos, 1, &npos))) return rc;
    if (parallel) {
        if (npos != 0) return cli_usage_error("price", "--parallel prices a configuration, not a plan file");
        return cli_price_parallel(parallel, &o, json);
    }
    if (npos != 1) return cli_usage_error("price", "expected one plan file");
    if ((rc = cli_plan_open("price", pos[0], &o, &env, &plan)) != CLI_OK) return rc;
    if (json) {
        const char *text = NULL;
        int st = arachne_plan_to_json(plan, &text);
        if (st != ARACHNE_OK) rc = cli_lib_fail(st, "plan JSON");
        else fputs(text, stdout);
    } else {
        char title[1024];
        double file_it = 0.0, it = 0.0;
        const char *model = "", *cluster = "";
        arachne_model_name(env.model, &model);
        arachne_cluster_to_string(env.cluster, &cluster);
        snprintf(title, sizeof title, "%s: valid; repriced for %s on %s", pos[0], model, cluster);
        rc = cli_print_plan(stdout, plan, title);
        arachne_plan_get(plan, ARACHNE_PLAN_ITERATION_S, &it);
        if (arachne_plan_file_header(pos[0], ARACHNE_PLAN_HEADER_ITERATION_S, title, sizeof title, NULL) ==
                ARACHNE_OK &&
            (file_it = strtod(title, NULL)) > 0.0)
            printf("the file records %.4f s per iteration; repriced %.4f s (%+.2f%%)\n", file_it, it,
                   100.0 * (it - file_it) / file_it);
    }
    arachne_plan_destroy(plan);
    cli_costenv_free(&env);
    return rc;
}
