/* refine_ahead.c -- the refinement's candidates filled ahead, on several
 * threads (refine.h).
 *
 * A climb tries its candidates one at a time and moves at the first that
 * improves, so it is sequential; but nearly all of its time is the fills of
 * the candidates it has not seen, and which candidates come next is known
 * when the pass starts.  So each pass first lists them; when the pass then
 * reaches one it has to fill, that candidate and the next unseen ones of
 * the list (one per thread, as many as the budget left can take) are filled
 * at once, each on its own builder.  The pass goes on as before and takes
 * each result when it reaches that candidate, as if it had filled it there:
 *  - a fill depends on the candidate and the cost model alone (every fill
 *    starts from the whole cluster and an empty plan);
 *  - the pass keeps every priced prefix that ranks above the best so far.
 *    A prefix filled ahead is kept for it when its throughput is above the
 *    best's rank when it was filled (a prefix's rank is at most its
 *    throughput, and the best's rank only rises), so the pass sees every
 *    prefix it could keep, in order;
 *  - the budget and the statistics count a result when the pass takes it.
 * A move, the budget or the time cap ends the pass; what it did not reach
 * is dropped.  So the plan, its evaluations and the table of seen
 * candidates are the same for any thread count.  Without OpenMP, or with
 * one thread, nothing here runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "refine.h"

#define RF_AHEAD_THREADS 16 /* threads used at most */
#define RF_LIST_MAX 1024    /* candidates of one pass listed at most */

/* One candidate filled ahead. */
typedef struct rf_result {
    int valid;                            /* filled, not yet taken */
    uint64_t hash;
    rf_spec *spec;                        /* the candidate (heap: tens of KB) */
    double value, bar;                    /* ar_rf_fill_spec's value; the best's rank when filled */
    int kbest, nkept, st;
    long used, fills;
    int kept_k[AR_MAX_TEMPLATES];         /* prefixes that may still be kept: template counts */
    arachne_plan *kept[AR_MAX_TEMPLATES]; /* and the plans (heap, reused) */
} rf_result;

typedef struct rf_worker {
    ar_builder b;
    arachne_plan work;
    int ready;
} rf_worker;

struct rf_ahead {
    int threads;
    rf_worker wk[RF_AHEAD_THREADS];
    rf_result res[RF_AHEAD_THREADS];
    /* the pass's candidates, packed: n, then per template depth, types, tps */
    int nlist, pos;
    uint64_t hash[RF_LIST_MAX];
    size_t at[RF_LIST_MAX];
    int *pack;
    size_t npack, cap;
};

void ar_rf_ahead_open(rf_ctx *R)
{
#ifdef _OPENMP
    rf_ahead *A;
    int n = omp_get_max_threads();
    R->ahead = NULL;
    if (n < 2 || omp_in_parallel()) return;
    if (!(A = ar_calloc(1, sizeof *A))) {
        /* the builders ahead are a speed-up: without their memory the
         * refinement fills every candidate itself, to the same plan */
        arachne_clear_error();
        return;
    }
    A->threads = n > RF_AHEAD_THREADS ? RF_AHEAD_THREADS : n;
    R->ahead = A;
#else
    R->ahead = NULL;
#endif
}

void ar_rf_ahead_close(rf_ctx *R)
{
    rf_ahead *A = R->ahead;
    int i, j;
    if (!A) return;
    for (i = 0; i < RF_AHEAD_THREADS; i++) {
        if (A->wk[i].ready) ar_builder_free(&A->wk[i].b);
        ar_plan_clear(&A->wk[i].work);
        free(A->res[i].spec);
        for (j = 0; j < AR_MAX_TEMPLATES; j++)
            if (A->res[i].kept[j]) arachne_plan_destroy(A->res[i].kept[j]);
    }
    free(A->pack);
    free(A);
    R->ahead = NULL;
}

void ar_rf_ahead_begin(rf_ctx *R)
{
    rf_ahead *A = R->ahead;
    if (!A) return;
    A->nlist = A->pos = 0;
    A->npack = 0;
}

void ar_rf_ahead_forget(rf_ctx *R)
{
    rf_ahead *A = R->ahead;
    int i;
    if (!A) return;
    ar_rf_ahead_begin(R);
    for (i = 0; i < A->threads; i++) A->res[i].valid = 0;
}

/* Lists candidate c of the pass being collected; one the table has seen
 * needs no fill (the table only grows), and a full list or no memory only
 * leaves the rest to be filled when tried. */
void ar_rf_ahead_collect(rf_ctx *R, const rf_spec *c, uint64_t h)
{
    rf_ahead *A = R->ahead;
    size_t need = 1;
    int i;
    if (!A || A->nlist >= RF_LIST_MAX || ar_rf_seen_slot(R, h)->hash == h) return;
    for (i = 0; i < c->n; i++) need += 1 + 2 * (size_t)c->t[i].depth;
    if (A->npack + need > A->cap) {
        size_t cap = A->cap ? A->cap * 2 : 4096;
        int *p;
        while (cap < A->npack + need) cap *= 2;
        if (!(p = ar_realloc(A->pack, cap * sizeof *p))) return;
        A->pack = p;
        A->cap = cap;
    }
    A->hash[A->nlist] = h;
    A->at[A->nlist++] = A->npack;
    A->pack[A->npack++] = c->n;
    for (i = 0; i < c->n; i++) {
        int d = c->t[i].depth;
        A->pack[A->npack++] = d;
        memcpy(A->pack + A->npack, c->t[i].types, (size_t)d * sizeof(int));
        A->npack += (size_t)d;
        memcpy(A->pack + A->npack, c->t[i].tps, (size_t)d * sizeof(int));
        A->npack += (size_t)d;
    }
}

