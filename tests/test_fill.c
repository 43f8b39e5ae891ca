/* test_fill.c -- the template fill: packing (against brute force), node
 * choice, layer splits, expert-tiling candidates, device assignment and
 * the fill's invariants and failure behaviour. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "construct.h"

/* ---- environment ---------------------------------------------------------- */


/* ---- packing ---------------------------------------------------------------- */

/* Brute force: can `count` groups of sizes sz[] (types ty[]) be placed into
 * nodes with free[] (types nt[])? */
static int bf_place(int *freev, const int *nt, int nnodes, const int *sz, const int *ty, int i, int count)
{
    int n;
    if (i == count) return 1;
    for (n = 0; n < nnodes; n++) {
        if (nt[n] != ty[i] || freev[n] < sz[i]) continue;
        freev[n] -= sz[i];
        if (bf_place(freev, nt, nnodes, sz, ty, i + 1, count)) { freev[n] += sz[i]; return 1; }
        freev[n] += sz[i];
    }
    return 0;
}

TEST(pack_max_replicas_matches_brute_force)
{
    ar_rng rng;
    /* The brute force is exponential in the replica count; a quick run
     * (check-valgrind, check-tsan) checks the first 100 random cases. */
    int it, iters = th_quick() ? 100 : 300;
    ar_rng_seed(&rng, 11);
    for (it = 0; it < iters; it++) {
        arachne_cluster cl;
        ar_avail a;
        ar_node nodes[6];
        int nt[6], freev[6], scratch[18], node_of[64], gpu_of[64], used[6];
        int nn = 1 + ar_rng_int(&rng, 5), ntypes = 1 + ar_rng_int(&rng, 2), depth = 1 + ar_rng_int(&rng, 3);
        int types[3], tps[3], i, s, q, r, rbf = 0, order;
        memset(&cl, 0, sizeof cl);
        cl.ntypes = ntypes;
        for (i = 0; i < ntypes; i++) snprintf(cl.types[i].name, AR_NAME_MAX, "T%d", i);
        cl.nnodes = nn;
        cl.nodes = nodes;
        for (i = 0; i < nn; i++) {
            nodes[i].type = ar_rng_int(&rng, ntypes);
            nodes[i].gpus = 1 + ar_rng_int(&rng, 8);
            nt[i] = nodes[i].type;
        }
        memset(&a, 0, sizeof a);
        a.nnodes = nn;
        a.free = freev;
        for (i = 0; i < nn; i++) freev[i] = ar_rng_int(&rng, nodes[i].gpus + 1);
        ar_avail_refresh(&a, &cl);
        for (s = 0; s < depth; s++) { types[s] = ar_rng_int(&rng, ntypes); tps[s] = 1 << ar_rng_int(&rng, 3); }
        /* brute force: largest r that places */
        for (r = 1; r * depth <= 24; r++) {
            int sz[24], ty[24], k = 0, fcopy[6];
            for (q = 0; q < r; q++) for (s = 0; s < depth; s++) { sz[k] = tps[s]; ty[k] = types[s]; k++; }
            memcpy(fcopy, freev, sizeof fcopy);
            if (!bf_place(fcopy, nt, nn, sz, ty, 0, k)) break;
            rbf = r;
        }
        r = ar_pack_max_replicas(&cl, &a, depth, types, tps);
        if (rbf * depth < 24 || r * depth <= 24)
            ASSERT_MSG(r == rbf, "iteration %d: packing says %d replicas, brute force %d", it, r, rbf);
        if (r < 1) continue;
        /* the placement of r replicas is valid */
        if (r * depth > 64) continue;
        /* in either order (replica by replica; stage by stage) */
        for (order = 0; order <= 1; order++) {
            unsigned char taken[6][8];
            memset(taken, 0, sizeof taken);
            ASSERT_OK(ar_pack_place(&cl, &a, depth, types, tps, r, order, node_of, gpu_of, scratch));
            memset(used, 0, sizeof used);
            for (q = 0; q < r; q++)
                for (s = 0; s < depth; s++) {
                    int n = node_of[q * depth + s], g = gpu_of[q * depth + s], k;
                    ASSERT(n >= 0 && n < nn);
                    ASSERT_EQ(nodes[n].type, types[s]);
                    /* contiguous GPUs inside the node, after those already used */
                    ASSERT(g >= nodes[n].gpus - freev[n]);
                    ASSERT(g + tps[s] <= nodes[n].gpus);
                    for (k = g; k < g + tps[s]; k++) {
                        ASSERT_MSG(!taken[n][k], "order %d: node %d GPU %d placed twice", order, n, k);
                        taken[n][k] = 1;
                    }
                    used[n] += tps[s];
                }
            for (i = 0; i < nn; i++) ASSERT(used[i] <= freev[i]);
            /* r + 1 does not place */
            ASSERT_STATUS(ar_pack_place(&cl, &a, depth, types, tps, r + 1, order, node_of, gpu_of, scratch),
                          ARACHNE_E_INFEASIBLE);
        }
    }
}

/* A cluster of n nodes of one GPU type "T" and its availability (free
 * GPUs per node in freev), for the packing tests. */
static void one_type_cluster(arachne_cluster *cl, ar_avail *a, ar_node *nodes, int *freev, int n)
{
    memset(cl, 0, sizeof *cl);
    cl->ntypes = 1;
    strcpy(cl->types[0].name, "T");
    cl->nnodes = n;
    cl->nodes = nodes;
    memset(a, 0, sizeof *a);
    a->nnodes = n;
    a->free = freev;
    ar_avail_refresh(a, cl);
}

TEST(pack_prefers_exact_node_then_smallest_larger)
{
    arachne_cluster cl;
    ar_avail a;
    ar_node nodes[4] = { { 0, 8 }, { 0, 4 }, { 0, 2 }, { 0, 4 } };
    int freev[4] = { 8, 3, 2, 4 }, scratch[12], node_of[8], gpu_of[8], types[1] = { 0 }, tps[1] = { 2 };
    one_type_cluster(&cl, &a, nodes, freev, 4);
    ASSERT_EQ(a.type_free[0], 17);
    ASSERT_EQ(a.type_max_free[0], 8);
    ASSERT_EQ(ar_pack_max_replicas(&cl, &a, 1, types, tps), 1 + 1 + 2 + 4);
    ASSERT_OK(ar_pack_place(&cl, &a, 1, types, tps, 4, 0, node_of, gpu_of, scratch));
    ASSERT_EQ(node_of[0], 2);   /* the node with exactly 2 free */
    ASSERT_EQ(gpu_of[0], 0);
    ASSERT_EQ(node_of[1], 1);   /* then the smallest larger one (3 free) */
    ASSERT_EQ(gpu_of[1], 1);    /* its GPU 0 is in use */
    ASSERT_EQ(node_of[2], 3);   /* then the 4-GPU node, filled */
    ASSERT_EQ(node_of[3], 3);
    ASSERT_EQ(gpu_of[3], 2);
}

TEST(pack_places_a_stage_s_replicas_together_in_megatron_order)
{
    /* two 8-GPU nodes, a template of two TP-1 stages, 8 replicas */
    arachne_cluster cl;
    ar_avail a;
    ar_node nodes[2] = { { 0, 8 }, { 0, 8 } };
    int freev[2] = { 8, 8 }, scratch[6], node_of[16], gpu_of[16], types[2] = { 0, 0 }, tps[2] = { 1, 1 }, q;
    one_type_cluster(&cl, &a, nodes, freev, 2);
    /* replica by replica: replica q's two stages side by side, so each
     * stage's 8 replicas are spread 4 + 4 over both nodes */
    ASSERT_OK(ar_pack_place(&cl, &a, 2, types, tps, 8, 0, node_of, gpu_of, scratch));
    for (q = 0; q < 8; q++) {
        ASSERT_EQ(node_of[2 * q], q / 4);
        ASSERT_EQ(node_of[2 * q + 1], q / 4);
        ASSERT_EQ(gpu_of[2 * q], 2 * (q % 4));
        ASSERT_EQ(gpu_of[2 * q + 1], 2 * (q % 4) + 1);
    }
    /* stage by stage: stage 0 fills node 0, stage 1 node 1 */
    ASSERT_OK(ar_pack_place(&cl, &a, 2, types, tps, 8, 1, node_of, gpu_of, scratch));
    for (q = 0; q < 8; q++) {
        ASSERT_EQ(node_of[2 * q], 0);
        ASSERT_EQ(node_of[2 * q + 1], 1);
        ASSERT_EQ(gpu_of[2 * q], q);
        ASSERT_EQ(gpu_of[2 * q + 1], q);
    }
}

