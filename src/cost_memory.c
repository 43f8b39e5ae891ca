/* cost_memory.c -- peak memory per GPU of a pipeline stage: weights,
 * gradients, optimizer state, activations of the micro-batches in flight,
 * framework overhead; and the out-of-memory message.  Formulas and
 * constants: docs/cost-model.md ("Memory"). */
#include <stdio.h>

#include "cost.h"

void ar_stage_params(const arachne_cost_model *cm, const ar_template *t, int s,
                     double *dense_per_gpu, double *expert_per_gpu)
{
    const ar_stage *S = &t->stages[s];
    const ar_cost_cache *c = cm->cache;
    int n_moe = c->moe_before[S->end] - c->moe_before[S->first], i;
    double dense = 0.0, expert = 0.0;
    for (i = 0; i < c->nkinds; i++) {
        int k = c->kinds[i], n = ar_stage_kind_n(c, S, k);
        if (n == 0) continue;
        dense += n * c->dense_params[k];
        if (n_moe > 0) expert += n * c->expert_params[k];
    }
    if (s == 0) dense += c->dense_params[AR_LAYER_EMBED];
    if (s == t->depth - 1) dense += c->dense_params[AR_LAYER_HEAD];
    *dense_per_gpu = dense / S->tp;
    *expert_per_gpu = n_moe > 0 ? expert / ((double)S->ep * S->etp) : 0.0;
}

double ar_type_capacity(const arachne_cost_model *cm, int type)
{
    return cm->cluster->types[type].mem_bytes * (1.0 - cm->setup.headroom);
}

int ar_stage_memory(const arachne_cost_model *cm, const ar_template *t, int s,
                    int dp_ranks, int edp_ranks, int M, ar_stage_mem *out)
{
    int rc;
    if (s < 0 || s >= t->depth) return ar_error(ARACHNE_E_INVALID_PLAN, "stage %d of a %d-stage template", s, t->depth);
    if ((rc = ar_stage_check(cm, t, s)) != ARACHNE_OK) return rc;
    return ar_stage_memory_checked(cm, t, s, dp_ranks, edp_ranks, M, out);
}

int ar_stage_memory_checked(const arachne_cost_model *cm, const ar_template *t, int s,
                            int dp_ranks, int edp_ranks, int M, ar_stage_mem *out)
{
    const ar_stage *S = &t->stages[s];
    const ar_cost_cache *c = cm->cache;
    const ar_setup *su = &cm->setup;
    ar_cost_entry tmp;
    const ar_cost_entry *e;
    double dense, expert, act = 0.0, work = 0.0;
    int rc, b = t->micro_batch, i, depth = t->depth;
    ar_stage_params(cm, t, s, &dense, &expert);
    if (dp_ranks < 1) dp_ranks = 1;
    if (edp_ranks < 1) edp_ranks = 1;
    out->weights = (dense + expert) * su->weight_bytes;
    out->grads = (dense + expert) * su->grad_bytes;
    out->optim = su->dist_optimizer ? dense * su->optim_bytes / dp_ranks + expert * su->optim_bytes / edp_ranks
                                    : (dense + expert) * su->optim_bytes;
    if (t->fsdp > 1) {
        /* FSDP (ZeRO-3, PyTorch FSDP2): gradients and optimizer state --
         * whose fp32 master copy is the sharded parameter itself -- are
         * sharded over the group; the 16-bit compute copy exists only for
         * the layer being computed and the next one (prefetch), gathered
         * whole.  Experts are already split over EP x ETP: only the group's
         * ranks that hold the same experts (f / (EP x ETP)) shard them. */
        double f = t->fsdp, fe = AR_MAX(1.0, f / ((double)S->ep * S->etp));
        double layer = (dense + expert) / AR_MAX(1, S->end - S->first);
        out->weights = 2.0 * layer * su->weight_bytes;
        out->grads = dense * su->grad_bytes / f + expert * su->grad_bytes / fe;
        out->optim = dense * su->optim_bytes / f + expert * su->optim_bytes / fe;
    }
    /* activations of one micro-batch on this stage */
    if (s == 0) {
        if ((rc = ar_cost_entry_get(cm, S->type, AR_LAYER_EMBED, S->tp, b, &tmp, &e)) != ARACHNE_OK) return rc;
        act += e->act_bytes;
    }
    if (s == depth - 1) {
        if ((rc = ar_cost_entry_get(cm, S->type, AR_LAYER_HEAD, S->tp, b, &tmp, &e)) != ARACHNE_OK) return rc;
        act += e->act_bytes;
    }
    for (i = 0; i < c->nkinds; i++) {
        int k = c->kinds[i], n = ar_stage_kind_n(c, S, k);
        if (n == 0) continue;
        if ((rc = ar_cost_entry_get(cm, S->type, k, S->tp, b, &tmp, &e)) != ARACHNE_OK) return rc;
        act += n * e->act_bytes;
        if (e->act_sel > work) work = e->act_sel;
    }
    /* context parallelism: each rank keeps the activations of its seq / cp
     * tokens (Korthikanti et al. 2022's terms are all linear in the tokens
     * once the attention scores are not stored, as under selective
     * recomputation or flash attention) */
    if (t->cp > 1) {
        act /= t->cp;
        work /= t->cp;
    }
    /* 1F1B: stage s of p holds min(p - s, M) micro-batches; an idle template
     * (M = 0) is still checked for one */
    out->in_flight = depth - s < (M > 1 ? M : 1) ? depth - s : (M > 1 ? M : 1);
    out->acts = out->in_flight * act;
    if (t->vp > 1 && depth > 1) {
        /* interleaved 1F1B: stage s holds min(w_s + 1, M v) chunk
         * activations (w_s its warm-up forwards), a chunk being 1/v of the
         * stage's layers; stage 0 of p: p + (p - 1) / v micro-batches' worth */
        int v = t->vp, mm = M > 1 ? M : 1, held = ar_vp_warmup(depth, v, mm, s) + 1;
        if (held > mm * v) held = mm * v;
        out->in_flight = (held + v - 1) / v;
        out->acts = (double)held / v * act;
    }
    /* full recomputation rebuilds one block's activations at a time */
    if (su->recompute == AR_RECOMPUTE_FULL) out->acts += work;
    out->overhead = AR_FRAMEWORK_OVERHEAD_BYTES;
    out->total = out->weights + out->grads + out->optim + out->acts + out->overhead;
    out->capacity = ar_type_capacity(cm, S->type);
    return ARACHNE_OK;
}

int ar_oom_error(const arachne_cost_model *cm, int tmpl, const ar_template *t, int s, const ar_stage_mem *m)
{
    const ar_stage *S = &t->stages[s];
    char cps[24] = "";
    if (t->cp > 1) snprintf(cps, sizeof cps, ", cp %d", t->cp);
    return ar_error(ARACHNE_E_OUT_OF_MEMORY_PLAN,
                    "template %d stage %d (%s, tp %d%s, layers %d-%d): needs %.1f GB, has %.1f GB (over by %.1f GB)",
                    tmpl, s, cm->cluster->types[S->type].name, S->tp, cps, S->first, S->end,
                    m->total / 1e9, m->capacity / 1e9, (m->total - m->capacity) / 1e9);
}
