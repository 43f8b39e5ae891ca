/* test_replan.c -- arachne_replan: node matching, carrying the running plan
 * over, the keep/switch inequality, the migration (hand-computed bytes),
 * the decision JSON and argument checks. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "cost.h"
#include "json.h"
#include "replan.h"

typedef struct renv {
    arachne_model *model;
    arachne_cluster *cluster;
    arachne_profile *profile;
    arachne_cost_model *cm;
} renv;

static void renv_free(renv *e)
{
    arachne_cost_model_destroy(e->cm);
    arachne_profile_destroy(e->profile);
    arachne_cluster_destroy(e->cluster);
    arachne_model_destroy(e->model);
    memset(e, 0, sizeof *e);
}

static int renv_make(renv *e, const char *model, const char *spec)
{
    int st;
    memset(e, 0, sizeof *e);
    if ((st = arachne_model_preset(&e->model, model)) || (st = arachne_cluster_parse(&e->cluster, spec)) ||
        (st = arachne_profile_generate(&e->profile, e->model, e->cluster, 4096)) ||
        (st = arachne_cost_model_create(&e->cm, e->model, e->cluster, e->profile)))
        renv_free(e);
    return st;
}

static double dget(const arachne_replan_decision *d, int f)
{
    double v = -12345.0;
    arachne_replan_get(d, f, &v);
    return v;
}

static arachne_replan_options *opts_k(int samples)
{
    arachne_replan_options *o = NULL;
    if (arachne_replan_options_create(&o)) return NULL;
    if (arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_SAMPLES, samples)) {
        arachne_replan_options_destroy(o);
        return NULL;
    }
    return o;
}

/* Does the decision follow switch <=> (Tn - To)(H - C) > To C ? */
static int consistent(const arachne_replan_decision *d)
{
    double To = dget(d, ARACHNE_DECISION_OLD_SAMPLES_PER_S), Tn = dget(d, ARACHNE_DECISION_NEW_SAMPLES_PER_S);
    double H = dget(d, ARACHNE_DECISION_HORIZON_S), C = dget(d, ARACHNE_DECISION_COST_S);
    int sw = dget(d, ARACHNE_DECISION_ACTION) == ARACHNE_REPLAN_SWITCH;
    if (fabs(C - (dget(d, ARACHNE_DECISION_MIGRATION_S) + dget(d, ARACHNE_DECISION_RESTART_S))) > 1e-9 * (1 + C))
        return 0;
    if (!dget(d, ARACHNE_DECISION_RUNNING_VALID)) return sw;
    return sw == ((Tn - To) * (H - C) > To * C);
}

/* Releases what a replan test made (each may be NULL). */
static void replan_test_free(arachne_replan_decision *d, arachne_plan *next, arachne_plan *run, arachne_policy *pol,
                             arachne_replan_options *o, renv *e)
{
    arachne_replan_decision_destroy(d);
    arachne_plan_destroy(next);
    arachne_plan_destroy(run);
    arachne_policy_destroy(pol);
    arachne_replan_options_destroy(o);
    renv_free(e);
}

TEST(options_defaults_and_ranges)
{
    arachne_replan_options *o = NULL;
    double v = 0;
    ASSERT_OK(arachne_replan_options_create(&o));
    ASSERT_OK(arachne_replan_options_get(o, ARACHNE_REPLAN_OPT_HORIZON_S, &v));
    ASSERT_NEAR(v, 1800.0, 0);
    ASSERT_OK(arachne_replan_options_get(o, ARACHNE_REPLAN_OPT_RESTART_S, &v));
    ASSERT_NEAR(v, 20.0, 0);
    ASSERT_OK(arachne_replan_options_get(o, ARACHNE_REPLAN_OPT_SAMPLES, &v));
    ASSERT_EQ(v, 1);
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_HORIZON_S, 0.0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "horizon");
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_RESTART_S, -1.0), ARACHNE_E_INVALID_ARGUMENT);
    /* finite but past 1e9 s: the decision's samples gained were inf and
     * its net NaN */
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_HORIZON_S, 1e308), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "expected in (0, 1e9]");
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_RESTART_S, 1.1e9), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_HORIZON_S, 1e9));
    ASSERT_OK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_RESTART_S, 1e9));
    ASSERT_OK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_HORIZON_S, 1800.0));
    ASSERT_OK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_RESTART_S, 20.0));
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_SAMPLES, 1.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_SAMPLES, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_SEED, -3), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_replan_options_get(o, ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS, &v));
    ASSERT_EQ(v, 0);                             /* the library default: no refinement */
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS, -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "refine");
    ASSERT_STATUS(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS, 2.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_replan_options_set(o, 99, 1.0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "unknown key");
    ASSERT_STATUS(arachne_replan_options_get(o, 99, &v), ARACHNE_E_INVALID_ARGUMENT);
    /* unchanged after failures */
    ASSERT_OK(arachne_replan_options_get(o, ARACHNE_REPLAN_OPT_HORIZON_S, &v));
    ASSERT_NEAR(v, 1800.0, 0);
    ASSERT_OK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_RESTART_S, 0.0));
    arachne_replan_options_destroy(o);
    arachne_replan_options_destroy(NULL);
    arachne_replan_decision_destroy(NULL);
}

