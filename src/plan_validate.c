/* plan_validate.c -- structural rules every plan must keep before it is
 * priced: the GPUs it names exist and are used once, TP groups stay inside
 * one node, the ranks are complete, each pipeline covers the model's blocks
 * exactly once, the expert tiling multiplies out, and the micro-batches
 * cover the global batch.  Each failure is ARACHNE_E_INVALID_PLAN with a
 * message naming the template, stage or rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

static int check_templates(const arachne_cost_model *cm, const arachne_plan *p)
{
    const arachne_cluster *c = cm->cluster;
    const arachne_model *m = cm->model;
    long covered = 0;
    int t, s;
    if (p->ntemplates < 1 || p->ntemplates > AR_MAX_TEMPLATES)
        return ar_error(ARACHNE_E_INVALID_PLAN, "plan has %d templates, expected 1..%d", p->ntemplates,
                        AR_MAX_TEMPLATES);
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        if (T->depth < 1 || T->depth > AR_MAX_DEPTH)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: depth %d, expected 1..%d", t, T->depth,
                            AR_MAX_DEPTH);
        if (T->replicas < 1)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: %d replicas, expected at least 1", t, T->replicas);
        if (T->micro_batch < 1)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: micro-batch size %d, expected at least 1", t,
                            T->micro_batch);
        if (T->micro_batches < 0)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: %d micro-batches, expected at least 0", t,
                            T->micro_batches);
        if (T->cp < 0 || T->cp > AR_MAX_CP)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: cp %d, expected 0..%d", t, T->cp, AR_MAX_CP);
        if (T->cp > 1 && cm->setup.seq_len % (2 * T->cp) != 0)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: cp %d needs the sequence length (%d) divisible by "
                            "2 x cp = %d", t, T->cp, cm->setup.seq_len, 2 * T->cp);
        if (T->vp < 0 || T->vp > AR_MAX_VP || (T->vp > 1 && T->depth < 2))
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: vp %d, expected 0..%d (and at least 2 stages "
                            "when above 1)", t, T->vp, AR_MAX_VP);
        for (s = 0; s < T->depth && T->vp > 1; s++)
            if (T->stages[s].end - T->stages[s].first < T->vp)
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: %d layers cannot fill vp %d chunks", t,
                                s, T->stages[s].end - T->stages[s].first, T->vp);
        for (s = 0; s < T->depth; s++) {
            const ar_stage *S = &T->stages[s];
            int want_first = s ? T->stages[s - 1].end : 0;
            long w = (long)ar_stage_gpus(T, s) * T->replicas;
            if (S->type < 0 || S->type >= c->ntypes)
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: GPU type index %d not in the cluster "
                                "(%d types)", t, s, S->type, c->ntypes);
            if (S->tp < 1 || S->tp > c->type_max_node[S->type])
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: TP %d does not fit in a %s node "
                                "(largest has %d GPUs)", t, s, S->tp, c->types[S->type].name,
                                c->type_max_node[S->type]);
            if (S->first != want_first) {
                if (S->first > want_first)
                    return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: layers [%d, %d) leave blocks "
                                    "[%d, %d) uncovered (gap)", t, s, S->first, S->end, want_first, S->first);
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: layers [%d, %d) overlap the "
                                "previous stage, which ends at block %d", t, s, S->first, S->end, want_first);
            }
            if (S->end <= S->first)
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: layers [%d, %d) hold no block", t, s,
                                S->first, S->end);
            if (S->end > m->blocks)
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: layers [%d, %d) run past the "
                                "model's %d blocks (%s)", t, s, S->first, S->end, m->blocks, m->name);
            if (S->ep < 1 || S->etp < 1 || S->edp < 1 || (long)S->ep * S->etp * S->edp != w)
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: expert tiling ep %d x etp %d x edp %d "
                                "does not equal the stage's %ld GPUs (TP %d x CP %d x %d replicas)", t, s, S->ep,
                                S->etp, S->edp, w, S->tp, ar_tmpl_cp(T), T->replicas);
            if (S->ep > 1 && (m->experts < 1 || m->experts % S->ep != 0))
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: EP %d does not divide the model's %d "
                                "experts", t, s, S->ep, m->experts);
        }
        if (T->stages[T->depth - 1].end != m->blocks)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d: layers end at block %d but %s has %d "
                            "blocks (the pipeline must cover every block)", t, T->depth - 1,
                            T->stages[T->depth - 1].end, m->name, m->blocks);
        covered += (long)T->replicas * T->micro_batch * T->micro_batches;
    }
    if (covered < p->setup.global_batch)
        return ar_error(ARACHNE_E_INVALID_PLAN, "micro-batches cover %ld samples (sum of replicas x micro_batch x "
                        "micro_batches over templates), less than the global batch %d", covered,
                        p->setup.global_batch);
    return ARACHNE_OK;
}

typedef struct vstate {
    int *node_off;     /* nnodes + 1: first flat GPU index of each node */
    int *gpu_owner;    /* flat GPU -> rank index + 1 (0 = free) */
    int *rank_owner;   /* global rank -> rank index + 1 */
    int *slot_owner;   /* (template, replica, stage, tp_rank) -> rank index + 1 */
    int *group_node;   /* (template, replica, stage) -> node + 1 */
    int slot_off[AR_MAX_TEMPLATES + 1], group_off[AR_MAX_TEMPLATES + 1];
    int stage_off[AR_MAX_TEMPLATES][AR_MAX_DEPTH + 1]; /* prefix sums of TP along a template */
} vstate;

