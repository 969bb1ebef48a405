/* crashcond: the ReconcileCrashed condition, the quarantine's record on the object itself.
 *
 * informerd quarantines a key whose reconcile crashed workers CRASHES_TO_QUARANTINE times
 * in a row and says so on the RedisCluster with a condition it owns (server-side apply
 * under its own field manager, CRASHCOND_FIELD_MANAGER):
 *
 *   {type: ReconcileCrashed, status: "True", reason: WorkerCrashed, message,
 *    lastTransitionTime: when the quarantine began, observedGeneration: the spec it
 *    crashed on}
 *
 * The condition is what makes the quarantine outlive informerd: a new informerd that
 * finds it True, for the current generation and younger than the quarantine window,
 * holds the key back for the rest of the window instead of letting it crash workers
 * three more times. When the key is reconciled again without a crash (the window ended
 * or the spec changed), the condition turns False with reason ReconcileCompleted, so
 * `kubectl get rdc -o yaml` never shows a quarantine that is over.
 *
 * Pure functions: no I/O, no clock reads.
 */
#ifndef RDC_CRASHCOND_H
#define RDC_CRASHCOND_H

#include <json-c/json.h>
#include <stdint.h>

#define CRASHCOND_TYPE "ReconcileCrashed"
#define CRASHCOND_FIELD_MANAGER "rediscluster-operator-quarantine"
#define CRASHCOND_REASON_CRASHED "WorkerCrashed"
#define CRASHCOND_REASON_COMPLETED "ReconcileCompleted"

/* 1 when rc's status carries ReconcileCrashed with status "True", else 0. When 1, *since_ns
 * is its lastTransitionTime (wall clock ns; 0 when absent or unparsable) and *generation its
 * observedGeneration (-1 when absent). Either pointer may be NULL. */
int crashcond_is_true(const json_object *rc, int64_t *since_ns, int64_t *generation);

/* How much of a quarantine of window_ns is left at wall time now_ns according to rc's
 * condition: > 0 only when the condition is True, names rc's metadata.generation, and began
 * less than window_ns ago (a lastTransitionTime in the future counts as now, so a skewed
 * clock cannot stretch it past window_ns). 0 otherwise. */
int64_t crashcond_quarantine_left_ns(const json_object *rc, int64_t now_ns, int64_t window_ns);

/* The server-side apply body (JSON, to PATCH .../redisclusters/<name>/status with
 * fieldManager=CRASHCOND_FIELD_MANAGER&force=true) that sets the condition on rc: crashed
 * 1 for True/WorkerCrashed, 0 for False/ReconcileCompleted; message as given;
 * lastTransitionTime now_ns; observedGeneration rc's metadata.generation (left out when rc
 * has none). NULL when rc has no name or namespace, or out of memory. The caller frees the
 * string with free(). */
char *crashcond_apply_body(const json_object *rc, int crashed, const char *message, int64_t now_ns);

#endif
