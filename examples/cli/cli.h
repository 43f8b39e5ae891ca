/* cli.h -- shared pieces of the `arachne` command: the subcommand table,
 * error reporting with the documented exit codes, and a small long-option
 * parser.  Exit codes: 0 success, 1 failure, 2 usage error. */
#ifndef ARACHNE_CLI_H
#define ARACHNE_CLI_H

#include <stdio.h>
#include "arachne.h"

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2
/* Largest --samples of plan and replan: best-of-K takes about 2 ms per
 * sample on a 48-GPU cluster, so 1024 stays interactive. */
#define CLI_MAX_SAMPLES 1024

typedef struct cli_cmd {
    const char *name;
    const char *summary;            /* one line for `arachne --help` */
    const char *usage;              /* text for `arachne CMD --help`, */
    const char *usage_tail;         /* then this (the setup options of plan and search) */
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} cli_cmd;

/* Prints "arachne: <msg>" on stderr; returns CLI_FAIL. */
int cli_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Prints "arachne: <cmd>: <msg>" (and a hint to use --help); returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints "arachne: <what>: <arachne_last_error()>" ; returns CLI_FAIL. */
int cli_lib_fail(int status, const char *what);
/* 1 when a and b name one file: the same string, or both exist with the
 * same device and inode. */
int cli_same_file(const char *a, const char *b);

/* Long-option parser.  Options are "--name VALUE", "--name=VALUE" or flags.
 * Non-option arguments are collected into positional[] (at most npos_max).
 * Returns 0, or CLI_USAGE after printing the problem. */
typedef struct cli_opt {
    const char *name;   /* without the leading "--" */
    int takes_value;    /* 1: string value; 0: flag */
    const char **value; /* where the value goes (takes_value) */
    int *flag;          /* set to 1 when present (flags) */
} cli_opt;
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
              const char **positional, int npos_max, int *npos);

/* Number parsing with range checks; return 0 or CLI_USAGE after printing. */
int cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);

/* Writes a JSON string literal (quoted, escaped) to f. */
void cli_json_string(FILE *f, const char *s);

/* Bare 'a100' in a cluster spec is the 40 GB part (A100-40); when spec uses
 * it, says so once on stderr ("arachne: note: ..."), so that nobody plans an
 * 80 GB cluster as a 40 GB one without noticing.  Files are not inspected. */
void cli_note_spec_aliases(const char *spec);

/* ---- Training setup shared by price, search, plan (cli_costenv.c) ------- */

/* The parsed strings of the shared training-setup options (NULL / 0 when
 * absent):  --model M --cluster SPEC|FILE --profile FILE --global-batch N
 * --seq-len N --recompute none|selective|full|auto --dist-optimizer
 * --headroom F --max-depth D --max-vp V --no-expert-tiling --no-context-parallel --ep-hierarchical
 * --allow-batch-rounding --no-stage-reversal --no-priced-resplit --no-stage-moves
 * --no-stage-major --no-fsdp-search */
typedef struct cli_costenv_opts {
    const char *model, *cluster, *profile, *global_batch, *seq_len, *recompute, *headroom, *max_depth, *max_vp;
    const char *weight_bytes, *grad_bytes, *optim_bytes;
    int dist_optimizer, no_dist_optimizer, no_expert_tiling, no_context_parallel, ep_hierarchical;
    int no_overlap_grad_reduce, no_overlap_param_gather, tp_comm_overlap, allow_batch_rounding, no_stage_reversal;
    int no_priced_resplit, no_stage_moves, no_stage_major, no_fsdp_search;
    /* Not options: set by cli_plan_open from a plan file.  JSON text used
     * instead of model / cluster / profile when those are NULL; model_name
     * and cluster_spec: a version-1 plan's fields, read as a preset name and
     * a compact spec only (never opened as paths). */
    const char *model_json, *cluster_json, *profile_json;
    const char *model_name, *cluster_spec;
    int recompute_from_plan; /* 1: recompute is the plan file's mode, not the user's (the planner
                              * may still choose full recomputation, ARACHNE_OPT_RECOMPUTE_SEARCH 1) */
} cli_costenv_opts;

/* Everything a pricing command needs; the cost model borrows the other three. */
typedef struct cli_costenv {
    arachne_model *model;
    arachne_cluster *cluster;
    arachne_profile *profile;
    arachne_cost_model *cm;
} cli_costenv;

/* Number of cli_opt entries cli_costenv_options() writes. */
#define CLI_COSTENV_NOPTS 26
/* Usage lines for the shared options (append to a command's usage text). */
/* Usage lines of the shared options: CLI_COSTENV_USAGE where --model and
 * --cluster are required (plan, search), CLI_COSTENV_PLANFILE_USAGE where
 * they default to what a plan file records (price, export). */
