/* kube_call: one API request on the caller's event loop, retried by the one rule.
 *
 * What the blocking client does for a call (kube_client.h), without blocking the loop:
 * for workerd's writes (executor.c) and reads (reads.c), and for any loop that must
 * not stall. A call is one request (method, path, body), or one LIST followed page by
 * page through kube_pager (limit, continue, a page over the byte cap asked again
 * smaller, an expired continue token listed again unpaged), each page a request of its
 * own. Every attempt of every request:
 *
 *   - takes one token of the client's limiter first, the operator's budget when shared
 *     (kc_take_token, as kube_client_throttle); a wait for it is a loop timer, never a
 *     sleep;
 *   - asks the fence, when the caller gave one, right before it is sent (the first
 *     attempt included: a wait for a token or a backoff can outlive what the fence
 *     guards, e.g. workerd's leadership); a refusal ends the call, fenced, nothing sent;
 *   - runs on the caller's curl multi (common/loop_curl), over TLS a stream of its one
 *     HTTP/2 connection, and is counted in rest_client_requests_total.
 *
 * A failed attempt goes to kube_retry_decide (kube_retry.h: the one rule, the same the
 * blocking client applies), with the client's policy (max_retries, backoff, Retry-After
 * cap): what is retried is decided by the method's idempotency and what came back
 * (409 never: it is the reconcile's conflict; a POST's 503 never once sent; a 401 once,
 * with a refreshed credential, and only when the refresh gave another one). The retry
 * waits on a loop timer (the server's Retry-After, capped, or exponential backoff with
 * jitter), is counted in rest_client_request_retries_total{code,verb,host} (client-go's
 * name and labels; code is the failed attempt's status) and logged at info. Each request
 * (each page) and its retries end within the client's timeout from its first attempt
 * and by the caller's deadline: a retry that cannot start before it is not made (nor one
 * whose wait for a token would pass it).
 *
 * The caller hears once, through done, from the loop (never from inside
 * kube_call_start): success, or the last failure with why it was not retried, or the
 * fence's refusal.
 *
 *   spec = {.method = "PUT", .path = p, .content_type = "application/json",
 *           .body = text, .len = n, .deadline_ns = d, .fence = leads, .fence_arg = w};
 *   call = kube_call_start(lc, client, &spec, done, arg);
 *   ... done(&result, arg): result.err, result.body / result.items; the call is freed
 *       when done returns
 */
#ifndef RDC_KUBE_CALL_H
#define RDC_KUBE_CALL_H

#include "kube_client.h"
#include "kube_error.h"
#include "kube_retry.h"
#include "loop_curl.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kube_call kube_call_t;

/* May the call send now? 1 yes, 0 no. */
typedef int kube_call_fence_fn(void *arg);

/* What to send; every pointer is borrowed for kube_call_start only (copied), except
 * log_id and fence_arg, which must outlive the call. */
typedef struct {
    const char *method;          /* "GET", "POST", "PUT", "PATCH", "DELETE"; a LIST: NULL or "GET" */
    const char *path;            /* path and query, starting with '/'; a LIST: the collection */
    const char *content_type;    /* NULL = none; a PATCH's decides its idempotency */
    const char *body;            /* len bytes; NULL = none */
    size_t len;
    const kube_req_opts_t *list; /* non-NULL: a LIST of path with these options (selectors,
                                    limit, metadata_only ...) through kube_pager */
    size_t response_cap;         /* a request's response cap; 0 = KUBE_ASYNC_MAX_RESPONSE (a
                                    LIST page has the client's max_response_bytes) */
    int64_t deadline_ns;         /* monotonic; 0 = none beyond the client's timeout */
    kube_call_fence_fn *fence;   /* asked before every attempt; NULL = never refused */
    void *fence_arg;
    const char *log_id;          /* the reconcileID of the retry log line; NULL = none */
} kube_call_spec_t;

/* How the call ended. Everything is borrowed for the length of done. */
typedef struct {
    kube_error_t err;          /* KERR_OK, or the last failure (or why nothing was sent) */
    int fenced;                /* 1: the fence refused an attempt (err says so) */
    long http_status;          /* of the last answer; 0 = none */
    kube_retry_reason_t stop;  /* a failure: why it was not retried (KUBE_RETRY_FINAL for
                                  one that could not be sent) */
    int retries;               /* retries made (every page's together) */
    const char *body;          /* a request's response body, len bytes (NUL-terminated) */
    size_t len;
    json_object *items;        /* a LIST's items, an array (json_object_get to keep them) */
    json_object *skipped;      /* a LIST's items too large for a page of one, as metadata */
} kube_call_result_t;

typedef void kube_call_done_fn(const kube_call_result_t *res, void *arg);

/* Start the call on lc (its loop and multi) with client c; both borrowed, they must
 * outlive the call. Returns the call, or NULL when out of memory (nothing started, done
 * never called). done is called once, from the loop; the call is freed when it returns
 * (drop the pointer there). A call that cannot be sent at all (a bad path, the deadline
 * passed) ends through done like any other, on the next turn. */
kube_call_t *kube_call_start(loop_curl_t *lc, kube_client_t *c, const kube_call_spec_t *spec,
                             kube_call_done_fn *done, void *arg);

/* Abort the call: its transfer in flight is dropped (a write may or may not have been
 * made), its timer cancelled, done is not called; *call_p = NULL. NULL is fine; from the
 * call's own done it only clears *call_p. */
void kube_call_cancel(kube_call_t **call_p);

#endif
