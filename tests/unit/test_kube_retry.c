/* Unit tests of the one retry rule (kube_retry.h): the decision as a table, row by row
 * of the header's rule, and its helpers; and of the retrying request on a loop
 * (kube_call.h) against the fake API server: which failures it sends again, after how
 * long, counted in the same metric as the blocking client's retries, stopped by the
 * deadline and by the fence. */
#include "clock.h"
#include "cu_curl.h"
#include "cu_table.h"
#include "fake_api.h"
#include "fake_clock.h"
#include "kube_call.h"
#include "kube_client.h"
#include "kube_retry.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics.h"

#include <CUnit/CUnit.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS (INT64_C(1000000))
#define SEC (INT64_C(1000000000))

static const kube_retry_policy_t policy = {
    .max_retries = 3,
    .base_ns = 100 * MS,
    .cap_ns = 5 * SEC,
    .retry_after_cap_ns = 10 * SEC,
};

#define CT_APPLY "application/apply-patch+yaml"
#define CT_MERGE "application/merge-patch+json"
#define CT_JSON "application/json"
/* The answers most rows want: again after the first backoff (100 ms + jitter up to 50 %),
 * or after the server's Retry-After of d (capped). */
#define FIRST_BACKOFF .retry = 1, .reason = KUBE_RETRY_BACKOFF, .min_delay = 100 * MS, .max_delay = 150 * MS
#define SERVER_DELAY(d) .retry = 1, .reason = KUBE_RETRY_SERVER_DELAY, .min_delay = (d), .max_delay = (d) + 1

