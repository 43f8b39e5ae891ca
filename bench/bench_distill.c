/* bench_distill.c -- can greedy decoding learn, from many compositions,
 * the choices rollout decoding makes?  (docs/experiments.md, "Distillation
 * experiment")
 *
 * Rollout decoding (arachne_plan_rollout) corrects the policy's greedy
 * choices with the cost model and lands well above greedy decoding.
 * Imitating its choices in training (ROLLOUT_INTERVAL) on the 128
 * training compositions did not carry over to the validation draw, and a
 * training run on many more compositions does not fit the make-policy
 * budget.  This bench asks the question without the reinforcement part:
 * it labels every composition of the configs with the rollout decoding of
 * the starting policy (its whole choice sequence, recorded with the inputs
 * the policy saw), holds out every K-th pair of compositions (the drawn
 * sets alternate dense and MoE), and fits the policy
 * to the others' labels by behaviour cloning (the negative
 * log-likelihood of each label's choices, mini-batches, Adam with the
 * gradient norm clipped to 1).  Each variant (epochs:learning-rate) starts
 * from the same file, or with @HxL from a fresh network of H units and L
 * backbone layers (initial weights from --seed): is a student short of
 * capacity, or of inputs?  For the trained and the held-out compositions it
 * prints the geometric means of the greedy construction's iter/s before
 * training over the label, after over before, and after over the label
 * (all, dense, MoE), and the labels' negative log-likelihood per decision
 * under the trained policy (nats).  The greedy construction is the policy's greedy
 * choices through the construction, without arachne_plan_build's
 * finishing passes: the same path the labels were built on.
 *
 * Deterministic for any thread count: labels come from single-threaded
 * rollout decoding, the mini-batch order from --seed, and each
 * mini-batch's gradient is summed over AR_DISTILL_CHUNKS fixed chunks in
 * chunk order.  Built with OpenMP (make build/omp/bench_distill) the
 * compositions are labelled in parallel.
 *
 * With --dagger R each variant goes on for R rounds of DAgger (Ross,
 * Gordon and Bagnell 2011): the fitted student's own greedy construction
 * of every trained composition is relabelled by the teacher, decision by
 * decision (the choice rollout decoding of the starting policy would take
 * in the state the student reached: ar_policy_rollout_relabel), the
 * relabelled constructions join the labels, and the student is fitted
 * again on all of them.  Behaviour cloning sees only the states of the
 * teacher's own constructions; after one wrong choice the student is in
 * states no label covers.  The table is printed after every round.
 * Round r fits on r + 1 labels per composition; --dagger-same-steps gives
 * it 1/(r + 1) of the variant's epochs, so that every round takes as many
 * gradient steps as the first.  --out-each PREFIX saves the last variant's
 * policy after every round as PREFIX-dR.arpol, and variant K's before it
 * as PREFIX-vK-dR.arpol.
 *
 * With --soft TAU the fit imitates the teacher's values rather than its
 * choices (cost-sensitive imitation, as in Ross and Bagnell's AggreVaTe):
 * rollout decoding prices the greedy completion of every allowed choice
 * it weighs, and each decision's target is q_k proportional to
 * (v_k / v_best)^(1/TAU) over those choices (soft_plan_grad).  Choices the
 * teacher values alike then share the target instead of the first index
 * taking it all; the negative log-likelihood column stays the teacher's
 * own choice's.  TAU 0 (the default): one-hot labels, as before; a
 * variant's own :TAU overrides --soft for it.
 *
 * With --regret nothing is fitted: the starting policy's greedy
 * construction of every composition is weighed by its own rollout
 * decoding (every other allowed choice of each decision completed
 * greedily), and a table by kind of decision (width, the first template's
 * depth, a later depth or STOP, GPU type, TP) says how often another
 * choice completes over 1 % better, the mean loss, at which kind each
 * composition first loses, and what the best single change would gain:
 * where greedy loses (docs/experiments.md, "Where greedy loses, by
 * decision").  --evaluations caps the fills per composition as for the
 * labels (the decisions after the cap are not weighed).
 *
 * With --margins nothing is fitted either: the starting policy's greedy
 * construction of every composition, and at the first template's width
 * and depth how many choices were allowed, the probability of greedy's
 * choice and its lead over the second most probable; a table of their
 * medians by population, and the share of decisions led by less than
 * 0.05: how sure greedy is where it loses most (docs/experiments.md,
 * "In-sample").
 *
 * --evaluations caps the fills rollout decoding spends per composition
 * (0: no cap); past it the starting policy decides the rest.  The first
 * line of the output counts the compositions whose labels (or weighings)
 * stopped at the cap, so a label set that is partly the policy's own
 * choices shows as such.
 *
 * Usage: bench_distill [--config EVAL.json]... [--policy FILE]
 *                      [--evaluations N] [--variants E:LR[:TAU][@HxL][,...]]
 *                      [--batch N] [--holdout K] [--holdout-below M]
 *                      [--seed S] [--out FILE] [--dagger R]
 *                      [--dagger-same-steps] [--out-each PREFIX] [--soft TAU]
 *                      [--regret | --margins]
 * (defaults: examples/eval/quick.json, the bundled policy, 2000, "5:0.001",
 * 32, 8, all, 1, no file, 0, 0; --out saves the last variant's policy). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "bench_stats.h"
#include "construct.h"
#include "eval.h"
#include "nn.h"
#include "plan.h"
#include "policy.h"
#include "policy_state.h"
#include "train.h"
#include "util.h"

#define AR_DISTILL_CHUNKS 8
#define MAX_VARIANTS 16
#define REGRET_KINDS 5 /* width, first template's depth, a later depth or STOP, GPU type, TP */

