/* Unit tests of metricsd's metrics_auth: the decision cache (TTL per kind, bounded, the
 * entry expiring first replaced), the bearer parsing, and the TokenReview and
 * SubjectAccessReview steps on the answers the API server gives. */
#include "../../metricsd/metrics_auth.h"
#include "cu_table.h"
#include "text_case.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <string.h>

#define S INT64_C(1000000000)

static void hash_of(int i, unsigned char h[32])
{
    memset(h, 0, 32);
    h[0] = (unsigned char)i;
    h[1] = (unsigned char)(i >> 8);
}

static void test_cache_ttl(void)
{
    static const struct {
        int decision;
        int64_t ttl; /* 0: not cached */
    } cases[] = {{200, 60 * S}, {403, 30 * S}, {401, 10 * S}, {500, 0}, {502, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mauth_cache_t *c = mauth_cache_new(4);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        unsigned char h[32];
        hash_of(1, h);
        int64_t t0 = 1000 * S;
        CU_ASSERT_EQUAL(mauth_cache_get(c, h, t0), 0);
        mauth_cache_put(c, h, cases[i].decision, t0);
        if (cases[i].ttl) {
            CU_ASSERT_EQUAL(mauth_cache_get(c, h, t0), cases[i].decision);
            CU_ASSERT_EQUAL(mauth_cache_get(c, h, t0 + cases[i].ttl - 1), cases[i].decision);
            CU_ASSERT_EQUAL(mauth_cache_get(c, h, t0 + cases[i].ttl), 0);
        } else {
            CU_ASSERT_EQUAL(mauth_cache_get(c, h, t0), 0);
            CU_ASSERT_EQUAL(mauth_cache_size(c), 0);
        }
        mauth_cache_destroy(&c);
        CU_ASSERT_PTR_NULL(c);
    }
}

static void test_cache_bounded(void)
{
    mauth_cache_t *c = mauth_cache_new(3);
    unsigned char h[32];
    /* 403 at t=0 (expires 30 s), 200 at t=1 (61 s), 401 at t=2 (12 s). */
    hash_of(1, h);
    mauth_cache_put(c, h, 403, 0);
    hash_of(2, h);
    mauth_cache_put(c, h, 200, 1 * S);
    hash_of(3, h);
    mauth_cache_put(c, h, 401, 2 * S);
    CU_ASSERT_EQUAL(mauth_cache_size(c), 3);
    /* Full: the fourth replaces the one expiring first, the 401 (12 s). */
    hash_of(4, h);
    mauth_cache_put(c, h, 200, 3 * S);
    CU_ASSERT_EQUAL(mauth_cache_size(c), 3);
    hash_of(3, h);
    CU_ASSERT_EQUAL(mauth_cache_get(c, h, 3 * S), 0);
    hash_of(1, h);
    CU_ASSERT_EQUAL(mauth_cache_get(c, h, 3 * S), 403);
    hash_of(2, h);
    CU_ASSERT_EQUAL(mauth_cache_get(c, h, 3 * S), 200);
    /* The same hash again replaces its own entry, with the new decision and TTL. */
    hash_of(1, h);
    mauth_cache_put(c, h, 200, 20 * S);
    CU_ASSERT_EQUAL(mauth_cache_size(c), 3);
    CU_ASSERT_EQUAL(mauth_cache_get(c, h, 79 * S), 200);
    /* Many more never grow it. */
    for (int i = 10; i < 1000; i++) {
        hash_of(i, h);
        mauth_cache_put(c, h, 403, (int64_t)i * S);
    }
    CU_ASSERT_EQUAL(mauth_cache_size(c), 3);
    CU_ASSERT_PTR_NULL(mauth_cache_new(0));
    mauth_cache_destroy(&c);
    mauth_cache_destroy(&c); /* NULL is fine */
}

static void test_bearer(void)
{
    static const text_case_t cases[] = {
        {"Bearer abc.def", "abc.def"},
        {"bearer abc", "abc"},
        {"BEARER   abc", "abc"},
        {"Bearer ", NULL},
        {"Bearer", NULL},
        {"Basic dXNlcjpwYXNz", NULL},
        {"Bearer a b", NULL},
        {"Bearer a\tb", NULL},
        {"", NULL},
        {NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = mauth_bearer(cases[i].in);
        if (cases[i].want) {
            CU_ASSERT_PTR_NOT_NULL(got);
            if (got)
                CU_ASSERT_STRING_EQUAL(got, cases[i].want);
        } else {
            CU_ASSERT_PTR_NULL(got);
        }
    }
    static char big[MAUTH_MAX_TOKEN + 16] = "Bearer ";
    memset(big + 7, 'x', MAUTH_MAX_TOKEN);
    CU_ASSERT_PTR_NOT_NULL(mauth_bearer(big));
    big[7 + MAUTH_MAX_TOKEN] = 'x';
    CU_ASSERT_PTR_NULL(mauth_bearer(big));
}

/* The compact text of r (which this frees) is want. */
static void assert_json(json_object *r, const char *want)
{
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                           want);
    json_object_put(r);
}

static void test_token_review(void)
{
    assert_json(mauth_token_review("tok"),
                "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{\"token\":\"tok\"}}");
}

static void test_access_review(void)
{
    json_object *u = json_tokener_parse(
        "{\"username\":\"system:serviceaccount:mon:prom\",\"uid\":\"u-1\","
        "\"groups\":[\"system:serviceaccounts\",\"system:authenticated\"],"
        "\"extra\":{\"authentication.kubernetes.io/pod-name\":[\"p\"]}}");
    assert_json(mauth_access_review(u, "/metrics"),
                "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                "\"spec\":{\"user\":\"system:serviceaccount:mon:prom\",\"uid\":\"u-1\","
                "\"groups\":[\"system:serviceaccounts\",\"system:authenticated\"],"
                "\"extra\":{\"authentication.kubernetes.io/pod-name\":[\"p\"]},"
                "\"nonResourceAttributes\":{\"path\":\"/metrics\",\"verb\":\"get\"}}}");
    json_object_put(u);
}

/* mauth_token_review_user as a verdict: 1 with the user, 0 without one. */
static int token_verdict(json_object *answer)
{
    json_object *user = NULL;
    int ok = mauth_token_review_user(answer, &user);
    CU_ASSERT(ok ? user != NULL : user == NULL);
    return ok;
}

/* The API server's answers to both reviews and what metricsd makes of them. */
static void test_review_answers(void)
{
    static const struct {
        int (*verdict)(json_object *answer);
        const char *answer;
        int want;
    } cases[] = {
        {token_verdict, "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"system:serviceaccount:a:b\"}}}",
         1},
        {token_verdict, "{\"status\":{\"authenticated\":false,\"error\":\"invalid bearer token\"}}", 0},
        {token_verdict, "{\"status\":{\"authenticated\":true,\"user\":{}}}", 0},
        {token_verdict, "{\"status\":{\"authenticated\":\"true\",\"user\":{\"username\":\"x\"}}}", 0},
        {token_verdict, "{\"status\":{}}", 0},
        {token_verdict, "{}", 0},
        {mauth_access_allowed, "{\"status\":{\"allowed\":true}}", 1},
        {mauth_access_allowed, "{\"status\":{\"allowed\":true,\"denied\":true}}", 0},
        {mauth_access_allowed, "{\"status\":{\"allowed\":false,\"reason\":\"no RBAC policy matched\"}}", 0},
        {mauth_access_allowed, "{\"status\":{\"allowed\":1}}", 0},
        {mauth_access_allowed, "{}", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *a = json_tokener_parse(cases[i].answer);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(cases[i].verdict(a), cases[i].want);
        json_object_put(a);
    }
}

static const cu_entry_t tests[] = {
    CU_SUITE("metrics_auth"),
    {"cache: TTL per decision, errors not cached", test_cache_ttl},
    {"cache: bounded, the entry expiring first replaced", test_cache_bounded},
    {"bearer: scheme, spaces, empty, size cap", test_bearer},
    {"TokenReview: the request", test_token_review},
    {"SubjectAccessReview: the request", test_access_review},
    {"both reviews: the answers judged", test_review_answers},
};

CU_MAIN(tests)
