/* kube_client: a small blocking REST client for the Kubernetes API (libcurl + OpenSSL).
 *
 * One client keeps one curl easy handle, so consecutive calls reuse one TCP/TLS
 * connection. TLS is verified unless the kubeconfig says insecure-skip-tls-verify; the
 * CA (which then is the only one trusted, as in client-go), client certificate and key
 * come from the kubeconfig as PEM blobs, the bearer token (and an exec plugin's client
 * certificate) is asked from kube_config_credentials() on every request (they rotate).
 * Every request, watches and pager pages included, carries the kubeconfig's
 * Impersonate-* headers and goes through the proxy kube_config chose (proxy-url, else
 * the environment as Go reads it, never for a loopback server; curl's own *_proxy
 * handling is switched off). A 401 tells kube_config that the credential was refused
 * (kube_config_credentials_rejected: one exec plugin run or token file re-read per
 * burst); a blocking call is then sent once more if, and only if, the refreshed
 * credential differs.
 * tls-server-name: curl 7.88 has no option for the name to verify, so the URL carries
 * that name (it becomes the SNI and the name checked against the certificate) and
 * CURLOPT_CONNECT_TO routes name:port to the real host:port; a Host: header keeps the
 * real address, as Go's client does.
 *
 * Every call: waits for a token of the client-side QPS/burst limiter, sends the request,
 * and on failure fills a kube_error_t typed from the API server's Status object. Retries
 * follow the one rule of kube_retry.h (kube_retry_decide), the same the requests on an
 * event loop follow (kube_call.h); here they are blocking and bounded by the call's
 * timeout (which covers limiter waits, attempts and backoff sleeps together) and the
 * caller's deadline (kube_client_set_deadline):
 *   - idempotent calls (GET, LIST, PUT, DELETE, apply-PATCH) retry on 429, 503, 504,
 *     any 5xx/429 carrying Retry-After or details.retryAfterSeconds, and on transport
 *     errors (connect, send, receive; not TLS verification, not the call's timeout);
 *   - other calls (POST, merge/JSON/strategic PATCH) retry only when the server cannot
 *     have acted: 429, and failures to connect (nothing sent); their body is given to
 *     libcurl so that it cannot resend them by itself either (a kept-alive connection
 *     found dead: curl 65 instead);
 *   - 409 is never retried by the request: it is the caller's conflict (a reconcile
 *     reads again); a 401 is retried once, with the refreshed credential (below);
 * with exponential backoff plus jitter, or the server's Retry-After (capped) when given,
 * at most max_retries times, and never when the retry could not start before the
 * deadline.
 *
 * Metrics (metrics_default(), client-go's names): rest_client_requests_total{code,
 * method,host} (code "<error>" for transport failures), rest_client_request_duration_
 * seconds{verb,host}, rest_client_request_retries_total{code,verb,host} (code: the
 * status of the attempt that was retried), rest_client_rate_limiter_duration_seconds
 * {verb,host}. One attempt = one request. kube_async, the pager and kube_call count
 * theirs in the same families.
 *
 * A client is used by one thread at a time (it owns one curl handle and the metrics
 * registry is single-threaded). Call curl_global_init() once at program start.
 *
 * Return convention of the calls: 0 on success, otherwise the kube_error_code_t of the
 * failure, with *err filled (err may be NULL when the caller only needs the code).
 */
#ifndef RDC_KUBE_CLIENT_H
#define RDC_KUBE_CLIENT_H

#include "buf.h"
#include "kube_config.h"
#include "kube_error.h"

#include <curl/curl.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kube_client kube_client_t;