typedef struct item {
    ar_eval_comp comp;
    ar_eval_env env;
    ar_sil_plan label;
    float *values;                 /* --soft: the teacher's values of the label's choices (rows of AR_MAX_CHOICES) */
    ar_sil_plan *extra;            /* DAgger: the student's constructions relabelled by the teacher */
    float **extra_values;          /* --soft: the teacher's values of each extra label's choices */
    int nextra;
    int moe, held_out, status;     /* status ARACHNE_OK: labelled */
    int cut;                       /* the label (--regret: the weighing) stopped at the --evaluations cap */
    int dagger_status;             /* the last DAgger round's relabelling */
    char err[256];                 /* arachne_last_error() of a failed label (the worker's thread) */
    double before, rollout, after; /* greedy before, label, greedy after (iter/s) */
    double nll;                    /* the label's negative log-likelihood under the trained policy (nats) */
    struct {                       /* --regret: the policy's own greedy path as its rollout decoding sees it */
        int n[REGRET_KINDS];       /* decisions weighed, by kind */
        int lost[REGRET_KINDS];    /* of those, where another choice completes over 1 % better */
        double sum[REGRET_KINDS];  /* sum of log(best completion / greedy's) */
        int first;                 /* kind of the first decision that loses over 1 %; -1: none */
        double first_gain, best_gain; /* that decision's completion ratio, and the largest one */
    } regret;
    struct {                       /* --margins: how sure greedy is at the first template's width and depth */
        int nallowed[2];           /* allowed choices (0: the decision was not reached) */
        double top[2], margin[2];  /* the argmax's probability, and its lead over the second choice */
    } margins;
} item;

typedef struct variant {
    int epochs;
    double lr;
    double soft; /* tau of the soft targets; 0: one-hot labels; -1: --soft's */
    int hidden, layers; /* @HxL: a fresh student of that backbone (init seed --seed); 0: the starting file */
} variant;

/* What one construction through pol needs: the builder, the plan it
 * builds and pol's decision source (recording: the source keeps the
 * inputs pol saw at each choice). */
typedef struct construction {
    ar_builder b;
    ar_policy_src s;
    arachne_plan p;
} construction;

static void construction_close(construction *c)
{
    ar_policy_src_free(&c->s);
    ar_plan_clear(&c->p);
    ar_builder_free(&c->b);
}

/* Sets c up for a construction on cm; on failure nothing is left to free. */
static int construction_open(construction *c, const arachne_policy *pol, const arachne_cost_model *cm,
                             int recording)
{
    ar_construct_opts o;
    int st;
    ar_policy_construct_opts(&o);
    ar_plan_empty(&c->p);
    if ((st = ar_builder_init(&c->b, cm, &o))) return st;
    if ((st = ar_policy_src_init(&c->s, pol->nn, cm, 0, 1, recording))) construction_close(c);
    return st;
}

/* The policy's greedy construction on cm, its choices logged into
 * choices[0..*n) (room for AR_POLICY_MAX_DECISIONS) and its iter/s into
 * *iter_per_s.  The construction's status. */
static int greedy_choices(const arachne_policy *pol, const arachne_cost_model *cm, int *choices, int *n,
                          double *iter_per_s)
{
    construction c;
    ar_policy_script sc;
    int st;
    *n = 0;
    *iter_per_s = 0.0;
    if ((st = construction_open(&c, pol, cm, 0))) return st;
    memset(&sc, 0, sizeof sc);
    sc.src = &c.s;
    sc.taken = choices;
    sc.cap_taken = AR_POLICY_MAX_DECISIONS;
    if (!(st = ar_builder_run(&c.b, ar_policy_script_decide, &sc, &c.p, NULL))) {
        *n = sc.ntaken;
        *iter_per_s = c.p.iter_per_s;
    }
    construction_close(&c);
    return st;
}

/* The greedy construction's iter/s, 0 when no plan. */
static double greedy_iter_per_s(const arachne_policy *pol, const arachne_cost_model *cm)
{
    int choices[AR_POLICY_MAX_DECISIONS], n;
    double r;
    return greedy_choices(pol, cm, choices, &n, &r) ? 0.0 : r;
}

/* choices[0..n) built through pol's recording source: the inputs pol saw
 * at each choice into *out, the plan's iter/s into *iter_per_s. */
static int record(const arachne_policy *pol, const arachne_cost_model *cm, const int *choices, int n,
                  ar_sil_plan *out, double *iter_per_s)
{
    construction c;
    int st;
    if ((st = construction_open(&c, pol, cm, 1))) return st;
    if (!(st = ar_sil_record_choices(&c.b, &c.s, choices, n, &c.p, out))) *iter_per_s = c.p.iter_per_s;
    construction_close(&c);
    return st;
}

/* The negative log-likelihood of it's label under pol (nats; -1 when out
 * of memory or the network refuses a decision). */
static double label_nll(const arachne_policy *pol, const item *it)
{
    double *scratch = calloc(ar_nn_param_count(pol->nn), sizeof *scratch), nll = 0.0;
    ar_nn_ws *ws = NULL;
    if (!scratch || ar_nn_ws_create(&ws, pol->nn) || ar_sil_plan_grad(pol->nn, ws, &it->label, 0.0, scratch, &nll))
        nll = -1.0;
    ar_nn_ws_destroy(ws);
    free(scratch);
    return nll;
}

/* The teacher's values of decisions [0, n) (rows of AR_MAX_CHOICES) as a
 * new float array in *out; NULL when values is NULL. */
static int keep_values(const double *values, int n, float **out)
{
    size_t i, len = (size_t)n * AR_MAX_CHOICES;
    *out = NULL;
    if (!values) return ARACHNE_OK;
    if (!(*out = malloc((len ? len : 1) * sizeof **out))) return ARACHNE_E_NO_MEMORY;
    for (i = 0; i < len; i++) (*out)[i] = (float)values[i];
    return ARACHNE_OK;
}

/* Room for the teacher's values of a whole construction, or NULL when
 * they are not wanted (hard labels). */
static double *values_buffer(double soft)
{
    return soft > 0 ? malloc((size_t)AR_POLICY_MAX_DECISIONS * AR_MAX_CHOICES * sizeof(double)) : NULL;
}

/* How many items' labels (or weighings) stopped at the --evaluations cap.
 * Rollout decoding of a large cluster needs far more fills than a small
 * one's (26,398 for the 16,384-GPU bench_plan cluster), so a cap sized for
 * small clusters leaves a large one's later decisions to the policy. */
