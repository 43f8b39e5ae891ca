/* test_policy_file.c -- CRC-32 and the binary policy file: round trip,
 * byte layout, corruption, truncation, versions, atomic save. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32.h"
#include "harness.h"
#include "nn.h"
#include "policy_file.h"
#include "util.h"

static void tiny_config(ar_nn_config *c)
{
    c->state_dim = 6;
    c->comp_dim = 3;
    c->cand_dim = 2;
    c->hidden = 5;
    c->layers = 2;
    c->film_hidden = 3;
    c->head_hidden = 4;
    c->max_depth_cands = 5;
    c->max_type_cands = 3;
    c->n_tp = 4;
}

/* A network whose every parameter is a distinct, non-trivial double. */
static ar_nn *random_net(const ar_nn_config *c, uint64_t seed)
{
    ar_nn *n = NULL;
    ar_rng r;
    size_t i;
    if (ar_nn_create(&n, c, seed) != ARACHNE_OK) return NULL;
    ar_rng_seed(&r, seed + 1);
    for (i = 0; i < ar_nn_param_count(n); i++) ar_nn_params(n)[i] = ar_rng_normal(&r) * pow(10.0, ar_rng_int(&r, 9) - 4);
    return n;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void set_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* Recomputes the trailing CRC after a deliberate edit. */
static void reseal(unsigned char *d, size_t len) { set_le32(d + len - 4, ar_crc32(d, len - 4)); }

TEST(crc32_known_values)
{
    const char *fox = "The quick brown fox jumps over the lazy dog";
    uint32_t c;
    ASSERT_EQ(ar_crc32("123456789", 9), 0xCBF43926u);
    ASSERT_EQ(ar_crc32("", 0), 0u);
    ASSERT_EQ(ar_crc32(fox, strlen(fox)), 0x414FA339u);
    c = ar_crc32_update(0, fox, 10);
    c = ar_crc32_update(c, fox + 10, strlen(fox) - 10);
    ASSERT_EQ(c, 0x414FA339u);
}

TEST(round_trip_is_bit_identical_and_deterministic)
{
    ar_nn_config c;
    ar_nn *n, *back = NULL;
    ar_buf a, b;
    char path[512], *meta = NULL;
    const char *dir = th_tmpdir();
    const char *json = "{\"trained_steps\":1200,\"note\":\"gr\xc3\xbc\xc3\x9f \xe2\x9c\x93\"}";
    uint32_t schema = 0;
    double *p;
    ar_nn_config_default(&c);
    n = random_net(&c, 3);
    ASSERT(n != NULL && dir != NULL);
    p = ar_nn_params(n);
    p[0] = -0.0;
    p[1] = 4.9e-324;          /* subnormal */
    p[2] = 1.7976931348623157e308;
    p[3] = 0.1;
    snprintf(path, sizeof path, "%s/policy.bin", dir);
    ASSERT_OK(ar_policy_save(path, n, 42, json));
    ASSERT_OK(ar_policy_load(&back, path, 42, &schema, &meta));
    ASSERT_EQ(schema, 42);
    ASSERT_STR(meta, json);
    ASSERT(memcmp(ar_nn_get_config(back), &c, sizeof c) == 0);
    ASSERT_EQ(ar_nn_param_count(back), ar_nn_param_count(n));
    ASSERT(memcmp(ar_nn_params(back), p, ar_nn_param_count(n) * sizeof(double)) == 0);
    ASSERT(signbit(ar_nn_params(back)[0]));
    /* same network, same arguments => same bytes; re-encoding the loaded copy too */
    ar_buf_init(&a);
    ar_buf_init(&b);
    ASSERT_OK(ar_policy_encode(&a, n, 42, json));
    ASSERT_OK(ar_policy_encode(&b, back, 42, json));
    ASSERT_EQ(a.len, b.len);
    ASSERT(memcmp(a.data, b.data, a.len) == 0);
    ASSERT_EQ(a.len, 72 + 8 * ar_nn_param_count(n) + strlen(json));
    ar_buf_free(&a);
    ar_buf_free(&b);
    free(meta);
    ar_nn_destroy(back);
    /* no metadata, any schema accepted on request */
    ASSERT_OK(ar_policy_save(path, n, 7, NULL));
    ASSERT_OK(ar_policy_load(&back, path, AR_POLICY_SCHEMA_ANY, &schema, &meta));
    ASSERT_EQ(schema, 7);
    ASSERT_STR(meta, "");
    free(meta);
    ar_nn_destroy(back);
    ar_nn_destroy(n);
}

TEST(byte_layout_is_little_endian)
{
    ar_nn_config c;
    ar_nn *n;
    ar_buf b;
    const unsigned char *d;
    size_t np;
    double p0;
    uint64_t bits;
    int i;
    tiny_config(&c);
    n = random_net(&c, 5);
    ASSERT(n != NULL);
    np = ar_nn_param_count(n);
    ar_buf_init(&b);
    ASSERT_OK(ar_policy_encode(&b, n, 0x01020304u, "{}"));
    d = (const unsigned char *)b.data;
    ASSERT(memcmp(d, "ARPOL\0\0\1", 8) == 0);
    ASSERT(d[8] == 1 && d[9] == 0 && d[10] == 0 && d[11] == 0);
    ASSERT_EQ(le32(d + 12), 6);   /* state_dim */
    ASSERT_EQ(le32(d + 16), 3);   /* comp_dim */
    ASSERT_EQ(le32(d + 28), 2);   /* layers */
    ASSERT_EQ(le32(d + 48), 4);   /* n_tp */
    ASSERT(d[52] == 4 && d[53] == 3 && d[54] == 2 && d[55] == 1);
    ASSERT_EQ(le32(d + 56), np);
    ASSERT_EQ(le32(d + 60), 0);
    p0 = ar_nn_params(n)[0];
    memcpy(&bits, &p0, 8);
    for (i = 0; i < 8; i++) ASSERT_EQ(d[64 + i], (bits >> (8 * i)) & 0xFF);
    ASSERT_EQ(le32(d + 64 + 8 * np), 2);
    ASSERT(d[68 + 8 * np] == '{' && d[69 + 8 * np] == '}');
    ASSERT_EQ(le32(d + b.len - 4), ar_crc32(d, b.len - 4));
    ar_buf_free(&b);
    ar_nn_destroy(n);
}

TEST(every_single_byte_change_is_rejected)
{
    ar_nn_config c;
    ar_nn *n, *back = NULL;
    ar_buf b;
    unsigned char *d;
    size_t i, np;
    int x;
    static const unsigned char flips[] = { 0xFF, 0x01, 0x80 };
    tiny_config(&c);
    n = random_net(&c, 9);
    ASSERT(n != NULL);
    np = ar_nn_param_count(n);
    ar_buf_init(&b);
    ASSERT_OK(ar_policy_encode(&b, n, 3, "{\"k\":1}"));
    d = (unsigned char *)b.data;
    ASSERT_OK(ar_policy_decode(&back, d, b.len, "p.bin", 3, NULL, NULL));
    ar_nn_destroy(back);
    for (i = 0; i < b.len; i++) {
        for (x = 0; x < 3; x++) {
            int st;
            d[i] ^= flips[x];
            arachne_clear_error();
            st = ar_policy_decode(&back, d, b.len, "p.bin", 3, NULL, NULL);
            d[i] ^= flips[x];
            ASSERT_MSG(back == NULL, "byte %zu ^ 0x%02x: got a network", i, flips[x]);
            ASSERT_MSG(arachne_last_error()[0] != '\0', "byte %zu: no message", i);
            if (i < 8) {
                ASSERT_EQ(st, ARACHNE_E_CORRUPT);
                ASSERT_CONTAINS(arachne_last_error(), "p.bin: not a policy file (bad magic)");
            } else if (i < 12) {
                ASSERT_EQ(st, ARACHNE_E_UNSUPPORTED);
                ASSERT_CONTAINS(arachne_last_error(), "format version");
            } else {
                ASSERT_MSG(st == ARACHNE_E_CORRUPT, "byte %zu ^ 0x%02x: status %d (%s)", i, flips[x], st,
                           arachne_last_error());
            }
            if (i >= 64 && i < 64 + 8 * np) ASSERT_CONTAINS(arachne_last_error(), "checksum mismatch");
        }
    }
    ar_buf_free(&b);
    ar_nn_destroy(n);
}

TEST(truncated_or_extended_file_is_rejected)
{
    ar_nn_config c;
    ar_nn *n, *back = NULL;
    ar_buf b;
    const char *dir = th_tmpdir();
    char path[512];
    size_t len;
    tiny_config(&c);
    n = random_net(&c, 10);
    ASSERT(n != NULL && dir != NULL);
    ar_buf_init(&b);
    ASSERT_OK(ar_policy_encode(&b, n, 1, "{\"a\":\"b\"}"));
    for (len = 0; len < b.len; len++) {
        ASSERT_STATUS(ar_policy_decode(&back, b.data, len, "t.bin", 1, NULL, NULL), ARACHNE_E_CORRUPT);
        ASSERT(back == NULL);
        if (len >= 12) ASSERT_CONTAINS(arachne_last_error(), "t.bin: ");
    }
    ASSERT_CONTAINS(arachne_last_error(), "truncated"); /* one CRC byte missing */
    ar_buf_put(&b, "\0", 1);
    ASSERT_STATUS(ar_policy_decode(&back, b.data, b.len, "t.bin", 1, NULL, NULL), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "trailing");
    /* truncated on disk */
    snprintf(path, sizeof path, "%s/cut.bin", dir);
    ASSERT_OK(ar_write_file_atomic(path, b.data, b.len - 20));
    ASSERT_STATUS(ar_policy_load(&back, path, 1, NULL, NULL), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), path);
    ASSERT_OK(ar_write_file_atomic(path, "hello, world\n", 13));
    ASSERT_STATUS(ar_policy_load(&back, path, 1, NULL, NULL), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "not a policy file (bad magic)");
    snprintf(path, sizeof path, "%s/missing.bin", dir);
    ASSERT_STATUS(ar_policy_load(&back, path, 1, NULL, NULL), ARACHNE_E_IO);
    ar_buf_free(&b);
    ar_nn_destroy(n);
}

