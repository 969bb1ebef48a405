/* Unit tests of the admission webhooks: the pure core (admission_review and the shared
 * rules in rdc_spec), agreement with workerd's plan on what is valid, the certificate
 * watcher, and the HTTPS server itself on 127.0.0.1 (served from a thread of this
 * process, with certificates made here by OpenSSL).
 */
#include "admission.h"
#include "buf.h"
#include "crd_file.h"
#include "cu_table.h"
#include "jsonx.h"
#include "log.h"
#include "metrics.h"
#include "plan.h"
#include "rdc_spec.h"
#include "text_case.h"
#include "tls_client.h"
#include "webhook_fixture.h"
#include "webhook_server.h"
#include "webhook_tls.h"
#include "cert_files.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define VALID_SPEC                                                                                       \
    "{\"size\":3,\"image\":\"redis\",\"version\":\"7.2\","                                             \
    "\"config\":{\"maxmemory\":\"256mb\",\"maxmemoryPolicy\":\"allkeys-lru\"},"                        \
    "\"storage\":{\"size\":\"1Gi\",\"storageClass\":\"standard\"}}"

/* ---- Helpers ---------------------------------------------------------------------------- */

/* A RedisCluster named name with spec (JSON text; NULL = no spec) and extra metadata
 * members (JSON text without braces, or NULL). */
static void rc_json(buf_t *b, const char *name, const char *spec, const char *extra_meta)
{
    buf_printf(b, "{\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"RedisCluster\","
                  "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"0c1e-uid\"%s%s}",
               name, extra_meta ? "," : "", extra_meta ? extra_meta : "");
    if (spec)
        buf_printf(b, ",\"spec\":%s", spec);
    buf_puts(b, "}");
}

/* An AdmissionReview request text for a RedisCluster. old_spec NULL: no oldObject. */
static char *review_text(const char *op, const char *name, const char *spec, const char *old_spec,
                         const char *extra_request)
{
    buf_t b;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
               "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
               "\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1alpha1\",\"kind\":\"RedisCluster\"},"
               "\"resource\":{\"group\":\"cache.example.com\",\"version\":\"v1alpha1\",\"resource\":\"redisclusters\"},"
               "\"operation\":\"%s\",\"name\":\"%s\",\"namespace\":\"default\",\"object\":",
               op, name);
    rc_json(&b, name, spec, NULL);
    if (old_spec) {
        buf_puts(&b, ",\"oldObject\":");
        rc_json(&b, name, old_spec, NULL);
    }
    if (extra_request)
        buf_printf(&b, ",%s", extra_request);
    buf_puts(&b, "}}");
    return buf_detach(&b);
}

typedef struct {
    int rc;
    json_object *root;     /* the parsed response */
    json_object *response; /* root.response */
    admission_outcome_t o;
} answer_t;

static answer_t ask(const char *body, size_t len, admission_kind_t kind)
{
    answer_t a;
    memset(&a, 0, sizeof(a));
    char *out = NULL;
    a.rc = admission_review(body, len, kind, &out, &a.o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    a.root = json_tokener_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a.root);
    CU_ASSERT_FATAL(json_object_object_get_ex(a.root, "response", &a.response));
    free(out);
    return a;
}

static answer_t ask_str(const char *body, admission_kind_t kind)
{
    return ask(body, strlen(body), kind);
}

static void answer_free(answer_t *a)
{
    json_object_put(a->root);
    a->root = a->response = NULL;
}

static int allowed(const answer_t *a)
{
    json_object *v = jsonx_get(a->response, "allowed");
    return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static const char *message(const answer_t *a)
{
    return jsonx_str(jsonx_get(a->response, "status"), "message");
}

static int status_code(const answer_t *a)
{
    json_object *v = jsonx_get(jsonx_get(a->response, "status"), "code");
    return v ? json_object_get_int(v) : 0;
}

/* Validate a CREATE of spec; returns the answer (caller frees). */
static answer_t validate_create(const char *name, const char *spec)
{
    char *body = review_text("CREATE", name, spec, NULL, NULL);
    answer_t a = ask_str(body, ADMISSION_VALIDATE);
    free(body);
    return a;
}

static answer_t validate_update(const char *old_spec, const char *new_spec)
{
    char *body = review_text("UPDATE", "cache", new_spec, old_spec, NULL);
    answer_t a = ask_str(body, ADMISSION_VALIDATE);
    free(body);
    return a;
}

/* Assert that answer a allows; frees it. */
static void expect_allowed(answer_t a)
{
    CU_ASSERT_TRUE(allowed(&a));
    answer_free(&a);
}

/* Assert that answer a refuses, with HTTP status code (0: any) and a message that
 * contains has; frees it. */
static void expect_refused(answer_t a, int code, const char *has)
{
    CU_ASSERT_FALSE(allowed(&a));
    if (code)
        CU_ASSERT_EQUAL(status_code(&a), code);
    CU_ASSERT(text_contains(message(&a), has));
    answer_free(&a);
}

/* Decode the base64 JSON Patch of a mutating answer; NULL when there is none. */
static json_object *patch_of(const answer_t *a)
{
    const char *p64 = jsonx_str(a->response, "patch");
    if (!p64)
        return NULL;
    CU_ASSERT_STRING_EQUAL(jsonx_str(a->response, "patchType"), "JSONPatch");
    size_t n = strlen(p64);
    unsigned char *raw = malloc(n + 1);
    int len = EVP_DecodeBlock(raw, (const unsigned char *)p64, (int)n);
    CU_ASSERT_FATAL(len >= 0);
    while (len > 0 && raw[len - 1] == '\0') /* EVP_DecodeBlock counts the padding */
        len--;
    raw[len] = '\0';
    json_object *ops = json_tokener_parse((char *)raw);
    free(raw);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
    CU_ASSERT_FATAL(json_object_is_type(ops, json_type_array));
    return ops;
}

/* The value of the op on path in ops ("add" only), or NULL. */
static json_object *op_value(json_object *ops, const char *path)
{
    for (size_t i = 0; i < json_object_array_length(ops); i++) {
        json_object *op = json_object_array_get_idx(ops, i);
        if (!strcmp(jsonx_str(op, "path"), path)) {
            CU_ASSERT_STRING_EQUAL(jsonx_str(op, "op"), "add");
            return jsonx_get(op, "value");
        }
    }
    return NULL;
}

static answer_t mutate_create(const char *spec)
{
    char *body = review_text("CREATE", "cache", spec, NULL, NULL);
    answer_t a = ask_str(body, ADMISSION_MUTATE);
    free(body);
    return a;
}

/* ---- Validating: create ------------------------------------------------------------------- */

static void test_valid_create_is_allowed(void)
{
    answer_t a = validate_create("cache", VALID_SPEC);
    CU_ASSERT_EQUAL(a.rc, 0);
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.root, "apiVersion"), "admission.k8s.io/v1");
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.root, "kind"), "AdmissionReview");
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.response, "uid"), "705ab4f5-6393-11e8-b7cc-42010a800002");
    CU_ASSERT(allowed(&a));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "status"));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "patch"));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "warnings"));
    CU_ASSERT(a.o.allowed);
    CU_ASSERT_EQUAL(a.o.code, 200);
    CU_ASSERT_STRING_EQUAL(a.o.operation, "CREATE");
    CU_ASSERT_STRING_EQUAL(a.o.ns, "default");
    CU_ASSERT_STRING_EQUAL(a.o.name, "cache");
    answer_free(&a);

    /* The smallest valid spec, and images with registries, ports, tags and digests. */
    static const char *const ok[] = {
        "{\"size\":1,\"image\":\"redis\"}",
        "{\"size\":10,\"image\":\"registry.example.com:5000/team/redis\",\"version\":\"7.2.4-alpine\"}",
        "{\"size\":2,\"image\":\"redis@sha256:0123456789abcdef\"}",
        "{\"size\":2,\"image\":\"redis\",\"version\":\"\",\"config\":{},\"storage\":{}}",
        "{\"size\":2,\"image\":\"redis\",\"version\":null,\"config\":null,\"storage\":null}",
        "{\"size\":2,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1GB\",\"maxmemoryPolicy\":\"noeviction\"}}",
        "{\"size\":2,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1048576\",\"maxmemoryPolicy\":\"volatile-lru\"}}",
        "{\"size\":2,\"image\":\"redis\",\"storage\":{\"size\":\"512Mi\",\"storageClass\":\"fast.ssd-1\"}}",
        "{\"size\":2,\"image\":\"redis\",\"storage\":{\"size\":\"4194304Ti\"}}",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        a = validate_create("cache", ok[i]);
        CU_ASSERT(allowed(&a));
        if (!allowed(&a))
            fprintf(stderr, "\nrefused %s: %s\n", ok[i], message(&a));
        answer_free(&a);
    }
}

