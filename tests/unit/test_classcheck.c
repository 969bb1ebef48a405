/* Unit tests of the StorageClass check of a growing spec.storage.size (issue 34):
 * classcheck_decide's table (pure), the validating review with a fake reader (only a
 * growth asks it, the refusal's envelope), and the reads of classcheck_read_start against a
 * fake API server, on a libevent loop.
 */
#include "admission.h"
#include "buf.h"
#include "classcheck.h"
#include "cu_table.h"
#include "fake_api.h"
#include "jsonx.h"

#include <CUnit/CUnit.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SC(name, ann, expand) \
    "{\"metadata\":{\"name\":\"" name "\"" ann "},\"provisioner\":\"p\"" expand "}"
#define DEF ",\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"true\"}"
#define DEF_BETA ",\"annotations\":{\"storageclass.beta.kubernetes.io/is-default-class\":\"true\"}"
#define NOT_DEF ",\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"false\"}"
#define YES ",\"allowVolumeExpansion\":true"
#define NO ",\"allowVolumeExpansion\":false"

static const char *const NOT_ALLOWED =
    " volume expansion (allowVolumeExpansion is not true), so the claims cannot be resized; an "
    "administrator may set allowVolumeExpansion: true on the class if its driver can expand volumes, and the "
    "change may then be retried";

/* ---- classcheck_decide ---------------------------------------------------------------------- */

