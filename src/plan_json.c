/* plan_json.c -- plan JSON v2 (reads v1 too): the writer (deterministic bytes, numbers
 * round-trip exact), the strict reader, and the public load / from_json
 * entry points (read + validate + reprice).  Format: docs/formats.md. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "json.h"
#include "plan.h"

#define PLAN_FORMAT "arachne-plan"
#define PLAN_VERSION 2       /* written; 1 (no "inputs") is still read */
#define PLAN_VERSION_MIN 1

/* ---- writer ---- */

static void put_key(ar_buf *b, const char *indent, const char *key)
{
    ar_buf_puts(b, indent);
    ar_json_put_string(b, key);
    ar_buf_puts(b, ": ");
}

static void put_num_field(ar_buf *b, const char *sep, const char *key, double v)
{
    ar_buf_puts(b, sep);
    ar_json_put_string(b, key);
    ar_buf_puts(b, ": ");
    ar_json_put_number(b, v);
}

static void put_int_field(ar_buf *b, const char *sep, const char *key, long v)
{
    ar_buf_puts(b, sep);
    ar_json_put_string(b, key);
    ar_buf_printf(b, ": %ld", v);
}

static void write_stage(ar_buf *b, const arachne_plan *p, const ar_stage *s)
{
    ar_buf_puts(b, "{\"gpu\": ");
    ar_json_put_string(b, ar_plan_type_name(p, s->type));
    put_int_field(b, ", ", "tp", s->tp);
    ar_buf_printf(b, ", \"layers\": [%d, %d]", s->first, s->end);
    put_int_field(b, ", ", "ep", s->ep);
    put_int_field(b, ", ", "etp", s->etp);
    put_int_field(b, ", ", "edp", s->edp);
    put_num_field(b, ", ", "stage_s", s->stage_s);
    put_num_field(b, ", ", "memory_bytes", s->mem_bytes);
    put_num_field(b, ", ", "compute_s", s->compute_s);
    put_num_field(b, ", ", "tp_comm_s", s->tp_comm_s);
    put_num_field(b, ", ", "ep_comm_s", s->ep_comm_s);
    put_num_field(b, ", ", "p2p_s", s->p2p_s);
    put_num_field(b, ", ", "sync_s", s->sync_s);
    ar_buf_puts(b, "}");
}

/* Appends the decimal text of v, as printf's %d writes it. */
static char *put_dec(char *q, int v)
{
    char d[12];
    int n = 0;
    unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    if (v < 0) *q++ = '-';
    do {
        d[n++] = (char)('0' + (int)(u % 10u));
        u /= 10u;
    } while (u);
    while (n) *q++ = d[--n];
    return q;
}

static char *put_lit(char *q, const char *s)
{
    size_t n = strlen(s);
    memcpy(q, s, n);
    return q + n;
}

/* One rank's line (a plan has one per GPU, 16,384 of them on a large
 * cluster): the bytes printf gave for
 * "%s\n        {\"rank\": %d, \"node\": %d, ...}", written directly. */
static void put_rank(ar_buf *b, const ar_rank *R, int first, int with_cp)
{
    char line[256], *q = line; /* 8 keys (< 110 bytes) and 7 numbers (<= 11 bytes each) */
    q = put_lit(q, first ? "\n        {\"rank\": " : ",\n        {\"rank\": ");
    q = put_dec(q, R->rank);
    q = put_lit(q, ", \"node\": ");
    q = put_dec(q, R->node);
    q = put_lit(q, ", \"gpu\": ");
    q = put_dec(q, R->gpu);
    q = put_lit(q, ", \"replica\": ");
    q = put_dec(q, R->replica);
    q = put_lit(q, ", \"stage\": ");
    q = put_dec(q, R->stage);
    q = put_lit(q, ", \"tp_rank\": ");
    q = put_dec(q, R->tp_rank);
    /* the CP rank only in CP templates: other plans stay byte-identical */
    if (with_cp) {
        q = put_lit(q, ", \"cp_rank\": ");
        q = put_dec(q, R->cp_rank);
    }
    *q++ = '}';
    ar_buf_put(b, line, (size_t)(q - line));
}

