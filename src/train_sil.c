/* train_sil.c -- self-imitation: per-depth replay buffers of the best plans
 * found in training, their imitation gradient, and the replay of a kept
 * plan's choices through the construction (docs/training.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

void ar_sil_plan_free(ar_sil_plan *p)
{
    if (!p) return;
    free(p->dec);
    free(p->in);
    free(p->masks);
    memset(p, 0, sizeof *p);
}

int ar_sil_plan_copy(ar_sil_plan *dst, const ar_sil_plan *src)
{
    ar_sil_plan n;
    memset(&n, 0, sizeof n);
    n.iter_per_s = src->iter_per_s;
    n.depth = src->depth;
    n.ndec = src->ndec;
    n.in_len = src->in_len;
    n.masks_len = src->masks_len;
    n.dec = ar_malloc((size_t)(src->ndec ? src->ndec : 1) * sizeof *n.dec);
    n.in = ar_malloc((src->in_len ? src->in_len : 1) * sizeof *n.in);
    n.masks = ar_malloc(src->masks_len ? src->masks_len : 1);
    if (!n.dec || !n.in || !n.masks) {
        ar_sil_plan_free(&n);
        return ARACHNE_E_NO_MEMORY;
    }
    if (src->ndec) memcpy(n.dec, src->dec, (size_t)src->ndec * sizeof *n.dec);
    if (src->in_len) memcpy(n.in, src->in, src->in_len * sizeof *n.in);
    if (src->masks_len) memcpy(n.masks, src->masks, src->masks_len);
    ar_sil_plan_free(dst);
    *dst = n;
    return ARACHNE_OK;
}

int ar_sil_plan_from_src(ar_sil_plan *dst, const ar_policy_src *src, double iter_per_s, int depth)
{
    ar_sil_plan n;
    size_t in_len = 0, masks_len = 0, k;
    int i;
    memset(&n, 0, sizeof n);
    for (i = 0; i < src->nrecs; i++) {
        const ar_decision_rec *r = &src->recs[i];
        in_len += AR_STATE_DIM + AR_STATE_COMP + (r->head == AR_HEAD_TP ? 0 : (size_t)r->K * AR_STATE_CAND);
        masks_len += (size_t)r->K;
    }
    n.iter_per_s = iter_per_s;
    n.depth = depth;
    n.ndec = src->nrecs;
    n.dec = ar_malloc((size_t)(src->nrecs ? src->nrecs : 1) * sizeof *n.dec);
    n.in = ar_malloc((in_len ? in_len : 1) * sizeof *n.in);
    n.masks = ar_malloc(masks_len ? masks_len : 1);
    if (!n.dec || !n.in || !n.masks) {
        ar_sil_plan_free(&n);
        return ARACHNE_E_NO_MEMORY;
    }
    for (i = 0; i < src->nrecs; i++) {
        const ar_decision_rec *r = &src->recs[i];
        ar_sil_dec *d = &n.dec[i];
        size_t nx = AR_STATE_DIM + AR_STATE_COMP;
        d->head = r->head;
        d->K = r->K;
        d->choice = r->choice;
        d->step = r->step;
        d->in_off = n.in_len;
        /* x and c are adjacent in the source pool (policy.c writes c right
         * after x) but copy them by offset to depend on nothing. */
        for (k = 0; k < AR_STATE_DIM; k++) n.in[n.in_len++] = (float)src->pool[r->x_off + k];
        for (k = 0; k < AR_STATE_COMP; k++) n.in[n.in_len++] = (float)src->pool[r->c_off + k];
        if (r->head != AR_HEAD_TP) {
            size_t nc = (size_t)r->K * AR_STATE_CAND;
            for (k = 0; k < nc; k++) n.in[n.in_len++] = (float)src->pool[r->cand_off + k];
            nx += nc;
        }
        (void)nx;
        d->mask_off = n.masks_len;
        memcpy(n.masks + n.masks_len, src->masks + r->mask_off, (size_t)r->K);
        n.masks_len += (size_t)r->K;
    }
    ar_sil_plan_free(dst);
    *dst = n;
    return ARACHNE_OK;
}

