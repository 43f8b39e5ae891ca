/* avail.c -- free GPUs per node while a plan is being built (ar_avail). */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "fill.h"

void ar_avail_refresh(ar_avail *a, const arachne_cluster *c)
{
    int i;
    memset(a->type_free, 0, sizeof a->type_free);
    memset(a->type_max_free, 0, sizeof a->type_max_free);
    for (i = 0; i < a->nnodes; i++) {
        int t = c->nodes[i].type, f = a->free[i];
        a->type_free[t] += f;
        if (f > a->type_max_free[t]) a->type_max_free[t] = f;
    }
}

int ar_avail_init(ar_avail *a, const arachne_cluster *c)
{
    int i;
    if (!a || !c) return AR_NULL_ARG("ar_avail_init", a, c);
    memset(a, 0, sizeof *a);
    a->nnodes = c->nnodes;
    if (c->nnodes > 0) {
        a->free = (int *)ar_malloc((size_t)c->nnodes * sizeof(int));
        if (!a->free) return ARACHNE_E_NO_MEMORY;
    }
    for (i = 0; i < c->nnodes; i++) a->free[i] = c->nodes[i].gpus;
    ar_avail_refresh(a, c);
    return ARACHNE_OK;
}

void ar_avail_free(ar_avail *a)
{
    if (!a) return;
    free(a->free);
    memset(a, 0, sizeof *a);
}

int ar_avail_copy(ar_avail *dst, const ar_avail *src)
{
    if (!dst || !src) return AR_NULL_ARG("ar_avail_copy", dst, src);
    if (dst == src) return ARACHNE_OK;
    if (dst->nnodes != src->nnodes || (!dst->free && src->nnodes > 0)) {
        int *f = NULL;
        if (src->nnodes > 0) {
            f = (int *)ar_malloc((size_t)src->nnodes * sizeof(int));
            if (!f) return ARACHNE_E_NO_MEMORY;
        }
        free(dst->free);
        dst->free = f;
    }
    dst->nnodes = src->nnodes;
    if (src->nnodes > 0) memcpy(dst->free, src->free, (size_t)src->nnodes * sizeof(int));
    memcpy(dst->type_free, src->type_free, sizeof dst->type_free);
    memcpy(dst->type_max_free, src->type_max_free, sizeof dst->type_max_free);
    return ARACHNE_OK;
}

int ar_avail_total(const ar_avail *a)
{
    int t, n = 0;
    for (t = 0; t < AR_MAX_TYPES; t++) n += a->type_free[t];
    return n;
}
