/* cost.c -- the cost model handle (create, options, lookup cache) and the
 * per-stage time formulas.  Whole-plan pricing is in cost_plan.c, memory in
 * cost_memory.c, the pure schedule formulas in schedule.c.  Every formula
 * and constant is written out in docs/cost-model.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cost.h"

const char *ar_cost_kind_name(int kind)
{
    const char *n = ar_layer_kind_name(kind);
    return n ? n : "?";
}

void ar_setup_defaults(ar_setup *s)
{
    s->global_batch = 512;
    s->seq_len = 4096;
    s->weight_bytes = 2.0;
    s->grad_bytes = 4.0;
    s->optim_bytes = 12.0;
    s->dist_optimizer = 1;
    s->recompute = AR_RECOMPUTE_SELECTIVE;
    s->headroom = 0.08;
    s->expert_tiling = 1;
    s->max_depth = 16;
    s->max_vp = 8;
    s->overlap_grad_reduce = 1;
    s->overlap_param_gather = 1;
    s->tp_comm_overlap = 0;
    s->recompute_norm_act = 0;
    s->recompute_alt_mm = 0;
    s->ep_hierarchical = 0;
    s->context_parallel = 1;
    s->exact_batch = 1;
    s->stage_reversal = 1;
    s->priced_resplit = 1;
    s->stage_moves = 1;
    s->stage_major = 1;
    s->fsdp_search = 1;
    s->recompute_search = 1;
    s->exact_division = 0;
}

int ar_setup_act_mode(const ar_setup *s)
{
    /* full recomputation already stores only each block's input */
    return s->recompute | (s->recompute_norm_act && s->recompute != AR_RECOMPUTE_FULL ? AR_RECOMPUTE_NORM_ACT_BIT : 0);
}

/* ---- lookup cache ----------------------------------------------------------- */

static int log2_exact(int v, int levels)
{
    int l = 0;
    if (v < 1 || (v & (v - 1))) return -1;
    while ((1 << l) < v) l++;
    return l < levels ? l : -1;
}

/* Converts a profile entry into the cost model's form under the setup. */
static void entry_from_profile(const arachne_cost_model *cm, const ar_profile_entry *pe, ar_cost_entry *ce)
{
    const arachne_model *m = cm->model;
    int seq = cm->setup.seq_len, rc = cm->setup.recompute;
    /* the profile's activation bytes were measured under its own
     * recomputation mode (selective for generated profiles, none for
     * Sailor's), at its own precision, which the priced run shares */
    double meas = ar_model_act_bytes(m, pe->kind, seq, pe->mbs, pe->tp, cm->profile->act_recompute);
    double sel = ar_model_act_bytes(m, pe->kind, seq, pe->mbs, pe->tp, AR_RECOMPUTE_SELECTIVE);
    double mode = ar_model_act_bytes(m, pe->kind, seq, pe->mbs, pe->tp, ar_setup_act_mode(&cm->setup));
    double scale = meas > 0.0 ? mode / meas : 1.0, to_sel = meas > 0.0 ? sel / meas : 1.0;
    ce->present = 1;
    ce->fwd_s = pe->fwd_s;
    ce->time_s = pe->fwd_s + pe->bwd_s + (rc == AR_RECOMPUTE_FULL ? pe->fwd_s : 0.0);
    /* per-op selective checkpointing: the recomputed matmuls' share of the
     * forward, charged at the forward's pace */
    if (cm->setup.recompute_alt_mm && rc != AR_RECOMPUTE_FULL)
        ce->time_s += pe->fwd_s * ar_model_alt_mm_share(m, pe->kind, seq);
    /* a block's TP traffic is 4 all-reduce equivalents, 2 per pass (with
     * sequence parallelism an all-gather and a reduce-scatter each); full
     * recomputation repeats the forward's 2, per-op selective
     * checkpointing its 2 all-gathers (torchtitan saves reduce-scatter
     * outputs, not all-gather outputs): 1 */
    ce->tp_comm_s = pe->tp_comm_s * (rc == AR_RECOMPUTE_FULL ? 1.5 : 1.0);
    if (cm->setup.recompute_alt_mm && rc != AR_RECOMPUTE_FULL && (pe->kind == AR_LAYER_DENSE || pe->kind == AR_LAYER_MOE))
        ce->tp_comm_s = pe->tp_comm_s * 1.25;
    ce->tp_fwd_s = 0.5 * pe->tp_comm_s;
    ce->act_sel = pe->act_bytes * to_sel;
    ce->act_bytes = pe->act_bytes * scale;
}

