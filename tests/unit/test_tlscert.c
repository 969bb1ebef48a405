/* Unit tests of tlscert.h, the checks of a spec.tls Secret's certificate, with
 * certificates made in the test by OpenSSL's API (redis_tls_certs.h): a good one for the
 * pods' names (a wildcard under the headless Service), then each failure in the order
 * tlscert_check takes them (no certificate, no key, a key of another certificate, no CA,
 * a CA that did not sign it, not yet valid, expired, a name it does not cover, a
 * partial wildcard, expiring within the warning), its fingerprint, serial and validity,
 * a chain with an intermediate, and no key material in any detail line. */
#include "cu_table.h"
#include "tlscert.h"

#include "redis_tls_certs.h"

#include <CUnit/CUnit.h>
#include <time.h>

static tc_pki_t pki;
static tc_cert_t pods, partial, future, inter, leaf;

static int suite_init(void)
{
    tc_pki_make(&pki);
    pods = tc_make("cache", &pki.ca, 0, "DNS:*.cache.ns.svc,DNS:cache.ns.svc", "serverAuth,clientAuth", -3600,
                   30 * 86400);
    partial = tc_make("cache", &pki.ca, 0, "DNS:cache-*.cache.ns.svc", "serverAuth", -3600, 30 * 86400);
    future = tc_make("cache", &pki.ca, 0, "DNS:*.cache.ns.svc", "serverAuth", 86400, 30 * 86400);
    inter = tc_make("rdc intermediate", &pki.ca, 1, NULL, NULL, -3600, 86400 * 10);
    leaf = tc_make("cache", &inter, 0, "DNS:*.cache.ns.svc", "serverAuth", -3600, 86400 * 5);
    return 0;
}

static int suite_clean(void)
{
    tc_cert_free(&pods);
    tc_cert_free(&partial);
    tc_cert_free(&future);
    tc_cert_free(&inter);
    tc_cert_free(&leaf);
    tc_pki_free(&pki);
    return 0;
}

CU_HOOKS({"tlscert", suite_init, suite_clean, NULL, NULL});

static const char *const NAMES[] = {"cache-0.cache.ns.svc", "cache-1.cache.ns.svc", "cache-2.cache.ns.svc"};

static tlscert_status_t check(const char *crt, const char *key, const char *ca, int64_t warn_s, tlscert_check_t *out)
{
    tlscert_status_t st = tlscert_check(crt, crt ? strlen(crt) : 0, key, key ? strlen(key) : 0, ca,
                                        ca ? strlen(ca) : 0, NAMES, 3, (int64_t)time(NULL), warn_s, out);
    if (key && *key)
        CU_ASSERT_PTR_NULL(strstr(out->detail, "PRIVATE")); /* never key material */
    return st;
}

static void test_good(void)
{
    tlscert_check_t c;
    CU_ASSERT_EQUAL(check(pods.crt_pem, pods.key_pem, pki.ca.crt_pem, 7 * 86400, &c), TLSCERT_OK);
    CU_ASSERT_STRING_EQUAL(c.detail, "");
    CU_ASSERT_EQUAL(c.have_cert, 1);
    CU_ASSERT_EQUAL(strlen(c.sha256), 64);
    int64_t now = (int64_t)time(NULL);
    CU_ASSERT(c.not_after_s > now + 29 * 86400 && c.not_after_s <= now + 30 * 86400 + 5);
    CU_ASSERT(c.not_before_s < now);
    CU_ASSERT(strlen(c.serial) > 0);
    /* the fingerprint is the DER's SHA-256: what the transport reports of a server */
    unsigned char md[32];
    unsigned int n = 0;
    char hex[65];
    X509_digest(pods.crt, EVP_sha256(), md, &n);
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    CU_ASSERT_STRING_EQUAL(c.sha256, hex);
    /* tlscert_read: the same facts, no checks */
    tlscert_check_t r;
    CU_ASSERT_EQUAL(tlscert_read(pods.crt_pem, strlen(pods.crt_pem), &r), 0);
    CU_ASSERT_STRING_EQUAL(r.sha256, c.sha256);
    CU_ASSERT_STRING_EQUAL(r.serial, c.serial);
    CU_ASSERT_EQUAL(r.not_after_s, c.not_after_s);
    CU_ASSERT_EQUAL(tlscert_read("junk", 4, &r), -1);
    CU_ASSERT_EQUAL(r.have_cert, 0);
}

