/* cli_parallel.c -- an explicit parallel configuration ("tp=8,pp=4,dp=16")
 * priced with the command's cost environment: `arachne price --parallel
 * SPEC` prints it, `arachne plan --compare SPEC` sets it beside the planned
 * plan. */
#include <stdio.h>

#include "cli.h"

int cli_parallel_plan(const char *spec, const cli_costenv *env, arachne_plan **out)
{
    int st = arachne_plan_from_parallel(out, env->cm, spec);
    return st == ARACHNE_OK ? CLI_OK : cli_lib_fail(st, spec);
}

int cli_price_parallel(const char *spec, const cli_costenv_opts *o, int json)
{
    cli_costenv env;
    arachne_plan *plan = NULL;
    int rc;
    if ((rc = cli_costenv_build("price", o, &env)) != CLI_OK) return rc;
    if ((rc = cli_parallel_plan(spec, &env, &plan)) == CLI_OK) {
        if (json) {
            rc = cli_put_plan_json(plan);
        } else {
            char title[1024];
            const char *model = "", *cluster = "";
            arachne_model_name(env.model, &model);
            arachne_cluster_to_string(env.cluster, &cluster);
            snprintf(title, sizeof title, "given configuration %s, priced for %s on %s", spec, model, cluster);
            rc = cli_print_plan(stdout, plan, title);
        }
    }
    arachne_plan_destroy(plan);
    cli_costenv_free(&env);
    return rc;
}

int cli_print_compare(FILE *f, const arachne_plan *planned, const arachne_plan *given, const char *spec)
{
    double a = 0.0, b = 0.0;
    if (arachne_plan_get(planned, ARACHNE_PLAN_ITERATION_S, &a) != ARACHNE_OK ||
        arachne_plan_get(given, ARACHNE_PLAN_ITERATION_S, &b) != ARACHNE_OK || !(a > 0.0) || !(b > 0.0))
        return cli_fail("compare: the plans have no price");
    fprintf(f, "compare: %s takes %.4f s per iteration, the planned plan %.4f s: %.3fx %s\n", spec, b, a,
            a <= b ? b / a : a / b, a <= b ? "faster" : "slower");
    return CLI_OK;
}
