/* plan_scale: SCALE-IN in Replication mode (plan.h SCALE-IN; docs/replication.md,
 * "Scaling in") (workerd/plan*.c only).
 *
 * spec.size may shrink (unless spec.scaleDownPolicy is Forbid). Pods go from the highest
 * ordinal, by lowering the StatefulSet's replicas; the primary never goes: while
 * status.primary, or the old primary of a recorded switchover (status.switchoverFrom),
 * is at an ordinal >= spec.size, the StatefulSet keeps the replicas it has and the
 * topology hands the primary role to a pod that stays (topology.h SCALE-IN, the planned
 * switchover's FAILOVER: writes paused until the new primary has every one), and only
 * then are the replicas lowered. Standalone lowers them at once (no role to hand over). */
#ifndef RDC_WORKERD_PLAN_SCALE_H
#define RDC_WORKERD_PLAN_SCALE_H

#include "plan_internal.h"

/* The replicas the StatefulSet keeps while the primary is handed over (its observed
 * spec.replicas, more than spec.size), or 0 when it may follow spec.size: not
 * Replication mode, no observed StatefulSet (sts NULL), no decrease, or the primary
 * (status.primary, <name>-0 when unset) and any switchover's old primary below spec.size.
 * Pure: only reads c->rc, c->spec, c->name and sts. */
int plan_scale_in_hold(const plan_ctx_t *c, const json_object *sts);

#endif
