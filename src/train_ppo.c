/* train_ppo.c -- group-relative advantages, the PPO clipped objective's
 * gradient over one composition's stored decisions, and PCGrad
 * (docs/training.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

#ifdef _OPENMP
#include <omp.h>
#endif

void ar_train_advantages(int G, const int *nsteps, const double *r, int stride, double *adv, double *mean_out,
                         double *std_out)
{
    double mean = 0, absmean = 0, var = 0, s, eps;
    int g, t, T = 0;
    /* returns-to-go, written into adv first */
    for (g = 0; g < G; g++) {
        double acc = 0;
        for (t = nsteps[g] - 1; t >= 0; t--) {
            acc += r[g * stride + t];
            adv[g * stride + t] = acc;
        }
        mean += nsteps[g] > 0 ? adv[g * stride] : 0.0;
        if (nsteps[g] > T) T = nsteps[g];
    }
    mean /= G;
    for (g = 0; g < G; g++) {
        double R = nsteps[g] > 0 ? adv[g * stride] : 0.0;
        absmean += fabs(R);
        var += (R - mean) * (R - mean);
    }
    absmean /= G;
    s = sqrt(var / G);
    if (mean_out) *mean_out = mean;
    if (std_out) *std_out = s;
    if (s <= 1e-9 * absmean || s == 0.0) {
        for (g = 0; g < G; g++)
            for (t = 0; t < nsteps[g]; t++) adv[g * stride + t] = 0.0;
        return;
    }
    eps = 1e-6 * absmean + 1e-300;
    for (t = 0; t < T; t++) {
        double m = 0;
        for (g = 0; g < G; g++) m += t < nsteps[g] ? adv[g * stride + t] : 0.0;
        m /= G;
        for (g = 0; g < G; g++)
            if (t < nsteps[g]) adv[g * stride + t] = (adv[g * stride + t] - m) / (s + eps);
    }
}

int ar_train_pcgrad(int n, size_t P, double *const *g, const int *perm, double *out, int nthreads)
{
    double *gram, *coef, *cur;
    long npairs = (long)n * (n + 1) / 2, q;
    int i, j, k;
    size_t p;
    gram = ar_malloc((size_t)n * (size_t)n * sizeof *gram);
    coef = ar_calloc((size_t)n * (size_t)n, sizeof *coef);
    cur = ar_malloc((size_t)n * sizeof *cur);
    if (!gram || !coef || !cur) {
        free(gram);
        free(coef);
        free(cur);
        return ARACHNE_E_NO_MEMORY;
    }
    (void)nthreads;
    /* Gram matrix: pair q = (i, j), j <= i; each dot product in index order. */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 4) num_threads(nthreads > 0 ? nthreads : omp_get_max_threads())
#endif
    for (q = 0; q < npairs; q++) {
        int a = (int)((sqrt(8.0 * (double)q + 1.0) - 1.0) / 2.0), b;
        double d = 0;
        size_t e;
        while ((long)a * (a + 1) / 2 > q) a--;
        while ((long)(a + 1) * (a + 2) / 2 <= q) a++;
        b = (int)(q - (long)a * (a + 1) / 2);
        for (e = 0; e < P; e++) d += g[a][e] * g[b][e];
        gram[(size_t)a * n + b] = d;
        gram[(size_t)b * n + a] = d;
    }
    /* g_i' = g_i - sum_k coef[i][k] g_k; g_i' . g_j = gram[i][j] - sum_k coef[i][k] gram[k][j] */
    for (i = 0; i < n; i++) {
        for (j = 0; j < n; j++) cur[j] = gram[(size_t)i * n + j];
        for (k = 0; k < n; k++) {
            int jj = perm[(size_t)i * n + k];
            double dot = cur[jj], nn = gram[(size_t)jj * n + jj], c;
            if (jj == i || !(dot < 0) || !(nn > 0)) continue;
            c = dot / nn;
            coef[(size_t)i * n + jj] += c;
            for (j = 0; j < n; j++) cur[j] -= c * gram[(size_t)jj * n + j];
        }
    }
    /* out = sum_i g_i - sum_k (sum_i coef[i][k]) g_k; cur reused as the column sums */
    for (k = 0; k < n; k++) {
        double s = 0;
        for (i = 0; i < n; i++) s += coef[(size_t)i * n + k];
        cur[k] = 1.0 - s;
    }
    for (p = 0; p < P; p++) {
        double s = 0;
        for (k = 0; k < n; k++) s += cur[k] * g[k][p];
        out[p] = s;
    }
    free(gram);
    free(coef);
    free(cur);
    return ARACHNE_OK;
}

int ar_train_ppo_grad(const arachne_trainer *t, int ci, ar_nn_ws *ws, double *grad, double *ent_sum, long *ndec)
{
    const ar_nn *nn = t->policy->nn;
    int G = t->slots_g, g, i, k, rec, st;
    double eps = t->opt[ARACHNE_TRAIN_CLIP], cent = ar_train_entropy(t);
    double logp[AR_SEARCH_MAX_DEPTH + 1], dl[AR_SEARCH_MAX_DEPTH + 1];
    *ent_sum = 0;
    *ndec = 0;
    for (g = 0; g < G; g++) {
        const ar_train_slot *s = &t->slots[(size_t)ci * G + g];
        const ar_policy_src *src = &s->src;
        int per_step[AR_MAX_TEMPLATES + 1];
        memset(per_step, 0, sizeof per_step);
        for (i = 0; i < src->nrecs; i++) {
            int stp = src->recs[i].step;
            if (stp >= 0 && stp <= AR_MAX_TEMPLATES) per_step[stp]++;
        }
        for (i = 0; i < src->nrecs; i++) {
            const ar_decision_rec *r = &src->recs[i];
            const unsigned char *mask = src->masks + r->mask_off;
            double A, ratio, a, b, ent = 0;
            if (r->step < 0 || r->step > AR_MAX_TEMPLATES)
                return ar_error(ARACHNE_E_INVALID_ARGUMENT, "trainer: decision of step %d", r->step);
            A = s->adv[r->step];
            ar_nn_ws_reset(ws);
            rec = ar_nn_forward(nn, ws, (ar_head)r->head, src->pool + r->x_off, src->pool + r->c_off,
                                r->head == AR_HEAD_TP ? NULL : src->pool + r->cand_off, r->K, mask, logp);
            if (rec < 0) return rec;
            ratio = exp(logp[r->choice] - r->logp);
            /* d/dlogp of min(ratio A, clip(ratio) A): ratio A, or 0 where the clip is active.
             * Dual clip: for A < 0 the objective is also bounded below by
             * AR_PPO_DUAL_CLIP x A, so a choice the policy now prefers far
             * more than the rule that drew it (a uniform exploration draw,
             * whose ratio is pi / uniform) cannot swamp the update. */
            if ((A > 0 && ratio > 1.0 + eps) || (A < 0 && ratio < 1.0 - eps) || (A < 0 && ratio > AR_PPO_DUAL_CLIP))
                a = 0.0;
            else a = -ratio * A / G;
            b = -cent / ((double)G * per_step[r->step]);
            for (k = 0; k < r->K; k++)
                if (mask[k] && isfinite(logp[k])) ent -= exp(logp[k]) * logp[k];
            *ent_sum += ent;
            (*ndec)++;
            if (a == 0.0 && b == 0.0) continue;
            st = ar_cat_grad(logp, mask, r->K, r->choice, a, b, dl);
            if (st) return st;
            st = ar_nn_backward_into(nn, ws, rec, dl, grad);
            if (st) return st;
        }
    }
    ar_nn_ws_reset(ws);
    return ARACHNE_OK;
}
