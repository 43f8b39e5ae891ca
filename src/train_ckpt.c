/* train_ckpt.c -- training checkpoints: everything an interrupted run needs
 * to continue bit-identically (weights, Adam moments and step, options,
 * trainer RNG, update counter, statistics, replay buffers, best plans),
 * little-endian, closed by a CRC-32.  Layout: docs/training.md
 * ("Training checkpoint"). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "crc32.h"
#include "train.h"

/* ---- writer ---------------------------------------------------------- */

static void put_u32(ar_buf *b, uint32_t v)
{
    unsigned char x[4];
    int i;
    for (i = 0; i < 4; i++) x[i] = (unsigned char)(v >> (8 * i));
    ar_buf_put(b, (const char *)x, 4);
}

static void put_u64(ar_buf *b, uint64_t v)
{
    unsigned char x[8];
    int i;
    for (i = 0; i < 8; i++) x[i] = (unsigned char)(v >> (8 * i));
    ar_buf_put(b, (const char *)x, 8);
}

static void put_f64(ar_buf *b, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_u64(b, v);
}

static void put_f32(ar_buf *b, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(b, v);
}

static void put_plan(ar_buf *b, const ar_sil_plan *p)
{
    int i;
    size_t k;
    put_f64(b, p->iter_per_s);
    put_u32(b, (uint32_t)p->depth);
    put_u32(b, (uint32_t)p->ndec);
    for (i = 0; i < p->ndec; i++) {
        put_u32(b, (uint32_t)p->dec[i].head);
        put_u32(b, (uint32_t)p->dec[i].K);
        put_u32(b, (uint32_t)p->dec[i].choice);
        put_u32(b, (uint32_t)p->dec[i].step);
    }
    put_u64(b, (uint64_t)p->in_len);
    for (k = 0; k < p->in_len; k++) put_f32(b, p->in[k]);
    put_u64(b, (uint64_t)p->masks_len);
    ar_buf_put(b, (const char *)p->masks, p->masks_len);
}

/* The checks the loader makes on every float, made before saving as well:
 * a checkpoint the loader would refuse is never written (issue 27: an
 * update left weights non-finite and the trainer saved a file its own
 * loader rejected).  ARACHNE_OK or ARACHNE_E_INVALID_ARGUMENT naming the
 * value; `where` is the file name or "save". */
static int stats_ok(double norm_reward, double entropy, double grad_norm)
{
    return isfinite(norm_reward) && isfinite(entropy) && grad_norm >= 0 && isfinite(grad_norm);
}

static int comp_stats_ok(double mean, double std, double evals)
{
    return isfinite(mean) && std >= 0 && isfinite(std) && evals >= 0 && isfinite(evals);
}

static int plan_floats_ok(const ar_sil_plan *p)
{
    size_t k;
    if (!(p->iter_per_s >= 0) || !isfinite(p->iter_per_s)) return 0;
    for (k = 0; k < p->in_len; k++)
        if (!isfinite(p->in[k])) return 0;
    return 1;
}

static int encode_check(const arachne_trainer *t)
{
    const ar_nn *nn = t->policy->nn;
    size_t P = ar_nn_param_count(nn), p;
    const double *w = ar_nn_params_const(nn), *m = ar_nn_adam_moment_const(nn, 0),
                 *v = ar_nn_adam_moment_const(nn, 1);
    int i, d, k;
    for (p = 0; p < P; p++)
        if (!ar_nn_state_ok(w[p], m[p], v[p]))
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "checkpoint save: parameter %zu = %g (Adam moments %g, %g) is not finite or outside "
                            "+-%g; not saved",
                            p, w[p], m[p], v[p], AR_NN_STATE_LIMIT);
    if (!stats_ok(t->last_norm_reward, t->last_entropy, t->last_grad_norm))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        "checkpoint save: last update's statistics are not finite (reward %g, entropy %g, gradient "
                        "norm %g); not saved",
                        t->last_norm_reward, t->last_entropy, t->last_grad_norm);
    for (i = 0; i < t->ncomp; i++) {
        const ar_train_comp *c = &t->comp[i];
        int ok = comp_stats_ok(c->mean_return, c->std_return, c->evaluations) && plan_floats_ok(&c->best) &&
                 plan_floats_ok(&c->roll);
        for (d = 0; d < AR_SEARCH_MAX_DEPTH && ok; d++)
            for (k = 0; k < c->nbuf[d] && ok; k++) ok = plan_floats_ok(&c->buf[d][k]);
        if (!ok)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "checkpoint save: composition '%s' holds a non-finite statistic or kept plan; not saved",
                            c->name);
    }
    return ARACHNE_OK;
}