#define CLI_COSTENV_MODEL_CLUSTER_REQUIRED \
    "  --model M              model preset or model JSON file (required)\n" \
    "  --cluster SPEC|FILE    cluster spec such as a100-40:32x4,h100:16x8, or a cluster JSON file (required)\n"
#define CLI_COSTENV_MODEL_CLUSTER_FROM_PLAN \
    "  --model M              model preset or model JSON file (default: the plan file's)\n" \
    "  --cluster SPEC|FILE    cluster spec such as a100-40:32x4,h100:16x8, or a cluster JSON file (default: the plan file's)\n"
#define CLI_COSTENV_USAGE CLI_COSTENV_MODEL_CLUSTER_REQUIRED CLI_COSTENV_SETUP_USAGE
#define CLI_COSTENV_PLANFILE_USAGE CLI_COSTENV_MODEL_CLUSTER_FROM_PLAN CLI_COSTENV_SETUP_USAGE
#define CLI_COSTENV_SETUP_USAGE \
    "  --profile FILE         profile table JSON (default: generated for the model and cluster)\n" \
    "  --global-batch N       samples per iteration (default 512)\n" \
    "  --seq-len N            tokens per sample (default 4096; must match --profile)\n" \
    "  --recompute MODE       none | selective | full; plan and replan also take auto (selective and full\n" \
    "                         planned, the faster kept); default: selective, or full where a probe finds it faster\n" \
    "  --no-dist-optimizer    replicate optimizer state (default: sharded over data-parallel ranks, ZeRO-1)\n" \
    "  --no-overlap-grad-reduce  charge the whole gradient reduction after the backward pass\n" \
    "  --no-overlap-param-gather charge the distributed optimizer's all-gather before the forward pass\n" \
    "  --tp-comm-overlap      TP collectives overlap the GEMMs (Megatron --tp-comm-overlap)\n" \
    "  --weight-bytes B       bytes per parameter of weights (default 2)\n" \
    "  --grad-bytes B         bytes per parameter of gradients (default 4)\n" \
    "  --optim-bytes B        bytes per parameter of optimizer state (default 12)\n" \
    "  --headroom F           fraction of GPU memory kept free, [0, 1) (default 0.08)\n" \
    "  --max-depth D          deepest pipeline searched, 1..32 (default 16)\n" \
    "  --max-vp V             interleaved 1F1B: the fill tries up to V model chunks per stage, 1..16 (default 1: off; the library's default is 8)\n" \
    "  --no-expert-tiling     MoE stages keep EP = 1, ETP = TP\n" \
    "  --no-context-parallel  planners keep every stage's GPU group as one TP group (cp = 1)\n" \
    "  --ep-hierarchical      expert dispatch across nodes crosses the network once per node (DeepEP)\n" \
    "  --no-stage-reversal    the fill keeps each template's stages in the order decided (default: it also\n" \
    "                         tries them reversed and keeps the faster)\n" \
    "  --no-stage-moves       the fill tries no stage moved to the front or the end (default: it tries each,\n" \
    "                         from the faster of the two orders above, and keeps the fastest order)\n" \
    "  --no-stage-major       the fill places replicas one by one only (default: also Megatron's order)\n" \
    "  --no-fsdp-search       the fill never shards with FSDP (default: tried where memory refuses)\n" \
    "  --no-priced-resplit    the fill splits layers on profiled times only (default: it splits again on\n" \
    "                         the priced stage times, expert all-to-all included, and keeps the faster)\n" \
    "  --allow-batch-rounding run the batch the plan covers when it cannot split --global-batch exactly;\n" \
    "                         planners then rank by speed alone (default: a surplus counts as lost time;\n" \
    "                         plan, search and replan plan again, exact plans first, when their plan runs\n" \
    "                         one, and a plan file's is run with an exact division where one exists)\n"

/* Writes the CLI_COSTENV_NOPTS option-table entries of the shared options
 * into opts[], pointing at o's fields (o is zeroed).  Returns the count. */
int cli_costenv_options(cli_costenv_opts *o, cli_opt *opts);
/* Builds model, cluster, profile (loaded, or generated at the sequence
 * length) and cost model with the setup applied.  Returns CLI_OK;
 * CLI_USAGE after printing a usage error (missing --model/--cluster, a bad
 * number or mode); CLI_FAIL after printing the library's error.  On failure
 * env is empty (nothing to free, though cli_costenv_free is harmless). */
int cli_costenv_build(const char *cmd, const cli_costenv_opts *o, cli_costenv *env);
/* Destroys what cli_costenv_build made (cost model first); zeroes env. */
void cli_costenv_free(cli_costenv *env);

/* Sets env's recompute mode to the one plan is priced with, so that what
 * follows a planner that may choose it (ARACHNE_OPT_RECOMPUTE_SEARCH:
 * batch rounding, --compare) prices in that mode.  CLI_OK, or prints the
 * library's message and returns CLI_FAIL. */
