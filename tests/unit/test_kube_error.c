/* Unit tests for kube_error: Status bodies as the API server sends them. */
#include "kube_error.h"

#include <CUnit/CUnit.h>
#include <string.h>

/* How every Failure Status the API server sends begins. */
#define STATUS_FAILURE "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","

static kube_error_code_t map(int status, const char *body, kube_error_t *e)
{
    kube_error_clear(e);
    return kube_error_from_response(status, body, body ? strlen(body) : 0, e);
}

static void test_not_found(void)
{
    const char *body =
        STATUS_FAILURE
        "\"message\":\"configmaps \\\"x\\\" not found\",\"reason\":\"NotFound\","
        "\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":404}\n";
    kube_error_t e;
    CU_ASSERT_EQUAL(map(404, body, &e), KERR_NOT_FOUND);
    CU_ASSERT(kube_error_is_not_found(&e));
    CU_ASSERT_FALSE(kube_error_is_conflict(&e));
    CU_ASSERT_FALSE(kube_error_retryable(&e));
    CU_ASSERT_EQUAL(e.http_status, 404);
    CU_ASSERT_STRING_EQUAL(e.reason, "NotFound");
    CU_ASSERT_STRING_EQUAL(e.message, "configmaps \"x\" not found");
    char line[512];
    kube_error_set_request(&e, "GET", "/api/v1/namespaces/default/configmaps/x");
    CU_ASSERT_STRING_EQUAL(kube_error_str(&e, line, sizeof(line)),
                           "GET /api/v1/namespaces/default/configmaps/x: 404 NotFound: "
                           "configmaps \"x\" not found");
}

static void test_already_exists_and_conflict(void)
{
    const char *exists =
        STATUS_FAILURE
        "\"message\":\"configmaps \\\"x\\\" already exists\",\"reason\":\"AlreadyExists\","
        "\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":409}";
    const char *conflict =
        STATUS_FAILURE
        "\"message\":\"Operation cannot be fulfilled on configmaps \\\"x\\\": the object has "
        "been modified; please apply your changes to the latest version and try again\","
        "\"reason\":\"Conflict\",\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},"
        "\"code\":409}";
    kube_error_t e;
    CU_ASSERT_EQUAL(map(409, exists, &e), KERR_ALREADY_EXISTS);
    CU_ASSERT(kube_error_is_already_exists(&e));
    CU_ASSERT_FALSE(kube_error_is_conflict(&e));
    CU_ASSERT_EQUAL(map(409, conflict, &e), KERR_CONFLICT);
    CU_ASSERT(kube_error_is_conflict(&e));
    char line[512];
    kube_error_set_request(&e, "PUT", "/api/v1/namespaces/default/configmaps/x");
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "PUT /api/v1/namespaces/default/configmaps/x: 409 "
                                        "Conflict: Operation cannot be fulfilled on "
                                        "configmaps \"x\""));
    /* 409 with no Status: HTTP status decides (client-go: Conflict). */
    CU_ASSERT_EQUAL(map(409, "", &e), KERR_CONFLICT);
}

