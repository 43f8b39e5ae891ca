/* model_load.c -- reads the "arachne-model" JSON format (docs/formats.md,
 * "Model") and opens models by preset name or file path. */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "model.h"

#define AR_MODEL_FORMAT_VERSION 1
#define DIM_MAX (1L << 24)

static const char *const top_keys[] = {
    "format", "version", "name", "blocks", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
    "experts", "top_k", "shared_experts", "expert_ffn", "dense_prefix", "expert_latent", "qk_norm", "gated_mlp",
    "tied_embeddings", "mla", "hybrid", NULL
};
static const char *const hybrid_keys[] = {
    "pattern", "mamba_heads", "mamba_head_dim", "mamba_state", "mamba_groups", "mamba_conv", "mamba_chunk", NULL
};
static const char *const mla_keys[] = {
    "q_lora_rank", "kv_lora_rank", "qk_nope_dim", "qk_rope_dim", "v_head_dim", NULL
};

static int get_int(const ar_json *obj, const char *key, int required, long lo, int *out)
{
    long v = *out;
    int st = ar_json_int(obj, key, required, lo, DIM_MAX, &v);
    if (st == ARACHNE_OK) *out = (int)v;
    return st;
}

/* The "hybrid" object: the layer pattern and the Mamba-2 sizes (required
 * when the pattern has an M layer; ar_model_finish checks the rest). */
static int read_hybrid(const ar_json *hy, arachne_model *spec)
{
    const char *p = NULL;
    int st, mamba;
    if ((st = ar_json_only_keys(hy, hybrid_keys)) != ARACHNE_OK) return st;
    if ((st = ar_json_str(hy, "pattern", 1, &p)) != ARACHNE_OK) return st;
    if (p[0] == '\0' || strlen(p) > AR_MODEL_PATTERN_MAX)
        return ar_json_error_at(ar_json_get(hy, "pattern"), "hybrid.pattern: expected 1 to %d layer symbols",
                                AR_MODEL_PATTERN_MAX);
    memcpy(spec->pattern, p, strlen(p) + 1);
    mamba = strchr(p, 'M') != NULL;
    if ((st = get_int(hy, "mamba_heads", mamba, mamba, &spec->mamba_heads)) != ARACHNE_OK ||
        (st = get_int(hy, "mamba_head_dim", mamba, mamba, &spec->mamba_head_dim)) != ARACHNE_OK ||
        (st = get_int(hy, "mamba_state", mamba, mamba, &spec->mamba_state)) != ARACHNE_OK ||
        (st = get_int(hy, "mamba_groups", mamba, mamba, &spec->mamba_groups)) != ARACHNE_OK ||
        (st = get_int(hy, "mamba_conv", mamba, mamba, &spec->mamba_conv)) != ARACHNE_OK ||
        (st = get_int(hy, "mamba_chunk", mamba, mamba, &spec->mamba_chunk)) != ARACHNE_OK)
        return st;
    return ARACHNE_OK;
}

