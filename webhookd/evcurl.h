/* evcurl: a curl multi handle driven by libevent's event_base, for webhookd.
 *
 * webhookd runs on libevent, not on common/loop (docs/daemon-loop.md says why), so
 * common/loop_curl cannot carry its API requests. This is the same thing on libevent
 * (curl's multi-event model, docs/examples/multi-event.c): curl says which sockets it
 * wants read or written and when its one timer is due; this module registers exactly
 * that as events on the base and hands readiness back with curl_multi_socket_action().
 * Every finished transfer is taken out of the multi and reported to the callback it was
 * added with, from the loop (never from inside evcurl_add). The easy handles stay their
 * owners'; the module uses their CURLOPT_PRIVATE.
 */
#ifndef RDC_EVCURL_H
#define RDC_EVCURL_H

#include <curl/curl.h>
#include <event2/event.h>

typedef struct evcurl evcurl_t;

/* A transfer ended (result CURLE_OK or the failure); easy is out of the multi, and the
 * callback may free it. */
typedef void evcurl_done_fn(CURL *easy, CURLcode result, void *arg);

/* A multi of its own on base (borrowed: it must outlive the module). NULL when out of
 * memory. */
evcurl_t *evcurl_new(struct event_base *base);

/* Remove every transfer first (evcurl_remove). Cleans up the multi (its cached
 * connections close), frees its events and sets *self_p to NULL. NULL-safe. Not from
 * inside a done callback. */
void evcurl_destroy(evcurl_t **self_p);

/* Start easy; done(easy, result, arg) is called once when it ends. Returns 0, or -1 when
 * curl refuses the handle or memory runs out (nothing added, done never called). */
int evcurl_add(evcurl_t *ec, CURL *easy, evcurl_done_fn *done, void *arg);

/* Stop a transfer before it ends; its done is not called. */
void evcurl_remove(evcurl_t *ec, CURL *easy);

/* Transfers in progress. */
int evcurl_running(const evcurl_t *ec);

#endif