int ar_sil_offer(ar_train_comp *c, const ar_policy_src *src, double iter_per_s, int depth, int per_depth)
{
    int st, n, pos, i;
    ar_sil_plan *b;
    if (!(iter_per_s > 0) || depth < 1 || depth > AR_SEARCH_MAX_DEPTH) return ARACHNE_OK;
    if (c->best.ndec == 0 || iter_per_s > c->best.iter_per_s) {
        st = ar_sil_plan_from_src(&c->best, src, iter_per_s, depth);
        if (st) return st;
    }
    if (!c->buf[depth - 1]) {
        c->buf[depth - 1] = ar_calloc(AR_TRAIN_MAX_SIL, sizeof(ar_sil_plan));
        if (!c->buf[depth - 1]) return ARACHNE_E_NO_MEMORY;
    }
    b = c->buf[depth - 1];
    n = c->nbuf[depth - 1];
    if (n > per_depth) {            /* the limit was lowered: drop the tail */
        for (i = per_depth; i < n; i++) ar_sil_plan_free(&b[i]);
        n = c->nbuf[depth - 1] = per_depth;
    }
    /* position: after every kept plan at least as fast (ties keep the older) */
    for (pos = 0; pos < n && b[pos].iter_per_s >= iter_per_s; pos++) {}
    if (pos >= per_depth) return ARACHNE_OK;
    /* the same plan found again (same throughput and choices) is not kept twice */
    for (i = 0; i < n; i++)
        if (b[i].iter_per_s == iter_per_s && b[i].ndec == src->nrecs) {
            int k, same = 1;
            for (k = 0; k < src->nrecs && same; k++) same = b[i].dec[k].choice == src->recs[k].choice;
            if (same) return ARACHNE_OK;
        }
    if (n == per_depth) {
        ar_sil_plan_free(&b[n - 1]);
        n--;
    }
    memmove(&b[pos + 1], &b[pos], (size_t)(n - pos) * sizeof *b);
    memset(&b[pos], 0, sizeof b[pos]);
    st = ar_sil_plan_from_src(&b[pos], src, iter_per_s, depth);
    if (st) {
        memmove(&b[pos], &b[pos + 1], (size_t)(n - pos) * sizeof *b);
        memset(&b[n], 0, sizeof b[n]);
        c->nbuf[depth - 1] = n;
        return st;
    }
    c->nbuf[depth - 1] = n + 1;
    return ARACHNE_OK;
}

double ar_train_sil_weight(double R, double b, double s, double clip)
{
    double w;
    if (!(R > b)) return 0.0;
    w = (R - b) / (s + 1e-6 * fabs(b) + 1e-300);
    return w < clip ? w : clip;
}

int ar_sil_dec_forward(const ar_nn *nn, ar_nn_ws *ws, const ar_sil_plan *p, int i, double *logp)
{
    double x[AR_STATE_DIM], c[AR_STATE_COMP], cand[AR_MAX_CHOICES * AR_STATE_CAND];
    const ar_sil_dec *d = &p->dec[i];
    const float *in = p->in + d->in_off;
    int has_cand = d->head != AR_HEAD_TP, k;
    if (d->K < 1 || d->K > AR_MAX_CHOICES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "trainer: a kept decision has %d candidates", d->K);
    for (k = 0; k < AR_STATE_DIM; k++) x[k] = in[k];
    for (k = 0; k < AR_STATE_COMP; k++) c[k] = in[AR_STATE_DIM + k];
    if (has_cand)
        for (k = 0; k < d->K * AR_STATE_CAND; k++) cand[k] = in[AR_STATE_DIM + AR_STATE_COMP + k];
    ar_nn_ws_reset(ws);
    return ar_nn_forward(nn, ws, (ar_head)d->head, x, c, has_cand ? cand : NULL, d->K, p->masks + d->mask_off, logp);
}

