/* eval.h -- the evaluation harness behind `arachne eval`: an eval config
 * (held-out compositions and the baselines to run on them) and the runner
 * that plans every composition with every method and collects relative
 * throughputs, evaluations and planning times.  Internal; the config format
 * and the methods are described in docs/evaluation.md. */
#ifndef ARACHNE_EVAL_H
#define ARACHNE_EVAL_H

#include "flat.h"
#include "plan.h"

/* The methods, in table order. */
enum {
    AR_EVAL_POLICY_GREEDY = 0, /* structured policy, greedy */
    AR_EVAL_POLICY_BEST = 1,   /* structured policy, best of `samples` */
    AR_EVAL_RANDOM_SAME = 2,   /* random search, as many evaluations as POLICY_BEST used */
    AR_EVAL_RANDOM_MANY = 3,   /* random search, random_factor times that */
    AR_EVAL_EXHAUSTIVE = 4,    /* exhaustive search (small clusters) */
    AR_EVAL_FLAT_GREEDY = 5,   /* flat policy, greedy */
    AR_EVAL_FLAT_BEST = 6,     /* flat policy, best of `samples` */
    AR_EVAL_POLICY_REFINED = 7,/* POLICY_BEST's plan after arachne_plan_refine */
    AR_EVAL_POLICY_ROLLOUT = 8,/* structured policy, rollout decoding (arachne_plan_rollout) */
    AR_EVAL_METHODS = 9
};

/* The methods in the order tables and JSON list them. */
extern const int ar_eval_method_order[AR_EVAL_METHODS];

/* Short column name of a method ("policy", "policy-best16", ...). */
const char *ar_eval_method_name(int method, int samples, int random_factor);

#define AR_EVAL_MAX_COMPS 256
#define AR_EVAL_TEXT 512

typedef struct ar_eval_comp {
    char name[64];
    char model[AR_EVAL_TEXT];    /* preset name or resolved path */
    char cluster[AR_EVAL_TEXT];  /* compact spec or resolved path */
    long global_batch;           /* 0: default */
    long seq_len;                /* 0: default (4096) */
    int recompute;               /* -1: default */
    int dist_optimizer;          /* -1: default */
    double headroom;             /* < 0: default */
    long max_depth;              /* 0: default */
    int exhaustive;              /* -1: by size (<= exhaustive max_gpus), 0 no, 1 yes */
} ar_eval_comp;

typedef struct ar_eval_config {
    char path[AR_EVAL_TEXT];     /* the config file */
    char policy[AR_EVAL_TEXT];   /* "" = the caller's default */
    int samples;                 /* best-of-K [16] */
    uint64_t seed;               /* [1] */
    long random_factor;          /* [100] */
    double random_time_budget_s; /* cap on each random search, 0 none [0] */
    long refine_evaluations;     /* budget of policy-best+refine [ARACHNE_REFINE_EVALUATIONS] */
    double refine_time_cap_s;    /* its wall-clock cap, 0 none [0] */
    int rollout;                 /* 1: run policy-rollout [0] */
    long rollout_evaluations;    /* its fill budget, 0 none [0] */
    /* exhaustive */
    int exh_max_gpus;            /* [64] */
    int exh_max_templates;       /* [1] */
    int exh_max_depth;           /* [6] */
    double exh_time_budget_s;    /* [60] */
    /* flat policy */
    int flat_enabled;            /* 0 when the config has no "flat" */
    char flat_policy[AR_EVAL_TEXT]; /* load this file instead of training ("" = train) */
    char flat_save[AR_EVAL_TEXT];   /* save the trained flat policy here ("" = no) */
    long flat_evaluations;       /* training budget [20000] */
    int flat_group;              /* [16] */
    int flat_hidden, flat_layers;/* [0, 0] = the policy defaults */
    uint64_t flat_seed;          /* [1] */
    int nflat_train;
    ar_eval_comp *flat_train;    /* training compositions of the flat policy */
    int ncomps;
    ar_eval_comp *comps;         /* held-out compositions */
} ar_eval_config;

/* Reads and checks an eval config (docs/evaluation.md).  Relative paths
 * (policy, flat policy/save, model or cluster JSON files) are taken
 * relative to the config file's directory.  Errors: ARACHNE_E_IO,
 * ARACHNE_E_PARSE with "PATH:LINE:COL: ..." (unknown key, wrong type, value
 * out of range, missing key, no composition, duplicate name),
 * ARACHNE_E_UNSUPPORTED (another format version).  *out is NULL on failure;
 * release with ar_eval_config_free. */
int ar_eval_config_load(ar_eval_config **out, const char *path);
/* Same for text in memory; `source` names it in messages and is the base
 * for relative paths ("." when it has no directory part). */
int ar_eval_config_parse(ar_eval_config **out, const char *text, size_t len, const char *source);
void ar_eval_config_free(ar_eval_config *c);

