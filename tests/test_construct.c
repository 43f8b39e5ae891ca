/* test_construct.c -- the construction loop and its masks: random rollouts
 * over random clusters never reach a choice that fails to fill and price;
 * traces, rewards, STOP rules, determinism, and the penalty path without
 * the lookahead. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "construct.h"

/* The dead-end and depth-mask tests run with the library default (the
 * distributed optimizer, ZeRO-1: a stage's optimizer state is divided over
 * every replica of the plan) and with replicated optimizer state. */
static int env_open_dist(env *e, const char *model, const char *cluster, int dist)
{
    int st = env_open(e, model, cluster);
    if (st == ARACHNE_OK && !dist) st = arachne_cost_model_set(e->cm, ARACHNE_OPT_DIST_OPTIMIZER, 0);
    return st;
}

/* Uniform choice among the allowed ones; checks the mask rules. */
typedef struct rnd {
    ar_rng rng;
    int bad;             /* a mask rule was broken */
    int asked, wide;     /* REPLICAS decisions seen; templates completed under more than one replica */
    char why[160];
} rnd;

static int rnd_decide(void *user, const ar_dec_ctx *c, int *choice)
{
    rnd *u = (rnd *)user;
    int i, j, allowed = 0;
    for (i = 0; i < c->n; i++) allowed += c->mask[i] != 0;
    if (allowed < 1 || allowed != c->nallowed) { u->bad = 1; snprintf(u->why, sizeof u->why, "empty mask"); }
    if (c->kind == AR_DEC_DEPTH && c->step == 0 && c->mask[0]) { u->bad = 1; snprintf(u->why, sizeof u->why, "STOP allowed at step 0"); }
    if (c->kind == AR_DEC_DEPTH && c->step > 0 && !c->mask[0]) { u->bad = 1; snprintf(u->why, sizeof u->why, "STOP masked at step %d", c->step); }
    if (c->kind == AR_DEC_TYPE) {
        for (i = 0; i < c->n; i++)
            if (c->mask[i] && c->type_left[i] < AR_MAX(c->replicas, 1)) {
                u->bad = 1; snprintf(u->why, sizeof u->why, "type %d allowed with %d GPUs left", i, c->type_left[i]);
            }
    }
    if (c->kind == AR_DEC_REPLICAS) {
        /* allowed counts are 1, 2, 4, ... up to the largest that fits */
        for (i = 0; i < c->n; i++)
            if (!c->mask[i] || c->rep_min_depth[i] < 1) { u->bad = 1; snprintf(u->why, sizeof u->why, "replica choice %d masked", i); }
        u->asked = 1;
    }
    if (c->kind == AR_DEC_TP && c->replicas > 0 && c->stage == c->depth - 1) {
        /* every allowed TP degree of the last stage completes a template of
         * which the asked replicas pack into the free GPUs */
        int tps[AR_MAX_DEPTH];
        memcpy(tps, c->tps, sizeof(int) * (size_t)c->stage);
        for (i = 0; i < c->n; i++) {
            if (!c->mask[i]) continue;
            tps[c->stage] = 1 << i;
            if (ar_pack_max_replicas(c->cm->cluster, c->avail, c->depth, c->types, tps) < c->replicas) {
                u->bad = 1; snprintf(u->why, sizeof u->why, "TP %d allowed but %d replicas do not pack", 1 << i, c->replicas);
            }
        }
        if (c->replicas > 1) u->wide++;
    }
    if (c->kind == AR_DEC_TP) {
        for (i = 0; i < c->n; i++)
            if (c->mask[i] && (1 << i) > c->avail->type_max_free[c->types[c->stage]]) {
                u->bad = 1; snprintf(u->why, sizeof u->why, "TP %d above the largest free node", 1 << i);
            }
    }
    j = ar_rng_int(&u->rng, allowed);
    for (i = 0; i < c->n; i++)
        if (c->mask[i] && j-- == 0) { *choice = i; break; }
    return ARACHNE_OK;
}

/* A random cluster spec: 1..6 GPU types, nodes of 1..8 GPUs, 4..4096 GPUs
 * (log-uniform total). */
static void random_spec(ar_rng *r, char *spec, size_t cap, int max_total)
{
    static const char *types[] = { "a100-40", "a100-80", "h100", "a6000", "a5000", "l40s", "v100", "rtx-pro-6000", "gh-96" };
    int ntypes = 1 + ar_rng_int(r, 6), used[AR_COUNT(types)], t, k, total, left;
    double lg = log(4.0) + ar_rng_uniform(r) * (log((double)max_total) - log(4.0));
    size_t len = 0;
    total = (int)exp(lg);
    if (total < 4) total = 4;
    left = total;
    memset(used, 0, sizeof used);
    spec[0] = '\0';
    for (k = 0; k < ntypes && left > 0; k++) {
        int share = k == ntypes - 1 ? left : 1 + ar_rng_int(r, left), groups = 1 + ar_rng_int(r, 2), g;
        do t = ar_rng_int(r, (int)AR_COUNT(types)); while (used[t]);
        used[t] = 1;
        left -= share;
        len += (size_t)snprintf(spec + len, cap - len, "%s%s:", k ? "," : "", types[t]);
        for (g = 0; g < groups && share > 0; g++) {
            int size = 1 + ar_rng_int(r, 8), nodes = g == groups - 1 ? (share + size - 1) / size : 1 + ar_rng_int(r, share / size + 1);
            if (nodes * size > share) nodes = share / size > 0 ? share / size : 1;
            if (nodes * size > share) size = share;
            len += (size_t)snprintf(spec + len, cap - len, "%s%dx%d", g ? "+" : "", nodes, size);
            share -= nodes * size;
            if (g == groups - 1 && share > 0) { len += (size_t)snprintf(spec + len, cap - len, "+%dx1", share); share = 0; }
        }
    }
}

static int found_one(void *user, const arachne_plan *p)
{
    (void)p;
    *(int *)user = 1;
    return ARACHNE_E_CANCELLED;
}

