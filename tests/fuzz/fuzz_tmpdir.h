/* fuzz_tmpdir.h -- a private scratch directory for the fuzz targets that
 * read or write files.  Made once per process under $TMPDIR (default
 * /tmp) and removed at exit together with the files the target named, so
 * `make check`'s replay of the seeds and a libFuzzer run leave nothing
 * behind.  Needs _POSIX_C_SOURCE 200809L (mkdtemp) before the includes. */
#ifndef ARACHNE_FUZZ_TMPDIR_H
#define ARACHNE_FUZZ_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_tmp_dir[256];
static const char *const *fuzz_tmp_names; /* files made in it, NULL-terminated */

/* out = "<dir>/<name>". */
static void fuzz_tmpdir_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", fuzz_tmp_dir, name);
}

static void fuzz_tmpdir_remove(void)
{
    char path[512];
    int i;
    for (i = 0; fuzz_tmp_names && fuzz_tmp_names[i]; i++) {
        fuzz_tmpdir_path(path, sizeof path, fuzz_tmp_names[i]);
        unlink(path);
    }
    rmdir(fuzz_tmp_dir);
}

/* Makes the directory "<$TMPDIR>/arachne-fuzz-<tag>-XXXXXX"; names lists
 * every file the target may leave in it (NULL-terminated, static).
 * Aborts when it cannot: a target without its directory tests nothing. */
static void fuzz_tmpdir_make(const char *tag, const char *const *names)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_tmp_dir, sizeof fuzz_tmp_dir, "%s/arachne-fuzz-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    if (!mkdtemp(fuzz_tmp_dir)) {
        perror("mkdtemp");
        abort();
    }
    fuzz_tmp_names = names;
    atexit(fuzz_tmpdir_remove);
}

#endif
