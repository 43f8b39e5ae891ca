/* cluster.c -- the cluster handle: GPU types, nodes grouped per type, links,
 * the compact string form "a100-40:32x4,a6000:8x4+16x1,h100:16x8".
 *
 * Invariants (kept by every mutator through ar_cluster_refresh):
 *  - nodes are sorted by type index (the nodes of a type form one block, the
 *    blocks in type order), inside a block in order of addition;
 *  - total_gpus / type_gpus / type_nodes / type_max_node describe nodes[];
 *  - link_bw[i][j] = min(inter_bw_i, inter_bw_j) unless set explicitly;
 *  - spec_cache and json_cache hold the current text forms.
 * Getters only read, so a built cluster can be shared between threads.
 * The JSON form lives in cluster_json.c. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

#define DEFAULT_INTRA_LAT 5e-6
#define DEFAULT_INTER_LAT 10e-6

/* ------------------------------------------------------------------------ */
/* Lookup                                                                    */
/* ------------------------------------------------------------------------ */

int ar_cluster_type_index(const arachne_cluster *c, const char *name)
{
    char key[64], k2[64];
    const ar_gpu_spec *g;
    int i;
    if (!c || !name || !ar_gpu_name_key(name, key, sizeof key)) return -1;
    for (i = 0; i < c->ntypes; i++) {
        ar_gpu_name_key(c->types[i].name, k2, sizeof k2);
        if (strcmp(key, k2) == 0) return i;
    }
    g = ar_gpu_catalog_find(name);
    if (g)
        for (i = 0; i < c->ntypes; i++)
            if (strcmp(c->types[i].name, g->name) == 0) return i;
    return -1;
}

double ar_cluster_link_bw(const arachne_cluster *c, int i, int j)
{
    if (!c || i < 0 || j < 0 || i >= c->ntypes || j >= c->ntypes) return 0.0;
    return c->link_bw[i][j];
}

int ar_cluster_valid_type_name(const char *name)
{
    size_t n, i;
    if (!name) return 0;
    n = strlen(name);
    if (n == 0 || n >= AR_NAME_MAX) return 0;
    for (i = 0; i < n; i++) {
        char ch = name[i];
        int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && !(i > 0 && (ch == '-' || ch == '_' || ch == '.'))) return 0;
    }
    return 1;
}

static int new_type(arachne_cluster *c, const ar_gpu_spec *spec)
{
    int k = c->ntypes;
    if (k >= AR_MAX_TYPES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cannot add GPU type '%s': a cluster holds at most %d GPU types",
                        spec->name, AR_MAX_TYPES);
    c->types[k] = *spec;
    c->type_custom[k] = 0;
    c->ntypes++;
    return k;
}

int ar_cluster_intern_type(arachne_cluster *c, const char *name)
{
    const ar_gpu_spec *g;
    int idx = ar_cluster_type_index(c, name);
    if (idx >= 0) return idx;
    g = ar_gpu_catalog_find(name);
    if (!g) return ar_error(ARACHNE_E_NOT_FOUND, "unknown GPU type '%.64s' (see 'arachne gpus')", name);
    return new_type(c, g);
}

/* ------------------------------------------------------------------------ */
/* Derived state and caches                                                  */
/* ------------------------------------------------------------------------ */

static void lower_copy(char *dst, const char *src, size_t cap)
{
    size_t i;
    for (i = 0; i + 1 < cap && src[i]; i++)
        dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? (char)(src[i] - 'A' + 'a') : src[i];
    dst[i] = '\0';
}

static int build_spec(const arachne_cluster *c, char **out)
{
    ar_buf b;
    int t, first = 1, st;
    ar_buf_init(&b);
    ar_buf_put(&b, "", 0);
    for (t = 0; t < c->ntypes; t++) {
        char lname[AR_NAME_MAX];
        int i = 0, group = 0;
        if (c->type_nodes[t] == 0) continue;
        lower_copy(lname, c->types[t].name, sizeof lname);
        ar_buf_printf(&b, "%s%s:", first ? "" : ",", lname);
        first = 0;
        while (i < c->nnodes && c->nodes[i].type != t) i++;
        while (i < c->nnodes && c->nodes[i].type == t) {
            int g = c->nodes[i].gpus, run = 0;
            while (i < c->nnodes && c->nodes[i].type == t && c->nodes[i].gpus == g) { run++; i++; }
            ar_buf_printf(&b, "%s%dx%d", group++ ? "+" : "", run, g);
        }
    }
    st = ar_buf_status(&b);
    if (st != ARACHNE_OK) { ar_buf_free(&b); return st; }
    *out = b.data;
    return ARACHNE_OK;
}

