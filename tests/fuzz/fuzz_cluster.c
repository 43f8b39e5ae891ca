/* fuzz_cluster.c -- arachne_cluster_parse (compact spec) on arbitrary bytes
 * (NUL-terminated; bytes after a NUL are not seen).  Properties: never
 * crashes, leaks or hangs; a failure sets *out to NULL with a message; an
 * accepted cluster passes fuzz_check_cluster (round trips, consistent
 * getters), and mutating it (adding nodes, links) keeps it consistent. */
#include "fuzz_cluster_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec;
    arachne_cluster *c;
    int st;
    if (size > 65536) return 0;
    spec = fuzz_cstr(data, size);
    if (!spec) return 0;
    arachne_clear_error();
    c = (arachne_cluster *)1;
    st = arachne_cluster_parse(&c, spec);
    free(spec);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK(c == NULL);
        FUZZ_CHECK_FAILURE(st);
        return 0;
    }
    fuzz_check_cluster(c);
    /* The mutators must leave a consistent cluster whether they succeed or not. */
    (void)arachne_cluster_add_nodes(c, "h100", 1, 8);
    (void)arachne_cluster_add_nodes(c, "a100-40", 1000000, 1024);
    (void)arachne_cluster_set_link_bandwidth(c, "h100", "h100", 12.5e9);
    fuzz_check_cluster(c);
    arachne_cluster_destroy(c);
    return 0;
}
