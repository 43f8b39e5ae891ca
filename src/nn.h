/* nn.h -- the planning policy's neural network (internal).
 *
 * A hand-written MLP in double precision with FiLM conditioning and three
 * decision heads (see docs/policy.md, "Network"):
 *
 *   FiLM generator   g = tanh(Wg1 c + bg1);  o = Wg2 g + bg2
 *                    o holds (dgamma, beta) for every FiLM site; gamma = 1 + dgamma.
 *                    Wg2 = bg2 = 0 at init, so every FiLM site starts as identity.
 *   backbone         a_0 = x;  a_l = tanh(gamma_l * (W_l a_{l-1} + b_l) + beta_l);  h = a_L
 *   DEPTH / DEVICE   per candidate k with feature row f_k:
 *                    s_k = w2 . tanh(gamma * (W1h h + W1f f_k + b1) + beta) + b2
 *   TP               logits = Wt2 tanh(gamma * (Wt1 h + bt1) + beta) + bt2
 *   output           log-softmax over the valid entries; masked entries get
 *                    log-probability -inf and are excluded from the softmax.
 *
 * Every parameter lives in one double array (named tensor views); the
 * gradient and the two Adam moment arrays sit in the same allocation.
 *
 * Threads: ar_nn_forward reads a const ar_nn and writes only the workspace,
 * so many threads may run forward on one shared network, each with its own
 * workspace.  ar_nn_backward_into(const ar_nn *, ws, ..., grad) accumulates
 * into a caller array, so per-thread gradients can be summed in a fixed
 * order (deterministic regardless of thread count).  Everything else that
 * takes a non-const ar_nn needs exclusive access. */
#ifndef ARACHNE_NN_H
#define ARACHNE_NN_H

#include <stddef.h>
#include <stdint.h>

#define AR_NN_MAX_LAYERS 8     /* backbone layers */
#define AR_NN_MAX_DIM 4096     /* any one size in ar_nn_config */
#define AR_NN_MAX_TP 11        /* TP options 1, 2, 4, ..., 1024 */

/* Network sizes.  Defaults (ar_nn_config_default) in brackets. */
typedef struct ar_nn_config {
    int state_dim;       /* S: state vector entries [128] */
    int comp_dim;        /* C: composition summary entries [16] */
    int cand_dim;        /* F: features per depth/device candidate [8] */
    int hidden;          /* H: backbone width [128] */
    int layers;          /* L: backbone layers, 1..AR_NN_MAX_LAYERS [2] */
    int film_hidden;     /* FiLM generator hidden width [32] */
    int head_hidden;     /* hidden width of each head [64] */
    int max_depth_cands; /* most DEPTH candidates per decision: STOP + 1..32 [33] */
    int max_type_cands;  /* most DEVICE candidates per decision [16] */
    int n_tp;            /* TP options 1, 2, ..., 2^(n_tp-1), 1..AR_NN_MAX_TP [11] */
} ar_nn_config;

#define AR_NN_CONFIG_FIELDS 10 /* number of int fields above (file format) */

void ar_nn_config_default(ar_nn_config *c);
/* ARACHNE_OK, or ARACHNE_E_INVALID_ARGUMENT naming the bad field. */
int ar_nn_config_check(const ar_nn_config *c);
/* The fields as an array in declaration order (file format order). */
void ar_nn_config_to_array(const ar_nn_config *c, int out[AR_NN_CONFIG_FIELDS]);
void ar_nn_config_from_array(ar_nn_config *c, const int in[AR_NN_CONFIG_FIELDS]);
/* Parameter count a network of this (valid) config has. */
size_t ar_nn_config_param_count(const ar_nn_config *c);

typedef struct ar_nn ar_nn;

/* Deterministic init from seed: same config + seed => bit-identical params.
 * Weights ~ N(0, 1/fan_in) (output layers of the heads scaled by 0.01 so
 * the initial policy is near uniform), biases 0, FiLM output layer 0.
 * Gradients, Adam moments and the step counter start at 0. */
int ar_nn_create(ar_nn **out, const ar_nn_config *cfg, uint64_t seed);
void ar_nn_destroy(ar_nn *n);                 /* NULL is a no-op */
/* Deep copy: params, grads, Adam state. */
int ar_nn_clone(ar_nn **out, const ar_nn *src);
/* Copies src's parameters into dst (same config, else INVALID_ARGUMENT);
 * dst's gradients and Adam state are untouched. */
int ar_nn_copy_params(ar_nn *dst, const ar_nn *src);

