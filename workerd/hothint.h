/* hothint: what a finished reconcile tells observerd of the cluster's probe cadence
 * (common/proto.h HOT, observerd/cadence.h, docs/observer.md "Cadence"). Pure.
 *
 * A cluster is hot while the operator acts on its Redis and waits for what Redis does
 * next: a restarted pod answering, a replica's link coming up, a role handed over. Then
 * observerd probes it every ~100 ms rather than every second, so each step of a rolling
 * restart, a switchover or a failover follows the last by a probe, not by a second.
 * After a plan that ran to its end, of a Replication cluster:
 *   HOT      the plan sent a Redis command (PLAN_REDIS: a repoint, a promotion, a
 *            FAILOVER, a CONFIG SET), deleted a pod (PLAN_DELETE of pods: a rollout
 *            step), or asks to look again within PLAN_REQUEUE_SWITCHOVER_NS (a rollout or
 *            a handover under way, or an observation older than its last command:
 *            FRESHNESS); for HOTHINT_MS, which outlasts that requeue, so a
 *            cluster stays hot from one step to the next and turns cold by itself when
 *            the worker stops saying it;
 *   COLD     anything else: the step is done, every second again at once;
 *   NONE     Standalone (no replication to wait for); Cluster mode (Redis Cluster
 *            fails over by itself, and its observation grows with the square of the
 *            pods: ten a second of them is not free; its slot moves requeue every
 *            100 ms anyway); no plan (an error, a fenced item): nothing is said, and a
 *            hint said before runs out by itself.
 */
#ifndef RDC_WORKERD_HOTHINT_H
#define RDC_WORKERD_HOTHINT_H

#include "plan.h"
#include "rdc_spec.h"

#include <stdint.h>

#define HOTHINT_MS 5000

typedef enum { HOTHINT_NONE = 0, HOTHINT_COLD, HOTHINT_HOT } hothint_t;

/* The hint after a plan with these facts: mode the spec's; acted 1 when it has a
 * PLAN_REDIS or a PLAN_DELETE of a pod; requeue_ns its requeue (0: none). */
hothint_t hothint_decide(rdc_mode_t mode, int acted, int64_t requeue_ns);

/* hothint_decide over plan (NULL: HOTHINT_NONE). */
hothint_t hothint_of(rdc_mode_t mode, const plan_t *plan);

#endif
