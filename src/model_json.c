/* model_json.c -- the "arachne-model" JSON format: writer, save, to_json.
 * Schema in docs/formats.md ("Model"). */
#include <stdlib.h>
#include <string.h>

#include "model.h"

static void put_name(ar_buf *b, const char *s)
{
    /* Names hold no control characters (ar_model_finish checks), so only
     * the quote and the backslash need escaping. */
    ar_buf_put(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') ar_buf_put(b, "\\", 1);
        ar_buf_put(b, s, 1);
    }
    ar_buf_put(b, "\"", 1);
}

static void put_int(ar_buf *b, const char *key, int v, int last)
{
    ar_buf_printf(b, "  \"%s\": %d%s\n", key, v, last ? "" : ",");
}

static void put_bool(ar_buf *b, const char *key, int v, int last)
{
    ar_buf_printf(b, "  \"%s\": %s%s\n", key, v ? "true" : "false", last ? "" : ",");
}

void ar_model_write_json(const arachne_model *m, ar_buf *b)
{
    ar_buf_puts(b, "{\n  \"format\": \"arachne-model\",\n  \"version\": 1,\n  \"name\": ");
    put_name(b, m->name);
    ar_buf_puts(b, ",\n");
    put_int(b, "blocks", m->blocks, 0);
    put_int(b, "hidden", m->hidden, 0);
    put_int(b, "heads", m->heads, 0);
    put_int(b, "kv_heads", m->kv_heads, 0);
    put_int(b, "head_dim", m->head_dim, 0);
    put_int(b, "ffn", m->ffn, 0);
    put_int(b, "vocab", m->vocab, 0);
    if (m->experts > 0) {
        put_int(b, "experts", m->experts, 0);
        put_int(b, "top_k", m->top_k, 0);
        put_int(b, "shared_experts", m->shared_experts, 0);
        put_int(b, "expert_ffn", m->expert_ffn, 0);
        put_int(b, "dense_prefix", m->dense_prefix, 0);
        if (m->expert_latent > 0) put_int(b, "expert_latent", m->expert_latent, 0);
    }
    put_bool(b, "qk_norm", m->qk_norm, 0);
    put_bool(b, "gated_mlp", m->gated_mlp, 0);
    put_bool(b, "tied_embeddings", m->tied_embeddings, !m->mla && !m->pattern[0]);
    if (m->mla)
        ar_buf_printf(b, "  \"mla\": {\"q_lora_rank\": %d, \"kv_lora_rank\": %d, \"qk_nope_dim\": %d, "
                         "\"qk_rope_dim\": %d, \"v_head_dim\": %d}%s\n",
                      m->q_lora_rank, m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim, m->v_head_dim,
                      m->pattern[0] ? "," : "");
    if (m->pattern[0]) {
        /* the pattern holds only M * - E (ar_model_finish checks): no escaping */
        ar_buf_printf(b, "  \"hybrid\": {\"pattern\": \"%s\"", m->pattern);
        if (m->mamba_heads > 0)
            ar_buf_printf(b, ", \"mamba_heads\": %d, \"mamba_head_dim\": %d, \"mamba_state\": %d, "
                             "\"mamba_groups\": %d, \"mamba_conv\": %d, \"mamba_chunk\": %d",
                          m->mamba_heads, m->mamba_head_dim, m->mamba_state, m->mamba_groups, m->mamba_conv,
                          m->mamba_chunk);
        ar_buf_puts(b, "}\n");
    }
    ar_buf_puts(b, "}\n");
}

int arachne_model_to_json(const arachne_model *m, const char **out)
{
    if (!m || !out) return AR_NULL_ARG("arachne_model_to_json", m, out);
    if (!m->json_cache)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "model '%s': no JSON text (the model was not created by an arachne_model_* constructor)",
                        m->name);
    *out = m->json_cache;
    return ARACHNE_OK;
}

int arachne_model_save(const arachne_model *m, const char *path)
{
    ar_buf b;
    int st;
    if (!m || !path) return AR_NULL_ARG("arachne_model_save", m, path);
    ar_buf_init(&b);
    ar_model_write_json(m, &b); /* into a local buffer: the model is not touched */
    st = ar_buf_status(&b);
    if (st == ARACHNE_OK) st = ar_write_file_atomic(path, b.data, b.len);
    ar_buf_free(&b);
    return st;
}
