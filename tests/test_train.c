/* test_train.c -- the trainer: a tiny training run improves the policy,
 * group-relative advantages, PCGrad, self-imitation weights, checkpoints
 * (bit-identical resume, corrupt files rejected), options and cancellation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fixture.h"
#include "crc32.h"
#include "train.h"


static double greedy_iter_per_s(const arachne_policy *pol, const arachne_cost_model *cm)
{
    arachne_plan *p = NULL;
    double v = -1;
    if (arachne_plan_build(&p, pol, cm, 1, 0)) return -1;
    arachne_plan_get(p, ARACHNE_PLAN_ITER_PER_S, &v);
    arachne_plan_destroy(p);
    return v;
}

typedef struct rec_cb {
    int calls, last_update, stop_at;
    double first_reward, last_reward;
} rec_cb;

static int record(void *user, int update, int updates, double mean_reward, const double *best, int n)
{
    rec_cb *r = user;
    (void)updates;
    (void)best;
    (void)n;
    if (r->calls == 0) r->first_reward = mean_reward;
    r->calls++;
    r->last_update = update;
    r->last_reward = mean_reward;
    return r->stop_at > 0 && update >= r->stop_at;
}

#define SMALL "a100-40:2x4,h100:1x8,a6000:2x4"

TEST(tiny_training_run_improves_the_greedy_plan)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    rec_cb r;
    double before, after, best, n;
    ASSERT_OK(env_open(&e, "llama3-8b", SMALL));
    /* without the fill's stage reversal and stage moves the untrained
     * policy's greedy plan is 14 % below the best seen (with the reversal
     * alone, 3.5 %): room to show learning, as the bundled config trains */
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_REVERSAL, 0));
    ASSERT_OK(arachne_cost_model_set(e.cm, ARACHNE_OPT_STAGE_MOVES, 0));
    ASSERT_OK(arachne_policy_create(&pol, 1, 0, 0));
    before = greedy_iter_per_s(pol, e.cm);
    ASSERT_GT(before, 0);
    ASSERT_OK(arachne_trainer_create(&t, pol, 42));
    ASSERT_OK(arachne_trainer_add_composition(t, e.cm, "small"));
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_UPDATES, 12));
    memset(&r, 0, sizeof r);
    ASSERT_OK(arachne_trainer_run(t, 12, record, &r));
    ASSERT_EQ(r.calls, 12);
    ASSERT_EQ(r.last_update, 12);
    after = greedy_iter_per_s(pol, e.cm);
    ASSERT_GT(r.last_reward, r.first_reward);
    ASSERT_OK(arachne_trainer_get(t, 0, ARACHNE_TRAIN_BEST_ITER_PER_S, &best));
    ASSERT_GT(best, before);
    /* twelve updates make the greedy plan measurably faster (+14 % here) */
    ASSERT_MSG(after > 1.02 * before, "greedy plan %.4g -> %.4g iter/s (best seen %.4g): no real improvement", before,
               after, best);
    ASSERT_OK(arachne_trainer_get(t, 0, ARACHNE_TRAIN_EVALUATIONS, &n));
    ASSERT_GT(n, 12 * 8);
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_UPDATES_DONE, &n));
    ASSERT_EQ(n, 12);
    {
        double steps = 0;
        ASSERT_OK(arachne_policy_info(pol, ARACHNE_POLICY_TRAIN_STEPS, &steps));
        ASSERT(steps >= 12 * 3);
    }
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&e);
}

TEST(best_plan_replays_to_the_recorded_throughput)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    arachne_plan *p = NULL;
    double best = 0, v = 0;
    const char *name = NULL;
    ASSERT_OK(env_open(&e, "qwen3-8b", "a6000:2x4,h100:1x8"));
    ASSERT_OK(arachne_policy_create(&pol, 3, 32, 1));
    ASSERT_OK(arachne_trainer_create(&t, pol, 5));
    ASSERT_OK(arachne_trainer_add_composition(t, e.cm, NULL));
    ASSERT_OK(arachne_trainer_composition_name(t, 0, &name));
    ASSERT_STR(name, "comp0");
    ASSERT_STATUS(arachne_trainer_best_plan(t, 0, &p), ARACHNE_E_NOT_FOUND);
    ASSERT(p == NULL);
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_GROUP_SIZE, 4));
    ASSERT_OK(arachne_trainer_run(t, 2, NULL, NULL));
    ASSERT_OK(arachne_trainer_get(t, 0, ARACHNE_TRAIN_BEST_ITER_PER_S, &best));
    ASSERT_OK(arachne_trainer_best_plan(t, 0, &p));
    ASSERT_OK(arachne_plan_get(p, ARACHNE_PLAN_ITER_PER_S, &v));
    ASSERT_EQ(memcmp(&v, &best, sizeof v), 0);
    arachne_plan_destroy(p);
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&e);
}

TEST(advantages_are_group_relative_returns_to_go)
{
    /* three rollouts: rewards (1, 2), (3), (0, 0, 6); returns 3, 3, 6 */
    int nsteps[3] = { 2, 1, 3 };
    double r[3 * 4] = { 1, 2, 0, 0, 3, 0, 0, 0, 0, 0, 6, 0 }, adv[3 * 4], mean, sd, s;
    double rtg[3][3] = { { 3, 2, 0 }, { 3, 0, 0 }, { 6, 6, 6 } };
    int g, t;
    ar_train_advantages(3, nsteps, r, 4, adv, &mean, &sd);
    ASSERT_NEAR(mean, 4.0, 1e-12);
    s = sqrt(((1.0) + (1.0) + (4.0)) / 3.0);
    ASSERT_NEAR(sd, s, 1e-12);
    for (t = 0; t < 3; t++) {
        double m = (rtg[0][t] + rtg[1][t] + rtg[2][t]) / 3.0;
        for (g = 0; g < 3; g++)
            if (t < nsteps[g]) ASSERT_NEAR(adv[g * 4 + t], (rtg[g][t] - m) / s, 1e-5);
    }
    ASSERT(adv[0] < 0 && adv[2 * 4] > 0);
    /* the scale of the rewards does not matter */
    {
        double r2[3 * 4], adv2[3 * 4];
        int i;
        for (i = 0; i < 12; i++) r2[i] = r[i] * 1e-4;
        ar_train_advantages(3, nsteps, r2, 4, adv2, NULL, NULL);
        for (g = 0; g < 3; g++)
            for (t = 0; t < nsteps[g]; t++) ASSERT_NEAR(adv2[g * 4 + t], adv[g * 4 + t], 1e-9);
    }
    /* equal returns teach nothing, even with different step rewards */
    {
        int n2[2] = { 2, 1 };
        double r3[2 * 2] = { 1, 2, 3, 0 }, a3[2 * 2] = { 9, 9, 9, 9 };
        ar_train_advantages(2, n2, r3, 2, a3, &mean, &sd);
        ASSERT_EQ(sd, 0);
        ASSERT_EQ(a3[0], 0);
        ASSERT_EQ(a3[1], 0);
        ASSERT_EQ(a3[2], 0);
    }
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    int i;
    for (i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

TEST(pcgrad_removes_conflicts_and_keeps_agreeing_gradients)
{
    double a[2] = { 1, 0 }, b[2] = { -1, 1 }, out[2];
    double *g[2];
    int perm[4] = { 0, 1, 1, 0 };
    g[0] = a;
    g[1] = b;
    /* conflicting: a.b = -1 */
    ASSERT_OK(ar_train_pcgrad(2, 2, g, perm, out, 1));
    {
        /* a' = a - (a.b/|b|^2) b = (0.5, 0.5); b' = b - (b.a/|a|^2) a = (0, 1) */
        double ap[2] = { 0.5, 0.5 }, bp[2] = { 0, 1 };
        ASSERT_NEAR(out[0], ap[0] + bp[0], 1e-12);
        ASSERT_NEAR(out[1], ap[1] + bp[1], 1e-12);
        ASSERT(dot(ap, b, 2) >= -1e-12 && dot(bp, a, 2) >= -1e-12);
        /* the combined step no longer hurts either task */
        ASSERT(dot(out, a, 2) > 0 && dot(out, b, 2) > 0);
    }
    /* the inputs are untouched */
    ASSERT_EQ(a[0], 1);
    ASSERT_EQ(b[0], -1);
    /* agreeing gradients: plain sum */
    {
        double c[3] = { 1, 2, 0 }, d[3] = { 0, 1, 3 }, o[3];
        double *h[2];
        h[0] = c;
        h[1] = d;
        ASSERT_OK(ar_train_pcgrad(2, 3, h, perm, o, 1));
        ASSERT_EQ(o[0], 1);
        ASSERT_EQ(o[1], 3);
        ASSERT_EQ(o[2], 3);
    }
    /* three tasks: each projected gradient agrees with every original one
     * it was projected against (single conflicts) */
    {
        double x[2] = { 1, 0.2 }, y[2] = { -0.8, 1 }, z[2] = { 0.3, 1 }, o[2];
        double *h[3];
        int p3[9] = { 0, 1, 2, 1, 0, 2, 2, 0, 1 };
        h[0] = x;
        h[1] = y;
        h[2] = z;
        ASSERT_OK(ar_train_pcgrad(3, 2, h, p3, o, 2));
        /* x.y < 0: x' = x - (x.y/|y|^2) y ; y' = y - (y.x/|x|^2) x ; z agrees with both */
        {
            double xy = dot(x, y, 2), ny = dot(y, y, 2), nx = dot(x, x, 2), e0, e1;
            e0 = (x[0] - xy / ny * y[0]) + (y[0] - xy / nx * x[0]) + z[0];
            e1 = (x[1] - xy / ny * y[1]) + (y[1] - xy / nx * x[1]) + z[1];
            ASSERT_NEAR(o[0], e0, 1e-12);
            ASSERT_NEAR(o[1], e1, 1e-12);
        }
    }
}

TEST(self_imitation_weight_counts_only_better_plans)
{
    ASSERT_EQ(ar_train_sil_weight(1.0, 2.0, 0.5, 1.0), 0);
    ASSERT_EQ(ar_train_sil_weight(2.0, 2.0, 0.5, 1.0), 0);
    ASSERT_NEAR(ar_train_sil_weight(2.2, 2.0, 0.5, 1.0), 0.4, 1e-5);
    ASSERT_NEAR(ar_train_sil_weight(9.0, 2.0, 0.5, 1.0), 1.0, 1e-12);
    ASSERT_NEAR(ar_train_sil_weight(9.0, 2.0, 0.5, 3.0), 3.0, 1e-12);
}

static int file_bytes(const char *path, unsigned char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long n;
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)n + 1);
    *len = fread(*out, 1, (size_t)n, f);
    fclose(f);
    return 0;
}

