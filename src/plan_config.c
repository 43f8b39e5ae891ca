/* plan_config.c -- the plan of an explicit homogeneous parallel
 * configuration ("tp=8,pp=16,dp=64,mbs=1"), as a user already runs it with
 * Megatron-LM or torchtitan, so that it can be priced with the same cost
 * model as the planner's plans (docs/cost-model.md, "Pricing a configuration
 * you run").  One template, every stage on one GPU type; ranks follow
 * Megatron-Core's default order (TP fastest, then context parallel, then
 * data parallel, then the pipeline stage), laid over the type's GPUs in node
 * order. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "fill.h"
#include "plan.h"

typedef struct par_cfg {
    long tp, pp, dp, mbs, ep, etp, fsdp, cp, vp;
    int has_dp, has_ep, has_etp;
    int nlayers;
    long layers[AR_MAX_DEPTH];
    char gpu[AR_NAME_MAX];
} par_cfg;

#define FN "arachne_plan_from_parallel"

static int parse_long(const char *key, const char *v, size_t n, long lo, long hi, long *out)
{
    char buf[32], *end = NULL;
    long x;
    if (n == 0 || n >= sizeof buf)
        return ar_error(ARACHNE_E_PARSE, FN ": '%s' needs an integer value", key);
    memcpy(buf, v, n);
    buf[n] = '\0';
    if (!isdigit((unsigned char)buf[0])) return ar_error(ARACHNE_E_PARSE, FN ": %s=%s is not a whole number", key, buf);
    errno = 0;
    x = strtol(buf, &end, 10);
    if (errno || *end) return ar_error(ARACHNE_E_PARSE, FN ": %s=%s is not a whole number", key, buf);
    if (x < lo || x > hi)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": %s=%ld outside [%ld, %ld]", key, x, lo, hi);
    *out = x;
    return ARACHNE_OK;
}

static int parse_layers(par_cfg *c, const char *v, size_t n)
{
    size_t i = 0;
    c->nlayers = 0;
    while (i <= n) {
        size_t j = i;
        int st;
        while (j < n && v[j] != '/') j++;
        if (c->nlayers >= AR_MAX_DEPTH)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": layers= lists more than %d stages", AR_MAX_DEPTH);
        if ((st = parse_long("layers", v + i, j - i, 1, 1000000, &c->layers[c->nlayers]))) return st;
        c->nlayers++;
        i = j + 1;
    }
    return ARACHNE_OK;
}

/* Parses "key=value,key=value"; unknown keys and unsupported dimensions are
 * errors that name them. */
static int parse_spec(const char *spec, par_cfg *c)
{
    enum { K_TP, K_PP, K_VP, K_DP, K_CP, K_MBS, K_EP, K_ETP, K_FSDP, K_LAYERS, K_GPU, K_COUNT };
    static const char *const known[K_COUNT] = { "tp", "pp", "vp", "dp", "cp", "mbs", "ep", "etp", "fsdp", "layers",
                                                "gpu" };
    unsigned seen = 0;
    const char *p = spec;
    memset(c, 0, sizeof *c);
    c->tp = c->pp = c->mbs = c->ep = c->cp = 1;
    while (*p) {
        const char *comma = strchr(p, ','), *eq;
        size_t len = comma ? (size_t)(comma - p) : strlen(p), klen, vlen;
        char key[16];
        int st = ARACHNE_OK, k;
        eq = memchr(p, '=', len);
        if (!eq) return ar_error(ARACHNE_E_PARSE, FN ": '%.*s' is not key=value", (int)(len > 40 ? 40 : len), p);
        klen = (size_t)(eq - p);
        vlen = len - klen - 1;
        if (klen == 0 || klen >= sizeof key)
            return ar_error(ARACHNE_E_PARSE, FN ": bad key in '%.*s'", (int)(len > 40 ? 40 : len), p);
        memcpy(key, p, klen);
        key[klen] = '\0';
        for (k = 0; k < K_COUNT; k++)
            if (!strcmp(key, known[k])) break;
        if (k == K_COUNT)
            return ar_error(ARACHNE_E_PARSE, FN ": unknown key '%s' (known: tp pp vp dp cp mbs ep etp fsdp layers gpu)",
                            key);
        /* the last of a repeated key used to win silently */
        if (seen >> k & 1u) return ar_error(ARACHNE_E_PARSE, FN ": key '%s' is given twice", key);
        seen |= 1u << k;
        switch (k) {
        case K_TP: st = parse_long(key, eq + 1, vlen, 1, AR_MAX_NODE_GPUS, &c->tp); break;
        case K_PP: st = parse_long(key, eq + 1, vlen, 1, AR_MAX_DEPTH, &c->pp); break;
        case K_DP: st = parse_long(key, eq + 1, vlen, 1, 100000000L, &c->dp); c->has_dp = 1; break;
        case K_MBS: st = parse_long(key, eq + 1, vlen, 1, 1000000L, &c->mbs); break;
        case K_EP: st = parse_long(key, eq + 1, vlen, 1, 1000000L, &c->ep); c->has_ep = 1; break;
        case K_ETP: st = parse_long(key, eq + 1, vlen, 1, AR_MAX_NODE_GPUS, &c->etp); c->has_etp = 1; break;
        case K_LAYERS: st = parse_layers(c, eq + 1, vlen); break;
        case K_GPU:
            if (vlen == 0 || vlen >= sizeof c->gpu) return ar_error(ARACHNE_E_PARSE, FN ": gpu= needs a GPU type name");
            memcpy(c->gpu, eq + 1, vlen);
            c->gpu[vlen] = '\0';
            break;
        case K_FSDP: st = parse_long(key, eq + 1, vlen, 0, 100000000L, &c->fsdp); break;
        case K_CP:
            st = parse_long(key, eq + 1, vlen, 0, AR_MAX_CP, &c->cp);
            if (!st && c->cp < 1) c->cp = 1;
            break;
        case K_VP: st = parse_long(key, eq + 1, vlen, 0, AR_MAX_VP, &c->vp); break;
        }
        if (st) return st;
        p = comma ? comma + 1 : p + len;
    }
    return ARACHNE_OK;
}

