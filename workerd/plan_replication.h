/* plan_replication: REPLICATION, FAILOVER and SWITCHOVER of plan.h for spec.mode
 * Replication: the role labels, the Redis commands and the pod deletions topology.h
 * decides, in the order that never labels two pods primary at once (workerd/plan*.c
 * only). The decisions themselves are topology.h's; this piece turns them into actions
 * and events. */
#ifndef RDC_WORKERD_PLAN_REPLICATION_H
#define RDC_WORKERD_PLAN_REPLICATION_H

#include "plan_internal.h"
#include "topology.h"

/* Decide the topology into *topo (topo_compute_switchover, from the observed status, the
 * work item's pods and observation, and sts: the observed StatefulSet when ours, else
 * NULL) and plan what it says: role labels taken, Redis commands (none without an
 * observation, nor while rotating: plan_auth.h), role label given, a pod deletion; the
 * Degraded findings NoFailoverCandidate and NoSwitchoverCandidate; the requeue of a
 * failover's recheck and of a switchover under way. The status fields (status.primary,
 * nodes, ReplicationHealthy, an election's record) are plan_status.h's, from *topo.
 * Returns 0, or -1 when out of memory. */
int plan_replication(const plan_ctx_t *c, const json_object *sts, int rotating, topo_t *topo);

#endif