typedef struct {
    const char *user_agent;      /* "informerd/0.1.0"; NULL = "rdc/0.1.0" */
    double qps;                  /* client-side limit; <= 0 = unlimited */
    int burst;                   /* bucket size; < 1 = 1 */
    const char *shared_bucket;   /* a ratelimit_shared file: the whole operator's budget
                                  * (qps/burst are then the file's); NULL = own bucket */
    int64_t timeout_ms;          /* per call, retries included; <= 0 = 30000 */
    int64_t connect_timeout_ms;  /* per connection attempt; <= 0 = 10000 */
    int max_retries;             /* retries after the first attempt; < 0 = 0 */
    int64_t retry_base_ms;       /* first backoff delay; <= 0 = 100 */
    int64_t retry_cap_ms;        /* backoff cap before jitter; <= 0 = 5000 */
    int64_t retry_after_cap_ms;  /* longest Retry-After honoured; <= 0 = 10000 */
    size_t max_response_bytes;   /* response body cap; 0 = 64 MiB */
} kube_client_opts_t;

/* Fill o with the defaults: qps 20, burst 30 (controller-runtime's), max_retries 10
 * (client-go's), and the defaults listed above for the rest. */
void kube_client_opts_init(kube_client_opts_t *o);

/* Options of one call; zero-initialise ({0}) and set what applies. Fields that do not
 * apply to a call are ignored. Strings are borrowed for the call. */
typedef enum {
    KUBE_PROPAGATION_DEFAULT = 0, /* the resource's default */
    KUBE_PROPAGATION_FOREGROUND,
    KUBE_PROPAGATION_BACKGROUND,
    KUBE_PROPAGATION_ORPHAN
} kube_propagation_t;

typedef struct {
    const char *label_selector;         /* LIST, watch */
    const char *field_selector;         /* LIST, watch */
    const char *resource_version;       /* GET, LIST (first page), watch */
    const char *resource_version_match; /* LIST: "NotOlderThan" | "Exact" */
    long limit;                         /* LIST page size; 0 = one unpaginated response */
    long timeout_seconds;               /* watch: server-side timeoutSeconds; 0 = none */
    int allow_watch_bookmarks;          /* watch */
    const char *field_manager;          /* POST, PUT, PATCH; required for apply */
    int force;                          /* apply: take conflicting fields */
    int dry_run;                        /* POST, PUT, PATCH, DELETE: dryRun=All */
    kube_propagation_t propagation;     /* DELETE */
    const char *precondition_uid;       /* DELETE */
    const char *precondition_rv;        /* DELETE */
    int has_grace_period;               /* DELETE: send grace_period_seconds */
    int64_t grace_period_seconds;
    int metadata_only;                  /* LIST (pager), watch: items as PartialObjectMetadata
                                           only (Accept KUBE_ACCEPT_METADATA[_LIST], no
                                           fallback: spec, data and status never come) */
} kube_req_opts_t;

/* The Accept headers of client-go's metadata client, without a fallback to the full
 * object (a Secret's data must never arrive). */
#define KUBE_ACCEPT_METADATA_LIST "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#define KUBE_ACCEPT_METADATA "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

/* Replace, in place, the Accept header of a stream handle's header list (the *headers of
 * kube_client_stream_handle, before the transfer starts) by accept, a whole header line
 * ("Accept: ..."). The list's first node (the credential ticket) stays where it is.
 * Returns 0, or -1 when out of memory or the list has no Accept header (unchanged). */
int kube_client_stream_accept(struct curl_slist *headers, const char *accept);

typedef enum {
    KUBE_PATCH_MERGE,     /* application/merge-patch+json */
    KUBE_PATCH_JSON,      /* application/json-patch+json (body is an array) */
    KUBE_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in types) */
    KUBE_PATCH_APPLY      /* server-side apply: application/apply-patch+yaml, JSON body */
} kube_patch_type_t;

/* Counters of what a client has done; for tests and debugging. */
typedef struct {
    uint64_t requests;       /* attempts sent (each retry counts) */
    uint64_t retries;        /* attempts that were retries */
    uint64_t connects;       /* new connections opened (CURLINFO_NUM_CONNECTS summed) */
    int64_t throttled_ns;    /* total time waited for the rate limiter */
} kube_client_stats_t;

/* A new client for cfg (borrowed: it must outlive the client) with opts (copied; NULL =
 * kube_client_opts_init defaults). Returns NULL when the server URL in cfg cannot be
 * parsed or memory/curl initialisation fails; err (optional) then says why with code
 * KERR_CONFIG. The caller owns the client; free it with kube_client_destroy. */
