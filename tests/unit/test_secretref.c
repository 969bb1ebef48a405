/* Unit tests of informerd's Secret index (secretref.h): which RedisClusters a Secret's
 * change enqueues, as references are added, moved, dropped and deleted, one Secret or
 * several a cluster (spec.auth, spec.tls, spec.acl). */
#include "../../informerd/secretref.h"
#include "cu_table.h"
#include "text_case.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The RedisClusters of secret_key, sorted, as "a b c". */
typedef struct {
    char *names[16];
    size_t n;
} seen_t;

static void collect(void *ud, const char *key)
{
    seen_t *s = ud;
    if (s->n < 16)
        s->names[s->n++] = strdup(key);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *clusters_of(const secretref_t *x, const char *secret_key)
{
    static char out[512];
    seen_t s = {{0}, 0};
    size_t n = secretref_each(x, secret_key, collect, &s);
    CU_ASSERT_EQUAL(n, s.n);
    qsort(s.names, s.n, sizeof(s.names[0]), by_str);
    out[0] = '\0';
    for (size_t i = 0; i < s.n; i++) {
        size_t l = strlen(out);
        snprintf(out + l, sizeof(out) - l, "%s%s", i ? " " : "", s.names[i]);
        free(s.names[i]);
    }
    return out;
}

static void test_index_follows_the_references(void)
{
    secretref_t *x = secretref_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw"), "");
    CU_ASSERT_EQUAL(secretref_set(x, "a/one", "pw"), 0);
    CU_ASSERT_EQUAL(secretref_set(x, "a/two", "pw"), 0);
    CU_ASSERT_EQUAL(secretref_set(x, "b/three", "pw"), 0); /* another namespace's pw */
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw"), "a/one a/two");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "b/pw"), "b/three");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/other"), "");
    /* Setting the same reference again changes nothing. */
    CU_ASSERT_EQUAL(secretref_set(x, "a/one", "pw"), 0);
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw"), "a/one a/two");
    CU_ASSERT_EQUAL(secretref_count(x), 3);
    /* a/two moves to another Secret: only there from now on. */
    CU_ASSERT_EQUAL(secretref_set(x, "a/two", "pw2"), 0);
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw"), "a/one");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw2"), "a/two");
    /* a/one drops its auth (NULL or ""): a change of pw enqueues nobody in a. */
    CU_ASSERT_EQUAL(secretref_set(x, "a/one", NULL), 0);
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw"), "");
    CU_ASSERT_EQUAL(secretref_set(x, "a/one", "pw"), 0);
    CU_ASSERT_EQUAL(secretref_set(x, "a/one", ""), 0);
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw"), "");
    /* A deleted cluster is forgotten; forgetting an unknown one is fine. */
    secretref_forget(x, "a/two");
    secretref_forget(x, "a/never");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw2"), "");
    CU_ASSERT_EQUAL(secretref_count(x), 1);
    /* A key that is not ns/name is refused and changes nothing. */
    CU_ASSERT_EQUAL(secretref_set(x, "noslash", "pw"), -1);
    CU_ASSERT_EQUAL(secretref_count(x), 1);
    secretref_destroy(&x);
    CU_ASSERT_PTR_NULL(x);
    secretref_destroy(&x);
}

static void test_many_clusters_one_secret(void)
{
    secretref_t *x = secretref_new();
    char key[64];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "ns/c%04d", i);
        CU_ASSERT_EQUAL(secretref_set(x, key, i % 2 ? "odd" : "even"), 0);
    }
    seen_t s = {{0}, 0};
    CU_ASSERT_EQUAL(secretref_each(x, "ns/odd", collect, &s), 500);
    for (size_t i = 0; i < s.n; i++)
        free(s.names[i]);
    for (int i = 0; i < 1000; i += 2) {
        snprintf(key, sizeof(key), "ns/c%04d", i);
        secretref_forget(x, key);
    }
    s.n = 0;
    CU_ASSERT_EQUAL(secretref_each(x, "ns/even", collect, &s), 0);
    CU_ASSERT_EQUAL(secretref_count(x), 500);
    secretref_destroy(&x);
}

