/* kube_retry: the one rule for sending a request to the API server again, as a pure
 * decision.
 *
 * Every path that sends a request asks it after a failed attempt: the blocking client
 * (kube_client.c) and the requests on an event loop (kube_call.h: workerd's writes and
 * reads). Given what the attempt brought back and where the request stands, it says
 * "again after D" or "stop", with the reason. The rule, by what the attempt brought back
 * and the method's idempotency (kube_retry_idempotent):
 *
 *   the attempt                           idempotent: GET, LIST,     not idempotent: POST,
 *                                         PUT, DELETE, apply PATCH   merge/JSON/strategic PATCH
 *   401                                   again at once, once: the credential is refreshed
 *                                         (a second 401 is the answer)
 *   429                                   again                      again
 *   503, 504                              again                      stop: it may have acted
 *   other 5xx carrying Retry-After        again                      stop: it may have acted
 *   other 5xx, any other 4xx (409 too)    stop: the answer (409 is the reconcile's conflict)
 *   no connection: resolve, connect, TLS  again                      again
 *   handshake, a timeout before anything
 *   was sent
 *   sent, then send/receive broke off     again                      stop: it may have acted
 *   (send, recv, empty reply, HTTP/2; a
 *   resend libcurl could not rewind)
 *   TLS verification, the body over the   stop
 *   cap, the call's own timeout once
 *   sent, anything else
 *
 * When it is "again": after the server's Retry-After (or the Status's
 * retryAfterSeconds), capped at the policy's retry_after_cap_ns, else after exponential
 * backoff (base_ns doubling per retry made, capped at cap_ns) plus up to 50 % jitter
 * (client-go's wait.Jitter); the 401 retry at once. It is "stop" instead when
 * max_retries retries were made already (the 401 retry counts among them but is not
 * refused by it), or when the retry could not start before the caller's deadline (now +
 * delay >= deadline).
 *
 * Below the rule, libcurl sends a request again by itself when the reused connection it
 * went on died without an answer; the clients give a body that is not safe to repeat to
 * libcurl so that it cannot (kube_client_internal.h, kc_set_body): that resend fails
 * with CURLE_SEND_FAIL_REWIND, "it may have acted" above.
 *
 * Pure: no clock read (now is an input), no I/O; the jitter's random source is the
 * caller's (*rng, advanced).
 */
#ifndef RDC_KUBE_RETRY_H
#define RDC_KUBE_RETRY_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int max_retries;            /* retries after the first attempt */
    int64_t base_ns;            /* first backoff delay */
    int64_t cap_ns;             /* backoff cap before jitter */
    int64_t retry_after_cap_ns; /* longest Retry-After honoured */
} kube_retry_policy_t;

/* What a failed attempt brought back, and where its request stands. */
typedef struct {
    int idempotent;        /* kube_retry_idempotent of the request */
    int curl_code;         /* the attempt's CURLcode; 0 = the transfer completed */
    int sent;              /* request bytes went out (CURLINFO_REQUEST_SIZE > 0) */
    int http_status;       /* 0 = no answer (a 401 counts even when the body broke off) */
    int64_t retry_after_s; /* Retry-After or the Status's retryAfterSeconds; 0 = none */
    int retries;           /* retries made so far (0 after the first attempt) */
    int refreshed;         /* the retry after a 401 was made already */
    int64_t now_ns;        /* monotonic */
    int64_t deadline_ns;   /* the request's deadline (monotonic); 0 = none */
} kube_retry_in_t;

typedef enum {
    KUBE_RETRY_BACKOFF,       /* again after exponential backoff with jitter */
    KUBE_RETRY_SERVER_DELAY,  /* again after the server's Retry-After (capped) */
    KUBE_RETRY_REFRESH,       /* again at once with a refreshed credential (401) */
    KUBE_RETRY_FINAL,         /* stop: an answer another attempt would not change */
    KUBE_RETRY_MAY_HAVE_ACTED,/* stop: not idempotent, and the server may have acted */
    KUBE_RETRY_AUTH_REFUSED,  /* stop: 401 again after the refreshed credential */
    KUBE_RETRY_EXHAUSTED,     /* stop: max_retries made */
    KUBE_RETRY_DEADLINE       /* stop: the retry could not start before the deadline */
} kube_retry_reason_t;

typedef struct {
    int retry;                  /* 1: send again after delay_ns; 0: stop */
    int64_t delay_ns;           /* 0 when stopping */
    kube_retry_reason_t reason;
} kube_retry_t;

/* The decision after a failed attempt (the rule above). Never fails; advances *rng only
 * when it backs off. */
kube_retry_t kube_retry_decide(const kube_retry_policy_t *p, const kube_retry_in_t *in, uint64_t *rng);

/* 1 when a request of method (with content_type, for PATCH) is safe to repeat: GET,
 * HEAD, PUT, DELETE, and a server-side apply PATCH (application/apply-patch+yaml); 0 for
 * POST and the other PATCH types (a JSON patch "add" to a list is not). */
int kube_retry_idempotent(const char *method, const char *content_type);

/* Name of a reason for log lines: "backoff", "retry-after", "refresh", "final",
 * "may-have-acted", "auth-refused", "exhausted", "deadline". */
const char *kube_retry_reason_name(kube_retry_reason_t r);

/* One response header line (len bytes, no NUL needed): when it is "Retry-After:" with
 * delta seconds, *seconds gets them (at most 9 digits read) and 1 is returned; else 0
 * and *seconds is unchanged. An HTTP date is not read, as client-go does not. */
int kube_retry_parse_after(const char *line, size_t len, int64_t *seconds);

#endif
