/* executor: the thin shell that carries out a plan against the API server.
 *
 * Each action is one request, made in the plan's order as STAGES (below) allow; the
 * first failure stops the rest (the key is retried with backoff, and the next plan starts
 * from what was done). NotFound while removing the finalizer or writing the status of an
 * object that is being deleted counts as success: the object is gone, which is what
 * deletion wanted. Events are recorded after the action they report has succeeded: they
 * are only queued in x->recorder and go out asynchronously, aggregated (recorder.h), so
 * no write of the plan ever waits for an Event (without a recorder they are not
 * recorded; exec_plan gives itself one). Before every write the fence is asked whether
 * this process may still write (it leads, under the epoch the work was dispatched with);
 * when it says no, nothing more is written.
 *
 * PLAN_REPLACE (PUT with the observed resourceVersion) and PLAN_DELETE (preconditions uid
 * and resourceVersion) come only from plan_take_back; a 409 on either is EXEC_CONFLICT
 * (the object changed since it was observed), and NotFound on PLAN_DELETE is success.
 *
 * PLAN_REDIS is one command to the pod's Redis (redisexec.h: connect, TLS with
 * x->redis_tls when set (the pod's certificate checked for <pod>.<x->redis_tls_domain>),
 * AUTH with x->redis_password when set, the command, each bounded by
 * REDISEXEC_TIMEOUT_NS; x->redis_secrets' tokens replaced on the wire; none at all
 * while x->redis_refused says why), fenced
 * like a request; a failure (unreachable, an error reply) is EXEC_ERROR with err naming
 * the pod and the reply, never the password. A REPLICAOF the node already follows (INFO
 * replication, asked first) is skipped with its events: the observation in a work item
 * may predate a command sent a moment ago.
 *
 * Every request is one kube_call (common/kube_call.h) and is retried by the one rule
 * (common/kube_retry.h), as the blocking client retries: the idempotent writes (PUT,
 * DELETE, the server-side applies of children and status) on 429, 503, 504, a 5xx
 * carrying Retry-After and a broken transfer; PLAN_CREATE (a POST) and the merge patches
 * of the finalizer only when the server cannot have acted (429, no connection); a 409 is
 * never retried by the request: it is the reconcile's conflict, EXEC_CONFLICT (a
 * create's 409 AlreadyExists too: the next reconcile observes the object).
 *
 * The memo (optional, one per worker process) remembers the last status this process
 * wrote for each RedisCluster (by uid) together with the resourceVersion of the
 * RedisCluster it was computed from. A status write computed again from that same
 * resourceVersion, with the same content (lastTransitionTimes aside), is skipped with
 * its events: the API already has it, and the work item only carried a RedisCluster
 * older than our own write (a retry dispatched before the watch delivered it). Any newer
 * RedisCluster is compared by the plan as usual. (Repeated Events are aggregated by the
 * recorder, recorder.h.)
 */
#ifndef RDC_EXECUTOR_H
#define RDC_EXECUTOR_H

#include "existsmemo.h"
#include "kube_client.h"
#include "loop.h"
#include "loop_curl.h"
#include "plan.h"
#include "recorder.h"
#include "redisexec.h"

#define EXEC_RV_MAX 64 /* exec_ctx_t rc_written_rv's size */
#define EXEC_RC_EARLIER_MAX 3 /* exec_ctx_t rc_earlier_rv's entries */

typedef enum {
    EXEC_OK = 0,      /* every action done */
    EXEC_CONFLICT,    /* 409 on a write: requeue at once, the next read is fresher */
    EXEC_ERROR,       /* any other failure: requeue with backoff */
    EXEC_FENCED       /* leadership lost: stop, someone else owns the key now */
} exec_result_t;

/* May this process write now? Returns 1 or 0. */
typedef int (*exec_fence_fn)(void *user);

typedef struct exec_memo exec_memo_t;

/* A new, empty memo; NULL when out of memory. */
exec_memo_t *exec_memo_new(void);

/* Free the memo and set *memo_p to NULL. NULL is fine. */
void exec_memo_destroy(exec_memo_t **memo_p);

