/* plan_sailor.c -- a Sailor plan (its planner's JSON: pipeline_list with
 * [[[gpu, gpus_per_vm, zone]], tp] per replica and stage) turned into a plan
 * of ours on the cost model's cluster, placement included, so Sailor's plan
 * can be priced by our cost model and exported like any other.  Replica r of
 * a Sailor pipeline is the r-th entry of every stage; replicas with the same
 * (GPU type, TP) per stage form one template.  Each TP group is placed on
 * the first node of its type with room (node order), as Sailor gives a VM per
 * group and no placement beyond that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plan.h"

typedef struct sreplica {
    int type[AR_MAX_DEPTH], tp[AR_MAX_DEPTH];
    int tmpl;
} sreplica;

/* One stage's replica entry: [[[gpu, gpus_per_vm, zone], ...], tp]. */
static int read_replica(const arachne_cost_model *cm, const ar_json *e, int p, int s, int r, int *type, int *tp)
{
    const ar_json *vms, *vm;
    if (e->type != AR_JSON_ARRAY || e->count != 2 || e->items[0]->type != AR_JSON_ARRAY ||
        e->items[0]->count < 1 || e->items[1]->type != AR_JSON_NUMBER)
        return ar_json_error_at(e, "pipeline %d stage %d replica %d: expected [[[gpu, gpus_per_vm, zone]], tp]", p, s,
                                r);
    vms = e->items[0];
    vm = vms->items[0];
    if (vm->type != AR_JSON_ARRAY || vm->count < 1 || vm->items[0]->type != AR_JSON_STRING)
        return ar_json_error_at(vm, "pipeline %d stage %d replica %d: expected [gpu, gpus_per_vm, zone]", p, s, r);
    if (vms->count > 1)
        return ar_json_error_at(vms, "pipeline %d stage %d replica %d: a TP group over %zu VMs cannot be placed "
                                "(a TP group stays in one node)", p, s, r, vms->count);
    *type = ar_cluster_type_index(cm->cluster, vm->items[0]->string);
    if (*type < 0)
        return ar_json_error_at(vm->items[0], "pipeline %d stage %d replica %d: GPU type '%s' is not in the cluster",
                                p, s, r, vm->items[0]->string), ARACHNE_E_INVALID_PLAN;
    {
        double t = e->items[1]->number;
        if (!(t >= 1 && t <= AR_MAX_NODE_GPUS) || t != (double)(int)t)
            return ar_json_error_at(e->items[1], "pipeline %d stage %d replica %d: tp: expected 1..%d", p, s, r,
                                    AR_MAX_NODE_GPUS);
        *tp = (int)t;
    }
    return ARACHNE_OK;
}

/* Layer ids of a stage -> blocks [first, end): ids 1..L are blocks 0..L-1,
 * 0 the embedding (first stage), L+1 the head (last stage). */
static int read_layers(const ar_json *ids, int blocks, int p, int s, int depth, int *first, int *end)
{
    size_t i;
    int lo = -1, hi = -1, n = 0;
    if (ids->type != AR_JSON_ARRAY) return ar_json_error_at(ids, "pipeline %d stage %d: layers: expected an array", p, s);
    for (i = 0; i < ids->count; i++) {
        double v = ids->items[i]->number;
        int id;
        if (ids->items[i]->type != AR_JSON_NUMBER || !(v >= 0 && v <= blocks + 1) || v != (double)(int)v)
            return ar_json_error_at(ids->items[i], "pipeline %d stage %d: layer id: expected 0..%d", p, s, blocks + 1);
        id = (int)v;
        if ((id == 0 && s != 0) || (id == blocks + 1 && s != depth - 1))
            return ar_json_error_at(ids->items[i], "pipeline %d stage %d: layer %d (%s) on a %s stage", p, s, id,
                                    id == 0 ? "embedding" : "head", id == 0 ? "later" : "earlier");
        if (id == 0 || id == blocks + 1) continue;
        if (lo < 0) lo = id - 1;
        else if (id - 1 != hi) return ar_json_error_at(ids->items[i], "pipeline %d stage %d: layers not contiguous", p, s);
        hi = id;
        n++;
    }
    if (n == 0) return ar_json_error_at(ids, "pipeline %d stage %d: no transformer block", p, s);
    *first = lo;
    *end = hi;
    return ARACHNE_OK;
}

