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
 *   GET  /healthz, /readyz         200 "ok" (the server is up and serving TLS)
 *   anything else                  404
 * On the webhook paths: a method other than POST is 405 (with Allow: POST); a
 * Content-Type other than application/json (parameters allowed) is 415; a body that is
 * not an AdmissionReview is 400 with a refusing AdmissionReview that says why; a body over
 * max_body bytes is 413 and headers over 64 KiB are refused by evhttp; a connection that
 * sends or takes nothing for timeout_s seconds is closed. A query string (the API server
 * adds ?timeout=10s) is ignored. Every answer has a body saying what happened.
 *
 * METRICS (controller-runtime's names, in the default registry, label webhook = the path):
 *   controller_runtime_webhook_requests_total{webhook,code}   code = HTTP status sent
 *   controller_runtime_webhook_latency_seconds{webhook}       histogram
 *   controller_runtime_webhook_requests_in_flight{webhook}    gauge
 *   certwatcher_read_certificate_total, certwatcher_read_certificate_errors_total
 */
#ifndef RDC_WEBHOOK_SERVER_H
#define RDC_WEBHOOK_SERVER_H

#include <event2/event.h>
#include <stddef.h>

#define WEBHOOK_DEFAULT_PORT 9443
#define WEBHOOK_DEFAULT_CERT_DIR "/tmp/k8s-webhook-server/serving-certs"
#define WEBHOOK_DEFAULT_MAX_BODY ((size_t)3 << 20)
#define WEBHOOK_DEFAULT_TIMEOUT_S 10

typedef struct {
    const char *bind_address; /* host or IP to listen on; NULL or "" = every interface */
    int port;                 /* 0 = an ephemeral port (see webhook_server_port) */
    const char *cert_dir;     /* holds cert_name and key_name */
    const char *cert_name;    /* "tls.crt" when NULL */
    const char *key_name;     /* "tls.key" when NULL */
    size_t max_body;          /* request body cap in bytes; 0 = WEBHOOK_DEFAULT_MAX_BODY */
    int timeout_s;            /* idle read/write timeout; 0 = WEBHOOK_DEFAULT_TIMEOUT_S */
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

#endif