typedef struct {
    kube_client_t *client;
    exec_memo_t *memo;          /* NULL = remember nothing */
    exec_fence_fn fence;        /* NULL = always allowed (workerd --once) */
    void *fence_user;
    /* Called now and then by a long synchronous step (a slot move: seconds) so that the
     * worker's liveness is told meanwhile (worker.c: a heartbeat to informerd); NULL none. */
    void (*keepalive)(void *user);
    void *keepalive_user;
    const char *reconcile_id;   /* for log lines */
    const char *instance;       /* reportingInstance of Events (the host name) */
    const char *redis_password; /* AUTH for PLAN_REDIS; NULL = none (never logged) */
    const char *redis_old_password; /* during a rotation: the one Redis had (docs/replication.md) */
    const redis_tls_t *redis_tls;   /* spec.tls's client settings for PLAN_REDIS; NULL = plain text */
    const char *redis_tls_domain;   /* "<name>.<namespace>.svc": a pod's certificate is checked for
                                       "<pod>.<this>" (redisexec.h) */
    const redisexec_secret_t *redis_secrets; /* more tokens of PLAN_REDIS (ACL users' password
                                                hashes, never logged); redis_n_secrets */
    size_t redis_n_secrets;
    const char *redis_refused;      /* set: every PLAN_REDIS fails with this (spec.tls without
                                       usable settings: "spec.tls: Secret ns/x: ...") */
    recorder_t *recorder;       /* Events asynchronous and aggregated (recorder.h); NULL =
                                 * not recorded (exec_plan and reconcile_run use one of
                                 * their own then) */
    int64_t event_deadline_ns;  /* Events must be sent by then (the leadership's validity
                                 * when the item was taken); 0 = none */
    existsmemo_t *exists;       /* children a create met 409 AlreadyExists on, the only
                                 * absent ones read by name (reconcile.h); NULL = every
                                 * child the cache lacks is read */
    char *rc_written_rv;        /* EXEC_RV_MAX bytes: a run sets it to the resourceVersion
                                 * the API answered its last write of the RedisCluster
                                 * with (finalizer added, status), so informerd can wait
                                 * for it (informerd/ownwrite.h); NULL = not kept */
    char (*rc_earlier_rv)[EXEC_RV_MAX]; /* EXEC_RC_EARLIER_MAX entries: the versions of
                                 * the writes before the last ("" = none; past that many,
                                 * not kept), so informerd knows each write's echo
                                 * (informerd/echo.h); NULL = not kept */
    json_object **rc_written_obj; /* the RedisCluster as the API answered the last write
                                 * of it (the caller's reference, replaced by each; the
                                 * caller puts it); NULL = not kept */
    /* Told each write of a child the API took (PLAN_CREATE, PLAN_APPLY or PLAN_REPLACE of
     * a configmap, service, statefulset or poddisruptionbudget) with the object it
     * answered (borrowed: a reference is the callee's to take), so the caller can plan
     * from what it wrote (workerd/reconcile.c, informerd/echo.h CHILDREN); NULL = not
     * told (and no answer parsed). */
    void (*child_written)(void *user, const plan_action_t *a, json_object *answer);
    void *child_written_user;
} exec_ctx_t;

/* STAGES: the plan's actions in stages, in plan order. A create or apply of a ConfigMap,
 * Service or StatefulSet joins the stage before it when that one is also such child
 * writes, except that a StatefulSet never shares a stage with a ConfigMap write (its
 * pods mount the ConfigMap: it goes once the config is written, as the plan's order
 * promises). Every other action (finalizer, cleanup, replace, delete, status, and any
 * non-HTTP action) is a stage of its own, run alone in order. A stage of several writes
 * is sent at once (HTTP/2 streams over one connection) and waited for as a whole, at most
 * EXEC_MAX_STAGE of them (Cluster mode's shards bring a StatefulSet and a budget each: a
 * longer run of such writes is cut into stages of that many); any
 * failure stops the plan before the next stage, reported as the first failed action in
 * plan order (the stage's other writes are done all the same: they do not depend on
 * each other). Events of the stage's actions follow the whole stage (those of its writes
 * that were made, when another of them failed). How a stage runs: ASYNC below.
 *
 * The end (one past the last action) of the stage that starts at action i. */
#define EXEC_MAX_STAGE 8
size_t exec_stage_end(const plan_t *plan, size_t i);

/* Carry out the plan for the RedisCluster rc (used for Events' involvedObject), to its
 * end: the ASYNC machine on a loop of its own (LOCAL below), for synchronous callers. On
 * failure err describes the failed request and *failed_action is its index. */
exec_result_t exec_plan(const exec_ctx_t *x, const json_object *rc, const plan_t *plan,
                        size_t *failed_action, kube_error_t *err);

