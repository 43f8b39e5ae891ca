/* fixture.h -- the test environment most unit tests plan in: a preset
 * model, a parsed cluster, the analytic profile at 4,096 tokens and a cost
 * model over them.  Static inline so a test that includes it and uses only
 * part of it builds warning-free. */
#ifndef ARACHNE_TEST_FIXTURE_H
#define ARACHNE_TEST_FIXTURE_H

#include <string.h>

#include "arachne.h"

typedef struct env {
    arachne_model *m;
    arachne_cluster *c;
    arachne_profile *p;
    arachne_cost_model *cm;
} env;

/* Opens model (a preset name) on cluster (a cluster spec string).  On an
 * error the handles made so far stay in *e for env_close. */
static inline int env_open(env *e, const char *model, const char *cluster)
{
    int st;
    memset(e, 0, sizeof *e);
    if ((st = arachne_model_preset(&e->m, model))) return st;
    if ((st = arachne_cluster_parse(&e->c, cluster))) return st;
    if ((st = arachne_profile_generate(&e->p, e->m, e->c, 4096))) return st;
    return arachne_cost_model_create(&e->cm, e->m, e->c, e->p);
}

static inline void env_close(env *e)
{
    arachne_cost_model_destroy(e->cm);
    arachne_profile_destroy(e->p);
    arachne_cluster_destroy(e->c);
    arachne_model_destroy(e->m);
    memset(e, 0, sizeof *e);
}

#endif
