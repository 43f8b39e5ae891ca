/* nn.c -- the policy network: parameter layout, init, forward and backward
 * per layer, the decision tape.  Adam lives in nn_adam.c, the categorical
 * helpers in nn_cat.c.  See nn.h and docs/policy.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"
#include "nn_internal.h"
#include "util.h"

/* ------------------------------------------------------------------------ */
/* Config                                                                    */
/* ------------------------------------------------------------------------ */

void ar_nn_config_default(ar_nn_config *c)
{
    c->state_dim = 128;
    c->comp_dim = 16;
    c->cand_dim = 8;
    c->hidden = 128;
    c->layers = 2;
    c->film_hidden = 32;
    c->head_hidden = 64;
    c->max_depth_cands = 33;
    c->max_type_cands = 16;
    c->n_tp = 11;
}

static const char *const field_names[AR_NN_CONFIG_FIELDS] = {
    "state_dim", "comp_dim", "cand_dim", "hidden", "layers",
    "film_hidden", "head_hidden", "max_depth_cands", "max_type_cands", "n_tp"
};

void ar_nn_config_to_array(const ar_nn_config *c, int out[AR_NN_CONFIG_FIELDS])
{
    out[0] = c->state_dim;
    out[1] = c->comp_dim;
    out[2] = c->cand_dim;
    out[3] = c->hidden;
    out[4] = c->layers;
    out[5] = c->film_hidden;
    out[6] = c->head_hidden;
    out[7] = c->max_depth_cands;
    out[8] = c->max_type_cands;
    out[9] = c->n_tp;
}

void ar_nn_config_from_array(ar_nn_config *c, const int in[AR_NN_CONFIG_FIELDS])
{
    c->state_dim = in[0];
    c->comp_dim = in[1];
    c->cand_dim = in[2];
    c->hidden = in[3];
    c->layers = in[4];
    c->film_hidden = in[5];
    c->head_hidden = in[6];
    c->max_depth_cands = in[7];
    c->max_type_cands = in[8];
    c->n_tp = in[9];
}

int ar_nn_config_check(const ar_nn_config *c)
{
    int v[AR_NN_CONFIG_FIELDS], i;
    if (!c) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "network config: NULL");
    ar_nn_config_to_array(c, v);
    for (i = 0; i < AR_NN_CONFIG_FIELDS; i++)
        if (v[i] < 1 || v[i] > AR_NN_MAX_DIM)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "network config: %s = %d is outside 1..%d",
                            field_names[i], v[i], AR_NN_MAX_DIM);
    if (c->layers > AR_NN_MAX_LAYERS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "network config: layers = %d is outside 1..%d",
                        c->layers, AR_NN_MAX_LAYERS);
    if (c->n_tp > AR_NN_MAX_TP)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "network config: n_tp = %d is outside 1..%d",
                        c->n_tp, AR_NN_MAX_TP);
    return ARACHNE_OK;
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */
/* ------------------------------------------------------------------------ */

static void add_tensor(ar_nn_layout *lay, int *slot, const char *name, int rows, int cols, int decay)
{
    ar_nn_tensor *t = &lay->tensors[lay->count];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = lay->total;
    t->rows = rows;
    t->cols = cols;
    t->decay = decay;
    lay->total += (size_t)rows * (size_t)cols;
    *slot = lay->count++;
}