static int from_tree(arachne_model **out, const ar_json *root)
{
    arachne_model spec;
    const ar_json *mla = NULL, *hy = NULL;
    const char *s = NULL;
    long version = 0;
    int st;
    memset(&spec, 0, sizeof spec);
    spec.gated_mlp = 1;
    if (root->type != AR_JSON_OBJECT) return ar_json_error_at(root, "model: expected a JSON object");
    if ((st = ar_json_only_keys(root, top_keys)) != ARACHNE_OK) return st;
    if ((st = ar_json_str(root, "format", 1, &s)) != ARACHNE_OK) return st;
    if (strcmp(s, "arachne-model") != 0)
        return ar_json_error_at(ar_json_get(root, "format"), "format: expected \"arachne-model\", got \"%s\"", s);
    if ((st = ar_json_int(root, "version", 1, 1, 1000000, &version)) != ARACHNE_OK) return st;
    if (version > AR_MODEL_FORMAT_VERSION) {
        const ar_json *v = ar_json_get(root, "version");
        return ar_error(ARACHNE_E_UNSUPPORTED, "%s:%d:%d: version: %ld is newer than this library reads (%d)",
                        v->source ? v->source : "<model>", v->line, v->col, version, AR_MODEL_FORMAT_VERSION);
    }
    if ((st = ar_json_str(root, "name", 1, &s)) != ARACHNE_OK) return st;
    if (s[0] == '\0' || strlen(s) >= sizeof spec.name)
        return ar_json_error_at(ar_json_get(root, "name"), "name: expected 1 to %d bytes",
                                (int)sizeof spec.name - 1);
    memcpy(spec.name, s, strlen(s) + 1);
    if ((st = get_int(root, "blocks", 1, 1, &spec.blocks)) != ARACHNE_OK ||
        (st = get_int(root, "hidden", 1, 1, &spec.hidden)) != ARACHNE_OK ||
        (st = get_int(root, "heads", 1, 1, &spec.heads)) != ARACHNE_OK ||
        (st = get_int(root, "kv_heads", 1, 1, &spec.kv_heads)) != ARACHNE_OK ||
        (st = get_int(root, "head_dim", 1, 1, &spec.head_dim)) != ARACHNE_OK ||
        (st = get_int(root, "ffn", 1, 0, &spec.ffn)) != ARACHNE_OK ||
        (st = get_int(root, "vocab", 1, 1, &spec.vocab)) != ARACHNE_OK ||
        (st = get_int(root, "experts", 0, 0, &spec.experts)) != ARACHNE_OK ||
        (st = get_int(root, "top_k", 0, 0, &spec.top_k)) != ARACHNE_OK ||
        (st = get_int(root, "shared_experts", 0, 0, &spec.shared_experts)) != ARACHNE_OK ||
        (st = get_int(root, "expert_ffn", 0, 0, &spec.expert_ffn)) != ARACHNE_OK ||
        (st = get_int(root, "dense_prefix", 0, 0, &spec.dense_prefix)) != ARACHNE_OK ||
        (st = get_int(root, "expert_latent", 0, 0, &spec.expert_latent)) != ARACHNE_OK ||
        (st = ar_json_bool(root, "qk_norm", 0, &spec.qk_norm)) != ARACHNE_OK ||
        (st = ar_json_bool(root, "gated_mlp", 0, &spec.gated_mlp)) != ARACHNE_OK ||
        (st = ar_json_bool(root, "tied_embeddings", 0, &spec.tied_embeddings)) != ARACHNE_OK ||
        (st = ar_json_obj(root, "mla", 0, &mla)) != ARACHNE_OK)
        return st;
    if (mla) {
        spec.mla = 1;
        if ((st = ar_json_only_keys(mla, mla_keys)) != ARACHNE_OK ||
            (st = get_int(mla, "q_lora_rank", 1, 0, &spec.q_lora_rank)) != ARACHNE_OK ||
            (st = get_int(mla, "kv_lora_rank", 1, 1, &spec.kv_lora_rank)) != ARACHNE_OK ||
            (st = get_int(mla, "qk_nope_dim", 1, 1, &spec.qk_nope_dim)) != ARACHNE_OK ||
            (st = get_int(mla, "qk_rope_dim", 1, 1, &spec.qk_rope_dim)) != ARACHNE_OK ||
            (st = get_int(mla, "v_head_dim", 1, 1, &spec.v_head_dim)) != ARACHNE_OK)
            return st;
    }
    if ((st = ar_json_obj(root, "hybrid", 0, &hy)) != ARACHNE_OK) return st;
    if (hy && (st = read_hybrid(hy, &spec)) != ARACHNE_OK) return st;
    if ((st = ar_model_create(out, &spec)) != ARACHNE_OK && root->source) ar_error_prefix(root->source);
    return st;
}

int arachne_model_from_json(arachne_model **out, const char *json, size_t len)
{
    ar_json *root = NULL;
    int st;
    if (out) *out = NULL;
    if (!out || !json) return AR_NULL_ARG("arachne_model_from_json", out, json);
    if ((st = ar_json_parse(&root, json, len, "<model json>")) != ARACHNE_OK) return st;
    st = from_tree(out, root);
    ar_json_free(root);
    return st;
}

int arachne_model_load(arachne_model **out, const char *path)
{
    ar_json *root = NULL;
    int st;
    if (out) *out = NULL;
    if (!out || !path) return AR_NULL_ARG("arachne_model_load", out, path);
    if ((st = ar_json_parse_file(&root, path)) != ARACHNE_OK) return st;
    st = from_tree(out, root);
    ar_json_free(root);
    return st;
}

int arachne_model_open(arachne_model **out, const char *name_or_path)
{
    if (out) *out = NULL;
    if (!out || !name_or_path) return AR_NULL_ARG("arachne_model_open", out, name_or_path);
    if (ar_model_preset_spec(name_or_path)) return arachne_model_preset(out, name_or_path);
    if (!ar_path_readable(name_or_path)) {
        const char *near = ar_model_preset_suggest(name_or_path);
        if (near)
            return ar_error(ARACHNE_E_NOT_FOUND,
                            "model '%.200s': neither a preset nor a readable model file; did you mean %s?",
                            name_or_path, near);
        return ar_error(ARACHNE_E_NOT_FOUND, "model '%s': neither a preset nor a readable model file",
                        name_or_path);
    }
    return arachne_model_load(out, name_or_path);
}
