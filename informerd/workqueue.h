/* workqueue: client-go's rate-limiting work queue, over an explicit clock.
 *
 * Keys are strings ("namespace/name"). The semantics are client-go's workqueue
 * (k8s.io/client-go/util/workqueue) as controller-runtime uses it:
 *
 *  - add() deduplicates: a key waiting in the queue is queued once.
 *  - A key handed out by get() is "processing" until done(); it is never handed to anyone
 *    else meanwhile. Added while processing, it is marked dirty and queued again by
 *    done() (invariant 1: never two workers on one key, and no change is lost).
 *  - Ready keys are handed out in FIFO order.
 *  - add_after() is the delaying queue: the key is added when its deadline passes; when the
 *    key already waits with a deadline, the earlier deadline wins.
 *  - add_rate_limited() waits MAX(per-key exponential backoff, overall token bucket):
 *    client-go's DefaultControllerRateLimiter, 5 ms * 2^failures capped at 1000 s, and
 *    10 qps with a burst of 100. forget() resets the key's failure count.
 *  - shut_down(): adds are ignored from then on, delayed keys are dropped, get() hands out
 *    what is still queued and then returns NULL.
 *
 * Beyond client-go, for the supervisor's crash handling (invariant 4): abandon() returns
 * the key of a worker that died to the queue with backoff and counts a crash;
 * quarantine() holds a key back (it is still accepted and deduplicated, but not handed
 * out) until a deadline or unquarantine().
 *
 * The queue never reads a clock: every call that depends on time takes now_ns
 * (monotonic ns, nondecreasing across calls), and next_deadline() tells the event loop
 * when the next delayed key or quarantine falls due. All operations are O(1) or
 * O(log n) (hash table for lookup, intrusive FIFO, binary heaps for deadlines), and the
 * per-key state is freed as soon as a key is idle with no failures, crashes or
 * quarantine. Single-threaded, like every daemon's event loop.
 *
 * Metrics (client-go's names, label name=<queue name>): workqueue_depth,
 * workqueue_adds_total, workqueue_queue_duration_seconds,
 * workqueue_work_duration_seconds, workqueue_unfinished_work_seconds,
 * workqueue_longest_running_processor_seconds, workqueue_retries_total.
 */
#ifndef RDC_INFORMERD_WORKQUEUE_H
#define RDC_INFORMERD_WORKQUEUE_H

#include "metrics.h"

#include <stddef.h>
#include <stdint.h>

typedef struct workqueue workqueue_t;

/* client-go's DefaultControllerRateLimiter. */
#define WORKQUEUE_BASE_DELAY_NS (INT64_C(5) * 1000000)         /* 5 ms */
#define WORKQUEUE_MAX_DELAY_NS (INT64_C(1000) * 1000000000)    /* 1000 s */
#define WORKQUEUE_QPS 10.0
#define WORKQUEUE_BURST 100

/* A new, empty queue named `name` (the metrics' name label, e.g. "rediscluster") that
 * registers its metrics in reg (NULL = no metrics), with the default rate limits.
 * Returns NULL when out of memory or name is NULL/empty. */
workqueue_t *workqueue_new(const char *name, metrics_registry_t *reg);

/* Free the queue and every key's state; sets *self_p to NULL. NULL is ignored. Keys
 * returned by get() become invalid. */
void workqueue_destroy(workqueue_t **self_p);

/* Replace the rate limits: per-key backoff base_ns * 2^failures capped at max_ns, and the
 * overall bucket qps/burst (qps <= 0 = no overall limit). Resets the bucket to full;
 * keeps the keys' failure counts. */
void workqueue_set_rate_limits(workqueue_t *q, int64_t base_ns, int64_t max_ns, double qps,
                               int burst);

/* Queue key (copied) now. A key already queued is not queued twice; a key being
 * processed is marked dirty and queued again by done(). Returns 0 (also when the queue is
 * shutting down and the add is ignored), or -1 when key is NULL or empty or memory ran out
 * (queue unchanged). */
int workqueue_add(workqueue_t *q, const char *key, int64_t now_ns);

