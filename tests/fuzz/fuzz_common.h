/* fuzz_common.h -- shared bits of the libFuzzer targets (tests/fuzz/README.md).
 * Every target defines LLVMFuzzerTestOneInput; a property violation (not
 * just a crash) is reported with FUZZ_CHECK, which aborts so libFuzzer
 * saves the input. */
#ifndef ARACHNE_FUZZ_COMMON_H
#define ARACHNE_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(c) do { if (!(c)) { \
    fprintf(stderr, "FUZZ_CHECK failed: %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #c, \
            arachne_last_error()); abort(); } } while (0)

/* A failing call must return a known negative status and leave a message. */
#define FUZZ_CHECK_FAILURE(st) do { int s_ = (st); \
    FUZZ_CHECK(s_ < 0 && s_ >= ARACHNE_E_CANCELLED); \
    FUZZ_CHECK(arachne_last_error()[0] != '\0'); } while (0)

/* Copies the input into a fresh heap block of exactly size bytes (no NUL),
 * so ASan catches any read past the end. */
static inline char *fuzz_copy(const uint8_t *data, size_t size)
{
    char *p = malloc(size ? size : 1);
    if (p && size) memcpy(p, data, size);
    return p;
}

/* Same, NUL-terminated (for string APIs); NUL bytes inside are kept. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *p = malloc(size + 1);
    if (!p) return NULL;
    if (size) memcpy(p, data, size);
    p[size] = '\0';
    return p;
}

#endif
