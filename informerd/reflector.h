/* reflector: one kind listed and watched into the cache, as client-go's reflector.
 *
 * A reflector LISTs its kind in every namespace it is given (one stream per namespace, or
 * one for all), page by page (kube_pager) through the loop's curl multi, and hands the
 * pages to the cache as one relist (cache_relist_begin/add/end: the differences become
 * deltas). When every namespace is listed it WATCHes each from its list's
 * resourceVersion, with bookmarks and a random 5..10 min timeoutSeconds (or the one it is
 * given), and hands every event to the cache (cache_upsert, cache_delete).
 *
 * A watch that the server ends or the network breaks resumes from the last
 * resourceVersion seen: at once if it had served for a second; after a backoff (800 ms
 * doubling to 30 s, jittered) if it could not connect, ended within a second, or was
 * refused with 429 or a retryable 5xx (honouring Retry-After, up to 30 s). A 410 Gone,
 * any other refusal, an ERROR event, an undecodable event, an object the cache or the
 * transform refuses, and a LIST that fails end in a relist after the kind's own backoff
 * (the same bounds), logged as "relisting" with the reason. A refused watch's body is
 * read as the Status it is, never as events. An object alone over the response cap
 * comes as metadata only (kube_pager) and is cached in minimal form.
 *
 * The reflector only writes to the cache: what a change means (deltas, keys, work) is the
 * cache's delta handler's business. It never blocks: LIST pages and watches are transfers
 * of the loop's curl multi, each with its own done callback (loop_curl_add_cb); the
 * caller steps it every loop turn (relists and rewatches that are due) and sleeps no
 * longer than reflector_next_deadline.
 *
 * Metrics (label kind): informer_list_total, informer_watch_total, informer_relists_total,
 * informer_errors_total{reason=list|watch|bad_object}, and, in reflector_update_metrics,
 * informer_cache_objects, informer_cache_synced, informer_last_event_age_seconds.
 */
#ifndef RDC_INFORMERD_REFLECTOR_H
#define RDC_INFORMERD_REFLECTOR_H

#include "cache.h"
#include "kube_client.h"
#include "loop_curl.h"
#include "opts.h"
#include "syncgate.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef struct reflector reflector_t;

/* What to list and watch. The strings are borrowed and must outlive the reflector. */
typedef struct {
    const char *kind;           /* "ConfigMap" */
    const char *group;          /* "" for the core group */
    const char *version;        /* "v1" */
    const char *resource;       /* "configmaps" */
    const char *selector;       /* label selector, or NULL for every object */
    /* Applied to every object before the cache (the compact form of a Pod, the metadata
     * of a Secret), or NULL: 0, or -1 to refuse the object (then the kind relists). */
    int (*transform)(json_object *obj);
    int metadata_only;          /* LIST and WATCH PartialObjectMetadata only */
} reflector_kind_t;

/* Where and how. Everything is borrowed and must outlive the reflector. */
typedef struct {
    kube_client_t *client;
    loop_curl_t *lc;            /* the loop's curl multi */
    cache_t *cache;             /* where the objects go */
    const opt_strlist_t *namespaces; /* a stream per namespace; none = one for all */
    double watch_timeout_s;     /* server-side timeout of each watch; 0 = random 5..10 min */
    int list_page_size;         /* objects per LIST page (> 0) */
    size_t max_response_bytes;  /* the client's response cap, for messages */
} reflector_config_t;

/* A reflector of kind, due to list at once; registers kind with the cache and the metric
 * families. NULL when out of memory (or the cache refuses the kind). */
reflector_t *reflector_new(const reflector_kind_t *kind, const reflector_config_t *cfg);

/* Stop its transfers (out of the multi, no callback) and free it; *self_p = NULL. NULL is
 * ignored. The cache keeps what it was given. */
void reflector_destroy(reflector_t **self_p);

/* Start the relist or the rewatches that are due at now_ns. Failures are the reflector's
 * own (logged, counted, retried after a backoff); nothing to return. */
void reflector_step(reflector_t *r, int64_t now_ns);

/* The earliest time (monotonic ns) a relist or a rewatch is due, or INT64_MAX when none
 * is (the transfers in flight wake the loop themselves). */
int64_t reflector_next_deadline(const reflector_t *r);

/* The kind's state for the sync gate (syncgate.h): listed at least once, a LIST in
 * progress, and why its last LIST or WATCH failed ("" when none did). The strings are
 * the reflector's. */
syncgate_kind_t reflector_sync_state(const reflector_t *r);

/* Mark the kind optional (not part of the sync gate): a LIST refused with 404 (its CRD not
 * installed) or 403 (an older ClusterRole) is said once and tried again every 5 minutes
 * instead of at the failure backoff. Required kinds keep the backoff. */
void reflector_set_optional(reflector_t *r, int optional);

/* The kind it lists and watches. */
const char *reflector_kind(const reflector_t *r);

/* Set the gauges of its kind: objects cached, synced, seconds since the last watch event
 * at wall time now_wall_ns (once there was one). */
void reflector_update_metrics(const reflector_t *r, int64_t now_wall_ns);

#endif
