/* certwatch: a serving certificate and key kept in two files, handed to the listener that
 * serves them, and handed again whenever the files change (controller-runtime's
 * certwatcher). The one reload of both TLS listeners: webhookd's (an OpenSSL context,
 * webhookd/webhook_tls.h) and metricsd's (a libmicrohttpd daemon, metricsd/metrics_tls.h).
 *
 * The files are usually a mounted Secret that cert-manager rotates: the kubelet swaps them
 * atomically through a symlink, so a change is seen by the files' identity and modification
 * time (common/filesig.h). A changed pair is read whole (each file at most
 * CERTWATCH_MAX_PEM bytes), checked with OpenSSL (a PEM certificate, a PEM private key that
 * is not encrypted, the key belonging to the certificate: common/pem.h), and only then
 * handed to the listener's use function, so that a listener is never asked to swap for a
 * pair that cannot work. A pair read while the files were being swapped is not used (the
 * stamps are taken before and after the read): the next check reads it again. A changed
 * pair that cannot be used keeps the previous one served and is not tried again until the
 * files change again.
 *
 * Errors name the file and the reason: "cannot load the certificate DIR/tls.crt: cannot
 * open: No such file or directory", "DIR/tls.key: the private key does not match the
 * certificate DIR/tls.crt", or what the listener said after the certificate's path.
 */
#ifndef RDC_CERTWATCH_H
#define RDC_CERTWATCH_H

#include <stddef.h>

#define CERTWATCH_MAX_PEM ((size_t)64 << 10)

typedef struct certwatch certwatch_t;

/* Serve the pair from now on: cert (the PEM chain, leaf first) and key (its PEM private
 * key), each NUL-terminated, borrowed for the call. Return 0 when it is served, or -1 with
 * err saying why it cannot be (the listener keeps what it served). */
typedef int certwatch_use_fn(const char *cert, size_t cert_len, const char *key, size_t key_len, void *arg,
                             char *err, size_t errlen);

/* Watch dir/cert_name and dir/key_name, read and check them, and hand them to use(arg).
 * Returns 0 with *out set, or -1 with err (a file that cannot be read, a bad pair, or what
 * use said) and *out NULL. */
int certwatch_new(const char *dir, const char *cert_name, const char *key_name, certwatch_use_fn *use, void *arg,
                  certwatch_t **out, char *err, size_t errlen);

/* Look at the files; when they changed, read, check and hand the new pair to use. Returns
 * 1 when use took it, 0 when nothing changed (or the files are changing right now: read
 * again at the next call), -1 when the changed pair cannot be used (err says why; what is
 * served stays). */
int certwatch_check(certwatch_t *w, char *err, size_t errlen);

/* Pairs use took so far (1 after certwatch_new). */
unsigned certwatch_loads(const certwatch_t *w);

/* The certificate file's path (dir/cert_name), for messages. */
const char *certwatch_cert_path(const certwatch_t *w);

/* Stop watching and free; sets *self_p to NULL. NULL is fine. */
void certwatch_destroy(certwatch_t **self_p);

#endif