TEST(node_map_matches_type_and_index)
{
    arachne_cluster *to = NULL;
    int *map = NULL, *gpus = NULL, n = 0;
    /* the new cluster lists the types in another order and lost an A6000 node */
    ASSERT_OK(arachne_cluster_parse(&to, "a6000:1x4,rtx-pro-6000:1x2,h100:1x8"));
    ASSERT_OK(ar_replan_node_map("rtx-pro-6000:1x3,a6000:2x4", to, &map, &gpus, &n));
    ASSERT_EQ(n, 3);
    ASSERT_EQ(map[0], 1); /* RTX node #0 -> new node 1 (it now has 2 GPUs) */
    ASSERT_EQ(gpus[0], 3);
    ASSERT_EQ(map[1], 0); /* A6000 node #0 -> new node 0 */
    ASSERT_EQ(map[2], -1); /* A6000 node #1 left */
    free(map);
    free(gpus);
    ASSERT_STATUS(ar_replan_node_map("a6000:4x", to, &map, &gpus, &n), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "offset");
    ASSERT(map == NULL);
    ASSERT_STATUS(ar_replan_node_map("a6000 2x4", to, &map, &gpus, &n), ARACHNE_E_PARSE);
    arachne_cluster_destroy(to);
}

TEST(unchanged_cluster_keeps)
{
    renv e;
    arachne_policy *pol = NULL;
    arachne_plan *run = NULL, *next = NULL;
    arachne_replan_decision *d = NULL;
    arachne_replan_options *o = opts_k(4);
    double a = 0, b = 0;
    ASSERT(o != NULL);
    ASSERT_OK(renv_make(&e, "llama3-8b", "rtx-pro-6000:1x3,a6000:1x4"));
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_OK(arachne_plan_build(&run, pol, e.cm, 4, 0));
    ASSERT_OK(arachne_replan(&next, &d, pol, e.cm, run, o));
    ASSERT_EQ(dget(d, ARACHNE_DECISION_ACTION), ARACHNE_REPLAN_KEEP);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_REASON), ARACHNE_REPLAN_REASON_NOT_FASTER);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_RUNNING_VALID), 1);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_GPUS_LEFT), 0);
    ASSERT_NEAR(dget(d, ARACHNE_DECISION_SAMPLES_GAINED), 0.0, 0);
    ASSERT_NEAR(dget(d, ARACHNE_DECISION_BYTES_MOVED), 0.0, 0);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_MIGRATIONS), 0);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_SLOWEST_RANK), -1);
    ASSERT_NEAR(dget(d, ARACHNE_DECISION_COST_S), 20.0, 1e-12);
    ASSERT(consistent(d));
    arachne_plan_get(run, ARACHNE_PLAN_SAMPLES_PER_S, &a);
    arachne_plan_get(next, ARACHNE_PLAN_SAMPLES_PER_S, &b);
    ASSERT_NEAR(a, b, 1e-12);
    ASSERT_NEAR(dget(d, ARACHNE_DECISION_OLD_SAMPLES_PER_S), a, 1e-12);
    {
        const char *why = NULL;
        ASSERT_OK(arachne_replan_explain(d, &why));
        ASSERT_CONTAINS(why, "keep");
    }
    replan_test_free(d, next, run, pol, o, &e);
}