static void test_failures_in_order(void)
{
    tlscert_check_t c;
    CU_ASSERT_EQUAL(check(NULL, pods.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_NO_CERT);
    CU_ASSERT_EQUAL(c.have_cert, 0);
    CU_ASSERT_EQUAL(check("not pem", pods.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_NO_CERT);
    CU_ASSERT_EQUAL(check(pods.crt_pem, NULL, pki.ca.crt_pem, 0, &c), TLSCERT_NO_KEY);
    CU_ASSERT_EQUAL(c.have_cert, 1); /* what the certificate says is known all the same */
    CU_ASSERT_EQUAL(check(pods.crt_pem, pki.server.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_KEY_MISMATCH);
    CU_ASSERT_STRING_EQUAL(c.detail, "tls.key is not the key of the certificate in tls.crt");
    CU_ASSERT_EQUAL(check(pods.crt_pem, pods.key_pem, "", 0, &c), TLSCERT_NO_CA);
    CU_ASSERT_EQUAL(check(pods.crt_pem, pods.key_pem, pki.other_ca.crt_pem, 0, &c), TLSCERT_UNTRUSTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.detail, "does not chain to ca.crt"));
    CU_ASSERT_EQUAL(check(future.crt_pem, future.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_NOT_YET_VALID);
    CU_ASSERT_EQUAL(check(pki.expired.crt_pem, pki.expired.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_EXPIRED);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.detail, "expired at 20"));
    /* redis.test's certificate is not for the pods */
    CU_ASSERT_EQUAL(check(pki.server.crt_pem, pki.server.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_NAME_MISMATCH);
    CU_ASSERT_STRING_EQUAL(c.detail, "not valid for cache-0.cache.ns.svc (its DNS names: redis.test)");
    /* no partial wildcards, as the clients check names */
    CU_ASSERT_EQUAL(check(partial.crt_pem, partial.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_NAME_MISMATCH);
    /* 30 days left: warned 31 days ahead only when a sixth of the lifetime is as long */
    CU_ASSERT_EQUAL(check(pods.crt_pem, pods.key_pem, pki.ca.crt_pem, 31 * 86400, &c), TLSCERT_OK);
    tc_cert_t old = tc_make("cache", &pki.ca, 0, "DNS:*.cache.ns.svc", "serverAuth", -300 * 86400, 30 * 86400);
    CU_ASSERT_EQUAL(check(old.crt_pem, old.key_pem, pki.ca.crt_pem, 31 * 86400, &c), TLSCERT_EXPIRING);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.detail, "expires at "));
    CU_ASSERT_EQUAL(check(old.crt_pem, old.key_pem, pki.ca.crt_pem, 14 * 86400, &c), TLSCERT_OK);
    tc_cert_free(&old);
    CU_ASSERT_STRING_EQUAL(tlscert_status_name(TLSCERT_EXPIRING), "Expiring");
    CU_ASSERT_STRING_EQUAL(tlscert_status_name(TLSCERT_NAME_MISMATCH), "NameMismatch");
}

/* tls.crt with its intermediate after it, ca.crt the root: trusted; the intermediate
 * alone as ca.crt: trusted too (any certificate of the bundle is an anchor). */
static void test_chain(void)
{
    size_t n = strlen(leaf.crt_pem) + strlen(inter.crt_pem) + 1;
    char *bundle = malloc(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bundle);
    snprintf(bundle, n, "%s%s", leaf.crt_pem, inter.crt_pem);
    tlscert_check_t c;
    CU_ASSERT_EQUAL(check(bundle, leaf.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_OK);
    CU_ASSERT_EQUAL(check(leaf.crt_pem, leaf.key_pem, inter.crt_pem, 0, &c), TLSCERT_OK);
    CU_ASSERT_EQUAL(check(leaf.crt_pem, leaf.key_pem, pki.ca.crt_pem, 0, &c), TLSCERT_UNTRUSTED);
    free(bundle);
    char t[32];
    tlscert_time(0, t, sizeof(t));
    CU_ASSERT_STRING_EQUAL(t, "1970-01-01T00:00:00Z");
}

static const cu_entry_t tests[] = {
    CU_SUITE("tlscert"),
    {"a good certificate for the pods' names", test_good},
    {"each failure, in order", test_failures_in_order},
    {"a chain with an intermediate", test_chain},
};
CU_MAIN(tests)
