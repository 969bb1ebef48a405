/* pem: PEM certificates and private keys read with OpenSSL, never prompting for a
 * passphrase (an encrypted key is simply not a usable key), so that a bad blob is named
 * before TLS sees it: kube_config's CA and client credentials, metricsd's serving pair,
 * webhookd's TLS context. */
#ifndef RDC_PEM_H
#define RDC_PEM_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>

/* OpenSSL's pem_password_cb that gives no passphrase: reading an encrypted key fails
 * instead of asking on a terminal. For SSL_CTX_set_default_passwd_cb and PEM_read_*. */
int pem_no_passphrase(char *buf, int size, int rwflag, void *u);

/* The first certificate in pem[0..len), or NULL. The caller X509_free()s it. OpenSSL's
 * error queue is left empty either way. */
X509 *pem_cert(const char *pem, size_t len);

/* The first private key in pem[0..len) (not an encrypted one), or NULL. The caller
 * EVP_PKEY_free()s it. OpenSSL's error queue is left empty either way. */
EVP_PKEY *pem_key(const char *pem, size_t len);

typedef enum {
    PEM_PAIR_OK = 0,
    PEM_PAIR_NO_CERT,  /* no PEM certificate in cert */
    PEM_PAIR_NO_KEY,   /* no PEM private key in key (or an encrypted one) */
    PEM_PAIR_MISMATCH, /* the key is not the certificate's */
} pem_pair_t;

/* Whether cert and key are a usable certificate and the private key that belongs to it,
 * and when not, which part is wrong (the first, in the order of the enum). */
pem_pair_t pem_pair_check(const char *cert, size_t clen, const char *key, size_t klen);

#endif
