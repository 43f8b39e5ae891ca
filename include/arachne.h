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
 *  - functions that write text into a caller buffer (buf, cap, needed) set
 *    *needed to the size with the NUL; buf NULL with cap 0 asks that size
 *    (ARACHNE_E_BUFFER_TOO_SMALL), buf NULL with cap > 0 is
 *    ARACHNE_E_INVALID_ARGUMENT;
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
 *  position ("cluster spec: offset 7: expected 'x'"); one line, control
 *  characters of quoted input shown as '?'.  Per thread; never
 *  NULL ("" when no error happened yet).  Valid until the next library call
 *  on the same thread.  Successful calls do not clear it. */
ARACHNE_API const char *arachne_last_error(void);

/** Clears the calling thread's last error message.  Never fails. */
ARACHNE_API void arachne_clear_error(void);

/** Writes len bytes of data to the file at path, replacing it atomically:
 *  the bytes go to a new temporary file in the same directory (created
 *  exclusively, never through a symlink), which is then renamed over path.
 *  The library's own save functions write this way; it is public so that
 *  programs write their other output files (exports, reports) with the same
 *  guarantees.  An existing file's permission bits are kept.  A file-size
 *  limit (RLIMIT_FSIZE, `ulimit -f`) smaller than len is refused before
 *  anything is written (no SIGXFSZ).  Temporaries "<path>.tmp.<pid>.<hex>"
 *  left by processes that died while saving path are removed.  On failure
 *  the old file is untouched and no temporary is left.  Returns ARACHNE_OK,
 *  ARACHNE_E_INVALID_ARGUMENT (NULL path, or NULL data with len > 0),
 *  ARACHNE_E_IO (message names path and the reason) or
 *  ARACHNE_E_NO_MEMORY.  data is only read; any thread; concurrent writes
 *  to one path leave one of the complete contents. */
ARACHNE_API int arachne_file_write(const char *path, const void *data, size_t len);

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

/* The built-in GPU catalog.  Names are resolved case-insensitively with '-',
 * '_' and ' ' treated alike and ignored ("a100_40", "A100-40GB", "h100 sxm"),
 * plus a list of aliases ("v100", "gh200", "rtx-a6000", "3090"); see
 * docs/formats.md for the table, the sources and the defaults chosen. */

/** Fields of a GPU type, all SI.  Numbers are pinned. */
typedef enum arachne_gpu_field {
    ARACHNE_GPU_MEMORY_BYTES = 0,       /**< device memory, bytes */
    ARACHNE_GPU_FLOPS = 1,              /**< dense BF16 tensor FLOP/s (FP16 with FP32 accumulate where no BF16) */
    ARACHNE_GPU_HBM_BYTES_PER_S = 2,    /**< device memory bandwidth, bytes/s */
    ARACHNE_GPU_INTRA_BYTES_PER_S = 3,  /**< GPU-to-GPU inside a node, bytes/s per direction */
    ARACHNE_GPU_INTER_BYTES_PER_S = 4,  /**< across nodes, bytes/s per GPU per direction */
    ARACHNE_GPU_INTRA_LATENCY_S = 5,    /**< per-message latency inside a node, seconds */
    ARACHNE_GPU_INTER_LATENCY_S = 6,    /**< per-message latency across nodes, seconds */
    ARACHNE_GPU_INTRA_LINK = 7          /**< class of the intra-node link: an arachne_link_class number */
} arachne_gpu_field;

/** Classes of the GPU-to-GPU link inside a node (field ARACHNE_GPU_INTRA_LINK).
 *  A node is one such domain: every GPU of a node reaches every other over it
 *  (a GB200 / GB300 NVL72 rack is a node of 72 GPUs).  Numbers are pinned. */
typedef enum arachne_link_class {
    ARACHNE_LINK_NVLINK = 1,    /**< NVLink / NVSwitch */
    ARACHNE_LINK_PCIE_P2P = 2,  /**< PCIe with peer-to-peer DMA between GPUs */
    ARACHNE_LINK_PCIE_HOST = 3  /**< PCIe without peer-to-peer: transfers staged through host memory */
} arachne_link_class;

/** Number of GPU types in the built-in catalog (> 0).  Never fails;
 *  thread-safe. */
ARACHNE_API int arachne_gpu_catalog_count(void);

/** Canonical name of catalog entry `index` (0 <= index < count), e.g.
 *  "A100-40", "RTX-PRO-6000".  *out is static storage, never freed.
 *  ARACHNE_E_INVALID_ARGUMENT for a bad index or NULL out (then *out is NULL
 *  when out is not NULL).  Thread-safe. */
ARACHNE_API int arachne_gpu_catalog_name(int index, const char **out);

/** Resolves a GPU name or alias to its canonical catalog name (static
 *  storage).  ARACHNE_E_NOT_FOUND for an unknown name (the message names it),
 *  ARACHNE_E_INVALID_ARGUMENT for NULL arguments.  Thread-safe. */
ARACHNE_API int arachne_gpu_canonical_name(const char *name, const char **out);

/** Reads one field (an arachne_gpu_field) of a catalog GPU type by name or
 *  alias into *out, in SI units.  ARACHNE_E_NOT_FOUND for an unknown name,
 *  ARACHNE_E_INVALID_ARGUMENT for an unknown field or NULL arguments
 *  (*out untouched on failure).  Thread-safe. */
ARACHNE_API int arachne_gpu_get(const char *name, int field, double *out);

/* @@SECTION cluster@@ */

/* A cluster is a list of nodes; each node holds 1..1024 GPUs of one type.
 * Nodes are numbered 0..N-1, grouped per GPU type in the order the types
 * first appeared, and inside a type in the order they were added.  Types
 * come from the built-in catalog (added on first use) or are given by the
 * caller (arachne_cluster_add_gpu_type).  Limits: 16 GPU types, 1,000,000
 * GPUs in total.  Text forms (docs/formats.md):
 *   compact  "a100-40:32x4,a6000:8x4+16x1,h100:16x8"  (TYPE:NODESxGPUS[+...],...)
 *   JSON     {"format":"arachne-cluster","version":1,"nodes":[...],...}
 * Threads: functions that take a const cluster only read it, so a built
 * cluster may be shared by any number of threads; the mutators (add_, set_)
 * need exclusive use.  Borrowed strings stay valid until the next mutator
 * call on, or the destruction of, that cluster. */

/** Creates an empty cluster in *out (destroy with arachne_cluster_destroy).
 *  ARACHNE_E_INVALID_ARGUMENT (NULL out) or ARACHNE_E_NO_MEMORY; *out is
 *  NULL on failure. */
ARACHNE_API int arachne_cluster_create(arachne_cluster **out);

/** Parses a compact spec such as "a100-40:32x4,a6000:8x4+16x1,h100:16x8":
 *  comma-separated TYPE:GROUP[+GROUP...] with GROUP = NODESxGPUS (nodes of
 *  that many GPUs), spaces allowed around tokens, GPU names as in
 *  arachne_gpu_canonical_name; a type given twice merges.  Errors name the
 *  spec and the 1-based character offset: ARACHNE_E_PARSE (syntax, zero or
 *  negative counts, a node over 1024 GPUs, over 1,000,000 GPUs),
 *  ARACHNE_E_NOT_FOUND (unknown GPU type).  *out is NULL on failure. */
ARACHNE_API int arachne_cluster_parse(arachne_cluster **out, const char *spec);

/** Reads a cluster from JSON text json[0..len) (schema: docs/formats.md).
 *  Unknown keys, missing keys, wrong types, bad values are ARACHNE_E_PARSE
 *  with "<cluster json>:LINE:COL: ..."; unknown GPU types ARACHNE_E_NOT_FOUND;
 *  a newer format version ARACHNE_E_UNSUPPORTED. */
ARACHNE_API int arachne_cluster_from_json(arachne_cluster **out, const char *json, size_t len);

/** Reads a cluster JSON file; messages start with "PATH:LINE:COL: ".
 *  ARACHNE_E_IO if the file cannot be read; otherwise as from_json. */
ARACHNE_API int arachne_cluster_load(arachne_cluster **out, const char *path);

/** Loads spec_or_path as a file when it names an existing file or ends in
 *  ".json", else parses it as a compact spec. */
ARACHNE_API int arachne_cluster_open(arachne_cluster **out, const char *spec_or_path);

/** Writes the JSON form to path atomically (temporary file + rename; the
 *  old file is untouched on failure).  ARACHNE_E_IO with the path. */
ARACHNE_API int arachne_cluster_save(const arachne_cluster *c, const char *path);

/** Frees a cluster.  NULL is a no-op. */
ARACHNE_API void arachne_cluster_destroy(arachne_cluster *c);

/** Adds a GPU type of the caller's own, or overrides the figures of one
 *  already in the cluster or in the catalog (matched by name or alias).
 *  SI units: mem_bytes bytes, flops FLOP/s, hbm_bw / intra_bw / inter_bw
 *  bytes/s (intra and inter per direction, inter per GPU); each within
 *  its physical bounds (docs/formats.md, "Cluster", "JSON": memory 1e6-1e15 B,
 *  FLOP/s 1e9-1e19, HBM 1e8-1e15 B/s, links 1e6-1e15 B/s).
 *  Latencies keep the catalog values (new types: 5e-6 s intra, 10e-6 s
 *  inter; change them with arachne_cluster_set_gpu_field).  The name is
 *  1-31 characters of letters, digits, '-', '_', '.'.  Such types are
 *  written to the JSON form ("gpu_types").  ARACHNE_E_INVALID_ARGUMENT for a
 *  bad name or value, or a 17th type. */
ARACHNE_API int arachne_cluster_add_gpu_type(arachne_cluster *c, const char *name, double mem_bytes, double flops,
                                             double hbm_bw, double intra_bw, double inter_bw);

/** Sets one field (an arachne_gpu_field, SI units, within the bounds of
 *  arachne_cluster_add_gpu_type; latencies 1e-9-1 s; the link class one of
 *  arachne_link_class) of a GPU type in the cluster; the type then counts as
 *  user-given.  ARACHNE_E_NOT_FOUND if the type is not in the cluster,
 *  ARACHNE_E_INVALID_ARGUMENT for a bad field or a value out of bounds
 *  (the message names the field and its bounds). */
ARACHNE_API int arachne_cluster_set_gpu_field(arachne_cluster *c, const char *type, int field, double value);

/** Adds `count` nodes of `gpus_per_node` GPUs of `type` (catalog types are
 *  added on first use).  ARACHNE_E_NOT_FOUND for an unknown type,
 *  ARACHNE_E_INVALID_ARGUMENT for count < 1, gpus_per_node outside
 *  [1, 1024], or a total above 1,000,000 GPUs (the cluster is unchanged). */
ARACHNE_API int arachne_cluster_add_nodes(arachne_cluster *c, const char *type, int count, int gpus_per_node);

/** Sets the bandwidth (bytes/s per GPU per direction, 1e6-1e15) of a
 *  transfer across nodes between a GPU of type_a and one of type_b (either
 *  order; the same type twice sets its own inter-node figure).  Default:
 *  the smaller of the two types' inter-node bandwidths.  Both types must be
 *  in the cluster (ARACHNE_E_NOT_FOUND). */
ARACHNE_API int arachne_cluster_set_link_bandwidth(arachne_cluster *c, const char *type_a, const char *type_b,
                                                   double bytes_per_s);

/** Bandwidth across nodes between type_a and type_b, bytes/s (explicit or
 *  default).  ARACHNE_E_NOT_FOUND if a type is not in the cluster. */
ARACHNE_API int arachne_cluster_link_bandwidth(const arachne_cluster *c, const char *type_a, const char *type_b,
                                               double *out);

/** Number of GPU types in the cluster. */
ARACHNE_API int arachne_cluster_type_count(const arachne_cluster *c, int *out);

/** Name of type `index` (canonical catalog name such as "A100-40", or the
 *  caller's name); borrowed.  ARACHNE_E_INVALID_ARGUMENT for a bad index. */
ARACHNE_API int arachne_cluster_type_name(const arachne_cluster *c, int index, const char **out);

/** GPUs in the cluster, of one type or of all (type NULL).  A catalog type
 *  absent from the cluster counts 0; an unknown name is ARACHNE_E_NOT_FOUND. */
ARACHNE_API int arachne_cluster_gpu_count(const arachne_cluster *c, const char *type, int *out);

/** Nodes in the cluster, of one type or of all (type NULL); as gpu_count. */
ARACHNE_API int arachne_cluster_node_count(const arachne_cluster *c, const char *type, int *out);

/** Type (borrowed name) and GPU count of node `node` (0-based); either
 *  output may be NULL.  ARACHNE_E_INVALID_ARGUMENT for a bad index. */
