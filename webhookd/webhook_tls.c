/* webhook_tls: the webhook server's TLS context, reloaded when its files change. See
 * webhook_tls.h. */
#include "webhook_tls.h"

#include "filesig.h"
#include "pem.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Mozilla's "intermediate" TLS 1.2 suites (TLS 1.3 suites are OpenSSL's defaults). */
#define TLS12_CIPHERS                                                                              \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"     \
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

struct webhook_tls {
    filesig_watch_t files;
    SSL_CTX *ctx;
    int64_t not_after;
    unsigned loads;
};

/* "<what> <path>: <OpenSSL's last reason>" into err; clears OpenSSL's error queue. */
static void ssl_error(char *err, size_t errlen, const char *what, const char *path)
{
    unsigned long e, last = 0;
    while ((e = ERR_get_error()) != 0)
        last = e;
    char reason[256] = "unknown error";
    if (last)
        ERR_error_string_n(last, reason, sizeof(reason));
    else if (errno)
        snprintf(reason, sizeof(reason), "%s", strerror(errno));
    snprintf(err, errlen, "%s %s: %s", what, path, reason);
}

static int64_t cert_not_after(SSL_CTX *ctx)
{
    X509 *x = SSL_CTX_get0_certificate(ctx);
    const ASN1_TIME *t = x ? X509_get0_notAfter(x) : NULL;
    struct tm tm;
    if (!t || !ASN1_TIME_to_tm(t, &tm))
        return 0;
    return (int64_t)timegm(&tm);
}

/* A new server context from the two files, or NULL with err set. */
static SSL_CTX *load_ctx(const char *cert_path, const char *key_path, char *err, size_t errlen)
{
    ERR_clear_error();
    errno = 0;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        ssl_error(err, errlen, "cannot create a TLS context for", cert_path);
        return NULL;
    }
    SSL_CTX_set_default_passwd_cb(ctx, pem_no_passphrase); /* an encrypted key fails */
    if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) || !SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS)) {
        ssl_error(err, errlen, "cannot configure TLS for", cert_path);
        goto fail;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* An idle connection gives its record buffers back: bench/bench_webhook.c measured
     * 26.9 kB of RSS per idle connection without this, 16.4 kB with it (2,000
     * connections; no session tickets or no session cache changed nothing measurable). */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_path) != 1) {
        ssl_error(err, errlen, "cannot load the certificate", cert_path);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_path, SSL_FILETYPE_PEM) != 1) {
        ssl_error(err, errlen, "cannot load the private key", key_path);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ssl_error(err, errlen, "the private key does not match the certificate", cert_path);
        goto fail;
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

int webhook_tls_new(const char *dir, const char *cert_name, const char *key_name, webhook_tls_t **out,
                    char *err, size_t errlen)
{
    webhook_tls_t *t = calloc(1, sizeof(*t));
    *out = NULL;
    if (!t || filesig_watch_init(&t->files, dir, cert_name, key_name)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (!(t->ctx = load_ctx(t->files.cert_path, t->files.key_path, err, errlen)))
        goto fail;
    t->not_after = cert_not_after(t->ctx);
    t->loads = 1;
    *out = t;
    return 0;
fail:
    webhook_tls_destroy(&t);
    return -1;
}

void webhook_tls_destroy(webhook_tls_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    webhook_tls_t *t = *self_p;
    SSL_CTX_free(t->ctx);
    filesig_watch_free(&t->files);
    free(t);
    *self_p = NULL;
}

SSL_CTX *webhook_tls_ctx(const webhook_tls_t *t)
{
    return t->ctx;
}

int webhook_tls_check(webhook_tls_t *t, char *err, size_t errlen)
{
    filesig_pair_t now;
    if (!filesig_watch_changed(&t->files, &now))
        return 0;
    SSL_CTX *ctx = load_ctx(t->files.cert_path, t->files.key_path, err, errlen);
    if (!filesig_watch_settle(&t->files, &now)) { /* swapped while read: maybe mixed */
        SSL_CTX_free(ctx);
        return 0;
    }
    if (!ctx)
        return -1;
    SSL_CTX_free(t->ctx);
    t->ctx = ctx;
    t->not_after = cert_not_after(ctx);
    t->loads++;
    return 1;
}

int64_t webhook_tls_not_after(const webhook_tls_t *t)
{
    return t->not_after;
}

unsigned webhook_tls_loads(const webhook_tls_t *t)
{
    return t->loads;
}
