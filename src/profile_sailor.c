/* profile_sailor.c -- importer for the measured layer profiles of the Sailor
 * project (profiles.json + llm_info.json + training_config_*.json).
 *
 *   profiles.json: {model: {gpu: {mbs: {tp: {layer: [fwd_s, bwd_s, update_s]}}}}}
 *   llm_info.json: {model: {tp: {layer: {params_floats, act_input_floats,
 *                   act_output_floats, act_mem_bytes, *_bytes...}}}}  (mbs 1)
 *
 * Layer 0 is the embedding, 1..L the (identical) transformer blocks, and
 * every layer after them (the final norm, and the output head where it is a
 * layer of its own) folds into ONE head entry: times and activation bytes
 * added.  Blocks are the layers from 1 on with the parameter count of layer
 * 1 (llm_info), so a separate final-norm layer is never taken for a block.
 * Blocks are stored as ONE dense entry holding the median over the L blocks
 * (fwd and bwd separately).  The measured times include the TP collectives,
 * so tp_comm_s is 0.
 *
 * What llm_info says about the run, and the import refuses a file that
 * does not say it:
 *  - the sequence length: layer 0's input is the token ids, the position
 *    ids and an s x s attention mask, i.e. s^2 + 2s elements
 *    (act_input_floats) and s^2 + 16s bytes (a bool mask, two int64 id
 *    vectors: act_input_bytes);
 *  - the data type: bytes per element of a block's output (4: FP32).
 * Activation bytes are kept as measured (FP32, eager attention, no
 * recomputation) and the profile records that (precision, act_recompute);
 * ar_profile_act_bytes_as() converts them.  Details: docs/profiles.md. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "profile.h"

#define PATH_MAX_LEN 4096

/* Strict decimal key "123" -> 123 (no sign, no leading zeros, <= 9 digits). */
static int key_int(const char *s, long *out)
{
    long v = 0;
    size_t i, n = strlen(s);
    if (n == 0 || n > 9 || (n > 1 && s[0] == '0')) return 0;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What the training_config_*.json in dir whose "model" is model (first
 * such file in name order) says: sequence_length and num_layers, 0 when
 * there is no such file or key. */
static int sailor_config(const char *dir, const char *model, long *seq, long *blocks, char *where, size_t cap)
{
    DIR *d;
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, ncap = 0, i;
    int st = ARACHNE_OK;
    *seq = *blocks = 0;
    where[0] = '\0';
    d = opendir(dir);
    if (!d) return ar_error(ARACHNE_E_IO, "sailor profiles '%s': cannot list the directory", dir);
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 21 || strncmp(de->d_name, "training_config_", 16) != 0 ||
            strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        if (n == ncap) {
            size_t nc = ncap ? ncap * 2 : 8;
            char **nn = ar_realloc(names, nc * sizeof *nn);
            if (!nn) { st = ARACHNE_E_NO_MEMORY; break; }
            names = nn;
            ncap = nc;
        }
        if (!(names[n] = ar_strdup(de->d_name))) { st = ARACHNE_E_NO_MEMORY; break; }
        n++;
    }
    closedir(d);
    if (st == ARACHNE_OK && n > 1) qsort(names, n, sizeof *names, cmp_str);
    for (i = 0; st == ARACHNE_OK && i < n; i++) {
        char path[PATH_MAX_LEN];
        ar_json *root = NULL;
        const char *name = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if ((st = ar_json_parse_file(&root, path)) != ARACHNE_OK) break;
        if (root->type == AR_JSON_OBJECT && ar_json_str(root, "model", 0, &name) == ARACHNE_OK && name &&
            strcmp(name, model) == 0) {
            st = ar_json_int(root, "sequence_length", 0, 1, 100000000, seq);
            if (st == ARACHNE_OK) st = ar_json_int(root, "num_layers", 0, 1, 100000000, blocks);
            snprintf(where, cap, "%s", path);
            ar_json_free(root);
            break;
        }
        ar_json_free(root);
    }
    for (i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

/* A number >= 0 of a llm_info layer object, or -1 when absent or not one. */
static double info_num(const ar_json *layer, const char *key)
{
    const ar_json *v = layer && layer->type == AR_JSON_OBJECT ? ar_json_get(layer, key) : NULL;
    return (v && v->type == AR_JSON_NUMBER && v->number >= 0.0 && v->number < 1e18) ? v->number : -1.0;
}

/* s with s^2 + k*s == x (x, s integers), or 0. */
static long quad_root(double x, double k)
{
    double s;
    long r;
    if (!(x > 0)) return 0;
    s = floor(sqrt(x + k * k / 4.0) - k / 2.0 + 0.5);
    r = (long)s;
    return (r > 0 && s * s + k * s == x) ? r : 0;
}

/* Facts of the run from llm_info[model] (the table of its smallest TP key):
 * layer count, blocks, sequence length, element size. */
typedef struct run_facts { long layers, blocks, seq; int precision; } run_facts;

static int run_facts_read(const ar_json *lm, const char *lpath, run_facts *rf)
{
    const ar_json *tab = NULL, *l0, *l1;
    long t, best = 0, k;
    size_t i;
    double fl, by, p1, eb, ef;
    memset(rf, 0, sizeof *rf);
    for (i = 0; i < lm->count; i++)
        if (key_int(lm->keys[i], &t) && t >= 1 && (best == 0 || t < best)) { best = t; tab = lm->items[i]; }
    if (!tab || tab->type != AR_JSON_OBJECT || tab->count < 3)
        return ar_json_error_at(tab ? tab : lm, "%s: expected a TP key with an object of at least 3 layers", lpath);
    for (i = 0; i < tab->count; i++)
        if (!key_int(tab->keys[i], &k) || k >= (long)tab->count)
            return ar_json_error_at(tab->items[i], "%s[\"%ld\"]: layer key '%.20s' is not one of 0..%zu", lpath, best,
                                    tab->keys[i], tab->count - 1);
    rf->layers = (long)tab->count;
    l0 = ar_json_get(tab, "0");
    l1 = ar_json_get(tab, "1");
    if (!l0 || !l1) return ar_json_error_at(tab, "%s[\"%ld\"]: layers \"0\" and \"1\" expected", lpath, best);
    /* sequence length: the embedding's input is ids + positions + an s x s mask */
    fl = info_num(l0, "act_input_floats");
    by = info_num(l0, "act_input_bytes");
    if (fl < 0 && by < 0)
        return ar_json_error_at(l0, "%s[\"%ld\"][\"0\"]: no act_input_floats or act_input_bytes: the sequence length "
                                "cannot be derived, and the import needs it", lpath, best);
    rf->seq = fl > 0 ? quad_root(fl, 2.0) : quad_root(by, 16.0);
    if (rf->seq == 0 || (fl > 0 && by > 0 && quad_root(by, 16.0) != rf->seq))
        return ar_json_error_at(l0, "%s[\"%ld\"][\"0\"]: cannot derive the sequence length: act_input_floats %.0f "
                                "and act_input_bytes %.0f are not s^2 + 2s and s^2 + 16s of one s (token ids, "
                                "position ids and an s x s mask)", lpath, best, fl, by);
    /* element size of the run: a block's output bytes per element */
    eb = info_num(l1, "act_output_bytes");
    ef = info_num(l1, "act_output_floats");
    if (!(ef > 0) || !(eb > 0) || (eb != 4.0 * ef && eb != 2.0 * ef))
        return ar_json_error_at(l1, "%s[\"%ld\"][\"1\"]: cannot tell the data type: act_output_bytes and "
                                "act_output_floats (%.0f, %.0f; -1 = absent) are not 2 or 4 bytes per element", lpath,
                                best, eb, ef);
    rf->precision = eb == 4.0 * ef ? AR_PREC_FP32 : AR_PREC_FP16;
    /* blocks: from layer 1 on, the layers with layer 1's parameter count */
    p1 = info_num(l1, "params_floats");
    rf->blocks = 1;
    if (p1 > 0) {
        char key[24];
        while (rf->blocks < rf->layers - 2) {
            snprintf(key, sizeof key, "%ld", rf->blocks + 1);
            if (info_num(ar_json_get(tab, key), "params_floats") != p1) break;
            rf->blocks++;
        }
    } else {
        rf->blocks = rf->layers - 2;
    }
    return ARACHNE_OK;
}

/* Reads the [fwd_s, bwd_s, ...] array of one layer. */
static int layer_times(const ar_json *v, const char *path, const char *layer, double *fwd, double *bwd)
{
    size_t j;
    if (v->type != AR_JSON_ARRAY || v->count < 2)
        return ar_json_error_at(v, "%s[\"%s\"]: expected [fwd_s, bwd_s, update_s]", path, layer);
    for (j = 0; j < 2; j++) {
        const ar_json *x = v->items[j];
        if (x->type != AR_JSON_NUMBER || !(x->number >= 0.0) || x->number > 1e9)
            return ar_json_error_at(x, "%s[\"%s\"][%zu]: expected seconds >= 0", path, layer, j);
    }
    *fwd = v->items[0]->number;
    *bwd = v->items[1]->number;
    return ARACHNE_OK;
}

/* Layer lookup by number in O(1): slot[k] is the member named "k" of obj
 * (0 <= k < n), NULL when absent.  (ar_json_get per layer made a cell of
 * L layers cost O(L^2) string compares: a 3 MB file took 20 s.) */
static const ar_json **index_layers(const ar_json *obj, long n)
{
    const ar_json **slot = ar_calloc((size_t)n, sizeof *slot);
    size_t i;
    long k;
    if (!slot) return NULL;
    if (obj->type != AR_JSON_OBJECT) return slot;
    for (i = 0; i < obj->count; i++)
        if (key_int(obj->keys[i], &k) && k < n) slot[k] = obj->items[i];
    return slot;
}

/* The llm_info table of activation sizes used for one TP degree, found and
 * indexed once per import (TP degrees are powers of two up to
 * AR_PROFILE_MAX_TP, so there are at most 11): `best` is llm_info[model][t]
 * for the largest t <= tp, its layers sorted by number for binary search. */
#define ACT_TABLES 11
typedef struct layer_ix { long k; const ar_json *v; } layer_ix;
typedef struct act_table {
    int ready;
    const ar_json *best;
    long best_tp;
    layer_ix *ix;
    size_t n;
} act_table;

static int cmp_layer_ix(const void *a, const void *b)
{
    long x = ((const layer_ix *)a)->k, y = ((const layer_ix *)b)->k;
    return (x > y) - (x < y);
}

static int act_table_build(act_table *at, const ar_json *lm, long tp)
{
    size_t i;
    long t;
    at->ready = 1;
    /* Its own tp key; else the largest smaller tp, scaled by best_tp / tp. */
    for (i = 0; i < lm->count; i++) {
        if (!key_int(lm->keys[i], &t) || t > tp || t <= at->best_tp) continue;
        at->best = lm->items[i];
        at->best_tp = t;
    }
    if (!at->best || at->best->type != AR_JSON_OBJECT) return ARACHNE_OK;
    if (!(at->ix = ar_calloc(at->best->count, sizeof *at->ix))) return ARACHNE_E_NO_MEMORY;
    for (i = 0; i < at->best->count; i++)
        if (key_int(at->best->keys[i], &t)) {
            at->ix[at->n].k = t;
            at->ix[at->n++].v = at->best->items[i];
        }
    qsort(at->ix, at->n, sizeof *at->ix, cmp_layer_ix);
    return ARACHNE_OK;
}

/* act_mem_bytes of one layer at tp from llm_info (mbs 1). */
static int layer_act(act_table *tabs, const ar_json *lm, const char *lpath, long tp, long layer, double *out)
{
    const ar_json *lay = NULL, *num;
    act_table *at;
    char key[24];
    int lg = 0, st;
    size_t lo, hi;
    while ((1L << lg) < tp && lg < ACT_TABLES - 1) lg++;
    at = &tabs[lg];
    if (!at->ready && (st = act_table_build(at, lm, tp)) != ARACHNE_OK) return st;
    if (!at->best || at->best->type != AR_JSON_OBJECT)
        return ar_json_error_at(at->best ? at->best : lm, "%s: no activation sizes for tp %ld", lpath, tp);
    snprintf(key, sizeof key, "%ld", layer);
    for (lo = 0, hi = at->n; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        if (at->ix[mid].k < layer) lo = mid + 1;
        else hi = mid;
    }
    if (lo < at->n && at->ix[lo].k == layer) lay = at->ix[lo].v;
    if (!lay || lay->type != AR_JSON_OBJECT)
        return ar_json_error_at(at->best, "%s[\"%ld\"]: missing layer \"%s\"", lpath, at->best_tp, key);
    num = ar_json_get(lay, "act_mem_bytes");
    if (!num || num->type != AR_JSON_NUMBER || !(num->number >= 0.0) || num->number > 1e18)
        return ar_json_error_at(num ? num : lay, "%s[\"%ld\"][\"%s\"]: act_mem_bytes: expected bytes >= 0", lpath,
                                at->best_tp, key);
    *out = num->number * (double)at->best_tp / (double)tp;
    return ARACHNE_OK;
}

/* One (gpu, mbs, tp) cell: adds the embed, dense and head entries. */
static int import_cell(arachne_profile *p, const ar_json *layers, const ar_json *lm, act_table *tabs,
                       const run_facts *rf, const char *gpu, long mbs, long tp, const char *path, const char *lpath)
{
    double *f = NULL, *b = NULL, *a = NULL, ef = 0, eb = 0, hf = 0, hb = 0, ea = 0, ha = 0;
    long nl = (long)layers->count, L = rf->blocks, i;
    const ar_json **slot = NULL;
    char key[24];
    int st = ARACHNE_OK;
    if (layers->type != AR_JSON_OBJECT || nl < 3)
        return ar_json_error_at(layers, "%s: expected an object of at least 3 layers", path);
    if (nl != rf->layers)
        return ar_json_error_at(layers, "%s: %ld layers, but llm_info.json describes %ld", path, nl, rf->layers);
    f = ar_malloc((size_t)L * sizeof *f);
    b = ar_malloc((size_t)L * sizeof *b);
    a = ar_malloc((size_t)L * sizeof *a);
    slot = index_layers(layers, nl);
    if (!f || !b || !a || !slot) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (i = 0; i < nl && st == ARACHNE_OK; i++) {
        const ar_json *v;
        double fw = 0, bw = 0;
        snprintf(key, sizeof key, "%ld", i);
        v = slot[i];
        if (!v) { st = ar_json_error_at(layers, "%s: missing layer \"%s\" (layers 0..%ld expected)", path, key, nl - 1); break; }
        if ((st = layer_times(v, path, key, &fw, &bw)) != ARACHNE_OK) break;
        if (i == 0) {
            ef = fw; eb = bw; st = layer_act(tabs, lm, lpath, tp, i, &ea);
        } else if (i > L) { /* final norm and head: one head entry */
            double ha1 = 0;
            hf += fw; hb += bw; st = layer_act(tabs, lm, lpath, tp, i, &ha1); ha += ha1;
        } else {
            f[i - 1] = fw; b[i - 1] = bw; st = layer_act(tabs, lm, lpath, tp, i, &a[i - 1]);
        }
    }
    if (st != ARACHNE_OK) goto done;
    ea *= (double)mbs;
    ha *= (double)mbs;
    st = ar_profile_add(p, gpu, AR_LAYER_EMBED, (int)tp, (int)mbs, ef, eb, 0.0, ea);
    if (st == ARACHNE_OK)
        st = ar_profile_add(p, gpu, AR_LAYER_DENSE, (int)tp, (int)mbs, median(f, (int)L), median(b, (int)L), 0.0,
                            median(a, (int)L) * (double)mbs);
    if (st == ARACHNE_OK) st = ar_profile_add(p, gpu, AR_LAYER_HEAD, (int)tp, (int)mbs, hf, hb, 0.0, ha);
    if (st == ARACHNE_E_INVALID_ARGUMENT) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", arachne_last_error());
        st = ar_json_error_at(layers, "%s: %s", path, msg);
    }
done:
    free(slot);
    free(f);
    free(b);
    free(a);
    return st;
}

static int import_cells(arachne_profile *p, const ar_json *model, const ar_json *lm, const char *name,
                        act_table *tabs, const run_facts *rf)
{
    char path[512], lpath[256];
    size_t gi, mi, ti;
    int st;
    snprintf(lpath, sizeof lpath, "[\"%.100s\"]", name);
    if (model->type != AR_JSON_OBJECT) return ar_json_error_at(model, "[\"%.100s\"]: expected an object", name);
    if (lm->type != AR_JSON_OBJECT) return ar_json_error_at(lm, "%s: expected an object", lpath);
    for (gi = 0; gi < model->count; gi++) {
        const char *gpu = model->keys[gi];
        const ar_json *gv = model->items[gi];
        if (gpu[0] == '\0' || strlen(gpu) >= AR_NAME_MAX)
            return ar_json_error_at(gv, "[\"%.100s\"]: GPU name '%.40s' must be 1 to %d bytes", name, gpu,
                                    AR_NAME_MAX - 1);
        if (gv->type != AR_JSON_OBJECT)
            return ar_json_error_at(gv, "[\"%.100s\"][\"%s\"]: expected an object of micro-batch sizes", name, gpu);
        for (mi = 0; mi < gv->count; mi++) {
            const ar_json *mv = gv->items[mi];
            long mbs;
            if (!key_int(gv->keys[mi], &mbs) || mbs < 1 || mbs > AR_PROFILE_MAX_MBS)
                return ar_json_error_at(mv, "[\"%.100s\"][\"%s\"][\"%.20s\"]: micro-batch key is not an integer in 1..%d",
                                        name, gpu, gv->keys[mi], AR_PROFILE_MAX_MBS);
            if (mv->type != AR_JSON_OBJECT)
                return ar_json_error_at(mv, "[\"%.100s\"][\"%s\"][\"%ld\"]: expected an object of TP degrees", name,
                                        gpu, mbs);
            for (ti = 0; ti < mv->count; ti++) {
                long tp;
                if (!key_int(mv->keys[ti], &tp) || tp < 1)
                    return ar_json_error_at(mv->items[ti], "[\"%.100s\"][\"%s\"][\"%ld\"][\"%.20s\"]: TP key is not a positive integer",
                                            name, gpu, mbs, mv->keys[ti]);
                if ((tp & (tp - 1)) != 0 || tp > AR_PROFILE_MAX_TP) continue; /* e.g. tp 7: not a TP degree we plan */
                snprintf(path, sizeof path, "[\"%.100s\"][\"%s\"][\"%ld\"][\"%ld\"]", name, gpu, mbs, tp);
                st = import_cell(p, mv->items[ti], lm, tabs, rf, gpu, mbs, tp, path, lpath);
                if (st != ARACHNE_OK) return st;
            }
        }
    }
    return ARACHNE_OK;
}

static int import_model(arachne_profile *p, const ar_json *model, const ar_json *lm, const char *name,
                        const run_facts *rf)
{
    act_table tabs[ACT_TABLES];
    int st, k;
    memset(tabs, 0, sizeof tabs);
    st = import_cells(p, model, lm, name, tabs, rf);
    for (k = 0; k < ACT_TABLES; k++) free(tabs[k].ix);
    return st;
}

int arachne_profile_import_sailor(arachne_profile **out, const char *dir, const char *model_name)
{
    char ppath[PATH_MAX_LEN], lpath[PATH_MAX_LEN];
    ar_json *prof = NULL, *info = NULL;
    const ar_json *model, *lm;
    arachne_profile *p = NULL;
    run_facts rf;
    char cfg[PATH_MAX_LEN], where[160];
    long cseq = 0, cblocks = 0;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_import_sailor: NULL out");
    *out = NULL;
    if (!dir || !model_name)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_profile_import_sailor: NULL directory or model name");
    if (strlen(dir) > PATH_MAX_LEN - 64)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "sailor profiles: directory name too long");
    /* "" would read /profiles.json: a file the caller never named */
    if (!dir[0]) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "sailor profiles: the directory name is empty");
    snprintf(ppath, sizeof ppath, "%s/profiles.json", dir);
    snprintf(lpath, sizeof lpath, "%s/llm_info.json", dir);
    if ((st = ar_json_parse_file(&prof, ppath)) != ARACHNE_OK) return st;
    if (prof->type != AR_JSON_OBJECT) {
        st = ar_json_error_at(prof, "expected an object of models");
        goto done;
    }
    model = ar_json_get(prof, model_name);
    if (!model) {
        ar_buf b;
        size_t i;
        ar_buf_init(&b);
        for (i = 0; i < prof->count; i++) ar_buf_printf(&b, "%s%s", i ? ", " : "", prof->keys[i]);
        st = ar_error(ARACHNE_E_NOT_FOUND, "%s: no model '%s' (it has: %s)", ppath, model_name,
                      b.data ? b.data : "none");
        ar_buf_free(&b);
        goto done;
    }
    if ((st = ar_json_parse_file(&info, lpath)) != ARACHNE_OK) goto done;
    lm = info->type == AR_JSON_OBJECT ? ar_json_get(info, model_name) : NULL;
    if (!lm) {
        st = ar_error(ARACHNE_E_NOT_FOUND, "%s: no activation sizes for model '%s'", lpath, model_name);
        goto done;
    }
    if (lm->type != AR_JSON_OBJECT) {
        st = ar_json_error_at(lm, "[\"%.100s\"]: expected an object of TP degrees", model_name);
        goto done;
    }
    snprintf(where, sizeof where, "[\"%.100s\"]", model_name);
    if ((st = run_facts_read(lm, where, &rf)) != ARACHNE_OK) goto done;
    /* a training config, where one names the model, must agree */
    if ((st = sailor_config(dir, model_name, &cseq, &cblocks, cfg, sizeof cfg)) != ARACHNE_OK) goto done;
    if ((cseq && cseq != rf.seq) || (cblocks && cblocks != rf.blocks)) {
        st = ar_error(ARACHNE_E_PARSE, "%s: sequence_length %ld, num_layers %ld, but %s gives sequence length %ld "
                      "and %ld blocks", cfg, cseq, cblocks, lpath, rf.seq, rf.blocks);
        goto done;
    }
    if (rf.seq > 100000000L) {
        st = ar_error(ARACHNE_E_PARSE, "%s: sequence length %ld is too large", lpath, rf.seq);
        goto done;
    }
    if ((st = ar_profile_new(&p, model_name, (int)rf.seq)) != ARACHNE_OK) goto done;
    p->precision = rf.precision;
    p->act_recompute = AR_RECOMPUTE_NONE; /* measured: eager attention, nothing recomputed */
    st = import_model(p, model, lm, model_name, &rf);
done:
    ar_json_free(prof);
    ar_json_free(info);
    if (st != ARACHNE_OK) {
        arachne_profile_destroy(p);
        return st;
    }
    *out = p;
    return ARACHNE_OK;
}