ARACHNE_API int arachne_cluster_node(const arachne_cluster *c, int node, const char **type, int *gpus);

/** GPUs in the largest node of a type, or of any type (type NULL); 0 when
 *  there is none.  As gpu_count for the type argument. */
ARACHNE_API int arachne_cluster_largest_node(const arachne_cluster *c, const char *type, int *out);

/** The compact form (borrowed): lowercase canonical names, per type the
 *  node groups in order with consecutive equal sizes merged; "" for an
 *  empty cluster.  arachne_cluster_parse of it gives the same nodes (the
 *  figures of user-given types travel only in the JSON form). */
ARACHNE_API int arachne_cluster_to_string(const arachne_cluster *c, const char **out);

/** The JSON form (borrowed, ends with a newline); reading it back gives a
 *  cluster that writes the same bytes. */
ARACHNE_API int arachne_cluster_to_json(const arachne_cluster *c, const char **out);

/** One field (an arachne_gpu_field, SI units) of a GPU type in the cluster,
 *  by name or alias.  ARACHNE_E_NOT_FOUND if the type is not in the cluster,
 *  ARACHNE_E_INVALID_ARGUMENT for a bad field. */
ARACHNE_API int arachne_cluster_gpu_get(const arachne_cluster *c, const char *type, int field, double *out);

/* @@SECTION model@@ */

/** Layer kinds of a model.  Values are pinned.  A model is an embedding,
 *  `blocks` transformer blocks (dense or MoE) and a head -- or, for a
 *  hybrid model (a "hybrid" pattern in its JSON, docs/models.md), an
 *  embedding, `blocks` single-mixer layers of kinds 4 to 7 in the
 *  pattern's order, and a head. */
typedef enum arachne_layer_kind {
    ARACHNE_LAYER_EMBED = 0,     /**< token embedding (a gather) */
    ARACHNE_LAYER_DENSE = 1,     /**< transformer block with a dense MLP */
    ARACHNE_LAYER_MOE = 2,       /**< transformer block with routed (and shared) experts */
    ARACHNE_LAYER_HEAD = 3,      /**< final norm + output projection + loss */
    ARACHNE_LAYER_MAMBA = 4,     /**< hybrid layer: norm + Mamba-2 mixer (pattern symbol M) */
    ARACHNE_LAYER_ATTENTION = 5, /**< hybrid layer: norm + attention (pattern symbol *) */
    ARACHNE_LAYER_MLP = 6,       /**< hybrid layer: norm + MLP (pattern symbol -) */
    ARACHNE_LAYER_MOE_MLP = 7    /**< hybrid layer: norm + routed and shared experts (pattern symbol E) */
} arachne_layer_kind;

/** Activation recomputation (checkpointing) modes.  Values are pinned. */
typedef enum arachne_recompute {
    ARACHNE_RECOMPUTE_NONE = 0,       /**< store every activation, attention scores included */
    ARACHNE_RECOMPUTE_SELECTIVE = 1,  /**< drop the seq x seq attention terms (FlashAttention) */
    ARACHNE_RECOMPUTE_FULL = 2        /**< store only each block's input; recompute the rest */
} arachne_recompute;

/** Fields readable with arachne_model_get().  Values are pinned. */
typedef enum arachne_model_field {
    ARACHNE_MODEL_BLOCKS = 0,          /**< transformer blocks (dense + MoE), or a hybrid model's layers */
    ARACHNE_MODEL_HIDDEN = 1,          /**< hidden size */
    ARACHNE_MODEL_HEADS = 2,           /**< attention (query) heads */
    ARACHNE_MODEL_KV_HEADS = 3,        /**< key/value heads (GQA) */
    ARACHNE_MODEL_HEAD_DIM = 4,        /**< per-head q/k dimension */
    ARACHNE_MODEL_FFN = 5,             /**< dense MLP width (0 when no dense block) */
    ARACHNE_MODEL_VOCAB = 6,           /**< vocabulary size */
    ARACHNE_MODEL_EXPERTS = 7,         /**< routed experts per MoE block (0: dense model) */
    ARACHNE_MODEL_TOP_K = 8,           /**< routed experts per token */
    ARACHNE_MODEL_SHARED_EXPERTS = 9,  /**< always-on shared experts per MoE block */
    ARACHNE_MODEL_EXPERT_FFN = 10,     /**< MLP width of one expert */
    ARACHNE_MODEL_DENSE_PREFIX = 11,   /**< leading dense blocks of a MoE model */
    ARACHNE_MODEL_TOTAL_PARAMS = 12,   /**< all parameters, embedding and head included */
    ARACHNE_MODEL_ACTIVE_PARAMS = 13,  /**< parameters used per token (top_k routed experts) */
    ARACHNE_MODEL_QK_NORM = 14,        /**< 1: per-head RMSNorm on q and k */
    ARACHNE_MODEL_GATED_MLP = 15,      /**< 1: SwiGLU (3 matrices); 0: GELU MLP (2 matrices) */
    ARACHNE_MODEL_TIED_EMBEDDINGS = 16,/**< 1: head shares the embedding matrix */
    ARACHNE_MODEL_MLA = 17,            /**< 1: multi-head latent attention (DeepSeek) */
    ARACHNE_MODEL_Q_LORA_RANK = 18,    /**< MLA query low rank (0: no query compression) */
    ARACHNE_MODEL_KV_LORA_RANK = 19,   /**< MLA key/value low rank */
    ARACHNE_MODEL_QK_NOPE_DIM = 20,    /**< MLA per-head q/k dimension without RoPE */
    ARACHNE_MODEL_QK_ROPE_DIM = 21,    /**< MLA per-head q/k RoPE dimension */
    ARACHNE_MODEL_V_HEAD_DIM = 22,     /**< MLA per-head value dimension */
    ARACHNE_MODEL_DENSE_BLOCKS = 23,   /**< number of dense blocks */
    ARACHNE_MODEL_MOE_BLOCKS = 24,     /**< number of MoE blocks */
    ARACHNE_MODEL_MAMBA_HEADS = 25,    /**< Mamba-2 heads per layer (0: no Mamba layer) */
    ARACHNE_MODEL_MAMBA_HEAD_DIM = 26, /**< Mamba-2 head dimension */
    ARACHNE_MODEL_MAMBA_STATE = 27,    /**< Mamba-2 SSM state size per head */
    ARACHNE_MODEL_MAMBA_GROUPS = 28,   /**< Mamba-2 B/C groups */
    ARACHNE_MODEL_MAMBA_CONV = 29,     /**< Mamba-2 causal convolution width */
    ARACHNE_MODEL_MAMBA_CHUNK = 30,    /**< Mamba-2 scan chunk length (tokens) */
    ARACHNE_MODEL_MAMBA_LAYERS = 31,   /**< hybrid layers of kind ARACHNE_LAYER_MAMBA */
    ARACHNE_MODEL_ATTENTION_LAYERS = 32, /**< hybrid layers of kind ARACHNE_LAYER_ATTENTION */
    ARACHNE_MODEL_MLP_LAYERS = 33,     /**< hybrid layers of kind ARACHNE_LAYER_MLP */
    ARACHNE_MODEL_MOE_MLP_LAYERS = 34, /**< hybrid layers of kind ARACHNE_LAYER_MOE_MLP */
    ARACHNE_MODEL_EXPERT_LATENT = 35   /**< LatentMoE width of the routed experts (0: hidden) */
} arachne_model_field;

/** Creates a model from a built-in preset ("llama3-8b", "qwen3-8b",
 *  "qwen3-32b", "qwen3-64b", "qwen3-30b-a3b", "mixtral-8x7b",
 *  "deepseek-v3"); the name is matched ignoring ASCII case.  *out receives
 *  a handle the caller releases with arachne_model_destroy().
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL argument), ARACHNE_E_NOT_FOUND
 *  (unknown name; the message names it), ARACHNE_E_NO_MEMORY.  *out is NULL
 *  on failure.  Thread-safe. */
ARACHNE_API int arachne_model_preset(arachne_model **out, const char *name);

/** Number of built-in presets.  Never fails; thread-safe. */
ARACHNE_API int arachne_model_preset_count(void);

/** Name of preset `index` in [0, arachne_model_preset_count()), or NULL when
 *  out of range.  Static storage; thread-safe. */
ARACHNE_API const char *arachne_model_preset_name(int index);

/** Creates a model from `len` bytes of JSON in the "arachne-model" format
 *  (docs/formats.md, "Model").  Unknown keys, wrong types, missing required
 *  keys and inconsistent sizes are rejected with a message naming the key
 *  and its line:column.  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL argument
 *  or a size that fails validation), ARACHNE_E_PARSE, ARACHNE_E_UNSUPPORTED
 *  (a newer format version), ARACHNE_E_NO_MEMORY.  *out is NULL on failure.
 *  Thread-safe. */
ARACHNE_API int arachne_model_from_json(arachne_model **out, const char *json, size_t len);

/** Like arachne_model_from_json() on the contents of the file at `path`;
 *  messages are prefixed with the path.  Also ARACHNE_E_IO. */
ARACHNE_API int arachne_model_load(arachne_model **out, const char *path);

/** Opens `name_or_path`: a preset name when one matches (ignoring case),
 *  otherwise a model JSON file.  Errors as arachne_model_load(); a name that
 *  is neither a preset nor a readable file gives ARACHNE_E_NOT_FOUND. */
ARACHNE_API int arachne_model_open(arachne_model **out, const char *name_or_path);

/** Writes the model as JSON (the text of arachne_model_to_json()) to `path`
 *  atomically (temporary file + rename; on failure the old file is kept).
 *  Errors: ARACHNE_E_INVALID_ARGUMENT, ARACHNE_E_IO.  Safe to call while
 *  other threads read the same model. */
ARACHNE_API int arachne_model_save(const arachne_model *m, const char *path);

/** Sets *out to the model's JSON text (one object, "arachne-model" format
 *  version 1, NUL-terminated).  Borrowed: valid until the model is
 *  destroyed.  Loading it gives a model with identical fields and parameter
 *  counts.  Does not modify the model (the text is built when the model is
 *  created); safe from many threads.  Errors: ARACHNE_E_INVALID_ARGUMENT. */
ARACHNE_API int arachne_model_to_json(const arachne_model *m, const char **out);

/** Releases a model.  NULL is a no-op.  Every handle that borrows the model
 *  (cost models) must be destroyed first. */
ARACHNE_API void arachne_model_destroy(arachne_model *m);

/** Sets *out to the model's name (borrowed, valid until the model is
 *  destroyed).  Errors: ARACHNE_E_INVALID_ARGUMENT.  Thread-safe. */
ARACHNE_API int arachne_model_name(const arachne_model *m, const char **out);

/** Reads one field (arachne_model_field) as a double: sizes and counts are
 *  exact integers, parameter counts are counts (not bytes).  Errors:
 *  ARACHNE_E_INVALID_ARGUMENT (NULL argument, unknown field).  Thread-safe. */
ARACHNE_API int arachne_model_get(const arachne_model *m, int field, double *out);

/** Parameters of ONE layer of `kind` (arachne_layer_kind): for a MoE block
 *  all experts are counted.  0 for a block kind the model does not have.
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL argument, unknown kind).
 *  Thread-safe. */
ARACHNE_API int arachne_model_layer_params(const arachne_model *m, int kind, double *out);

/** Forward FLOPs (floating-point operations, not FLOP/s) of ONE layer of
 *  `kind` for `mbs` sequences of `seq` tokens, before any TP split:
 *  2 x matmul parameters used per token (MoE: router, top_k routed and the
 *  shared experts) plus attention scores and context (causal masking not
 *  discounted), times seq x mbs.  Backward is twice this.  The embedding
 *  counts 0, and so does a block kind the model does not have.  Formulas
 *  in docs/models.md.  Errors:
 *  ARACHNE_E_INVALID_ARGUMENT (NULL argument, unknown kind, seq or mbs < 1).
 *  Thread-safe. */
ARACHNE_API int arachne_model_layer_flops(const arachne_model *m, int kind, int seq, int mbs,
                                          double *out);

/** Bytes of activations one GPU keeps for the backward pass of ONE layer of
 *  `kind`: `mbs` sequences of `seq` tokens, tensor-parallel degree `tp`
 *  with sequence parallelism, 16-bit activations, recompute mode
 *  `recompute` (arachne_recompute).  0 for a block kind the model does not
 *  have.  Formulas in docs/models.md.  Errors:
 *  ARACHNE_E_INVALID_ARGUMENT (NULL argument, unknown kind or mode, seq, mbs
 *  or tp < 1).  Thread-safe. */
ARACHNE_API int arachne_model_layer_act_bytes(const arachne_model *m, int kind, int seq, int mbs,
                                              int tp, int recompute, double *out);


/* @@SECTION profile@@ */

