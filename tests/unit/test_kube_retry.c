/* Unit tests of the one retry rule (kube_retry.h): the decision as a table, row by row
 * of the header's rule, and its helpers. */
#include "clock.h"
#include "cu_table.h"
#include "kube_retry.h"

#include <CUnit/CUnit.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

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
    {"GET 503: backoff 100 ms + jitter", "GET", NULL, 0, 1, 503, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"GET 503, 2 retries made: 400 ms + jitter", "GET", NULL, 0, 1, 503, 0, 2, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 400 * MS, 600 * MS},
    {"GET 503, max retries made: stop", "GET", NULL, 0, 1, 503, 0, 3, 0, 0, 0, 0, KUBE_RETRY_EXHAUSTED, 0, 0},
    {"GET 504: backoff", "GET", NULL, 0, 1, 504, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"GET 503 Retry-After 1: 1 s", "GET", NULL, 0, 1, 503, 1, 0, 0, 0, 0, 1, KUBE_RETRY_SERVER_DELAY, SEC, SEC + 1},
    {"GET 503 Retry-After 60: capped at 10 s", "GET", NULL, 0, 1, 503, 60, 0, 0, 0, 0, 1, KUBE_RETRY_SERVER_DELAY, 10 * SEC, 10 * SEC + 1},
    {"PUT 500: an answer", "PUT", CT_JSON, 0, 1, 500, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    {"PUT 500 Retry-After 1: again", "PUT", CT_JSON, 0, 1, 500, 1, 0, 0, 0, 0, 1, KUBE_RETRY_SERVER_DELAY, SEC, SEC + 1},
    {"GET 502 without Retry-After: an answer", "GET", NULL, 0, 1, 502, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    {"apply PATCH 503: again", "PATCH", CT_APPLY, 0, 1, 503, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"DELETE 503: again", "DELETE", CT_JSON, 0, 1, 503, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    /* not idempotent: only when the server cannot have acted */
    {"POST 503 once sent: it may have acted", "POST", CT_JSON, 0, 1, 503, 0, 0, 0, 0, 0, 0, KUBE_RETRY_MAY_HAVE_ACTED, 0, 0},
    {"POST 500 Retry-After 1: it may have acted", "POST", CT_JSON, 0, 1, 500, 1, 0, 0, 0, 0, 0, KUBE_RETRY_MAY_HAVE_ACTED, 0, 0},
    {"merge PATCH 503: it may have acted", "PATCH", CT_MERGE, 0, 1, 503, 0, 0, 0, 0, 0, 0, KUBE_RETRY_MAY_HAVE_ACTED, 0, 0},
    {"POST 429: refused before processing, again", "POST", CT_JSON, 0, 1, 429, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"POST 429 Retry-After 2: 2 s", "POST", CT_JSON, 0, 1, 429, 2, 0, 0, 0, 0, 1, KUBE_RETRY_SERVER_DELAY, 2 * SEC, 2 * SEC + 1},
    /* answers */
    {"PUT 409: the reconcile's conflict, not retried", "PUT", CT_JSON, 0, 1, 409, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    {"GET 404: an answer", "GET", NULL, 0, 1, 404, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    {"POST 403: an answer", "POST", CT_JSON, 0, 1, 403, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    {"GET 200 whose body did not decode: an answer", "GET", NULL, 0, 1, 200, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    /* transport */
    {"POST connect failed: again", "POST", CT_JSON, CURLE_COULDNT_CONNECT, 0, 0, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"POST host not resolved: again", "POST", CT_JSON, CURLE_COULDNT_RESOLVE_HOST, 0, 0, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"POST TLS handshake failed: again", "POST", CT_JSON, CURLE_SSL_CONNECT_ERROR, 0, 0, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"POST timed out before sending: again", "POST", CT_JSON, CURLE_OPERATION_TIMEDOUT, 0, 0, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"GET timed out once sent: the call's timeout", "GET", NULL, CURLE_OPERATION_TIMEDOUT, 1, 0, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    {"POST reset after sending: it may have acted", "POST", CT_JSON, CURLE_RECV_ERROR, 1, 0, 0, 0, 0, 0, 0, 0, KUBE_RETRY_MAY_HAVE_ACTED, 0, 0},
    {"POST send failed before a byte went: again", "POST", CT_JSON, CURLE_SEND_ERROR, 0, 0, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"DELETE reset after sending: again", "DELETE", CT_JSON, CURLE_RECV_ERROR, 1, 0, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"GET empty reply: again", "GET", NULL, CURLE_GOT_NOTHING, 1, 0, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"GET HTTP/2 stream reset: again", "GET", NULL, CURLE_HTTP2_STREAM, 1, 0, 0, 0, 0, 0, 0, 1, KUBE_RETRY_BACKOFF, 100 * MS, 150 * MS},
    {"GET certificate not verified: stop", "GET", NULL, CURLE_PEER_FAILED_VERIFICATION, 0, 0, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    {"GET body over the cap: stop", "GET", NULL, CURLE_WRITE_ERROR, 1, 200, 0, 0, 0, 0, 0, 0, KUBE_RETRY_FINAL, 0, 0},
    /* 401: the credential refreshed, once, whatever the method and the count */
    {"POST 401: again at once", "POST", CT_JSON, 0, 1, 401, 0, 0, 0, 0, 0, 1, KUBE_RETRY_REFRESH, 0, 1},
    {"POST 401 whose body broke off: again at once", "POST", CT_JSON, CURLE_PARTIAL_FILE, 1, 401, 0, 0, 0, 0, 0, 1, KUBE_RETRY_REFRESH, 0, 1},
    {"GET 401 after the refresh: stop", "GET", NULL, 0, 1, 401, 0, 1, 1, 0, 0, 0, KUBE_RETRY_AUTH_REFUSED, 0, 0},
    {"GET 401 with max retries made: again", "GET", NULL, 0, 1, 401, 0, 3, 0, 0, 0, 1, KUBE_RETRY_REFRESH, 0, 1},
    /* the deadline */
    {"GET 503 Retry-After 1, 1 s left: stop", "GET", NULL, 0, 1, 503, 1, 0, 0, 5 * SEC, 6 * SEC, 0, KUBE_RETRY_DEADLINE, 0, 0},
    {"GET 503 Retry-After 1, 1.5 s left: again", "GET", NULL, 0, 1, 503, 1, 0, 0, 5 * SEC, 6500 * MS, 1, KUBE_RETRY_SERVER_DELAY, SEC, SEC + 1},
    {"GET 503, 50 ms left: stop", "GET", NULL, 0, 1, 503, 0, 0, 0, 5 * SEC, 5050 * MS, 0, KUBE_RETRY_DEADLINE, 0, 0},
    {"GET 401 at the deadline: stop", "GET", NULL, 0, 1, 401, 0, 0, 0, 5 * SEC, 5 * SEC, 0, KUBE_RETRY_DEADLINE, 0, 0},
    {"POST 503 past the deadline: still it may have acted", "POST", CT_JSON, 0, 1, 503, 0, 0, 0, 5 * SEC, SEC, 0, KUBE_RETRY_MAY_HAVE_ACTED, 0, 0},
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
        int found;
        int64_t seconds;
    } cases[] = {
        {"Retry-After: 3\r\n", 1, 3},
        {"retry-after:\t120\r\n", 1, 120},
        {"Retry-After: 1234567890123\r\n", 1, 123456789}, /* 9 digits at most */
        {"Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n", 0, -1}, /* a date: not read */
        {"Retry-After:\r\n", 0, -1},
        {"X-Retry-After: 3\r\n", 0, -1},
        {"HTTP/1.1 503 Service Unavailable\r\n", 0, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t s = -1;
        CU_ASSERT_EQUAL(kube_retry_parse_after(cases[i].line, strlen(cases[i].line), &s), cases[i].found);
        CU_ASSERT_EQUAL(s, cases[i].seconds);
    }
    CU_ASSERT_STRING_EQUAL(kube_retry_reason_name(KUBE_RETRY_MAY_HAVE_ACTED), "may-have-acted");
    CU_ASSERT_STRING_EQUAL(kube_retry_reason_name(KUBE_RETRY_DEADLINE), "deadline");
}

static const cu_entry_t tests[] = {
    CU_SUITE("kube_retry"),
    {"the rule, row by row", test_rule_table},
    {"backoff: doubling, capped, jitter within 50 %", test_backoff_bounds},
    {"idempotency by method and patch type", test_idempotent},
    {"Retry-After header: delta seconds only", test_parse_after},
};
CU_MAIN(tests)