static void test_invalid_with_causes(void)
{
    const char *body =
        STATUS_FAILURE
        "\"message\":\"RedisCluster.cache.example.com \\\"c\\\" is invalid: [spec.size: "
        "Invalid value: 11: spec.size in body should be less than or equal to 10, "
        "spec.image: Required value]\",\"reason\":\"Invalid\",\"details\":{\"name\":\"c\","
        "\"group\":\"cache.example.com\",\"kind\":\"RedisCluster\",\"causes\":["
        "{\"reason\":\"FieldValueInvalid\",\"message\":\"Invalid value: 11: spec.size in "
        "body should be less than or equal to 10\",\"field\":\"spec.size\"},"
        "{\"reason\":\"FieldValueRequired\",\"message\":\"Required value\","
        "\"field\":\"spec.image\"}]},\"code\":422}";
    kube_error_t e;
    CU_ASSERT_EQUAL(map(422, body, &e), KERR_INVALID);
    CU_ASSERT(kube_error_is_invalid(&e));
    CU_ASSERT_EQUAL(e.ncauses, 2);
    CU_ASSERT_EQUAL(e.ncauses_total, 2);
    CU_ASSERT_STRING_EQUAL(e.causes[0].field, "spec.size");
    CU_ASSERT_STRING_EQUAL(e.causes[0].reason, "FieldValueInvalid");
    CU_ASSERT_PTR_NOT_NULL(strstr(e.causes[0].message, "less than or equal to 10"));
    CU_ASSERT_STRING_EQUAL(e.causes[1].field, "spec.image");
    CU_ASSERT_STRING_EQUAL(e.causes[1].reason, "FieldValueRequired");
    char line[1024];
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "422 Invalid: RedisCluster.cache.example.com"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "[2 causes]"));

    /* More causes than fit: kept up to the cap, all counted. */
    char big[8192];
    size_t off = (size_t)snprintf(big, sizeof(big),
                                  "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
                                  "\"Invalid\",\"code\":422,\"details\":{\"causes\":[");
    for (int i = 0; i < 20; i++)
        off += (size_t)snprintf(big + off, sizeof(big) - off,
                                "%s{\"field\":\"f%d\",\"reason\":\"r\",\"message\":\"m\"}",
                                i ? "," : "", i);
    snprintf(big + off, sizeof(big) - off, "]}}");
    CU_ASSERT_EQUAL(map(422, big, &e), KERR_INVALID);
    CU_ASSERT_EQUAL(e.ncauses, KUBE_ERROR_MAX_CAUSES);
    CU_ASSERT_EQUAL(e.ncauses_total, 20);
    /* No message: the causes make the line. */
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "422 Invalid: f0: m; f1: m"));
}

static void test_gone(void)
{
    const char *expired =
        STATUS_FAILURE
        "\"message\":\"too old resource version: 1234 (5678)\",\"reason\":\"Expired\","
        "\"code\":410}";
    kube_error_t e;
    CU_ASSERT_EQUAL(map(410, expired, &e), KERR_GONE);
    CU_ASSERT(kube_error_is_gone(&e));
    CU_ASSERT_STRING_EQUAL(e.reason, "Expired");
    /* Older servers: reason Gone, or just the message. */
    const char *gone = STATUS_FAILURE
                       "\"message\":\"The provided continue "
                       "parameter is too old\",\"reason\":\"Gone\",\"code\":410}";
    CU_ASSERT_EQUAL(map(410, gone, &e), KERR_GONE);
    const char *bare = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
                       "\"too old resource version: 1 (2)\",\"code\":500}";
    CU_ASSERT_EQUAL(map(500, bare, &e), KERR_GONE);
    /* The same Status as a parsed object (a watch ERROR event): code from the body. */
    json_object *o = json_tokener_parse(expired);
    kube_error_clear(&e);
    CU_ASSERT_EQUAL(kube_error_from_status(o, 0, &e), KERR_GONE);
    CU_ASSERT_EQUAL(e.http_status, 410);
    json_object_put(o);
}

static void test_forbidden_unauthorized(void)
{
    const char *body =
        STATUS_FAILURE
        "\"message\":\"configmaps is forbidden: User "
        "\\\"system:serviceaccount:default:rdc\\\" cannot list resource \\\"configmaps\\\" "
        "in API group \\\"\\\" in the namespace \\\"kube-system\\\"\",\"reason\":"
        "\"Forbidden\",\"details\":{\"kind\":\"configmaps\"},\"code\":403}";
    kube_error_t e;
    CU_ASSERT_EQUAL(map(403, body, &e), KERR_FORBIDDEN);
    CU_ASSERT(kube_error_is_forbidden(&e));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "cannot list resource"));
    const char *unauth = STATUS_FAILURE
                         "\"message\":\"Unauthorized\",\"reason\":"
                         "\"Unauthorized\",\"code\":401}";
    CU_ASSERT_EQUAL(map(401, unauth, &e), KERR_UNAUTHORIZED);
    CU_ASSERT(kube_error_is_unauthorized(&e));
}