static const text_case_t invalid_cases[] = {
    {"{\"size\":0,\"image\":\"redis\"}", "spec.size: Invalid value: 0: must be between 1 and 10"},
    {"{\"size\":11,\"image\":\"redis\"}", "spec.size: Invalid value: 11: must be between 1 and 10"},
    {"{\"size\":-3,\"image\":\"redis\"}", "spec.size: Invalid value: -3: must be between 1 and 10"},
    {"{\"size\":\"3\",\"image\":\"redis\"}", "spec.size: Invalid value: \"3\": must be an integer"},
    {"{\"size\":2.5,\"image\":\"redis\"}", "spec.size: Invalid value: 2.5: must be an integer"},
    {"{\"image\":\"redis\"}", "spec.size: Required value"},
    {"{\"size\":null,\"image\":\"redis\"}", "spec.size: Required value"},
    {"{\"size\":3}", "spec.image: Required value"},
    {"{\"size\":3,\"image\":\"\"}", "spec.image: Required value: must not be empty"},
    {"{\"size\":3,\"image\":5}", "spec.image: Invalid value: 5: must be a string"},
    {"{\"size\":3,\"image\":\"re dis\"}", "spec.image: Invalid value: \"re dis\": must be an image reference"},
    {"{\"size\":3,\"image\":\"redis\\nmaxmemory 1\"}", "spec.image: Invalid value: \"redis\\x0amaxmemory 1\""},
    {"{\"size\":3,\"image\":\"re\\u0000dis\"}",
     "spec.image: Invalid value: \"re\\x00dis\": must be a string without NUL bytes"},
    {"{\"size\":3,\"image\":\"r\\u00e9dis\"}", "spec.image: Invalid value: \"r\xc3\xa9"
                                               "dis\": must be an image reference"},
    {"{\"size\":3,\"image\":\"redis\",\"version\":\"7 2\"}",
     "spec.version: Invalid value: \"7 2\": must be an image tag"},
    {"{\"size\":3,\"image\":\"redis\",\"version\":\"-7\"}",
     "spec.version: Invalid value: \"-7\": must be an image tag"},
    {"{\"size\":3,\"image\":\"redis\",\"version\":7}", "spec.version: Invalid value: 7: must be a string"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"10GB\"}}",
     "spec.storage.size: Invalid value: \"10GB\": must match ^[0-9]+(Gi|Mi|Ti)$"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"1.5Gi\"}}",
     "spec.storage.size: Invalid value: \"1.5Gi\": must match"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"0Gi\"}}",
     "spec.storage.size: Invalid value: \"0Gi\": must be greater than zero"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":10}}",
     "spec.storage.size: Invalid value: 10: must be a string"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"99999999999999999999Ti\"}}",
     "spec.storage.size: Invalid value: \"99999999999999999999Ti\": must be at most 2^62 bytes"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"4194305Ti\"}}", "must be at most 2^62 bytes"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"storageClass\":\"Fast_SSD\"}}",
     "spec.storage.storageClass: Invalid value: \"Fast_SSD\": must be the name of a StorageClass"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"storageClass\":\"-fast\"}}",
     "spec.storage.storageClass: Invalid value"},
    {"{\"size\":3,\"image\":\"redis\",\"storage\":[]}", "spec.storage: Invalid value: []: must be an object"},
    {"{\"size\":3,\"image\":\"redis\",\"config\":\"maxmemory 1\"}",
     "spec.config: Invalid value: \"maxmemory 1\": must be an object"},
    {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemory\":\"lots\"}}",
     "spec.config.maxmemory: Invalid value: \"lots\": must be a memory size"},
    {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1tb\"}}",
     "spec.config.maxmemory: Invalid value: \"1tb\""},
    {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1gb\\nslaveof evil 6379\"}}",
     "spec.config.maxmemory: Invalid value"},
    {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemory\":256}}",
     "spec.config.maxmemory: Invalid value: 256: must be a string"},
    {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemoryPolicy\":\"allkeys-lfu\"}}",
     "spec.config.maxmemoryPolicy: Unsupported value: \"allkeys-lfu\": supported values: \"allkeys-lru\", "
     "\"noeviction\", \"volatile-lru\""},
    {"\"size=3\"", "spec: Invalid value: \"size=3\": must be an object"},
    {"[1,2]", "spec: Invalid value: [1,2]: must be an object"},
    {"null", "spec: Required value"},
    {NULL, "spec: Required value"},
};

static void test_invalid_fields_named_in_message(void)
{
    for (size_t i = 0; i < sizeof(invalid_cases) / sizeof(invalid_cases[0]); i++) {
        answer_t a = validate_create("cache", invalid_cases[i].in);
        CU_ASSERT_EQUAL(a.rc, 0);
        CU_ASSERT_FALSE(allowed(&a));
        CU_ASSERT_EQUAL(status_code(&a), 422);
        CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(a.response, "status"), "reason"), "Invalid");
        CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(a.response, "status"), "status"), "Failure");
        CU_ASSERT(text_contains(message(&a), "RedisCluster.cache.example.com \"cache\" is invalid: "));
        CU_ASSERT(text_contains(message(&a), invalid_cases[i].want));
        if (!text_contains(message(&a), invalid_cases[i].want))
            fprintf(stderr, "\nspec %s:\n  want %s\n  have %s\n",
                    invalid_cases[i].in ? invalid_cases[i].in : "(none)", invalid_cases[i].want, message(&a));
        CU_ASSERT_FALSE(a.o.allowed);
        CU_ASSERT_EQUAL(a.o.code, 422);
        CU_ASSERT(text_contains(a.o.message, "is invalid"));
        answer_free(&a);
    }
}

/* spec.config.extra (issue 20): a directive the operator owns is refused by the webhook
 * with its name, 403 Forbidden (only Forbidden errors); an allowed one passes. */
static void test_owned_directive_refused_by_name(void)
{
    expect_refused(validate_create("cache", "{\"size\":1,\"image\":\"redis\",\"config\":{\"extra\":{\"hz\":\"20\","
                                            "\"rename-command\":\"CONFIG \\\"\\\"\"}}}"),
                   403,
                   "RedisCluster.cache.example.com \"cache\" is forbidden: spec.config.extra.rename-command: "
                   "Forbidden: directive \"rename-command\" is owned by the operator");
    expect_allowed(validate_create("cache", "{\"size\":1,\"image\":\"redis\",\"config\":{\"extra\":{\"hz\":\"20\"}}}"));
}

static void test_every_problem_listed(void)
{
    answer_t a =
        validate_create("cache", "{\"size\":0,\"image\":\"\",\"version\":\"a b\",\"config\":{\"maxmemory\":\"x\","
                                 "\"maxmemoryPolicy\":\"y\"},\"storage\":{\"size\":\"1G\",\"storageClass\":\"A\"}}");
    const char *m = message(&a);
    ASSERT_TEXT_HAS(m, "is invalid: [spec.size: Invalid value: 0", ", spec.image: Required value",
                    ", spec.version: Invalid value", ", spec.config.maxmemory: Invalid value",
                    ", spec.config.maxmemoryPolicy: Unsupported value", ", spec.storage.size: Invalid value",
                    ", spec.storage.storageClass: Invalid value");
    CU_ASSERT(m && m[strlen(m) - 1] == ']');
    answer_free(&a);

    /* Values of control bytes quote four times as long: every field wrong that way still
     * fits, and with the update rules broken too it is more than the message holds: the
     * list keeps whole texts, counts the rest and still ends. */
    buf_t name, v, spec;
    buf_init(&name, 0);
    buf_init(&v, 0);
    buf_init(&spec, 0);
    for (int i = 0; i < 253; i++)
        buf_puts(&name, "\\u0001");
    for (int i = 0; i < 64; i++)
        buf_puts(&v, "\\u0001");
    buf_printf(&spec, "{\"size\":\"%s\",\"image\":\"%s\",\"version\":\"%s\",\"config\":{\"maxmemory\":\"%s\","
                      "\"maxmemoryPolicy\":\"%s\"},\"storage\":{\"size\":\"%s\",\"storageClass\":\"%s\"}}",
               buf_str(&v), buf_str(&v), buf_str(&v), buf_str(&v), buf_str(&v), buf_str(&v), buf_str(&v));
    a = validate_create(buf_str(&name), buf_str(&spec));
    m = message(&a);
    CU_ASSERT_FALSE(allowed(&a));
    ASSERT_TEXT_HAS(m, "is invalid: [metadata.name: Invalid value: \"\\x01",
                    ", spec.storage.storageClass: Invalid value: \"\\x01");
    CU_ASSERT(m && strlen(m) < 4096 && m[strlen(m) - 1] == ']');
    answer_free(&a);
    buf_reset(&spec);
    buf_printf(&spec, "{\"size\":1,\"scaleDownPolicy\":\"Forbid\",\"image\":\"%s\",\"version\":\"%s\","
                      "\"config\":{\"maxmemory\":\"%s\","
                      "\"maxmemoryPolicy\":\"%s\"},\"storage\":{\"size\":\"2Gi\",\"storageClass\":\"%s\"}}",
               buf_str(&v), buf_str(&v), buf_str(&v), buf_str(&v), buf_str(&v));
    buf_t old;
    buf_init(&old, 0);
    buf_puts(&old, "{\"size\":5,\"image\":\"redis\",\"storage\":{\"size\":\"1Gi\",\"storageClass\":\"");
    for (int i = 0; i < 64; i++)
        buf_puts(&old, "\\u0002");
    buf_puts(&old, "\"}}");
    char *body = review_text("UPDATE", buf_str(&name), buf_str(&spec), buf_str(&old), NULL);
    a = ask_str(body, ADMISSION_VALIDATE);
    free(body);
    buf_free(&old);
    m = message(&a);
    CU_ASSERT_FALSE(allowed(&a));
    CU_ASSERT_EQUAL(a.o.code, 422);
    ASSERT_TEXT_HAS(m, "is invalid: [metadata.name: Invalid value: \"\\x01",
                    ", spec.size: Forbidden: may not decrease from 5 to 1", ", and 1 more]");
    CU_ASSERT(m && strlen(m) < 4096 && m[strlen(m) - 1] == ']');
    answer_free(&a);
    buf_free(&name);
    buf_free(&v);
    buf_free(&spec);
}

static void test_invalid_names(void)
{
    static const char *const bad[] = {
        "Cache", "1cache", "cache-", "ca.che", "a234567890123456789012345678901234567890123456789012x" /* 53 */,
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        answer_t a = validate_create(bad[i], VALID_SPEC);
        CU_ASSERT_FALSE(allowed(&a));
        ASSERT_TEXT_HAS(message(&a), "metadata.name: Invalid value: \"",
                        "must be a DNS-1035 label of at most 52 characters");
        answer_free(&a);
    }
    expect_allowed(validate_create("a23456789012345678901234567890123456789012345678901x" /* 52 */, VALID_SPEC));
    /* A name that is missing altogether. */
    const char *body =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
        "\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1alpha1\",\"kind\":\"RedisCluster\"},"
        "\"operation\":\"CREATE\",\"object\":{\"metadata\":{\"generateName\":\"c-\"},\"spec\":" VALID_SPEC "}}}";
    expect_refused(ask_str(body, ADMISSION_VALIDATE), 0,
                   "RedisCluster.cache.example.com \"\" is invalid: metadata.name: Required value");
}