kube_client_t *kube_client_new(kube_config_t *cfg, const kube_client_opts_t *opts,
                               kube_error_t *err);

/* Free the client (closing its connection) and set *self_p to NULL. NULL-safe. */
void kube_client_destroy(kube_client_t **self_p);

/* Append the API path of a resource to out:
 *   group "" or NULL  -> /api/{version}, else /apis/{group}/{version}
 *   then /namespaces/{ns} when ns is non-NULL, /{resource}, /{name}, /{subresource}.
 * Pieces are percent-encoded (only A-Za-z0-9-._~ pass). Returns 0, or -1 with out
 * unchanged when version or resource is missing or empty, a piece is empty, "." or
 * "..", or out's cap is reached. */
int kube_path(buf_t *out, const char *group, const char *version, const char *ns,
              const char *resource, const char *name, const char *subresource);

/* GET path. On success *out is the parsed object (caller owns: json_object_put), or NULL
 * for an empty body. On error *out is NULL. */
int kube_client_get(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                    json_object **out, kube_error_t *err);

/* Called with each page of a LIST (borrowed; json_object_get to keep it). Return 0 to
 * fetch the next page, non-zero to stop (kube_client_list then returns 0). */
typedef int (*kube_list_page_fn)(json_object *page, void *user);

/* LIST path page by page (ro->limit per page, following metadata.continue), calling fn
 * for every page. ro's resourceVersion/Match go only with the first page, as the API
 * requires. An error on any page ends the listing (the caller relists from scratch). */
int kube_client_list(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                     kube_list_page_fn fn, void *user, kube_error_t *err);

/* LIST path collecting every item of every page into one array. On success *items is a
 * new json array (caller owns) and *rv a malloc'd copy of the list's
 * metadata.resourceVersion ("" when absent; caller frees). When a continue token has
 * expired (410) the listing restarts once without paging, as client-go's pager does.
 * On error both are NULL. */
int kube_client_list_all(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                         json_object **items, char **rv, kube_error_t *err);

/* POST body (borrowed) to path (a collection). *out (optional) gets the created object
 * (caller owns). Not retried except on 429 and failures to connect. */
int kube_client_create(kube_client_t *c, const char *path, json_object *body,
                       const kube_req_opts_t *ro, json_object **out, kube_error_t *err);

/* PUT body (borrowed) to path, e.g. an object or its /status or /scale. *out optional. */
int kube_client_update(kube_client_t *c, const char *path, json_object *body,
                       const kube_req_opts_t *ro, json_object **out, kube_error_t *err);

/* PATCH path with patch (borrowed; an array for KUBE_PATCH_JSON). For KUBE_PATCH_APPLY
 * ro->field_manager is required (KERR_CONFIG without it) and ro->force is sent as
 * force=true|false. *out optional. */
int kube_client_patch(kube_client_t *c, const char *path, kube_patch_type_t type,
                      json_object *patch, const kube_req_opts_t *ro, json_object **out,
                      kube_error_t *err);

/* DELETE path with a DeleteOptions body carrying ro's propagationPolicy, preconditions
 * and grace period. *out (optional) gets the response: the object (with a deletion
 * timestamp, when finalizers hold it) or a Status. */
int kube_client_delete(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                       json_object **out, kube_error_t *err);

/* Any request: method, path, query (without '?', already encoded; NULL = none), body
 * (len bytes, may be NULL) sent with content_type. idempotent selects the retry rules
 * above (kube_retry_idempotent(method, content_type) is the rule's own answer). *out
 * optional, as for GET. */
int kube_client_request(kube_client_t *c, const char *method, const char *path,
                        const char *query, const char *content_type, const char *body,
                        size_t len, int idempotent, json_object **out, kube_error_t *err);

