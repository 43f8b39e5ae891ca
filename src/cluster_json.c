/* cluster_json.c -- the JSON form of a cluster (schema in docs/formats.md):
 *
 *   {"format": "arachne-cluster", "version": 1,
 *    "gpu_types": [{"name", "memory_bytes", "flops", "hbm_bytes_per_s",
 *                   "intra_bytes_per_s", "inter_bytes_per_s",
 *                   "intra_latency_s"?, "inter_latency_s"?,
 *                   "intra_link"?: "nvlink"|"pcie-p2p"|"pcie-host"}, ...]?,
 *    "nodes": [{"type", "count", "gpus"}, ...],
 *    "links": [{"a", "b", "bytes_per_s"}, ...]?}
 *
 * The writer emits a fixed layout, so a cluster read back from its own JSON
 * writes the same bytes.  "intra_link" is written only when it differs from
 * what the reader assumes without it (the catalog's class for a catalog
 * name, AR_LINK_DEFAULT otherwise), so files from before the field read and
 * write back unchanged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "json.h"

#define FORMAT_NAME "arachne-cluster"
#define FORMAT_VERSION 1

static void put_lower_name(ar_buf *b, const char *name)
{
    char tmp[AR_NAME_MAX];
    size_t i;
    for (i = 0; i + 1 < sizeof tmp && name[i]; i++)
        tmp[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
    tmp[i] = '\0';
    ar_json_put_string(b, tmp);
}

static void put_field(ar_buf *b, const char *key, double v, int last)
{
    ar_buf_printf(b, "\"%s\": ", key);
    ar_json_put_number(b, v);
    if (!last) ar_buf_puts(b, ", ");
}

/* The link class a gpu_types entry without "intra_link" gets. */
static int default_link(const char *name)
{
    const ar_gpu_spec *cat = ar_gpu_catalog_find(name);
    return cat ? cat->intra_link : AR_LINK_DEFAULT;
}

