/* plan_exact.c -- a plan that runs S > B samples per iteration made to run
 * B exactly at the same speed where its structure allows: the cost model's
 * division gives every replica of a template the same micro-batch count,
 * so when S - B is a sum of k_j replica steps (k_j < r_j replicas of
 * template j running one micro-batch step fewer), template j is split in
 * two templates of the same structure, r_j - k_j replicas and k_j
 * replicas; the division then runs them at m_j and m_j - 1 steps, the
 * slowest replica and so the iteration unchanged.  When m_j is one step,
 * the k_j replicas are dropped instead (their GPUs go free).  The plan
 * after the split is repriced and kept only when it ranks higher
 * (ar_plan_rank).  docs/search.md, "Which plan wins". */
#include <math.h>
#include <stdlib.h>

#include "plan.h"

/* largest surplus (samples) the split is searched for */
#define EXACT_SPLIT_MAX 16384

/* Samples one replica of template t stops running when it runs one
 * division step fewer: an interleaved template takes micro-batches in
 * groups of its depth. */
static long step_samples(const ar_template *t)
{
    return (long)t->micro_batch * (t->vp > 1 && t->depth > 1 ? t->depth : 1);
}

/* Replicas of template t that move together: an expert group (EP x ETP
 * GPUs) or an FSDP group (fsdp consecutive replicas) may span replicas,
 * and both parts of a split must hold whole groups; the least count g with
 * g x a replica's GPUs a multiple of EP x ETP in every stage, and g a
 * multiple of the FSDP group (the template's replica count is one). */
static long split_grain(const ar_template *t)
{
    long g = t->fsdp > 1 ? t->fsdp : 1;
    int s;
    for (s = 0; s < t->depth; s++) {
        long grp = (long)t->stages[s].ep * t->stages[s].etp, need = grp / ar_gcd(ar_stage_gpus(t, s), grp);
        g = g / ar_gcd(g, need) * need;
    }
    return g;
}

/* Most grains of template t that may run one step fewer (all but one);
 * 0 when the template cannot be split (one FSDP group holds all of its
 * replicas, or an expert group does). */
static int split_cap(const ar_template *t, long grain)
{
    if (t->micro_batches < 1 || t->replicas % grain) return 0;
    return (int)(t->replicas / grain) - 1;
}

/* k[j] in [0, cap[j]] with sum k[j] * w[j] = D: bounded knapsack by the
 * least count of each item (cnt[j][s]: the fewest items j that reach s
 * from a sum reachable with the items before; -1: none).  Returns 1 when
 * found. */
static int split_counts(int n, const long *w, const int *cap, long D, int *k)
{
    int *cnt = malloc((size_t)n * (size_t)(D + 1) * sizeof *cnt), j, found;
    long s;
    if (!cnt) return 0;
    for (j = 0; j < n; j++) {
        int *c = cnt + (size_t)j * (size_t)(D + 1);
        const int *prev = j ? cnt + (size_t)(j - 1) * (size_t)(D + 1) : NULL;
        for (s = 0; s <= D; s++) {
            if (prev ? prev[s] >= 0 : s == 0) c[s] = 0;
            else if (w[j] > 0 && s >= w[j] && c[s - w[j]] >= 0 && c[s - w[j]] < cap[j]) c[s] = c[s - w[j]] + 1;
            else c[s] = -1;
        }
    }
    found = cnt[(size_t)(n - 1) * (size_t)(D + 1) + (size_t)D] >= 0;
    if (found) {
        s = D;
        for (j = n - 1; j >= 0; j--) {
            k[j] = cnt[(size_t)j * (size_t)(D + 1) + (size_t)s];
            s -= k[j] * w[j];
        }
    }
    free(cnt);
    return found;
}

/* Division steps of template t: micro-batches, in groups of its depth when
 * it is interleaved. */
static int steps_of(const ar_template *t)
{
    return t->micro_batches / (t->vp > 1 && t->depth > 1 ? t->depth : 1);
}

/* Moves the last k replicas of template j of q into a new template j + 1
 * (same structure), or drops them when `drop`.  Rank numbers keep their
 * order (template by template, replica by replica); dropped ranks leave
 * and the rest are renumbered densely. */
