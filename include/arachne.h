/*
 * arachne.h -- the one public header of libarachne.
 *
 * libarachne plans distributed LLM training on clusters that mix GPU types and
 * node sizes.  This header is the whole ABI.  It includes only <stddef.h> and
 * <stdint.h> and compiles as C89, C11 and C++.
 *
 * Conventions (see docs/api.md):
 *  - every exported name starts with arachne_ / ARACHNE_;
 *  - functions that can fail return int: ARACHNE_OK (0) or a negative
 *    arachne_status; on failure arachne_last_error() says what and where;
 *  - out-parameters come first; handles are opaque; every _create/_load has a
 *    _destroy that accepts NULL;
 *  - units are SI: seconds, bytes, bytes/s, FLOP/s;
 *  - the library never prints, aborts or exits.
 */
#ifndef ARACHNE_H
#define ARACHNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define ARACHNE_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define ARACHNE_API __attribute__((visibility("default")))
#else
#  define ARACHNE_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

/** Major version: changes (with the soname) only when the ABI breaks. */
#define ARACHNE_VERSION_MAJOR 0
/** Minor version: grows when functions or enum values are added. */
#define ARACHNE_VERSION_MINOR 1
/** Patch version: fixes that change no interface. */
#define ARACHNE_VERSION_PATCH 0
/** MAJOR*10000 + MINOR*100 + PATCH, for compile-time comparisons. */
#define ARACHNE_VERSION_NUMBER \
    (ARACHNE_VERSION_MAJOR * 10000 + ARACHNE_VERSION_MINOR * 100 + ARACHNE_VERSION_PATCH)
#define ARACHNE_STRINGIFY_(x) #x
#define ARACHNE_STRINGIFY(x) ARACHNE_STRINGIFY_(x)
/** "MAJOR.MINOR.PATCH" of the header you compiled against. */
#define ARACHNE_VERSION_STRING                      \
    ARACHNE_STRINGIFY(ARACHNE_VERSION_MAJOR) "."    \
    ARACHNE_STRINGIFY(ARACHNE_VERSION_MINOR) "."    \
    ARACHNE_STRINGIFY(ARACHNE_VERSION_PATCH)

/** Runtime version of the linked library as ARACHNE_VERSION_NUMBER.
 *  Never fails; thread-safe. */
ARACHNE_API unsigned arachne_version(void);

/** Runtime version string "MAJOR.MINOR.PATCH" of the linked library.
 *  Static storage, never NULL, never freed; thread-safe. */
ARACHNE_API const char *arachne_version_string(void);

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */
/* ------------------------------------------------------------------------ */

/** Status codes.  Values are pinned and never reused. */
typedef enum arachne_status {
    ARACHNE_OK = 0,                   /**< success */
    ARACHNE_E_INVALID_ARGUMENT = -1,  /**< NULL handle, bad option key or value, out-of-range index */
    ARACHNE_E_NO_MEMORY = -2,         /**< an allocation failed */
    ARACHNE_E_PARSE = -3,             /**< a string or file is not well-formed */
    ARACHNE_E_NOT_FOUND = -4,         /**< a named thing (GPU, model, profile entry) does not exist */
    ARACHNE_E_INFEASIBLE = -5,        /**< no plan fits (memory, GPUs) */
    ARACHNE_E_IO = -6,                /**< a file could not be opened, read, written or renamed */
    ARACHNE_E_CORRUPT = -7,           /**< a binary file fails its magic, size or checksum */
    ARACHNE_E_BUFFER_TOO_SMALL = -8,  /**< the caller's buffer is too small; the needed size is reported */
    ARACHNE_E_UNSUPPORTED = -9,       /**< a valid request this build or format version cannot serve */
    ARACHNE_E_INVALID_PLAN = -10,     /**< a plan breaks a rule (GPU reuse, TP across nodes, layer cover) */
    ARACHNE_E_OUT_OF_MEMORY_PLAN = -11, /**< a plan does not fit in GPU memory (says which stage, by how much) */
    ARACHNE_E_CANCELLED = -12         /**< a callback asked to stop */
} arachne_status;

/** Fixed English text for a status code ("invalid argument", ...).
 *  Unknown codes give "unknown status".  Static storage, never NULL;
 *  thread-safe. */
