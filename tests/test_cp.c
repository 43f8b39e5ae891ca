/* test_cp.c -- context parallelism: pricing (compute, ring transfers,
 * activations, gradient ranks), the masks (seq divisible by 2 cp), plans
 * of a given configuration (cp=N), plan JSON, exports, and the planner
 * choosing it for long sequences. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "cost.h"
#include "fill.h"

typedef struct cpenv {
    arachne_model *m;
    arachne_cluster *c;
    arachne_profile *p;
    arachne_cost_model *cm;
} cpenv;

static int cp_open(cpenv *e, const char *model, const char *cluster, int seq)
{
    int st;
    memset(e, 0, sizeof *e);
    if ((st = arachne_model_preset(&e->m, model))) return st;
    if ((st = arachne_cluster_parse(&e->c, cluster))) return st;
    if ((st = arachne_profile_generate(&e->p, e->m, e->c, seq))) return st;
    return arachne_cost_model_create(&e->cm, e->m, e->c, e->p);
}

static void cp_close(cpenv *e)
{
    arachne_cost_model_destroy(e->cm);
    arachne_profile_destroy(e->p);
    arachne_cluster_destroy(e->c);
    arachne_model_destroy(e->m);
}

static double tfield(const arachne_plan *p, int t, int f)
{
    double v = -1;
    arachne_plan_template_get(p, t, f, &v);
    return v;
}

static double sfield(const arachne_plan *p, int t, int s, int f)
{
    double v = -1;
    arachne_plan_stage_get(p, t, s, f, &v);
    return v;
}

/* A CP stage computes 1/cp of the tokens: its compute is the TP-only
 * stage's over cp, its activations per GPU too; it uses tp x cp GPUs per
 * replica and the ranks follow Megatron's order (TP fastest, then CP). */
TEST(cp_stage_prices_a_cp_share_of_the_tokens)
{
    cpenv e;
    arachne_plan *a = NULL, *b = NULL;
    ar_stage_mem ma, mb;
    int s, i;
    ASSERT_OK(cp_open(&e, "llama3-8b", "h100:4x8", 8192));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    ASSERT_OK(arachne_plan_from_parallel(&a, e.cm, "tp=4,pp=2,dp=4,mbs=1"));
    ASSERT_OK(arachne_plan_from_parallel(&b, e.cm, "tp=4,cp=2,pp=2,dp=2,mbs=1"));
    ASSERT_EQ(2, (int)tfield(b, 0, ARACHNE_TEMPLATE_CP));
    ASSERT_EQ(1, (int)tfield(a, 0, ARACHNE_TEMPLATE_CP));
    ASSERT_EQ(32, (int)tfield(b, 0, ARACHNE_TEMPLATE_DEPTH) * 2 * 4 * 2);
    for (s = 0; s < 2; s++) {
        ASSERT_NEAR(b->t[0].stages[s].compute_s, a->t[0].stages[s].compute_s / 2, 1e-12);
        if (s == 0) ASSERT(b->t[0].stages[s].p2p_s < a->t[0].stages[s].p2p_s);
        ASSERT_OK(ar_stage_memory(e.cm, &a->t[0], s, 4, 4, 4, &ma));
        ASSERT_OK(ar_stage_memory(e.cm, &b->t[0], s, 4, 4, 4, &mb));
        ASSERT_NEAR(mb.acts, ma.acts / 2, 1e-12);
        ASSERT_NEAR(mb.weights, ma.weights, 1e-12);
    }
    for (i = 0; i < b->nranks; i++) {
        const ar_rank *R = &b->ranks[i];
        ASSERT_EQ(R->rank % 4, R->tp_rank);
        ASSERT_EQ((R->rank / 4) % 2, R->cp_rank);
        ASSERT_EQ((R->rank / 8) % 2, R->replica);
    }
    arachne_plan_destroy(a);
    arachne_plan_destroy(b);
    cp_close(&e);
}

/* Ring attention across nodes costs more than inside one (NVLink) and the
 * exposed transfer never goes negative. */
