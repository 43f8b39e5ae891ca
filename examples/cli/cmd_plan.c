/* cmd_plan.c -- `arachne plan`: plan a cluster with the learned policy.
 * Without --policy it uses the bundled policy (see cli_find_policy). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The bundled policy: $ARACHNE_POLICY, then examples/policies/default.arpol
 * next to the source tree the binary was built in (bin/../examples/...),
 * then an installed copy (bin/../share/arachne/default.arpol). */
const char *cli_find_policy(void)
{
    static char path[4096];
    char exe[4000];
    const char *env = getenv("ARACHNE_POLICY");
    static const char *rel[] = { "../examples/policies/default.arpol", "../share/arachne/default.arpol" };
    ssize_t n;
    size_t i;
    char *slash;
    if (env && env[0]) return env;
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = '\0';
    for (i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", exe, rel[i]);
        if (access(path, R_OK) == 0) return path;
    }
    return NULL;
}

/* What `arachne plan` runs, again when the batch asks (cli_batch_retry) */
typedef struct plan_run {
    const arachne_policy *pol;
    arachne_cost_model *cm; /* the refinement of a first plan sets its recompute mode for a while */
    int rollout, samples;
    long seed, refine, refine_ms;
} plan_run;

/* The default planner (or --rollout and its refinement); again with
 * ARACHNE_OPT_EXACT_DIVISION (first: the plan that runs a surplus),
 * also the refinement of `first` under that option, and the faster of the
 * two plans that run the batch: the planner from scratch loses the inexact
 * plans its climbs step through, the refinement keeps first's structure
 * (docs/search.md, "Which plan wins").  ARACHNE_OPT_EXACT_DIVISION 2 does
 * the same inside the library; the command keeps these steps so that it
 * can report the first plan (cli_batch_retry's note), plan again with
 * --rollout's planner, and keep the first plan at its exact division */
static int plan_once(arachne_plan **out, const arachne_plan *first, void *user)
{
    const plan_run *r = (const plan_run *)user;
    arachne_plan *plan = NULL, *better = NULL;
    int st;
    *out = NULL;
    if (first) {
        double B = cli_pget(first, ARACHNE_PLAN_GLOBAL_BATCH), mode = ARACHNE_RECOMPUTE_SELECTIVE;
        int a_ok, b_ok, rs;
        if ((st = plan_once(&plan, NULL, user)) && st != ARACHNE_E_INFEASIBLE) return st;
        /* the refinement climbs in the first plan's recompute mode (full
         * where the probe chose it), then the mode set is restored */
        arachne_cost_model_get(r->cm, ARACHNE_OPT_RECOMPUTE, &mode);
        rs = arachne_cost_model_set(r->cm, ARACHNE_OPT_RECOMPUTE, cli_pget(first, ARACHNE_PLAN_RECOMPUTE));
        if (!rs) rs = arachne_plan_refine(&better, first, r->cm, r->refine, r->refine_ms / 1000.0);
        arachne_cost_model_set(r->cm, ARACHNE_OPT_RECOMPUTE, mode);
        if (rs) {
            arachne_clear_error();
            *out = plan;
            return st;
        }
        a_ok = plan && cli_pget(plan, ARACHNE_PLAN_SAMPLES_RUN) == B;
        b_ok = cli_pget(better, ARACHNE_PLAN_SAMPLES_RUN) == B;
        if (!plan || (b_ok && !a_ok) ||
            (b_ok == a_ok && cli_pget(better, ARACHNE_PLAN_ITER_PER_S) > cli_pget(plan, ARACHNE_PLAN_ITER_PER_S))) {
            arachne_plan_destroy(plan);
            plan = better;
        } else {
            arachne_plan_destroy(better);
        }
        arachne_clear_error();
        *out = plan;
        return ARACHNE_OK;
    }
    /* --rollout: rollout decoding (docs/search.md), else greedy or best-of-K,
     * refined from the best sample, the greedy plan and the best sample
     * on other GPU types */
    if (!r->rollout)
        return arachne_plan_build_refined(out, r->pol, r->cm, r->samples, (uint64_t)r->seed, r->refine,
                                          r->refine_ms / 1000.0);
    if ((st = arachne_plan_rollout(&plan, r->pol, r->cm, 0, 0)) || r->refine <= 0) {
        *out = plan;
        return st;
    }
    /* the policy's plan is the start of the refinement (docs/search.md) */
    st = arachne_plan_refine(&better, plan, r->cm, r->refine, r->refine_ms / 1000.0);
    arachne_plan_destroy(plan);
    *out = better;
    return st;
}