/* The GPU type the configuration runs on: the named one, else the cluster's
 * only type, else an error listing the choice. */
static int pick_type(const arachne_cluster *cl, const par_cfg *c)
{
    int t;
    if (c->gpu[0]) {
        t = ar_cluster_type_index(cl, c->gpu);
        if (t < 0) return ar_error(ARACHNE_E_NOT_FOUND, FN ": gpu=%s: the cluster has no such GPU type", c->gpu);
        return t;
    }
    if (cl->ntypes == 1) return 0;
    return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": the cluster has %d GPU types; name one with gpu=TYPE",
                    cl->ntypes);
}

static int build(arachne_plan *p, const arachne_cost_model *cm, const par_cfg *c, int type)
{
    const arachne_cluster *cl = cm->cluster;
    const arachne_model *m = cm->model;
    ar_template *t = &p->t[0];
    long w, need, batch_unit;
    int firsts[AR_MAX_DEPTH + 1], s, k, n, rk;

    w = c->tp * c->cp * c->dp;
    need = w * c->pp;
    if (need > cl->type_gpus[type])
        return ar_error(ARACHNE_E_INFEASIBLE, FN ": tp %ld x cp %ld x pp %ld x dp %ld = %ld GPUs; the cluster has %d %s",
                        c->tp, c->cp, c->pp, c->dp, need, cl->type_gpus[type], cl->types[type].name);
    if (c->cp > 1 && cm->setup.seq_len % (2 * c->cp) != 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        FN ": cp=%ld needs the sequence length (%d) divisible by 2 x cp = %ld (load-balanced chunks)",
                        c->cp, cm->setup.seq_len, 2 * c->cp);
    if (c->pp > m->blocks)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": pp=%ld exceeds the model's %d blocks", c->pp, m->blocks);
    batch_unit = c->dp * c->mbs;
    if (cm->setup.global_batch % batch_unit != 0) {
        long lo = cm->setup.global_batch / batch_unit * batch_unit, hi = lo + batch_unit;
        if (lo > 0)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            FN ": global batch %d is not a multiple of dp x mbs = %ld (nearest: %ld or %ld)",
                            cm->setup.global_batch, batch_unit, lo, hi);
        return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                        FN ": global batch %d is not a multiple of dp x mbs = %ld (smallest: %ld)",
                        cm->setup.global_batch, batch_unit, hi);
    }
    if (c->vp > 1) {
        /* Megatron's interleaving: every stage holds vp chunks, the layers
         * split evenly over the pp x vp chunks; micro-batches in groups of pp */
        long chunks = c->pp * c->vp, M = cm->setup.global_batch / batch_unit;
        if (c->pp < 2)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": vp=%ld needs pp >= 2 (pp=%ld)", c->vp, c->pp);
        if (c->nlayers)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": layers= with vp=%ld: interleaved stages split the "
                            "layers evenly", c->vp);
        if (m->blocks % chunks != 0)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": vp=%ld: the model's %d blocks do not split evenly "
                            "into pp x vp = %ld x %ld = %ld chunks", c->vp, m->blocks, c->pp, c->vp, chunks);
        if (M % c->pp != 0)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": vp=%ld: %ld micro-batches (global batch %d / dp %ld / "
                            "mbs %ld) is not a multiple of pp=%ld, as the interleaved schedule needs",
                            c->vp, M, cm->setup.global_batch, c->dp, c->mbs, c->pp);
        t->vp = (int)c->vp;
    }
    if (c->nlayers) {
        long sum = 0;
        if (c->nlayers != c->pp)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": layers= lists %d stages, pp is %ld", c->nlayers, c->pp);
        firsts[0] = 0;
        for (s = 0; s < c->nlayers; s++) {
            sum += c->layers[s];
            if (sum > m->blocks) break;
            firsts[s + 1] = (int)sum;
        }
        if (sum != m->blocks)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": layers= sums to %s%ld, the model has %d blocks",
                            s < c->nlayers ? "more than " : "", sum, m->blocks);
    } else {
        ar_split_even(m->blocks, (int)c->pp, firsts);
    }
    t->depth = (int)c->pp;
    t->replicas = (int)c->dp;
    t->micro_batch = (int)c->mbs;
    t->micro_batches = (int)(cm->setup.global_batch / batch_unit);
    t->cp = c->cp > 1 ? (int)c->cp : 0;
    if (c->fsdp > 1) {
        if (c->dp % c->fsdp != 0)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": fsdp=%ld does not divide dp=%ld", c->fsdp, c->dp);
        t->fsdp = (int)c->fsdp;
    }
    for (s = 0; s < t->depth; s++) {
        ar_stage *st = &t->stages[s];
        int moe = 0, b;
        st->type = type;
        st->tp = (int)c->tp;
        st->first = firsts[s];
        st->end = firsts[s + 1];
        for (b = st->first; b < st->end && m->experts > 0; b++)
            if (ar_model_block_routed(m, b)) moe = 1;
        if (moe) {
            long etp = c->has_etp ? c->etp : c->tp, ep = c->ep;
            if (w % (ep * etp) != 0)
                return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                                FN ": ep %ld x etp %ld does not divide the %ld GPUs of a stage (tp x cp x dp)", ep, etp, w);
            st->ep = (int)ep;
            st->etp = (int)etp;
            st->edp = (int)(w / (ep * etp));
        } else {
            st->ep = 1;
            st->etp = 1;
            st->edp = (int)w;
        }
    }
    if ((c->has_ep && c->ep > 1) && m->experts <= 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": ep=%ld on model '%s', which has no experts", c->ep, m->name);
    p->ntemplates = 1;

    /* ranks in Megatron-Core's default order: rank = tp + TP (cp + CP (dp +
     * DP stage)), over the type's GPUs in node order */
    p->ranks = ar_malloc((size_t)need * sizeof *p->ranks);
    if (!p->ranks) return ARACHNE_E_NO_MEMORY;
    p->nranks = (int)need;
    rk = 0;
    for (n = 0; n < cl->nnodes && rk < need; n++) {
        if (cl->nodes[n].type != type) continue;
        for (k = 0; k < cl->nodes[n].gpus && rk < need; k++, rk++) {
            ar_rank *R = &p->ranks[rk];
            R->rank = rk;
            R->node = n;
            R->gpu = k;
            R->tmpl = 0;
            R->tp_rank = (int)(rk % c->tp);
            R->cp_rank = (int)((rk / c->tp) % c->cp);
            R->replica = (int)((rk / (c->tp * c->cp)) % c->dp);
            R->stage = (int)(rk / w);
        }
    }
    return ARACHNE_OK;
}

