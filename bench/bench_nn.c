/* bench_nn.c -- policy network cost per decision at the default sizes:
 * forward alone and forward + backward, per head, plus a whole construction
 * (1 depth + 8 x (device, TP) decisions) put on the tape then backpropagated.
 * Prints a table and one JSON line per case.  Times are medians over
 * batches (each batch's mean per decision). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "nn.h"
#include "util.h"

#define BATCHES 31
#define PER_BATCH 200

typedef struct bench_in {
    double x[128], c[16], cand[33 * 8], dl[33];
    unsigned char mask[33];
} bench_in;

/* mode 0: forward only; 1: forward + backward; 2: construction (decisions per rep: 17) */
static double run_case(ar_nn *n, ar_nn_ws *ws, ar_head head, int K, const bench_in *in, int mode, int *per_rep)
{
    double t[BATCHES];
    int b, i, j;
    *per_rep = mode == 2 ? 17 : 1;
    for (b = 0; b < BATCHES; b++) {
        double t0 = ar_now();
        for (i = 0; i < PER_BATCH; i++) {
            ar_nn_ws_reset(ws);
            if (mode < 2) {
                int rec = ar_nn_forward(n, ws, head, in->x, in->c, in->cand, K, in->mask, NULL);
                if (rec < 0) return -1.0;
                if (mode == 1 && ar_nn_backward_logits(n, ws, rec, in->dl)) return -1.0;
            } else {
                if (ar_nn_forward(n, ws, AR_HEAD_DEPTH, in->x, in->c, in->cand, 33, in->mask, NULL) < 0) return -1.0;
                for (j = 0; j < 8; j++) {
                    if (ar_nn_forward(n, ws, AR_HEAD_DEVICE, in->x, in->c, in->cand, 8, in->mask, NULL) < 0) return -1.0;
                    if (ar_nn_forward(n, ws, AR_HEAD_TP, in->x, in->c, NULL, 11, in->mask, NULL) < 0) return -1.0;
                }
                for (j = ar_nn_ws_count(ws) - 1; j >= 0; j--)
                    if (ar_nn_backward_logits(n, ws, j, in->dl)) return -1.0;
            }
        }
        t[b] = (ar_now() - t0) / PER_BATCH / *per_rep;
    }
    return bench_median(t, BATCHES);
}

int main(void)
{
    ar_nn_config cfg;
    ar_nn *n = NULL;
    ar_nn_ws *ws = NULL;
    ar_adam_config ac;
    bench_in in;
    ar_rng r;
    int i, per_rep;
    double t_adam[BATCHES];
    static const struct { const char *name; ar_head head; int K, mode; } cases[] = {
        { "depth_forward", AR_HEAD_DEPTH, 33, 0 },
        { "depth_forward_backward", AR_HEAD_DEPTH, 33, 1 },
        { "device_forward", AR_HEAD_DEVICE, 8, 0 },
        { "device_forward_backward", AR_HEAD_DEVICE, 8, 1 },
        { "tp_forward", AR_HEAD_TP, 11, 0 },
        { "tp_forward_backward", AR_HEAD_TP, 11, 1 },
        { "construction_17_decisions_fwd_bwd", AR_HEAD_DEPTH, 33, 2 },
    };
    double res[sizeof cases / sizeof cases[0]];

    ar_nn_config_default(&cfg);
    if (ar_nn_create(&n, &cfg, 1) || ar_nn_ws_create(&ws, n)) {
        fprintf(stderr, "bench_nn: %s\n", arachne_last_error());
        return 1;
    }
    ar_rng_seed(&r, 2);
    for (i = 0; i < 128; i++) in.x[i] = ar_rng_normal(&r);
    for (i = 0; i < 16; i++) in.c[i] = ar_rng_normal(&r);
    for (i = 0; i < 33 * 8; i++) in.cand[i] = ar_rng_normal(&r);
    for (i = 0; i < 33; i++) {
        in.mask[i] = 1;
        in.dl[i] = 0.01 * ar_rng_normal(&r);
    }
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        res[i] = run_case(n, ws, cases[i].head, cases[i].K, &in, cases[i].mode, &per_rep);
        if (res[i] < 0) {
            fprintf(stderr, "bench_nn: %s\n", arachne_last_error());
            return 1;
        }
    }
    ar_adam_config_default(&ac);
    for (i = 0; i < BATCHES; i++) {
        double t0 = ar_now();
        int k;
        for (k = 0; k < 20; k++)
            if (ar_nn_adam_step(n, &ac, NULL)) return 1;
        t_adam[i] = (ar_now() - t0) / 20;
    }

    printf("policy network, default sizes: S=%d C=%d F=%d H=%d L=%d film_hidden=%d head_hidden=%d, %zu parameters\n",
           cfg.state_dim, cfg.comp_dim, cfg.cand_dim, cfg.hidden, cfg.layers, cfg.film_hidden, cfg.head_hidden,
           ar_nn_param_count(n));
    printf("%-36s %6s %14s\n", "case", "K", "median us/dec");
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        printf("%-36s %6d %14.2f\n", cases[i].name, cases[i].mode == 2 ? 0 : cases[i].K, res[i] * 1e6);
    printf("%-36s %6s %14.2f\n", "adam_step (per step)", "-", bench_median(t_adam, BATCHES) * 1e6);
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        printf("{\"bench\":\"nn\",\"case\":\"%s\",\"K\":%d,\"params\":%zu,\"median_us_per_decision\":%.3f}\n",
               cases[i].name, cases[i].mode == 2 ? 0 : cases[i].K, ar_nn_param_count(n), res[i] * 1e6);
    printf("{\"bench\":\"nn\",\"case\":\"adam_step\",\"params\":%zu,\"median_us_per_step\":%.3f}\n",
           ar_nn_param_count(n), bench_median(t_adam, BATCHES) * 1e6);
    ar_nn_ws_destroy(ws);
    ar_nn_destroy(n);
    return 0;
}
