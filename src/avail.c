/* avail.c -- free GPUs per node while a plan is being built (ar_avail). */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "fill.h"

/* The level counts must cover every TP exponent the packer tests. */
typedef char ar_avail_levels_cover_tp[(AR_AVAIL_LEVELS == AR_MAX_TP_LOG + 1) ? 1 : -1];

void ar_avail_refresh(ar_avail *a, const arachne_cluster *c)
{
    int i, m;
    memset(a->type_free, 0, sizeof a->type_free);
    memset(a->type_max_free, 0, sizeof a->type_max_free);
    memset(a->supply, 0, sizeof a->supply);
    for (i = 0; i < a->nnodes; i++) {
        int t = c->nodes[i].type, f = a->free[i];
        a->type_free[t] += f;
        if (f > a->type_max_free[t]) a->type_max_free[t] = f;
        for (m = 0; m < AR_AVAIL_LEVELS && (f >> m) > 0; m++) a->supply[t][m] += f >> m;
    }
}

int ar_avail_init(ar_avail *a, const arachne_cluster *c)
{
    int i, t;
    if (!a || !c) return AR_NULL_ARG("ar_avail_init", a, c);
    memset(a, 0, sizeof *a);
    a->nnodes = c->nnodes;
    if (c->nnodes > 0) {
        a->free = (int *)ar_malloc((size_t)c->nnodes * sizeof(int));
        a->by_type = (int *)ar_malloc((size_t)c->nnodes * sizeof(int));
        if (!a->free || !a->by_type) {
            ar_avail_free(a);
            return ARACHNE_E_NO_MEMORY;
        }
    }
    for (i = 0; i < c->nnodes; i++) {
        a->free[i] = c->nodes[i].gpus;
        a->type_first[c->nodes[i].type + 1]++;
    }
    for (t = 0; t < AR_MAX_TYPES; t++) a->type_first[t + 1] += a->type_first[t];
    {
        int pos[AR_MAX_TYPES];
        memcpy(pos, a->type_first, sizeof pos);
        for (i = 0; i < c->nnodes; i++) a->by_type[pos[c->nodes[i].type]++] = i;
    }
    ar_avail_refresh(a, c);
    return ARACHNE_OK;
}

void ar_avail_free(ar_avail *a)
{
    if (!a) return;
    free(a->free);
    free(a->by_type);
    memset(a, 0, sizeof *a);
}

/* Resizes an int buffer to n entries (kept when n already matches). */
static int resize_ints(int **buf, int have, int n)
{
    int *f = NULL;
    if (*buf && have == n) return ARACHNE_OK;
    if (n > 0 && !(f = (int *)ar_malloc((size_t)n * sizeof(int)))) return ARACHNE_E_NO_MEMORY;
    free(*buf);
    *buf = f;
    return ARACHNE_OK;
}

int ar_avail_copy(ar_avail *dst, const ar_avail *src)
{
    int st;
    if (!dst || !src) return AR_NULL_ARG("ar_avail_copy", dst, src);
    if (dst == src) return ARACHNE_OK;
    if ((st = resize_ints(&dst->free, dst->nnodes, src->nnodes))) return st;
    if (!src->by_type) {
        free(dst->by_type);
        dst->by_type = NULL;
    } else if ((st = resize_ints(&dst->by_type, dst->nnodes, src->nnodes))) {
        /* free[] already has the new size: keep the record consistent */
        free(dst->by_type);
        dst->by_type = NULL;
        dst->nnodes = src->nnodes;
        return st;
    }
    dst->nnodes = src->nnodes;
    if (src->nnodes > 0) memcpy(dst->free, src->free, (size_t)src->nnodes * sizeof(int));
    if (src->by_type && src->nnodes > 0)
        memcpy(dst->by_type, src->by_type, (size_t)src->nnodes * sizeof(int));
    memcpy(dst->type_free, src->type_free, sizeof dst->type_free);
    memcpy(dst->type_max_free, src->type_max_free, sizeof dst->type_max_free);
    memcpy(dst->supply, src->supply, sizeof dst->supply);
    memcpy(dst->type_first, src->type_first, sizeof dst->type_first);
    return ARACHNE_OK;
}

int ar_avail_total(const ar_avail *a)
{
    int t, n = 0;
    for (t = 0; t < AR_MAX_TYPES; t++) n += a->type_free[t];
    return n;
}