/* A profile table holds, per (GPU type, layer kind, TP degree, micro-batch
 * size), the seconds and activation bytes of ONE layer on one GPU of the TP
 * group, for one sequence length.  Lookup is by exact key: a key the table
 * does not hold is outside the search space (ARACHNE_E_NOT_FOUND).  Keys:
 * GPU names are compared case-insensitively; a catalog alias ("a100-40gb")
 * is stored and matched under its canonical name ("A100-40").  kind is an
 * arachne_layer_kind; tp is a power of two 1..1024; mbs is 1..1048576.
 * Values: fwd_s / bwd_s are forward / backward seconds (backward without
 * recomputation), tp_comm_s the TP collective seconds of forward plus
 * backward (0 when tp == 1, and 0 for imported measurements whose times
 * already include the collectives), act_bytes the bytes one GPU keeps for
 * backward under selective recomputation (the cost model scales it for the
 * other modes).  Every value is finite and >= 0, and fwd_s >= 1e-9 (a
 * layer that takes no time breaks planning; bwd_s may be 0: measured
 * embedding backward passes round to 0).
 * Threads: a table may be shared read-only (lookup, count, to_json, save)
 * by any number of threads; add and destroy need exclusive access.
 * Format of the JSON file: docs/formats.md ("Profile"); generator and
 * importer: docs/profiles.md. */

/** Creates an empty table for model_name (1..63 bytes) at seq_len tokens per
 *  sequence (1..100000000, the file reader's bound).  *out is NULL on failure.  ARACHNE_E_INVALID_ARGUMENT,
 *  ARACHNE_E_NO_MEMORY.  Release with arachne_profile_destroy(). */
ARACHNE_API int arachne_profile_create(arachne_profile **out, const char *model_name, int seq_len);

/** Frees the table.  NULL is a no-op. */
ARACHNE_API void arachne_profile_destroy(arachne_profile *p);

/** Adds one entry (units: seconds, bytes).  An entry with the same key
 *  REPLACES the old one (so measured entries can be laid over generated
 *  ones).  ARACHNE_E_INVALID_ARGUMENT, naming the entry, for an empty or too
 *  long GPU name (31 bytes max), an unknown kind, tp not a power of two in
 *  1..1024, mbs outside 1..1048576, or a negative or non-finite value. */
ARACHNE_API int arachne_profile_add(arachne_profile *p, const char *gpu, int kind, int tp, int mbs,
                                    double fwd_s, double bwd_s, double tp_comm_s, double act_bytes);

/** Exact-key lookup.  Any of the four outputs may be NULL.
 *  ARACHNE_E_NOT_FOUND (with a message naming the key) when the table has
 *  no such entry; ARACHNE_E_INVALID_ARGUMENT for NULL p or gpu.  Read-only:
 *  safe from many threads at once. */
ARACHNE_API int arachne_profile_lookup(const arachne_profile *p, const char *gpu, int kind, int tp, int mbs,
                                       double *fwd_s, double *bwd_s, double *tp_comm_s, double *act_bytes);

/** Number of entries into *out. */
ARACHNE_API int arachne_profile_count(const arachne_profile *p, int *out);

/** Model name the table was made for (borrowed; valid until p is destroyed). */
ARACHNE_API int arachne_profile_model_name(const arachne_profile *p, const char **out);

/** Sequence length (tokens) of every entry. */
ARACHNE_API int arachne_profile_seq_len(const arachne_profile *p, int *out);

/** Reads entry i (0..count-1) in key order (GPU name, kind, tp, mbs): its
 *  GPU name (borrowed, valid until p changes), kind, tp, mbs and values.
 *  Any output may be NULL.  ARACHNE_E_INVALID_ARGUMENT for i out of range. */
ARACHNE_API int arachne_profile_entry(const arachne_profile *p, int i, const char **gpu, int *kind, int *tp,
                                      int *mbs, double *fwd_s, double *bwd_s, double *tp_comm_s,
                                      double *act_bytes);

/** Loads a profile JSON file ("arachne-profile" version 1).  ARACHNE_E_IO
 *  when unreadable; ARACHNE_E_PARSE naming the file, line and column, and
 *  the entry, for malformed text, unknown keys, bad values or a duplicate
 *  key; ARACHNE_E_UNSUPPORTED for a newer version.  *out NULL on failure. */
ARACHNE_API int arachne_profile_load(arachne_profile **out, const char *path);

/** Same as arachne_profile_load() from len bytes of text in memory. */
ARACHNE_API int arachne_profile_from_json(arachne_profile **out, const char *json, size_t len);

/** Writes the table as JSON to path, atomically (temporary file + rename;
 *  on failure the old file is untouched).  Entries in key order; numbers
 *  round-trip exactly.  ARACHNE_E_IO. */
ARACHNE_API int arachne_profile_save(const arachne_profile *p, const char *path);

/** Writes the JSON text (NUL-terminated) into buf[cap]; *needed (may be
 *  NULL) gets the size including the NUL.  ARACHNE_E_BUFFER_TOO_SMALL when
 *  cap is too small (buf untouched); pass buf NULL, cap 0 to ask the size. */
ARACHNE_API int arachne_profile_to_json(const arachne_profile *p, char *buf, size_t cap, size_t *needed);

/** Imports Sailor's measured profiles from dir (profiles.json and
 *  llm_info.json) for model_name (exact name as in profiles.json, e.g.
 *  "OPT-350").  The sequence length and the data type come from
 *  llm_info.json's activation sizes (the import is refused when they do not
 *  give them, or when a training_config_*.json naming the model disagrees).
 *  Blocks use the median over all blocks; layers after the blocks (final
 *  norm, head) add up into the head entry; tp_comm_s is 0 (the measured
 *  times include the collectives); TP degrees that are not powers of two are
 *  skipped.  The table records the measured precision (FP32) and that its
 *  activation bytes were taken without recomputation (the "precision" and
 *  "act_recompute" keys of its JSON form).  Details: docs/profiles.md.
 *  ARACHNE_E_NOT_FOUND for an unknown model, ARACHNE_E_IO for a missing
 *  file, ARACHNE_E_PARSE naming the file and the JSON path. */
ARACHNE_API int arachne_profile_import_sailor(arachne_profile **out, const char *dir, const char *model_name);

/** Generates a table with the calibrated analytic model (docs/profiles.md)
 *  for every GPU type of c x every layer kind model m has x tp in
 *  {1, 2, 4, 8} up to the largest node of that type (and dividing the
 *  head count) x mbs in {1, 2, 4, 8, 16, 32}, at seq_len tokens.  BF16
 *  training with FlashAttention and sequence parallelism is modelled.
 *  Deterministic.  ARACHNE_E_INVALID_ARGUMENT for NULL or seq_len < 1. */
ARACHNE_API int arachne_profile_generate(arachne_profile **out, const arachne_model *m, const arachne_cluster *c,
                                         int seq_len);

/** Adds (replacing same keys) the generated entries of one GPU type of c
 *  (name or alias) to p, at p's sequence length; the same key ranges as
 *  arachne_profile_generate().  Use it to fill in a type a measured table
 *  lacks.  ARACHNE_E_NOT_FOUND when c has no such type. */
ARACHNE_API int arachne_profile_generate_gpu(arachne_profile *p, const arachne_model *m, const arachne_cluster *c,
                                             const char *gpu_type);

/* @@SECTION cost@@ */

/* The cost model binds a model, a cluster and a profile table (all
 * borrowed) to a training setup, and prices plans: per-stage times from the
 * profile, 1F1B pipelines, min-max division of the global batch across
 * templates, gradient synchronisation, optimizer step, and per-GPU memory.
 * Every formula and constant: docs/cost-model.md. */

/** Training-setup options of a cost model (arachne_cost_model_set/get).
 *  Values are pinned.  Every value is passed as a double; integer options
 *  must hold an exact integer. */
