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
        int k = ar_ilog2(tps[s]);
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

/* Lists the nodes of type t with at least `size` free GPUs in idx, by
 * ascending free count, index order among equal counts (a counting sort
 * fused with the scan: two passes over the type's nodes).  Returns the
 * count.  pos has room for maxf + 2 ints, maxf >= every free count. */
static int list_nodes(const arachne_cluster *c, const ar_avail *a, const int *freev, int t, int size,
                      int maxf, int *pos, int *idx)
{
    int i, k, n = 0, lo = a->by_type ? a->type_first[t] : 0, hi = a->by_type ? a->type_first[t + 1] : a->nnodes;
    memset(pos, 0, (size_t)(maxf + 2) * sizeof(int));
    for (k = lo; k < hi; k++) {
        i = a->by_type ? a->by_type[k] : k;
        if ((a->by_type || c->nodes[i].type == t) && freev[i] >= size) { pos[freev[i] + 1]++; n++; }
    }
    for (k = 1; k <= maxf + 1; k++) pos[k] += pos[k - 1];
    for (k = lo; k < hi; k++) {
        i = a->by_type ? a->by_type[k] : k;
        if ((a->by_type || c->nodes[i].type == t) && freev[i] >= size) idx[pos[freev[i]]++] = i;
    }
    return n;
}

int ar_pack_place(const arachne_cluster *c, const ar_avail *a, int depth, const int *types,
                  const int *tps, int r, int stage_major, int *node_of, int *gpu_of, int *scratch)
{
    /* scratch: [0, n) copy of free; [n, 3n) node index list. */
    int *freev = scratch, *idx = scratch + a->nnodes;
    int pos[AR_MAX_NODE_GPUS + 2], match[AR_MAX_DEPTH];
    int m, t, s, q, i;
    memcpy(freev, a->free, (size_t)a->nnodes * sizeof(int));
    for (m = AR_MAX_TP_LOG; m >= 0; m--) {
        int size = 1 << m;
        for (t = 0; t < c->ntypes; t++) {
            /* no node's free count exceeds its size, nor the refreshed maximum */
            int n, cur = 0, nm = 0, maxf = AR_MAX(a->type_max_free[t], c->type_max_node[t]);
            for (s = 0; s < depth; s++)
                if (types[s] == t && tps[s] == size) match[nm++] = s;
            if (!nm) continue;
            if (maxf > AR_MAX_NODE_GPUS) maxf = AR_MAX_NODE_GPUS;
            n = maxf < size ? 0 : list_nodes(c, a, freev, t, size, maxf, pos, idx);
            /* replica-major: one replica's stages next to each other;
             * stage-major (Megatron's order): one stage's replicas */
            for (i = 0; i < r * nm; i++) {
                int node;
                q = stage_major ? i % r : i / nm;
                s = match[stage_major ? i / r : i % nm];
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
    return ARACHNE_OK;
}