TEST(versions_and_sealed_inconsistencies)
{
    ar_nn_config c;
    ar_nn *n, *back = NULL;
    ar_buf b;
    unsigned char *d, *copy;
    size_t np;
    char *meta = (char *)1;
    tiny_config(&c);
    n = random_net(&c, 11);
    ASSERT(n != NULL);
    np = ar_nn_param_count(n);
    ar_buf_init(&b);
    ASSERT_OK(ar_policy_encode(&b, n, 5, "{}"));
    d = (unsigned char *)b.data;
    copy = malloc(b.len);
    ASSERT(copy != NULL);

    /* schema mismatch: unsupported, outputs cleared */
    ASSERT_STATUS(ar_policy_decode(&back, d, b.len, "s.bin", 6, NULL, &meta), ARACHNE_E_UNSUPPORTED);
    ASSERT_CONTAINS(arachne_last_error(), "schema 5");
    ASSERT(back == NULL && meta == NULL);

    /* a future format version with a valid checksum */
    memcpy(copy, d, b.len);
    set_le32(copy + 8, 2);
    reseal(copy, b.len);
    ASSERT_STATUS(ar_policy_decode(&back, copy, b.len, "v.bin", 5, NULL, NULL), ARACHNE_E_UNSUPPORTED);
    ASSERT_CONTAINS(arachne_last_error(), "version 2");

    /* sizes that do not match the stored parameter count */
    memcpy(copy, d, b.len);
    set_le32(copy + 12 + 4 * 3, 6); /* hidden 5 -> 6 */
    reseal(copy, b.len);
    ASSERT_STATUS(ar_policy_decode(&back, copy, b.len, "h.bin", 5, NULL, NULL), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "parameters stored");

    /* nonsense sizes */
    memcpy(copy, d, b.len);
    set_le32(copy + 12 + 4 * 4, 0); /* layers 0 */
    reseal(copy, b.len);
    ASSERT_STATUS(ar_policy_decode(&back, copy, b.len, "l.bin", 5, NULL, NULL), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "l.bin: network config: layers");

    /* a NaN parameter */
    memcpy(copy, d, b.len);
    memset(copy + 64 + 8, 0xFF, 8);
    reseal(copy, b.len);
    ASSERT_STATUS(ar_policy_decode(&back, copy, b.len, "nan.bin", 5, NULL, NULL), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "parameter 1 is not finite");

    /* invalid UTF-8 in the metadata */
    memcpy(copy, d, b.len);
    copy[64 + 8 * np + 4] = 0xC0;
    reseal(copy, b.len);
    ASSERT_STATUS(ar_policy_decode(&back, copy, b.len, "u.bin", 5, NULL, NULL), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "u.bin metadata");
    ASSERT(back == NULL);

    /* metadata that is UTF-8 but not JSON */
    memcpy(copy, d, b.len);
    copy[64 + 8 * np + 4] = '[';
    reseal(copy, b.len);
    ASSERT_STATUS(ar_policy_decode(&back, copy, b.len, "j.bin", 5, NULL, NULL), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "must be JSON");

    free(copy);
    ar_buf_free(&b);
    ar_nn_destroy(n);
}