int ar_cost_cache_build(arachne_cost_model *cm)
{
    ar_cost_cache *c = cm->cache;
    const arachne_model *m = cm->model;
    int i, k, lt, lm, b;
    if (!c) {
        /* one allocation: moe_before, then one prefix array per block kind
         * the model has */
        int nk = 0;
        for (k = 0; k < AR_LAYER_KINDS; k++) nk += ar_kind_is_block(k) && ar_model_kind_count(m, k) > 0;
        c = ar_calloc(1, sizeof *c);
        if (!c) return ARACHNE_E_NO_MEMORY;
        c->moe_before = ar_calloc(((size_t)nk + 1) * ((size_t)m->blocks + 1), sizeof *c->moe_before);
        if (!c->moe_before) { free(c); return ARACHNE_E_NO_MEMORY; }
        for (k = 0, nk = 0; k < AR_LAYER_KINDS; k++)
            if (ar_kind_is_block(k) && ar_model_kind_count(m, k) > 0)
                c->kind_before[k] = c->moe_before + (size_t)(++nk) * ((size_t)m->blocks + 1);
        cm->cache = c;
    }
    c->blocks = m->blocks;
    c->nkinds = 0;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        c->needed[k] = !ar_kind_is_block(k) || c->kind_before[k] != NULL;
        if (c->kind_before[k]) c->kinds[c->nkinds++] = k;
    }
    c->moe_before[0] = 0;
    for (k = 0; k < AR_LAYER_KINDS; k++)
        if (c->kind_before[k]) c->kind_before[k][0] = 0;
    for (b = 0; b < m->blocks; b++) {
        int kb = ar_model_block_kind(m, b);
        c->moe_before[b + 1] = c->moe_before[b] + ar_model_block_routed(m, b);
        for (k = 0; k < AR_LAYER_KINDS; k++)
            if (c->kind_before[k]) c->kind_before[k][b + 1] = c->kind_before[k][b] + (kb == k);
    }
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        c->expert_params[k] = m->expert_params[k];
        c->dense_params[k] = m->params[k] - m->expert_params[k];
    }
    /* phi: routed-expert share of a routed kind's forward FLOPs */
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        c->expert_frac[k] = 0.0;
        if (m->experts > 0 && ar_kind_routed(k) && ar_model_kind_count(m, k) > 0) {
            double layer = ar_model_flops_fwd(m, k, cm->setup.seq_len, 1);
            double routed = 2.0 * (m->expert_params[k] / m->experts) * m->top_k * cm->setup.seq_len;
            if (layer > 0.0) c->expert_frac[k] = routed / layer;
            if (c->expert_frac[k] > 1.0) c->expert_frac[k] = 1.0;
        }
    }
    /* the attention core grows linearly with the sequence per token
     * (C(s) = k s), the rest does not: per token f(s) = A + k s */
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        int seq = cm->setup.seq_len;
        double f_s = ar_model_flops_fwd(m, k, seq, 1) / seq, f_1 = ar_model_flops_fwd(m, k, 1, 1);
        c->attn_frac[k] = seq > 1 && f_s > 0.0 ? (f_s - f_1) * seq / (seq - 1.0) / f_s : 0.0;
        if (c->attn_frac[k] < 0.0) c->attn_frac[k] = 0.0;
        if (c->attn_frac[k] > 1.0) c->attn_frac[k] = 1.0;
    }
    c->flops_per_sample = 0.0;
    for (k = 0; k < AR_LAYER_KINDS; k++) {
        int count = (k == AR_LAYER_EMBED || k == AR_LAYER_HEAD) ? 1 : ar_model_kind_count(m, k);
        if (count > 0) c->flops_per_sample += 3.0 * count * ar_model_flops_fwd(m, k, cm->setup.seq_len, 1);
    }
    memset(c->tab, 0, sizeof c->tab);
    for (i = 0; i < cm->cluster->ntypes; i++)
        for (k = 0; k < AR_LAYER_KINDS; k++)
            for (lt = 0; lt < AR_TP_LEVELS; lt++)
                for (lm = 0; lm < AR_MBS_LEVELS; lm++) {
                    const ar_profile_entry *pe = ar_profile_find(cm->profile, cm->cluster->types[i].name, k, 1 << lt, 1 << lm);
                    if (pe) entry_from_profile(cm, pe, &c->tab[i][k][lt][lm]);
                }
    return ARACHNE_OK;
}

