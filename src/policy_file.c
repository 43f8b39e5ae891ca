/* policy_file.c -- encode / decode / save / load of the binary policy file.
 * Layout (all integers little-endian, independent of the host):
 *     0  magic "ARPOL\0\0\1"                       8 bytes
 *     8  format version (1)                         u32
 *    12  network sizes, ar_nn_config field order    10 x u32
 *    52  feature-schema version                     u32
 *    56  parameter count N                          u64
 *    64  parameters, IEEE-754 binary64              N x 8 bytes
 *  64+8N metadata length M                          u32
 *  68+8N metadata, one UTF-8 JSON value (no NUL)    M bytes
 *  68+8N+M CRC-32 (IEEE) of every byte before it    u32
 * See docs/formats.md, "Policy file". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "json.h"
#include "policy_file.h"

_Static_assert(sizeof(double) == 8, "the policy file stores IEEE-754 binary64 parameters");

static void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    put_u32(p, (uint32_t)v);
    put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

/* Returns the byte offset of the first invalid UTF-8 sequence, or len. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n, j;
        uint32_t cp;
        if (c == 0) return i;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07; }
        else return i;
        if (len - i <= n) return i;
        for (j = 1; j <= n; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += n + 1;
    }
    return len;
}

int ar_policy_check_meta(const unsigned char *m, size_t len, const char *what, int status)
{
    char src[200], msg[400];
    ar_json *j = NULL;
    size_t bad;
    int st;
    if (len == 0) return ARACHNE_OK;
    bad = utf8_valid_prefix(m, len);
    if (bad != len) return ar_error(status, "%s metadata: byte %zu: invalid UTF-8 or NUL", what, bad);
    snprintf(src, sizeof src, "%s metadata", what);
    st = ar_json_parse(&j, (const char *)m, len, src);
    ar_json_free(j);
    if (st == ARACHNE_E_NO_MEMORY) return st;
    if (st) {
        snprintf(msg, sizeof msg, "%s", arachne_last_error());
        return ar_error(status, "%s (metadata must be JSON)", msg);
    }
    return ARACHNE_OK;
}

int ar_policy_encode(ar_buf *out, const ar_nn *n, uint32_t schema_version, const char *meta_json)
{
    const ar_nn_config *cfg;
    const double *p;
    size_t np, mlen = meta_json ? strlen(meta_json) : 0, i, start;
    int fields[AR_NN_CONFIG_FIELDS], st;
    unsigned char hdr[AR_POLICY_HEADER_BYTES], b8[8];
    if (!out || !n) return AR_NULL_ARG("policy encode", out, n);
    cfg = ar_nn_get_config(n);
    p = ar_nn_params_const(n);
    np = ar_nn_param_count(n);
    if (mlen > AR_POLICY_META_MAX)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "policy encode: metadata of %zu bytes exceeds %zu", mlen,
                        AR_POLICY_META_MAX);
    st = ar_policy_check_meta((const unsigned char *)meta_json, mlen, "policy encode:", ARACHNE_E_INVALID_ARGUMENT);
    if (st) return st;
    for (i = 0; i < np; i++)
        if (!isfinite(p[i]))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "policy encode: parameter %zu is not finite", i);
    memcpy(hdr, AR_POLICY_MAGIC, 8);
    put_u32(hdr + 8, AR_POLICY_FORMAT_VERSION);
    ar_nn_config_to_array(cfg, fields);
    for (i = 0; i < AR_NN_CONFIG_FIELDS; i++) put_u32(hdr + 12 + 4 * i, (uint32_t)fields[i]);
    put_u32(hdr + 52, schema_version);
    put_u64(hdr + 56, (uint64_t)np);
    start = out->len;
    ar_buf_put(out, (const char *)hdr, sizeof hdr);
    for (i = 0; i < np; i++) {
        uint64_t bits;
        memcpy(&bits, &p[i], 8);
        put_u64(b8, bits);
        ar_buf_put(out, (const char *)b8, 8);
    }
    put_u32(b8, (uint32_t)mlen);
    ar_buf_put(out, (const char *)b8, 4);
    if (mlen) ar_buf_put(out, meta_json, mlen);
    if (ar_buf_status(out)) return ARACHNE_E_NO_MEMORY;
    put_u32(b8, ar_crc32(out->data + start, out->len - start));
    ar_buf_put(out, (const char *)b8, 4);
    return ar_buf_status(out);
}

int ar_policy_decode(ar_nn **out, const void *data, size_t len, const char *name, uint32_t expect_schema,
                     uint32_t *schema_out, char **meta_out)
{
    const unsigned char *d = data;
    ar_nn_config cfg;
    ar_nn *n = NULL;
    int fields[AR_NN_CONFIG_FIELDS], i, st;
    uint32_t version, schema, stored, computed, mlen;
    uint64_t np64;
    size_t np, rest, k;
    char msg[256];
    char *meta = NULL;
    double *p;
    if (out) *out = NULL;
    if (meta_out) *meta_out = NULL;
    if (!name) name = "<policy>";
    if (!out || (!data && len)) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: policy decode: NULL argument", name);
    if (len == 0 || memcmp(d, AR_POLICY_MAGIC, len < 8 ? len : 8) != 0)
        return ar_error(ARACHNE_E_CORRUPT, "%s: not a policy file (bad magic)", name);
    if (len < 12)
        return ar_error(ARACHNE_E_CORRUPT, "%s: truncated policy file (%zu bytes, header needs %u)", name, len,
                        AR_POLICY_HEADER_BYTES);
    version = get_u32(d + 8);
    if (version != AR_POLICY_FORMAT_VERSION)
        return ar_error(ARACHNE_E_UNSUPPORTED, "%s: policy file format version %u is not supported (this build reads %u)",
                        name, version, AR_POLICY_FORMAT_VERSION);
    if (len < AR_POLICY_HEADER_BYTES + 8)
        return ar_error(ARACHNE_E_CORRUPT, "%s: truncated policy file (%zu bytes, at least %u needed)", name, len,
                        AR_POLICY_HEADER_BYTES + 8);
    np64 = get_u64(d + 56);
    if (np64 > (uint64_t)((len - AR_POLICY_HEADER_BYTES - 8) / 8))
        return ar_error(ARACHNE_E_CORRUPT, "%s: truncated policy file (%zu bytes cannot hold the %llu parameters declared)",
                        name, len, (unsigned long long)np64);
    np = (size_t)np64;
    mlen = get_u32(d + AR_POLICY_HEADER_BYTES + 8 * np);
    rest = len - AR_POLICY_HEADER_BYTES - 8 * np - 8; /* bytes left for the metadata */
    if (mlen > rest)
        return ar_error(ARACHNE_E_CORRUPT, "%s: truncated policy file (%zu bytes; %u metadata bytes declared, %zu present)",
                        name, len, (unsigned)mlen, rest);
    if (mlen < rest)
        return ar_error(ARACHNE_E_CORRUPT, "%s: policy file has %zu unexpected trailing bytes", name, rest - mlen);
    stored = get_u32(d + len - 4);
    computed = ar_crc32(d, len - 4);
    if (stored != computed)
        return ar_error(ARACHNE_E_CORRUPT, "%s: checksum mismatch (stored 0x%08x, computed 0x%08x)", name,
                        (unsigned)stored, (unsigned)computed);
    for (i = 0; i < AR_NN_CONFIG_FIELDS; i++) {
        uint32_t v = get_u32(d + 12 + 4 * i);
        fields[i] = v > (uint32_t)AR_NN_MAX_DIM ? -1 : (int)v;
    }
    ar_nn_config_from_array(&cfg, fields);
    if (ar_nn_config_check(&cfg) != ARACHNE_OK) {
        snprintf(msg, sizeof msg, "%s", arachne_last_error());
        return ar_error(ARACHNE_E_CORRUPT, "%s: %s", name, msg);
    }
    if (ar_nn_config_param_count(&cfg) != np)
        return ar_error(ARACHNE_E_CORRUPT, "%s: %zu parameters stored, the network sizes need %zu", name, np,
                        ar_nn_config_param_count(&cfg));
    schema = get_u32(d + 52);
    if (expect_schema != AR_POLICY_SCHEMA_ANY && schema != expect_schema)
        return ar_error(ARACHNE_E_UNSUPPORTED,
                        "%s: policy was trained for feature schema %u, this build uses schema %u", name,
                        (unsigned)schema, (unsigned)expect_schema);
    st = ar_policy_check_meta(d + AR_POLICY_HEADER_BYTES + 8 * np + 4, mlen, name, ARACHNE_E_CORRUPT);
    if (st) return st;
    st = ar_nn_create(&n, &cfg, 0);
    if (st) return st;
    p = ar_nn_params(n);
    for (k = 0; k < np; k++) {
        uint64_t bits = get_u64(d + AR_POLICY_HEADER_BYTES + 8 * k);
        memcpy(&p[k], &bits, 8);
        if (!isfinite(p[k])) {
            ar_nn_destroy(n);
            return ar_error(ARACHNE_E_CORRUPT, "%s: parameter %zu is not finite", name, k);
        }
    }
    if (meta_out) {
        meta = ar_malloc((size_t)mlen + 1);
        if (!meta) {
            ar_nn_destroy(n);
            return ARACHNE_E_NO_MEMORY;
        }
        memcpy(meta, d + AR_POLICY_HEADER_BYTES + 8 * np + 4, mlen);
        meta[mlen] = '\0';
        *meta_out = meta;
    }
    if (schema_out) *schema_out = schema;
    *out = n;
    return ARACHNE_OK;
}

int ar_policy_save(const char *path, const ar_nn *n, uint32_t schema_version, const char *meta_json)
{
    ar_buf b;
    int st;
    if (!path) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "policy save: NULL path");
    ar_buf_init(&b);
    st = ar_policy_encode(&b, n, schema_version, meta_json);
    if (st == ARACHNE_OK) st = ar_check_saved_size("policy", path, b.len);
    if (st == ARACHNE_OK) st = ar_write_file_atomic(path, b.data, b.len);
    ar_buf_free(&b);
    return st;
}

int ar_policy_load(ar_nn **out, const char *path, uint32_t expect_schema, uint32_t *schema_out, char **meta_out)
{
    char *data = NULL;
    size_t len = 0;
    int st;
    if (out) *out = NULL;
    if (meta_out) *meta_out = NULL;
    if (!out || !path) return AR_NULL_ARG("policy load", out, path);
    st = ar_read_file(path, &data, &len);
    if (st) return st;
    st = ar_policy_decode(out, data, len, path, expect_schema, schema_out, meta_out);
    free(data);
    return st;
}
