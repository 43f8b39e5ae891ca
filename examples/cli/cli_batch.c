/* cli_batch.c -- the global batch is never changed behind the user's back:
 * a plan whose replicas x micro-batch x micro-batches do not add up to the
 * batch asked for runs the asked batch with its exact division when its
 * structure has one (slower: the division kept a surplus that cost less
 * than it gained), and is otherwise an error naming the nearest batches
 * its structure runs exactly, unless --allow-batch-rounding is given; then
 * the batch becomes what the plan runs and the plan is repriced with it
 * (samples/s, MFU and every export then agree with what runs). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* largest batch for which the nearest exact batches are searched */
#define BATCH_SEARCH_MAX 4000000L

/* Nearest batches <= want and >= want that the plan's templates run exactly
 * (each template at least one step per replica: a micro-batch, or depth
 * micro-batches when interleaved); 0 when none. */
static void nearest_exact(const long *step, int n, long want, long *below, long *above)
{
    long base = 0, hi = want, x;
    unsigned char *ok;
    int t;
    *below = *above = 0;
    for (t = 0; t < n; t++) {
        base += step[t];
        if (step[t] > 0 && want + step[t] > hi) hi = want + step[t];
    }
    if (hi > 2 * BATCH_SEARCH_MAX || !(ok = calloc((size_t)hi + 1, 1))) return;
    if (base <= hi) ok[base] = 1;
    for (x = base; x <= hi; x++)
        if (ok[x])
            for (t = 0; t < n; t++)
                if (step[t] > 0 && x + step[t] <= hi) ok[x + step[t]] = 1;
    for (x = want; x >= 1 && !*below; x--)
        if (ok[x]) *below = x;
    for (x = want; x <= hi && !*above; x++)
        if (ok[x]) *above = x;
    free(ok);
}

/* The note of a plan repriced with its exact division: what its fastest
 * division ran (runs samples at before iter/s) and what it runs now. */
static void note_exact(const char *cmd, long runs, double before, long want, double after)
{
    fprintf(stderr, "arachne: %s: the plan's fastest division runs %ld samples at %.4f iter/s; it runs the %ld "
                    "asked at %.4f (--allow-batch-rounding runs %ld)\n",
            cmd, runs, before, want, after, runs);
}

/* The plan's structure runs `want` exactly, but the cost model's division
 * runs `runs`: ARACHNE_OPT_EXACT_BATCH kept the surplus, which costs less
 * than the exact division loses, and the planners ranked the plan by that.
 * The plan is repriced with its exact division (ARACHNE_OPT_EXACT_DIVISION,
 * which cm keeps for the rest of the command, so that every price and
 * export agrees), slower, and the user is told by how much.  CLI_OK when
 * that division fits in memory; otherwise plan and cm are as they were and
 * the caller explains. */
static int exact_division(const char *cmd, arachne_plan *plan, arachne_cost_model *cm, long want, long runs)
{
    double before = cli_pget(plan, ARACHNE_PLAN_ITER_PER_S), was = 0.0;
    arachne_cost_model_get(cm, ARACHNE_OPT_EXACT_DIVISION, &was);
    if (arachne_cost_model_set(cm, ARACHNE_OPT_EXACT_DIVISION, 1) == ARACHNE_OK &&
        arachne_cost_model_price(cm, plan) == ARACHNE_OK && (long)cli_pget(plan, ARACHNE_PLAN_SAMPLES_RUN) == want) {
        note_exact(cmd, runs, before, want, cli_pget(plan, ARACHNE_PLAN_ITER_PER_S));
        return CLI_OK;
    }
    /* back to the division it had: the caller's error describes that plan */
    arachne_cost_model_set(cm, ARACHNE_OPT_EXACT_DIVISION, was);
    arachne_cost_model_price(cm, plan);
    arachne_clear_error();
    return CLI_FAIL;
}

/* The asked batch, the samples the plan runs, and each template's step
 * (samples per replica step: a micro-batch per replica, or depth
 * micro-batches when interleaved, Megatron's rule); returns the number of
 * templates stepped (at most 32). */
static int batch_steps(const arachne_plan *plan, long *want, long *runs, long step[32])
{
    int nt = (int)cli_pget(plan, ARACHNE_PLAN_TEMPLATES), t;
    *want = (long)cli_pget(plan, ARACHNE_PLAN_GLOBAL_BATCH);
    *runs = 0;
    for (t = 0; t < nt && t < 32; t++) {
        long per = (long)(cli_tget(plan, t, ARACHNE_TEMPLATE_REPLICAS) *
                          cli_tget(plan, t, ARACHNE_TEMPLATE_MICRO_BATCH));
        step[t] = cli_tget(plan, t, ARACHNE_TEMPLATE_VP) > 1 ? per * (long)cli_tget(plan, t, ARACHNE_TEMPLATE_DEPTH)
                                                            : per;
        *runs += per * (long)cli_tget(plan, t, ARACHNE_TEMPLATE_MICRO_BATCHES);
    }
    return nt < 32 ? nt : 32;
}

