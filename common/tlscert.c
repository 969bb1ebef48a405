/* tlscert: the checks of a spec.tls Secret's certificate. See tlscert.h. */
#include "tlscert.h"

#include "buf.h"
#include "pem.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *tlscert_status_name(tlscert_status_t st)
{
    static const char *const names[] = {"OK",        "NoCertificate", "NoKey",   "KeyMismatch",  "NoCA",
                                        "Untrusted", "NotYetValid",   "Expired", "NameMismatch", "Expiring"};
    return (size_t)st < sizeof(names) / sizeof(names[0]) ? names[st] : "Unknown";
}

void tlscert_time(int64_t s, char *out, size_t len)
{
    time_t t = (time_t)s;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, len, "%lld", (long long)s);
}

/* An ASN1_TIME as Unix seconds (0 when it cannot be read). */
static int64_t unix_of(const ASN1_TIME *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return (int64_t)timegm(&tm);
}

static void hex_of(const unsigned char *b, size_t n, const char *digits, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int tlscert_sha256(X509 *x, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    hex[0] = '\0';
    if (X509_digest(x, EVP_sha256(), md, &n) != 1 || n != 32)
        return -1;
    hex_of(md, n, "0123456789abcdef", hex);
    return 0;
}

/* The leaf's fingerprint, serial and validity into out. */
static void describe(X509 *leaf, tlscert_check_t *out)
{
    out->have_cert = 1;
    (void)tlscert_sha256(leaf, out->sha256);
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL);
    unsigned char raw[40];
    int len = bn ? BN_num_bytes(bn) : -1;
    if (len >= 0 && len <= (int)sizeof(raw) && BN_bn2bin(bn, raw) == len)
        hex_of(raw, len ? (size_t)len : 1, "0123456789ABCDEF", out->serial);
    BN_free(bn);
    out->not_before_s = unix_of(X509_get0_notBefore(leaf));
    out->not_after_s = unix_of(X509_get0_notAfter(leaf));
}

int tlscert_read(const char *cert, size_t cert_len, tlscert_check_t *out)
{
    memset(out, 0, sizeof(*out));
    X509 *leaf = cert && cert_len ? pem_cert(cert, cert_len) : NULL;
    if (!leaf)
        return -1;
    describe(leaf, out);
    X509_free(leaf);
    ERR_clear_error();
    return 0;
}

/* Every certificate of pem[0..len) into a new stack (NULL when there is none). */
static STACK_OF(X509) *certs_of(const char *pem, size_t len)
{
    BIO *bio = pem && len ? BIO_new_mem_buf(pem, (int)len) : NULL;
    STACK_OF(X509) *sk = bio ? sk_X509_new_null() : NULL;
    X509 *x;
    while (sk && (x = PEM_read_bio_X509(bio, NULL, pem_no_passphrase, NULL)) != NULL)
        if (!sk_X509_push(sk, x))
            X509_free(x);
    BIO_free(bio);
    ERR_clear_error(); /* the loop ends on "no start line" */
    if (sk && !sk_X509_num(sk)) {
        sk_X509_free(sk);
        sk = NULL;
    }
    return sk;
}

/* 1 when chain[0] chains to a certificate of cas (chain[1..] as intermediates), times
 * aside; else 0 with why. */
static int trusted(STACK_OF(X509) *chain, STACK_OF(X509) *cas, char *why, size_t len)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int ok = 0;
    for (int i = 0; store && i < sk_X509_num(cas); i++)
        X509_STORE_add_cert(store, sk_X509_value(cas, i));
    if (store && ctx && X509_STORE_CTX_init(ctx, store, sk_X509_value(chain, 0), chain) == 1) {
        X509_VERIFY_PARAM *p = X509_STORE_CTX_get0_param(ctx);
        X509_VERIFY_PARAM_set_flags(p, X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_NO_CHECK_TIME);
        ok = X509_verify_cert(ctx) == 1;
        if (!ok)
            snprintf(why, len, "%s", X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
    } else {
        snprintf(why, len, "out of memory");
    }
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    ERR_clear_error();
    return ok;
}

