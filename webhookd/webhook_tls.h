/* webhook_tls: the webhook server's TLS context, reloaded when its files change.
 *
 * The serving certificate and key are files in a directory (controller-runtime's
 * --webhook-cert-dir with tls.crt and tls.key), usually a mounted Secret that cert-manager
 * rotates. common/certwatch watches, reads and checks them (certwatch.h has the rules:
 * a pair half swapped, not PEM, or whose key does not match is never used); each pair it
 * hands over becomes a new context. Connections accepted afterwards use it, connections
 * already open keep theirs (an SSL holds a reference to its context). A change that cannot
 * be loaded keeps the old context and is retried when the files change again.
 *
 * The context allows TLS 1.2 and 1.3 only, with forward-secret AEAD cipher suites for
 * TLS 1.2, no compression, no renegotiation, and never prompts for a key passphrase. An
 * idle connection releases its record buffers (SSL_MODE_RELEASE_BUFFERS).
 */
#ifndef RDC_WEBHOOK_TLS_H
#define RDC_WEBHOOK_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

typedef struct webhook_tls webhook_tls_t;

/* Load <dir>/<cert_name> (a PEM chain, leaf first) and <dir>/<key_name> (a PEM key).
 * Returns 0 with *out set, or -1 with err naming the file and OpenSSL's reason. */
int webhook_tls_new(const char *dir, const char *cert_name, const char *key_name, webhook_tls_t **out,
                    char *err, size_t errlen);

/* Free the watcher and drop its reference to the context; sets *self_p to NULL. */
void webhook_tls_destroy(webhook_tls_t **self_p);

/* The current context. Borrowed: take a reference (SSL_new does) to keep it past the
 * next webhook_tls_check. */
SSL_CTX *webhook_tls_ctx(const webhook_tls_t *t);

/* Look at the files and reload when they changed. Returns 1 when a new context was
 * loaded, 0 when nothing changed (or the files are changing right now: retried at the next
 * call), -1 when the changed files cannot be loaded (the old context stays; err says why). */
int webhook_tls_check(webhook_tls_t *t, char *err, size_t errlen);

/* The current certificate's notAfter as Unix seconds, or 0 when unknown. */
int64_t webhook_tls_not_after(const webhook_tls_t *t);

/* Number of successful loads so far (1 after webhook_tls_new). */
unsigned webhook_tls_loads(const webhook_tls_t *t);

#endif