/* A new curl easy handle for a GET of path?query (query may be NULL) set up like the
 * client's own requests (URL, TLS, current bearer token, Accept, User-Agent, connect
 * timeout, TCP keepalive 30 s idle / 10 s interval) but for a long-lived stream: no
 * overall timeout unless deadline_ms > 0, no response cap. The caller sets
 * CURLOPT_WRITEFUNCTION/WRITEDATA, runs it (typically in a multi handle), and owns both
 * the handle (curl_easy_cleanup) and *headers (curl_slist_free_all, after the handle is
 * done). Clean the handle up before destroying the client: with tls-server-name it
 * refers to the client's CURLOPT_CONNECT_TO list, and its header callback reports a 401
 * to the client's configuration. Do not replace CURLOPT_HEADERFUNCTION/HEADERDATA: they
 * are how a 401 on the stream refreshes the credential (the first node of *headers
 * records which credential the stream was sent with). It does not go through the rate
 * limiter: see kube_client_throttle. Returns NULL with *headers NULL and err filled on
 * failure. */
CURL *kube_client_stream_handle(kube_client_t *c, const char *path, const char *query,
                                int64_t deadline_ms, struct curl_slist **headers,
                                kube_error_t *err);

/* A watch stream handle: kube_client_stream_handle for path with watch=1 and ro's
 * selectors, resourceVersion, allowWatchBookmarks and timeoutSeconds (and, with
 * ro->metadata_only, Accept KUBE_ACCEPT_METADATA); when
 * ro->timeout_seconds > 0 the transfer also gets a client-side deadline of
 * timeoutSeconds + 30 s, so a stream the server should have ended is known dead. See
 * watch.h for why there is no low-speed limit. Same ownership as above. */
CURL *kube_client_watch_handle(kube_client_t *c, const char *path,
                               const kube_req_opts_t *ro, struct curl_slist **headers,
                               kube_error_t *err);

/* A paginated LIST driven by the caller's event loop (a curl multi handle) instead of
 * blocking, with kube_client_list_all's semantics: ro->limit items per page following
 * metadata.continue, resourceVersion/Match only with the first page, and one restart
 * without paging when a continue token has expired (410).
 *
 *   p = kube_pager_new(c, path, ro);
 *   h = kube_pager_start(p, &err);          add h to the multi
 *   ... the multi reports h done with code: remove h from the multi, then
 *   kube_pager_finish(p, code, &err)        KUBE_PAGER_MORE: start the next page
 *                                           KUBE_PAGER_DONE: kube_pager_items / _rv
 *                                           KUBE_PAGER_ERROR: err says why (HTTP
 *                                           status, Retry-After); kube_pager_start then
 *                                           asks the same page again (a retry)
 *
 * Bounded by bytes as well as by count: a page whose body passes the client's
 * max_response_bytes is dropped as it arrives and asked again (KUBE_PAGER_MORE) with the
 * same continue token and half the limit, down to 1. After a page that fits, the next
 * limit is as many items of that page's average size as fill three quarters of the cap,
 * at most twice the limit that fitted and at most ro->limit: it grows back, and pages of
 * large objects are asked small before they fail. The continue token names the last key served, not an
 * offset, so no item is lost or repeated across a change of limit (client-go's pager
 * lets the limit vary the same way). When one object alone is over the cap, its page
 * of one is asked again as metadata only (Accept: ...;as=PartialObjectMetadataList, as
 * client-go's metadata client), and its PartialObjectMetadata goes to
 * kube_pager_take_skipped instead of the items: the list goes on past it. Only when even
 * that is over the cap does the list fail. An unpaged response (the fallback after an
 * expired continue token) over the cap is asked again in pages from the first, once.
 *
 * Each page is one request with the client's timeout, counted in the client's metrics,
 * but it neither waits for the client's rate limiter nor retries: kube_call (kube_call.h)
 * does both, a page at a time, by the one rule (kube_retry.h). The pager owns its handle (freed
 * by finish and destroy); remove it from the multi before either. */
typedef struct kube_pager kube_pager_t;
typedef enum { KUBE_PAGER_ERROR = -1, KUBE_PAGER_DONE = 0, KUBE_PAGER_MORE = 1 } kube_pager_state_t;