int arachne_plan_from_parallel(arachne_plan **out, const arachne_cost_model *cm, const char *spec)
{
    arachne_plan *p;
    par_cfg c;
    int st, type;
    if (out) *out = NULL;
    if (!out || !cm || !spec)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, FN ": NULL %s", !out ? "out" : !cm ? "cost model" : "spec");
    if ((st = parse_spec(spec, &c))) return st;
    if ((type = pick_type(cm->cluster, &c)) < 0) return type;
    if (!c.has_dp) {
        c.dp = cm->cluster->type_gpus[type] / (c.tp * c.cp * c.pp);
        if (c.dp < 1)
            return ar_error(ARACHNE_E_INFEASIBLE, FN ": tp %ld x cp %ld x pp %ld needs more than the %d %s GPUs", c.tp,
                            c.cp, c.pp, cm->cluster->type_gpus[type], cm->cluster->types[type].name);
    }
    p = ar_calloc(1, sizeof *p);
    if (!p) return ARACHNE_E_NO_MEMORY;
    st = ar_plan_init(p, cm);
    if (!st) st = build(p, cm, &c, type);
    if (!st) st = ar_plan_validate(cm, p);
    if (!st) st = ar_plan_price(cm, p);
    if (!st) {
        snprintf(p->method, sizeof p->method, "%s", "given");
        st = ar_plan_finish(p);
    }
    if (st) {
        arachne_plan_destroy(p);
        return st;
    }
    *out = p;
    return ARACHNE_OK;
}