static int write_bytes(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(b, 1, n, f);
    return fclose(f);
}

/* 1 when two policies save to the same bytes (written to path_a and
 * path_b), 0 when they differ, -1 when saving or reading failed. */
static int same_policy_bytes(const arachne_policy *a, const arachne_policy *b, const char *path_a, const char *path_b)
{
    unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    int r = -1;
    if (!arachne_policy_save(a, path_a) && !arachne_policy_save(b, path_b) && !file_bytes(path_a, &x, &nx) &&
        !file_bytes(path_b, &y, &ny))
        r = nx == ny && memcmp(x, y, nx) == 0;
    free(x);
    free(y);
    return r;
}

/* Frees what two trainers on the shared pair of compositions hold. */
static void free_pair(arachne_trainer *ta, arachne_trainer *tb, arachne_policy *pa, arachne_policy *pb, env *e1,
                      env *e2)
{
    arachne_trainer_destroy(ta);
    arachne_trainer_destroy(tb);
    arachne_policy_destroy(pa);
    arachne_policy_destroy(pb);
    env_close(e1);
    env_close(e2);
}

/* The two small compositions the trainer tests share. */
static int open_pair(env *e1, env *e2)
{
    int st = env_open(e1, "llama3-8b", SMALL);
    return st ? st : env_open(e2, "qwen3-8b", "a6000:2x4,h100:1x8");
}

static int setup_small(arachne_trainer **t, arachne_policy **pol, env *e1, env *e2)
{
    int st;
    if ((st = arachne_policy_create(pol, 9, 32, 1))) return st;
    if ((st = arachne_trainer_create(t, *pol, 77))) return st;
    if ((st = arachne_trainer_add_composition(*t, e1->cm, "a"))) return st;
    if ((st = arachne_trainer_add_composition(*t, e2->cm, "b"))) return st;
    if ((st = arachne_trainer_set(*t, ARACHNE_TRAIN_GROUP_SIZE, 4))) return st;
    if ((st = arachne_trainer_set(*t, ARACHNE_TRAIN_PPO_EPOCHS, 2))) return st;
    if ((st = arachne_trainer_set(*t, ARACHNE_TRAIN_SIL_INTERVAL, 2))) return st;
    if ((st = arachne_trainer_set(*t, ARACHNE_TRAIN_SIL_NEIGHBOURS, 1))) return st;
    return arachne_trainer_set(*t, ARACHNE_TRAIN_UPDATES, 4);
}

TEST(checkpoint_resume_is_bit_identical)
{
    env e1, e2;
    arachne_policy *pa = NULL, *pb = NULL;
    arachne_trainer *ta = NULL, *tb = NULL;
    char pa_path[512], pb_path[512], ck[512], ck2[512];
    unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    double ua = 0, ub = 0, ba = 0, bb = 0;
    const char *dir = th_tmpdir();
    snprintf(pa_path, sizeof pa_path, "%s/straight.arpol", dir);
    snprintf(pb_path, sizeof pb_path, "%s/resumed.arpol", dir);
    snprintf(ck, sizeof ck, "%s/half.ckpt", dir);
    snprintf(ck2, sizeof ck2, "%s/end.ckpt", dir);
    ASSERT_OK(open_pair(&e1, &e2));
    /* straight: 4 updates */
    ASSERT_OK(setup_small(&ta, &pa, &e1, &e2));
    ASSERT_OK(arachne_trainer_run(ta, 4, NULL, NULL));
    /* 2 updates, checkpoint, destroy; a fresh trainer loads it and runs 2 */
    ASSERT_OK(setup_small(&tb, &pb, &e1, &e2));
    ASSERT_OK(arachne_trainer_run(tb, 2, NULL, NULL));
    ASSERT_OK(arachne_trainer_save_checkpoint(tb, ck));
    arachne_trainer_destroy(tb);
    arachne_policy_destroy(pb);
    tb = NULL;
    pb = NULL;
    ASSERT_OK(setup_small(&tb, &pb, &e1, &e2));
    ASSERT_OK(arachne_trainer_load_checkpoint(tb, ck));
    ASSERT_OK(arachne_trainer_get(tb, -1, ARACHNE_TRAIN_UPDATES_DONE, &ub));
    ASSERT_EQ(ub, 2);
    ASSERT_OK(arachne_trainer_run(tb, 2, NULL, NULL));
    ASSERT_MSG(same_policy_bytes(pa, pb, pa_path, pb_path) == 1, "resumed policy differs from the straight run");
    /* the whole trainer state agrees too */
    ASSERT_OK(arachne_trainer_save_checkpoint(ta, ck));
    ASSERT_OK(arachne_trainer_save_checkpoint(tb, ck2));
    ASSERT_EQ(file_bytes(ck, &x, &nx), 0);
    ASSERT_EQ(file_bytes(ck2, &y, &ny), 0);
    ASSERT_EQ(nx, ny);
    ASSERT(memcmp(x, y, nx) == 0);
    free(x);
    free(y);
    ASSERT_OK(arachne_trainer_get(ta, 1, ARACHNE_TRAIN_BEST_ITER_PER_S, &ba));
    ASSERT_OK(arachne_trainer_get(tb, 1, ARACHNE_TRAIN_BEST_ITER_PER_S, &bb));
    ASSERT_EQ(memcmp(&ba, &bb, sizeof ba), 0);
    ASSERT_OK(arachne_trainer_get(ta, -1, ARACHNE_TRAIN_UPDATES_DONE, &ua));
    ASSERT_EQ(ua, 4);
    free_pair(ta, tb, pa, pb, &e1, &e2);
}

TEST(corrupt_or_foreign_checkpoints_are_rejected)
{
    env e1, e2;
    arachne_policy *pol = NULL, *other = NULL;
    arachne_trainer *t = NULL, *t2 = NULL;
    char ck[512], bad[512];
    unsigned char *x = NULL;
    size_t n = 0;
    double before, after;
    const char *dir = th_tmpdir();
    snprintf(ck, sizeof ck, "%s/t.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    ASSERT_OK(open_pair(&e1, &e2));
    ASSERT_OK(setup_small(&t, &pol, &e1, &e2));
    ASSERT_OK(arachne_trainer_run(t, 2, NULL, NULL));
    ASSERT_OK(arachne_trainer_save_checkpoint(t, ck));
    ASSERT_EQ(file_bytes(ck, &x, &n), 0);
    ASSERT_GT(n, 1000);
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_UPDATES_DONE, &before));
    /* a flipped byte in the middle */
    x[n / 2] ^= 0x40;
    ASSERT_EQ(write_bytes(bad, x, n), 0);
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "checksum");
    x[n / 2] ^= 0x40;
    /* truncated */
    ASSERT_EQ(write_bytes(bad, x, n - 9), 0);
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
    ASSERT_EQ(write_bytes(bad, x, 5), 0);
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
    /* bad magic */
    x[0] = 'X';
    ASSERT_EQ(write_bytes(bad, x, n), 0);
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "magic");
    x[0] = 'A';
    /* a future format */
    x[7] = 2;
    ASSERT_EQ(write_bytes(bad, x, n), 0);
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_UNSUPPORTED);
    free(x);
    /* missing file */
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, "/nonexistent/dir/x.ckpt"), ARACHNE_E_IO);
    /* the trainer is unchanged by the failures */
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_UPDATES_DONE, &after));
    ASSERT_EQ(after, before);
    /* other compositions: one instead of two, or in another order */
    ASSERT_OK(arachne_policy_create(&other, 9, 32, 1));
    ASSERT_OK(arachne_trainer_create(&t2, other, 77));
    ASSERT_OK(arachne_trainer_add_composition(t2, e1.cm, "a"));
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t2, ck), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_trainer_add_composition(t2, e2.cm, "c"));
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t2, ck), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "'b'");
    arachne_trainer_destroy(t2);
    arachne_policy_destroy(other);
    /* another network shape */
    ASSERT_OK(arachne_policy_create(&other, 9, 64, 1));
    ASSERT_OK(arachne_trainer_create(&t2, other, 77));
    ASSERT_OK(arachne_trainer_add_composition(t2, e1.cm, "a"));
    ASSERT_OK(arachne_trainer_add_composition(t2, e2.cm, "b"));
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t2, ck), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "network");
    arachne_trainer_destroy(t2);
    arachne_policy_destroy(other);
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&e1);
    env_close(&e2);
}

