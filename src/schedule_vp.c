/* schedule_vp.c -- exact time of Megatron's interleaved 1F1B schedule
 * (virtual pipeline stages, Narayanan et al. 2021), and the layer range of
 * each model chunk.  Formulas: docs/cost-model.md ("Interleaved 1F1B"). */
#include <math.h>
#include <stdlib.h>

#include "cost.h"

int ar_vp_warmup(int p, int v, int M, int s)
{
    long w = 2L * (p - s - 1) + (long)(v - 1) * p, all = (long)M * v;
    return (int)(w < all ? w : all);
}

/* Micro-batch and chunk of a stage's i-th forward (dir 0) or backward
 * (dir 1): micro-batches go in groups of p; within a group the forwards
 * visit chunks 0..v-1 and the backwards chunks v-1..0. */
static void vp_op(int p, int v, long i, int dir, int *mb, int *chunk)
{
    long g = i / ((long)p * v), r = i % ((long)p * v);
    int c = (int)(r / p);
    *mb = (int)(g * p + r % p);
    *chunk = dir ? v - 1 - c : c;
}

void ar_vp_chunk_range(const ar_template *t, int s, int c, int *first, int *end)
{
    int v = t->vp > 1 ? t->vp : 1, cc, ss, at = 0, n;
    for (cc = 0; cc <= c; cc++)
        for (ss = 0; ss < t->depth; ss++) {
            int len = t->stages[ss].end - t->stages[ss].first;
            n = len / v + (cc < len % v ? 1 : 0);
            if (cc == c && ss == s) {
                *first = at;
                *end = at + n;
                return;
            }
            at += n;
        }
    *first = *end = 0;
}

/* The evaluation keeps, per (virtual stage, micro-batch), the arrival time
 * of its input (activation or gradient); each stage runs its operations in
 * the schedule's order, so a sweep that advances every stage as far as its
 * inputs allow, repeated until all are done, visits each operation once
 * after its inputs and computes its end as max(stage free, input arrived)
 * + its time.  A link carries its messages in the order its sender makes
 * them (its operation order), so its state is the end of its last send. */
static double vp_simulate(int M, int p, int v, const double *fwd, const double *bwd, const double *send)
{
    const int P = p * v;
    const long ops = 2L * M * v;
    double *act, *grad, *endl, busy[AR_MAX_DEPTH], link_f[AR_MAX_DEPTH], link_b[AR_MAX_DEPTH], end = 0.0;
    long pos[AR_MAX_DEPTH], done = 0;
    int w[AR_MAX_DEPTH], s;
    size_t cells;
    cells = (size_t)P * (size_t)M;
    /* inputs of every (virtual stage, micro-batch), and the last virtual
     * stage's forward ends (its backward's input) */
    act = malloc((2 * cells + (size_t)M) * sizeof *act);
    if (!act) return -1.0;
    grad = act + cells;
    endl = grad + cells;
    {
        size_t i;
        for (i = 0; i < 2 * cells + (size_t)M; i++) act[i] = -1.0;   /* not yet */
    }
    for (s = 0; s < p; s++) {
        w[s] = ar_vp_warmup(p, v, M, s);
        pos[s] = 0;
        busy[s] = link_f[s] = link_b[s] = 0.0;
    }
    while (done < p * ops) {
        long before = done;
        for (s = 0; s < p; s++) {
            const long mv = (long)M * v;
            while (pos[s] < 2 * mv) {
                long i = pos[s], fi, bi;
                int dir, mb, c, vs;
                double in, t;
                /* position -> (direction, index): w forwards, pairs, w backwards */
                if (i < w[s]) { dir = 0; fi = i; bi = 0; }
                else if (i < 2 * mv - w[s]) {
                    long q = i - w[s];
                    dir = (int)(q & 1);
                    fi = w[s] + q / 2;
                    bi = q / 2;
                } else { dir = 1; fi = 0; bi = i - mv; }
                vp_op(p, v, dir ? bi : fi, dir, &mb, &c);
                vs = c * p + s;
                if (dir == 0) {
                    in = vs == 0 ? 0.0 : act[(size_t)vs * M + mb];
                    if (in < 0.0) break;
                    t = (busy[s] > in ? busy[s] : in) + fwd[vs];
                    if (vs == P - 1) endl[mb] = t;
                    if (vs + 1 < P) {
                        link_f[s] = (t > link_f[s] ? t : link_f[s]) + send[s];
                        act[(size_t)(vs + 1) * M + mb] = link_f[s];
                    }
                } else {
                    in = vs == P - 1 ? endl[mb] : grad[(size_t)vs * M + mb];
                    if (in < 0.0) break;
                    t = (busy[s] > in ? busy[s] : in) + bwd[vs];
                    if (vs > 0) {
                        int l = (s + p - 1) % p;   /* the link between stage s-1 (mod p) and s */
                        link_b[l] = (t > link_b[l] ? t : link_b[l]) + send[l];
                        grad[(size_t)(vs - 1) * M + mb] = link_b[l];
                    }
                }
                busy[s] = t;
                pos[s]++;
                done++;
            }
        }
        if (done == before) { free(act); return -1.0; }   /* a stall: cannot happen for this schedule */
    }
    for (s = 0; s < p; s++)
        if (!(busy[s] <= end)) end = busy[s];   /* a NaN (overflow) is kept, not dropped */
    free(act);
    return end;
}

/* Past AR_PIPE_STEP_MAX micro-batches the time is extrapolated: in the
 * steady state every group of p micro-batches adds the same time (the
 * schedule repeats; docs/cost-model.md, "Interleaved 1F1B"), so T is affine
 * in M there, and the line through the exact times at M1, the largest
 * multiple of p within the limit, and M0 = M1 / 2 (rounded down to a
 * multiple of p) gives T(M).  The simulation stores an arrival time per
 * (virtual stage, micro-batch), so without the limit a batch of 10^9
 * samples took minutes and tens of GB. */
double ar_pipeline_interleaved(int M, int p, int v, const double *fwd, const double *bwd, const double *send)
{
    int M0, M1;
    double t0, t1;
    if (M <= 0) return 0.0;
    if (p < 2 || p > AR_MAX_DEPTH || v < 2 || v > AR_MAX_VP || M % p != 0) return -1.0;
    if (M <= AR_PIPE_STEP_MAX) return vp_simulate(M, p, v, fwd, bwd, send);
    M1 = AR_PIPE_STEP_MAX / p * p;
    M0 = M1 / 2 / p * p;
    t1 = vp_simulate(M1, p, v, fwd, bwd, send);
    if (t1 < 0.0) return -1.0;
    t0 = vp_simulate(M0, p, v, fwd, bwd, send);
    if (t0 < 0.0) return -1.0;
    return ar_pipe_extend(M0, t0, M1, t1, M);
}