TEST(adding_nodes_gives_valid_plan_and_consistent_decision)
{
    renv a, b;
    arachne_policy *pol = NULL;
    arachne_plan *run = NULL, *next = NULL, *back = NULL;
    arachne_replan_decision *d = NULL;
    arachne_replan_options *o = opts_k(8);
    const char *json = NULL;
    double gpus = 0, used = 0, idle = 0, tr = 0, tn = 0;
    int k, type_idle = 0, sum = 0;
    ASSERT(o != NULL);
    ASSERT_OK(renv_make(&a, "llama3-8b", "rtx-pro-6000:1x3"));
    ASSERT_OK(renv_make(&b, "llama3-8b", "rtx-pro-6000:1x3,a6000:2x4,a5000:1x4"));
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_OK(arachne_plan_build(&run, pol, a.cm, 8, 0));
    ASSERT_OK(arachne_replan(&next, &d, pol, b.cm, run, o));
    ASSERT(consistent(d));
    ASSERT_EQ(dget(d, ARACHNE_DECISION_RUNNING_VALID), 1);
    ASSERT_NEAR(dget(d, ARACHNE_DECISION_NET_SAMPLES),
                dget(d, ARACHNE_DECISION_SAMPLES_GAINED) - dget(d, ARACHNE_DECISION_SAMPLES_LOST), 1e-9);
    /* the plan to run is valid on the new cluster: it loads back through the validator */
    ASSERT_OK(arachne_plan_to_json(next, &json));
    ASSERT_OK(arachne_plan_from_json(&back, b.cm, json, strlen(json)));
    arachne_plan_get(next, ARACHNE_PLAN_GPUS_TOTAL, &gpus);
    ASSERT_EQ(gpus, 15);
    arachne_plan_get(next, ARACHNE_PLAN_GPUS_USED, &used);
    idle = dget(d, ARACHNE_DECISION_IDLE_GPUS);
    ASSERT_EQ(idle, gpus - used);
    for (k = 0; k < 3; k++) {
        const char *names[] = { "RTX-PRO-6000", "a6000", "A5000" };
        ASSERT_OK(arachne_replan_idle_gpus(d, names[k], &type_idle));
        sum += type_idle;
    }
    ASSERT_EQ(sum, idle);
    /* never slower than what runs */
    arachne_plan_get(run, ARACHNE_PLAN_SAMPLES_PER_S, &tr);
    arachne_plan_get(next, ARACHNE_PLAN_SAMPLES_PER_S, &tn);
    ASSERT(tn >= tr * (1 - 1e-12));
    if (dget(d, ARACHNE_DECISION_ACTION) == ARACHNE_REPLAN_SWITCH)
        ASSERT_NEAR(tn, dget(d, ARACHNE_DECISION_NEW_SAMPLES_PER_S), 1e-12);
    /* a restart cost above the horizon always keeps */
    arachne_replan_decision_destroy(d);
    arachne_plan_destroy(next);
    d = NULL;
    next = NULL;
    ASSERT_OK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_RESTART_S, 5000.0));
    ASSERT_OK(arachne_replan(&next, &d, pol, b.cm, run, o));
    ASSERT_EQ(dget(d, ARACHNE_DECISION_ACTION), ARACHNE_REPLAN_KEEP);
    ASSERT(consistent(d));
    arachne_replan_decision_destroy(d);
    arachne_plan_destroy(next);
    arachne_plan_destroy(back);
    arachne_plan_destroy(run);
    arachne_policy_destroy(pol);
    arachne_replan_options_destroy(o);
    renv_free(&a);
    renv_free(&b);
}

/* REFINE_EVALUATIONS: the new plan is the refinement of the plan the policy
 * builds (the search `arachne plan` runs), so it is never slower, and the
 * decision prices that plan. */
TEST(refine_evaluations_refine_the_new_plan)
{
    renv a, b;
    arachne_policy *pol = NULL;
    arachne_plan *run = NULL, *built = NULL, *want = NULL, *next = NULL;
    arachne_replan_decision *d = NULL;
    arachne_replan_options *o = opts_k(4);
    double t_built = 0, t_want = 0;
    ASSERT(o != NULL);
    ASSERT_OK(renv_make(&a, "llama3-8b", "rtx-pro-6000:1x3"));
    ASSERT_OK(renv_make(&b, "llama3-8b", "rtx-pro-6000:1x3,a6000:1x4"));
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_OK(arachne_plan_build(&run, pol, a.cm, 4, 0));
    ASSERT_OK(arachne_plan_build(&built, pol, b.cm, 4, 0));
    ASSERT_OK(arachne_plan_refine(&want, built, b.cm, 300, 0.0));
    arachne_plan_get(built, ARACHNE_PLAN_SAMPLES_PER_S, &t_built);
    arachne_plan_get(want, ARACHNE_PLAN_SAMPLES_PER_S, &t_want);
    ASSERT_GT(t_want, t_built);                  /* the refinement finds a faster plan here */
    ASSERT_OK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS, 300));
    ASSERT_OK(arachne_replan(&next, &d, pol, b.cm, run, o));
    ASSERT(consistent(d));
    t_built = dget(d, ARACHNE_DECISION_NEW_SAMPLES_PER_S);
    ASSERT_EQ(memcmp(&t_built, &t_want, sizeof t_want), 0);
    arachne_replan_decision_destroy(d);
    arachne_plan_destroy(next);
    arachne_plan_destroy(want);
    arachne_plan_destroy(built);
    arachne_plan_destroy(run);
    arachne_policy_destroy(pol);
    arachne_replan_options_destroy(o);
    renv_free(&a);
    renv_free(&b);
}