TEST(cp_ring_across_nodes_is_never_cheaper)
{
    cpenv e;
    arachne_plan *p = NULL;
    ar_stage_place in, out;
    ar_stage si, so;
    ASSERT_OK(cp_open(&e, "llama3-8b", "h100:4x8", 4096));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    ASSERT_OK(arachne_plan_from_parallel(&p, e.cm, "tp=8,cp=2,pp=1,dp=2,mbs=4"));
    memset(&in, 0, sizeof in);
    in.node = -1;
    in.dp_local = 1;
    out = in;
    out.cp_inter = 1;
    ASSERT_OK(ar_stage_price(e.cm, &p->t[0], 0, &in, &si));
    ASSERT_OK(ar_stage_price(e.cm, &p->t[0], 0, &out, &so));
    ASSERT(so.tp_comm_s >= si.tp_comm_s);
    ASSERT(si.tp_comm_s >= 0.0);
    ASSERT_NEAR(so.compute_s, si.compute_s, 1e-12);
    arachne_plan_destroy(p);
    cp_close(&e);
}

/* cp=N that the sequence cannot be split for is an error naming cp; the
 * fill never offers it (a mask, not a failure). */
TEST(cp_masks_and_errors)
{
    cpenv e;
    arachne_plan *p = NULL;
    ASSERT_OK(cp_open(&e, "llama3-8b", "h100:2x8", 4104)); /* 4104 = 8 x 513: 2 cp divides it for cp 2, 4 only */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 16));
    ASSERT_EQ(ARACHNE_E_INVALID_ARGUMENT, arachne_plan_from_parallel(&p, e.cm, "tp=1,cp=8,pp=1,dp=2"));
    ASSERT(strstr(arachne_last_error(), "cp=8") != NULL);
    ASSERT(p == NULL);
    ASSERT_OK(arachne_plan_from_parallel(&p, e.cm, "tp=2,cp=4,pp=1,dp=2"));
    arachne_plan_destroy(p);
    p = NULL;
    ASSERT_EQ(ARACHNE_E_INFEASIBLE, arachne_plan_from_parallel(&p, e.cm, "tp=8,cp=2,pp=1,dp=2"));
    {
        /* the fill, given 8-GPU groups, may split them 4 x 2 or 2 x 4, never 1 x 8 */
        ar_avail a;
        arachne_plan plan;
        int types[1] = { 0 }, tps[1] = { 8 };
        memset(&a, 0, sizeof a);
        ASSERT_OK(ar_avail_init(&a, e.c));
        ASSERT_OK(ar_plan_init(&plan, e.cm));
        ASSERT_OK(ar_fill_template(e.cm, &a, &plan, 1, types, tps));
        ASSERT(plan.t[0].cp == 0 || plan.t[0].cp == 2 || plan.t[0].cp == 4);
        ASSERT_EQ(8, ar_stage_gpus(&plan.t[0], 0));
        ASSERT_OK(ar_plan_validate(e.cm, &plan));
        ar_plan_clear(&plan);
        ar_avail_free(&a);
    }
    cp_close(&e);
}

/* Plan JSON: "cp" and "cp_rank" round-trip; plans without CP carry neither;
 * a bad value is an error naming the key and its place. */