typedef enum arachne_option {
    ARACHNE_OPT_GLOBAL_BATCH = 0,   /**< samples per iteration, integer >= 1 (default 512) */
    ARACHNE_OPT_SEQ_LEN = 1,        /**< tokens per sample; always the profile's sequence length
                                         (setting another value fails) */
    ARACHNE_OPT_WEIGHT_BYTES = 2,   /**< bytes per parameter for weights, (0, 64] (default 2, bf16) */
    ARACHNE_OPT_GRAD_BYTES = 3,     /**< bytes per parameter for gradients, (0, 64] (default 4, fp32) */
    ARACHNE_OPT_OPTIM_BYTES = 4,    /**< bytes per parameter of optimizer state, [0, 64]
                                         (default 12: fp32 master copy + two Adam moments) */
    ARACHNE_OPT_DIST_OPTIMIZER = 5, /**< 1: shard optimizer state over data-parallel ranks (ZeRO-1); 0 or 1 (default 1, as in every published Megatron run) */
    ARACHNE_OPT_RECOMPUTE = 6,      /**< an arachne_recompute value (default ARACHNE_RECOMPUTE_SELECTIVE) */
    ARACHNE_OPT_HEADROOM = 7,       /**< fraction of each GPU's memory kept free, [0, 1) (default 0.08) */
    ARACHNE_OPT_EXPERT_TILING = 8,  /**< 1: planners search EP x ETP x EDP on MoE stages; 0 or 1 (default 1) */
    ARACHNE_OPT_MAX_DEPTH = 9,      /**< largest pipeline depth planners consider, integer in [1, 32] (default 16) */
    ARACHNE_OPT_OVERLAP_GRAD_REDUCE = 10, /**< 1: the data-parallel gradient reduction runs bucketed during the
                                           *   last micro-batch's backward pass and only its exposed tail is
                                           *   charged (Megatron --overlap-grad-reduce, DDP/FSDP); 0 or 1 (default 1) */
    ARACHNE_OPT_OVERLAP_PARAM_GATHER = 11, /**< 1: the distributed optimizer's parameter all-gather overlaps the
                                            *   first micro-batch's forward (Megatron --overlap-param-gather);
                                            *   0 or 1 (default 1) */
    ARACHNE_OPT_TP_COMM_OVERLAP = 12, /**< 1: tensor-parallel collectives overlap the GEMMs (Megatron
                                       *   --tp-comm-overlap); only the part longer than the compute it hides
                                       *   behind is charged; 0 or 1 (default 0) */
    ARACHNE_OPT_RECOMPUTE_NORM_ACT = 13, /**< 1: besides the ARACHNE_OPT_RECOMPUTE mode, the two norm outputs of
                                         *   every block and the routed experts' activation-function outputs
                                         *   are recomputed in the backward pass instead of stored (Megatron
                                         *   --recompute-modules layernorm moe_act); changes memory only;
                                         *   no effect under full recomputation; 0 or 1 (default 0) */
    ARACHNE_OPT_RECOMPUTE_ALT_MM = 14, /**< 1: per-op selective checkpointing as torchtitan runs it
                                       *   (selective_ac_option "op"): every second matmul of a dense block,
                                       *   by call order, is recomputed in the backward pass; adds that share
                                       *   of the block's forward time; memory is counted as for the
                                       *   ARACHNE_OPT_RECOMPUTE mode; no effect under full recomputation;
                                       *   0 or 1 (default 0) */
    ARACHNE_OPT_CONTEXT_PARALLEL = 15, /**< 1: planners may split a stage's GPU group into tp x cp (context
                                       *   parallelism, Megatron --context-parallel-size) where that prices
                                       *   faster; 0: never (cp = 1); 0 or 1 (default 1).  Pricing a given
                                       *   plan follows the plan's cp either way. */
    ARACHNE_OPT_MAX_VP = 16,         /**< most model chunks per pipeline stage the planners' fill tries
                                      *   (interleaved 1F1B; it tries 2, 4, 8 up to this); 1: plain 1F1B
                                      *   only; integer in [1, 16] (default 8) */
    ARACHNE_OPT_EP_HIERARCHICAL = 17, /**< 1: expert dispatch and combine across nodes are hierarchical
                                      *   (DeepEP's normal kernels): a token crosses the network once per
                                      *   remote node holding one of its experts, then fans out over
                                      *   NVLink; 0: one all-to-all message per expert (Megatron's
                                      *   alltoall dispatcher); 0 or 1 (default 0) */
    ARACHNE_OPT_EXACT_BATCH = 18,    /**< 1: aim for plans that run the global batch exactly
                                      *   (ARACHNE_PLAN_SAMPLES_RUN = GLOBAL_BATCH): the division of the
                                      *   batch over templates takes the fastest exact division when the
                                      *   fastest one runs S > B samples and the exact one is slower by
                                      *   less than S / B, and the planners (arachne_plan_build,
                                      *   arachne_plan_refine, the searches, arachne_replan) rank a plan
                                      *   by iterations per second x B / S (the rate of the asked samples;
                                      *   1 for an exact plan); 0: the fastest division and the fastest
                                      *   plan, whatever batch they run; 0 or 1 (default 1) */
    ARACHNE_OPT_STAGE_REVERSAL = 19, /**< 1: the planners' fill also prices each template with its stages in
                                     *   reverse order and keeps the faster (the first stage holds the
                                     *   embedding and the most in-flight activations, the last the output
                                     *   layer, so the order of unequal stages matters); the exhaustive
                                     *   search, which enumerates both orders itself, never does; 0: stages
                                     *   in the order decided; 0 or 1 (default 1) */
    ARACHNE_OPT_PRICED_RESPLIT = 20, /**< 1: after a template's splits are priced, the planners' fill
                                     *   splits its layers again on the priced stage times (the split is
                                     *   first searched on profiled compute and TP times; the priced
                                     *   stages add the expert all-to-all of the tiling chosen after it)
                                     *   and keeps the new split when it prices faster; 0: the profiled
                                     *   split only; 0 or 1 (default 1) */
    ARACHNE_OPT_STAGE_MOVES = 21,   /**< 1: the planners' fill also prices each template with one stage
                                     *   moved to the front or to the end of the faster of the decided and
                                     *   the reversed order (every stage, one pass, templates of 3 to 16
                                     *   stages) and keeps the fastest order; the exhaustive search and
                                     *   arachne_plan_refine's climb, which reorder stages themselves, never
                                     *   do; 0: only the orders STAGE_REVERSAL tries; 0 or 1 (default 1) */
    ARACHNE_OPT_STAGE_MAJOR = 22,   /**< 1: the planners' fill also places the replicas of each template in
                                     *   Megatron's order (stage by stage: a stage's data-parallel and
                                     *   expert-parallel peers share nodes) as well as replica by replica
                                     *   (a replica's consecutive stages share nodes), when two of its
                                     *   stages have one GPU type and group size, and keeps the faster;
                                     *   0: replica by replica only; 0 or 1 (default 1) */
    ARACHNE_OPT_FSDP_SEARCH = 23,   /**< 1: arachne_plan_refine's last fills (and, when FSDP wins
                                     *   there, a further quarter of its budget) also price the candidates
                                     *   that memory refused (a micro-batch size, or its balanced layer
                                     *   split) with the template's data-parallel replicas sharding
                                     *   weights, gradients and optimizer state (FSDP / ZeRO-3), in groups
                                     *   of the replicas one node holds and of all of them; a plan is kept
                                     *   when it ranks higher and, when the best runs the batch exactly,
                                     *   runs it exactly too; in those fills a template that fits only
                                     *   with FSDP fits; the policy's construction (and its masks) and the
                                     *   baseline searches never shard; 0: no FSDP in planned templates;
                                     *   0 or 1 (default 1) */
    ARACHNE_OPT_RECOMPUTE_SEARCH = 24, /**< whether the default planner (arachne_plan_build_refined, and so
                                     *   arachne_replan) may return a plan with ARACHNE_RECOMPUTE_FULL
                                     *   when the ARACHNE_OPT_RECOMPUTE mode set is another: full
                                     *   recomputation stores only each block's input and runs its
                                     *   forward again in the backward, so it fits templates and
                                     *   micro-batches the other modes do not, at a third more compute.
                                     *   1 (default): after planning in the mode set, a probe refills that
                                     *   plan's structure with full recomputation; when the probe ranks
                                     *   higher, or nothing fit, the planner runs again with full
                                     *   recomputation and the highest-ranked plan is returned (ties keep
                                     *   the mode set); 2: that second run always; 0: the mode set only.
                                     *   The plan records its mode (ARACHNE_PLAN_RECOMPUTE).  No effect
                                     *   when the mode set is full, and none on pricing, on the other
                                     *   planners or on the masks; 0, 1 or 2 */
    ARACHNE_OPT_EXACT_DIVISION = 25 /**< 1: plans must run the asked batch.  The division of the global
                                     *   batch over a plan's templates takes the fastest exact division
                                     *   (ARACHNE_PLAN_SAMPLES_RUN = GLOBAL_BATCH) whenever one exists,
                                     *   however much slower than the fastest division it is (a
                                     *   structure with no exact division is priced as with 0), and the
                                     *   planners rank every plan that runs the batch exactly above
                                     *   every plan that does not (those among themselves as
                                     *   ARACHNE_OPT_EXACT_BATCH ranks them), so they return a plan
                                     *   running a surplus only when they priced no exact one.  For
                                     *   pricing a plan that must run the asked batch, and for planning
                                     *   again when a plan found without it runs a surplus, as the
                                     *   arachne commands do: planning with it from the start loses the
                                     *   inexact plans the climbs step through and can return a slower
                                     *   exact plan than planning without it (docs/search.md).  2: the
                                     *   same for pricing and for every planner, except that
                                     *   arachne_plan_build_refined (and so arachne_replan) plans first
                                     *   as with 0 and, only when that plan runs a surplus, plans again
                                     *   as with 1 and refines the first plan as with 1 (in the first
                                     *   plan's recompute mode), returning the highest-ranked of those:
                                     *   the plan for a caller that must run the asked batch (the steps
                                     *   the arachne commands take; examples/launcher.c sets it; the
                                     *   options table of docs/c-api.md).  0 (default):
                                     *   ARACHNE_OPT_EXACT_BATCH decides.  Plan files do not record it:
                                     *   repricing follows the cost model's setting.  0, 1 or 2 */
} arachne_option;

/** Creates a cost model over model `m`, cluster `c` and profile `p`, with
 *  the default training setup (docs/cost-model.md) and the profile's
 *  sequence length.  The three are BORROWED: they must stay alive and
 *  unmodified until the cost model is destroyed.  Lookup tables are built
 *  here, so pricing never allocates.  *out receives a handle released with
 *  arachne_cost_model_destroy(); NULL on failure.
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL argument; a profile measured
 *  for another model; a profile with no sequence length),
 *  ARACHNE_E_NO_MEMORY.  Thread-safe for distinct outputs. */
ARACHNE_API int arachne_cost_model_create(arachne_cost_model **out, const arachne_model *m,
                                          const arachne_cluster *c, const arachne_profile *p);

/** Releases a cost model (not the model, cluster or profile it borrows).
 *  NULL is a no-op.  Plans priced with it stay valid. */
ARACHNE_API void arachne_cost_model_destroy(arachne_cost_model *cm);

/** Sets one training-setup option (arachne_option) to `value` (units as
 *  documented for each option).  Errors: ARACHNE_E_INVALID_ARGUMENT naming
 *  the option for an unknown key, a value out of range, a fractional value
 *  for an integer option, or a sequence length other than the profile's
 *  (the message gives both numbers); the setup is unchanged on failure.
 *  A mutator: must not run while any thread prices with this cost model. */
ARACHNE_API int arachne_cost_model_set(arachne_cost_model *cm, int option, double value);

/** Reads one training-setup option into *out.  Errors:
 *  ARACHNE_E_INVALID_ARGUMENT (NULL argument, unknown key; *out untouched).
 *  Read-only: safe from many threads. */
ARACHNE_API int arachne_cost_model_get(const arachne_cost_model *cm, int option, double *out);

/** Prices `plan` in place with this cost model's setup (which replaces the
 *  plan's recorded setup): per-stage times, synchronisation and memory,
 *  micro-batches per replica, iteration time (s), iterations/s, samples/s,
 *  tokens/s, MFU and bubble fraction.  The plan must carry its device
 *  assignment (ranks).  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL argument,
 *  plan for another model), ARACHNE_E_INVALID_PLAN (a stage or rank out of
 *  range, layers not covered in order), ARACHNE_E_INFEASIBLE (the profile
 *  lacks a (GPU, layer kind, TP, micro-batch) entry a stage needs; the
 *  message names it), ARACHNE_E_OUT_OF_MEMORY_PLAN (a stage does not fit;
 *  the message names the template, stage, GPU type, TP, layers and the
 *  bytes needed and available), ARACHNE_E_NO_MEMORY.  On failure the plan's
 *  prices are unchanged.  Read-only on the cost model: many threads may
 *  price different plans with one cost model at once. */
ARACHNE_API int arachne_cost_model_price(const arachne_cost_model *cm, arachne_plan *plan);

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
    ARACHNE_PLAN_BUBBLE = 5,        /**< pipeline bubble 0..1: share of the GPU time of the pipelined part
                                         *   of the iteration that no forward or backward uses (idle, or
                                         *   waiting for a send; docs/cost-model.md, "Iteration") */
    ARACHNE_PLAN_GPUS_USED = 6,     /**< GPUs the plan uses */
    ARACHNE_PLAN_GPUS_TOTAL = 7,    /**< GPUs in the cluster planned for */
    ARACHNE_PLAN_TEMPLATES = 8,     /**< number of templates */
    ARACHNE_PLAN_RANKS = 9,         /**< number of ranks (= GPUS_USED) */
    ARACHNE_PLAN_PLANNING_S = 10,   /**< seconds the planner spent building the plan */
    ARACHNE_PLAN_EVALUATIONS = 11,  /**< cost-model evaluations the planner made */
    ARACHNE_PLAN_GLOBAL_BATCH = 12, /**< samples per iteration */
    ARACHNE_PLAN_SEQ_LEN = 13,      /**< tokens per sample */
    ARACHNE_PLAN_SAMPLES_RUN = 14,  /**< samples one iteration runs: the sum over templates of replicas x
                                         micro-batch x micro-batches; GLOBAL_BATCH when the division is
                                         exact, more when no exact one exists or every exact one is
                                         slower than the surplus is worth (ARACHNE_OPT_EXACT_BATCH) */
    ARACHNE_PLAN_RECOMPUTE = 15     /**< the arachne_recompute mode the plan is priced with: the cost
                                         model's, or the one ARACHNE_OPT_RECOMPUTE_SEARCH chose */
} arachne_plan_field;

/** Per-template values for arachne_plan_template_get.  Numbers are pinned. */
typedef enum arachne_template_field {
    ARACHNE_TEMPLATE_DEPTH = 0,         /**< pipeline stages */
    ARACHNE_TEMPLATE_REPLICAS = 1,      /**< pipelines of this structure (data-parallel replicas) */
    ARACHNE_TEMPLATE_MICRO_BATCH = 2,   /**< samples per micro-batch */
    ARACHNE_TEMPLATE_MICRO_BATCHES = 3, /**< micro-batches per replica per iteration */
    ARACHNE_TEMPLATE_PIPELINE_S = 4,    /**< seconds one replica takes for its micro-batches (1F1B) */
    ARACHNE_TEMPLATE_CP = 5,            /**< context-parallel degree (1: none); each stage of one replica
                                             runs on tp x cp GPUs (Megatron --context-parallel-size) */
    ARACHNE_TEMPLATE_VP = 6,            /**< model chunks per pipeline stage (interleaved 1F1B); 1 when
                                         *   not interleaved.  Chunk ranges: docs/formats.md */
    ARACHNE_TEMPLATE_FSDP = 7           /**< FSDP (ZeRO-3) group: consecutive replicas that shard their
                                         *   stages' weights, gradients and optimizer state; 1: none */
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
    ARACHNE_EXPORT_MEGATRON = 1,   /**< Megatron-LM arguments (Megatron-Core core_v0.15.0), one set per template */
    ARACHNE_EXPORT_TORCHTITAN = 2, /**< torchtitan TOML job config (v0.2.2 and older), one per template */
    ARACHNE_EXPORT_FLASHFLEX = 3,  /**< FlashFlex/HexiScale arguments */
    ARACHNE_EXPORT_SAILOR = 4,     /**< Sailor's plan JSON (pipeline_list); refused when Sailor cannot express the plan */
    ARACHNE_EXPORT_TORCHTITAN_CLI = 5 /**< torchtitan after its Feb-2026 config refactor: --section.option overrides */
} arachne_export_format;

