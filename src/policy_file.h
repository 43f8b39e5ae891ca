/* policy_file.h -- the binary policy file: network sizes, feature-schema
 * version, parameters (IEEE-754 binary64, little-endian), an optional UTF-8
 * JSON metadata string, CRC-32.  Byte layout in docs/formats.md
 * ("Policy file").  Internal; the public policy API wraps it.
 * All functions are thread-safe (no shared state). */
#ifndef ARACHNE_POLICY_FILE_H
#define ARACHNE_POLICY_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "nn.h"
#include "util.h"

#define AR_POLICY_MAGIC "ARPOL\0\0\1"   /* 8 bytes */
#define AR_POLICY_FORMAT_VERSION 1u
#define AR_POLICY_SCHEMA_ANY UINT32_MAX  /* load: accept any feature-schema version */
#define AR_POLICY_HEADER_BYTES 64u       /* magic .. parameter count */
#define AR_POLICY_META_MAX ((size_t)1 << 24) /* metadata bytes */

/* Appends the file image of n's parameters to out.  meta_json (NULL = none)
 * is stored verbatim; it must be one JSON value (checked with the JSON
 * reader: UTF-8, no NUL) of at most AR_POLICY_META_MAX bytes; "" = none.
 * ARACHNE_E_INVALID_ARGUMENT (bad metadata, a non-finite parameter),
 * ARACHNE_E_NO_MEMORY.  Same network + arguments => same bytes. */
int ar_policy_encode(ar_buf *out, const ar_nn *n, uint32_t schema_version, const char *meta_json);

/* Checks metadata bytes: UTF-8 without NUL, and one JSON value (or none:
 * len 0).  Returns ARACHNE_OK, or `status` with a message naming `what` and
 * the position. */
int ar_policy_check_meta(const unsigned char *m, size_t len, const char *what, int status);

/* Builds a network from a file image.  name labels messages ("policy.bin").
 * expect_schema: the caller's feature-schema version, or AR_POLICY_SCHEMA_ANY.
 * schema_out (may be NULL) receives the stored schema version; meta_out (may
 * be NULL) a malloc'd NUL-terminated copy of the metadata ("" when absent).
 * The network's gradients and Adam state are zero.
 * Errors (*out NULL, *meta_out NULL):
 *   ARACHNE_E_CORRUPT      "<name>: not a policy file (bad magic)"; truncated
 *                          or over-long file; checksum mismatch; sizes and
 *                          count that contradict each other; metadata that
 *                          is not JSON; a non-finite parameter;
 *   ARACHNE_E_UNSUPPORTED  format version other than AR_POLICY_FORMAT_VERSION;
 *                          feature-schema version other than expect_schema;
 *   ARACHNE_E_NO_MEMORY. */
int ar_policy_decode(ar_nn **out, const void *data, size_t len, const char *name, uint32_t expect_schema,
                     uint32_t *schema_out, char **meta_out);

/* Encodes and writes atomically (ar_write_file_atomic): on failure
 * (ARACHNE_E_IO) an existing file at path is left untouched. */
int ar_policy_save(const char *path, const ar_nn *n, uint32_t schema_version, const char *meta_json);

/* Reads path and decodes it; ARACHNE_E_IO when it cannot be read, else as
 * ar_policy_decode with name = path. */
int ar_policy_load(ar_nn **out, const char *path, uint32_t expect_schema, uint32_t *schema_out, char **meta_out);

#endif
