/* plan_json.c -- plan JSON v1: the writer (deterministic bytes, numbers
 * round-trip exact), the strict reader, and the public load / from_json
 * entry points (read + validate + reprice).  Format: docs/formats.md. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plan.h"

#define PLAN_FORMAT "arachne-plan"
#define PLAN_VERSION 1

static const char *recompute_name(int r)
{
    switch (r) {
    case AR_RECOMPUTE_NONE: return "none";
    case AR_RECOMPUTE_FULL: return "full";
    default: return "selective";
    }
}

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
    ar_json_put_string(b, recompute_name(p->setup.recompute));
    ar_buf_printf(b, ", \"dist_optimizer\": %s", p->setup.dist_optimizer ? "true" : "false");
    put_num_field(b, ", ", "weight_bytes", p->setup.weight_bytes);
    put_num_field(b, ", ", "grad_bytes", p->setup.grad_bytes);
    put_num_field(b, ", ", "optim_bytes", p->setup.optim_bytes);
    put_num_field(b, ", ", "headroom", p->setup.headroom);
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
            ar_buf_printf(b, "%s\n        {\"rank\": %d, \"node\": %d, \"gpu\": %d, \"replica\": %d, \"stage\": %d, "
                             "\"tp_rank\": %d}",
                          first ? "" : ",", R->rank, R->node, R->gpu, R->replica, R->stage, R->tp_rank);
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
    ar_buf_puts(b, "}\n}\n");
    return ar_buf_status(b);
}

/* ---- reader ---- */

static const char *const top_keys[] = { "format", "version", "model", "cluster", "global_batch", "seq_len", "setup",
                                        "iteration_s", "iter_per_s", "samples_per_s", "tokens_per_s", "mfu",
                                        "bubble", "gpus_used", "gpus_total", "templates", "planner", NULL };
static const char *const setup_keys[] = { "recompute", "dist_optimizer", "weight_bytes", "grad_bytes",
                                          "optim_bytes", "headroom", NULL };
static const char *const tmpl_keys[] = { "replicas", "micro_batch", "micro_batches", "pipeline_s", "stages",
                                         "ranks", "fsdp", NULL };
static const char *const stage_keys[] = { "gpu", "tp", "layers", "ep", "etp", "edp", "stage_s", "memory_bytes",
                                          "compute_s", "tp_comm_s", "ep_comm_s", "p2p_s", "sync_s", NULL };
static const char *const rank_keys[] = { "rank", "node", "gpu", "replica", "stage", "tp_rank", NULL };
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
    if ((st = get_nonneg(o, "pipeline_s", 0, &T->pipeline_s))) return st;
    if ((st = ar_json_arr(o, "stages", 1, &stages))) return st;
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
    if (version != PLAN_VERSION) {
        ar_json_error_at(ar_json_get(root, "version"), "version %ld is not supported (this library reads version %d)",
                         version, PLAN_VERSION);
        return ARACHNE_E_UNSUPPORTED;
    }
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
    if ((st = get_nonneg(root, "bubble", 0, &p->bubble))) return st;
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
    if (key < ARACHNE_PLAN_HEADER_MODEL || key > ARACHNE_PLAN_HEADER_ITERATION_S)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_file_header: unknown key %d (valid 0..%d)", key,
                        ARACHNE_PLAN_HEADER_ITERATION_S);
    if ((st = ar_json_parse_file(&root, path))) return st;
    if ((st = check_format(root))) goto done;
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
        if (key == ARACHNE_PLAN_HEADER_RECOMPUTE && su.recompute >= 0) str = recompute_name(su.recompute);
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