/* ---- splits and tiles ----------------------------------------------------- */

static int split_ok(const int *f, int depth, int blocks)
{
    int s;
    if (f[0] != 0 || f[depth] != blocks) return 0;
    for (s = 0; s < depth; s++) if (f[s + 1] - f[s] < 1) return 0;
    return 1;
}

TEST(splits_cover_every_block_once)
{
    env e;
    int d, s, f[AR_MAX_DEPTH + 1], g[AR_MAX_DEPTH + 1];
    double w[AR_MAX_DEPTH];
    ar_stage_speed sp[AR_MAX_DEPTH];
    ASSERT_OK(env_open(&e, "llama3-8b", "a6000:2x4,h100:2x4"));
    for (d = 1; d <= 32; d++) {
        for (s = 0; s < d; s++) {
            ASSERT(ar_stage_speed_get(e.cm, s % 2, 1 << (s % 3), 1, &sp[s]));
            w[s] = 1.0 + s;
        }
        ar_split_balanced(e.m, d, sp, f);
        ASSERT_MSG(split_ok(f, d, 32), "balanced split of depth %d", d);
        ar_split_even(32, d, f);
        ASSERT(split_ok(f, d, 32));
        for (s = 0; s < d; s++) ASSERT(f[s + 1] - f[s] == 32 / d || f[s + 1] - f[s] == 32 / d + 1);
        ar_split_weighted(32, d, w, f);
        ASSERT(split_ok(f, d, 32));
        for (s = 0; s < d; s++) {
            if (ar_split_shift(d, f, s, 1, 1, g)) { ASSERT(split_ok(g, d, 32)); ASSERT_EQ(g[s + 1], f[s + 1] - 1); }
            if (ar_split_shift(d, f, s, -1, 1, g)) { ASSERT(split_ok(g, d, 32)); ASSERT_EQ(g[s], f[s] + 1); }
        }
    }
    /* balanced: a faster stage gets more blocks */
    ASSERT(ar_stage_speed_get(e.cm, 0, 1, 1, &sp[0])); /* A6000 tp 1 */
    ASSERT(ar_stage_speed_get(e.cm, 1, 4, 1, &sp[1])); /* H100 tp 4 */
    ar_split_balanced(e.m, 2, sp, f);
    ASSERT(f[1] < 16);
    env_close(&e);
}

/* Time of stage s of a split: its blocks plus the embedding (first stage)
 * and the head (last stage), as the balanced split counts them. */
static double split_stage_s(const arachne_model *m, const ar_stage_speed *sp, const int *f, int depth, int s)
{
    double t = 0.0;
    int b;
    for (b = f[s]; b < f[s + 1]; b++) t += sp[s].block_s[ar_model_block_kind(m, b)];
    if (s == 0) t += sp[s].block_s[AR_LAYER_EMBED];
    if (s == depth - 1) t += sp[s].block_s[AR_LAYER_HEAD];
    return t;
}

static double split_max_s(const arachne_model *m, const ar_stage_speed *sp, const int *f, int depth)
{
    double worst = 0.0;
    int s;
    for (s = 0; s < depth; s++) {
        double t = split_stage_s(m, sp, f, depth, s);
        if (t > worst) worst = t;
    }
    return worst;
}

/* Least slowest-stage time over every split within the caps (stage s of
 * depth holds blocks [f[s], f[s+1])), by enumeration; -1 when none. */
static double bf_capped(const arachne_model *m, const ar_stage_speed *sp, const int *caps, int depth, int *f, int s)
{
    double best = -1.0;
    int e, lo, hi;
    if (s == depth - 1) {
        f[depth] = m->blocks;
        if (f[depth] - f[s] < 1 || f[depth] - f[s] > caps[s]) return -1.0;
        return split_max_s(m, sp, f, depth);
    }
    lo = f[s] + 1;
    hi = m->blocks - (depth - 1 - s);
    if (hi > f[s] + caps[s]) hi = f[s] + caps[s];
    for (e = lo; e <= hi; e++) {
        double t;
        f[s + 1] = e;
        t = bf_capped(m, sp, caps, depth, f, s + 1);
        if (t >= 0 && (best < 0 || t < best)) best = t;
    }
    return best;
}

TEST(capped_split_is_the_fastest_within_the_caps)
{
    static const char *models[] = { "llama3-8b", "mixtral-8x7b" };
    size_t mi;
    ar_rng rng;
    ar_rng_seed(&rng, 5);
    for (mi = 0; mi < AR_COUNT(models); mi++) {
        env e;
        int it;
        ASSERT_OK(env_open(&e, models[mi], "a6000:2x4,h100:2x4"));
        for (it = 0; it < 40; it++) {
            int depth = 2 + ar_rng_int(&rng, 3), s, caps[AR_MAX_DEPTH], f[AR_MAX_DEPTH + 1], g[AR_MAX_DEPTH + 1];
            int total = 0;
            ar_stage_speed sp[AR_MAX_DEPTH];
            double want, got;
            for (s = 0; s < depth; s++) {
                ASSERT(ar_stage_speed_get(e.cm, ar_rng_int(&rng, 2), 1 << ar_rng_int(&rng, 3), 1, &sp[s]));
                caps[s] = 1 + ar_rng_int(&rng, e.m->blocks);
                total += caps[s];
            }
            g[0] = 0;
            want = bf_capped(e.m, sp, caps, depth, g, 0);
            if (total < e.m->blocks) {
                ASSERT(want < 0);
                ASSERT_EQ(ar_split_balanced_capped(e.m, depth, sp, caps, f), 0);
                continue;
            }
            ASSERT(want > 0);
            ASSERT_MSG(ar_split_balanced_capped(e.m, depth, sp, caps, f), "%s depth %d", models[mi], depth);
            ASSERT(split_ok(f, depth, e.m->blocks));
            for (s = 0; s < depth; s++) ASSERT(f[s + 1] - f[s] <= caps[s]);
            got = split_max_s(e.m, sp, f, depth);
            ASSERT_MSG(got <= want * (1.0 + 1e-9), "%s depth %d: %.9g s, brute force %.9g s", models[mi], depth, got, want);
            /* caps that bind nowhere give the uncapped balanced split */
            for (s = 0; s < depth; s++) caps[s] = e.m->blocks;
            ASSERT(ar_split_balanced_capped(e.m, depth, sp, caps, f));
            ar_split_balanced(e.m, depth, sp, g);
            ASSERT(memcmp(f, g, (size_t)(depth + 1) * sizeof(int)) == 0);
        }
        {
            int caps[2] = { 0, 64 }, f[3];
            ar_stage_speed sp[2];
            ASSERT(ar_stage_speed_get(e.cm, 0, 1, 1, &sp[0]));
            sp[1] = sp[0];
            ASSERT_EQ(ar_split_balanced_capped(e.m, 2, sp, caps, f), 0);
        }
        env_close(&e);
    }
}

/* The balanced split as a plain bisection: greedy from the back, ~60
 * calls per split, none skipped.  ar_split_balanced answers most of those
 * calls from earlier ones; it must give this split bit for bit. */