#ifdef _OPENMP
/* Listed candidate k unpacked into d. */
static void unpack(const rf_ahead *A, int k, rf_spec *d)
{
    const int *p = A->pack + A->at[k];
    int i;
    d->n = *p++;
    for (i = 0; i < d->n; i++) {
        int n = *p++;
        d->t[i].depth = n;
        memcpy(d->t[i].types, p, (size_t)n * sizeof(int));
        p += n;
        memcpy(d->t[i].tps, p, (size_t)n * sizeof(int));
        p += n;
    }
}

#endif

static int same_spec(const rf_spec *a, const rf_spec *b)
{
    int i;
    if (a->n != b->n) return 0;
    for (i = 0; i < a->n; i++)
        if (a->t[i].depth != b->t[i].depth ||
            memcmp(a->t[i].types, b->t[i].types, (size_t)a->t[i].depth * sizeof(int)) != 0 ||
            memcmp(a->t[i].tps, b->t[i].tps, (size_t)a->t[i].depth * sizeof(int)) != 0)
            return 0;
    return 1;
}

#ifdef _OPENMP
/* The prefixes a fill ahead keeps for the pass: those whose throughput is
 * above the best's rank when it was filled (no other can be kept later). */
static int keep_ahead(void *user, const arachne_plan *p, const rf_spec *s, int k)
{
    rf_result *r = (rf_result *)user;
    int st;
    (void)s;
    if (!(p->iter_per_s > r->bar)) return ARACHNE_OK;
    if (!r->kept[r->nkept] && !(r->kept[r->nkept] = ar_calloc(1, sizeof(arachne_plan)))) return ARACHNE_E_NO_MEMORY;
    if ((st = ar_plan_copy(r->kept[r->nkept], p))) return st;
    r->kept_k[r->nkept++] = k;
    return ARACHNE_OK;
}

/* Candidate r filled on worker w (its builder made when first needed, as
 * the refinement's own: no stage moves). */
static void fill_ahead(rf_ctx *R, rf_worker *w, rf_result *r)
{
    long fills0;
    r->nkept = 0;
    r->used = 0;
    if (!w->ready) {
        if ((r->st = ar_builder_init(&w->b, R->cm, NULL))) return;
        w->b.ws.move_stages = R->b.ws.move_stages;
        w->b.ws.stage_major = R->b.ws.stage_major;
        w->ready = 1;
    }
    w->b.ws.fsdp_search = R->b.ws.fsdp_search; /* on in the FSDP phase (refine.c) */
    fills0 = w->b.fills;
    r->st = ar_rf_fill_spec(&w->b, &w->work, r->spec, keep_ahead, r, &r->value, &r->kbest, &r->used);
    r->fills = w->b.fills - fills0;
}

/* Fills listed candidate k (the one the pass needs) and the next listed
 * ones it has not seen, one per thread, within the budget left. */
static void fill_batch(rf_ctx *R, int k)
{
    rf_ahead *A = R->ahead;
    double bar = R->have ? ar_plan_rank(R->best) : -HUGE_VAL;
    long est = R->used;
    int n = 0, j, i;
    for (j = k; j < A->nlist && n < A->threads && est < R->budget; j++) {
        rf_result *r = &A->res[n];
        int dup = 0;
        for (i = 0; i < n; i++) dup |= A->res[i].hash == A->hash[j];
        if (dup || (j > k && ar_rf_seen_slot(R, A->hash[j])->hash == A->hash[j])) continue;
        if (!r->spec && !(r->spec = ar_malloc(sizeof *r->spec))) break;
        unpack(A, j, r->spec);
        r->hash = A->hash[j];
        r->bar = bar;
        est += r->spec->n;
        n++;
    }
    A->pos = j;
    if (n == 0) return; /* no memory for a candidate: the pass fills it */
#pragma omp parallel for schedule(dynamic, 1) num_threads(n)
    for (i = 0; i < n; i++) fill_ahead(R, &A->wk[omp_get_thread_num()], &A->res[i]);
    for (i = 0; i < n; i++) A->res[i].valid = A->res[i].st == ARACHNE_OK;
}
#else
static void fill_batch(rf_ctx *R, int k)
{
    (void)R;
    (void)k;
}
#endif

int ar_rf_ahead_take(rf_ctx *R, const rf_spec *s, uint64_t h, double *value, int *kbest, int *done)
{
    rf_ahead *A = R->ahead;
    rf_result *r = NULL;
    int i, k, st;
    *done = 0;
    for (i = 0; i < A->threads && !r; i++)
        if (A->res[i].valid && A->res[i].hash == h && same_spec(A->res[i].spec, s)) r = &A->res[i];
    if (!r) {
        /* not filled yet: from the list (a kick's candidate is not in it) */
        for (k = A->pos; k < A->nlist && A->hash[k] != h; k++) {}
        if (k == A->nlist) return ARACHNE_OK;
        for (i = 0; i < A->threads; i++) A->res[i].valid = 0;
        fill_batch(R, k);
        if (!A->res[0].valid || A->res[0].hash != h || !same_spec(A->res[0].spec, s)) return ARACHNE_OK;
        r = &A->res[0];
    }
    /* as the pass's own fill: the budget, the statistics, the prefixes */
    R->used += r->used;
    R->b.fills += r->fills;
    for (i = 0; i < r->nkept; i++)
        if ((st = ar_rf_keep(R, r->kept[i], s, r->kept_k[i]))) return st;
    *value = r->value;
    *kbest = r->kbest;
    r->valid = 0;
    *done = 1;
    /* as the pass's own fill ends: a message left by a failed allocation
     * of the batch, or by this thread's fills of other candidates, must not
     * outlive a refinement that succeeds */
    arachne_clear_error();
    return ARACHNE_OK;
}
