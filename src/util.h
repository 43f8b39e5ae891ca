/* util.h -- internal helpers shared by every module: error reporting,
 * checked allocation, small string helpers.  Not part of the ABI. */
#ifndef ARACHNE_UTIL_H
#define ARACHNE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include "arachne.h"

#if defined(__GNUC__)
#  define AR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define AR_PRINTF(f, a)
#endif

/* Bytes of the per-thread last-error message, NUL included (longer ones are cut). */
#define AR_ERRMSG_CAP 512

/* Sets the calling thread's last error message and returns status, so a
 * failing path reads `return ar_error(ARACHNE_E_PARSE, "...", ...);`. */
int ar_error(int status, const char *fmt, ...) AR_PRINTF(2, 3);

/* ARACHNE_E_INVALID_ARGUMENT with "fn: argument 'NAME' is NULL" naming the
 * first NULL one of the pointers listed, e.g.
 *   if (!m || !out) return AR_NULL_ARG("arachne_model_name", m, out);
 * names holds the macro's stringified list ("m, out"), ptrs the pointers. */
int ar_null_arg(const char *fn, const char *names, const void *const *ptrs, int n);
#define AR_NULL_ARG(fn, ...)                                                    \
    ar_null_arg((fn), #__VA_ARGS__, (const void *const[]){ __VA_ARGS__ },       \
                (int)(sizeof((const void *const[]){ __VA_ARGS__ }) / sizeof(const void *)))

/* Prefixes the current last-error message with "prefix: " (used to add the
 * file name when a string parser is called from a file loader). */
void ar_error_prefix(const char *prefix);

/* Allocation wrappers: on failure they set ARACHNE_E_NO_MEMORY's message and
 * return NULL.  Sizes are checked for overflow. */
void *ar_malloc(size_t n);
void *ar_calloc(size_t count, size_t size);
void *ar_realloc(void *p, size_t n);
char *ar_strdup(const char *s);

/* ASCII case-insensitive comparison (locale independent). */
int ar_strcasecmp(const char *a, const char *b);

/* Reads a whole file into a NUL-terminated buffer the caller frees.
 * Returns ARACHNE_OK or ARACHNE_E_IO / ARACHNE_E_NO_MEMORY with a message.
 * Input longer than AR_FILE_MAX_BYTES (e.g. /dev/zero) is refused with
 * ARACHNE_E_IO instead of being read until memory runs out. */
#define AR_FILE_MAX_BYTES ((size_t)256 << 20)
/* ARACHNE_OK when len bytes of `what` read back (at most AR_FILE_MAX_BYTES);
 * else ARACHNE_E_INVALID_ARGUMENT naming path and the sizes: a writer never
 * saves a file its own loader refuses. */
int ar_check_saved_size(const char *what, const char *path, size_t len);
int ar_read_file(const char *path, char **out, size_t *out_len);
/* Whether path opens for reading and is not a directory (without waiting
 * on a FIFO's writer). */
int ar_path_readable(const char *path);

/* Writes len bytes to path atomically: a temporary file in the same
 * directory, fsync-free flush, then rename.  On failure the old file is
 * untouched and the temporary removed.  ARACHNE_E_IO with a message. */
int ar_write_file_atomic(const char *path, const void *data, size_t len);

/* Growable byte buffer used by every writer (JSON, SVG, exports). */
typedef struct ar_buf {
    char *data;
    size_t len, cap;
    int failed; /* sticky: an allocation failed */
} ar_buf;
void ar_buf_init(ar_buf *b);
void ar_buf_free(ar_buf *b);
void ar_buf_put(ar_buf *b, const char *s, size_t n);
void ar_buf_puts(ar_buf *b, const char *s);
void ar_buf_printf(ar_buf *b, const char *fmt, ...) AR_PRINTF(2, 3);
/* Returns ARACHNE_OK, or ARACHNE_E_NO_MEMORY if any append failed. */
int ar_buf_status(const ar_buf *b);

/* Copies a borrowed string into a caller buffer with capacity; reports the
 * needed size (including the NUL) through *needed when not NULL.
 * ARACHNE_E_BUFFER_TOO_SMALL when cap is too small (buffer untouched; buf
 * NULL with cap 0 asks the size), ARACHNE_E_INVALID_ARGUMENT for buf NULL
 * with cap > 0. */
int ar_copy_out(char *buf, size_t cap, size_t *needed, const char *s, size_t len);

/* Deterministic RNG (xoshiro256**) seeded with splitmix64. */
typedef struct ar_rng { uint64_t s[4]; } ar_rng;
void ar_rng_seed(ar_rng *r, uint64_t seed);
uint64_t ar_rng_next(ar_rng *r);
double ar_rng_uniform(ar_rng *r);          /* [0, 1) */
int ar_rng_int(ar_rng *r, int n);          /* [0, n) ; n > 0 */
double ar_rng_normal(ar_rng *r);

/* Monotonic wall clock in seconds. */
double ar_now(void);

#define AR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define AR_MAX(a, b) ((a) > (b) ? (a) : (b))
#define AR_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* floor(log2(v)) for v >= 1 (0 for v < 2): the index of a power-of-two
 * choice (TP degrees, widths) */
static inline int ar_ilog2(int v)
{
    int k = 0;
    while ((1 << (k + 1)) <= v) k++;
    return k;
}

/* Greatest common divisor of a and b >= 0 (gcd(a, 0) = a). */
static inline long ar_gcd(long a, long b)
{
    while (b) { long t = a % b; a = b; b = t; }
    return a;
}

#endif