static double ref_block_s(const arachne_model *m, const ar_stage_speed *sp, int b)
{
    return sp->block_s[ar_model_block_kind(m, b)];
}

static int ref_greedy(const arachne_model *m, int depth, const ar_stage_speed *sp, const int *caps, double T, int *f)
{
    int s, b, end = m->blocks;
    double t;
    f[depth] = m->blocks;
    for (s = depth - 1; s >= 1; s--) {
        int minb = s;
        t = s == depth - 1 ? sp[s].block_s[AR_LAYER_HEAD] : 0.0;
        if (caps && end - caps[s] > minb) minb = end - caps[s];
        b = end - 1;
        t += ref_block_s(m, &sp[s], b);
        while (b - 1 >= minb && !(t + ref_block_s(m, &sp[s], b - 1) > T)) {
            t += ref_block_s(m, &sp[s], b - 1);
            b--;
        }
        if (t > T) return 0;
        f[s] = end = b;
    }
    f[0] = 0;
    if (caps && end > caps[0]) return 0;
    t = 0.0;
    if (m->experts <= 0) t = (double)end * sp[0].block_s[AR_LAYER_DENSE];
    else for (b = 0; b < end; b++) t += ref_block_s(m, &sp[0], b);
    return t + sp[0].block_s[AR_LAYER_EMBED] + (depth == 1 ? sp[0].block_s[AR_LAYER_HEAD] : 0.0) <= T;
}

static int ref_split(const arachne_model *m, int depth, const ar_stage_speed *sp, const int *caps, int *f)
{
    double lo = 0.0, hi = 0.0;
    int s, b, it;
    for (s = 0; s < depth; s++) {
        double t = 0.0;
        if (m->experts <= 0) t = (double)m->blocks * sp[s].block_s[AR_LAYER_DENSE];
        else for (b = 0; b < m->blocks; b++) t += ref_block_s(m, &sp[s], b);
        t = t + sp[s].block_s[AR_LAYER_EMBED] + sp[s].block_s[AR_LAYER_HEAD];
        if (t > hi) hi = t;
    }
    hi = hi * 1.000001 + 1e-12;
    if (!ref_greedy(m, depth, sp, caps, hi, f)) return 0;
    for (it = 0; it < 64; it++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) break;
        if (ref_greedy(m, depth, sp, caps, mid, f)) hi = mid; else lo = mid;
    }
    (void)ref_greedy(m, depth, sp, caps, hi, f);
    return 1;
}

TEST(balanced_split_is_the_plain_bisection_bit_for_bit)
{
    static const char *models[] = { "llama3-8b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b" };
    size_t mi;
    ar_rng rng;
    ar_rng_seed(&rng, 11);
    for (mi = 0; mi < AR_COUNT(models); mi++) {
        arachne_model *m = NULL;
        int it;
        ASSERT_OK(arachne_model_preset(&m, models[mi]));
        for (it = 0; it < 300; it++) {
            int depth = 1 + ar_rng_int(&rng, m->blocks < 16 ? m->blocks : 16), s, k, ok, want_ok;
            int caps[AR_MAX_DEPTH], f[AR_MAX_DEPTH + 1], g[AR_MAX_DEPTH + 1];
            int capped = it % 3 == 2, kinds = 1 + ar_rng_int(&rng, 3); /* distinct stage speeds */
            ar_stage_speed sp[AR_MAX_DEPTH];
            for (s = 0; s < depth; s++) {
                if (s >= kinds) { sp[s] = sp[s % kinds]; continue; }
                for (k = 0; k < AR_LAYER_KINDS; k++)
                    sp[s].block_s[k] = (k == AR_LAYER_EMBED || k == AR_LAYER_HEAD ? 0.002 : 0.01) *
                                       (0.5 + ar_rng_uniform(&rng));
            }
            for (s = 0; s < depth; s++) caps[s] = 1 + ar_rng_int(&rng, m->blocks);
            memset(f, 0, sizeof f);
            memset(g, 0, sizeof g);
            if (capped) {
                int total = 0;
                for (s = 0; s < depth; s++) total += caps[s];
                want_ok = depth <= m->blocks && total >= m->blocks && ref_split(m, depth, sp, caps, g);
                ok = ar_split_balanced_capped(m, depth, sp, caps, f);
                ASSERT_MSG(ok == want_ok, "%s depth %d capped: %d, plain bisection %d", models[mi], depth, ok, want_ok);
                if (!ok) continue;
            } else {
                if (depth == 1) { g[0] = 0; g[1] = m->blocks; }
                else if (!ref_split(m, depth, sp, NULL, g)) ar_split_even(m->blocks, depth, g);
                ar_split_balanced(m, depth, sp, f);
            }
            ASSERT_MSG(memcmp(f, g, (size_t)(depth + 1) * sizeof(int)) == 0, "%s depth %d%s: split differs",
                       models[mi], depth, capped ? " capped" : "");
        }
        arachne_model_destroy(m);
    }
}

TEST(tiles_are_every_valid_factorisation)
{
    static const int ws[] = { 1, 2, 4, 6, 8, 12, 16, 36, 64, 512 };
    static const int tpv[] = { 1, 2, 4, 8 };
    static const int ex[] = { 8, 128, 256, 6 };
    size_t a, b, c;
    for (a = 0; a < AR_COUNT(ws); a++)
        for (b = 0; b < AR_COUNT(tpv); b++)
            for (c = 0; c < AR_COUNT(ex); c++) {
                ar_tile t[AR_MAX_TILES];
                int n = ar_tiles_enumerate(ws[a], tpv[b], ex[c], t, AR_MAX_TILES), i, j, want = 0, ep, etp;
                for (etp = 1; etp <= tpv[b]; etp++)
                    for (ep = 1; ep <= ex[c]; ep++)
                        if (tpv[b] % etp == 0 && ex[c] % ep == 0 && ws[a] % (ep * etp) == 0) want++;
                ASSERT_EQ(n, AR_MIN(want, AR_MAX_TILES));
                for (i = 0; i < n; i++) {
                    ASSERT_EQ((long)t[i].ep * t[i].etp * t[i].edp, ws[a]);
                    ASSERT_EQ(tpv[b] % t[i].etp, 0);
                    ASSERT_EQ(ex[c] % t[i].ep, 0);
                    if (i > 0) ASSERT((long)t[i - 1].ep * t[i - 1].etp >= (long)t[i].ep * t[i].etp);
                    for (j = 0; j < i; j++) ASSERT(t[j].ep != t[i].ep || t[j].etp != t[i].etp);
                }
            }
}

/* ---- the fill ---------------------------------------------------------------- */

