/* httpd: a small plain-HTTP endpoint server (libmicrohttpd) driven by the caller's loop.
 *
 * For /healthz, /readyz and /metrics. libmicrohttpd parses the requests; this module
 * only routes GET paths to a handler. It runs in the caller's thread: add
 * httpd_fd() to the poll set (it is an epoll descriptor that becomes readable when any
 * connection needs work), wait at most httpd_timeout_ms(), then call httpd_run(). So the
 * endpoints answer only while the owner's loop turns, which is what a liveness probe
 * should observe.
 */
#ifndef RDC_HTTPD_H
#define RDC_HTTPD_H

#include "buf.h"

typedef struct httpd httpd_t;

/* Handle GET path: fill body (text) and return the HTTP status (200, 404, 500, ...). */
typedef int (*httpd_handler_fn)(const char *path, buf_t *body, void *user);

/* Listen on addr, controller-runtime style: ":8080" (all interfaces), "127.0.0.1:8080",
 * "127.0.0.1:0" (an ephemeral port; see httpd_port), or "0" = disabled (returns 0 and
 * sets *out to NULL). Returns 0, or -1 with err naming the address and the reason. */
int httpd_new(const char *addr, httpd_handler_fn handler, void *user, httpd_t **out,
              char *err, size_t errlen);

/* Stop listening, close every connection and free; sets *self_p to NULL. */
void httpd_destroy(httpd_t **self_p);

/* The descriptor to poll for reading. */
int httpd_fd(const httpd_t *h);

/* The longest the caller may wait before calling httpd_run (ms; -1 = no limit). */
long httpd_timeout_ms(const httpd_t *h);

/* Do whatever work is pending without blocking. */
void httpd_run(httpd_t *h);

/* The port actually bound (useful with port 0). */
int httpd_port(const httpd_t *h);

/* The address actually bound, "host:port" with the real port (e.g. "127.0.0.1:41327"
 * for "127.0.0.1:0", "0.0.0.0:8080" for ":8080"), into out; returns out. For the log line
 * that tells users and tests where the endpoint is. */
char *httpd_bound_addr(const httpd_t *h, char *out, size_t outlen);

/* Parse "host:port" / ":port" into host (empty = any) and port. Returns 0 or -1. */
int httpd_parse_addr(const char *addr, char *host, size_t hostlen, int *port);

#endif
