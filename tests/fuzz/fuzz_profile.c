/* fuzz_profile.c -- arachne_profile_from_json on arbitrary bytes.
 * Properties: no crash, leak or hang; *out NULL and a message on failure;
 * an accepted table passes fuzz_check_profile (lookups, byte-exact round
 * trip of the JSON text). */
#include "fuzz_profile_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_copy(data, size);
    arachne_profile *p = (arachne_profile *)1;
    int st;
    if (!text) return 0;
    arachne_clear_error();
    st = arachne_profile_from_json(&p, text, size);
    free(text);
    fuzz_check_profile_result(st, p);
    return 0;
}
