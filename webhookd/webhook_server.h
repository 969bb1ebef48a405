/* webhook_server: the HTTPS shell around admission_review().
 *
 * libevent's evhttp parses HTTP (no parser of ours), over bufferevent_openssl with the
 * context of webhook_tls (TLS 1.2+, reloaded when the certificate files change: looked at
 * on every new connection, at most once a second, and whenever webhook_server_check_certs
 * is called). It runs on the caller's event_base, in the caller's thread.
 *
 * ROUTES
 *   POST ADMISSION_VALIDATE_PATH   validating webhook (AdmissionReview in, out)
 *   POST ADMISSION_MUTATE_PATH     mutating (defaulting) webhook
 *   POST CONVERSION_PATH           CRD conversion webhook (ConversionReview in, out;
 *                                  conversion.h), v1alpha1 <-> v1
 *   GET  /healthz, /readyz         200 "ok" (the server is up and serving TLS)
 *   anything else                  404
 * On the webhook paths: a method other than POST is 405 (with Allow: POST); a
 * Content-Type other than application/json (parameters allowed) is 415; a body that is
 * not an AdmissionReview (a ConversionReview on /convert) is 400 with a refusing review
 * that says why; a body over
 * max_body bytes is 413 and headers over 64 KiB are refused by evhttp. A query string (the
 * API server adds ?timeout=10s) is ignored. Every answer has a body saying what happened.
 *
 * THE ONE DEFERRED ANSWER: a validating review that must read a StorageClass (an UPDATE
 * growing spec.storage.size, admission.h) is not answered in the request's callback. The
 * review stops at the read (ADMISSION_DEFERRED), the server keeps the request and a copy
 * of its body, starts the read on the same event_base (classcheck_read_start) and returns
 * to the loop, which serves every other request and connection meanwhile. When the read
 * ends (an answer, a failure, or its deadline, CLASSCHECK_TIMEOUT_MS) the review is run
 * again with what was read and the answer sent. The request stays evhttp's: libevent
 * stops reading a connection once it has a whole request, so a client that closes while
 * its review waits is seen when the answer is written; if evhttp frees the connection
 * first (the server destroyed, a timeout), its close callback cancels the read and the
 * request is not touched again (freed by us only when evhttp detached it).
 *
 * CONNECTIONS (what a hostile or broken client can hold)
 *   - At most max_connections are open at once. The one that reaches the cap is served;
 *     while the cap is reached the listener is paused and every new connection is accepted
 *     and closed at once with a reset (no TLS, no memory kept), and counted. Accepting
 *     resumes as soon as one closes. The API server opens a handful; the cap is for the
 *     rest (and keeps the process below its open-file limit).
 *   - A whole-request deadline: a connection must deliver a complete request (TLS
 *     handshake, headers and body) within request_timeout of its accept, and each next one
 *     on a kept-alive connection within idle_timeout + request_timeout of the previous
 *     one; otherwise it is closed (shutdown of the socket), counted. Trickling a byte at a
 *     time therefore holds a connection no longer than that, however slow the trickle.
 *   - idle_timeout (timeout_s) also bounds any single read or write stall (evhttp's
 *     timeout), so a kept-alive connection with nothing to say is closed after it.
 *   - Memory per open idle connection is bounded: OpenSSL releases an idle connection's
 *     record buffers (SSL_MODE_RELEASE_BUFFERS, see webhook_tls.h) and evhttp's buffers
 *     are empty between requests. bench/bench_webhook.c (make bench-webhook) measured
 *     16.4 kB of RSS per idle TLS connection (26.9 kB without releasing the buffers), so
 *     the default cap of 1024 bounds idle connections to about 17 MB. The API server keeps
 *     a handful of connections per replica; 1024 leaves room for bursts of concurrent
 *     admissions from several API servers. (A connection in the middle of a request also
 *     holds its body so far, up to max_body; the deadline bounds how long.)
 *
 * METRICS (controller-runtime's names, in the default registry, label webhook = the path):
 *   controller_runtime_webhook_requests_total{webhook,code}   code = HTTP status sent
 *   controller_runtime_webhook_latency_seconds{webhook}       histogram
 *   controller_runtime_webhook_requests_in_flight{webhook}    gauge
 *   certwatcher_read_certificate_total, certwatcher_read_certificate_errors_total
 * the conversion's own (conversion.h): webhook_conversion_requests_total{result},
 * webhook_conversion_objects_total{from,to}
 * and the connection limits' own (no controller-runtime equivalent):
 *   webhook_open_connections                   gauge
 *   webhook_connections_refused_total          closed at accept: the cap was reached
 *   webhook_connections_timed_out_total        closed at the whole-request deadline
 */
