/* fuzz_policy.c -- the binary policy file decoder (ar_policy_decode).
 * The first input byte selects a mode, the rest is the file image:
 *   bit 0: overwrite the trailing CRC-32 with the correct one, so mutations
 *          reach the size, parameter and metadata checks behind the checksum;
 *   bit 1: force the magic and format version (same reason);
 *   bit 2: expect feature schema 1 instead of accepting any.
 * Properties: never crashes, leaks or over-allocates; failures give
 * CORRUPT/UNSUPPORTED/NO_MEMORY with a message naming the file and NULL
 * outputs; an accepted image re-encodes to exactly the same bytes. */
#include "fuzz_common.h"
#include "crc32.h"
#include "policy_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned mode;
    uint8_t *img;
    size_t len;
    ar_nn *n = (ar_nn *)1;
    char *meta = (char *)1;
    uint32_t schema = 0;
    int st;
    if (size < 1) return 0;
    mode = data[0];
    len = size - 1;
    img = (uint8_t *)fuzz_copy(data + 1, len);
    if (!img) return 0;
    if ((mode & 2) && len >= 12) {
        uint32_t v = AR_POLICY_FORMAT_VERSION;
        memcpy(img, AR_POLICY_MAGIC, 8);
        img[8] = (uint8_t)v; img[9] = (uint8_t)(v >> 8); img[10] = (uint8_t)(v >> 16); img[11] = (uint8_t)(v >> 24);
    }
    if ((mode & 1) && len >= 4) {
        uint32_t c = ar_crc32(img, len - 4);
        img[len - 4] = (uint8_t)c; img[len - 3] = (uint8_t)(c >> 8);
        img[len - 2] = (uint8_t)(c >> 16); img[len - 1] = (uint8_t)(c >> 24);
    }
    arachne_clear_error();
    st = ar_policy_decode(&n, img, len, "fuzz.pol", (mode & 4) ? 1u : AR_POLICY_SCHEMA_ANY, &schema, &meta);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK(n == NULL && meta == NULL);
        FUZZ_CHECK(st == ARACHNE_E_CORRUPT || st == ARACHNE_E_UNSUPPORTED || st == ARACHNE_E_NO_MEMORY);
        FUZZ_CHECK(strstr(arachne_last_error(), "fuzz.pol") != NULL);
    } else {
        ar_buf b;
        FUZZ_CHECK(n != NULL && meta != NULL);
        ar_buf_init(&b);
        st = ar_policy_encode(&b, n, schema, meta[0] ? meta : NULL);
        FUZZ_CHECK(st == ARACHNE_OK);
        FUZZ_CHECK(b.len == len && memcmp(b.data, img, len) == 0);
        ar_buf_free(&b);
        ar_nn_destroy(n);
        free(meta);
    }
    free(img);
    return 0;
}