int ar_train_ckpt_encode(const arachne_trainer *t, ar_buf *b)
{
    const ar_nn *nn = t->policy->nn;
    int cfg[AR_NN_CONFIG_FIELDS], i, d, k;
    size_t P = ar_nn_param_count(nn), p;
    const double *w = ar_nn_params_const(nn), *m = ar_nn_adam_moment_const(nn, 0),
                 *v = ar_nn_adam_moment_const(nn, 1);
    int st = encode_check(t);
    if (st) return st;
    ar_buf_put(b, AR_CKPT_MAGIC, 8);
    put_u32(b, AR_CKPT_VERSION);
    put_u32(b, 0);
    ar_nn_config_to_array(ar_nn_get_config(nn), cfg);
    for (i = 0; i < AR_NN_CONFIG_FIELDS; i++) put_u32(b, (uint32_t)cfg[i]);
    put_u64(b, (uint64_t)P);
    for (p = 0; p < P; p++) put_f64(b, w[p]);
    for (p = 0; p < P; p++) put_f64(b, m[p]);
    for (p = 0; p < P; p++) put_f64(b, v[p]);
    put_u64(b, (uint64_t)ar_nn_adam_steps(nn));
    put_u64(b, t->seed);
    for (i = 0; i < 4; i++) put_u64(b, t->rng.s[i]);
    put_u64(b, (uint64_t)t->updates_done);
    put_u32(b, AR_TRAIN_NOPT);
    for (i = 0; i < AR_TRAIN_NOPT; i++) put_f64(b, t->opt[i]);
    put_f64(b, t->last_norm_reward);
    put_f64(b, t->last_entropy);
    put_f64(b, t->last_grad_norm);
    put_u32(b, (uint32_t)t->ncomp);
    for (i = 0; i < t->ncomp; i++) {
        const ar_train_comp *c = &t->comp[i];
        size_t nl = strlen(c->name);
        put_u32(b, (uint32_t)nl);
        ar_buf_put(b, c->name, nl);
        put_u32(b, (uint32_t)c->cm->cluster->total_gpus);
        put_u32(b, (uint32_t)c->cm->cluster->ntypes);
        put_f64(b, c->mean_return);
        put_f64(b, c->std_return);
        put_f64(b, c->evaluations);
        put_u32(b, (uint32_t)c->have_group);
        put_plan(b, &c->best);
        for (d = 0; d < AR_SEARCH_MAX_DEPTH; d++) {
            put_u32(b, (uint32_t)c->nbuf[d]);
            for (k = 0; k < c->nbuf[d]; k++) put_plan(b, &c->buf[d][k]);
        }
    }
    /* since the rollout targets (31 options): each composition's target */
    for (i = 0; i < t->ncomp; i++) put_plan(b, &t->comp[i].roll);
    if (ar_buf_status(b)) return ARACHNE_E_NO_MEMORY;
    put_u32(b, ar_crc32(b->data, b->len));
    return ar_buf_status(b);
}

int arachne_trainer_save_checkpoint(const arachne_trainer *t, const char *path)
{
    ar_buf b;
    int st;
    if (!t || !path) return AR_NULL_ARG("arachne_trainer_save_checkpoint", t, path);
    ar_buf_init(&b);
    st = ar_train_ckpt_encode(t, &b);
    if (!st) st = ar_check_saved_size("checkpoint", path, b.len);
    if (!st) st = ar_write_file_atomic(path, b.data, b.len);
    ar_buf_free(&b);
    return st;
}

/* ---- reader ---------------------------------------------------------- */

typedef struct rd {
    const unsigned char *p;
    size_t len, pos;
    int bad;
} rd;

static int need(rd *r, size_t n)
{
    if (r->bad || n > r->len - r->pos) { r->bad = 1; return 0; }
    return 1;
}

static uint32_t get_u32(rd *r)
{
    uint32_t v = 0;
    int i;
    if (!need(r, 4)) return 0;
    for (i = 0; i < 4; i++) v |= (uint32_t)r->p[r->pos + i] << (8 * i);
    r->pos += 4;
    return v;
}

static uint64_t get_u64(rd *r)
{
    uint64_t v = 0;
    int i;
    if (!need(r, 8)) return 0;
    for (i = 0; i < 8; i++) v |= (uint64_t)r->p[r->pos + i] << (8 * i);
    r->pos += 8;
    return v;
}