ARACHNE_API const char *arachne_status_string(int status);

/** Message of the last failure on the calling thread, naming the input and
 *  position ("cluster spec: offset 7: expected 'x'").  Per thread; never
 *  NULL ("" when no error happened yet).  Valid until the next library call
 *  on the same thread.  Successful calls do not clear it. */
ARACHNE_API const char *arachne_last_error(void);

/** Clears the calling thread's last error message.  Never fails. */
ARACHNE_API void arachne_clear_error(void);

/* ------------------------------------------------------------------------ */
/* Opaque handles                                                            */
/* ------------------------------------------------------------------------ */

/** A set of GPU nodes of one or more GPU types, plus the GPU type catalog
 *  it uses.  Shareable read-only between threads once built. */
typedef struct arachne_cluster arachne_cluster;
/** A model architecture (layer kinds, sizes, parameter counts). */
typedef struct arachne_model arachne_model;
/** A per-layer profile table keyed by (GPU type, layer kind, TP, micro-batch). */
typedef struct arachne_profile arachne_profile;
/** Binds model, cluster, profile and training setup; prices plans.
 *  Shareable read-only between planning threads. */
typedef struct arachne_cost_model arachne_cost_model;
/** The learned planning policy (network weights).  A trained policy may be
 *  shared read-only between planning threads. */
typedef struct arachne_policy arachne_policy;
/** A complete, priced parallelisation plan. */
typedef struct arachne_plan arachne_plan;
/** Trains a policy across compositions. */
typedef struct arachne_trainer arachne_trainer;

/* ======================================================================== */
/* Sections below are added module by module.                               */
/* ======================================================================== */

/* @@SECTION gpu@@ */

/* @@SECTION cluster@@ */

/* @@SECTION model@@ */

/* @@SECTION profile@@ */

/* @@SECTION cost@@ */

/* @@SECTION plan@@ */

/* A plan is a list of templates (pipelines of one structure, each with its
 * own replica count and micro-batch size); a template is a list of stages
 * (GPU type, TP degree, a contiguous range of transformer blocks, expert
 * tiling); every GPU the plan uses is a rank naming its node, local GPU,
 * template, replica, stage and TP rank.  Plans come from the planners and
 * searches, or from arachne_plan_load / arachne_plan_from_json.  A finished
 * plan is read-only: every getter below is a pure read, so one plan may be
 * read by many threads at once.  See docs/formats.md ("Plan") for the JSON
 * form and docs/exports.md for the launcher exports. */

/** Plan-wide values for arachne_plan_get.  Numbers are pinned. */
typedef enum arachne_plan_field {
    ARACHNE_PLAN_ITERATION_S = 0,   /**< seconds per training iteration */
    ARACHNE_PLAN_ITER_PER_S = 1,    /**< iterations per second (1 / ITERATION_S) */
    ARACHNE_PLAN_SAMPLES_PER_S = 2, /**< samples (sequences) per second */
    ARACHNE_PLAN_TOKENS_PER_S = 3,  /**< tokens per second */
    ARACHNE_PLAN_MFU = 4,           /**< model FLOP utilisation, fraction 0..1 */
    ARACHNE_PLAN_BUBBLE = 5,        /**< pipeline bubble, fraction of the iteration 0..1 */
    ARACHNE_PLAN_GPUS_USED = 6,     /**< GPUs the plan uses */
    ARACHNE_PLAN_GPUS_TOTAL = 7,    /**< GPUs in the cluster planned for */
    ARACHNE_PLAN_TEMPLATES = 8,     /**< number of templates */
    ARACHNE_PLAN_RANKS = 9,         /**< number of ranks (= GPUS_USED) */
    ARACHNE_PLAN_PLANNING_S = 10,   /**< seconds the planner spent building the plan */
    ARACHNE_PLAN_EVALUATIONS = 11,  /**< cost-model evaluations the planner made */
    ARACHNE_PLAN_GLOBAL_BATCH = 12, /**< samples per iteration */
    ARACHNE_PLAN_SEQ_LEN = 13       /**< tokens per sample */
} arachne_plan_field;

