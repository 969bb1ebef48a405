/* cadence: how often observerd probes a cluster's pods (docs/observer.md, "Cadence").
 * Pure: no I/O, no clock; times are the loop clock's nanoseconds, given by the caller.
 *
 * Every pod is probed every --probe-interval (1 s). A cluster the operator is acting on
 * (a rollout step, a switchover, a repoint, a failover under way) is "hot": workerd says
 * so with HOT key for_ms (common/proto.h) after each reconcile of it, and while it is hot
 * its pods are probed every OBSERVE_HOT_INTERVAL_MS as well, so that what the step waits
 * for (a restarted server answering, a replica's link up, a role handed over) is seen
 * within ~100 ms instead of within a second. The state is one deadline per cluster,
 * hot_until (0: cold):
 *   - a HOT hint at now sets it to now + for_ms (for_ms cut to PROTO_HOT_MAX_MS), or to
 *     0 (cold at once) when for_ms is 0: each hint replaces the last, the worker holding
 *     the key knows best;
 *   - the cluster is hot while now < hot_until, and cold by itself afterwards: a worker
 *     that dies (or a lost "done" hint) leaves the cluster hot for for_ms at most;
 *   - a pod of a hot cluster is due for a fast probe when none is in flight and its last
 *     probe began half of OBSERVE_HOT_INTERVAL_MS ago or more (or it was never probed):
 *     the timer that asks runs every OBSERVE_HOT_INTERVAL_MS, and the probe it started
 *     last time began a little after that timer fired, so a whole interval would skip
 *     every other turn; half of one still skips a pod just probed by the 1 s tick or
 *     by a command record (docs/failover.md).
 */
#ifndef RDC_OBSERVERD_CADENCE_H
#define RDC_OBSERVERD_CADENCE_H

#include <stdint.h>

#define OBSERVE_HOT_INTERVAL_MS 100

/* The deadline after a HOT hint of for_ms received at now: now + min(for_ms,
 * PROTO_HOT_MAX_MS), or 0 (cold) when for_ms <= 0. */
int64_t cadence_hint(int64_t now_ns, int64_t for_ms);

/* 1 when a cluster with deadline hot_until is hot at now, else 0. */
int cadence_hot(int64_t hot_until_ns, int64_t now_ns);

/* 1 when a pod of a cluster with deadline hot_until is due for a fast probe at now: the
 * cluster hot, no probe of the pod in flight (busy 0), and its last probe began at
 * last_probe_ns (0: never) OBSERVE_HOT_INTERVAL_MS / 2 or more ago; else 0. */
int cadence_due(int64_t hot_until_ns, int64_t now_ns, int busy, int64_t last_probe_ns);

#endif