static double get_f64(rd *r)
{
    uint64_t v = get_u64(r);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static float get_f32(rd *r)
{
    uint32_t v = get_u32(r);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

/* Reads one kept plan; 0 on success, else a CORRUPT status with message. */
static int get_plan(rd *r, ar_sil_plan *p, const char *path)
{
    uint32_t ndec;
    uint64_t in_len, masks_len;
    size_t want_in = 0, want_masks = 0, k;
    int i;
    memset(p, 0, sizeof *p);
    p->iter_per_s = get_f64(r);
    p->depth = (int)get_u32(r);
    ndec = get_u32(r);
    if (r->bad) goto trunc;
    if (ndec > 1000000u || (size_t)ndec * 16 > r->len - r->pos)
        return ar_error(ARACHNE_E_CORRUPT, "%s: offset %zu: %u decisions in a kept plan", path, r->pos, ndec);
    /* at most 1e9 iterations per second: a kept 1e308 made the trainer's
     * normalised statistics infinite */
    if (!(p->iter_per_s >= 0) || !(p->iter_per_s <= 1e9) ||
        (ndec > 0 && (p->iter_per_s <= 0 || p->depth < 1 || p->depth > AR_SEARCH_MAX_DEPTH)))
        return ar_error(ARACHNE_E_CORRUPT, "%s: offset %zu: kept plan with throughput %g and depth %d", path, r->pos,
                        p->iter_per_s, p->depth);
    p->ndec = (int)ndec;
    p->dec = ar_calloc(ndec ? ndec : 1, sizeof *p->dec);
    if (!p->dec) return ARACHNE_E_NO_MEMORY;
    for (i = 0; i < p->ndec; i++) {
        ar_sil_dec *d = &p->dec[i];
        d->head = (int)get_u32(r);
        d->K = (int)get_u32(r);
        d->choice = (int)get_u32(r);
        d->step = (int)get_u32(r);
        if (r->bad) goto trunc;
        if (d->head < 0 || d->head > 2 || d->K < 1 || d->K > AR_SEARCH_MAX_DEPTH + 1 || d->choice < 0 || d->choice >= d->K ||
            d->step < 0 || d->step > AR_MAX_TEMPLATES)
            return ar_error(ARACHNE_E_CORRUPT, "%s: offset %zu: bad decision record %d", path, r->pos, i);
        d->in_off = want_in;
        d->mask_off = want_masks;
        want_in += AR_STATE_DIM + AR_STATE_COMP + (d->head == AR_HEAD_TP ? 0 : (size_t)d->K * AR_STATE_CAND);
        want_masks += (size_t)d->K;
    }
    in_len = get_u64(r);
    if (r->bad) goto trunc;
    if (in_len != want_in || in_len > (r->len - r->pos) / 4)
        return ar_error(ARACHNE_E_CORRUPT, "%s: offset %zu: %llu decision inputs where the records need %zu", path,
                        r->pos, (unsigned long long)in_len, want_in);
    p->in_len = (size_t)in_len;
    p->in = ar_malloc((p->in_len ? p->in_len : 1) * sizeof *p->in);
    if (!p->in) return ARACHNE_E_NO_MEMORY;
    for (k = 0; k < p->in_len; k++) {
        p->in[k] = get_f32(r);
        if (!isfinite(p->in[k]))
            return ar_error(ARACHNE_E_CORRUPT, "%s: offset %zu: a decision input is not finite", path, r->pos);
    }
    masks_len = get_u64(r);
    if (r->bad) goto trunc;
    if (masks_len != want_masks || !need(r, (size_t)masks_len))
        return ar_error(ARACHNE_E_CORRUPT, "%s: offset %zu: %llu mask bytes where the records need %zu", path, r->pos,
                        (unsigned long long)masks_len, want_masks);
    p->masks_len = (size_t)masks_len;
    p->masks = ar_malloc(p->masks_len ? p->masks_len : 1);
    if (!p->masks) return ARACHNE_E_NO_MEMORY;
    memcpy(p->masks, r->p + r->pos, p->masks_len);
    r->pos += p->masks_len;
    for (i = 0; i < p->ndec; i++)
        if (!p->masks[p->dec[i].mask_off + (size_t)p->dec[i].choice])
            return ar_error(ARACHNE_E_CORRUPT, "%s: kept plan decision %d chose a masked entry", path, i);
    return ARACHNE_OK;
trunc:
    return ar_error(ARACHNE_E_CORRUPT, "%s: truncated in a kept plan", path);
}

typedef struct ckpt_comp {
    double mean_return, std_return, evaluations;
    int have_group;
    ar_sil_plan best, roll;
    ar_sil_plan *buf[AR_SEARCH_MAX_DEPTH];
    int nbuf[AR_SEARCH_MAX_DEPTH];
} ckpt_comp;

static void ckpt_comp_free(ckpt_comp *c)
{
    int d, k;
    ar_sil_plan_free(&c->best);
    ar_sil_plan_free(&c->roll);
    for (d = 0; d < AR_SEARCH_MAX_DEPTH; d++) {
        if (c->buf[d])
            for (k = 0; k < AR_TRAIN_MAX_SIL; k++) ar_sil_plan_free(&c->buf[d][k]);
        free(c->buf[d]);
        c->buf[d] = NULL;
    }
}

int arachne_trainer_load_checkpoint(arachne_trainer *t, const char *path)
{
    char *data = NULL;
    size_t len = 0, P, p;
    rd r;
    int st, i, d, k, cfg[AR_NN_CONFIG_FIELDS], mine[AR_NN_CONFIG_FIELDS];
    uint32_t crc, ver, nopt;
    double *w = NULL, *m = NULL, *v = NULL, opt[AR_TRAIN_NOPT], stats[3];
    uint64_t adam_t, seed, rng[4], upd;
    ckpt_comp *cc = NULL;
    ar_nn *nn;
    if (!t || !path) return AR_NULL_ARG("arachne_trainer_load_checkpoint", t, path);
    nn = t->policy->nn;
    st = ar_read_file(path, &data, &len);
    if (st) return st;
    memset(&r, 0, sizeof r);
    r.p = (const unsigned char *)data;
    r.len = len;
    if (len < 8 || memcmp(data, AR_CKPT_MAGIC, 7) != 0) {
        st = ar_error(ARACHNE_E_CORRUPT, "%s: not a training checkpoint (bad magic)", path);
        goto done;
    }
    if ((unsigned char)data[7] != 1) {
        st = ar_error(ARACHNE_E_UNSUPPORTED, "%s: checkpoint magic version %d (this library reads 1)", path,
                      (unsigned char)data[7]);
        goto done;
    }
    if (len < 8 + 8 + 4) {
        st = ar_error(ARACHNE_E_CORRUPT, "%s: truncated (%zu bytes)", path, len);
        goto done;
    }
    r.pos = len - 4;
    crc = get_u32(&r);
    if (crc != ar_crc32(data, len - 4)) {
        st = ar_error(ARACHNE_E_CORRUPT, "%s: checksum mismatch (stored %08x, computed %08x): truncated or damaged",
                      path, crc, ar_crc32(data, len - 4));
        goto done;
    }
    r.len = len - 4;
    r.pos = 8;
    ver = get_u32(&r);
    if (ver != AR_CKPT_VERSION) {
        st = ar_error(ARACHNE_E_UNSUPPORTED, "%s: checkpoint format version %u (this library reads %u)", path, ver,
                      AR_CKPT_VERSION);
        goto done;
    }
    (void)get_u32(&r);
    for (i = 0; i < AR_NN_CONFIG_FIELDS; i++) cfg[i] = (int)get_u32(&r);
    ar_nn_config_to_array(ar_nn_get_config(nn), mine);
    P = ar_nn_param_count(nn);
    if (r.bad) goto trunc;
    for (i = 0; i < AR_NN_CONFIG_FIELDS; i++)
        if (cfg[i] != mine[i]) {
            st = ar_error(ARACHNE_E_INVALID_ARGUMENT,
                          "%s: the checkpoint's network differs from the policy's (size field %d: %d vs %d)", path, i,
                          cfg[i], mine[i]);
            goto done;
        }
    if (get_u64(&r) != (uint64_t)P || r.bad) {
        st = ar_error(ARACHNE_E_CORRUPT, "%s: parameter count contradicts the network sizes", path);
        goto done;
    }
    if (P > (r.len - r.pos) / 24) goto trunc;
    w = ar_malloc(P * sizeof *w);
    m = ar_malloc(P * sizeof *m);
    v = ar_malloc(P * sizeof *v);
    if (!w || !m || !v) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (p = 0; p < P; p++) w[p] = get_f64(&r);
    for (p = 0; p < P; p++) m[p] = get_f64(&r);
    for (p = 0; p < P; p++) v[p] = get_f64(&r);
    /* Finite is not enough: Adam moments of 2e307 pass isfinite but make
     * the next update's weights infinite (issue 27). */
    for (p = 0; p < P; p++)
        if (!ar_nn_state_ok(w[p], m[p], v[p])) {
            st = ar_error(ARACHNE_E_CORRUPT,
                          "%s: parameter %zu = %g (Adam moments %g, %g) is not finite or outside +-%g", path, p,
                          w[p], m[p], v[p], AR_NN_STATE_LIMIT);
            goto done;
        }
    adam_t = get_u64(&r);
    seed = get_u64(&r);
    for (i = 0; i < 4; i++) rng[i] = get_u64(&r);
    upd = get_u64(&r);
    if (r.bad) goto trunc;
    nopt = get_u32(&r);
    if (nopt != AR_TRAIN_NOPT && nopt != AR_TRAIN_NOPT_V1 && nopt != AR_TRAIN_NOPT_V2 && nopt != AR_TRAIN_NOPT_V3 &&
        nopt != AR_TRAIN_NOPT_V4 && nopt != AR_TRAIN_NOPT_V5) {
        st = ar_error(ARACHNE_E_CORRUPT,
                      "%s: option count is %u, not %d (or %d in files written before SIL_TOP, %d before "
                      "SIZE_CURRICULUM, %d before REFINE_INTERVAL, %d before the entropy schedule, %d before "
                      "the rollout targets)",
                      path, nopt, AR_TRAIN_NOPT, AR_TRAIN_NOPT_V1, AR_TRAIN_NOPT_V2, AR_TRAIN_NOPT_V3,
                      AR_TRAIN_NOPT_V4, AR_TRAIN_NOPT_V5);
        goto done;
    }
    for (i = 0; i < (int)nopt; i++) opt[i] = get_f64(&r);
    /* options newer than the file take their defaults, which are what the
     * runs that wrote such files did (SIL_TOP 0.9, no greedy members, no
     * curriculum over cluster size, no refinement rounds, a constant entropy
     * bonus) */
    for (; i < AR_TRAIN_NOPT; i++) opt[i] = ar_train_option_default(i);
    for (i = 0; i < 3; i++) stats[i] = get_f64(&r);
    if (r.bad) goto trunc;
    if (!stats_ok(stats[0], stats[1], stats[2])) {
        st = ar_error(ARACHNE_E_CORRUPT, "%s: last update's statistics are not finite (%g, %g, %g)", path, stats[0],
                      stats[1], stats[2]);
        goto done;
    }
    if (adam_t > (uint64_t)1 << 40 || upd > (uint64_t)INT_MAX) {   /* the run's callback counts in an int */
        st = ar_error(ARACHNE_E_CORRUPT, "%s: step counters out of range", path);
        goto done;
    }
    for (i = 0; i < AR_TRAIN_NOPT; i++) {
        double keep = t->opt[i];
        if (arachne_trainer_set(t, i, opt[i])) {
            st = ar_error(ARACHNE_E_CORRUPT, "%s: stored option %d = %g is out of range", path, i, opt[i]);
            goto done;
        }
        t->opt[i] = keep;
    }
    if (get_u32(&r) != (uint32_t)t->ncomp || r.bad) {
        st = r.bad ? ARACHNE_OK : ar_error(ARACHNE_E_INVALID_ARGUMENT,
                                           "%s: the checkpoint holds another number of compositions than the %d added",
                                           path, t->ncomp);
        if (r.bad) goto trunc;
        goto done;
    }
    cc = ar_calloc((size_t)(t->ncomp ? t->ncomp : 1), sizeof *cc);
    if (!cc) { st = ARACHNE_E_NO_MEMORY; goto done; }
    for (i = 0; i < t->ncomp; i++) {
        const ar_train_comp *c = &t->comp[i];
        uint32_t nl = get_u32(&r), gpus, ntypes;
        if (r.bad || !need(&r, nl)) goto trunc;
        if (nl != strlen(c->name) || memcmp(r.p + r.pos, c->name, nl) != 0) {
            st = ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: composition %d is '%.*s' in the checkpoint, '%s' here", path,
                          i, (int)(nl > 200 ? 200 : nl), (const char *)r.p + r.pos, c->name);
            goto done;
        }
        r.pos += nl;
        gpus = get_u32(&r);
        ntypes = get_u32(&r);
        if (r.bad) goto trunc;
        if (gpus != (uint32_t)c->cm->cluster->total_gpus || ntypes != (uint32_t)c->cm->cluster->ntypes) {
            st = ar_error(ARACHNE_E_INVALID_ARGUMENT,
                          "%s: composition '%s' has %u GPUs of %u types in the checkpoint, %d of %d here", path,
                          c->name, gpus, ntypes, c->cm->cluster->total_gpus, c->cm->cluster->ntypes);
            goto done;
        }
        cc[i].mean_return = get_f64(&r);
        cc[i].std_return = get_f64(&r);
        cc[i].evaluations = get_f64(&r);
        cc[i].have_group = (int)get_u32(&r);
        if (r.bad) goto trunc;
        if (!comp_stats_ok(cc[i].mean_return, cc[i].std_return, cc[i].evaluations) || cc[i].have_group < 0 ||
            cc[i].have_group > 1) {
            st = ar_error(ARACHNE_E_CORRUPT,
                          "%s: composition '%s': return mean %g, deviation %g, evaluations %g, group flag %d "
                          "(finite, deviation and evaluations >= 0, flag 0 or 1)",
                          path, c->name, cc[i].mean_return, cc[i].std_return, cc[i].evaluations, cc[i].have_group);
            goto done;
        }
        if ((st = get_plan(&r, &cc[i].best, path))) goto done;
        for (d = 0; d < AR_SEARCH_MAX_DEPTH; d++) {
            uint32_t nb = get_u32(&r);
            if (r.bad) goto trunc;
            if (nb > AR_TRAIN_MAX_SIL) {
                st = ar_error(ARACHNE_E_CORRUPT, "%s: %u kept plans of depth %d (at most %d)", path, nb, d + 1,
                              AR_TRAIN_MAX_SIL);
                goto done;
            }
            if (nb == 0) continue;
            cc[i].buf[d] = ar_calloc(AR_TRAIN_MAX_SIL, sizeof(ar_sil_plan));
            if (!cc[i].buf[d]) { st = ARACHNE_E_NO_MEMORY; goto done; }
            for (k = 0; k < (int)nb; k++) {
                cc[i].nbuf[d] = k + 1;
                if ((st = get_plan(&r, &cc[i].buf[d][k], path))) goto done;
            }
        }
    }
    /* files written before the rollout targets have none */
    for (i = 0; i < t->ncomp && nopt == AR_TRAIN_NOPT; i++)
        if ((st = get_plan(&r, &cc[i].roll, path))) goto done;
    if (r.pos != r.len) {
        st = ar_error(ARACHNE_E_CORRUPT, "%s: %zu unexpected bytes before the checksum", path, r.len - r.pos);
        goto done;
    }
    /* commit */
    memcpy(ar_nn_params(nn), w, P * sizeof *w);
    memcpy(ar_nn_adam_moment(nn, 0), m, P * sizeof *m);
    memcpy(ar_nn_adam_moment(nn, 1), v, P * sizeof *v);
    ar_nn_adam_set_steps(nn, (long)adam_t);
    t->seed = seed;
    for (i = 0; i < 4; i++) t->rng.s[i] = rng[i];
    t->updates_done = (long)upd;
    for (i = 0; i < AR_TRAIN_NOPT; i++)
        if (i != ARACHNE_TRAIN_THREADS) t->opt[i] = opt[i];
    t->last_norm_reward = stats[0];
    t->last_entropy = stats[1];
    t->last_grad_norm = stats[2];
    for (i = 0; i < t->ncomp; i++) {
        ar_train_comp *c = &t->comp[i];
        ar_train_comp_clear_plans(c);
        c->mean_return = cc[i].mean_return;
        c->std_return = cc[i].std_return;
        c->evaluations = cc[i].evaluations;
        c->have_group = cc[i].have_group;
        c->best = cc[i].best;
        memset(&cc[i].best, 0, sizeof cc[i].best);
        c->roll = cc[i].roll;
        memset(&cc[i].roll, 0, sizeof cc[i].roll);
        for (d = 0; d < AR_SEARCH_MAX_DEPTH; d++) {
            c->buf[d] = cc[i].buf[d];
            c->nbuf[d] = cc[i].nbuf[d];
            cc[i].buf[d] = NULL;
        }
    }
    st = ARACHNE_OK;
    goto done;
trunc:
    st = ar_error(ARACHNE_E_CORRUPT, "%s: truncated at offset %zu", path, r.pos);
done:
    if (cc) {
        for (i = 0; i < t->ncomp; i++) ckpt_comp_free(&cc[i]);
        free(cc);
    }
    free(w);
    free(m);
    free(v);
    free(data);
    return st;
}