int ar_cluster_refresh(arachne_cluster *c)
{
    int i, j, st;
    char *spec = NULL, *json = NULL;
    c->total_gpus = 0;
    for (i = 0; i < AR_MAX_TYPES; i++) c->type_gpus[i] = c->type_nodes[i] = c->type_max_node[i] = 0;
    for (i = 0; i < c->nnodes; i++) {
        int t = c->nodes[i].type, g = c->nodes[i].gpus;
        c->total_gpus += g;
        c->type_gpus[t] += g;
        c->type_nodes[t]++;
        if (g > c->type_max_node[t]) c->type_max_node[t] = g;
    }
    for (i = 0; i < c->ntypes; i++)
        for (j = 0; j < c->ntypes; j++)
            if (!c->link_set[i][j]) c->link_bw[i][j] = AR_MIN(c->types[i].inter_bw, c->types[j].inter_bw);
    free(c->spec_cache);
    free(c->json_cache);
    c->spec_cache = c->json_cache = NULL;
    st = build_spec(c, &spec);
    if (st == ARACHNE_OK) st = ar_cluster_build_json(c, &json);
    if (st != ARACHNE_OK) {
        free(spec);
        return st;
    }
    c->spec_cache = spec;
    c->json_cache = json;
    return ARACHNE_OK;
}

int ar_cluster_push_nodes(arachne_cluster *c, int type, long count, long gpus, const char *where)
{
    int pos, i;
    if (count < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%snode count %ld: must be at least 1", where, count);
    if (gpus < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%sGPUs per node %ld: must be at least 1", where, gpus);
    if (gpus > AR_MAX_NODE_GPUS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%sa node of %ld GPUs exceeds the limit of %d GPUs per node", where,
                        gpus, AR_MAX_NODE_GPUS);
    if (count > AR_MAX_TOTAL_GPUS || (long long)count * gpus > (long long)AR_MAX_TOTAL_GPUS - c->total_gpus)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s%ld nodes of %ld GPUs would take the cluster past %d GPUs",
                        where, count, gpus, AR_MAX_TOTAL_GPUS);
    if (c->nnodes + count > c->cap_nodes) {
        long ncap = c->cap_nodes ? c->cap_nodes : 16;
        ar_node *nn;
        while (ncap < c->nnodes + count) ncap *= 2;
        nn = ar_realloc(c->nodes, (size_t)ncap * sizeof *nn);
        if (!nn) return ARACHNE_E_NO_MEMORY;
        c->nodes = nn;
        c->cap_nodes = (int)ncap;
    }
    /* insert after every node of type <= `type` */
    for (pos = c->nnodes; pos > 0 && c->nodes[pos - 1].type > type; pos--) {}
    memmove(c->nodes + pos + count, c->nodes + pos, (size_t)(c->nnodes - pos) * sizeof *c->nodes);
    for (i = 0; i < count; i++) {
        c->nodes[pos + i].type = type;
        c->nodes[pos + i].gpus = (int)gpus;
    }
    c->nnodes += (int)count;
    c->total_gpus += (int)(count * gpus); /* refresh recomputes; kept for the limit check above */
    return ARACHNE_OK;
}

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                 */
/* ------------------------------------------------------------------------ */

int arachne_cluster_create(arachne_cluster **out)
{
    arachne_cluster *c;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_create: out is NULL");
    *out = NULL;
    c = ar_calloc(1, sizeof *c);
    if (!c) return ARACHNE_E_NO_MEMORY;
    st = ar_cluster_refresh(c);
    if (st != ARACHNE_OK) {
        arachne_cluster_destroy(c);
        return st;
    }
    *out = c;
    return ARACHNE_OK;
}

void arachne_cluster_destroy(arachne_cluster *c)
{
    if (!c) return;
    free(c->nodes);
    free(c->spec_cache);
    free(c->json_cache);
    free(c);
}

int ar_cluster_copy(arachne_cluster **out, const arachne_cluster *src)
{
    arachne_cluster *c;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_cluster_copy: out is NULL");
    *out = NULL;
    if (!src) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_cluster_copy: cluster is NULL");
    c = ar_malloc(sizeof *c);
    if (!c) return ARACHNE_E_NO_MEMORY;
    *c = *src;
    c->nodes = NULL;
    c->spec_cache = c->json_cache = NULL;
    c->cap_nodes = 0;
    if (src->nnodes > 0) {
        c->nodes = ar_malloc((size_t)src->nnodes * sizeof *c->nodes);
        if (!c->nodes) goto oom;
        memcpy(c->nodes, src->nodes, (size_t)src->nnodes * sizeof *c->nodes);
        c->cap_nodes = src->nnodes;
    }
    if (src->spec_cache && !(c->spec_cache = ar_strdup(src->spec_cache))) goto oom;
    if (src->json_cache && !(c->json_cache = ar_strdup(src->json_cache))) goto oom;
    *out = c;
    return ARACHNE_OK;
oom:
    arachne_cluster_destroy(c);
    return ARACHNE_E_NO_MEMORY;
}

/* ------------------------------------------------------------------------ */
/* Mutators                                                                  */
/* ------------------------------------------------------------------------ */

static int positive_finite(double v) { return isfinite(v) && v > 0; }

/* ARACHNE_E_INVALID_ARGUMENT naming what, the field and its bounds when
 * value lies outside them (ar_gpu_field_bound). */
static int check_field(const char *what, int field, double value)
{
    const ar_gpu_bound *b = ar_gpu_field_bound(field);
    if (ar_gpu_field_in_bounds(field, value)) return ARACHNE_OK;
    return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: %s %g is outside [%g, %g] %s", what, b->key, value, b->lo,
                    b->hi, b->unit);
}