TEST(random_rollouts_never_reach_a_dead_end)
{
    ar_rng r;
    int presets = arachne_model_preset_count(), cl, k, rollouts = 0, infeasible = 0, big = 0, placed = 0, unproven = 0;
    int seen_model[16], wide = 0, zero1 = 0;
    /* 500 clusters x 20 rollouts = 10,000.  A sanitizer build runs a fifth
     * of the clusters; a quick run (th_quick: check-tsan, check-valgrind)
     * runs those 100 clusters (every preset, one cluster over 1024 GPUs)
     * with 5 rollouts each.  The enumeration that double-checks an
     * unproven infeasibility has a 0.5 s wall-clock budget; under memcheck
     * (~70x slower) even the ones that finish natively in 0.06-0.35 s run
     * out of it, so a quick run allows a tenth of the clusters unproven
     * instead of a 25th (a lookahead that stopped proving infeasibility
     * would leave ~40 of the 100 unproven). */
    int nclusters = 500, per = 20, unproven_max;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    nclusters = 100;
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    nclusters = 100;
#  endif
#endif
    if (th_quick()) { nclusters = 100; per = 5; }
    unproven_max = th_quick() ? nclusters / 10 : nclusters / 25;
    memset(seen_model, 0, sizeof seen_model);
    ar_rng_seed(&r, 2024);
    ASSERT(presets >= 7 && presets <= 16);
    for (cl = 0; cl < nclusters; cl++) {
        char spec[512];
        env e;
        ar_builder b;
        ar_construct_opts o;
        arachne_plan p;
        int mi = cl % presets, st, maxg = cl % 10 == 0 ? 4096 : 256, dist = (cl / 2) % 2 == 0;
        random_spec(&r, spec, sizeof spec, maxg);
        /* clusters alternate in pairs between ZeRO-1 (the default) and
         * replicated optimizer state, so both meet both constructions */
        st = env_open_dist(&e, arachne_model_preset_name(mi), spec, dist);
        ASSERT_MSG(st == ARACHNE_OK, "cluster '%s': %s", spec, arachne_last_error());
        if (dist) zero1++;
        if (e.c->total_gpus > 1024) big = 1;
        seen_model[mi] = 1;
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, 2 + ar_rng_int(&r, 15)));
        if (ar_rng_int(&r, 3) == 0) ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
        if (ar_rng_int(&r, 4) == 0) ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXPERT_TILING, 0));
        /* a quick run fills every other cluster without the stage moves:
         * they multiply each commit's fill by up to 2 (d - 1) searches,
         * and the sanitizer runs have a wall-clock budget */
        if (th_quick() && cl % 2) ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MOVES, 0));
        ar_construct_opts_default(&o);
        o.max_steps = 1 + ar_rng_int(&r, e.c->total_gpus > 512 ? 3 : 6);
        o.replica_first = cl % 2; /* both constructions: the policy's (replica first) and the searches' */
        ASSERT_OK(ar_builder_init(&b, e.cm, &o));
        memset(&p, 0, sizeof p);
        for (k = 0; k < per; k++) {
            rnd u;
            ar_trace tr;
            int s;
            memset(&u, 0, sizeof u);
            ar_rng_seed(&u.rng, (uint64_t)cl * 1000 + (uint64_t)k);
            ar_trace_init(&tr);
            st = ar_builder_run(&b, rnd_decide, &u, &p, &tr);
            rollouts++;
            ASSERT_MSG(!u.bad, "%s on '%s' (ZeRO-1 %d): %s", e.m->name, spec, dist, u.why);
            ASSERT_EQ(u.asked > 0, o.replica_first && st == ARACHNE_OK);
            wide += u.wide;
            if (st == ARACHNE_E_INFEASIBLE) {
                double need, have;
                char msg[512];
                snprintf(msg, sizeof msg, "%s", arachne_last_error());
                ASSERT_EQ(tr.nsteps, 0);
                ASSERT_CONTAINS(msg, e.m->name);
                ar_construct_memory_bound(e.cm, &need, &have);
                /* Accepted when the memory provably cannot hold the model, or
                 * the lookahead proved it (no search cut by its budget).
                 * Otherwise an independent enumeration of first templates
                 * must not find one that fills (it may run out of time). */
                if (!(need > have || b.infeasible_proven)) {
                    ar_builder b2;
                    arachne_plan q;
                    int found = 0;
                    long leaves = 0;
                    ASSERT_OK(ar_builder_init(&b2, e.cm, &o));
                    memset(&q, 0, sizeof q);
                    st = ar_builder_enumerate(&b2, 1, ar_now() + 0.5, found_one, &found, &q, &leaves);
                    ar_plan_clear(&q);
                    ar_builder_free(&b2);
                    ASSERT_MSG(!found, "%s on '%s' (ZeRO-1 %d): a template fits, yet the construction said: %s", e.m->name, spec, dist, msg);
                    if (st == ARACHNE_E_CANCELLED) unproven++;
                }
                infeasible++;
                ar_trace_free(&tr);
                break; /* the same for every rollout of this cluster */
            }
            ASSERT_MSG(st == ARACHNE_OK, "%s on '%s' (ZeRO-1 %d): %s", e.m->name, spec, dist, arachne_last_error());
            ASSERT(p.ntemplates >= 1 && p.ntemplates <= o.max_steps);
            for (s = 0; s < tr.nsteps; s++) ASSERT_MSG(tr.steps[s].feasible, "%s on '%s' (ZeRO-1 %d): step %d infeasible", e.m->name, spec, dist, s);
            placed += p.ntemplates;
            if (k == 0) ASSERT_MSG(ar_plan_validate(e.cm, &p) == ARACHNE_OK, "%s on '%s' (ZeRO-1 %d): %s", e.m->name, spec, dist, arachne_last_error());
            ar_trace_free(&tr);
        }
        ar_plan_clear(&p);
        ar_builder_free(&b);
        env_close(&e);
        if (th_failed_flag) return;
    }
    for (k = 0; k < presets; k++) ASSERT_MSG(seen_model[k], "model %d not covered", k);
    ASSERT(big);
    ASSERT_GT(wide, nclusters * per / 8);
    ASSERT_GT(placed, nclusters * per / 2);
    ASSERT(infeasible < nclusters / 2);
    ASSERT_MSG(unproven <= unproven_max, "%d clusters infeasible without a proof", unproven);
    ASSERT_EQ(rollouts, nclusters * per - infeasible * per + infeasible);
    ASSERT_EQ(zero1, nclusters / 2);
}

/* rnd_decide, except that every width decision takes choice `width`
 * (or the widest allowed when fewer are). */
typedef struct width_pick {
    rnd u;
    int width;
} width_pick;

static int pick_width(void *user, const ar_dec_ctx *c, int *choice)
{
    width_pick *w = (width_pick *)user;
    int st = rnd_decide(&w->u, c, choice);
    if (!st && c->kind == AR_DEC_REPLICAS) *choice = AR_MIN(w->width, c->n - 1);
    return st;
}

/* A cluster where the width-free depth search ran out of budget at a depth
 * that a wider template then completed: the width was allowed on that depth
 * alone and the depth mask after it was empty (found by training on drawn
 * small clusters). */
TEST(every_width_leaves_a_depth)
{
    env e;
    ar_builder b;
    ar_construct_opts o;
    arachne_plan p;
    int k, seed, dist;
    for (dist = 1; dist >= 0; dist--) {
        int widest = 0;
        ASSERT_OK(env_open_dist(&e, "qwen3-30b-a3b", "a5000:1x8,a100-40:2x1+1x8,h100-pcie:4x1", dist));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
        ar_construct_opts_default(&o);
        o.replica_first = 1;
        ASSERT_OK(ar_builder_init(&b, e.cm, &o));
        memset(&p, 0, sizeof p);
        for (k = 0; k < AR_REP_CHOICES; k++)
            for (seed = 0; seed < 8; seed++) {
                width_pick w;
                int j;
                memset(&w, 0, sizeof w);
                w.width = k;
                ar_rng_seed(&w.u.rng, (uint64_t)(k * 100 + seed));
                ASSERT_MSG(ar_builder_run(&b, pick_width, &w, &p, NULL) == ARACHNE_OK, "ZeRO-1 %d, width %d, seed %d: %s",
                           dist, k, seed, arachne_last_error());
                ASSERT_MSG(!w.u.bad, "ZeRO-1 %d, width %d, seed %d: %s", dist, k, seed, w.u.why);
                ASSERT_OK(ar_plan_validate(e.cm, &p));
                for (j = 0; j < p.ntemplates; j++) widest = AR_MAX(widest, p.t[j].replicas);
            }
        ASSERT_MSG(widest > 1, "ZeRO-1 %d: no template of more than one replica", dist);
        ar_plan_clear(&p);
        ar_builder_free(&b);
        env_close(&e);
    }
}

/* A cluster of odd node sizes where the memory-first lookahead runs out of
 * budget at every depth, even on its 64x retry, before it reaches a single
 * trial fill; templates exist (the capped layer split fits 15 stages).  The
 * retry that tries the stage options least memory first finds one, so the
 * construction plans instead of calling the model infeasible. */
TEST(fragmented_cluster_still_gets_a_first_template)
{
    env e;
    ar_builder b;
    ar_construct_opts o;
    arachne_plan p;
    int rf, seed, dist;
    for (dist = 1; dist >= 0; dist--) {
        ASSERT_OK(env_open_dist(&e, "qwen3-32b", "a100-40:3x2+1x1,v100:3x5+2x1,a6000:1x7+1x2+1x1,rtx-pro-6000:1x3+1x1",
                                dist));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, 15));
        for (rf = 0; rf <= 1; rf++) {
            ar_construct_opts_default(&o);
            o.replica_first = rf;
            ASSERT_OK(ar_builder_init(&b, e.cm, &o));
            memset(&p, 0, sizeof p);
            for (seed = 0; seed < 4; seed++) {
                rnd u;
                memset(&u, 0, sizeof u);
                ar_rng_seed(&u.rng, (uint64_t)seed);
                ASSERT_MSG(ar_builder_run(&b, rnd_decide, &u, &p, NULL) == ARACHNE_OK,
                           "ZeRO-1 %d, replica_first %d, seed %d: %s", dist, rf, seed, arachne_last_error());
                ASSERT_MSG(!u.bad, "ZeRO-1 %d, replica_first %d, seed %d: %s", dist, rf, seed, u.why);
                ASSERT_OK(ar_plan_validate(e.cm, &p));
                ASSERT(p.ntemplates >= 1);
            }
            ar_plan_clear(&p);
            ar_builder_free(&b);
        }
        env_close(&e);
    }
}

