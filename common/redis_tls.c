/* redis_tls: the Redis clients' TLS settings and sessions. See redis_tls.h. */
#include "redis_tls.h"

#include "pem.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mozilla's "intermediate" TLS 1.2 suites (TLS 1.3 suites are OpenSSL's defaults). */
#define REDIS_TLS12_CIPHERS                                                                        \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"     \
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

struct redis_tls {
    SSL_CTX *ctx;
};

/* "<what>: <OpenSSL's last reason, or errno's>" into err; clears OpenSSL's error queue. */
static void tls_fail(char *err, size_t errlen, const char *what)
{
    unsigned long e, last = 0;
    while ((e = ERR_get_error()) != 0)
        last = e;
    const char *reason = last ? ERR_reason_error_string(last) : NULL;
    snprintf(err, errlen, "%s: %s", what, reason ? reason : errno ? strerror(errno) : "unknown error");
}

int redis_tls_is_ip(const char *s)
{
    unsigned char a[16];
    return s && (inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1);
}

/* Add every certificate of pem[0..len) to ctx's trust store. 0, or -1 with err. */
static int add_ca_pem(SSL_CTX *ctx, const char *pem, size_t len, char *err, size_t errlen)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    STACK_OF(X509_INFO) *infos = bio ? PEM_X509_INFO_read_bio(bio, NULL, pem_no_passphrase, NULL) : NULL;
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    int added = 0, rc = -1;
    for (int i = 0; infos && i < sk_X509_INFO_num(infos); i++) {
        X509_INFO *xi = sk_X509_INFO_value(infos, i);
        if (!xi->x509)
            continue;
        if (X509_STORE_add_cert(store, xi->x509) != 1) {
            tls_fail(err, errlen, "CA bundle");
            goto out;
        }
        added++;
    }
    if (!added) {
        snprintf(err, errlen, "CA bundle: no PEM certificate");
        goto out;
    }
    rc = 0;
out:
    sk_X509_INFO_pop_free(infos, X509_INFO_free);
    BIO_free(bio);
    ERR_clear_error();
    return rc;
}

/* The trust store: ca_pem, else ca_file, else the system's. 0, or -1 with err. */
static int load_cas(SSL_CTX *ctx, const redis_tls_config_t *cfg, char *err, size_t errlen)
{
    if (cfg->ca_pem)
        return add_ca_pem(ctx, cfg->ca_pem, cfg->ca_len, err, errlen);
    errno = 0;
    if (cfg->ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) == 1)
            return 0;
        char what[4200];
        snprintf(what, sizeof(what), "CA file %s", cfg->ca_file);
        tls_fail(err, errlen, what);
        return -1;
    }
    if (SSL_CTX_set_default_verify_paths(ctx) == 1)
        return 0;
    tls_fail(err, errlen, "the system's CA certificates");
    return -1;
}

/* The client certificate (with the rest of its chain) and key. 0, or -1 with err. */
static int load_client_pair(SSL_CTX *ctx, const redis_tls_config_t *cfg, char *err, size_t errlen)
{
    if (!cfg->cert_pem && !cfg->key_pem)
        return 0;
    if (!cfg->cert_pem || !cfg->key_pem) {
        snprintf(err, errlen, "client certificate: %s without %s", cfg->cert_pem ? "a certificate" : "a key",
                 cfg->cert_pem ? "its key" : "its certificate");
        return -1;
    }
    static const char *const why[] = {
        [PEM_PAIR_NO_CERT] = "client certificate: no PEM certificate",
        [PEM_PAIR_NO_KEY] = "client key: no usable PEM private key (an encrypted key is not usable)",
        [PEM_PAIR_MISMATCH] = "client key: not the certificate's key",
    };
    pem_pair_t pair = pem_pair_check(cfg->cert_pem, cfg->cert_len, cfg->key_pem, cfg->key_len);
    if (pair != PEM_PAIR_OK) {
        snprintf(err, errlen, "%s", why[pair]);
        return -1;
    }
    int rc = -1;
    BIO *bio = BIO_new_mem_buf(cfg->cert_pem, (int)cfg->cert_len);
    X509 *leaf = bio ? PEM_read_bio_X509(bio, NULL, pem_no_passphrase, NULL) : NULL;
    EVP_PKEY *key = pem_key(cfg->key_pem, cfg->key_len);
    if (!leaf || !key || SSL_CTX_use_certificate(ctx, leaf) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
        tls_fail(err, errlen, "client certificate");
        goto out;
    }
    X509 *more;
    while ((more = PEM_read_bio_X509(bio, NULL, pem_no_passphrase, NULL)) != NULL)
        if (SSL_CTX_add0_chain_cert(ctx, more) != 1) {
            X509_free(more);
            tls_fail(err, errlen, "client certificate chain");
            goto out;
        }
    rc = 0;
out:
    ERR_clear_error(); /* the chain's loop ends on "no start line" */
    X509_free(leaf);
    EVP_PKEY_free(key);
    BIO_free(bio);
    return rc;
}

redis_tls_t *redis_tls_new(const redis_tls_config_t *cfg, char *err, size_t errlen)
{
    ERR_clear_error();
    redis_tls_t *t = calloc(1, sizeof(*t));
    if (!t || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        snprintf(err, errlen, "TLS context: out of memory");
        free(t);
        return NULL;
    }
    SSL_CTX *ctx = t->ctx;
    SSL_CTX_set_default_passwd_cb(ctx, pem_no_passphrase);
    if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) || !SSL_CTX_set_cipher_list(ctx, REDIS_TLS12_CIPHERS)) {
        tls_fail(err, errlen, "TLS context");
        goto fail;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(ctx), X509_V_FLAG_PARTIAL_CHAIN);
    if (load_cas(ctx, cfg, err, errlen) || load_client_pair(ctx, cfg, err, errlen))
        goto fail;
    return t;
fail:
    redis_tls_destroy(&t);
    return NULL;
}

void redis_tls_destroy(redis_tls_t **t_p)
{
    if (!t_p || !*t_p)
        return;
    SSL_CTX_free((*t_p)->ctx); /* sessions hold a reference of their own */
    free(*t_p);
    *t_p = NULL;
}

SSL *redis_tls_session(const redis_tls_t *t, const char *server_name, const char *ip, char *err, size_t errlen)
{
    int by_name = server_name && *server_name;
    const char *subject = by_name ? server_name : ip;
    if (!subject || !*subject) {
        snprintf(err, errlen, "TLS: no server name or address to verify the certificate against");
        return NULL;
    }
    ERR_clear_error();
    SSL *ssl = SSL_new(t->ctx);
    if (!ssl) {
        snprintf(err, errlen, "TLS session: out of memory");
        return NULL;
    }
    SSL_set_connect_state(ssl);
    X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
    int ok;
    if (redis_tls_is_ip(subject)) {
        ok = X509_VERIFY_PARAM_set1_ip_asc(p, subject) == 1;
    } else {
        X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = SSL_set1_host(ssl, subject) == 1 && SSL_set_tlsext_host_name(ssl, subject) == 1;
    }
    if (!ok) {
        snprintf(err, errlen, "TLS: cannot verify against \"%.200s\"", subject);
        ERR_clear_error();
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}