int ar_plan_write_json(const arachne_plan *p, ar_buf *b)
{
    int t, s, r;
    if (!p || !b) return AR_NULL_ARG("plan JSON", p, b);
    ar_buf_puts(b, "{\n");
    put_key(b, "  ", "format");
    ar_json_put_string(b, PLAN_FORMAT);
    ar_buf_printf(b, ",\n  \"version\": %d,\n", PLAN_VERSION);
    put_key(b, "  ", "model");
    ar_json_put_string(b, p->model);
    ar_buf_puts(b, ",\n");
    put_key(b, "  ", "cluster");
    ar_json_put_string(b, p->cluster_spec ? p->cluster_spec : "");
    put_int_field(b, ",\n  ", "global_batch", p->setup.global_batch);
    put_int_field(b, ",\n  ", "seq_len", p->setup.seq_len);
    ar_buf_puts(b, ",\n  \"setup\": {\"recompute\": ");
    ar_json_put_string(b, ar_recompute_name(p->setup.recompute));
    ar_buf_printf(b, ", \"dist_optimizer\": %s", p->setup.dist_optimizer ? "true" : "false");
    put_num_field(b, ", ", "weight_bytes", p->setup.weight_bytes);
    put_num_field(b, ", ", "grad_bytes", p->setup.grad_bytes);
    put_num_field(b, ", ", "optim_bytes", p->setup.optim_bytes);
    put_num_field(b, ", ", "headroom", p->setup.headroom);
    ar_buf_printf(b, ", \"overlap_grad_reduce\": %s, \"overlap_param_gather\": %s, \"tp_comm_overlap\": %s",
                  p->setup.overlap_grad_reduce ? "true" : "false", p->setup.overlap_param_gather ? "true" : "false",
                  p->setup.tp_comm_overlap ? "true" : "false");
    /* written only when on, so plans that do not use it keep their bytes */
    if (p->setup.recompute_norm_act) ar_buf_puts(b, ", \"recompute_norm_act\": true");
    if (p->setup.recompute_alt_mm) ar_buf_puts(b, ", \"recompute_alt_mm\": true");
    if (p->setup.ep_hierarchical) ar_buf_puts(b, ", \"ep_hierarchical\": true");
    ar_buf_puts(b, "}");
    put_num_field(b, ",\n  ", "iteration_s", p->iteration_s);
    put_num_field(b, ",\n  ", "iter_per_s", p->iter_per_s);
    put_num_field(b, ",\n  ", "samples_per_s", p->samples_per_s);
    put_num_field(b, ",\n  ", "tokens_per_s", p->tokens_per_s);
    put_num_field(b, ",\n  ", "mfu", p->mfu);
    put_num_field(b, ",\n  ", "bubble", p->bubble);
    put_int_field(b, ",\n  ", "gpus_used", p->gpus_used);
    put_int_field(b, ",\n  ", "gpus_total", p->gpus_total);
    ar_buf_puts(b, ",\n  \"templates\": [");
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        int first = 1;
        ar_buf_puts(b, t ? ",\n    {" : "\n    {");
        put_int_field(b, "\n      ", "replicas", T->replicas);
        put_int_field(b, ",\n      ", "micro_batch", T->micro_batch);
        put_int_field(b, ",\n      ", "micro_batches", T->micro_batches);
        if (T->fsdp > 1) put_int_field(b, ",\n      ", "fsdp", T->fsdp);
        if (T->cp > 1) put_int_field(b, ",\n      ", "cp", T->cp);
        if (T->vp > 1) put_int_field(b, ",\n      ", "vp", T->vp);
        put_num_field(b, ",\n      ", "pipeline_s", T->pipeline_s);
        ar_buf_puts(b, ",\n      \"stages\": [");
        for (s = 0; s < T->depth; s++) {
            ar_buf_puts(b, s ? ",\n        " : "\n        ");
            write_stage(b, p, &T->stages[s]);
        }
        ar_buf_puts(b, "\n      ],\n      \"ranks\": [");
        /* ranks of this template in global-rank order (p->ranks is sorted
         * by ar_plan_finish; the scan keeps array order otherwise) */
        for (r = 0; r < p->nranks; r++) {
            const ar_rank *R = &p->ranks[r];
            if (R->tmpl != t) continue;
            put_rank(b, R, first, T->cp > 1);
            first = 0;
        }
        ar_buf_puts(b, first ? "]\n    }" : "\n      ]\n    }");
    }
    ar_buf_puts(b, p->ntemplates ? "\n  ],\n" : "],\n");
    ar_buf_puts(b, "  \"planner\": {\"method\": ");
    ar_json_put_string(b, p->method);
    put_num_field(b, ", ", "planning_s", p->planning_s);
    put_int_field(b, ", ", "evaluations", p->evaluations);
    put_int_field(b, ", ", "samples", p->samples);
    ar_buf_puts(b, "}");
    if (p->in.model && p->in.cluster && p->in.profile) {
        /* what repricing needs, as the model, cluster and profile writers
         * print them (docs/formats.md, "inputs") */
        ar_buf_printf(b, ",\n  \"inputs\": {\"profile_crc32\": \"%08lx\",\n  \"model\": ", p->in.profile_crc);
        ar_buf_puts(b, p->in.model);
        ar_buf_puts(b, ",\n  \"cluster\": ");
        ar_buf_puts(b, p->in.cluster);
        ar_buf_puts(b, ",\n  \"profile\": ");
        ar_buf_puts(b, p->in.profile);
        ar_buf_puts(b, "}");
    }
    ar_buf_puts(b, "\n}\n");
    return ar_buf_status(b);
}