/* Writes x[0..n) to path with the trailing CRC-32 recomputed. */
static int write_with_crc(const char *path, unsigned char *x, size_t n)
{
    uint32_t c = ar_crc32(x, n - 4);
    int i;
    for (i = 0; i < 4; i++) x[n - 4 + i] = (unsigned char)(c >> (8 * i));
    return write_bytes(path, x, n);
}

/* Issue 27 item 6: a checkpoint with Adam moments of 2e307 and a valid CRC
 * loaded (they are finite); the next update made the weights infinite and
 * the trainer then saved a checkpoint its own loader refused.  Every float
 * is now range-checked on load (and on save). */
TEST(checkpoint_with_extreme_adam_moments_is_refused)
{
    env e1, e2;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    char ck[512], bad[512];
    unsigned char *x = NULL;
    size_t n = 0, P, m_off, v_off;
    double big = 2e307, neg = -1.0, nan_ = NAN, upd = -1;
    const char *dir = th_tmpdir();
    snprintf(ck, sizeof ck, "%s/t.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    ASSERT_OK(open_pair(&e1, &e2));
    ASSERT_OK(setup_small(&t, &pol, &e1, &e2));
    ASSERT_OK(arachne_trainer_run(t, 1, NULL, NULL));
    ASSERT_OK(arachne_trainer_save_checkpoint(t, ck));
    ASSERT_EQ(file_bytes(ck, &x, &n), 0);
    /* layout: magic 8, version 4, reserved 4, 10 sizes x 4, count 8, then
     * weights, first moments, second moments (docs/training.md) */
    P = ar_nn_param_count(t->policy->nn);
    m_off = 64 + 8 * P;
    v_off = 64 + 16 * P;
    ASSERT(v_off + 8 * P < n);
    memcpy(x + m_off + 8 * 5, &big, 8);
    ASSERT_EQ(write_with_crc(bad, x, n), 0);
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
    ASSERT_CONTAINS(arachne_last_error(), "Adam");
    ASSERT_CONTAINS(arachne_last_error(), "parameter 5 ");
    free(x);
    ASSERT_EQ(file_bytes(ck, &x, &n), 0);
    memcpy(x + v_off, &neg, 8);         /* a negative second moment */
    ASSERT_EQ(write_with_crc(bad, x, n), 0);
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
    free(x);
    ASSERT_EQ(file_bytes(ck, &x, &n), 0);
    memcpy(x + 64, &big, 8);            /* a huge weight */
    ASSERT_EQ(write_with_crc(bad, x, n), 0);
    ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
    free(x);
    /* the last gradient norm, just before the composition count: NaN */
    ASSERT_EQ(file_bytes(ck, &x, &n), 0);
    {
        size_t stats_off = 64 + 24 * P + 8 + 8 + 32 + 8 + 4 + 8 * AR_TRAIN_NOPT;
        memcpy(x + stats_off + 16, &nan_, 8);
        ASSERT_EQ(write_with_crc(bad, x, n), 0);
        ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
        ASSERT_CONTAINS(arachne_last_error(), "statistics");
    }
    free(x);
    /* updates done past INT_MAX: the progress callback counts in an int
     * (2^31 read back as -2147483647, 2^40 as 1) */
    ASSERT_EQ(file_bytes(ck, &x, &n), 0);
    {
        uint64_t many = (uint64_t)1 << 31;
        memcpy(x + 64 + 24 * P + 48, &many, 8);
        ASSERT_EQ(write_with_crc(bad, x, n), 0);
        ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
        ASSERT_CONTAINS(arachne_last_error(), "step counters");
    }
    free(x);
    /* a kept plan's throughput of 1e308 (finite) made MEAN_NORM_BEST
     * infinite after the next update: at most 1e9 iterations per second.
     * The kept plan is found by its recorded throughput, the best one. */
    ASSERT_EQ(file_bytes(ck, &x, &n), 0);
    {
        double best = 0.0, huge = 1e308;
        size_t k, at = 0;
        ASSERT_OK(arachne_trainer_get(t, 0, ARACHNE_TRAIN_BEST_ITER_PER_S, &best));
        ASSERT(best > 0.0);
        for (k = 64 + 24 * P; k + 8 <= n - 4 && !at; k++)
            if (memcmp(x + k, &best, 8) == 0) at = k;
        ASSERT(at > 0);
        memcpy(x + at, &huge, 8);
        ASSERT_EQ(write_with_crc(bad, x, n), 0);
        ASSERT_STATUS(arachne_trainer_load_checkpoint(t, bad), ARACHNE_E_CORRUPT);
        ASSERT_CONTAINS(arachne_last_error(), "kept plan with throughput 1e+308");
    }
    free(x);
    /* nothing was taken from the refused files; the good one still loads,
     * trains one more update and saves a file that loads again */
    ASSERT_OK(arachne_trainer_load_checkpoint(t, ck));
    ASSERT_OK(arachne_trainer_run(t, 1, NULL, NULL));
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_UPDATES_DONE, &upd));
    ASSERT_EQ(upd, 2);
    ASSERT_OK(arachne_trainer_save_checkpoint(t, ck));
    ASSERT_OK(arachne_trainer_load_checkpoint(t, ck));
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&e1);
    env_close(&e2);
}

/* Issue 27 item 6: saving before any update (no plan found yet) passed a
 * NULL mask array with length 0 to memcpy (undefined behaviour; aborts
 * under UBSan, i.e. make check-asan).  The file must also load back. */
TEST(checkpoint_before_any_update_round_trips)
{
    env e1, e2;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    char ck[512];
    double upd = -1;
    snprintf(ck, sizeof ck, "%s/fresh.ckpt", th_tmpdir());
    ASSERT_OK(open_pair(&e1, &e2));
    ASSERT_OK(setup_small(&t, &pol, &e1, &e2));
    ASSERT_OK(arachne_trainer_save_checkpoint(t, ck));
    ASSERT_OK(arachne_trainer_load_checkpoint(t, ck));
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_UPDATES_DONE, &upd));
    ASSERT_EQ(upd, 0);
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&e1);
    env_close(&e2);
}

/* SIL_TOP is the share of the best plan a kept plan needs to be imitated:
 * at 1 only plans as fast as the best count, at 0 every plan above the
 * group mean does, and the counts are ordered in between. */
TEST(sil_top_selects_the_plans_imitated)
{
    env e1, e2;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    ar_nn_ws *ws = NULL;
    double *grad;
    int n_all = 0, n_mid = 0, n_best = 0, ci, any_spread = 0;
    ASSERT_OK(open_pair(&e1, &e2));
    ASSERT_OK(setup_small(&t, &pol, &e1, &e2));
    ASSERT_OK(arachne_trainer_run(t, 3, NULL, NULL));
    grad = calloc(ar_nn_param_count(pol->nn), sizeof *grad);
    ASSERT(grad != NULL);
    ASSERT_OK(ar_nn_ws_create(&ws, pol->nn));
    for (ci = 0; ci < 2; ci++) {
        ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_TOP, 0));
        ASSERT_OK(ar_sil_grad(t, ci, ws, grad, &n_all));
        ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_TOP, 0.9));
        ASSERT_OK(ar_sil_grad(t, ci, ws, grad, &n_mid));
        ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_TOP, 1));
        ASSERT_OK(ar_sil_grad(t, ci, ws, grad, &n_best));
        ASSERT_LE(n_mid, n_all);
        ASSERT_LE(n_best, n_mid);
        any_spread |= n_all > n_best;
    }
    ASSERT_MSG(any_spread, "three updates kept no plan below the best: the test shows nothing");
    ar_nn_ws_destroy(ws);
    free(grad);
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&e1);
    env_close(&e2);
}

/* Rollout decoding's cut flag (and relabelling's count of labels) says
 * exactly whether its fill cap left a weighing out: never without a cap,
 * never when the cap is the fills the uncapped search spends (the last
 * weighing then spends it), and always at a cap of one fill (the greedy
 * completion spends it before the first decision with a choice).  The
 * choices agree in the first two cases. */