static void test_warning_for_version_with_tagged_image(void)
{
    answer_t a = validate_create("cache", "{\"size\":1,\"image\":\"redis:7.0\",\"version\":\"7.2\"}");
    CU_ASSERT(allowed(&a));
    json_object *w = jsonx_get(a.response, "warnings");
    CU_ASSERT_FATAL(w && json_object_array_length(w) == 1);
    CU_ASSERT(text_contains(json_object_get_string(json_object_array_get_idx(w, 0)),
                            "spec.version \"7.2\" has no effect: spec.image \"redis:7.0\" already names a tag "
                            "or digest"));
    answer_free(&a);
    a = validate_create("cache", "{\"size\":1,\"image\":\"host:5000/redis\",\"version\":\"7.2\"}");
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "warnings")); /* a registry port is not a tag */
    answer_free(&a);
}

/* ---- Validating: update ------------------------------------------------------------------- */

/* spec.scaleDownPolicy Forbid keeps the design document's rule (a decrease refused);
 * without it (Allow, the default) a decrease is a scale-in (test_scale.c). */
static void test_update_size_decrease_refused(void)
{
    answer_t a = validate_update("{\"size\":5,\"image\":\"redis\",\"scaleDownPolicy\":\"Forbid\"}",
                                 "{\"size\":3,\"image\":\"redis\",\"scaleDownPolicy\":\"Forbid\"}");
    CU_ASSERT_EQUAL(a.rc, 0);
    CU_ASSERT_FALSE(allowed(&a));
    CU_ASSERT_EQUAL(status_code(&a), 403);
    CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(a.response, "status"), "reason"), "Forbidden");
    CU_ASSERT_STRING_EQUAL(message(&a), "RedisCluster.cache.example.com \"cache\" is forbidden: spec.size: Forbidden: "
                                        "may not decrease from 5 to 3 (spec.scaleDownPolicy is Forbid: scaling this "
                                        "RedisCluster down is not allowed)");
    answer_free(&a);
    expect_allowed(validate_update("{\"size\":5,\"image\":\"redis\"}", "{\"size\":3,\"image\":\"redis\"}"));
    expect_refused(validate_update("{\"size\":5,\"image\":\"redis\"}",
                                   "{\"size\":3,\"image\":\"redis\",\"scaleDownPolicy\":\"Bad\"}"),
                   0, "spec.scaleDownPolicy: Unsupported value: \"Bad\": supported values: \"Allow\", \"Forbid\"");
    expect_allowed(validate_update("{\"size\":3,\"image\":\"redis\"}", "{\"size\":4,\"image\":\"redis\"}"));
    expect_allowed(validate_update("{\"size\":3,\"image\":\"redis\"}", "{\"size\":3,\"image\":\"redis:7.2\"}"));

    /* A decrease to an invalid size: both problems, and Invalid wins the code. */
    a = validate_update("{\"size\":5,\"image\":\"redis\"}",
                        "{\"size\":0,\"image\":\"redis\",\"scaleDownPolicy\":\"Forbid\"}");
    CU_ASSERT_FALSE(allowed(&a));
    CU_ASSERT_EQUAL(status_code(&a), 422);
    ASSERT_TEXT_HAS(message(&a), "spec.size: Invalid value: 0", "spec.size: Forbidden: may not decrease from 5 to 0");
    answer_free(&a);
}

static void test_update_storage_immutable(void)
{
    static const struct {
        const char *old_storage, *new_storage, *expect; /* expect NULL = allowed */
    } cases[] = {
        /* it may grow (the claims are resized: test_volume.c), never shrink */
        {"{\"size\":\"1Gi\"}", "{\"size\":\"2Gi\"}", NULL},
        {"{\"size\":\"2Gi\"}", "{\"size\":\"1Gi\"}",
         "spec.storage.size: Forbidden: may not shrink (a PersistentVolumeClaim can only grow; it sizes the "
         "StatefulSet's volumeClaimTemplates): was \"2Gi\", now \"1Gi\""},
        {"{\"size\":\"1Gi\"}", "{\"size\":\"1024Mi\"}", NULL},
        {"null", "{\"size\":\"1Gi\"}", NULL},
        {"{}", "{\"size\":\"1Gi\"}", NULL},
        {"null", "{\"size\":\"2Gi\"}", NULL},
        {"{\"size\":\"2Gi\"}", "null", "was \"2Gi\", now \"1Gi\""},
        {"{\"size\":\"2Gi\"}", "{\"size\":\"2047Mi\"}", "may not shrink"},
        {"{\"storageClass\":\"standard\"}", "{\"storageClass\":\"fast\"}",
         "spec.storage.storageClass: Forbidden: is immutable (it is part of the StatefulSet's volumeClaimTemplates): "
         "was \"standard\", now \"fast\""},
        {"{}", "{\"storageClass\":\"fast\"}", "was unset (the cluster's default), now \"fast\""},
        {"{\"storageClass\":\"fast\"}", "{\"storageClass\":\"\"}", "was \"fast\", now unset (the cluster's default)"},
        {"{\"storageClass\":\"fast\"}", "{\"storageClass\":\"fast\",\"size\":\"1Gi\"}", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char olds[256], news[256];
        snprintf(olds, sizeof(olds), "{\"size\":3,\"image\":\"redis\",\"storage\":%s}", cases[i].old_storage);
        snprintf(news, sizeof(news), "{\"size\":3,\"image\":\"redis\",\"storage\":%s}", cases[i].new_storage);
        answer_t a = validate_update(olds, news);
        if (cases[i].expect) {
            CU_ASSERT_FALSE(allowed(&a));
            CU_ASSERT_EQUAL(status_code(&a), 403);
            CU_ASSERT(text_contains(message(&a), cases[i].expect));
        } else {
            CU_ASSERT(allowed(&a));
        }
        if (cases[i].expect ? !text_contains(message(&a), cases[i].expect) : !allowed(&a))
            fprintf(stderr, "\n%s -> %s: %s\n", olds, news, message(&a));
        answer_free(&a);
    }
}

static void test_update_metadata_only_never_blocked(void)
{
    /* An object that predates the webhook with a spec it would refuse today: the
     * operator's finalizer update (spec unchanged, or only defaulted) goes through. */
    const char *legacy = "{\"size\":3,\"image\":\"re dis\"}";
    expect_allowed(validate_update(legacy, legacy));
    expect_allowed(validate_update(legacy, "{\"size\":3,\"image\":\"re dis\",\"version\":\"7.2\","
                                           "\"storage\":{\"size\":\"1Gi\"},"
                                           "\"config\":{\"maxmemoryPolicy\":\"allkeys-lru\"}}"));
    /* ... but a real change is checked in full. */
    expect_refused(validate_update(legacy, "{\"size\":4,\"image\":\"re dis\"}"), 0,
                   "spec.image: Invalid value: \"re dis\"");

    /* Being deleted: anything goes (the finalizer must come off). */
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
                 "\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1alpha1\",\"kind\":\"RedisCluster\"},"
                 "\"operation\":\"UPDATE\",\"object\":");
    rc_json(&b, "cache", "{\"size\":1,\"image\":\"redis\"}", "\"deletionTimestamp\":\"2024-05-01T12:00:00Z\"");
    buf_puts(&b, ",\"oldObject\":");
    rc_json(&b, "cache", "{\"size\":5,\"image\":\"redis\"}", NULL);
    buf_puts(&b, "}}");
    expect_allowed(ask_str(buf_str(&b), ADMISSION_VALIDATE));
    answer_t a = ask_str(buf_str(&b), ADMISSION_MUTATE);
    CU_ASSERT(allowed(&a));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "patch"));
    answer_free(&a);
    buf_free(&b);
}

static void test_delete_and_connect_allowed(void)
{
    char *body = review_text("DELETE", "cache", NULL, "{\"size\":3,\"image\":\"redis\"}", NULL);
    expect_allowed(ask_str(body, ADMISSION_VALIDATE));
    answer_t a = ask_str(body, ADMISSION_MUTATE);
    CU_ASSERT(allowed(&a));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "patch"));
    answer_free(&a);
    free(body);
}