/* ---- reader ---- */

static const char *const top_keys[] = { "format", "version", "model", "cluster", "global_batch", "seq_len", "setup",
                                        "iteration_s", "iter_per_s", "samples_per_s", "tokens_per_s", "mfu",
                                        "bubble", "gpus_used", "gpus_total", "templates", "planner", "inputs", NULL };
static const char *const inputs_keys[] = { "profile_crc32", "model", "cluster", "profile", NULL };
static const char *const setup_keys[] = { "recompute", "dist_optimizer", "weight_bytes", "grad_bytes",
                                          "optim_bytes", "headroom", "overlap_grad_reduce",
                                          "overlap_param_gather", "tp_comm_overlap", "recompute_norm_act", "recompute_alt_mm", "ep_hierarchical", NULL };
static const char *const tmpl_keys[] = { "replicas", "micro_batch", "micro_batches", "pipeline_s", "stages",
                                         "ranks", "fsdp", "cp", "vp", NULL };
static const char *const stage_keys[] = { "gpu", "tp", "layers", "ep", "etp", "edp", "stage_s", "memory_bytes",
                                          "compute_s", "tp_comm_s", "ep_comm_s", "p2p_s", "sync_s", NULL };
static const char *const rank_keys[] = { "rank", "node", "gpu", "replica", "stage", "tp_rank", "cp_rank", NULL };
static const char *const planner_keys[] = { "method", "planning_s", "evaluations", "samples", NULL };

#define BIG (INT_MAX / 2)

static int get_int(const ar_json *o, const char *key, int required, long lo, long hi, int *out)
{
    long v = *out;
    int st = ar_json_int(o, key, required, lo, hi, &v);
    if (!st) *out = (int)v;
    return st;
}

/* A non-negative finite number (times, bytes, rates). */
static int get_nonneg(const ar_json *o, const char *key, int required, double *out)
{
    double v = *out;
    int st = ar_json_num(o, key, required, &v);
    if (st) return st;
    if (!(v >= 0.0)) return ar_json_error_at(ar_json_get(o, key), "%s: expected a number >= 0", key);
    *out = v;
    return ARACHNE_OK;
}

static int parse_setup(const ar_json *o, ar_setup *su)
{
    const char *rc = NULL;
    int st;
    if ((st = ar_json_only_keys(o, setup_keys))) return st;
    if ((st = ar_json_str(o, "recompute", 0, &rc))) return st;
    if (rc) {
        if (!strcmp(rc, "none")) su->recompute = AR_RECOMPUTE_NONE;
        else if (!strcmp(rc, "selective")) su->recompute = AR_RECOMPUTE_SELECTIVE;
        else if (!strcmp(rc, "full")) su->recompute = AR_RECOMPUTE_FULL;
        else
            return ar_json_error_at(ar_json_get(o, "recompute"),
                                    "recompute: '%s' is not none, selective or full", rc);
    }
    if ((st = ar_json_bool(o, "dist_optimizer", 0, &su->dist_optimizer))) return st;
    if ((st = get_nonneg(o, "weight_bytes", 0, &su->weight_bytes))) return st;
    if ((st = get_nonneg(o, "grad_bytes", 0, &su->grad_bytes))) return st;
    if ((st = get_nonneg(o, "optim_bytes", 0, &su->optim_bytes))) return st;
    if ((st = get_nonneg(o, "headroom", 0, &su->headroom))) return st;
    if ((st = ar_json_bool(o, "overlap_grad_reduce", 0, &su->overlap_grad_reduce))) return st;
    if ((st = ar_json_bool(o, "overlap_param_gather", 0, &su->overlap_param_gather))) return st;
    if ((st = ar_json_bool(o, "tp_comm_overlap", 0, &su->tp_comm_overlap))) return st;
    if ((st = ar_json_bool(o, "recompute_norm_act", 0, &su->recompute_norm_act))) return st;
    if ((st = ar_json_bool(o, "recompute_alt_mm", 0, &su->recompute_alt_mm))) return st;
    if ((st = ar_json_bool(o, "ep_hierarchical", 0, &su->ep_hierarchical))) return st;
    return ARACHNE_OK;
}

