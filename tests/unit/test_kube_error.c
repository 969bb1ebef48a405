/* Unit tests for kube_error: Status bodies as the API server sends them. */
#include "cu_table.h"
#include "kube_error.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

/* How every Failure Status the API server sends begins. */
#define STATUS_FAILURE "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","

static kube_error_code_t map(int status, const char *body, kube_error_t *e)
{
    kube_error_clear(e);
    return kube_error_from_response(status, body, body ? strlen(body) : 0, e);
}

/* ---- Status bodies, each mapped to its code ------------------------------------------ */

#define NOT_FOUND                                                                          \
    STATUS_FAILURE                                                                         \
    "\"message\":\"configmaps \\\"x\\\" not found\",\"reason\":\"NotFound\","              \
    "\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":404}\n"
#define ALREADY_EXISTS                                                                     \
    STATUS_FAILURE                                                                         \
    "\"message\":\"configmaps \\\"x\\\" already exists\",\"reason\":\"AlreadyExists\","    \
    "\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":409}"
#define CONFLICT                                                                           \
    STATUS_FAILURE                                                                         \
    "\"message\":\"Operation cannot be fulfilled on configmaps \\\"x\\\": the object has " \
    "been modified; please apply your changes to the latest version and try again\","      \
    "\"reason\":\"Conflict\",\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},"        \
    "\"code\":409}"
#define INVALID                                                                            \
    STATUS_FAILURE                                                                         \
    "\"message\":\"RedisCluster.cache.example.com \\\"c\\\" is invalid: [spec.size: "      \
    "Invalid value: 11: spec.size in body should be less than or equal to 10, "            \
    "spec.image: Required value]\",\"reason\":\"Invalid\",\"details\":{\"name\":\"c\","    \
    "\"group\":\"cache.example.com\",\"kind\":\"RedisCluster\",\"causes\":["               \
    "{\"reason\":\"FieldValueInvalid\",\"message\":\"Invalid value: 11: spec.size in "     \
    "body should be less than or equal to 10\",\"field\":\"spec.size\"},"                  \
    "{\"reason\":\"FieldValueRequired\",\"message\":\"Required value\","                   \
    "\"field\":\"spec.image\"}]},\"code\":422}"
#define EXPIRED                                                                            \
    STATUS_FAILURE                                                                         \
    "\"message\":\"too old resource version: 1234 (5678)\",\"reason\":\"Expired\","        \
    "\"code\":410}"
#define FORBIDDEN                                                                          \
    STATUS_FAILURE                                                                         \
    "\"message\":\"configmaps is forbidden: User "                                         \
    "\\\"system:serviceaccount:default:rdc\\\" cannot list resource \\\"configmaps\\\" "   \
    "in API group \\\"\\\" in the namespace \\\"kube-system\\\"\",\"reason\":"             \
    "\"Forbidden\",\"details\":{\"kind\":\"configmaps\"},\"code\":403}"
#define TOO_MANY_REQUESTS                                                                  \
    STATUS_FAILURE                                                                         \
    "\"message\":\"Too many requests, please try again later.\",\"reason\":"               \
    "\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":2},\"code\":429}"
#define SERVER_TIMEOUT                                                                     \
    STATUS_FAILURE                                                                         \
    "\"message\":\"The list operation against pods could not be "                          \
    "completed at this time, please try again.\",\"reason\":"                              \
    "\"ServerTimeout\",\"details\":{\"name\":\"list\",\"kind\":\"pods\","                  \
    "\"retryAfterSeconds\":1},\"code\":500}"
#define BAD_GATEWAY_HTML                                                                   \
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>"                      \
    "<center><h1>502 Bad Gateway</h1></center>\r\n</body></html>\r\n"

typedef int (*is_fn)(const kube_error_t *);