static void test_decide_table(void)
{
    static const struct {
        const char *old_size, *new_size, *cls, *read, *read_err;
        const char *expect; /* NULL: allowed; else the whole detail, or a part of it after "~" */
    } cases[] = {
        /* a named class */
        {"1Gi", "2Gi", "fast", SC("fast", "", YES), NULL, NULL},
        {"1Gi", "2Gi", "fixed", SC("fixed", "", NO), NULL,
         "~cannot grow from \"1Gi\" to \"2Gi\": StorageClass \"fixed\" does not allow volume expansion"},
        {"1Gi", "2Gi", "fixed", SC("fixed", "", ""), NULL, "~StorageClass \"fixed\" does not allow"},
        {"1Gi", "2Gi", "odd", SC("odd", "", ",\"allowVolumeExpansion\":\"true\""), NULL, "~\"odd\" does not allow"},
        {"1Gi", "2Gi", "fixed", "null", "storageclasses.storage.k8s.io \"fixed\" not found (404 NotFound)",
         "cannot grow from \"1Gi\" to \"2Gi\" now: StorageClass \"fixed\" could not be read to check "
         "allowVolumeExpansion: storageclasses.storage.k8s.io \"fixed\" not found (404 NotFound); the change may "
         "be retried"},
        {"1Gi", "2Gi", "fast", "null", "timeout", "~\"fast\" could not be read to check allowVolumeExpansion: timeout"},
        {"1Gi", "2Gi", "fast", "[]", NULL, "~\"fast\" could not be read to check allowVolumeExpansion (the API"},
        /* not a growth, or sizes the other rules judge: allowed without looking */
        {"2Gi", "2Gi", "fixed", SC("fixed", "", NO), NULL, NULL},
        {"1Gi", "1024Mi", "fixed", SC("fixed", "", NO), NULL, NULL},
        {"2Gi", "1Gi", "fixed", SC("fixed", "", NO), NULL, NULL},
        {"1Gi", "2GB", "fixed", SC("fixed", "", NO), NULL, NULL},
        {NULL, "2Gi", "fixed", SC("fixed", "", NO), NULL, NULL},
        {"1Gi", "2Gi", "fixed", "null", NULL, "~could not be read"},
        {"1023Mi", "1Gi", "fixed", "null", "down", "~cannot grow from \"1023Mi\" to \"1Gi\" now"},
        /* the cluster's default class, from the list */
        {"1Gi", "2Gi", NULL, "[" SC("a", "", NO) "," SC("standard", DEF, YES) "]", NULL, NULL},
        {"1Gi", "2Gi", NULL, "[" SC("standard", DEF_BETA, YES) "]", NULL, NULL},
        {"1Gi", "2Gi", NULL, "[" SC("a", "", YES) "," SC("standard", DEF, NO) "]", NULL,
         "~: StorageClass \"standard\" (the cluster's default) does not allow volume expansion"},
        {"1Gi", "2Gi", NULL, "[" SC("a", NOT_DEF, YES) "," SC("b", "", YES) "]", NULL,
         "~: spec.storage.storageClass is unset and the cluster has no default StorageClass (none annotated "
         "storageclass.kubernetes.io/is-default-class=true)"},
        {"1Gi", "2Gi", NULL, "[]", NULL, "~has no default StorageClass"},
        {"1Gi", "2Gi", NULL, "null", NULL, "~has no default StorageClass"},
        /* several defaults: every one must allow it */
        {"1Gi", "2Gi", NULL, "[" SC("a", DEF, YES) "," SC("b", DEF_BETA, YES) "]", NULL, NULL},
        {"1Gi", "2Gi", NULL, "[" SC("a", DEF, YES) "," SC("b", DEF, NO) "]", NULL,
         "~: the cluster has several default StorageClasses and StorageClass \"b\" (the cluster's default) does"},
        {"1Gi", "2Gi", NULL, "[" SC("a", DEF, NO) "," SC("b", DEF, "") "]", NULL,
         "~several default StorageClasses and StorageClasses \"a\", \"b\" (defaults) do not allow"},
        {"1Gi", "2Gi", NULL,
         "[" SC("a", DEF, NO) "," SC("b", DEF, NO) "," SC("c", DEF, NO) "," SC("d", DEF, NO) "," SC("e", DEF, NO)
         "," SC("f", DEF, NO) "]", NULL, "~\"a\", \"b\", \"c\", \"d\" and 2 more (defaults)"},
        {"1Gi", "2Gi", NULL, "null", "connection refused",
         "~now: the StorageClasses (for the cluster's default) could not be read to check allowVolumeExpansion: "
         "connection refused; the change may be retried"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *read = json_tokener_parse(cases[i].read);
        buf_t msg;
        buf_init(&msg, 8192);
        int rc = classcheck_decide(cases[i].old_size, cases[i].new_size, cases[i].cls, read, cases[i].read_err, &msg);
        const char *e = cases[i].expect;
        int good = e ? rc == 1 && (e[0] == '~' ? strstr(buf_str(&msg), e + 1) != NULL : !strcmp(buf_str(&msg), e))
                     : rc == 0 && msg.len == 0;
        CU_ASSERT(good);
        if (!good)
            fprintf(stderr, "\ncase %zu: rc %d, \"%s\"\n", i, rc, buf_str(&msg));
        if (rc && !cases[i].read_err && e && strstr(e, "not allow"))
            CU_ASSERT(strstr(buf_str(&msg), NOT_ALLOWED) != NULL);
        buf_free(&msg);
        json_object_put(read);
    }
}

/* ---- The validating review with a fake reader ----------------------------------------------- */

typedef struct {
    int calls;
    char cls[64]; /* the last class asked ("(default)" for NULL) */
    const char *answer; /* JSON of what the read returns */
    const char *err;    /* non-NULL: the read fails with it */
} fake_reader_t;

static int fake_read(void *user, const char *cls, json_object **out, char *err, size_t errlen)
{
    fake_reader_t *f = user;
    f->calls++;
    snprintf(f->cls, sizeof(f->cls), "%s", cls ? cls : "(default)");
    *out = NULL;
    if (f->err) {
        snprintf(err, errlen, "%s", f->err);
        return -1;
    }
    *out = json_tokener_parse(f->answer);
    return 0;
}

/* Answer an UPDATE (op) of a RedisCluster "cache" from old_spec to new_spec through f;
 * returns the response object (caller puts it) and the outcome in o. */
static json_object *review(fake_reader_t *f, const char *op, const char *old_spec, const char *new_spec,
                           admission_outcome_t *o)
{
    char body[4096];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u1\","
             "\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1\",\"kind\":\"RedisCluster\"},"
             "\"operation\":\"%s\",\"name\":\"cache\",\"namespace\":\"d\","
             "\"object\":{\"metadata\":{\"name\":\"cache\"},\"spec\":%s},"
             "\"oldObject\":{\"metadata\":{\"name\":\"cache\"},\"spec\":%s}}}",
             op, new_spec, old_spec);
    admission_classes_t classes = {fake_read, f};
    char *resp = NULL;
    int rc = admission_review_classes(body, strlen(body), ADMISSION_VALIDATE, f ? &classes : NULL, &resp, o);
    CU_ASSERT_EQUAL(rc, 0);
    json_object *root = resp ? json_tokener_parse(resp) : NULL;
    free(resp);
    return root;
}