int ar_cost_entry_get(const arachne_cost_model *cm, int type, int kind, int tp, int mbs,
                      ar_cost_entry *tmp, const ar_cost_entry **out)
{
    const ar_cost_cache *c = cm->cache;
    int lt = log2_exact(tp, AR_TP_LEVELS), lm = log2_exact(mbs, AR_MBS_LEVELS);
    const char *gpu = cm->cluster->types[type].name;
    if (lt >= 0 && lm >= 0) {
        *out = &c->tab[type][kind][lt][lm];
        if ((*out)->present) return ARACHNE_OK;
    } else {
        const ar_profile_entry *pe = ar_profile_find(cm->profile, gpu, kind, tp, mbs);
        if (pe) {
            entry_from_profile(cm, pe, tmp);
            *out = tmp;
            return ARACHNE_OK;
        }
    }
    *out = NULL;
    return ar_error(ARACHNE_E_INFEASIBLE, "profile has no entry for (GPU %s, layer %s, tp %d, micro-batch %d)",
                    gpu, ar_cost_kind_name(kind), tp, mbs);
}

const ar_plan_inputs *ar_cost_model_inputs(const arachne_cost_model *cm)
{
    const ar_cost_cache *c = cm ? cm->cache : NULL;
    return c && c->have_inputs ? &c->inputs : NULL;
}

/* ---- handle and options ------------------------------------------------------- */

int arachne_cost_model_create(arachne_cost_model **out, const arachne_model *m,
                              const arachne_cluster *c, const arachne_profile *p)
{
    arachne_cost_model *cm;
    int st;
    if (out) *out = NULL;
    if (!out || !m || !c || !p) return AR_NULL_ARG("arachne_cost_model_create", out, m, c, p);
    if (p->model[0] && ar_strcasecmp(p->model, m->name) != 0)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model: the profile is for model '%s', not '%s'", p->model, m->name);
    if (p->seq_len < 1)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model: the profile has no sequence length (%d)", p->seq_len);
    if (c->ntypes < 1 || c->ntypes > AR_MAX_TYPES)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model: the cluster has %d GPU types", c->ntypes);
    if (m->blocks < 1) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model: model '%s' has no blocks", m->name);
    cm = ar_calloc(1, sizeof *cm);
    if (!cm) return ARACHNE_E_NO_MEMORY;
    cm->model = m;
    cm->cluster = c;
    cm->profile = p;
    ar_setup_defaults(&cm->setup);
    cm->setup.seq_len = p->seq_len;
    if ((st = ar_cost_cache_build(cm)) != ARACHNE_OK) {
        arachne_cost_model_destroy(cm);
        return st;
    }
    {
        ar_cost_cache *cc = cm->cache;
        if ((st = ar_plan_inputs_build(cm, &cc->inputs)) != ARACHNE_OK) {
            arachne_cost_model_destroy(cm);
            return st;
        }
        cc->have_inputs = 1;
    }
    *out = cm;
    return ARACHNE_OK;
}

/* A copy of cm over the same model, cluster and profile with another
 * setup: its own cache, the same input texts for the plans it prices. */
static int with_setup(arachne_cost_model **out, const arachne_cost_model *cm, const ar_setup *setup)
{
    arachne_cost_model *v;
    const ar_plan_inputs *in = ar_cost_model_inputs(cm);
    int st;
    *out = NULL;
    if (!(v = ar_calloc(1, sizeof *v))) return ARACHNE_E_NO_MEMORY;
    v->model = cm->model;
    v->cluster = cm->cluster;
    v->profile = cm->profile;
    v->setup = *setup;
    if ((st = ar_cost_cache_build(v)) != ARACHNE_OK) {
        arachne_cost_model_destroy(v);
        return st;
    }
    /* the model, cluster and profile text the plans embed are the same */
    if (in) {
        ar_cost_cache *cc = v->cache;
        if ((st = ar_plan_inputs_copy(&cc->inputs, in)) != ARACHNE_OK) {
            arachne_cost_model_destroy(v);
            return st;
        }
        cc->have_inputs = 1;
    }
    *out = v;
    return ARACHNE_OK;
}

int ar_cost_model_with_recompute(arachne_cost_model **out, const arachne_cost_model *cm, int recompute)
{
    ar_setup s = cm->setup;
    s.recompute = recompute;
    return with_setup(out, cm, &s);
}

int ar_cost_model_with_exact_division(arachne_cost_model **out, const arachne_cost_model *cm, int exact_division)
{
    ar_setup s = cm->setup;
    s.exact_division = exact_division;
    return with_setup(out, cm, &s);
}

void arachne_cost_model_destroy(arachne_cost_model *cm)
{
    if (!cm) return;
    if (cm->cache) {
        ar_cost_cache *c = cm->cache;
        free(c->moe_before);
        ar_plan_inputs_free(&c->inputs);
        free(c);
    }
    free(cm);
}

static const char *const option_names[] = {
    "global_batch", "seq_len", "weight_bytes", "grad_bytes", "optim_bytes",
    "dist_optimizer", "recompute", "headroom", "expert_tiling", "max_depth",
    "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap", "recompute_norm_act", "recompute_alt_mm", "context_parallel", "max_vp",
    "ep_hierarchical", "exact_batch", "stage_reversal", "priced_resplit", "stage_moves", "stage_major",
    "fsdp_search", "recompute_search", "exact_division"
};