TEST(removing_a_used_node_forces_switch)
{
    renv a, b;
    arachne_policy *pol = NULL;
    arachne_plan *run = NULL, *next = NULL;
    arachne_replan_decision *d = NULL;
    int i, n = 0, on_rtx = 0, node = 0;
    ASSERT_OK(renv_make(&a, "llama3-8b", "rtx-pro-6000:1x3,a6000:1x4"));
    ASSERT_OK(renv_make(&b, "llama3-8b", "a6000:1x4"));
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_OK(arachne_plan_build(&run, pol, a.cm, 8, 0));
    {
        double r = 0;
        arachne_plan_get(run, ARACHNE_PLAN_RANKS, &r);
        n = (int)r;
    }
    for (i = 0; i < n; i++) {
        ASSERT_OK(arachne_plan_rank_get(run, i, ARACHNE_RANK_NODE, &node));
        on_rtx += node == 0;
    }
    ASSERT_GT(on_rtx, 0); /* the running plan uses the RTX node that leaves */
    ASSERT_OK(arachne_replan(&next, &d, pol, b.cm, run, NULL));
    ASSERT_EQ(dget(d, ARACHNE_DECISION_ACTION), ARACHNE_REPLAN_SWITCH);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_REASON), ARACHNE_REPLAN_REASON_RUNNING_INVALID);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_RUNNING_VALID), 0);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_GPUS_LEFT), on_rtx);
    ASSERT_NEAR(dget(d, ARACHNE_DECISION_OLD_SAMPLES_PER_S), 0.0, 0);
    ASSERT(consistent(d));
    /* state only the RTX GPUs held comes from a checkpoint; every source
     * that is a rank is a GPU that remains */
    for (i = 0; i < (int)dget(d, ARACHNE_DECISION_MIGRATIONS); i++) {
        double src = 0, link = 0, sn = 0;
        ASSERT_OK(arachne_replan_migration_get(d, i, ARACHNE_MIGRATION_SRC_RANK, &src));
        ASSERT_OK(arachne_replan_migration_get(d, i, ARACHNE_MIGRATION_LINK, &link));
        ASSERT_OK(arachne_replan_migration_get(d, i, ARACHNE_MIGRATION_SRC_NODE, &sn));
        ASSERT_EQ(src < 0, link == AR_LINK_CHECKPOINT);
        if (src >= 0) ASSERT_EQ(sn, 0); /* the A6000 node is node 0 of the new cluster */
    }
    {
        const char *why = NULL;
        arachne_replan_explain(d, &why);
        ASSERT_CONTAINS(why, "GPUs left");
    }
    arachne_replan_decision_destroy(d);
    arachne_plan_destroy(next);
    arachne_plan_destroy(run);
    arachne_policy_destroy(pol);
    renv_free(&a);
    renv_free(&b);
}

/* A one-template, one-replica plan by hand: stage s on (node, gpu0 + ...). */
static int hand_plan(arachne_plan *p, const arachne_cost_model *cm, int depth, const int *tp, const int *first,
                     const int *gpu0)
{
    int st = ar_plan_init(p, cm), s, k, r = 0, n = 0;
    if (st) return st;
    p->ntemplates = 1;
    p->t[0].depth = depth;
    p->t[0].replicas = 1;
    p->t[0].micro_batch = 1;
    p->t[0].micro_batches = cm->setup.global_batch;
    for (s = 0; s < depth; s++) {
        ar_stage *S = &p->t[0].stages[s];
        S->type = 0;
        S->tp = tp[s];
        S->first = first[s];
        S->end = s + 1 < depth ? first[s + 1] : cm->model->blocks;
        S->ep = S->etp = 1;
        S->edp = tp[s];
        n += tp[s];
    }
    p->ranks = calloc((size_t)n, sizeof *p->ranks);
    if (!p->ranks) return ARACHNE_E_NO_MEMORY;
    for (s = 0; s < depth; s++)
        for (k = 0; k < tp[s]; k++, r++) {
            ar_rank *R = &p->ranks[r];
            R->rank = r;
            R->node = 0;
            R->gpu = gpu0[s] + k;
            R->stage = s;
            R->tp_rank = k;
        }
    p->nranks = n;
    return ar_plan_finish(p);
}