static int parse_stage(const ar_json *o, const arachne_cost_model *cm, arachne_plan *p, ar_stage *s, int t, int si)
{
    const ar_json *layers;
    const char *gpu;
    int st;
    if (o->type != AR_JSON_OBJECT)
        return ar_json_error_at(o, "template %d stage %d: expected an object", t, si);
    if ((st = ar_json_only_keys(o, stage_keys))) return st;
    if ((st = ar_json_str(o, "gpu", 1, &gpu))) return st;
    s->type = ar_cluster_type_index(cm->cluster, gpu);
    if (s->type < 0)
        return ar_json_error_at(ar_json_get(o, "gpu"), "template %d stage %d: GPU type '%s' is not in the cluster",
                                t, si, gpu), ARACHNE_E_INVALID_PLAN;
    (void)p;
    if ((st = get_int(o, "tp", 1, 1, AR_MAX_NODE_GPUS, &s->tp))) return st;
    if ((st = ar_json_arr(o, "layers", 1, &layers))) return st;
    if (layers->count != 2 || layers->items[0]->type != AR_JSON_NUMBER || layers->items[1]->type != AR_JSON_NUMBER)
        return ar_json_error_at(layers, "layers: expected [first, end] (two integers)");
    {
        double a = layers->items[0]->number, e = layers->items[1]->number;
        /* range first: converting an out-of-range double to long is undefined */
        if (!(a >= 0 && e >= 0 && a <= BIG && e <= BIG) || a != (double)(long)a || e != (double)(long)e)
            return ar_json_error_at(layers, "layers: expected [first, end] (two integers >= 0)");
        s->first = (int)a;
        s->end = (int)e;
    }
    if ((st = get_int(o, "ep", 1, 1, BIG, &s->ep))) return st;
    if ((st = get_int(o, "etp", 1, 1, BIG, &s->etp))) return st;
    if ((st = get_int(o, "edp", 1, 1, BIG, &s->edp))) return st;
    if ((st = get_nonneg(o, "stage_s", 1, &s->stage_s))) return st;
    if ((st = get_nonneg(o, "memory_bytes", 1, &s->mem_bytes))) return st;
    if ((st = get_nonneg(o, "compute_s", 0, &s->compute_s))) return st;
    if ((st = get_nonneg(o, "tp_comm_s", 0, &s->tp_comm_s))) return st;
    if ((st = get_nonneg(o, "ep_comm_s", 0, &s->ep_comm_s))) return st;
    if ((st = get_nonneg(o, "p2p_s", 0, &s->p2p_s))) return st;
    if ((st = get_nonneg(o, "sync_s", 0, &s->sync_s))) return st;
    return ARACHNE_OK;
}

static int parse_template(const ar_json *o, const arachne_cost_model *cm, arachne_plan *p, int t, size_t *nranks)
{
    ar_template *T = &p->t[t];
    const ar_json *stages, *ranks;
    size_t i;
    int st;
    if (o->type != AR_JSON_OBJECT) return ar_json_error_at(o, "template %d: expected an object", t);
    if ((st = ar_json_only_keys(o, tmpl_keys))) return st;
    if ((st = get_int(o, "replicas", 1, 1, BIG, &T->replicas))) return st;
    if ((st = get_int(o, "micro_batch", 1, 1, BIG, &T->micro_batch))) return st;
    if ((st = get_int(o, "micro_batches", 1, 0, BIG, &T->micro_batches))) return st;
    if ((st = get_int(o, "fsdp", 0, 0, BIG, &T->fsdp))) return st;
    if (T->fsdp > T->replicas)
        return ar_json_error_at(o, "template %d: fsdp %d exceeds its %d replicas", t, T->fsdp, T->replicas);
    T->cp = 0;
    if ((st = get_int(o, "cp", 0, 1, AR_MAX_CP, &T->cp))) return st;
    if ((st = get_int(o, "vp", 0, 0, AR_MAX_VP, &T->vp))) return st;
    if ((st = get_nonneg(o, "pipeline_s", 0, &T->pipeline_s))) return st;
    if ((st = ar_json_arr(o, "stages", 1, &stages))) return st;
    if (T->vp > 1 && stages->count < 2)
        return ar_json_error_at(ar_json_get(o, "vp"), "template %d: vp %d needs at least 2 stages, it has %zu", t,
                                T->vp, stages->count);
    if (stages->count < 1 || stages->count > AR_MAX_DEPTH)
        return ar_json_error_at(stages, "template %d: stages: %zu stages, expected 1..%d", t, stages->count,
                                AR_MAX_DEPTH);
    T->depth = (int)stages->count;
    for (i = 0; i < stages->count; i++)
        if ((st = parse_stage(stages->items[i], cm, p, &T->stages[i], t, (int)i))) return st;
    if ((st = ar_json_arr(o, "ranks", 1, &ranks))) return st;
    *nranks += ranks->count;
    return ARACHNE_OK;
}

