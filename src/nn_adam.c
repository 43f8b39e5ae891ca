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

int ar_nn_adam_step(ar_nn *n, const ar_adam_config *cfg, double *grad_norm_out)
{
    double norm = 0.0, scale = 1.0, bc1, bc2;
    size_t i;
    int ti, st;
    if (!n) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: NULL network");
    st = adam_check(cfg);
    if (st) return st;
    for (i = 0; i < n->n_params; i++) norm += n->g[i] * n->g[i];
    norm = sqrt(norm);
    if (grad_norm_out) *grad_norm_out = norm;
    if (!isfinite(norm)) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "adam: gradient is not finite; step skipped");
    if (cfg->clip_norm > 0.0 && norm > cfg->clip_norm) scale = cfg->clip_norm / norm;
    n->t++;
    bc1 = 1.0 - pow(cfg->beta1, (double)n->t);
    bc2 = 1.0 - pow(cfg->beta2, (double)n->t);
    for (ti = 0; ti < n->lay.count; ti++) {
        const ar_nn_tensor *t = &n->lay.tensors[ti];
        size_t end = t->offset + (size_t)t->rows * (size_t)t->cols;
        double wd = t->decay ? cfg->weight_decay : 0.0;
        for (i = t->offset; i < end; i++) {
            double g = n->g[i] * scale, mhat, vhat;
            n->m[i] = cfg->beta1 * n->m[i] + (1.0 - cfg->beta1) * g;
            n->v[i] = cfg->beta2 * n->v[i] + (1.0 - cfg->beta2) * g * g;
            mhat = n->m[i] / bc1;
            vhat = n->v[i] / bc2;
            n->p[i] -= cfg->lr * (mhat / (sqrt(vhat) + cfg->eps) + wd * n->p[i]);
        }
    }
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
