/* reconcile: one reconcile of one RedisCluster, from the objects to the result.
 *
 * plan_compute() decides, exec_plan() writes; this module adds what every reconcile
 * shares: a reconcileID, the controller-runtime metrics and the log lines that carry
 * controller, namespace, name and reconcileID.
 */
#ifndef RDC_RECONCILE_H
#define RDC_RECONCILE_H

#include "executor.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

#define RECONCILE_CONTROLLER "rediscluster"
#define RECONCILE_TAKE_BACK_REQUEUE_NS (INT64_C(1000000000)) /* after a child was taken back */
#define RECONCILE_DIAGNOSIS_AFTER_NS (INT64_C(10000000000))  /* see reconcile_run */

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
} reconcile_outcome_t;

/* Reconcile rc given its observed children (each NULL when the cache has none). A child
 * the caller has not is first read from the API by name (GET; 404 = absent), since the
 * cache only holds labelled objects and an unlabelled one of that name must not look
 * absent to the plan (plan.h, OWNERSHIP); a failed read is RECONCILE_ERROR. With
 * x->batch and x->exists (workerd's worker) the absent children are read only when the
 * memo names one of them (existsmemo.h): when a create (POST) meets 409 AlreadyExists
 * the name is kept and, in the same reconcile, the absent children are read, the plan
 * computed again from them and run (once; a second 409 is RECONCILE_REQUEUE, and the
 * next reconcile reads); a read answering 404, or the child in the cache, forgets the
 * name. A write the
 * API refuses (4xx other than 409/429, a non-retryable 5xx) is put into the status
 * (plan_write_failed) before RECONCILE_ERROR is returned; but an apply of a child refused
 * with 422 is first taken back (plan_take_back: replace, or recreate the Service), and
 * when that succeeds the result is RECONCILE_REQUEUE_AFTER 1 s (the rest of the plan is
 * the next reconcile's). When the first plan asks (plan_storage_class_to_check,
 * plan_wants_diagnosis) the StorageClass, or the StatefulSet's pods and the Events of the
 * StatefulSet and of its first pod not Ready, are read and the plan is computed again with
 * them (plan_compute_observed); a healthy, Running cluster costs no read. The StorageClass
 * answer is kept 30 s per process (reconcile_forget_reads forgets it); the
 * diagnosis is read only once the StatefulSet is RECONCILE_DIAGNOSIS_AFTER_NS old (pods
 * merely starting need no explanation), and a reconcile that put it off ends in
 * RECONCILE_REQUEUE_AFTER the rest of that time at most, so it is read when due. With
 * x->batch (a worker), the diagnosis reads are kept 10 s per process while the
 * StatefulSet's resourceVersion stays the same (readmemo.h): a converging cluster's
 * reconciles do not LIST them again at each change of a pod. Its LISTs ask for
 * resourceVersion "0" (the API server's watch cache). dry_run != NULL prints the plan
 * as JSON there and writes nothing. Never fails on bad input: a broken object gives a
 * logged error and RECONCILE_DONE (a fix arrives as a new event).
 * seen (may be NULL) carries the rest of the work item for REPLICATION (plan.h): the
 * pods, the observation and the role Services (each looked up by name like the other
 * children when absent). With spec.auth, the Secret and the password record
 * <name>-redis-auth are read (GET) on every reconcile (plan.h, AUTH); the passwords go
 * to the executor and nowhere else. */
void reconcile_run(const exec_ctx_t *x, const json_object *rc, const json_object *cm,
                   const json_object *svc, const json_object *sts, const plan_observed_t *seen,
                   FILE *dry_run, reconcile_outcome_t *out);

/* The Redis password of rc (spec.auth.secretRef {name, key (default "password")}): GET
 * the Secret and decode the key. Returns 0 with *password a new string the caller frees
 * (NULL when rc has no spec.auth), or -1 with err (Secret or key missing, not base64).
 * The password never appears in err. */
int reconcile_read_password(kube_client_t *client, const json_object *rc, char **password, kube_error_t *err);

/* reconcile_run with every observed child, the PodDisruptionBudget included (reconcile_run
 * passes it as absent, so it is read by name like any child the cache has not). */
void reconcile_run_children(const exec_ctx_t *x, const json_object *rc, const plan_children_t *kids,
                            const plan_observed_t *seen, FILE *dry_run, reconcile_outcome_t *out);

/* The same reconcile in three steps, for a caller that runs the plan itself (workerd's
 * loop, several keys in flight: executor.h ASYNC). reconcile_begin reads and plans as
 * reconcile_run_children does; when that already decides the outcome (a failed read, a
 * plan error, dry_run, out of memory) it fills out, logs and counts, and returns NULL.
 * Otherwise it returns the job (x is copied; rc and what kids and seen point to are
 * borrowed until the end): run reconcile_job_plan with reconcile_job_ctx (both owned by
 * the job), then reconcile_end with the run's result, which does what follows a plan
 * (take_back, the status of a refused write: blocking requests, rare), fills out, logs,
 * counts, frees the job and sets *job_p to NULL. reconcile_cancel frees a job whose run
 * was abandoned (counted as fenced). */
typedef struct reconcile_job reconcile_job_t;
reconcile_job_t *reconcile_begin(const exec_ctx_t *x, const json_object *rc, const plan_children_t *kids,
                                 const plan_observed_t *seen, FILE *dry_run, reconcile_outcome_t *out);
const exec_ctx_t *reconcile_job_ctx(const reconcile_job_t *j);
const plan_t *reconcile_job_plan(const reconcile_job_t *j);
void reconcile_end(reconcile_job_t **job_p, exec_result_t r, size_t failed, const kube_error_t *err,
                   reconcile_outcome_t *out);
void reconcile_cancel(reconcile_job_t **job_p);

/* Forget the StorageClass answers and the diagnosis reads kept (tests). */
void reconcile_forget_reads(void);

/* The word used on the wire and in metrics: "done", "requeue_after", "requeue", "error",
 * "fenced". */
const char *reconcile_result_name(reconcile_result_t r);

/* Make a new random reconcile ID (36 characters, UUID v4 form) into out[37]. */
void reconcile_new_id(char out[37]);

#endif