static const struct {
    const char *name;
    const char *method, *ctype;
    int curl_code, sent, status;
    int64_t retry_after_s;
    int retries, refreshed;
    int64_t now, deadline;
    /* the answer */
    int retry;
    kube_retry_reason_t reason;
    int64_t min_delay, max_delay; /* [min, max) when retry */
} rows[] = {
    /* idempotent: 503/504 and 5xx with Retry-After, with backoff or the server's delay */
    {"GET 503: backoff 100 ms + jitter",
     "GET", NULL, .sent = 1, .status = 503, FIRST_BACKOFF},
    {"GET 503, 2 retries made: 400 ms + jitter",
     "GET", NULL, .sent = 1, .status = 503, .retries = 2,
     .retry = 1, .reason = KUBE_RETRY_BACKOFF, .min_delay = 400 * MS, .max_delay = 600 * MS},
    {"GET 503, max retries made: stop",
     "GET", NULL, .sent = 1, .status = 503, .retries = 3, .reason = KUBE_RETRY_EXHAUSTED},
    {"GET 504: backoff",
     "GET", NULL, .sent = 1, .status = 504, FIRST_BACKOFF},
    {"GET 503 Retry-After 1: 1 s",
     "GET", NULL, .sent = 1, .status = 503, .retry_after_s = 1, SERVER_DELAY(SEC)},
    {"GET 503 Retry-After 60: capped at 10 s",
     "GET", NULL, .sent = 1, .status = 503, .retry_after_s = 60, SERVER_DELAY(10 * SEC)},
    {"PUT 500: an answer",
     "PUT", CT_JSON, .sent = 1, .status = 500, .reason = KUBE_RETRY_FINAL},
    {"PUT 500 Retry-After 1: again",
     "PUT", CT_JSON, .sent = 1, .status = 500, .retry_after_s = 1, SERVER_DELAY(SEC)},
    {"GET 502 without Retry-After: an answer",
     "GET", NULL, .sent = 1, .status = 502, .reason = KUBE_RETRY_FINAL},
    {"apply PATCH 503: again",
     "PATCH", CT_APPLY, .sent = 1, .status = 503, FIRST_BACKOFF},
    {"DELETE 503: again",
     "DELETE", CT_JSON, .sent = 1, .status = 503, FIRST_BACKOFF},
    /* not idempotent: only when the server cannot have acted */
    {"POST 503 once sent: it may have acted",
     "POST", CT_JSON, .sent = 1, .status = 503, .reason = KUBE_RETRY_MAY_HAVE_ACTED},
    {"POST 500 Retry-After 1: it may have acted",
     "POST", CT_JSON, .sent = 1, .status = 500, .retry_after_s = 1, .reason = KUBE_RETRY_MAY_HAVE_ACTED},
    {"merge PATCH 503: it may have acted",
     "PATCH", CT_MERGE, .sent = 1, .status = 503, .reason = KUBE_RETRY_MAY_HAVE_ACTED},
    {"POST 429: refused before processing, again",
     "POST", CT_JSON, .sent = 1, .status = 429, FIRST_BACKOFF},
    {"POST 429 Retry-After 2: 2 s",
     "POST", CT_JSON, .sent = 1, .status = 429, .retry_after_s = 2, SERVER_DELAY(2 * SEC)},
    /* answers */
    {"PUT 409: the reconcile's conflict, not retried",
     "PUT", CT_JSON, .sent = 1, .status = 409, .reason = KUBE_RETRY_FINAL},
    {"GET 404: an answer",
     "GET", NULL, .sent = 1, .status = 404, .reason = KUBE_RETRY_FINAL},
    {"POST 403: an answer",
     "POST", CT_JSON, .sent = 1, .status = 403, .reason = KUBE_RETRY_FINAL},
    {"GET 200 whose body did not decode: an answer",
     "GET", NULL, .sent = 1, .status = 200, .reason = KUBE_RETRY_FINAL},
    /* transport */
    {"POST connect failed: again",
     "POST", CT_JSON, .curl_code = CURLE_COULDNT_CONNECT, FIRST_BACKOFF},
    {"POST host not resolved: again",
     "POST", CT_JSON, .curl_code = CURLE_COULDNT_RESOLVE_HOST, FIRST_BACKOFF},
    {"POST TLS handshake failed: again",
     "POST", CT_JSON, .curl_code = CURLE_SSL_CONNECT_ERROR, FIRST_BACKOFF},
    {"POST timed out before sending: again",
     "POST", CT_JSON, .curl_code = CURLE_OPERATION_TIMEDOUT, FIRST_BACKOFF},
    {"GET timed out once sent: the call's timeout",
     "GET", NULL, .curl_code = CURLE_OPERATION_TIMEDOUT, .sent = 1, .reason = KUBE_RETRY_FINAL},
    {"POST reset after sending: it may have acted",
     "POST", CT_JSON, .curl_code = CURLE_RECV_ERROR, .sent = 1, .reason = KUBE_RETRY_MAY_HAVE_ACTED},
    {"POST resent by libcurl, its rewind refused: it may have acted",
     "POST", CT_JSON, .curl_code = CURLE_SEND_FAIL_REWIND, .sent = 1, .reason = KUBE_RETRY_MAY_HAVE_ACTED},
    {"POST send failed before a byte went: again",
     "POST", CT_JSON, .curl_code = CURLE_SEND_ERROR, FIRST_BACKOFF},
    {"DELETE reset after sending: again",
     "DELETE", CT_JSON, .curl_code = CURLE_RECV_ERROR, .sent = 1, FIRST_BACKOFF},
    {"GET empty reply: again",
     "GET", NULL, .curl_code = CURLE_GOT_NOTHING, .sent = 1, FIRST_BACKOFF},
    {"GET HTTP/2 stream reset: again",
     "GET", NULL, .curl_code = CURLE_HTTP2_STREAM, .sent = 1, FIRST_BACKOFF},
    {"GET certificate not verified: stop",
     "GET", NULL, .curl_code = CURLE_PEER_FAILED_VERIFICATION, .reason = KUBE_RETRY_FINAL},
    {"GET body over the cap: stop",
     "GET", NULL, .curl_code = CURLE_WRITE_ERROR, .sent = 1, .status = 200, .reason = KUBE_RETRY_FINAL},
    /* 401: the credential refreshed, once, whatever the method and the count */
    {"POST 401: again at once",
     "POST", CT_JSON, .sent = 1, .status = 401, .retry = 1, .reason = KUBE_RETRY_REFRESH, .max_delay = 1},
    {"POST 401 whose body broke off: again at once",
     "POST", CT_JSON, .curl_code = CURLE_PARTIAL_FILE, .sent = 1, .status = 401,
     .retry = 1, .reason = KUBE_RETRY_REFRESH, .max_delay = 1},
    {"GET 401 after the refresh: stop",
     "GET", NULL, .sent = 1, .status = 401, .retries = 1, .refreshed = 1, .reason = KUBE_RETRY_AUTH_REFUSED},
    {"GET 401 with max retries made: again",
     "GET", NULL, .sent = 1, .status = 401, .retries = 3, .retry = 1, .reason = KUBE_RETRY_REFRESH, .max_delay = 1},
    /* the deadline */
    {"GET 503 Retry-After 1, 1 s left: stop",
     "GET", NULL, .sent = 1, .status = 503, .retry_after_s = 1, .now = 5 * SEC, .deadline = 6 * SEC,
     .reason = KUBE_RETRY_DEADLINE},
    {"GET 503 Retry-After 1, 1.5 s left: again",
     "GET", NULL, .sent = 1, .status = 503, .retry_after_s = 1, .now = 5 * SEC, .deadline = 6500 * MS,
     SERVER_DELAY(SEC)},
    {"GET 503, 50 ms left: stop",
     "GET", NULL, .sent = 1, .status = 503, .now = 5 * SEC, .deadline = 5050 * MS, .reason = KUBE_RETRY_DEADLINE},
    {"GET 401 at the deadline: stop",
     "GET", NULL, .sent = 1, .status = 401, .now = 5 * SEC, .deadline = 5 * SEC, .reason = KUBE_RETRY_DEADLINE},
    {"POST 503 past the deadline: still it may have acted",
     "POST", CT_JSON, .sent = 1, .status = 503, .now = 5 * SEC, .deadline = SEC, .reason = KUBE_RETRY_MAY_HAVE_ACTED},
};

