/* kube_error: a typed error for everything a Kubernetes API call can run into.
 *
 * One value carries the transport outcome (curl code and curl's own message), the HTTP
 * status and the API server's Status object (reason, message, causes, retryAfterSeconds)
 * so that callers decide on a code (not found? conflict? gone?) and log one precise line
 * from kube_error_str(). It is a plain fixed-size value: no allocation, nothing to free,
 * safe to copy; strings are truncated (at a UTF-8 boundary) to their buffers.
 *
 * This module depends only on json-c (not on curl), so the watch decoder and its fuzzer
 * can use it on their own.
 */
#ifndef RDC_KUBE_ERROR_H
#define RDC_KUBE_ERROR_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    KERR_OK = 0,
    KERR_TRANSPORT,          /* connect/TLS/send/receive failed (see curl_code) */
    KERR_TIMEOUT,            /* client-side timeout (curl 28, rate limiter) or reason
                                Timeout / HTTP 504 */
    KERR_BAD_REQUEST,        /* 400 BadRequest */
    KERR_UNAUTHORIZED,       /* 401 */
    KERR_FORBIDDEN,          /* 403 */
    KERR_NOT_FOUND,          /* 404 */
    KERR_METHOD_NOT_ALLOWED, /* 405 */
    KERR_ALREADY_EXISTS,     /* 409 AlreadyExists */
    KERR_CONFLICT,           /* 409 Conflict (stale resourceVersion, failed precondition) */
    KERR_GONE,               /* 410 Gone / Expired / "too old resource version" */
    KERR_INVALID,            /* 422 Invalid, usually with causes */
    KERR_TOO_MANY_REQUESTS,  /* 429 */
    KERR_INTERNAL,           /* 500 InternalError and other 5xx without a better code */
    KERR_SERVER_TIMEOUT,     /* reason ServerTimeout (500 with retryAfterSeconds) */
    KERR_UNAVAILABLE,        /* 503 ServiceUnavailable, 502 Bad Gateway */
    KERR_DECODE,             /* the response could not be understood (or was too big) */
    KERR_CONFIG,             /* bad client configuration or arguments, credentials */
    KERR_OTHER               /* any other non-success status */
} kube_error_code_t;

#define KUBE_ERROR_MAX_CAUSES 8

typedef struct {
    char field[128];   /* "spec.size" */
    char reason[64];   /* "FieldValueInvalid" */
    char message[256]; /* "Invalid value: 11: must be less than or equal to 10" */
} kube_error_cause_t;

typedef struct {
    kube_error_code_t code;
    int http_status;           /* 0 when no HTTP response was received */
    int curl_code;             /* CURLcode of the transfer; 0 when it completed */
    int64_t retry_after_s;     /* Retry-After / details.retryAfterSeconds; 0 = none */
    char method[12];           /* "GET"; "" when unknown */
    char target[512];          /* path or URL the error concerns; "" when unknown */
    char reason[64];           /* Status reason ("NotFound"), or "" */
    char message[1024];        /* Status message, or what went wrong */
    char transport[256];       /* curl's summary and detail for KERR_TRANSPORT/TIMEOUT */
    size_t ncauses;            /* causes[] used; more than fit are counted in ncauses_total */
    size_t ncauses_total;
    kube_error_cause_t causes[KUBE_ERROR_MAX_CAUSES];
} kube_error_t;

/* Reset e to KERR_OK with every field empty. */
void kube_error_clear(kube_error_t *e);

/* Name of a code for messages and metrics: "NotFound", "Conflict", "Transport", ... */
const char *kube_error_code_name(kube_error_code_t code);

/* The code an HTTP status means when there is no Status object to say more: 2xx/3xx ->
 * KERR_OK, 404 -> KERR_NOT_FOUND, 409 -> KERR_CONFLICT, 410 -> KERR_GONE, 5xx ->
 * KERR_INTERNAL unless 502/503 (UNAVAILABLE) or 504 (TIMEOUT), other 4xx -> KERR_OTHER. */
kube_error_code_t kube_error_code_for_http(int http_status);

/* Classify an HTTP response. 2xx (and 1xx/3xx) gives KERR_OK. Otherwise, when body is a
 * Kubernetes Status object ({"kind":"Status", ...}) its reason, message, code, causes
 * and details.retryAfterSeconds fill out; when it is not (an HTML page from a proxy, an
 * empty body) the HTTP status decides and the start of the body, with control
 * characters replaced, becomes the message. out's method, target and retry_after_s are
 * kept (the caller may have set them from the request and the Retry-After header; a
 * Status retryAfterSeconds only fills a missing one); everything else is overwritten.
 * Returns out->code. Never fails; body may be NULL. */
kube_error_code_t kube_error_from_response(int http_status, const char *body, size_t len,
                                           kube_error_t *out);

/* Classify a parsed Status object (a watch ERROR event's object, or a Status returned
 * in a 2xx body). http_status may be 0; the Status's own code is then used. A non-Status
 * object gives KERR_DECODE. Same field rules as kube_error_from_response; returns
 * out->code. */
kube_error_code_t kube_error_from_status(json_object *status, int http_status,
                                         kube_error_t *out);

/* Record a transport failure: code KERR_TRANSPORT (KERR_TIMEOUT when timed_out), the
 * curl code and curl's messages (summary from curl_easy_strerror, detail from the
 * error buffer; either may be NULL or ""). method/target are kept. */
void kube_error_set_transport(kube_error_t *e, int curl_code, int timed_out,
                              const char *summary, const char *detail);

/* Set code and a printf-style message (method/target kept, other fields cleared). */
void kube_error_set(kube_error_t *e, kube_error_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Remember which request the error concerns (either may be NULL to leave it). */
void kube_error_set_request(kube_error_t *e, const char *method, const char *target);

/* One line describing e into buf (always NUL-terminated when len > 0), e.g.
 *   PUT /api/v1/namespaces/default/configmaps/x: 409 Conflict: Operation cannot be ...
 *   GET https://127.0.0.1:6443/api/v1/pods: transport: curl 7 (Couldn't connect to
 *   server): Failed to connect to 127.0.0.1 port 6443: Connection refused
 *   422 Invalid: RedisCluster "c" is invalid: spec.size: ... [2 causes]
 * Returns buf. */
char *kube_error_str(const kube_error_t *e, char *buf, size_t len);

/* Predicates on the code; each is 0 for a NULL error. */
int kube_error_is_not_found(const kube_error_t *e);
int kube_error_is_already_exists(const kube_error_t *e);
int kube_error_is_conflict(const kube_error_t *e);
int kube_error_is_gone(const kube_error_t *e);
int kube_error_is_invalid(const kube_error_t *e);
int kube_error_is_forbidden(const kube_error_t *e);
int kube_error_is_unauthorized(const kube_error_t *e);
int kube_error_is_too_many_requests(const kube_error_t *e);
int kube_error_is_timeout(const kube_error_t *e);

/* 1 when trying the same request again later may succeed: transport failures, 429,
 * 503/502, 504/Timeout, ServerTimeout, and any error that carries a retry-after. This is
 * for callers deciding, once the request is over, between "requeue with backoff" and
 * "give up"; whether the request itself is sent again is the one rule of kube_retry.h
 * (per method, within the caller's deadline), which every request path applies. */
int kube_error_retryable(const kube_error_t *e);

#endif
