/* replay_main.c -- runs a fuzz target on files, without libFuzzer.
 *
 * `make check` links every tests/fuzz/fuzz_*.c with this driver and feeds it
 * the target's committed seeds (tests/check_fuzz_seeds.sh).  A fuzz run is
 * not part of the suite (it needs clang's libFuzzer and minutes per
 * target), so without this a property that no longer holds, or a seed the
 * library has come to reject, would stay hidden until someone fuzzes.  The
 * target's FUZZ_CHECK aborts on a violated property, which fails the run.
 *
 * usage: fuzz_NAME-replay FILE...   (prints "replayed N inputs") */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_common.h"

/* optional in a target, as under libFuzzer (a weak reference: NULL when the
 * target does not define it) */
extern int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* The whole file into a fresh block of exactly its size (as libFuzzer hands
 * inputs over); NULL on a read error, with a message. */
static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL, *grown;
    size_t cap = 0, n = 0, got;
    if (!f) {
        perror(path);
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            if (!(grown = realloc(buf, cap))) {
                fprintf(stderr, "%s: out of memory\n", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        perror(path);
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *size = n;
    return buf;
}

int main(int argc, char **argv)
{
    int i;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize && LLVMFuzzerInitialize(&argc, &argv) != 0) return 1;
    for (i = 1; i < argc; i++) {
        size_t size = 0;
        uint8_t *data = read_all(argv[i], &size), *exact;
        if (!data) return 1;
        /* a block of exactly the input's size, so ASan builds catch a read
         * past its end as the fuzzer would */
        exact = malloc(size ? size : 1);
        if (!exact) {
            free(data);
            return 1;
        }
        if (size) memcpy(exact, data, size);
        free(data);
        LLVMFuzzerTestOneInput(exact, size);
        free(exact);
    }
    printf("replayed %d inputs\n", argc - 1);
    return 0;
}