void ar_nn_layout_build(ar_nn_layout *lay, const ar_nn_config *c)
{
    int l, h, S = c->state_dim, C = c->comp_dim, F = c->cand_dim, H = c->hidden, L = c->layers;
    int FH = c->film_hidden, HH = c->head_hidden;
    char name[16];
    static const char *const head_names[2] = { "depth", "device" };
    memset(lay, 0, sizeof *lay);
    lay->film_out = 2 * (L * H + 3 * HH);
    for (l = 0; l < L; l++) {
        snprintf(name, sizeof name, "bb.%u.w", (unsigned)l % 10u); /* l < AR_NN_MAX_LAYERS */
        add_tensor(lay, &lay->bb_w[l], name, H, l == 0 ? S : H, 1);
        snprintf(name, sizeof name, "bb.%u.b", (unsigned)l % 10u);
        add_tensor(lay, &lay->bb_b[l], name, H, 1, 0);
    }
    add_tensor(lay, &lay->film_w1, "film.w1", FH, C, 1);
    add_tensor(lay, &lay->film_b1, "film.b1", FH, 1, 0);
    add_tensor(lay, &lay->film_w2, "film.w2", lay->film_out, FH, 1);
    add_tensor(lay, &lay->film_b2, "film.b2", lay->film_out, 1, 0);
    for (h = 0; h < 2; h++) {
        snprintf(name, sizeof name, "%s.w1h", head_names[h]);
        add_tensor(lay, &lay->c_w1h[h], name, HH, H, 1);
        snprintf(name, sizeof name, "%s.w1f", head_names[h]);
        add_tensor(lay, &lay->c_w1f[h], name, HH, F, 1);
        snprintf(name, sizeof name, "%s.b1", head_names[h]);
        add_tensor(lay, &lay->c_b1[h], name, HH, 1, 0);
        snprintf(name, sizeof name, "%s.w2", head_names[h]);
        add_tensor(lay, &lay->c_w2[h], name, HH, 1, 1);
        snprintf(name, sizeof name, "%s.b2", head_names[h]);
        add_tensor(lay, &lay->c_b2[h], name, 1, 1, 0);
        snprintf(name, sizeof name, "%s.wb", head_names[h]);
        add_tensor(lay, &lay->c_wb[h], name, F, H, 1);
        snprintf(name, sizeof name, "%s.wf", head_names[h]);
        add_tensor(lay, &lay->c_wf[h], name, F, 1, 0);
    }
    add_tensor(lay, &lay->tp_w1, "tp.w1", HH, H, 1);
    add_tensor(lay, &lay->tp_b1, "tp.b1", HH, 1, 0);
    add_tensor(lay, &lay->tp_w2, "tp.w2", c->n_tp, HH, 1);
    add_tensor(lay, &lay->tp_b2, "tp.b2", c->n_tp, 1, 0);
}

size_t ar_nn_config_param_count(const ar_nn_config *c)
{
    ar_nn_layout lay;
    ar_nn_layout_build(&lay, c);
    return lay.total;
}

/* ------------------------------------------------------------------------ */
/* Create / destroy                                                          */
/* ------------------------------------------------------------------------ */

static int nn_alloc(ar_nn **out, const ar_nn_config *cfg)
{
    ar_nn *n;
    int st = ar_nn_config_check(cfg);
    *out = NULL;
    if (st) return st;
    n = ar_calloc(1, sizeof *n);
    if (!n) return ARACHNE_E_NO_MEMORY;
    n->cfg = *cfg;
    ar_nn_layout_build(&n->lay, cfg);
    n->n_params = n->lay.total;
    n->mem = ar_calloc(n->n_params, 4 * sizeof(double));
    if (!n->mem) {
        free(n);
        return ARACHNE_E_NO_MEMORY;
    }
    n->p = n->mem;
    n->g = n->p + n->n_params;
    n->m = n->g + n->n_params;
    n->v = n->m + n->n_params;
    *out = n;
    return ARACHNE_OK;
}

static void init_normal(double *w, size_t count, double scale, ar_rng *r)
{
    size_t i;
    for (i = 0; i < count; i++) w[i] = scale * ar_rng_normal(r);
}

int ar_nn_create(ar_nn **out, const ar_nn_config *cfg, uint64_t seed)
{
    ar_nn *n;
    ar_rng r;
    int i, st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_nn_create: NULL out");
    *out = NULL;
    st = nn_alloc(&n, cfg);
    if (st) return st;
    ar_rng_seed(&r, seed);
    for (i = 0; i < n->lay.count; i++) {
        const ar_nn_tensor *t = &n->lay.tensors[i];
        double scale;
        if (!t->decay) continue; /* biases stay 0 */
        if (i == n->lay.film_w2) continue; /* FiLM starts as identity */
        if (i == n->lay.c_wb[0] || i == n->lay.c_wb[1]) continue; /* the direct path starts at 0 */
        scale = 1.0 / sqrt((double)t->cols);
        if (i == n->lay.c_w1h[0] || i == n->lay.c_w1f[0] || i == n->lay.c_w1h[1] || i == n->lay.c_w1f[1])
            scale = 1.0 / sqrt((double)(cfg->hidden + cfg->cand_dim)); /* fan-in of [h ; f] */
        if (i == n->lay.c_w2[0] || i == n->lay.c_w2[1])
            scale = 0.01 / sqrt((double)t->rows);
        if (i == n->lay.tp_w2) scale *= 0.01;
        init_normal(n->p + t->offset, (size_t)t->rows * (size_t)t->cols, scale, &r);
    }
    *out = n;
    return ARACHNE_OK;
}

void ar_nn_destroy(ar_nn *n)
{
    if (!n) return;
    free(n->mem);
    free(n);
}

