/* test_nn.c -- the policy network: layout, init, gradient check against
 * central finite differences, masking, FiLM identity, Adam. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nn.h"
#include "util.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */
/* ---------------------------------------------------------------------- */

static void small_config(ar_nn_config *c, int layers)
{
    c->state_dim = 9;
    c->comp_dim = 5;
    c->cand_dim = 4;
    c->hidden = 7;
    c->layers = layers;
    c->film_hidden = 6;
    c->head_hidden = 5;
    c->max_depth_cands = 9;
    c->max_type_cands = 5;
    c->n_tp = 6;
}

/* Randomises every parameter (FiLM included) so that no path is inert. */
static void randomize(ar_nn *n, uint64_t seed, double scale)
{
    ar_rng r;
    int i;
    size_t j;
    ar_rng_seed(&r, seed);
    for (i = 0; i < ar_nn_tensor_count(n); i++) {
        const ar_nn_tensor *t = ar_nn_tensor_at(n, i);
        for (j = 0; j < (size_t)t->rows * (size_t)t->cols; j++)
            ar_nn_params(n)[t->offset + j] = scale * ar_rng_normal(&r) / sqrt((double)t->cols);
    }
}

#define MAXK 16
#define MAXDEC 8

typedef struct decision {
    ar_head head;
    int K, chosen;
    double x[32], c[16], cand[MAXK * 8];
    unsigned char mask[MAXK];
    double a, b; /* loss weight of logp[chosen] and of the entropy */
} decision;

/* A construction: one depth decision, then `stages` (device, TP) pairs. */
static int make_construction(decision *d, const ar_nn_config *cfg, int stages, ar_rng *r)
{
    int nd = 0, s, i, k;
    for (s = -1; s < 2 * stages; s++) {
        decision *e = &d[nd++];
        memset(e, 0, sizeof *e);
        e->head = s < 0 ? AR_HEAD_DEPTH : (s % 2 == 0 ? AR_HEAD_DEVICE : AR_HEAD_TP);
        e->K = e->head == AR_HEAD_DEPTH ? cfg->max_depth_cands
             : e->head == AR_HEAD_DEVICE ? cfg->max_type_cands - ar_rng_int(r, 2) : cfg->n_tp;
        for (i = 0; i < cfg->state_dim; i++) e->x[i] = ar_rng_normal(r);
        for (i = 0; i < cfg->comp_dim; i++) e->c[i] = ar_rng_normal(r);
        for (i = 0; i < e->K * cfg->cand_dim; i++) e->cand[i] = ar_rng_normal(r);
        for (k = 0; k < e->K; k++) e->mask[k] = ar_rng_uniform(r) < 0.7;
        e->chosen = ar_rng_int(r, e->K);
        e->mask[e->chosen] = 1;
        e->a = 0.5 + ar_rng_uniform(r);
        e->b = ar_rng_uniform(r) - 0.5;
    }
    return nd;
}

/* loss = sum_i a_i logp_i[chosen_i] + (with_entropy ? b_i H_i : 0). */
static double construction_loss(const ar_nn *n, ar_nn_ws *ws, const decision *d, int nd, int with_entropy)
{
    double loss = 0.0, logp[MAXK], ent;
    int i;
    ar_nn_ws_reset(ws);
    for (i = 0; i < nd; i++) {
        int rec = ar_nn_forward(n, ws, d[i].head, d[i].x, d[i].c, d[i].head == AR_HEAD_TP ? NULL : d[i].cand,
                                d[i].K, d[i].mask, logp);
        if (rec < 0) return NAN;
        loss += (with_entropy ? d[i].a : 1.0) * logp[d[i].chosen];
        if (with_entropy) {
            if (ar_cat_eval(ar_nn_ws_logits(ws, rec), d[i].mask, d[i].K, NULL, NULL, &ent)) return NAN;
            loss += d[i].b * ent;
        }
    }
    return loss;
}

/* Analytic gradient into ar_nn_grads: forward the whole construction onto
 * the tape, then backpropagate every record (last first). */
static int construction_grad(ar_nn *n, ar_nn_ws *ws, const decision *d, int nd, int with_entropy)
{
    int i, k, st;
    double dl[MAXK];
    ar_nn_zero_grad(n);
    ar_nn_ws_reset(ws);
    for (i = 0; i < nd; i++) {
        int rec = ar_nn_forward(n, ws, d[i].head, d[i].x, d[i].c, d[i].cand, d[i].K, d[i].mask, NULL);
        if (rec != i) return -1;
    }
    for (i = nd - 1; i >= 0; i--) {
        if (with_entropy) {
            st = ar_cat_grad(ar_nn_ws_logp(ws, i), d[i].mask, d[i].K, d[i].chosen, d[i].a, d[i].b, dl);
            if (st) return st;
            st = ar_nn_backward_logits(n, ws, i, dl);
        } else {
            for (k = 0; k < d[i].K; k++) dl[k] = k == d[i].chosen ? 1.0 : 0.0;
            st = ar_nn_backward(n, ws, i, dl);
        }
        if (st) return st;
    }
    return ARACHNE_OK;
}

/* Checks every tensor: up to 30 sampled entries (all when small); returns
 * the worst relative error through *worst and the tensor name. */
