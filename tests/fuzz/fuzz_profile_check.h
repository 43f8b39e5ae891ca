/* fuzz_profile_check.h -- properties of an accepted profile table (shared
 * by fuzz_profile.c and fuzz_sailor.c). */
#ifndef ARACHNE_FUZZ_PROFILE_CHECK_H
#define ARACHNE_FUZZ_PROFILE_CHECK_H

#include <math.h>

#include "fuzz_common.h"

/* Every entry is found by its own key with the same values; the JSON text
 * loads back to a table whose JSON text is byte-identical. */
static void fuzz_check_profile(const arachne_profile *p)
{
    arachne_profile *q = NULL;
    const char *model = NULL;
    char *j1, *j2;
    size_t n1 = 0, n2 = 0;
    int n = 0, i, seq = 0, st;
    FUZZ_CHECK(arachne_profile_count(p, &n) == ARACHNE_OK && n >= 0);
    FUZZ_CHECK(arachne_profile_model_name(p, &model) == ARACHNE_OK && model && model[0]);
    FUZZ_CHECK(arachne_profile_seq_len(p, &seq) == ARACHNE_OK && seq >= 1);
    for (i = 0; i < n; i++) {
        const char *gpu = NULL;
        int kind = -1, tp = 0, mbs = 0;
        double f = -1, b = -1, c = -1, a = -1, f2 = -1, b2 = -1, c2 = -1, a2 = -1;
        FUZZ_CHECK(arachne_profile_entry(p, i, &gpu, &kind, &tp, &mbs, &f, &b, &c, &a) == ARACHNE_OK);
        FUZZ_CHECK(gpu && gpu[0] && kind >= 0 && kind <= 3 && tp >= 1 && mbs >= 1);
        FUZZ_CHECK(isfinite(f) && f >= 0 && isfinite(b) && b >= 0 && isfinite(c) && c >= 0 && isfinite(a) && a >= 0);
        FUZZ_CHECK(arachne_profile_lookup(p, gpu, kind, tp, mbs, &f2, &b2, &c2, &a2) == ARACHNE_OK);
        FUZZ_CHECK(f == f2 && b == b2 && c == c2 && a == a2);
    }
    FUZZ_CHECK(arachne_profile_entry(p, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
               ARACHNE_E_INVALID_ARGUMENT);
    st = arachne_profile_to_json(p, NULL, 0, &n1);
    FUZZ_CHECK(st == ARACHNE_E_BUFFER_TOO_SMALL && n1 > 1);
    j1 = malloc(n1);
    FUZZ_CHECK(j1 != NULL);
    FUZZ_CHECK(arachne_profile_to_json(p, j1, n1, &n2) == ARACHNE_OK && n2 == n1 && strlen(j1) + 1 == n1);
    st = arachne_profile_from_json(&q, j1, n1 - 1);
    FUZZ_CHECK(st == ARACHNE_OK);
    FUZZ_CHECK(arachne_profile_to_json(q, NULL, 0, &n2) == ARACHNE_E_BUFFER_TOO_SMALL && n2 == n1);
    j2 = malloc(n2);
    FUZZ_CHECK(j2 != NULL);
    FUZZ_CHECK(arachne_profile_to_json(q, j2, n2, NULL) == ARACHNE_OK && memcmp(j1, j2, n1) == 0);
    free(j1);
    free(j2);
    arachne_profile_destroy(q);
}

/* The properties of a profile reader's result: on failure *out stays NULL
 * and the status comes with a message; an accepted table passes
 * fuzz_check_profile.  Frees the table. */
static void fuzz_check_profile_result(int st, arachne_profile *p)
{
    if (st != ARACHNE_OK) {
        FUZZ_CHECK(p == NULL);
        FUZZ_CHECK_FAILURE(st);
        return;
    }
    fuzz_check_profile(p);
    arachne_profile_destroy(p);
}

#endif