int ar_nn_clone(ar_nn **out, const ar_nn *src)
{
    ar_nn *n;
    int st;
    if (!out || !src) return AR_NULL_ARG("ar_nn_clone", out, src);
    *out = NULL;
    st = nn_alloc(&n, &src->cfg);
    if (st) return st;
    memcpy(n->mem, src->mem, 4 * n->n_params * sizeof(double));
    n->t = src->t;
    *out = n;
    return ARACHNE_OK;
}

static int same_config(const ar_nn_config *a, const ar_nn_config *b)
{
    int x[AR_NN_CONFIG_FIELDS], y[AR_NN_CONFIG_FIELDS];
    ar_nn_config_to_array(a, x);
    ar_nn_config_to_array(b, y);
    return memcmp(x, y, sizeof x) == 0;
}

int ar_nn_copy_params(ar_nn *dst, const ar_nn *src)
{
    if (!dst || !src) return AR_NULL_ARG("ar_nn_copy_params", dst, src);
    if (!same_config(&dst->cfg, &src->cfg))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_nn_copy_params: networks have different sizes");
    if (dst != src) memcpy(dst->p, src->p, src->n_params * sizeof(double));
    return ARACHNE_OK;
}

const ar_nn_config *ar_nn_get_config(const ar_nn *n) { return &n->cfg; }
size_t ar_nn_param_count(const ar_nn *n) { return n->n_params; }
double *ar_nn_params(ar_nn *n) { return n->p; }
const double *ar_nn_params_const(const ar_nn *n) { return n->p; }
double *ar_nn_grads(ar_nn *n) { return n->g; }
void ar_nn_zero_grad(ar_nn *n) { memset(n->g, 0, n->n_params * sizeof(double)); }
int ar_nn_tensor_count(const ar_nn *n) { return n->lay.count; }

const ar_nn_tensor *ar_nn_tensor_at(const ar_nn *n, int i)
{
    return (i >= 0 && i < n->lay.count) ? &n->lay.tensors[i] : NULL;
}

