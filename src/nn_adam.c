/* nn_adam.c -- Adam with decoupled weight decay and global gradient-norm
 * clipping for the policy network.  See nn.h. */
#include <math.h>
#include <string.h>

#include "nn.h"
#include "nn_internal.h"
#include "util.h"

void ar_adam_config_default(ar_adam_config *c)
{
    c->lr = 3e-4;
    c->beta1 = 0.9;
    c->beta2 = 0.999;
    c->eps = 1e-8;
    c->clip_norm = 1.0;
    c->weight_decay = 0.0;
}

static int adam_check(const ar_adam_config *c)
{
    if (!c) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: NULL config");
    if (!(c->lr > 0.0) || !isfinite(c->lr))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: lr = %g must be > 0 and finite", c->lr);
    if (!(c->beta1 >= 0.0 && c->beta1 < 1.0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: beta1 = %g must be in [0, 1)", c->beta1);
    if (!(c->beta2 >= 0.0 && c->beta2 < 1.0))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: beta2 = %g must be in [0, 1)", c->beta2);
    if (!(c->eps > 0.0) || !isfinite(c->eps))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: eps = %g must be > 0 and finite", c->eps);
    if (!(c->clip_norm >= 0.0) || !isfinite(c->clip_norm))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: clip_norm = %g must be >= 0 (0 = off)", c->clip_norm);
    if (!(c->weight_decay >= 0.0) || !isfinite(c->weight_decay))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: weight_decay = %g must be >= 0", c->weight_decay);
    return ARACHNE_OK;
}

/* One Adam update of parameter i into *p, *m, *v (not stored). */
static void adam_one(const ar_nn *n, const ar_adam_config *cfg, size_t i, double scale, double wd, double bc1,
                     double bc2, double *p, double *m, double *v)
{
    double g = n->g[i] * scale;
    *m = cfg->beta1 * n->m[i] + (1.0 - cfg->beta1) * g;
    *v = cfg->beta2 * n->v[i] + (1.0 - cfg->beta2) * g * g;
    *p = n->p[i] - cfg->lr * ((*m / bc1) / (sqrt(*v / bc2) + cfg->eps) + wd * n->p[i]);
}

int ar_nn_adam_step(ar_nn *n, const ar_adam_config *cfg, double *grad_norm_out)
{
    double norm = 0.0, scale = 1.0, bc1, bc2;
    size_t i;
    int ti, st, pass;
    if (!n) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: NULL network");
    st = adam_check(cfg);
    if (st) return st;
    for (i = 0; i < n->n_params; i++) norm += n->g[i] * n->g[i];
    norm = sqrt(norm);
    if (grad_norm_out) *grad_norm_out = norm;
    if (!isfinite(norm)) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: gradient is not finite; step skipped");
    if (cfg->clip_norm > 0.0 && norm > cfg->clip_norm) scale = cfg->clip_norm / norm;
    bc1 = 1.0 - pow(cfg->beta1, (double)(n->t + 1));
    bc2 = 1.0 - pow(cfg->beta2, (double)(n->t + 1));
    /* Pass 0 computes every new value and checks it; pass 1 stores them
     * (the same arithmetic, so the same bits).  A step that would leave a
     * weight or moment non-finite or beyond the checkpoint bounds is not
     * taken at all: the network stays usable and its state saveable. */
    for (pass = 0; pass < 2; pass++)
        for (ti = 0; ti < n->lay.count; ti++) {
            const ar_nn_tensor *t = &n->lay.tensors[ti];
            size_t end = t->offset + (size_t)t->rows * (size_t)t->cols;
            double wd = t->decay ? cfg->weight_decay : 0.0;
            for (i = t->offset; i < end; i++) {
                double p, m, v;
                adam_one(n, cfg, i, scale, wd, bc1, bc2, &p, &m, &v);
                if (pass == 0 && !ar_nn_state_ok(p, m, v))
                    return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                                    "adam: the step would set parameter %zu to %g (moments %g, %g), outside +-%g or "
                                    "not finite; step skipped",
                                    i, p, m, v, AR_NN_STATE_LIMIT);
                if (pass == 1) {
                    n->p[i] = p;
                    n->m[i] = m;
                    n->v[i] = v;
                }
            }
        }
    n->t++;
    return ARACHNE_OK;
}

void ar_nn_adam_reset(ar_nn *n)
{
    if (!n) return;
    memset(n->m, 0, 2 * n->n_params * sizeof(double));
    n->t = 0;
}

long ar_nn_adam_steps(const ar_nn *n) { return n ? n->t : 0; }

double *ar_nn_adam_moment(ar_nn *n, int which)
{
    if (!n || (which != 0 && which != 1)) return NULL;
    return which == 0 ? n->m : n->v;
}

const double *ar_nn_adam_moment_const(const ar_nn *n, int which)
{
    if (!n || (which != 0 && which != 1)) return NULL;
    return which == 0 ? n->m : n->v;
}

void ar_nn_adam_set_steps(ar_nn *n, long t)
{
    if (n) n->t = t < 0 ? 0 : t;
}
