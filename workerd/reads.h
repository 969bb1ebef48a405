/* reads: the GETs and LISTs of a reconcile, made together on the worker's event loop.
 *
 * A set of up to READS_MAX independent requests starts at once on the worker's curl multi
 * (common/loop_curl: the multi its writes and Events use too, so over TLS they all share
 * one HTTP/2 connection, streams multiplexed), and the caller hears once, when every one
 * has ended. The loop is never blocked: the worker's other keys, its Events and
 * heartbeats go on meanwhile.
 *
 * Each request is one kube_call (common/kube_call.h), so a read is sent, paced and
 * retried exactly as every other request of the operator:
 *
 * - Tokens: each request (each page of a LIST) takes one token of the operator's budget
 *   first (kube_client_throttle's bucket); a wait for it is a loop timer, never a sleep.
 * - GET: the answer is the object, or none (NULL, no error) for 404 NotFound. Up to the
 *   client's default response cap (BUF_DEFAULT_CAP) is kept; a body cut there fails.
 * - LIST: page by page (kube_pager: limit, continue, a page over the byte cap asked again
 *   smaller), the answer is a JSON array of the items of every page. Items too large for a
 *   page of one (metadata only) are left out.
 * - Retries: by the one rule (common/kube_retry.h), with the client's policy: a GET or a
 *   LIST page is idempotent, so 429, 503, 504, a 5xx carrying Retry-After and a broken
 *   transfer are sent again after the server's Retry-After (capped) or a backoff with
 *   jitter; a 401 once with a refreshed credential; anything else (404, 403, 409, a body
 *   that is not JSON) ends that request with its error. A LIST retries the page that
 *   failed, not the list. Every retry is counted in rest_client_request_retries_total.
 * - Reads change nothing, so they are not fenced; each request (each page) and its
 *   retries end within the client's per-call timeout.
 */
#ifndef RDC_READS_H
#define RDC_READS_H

#include "kube_client.h"
#include "kube_error.h"
#include "loop_curl.h"

#include <json-c/json.h>
#include <stddef.h>

#define READS_MAX 32 /* a reconcile's first reads: children, spec.auth's, spec.tls's and spec.acl's Secrets */

typedef struct {
    /* What to read (set before reads_start). */
    char path[1024];            /* GET: the object's path; LIST: the collection's */
    int list;                   /* 0: GET path; 1: LIST path with the selectors below */
    char label_selector[512];   /* LIST: "" = none */
    char field_selector[512];   /* LIST: "" = none */
    /* The answer (when done was called). */
    json_object *obj;           /* GET: the object or NULL (404); LIST: an array of the
                                 * items. The caller puts it. NULL on failure. */
    kube_error_t err;           /* KERR_OK, or why the request failed */
} reads_req_t;

typedef struct reads reads_t;

/* Every request of the set has ended (see each req's err); the set is freed already. */
typedef void reads_done_fn(void *arg);

/* Set req (what to read) up as a GET of path: its path from kube_path's pieces. Returns 0,
 * or -1 when the path cannot be built or does not fit (req's err then says so). */
int reads_get(reads_req_t *req, const char *group, const char *version, const char *ns, const char *resource,
              const char *name);

/* Set req up as a LIST of resource in ns with a label or field selector (NULL = none).
 * Returns 0, or -1 as reads_get. */
int reads_list(reads_req_t *req, const char *ns, const char *resource, const char *label_selector,
               const char *field_selector);

/* Read req[0..n) (n <= READS_MAX) at once on lc with client c (both borrowed: they must
 * outlive the set). req is the caller's and written until done. Returns the set, or NULL
 * when out of memory (nothing started, done never called). done is called once, from the
 * loop, never from inside reads_start. */
reads_t *reads_start(loop_curl_t *lc, kube_client_t *c, reads_req_t *req, size_t n, reads_done_fn *done,
                     void *arg);

/* Abort the set: requests in flight are dropped, done is not called, the answers already
 * in req are put (obj NULL); *r_p = NULL. NULL is fine. */
void reads_cancel(reads_t **r_p);

#endif