static void test_scale_subresource(void)
{
    static const char *const fmt =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"s1\","
        "\"kind\":{\"group\":\"autoscaling\",\"version\":\"v1\",\"kind\":\"Scale\"},"
        "\"resource\":{\"group\":\"cache.example.com\",\"version\":\"v1alpha1\",\"resource\":\"redisclusters\"},"
        "\"subResource\":\"scale\",\"operation\":\"UPDATE\",\"name\":\"cache\",\"namespace\":\"default\","
        "\"object\":{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":\"cache\"},\"spec\":"
        "{\"replicas\":%d}},"
        "\"oldObject\":{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":\"cache\"},"
        "\"spec\":{\"replicas\":%d}}}}";
    static const struct {
        int replicas, old_replicas;
        admission_kind_t kind;
        int code;            /* 0: allowed */
        const char *message; /* the refusal's, in part */
    } cases[] = {
        {4, 3, ADMISSION_VALIDATE, 0, NULL},
        /* A decrease: the RedisCluster's spec.scaleDownPolicy decides, which a Scale does not
         * carry; the API server applies the CRD's CEL rule to the object the scale writes
         * (test_scale.c checks the rule). */
        {2, 3, ADMISSION_VALIDATE, 0, NULL},
        {11, 3, ADMISSION_VALIDATE, 422, "spec.replicas: Invalid value: 11: must be between 1 and 10"},
        /* The defaulting webhook leaves the scale subresource alone. */
        {4, 3, ADMISSION_MUTATE, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char body[1024];
        snprintf(body, sizeof(body), fmt, cases[i].replicas, cases[i].old_replicas);
        answer_t a = ask_str(body, cases[i].kind);
        if (!cases[i].code) {
            CU_ASSERT(allowed(&a));
        } else {
            CU_ASSERT_FALSE(allowed(&a));
            CU_ASSERT_EQUAL(status_code(&a), cases[i].code);
            CU_ASSERT(text_contains(message(&a), cases[i].message));
        }
        if (cases[i].kind == ADMISSION_MUTATE)
            CU_ASSERT_PTR_NULL(jsonx_get(a.response, "patch"));
        answer_free(&a);
    }
}

/* ---- Mutating ------------------------------------------------------------------------------ */

static void test_defaults_patch(void)
{
    answer_t a = mutate_create("{\"size\":3,\"image\":\"redis\"}");
    CU_ASSERT_EQUAL(a.rc, 0);
    CU_ASSERT(allowed(&a));
    CU_ASSERT(a.o.patched);
    json_object *ops = patch_of(&a);
    CU_ASSERT_EQUAL(json_object_array_length(ops), 3);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(op_value(ops, "/spec/version")), "7.2");
    json_object *storage = op_value(ops, "/spec/storage"), *config = op_value(ops, "/spec/config");
    CU_ASSERT_STRING_EQUAL(jsonx_str(storage, "size"), "1Gi");
    CU_ASSERT_EQUAL(json_object_object_length(storage), 1);
    CU_ASSERT_STRING_EQUAL(jsonx_str(config, "maxmemoryPolicy"), "allkeys-lru");
    CU_ASSERT_EQUAL(json_object_object_length(config), 1);
    json_object_put(ops);
    answer_free(&a);

    /* Parents present: the members are added into them, nothing else is touched. */
    a = mutate_create(
        "{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1gb\"},\"storage\":{\"storageClass\":\"fast\"}}");
    ops = patch_of(&a);
    CU_ASSERT_EQUAL(json_object_array_length(ops), 3);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(op_value(ops, "/spec/storage/size")), "1Gi");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(op_value(ops, "/spec/config/maxmemoryPolicy")), "allkeys-lru");
    CU_ASSERT_PTR_NULL(op_value(ops, "/spec/storage"));
    json_object_put(ops);
    answer_free(&a);

    /* null and "" count as absent. */
    a = mutate_create("{\"size\":3,\"image\":\"redis\",\"version\":\"\",\"config\":null,\"storage\":{\"size\":null}}");
    ops = patch_of(&a);
    CU_ASSERT_EQUAL(json_object_array_length(ops), 3);
    CU_ASSERT_PTR_NOT_NULL(op_value(ops, "/spec/version"));
    CU_ASSERT_PTR_NOT_NULL(op_value(ops, "/spec/config"));
    CU_ASSERT_PTR_NOT_NULL(op_value(ops, "/spec/storage/size"));
    json_object_put(ops);
    answer_free(&a);

    /* An image that names a tag or digest gets no version. */
    a = mutate_create("{\"size\":3,\"image\":\"redis:7.0\"}");
    ops = patch_of(&a);
    CU_ASSERT_PTR_NULL(op_value(ops, "/spec/version"));
    CU_ASSERT_EQUAL(json_object_array_length(ops), 2);
    json_object_put(ops);
    answer_free(&a);

    /* Everything set: allowed, no patch at all. */
    a = mutate_create(VALID_SPEC);
    CU_ASSERT(allowed(&a));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "patch"));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "patchType"));
    CU_ASSERT_FALSE(a.o.patched);
    answer_free(&a);

    /* Parents of the wrong type are left for validation to report; no spec, no patch. */
    a = mutate_create("{\"size\":3,\"image\":\"redis\",\"version\":\"7.2\",\"config\":\"x\",\"storage\":[1]}");
    CU_ASSERT(allowed(&a));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "patch"));
    answer_free(&a);
    a = mutate_create(NULL);
    CU_ASSERT(allowed(&a));
    CU_ASSERT_PTR_NULL(jsonx_get(a.response, "patch"));
    answer_free(&a);
}

static void test_defaulted_object_is_valid_and_stable(void)
{
    /* rdc_spec_defaulted applies the same ops: the result validates, and defaulting it
     * again changes nothing. */
    buf_t b;
    buf_init(&b, 0);
    rc_json(&b, "cache", "{\"size\":3,\"image\":\"redis\",\"storage\":{}}", NULL);
    json_object *rc = json_tokener_parse(buf_str(&b));
    json_object *spec = rdc_spec_defaulted(rc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(spec);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(jsonx_get(spec, "version")), "7.2");
    CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(spec, "storage"), "size"), "1Gi");
    CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(spec, "config"), "maxmemoryPolicy"), "allkeys-lru");
    json_object_object_add(rc, "spec", spec);
    rdc_field_errors_t *e = rdc_field_errors_new();
    CU_ASSERT_EQUAL(rdc_spec_validate(rc, e), 0);
    json_object *ops = json_object_new_array();
    CU_ASSERT_EQUAL(rdc_spec_default_ops(rc, ops), 0);
    json_object_put(ops);
    rdc_field_errors_destroy(&e);
    CU_ASSERT_PTR_NULL(e);
    json_object_put(rc);
    buf_free(&b);
}

/* ---- Malformed requests ------------------------------------------------------------------- */

static void expect_bad(const char *body, size_t len, const char *expect, const char *uid)
{
    for (int k = 0; k < 2; k++) {
        answer_t a = ask(body, len, k ? ADMISSION_MUTATE : ADMISSION_VALIDATE);
        CU_ASSERT_EQUAL(a.rc, 1);
        CU_ASSERT(a.o.bad_request);
        CU_ASSERT_FALSE(allowed(&a));
        CU_ASSERT_EQUAL(status_code(&a), 400);
        CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(a.response, "status"), "reason"), "BadRequest");
        CU_ASSERT_STRING_EQUAL(jsonx_str(a.root, "kind"), "AdmissionReview");
        CU_ASSERT_STRING_EQUAL(jsonx_str(a.response, "uid"), uid);
        CU_ASSERT(text_contains(message(&a), expect));
        if (!text_contains(message(&a), expect))
            fprintf(stderr, "\nbody %.80s: want %s, have %s\n", body, expect, message(&a));
        answer_free(&a);
    }
}

#define HDR "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
#define RCKIND "\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1alpha1\",\"kind\":\"RedisCluster\"}"

static void test_malformed_reviews(void)
{
    static const struct {
        const char *body, *expect, *uid;
    } cases[] = {
        {"not json", "body: not JSON", ""},
        {"{\"apiVersion\":", "body: not JSON: unexpected end of input", ""},
        {"{} {}", "body: not JSON", ""},
        {"{} x", "body: not JSON", ""},
        {"{\"a\" 1}", "body: not JSON", ""},
        {"[1,2,3]", "body: must be an AdmissionReview object, have an array", ""},
        {"42", "body: must be an AdmissionReview object", ""},
        {"\"AdmissionReview\"", "body: must be an AdmissionReview object, have a string", ""},
        {"{}", "apiVersion: must be admission.k8s.io/v1", ""},
        {"{\"apiVersion\":\"v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"x\"}}", "apiVersion: must be",
         "x"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}", "kind: must be AdmissionReview", ""},
        {HDR "\"response\":{}}", "request: required, an object, have null", ""},
        {HDR "\"request\":[]}", "request: required, an object, have an array", ""},
        {HDR "\"request\":{\"operation\":\"CREATE\"}}", "request.uid: required", ""},
        {HDR "\"request\":{\"uid\":\"\"}}", "request.uid: required", ""},
        {HDR "\"request\":{\"uid\":7}}", "request.uid: required", ""},
        {HDR "\"request\":{\"uid\":\"u1\"," RCKIND "}}", "request.operation: must be CREATE, UPDATE, DELETE or CONNECT",
         "u1"},
        {HDR "\"request\":{\"uid\":\"u1\"," RCKIND ",\"operation\":\"PATCH\"}}", "request.operation", "u1"},
        {HDR "\"request\":{\"uid\":\"u2\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
             "\"operation\":\"CREATE\",\"object\":{}}}",
         "request.kind: this webhook serves cache.example.com RedisCluster", "u2"},
        {HDR "\"request\":{\"uid\":\"u2\",\"operation\":\"CREATE\",\"object\":{}}}", "request.kind", "u2"},
        {HDR "\"request\":{\"uid\":\"u3\"," RCKIND ",\"operation\":\"CREATE\",\"object\":\"cache\"}}",
         "request.object: required for CREATE, an object, have a string", "u3"},
        {HDR "\"request\":{\"uid\":\"u3\"," RCKIND ",\"operation\":\"CREATE\"}}", "request.object: required for CREATE",
         "u3"},
        {HDR "\"request\":{\"uid\":\"u3\"," RCKIND ",\"operation\":\"CREATE\",\"object\":[]}}", "have an array", "u3"},
        {HDR "\"request\":{\"uid\":\"u4\"," RCKIND ",\"operation\":\"UPDATE\",\"object\":{}}}",
         "request.oldObject: required for UPDATE, an object, have null", "u4"},
        {HDR "\"request\":{\"uid\":\"u5\"," RCKIND
             ",\"subResource\":\"scale\",\"operation\":\"UPDATE\",\"object\":{},\"oldObject\":{}}}",
         "request.kind: this webhook serves autoscaling Scale", "u5"},
        {"\xff\xfe{}", "body: not JSON", ""},
        {HDR "\"request\":{\"uid\":\"\xc3\x28\"}}", "body: not JSON", ""},
        {"", "body: empty", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_bad(cases[i].body, strlen(cases[i].body), cases[i].expect, cases[i].uid);

    /* Bytes after a NUL, and a body that is not NUL-terminated at len. */
    static const char nul[] = "{}\0{\"x\":1}";
    expect_bad(nul, sizeof(nul) - 1, "body: not JSON", "");
    char *valid = review_text("CREATE", "cache", VALID_SPEC, NULL, NULL);
    size_t n = strlen(valid);
    valid[n - 1] = 'X'; /* outside len below: never read */
    expect_bad(valid, n - 2, "unexpected end of input", "");
    free(valid);

    /* NULL body: a bad request, never a crash. */
    char *out = NULL;
    CU_ASSERT_EQUAL(admission_review(NULL, 0, ADMISSION_VALIDATE, &out, NULL), 1);
    CU_ASSERT(text_contains(out, "\"code\":400"));
    free(out);

    /* Nesting deeper than ADMISSION_MAX_DEPTH. */
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, HDR "\"request\":{\"uid\":\"deep\",\"x\":");
    for (int i = 0; i < 200; i++)
        buf_puts(&b, "[");
    for (int i = 0; i < 200; i++)
        buf_puts(&b, "]");
    buf_puts(&b, "}}");
    expect_bad(buf_str(&b), b.len, "body: not JSON: nesting too deep", "");
    buf_free(&b);
}

static void test_v1beta1_echoed(void)
{
    char *body = review_text("CREATE", "cache", VALID_SPEC, NULL, NULL);
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1beta1\"");
    buf_puts(&b, strchr(body, ','));
    answer_t a = ask_str(buf_str(&b), ADMISSION_VALIDATE);
    CU_ASSERT_EQUAL(a.rc, 0);
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.root, "apiVersion"), "admission.k8s.io/v1beta1");
    CU_ASSERT(allowed(&a));
    answer_free(&a);
    buf_free(&b);
    free(body);
}