/* Random search over the structured construction (the same decisions and
 * masks as arachne_search_random) whose budget counts every fill the cost
 * model runs: templates placed plus the lookahead's trial fills -- the unit
 * arachne_plan_build and the trainer report as evaluations.  (The public
 * arachne_search_random counts placed templates only.)  Stops once
 * `budget` fills were made or time_budget_s passed (0: no limit).  cb (may
 * be NULL) is called after every rollout with the fills so far and the best
 * iter/s seen.  Method "random"; evaluations = fills made.  Errors as
 * arachne_search_random. */
typedef void (*ar_eval_random_cb)(void *user, long evaluations, double best_iter_per_s);
int ar_eval_random(arachne_plan **out, const arachne_cost_model *cm, long budget, uint64_t seed, double time_budget_s,
                   ar_eval_random_cb cb, void *user);

/* Builds the cost environment of a composition (model, cluster, generated
 * profile, cost model with the setup applied).  Release with
 * ar_eval_env_free. */
typedef struct ar_eval_env {
    arachne_model *model;
    arachne_cluster *cluster;
    arachne_profile *profile;
    arachne_cost_model *cm;
} ar_eval_env;
int ar_eval_env_build(ar_eval_env *env, const ar_eval_comp *comp);
void ar_eval_env_free(ar_eval_env *env);

typedef struct ar_eval_cell {
    int ran;                     /* 0: method not run on this composition (skipped) */
    int status;                  /* ARACHNE_OK or why no plan came back */
    double iter_per_s;           /* 0 when no plan */
    double rel;                  /* iter_per_s / best of the row (0 when no plan) */
    long evaluations;
    double planning_s;
    long samples_run;            /* samples one iteration of the plan runs (ARACHNE_PLAN_SAMPLES_RUN) */
    int exact;                   /* 1: samples_run is the composition's global batch */
    char method[32];             /* the plan's method ("exhaustive-partial", ...) */
    char note[200];              /* error message when status != OK */
} ar_eval_cell;

typedef struct ar_eval_row {
    ar_eval_comp comp;
    int gpus, types;
    int moe;                     /* 1: the model has routed experts */
    int ref;                     /* reference method: EXHAUSTIVE where it planned, else RANDOM_MANY (-1: none) */
    double best;                 /* best iter/s over the methods */
    ar_eval_cell cell[AR_EVAL_METHODS];
} ar_eval_row;

/* A method over a population of rows, against each row's reference
 * (exhaustive search where it ran, else random search with random_factor
 * times the evaluations): rel = iter/s / reference iter/s, which can exceed
 * 1 (a plan of several templates, or a search the reference cut short). */
typedef struct ar_eval_pop {
    int rows;                    /* rows with a reference and a plan of this method */
    int missing;                 /* rows with a reference where the method gave no plan */
    double geomean, min, share95;/* of rel; share95: fraction with rel >= 0.95 */
    double share_exact;          /* fraction of those plans that run the global batch exactly */
} ar_eval_pop;

enum { AR_EVAL_POP_ALL = 0, AR_EVAL_POP_DENSE = 1, AR_EVAL_POP_MOE = 2, AR_EVAL_POPS = 3 };

typedef struct ar_eval_result {
    ar_eval_pop pop[AR_EVAL_POPS][AR_EVAL_METHODS];
    int nrows;
    ar_eval_row *rows;
    double geomean[AR_EVAL_METHODS]; /* geometric mean of rel over the rows where the method gave a plan */
    int planned[AR_EVAL_METHODS];    /* rows where it gave a plan */
    int ran[AR_EVAL_METHODS];        /* rows where it ran */
    /* the flat policy */
    char flat_source[32];            /* "trained", "loaded" or "none" */
    long flat_train_evaluations;
    double flat_train_s;
    double flat_first_return, flat_last_return;
} ar_eval_result;

/* Progress: a line of text ("composition 3/8 qwen3-32b: random x100 ...").
 * Return nonzero to stop (ar_eval_run then returns ARACHNE_E_CANCELLED). */
typedef int (*ar_eval_progress_fn)(void *user, const char *line);

/* Runs every method on every composition of cfg.  policy: the structured
 * policy to evaluate (borrowed).  res is filled (ar_eval_result_free
 * releases it); a method that finds no plan is recorded in its cell, not
 * returned as an error.  Errors: ARACHNE_E_INVALID_ARGUMENT, a composition
 * whose model or cluster cannot be built (message names it), flat policy
 * load / training failures, ARACHNE_E_NO_MEMORY, ARACHNE_E_CANCELLED. */
int ar_eval_run(const ar_eval_config *cfg, const arachne_policy *policy, ar_eval_progress_fn progress, void *user,
                ar_eval_result *res);
void ar_eval_result_free(ar_eval_result *res);

/* Writes the result as JSON (docs/evaluation.md) to b; policy names the
 * structured policy evaluated (a path, or a note such as "untrained"). */
void ar_eval_result_json(const ar_eval_config *cfg, const ar_eval_result *res, const char *policy, ar_buf *b);
/* Writes the text table to b. */
void ar_eval_result_table(const ar_eval_config *cfg, const ar_eval_result *res, const char *policy, ar_buf *b);

#endif