int ar_sil_plan_grad(const ar_nn *nn, ar_nn_ws *ws, const ar_sil_plan *p, double w, double *grad, double *nll)
{
    double logp[AR_MAX_CHOICES], dl[AR_MAX_CHOICES];
    int i, rec, st;
    for (i = 0; i < p->ndec; i++) {
        const ar_sil_dec *d = &p->dec[i];
        const unsigned char *mask = p->masks + d->mask_off;
        rec = ar_sil_dec_forward(nn, ws, p, i, logp);
        if (rec < 0) return rec;
        if (nll) *nll -= logp[d->choice];
        st = ar_cat_grad(logp, mask, d->K, d->choice, -w, 0.0, dl);
        if (st) return st;
        st = ar_nn_backward_into(nn, ws, rec, dl, grad);
        if (st) return st;
    }
    ar_nn_ws_reset(ws);
    return ARACHNE_OK;
}

int ar_sil_grad(const arachne_trainer *t, int ci, ar_nn_ws *ws, double *grad, int *nplans)
{
    const ar_nn *nn = t->policy->nn;
    double clip = t->opt[ARACHNE_TRAIN_SIL_CLIP], weight = t->opt[ARACHNE_TRAIN_SIL_WEIGHT];
    double top = t->opt[ARACHNE_TRAIN_SIL_TOP], roll_w = t->opt[ARACHNE_TRAIN_ROLLOUT_WEIGHT];
    const ar_sil_plan *roll = &t->comp[ci].roll;
    int pass, n = 0, used = 0, j, d, k, st;
    *nplans = 0;
    /* pass 0 counts the plans with a positive weight, pass 1 adds them */
    for (pass = 0; pass < 2; pass++) {
        /* the composition's rollout target, at a fixed weight: its choices
         * are the lookahead's corrections of the current policy */
        if (roll->ndec > 0 && roll_w > 0 && t->comp[ci].have_group) {
            if (pass == 0) {
                n++;
            } else {
                st = ar_sil_plan_grad(nn, ws, roll, roll_w * weight / n, grad, NULL);
                if (st) return st;
                used++;
            }
        }
        for (j = -1; j < t->comp[ci].nneighbours; j++) {
            int cj = j < 0 ? ci : t->comp[ci].neighbours[j];
            const ar_train_comp *c = &t->comp[cj];
            if (!c->have_group) continue;
            for (d = 0; d < AR_SEARCH_MAX_DEPTH; d++) {
                /* the composition's own buffers whole; a neighbour's best per depth */
                int kmax = j < 0 ? c->nbuf[d] : AR_MIN(c->nbuf[d], 1);
                for (k = 0; k < kmax; k++) {
                    const ar_sil_plan *p = &c->buf[d][k];
                    double w = ar_train_sil_weight(p->iter_per_s, c->mean_return, c->std_return, clip);
                    /* only plans close to the best found: a weak plan kept as
                     * the anchor of its depth would pull the policy away */
                    if (!(w > 0) || p->iter_per_s < top * c->best.iter_per_s) continue;
                    if (pass == 0) {
                        n++;
                    } else {
                        st = ar_sil_plan_grad(nn, ws, p, w * weight / n, grad, NULL);
                        if (st) return st;
                        used++;
                    }
                }
            }
        }
        if (n == 0) break;
    }
    *nplans = used;
    return ARACHNE_OK;
}

typedef struct replay_ctx {
    const ar_sil_plan *p;
    int i;
} replay_ctx;

static int replay_decide(void *user, const ar_dec_ctx *ctx, int *choice)
{
    replay_ctx *r = user;
    if (r->i >= r->p->ndec)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "trainer: replay ran past the %d recorded decisions", r->p->ndec);
    *choice = r->p->dec[r->i++].choice;
    if (*choice < 0 || *choice >= ctx->n || !ctx->mask[*choice])
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "trainer: replayed decision %d (choice %d) is not allowed", r->i - 1,
                        *choice);
    return ARACHNE_OK;
}