static int need_int(int option, double v, double lo, double hi)
{
    if (!(v >= lo && v <= hi) || v != floor(v))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model option %s: %g is not an integer in [%g, %g]",
                        option_names[option], v, lo, hi);
    return ARACHNE_OK;
}

static int need_range(int option, double v, double lo, int lo_open, double hi, int hi_open)
{
    if (!(lo_open ? v > lo : v >= lo) || !(hi_open ? v < hi : v <= hi))
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model option %s: %g is not in %c%g, %g%c",
                        option_names[option], v, lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
    return ARACHNE_OK;
}

int arachne_cost_model_set(arachne_cost_model *cm, int option, double value)
{
    int st = ARACHNE_OK, rebuild = 0;
    ar_setup *s;
    if (!cm) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model: NULL handle");
    s = &cm->setup;
    switch (option) {
    case ARACHNE_OPT_GLOBAL_BATCH:
        if ((st = need_int(option, value, 1, 1e9)) == ARACHNE_OK) s->global_batch = (int)value;
        break;
    case ARACHNE_OPT_SEQ_LEN:
        if ((st = need_int(option, value, 1, 1e9)) != ARACHNE_OK) break;
        if ((int)value != cm->profile->seq_len)
            return ar_error(ARACHNE_E_INVALID_ARGUMENT,
                            "cost model option seq_len: %d differs from the profile's sequence length %d "
                            "(generate or load a profile for %d)", (int)value, cm->profile->seq_len, (int)value);
        s->seq_len = (int)value;
        break;
    case ARACHNE_OPT_WEIGHT_BYTES:
        if ((st = need_range(option, value, 0, 1, 64, 0)) == ARACHNE_OK) s->weight_bytes = value;
        break;
    case ARACHNE_OPT_GRAD_BYTES:
        if ((st = need_range(option, value, 0, 1, 64, 0)) == ARACHNE_OK) s->grad_bytes = value;
        break;
    case ARACHNE_OPT_OPTIM_BYTES:
        if ((st = need_range(option, value, 0, 0, 64, 0)) == ARACHNE_OK) s->optim_bytes = value;
        break;
    case ARACHNE_OPT_DIST_OPTIMIZER:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->dist_optimizer = (int)value;
        break;
    case ARACHNE_OPT_RECOMPUTE:
        if ((st = need_int(option, value, AR_RECOMPUTE_NONE, AR_RECOMPUTE_FULL)) == ARACHNE_OK) {
            rebuild = s->recompute != (int)value;
            s->recompute = (int)value;
        }
        break;
    case ARACHNE_OPT_HEADROOM:
        if ((st = need_range(option, value, 0, 0, 1, 1)) == ARACHNE_OK) s->headroom = value;
        break;
    case ARACHNE_OPT_EXPERT_TILING:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->expert_tiling = (int)value;
        break;
    case ARACHNE_OPT_MAX_DEPTH:
        if ((st = need_int(option, value, 1, AR_SEARCH_MAX_DEPTH)) == ARACHNE_OK) s->max_depth = (int)value;
        break;
    case ARACHNE_OPT_OVERLAP_GRAD_REDUCE:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->overlap_grad_reduce = (int)value;
        break;
    case ARACHNE_OPT_OVERLAP_PARAM_GATHER:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->overlap_param_gather = (int)value;
        break;
    case ARACHNE_OPT_CONTEXT_PARALLEL:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->context_parallel = (int)value;
        break;
    case ARACHNE_OPT_TP_COMM_OVERLAP:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) {
            rebuild = s->tp_comm_overlap != (int)value;
            s->tp_comm_overlap = (int)value;
        }
        break;
    case ARACHNE_OPT_RECOMPUTE_NORM_ACT:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) {
            rebuild = s->recompute_norm_act != (int)value;
            s->recompute_norm_act = (int)value;
        }
        break;
    case ARACHNE_OPT_RECOMPUTE_ALT_MM:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) {
            rebuild = s->recompute_alt_mm != (int)value;
            s->recompute_alt_mm = (int)value;
        }
        break;
    case ARACHNE_OPT_MAX_VP:
        if ((st = need_int(option, value, 1, AR_MAX_VP)) == ARACHNE_OK) s->max_vp = (int)value;
        break;
    case ARACHNE_OPT_EP_HIERARCHICAL:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->ep_hierarchical = (int)value;
        break;
    case ARACHNE_OPT_EXACT_BATCH:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->exact_batch = (int)value;
        break;
    case ARACHNE_OPT_STAGE_REVERSAL:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->stage_reversal = (int)value;
        break;
    case ARACHNE_OPT_PRICED_RESPLIT:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->priced_resplit = (int)value;
        break;
    case ARACHNE_OPT_STAGE_MOVES:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->stage_moves = (int)value;
        break;
    case ARACHNE_OPT_STAGE_MAJOR:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->stage_major = (int)value;
        break;
    case ARACHNE_OPT_FSDP_SEARCH:
        if ((st = need_int(option, value, 0, 1)) == ARACHNE_OK) s->fsdp_search = (int)value;
        break;
    case ARACHNE_OPT_RECOMPUTE_SEARCH:
        if ((st = need_int(option, value, 0, 2)) == ARACHNE_OK) s->recompute_search = (int)value;
        break;
    case ARACHNE_OPT_EXACT_DIVISION:
        if ((st = need_int(option, value, 0, 2)) == ARACHNE_OK) s->exact_division = (int)value;
        break;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model: unknown option %d (valid: 0..25)", option);
    }
    if (st == ARACHNE_OK && rebuild) st = ar_cost_cache_build(cm);
    return st;
}

