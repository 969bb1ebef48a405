/* status_policy: whether a changed status is written now or a little later. Pure: no
 * I/O, no clock (the time comes in as an argument).
 *
 * plan computes a RedisCluster's status from scratch on every reconcile and plans its
 * write when it differs from the observed one (plan.h, STATUS). A converging cluster
 * changes its counts once per pod (replicas 0..3, readyReplicas 0..3, the "k/n replicas
 * ready" message, status.nodes as pods get IPs and roles), and each of those reconciles
 * would write the status once more: 3-4 writes per cluster that tell nothing new but a
 * number. So two kinds of difference are told apart:
 *
 *   WHAT IT SAYS (written at once): the phase, observedGeneration, the selector, the
 *     primary, any status field this module does not know, or of any condition its
 *     status, reason, lastTransitionTime or observedGeneration; the message of a
 *     condition other than Ready and Progressing; a condition that appears or goes.
 *   HOW FAR IT GOT (progress): replicas, readyReplicas, ready, status.nodes, and the
 *     messages of Ready and Progressing (which carry the counts).
 *
 * A difference that is only progress is HELD while the cluster converges (the computed
 * and the observed phase both Pending or both Scaling, Progressing True in both) and the
 * last progress write is recent: the observed Ready condition's lastUpdateTime (when its
 * message, the count, was last written; plan sets it) is less than
 * STATUS_POLICY_COALESCE_NS ago. Held: nothing is written and the caller looks again
 * when the window ends, so the latest count is written at most one window late, and at
 * most one progress write per window and cluster is made. The window is plan's requeue
 * of a cluster that is not Running (PLAN_REQUEUE_NOT_READY_NS, 10 s): a held count costs
 * no reconcile that would not have come anyway. A new cluster's first rollout (computed
 * and observed both Pending with Progressing=True reason Creating, plan_status.c CREATING) has
 * a longer window, STATUS_POLICY_CREATING_NS: its progress is the StatefulSet's, which
 * `kubectl get sts` shows live, and a cluster that converges within it writes its
 * status twice (Pending, Running: the minimum, bench/README.md). A slower first rollout
 * writes its count once per that window; a stuck one is diagnosed all the same
 * (status_policy_diagnosis_due) and its cause, being what the status says, is written
 * at once. Running, Failed and every
 * change of what the status says are never held, so the final status is written by the
 * reconcile that sees it. A status without lastUpdateTime on Ready (written by an older
 * operator, or unreadable) is written at once.
 */
#ifndef RDC_WORKERD_STATUS_POLICY_H
#define RDC_WORKERD_STATUS_POLICY_H

#include <json-c/json.h>
#include <stdint.h>

#define STATUS_POLICY_COALESCE_NS (INT64_C(10) * 1000000000) /* one progress write per 10 s */
#define STATUS_POLICY_CREATING_NS (INT64_C(60) * 1000000000) /* ... per 60 s in the first rollout */

/* 0 when the computed status (differing from observed: the caller checked) is to be
 * written now; else how many nanoseconds to hold it (1..STATUS_POLICY_COALESCE_NS), per
 * the rules above. observed may be NULL or not an object (then 0). now_wall_ns is the
 * wall-clock time plan works with. Inputs are only read. */
int64_t status_policy_hold_ns(const json_object *computed, const json_object *observed, int64_t now_wall_ns);

/* 1 when the counts the observed status records (replicas, readyReplicas; absent = 0)
 * are the StatefulSet's (sts_replicas, sts_ready), else 0: the cluster moved since the
 * status last told them (a pod created, gone, Ready or not since), and the write that
 * tells it is due or held. A diagnosis (plan.h, DIAGNOSIS) is for a cluster that does
 * not move; one that does is not read for. Inputs are only read. */
int status_policy_counts_told(const json_object *observed, int64_t sts_replicas, int64_t sts_ready);

/* 1 when a DIAGNOSIS (plan.h) of a cluster not Running is due: the observed status tells
 * the StatefulSet's counts (status_policy_counts_told: the cluster has not moved since),
 * or the write that would tell them is held (held != 0: status_policy_hold_ns said so)
 * and the count the status tells was written at least STATUS_POLICY_COALESCE_NS ago (a
 * count held longer, as in a first rollout, must not keep a stuck cluster from being
 * looked at). Else 0: the cluster moved, and is looked at again when the write that
 * tells it has been made, or at the window's end. Inputs are only read. */
int status_policy_diagnosis_due(const json_object *observed, int64_t sts_replicas, int64_t sts_ready, int held,
                                int64_t now_wall_ns);

/* 1 when the only differences between computed and observed are progress (above),
 * whatever the phase; 0 otherwise (also when observed is not an object). */
int status_policy_progress_only(const json_object *computed, const json_object *observed);

#endif