/* HTTP status and body -> code, and the kube_error_is_* that holds (NULL: none checked). */
static const struct {
    int http;
    const char *body;
    kube_error_code_t want;
    is_fn is;
} mapped[] = {
    {404, NOT_FOUND, KERR_NOT_FOUND, kube_error_is_not_found},
    {409, ALREADY_EXISTS, KERR_ALREADY_EXISTS, kube_error_is_already_exists},
    {409, CONFLICT, KERR_CONFLICT, kube_error_is_conflict},
    /* 409 with no Status: HTTP status decides (client-go: Conflict). */
    {409, "", KERR_CONFLICT, NULL},
    {422, INVALID, KERR_INVALID, kube_error_is_invalid},
    {410, EXPIRED, KERR_GONE, kube_error_is_gone},
    /* Older servers: reason Gone, or just the message. */
    {410, STATUS_FAILURE "\"message\":\"The provided continue parameter is too old\",\"reason\":\"Gone\",\"code\":410}",
     KERR_GONE, NULL},
    {500, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"too old resource version: 1 (2)\",\"code\":500}",
     KERR_GONE, NULL},
    {403, FORBIDDEN, KERR_FORBIDDEN, kube_error_is_forbidden},
    {401, STATUS_FAILURE "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}",
     KERR_UNAUTHORIZED, kube_error_is_unauthorized},
    {429, TOO_MANY_REQUESTS, KERR_TOO_MANY_REQUESTS, kube_error_is_too_many_requests},
    {500, SERVER_TIMEOUT, KERR_SERVER_TIMEOUT, NULL},
    {504, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within "
          "requested timeout\",\"reason\":\"Timeout\",\"code\":504}",
     KERR_TIMEOUT, kube_error_is_timeout},
    /* Not a Status: the HTTP status decides. */
    {502, BAD_GATEWAY_HTML, KERR_UNAVAILABLE, NULL},
    {500, NULL, KERR_INTERNAL, NULL},
    {503, "", KERR_UNAVAILABLE, NULL},
    {404, "404 page not found\n", KERR_NOT_FOUND, NULL},
    {418, "{\"kind\":\"Pod\"}", KERR_OTHER, NULL},
    {405, "{not json", KERR_METHOD_NOT_ALLOWED, NULL},
    {200, "{\"kind\":\"Status\",\"status\":\"Failure\"}", KERR_OK, NULL},
    {201, NULL, KERR_OK, NULL},
    /* An unknown reason falls back on the HTTP status. */
    {413, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"RequestEntityTooLarge\",\"code\":413}", KERR_OTHER,
     NULL},
};

static void test_mapped_codes(void)
{
    for (size_t i = 0; i < sizeof(mapped) / sizeof(mapped[0]); i++) {
        kube_error_t e;
        kube_error_code_t have = map(mapped[i].http, mapped[i].body, &e);
        CU_ASSERT_EQUAL(have, mapped[i].want);
        if (have != mapped[i].want)
            fprintf(stderr, "\n  row %zu (%d): have %s, want %s\n", i, mapped[i].http, kube_error_code_name(have),
                    kube_error_code_name(mapped[i].want));
        if (mapped[i].is)
            CU_ASSERT(mapped[i].is(&e));
    }
}

static void test_not_found(void)
{
    kube_error_t e;
    map(404, NOT_FOUND, &e);
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
    kube_error_t e;
    map(409, ALREADY_EXISTS, &e);
    CU_ASSERT_FALSE(kube_error_is_conflict(&e));
    map(409, CONFLICT, &e);
    char line[512];
    kube_error_set_request(&e, "PUT", "/api/v1/namespaces/default/configmaps/x");
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "PUT /api/v1/namespaces/default/configmaps/x: 409 "
                                        "Conflict: Operation cannot be fulfilled on "
                                        "configmaps \"x\""));
}

