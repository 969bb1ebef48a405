/* echo: a change of a RedisCluster that is only the echo of its own reconcile's writes
 * queues nothing. Pure: no I/O, no clock.
 *
 * Why: a reconcile writes its RedisCluster (the finalizer, then the status) and the watch
 * brings each write back as a MODIFIED. Queued, each echo was one more reconcile that read
 * what the last one had just written and found nothing to do: 3.7-4 of the 28 reconciles
 * a cluster took at N=100 (bench/README.md). controller-runtime's users drop them with
 * GenerationChangedPredicate, which also drops every other status or metadata change
 * (another writer's, a label); this drops only the writes the worker made itself.
 *
 * The proof that a MODIFIED old_rv -> new_rv is an echo: new_rv is a resourceVersion one
 * of the key's writes was answered with, and old_rv is one the reconcile knew (the version
 * it was handed, or another of its writes). Every write to the object is its own version
 * and the watch delivers each in order, so another writer's change between the read and
 * our write comes as its own MODIFIED, whose new version is none of ours: it queues the
 * key. A relist that skipped versions gives an old_rv the reconcile never knew: queued.
 * ADDED, DELETED and resyncs are never echoes.
 *
 * Only writes the worker calls quiet count (DONE's "quiet": the plan of the object its
 * last write left, from the same children and observations, has nothing to do;
 * workerd/reconcile.c job_quiet_after_write). A status that records a step for the next
 * plan to take (a handover's new primary, a switchover begun) is not quiet: its echo is
 * the trigger of that step, and queues as any change does.
 *
 * While the key is in flight the worker has not yet said what it wrote (DONE says it), so
 * the key's MODIFIEDs are remembered (echo_delta answers ECHO_DEFER) and judged at
 * echo_flight_end: one that was not an echo queues the key then. After DONE, the echoes
 * still to come are recognised as they arrive (ECHO_OWN), until the next flight.
 *
 * CHILDREN. A quiet reconcile may also have written children (a new cluster's first
 * reconcile creates its ConfigMap, Service, StatefulSet and budget): the worker planned
 * once more with each written child as the API answered its write, and DONE names each
 * (kind, name, the resourceVersion answered) only when that plan had nothing to do
 * (workerd/reconcile.c). A child's ADDED or MODIFIED that brings exactly that version
 * brings into the cache exactly the object that plan was made from: its echo, queued, is
 * a reconcile that finds nothing to do. Any other version of it (another writer's, the
 * controller's status) is a change and queues; so does every change of a child nobody
 * named. The version alone proves it, whatever came before it: the object at that
 * version is the one the plan saw, and each other version the watch delivers is judged
 * by itself. A child's change that comes while the key is in flight is remembered with
 * the time it came (echo_child_delta answers ECHO_DEFER) and judged at echo_flight_end,
 * which hands each one that was no echo back to the caller to queue.
 */
#ifndef RDC_INFORMERD_ECHO_H
#define RDC_INFORMERD_ECHO_H

#include <stddef.h>
#include <stdint.h>

#define ECHO_RV_MAX 64    /* longest resourceVersion tracked (longer: never an echo) */
#define ECHO_WRITES_MAX 4 /* writes of one reconcile tracked (more: the rest are not echoes) */
#define ECHO_DEFER_MAX 8  /* changes remembered during one flight (more: queued at once) */
#define ECHO_CHILD_WRITES_MAX 8 /* child writes of one reconcile tracked (more: not echoes) */

typedef enum {
    ECHO_QUEUE = 0, /* queue the key as for any change */
    ECHO_DEFER,     /* the key is in flight: remembered, judged when DONE comes */
    ECHO_OWN        /* the echo of the key's own write: nothing to queue */
} echo_answer_t;

typedef struct echo echo_t;

/* An empty set for at most max keys at once (a key past that is not tracked: its changes
 * are queued as before). NULL when out of memory. */
echo_t *echo_new(size_t max);

/* Free the set; *self_p = NULL. NULL is fine. */
void echo_destroy(echo_t **self_p);

/* key is handed out with its RedisCluster at read_rv: its flight begins (what an earlier
 * flight left is forgotten). Returns 1 when tracked, 0 when not (no version, too long,
 * the set full, out of memory). */
int echo_flight_begin(echo_t *e, const char *key, const char *read_rv);

/* A MODIFIED of key's RedisCluster from old_rv to new_rv: what the caller does with it. */
echo_answer_t echo_delta(echo_t *e, const char *key, const char *old_rv, const char *new_rv);

/* An ADDED or MODIFIED of key's child kind/name (in key's namespace), now at rv, that came
 * at at_ns (the caller's clock): what the caller does with it. ECHO_DEFER: key is in
 * flight (judged by echo_flight_end, which gives it back with at_ns when it was no
 * echo); more than ECHO_DEFER_MAX in one flight are ECHO_QUEUE. */
echo_answer_t echo_child_delta(echo_t *e, const char *key, const char *kind, const char *name, const char *rv,
                               int64_t at_ns);

/* A child write DONE names (CHILDREN above): kind, name, and the version answered. */
typedef struct {
    const char *kind, *name, *rv;
} echo_child_t;

/* Called by echo_flight_end with each child change that came in flight and was no echo:
 * its kind and when it came (the caller queues key for it). */
typedef void echo_queue_fn(void *arg, const char *kind, int64_t at_ns);

/* key's flight ended, its reconcile's writes of the RedisCluster answered with written[0..n)
 * (in the order made; n may be 0) and its child writes children[0..nchildren) (the
 * worker names them only when quiet). Each child change remembered during the flight
 * that was no echo goes to fn(arg, ...) (fn NULL: the answer is 1 instead). Returns 1
 * when a change of the RedisCluster remembered during the flight was not an echo (the
 * caller queues key), else 0. */
int echo_flight_end(echo_t *e, const char *key, const char *const *written, size_t n, const echo_child_t *children,
                    size_t nchildren, echo_queue_fn *fn, void *arg);

/* Forget key (its flight ended with no answer, the object went, any doubt): its next
 * changes are queued. What it remembered from a flight is dropped: the caller queues
 * key (a worker lost, the RedisCluster added again), or it is gone. */
void echo_forget(echo_t *e, const char *key);

/* Keys tracked now. */
size_t echo_count(const echo_t *e);

#endif