int arachne_cluster_add_gpu_type(arachne_cluster *c, const char *name, double mem_bytes, double flops,
                                 double hbm_bw, double intra_bw, double inter_bw)
{
    const ar_gpu_spec *g;
    ar_gpu_spec spec;
    int idx;
    if (!c) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_add_gpu_type: cluster is NULL");
    if (!ar_cluster_valid_type_name(name))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "GPU type name '%.64s': want 1-%d characters of letters, digits, '-', '_' or '.'",
                        name ? name : "(null)", AR_NAME_MAX - 1);
    {
        const double given[5] = { mem_bytes, flops, hbm_bw, intra_bw, inter_bw };
        char what[AR_NAME_MAX + 16];
        int f, st;
        snprintf(what, sizeof what, "GPU type '%s'", name);
        for (f = ARACHNE_GPU_MEMORY_BYTES; f <= ARACHNE_GPU_INTER_BYTES_PER_S; f++)
            if ((st = check_field(what, f, given[f])) != ARACHNE_OK) return st;
    }
    idx = ar_cluster_type_index(c, name);
    if (idx < 0) {
        g = ar_gpu_catalog_find(name);
        memset(&spec, 0, sizeof spec);
        if (g) {
            spec = *g;
        } else {
            snprintf(spec.name, sizeof spec.name, "%s", name);
            spec.intra_lat = DEFAULT_INTRA_LAT;
            spec.inter_lat = DEFAULT_INTER_LAT;
            spec.intra_link = AR_LINK_DEFAULT;
        }
        idx = new_type(c, &spec);
        if (idx < 0) return idx;
    }
    c->types[idx].mem_bytes = mem_bytes;
    c->types[idx].flops = flops;
    c->types[idx].hbm_bw = hbm_bw;
    c->types[idx].intra_bw = intra_bw;
    c->types[idx].inter_bw = inter_bw;
    c->type_custom[idx] = 1;
    return ar_cluster_refresh(c);
}

