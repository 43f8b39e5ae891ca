/* cli_costenv.c -- the training-setup options shared by the commands that
 * price or search plans, and the model + cluster + profile + cost model they
 * build from them. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cli_costenv_options(cli_costenv_opts *o, cli_opt *opts)
{
    const cli_opt table[CLI_COSTENV_NOPTS] = {
        { "model", 1, &o->model, NULL },
        { "cluster", 1, &o->cluster, NULL },
        { "profile", 1, &o->profile, NULL },
        { "global-batch", 1, &o->global_batch, NULL },
        { "seq-len", 1, &o->seq_len, NULL },
        { "recompute", 1, &o->recompute, NULL },
        { "dist-optimizer", 0, NULL, &o->dist_optimizer },
        { "no-dist-optimizer", 0, NULL, &o->no_dist_optimizer },
        { "no-overlap-grad-reduce", 0, NULL, &o->no_overlap_grad_reduce },
        { "no-overlap-param-gather", 0, NULL, &o->no_overlap_param_gather },
        { "tp-comm-overlap", 0, NULL, &o->tp_comm_overlap },
        { "weight-bytes", 1, &o->weight_bytes, NULL },
        { "grad-bytes", 1, &o->grad_bytes, NULL },
        { "optim-bytes", 1, &o->optim_bytes, NULL },
        { "headroom", 1, &o->headroom, NULL },
        { "max-depth", 1, &o->max_depth, NULL },
        { "max-vp", 1, &o->max_vp, NULL },
        { "no-expert-tiling", 0, NULL, &o->no_expert_tiling },
        { "no-context-parallel", 0, NULL, &o->no_context_parallel },
        { "ep-hierarchical", 0, NULL, &o->ep_hierarchical },
        { "allow-batch-rounding", 0, NULL, &o->allow_batch_rounding },
        { "no-stage-reversal", 0, NULL, &o->no_stage_reversal },
        { "no-priced-resplit", 0, NULL, &o->no_priced_resplit },
        { "no-stage-moves", 0, NULL, &o->no_stage_moves },
        { "no-stage-major", 0, NULL, &o->no_stage_major },
        { "no-fsdp-search", 0, NULL, &o->no_fsdp_search },
    };
    memset(o, 0, sizeof *o);
    memcpy(opts, table, sizeof table);
    return CLI_COSTENV_NOPTS;
}

/* Whether name is a model preset: a preset wins over a file or directory
 * of the same name (arachne_model_open), so it is not checked as one. */
static int is_model_preset(const char *name)
{
    arachne_model *m = NULL;
    int ok = arachne_model_preset(&m, name) == ARACHNE_OK;
    arachne_model_destroy(m);
    arachne_clear_error();
    return ok;
}

int cli_check_regular(const char *cmd, const char *opt, const char *s)
{
    struct stat st;
    if (stat(s, &st) != 0 || S_ISREG(st.st_mode)) return CLI_OK; /* not a file: a name or spec */
    return cli_fail("%s: --%s: '%s' is not a regular file", cmd, opt, s);
}

void cli_costenv_free(cli_costenv *env)
{
    if (!env) return;
    arachne_cost_model_destroy(env->cm);
    arachne_profile_destroy(env->profile);
    arachne_cluster_destroy(env->cluster);
    arachne_model_destroy(env->model);
    memset(env, 0, sizeof *env);
}

static int set_opt(cli_costenv *env, int option, double v)
{
    int st = arachne_cost_model_set(env->cm, option, v);
    return st == ARACHNE_OK ? CLI_OK : cli_lib_fail(st, "training setup");
}

int cli_costenv_follow_plan(const char *cmd, cli_costenv *env, const arachne_plan *plan)
{
    double mode = ARACHNE_RECOMPUTE_SELECTIVE;
    int st = arachne_plan_get(plan, ARACHNE_PLAN_RECOMPUTE, &mode);
    if (!st) st = arachne_cost_model_set(env->cm, ARACHNE_OPT_RECOMPUTE, mode);
    return st ? cli_lib_fail(st, cmd) : CLI_OK;
}

