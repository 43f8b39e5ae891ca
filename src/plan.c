/* plan.c -- the plan handle: initialisation bound to a cost model, deep
 * copy, finishing (canonical rank order + eager JSON), and the public
 * read-only getters. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "json.h"
#include "plan.h"

/* Compact string of a cluster: the cluster module's cached form when it has
 * one, else built here from the node list in node order (runs of equal
 * nodes of one type become NxG, runs of one type are joined with '+'), so
 * node indices in the plan match the nodes the string describes. */
static char *cluster_spec_string(const arachne_cluster *c)
{
    ar_buf b;
    int i = 0;
    if (c->spec_cache) return ar_strdup(c->spec_cache);
    ar_buf_init(&b);
    while (i < c->nnodes) {
        int type = c->nodes[i].type, first_group = 1;
        if (b.len) ar_buf_puts(&b, ",");
        ar_buf_printf(&b, "%s:", (type >= 0 && type < c->ntypes) ? c->types[type].name : "?");
        while (i < c->nnodes && c->nodes[i].type == type) {
            int j = i;
            while (j < c->nnodes && c->nodes[j].type == type && c->nodes[j].gpus == c->nodes[i].gpus) j++;
            ar_buf_printf(&b, "%s%dx%d", first_group ? "" : "+", j - i, c->nodes[i].gpus);
            first_group = 0;
            i = j;
        }
    }
    if (!b.len) ar_buf_puts(&b, "");
    if (ar_buf_status(&b)) { ar_buf_free(&b); return NULL; }
    return b.data;
}

int ar_plan_init(arachne_plan *p, const arachne_cost_model *cm)
{
    int i;
    if (!p || !cm || !cm->cluster || !cm->model)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan init: NULL plan or incomplete cost model");
    memset(p, 0, sizeof *p);
    p->setup = cm->setup;
    snprintf(p->model, sizeof p->model, "%s", cm->model->name);
    p->cluster_spec = cluster_spec_string(cm->cluster);
    if (!p->cluster_spec) return ARACHNE_E_NO_MEMORY;
    p->gpus_total = cm->cluster->total_gpus;
    p->ntypes = cm->cluster->ntypes;
    for (i = 0; i < p->ntypes && i < AR_MAX_TYPES; i++)
        snprintf(p->type_names[i], AR_NAME_MAX, "%s", cm->cluster->types[i].name);
    p->bound_cm = cm;
    return ARACHNE_OK;
}

void ar_plan_bind(arachne_plan *p, const arachne_cost_model *cm)
{
    if (p) p->bound_cm = cm;
}

/* Text of a writer's output without its trailing newline. */
static char *trimmed(ar_buf *b)
{
    if (ar_buf_status(b)) {
        ar_buf_free(b);
        return NULL;
    }
    while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == ' ')) b->data[--b->len] = '\0';
    return b->data;
}

void ar_plan_inputs_free(ar_plan_inputs *in)
{
    if (!in) return;
    free(in->model);
    free(in->cluster);
    free(in->profile);
    memset(in, 0, sizeof *in);
}

int ar_plan_inputs_copy(ar_plan_inputs *dst, const ar_plan_inputs *src)
{
    memset(dst, 0, sizeof *dst);
    if ((src->model && !(dst->model = ar_strdup(src->model))) ||
        (src->cluster && !(dst->cluster = ar_strdup(src->cluster))) ||
        (src->profile && !(dst->profile = ar_strdup(src->profile)))) {
        ar_plan_inputs_free(dst);
        return ARACHNE_E_NO_MEMORY;
    }
    dst->profile_crc = src->profile_crc;
    return ARACHNE_OK;
}

int ar_plan_inputs_build(const arachne_cost_model *cm, ar_plan_inputs *in)
{
    ar_buf b;
    char *m = NULL, *c = NULL, *pr = NULL;
    int st;
    memset(in, 0, sizeof *in);
    ar_buf_init(&b);
    ar_model_write_json(cm->model, &b);
    if (!(m = trimmed(&b))) return ARACHNE_E_NO_MEMORY;
    if ((st = ar_cluster_build_json(cm->cluster, &c))) {
        free(m);
        return st;
    }
    ar_buf_init(&b);
    ar_buf_puts(&b, c);
    free(c);
    if (!(c = trimmed(&b))) {
        free(m);
        return ARACHNE_E_NO_MEMORY;
    }
    if (cm->profile) { /* hand-assembled cost models (tests) may have none */
        ar_buf_init(&b);
        ar_profile_write_json(cm->profile, &b);
        if (!(pr = trimmed(&b))) {
            free(m);
            free(c);
            return ARACHNE_E_NO_MEMORY;
        }
    }
    in->model = m;
    in->cluster = c;
    in->profile = pr;
    in->profile_crc = pr ? (unsigned long)ar_crc32(pr, strlen(pr)) : 0;
    return ARACHNE_OK;
}