const ar_nn_config *ar_nn_get_config(const ar_nn *n);
size_t ar_nn_param_count(const ar_nn *n);
double *ar_nn_params(ar_nn *n);
const double *ar_nn_params_const(const ar_nn *n);
double *ar_nn_grads(ar_nn *n);
void ar_nn_zero_grad(ar_nn *n);

/* Named tensor views (row-major, rows x cols; vectors have cols = 1).
 * Names: "bb.<l>.w" (H x in), "bb.<l>.b", "film.w1" (FH x C), "film.b1",
 * "film.w2" (2*(L*H + 3*HH) x FH), "film.b2", "<head>.w1h" (HH x H),
 * "<head>.w1f" (HH x F), "<head>.b1", "<head>.w2" (HH), "<head>.b2" (1),
 * "<head>.wb" (F x H), "<head>.wf" (F) (the direct path) for head = depth, device; "tp.w1" (HH x H), "tp.b1", "tp.w2" (n_tp x HH),
 * "tp.b2".  Order of the list = order in the parameter array. */
typedef struct ar_nn_tensor {
    char name[16];
    size_t offset;     /* into ar_nn_params() */
    int rows, cols;
    int decay;         /* 1: weight decay applies (weights, not biases) */
} ar_nn_tensor;
int ar_nn_tensor_count(const ar_nn *n);
const ar_nn_tensor *ar_nn_tensor_at(const ar_nn *n, int i);
const ar_nn_tensor *ar_nn_tensor_find(const ar_nn *n, const char *name); /* NULL if absent */

/* FiLM output layout: site s has dgamma at film_out[2*off_s .. 2*off_s+size_s)
 * and beta right after it, where sites are backbone layers 0..L-1 (size H),
 * then depth, device, tp heads (size HH); off_s = sum of earlier sizes. */

typedef enum ar_head { AR_HEAD_DEPTH = 0, AR_HEAD_DEVICE = 1, AR_HEAD_TP = 2 } ar_head;

/* Workspace: a tape of decisions.  Each ar_nn_forward appends one record
 * (inputs and every activation) so a whole trajectory can be
 * backpropagated afterwards.  ar_nn_ws_reset empties the tape (memory is
 * kept for reuse).  A workspace is tied to the config of the network it was
 * created for and may be used with any network of that config. */
typedef struct ar_nn_ws ar_nn_ws;
int ar_nn_ws_create(ar_nn_ws **out, const ar_nn *n);
void ar_nn_ws_destroy(ar_nn_ws *ws);          /* NULL is a no-op */
void ar_nn_ws_reset(ar_nn_ws *ws);
int ar_nn_ws_count(const ar_nn_ws *ws);       /* records on the tape */
/* on != 0: forwards reuse the FiLM generator's output (it depends on the
 * composition vector c and the network's parameters only) while c is
 * bitwise the c of the forward that computed it, with the same network;
 * the same numbers, computed once per rollout instead of per decision.
 * The caller promises that the network's parameters do not change until
 * its next call of this function (which drops the kept output; the policy
 * decision source calls it at every rollout's reset).  ar_nn_ws_reset
 * keeps it.  Off by default (training's gradient workspaces). */
void ar_nn_ws_keep_film(ar_nn_ws *ws, int on);

/* One decision.  x: S entries; c: C entries; cand: K x F row-major (DEPTH,
 * DEVICE; ignored for TP, may be NULL); K: candidates (1..max_depth_cands,
 * 1..max_type_cands, or exactly n_tp for TP); mask: K bytes, nonzero =
 * valid (NULL = all valid; at least one must be valid).  Masked candidates
 * are not evaluated (their feature rows may hold anything); valid logits do
 * not depend on the mask.  logp_out (K entries, may be NULL) receives
 * log-probabilities, -INFINITY for masked entries.
 * Returns the record index on the tape (>= 0), or a negative status:
 * ARACHNE_E_INVALID_ARGUMENT (bad head, K, NULL input, non-finite input,
 * no valid entry, workspace of another config), ARACHNE_E_NO_MEMORY. */
int ar_nn_forward(const ar_nn *n, ar_nn_ws *ws, ar_head head, const double *x, const double *c,
                  const double *cand, int K, const unsigned char *mask, double *logp_out);

/* Cached outputs of a record (K entries; masked: logits and logp -INFINITY,
 * probs 0).  NULL for a bad index. */
int ar_nn_ws_k(const ar_nn_ws *ws, int rec);
const double *ar_nn_ws_logits(const ar_nn_ws *ws, int rec);
const double *ar_nn_ws_logp(const ar_nn_ws *ws, int rec);
const double *ar_nn_ws_probs(const ar_nn_ws *ws, int rec);
const unsigned char *ar_nn_ws_mask(const ar_nn_ws *ws, int rec);