static void test_dry_run_passthrough(void)
{
    /* dryRun changes nothing in the verdict (sideEffects: None) and is reported. */
    char *dry = review_text("CREATE", "cache", "{\"size\":11,\"image\":\"redis\"}", NULL, "\"dryRun\":true");
    char *wet = review_text("CREATE", "cache", "{\"size\":11,\"image\":\"redis\"}", NULL, "\"dryRun\":false");
    answer_t a = ask_str(dry, ADMISSION_VALIDATE), b = ask_str(wet, ADMISSION_VALIDATE);
    CU_ASSERT_EQUAL(a.o.dry_run, 1);
    CU_ASSERT_EQUAL(b.o.dry_run, 0);
    CU_ASSERT_FALSE(allowed(&a));
    CU_ASSERT_STRING_EQUAL(message(&a), message(&b));
    answer_free(&a);
    answer_free(&b);
    free(dry);
    free(wet);
    dry = review_text("CREATE", "cache", "{\"size\":1,\"image\":\"redis\"}", NULL, "\"dryRun\":true");
    a = ask_str(dry, ADMISSION_MUTATE);
    CU_ASSERT(a.o.dry_run);
    CU_ASSERT(a.o.patched);
    CU_ASSERT_PTR_NOT_NULL(jsonx_get(a.response, "patch"));
    answer_free(&a);
    free(dry);
}

static void test_big_input(void)
{
    /* 2 MiB of annotation in a valid object: admitted; a 2 MiB bad image: refused with a
     * message of bounded size; 100000 array elements: fine. */
    size_t big = (size_t)2 << 20;
    char *s = malloc(big + 1);
    memset(s, 'a', big);
    s[big] = '\0';
    buf_t spec, meta;
    buf_init(&spec, 0);
    buf_init(&meta, 0);
    buf_printf(&meta, "\"annotations\":{\"note\":\"%s\"}", s);
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, HDR "\"request\":{\"uid\":\"big\"," RCKIND ",\"operation\":\"CREATE\",\"object\":");
    rc_json(&b, "cache", VALID_SPEC, buf_str(&meta));
    buf_puts(&b, "}}");
    answer_t a = ask(buf_str(&b), b.len, ADMISSION_VALIDATE);
    CU_ASSERT(allowed(&a));
    answer_free(&a);

    buf_printf(&spec, "{\"size\":3,\"image\":\"r %s\"}", s);
    char *body = review_text("CREATE", "cache", buf_str(&spec), NULL, NULL);
    a = ask_str(body, ADMISSION_VALIDATE);
    CU_ASSERT_FALSE(allowed(&a));
    ASSERT_TEXT_HAS(message(&a), "spec.image: Invalid value: \"r aaaa", "...\"");
    CU_ASSERT(strlen(message(&a)) < 1024);
    CU_ASSERT(strlen(a.o.message) < sizeof(a.o.message));
    answer_free(&a);
    free(body);

    buf_reset(&b);
    buf_puts(&b, HDR "\"request\":{\"uid\":\"wide\"," RCKIND ",\"operation\":\"CREATE\",\"junk\":[");
    for (int i = 0; i < 100000; i++)
        buf_puts(&b, i ? ",{}" : "{}");
    buf_puts(&b, "],\"object\":");
    rc_json(&b, "cache", VALID_SPEC, NULL);
    buf_puts(&b, "}}");
    a = ask(buf_str(&b), b.len, ADMISSION_MUTATE);
    CU_ASSERT(allowed(&a));
    answer_free(&a);

    /* A huge uid or name is echoed as given but cut in the outcome. */
    buf_reset(&b);
    buf_printf(&b, HDR "\"request\":{\"uid\":\"%.5000s\"," RCKIND ",\"operation\":\"DELETE\",\"name\":\"%.5000s\"}}", s,
               s);
    a = ask(buf_str(&b), b.len, ADMISSION_VALIDATE);
    CU_ASSERT(allowed(&a));
    CU_ASSERT_EQUAL(strlen(jsonx_str(a.response, "uid")), 5000);
    CU_ASSERT_EQUAL(strlen(a.o.uid), sizeof(a.o.uid) - 1);
    CU_ASSERT_EQUAL(strlen(a.o.name), sizeof(a.o.name) - 1);
    answer_free(&a);

    buf_free(&b);
    buf_free(&spec);
    buf_free(&meta);
    free(s);
}

/* ---- Agreement with workerd's plan ------------------------------------------------------ */

static void test_agrees_with_plan(void)
{
    /* Whatever the webhook admits on CREATE, plan() reconciles; whatever it refuses, plan()
     * reports as InvalidSpec. Checked over every case of this file. */
    static const char *const extra[] = {
        VALID_SPEC,
        "{\"size\":1,\"image\":\"redis\"}",
        "{\"size\":10,\"image\":\"host:5000/redis\",\"version\":\"7\"}",
        "{\"size\":2,\"image\":\"redis\",\"config\":{\"maxmemory\":\"0\"}}",
        "{\"size\":2,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1234567890123456789\"}}",
        "{\"size\":2,\"image\":\"redis\",\"config\":{\"maxmemory\":\"12345678901234567890\"}}",
        "{\"size\":2,\"image\":\"redis\",\"storage\":{\"size\":\"4194304Ti\"}}",
        "{\"size\":2,\"image\":\"redis\",\"storage\":{\"size\":\"0000001Mi\"}}",
        "{\"size\":2,\"image\":\"redis\",\"storage\":{\"storageClass\":\"a.b-c\"}}",
        "{\"size\":2,\"image\":\"redis\",\"storage\":{\"storageClass\":\"a..b\"}}",
        "{\"size\":2,\"image\":\"redis\",\"version\":\"_x.Y-9\"}",
    };
    size_t n_invalid = sizeof(invalid_cases) / sizeof(invalid_cases[0]);
    size_t n = n_invalid + sizeof(extra) / sizeof(extra[0]);
    for (size_t i = 0; i < n; i++) {
        const char *spec = i < n_invalid ? invalid_cases[i].in : extra[i - n_invalid];
        answer_t a = validate_create("cache", spec);
        buf_t b;
        buf_init(&b, 0);
        rc_json(&b, "cache", spec, NULL);
        json_object *rc = json_tokener_parse(buf_str(&b));
        CU_ASSERT_PTR_NOT_NULL_FATAL(rc);
        plan_t *p = plan_compute(rc, NULL, NULL, NULL, INT64_C(1714564800) * 1000000000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        int plan_ok = strcmp(plan_phase(p), "Failed") != 0;
        CU_ASSERT_EQUAL(plan_ok, allowed(&a));
        if (plan_ok != allowed(&a))
            fprintf(stderr, "\ndisagree on %s: webhook %s, plan %s\n", spec ? spec : "(none)", message(&a),
                    plan_phase(p));
        plan_destroy(&p);
        json_object_put(rc);
        buf_free(&b);
        answer_free(&a);
    }
}

/* ---- rdc_spec predicates and base64 ---------------------------------------------------------- */

/* ---- string bounds: the CRD's maxLength values and rdc_spec's agree ------------------ */

/* The maxLength of the schema property reached by path (each name nested under the one
 * before, by indentation) in the CRD's text, or -1. */
static long crd_max_length(const char *text, const char *const *path, size_t n)
{
    const char *p = text;
    size_t indent = 0;
    for (size_t k = 0; k < n; k++) {
        char want[64];
        snprintf(want, sizeof(want), "%s:", path[k]);
        const char *line = p;
        for (;;) {
            line = strchr(line, '\n');
            if (!line)
                return -1;
            line++;
            size_t in = strspn(line, " ");
            if (k > 0 && line[in] && line[in] != '\n' && in <= indent)
                return -1; /* left the parent */
            /* A property is a key alone on its line ("storage: true" is something else). */
            if (strncmp(line + in, want, strlen(want)) == 0 && line[in + strlen(want)] == '\n') {
                indent = in;
                p = line;
                break;
            }
        }
    }
    for (const char *line = strchr(p, '\n'); line; line = strchr(line, '\n')) {
        line++;
        size_t in = strspn(line, " ");
        if (in <= indent)
            return -1;
        if (strncmp(line + in, "maxLength:", 10) == 0)
            return strtol(line + in + 10, NULL, 10);
    }
    return -1;
}

static char *read_crd(void)
{
    FILE *f = crd_open();
    if (!f)
        return NULL;
    char *text = calloc(1, 1 << 20);
    size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (text && n == 0) {
        free(text);
        text = NULL;
    }
    return text;
}

/* A spec with one string of length n made of c at the JSON path given by fmt ("%s"
 * stands for the string). */
static answer_t validate_with(const char *fmt, size_t n, char c)
{
    char *v = malloc(n + 1);
    memset(v, c, n);
    v[n] = '\0';
    buf_t spec;
    buf_init(&spec, 0);
    buf_printf(&spec, fmt, v);
    answer_t a = validate_create("cache", buf_str(&spec));
    buf_free(&spec);
    free(v);
    return a;
}

static void test_string_bounds_agree_with_crd(void)
{
    char *crd = read_crd();
    CU_ASSERT_PTR_NOT_NULL_FATAL(crd); /* run from the repository's top (or set RDC_TOP) */
    static const char *const image[] = {"image"}, *const version[] = {"version"},
                             *const maxmemory[] = {"maxmemory"}, *const policy[] = {"maxmemoryPolicy"},
                             *const ssize[] = {"storage", "size"}, *const sclass[] = {"storageClass"};
    CU_ASSERT_EQUAL(crd_max_length(crd, image, 1), RDC_SPEC_IMAGE_MAX);
    CU_ASSERT_EQUAL(crd_max_length(crd, version, 1), RDC_SPEC_VERSION_MAX);
    CU_ASSERT_EQUAL(crd_max_length(crd, maxmemory, 1), RDC_SPEC_MAXMEMORY_MAX);
    CU_ASSERT_EQUAL(crd_max_length(crd, policy, 1), RDC_SPEC_MAXMEMORY_POLICY_MAX);
    CU_ASSERT_EQUAL(crd_max_length(crd, ssize, 2), RDC_SPEC_STORAGE_SIZE_MAX);
    CU_ASSERT_EQUAL(crd_max_length(crd, sclass, 1), RDC_SPEC_STORAGE_CLASS_MAX);
    CU_ASSERT(strlen("volatile-lru") <= RDC_SPEC_MAXMEMORY_POLICY_MAX);
    free(crd);

    /* At each bound the webhook accepts, one past it refuses with the field named. */
    static const struct {
        const char *fmt, *field;
        size_t max;
        char c;
    } bounds[] = {
        {"{\"size\":1,\"image\":\"%s\"}", "spec.image: Invalid value", RDC_SPEC_IMAGE_MAX, 'r'},
        {"{\"size\":1,\"image\":\"redis\",\"version\":\"%s\"}", "spec.version: Invalid value", RDC_SPEC_VERSION_MAX,
         '7'},
        {"{\"size\":1,\"image\":\"redis\",\"storage\":{\"storageClass\":\"%s\"}}",
         "spec.storage.storageClass: Invalid value", RDC_SPEC_STORAGE_CLASS_MAX, 's'},
    };
    for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
        answer_t a = validate_with(bounds[i].fmt, bounds[i].max, bounds[i].c);
        CU_ASSERT(allowed(&a));
        answer_free(&a);
        a = validate_with(bounds[i].fmt, bounds[i].max + 1, bounds[i].c);
        CU_ASSERT_FALSE(allowed(&a));
        CU_ASSERT(text_contains(message(&a), bounds[i].field));
        answer_free(&a);
    }
    /* storage.size: leading zeros keep the value small but not the text. */
    answer_t a = validate_with("{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"%s1Gi\"}}",
                               RDC_SPEC_STORAGE_SIZE_MAX - 3, '0');
    CU_ASSERT(allowed(&a));
    answer_free(&a);
    a = validate_with("{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"%s1Gi\"}}",
                      RDC_SPEC_STORAGE_SIZE_MAX - 2, '0');
    CU_ASSERT_FALSE(allowed(&a));
    ASSERT_TEXT_HAS(message(&a), "spec.storage.size: Invalid value: \"000", "must be at most 32 characters");
    answer_free(&a);
    /* maxmemory: 19 digits and a 2-letter unit is the longest (21). */
    a = validate_with("{\"size\":1,\"image\":\"redis\",\"config\":{\"maxmemory\":\"%smb\"}}", 19, '1');
    CU_ASSERT(allowed(&a));
    answer_free(&a);
    a = validate_with("{\"size\":1,\"image\":\"redis\",\"config\":{\"maxmemory\":\"%smb\"}}", 20, '1');
    CU_ASSERT_FALSE(allowed(&a));
    answer_free(&a);
}