/* Runs b with the replay of p's recorded choices (replay_decide) into out. */
static int replay_with(ar_builder *b, const ar_sil_plan *p, arachne_plan *out)
{
    replay_ctx r;
    int st;
    r.p = p;
    r.i = 0;
    st = ar_builder_run(b, replay_decide, &r, out, NULL);
    if (st == ARACHNE_OK && r.i != p->ndec)
        st = ar_error(ARACHNE_E_INVALID_ARGUMENT, "trainer: replay used %d of %d recorded decisions", r.i, p->ndec);
    return st;
}

int ar_sil_replay(const arachne_cost_model *cm, const ar_sil_plan *p, int max_steps, arachne_plan *out)
{
    ar_builder b;
    ar_construct_opts o;
    int st;
    ar_policy_construct_opts(&o);
    o.max_steps = max_steps;
    st = ar_builder_init(&b, cm, &o);
    if (!st) st = replay_with(&b, p, out);
    ar_builder_free(&b);
    return st;
}

/* ---- rollout targets (approximate policy iteration) ---------------------- */

/* Decision source of a rollout target's replay: its choices in order. */
typedef struct seq_teach {
    const int *choices;
    int n, i;
} seq_teach;

static int seq_decide(void *user, const ar_dec_ctx *ctx, int *choice)
{
    seq_teach *q = user;
    (void)ctx;
    *choice = q->i < q->n ? q->choices[q->i] : -1;
    q->i++;
    return ARACHNE_OK;
}

int ar_sil_record_choices(ar_builder *b, ar_policy_src *src, const int *choices, int n, arachne_plan *plan,
                          ar_sil_plan *out)
{
    seq_teach q;
    int st;
    q.choices = choices;
    q.n = n;
    q.i = 0;
    ar_policy_src_reset(src, 0, 1, NULL);
    src->teach = seq_decide;
    src->teach_user = &q;
    st = ar_builder_run(b, ar_policy_decide, src, plan, NULL);
    src->teach = NULL;
    src->teach_user = NULL;
    if (st) return st;
    if (q.i != n || plan->ntemplates < 1)
        return ar_error(ARACHNE_E_INVALID_PLAN, "trainer: %d of %d recorded choices taken, %d templates placed", q.i, n,
                        plan->ntemplates);
    return ar_sil_plan_from_src(out, src, plan->iter_per_s, plan->t[0].depth);
}

int ar_sil_rollout_target(arachne_trainer *t, int ci, ar_train_slot *s)
{
    ar_train_comp *c = &t->comp[ci];
    long fills = 0;
    int choices[AR_POLICY_MAX_DECISIONS], n = 0, st;
    s->b.opts.max_steps = (int)t->opt[ARACHNE_TRAIN_MAX_STEPS];
    s->b.opts.penalty = c->penalty;
    st = ar_policy_rollout_choices(t->policy, c->cm, &s->b.opts, (long)t->opt[ARACHNE_TRAIN_ROLLOUT_EVALUATIONS],
                                   choices, AR_POLICY_MAX_DECISIONS, &n, &fills, NULL, NULL);
    c->evaluations += (double)fills;
    /* the same choices through the recording source: the inputs the policy
     * saw at each of them, as a rollout of the trainer records them */
    if (!st) st = ar_sil_record_choices(&s->b, &s->src, choices, n, &s->plan, &c->roll);
    if (!st)
        st = ar_sil_offer(c, &s->src, s->plan.iter_per_s, s->plan.t[0].depth, (int)t->opt[ARACHNE_TRAIN_SIL_PER_DEPTH]);
    /* a composition with no plan that fills has no target: no error of training's */
    if (st == ARACHNE_E_INFEASIBLE || st == ARACHNE_E_INVALID_PLAN) {
        ar_sil_plan_free(&c->roll);
        st = ARACHNE_OK;
    }
    if (st == ARACHNE_OK) arachne_clear_error();
    return st;
}

