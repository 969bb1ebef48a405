/* kube_async: one API request run by the caller's event loop instead of blocking it.
 *
 * For the requests a loop must make without stalling (informerd's Events and status
 * conditions; workerd's reads, writes and Events, all on its one multi): the handle is
 * set up like the client's own requests (URL, TLS, credential,
 * impersonation, a 401 refreshing the credential) with method, content type and body,
 * runs in the caller's curl multi (common/loop_curl), and on completion is classified
 * (kube_error_from_response), counted in rest_client_requests_total like every request,
 * and reported to the done callback once.
 *
 * One attempt: no retries and no rate-limiter wait here. A caller that wants them uses
 * kube_call (kube_call.h), which runs its attempts with this module and retries them by
 * the one rule (kube_retry.h), as workerd's executor and reads do; informerd's
 * best-effort reports and workerd's Events (recorder.c) send one attempt, log a failure
 * and go on. The error of a failure carries the Retry-After header (or the Status's
 * retryAfterSeconds), as the blocking client's does. The deadline fences it: a request whose
 * deadline has passed is refused at creation (KERR_TIMEOUT, nothing sent), and curl
 * aborts one still running at the deadline. Responses are capped at 1 MiB unless the
 * caller raises the cap (kube_async_set_response_cap).
 *
 *   r = kube_async_new(client, "POST", path, "application/json", body, len, deadline,
 *                      done, arg, &err);
 *   loop_curl_add_cb(lc, kube_async_handle(r), on_end, mine);   (or CURLOPT_PRIVATE)
 *   when the multi reports it done (and it is out of the multi):
 *   kube_async_finish(&r, code)  -> done(err, status, arg); r freed
 */
#ifndef RDC_KUBE_ASYNC_H
#define RDC_KUBE_ASYNC_H

#include "kube_client.h"
#include "kube_error.h"

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#define KUBE_ASYNC_DEFAULT_TIMEOUT_MS 30000
#define KUBE_ASYNC_MAX_RESPONSE ((size_t)1 << 20)

typedef struct kube_async kube_async_t;

/* The request ended: err->code is KERR_OK for a 2xx answer, else why it failed (the
 * API's Status, a transport error, the deadline). http_status is 0 when no answer came. */
typedef void kube_async_done_fn(const kube_error_t *err, long http_status, void *arg);

/* A request of method to path (path and query, starting with '/'), body of len bytes
 * (copied; NULL for none) sent with content_type, to end by deadline_mono_ns (0: within
 * KUBE_ASYNC_DEFAULT_TIMEOUT_MS). done may be NULL (a caller of kube_async_end). Returns NULL
 * with err filled when the deadline has passed, the path is bad, or memory runs out. */
kube_async_t *kube_async_new(kube_client_t *c, const char *method, const char *path,
                             const char *content_type, const char *body, size_t len,
                             int64_t deadline_mono_ns, kube_async_done_fn *done, void *arg,
                             kube_error_t *err);

/* Keep up to cap bytes of the response instead of KUBE_ASYNC_MAX_RESPONSE (a read whose
 * answer is the object itself; 0 = BUF_DEFAULT_CAP), before the transfer starts. Past the
 * cap the rest is dropped, so a body cut there does not parse. */
void kube_async_set_response_cap(kube_async_t *r, size_t cap);

/* The curl handle to run (owned by the request). */
CURL *kube_async_handle(const kube_async_t *r);

/* The response body received so far (at most KUBE_ASYNC_MAX_RESPONSE bytes; *len its
 * length), owned by the request: read it after the transfer ended and before
 * kube_async_finish. */
const char *kube_async_response(const kube_async_t *r, size_t *len);

/* The transfer ended with code (it must be out of the multi): classify, count, call done
 * once, free the request and set *r_p to NULL. */
void kube_async_finish(kube_async_t **r_p, CURLcode code);

/* The transfer ended with code (out of the multi): its error into *err (KERR_OK for a
 * 2xx; the Status, the transport failure, the Retry-After header or the Status's
 * retryAfterSeconds, method and URL), counted in rest_client_requests_total the first
 * time only, without calling done or freeing anything: for a caller that reads the answer
 * and decides on a retry itself (kube_call.h). Returns the HTTP status of the response
 * (0 without one; a 401 is there even when its body broke off). */
long kube_async_end(kube_async_t *r, CURLcode code, kube_error_t *err);

/* After the transfer: 1 when request bytes went out (the server may have acted on it), 0
 * when nothing was sent (no connection). */
int kube_async_sent(const kube_async_t *r);

/* The generation of the credential the request was sent with (kube_config): a retry
 * after 401 is worth making only with another one. */
uint64_t kube_async_credential(const kube_async_t *r);

/* Free a request without calling done (out of the multi first); *r_p = NULL. NULL is
 * fine. */
void kube_async_destroy(kube_async_t **r_p);

#endif