int cli_batch_retry(const char *cmd, arachne_plan **plan, arachne_cost_model *cm, int allow, int exact,
                    cli_planner_fn fn, void *user)
{
    long want, runs, step[32], below = 0, above = 0;
    int nt = batch_steps(*plan, &want, &runs, step);
    double was = 0.0, before = cli_pget(*plan, ARACHNE_PLAN_ITER_PER_S);
    arachne_plan *again = NULL;
    if (allow || runs == want) return 0;
    if (want <= BATCH_SEARCH_MAX) nearest_exact(step, nt, want, &below, &above);
    arachne_cost_model_get(cm, ARACHNE_OPT_EXACT_DIVISION, &was);
    if (arachne_cost_model_set(cm, ARACHNE_OPT_EXACT_DIVISION, 1) == ARACHNE_OK && fn(&again, *plan, user) == ARACHNE_OK &&
        (long)cli_pget(again, ARACHNE_PLAN_SAMPLES_RUN) == want) {
        /* the first plan at its exact division, where its structure has one
         * and the command may reprice: the second run must beat it (priced
         * in the first plan's recompute mode, which the command follows
         * for the plan it keeps) */
        if (exact && below == want &&
            arachne_cost_model_set(cm, ARACHNE_OPT_RECOMPUTE, cli_pget(*plan, ARACHNE_PLAN_RECOMPUTE)) == ARACHNE_OK &&
            arachne_cost_model_price(cm, *plan) == ARACHNE_OK &&
            (long)cli_pget(*plan, ARACHNE_PLAN_SAMPLES_RUN) == want &&
            cli_pget(*plan, ARACHNE_PLAN_ITER_PER_S) >= cli_pget(again, ARACHNE_PLAN_ITER_PER_S)) {
            note_exact(cmd, runs, before, want, cli_pget(*plan, ARACHNE_PLAN_ITER_PER_S));
            arachne_plan_destroy(again);
            arachne_clear_error();
            return 0; /* cm keeps the option: every later price agrees */
        }
        fprintf(stderr, "arachne: %s: the best plan found runs %ld samples at %.4f iter/s (%.0f plans priced in "
                        "%.3f s) and %s the %ld asked%s; planned again, ranking the plans that run %ld first "
                        "(ARACHNE_OPT_EXACT_DIVISION): %.4f iter/s",
                cmd, runs, before, cli_pget(*plan, ARACHNE_PLAN_EVALUATIONS), cli_pget(*plan, ARACHNE_PLAN_PLANNING_S),
                below == want ? "runs" : "its structure cannot run", want,
                below == want ? " only with a slower division" : "", want, cli_pget(again, ARACHNE_PLAN_ITER_PER_S));
        /* the batches the first plan runs as it is, for a user who can change the batch */
        if (below != want && below > 0 && above > 0)
            fprintf(stderr, " (the first plan runs %ld and %ld exactly: give one with --global-batch)", below, above);
        else if (below != want && above > 0)
            fprintf(stderr, " (the first plan runs %ld exactly: give it with --global-batch)", above);
        fputc('\n', stderr);
        arachne_plan_destroy(*plan);
        *plan = again;
        arachne_clear_error();
        return 1; /* cm keeps the option: every later price agrees */
    }
    /* nothing better: the first plan, which cli_batch_exact reprices or explains */
    arachne_plan_destroy(again);
    arachne_cost_model_set(cm, ARACHNE_OPT_EXACT_DIVISION, was);
    arachne_clear_error();
    return 0;
}

int cli_batch_exact(const char *cmd, arachne_plan *plan, arachne_cost_model *cm, int allow, int exact)
{
    long want, runs, step[32], below = 0, above = 0;
    int nt = batch_steps(plan, &want, &runs, step), st;
    if (runs == want) return CLI_OK;
    if (allow) {
        if ((st = arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, (double)runs)) ||
            (st = arachne_cost_model_price(cm, plan)))
            return cli_lib_fail(st, cmd);
        fprintf(stderr, "arachne: %s: global batch %ld rounded to %ld, the batch the plan runs "
                        "(--allow-batch-rounding)\n", cmd, want, runs);
        return CLI_OK;
    }
    if (want <= BATCH_SEARCH_MAX) nearest_exact(step, nt, want, &below, &above);
    if (below == want && exact && exact_division(cmd, plan, cm, want, runs) == CLI_OK) return CLI_OK;
    if (below == want)
        return cli_fail("%s: global batch %ld: the cost model's micro-batch assignment for this plan runs %ld samples "
                        "per iteration; an exact split of %ld exists but is not the fastest it found "
                        "(--allow-batch-rounding runs %ld)",
                        cmd, want, runs, want, runs);
    if (below && above)
        return cli_fail("%s: global batch %ld: the plan runs %ld samples per iteration; batches its structure runs "
                        "exactly: %ld and %ld (give one with --global-batch, or --allow-batch-rounding to run %ld)",
                        cmd, want, runs, below, above, runs);
    if (above)
        return cli_fail("%s: global batch %ld: the plan runs %ld samples per iteration; the nearest batch its "
                        "structure runs exactly is %ld (give it with --global-batch, or --allow-batch-rounding to "
                        "run %ld)", cmd, want, runs, above, runs);
    return cli_fail("%s: global batch %ld: the plan runs %ld samples per iteration (--allow-batch-rounding to run "
                    "%ld)", cmd, want, runs, runs);
}