/* Structural checks of a filled plan against the cluster. */
static int check_plan(const env *e, const arachne_plan *p, char *why, size_t cap)
{
    const arachne_cluster *c = e->c;
    int *seen, i, j, s, total = 0;
    seen = (int *)calloc((size_t)c->nnodes * 1024, sizeof(int));
    if (!seen) return 0;
    for (i = 0; i < p->nranks; i++) {
        const ar_rank *r = &p->ranks[i];
        if (r->node < 0 || r->node >= c->nnodes || r->gpu < 0 || r->gpu >= c->nodes[r->node].gpus) {
            snprintf(why, cap, "rank %d outside the cluster", i); free(seen); return 0;
        }
        if (seen[r->node * 1024 + r->gpu]++) { snprintf(why, cap, "GPU %d:%d used twice", r->node, r->gpu); free(seen); return 0; }
        if (c->nodes[r->node].type != p->t[r->tmpl].stages[r->stage].type) {
            snprintf(why, cap, "rank %d on the wrong GPU type", i); free(seen); return 0;
        }
    }
    free(seen);
    for (j = 0; j < p->ntemplates; j++) {
        const ar_template *t = &p->t[j];
        if (t->stages[0].first != 0 || t->stages[t->depth - 1].end != e->m->blocks) {
            snprintf(why, cap, "template %d does not cover the model", j); return 0;
        }
        for (s = 0; s < t->depth; s++) {
            if (t->stages[s].end <= t->stages[s].first || (s > 0 && t->stages[s].first != t->stages[s - 1].end)) {
                snprintf(why, cap, "template %d stage %d: blocks %d-%d", j, s, t->stages[s].first, t->stages[s].end);
                return 0;
            }
            total += t->replicas * t->stages[s].tp * ar_tmpl_cp(t); /* a stage holds tp x cp GPUs */
        }
    }
    if (total != p->nranks) { snprintf(why, cap, "%d ranks for %d GPUs", p->nranks, total); return 0; }
    /* TP groups inside one node */
    for (i = 0; i < p->nranks; i++)
        for (j = i + 1; j < p->nranks && j < i + 1024; j++) {
            const ar_rank *a = &p->ranks[i], *b = &p->ranks[j];
            if (a->tmpl == b->tmpl && a->replica == b->replica && a->stage == b->stage && a->node != b->node) {
                snprintf(why, cap, "TP group of template %d replica %d stage %d crosses nodes", a->tmpl, a->replica, a->stage);
                return 0;
            }
        }
    /* ranks numbered template, replica, stage, cp rank, tp rank */
    for (i = 1; i < p->nranks; i++) {
        const ar_rank *a = &p->ranks[i - 1], *b = &p->ranks[i];
        long ka = ((long)a->tmpl * 100000 + a->replica) * 1000 + a->stage, kb = ((long)b->tmpl * 100000 + b->replica) * 1000 + b->stage;
        int next = b->cp_rank == a->cp_rank ? b->tp_rank == a->tp_rank + 1 : b->cp_rank == a->cp_rank + 1 && b->tp_rank == 0;
        if (b->rank != i || kb < ka || (kb == ka && !next)) {
            snprintf(why, cap, "rank %d out of order", i); return 0;
        }
    }
    return 1;
}

TEST(fill_places_a_valid_maximal_template)
{
    env e;
    arachne_plan p;
    ar_avail a;
    int types[3] = { 1, 0, 1 }, tps[3] = { 2, 4, 1 }, i, used = 0;
    char why[200];
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:3x4+2x2,h100:2x4+3x1"));
    memset(&p, 0, sizeof p);
    ASSERT_OK(ar_plan_init(&p, e.cm));
    ASSERT_OK(ar_avail_init(&a, e.c));
    ASSERT_OK(ar_fill_template(e.cm, &a, &p, 3, types, tps));
    ASSERT_EQ(p.ntemplates, 1);
    ASSERT_MSG(check_plan(&e, &p, why, sizeof why), "%s", why);
    ASSERT_OK(ar_plan_validate(e.cm, &p));
    ASSERT_GT(p.iter_per_s, 0);
    /* replicas are maximal: no further replica of the same template packs */
    ASSERT_EQ(ar_pack_max_replicas(e.c, &a, 3, types, tps), 0);
    /* the availability was consumed by exactly the ranks */
    for (i = 0; i < a.nnodes; i++) used += e.c->nodes[i].gpus - a.free[i];
    ASSERT_EQ(used, p.nranks);
    /* a second template on what is left */
    {
        int t2[1] = { 0 }, p2[1] = { 1 };
        if (a.type_free[0] > 0) {
            int st = ar_fill_template(e.cm, &a, &p, 1, t2, p2);
            ASSERT(st == ARACHNE_OK || st == ARACHNE_E_INFEASIBLE);
            if (st == ARACHNE_OK) {
                ASSERT_EQ(p.ntemplates, 2);
                ASSERT_MSG(check_plan(&e, &p, why, sizeof why), "%s", why);
                ASSERT_OK(ar_plan_validate(e.cm, &p));
            }
        }
    }
    ar_avail_free(&a);
    ar_plan_clear(&p);
    env_close(&e);
}

/* Opens qwen3-30b-a3b on cluster at a global batch of 256 and checks that
 * the fill option is on by default (ARACHNE_E_INVALID_ARGUMENT if not). */
static int open_option_on(env *e, const char *cluster, int option)
{
    double v = 0.0;
    int st;
    if ((st = env_open(e, "qwen3-30b-a3b", cluster)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_GLOBAL_BATCH, 256)) ||
        (st = arachne_cost_model_get(e->cm, option, &v)))
        return st;
    return v == 1.0 ? ARACHNE_OK : ar_error(ARACHNE_E_INVALID_ARGUMENT, "option %d is %g by default", option, v);
}

/* Fills one template with ARACHNE_OPT_STAGE_REVERSAL set to rev,
 * ARACHNE_OPT_STAGE_MOVES to moves and ARACHNE_OPT_STAGE_MAJOR to major. */
static int fill_with_options(env *e, int rev, int moves, int major, int depth, const int *types, const int *tps,
                             arachne_plan *p)
{
    ar_avail a;
    int st;
    memset(p, 0, sizeof *p);
    if ((st = arachne_cost_model_set(e->cm, ARACHNE_OPT_STAGE_MOVES, moves)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_STAGE_MAJOR, major)) ||
        (st = arachne_cost_model_set(e->cm, ARACHNE_OPT_STAGE_REVERSAL, rev)) || (st = ar_plan_init(p, e->cm)) ||
        (st = ar_avail_init(&a, e->c)))
        return st;
    st = ar_fill_template(e->cm, &a, p, depth, types, tps);
    ar_avail_free(&a);
    return st;
}

/* The same in the fill's placement order only: each option's test then
 * compares it with the fill without it, the others as they are (Megatron's
 * order is tried on the winning order only, so with it on, an option that
 * finds a faster order can end slower than the order it beat). */
static int fill_with_orders(env *e, int rev, int moves, int depth, const int *types, const int *tps, arachne_plan *p)
{
    return fill_with_options(e, rev, moves, 0, depth, types, tps, p);
}

/* Fills one template with ARACHNE_OPT_STAGE_REVERSAL set to rev (and no
 * stage moves, which test fill_moves_a_stage_to_either_end covers). */
static int fill_with_reversal(env *e, int rev, int depth, const int *types, const int *tps, arachne_plan *p)
{
    return fill_with_orders(e, rev, 0, depth, types, tps, p);
}

TEST(fill_runs_a_template_the_faster_way_round)
{
    /* The greedy template of val-small-qwen3-30b-a3b-22: B300 stages first,
     * four L40S last, where the last one also holds the output layer. */
    env e;
    arachne_plan p0, p1, q0, q1;
    int types[8] = { 2, 2, 2, 1, 0, 0, 0, 0 }, tps[8] = { 1, 1, 1, 4, 1, 1, 1, 1 }, k, checked = 0;
    char why[200];
    ar_rng rng;
    ASSERT_OK(open_option_on(&e, "l40s:1x8,h200:2x4,b300:6x1", ARACHNE_OPT_STAGE_REVERSAL));
    ASSERT_OK(fill_with_reversal(&e, 0, 8, types, tps, &p0));
    ASSERT_OK(fill_with_reversal(&e, 1, 8, types, tps, &p1));
    ASSERT_EQ(p0.t[0].stages[0].type, 2);
    ASSERT_EQ(p1.t[0].stages[0].type, 0); /* reversed: the L40S stages first */
    ASSERT_EQ(p1.t[0].stages[7].type, 2);
    ASSERT_MSG(p1.iter_per_s > 1.5 * p0.iter_per_s, "reversed %.4f iter/s, as decided %.4f", p1.iter_per_s,
               p0.iter_per_s);
    ASSERT_MSG(check_plan(&e, &p1, why, sizeof why), "%s", why);
    ASSERT_OK(ar_plan_validate(e.cm, &p1));
    ar_plan_clear(&p0);
    ar_plan_clear(&p1);
    /* never slower than the order asked for, on random templates */
    ar_rng_seed(&rng, 5);
    for (k = 0; k < 40; k++) {
        int d = 2 + ar_rng_int(&rng, 4), s, st0, st1;
        for (s = 0; s < d; s++) { types[s] = ar_rng_int(&rng, 3); tps[s] = 1 << ar_rng_int(&rng, 2); }
        st0 = fill_with_reversal(&e, 0, d, types, tps, &q0);
        st1 = fill_with_reversal(&e, 1, d, types, tps, &q1);
        ASSERT(st0 == ARACHNE_OK || st0 == ARACHNE_E_INFEASIBLE);
        ASSERT(st1 == ARACHNE_OK || st1 == ARACHNE_E_INFEASIBLE);
        if (st0 == ARACHNE_OK) {
            ASSERT_EQ(st1, ARACHNE_OK); /* the order asked for is one of the two tried */
            ASSERT_MSG(q1.iter_per_s >= q0.iter_per_s * (1 - 1e-12), "template %d: %.6f < %.6f", k, q1.iter_per_s,
                       q0.iter_per_s);
            ASSERT_MSG(check_plan(&e, &q1, why, sizeof why), "%s", why);
            checked++;
        }
        ar_plan_clear(&q0);
        ar_plan_clear(&q1);
    }
    ASSERT_GT(checked, 5);
    env_close(&e);
}