TEST(migration_bytes_by_hand)
{
    renv e;
    arachne_plan old, moved, split;
    ar_migration m;
    const int tp_old[] = { 1, 1 }, first[] = { 0, 16 }, gpu_old[] = { 0, 1 };
    const int tp_split[] = { 1, 2 }, gpu_split[] = { 0, 1 };
    const int tp_moved[] = { 1, 1 }, gpu_moved[] = { 0, 3 };
    int alive[] = { 0, 0 }, gone[] = { 0, -1 };
    double P = 0, H = 0, bpp, intra = 0, inter = 0, want;
    memset(&old, 0, sizeof old);
    memset(&moved, 0, sizeof moved);
    memset(&split, 0, sizeof split);
    ASSERT_OK(renv_make(&e, "llama3-8b", "a100-80:1x4"));
    ASSERT_OK(arachne_model_layer_params(e.model, ARACHNE_LAYER_DENSE, &P));
    ASSERT_OK(arachne_model_layer_params(e.model, ARACHNE_LAYER_HEAD, &H));
    ASSERT_OK(arachne_gpu_get("a100-80", ARACHNE_GPU_INTRA_BYTES_PER_S, &intra));
    ASSERT_OK(arachne_gpu_get("a100-80", ARACHNE_GPU_INTER_BYTES_PER_S, &inter));
    bpp = 2.0 + 12.0; /* bf16 weights + fp32 master and two Adam moments */
    ASSERT_OK(hand_plan(&old, e.cm, 2, tp_old, first, gpu_old));
    ASSERT_OK(hand_plan(&split, e.cm, 2, tp_split, first, gpu_split));
    ASSERT_OK(hand_plan(&moved, e.cm, 2, tp_moved, first, gpu_moved));

    /* nothing changes: nothing moves */
    ASSERT_OK(ar_migration_compute(e.cm, &old, alive, &old, &m));
    ASSERT_EQ(m.n, 0);
    ASSERT_NEAR(m.bytes, 0.0, 0);
    ASSERT_EQ(m.slowest_rank, -1);
    ar_migration_free(&m);

    /* stage 1 goes TP 2 over GPUs 1 and 2: GPU 0 and GPU 1 keep what they
     * hold; GPU 2 receives half of blocks 16..31 and of the head from rank 1 */
    alive[1] = 0;
    ASSERT_OK(ar_migration_compute(e.cm, &old, alive, &split, &m));
    ASSERT_EQ(m.n, 1);
    want = 0.5 * (16.0 * P + H) * bpp;
    ASSERT_EQ(m.e[0].src_rank, 1);
    ASSERT_EQ(m.e[0].dst_rank, 2);
    ASSERT_EQ(m.e[0].first, 16);
    ASSERT_EQ(m.e[0].end, 33); /* blocks 16..31 and the head (layer 32) */
    ASSERT_EQ(m.e[0].link, AR_LINK_INTRA);
    ASSERT_NEAR(m.e[0].bytes, want, 1e-12);
    ASSERT_NEAR(m.e[0].seconds, want / intra, 1e-12);
    ASSERT_NEAR(m.bytes, want, 1e-12);
    ASSERT_NEAR(m.max_rank_s, want / intra, 1e-12);
    ASSERT_EQ(m.slowest_rank, 2);
    ar_migration_free(&m);

    /* stage 1 moves whole to GPU 3 */
    ASSERT_OK(ar_migration_compute(e.cm, &old, alive, &moved, &m));
    ASSERT_EQ(m.n, 1);
    want = (16.0 * P + H) * bpp;
    ASSERT_EQ(m.e[0].src_rank, 1);
    ASSERT_EQ(m.e[0].dst_rank, 1);
    ASSERT_NEAR(m.e[0].bytes, want, 1e-12);
    ar_migration_free(&m);

    /* ... and when GPU 1 has left, it comes from a checkpoint */
    ASSERT_OK(ar_migration_compute(e.cm, &old, gone, &moved, &m));
    ASSERT_EQ(m.n, 1);
    ASSERT_EQ(m.e[0].src_rank, -1);
    ASSERT_EQ(m.e[0].src_node, -1);
    ASSERT_EQ(m.e[0].link, AR_LINK_CHECKPOINT);
    ASSERT_NEAR(m.e[0].bytes, want, 1e-12);
    ASSERT_NEAR(m.e[0].seconds, want / inter, 1e-12);
    ar_migration_free(&m);

    ar_plan_clear(&old);
    ar_plan_clear(&split);
    ar_plan_clear(&moved);
    renv_free(&e);
}

/* llama3-8b on a100-80:1x4 with the distributed optimizer (ZeRO-1); the
 * parameters of a block, the embedding and the head. */
static int zero1_env(renv *e, double *P, double *E, double *H)
{
    int st;
    if ((st = renv_make(e, "llama3-8b", "a100-80:1x4")) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_DIST_OPTIMIZER, 1)) ||
        (st = arachne_model_layer_params(e->model, ARACHNE_LAYER_DENSE, P)) ||
        (st = arachne_model_layer_params(e->model, ARACHNE_LAYER_EMBED, E)))
        return st;
    return arachne_model_layer_params(e->model, ARACHNE_LAYER_HEAD, H);
}

TEST(migration_sharded_optimizer_by_hand)
{
    /* ZeRO-1: two replicas of a one-stage plan each hold half of the
     * optimizer state; shrinking to one replica on GPU 0 makes GPU 0 fetch
     * the other half (12 bytes per parameter) from rank 1; weights stay. */
    renv e;
    arachne_plan two, one;
    ar_migration m;
    const int tp[] = { 1 }, first[] = { 0 }, gpu[] = { 0 };
    int alive[] = { 0, 0 }, r;
    double P = 0, E = 0, H = 0, want;
    memset(&two, 0, sizeof two);
    memset(&one, 0, sizeof one);
    ASSERT_OK(zero1_env(&e, &P, &E, &H));
    ASSERT_OK(hand_plan(&one, e.cm, 1, tp, first, gpu));
    ASSERT_OK(hand_plan(&two, e.cm, 1, tp, first, gpu));
    two.t[0].replicas = 2;
    two.t[0].stages[0].edp = 2;
    free(two.ranks);
    two.ranks = calloc(2, sizeof *two.ranks);
    ASSERT(two.ranks != NULL);
    two.nranks = 2;
    for (r = 0; r < 2; r++) {
        two.ranks[r].rank = r;
        two.ranks[r].gpu = r;
        two.ranks[r].replica = r;
    }
    ASSERT_OK(ar_migration_compute(e.cm, &two, alive, &one, &m));
    want = 0.5 * (32.0 * P + E + H) * 12.0;
    ASSERT_EQ(m.n, 1);
    ASSERT_EQ(m.e[0].src_rank, 1);
    ASSERT_EQ(m.e[0].dst_rank, 0);
    ASSERT_EQ(m.e[0].first, -1);
    ASSERT_EQ(m.e[0].end, 33);
    ASSERT_NEAR(m.bytes, want, 1e-12);
    ar_migration_free(&m);
    ar_plan_clear(&one);
    ar_plan_clear(&two);
    renv_free(&e);
}

