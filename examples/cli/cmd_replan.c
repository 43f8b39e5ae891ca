/* cmd_replan.c -- `arachne replan --plan OLD.json --cluster NEWSPEC
 * [--policy FILE] [--horizon S] [--restart-cost S] [--samples K] [--seed S]
 * [--refine N] [--out FILE] [--json]`: the running plan and its model and training setup
 * come from the plan file (cli_plan_open), the new cluster from --cluster;
 * prints the decision (keep or switch, why, the migration) and the plan to
 * run, or with --json the decision JSON (docs/replan.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static double dget(const arachne_replan_decision *d, int field)
{
    double v = 0.0;
    arachne_replan_get(d, field, &v);
    return v;
}

static void print_decision(const arachne_replan_decision *d, const arachne_cluster *c)
{
    const char *why = "";
    int n = (int)dget(d, ARACHNE_DECISION_MIGRATIONS), i, t, nt = 0, shown = 0;
    arachne_replan_explain(d, &why);
    printf("decision: %s\n  %s\n", dget(d, ARACHNE_DECISION_ACTION) == ARACHNE_REPLAN_SWITCH ? "SWITCH" : "KEEP", why);
    printf("  running plan on the new cluster: %.4g samples/s%s; new plan: %.4g samples/s\n",
           dget(d, ARACHNE_DECISION_OLD_SAMPLES_PER_S),
           dget(d, ARACHNE_DECISION_RUNNING_VALID) ? "" : " (cannot run)", dget(d, ARACHNE_DECISION_NEW_SAMPLES_PER_S));
    printf("  switch cost %.2f s = migration %.2f s (slowest rank %d) + restart %.2f s; %.3f GB in %d transfers\n",
           dget(d, ARACHNE_DECISION_COST_S), dget(d, ARACHNE_DECISION_MIGRATION_S),
           (int)dget(d, ARACHNE_DECISION_SLOWEST_RANK), dget(d, ARACHNE_DECISION_RESTART_S),
           dget(d, ARACHNE_DECISION_BYTES_MOVED) / 1e9, n);
    printf("  over %.0f s: gained %.0f samples, lost %.0f, net %.0f\n", dget(d, ARACHNE_DECISION_HORIZON_S),
           dget(d, ARACHNE_DECISION_SAMPLES_GAINED), dget(d, ARACHNE_DECISION_SAMPLES_LOST),
           dget(d, ARACHNE_DECISION_NET_SAMPLES));
    arachne_cluster_type_count(c, &nt);
    printf("  idle GPUs:");
    for (t = 0; t < nt; t++) {
        const char *name = NULL;
        int idle = 0;
        if (arachne_cluster_type_name(c, t, &name) || arachne_replan_idle_gpus(d, name, &idle) || !idle) continue;
        printf(" %s %d", name, idle);
        shown++;
    }
    printf("%s\n", shown ? "" : " none");
    if (n > 0) {
        static const char *links[] = { "intra-node", "inter-node", "checkpoint" };
        printf("  migration (layers: -1 = embedding, blocks = head):\n");
        printf("    %-6s %-6s %-10s %-12s %-10s %s\n", "from", "to", "layers", "GB", "seconds", "link");
        for (i = 0; i < n; i++) {
            double v[9];
            int f;
            char layers[32], from[16];
            for (f = 0; f < 9; f++) arachne_replan_migration_get(d, i, f, &v[f]);
            snprintf(layers, sizeof layers, "%d-%d", (int)v[ARACHNE_MIGRATION_FIRST_LAYER],
                     (int)v[ARACHNE_MIGRATION_END_LAYER]);
            if (v[ARACHNE_MIGRATION_SRC_RANK] < 0) snprintf(from, sizeof from, "ckpt");
            else snprintf(from, sizeof from, "%d", (int)v[ARACHNE_MIGRATION_SRC_RANK]);
            printf("    %-6s %-6d %-10s %-12.4f %-10.4f %s\n", from, (int)v[ARACHNE_MIGRATION_DST_RANK], layers,
                   v[ARACHNE_MIGRATION_BYTES] / 1e9, v[ARACHNE_MIGRATION_SECONDS],
                   links[v[ARACHNE_MIGRATION_LINK] >= 0 && v[ARACHNE_MIGRATION_LINK] <= 2 ? (int)v[ARACHNE_MIGRATION_LINK] : 0]);
        }
    }
}

/* The replanning `arachne replan` runs, again when the batch asks
 * (cli_batch_retry): dec holds the decision of the last run */