int cli_costenv_follow_plan(const char *cmd, cli_costenv *env, const arachne_plan *plan);

/* Prints the plan table (templates, stages: GPU type x TP, layers,
 * replicas, stage time, sync time, memory per GPU in GB; then iteration
 * time, throughput, MFU) to f, after `title` when not NULL.  Used by plan,
 * search and price (cli_plantable.c).  Returns CLI_OK, or CLI_FAIL for NULL. */
int cli_print_plan(FILE *f, const arachne_plan *p, const char *title);
/* Writes the plan's JSON to stdout (price and price --parallel with
 * --json).  CLI_OK, or CLI_FAIL after printing the library's error. */
int cli_put_plan_json(const arachne_plan *p);

/* Opens a plan file for price/export/replan (cli_planfile.c): what the user
 * did not give (--model, --cluster, --profile, --global-batch, --seq-len
 * unless --profile, --recompute, --headroom, --dist-optimizer, bytes per
 * parameter) comes from the file: the model, cluster and profile it embeds
 * (version 2), or for a version-1 file its model preset name and compact
 * cluster string.  A plan file's fields are never opened as paths.  Builds
 * the cost environment and loads (validates, reprices) the plan.  When
 * `report` is not NULL, prints there every input that differs from the
 * one the plan records.  Returns CLI_OK, or CLI_USAGE / CLI_FAIL after
 * printing; on failure nothing is left to free. */
int cli_plan_open(const char *cmd, const char *path, cli_costenv_opts *o, cli_costenv *env, arachne_plan **plan,
                  FILE *report);

/* CLI_OK when `s` names no file, or a regular file; else prints "<cmd>:
 * --<opt>: '<s>' is not a regular file" and returns CLI_FAIL (a FIFO or a
 * device given where a model, cluster, profile or plan file is expected). */
int cli_check_regular(const char *cmd, const char *opt, const char *s);

/* A plan's field (arachne_plan_get) and a template's
 * (arachne_plan_template_get); 0 where the library refuses the field
 * (cli_plantable.c). */
double cli_pget(const arachne_plan *p, int field);
double cli_tget(const arachne_plan *p, int t, int field);

/* The global batch is never changed silently (cli_batch.c): CLI_OK when the
 * plan's replicas x micro-batch x micro-batches add up to its global batch;
 * else with `allow` the cost model's batch becomes what the plan runs and
 * the plan is repriced (a note on stderr); without it, when the plan's
 * structure runs the batch exactly and `exact` is set, the plan is
 * repriced with that division (a note on stderr); otherwise CLI_FAIL after
 * printing the nearest batches the plan's structure runs exactly. */
int cli_batch_exact(const char *cmd, arachne_plan *plan, arachne_cost_model *cm, int allow, int exact);
/* A planner run again by cli_batch_retry: a library status, the plan in
 * *out (owned by the caller), with the cost model the retry set; `first`
 * is the plan it replaces (NULL on a command's first run). */
typedef int (*cli_planner_fn)(arachne_plan **out, const arachne_plan *first, void *user);
/* Before cli_batch_exact, on the plan a planner returned: when `allow` is
 * 0 and the plan runs more samples than its global batch, sets
 * ARACHNE_OPT_EXACT_DIVISION on cm (the planners then rank every plan that
 * runs the batch exactly above every other) and runs fn again.  A plan that
 * runs the batch replaces *plan (a note on stderr), cm keeps the option,
 * and 1 is returned; but with `exact` set, when *plan repriced with its
 * exact division runs the batch at least as fast, *plan stays so repriced
 * (the repricing note; 0 returned).  Otherwise *plan and cm stay as they
 * were (cli_batch_exact then reprices the plan or names the batches it
 * runs) and 0 is returned. */
int cli_batch_retry(const char *cmd, arachne_plan **plan, arachne_cost_model *cm, int allow, int exact,
                    cli_planner_fn fn, void *user);

/* An explicit parallel configuration (cli_parallel.c).  cli_parallel_plan
 * builds and prices it with env's cost model (arachne_plan_from_parallel);
 * cli_price_parallel is `arachne price --parallel SPEC`; cli_print_compare
 * prints the "compare:" line of `arachne plan --compare`.  All return CLI_OK,
 * or CLI_FAIL / CLI_USAGE after printing. */
int cli_parallel_plan(const char *spec, const cli_costenv *env, arachne_plan **out);
int cli_price_parallel(const char *spec, const cli_costenv_opts *o, int json);
int cli_print_compare(FILE *f, const arachne_plan *planned, const arachne_plan *given, const char *spec);

/* Path of the bundled policy ($ARACHNE_POLICY, then next to the binary's
 * source tree or install prefix), or NULL when none is found. */
const char *cli_find_policy(void);

#endif