int arachne_cost_model_get(const arachne_cost_model *cm, int option, double *out)
{
    const ar_setup *s;
    double v;
    if (!cm || !out) return AR_NULL_ARG("cost model", cm, out);
    s = &cm->setup;
    switch (option) {
    case ARACHNE_OPT_GLOBAL_BATCH: v = s->global_batch; break;
    case ARACHNE_OPT_SEQ_LEN: v = s->seq_len; break;
    case ARACHNE_OPT_WEIGHT_BYTES: v = s->weight_bytes; break;
    case ARACHNE_OPT_GRAD_BYTES: v = s->grad_bytes; break;
    case ARACHNE_OPT_OPTIM_BYTES: v = s->optim_bytes; break;
    case ARACHNE_OPT_DIST_OPTIMIZER: v = s->dist_optimizer; break;
    case ARACHNE_OPT_RECOMPUTE: v = s->recompute; break;
    case ARACHNE_OPT_HEADROOM: v = s->headroom; break;
    case ARACHNE_OPT_EXPERT_TILING: v = s->expert_tiling; break;
    case ARACHNE_OPT_MAX_DEPTH: v = s->max_depth; break;
    case ARACHNE_OPT_OVERLAP_GRAD_REDUCE: v = s->overlap_grad_reduce; break;
    case ARACHNE_OPT_OVERLAP_PARAM_GATHER: v = s->overlap_param_gather; break;
    case ARACHNE_OPT_TP_COMM_OVERLAP: v = s->tp_comm_overlap; break;
    case ARACHNE_OPT_RECOMPUTE_NORM_ACT: v = s->recompute_norm_act; break;
    case ARACHNE_OPT_RECOMPUTE_ALT_MM: v = s->recompute_alt_mm; break;
    case ARACHNE_OPT_CONTEXT_PARALLEL: v = s->context_parallel; break;
    case ARACHNE_OPT_MAX_VP: v = s->max_vp; break;
    case ARACHNE_OPT_EP_HIERARCHICAL: v = s->ep_hierarchical; break;
    case ARACHNE_OPT_EXACT_BATCH: v = s->exact_batch; break;
    case ARACHNE_OPT_STAGE_REVERSAL: v = s->stage_reversal; break;
    case ARACHNE_OPT_PRICED_RESPLIT: v = s->priced_resplit; break;
    case ARACHNE_OPT_STAGE_MOVES: v = s->stage_moves; break;
    case ARACHNE_OPT_STAGE_MAJOR: v = s->stage_major; break;
    case ARACHNE_OPT_FSDP_SEARCH: v = s->fsdp_search; break;
    case ARACHNE_OPT_RECOMPUTE_SEARCH: v = s->recompute_search; break;
    case ARACHNE_OPT_EXACT_DIVISION: v = s->exact_division; break;
    default:
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "cost model: unknown option %d (valid: 0..25)", option);
    }
    *out = v;
    return ARACHNE_OK;
}

double ar_cost_model_flops_per_sample(const arachne_cost_model *cm)
{
    return ((const ar_cost_cache *)cm->cache)->flops_per_sample;
}

/* ---- per-stage time ------------------------------------------------------------ */