/** Per-template values for arachne_plan_template_get.  Numbers are pinned. */
typedef enum arachne_template_field {
    ARACHNE_TEMPLATE_DEPTH = 0,         /**< pipeline stages */
    ARACHNE_TEMPLATE_REPLICAS = 1,      /**< pipelines of this structure (data-parallel replicas) */
    ARACHNE_TEMPLATE_MICRO_BATCH = 2,   /**< samples per micro-batch */
    ARACHNE_TEMPLATE_MICRO_BATCHES = 3, /**< micro-batches per replica per iteration */
    ARACHNE_TEMPLATE_PIPELINE_S = 4     /**< seconds one replica takes for its micro-batches (1F1B) */
} arachne_template_field;

/** Per-stage values for arachne_plan_stage_get.  Numbers are pinned.
 *  Times are for ONE micro-batch, fwd+bwd, in seconds, except SYNC_S
 *  (gradient all-reduce per iteration). */
typedef enum arachne_stage_field {
    ARACHNE_STAGE_TP = 0,           /**< tensor-parallel degree */
    ARACHNE_STAGE_FIRST_LAYER = 1,  /**< first transformer block (0-based, inclusive) */
    ARACHNE_STAGE_END_LAYER = 2,    /**< end transformer block (exclusive) */
    ARACHNE_STAGE_EP = 3,           /**< expert-parallel degree (1 for dense stages) */
    ARACHNE_STAGE_ETP = 4,          /**< expert tensor-parallel degree */
    ARACHNE_STAGE_EDP = 5,          /**< expert data-parallel degree; EP*ETP*EDP = TP * replicas */
    ARACHNE_STAGE_COMPUTE_S = 6,    /**< fwd+bwd compute of its layers */
    ARACHNE_STAGE_TP_COMM_S = 7,    /**< TP collectives */
    ARACHNE_STAGE_EP_COMM_S = 8,    /**< expert all-to-all */
    ARACHNE_STAGE_P2P_S = 9,        /**< activation send to the next stage (fwd+bwd) */
    ARACHNE_STAGE_SYNC_S = 10,      /**< gradient all-reduce of the stage */
    ARACHNE_STAGE_STAGE_S = 11,     /**< stage time t_s = compute + TP + EP + P2P */
    ARACHNE_STAGE_MEMORY_BYTES = 12 /**< peak bytes per GPU */
} arachne_stage_field;

/** Per-rank values for arachne_plan_rank_get.  Numbers are pinned. */
typedef enum arachne_rank_field {
    ARACHNE_RANK_RANK = 0,     /**< global rank, 0 .. RANKS-1 */
    ARACHNE_RANK_NODE = 1,     /**< node index in the cluster (order of the cluster spec) */
    ARACHNE_RANK_GPU = 2,      /**< local GPU index inside the node */
    ARACHNE_RANK_TEMPLATE = 3, /**< template index */
    ARACHNE_RANK_REPLICA = 4,  /**< replica (pipeline) index inside the template */
    ARACHNE_RANK_STAGE = 5,    /**< stage index inside the pipeline */
    ARACHNE_RANK_TP_RANK = 6   /**< rank inside the stage's TP group, 0 .. TP-1 */
} arachne_rank_field;

/** Launcher formats for arachne_plan_export.  Numbers are pinned. */
typedef enum arachne_export_format {
    ARACHNE_EXPORT_RANKS = 0,      /**< JSON lines, one object per global rank */
    ARACHNE_EXPORT_MEGATRON = 1,   /**< Megatron-LM arguments, one set per template */
    ARACHNE_EXPORT_TORCHTITAN = 2, /**< torchtitan TOML [parallelism], one per template */
    ARACHNE_EXPORT_FLASHFLEX = 3,  /**< FlashFlex/HexiScale arguments */
    ARACHNE_EXPORT_SAILOR = 4      /**< Sailor's pipeline_list JSON */
} arachne_export_format;

/** Destroys a plan.  NULL is a no-op.  Not concurrently with other calls on p. */
ARACHNE_API void arachne_plan_destroy(arachne_plan *p);

