/* metrics_serve: the answer to one scrape of /metrics, on the daemon's loop.
 *
 * A request walks these states, each change made by one function (rq_enter) that logs it
 * at debug:
 *
 *   NEW ------> DECIDED (401: no bearer token; 404, 405: not GET /metrics)
 *    |  the token's decision is cached (metrics_auth.h) -> DECIDED, or FETCHING when 200
 *    v
 *   REVIEWING   the connection suspended; the token's TokenReview, then its
 *    |          SubjectAccessReview, run on the loop (common/kube_async). Requests with
 *    |          the same token wait for the one review in flight (a burst of scrapes makes
 *    |          one pair of reviews). Its decision is cached (not a 500) and handed to each.
 *    v
 *   FETCHING    200: the supervisor's exposition is fetched from upstream (loop_curl)
 *    v
 *   DECIDED     the answer is known (200 with the exposition, 401, 403, 500, 502): the
 *    |          connection is resumed and libmicrohttpd asks again, which queues it
 *    v
 *   ANSWERED
 *
 * Nothing blocks: the reviews (bounded by review_timeout_ns each) and the upstream fetch
 * (bounded by upstream_timeout_ns) are transfers of the loop's curl multi; a review takes
 * its token of the operator's QPS budget first (kube_client_throttle) and starts when it
 * allows. A review that cannot be made (the API server unreachable, an error answer) is a
 * 500, not cached; the next scrape asks again.
 *
 * The three libmicrohttpd callbacks take the mserve_t as cls: mserve_answer (the access
 * handler), mserve_completed (frees the request, stopping what it still waits for) and
 * mserve_release (metrics_tls.h: resumes the suspended requests of a daemon about to stop).
 */
#ifndef RDC_METRICS_SERVE_H
#define RDC_METRICS_SERVE_H

#include "kube_client.h"
#include "loop_curl.h"
#include "metrics_auth.h"
#include "metrics_tls.h"

#include <microhttpd.h>
#include <stdint.h>

#define MSERVE_MAX_EXPOSITION ((size_t)32 << 20)

typedef struct mserve mserve_t;

/* Run the listener's daemons soon: a connection was resumed (metrics_tls.h, mtls_wake). */
typedef void mserve_wake_fn(void *arg);

typedef struct {
    loop_curl_t *lc;           /* the loop's transfers: the reviews and the upstream fetch */
    mserve_wake_fn *wake;      /* after a resume, with wake_arg */
    void *wake_arg;
    kube_client_t *client;     /* the API server that reviews tokens */
    mauth_cache_t *cache;      /* the decisions, by SHA-256 of the token */
    const char *upstream;      /* http://HOST:PORT/metrics, the plain exposition */
    int64_t review_timeout_ns; /* each review */
    int64_t upstream_timeout_ns;
} mserve_config_t;

/* A server of scrapes with cfg (borrowed: everything in it must outlive it). NULL when out
 * of memory. */
mserve_t *mserve_new(const mserve_config_t *cfg);

/* Free; every request must have ended (metrics_tls's mtls_stop first). Sets *self_p to
 * NULL; NULL is fine. */
void mserve_destroy(mserve_t **self_p);

/* libmicrohttpd's access handler (cls: the mserve_t). */
enum MHD_Result mserve_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **req_cls);

/* libmicrohttpd's request-completed callback (cls: the mserve_t). */
void mserve_completed(void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode toe);

/* metrics_tls's release (cls: the mserve_t): the requests of d waiting for a review or
 * the upstream stop waiting and are resumed (d is about to stop: they end unanswered). */
void mserve_release(struct MHD_Daemon *d, void *cls);

/* The pieces of metricsd's listener on one loop, made and torn down together (its main
 * and the tests assemble it alike): a curl multi on the loop, the decision cache, the
 * scrapes, and the HTTPS listener that hands them over. */
typedef struct {
    loop_curl_t *lc;
    mauth_cache_t *cache;
    mserve_t *serve;
    mtls_t *tls;
} mserve_stack_t;

/* Make the pieces on loop: scrapes as cfg says (its lc, cache, wake and wake_arg are
 * filled in here) behind a listener as tls says (its handler, handler_cls, completed and
 * release too). Returns 0, or -1 with err (what was made is freed; *st is empty). */
int mserve_stack_start(mserve_stack_t *st, loop_t *loop, mserve_config_t cfg, mtls_opts_t tls, char *err,
                       size_t errlen);

/* In the reverse order: the listener (its requests end), then what they used. st is then
 * empty; an empty one is fine. */
void mserve_stack_stop(mserve_stack_t *st);

/* Requests in flight, and reviews in flight (for tests). */
unsigned mserve_requests(const mserve_t *s);
unsigned mserve_reviews(const mserve_t *s);

#endif