/** Header fields of a plan file for arachne_plan_file_header.  Numbers are pinned. */
typedef enum arachne_plan_header {
    ARACHNE_PLAN_HEADER_MODEL = 0,          /**< model name, e.g. "llama3-8b" */
    ARACHNE_PLAN_HEADER_CLUSTER = 1,        /**< compact cluster string */
    ARACHNE_PLAN_HEADER_GLOBAL_BATCH = 2,   /**< samples per iteration, decimal */
    ARACHNE_PLAN_HEADER_SEQ_LEN = 3,        /**< tokens per sample, decimal */
    ARACHNE_PLAN_HEADER_RECOMPUTE = 4,      /**< "none", "selective" or "full" */
    ARACHNE_PLAN_HEADER_DIST_OPTIMIZER = 5, /**< "1" or "0" */
    ARACHNE_PLAN_HEADER_HEADROOM = 6,       /**< fraction of GPU memory kept free, decimal */
    ARACHNE_PLAN_HEADER_ITERATION_S = 7,    /**< seconds per iteration as priced when saved, decimal */
    ARACHNE_PLAN_HEADER_WEIGHT_BYTES = 8,   /**< bytes per parameter for weights, decimal */
    ARACHNE_PLAN_HEADER_GRAD_BYTES = 9,     /**< bytes per parameter for gradients, decimal */
    ARACHNE_PLAN_HEADER_OPTIM_BYTES = 10,   /**< bytes per parameter of optimizer state, decimal */
    ARACHNE_PLAN_HEADER_MODEL_JSON = 11,    /**< the embedded model ("arachne-model" JSON text; version-2 plans) */
    ARACHNE_PLAN_HEADER_CLUSTER_JSON = 12,  /**< the embedded cluster ("arachne-cluster" JSON text, GPU figures included) */
    ARACHNE_PLAN_HEADER_PROFILE_JSON = 13,  /**< the embedded profile ("arachne-profile" JSON text), checked against its CRC-32 */
    ARACHNE_PLAN_HEADER_PROFILE_CRC32 = 14, /**< CRC-32 of the profile the plan was priced with, 8 hex digits */
    ARACHNE_PLAN_HEADER_OVERLAP_GRAD_REDUCE = 15,  /**< "1" or "0" (ARACHNE_OPT_OVERLAP_GRAD_REDUCE) */
    ARACHNE_PLAN_HEADER_OVERLAP_PARAM_GATHER = 16, /**< "1" or "0" (ARACHNE_OPT_OVERLAP_PARAM_GATHER) */
    ARACHNE_PLAN_HEADER_TP_COMM_OVERLAP = 17       /**< "1" or "0" (ARACHNE_OPT_TP_COMM_OVERLAP) */
} arachne_plan_header;

/** Destroys a plan.  NULL is a no-op.  Not concurrently with other calls on p. */
ARACHNE_API void arachne_plan_destroy(arachne_plan *p);

/** The plan as JSON (format "arachne-plan", version 2; docs/formats.md):
 *  the plan, its prices, and the model, cluster and profile it was priced
 *  with (so the file reprices on its own).
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

/** Turns a Sailor plan (the JSON its planner writes: "pipeline_list" with
 *  "num_stages", "layers_per_stage" (layer ids: 0 embedding, 1..L blocks,
 *  L+1 head), "tmp_per_stage" ([[[gpu, gpus_per_vm, zone]], tp] per replica
 *  per stage) and "dp", plus the top-level "mbs") into a plan on cm's
 *  cluster: replica r of a pipeline is the r-th entry of every stage, and
 *  replicas with the same GPU type and TP per stage form one template.  Each
 *  TP group is placed on the first node of its type with enough free GPUs
 *  (node order).  The plan is validated and priced with cm (micro-batch
 *  counts reassigned for cm's global batch); its method is "sailor-import".
 *  *out receives a new plan (arachne_plan_destroy), NULL on failure.
 *  Errors: ARACHNE_E_PARSE (not a Sailor plan, or a stage's "dp" other
 *  than the replicas its "tmp_per_stage" lists; "<sailor plan>:line:col"),
 *  ARACHNE_E_INVALID_PLAN (a GPU type not in the cluster, stages with
 *  different replica counts, layers that do not cover the model),
 *  ARACHNE_E_INFEASIBLE (more GPUs than the cluster has), pricing statuses,
 *  ARACHNE_E_INVALID_ARGUMENT (NULL).  cm may be shared read-only. */
ARACHNE_API int arachne_plan_from_sailor(arachne_plan **out, const arachne_cost_model *cm, const char *json,
                                         size_t len);

/** Builds and prices the plan of an explicit homogeneous parallel
 *  configuration -- the one a team already runs -- so that it can be priced
 *  and compared with planned plans under the same cost model.  spec is
 *  comma-separated key=value pairs:
 *    tp, pp      tensor- and pipeline-parallel degrees (default 1);
 *    dp          data-parallel replicas (default: every GPU of the type,
 *                divided by tp x cp x pp);
 *    cp          context-parallel degree (default 1): every stage of a
 *                replica runs on tp x cp GPUs; the sequence length must be
 *                divisible by 2 x cp (ARACHNE_E_INVALID_ARGUMENT otherwise);
 *    mbs         sequences per micro-batch (default 1);
 *    ep, etp     expert-parallel and expert tensor-parallel degrees on MoE
 *                stages (defaults 1 and tp, Megatron-Core's defaults);
 *    layers      transformer blocks per stage, "7/8/.../7" (pp entries
 *                summing to the model's blocks; default an even split);
 *    fsdp        FSDP / ZeRO-3 sharding group (data-parallel ranks that shard
 *                weights, gradients and optimizer state; divides dp; 0 or 1:
 *                off, ZeRO-1 per the setup);
 *    gpu         the GPU type (required when the cluster has several);
 *    vp          interleaved 1F1B: model chunks per stage (default 1, up
 *                to 16); above 1 it needs pp >= 2, no layers=, the blocks
 *                splitting evenly into pp x vp chunks and the micro-batches
 *                a multiple of pp (ARACHNE_E_INVALID_ARGUMENT naming the
 *                numbers otherwise).
 *  Each key at most once.
 *  The global batch (cm's GLOBAL_BATCH) must be a multiple of dp x mbs;
 *  micro-batches per replica = batch / (dp x mbs).  Ranks follow
 *  Megatron-Core's default order (TP fastest, then CP, then DP, then the
 *  pipeline stage) over the type's GPUs in node order; TP groups must not
 *  cross a node (CP groups may).  Training knobs (distributed optimizer, recomputation, overlap,
 *  bytes per parameter) come from cm's setup.  *out receives a new priced
 *  plan (method "given"; destroy with arachne_plan_destroy) or NULL.
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL argument, values that do not
 *  divide, batch not a multiple -- the message names the nearest batches),
 *  ARACHNE_E_PARSE (malformed spec, unknown or repeated key), ARACHNE_E_UNSUPPORTED,
 *  ARACHNE_E_NOT_FOUND (gpu= names no type of the cluster),
 *  ARACHNE_E_INFEASIBLE (not enough GPUs; a profile entry missing),
 *  ARACHNE_E_INVALID_PLAN (a TP group would cross a node),
 *  ARACHNE_E_OUT_OF_MEMORY_PLAN, ARACHNE_E_NO_MEMORY.  cm is only read:
 *  threads may share it. */
ARACHNE_API int arachne_plan_from_parallel(arachne_plan **out, const arachne_cost_model *cm, const char *spec);

/** Reads one recorded header field (arachne_plan_header) of the plan file
 *  at path as text, without a cost model and without validating the plan:
 *  what a tool needs to rebuild the cost model the plan was made for before
 *  calling arachne_plan_load.  Copies the NUL-terminated text into
 *  buf[0..cap); *needed (when not NULL) receives its size with the NUL.
 *  Errors: ARACHNE_E_IO, ARACHNE_E_PARSE (not JSON, not an arachne plan, or
 *  the field has the wrong type; an embedded profile whose CRC-32 does not
 *  match the recorded one), ARACHNE_E_UNSUPPORTED (another format version),
 *  ARACHNE_E_NOT_FOUND (an optional setup field, or embedded inputs, that
 *  the file does not record: version-1 plans carry none),
 *  ARACHNE_E_BUFFER_TOO_SMALL, ARACHNE_E_INVALID_ARGUMENT (unknown key).
 *  Opens only `path` itself; the `model` and `cluster` fields are text,
 *  never paths.  Thread-safe. */
ARACHNE_API int arachne_plan_file_header(const char *path, int key, char *buf, size_t cap, size_t *needed);

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
 *  ARACHNE_E_INVALID_ARGUMENT for an unknown format; ARACHNE_E_UNSUPPORTED
 *  when the target cannot express the plan at all (the message says what;
 *  exports that can approximate it print NOTE lines instead).  Pure read of
 *  p; deterministic bytes. */
ARACHNE_API int arachne_plan_export(const arachne_plan *p, int format, char *buf, size_t cap,
                                    size_t *needed);

/* @@SECTION search@@ */

/* Baseline planners over the same construction as the learned policy: a
 * plan is built one structural template at a time (depth, then per stage a
 * GPU type and a TP degree), every choice that cannot run is masked, and
 * the rule-based fill decides replicas, micro-batch size, layer split and
 * expert tiling (docs/fill.md, docs/search.md).  Both searches record the
 * method, the evaluations (priced plans: one per template placed) and the
 * planning time in the returned plan.  They only read the cost model, so
 * several searches may share one cost model from different threads. */

/** Random search: rollouts that pick uniformly among the allowed choices
 *  of every decision, until `budget` plans have been priced (budget >= 1)
 *  or `time_budget_s` seconds have passed (0: no time limit).  Returns the
 *  best plan seen (highest iterations per second; under
 *  ARACHNE_OPT_EXACT_BATCH, the default, a plan that runs more samples than
 *  the global batch is charged for the surplus), including the plans
 *  a rollout passes through before it stops.  Same cost model and seed give
 *  the same plan, byte for byte, unless the time budget cuts the search.
 *  On success *out is a new plan the caller releases with
 *  arachne_plan_destroy(); on failure *out is NULL.
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL, budget < 1, negative time),
 *  ARACHNE_E_INFEASIBLE (no plan fits; the message says why),
 *  ARACHNE_E_NO_MEMORY. */
ARACHNE_API int arachne_search_random(arachne_plan **out, const arachne_cost_model *cm, long budget,
                                      uint64_t seed, double time_budget_s);

/** Exhaustive search: every plan the construction can reach with at most
 *  `max_templates` templates (1..16; pipeline depth up to the cost model's
 *  maximum depth), returning the best as arachne_search_random ranks them.  The number of plans grows
 *  exponentially with depth and GPU count: it is practical on clusters up
 *  to about 64 GPUs (with a small max_templates).  `time_budget_s` > 0 stops
 *  the enumeration after that many seconds and returns the best plan so
 *  far (its method then reads "exhaustive-partial"; when the time ran out
 *  before any plan, the plan of one construction that takes the first
 *  allowed choice at every decision); 0 means no limit.
 *  Ownership and errors as arachne_search_random. */
ARACHNE_API int arachne_search_exhaustive(arachne_plan **out, const arachne_cost_model *cm,
                                          int max_templates, double time_budget_s);

/* @@SECTION policy@@ */

/* ------------------------------------------------------------------------ */
/* Policy: the learned planner                                               */
/* ------------------------------------------------------------------------ */

/** Fields of arachne_policy_info() (pinned numbers). */
typedef enum arachne_policy_field {
    ARACHNE_POLICY_PARAMS = 0,          /**< number of network parameters */
    ARACHNE_POLICY_HIDDEN = 1,          /**< backbone width */
    ARACHNE_POLICY_LAYERS = 2,          /**< backbone layers */
    ARACHNE_POLICY_STATE_DIM = 3,       /**< entries of the state vector */
    ARACHNE_POLICY_COMP_DIM = 4,        /**< entries of the composition summary */
    ARACHNE_POLICY_SCHEMA_VERSION = 5,  /**< feature-schema version the policy was made for */
    ARACHNE_POLICY_TRAIN_STEPS = 6      /**< optimizer steps this handle has taken (a trainer running on
                                             it); 0 for a policy loaded from a file, which keeps the
                                             weights and not the optimizer state (a file written by
                                             `arachne train` records its updates in the metadata) */
} arachne_policy_field;

/** Creates a randomly initialised (untrained) policy.  seed makes the
 *  initial weights (same seed, same weights, bit for bit).  hidden and
 *  layers size the backbone MLP; 0 picks the defaults (128 and 2).
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (out NULL, sizes out of range),
 *  ARACHNE_E_NO_MEMORY.  The caller owns *out (arachne_policy_destroy). */
ARACHNE_API int arachne_policy_create(arachne_policy **out, uint64_t seed, int hidden, int layers);

/** Loads a policy file (docs/formats.md, "Policy file").  Errors:
 *  ARACHNE_E_IO (unreadable), ARACHNE_E_CORRUPT (bad magic, truncated,
 *  sizes that contradict, checksum mismatch), ARACHNE_E_UNSUPPORTED (file
 *  format or feature-schema version this library does not read),
 *  ARACHNE_E_NO_MEMORY.  *out is NULL on failure. */
ARACHNE_API int arachne_policy_load(arachne_policy **out, const char *path);

/** Saves the policy atomically (temporary file + rename; on failure an
 *  existing file is untouched and ARACHNE_E_IO is returned).  Same policy,
 *  same bytes. */
ARACHNE_API int arachne_policy_save(const arachne_policy *policy, const char *path);

