/* recorder: Events recorded asynchronously and aggregated, as client-go's EventRecorder
 * (tools/record: the broadcaster's bounded queue, the EventCorrelator's aggregation and
 * spam filter) does it, on the worker's event loop.
 *
 * recorder_record never blocks and never sends anything itself: it decides, and queues.
 * The requests go out through the worker's loop on the worker's one curl multi
 * (common/loop_curl, shared with its reads and writes: over TLS HTTP/2 streams
 * multiplexed on one connection), while the reconcile that recorded them goes on with its
 * writes. A reconcile is never delayed by an Event.
 *
 * - Aggregation: an Event identical to one recorded in the last 10 minutes (same involved
 *   object incl. uid, type, reason, message) is not POSTed again: the count of the one
 *   recorded goes up, and one merge PATCH {count, lastTimestamp} carries every repeat
 *   made meanwhile (repeats while its POST or PATCH is in flight are folded into the next
 *   PATCH). A PATCH answered 404 (the Event expired) POSTs a new one. The Event's name is
 *   chosen here, "<object>.<hex ns>" as client-go names it, so no response body is needed.
 * - Spam filter: per involved object a token bucket of RECORDER_SPAM_BURST Events,
 *   refilled at one per RECORDER_SPAM_REFILL_S (client-go's EventSourceObjectSpamFilter:
 *   25, one per 5 minutes). A new Event past it is dropped (counted), a repeat is not.
 * - Bound: at most queue_cap Events wait to be sent (client-go's broadcaster queue holds
 *   1000 and drops when full); past it a new Event is dropped and counted. At most
 *   max_in_flight requests are in flight.
 * - Fencing: every Event carries the deadline the caller gives (the leadership's
 *   validity); a request that could not start before it is dropped, and curl aborts one
 *   still running at it.
 * Failures are logged and counted, never retried beyond what one PATCH-to-POST fallback
 * does: Events are best effort, as in client-go.
 */
#ifndef RDC_RECORDER_H
#define RDC_RECORDER_H

#include "kube_client.h"
#include "loop_curl.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define RECORDER_SPAM_BURST 25
#define RECORDER_SPAM_REFILL_S 300
#define RECORDER_WINDOW_S 600 /* aggregation window: client-go's 10 minutes */

typedef struct recorder recorder_t;

typedef struct {
    size_t queue_cap;   /* Events waiting at most; 0 = 256 */
    int max_in_flight;  /* requests at once; 0 = 8 */
    double spam_qps;    /* refill of the per-object bucket; 0 = 1/RECORDER_SPAM_REFILL_S */
    int spam_burst;     /* 0 = RECORDER_SPAM_BURST */
} recorder_opts_t;

typedef enum {
    RECORDER_QUEUED = 0,   /* a new Event, to be POSTed */
    RECORDER_AGGREGATED,   /* a repeat: its count goes up (one PATCH for the repeats) */
    RECORDER_SPAM,         /* dropped by the per-object spam filter */
    RECORDER_FULL,         /* dropped: queue_cap Events already wait */
    RECORDER_INVALID       /* no name/namespace/type/reason, or out of memory */
} recorder_result_t;

typedef struct {
    uint64_t posts, patches;     /* requests sent */
    uint64_t aggregated;         /* repeats folded into a count */
    uint64_t dropped_spam, dropped_full, failed;
    uint64_t throttled;          /* requests that waited for the Events budget */
    int64_t throttled_ns;        /* how long, in all */
} recorder_stats_t;

/* A recorder sending through client c on the curl multi lc (both borrowed: they must
 * outlive the recorder). o may be NULL (defaults). Returns NULL when out of memory.
 * The Events' QPS budget is c's limiter: each request (POST or PATCH) takes one of its
 * tokens (kube_client_throttle), the oldest waiting Event first, and one that waits for
 * its token holds the ones after it, as client-go's broadcaster waits on its limiter.
 * A worker gives it a client of its own for that (a controller-runtime manager's
 * recorder has a client, and a limiter, of its own): the operator's Events bucket
 * (RATELIMIT_SHARED_EVENTS_ENV) with --kube-api-qps/--kube-api-burst, taking none of the
 * other requests' tokens; an unlimited client, no budget. */
recorder_t *recorder_new(kube_client_t *c, loop_curl_t *lc, const recorder_opts_t *o);

/* Abort what is in flight, drop what waits, free; *self_p = NULL. NULL is fine. */
void recorder_destroy(recorder_t **self_p);

/* Record an Event on the RedisCluster rc (its name, namespace, uid are copied; an rc whose
 * kind is "RedisBackup" is that RedisBackup instead, of the same API group) with
 * reportingInstance instance (may be NULL), to be sent before deadline_mono_ns (0 = no
 * deadline beyond the request's own 30 s). Never blocks; see recorder_result_t. */
recorder_result_t recorder_record(recorder_t *r, const json_object *rc, const char *type,
                                  const char *reason, const char *message,
                                  const char *instance, int64_t deadline_mono_ns);

/* Events waiting or in flight; 0 = all sent (or dropped). */
size_t recorder_pending(const recorder_t *r);

/* Counters since recorder_new. Also exported (metrics_default): event_recorder_total{result}
 * (posted, patched, aggregated, dropped_spam, dropped_full, failed, and post_failed: a POST
 * sent and refused, which created no Event; stats.failed counts it too) and
 * event_recorder_limiter_wait_seconds_total, so a scrape can tell the Event requests
 * apart from the reconciles' writes in rest_client_requests_total. */
recorder_stats_t recorder_stats(const recorder_t *r);

/* Name of a result: "queued", "aggregated", "spam", "full", "invalid". */
const char *recorder_result_name(recorder_result_t res);

#endif