TEST(migration_sharded_optimizer_tiles_mixed_tp)
{
    /* ZeRO-1 over two replicas of different TP degrees: template 0 runs the
     * model at TP 2 on GPUs 0-1, template 1 at TP 1 on GPU 2.  Their
     * optimizer slices must tile each layer once (cells of 1/2, each cut in
     * two slices: GPU 0 [0, 1/4), GPU 1 [1/2, 3/4), GPU 2 [1/4, 1/2) and
     * [3/4, 1)), so a switch to one TP-1 rank on GPU 0 with every GPU still
     * there reads nothing from a checkpoint.  (With the slice of the shard,
     * k/t + g/(tR), GPU 2 held [1/2, 1) and [1/4, 1/2) belonged to no one.) */
    renv e;
    arachne_plan two, one;
    ar_migration m;
    const int tp2[] = { 2 }, tp1[] = { 1 }, first[] = { 0 }, gpu0[] = { 0 };
    int alive[] = { 0, 0, 0 }, i, r;
    double P = 0, E = 0, H = 0, want;
    memset(&two, 0, sizeof two);
    memset(&one, 0, sizeof one);
    ASSERT_OK(zero1_env(&e, &P, &E, &H));
    ASSERT_OK(hand_plan(&one, e.cm, 1, tp1, first, gpu0));
    ASSERT_OK(hand_plan(&two, e.cm, 1, tp2, first, gpu0));
    two.ntemplates = 2;
    ar_template_copy(&two.t[1], &one.t[0]);
    free(two.ranks);
    two.ranks = calloc(3, sizeof *two.ranks);
    ASSERT(two.ranks != NULL);
    two.nranks = 3;
    for (r = 0; r < 3; r++) {
        two.ranks[r].rank = r;
        two.ranks[r].gpu = r;
        two.ranks[r].tmpl = r / 2;
        two.ranks[r].tp_rank = r < 2 ? r : 0;
    }
    ASSERT_OK(ar_migration_compute(e.cm, &two, alive, &one, &m));
    ASSERT(m.n > 0);
    for (i = 0; i < m.n; i++) {
        ASSERT(m.e[i].src_rank >= 1); /* GPU 1 or 2, never a checkpoint */
        ASSERT_EQ(m.e[i].dst_rank, 0);
    }
    /* GPU 0 keeps weights [0, 1/2) and optimizer state [0, 1/4) */
    want = (32.0 * P + E + H) * (0.5 * 2.0 + 0.75 * 12.0);
    ASSERT_NEAR(m.bytes, want, 1e-12);
    ar_migration_free(&m);
    ar_plan_clear(&one);
    ar_plan_clear(&two);
    renv_free(&e);
}

TEST(migration_follows_interleaved_chunks)
{
    /* Two stages of 16 blocks on GPUs 0 and 1, interleaved (vp 2): GPU 0
     * computes chunks [0, 8) and [16, 24), GPU 1 [8, 16) and [24, 32).
     * Switching to the same stages without interleaving, GPU 0 needs
     * [8, 16) from GPU 1 and GPU 1 needs [16, 24) from GPU 0 (the embedding
     * and the head stay).  Read as [first, end), nothing would move. */
    renv e;
    arachne_plan vp, flat;
    ar_migration m;
    const int tp[] = { 1, 1 }, first[] = { 0, 16 }, gpu[] = { 0, 1 };
    int alive[] = { 0, 0 }, i;
    double P = 0, bpp = 2.0 + 12.0;
    memset(&vp, 0, sizeof vp);
    memset(&flat, 0, sizeof flat);
    ASSERT_OK(renv_make(&e, "llama3-8b", "a100-80:1x4"));
    ASSERT_OK(arachne_model_layer_params(e.model, ARACHNE_LAYER_DENSE, &P));
    ASSERT_OK(hand_plan(&vp, e.cm, 2, tp, first, gpu));
    ASSERT_OK(hand_plan(&flat, e.cm, 2, tp, first, gpu));
    vp.t[0].vp = 2;
    ASSERT_OK(ar_migration_compute(e.cm, &vp, alive, &flat, &m));
    ASSERT_EQ(m.n, 2);
    for (i = 0; i < 2; i++) {
        ASSERT_EQ(m.e[i].dst_rank, i);
        ASSERT_EQ(m.e[i].src_rank, 1 - i);
        ASSERT_EQ(m.e[i].first, i == 0 ? 8 : 16);
        ASSERT_EQ(m.e[i].end, i == 0 ? 16 : 24);
        ASSERT_NEAR(m.e[i].bytes, floor(8.0 * P * bpp + 0.5), 0);
    }
    ar_migration_free(&m);
    /* and back: the interleaved plan's chunks come from the flat one */
    ASSERT_OK(ar_migration_compute(e.cm, &flat, alive, &vp, &m));
    ASSERT_EQ(m.n, 2);
    ASSERT_EQ(m.e[0].first, 16);
    ASSERT_EQ(m.e[1].first, 8);
    ar_migration_free(&m);
    ar_plan_clear(&vp);
    ar_plan_clear(&flat);
    renv_free(&e);
}

