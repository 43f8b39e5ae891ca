/* bench_policy.h -- the policy a benchmark plans with, chosen one way in
 * every benchmark that falls back: the file given (--policy or
 * $ARACHNE_POLICY), else the bundled examples/policies/default.arpol when
 * the benchmark runs from the source tree, else a fresh untrained policy
 * (seed 1).  The output should say which: *desc. */
#ifndef ARACHNE_BENCH_POLICY_H
#define ARACHNE_BENCH_POLICY_H

#include <stdio.h>

#include "arachne.h"

/* *pol: the policy (the caller destroys it); *desc: the file or the words
 * for a fresh one; *fresh (may be NULL): 1 for a fresh one.  Returns an
 * arachne status, the message in arachne_last_error(). */
static inline int bench_policy_open(arachne_policy **pol, const char *path, const char **desc, int *fresh)
{
    int st;
    if (!path || !path[0]) {
        FILE *f = fopen("examples/policies/default.arpol", "rb");
        path = NULL;
        if (f) {
            fclose(f);
            path = "examples/policies/default.arpol";
        }
    }
    if (fresh) *fresh = path == NULL;
    if (path) {
        st = arachne_policy_load(pol, path);
        *desc = path;
    } else {
        st = arachne_policy_create(pol, 1, 0, 0);
        *desc = "fresh (untrained, seed 1; no bundled policy found)";
    }
    return st;
}

#endif
