/* elastic.c -- a cluster that grows under a running job (the paper's
 * "cluster that grows" scenario, docs/replan.md).
 *
 * llama3-8b starts on three RTX PRO 6000 GPUs in one node; every five
 * minutes a four-GPU node joins (A6000, A5000, A6000, A6000) until there are
 * 19 GPUs.  At every join the job calls arachne_replan with the running plan
 * and the new cluster, prints the plan it will run, the decision (keep or
 * switch, why, what moves and how long it takes), the throughput and the
 * samples trained so far (throughput integrated over each five-minute
 * window, minus the time a switch stops training).  A plan made fresh at
 * every join (no plan carried forward) is shown beside it.
 *
 * Exit status: 0 when the throughput never drops at a join; 1 when it does
 * (or on an error); 2 for a usage error.
 *
 * usage: elastic [--policy FILE] [--samples K] [--seed S] [--horizon S]
 *                [--restart-cost S] [--model M]
 * Without --policy: $ARACHNE_POLICY, then examples/policies/default.arpol,
 * else an untrained policy (seed 1), said on the first line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"

#define WINDOW_S 300.0
#define STEPS 5

/* Cluster after each join, in join order (new nodes appended per type). */
static const char *const clusters[STEPS] = {
    "rtx-pro-6000:1x3",
    "rtx-pro-6000:1x3,a6000:1x4",
    "rtx-pro-6000:1x3,a6000:1x4,a5000:1x4",
    "rtx-pro-6000:1x3,a6000:2x4,a5000:1x4",
    "rtx-pro-6000:1x3,a6000:3x4,a5000:1x4",
};
static const char *const joins[STEPS] = { "start", "+ A6000 x4", "+ A5000 x4", "+ A6000 x4", "+ A6000 x4" };

typedef struct env {
    arachne_cluster *cluster;
    arachne_profile *profile;
    arachne_cost_model *cm;
} env;

static int fail(int st, const char *what)
{
    fprintf(stderr, "elastic: %s: %s (%s)\n", what, arachne_last_error(), arachne_status_string(st));
    return 1;
}

static void env_free(env *e)
{
    arachne_cost_model_destroy(e->cm);
    arachne_profile_destroy(e->profile);
    arachne_cluster_destroy(e->cluster);
    memset(e, 0, sizeof *e);
}

static int env_make(env *e, const arachne_model *m, const char *spec)
{
    int st;
    memset(e, 0, sizeof *e);
    if ((st = arachne_cluster_parse(&e->cluster, spec)) ||
        (st = arachne_profile_generate(&e->profile, m, e->cluster, 4096)) ||
        (st = arachne_cost_model_create(&e->cm, m, e->cluster, e->profile))) {
        fail(st, spec);
        env_free(e);
        return st;
    }
    return 0;
}

static double pget(const arachne_plan *p, int f)
{
    double v = 0.0;
    arachne_plan_get(p, f, &v);
    return v;
}

static double dget(const arachne_replan_decision *d, int f)
{
    double v = 0.0;
    arachne_replan_get(d, f, &v);
    return v;
}

/* One line per template: "2 x [A6000 tp1 0-8 | RTX-PRO-6000 tp2 8-32] mb 2". */
static void print_plan(const arachne_plan *p)
{
    int t, s, nt = (int)pget(p, ARACHNE_PLAN_TEMPLATES);
    printf("    plan: %d template%s, %d of %d GPUs\n", nt, nt == 1 ? "" : "s", (int)pget(p, ARACHNE_PLAN_GPUS_USED),
           (int)pget(p, ARACHNE_PLAN_GPUS_TOTAL));
    for (t = 0; t < nt; t++) {
        double depth = 0, reps = 0, mb = 0;
        arachne_plan_template_get(p, t, ARACHNE_TEMPLATE_DEPTH, &depth);
        arachne_plan_template_get(p, t, ARACHNE_TEMPLATE_REPLICAS, &reps);
        arachne_plan_template_get(p, t, ARACHNE_TEMPLATE_MICRO_BATCH, &mb);
        printf("      T%d: %d x [", t, (int)reps);
        for (s = 0; s < (int)depth; s++) {
            const char *gpu = "?";
            double tp = 0, first = 0, end = 0;
            arachne_plan_stage_gpu(p, t, s, &gpu);
            arachne_plan_stage_get(p, t, s, ARACHNE_STAGE_TP, &tp);
            arachne_plan_stage_get(p, t, s, ARACHNE_STAGE_FIRST_LAYER, &first);
            arachne_plan_stage_get(p, t, s, ARACHNE_STAGE_END_LAYER, &end);
            printf("%s%s tp%d %d-%d", s ? " | " : "", gpu, (int)tp, (int)first, (int)end);
        }
        printf("] micro-batch %d\n", (int)mb);
    }
}

