/* reconcile: one reconcile of one RedisCluster, from the objects to the result.
 *
 * plan_compute() decides, the executor writes (executor.h ASYNC); this module reads what
 * the plan needs and adds what every reconcile shares: the controller-runtime metrics
 * and the log lines that carry controller, namespace, name and reconcileID.
 */
#ifndef RDC_RECONCILE_H
#define RDC_RECONCILE_H

#include "executor.h"
#include "hothint.h"
#include "reconcile_sm.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

#define RECONCILE_CONTROLLER "rediscluster"
#define RECONCILE_TAKE_BACK_REQUEUE_NS (INT64_C(1000000000)) /* after a child was taken back */
#define RECONCILE_DIAGNOSIS_AFTER_NS (INT64_C(10000000000))  /* see reconcile_start */
#define RECONCILE_DEADLINE_NS (INT64_C(300) * 1000000000)     /* a job's default deadline */
#define RECONCILE_CHILD_WRITES_MAX 6 /* reconcile_outcome_t child_written's entries */

typedef enum {
    RECONCILE_DONE = 0,     /* converged or nothing to do: forget the key */
    RECONCILE_REQUEUE_AFTER,/* fine, look again after requeue_after_ns */
    RECONCILE_REQUEUE,      /* conflict: look again at once with fresh objects */
    RECONCILE_ERROR,        /* failed: back off and retry */
    RECONCILE_FENCED        /* leadership lost: hand the key back, no failure counted */
} reconcile_result_t;

typedef struct {
    reconcile_result_t result;
    int64_t requeue_after_ns;
    char message[1024];     /* the error, for RECONCILE_ERROR */
    char rc_written_rv[EXEC_RV_MAX]; /* the RedisCluster's resourceVersion after this
                                      * reconcile's last write of it; "" when it wrote
                                      * none (DONE tells informerd: informerd/ownwrite.h) */
    char rc_earlier_rv[EXEC_RC_EARLIER_MAX][EXEC_RV_MAX]; /* its writes before the last
                                      * ("" = none; DONE tells them too: informerd/echo.h) */
    int rc_write_quiet;     /* 1: the plan of the RedisCluster and its children as its
                             * writes left them has nothing to do, so the watch's echoes of
                             * its writes need no reconcile (DONE says so: informerd/echo.h) */
    struct {
        const char *kind;   /* "ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget" */
        char name[254];
        char rv[EXEC_RV_MAX]; /* the version the API answered the write with */
    } child_written[RECONCILE_CHILD_WRITES_MAX]; /* when quiet: the children it wrote, whose
                             * echoes need no reconcile either (informerd/echo.h CHILDREN) */
    size_t n_child_written;
    int plans;              /* plan computations (one per input change: see PLAN below) */
    hothint_t hint;         /* what to tell observerd of the cluster's probe cadence
                             * (hothint.h; HOTHINT_NONE unless a plan ran to its end) */
} reconcile_outcome_t;

/* Reconcile rc given its observed children (each NULL when the cache has none), as a job
 * on the worker's loop: its reads and its writes go out on the worker's one curl multi
 * (exec_async_curl(a), shared with its Events: over TLS one HTTP/2 connection), and the
 * loop is never blocked by a request (only a Redis command of the plan blocks it, for its
 * length, see executor.h).
 *
 * A job is a state machine (reconcile_sm.h: the states, events and the table). Every
 * callback feeds one event to one function that alone changes the job's state and logs
 * each transition at debug ("reconcile step": from, event, to, action, with the
 * reconcileID, namespace and name), so a RedisCluster can be followed from
 * reconcile_start to its outcome. The states, each a set of requests at once (reads.h,
 * executor.h ASYNC):
 * RS_READ: each child the cache lacks is read from the API by name (GET; 404 = absent),
 *    since the cache only holds labelled objects and an unlabelled one of that name must
 *    not look absent to the plan (plan.h, OWNERSHIP); a failed read is RECONCILE_ERROR.
 *    With x->exists (workerd's worker) the absent children are read only when the memo
 *    names one of them (existsmemo.h). With spec.auth, the Secret and the password record
 *    <name>-redis-auth are read at the same time, on every reconcile (plan.h, AUTH); the
 *    passwords go to the executor and nowhere else.
 * RS_PLAN: plan_compute, once per input change: after RS_READ, and again after
 *    RS_READ_MORE only when it brought an input (outcome.plans counts them). When that
 *    plan asks (plan_storage_class_to_check, plan_wants_diagnosis, plan_wants_claims,
 *    plan_restore_backup_to_read), RS_READ_MORE reads the StorageClass, what the
 *    diagnosis needs, the claims and the RedisBackup a new cluster restores from (GET;
 *    404: absent; a failure is handed to the plan, which says it) at once; a healthy,
 *    Running cluster costs no read. With seen (a worker: the pods of informerd's cache) the pods are not read,
 *    and of the Events only those plan_diagnosis_reads names (a cluster converging as it
 *    should reads none); without, the StatefulSet's pods and its Events, then (event
 *    EXPLAIN) the Events of its first pod not Ready. The StorageClass answer
 *    is kept 30 s per process (reconcile_forget_storage_classes forgets it); the
 *    diagnosis is read only once the StatefulSet is RECONCILE_DIAGNOSIS_AFTER_NS old (pods
 *    merely starting need no explanation), and a reconcile that put it off ends in
 *    RECONCILE_REQUEUE_AFTER the rest of that time at most, so it is read when due. In
 *    a worker (x->exists set) the diagnosis reads are kept 10 s per process under the
 *    StatefulSet's resourceVersion and the RedisCluster's (readmemo.h;
 *    reconcile_forget_storage_classes forgets them too): a cluster that does not move is
 *    not read for again at every pod change, and no plan rests on reads older than the
 *    status it would change (another worker's write makes them stale).
 * RS_RUN: exec_run_start. When a create (POST) meets 409 AlreadyExists (with x->exists)
 *    the name is kept and, in the same reconcile, the job goes back to RS_READ once
 *    (event RUN_EXISTS, action REPLAN; a second 409 is RECONCILE_REQUEUE, and the next
 *    reconcile reads), from the RedisCluster with the finalizer when the first run added
 *    it (not added again with a stale resourceVersion); a read answering 404, or the
 *    child in the cache, forgets the name.
 * RS_TAKE_BACK, RS_READ_FRESH, RS_REPORT: a write the API refuses (4xx other than
 *    409/429, a non-retryable 5xx) is put into the status (the RedisCluster read again,
 *    plan_write_failed, run) before RECONCILE_ERROR is returned; but an apply of a child
 *    refused with 422 is first taken back (plan_take_back: replace, or recreate the
 *    Service), and when that succeeds the result is RECONCILE_REQUEUE_AFTER 1 s (the rest
 *    of the plan is the next reconcile's).
 * RS_FINISH: the outcome is delivered on the next turn of the loop. A job still waiting
 *    for a request at its deadline (RECONCILE_DEADLINE_NS after the start, or
 *    reconcile_set_deadline's) drops what is in flight and ends in RECONCILE_ERROR saying
 *    so: no key is held for ever by a reconcile that cannot end.
 *
 * dry_run != NULL prints the plan as JSON there and writes nothing. Never fails on bad
 * input: a broken object gives a logged error and RECONCILE_DONE (a fix arrives as a new
 * event). seen (may be NULL) carries the rest of the work item for REPLICATION (plan.h):
 * the pods, the observation and the role Services (each read by name like the other
 * children when absent).
 *
 * x is copied; rc, what kids and seen point to, and dry_run are borrowed until done is
 * called (or the job cancelled). done is called once, from the loop, never from inside
 * reconcile_start, with the outcome; the job is freed by then (it logs the "reconciled"
 * line and counts the controller-runtime metrics first). Returns NULL when out of memory
 * (nothing started, done never called). */