/* Queue key once delay_ns has passed (delay_ns <= 0: add now). When key already waits
 * with an earlier deadline, that one stays; a later one is not postponed. Counts a retry.
 * Returns 0 (also when ignored for shutdown), or -1 on a bad key or out of memory (queue
 * unchanged). */
int workqueue_add_after(workqueue_t *q, const char *key, int64_t delay_ns, int64_t now_ns);

/* Queue key once delay_ns has passed, as a reconcile's own "look again" (its DONE's
 * requeue_after): as workqueue_add_after (counted as a retry, an earlier deadline stays),
 * except that when key is handed out (get) before that time, for another add, the wait
 * is dropped: that reconcile plans from newer inputs and asks for its own requeue, or for
 * none (client-go's AddAfter would run the stale one too: a reconcile more for every
 * requeue a delta overtook). A wait of another kind already there (add_after's, a
 * backoff) is not dropped by get. Returns as workqueue_add_after. */
int workqueue_requeue_after(workqueue_t *q, const char *key, int64_t delay_ns, int64_t now_ns);

/* Queue key within delay_ns, for a change that need not be seen at once (a child's
 * delta: a burst of them becomes one reconcile). Nothing when key is already queued, or
 * processing and marked to be queued again (that reconcile reads the change); otherwise
 * as workqueue_add_after, but not counted as a retry. When key is handed out (get) before
 * that time, for another add, the delayed add is dropped: the reconcile handed out reads
 * the change. A key already waiting for another reason (a requeue, a backoff) keeps that
 * wait, brought forward to delay_ns when that is sooner. Returns as workqueue_add_after. */
int workqueue_add_soon(workqueue_t *q, const char *key, int64_t delay_ns, int64_t now_ns);

/* Queue key after the rate limiter's delay: MAX(base * 2^failures capped at max, the
 * overall bucket's wait), then count one more failure for key. Returns 0 (also when
 * ignored for shutdown), or -1 on a bad key or out of memory (queue, failure count and
 * bucket unchanged). */
int workqueue_add_rate_limited(workqueue_t *q, const char *key, int64_t now_ns);

/* ---- adds by cause ----
 *
 * Every add may name its cause (a small number of the caller's: a watch event, a
 * requeue...), and the queue says what each add became, once, through the outcome
 * callback: QUEUED when it made the key due (one hand-out more, now or after the
 * reconcile in flight), MERGED when the key was already due or already waited as soon
 * (client-go's dedup: no hand-out of its own), DROPPED when its wait ended without one
 * (a get() overtook an add_soon/requeue_after wait, the queue shut down). A delayed add
 * is told when its wait ends; an add that brings a wait forward takes it over, and the
 * wait it replaced is MERGED. abandon()'s backoff carries cause 0. Adds that fail (-1)
 * are not told. */
typedef enum { WORKQUEUE_QUEUED = 0, WORKQUEUE_MERGED, WORKQUEUE_DROPPED } workqueue_outcome_t;

#define WORKQUEUE_CAUSES_MAX 64 /* causes are 0 .. WORKQUEUE_CAUSES_MAX - 1 */

/* How an add schedules its key: the five add functions below, by name. */
typedef enum {
    WORKQUEUE_NOW = 0,        /* workqueue_add */
    WORKQUEUE_AFTER,          /* workqueue_add_after */
    WORKQUEUE_REQUEUE,        /* workqueue_requeue_after */
    WORKQUEUE_SOON,           /* workqueue_add_soon */
    WORKQUEUE_RATE_LIMITED,   /* workqueue_add_rate_limited (delay_ns unused) */
    WORKQUEUE_UNLESS_COMING   /* now, unless a hand-out of key is coming anyway: it is due, being
                                 processed, or waits with a deadline within delay_ns (MERGED);
                                 for a look that brings no change, a resync: any reconcile of
                                 the key does what this one would */
} workqueue_how_t;

typedef void (*workqueue_outcome_fn)(void *arg, unsigned cause, workqueue_outcome_t outcome);

/* Tell fn(arg, cause, outcome) what each add becomes from now on (NULL: nobody). */
void workqueue_on_outcome(workqueue_t *q, workqueue_outcome_fn fn, void *arg);

