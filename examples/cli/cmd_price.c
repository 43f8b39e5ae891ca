/* cmd_price.c -- `arachne price PLAN.json [--model M] [--cluster SPEC]
 * [--profile FILE] [setup options] [--svg FILE] [--json]`: rebuilds the cost model the
 * plan was made for (cli_plan_open: model, cluster, profile and training
 * setup default to what the file records), loads the plan (strict read +
 * validation + reprice) and prints the plan table, what the user changed
 * and how far the price moved, or the repriced plan JSON. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_price(int argc, char **argv)
{
    cli_costenv_opts o;
    cli_costenv env;
    cli_opt opts[CLI_COSTENV_NOPTS + 3];
    const char *pos[1], *svg = NULL;
    arachne_plan *plan = NULL;
    const char *parallel = NULL;
    int json = 0, npos = 0, n, rc;
    n = cli_costenv_options(&o, opts);
    opts[n].name = "json";
    opts[n].takes_value = 0;
    opts[n].value = NULL;
    opts[n].flag = &json;
    n++;
    opts[n++] = (cli_opt){ "svg", 1, &svg, NULL };
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
    if ((rc = cli_plan_open("price", pos[0], &o, &env, &plan, json ? NULL : stdout)) != CLI_OK) return rc;
    if ((rc = cli_batch_exact("price", plan, env.cm, o.allow_batch_rounding, 1)) != CLI_OK) {
        arachne_plan_destroy(plan);
        cli_costenv_free(&env);
        return rc;
    }
    if (svg) {
        int st = arachne_plan_save_svg(plan, svg);
        if (st != ARACHNE_OK) {
            rc = cli_lib_fail(st, "price: --svg");
            arachne_plan_destroy(plan);
            cli_costenv_free(&env);
            return rc;
        }
    }
    if (json) {
        rc = cli_put_plan_json(plan);
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