const ar_nn_tensor *ar_nn_tensor_find(const ar_nn *n, const char *name)
{
    int i;
    for (i = 0; i < n->lay.count; i++)
        if (strcmp(n->lay.tensors[i].name, name) == 0) return &n->lay.tensors[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Workspace                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct nn_rec {
    int head, K;
    double *block;          /* one allocation holding every array below */
    unsigned char *mask;    /* Kmax */
    double *x, *c, *cand;   /* inputs: S, C, Kmax*F */
    double *g;              /* FiLM generator hidden (post tanh): FH */
    double *fo;             /* FiLM output: film_out */
    double *z, *a;          /* backbone pre-FiLM / post-activation: L*H each */
    double *zh;             /* candidate heads: W1h h + b1; TP: pre-FiLM hidden (HH) */
    double *hz, *ha;        /* candidate heads: per-candidate pre-FiLM / post (Kmax*HH); TP: ha[0..HH) */
    double *logits, *logp, *probs; /* Kmax each */
    double *cv;             /* candidate heads: v = Wb h + wf (F) */
} nn_rec;

struct ar_nn_ws {
    ar_nn_config cfg;
    ar_nn_layout lay;
    int kmax;
    size_t rec_doubles;
    nn_rec *recs;
    int used, cap;
    double *scratch;        /* backward: dfo, dh, dcur, dnext, dzh, dlog (Kmax), dv (F) */
    /* ar_nn_ws_keep_film: the FiLM generator's last output (g, fo) for the
     * composition vector film_c and network film_nn (valid: film_valid) */
    int film_keep, film_valid;
    const ar_nn *film_nn;
    double *film_c, *film_g, *film_fo; /* C, FH, film_out: one block at film_c */
};

static int kmax_of(const ar_nn_config *c)
{
    int k = AR_MAX(c->max_depth_cands, c->max_type_cands);
    return AR_MAX(k, c->n_tp);
}

int ar_nn_ws_create(ar_nn_ws **out, const ar_nn *n)
{
    ar_nn_ws *ws;
    const ar_nn_config *c;
    size_t S, C, F, H, L, FH, HH, K, wide;
    if (!out || !n) return AR_NULL_ARG("ar_nn_ws_create", out, n);
    *out = NULL;
    c = &n->cfg;
    ws = ar_calloc(1, sizeof *ws);
    if (!ws) return ARACHNE_E_NO_MEMORY;
    ws->cfg = *c;
    ws->lay = n->lay;
    ws->kmax = kmax_of(c);
    S = (size_t)c->state_dim; C = (size_t)c->comp_dim; F = (size_t)c->cand_dim; H = (size_t)c->hidden;
    L = (size_t)c->layers; FH = (size_t)c->film_hidden; HH = (size_t)c->head_hidden; K = (size_t)ws->kmax;
    ws->rec_doubles = S + C + K * F + FH + (size_t)n->lay.film_out + 2 * L * H + HH + 2 * K * HH + 3 * K + F;
    wide = AR_MAX(AR_MAX(H, HH), FH);
    ws->scratch = ar_calloc((size_t)n->lay.film_out + H + 2 * wide + HH + K + F, sizeof(double));
    ws->film_c = ar_calloc(C + FH + (size_t)n->lay.film_out, sizeof(double));
    if (!ws->scratch || !ws->film_c) {
        free(ws->scratch);
        free(ws->film_c);
        free(ws);
        return ARACHNE_E_NO_MEMORY;
    }
    ws->film_g = ws->film_c + C;
    ws->film_fo = ws->film_g + FH;
    *out = ws;
    return ARACHNE_OK;
}

void ar_nn_ws_destroy(ar_nn_ws *ws)
{
    int i;
    if (!ws) return;
    for (i = 0; i < ws->cap; i++) {
        free(ws->recs[i].block);
        free(ws->recs[i].mask);
    }
    free(ws->recs);
    free(ws->scratch);
    free(ws->film_c);
    free(ws);
}

void ar_nn_ws_reset(ar_nn_ws *ws)
{
    if (ws) ws->used = 0;
}

void ar_nn_ws_keep_film(ar_nn_ws *ws, int on)
{
    if (!ws) return;
    ws->film_keep = on != 0;
    ws->film_valid = 0;
}

int ar_nn_ws_count(const ar_nn_ws *ws) { return ws ? ws->used : 0; }

static int rec_init(ar_nn_ws *ws, nn_rec *r)
{
    const ar_nn_config *c = &ws->cfg;
    size_t K = (size_t)ws->kmax, HH = (size_t)c->head_hidden, LH = (size_t)c->layers * (size_t)c->hidden;
    double *p;
    memset(r, 0, sizeof *r);
    r->block = ar_malloc(ws->rec_doubles * sizeof(double));
    r->mask = ar_malloc(K);
    if (!r->block || !r->mask) {
        free(r->block);
        free(r->mask);
        r->block = NULL;
        r->mask = NULL;
        return ARACHNE_E_NO_MEMORY;
    }
    p = r->block;
    r->x = p; p += c->state_dim;
    r->c = p; p += c->comp_dim;
    r->cand = p; p += K * (size_t)c->cand_dim;
    r->g = p; p += c->film_hidden;
    r->fo = p; p += ws->lay.film_out;
    r->z = p; p += LH;
    r->a = p; p += LH;
    r->zh = p; p += HH;
    r->hz = p; p += K * HH;
    r->ha = p; p += K * HH;
    r->logits = p; p += K;
    r->logp = p; p += K;
    r->probs = p; p += K;
    r->cv = p;
    return ARACHNE_OK;
}

/* Returns a fresh record on the tape, or NULL (no memory). */
static nn_rec *ws_push(ar_nn_ws *ws)
{
    if (ws->used == ws->cap) {
        int ncap = ws->cap ? 2 * ws->cap : 8;
        nn_rec *nr = ar_realloc(ws->recs, (size_t)ncap * sizeof *nr);
        int i;
        if (!nr) return NULL;
        ws->recs = nr;
        for (i = ws->cap; i < ncap; i++) {
            if (rec_init(ws, &nr[i]) != ARACHNE_OK) {
                ws->cap = i;
                return ws->used < ws->cap ? &ws->recs[ws->used++] : NULL;
            }
        }
        ws->cap = ncap;
    }
    return &ws->recs[ws->used++];
}

static const nn_rec *ws_rec(const ar_nn_ws *ws, int rec)
{
    if (!ws || rec < 0 || rec >= ws->used) return NULL;
    return &ws->recs[rec];
}

int ar_nn_ws_k(const ar_nn_ws *ws, int rec)
{
    const nn_rec *r = ws_rec(ws, rec);
    return r ? r->K : 0;
}
const double *ar_nn_ws_logits(const ar_nn_ws *ws, int rec)
{
    const nn_rec *r = ws_rec(ws, rec);
    return r ? r->logits : NULL;
}
const double *ar_nn_ws_logp(const ar_nn_ws *ws, int rec)
{
    const nn_rec *r = ws_rec(ws, rec);
    return r ? r->logp : NULL;
}
const double *ar_nn_ws_probs(const ar_nn_ws *ws, int rec)
{
    const nn_rec *r = ws_rec(ws, rec);
    return r ? r->probs : NULL;
}
const unsigned char *ar_nn_ws_mask(const ar_nn_ws *ws, int rec)
{
    const nn_rec *r = ws_rec(ws, rec);
    return r ? r->mask : NULL;
}

/* ------------------------------------------------------------------------ */
/* Layer kernels                                                             */
/* ------------------------------------------------------------------------ */

/* y = W x + b (b may be NULL); W is rows x cols row-major.  Four partial
 * sums in a fixed order (so the compiler may keep them in flight at once);
 * the result depends only on the sizes, never on threads. */
static void linear_forward(double *y, const double *W, const double *b, const double *x, int rows, int cols)
{
    int i, j;
    for (i = 0; i < rows; i++) {
        const double *w = W + (size_t)i * (size_t)cols;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (j = 0; j + 4 <= cols; j += 4) {
            s0 += w[j] * x[j];
            s1 += w[j + 1] * x[j + 1];
            s2 += w[j + 2] * x[j + 2];
            s3 += w[j + 3] * x[j + 3];
        }
        for (; j < cols; j++) s0 += w[j] * x[j];
        y[i] = (b ? b[i] : 0.0) + ((s0 + s1) + (s2 + s3));
    }
}

/* dW += dy x^T, db += dy (db may be NULL), dx += W^T dy (dx may be NULL). */
static void linear_backward(double *dW, double *db, double *dx, const double *W, const double *x,
                            const double *dy, int rows, int cols)
{
    int i, j;
    for (i = 0; i < rows; i++) {
        double d = dy[i];
        double *dw = dW + (size_t)i * (size_t)cols;
        if (db) db[i] += d;
        if (d == 0.0) continue;
        for (j = 0; j < cols; j++) dw[j] += d * x[j];
        if (dx) {
            const double *w = W + (size_t)i * (size_t)cols;
            for (j = 0; j < cols; j++) dx[j] += w[j] * d;
        }
    }
}

/* a = tanh(gamma * z + beta), gamma = 1 + dgamma. */
static void film_tanh_forward(double *a, const double *z, const double *dgamma, const double *beta, int n)
{
    int i;
    for (i = 0; i < n; i++) a[i] = tanh((1.0 + dgamma[i]) * z[i] + beta[i]);
}

/* From da: ddgamma += du*z, dbeta += du, dz = du*gamma (dz overwritten). */
static void film_tanh_backward(double *dz, double *ddgamma, double *dbeta, const double *da, const double *a,
                               const double *z, const double *dgamma, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        double du = da[i] * (1.0 - a[i] * a[i]);
        ddgamma[i] += du * z[i];
        dbeta[i] += du;
        dz[i] = du * (1.0 + dgamma[i]);
    }
}

static void tanh_forward(double *a, const double *z, int n)
{
    int i;
    for (i = 0; i < n; i++) a[i] = tanh(z[i]);
}

/* Offset of FiLM site s's dgamma in the FiLM output (beta follows at +size). */
static size_t film_site(const ar_nn_config *c, int site, int *size)
{
    int L = c->layers, H = c->hidden, HH = c->head_hidden;
    if (site < L) {
        *size = H;
        return 2 * (size_t)site * (size_t)H;
    }
    *size = HH;
    return 2 * ((size_t)L * (size_t)H + (size_t)(site - L) * (size_t)HH);
}

#define P(idx) (n->p + n->lay.tensors[(idx)].offset)
#define G(idx) (grad + n->lay.tensors[(idx)].offset)

static int all_finite(const double *v, size_t count)
{
    size_t i;
    for (i = 0; i < count; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Forward                                                                   */
/* ------------------------------------------------------------------------ */

int ar_nn_forward(const ar_nn *n, ar_nn_ws *ws, ar_head head, const double *x, const double *c,
                  const double *cand, int K, const unsigned char *mask, double *logp_out)
{
    const ar_nn_config *cfg;
    nn_rec *r;
    int S, C, F, H, L, HH, FH, l, k, kmax_head, st, any = 0, site_size;
    size_t so;
    const double *in;
    if (!n || !ws || !x || !c) return AR_NULL_ARG("nn forward", n, ws, x, c);
    cfg = &n->cfg;
    if (!same_config(cfg, &ws->cfg))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn forward: workspace belongs to a network of other sizes");
    S = cfg->state_dim; C = cfg->comp_dim; F = cfg->cand_dim; H = cfg->hidden; L = cfg->layers;
    HH = cfg->head_hidden; FH = cfg->film_hidden;
    switch (head) {
    case AR_HEAD_DEPTH: kmax_head = cfg->max_depth_cands; break;
    case AR_HEAD_DEVICE: kmax_head = cfg->max_type_cands; break;
    case AR_HEAD_TP: kmax_head = cfg->n_tp; break;
    default: return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn forward: unknown head %d", (int)head);
    }
    if (head == AR_HEAD_TP ? K != cfg->n_tp : (K < 1 || K > kmax_head))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn forward: head %d: %d candidates (allowed %s%d)",
                        (int)head, K, head == AR_HEAD_TP ? "exactly " : "1..", kmax_head);
    if (head != AR_HEAD_TP && !cand)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn forward: head %d needs candidate features", (int)head);
    for (k = 0; k < K; k++) {
        int valid = mask ? mask[k] != 0 : 1;
        if (valid && head != AR_HEAD_TP && !all_finite(cand + (size_t)k * (size_t)F, (size_t)F))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn forward: candidate %d has a non-finite feature", k);
        any |= valid;
    }
    if (!any) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn forward: every one of %d candidates is masked", K);
    if (!all_finite(x, (size_t)S))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn forward: state vector has a non-finite entry");
    if (!all_finite(c, (size_t)C))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn forward: composition vector has a non-finite entry");

    r = ws_push(ws);
    if (!r) return ARACHNE_E_NO_MEMORY;
    r->head = (int)head;
    r->K = K;
    memcpy(r->x, x, (size_t)S * sizeof(double));
    memcpy(r->c, c, (size_t)C * sizeof(double));
    for (k = 0; k < K; k++) r->mask[k] = (unsigned char)(mask ? mask[k] != 0 : 1);
    if (head != AR_HEAD_TP) {
        for (k = 0; k < K; k++) {
            double *dst = r->cand + (size_t)k * (size_t)F;
            if (r->mask[k]) memcpy(dst, cand + (size_t)k * (size_t)F, (size_t)F * sizeof(double));
            else memset(dst, 0, (size_t)F * sizeof(double));
        }
    }

    /* FiLM generator (kept across forwards: ar_nn_ws_keep_film) */
    if (ws->film_keep && ws->film_valid && ws->film_nn == n && !memcmp(ws->film_c, r->c, (size_t)C * sizeof(double))) {
        memcpy(r->g, ws->film_g, (size_t)FH * sizeof(double));
        memcpy(r->fo, ws->film_fo, (size_t)n->lay.film_out * sizeof(double));
    } else {
        linear_forward(r->g, P(n->lay.film_w1), P(n->lay.film_b1), r->c, FH, C);
        tanh_forward(r->g, r->g, FH);
        linear_forward(r->fo, P(n->lay.film_w2), P(n->lay.film_b2), r->g, n->lay.film_out, FH);
        if (ws->film_keep) {
            memcpy(ws->film_c, r->c, (size_t)C * sizeof(double));
            memcpy(ws->film_g, r->g, (size_t)FH * sizeof(double));
            memcpy(ws->film_fo, r->fo, (size_t)n->lay.film_out * sizeof(double));
            ws->film_nn = n;
            ws->film_valid = 1;
        }
    }

    /* backbone */
    in = r->x;
    for (l = 0; l < L; l++) {
        double *z = r->z + (size_t)l * (size_t)H, *a = r->a + (size_t)l * (size_t)H;
        so = film_site(cfg, l, &site_size);
        linear_forward(z, P(n->lay.bb_w[l]), P(n->lay.bb_b[l]), in, H, l == 0 ? S : H);
        film_tanh_forward(a, z, r->fo + so, r->fo + so + site_size, H);
        in = a;
    }
    /* in = h */

    if (head != AR_HEAD_TP) {
        int hi = (int)head; /* 0 depth, 1 device */
        const double *w1f = P(n->lay.c_w1f[hi]), *w2 = P(n->lay.c_w2[hi]), *b2 = P(n->lay.c_b2[hi]);
        so = film_site(cfg, L + hi, &site_size);
        linear_forward(r->zh, P(n->lay.c_w1h[hi]), P(n->lay.c_b1[hi]), in, HH, H);
        /* the direct path: per-state weights on the candidate features,
         * linear in them (no tanh to saturate), so a feature that ranks the
         * candidates can be used as soon as it is learned */
        linear_forward(r->cv, P(n->lay.c_wb[hi]), P(n->lay.c_wf[hi]), in, F, H);
        for (k = 0; k < K; k++) {
            double *zk = r->hz + (size_t)k * (size_t)HH, *ak = r->ha + (size_t)k * (size_t)HH;
            const double *fk = r->cand + (size_t)k * (size_t)F;
            double s;
            int j;
            if (!r->mask[k]) {
                r->logits[k] = -INFINITY;
                continue;
            }
            linear_forward(zk, w1f, r->zh, fk, HH, F); /* zh already holds W1h h + b1 */
            film_tanh_forward(ak, zk, r->fo + so, r->fo + so + site_size, HH);
            s = b2[0];
            for (j = 0; j < HH; j++) s += w2[j] * ak[j];
            for (j = 0; j < F; j++) s += r->cv[j] * fk[j];
            r->logits[k] = s;
        }
    } else {
        so = film_site(cfg, L + 2, &site_size);
        linear_forward(r->zh, P(n->lay.tp_w1), P(n->lay.tp_b1), in, HH, H);
        film_tanh_forward(r->ha, r->zh, r->fo + so, r->fo + so + site_size, HH);
        linear_forward(r->logits, P(n->lay.tp_w2), P(n->lay.tp_b2), r->ha, K, HH);
        for (k = 0; k < K; k++)
            if (!r->mask[k]) r->logits[k] = -INFINITY;
    }
    st = ar_cat_eval(r->logits, r->mask, K, r->logp, r->probs, NULL);
    if (st) {
        ws->used--;
        return ar_error(st, "nn forward: non-finite logits (parameters diverged?)");
    }
    if (logp_out) memcpy(logp_out, r->logp, (size_t)K * sizeof(double));
    return ws->used - 1;
}

/* ------------------------------------------------------------------------ */
/* Backward                                                                  */
/* ------------------------------------------------------------------------ */

/* Offset of dlog in the scratch (after dfo, dh, dcur, dnext, dzh); dv
 * follows it, Kmax doubles later. */
static size_t scratch_dlog_off(const ar_nn_ws *ws)
{
    return (size_t)ws->lay.film_out + (size_t)ws->cfg.hidden +
           2 * (size_t)AR_MAX(AR_MAX(ws->cfg.hidden, ws->cfg.head_hidden), ws->cfg.film_hidden) +
           (size_t)ws->cfg.head_hidden;
}

int ar_nn_backward_into(const ar_nn *n, ar_nn_ws *ws, int rec, const double *dlogits, double *grad)
{
    const ar_nn_config *cfg;
    const nn_rec *r;
    double *dfo, *dh, *dcur, *dnext, *dzh, *dv;
    const double *h;
    int S, C, F, H, L, HH, FH, l, k, K, site_size;
    size_t so, wide;
    if (!n || !ws || !dlogits || !grad) return AR_NULL_ARG("nn backward", n, ws, dlogits, grad);
    cfg = &n->cfg;
    if (!same_config(cfg, &ws->cfg))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn backward: workspace belongs to a network of other sizes");
    r = ws_rec(ws, rec);
    if (!r) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn backward: no record %d on the tape (%d)", rec, ws->used);
    S = cfg->state_dim; C = cfg->comp_dim; F = cfg->cand_dim; H = cfg->hidden; L = cfg->layers;
    HH = cfg->head_hidden; FH = cfg->film_hidden; K = r->K;
    wide = (size_t)AR_MAX(AR_MAX(H, HH), FH);
    dfo = ws->scratch;
    dh = dfo + n->lay.film_out;
    dcur = dh + H;
    dnext = dcur + wide;
    dzh = dnext + wide;
    dv = ws->scratch + scratch_dlog_off(ws) + (size_t)ws->kmax;
    memset(dfo, 0, (size_t)n->lay.film_out * sizeof(double));
    memset(dh, 0, (size_t)H * sizeof(double));
    h = r->a + (size_t)(L - 1) * (size_t)H;

    if (r->head != AR_HEAD_TP) {
        int hi = r->head, j;
        const double *w2 = P(n->lay.c_w2[hi]), *dgam;
        double *gw2 = G(n->lay.c_w2[hi]), *gb2 = G(n->lay.c_b2[hi]), *gw1f = G(n->lay.c_w1f[hi]);
        double *ddg, *dbt;
        so = film_site(cfg, L + hi, &site_size);
        dgam = r->fo + so;
        ddg = dfo + so;
        dbt = dfo + so + site_size;
        memset(dzh, 0, (size_t)HH * sizeof(double));
        memset(dv, 0, (size_t)F * sizeof(double));
        for (k = 0; k < K; k++) {
            const double *zk = r->hz + (size_t)k * (size_t)HH, *ak = r->ha + (size_t)k * (size_t)HH;
            const double *fk = r->cand + (size_t)k * (size_t)F;
            double ds;
            if (!r->mask[k]) continue;
            ds = dlogits[k];
            if (ds == 0.0) continue;
            gb2[0] += ds;
            for (j = 0; j < F; j++) dv[j] += ds * fk[j];
            for (j = 0; j < HH; j++) {
                gw2[j] += ds * ak[j];
                dcur[j] = ds * w2[j];
            }
            film_tanh_backward(dcur, ddg, dbt, dcur, ak, zk, dgam, HH);
            linear_backward(gw1f, NULL, NULL, NULL, r->cand + (size_t)k * (size_t)F, dcur, HH, F);
            for (j = 0; j < HH; j++) dzh[j] += dcur[j];
        }
        linear_backward(G(n->lay.c_w1h[hi]), G(n->lay.c_b1[hi]), dh, P(n->lay.c_w1h[hi]), h, dzh, HH, H);
        linear_backward(G(n->lay.c_wb[hi]), G(n->lay.c_wf[hi]), dh, P(n->lay.c_wb[hi]), h, dv, F, H);
    } else {
        so = film_site(cfg, L + 2, &site_size);
        memset(dcur, 0, (size_t)HH * sizeof(double));
        for (k = 0; k < K; k++) {
            const double *w = P(n->lay.tp_w2) + (size_t)k * (size_t)HH;
            double *gw = G(n->lay.tp_w2) + (size_t)k * (size_t)HH, d;
            int j;
            if (!r->mask[k]) continue;
            d = dlogits[k];
            G(n->lay.tp_b2)[k] += d;
            if (d == 0.0) continue;
            for (j = 0; j < HH; j++) {
                gw[j] += d * r->ha[j];
                dcur[j] += w[j] * d;
            }
        }
        film_tanh_backward(dcur, dfo + so, dfo + so + site_size, dcur, r->ha, r->zh, r->fo + so, HH);
        linear_backward(G(n->lay.tp_w1), G(n->lay.tp_b1), dh, P(n->lay.tp_w1), h, dcur, HH, H);
    }

    for (l = L - 1; l >= 0; l--) {
        const double *z = r->z + (size_t)l * (size_t)H, *a = r->a + (size_t)l * (size_t)H;
        const double *in = l == 0 ? r->x : r->a + (size_t)(l - 1) * (size_t)H;
        so = film_site(cfg, l, &site_size);
        film_tanh_backward(dcur, dfo + so, dfo + so + site_size, dh, a, z, r->fo + so, H);
        if (l > 0) {
            memset(dh, 0, (size_t)H * sizeof(double));
            linear_backward(G(n->lay.bb_w[l]), G(n->lay.bb_b[l]), dh, P(n->lay.bb_w[l]), in, dcur, H, H);
        } else {
            linear_backward(G(n->lay.bb_w[0]), G(n->lay.bb_b[0]), NULL, NULL, in, dcur, H, S);
        }
    }

    /* FiLM generator */
    memset(dnext, 0, (size_t)FH * sizeof(double));
    linear_backward(G(n->lay.film_w2), G(n->lay.film_b2), dnext, P(n->lay.film_w2), r->g, dfo, n->lay.film_out, FH);
    for (k = 0; k < FH; k++) dnext[k] *= 1.0 - r->g[k] * r->g[k];
    linear_backward(G(n->lay.film_w1), G(n->lay.film_b1), NULL, NULL, r->c, dnext, FH, C);
    return ARACHNE_OK;
}

int ar_nn_backward_logits(ar_nn *n, ar_nn_ws *ws, int rec, const double *dlogits)
{
    if (!n) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn backward: NULL network");
    return ar_nn_backward_into(n, ws, rec, dlogits, n->g);
}

int ar_nn_backward(ar_nn *n, ar_nn_ws *ws, int rec, const double *dlogp)
{
    const nn_rec *r;
    double *dlog, sum = 0.0;
    int k;
    if (!n || !ws || !dlogp) return AR_NULL_ARG("nn backward", n, ws, dlogp);
    r = ws_rec(ws, rec);
    if (!r) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "nn backward: no record %d on the tape (%d)", rec, ws->used);
    /* the last Kmax doubles of scratch are reserved for this conversion */
    dlog = ws->scratch + scratch_dlog_off(ws);
    for (k = 0; k < r->K; k++)
        if (r->mask[k]) sum += dlogp[k];
    for (k = 0; k < r->K; k++) dlog[k] = r->mask[k] ? dlogp[k] - r->probs[k] * sum : 0.0;
    return ar_nn_backward_into(n, ws, rec, dlog, n->g);
}