/* Places every TP group on the first node of its type with room. */
static int place(const arachne_cost_model *cm, arachne_plan *plan)
{
    const arachne_cluster *c = cm->cluster;
    int *used = ar_calloc((size_t)c->nnodes + 1, sizeof *used), i = 0, t, r, s, k, n, rank = 0;
    if (!used) return ARACHNE_E_NO_MEMORY;
    for (t = 0; t < plan->ntemplates; t++) {
        const ar_template *T = &plan->t[t];
        for (r = 0; r < T->replicas; r++)
            for (s = 0; s < T->depth; s++) {
                const ar_stage *S = &T->stages[s];
                for (n = 0; n < c->nnodes; n++)
                    if (c->nodes[n].type == S->type && c->nodes[n].gpus - used[n] >= S->tp) break;
                if (n == c->nnodes) {
                    free(used);
                    return ar_error(ARACHNE_E_INFEASIBLE, "sailor plan: template %d replica %d stage %d: no %s node "
                                    "has %d free GPUs left (the plan needs more GPUs than the cluster has)",
                                    t, r, s, c->types[S->type].name, S->tp);
                }
                for (k = 0; k < S->tp; k++, i++) {
                    ar_rank *R = &plan->ranks[i];
                    R->rank = rank++;
                    R->node = n;
                    R->gpu = used[n]++;
                    R->tmpl = t;
                    R->replica = r;
                    R->stage = s;
                    R->tp_rank = k;
                    R->cp_rank = 0; /* Sailor plans have no context parallelism */
                }
            }
    }
    free(used);
    plan->nranks = i;
    return ARACHNE_OK;
}

static int from_tree(arachne_plan *plan, const arachne_cost_model *cm, const ar_json *root)
{
    const ar_json *list;
    sreplica *reps = NULL;
    long mbs = 1;
    size_t pi;
    int st, nrep = 0, cap = 0, total = 0, i, j, s;
    int blocks = cm->model->blocks;
    if (root->type != AR_JSON_OBJECT) return ar_json_error_at(root, "expected a Sailor plan object");
    if ((st = ar_json_arr(root, "pipeline_list", 1, &list))) return st;
    if ((st = ar_json_int(root, "mbs", 1, 1, 1 << 20, &mbs))) return st;
    if (list->count < 1) return ar_json_error_at(list, "pipeline_list: empty");
    for (pi = 0; pi < list->count; pi++) {
        const ar_json *pl = list->items[pi], *lps, *tps, *dp;
        long depth = 0;
        int first[AR_MAX_DEPTH] = { 0 }, end[AR_MAX_DEPTH] = { 0 }, d, r, replicas = -1;
        if ((st = ar_json_int(pl, "num_stages", 1, 1, AR_MAX_DEPTH, &depth)) ||
            (st = ar_json_arr(pl, "layers_per_stage", 1, &lps)) || (st = ar_json_arr(pl, "tmp_per_stage", 1, &tps)) ||
            (st = ar_json_arr(pl, "dp", 1, &dp)))
            goto done;
        d = (int)depth;
        if ((int)lps->count != d || (int)tps->count != d || (int)dp->count != d) {
            st = ar_json_error_at(pl, "pipeline %zu: layers_per_stage, tmp_per_stage and dp need %d entries", pi, d);
            goto done;
        }
        for (s = 0; s < d; s++) {
            if ((st = read_layers(lps->items[s], blocks, (int)pi, s, d, &first[s], &end[s]))) goto done;
            if (s > 0 && first[s] != end[s - 1]) {
                st = ar_json_error_at(lps->items[s], "pipeline %zu stage %d: starts at block %d, the previous stage "
                                      "ends at %d", pi, s, first[s], end[s - 1]);
                goto done;
            }
            if (tps->items[s]->type != AR_JSON_ARRAY || tps->items[s]->count < 1) {
                st = ar_json_error_at(tps->items[s], "pipeline %zu stage %d: expected a list of replicas", pi, s);
                goto done;
            }
            /* dp[s] is the stage's replica count: it must agree with the
             * replicas listed (it used to be read for its length only) */
            if (dp->items[s]->type != AR_JSON_NUMBER || dp->items[s]->number != (double)tps->items[s]->count) {
                st = ar_json_error_at(dp->items[s], "pipeline %zu stage %d: dp must be %zu, the replicas listed in "
                                      "tmp_per_stage", pi, s, tps->items[s]->count);
                goto done;
            }
            if (replicas < 0) replicas = (int)tps->items[s]->count;
            if ((int)tps->items[s]->count != replicas) {
                st = ar_json_error_at(tps->items[s], "pipeline %zu: stage %d has %zu replicas and stage 0 %d; plans "
                                      "of identical pipelines cannot express that", pi, s, tps->items[s]->count,
                                      replicas);
                goto done;
            }
        }
        if (first[0] != 0 || end[d - 1] != blocks) {
            st = ar_json_error_at(lps, "pipeline %zu: layers cover blocks [%d, %d), the model has %d", pi, first[0],
                                  end[d - 1], blocks);
            goto done;
        }
        for (r = 0; r < replicas; r++) {
            sreplica one;
            memset(&one, 0, sizeof one);
            for (s = 0; s < d; s++)
                if ((st = read_replica(cm, tps->items[s]->items[r], (int)pi, s, r, &one.type[s], &one.tp[s])))
                    goto done;
            /* a template is a (pipeline, per-stage type and TP) class */
            one.tmpl = -1;
            for (i = 0; i < plan->ntemplates && one.tmpl < 0; i++) {
                const ar_template *T = &plan->t[i];
                int same = T->depth == d;
                for (s = 0; same && s < d; s++)
                    same = T->stages[s].type == one.type[s] && T->stages[s].tp == one.tp[s] &&
                           T->stages[s].first == first[s] && T->stages[s].end == end[s];
                if (same) one.tmpl = i;
            }
            if (one.tmpl < 0) {
                ar_template *T;
                if (plan->ntemplates == AR_MAX_TEMPLATES) {
                    st = ar_error(ARACHNE_E_INVALID_PLAN, "sailor plan: more than %d distinct pipelines",
                                  AR_MAX_TEMPLATES);
                    goto done;
                }
                one.tmpl = plan->ntemplates++;
                T = &plan->t[one.tmpl];
                T->depth = d;
                T->micro_batch = (int)mbs;
                for (s = 0; s < d; s++) {
                    T->stages[s].type = one.type[s];
                    T->stages[s].tp = one.tp[s];
                    T->stages[s].first = first[s];
                    T->stages[s].end = end[s];
                    T->stages[s].ep = T->stages[s].etp = 1;
                }
            }
            plan->t[one.tmpl].replicas++;
            for (s = 0; s < d; s++) total += one.tp[s];
            if (nrep == cap) {
                int nc = cap ? 2 * cap : 16;
                sreplica *nr = ar_realloc(reps, (size_t)nc * sizeof *nr);
                if (!nr) { st = ARACHNE_E_NO_MEMORY; goto done; }
                reps = nr;
                cap = nc;
            }
            reps[nrep++] = one;
            if (total > cm->cluster->total_gpus) {
                st = ar_error(ARACHNE_E_INFEASIBLE, "sailor plan: it uses more than the cluster's %d GPUs",
                              cm->cluster->total_gpus);
                goto done;
            }
        }
    }
    for (j = 0; j < plan->ntemplates; j++)
        for (s = 0; s < plan->t[j].depth; s++) plan->t[j].stages[s].edp = plan->t[j].stages[s].tp * plan->t[j].replicas;
    plan->ranks = ar_calloc((size_t)total + 1, sizeof *plan->ranks);
    if (!plan->ranks) { st = ARACHNE_E_NO_MEMORY; goto done; }
    st = place(cm, plan);
done:
    free(reps);
    return st;
}