TEST(trace_records_decisions_and_rewards)
{
    env e;
    ar_builder b;
    arachne_plan p;
    ar_trace tr;
    rnd u;
    double sum = 0.0;
    int s, i, seed;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:4x4,h100:2x8,a6000:3x2"));
    ASSERT_OK(ar_builder_init(&b, e.cm, NULL));
    memset(&p, 0, sizeof p);
    ar_trace_init(&tr);
    for (seed = 0; seed < 20; seed++) {
        memset(&u, 0, sizeof u);
        ar_rng_seed(&u.rng, (uint64_t)seed);
        ASSERT_OK(ar_builder_run(&b, rnd_decide, &u, &p, &tr));
        ASSERT(!u.bad);
        sum = 0.0;
        for (s = 0; s < tr.nsteps; s++) {
            const ar_step_rec *st = &tr.steps[s];
            sum += st->reward;
            ASSERT_NEAR(st->reward, st->thr_after - st->thr_before, 1e-12);
            if (st->ndec == 0) { ASSERT_EQ(st->depth, 0); ASSERT_EQ(s, tr.nsteps - 1); continue; } /* forced STOP */
            /* a step: DEPTH, then TYPE and TP per stage */
            ASSERT_EQ(tr.dec[st->first_dec].kind, AR_DEC_DEPTH);
            if (st->depth > 0) {
                ASSERT_EQ(st->ndec, 1 + 2 * st->depth);
                for (i = 0; i < st->depth; i++) {
                    ASSERT_EQ(tr.dec[st->first_dec + 1 + 2 * i].kind, AR_DEC_TYPE);
                    ASSERT_EQ(tr.dec[st->first_dec + 2 + 2 * i].kind, AR_DEC_TP);
                }
            }
        }
        for (i = 0; i < tr.ndec; i++) ASSERT(tr.dec[i].mask[tr.dec[i].choice]);
        ASSERT_NEAR(sum, p.iter_per_s, 1e-9);
        ASSERT_NEAR(tr.total_reward, p.iter_per_s, 1e-9);
    }
    ar_trace_free(&tr);
    ar_plan_clear(&p);
    ar_builder_free(&b);
    env_close(&e);
}

TEST(same_seed_same_plan)
{
    env e;
    ar_builder b;
    arachne_plan p, q;
    rnd u;
    const char *ja, *jb;
    char *copy;
    ASSERT_OK(env_open(&e, "qwen3-8b", "a100-40:4x4,h100:4x4"));
    ASSERT_OK(ar_builder_init(&b, e.cm, NULL));
    memset(&p, 0, sizeof p);
    memset(&q, 0, sizeof q);
    memset(&u, 0, sizeof u);
    ar_rng_seed(&u.rng, 99);
    ASSERT_OK(ar_builder_run(&b, rnd_decide, &u, &p, NULL));
    memset(&u, 0, sizeof u);
    ar_rng_seed(&u.rng, 99);
    ASSERT_OK(ar_construct(e.cm, rnd_decide, &u, 0, &q, NULL));
    ASSERT_OK(ar_plan_finish(&p));
    ASSERT_OK(ar_plan_finish(&q));
    ASSERT_OK(arachne_plan_to_json(&p, &ja));
    copy = (char *)malloc(strlen(ja) + 1);
    ASSERT(copy != NULL);
    strcpy(copy, ja);
    ASSERT_OK(arachne_plan_to_json(&q, &jb));
    ASSERT_STR(copy, jb);
    free(copy);
    ar_plan_clear(&p);
    ar_plan_clear(&q);
    ar_builder_free(&b);
    env_close(&e);
}

/* Records the first DEPTH decision's mask (user: AR_MAX_CHOICES bytes,
 * all zero until then), then picks the last allowed choice. */
static int last_allowed_depth_mask(void *user, const ar_dec_ctx *c, int *choice)
{
    unsigned char *seen = (unsigned char *)user;
    int i, any = 0;
    for (i = 0; i < AR_MAX_CHOICES; i++) any |= seen[i];
    if (c->kind == AR_DEC_DEPTH && !any)
        for (i = 0; i < c->n; i++) seen[i] = c->mask[i] != 0;
    for (i = c->n - 1; i >= 0; i--) if (c->mask[i]) { *choice = i; return ARACHNE_OK; }
    return ARACHNE_E_INVALID_ARGUMENT;
}

/* The first decision's depth mask of one construction (max_steps 1). */
static int first_depth_mask(const arachne_cost_model *cm, int budget, unsigned char *mask)
{
    static unsigned char seen[AR_MAX_CHOICES];
    ar_builder b;
    ar_construct_opts o;
    arachne_plan p;
    int st;
    ar_construct_opts_default(&o);
    o.lookahead_budget = budget;
    o.max_steps = 1;
    if ((st = ar_builder_init(&b, cm, &o))) return st;
    memset(&p, 0, sizeof p);
    memset(seen, 0, sizeof seen);
    st = ar_builder_run(&b, last_allowed_depth_mask, seen, &p, NULL);
    memcpy(mask, seen, sizeof seen);
    ar_plan_clear(&p);
    ar_builder_free(&b);
    return st;
}

/* At the first step every depth whose search ran out of the budget is
 * asked again with 64 times the budget, whatever the other depths found.
 * The retry used to stop at the first depth it found and resume two
 * further on, so the next depth was never asked: qwen3-32b on
 * a100-40:5x4,v100-16:5x4,rtx-3090:1x2 with budget 64 allowed depths 7 and
 * 9 but not 8 (and mixtral-8x7b on h100:1x8,gh-96:5x1 lost depth 7; with
 * the GiB memory figures the mixtral case is h100:1x8,gh-96:4x1,a6000:1x1).  Each
 * depth's answer must be the one a construction limited to depths 1..d
 * gives for d. */
TEST(retried_depth_mask_asks_every_depth)
{
    static const char *cases[][2] = { { "qwen3-32b", "a100-40:5x4,v100-16:5x4,rtx-3090:1x2" },
                                      { "mixtral-8x7b", "h100:1x8,gh-96:4x1,a6000:1x1" } };
    size_t i;
    int dist;
    for (dist = 1; dist >= 0; dist--)
        for (i = 0; i < AR_COUNT(cases); i++) {
            env e;
            unsigned char all[AR_MAX_CHOICES], upto[AR_MAX_CHOICES];
            int d, allowed = 0;
            ASSERT_OK(env_open_dist(&e, cases[i][0], cases[i][1], dist));
            ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, 16));
            ASSERT_OK(first_depth_mask(e.cm, 64, all));
            for (d = 1; d <= 16; d++) {
                int st;
                ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, d));
                st = first_depth_mask(e.cm, 64, upto);
                ASSERT_MSG(st == ARACHNE_OK || st == ARACHNE_E_INFEASIBLE, "%s", arachne_last_error());
                if (st != ARACHNE_OK) upto[d] = 0;
                ASSERT_MSG(all[d] == upto[d], "%s on %s (ZeRO-1 %d): depth %d allowed %d among all depths, %d among "
                           "depths 1..%d", cases[i][0], cases[i][1], dist, d, all[d], upto[d], d);
                allowed += all[d];
            }
            ASSERT_GT(allowed, 1);
            env_close(&e);
        }
}

/* Leaves of an enumeration: iter/s and template count of each visited plan. */
typedef struct leaves_rec { int n; double v[512]; int nt[512]; } leaves_rec;

static int record_leaf(void *user, const arachne_plan *p)
{
    leaves_rec *r = user;
    if (r->n < 512) {
        r->v[r->n] = p->iter_per_s;
        r->nt[r->n] = p->ntemplates;
        r->n++;
    }
    return ARACHNE_OK;
}

/* The enumeration behind exhaustive search kept each step's stage choices
 * in one array that the next step's recursion overwrote, so after a second
 * template had been tried the first step went on with the later step's GPU
 * types and TPs: with two templates allowed it visited 37 one-template
 * plans instead of 58 on this cluster and missed the best one (exhaustive
 * search returned a slower plan than with one template).  Fix: the choices
 * are saved around the recursion.  The one-template leaves of a two-step
 * enumeration must be those of a one-step enumeration, in order. */
