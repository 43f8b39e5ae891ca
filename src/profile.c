/* profile.c -- the profile table: entries keyed by (GPU type, layer kind, TP,
 * micro-batch), exact-match lookup, and the "arachne-profile" JSON format
 * (docs/formats.md, "Profile").
 *
 * The entry array is kept sorted by key on every insertion, so a lookup is a
 * binary search that never writes: a table can be shared read-only. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "profile.h"

static const char *const kind_names[AR_LAYER_KINDS] = { "embed", "dense", "moe", "head",
                                                         "mamba", "attention", "mlp", "moe_mlp" };

const char *ar_layer_kind_name(int kind)
{
    return (kind >= 0 && kind < AR_LAYER_KINDS) ? kind_names[kind] : NULL;
}

static int kind_from_name(const char *s)
{
    int k;
    for (k = 0; k < AR_LAYER_KINDS; k++)
        if (strcmp(s, kind_names[k]) == 0) return k;
    return -1;
}

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

/* Key order: GPU name (case-insensitive), kind, tp, mbs. */
static int key_cmp(const char *gpu, int kind, int tp, int mbs, const ar_profile_entry *e)
{
    int c = ar_strcasecmp(gpu, e->gpu);
    if (c) return c < 0 ? -1 : 1;
    if (kind != e->kind) return kind < e->kind ? -1 : 1;
    if (tp != e->tp) return tp < e->tp ? -1 : 1;
    if (mbs != e->mbs) return mbs < e->mbs ? -1 : 1;
    return 0;
}

/* Index of the key, or -(insertion point) - 1. */
static int search(const arachne_profile *p, const char *gpu, int kind, int tp, int mbs)
{
    int lo = 0, hi = p->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = key_cmp(gpu, kind, tp, mbs, &p->e[mid]);
        if (c == 0) return mid;
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return -lo - 1;
}

const ar_profile_entry *ar_profile_find(const arachne_profile *p, const char *gpu, int kind, int tp, int mbs)
{
    int i;
    const ar_gpu_spec *g;
    if (!p || !gpu || p->n == 0) return NULL;
    i = search(p, gpu, kind, tp, mbs);
    if (i >= 0) return &p->e[i];
    /* An alias ("a100-40gb") is matched under its canonical catalog name. */
    g = ar_gpu_catalog_find(gpu);
    if (g && ar_strcasecmp(g->name, gpu) != 0) {
        i = search(p, g->name, kind, tp, mbs);
        if (i >= 0) return &p->e[i];
    }
    return NULL;
}

int ar_profile_new(arachne_profile **out, const char *model, int seq_len)
{
    arachne_profile *p;
    size_t n;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_create: NULL out");
    *out = NULL;
    if (!model) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_create: NULL model name");
    n = strlen(model);
    if (n == 0 || n >= sizeof p->model)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "profile model name '%.80s': must be 1 to %d bytes", model,
                        (int)sizeof p->model - 1);
    /* the same bounds as the reader's: never build what cannot be saved
     * and read back (seq_len up to INT_MAX was saved, then refused) */
    if (seq_len < 1 || seq_len > AR_PROFILE_MAX_SEQ_LEN)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "profile for '%s': seq_len %d: must be in 1..%d", model, seq_len,
                        AR_PROFILE_MAX_SEQ_LEN);
    p = ar_calloc(1, sizeof *p);
    if (!p) return ARACHNE_E_NO_MEMORY;
    memcpy(p->model, model, n + 1);
    p->seq_len = seq_len;
    p->sorted = 1;
    p->precision = AR_PREC_BF16;
    p->act_recompute = AR_RECOMPUTE_SELECTIVE;
    *out = p;
    return ARACHNE_OK;
}

int arachne_profile_create(arachne_profile **out, const char *model_name, int seq_len)
{
    return ar_profile_new(out, model_name, seq_len);
}

void arachne_profile_destroy(arachne_profile *p)
{
    if (!p) return;
    free(p->e);
    free(p->json_cache);
    free(p);
}