int arachne_plan_from_sailor(arachne_plan **out, const arachne_cost_model *cm, const char *json, size_t len)
{
    ar_json *root = NULL;
    arachne_plan *p;
    int st;
    if (out) *out = NULL;
    if (!out || !cm || !json)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_from_sailor: NULL %s",
                        !out ? "out" : !cm ? "cost model" : "json");
    if ((st = ar_json_parse(&root, json, len, "<sailor plan>"))) return st;
    p = ar_calloc(1, sizeof *p);
    if (!p) {
        ar_json_free(root);
        return ARACHNE_E_NO_MEMORY;
    }
    st = ar_plan_init(p, cm);
    if (!st) st = from_tree(p, cm, root);
    if (!st) {
        int t;
        /* every micro-batch count is reassigned by pricing; the cover check needs one that fits */
        for (t = 0; t < p->ntemplates; t++)
            p->t[t].micro_batches = (cm->setup.global_batch + p->t[t].micro_batch - 1) / p->t[t].micro_batch;
        st = ar_plan_validate(cm, p);
    }
    if (!st) st = ar_plan_price(cm, p);
    if (!st) {
        snprintf(p->method, sizeof p->method, "%s", "sailor-import");
        st = ar_plan_finish(p);
    }
    ar_json_free(root);
    if (st) {
        arachne_plan_destroy(p);
        return st;
    }
    *out = p;
    return ARACHNE_OK;
}