static void test_rule_table(void)
{
    uint64_t rng = 42;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        kube_retry_in_t in = {
            .idempotent = kube_retry_idempotent(rows[i].method, rows[i].ctype),
            .curl_code = rows[i].curl_code,
            .sent = rows[i].sent,
            .http_status = rows[i].status,
            .retry_after_s = rows[i].retry_after_s,
            .retries = rows[i].retries,
            .refreshed = rows[i].refreshed,
            .now_ns = rows[i].now,
            .deadline_ns = rows[i].deadline,
        };
        kube_retry_t d = kube_retry_decide(&policy, &in, &rng);
        int ok = d.retry == rows[i].retry && d.reason == rows[i].reason &&
                 (d.retry ? d.delay_ns >= rows[i].min_delay && d.delay_ns < rows[i].max_delay : d.delay_ns == 0);
        if (!ok)
            fprintf(stderr, "\nrow \"%s\": retry %d reason %s delay %lld\n", rows[i].name, d.retry,
                    kube_retry_reason_name(d.reason), (long long)d.delay_ns);
        CU_ASSERT(ok);
    }
}

/* The jitter stays within [d, 1.5 d), and the backoff stops doubling at the cap. */
static void test_backoff_bounds(void)
{
    uint64_t rng = 7;
    kube_retry_in_t in = {.idempotent = 1, .http_status = 503};
    kube_retry_policy_t p = policy;
    p.max_retries = 100;
    for (int r = 0; r < 20; r++) {
        in.retries = r;
        int64_t want = 100 * MS << (r < 6 ? r : 6);
        if (want > 5 * SEC)
            want = 5 * SEC;
        for (int k = 0; k < 50; k++) {
            kube_retry_t d = kube_retry_decide(&p, &in, &rng);
            CU_ASSERT(d.retry && d.reason == KUBE_RETRY_BACKOFF);
            CU_ASSERT(d.delay_ns >= want && d.delay_ns < want + want / 2);
        }
    }
}

static void test_idempotent(void)
{
    CU_ASSERT(kube_retry_idempotent("GET", NULL));
    CU_ASSERT(kube_retry_idempotent("PUT", CT_JSON));
    CU_ASSERT(kube_retry_idempotent("DELETE", CT_JSON));
    CU_ASSERT(kube_retry_idempotent("PATCH", CT_APPLY));
    CU_ASSERT_FALSE(kube_retry_idempotent("PATCH", CT_MERGE));
    CU_ASSERT_FALSE(kube_retry_idempotent("PATCH", "application/json-patch+json"));
    CU_ASSERT_FALSE(kube_retry_idempotent("PATCH", "application/strategic-merge-patch+json"));
    CU_ASSERT_FALSE(kube_retry_idempotent("PATCH", NULL));
    CU_ASSERT_FALSE(kube_retry_idempotent("POST", CT_JSON));
    CU_ASSERT_FALSE(kube_retry_idempotent(NULL, NULL));
}