/** Frees a policy.  NULL is a no-op. */
ARACHNE_API void arachne_policy_destroy(arachne_policy *policy);

/** Reads one arachne_policy_field into *out.  ARACHNE_E_INVALID_ARGUMENT for
 *  NULL arguments or an unknown field.  Pure read: thread-safe on a shared
 *  policy. */
ARACHNE_API int arachne_policy_info(const arachne_policy *policy, int field, double *out);

/** The JSON metadata stored with the policy (training summary), "" when
 *  none.  Borrowed; valid until the policy changes or is destroyed. */
ARACHNE_API int arachne_policy_metadata(const arachne_policy *policy, const char **out);

/** Replaces the JSON metadata saved with the policy (copied): one JSON
 *  value in UTF-8, or "" for none.  ARACHNE_E_INVALID_ARGUMENT (NULL, or
 *  text that is not JSON, as a policy file's reader would refuse it: the
 *  message names the line and column) leaves the metadata as it was.
 *  Changes the policy: not while another thread uses it. */
ARACHNE_API int arachne_policy_set_metadata(arachne_policy *policy, const char *json);

/** Plans the cost model's cluster with the policy: one template per step,
 *  masks applied before every decision, every template filled and the plan
 *  priced.  samples <= 1: greedy decoding.  samples = K > 1: the greedy plan
 *  plus K-1 plans sampled with an RNG seeded by seed; the best priced plan
 *  is kept (the fastest; under ARACHNE_OPT_EXACT_BATCH, the default, a
 *  plan that runs more samples than the global batch is charged for the
 *  surplus).  The plan records method, samples, evaluations (plans priced)
 *  and planning_s (wall time of this call).  Errors: ARACHNE_E_INVALID_ARGUMENT,
 *  ARACHNE_E_INFEASIBLE (no template fits: the message compares the memory
 *  the model needs with what the cluster has), ARACHNE_E_NO_MEMORY.
 *  Threads: a policy and a cost model may be shared by concurrent calls.
 *  In a library built with OpenMP (make OPENMP=1) the K rollouts run on
 *  omp_get_max_threads() threads; rollout k always uses the k-th seed drawn
 *  from `seed` and the best plan is chosen by (throughput, k), so the plan
 *  does not depend on the thread count.  Same inputs and seed give the same
 *  plan, bit for bit.  The caller owns *out (arachne_plan_destroy). */
ARACHNE_API int arachne_plan_build(arachne_plan **out, const arachne_policy *policy,
                                   const arachne_cost_model *cm, int samples, uint64_t seed);

/** Plans the cost model's cluster with the policy by rollout decoding
 *  (docs/search.md, "Rollout decoding"): decision by decision, every
 *  allowed choice other than the policy's own is completed greedily by the
 *  policy into a whole plan and priced, and the decoder goes on with the
 *  choice whose completion ranks highest (the fastest; under
 *  ARACHNE_OPT_EXACT_BATCH, the default, a surplus is charged); ties keep
 *  the policy's choice, whose completion is the plan the decoder already
 *  holds.  The plan is finished as greedy decoding finishes its own, and
 *  is never slower than arachne_plan_build's greedy plan (samples <= 1)
 *  for the same policy and cost model.  It costs about one greedy
 *  construction per allowed choice of every decision (docs/search.md has
 *  the fills and times the bundled policy takes).  evaluations:
 *  a budget in fills (templates filled and priced, the unit of a plan's
 *  `evaluations`), checked before each decision's completions; once it is
 *  spent the policy makes the remaining decisions; 0: no budget.
 *  time_cap_s: a wall-clock cap in seconds, checked at the same points
 *  (0: none; the bundled policy took up to 13 s on one thread for
 *  DeepSeek-V3 on 1,495 GPUs).  No seed: nothing is sampled.  The plan
 *  records method "policy-rollout" ("policy-rollout-capped" when the time
 *  cap stopped the lookahead: the plan then depends on the machine),
 *  samples 1, evaluations and planning_s.  Errors:
 *  ARACHNE_E_INVALID_ARGUMENT (NULL, negative evaluations, a time cap
 *  outside [0, 1e9]), ARACHNE_E_INFEASIBLE (as arachne_plan_build),
 *  ARACHNE_E_NO_MEMORY.  Threads: as
 *  arachne_plan_build; in a library built with OpenMP the completions of a
 *  decision run on omp_get_max_threads() threads and the best is chosen
 *  by (rank, choice), so the plan does not depend on the thread count.
 *  Same inputs give the same plan, bit for bit, unless the time cap stops
 *  it.  The caller owns *out (arachne_plan_destroy); *out is NULL on
 *  failure. */
ARACHNE_API int arachne_plan_rollout(arachne_plan **out, const arachne_policy *policy,
                                     const arachne_cost_model *cm, long evaluations, double time_cap_s);

/** Default budget of arachne_plan_refine and of `arachne plan`: fills
 *  (templates filled and priced), the unit of a plan's `evaluations`. */
#define ARACHNE_REFINE_EVALUATIONS 500

/** Improves a plan with the cost model (docs/search.md, "Refinement").  On
 *  clusters of at most 64 GPUs an exact search of the one-template plans
 *  runs first on at most an eighth of the budget (and at most 16,384
 *  prefixes examined per plan of that share); then a local search
 *  changes one template decision at a time (two neighbouring stages
 *  swapped, a stage split into two of half its GPUs or two equal ones
 *  joined, every stage's GPUs doubled or halved, a stage's GPU type, its
 *  TP x2 or /2, two templates joined into one pipeline, depth +1 or -1, a
 *  template dropped, two swapped, a one-type copy added on free GPUs),
 *  refills the plan and keeps a change when it is faster; the budget left
 *  goes to climbs from randomly perturbed copies of the best plan (a
 *  fixed-seed RNG).  A structure met again is not refilled (it costs no
 *  budget).  The search fills without ARACHNE_OPT_STAGE_MAJOR's second
 *  placement order and without FSDP; when ARACHNE_OPT_STAGE_MAJOR or
 *  ARACHNE_OPT_FSDP_SEARCH is on, the best structure is filled once more at
 *  the end with them (one fill per template beyond the budget), and with
 *  FSDP_SEARCH the four fastest other structures the search filled too;
 *  when FSDP won in one of those fills, the search goes on with FSDP in
 *  every fill for a quarter of the budget more.
 *  Returns the best plan priced, never slower than `start`
 *  repriced with cm (under ARACHNE_OPT_EXACT_BATCH, the default, a plan that
 *  runs more samples than the batch counts at iterations per second x
 *  batch / samples run, and so may give way to a slower exact plan).
 *  evaluations: the budget in fills (>= 0; 0 returns `start` repriced;
 *  ARACHNE_REFINE_EVALUATIONS is the CLI default); it is checked before
 *  each candidate plan, so the last candidate can exceed it by fewer fills
 *  than the plan has templates.  time_cap_s: a
 *  wall-clock limit in seconds (0: none).  The result depends only on the
 *  inputs and the budget, unless the time cap stops the refinement first;
 *  then the plan's method ends in "+refine-capped" instead of "+refine".
 *  The plan records the start plan's samples, its evaluations plus those
 *  spent here, and its planning_s plus the time spent here.  start must be
 *  a plan for cm's cluster and model (ARACHNE_E_INVALID_PLAN otherwise).
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL, negative budget or cap, a
 *  plan without templates), ARACHNE_E_INVALID_PLAN, ARACHNE_E_INFEASIBLE
 *  (neither the plan nor any variant prices with cm), ARACHNE_E_NO_MEMORY.
 *  Threads: start and cm are only read; concurrent calls may share them.
 *  The caller owns *out (arachne_plan_destroy); *out is NULL on failure. */
ARACHNE_API int arachne_plan_refine(arachne_plan **out, const arachne_plan *start,
                                    const arachne_cost_model *cm, long evaluations, double time_cap_s);

/** The default planner of `arachne plan`, `arachne eval`'s
 *  policy-best16+refine and arachne_replan: best-of-`samples`
 *  (arachne_plan_build), then arachne_plan_refine with `evaluations` fills
 *  from the best sample and, when samples > 1 and the greedy plan has
 *  another structure (templates, depths, stage GPU types and group
 *  sizes), again with evaluations / 2 fills (at least 1) from the greedy
 *  plan, and with evaluations / 2 fills from the best sampled plan whose
 *  stages use another set of GPU types than the best sample's, when there
 *  is one and its structure is neither start's; returns the fastest
 *  refined plan (ties: the best sample's, then the greedy plan's).  The
 *  greedy plan is the build's rollout 0, the plan arachne_plan_build
 *  gives with samples 1, and the third start another of its rollouts,
 *  both kept rather than decoded again; when the greedy rollout found no
 *  plan, it is not refined.  A local search stays near its start, and
 *  the three are often different pipelines: from the first two, the
 *  refinement reaches 1.024 of exhaustive search on the 100 small
 *  validation compositions against 1.021 from the best sample alone; the
 *  third start made no composition of six evaluation sets slower and 17
 *  of 218 faster (docs/search.md, "Three starts").  evaluations 0: the
 *  best-of-K plan unrefined.
 *  time_cap_s (0: none) caps the whole refinement: the first start gets
 *  half, the greedy plan half of what is left when a third start
 *  follows (else all of it), the third start what is left then.  The
 *  plan records `samples`, every evaluation spent (the build's, the
 *  other starts' among them, and the refinements') and the whole wall
 *  time; its method is the refined
 *  plan's ("policy-best-of-k+refine", "policy-greedy+refine" when
 *  samples <= 1).  Unless ARACHNE_OPT_RECOMPUTE_SEARCH is 0 or the mode
 *  is full, a probe then refills the plan's structure on a copy of cm set
 *  to full recomputation (one evaluation of arachne_plan_refine), and when
 *  the probe ranks higher, nothing fit, or the option is 2, all of this runs
 *  a second time on that copy; the highest-ranked plan is returned (ties
 *  keep cm's mode).  It records its mode (ARACHNE_PLAN_RECOMPUTE) and the
 *  evaluations and wall time of every run; time_cap_s goes half to each
 *  run with the option 2, and with 1 wholly to the first run and what is
 *  left to a second.  When only one mode finds a plan, that plan; when
 *  neither does, the error of cm's mode.  With ARACHNE_OPT_EXACT_DIVISION
 *  2, all of this runs with the option 0 and, when its plan runs more
 *  samples than the global batch, again as with 1, and the
 *  first plan is refined (evaluations fills, at least 1) the same way;
 *  the highest-ranked plan, which runs the batch unless no plan found
 *  does, counts the evaluations and time of all, and time_cap_s goes to
 *  the first run, then what is left to the second and then to the
 *  refinement.  Deterministic as
 *  arachne_plan_build and arachne_plan_refine are.  Errors: as
 *  arachne_plan_build and arachne_plan_refine (ARACHNE_E_INVALID_ARGUMENT
 *  for a NULL argument, samples outside 0..1000000, a negative budget, a
 *  cap outside [0, 1e7]).  Threads: as arachne_plan_build.  The caller
 *  owns *out (arachne_plan_destroy); *out is NULL on failure. */
ARACHNE_API int arachne_plan_build_refined(arachne_plan **out, const arachne_policy *policy,
                                           const arachne_cost_model *cm, int samples, uint64_t seed,
                                           long evaluations, double time_cap_s);

/** Draws the plan as a plain SVG picture: every node and GPU of the cluster
 *  coloured by template (hue) and stage (lightness), idle GPUs grey; per
 *  template its stages with GPU type x TP, layer range, a stage-time bar and
 *  a memory bar.  Copies into buf (cap bytes, NUL-terminated); *needed (may
 *  be NULL) receives the size including the NUL.  ARACHNE_E_BUFFER_TOO_SMALL
 *  when it does not fit (buf untouched).  Pure read of the plan. */
ARACHNE_API int arachne_plan_to_svg(const arachne_plan *plan, char *buf, size_t cap, size_t *needed);

/** Writes the SVG picture of arachne_plan_to_svg() to path atomically
 *  (ARACHNE_E_IO on failure; an existing file is left untouched). */
ARACHNE_API int arachne_plan_save_svg(const arachne_plan *plan, const char *path);



/* @@SECTION trainer@@ */

/* ------------------------------------------------------------------------ */
/* Trainer: one policy across many compositions                              */
/* ------------------------------------------------------------------------ */

/* A trainer improves a policy (in place) on a list of compositions, each a
 * cost model (model x cluster x training setup).  One update samples a group
 * of G rollouts per composition with the policy's construction loop, scores
 * every decision with a group-relative advantage (no value network), takes
 * PPO_EPOCHS clipped-objective steps over the stored decisions, combines the
 * per-composition gradients with PCGrad and applies Adam with gradient-norm
 * clipping; at a fixed interval it also imitates the best plans found
 * (self-imitation, per-depth replay buffers).  The method and every formula:
 * docs/training.md.  Results depend only on the inputs and the seed, never on
 * the number of threads (OpenMP builds run rollouts in parallel). */

