/* reporter: what informerd itself writes to the API server, all of it about objects it
 * caches and none of it part of a reconcile (workerd writes those):
 *
 *  - a Warning Event ObjectTooLarge on an object kept in minimal form (toolarge.h), once
 *    the caches synced and while this replica may write; the objects wait in a FIFO of
 *    TOOLARGE_PENDING and are written REPORTER_EVENTS_PER_TURN at a time;
 *  - for a quarantined key, a Warning Event ReconcileCrashed and the ReconcileCrashed
 *    condition True on its RedisCluster (crashcond.h: server-side apply under a field
 *    manager of its own, so that the workers' status writes and this condition do not
 *    overwrite each other); after a reconcile that completed, that condition False.
 *
 * Every write is a kube_async request on the loop's curl multi (loop_curl_add_cb): the
 * loop never waits for one. Each is fenced: it must end within REPORTER_WRITE_DEADLINE_NS
 * and before the fence its caller gives (the lease's validity, as the workers' writes).
 * Best effort: a write that cannot start or fails is logged ("cannot write") and not
 * retried; the log line and the metric said it already, the quarantine itself is in the
 * queue's memory. The reporter reads the cache (borrowed) and depends on nothing else of
 * informerd's: the caller decides when it may write.
 */
#ifndef RDC_INFORMERD_REPORTER_H
#define RDC_INFORMERD_REPORTER_H

#include "cache.h"
#include "kube_client.h"
#include "loop_curl.h"

#include <stddef.h>
#include <stdint.h>

#define REPORTER_WRITE_DEADLINE_NS (INT64_C(5) * 1000000000) /* a write ends within 5 s */
#define REPORTER_EVENTS_PER_TURN 4       /* ObjectTooLarge Events written per call */
#define REPORTER_TOO_LARGE_PENDING 256   /* objects awaiting their Event at most */

typedef struct reporter reporter_t;

typedef struct {
    kube_client_t *client;      /* borrowed; outlives the reporter */
    loop_curl_t *lc;            /* borrowed: the loop's curl multi */
    const cache_t *cache;       /* borrowed: where the objects written about are read */
    int events;                 /* 0: note objects too large (log, metric) but queue no Event
                                 * (informerd --tail writes nothing) */
} reporter_config_t;

/* A reporter with nothing in flight or queued, its metric family registered
 * (informer_objects_skipped_total). NULL when out of memory. */
reporter_t *reporter_new(const reporter_config_t *cfg);

/* Abandon the writes in flight (taken out of the multi, no log) and free the reporter;
 * sets *self_p to NULL. NULL is ignored. Call before the loop_curl goes. */
void reporter_destroy(reporter_t **self_p);

/* The cache stored it in minimal form: log it, count it under its kind and reason, and
 * queue its ObjectTooLarge Event (unless the queue is full: then say so in the log). */
void reporter_too_large(reporter_t *r, const cache_item_t *it);

/* Objects whose ObjectTooLarge Event waits. */
size_t reporter_too_large_pending(const reporter_t *r);

/* Start the Events of the REPORTER_EVENTS_PER_TURN oldest objects waiting that are still
 * cached in minimal form, each ending by fence_ns at the latest (INT64_MAX: no fence). */
void reporter_write_too_large(reporter_t *r, int64_t fence_ns);

/* key was quarantined after crashing workers `crashes` times in a row: start the Warning
 * Event ReconcileCrashed and the condition True on its cached RedisCluster (nothing when
 * it is not cached), each ending by fence_ns at the latest. */
void reporter_quarantined(reporter_t *r, const char *key, unsigned crashes, int64_t fence_ns);

/* A reconcile of key completed without crashing its worker: when its cached RedisCluster
 * carries ReconcileCrashed True, start the write that turns it False (logged when it
 * lands), ending by fence_ns at the latest. */
void reporter_reconcile_completed(reporter_t *r, const char *key, int64_t fence_ns);

#endif