typedef struct replan_run {
    const arachne_policy *pol;
    const arachne_cost_model *cm;
    const arachne_plan *running;
    const arachne_replan_options *ro;
    arachne_replan_decision *dec;
} replan_run;

static int replan_once(arachne_plan **out, const arachne_plan *first, void *user)
{
    replan_run *r = (replan_run *)user;
    (void)first; /* the decision weighs plans from the new cluster's planner alone */
    arachne_replan_decision_destroy(r->dec);
    r->dec = NULL;
    return arachne_replan(out, &r->dec, r->pol, r->cm, r->running, r->ro);
}

int cmd_replan(int argc, char **argv)
{
    cli_costenv_opts o;
    cli_costenv old_env, new_env;
    cli_opt opts[CLI_COSTENV_NOPTS + 10];
    const char *plan_path = NULL, *new_cluster = NULL, *policy_path = NULL, *horizon_s = NULL, *restart_s = NULL;
    const char *samples_s = NULL, *seed_s = NULL, *refine_s = NULL, *out_path = NULL, *pos[1];
    int json = 0, npos = 0, n, rc, st, ask_auto;
    double horizon = 1800.0, restart = 20.0;
    char seq_text[32];
    long samples = 16, seed = 0, refine = ARACHNE_REFINE_EVALUATIONS; /* as `arachne plan` */
    arachne_plan *running = NULL, *next = NULL;
    arachne_policy *pol = NULL;
    arachne_replan_options *ro = NULL;
    arachne_replan_decision *dec = NULL;
    replan_run run;

    memset(&old_env, 0, sizeof old_env);
    memset(&new_env, 0, sizeof new_env);
    n = cli_costenv_options(&o, opts);
    /* --cluster is the NEW cluster here: point that entry elsewhere */
    for (rc = 0; rc < n; rc++)
        if (strcmp(opts[rc].name, "cluster") == 0) opts[rc].value = &new_cluster;
    opts[n++] = (cli_opt){ "plan", 1, &plan_path, NULL };
    opts[n++] = (cli_opt){ "policy", 1, &policy_path, NULL };
    opts[n++] = (cli_opt){ "horizon", 1, &horizon_s, NULL };
    opts[n++] = (cli_opt){ "restart-cost", 1, &restart_s, NULL };
    opts[n++] = (cli_opt){ "samples", 1, &samples_s, NULL };
    opts[n++] = (cli_opt){ "seed", 1, &seed_s, NULL };
    opts[n++] = (cli_opt){ "refine", 1, &refine_s, NULL };
    opts[n++] = (cli_opt){ "out", 1, &out_path, NULL };
    opts[n++] = (cli_opt){ "json", 0, NULL, &json };
    if ((rc = cli_parse("replan", argc, argv, opts, n, pos, 0, &npos))) return rc;
    if (!plan_path) return cli_usage_error("replan", "--plan OLD.json is required");
    if (!new_cluster) return cli_usage_error("replan", "--cluster NEWSPEC is required");
    if ((horizon_s && (rc = cli_double("replan", "horizon", horizon_s, 1e-9, 1e9, &horizon))) ||
        (restart_s && (rc = cli_double("replan", "restart-cost", restart_s, 0.0, 1e9, &restart))) ||
        (samples_s && (rc = cli_int("replan", "samples", samples_s, 1, CLI_MAX_SAMPLES, &samples))) ||
        (seed_s && (rc = cli_int("replan", "seed", seed_s, 0, 0x7fffffffL, &seed))) ||
        (refine_s && (rc = cli_int("replan", "refine", refine_s, 0, 100000000L, &refine))))
        return rc;

    /* the running plan on its own cluster (model and setup from the file;
     * with --recompute auto, in the mode the file records) */
    ask_auto = o.recompute && !strcmp(o.recompute, "auto");
    if (ask_auto) o.recompute = NULL;
    rc = cli_plan_open("replan", plan_path, &o, &old_env, &running, NULL);
    if (ask_auto) {
        o.recompute = "auto";
        o.recompute_from_plan = 0;
    }
    if (rc != CLI_OK) return rc;
    /* the new cluster, same model and setup; the plan's embedded profile
     * covers the old cluster's GPU types, so without --profile the new
     * cluster gets a generated one at the plan's sequence length */
    o.cluster = new_cluster;
    if (!o.profile) {
        int seq = 0;
        o.profile_json = NULL;
        arachne_profile_seq_len(old_env.profile, &seq);
        snprintf(seq_text, sizeof seq_text, "%d", seq);
        o.seq_len = seq_text;
    }
    if ((rc = cli_costenv_build("replan", &o, &new_env)) != CLI_OK) goto done;

    if (!policy_path) policy_path = cli_find_policy();
    if (policy_path) {
        if ((st = arachne_policy_load(&pol, policy_path))) { rc = cli_lib_fail(st, "replan: --policy"); goto done; }
    } else {
        if (!json) fprintf(stderr, "arachne: replan: no bundled policy found; using an untrained policy (seed 1)\n");
        if ((st = arachne_policy_create(&pol, 1, 0, 0))) { rc = cli_lib_fail(st, "replan"); goto done; }
    }
    if ((st = arachne_replan_options_create(&ro)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_HORIZON_S, horizon)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_RESTART_S, restart)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_SAMPLES, (double)samples)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_SEED, (double)seed)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS, (double)refine))) {
        rc = cli_lib_fail(st, "replan");
        goto done;
    }
    run.pol = pol;
    run.cm = new_env.cm;
    run.running = running;
    run.ro = ro;
    run.dec = NULL;
    st = replan_once(&next, NULL, &run);
    dec = run.dec;
    run.dec = NULL;
    if (st) { rc = cli_lib_fail(st, "replan"); goto done; }
    /* the decision goes with the plan kept: the second run's when it replaced the first */
    if (cli_batch_retry("replan", &next, new_env.cm, o.allow_batch_rounding, 0, replan_once, &run)) {
        arachne_replan_decision_destroy(dec);
        dec = run.dec;
    } else {
        arachne_replan_decision_destroy(run.dec);
    }
    /* batch rounding reprices in the mode of the plan chosen */
    if ((rc = cli_costenv_follow_plan("replan", &new_env, next)) != CLI_OK) goto done;
    /* no exact repricing here: the decision was taken on the plan's own
     * price, which a slower division would contradict */
    if ((rc = cli_batch_exact("replan", next, new_env.cm, o.allow_batch_rounding, 0)) != CLI_OK) goto done;
    if (out_path && (st = arachne_plan_save(next, out_path))) { rc = cli_lib_fail(st, "replan: --out"); goto done; }
    rc = CLI_OK;
    if (json) {
        const char *text = NULL;
        if ((st = arachne_replan_to_json(dec, &text))) rc = cli_lib_fail(st, "replan");
        else fputs(text, stdout);
    } else {
        const char *oc = "", *nc = "";
        char title[512];
        arachne_cluster_to_string(old_env.cluster, &oc);
        arachne_cluster_to_string(new_env.cluster, &nc);
        printf("running plan %s on %s; new cluster %s\n", plan_path, oc, nc);
        print_decision(dec, new_env.cluster);
        snprintf(title, sizeof title, "\nplan to run (%s):",
                 dget(dec, ARACHNE_DECISION_ACTION) == ARACHNE_REPLAN_SWITCH ? "the new plan" : "the running plan");
        rc = cli_print_plan(stdout, next, title);
        if (out_path) printf("wrote %s\n", out_path);
    }
done:
    arachne_replan_decision_destroy(dec);
    arachne_replan_options_destroy(ro);
    arachne_plan_destroy(next);
    arachne_plan_destroy(running);
    arachne_policy_destroy(pol);
    cli_costenv_free(&new_env);
    cli_costenv_free(&old_env);
    return rc;
}