static int parse_rank(const ar_json *o, ar_rank *R, int t)
{
    int st;
    if (o->type != AR_JSON_OBJECT) return ar_json_error_at(o, "template %d: ranks: expected an object", t);
    if ((st = ar_json_only_keys(o, rank_keys))) return st;
    R->tmpl = t;
    if ((st = get_int(o, "rank", 1, 0, BIG, &R->rank))) return st;
    if ((st = get_int(o, "node", 1, 0, BIG, &R->node))) return st;
    if ((st = get_int(o, "gpu", 1, 0, BIG, &R->gpu))) return st;
    if ((st = get_int(o, "replica", 1, 0, BIG, &R->replica))) return st;
    if ((st = get_int(o, "stage", 1, 0, BIG, &R->stage))) return st;
    if ((st = get_int(o, "tp_rank", 1, 0, BIG, &R->tp_rank))) return st;
    R->cp_rank = 0;
    if ((st = get_int(o, "cp_rank", 0, 0, AR_MAX_CP - 1, &R->cp_rank))) return st;
    return ARACHNE_OK;
}

/* format and version first, so a foreign file gets the right message */
static int check_format(const ar_json *root)
{
    const ar_json *v;
    long version = 0;
    int st;
    if (root->type != AR_JSON_OBJECT) return ar_json_error_at(root, "expected a plan object");
    v = ar_json_get(root, "format");
    if (!v) return ar_json_error_at(root, "missing key 'format' (not an arachne plan)");
    if (v->type != AR_JSON_STRING || strcmp(v->string, PLAN_FORMAT) != 0)
        return ar_json_error_at(v, "format: expected \"%s\"", PLAN_FORMAT);
    if ((st = ar_json_int(root, "version", 1, LONG_MIN / 2, LONG_MAX / 2, &version))) return st;
    if (version < PLAN_VERSION_MIN || version > PLAN_VERSION) {
        ar_json_error_at(ar_json_get(root, "version"),
                         "version %ld is not supported (this library reads versions %d to %d)", version,
                         PLAN_VERSION_MIN, PLAN_VERSION);
        return ARACHNE_E_UNSUPPORTED;
    }
    if (version < 2 && ar_json_get(root, "inputs"))
        return ar_json_error_at(ar_json_get(root, "inputs"), "inputs: not part of a version-1 plan");
    return ARACHNE_OK;
}

/* Compact JSON text of a parsed value (numbers round-trip exactly). */
static void put_tree(ar_buf *b, const ar_json *v)
{
    size_t i;
    switch (v->type) {
    case AR_JSON_NULL: ar_buf_puts(b, "null"); break;
    case AR_JSON_BOOL: ar_buf_puts(b, v->boolean ? "true" : "false"); break;
    case AR_JSON_NUMBER: ar_json_put_number(b, v->number); break;
    case AR_JSON_STRING: ar_json_put_string(b, v->string); break;
    case AR_JSON_ARRAY:
        ar_buf_puts(b, "[");
        for (i = 0; i < v->count; i++) {
            if (i) ar_buf_puts(b, ",");
            put_tree(b, v->items[i]);
        }
        ar_buf_puts(b, "]");
        break;
    default:
        ar_buf_puts(b, "{");
        for (i = 0; i < v->count; i++) {
            if (i) ar_buf_puts(b, ",");
            ar_json_put_string(b, v->keys[i]);
            ar_buf_puts(b, ":");
            put_tree(b, v->items[i]);
        }
        ar_buf_puts(b, "}");
        break;
    }
}

/* Shape of "inputs" (the contents are read by the model, cluster and
 * profile readers when a tool asks for them). */
static int check_inputs(const ar_json *root)
{
    const ar_json *in = ar_json_get(root, "inputs"), *v;
    const char *crc;
    int st;
    if (!in) return ARACHNE_OK;
    if (in->type != AR_JSON_OBJECT) return ar_json_error_at(in, "inputs: expected an object");
    if ((st = ar_json_only_keys(in, inputs_keys))) return st;
    if ((st = ar_json_str(in, "profile_crc32", 1, &crc))) return st;
    if (strlen(crc) != 8 || strspn(crc, "0123456789abcdef") != 8)
        return ar_json_error_at(ar_json_get(in, "profile_crc32"), "profile_crc32: expected 8 lowercase hex digits");
    if ((st = ar_json_obj(in, "model", 1, &v)) || (st = ar_json_obj(in, "cluster", 1, &v)) ||
        (st = ar_json_obj(in, "profile", 1, &v)))
        return st;
    return ARACHNE_OK;
}

