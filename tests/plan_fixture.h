/* plan_fixture.h -- a small hand-built cluster, cost model and plan shared
 * by test_plan.c, test_plan_json.c and test_export.c (static functions: each
 * test file gets its own copy).
 *
 * Cluster "a100-40:2x4,h100:1x8" (the cost model is assembled by hand from
 * the cluster and the model, with no profile: enough for everything but
 * pricing): node 0 and node 1 hold 4 A100-40 each,
 * node 2 holds 8 H100.  Model llama3-8b (32 blocks).  The plan:
 *   template 0: 2 replicas x [A100-40 TP2 blocks 0-16 | A100-40 TP2 16-32],
 *               micro-batch 1 x 16; replica q on node q, ranks 0..7;
 *   template 1: 1 replica x [H100 TP4 blocks 0-20 | H100 TP2 20-32],
 *               micro-batch 2 x 16, on node 2 GPUs 0..5, ranks 8..13.
 * Global batch 64 = 2*1*16 + 1*2*16. */
#ifndef PLAN_FIXTURE_H
#define PLAN_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "plan.h"

typedef struct fx {
    arachne_cluster *cluster;
    arachne_model *model;
    arachne_cost_model cm;
    arachne_plan plan;
} fx;

static inline void fx_stage(ar_stage *s, int type, int tp, int first, int end, int replicas)
{
    memset(s, 0, sizeof *s);
    s->type = type;
    s->tp = tp;
    s->first = first;
    s->end = end;
    s->ep = 1;
    s->etp = 1;
    s->edp = tp * replicas;
    /* distinct, non-round prices so the writer's round trip is tested */
    s->compute_s = 0.1 + 0.2 * (first + 1) / 7.0;
    s->tp_comm_s = tp > 1 ? 0.01 / 3.0 : 0.0;
    s->ep_comm_s = 0.0;
    s->p2p_s = 1e-3 / 7.0;
    s->sync_s = 0.05 / 3.0;
    s->stage_s = s->compute_s + s->tp_comm_s + s->p2p_s;
    s->mem_bytes = 1.2345678901e10 + end;
}

/* Fills f->plan with the fixture plan (after ar_plan_init). */
static inline int fx_plan(fx *f)
{
    arachne_plan *p = &f->plan;
    int st = ar_plan_init(p, &f->cm), q, s, k, r = 0;
    if (st) return st;
    p->ntemplates = 2;
    p->t[0].depth = 2;
    p->t[0].replicas = 2;
    p->t[0].micro_batch = 1;
    p->t[0].micro_batches = 16;
    p->t[0].pipeline_s = 7.0 / 3.0;
    fx_stage(&p->t[0].stages[0], 0, 2, 0, 16, 2);
    fx_stage(&p->t[0].stages[1], 0, 2, 16, 32, 2);
    p->t[1].depth = 2;
    p->t[1].replicas = 1;
    p->t[1].micro_batch = 2;
    p->t[1].micro_batches = 16;
    p->t[1].pipeline_s = 2.0 / 3.0;
    fx_stage(&p->t[1].stages[0], 1, 4, 0, 20, 1);
    fx_stage(&p->t[1].stages[1], 1, 2, 20, 32, 1);
    p->nranks = 14;
    p->ranks = calloc(14, sizeof *p->ranks);
    if (!p->ranks) return ARACHNE_E_NO_MEMORY;
    for (q = 0; q < 2; q++)
        for (s = 0; s < 2; s++)
            for (k = 0; k < 2; k++, r++) {
                ar_rank *R = &p->ranks[r];
                R->rank = r; R->node = q; R->gpu = s * 2 + k;
                R->tmpl = 0; R->replica = q; R->stage = s; R->tp_rank = k;
            }
    for (s = 0; s < 2; s++)
        for (k = 0; k < p->t[1].stages[s].tp; k++, r++) {
            ar_rank *R = &p->ranks[r];
            R->rank = r; R->node = 2; R->gpu = r - 8;
            R->tmpl = 1; R->replica = 0; R->stage = s; R->tp_rank = k;
        }
    p->iteration_s = 2.5 + 1.0 / 3.0;
    p->iter_per_s = 1.0 / p->iteration_s;
    p->samples_per_s = 64.0 * p->iter_per_s;
    p->tokens_per_s = p->samples_per_s * 4096.0;
    p->mfu = 0.41234567890123;
    p->bubble = 0.0625;
    p->gpus_used = 14;
    snprintf(p->method, sizeof p->method, "%s", "test");
    p->planning_s = 0.123456789;
    p->evaluations = 4242;
    p->samples = 3;
    return ar_plan_finish(p);
}

/* Builds cluster, model, cost model and plan.  0 on success. */
static inline int fx_init(fx *f)
{
    int st;
    memset(f, 0, sizeof *f);
    st = arachne_cluster_parse(&f->cluster, "a100-40:2x4,h100:1x8");
    if (st) return st;
    st = arachne_model_preset(&f->model, "llama3-8b");
    if (st) return st;
    f->cm.model = f->model;
    f->cm.cluster = f->cluster;
    f->cm.profile = NULL;
    f->cm.setup.global_batch = 64;
    f->cm.setup.seq_len = 4096;
    f->cm.setup.weight_bytes = 2;
    f->cm.setup.grad_bytes = 4;
    f->cm.setup.optim_bytes = 12;
    f->cm.setup.dist_optimizer = 1;
    f->cm.setup.recompute = AR_RECOMPUTE_SELECTIVE;
    f->cm.setup.headroom = 0.08;
    f->cm.setup.max_depth = 8;
    return fx_plan(f);
}

static inline void fx_free(fx *f)
{
    ar_plan_clear(&f->plan);
    arachne_cluster_destroy(f->cluster);
    arachne_model_destroy(f->model);
    f->cluster = NULL;
    f->model = NULL;
}

/* Replaces the first occurrence of `from` in text by `to` (malloc'd result). */
static inline char *fx_replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    size_t n, a, b;
    char *out;
    if (!at) return NULL;
    n = strlen(text);
    a = strlen(from);
    b = strlen(to);
    out = malloc(n - a + b + 1);
    if (!out) return NULL;
    memcpy(out, text, (size_t)(at - text));
    memcpy(out + (at - text), to, b);
    memcpy(out + (at - text) + b, at + a, n - (size_t)(at - text) - a + 1);
    return out;
}

#endif
