/* fixture.h -- the test environment most unit tests plan in: a preset
 * model, a parsed cluster, the analytic profile at 4,096 tokens and a cost
 * model over them.  Static inline so a test that includes it and uses only
 * part of it builds warning-free. */
#ifndef ARACHNE_TEST_FIXTURE_H
#define ARACHNE_TEST_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "arachne.h"

typedef struct env {
    arachne_model *m;
    arachne_cluster *c;
    arachne_profile *p;
    arachne_cost_model *cm;
} env;

/* The cluster, profile and cost model for the model already in e->m. */
static inline int env_finish(env *e, const char *cluster)
{
    int st;
    if ((st = arachne_cluster_parse(&e->c, cluster))) return st;
    if ((st = arachne_profile_generate(&e->p, e->m, e->c, 4096))) return st;
    return arachne_cost_model_create(&e->cm, e->m, e->c, e->p);
}

/* Opens model (a preset name) on cluster (a cluster spec string).  On an
 * error the handles made so far stay in *e for env_close. */
static inline int env_open(env *e, const char *model, const char *cluster)
{
    int st;
    memset(e, 0, sizeof *e);
    if ((st = arachne_model_preset(&e->m, model))) return st;
    return env_finish(e, cluster);
}

/* Like env_open with a model file. */
static inline int env_open_file(env *e, const char *path, const char *cluster)
{
    int st;
    memset(e, 0, sizeof *e);
    if ((st = arachne_model_load(&e->m, path))) return st;
    return env_finish(e, cluster);
}

/* A model field (arachne_model_field), -1 on an error. */
static inline double model_field(const arachne_model *m, int f)
{
    double v = -1;
    if (arachne_model_get(m, f, &v) != ARACHNE_OK) return -1;
    return v;
}

/* Parameters of one layer of a kind, -1 on an error. */
static inline double model_layer_params(const arachne_model *m, int kind)
{
    double v = -1;
    if (arachne_model_layer_params(m, kind, &v) != ARACHNE_OK) return -1;
    return v;
}

/* The plan JSON with its wall-clock planning_s number removed (owned by
 * the caller; NULL on an error): what two runs of a deterministic planner
 * must agree on byte for byte. */
static inline char *plan_json_sans_time(const arachne_plan *p)
{
    const char *j = NULL, *k;
    char *out;
    if (arachne_plan_to_json(p, &j) != ARACHNE_OK) return NULL;
    out = (char *)malloc(strlen(j) + 1);
    if (!out) return NULL;
    strcpy(out, j);
    k = strstr(j, "\"planning_s\"");
    if (k) {
        /* drop the number (its length varies with the time) */
        const char *r = k + strlen("\"planning_s\"");
        char *w = out + (r - j);
        while (*r && *r != ',' && *r != '}' && *r != '\n') r++;
        memmove(w, r, strlen(r) + 1);
    }
    return out;
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
