/* loop_curl: a curl multi handle driven by the shared loop (curl's multi-event model,
 * docs/examples/multi-event.c): curl says which sockets it wants read or written and when
 * its single timer is due; this module registers exactly that with the loop and hands
 * readiness back with curl_multi_socket_action(). Every finished transfer is removed from
 * the multi and reported to the done callback, which may free it or add it again.
 *
 * The multi handle stays the caller's: this module only sets its SOCKET/TIMER callbacks.
 */
#ifndef RDC_LOOP_CURL_H
#define RDC_LOOP_CURL_H

#include "loop.h"

#include <curl/curl.h>

typedef struct loop_curl loop_curl_t;

/* A transfer ended (result CURLE_OK or the failure). easy is no longer in the multi. */
typedef void loop_curl_done_fn(CURL *easy, CURLcode result, void *arg);

/* Drive multi from loop, reporting finished transfers to done. Returns NULL when out of
 * memory (nothing was changed). */
loop_curl_t *loop_curl_new(loop_t *loop, CURLM *multi, loop_curl_done_fn *done, void *arg);

/* Detach from the loop (its readers and timer go; the multi's callbacks are cleared) and
 * set *lc_p to NULL. The transfers stay in the multi. NULL is fine. */
void loop_curl_destroy(loop_curl_t **lc_p);

/* Start a transfer: curl_multi_add_handle, then the loop runs it. Returns 0, or -1 when
 * curl refuses the handle (already added, or out of memory). */
int loop_curl_add(loop_curl_t *lc, CURL *easy);

/* Stop a transfer before it ends (no done call). Nothing happens for an unknown handle. */
void loop_curl_remove(loop_curl_t *lc, CURL *easy);

/* Transfers in progress. */
int loop_curl_running(const loop_curl_t *lc);

#endif