/* Fills one template with ARACHNE_OPT_PRICED_RESPLIT set to on (the stages
 * in the order given). */
static int fill_with_resplit(env *e, int on, int depth, const int *types, const int *tps, arachne_plan *p)
{
    int st = arachne_cost_model_set(e->cm, ARACHNE_OPT_PRICED_RESPLIT, on);
    return st ? st : fill_with_reversal(e, 0, depth, types, tps, p);
}

/* 1 when p's template 0 holds the asked stages (type, GPUs) in some order. */
static int same_stages(const arachne_plan *p, int depth, const int *types, const int *tps)
{
    int used[AR_MAX_DEPTH] = { 0 }, s, k, matched = 0;
    if (p->t[0].depth != depth) return 0;
    for (s = 0; s < depth; s++)
        for (k = 0; k < depth; k++)
            if (!used[k] && types[k] == p->t[0].stages[s].type && tps[k] == ar_stage_gpus(&p->t[0], s)) {
                used[k] = 1;
                matched++;
                break;
            }
    return matched == depth;
}

typedef int (*fill_option_fn)(env *e, int on, int depth, const int *types, const int *tps, arachne_plan *p);

/* Fills 40 random templates of min_d .. min_d + span - 1 stages (3 GPU
 * types, TP 1 or 2) with a fill option off and on: 1 when, for every one,
 * both fit or neither does, the option is never slower, and its plan holds
 * the asked stages and passes check_plan; else 0 with why filled.
 * *checked counts the templates that fit, *faster those the option sped up. */
static int random_templates_agree(env *e, fill_option_fn fill, unsigned seed, int min_d, int span, int *checked,
                                  int *faster, char *why, size_t cap)
{
    int types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH], k, s, ok = 1;
    ar_rng rng;
    ar_rng_seed(&rng, seed);
    *checked = *faster = 0;
    for (k = 0; k < 40 && ok; k++) {
        arachne_plan q0, q1;
        int d = min_d + ar_rng_int(&rng, span), st0, st1;
        for (s = 0; s < d; s++) { types[s] = ar_rng_int(&rng, 3); tps[s] = 1 << ar_rng_int(&rng, 2); }
        st0 = fill(e, 0, d, types, tps, &q0);
        st1 = fill(e, 1, d, types, tps, &q1);
        if ((st0 != ARACHNE_OK && st0 != ARACHNE_E_INFEASIBLE) || st1 != st0) {
            snprintf(why, cap, "template %d: status %d off, %d on", k, st0, st1);
            ok = 0;
        } else if (st0 == ARACHNE_OK) {
            if (q1.iter_per_s < q0.iter_per_s * (1 - 1e-12)) {
                snprintf(why, cap, "template %d: %.6f < %.6f iter/s", k, q1.iter_per_s, q0.iter_per_s);
                ok = 0;
            } else if (!same_stages(&q1, d, types, tps)) {
                snprintf(why, cap, "template %d: other stages than asked", k);
                ok = 0;
            } else if (!check_plan(e, &q1, why, cap)) {
                ok = 0;
            }
            *faster += q1.iter_per_s > q0.iter_per_s;
            ++*checked;
        }
        ar_plan_clear(&q0);
        ar_plan_clear(&q1);
    }
    return ok;
}

/* Fills one template with a fill option off (*p0) and on (*p1): 1 when
 * both fit, on runs more than ratio times as fast, and its plan passes
 * check_plan and ar_plan_validate; else 0 with why filled (the plans are
 * left for the caller to clear either way). */
static int option_speeds_up(env *e, fill_option_fn fill, int depth, const int *types, const int *tps, double ratio,
                            arachne_plan *p0, arachne_plan *p1, char *why, size_t cap)
{
    int st0 = fill(e, 0, depth, types, tps, p0), st1 = fill(e, 1, depth, types, tps, p1);
    if (st0 || st1) {
        snprintf(why, cap, "status %d off, %d on: %s", st0, st1, arachne_last_error());
        return 0;
    }
    if (!(p1->iter_per_s > ratio * p0->iter_per_s)) {
        snprintf(why, cap, "on %.4f iter/s, off %.4f", p1->iter_per_s, p0->iter_per_s);
        return 0;
    }
    if (!check_plan(e, p1, why, cap)) return 0;
    if (ar_plan_validate(e->cm, p1) != ARACHNE_OK) {
        snprintf(why, cap, "%s", arachne_last_error());
        return 0;
    }
    return 1;
}

TEST(fill_splits_again_on_the_priced_stage_times)
{
    /* The greedy template of val-small-qwen3-30b-a3b-31: the profiled split
     * gives the H100-PCIe stage 11 blocks, and the expert tiling its memory
     * then needs (EP 2 across nodes) makes it twice as slow as the others. */
    env e;
    arachne_plan p0, p1;
    int types[6] = { 1, 1, 0, 2, 2, 2 }, tps[6] = { 1, 1, 1, 1, 1, 2 }, checked = 0, faster = 0, s;
    char why[200];
    double slow0 = 0.0, slow1 = 0.0;
    ASSERT_OK(open_option_on(&e, "h100-pcie:3x1+1x4,h200:1x8,a5000:2x4+1x8", ARACHNE_OPT_PRICED_RESPLIT));
    ASSERT_MSG(option_speeds_up(&e, fill_with_resplit, 6, types, tps, 1.4, &p0, &p1, why, sizeof why), "%s", why);
    for (s = 0; s < 6; s++) {
        if (p0.t[0].stages[s].stage_s > slow0) slow0 = p0.t[0].stages[s].stage_s;
        if (p1.t[0].stages[s].stage_s > slow1) slow1 = p1.t[0].stages[s].stage_s;
    }
    ASSERT_EQ(p0.t[0].stages[2].end - p0.t[0].stages[2].first, 11);
    ASSERT_GT(11, p1.t[0].stages[2].end - p1.t[0].stages[2].first); /* blocks moved off the slow stage */
    ASSERT_MSG(slow1 < 0.7 * slow0, "slowest stage %.4f s, profiled split %.4f s", slow1, slow0);
    ar_plan_clear(&p0);
    ar_plan_clear(&p1);
    /* never slower, feasible exactly when the profiled split is */
    ASSERT_MSG(random_templates_agree(&e, fill_with_resplit, 7, 2, 5, &checked, &faster, why, sizeof why), "%s", why);
    ASSERT_GT(checked, 5);
    env_close(&e);
}