/** Trainer options for arachne_trainer_set / arachne_trainer_get_option.
 *  Values are pinned; every value is a double, integer options must hold an
 *  exact integer.  Defaults in brackets. */
typedef enum arachne_train_option {
    ARACHNE_TRAIN_UPDATES = 0,            /**< length of the exploration schedule in updates, integer >= 1 [200] */
    ARACHNE_TRAIN_GROUP_SIZE = 1,         /**< rollouts per composition per update (G), integer 2..1024 [8] */
    ARACHNE_TRAIN_PPO_EPOCHS = 2,         /**< optimizer steps per update over the stored decisions, integer 1..64 [3] */
    ARACHNE_TRAIN_CLIP = 3,               /**< PPO ratio clip epsilon, (0, 1) [0.2] */
    ARACHNE_TRAIN_LEARNING_RATE = 4,      /**< Adam learning rate, (0, 1] [1e-3] */
    ARACHNE_TRAIN_ENTROPY = 5,            /**< entropy bonus coefficient, [0, 10] [0.01] */
    ARACHNE_TRAIN_FORCE_DEPTH_START = 6,  /**< probability a rollout's depths are forced uniform, at update 0, [0, 1] [0.8] */
    ARACHNE_TRAIN_FORCE_DEPTH_END = 7,    /**< the same at update UPDATES and after (linear in between), [0, 1] [0.25] */
    ARACHNE_TRAIN_SIL_INTERVAL = 8,       /**< updates between self-imitation steps, integer >= 0 (0: off) [5] */
    ARACHNE_TRAIN_SIL_WEIGHT = 9,         /**< weight of the self-imitation loss, [0, 100] [0.5] */
    ARACHNE_TRAIN_PENALTY = 10,           /**< reward of an infeasible first template is -PENALTY x the
                                               composition's reference throughput, [0, 1e6] [1] */
    ARACHNE_TRAIN_MAX_GRAD_NORM = 11,     /**< global gradient-norm clip before Adam, >= 0 (0: off) [1] */
    ARACHNE_TRAIN_SIL_NEIGHBOURS = 12,    /**< similar compositions whose best plans are also imitated, integer 0..64 [2] */
    ARACHNE_TRAIN_SIL_PER_DEPTH = 13,     /**< best plans kept per depth per composition, integer 1..16 [2] */
    ARACHNE_TRAIN_MAX_STEPS = 14,         /**< templates per rollout at most, integer 1..16 [16] */
    ARACHNE_TRAIN_WEIGHT_DECAY = 15,      /**< decoupled weight decay per Adam step, [0, 1) [0] */
    ARACHNE_TRAIN_SIL_CLIP = 16,          /**< clip of the normalised self-imitation weight max(R - b, 0), > 0 [1] */
    ARACHNE_TRAIN_UNIFORM_TYPE_ROLLOUTS = 17, /**< rollouts per group that draw GPU types uniformly, integer 0..G [1] */
    ARACHNE_TRAIN_THREADS = 18,           /**< OpenMP threads for rollouts and gradients, integer 0..1024
                                               (0: the OpenMP default; ignored without OpenMP) [0] */
    ARACHNE_TRAIN_PCGRAD = 19,            /**< 1: combine per-composition gradients with PCGrad; 0: plain sum [1] */
    ARACHNE_TRAIN_SIL_TOP = 20,           /**< self-imitation imitates only kept plans with at least this share of
                                               their composition's best throughput, [0, 1] [0.9] */
    ARACHNE_TRAIN_GREEDY_ROLLOUTS = 21,   /**< rollouts per group (the last ones) that take the policy's most likely
                                               choice at every decision, without exploration rules, integer
                                               0..G-1 [0] */
    ARACHNE_TRAIN_SIZE_CURRICULUM = 22,   /**< curriculum over cluster size, in updates, integer >= 0: a composition of
                                               N > 1,024 GPUs first takes part in update
                                               ceil(C x log2(N / 1024) / 4) (16,384 GPUs at update C); 0: every
                                               composition from the first update [0] */
    ARACHNE_TRAIN_REFINE_INTERVAL = 23,   /**< updates between refinement rounds, integer >= 0 (0: off) [0]: every
                                               INTERVAL updates each composition's best plan is improved with
                                               arachne_plan_refine and, when faster, replayed through the policy's
                                               decisions into the self-imitation buffers (expert iteration;
                                               docs/training.md, "Refined plans") */
    ARACHNE_TRAIN_REFINE_EVALUATIONS = 24, /**< fill budget of each of those refinements, integer 1..1e6
                                               [ARACHNE_REFINE_EVALUATIONS] */
    ARACHNE_TRAIN_ENTROPY_END_SCALE = 25, /**< entropy bonus at update UPDATES and after, as a multiple of ENTROPY,
                                               [0, 1] [1: a constant bonus]; linear from update
                                               ENTROPY_DECAY_START (docs/training.md, "Entropy schedule") */
    ARACHNE_TRAIN_ENTROPY_DECAY_START = 26, /**< update at which the bonus starts to fall towards
                                               ENTROPY_END_SCALE x ENTROPY, integer >= 0 [0] */
    ARACHNE_TRAIN_ROLLOUT_INTERVAL = 27,  /**< updates between rollout-decoding rounds, integer >= 0 (0: off) [0]:
                                               every INTERVAL updates each composition is planned by rollout
                                               decoding of the current policy (arachne_plan_rollout's search) and
                                               its decisions become an imitation target (approximate policy
                                               iteration; docs/training.md, "Rollout targets") */
    ARACHNE_TRAIN_ROLLOUT_EVALUATIONS = 28, /**< fill budget of each of those rollouts, integer >= 0 (0: none) [2000] */
    ARACHNE_TRAIN_ROLLOUT_WEIGHT = 29,    /**< self-imitation weight of a composition's rollout target, as a
                                               multiple of SIL_WEIGHT, [0, 100] [1] */
    ARACHNE_TRAIN_SIL_EPOCHS = 30         /**< optimizer steps of each self-imitation step, integer 1..64 [1] */
} arachne_train_option;

/** Statistics for arachne_trainer_get.  Values are pinned.  "comp" fields
 *  are per composition (composition index 0..n-1); "global" fields ignore
 *  the index (pass -1). */
typedef enum arachne_train_stat {
    ARACHNE_TRAIN_BEST_ITER_PER_S = 0,    /**< comp: best iterations/s of any plan found so far (0: none yet) */
    ARACHNE_TRAIN_MEAN_REWARD = 1,        /**< comp: mean episode return (iter/s) of the last update's group */
    ARACHNE_TRAIN_EVALUATIONS = 2,        /**< comp: plans priced so far in training (templates placed + lookahead fills) */
    ARACHNE_TRAIN_REF_ITER_PER_S = 3,     /**< comp: reference throughput (iter/s at 40 % MFU on every GPU) used to normalise */
    ARACHNE_TRAIN_UPDATES_DONE = 4,       /**< global: updates completed (survives checkpoints) */
    ARACHNE_TRAIN_MEAN_NORM_REWARD = 5,   /**< global: last update's mean over compositions of mean return / reference */
    ARACHNE_TRAIN_MEAN_NORM_BEST = 6,     /**< global: mean over compositions of best iter/s / reference */
    ARACHNE_TRAIN_ENTROPY_MEAN = 7,       /**< global: mean entropy (nats) per decision in the last update */
    ARACHNE_TRAIN_GRAD_NORM = 8,          /**< global: gradient norm before clipping of the last optimizer step */
    ARACHNE_TRAIN_COMPOSITIONS = 9,       /**< global: number of compositions */
    ARACHNE_TRAIN_FORCE_DEPTH_P = 10,     /**< global: forced-depth probability the next update will use */
    ARACHNE_TRAIN_REFINED_PLANS = 11,     /**< global: refined plans that became a composition's best (REFINE_INTERVAL),
                                               counted since the trainer was created (not kept in checkpoints) */
    ARACHNE_TRAIN_REFINE_MISSES = 12,     /**< global: refined plans faster than the best that the policy's masks
                                               could not replay (not imitated); counted like REFINED_PLANS */
    ARACHNE_TRAIN_ENTROPY_COEF = 13       /**< global: entropy bonus coefficient the next update will use
                                               (ENTROPY scaled by the schedule) */
} arachne_train_stat;

/** Creates a trainer for `policy`, which it trains in place and BORROWS: the
 *  policy must outlive the trainer and must not be used by other threads
 *  while arachne_trainer_run runs.  seed drives every random choice (rollout
 *  seeds, exploration, PCGrad order).  Options start at their defaults.
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL out or policy), ARACHNE_E_NO_MEMORY.
 *  The caller owns *out (arachne_trainer_destroy); *out is NULL on failure. */
ARACHNE_API int arachne_trainer_create(arachne_trainer **out, arachne_policy *policy, uint64_t seed);

/** Frees the trainer (not the policy or the cost models).  NULL is a no-op. */
ARACHNE_API void arachne_trainer_destroy(arachne_trainer *t);

/** Adds a composition: a cost model (BORROWED: it must outlive the trainer
 *  and stay unmodified) and a name (copied; used in messages and checkpoints;
 *  NULL gives "comp<i>").  Compositions are indexed 0, 1, ... in the order
 *  they are added.  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL trainer or cost
 *  model, more than 4096 compositions, after the first update),
 *  ARACHNE_E_INFEASIBLE (no plan fits this composition: nothing to learn;
 *  the message says why), ARACHNE_E_NO_MEMORY. */
ARACHNE_API int arachne_trainer_add_composition(arachne_trainer *t, const arachne_cost_model *cm, const char *name);

/** Sets one arachne_train_option.  ARACHNE_E_INVALID_ARGUMENT naming the
 *  option for an unknown key, a value out of range or a fractional value for
 *  an integer option; the trainer is unchanged on failure.  Not during run. */
ARACHNE_API int arachne_trainer_set(arachne_trainer *t, int option, double value);

/** Reads one arachne_train_option into *out.  ARACHNE_E_INVALID_ARGUMENT for
 *  NULL arguments or an unknown key.  Pure read. */
ARACHNE_API int arachne_trainer_get_option(const arachne_trainer *t, int option, double *out);

/** Progress callback, called after every update with the update index
 *  (1-based, counted across resumes), the index the run ends at, the mean
 *  over compositions of the group's mean return divided by the composition's
 *  reference throughput, and best_iter_per_s[0..ncompositions) (borrowed for
 *  the call).  Return 0 to go on, non-zero to stop the run. */
typedef int (*arachne_train_callback)(void *user, int update, int updates, double mean_reward,
                                      const double *best_iter_per_s, int ncompositions);

/** Runs `updates` more updates (>= 1) and trains the policy in place; cb
 *  (may be NULL) is called after each.  Needs at least one composition.
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL trainer, updates < 1, no
 *  composition), ARACHNE_E_CANCELLED (the callback returned non-zero; the
 *  updates completed so far are kept and the trainer stays usable),
 *  ARACHNE_E_NO_MEMORY, or a construction error.  Same trainer state, options
 *  and seed give the same policy bytes whatever the thread count. */
ARACHNE_API int arachne_trainer_run(arachne_trainer *t, int updates, arachne_train_callback cb, void *user);

/** Reads one arachne_train_stat of composition `composition` (per-composition
 *  fields) into *out.  ARACHNE_E_INVALID_ARGUMENT for NULL arguments, an
 *  unknown field or a composition out of range.  Pure read. */
ARACHNE_API int arachne_trainer_get(const arachne_trainer *t, int composition, int field, double *out);

/** Name of composition i (borrowed; valid while the trainer lives).
 *  ARACHNE_E_INVALID_ARGUMENT for NULL arguments or a bad index. */
ARACHNE_API int arachne_trainer_composition_name(const arachne_trainer *t, int composition, const char **out);

/** The best plan training has found for composition i, rebuilt and priced
 *  with its cost model.  The caller owns *out (arachne_plan_destroy).
 *  ARACHNE_E_NOT_FOUND when no plan was found yet; ARACHNE_E_INVALID_ARGUMENT
 *  for NULL arguments or a bad index.  Not during run. */
ARACHNE_API int arachne_trainer_best_plan(const arachne_trainer *t, int composition, arachne_plan **out);

/** Writes a checkpoint atomically (temporary file + rename): policy weights,
 *  Adam moments and step, options, trainer RNG, update counter, statistics,
 *  replay buffers and best plans, with a CRC-32 (docs/training.md,
 *  "Training checkpoint").  ARACHNE_E_IO (an existing file is untouched),
 *  ARACHNE_E_INVALID_ARGUMENT, ARACHNE_E_NO_MEMORY.  May be called from the
 *  progress callback (the state between two updates); not from other threads
 *  while arachne_trainer_run runs. */