int arachne_cluster_set_gpu_field(arachne_cluster *c, const char *type, int field, double value)
{
    int idx;
    ar_gpu_spec *g;
    if (!c || !type) return AR_NULL_ARG("arachne_cluster_set_gpu_field", c, type);
    idx = ar_cluster_type_index(c, type);
    if (idx < 0) return ar_error(ARACHNE_E_NOT_FOUND, "GPU type '%.64s' is not in the cluster", type);
    if (ar_gpu_field_bound(field)) {
        char what[AR_NAME_MAX + 16];
        int st;
        snprintf(what, sizeof what, "GPU type '%s'", c->types[idx].name);
        if ((st = check_field(what, field, value)) != ARACHNE_OK) return st;
    } else if (field == ARACHNE_GPU_INTRA_LINK &&
               !(positive_finite(value) && ar_link_class_name((int)value == value ? (int)value : 0)))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "GPU type '%s': intra-node link class %g: want 1 (NVLink), 2 (PCIe peer-to-peer) or "
                        "3 (PCIe through the host)", c->types[idx].name, value);
    g = &c->types[idx];
    switch (field) {
    case ARACHNE_GPU_MEMORY_BYTES: g->mem_bytes = value; break;
    case ARACHNE_GPU_FLOPS: g->flops = value; break;
    case ARACHNE_GPU_HBM_BYTES_PER_S: g->hbm_bw = value; break;
    case ARACHNE_GPU_INTRA_BYTES_PER_S: g->intra_bw = value; break;
    case ARACHNE_GPU_INTER_BYTES_PER_S: g->inter_bw = value; break;
    case ARACHNE_GPU_INTRA_LATENCY_S: g->intra_lat = value; break;
    case ARACHNE_GPU_INTER_LATENCY_S: g->inter_lat = value; break;
    case ARACHNE_GPU_INTRA_LINK: g->intra_link = (int)value; break;
    default: return ar_error(ARACHNE_E_INVALID_ARGUMENT, "GPU field %d is not an arachne_gpu_field", field);
    }
    c->type_custom[idx] = 1;
    return ar_cluster_refresh(c);
}

int arachne_cluster_add_nodes(arachne_cluster *c, const char *type, int count, int gpus_per_node)
{
    int idx, st, had;
    if (!c || !type) return AR_NULL_ARG("arachne_cluster_add_nodes", c, type);
    had = c->ntypes;
    idx = ar_cluster_intern_type(c, type);
    if (idx < 0) return idx;
    st = ar_cluster_push_nodes(c, idx, count, gpus_per_node, "");
    if (st != ARACHNE_OK) {
        c->ntypes = had; /* undo a type added for this call */
        return st;
    }
    return ar_cluster_refresh(c);
}

int arachne_cluster_set_link_bandwidth(arachne_cluster *c, const char *type_a, const char *type_b, double bytes_per_s)
{
    int i, j;
    if (!c || !type_a || !type_b)
        return AR_NULL_ARG("arachne_cluster_set_link_bandwidth", c, type_a, type_b);
    i = ar_cluster_type_index(c, type_a);
    if (i < 0) return ar_error(ARACHNE_E_NOT_FOUND, "link: GPU type '%.64s' is not in the cluster", type_a);
    j = ar_cluster_type_index(c, type_b);
    if (j < 0) return ar_error(ARACHNE_E_NOT_FOUND, "link: GPU type '%.64s' is not in the cluster", type_b);
    if (!ar_gpu_field_in_bounds(ARACHNE_GPU_INTER_BYTES_PER_S, bytes_per_s)) {
        const ar_gpu_bound *b = ar_gpu_field_bound(ARACHNE_GPU_INTER_BYTES_PER_S);
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "link %s-%s: bandwidth %g is outside [%g, %g] bytes/s",
                        c->types[i].name, c->types[j].name, bytes_per_s, b->lo, b->hi);
    }
    c->link_bw[i][j] = c->link_bw[j][i] = bytes_per_s;
    c->link_set[i][j] = c->link_set[j][i] = 1;
    return ar_cluster_refresh(c);
}

/* ------------------------------------------------------------------------ */
/* Compact string                                                            */
/* ------------------------------------------------------------------------ */

typedef struct spec_parser {
    const char *s;
    size_t n, i;
    char shown[96]; /* the spec as quoted in messages (shortened) */
} spec_parser;

static int serr(spec_parser *p, int status, size_t pos, const char *fmt, ...) AR_PRINTF(4, 5);
static int serr(spec_parser *p, int status, size_t pos, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ar_error(status, "cluster spec '%s': offset %zu: %s", p->shown, pos + 1, msg);
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }
static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static void skip_spaces(spec_parser *p) { while (p->i < p->n && is_space(p->s[p->i])) p->i++; }