/* Fills one template with ARACHNE_OPT_STAGE_MOVES set to on (the reversal
 * on, as by default). */
static int fill_with_moves(env *e, int on, int depth, const int *types, const int *tps, arachne_plan *p)
{
    return fill_with_orders(e, 1, on, depth, types, tps, p);
}

TEST(fill_moves_a_stage_to_either_end)
{
    /* The greedy template of val-small-qwen3-30b-a3b-23bbb: A100 stages
     * around two B200 TP-2 stages, RTX-3090 TP-4 last. */
    env e;
    arachne_plan p0, p1;
    int types[6] = { 1, 1, 0, 0, 1, 2 }, tps[6] = { 1, 1, 2, 2, 1, 4 }, checked = 0, faster = 0;
    char why[200];
    ASSERT_OK(open_option_on(&e, "b200:2x4,a100-40:7x1,rtx-3090:2x4", ARACHNE_OPT_STAGE_MOVES));
    ASSERT_MSG(option_speeds_up(&e, fill_with_moves, 6, types, tps, 1.2, &p0, &p1, why, sizeof why), "%s", why);
    ASSERT(same_stages(&p1, 6, types, tps));
    ar_plan_clear(&p0);
    ar_plan_clear(&p1);
    /* never slower, feasible exactly when the asked or the reversed order
     * is, and always the asked stages */
    ASSERT_MSG(random_templates_agree(&e, fill_with_moves, 11, 3, 4, &checked, &faster, why, sizeof why), "%s", why);
    ASSERT_GT(checked, 5);
    ASSERT_GT(faster, 0);
    env_close(&e);
}

/* Fills one template with ARACHNE_OPT_STAGE_MAJOR set to on (the
 * reversal and the stage moves on, as by default). */
static int fill_with_stage_major(env *e, int on, int depth, const int *types, const int *tps, arachne_plan *p)
{
    return fill_with_options(e, 1, 1, on, depth, types, tps, p);
}

TEST(fill_places_a_stage_s_replicas_together_when_that_is_faster)
{
    /* qwen3-30b-a3b on two H100 nodes, two TP-1 stages: placed replica by
     * replica each stage's 8 replicas sit 4 + 4 on both nodes, so every
     * expert-parallel group of more than 4 crosses the network; in
     * Megatron's order stage 0 holds node 0 and stage 1 node 1. */
    env e;
    arachne_plan p0, p1;
    int types[2] = { 0, 0 }, tps[2] = { 1, 1 }, checked = 0, faster = 0, k;
    char why[200];
    ASSERT_OK(open_option_on(&e, "h100:2x8", ARACHNE_OPT_STAGE_MAJOR));
    ASSERT_MSG(option_speeds_up(&e, fill_with_stage_major, 2, types, tps, 1.8, &p0, &p1, why, sizeof why),
               "%s", why);
    for (k = 0; k < p1.nranks; k++) {
        const ar_rank *R = &p1.ranks[k];
        ASSERT_EQ(R->node, R->stage); /* each stage on its own node */
    }
    ar_plan_clear(&p0);
    ar_plan_clear(&p1);
    /* never slower, feasible exactly when the fill's order is, and always
     * the asked stages (on 2 types x 2 of the random templates' GPUs) */
    env_close(&e);
    ASSERT_OK(env_open(&e, "qwen3-30b-a3b", "h100:2x8,a100-80:2x8,l40s:2x4"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 256));
    ASSERT_MSG(random_templates_agree(&e, fill_with_stage_major, 13, 2, 4, &checked, &faster, why, sizeof why), "%s",
               why);
    ASSERT_GT(checked, 5);
    ASSERT_GT(faster, 0);
    env_close(&e);
}

TEST(fill_replicas_match_brute_force_on_small_clusters)
{
    static const char *specs[] = { "a100-40:1x4+1x2+2x1", "h100:3x2,a6000:1x4+2x1", "a100-40:2x3" };
    size_t k;
    for (k = 0; k < AR_COUNT(specs); k++) {
        env e;
        arachne_plan p;
        ar_avail a;
        int types[2] = { 0, 0 }, tps[2] = { 1, 2 }, r, nt[8], freev[8], i, rbf = 0;
        ASSERT_OK(env_open(&e, "llama3-8b", specs[k]));
        memset(&p, 0, sizeof p);
        ASSERT_OK(ar_plan_init(&p, e.cm));
        ASSERT_OK(ar_avail_init(&a, e.c));
        for (i = 0; i < e.c->nnodes; i++) { nt[i] = e.c->nodes[i].type; freev[i] = e.c->nodes[i].gpus; }
        for (r = 1; r <= 8; r++) {
            int sz[16], ty[16], q;
            for (q = 0; q < r; q++) { sz[2 * q] = 1; ty[2 * q] = 0; sz[2 * q + 1] = 2; ty[2 * q + 1] = 0; }
            if (!bf_place(freev, nt, e.c->nnodes, sz, ty, 0, 2 * r)) break;
            rbf = r;
        }
        if (ar_fill_template(e.cm, &a, &p, 2, types, tps) == ARACHNE_OK)
            ASSERT_MSG(p.t[0].replicas == rbf, "%s: %d replicas, brute force %d", specs[k], p.t[0].replicas, rbf);
        ar_avail_free(&a);
        ar_plan_clear(&p);
        env_close(&e);
    }
}

TEST(fill_failure_changes_nothing_and_says_why)
{
    env e;
    arachne_plan p;
    ar_avail a;
    int types[2] = { 0, 0 }, tps[2] = { 1, 1 }, before[8], i;
    ASSERT_OK(env_open(&e, "qwen3-32b", "a6000:2x4"));
    memset(&p, 0, sizeof p);
    ASSERT_OK(ar_plan_init(&p, e.cm));
    ASSERT_OK(ar_avail_init(&a, e.c));
    for (i = 0; i < a.nnodes; i++) before[i] = a.free[i];
    ASSERT_STATUS(ar_fill_template(e.cm, &a, &p, 2, types, tps), ARACHNE_E_INFEASIBLE);
    ASSERT_CONTAINS(arachne_last_error(), "no split of 64 blocks over 2 stages fits");
    ASSERT_CONTAINS(arachne_last_error(), "A6000 tp 1");
    ASSERT_EQ(p.ntemplates, 0);
    ASSERT_EQ(p.nranks, 0);
    for (i = 0; i < a.nnodes; i++) ASSERT_EQ(a.free[i], before[i]);
    /* not enough GPUs: TP wider than any free node */
    tps[0] = 8;
    ASSERT_STATUS(ar_fill_template(e.cm, &a, &p, 1, types, tps), ARACHNE_E_INFEASIBLE);
    ASSERT_CONTAINS(arachne_last_error(), "inside one node");
    /* bad arguments */
    tps[0] = 3;
    ASSERT_STATUS(ar_fill_template(e.cm, &a, &p, 1, types, tps), ARACHNE_E_INVALID_ARGUMENT);
    types[0] = 7; tps[0] = 1;
    ASSERT_STATUS(ar_fill_template(e.cm, &a, &p, 1, types, tps), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_fill_template(e.cm, &a, &p, 0, types, tps), ARACHNE_E_INVALID_ARGUMENT);
    ar_avail_free(&a);
    ar_plan_clear(&p);
    env_close(&e);
}

