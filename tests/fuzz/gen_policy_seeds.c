/* gen_policy_seeds.c -- writes the seeds of the `policy` fuzz target
 * (tests/fuzz/corpus/policy/) with the current encoder.  The valid seeds
 * must decode, or every mutation dies at the first size check and the
 * target covers a fraction of the decoder (issue 27: 68 edges after the
 * network gained parameters and the committed seeds went stale).
 * tests/test_policy_file.c checks that they still decode; when the network
 * or the format changes, run `make fuzz-seeds-policy` and commit.
 * Each seed is a mode byte (see fuzz_policy.c) followed by the image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "nn.h"
#include "policy_file.h"
#include "util.h"

static int put(const char *dir, const char *name, unsigned mode, const void *img, size_t len)
{
    char path[1024];
    unsigned char *b = malloc(len + 1);
    int st;
    if (!b) return 1;
    b[0] = (unsigned char)mode;
    memcpy(b + 1, img, len);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    st = ar_write_file_atomic(path, b, len + 1);
    free(b);
    if (st) fprintf(stderr, "gen_policy_seeds: %s\n", arachne_last_error());
    return st != 0;
}

static void fix_crc(unsigned char *img, size_t len)
{
    uint32_t c = ar_crc32(img, len - 4);
    int i;
    for (i = 0; i < 4; i++) img[len - 4 + i] = (unsigned char)(c >> (8 * i));
}

int main(int argc, char **argv)
{
    /* a tiny network: 3 layers of 2 units, so seeds stay about 1.5 KB */
    static const int fields[AR_NN_CONFIG_FIELDS] = { 3, 2, 2, 4, 1, 2, 3, 3, 2, 2 };
    const char *dir = argc > 1 ? argv[1] : "tests/fuzz/corpus/policy";
    ar_nn_config cfg;
    ar_nn *n = NULL;
    ar_buf b, b9;
    unsigned char *x;
    int bad = 0;
    ar_nn_config_from_array(&cfg, fields);
    if (ar_nn_create(&n, &cfg, 7)) { fprintf(stderr, "gen_policy_seeds: %s\n", arachne_last_error()); return 1; }
    ar_buf_init(&b);
    ar_buf_init(&b9);
    if (ar_policy_encode(&b, n, 1, "{\"seed\":7,\"note\":\"tiny\"}") || ar_policy_encode(&b9, n, 9, NULL)) {
        fprintf(stderr, "gen_policy_seeds: %s\n", arachne_last_error());
        return 1;
    }
    bad |= put(dir, "tiny-meta", 0, b.data, b.len);
    bad |= put(dir, "tiny-meta-fixcrc", 1, b.data, b.len);
    bad |= put(dir, "tiny-schema9", 5, b9.data, b9.len);
    bad |= put(dir, "tiny-truncated", 1, b.data, b.len - 34);
    x = malloc(b.len);
    if (!x) return 1;
    memcpy(x, b.data, b.len);
    x[100] ^= 0x10; /* a parameter bit */
    bad |= put(dir, "tiny-flipped", 0, x, b.len);
    bad |= put(dir, "tiny-flipped-fixcrc", 3, x, b.len);
    memcpy(x, b.data, b.len);
    x[56] = 0xff; /* parameter count contradicts the sizes */
    fix_crc(x, b.len);
    bad |= put(dir, "tiny-count", 0, x, b.len);
    bad |= put(dir, "bad-magic", 0, "not a policy", 12);
    bad |= put(dir, "bad-version", 0, "ARPOL\0\0\1\2\0\0\0", 12);
    free(x);
    ar_buf_free(&b);
    ar_buf_free(&b9);
    ar_nn_destroy(n);
    return bad;
}