static int parse_tree(arachne_plan *p, const arachne_cost_model *cm, const ar_json *root)
{
    const ar_json *templates, *setup, *planner;
    const char *s;
    long evals = 0;
    size_t i, j, nranks = 0, k = 0;
    int st;
    if ((st = check_format(root))) return st;
    if ((st = ar_json_only_keys(root, top_keys))) return st;
    if ((st = check_inputs(root))) return st;
    if ((st = ar_json_str(root, "model", 1, &s))) return st;
    if ((st = ar_json_str(root, "cluster", 1, &s))) return st;
    if ((st = get_int(root, "global_batch", 1, 1, BIG, &p->setup.global_batch))) return st;
    if ((st = get_int(root, "seq_len", 1, 1, BIG, &p->setup.seq_len))) return st;
    if ((st = ar_json_obj(root, "setup", 0, &setup))) return st;
    if (ar_json_get(root, "setup") && (st = parse_setup(ar_json_get(root, "setup"), &p->setup))) return st;
    if ((st = get_nonneg(root, "iteration_s", 1, &p->iteration_s))) return st;
    if ((st = get_nonneg(root, "iter_per_s", 1, &p->iter_per_s))) return st;
    if ((st = get_nonneg(root, "samples_per_s", 1, &p->samples_per_s))) return st;
    if ((st = get_nonneg(root, "tokens_per_s", 1, &p->tokens_per_s))) return st;
    if ((st = get_nonneg(root, "mfu", 1, &p->mfu))) return st;
    if (ar_json_get(root, "bubble")) {
        /* a fraction; the pricing's 1 - busy/total may round to -2e-16 */
        double v = 0.0;
        if ((st = ar_json_num(root, "bubble", 1, &v))) return st;
        if (!(v >= -1e-9 && v <= 1.0))
            return ar_json_error_at(ar_json_get(root, "bubble"), "bubble: expected a fraction in [0, 1]");
        p->bubble = v;
    }
    if ((st = get_int(root, "gpus_used", 1, 0, BIG, &p->gpus_used))) return st;
    if ((st = get_int(root, "gpus_total", 1, 0, BIG, &p->gpus_total))) return st;
    p->file_iteration_s = p->iteration_s;

    if ((st = ar_json_obj(root, "planner", 1, &planner))) return st;
    if ((st = ar_json_only_keys(planner, planner_keys))) return st;
    if ((st = ar_json_str(planner, "method", 1, &s))) return st;
    if (strlen(s) >= sizeof p->method)
        return ar_json_error_at(ar_json_get(planner, "method"), "method: longer than %d bytes",
                                (int)sizeof p->method - 1);
    memcpy(p->method, s, strlen(s) + 1);
    if ((st = get_nonneg(planner, "planning_s", 1, &p->planning_s))) return st;
    if ((st = ar_json_int(planner, "evaluations", 1, 0, LONG_MAX / 2, &evals))) return st;
    p->evaluations = evals;
    if ((st = get_int(planner, "samples", 0, 0, BIG, &p->samples))) return st;

    if ((st = ar_json_arr(root, "templates", 1, &templates))) return st;
    if (templates->count < 1 || templates->count > AR_MAX_TEMPLATES)
        return ar_json_error_at(templates, "templates: %zu templates, expected 1..%d", templates->count,
                                AR_MAX_TEMPLATES);
    p->ntemplates = (int)templates->count;
    for (i = 0; i < templates->count; i++)
        if ((st = parse_template(templates->items[i], cm, p, (int)i, &nranks))) return st;
    if (nranks > (size_t)BIG) return ar_json_error_at(templates, "too many ranks (%zu)", nranks);
    free(p->ranks);
    p->ranks = NULL;
    p->nranks = 0;
    if (nranks) {
        p->ranks = ar_calloc(nranks, sizeof *p->ranks);
        if (!p->ranks) return ARACHNE_E_NO_MEMORY;
    }
    for (i = 0; i < templates->count; i++) {
        const ar_json *ranks = ar_json_get(templates->items[i], "ranks");
        for (j = 0; j < ranks->count; j++, k++)
            if ((st = parse_rank(ranks->items[j], &p->ranks[k], (int)i))) return st;
    }
    p->nranks = (int)nranks;
    return ARACHNE_OK;
}