TEST(decision_json_parses)
{
    renv a, b;
    arachne_policy *pol = NULL;
    arachne_plan *run = NULL;
    arachne_replan_decision *d = NULL;
    ar_json *root = NULL;
    const ar_json *mig = NULL;
    const char *text = NULL, *s = NULL;
    double v = 0;
    ASSERT_OK(renv_make(&a, "llama3-8b", "rtx-pro-6000:1x3"));
    ASSERT_OK(renv_make(&b, "llama3-8b", "rtx-pro-6000:1x3,a6000:1x4"));
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_OK(arachne_plan_build(&run, pol, a.cm, 4, 0));
    ASSERT_OK(arachne_replan(NULL, &d, pol, b.cm, run, NULL));
    ASSERT_OK(arachne_replan_to_json(d, &text));
    ASSERT_OK(ar_json_parse(&root, text, strlen(text), "<decision>"));
    ASSERT_OK(ar_json_str(root, "format", 1, &s));
    ASSERT_STR(s, "arachne-replan");
    ASSERT_OK(ar_json_str(root, "action", 1, &s));
    ASSERT_STR(s, dget(d, ARACHNE_DECISION_ACTION) == ARACHNE_REPLAN_SWITCH ? "switch" : "keep");
    ASSERT_OK(ar_json_num(root, "bytes_moved", 1, &v));
    ASSERT_NEAR(v, dget(d, ARACHNE_DECISION_BYTES_MOVED), 1e-15);
    ASSERT_OK(ar_json_num(root, "cost_s", 1, &v));
    ASSERT_NEAR(v, dget(d, ARACHNE_DECISION_COST_S), 1e-15);
    ASSERT_OK(ar_json_arr(root, "migration", 1, &mig));
    ASSERT_EQ(mig->count, dget(d, ARACHNE_DECISION_MIGRATIONS));
    ASSERT_GT(mig->count, 0); /* new GPUs hold nothing yet: anything they run is sent */
    ar_json_free(root);
    arachne_replan_decision_destroy(d);
    arachne_plan_destroy(run);
    arachne_policy_destroy(pol);
    renv_free(&a);
    renv_free(&b);
}