ARACHNE_API int arachne_trainer_save_checkpoint(const arachne_trainer *t, const char *path);

/** Restores a checkpoint into a trainer built the same way (same policy
 *  sizes, the same compositions in the same order: names and cluster sizes
 *  are checked).  Training then continues bit-identically to a run that was
 *  never interrupted.  Errors: ARACHNE_E_IO, ARACHNE_E_CORRUPT (bad magic,
 *  truncated, checksum mismatch, contradictory sizes), ARACHNE_E_UNSUPPORTED
 *  (another checkpoint format version), ARACHNE_E_INVALID_ARGUMENT (another
 *  network shape or other compositions; the message says which).  On failure
 *  the trainer and policy are unchanged. */
ARACHNE_API int arachne_trainer_load_checkpoint(arachne_trainer *t, const char *path);


/* @@SECTION replan@@ */

/* Replanning when the cluster changes (docs/replan.md).  arachne_replan
 * plans the new cluster with the policy, prices the running plan on the new
 * cluster when all of its GPUs are still there, estimates what switching
 * costs (moving weights and optimizer state, plus a fixed restart), and
 * decides whether to keep the running plan or switch.
 *
 * Nodes of the old and the new cluster are matched by (GPU type, index of
 * the node among that type's nodes, in cluster order); GPU g of a matched
 * node is the same GPU when the new node still has more than g GPUs.  Nodes
 * that join are new nodes appended per type; a node that leaves takes its
 * GPUs with it.  The old cluster is the one recorded in the running plan
 * (the cluster it was made for or loaded against). */

/** Options of a replan (arachne_replan_options_set).  Numbers are pinned. */
typedef enum arachne_replan_option {
    ARACHNE_REPLAN_OPT_HORIZON_S = 0, /**< seconds the new plan is expected to run, in (0, 1e9] (default 1800) */
    ARACHNE_REPLAN_OPT_RESTART_S = 1, /**< fixed seconds of a switch besides moving state, in [0, 1e9] (default 20) */
    ARACHNE_REPLAN_OPT_SAMPLES = 2,   /**< plans the policy builds (best-of-K; 1 = greedy), integer 1..100000 (default 1) */
    ARACHNE_REPLAN_OPT_SEED = 3,      /**< seed of the sampled plans, integer 0..2^53 (default 0) */
    ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS = 4 /**< fills of arachne_plan_refine spent on the new plan before it is
                                                   compared, integer 0..1e8 (default 0: none; the CLI uses
                                                   ARACHNE_REFINE_EVALUATIONS as `arachne plan` does) */
} arachne_replan_option;

/** Keep or switch (ARACHNE_DECISION_ACTION).  Numbers are pinned. */
typedef enum arachne_replan_action {
    ARACHNE_REPLAN_KEEP = 0,   /**< keep running the old plan (on the new cluster) */
    ARACHNE_REPLAN_SWITCH = 1  /**< stop, move state, restart with the new plan */
} arachne_replan_action;

/** Why (ARACHNE_DECISION_REASON).  Numbers are pinned. */
typedef enum arachne_replan_reason {
    ARACHNE_REPLAN_REASON_NOT_FASTER = 0,     /**< keep: the new plan is not faster */
    ARACHNE_REPLAN_REASON_GAIN_TOO_SMALL = 1, /**< keep: faster, but the gain over the horizon does not pay the switch */
    ARACHNE_REPLAN_REASON_GAIN = 2,           /**< switch: the gain over the horizon pays the switch */
    ARACHNE_REPLAN_REASON_RUNNING_INVALID = 3 /**< switch: the running plan cannot run on the new cluster */
} arachne_replan_reason;

/** Values of a decision (arachne_replan_get).  Throughputs in samples/s,
 *  times in seconds, sizes in bytes.  Numbers are pinned. */
typedef enum arachne_decision_field {
    ARACHNE_DECISION_ACTION = 0,          /**< an arachne_replan_action */
    ARACHNE_DECISION_REASON = 1,          /**< an arachne_replan_reason */
    ARACHNE_DECISION_RUNNING_VALID = 2,   /**< 1: every GPU of the running plan is still there and it prices */
    ARACHNE_DECISION_OLD_SAMPLES_PER_S = 3, /**< T_old: the running plan priced on the new cluster (0 when invalid) */
    ARACHNE_DECISION_NEW_SAMPLES_PER_S = 4, /**< T_new: the new plan the policy built */
    ARACHNE_DECISION_SAMPLES_GAINED = 5,  /**< (T_new - T_old) x (H - C): extra samples after the switch */
    ARACHNE_DECISION_SAMPLES_LOST = 6,    /**< T_old x C: samples the running plan would train during the switch */
    ARACHNE_DECISION_NET_SAMPLES = 7,     /**< SAMPLES_GAINED - SAMPLES_LOST = T_new (H - C) - T_old H */
    ARACHNE_DECISION_COST_S = 8,          /**< C = MIGRATION_S + RESTART_S */
    ARACHNE_DECISION_MIGRATION_S = 9,     /**< the slowest new rank's transfer time */
    ARACHNE_DECISION_RESTART_S = 10,      /**< the fixed restart cost used */
    ARACHNE_DECISION_HORIZON_S = 11,      /**< H, the horizon used */
    ARACHNE_DECISION_BYTES_MOVED = 12,    /**< bytes of all migration entries */
    ARACHNE_DECISION_MIGRATIONS = 13,     /**< number of migration entries */
    ARACHNE_DECISION_SLOWEST_RANK = 14,   /**< new-plan rank with the longest transfer (-1: nothing moves) */
    ARACHNE_DECISION_IDLE_GPUS = 15,      /**< GPUs of the new cluster the chosen plan leaves idle */
    ARACHNE_DECISION_GPUS_LEFT = 16       /**< GPUs of the running plan that are gone from the new cluster */
} arachne_decision_field;

/** Fields of one migration entry (arachne_replan_migration_get).  Numbers
 *  are pinned.  Layers are numbered like stages' blocks, with -1 for the
 *  embedding and BLOCKS for the head; the range is [FIRST, END). */
typedef enum arachne_migration_field {
    ARACHNE_MIGRATION_SRC_RANK = 0,    /**< global rank in the running plan that sends (-1: no remaining GPU holds it; read from a checkpoint) */
    ARACHNE_MIGRATION_DST_RANK = 1,    /**< global rank in the new plan that receives */
    ARACHNE_MIGRATION_FIRST_LAYER = 2, /**< first layer of the range (-1 = embedding) */
    ARACHNE_MIGRATION_END_LAYER = 3,   /**< end of the range, exclusive (BLOCKS + 1 when the head is included) */
    ARACHNE_MIGRATION_BYTES = 4,       /**< bytes of weights and optimizer state sent */
    ARACHNE_MIGRATION_SECONDS = 5,     /**< BYTES / the link's bytes/s */
    ARACHNE_MIGRATION_SRC_NODE = 6,    /**< sender's node in the new cluster (-1 for a checkpoint) */
    ARACHNE_MIGRATION_DST_NODE = 7,    /**< receiver's node in the new cluster */
    ARACHNE_MIGRATION_LINK = 8         /**< 0: inside a node, 1: across nodes, 2: from a checkpoint */
} arachne_migration_field;

/** Replan options (opaque). */
typedef struct arachne_replan_options arachne_replan_options;
/** The outcome of a replan: keep or switch, why, and the migration. */
typedef struct arachne_replan_decision arachne_replan_decision;

/** Creates options holding the defaults.  The caller owns *out
 *  (arachne_replan_options_destroy).  ARACHNE_E_INVALID_ARGUMENT (NULL),
 *  ARACHNE_E_NO_MEMORY. */
ARACHNE_API int arachne_replan_options_create(arachne_replan_options **out);

/** Frees options.  NULL is a no-op. */
ARACHNE_API void arachne_replan_options_destroy(arachne_replan_options *opts);

/** Sets one option (arachne_replan_option; seconds for times).
 *  ARACHNE_E_INVALID_ARGUMENT naming the option for an unknown key or a
 *  value out of range (options unchanged). */
ARACHNE_API int arachne_replan_options_set(arachne_replan_options *opts, int key, double value);

/** Reads one option into *out.  ARACHNE_E_INVALID_ARGUMENT for NULL or an
 *  unknown key.  Pure read. */
ARACHNE_API int arachne_replan_options_get(const arachne_replan_options *opts, int key, double *out);

/** Replans the running plan for the cluster of cm_new (same model and
 *  training setup; cm_new's setup prices both plans, except that with
 *  ARACHNE_OPT_RECOMPUTE_SEARCH on a running plan that recomputes fully is
 *  priced so).
 *  Builds a new plan with arachne_plan_build_refined(policy, cm_new, SAMPLES,
 *  SEED, REFINE_EVALUATIONS, no time cap, so the result is deterministic;
 *  best-of-SAMPLES alone when REFINE_EVALUATIONS is 0; in the mode it chooses
 *  with ARACHNE_OPT_RECOMPUTE_SEARCH), prices the running plan on the
 *  new cluster (node matching above) when all its GPUs remain, computes the
 *  migration to the new plan (docs/replan.md)
 *  and decides: SWITCH when the running plan cannot run, or when
 *      (T_new - T_old) x (H - C) > T_old x C
 *  (T in samples/s, H the horizon, C = slowest rank's transfer + restart
 *  cost, seconds); otherwise KEEP.  Ties keep.
 *  *new_plan (may be NULL when not wanted) receives the plan to run from now
 *  on: the running plan moved onto the new cluster's node numbering and
 *  repriced (KEEP), or the new plan (SWITCH); release with
 *  arachne_plan_destroy.  *decision (may be NULL when not wanted; not both
 *  NULL) receives the decision, whose migration always describes the switch
 *  to the new plan (what a KEEP avoided); release with
 *  arachne_replan_decision_destroy.  opts NULL means the defaults.
 *  Errors: ARACHNE_E_INVALID_ARGUMENT (NULL arguments; a running plan for
 *  another model; a running plan without its cluster), ARACHNE_E_PARSE (the
 *  running plan's recorded cluster cannot be read), ARACHNE_E_INVALID_PLAN
 *  (a running rank names a GPU its recorded cluster lacks), ARACHNE_E_INFEASIBLE (no
 *  plan fits the new cluster and the running one cannot be kept),
 *  ARACHNE_E_NO_MEMORY.  Outputs are NULL on failure.
 *  Threads: reads policy, cm_new and running only; they may be shared. */
ARACHNE_API int arachne_replan(arachne_plan **new_plan, arachne_replan_decision **decision,
                               const arachne_policy *policy, const arachne_cost_model *cm_new,
                               const arachne_plan *running, const arachne_replan_options *opts);

/** Frees a decision.  NULL is a no-op. */
ARACHNE_API void arachne_replan_decision_destroy(arachne_replan_decision *d);

/** One decision value (arachne_decision_field) as a double; counts and
 *  enums are exact.  ARACHNE_E_INVALID_ARGUMENT for NULL or an unknown
 *  field.  Pure read. */
ARACHNE_API int arachne_replan_get(const arachne_replan_decision *d, int field, double *out);

/** A one-line English explanation ("keep: the new plan (5.91 samples/s) is
 *  not faster than the running one (5.99 samples/s)").  Borrowed, valid
 *  until d is destroyed.  Pure read. */
ARACHNE_API int arachne_replan_explain(const arachne_replan_decision *d, const char **out);

/** GPUs of `type` (name or alias; NULL: all types) in the new cluster that
 *  the chosen plan leaves idle (stragglers it does not use).
 *  ARACHNE_E_NOT_FOUND when the new cluster has no such type.  Pure read. */
ARACHNE_API int arachne_replan_idle_gpus(const arachne_replan_decision *d, const char *type, int *out);

/** Field `field` (arachne_migration_field) of migration entry i
 *  (0 <= i < ARACHNE_DECISION_MIGRATIONS).  Entries are ordered by
 *  receiving rank, then sending rank (-1 first), then layer.
 *  ARACHNE_E_INVALID_ARGUMENT for an index out of range or an unknown
 *  field.  Pure read. */
ARACHNE_API int arachne_replan_migration_get(const arachne_replan_decision *d, int i, int field, double *out);

/** The decision as JSON (format "arachne-replan", version 1;
 *  docs/replan.md), with every migration entry.  Borrowed, NUL-terminated,
 *  valid until d is destroyed; built when the decision is made, so this is
 *  a pure read. */
ARACHNE_API int arachne_replan_to_json(const arachne_replan_decision *d, const char **out);

#ifdef __cplusplus
}
#endif

#endif /* ARACHNE_H */