/* Value j of an entry (0 fwd_s, 1 bwd_s, 2 tp_comm_s, 3 act_bytes) is
 * acceptable: finite, and the forward time > 0 (a layer that takes no time
 * made planning divide by zero: "state vector has a non-finite entry", MFU
 * of 1500 %; a denormal one does the same, so the floor is a nanosecond,
 * far below any kernel's launch time); the others >= 0 (measured embedding backward passes round to
 * 0 s in Sailor's profiles, tp 1 has no TP communication). */
static int bad_value(int j, double v)
{
    return !isfinite(v) || (j == 0 ? !(v >= AR_PROFILE_MIN_FWD_S) : !(v >= 0.0));
}
static const char *value_rule(int j) { return j == 0 ? "must be finite and >= 1e-9 (> 0)" : "must be finite and >= 0"; }

int ar_profile_add(arachne_profile *p, const char *gpu, int kind, int tp, int mbs,
                   double fwd_s, double bwd_s, double tp_comm_s, double act_bytes)
{
    const ar_gpu_spec *g;
    const char *name = gpu, *kn;
    const char *vn[4] = { "fwd_s", "bwd_s", "tp_comm_s", "act_bytes" };
    double vv[4];
    ar_profile_entry *e;
    int i, j;
    if (!p || !gpu) return AR_NULL_ARG("arachne_profile_add", p, gpu);
    kn = ar_layer_kind_name(kind);
    if (gpu[0] == '\0' || strlen(gpu) >= AR_NAME_MAX)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "profile entry (gpu '%.40s'): GPU name must be 1 to %d bytes",
                        gpu, AR_NAME_MAX - 1);
    if (!kn)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "profile entry (%s, kind %d): unknown layer kind (0..3)", gpu,
                        kind);
    if (!is_pow2(tp) || tp > AR_PROFILE_MAX_TP)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "profile entry (%s %s tp %d mbs %d): tp must be a power of two in 1..%d", gpu, kn, tp, mbs,
                        AR_PROFILE_MAX_TP);
    if (mbs < 1 || mbs > AR_PROFILE_MAX_MBS)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "profile entry (%s %s tp %d mbs %d): mbs must be in 1..%d", gpu,
                        kn, tp, mbs, AR_PROFILE_MAX_MBS);
    vv[0] = fwd_s; vv[1] = bwd_s; vv[2] = tp_comm_s; vv[3] = act_bytes;
    for (j = 0; j < 4; j++)
        if (bad_value(j, vv[j]))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "profile entry (%s %s tp %d mbs %d): %s = %g: %s", gpu, kn, tp,
                            mbs, vn[j], vv[j], value_rule(j));
    g = ar_gpu_catalog_find(gpu);
    if (g) name = g->name; /* store catalog types under their canonical name */
    i = search(p, name, kind, tp, mbs);
    if (i < 0) {
        i = -i - 1;
        if (p->n == p->cap) {
            int ncap = p->cap ? p->cap * 2 : 64;
            ar_profile_entry *ne = ar_realloc(p->e, (size_t)ncap * sizeof *ne);
            if (!ne) return ARACHNE_E_NO_MEMORY;
            p->e = ne;
            p->cap = ncap;
        }
        memmove(&p->e[i + 1], &p->e[i], (size_t)(p->n - i) * sizeof *p->e);
        p->n++;
    }
    e = &p->e[i];
    memset(e, 0, sizeof *e);
    memcpy(e->gpu, name, strlen(name) + 1);
    e->kind = kind;
    e->tp = tp;
    e->mbs = mbs;
    e->fwd_s = fwd_s;
    e->bwd_s = bwd_s;
    e->tp_comm_s = tp_comm_s;
    e->act_bytes = act_bytes;
    return ARACHNE_OK;
}

int arachne_profile_add(arachne_profile *p, const char *gpu, int kind, int tp, int mbs, double fwd_s, double bwd_s,
                        double tp_comm_s, double act_bytes)
{
    return ar_profile_add(p, gpu, kind, tp, mbs, fwd_s, bwd_s, tp_comm_s, act_bytes);
}