/* Copies the bound cost model's model, cluster and profile text into the
 * plan (what `arachne price PLAN.json` rebuilds the cost model from): the
 * text the cost model built at create time, or built here for a cost
 * model assembled by hand. */
static int record_inputs(arachne_plan *p, const arachne_cost_model *cm)
{
    const ar_plan_inputs *have = ar_cost_model_inputs(cm);
    ar_plan_inputs in;
    int st;
    if (!cm->model || !cm->cluster) return ARACHNE_OK;
    st = have ? ar_plan_inputs_copy(&in, have) : ar_plan_inputs_build(cm, &in);
    if (st) return st;
    ar_plan_inputs_free(&p->in);
    p->in = in;
    return ARACHNE_OK;
}

void ar_plan_empty(arachne_plan *p)
{
    p->ntemplates = 0;
    p->nranks = 0;
    p->ranks = NULL;
    p->cluster_spec = NULL;
    p->json_cache = NULL;
    p->bound_cm = NULL;
    memset(&p->in, 0, sizeof p->in);
}

void ar_plan_clear(arachne_plan *p)
{
    if (!p) return;
    free(p->ranks);
    free(p->cluster_spec);
    free(p->json_cache);
    ar_plan_inputs_free(&p->in);
    p->bound_cm = NULL;
    p->ranks = NULL;
    p->cluster_spec = NULL;
    p->json_cache = NULL;
    p->nranks = 0;
}

long ar_plan_samples_run(const arachne_plan *p)
{
    long n = 0;
    int j;
    for (j = 0; j < p->ntemplates && j < AR_MAX_TEMPLATES; j++)
        n += (long)p->t[j].replicas * p->t[j].micro_batch * p->t[j].micro_batches;
    return n;
}

unsigned ar_plan_gpu_types(const arachne_plan *p)
{
    unsigned m = 0u;
    int j, s;
    for (j = 0; j < p->ntemplates && j < AR_MAX_TEMPLATES; j++)
        for (s = 0; s < p->t[j].depth; s++) m |= 1u << p->t[j].stages[s].type;
    return m;
}

int ar_plan_same_structure(const arachne_plan *a, const arachne_plan *b)
{
    int j, s;
    if (a->ntemplates != b->ntemplates) return 0;
    for (j = 0; j < a->ntemplates && j < AR_MAX_TEMPLATES; j++) {
        const ar_template *x = &a->t[j], *y = &b->t[j];
        if (x->depth != y->depth) return 0;
        for (s = 0; s < x->depth; s++)
            if (x->stages[s].type != y->stages[s].type || ar_stage_gpus(x, s) != ar_stage_gpus(y, s)) return 0;
    }
    return 1;
}

double ar_plan_rank(const arachne_plan *p)
{
    long run = ar_plan_samples_run(p);
    double charged;
    if (run <= p->setup.global_batch || (!p->setup.exact_batch && !p->setup.exact_division)) return p->iter_per_s;
    charged = p->iter_per_s * ((double)p->setup.global_batch / (double)run);
    /* ARACHNE_OPT_EXACT_DIVISION: below every plan that runs the batch
     * exactly (ranks >= 0), in the order of the charged rates, and above
     * -1, which the rollout decoder gives a completion that did not fill */
    if (p->setup.exact_division) return charged > 0.0 ? -1.0 / (1.0 + charged) : -1.0 + 1e-12;
    return charged;
}

int ar_plan_copy(arachne_plan *dst, const arachne_plan *src)
{
    ar_rank *ranks = NULL;
    char *spec = NULL, *json = NULL;
    ar_plan_inputs in;
    size_t tail = offsetof(arachne_plan, nranks);
    int j, n;
    if (!dst || !src) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan copy: NULL plan");
    if (dst == src) return ARACHNE_OK;
    if (src->nranks > 0) {
        ranks = ar_malloc((size_t)src->nranks * sizeof *ranks);
        if (!ranks) return ARACHNE_E_NO_MEMORY;
        memcpy(ranks, src->ranks, (size_t)src->nranks * sizeof *ranks);
    }
    if ((src->cluster_spec && !(spec = ar_strdup(src->cluster_spec))) ||
        (src->json_cache && !(json = ar_strdup(src->json_cache))) || ar_plan_inputs_copy(&in, &src->in)) {
        free(ranks);
        free(spec);
        free(json);
        return ARACHNE_E_NO_MEMORY;
    }
    ar_plan_clear(dst);
    /* everything but the unused template slots (214 KB of them at most) */
    n = src->ntemplates < 0 ? 0 : (src->ntemplates > AR_MAX_TEMPLATES ? AR_MAX_TEMPLATES : src->ntemplates);
    dst->ntemplates = src->ntemplates;
    for (j = 0; j < n; j++) ar_template_copy(&dst->t[j], &src->t[j]);
    memcpy((char *)dst + tail, (const char *)src + tail, sizeof *dst - tail);
    dst->ranks = ranks;
    dst->cluster_spec = spec;
    dst->json_cache = json;
    dst->in = in;
    return ARACHNE_OK;
}