TEST(bad_arguments)
{
    renv a, q;
    arachne_policy *pol = NULL;
    arachne_plan *run = NULL, *next = (arachne_plan *)&a;
    arachne_replan_decision *d = (arachne_replan_decision *)&a;
    double v = 0;
    int n = 0;
    ASSERT_OK(renv_make(&a, "llama3-8b", "rtx-pro-6000:1x3"));
    ASSERT_OK(renv_make(&q, "qwen3-8b", "rtx-pro-6000:1x3"));
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_OK(arachne_plan_build(&run, pol, a.cm, 1, 0));
    ASSERT_STATUS(arachne_replan(&next, &d, NULL, a.cm, run, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(next == NULL && d == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "policy");
    ASSERT_STATUS(arachne_replan(&next, &d, pol, NULL, run, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_replan(&next, &d, pol, a.cm, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "running plan");
    ASSERT_STATUS(arachne_replan(NULL, NULL, pol, a.cm, run, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_replan(&next, &d, pol, q.cm, run, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "qwen3-8b");
    /* a running plan whose recorded cluster cannot be read */
    {
        char *saved = run->cluster_spec;
        run->cluster_spec = "rtx-pro-6000:1x";
        ASSERT_STATUS(arachne_replan(&next, &d, pol, a.cm, run, NULL), ARACHNE_E_PARSE);
        run->cluster_spec = saved;
    }
    ASSERT_OK(arachne_replan(NULL, &d, pol, a.cm, run, NULL));
    ASSERT_STATUS(arachne_replan_get(d, 99, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_replan_get(NULL, ARACHNE_DECISION_ACTION, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_replan_migration_get(d, 0, ARACHNE_MIGRATION_BYTES, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "out of range");
    ASSERT_STATUS(arachne_replan_idle_gpus(d, "h100", &n), ARACHNE_E_NOT_FOUND);
    ASSERT_OK(arachne_replan_idle_gpus(d, NULL, &n));
    ASSERT_EQ(n, dget(d, ARACHNE_DECISION_IDLE_GPUS));
    ASSERT_STATUS(arachne_replan_to_json(d, NULL), ARACHNE_E_INVALID_ARGUMENT);
    arachne_replan_decision_destroy(d);
    arachne_plan_destroy(run);
    arachne_policy_destroy(pol);
    renv_free(&a);
    renv_free(&q);
}

/* A running plan that fits only with full recomputation, replanned with a
 * selective cost model: with ARACHNE_OPT_RECOMPUTE_SEARCH 0 neither the
 * running plan nor a new one fits; with the default 1 the running plan is
 * priced in its own mode (valid, kept) and the new plan recomputes fully
 * too. */
TEST(recompute_search_prices_a_fully_recomputing_running_plan_in_its_mode)
{
    renv e;
    arachne_policy *pol = NULL;
    arachne_plan *run = NULL, *next = (arachne_plan *)&e;
    arachne_replan_decision *d = NULL;
    arachne_replan_options *o = opts_k(4);
    double mode = -1;
    ASSERT(o != NULL);
    ASSERT_OK(renv_make(&e, "qwen3-30b-a3b", "a100-40:4x4"));
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    ASSERT_STATUS(arachne_plan_build(&run, pol, e.cm, 4, 0), ARACHNE_E_INFEASIBLE);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
    ASSERT_OK(arachne_plan_build(&run, pol, e.cm, 4, 0));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_SELECTIVE));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, 0));
    ASSERT_STATUS(arachne_replan(&next, &d, pol, e.cm, run, o), ARACHNE_E_INFEASIBLE);
    ASSERT(next == NULL && d == NULL);
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE_SEARCH, 1)); /* the default */
    ASSERT_OK(arachne_replan(&next, &d, pol, e.cm, run, o));
    ASSERT_EQ(dget(d, ARACHNE_DECISION_RUNNING_VALID), 1);
    ASSERT_EQ(dget(d, ARACHNE_DECISION_ACTION), ARACHNE_REPLAN_KEEP);
    ASSERT(consistent(d));
    ASSERT_OK(arachne_plan_get(next, ARACHNE_PLAN_RECOMPUTE, &mode));
    ASSERT_EQ(mode, ARACHNE_RECOMPUTE_FULL);
    replan_test_free(d, next, run, pol, o, &e);
}

/* ARACHNE_OPT_EXACT_DIVISION 2: the new plan is the default planner's for
 * the asked batch.  On this cluster at batch 256 the default planner's
 * plan runs 260 samples (test_plan_exact.c); with 2 arachne_replan's new
 * plan is arachne_plan_build_refined's with 2, which runs 256. */
TEST(exact_division_2_replans_for_the_asked_batch)
{
    renv a, b;
    arachne_policy *pol = NULL;
    arachne_plan *run = NULL, *want = NULL, *next = NULL;
    arachne_replan_decision *d = NULL;
    arachne_replan_options *o = opts_k(16);
    double sps = 0, runs = 0;
    ASSERT(o != NULL);
    if (arachne_policy_load(&pol, "examples/policies/default.arpol") != ARACHNE_OK) {
        arachne_replan_options_destroy(o);
        SKIP("examples/policies/default.arpol not found (run from the repository root)");
    }
    ASSERT_OK(arachne_replan_options_set(o, ARACHNE_REPLAN_OPT_REFINE_EVALUATIONS, ARACHNE_REFINE_EVALUATIONS));
    ASSERT_OK(renv_make(&a, "llama3-8b", "h100:2x4,b200:2x4"));
    ASSERT_OK(renv_make(&b, "llama3-8b", "h100:2x4,gh-96:1x4,b200:2x4"));
    ASSERT_OK(arachne_cost_model_set(a.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    ASSERT_OK(arachne_cost_model_set(b.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    ASSERT_OK(arachne_plan_build(&run, pol, a.cm, 1, 0));
    ASSERT_OK(arachne_cost_model_set(b.cm, ARACHNE_OPT_EXACT_DIVISION, 2));
    ASSERT_OK(arachne_plan_build_refined(&want, pol, b.cm, 16, 0, ARACHNE_REFINE_EVALUATIONS, 0.0));
    arachne_plan_get(want, ARACHNE_PLAN_SAMPLES_RUN, &runs);
    ASSERT_EQ(runs, 256);
    arachne_plan_get(want, ARACHNE_PLAN_SAMPLES_PER_S, &sps);
    ASSERT_OK(arachne_replan(&next, &d, pol, b.cm, run, o));
    ASSERT(consistent(d));
    ASSERT_EQ(dget(d, ARACHNE_DECISION_NEW_SAMPLES_PER_S), sps);
    arachne_replan_decision_destroy(d);
    arachne_plan_destroy(next);
    d = NULL;
    next = NULL;
    /* with 0, the plan that runs 260: another new plan */
    ASSERT_OK(arachne_cost_model_set(b.cm, ARACHNE_OPT_EXACT_DIVISION, 0));
    ASSERT_OK(arachne_replan(&next, &d, pol, b.cm, run, o));
    ASSERT(dget(d, ARACHNE_DECISION_NEW_SAMPLES_PER_S) != sps);
    arachne_plan_destroy(want);
    replan_test_free(d, next, run, pol, o, &b);
    renv_free(&a);
}

SUITE(replan, T(options_defaults_and_ranges), T(node_map_matches_type_and_index), T(unchanged_cluster_keeps),
      T(adding_nodes_gives_valid_plan_and_consistent_decision), T(refine_evaluations_refine_the_new_plan),
      T(removing_a_used_node_forces_switch),
      T(migration_bytes_by_hand),
      T(migration_sharded_optimizer_by_hand), T(migration_sharded_optimizer_tiles_mixed_tp),
      T(migration_follows_interleaved_chunks), T(decision_json_parses), T(bad_arguments),
      T(recompute_search_prices_a_fully_recomputing_running_plan_in_its_mode),
      T(exact_division_2_replans_for_the_asked_batch));