TEST(rollout_cut_flag_is_exact)
{
    env e;
    arachne_policy *pol = NULL;
    ar_construct_opts o;
    int full[AR_POLICY_MAX_DECISIONS], ch[AR_POLICY_MAX_DECISIONS], labels[AR_POLICY_MAX_DECISIONS];
    int n = 0, m = 0, nl = 0, cut = -1, i;
    long fills = 0, spent = 0;
    ASSERT_OK(env_open(&e, "llama3-8b", SMALL));
    ASSERT_OK(arachne_policy_create(&pol, 9, 32, 1));
    ar_policy_construct_opts(&o);
    ASSERT_OK(ar_policy_rollout_choices(pol, e.cm, &o, 0, full, AR_POLICY_MAX_DECISIONS, &n, &fills, &cut, NULL));
    ASSERT_EQ(cut, 0);
    ASSERT_GT(fills, 1);
    cut = -1;
    ASSERT_OK(ar_policy_rollout_choices(pol, e.cm, &o, fills, ch, AR_POLICY_MAX_DECISIONS, &m, &spent, &cut, NULL));
    ASSERT_EQ(cut, 0);
    ASSERT_EQ(m, n);
    ASSERT_EQ(spent, fills);
    for (i = 0; i < n; i++) ASSERT_EQ(ch[i], full[i]);
    ASSERT_OK(ar_policy_rollout_choices(pol, e.cm, &o, 1, ch, AR_POLICY_MAX_DECISIONS, &m, &spent, &cut, NULL));
    ASSERT_EQ(cut, 1);
    ASSERT_GT(m, 0);
    /* relabelling the uncapped choices: all n labelled at a cap of the
     * fills it spends, fewer at a cap of one fill */
    ASSERT_OK(ar_policy_rollout_relabel(pol, e.cm, &o, 0, full, n, labels, &nl, &fills, NULL));
    ASSERT_EQ(nl, n);
    ASSERT_OK(ar_policy_rollout_relabel(pol, e.cm, &o, fills, full, n, labels, &nl, &spent, NULL));
    ASSERT_EQ(nl, n);
    for (i = 0; i < n; i++) ASSERT_EQ(labels[i], full[i]);
    ASSERT_OK(ar_policy_rollout_relabel(pol, e.cm, &o, 1, full, n, labels, &nl, &spent, NULL));
    ASSERT_GT(n, nl);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* A choice sequence recorded through the policy (ar_sil_record_choices)
 * rebuilds its plan, a sequence cut short is refused, and the imitation
 * gradient of the recording (ar_sil_plan_grad, weight 1) is the gradient
 * of the negative log-likelihood it reports: central differences on the
 * weights with the largest gradients agree (kann's kad_check_grad idea). */
TEST(recorded_choices_give_the_gradient_of_their_likelihood)
{
    env e;
    arachne_policy *pol = NULL;
    ar_builder b;
    ar_policy_src src;
    ar_construct_opts o;
    arachne_plan plan, replayed;
    ar_sil_plan rec, cut;
    ar_nn_ws *ws = NULL;
    int choices[AR_POLICY_MAX_DECISIONS], n = 0, k, checked = 0;
    long fills = 0;
    double *grad, *scratch, *w, nll = 0.0;
    size_t P, p, top[4] = { 0, 0, 0, 0 };
    memset(&rec, 0, sizeof rec);
    memset(&cut, 0, sizeof cut);
    ar_plan_empty(&plan);
    ar_plan_empty(&replayed);
    ASSERT_OK(env_open(&e, "llama3-8b", SMALL));
    ASSERT_OK(arachne_policy_create(&pol, 9, 32, 1));
    ar_policy_construct_opts(&o);
    ASSERT_OK(ar_policy_rollout_choices(pol, e.cm, &o, 0, choices, AR_POLICY_MAX_DECISIONS, &n, &fills, NULL, NULL));
    ASSERT_GT(n, 2);
    ASSERT_OK(ar_builder_init(&b, e.cm, &o));
    ASSERT_OK(ar_policy_src_init(&src, pol->nn, e.cm, 0, 1, 1));
    ASSERT_OK(ar_sil_record_choices(&b, &src, choices, n, &plan, &rec));
    ASSERT_EQ(rec.ndec, n);
    ASSERT_OK(ar_sil_replay(e.cm, &rec, o.max_steps, &replayed));
    ASSERT_NEAR(replayed.iter_per_s, plan.iter_per_s, 1e-12);
    ASSERT(ar_sil_record_choices(&b, &src, choices, n - 1, &plan, &cut) != ARACHNE_OK);
    ASSERT_EQ(cut.ndec, 0);

    P = ar_nn_param_count(pol->nn);
    grad = calloc(P, sizeof *grad);
    scratch = calloc(P, sizeof *scratch);
    ASSERT(grad != NULL && scratch != NULL);
    ASSERT_OK(ar_nn_ws_create(&ws, pol->nn));
    ASSERT_OK(ar_sil_plan_grad(pol->nn, ws, &rec, 1.0, grad, &nll));
    ASSERT_GT(nll, 0.0);
    for (p = 0; p < P; p++) /* the four largest |gradient| entries */
        for (k = 0; k < 4; k++)
            if (fabs(grad[p]) > fabs(grad[top[k]])) {
                memmove(&top[k + 1], &top[k], (size_t)(3 - k) * sizeof *top);
                top[k] = p;
                break;
            }
    w = ar_nn_params(pol->nn);
    for (k = 0; k < 4; k++) {
        double h = 1e-6, keep = w[top[k]], up = 0.0, down = 0.0, fd;
        w[top[k]] = keep + h;
        ASSERT_OK(ar_sil_plan_grad(pol->nn, ws, &rec, 0.0, scratch, &up));
        w[top[k]] = keep - h;
        ASSERT_OK(ar_sil_plan_grad(pol->nn, ws, &rec, 0.0, scratch, &down));
        w[top[k]] = keep;
        fd = (up - down) / (2 * h);
        ASSERT_MSG(fabs(fd - grad[top[k]]) <= 1e-5 * fabs(grad[top[k]]) + 1e-8,
                   "weight %zu: analytic %.9g, central difference %.9g", top[k], grad[top[k]], fd);
        checked += grad[top[k]] != 0.0;
    }
    ASSERT_EQ(checked, 4);
    ar_nn_ws_destroy(ws);
    free(grad);
    free(scratch);
    ar_sil_plan_free(&rec);
    ar_plan_clear(&plan);
    ar_plan_clear(&replayed);
    ar_policy_src_free(&src);
    ar_builder_free(&b);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* DAgger's expert (ar_policy_rollout_relabel): on rollout decoding's own
 * choices it labels every decision with the choice rollout decoding took
 * (and reports the same values of the choices it weighed);
 * on the greedy construction its first label is rollout decoding's first
 * choice (the same state); a fill budget stops it early; a sequence the
 * construction does not take to its end is refused. */
TEST(rollout_relabelling_agrees_with_rollout_decoding)
{
    env e;
    arachne_policy *pol = NULL;
    ar_builder b;
    ar_policy_src src;
    ar_policy_script s;
    ar_construct_opts o;
    arachne_plan plan;
    int choices[AR_POLICY_MAX_DECISIONS], greedy[AR_POLICY_MAX_DECISIONS], labels[AR_POLICY_MAX_DECISIONS];
    int n = 0, ng, nl = 0, i, differ = 0, valued = 0;
    long fills = 0, f2 = 0;
    double *values = malloc((size_t)AR_POLICY_MAX_DECISIONS * AR_MAX_CHOICES * sizeof *values);
    double *values2 = malloc((size_t)AR_POLICY_MAX_DECISIONS * AR_MAX_CHOICES * sizeof *values2), incumbent = -1.0;
    ASSERT(values != NULL && values2 != NULL);
    ar_plan_empty(&plan);
    ASSERT_OK(env_open(&e, "llama3-8b", SMALL));
    ASSERT_OK(arachne_policy_create(&pol, 9, 32, 1));
    ar_policy_construct_opts(&o);
    ASSERT_OK(ar_policy_rollout_choices(pol, e.cm, &o, 0, choices, AR_POLICY_MAX_DECISIONS, &n, &fills, NULL, values));
    ASSERT_GT(n, 2);
    ASSERT_OK(ar_policy_rollout_relabel(pol, e.cm, &o, 0, choices, n, labels, &nl, &f2, values2));
    ASSERT_EQ(nl, n);
    ASSERT_GT(f2, 0);
    for (i = 0; i < n; i++) ASSERT_MSG(labels[i] == choices[i], "decision %d: label %d, rollout %d", i, labels[i],
                                       choices[i]);
    /* the teacher's values: at every weighed decision its choice is the
     * best-valued one, the incumbent never falls, and relabelling its own
     * construction weighs the same completions */
    for (i = 0; i < n; i++) {
        const double *row = values + (size_t)i * AR_MAX_CHOICES;
        double top = AR_ROLLOUT_NO_VALUE;
        int k;
        for (k = 0; k < AR_MAX_CHOICES; k++) {
            ASSERT_EQ(row[k], values2[(size_t)i * AR_MAX_CHOICES + k]);
            if (row[k] > top) top = row[k];
        }
        if (top == AR_ROLLOUT_NO_VALUE) continue;
        valued++;
        ASSERT_MSG(row[choices[i]] == top, "decision %d: choice %d valued %g, best %g", i, choices[i], row[choices[i]],
                   top);
        ASSERT(top >= incumbent);
        incumbent = top;
    }
    ASSERT_GT(valued, 0);
    ASSERT_GT(incumbent, 0.0);

    /* the greedy construction's choices, logged */
    ASSERT_OK(ar_builder_init(&b, e.cm, &o));
    ASSERT_OK(ar_policy_src_init(&src, pol->nn, e.cm, 0, 1, 0));
    memset(&s, 0, sizeof s);
    s.src = &src;
    s.taken = greedy;
    s.cap_taken = AR_POLICY_MAX_DECISIONS;
    ASSERT_OK(ar_builder_run(&b, ar_policy_script_decide, &s, &plan, NULL));
    ng = s.ntaken;
    ASSERT_GT(ng, 2);
    ASSERT_OK(ar_policy_rollout_relabel(pol, e.cm, &o, 0, greedy, ng, labels, &nl, &f2, NULL));
    ASSERT_EQ(nl, ng);
    ASSERT_EQ(labels[0], choices[0]);
    for (i = 0; i < ng; i++) differ += labels[i] != greedy[i];
    for (i = 0; i < n && i < ng && choices[i] == greedy[i]; i++) {}
    ASSERT_MSG(differ > 0 || (n == ng && i == n), "greedy and rollout differ, yet every label is greedy's");

    ASSERT_OK(ar_policy_rollout_relabel(pol, e.cm, &o, 1, greedy, ng, labels, &nl, &f2, NULL));
    ASSERT(nl >= 1 && nl < ng);
    greedy[ng] = 0; /* one decision more than the construction has */
    ASSERT_STATUS(ar_policy_rollout_relabel(pol, e.cm, &o, 0, greedy, ng + 1, labels, &nl, &f2, NULL),
                  ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_EQ(nl, ng);
    ASSERT_STATUS(ar_policy_rollout_relabel(pol, e.cm, &o, 0, greedy, AR_POLICY_MAX_DECISIONS + 1, labels, &nl, &f2,
                                            NULL),
                  ARACHNE_E_INVALID_ARGUMENT);
    free(values);
    free(values2);
    ar_plan_clear(&plan);
    ar_policy_src_free(&src);
    ar_builder_free(&b);
    arachne_policy_destroy(pol);
    env_close(&e);
}

static void put_le32(unsigned char *p, uint32_t v)
{
    int i;
    for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A checkpoint written before SIL_TOP existed holds 20 options; it loads,
 * and the run goes on with the share those runs used (0.9). */
TEST(checkpoint_without_sil_top_loads_with_the_old_share)
{
    env e1, e2;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    char ck[512], old[5][512];
    unsigned char *x = NULL, *y;
    size_t n = 0, off, m, tail;
    double v = 0;
    int k;
    const int cut[5] = { AR_TRAIN_NOPT_V1, AR_TRAIN_NOPT_V2, AR_TRAIN_NOPT_V3, AR_TRAIN_NOPT_V4, AR_TRAIN_NOPT_V5 };
    const char *dir = th_tmpdir();
    snprintf(ck, sizeof ck, "%s/top.ckpt", dir);
    for (k = 0; k < 5; k++) snprintf(old[k], sizeof old[k], "%s/top-v%d.ckpt", dir, k + 1);
    ASSERT_OK(open_pair(&e1, &e2));
    ASSERT_OK(setup_small(&t, &pol, &e1, &e2));
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_TOP, 0.5));
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_SIZE_CURRICULUM, 3));
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_REFINE_INTERVAL, 4));
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_ENTROPY_END_SCALE, 0.5));
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_ROLLOUT_EVALUATIONS, 300));
    ASSERT_OK(arachne_trainer_run(t, 1, NULL, NULL));
    ASSERT_OK(arachne_trainer_save_checkpoint(t, ck));
    /* magic, version, reserved, network config, parameter count, weights
     * and the two Adam moments, Adam steps, seed, RNG, updates done */
    off = 8 + 4 + 4 + 4 * AR_NN_CONFIG_FIELDS + 8 + 24 * ar_nn_param_count(pol->nn) + 8 + 8 + 32 + 8;
    ASSERT_EQ(file_bytes(ck, &x, &n), 0);
    ASSERT_GT(n, off + 4 + 8 * AR_TRAIN_NOPT + 4);
    ASSERT_EQ(x[off] | x[off + 1] << 8 | x[off + 2] << 16 | (uint32_t)x[off + 3] << 24, AR_TRAIN_NOPT);
    /* the same file with the options newer than each older format cut out,
     * and the rollout targets after the compositions (two empty plans of 32
     * bytes: no round has run) */
    tail = 2 * 32;
    y = malloc(n);
    ASSERT(y != NULL);
    for (k = 0; k < 5; k++) {
        memcpy(y, x, off);
        put_le32(y + off, (uint32_t)cut[k]);
        memcpy(y + off + 4, x + off + 4, 8 * (size_t)cut[k]);
        m = off + 4 + 8 * (size_t)cut[k];
        memcpy(y + m, x + off + 4 + 8 * AR_TRAIN_NOPT, n - 4 - tail - (off + 4 + 8 * AR_TRAIN_NOPT));
        m += n - 4 - tail - (off + 4 + 8 * AR_TRAIN_NOPT);
        put_le32(y + m, ar_crc32(y, m));
        ASSERT_EQ(write_bytes(old[k], y, m + 4), 0);
    }
    free(x);
    free(y);
    /* the new file restores its share; the old one the share of its time */
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_TOP, 0.25));
    ASSERT_OK(arachne_trainer_load_checkpoint(t, ck));
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_SIL_TOP, &v));
    ASSERT_NEAR(v, 0.5, 1e-15);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_SIZE_CURRICULUM, &v));
    ASSERT_EQ(v, 3);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_REFINE_INTERVAL, &v));
    ASSERT_EQ(v, 4);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_ENTROPY_END_SCALE, &v));
    ASSERT_NEAR(v, 0.5, 1e-15);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_ROLLOUT_EVALUATIONS, &v));
    ASSERT_EQ(v, 300);
    /* 27 options: the entropy schedule kept, no rollout targets */
    ASSERT_OK(arachne_trainer_load_checkpoint(t, old[4]));
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_ENTROPY_END_SCALE, &v));
    ASSERT_NEAR(v, 0.5, 1e-15);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_ROLLOUT_EVALUATIONS, &v));
    ASSERT_EQ(v, 2000);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_ROLLOUT_INTERVAL, &v));
    ASSERT_EQ(v, 0);
    /* 25 options: the refinement rounds kept, a constant entropy bonus */
    ASSERT_OK(arachne_trainer_load_checkpoint(t, old[3]));
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_REFINE_INTERVAL, &v));
    ASSERT_EQ(v, 4);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_ENTROPY_END_SCALE, &v));
    ASSERT_EQ(v, 1);
    /* 23 options: the curriculum kept, no refinement rounds */
    ASSERT_OK(arachne_trainer_load_checkpoint(t, old[2]));
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_SIZE_CURRICULUM, &v));
    ASSERT_EQ(v, 3);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_REFINE_INTERVAL, &v));
    ASSERT_EQ(v, 0);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_REFINE_EVALUATIONS, &v));
    ASSERT_EQ(v, ARACHNE_REFINE_EVALUATIONS);
    /* 22 options: SIL_TOP kept, no size curriculum (what such runs did) */
    ASSERT_OK(arachne_trainer_load_checkpoint(t, old[1]));
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_SIL_TOP, &v));
    ASSERT_NEAR(v, 0.5, 1e-15);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_SIZE_CURRICULUM, &v));
    ASSERT_EQ(v, 0);
    ASSERT_OK(arachne_trainer_load_checkpoint(t, old[0]));
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_SIL_TOP, &v));
    ASSERT_NEAR(v, 0.9, 1e-15);
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_UPDATES_DONE, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(arachne_trainer_run(t, 1, NULL, NULL));
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&e1);
    env_close(&e2);
}

