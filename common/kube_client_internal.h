/* kube_client_internal: what the client's files share (kube_client.c: handles, attempts,
 * operations, streams; kube_path.c: paths and queries; kube_pager.c: the non-blocking
 * pager). Not for use outside common/kube_*.c. */
#ifndef RDC_KUBE_CLIENT_INTERNAL_H
#define RDC_KUBE_CLIENT_INTERNAL_H

#include "kube_client.h"
#include "kube_retry.h"
#include "metrics.h"
#include "ratelimit.h"
#include "ratelimit_shared.h"

#include <curl/curl.h>

#define DEFAULT_USER_AGENT "rdc/0.1.0"
#define JSON_DEPTH 128
#define WATCH_DEADLINE_MARGIN_S 30
#define KEEPALIVE_IDLE_S 30L
#define KEEPALIVE_INTVL_S 10L
/* A throttled request is worth a log line when it waited this long (client-go: 1 s). */
#define THROTTLE_LOG_NS NS_PER_SEC
/* A paginated LIST that never ends is a server bug; stop somewhere. */
#define MAX_LIST_PAGES 100000


struct kube_client {
    kube_config_t *cfg;
    const kube_rest_config_t *rest;
    kube_client_opts_t opts;
    char *user_agent;
    char *base_url;   /* scheme://host:port[/prefix] as put in URLs */
    char *host;       /* real host:port, for metrics and Host: */
    char *host_header; /* "Host: ..." when tls_server_name renames the URL, else NULL */
    struct curl_slist *connect_to; /* name:port:host:port for tls_server_name */
    CURL *easy;
    char errbuf[CURL_ERROR_SIZE];
    ratelimit_t rl;
    ratelimit_shared_t *shared_rl; /* the operator's budget, or NULL: rl */
    uint64_t rng;
    kube_client_clock_t clk;
    kube_client_stats_t stats;
    int64_t call_deadline_ns; /* kube_client_set_deadline; 0 = none */
    metric_family_t *m_requests;
    metric_family_t *m_duration;
    metric_family_t *m_retries;
    metric_family_t *m_throttle;
};

/* What one attempt brought back. */
typedef struct {
    buf_t body;
    int http_status;
    int64_t retry_after_s; /* from the Retry-After header; 0 = none */
    int too_large;
} response_t;

/* Append "&key=value" (or "key=value" first) to q, value percent-encoded. 0 or -1. */
int kc_query_add(buf_t *q, const char *key, const char *value);
int kc_query_add_long(buf_t *q, const char *key, long v);

/* The query of a LIST page: ro's selectors and resourceVersion(Match) (first page only),
 * limit and continue when paged. 0 or -1 when q refused. */
int kc_list_query(buf_t *q, const kube_req_opts_t *ro, const char *cont, int paged);

/* A request refused before it was sent because its query string did not fit: err is
 * KERR_CONFIG naming method and path. Returns err->code. */
int kc_query_error(kube_error_t *err, const char *method, const char *path);

/* A list being collected: every item appended to items, the last page's
 * resourceVersion in rv (owned). */
typedef struct {
    json_object *items;
    char *rv;
    int failed;
} collect_t;

/* Append one LIST page's items to the collect_t at user and keep its resourceVersion.
 * 0, or 1 (with failed set) when out of memory. */
int kc_collect_page(json_object *page, void *user);

/* ---- retries: what the blocking client and kube_call share -------------------------- */

/* The client's retry policy (its options: max_retries, backoff, Retry-After cap). */
kube_retry_policy_t kc_retry_policy(const kube_client_t *c);

/* Count one retry in rest_client_request_retries_total{code,verb,host} (code: the failed
 * attempt's HTTP status, "<error>" without one) and in the client's stats. */
void kc_count_retry(kube_client_t *c, const char *method, int curl_code, int http_status);

/* The info line of a retry: its number, the decision's reason and delay, the error of
 * the attempt that failed, and the reconcile it serves when log_id is not NULL. */
void kc_log_retry(const kube_error_t *err, const kube_retry_t *d, int retry, const char *log_id);

/* Take one token of the client's limiter (the operator's budget when shared) for a
 * request of method: *wait is how long to wait before sending (ns, 0 = now), counted in
 * rest_client_rate_limiter_duration_seconds. Returns 0, or -1 when the wait would pass
 * deadline (monotonic ns; 0 = none): nothing is taken then. */
int kc_take_token(kube_client_t *c, const char *method, int64_t deadline, int64_t *wait);

/* The client's monotonic clock (the test clock when kube_client_set_clock set one). */
int64_t kc_now(const kube_client_t *c);

/* Of a stream handle's header list (kube_client_stream_handle's *headers): the
 * Retry-After seconds of the latest response (0 = none), and the generation of the
 * credential it was sent with (a retry after 401 is worth it only with another). */
int64_t kc_stream_retry_after(const struct curl_slist *headers);
uint64_t kc_stream_credential(const struct curl_slist *headers);

/* The credential generation of the pager's page handle (0 when none is set up). */
uint64_t kc_pager_credential(const kube_pager_t *p);

/* A request body as libcurl sends it (kc_set_body), with its read position. */
typedef struct {
    const char *data; /* NULL = none */
    size_t len;
    int idempotent;   /* kube_retry_idempotent of the request */
    size_t off;       /* bytes read so far by the read callback */
} kc_body_t;

/* Give e the body b (borrowed until the transfer ends) of a request that is not a GET:
 * CURLOPT_POSTFIELDS for a request safe to repeat; for one that is not (POST, a merge,
 * JSON or strategic PATCH), a read callback whose rewind is refused once a byte was
 * read. Why: libcurl sends a request again by itself when the reused connection it went
 * on died without an answer ("Connection died, retrying a fresh connect"), whatever the
 * method; the server may have acted on the first one. With the rewind refused that
 * transfer fails with CURLE_SEND_FAIL_REWIND instead, which the one rule (kube_retry.h)
 * does not retry either. Returns the first setopt failure, or CURLE_OK. */
CURLcode kc_set_body(CURL *e, kc_body_t *b);

/* Parse len bytes of JSON with the client's depth limit; NULL with why filled. */
json_object *kc_parse_json(const char *s, size_t len, char *why, size_t whylen);

#endif
