/* fuzz_model.c -- arachne_model_from_json on arbitrary bytes.
 * Properties: never crashes or leaks; a failure sets *out to NULL and leaves
 * a message; an accepted model answers every getter, its JSON text loads
 * back to a model with the same JSON text (round trip) and the same
 * parameter counts, and FLOPs/activation sizes are finite and >= 0. */
#include <math.h>

#include "fuzz_common.h"

static void check_model(const arachne_model *m)
{
    double v = 0, w = 0;
    int f, k;
    const char *name = NULL;
    FUZZ_CHECK(arachne_model_name(m, &name) == ARACHNE_OK && name && name[0]);
    for (f = ARACHNE_MODEL_BLOCKS; f <= ARACHNE_MODEL_MOE_BLOCKS; f++) {
        FUZZ_CHECK(arachne_model_get(m, f, &v) == ARACHNE_OK);
        FUZZ_CHECK(isfinite(v) && v >= 0);
    }
    FUZZ_CHECK(arachne_model_get(m, 9999, &v) == ARACHNE_E_INVALID_ARGUMENT);
    for (k = ARACHNE_LAYER_EMBED; k <= ARACHNE_LAYER_HEAD; k++) {
        FUZZ_CHECK(arachne_model_layer_params(m, k, &v) == ARACHNE_OK && isfinite(v) && v >= 0);
        FUZZ_CHECK(arachne_model_layer_flops(m, k, 4096, 2, &v) == ARACHNE_OK && isfinite(v) && v >= 0);
        FUZZ_CHECK(arachne_model_layer_flops(m, k, 1, 1, &w) == ARACHNE_OK && isfinite(w) && w >= 0);
        FUZZ_CHECK(arachne_model_layer_act_bytes(m, k, 4096, 1, 8, ARACHNE_RECOMPUTE_SELECTIVE, &v) ==
                   ARACHNE_OK && isfinite(v) && v >= 0);
        FUZZ_CHECK(arachne_model_layer_act_bytes(m, k, 1, 1, 1, ARACHNE_RECOMPUTE_NONE, &v) == ARACHNE_OK &&
                   isfinite(v) && v >= 0);
    }
    FUZZ_CHECK(arachne_model_layer_flops(m, 9, 1, 1, &v) == ARACHNE_E_INVALID_ARGUMENT);
    FUZZ_CHECK(arachne_model_layer_act_bytes(m, 1, 1, 1, 0, 0, &v) == ARACHNE_E_INVALID_ARGUMENT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_copy(data, size);
    arachne_model *m = NULL, *m2 = NULL;
    const char *j1 = NULL, *j2 = NULL;
    double p1 = 0, p2 = 0;
    int st;
    if (!text) return 0;
    arachne_clear_error();
    m = (arachne_model *)1;
    st = arachne_model_from_json(&m, text, size);
    free(text);
    if (st != ARACHNE_OK) {
        FUZZ_CHECK(m == NULL);
        FUZZ_CHECK_FAILURE(st);
        return 0;
    }
    check_model(m);
    FUZZ_CHECK(arachne_model_to_json(m, &j1) == ARACHNE_OK && j1);
    st = arachne_model_from_json(&m2, j1, strlen(j1));
    FUZZ_CHECK(st == ARACHNE_OK);
    FUZZ_CHECK(arachne_model_to_json(m2, &j2) == ARACHNE_OK && j2);
    FUZZ_CHECK(strcmp(j1, j2) == 0);
    FUZZ_CHECK(arachne_model_get(m, ARACHNE_MODEL_TOTAL_PARAMS, &p1) == ARACHNE_OK);
    FUZZ_CHECK(arachne_model_get(m2, ARACHNE_MODEL_TOTAL_PARAMS, &p2) == ARACHNE_OK);
    FUZZ_CHECK(p1 == p2);
    arachne_model_destroy(m2);
    arachne_model_destroy(m);
    return 0;
}
