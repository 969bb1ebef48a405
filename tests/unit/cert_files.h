/* cert_files: self-signed certificates written as files, for the tests of the servers
 * that load (and reload) their certificate from a directory (webhookd, metricsd).
 * Header-only. */
#ifndef RDC_TEST_CERT_FILES_H
#define RDC_TEST_CERT_FILES_H

#include <CUnit/CUnit.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>

/* Write a self-signed P-256 certificate for cn (SAN IP:127.0.0.1) and its key to
 * dir/crt and dir/key, through *.new files renamed into place (as the kubelet swaps
 * them). key NULL: leave the key file alone (a mismatched pair). */
static inline void cert_files_make(const char *dir, const char *cn, const char *crt, const char *key)
{
    static long serial = 1;
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    CU_ASSERT_FATAL(pkey && x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *san = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
    X509_add_ext(x, san, -1);
    X509_EXTENSION_free(san);
    CU_ASSERT_FATAL(X509_sign(x, pkey, EVP_sha256()) > 0);
    char path[512], tmp[520];
    snprintf(path, sizeof(path), "%s/%s", dir, crt);
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    FILE *f = fopen(tmp, "w");
    CU_ASSERT_FATAL(f != NULL);
    PEM_write_X509(f, x);
    fclose(f);
    CU_ASSERT_FATAL(rename(tmp, path) == 0);
    if (key) {
        snprintf(path, sizeof(path), "%s/%s", dir, key);
        snprintf(tmp, sizeof(tmp), "%s.new", path);
        f = fopen(tmp, "w");
        CU_ASSERT_FATAL(f != NULL);
        PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
        fclose(f);
        CU_ASSERT_FATAL(rename(tmp, path) == 0);
    }
    X509_free(x);
    EVP_PKEY_free(pkey);
}

#endif