TEST(cp_plan_json_round_trip_and_errors)
{
    cpenv e;
    arachne_plan *p = NULL, *q = NULL, *r = NULL;
    const char *text = NULL, *t2 = NULL;
    char *bad, *at;
    ASSERT_OK(cp_open(&e, "llama3-8b", "h100:4x8", 8192));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    ASSERT_OK(arachne_plan_from_parallel(&r, e.cm, "tp=4,pp=2,dp=4"));
    ASSERT_OK(arachne_plan_to_json(r, &text));
    ASSERT(strstr(text, "\"cp\"") == NULL && strstr(text, "cp_rank") == NULL);
    ASSERT_OK(arachne_plan_from_parallel(&p, e.cm, "tp=2,cp=4,pp=2,dp=2"));
    ASSERT_OK(arachne_plan_to_json(p, &text));
    ASSERT(strstr(text, "\"cp\": 4") != NULL);
    ASSERT(strstr(text, "\"cp_rank\": 3") != NULL);
    ASSERT_OK(arachne_plan_from_json(&q, e.cm, text, strlen(text)));
    ASSERT_OK(arachne_plan_to_json(q, &t2));
    ASSERT_NEAR(q->iteration_s, p->iteration_s, 1e-12);
    ASSERT_EQ(4, (int)tfield(q, 0, ARACHNE_TEMPLATE_CP));
    ASSERT_EQ(2, (int)sfield(q, 0, 0, ARACHNE_STAGE_TP));
    arachne_plan_destroy(q);
    q = NULL;
    bad = malloc(strlen(text) + 8);
    ASSERT(bad != NULL);
    strcpy(bad, text);
    at = strstr(bad, "\"cp\": 4");
    ASSERT(at != NULL);
    at[6] = '0';
    ASSERT(arachne_plan_from_json(&q, e.cm, bad, strlen(bad)) != ARACHNE_OK);
    ASSERT(strstr(arachne_last_error(), "cp") != NULL);
    ASSERT(strstr(arachne_last_error(), ":") != NULL);
    ASSERT(q == NULL);
    strcpy(bad, text);
    at = strstr(bad, "\"cp_rank\": 3");
    ASSERT(at != NULL);
    at[11] = '7'; /* cp_rank 7 of cp 4 */
    ASSERT_EQ(ARACHNE_E_INVALID_PLAN, arachne_plan_from_json(&q, e.cm, bad, strlen(bad)));
    ASSERT(strstr(arachne_last_error(), "cp_rank 7") != NULL);
    free(bad);
    arachne_plan_destroy(p);
    arachne_plan_destroy(r);
    cp_close(&e);
}

/* Megatron and torchtitan take the CP degree; FlashFlex and Sailor cannot
 * and say so. */
TEST(cp_exports)
{
    cpenv e;
    arachne_plan *p = NULL;
    char buf[1 << 16];
    ASSERT_OK(cp_open(&e, "llama3-8b", "h100:4x8", 8192));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    ASSERT_OK(arachne_plan_from_parallel(&p, e.cm, "tp=4,cp=2,pp=2,dp=2"));
    ASSERT_OK(arachne_plan_export(p, ARACHNE_EXPORT_MEGATRON, buf, sizeof buf, NULL));
    ASSERT(strstr(buf, "--context-parallel-size 2") != NULL);
    ASSERT(strstr(buf, "--context-parallel-size 2 --cp-comm-type p2p") != NULL);
    ASSERT(strstr(buf, "TP 4 x CP 2") != NULL);
    ASSERT_OK(arachne_plan_export(p, ARACHNE_EXPORT_TORCHTITAN, buf, sizeof buf, NULL));
    ASSERT(strstr(buf, "context_parallel_degree = 2") != NULL);
    ASSERT_OK(arachne_plan_export(p, ARACHNE_EXPORT_TORCHTITAN_CLI, buf, sizeof buf, NULL));
    ASSERT(strstr(buf, "--parallelism.context_parallel_degree 2") != NULL);
    ASSERT_OK(arachne_plan_export(p, ARACHNE_EXPORT_RANKS, buf, sizeof buf, NULL));
    ASSERT(strstr(buf, "\"cp_rank\":1,\"cp_size\":2,\"cp_group\":[0,4]") != NULL);
    ASSERT(strstr(buf, "\"cp_group\":[0,4]") != NULL);
    ASSERT(strstr(buf, "\"tp_group\":[4,5,6,7]") != NULL);
    ASSERT_EQ(ARACHNE_E_UNSUPPORTED, arachne_plan_export(p, ARACHNE_EXPORT_FLASHFLEX, buf, sizeof buf, NULL));
    ASSERT(strstr(arachne_last_error(), "context parallelism") != NULL);
    ASSERT_EQ(ARACHNE_E_UNSUPPORTED, arachne_plan_export(p, ARACHNE_EXPORT_SAILOR, buf, sizeof buf, NULL));
    arachne_plan_destroy(p);
    cp_close(&e);
}