int ar_stage_check(const arachne_cost_model *cm, const ar_template *t, int s)
{
    const ar_stage *S = &t->stages[s];
    const ar_cost_cache *c = cm->cache;
    if (S->type < 0 || S->type >= cm->cluster->ntypes)
        return ar_error(ARACHNE_E_INVALID_PLAN, "stage %d: GPU type index %d out of range (cluster has %d types)",
                        s, S->type, cm->cluster->ntypes);
    if (S->tp < 1 || S->tp > AR_MAX_NODE_GPUS)
        return ar_error(ARACHNE_E_INVALID_PLAN, "stage %d: tp %d out of range", s, S->tp);
    if (t->cp < 0 || t->cp > AR_MAX_CP)
        return ar_error(ARACHNE_E_INVALID_PLAN, "cp %d out of range [0, %d]", t->cp, AR_MAX_CP);
    if (t->cp > 1 && cm->setup.seq_len % (2 * t->cp) != 0)
        return ar_error(ARACHNE_E_INVALID_PLAN,
                        "cp %d: the sequence length %d is not divisible by 2 x cp = %d (load-balanced chunks)",
                        t->cp, cm->setup.seq_len, 2 * t->cp);
    if (t->cp > 1 && ar_model_kind_count(cm->model, AR_LAYER_MAMBA) > 0)
        return ar_error(ARACHNE_E_INVALID_PLAN,
                        "cp %d: context parallelism over Mamba layers is not priced (their scan passes state "
                        "along the sequence)", t->cp);
    if (S->first < 0 || S->end < S->first || S->end > c->blocks)
        return ar_error(ARACHNE_E_INVALID_PLAN, "stage %d: layers %d-%d outside the model's %d blocks",
                        s, S->first, S->end, c->blocks);
    if (t->micro_batch < 1) return ar_error(ARACHNE_E_INVALID_PLAN, "micro-batch size %d < 1", t->micro_batch);
    if (c->moe_before[S->end] - c->moe_before[S->first] > 0) {
        long w = (long)t->replicas * ar_stage_gpus(t, s);
        if (S->ep < 1 || S->etp < 1 || S->edp < 1 || (long)S->ep * S->etp * S->edp != w)
            return ar_error(ARACHNE_E_INVALID_PLAN,
                            "stage %d: expert tiling ep %d x etp %d x edp %d does not factor its %ld GPUs "
                            "(replicas x tp x cp)",
                            s, S->ep, S->etp, S->edp, w);
        if (cm->model->experts > 0 && cm->model->experts % S->ep)
            return ar_error(ARACHNE_E_INVALID_PLAN, "stage %d: ep %d does not divide the %d experts", s, S->ep,
                            cm->model->experts);
    }
    return ARACHNE_OK;
}

/* Ring attention (context parallelism, cp > 1) of n layers of stage s,
 * whose profile entry (at the stage's TP, the full sequence) is e and whose
 * attention core is the share frac of the layer's FLOPs.  Every layer's
 * forward passes the K and V blocks of seq / cp tokens around the ring of cp
 * ranks, cp - 1 steps; the backward passes K, V and their gradients dK, dV
 * (twice the bytes).  Megatron-Core / TransformerEngine overlap step i's
 * transfer with step i's attention compute, so only the transfer time above
 * (cp - 1) / cp of the rank's attention time is exposed.  Adds the exposed
 * seconds of forward + backward to *comm and of the forward to *fwd. */
static void cp_ring(const arachne_cost_model *cm, const ar_template *t, int s, const ar_stage_place *pl,
                    double frac, const ar_cost_entry *e, int n, double *comm, double *fwd)
{
    const arachne_model *m = cm->model;
    const ar_stage *S = &t->stages[s];
    const ar_gpu_spec *g = &cm->cluster->types[S->type];
    int cp = ar_tmpl_cp(t), tp = S->tp, inter = pl ? pl->cp_inter : 1;
    double tokens = (double)cm->setup.seq_len / cp * t->micro_batch, per_token, bytes, bw, lat, send_f, attn_f,
           attn_b, exp_f, exp_b;
    if (m->mla) /* MLA: every head carries its own K (nope + rope) and V */
        per_token = (m->heads >= tp ? (double)m->heads / tp : 1.0) * (m->qk_nope_dim + m->qk_rope_dim + m->v_head_dim);
    else
        per_token = 2.0 * (m->kv_heads >= tp ? (double)m->kv_heads / tp : 1.0) * m->head_dim;
    bytes = tokens * per_token * ar_profile_elt_bytes(cm->profile);
    if (inter) {
        bw = ar_cluster_link_bw(cm->cluster, S->type, S->type) * ar_inter_link_eff();
        /* a ring with two ranks on one node passes that node's link too
         * (with NVLink never the slower one; with PCIe often) */
        if (!pl || pl->cp_hop) bw = AR_MIN(bw, g->intra_bw * ar_intra_link_eff(g));
        lat = g->inter_lat;
    } else {
        bw = g->intra_bw * ar_intra_link_eff(g);
        lat = g->intra_lat;
    }
    send_f = (cp - 1) * (bytes / bw + lat);
    attn_f = frac * e->fwd_s / cp;
    attn_b = frac * (e->time_s - e->fwd_s) / cp;
    exp_f = AR_MAX(0.0, send_f - attn_f * (cp - 1) / cp);
    exp_b = AR_MAX(0.0, 2.0 * send_f - attn_b * (cp - 1) / cp);
    *comm += n * (exp_f + exp_b);
    *fwd += n * exp_f;
}

