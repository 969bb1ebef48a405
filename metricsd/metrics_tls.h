/* metrics_tls: metricsd's HTTPS listener, a set of handlers on the daemon's loop
 * (common/loop), whose serving certificate is reloaded when its files change
 * (common/certwatch.h, as webhookd's is).
 *
 * TLS and HTTP are libmicrohttpd's (GnuTLS on Debian) in its external epoll mode: no
 * thread of its own. Each daemon's epoll descriptor is a reader of the loop; after every
 * run of a daemon a timer is set to libmicrohttpd's next deadline (a connection timeout,
 * or "now" when TLS holds data already read). A handler that cannot answer at once
 * suspends its connection (MHD_suspend_connection: the daemons allow it) and resumes it
 * when the answer is ready, then calls mtls_wake: in the external mode a resume wakes
 * nothing by itself (libmicrohttpd drops its inter-thread channel there), so the daemons
 * are run on the loop's next turn.
 *
 * The certificate and key are PEM files in a directory (--metrics-cert-path with tls.crt
 * and tls.key), usually a mounted Secret that cert-manager rotates, or, without a
 * directory, a self-signed certificate for localhost and 127.0.0.1 made at start
 * (controller-runtime's default). libmicrohttpd takes a certificate only when a daemon
 * starts, so a rotation starts a new daemon on the same listening socket: the old one is
 * quiesced (it accepts nothing more; the socket stays open), the new one accepts from then
 * on, and the old one is stopped once its open connections are done or after
 * MTLS_DRAIN_NS, whichever comes first. A pair that cannot be used (certwatch.h: missing,
 * half-written, not PEM, a key that does not match; or one GnuTLS refuses) keeps the
 * current certificate and is tried again when the files change again.
 *
 * Stopping a daemon (a drained one, or all at mtls_stop): libmicrohttpd refuses to stop
 * one that holds a suspended connection, so the options' release(daemon) is called first
 * and must resume every connection of that daemon its handler suspended; their requests
 * then end (the completed callback, MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN).
 */
#ifndef RDC_METRICS_TLS_H
#define RDC_METRICS_TLS_H

#include "loop.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define MTLS_DRAIN_NS (INT64_C(15) * 1000000000) /* an old daemon's connections, at most */

typedef struct mtls mtls_t;

/* Resume every connection of d that the handler suspended (d is about to stop). */
typedef void mtls_release_fn(struct MHD_Daemon *d, void *cls);

typedef struct {
    const char *cert_dir;  /* NULL or "": a self-signed certificate */
    const char *cert_name; /* "tls.crt" */
    const char *key_name;  /* "tls.key" */
    const struct sockaddr_in *addr;
    MHD_AccessHandlerCallback handler;
    void *handler_cls;                 /* also the cls of completed and release */
    MHD_RequestCompletedCallback completed; /* NULL: none */
    mtls_release_fn *release;          /* NULL: the handler never suspends */
    unsigned connection_limit, connection_timeout_s;
    size_t connection_memory_limit;
} mtls_opts_t;

/* Load the certificate and serve HTTPS with it from loop's turns. The options' strings
 * and handler_cls, and the loop, must outlive the listener. Returns 0 with *out set, or -1
 * with err naming the file and the reason, or the address when it cannot listen. */
int mtls_start(loop_t *loop, const mtls_opts_t *o, mtls_t **out, char *err, size_t errlen);

/* Look at the files (nothing to do for a self-signed certificate) and serve a changed
 * pair from a new daemon; stop an old daemon that has drained. now_ns is the monotonic
 * clock. Returns 1 when a new certificate is served, 0 when nothing changed (or the files
 * are changing right now: looked at again at the next call), -1 when the changed files
 * cannot be used (the current certificate stays; err says why). */
int mtls_check(mtls_t *t, int64_t now_ns, char *err, size_t errlen);

/* Run the daemons on the loop's next turn (after MHD_resume_connection outside the
 * listener's own handlers). */
void mtls_wake(mtls_t *t);

/* The port the listener is bound to. */
unsigned mtls_port(const mtls_t *t);

/* Certificates loaded so far (1 after mtls_start). */
unsigned mtls_loads(const mtls_t *t);

/* Stop every daemon (release first), leave the loop, close the socket, free everything;
 * sets *self_p to NULL. NULL is fine. Not from one of the listener's own handlers. */
void mtls_stop(mtls_t **self_p);

#endif