static int grad_check(ar_nn *n, ar_nn_ws *ws, const decision *d, int nd, int with_entropy, double *worst,
                      const char **worst_name, int *checked)
{
    const double eps = 1e-5;
    double *p = ar_nn_params(n), *g = ar_nn_grads(n);
    ar_rng r;
    int ti;
    *worst = 0.0;
    *worst_name = "";
    *checked = 0;
    if (construction_grad(n, ws, d, nd, with_entropy) != ARACHNE_OK) return -1;
    ar_rng_seed(&r, 99);
    for (ti = 0; ti < ar_nn_tensor_count(n); ti++) {
        const ar_nn_tensor *t = ar_nn_tensor_at(n, ti);
        size_t size = (size_t)t->rows * (size_t)t->cols, s, samples = size <= 30 ? size : 30;
        for (s = 0; s < samples; s++) {
            size_t idx = t->offset + (size <= 30 ? s : (size_t)ar_rng_int(&r, (int)size));
            double save = p[idx], lp, lm, num, err, den;
            p[idx] = save + eps;
            lp = construction_loss(n, ws, d, nd, with_entropy);
            p[idx] = save - eps;
            lm = construction_loss(n, ws, d, nd, with_entropy);
            p[idx] = save;
            if (!isfinite(lp) || !isfinite(lm)) return -1;
            num = (lp - lm) / (2 * eps);
            den = fabs(num) > fabs(g[idx]) ? fabs(num) : fabs(g[idx]);
            if (den < 1e-4) den = 1e-4; /* near-zero gradients: absolute error 1e-8 */
            err = fabs(num - g[idx]) / den;
            if (err > *worst) {
                *worst = err;
                *worst_name = t->name;
            }
            (*checked)++;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Tests                                                                   */
/* ---------------------------------------------------------------------- */

TEST(config_defaults_and_validation)
{
    ar_nn_config c, d;
    ar_nn *n = NULL;
    size_t sum = 0;
    int i, arr[AR_NN_CONFIG_FIELDS];
    ar_nn_config_default(&c);
    ASSERT_OK(ar_nn_config_check(&c));
    ASSERT_EQ(c.state_dim, 128);
    ASSERT_EQ(c.layers, 2);
    ASSERT_EQ(c.n_tp, 11);
    ASSERT_OK(ar_nn_create(&n, &c, 1));
    for (i = 0; i < ar_nn_tensor_count(n); i++) {
        const ar_nn_tensor *t = ar_nn_tensor_at(n, i);
        ASSERT_EQ(t->offset, sum); /* contiguous, in order */
        sum += (size_t)t->rows * (size_t)t->cols;
    }
    ASSERT_EQ(sum, ar_nn_param_count(n));
    ASSERT_EQ(sum, ar_nn_config_param_count(&c));
    ASSERT_EQ(ar_nn_tensor_find(n, "film.w2")->rows, 2 * (2 * 128 + 3 * 64));
    ASSERT_EQ(ar_nn_tensor_find(n, "bb.0.w")->cols, 128);
    ASSERT(ar_nn_tensor_find(n, "bb.2.w") == NULL);
    ASSERT(ar_nn_tensor_at(n, -1) == NULL);
    ar_nn_destroy(n);
    ar_nn_destroy(NULL);

    ar_nn_config_to_array(&c, arr);
    ar_nn_config_from_array(&d, arr);
    ASSERT(memcmp(&c, &d, sizeof c) == 0);

    d = c; d.layers = 0;
    ASSERT_STATUS(ar_nn_config_check(&d), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "layers");
    d = c; d.layers = AR_NN_MAX_LAYERS + 1;
    ASSERT_STATUS(ar_nn_create(&n, &d, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(n == NULL);
    d = c; d.n_tp = 12;
    ASSERT_STATUS(ar_nn_config_check(&d), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "n_tp");
    d = c; d.hidden = -3;
    ASSERT_STATUS(ar_nn_config_check(&d), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "hidden = -3");
}

TEST(init_is_deterministic_and_film_starts_at_zero)
{
    ar_nn_config c;
    ar_nn *a = NULL, *b = NULL, *d = NULL;
    const ar_nn_tensor *t;
    size_t i, np;
    ar_nn_config_default(&c);
    ASSERT_OK(ar_nn_create(&a, &c, 7));
    ASSERT_OK(ar_nn_create(&b, &c, 7));
    ASSERT_OK(ar_nn_create(&d, &c, 8));
    np = ar_nn_param_count(a);
    ASSERT(memcmp(ar_nn_params(a), ar_nn_params(b), np * sizeof(double)) == 0);
    ASSERT(memcmp(ar_nn_params(a), ar_nn_params(d), np * sizeof(double)) != 0);
    t = ar_nn_tensor_find(a, "film.w2");
    for (i = 0; i < (size_t)t->rows * (size_t)t->cols; i++) ASSERT(ar_nn_params(a)[t->offset + i] == 0.0);
    t = ar_nn_tensor_find(a, "bb.1.b");
    for (i = 0; i < (size_t)t->rows; i++) ASSERT(ar_nn_params(a)[t->offset + i] == 0.0);
    t = ar_nn_tensor_find(a, "bb.0.w");
    ASSERT(ar_nn_params(a)[t->offset] != 0.0);
    for (i = 0; i < np; i++) ASSERT(ar_nn_grads(a)[i] == 0.0);
    ar_nn_destroy(a);
    ar_nn_destroy(b);
    ar_nn_destroy(d);
}

/* One gradient check on a fresh network: config c created with seed cs,
 * weights randomised (seed rs, scale), a construction of `stages` stages
 * drawn with seed ds, then grad_check of its log-probability (with_entropy
 * 0) or of the PPO + entropy loss (1).  Returns grad_check's status, -1 when
 * the network cannot be made. */
typedef struct gc_result {
    int nd, checked;
    double worst;
    const char *name;
} gc_result;

static int grad_check_fresh(const ar_nn_config *c, uint64_t cs, uint64_t rs, double scale, uint64_t ds, int stages,
                            int with_entropy, gc_result *out)
{
    ar_nn *n = NULL;
    ar_nn_ws *ws = NULL;
    decision d[MAXDEC];
    ar_rng r;
    int st = -1;
    memset(out, 0, sizeof *out);
    if (ar_nn_create(&n, c, cs) == ARACHNE_OK && ar_nn_ws_create(&ws, n) == ARACHNE_OK) {
        randomize(n, rs, scale);
        ar_rng_seed(&r, ds);
        out->nd = make_construction(d, c, stages, &r);
        st = grad_check(n, ws, d, out->nd, with_entropy, &out->worst, &out->name, &out->checked);
        if (getenv("AR_NN_VERBOSE"))
            fprintf(stderr, "grad check: %d entries, worst rel err %.3g (%s)\n", out->checked, out->worst, out->name);
    }
    ar_nn_ws_destroy(ws);
    ar_nn_destroy(n);
    return st;
}

TEST(gradient_check_logp_of_construction)
{
    ar_nn_config c;
    gc_result g;
    small_config(&c, 2);
    ASSERT_EQ(grad_check_fresh(&c, 3, 11, 0.8, 5, 3, 0, &g), 0);
    ASSERT_EQ(g.nd, 7); /* depth, 3 x (device, TP) */
    ASSERT_GT(g.checked, 300);
    ASSERT_MSG(g.worst < 1e-4, "worst relative error %.3g in tensor %s", g.worst, g.name);
}

TEST(gradient_check_ppo_entropy_loss_various_depths)
{
    int layers;
    for (layers = 1; layers <= 3; layers += 2) {
        ar_nn_config c;
        gc_result g;
        small_config(&c, layers);
        ASSERT_EQ(grad_check_fresh(&c, 30 + (uint64_t)layers, 40 + (uint64_t)layers, 1.0, 50 + (uint64_t)layers, 3, 1,
                                   &g), 0);
        ASSERT_MSG(g.worst < 1e-4, "layers %d: worst relative error %.3g in tensor %s", layers, g.worst, g.name);
    }
}

TEST(gradient_check_default_sizes_sampled)
{
    /* The default architecture (with randomised FiLM) on a short construction. */
    ar_nn_config c;
    gc_result g;
    ar_nn_config_default(&c);
    c.state_dim = 32; /* the decision struct holds at most 32 state entries */
    c.max_depth_cands = MAXK;
    c.max_type_cands = 8;
    c.n_tp = 11;
    ASSERT_EQ(grad_check_fresh(&c, 9, 10, 1.0, 12, 1, 1, &g), 0);
    ASSERT_MSG(g.worst < 1e-4, "worst relative error %.3g in tensor %s", g.worst, g.name);
}

TEST(categorical_gradient_matches_finite_differences)
{
    double z[7] = { 0.3, -1.2, 2.0, 0.0, 0.7, -0.4, 1.1 }, logp[7], probs[7], g[7], ent, sum = 0.0;
    unsigned char mask[7] = { 1, 0, 1, 1, 0, 1, 1 };
    const double a = 0.7, b = -0.3, eps = 1e-6;
    int k;
    ASSERT_OK(ar_cat_eval(z, mask, 7, logp, probs, &ent));
    for (k = 0; k < 7; k++) sum += probs[k];
    ASSERT_NEAR(sum, 1.0, 1e-14);
    ASSERT(probs[1] == 0.0 && probs[4] == 0.0);
    ASSERT(isinf(logp[1]) && logp[1] < 0);
    ASSERT_OK(ar_cat_grad(logp, mask, 7, 2, a, b, g));
    ASSERT(g[1] == 0.0 && g[4] == 0.0);
    for (k = 0; k < 7; k++) {
        double lp[7], ep, em, fp, fm, save = z[k];
        if (!mask[k]) continue;
        z[k] = save + eps;
        ASSERT_OK(ar_cat_eval(z, mask, 7, lp, NULL, &ep));
        fp = a * lp[2] + b * ep;
        z[k] = save - eps;
        ASSERT_OK(ar_cat_eval(z, mask, 7, lp, NULL, &em));
        fm = a * lp[2] + b * em;
        z[k] = save;
        ASSERT_NEAR(g[k], (fp - fm) / (2 * eps), 1e-6);
    }
    /* uniform over 5 valid entries: entropy log 5 */
    for (k = 0; k < 7; k++) z[k] = 2.5;
    ASSERT_OK(ar_cat_eval(z, mask, 7, NULL, NULL, &ent));
    ASSERT_NEAR(ent, log(5.0), 1e-14);
    ASSERT_STATUS(ar_cat_grad(logp, mask, 7, 1, 1, 0, g), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_cat_grad(logp, mask, 7, 7, 1, 0, g), ARACHNE_E_INVALID_ARGUMENT);
    memset(mask, 0, sizeof mask);
    ASSERT_STATUS(ar_cat_eval(z, mask, 7, logp, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
}

TEST(masking_never_reorders_valid_logits)
{
    ar_nn_config c;
    ar_nn *n = NULL;
    ar_nn_ws *ws = NULL;
    ar_rng r;
    double x[9], cv[5], cand[9 * 4], full[9], lp[9];
    unsigned char mask[9];
    int h, k, trial;
    small_config(&c, 2);
    ASSERT_OK(ar_nn_create(&n, &c, 21));
    randomize(n, 22, 1.0);
    ASSERT_OK(ar_nn_ws_create(&ws, n));
    ar_rng_seed(&r, 23);
    for (k = 0; k < 9; k++) x[k] = ar_rng_normal(&r);
    for (k = 0; k < 5; k++) cv[k] = ar_rng_normal(&r);
    for (k = 0; k < 36; k++) cand[k] = ar_rng_normal(&r);
    for (h = 0; h < 3; h++) {
        int K = h == AR_HEAD_DEPTH ? c.max_depth_cands : h == AR_HEAD_DEVICE ? c.max_type_cands : c.n_tp;
        int rec = ar_nn_forward(n, ws, (ar_head)h, x, cv, cand, K, NULL, lp);
        ASSERT(rec >= 0);
        memcpy(full, ar_nn_ws_logits(ws, rec), (size_t)K * sizeof(double));
        for (trial = 0; trial < 20; trial++) {
            double sum = 0.0, junk[9 * 4];
            const double *lg, *pr;
            int i, j;
            memcpy(junk, cand, sizeof junk);
            for (k = 0; k < K; k++) mask[k] = ar_rng_uniform(&r) < 0.5;
            mask[ar_rng_int(&r, K)] = 1;
            for (k = 0; k < K; k++)
                if (!mask[k]) junk[k * 4] = NAN; /* masked rows are never read */
            rec = ar_nn_forward(n, ws, (ar_head)h, x, cv, junk, K, mask, lp);
            ASSERT(rec >= 0);
            lg = ar_nn_ws_logits(ws, rec);
            pr = ar_nn_ws_probs(ws, rec);
            for (k = 0; k < K; k++) {
                if (mask[k]) {
                    ASSERT(lg[k] == full[k]); /* bit-identical */
                    ASSERT(pr[k] > 0.0);
                    sum += pr[k];
                } else {
                    ASSERT(pr[k] == 0.0);
                    ASSERT(isinf(lp[k]) && lp[k] < 0);
                }
            }
            ASSERT_NEAR(sum, 1.0, 1e-13);
            for (i = 0; i < K; i++)
                for (j = 0; j < K; j++)
                    if (mask[i] && mask[j] && full[i] < full[j]) ASSERT(lp[i] < lp[j]);
        }
    }
    ar_nn_ws_destroy(ws);
    ar_nn_destroy(n);
}

/* Independent reference forward (plain loops over the named tensors). */
static double tget(const ar_nn *n, const char *name, int i, int j)
{
    const ar_nn_tensor *t = ar_nn_tensor_find(n, name);
    return ar_nn_params_const(n)[t->offset + (size_t)i * (size_t)t->cols + (size_t)j];
}

static void ref_forward(const ar_nn *n, ar_head head, const double *x, const double *cv, const double *cand,
                        int K, int use_film, double *logits)
{
    const ar_nn_config *c = ar_nn_get_config(n);
    double in[128], out[128], g[64], fo[2048], hid[64];
    int l, i, j, k, fout = 2 * (c->layers * c->hidden + 3 * c->head_hidden), site;
    char name[16];
    memcpy(in, x, (size_t)c->state_dim * sizeof(double));
    for (i = 0; i < c->film_hidden; i++) {
        double s = tget(n, "film.b1", i, 0);
        for (j = 0; j < c->comp_dim; j++) s += tget(n, "film.w1", i, j) * cv[j];
        g[i] = tanh(s);
    }
    for (i = 0; i < fout; i++) {
        double s = tget(n, "film.b2", i, 0);
        for (j = 0; j < c->film_hidden; j++) s += tget(n, "film.w2", i, j) * g[j];
        fo[i] = use_film ? s : 0.0;
    }
    for (l = 0; l < c->layers; l++) {
        int nin = l == 0 ? c->state_dim : c->hidden;
        for (i = 0; i < c->hidden; i++) {
            double s;
            snprintf(name, sizeof name, "bb.%u.b", (unsigned)l % 10u);
            s = tget(n, name, i, 0);
            snprintf(name, sizeof name, "bb.%u.w", (unsigned)l % 10u);
            for (j = 0; j < nin; j++) s += tget(n, name, i, j) * in[j];
            out[i] = tanh((1 + fo[2 * l * c->hidden + i]) * s + fo[2 * l * c->hidden + c->hidden + i]);
        }
        memcpy(in, out, sizeof out);
    }
    site = 2 * (c->layers * c->hidden + (int)head * c->head_hidden);
    if (head == AR_HEAD_TP) {
        for (i = 0; i < c->head_hidden; i++) {
            double s = tget(n, "tp.b1", i, 0);
            for (j = 0; j < c->hidden; j++) s += tget(n, "tp.w1", i, j) * in[j];
            hid[i] = tanh((1 + fo[site + i]) * s + fo[site + c->head_hidden + i]);
        }
        for (k = 0; k < K; k++) {
            double s = tget(n, "tp.b2", k, 0);
            for (i = 0; i < c->head_hidden; i++) s += tget(n, "tp.w2", k, i) * hid[i];
            logits[k] = s;
        }
        return;
    }
    for (k = 0; k < K; k++) {
        const char *hn = head == AR_HEAD_DEPTH ? "depth" : "device";
        double s2;
        char w1h[16], w1f[16], b1[16], w2[16], b2[16], wb[16], wf[16];
        snprintf(wb, sizeof wb, "%s.wb", hn);
        snprintf(wf, sizeof wf, "%s.wf", hn);
        snprintf(w1h, sizeof w1h, "%s.w1h", hn);
        snprintf(w1f, sizeof w1f, "%s.w1f", hn);
        snprintf(b1, sizeof b1, "%s.b1", hn);
        snprintf(w2, sizeof w2, "%s.w2", hn);
        snprintf(b2, sizeof b2, "%s.b2", hn);
        s2 = tget(n, b2, 0, 0);
        for (i = 0; i < c->head_hidden; i++) {
            double s = tget(n, b1, i, 0);
            for (j = 0; j < c->hidden; j++) s += tget(n, w1h, i, j) * in[j];
            for (j = 0; j < c->cand_dim; j++) s += tget(n, w1f, i, j) * cand[k * c->cand_dim + j];
            s2 += tget(n, w2, i, 0) * tanh((1 + fo[site + i]) * s + fo[site + c->head_hidden + i]);
        }
        /* direct path: (Wb h + wf) . f_k */
        for (i = 0; i < c->cand_dim; i++) {
            double v = tget(n, wf, i, 0);
            for (j = 0; j < c->hidden; j++) v += tget(n, wb, i, j) * in[j];
            s2 += v * cand[k * c->cand_dim + i];
        }
        logits[k] = s2;
    }
}

TEST(film_is_identity_when_generator_output_is_zero)
{
    ar_nn_config c;
    ar_nn *n = NULL;
    ar_nn_ws *ws = NULL;
    ar_rng r;
    double x[9], cv[5], cand[9 * 4], ref[9], ref_film[9], maxdiff;
    const ar_nn_tensor *w2, *b2;
    int h, k;
    small_config(&c, 2);
    ASSERT_OK(ar_nn_create(&n, &c, 61));
    randomize(n, 62, 1.0);
    ASSERT_OK(ar_nn_ws_create(&ws, n));
    ar_rng_seed(&r, 63);
    for (k = 0; k < 9; k++) x[k] = ar_rng_normal(&r);
    for (k = 0; k < 5; k++) cv[k] = ar_rng_normal(&r);
    for (k = 0; k < 36; k++) cand[k] = ar_rng_normal(&r);
    for (h = 0; h < 3; h++) {
        int K = h == AR_HEAD_DEPTH ? c.max_depth_cands : h == AR_HEAD_DEVICE ? c.max_type_cands : c.n_tp;
        int rec = ar_nn_forward(n, ws, (ar_head)h, x, cv, cand, K, NULL, NULL);
        ASSERT(rec >= 0);
        /* random FiLM: the network matches the FiLM reference and differs from the plain one */
        ref_forward(n, (ar_head)h, x, cv, cand, K, 1, ref_film);
        ref_forward(n, (ar_head)h, x, cv, cand, K, 0, ref);
        maxdiff = 0.0;
        for (k = 0; k < K; k++) {
            ASSERT_NEAR(ar_nn_ws_logits(ws, rec)[k], ref_film[k], 1e-12);
            maxdiff = AR_MAX(maxdiff, fabs(ref_film[k] - ref[k]));
        }
        ASSERT_GT(maxdiff, 1e-3);
    }
    /* zero the generator's last layer: gamma = 1, beta = 0 everywhere */
    w2 = ar_nn_tensor_find(n, "film.w2");
    b2 = ar_nn_tensor_find(n, "film.b2");
    memset(ar_nn_params(n) + w2->offset, 0, (size_t)w2->rows * (size_t)w2->cols * sizeof(double));
    memset(ar_nn_params(n) + b2->offset, 0, (size_t)b2->rows * sizeof(double));
    for (h = 0; h < 3; h++) {
        int K = h == AR_HEAD_DEPTH ? c.max_depth_cands : h == AR_HEAD_DEVICE ? c.max_type_cands : c.n_tp;
        double cv2[5];
        int rec = ar_nn_forward(n, ws, (ar_head)h, x, cv, cand, K, NULL, NULL), rec2;
        ASSERT(rec >= 0);
        ref_forward(n, (ar_head)h, x, cv, cand, K, 0, ref);
        for (k = 0; k < K; k++) ASSERT_NEAR(ar_nn_ws_logits(ws, rec)[k], ref[k], 1e-12);
        /* and the composition no longer matters */
        for (k = 0; k < 5; k++) cv2[k] = -3.0 * cv[k] + 1.0;
        rec2 = ar_nn_forward(n, ws, (ar_head)h, x, cv2, cand, K, NULL, NULL);
        ASSERT(rec2 >= 0);
        for (k = 0; k < K; k++) ASSERT(ar_nn_ws_logits(ws, rec)[k] == ar_nn_ws_logits(ws, rec2)[k]);
    }
    ar_nn_ws_destroy(ws);
    ar_nn_destroy(n);
}

TEST(fresh_network_is_film_identity_and_near_uniform)
{
    ar_nn_config c;
    ar_nn *n = NULL;
    ar_nn_ws *ws = NULL;
    double x[128], cv[16], cand[33 * 8], ref[33];
    int k, rec;
    ar_rng r;
    ar_nn_config_default(&c);
    ASSERT_OK(ar_nn_create(&n, &c, 5));
    ASSERT_OK(ar_nn_ws_create(&ws, n));
    ar_rng_seed(&r, 6);
    for (k = 0; k < 128; k++) x[k] = ar_rng_normal(&r);
    for (k = 0; k < 16; k++) cv[k] = ar_rng_normal(&r);
    for (k = 0; k < 33 * 8; k++) cand[k] = ar_rng_normal(&r);
    rec = ar_nn_forward(n, ws, AR_HEAD_DEPTH, x, cv, cand, 33, NULL, NULL);
    ASSERT(rec >= 0);
    ref_forward(n, AR_HEAD_DEPTH, x, cv, cand, 33, 0, ref);
    for (k = 0; k < 33; k++) {
        ASSERT_NEAR(ar_nn_ws_logits(ws, rec)[k], ref[k], 1e-12);
        ASSERT_NEAR(ar_nn_ws_probs(ws, rec)[k], 1.0 / 33, 0.05);
    }
    ar_nn_ws_destroy(ws);
    ar_nn_destroy(n);
}

TEST(forward_is_const_reproducible_and_clone_matches)
{
    ar_nn_config c;
    ar_nn *n = NULL, *cl = NULL;
    ar_nn_ws *w1 = NULL, *w2 = NULL;
    double *before, x[9], cv[5], cand[36];
    size_t np;
    int k, r1, r2, r3;
    small_config(&c, 2);
    ASSERT_OK(ar_nn_create(&n, &c, 71));
    randomize(n, 72, 1.0);
    np = ar_nn_param_count(n);
    before = malloc(2 * np * sizeof(double));
    ASSERT(before != NULL);
    memcpy(before, ar_nn_params(n), 2 * np * sizeof(double)); /* params and grads */
    ASSERT_OK(ar_nn_ws_create(&w1, n));
    ASSERT_OK(ar_nn_ws_create(&w2, n));
    for (k = 0; k < 9; k++) x[k] = 0.1 * k - 0.3;
    for (k = 0; k < 5; k++) cv[k] = 0.2 * k;
    for (k = 0; k < 36; k++) cand[k] = sin((double)k);
    r1 = ar_nn_forward(n, w1, AR_HEAD_DEVICE, x, cv, cand, 5, NULL, NULL);
    r2 = ar_nn_forward(n, w2, AR_HEAD_DEVICE, x, cv, cand, 5, NULL, NULL);
    ASSERT(r1 == 0 && r2 == 0);
    ASSERT(memcmp(ar_nn_params(n), before, 2 * np * sizeof(double)) == 0);
    ASSERT(memcmp(ar_nn_ws_logp(w1, r1), ar_nn_ws_logp(w2, r2), 5 * sizeof(double)) == 0);
    ASSERT_OK(ar_nn_clone(&cl, n));
    r3 = ar_nn_forward(cl, w2, AR_HEAD_DEVICE, x, cv, cand, 5, NULL, NULL); /* same-size net, same workspace */
    ASSERT_EQ(r3, 1);
    ASSERT(memcmp(ar_nn_ws_logp(w1, r1), ar_nn_ws_logp(w2, r3), 5 * sizeof(double)) == 0);
    ar_nn_params(cl)[0] += 1.0;
    ASSERT(ar_nn_params(n)[0] != ar_nn_params(cl)[0]); /* deep copy */
    ASSERT_OK(ar_nn_copy_params(cl, n));
    ASSERT(memcmp(ar_nn_params(n), ar_nn_params(cl), np * sizeof(double)) == 0);
    free(before);
    ar_nn_ws_destroy(w1);
    ar_nn_ws_destroy(w2);
    ar_nn_destroy(n);
    ar_nn_destroy(cl);
}

/* ar_nn_ws_keep_film: the kept FiLM output gives the logits a plain
 * workspace computes, bit for bit, over forwards that alternate heads and
 * composition vectors (the kept output is reused only for the same c and
 * network), across tape resets, and is dropped by the next keep call (a
 * parameter change in between must show). */
TEST(kept_film_output_gives_the_same_logits)
{
    ar_nn_config c;
    ar_nn *n = NULL, *cl = NULL;
    ar_nn_ws *plain = NULL, *kept = NULL;
    double x[9], cv[2][5], cand[36];
    int k, i, head;
    small_config(&c, 2);
    ASSERT_OK(ar_nn_create(&n, &c, 81));
    randomize(n, 82, 1.0);
    ASSERT_OK(ar_nn_clone(&cl, n));
    ASSERT_OK(ar_nn_ws_create(&plain, n));
    ASSERT_OK(ar_nn_ws_create(&kept, n));
    ar_nn_ws_keep_film(kept, 1);
    for (k = 0; k < 5; k++) {
        cv[0][k] = 0.2 * k;
        cv[1][k] = 0.2 * k + (k == 3 ? 1e-12 : 0.0); /* differs in one entry by an ulp-scale step */
    }
    for (k = 0; k < 36; k++) cand[k] = sin((double)k);
    for (i = 0; i < 24; i++) {
        const ar_nn *net = i % 7 == 6 ? cl : n; /* an equal network at another address */
        const double *cvi = cv[(i / 2) % 2];
        int K, r1, r2;
        head = i % 3;
        K = head == AR_HEAD_TP ? c.n_tp : 4;
        for (k = 0; k < 9; k++) x[k] = 0.1 * k - 0.3 + 0.01 * i;
        r1 = ar_nn_forward(net, plain, (ar_head)head, x, cvi, cand, K, NULL, NULL);
        r2 = ar_nn_forward(net, kept, (ar_head)head, x, cvi, cand, K, NULL, NULL);
        ASSERT(r1 >= 0 && r2 >= 0);
        ASSERT_MSG(memcmp(ar_nn_ws_logp(plain, r1), ar_nn_ws_logp(kept, r2), (size_t)K * sizeof(double)) == 0,
                   "forward %d", i);
        if (i % 5 == 4) { ar_nn_ws_reset(plain); ar_nn_ws_reset(kept); }
    }
    /* a new rollout after a parameter change: keep again, then the new output */
    randomize(n, 83, 1.0);
    ar_nn_ws_keep_film(kept, 1);
    for (head = 0; head < 3; head++) {
        int K = head == AR_HEAD_TP ? c.n_tp : 4;
        int r1 = ar_nn_forward(n, plain, (ar_head)head, x, cv[1], cand, K, NULL, NULL); /* the kept c and net */
        int r2 = ar_nn_forward(n, kept, (ar_head)head, x, cv[1], cand, K, NULL, NULL);
        ASSERT(r1 >= 0 && r2 >= 0);
        ASSERT(memcmp(ar_nn_ws_logp(plain, r1), ar_nn_ws_logp(kept, r2), (size_t)K * sizeof(double)) == 0);
    }
    ar_nn_ws_destroy(plain);
    ar_nn_ws_destroy(kept);
    ar_nn_destroy(n);
    ar_nn_destroy(cl);
}

TEST(forward_rejects_bad_input)
{
    ar_nn_config c, c2;
    ar_nn *n = NULL, *other = NULL;
    ar_nn_ws *ws = NULL, *wo = NULL;
    double x[9] = { 0 }, cv[5] = { 0 }, cand[36] = { 0 }, dl[9] = { 0 };
    unsigned char none[9] = { 0 };
    small_config(&c, 2);
    c2 = c;
    c2.hidden = 8;
    ASSERT_OK(ar_nn_create(&n, &c, 1));
    ASSERT_OK(ar_nn_create(&other, &c2, 1));
    ASSERT_OK(ar_nn_ws_create(&ws, n));
    ASSERT_OK(ar_nn_ws_create(&wo, other));
    ASSERT_STATUS(ar_nn_forward(n, ws, AR_HEAD_DEPTH, x, cv, cand, 10, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_nn_forward(n, ws, AR_HEAD_DEPTH, x, cv, cand, 0, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_nn_forward(n, ws, AR_HEAD_TP, x, cv, NULL, 5, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_nn_forward(n, ws, AR_HEAD_DEVICE, x, cv, NULL, 3, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_nn_forward(n, ws, (ar_head)7, x, cv, cand, 3, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_nn_forward(n, ws, AR_HEAD_DEVICE, x, cv, cand, 3, none, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "masked");
    x[4] = NAN;
    ASSERT_STATUS(ar_nn_forward(n, ws, AR_HEAD_TP, x, cv, NULL, 6, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    x[4] = 0;
    cand[5] = INFINITY;
    ASSERT_STATUS(ar_nn_forward(n, ws, AR_HEAD_DEPTH, x, cv, cand, 3, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_nn_forward(n, wo, AR_HEAD_TP, x, cv, NULL, 6, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "workspace");
    ASSERT_EQ(ar_nn_ws_count(ws), 0); /* failures push nothing */
    ASSERT_STATUS(ar_nn_backward(n, ws, 0, dl), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(ar_nn_ws_logits(ws, 0) == NULL);
    ar_nn_ws_destroy(ws);
    ar_nn_ws_destroy(wo);
    ar_nn_destroy(n);
    ar_nn_destroy(other);
}

TEST(tape_grows_and_resets)
{
    ar_nn_config c;
    ar_nn *n = NULL;
    ar_nn_ws *ws = NULL;
    double x[9], cv[5], first[6];
    int i;
    small_config(&c, 2);
    ASSERT_OK(ar_nn_create(&n, &c, 81));
    ASSERT_OK(ar_nn_ws_create(&ws, n));
    for (i = 0; i < 9; i++) x[i] = 0.5;
    for (i = 0; i < 5; i++) cv[i] = -0.5;
    for (i = 0; i < 100; i++) {
        x[0] = 0.01 * i;
        ASSERT_EQ(ar_nn_forward(n, ws, AR_HEAD_TP, x, cv, NULL, 6, NULL, NULL), i);
    }
    ASSERT_EQ(ar_nn_ws_count(ws), 100);
    ASSERT_EQ(ar_nn_ws_k(ws, 99), 6);
    memcpy(first, ar_nn_ws_logits(ws, 0), sizeof first);
    ar_nn_ws_reset(ws);
    ASSERT_EQ(ar_nn_ws_count(ws), 0);
    x[0] = 0.0;
    ASSERT_EQ(ar_nn_forward(n, ws, AR_HEAD_TP, x, cv, NULL, 6, NULL, NULL), 0);
    ASSERT(memcmp(first, ar_nn_ws_logits(ws, 0), sizeof first) == 0);
    ar_nn_ws_destroy(ws);
    ar_nn_ws_destroy(NULL);
    ar_nn_destroy(n);
}

TEST(adam_pushes_target_probability_above_090)
{
    ar_nn_config c;
    ar_nn *n = NULL;
    ar_nn_ws *ws = NULL;
    ar_adam_config ac;
    ar_rng r;
    double x[128], cv[16], cand[16 * 8], dlogp[16], p0, p = 0.0, gn;
    const int K = 12, target = 7;
    int k, step, rec;
    ar_nn_config_default(&c);
    ASSERT_OK(ar_nn_create(&n, &c, 91));
    ASSERT_OK(ar_nn_ws_create(&ws, n));
    ar_rng_seed(&r, 92);
    for (k = 0; k < 128; k++) x[k] = ar_rng_normal(&r);
    for (k = 0; k < 16; k++) cv[k] = ar_rng_normal(&r);
    for (k = 0; k < 16 * 8; k++) cand[k] = ar_rng_normal(&r);
    ar_adam_config_default(&ac);
    ac.lr = 1e-3;
    rec = ar_nn_forward(n, ws, AR_HEAD_DEVICE, x, cv, cand, K, NULL, NULL);
    ASSERT(rec >= 0);
    p0 = ar_nn_ws_probs(ws, rec)[target];
    ASSERT_NEAR(p0, 1.0 / K, 0.1);
    for (step = 0; step < 300; step++) {
        ar_nn_ws_reset(ws);
        ar_nn_zero_grad(n);
        rec = ar_nn_forward(n, ws, AR_HEAD_DEVICE, x, cv, cand, K, NULL, NULL);
        ASSERT(rec == 0);
        p = ar_nn_ws_probs(ws, rec)[target];
        if (p > 0.95) break;
        for (k = 0; k < K; k++) dlogp[k] = k == target ? -1.0 : 0.0; /* loss = -log p */
        ASSERT_OK(ar_nn_backward(n, ws, rec, dlogp));
        ASSERT_OK(ar_nn_adam_step(n, &ac, &gn));
        ASSERT_GT(gn, 0.0);
    }
    ASSERT_GT(p, 0.9);
    ASSERT(ar_nn_adam_steps(n) == step);
    ar_nn_ws_destroy(ws);
    ar_nn_destroy(n);
}

/* Issue 27 item 6: an Adam step from a state with a huge first moment
 * (as a doctored checkpoint held) made the weights infinite.  The step is
 * now refused with a message and leaves weights, moments and the step
 * counter exactly as they were; a step within the bounds still happens. */
TEST(adam_step_never_makes_weights_non_finite)
{
    ar_nn_config c;
    ar_nn *n = NULL;
    ar_adam_config ac;
    size_t P, i;
    double *w0, *m0, *v0;
    ar_nn_config_default(&c);
    ASSERT_OK(ar_nn_create(&n, &c, 5));
    P = ar_nn_param_count(n);
    ar_adam_config_default(&ac);
    ar_nn_zero_grad(n);
    for (i = 0; i < P; i++) ar_nn_grads(n)[i] = 1e-3;
    ar_nn_adam_moment(n, 0)[3] = 1e307; /* finite, but m / (sqrt(v) + eps) is not */
    w0 = malloc(P * sizeof *w0);
    m0 = malloc(P * sizeof *m0);
    v0 = malloc(P * sizeof *v0);
    ASSERT(w0 && m0 && v0);
    memcpy(w0, ar_nn_params(n), P * sizeof *w0);
    memcpy(m0, ar_nn_adam_moment(n, 0), P * sizeof *m0);
    memcpy(v0, ar_nn_adam_moment(n, 1), P * sizeof *v0);
    ASSERT_STATUS(ar_nn_adam_step(n, &ac, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "parameter 3 ");
    for (i = 0; i < P; i++) ASSERT(isfinite(ar_nn_params(n)[i]));
    ASSERT(memcmp(w0, ar_nn_params(n), P * sizeof *w0) == 0);
    ASSERT(memcmp(m0, ar_nn_adam_moment(n, 0), P * sizeof *m0) == 0);
    ASSERT(memcmp(v0, ar_nn_adam_moment(n, 1), P * sizeof *v0) == 0);
    ASSERT_EQ(ar_nn_adam_steps(n), 0);
    /* back within bounds: the step is taken and moves the weights */
    ar_nn_adam_moment(n, 0)[3] = 0.0;
    ASSERT_OK(ar_nn_adam_step(n, &ac, NULL));
    ASSERT_EQ(ar_nn_adam_steps(n), 1);
    ASSERT(ar_nn_params(n)[3] != w0[3]);
    free(w0);
    free(m0);
    free(v0);
    ar_nn_destroy(n);
}

TEST(adam_clipping_weight_decay_and_bad_gradients)
{
    ar_nn_config c;
    ar_nn *a = NULL, *b = NULL;
    ar_adam_config ac;
    double norm = 0.0, got, *before;
    size_t i, np;
    const ar_nn_tensor *w, *bias;
    small_config(&c, 2);
    ASSERT_OK(ar_nn_create(&a, &c, 101));
    randomize(a, 102, 1.0);
    ASSERT_OK(ar_nn_clone(&b, a));
    np = ar_nn_param_count(a);
    for (i = 0; i < np; i++) {
        ar_nn_grads(a)[i] = sin((double)i);
        norm += sin((double)i) * sin((double)i);
    }
    norm = sqrt(norm);
    memcpy(ar_nn_grads(b), ar_nn_grads(a), np * sizeof(double));
    ar_adam_config_default(&ac);
    ac.lr = 1e-2;
    ac.clip_norm = norm;
    ASSERT_OK(ar_nn_adam_step(a, &ac, &got));
    ASSERT_NEAR(got, norm, 1e-12);
    ac.clip_norm = 0.0;
    ASSERT_OK(ar_nn_adam_step(b, &ac, NULL));
    ASSERT(memcmp(ar_nn_params(a), ar_nn_params(b), np * sizeof(double)) == 0);
    /* step 2: a sees 100 g clipped back to |g|; b sees g unclipped: same update */
    for (i = 0; i < np; i++) ar_nn_grads(a)[i] *= 100.0;
    ac.clip_norm = norm;
    ASSERT_OK(ar_nn_adam_step(a, &ac, &got));
    ASSERT_NEAR(got, 100.0 * norm, 1e-12);
    ac.clip_norm = 0.0;
    ASSERT_OK(ar_nn_adam_step(b, &ac, NULL));
    for (i = 0; i < np; i++) ASSERT_NEAR(ar_nn_params(a)[i], ar_nn_params(b)[i], 1e-12);
    /* without clipping the 100x gradient would have moved a differently */

    /* weight decay with a zero gradient: weights shrink, biases do not */
    ar_nn_zero_grad(a);
    ar_nn_adam_reset(a);
    ASSERT_EQ(ar_nn_adam_steps(a), 0);
    before = malloc(np * sizeof(double));
    ASSERT(before != NULL);
    memcpy(before, ar_nn_params(a), np * sizeof(double));
    ac.weight_decay = 0.5;
    ASSERT_OK(ar_nn_adam_step(a, &ac, &got));
    ASSERT(got == 0.0);
    w = ar_nn_tensor_find(a, "bb.0.w");
    bias = ar_nn_tensor_find(a, "bb.0.b");
    ASSERT_NEAR(ar_nn_params(a)[w->offset + 3], before[w->offset + 3] * (1.0 - 1e-2 * 0.5), 1e-14);
    ASSERT(ar_nn_params(a)[bias->offset] == before[bias->offset]);

    /* a non-finite gradient is refused and nothing moves */
    memcpy(before, ar_nn_params(a), np * sizeof(double));
    ar_nn_grads(a)[5] = NAN;
    ASSERT_STATUS(ar_nn_adam_step(a, &ac, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(memcmp(before, ar_nn_params(a), np * sizeof(double)) == 0);
    ASSERT_EQ(ar_nn_adam_steps(a), 1);
    ar_nn_zero_grad(a);
    ac.lr = -1.0;
    ASSERT_STATUS(ar_nn_adam_step(a, &ac, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ar_adam_config_default(&ac);
    ac.beta1 = 1.0;
    ASSERT_STATUS(ar_nn_adam_step(a, &ac, NULL), ARACHNE_E_INVALID_ARGUMENT);
    free(before);
    ar_nn_destroy(a);
    ar_nn_destroy(b);
}

TEST(backward_into_separate_buffers_sums_to_the_same_gradient)
{
    /* Per-thread gradient buffers summed in a fixed order equal one buffer. */
    ar_nn_config c;
    ar_nn *n = NULL;
    ar_nn_ws *ws = NULL;
    decision d[MAXDEC];
    ar_rng r;
    double *g1, *g2, dl[MAXK];
    size_t np, i;
    int nd, k, j;
    small_config(&c, 2);
    ASSERT_OK(ar_nn_create(&n, &c, 111));
    randomize(n, 112, 1.0);
    ASSERT_OK(ar_nn_ws_create(&ws, n));
    ar_rng_seed(&r, 113);
    nd = make_construction(d, &c, 2, &r);
    np = ar_nn_param_count(n);
    g1 = calloc(np, sizeof(double));
    g2 = calloc(np, sizeof(double));
    ASSERT(g1 && g2);
    ASSERT_OK(construction_grad(n, ws, d, nd, 0)); /* into ar_nn_grads, all on one tape */
    for (j = 0; j < nd; j++) {
        ar_nn_ws_reset(ws);
        ASSERT_EQ(ar_nn_forward(n, ws, d[j].head, d[j].x, d[j].c, d[j].cand, d[j].K, d[j].mask, NULL), 0);
        for (k = 0; k < d[j].K; k++) dl[k] = (k == d[j].chosen) - ar_nn_ws_probs(ws, 0)[k];
        ASSERT_OK(ar_nn_backward_into(n, ws, 0, dl, j % 2 ? g2 : g1));
    }
    for (i = 0; i < np; i++) ASSERT(fabs(g1[i] + g2[i] - ar_nn_grads(n)[i]) <= 1e-12 * (1.0 + fabs(ar_nn_grads(n)[i])));
    free(g1);
    free(g2);
    ar_nn_ws_destroy(ws);
    ar_nn_destroy(n);
}

SUITE(nn, T(config_defaults_and_validation), T(adam_step_never_makes_weights_non_finite), T(init_is_deterministic_and_film_starts_at_zero),
      T(gradient_check_logp_of_construction), T(gradient_check_ppo_entropy_loss_various_depths),
      T(gradient_check_default_sizes_sampled), T(categorical_gradient_matches_finite_differences),
      T(masking_never_reorders_valid_logits), T(film_is_identity_when_generator_output_is_zero),
      T(fresh_network_is_film_identity_and_near_uniform), T(forward_is_const_reproducible_and_clone_matches),
      T(kept_film_output_gives_the_same_logits),
      T(forward_rejects_bad_input), T(tape_grows_and_resets), T(adam_pushes_target_probability_above_090),
      T(adam_clipping_weight_decay_and_bad_gradients), T(backward_into_separate_buffers_sums_to_the_same_gradient));