/* Probability that none of a token's top_k experts (drawn without
 * replacement, balanced routing) is among the `held` of E a rank holds. */
static double p_none(double E, double held, int k)
{
    double p = 1.0;
    int i;
    for (i = 0; i < k; i++) {
        if (E - held - i <= 0.0) return 0.0;
        p *= (E - held - i) / (E - i);
    }
    return p;
}

/* One dispatch (or combine) of a stage whose EP group spans nodes, under
 * hierarchical dispatch (DeepEP's normal kernels; ARACHNE_OPT_EP_HIERARCHICAL):
 * a token crosses the network once per remote node that holds one of its
 * experts, then fans out over NVLink to the GPUs of that node holding them.
 * `flat` is the per-expert all-to-all's time, kept when the group fits in
 * one node.  docs/cost-model.md, "Expert all-to-all". */
static double ep_hierarchical_s(const arachne_cost_model *cm, const ar_stage *S, double tokens, double flat)
{
    const arachne_cluster *cl = cm->cluster;
    const ar_gpu_spec *g = &cl->types[S->type];
    const arachne_model *m = cm->model;
    int per_node = AR_MIN(S->ep, AR_MAX(1, cl->type_max_node[S->type])), nodes = (S->ep + per_node - 1) / per_node;
    double E = m->experts, w = ar_model_expert_width(m), d_node, d_gpu, net, nvl;
    if (nodes < 2) return flat;
    d_node = nodes * (1.0 - p_none(E, E / nodes, m->top_k)); /* distinct nodes a token goes to */
    d_gpu = S->ep * (1.0 - p_none(E, E / S->ep, m->top_k));   /* distinct GPUs */
    net = tokens * d_node * (nodes - 1.0) / nodes * w * 2.0;
    nvl = tokens * d_gpu * w * 2.0 * (per_node - 1.0) / per_node;
    return net / ar_cluster_link_bw(cl, S->type, S->type) + nvl / g->intra_bw + (nodes - 1) * g->inter_lat +
           (per_node - 1) * g->intra_lat;
}

int ar_stage_price(const arachne_cost_model *cm, const ar_template *t, int s,
                   const ar_stage_place *pl, ar_stage *st)
{
    int rc;
    if (s < 0 || s >= t->depth) return ar_error(ARACHNE_E_INVALID_PLAN, "stage %d of a %d-stage template", s, t->depth);
    if ((rc = ar_stage_check(cm, t, s)) != ARACHNE_OK) return rc;
    return ar_stage_price_checked(cm, t, s, pl, st);
}