/* NULL when out of memory. ro (may be NULL) is copied. */
kube_pager_t *kube_pager_new(kube_client_t *c, const char *path, const kube_req_opts_t *ro);
CURL *kube_pager_start(kube_pager_t *p, kube_error_t *err);
kube_pager_state_t kube_pager_finish(kube_pager_t *p, CURLcode code, kube_error_t *err);
/* After DONE: every item of every page (borrowed from the pager) and the list's
 * resourceVersion ("" when absent). */
json_object *kube_pager_items(const kube_pager_t *p);
const char *kube_pager_rv(const kube_pager_t *p);
/* The items collected since the last take (a JSON array the caller owns and puts), so
 * that a caller can consume the list page by page instead of holding all of it; the
 * pager starts a new array. After an expired continue token the pager starts over from
 * the first item. NULL when out of memory. */
json_object *kube_pager_take_items(kube_pager_t *p);
/* The metadata (PartialObjectMetadata objects) of the items too large for a page of
 * one, collected since the last take: a JSON array the caller owns and puts; the pager
 * starts a new one. Restarts forget them as they forget the items. NULL when out of
 * memory. */
json_object *kube_pager_take_skipped(kube_pager_t *p);
/* The limit of the next page (ro->limit unless a page was over the cap), and how many
 * responses were over the cap so far. */
long kube_pager_limit(const kube_pager_t *p);
unsigned kube_pager_shrinks(const kube_pager_t *p);
/* Free the pager and its handle; *p_p = NULL. NULL is ignored. */
void kube_pager_destroy(kube_pager_t **p_p);

/* The deadline kube_client_set_deadline set (monotonic ns), 0 = none. */
int64_t kube_client_deadline(const kube_client_t *c);

/* 1 when a request made now would wait for the client-side limiter (its bucket, or the
 * operator's shared one, holds less than one token: the budget is short), else 0 (also
 * without a limit). Takes nothing. */
int kube_client_budget_short(kube_client_t *c);

/* Take one token of the client's rate limiter for a request made outside the client
 * (a watch in an event loop) and return how long to wait before starting it (ns, 0 =
 * now). Consumes the token. (kube_call takes the token of each of its attempts from the
 * same bucket, bounded by its deadline.) */
int64_t kube_client_throttle(kube_client_t *c);

/* Count one request made outside the client's own calls (a pager page, a kube_async
 * write, each attempt of a kube_call) in rest_client_requests_total{code,method,host}
 * and the latency histogram, as the client counts its own. started_mono_ns is when it
 * was sent (clock_mono_ns()). */
void kube_client_count_request(kube_client_t *c, const char *method, CURLcode code,
                               long http_status, int64_t started_mono_ns);

/* Bound every request made from now on to end by deadline_mono_ns (CLOCK_MONOTONIC ns,
 * as clock_mono_ns(), or the test clock when one is set; 0 removes the bound): the rate limiter wait, every attempt and
 * every retry stop at it, and a request that would start after it fails at once with
 * KERR_TIMEOUT without being sent. This is fencing: a worker's writes must not outlive
 * the leadership they were made under (see electord/election.h). Bytes already handed
 * to the network before the deadline can still arrive later; the margin between the
 * renew deadline and the lease duration is what covers them, as in client-go. */
void kube_client_set_deadline(kube_client_t *c, int64_t deadline_mono_ns);

/* The host:port requests go to (for metric labels and messages). */
const char *kube_client_host(const kube_client_t *c);

/* Copy the client's counters into *out. */
void kube_client_stats(const kube_client_t *c, kube_client_stats_t *out);

/* Test hook: replace the monotonic clock and the sleep used for limiter waits and
 * backoff (both take/return ns). NULL functions restore the real ones. */
typedef struct {
    int64_t (*now_ns)(void *user);
    void (*sleep_ns)(void *user, int64_t ns);
    void *user;
} kube_client_clock_t;
void kube_client_set_clock(kube_client_t *c, const kube_client_clock_t *clk);

#endif