static const char *show_char(spec_parser *p, char *buf, size_t cap)
{
    unsigned char ch;
    if (p->i >= p->n) return "the end";
    ch = (unsigned char)p->s[p->i];
    if (ch >= 0x20 && ch < 0x7F) snprintf(buf, cap, "'%c'", ch);
    else snprintf(buf, cap, "byte 0x%02x", ch);
    return buf;
}

/* Reads a positive decimal count; `what` names it in messages. */
static int read_count(spec_parser *p, const char *what, const char *missing, long limit, long *out)
{
    size_t start = p->i;
    long v = 0;
    char d[16];
    if (p->i < p->n && p->s[p->i] == '-')
        return serr(p, ARACHNE_E_PARSE, p->i, "%s must be a positive whole number, not negative", what);
    if (p->i >= p->n || !is_digit(p->s[p->i]))
        return serr(p, ARACHNE_E_PARSE, p->i, "%s, got %s", missing, show_char(p, d, sizeof d));
    while (p->i < p->n && is_digit(p->s[p->i])) {
        if (v <= limit) v = v * 10 + (p->s[p->i] - '0');
        p->i++;
    }
    if (v > limit)
        return serr(p, ARACHNE_E_PARSE, start, "%s %.*s is too large (at most %ld)", what, (int)AR_MIN(p->i - start, 24),
                    p->s + start, limit);
    if (v == 0) return serr(p, ARACHNE_E_PARSE, start, "%s must be at least 1", what);
    *out = v;
    return ARACHNE_OK;
}

static int parse_into(arachne_cluster *c, spec_parser *p)
{
    char d[16];
    skip_spaces(p);
    if (p->i >= p->n) return serr(p, ARACHNE_E_PARSE, p->i, "empty cluster spec (want e.g. 'a100-40:32x4,h100:16x8')");
    for (;;) {
        size_t name_start = p->i, name_end;
        char name[64];
        int idx;
        while (p->i < p->n && p->s[p->i] != ':' && p->s[p->i] != ',' && p->s[p->i] != '+') p->i++;
        name_end = p->i;
        while (name_end > name_start && is_space(p->s[name_end - 1])) name_end--;
        if (name_end == name_start) {
            if (p->i < p->n && p->s[p->i] == ':')
                return serr(p, ARACHNE_E_PARSE, p->i, "expected a GPU type name before ':'");
            return serr(p, ARACHNE_E_PARSE, p->i, "expected a GPU type name, got %s", show_char(p, d, sizeof d));
        }
        if (name_end - name_start >= sizeof name)
            return serr(p, ARACHNE_E_PARSE, name_start, "GPU type name of %zu characters is too long",
                        name_end - name_start);
        memcpy(name, p->s + name_start, name_end - name_start);
        name[name_end - name_start] = '\0';
        if (p->i >= p->n || p->s[p->i] != ':')
            return serr(p, ARACHNE_E_PARSE, p->i, "expected ':' after GPU type '%s' (want TYPE:NODESxGPUS)", name);
        idx = ar_cluster_type_index(c, name);
        if (idx < 0) {
            if (!ar_gpu_catalog_find(name))
                return serr(p, ARACHNE_E_NOT_FOUND, name_start, "unknown GPU type '%s' (see 'arachne gpus')", name);
            idx = ar_cluster_intern_type(c, name);
            if (idx < 0) {
                char msg[256];
                snprintf(msg, sizeof msg, "%s", arachne_last_error());
                return serr(p, idx, name_start, "%s", msg);
            }
        }
        p->i++; /* ':' */
        for (;;) {
            long nodes = 0, gpus = 0;
            size_t group_start;
            int st;
            skip_spaces(p);
            group_start = p->i;
            if (p->i < p->n && (p->s[p->i] == 'x' || p->s[p->i] == 'X'))
                return serr(p, ARACHNE_E_PARSE, p->i, "expected a node count before 'x' (want NODESxGPUS)");
            st = read_count(p, "node count", "expected a node group NODESxGPUS", AR_MAX_TOTAL_GPUS, &nodes);
            if (st) return st;
            skip_spaces(p);
            if (p->i >= p->n || (p->s[p->i] != 'x' && p->s[p->i] != 'X'))
                return serr(p, ARACHNE_E_PARSE, p->i, "expected 'x' after the node count, got %s (want NODESxGPUS)",
                            show_char(p, d, sizeof d));
            p->i++;
            skip_spaces(p);
            st = read_count(p, "GPUs per node", "expected a GPU count after 'x'", 1000000000L, &gpus);
            if (st) return st;
            if (gpus > AR_MAX_NODE_GPUS)
                return serr(p, ARACHNE_E_PARSE, group_start, "a node of %ld GPUs exceeds the limit of %d GPUs per node",
                            gpus, AR_MAX_NODE_GPUS);
            if (nodes * gpus > (long)AR_MAX_TOTAL_GPUS - c->total_gpus)
                return serr(p, ARACHNE_E_PARSE, group_start, "more than %d GPUs in total", AR_MAX_TOTAL_GPUS);
            st = ar_cluster_push_nodes(c, idx, nodes, gpus, "");
            if (st) {
                char msg[256];
                snprintf(msg, sizeof msg, "%s", arachne_last_error());
                return serr(p, st, group_start, "%s", msg);
            }
            skip_spaces(p);
            if (p->i < p->n && p->s[p->i] == '+') { p->i++; continue; }
            break;
        }
        if (p->i >= p->n) return ARACHNE_OK;
        if (p->s[p->i] != ',')
            return serr(p, ARACHNE_E_PARSE, p->i, "unexpected %s after a node group (expected ',', '+' or the end)",
                        show_char(p, d, sizeof d));
        p->i++;
        skip_spaces(p);
        if (p->i >= p->n) return serr(p, ARACHNE_E_PARSE, p->i, "expected a GPU type after ','");
    }
}

