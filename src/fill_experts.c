/* fill_experts.c -- the expert-tiling candidates of a MoE stage.
 * W GPUs hold the stage (TP degree x replicas).  Every factorisation
 * EP x ETP x EDP = W is a candidate when ETP divides the TP degree (an
 * expert tensor slice stays inside the node, like TP) and EP divides the
 * routed-expert count.  Pricing (and memory) is the cost model's job. */
#include "fill.h"

int ar_tiles_enumerate(int w, int tp, int experts, ar_tile *out, int cap)
{
    int n = 0, etp, ep, i, j;
    if (w < 1 || tp < 1 || experts < 1) return 0;
    for (etp = 1; etp <= tp; etp++) {
        if (tp % etp || w % etp) continue;
        for (ep = 1; ep <= experts && ep <= w / etp; ep++) {
            if (experts % ep || (w / etp) % ep) continue;
            if (n < cap) { out[n].ep = ep; out[n].etp = etp; out[n].edp = w / (ep * etp); n++; }
        }
    }
    /* order: most sharded first (EP*ETP descending), then larger ETP */
    for (i = 1; i < n; i++) {
        ar_tile v = out[i];
        long pv = (long)v.ep * v.etp;
        for (j = i - 1; j >= 0; j--) {
            long pj = (long)out[j].ep * out[j].etp;
            if (pj > pv || (pj == pv && out[j].etp >= v.etp)) break;
            out[j + 1] = out[j];
        }
        out[j + 1] = v;
    }
    return n;
}