int ar_plan_parse_json(arachne_plan *p, const arachne_cost_model *cm, const char *text, size_t len,
                       const char *source)
{
    ar_json *root = NULL;
    int st;
    if (!p || !cm || !text || !source) return AR_NULL_ARG("plan JSON", p, cm, text, source);
    st = ar_json_parse(&root, text, len, source);
    if (st) return st;
    st = parse_tree(p, cm, root);
    ar_json_free(root);
    return st;
}

static int load_text(arachne_plan **out, const arachne_cost_model *cm, const char *text, size_t len,
                     const char *source)
{
    arachne_plan *p;
    int st;
    p = ar_calloc(1, sizeof *p);
    if (!p) return ARACHNE_E_NO_MEMORY;
    st = ar_plan_init(p, cm);
    if (!st) st = ar_plan_parse_json(p, cm, text, len, source);
    if (!st) {
        /* structure first, against the file's own batch record ... */
        st = ar_plan_validate(cm, p);
        if (st) ar_error_prefix(source);
    }
    if (!st) {
        /* ... then reprice under the cost model's training setup */
        p->setup = cm->setup;
        st = ar_plan_price(cm, p);
        if (st) ar_error_prefix(source);
    }
    if (!st) st = ar_plan_finish(p);
    if (st) {
        arachne_plan_destroy(p);
        return st;
    }
    *out = p;
    return ARACHNE_OK;
}

int arachne_plan_from_json(arachne_plan **out, const arachne_cost_model *cm, const char *json, size_t len)
{
    if (out) *out = NULL;
    if (!out || !cm || !json)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_from_json: NULL %s",
                        !out ? "out" : !cm ? "cost model" : "json");
    return load_text(out, cm, json, len, "<string>");
}

int arachne_plan_load(arachne_plan **out, const arachne_cost_model *cm, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int st;
    if (out) *out = NULL;
    if (!out || !cm || !path)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_load: NULL %s",
                        !out ? "out" : !cm ? "cost model" : "path");
    if ((st = ar_read_file(path, &text, &len))) return st;
    st = load_text(out, cm, text, len, path);
    free(text);
    return st;
}

/* One embedded input of a version-2 plan as JSON text; the profile is read
 * back and its CRC-32 (over the library's own text of it) compared with
 * the recorded one, so an edited or damaged table is named, not used. */
static int embedded_input(const ar_json *root, const char *path, int key, char *buf, size_t cap, size_t *needed)
{
    const ar_json *in = ar_json_get(root, "inputs"), *v;
    const char *crc = NULL;
    ar_buf b;
    int st;
    if ((st = check_inputs(root))) return st;
    if (!in) return ar_error(ARACHNE_E_NOT_FOUND, "%s: the plan embeds no model, cluster or profile (a version-1 plan)",
                             path);
    if ((st = ar_json_str(in, "profile_crc32", 1, &crc))) return st;
    if (key == ARACHNE_PLAN_HEADER_PROFILE_CRC32) return ar_copy_out(buf, cap, needed, crc, strlen(crc));
    v = ar_json_get(in, key == ARACHNE_PLAN_HEADER_MODEL_JSON     ? "model"
                        : key == ARACHNE_PLAN_HEADER_CLUSTER_JSON ? "cluster"
                                                                  : "profile");
    ar_buf_init(&b);
    put_tree(&b, v);
    if ((st = ar_buf_status(&b))) goto done;
    if (key == ARACHNE_PLAN_HEADER_PROFILE_JSON) {
        arachne_profile *prof = NULL;
        ar_buf canon;
        char have[16];
        if ((st = arachne_profile_from_json(&prof, b.data, b.len))) {
            ar_error_prefix("inputs.profile");
            ar_error_prefix(path);
            goto done;
        }
        ar_buf_init(&canon);
        ar_profile_write_json(prof, &canon);
        while (canon.len && (canon.data[canon.len - 1] == '\n' || canon.data[canon.len - 1] == ' ')) canon.len--;
        snprintf(have, sizeof have, "%08lx", (unsigned long)ar_crc32(canon.data ? canon.data : "", canon.len));
        st = ar_buf_status(&canon);
        ar_buf_free(&canon);
        arachne_profile_destroy(prof);
        if (st) goto done;
        if (strcmp(have, crc) != 0) {
            st = ar_error(ARACHNE_E_PARSE, "%s: inputs.profile: its CRC-32 is %s but the plan records %s: the embedded "
                          "profile was changed after the plan was priced", path, have, crc);
            goto done;
        }
    }
    st = ar_copy_out(buf, cap, needed, b.data, b.len);
done:
    ar_buf_free(&b);
    return st;
}