int arachne_cluster_parse(arachne_cluster **out, const char *spec)
{
    arachne_cluster *c = NULL;
    spec_parser p;
    size_t n;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_parse: out is NULL");
    *out = NULL;
    if (!spec) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_parse: spec is NULL");
    memset(&p, 0, sizeof p);
    p.s = spec;
    p.n = n = strlen(spec);
    if (n < sizeof p.shown) snprintf(p.shown, sizeof p.shown, "%s", spec);
    else snprintf(p.shown, sizeof p.shown, "%.*s...", (int)sizeof p.shown - 4, spec);
    c = ar_calloc(1, sizeof *c);
    if (!c) return ARACHNE_E_NO_MEMORY;
    st = parse_into(c, &p);
    if (st == ARACHNE_OK) st = ar_cluster_refresh(c);
    if (st != ARACHNE_OK) {
        arachne_cluster_destroy(c);
        return st;
    }
    *out = c;
    return ARACHNE_OK;
}

int arachne_cluster_open(arachne_cluster **out, const char *spec_or_path)
{
    size_t n;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_open: out is NULL");
    *out = NULL;
    if (!spec_or_path) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_open: argument is NULL");
    n = strlen(spec_or_path);
    if (n >= 5 && ar_strcasecmp(spec_or_path + n - 5, ".json") == 0) return arachne_cluster_load(out, spec_or_path);
    if (ar_path_readable(spec_or_path)) return arachne_cluster_load(out, spec_or_path);
    return arachne_cluster_parse(out, spec_or_path);
}

/* ------------------------------------------------------------------------ */
/* Getters (pure reads)                                                      */
/* ------------------------------------------------------------------------ */

int arachne_cluster_type_count(const arachne_cluster *c, int *out)
{
    if (!c || !out) return AR_NULL_ARG("arachne_cluster_type_count", c, out);
    *out = c->ntypes;
    return ARACHNE_OK;
}

int arachne_cluster_type_name(const arachne_cluster *c, int index, const char **out)
{
    if (!c || !out) return AR_NULL_ARG("arachne_cluster_type_name", c, out);
    *out = NULL;
    if (index < 0 || index >= c->ntypes)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "GPU type index %d out of range [0, %d)", index, c->ntypes);
    *out = c->types[index].name;
    return ARACHNE_OK;
}

/* Resolves an optional type filter: -1 for all (NULL), -2 for a catalog type
 * absent from the cluster, the index, or a negative status below -2. */