/** The plan as JSON (format "arachne-plan", version 1; docs/formats.md).
 *  *out is borrowed, NUL-terminated, valid until p is changed or destroyed.
 *  Pure read (the text is built when the plan is finished); thread-safe on a
 *  shared plan.  ARACHNE_E_INVALID_ARGUMENT for NULL arguments. */
ARACHNE_API int arachne_plan_to_json(const arachne_plan *p, const char **out);

/** Writes the plan's JSON to path atomically (temporary file + rename; on
 *  failure the old file is untouched).  ARACHNE_E_IO with the path. */
ARACHNE_API int arachne_plan_save(const arachne_plan *p, const char *path);

/** Reads a plan file, checks it strictly (unknown keys, types; message
 *  "path:line:col: ..."), validates it against cm's cluster and model (GPUs
 *  exist and are used once, TP groups inside one node, ranks complete,
 *  layers covered once per pipeline, expert tiling, batch covered) and
 *  reprices it with cm.  *out receives a new plan (destroy with
 *  arachne_plan_destroy), or NULL on failure.  Errors: ARACHNE_E_IO,
 *  ARACHNE_E_PARSE, ARACHNE_E_INVALID_PLAN (message names template, stage or
 *  rank), ARACHNE_E_OUT_OF_MEMORY_PLAN, or another pricing status.  cm may be
 *  shared read-only with other threads. */
ARACHNE_API int arachne_plan_load(arachne_plan **out, const arachne_cost_model *cm, const char *path);

/** Same as arachne_plan_load for json[0..len) (messages name "<string>"). */
ARACHNE_API int arachne_plan_from_json(arachne_plan **out, const arachne_cost_model *cm,
                                       const char *json, size_t len);

/** A plan-wide value (arachne_plan_field) as a double; counts are exact.
 *  ARACHNE_E_INVALID_ARGUMENT for NULL arguments or an unknown field.  Pure read. */
ARACHNE_API int arachne_plan_get(const arachne_plan *p, int field, double *out);

/** A value of template t (arachne_template_field).  ARACHNE_E_INVALID_ARGUMENT
 *  when t is out of range (the message gives the valid range) or the field is
 *  unknown.  Pure read. */
ARACHNE_API int arachne_plan_template_get(const arachne_plan *p, int t, int field, double *out);

/** A value of stage s of template t (arachne_stage_field).  Seconds / bytes.
 *  ARACHNE_E_INVALID_ARGUMENT for an index out of range or an unknown field.
 *  Pure read. */
ARACHNE_API int arachne_plan_stage_get(const arachne_plan *p, int t, int s, int field, double *out);

/** GPU type name of stage s of template t (canonical catalog name, e.g.
 *  "A100-40"); borrowed, valid until p is changed or destroyed.  Pure read. */
ARACHNE_API int arachne_plan_stage_gpu(const arachne_plan *p, int t, int s, const char **out);

/** A value of rank r (arachne_rank_field); ranks are ordered by global rank,
 *  so index r is global rank r.  ARACHNE_E_INVALID_ARGUMENT for an index out
 *  of range or an unknown field.  Pure read. */
ARACHNE_API int arachne_plan_rank_get(const arachne_plan *p, int r, int field, int *out);

/** Name of the method that built the plan ("policy", "exhaustive",
 *  "random", "file", ...); borrowed like arachne_plan_stage_gpu.  Pure read. */
ARACHNE_API int arachne_plan_method(const arachne_plan *p, const char **out);

/** Writes the plan in a launcher format (arachne_export_format; layouts in
 *  docs/exports.md) into buf[0..cap) NUL-terminated.  *needed (when not NULL)
 *  receives the size including the NUL.  ARACHNE_E_BUFFER_TOO_SMALL when cap
 *  is too small (buf untouched; call with buf NULL, cap 0 to size it);
 *  ARACHNE_E_INVALID_ARGUMENT for an unknown format.  Pure read of p;
 *  deterministic bytes. */
ARACHNE_API int arachne_plan_export(const arachne_plan *p, int format, char *buf, size_t cap,
                                    size_t *needed);

/* @@SECTION search@@ */

/* @@SECTION policy@@ */

/* @@SECTION trainer@@ */

/* @@SECTION replan@@ */

#ifdef __cplusplus
}
#endif

#endif /* ARACHNE_H */