int arachne_plan_file_header(const char *path, int key, char *buf, size_t cap, size_t *needed)
{
    ar_json *root = NULL;
    const ar_json *setup = NULL;
    const char *str = NULL;
    char num[40];
    long n = 0;
    int st, b = 0;
    ar_setup su;
    if (needed) *needed = 0;
    if (!path) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_file_header: NULL path");
    if (key < ARACHNE_PLAN_HEADER_MODEL || key > ARACHNE_PLAN_HEADER_TP_COMM_OVERLAP)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_file_header: unknown key %d (valid 0..%d)", key,
                        ARACHNE_PLAN_HEADER_TP_COMM_OVERLAP);
    if ((st = ar_json_parse_file(&root, path))) return st;
    if ((st = check_format(root))) goto done;
    if (key >= ARACHNE_PLAN_HEADER_OVERLAP_GRAD_REDUCE) {
        static const char *const names[] = { "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap" };
        const char *name = names[key - ARACHNE_PLAN_HEADER_OVERLAP_GRAD_REDUCE];
        int v = -1;
        if ((st = ar_json_obj(root, "setup", 0, &setup))) goto done;
        if (setup && (st = ar_json_bool(setup, name, 0, &v))) goto done;
        if (v < 0) {
            st = ar_error(ARACHNE_E_NOT_FOUND, "%s: the plan's setup does not record %s", path, name);
            goto done;
        }
        st = ar_copy_out(buf, cap, needed, v ? "1" : "0", 1);
        goto done;
    }
    if (key >= ARACHNE_PLAN_HEADER_MODEL_JSON) {
        st = embedded_input(root, path, key, buf, cap, needed);
        goto done;
    }
    if (key >= ARACHNE_PLAN_HEADER_WEIGHT_BYTES && key <= ARACHNE_PLAN_HEADER_OPTIM_BYTES) {
        static const char *const names[] = { "weight_bytes", "grad_bytes", "optim_bytes" };
        const char *name = names[key - ARACHNE_PLAN_HEADER_WEIGHT_BYTES];
        double v = -1.0;
        if ((st = ar_json_obj(root, "setup", 0, &setup))) goto done;
        if (setup && (st = get_nonneg(setup, name, 0, &v))) goto done;
        if (v < 0) {
            st = ar_error(ARACHNE_E_NOT_FOUND, "%s: the plan's setup does not record %s", path, name);
            goto done;
        }
        ar_json_format_double(num, sizeof num, v);
        st = ar_copy_out(buf, cap, needed, num, strlen(num));
        goto done;
    }
    if (key >= ARACHNE_PLAN_HEADER_RECOMPUTE && key <= ARACHNE_PLAN_HEADER_HEADROOM) {
        if ((st = ar_json_obj(root, "setup", 0, &setup))) goto done;
        if (!setup) {
            st = ar_error(ARACHNE_E_NOT_FOUND, "%s: the plan records no training setup", path);
            goto done;
        }
    }
    memset(&su, 0, sizeof su);
    su.headroom = -1.0;
    su.recompute = -1;
    su.dist_optimizer = -1;
    switch (key) {
    case ARACHNE_PLAN_HEADER_MODEL: st = ar_json_str(root, "model", 1, &str); break;
    case ARACHNE_PLAN_HEADER_CLUSTER: st = ar_json_str(root, "cluster", 1, &str); break;
    case ARACHNE_PLAN_HEADER_GLOBAL_BATCH:
    case ARACHNE_PLAN_HEADER_SEQ_LEN:
        st = ar_json_int(root, key == ARACHNE_PLAN_HEADER_SEQ_LEN ? "seq_len" : "global_batch", 1, 1, BIG, &n);
        snprintf(num, sizeof num, "%ld", n);
        str = num;
        break;
    case ARACHNE_PLAN_HEADER_ITERATION_S:
        if ((st = get_nonneg(root, "iteration_s", 1, &su.headroom))) break;
        ar_json_format_double(num, sizeof num, su.headroom);
        str = num;
        break;
    default:
        st = parse_setup(setup, &su);
        if (st) break;
        if (key == ARACHNE_PLAN_HEADER_RECOMPUTE && su.recompute >= 0) str = ar_recompute_name(su.recompute);
        if (key == ARACHNE_PLAN_HEADER_DIST_OPTIMIZER && (b = su.dist_optimizer) >= 0) str = b ? "1" : "0";
        if (key == ARACHNE_PLAN_HEADER_HEADROOM && su.headroom >= 0) {
            ar_json_format_double(num, sizeof num, su.headroom);
            str = num;
        }
        if (!str) st = ar_error(ARACHNE_E_NOT_FOUND, "%s: the plan's setup does not record this field", path);
        break;
    }
    if (!st) st = ar_copy_out(buf, cap, needed, str, strlen(str));
done:
    ar_json_free(root);
    return st;
}