TEST(fill_micro_batch_is_the_fastest_profiled_one)
{
    env e;
    arachne_plan p, q;
    ar_avail a, a2;
    int types[2] = { 0, 1 }, tps[2] = { 2, 2 }, k;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:2x4,h100:2x4"));
    memset(&p, 0, sizeof p);
    ASSERT_OK(ar_plan_init(&p, e.cm));
    ASSERT_OK(ar_avail_init(&a, e.c));
    memset(&a2, 0, sizeof a2);
    ASSERT_OK(ar_avail_copy(&a2, &a));
    ASSERT_OK(ar_fill_template(e.cm, &a, &p, 2, types, tps));
    /* re-price the same template with every other profiled micro-batch size */
    for (k = 0; k <= 5; k++) {
        int st;
        memset(&q, 0, sizeof q);
        ASSERT_OK(ar_plan_copy(&q, &p));
        q.t[0].micro_batch = 1 << k;
        if (q.t[0].micro_batch == p.t[0].micro_batch) { ar_plan_clear(&q); continue; }
        if (q.t[0].replicas * q.t[0].micro_batch > e.cm->setup.global_batch) { ar_plan_clear(&q); continue; }
        st = ar_plan_price(e.cm, &q);
        if (st == ARACHNE_OK)
            ASSERT_MSG(q.iteration_s >= p.iteration_s * (1 - 1e-12), "micro-batch %d: %.6f s beats the chosen %d: %.6f s",
                       q.t[0].micro_batch, q.iteration_s, p.t[0].micro_batch, p.iteration_s);
        ar_plan_clear(&q);
    }
    ar_avail_free(&a);
    ar_avail_free(&a2);
    ar_plan_clear(&p);
    env_close(&e);
}

/* For every MoE stage of a filled template, pricing any other enumerated
 * factorisation never beats the chosen one. */
static void check_tiling_optimal(const env *e, const arachne_plan *p, int j, int *checked)
{
    const ar_template *t = &p->t[j];
    int s, i;
    for (s = 0; s < t->depth; s++) {
        ar_tile tiles[AR_MAX_TILES];
        int n, b, moe = 0;
        for (b = t->stages[s].first; b < t->stages[s].end; b++) moe |= ar_model_block_kind(e->m, b) == AR_LAYER_MOE;
        if (!moe) continue;
        n = ar_tiles_enumerate(t->stages[s].tp * t->replicas, t->stages[s].tp, e->m->experts, tiles, AR_MAX_TILES);
        for (i = 0; i < n; i++) {
            arachne_plan q;
            int st;
            if (tiles[i].ep == t->stages[s].ep && tiles[i].etp == t->stages[s].etp) continue;
            memset(&q, 0, sizeof q);
            if (ar_plan_copy(&q, p) != ARACHNE_OK) continue;
            q.t[j].stages[s].ep = tiles[i].ep;
            q.t[j].stages[s].etp = tiles[i].etp;
            q.t[j].stages[s].edp = tiles[i].edp;
            st = ar_plan_price(e->cm, &q);
            if (st == ARACHNE_OK && !(q.iteration_s >= p->iteration_s * (1 - 1e-12))) {
                th_fail(__FILE__, __LINE__, "stage %d: tiling %dx%dx%d gives %.9f s, the chosen %dx%dx%d %.9f s", s,
                        tiles[i].ep, tiles[i].etp, tiles[i].edp, q.iteration_s, t->stages[s].ep, t->stages[s].etp,
                        t->stages[s].edp, p->iteration_s);
                ar_plan_clear(&q);
                return;
            }
            (*checked)++;
            ar_plan_clear(&q);
        }
    }
}

TEST(expert_tiling_is_never_beaten_by_another_factorisation)
{
    static const struct { const char *model, *spec; int depth, type, tp; } cases[] = {
        { "mixtral-8x7b", "h100:8x4", 2, 0, 4 },
        { "mixtral-8x7b", "a100-40:8x4,h100:4x8", 4, 1, 2 },
        { "qwen3-30b-a3b", "h100:4x4", 2, 0, 2 },
    };
    size_t k;
    int checked = 0, ep_gt1 = 0;
    for (k = 0; k < AR_COUNT(cases); k++) {
        env e;
        arachne_plan p;
        ar_avail a;
        int types[AR_MAX_DEPTH], tps[AR_MAX_DEPTH], s;
        ASSERT_OK(env_open(&e, cases[k].model, cases[k].spec));
        memset(&p, 0, sizeof p);
        ASSERT_OK(ar_plan_init(&p, e.cm));
        ASSERT_OK(ar_avail_init(&a, e.c));
        for (s = 0; s < cases[k].depth; s++) { types[s] = cases[k].type; tps[s] = cases[k].tp; }
        ASSERT_OK(ar_fill_template(e.cm, &a, &p, cases[k].depth, types, tps));
        ASSERT_OK(ar_plan_validate(e.cm, &p));
        for (s = 0; s < p.t[0].depth; s++) ep_gt1 += p.t[0].stages[s].ep > 1;
        check_tiling_optimal(&e, &p, 0, &checked);
        if (th_failed_flag) return;
        ar_avail_free(&a);
        ar_plan_clear(&p);
        env_close(&e);
    }
    ASSERT_GT(checked, 10);
    ASSERT_GT(ep_gt1, 0);
}

/* Fills the same random templates as the library fills them (its memo of
 * what pricing computed per (stage, block range, tiling) within a context,
 * one work space reused as the planners do, and the tiling search's
 * stages skipped where nothing changed) and plainly (every candidate
 * priced whole, no stage skipped): the shortcuts must change nothing, so
 * every status, split, tiling and price must be equal bit for bit.  A
 * trial fill (CHECK) of each template is compared first; then two
 * templates per plan are filled (BEST), so the second is searched after
 * the pricer's kept prefix.  Dense and MoE models; the tight clusters make
 * many candidates and trial fills fail. */
TEST(stage_memo_changes_no_fill)
{
    static const struct { const char *model, *cluster; } cases[] = {
        { "mixtral-8x7b", "a100-40:8x4,a6000:8x4,h100:8x8" },
        { "qwen3-30b-a3b", "a100-40:8x4,a6000:8x4,h100:8x8" },
        { "llama3-8b", "a100-40:8x4,a6000:8x4,h100:8x8" },
        { "mixtral-8x7b", "a6000:2x4,a100-40:3x4" },
        { "llama3-70b", "a6000:4x4,h100:2x4" },
    };
    size_t k;
    int searched = 0, compared = 0, checks_ok = 0, checks_failed = 0, n = th_quick() ? 3 : 10;
    for (k = 0; k < AR_COUNT(cases); k++) {
        env e;
        ar_fill_ws ws[2];
        ar_rng rng;
        int i, w;
        ASSERT_OK(env_open(&e, cases[k].model, cases[k].cluster));
        ASSERT_OK(ar_fill_ws_init(&ws[0], e.cm));
        ASSERT_OK(ar_fill_ws_init(&ws[1], e.cm));
        ws[1].plain_tile_search = 1;
        ar_rng_seed(&rng, 11 + (unsigned)k);
        for (i = 0; i < n; i++) {
            int types[2][AR_MAX_DEPTH], tps[2][AR_MAX_DEPTH], depth[2], st[2][2], chk[2][2], j, s;
            arachne_plan p[2];
            for (j = 0; j < 2; j++) {
                depth[j] = 2 + ar_rng_int(&rng, 7);
                for (s = 0; s < depth[j]; s++) {
                    types[j][s] = ar_rng_int(&rng, e.c->ntypes);
                    tps[j][s] = 1 << ar_rng_int(&rng, 3);
                }
            }
            for (w = 0; w < 2; w++) {
                ar_avail a;
                memset(&p[w], 0, sizeof p[w]);
                ASSERT_OK(ar_plan_init(&p[w], e.cm));
                ASSERT_OK(ar_avail_init(&a, e.c));
                ar_fill_ws_reset(&ws[w]);
                for (j = 0; j < 2; j++)
                    chk[w][j] = ar_fill_template_ws(&ws[w], &a, &p[w], depth[j], types[j], tps[j], AR_FILL_CHECK);
                st[w][0] = st[w][1] = 1; /* not tried */
                for (j = 0; j < 2; j++) {
                    st[w][j] = ar_fill_template_ws(&ws[w], &a, &p[w], depth[j], types[j], tps[j], AR_FILL_BEST);
                    if (st[w][j] != ARACHNE_OK) break;
                }
                ar_avail_free(&a);
            }
            for (j = 0; j < 2; j++) {
                ASSERT_EQ(chk[0][j], chk[1][j]);
                if (chk[0][j] == ARACHNE_OK) checks_ok++; else checks_failed++;
            }
            ASSERT_EQ(st[0][0], st[1][0]);
            ASSERT_EQ(st[0][1], st[1][1]);
            ASSERT_EQ(p[0].ntemplates, p[1].ntemplates);
            ASSERT(p[0].iteration_s == p[1].iteration_s);
            for (j = 0; j < p[0].ntemplates; j++) {
                const ar_template *t0 = &p[0].t[j], *t1 = &p[1].t[j];
                ASSERT_EQ(t0->depth, t1->depth);
                ASSERT_EQ(t0->replicas, t1->replicas);
                ASSERT_EQ(t0->micro_batch, t1->micro_batch);
                ASSERT_EQ(t0->micro_batches, t1->micro_batches);
                ASSERT(memcmp(t0->stages, t1->stages, (size_t)t0->depth * sizeof *t0->stages) == 0);
                compared++;
            }
            ar_plan_clear(&p[0]);
            ar_plan_clear(&p[1]);
        }
        searched += ws[0].stage_tab != NULL;
        ASSERT(ws[1].stage_tab == NULL);
        ar_fill_ws_free(&ws[0]);
        ar_fill_ws_free(&ws[1]);
        env_close(&e);
    }
    ASSERT_EQ(searched, (int)AR_COUNT(cases));
    ASSERT_GT(compared, 8);
    ASSERT_GT(checks_ok, 4);
    ASSERT_GT(checks_failed, 2);
}

