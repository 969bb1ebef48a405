/* tlscert: what the certificate of a RedisCluster's spec.tls Secret (cert-manager's
 * layout: tls.crt, tls.key, ca.crt) says, and whether the pods can serve it: the checks
 * behind the TLSReady condition, its Events (workerd's plan) and observerd's
 * rdc_redis_tls_cert_expiry_seconds. Pure: no I/O and no clock (now is an argument);
 * OpenSSL parses. docs/tls-and-acl.md, "What is verified".
 *
 * tlscert_check, in this order; the first that fails is the answer:
 *   TLSCERT_NO_CERT        tls.crt holds no PEM certificate
 *   TLSCERT_NO_KEY         tls.key holds no usable PEM private key (an encrypted one is
 *                          not usable: Redis reads it without a passphrase)
 *   TLSCERT_KEY_MISMATCH   tls.key is not tls.crt's key
 *   TLSCERT_NO_CA          ca.crt holds no PEM certificate
 *   TLSCERT_UNTRUSTED      tls.crt (with the intermediates after it in the file) does not
 *                          chain to a certificate of ca.crt (any of them is a trust anchor,
 *                          as the operator's clients take it: redis_tls.h), times aside
 *   TLSCERT_NOT_YET_VALID  now is before its notBefore
 *   TLSCERT_EXPIRED        now is at or after its notAfter
 *   TLSCERT_NAME_MISMATCH  it is not valid for one of the names (DNS SANs, wildcards
 *                          whole labels only, as the operator's clients check them)
 *   TLSCERT_EXPIRING       all of the above pass, and it expires within warn_s of now, or
 *                          within a sixth of its lifetime when that is shorter (cert-manager
 *                          renews a third of the lifetime ahead: a certificate still here at a
 *                          sixth was not renewed; a 24-hour one warns 4 hours ahead)
 *   TLSCERT_OK
 * and in every case where tls.crt holds a certificate, its fingerprint, serial and
 * validity (the leaf's; a chain's intermediates are not reported).
 *
 * Nothing here ever holds key material past the call; no detail line quotes a key.
 */
#ifndef RDC_TLSCERT_H
#define RDC_TLSCERT_H

#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    TLSCERT_OK = 0,
    TLSCERT_NO_CERT,
    TLSCERT_NO_KEY,
    TLSCERT_KEY_MISMATCH,
    TLSCERT_NO_CA,
    TLSCERT_UNTRUSTED,
    TLSCERT_NOT_YET_VALID,
    TLSCERT_EXPIRED,
    TLSCERT_NAME_MISMATCH,
    TLSCERT_EXPIRING,
} tlscert_status_t;

#define TLSCERT_DETAIL_MAX 512

typedef struct {
    tlscert_status_t status;
    int have_cert;               /* tls.crt held a certificate: the fields below are set */
    char sha256[65];             /* of the leaf's DER, lower-case hex (what redis_conn_peer_cert says) */
    char serial[84];             /* the leaf's serial number, upper-case hex (as openssl x509 -serial) */
    int64_t not_before_s;        /* Unix seconds */
    int64_t not_after_s;
    char detail[TLSCERT_DETAIL_MAX]; /* one line for a status other than OK ("expired at
                                        2026-01-02T03:04:05Z", "not valid for
                                        cache-2.cache.ns.svc; its names: ..."); "" for OK */
} tlscert_check_t;

/* Check the Secret's parts (cert, key, ca: PEM, each NULL or of length 0 when absent)
 * for names[0..n_names) at now_s (Unix seconds), warning warn_s ahead, into *out.
 * Returns out->status. */
tlscert_status_t tlscert_check(const char *cert, size_t cert_len, const char *key, size_t key_len, const char *ca,
                               size_t ca_len, const char *const *names, size_t n_names, int64_t now_s, int64_t warn_s,
                               tlscert_check_t *out);

/* The leaf certificate's fingerprint, serial and validity alone (no other check): 0 with
 * *out's have_cert set, or -1 when cert holds no PEM certificate. */
int tlscert_read(const char *cert, size_t cert_len, tlscert_check_t *out);

/* The SHA-256 of x's DER as 64 lower-case hex digits into hex[65] (the certificate's
 * fingerprint, as redis_conn_peer_cert gives it): 0, or -1 with hex "". */
int tlscert_sha256(X509 *x, char hex[65]);

/* The status's name: "OK", "NoCertificate", "NoKey", "KeyMismatch", "NoCA", "Untrusted",
 * "NotYetValid", "Expired", "NameMismatch", "Expiring" (the condition's reasons are
 * made from them: TLSCertificate<name>). */
const char *tlscert_status_name(tlscert_status_t st);

/* Unix seconds as RFC 3339 UTC ("2026-01-02T03:04:05Z") into out (at least 21 bytes). */
void tlscert_time(int64_t s, char *out, size_t len);

#endif
