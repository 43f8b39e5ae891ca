/* fuzz_cluster_json.c -- arachne_cluster_from_json on arbitrary bytes.
 * Properties as fuzz_cluster.c: no crash, leak or hang; *out NULL and a
 * message on failure; an accepted cluster passes fuzz_check_cluster. */
#include "fuzz_cluster_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_copy(data, size);
    arachne_cluster *c = (arachne_cluster *)1;
    int st;
    if (!text) return 0;
    arachne_clear_error();
    st = arachne_cluster_from_json(&c, text, size);
    free(text);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK(c == NULL);
        FUZZ_CHECK_FAILURE(st);
        return 0;
    }
    fuzz_check_cluster(c);
    arachne_cluster_destroy(c);
    return 0;
}