static void test_parse_after(void)
{
    static const struct {
        const char *line;
        int64_t seconds; /* -1: not found (s left as it was) */
    } cases[] = {
        {"Retry-After: 3\r\n", 3},
        {"retry-after:\t120\r\n", 120},
        {"Retry-After: 1234567890123\r\n", 123456789}, /* 9 digits at most */
        {"Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n", -1}, /* a date: not read */
        {"Retry-After:\r\n", -1},
        {"X-Retry-After: 3\r\n", -1},
        {"HTTP/1.1 503 Service Unavailable\r\n", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t s = -1;
        CU_ASSERT_EQUAL(kube_retry_parse_after(cases[i].line, strlen(cases[i].line), &s), cases[i].seconds >= 0);
        CU_ASSERT_EQUAL(s, cases[i].seconds);
    }
    CU_ASSERT_STRING_EQUAL(kube_retry_reason_name(KUBE_RETRY_MAY_HAVE_ACTED), "may-have-acted");
    CU_ASSERT_STRING_EQUAL(kube_retry_reason_name(KUBE_RETRY_DEADLINE), "deadline");
}

/* ---- kube_call against the fake API server ------------------------------------------ */

typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    fake_log_t log;
    unsigned fail_mask;      /* bit i set: request i gets fail_status */
    unsigned drop_mask;      /* bit i set: request i gets no answer, its connection dropped */
    int fail_status;
    const char *retry_after; /* the failures' Retry-After header; NULL = none */
    const char *token_file;  /* set: "Bearer t1" gets 401 and the file becomes "t2" */
    kube_config_t *cfg;
    kube_client_t *client;
} api_t;

static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url,
                      const char *body, buf_t *out)
{
    (void)body;
    api_t *a = user;
    pthread_mutex_lock(&a->mu);
    int i = fake_log_add(&a->log, method, url);
    int fail = i < 32 && (a->fail_mask >> i) & 1, drop = i < 32 && (a->drop_mask >> i) & 1;
    int status = a->fail_status;
    const char *ra = a->retry_after;
    const char *token_file = a->token_file;
    pthread_mutex_unlock(&a->mu);
    if (drop)
        return -1;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (token_file && auth && !strcmp(auth, "Bearer t1")) {
        FILE *f = fopen(token_file, "w"); /* the credential rotates */
        if (f) {
            fputs("t2-rotated\n", f);
            fclose(f);
        }
        buf_puts(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":401}");
        return 401;
    }
    if (fail) {
        if (ra)
            fake_api_reply_header("Retry-After", ra);
        buf_printf(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":%d,"
                        "\"message\":\"no\"}", status);
        return status;
    }
    const char *cont = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue");
    if (strstr(url, "/pods")) /* a LIST of two pages of one pod */
        buf_printf(out, "{\"metadata\":{%s},\"items\":[{\"metadata\":{\"name\":\"p%d\"}}]}",
                   cont ? "" : "\"continue\":\"more\"", cont ? 2 : 1);
    else
        buf_printf(out, "{\"metadata\":{\"name\":\"%s\"}}", strrchr(url, '/') + 1);
    return !strcmp(method, "POST") ? 201 : 200;
}

/* A server and a client whose retries are fast (base 1 ms, at most 3) and whose
 * Retry-After cap is ra_cap_ms; the server answers the requests of fail_mask with status
 * (and the header Retry-After: ra, NULL = none), the others as they ask. */
static void api_open(api_t *a, int64_t ra_cap_ms, unsigned fail_mask, int status, const char *ra)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->mu, NULL);
    a->fail_mask = fail_mask;
    a->fail_status = status;
    a->retry_after = ra;
    kube_client_opts_t o = fake_api_opts(3);
    o.retry_after_cap_ms = ra_cap_ms;
    fake_api_open(&a->srv, on_request, a, &o, &a->cfg, &a->client);
}

static void api_close(api_t *a)
{
    fake_api_close(&a->srv, &a->cfg, &a->client);
    pthread_mutex_destroy(&a->mu);
}

/* What done saw. */
typedef struct {
    int calls;
    kube_error_code_t code;
    int curl_code;
    int fenced, retries;
    kube_retry_reason_t stop;
    long status;
    char body[256];
    int items;
} seen_t;

static void on_done(const kube_call_result_t *r, void *arg)
{
    seen_t *s = arg;
    s->calls++;
    s->code = r->err.code;
    s->curl_code = r->err.curl_code;
    s->fenced = r->fenced;
    s->retries = r->retries;
    s->stop = r->stop;
    s->status = r->http_status;
    snprintf(s->body, sizeof(s->body), "%.*s", (int)r->len, r->body ? r->body : "");
    s->items = r->items ? (int)json_object_array_length(r->items) : -1;
}

/* Run spec to its end on a loop of its own; the seconds it took. */
static double run_call(api_t *a, const kube_call_spec_t *spec, seen_t *s)
{
    memset(s, 0, sizeof(*s));
    loop_t *loop = loop_new();
    loop_curl_t *lc = loop_curl_open(loop);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lc);
    int64_t t0 = clock_mono_ns();
    kube_call_t *k = kube_call_start(lc, a->client, spec, on_done, s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_EQUAL(s->calls, 0); /* never from inside kube_call_start */
    for (int i = 0; i < 500 && !s->calls; i++)
        loop_run_once(loop, 20 * NS_PER_MS);
    CU_ASSERT_EQUAL(s->calls, 1);
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    loop_curl_destroy(&lc);
    loop_destroy(&loop);
    return secs;
}