TEST(enumeration_keeps_earlier_steps_choices)
{
    env e;
    static leaves_rec one, two;
    ar_builder b;
    arachne_plan p;
    int i, k = 0;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:1x4,h100:1x2+2x1"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, 3));
    memset(&one, 0, sizeof one);
    memset(&two, 0, sizeof two);
    memset(&p, 0, sizeof p);
    ASSERT_OK(ar_builder_init(&b, e.cm, NULL));
    ASSERT_OK(ar_builder_enumerate(&b, 1, 0.0, record_leaf, &one, &p, NULL));
    ar_builder_free(&b);
    ar_plan_clear(&p);
    ASSERT_OK(ar_builder_init(&b, e.cm, NULL));
    ASSERT_OK(ar_builder_enumerate(&b, 2, 0.0, record_leaf, &two, &p, NULL));
    ar_builder_free(&b);
    ar_plan_clear(&p);
    ASSERT_GT(one.n, 10);
    ASSERT(two.n < 512);
    for (i = 0; i < two.n; i++) {
        if (two.nt[i] != 1) continue;
        ASSERT_MSG(k < one.n && two.v[i] == one.v[k], "one-template leaf %d: %.9g, alone %.9g", k, two.v[i],
                   k < one.n ? one.v[k] : -1.0);
        k++;
    }
    ASSERT_EQ(k, one.n);
    env_close(&e);
}

/* The enumeration with a limit on the prefixes it examines stops there,
 * says so, and until then visits the leaves of the walk without a limit,
 * in order: where a limited walk stops depends on the count alone.  (The
 * refinement's exact search uses it: its share of the budget counts only
 * the plans it keeps, and a model that fits few templates walked 8.1 M
 * prefixes for one plan.) */
TEST(enumeration_stops_at_a_prefix_limit)
{
    env e;
    static leaves_rec all, part;
    ar_builder b;
    arachne_plan p;
    long leaves = -1;
    int i, cut = -1, lim, cuts = 0, partial = 0;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:1x4,h100:1x2+2x1"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, 3));
    memset(&all, 0, sizeof all);
    memset(&p, 0, sizeof p);
    ASSERT_OK(ar_builder_init(&b, e.cm, NULL));
    ASSERT_OK(ar_builder_enumerate_limited(&b, 1, 0.0, 0, record_leaf, &all, &p, &leaves, &cut));
    ASSERT_EQ(cut, 0);
    ASSERT_EQ(leaves, all.n);
    ASSERT_GT(all.n, 10);
    for (lim = 1; lim <= 1 << 20; lim *= 2) {
        int st;
        memset(&part, 0, sizeof part);
        ar_plan_clear(&p);
        st = ar_builder_enumerate_limited(&b, 1, 0.0, lim, record_leaf, &part, &p, &leaves, &cut);
        ASSERT(part.n <= all.n && part.n == leaves);
        for (i = 0; i < part.n; i++) ASSERT(part.v[i] == all.v[i] && part.nt[i] == all.nt[i]);
        if (st == ARACHNE_OK) break; /* the whole walk fits in lim: all of it */
        ASSERT_EQ(st, ARACHNE_E_CANCELLED);
        ASSERT_EQ(cut, 1);
        ASSERT_CONTAINS(arachne_last_error(), "limit");
        cuts++;
        if (part.n > 0 && part.n < all.n) partial++;
    }
    ASSERT_EQ(cut, 0);
    ASSERT_EQ(part.n, all.n);
    ASSERT_GT(cuts, 3);
    ASSERT_GT(partial, 0); /* some limit stopped it between two leaves */
    ar_plan_clear(&p);
    ASSERT_STATUS(ar_builder_enumerate_limited(&b, 1, 0.0, -1, record_leaf, &part, &p, NULL, NULL),
                  ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "node limit");
    ar_builder_free(&b);
    ar_plan_clear(&p);
    env_close(&e);
}

/* Runs one rollout of seed `seed` and returns the plan JSON (malloc'd) and
 * what the run added to the builder's lookahead statistics. */
static char *rollout_json(ar_builder *b, uint64_t seed, long *queries, long *checks, long *outs)
{
    arachne_plan p;
    rnd u;
    const char *j = NULL;
    char *copy = NULL;
    long q0 = b->queries, c0 = b->check_fills, o0 = b->budget_outs;
    memset(&p, 0, sizeof p);
    memset(&u, 0, sizeof u);
    ar_rng_seed(&u.rng, seed);
    if (ar_builder_run(b, rnd_decide, &u, &p, NULL) == ARACHNE_OK && ar_plan_finish(&p) == ARACHNE_OK &&
        arachne_plan_to_json(&p, &j) == ARACHNE_OK && (copy = (char *)malloc(strlen(j) + 1)) != NULL)
        strcpy(copy, j);
    *queries = b->queries - q0;
    *checks = b->check_fills - c0;
    *outs = b->budget_outs - o0;
    ar_plan_clear(&p);
    return copy;
}

/* The first step's depth mask is computed by a builder's first run and
 * replayed by the later ones: the same plans, and the same lookahead
 * statistics (the evaluations a planner reports), as a builder that
 * computes it afresh; changing the lookahead budget recomputes it.  The
 * cluster is one where that mask runs out of the small budget at several
 * depths and searches them again with the large one. */