static void split_template(arachne_plan *q, int j, int k, int drop)
{
    ar_template *t = &q->t[j];
    int keep = t->replicas - k, r, n = 0, i, s;
    if (!drop) {
        for (i = q->ntemplates; i > j + 1; i--) ar_template_copy(&q->t[i], &q->t[i - 1]);
        ar_template_copy(&q->t[j + 1], t);
        q->t[j + 1].replicas = k;
        q->ntemplates++;
        for (s = 0; s < t->depth; s++) {
            q->t[j + 1].stages[s].edp = (int)((long)ar_stage_gpus(t, s) * k / (t->stages[s].ep * t->stages[s].etp));
            t->stages[s].edp = (int)((long)ar_stage_gpus(t, s) * keep / (t->stages[s].ep * t->stages[s].etp));
        }
    } else {
        for (s = 0; s < t->depth; s++)
            t->stages[s].edp = (int)((long)ar_stage_gpus(t, s) * keep / (t->stages[s].ep * t->stages[s].etp));
    }
    t->replicas = keep;
    for (r = 0; r < q->nranks; r++) {
        ar_rank *R = &q->ranks[r];
        if (R->tmpl > j && !drop) R->tmpl++;
        else if (R->tmpl == j && R->replica >= keep) {
            if (drop) continue;
            R->tmpl = j + 1;
            R->replica -= keep;
        }
        q->ranks[n++] = *R;
    }
    if (n < q->nranks) { /* dense numbering in the old order */
        q->nranks = n;
        qsort(q->ranks, (size_t)n, sizeof *q->ranks, ar_rank_cmp);
        for (i = 0; i < n; i++) q->ranks[i].rank = i;
    }
}

int ar_plan_split_exact(const arachne_cost_model *cm, const arachne_plan *p, arachne_plan *q)
{
    long w[AR_MAX_TEMPLATES], grain[AR_MAX_TEMPLATES], D = ar_plan_samples_run(p) - p->setup.global_batch;
    int cap[AR_MAX_TEMPLATES], k[AR_MAX_TEMPLATES], j, splits = 0, n = p->ntemplates;
    if (!cm->setup.exact_batch || !p->setup.exact_batch || D <= 0 || D > EXACT_SPLIT_MAX || n < 1) return 0;
    for (j = 0; j < n; j++) {
        grain[j] = split_grain(&p->t[j]);
        w[j] = step_samples(&p->t[j]) * grain[j];
        cap[j] = steps_of(&p->t[j]) >= 1 ? split_cap(&p->t[j], grain[j]) : 0;
    }
    if (!split_counts(n, w, cap, D, k)) return 0;
    for (j = 0; j < n; j++) splits += k[j] > 0 && steps_of(&p->t[j]) > 1;
    if (n + splits > AR_MAX_TEMPLATES) return 0;
    if (ar_plan_copy(q, p) != ARACHNE_OK) {
        arachne_clear_error(); /* out of memory: the plan stays as it is */
        return 0;
    }
    for (j = n - 1; j >= 0; j--)
        if (k[j] > 0) split_template(q, j, (int)(k[j] * grain[j]), steps_of(&p->t[j]) <= 1);
    if (ar_plan_validate(cm, q) != ARACHNE_OK || ar_plan_price(cm, q) != ARACHNE_OK ||
        ar_plan_samples_run(q) != q->setup.global_batch || !(ar_plan_rank(q) > ar_plan_rank(p))) {
        arachne_clear_error();
        return 0;
    }
    return 1;
}

const arachne_plan *ar_plan_keep_form(const arachne_cost_model *cm, const arachne_plan *p, double bar,
                                      arachne_plan *scratch)
{
    if (!scratch || !(ar_plan_rank(p) < p->iter_per_s) || !(p->iter_per_s > bar)) return p;
    return ar_plan_split_exact(cm, p, scratch) ? scratch : p;
}

int ar_plan_keep_better(const arachne_cost_model *cm, const arachne_plan *p, arachne_plan *best, int *have,
                        arachne_plan *scratch, int *kept)
{
    int st;
    *kept = 0;
    p = ar_plan_keep_form(cm, p, *have ? ar_plan_rank(best) : -HUGE_VAL, scratch);
    if (*have && !(ar_plan_rank(p) > ar_plan_rank(best))) return ARACHNE_OK;
    if ((st = ar_plan_copy(best, p))) return st;
    *have = 1;
    *kept = 1;
    return ARACHNE_OK;
}