/* Backward of record rec.  dlogits: d(loss)/d(logits) for the K entries
 * (masked entries ignored).  Accumulates (+=) d(loss)/d(params) into grad
 * (ar_nn_param_count entries).  Uses the workspace's scratch memory, so one
 * workspace runs one backward at a time.  INVALID_ARGUMENT for a bad record
 * or workspace. */
int ar_nn_backward_into(const ar_nn *n, ar_nn_ws *ws, int rec, const double *dlogits, double *grad);
/* Same into the network's own gradient array. */
int ar_nn_backward_logits(ar_nn *n, ar_nn_ws *ws, int rec, const double *dlogits);
/* Same, given d(loss)/d(log-probabilities) (masked entries ignored):
 * converted with dlogit_j = dlogp_j - p_j * sum_i dlogp_i. */
int ar_nn_backward(ar_nn *n, ar_nn_ws *ws, int rec, const double *dlogp);

/* Categorical over masked logits (mask NULL = all valid; masked logits are
 * ignored).  Writes logp (K, -INFINITY for masked) and probs (K, 0 for
 * masked) when not NULL, the entropy -sum p log p through *entropy when not
 * NULL.  INVALID_ARGUMENT when no entry is valid or a valid logit is not
 * finite. */
int ar_cat_eval(const double *logits, const unsigned char *mask, int K, double *logp, double *probs,
                double *entropy);
/* dlogits = d(a * logp[chosen] + b * entropy) / d(logits), from the
 * distribution's logp (as written by ar_cat_eval); masked entries get 0.
 * INVALID_ARGUMENT when chosen is out of range or masked. */
int ar_cat_grad(const double *logp, const unsigned char *mask, int K, int chosen, double a, double b,
                double *dlogits);

/* Adam (decoupled weight decay on tensors with decay = 1) with global
 * gradient-norm clipping: when clip_norm > 0 and |g| > clip_norm the
 * gradient is scaled by clip_norm/|g| before the moments update.  Does not
 * zero the gradient. */
typedef struct ar_adam_config {
    double lr;           /* [3e-4] */
    double beta1;        /* [0.9] */
    double beta2;        /* [0.999] */
    double eps;          /* [1e-8] */
    double clip_norm;    /* [1.0]; 0 = no clipping */
    double weight_decay; /* [0]; per step: w -= lr * weight_decay * w */
} ar_adam_config;
void ar_adam_config_default(ar_adam_config *c);
/* Bounds on the optimiser state: a weight and a first moment within
 * +-AR_NN_STATE_LIMIT, a second moment in [0, AR_NN_STATE_LIMIT^2].  Far
 * beyond anything training produces (weights are O(1)), yet small enough
 * that one Adam step from any state inside them is finite.  Training
 * checkpoints are refused on save and on load outside these bounds, and an
 * Adam step that would leave them is not taken. */
#define AR_NN_STATE_LIMIT 1e30
static inline int ar_nn_state_ok(double w, double m, double v)
{
    return w >= -AR_NN_STATE_LIMIT && w <= AR_NN_STATE_LIMIT && m >= -AR_NN_STATE_LIMIT &&
           m <= AR_NN_STATE_LIMIT && v >= 0.0 && v <= AR_NN_STATE_LIMIT * AR_NN_STATE_LIMIT;
}
/* One step.  *grad_norm_out (may be NULL) receives the pre-clip L2 norm.
 * INVALID_ARGUMENT for a bad config, a non-finite gradient, or a step that
 * would take a weight or moment outside ar_nn_state_ok (non-finite
 * included; message names the parameter).  On failure parameters, moments
 * and the step counter are left untouched. */
int ar_nn_adam_step(ar_nn *n, const ar_adam_config *cfg, double *grad_norm_out);
/* Clears the Adam moments and step counter. */
void ar_nn_adam_reset(ar_nn *n);
long ar_nn_adam_steps(const ar_nn *n);
/* Adam state for training checkpoints: the first (which = 0) or second
 * (which = 1) moment array, ar_nn_param_count entries each; NULL for a NULL
 * network or another which. */
double *ar_nn_adam_moment(ar_nn *n, int which);
const double *ar_nn_adam_moment_const(const ar_nn *n, int which);
/* Sets the Adam step counter (restoring a checkpoint); t < 0 is taken as 0. */
void ar_nn_adam_set_steps(ar_nn *n, long t);

#endif