int ar_rank_cmp(const void *a, const void *b)
{
    const ar_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int ar_plan_finish(arachne_plan *p)
{
    ar_buf b;
    int st;
    if (!p) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan finish: NULL plan");
    if (p->nranks > 1) qsort(p->ranks, (size_t)p->nranks, sizeof *p->ranks, ar_rank_cmp);
    if (p->bound_cm) {
        if ((st = record_inputs(p, p->bound_cm))) return st;
        p->bound_cm = NULL; /* the cost model may not outlive this call */
    }
    ar_buf_init(&b);
    st = ar_plan_write_json(p, &b);
    if (st) { ar_buf_free(&b); return st; }
    free(p->json_cache);
    p->json_cache = b.data;
    return ARACHNE_OK;
}

const char *ar_plan_type_name(const arachne_plan *p, int type)
{
    if (!p || type < 0 || type >= p->ntypes || type >= AR_MAX_TYPES) return "?";
    return p->type_names[type];
}

/* ---- public API ---- */

void arachne_plan_destroy(arachne_plan *p)
{
    if (!p) return;
    ar_plan_clear(p);
    free(p);
}

int arachne_plan_to_json(const arachne_plan *p, const char **out)
{
    if (out) *out = NULL;
    if (!p || !out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan to_json: NULL %s", p ? "out" : "plan");
    if (!p->json_cache)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan to_json: the plan is not finished (no JSON built)");
    *out = p->json_cache;
    return ARACHNE_OK;
}

int arachne_plan_save(const arachne_plan *p, const char *path)
{
    ar_buf b;
    int st;
    if (!p || !path) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan save: NULL %s", p ? "path" : "plan");
    if (p->json_cache) return ar_write_file_atomic(path, p->json_cache, strlen(p->json_cache));
    ar_buf_init(&b);
    st = ar_plan_write_json(p, &b);
    if (!st) st = ar_write_file_atomic(path, b.data, b.len);
    ar_buf_free(&b);
    return st;
}

static int check_t(const arachne_plan *p, int t, const char *fn)
{
    if (t < 0 || t >= p->ntemplates)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: template index %d out of range [0, %d)", fn, t,
                        p->ntemplates);
    return ARACHNE_OK;
}

static int check_ts(const arachne_plan *p, int t, int s, const char *fn)
{
    int st = check_t(p, t, fn);
    if (st) return st;
    if (s < 0 || s >= p->t[t].depth)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: stage index %d of template %d out of range [0, %d)", fn,
                        s, t, p->t[t].depth);
    return ARACHNE_OK;
}

int arachne_plan_get(const arachne_plan *p, int field, double *out)
{
    if (!p || !out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_get: NULL %s", p ? "out" : "plan");
    switch (field) {
    case ARACHNE_PLAN_ITERATION_S: *out = p->iteration_s; break;
    case ARACHNE_PLAN_ITER_PER_S: *out = p->iter_per_s; break;
    case ARACHNE_PLAN_SAMPLES_PER_S: *out = p->samples_per_s; break;
    case ARACHNE_PLAN_TOKENS_PER_S: *out = p->tokens_per_s; break;
    case ARACHNE_PLAN_MFU: *out = p->mfu; break;
    case ARACHNE_PLAN_BUBBLE: *out = p->bubble; break;
    case ARACHNE_PLAN_GPUS_USED: *out = p->gpus_used; break;
    case ARACHNE_PLAN_GPUS_TOTAL: *out = p->gpus_total; break;
    case ARACHNE_PLAN_TEMPLATES: *out = p->ntemplates; break;
    case ARACHNE_PLAN_RANKS: *out = p->nranks; break;
    case ARACHNE_PLAN_PLANNING_S: *out = p->planning_s; break;
    case ARACHNE_PLAN_EVALUATIONS: *out = (double)p->evaluations; break;
    case ARACHNE_PLAN_GLOBAL_BATCH: *out = p->setup.global_batch; break;
    case ARACHNE_PLAN_SEQ_LEN: *out = p->setup.seq_len; break;
    case ARACHNE_PLAN_SAMPLES_RUN: *out = (double)ar_plan_samples_run(p); break;
    case ARACHNE_PLAN_RECOMPUTE: *out = p->setup.recompute; break;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_get: unknown field %d (valid 0..%d)", field,
                        ARACHNE_PLAN_RECOMPUTE);
    }
    return ARACHNE_OK;
}

