/* nn_internal.h -- the network's parameter layout and handle, shared by
 * nn.c (forward/backward) and nn_adam.c (optimizer).  Internal to the nn
 * module; other modules use nn.h. */
#ifndef ARACHNE_NN_INTERNAL_H
#define ARACHNE_NN_INTERNAL_H

#include "nn.h"

#define AR_NN_MAX_TENSORS (2 * AR_NN_MAX_LAYERS + 4 + 2 * 7 + 4)

/* Tensor table plus the index of each named tensor in it. */
typedef struct ar_nn_layout {
    ar_nn_tensor tensors[AR_NN_MAX_TENSORS];
    int count;
    size_t total;                   /* parameters */
    int film_out;                   /* FiLM generator outputs: 2*(L*H + 3*HH) */
    int bb_w[AR_NN_MAX_LAYERS], bb_b[AR_NN_MAX_LAYERS];
    int film_w1, film_b1, film_w2, film_b2;
    int c_w1h[2], c_w1f[2], c_b1[2], c_w2[2], c_b2[2]; /* [0] depth, [1] device */
    int c_wb[2], c_wf[2];           /* direct candidate path: v = Wb h + wf, score += v . f_k */
    int tp_w1, tp_b1, tp_w2, tp_b2;
} ar_nn_layout;

void ar_nn_layout_build(ar_nn_layout *lay, const ar_nn_config *c);

struct ar_nn {
    ar_nn_config cfg;
    ar_nn_layout lay;
    size_t n_params;
    double *mem;          /* one allocation: p | g | m | v, n_params each */
    double *p, *g, *m, *v;
    long t;               /* Adam steps taken */
};

#endif
