/* cmd_search.c -- `arachne search`: the baseline planners (exhaustive and
 * random search over the same construction as the learned policy). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The search `arachne search` runs, again when the batch asks (cli_batch_retry) */
typedef struct search_run {
    const arachne_cost_model *cm;
    int random, max_templates;
    long budget, seed;
    double time_budget;
} search_run;

static int search_once(arachne_plan **out, const arachne_plan *first, void *user)
{
    const search_run *r = (const search_run *)user;
    (void)first; /* a search starts from nothing */
    if (r->random) return arachne_search_random(out, r->cm, r->budget, (uint64_t)r->seed, r->time_budget);
    return arachne_search_exhaustive(out, r->cm, r->max_templates, r->time_budget);
}

int cmd_search(int argc, char **argv)
{
    cli_costenv_opts co;
    cli_opt opts[CLI_COSTENV_NOPTS + 6];
    const char *method = NULL, *budget_s = NULL, *seed_s = NULL, *time_s = NULL, *tmpl_s = NULL, *pos[1];
    int json = 0, n, npos, rc, st;
    long budget = 2000, seed = 1, max_templates = 1;
    double time_budget = -1.0;
    cli_costenv env;
    arachne_plan *plan = NULL;
    search_run run;

    n = cli_costenv_options(&co, opts);
    opts[n].name = "method"; opts[n].takes_value = 1; opts[n].value = &method; opts[n].flag = NULL; n++;
    opts[n].name = "budget"; opts[n].takes_value = 1; opts[n].value = &budget_s; opts[n].flag = NULL; n++;
    opts[n].name = "seed"; opts[n].takes_value = 1; opts[n].value = &seed_s; opts[n].flag = NULL; n++;
    opts[n].name = "time-budget"; opts[n].takes_value = 1; opts[n].value = &time_s; opts[n].flag = NULL; n++;
    opts[n].name = "max-templates"; opts[n].takes_value = 1; opts[n].value = &tmpl_s; opts[n].flag = NULL; n++;
    opts[n].name = "json"; opts[n].takes_value = 0; opts[n].value = NULL; opts[n].flag = &json; n++;
    if ((rc = cli_parse("search", argc, argv, opts, n, pos, 0, &npos))) return rc;
    if (!method) return cli_usage_error("search", "--method is required (exhaustive or random)");
    if (strcmp(method, "exhaustive") != 0 && strcmp(method, "random") != 0)
        return cli_usage_error("search", "--method: '%s' is not exhaustive or random", method);
    if (budget_s && (rc = cli_int("search", "budget", budget_s, 1, 1000000000L, &budget))) return rc;
    if (seed_s && (rc = cli_int("search", "seed", seed_s, 0, 0x7fffffffL, &seed))) return rc;
    if (time_s && (rc = cli_double("search", "time-budget", time_s, 0.0, 1e9, &time_budget))) return rc;
    if (tmpl_s && (rc = cli_int("search", "max-templates", tmpl_s, 1, 16, &max_templates))) return rc;
    if (strcmp(method, "random") == 0 && tmpl_s)
        return cli_usage_error("search", "--max-templates applies to --method exhaustive");
    if (strcmp(method, "exhaustive") == 0 && (budget_s || seed_s))
        return cli_usage_error("search", "--budget and --seed apply to --method random");
    /* exhaustive stops after a minute unless told otherwise; random runs its budget */
    if (time_budget < 0) time_budget = strcmp(method, "exhaustive") == 0 ? 60.0 : 0.0;
    if ((rc = cli_costenv_build("search", &co, &env))) return rc;

    run.cm = env.cm;
    run.random = strcmp(method, "random") == 0;
    run.max_templates = (int)max_templates;
    run.budget = budget;
    run.seed = seed;
    run.time_budget = time_budget;
    if ((st = search_once(&plan, NULL, &run)) != ARACHNE_OK) {
        rc = cli_lib_fail(st, "search");
        cli_costenv_free(&env);
        return rc;
    }
    cli_batch_retry("search", &plan, env.cm, co.allow_batch_rounding, 1, search_once, &run);
    if ((rc = cli_batch_exact("search", plan, env.cm, co.allow_batch_rounding, 1)) != CLI_OK) {
        arachne_plan_destroy(plan);
        cli_costenv_free(&env);
        return rc;
    }
    if (json) {
        const char *text = NULL;
        st = arachne_plan_to_json(plan, &text);
        if (st != ARACHNE_OK) rc = cli_lib_fail(st, "search");
        else { fputs(text, stdout); fputc('\n', stdout); rc = CLI_OK; }
    } else {
        const char *m = "";
        double evals = 0, secs = 0;
        arachne_plan_method(plan, &m);
        arachne_plan_get(plan, ARACHNE_PLAN_EVALUATIONS, &evals);
        arachne_plan_get(plan, ARACHNE_PLAN_PLANNING_S, &secs);
        rc = cli_print_plan(stdout, plan, NULL);
        printf("planner: %s, %.0f plans priced in %.3f s\n", m, evals, secs);
    }
    arachne_plan_destroy(plan);
    cli_costenv_free(&env);
    return rc;
}