static void print_idle(const arachne_replan_decision *d, const arachne_cluster *c)
{
    int nt = 0, t, shown = 0;
    arachne_cluster_type_count(c, &nt);
    printf("    idle GPUs:");
    for (t = 0; t < nt; t++) {
        const char *name = NULL;
        int idle = 0;
        if (arachne_cluster_type_name(c, t, &name) || arachne_replan_idle_gpus(d, name, &idle) || !idle) continue;
        printf(" %s x%d (straggler left out)", name, idle);
        shown++;
    }
    printf("%s\n", shown ? "" : " none");
}

/* Whole-string numbers: "5x", "1e3" for an integer, "" and "20s" are
 * refused rather than truncated. */
static int parse_long(const char *v, long *out)
{
    char *end = NULL;
    long x;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end) return 0;
    *out = x;
    return 1;
}

static int parse_double(const char *v, double *out)
{
    char *end = NULL;
    double x;
    errno = 0;
    x = strtod(v, &end);
    if (errno || end == v || *end) return 0;
    *out = x;
    return 1;
}

int main(int argc, char **argv)
{
    const char *policy_path = NULL, *model_name = "llama3-8b";
    long samples = 16, seed = 0;
    /* The horizon is the time until the next expected change: in this
     * scenario a node joins every WINDOW_S seconds, so a switch must pay
     * for itself before the next join. */
    double horizon = WINDOW_S, restart = 20.0, total = 0.0, thr, prev_thr;
    int i, st, k, keeps = 0, switches = 0, drops = 0, fresh_drops = 0, rc = 1;
    double fresh_prev = 0.0;
    arachne_model *model = NULL;
    arachne_policy *pol = NULL;
    arachne_replan_options *ro = NULL;
    arachne_plan *running = NULL;
    env cur, next;
    memset(&cur, 0, sizeof cur);
    memset(&next, 0, sizeof next);

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int known = 1, number = 1;
        if (strcmp(a, "--policy") == 0 && v) policy_path = v;
        else if (strcmp(a, "--samples") == 0 && v) number = parse_long(v, &samples);
        else if (strcmp(a, "--seed") == 0 && v) number = parse_long(v, &seed);
        else if (strcmp(a, "--horizon") == 0 && v) number = parse_double(v, &horizon);
        else if (strcmp(a, "--restart-cost") == 0 && v) number = parse_double(v, &restart);
        else if (strcmp(a, "--model") == 0 && v) model_name = v;
        else known = 0;
        i += known;
        if (!known || !number) {
            if (!number) fprintf(stderr, "elastic: %s: '%s' is not a number\n", a, v);
            fprintf(stderr, "usage: elastic [--policy FILE] [--samples K] [--seed S] [--horizon S] "
                            "[--restart-cost S] [--model M]\n");
            return 2;
        }
    }
    if (samples < 1 || samples > 100000 || seed < 0 || !(horizon > 0.0) || restart < 0.0) {
        fprintf(stderr, "elastic: --samples 1..100000, --seed >= 0, --horizon > 0, --restart-cost >= 0\n");
        return 2;
    }

    if (!policy_path) policy_path = getenv("ARACHNE_POLICY");
    if (!policy_path || !policy_path[0]) {
        FILE *f = fopen("examples/policies/default.arpol", "rb");
        policy_path = NULL;
        if (f) { fclose(f); policy_path = "examples/policies/default.arpol"; }
    }
    if (policy_path) {
        if ((st = arachne_policy_load(&pol, policy_path))) return fail(st, policy_path);
        printf("policy: %s, best of %ld plans per replan (seed %ld)\n", policy_path, samples, seed);
    } else {
        if ((st = arachne_policy_create(&pol, 1, 0, 0))) return fail(st, "policy");
        printf("policy: none bundled (examples/policies/default.arpol missing): an UNTRAINED policy (seed 1), "
               "best of %ld plans per replan (seed %ld)\n", samples, seed);
    }
    if ((st = arachne_model_open(&model, model_name))) {
        rc = fail(st, model_name);
        goto done;
    }
    if ((st = arachne_replan_options_create(&ro)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_HORIZON_S, horizon)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_RESTART_S, restart)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_SAMPLES, (double)samples)) ||
        (st = arachne_replan_options_set(ro, ARACHNE_REPLAN_OPT_SEED, (double)seed))) {
        rc = fail(st, "replan options");
        goto done;
    }
    printf("model %s, global batch 512 x 4096 tokens; a node joins every %.0f s; "
           "decision horizon %.0f s, restart cost %.0f s\n\n", model_name, WINDOW_S, horizon, restart);

    /* t = 0: plan the first node */
    if (env_make(&cur, model, clusters[0])) goto done;
    if ((st = arachne_plan_build(&running, pol, cur.cm, (int)samples, (uint64_t)seed))) {
        rc = fail(st, "initial plan");
        goto done;
    }
    thr = pget(running, ARACHNE_PLAN_SAMPLES_PER_S);
    fresh_prev = thr;
    printf("t=%4.0f s  %-12s %-40s %2d GPUs\n", 0.0, joins[0], clusters[0], 3);
    print_plan(running);
    total += thr * WINDOW_S;
    printf("    throughput %.3f samples/s; trained %.0f samples by t=%.0f s\n\n", thr, total, WINDOW_S);

    for (k = 1; k < STEPS; k++) {
        arachne_replan_decision *d = NULL;
        arachne_plan *np = NULL;
        const char *why = "";
        double cost, window, fresh, gpus = 0;
        int sw;
        prev_thr = thr;
        if (env_make(&next, model, clusters[k])) goto done;
        if ((st = arachne_replan(&np, &d, pol, next.cm, running, ro))) {
            rc = fail(st, clusters[k]);
            goto done;
        }
        sw = dget(d, ARACHNE_DECISION_ACTION) == ARACHNE_REPLAN_SWITCH;
        arachne_replan_explain(d, &why);
        cost = dget(d, ARACHNE_DECISION_COST_S);
        thr = pget(np, ARACHNE_PLAN_SAMPLES_PER_S);
        fresh = dget(d, ARACHNE_DECISION_NEW_SAMPLES_PER_S);
        gpus = pget(np, ARACHNE_PLAN_GPUS_TOTAL);
        window = sw ? (WINDOW_S > cost ? WINDOW_S - cost : 0.0) : WINDOW_S;
        total += thr * window;
        printf("t=%4.0f s  %-12s %-40s %2d GPUs\n", k * WINDOW_S, joins[k], clusters[k], (int)gpus);
        print_plan(np);
        printf("    decision: %s\n      %s\n", sw ? "SWITCH" : "KEEP", why);
        printf("      switching moves %.2f GB in %d transfers: %.2f s (slowest rank %d) + %.0f s restart = %.2f s\n",
               dget(d, ARACHNE_DECISION_BYTES_MOVED) / 1e9, (int)dget(d, ARACHNE_DECISION_MIGRATIONS),
               dget(d, ARACHNE_DECISION_MIGRATION_S), (int)dget(d, ARACHNE_DECISION_SLOWEST_RANK),
               dget(d, ARACHNE_DECISION_RESTART_S), cost);
        print_idle(d, next.cluster);
        printf("    throughput %.3f -> %.3f samples/s (%+.1f%%); a fresh plan with nothing carried forward: %.3f "
               "(%+.1f%% vs the last fresh plan)\n", prev_thr, thr, 100.0 * (thr - prev_thr) / prev_thr, fresh,
               100.0 * (fresh - fresh_prev) / fresh_prev);
        printf("    trained %.0f samples by t=%.0f s%s\n\n", total, (k + 1) * WINDOW_S,
               sw ? " (training stopped for the switch)" : "");
        if (sw) switches++;
        else keeps++;
        if (thr < prev_thr * (1.0 - 1e-12)) drops++;
        if (fresh < fresh_prev * (1.0 - 1e-12)) fresh_drops++;
        fresh_prev = fresh;
        arachne_replan_decision_destroy(d);
        arachne_plan_destroy(running);
        running = np;
        env_free(&cur);
        cur = next;
        memset(&next, 0, sizeof next);
    }
    printf("summary: %d joins, %d switch%s, %d keep%s; %.0f samples in %.0f s; throughput %s at a join "
           "(fresh plans without carrying the running one: %d drop%s)\n",
           STEPS - 1, switches, switches == 1 ? "" : "es", keeps, keeps == 1 ? "" : "s", total, STEPS * WINDOW_S,
           drops ? "DROPPED" : "never dropped", fresh_drops, fresh_drops == 1 ? "" : "s");
    rc = drops ? 1 : 0;
done:
    arachne_plan_destroy(running);
    env_free(&cur);
    env_free(&next);
    arachne_replan_options_destroy(ro);
    arachne_policy_destroy(pol);
    arachne_model_destroy(model);
    return rc;
}