static int count_cut(const item *its, int nit)
{
    int i, n = 0;
    for (i = 0; i < nit; i++) n += its[i].status == ARACHNE_OK && its[i].cut;
    return n;
}

/* "N fills of lookahead at most", or "no cap on the fills" for 0. */
static const char *cap_text(long evaluations, char *buf, size_t size)
{
    if (evaluations > 0) snprintf(buf, size, "%ld fills of lookahead at most", evaluations);
    else snprintf(buf, size, "no cap on the fills");
    return buf;
}

/* Labels one composition: rollout decoding's choices, recorded (with
 * --soft, the values the teacher gave every choice it weighed). */
static int label_one(const arachne_policy *pol, item *it, long evaluations, double soft)
{
    int choices[AR_POLICY_MAX_DECISIONS], n = 0, st;
    long fills = 0;
    ar_construct_opts o;
    double *values = values_buffer(soft);
    if (soft > 0 && !values) return ARACHNE_E_NO_MEMORY;
    ar_policy_construct_opts(&o);
    /* once the cap is spent the policy decides the rest: those choices
     * are the starting file's own, not the teacher's */
    st = ar_policy_rollout_choices(pol, it->env.cm, &o, evaluations, choices, AR_POLICY_MAX_DECISIONS, &n, &fills,
                                   &it->cut, values);
    if (!st) st = record(pol, it->env.cm, choices, n, &it->label, &it->rollout);
    if (!st) st = keep_values(values, it->label.ndec, &it->values);
    free(values);
    return st;
}

/* The student's greedy construction on cm (choices[0..*n)) as the teacher
 * sees it: every decision relabelled by the teacher's rollout decoding
 * (labels[0..*nl), at most `evaluations` fills; with values non-NULL, the
 * teacher's values of every choice it weighed, rows of AR_MAX_CHOICES) and
 * recorded with the inputs the student saw into *rec (left empty when
 * *nl is 0).  A student that places nothing gives *n = *nl = 0. */
static int relabel_greedy(const arachne_policy *teacher, const arachne_policy *student, const arachne_cost_model *cm,
                          long evaluations, int *choices, int *n, int *labels, int *nl, double *values,
                          ar_sil_plan *rec)
{
    long fills = 0;
    double thr;
    ar_construct_opts o;
    int st;
    memset(rec, 0, sizeof *rec);
    *nl = 0;
    ar_policy_construct_opts(&o);
    st = greedy_choices(student, cm, choices, n, &thr);
    if (st == ARACHNE_E_INFEASIBLE) st = ARACHNE_OK, *n = 0; /* the student placed nothing */
    else if (!st) st = ar_policy_rollout_relabel(teacher, cm, &o, evaluations, choices, *n, labels, nl, &fills, values);
    if (!st && *nl > 0) st = record(student, cm, choices, *n, rec, &thr);
    if (st) ar_sil_plan_free(rec);
    return st;
}

/* One DAgger round for one item: the student's greedy construction,
 * every decision relabelled with the teacher's rollout decoding
 * (relabel_greedy), recorded with the inputs the student saw and added to
 * the item's extra labels. */
static int dagger_one(const arachne_policy *teacher, const arachne_policy *student, item *it, long evaluations,
                      double soft)
{
    int choices[AR_POLICY_MAX_DECISIONS], labels[AR_POLICY_MAX_DECISIONS], n, nl = 0, i, st;
    double *values = values_buffer(soft);
    float *kept = NULL, **vgrown;
    ar_sil_plan rec, *grown;
    if (soft > 0 && !values) return ARACHNE_E_NO_MEMORY;
    st = relabel_greedy(teacher, student, it->env.cm, evaluations, choices, &n, labels, &nl, values, &rec);
    it->cut = !st && nl < n;
    if (!st && nl > 0) st = keep_values(values, nl, &kept);
    free(values);
    if (st || nl == 0) {
        ar_sil_plan_free(&rec);
        return st;
    }
    rec.ndec = nl; /* the decisions labelled; their choices become the teacher's */
    for (i = 0; i < nl; i++) rec.dec[i].choice = labels[i];
    grown = realloc(it->extra, (size_t)(it->nextra + 1) * sizeof *grown);
    if (grown) it->extra = grown;
    vgrown = grown ? realloc(it->extra_values, (size_t)(it->nextra + 1) * sizeof *vgrown) : NULL;
    if (!vgrown) {
        ar_sil_plan_free(&rec);
        free(kept);
        return ARACHNE_E_NO_MEMORY;
    }
    it->extra_values = vgrown;
    it->extra_values[it->nextra] = kept;
    it->extra[it->nextra++] = rec;
    return ARACHNE_OK;
}

static void drop_extra(item *it)
{
    int k;
    for (k = 0; k < it->nextra; k++) {
        ar_sil_plan_free(&it->extra[k]);
        free(it->extra_values[k]);
    }
    free(it->extra);
    free(it->extra_values);
    it->extra = NULL;
    it->extra_values = NULL;
    it->nextra = 0;
}

/* The cost-sensitive gradient of one label (--soft TAU; Ross and Bagnell's
 * AggreVaTe in spirit): each decision's cross-entropy against the
 * teacher's values instead of its one choice, the target
 * q_k proportional to (v_k / v_best)^(1 / tau) over the allowed choices
 * whose completion filled, so that choices the teacher valued alike share
 * the target and one tau-th slower gets e^-1 of the best one's weight.  A
 * decision the teacher did not weigh keeps its one-hot label.  Weight w
 * per decision, added into grad. */