static void vstate_free(vstate *v)
{
    free(v->node_off);
    free(v->gpu_owner);
    free(v->rank_owner);
    free(v->slot_owner);
    free(v->group_node);
}

static int check_ranks(const arachne_cost_model *cm, const arachne_plan *p, vstate *v)
{
    const arachne_cluster *c = cm->cluster;
    long slots = 0, groups = 0, flat = 0;
    int t, s, i, n;
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *T = &p->t[t];
        long count = 0;
        v->slot_off[t] = (int)slots;
        v->group_off[t] = (int)groups;
        v->stage_off[t][0] = 0;
        for (s = 0; s < T->depth; s++) v->stage_off[t][s + 1] = v->stage_off[t][s] + ar_stage_gpus(T, s);
        for (i = 0; i < p->nranks; i++) count += p->ranks[i].tmpl == t;
        if (count != (long)T->replicas * v->stage_off[t][T->depth])
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: %ld ranks, expected %ld (%d replicas x %d GPUs "
                            "per pipeline)", t, count, (long)T->replicas * v->stage_off[t][T->depth], T->replicas,
                            v->stage_off[t][T->depth]);
        slots += (long)T->replicas * v->stage_off[t][T->depth];
        groups += (long)T->replicas * T->depth * ar_tmpl_cp(T);
        if (slots > c->total_gpus)
            return ar_error(ARACHNE_E_INVALID_PLAN, "templates 0..%d need %ld GPUs, the cluster has %d", t, slots,
                            c->total_gpus);
    }
    v->slot_off[p->ntemplates] = (int)slots;
    v->group_off[p->ntemplates] = (int)groups;
    if (p->nranks != slots)
        return ar_error(ARACHNE_E_INVALID_PLAN, "plan lists %d ranks, its templates need %ld", p->nranks, slots);

    v->node_off = ar_calloc((size_t)c->nnodes + 1, sizeof *v->node_off);
    v->gpu_owner = ar_calloc((size_t)c->total_gpus + 1, sizeof *v->gpu_owner);
    v->rank_owner = ar_calloc((size_t)p->nranks + 1, sizeof *v->rank_owner);
    v->slot_owner = ar_calloc((size_t)slots + 1, sizeof *v->slot_owner);
    v->group_node = ar_calloc((size_t)groups + 1, sizeof *v->group_node);
    if (!v->node_off || !v->gpu_owner || !v->rank_owner || !v->slot_owner || !v->group_node)
        return ARACHNE_E_NO_MEMORY;
    for (n = 0; n < c->nnodes; n++) {
        v->node_off[n] = (int)flat;
        flat += c->nodes[n].gpus;
    }
    v->node_off[c->nnodes] = (int)flat;

    for (i = 0; i < p->nranks; i++) {
        const ar_rank *R = &p->ranks[i];
        const ar_template *T;
        const ar_stage *S;
        int slot, group, g;
        if (R->tmpl < 0 || R->tmpl >= p->ntemplates)
            return ar_error(ARACHNE_E_INVALID_PLAN, "rank %d: template %d out of range [0, %d)", R->rank, R->tmpl,
                            p->ntemplates);
        T = &p->t[R->tmpl];
        if (R->rank < 0 || R->rank >= p->nranks)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: rank %d out of range [0, %d)", R->tmpl, R->rank,
                            p->nranks);
        if (v->rank_owner[R->rank])
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d: global rank %d listed twice", R->tmpl, R->rank);
        v->rank_owner[R->rank] = i + 1;
        if (R->replica < 0 || R->replica >= T->replicas)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d rank %d: replica %d out of range [0, %d)", R->tmpl,
                            R->rank, R->replica, T->replicas);
        if (R->stage < 0 || R->stage >= T->depth)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d rank %d: stage %d out of range [0, %d)", R->tmpl,
                            R->rank, R->stage, T->depth);
        S = &T->stages[R->stage];
        if (R->tp_rank < 0 || R->tp_rank >= S->tp)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d rank %d: tp_rank %d out of range [0, %d)",
                            R->tmpl, R->stage, R->rank, R->tp_rank, S->tp);
        if (R->cp_rank < 0 || R->cp_rank >= ar_tmpl_cp(T))
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d rank %d: cp_rank %d out of range [0, %d)",
                            R->tmpl, R->stage, R->rank, R->cp_rank, ar_tmpl_cp(T));
        if (R->node < 0 || R->node >= c->nnodes)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d rank %d: node %d out of range [0, %d)",
                            R->tmpl, R->stage, R->rank, R->node, c->nnodes);
        if (R->gpu < 0 || R->gpu >= c->nodes[R->node].gpus)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d rank %d: GPU %d out of range on node %d, "
                            "which has %d GPUs", R->tmpl, R->stage, R->rank, R->gpu, R->node,
                            c->nodes[R->node].gpus);
        if (c->nodes[R->node].type != S->type)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d rank %d: node %d holds %s GPUs, the stage "
                            "runs on %s", R->tmpl, R->stage, R->rank, R->node,
                            c->types[c->nodes[R->node].type].name, c->types[S->type].name);
        g = v->node_off[R->node] + R->gpu;
        if (v->gpu_owner[g])
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d rank %d: node %d GPU %d is already used by "
                            "rank %d", R->tmpl, R->stage, R->rank, R->node, R->gpu,
                            p->ranks[v->gpu_owner[g] - 1].rank);
        v->gpu_owner[g] = i + 1;
        slot = v->slot_off[R->tmpl] + R->replica * v->stage_off[R->tmpl][T->depth] +
               v->stage_off[R->tmpl][R->stage] + R->cp_rank * S->tp + R->tp_rank;
        if (v->slot_owner[slot]) {
            char cps[24] = "";
            if (T->cp > 1) snprintf(cps, sizeof cps, " cp_rank %d", R->cp_rank);
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d rank %d: replica %d tp_rank %d%s is "
                            "already held by rank %d", R->tmpl, R->stage, R->rank, R->replica, R->tp_rank, cps,
                            p->ranks[v->slot_owner[slot] - 1].rank);
        }
        v->slot_owner[slot] = i + 1;
        /* one TP group per (replica, stage, CP rank): inside one node */
        group = v->group_off[R->tmpl] + (R->replica * T->depth + R->stage) * ar_tmpl_cp(T) + R->cp_rank;
        if (!v->group_node[group]) v->group_node[group] = R->node + 1;
        else if (v->group_node[group] != R->node + 1)
            return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d rank %d: TP group of replica %d crosses "
                            "nodes (node %d and node %d)", R->tmpl, R->stage, R->rank, R->replica,
                            v->group_node[group] - 1, R->node);
    }
    return ARACHNE_OK;
}

