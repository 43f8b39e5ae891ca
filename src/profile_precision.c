/* profile_precision.c -- what a profile table was measured in: the data
 * type (element size of activations and pipeline sends) and the recompute
 * mode its activation bytes were taken under, and the conversion of those
 * bytes to the cost model's meaning (16-bit, the run's recompute mode).
 *
 * Why: Sailor's measurements are FP32 runs with eager attention and no
 * recomputation (docs/profiles.md); storing their activation bytes as if
 * they were BF16 selective-recompute bytes overstates memory by 2x and more,
 * and sending 2-byte elements between stages understates the sends by 2x. */
#include <string.h>

#include "profile.h"

static const char *const prec_names[AR_PREC_COUNT] = { "bf16", "fp16", "fp32" };
static const double prec_bytes[AR_PREC_COUNT] = { 2.0, 2.0, 4.0 };
static const char *const rc_names[3] = { "none", "selective", "full" };

const char *ar_precision_name(int prec)
{
    return (prec >= 0 && prec < AR_PREC_COUNT) ? prec_names[prec] : NULL;
}

int ar_precision_from_name(const char *name)
{
    int k;
    for (k = 0; name && k < AR_PREC_COUNT; k++)
        if (strcmp(name, prec_names[k]) == 0) return k;
    return -1;
}

double ar_precision_bytes(int prec)
{
    return (prec >= 0 && prec < AR_PREC_COUNT) ? prec_bytes[prec] : 2.0;
}

double ar_profile_elt_bytes(const arachne_profile *p)
{
    return p ? ar_precision_bytes(p->precision) : 2.0;
}

const char *ar_recompute_name(int rc)
{
    return (rc >= AR_RECOMPUTE_NONE && rc <= AR_RECOMPUTE_FULL) ? rc_names[rc] : NULL;
}

int ar_recompute_from_name(const char *name)
{
    int k;
    for (k = AR_RECOMPUTE_NONE; name && k <= AR_RECOMPUTE_FULL; k++)
        if (strcmp(name, rc_names[k]) == 0) return k;
    return -1;
}

double ar_profile_act_bytes_as(const arachne_profile *p, const ar_profile_entry *e, const arachne_model *m,
                               int seq, int recompute)
{
    double v = e->act_bytes * 2.0 / ar_profile_elt_bytes(p);
    if (m && ar_kind_is_block(e->kind) && recompute != p->act_recompute) {
        double from = ar_model_act_bytes(m, e->kind, seq, e->mbs, e->tp, p->act_recompute);
        double to = ar_model_act_bytes(m, e->kind, seq, e->mbs, e->tp, recompute);
        if (from > 0.0) v *= to / from;
    }
    return v;
}
