/* policy.c -- the policy handle (create, load, save, info) and the policy
 * as a decision source for the construction loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_file.h"

void ar_policy_nn_config(ar_nn_config *cfg, int hidden, int layers)
{
    ar_nn_config_default(cfg);
    cfg->state_dim = AR_STATE_DIM;
    cfg->comp_dim = AR_STATE_COMP;
    cfg->cand_dim = AR_STATE_CAND;
    cfg->max_depth_cands = AR_SEARCH_MAX_DEPTH + 1;
    cfg->max_type_cands = AR_MAX_TYPES;
    cfg->n_tp = AR_POLICY_TP;
    if (hidden > 0) cfg->hidden = hidden;
    if (layers > 0) cfg->layers = layers;
}

int arachne_policy_create(arachne_policy **out, uint64_t seed, int hidden, int layers)
{
    arachne_policy *p;
    ar_nn_config cfg;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_policy_create: out is NULL");
    *out = NULL;
    if (hidden < 0 || hidden > AR_NN_MAX_DIM || layers < 0 || layers > AR_NN_MAX_LAYERS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "arachne_policy_create: hidden %d (0..%d) or layers %d (0..%d) out of range", hidden,
                        AR_NN_MAX_DIM, layers, AR_NN_MAX_LAYERS);
    ar_policy_nn_config(&cfg, hidden, layers);
    p = ar_calloc(1, sizeof *p);
    if (!p) return ARACHNE_E_NO_MEMORY;
    p->meta = ar_strdup("");
    if (!p->meta) { free(p); return ARACHNE_E_NO_MEMORY; }
    st = ar_nn_create(&p->nn, &cfg, seed);
    if (st) { arachne_policy_destroy(p); return st; }
    *out = p;
    return ARACHNE_OK;
}

void arachne_policy_destroy(arachne_policy *p)
{
    if (!p) return;
    ar_nn_destroy(p->nn);
    free(p->meta);
    free(p);
}

int arachne_policy_load(arachne_policy **out, const char *path)
{
    arachne_policy *p;
    int st;
    if (!out || !path) return AR_NULL_ARG("arachne_policy_load", out, path);
    *out = NULL;
    p = ar_calloc(1, sizeof *p);
    if (!p) return ARACHNE_E_NO_MEMORY;
    st = ar_policy_load(&p->nn, path, AR_STATE_VERSION, NULL, &p->meta);
    if (st) { free(p); return st; }
    *out = p;
    return ARACHNE_OK;
}

int arachne_policy_save(const arachne_policy *p, const char *path)
{
    if (!p || !path) return AR_NULL_ARG("arachne_policy_save", p, path);
    return ar_policy_save(path, p->nn, AR_STATE_VERSION, p->meta[0] ? p->meta : NULL);
}

int arachne_policy_set_metadata(arachne_policy *p, const char *json)
{
    char *m;
    int st;
    if (!p || !json) return AR_NULL_ARG("arachne_policy_set_metadata", p, json);
    /* refused here, where the mistake is, rather than by the next save */
    if ((st = ar_policy_check_meta((const unsigned char *)json, strlen(json), "arachne_policy_set_metadata:",
                                   ARACHNE_E_INVALID_ARGUMENT)))
        return st;
    m = ar_strdup(json);
    if (!m) return ARACHNE_E_NO_MEMORY;
    free(p->meta);
    p->meta = m;
    return ARACHNE_OK;
}

int arachne_policy_metadata(const arachne_policy *p, const char **out)
{
    if (!p || !out) return AR_NULL_ARG("arachne_policy_metadata", p, out);
    *out = p->meta;
    return ARACHNE_OK;
}

int arachne_policy_info(const arachne_policy *p, int field, double *out)
{
    const ar_nn_config *c;
    if (!p || !out) return AR_NULL_ARG("arachne_policy_info", p, out);
    c = ar_nn_get_config(p->nn);
    switch (field) {
    case ARACHNE_POLICY_PARAMS: *out = (double)ar_nn_param_count(p->nn); break;
    case ARACHNE_POLICY_HIDDEN: *out = c->hidden; break;
    case ARACHNE_POLICY_LAYERS: *out = c->layers; break;
    case ARACHNE_POLICY_STATE_DIM: *out = c->state_dim; break;
    case ARACHNE_POLICY_COMP_DIM: *out = c->comp_dim; break;
    case ARACHNE_POLICY_SCHEMA_VERSION: *out = AR_STATE_VERSION; break;
    case ARACHNE_POLICY_TRAIN_STEPS: *out = (double)ar_nn_adam_steps(p->nn); break;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_policy_info: unknown field %d", field);
    }
    return ARACHNE_OK;
}

