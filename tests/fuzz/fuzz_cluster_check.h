/* fuzz_cluster_check.h -- properties every accepted cluster must have
 * (shared by fuzz_cluster.c and fuzz_cluster_json.c). */
#ifndef ARACHNE_FUZZ_CLUSTER_CHECK_H
#define ARACHNE_FUZZ_CLUSTER_CHECK_H

#include <math.h>

#include "fuzz_common.h"

/* Getters agree with each other; the JSON form reads back to the same JSON
 * bytes; the compact form (when it parses: user-given types have no catalog
 * entry) reads back to the same compact string and node list. */
static void fuzz_check_cluster(const arachne_cluster *c)
{
    arachne_cluster *a = NULL, *b = NULL;
    const char *s = NULL, *j = NULL, *s2 = NULL, *j2 = NULL, *name = NULL;
    int ntypes = 0, nnodes = 0, total = 0, sum = 0, i, k, g, st;
    double v;
    FUZZ_CHECK(arachne_cluster_type_count(c, &ntypes) == ARACHNE_OK && ntypes >= 0 && ntypes <= 16);
    FUZZ_CHECK(arachne_cluster_node_count(c, NULL, &nnodes) == ARACHNE_OK && nnodes >= 0);
    FUZZ_CHECK(arachne_cluster_gpu_count(c, NULL, &total) == ARACHNE_OK && total >= 0 && total <= 1000000);
    for (i = 0; i < nnodes; i++) {
        FUZZ_CHECK(arachne_cluster_node(c, i, &name, &g) == ARACHNE_OK && name && g >= 1 && g <= 1024);
        sum += g;
    }
    FUZZ_CHECK(sum == total);
    FUZZ_CHECK(arachne_cluster_node(c, nnodes, &name, &g) == ARACHNE_E_INVALID_ARGUMENT);
    for (i = 0; i < ntypes; i++) {
        int tg = 0, tn = 0, big = 0;
        FUZZ_CHECK(arachne_cluster_type_name(c, i, &name) == ARACHNE_OK && name && name[0]);
        FUZZ_CHECK(arachne_cluster_gpu_count(c, name, &tg) == ARACHNE_OK);
        FUZZ_CHECK(arachne_cluster_node_count(c, name, &tn) == ARACHNE_OK);
        FUZZ_CHECK(arachne_cluster_largest_node(c, name, &big) == ARACHNE_OK && big <= tg);
        for (k = ARACHNE_GPU_MEMORY_BYTES; k <= ARACHNE_GPU_INTER_LATENCY_S; k++) {
            FUZZ_CHECK(arachne_cluster_gpu_get(c, name, k, &v) == ARACHNE_OK);
            FUZZ_CHECK(isfinite(v) && v > 0);
        }
        for (k = 0; k < ntypes; k++) {
            const char *other = NULL;
            FUZZ_CHECK(arachne_cluster_type_name(c, k, &other) == ARACHNE_OK);
            FUZZ_CHECK(arachne_cluster_link_bandwidth(c, name, other, &v) == ARACHNE_OK && isfinite(v) && v > 0);
        }
    }
    FUZZ_CHECK(arachne_cluster_to_string(c, &s) == ARACHNE_OK && s);
    FUZZ_CHECK(arachne_cluster_to_json(c, &j) == ARACHNE_OK && j);
    st = arachne_cluster_from_json(&a, j, strlen(j));
    FUZZ_CHECK(st == ARACHNE_OK);
    FUZZ_CHECK(arachne_cluster_to_json(a, &j2) == ARACHNE_OK && strcmp(j, j2) == 0);
    FUZZ_CHECK(arachne_cluster_to_string(a, &s2) == ARACHNE_OK && strcmp(s, s2) == 0);
    if (s[0] && arachne_cluster_parse(&b, s) == ARACHNE_OK) {
        int n2 = 0;
        FUZZ_CHECK(arachne_cluster_to_string(b, &s2) == ARACHNE_OK && strcmp(s, s2) == 0);
        FUZZ_CHECK(arachne_cluster_node_count(b, NULL, &n2) == ARACHNE_OK && n2 == nnodes);
        FUZZ_CHECK(arachne_cluster_gpu_count(b, NULL, &n2) == ARACHNE_OK && n2 == total);
    }
    arachne_cluster_destroy(b);
    arachne_cluster_destroy(a);
}

#endif
