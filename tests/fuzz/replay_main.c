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
#include "util.h"

/* optional in a target, as under libFuzzer (a weak reference: NULL when the
 * target does not define it) */
extern int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

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
        char *data = NULL, *exact;
        if (ar_read_file(argv[i], &data, &size) != ARACHNE_OK) {
            fprintf(stderr, "%s\n", arachne_last_error());
            return 1;
        }
        /* a block of exactly the input's size (ar_read_file's has a NUL
         * after it), so ASan builds catch a read past its end as the
         * fuzzer would */
        exact = fuzz_copy((const uint8_t *)data, size);
        free(data);
        if (!exact) return 1;
        LLVMFuzzerTestOneInput((const uint8_t *)exact, size);
        free(exact);
    }
    printf("replayed %d inputs\n", argc - 1);
    return 0;
}