static int soft_plan_grad(const ar_nn *nn, ar_nn_ws *ws, const ar_sil_plan *p, const float *values, double tau,
                          double w, double *grad)
{
    double logp[AR_MAX_CHOICES], dl[AR_MAX_CHOICES], q[AR_MAX_CHOICES];
    int i, k, rec, st;
    for (i = 0; i < p->ndec; i++) {
        const ar_sil_dec *d = &p->dec[i];
        const float *row = values + (size_t)i * AR_MAX_CHOICES;
        const unsigned char *mask = p->masks + d->mask_off;
        double best = 0.0, sum = 0.0;
        if ((rec = ar_sil_dec_forward(nn, ws, p, i, logp)) < 0) return rec;
        for (k = 0; k < d->K; k++)
            if (mask[k] && row[k] > best) best = row[k];
        for (k = 0; k < d->K; k++) {
            q[k] = best > 0 && mask[k] && row[k] > 0 ? exp(log(row[k] / best) / tau) : 0.0;
            sum += q[k];
        }
        if (sum > 0) {
            for (k = 0; k < d->K; k++) dl[k] = mask[k] ? w * (exp(logp[k]) - q[k] / sum) : 0.0;
        } else if ((st = ar_cat_grad(logp, mask, d->K, d->choice, -w, 0.0, dl))) {
            return st;
        }
        if ((st = ar_nn_backward_into(nn, ws, rec, dl, grad))) return st;
    }
    ar_nn_ws_reset(ws);
    return ARACHNE_OK;
}

typedef struct label_ref {
    const ar_sil_plan *plan;
    const float *values; /* NULL: the one-hot label */
} label_ref;

static int fit(arachne_policy *pol, item *its, int nit, const variant *v, int batch, uint64_t seed)
{
    double soft = v->soft;
    ar_nn *nn = pol->nn;
    size_t P = ar_nn_param_count(nn), p;
    double *g[AR_DISTILL_CHUNKS] = { 0 };
    ar_nn_ws *ws[AR_DISTILL_CHUNKS] = { 0 };
    label_ref *lab;
    int n = 0, nlab = 0, i, k, c, ep, a, st = ARACHNE_OK;
    ar_adam_config ac;
    ar_rng rng;
    for (i = 0; i < nit; i++) nlab += 1 + its[i].nextra;
    lab = malloc((size_t)(nlab > 0 ? nlab : 1) * sizeof *lab);
    if (!lab) return ARACHNE_E_NO_MEMORY;
    for (i = 0; i < nit; i++) {
        if (its[i].status != ARACHNE_OK || its[i].held_out) continue;
        lab[n].plan = &its[i].label;
        lab[n++].values = its[i].values;
        for (k = 0; k < its[i].nextra; k++) {
            lab[n].plan = &its[i].extra[k];
            lab[n++].values = its[i].extra_values ? its[i].extra_values[k] : NULL;
        }
    }
    for (c = 0; c < AR_DISTILL_CHUNKS && !st; c++) {
        g[c] = malloc(P * sizeof(double));
        if (!g[c]) st = ARACHNE_E_NO_MEMORY;
        else st = ar_nn_ws_create(&ws[c], nn);
    }
    ar_rng_seed(&rng, seed);
    ar_nn_adam_reset(nn);
    ar_adam_config_default(&ac);
    ac.lr = v->lr;
    ac.clip_norm = 1.0;
    for (ep = 0; ep < v->epochs && !st; ep++) {
        for (i = n - 1; i > 0; i--) {
            int r = ar_rng_int(&rng, i + 1);
            label_ref tmp = lab[i];
            lab[i] = lab[r];
            lab[r] = tmp;
        }
        for (a = 0; a < n && !st; a += batch) {
            int m = AR_MIN(batch, n - a), cst[AR_DISTILL_CHUNKS];
            double *grad = ar_nn_grads(nn);
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1)
#endif
            for (c = 0; c < AR_DISTILL_CHUNKS; c++) {
                int q;
                memset(g[c], 0, P * sizeof(double));
                cst[c] = ARACHNE_OK;
                for (q = c; q < m && !cst[c]; q += AR_DISTILL_CHUNKS)
                    cst[c] = soft > 0 && lab[a + q].values
                           ? soft_plan_grad(nn, ws[c], lab[a + q].plan, lab[a + q].values, soft, 1.0 / m, g[c])
                           : ar_sil_plan_grad(nn, ws[c], lab[a + q].plan, 1.0 / m, g[c], NULL);
            }
            for (c = 0; c < AR_DISTILL_CHUNKS && !st; c++) st = cst[c];
            if (st) break;
            for (p = 0; p < P; p++) {
                double sum = 0.0;
                for (c = 0; c < AR_DISTILL_CHUNKS; c++) sum += g[c][p];
                grad[p] = sum;
            }
            st = ar_nn_adam_step(nn, &ac, NULL);
        }
    }
    for (c = 0; c < AR_DISTILL_CHUNKS; c++) {
        free(g[c]);
        ar_nn_ws_destroy(ws[c]);
    }
    free(lab);
    return st;
}

/* A labelled item of one side (held_out 0/1) and population (0 all,
 * 1 dense, 2 MoE). */
static int in_population(const item *it, int held_out, int pop)
{
    return it->status == ARACHNE_OK && it->held_out == held_out && !(pop == 1 && it->moe) && !(pop == 2 && !it->moe);
}

/* Geometric mean of num/den over one population of one side (held_out
 * 0/1; pop 0 all, 1 dense, 2 MoE); a missing plan counts as 1e-9 of the
 * denominator.  *count receives the compositions. */
static double geo(const item *its, int nit, int held_out, int pop, int num, int den, int *count)
{
    double s = 0.0;
    int i, k = 0;
    for (i = 0; i < nit; i++) {
        const item *it = &its[i];
        const double v[3] = { it->before, it->rollout, it->after };
        if (!in_population(it, held_out, pop)) continue;
        s += log(v[den] > 0.0 ? AR_MAX(v[num], 1e-9 * v[den]) / v[den] : 1.0);
        k++;
    }
    *count = k;
    return k ? exp(s / k) : 0.0;
}

/* Negative log-likelihood per decision of the labels of one population. */
static double nll_per_decision(const item *its, int nit, int held_out, int pop)
{
    double s = 0.0;
    long d = 0;
    int i;
    for (i = 0; i < nit; i++) {
        const item *it = &its[i];
        if (!in_population(it, held_out, pop)) continue;
        s += it->nll;
        d += it->label.ndec;
    }
    return d ? s / (double)d : 0.0;
}