static double retries_counted(kube_client_t *c, const char *code, const char *verb)
{
    metric_family_t *f = metrics_counter(metrics_default(), "rest_client_request_retries_total", "", "code,verb,host");
    return metric_value(f, METRIC_LABELS(code, verb, kube_client_host(c)));
}

#define CM_PATH "/api/v1/namespaces/default/configmaps/a"

/* A GET answered 503 with Retry-After is sent again after the server's delay (1 s,
 * capped at 300 ms here), not after the 1 ms backoff; the answer comes back. */
static void test_call_get_retry_after(void)
{
    api_t a;
    api_open(&a, 300, 1, 503, "1");
    seen_t s;
    kube_call_spec_t spec = {.method = "GET", .path = CM_PATH};
    double secs = run_call(&a, &spec, &s);
    CU_ASSERT_EQUAL(s.code, KERR_OK);
    CU_ASSERT_EQUAL(s.retries, 1);
    CU_ASSERT_EQUAL(s.status, 200);
    CU_ASSERT_STRING_EQUAL(s.body, "{\"metadata\":{\"name\":\"a\"}}");
    CU_ASSERT_EQUAL(a.log.n, 2);
    CU_ASSERT(secs >= 0.3 && secs < 1.0);
    api_close(&a);
}

/* The rule on the loop, row by row: what the server answers the first attempt (or every
 * attempt), what the call ends with, and how many requests the server saw. */
static const struct {
    const char *name;
    const char *method, *ctype;
    unsigned fail_mask;
    int status;
    kube_error_code_t code;
    kube_retry_reason_t stop; /* when the call failed */
    int requests;
} call_rows[] = {
    {"POST 503 once sent: not again",
     "POST", "application/json", 1, 503, KERR_UNAVAILABLE, KUBE_RETRY_MAY_HAVE_ACTED, 1},
    {"POST 429: again",
     "POST", "application/json", 1, 429, KERR_OK, 0, 2},
    {"merge PATCH 503: not again",
     "PATCH", "application/merge-patch+json", 1, 503, KERR_UNAVAILABLE, KUBE_RETRY_MAY_HAVE_ACTED, 1},
    {"apply PATCH 503: again",
     "PATCH", "application/apply-patch+yaml", 1, 503, KERR_OK, 0, 2},
    {"DELETE 504: again",
     "DELETE", "application/json", 1, 504, KERR_OK, 0, 2},
    {"PUT 409: the answer",
     "PUT", "application/json", 1, 409, KERR_CONFLICT, KUBE_RETRY_FINAL, 1},
    {"PUT 500 without Retry-After: the answer",
     "PUT", "application/json", 1, 500, KERR_INTERNAL, KUBE_RETRY_FINAL, 1},
    {"GET 503 every time: max_retries (3) made",
     "GET", NULL, ~0u, 503, KERR_UNAVAILABLE, KUBE_RETRY_EXHAUSTED, 4},
    /* a static token: the refresh has no other credential to offer, as the blocking client */
    {"GET 401 without a new credential: the answer",
     "GET", NULL, ~0u, 401, KERR_UNAUTHORIZED, KUBE_RETRY_AUTH_REFUSED, 1},
};

static void test_call_rule_rows(void)
{
    api_t a;
    api_open(&a, 300, 0, 0, NULL);
    for (size_t i = 0; i < sizeof(call_rows) / sizeof(call_rows[0]); i++) {
        a.log.n = 0;
        a.fail_mask = call_rows[i].fail_mask;
        a.fail_status = call_rows[i].status;
        seen_t s;
        kube_call_spec_t spec = {.method = call_rows[i].method, .path = CM_PATH, .content_type = call_rows[i].ctype,
                                 .body = call_rows[i].ctype ? "{}" : NULL, .len = call_rows[i].ctype ? 2 : 0};
        run_call(&a, &spec, &s);
        int ok = s.code == call_rows[i].code && a.log.n == call_rows[i].requests &&
                 s.retries == call_rows[i].requests - 1 && (s.code == KERR_OK || s.stop == call_rows[i].stop);
        if (!ok)
            fprintf(stderr, "\nrow \"%s\": code %d, stop %s, %d requests, %d retries\n", call_rows[i].name, s.code,
                    kube_retry_reason_name(s.stop), a.log.n, s.retries);
        CU_ASSERT(ok);
    }
    api_close(&a);
}

