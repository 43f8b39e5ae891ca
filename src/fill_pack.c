/* fill_pack.c -- packing the TP groups of a template's replicas into free
 * nodes: the largest replica count, and the concrete placement.
 *
 * Every TP group has a power-of-two size and must sit inside one node.  For
 * such "divisible" item sizes a simple counting argument is exact: placing
 * a group of 2^k GPUs into any node lowers sum_nodes floor(free/2^m) by
 * exactly 2^(k-m) for every m <= k, whichever node takes it.  So r replicas
 * fit iff, for every GPU type and every level m,
 *     r * sum_{stages of that type with tp >= 2^m} tp / 2^m
 *         <= sum_{nodes of that type} floor(free / 2^m),
 * and placing the largest groups first, each into any node with room,
 * always succeeds when the test passes.  We place best fit: a node whose
 * free count equals the group size, else the smallest larger one. */
#include <stdlib.h>
#include <string.h>

#include "fill.h"

static int ilog2(int v)
{
    int k = 0;
    while ((1 << (k + 1)) <= v) k++;
    return k;
}

int ar_pack_max_replicas(const arachne_cluster *c, const ar_avail *a, int depth,
                         const int *types, const int *tps)
{
    long demand[AR_MAX_TYPES][AR_MAX_TP_LOG + 1];
    int used[AR_MAX_TYPES], top[AR_MAX_TYPES];
    int s, t, m;
    long best = -1;
    memset(used, 0, sizeof used);
    memset(top, 0, sizeof top);
    for (s = 0; s < depth; s++) {
        int k = ilog2(tps[s]);
        t = types[s];
        if (t < 0 || t >= c->ntypes || tps[s] < 1 || (1 << k) != tps[s] || k > AR_MAX_TP_LOG) return 0;
        if (!used[t]) memset(demand[t], 0, sizeof demand[t]);
        used[t] = 1;
        if (k > top[t]) top[t] = k;
        for (m = 0; m <= k; m++) demand[t][m] += (long)(tps[s] >> m);
    }
    /* a->supply (kept by ar_avail_refresh) is the per-level node sum */
    for (t = 0; t < c->ntypes; t++) {
        if (!used[t]) continue;
        if (a->type_max_free[t] < (1 << top[t])) return 0;
        for (m = 0; m <= top[t]; m++) {
            long r = a->supply[t][m] / demand[t][m];
            if (best < 0 || r < best) best = r;
        }
    }
    if (best < 0) best = 0;
    if (best > 1 << 30) best = 1 << 30;
    return (int)best;
}

/* Sorts node indices (given in ascending index order) by ascending free
 * count, keeping index order among equal counts.  idx has room for 2n. */
static void sort_nodes(int *idx, int n, const int *freev)
{
    int i, j;
    if (n > 32) {
        int pos[AR_MAX_NODE_GPUS + 2], maxf = 0, k, *out = idx + n;
        for (i = 0; i < n; i++) if (freev[idx[i]] > maxf) maxf = freev[idx[i]];
        memset(pos, 0, (size_t)(maxf + 2) * sizeof(int));
        for (i = 0; i < n; i++) pos[freev[idx[i]] + 1]++;
        for (k = 1; k <= maxf + 1; k++) pos[k] += pos[k - 1];
        for (i = 0; i < n; i++) out[pos[freev[idx[i]]]++] = idx[i];
        memcpy(idx, out, (size_t)n * sizeof(int));
        return;
    }
    for (i = 1; i < n; i++) {
        int v = idx[i];
        for (j = i - 1; j >= 0 && freev[idx[j]] > freev[v]; j--) idx[j + 1] = idx[j];
        idx[j + 1] = v;
    }
}

int ar_pack_place(const arachne_cluster *c, const ar_avail *a, int depth, const int *types,
                  const int *tps, int r, int *node_of, int *gpu_of, int *scratch)
{
    /* scratch: [0, n) copy of free; [n, 3n) node index list (2n for the
     * counting sort). */
    int *freev = scratch, *idx = scratch + a->nnodes;
    int m, t, s, q, i;
    memcpy(freev, a->free, (size_t)a->nnodes * sizeof(int));
    for (m = AR_MAX_TP_LOG; m >= 0; m--) {
        int size = 1 << m;
        for (t = 0; t < c->ntypes; t++) {
            int n = 0, cur = 0, any = 0;
            for (s = 0; s < depth; s++) if (types[s] == t && tps[s] == size) { any = 1; break; }
            if (!any) continue;
            if (a->by_type) {
                /* the type's own nodes, in index order */
                for (i = a->type_first[t]; i < a->type_first[t + 1]; i++)
                    if (freev[a->by_type[i]] >= size) idx[n++] = a->by_type[i];
            } else {
                for (i = 0; i < a->nnodes; i++)
                    if (c->nodes[i].type == t && freev[i] >= size) idx[n++] = i;
            }
            sort_nodes(idx, n, freev);
            for (q = 0; q < r; q++) {
                for (s = 0; s < depth; s++) {
                    int node;
                    if (types[s] != t || tps[s] != size) continue;
                    while (cur < n && freev[idx[cur]] < size) cur++;
                    if (cur >= n)
                        return ar_error(ARACHNE_E_INFEASIBLE, "packing: %d replicas do not fit (type %s, TP %d)",
                                        r, c->types[t].name, size);
                    node = idx[cur];
                    node_of[q * depth + s] = node;
                    gpu_of[q * depth + s] = c->nodes[node].gpus - freev[node];
                    freev[node] -= size;
                }
            }
        }
    }
    return ARACHNE_OK;
}