/* The greedy construction of pol on every item and its labels' NLL,
 * printed as the table rows (and JSON lines) of one variant after DAgger
 * round `round`.  Returns 0, or 1 after a message. */
static int report(const arachne_policy *pol, item *its, int nit, const variant *var, int round, int batch,
                  const char *name)
{
    static const char *const pop_name[3] = { "all", "dense", "moe" };
    int i, side, pop;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)
#endif
    for (i = 0; i < nit; i++)
        if (its[i].status == ARACHNE_OK) {
            its[i].after = greedy_iter_per_s(pol, its[i].env.cm);
            its[i].nll = label_nll(pol, &its[i]);
        }
    for (i = 0; i < nit; i++)
        if (its[i].status == ARACHNE_OK && its[i].nll < 0) {
            fprintf(stderr, "bench_distill: %s: the label's likelihood failed\n", its[i].comp.name);
            return 1;
        }
    for (side = 0; side < 2; side++)
        for (pop = 0; pop < 3; pop++) {
            int n0, n1, n2;
            double bl = geo(its, nit, side, pop, 0, 1, &n0), ab = geo(its, nit, side, pop, 2, 0, &n1),
                   al = geo(its, nit, side, pop, 2, 1, &n2), nll = nll_per_decision(its, nit, side, pop);
            if (!n0) continue;
            printf("%-14s %-9s %-6s %5d %13.4f %13.4f %13.4f %8.4f\n", name, side ? "held-out" : "trained",
                   pop_name[pop], n0, bl, ab, al, nll);
            printf("{\"bench\":\"distill\",\"epochs\":%d,\"lr\":%g,\"batch\":%d,\"soft\":%g,\"hidden\":%d,"
                   "\"layers\":%d,\"dagger_round\":%d,\"side\":\"%s\",\"pop\":\"%s\",\"n\":%d,"
                   "\"before_over_label\":%.6f,\"after_over_before\":%.6f,\"after_over_label\":%.6f,"
                   "\"label_nll_per_decision\":%.6f}\n",
                   var->epochs, var->lr, batch, var->soft, var->hidden, var->layers, round,
                   side ? "held-out" : "trained", pop_name[pop], n0, bl, ab, al, nll);
        }
    fflush(stdout);
    return 0;
}

/* Which kind of decision the recorded decision d is: the head that made
 * it and the step (templates placed) it was made in; the depth head also
 * scores the width, which only the inputs the policy saw tell apart
 * (policy_state.c: x[126] is 1 at the width decision). */
static int regret_kind(const ar_sil_plan *rec, int d)
{
    const ar_sil_dec *dec = &rec->dec[d];
    if (dec->head == AR_HEAD_DEVICE) return 3;
    if (dec->head == AR_HEAD_TP) return 4;
    if (rec->in[dec->in_off + 126] > 0.5f) return 0;
    return dec->step > 0 ? 2 : 1;
}

/* --regret: the policy's greedy construction of it, each decision
 * weighed by its own rollout decoding (ar_policy_rollout_relabel with the
 * policy as teacher): how much the best single other choice there, then
 * greedy to the end, ranks above greedy's own plan. */
static int regret_one(const arachne_policy *pol, item *it, long evaluations)
{
    int choices[AR_POLICY_MAX_DECISIONS], labels[AR_POLICY_MAX_DECISIONS], n, nl = 0, d, c, st;
    double *values = values_buffer(1.0);
    ar_sil_plan rec;
    if (!values) return ARACHNE_E_NO_MEMORY;
    memset(&it->regret, 0, sizeof it->regret);
    it->regret.first = -1;
    it->regret.best_gain = 1.0;
    st = relabel_greedy(pol, pol, it->env.cm, evaluations, choices, &n, labels, &nl, values, &rec);
    it->cut = !st && nl < n; /* the decisions after the cap are not weighed */
    for (d = 0; !st && d < nl && d < rec.ndec; d++) {
        const double *row = values + (size_t)d * AR_MAX_CHOICES;
        double best = 0.0, own = row[choices[d]], gain;
        int k = regret_kind(&rec, d);
        for (c = 0; c < AR_MAX_CHOICES; c++)
            if (row[c] > best) best = row[c];
        if (best <= 0.0 || own <= 0.0) continue; /* not weighed, or greedy's own completion did not fill */
        gain = best / own;
        it->regret.n[k]++;
        it->regret.sum[k] += log(gain);
        if (gain > it->regret.best_gain) it->regret.best_gain = gain;
        if (gain > 1.01) {
            it->regret.lost[k]++;
            if (it->regret.first < 0) it->regret.first = k, it->regret.first_gain = gain;
        }
    }
    ar_sil_plan_free(&rec);
    free(values);
    return st;
}

/* The --regret table: by population and kind of decision. */
static void regret_report(const item *its, int nit)
{
    static const char *const pop_name[3] = { "all", "dense", "moe" };
    static const char *const kind_name[REGRET_KINDS] = { "width", "depth-1st", "depth-later", "type", "tp" };
    int pop, k, i;
    printf("%-6s %-12s %9s %9s %12s %11s %14s\n", "pop", "kind", "weighed", "lose>1%", "mean-loss-%", "first-lose",
           "first-gain-geo");
    for (pop = 0; pop < 3; pop++) {
        int comps = 0, none = 0;
        double best = 0.0;
        for (i = 0; i < nit; i++)
            if (in_population(&its[i], 0, pop) || in_population(&its[i], 1, pop)) {
                comps++;
                none += its[i].regret.first < 0;
                best += log(its[i].regret.best_gain);
            }
        if (!comps) continue;
        for (k = 0; k < REGRET_KINDS; k++) {
            long n = 0, lost = 0, first = 0;
            double sum = 0.0, fsum = 0.0;
            for (i = 0; i < nit; i++) {
                const item *it = &its[i];
                if (!in_population(it, 0, pop) && !in_population(it, 1, pop)) continue;
                n += it->regret.n[k];
                lost += it->regret.lost[k];
                sum += it->regret.sum[k];
                if (it->regret.first == k) first++, fsum += log(it->regret.first_gain);
            }
            printf("%-6s %-12s %9ld %8.1f%% %12.2f %11ld %14.4f\n", pop_name[pop], kind_name[k], n,
                   n ? 100.0 * (double)lost / (double)n : 0.0, n ? 100.0 * (exp(sum / (double)n) - 1.0) : 0.0, first,
                   first ? exp(fsum / (double)first) : 1.0);
            printf("{\"bench\":\"distill_regret\",\"pop\":\"%s\",\"kind\":\"%s\",\"weighed\":%ld,\"lose_share\":%.6f,"
                   "\"mean_loss\":%.6f,\"first_lose\":%ld,\"first_gain_geo\":%.6f}\n",
                   pop_name[pop], kind_name[k], n, n ? (double)lost / (double)n : 0.0,
                   n ? exp(sum / (double)n) - 1.0 : 0.0, first, first ? exp(fsum / (double)first) : 1.0);
        }
        printf("%-6s %d compositions, %d with no decision losing over 1 %%; best single change, geometric mean: "
               "%.4f\n", pop_name[pop], comps, none, exp(best / comps));
    }
}