/* The same failure (a GET's 503, then 200) costs the same count in
 * rest_client_request_retries_total{code="503",verb="GET",host}, sent by the blocking
 * client or on the loop. */
static void test_call_counts_retries_like_blocking(void)
{
    api_t a;
    api_open(&a, 300, 0, 503, NULL);
    double before = retries_counted(a.client, "503", "GET");
    /* blocking, on a test clock so that it does not sleep */
    a.fail_mask = 1;
    fake_clock_t fc = {.now = NS_PER_SEC};
    kube_client_t *blocking = kube_client_new(a.cfg, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(blocking);
    kube_client_clock_t clk = {fc_now, fc_sleep, &fc};
    kube_client_set_clock(blocking, &clk);
    kube_error_t err;
    CU_ASSERT_EQUAL(kube_client_get(blocking, CM_PATH, NULL, NULL, &err), 0);
    double after_blocking = retries_counted(a.client, "503", "GET");
    kube_client_stats_t st;
    kube_client_stats(blocking, &st);
    CU_ASSERT_EQUAL(st.retries, 1);
    kube_client_destroy(&blocking);
    /* on the loop */
    a.log.n = 0;
    seen_t s;
    kube_call_spec_t spec = {.method = "GET", .path = CM_PATH};
    run_call(&a, &spec, &s);
    CU_ASSERT_EQUAL(s.code, KERR_OK);
    double after_async = retries_counted(a.client, "503", "GET");
    CU_ASSERT_DOUBLE_EQUAL(after_blocking - before, 1, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(after_async - after_blocking, 1, 1e-9);
    kube_client_stats(a.client, &st);
    CU_ASSERT_EQUAL(st.retries, 1);
    CU_ASSERT_EQUAL(st.requests, 2); /* every attempt counted */
    api_close(&a);
}

/* A retry that cannot start before the caller's deadline is not made: a 503 asking for
 * 1 s with 0.4 s left ends the call at once with the 503. */
static void test_call_deadline_stops_retries(void)
{
    api_t a;
    api_open(&a, 10000, ~0u, 503, "1");
    seen_t s;
    kube_call_spec_t spec = {.method = "GET", .path = CM_PATH, .deadline_ns = clock_mono_ns() + 400 * NS_PER_MS};
    double secs = run_call(&a, &spec, &s);
    CU_ASSERT_EQUAL(s.code, KERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(s.stop, KUBE_RETRY_DEADLINE);
    CU_ASSERT_EQUAL(s.retries, 0);
    CU_ASSERT_EQUAL(a.log.n, 1);
    CU_ASSERT(secs < 0.4);
    /* with the backoff instead: retries while they fit, then the last 503 */
    a.log.n = 0;
    a.retry_after = NULL;
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 0;
    o.max_retries = 100;
    o.retry_base_ms = 100;
    kube_client_t *slow = kube_client_new(a.cfg, &o, NULL);
    kube_client_t *fast = a.client;
    a.client = slow;
    spec.deadline_ns = clock_mono_ns() + 500 * NS_PER_MS;
    secs = run_call(&a, &spec, &s);
    CU_ASSERT_EQUAL(s.code, KERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(s.stop, KUBE_RETRY_DEADLINE);
    CU_ASSERT(s.retries >= 1 && s.retries <= 3); /* 100-150, 200-300 ms ... within 0.5 s */
    CU_ASSERT_EQUAL(a.log.n, s.retries + 1);
    CU_ASSERT(secs < 0.5);
    a.client = fast;
    kube_client_destroy(&slow);
    /* a deadline already passed: nothing is sent */
    a.log.n = 0;
    spec.deadline_ns = clock_mono_ns() - 1;
    run_call(&a, &spec, &s);
    CU_ASSERT_EQUAL(s.code, KERR_TIMEOUT);
    CU_ASSERT_EQUAL(a.log.n, 0);
    api_close(&a);
}

/* The fence is asked before every attempt: yes for the first, no for the retry, which
 * is then not sent. */
static int fence_once(void *arg)
{
    int *asked = arg;
    return (*asked)++ == 0;
}

static void test_call_fence_refuses_retry(void)
{
    api_t a;
    api_open(&a, 300, 1, 503, NULL);
    int asked = 0;
    seen_t s;
    kube_call_spec_t spec = {.method = "PUT", .path = CM_PATH, .content_type = "application/json", .body = "{}",
                             .len = 2, .fence = fence_once, .fence_arg = &asked};
    run_call(&a, &spec, &s);
    CU_ASSERT_EQUAL(asked, 2);
    CU_ASSERT(s.fenced);
    CU_ASSERT(s.code != KERR_OK);
    CU_ASSERT_EQUAL(a.log.n, 1);
    /* a fence that says no at once: nothing sent */
    a.log.n = 0;
    asked = 1;
    run_call(&a, &spec, &s);
    CU_ASSERT(s.fenced);
    CU_ASSERT_EQUAL(a.log.n, 0);
    api_close(&a);
}

/* A LIST goes page by page; a page that fails is asked again (the same continue
 * token), not the list from its first page. */
static void test_call_list_retries_a_page(void)
{
    api_t a;
    api_open(&a, 300, 2, 503, NULL); /* the second page, once */
    seen_t s;
    kube_req_opts_t ro = {.label_selector = "app=x", .limit = 1};
    kube_call_spec_t spec = {.path = "/api/v1/namespaces/default/pods", .list = &ro};
    run_call(&a, &spec, &s);
    CU_ASSERT_EQUAL(s.code, KERR_OK);
    CU_ASSERT_EQUAL(s.items, 2);
    CU_ASSERT_EQUAL(s.retries, 1);
    CU_ASSERT_EQUAL(a.log.n, 3); /* page 1, page 2 (503), page 2 */
    api_close(&a);
}

/* A POST on a kept-alive connection whose answer never comes (the server drops the
 * connection): libcurl would send it again by itself on a fresh connection, as it does
 * for any request whose reused connection died without an answer; the server may have
 * acted, so it is sent once, on the loop as by the blocking client. A PUT may go again. */
static void test_post_not_resent_by_curl(void)
{
    api_t a;
    api_open(&a, 300, 0, 0, NULL);
    loop_t *loop = loop_new();
    loop_curl_t *lc = loop_curl_open(loop);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lc);
    a.drop_mask = 2; /* the second request, on the first one's connection */
    kube_call_spec_t get = {.method = "GET", .path = CM_PATH};
    kube_call_spec_t post = {.method = "POST", .path = "/api/v1/namespaces/default/configmaps",
                             .content_type = "application/json", .body = "{}", .len = 2};
    seen_t s[2];
    memset(s, 0, sizeof(s));
    CU_ASSERT_PTR_NOT_NULL_FATAL(kube_call_start(lc, a.client, &get, on_done, &s[0]));
    for (int i = 0; i < 200 && !s[0].calls; i++)
        loop_run_once(loop, 10 * NS_PER_MS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kube_call_start(lc, a.client, &post, on_done, &s[1]));
    for (int i = 0; i < 200 && !s[1].calls; i++)
        loop_run_once(loop, 10 * NS_PER_MS);
    CU_ASSERT_EQUAL(s[0].code, KERR_OK);
    CU_ASSERT_EQUAL(s[1].code, KERR_TRANSPORT);
    CU_ASSERT_EQUAL(s[1].stop, KUBE_RETRY_MAY_HAVE_ACTED);
    CU_ASSERT_EQUAL(fake_log_count(&a.log, "POST", "/configmaps"), 1);
    /* libcurl reused the GET's connection, found it dead, opened another to send the POST
     * again and could not rewind its body */
    CU_ASSERT_EQUAL(s[1].curl_code, CURLE_SEND_FAIL_REWIND);
    loop_curl_destroy(&lc);
    loop_destroy(&loop);
    /* the blocking client: the same */
    a.log.n = 0;
    kube_error_t err;
    json_object *body = json_object_new_object();
    CU_ASSERT_EQUAL(kube_client_get(a.client, CM_PATH, NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL(kube_client_create(a.client, "/api/v1/namespaces/default/configmaps", body, NULL, NULL, &err),
                    KERR_TRANSPORT);
    CU_ASSERT_EQUAL(err.curl_code, CURLE_SEND_FAIL_REWIND);
    CU_ASSERT_EQUAL(fake_log_count(&a.log, "POST", "/configmaps"), 1);
    /* a PUT whose answer never comes is idempotent: sent again (here by libcurl) */
    a.log.n = 0;
    CU_ASSERT_EQUAL(kube_client_get(a.client, CM_PATH, NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL(kube_client_update(a.client, CM_PATH, body, NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL(fake_log_count(&a.log, "PUT", "/configmaps"), 2);
    json_object_put(body);
    api_close(&a);
}

/* A 401 refreshes the credential (a token file, rotated meanwhile) and the request goes
 * once more with the new one, counted as a retry with code 401. */
static void test_call_401_refreshed(void)
{
    api_t a;
    api_open(&a, 300, 0, 0, NULL);
    char dir[] = "/tmp/test_kube_retry.XXXXXX", path[64], yaml[1024], why[256];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/token", dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("t1\n", f);
    fclose(f);
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster: {server: http://127.0.0.1:%d}\n"
             "contexts:\n- name: f\n  context: {cluster: f, user: u}\ncurrent-context: f\n"
             "users:\n- name: u\n  user: {tokenFile: %s}\n",
             a.srv.port, path);
    kube_config_t *cfg = NULL;
    CU_ASSERT_FATAL(kube_config_load_buffer(yaml, strlen(yaml), "test", NULL, &cfg, why, sizeof(why)) == 0);
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 0;
    kube_client_t *fixed = a.client;
    a.client = kube_client_new(cfg, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a.client);
    a.token_file = path;
    double before = retries_counted(a.client, "401", "GET");
    seen_t s;
    kube_call_spec_t spec = {.method = "GET", .path = CM_PATH};
    run_call(&a, &spec, &s);
    CU_ASSERT_EQUAL(s.code, KERR_OK);
    CU_ASSERT_EQUAL(s.retries, 1);
    CU_ASSERT_EQUAL(a.log.n, 2);
    CU_ASSERT_DOUBLE_EQUAL(retries_counted(a.client, "401", "GET") - before, 1, 1e-9);
    kube_client_destroy(&a.client);
    kube_config_destroy(&cfg);
    a.client = fixed;
    unlink(path);
    rmdir(dir);
    api_close(&a);
}

/* Cancelled with a retry waiting, or with its request in flight: done never comes,
 * nothing leaks (ASan). A bad path ends through done on the next turn. */
static void test_call_cancel(void)
{
    api_t a;
    api_open(&a, 2000, ~0u, 503, "1");
    loop_t *loop = loop_new();
    loop_curl_t *lc = loop_curl_open(loop);
    seen_t s = {0};
    kube_call_spec_t spec = {.method = "GET", .path = CM_PATH};
    kube_call_t *k = kube_call_start(lc, a.client, &spec, on_done, &s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    for (int i = 0; i < 100 && a.log.n < 1; i++)
        loop_run_once(loop, 10 * NS_PER_MS);
    for (int i = 0; i < 5; i++)
        loop_run_once(loop, 10 * NS_PER_MS); /* the answer in, the retry waiting */
    kube_call_cancel(&k);
    CU_ASSERT_PTR_NULL(k);
    k = kube_call_start(lc, a.client, &spec, on_done, &s); /* in flight */
    kube_call_cancel(&k);
    for (int i = 0; i < 5; i++)
        loop_run_once(loop, 10 * NS_PER_MS);
    CU_ASSERT_EQUAL(s.calls, 0);
    kube_call_spec_t bad = {.method = "GET", .path = "no-slash"};
    k = kube_call_start(lc, a.client, &bad, on_done, &s);
    CU_ASSERT_PTR_NOT_NULL(k);
    CU_ASSERT_EQUAL(s.calls, 0);
    loop_run_once(loop, 10 * NS_PER_MS);
    CU_ASSERT_EQUAL(s.calls, 1);
    CU_ASSERT_EQUAL(s.code, KERR_CONFIG);
    loop_curl_destroy(&lc);
    loop_destroy(&loop);
    api_close(&a);
}

static int suite_init(void)
{
    rlog_init("test_kube_retry", RLOG_ERROR, RLOG_TEXT, NULL);
    return cu_curl_init();
}

CU_HOOKS({"kube_call", suite_init, cu_curl_clean, NULL, NULL});

static const cu_entry_t tests[] = {
    CU_SUITE("kube_retry"),
    {"the rule, row by row", test_rule_table},
    {"backoff: doubling, capped, jitter within 50 %", test_backoff_bounds},
    {"idempotency by method and patch type", test_idempotent},
    {"Retry-After header: delta seconds only", test_parse_after},
    CU_SUITE("kube_call"),
    {"a GET's 503 retried after its Retry-After", test_call_get_retry_after},
    {"the rule, row by row: a POST's 503 not retried once sent, 429 is, 409 never ...", test_call_rule_rows},
    {"retries counted as the blocking client counts them", test_call_counts_retries_like_blocking},
    {"the deadline stops retries", test_call_deadline_stops_retries},
    {"the fence refuses a retry", test_call_fence_refuses_retry},
    {"a LIST retries the page that failed", test_call_list_retries_a_page},
    {"a 401 sent once more with the refreshed credential", test_call_401_refreshed},
    {"a POST whose kept-alive connection died is not resent by libcurl", test_post_not_resent_by_curl},
    {"cancelled: no done, no leak; a bad path ends on the next turn", test_call_cancel},
};
CU_MAIN(tests)
