#include "pem.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

int pem_no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return 0;
}

X509 *pem_cert(const char *pem, size_t len)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    X509 *x = bio ? PEM_read_bio_X509(bio, NULL, pem_no_passphrase, NULL) : NULL;
    BIO_free(bio);
    ERR_clear_error(); /* leave no stale errors for the TLS code */
    return x;
}

EVP_PKEY *pem_key(const char *pem, size_t len)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, pem_no_passphrase, NULL) : NULL;
    BIO_free(bio);
    ERR_clear_error();
    return k;
}

pem_pair_t pem_pair_check(const char *cert, size_t clen, const char *key, size_t klen)
{
    pem_pair_t r = PEM_PAIR_OK;
    X509 *x = pem_cert(cert, clen);
    EVP_PKEY *k = pem_key(key, klen);
    if (!x)
        r = PEM_PAIR_NO_CERT;
    else if (!k)
        r = PEM_PAIR_NO_KEY;
    else if (X509_check_private_key(x, k) != 1)
        r = PEM_PAIR_MISMATCH;
    X509_free(x);
    EVP_PKEY_free(k);
    ERR_clear_error();
    return r;
}