TEST(first_step_mask_replays_exactly)
{
    env e;
    ar_builder warm, cold;
    ar_construct_opts o;
    int seed, rf;
    /* ARACHNE_TEST_QUICK (memcheck): one seed instead of four; every
     * assertion still runs (this test was half the quick runner's time) */
    const int nseeds = th_quick() ? 1 : 4;
    ASSERT_OK(env_open(&e, "mixtral-8x7b", "h100:1x8,gh-96:4x1,l4:2x1"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    for (rf = 0; rf <= 1; rf++) {
        ar_construct_opts_default(&o);
        o.replica_first = rf;
        ASSERT_OK(ar_builder_init(&warm, e.cm, &o));
        for (seed = 0; seed < nseeds; seed++) {
            long qw, cw, ow, qc, cc, oc;
            char *jw, *jc;
            ASSERT_OK(ar_builder_init(&cold, e.cm, &o));
            jw = rollout_json(&warm, (uint64_t)seed, &qw, &cw, &ow);
            jc = rollout_json(&cold, (uint64_t)seed, &qc, &cc, &oc);
            ASSERT(jw != NULL && jc != NULL);
            ASSERT_STR(jw, jc);
            ASSERT_EQ(qw, qc);
            ASSERT_EQ(cw, cc);
            ASSERT_EQ(ow, oc);
            ASSERT(warm.s0.valid);
            ASSERT_GT(warm.s0.budget_outs, 0);
            ASSERT_GT(warm.s0.queries, 16);
            ASSERT_GT(warm.s0.check_fills, 0);
            free(jw);
            free(jc);
            ar_builder_free(&cold);
        }
        warm.opts.lookahead_budget = 96;
        {
            long q, c, ob;
            char *j = rollout_json(&warm, 7, &q, &c, &ob);
            ASSERT(j != NULL);
            ASSERT_EQ(warm.s0.budget, 96);
            free(j);
        }
        ar_builder_free(&warm);
    }
    env_close(&e);
}

/* Stops a run at its first decision: the first step's mask is then
 * computed (and cached) and nothing else. */
static int stop_at_first(void *user, const ar_dec_ctx *c, int *choice)
{
    (void)user;
    (void)c;
    (void)choice;
    return ARACHNE_E_CANCELLED;
}

/* The two caches hold the same mask, counts and witnesses (a witness's
 * stages past its depth are not part of it). */
static int same_step0(const ar_step0_cache *a, const ar_step0_cache *b, char *why, size_t n)
{
    int i, s;
    if (a->valid != b->valid || a->lookahead != b->lookahead || a->budget != b->budget || a->any != b->any ||
        a->proven != b->proven || a->wn != b->wn || memcmp(a->mask, b->mask, sizeof a->mask) != 0 ||
        a->queries != b->queries || a->check_fills != b->check_fills || a->budget_outs != b->budget_outs) {
        snprintf(why, n, "valid %d/%d any %d/%d proven %d/%d witnesses %d/%d queries %ld/%ld fills %ld/%ld outs %ld/%ld",
                 a->valid, b->valid, a->any, b->any, a->proven, b->proven, a->wn, b->wn, a->queries, b->queries,
                 a->check_fills, b->check_fills, a->budget_outs, b->budget_outs);
        return 0;
    }
    for (i = 0; i < a->wn; i++) {
        const ar_witness *x = &a->wit[i], *y = &b->wit[i];
        int same = x->depth == y->depth && x->rmax == y->rmax;
        for (s = 0; same && s < x->depth; s++) same = x->types[s] == y->types[s] && x->tps[s] == y->tps[s];
        if (!same) { snprintf(why, n, "witness %d: depth %d/%d", i, x->depth, y->depth); return 0; }
    }
    return 1;
}

/* The first step's mask searched depth by depth on two builders (as the
 * threads of arachne_plan_build search it) and merged into a third is the
 * mask a builder computes alone: allowed depths, witnesses in order,
 * counts, and the proof flag; the part builders' statistics stay as they
 * were, and a run that replays the merged mask builds the same plan with
 * the same counts.  The cases: a mask found at once (llama3-8b), one whose
 * depths run out of the small budget and are searched again (mixtral-8x7b,
 * with and without ZeRO-1, where some are found only then), a model that
 * no depth's search fits (llama3-70b on l4:2x2), one whose searches run out
 * of budget without finding any and the proof searches settle them
 * (mixtral-8x7b on a100-40:6x4), and one where they do not, so that the
 * mask is searched once more with 1024x the budget. */
TEST(first_step_mask_merges_from_depth_parts)
{
    static const struct { const char *model, *cluster; int dist; } cases[] = {
        { "llama3-8b", "a100-40:4x4,h100:2x8", 1 },
        { "mixtral-8x7b", "h100:1x8,gh-96:4x1,l4:2x1", 1 },
        { "mixtral-8x7b", "h100:1x8,gh-96:4x1,a6000:1x1", 0 },
        { "llama3-70b", "l4:2x2", 1 },
        { "mixtral-8x7b", "a100-40:6x4", 1 },
        { "llama3-70b", "l4:11x2,h100:12x2", 1 },
    };
    size_t i;
    int escalated = 0, later = 0, none = 0, fallback = 0, proved = 0, unproven_msg = 0;
    for (i = 0; i < AR_COUNT(cases); i++) {
        env e;
        ar_builder alone, part[2], merged;
        ar_construct_opts o;
        ar_step0_part parts[AR_MAX_CHOICES];
        arachne_plan p;
        char why[256];
        int n, d, st, open = 0, open2 = 0;
        ASSERT_OK(env_open_dist(&e, cases[i].model, cases[i].cluster, cases[i].dist));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
        ar_construct_opts_default(&o);
        o.replica_first = (int)(i % 2); /* the policy's construction and the searches' */
        ASSERT_OK(ar_builder_init(&alone, e.cm, &o));
        ASSERT_OK(ar_builder_init(&part[0], e.cm, &o));
        ASSERT_OK(ar_builder_init(&part[1], e.cm, &o));
        ASSERT_OK(ar_builder_init(&merged, e.cm, &o));
        memset(&p, 0, sizeof p);
        st = ar_builder_run(&alone, stop_at_first, NULL, &p, NULL);
        ASSERT_MSG(st == ARACHNE_E_CANCELLED || st == ARACHNE_E_INFEASIBLE, "%s", arachne_last_error());
        ASSERT(alone.s0.valid);
        n = ar_builder_step0_depths(&merged);
        ASSERT_GT(n, 1);
        ASSERT_EQ(ar_builder_step0_depths(&alone), 0); /* cached */
        for (d = n; d >= 1; d--) {
            ar_builder *b = &part[d % 2];
            ASSERT_OK(ar_builder_step0_part(b, &p, d, &parts[d - 1]));
            ASSERT_EQ(parts[d - 1].depth, d);
            escalated += parts[d - 1].escalated;
            later += parts[d - 1].found && parts[d - 1].pass > 0;
            open += parts[d - 1].open;
            open2 += parts[d - 1].open2;
        }
        ASSERT_EQ(part[0].queries + part[1].queries + part[0].check_fills + part[1].check_fills, 0);
        ASSERT(!part[0].s0.valid && !part[1].s0.valid);
        ASSERT_EQ(ar_builder_step0_merge(&merged, &p, parts, n - 1), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT_OK(ar_builder_step0_merge(&merged, &p, parts, n));
        ASSERT_EQ(merged.queries, 0);
        ASSERT_MSG(same_step0(&merged.s0, &alone.s0, why, sizeof why), "%s on %s: %s", cases[i].model,
                   cases[i].cluster, why);
        if (!alone.s0.any) {
            none++;
            /* proven: no search was cut by its budget once it had 64x, or
             * the proof searches settled every one that was */
            if (open2 == 0) ASSERT(alone.s0.proven);
            proved += open2 > 0 && alone.s0.proven;
            fallback += open > 0 && !alone.s0.proven; /* depths left to the 1024x searches */
            ASSERT_EQ(ar_builder_run(&merged, stop_at_first, NULL, &p, NULL), ARACHNE_E_INFEASIBLE);
            ASSERT_EQ(merged.infeasible_proven, alone.infeasible_proven);
            /* the message says when it is not a proof */
            if (strstr(arachne_last_error(), "no template of depth")) {
                ASSERT_EQ(strstr(arachne_last_error(), "not proven") != NULL, !alone.s0.proven);
                unproven_msg += !alone.s0.proven;
            }
        } else {
            long q0 = alone.queries, c0 = alone.check_fills;
            char *ja, *jm;
            long qa, ca, oa, qm, cm, om;
            ja = rollout_json(&alone, 3, &qa, &ca, &oa);
            jm = rollout_json(&merged, 3, &qm, &cm, &om);
            ASSERT(ja != NULL && jm != NULL);
            ASSERT_STR(ja, jm);
            ASSERT_EQ(qa, qm);
            ASSERT_EQ(ca, cm);
            ASSERT_EQ(oa, om);
            ASSERT(alone.queries > q0 && alone.check_fills >= c0);
            free(ja);
            free(jm);
        }
        ar_plan_clear(&p);
        ar_builder_free(&alone);
        ar_builder_free(&part[0]);
        ar_builder_free(&part[1]);
        ar_builder_free(&merged);
        env_close(&e);
    }
    ASSERT_GT(escalated, 0);
    ASSERT_GT(later, 0);
    ASSERT_GT(none, 1);
    ASSERT_GT(proved, 0);
    ASSERT_GT(fallback, 0);
    ASSERT_GT(unproven_msg, 0);
}

/* Picks the largest allowed choice (deep, wide), or a fixed one. */
static int last_allowed(void *user, const ar_dec_ctx *c, int *choice)
{
    int i;
    (void)user;
    for (i = c->n - 1; i >= 0; i--) if (c->mask[i]) { *choice = i; return ARACHNE_OK; }
    return ARACHNE_E_INVALID_ARGUMENT;
}

static int pick_masked(void *user, const ar_dec_ctx *c, int *choice)
{
    (void)user;
    *choice = c->kind == AR_DEC_DEPTH ? 0 : c->n; /* STOP at step 0 is masked */
    return ARACHNE_OK;
}

static int cancel_at_tp(void *user, const ar_dec_ctx *c, int *choice)
{
    (void)user;
    if (c->kind == AR_DEC_TP) return ARACHNE_E_CANCELLED;
    return last_allowed(NULL, c, choice);
}

/* A cluster of 1 to 3 node groups of GPUs drawn from old and new parts
 * (small ones among them, where a stage holds few blocks), nodes of 1 to 8
 * GPUs, up to `nodes` nodes per group. */
static void small_mixed_spec(ar_rng *r, char *spec, size_t cap, int nodes)
{
    static const char *types[] = { "a100-40", "a100-80", "h100", "a6000", "a5000", "l40s", "v100-16", "rtx-2080ti",
                                   "rtx-3090", "h200", "b200", "l4", "rtx-4090", "gh-96" };
    int groups = 1 + ar_rng_int(r, 3), g;
    size_t len = 0;
    spec[0] = '\0';
    for (g = 0; g < groups; g++)
        len += (size_t)snprintf(spec + len, cap - len, "%s%s:%dx%d", g ? "," : "", types[ar_rng_int(r, (int)AR_COUNT(types))],
                                1 + ar_rng_int(r, nodes), 1 << ar_rng_int(r, 4));
}

/* The bounds of the searches with a raised budget settle a search (and
 * prove a model infeasible), so they must never cut a template that fits:
 * random first templates on random clusters, and for every one whose trial
 * fill succeeds, every prefix passes them.  The compositions cover every
 * preset (MoE with and without expert tiling, hybrid), both optimizer
 * layouts, full recomputation and batches of 32 to 512.  About one in a
 * hundred templates that fit do so only with their stages reversed (a
 * bound that judged the order asked alone fails here). */
TEST(raised_budget_bounds_never_cut_a_template_that_fits)
{
    ar_rng r;
    int presets = arachne_model_preset_count(), cl, fits = 0, nclusters = th_quick() ? 100 : 400, moe = 0;
    ar_rng_seed(&r, 77);
    for (cl = 0; cl < nclusters; cl++) {
        char spec[256];
        env e;
        ar_builder b;
        ar_construct_opts o;
        arachne_plan p;
        const char *model = arachne_model_preset_name(cl % presets);
        int k;
        small_mixed_spec(&r, spec, sizeof spec, strcmp(model, "deepseek-v3") ? 8 : 40);
        ASSERT_OK(env_open_dist(&e, model, spec, ar_rng_int(&r, 4) != 0));
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 32 << ar_rng_int(&r, 5)));
        if (ar_rng_int(&r, 3) == 0) ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_RECOMPUTE, ARACHNE_RECOMPUTE_FULL));
        if (ar_rng_int(&r, 4) == 0) ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXPERT_TILING, 0));
        ar_construct_opts_default(&o);
        ASSERT_OK(ar_builder_init(&b, e.cm, &o));
        memset(&p, 0, sizeof p);
        for (k = 0; k < 40; k++) {
            int d = 1 + ar_rng_int(&r, 12), types[12], tps[12], s, i, ok;
            for (s = 0; s < d; s++) {
                types[s] = ar_rng_int(&r, e.c->ntypes);
                tps[s] = 1 << ar_rng_int(&r, 4);
            }
            ar_plan_clear(&p);
            ASSERT_OK(ar_plan_init(&p, e.cm));
            ASSERT_OK(ar_avail_copy(&b.avail, &b.base));
            if (ar_fill_template_ws(&b.ws, &b.avail, &p, d, types, tps, AR_FILL_CHECK) != ARACHNE_OK) continue;
            fits++;
            moe += e.m->experts > 0;
            for (i = 0; i <= d; i++) {
                ASSERT_OK(ar_builder_prefix_fits(&b, &p, d, types, tps, i, 1, &ok));
                ASSERT_MSG(ok, "%s on %s: the first %d of %d stages cut", model, spec, i, d);
            }
        }
        ar_plan_clear(&p);
        ar_builder_free(&b);
        env_close(&e);
    }
    ASSERT_GT(fits, th_quick() ? 200 : 800);
    ASSERT_GT(moe, th_quick() ? 40 : 160);
}

