/* nn_cat.c -- categorical distribution over masked logits: log-probability,
 * entropy and their gradients (the pieces of the trainer's PPO and entropy
 * losses).  See nn.h. */
#include <math.h>

#include "nn.h"
#include "util.h"

int ar_cat_eval(const double *logits, const unsigned char *mask, int K, double *logp, double *probs,
                double *entropy)
{
    double mx = -INFINITY, sum = 0.0, lse, ent = 0.0;
    int k, any = 0;
    if (!logits || K < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "categorical: no logits");
    for (k = 0; k < K; k++) {
        if (mask && !mask[k]) continue;
        if (!isfinite(logits[k]))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "categorical: logit %d is not finite", k);
        if (!any || logits[k] > mx) mx = logits[k];
        any = 1;
    }
    if (!any) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "categorical: every one of %d entries is masked", K);
    for (k = 0; k < K; k++)
        if (!mask || mask[k]) sum += exp(logits[k] - mx);
    lse = mx + log(sum);
    for (k = 0; k < K; k++) {
        int valid = !mask || mask[k];
        double lp = valid ? logits[k] - lse : -INFINITY;
        double p = valid ? exp(lp) : 0.0;
        if (valid) ent -= p * lp;
        if (logp) logp[k] = lp;
        if (probs) probs[k] = p;
    }
    if (entropy) *entropy = ent;
    return ARACHNE_OK;
}

int ar_cat_grad(const double *logp, const unsigned char *mask, int K, int chosen, double a, double b,
                double *dlogits)
{
    double ent = 0.0;
    int k;
    if (!logp || !dlogits || K < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "categorical gradient: NULL argument");
    if (chosen < 0 || chosen >= K || (mask && !mask[chosen]))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "categorical gradient: choice %d is %s", chosen,
                        chosen < 0 || chosen >= K ? "out of range" : "masked");
    for (k = 0; k < K; k++)
        if (!mask || mask[k]) ent -= exp(logp[k]) * logp[k];
    /* d logp_c / dz_j = [j == c] - p_j ;  d H / dz_j = -p_j (logp_j + H) */
    for (k = 0; k < K; k++) {
        double p;
        if (mask && !mask[k]) {
            dlogits[k] = 0.0;
            continue;
        }
        p = exp(logp[k]);
        dlogits[k] = a * ((k == chosen ? 1.0 : 0.0) - p) - b * p * (logp[k] + ent);
    }
    return ARACHNE_OK;
}
