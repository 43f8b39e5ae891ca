/* fuzz_sailor.c -- the Sailor profile importer (arachne_profile_import_sailor).
 * The importer reads files, so the input is split on NUL bytes into
 *   model name \0 profiles.json \0 llm_info.json [\0 training_config_x.json]
 * and the parts are written into a private directory (under $TMPDIR, made
 * once per process) before each call.  Properties: no crash, leak or hang;
 * failures give PARSE/NOT_FOUND/IO/INVALID_ARGUMENT/NO_MEMORY with a message
 * and *out NULL; an accepted table passes fuzz_check_profile. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "fuzz_profile_check.h"
#include "fuzz_tmpdir.h"

static const char *const files[] = { "profiles.json", "llm_info.json", "training_config_fuzz.json", NULL };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_tmpdir_make("sailor", files);
    return 0;
}

static void put_file(int i, const uint8_t *p, size_t n)
{
    char path[512];
    FILE *f;
    fuzz_tmpdir_path(path, sizeof path, files[i]);
    if (!p) { unlink(path); return; }
    f = fopen(path, "wb");
    if (!f) abort();
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[4] = { NULL, NULL, NULL, NULL };
    size_t len[4] = { 0, 0, 0, 0 }, i, start = 0;
    int np = 0, st;
    char *model;
    arachne_profile *p = (arachne_profile *)1;
    for (i = 0; i <= size && np < 4; i++) {
        if (i < size && data[i] != 0) continue;
        part[np] = data + start;
        len[np++] = i - start;
        start = i + 1;
    }
    if (np < 3) return 0;
    if (np == 4) len[3] = size - (size_t)(part[3] - data); /* the rest, NULs included */
    model = fuzz_cstr(part[0], len[0]);
    if (!model) return 0;
    put_file(0, part[1], len[1]);
    put_file(1, part[2], len[2]);
    put_file(2, part[3], len[3]);
    arachne_clear_error();
    st = arachne_profile_import_sailor(&p, fuzz_tmp_dir, model);
    free(model);
    fuzz_check_profile_result(st, p);
    return 0;
}
