/* secretfetch: one Secret of a RedisCluster read over observerd's loop (a GET through
 * loop_curl, never blocking), and read again when asked: spec.auth's (the password the
 * probes authenticate with) and spec.tls's (what they verify the pods against and show
 * them). The Secret's data is handed to the owner's callback and not kept here.
 *
 * A fetch is wanted (secretfetch_set: a name; "" none), then due at a time
 * (secretfetch_due): secretfetch_tick starts it once due and none is in flight; when its
 * transfer ends (loop_curl_add_cb's callback, on the loop) the callback gets
 * the Secret (parsed, its "data" as the API has it, base64) or NULL and why ("HTTP 404",
 * "the Secret's body is not JSON: ..."), and the owner decides when to read it again.
 * The callback may not destroy the fetcher.
 * resourceVersion of the last answer is kept (secretfetch_rv), so a Secret's change seen
 * on the delta stream (its metadata) says whether it is news.
 */
#ifndef RDC_OBSERVERD_SECRETFETCH_H
#define RDC_OBSERVERD_SECRETFETCH_H

#include "kube_client.h"
#include "loop_curl.h"

#include <curl/curl.h>
#include <json-c/json.h>
#include <stdint.h>

typedef struct secretfetch secretfetch_t;

/* The answer: secret (borrowed for the call) or NULL with why. */
typedef void secretfetch_fn(const json_object *secret, const char *why, void *arg);

/* A fetcher for Secrets of namespace ns through client (NULL: never fetches) on lc, its
 * answers to fn(arg). NULL when out of memory. */
secretfetch_t *secretfetch_new(loop_curl_t *lc, kube_client_t *client, const char *ns, secretfetch_fn *fn,
                               void *arg);

/* Stop what is in flight (no callback) and free; *f_p = NULL. NULL is fine. */
void secretfetch_destroy(secretfetch_t **f_p);

/* Want Secret name ("" or NULL: none). A change of name stops what is in flight and makes
 * it due now (now_ns, the loop's clock); the same name changes nothing. Returns 1 when
 * the name changed, else 0. */
int secretfetch_set(secretfetch_t *f, const char *name, int64_t now_ns);

/* The Secret wanted ("" none). */
const char *secretfetch_name(const secretfetch_t *f);

/* Read it (again) at or after at_ns, unless one is in flight or due sooner already. */
void secretfetch_due(secretfetch_t *f, int64_t at_ns);

/* 1 when a read is due or in flight. */
int secretfetch_pending(const secretfetch_t *f);

/* Start the read when it is due at now_ns and none is in flight (a read that cannot start
 * is due again after retry_ns, said at warning level once). */
void secretfetch_tick(secretfetch_t *f, int64_t now_ns, int64_t retry_ns);

/* The resourceVersion of the last answer ("" none). */
const char *secretfetch_rv(const secretfetch_t *f);

#endif