/* --margins: the decision source of a greedy construction that also
 * notes, at the first template's width (kind 0) and depth (kind 1), how
 * many choices were allowed, the probability of the one greedy takes and
 * its lead over the second most probable.  Greedy's choice is the
 * policy's own (ar_policy_decide); the distribution is recomputed from the
 * same inputs. */
typedef struct margin_src {
    ar_policy_src *src;
    item *it;
} margin_src;

static int margin_decide(void *user, const ar_dec_ctx *ctx, int *choice)
{
    margin_src *m = user;
    ar_policy_src *s = m->src;
    int kind = ctx->kind == AR_DEC_REPLICAS ? 0 : ctx->kind == AR_DEC_DEPTH ? 1 : -1;
    if (ctx->step == 0 && kind >= 0 && !m->it->margins.nallowed[kind] && ctx->n <= AR_SEARCH_MAX_DEPTH + 1) {
        double x[AR_STATE_DIM], cand[(AR_SEARCH_MAX_DEPTH + 1) * AR_STATE_CAND], logp[AR_SEARCH_MAX_DEPTH + 1];
        double t1 = 0.0, t2 = 0.0;
        unsigned char mask[AR_SEARCH_MAX_DEPTH + 1];
        int i, n = 0, rec;
        memset(mask, 0, sizeof mask);
        for (i = 0; i < ctx->n; i++) mask[i] = ctx->mask[i] != 0;
        ar_state_encode(&s->st, ctx, x, cand);
        rec = ar_nn_forward(s->nn, s->ws, AR_HEAD_DEPTH, x, s->st.comp, cand, ctx->n, mask, logp);
        ar_nn_ws_reset(s->ws);
        if (rec < 0) return rec;
        for (i = 0; i < ctx->n; i++) {
            double q;
            if (!mask[i]) continue;
            q = exp(logp[i]);
            n++;
            if (q > t1) t2 = t1, t1 = q;
            else if (q > t2) t2 = q;
        }
        m->it->margins.nallowed[kind] = n;
        m->it->margins.top[kind] = t1;
        m->it->margins.margin[kind] = t1 - t2;
    }
    return ar_policy_decide(s, ctx, choice);
}

static int margins_one(const arachne_policy *pol, item *it)
{
    construction c;
    margin_src m;
    int st;
    memset(&it->margins, 0, sizeof it->margins);
    if ((st = construction_open(&c, pol, it->env.cm, 0))) return st;
    m.src = &c.s;
    m.it = it;
    st = ar_builder_run(&c.b, margin_decide, &m, &c.p, NULL);
    construction_close(&c);
    return st;
}

/* The --margins table: by population and decision, over the decisions
 * with more than one allowed choice. */
static int margins_report(const item *its, int nit)
{
    static const char *const pop_name[3] = { "all", "dense", "moe" };
    static const char *const kind_name[2] = { "width", "depth-1st" };
    double *a = malloc(sizeof(double) * (size_t)(3 * (nit > 0 ? nit : 1)));
    int pop, k, i;
    if (!a) return 1;
    printf("%-6s %-10s %9s %15s %15s %14s %16s\n", "pop", "kind", "decisions", "allowed-median", "top-p-median",
           "margin-median", "margin<0.05-share");
    for (pop = 0; pop < 3; pop++)
        for (k = 0; k < 2; k++) {
            double *na = a, *top = a + nit, *mar = a + 2 * nit, close = 0.0, mn, mt, mm;
            int n = 0;
            for (i = 0; i < nit; i++) {
                const item *it = &its[i];
                if (it->status || it->margins.nallowed[k] < 2) continue;
                if (!in_population(it, 0, pop) && !in_population(it, 1, pop)) continue;
                na[n] = it->margins.nallowed[k];
                top[n] = it->margins.top[k];
                mar[n] = it->margins.margin[k];
                close += mar[n] < 0.05;
                n++;
            }
            if (!n) continue;
            mn = bench_median(na, n);
            mt = bench_median(top, n);
            mm = bench_median(mar, n);
            printf("%-6s %-10s %9d %15.1f %15.3f %14.3f %16.2f\n", pop_name[pop], kind_name[k], n, mn, mt, mm,
                   close / n);
            printf("{\"bench\":\"distill_margins\",\"pop\":\"%s\",\"kind\":\"%s\",\"decisions\":%d,"
                   "\"allowed_median\":%.1f,\"top_median\":%.6f,\"margin_median\":%.6f,\"close_share\":%.6f}\n",
                   pop_name[pop], kind_name[k], n, mn, mt, mm, close / n);
        }
    free(a);
    return 0;
}