/* The add of kind how for cause (< WORKQUEUE_CAUSES_MAX, else -1), with delay_ns for the
 * delayed kinds; exactly as the add function of that kind, which is this with cause 0.
 * Returns as that function. */
int workqueue_put(workqueue_t *q, const char *key, workqueue_how_t how, int64_t delay_ns, unsigned cause,
                  int64_t now_ns);

/* The next ready key, which is now processing; NULL when none is ready (or the queue is
 * shut down and empty). First moves keys whose delay or quarantine has passed at now_ns
 * into the queue. The string is owned by the queue and valid until done() or abandon()
 * of that key. */
const char *workqueue_get(workqueue_t *q, int64_t now_ns);

/* Mark key finished: it may be handed out again, at once when it was added while it was
 * processing. Does not reset its failures (see forget()). Returns 0, or -1 when key is
 * not processing (nothing changes). key may be the string get() returned. */
int workqueue_done(workqueue_t *q, const char *key, int64_t now_ns);

/* Stop tracking key's failures and crashes (call after a successful reconcile), so the
 * next add_rate_limited() waits the base delay again. Unknown keys are ignored. */
void workqueue_forget(workqueue_t *q, const char *key);

/* Number of failures counted for key by add_rate_limited() since the last forget(). */
unsigned workqueue_num_requeues(const workqueue_t *q, const char *key);

/* The worker processing key died (crashed, or stopped answering heartbeats): done() plus
 * add_rate_limited(), and one more crash counted for key. Returns 0, or -1 when key is not
 * processing or memory ran out (nothing changes). */
int workqueue_abandon(workqueue_t *q, const char *key, int64_t now_ns);

/* Crashes counted by abandon() for key since the last forget() or unquarantine(). */
unsigned workqueue_crash_count(const workqueue_t *q, const char *key);

/* Hold key back until until_ns (INT64_MAX = until unquarantine()): it is still accepted
 * by add() and deduplicated, but get() does not hand it out; a key being processed is
 * allowed to finish. A later call replaces the deadline. Returns 0, or -1 on a bad key or
 * out of memory (nothing changes). */
int workqueue_quarantine(workqueue_t *q, const char *key, int64_t until_ns);

/* End key's quarantine now (its spec changed) and reset its crash count; a key that was
 * added meanwhile becomes ready at the end of the queue. Unknown or unquarantined keys
 * are ignored. An expired quarantine ends the same way but keeps the crash count, so a
 * key that crashes again is caught at once. */
void workqueue_unquarantine(workqueue_t *q, const char *key);

/* 1 when key is quarantined (at the last get()/advance() time), else 0. */
int workqueue_is_quarantined(const workqueue_t *q, const char *key);

/* Move keys whose delay or quarantine ended at or before now_ns into the queue. get()
 * does this itself; the event loop calls it after waking so that len() is current. */
void workqueue_advance(workqueue_t *q, int64_t now_ns);

/* Earliest deadline (monotonic ns) of a delayed key or of a quarantine, never earlier
 * than now_ns; INT64_MAX when there is none. Keys already ready are not deadlines: the
 * event loop checks len() when a worker asks for work. */
int64_t workqueue_next_deadline(const workqueue_t *q, int64_t now_ns);

/* Stop accepting keys and drop the delayed ones; queued keys are still handed out. */
void workqueue_shut_down(workqueue_t *q);

/* 1 after workqueue_shut_down(). */
int workqueue_shutting_down(const workqueue_t *q);

/* Keys ready to be handed out now (not counting quarantined or delayed ones). */
size_t workqueue_len(const workqueue_t *q);

/* Keys being processed. */
size_t workqueue_processing_count(const workqueue_t *q);

/* Keys waiting for an add_after() / add_rate_limited() deadline. */
size_t workqueue_delayed_count(const workqueue_t *q);

/* 1 when key is being processed, else 0. */
int workqueue_is_processing(const workqueue_t *q, const char *key);

/* Refresh the time-based gauges (workqueue_unfinished_work_seconds,
 * workqueue_longest_running_processor_seconds) for now_ns; the event loop calls this
 * periodically, as client-go's metrics updater does every 500 ms. O(keys processing). */
void workqueue_update_metrics(workqueue_t *q, int64_t now_ns);

#endif