int arachne_profile_lookup(const arachne_profile *p, const char *gpu, int kind, int tp, int mbs, double *fwd_s,
                           double *bwd_s, double *tp_comm_s, double *act_bytes)
{
    const ar_profile_entry *e;
    if (!p || !gpu) return AR_NULL_ARG("arachne_profile_lookup", p, gpu);
    e = ar_profile_find(p, gpu, kind, tp, mbs);
    if (!e) {
        const char *kn = ar_layer_kind_name(kind);
        if (kn)
            return ar_error(ARACHNE_E_NOT_FOUND, "profile '%s': no entry for %s %s tp %d mbs %d", p->model, gpu, kn,
                            tp, mbs);
        return ar_error(ARACHNE_E_NOT_FOUND, "profile '%s': no entry for %s kind %d tp %d mbs %d", p->model, gpu,
                        kind, tp, mbs);
    }
    if (fwd_s) *fwd_s = e->fwd_s;
    if (bwd_s) *bwd_s = e->bwd_s;
    if (tp_comm_s) *tp_comm_s = e->tp_comm_s;
    if (act_bytes) *act_bytes = e->act_bytes;
    return ARACHNE_OK;
}

int arachne_profile_count(const arachne_profile *p, int *out)
{
    if (!p || !out) return AR_NULL_ARG("arachne_profile_count", p, out);
    *out = p->n;
    return ARACHNE_OK;
}

int arachne_profile_model_name(const arachne_profile *p, const char **out)
{
    if (!p || !out) return AR_NULL_ARG("arachne_profile_model_name", p, out);
    *out = p->model;
    return ARACHNE_OK;
}

int arachne_profile_seq_len(const arachne_profile *p, int *out)
{
    if (!p || !out) return AR_NULL_ARG("arachne_profile_seq_len", p, out);
    *out = p->seq_len;
    return ARACHNE_OK;
}

int arachne_profile_entry(const arachne_profile *p, int i, const char **gpu, int *kind, int *tp, int *mbs,
                          double *fwd_s, double *bwd_s, double *tp_comm_s, double *act_bytes)
{
    const ar_profile_entry *e;
    if (!p) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_entry: NULL profile");
    if (i < 0 || i >= p->n)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_entry: index %d outside 0..%d", i, p->n - 1);
    e = &p->e[i];
    if (gpu) *gpu = e->gpu;
    if (kind) *kind = e->kind;
    if (tp) *tp = e->tp;
    if (mbs) *mbs = e->mbs;
    if (fwd_s) *fwd_s = e->fwd_s;
    if (bwd_s) *bwd_s = e->bwd_s;
    if (tp_comm_s) *tp_comm_s = e->tp_comm_s;
    if (act_bytes) *act_bytes = e->act_bytes;
    return ARACHNE_OK;
}

/* ---- JSON writer ---------------------------------------------------------- */

static void put_num(ar_buf *b, const char *key, double v)
{
    ar_buf_printf(b, ", \"%s\": ", key);
    ar_json_put_number(b, v);
}

