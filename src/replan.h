/* replan.h -- replanning for a changed cluster: node matching between the
 * old and the new cluster, the migration a switch needs (migrate.c), and
 * the decision handle (replan.c).  Internal; the public API is the replan
 * section of arachne.h, the rules are in docs/replan.md. */
#ifndef ARACHNE_REPLAN_H
#define ARACHNE_REPLAN_H

#include "plan.h"

/* Link kinds of a migration entry (same numbers as the public values of
 * ARACHNE_MIGRATION_LINK). */
enum { AR_LINK_INTRA = 0, AR_LINK_INTER = 1, AR_LINK_CHECKPOINT = 2 };

/* One transfer: the state of layers [first, end) (-1 = embedding, blocks =
 * head) that new rank dst_rank receives from old rank src_rank (-1: no
 * remaining GPU holds it). */
typedef struct ar_mig_entry {
    int src_rank, dst_rank;   /* global ranks (old plan, new plan) */
    int first, end;           /* layer range */
    int src_node, dst_node;   /* nodes of the NEW cluster (-1 for a checkpoint) */
    int link;                 /* AR_LINK_* */
    double bytes, seconds;
} ar_mig_entry;

typedef struct ar_migration {
    ar_mig_entry *e;
    int n, cap;
    double bytes;        /* sum of e[].bytes */
    double max_rank_s;   /* transfer time of the slowest receiving rank */
    int slowest_rank;    /* its global rank in the new plan; -1 when nothing moves */
} ar_migration;

/* Maps the nodes of the cluster recorded in a plan (plan->cluster_spec, a
 * compact string) onto the nodes of `to`: (GPU type, index among that
 * type's nodes) names a node in both.  node_map[i] (malloc'd, *nold
 * entries) is the node of `to` that old node i became, or -1 when it left;
 * node_gpus[i] the GPUs old node i had.  ARACHNE_E_PARSE when the string
 * cannot be read. */
int ar_replan_node_map(const char *old_spec, const arachne_cluster *to, int **node_map, int **node_gpus,
                       int *nold);

/* The migration from `old` to `newp`: old_node[i] is the node in cm's
 * (new) cluster of old->ranks[i], or -1 when that GPU left (its state can
 * not be sent).  newp is bound to cm's cluster.  Bytes: weights
 * (setup.weight_bytes) + optimizer state (setup.optim_bytes) per parameter
 * of each rank's shard that no old rank on the same GPU held.  Pure read of
 * the inputs; out is filled (free with ar_migration_free). */
int ar_migration_compute(const arachne_cost_model *cm, const arachne_plan *old, const int *old_node,
                         const arachne_plan *newp, ar_migration *out);
void ar_migration_free(ar_migration *m);

#endif
