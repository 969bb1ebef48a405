/* plan_cluster: CLUSTER of plan.h: a Cluster-mode RedisCluster's Redis side
 * (docs/cluster-mode.md; workerd/plan*.c only).
 *
 * plan_children plans the shards' StatefulSets and PodDisruptionBudgets; this piece, once
 * every shard has a StatefulSet of ours, builds Cluster mode's input from the work item
 * (cluster_observe.h: the pods, observerd's view of each node, the shard StatefulSets'
 * revisions) and takes cluster_topo.h's decisions: each Redis Cluster command becomes a
 * PLAN_REDIS action on its pod (with an Event per kind: ClusterMeet, ClusterForget,
 * ClusterSlotsAssigned, ClusterReplicate, ClusterFailover), each role label a
 * PLAN_LABEL_POD, the rollout's pod a PLAN_DELETE with its uid as precondition (Event
 * RolledPod); a problem the operator will not solve alone (SlotsUncovered, TwoMasters) is
 * a Degraded finding; while something is under way the plan looks again within
 * PLAN_REQUEUE_SWITCHOVER_NS. What does not fit the plan's room is the next reconcile's.
 *
 * It owns its findings (plan_cluster_t), which the status reads after it: the decisions
 * (status.cluster, ClusterHealthy, and Running only when healthy) and the shards'
 * StatefulSets summed (the counts and the motion of STATUS). */
#ifndef RDC_WORKERD_PLAN_CLUSTER_H
#define RDC_WORKERD_PLAN_CLUSTER_H

#include "cluster_topo.h"
#include "plan_children.h"
#include "plan_internal.h"
#include "plan_observe.h"
#include "slotmove.h"

typedef struct {
    ctopo_input_t *in;      /* what was decided from (NULL: no decision) */
    ctopo_result_t *r;      /* the decisions */
    cn_view_t *views[CTOPO_MAX_PODS]; /* in's views (in->pod[i].view borrows them) */
    plan_sts_view_t view;   /* the shards' StatefulSets summed (present: every one is, and ours) */
} plan_cluster_t;

/* Decide for c (spec mode Cluster), before the children: the layout they keep (c->cluster
 * points at out->r afterwards). Fills *out (free it with plan_cluster_free). Returns 0 (no
 * decision when the spec's layout is out of range), or -1 when out of memory. */
int plan_cluster_decide(const plan_ctx_t *c, plan_cluster_t *out);

/* Plan the decisions out holds, after plan_children found kids: once every shard has a
 * StatefulSet of ours, the commands, the slot move (PLAN_SLOT_MOVE, Events
 * ClusterReshard), labels, the rollout's deletion. Returns 0, or -1 when out of memory. */
int plan_cluster(const plan_ctx_t *c, const plan_kids_t *kids, plan_cluster_t *out);

/* The slot move mv of in as slotmove.h's job for the RedisCluster named cluster (metrics):
 * its source, target, other masters and ranges (as many as the job holds), the default
 * budget, batch_bytes and bytes_per_second (0: no pace) as given; with replicated, the
 * target's replicas and REPLICATED (one must acknowledge, when the shards have replicas
 * and the move names some). Overwrites *job. Pure: plan_move and the simulation's moves
 * (tests/sim/sim_cluster.c) build their jobs with it. */
void plan_cluster_move_job(const ctopo_input_t *in, const ctopo_move_t *mv, const char *cluster,
                           int64_t batch_bytes, int64_t bytes_per_second, int replicated, slotmove_job_t *job);

/* Free what plan_cluster allocated; *x is left empty. */
void plan_cluster_free(plan_cluster_t *x);

#endif