static void test_too_many_requests(void)
{
    const char *body =
        STATUS_FAILURE
        "\"message\":\"Too many requests, please try again later.\",\"reason\":"
        "\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":2},\"code\":429}";
    kube_error_t e;
    CU_ASSERT_EQUAL(map(429, body, &e), KERR_TOO_MANY_REQUESTS);
    CU_ASSERT(kube_error_is_too_many_requests(&e));
    CU_ASSERT_EQUAL(e.retry_after_s, 2);
    CU_ASSERT(kube_error_retryable(&e));
    char line[512];
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "(retry after 2s)"));
    /* A Retry-After header set by the caller wins over the body. */
    kube_error_clear(&e);
    e.retry_after_s = 7;
    kube_error_from_response(429, body, strlen(body), &e);
    CU_ASSERT_EQUAL(e.retry_after_s, 7);

    const char *st = STATUS_FAILURE
                     "\"message\":\"The list operation against pods could not be "
                     "completed at this time, please try again.\",\"reason\":"
                     "\"ServerTimeout\",\"details\":{\"name\":\"list\",\"kind\":\"pods\","
                     "\"retryAfterSeconds\":1},\"code\":500}";
    CU_ASSERT_EQUAL(map(500, st, &e), KERR_SERVER_TIMEOUT);
    CU_ASSERT_EQUAL(e.retry_after_s, 1);
    CU_ASSERT(kube_error_retryable(&e));
    const char *to = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Timeout: "
                     "request did not complete within requested timeout\",\"reason\":"
                     "\"Timeout\",\"code\":504}";
    CU_ASSERT_EQUAL(map(504, to, &e), KERR_TIMEOUT);
    CU_ASSERT(kube_error_is_timeout(&e));
}

static void test_not_a_status(void)
{
    kube_error_t e;
    const char *html = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>"
                       "<center><h1>502 Bad Gateway</h1></center>\r\n</body></html>\r\n";
    CU_ASSERT_EQUAL(map(502, html, &e), KERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(e.http_status, 502);
    CU_ASSERT_STRING_EQUAL(e.reason, "");
    CU_ASSERT_PTR_NULL(strchr(e.message, '\n')); /* one line */
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "<title>502 Bad Gateway</title>"));
    CU_ASSERT(kube_error_retryable(&e));
    char line[512];
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_EQUAL(strncmp(line, "502 Bad Gateway: <html>", 23), 0);

    CU_ASSERT_EQUAL(map(500, NULL, &e), KERR_INTERNAL);
    CU_ASSERT_FALSE(kube_error_retryable(&e));
    CU_ASSERT_EQUAL(map(503, "", &e), KERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(map(404, "404 page not found\n", &e), KERR_NOT_FOUND);
    CU_ASSERT_STRING_EQUAL(e.message, "404 page not found");
    CU_ASSERT_EQUAL(map(418, "{\"kind\":\"Pod\"}", &e), KERR_OTHER);
    CU_ASSERT_EQUAL(map(405, "{not json", &e), KERR_METHOD_NOT_ALLOWED);
    CU_ASSERT_EQUAL(map(200, "{\"kind\":\"Status\",\"status\":\"Failure\"}", &e), KERR_OK);
    CU_ASSERT_EQUAL(map(201, NULL, &e), KERR_OK);
    /* An unknown reason falls back on the HTTP status. */
    CU_ASSERT_EQUAL(map(413, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
                             "\"RequestEntityTooLarge\",\"code\":413}", &e), KERR_OTHER);
    CU_ASSERT_STRING_EQUAL(e.reason, "RequestEntityTooLarge");
    /* A long body is cut at a UTF-8 boundary and marked. */
    char longbody[4096];
    memset(longbody, 'a', sizeof(longbody) - 1);
    longbody[sizeof(longbody) - 1] = '\0';
    CU_ASSERT_EQUAL(map(500, longbody, &e), KERR_INTERNAL);
    CU_ASSERT(strlen(e.message) < 300);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "..."));
}

