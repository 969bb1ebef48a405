/* webhook_tls: the webhook server's TLS context, reloaded when its files change. See
 * webhook_tls.h. */
#include "webhook_tls.h"

#include "certwatch.h"
#include "pem.h"

#include <openssl/err.h>
#include <openssl/pem.h>
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
    certwatch_t *watch;
    SSL_CTX *ctx;
    int64_t not_after;
};

/* "<what>: <OpenSSL's last reason>" into err; clears OpenSSL's error queue. */
static void ssl_error(char *err, size_t errlen, const char *what)
{
    unsigned long e, last = 0;
    while ((e = ERR_get_error()) != 0)
        last = e;
    char reason[256] = "unknown error";
    if (last)
        ERR_error_string_n(last, reason, sizeof(reason));
    snprintf(err, errlen, "%s: %s", what, reason);
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

/* The certificate chain of pem (leaf first) into ctx, as SSL_CTX_use_certificate_chain_file
 * reads a file. 0, or -1 with OpenSSL's error queue saying why. */
static int use_chain(SSL_CTX *ctx, const char *pem, size_t len)
{
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    X509 *leaf = b ? PEM_read_bio_X509_AUX(b, NULL, pem_no_passphrase, NULL) : NULL;
    int ok = leaf && SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_clear_chain_certs(ctx) == 1;
    X509 *ca;
    while (ok && (ca = PEM_read_bio_X509(b, NULL, pem_no_passphrase, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
            X509_free(ca);
            ok = 0;
        }
    }
    /* The chain ends where no PEM block starts: that is not an error. */
    unsigned long e = ERR_peek_last_error();
    if (ok && ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
        ERR_clear_error();
    else if (ok && e)
        ok = 0;
    X509_free(leaf);
    BIO_free(b);
    return ok ? 0 : -1;
}

/* A new server context serving the pair, or NULL with err set. */
static SSL_CTX *load_ctx(const char *cert, size_t cert_len, const char *key, size_t key_len, char *err,
                         size_t errlen)
{
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    EVP_PKEY *pk = NULL;
    if (!ctx) {
        ssl_error(err, errlen, "cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_default_passwd_cb(ctx, pem_no_passphrase); /* an encrypted key fails */
    if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) || !SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS)) {
        ssl_error(err, errlen, "cannot configure TLS");
        goto fail;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* An idle connection gives its record buffers back: bench/bench_webhook.c measured
     * 26.9 kB of RSS per idle connection without this, 16.4 kB with it (2,000
     * connections; no session tickets or no session cache changed nothing measurable). */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (use_chain(ctx, cert, cert_len)) {
        ssl_error(err, errlen, "cannot load the certificate chain");
        goto fail;
    }
    if (!(pk = pem_key(key, key_len)) || SSL_CTX_use_PrivateKey(ctx, pk) != 1) {
        ssl_error(err, errlen, "cannot load the private key");
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ssl_error(err, errlen, "the private key does not match the certificate");
        goto fail;
    }
    EVP_PKEY_free(pk);
    return ctx;
fail:
    EVP_PKEY_free(pk);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

/* certwatch's use: a context for the new pair replaces the current one (connections
 * already open keep theirs: an SSL holds a reference to its context). */
static int use_pair(const char *cert, size_t cert_len, const char *key, size_t key_len, void *arg, char *err,
                    size_t errlen)
{
    webhook_tls_t *t = arg;
    SSL_CTX *ctx = load_ctx(cert, cert_len, key, key_len, err, errlen);
    if (!ctx)
        return -1;
    SSL_CTX_free(t->ctx);
    t->ctx = ctx;
    t->not_after = cert_not_after(ctx);
    return 0;
}

int webhook_tls_new(const char *dir, const char *cert_name, const char *key_name, webhook_tls_t **out,
                    char *err, size_t errlen)
{
    webhook_tls_t *t = calloc(1, sizeof(*t));
    *out = NULL;
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (certwatch_new(dir, cert_name, key_name, use_pair, t, &t->watch, err, errlen)) {
        webhook_tls_destroy(&t);
        return -1;
    }
    *out = t;
    return 0;
}

void webhook_tls_destroy(webhook_tls_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    webhook_tls_t *t = *self_p;
    certwatch_destroy(&t->watch);
    SSL_CTX_free(t->ctx);
    free(t);
    *self_p = NULL;
}

SSL_CTX *webhook_tls_ctx(const webhook_tls_t *t)
{
    return t->ctx;
}

int webhook_tls_check(webhook_tls_t *t, char *err, size_t errlen)
{
    return certwatch_check(t->watch, err, errlen);
}

int64_t webhook_tls_not_after(const webhook_tls_t *t)
{
    return t->not_after;
}

unsigned webhook_tls_loads(const webhook_tls_t *t)
{
    return certwatch_loads(t->watch);
}