TEST(encode_refuses_bad_metadata_and_nonfinite_parameters)
{
    ar_nn_config c;
    ar_nn *n;
    ar_buf b;
    tiny_config(&c);
    n = random_net(&c, 12);
    ASSERT(n != NULL);
    ar_buf_init(&b);
    ASSERT_STATUS(ar_policy_encode(&b, n, 1, "{\"x\":\"\xff\"}"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_policy_encode(&b, n, 1, "\xed\xa0\x80"), ARACHNE_E_INVALID_ARGUMENT); /* surrogate */
    ASSERT_STATUS(ar_policy_encode(&b, n, 1, "\xe2\x82"), ARACHNE_E_INVALID_ARGUMENT);     /* cut short */
    ASSERT_STATUS(ar_policy_encode(&b, n, 1, "{\"a\":"), ARACHNE_E_INVALID_ARGUMENT);    /* not JSON */
    ASSERT_CONTAINS(arachne_last_error(), "metadata");
    ASSERT_EQ(b.len, 0);
    ASSERT_OK(ar_policy_encode(&b, n, 1, "\"\xf0\x9f\x98\x80\""));
    ASSERT_OK(ar_policy_encode(&b, n, 1, ""));
    ar_buf_free(&b);
    ar_buf_init(&b);
    ar_nn_params(n)[3] = INFINITY;
    ASSERT_STATUS(ar_policy_encode(&b, n, 1, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "parameter 3");
    ar_buf_free(&b);
    ar_nn_destroy(n);
}

static int read_all(const char *path, char **data, size_t *len) { return ar_read_file(path, data, len); }

TEST(failed_save_gives_io_error_and_keeps_existing_file)
{
    ar_nn_config c;
    ar_nn *a, *b2, *back = NULL;
    const char *dir = th_tmpdir();
    char sub[512], path[600], probe[700], *before = NULL, *after = NULL;
    size_t lb = 0, la = 0;
    FILE *f;
    tiny_config(&c);
    a = random_net(&c, 13);
    b2 = random_net(&c, 14);
    ASSERT(a && b2 && dir);
    snprintf(sub, sizeof sub, "%s/ro", dir);
    ASSERT(mkdir(sub, 0755) == 0);
    snprintf(path, sizeof path, "%s/policy.bin", sub);
    ASSERT_OK(ar_policy_save(path, a, 1, "{\"v\":\"a\"}"));
    ASSERT_OK(read_all(path, &before, &lb));

    /* 1. the temporary file cannot be written (works even as root): files
     * may not grow past 16 bytes (RLIMIT_FSIZE; SIGXFSZ ignored).  (The
     * temporary's name is unique per call, so it cannot be blocked.) */
    {
        struct rlimit old_lim, small;
        void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
        int st;
        ASSERT(getrlimit(RLIMIT_FSIZE, &old_lim) == 0);
        small = old_lim;
        small.rlim_cur = 16;
        ASSERT(setrlimit(RLIMIT_FSIZE, &small) == 0);
        arachne_clear_error();
        st = ar_policy_save(path, b2, 1, "{\"v\":\"b\"}");
        setrlimit(RLIMIT_FSIZE, &old_lim);
        signal(SIGXFSZ, old_handler);
        ASSERT_EQ(st, ARACHNE_E_IO);
        ASSERT_CONTAINS(arachne_last_error(), path);
    }
    ASSERT_OK(read_all(path, &after, &la));
    ASSERT(la == lb && memcmp(before, after, lb) == 0);
    free(after);
    after = NULL;

    /* 2. a directory that does not exist */
    snprintf(probe, sizeof probe, "%s/nope/policy.bin", dir);
    ASSERT_STATUS(ar_policy_save(probe, a, 1, NULL), ARACHNE_E_IO);

    /* 3. a read-only directory (not enforced for root: that part is skipped) */
    ASSERT(chmod(sub, 0555) == 0);
    snprintf(probe, sizeof probe, "%s/probe", sub);
    f = fopen(probe, "wb");
    if (f) {
        fclose(f);
        remove(probe);
    } else {
        ASSERT_STATUS(ar_policy_save(path, b2, 1, "{\"v\":\"b\"}"), ARACHNE_E_IO);
        ASSERT_OK(read_all(path, &after, &la));
        ASSERT(la == lb && memcmp(before, after, lb) == 0);
        free(after);
    }
    ASSERT(chmod(sub, 0755) == 0);
    ASSERT_OK(ar_policy_load(&back, path, 1, NULL, NULL));
    ASSERT(memcmp(ar_nn_params(back), ar_nn_params(a), ar_nn_param_count(a) * sizeof(double)) == 0);
    free(before);
    ar_nn_destroy(back);
    ar_nn_destroy(a);
    ar_nn_destroy(b2);
}

/* Issue 27 item 9: the `policy` fuzz target reached 68 edges where 339 had
 * been recorded.  Its valid seeds had gone stale when the network gained
 * parameters ("173 parameters stored, the sizes need 193"), so every
 * mutation stopped at the size check.  The committed seeds that should
 * decode must decode (regenerate with `make fuzz-seeds-policy`). */
TEST(fuzz_seeds_reach_past_the_size_checks)
{
    static const char *const valid[] = { "tiny-meta", "tiny-meta-fixcrc", "tiny-schema9" };
    size_t i;
    for (i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        char path[256], *data = NULL, *meta = NULL;
        size_t len = 0;
        ar_nn *n = NULL;
        uint32_t schema = 0;
        int st;
        snprintf(path, sizeof path, "tests/fuzz/corpus/policy/%s", valid[i]);
        ASSERT_OK(ar_read_file(path, &data, &len));
        ASSERT(len > 1);
        st = ar_policy_decode(&n, data + 1, len - 1, path, AR_POLICY_SCHEMA_ANY, &schema, &meta);
        ASSERT_MSG(st == ARACHNE_OK, "%s no longer decodes (run make fuzz-seeds-policy): %s", path,
                   arachne_last_error());
        ASSERT_EQ(schema, i == 2 ? 9 : 1);
        ar_nn_destroy(n);
        if (i == 2) /* its purpose: refused when schema 1 is expected (mode bit 2) */
            ASSERT_STATUS(ar_policy_decode(&n, data + 1, len - 1, path, 1, NULL, NULL), ARACHNE_E_UNSUPPORTED);
        free(meta);
        free(data);
    }
}

SUITE(policy_file, T(crc32_known_values), T(round_trip_is_bit_identical_and_deterministic),
      T(byte_layout_is_little_endian), T(every_single_byte_change_is_rejected),
      T(truncated_or_extended_file_is_rejected), T(versions_and_sealed_inconsistencies),
      T(encode_refuses_bad_metadata_and_nonfinite_parameters), T(failed_save_gives_io_error_and_keeps_existing_file),
      T(fuzz_seeds_reach_past_the_size_checks));