#ifndef RDC_WEBHOOK_SERVER_H
#define RDC_WEBHOOK_SERVER_H

#include "admission.h"
#include "classcheck.h"

#include <event2/event.h>
#include <stddef.h>

#define WEBHOOK_DEFAULT_PORT 9443
#define WEBHOOK_DEFAULT_CERT_DIR "/tmp/k8s-webhook-server/serving-certs"
#define WEBHOOK_DEFAULT_MAX_BODY ((size_t)3 << 20)
#define WEBHOOK_DEFAULT_TIMEOUT_S 10
#define WEBHOOK_DEFAULT_REQUEST_TIMEOUT_MS 10000
#define WEBHOOK_DEFAULT_MAX_CONNECTIONS 1024

typedef struct {
    const char *bind_address; /* host or IP to listen on; NULL or "" = every interface */
    int port;                 /* 0 = an ephemeral port (see webhook_server_port) */
    const char *cert_dir;     /* holds cert_name and key_name */
    const char *cert_name;    /* "tls.crt" when NULL */
    const char *key_name;     /* "tls.key" when NULL */
    size_t max_body;          /* request body cap in bytes; 0 = WEBHOOK_DEFAULT_MAX_BODY */
    int timeout_s;            /* idle_timeout: keep-alive silence and any read or write stall,
                                 seconds; 0 = WEBHOOK_DEFAULT_TIMEOUT_S */
    int request_timeout_ms;   /* whole-request deadline; 0 = WEBHOOK_DEFAULT_REQUEST_TIMEOUT_MS */
    int max_connections;      /* open connections at most; 0 = WEBHOOK_DEFAULT_MAX_CONNECTIONS */
    classcheck_reader_t *classes; /* StorageClass reader of the validating webhook, on the
                                     server's event_base (borrowed: outlives the server);
                                     NULL = none, the check is off */
} webhook_server_config_t;

typedef struct webhook_server webhook_server_t;

/* Load the certificate, listen and serve on base. The config's strings are copied.
 * Returns 0 with *out set, or -1 with err naming the file or address and the reason. */
int webhook_server_new(struct event_base *base, const webhook_server_config_t *cfg, webhook_server_t **out,
                       char *err, size_t errlen);

/* Close the listener and every connection and free; sets *self_p to NULL. */
void webhook_server_destroy(webhook_server_t **self_p);

/* The port actually listened on. */
int webhook_server_port(const webhook_server_t *s);

/* Stop accepting connections (the first step of a drain); open ones are still served. */
void webhook_server_stop_accepting(webhook_server_t *s);

/* Look at the certificate files now and reload them when they changed (see webhook_tls_check
 * for the return values; a failure is logged and counted). */
int webhook_server_check_certs(webhook_server_t *s);

/* Requests answered so far on the webhook paths (any status). */
unsigned long webhook_server_requests(const webhook_server_t *s);

/* Connections open now, refused at accept so far (the cap), and closed at the
 * whole-request deadline so far. */
int webhook_server_open_connections(const webhook_server_t *s);
unsigned long webhook_server_refused(const webhook_server_t *s);
unsigned long webhook_server_timed_out(const webhook_server_t *s);

/* Validating reviews waiting for their StorageClass read now (answered when it ends, by
 * CLASSCHECK_TIMEOUT_MS). */
int webhook_server_waiting(const webhook_server_t *s);

#endif