static void test_invalid_with_causes(void)
{
    kube_error_t e;
    map(422, INVALID, &e);
    CU_ASSERT_EQUAL(e.ncauses, 2);
    CU_ASSERT_EQUAL(e.ncauses_total, 2);
    CU_ASSERT_STRING_EQUAL(e.causes[0].field, "spec.size");
    CU_ASSERT_STRING_EQUAL(e.causes[0].reason, "FieldValueInvalid");
    CU_ASSERT_PTR_NOT_NULL(strstr(e.causes[0].message, "less than or equal to 10"));
    CU_ASSERT_STRING_EQUAL(e.causes[1].field, "spec.image");
    CU_ASSERT_STRING_EQUAL(e.causes[1].reason, "FieldValueRequired");
    char line[1024];
    kube_error_str(&e, line, sizeof(line));
    ASSERT_TEXT_HAS(line, "422 Invalid: RedisCluster.cache.example.com", "[2 causes]");

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
    kube_error_t e;
    map(410, EXPIRED, &e);
    CU_ASSERT_STRING_EQUAL(e.reason, "Expired");
    /* The same Status as a parsed object (a watch ERROR event): code from the body. */
    json_object *o = json_tokener_parse(EXPIRED);
    kube_error_clear(&e);
    CU_ASSERT_EQUAL(kube_error_from_status(o, 0, &e), KERR_GONE);
    CU_ASSERT_EQUAL(e.http_status, 410);
    json_object_put(o);
}

static void test_forbidden(void)
{
    kube_error_t e;
    map(403, FORBIDDEN, &e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "cannot list resource"));
}

static void test_too_many_requests(void)
{
    kube_error_t e;
    map(429, TOO_MANY_REQUESTS, &e);
    CU_ASSERT_EQUAL(e.retry_after_s, 2);
    CU_ASSERT(kube_error_retryable(&e));
    char line[512];
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "(retry after 2s)"));
    /* A Retry-After header set by the caller wins over the body. */
    kube_error_clear(&e);
    e.retry_after_s = 7;
    kube_error_from_response(429, TOO_MANY_REQUESTS, strlen(TOO_MANY_REQUESTS), &e);
    CU_ASSERT_EQUAL(e.retry_after_s, 7);

    map(500, SERVER_TIMEOUT, &e);
    CU_ASSERT_EQUAL(e.retry_after_s, 1);
    CU_ASSERT(kube_error_retryable(&e));
}

static void test_not_a_status(void)
{
    kube_error_t e;
    map(502, BAD_GATEWAY_HTML, &e);
    CU_ASSERT_EQUAL(e.http_status, 502);
    CU_ASSERT_STRING_EQUAL(e.reason, "");
    CU_ASSERT_PTR_NULL(strchr(e.message, '\n')); /* one line */
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "<title>502 Bad Gateway</title>"));
    CU_ASSERT(kube_error_retryable(&e));
    char line[512];
    kube_error_str(&e, line, sizeof(line));
    CU_ASSERT_EQUAL(strncmp(line, "502 Bad Gateway: <html>", 23), 0);

    map(500, NULL, &e);
    CU_ASSERT_FALSE(kube_error_retryable(&e));
    map(404, "404 page not found\n", &e);
    CU_ASSERT_STRING_EQUAL(e.message, "404 page not found");
    map(413, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"RequestEntityTooLarge\",\"code\":413}", &e);
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

static const cu_entry_t tests[] = {
    CU_SUITE("kube_error"),
    {"Status bodies and HTTP statuses to codes (table)", test_mapped_codes},
    {"404 NotFound", test_not_found},
    {"409 AlreadyExists and Conflict", test_already_exists_and_conflict},
    {"422 Invalid with causes", test_invalid_with_causes},
    {"410 Expired/Gone", test_gone},
    {"403 Forbidden", test_forbidden},
    {"429, ServerTimeout, Timeout", test_too_many_requests},
    {"non-Status bodies", test_not_a_status},
    {"message capped at UTF-8 boundary", test_message_capped_utf8},
    {"transport errors and kube_error_str", test_transport_and_str},
};

CU_MAIN(tests)
