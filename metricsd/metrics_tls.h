/* metrics_tls: metricsd's HTTPS listener, whose serving certificate is reloaded when its
 * files change, as webhookd's is (webhook_tls.h).
 *
 * The certificate and key are PEM files in a directory (--metrics-cert-path with tls.crt
 * and tls.key), usually a mounted Secret that cert-manager rotates (the kubelet swaps the
 * files atomically through a symlink: common/filesig.h), or, without a directory, a
 * self-signed certificate for localhost and 127.0.0.1 made at start (controller-runtime's
 * default). libmicrohttpd (GnuTLS) takes a certificate only when a daemon starts, so a
 * rotation starts a new daemon on the same listening socket: the old one is quiesced
 * (it accepts nothing more; the socket stays open), the new one accepts from then on,
 * and the old one is stopped once its open connections are done or after
 * MTLS_DRAIN_NS, whichever comes first. A change that cannot be used (a file missing,
 * half-written, not PEM, or a key that does not match the certificate: checked with
 * OpenSSL before anything is swapped) keeps the current certificate and is tried again
 * when the files change again. A pair read while the files were being swapped is not
 * used either (the stamps are taken before and after reading).
 */
#ifndef RDC_METRICS_TLS_H
#define RDC_METRICS_TLS_H

#include <microhttpd.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define MTLS_MAX_PEM ((size_t)64 << 10)
#define MTLS_DRAIN_NS (INT64_C(15) * 1000000000) /* an old daemon's connections, at most */

typedef struct mtls mtls_t;

typedef struct {
    const char *cert_dir;  /* NULL or "": a self-signed certificate */
    const char *cert_name; /* "tls.crt" */
    const char *key_name;  /* "tls.key" */
    const struct sockaddr_in *addr;
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
    unsigned connection_limit, connection_timeout_s;
    size_t connection_memory_limit;
} mtls_opts_t;

/* Load the certificate and start serving HTTPS with it (a thread per connection). The
 * options' strings and handler_cls must outlive the listener. Returns 0 with *out set, or
 * -1 with err naming the file and the reason, or the address when it cannot listen. */
int mtls_start(const mtls_opts_t *o, mtls_t **out, char *err, size_t errlen);

/* Look at the files (nothing to do for a self-signed certificate) and serve a changed
 * pair from a new daemon; stop an old daemon that has drained. now_ns is the monotonic
 * clock. Returns 1 when a new certificate is served, 0 when nothing changed (or the files
 * are changing right now: looked at again at the next call), -1 when the changed files
 * cannot be used (the current certificate stays; err says why). Call it from one thread. */
int mtls_check(mtls_t *t, int64_t now_ns, char *err, size_t errlen);

/* The port the listener is bound to. */
unsigned mtls_port(const mtls_t *t);

/* Certificates loaded so far (1 after mtls_start). */
unsigned mtls_loads(const mtls_t *t);

/* Stop every daemon, close the socket, free everything; sets *self_p to NULL. NULL is
 * fine. */
void mtls_stop(mtls_t **self_p);

#endif