/* deepseek-v3 on 22 nodes of 8 H100s: every depth's stages need more than
 * an H100 holds, which the first searches' bounds cannot show (they count
 * every block as the cheapest, dense one, and every open stage as holding
 * one sample), so they run out of budget.  The proof searches settle every
 * such depth, so the model is proven infeasible without the 1024x
 * searches, which took 279,814 of the 309,322 trial fills (15 s) before. */
TEST(a_model_that_fits_nowhere_is_proven_in_few_fills)
{
    env e;
    ar_builder b;
    ar_construct_opts o;
    arachne_plan p;
    char want[128];
    /* a quick run (memcheck: about a minute for depth 16) searches depths
     * up to 8 only: 3,126 trial fills */
    int max_depth = th_quick() ? 8 : 16;
    ASSERT_OK(env_open(&e, "deepseek-v3", "h100:22x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_MAX_DEPTH, max_depth));
    ar_construct_opts_default(&o);
    ASSERT_OK(ar_builder_init(&b, e.cm, &o));
    memset(&p, 0, sizeof p);
    ASSERT_STATUS(ar_builder_run(&b, last_allowed, NULL, &p, NULL), ARACHNE_E_INFEASIBLE);
    snprintf(want, sizeof want, "no template of depth 1..%d fits deepseek-v3 on this cluster; for example", max_depth);
    ASSERT_CONTAINS(arachne_last_error(), want);
    ASSERT(b.infeasible_proven);
    ASSERT_MSG(b.check_fills < 40000, "%ld trial fills", b.check_fills); /* 29,508 at depth 16 */
    ASSERT_EQ(b.budget_outs > 0, 1); /* the first searches did run out */
    ar_plan_clear(&p);
    ar_builder_free(&b);
    env_close(&e);
}

TEST(callback_errors_and_masked_choices)
{
    env e;
    arachne_plan p;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:2x4"));
    memset(&p, 0, sizeof p);
    ASSERT_STATUS(ar_construct(e.cm, pick_masked, NULL, 0, &p, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "masked");
    ASSERT_EQ(ar_construct(e.cm, cancel_at_tp, NULL, 0, &p, NULL), ARACHNE_E_CANCELLED);
    ASSERT_OK(ar_construct(e.cm, last_allowed, NULL, 3, &p, NULL));
    ASSERT(p.ntemplates >= 1 && p.ntemplates <= 3);
    ASSERT_OK(ar_plan_validate(e.cm, &p));
    ASSERT_STATUS(ar_construct(e.cm, last_allowed, NULL, 17, &p, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ar_plan_clear(&p);
    env_close(&e);
}

TEST(infeasible_model_reports_memory)
{
    env e;
    arachne_plan p;
    double need, have;
    ASSERT_OK(env_open(&e, "deepseek-v3", "a6000:4x4"));
    memset(&p, 0, sizeof p);
    ar_construct_memory_bound(e.cm, &need, &have);
    ASSERT_GT(need, have);
    ASSERT_STATUS(ar_construct(e.cm, last_allowed, NULL, 0, &p, NULL), ARACHNE_E_INFEASIBLE);
    ASSERT_CONTAINS(arachne_last_error(), "deepseek-v3 does not fit on this cluster");
    ASSERT_CONTAINS(arachne_last_error(), "GB usable");
    ASSERT_EQ(p.ntemplates, 0);
    ar_plan_clear(&p);
    env_close(&e);
}

TEST(without_lookahead_the_first_infeasible_template_is_penalised)
{
    env e;
    ar_builder b;
    ar_construct_opts o;
    arachne_plan p;
    ar_trace tr;
    int seed, penalised = 0, ended = 0;
    ASSERT_OK(env_open(&e, "qwen3-32b", "a6000:4x4,h100:2x4"));
    ar_construct_opts_default(&o);
    o.lookahead = 0;
    o.penalty = 0.5;
    ASSERT_OK(ar_builder_init(&b, e.cm, &o));
    memset(&p, 0, sizeof p);
    ar_trace_init(&tr);
    for (seed = 0; seed < 60; seed++) {
        rnd u;
        int st;
        memset(&u, 0, sizeof u);
        ar_rng_seed(&u.rng, (uint64_t)seed);
        st = ar_builder_run(&b, rnd_decide, &u, &p, &tr);
        if (st == ARACHNE_E_INFEASIBLE) {
            ASSERT_EQ(tr.nsteps, 1);
            ASSERT_EQ(tr.steps[0].feasible, 0);
            ASSERT_NEAR(tr.steps[0].reward, -0.5, 1e-15);
            penalised++;
        } else {
            int s;
            ASSERT_OK(st);
            for (s = 0; s < tr.nsteps; s++)
                if (!tr.steps[s].feasible) { ASSERT(s > 0); ASSERT_EQ(tr.steps[s].reward, 0.0); ended++; }
        }
    }
    ASSERT_GT(penalised, 0);
    (void)ended;
    ar_trace_free(&tr);
    ar_plan_clear(&p);
    ar_builder_free(&b);
    env_close(&e);
}

TEST(only_stop_left_ends_the_plan)
{
    env e;
    arachne_plan p;
    ar_trace tr;
    ASSERT_OK(env_open(&e, "llama3-8b", "h100:1x4"));
    memset(&p, 0, sizeof p);
    ar_trace_init(&tr);
    /* the widest, deepest choices take every GPU: the next step has nothing but STOP */
    ASSERT_OK(ar_construct(e.cm, last_allowed, NULL, 0, &p, &tr));
    ASSERT_EQ(p.gpus_used, 4);
    ASSERT_EQ(tr.steps[tr.nsteps - 1].depth, 0);
    ASSERT_EQ(tr.steps[tr.nsteps - 1].ndec, 0); /* no decision was asked */
    ar_trace_free(&tr);
    ar_plan_clear(&p);
    env_close(&e);
}

/* Every priced field of two copies of one plan, compared bit for bit. */
static int same_prices(const arachne_plan *x, const arachne_plan *y)
{
    int j, s;
    if (memcmp(&x->iteration_s, &y->iteration_s, sizeof(double)) || memcmp(&x->mfu, &y->mfu, sizeof(double)) ||
        memcmp(&x->bubble, &y->bubble, sizeof(double)) || x->gpus_used != y->gpus_used)
        return 0;
    for (j = 0; j < x->ntemplates; j++) {
        const ar_template *a = &x->t[j], *b = &y->t[j];
        if (a->micro_batches != b->micro_batches || memcmp(&a->pipeline_s, &b->pipeline_s, sizeof(double))) return 0;
        for (s = 0; s < a->depth; s++) {
            const ar_stage *u = &a->stages[s], *v = &b->stages[s];
            if (memcmp(&u->compute_s, &v->compute_s, 9 * sizeof(double))) return 0; /* compute_s .. mem_bytes */
        }
    }
    return 1;
}

/* The expert tilings of stage s of t (ar_tiles_enumerate), 0 when the
 * stage holds no MoE block. */
static int moe_tilings(const env *e, const ar_template *t, int s, ar_tile *tiles)
{
    int k, moe = 0;
    for (k = t->stages[s].first; k < t->stages[s].end; k++) moe |= ar_model_block_kind(e->m, k) == AR_LAYER_MOE;
    if (!moe) return 0;
    return ar_tiles_enumerate(t->replicas * ar_stage_gpus(t, s), t->stages[s].tp, e->m->experts, tiles, AR_MAX_TILES);
}

/* The fill prices each candidate for template k on top of the plan's first
 * k templates through a price prefix: the prices must be those of the whole
 * plan, bit for bit, whether the prefix was just built or kept, and an
 * overflow priced quietly leaves the last error alone. */
TEST(price_prefix_prices_like_the_whole_plan)
{
    static const int mbs[] = { 1, 2, 4, 8, 16, 32 };
    env e;
    ar_builder b;
    arachne_plan p, x, y;
    ar_price_prefix pp;
    ar_stage_place place[AR_MAX_TEMPLATES][AR_MAX_DEPTH];
    rnd u;
    int seed, k, j, i, compared = 0, kept = 0, quiet = 0;
    ASSERT_OK(env_open(&e, "mixtral-8x7b", "a100-80:3x8,h100:4x4+2x2,a6000:2x8+2x4"));
    /* the random plans only feed the pricing comparison: no stage moves,
     * which would make each fill several times as dear */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MOVES, 0));
    ASSERT_OK(ar_builder_init(&b, e.cm, NULL));
    ASSERT_OK(ar_price_prefix_init(&pp, e.cm));
    memset(&p, 0, sizeof p);
    for (seed = 0; seed < 16; seed++) {
        memset(&u, 0, sizeof u);
        ar_rng_seed(&u.rng, (uint64_t)seed);
        ASSERT_OK(ar_builder_run(&b, rnd_decide, &u, &p, NULL));
        for (j = 0; j < p.ntemplates; j++) ASSERT_OK(ar_template_place(&p, j, place[j]));
        ar_price_prefix_reset(&pp);
        for (k = 2; k <= p.ntemplates; k++)
            for (i = 0; i < (int)(sizeof mbs / sizeof mbs[0]); i++) {
                int st_whole, st_prefix, was = pp.n;
                x = p;
                x.ranks = NULL;
                x.nranks = 0;
                x.json_cache = NULL;
                x.ntemplates = k;
                x.t[k - 1].micro_batch = mbs[i];
                y = x;
                st_whole = ar_plan_price_placed(e.cm, &x, (const ar_stage_place (*)[AR_MAX_DEPTH])place);
                pp.quiet = 0;
                st_prefix = ar_plan_price_prefix(e.cm, &y, (const ar_stage_place (*)[AR_MAX_DEPTH])place, &pp);
                ASSERT_EQ(st_prefix, st_whole);
                ASSERT_EQ(pp.n, k - 1);
                if (was == k - 1) kept++;
                if (st_whole == ARACHNE_OK) {
                    ASSERT_MSG(same_prices(&x, &y), "seed %d, %d templates, micro-batch %d", seed, k, mbs[i]);
                    compared++;
                } else if (st_whole == ARACHNE_E_OUT_OF_MEMORY_PLAN) {
                    (void)ar_error(ARACHNE_E_INVALID_ARGUMENT, "sentinel");
                    pp.quiet = 1;
                    ASSERT_EQ(ar_plan_price_prefix(e.cm, &y, (const ar_stage_place (*)[AR_MAX_DEPTH])place, &pp),
                              ARACHNE_E_OUT_OF_MEMORY_PLAN);
                    ASSERT_MSG(!strcmp(arachne_last_error(), "sentinel"), "quiet pricing set \"%s\"", arachne_last_error());
                    quiet++;
                }
            }
    }
    /* the cases this test is about did occur */
    ASSERT_GT(compared, 20);
    ASSERT_GT(kept, 20);
    ASSERT_GT(quiet, 0);
    ar_price_prefix_free(&pp);
    ar_plan_clear(&p);
    ar_builder_free(&b);
    env_close(&e);
}

/* The fill's expert-tiling search hands the pricer one memo per stage of
 * the candidate (ar_stage_memo) and changes one stage's tiling at a time.
 * Here: random plans of two or more templates; each MoE stage of the last
 * template is given every other tiling in turn, its memo computed afresh
 * and the other stages' memos kept from call to call.  Every price must be
 * the plain pricer's, bit for bit, including calls where the new tiling
 * moves the batch division to fewer micro-batches than the depth, where a
 * kept memory figure for another count would be wrong (checked: the test
 * fails when the memo ignores the count). */
TEST(stage_memos_price_like_the_whole_plan)
{
    env e;
    ar_builder b;
    arachne_plan p, x, y;
    ar_price_prefix pp;
    ar_stage_place place[AR_MAX_TEMPLATES][AR_MAX_DEPTH];
    ar_stage_memo memo[AR_MAX_DEPTH];
    ar_stage_memo *mp[AR_MAX_DEPTH];
    ar_tile tiles[AR_MAX_TILES];
    rnd u;
    int seed, compared = 0, moved = 0, reused = 0;
    ASSERT_OK(env_open(&e, "mixtral-8x7b", "a100-80:3x8,h100:4x4+2x2,a6000:2x8+2x4"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MOVES, 0));
    /* a small batch: few micro-batches per replica, fewer than the depth,
     * where a stage's memory depends on the count */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 48));
    ASSERT_OK(ar_builder_init(&b, e.cm, NULL));
    ASSERT_OK(ar_price_prefix_init(&pp, e.cm));
    memset(&p, 0, sizeof p);
    for (seed = 0; seed < 24; seed++) {
        int j, s, n, i, k, m0[AR_MAX_TEMPLATES];
        ar_template *t;
        memset(&u, 0, sizeof u);
        ar_rng_seed(&u.rng, 100 + (uint64_t)seed);
        ASSERT_OK(ar_builder_run(&b, rnd_decide, &u, &p, NULL));
        if (p.ntemplates < 2) continue;
        n = p.ntemplates;
        for (j = 0; j < n; j++) ASSERT_OK(ar_template_place(&p, j, place[j]));
        for (j = 0; j < n; j++) m0[j] = p.t[j].micro_batches;
        x = p;
        x.ranks = NULL;
        x.nranks = 0;
        x.json_cache = NULL;
        t = &x.t[n - 1];
        for (s = 0; s < t->depth; s++) {
            ASSERT_OK(ar_stage_check(e.cm, t, s));
            memset(&memo[s], 0, sizeof memo[s]);
            ASSERT_OK(ar_stage_price_checked(e.cm, t, s, &place[n - 1][s], &memo[s].times));
            mp[s] = &memo[s];
        }
        ar_price_prefix_reset(&pp);
        for (s = 0; s < t->depth; s++) {
            ar_stage keep = t->stages[s];
            int nt = moe_tilings(&e, t, s, tiles);
            if (nt == 0) continue;
            for (i = 0; i < nt; i++) {
                int st_memo, st_plain;
                t->stages[s].ep = tiles[i].ep;
                t->stages[s].etp = tiles[i].etp;
                t->stages[s].edp = tiles[i].edp;
                if (ar_stage_check(e.cm, t, s) != ARACHNE_OK) continue;
                memset(&memo[s], 0, sizeof memo[s]);
                if (ar_stage_price_checked(e.cm, t, s, &place[n - 1][s], &memo[s].times) != ARACHNE_OK) continue;
                for (k = 0; k < t->depth; k++) reused += k != s && memo[k].have != 0;
                y = x;
                st_plain = ar_plan_price_placed(e.cm, &y, (const ar_stage_place (*)[AR_MAX_DEPTH])place);
                pp.last_memo = mp;
                st_memo = ar_plan_price_prefix(e.cm, &x, (const ar_stage_place (*)[AR_MAX_DEPTH])place, &pp);
                pp.last_memo = NULL;
                ASSERT_EQ(st_memo, st_plain);
                if (st_plain != ARACHNE_OK) continue;
                ASSERT_MSG(same_prices(&x, &y), "seed %d stage %d tiling %dx%dx%d", seed, s, tiles[i].ep,
                           tiles[i].etp, tiles[i].edp);
                compared++;
                moved += x.t[n - 1].micro_batches != m0[n - 1] && x.t[n - 1].micro_batches < t->depth;
            }
            t->stages[s] = keep;
            memset(&memo[s], 0, sizeof memo[s]);
            ASSERT_OK(ar_stage_price_checked(e.cm, t, s, &place[n - 1][s], &memo[s].times));
        }
    }
    /* the cases this test is about did occur */
    ASSERT_GT(compared, 20);
    ASSERT_GT(reused, 20);
    ASSERT_GT(moved, 0);
    ar_price_prefix_free(&pp);
    ar_plan_clear(&p);
    ar_builder_free(&b);
    env_close(&e);
}

/* The fill's expert-tiling search prices one-template candidates by the
 * closed form with every stage memoised (price_memo_bound): a stage's ring
 * terms and memory that its memo lacks (round 0: a tiling's first price)
 * are computed for that stage alone, which must read the holders as the
 * whole pricer does; once the memos hold them (round 1) it answers from
 * them alone.  Its status and iteration must be those of the whole pricer,
 * bit for bit, in both rounds, for every tiling of every MoE stage, at
 * batches that fit and batches that overflow. */
TEST(memoised_one_template_prices_like_the_whole_plan)
{
    static const int batches[] = { 8, 48, 512 };
    env e;
    ar_builder b;
    ar_construct_opts o;
    arachne_plan p, x, y;
    ar_price_prefix pp, plain;
    ar_stage_place place[AR_MAX_TEMPLATES][AR_MAX_DEPTH];
    ar_stage_memo memo[AR_MAX_DEPTH];
    ar_stage_memo *mp[AR_MAX_DEPTH];
    ar_tile tiles[AR_MAX_TILES];
    rnd u;
    int seed, bi, compared = 0, overflowed = 0;
    ASSERT_OK(env_open(&e, "mixtral-8x7b", "a100-80:3x8,h100:4x4+2x2,a6000:2x8+2x4"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MOVES, 0));
    ar_construct_opts_default(&o);
    o.max_steps = 1;
    ASSERT_OK(ar_price_prefix_init(&pp, e.cm));
    ASSERT_OK(ar_price_prefix_init(&plain, e.cm));
    pp.bound_only = plain.bound_only = 1;
    pp.quiet = plain.quiet = 1;
    memset(&p, 0, sizeof p);
    for (bi = 0; bi < (int)AR_COUNT(batches); bi++) {
        ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 512));
        ASSERT_OK(ar_builder_init(&b, e.cm, &o));
        for (seed = 0; seed < 8; seed++) {
            int s, i, round;
            ar_template *t;
            memset(&u, 0, sizeof u);
            ar_rng_seed(&u.rng, 300 + (uint64_t)seed);
            ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 512));
            ASSERT_OK(ar_builder_run(&b, rnd_decide, &u, &p, NULL));
            ASSERT_EQ(p.ntemplates, 1);
            /* the same template at another batch: its stages may overflow */
            ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, batches[bi]));
            ASSERT_OK(ar_template_place(&p, 0, place[0]));
            x = p;
            x.ranks = NULL;
            x.nranks = 0;
            x.json_cache = NULL;
            t = &x.t[0];
            if (t->replicas * t->micro_batch > batches[bi]) continue;
            for (s = 0; s < t->depth; s++) {
                ASSERT_OK(ar_stage_check(e.cm, t, s));
                memset(&memo[s], 0, sizeof memo[s]);
                ASSERT_OK(ar_stage_price_checked(e.cm, t, s, &place[0][s], &memo[s].times));
                mp[s] = &memo[s];
            }
            for (s = 0; s < t->depth; s++) {
                ar_stage keep = t->stages[s];
                int nt = moe_tilings(&e, t, s, tiles);
                if (nt == 0) continue;
                for (i = 0; i < nt; i++) {
                    t->stages[s].ep = tiles[i].ep;
                    t->stages[s].etp = tiles[i].etp;
                    t->stages[s].edp = tiles[i].edp;
                    if (ar_stage_check(e.cm, t, s) != ARACHNE_OK) continue;
                    memset(&memo[s], 0, sizeof memo[s]);
                    if (ar_stage_price_checked(e.cm, t, s, &place[0][s], &memo[s].times) != ARACHNE_OK) continue;
                    /* round 0 fills the memos; round 1 is answered from them */
                    for (round = 0; round < 2; round++) {
                        int st_memo, st_plain;
                        y = x;
                        st_plain = ar_plan_price_prefix(e.cm, &y, (const ar_stage_place (*)[AR_MAX_DEPTH])place, &plain);
                        pp.last_memo = mp;
                        st_memo = ar_plan_price_prefix(e.cm, &x, (const ar_stage_place (*)[AR_MAX_DEPTH])place, &pp);
                        pp.last_memo = NULL;
                        ASSERT_EQ(st_memo, st_plain);
                        if (st_plain == ARACHNE_E_OUT_OF_MEMORY_PLAN) { overflowed += round; continue; }
                        ASSERT_OK(st_plain);
                        ASSERT_MSG(memcmp(&x.iteration_s, &y.iteration_s, sizeof(double)) == 0,
                                   "batch %d seed %d stage %d tiling %dx%dx%d round %d", batches[bi], seed, s,
                                   tiles[i].ep, tiles[i].etp, tiles[i].edp, round);
                        compared += round;
                    }
                }
                t->stages[s] = keep;
                memset(&memo[s], 0, sizeof memo[s]);
                ASSERT_OK(ar_stage_price_checked(e.cm, t, s, &place[0][s], &memo[s].times));
            }
        }
        ar_builder_free(&b);
    }
    /* the closed form answered, on plans that fit and plans that overflow */
    ASSERT_GT(compared, 20);
    ASSERT_GT(overflowed, 0);
    ASSERT_GT(pp.memo_bound_prices, compared);
    ASSERT_EQ(plain.memo_bound_prices, 0);
    ar_price_prefix_free(&pp);
    ar_price_prefix_free(&plain);
    ar_plan_clear(&p);
    env_close(&e);
}

SUITE(construct, T(random_rollouts_never_reach_a_dead_end), T(every_width_leaves_a_depth), T(fragmented_cluster_still_gets_a_first_template), T(first_step_mask_replays_exactly), T(first_step_mask_merges_from_depth_parts), T(raised_budget_bounds_never_cut_a_template_that_fits), T(a_model_that_fits_nowhere_is_proven_in_few_fills), T(retried_depth_mask_asks_every_depth), T(enumeration_keeps_earlier_steps_choices), T(enumeration_stops_at_a_prefix_limit), T(trace_records_decisions_and_rewards),
      T(same_seed_same_plan), T(callback_errors_and_masked_choices), T(infeasible_model_reports_memory),
      T(without_lookahead_the_first_infeasible_template_is_penalised), T(only_stop_left_ends_the_plan),
      T(price_prefix_prices_like_the_whole_plan),
      T(stage_memos_price_like_the_whole_plan), T(memoised_one_template_prices_like_the_whole_plan));