static int parse_variants(const char *text, variant *v, int *n)
{
    const char *p = text;
    *n = 0;
    while (*p) {
        char *end;
        long e = strtol(p, &end, 10);
        double lr;
        if (end == p || *end != ':' || e < 0 || e > 100000 || *n == MAX_VARIANTS) return -1;
        p = end + 1;
        lr = strtod(p, &end);
        if (end == p || !(lr > 0.0 && lr <= 1.0)) return -1;
        v[*n].epochs = (int)e;
        v[*n].lr = lr;
        v[*n].soft = -1.0;
        v[*n].hidden = v[*n].layers = 0;
        p = end;
        if (*p == ':') {
            double tau = strtod(p + 1, &end);
            if (end == p + 1 || !(tau >= 0.0 && tau <= 10.0)) return -1;
            v[*n].soft = tau;
            p = end;
        }
        if (*p == '@') {
            long h = strtol(p + 1, &end, 10), l;
            /* the library's own limits (arachne_policy_create checks them
             * too), so a bad size is refused before the labelling, not after */
            if (end == p + 1 || *end != 'x' || h < 1 || h > AR_NN_MAX_DIM) return -1;
            p = end + 1;
            l = strtol(p, &end, 10);
            if (end == p || l < 1 || l > AR_NN_MAX_LAYERS) return -1;
            v[*n].hidden = (int)h;
            v[*n].layers = (int)l;
            p = end;
        }
        (*n)++;
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    return *n ? 0 : -1;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_distill [--config EVAL.json]... [--policy FILE] [--evaluations N] "
                    "[--variants E:LR[:TAU][@HxL][,...]] [--batch N] [--holdout K] [--holdout-below M] [--seed S] "
                    "[--out FILE] [--dagger R] [--dagger-same-steps] [--out-each PREFIX] [--soft TAU] "
                    "[--regret | --margins]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *policy_path = getenv("ARACHNE_POLICY"), *out = NULL, *out_each = NULL, *configs[64];
    variant vars[MAX_VARIANTS];
    int nconfigs = 0, nvars = 0, batch = 32, holdout = 8, nit = 0, i, k, st = 0, v, dagger = 0, same_steps = 0;
    int regret = 0, margins = 0;
    long evaluations = 2000, holdout_below = -1;
    char captext[64];
    double soft = 0.0, want_values;
    uint64_t seed = 1;
    item *its = NULL;
    arachne_policy *start = NULL;
    double t0, t_label;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc && nconfigs < 64) configs[nconfigs++] = argv[++i];
        else if (!strcmp(argv[i], "--policy") && i + 1 < argc) policy_path = argv[++i];
        else if (!strcmp(argv[i], "--evaluations") && i + 1 < argc) evaluations = atol(argv[++i]);
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc) {
            if (parse_variants(argv[++i], vars, &nvars)) return usage();
        } else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--holdout") && i + 1 < argc) holdout = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--holdout-below") && i + 1 < argc) holdout_below = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = (uint64_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--dagger") && i + 1 < argc) dagger = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dagger-same-steps")) same_steps = 1;
        else if (!strcmp(argv[i], "--out-each") && i + 1 < argc) out_each = argv[++i];
        else if (!strcmp(argv[i], "--soft") && i + 1 < argc) soft = atof(argv[++i]);
        else if (!strcmp(argv[i], "--regret")) regret = 1;
        else if (!strcmp(argv[i], "--margins")) margins = 1;
        else return usage();
    }
    if (evaluations < 0 || batch < 1 || holdout < 0 || dagger < 0 || dagger > 100 || !(soft >= 0 && soft <= 10))
        return usage();
    if (!nvars) parse_variants("5:0.001", vars, &nvars);
    /* the teacher's values are kept when any variant fits on them */
    for (v = 0, want_values = 0.0; v < nvars; v++) {
        if (vars[v].soft < 0) vars[v].soft = soft;
        if (vars[v].soft > want_values) want_values = vars[v].soft;
    }
    if (!nconfigs) configs[nconfigs++] = "examples/eval/quick.json"; /* `make bench` runs it without arguments */
    if (!policy_path || !policy_path[0]) policy_path = "examples/policies/default.arpol";
    if (arachne_policy_load(&start, policy_path)) {
        fprintf(stderr, "bench_distill: %s\n", arachne_last_error());
        return 1;
    }
    for (k = 0; k < nconfigs; k++) {
        ar_eval_config *cfg = NULL;
        item *grown;
        if (ar_eval_config_load(&cfg, configs[k])) {
            fprintf(stderr, "bench_distill: %s\n", arachne_last_error());
            st = 1;
            goto done;
        }
        grown = realloc(its, (size_t)(nit + cfg->ncomps) * sizeof *its);
        if (!grown) {
            ar_eval_config_free(cfg);
            fprintf(stderr, "bench_distill: out of memory\n");
            st = 1;
            goto done;
        }
        its = grown;
        for (i = 0; i < cfg->ncomps; i++, nit++) {
            memset(&its[nit], 0, sizeof its[nit]);
            its[nit].comp = cfg->comps[i];
            /* pairs, since the drawn sets alternate dense and MoE */
            its[nit].held_out = holdout > 0 && (nit / 2) % holdout == 0 && (holdout_below < 0 || nit < holdout_below);
        }
        ar_eval_config_free(cfg);
    }

    /* 1. labels: every composition's rollout decoding, in parallel (one
     * writer per item; each rollout on one thread) */
    t0 = ar_now();
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)
#endif
    for (i = 0; i < nit; i++) {
        item *it = &its[i];
        it->status = ar_eval_env_build(&it->env, &it->comp);
        if (it->status) {
            snprintf(it->err, sizeof it->err, "%s", arachne_last_error());
            continue;
        }
        it->moe = it->env.model->experts > 0;
        if (regret) { /* its own greedy construction is the one it weighs; `before` is not reported */
            it->status = regret_one(start, it, evaluations);
        } else if (margins) {
            it->status = margins_one(start, it);
        } else {
            it->before = greedy_iter_per_s(start, it->env.cm);
            it->status = label_one(start, it, evaluations, want_values);
        }
        if (it->status) snprintf(it->err, sizeof it->err, "%s", arachne_last_error());
    }
    t_label = ar_now() - t0;
    for (i = 0; i < nit; i++)
        if (its[i].status && its[i].status != ARACHNE_E_INFEASIBLE) {
            fprintf(stderr, "bench_distill: %s: %s\n", its[i].comp.name, its[i].err);
            st = 1;
            goto done;
        }

    if (margins) {
        printf("bench_distill: %d greedy constructions, the first template's width and depth (%.1f s)\n", nit,
               t_label);
        st = margins_report(its, nit);
        goto done;
    }
    if (regret) {
        printf("bench_distill: %d greedy constructions weighed by rollout decoding (%s) in %.1f s; "
               "%d stopped at the cap\n",
               nit, cap_text(evaluations, captext, sizeof captext), t_label, count_cut(its, nit));
        regret_report(its, nit);
        goto done;
    }
    printf("bench_distill: %d compositions labelled by rollout decoding (%s) in %.1f s; "
           "%d labels stopped at the cap (the policy's own choices after it)\n",
           nit, cap_text(evaluations, captext, sizeof captext), t_label, count_cut(its, nit));
    if (want_values > 0) {
        /* how often the teacher's choice has an equal: the decisions it
         * weighed, and those where another allowed choice completes to
         * within 0.1 % of the best */
        long weighed = 0, tied = 0;
        for (i = 0; i < nit; i++) {
            int d;
            if (its[i].status != ARACHNE_OK || !its[i].values) continue;
            for (d = 0; d < its[i].label.ndec; d++) {
                const float *row = its[i].values + (size_t)d * AR_MAX_CHOICES;
                int c, near = 0;
                float best = 0.0f;
                for (c = 0; c < AR_MAX_CHOICES; c++)
                    if (row[c] > best) best = row[c];
                if (best <= 0.0f) continue;
                for (c = 0; c < AR_MAX_CHOICES; c++) near += row[c] >= 0.999f * best;
                weighed++;
                tied += near > 1;
            }
        }
        printf("bench_distill: the teacher's values kept for soft targets: %ld decisions weighed, %.1f %% with a "
               "second choice within 0.1 %% of the best\n",
               weighed, weighed ? 100.0 * (double)tied / (double)weighed : 0.0);
    }
    printf("%-14s %-9s %-6s %5s %13s %13s %13s %8s\n", "variant", "side", "pop", "n", "before/label",
           "after/before", "after/label", "nll");
    /* 2. each variant from the starting file; with --dagger R, R rounds
     * of relabelling the student's own constructions and fitting again */
    for (v = 0; v < nvars && !st; v++) {
        arachne_policy *pol = NULL;
        variant vr;
        int r;
        if (vars[v].hidden > 0 ? arachne_policy_create(&pol, seed, vars[v].hidden, vars[v].layers)
                               : arachne_policy_load(&pol, policy_path)) {
            fprintf(stderr, "bench_distill: %s\n", arachne_last_error());
            st = 1;
            break;
        }
        for (i = 0; i < nit; i++) drop_extra(&its[i]);
        for (r = 0; r <= dagger && !st; r++) {
            char name[48];
            if (r > 0) {
                t0 = ar_now();
                for (i = 0; i < nit; i++) its[i].cut = 0; /* count this round's relabelling alone */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)
#endif
                for (i = 0; i < nit; i++)
                    if (its[i].status == ARACHNE_OK && !its[i].held_out) {
                        int dst = dagger_one(start, pol, &its[i], evaluations, vars[v].soft);
                        if (dst) snprintf(its[i].err, sizeof its[i].err, "%s", arachne_last_error());
                        its[i].dagger_status = dst;
                    }
                for (i = 0; i < nit && !st; i++)
                    if (its[i].dagger_status) {
                        fprintf(stderr, "bench_distill: %s: relabelling: %s\n", its[i].comp.name, its[i].err);
                        st = 1;
                    }
                if (st) break;
                printf("bench_distill: DAgger round %d relabelled the student's constructions in %.1f s; %d stopped "
                       "at the cap\n",
                       r, ar_now() - t0, count_cut(its, nit));
            }
            /* round r fits on r + 1 labels per composition: with
             * --dagger-same-steps, 1 / (r + 1) of the epochs (rounded) */
            vr = vars[v];
            if (same_steps) vr.epochs = AR_MAX(1, (2 * vr.epochs + r + 1) / (2 * (r + 1)));
            if (fit(pol, its, nit, &vr, batch, seed + (uint64_t)r)) {
                fprintf(stderr, "bench_distill: %s\n", arachne_last_error());
                st = 1;
                break;
            }
            if (vr.soft > 0)
                snprintf(name, sizeof name, dagger ? "%d:%g:%g/d%d" : "%d:%g:%g", vr.epochs, vr.lr, vr.soft, r);
            else
                snprintf(name, sizeof name, dagger ? "%d:%g/d%d" : "%d:%g", vr.epochs, vr.lr, r);
            if (vr.hidden > 0) {
                size_t used = strlen(name);
                snprintf(name + used, sizeof name - used, "@%dx%d", vr.hidden, vr.layers);
            }
            st = report(pol, its, nit, &vr, r, batch, name);
            if (!st && out_each) {
                char path[4096];
                if (v == nvars - 1) snprintf(path, sizeof path, "%s-d%d.arpol", out_each, r);
                else snprintf(path, sizeof path, "%s-v%d-d%d.arpol", out_each, v, r);
                if (arachne_policy_save(pol, path)) {
                    fprintf(stderr, "bench_distill: %s\n", arachne_last_error());
                    st = 1;
                }
            }
        }
        if (!st && v == nvars - 1 && out && arachne_policy_save(pol, out)) {
            fprintf(stderr, "bench_distill: %s\n", arachne_last_error());
            st = 1;
        }
        arachne_policy_destroy(pol);
    }
done:
    for (i = 0; i < nit; i++) {
        ar_sil_plan_free(&its[i].label);
        free(its[i].values);
        drop_extra(&its[i]);
        ar_eval_env_free(&its[i].env);
    }
    free(its);
    arachne_policy_destroy(start);
    return st;
}