void ar_profile_write_json(const arachne_profile *p, ar_buf *b)
{
    int i;
    ar_buf_puts(b, "{\n  \"format\": \"arachne-profile\",\n  \"version\": 1,\n  \"model\": ");
    ar_json_put_string(b, p->model);
    ar_buf_printf(b, ",\n  \"seq_len\": %d,\n", p->seq_len);
    if (p->precision != AR_PREC_BF16) ar_buf_printf(b, "  \"precision\": \"%s\",\n", ar_precision_name(p->precision));
    if (p->act_recompute != AR_RECOMPUTE_SELECTIVE)
        ar_buf_printf(b, "  \"act_recompute\": \"%s\",\n", ar_recompute_name(p->act_recompute));
    ar_buf_puts(b, "  \"entries\": [");
    for (i = 0; i < p->n; i++) {
        const ar_profile_entry *e = &p->e[i];
        ar_buf_puts(b, i ? ",\n    {\"gpu\": " : "\n    {\"gpu\": ");
        ar_json_put_string(b, e->gpu);
        ar_buf_printf(b, ", \"kind\": \"%s\", \"tp\": %d, \"mbs\": %d", kind_names[e->kind], e->tp, e->mbs);
        put_num(b, "fwd_s", e->fwd_s);
        put_num(b, "bwd_s", e->bwd_s);
        put_num(b, "tp_comm_s", e->tp_comm_s);
        put_num(b, "act_bytes", e->act_bytes);
        ar_buf_puts(b, "}");
    }
    ar_buf_puts(b, p->n ? "\n  ]\n}\n" : "]\n}\n");
}

int arachne_profile_to_json(const arachne_profile *p, char *buf, size_t cap, size_t *needed)
{
    ar_buf b;
    int st;
    if (!p) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_to_json: NULL profile");
    if (!buf && cap) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_to_json: NULL buffer, cap %zu", cap);
    ar_buf_init(&b);
    ar_profile_write_json(p, &b);
    st = ar_buf_status(&b);
    if (st == ARACHNE_OK) {
        if (!buf) {
            if (needed) *needed = b.len + 1;
            st = ar_error(ARACHNE_E_BUFFER_TOO_SMALL, "arachne_profile_to_json: need %zu bytes", b.len + 1);
        } else {
            st = ar_copy_out(buf, cap, needed, b.data, b.len);
        }
    }
    ar_buf_free(&b);
    return st;
}

int arachne_profile_save(const arachne_profile *p, const char *path)
{
    ar_buf b;
    int st;
    if (!p || !path) return AR_NULL_ARG("arachne_profile_save", p, path);
    ar_buf_init(&b);
    ar_profile_write_json(p, &b);
    st = ar_buf_status(&b);
    if (st == ARACHNE_OK) st = ar_write_file_atomic(path, b.data, b.len);
    ar_buf_free(&b);
    return st;
}

/* ---- JSON reader ---------------------------------------------------------- */

/* One entry of a profile file as read, with where it came from (messages). */
typedef struct read_item {
    ar_profile_entry e;    /* canonical GPU name for catalog types */
    const char *gpu;       /* the name as written */
    size_t idx;            /* index in "entries" */
    const ar_json *v;      /* the entry object */
} read_item;