/* ---- decision source ------------------------------------------------- */

int ar_policy_src_init(ar_policy_src *s, const ar_nn *nn, const arachne_cost_model *cm, uint64_t seed,
                       int greedy, int record)
{
    int st;
    memset(s, 0, sizeof *s);
    s->nn = nn;
    st = ar_state_static_init(&s->st, cm);
    if (st) return st;
    st = ar_nn_ws_create(&s->ws, nn);
    if (st) return st;
    s->record = record;
    ar_policy_src_reset(s, seed, greedy, NULL);
    return ARACHNE_OK;
}

void ar_policy_src_reset(ar_policy_src *s, uint64_t seed, int greedy, const ar_explore *ex)
{
    ar_rng_seed(&s->rng, seed);
    s->greedy = greedy;
    s->force_depth = 0;
    s->uniform_types = 0;
    s->teach = NULL;
    s->teach_user = NULL;
    if (ex) {
        s->force_depth = ex->force_depth_p > 0 && ar_rng_uniform(&s->rng) < ex->force_depth_p;
        s->uniform_types = ex->uniform_types;
    }
    s->nrecs = 0;
    s->pool_len = 0;
    s->masks_len = 0;
    ar_nn_ws_reset(s->ws);
    /* s->nn is fixed during a rollout (training updates it between them):
     * its FiLM output is computed once per rollout */
    ar_nn_ws_keep_film(s->ws, 1);
}

void ar_policy_src_free(ar_policy_src *s)
{
    ar_nn_ws_destroy(s->ws);
    free(s->recs);
    free(s->pool);
    free(s->masks);
    memset(s, 0, sizeof *s);
}

static int pool_reserve(ar_policy_src *s, size_t more_d, size_t more_m)
{
    if (s->pool_len + more_d > s->pool_cap) {
        size_t cap = s->pool_cap ? s->pool_cap : 4096;
        double *p;
        while (cap < s->pool_len + more_d) cap *= 2;
        p = ar_realloc(s->pool, cap * sizeof *p);
        if (!p) return ARACHNE_E_NO_MEMORY;
        s->pool = p;
        s->pool_cap = cap;
    }
    if (s->masks_len + more_m > s->masks_cap) {
        size_t cap = s->masks_cap ? s->masks_cap : 1024;
        unsigned char *m;
        while (cap < s->masks_len + more_m) cap *= 2;
        m = ar_realloc(s->masks, cap);
        if (!m) return ARACHNE_E_NO_MEMORY;
        s->masks = m;
        s->masks_cap = cap;
    }
    if (s->nrecs == s->cap_recs) {
        int cap = s->cap_recs ? 2 * s->cap_recs : 64;
        ar_decision_rec *r = ar_realloc(s->recs, (size_t)cap * sizeof *r);
        if (!r) return ARACHNE_E_NO_MEMORY;
        s->recs = r;
        s->cap_recs = cap;
    }
    return ARACHNE_OK;
}

/* Uniform draw among the allowed entries. */
static int draw_uniform(ar_rng *rng, const unsigned char *mask, int K)
{
    int i, n = 0, k;
    for (i = 0; i < K; i++) n += mask[i] != 0;
    k = ar_rng_int(rng, n);
    for (i = 0; i < K; i++)
        if (mask[i] && k-- == 0) return i;
    return -1;
}

void ar_policy_construct_opts(ar_construct_opts *o)
{
    ar_construct_opts_default(o);
    o->replica_first = 1; /* feature schema 6 */
}