/* Best throughput a rollout passed through (what plan_build would keep). */
static double rollout_best(const ar_train_slot *s)
{
    double best = 0;
    int i;
    for (i = 0; i < s->trace.nsteps; i++)
        if (s->trace.steps[i].depth > 0 && s->trace.steps[i].feasible && s->trace.steps[i].thr_after > best)
            best = s->trace.steps[i].thr_after;
    return best;
}

/* GREEDY_ROLLOUTS: the last member of every group is the policy's greedy
 * construction, whatever the trainer seed; the others still sample. */
TEST(greedy_rollouts_put_the_greedy_plan_in_every_group)
{
    env e1, e2;
    arachne_policy *pol[2] = { NULL, NULL };
    arachne_trainer *t[2] = { NULL, NULL };
    double want[2];
    int k, ci, g, differ = 0;
    ASSERT_OK(open_pair(&e1, &e2));
    for (k = 0; k < 2; k++) {
        ASSERT_OK(arachne_policy_create(&pol[k], 9, 32, 1));
        ASSERT_OK(arachne_trainer_create(&t[k], pol[k], 100 + (uint64_t)k));
        ASSERT_OK(arachne_trainer_add_composition(t[k], e1.cm, "a"));
        ASSERT_OK(arachne_trainer_add_composition(t[k], e2.cm, "b"));
        ASSERT_OK(arachne_trainer_set(t[k], ARACHNE_TRAIN_GROUP_SIZE, 4));
        ASSERT_OK(arachne_trainer_set(t[k], ARACHNE_TRAIN_GREEDY_ROLLOUTS, 1));
    }
    want[0] = greedy_iter_per_s(pol[0], e1.cm);
    want[1] = greedy_iter_per_s(pol[0], e2.cm);
    ASSERT_GT(want[0], 0);
    ASSERT_GT(want[1], 0);
    for (k = 0; k < 2; k++) ASSERT_OK(arachne_trainer_run(t[k], 1, NULL, NULL));
    for (ci = 0; ci < 2; ci++) {
        const ar_train_slot *a = &t[0]->slots[ci * 4 + 3], *b = &t[1]->slots[ci * 4 + 3];
        ASSERT_NEAR(rollout_best(a), want[ci], 1e-12);
        ASSERT_EQ(a->src.nrecs, b->src.nrecs);
        for (k = 0; k < a->src.nrecs; k++) ASSERT_EQ(a->src.recs[k].choice, b->src.recs[k].choice);
        for (g = 0; g < 3; g++)
            differ |= t[0]->slots[ci * 4 + g].src.nrecs != t[1]->slots[ci * 4 + g].src.nrecs ||
                      rollout_best(&t[0]->slots[ci * 4 + g]) != rollout_best(&t[1]->slots[ci * 4 + g]);
    }
    ASSERT_MSG(differ, "the sampled members of two seeds agree: they are not sampled");
    /* a group needs at least one sampled member */
    ASSERT_OK(arachne_trainer_set(t[0], ARACHNE_TRAIN_GREEDY_ROLLOUTS, 4));
    ASSERT_STATUS(arachne_trainer_run(t[0], 1, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "GREEDY_ROLLOUTS");
    ASSERT_STATUS(arachne_trainer_set(t[0], ARACHNE_TRAIN_GREEDY_ROLLOUTS, 0.5), ARACHNE_E_INVALID_ARGUMENT);
    for (k = 0; k < 2; k++) {
        arachne_trainer_destroy(t[k]);
        arachne_policy_destroy(pol[k]);
    }
    env_close(&e1);
    env_close(&e2);
}

/* SIZE_CURRICULUM: a composition above 1,024 GPUs sits out (no rollout,
 * no evaluation) until its join update, ceil(C log2(N/1024) / 4); small
 * ones take part from the first update. */
TEST(size_curriculum_lets_large_clusters_in_late)
{
    env small, big;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    double ev_small = 0, ev_big = -1;
    ASSERT_OK(env_open(&small, "llama3-8b", SMALL));
    ASSERT_OK(env_open(&big, "llama3-8b", "h100:256x8"));
    ASSERT_OK(arachne_policy_create(&pol, 3, 32, 1));
    ASSERT_OK(arachne_trainer_create(&t, pol, 5));
    ASSERT_OK(arachne_trainer_add_composition(t, small.cm, "small"));
    ASSERT_OK(arachne_trainer_add_composition(t, big.cm, "big"));
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_GROUP_SIZE, 2));
    ASSERT_EQ(ar_train_join_update(t, 1), 0);   /* no curriculum by default */
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_SIZE_CURRICULUM, 8));
    ASSERT_EQ(ar_train_join_update(t, 0), 0);
    ASSERT_EQ(ar_train_join_update(t, 1), 2);   /* 2,048 GPUs: 8 x 1 / 4 */
    ASSERT_OK(arachne_trainer_run(t, 2, NULL, NULL));
    ASSERT_OK(arachne_trainer_get(t, 0, ARACHNE_TRAIN_EVALUATIONS, &ev_small));
    ASSERT_OK(arachne_trainer_get(t, 1, ARACHNE_TRAIN_EVALUATIONS, &ev_big));
    ASSERT_GT(ev_small, 0);
    ASSERT_EQ(ev_big, 0);
    ASSERT_OK(arachne_trainer_run(t, 1, NULL, NULL));
    ASSERT_OK(arachne_trainer_get(t, 1, ARACHNE_TRAIN_EVALUATIONS, &ev_big));
    ASSERT_GT(ev_big, 0);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_SIZE_CURRICULUM, -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_SIZE_CURRICULUM, 2.5), ARACHNE_E_INVALID_ARGUMENT);
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&small);
    env_close(&big);
}