int cmd_plan(int argc, char **argv)
{
    cli_costenv_opts co;
    cli_costenv env;
    cli_opt opts[CLI_COSTENV_NOPTS + 9];
    const char *policy_path = NULL, *samples_s = "16", *seed_s = "0", *svg = NULL, *compare = NULL, *pos[1];
    const char *refine_s = NULL, *refine_ms_s = "0", *default_samples;
    int json = 0, rollout = 0, npos, rc, st, nopts;
    double search = 0, mode_set = ARACHNE_RECOMPUTE_SELECTIVE; /* the cost model's, as the user set them */
    long samples, seed, refine = ARACHNE_REFINE_EVALUATIONS, refine_ms;
    arachne_policy *pol = NULL;
    arachne_plan *plan = NULL;
    plan_run run;
    nopts = cli_costenv_options(&co, opts);
    opts[nopts++] = (cli_opt){ "policy", 1, &policy_path, NULL };
    opts[nopts++] = (cli_opt){ "samples", 1, &samples_s, NULL };
    opts[nopts++] = (cli_opt){ "seed", 1, &seed_s, NULL };
    opts[nopts++] = (cli_opt){ "svg", 1, &svg, NULL };
    opts[nopts++] = (cli_opt){ "json", 0, NULL, &json };
    opts[nopts++] = (cli_opt){ "compare", 1, &compare, NULL };
    opts[nopts++] = (cli_opt){ "refine", 1, &refine_s, NULL };
    opts[nopts++] = (cli_opt){ "refine-ms", 1, &refine_ms_s, NULL };
    opts[nopts++] = (cli_opt){ "rollout", 0, NULL, &rollout };
    default_samples = samples_s;
    if ((rc = cli_parse("plan", argc, argv, opts, nopts, pos, 0, &npos))) return rc;
    if (rollout && samples_s != default_samples)
        return cli_usage_error("plan", "--rollout decodes once, deterministically: it takes no --samples");
    /* 1024: best-of-1024 stays interactive (about 2 s on a 48-GPU cluster,
     * 2.5 s on the 512-GPU paper mix); 100,000 took 143 s.  Programs that
     * want more call arachne_plan_build themselves. */
    if ((rc = cli_int("plan", "samples", samples_s, 1, CLI_MAX_SAMPLES, &samples)) ||
        (rc = cli_int("plan", "seed", seed_s, 0, 0x7fffffffL, &seed)) ||
        (refine_s && (rc = cli_int("plan", "refine", refine_s, 0, 100000000L, &refine))) ||
        (rc = cli_int("plan", "refine-ms", refine_ms_s, 0, 3600000L, &refine_ms)))
        return rc;
    if (rollout && co.recompute && !strcmp(co.recompute, "auto"))
        return cli_usage_error("plan", "--recompute auto chooses between two runs of the default planner; "
                                       "--rollout takes none, selective or full");
    if ((rc = cli_costenv_build("plan", &co, &env))) return rc;
    arachne_cost_model_get(env.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, &search);
    arachne_cost_model_get(env.cm, ARACHNE_OPT_RECOMPUTE, &mode_set);
    if (!policy_path) policy_path = cli_find_policy();
    if (policy_path) {
        st = arachne_policy_load(&pol, policy_path);
        if (st) { cli_costenv_free(&env); return cli_lib_fail(st, "plan: --policy"); }
    } else {
        fprintf(stderr, "arachne: plan: no bundled policy found; using an untrained policy (seed 1)\n");
        st = arachne_policy_create(&pol, 1, 0, 0);
        if (st) { cli_costenv_free(&env); return cli_lib_fail(st, "plan"); }
    }
    run.pol = pol;
    run.cm = env.cm;
    run.rollout = rollout;
    run.samples = (int)samples;
    run.seed = seed;
    run.refine = refine;
    run.refine_ms = refine_ms;
    st = plan_once(&plan, NULL, &run);
    if (st) {
        /* nothing fits in memory (but the model state would): the one
         * error line names the mode that stores the fewest activations */
        if (st == ARACHNE_E_INFEASIBLE && search == 0 && mode_set != ARACHNE_RECOMPUTE_FULL &&
            !strstr(arachne_last_error(), "weights, gradients and optimizer"))
            rc = cli_fail("plan: %s (--recompute auto also plans with full recomputation)", arachne_last_error());
        else
            rc = cli_lib_fail(st, "plan");
    } else {
        /* what follows (batch rounding, --compare) prices in the plan's mode */
        cli_batch_retry("plan", &plan, env.cm, co.allow_batch_rounding, 1, plan_once, &run);
        rc = cli_costenv_follow_plan("plan", &env, plan);
        if (rc == CLI_OK) rc = cli_batch_exact("plan", plan, env.cm, co.allow_batch_rounding, 1);
        if (rc == CLI_OK && svg && (st = arachne_plan_save_svg(plan, svg))) rc = cli_lib_fail(st, "plan: --svg");
        if (rc == CLI_OK) {
            if (json) {
                const char *text = NULL;
                st = arachne_plan_to_json(plan, &text);
                if (st) rc = cli_lib_fail(st, "plan");
                else printf("%s\n", text);
            } else {
                /* The same closing line as 'arachne search': how many plans
                 * the policy priced and how long planning took. */
                const char *m = "";
                double evals = 0, secs = 0;
                arachne_plan_method(plan, &m);
                arachne_plan_get(plan, ARACHNE_PLAN_EVALUATIONS, &evals);
                arachne_plan_get(plan, ARACHNE_PLAN_PLANNING_S, &secs);
                rc = cli_print_plan(stdout, plan, NULL);
                if (search != 0) {
                    double mode = 0;
                    arachne_plan_get(plan, ARACHNE_PLAN_RECOMPUTE, &mode);
                    if (search == 2)
                        printf("recomputation: %s (--recompute auto planned selective and full)\n",
                               mode == ARACHNE_RECOMPUTE_FULL ? "full" : "selective");
                    else if (mode == ARACHNE_RECOMPUTE_FULL)
                        printf("recomputation: full (the planner's choice where memory binds; "
                               "--recompute selective keeps selective)\n");
                }
                printf("planner: %s, %.0f plans priced in %.3f s\n", m, evals, secs);
            }
        }
        if (rc == CLI_OK && compare) {
            /* the user's own configuration on the same cluster and setup;
             * with --json the comparison goes to stderr */
            arachne_plan *given = NULL;
            if ((rc = cli_parallel_plan(compare, &env, &given)) == CLI_OK)
                rc = cli_print_compare(json ? stderr : stdout, plan, given, compare);
            arachne_plan_destroy(given);
        }
    }
    arachne_plan_destroy(plan);
    arachne_policy_destroy(pol);
    cli_costenv_free(&env);
    return rc;
}