static void test_secretref_of(void)
{
    static const text_case_t rows[] = {
        {"{\"spec\":{\"auth\":{\"secretRef\":{\"name\":\"pw\",\"key\":\"k\"}}}}", "pw"},
        {"{\"spec\":{\"auth\":{\"secretRef\":{\"name\":\"\"}}}}", NULL},
        {"{\"spec\":{\"auth\":{\"secretRef\":{\"name\":7}}}}", NULL},
        {"{\"spec\":{\"auth\":{}}}", NULL},
        {"{\"spec\":{}}", NULL},
        {"[]", NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *rc = json_tokener_parse(rows[i].in);
        const char *got = secretref_of(rc);
        if (rows[i].want) {
            CU_ASSERT_PTR_NOT_NULL_FATAL(got);
            CU_ASSERT_STRING_EQUAL(got, rows[i].want);
        } else {
            CU_ASSERT_PTR_NULL(got);
        }
        json_object_put(rc);
    }
    CU_ASSERT_PTR_NULL(secretref_of(NULL));
}

/* A Secret is cached as its metadata only, whatever the API sent. */
static void test_metadata_only(void)
{
    json_object *s = json_tokener_parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"pw\",\"namespace\":\"a\","
        "\"labels\":{\"x\":\"y\"}},\"data\":{\"password\":\"c2VjcmV0\"},\"stringData\":{\"p\":\"secret\"},"
        "\"type\":\"Opaque\",\"immutable\":true}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(secretref_metadata_only(s), 0);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN),
                           "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"pw\","
                           "\"namespace\":\"a\",\"labels\":{\"x\":\"y\"}}}");
    /* More members than one round drops. */
    for (int i = 0; i < 200; i++) {
        char k[32];
        snprintf(k, sizeof(k), "extra%d", i);
        json_object_object_add(s, k, json_object_new_string("secret"));
    }
    CU_ASSERT_EQUAL(secretref_metadata_only(s), 0);
    CU_ASSERT_EQUAL(json_object_object_length(s), 3);
    CU_ASSERT_PTR_NULL(strstr(json_object_to_json_string(s), "secret\""));
    json_object_put(s);
    json_object *arr = json_object_new_array();
    CU_ASSERT_EQUAL(secretref_metadata_only(arr), -1);
    CU_ASSERT_EQUAL(secretref_metadata_only(NULL), -1);
    json_object_put(arr);
}

/* A cluster that names several Secrets (auth, tls, ACL users'): each enqueues it; a
 * changed set replaces the old one; a Secret two clusters share enqueues both. */
static void test_several_secrets(void)
{
    json_object *rc = json_tokener_parse(
        "{\"spec\":{\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"tls\":{\"secretRef\":{\"name\":\"tls\"}},"
        "\"acl\":{\"users\":[{\"name\":\"a\",\"passwordSecretRef\":{\"name\":\"users\"}},{\"name\":\"b\","
        "\"passwordSecretRef\":{\"name\":\"users\",\"key\":\"b\"}},{\"name\":\"c\","
        "\"passwordSecretRef\":{\"name\":\"pw\"}}]}}}");
    const char *names[SECRETREF_MAX];
    size_t n = secretref_of_all(rc, names, SECRETREF_MAX);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_STRING_EQUAL(names[0], "pw");
    CU_ASSERT_STRING_EQUAL(names[1], "tls");
    CU_ASSERT_STRING_EQUAL(names[2], "users");
    CU_ASSERT_EQUAL(secretref_of_all(rc, names, 2), 2);
    secretref_t *x = secretref_new();
    CU_ASSERT_EQUAL(secretref_set_all(x, "a/one", names, 3), 0);
    CU_ASSERT_EQUAL(secretref_set(x, "a/two", "tls"), 0);
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw"), "a/one");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/users"), "a/one");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/tls"), "a/one a/two");
    CU_ASSERT_EQUAL(secretref_count(x), 2);
    CU_ASSERT_EQUAL(secretref_set_all(x, "a/one", names, 3), 0); /* unchanged */
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/tls"), "a/one a/two");
    const char *fewer[] = {"tls", "new"};
    CU_ASSERT_EQUAL(secretref_set_all(x, "a/one", fewer, 2), 0);
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/pw"), "");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/users"), "");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/new"), "a/one");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/tls"), "a/one a/two");
    secretref_forget(x, "a/one");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/tls"), "a/two");
    CU_ASSERT_STRING_EQUAL(clusters_of(x, "a/new"), "");
    CU_ASSERT_EQUAL(secretref_set_all(x, "a/two", names, 0), 0);
    CU_ASSERT_EQUAL(secretref_count(x), 0);
    CU_ASSERT_EQUAL(secretref_set_all(x, "noslash", names, 1), -1);
    secretref_destroy(&x);
    json_object_put(rc);
}

static const cu_entry_t tests[] = {
    CU_SUITE("informerd Secret index"),
    {"the index follows references set, moved, dropped, deleted", test_index_follows_the_references},
    {"a thousand clusters over two Secrets", test_many_clusters_one_secret},
    {"spec.auth.secretRef.name read", test_secretref_of},
    {"a cluster that names several Secrets (auth, tls, ACL users)", test_several_secrets},
    {"a Secret is cached as its metadata only", test_metadata_only},
};

CU_MAIN(tests)