static void test_predicates(void)
{
    uint64_t bytes = 0;
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("1Gi", &bytes), RDC_STORAGE_OK);
    CU_ASSERT_EQUAL(bytes, UINT64_C(1) << 30);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("1024Mi", &bytes), RDC_STORAGE_OK);
    CU_ASSERT_EQUAL(bytes, UINT64_C(1) << 30);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("4194304Ti", &bytes), RDC_STORAGE_OK);
    CU_ASSERT_EQUAL(bytes, UINT64_C(1) << 62);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("4194305Ti", &bytes), RDC_STORAGE_TOO_LARGE);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("0Mi", &bytes), RDC_STORAGE_ZERO);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("Gi", &bytes), RDC_STORAGE_BAD_FORMAT);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("1Ki", &bytes), RDC_STORAGE_BAD_FORMAT);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("1gi", &bytes), RDC_STORAGE_BAD_FORMAT);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes(" 1Gi", &bytes), RDC_STORAGE_BAD_FORMAT);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("1Gi ", &bytes), RDC_STORAGE_BAD_FORMAT);
    CU_ASSERT_EQUAL(rdc_spec_storage_bytes("999999999999999999999999999999999999Mi", &bytes), RDC_STORAGE_TOO_LARGE);

    CU_ASSERT(rdc_spec_is_dns1035_label("a", 52));
    CU_ASSERT(rdc_spec_is_dns1035_label("redis-1", 52));
    CU_ASSERT_FALSE(rdc_spec_is_dns1035_label("", 52));
    CU_ASSERT_FALSE(rdc_spec_is_dns1035_label("1a", 52));
    CU_ASSERT_FALSE(rdc_spec_is_dns1035_label("abc", 2));
    CU_ASSERT(rdc_spec_is_dns1123_subdomain("standard"));
    CU_ASSERT(rdc_spec_is_dns1123_subdomain("1.fast-ssd.example"));
    CU_ASSERT_FALSE(rdc_spec_is_dns1123_subdomain("a..b"));
    CU_ASSERT_FALSE(rdc_spec_is_dns1123_subdomain("a.-b"));
    CU_ASSERT_FALSE(rdc_spec_is_dns1123_subdomain("a."));
    CU_ASSERT_FALSE(rdc_spec_is_dns1123_subdomain(".a"));
    CU_ASSERT(rdc_spec_is_image_tag("7.2.4-alpine"));
    CU_ASSERT_FALSE(rdc_spec_is_image_tag(".7"));
    CU_ASSERT(rdc_spec_is_redis_memory("256mb"));
    CU_ASSERT(rdc_spec_is_redis_memory("1GB"));
    CU_ASSERT(rdc_spec_is_redis_memory("100"));
    CU_ASSERT_FALSE(rdc_spec_is_redis_memory("1tb"));
    CU_ASSERT_FALSE(rdc_spec_is_redis_memory("mb"));
    CU_ASSERT(rdc_spec_image_has_tag_or_digest("redis:7"));
    CU_ASSERT(rdc_spec_image_has_tag_or_digest("host:5000/redis:7"));
    CU_ASSERT(rdc_spec_image_has_tag_or_digest("redis@sha256:00"));
    CU_ASSERT_FALSE(rdc_spec_image_has_tag_or_digest("host:5000/redis"));
    CU_ASSERT_FALSE(rdc_spec_is_image_ref(""));
}

static void test_field_errors_list(void)
{
    rdc_field_errors_t *e = rdc_field_errors_new();
    json_object *rc = json_tokener_parse("[]");
    CU_ASSERT_EQUAL(rdc_spec_validate(rc, e), 1);
    CU_ASSERT_STRING_EQUAL(rdc_field_error_text(e, 0), "<object>: Invalid value: []: must be an object");
    CU_ASSERT_EQUAL(rdc_field_error_type(e, 0), RDC_FIELD_INVALID);
    CU_ASSERT_STRING_EQUAL(rdc_field_error_field(e, 0), "<object>");
    CU_ASSERT_PTR_NULL(rdc_field_error_text(e, 1));
    json_object_put(rc);
    /* More errors than the list keeps: counted, and said in the text. */
    rc = json_tokener_parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"size\":0,\"image\":\"\"}}");
    for (int i = 0; i < 20; i++)
        rdc_spec_validate(rc, e);
    CU_ASSERT_EQUAL(rdc_field_errors_count(e), RDC_FIELD_ERRORS_MAX);
    CU_ASSERT_EQUAL(rdc_field_errors_dropped(e), 1 + 20 * 2 - RDC_FIELD_ERRORS_MAX);
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL(rdc_field_errors_format(e, &b), 0);
    CU_ASSERT(text_contains(buf_str(&b), ", and 9 more]"));
    buf_free(&b);
    /* A buffer too small for them all: whole texts only, the rest counted, well formed. */
    const char *first = rdc_field_error_text(e, 0);
    buf_init(&b, strlen(first) + 64);
    CU_ASSERT_EQUAL(rdc_field_errors_format(e, &b), 0);
    buf_t want;
    buf_init(&want, 0);
    buf_printf(&want, "[%s, and %zu more]", first, RDC_FIELD_ERRORS_MAX - 1 + rdc_field_errors_dropped(e));
    CU_ASSERT_STRING_EQUAL(buf_str(&b), buf_str(&want));
    buf_free(&want);
    buf_free(&b);
    buf_init(&b, 8); /* not even the first fits */
    CU_ASSERT_EQUAL(rdc_field_errors_format(e, &b), -1);
    buf_free(&b);
    buf_init(&b, 48);
    CU_ASSERT_EQUAL(rdc_field_errors_format(e, &b), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "[and 41 more]");
    buf_free(&b);
    json_object_put(rc);
    rdc_field_errors_destroy(&e);
    rdc_field_errors_destroy(&e); /* NULL is fine */
    /* One error that fits is said alone; quoting escapes and cuts at a character. */
    e = rdc_field_errors_new();
    rc = json_tokener_parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"size\":11,\"image\":\"redis\"}}");
    CU_ASSERT_EQUAL(rdc_spec_validate(rc, e), 1);
    buf_init(&b, 0);
    CU_ASSERT_EQUAL(rdc_field_errors_format(e, &b), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "spec.size: Invalid value: 11: must be between 1 and 10");
    buf_reset(&b);
    rdc_spec_put_quoted(&b, "a\"b\\c\n\xc3\xa9", 64);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "\"a\\\"b\\\\c\\x0a\xc3\xa9\"");
    buf_reset(&b);
    rdc_spec_put_quoted(&b, "ab\xc3\xa9", 3);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "\"ab...\"");
    buf_free(&b);
    json_object_put(rc);
    rdc_field_errors_destroy(&e);
}

static void test_base64(void)
{
    static const char *const rfc4648[][2] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof(rfc4648) / sizeof(rfc4648[0]); i++) {
        char *s = admission_base64((const unsigned char *)rfc4648[i][0], strlen(rfc4648[i][0]));
        CU_ASSERT_STRING_EQUAL(s, rfc4648[i][1]);
        free(s);
    }
}

/* ---- Certificates made here --------------------------------------------------------------- */

static char tmpdir[64];

/* A self-signed certificate for cn and its key into tmpdir (cert_files.h). */
static void make_cert(const char *cn, const char *crt, const char *key)
{
    cert_files_make(tmpdir, cn, crt, key);
}