int ar_policy_decide(void *user, const ar_dec_ctx *ctx, int *choice)
{
    ar_policy_src *s = user;
    double x[AR_STATE_DIM], cand[(AR_SEARCH_MAX_DEPTH + 1) * AR_STATE_CAND], logp[AR_SEARCH_MAX_DEPTH + 1];
    unsigned char mask[AR_SEARCH_MAX_DEPTH + 1];
    int K, head, rec, i, pick = -1, forced = 0, has_cand;
    if (ctx->n > AR_SEARCH_MAX_DEPTH + 1 || ctx->n < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "policy: decision with %d choices", ctx->n);
    /* the replica count is scored by the depth head, on candidate rows of its own */
    head = ctx->kind == AR_DEC_DEPTH || ctx->kind == AR_DEC_REPLICAS ? AR_HEAD_DEPTH
         : ctx->kind == AR_DEC_TYPE ? AR_HEAD_DEVICE : AR_HEAD_TP;
    has_cand = head != AR_HEAD_TP;
    K = head == AR_HEAD_TP ? AR_POLICY_TP : ctx->n;
    if (head == AR_HEAD_TP && ctx->n > AR_POLICY_TP)
        return ar_error(ARACHNE_E_UNSUPPORTED, "policy: %d TP options exceed the policy's %d", ctx->n, AR_POLICY_TP);
    memset(mask, 0, sizeof mask);
    for (i = 0; i < ctx->n; i++) mask[i] = ctx->mask[i] != 0;
    ar_state_encode(&s->st, ctx, x, has_cand ? cand : NULL);
    rec = ar_nn_forward(s->nn, s->ws, (ar_head)head, x, s->st.comp, has_cand ? cand : NULL, K, mask, logp);
    if (rec < 0) return rec;
    /* Exploration rules replace the policy's draw with a uniform one; the
     * recorded log-probability is then the rule's (see below).  The forced
     * depth is the first template's: after it the policy decides, STOP
     * included, so the rollout shows what the policy makes of that start. */
    if (s->teach) {
        int st = s->teach(s->teach_user, ctx, &pick);
        if (st) return st;
        if (pick < 0 || pick >= ctx->n || !mask[pick])
            return ar_error(ARACHNE_E_INFEASIBLE, "policy: step %d: the taught choice %d is not allowed", ctx->step,
                            pick);
        forced = 1;
    } else if ((head == AR_HEAD_DEPTH && s->force_depth && ctx->step == 0) ||
               (head == AR_HEAD_DEVICE && s->uniform_types)) {
        pick = draw_uniform(&s->rng, mask, K);
        forced = 1;
    } else if (s->greedy) {
        double best = -INFINITY;
        for (i = 0; i < K; i++)
            if (mask[i] && logp[i] > best) { best = logp[i]; pick = i; }
    } else {
        double u = ar_rng_uniform(&s->rng), acc = 0;
        for (i = 0; i < K; i++) {
            if (!mask[i]) continue;
            acc += exp(logp[i]);
            pick = i;
            if (u < acc) break;
        }
    }
    if (pick < 0) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "policy: no allowed choice");
    *choice = pick;
    if (s->record) {
        ar_decision_rec *r;
        size_t nd = AR_STATE_DIM + AR_STATE_COMP + (has_cand ? (size_t)K * AR_STATE_CAND : 0);
        int st = pool_reserve(s, nd, (size_t)K);
        if (st) return st;
        r = &s->recs[s->nrecs++];
        r->head = head;
        r->K = K;
        r->choice = pick;
        /* The behaviour log-probability: PPO's ratio pi_new / pi_behaviour
         * is then an importance weight, so a choice an exploration rule
         * drew uniformly counts as much as the policy would have drawn it. */
        r->logp = forced ? -log((double)ctx->nallowed) : logp[pick];
        r->step = ctx->step;
        r->forced = forced;
        r->x_off = s->pool_len;
        memcpy(s->pool + s->pool_len, x, sizeof x);
        s->pool_len += AR_STATE_DIM;
        r->c_off = s->pool_len;
        memcpy(s->pool + s->pool_len, s->st.comp, sizeof s->st.comp);
        s->pool_len += AR_STATE_COMP;
        r->cand_off = (size_t)-1;
        if (has_cand) {
            r->cand_off = s->pool_len;
            memcpy(s->pool + s->pool_len, cand, sizeof(double) * (size_t)K * AR_STATE_CAND);
            s->pool_len += (size_t)K * AR_STATE_CAND;
        }
        r->mask_off = s->masks_len;
        memcpy(s->masks + s->masks_len, mask, (size_t)K);
        s->masks_len += (size_t)K;
    }
    /* The inputs are copied above; the tape is not needed afterwards
     * (training re-runs the forward pass with its current weights). */
    ar_nn_ws_reset(s->ws);
    return ARACHNE_OK;
}

/* Keeps a choice made in the script's log (when it has one). */
static int script_log(ar_policy_script *s, int choice)
{
    if (!s->taken) return ARACHNE_OK;
    if (s->ntaken >= s->cap_taken)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "policy: construction ran past %d decisions", s->cap_taken);
    s->taken[s->ntaken++] = choice;
    return ARACHNE_OK;
}

int ar_policy_script_decide(void *user, const ar_dec_ctx *ctx, int *choice)
{
    ar_policy_script *s = user;
    int st;
    if (s->idx < s->n) {
        *choice = s->choices[s->idx++];
        return script_log(s, *choice);
    }
    if (s->capture) {
        st = ar_policy_decide(s->src, ctx, &s->policy_choice);
        if (st != ARACHNE_OK) return st;
        s->nopt = ctx->n;
        memcpy(s->mask, ctx->mask, (size_t)ctx->n);
        return AR_POLICY_SCRIPT_STOP;
    }
    s->idx++;
    st = ar_policy_decide(s->src, ctx, choice);
    return st ? st : script_log(s, *choice);
}