int cli_costenv_build(const char *cmd, const cli_costenv_opts *o, cli_costenv *env)
{
    long batch = 512, seq = 4096, depth = 16, max_vp = 1;
    double headroom = 0.08, wbytes = 2.0, gbytes = 4.0, obytes = 12.0;
    /* no --recompute: selective, and the planner may choose full where a
     * probe says it pays (ARACHNE_OPT_RECOMPUTE_SEARCH 1); a mode the user
     * names is the mode planned (0); auto plans both (2) */
    int recompute = ARACHNE_RECOMPUTE_SELECTIVE, recompute_search = 1, st, rc;
    memset(env, 0, sizeof *env);
    /* validate every option before touching files */
    if (!o->model && !o->model_json && !o->model_name) return cli_usage_error(cmd, "--model is required");
    if (!o->cluster && !o->cluster_json && !o->cluster_spec) return cli_usage_error(cmd, "--cluster is required");
    if (o->global_batch && (rc = cli_int(cmd, "global-batch", o->global_batch, 1, 1000000000L, &batch))) return rc;
    if (o->seq_len && (rc = cli_int(cmd, "seq-len", o->seq_len, 1, 10000000L, &seq))) return rc;
    if (o->max_depth && (rc = cli_int(cmd, "max-depth", o->max_depth, 1, 32, &depth))) return rc;
    if (o->max_vp && (rc = cli_int(cmd, "max-vp", o->max_vp, 1, 16, &max_vp))) return rc;
    if (o->headroom && (rc = cli_double(cmd, "headroom", o->headroom, 0.0, 0.999999, &headroom))) return rc;
    if (o->weight_bytes && (rc = cli_double(cmd, "weight-bytes", o->weight_bytes, 1e-9, 64.0, &wbytes))) return rc;
    if (o->grad_bytes && (rc = cli_double(cmd, "grad-bytes", o->grad_bytes, 1e-9, 64.0, &gbytes))) return rc;
    if (o->optim_bytes && (rc = cli_double(cmd, "optim-bytes", o->optim_bytes, 0.0, 64.0, &obytes))) return rc;
    if (o->dist_optimizer && o->no_dist_optimizer)
        return cli_usage_error(cmd, "--dist-optimizer and --no-dist-optimizer contradict each other");
    if (o->recompute) {
        if (!o->recompute_from_plan) recompute_search = 0;
        if (strcmp(o->recompute, "none") == 0) recompute = ARACHNE_RECOMPUTE_NONE;
        else if (strcmp(o->recompute, "selective") == 0) recompute = ARACHNE_RECOMPUTE_SELECTIVE;
        else if (strcmp(o->recompute, "full") == 0) recompute = ARACHNE_RECOMPUTE_FULL;
        else if (strcmp(o->recompute, "auto") == 0 && (!strcmp(cmd, "plan") || !strcmp(cmd, "replan")))
            recompute_search = 2; /* selective, and full as the planner's alternative */
        else if (strcmp(o->recompute, "auto") == 0)
            return cli_usage_error(cmd, "--recompute auto: only plan and replan choose the mode; %s takes none, "
                                        "selective or full", cmd);
        else return cli_usage_error(cmd, "--recompute: '%s' is not none, selective, full or auto", o->recompute);
    }
    if ((o->model && !is_model_preset(o->model) && (rc = cli_check_regular(cmd, "model", o->model))) ||
        (o->cluster && (rc = cli_check_regular(cmd, "cluster", o->cluster))) ||
        (o->profile && (rc = cli_check_regular(cmd, "profile", o->profile))))
        return rc;
    if (o->model) st = arachne_model_open(&env->model, o->model);
    else if (o->model_json) st = arachne_model_from_json(&env->model, o->model_json, strlen(o->model_json));
    else st = arachne_model_preset(&env->model, o->model_name);
    if (st != ARACHNE_OK) {
        rc = cli_lib_fail(st, o->model ? o->model : o->model_json ? "the plan's embedded model" : o->model_name);
        goto fail;
    }
    if (o->cluster) st = arachne_cluster_open(&env->cluster, o->cluster);
    else if (o->cluster_json) st = arachne_cluster_from_json(&env->cluster, o->cluster_json, strlen(o->cluster_json));
    else st = arachne_cluster_parse(&env->cluster, o->cluster_spec);
    if (st != ARACHNE_OK) {
        rc = cli_lib_fail(st, o->cluster ? o->cluster : o->cluster_json ? "the plan's embedded cluster" : "the plan's cluster");
        goto fail;
    }
    if (o->cluster) cli_note_spec_aliases(o->cluster);
    if (o->profile || o->profile_json) {
        int pseq = 0;
        if (o->profile) st = arachne_profile_load(&env->profile, o->profile);
        else st = arachne_profile_from_json(&env->profile, o->profile_json, strlen(o->profile_json));
        if (st != ARACHNE_OK) {
            rc = cli_lib_fail(st, o->profile ? o->profile : "the plan's embedded profile");
            goto fail;
        }
        arachne_profile_seq_len(env->profile, &pseq);
        if (o->seq_len && pseq != seq) {
            rc = cli_fail("%s: --seq-len %ld differs from the profile's sequence length %d (%s)", cmd, seq, pseq,
                          o->profile ? o->profile : "the plan's embedded profile");
            goto fail;
        }
    } else if ((st = arachne_profile_generate(&env->profile, env->model, env->cluster, (int)seq)) != ARACHNE_OK) {
        rc = cli_lib_fail(st, "generating a profile");
        goto fail;
    }
    if ((st = arachne_cost_model_create(&env->cm, env->model, env->cluster, env->profile)) != ARACHNE_OK) {
        rc = cli_lib_fail(st, cmd); /* the library's message starts with "cost model: " */
        goto fail;
    }
    if ((rc = set_opt(env, ARACHNE_OPT_GLOBAL_BATCH, (double)batch)) ||
        (rc = set_opt(env, ARACHNE_OPT_RECOMPUTE, recompute)) ||
        (rc = set_opt(env, ARACHNE_OPT_HEADROOM, headroom)) ||
        (rc = set_opt(env, ARACHNE_OPT_MAX_DEPTH, (double)depth)) ||
        (rc = set_opt(env, ARACHNE_OPT_MAX_VP, (double)max_vp)) ||
        (rc = set_opt(env, ARACHNE_OPT_DIST_OPTIMIZER, o->no_dist_optimizer ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_OVERLAP_GRAD_REDUCE, o->no_overlap_grad_reduce ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_OVERLAP_PARAM_GATHER, o->no_overlap_param_gather ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_TP_COMM_OVERLAP, o->tp_comm_overlap ? 1 : 0)) ||
        (rc = set_opt(env, ARACHNE_OPT_WEIGHT_BYTES, wbytes)) ||
        (rc = set_opt(env, ARACHNE_OPT_GRAD_BYTES, gbytes)) ||
        (rc = set_opt(env, ARACHNE_OPT_OPTIM_BYTES, obytes)) ||
        (rc = set_opt(env, ARACHNE_OPT_EXPERT_TILING, o->no_expert_tiling ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_CONTEXT_PARALLEL, o->no_context_parallel ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_EP_HIERARCHICAL, o->ep_hierarchical ? 1 : 0)) ||
        (rc = set_opt(env, ARACHNE_OPT_STAGE_REVERSAL, o->no_stage_reversal ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_PRICED_RESPLIT, o->no_priced_resplit ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_STAGE_MOVES, o->no_stage_moves ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_STAGE_MAJOR, o->no_stage_major ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_FSDP_SEARCH, o->no_fsdp_search ? 0 : 1)) ||
        (rc = set_opt(env, ARACHNE_OPT_RECOMPUTE_SEARCH, recompute_search)) ||
        /* a user who lets the batch round also lets the planners rank by speed alone */
        (rc = set_opt(env, ARACHNE_OPT_EXACT_BATCH, o->allow_batch_rounding ? 0 : 1)))
        goto fail;
    return CLI_OK;
fail:
    cli_costenv_free(env);
    return rc;
}