#define SPEC(storage) "{\"size\":3,\"image\":\"redis\",\"storage\":" storage "}"

static void test_review_refuses_growth_on_fixed_class(void)
{
    fake_reader_t f = {.answer = SC("fixed", "", NO)};
    admission_outcome_t o;
    json_object *root = review(&f, "UPDATE", SPEC("{\"size\":\"1Gi\",\"storageClass\":\"fixed\"}"),
                               SPEC("{\"size\":\"2Gi\",\"storageClass\":\"fixed\"}"), &o);
    CU_ASSERT_EQUAL(f.calls, 1);
    CU_ASSERT_STRING_EQUAL(f.cls, "fixed");
    CU_ASSERT_FALSE(o.allowed);
    CU_ASSERT_EQUAL(o.code, 403);
    json_object *st = jsonx_get(jsonx_get(root, "response"), "status");
    CU_ASSERT_STRING_EQUAL(jsonx_str(st, "reason"), "Forbidden");
    const char *m = jsonx_str(st, "message");
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT(strstr(m, "RedisCluster.cache.example.com \"cache\" is forbidden: spec.storage.size: Forbidden: "
                        "cannot grow from \"1Gi\" to \"2Gi\": StorageClass \"fixed\" does not allow volume "
                        "expansion (allowVolumeExpansion is not true)") == m);
    json_object_put(root);
}

static void test_review_allows_growth_on_expandable_default(void)
{
    fake_reader_t f = {.answer = "[" SC("standard", DEF, YES) "]"};
    admission_outcome_t o;
    json_object *root = review(&f, "UPDATE", SPEC("{\"size\":\"1Gi\"}"), SPEC("{\"size\":\"2Gi\"}"), &o);
    CU_ASSERT_EQUAL(f.calls, 1);
    CU_ASSERT_STRING_EQUAL(f.cls, "(default)");
    CU_ASSERT(o.allowed);
    json_object_put(root);
    /* unset counts as 1Gi */
    root = review(&f, "UPDATE", SPEC("{}"), SPEC("{\"size\":\"3Gi\"}"), &o);
    CU_ASSERT_EQUAL(f.calls, 2);
    CU_ASSERT(o.allowed);
    json_object_put(root);
}

static void test_review_read_error_fails_closed(void)
{
    fake_reader_t f = {.err = "storageclasses.storage.k8s.io \"gone\" not found"};
    admission_outcome_t o;
    json_object *root = review(&f, "UPDATE", SPEC("{\"size\":\"1Gi\",\"storageClass\":\"gone\"}"),
                               SPEC("{\"size\":\"2Gi\",\"storageClass\":\"gone\"}"), &o);
    CU_ASSERT_EQUAL(f.calls, 1);
    CU_ASSERT_FALSE(o.allowed);
    CU_ASSERT_EQUAL(o.code, 403);
    CU_ASSERT(strstr(o.message, "StorageClass \"gone\" could not be read to check allowVolumeExpansion: "
                                "storageclasses.storage.k8s.io \"gone\" not found; the change may be retried") !=
              NULL);
    json_object_put(root);
}

/* Only a growth that passes every other rule asks the reader: every other review stays
 * free of API calls. */