static int suite_tls_init(void)
{
    rlog_init("test_admission", RLOG_ERROR, RLOG_TEXT, NULL);
    signal(SIGPIPE, SIG_IGN); /* a server that closes on us mid-request is a test result */
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_admission.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int suite_tls_clean(void)
{
    static const char *const files[] = {"tls.crt", "tls.key", "other.crt", "other.key", "junk.crt", "chain.crt"};
    char path[128];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, files[i]);
        unlink(path);
    }
    rmdir(tmpdir);
    metrics_default_free();
    return 0;
}

CU_HOOKS({"admission: server", suite_tls_init, suite_tls_clean, NULL, NULL});

static void test_tls_load_and_reload(void)
{
    char err[512];
    webhook_tls_t *t = NULL;
    CU_ASSERT_EQUAL(webhook_tls_new("/nonexistent-dir", "tls.crt", "tls.key", &t, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT(text_contains(err, "cannot load the certificate /nonexistent-dir/tls.crt"));

    make_cert("first", "tls.crt", "tls.key");
    make_cert("other", "other.crt", "other.key");
    /* A key that belongs to another certificate. */
    CU_ASSERT_EQUAL(webhook_tls_new(tmpdir, "tls.crt", "other.key", &t, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "does not match") || text_contains(err, "key values mismatch"));
    /* Not PEM at all. */
    char path[128];
    snprintf(path, sizeof(path), "%s/junk.crt", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("-----BEGIN CERTIFICATE-----\nnot base64\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(webhook_tls_new(tmpdir, "junk.crt", "tls.key", &t, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "junk.crt"));

    CU_ASSERT_EQUAL(webhook_tls_new(tmpdir, "tls.crt", "tls.key", &t, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(webhook_tls_loads(t), 1);
    int64_t na = webhook_tls_not_after(t);
    CU_ASSERT(na > (int64_t)time(NULL) + 3000 && na < (int64_t)time(NULL) + 4000);
    CU_ASSERT_EQUAL(webhook_tls_check(t, err, sizeof(err)), 0);
    SSL_CTX *before = webhook_tls_ctx(t);

    make_cert("second", "tls.crt", "tls.key");
    CU_ASSERT_EQUAL(webhook_tls_check(t, err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(webhook_tls_loads(t), 2);
    CU_ASSERT_PTR_NOT_EQUAL(webhook_tls_ctx(t), before);
    CU_ASSERT_EQUAL(webhook_tls_check(t, err, sizeof(err)), 0);

    /* Half a rotation (certificate without its key): the old context stays, the failure
     * is reported once, and the completed rotation loads. */
    SSL_CTX *good = webhook_tls_ctx(t);
    make_cert("third", "tls.crt", NULL);
    CU_ASSERT_EQUAL(webhook_tls_check(t, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "tls.crt") || text_contains(err, "tls.key"));
    if (!text_contains(err, "tls.crt") && !text_contains(err, "tls.key"))
        fprintf(stderr, "\nhalf rotation: %s\n", err);
    CU_ASSERT_PTR_EQUAL(webhook_tls_ctx(t), good);
    CU_ASSERT_EQUAL(webhook_tls_check(t, err, sizeof(err)), 0);
    make_cert("fourth", "tls.crt", "tls.key");
    CU_ASSERT_EQUAL(webhook_tls_check(t, err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(webhook_tls_loads(t), 3);
    webhook_tls_destroy(&t);
    CU_ASSERT_PTR_NULL(t);
}

/* A certificate file holding a chain (leaf first, then an intermediate): the leaf is served
 * with the rest of the chain after it, as SSL_CTX_use_certificate_chain_file would. */
static void test_tls_chain(void)
{
    char err[512], path[128], cn[64] = "";
    make_cert("leaf", "tls.crt", "tls.key");
    make_cert("intermediate", "other.crt", "other.key");
    snprintf(path, sizeof(path), "%s/chain.crt", tmpdir);
    FILE *out = fopen(path, "w");
    CU_ASSERT_FATAL(out != NULL);
    static const char *const parts[] = {"tls.crt", "other.crt"};
    for (size_t i = 0; i < 2; i++) {
        char part[128], block[4096];
        snprintf(part, sizeof(part), "%s/%s", tmpdir, parts[i]);
        FILE *in = fopen(part, "r");
        CU_ASSERT_FATAL(in != NULL);
        size_t n = fread(block, 1, sizeof(block), in);
        fclose(in);
        fwrite(block, 1, n, out);
    }
    fclose(out);
    webhook_tls_t *t = NULL;
    CU_ASSERT_EQUAL_FATAL(webhook_tls_new(tmpdir, "chain.crt", "tls.key", &t, err, sizeof(err)), 0);
    SSL_CTX *ctx = webhook_tls_ctx(t);
    X509_NAME_get_text_by_NID(X509_get_subject_name(SSL_CTX_get0_certificate(ctx)), NID_commonName, cn,
                              (int)sizeof(cn));
    CU_ASSERT_STRING_EQUAL(cn, "leaf");
    STACK_OF(X509) *chain = NULL;
    CU_ASSERT_EQUAL(SSL_CTX_get0_chain_certs(ctx, &chain), 1);
    CU_ASSERT_EQUAL(chain ? sk_X509_num(chain) : 0, 1);
    webhook_tls_destroy(&t);
}

/* ---- The HTTPS server, served from a thread --------------------------------------------------- */

static void fixture_start(fixture_t *f, size_t max_body, int timeout_s)
{
    make_cert("server", "tls.crt", "tls.key");
    webhook_server_config_t cfg = {.bind_address = "127.0.0.1", .port = 0, .cert_dir = tmpdir,
                                   .max_body = max_body, .timeout_s = timeout_s};
    webhook_fixture_start(f, &cfg);
}

typedef struct {
    int ok;          /* TLS handshake done */
    int status;      /* HTTP status, 0 when none */
    char cn[64];     /* the server certificate's CN */
    buf_t raw;       /* the whole answer */
    const char *body;
} http_answer_t;

/* Send raw (an HTTP request) over TLS (max_version 0 = any) and read until the server
 * closes. The caller frees ans->raw. */
static void https(int port, const char *raw, size_t len, int max_version, http_answer_t *ans)
{
    memset(ans, 0, sizeof(*ans));
    buf_init(&ans->raw, 0);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (max_version) {
        /* Let this client offer old protocols, so that a refusal is the server's. */
        SSL_CTX_set_security_level(ctx, 0);
        SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
        SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0");
        SSL_CTX_set_max_proto_version(ctx, max_version);
    }
    int fd = tls_tcp_connect(port, 0);
    CU_ASSERT_FATAL(fd >= 0);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
        ans->ok = 1;
        X509 *peer = SSL_get1_peer_certificate(ssl);
        if (peer) {
            X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, ans->cn, sizeof(ans->cn));
            X509_free(peer);
        }
        size_t off = 0;
        while (off < len) {
            int w = SSL_write(ssl, raw + off, (int)(len - off > 65536 ? 65536 : len - off));
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        char buf[16384];
        int r;
        while ((r = SSL_read(ssl, buf, sizeof(buf))) > 0)
            buf_append(&ans->raw, buf, (size_t)r);
        const char *t = buf_str(&ans->raw);
        if (!strncmp(t, "HTTP/1.1 ", 9))
            ans->status = (int)strtol(t + 9, NULL, 10);
        const char *sep = strstr(t, "\r\n\r\n");
        ans->body = sep ? sep + 4 : "";
    }
    ERR_clear_error();
    SSL_free(ssl);
    close(fd);
    SSL_CTX_free(ctx);
}

/* POST body to path with content_type (NULL = none). */
static void post(int port, const char *method, const char *path, const char *content_type, const char *body,
                 size_t len, http_answer_t *ans)
{
    buf_t req;
    buf_init(&req, 0);
    buf_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method, path);
    if (content_type)
        buf_printf(&req, "Content-Type: %s\r\n", content_type);
    buf_printf(&req, "Content-Length: %zu\r\n\r\n", len);
    buf_append(&req, body, len);
    https(port, req.data, req.len, 0, ans);
    buf_free(&req);
}

static double counter(const char *path, const char *code)
{
    metric_family_t *f = metrics_counter(metrics_default(), "controller_runtime_webhook_requests_total",
                                         "Total number of admission requests by HTTP status code.", "webhook,code");
    return metric_value(f, METRIC_LABELS(path, code));
}

static void test_server_routes_and_errors(void)
{
    fixture_t f;
    fixture_start(&f, 64 << 10, 1);
    char *valid = review_text("CREATE", "cache", "{\"size\":3,\"image\":\"redis\"}", NULL, NULL);
    http_answer_t a;

    post(f.port, "POST", ADMISSION_VALIDATE_PATH "?timeout=10s", "application/json", valid, strlen(valid), &a);
    CU_ASSERT(a.ok);
    CU_ASSERT_STRING_EQUAL(a.cn, "server");
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT(text_contains(buf_str(&a.raw), "Content-Type: application/json"));
    CU_ASSERT(text_contains(a.body, "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"allowed\":true"));
    buf_free(&a.raw);

    post(f.port, "POST", ADMISSION_MUTATE_PATH, "application/json; charset=utf-8", valid, strlen(valid), &a);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT(text_contains(a.body, "\"patchType\":\"JSONPatch\""));
    buf_free(&a.raw);

    post(f.port, "GET", ADMISSION_VALIDATE_PATH, NULL, "", 0, &a);
    CU_ASSERT_EQUAL(a.status, 405);
    CU_ASSERT(text_contains(buf_str(&a.raw), "Allow: POST"));
    buf_free(&a.raw);

    post(f.port, "PATCH", ADMISSION_MUTATE_PATH, "application/json", valid, strlen(valid), &a);
    CU_ASSERT_EQUAL(a.status, 405);
    buf_free(&a.raw);

    post(f.port, "POST", ADMISSION_VALIDATE_PATH, "text/plain", valid, strlen(valid), &a);
    CU_ASSERT_EQUAL(a.status, 415);
    CU_ASSERT(text_contains(a.body, "Content-Type must be application/json, have \"text/plain\""));
    buf_free(&a.raw);

    post(f.port, "POST", ADMISSION_VALIDATE_PATH, NULL, valid, strlen(valid), &a);
    CU_ASSERT_EQUAL(a.status, 415);
    buf_free(&a.raw);

    post(f.port, "POST", ADMISSION_VALIDATE_PATH, "application/jsonx", valid, strlen(valid), &a);
    CU_ASSERT_EQUAL(a.status, 415);
    buf_free(&a.raw);

    post(f.port, "POST", ADMISSION_VALIDATE_PATH, "application/json", "{\"kind\":", 8, &a);
    CU_ASSERT_EQUAL(a.status, 400);
    CU_ASSERT(text_contains(a.body, "\"reason\":\"BadRequest\""));
    buf_free(&a.raw);

    post(f.port, "POST", "/validate", "application/json", valid, strlen(valid), &a);
    CU_ASSERT_EQUAL(a.status, 404);
    buf_free(&a.raw);

    post(f.port, "GET", "/healthz", NULL, "", 0, &a);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_STRING_EQUAL(a.body, "ok\n");
    buf_free(&a.raw);

    /* Over max_body: refused by evhttp before we see it. */
    size_t big = (size_t)100 << 10;
    char *blob = malloc(big);
    memset(blob, ' ', big);
    post(f.port, "POST", ADMISSION_VALIDATE_PATH, "application/json", blob, big, &a);
    CU_ASSERT_EQUAL(a.status, 413);
    buf_free(&a.raw);
    free(blob);

    /* Garbage request line. */
    https(f.port, "\x01\x02 nonsense\r\n\r\n", 15, 0, &a);
    CU_ASSERT(a.ok);
    CU_ASSERT(a.status == 0 || a.status == 400);
    buf_free(&a.raw);

    /* TLS 1.1 is refused; plain HTTP gets no HTTP answer. */
    https(f.port, "GET /healthz HTTP/1.1\r\n\r\n", 25, TLS1_1_VERSION, &a);
    CU_ASSERT_FALSE(a.ok);
    buf_free(&a.raw);
    https(f.port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 44, TLS1_2_VERSION, &a);
    CU_ASSERT(a.ok);
    CU_ASSERT_EQUAL(a.status, 200);
    buf_free(&a.raw);
    int fd = tls_tcp_connect(f.port, 0);
    CU_ASSERT(write(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 34) == 34);
    char rbuf[256];
    ssize_t r = read(fd, rbuf, sizeof(rbuf));
    CU_ASSERT(r <= 0 || strncmp(rbuf, "HTTP/1.1 200", 12) != 0);
    close(fd);

    /* A client that says nothing is dropped after the timeout (1 s here). */
    fd = tls_tcp_connect(f.port, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = read(fd, rbuf, sizeof(rbuf));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CU_ASSERT(r <= 0);
    CU_ASSERT(t1.tv_sec - t0.tv_sec < 4);
    close(fd);

    fixture_stop(&f);
    CU_ASSERT_EQUAL(counter(ADMISSION_VALIDATE_PATH, "200"), 1);
    CU_ASSERT_EQUAL(counter(ADMISSION_VALIDATE_PATH, "405"), 1);
    CU_ASSERT_EQUAL(counter(ADMISSION_VALIDATE_PATH, "415"), 3);
    CU_ASSERT_EQUAL(counter(ADMISSION_VALIDATE_PATH, "400"), 1);
    CU_ASSERT_EQUAL(counter(ADMISSION_MUTATE_PATH, "200"), 1);
    CU_ASSERT_EQUAL(counter(ADMISSION_MUTATE_PATH, "405"), 1);
    metric_family_t *fl = metrics_gauge(metrics_default(), "controller_runtime_webhook_requests_in_flight",
                                        "Current number of admission requests being served.", "webhook");
    CU_ASSERT_EQUAL(metric_value(fl, METRIC_LABELS(ADMISSION_VALIDATE_PATH)), 0);
    metric_family_t *lat = metrics_histogram(metrics_default(), "controller_runtime_webhook_latency_seconds",
                                             "Histogram of the latency of processing admission requests", "webhook",
                                             NULL, 0);
    CU_ASSERT_EQUAL(metric_value(lat, METRIC_LABELS(ADMISSION_VALIDATE_PATH)), 6);
    free(valid);
}

/* POST /convert: a ConversionReview answered over the same TLS server, 405/415/400 like
 * the admission paths, and the conversion metrics counted. */
static void test_server_convert(void)
{
    fixture_t f;
    fixture_start(&f, 64 << 10, 1);
    static const char review[] =
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"c-1\","
        "\"desiredAPIVersion\":\"cache.example.com/v1\",\"objects\":[{\"apiVersion\":\"cache.example.com/v1alpha1\","
        "\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},"
        "\"spec\":{\"size\":1,\"image\":\"redis\"}}]}}";
    metric_family_t *objects = metrics_counter(metrics_default(), "webhook_conversion_objects_total",
                                               "RedisCluster objects converted, by version from and to.", "from,to");
    double up0 = metric_value(objects, METRIC_LABELS("v1alpha1", "v1"));
    http_answer_t a;
    post(f.port, "POST", "/convert?timeout=30s", "application/json", review, strlen(review), &a);
    CU_ASSERT_EQUAL(a.status, 200);
    ASSERT_TEXT_HAS(a.body, "\"uid\":\"c-1\"", "\"apiVersion\":\"cache.example.com/v1\"", "\"mode\":\"Standalone\"",
                    "\"status\":\"Success\"");
    buf_free(&a.raw);
    post(f.port, "GET", "/convert", NULL, "", 0, &a);
    CU_ASSERT_EQUAL(a.status, 405);
    buf_free(&a.raw);
    post(f.port, "POST", "/convert", "text/plain", review, strlen(review), &a);
    CU_ASSERT_EQUAL(a.status, 415);
    buf_free(&a.raw);
    post(f.port, "POST", "/convert", "application/json", "[1,2", 4, &a);
    CU_ASSERT_EQUAL(a.status, 400);
    CU_ASSERT(text_contains(a.body, "\"kind\":\"ConversionReview\""));
    buf_free(&a.raw);
    fixture_stop(&f);
    CU_ASSERT_EQUAL(counter("/convert", "200"), 1);
    CU_ASSERT_EQUAL(counter("/convert", "405"), 1);
    CU_ASSERT_EQUAL(counter("/convert", "400"), 1);
    CU_ASSERT_EQUAL(metric_value(objects, METRIC_LABELS("v1alpha1", "v1")) - up0, 1);
}

static void test_server_reloads_certificate(void)
{
    fixture_t f;
    fixture_start(&f, 0, 0);
    http_answer_t a;
    post(f.port, "GET", "/readyz", NULL, "", 0, &a);
    CU_ASSERT_STRING_EQUAL(a.cn, "server");
    buf_free(&a.raw);
    make_cert("rotated", "tls.crt", "tls.key");
    /* New connections look at the files at most once a second. */
    struct timespec pause = {1, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    post(f.port, "GET", "/readyz", NULL, "", 0, &a);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_STRING_EQUAL(a.cn, "rotated");
    buf_free(&a.raw);
    fixture_stop(&f);
}

static void test_server_bind_errors(void)
{
    struct event_base *base = event_base_new();
    webhook_server_t *s = NULL;
    char err[512];
    webhook_server_config_t cfg = {.bind_address = "203.0.113.7", .port = 0, .cert_dir = tmpdir};
    CU_ASSERT_EQUAL(webhook_server_new(base, &cfg, &s, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "cannot listen on 203.0.113.7"));
    cfg.bind_address = "no-such-host.invalid";
    CU_ASSERT_EQUAL(webhook_server_new(base, &cfg, &s, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "no-such-host.invalid"));
    cfg.bind_address = "[::1]";
    if (webhook_server_new(base, &cfg, &s, err, sizeof(err)) == 0) /* where IPv6 exists */
        webhook_server_destroy(&s);
    cfg.bind_address = "127.0.0.1";
    cfg.cert_dir = "/nonexistent-dir";
    CU_ASSERT_EQUAL(webhook_server_new(base, &cfg, &s, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "/nonexistent-dir/tls.crt"));
    CU_ASSERT_PTR_NULL(s);
    event_base_free(base);
}

static const cu_entry_t tests[] = {
    CU_SUITE("admission: create"),
    {"an owned redis.conf directive refused by name", test_owned_directive_refused_by_name},
    {"valid create is allowed, uid and apiVersion echoed", test_valid_create_is_allowed},
    {"each invalid field named with its rule", test_invalid_fields_named_in_message},
    {"every problem listed at once", test_every_problem_listed},
    {"invalid names", test_invalid_names},
    {"warning for a version next to a tagged image", test_warning_for_version_with_tagged_image},
    {"agrees with workerd's plan on validity", test_agrees_with_plan},
    {"string bounds: the CRD's maxLength, at and past each", test_string_bounds_agree_with_crd},
    CU_SUITE("admission: update"),
    {"size decrease refused (403), increase allowed", test_update_size_decrease_refused},
    {"storage size and class immutable, quantities compared", test_update_storage_immutable},
    {"metadata-only updates and deletion never blocked", test_update_metadata_only_never_blocked},
    {"DELETE and CONNECT allowed", test_delete_and_connect_allowed},
    {"scale subresource", test_scale_subresource},
    CU_SUITE("admission: mutate"),
    {"defaults as a base64 JSON Patch", test_defaults_patch},
    {"defaulted object validates and is stable", test_defaulted_object_is_valid_and_stable},
    CU_SUITE("admission: robustness"),
    {"malformed reviews are bad requests", test_malformed_reviews},
    {"v1beta1 answered in kind", test_v1beta1_echoed},
    {"dryRun passthrough", test_dry_run_passthrough},
    {"big input", test_big_input},
    {"rdc_spec predicates", test_predicates},
    {"field error list", test_field_errors_list},
    {"base64 (RFC 4648 vectors)", test_base64},
    CU_SUITE("admission: server"),
    {"certificate load and reload", test_tls_load_and_reload},
    {"a certificate chain is served whole", test_tls_chain},
    {"routes, methods, content types, sizes, timeouts, metrics", test_server_routes_and_errors},
    {"POST /convert: conversion reviews and their metrics", test_server_convert},
    {"new connections get a rotated certificate", test_server_reloads_certificate},
    {"bind and certificate errors", test_server_bind_errors},
};

CU_MAIN(tests)