/* ---- refined plans (expert iteration) ----------------------------------- */

/* Decision source for the replay of a refined plan's structure: template
 * `step` of the plan, its depth, each stage's GPU type and GPU group (the TP
 * decision is the group, which the fill splits into tp x cp), STOP after the
 * last template.  The width (replicas first) is the largest allowed power of
 * two not above the template's replicas: the fill, not the width, sets how
 * many replicas a template gets. */
static int teach_decide(void *user, const ar_dec_ctx *ctx, int *choice)
{
    const arachne_plan *p = user;
    const ar_template *t = ctx->step < p->ntemplates ? &p->t[ctx->step] : NULL;
    int k, v;
    switch (ctx->kind) {
    case AR_DEC_REPLICAS:
        *choice = 0;
        for (k = 1; t && k < ctx->n && (1 << k) <= t->replicas; k++)
            if (ctx->mask[k]) *choice = k;
        break;
    case AR_DEC_DEPTH:
        *choice = t ? t->depth : 0;
        break;
    case AR_DEC_TYPE:
        *choice = t ? t->stages[ctx->stage].type : -1;
        break;
    default: /* AR_DEC_TP: log2 of the stage's GPU group */
        *choice = -1;
        if (!t) break;
        v = ar_stage_gpus(t, ctx->stage);
        k = ar_ilog2(v);
        *choice = (1 << k) == v ? k : -1;
        break;
    }
    return ARACHNE_OK;
}

int ar_sil_refine_best(arachne_trainer *t, int ci, ar_train_slot *s)
{
    ar_train_comp *c = &t->comp[ci];
    arachne_plan *refined = NULL;
    double from = c->best.iter_per_s;
    int max_steps = (int)t->opt[ARACHNE_TRAIN_MAX_STEPS], st;
    c->refine_gain = c->refine_miss = 0;
    if (c->best.ndec == 0 || from == c->refined_from) return ARACHNE_OK;
    c->refined_from = from;
    s->b.opts.max_steps = max_steps;
    s->b.opts.penalty = c->penalty;
    st = replay_with(&s->b, &c->best, &s->plan);
    if (!st) st = ar_plan_finish(&s->plan);
    if (!st) st = arachne_plan_refine(&refined, &s->plan, c->cm, (long)t->opt[ARACHNE_TRAIN_REFINE_EVALUATIONS], 0.0);
    if (st) goto done;
    if (!(refined->iter_per_s > from)) goto done;
    /* the refined structure, chosen through the policy's masks */
    ar_policy_src_reset(&s->src, 0, 1, NULL);
    s->src.teach = teach_decide;
    s->src.teach_user = refined;
    st = ar_builder_run(&s->b, ar_policy_decide, &s->src, &s->plan, NULL);
    s->src.teach = NULL;
    s->src.teach_user = NULL;
    if (st == ARACHNE_E_INFEASIBLE) { /* a choice the masks (or the bounded lookahead) refuse */
        c->refine_miss = 1;
        st = ARACHNE_OK;
        goto done;
    }
    if (st || !(s->plan.iter_per_s > from) || s->plan.ntemplates < 1) {
        if (!st) c->refine_miss = 1;
        goto done;
    }
    st = ar_sil_offer(c, &s->src, s->plan.iter_per_s, s->plan.t[0].depth, (int)t->opt[ARACHNE_TRAIN_SIL_PER_DEPTH]);
    c->refine_gain = st == ARACHNE_OK;
done:
    arachne_plan_destroy(refined);
    /* a plan that does not price or refine here is no error of training's */
    if (st == ARACHNE_E_INFEASIBLE || st == ARACHNE_E_INVALID_PLAN) st = ARACHNE_OK;
    if (st == ARACHNE_OK) arachne_clear_error();
    return st;
}