TEST(no_expert_tiling_keeps_ep_one)
{
    env e;
    arachne_plan p;
    ar_avail a;
    int types[8] = { 0 }, tps[8], s;
    ASSERT_OK(env_open(&e, "mixtral-8x7b", "h100:16x4"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_EXPERT_TILING, 0));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_CONTEXT_PARALLEL, 0)); /* TP = the whole group */
    memset(&p, 0, sizeof p);
    ASSERT_OK(ar_plan_init(&p, e.cm));
    ASSERT_OK(ar_avail_init(&a, e.c));
    for (s = 0; s < 8; s++) tps[s] = 4;
    ASSERT_OK(ar_fill_template(e.cm, &a, &p, 8, types, tps));
    ASSERT_EQ(p.t[0].replicas, 2);
    for (s = 0; s < 8; s++) {
        ASSERT_EQ(p.t[0].stages[s].ep, 1);
        ASSERT_EQ(p.t[0].stages[s].etp, 4);
        ASSERT_EQ(p.t[0].stages[s].edp, p.t[0].replicas);
    }
    ar_avail_free(&a);
    ar_plan_clear(&p);
    env_close(&e);
}

TEST(avail_copy_is_independent)
{
    env e;
    ar_avail a, b;
    ASSERT_OK(env_open(&e, "llama3-8b", "a100-40:2x4+1x2,h100:1x8"));
    ASSERT_OK(ar_avail_init(&a, e.c));
    ASSERT_EQ(a.type_free[0], 10);
    ASSERT_EQ(a.type_max_free[0], 4);
    ASSERT_EQ(a.type_free[1], 8);
    ASSERT_EQ(ar_avail_total(&a), 18);
    memset(&b, 0, sizeof b);
    ASSERT_OK(ar_avail_copy(&b, &a));
    b.free[0] = 0;
    ar_avail_refresh(&b, e.c);
    ASSERT_EQ(b.type_free[0], 6);
    ASSERT_EQ(a.type_free[0], 10);
    ASSERT_EQ(a.free[0], 4);
    ASSERT_OK(ar_avail_copy(&b, &a)); /* reuses the buffer */
    ASSERT_EQ(b.type_free[0], 10);
    ar_avail_free(&a);
    ar_avail_free(&b);
    ar_avail_free(&b); /* twice is harmless */
    env_close(&e);
}

/* The FSDP search of a work space with fsdp_search set (the refinement's
 * FSDP fills): llama3-8b as one stage of TP 1 on a node of 8 A6000s
 * (51.5 GB) does not fit with ZeRO-1 (83 GB per GPU: its weights and
 * gradients alone are 48 GB) and fits sharded over the 8 replicas (40 GB,
 * `price --parallel tp=1,pp=1,dp=8,mbs=1,fsdp=8`); CHECK, which the
 * lookahead asks, still says it does not fit, and a work space without
 * the flag (every other fill) refuses it with the same message. */
TEST(fsdp_search_rescues_a_template_only_in_best_mode)
{
    env e;
    ar_fill_ws ws;
    int types[1] = { 0 }, tps[1] = { 1 }, flag;
    char plain[512];
    ASSERT_OK(env_open(&e, "llama3-8b", "a6000:1x8"));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_GLOBAL_BATCH, 64));
    ASSERT_OK(ar_fill_ws_init(&ws, e.cm));
    ASSERT_EQ(ws.fsdp_search, 0); /* off unless the refinement sets it */
    plain[0] = '\0';
    for (flag = 0; flag <= 1; flag++) {
        arachne_plan p;
        ar_avail a;
        int st;
        memset(&p, 0, sizeof p);
        ASSERT_OK(ar_plan_init(&p, e.cm));
        ASSERT_OK(ar_avail_init(&a, e.c));
        ws.fsdp_search = flag;
        ar_fill_ws_reset(&ws);
        ASSERT_EQ(ar_fill_template_ws(&ws, &a, &p, 1, types, tps, AR_FILL_CHECK), ARACHNE_E_INFEASIBLE); /* no message */
        st = ar_fill_template_ws(&ws, &a, &p, 1, types, tps, AR_FILL_BEST);
        if (!flag) {
            ASSERT_EQ(st, ARACHNE_E_INFEASIBLE);
            ASSERT_CONTAINS(arachne_last_error(), "fits in memory");
            snprintf(plain, sizeof plain, "%s", arachne_last_error());
        } else {
            ASSERT_OK(st);
            ASSERT_EQ(p.ntemplates, 1);
            ASSERT_EQ(p.t[0].replicas, 8);
            ASSERT_EQ(p.t[0].fsdp, 8);
            ASSERT_EQ(ws.fsdp_wins, 1);
            ASSERT_OK(ar_plan_finish(&p));
            ASSERT_OK(ar_plan_validate(e.cm, &p));
        }
        ar_avail_free(&a);
        ar_plan_clear(&p);
    }
    ASSERT(plain[0] != '\0');
    ar_fill_ws_free(&ws);
    env_close(&e);
}

SUITE(fill, T(fsdp_search_rescues_a_template_only_in_best_mode), T(pack_max_replicas_matches_brute_force), T(pack_prefers_exact_node_then_smallest_larger),
      T(pack_places_a_stage_s_replicas_together_in_megatron_order),
      T(splits_cover_every_block_once), T(capped_split_is_the_fastest_within_the_caps),
      T(balanced_split_is_the_plain_bisection_bit_for_bit),
      T(tiles_are_every_valid_factorisation),
      T(fill_places_a_valid_maximal_template), T(fill_runs_a_template_the_faster_way_round), T(fill_splits_again_on_the_priced_stage_times), T(fill_moves_a_stage_to_either_end),
      T(fill_places_a_stage_s_replicas_together_when_that_is_faster),
      T(fill_replicas_match_brute_force_on_small_clusters),
      T(fill_failure_changes_nothing_and_says_why), T(fill_micro_batch_is_the_fastest_profiled_one),
      T(expert_tiling_is_never_beaten_by_another_factorisation), T(stage_memo_changes_no_fill),
      T(no_expert_tiling_keeps_ep_one),
      T(avail_copy_is_independent));