/* Key order, then file order. */
static int read_item_cmp(const void *a, const void *b)
{
    const read_item *x = a, *y = b;
    int c = key_cmp(x->e.gpu, x->e.kind, x->e.tp, x->e.mbs, &y->e);
    if (c) return c;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Parses and checks one entry into *it (the checks of ar_profile_add, with
 * the entry's position in messages).  Duplicates are found by from_tree. */
static int read_entry(const ar_json *v, size_t idx, read_item *it)
{
    static const char *const known[] = { "gpu", "kind", "tp", "mbs", "fwd_s", "bwd_s", "tp_comm_s", "act_bytes",
                                         NULL };
    const char *vn[4] = { "fwd_s", "bwd_s", "tp_comm_s", "act_bytes" };
    const char *gpu, *kname;
    long tp, mbs;
    double vals[4];
    int kind, st, j;
    const ar_gpu_spec *g;
    if (v->type != AR_JSON_OBJECT) return ar_json_error_at(v, "entries[%zu]: expected an object", idx);
    if ((st = ar_json_only_keys(v, known)) != ARACHNE_OK) return st;
    if ((st = ar_json_str(v, "gpu", 1, &gpu)) != ARACHNE_OK) return st;
    if (gpu[0] == '\0' || strlen(gpu) >= AR_NAME_MAX)
        return ar_json_error_at(ar_json_get(v, "gpu"), "entries[%zu]: gpu '%.40s': must be 1 to %d bytes", idx, gpu,
                                AR_NAME_MAX - 1);
    if ((st = ar_json_str(v, "kind", 1, &kname)) != ARACHNE_OK) return st;
    kind = kind_from_name(kname);
    if (kind < 0)
        return ar_json_error_at(ar_json_get(v, "kind"),
                                "entries[%zu] (%s): unknown kind '%.40s' (embed, dense, moe, head)", idx, gpu, kname);
    if ((st = ar_json_int(v, "tp", 1, 1, AR_PROFILE_MAX_TP, &tp)) != ARACHNE_OK) return st;
    if (!is_pow2(tp))
        return ar_json_error_at(ar_json_get(v, "tp"), "entries[%zu] (%s %s): tp %ld is not a power of two", idx, gpu,
                                kname, tp);
    if ((st = ar_json_int(v, "mbs", 1, 1, AR_PROFILE_MAX_MBS, &mbs)) != ARACHNE_OK) return st;
    for (j = 0; j < 4; j++) {
        vals[j] = 0.0;
        if ((st = ar_json_num(v, vn[j], j != 2, &vals[j])) != ARACHNE_OK) return st;
        if (bad_value(j, vals[j]))
            return ar_json_error_at(ar_json_get(v, vn[j]), "entries[%zu] (%s %s tp %ld mbs %ld): %s = %g: %s", idx, gpu,
                                    kname, tp, mbs, vn[j], vals[j], value_rule(j));
    }
    g = ar_gpu_catalog_find(gpu);
    memset(it, 0, sizeof *it);
    snprintf(it->e.gpu, sizeof it->e.gpu, "%s", g ? g->name : gpu);
    it->e.kind = kind;
    it->e.tp = (int)tp;
    it->e.mbs = (int)mbs;
    it->e.fwd_s = vals[0];
    it->e.bwd_s = vals[1];
    it->e.tp_comm_s = vals[2];
    it->e.act_bytes = vals[3];
    it->gpu = gpu;
    it->idx = idx;
    it->v = v;
    return ARACHNE_OK;
}

/* Reads every entry, then sorts once: inserting into the sorted array one
 * entry at a time cost O(n) moves per entry, so a 10 MB file listing
 * 100,000 entries in reverse key order took over a minute.  The first
 * failure in file order wins, as before: a malformed entry, or an entry
 * whose key an earlier entry already has ("duplicate entry"). */
static int read_entries(arachne_profile *p, const ar_json *entries)
{
    size_t n = entries->count, k = 0, j, at = 0;
    read_item *items;
    int st = ARACHNE_OK;
    if (n > (size_t)INT_MAX) return ar_json_error_at(entries, "entries: too many");
    items = ar_calloc(n, sizeof *items);
    if (!items) return ARACHNE_E_NO_MEMORY;
    for (k = 0; k < n; k++)
        if ((st = read_entry(entries->items[k], k, &items[k])) != ARACHNE_OK) break;
    if (k > 1) qsort(items, k, sizeof *items, read_item_cmp);
    /* A key's later occurrences follow its first one; report the earliest
     * in the file, which is where the old one-by-one reader stopped. */
    for (j = 1; j < k; j++)
        if (key_cmp(items[j].e.gpu, items[j].e.kind, items[j].e.tp, items[j].e.mbs, &items[j - 1].e) == 0 &&
            (at == 0 || items[j].idx < items[at].idx))
            at = j;
    if (at > 0) { /* before any malformed entry: all of items[] precede it */
        st = ar_json_error_at(items[at].v, "entries[%zu]: duplicate entry %s %s tp %d mbs %d", items[at].idx,
                              items[at].gpu, kind_names[items[at].e.kind], items[at].e.tp, items[at].e.mbs);
    } else if (st == ARACHNE_OK && k > 0) {
        ar_profile_entry *e = ar_calloc(k, sizeof *e);
        if (!e) {
            st = ARACHNE_E_NO_MEMORY;
        } else {
            for (j = 0; j < k; j++) e[j] = items[j].e;
            free(p->e);
            p->e = e;
            p->n = p->cap = (int)k;
        }
    }
    free(items);
    return st;
}

static int from_tree(arachne_profile **out, const ar_json *root)
{
    static const char *const known[] = { "format", "version", "model", "seq_len", "entries", "source",
                                         "precision", "act_recompute", NULL };
    const char *prec = NULL, *arc = NULL;
    const char *fmt, *model;
    const ar_json *entries;
    long version, seq;
    arachne_profile *p = NULL;
    int st;
    if (root->type != AR_JSON_OBJECT) return ar_json_error_at(root, "expected a profile object");
    if ((st = ar_json_only_keys(root, known)) != ARACHNE_OK) return st;
    if ((st = ar_json_str(root, "format", 1, &fmt)) != ARACHNE_OK) return st;
    if (strcmp(fmt, "arachne-profile") != 0)
        return ar_json_error_at(ar_json_get(root, "format"), "format '%.40s': expected \"arachne-profile\"", fmt);
    if ((st = ar_json_int(root, "version", 1, 1, 1000000, &version)) != ARACHNE_OK) return st;
    if (version > 1) {
        ar_json_error_at(ar_json_get(root, "version"), "profile format version %ld: this build reads version 1",
                         version);
        return ARACHNE_E_UNSUPPORTED;
    }
    if ((st = ar_json_str(root, "model", 1, &model)) != ARACHNE_OK) return st;
    if ((st = ar_json_int(root, "seq_len", 1, 1, AR_PROFILE_MAX_SEQ_LEN, &seq)) != ARACHNE_OK) return st;
    if ((st = ar_json_arr(root, "entries", 1, &entries)) != ARACHNE_OK) return st;
    {
        const char *src; /* optional free text (where the numbers came from); not kept */
        if ((st = ar_json_str(root, "source", 0, &src)) != ARACHNE_OK) return st;
    }
    if (model[0] == '\0' || strlen(model) >= sizeof p->model)
        return ar_json_error_at(ar_json_get(root, "model"), "model '%.80s': must be 1 to %d bytes", model,
                                (int)sizeof p->model - 1);
    /* optional (absent in files written before them): bf16, selective */
    if ((st = ar_json_str(root, "precision", 0, &prec)) != ARACHNE_OK) return st;
    if (prec && ar_precision_from_name(prec) < 0)
        return ar_json_error_at(ar_json_get(root, "precision"), "precision '%.40s': expected bf16, fp16 or fp32", prec);
    if ((st = ar_json_str(root, "act_recompute", 0, &arc)) != ARACHNE_OK) return st;
    if (arc && ar_recompute_from_name(arc) < 0)
        return ar_json_error_at(ar_json_get(root, "act_recompute"),
                                "act_recompute '%.40s': expected none, selective or full", arc);
    if ((st = ar_profile_new(&p, model, (int)seq)) != ARACHNE_OK) return st;
    if (prec) p->precision = ar_precision_from_name(prec);
    if (arc) p->act_recompute = ar_recompute_from_name(arc);
    if ((st = read_entries(p, entries)) != ARACHNE_OK) {
        arachne_profile_destroy(p);
        return st;
    }
    *out = p;
    return ARACHNE_OK;
}

int arachne_profile_from_json(arachne_profile **out, const char *json, size_t len)
{
    ar_json *root = NULL;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_from_json: NULL out");
    *out = NULL;
    if (!json) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_from_json: NULL text");
    st = ar_json_parse(&root, json, len, "<profile>");
    if (st != ARACHNE_OK) return st;
    st = from_tree(out, root);
    ar_json_free(root);
    return st;
}

int arachne_profile_load(arachne_profile **out, const char *path)
{
    ar_json *root = NULL;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_load: NULL out");
    *out = NULL;
    if (!path) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_load: NULL path");
    st = ar_json_parse_file(&root, path);
    if (st != ARACHNE_OK) return st;
    st = from_tree(out, root);
    ar_json_free(root);
    return st;
}
