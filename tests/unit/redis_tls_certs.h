/* redis_tls_certs: a small PKI made with OpenSSL's API for the Redis TLS tests (and the
 * probe benchmark): a CA, a server certificate for DNS:redis.test and IP:127.0.0.1, the
 * same server expired, a client certificate, and a second CA that signed none of them;
 * in memory (PEM strings) and written to a directory for redis-server's --tls-* flags.
 * Header-only. Aborts (assert) on OpenSSL failures: a test
 * fixture, not product code. */
#ifndef RDC_TEST_REDIS_TLS_CERTS_H
#define RDC_TEST_REDIS_TLS_CERTS_H

#include <assert.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    X509 *crt;
    EVP_PKEY *key;
    char *crt_pem, *key_pem; /* the same as PEM text */
} tc_cert_t;

typedef struct {
    tc_cert_t ca, server, expired, client, other_ca;
} tc_pki_t;

static inline void tc_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    assert(e);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
}

static inline char *tc_pem(int (*write)(BIO *, void *), void *obj)
{
    BIO *b = BIO_new(BIO_s_mem());
    assert(b && write(b, obj) == 1);
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    char *s = malloc((size_t)n + 1);
    assert(s);
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    BIO_free(b);
    return s;
}

static inline int tc_write_crt(BIO *b, void *x)
{
    return PEM_write_bio_X509(b, x);
}

static inline int tc_write_key(BIO *b, void *k)
{
    return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
}

/* A certificate for cn, signed by issuer (NULL: self-signed), valid from now+from_s to
 * now+to_s; san and eku may be NULL. */
static inline tc_cert_t tc_make(const char *cn, const tc_cert_t *issuer, int ca, const char *san, const char *eku,
                         long from_s, long to_s)
{
    static long serial = 100;
    tc_cert_t c = {X509_new(), EVP_EC_gen("P-256"), NULL, NULL};
    assert(c.crt && c.key);
    X509_set_version(c.crt, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c.crt), serial++);
    X509_gmtime_adj(X509_getm_notBefore(c.crt), from_s);
    X509_gmtime_adj(X509_getm_notAfter(c.crt), to_s);
    X509_set_pubkey(c.crt, c.key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(c.crt), "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
                               0);
    X509 *ix = issuer ? issuer->crt : c.crt;
    X509_set_issuer_name(c.crt, X509_get_subject_name(ix));
    tc_ext(c.crt, ix, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
    tc_ext(c.crt, ix, NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
    tc_ext(c.crt, ix, NID_subject_key_identifier, "hash");
    if (issuer)
        tc_ext(c.crt, ix, NID_authority_key_identifier, "keyid");
    if (san)
        tc_ext(c.crt, ix, NID_subject_alt_name, san);
    if (eku)
        tc_ext(c.crt, ix, NID_ext_key_usage, eku);
    assert(X509_sign(c.crt, issuer ? issuer->key : c.key, EVP_sha256()) > 0);
    c.crt_pem = tc_pem(tc_write_crt, c.crt);
    c.key_pem = tc_pem(tc_write_key, c.key);
    return c;
}

static inline void tc_cert_free(tc_cert_t *c)
{
    X509_free(c->crt);
    EVP_PKEY_free(c->key);
    free(c->crt_pem);
    free(c->key_pem);
    memset(c, 0, sizeof(*c));
}

static inline void tc_pki_make(tc_pki_t *p)
{
    p->ca = tc_make("rdc test CA", NULL, 1, NULL, NULL, -3600, 86400);
    p->server = tc_make("redis.test", &p->ca, 0, "DNS:redis.test,IP:127.0.0.1", "serverAuth,clientAuth", -3600, 86400);
    p->expired = tc_make("redis.test", &p->ca, 0, "DNS:redis.test,IP:127.0.0.1", "serverAuth", -3 * 86400, -86400);
    p->client = tc_make("rdc-operator", &p->ca, 0, NULL, "clientAuth", -3600, 86400);
    p->other_ca = tc_make("another CA", NULL, 1, NULL, NULL, -3600, 86400);
}

static inline void tc_pki_free(tc_pki_t *p)
{
    tc_cert_free(&p->ca);
    tc_cert_free(&p->server);
    tc_cert_free(&p->expired);
    tc_cert_free(&p->client);
    tc_cert_free(&p->other_ca);
}

static inline void tc_write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert(f);
    fputs(text, f);
    fclose(f);
}

/* dir/ca.crt, server.crt/.key, expired.crt/.key, client.crt/.key, other-ca.crt. */
static inline void tc_pki_write(const tc_pki_t *p, const char *dir)
{
    tc_write_file(dir, "ca.crt", p->ca.crt_pem);
    tc_write_file(dir, "server.crt", p->server.crt_pem);
    tc_write_file(dir, "server.key", p->server.key_pem);
    tc_write_file(dir, "expired.crt", p->expired.crt_pem);
    tc_write_file(dir, "expired.key", p->expired.key_pem);
    tc_write_file(dir, "client.crt", p->client.crt_pem);
    tc_write_file(dir, "client.key", p->client.key_pem);
    tc_write_file(dir, "other-ca.crt", p->other_ca.crt_pem);
}

#endif