/* The certificate's DNS names, comma-separated, into out (cut at len). */
static void dns_names(X509 *x, char *out, size_t len)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens) && at + 1 < len; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type != GEN_DNS)
            continue;
        int n = snprintf(out + at, len - at, "%s%.*s", at ? ", " : "", ASN1_STRING_length(g->d.dNSName),
                         (const char *)ASN1_STRING_get0_data(g->d.dNSName));
        at += n > 0 ? (size_t)n : 0;
    }
    GENERAL_NAMES_free(gens);
    if (!out[0])
        snprintf(out, len, "none");
}

__attribute__((format(printf, 3, 4)))
static tlscert_status_t fail(tlscert_check_t *out, tlscert_status_t st, const char *fmt, ...)
{
    BUF_FORMAT_VA(out->detail, sizeof(out->detail), fmt);
    out->status = st;
    return st;
}

/* The checks that need the leaf alone, after the chain: validity, names, expiry. */
static tlscert_status_t check_leaf(X509 *leaf, const char *const *names, size_t n_names, int64_t now_s,
                                   int64_t warn_s, tlscert_check_t *out)
{
    char when[32];
    if (now_s < out->not_before_s) {
        tlscert_time(out->not_before_s, when, sizeof(when));
        return fail(out, TLSCERT_NOT_YET_VALID, "not valid before %s", when);
    }
    tlscert_time(out->not_after_s, when, sizeof(when));
    if (now_s >= out->not_after_s)
        return fail(out, TLSCERT_EXPIRED, "expired at %s", when);
    for (size_t i = 0; i < n_names; i++) {
        if (X509_check_host(leaf, names[i], 0, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, NULL) == 1)
            continue;
        char have[300];
        dns_names(leaf, have, sizeof(have));
        ERR_clear_error();
        return fail(out, TLSCERT_NAME_MISMATCH, "not valid for %.200s (its DNS names: %s)", names[i], have);
    }
    int64_t life = out->not_after_s - out->not_before_s;
    if (warn_s > life / 6)
        warn_s = life / 6;
    if (now_s + warn_s >= out->not_after_s)
        return fail(out, TLSCERT_EXPIRING, "expires at %s and has not been renewed", when);
    return TLSCERT_OK;
}

tlscert_status_t tlscert_check(const char *cert, size_t cert_len, const char *key, size_t key_len, const char *ca,
                               size_t ca_len, const char *const *names, size_t n_names, int64_t now_s, int64_t warn_s,
                               tlscert_check_t *out)
{
    memset(out, 0, sizeof(*out));
    STACK_OF(X509) *chain = certs_of(cert, cert_len), *cas = NULL;
    tlscert_status_t st;
    char why[200];
    if (!chain) {
        st = fail(out, TLSCERT_NO_CERT, "tls.crt holds no PEM certificate");
        goto out;
    }
    X509 *leaf = sk_X509_value(chain, 0);
    describe(leaf, out);
    pem_pair_t pair = key && key_len ? pem_pair_check(cert, cert_len, key, key_len) : PEM_PAIR_NO_KEY;
    if (pair == PEM_PAIR_NO_KEY) {
        st = fail(out, TLSCERT_NO_KEY, "tls.key holds no usable PEM private key (an encrypted key is not usable)");
        goto out;
    }
    if (pair != PEM_PAIR_OK) {
        st = fail(out, TLSCERT_KEY_MISMATCH, "tls.key is not the key of the certificate in tls.crt");
        goto out;
    }
    if (!(cas = certs_of(ca, ca_len))) {
        st = fail(out, TLSCERT_NO_CA, "ca.crt holds no PEM certificate");
        goto out;
    }
    if (!trusted(chain, cas, why, sizeof(why))) {
        st = fail(out, TLSCERT_UNTRUSTED, "tls.crt does not chain to ca.crt: %s", why);
        goto out;
    }
    st = check_leaf(leaf, names, n_names, now_s, warn_s, out);
out:
    sk_X509_pop_free(chain, X509_free);
    sk_X509_pop_free(cas, X509_free);
    ERR_clear_error();
    out->status = st;
    return st;
}