int ar_plan_check_type_names(const arachne_cost_model *cm, const arachne_plan *p)
{
    const arachne_cluster *c = cm->cluster;
    int t, s;
    for (t = 0; t < p->ntemplates && t < AR_MAX_TEMPLATES; t++)
        for (s = 0; s < p->t[t].depth && s < AR_MAX_DEPTH; s++) {
            int k = p->t[t].stages[s].type;
            if (k < 0 || k >= p->ntypes || k >= AR_MAX_TYPES || k >= c->ntypes || !p->type_names[k][0]) continue;
            if (strcmp(p->type_names[k], c->types[k].name) != 0)
                return ar_error(ARACHNE_E_INVALID_PLAN, "template %d stage %d runs on %s, but this cost model's "
                                "cluster lists %s in its place (GPU type %d): the plan was made for cluster '%s'; "
                                "read it from its JSON to place it on this one", t, s, p->type_names[k],
                                c->types[k].name, k, p->cluster_spec ? p->cluster_spec : "?");
        }
    return ARACHNE_OK;
}

int ar_plan_validate(const arachne_cost_model *cm, const arachne_plan *p)
{
    vstate v;
    int st;
    if (!cm || !p || !cm->cluster || !cm->model)
        return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan validate: NULL plan or incomplete cost model");
    if ((st = check_templates(cm, p))) return st;
    if ((st = ar_plan_check_type_names(cm, p))) return st;
    memset(&v, 0, sizeof v);
    st = check_ranks(cm, p, &v);
    vstate_free(&v);
    return st;
}