/* The feasibility check (CHECK mode, what the lookahead asks) and the fill
 * proper (BEST) agree on every template, with context parallelism on and
 * off; every plan BEST returns validates and its cp splits the groups. */
TEST(cp_fill_check_agrees_with_best)
{
    cpenv e;
    ar_fill_ws ws;
    ar_rng rng;
    int it, on, agree = 0, fits = 0, cps = 0;
    ASSERT_OK(cp_open(&e, "llama3-8b", "h100:2x8,a100-40:2x4", 32768));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 32));
    ASSERT_OK(ar_fill_ws_init(&ws, e.cm));
    ar_rng_seed(&rng, 23);
    for (it = 0; it < 60; it++)
        for (on = 0; on <= 1; on++) {
            ar_avail a, a2;
            arachne_plan plan;
            int types[4], tps[4], depth = 1 + ar_rng_int(&rng, 4), s, chk, best;
            ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_CONTEXT_PARALLEL, on));
            for (s = 0; s < depth; s++) {
                types[s] = ar_rng_int(&rng, 2);
                tps[s] = 1 << ar_rng_int(&rng, types[s] == 0 ? 4 : 3);
            }
            memset(&a, 0, sizeof a);
            memset(&a2, 0, sizeof a2);
            ASSERT_OK(ar_avail_init(&a, e.c));
            ASSERT_OK(ar_avail_copy(&a2, &a));
            ASSERT_OK(ar_plan_init(&plan, e.cm));
            ar_fill_ws_reset(&ws);
            chk = ar_fill_template_ws(&ws, &a, &plan, depth, types, tps, AR_FILL_CHECK);
            ASSERT_EQ(0, plan.ntemplates);
            best = ar_fill_template_ws(&ws, &a2, &plan, depth, types, tps, AR_FILL_BEST);
            ASSERT_MSG((chk == ARACHNE_OK) == (best == ARACHNE_OK), "depth %d cp %s: check %d, best %d", depth,
                       on ? "on" : "off", chk, best);
            agree++;
            if (best == ARACHNE_OK) {
                fits++;
                ASSERT_OK(ar_plan_validate(e.cm, &plan));
                {
                    /* the stages asked for, in some order (ARACHNE_OPT_STAGE_REVERSAL and
                     * ARACHNE_OPT_STAGE_MOVES reorder them): every stage matches one
                     * asked stage of the same type and GPU group, each used once */
                    int used[4] = { 0, 0, 0, 0 }, k, matched = 0;
                    ASSERT_EQ(depth, plan.t[0].depth);
                    for (s = 0; s < depth; s++)
                        for (k = 0; k < depth; k++)
                            if (!used[k] && tps[k] == ar_stage_gpus(&plan.t[0], s) &&
                                types[k] == plan.t[0].stages[s].type) {
                                used[k] = 1;
                                matched++;
                                break;
                            }
                    ASSERT_EQ(depth, matched);
                }
                if (!on) ASSERT(plan.t[0].cp <= 1);
                cps += plan.t[0].cp > 1;
            }
            arachne_clear_error();
            ar_plan_clear(&plan);
            ar_avail_free(&a);
            ar_avail_free(&a2);
        }
    ASSERT_EQ(120, agree);
    ASSERT(fits > 0 && fits < 120);
    ASSERT(cps > 0);
    ar_fill_ws_free(&ws);
    cp_close(&e);
}

/* The acceptance line: llama3-70b at 32,768 tokens on 16 nodes of 8 H100s.
 * The planner (bundled policy, best-of-16 + refinement, as `arachne plan`)
 * chooses context parallelism, and its plan is faster than the best it
 * finds with context parallelism off. */