typedef struct reconcile_job reconcile_job_t;
typedef void reconcile_done_fn(const reconcile_outcome_t *out, void *arg);
reconcile_job_t *reconcile_start(exec_async_t *a, const exec_ctx_t *x, const json_object *rc,
                                 const plan_children_t *kids, const plan_observed_t *seen, FILE *dry_run,
                                 reconcile_done_fn *done, void *arg);

/* Abandon a job (its requests in flight dropped: a write may or may not have been made;
 * counted as fenced); done is not called; *job_p = NULL. NULL is fine. */
void reconcile_cancel(reconcile_job_t **job_p);

/* Move a job's deadline to deadline_mono_ns (clock_mono_ns's clock; in the past: at once,
 * from the loop). A job that no longer waits for a request is not changed. */
void reconcile_set_deadline(reconcile_job_t *job, int64_t deadline_mono_ns);

/* The job's state (RS_DONE for NULL), for a caller's status (workerd's state file). */
reconcile_state_t reconcile_state(const reconcile_job_t *job);

/* Every transition of every job, as job_event makes it (before its action), to fn (NULL:
 * none): for the unit tests and for debugging a reconcile by its reconcileID. */
typedef void reconcile_trace_fn(const char *reconcile_id, reconcile_state_t from, reconcile_event_t event,
                                reconcile_transition_t t, void *arg);
void reconcile_set_trace(reconcile_trace_fn *fn, void *arg);

/* reconcile_start run to its end on a loop of its own (executor.h LOCAL: with x's
 * recorder, or one of its own whose Events get up to EXEC_LOCAL_FLUSH_NS to go out), for
 * synchronous callers (workerd --once, the unit suites). */
void reconcile_run_children(const exec_ctx_t *x, const json_object *rc, const plan_children_t *kids,
                            const plan_observed_t *seen, FILE *dry_run, reconcile_outcome_t *out);

/* reconcile_run_children with ConfigMap, Service and StatefulSet (the PodDisruptionBudget
 * passed as absent, so it is read by name like any child the cache has not). */
void reconcile_run(const exec_ctx_t *x, const json_object *rc, const json_object *cm,
                   const json_object *svc, const json_object *sts, const plan_observed_t *seen,
                   FILE *dry_run, reconcile_outcome_t *out);

/* The Redis password of rc (spec.auth.secretRef {name, key (default "password")}): GET
 * the Secret (blocking, through the client) and decode the key. Returns 0 with *password
 * a new string the caller frees (NULL when rc has no spec.auth), or -1 with err (Secret
 * or key missing, not base64). The password never appears in err. */
int reconcile_read_password(kube_client_t *client, const json_object *rc, char **password, kube_error_t *err);

/* Forget the StorageClass answers and the diagnosis reads kept (tests). */
void reconcile_forget_storage_classes(void);

/* The word used on the wire and in metrics: "done", "requeue_after", "requeue", "error",
 * "fenced". */
const char *reconcile_result_name(reconcile_result_t r);

/* Make a new random reconcile ID (36 characters, UUID v4 form) into out[37]. */
void reconcile_new_id(char out[37]);

#endif