int arachne_plan_template_get(const arachne_plan *p, int t, int field, double *out)
{
    const ar_template *T;
    int st;
    if (!p || !out)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_template_get: NULL %s", p ? "out" : "plan");
    if ((st = check_t(p, t, "arachne_plan_template_get"))) return st;
    T = &p->t[t];
    switch (field) {
    case ARACHNE_TEMPLATE_DEPTH: *out = T->depth; break;
    case ARACHNE_TEMPLATE_REPLICAS: *out = T->replicas; break;
    case ARACHNE_TEMPLATE_MICRO_BATCH: *out = T->micro_batch; break;
    case ARACHNE_TEMPLATE_MICRO_BATCHES: *out = T->micro_batches; break;
    case ARACHNE_TEMPLATE_PIPELINE_S: *out = T->pipeline_s; break;
    case ARACHNE_TEMPLATE_CP: *out = ar_tmpl_cp(T); break;
    case ARACHNE_TEMPLATE_VP: *out = T->vp > 1 ? T->vp : 1; break;
    case ARACHNE_TEMPLATE_FSDP: *out = T->fsdp > 1 ? T->fsdp : 1; break;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_template_get: unknown field %d (valid 0..%d)",
                        field, ARACHNE_TEMPLATE_FSDP);
    }
    return ARACHNE_OK;
}

int arachne_plan_stage_get(const arachne_plan *p, int t, int s, int field, double *out)
{
    const ar_stage *S;
    int st;
    if (!p || !out)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_stage_get: NULL %s", p ? "out" : "plan");
    if ((st = check_ts(p, t, s, "arachne_plan_stage_get"))) return st;
    S = &p->t[t].stages[s];
    switch (field) {
    case ARACHNE_STAGE_TP: *out = S->tp; break;
    case ARACHNE_STAGE_FIRST_LAYER: *out = S->first; break;
    case ARACHNE_STAGE_END_LAYER: *out = S->end; break;
    case ARACHNE_STAGE_EP: *out = S->ep; break;
    case ARACHNE_STAGE_ETP: *out = S->etp; break;
    case ARACHNE_STAGE_EDP: *out = S->edp; break;
    case ARACHNE_STAGE_COMPUTE_S: *out = S->compute_s; break;
    case ARACHNE_STAGE_TP_COMM_S: *out = S->tp_comm_s; break;
    case ARACHNE_STAGE_EP_COMM_S: *out = S->ep_comm_s; break;
    case ARACHNE_STAGE_P2P_S: *out = S->p2p_s; break;
    case ARACHNE_STAGE_SYNC_S: *out = S->sync_s; break;
    case ARACHNE_STAGE_STAGE_S: *out = S->stage_s; break;
    case ARACHNE_STAGE_MEMORY_BYTES: *out = S->mem_bytes; break;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_stage_get: unknown field %d (valid 0..%d)",
                        field, ARACHNE_STAGE_MEMORY_BYTES);
    }
    return ARACHNE_OK;
}

int arachne_plan_stage_gpu(const arachne_plan *p, int t, int s, const char **out)
{
    int st;
    if (out) *out = NULL;
    if (!p || !out)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_stage_gpu: NULL %s", p ? "out" : "plan");
    if ((st = check_ts(p, t, s, "arachne_plan_stage_gpu"))) return st;
    *out = ar_plan_type_name(p, p->t[t].stages[s].type);
    return ARACHNE_OK;
}

int arachne_plan_rank_get(const arachne_plan *p, int r, int field, int *out)
{
    const ar_rank *R;
    if (!p || !out)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_rank_get: NULL %s", p ? "out" : "plan");
    if (r < 0 || r >= p->nranks)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_rank_get: rank index %d out of range [0, %d)", r,
                        p->nranks);
    R = &p->ranks[r];
    switch (field) {
    case ARACHNE_RANK_RANK: *out = R->rank; break;
    case ARACHNE_RANK_NODE: *out = R->node; break;
    case ARACHNE_RANK_GPU: *out = R->gpu; break;
    case ARACHNE_RANK_TEMPLATE: *out = R->tmpl; break;
    case ARACHNE_RANK_REPLICA: *out = R->replica; break;
    case ARACHNE_RANK_STAGE: *out = R->stage; break;
    case ARACHNE_RANK_TP_RANK: *out = R->tp_rank; break;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_rank_get: unknown field %d (valid 0..%d)", field,
                        ARACHNE_RANK_TP_RANK);
    }
    return ARACHNE_OK;
}

int arachne_plan_method(const arachne_plan *p, const char **out)
{
    if (out) *out = NULL;
    if (!p || !out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_method: NULL %s", p ? "out" : "plan");
    *out = p->method;
    return ARACHNE_OK;
}
