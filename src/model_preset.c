/* model_preset.c -- the built-in model presets (architectures from the
 * models' published configuration files) and name lookup. */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Field order of struct arachne_model:
 * name, blocks, hidden, heads, kv_heads, head_dim, ffn, vocab,
 * experts, top_k, shared_experts, expert_ffn, dense_prefix,
 * gated_mlp, qk_norm, tied_embeddings,
 * mla, q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim,
 * pattern, mamba_heads, mamba_head_dim, mamba_state, mamba_groups, mamba_conv, mamba_chunk,
 * expert_latent
 * (then the derived fields, zero) */
static const arachne_model presets[] = {
    /* Meta-Llama-3-8B */
    { "llama3-8b", 32, 4096, 32, 8, 128, 14336, 128256,
      0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, "", 0, 0, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0, 0, {0}, {0}, NULL },
    /* Meta-Llama-3-70B (and 3.1-70B): 80 blocks, 64 heads, 8 KV heads */
    { "llama3-70b", 80, 8192, 64, 8, 128, 28672, 128256,
      0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, "", 0, 0, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0, 0, {0}, {0}, NULL },
    /* Qwen3-8B */
    { "qwen3-8b", 36, 4096, 32, 8, 128, 12288, 151936,
      0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, "", 0, 0, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0, 0, {0}, {0}, NULL },
    /* Qwen3-32B: 64 heads x 128 = 8192 != hidden 5120 */
    { "qwen3-32b", 64, 5120, 64, 8, 128, 25600, 151936,
      0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, "", 0, 0, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0, 0, {0}, {0}, NULL },
    /* Qwen3-64B of the paper: Qwen3-32B with 128 blocks */
    { "qwen3-64b", 128, 5120, 64, 8, 128, 25600, 151936,
      0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, "", 0, 0, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0, 0, {0}, {0}, NULL },
    /* Qwen3-30B-A3B: every block MoE, 128 experts top-8 */
    { "qwen3-30b-a3b", 48, 2048, 32, 4, 128, 0, 151936,
      128, 8, 0, 768, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, "", 0, 0, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0, 0, {0}, {0}, NULL },
    /* Mixtral-8x7B: every block MoE, 8 experts top-2 */
    { "mixtral-8x7b", 32, 4096, 32, 8, 128, 0, 32000,
      8, 2, 0, 14336, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, "", 0, 0, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0, 0, {0}, {0}, NULL },
    /* DeepSeek-V3 (MTP layer not counted): MLA, 3 dense blocks, then 256
     * routed experts top-8 + 1 shared */
    { "deepseek-v3", 61, 7168, 128, 128, 192, 18432, 129280,
      256, 8, 1, 2048, 3, 1, 0, 0, 1, 1536, 512, 128, 64, 128, "", 0, 0, 0, 0, 0, 0, 0, {0}, {0}, {0}, 0, 0, {0}, {0}, NULL },
};

const arachne_model *ar_model_preset_spec(const char *name)
{
    size_t i;
    if (!name) return NULL;
    for (i = 0; i < AR_COUNT(presets); i++)
        if (ar_strcasecmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

/* ASCII case-insensitive Levenshtein distance; 99 for names over 63 bytes. */
static int edit_distance(const char *a, const char *b)
{
    int row[64], i, j, la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    for (j = 0; j <= lb; j++) row[j] = j;
    for (i = 1; i <= la; i++) {
        int diag = row[0], ca = ascii_lower((unsigned char)a[i - 1]);
        row[0] = i;
        for (j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (ca != ascii_lower((unsigned char)b[j - 1]));
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

const char *ar_model_preset_suggest(const char *name)
{
    size_t i;
    int best = 99, limit;
    const char *pick = NULL;
    if (!name) return NULL;
    limit = (int)strlen(name) / 3;
    if (limit < 2) limit = 2;
    for (i = 0; i < AR_COUNT(presets); i++) {
        int d = edit_distance(name, presets[i].name);
        if (d < best) { best = d; pick = presets[i].name; }
    }
    return best <= limit ? pick : NULL;
}

int arachne_model_preset_count(void) { return (int)AR_COUNT(presets); }

const char *arachne_model_preset_name(int index)
{
    if (index < 0 || index >= (int)AR_COUNT(presets)) return NULL;
    return presets[index].name;
}

int arachne_model_preset(arachne_model **out, const char *name)
{
    const arachne_model *spec;
    if (out) *out = NULL;
    if (!out || !name) return AR_NULL_ARG("arachne_model_preset", out, name);
    spec = ar_model_preset_spec(name);
    if (!spec) {
        const char *near = ar_model_preset_suggest(name);
        if (near)
            return ar_error(ARACHNE_E_NOT_FOUND, "model preset '%.64s': no such preset; did you mean %s? (see arachne models)",
                            name, near);
        return ar_error(ARACHNE_E_NOT_FOUND, "model preset '%.64s': no such preset (see arachne models)", name);
    }
    return ar_model_create(out, spec);
}