int ar_stage_price_checked(const arachne_cost_model *cm, const ar_template *t, int s,
                           const ar_stage_place *pl, ar_stage *st)
{
    const ar_stage *S = &t->stages[s];
    const ar_cost_cache *c = cm->cache;
    const arachne_cluster *cl = cm->cluster;
    const ar_gpu_spec *g;
    ar_cost_entry tmp, tmp2;
    const ar_cost_entry *e, *e2;
    int rc, b = t->micro_batch, n_moe, i, cp = ar_tmpl_cp(t);
    double compute = 0.0, tpc = 0.0, epc = 0.0, p2p = 0.0, fwd = 0.0, cpc = 0.0, cpf = 0.0;
    g = &cl->types[S->type];
    n_moe = c->moe_before[S->end] - c->moe_before[S->first];
    if (s == 0) {
        if ((rc = ar_cost_entry_get(cm, S->type, AR_LAYER_EMBED, S->tp, b, &tmp, &e)) != ARACHNE_OK) return rc;
        compute += e->time_s;
        tpc += e->tp_comm_s;
        fwd += e->fwd_s + e->tp_fwd_s;
    }
    if (s == t->depth - 1) {
        if ((rc = ar_cost_entry_get(cm, S->type, AR_LAYER_HEAD, S->tp, b, &tmp, &e)) != ARACHNE_OK) return rc;
        compute += e->time_s;
        tpc += e->tp_comm_s;
        fwd += e->fwd_s + e->tp_fwd_s;
    }
    for (i = 0; i < c->nkinds; i++) {
        int k = c->kinds[i], n = ar_stage_kind_n(c, S, k);
        if (n == 0) continue;
        if ((rc = ar_cost_entry_get(cm, S->type, k, S->tp, b, &tmp, &e)) != ARACHNE_OK) return rc;
        if (!ar_kind_routed(k)) {
            compute += n * e->time_s;
            tpc += n * e->tp_comm_s;
            fwd += n * (e->fwd_s + e->tp_fwd_s);
        } else {
            double phi = c->expert_frac[k], share = (double)S->etp / S->tp;
            if (S->etp == S->tp) e2 = e;
            else if ((rc = ar_cost_entry_get(cm, S->type, k, S->etp, b, &tmp2, &e2)) != ARACHNE_OK) return rc;
            /* attention/router/shared part at the stage's TP; routed experts at
             * ETP, scaled to the tokens one GPU really serves (etp/tp of the
             * entry's b x seq tokens under balanced routing) */
            compute += n * ((1.0 - phi) * e->time_s + phi * e2->time_s * share);
            tpc += n * 0.5 * (e->tp_comm_s + e2->tp_comm_s * share);
            fwd += n * ((1.0 - phi) * e->fwd_s + phi * e2->fwd_s * share + 0.5 * (e->tp_fwd_s + e2->tp_fwd_s * share));
        }
        if (cp > 1 && ar_kind_has_attention(k)) cp_ring(cm, t, s, pl, c->attn_frac[k], e, n, &cpc, &cpf);
    }
    if (n_moe > 0 && S->ep > 1) {
        int inter = pl ? pl->ep_inter : 1;
        double bw = inter ? ar_cluster_link_bw(cl, S->type, S->type) : g->intra_bw;
        double lat = inter ? g->inter_lat : g->intra_lat;
        double tokens = (double)cm->setup.seq_len * b / ((double)S->tp * cp);
        double bytes = tokens * cm->model->top_k * ar_model_expert_width(cm->model) * 2.0 * (S->ep - 1) / S->ep;
        double one = bytes / bw + (S->ep - 1) * lat;
        if (inter && cm->setup.ep_hierarchical) one = ep_hierarchical_s(cm, S, tokens, one);
        /* dispatch + combine, forward and backward */
        epc = n_moe * 4.0 * one;
    }
    if (cp > 1) {
        /* each rank of a CP group holds seq / cp tokens of every sequence
         * (2 cp load-balanced chunks under the causal mask): 1/cp of the
         * linear and of the attention FLOPs, and TP collectives over 1/cp
         * of the tokens (docs/cost-model.md, "Context parallelism") */
        compute /= cp;
        tpc /= cp;
        fwd /= cp;
    }
    fwd += 0.5 * epc;  /* dispatch + combine of the forward */
    if (s < t->depth - 1 || (t->vp > 1 && t->depth > 1)) {
        /* interleaved: the last stage sends to the first (the next chunk) */
        const ar_stage *N = &t->stages[(s + 1) % t->depth];
        int inter = pl ? pl->p2p_inter : 1;
        /* the boundary tensor at the profile's precision (2 bytes for BF16) */
        /* with CP each rank sends its own seq / cp tokens, all in parallel */
        double bw, lat, bytes = ar_model_boundary_bytes(cm->model, cm->setup.seq_len, b) *
                                ar_profile_elt_bytes(cm->profile) / 2.0 / cp;
        if (N->type < 0 || N->type >= cl->ntypes)
            return ar_error(ARACHNE_E_INVALID_PLAN, "stage %d: GPU type index %d out of range", s + 1, N->type);
        if (N->type != S->type) inter = 1; /* a node holds one GPU type */
        if (inter) {
            const ar_gpu_spec *h = &cl->types[N->type];
            bw = ar_cluster_link_bw(cl, S->type, N->type);
            lat = g->inter_lat > h->inter_lat ? g->inter_lat : h->inter_lat;
        } else {
            bw = g->intra_bw;
            lat = g->intra_lat;
        }
        /* forward activation out, backward gradient back: one micro-batch each */
        p2p = 2.0 * (bytes / bw + lat);
    }
    /* --tp-comm-overlap: the collectives run under the GEMMs they feed, so
     * only what outlasts the stage's compute stays on the critical path */
    if (cm->setup.tp_comm_overlap) tpc = tpc > compute ? tpc - compute : 0.0;
    /* ring attention's exposed K/V transfers count with the collectives */
    tpc += cpc;
    fwd += cpf;
    st->compute_s = compute;
    st->tp_comm_s = tpc;
    st->ep_comm_s = epc;
    st->p2p_s = p2p;
    st->stage_s = compute + tpc + epc + p2p;
    /* the backward takes the rest, recomputation and its collectives included */
    st->fwd_s = fwd;
    st->bwd_s = compute + tpc + epc - fwd;
    if (st->bwd_s < 0.0) st->bwd_s = 0.0;
    return ARACHNE_OK;
}