TEST(cp_planner_chooses_cp_for_long_sequences)
{
    cpenv e;
    arachne_policy *pol = NULL;
    arachne_plan *on = NULL, *off = NULL, *tmp = NULL;
    int t, cp_used = 0;
    if (arachne_policy_load(&pol, "examples/policies/default.arpol") != ARACHNE_OK) {
        arachne_clear_error();
        ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    }
    ASSERT_OK(cp_open(&e, "llama3-70b", "h100:16x8", 32768));
    /* the refinement's FSDP groups beat CP here (226.7 s against 230.0 s
     * per iteration, 2026-12-07): this test is about CP */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_FSDP_SEARCH, 0));
    ASSERT_OK(arachne_plan_build(&tmp, pol, e.cm, 16, 0));
    ASSERT_OK(arachne_plan_refine(&on, tmp, e.cm, ARACHNE_REFINE_EVALUATIONS, 0));
    arachne_plan_destroy(tmp);
    tmp = NULL;
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_CONTEXT_PARALLEL, 0));
    ASSERT_OK(arachne_plan_build(&tmp, pol, e.cm, 16, 0));
    ASSERT_OK(arachne_plan_refine(&off, tmp, e.cm, ARACHNE_REFINE_EVALUATIONS, 0));
    arachne_plan_destroy(tmp);
    for (t = 0; t < (int)on->ntemplates; t++) cp_used |= tfield(on, t, ARACHNE_TEMPLATE_CP) > 1;
    ASSERT(cp_used);
    for (t = 0; t < (int)off->ntemplates; t++) ASSERT_EQ(1, (int)tfield(off, t, ARACHNE_TEMPLATE_CP));
    ASSERT(on->iteration_s < off->iteration_s);
    arachne_plan_destroy(on);
    arachne_plan_destroy(off);
    arachne_policy_destroy(pol);
    cp_close(&e);
}

/* A CP ring over PCIe nodes with two ranks on a node passes that node's
 * PCIe hop, which is slower than the network (A6000: 32 GB/s x 0.30 against
 * 12.5 GB/s x 0.8): the transfer is priced at the hop's rate; with one rank
 * per node only the network counts. */
TEST(cp_ring_over_pcie_nodes_passes_the_intra_node_hop)
{
    cpenv e;
    arachne_plan *p = NULL;
    ar_stage_place one, two;
    ar_stage a, b;
    ASSERT_OK(cp_open(&e, "llama3-8b", "a6000:4x8", 32768));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 16));
    ASSERT_OK(arachne_plan_from_parallel(&p, e.cm, "tp=1,cp=16,pp=2,dp=1,mbs=1"));
    memset(&one, 0, sizeof one);
    one.node = -1;
    one.dp_local = one.dp_most = 1;
    one.cp_inter = 1;
    two = one;
    two.cp_hop = 1;
    ASSERT_OK(ar_stage_price(e.cm, &p->t[0], 0, &one, &a));
    ASSERT_OK(ar_stage_price(e.cm, &p->t[0], 0, &two, &b));
    ASSERT(b.tp_comm_s > a.tp_comm_s);
    ASSERT_NEAR(b.compute_s, a.compute_s, 1e-12);
    /* the plan's own placement: 8 of a ring's 16 ranks on each node */
    {
        ar_stage_place pl[AR_MAX_DEPTH]; /* one per stage of the template */
        ASSERT_OK(ar_template_place(p, 0, pl));
        ASSERT_EQ(pl[0].cp_inter, 1);
        ASSERT_EQ(pl[0].cp_hop, 1);
        ASSERT_NEAR(p->t[0].stages[0].tp_comm_s, b.tp_comm_s, 1e-12);
    }
    arachne_plan_destroy(p);
    cp_close(&e);
}

SUITE(cp, T(cp_stage_prices_a_cp_share_of_the_tokens), T(cp_ring_across_nodes_is_never_cheaper),
      T(cp_ring_over_pcie_nodes_passes_the_intra_node_hop),
      T(cp_masks_and_errors), T(cp_plan_json_round_trip_and_errors), T(cp_exports),
      T(cp_fill_check_agrees_with_best), T(cp_planner_chooses_cp_for_long_sequences));