static int type_filter(const arachne_cluster *c, const char *type, int *idx)
{
    if (!type) { *idx = -1; return ARACHNE_OK; }
    *idx = ar_cluster_type_index(c, type);
    if (*idx >= 0) return ARACHNE_OK;
    if (ar_gpu_catalog_find(type)) { *idx = -2; return ARACHNE_OK; }
    return ar_error(ARACHNE_E_NOT_FOUND, "unknown GPU type '%.64s' (see 'arachne gpus')", type);
}

int arachne_cluster_gpu_count(const arachne_cluster *c, const char *type, int *out)
{
    int idx, st;
    if (!c || !out) return AR_NULL_ARG("arachne_cluster_gpu_count", c, out);
    if ((st = type_filter(c, type, &idx)) != ARACHNE_OK) return st;
    *out = idx == -1 ? c->total_gpus : idx == -2 ? 0 : c->type_gpus[idx];
    return ARACHNE_OK;
}

int arachne_cluster_node_count(const arachne_cluster *c, const char *type, int *out)
{
    int idx, st;
    if (!c || !out) return AR_NULL_ARG("arachne_cluster_node_count", c, out);
    if ((st = type_filter(c, type, &idx)) != ARACHNE_OK) return st;
    *out = idx == -1 ? c->nnodes : idx == -2 ? 0 : c->type_nodes[idx];
    return ARACHNE_OK;
}

int arachne_cluster_largest_node(const arachne_cluster *c, const char *type, int *out)
{
    int idx, st, i, m = 0;
    if (!c || !out) return AR_NULL_ARG("arachne_cluster_largest_node", c, out);
    if ((st = type_filter(c, type, &idx)) != ARACHNE_OK) return st;
    if (idx == -1) {
        for (i = 0; i < c->ntypes; i++) m = AR_MAX(m, c->type_max_node[i]);
    } else if (idx >= 0) {
        m = c->type_max_node[idx];
    }
    *out = m;
    return ARACHNE_OK;
}

int arachne_cluster_node(const arachne_cluster *c, int node, const char **type, int *gpus)
{
    if (!c) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_cluster_node: cluster is NULL");
    if (node < 0 || node >= c->nnodes)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "node %d out of range [0, %d)", node, c->nnodes);
    if (type) *type = c->types[c->nodes[node].type].name;
    if (gpus) *gpus = c->nodes[node].gpus;
    return ARACHNE_OK;
}

int arachne_cluster_to_string(const arachne_cluster *c, const char **out)
{
    if (!c || !out) return AR_NULL_ARG("arachne_cluster_to_string", c, out);
    *out = c->spec_cache;
    if (!c->spec_cache) return ar_error(ARACHNE_E_NO_MEMORY, "cluster text could not be built (out of memory)");
    return ARACHNE_OK;
}

int arachne_cluster_to_json(const arachne_cluster *c, const char **out)
{
    if (!c || !out) return AR_NULL_ARG("arachne_cluster_to_json", c, out);
    *out = c->json_cache;
    if (!c->json_cache) return ar_error(ARACHNE_E_NO_MEMORY, "cluster JSON could not be built (out of memory)");
    return ARACHNE_OK;
}

int arachne_cluster_gpu_get(const arachne_cluster *c, const char *type, int field, double *out)
{
    int idx;
    if (!c || !type || !out) return AR_NULL_ARG("arachne_cluster_gpu_get", c, type, out);
    idx = ar_cluster_type_index(c, type);
    if (idx < 0) return ar_error(ARACHNE_E_NOT_FOUND, "GPU type '%.64s' is not in the cluster", type);
    return ar_gpu_spec_field(&c->types[idx], field, out);
}

int arachne_cluster_link_bandwidth(const arachne_cluster *c, const char *type_a, const char *type_b, double *out)
{
    int i, j;
    if (!c || !type_a || !type_b || !out)
        return AR_NULL_ARG("arachne_cluster_link_bandwidth", c, type_a, type_b, out);
    i = ar_cluster_type_index(c, type_a);
    if (i < 0) return ar_error(ARACHNE_E_NOT_FOUND, "GPU type '%.64s' is not in the cluster", type_a);
    j = ar_cluster_type_index(c, type_b);
    if (j < 0) return ar_error(ARACHNE_E_NOT_FOUND, "GPU type '%.64s' is not in the cluster", type_b);
    *out = c->link_bw[i][j];
    return ARACHNE_OK;
}