static void test_review_reader_only_for_growth(void)
{
    static const struct {
        const char *op, *old_spec, *new_spec;
        int allowed;
    } cases[] = {
        {"CREATE", SPEC("{\"size\":\"1Gi\"}"), SPEC("{\"size\":\"2Gi\"}"), 1},
        {"UPDATE", SPEC("{\"size\":\"2Gi\"}"), SPEC("{\"size\":\"2Gi\"}"), 1},
        {"UPDATE", SPEC("{\"size\":\"1Gi\"}"), SPEC("{\"size\":\"1024Mi\"}"), 1},
        {"UPDATE", SPEC("{\"size\":\"2Gi\"}"), SPEC("{\"size\":\"1Gi\"}"), 0},           /* shrink: rdc_spec */
        {"UPDATE", SPEC("{\"size\":\"1Gi\"}"), "{\"size\":3,\"image\":\"re dis\"}", 0},   /* invalid */
        {"UPDATE", SPEC("{\"size\":\"1Gi\"}"), "{\"size\":4,\"image\":\"redis\"}", 1},    /* another field */
        {"UPDATE", "{\"mode\":\"Cluster\",\"size\":6,\"image\":\"redis\",\"storage\":{\"size\":\"1Gi\"}}",
         "{\"mode\":\"Cluster\",\"size\":6,\"image\":\"redis\",\"storage\":{\"size\":\"2Gi\"}}", 0},
        {"DELETE", SPEC("{\"size\":\"1Gi\"}"), SPEC("{\"size\":\"2Gi\"}"), 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fake_reader_t f = {.err = "must not be asked"};
        admission_outcome_t o;
        json_object *root = review(&f, cases[i].op, cases[i].old_spec, cases[i].new_spec, &o);
        CU_ASSERT_EQUAL(f.calls, 0);
        CU_ASSERT_EQUAL(o.allowed, cases[i].allowed);
        if (f.calls || o.allowed != cases[i].allowed)
            fprintf(stderr, "\ncase %zu: calls %d, allowed %d: %s\n", i, f.calls, o.allowed, o.message);
        json_object_put(root);
    }
    /* no reader at all (webhookd without any Kubernetes configuration): growth allowed */
    admission_outcome_t o;
    json_object *root = review(NULL, "UPDATE", SPEC("{\"size\":\"1Gi\",\"storageClass\":\"fixed\"}"),
                               SPEC("{\"size\":\"2Gi\",\"storageClass\":\"fixed\"}"), &o);
    CU_ASSERT(o.allowed);
    json_object_put(root);
}

/* ---- classcheck_read_start against a fake API server ------------------------------------------ */

static char last_url[256];

static int sc_handler(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                      buf_t *out)
{
    (void)user, (void)c, (void)body;
    snprintf(last_url, sizeof(last_url), "%s %s", method, url);
    if (!strcmp(url, "/apis/storage.k8s.io/v1/storageclasses/slow")) {
        /* answered 300 ms late (the server's own thread), so that a loop turn of the test
         * cannot end the read before it cancels it */
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        buf_puts(out, "{\"kind\":\"StorageClass\",");
        buf_puts(out, SC("slow", "", NO) + 1);
        return 200;
    }
    if (!strcmp(url, "/apis/storage.k8s.io/v1/storageclasses/fixed")) {
        buf_puts(out, "{\"kind\":\"StorageClass\",");
        buf_puts(out, SC("fixed", "", NO) + 1);
        return 200;
    }
    if (!strcmp(url, "/apis/storage.k8s.io/v1/storageclasses")) {
        buf_puts(out, "{\"kind\":\"StorageClassList\",\"metadata\":{\"resourceVersion\":\"7\"},\"items\":["
                      SC("standard", DEF, YES) "]}");
        return 200;
    }
    buf_puts(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
                  "\"storageclasses.storage.k8s.io \\\"gone\\\" not found\",\"reason\":\"NotFound\",\"code\":404}");
    return 404;
}

typedef struct {
    int done;
    json_object *read;
    char err[512];
} got_t;

static void on_read(const json_object *read, const char *err, void *arg)
{
    got_t *g = arg;
    g->done++;
    g->read = read ? json_object_get((json_object *)read) : NULL;
    snprintf(g->err, sizeof(g->err), "%s", err ? err : "");
}

/* Read cls through r and run base until the read ends: 0 with *out (the caller puts it),
 * or -1 with err. The answer never comes from inside classcheck_read_start. */
static int read_on_loop(classcheck_reader_t *r, struct event_base *base, const char *cls, json_object **out,
                        char *err, size_t errlen)
{
    got_t g = {0};
    classcheck_read_t *rd = classcheck_read_start(r, cls, on_read, &g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
    CU_ASSERT_EQUAL(g.done, 0);
    while (!g.done)
        event_base_loop(base, EVLOOP_ONCE);
    CU_ASSERT_EQUAL(g.done, 1);
    *out = g.read;
    snprintf(err, errlen, "%s", g.err);
    return g.read ? 0 : -1;
}

/* The fake API server of sc_handler and a client of it. */
typedef struct {
    fake_api_t api;
    kube_config_t *cfg;
    kube_client_t *client;
} api_t;

static void api_start(api_t *a)
{
    memset(a, 0, sizeof(*a));
    kube_client_opts_t co = fake_api_opts(0);
    fake_api_open(&a->api, sc_handler, NULL, &co, &a->cfg, &a->client);
}

static void api_stop(api_t *a)
{
    fake_api_close(&a->api, &a->cfg, &a->client);
}

static void test_read_through_the_api(void)
{
    struct event_base *base = event_base_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(base);
    api_t a;
    api_start(&a);
    classcheck_reader_t *r = classcheck_reader_new(base, a.client, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    json_object *out = NULL;
    char err[512] = "";
    CU_ASSERT_EQUAL(read_on_loop(r, base, "fixed", &out, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(last_url, "GET /apis/storage.k8s.io/v1/storageclasses/fixed");
    CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(out, "metadata"), "name"), "fixed");
    json_object_put(out);
    CU_ASSERT_EQUAL(read_on_loop(r, base, NULL, &out, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(last_url, "GET /apis/storage.k8s.io/v1/storageclasses");
    CU_ASSERT(json_object_is_type(out, json_type_array) && json_object_array_length(out) == 1);
    json_object_put(out);
    CU_ASSERT_EQUAL(read_on_loop(r, base, "gone", &out, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT(strstr(err, "not found") != NULL);
    classcheck_reader_destroy(&r);
    CU_ASSERT_PTR_NULL(r);
    /* a configuration without a client: every read fails with the reason */
    r = classcheck_reader_new(base, NULL, "the Kubernetes configuration of webhookd did not load: x");
    CU_ASSERT_EQUAL(read_on_loop(r, base, "fixed", &out, err, sizeof(err)), -1);
    CU_ASSERT_STRING_EQUAL(err, "the Kubernetes configuration of webhookd did not load: x");
    classcheck_reader_destroy(&r);
    api_stop(&a);
    event_base_free(base);
}

/* A read abandoned (cancelled, or its reader destroyed) never calls done, and frees
 * everything (the ASan run checks). */
static void test_read_cancelled(void)
{
    struct event_base *base = event_base_new();
    api_t a;
    api_start(&a);
    classcheck_reader_t *r = classcheck_reader_new(base, a.client, NULL);
    got_t g = {0};
    /* (not "fixed": its answer could end the read within the loop's turn, and the cancel
     * would then free it a second time: the test's race, once in 40 runs) */
    classcheck_read_t *rd = classcheck_read_start(r, "slow", on_read, &g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
    event_base_loop(base, EVLOOP_NONBLOCK);
    CU_ASSERT_EQUAL_FATAL(g.done, 0);
    classcheck_read_cancel(&rd);
    CU_ASSERT_PTR_NULL(rd);
    classcheck_reader_t *none = classcheck_reader_new(base, NULL, "no client");
    classcheck_read_start(none, "fixed", on_read, &g); /* its failure not yet delivered */
    classcheck_reader_destroy(&none);
    /* left in flight for destroy (the loop does not run between: it cannot have ended) */
    CU_ASSERT_PTR_NOT_NULL(classcheck_read_start(r, NULL, on_read, &g));
    classcheck_reader_destroy(&r);
    event_base_loop(base, EVLOOP_NONBLOCK);
    CU_ASSERT_EQUAL(g.done, 0);
    json_object_put(g.read);
    api_stop(&a);
    event_base_free(base);
}

static const cu_entry_t tests[] = {
    CU_SUITE("classcheck: decide"),
    {"growth vs allowVolumeExpansion, defaults, read errors", test_decide_table},
    CU_SUITE("classcheck: review"),
    {"growth on a class without expansion refused (403)", test_review_refuses_growth_on_fixed_class},
    {"growth on an expandable default class allowed", test_review_allows_growth_on_expandable_default},
    {"a class that cannot be read: refused, may be retried", test_review_read_error_fails_closed},
    {"only a growth asks the reader; no reader: allowed", test_review_reader_only_for_growth},
    CU_SUITE("classcheck: read"),
    {"GET a class, LIST for the default, 404, no client", test_read_through_the_api},
    {"a read cancelled, or in flight when the reader goes: no done, nothing leaks", test_read_cancelled},
};

CU_MAIN(tests)
