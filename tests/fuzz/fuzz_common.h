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

/* Every launcher export of an accepted plan: the size probe and the
 * export agree, and the text fills exactly the size announced.  FlashFlex
 * and Sailor may refuse a plan they cannot express (context parallelism,
 * an interleaved pipeline, several micro-batch sizes, a hybrid layer
 * stack) with ARACHNE_E_UNSUPPORTED and a message that names the export;
 * the full call then refuses it the same way. */
static inline void fuzz_check_exports(const arachne_plan *p)
{
    int f, st;
    for (f = ARACHNE_EXPORT_RANKS; f <= ARACHNE_EXPORT_TORCHTITAN_CLI; f++) {
        size_t need = 0, need2 = 0;
        char *buf, tiny[1];
        st = arachne_plan_export(p, f, NULL, 0, &need);
        if (st == ARACHNE_E_UNSUPPORTED && (f == ARACHNE_EXPORT_FLASHFLEX || f == ARACHNE_EXPORT_SAILOR)) {
            FUZZ_CHECK(strstr(arachne_last_error(), f == ARACHNE_EXPORT_SAILOR ? "sailor export" : "flashflex export"));
            FUZZ_CHECK(arachne_plan_export(p, f, tiny, sizeof tiny, &need2) == ARACHNE_E_UNSUPPORTED);
            continue;
        }
        FUZZ_CHECK(st == ARACHNE_E_BUFFER_TOO_SMALL && need >= 1);
        buf = malloc(need);
        FUZZ_CHECK(buf != NULL);
        FUZZ_CHECK(arachne_plan_export(p, f, buf, need, &need2) == ARACHNE_OK && need2 == need);
        FUZZ_CHECK(strlen(buf) + 1 == need);
        free(buf);
    }
}

#endif
