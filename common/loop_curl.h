/* loop_curl: a curl multi handle driven by the shared loop (curl's multi-event model,
 * docs/examples/multi-event.c): curl says which sockets it wants read or written and when
 * its single timer is due; this module registers exactly that with the loop and hands
 * readiness back with curl_multi_socket_action(). Every finished transfer is removed from
 * the multi and reported to the done callback, which may free it or add it again.
 *
 * The multi handle stays the caller's (loop_curl_new: this module only sets its SOCKET/TIMER
 * callbacks), or is the module's own (loop_curl_open): one multi that several users share,
 * each transfer added with the callback that reports its end (loop_curl_add_cb), so that
 * one process keeps one connection cache and, over TLS, one HTTP/2 connection to a server
 * with the streams of every user multiplexed on it (workerd: its reads, writes and Events).
 */
#ifndef RDC_LOOP_CURL_H
#define RDC_LOOP_CURL_H

#include "loop.h"

#include <curl/curl.h>

typedef struct loop_curl loop_curl_t;

/* A transfer ended (result CURLE_OK or the failure). easy is no longer in the multi. */
typedef void loop_curl_done_fn(CURL *easy, CURLcode result, void *arg);

/* Report each transfer multi says is finished to done, once it is removed from multi; done
 * may add transfers or remove others. What this module does after each action, and what
 * the glue of another event loop (webhookd's evcurl, on libevent) does. */
void loop_curl_collect(CURLM *multi, loop_curl_done_fn *done, void *arg);

/* Drive multi from loop, reporting finished transfers to done. Returns NULL when out of
 * memory (nothing was changed). */
loop_curl_t *loop_curl_new(loop_t *loop, CURLM *multi, loop_curl_done_fn *done, void *arg);

/* A multi of the module's own on loop, for several users: CURLPIPE_MULTIPLEX, so that over
 * TLS the transfers share one HTTP/2 connection (with CURLOPT_PIPEWAIT on each, see
 * loop_curl_share_connection). Every transfer goes in with loop_curl_add_cb. Returns NULL
 * when out of memory. loop_curl_destroy frees the multi too. */
loop_curl_t *loop_curl_open(loop_t *loop);

/* Detach from the loop (its readers and timer go; the multi's callbacks are cleared) and
 * set *lc_p to NULL. A caller's multi keeps its transfers; the multi of loop_curl_open is
 * cleaned up (remove every transfer first: the handles stay their owners'). NULL is
 * fine. */
void loop_curl_destroy(loop_curl_t **lc_p);

/* Start a transfer: curl_multi_add_handle, then the loop runs it. Returns 0, or -1 when
 * curl refuses the handle (already added, or out of memory). */
int loop_curl_add(loop_curl_t *lc, CURL *easy);

/* Start a transfer whose end is reported to done(easy, result, arg) instead of the
 * loop_curl's own done (one multi, several users). Returns 0, or -1 when curl refuses the
 * handle or memory runs out (nothing added). */
int loop_curl_add_cb(loop_curl_t *lc, CURL *easy, loop_curl_done_fn *done, void *arg);

/* Ask easy to wait for a connection that can multiplex (HTTP/2 over TLS, ALPN) and share
 * it rather than open one of its own while the first one is being set up
 * (CURLOPT_PIPEWAIT). Only for https URLs: cleartext HTTP/1.1 has nothing to wait for. Set
 * the URL first. */
void loop_curl_share_connection(CURL *easy);

/* Stop a transfer before it ends (no done call). Nothing happens for an unknown handle. */
void loop_curl_remove(loop_curl_t *lc, CURL *easy);

/* The loop it runs on. */
loop_t *loop_curl_loop(const loop_curl_t *lc);

/* Transfers in progress. */
int loop_curl_running(const loop_curl_t *lc);

#endif