static void test_message_capped_utf8(void)
{
    char body[8192];
    size_t off = (size_t)snprintf(body, sizeof(body),
                                  "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
                                  "\"BadRequest\",\"code\":400,\"message\":\"");
    for (int i = 0; i < 1500; i++) /* "é" is two bytes: 3000 bytes of message */
        off += (size_t)snprintf(body + off, sizeof(body) - off, "\xc3\xa9");
    snprintf(body + off, sizeof(body) - off, "\"}");
    kube_error_t e;
    CU_ASSERT_EQUAL(map(400, body, &e), KERR_BAD_REQUEST);
    size_t n = strlen(e.message);
    CU_ASSERT(n < sizeof(e.message));
    CU_ASSERT_EQUAL(n % 2, 0); /* never half a character */
    CU_ASSERT_EQUAL((unsigned char)e.message[n - 1], 0xa9);
}

static void test_transport_and_str(void)
{
    kube_error_t e;
    kube_error_clear(&e);
    kube_error_set_request(&e, "GET", "https://127.0.0.1:6443/api/v1/pods");
    kube_error_set_transport(&e, 7, 0, "Couldn't connect to server",
                             "Failed to connect to 127.0.0.1 port 6443: Connection refused");
    CU_ASSERT_EQUAL(e.code, KERR_TRANSPORT);
    CU_ASSERT_EQUAL(e.curl_code, 7);
    CU_ASSERT(kube_error_retryable(&e));
    char line[512];
    CU_ASSERT_STRING_EQUAL(kube_error_str(&e, line, sizeof(line)),
                           "GET https://127.0.0.1:6443/api/v1/pods: transport: curl 7 "
                           "(Couldn't connect to server): Failed to connect to 127.0.0.1 "
                           "port 6443: Connection refused");
    kube_error_set_transport(&e, 28, 1, "Timeout was reached", "");
    CU_ASSERT(kube_error_is_timeout(&e));
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, ": timeout: curl 28 (Timeout was reached)"));
    /* A tiny buffer is still terminated. */
    char small[8];
    kube_error_str(&e, small, sizeof(small));
    CU_ASSERT_EQUAL(strlen(small), 7);
    kube_error_clear(&e);
    CU_ASSERT_STRING_EQUAL(kube_error_str(&e, line, sizeof(line)), "ok");
    CU_ASSERT_FALSE(kube_error_retryable(&e));
    CU_ASSERT_FALSE(kube_error_is_not_found(NULL));
    kube_error_set(&e, KERR_DECODE, "decode response: %s", "unexpected end");
    CU_ASSERT_STRING_EQUAL(kube_error_str(&e, line, sizeof(line)),
                           "Decode: decode response: unexpected end");
    CU_ASSERT_STRING_EQUAL(kube_error_code_name(KERR_GONE), "Gone");
    CU_ASSERT_EQUAL(kube_error_code_for_http(204), KERR_OK);
    CU_ASSERT_EQUAL(kube_error_code_for_http(599), KERR_INTERNAL);
}

static CU_TestInfo kube_error_tests[] = {
    {"404 NotFound", test_not_found},
    {"409 AlreadyExists and Conflict", test_already_exists_and_conflict},
    {"422 Invalid with causes", test_invalid_with_causes},
    {"410 Expired/Gone", test_gone},
    {"403 Forbidden, 401", test_forbidden_unauthorized},
    {"429, ServerTimeout, Timeout", test_too_many_requests},
    {"non-Status bodies", test_not_a_status},
    {"message capped at UTF-8 boundary", test_message_capped_utf8},
    {"transport errors and kube_error_str", test_transport_and_str},
    CU_TEST_INFO_NULL,
};

#define CU_ONE_SUITE "kube_error", NULL, NULL, kube_error_tests
#include "cu_main.h"