/* ASYNC: the plan as a state machine on the worker's loop, so that one worker holds
 * several keys in flight. The stages are those of STAGES: each stage's requests start
 * together on one curl multi per worker (common/loop_curl, HTTP/2 streams over one
 * connection, the multi of every key of the worker, its reads and its Events), and the
 * next stage starts when the stage's last request has ended. Each request is a
 * kube_call: each attempt takes one token of the operator's budget first (a wait for it
 * is a loop timer, never a sleep), a failed one is retried by the one rule above (the
 * server's Retry-After, capped, or a backoff with jitter, with the client's max_retries,
 * within the client's deadline: kube_client_set_deadline, the leadership's), each retry
 * counted in rest_client_request_retries_total. The fence is asked before every stage
 * and before every attempt of every request, retries included; a refusal ends the run
 * EXEC_FENCED at that request. The first failure in plan order ends the run (the
 * stage's other writes are done all the same), reported like exec_plan's. A stage that is
 * not a request (a Redis command, the cleanup hook) runs alone, blocking the loop for its
 * length (a Redis command: REDISEXEC_TIMEOUT_NS per step at most). The auth record (PLAN_AUTH_RECORD) is a request
 * like the others, its body given the password here.
 *
 * exec_plan runs this same machine on a loop of its own to its end. */
typedef struct exec_async exec_async_t;
typedef struct exec_run exec_run_t;

/* A run ended: the result as exec_plan's (failed_action and err only when not EXEC_OK).
 * Called once, from the loop, never from inside exec_run_start. */
typedef void exec_run_done_fn(exec_result_t r, size_t failed_action, const kube_error_t *err, void *arg);

/* A run's outcome as exec_run_keep_outcome keeps it: finished 0 until done was called. */
typedef struct {
    int finished;
    exec_result_t r;
    size_t failed;
    kube_error_t err;
} exec_run_outcome_t;

/* An exec_run_done_fn that stores the outcome in arg, an exec_run_outcome_t, and sets
 * its finished to 1: for a caller that runs the loop until the run has finished. */
void exec_run_keep_outcome(exec_result_t r, size_t failed_action, const kube_error_t *err, void *arg);

/* The worker's request machinery on loop, sending on lc (both borrowed: the worker's one
 * multi, which its reads and Events use too), or on a multi of its own when lc is NULL
 * (loop_curl_open, freed with it). Returns NULL when out of memory. */
exec_async_t *exec_async_new(loop_t *loop, loop_curl_t *lc);

/* The multi it sends on, and its loop (for a caller's reads and recorder on the same
 * connection). */
loop_curl_t *exec_async_curl(const exec_async_t *a);
loop_t *exec_async_loop(const exec_async_t *a);

/* Free it and set *a_p to NULL; every run must have ended or been cancelled. NULL is
 * fine. */
void exec_async_destroy(exec_async_t **a_p);

/* Runs started and not yet ended or cancelled. */
int exec_async_runs(const exec_async_t *a);

/* Start carrying out plan for rc on a; x, rc and plan are borrowed until done is called
 * (or the run is cancelled). Returns the run, or NULL when out of memory (nothing
 * started, done never called). */
exec_run_t *exec_run_start(exec_async_t *a, const exec_ctx_t *x, const json_object *rc, const plan_t *plan,
                           exec_run_done_fn *done, void *arg);

/* Abort a run: its requests in flight are dropped (a write may or may not have been
 * made), done is not called; *run_p = NULL. NULL is fine. */
void exec_run_cancel(exec_run_t **run_p);

/* LOCAL: the ASYNC machine for a synchronous caller (exec_plan, reconcile_run, workerd
 * --once): a loop of its own, an exec_async on a multi of its own and, when x has none,
 * a recorder on that multi whose Events get up to EXEC_LOCAL_FLUSH_NS to go out when it
 * closes.
 *
 *   exec_local_open(&l, x);  start runs on l.a with &l.x;  exec_local_wait(&l, &done);
 *   exec_local_close(&l);
 */
#define EXEC_LOCAL_FLUSH_NS (INT64_C(2000000000))
typedef struct {
    loop_t *loop;
    exec_async_t *a;
    recorder_t *rec;  /* its own recorder, or NULL (x had one) */
    exec_ctx_t x;     /* the caller's context with the recorder filled in */
} exec_local_t;

/* Set l up for x (copied). Returns 0, or -1 when out of memory (l left closed). */
int exec_local_open(exec_local_t *l, const exec_ctx_t *x);

/* Run l's loop until *finished is set (or the loop fails). */
void exec_local_wait(exec_local_t *l, const int *finished);

/* Flush l's own recorder (bounded), then free everything; every run must have ended or
 * been cancelled. */
void exec_local_close(exec_local_t *l);

/* Name of a result: "ok", "conflict", "error", "fenced". */
const char *exec_result_name(exec_result_t r);

#endif