/* The entropy schedule: ENTROPY until ENTROPY_DECAY_START, linear to
 * ENTROPY x ENTROPY_END_SCALE at update UPDATES, constant after; and the
 * coefficient the schedule gives is the one the gradient uses (a trainer
 * whose ENTROPY is set by hand to the scheduled values trains to the same
 * bytes). */
TEST(entropy_schedule_scales_the_bonus_the_updates_use)
{
    env e1, e2;
    arachne_policy *pa = NULL, *pb = NULL;
    arachne_trainer *ta = NULL, *tb = NULL;
    char a_path[512], b_path[512];
    double v = -1;
    int u;
    const double want[5] = { 0.04, 0.04, 0.04, 0.04 * (1 - 0.75 * 0.5), 0.01 };
    const char *dir = th_tmpdir();
    snprintf(a_path, sizeof a_path, "%s/scheduled.arpol", dir);
    snprintf(b_path, sizeof b_path, "%s/by-hand.arpol", dir);
    ASSERT_OK(open_pair(&e1, &e2));
    ASSERT_OK(setup_small(&ta, &pa, &e1, &e2));   /* UPDATES 4 */
    ASSERT_OK(arachne_trainer_get(ta, -1, ARACHNE_TRAIN_ENTROPY_COEF, &v));
    ASSERT_NEAR(v, 0.01, 1e-15);                  /* the default: constant */
    ASSERT_OK(arachne_trainer_set(ta, ARACHNE_TRAIN_ENTROPY, 0.04));
    ASSERT_OK(arachne_trainer_set(ta, ARACHNE_TRAIN_ENTROPY_END_SCALE, 0.25));
    ASSERT_OK(arachne_trainer_set(ta, ARACHNE_TRAIN_ENTROPY_DECAY_START, 2));
    ASSERT_OK(setup_small(&tb, &pb, &e1, &e2));
    for (u = 0; u < 5; u++) {
        ASSERT_OK(arachne_trainer_get(ta, -1, ARACHNE_TRAIN_ENTROPY_COEF, &v));
        ASSERT_NEAR(v, want[u], 1e-15);
        ASSERT_OK(arachne_trainer_set(tb, ARACHNE_TRAIN_ENTROPY, want[u]));
        ASSERT_OK(arachne_trainer_run(ta, 1, NULL, NULL));
        ASSERT_OK(arachne_trainer_run(tb, 1, NULL, NULL));
    }
    ASSERT_MSG(same_policy_bytes(pa, pb, a_path, b_path) == 1, "the scheduled bonus is not the one the updates used");
    /* 5 updates done: a decay start at or after UPDATES is a step down after
     * update DECAY_START; a longer schedule puts update 5 on the slope */
    ASSERT_OK(arachne_trainer_set(ta, ARACHNE_TRAIN_ENTROPY_DECAY_START, 5));
    ASSERT_OK(arachne_trainer_get(ta, -1, ARACHNE_TRAIN_ENTROPY_COEF, &v));
    ASSERT_NEAR(v, 0.04, 1e-15);
    ASSERT_OK(arachne_trainer_set(ta, ARACHNE_TRAIN_ENTROPY_DECAY_START, 4));
    ASSERT_OK(arachne_trainer_get(ta, -1, ARACHNE_TRAIN_ENTROPY_COEF, &v));
    ASSERT_NEAR(v, 0.01, 1e-15);
    ASSERT_OK(arachne_trainer_set(ta, ARACHNE_TRAIN_UPDATES, 20));
    ASSERT_OK(arachne_trainer_get(ta, -1, ARACHNE_TRAIN_ENTROPY_COEF, &v));
    ASSERT_NEAR(v, 0.04 * (1 - 0.75 * 1.0 / 16), 1e-15);
    ASSERT_STATUS(arachne_trainer_set(ta, ARACHNE_TRAIN_ENTROPY_END_SCALE, 1.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "ENTROPY_END_SCALE");
    ASSERT_STATUS(arachne_trainer_set(ta, ARACHNE_TRAIN_ENTROPY_DECAY_START, 0.5), ARACHNE_E_INVALID_ARGUMENT);
    free_pair(ta, tb, pa, pb, &e1, &e2);
}

/* REFINE_INTERVAL: after the PPO steps of an update each composition's best
 * plan is refined; a faster result becomes the best, and its recorded
 * choices (the policy's masks, the refined structure's decisions) replay to
 * exactly that plan.  The same trainer without refinement finds the same
 * best before it, so the refined value is the refinement of that plan. */
TEST(refine_interval_puts_the_refined_plan_in_the_buffers)
{
    env e1, e2;
    arachne_policy *pol[2] = { NULL, NULL };
    arachne_trainer *t[2] = { NULL, NULL };
    arachne_plan *start = NULL, *refined = NULL, *again = NULL;
    double b0 = 0, b1 = 0, got = 0, missed = 0, v = 0;
    int k, ci, gains = 0;
    ASSERT_OK(open_pair(&e1, &e2));
    for (k = 0; k < 2; k++) {
        ASSERT_OK(setup_small(&t[k], &pol[k], &e1, &e2));
        ASSERT_OK(arachne_trainer_set(t[k], ARACHNE_TRAIN_REFINE_EVALUATIONS, 80));
    }
    ASSERT_OK(arachne_trainer_get_option(t[0], ARACHNE_TRAIN_REFINE_INTERVAL, &v));
    ASSERT_EQ(v, 0);                          /* off by default */
    ASSERT_OK(arachne_trainer_set(t[1], ARACHNE_TRAIN_REFINE_INTERVAL, 1));
    for (k = 0; k < 2; k++) ASSERT_OK(arachne_trainer_run(t[k], 1, NULL, NULL));
    for (ci = 0; ci < 2; ci++) {
        const arachne_cost_model *cm = ci ? e2.cm : e1.cm;
        ASSERT_OK(arachne_trainer_get(t[0], ci, ARACHNE_TRAIN_BEST_ITER_PER_S, &b0));
        ASSERT_OK(arachne_trainer_get(t[1], ci, ARACHNE_TRAIN_BEST_ITER_PER_S, &b1));
        ASSERT_OK(arachne_trainer_best_plan(t[0], ci, &start));
        ASSERT_OK(arachne_plan_refine(&refined, start, cm, 80, 0.0));
        ASSERT_OK(arachne_trainer_best_plan(t[1], ci, &again));
        ASSERT_GT(b0, 0);
        ASSERT_LE(b0, b1);
        ASSERT_NEAR(again->iter_per_s, b1, 1e-12);   /* the kept choices rebuild the kept plan */
        if (b1 > b0) {
            gains++;
            ASSERT_NEAR(b1, refined->iter_per_s, 1e-12);
        }
        arachne_plan_destroy(start);
        arachne_plan_destroy(refined);
        arachne_plan_destroy(again);
        start = refined = again = NULL;
    }
    ASSERT_OK(arachne_trainer_get(t[1], -1, ARACHNE_TRAIN_REFINED_PLANS, &got));
    ASSERT_OK(arachne_trainer_get(t[1], -1, ARACHNE_TRAIN_REFINE_MISSES, &missed));
    ASSERT_EQ(got, gains);
    ASSERT_GT(got, 0);                        /* a random policy's best leaves room on these clusters */
    ASSERT_OK(arachne_trainer_get(t[0], -1, ARACHNE_TRAIN_REFINED_PLANS, &got));
    ASSERT_EQ(got, 0);
    /* rounds go on from each new best until one finds nothing faster; then
     * the same best is not refined again */
    for (k = 0; k < 6; k++) {
        ASSERT_OK(ar_sil_refine_best(t[1], 0, &t[1]->slots[0]));
        if (!t[1]->comp[0].refine_gain) break;
    }
    ASSERT_LE(k, 5);
    ASSERT_EQ(t[1]->comp[0].refined_from == t[1]->comp[0].best.iter_per_s, 1);
    b0 = t[1]->comp[0].best.iter_per_s;
    ASSERT_OK(ar_sil_refine_best(t[1], 0, &t[1]->slots[0]));
    ASSERT_EQ(t[1]->comp[0].refine_gain + t[1]->comp[0].refine_miss, 0);
    ASSERT_EQ(t[1]->comp[0].best.iter_per_s == b0, 1);
    ASSERT_STATUS(arachne_trainer_set(t[1], ARACHNE_TRAIN_REFINE_EVALUATIONS, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t[1], ARACHNE_TRAIN_REFINE_INTERVAL, 1.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_get(t[1], -1, ARACHNE_TRAIN_ENTROPY_COEF + 1, &v), ARACHNE_E_INVALID_ARGUMENT);
    for (k = 0; k < 2; k++) {
        arachne_trainer_destroy(t[k]);
        arachne_policy_destroy(pol[k]);
    }
    env_close(&e1);
    env_close(&e2);
}

TEST(trainer_rejects_bad_options_and_calls)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    double v = 0;
    rec_cb r;
    ASSERT_STATUS(arachne_trainer_create(NULL, NULL, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_policy_create(&pol, 2, 32, 1));
    ASSERT_STATUS(arachne_trainer_create(&t, NULL, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT(t == NULL);
    ASSERT_OK(arachne_trainer_create(&t, pol, 1));
    /* defaults */
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_CLIP, &v));
    ASSERT_NEAR(v, 0.2, 1e-15);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_FORCE_DEPTH_START, &v));
    ASSERT_NEAR(v, 0.8, 1e-15);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_FORCE_DEPTH_END, &v));
    ASSERT_NEAR(v, 0.25, 1e-15);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_SIL_TOP, &v));
    ASSERT_NEAR(v, 0.9, 1e-15);
    /* bad keys and values */
    ASSERT_STATUS(arachne_trainer_set(t, -1, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_EPOCHS + 1, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_TOP, 1.01), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "SIL_TOP");
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_TOP, -0.1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_GROUP_SIZE, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "GROUP_SIZE");
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_GROUP_SIZE, 4.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_CLIP, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_CLIP, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_LEARNING_RATE, NAN), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_LEARNING_RATE, -1e-3), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_FORCE_DEPTH_START, 1.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_PCGRAD, 2), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t, ARACHNE_TRAIN_SIL_PER_DEPTH, 17), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_get_option(t, 99, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_trainer_get_option(t, ARACHNE_TRAIN_CLIP, &v));
    ASSERT_NEAR(v, 0.2, 1e-15); /* unchanged by the failures */
    ASSERT_OK(arachne_trainer_set(t, ARACHNE_TRAIN_GROUP_SIZE, 3));
    /* run without compositions, bad counts, bad getters */
    ASSERT_STATUS(arachne_trainer_run(t, 1, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_add_composition(t, NULL, "x"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(env_open(&e, "llama3-8b", SMALL));
    ASSERT_OK(arachne_trainer_add_composition(t, e.cm, "small"));
    ASSERT_STATUS(arachne_trainer_run(t, 0, NULL, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_get(t, 1, ARACHNE_TRAIN_BEST_ITER_PER_S, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_get(t, 0, 77, &v), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_get(t, 0, 0, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_COMPOSITIONS, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_FORCE_DEPTH_P, &v));
    ASSERT_NEAR(v, 0.8, 1e-15);
    /* the callback cancels after update 2: the two updates are kept */
    memset(&r, 0, sizeof r);
    r.stop_at = 2;
    ASSERT_STATUS(arachne_trainer_run(t, 5, record, &r), ARACHNE_E_CANCELLED);
    ASSERT_EQ(r.calls, 2);
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_UPDATES_DONE, &v));
    ASSERT_EQ(v, 2);
    ASSERT_OK(arachne_trainer_get(t, -1, ARACHNE_TRAIN_FORCE_DEPTH_P, &v));
    ASSERT(v < 0.8);
    /* compositions are fixed once training started */
    ASSERT_STATUS(arachne_trainer_add_composition(t, e.cm, "again"), ARACHNE_E_INVALID_ARGUMENT);
    arachne_trainer_destroy(t);
    arachne_trainer_destroy(NULL);
    arachne_policy_destroy(pol);
    env_close(&e);
}

TEST(a_composition_with_no_feasible_plan_is_refused)
{
    env e;
    arachne_policy *pol = NULL;
    arachne_trainer *t = NULL;
    ASSERT_OK(env_open(&e, "deepseek-v3", "a6000:1x1"));
    ASSERT_OK(arachne_policy_create(&pol, 2, 32, 1));
    ASSERT_OK(arachne_trainer_create(&t, pol, 1));
    ASSERT_STATUS(arachne_trainer_add_composition(t, e.cm, "tiny"), ARACHNE_E_INFEASIBLE);
    ASSERT_CONTAINS(arachne_last_error(), "tiny");
    arachne_trainer_destroy(t);
    arachne_policy_destroy(pol);
    env_close(&e);
}

/* ROLLOUT_INTERVAL: a round plans each composition by rollout decoding of
 * the current policy; the target is never slower than the policy's greedy
 * plan, faster on a composition a barely trained policy leaves room on, its
 * recorded choices rebuild it, it enters the buffers, it is imitated (the
 * weight changes the trained network) and it survives a checkpoint.  On
 * ROOMY the rollout plans of a once-updated policy run about four times
 * as fast as its greedy plans; on the pair of the other tests greedy is
 * already the best plan the lookahead finds. */
/* SIL_EPOCHS: each self-imitation step takes that many optimizer steps
 * (the Adam step count says so) and trains a different network. */
TEST(sil_epochs_take_more_imitation_steps)
{
    env e1, e2;
    arachne_policy *pol[2] = { NULL, NULL };
    arachne_trainer *t[2] = { NULL, NULL };
    double v = 0;
    long steps[2];
    int k;
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/sil1.arpol", th_tmpdir());
    snprintf(pb, sizeof pb, "%s/sil3.arpol", th_tmpdir());
    ASSERT_OK(open_pair(&e1, &e2));
    for (k = 0; k < 2; k++) {
        ASSERT_OK(setup_small(&t[k], &pol[k], &e1, &e2));
        ASSERT_OK(arachne_trainer_set(t[k], ARACHNE_TRAIN_SIL_INTERVAL, 1));
    }
    ASSERT_OK(arachne_trainer_get_option(t[0], ARACHNE_TRAIN_SIL_EPOCHS, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(arachne_trainer_set(t[1], ARACHNE_TRAIN_SIL_EPOCHS, 3));
    for (k = 0; k < 2; k++) {
        ASSERT_OK(arachne_trainer_run(t[k], 1, NULL, NULL));
        steps[k] = ar_nn_adam_steps(pol[k]->nn);
    }
    /* 2 PPO epochs + 1 or 3 imitation steps */
    ASSERT_EQ(steps[0], 2 + 1);
    ASSERT_EQ(steps[1], 2 + 3);
    ASSERT_MSG(same_policy_bytes(pol[0], pol[1], pa, pb) == 0, "SIL_EPOCHS changed nothing");
    ASSERT_STATUS(arachne_trainer_set(t[1], ARACHNE_TRAIN_SIL_EPOCHS, 0), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t[1], ARACHNE_TRAIN_SIL_EPOCHS, 65), ARACHNE_E_INVALID_ARGUMENT);
    for (k = 0; k < 2; k++) {
        arachne_trainer_destroy(t[k]);
        arachne_policy_destroy(pol[k]);
    }
    env_close(&e1);
    env_close(&e2);
}

#define ROOMY "l40s:6x4,h100:2x8,rtx-3090:8x2"
TEST(rollout_interval_imitates_the_rollout_plan)
{
    env e1, e2, e3, e4;
    arachne_policy *pol[3] = { NULL, NULL, NULL };
    arachne_trainer *t[3] = { NULL, NULL, NULL };
    arachne_plan again;
    char pa[512], pb[512], ck[512];
    double v = 0, greedy = 0, built = 0;
    int k, ci, gains = 0, n = 0, *ch;
    long fills = 0;
    ar_construct_opts o;
    const char *dir = th_tmpdir();
    snprintf(pa, sizeof pa, "%s/roll-a.arpol", dir);
    snprintf(pb, sizeof pb, "%s/roll-b.arpol", dir);
    snprintf(ck, sizeof ck, "%s/roll.ckpt", dir);
    ch = malloc(AR_POLICY_MAX_DECISIONS * sizeof *ch);
    ASSERT(ch != NULL);
    ASSERT_OK(open_pair(&e1, &e2));
    for (k = 0; k < 3; k++) {
        ASSERT_OK(setup_small(&t[k], &pol[k], &e1, &e2));
        ASSERT_OK(arachne_trainer_set(t[k], ARACHNE_TRAIN_SIL_INTERVAL, 1));
    }
    ASSERT_OK(arachne_trainer_get_option(t[0], ARACHNE_TRAIN_ROLLOUT_INTERVAL, &v));
    ASSERT_EQ(v, 0);                          /* off by default */
    ASSERT_OK(arachne_trainer_get_option(t[0], ARACHNE_TRAIN_ROLLOUT_EVALUATIONS, &v));
    ASSERT_EQ(v, 2000);
    ASSERT_OK(arachne_trainer_get_option(t[0], ARACHNE_TRAIN_ROLLOUT_WEIGHT, &v));
    ASSERT_EQ(v, 1);
    /* t[0]: one update on two compositions with room for the lookahead */
    arachne_trainer_destroy(t[0]);
    arachne_policy_destroy(pol[0]);
    ASSERT_OK(env_open(&e3, "llama3-8b", ROOMY));
    ASSERT_OK(env_open(&e4, "qwen3-8b", ROOMY));
    ASSERT_OK(setup_small(&t[0], &pol[0], &e3, &e4));
    ASSERT_OK(arachne_trainer_run(t[0], 1, NULL, NULL));
    ar_policy_construct_opts(&o);
    for (ci = 0; ci < 2; ci++) {
        ar_train_comp *c = &t[0]->comp[ci];
        /* the policy's greedy plan: a lookahead budget of one fill is spent
         * by the greedy completion itself */
        ASSERT_STATUS(
            ar_policy_rollout_choices(pol[0], c->cm, &o, 1, ch, AR_POLICY_MAX_DECISIONS - 1, &n, &fills, NULL, NULL),
            ARACHNE_E_INVALID_ARGUMENT);
        ASSERT_CONTAINS(arachne_last_error(), "room for");
        ASSERT_OK(ar_policy_rollout_choices(pol[0], c->cm, &o, 1, ch, AR_POLICY_MAX_DECISIONS, &n, &fills, NULL, NULL));
        ASSERT_GT(n, 0);
        ASSERT_OK(ar_sil_rollout_target(t[0], ci, &t[0]->slots[(size_t)ci * t[0]->slots_g]));
        built = t[0]->slots[(size_t)ci * t[0]->slots_g].plan.iter_per_s; /* the plan the target recorded */
        ASSERT_GT(c->roll.ndec, 0);
        ASSERT_NEAR(c->roll.iter_per_s, built, 1e-12);
        ASSERT_LE(c->roll.iter_per_s, c->best.iter_per_s);
        /* the greedy plan's throughput, rebuilt from its choices */
        {
            ar_sil_plan g;
            memset(&g, 0, sizeof g);
            g.ndec = n;
            g.dec = calloc((size_t)n, sizeof *g.dec);
            ASSERT(g.dec != NULL);
            for (k = 0; k < n; k++) g.dec[k].choice = ch[k];
            ar_plan_empty(&again);
            ASSERT_OK(ar_sil_replay(c->cm, &g, 16, &again));
            greedy = again.iter_per_s;
            ar_plan_clear(&again);
            free(g.dec);
        }
        ASSERT_LE(greedy, c->roll.iter_per_s);
        gains += c->roll.iter_per_s > greedy * 1.0001;
        /* the target's recorded choices rebuild it */
        ar_plan_empty(&again);
        ASSERT_OK(ar_sil_replay(c->cm, &c->roll, 16, &again));
        ASSERT_NEAR(again.iter_per_s, c->roll.iter_per_s, 1e-12);
        ar_plan_clear(&again);
    }
    ASSERT_GT(gains, 0);
    /* imitated: weight 1 and weight 0 train different networks */
    for (k = 1; k < 3; k++) {
        ASSERT_OK(arachne_trainer_set(t[k], ARACHNE_TRAIN_ROLLOUT_INTERVAL, 1));
        ASSERT_OK(arachne_trainer_set(t[k], ARACHNE_TRAIN_ROLLOUT_EVALUATIONS, 150));
    }
    ASSERT_OK(arachne_trainer_set(t[2], ARACHNE_TRAIN_ROLLOUT_WEIGHT, 0));
    /* one update: its round comes before its imitation step */
    for (k = 1; k < 3; k++) ASSERT_OK(arachne_trainer_run(t[k], 1, NULL, NULL));
    ASSERT_GT(t[1]->comp[0].roll.ndec + t[1]->comp[1].roll.ndec, 0);
    ASSERT_MSG(same_policy_bytes(pol[1], pol[2], pa, pb) == 0, "the rollout target's weight changed nothing");
    /* a checkpoint keeps the targets: a resumed run equals the straight one */
    ASSERT_OK(arachne_trainer_save_checkpoint(t[1], ck));
    arachne_trainer_destroy(t[2]);
    arachne_policy_destroy(pol[2]);
    ASSERT_OK(setup_small(&t[2], &pol[2], &e1, &e2));
    ASSERT_OK(arachne_trainer_load_checkpoint(t[2], ck));
    for (ci = 0; ci < 2; ci++) {
        ASSERT_EQ(t[2]->comp[ci].roll.ndec, t[1]->comp[ci].roll.ndec);
        ASSERT_EQ(t[2]->comp[ci].roll.iter_per_s == t[1]->comp[ci].roll.iter_per_s, 1);
    }
    ASSERT_OK(arachne_trainer_set(t[2], ARACHNE_TRAIN_ROLLOUT_INTERVAL, 2)); /* the file's value wins */
    ASSERT_OK(arachne_trainer_load_checkpoint(t[2], ck));
    for (k = 1; k < 3; k++) ASSERT_OK(arachne_trainer_run(t[k], 1, NULL, NULL));
    ASSERT_MSG(same_policy_bytes(pol[1], pol[2], pa, pb) == 1, "resumed run with rollout targets differs");
    ASSERT_STATUS(arachne_trainer_set(t[1], ARACHNE_TRAIN_ROLLOUT_INTERVAL, 1.5), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t[1], ARACHNE_TRAIN_ROLLOUT_WEIGHT, -1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(arachne_trainer_set(t[1], ARACHNE_TRAIN_ROLLOUT_EVALUATIONS, -1), ARACHNE_E_INVALID_ARGUMENT);
    for (k = 0; k < 3; k++) {
        arachne_trainer_destroy(t[k]);
        arachne_policy_destroy(pol[k]);
    }
    free(ch);
    env_close(&e1);
    env_close(&e2);
    env_close(&e3);
    env_close(&e4);
}

SUITE(train, T(tiny_training_run_improves_the_greedy_plan), T(best_plan_replays_to_the_recorded_throughput),
      T(advantages_are_group_relative_returns_to_go), T(pcgrad_removes_conflicts_and_keeps_agreeing_gradients),
      T(self_imitation_weight_counts_only_better_plans), T(checkpoint_resume_is_bit_identical),
      T(corrupt_or_foreign_checkpoints_are_rejected),
      T(checkpoint_with_extreme_adam_moments_is_refused), T(checkpoint_before_any_update_round_trips), T(sil_top_selects_the_plans_imitated),
      T(checkpoint_without_sil_top_loads_with_the_old_share), T(greedy_rollouts_put_the_greedy_plan_in_every_group),
      T(size_curriculum_lets_large_clusters_in_late), T(refine_interval_puts_the_refined_plan_in_the_buffers),
      T(entropy_schedule_scales_the_bonus_the_updates_use), T(rollout_interval_imitates_the_rollout_plan),
      T(recorded_choices_give_the_gradient_of_their_likelihood), T(rollout_cut_flag_is_exact),
      T(rollout_relabelling_agrees_with_rollout_decoding),
      T(sil_epochs_take_more_imitation_steps),
      T(trainer_rejects_bad_options_and_calls),
      T(a_composition_with_no_feasible_plan_is_refused));
