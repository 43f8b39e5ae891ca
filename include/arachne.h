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
    ARACHNE_GPU_INTER_LATENCY_S = 6     /**< per-message latency across nodes, seconds */
} arachne_gpu_field;

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

/* @@SECTION model@@ */

/* @@SECTION profile@@ */

/* @@SECTION cost@@ */

/* @@SECTION plan@@ */

/* @@SECTION search@@ */

/* @@SECTION policy@@ */

/* @@SECTION trainer@@ */

/* @@SECTION replan@@ */

#ifdef __cplusplus
}
#endif

#endif /* ARACHNE_H */