int ar_cluster_build_json(const arachne_cluster *c, char **out)
{
    ar_buf b;
    int t, i, j, any, st;
    ar_buf_init(&b);
    ar_buf_printf(&b, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n", FORMAT_NAME, FORMAT_VERSION);
    for (any = 0, t = 0; t < c->ntypes; t++) {
        const ar_gpu_spec *g = &c->types[t];
        if (!c->type_custom[t]) continue;
        ar_buf_puts(&b, any++ ? ",\n    {" : "  \"gpu_types\": [\n    {");
        ar_buf_puts(&b, "\"name\": ");
        ar_json_put_string(&b, g->name);
        ar_buf_puts(&b, ", ");
        put_field(&b, "memory_bytes", g->mem_bytes, 0);
        put_field(&b, "flops", g->flops, 0);
        put_field(&b, "hbm_bytes_per_s", g->hbm_bw, 0);
        put_field(&b, "intra_bytes_per_s", g->intra_bw, 0);
        put_field(&b, "inter_bytes_per_s", g->inter_bw, 0);
        put_field(&b, "intra_latency_s", g->intra_lat, 0);
        put_field(&b, "inter_latency_s", g->inter_lat, 1);
        if (g->intra_link != default_link(g->name)) {
            ar_buf_puts(&b, ", \"intra_link\": ");
            ar_json_put_string(&b, ar_link_class_name(g->intra_link));
        }
        ar_buf_puts(&b, "}");
    }
    if (any) ar_buf_puts(&b, "\n  ],\n");
    ar_buf_puts(&b, "  \"nodes\": [");
    for (any = 0, i = 0; i < c->nnodes;) {
        int type = c->nodes[i].type, gpus = c->nodes[i].gpus, run = 0;
        while (i < c->nnodes && c->nodes[i].type == type && c->nodes[i].gpus == gpus) { run++; i++; }
        ar_buf_puts(&b, any++ ? ",\n    {\"type\": " : "\n    {\"type\": ");
        put_lower_name(&b, c->types[type].name);
        ar_buf_printf(&b, ", \"count\": %d, \"gpus\": %d}", run, gpus);
    }
    ar_buf_puts(&b, any ? "\n  ]" : "]");
    for (any = 0, i = 0; i < c->ntypes; i++) {
        for (j = i; j < c->ntypes; j++) {
            if (!c->link_set[i][j]) continue;
            ar_buf_puts(&b, any++ ? ",\n    {\"a\": " : ",\n  \"links\": [\n    {\"a\": ");
            put_lower_name(&b, c->types[i].name);
            ar_buf_puts(&b, ", \"b\": ");
            put_lower_name(&b, c->types[j].name);
            ar_buf_puts(&b, ", ");
            put_field(&b, "bytes_per_s", c->link_bw[i][j], 1);
            ar_buf_puts(&b, "}");
        }
    }
    if (any) ar_buf_puts(&b, "\n  ]");
    ar_buf_puts(&b, "\n}\n");
    st = ar_buf_status(&b);
    if (st != ARACHNE_OK) {
        ar_buf_free(&b);
        return st;
    }
    *out = b.data;
    return ARACHNE_OK;
}

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct pending_type {
    ar_gpu_spec spec;
    char key[64];
    const ar_json *at;
    int added;
} pending_type;

/* A GPU figure (an arachne_gpu_field) under key (NULL: the field's own),
 * within the field's physical bounds (ar_gpu_field_bound). */
static int figure(const ar_json *obj, const char *key, int field, int required, double *out)
{
    const ar_gpu_bound *b = ar_gpu_field_bound(field);
    const ar_json *v;
    int st;
    if (!key) key = b->key;
    v = ar_json_get(obj, key);
    st = ar_json_num(obj, key, required, out);
    if (st != ARACHNE_OK) return st;
    if (v && !ar_gpu_field_in_bounds(field, *out))
        return ar_json_error_at(v, "%s: %g is outside [%g, %g] %s", key, *out, b->lo, b->hi, b->unit);
    return ARACHNE_OK;
}

static int read_gpu_types(const ar_json *root, pending_type *pend, int *npend)
{
    static const char *const keys[] = { "name", "memory_bytes", "flops", "hbm_bytes_per_s", "intra_bytes_per_s",
                                        "inter_bytes_per_s", "intra_latency_s", "inter_latency_s", "intra_link",
                                        NULL };
    const ar_json *arr = NULL;
    size_t i;
    int st, k;
    *npend = 0;
    if ((st = ar_json_arr(root, "gpu_types", 0, &arr)) != ARACHNE_OK) return st;
    if (!arr) return ARACHNE_OK;
    for (i = 0; i < arr->count; i++) {
        const ar_json *o = arr->items[i];
        pending_type *p;
        const ar_gpu_spec *cat;
        const char *name = NULL;
        if (o->type != AR_JSON_OBJECT) return ar_json_error_at(o, "gpu_types[%zu]: expected an object", i);
        if ((st = ar_json_only_keys(o, keys)) != ARACHNE_OK) return st;
        if ((st = ar_json_str(o, "name", 1, &name)) != ARACHNE_OK) return st;
        if (!ar_cluster_valid_type_name(name))
            return ar_json_error_at(ar_json_get(o, "name"),
                                    "name: '%.64s' is not a valid GPU type name (1-%d letters, digits, '-', '_', '.')",
                                    name, AR_NAME_MAX - 1);
        if (*npend >= AR_MAX_TYPES)
            return ar_json_error_at(o, "more than %d GPU types", AR_MAX_TYPES);
        p = &pend[*npend];
        memset(p, 0, sizeof *p);
        cat = ar_gpu_catalog_find(name);
        if (cat) {
            p->spec = *cat; /* an override keeps the canonical name and the latencies unless given */
        } else {
            snprintf(p->spec.name, sizeof p->spec.name, "%s", name);
            p->spec.intra_lat = 5e-6;
            p->spec.inter_lat = 10e-6;
            p->spec.intra_link = AR_LINK_DEFAULT;
        }
        ar_gpu_name_key(p->spec.name, p->key, sizeof p->key);
        for (k = 0; k < *npend; k++)
            if (strcmp(pend[k].key, p->key) == 0)
                return ar_json_error_at(o, "GPU type '%s' is defined twice in gpu_types", name);
        if ((st = figure(o, NULL, ARACHNE_GPU_MEMORY_BYTES, 1, &p->spec.mem_bytes)) != ARACHNE_OK) return st;
        if ((st = figure(o, NULL, ARACHNE_GPU_FLOPS, 1, &p->spec.flops)) != ARACHNE_OK) return st;
        if ((st = figure(o, NULL, ARACHNE_GPU_HBM_BYTES_PER_S, 1, &p->spec.hbm_bw)) != ARACHNE_OK) return st;
        if ((st = figure(o, NULL, ARACHNE_GPU_INTRA_BYTES_PER_S, 1, &p->spec.intra_bw)) != ARACHNE_OK) return st;
        if ((st = figure(o, NULL, ARACHNE_GPU_INTER_BYTES_PER_S, 1, &p->spec.inter_bw)) != ARACHNE_OK) return st;
        if ((st = figure(o, NULL, ARACHNE_GPU_INTRA_LATENCY_S, 0, &p->spec.intra_lat)) != ARACHNE_OK) return st;
        if ((st = figure(o, NULL, ARACHNE_GPU_INTER_LATENCY_S, 0, &p->spec.inter_lat)) != ARACHNE_OK) return st;
        {
            const char *link = NULL;
            if ((st = ar_json_str(o, "intra_link", 0, &link)) != ARACHNE_OK) return st;
            if (link && !(p->spec.intra_link = ar_link_class_from_name(link)))
                return ar_json_error_at(ar_json_get(o, "intra_link"),
                                        "intra_link: '%.40s': expected \"nvlink\", \"pcie-p2p\" or \"pcie-host\"",
                                        link);
        }
        p->at = o;
        (*npend)++;
    }
    return ARACHNE_OK;
}

static int add_pending(arachne_cluster *c, pending_type *p)
{
    int k = c->ntypes;
    if (k >= AR_MAX_TYPES) return ar_json_error_at(p->at, "more than %d GPU types", AR_MAX_TYPES);
    c->types[k] = p->spec;
    c->type_custom[k] = 1;
    c->ntypes++;
    p->added = 1;
    return k;
}

/* Type index for a name used in nodes/links: the cluster, then gpu_types,
 * then the catalog (added on first use). */
static int resolve(arachne_cluster *c, pending_type *pend, int npend, const ar_json *at, const char *name)
{
    char key[64];
    const ar_gpu_spec *cat;
    int idx = ar_cluster_type_index(c, name), k;
    if (idx >= 0) return idx;
    cat = ar_gpu_catalog_find(name);
    if (ar_gpu_name_key(cat ? cat->name : name, key, sizeof key))
        for (k = 0; k < npend; k++)
            if (!pend[k].added && strcmp(pend[k].key, key) == 0) return add_pending(c, &pend[k]);
    if (!cat) {
        ar_json_error_at(at, "unknown GPU type '%.64s' (see 'arachne gpus', or define it in gpu_types)", name);
        return ARACHNE_E_NOT_FOUND;
    }
    if (c->ntypes >= AR_MAX_TYPES) return ar_json_error_at(at, "more than %d GPU types", AR_MAX_TYPES);
    return ar_cluster_intern_type(c, name);
}

static int read_cluster(arachne_cluster *c, const ar_json *root)
{
    static const char *const root_keys[] = { "format", "version", "gpu_types", "nodes", "links", NULL };
    static const char *const node_keys[] = { "type", "count", "gpus", NULL };
    static const char *const link_keys[] = { "a", "b", "bytes_per_s", NULL };
    pending_type pend[AR_MAX_TYPES];
    const ar_json *nodes = NULL, *links = NULL;
    const char *format = NULL;
    long version = FORMAT_VERSION;
    int npend = 0, st, k;
    size_t i;
    if (root->type != AR_JSON_OBJECT) return ar_json_error_at(root, "expected a cluster object");
    if ((st = ar_json_only_keys(root, root_keys)) != ARACHNE_OK) return st;
    if ((st = ar_json_str(root, "format", 0, &format)) != ARACHNE_OK) return st;
    if (format && strcmp(format, FORMAT_NAME) != 0)
        return ar_json_error_at(ar_json_get(root, "format"), "format: expected \"%s\", got \"%.64s\"", FORMAT_NAME,
                                format);
    if ((st = ar_json_int(root, "version", 0, 1, 1000000, &version)) != ARACHNE_OK) return st;
    if (version != FORMAT_VERSION) {
        const ar_json *v = ar_json_get(root, "version");
        ar_json_error_at(v, "version %ld is newer than this library reads (%d)", version, FORMAT_VERSION);
        return ARACHNE_E_UNSUPPORTED;
    }
    if ((st = read_gpu_types(root, pend, &npend)) != ARACHNE_OK) return st;
    if ((st = ar_json_arr(root, "nodes", 1, &nodes)) != ARACHNE_OK) return st;
    for (i = 0; i < nodes->count; i++) {
        const ar_json *o = nodes->items[i];
        const char *type = NULL;
        long count = 0, gpus = 0;
        int idx;
        char where[320];
        if (o->type != AR_JSON_OBJECT) return ar_json_error_at(o, "nodes[%zu]: expected an object", i);
        if ((st = ar_json_only_keys(o, node_keys)) != ARACHNE_OK) return st;
        if ((st = ar_json_str(o, "type", 1, &type)) != ARACHNE_OK) return st;
        if ((st = ar_json_int(o, "count", 1, 1, AR_MAX_TOTAL_GPUS, &count)) != ARACHNE_OK) return st;
        if ((st = ar_json_int(o, "gpus", 1, 1, AR_MAX_NODE_GPUS, &gpus)) != ARACHNE_OK) return st;
        idx = resolve(c, pend, npend, ar_json_get(o, "type"), type);
        if (idx < 0) return idx;
        snprintf(where, sizeof where, "%s:%d:%d: ", o->source, o->line, o->col);
        st = ar_cluster_push_nodes(c, idx, count, gpus, where);
        if (st != ARACHNE_OK) return st == ARACHNE_E_INVALID_ARGUMENT ? ARACHNE_E_PARSE : st;
    }
    for (k = 0; k < npend; k++)
        if (!pend[k].added && (st = add_pending(c, &pend[k])) < 0) return st;
    if ((st = ar_json_arr(root, "links", 0, &links)) != ARACHNE_OK) return st;
    for (i = 0; links && i < links->count; i++) {
        const ar_json *o = links->items[i];
        const char *a = NULL, *b = NULL;
        double bw = 0;
        int ia, ib;
        if (o->type != AR_JSON_OBJECT) return ar_json_error_at(o, "links[%zu]: expected an object", i);
        if ((st = ar_json_only_keys(o, link_keys)) != ARACHNE_OK) return st;
        if ((st = ar_json_str(o, "a", 1, &a)) != ARACHNE_OK) return st;
        if ((st = ar_json_str(o, "b", 1, &b)) != ARACHNE_OK) return st;
        if ((st = figure(o, "bytes_per_s", ARACHNE_GPU_INTER_BYTES_PER_S, 1, &bw)) != ARACHNE_OK) return st;
        ia = ar_cluster_type_index(c, a);
        if (ia < 0) return ar_json_error_at(ar_json_get(o, "a"), "a: GPU type '%.64s' is not in the cluster", a);
        ib = ar_cluster_type_index(c, b);
        if (ib < 0) return ar_json_error_at(ar_json_get(o, "b"), "b: GPU type '%.64s' is not in the cluster", b);
        if (c->link_set[ia][ib])
            return ar_json_error_at(o, "link %s-%s is given twice", c->types[ia].name, c->types[ib].name);
        c->link_bw[ia][ib] = c->link_bw[ib][ia] = bw;
        c->link_set[ia][ib] = c->link_set[ib][ia] = 1;
    }
    return ARACHNE_OK;
}

static int from_json_source(arachne_cluster **out, const char *json, size_t len, const char *source)
{
    ar_json *root = NULL;
    arachne_cluster *c;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_from_json: out is NULL");
    *out = NULL;
    if (!json) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_from_json: json is NULL");
    st = ar_json_parse(&root, json, len, source);
    if (st != ARACHNE_OK) return st;
    c = ar_calloc(1, sizeof *c);
    if (!c) {
        ar_json_free(root);
        return ARACHNE_E_NO_MEMORY;
    }
    st = read_cluster(c, root);
    ar_json_free(root);
    if (st == ARACHNE_OK) st = ar_cluster_refresh(c);
    if (st != ARACHNE_OK) {
        arachne_cluster_destroy(c);
        return st;
    }
    *out = c;
    return ARACHNE_OK;
}

int arachne_cluster_from_json(arachne_cluster **out, const char *json, size_t len)
{
    return from_json_source(out, json, len, "<cluster json>");
}

int arachne_cluster_load(arachne_cluster **out, const char *path)
{
    char *data = NULL;
    size_t len = 0;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_load: out is NULL");
    *out = NULL;
    if (!path) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_load: path is NULL");
    st = ar_read_file(path, &data, &len);
    if (st != ARACHNE_OK) return st;
    st = from_json_source(out, data, len, path);
    free(data);
    return st;
}

int arachne_cluster_save(const arachne_cluster *c, const char *path)
{
    if (!c || !path) return AR_NULL_ARG("arachne_cluster_save", c, path);
    if (!c->json_cache) return ar_error(ARACHNE_E_NO_MEMORY, "cluster JSON could not be built (out of memory)");
    return ar_write_file_atomic(path, c->json_cache, strlen(c->json_cache));
}
