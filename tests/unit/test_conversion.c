/* Unit tests of the RedisCluster conversion (webhookd/conversion.h): a table of object
 * pairs v1alpha1 <-> v1 checked both ways, refusals with their messages, the round-trip
 * property over generated objects in both directions, the ConversionReview envelope
 * (order, uid, Success/Failure, bad requests, arbitrary bytes) and the metrics.
 */
#include "buf.h"
#include "conversion.h"
#include "cu_table.h"
#include "json_at.h"
#include "jsonx.h"
#include "metrics.h"
#include "metrics_text.h"
#include "text_assert.h"
#include "text_case.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A "\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"RedisCluster\","
#define V "\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
#define META "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"7\"}"
#define SPEC_A "\"size\":3,\"image\":\"redis\",\"version\":\"7.2\",\"storage\":{\"size\":\"1Gi\"}"
#define ANN(text)                                                                                              \
    "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\","                                              \
    "\"annotations\":{\"cache.example.com/v1-fields\":" text "}}"
#define PLAIN JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE

/* ---- Helpers ---------------------------------------------------------------------------- */

/* Convert; on failure print why. Returns the new object or NULL. */
static json_object *conv(const json_object *in, const char *to)
{
    json_object *out = NULL;
    char err[1024];
    if (conversion_convert(in, to, &out, err, sizeof(err))) {
        fprintf(stderr, "conversion to %s refused: %s\n  object: %s\n", to, err,
                json_object_to_json_string_ext((json_object *)in, PLAIN));
        return NULL;
    }
    return out;
}

static int same(const json_object *a, const json_object *b, const char *what)
{
    if (json_object_equal((json_object *)a, (json_object *)b))
        return 1;
    fprintf(stderr, "%s differ:\n  have %s\n  want %s\n", what, json_object_to_json_string_ext((json_object *)a, PLAIN),
            json_object_to_json_string_ext((json_object *)b, PLAIN));
    return 0;
}

static const char *annotation_of(const json_object *o)
{
    return jsonx_str(jsonx_get(jsonx_get(o, "metadata"), "annotations"), CONVERSION_ANNOTATION);
}

/* ---- The table of pairs ------------------------------------------------------------------ */

typedef struct {
    const char *what;
    const char *v1alpha1;
    const char *v1;
} pair_t;

static const pair_t pairs[] = {
    {"a v1alpha1 cluster is Standalone with AOF in v1, and no annotation comes back",
     "{" A META ",\"spec\":{" SPEC_A "}}",
     "{" V META ",\"spec\":{" SPEC_A ",\"mode\":\"Standalone\",\"persistence\":\"aof\"}}"},
    {"every v1-only field, spec and status, kept in the annotation in the table's order",
     "{" A ANN("\"{\\\"spec\\\":{\\\"mode\\\":\\\"Replication\\\",\\\"auth\\\":{\\\"secretRef\\\":"
               "{\\\"name\\\":\\\"pw\\\",\\\"key\\\":\\\"password\\\"}},"
               "\\\"persistence\\\":\\\"rdb\\\",\\\"failover\\\":{\\\"downAfter\\\":\\\"3s\\\","
               "\\\"minReplicasToWrite\\\":1,\\\"minReplicasMaxLag\\\":10}},"
               "\\\"status\\\":{\\\"primary\\\":\\\"cache-0\\\","
               "\\\"nodes\\\":[{\\\"pod\\\":\\\"cache-0\\\",\\\"ip\\\":\\\"10.0.0.1\\\",\\\"role\\\":\\\"primary\\\","
               "\\\"linkUp\\\":true,\\\"offset\\\":1234,\\\"lagBytes\\\":0}]}}\"")
     ",\"spec\":{" SPEC_A "},\"status\":{\"phase\":\"Running\",\"replicas\":3,\"readyReplicas\":3}}",
     "{" V "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},"
     "\"spec\":{" SPEC_A ",\"persistence\":\"rdb\",\"mode\":\"Replication\",\"failover\":{\"downAfter\":\"3s\","
     "\"minReplicasToWrite\":1,\"minReplicasMaxLag\":10},"
     "\"auth\":{\"secretRef\":{\"name\":\"pw\",\"key\":\"password\"}}},"
     "\"status\":{\"nodes\":[{\"pod\":\"cache-0\",\"ip\":\"10.0.0.1\",\"role\":\"primary\",\"linkUp\":true,"
     "\"offset\":1234,\"lagBytes\":0}],\"phase\":\"Running\",\"replicas\":3,\"readyReplicas\":3,"
     "\"primary\":\"cache-0\"}}"},
    {"a v1 object without mode or persistence records that they are absent",
     "{" A ANN("\"{}\"") ",\"spec\":{" SPEC_A "}}",
     "{" V "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},\"spec\":{" SPEC_A "}}"},
    {"Standalone without persistence is not the implied record",
     "{" A ANN("\"{\\\"spec\\\":{\\\"mode\\\":\\\"Standalone\\\"}}\"") ",\"spec\":{" SPEC_A "}}",
     "{" V "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},"
     "\"spec\":{" SPEC_A ",\"mode\":\"Standalone\"}}"},
    {"no spec: nothing implied, nothing recorded",
     "{" A META "}",
     "{" V META "}"},
    {"a spec that is not an object is carried as is",
     "{" A META ",\"spec\":\"junk\"}",
     "{" V META ",\"spec\":\"junk\"}"},
    {"other annotations stay; the map goes when the annotation was its only member",
     "{" A "\"metadata\":{\"name\":\"c\",\"annotations\":{\"a\":\"1\",\"cache.example.com/v1-fields\":"
     "\"{\\\"spec\\\":{\\\"mode\\\":\\\"Replication\\\",\\\"persistence\\\":\\\"aof\\\"}}\","
     "\"b\":\"2\"}},\"spec\":{\"size\":1}}",
     "{" V "\"metadata\":{\"name\":\"c\",\"annotations\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"size\":1,"
     "\"mode\":\"Replication\",\"persistence\":\"aof\"}}"},
    {"a v1 object carrying the annotation itself keeps it through v1alpha1",
     "{" A ANN("\"{\\\"spec\\\":{\\\"mode\\\":\\\"Replication\\\",\\\"persistence\\\":\\\"aof\\\"},\\\"annotation\\\":"
               "\\\"{\\\\\\\"copied\\\\\\\":1}\\\"}\"") ",\"spec\":{\"size\":1}}",
     "{" V ANN("\"{\\\"copied\\\":1}\"") ",\"spec\":{\"size\":1,\"mode\":\"Replication\",\"persistence\":\"aof\"}}"},
    {"null values are values",
     "{" A ANN("\"{\\\"spec\\\":{\\\"mode\\\":\\\"Standalone\\\",\\\"auth\\\":null,\\\"persistence\\\":\\\"aof\\\"},"
               "\\\"status\\\":{\\\"nodes\\\":null}}\"") ",\"spec\":{\"size\":1},\"status\":{}}",
     "{" V "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},\"spec\":{\"size\":1,\"mode\":\"Standalone\","
     "\"auth\":null,\"persistence\":\"aof\"},\"status\":{\"nodes\":null}}"},
    {"fields unknown to both versions pass untouched",
     "{" A META ",\"extra\":[1,{\"x\":null}],\"spec\":{" SPEC_A ",\"future\":{\"a\":\"/b\"}},"
     "\"status\":{\"phase\":\"Pending\","
     "\"conditions\":[{\"type\":\"ReplicationHealthy\",\"status\":\"Unknown\"}]}}",
     "{" V META ",\"extra\":[1,{\"x\":null}],\"spec\":{" SPEC_A ",\"future\":{\"a\":\"/b\"},\"mode\":\"Standalone\","
     "\"persistence\":\"aof\"},\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"ReplicationHealthy\","
     "\"status\":\"Unknown\"}]}}"},
    {"status fields of v1 without a spec",
     "{" A ANN("\"{\\\"status\\\":{\\\"primary\\\":\\\"c-1\\\"}}\"") ",\"status\":{\"phase\":\"Running\"}}",
     "{" V "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},"
     "\"status\":{\"phase\":\"Running\",\"primary\":\"c-1\"}}"},
};

static void test_pairs_both_ways(void)
{
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        json_object *a = parse(pairs[i].v1alpha1), *v = parse(pairs[i].v1);
        json_object *up = conv(a, CONVERSION_V1), *down = conv(v, CONVERSION_V1ALPHA1);
        CU_ASSERT_PTR_NOT_NULL(up);
        CU_ASSERT_PTR_NOT_NULL(down);
        if (!same(up, v, pairs[i].what) || !same(down, a, pairs[i].what))
            CU_FAIL(pairs[i].what);
        /* The canonical annotation text: byte for byte what the table says. */
        const char *want = annotation_of(a), *have = annotation_of(down);
        CU_ASSERT((!want && !have) || (want && have && !strcmp(want, have)));
        /* Same version: a no-op. */
        json_object *a2 = conv(a, CONVERSION_V1ALPHA1), *v2 = conv(v, CONVERSION_V1);
        CU_ASSERT(same(a2, a, "same-version v1alpha1"));
        CU_ASSERT(same(v2, v, "same-version v1"));
        json_object_put(a2);
        json_object_put(v2);
        json_object_put(up);
        json_object_put(down);
        json_object_put(a);
        json_object_put(v);
    }
}

static void test_input_is_not_modified(void)
{
    const char *text = pairs[1].v1;
    json_object *v = parse(text), *copy = parse(text), *out = conv(v, CONVERSION_V1ALPHA1);
    CU_ASSERT_PTR_NOT_NULL(out);
    CU_ASSERT(json_object_equal(v, copy));
    json_object_put(out);
    json_object_put(v);
    json_object_put(copy);
}

/* ---- Refusals ----------------------------------------------------------------------------- */

typedef struct {
    const char *object;
    const char *to;
    const char *message; /* a part of the error */
} refusal_t;

static const refusal_t refusals[] = {
    {"[1,2]", CONVERSION_V1, "must be a RedisCluster object, have an array"},
    {"{" V META "}", "cache.example.com/v2", "desiredAPIVersion \"cache.example.com/v2\": must be"},
    {"{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"Memcached\"," META "}", CONVERSION_V1ALPHA1,
     "kind: must be RedisCluster, have \"Memcached\""},
    {"{\"apiVersion\":\"cache.example.com/v1\"," META "}", CONVERSION_V1ALPHA1,
     "kind: must be RedisCluster, have null"},
    {"{\"apiVersion\":\"cache.example.com/v9\",\"kind\":\"RedisCluster\"," META "}", CONVERSION_V1,
     "apiVersion \"cache.example.com/v9\": must be cache.example.com/v1alpha1 or cache.example.com/v1"},
    {"{" V "\"spec\":{}}", CONVERSION_V1ALPHA1, "metadata: required, an object, have null"},
    {"{" V "\"metadata\":{\"annotations\":[]}}", CONVERSION_V1ALPHA1, "metadata.annotations: must be an object"},
    {"{" A "\"metadata\":{\"annotations\":{\"cache.example.com/v1-fields\":5}}}", CONVERSION_V1,
     "must be a string, have a number"},
    {"{" A ANN("\"{\\\"spec\\\":\"") "}", CONVERSION_V1, "not JSON: unexpected end of input"},
    {"{" A ANN("\"[]\"") "}", CONVERSION_V1, "must be a JSON object, have an array"},
    {"{" A ANN("\"{} x\"") "}", CONVERSION_V1, "not JSON"},
    {"{" A ANN("\"{\\\"spec\\\":{\\\"size\\\":9}}\"") ",\"spec\":{\"size\":1}}", CONVERSION_V1,
     "spec.size: not a field that only v1 has"},
    {"{" A ANN("\"{\\\"metadata\\\":{}}\"") "}", CONVERSION_V1, "metadata: not a member of the record"},
    {"{" A ANN("\"{\\\"spec\\\":[]}\"") "}", CONVERSION_V1, "spec: must be an object, have an array"},
    {"{" A ANN("\"{\\\"annotation\\\":1}\"") "}", CONVERSION_V1, "annotation: must be a string"},
    {"{" A ANN("\"{\\\"spec\\\":{\\\"mode\\\":\\\"Replication\\\"}}\"") ",\"spec\":7}", CONVERSION_V1,
     "spec: must be an object to hold spec.mode, have a number"},
};

static void test_refusals_say_why(void)
{
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        json_object *o = parse(refusals[i].object), *out = (json_object *)1;
        char err[1024] = "";
        int rc = conversion_convert(o, refusals[i].to, &out, err, sizeof(err));
        CU_ASSERT_EQUAL(rc, -1);
        CU_ASSERT_PTR_NULL(out);
        if (!strstr(err, refusals[i].message)) {
            fprintf(stderr, "refusal %zu: have \"%s\", want a part \"%s\"\n", i, err, refusals[i].message);
            CU_FAIL("refusal message");
        }
        json_object_put(o);
    }
    /* An oversized record. */
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"spec\":{\"mode\":\"");
    for (int i = 0; i < (CONVERSION_MAX_RECORD / 8) + 1; i++)
        buf_puts(&b, "xxxxxxxx");
    buf_puts(&b, "\"}}");
    json_object *o = parse("{" A META "}"), *ann = json_object_new_object(), *out = NULL;
    json_object_object_add(ann, CONVERSION_ANNOTATION, json_object_new_string(buf_str(&b)));
    json_object_object_add(jsonx_get(o, "metadata"), "annotations", ann);
    char err[256];
    CU_ASSERT_EQUAL(conversion_convert(o, CONVERSION_V1, &out, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "more than"));
    json_object_put(o);
    buf_free(&b);
}

/* ---- The round-trip property over generated objects --------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static int one_in(unsigned n)
{
    return rnd() % n == 0;
}

static json_object *rnd_string(void)
{
    static const char *const pieces[] = {"a", "Z", "0", "-", "/", "\\", "\"", "\n", "\t", "é", "€", "𝄞", " ", "{", "}",
                                         "cache.example.com/v1-fields", "Standalone", "aof", "3s", "\x01"};
    char s[128];
    size_t len = 0, n = rnd() % 12;
    for (size_t i = 0; i < n; i++) {
        const char *p = pieces[rnd() % (sizeof(pieces) / sizeof(pieces[0]))];
        size_t pl = strlen(p);
        if (len + pl >= sizeof(s))
            break;
        memcpy(s + len, p, pl);
        len += pl;
    }
    s[len] = '\0';
    return json_object_new_string_len(s, (int)len);
}

static json_object *rnd_value(int depth)
{
    switch (rnd() % (depth > 3 ? 6 : 8)) {
    case 0: return NULL;
    case 1: return json_object_new_boolean((int)(rnd() & 1));
    case 2: return json_object_new_int64((int64_t)rnd() >> (rnd() % 64));
    case 3: return json_object_new_double((double)(int64_t)(rnd() % 100000) / 8.0);
    case 4:
    case 5: return rnd_string();
    case 6: {
        json_object *a = json_object_new_array();
        for (size_t i = rnd() % 4; i > 0; i--)
            json_object_array_add(a, rnd_value(depth + 1));
        return a;
    }
    default: {
        json_object *o = json_object_new_object();
        for (size_t i = rnd() % 4; i > 0; i--) {
            char key[16];
            snprintf(key, sizeof(key), "k%u", (unsigned)(rnd() % 20));
            json_object_object_add(o, key, rnd_value(depth + 1));
        }
        return o;
    }
    }
}

/* Random members with keys from names (each maybe) into o. */
static void rnd_members(json_object *o, const char *const *names, size_t n, unsigned one_in_n)
{
    for (size_t i = 0; i < n; i++)
        if (one_in(one_in_n))
            json_object_object_add(o, names[i], rnd_value(1));
}

static const char *const SHARED_SPEC[] = {"size", "image", "version", "config", "storage", "unknownSpecField"};
static const char *const SHARED_STATUS[] = {"phase", "replicas", "readyReplicas", "observedGeneration", "selector",
                                            "conditions"};
static const char *const V1_SPEC[] = {"mode", "auth", "persistence", "failover"};
static const char *const V1_STATUS[] = {"primary", "nodes"};

/* A plausible value for a v1-only field (mostly well-typed, sometimes anything). */
static json_object *v1_value(const char *field)
{
    if (one_in(5))
        return rnd_value(1);
    if (!strcmp(field, "mode"))
        return json_object_new_string(one_in(2) ? "Replication" : "Standalone");
    if (!strcmp(field, "persistence"))
        return json_object_new_string((const char *[]){"none", "rdb", "aof"}[rnd() % 3]);
    if (!strcmp(field, "auth"))
        return json_tokener_parse("{\"secretRef\":{\"name\":\"redis-pw\",\"key\":\"password\"}}");
    if (!strcmp(field, "failover"))
        return json_tokener_parse("{\"downAfter\":\"3s\",\"minReplicasToWrite\":1,\"minReplicasMaxLag\":10}");
    if (!strcmp(field, "primary"))
        return json_object_new_string("cache-0");
    json_object *nodes = json_object_new_array();
    for (size_t i = rnd() % 4; i > 0; i--) {
        json_object *n = json_tokener_parse("{\"pod\":\"cache-1\",\"ip\":\"10.1.2.3\",\"role\":\"replica\","
                                            "\"linkUp\":true,\"lagBytes\":12}");
        json_object_object_add(n, "offset", json_object_new_int64((int64_t)(rnd() >> 2)));
        json_object_array_add(nodes, n);
    }
    return nodes;
}

/* Common to both versions: metadata (no empty or null annotations map: the API server
 * never has one), shared spec and status fields, unknown members. spec and status are
 * usually objects, sometimes absent or another type. */
static json_object *rnd_base(const char *api_version, int with_v1_fields)
{
    json_object *o = json_object_new_object(), *meta = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string(api_version));
    json_object_object_add(o, "kind", json_object_new_string("RedisCluster"));
    json_object_object_add(meta, "name", json_object_new_string("cache"));
    if (one_in(2))
        json_object_object_add(meta, "namespace", rnd_string());
    if (one_in(2)) {
        json_object *ann = json_object_new_object();
        json_object_object_add(ann, "a", rnd_string());
        if (one_in(3))
            json_object_object_add(ann, "kubectl.kubernetes.io/last-applied-configuration", rnd_string());
        json_object_object_add(meta, "annotations", ann);
    }
    if (one_in(3))
        json_object_object_add(meta, "labels", rnd_value(2));
    json_object_object_add(o, "metadata", meta);
    if (one_in(5))
        json_object_object_add(o, "topLevelExtra", rnd_value(1));
    for (int part = 0; part < 2; part++) {
        const char *name = part ? "status" : "spec";
        unsigned r = (unsigned)(rnd() % 10);
        if (r == 0)
            continue; /* absent */
        if (r == 1) {
            json_object_object_add(o, name, rnd_value(3)); /* anything */
            continue;
        }
        json_object *s = json_object_new_object();
        if (part)
            rnd_members(s, SHARED_STATUS, 6, 2);
        else
            rnd_members(s, SHARED_SPEC, 6, 2);
        if (with_v1_fields) {
            const char *const *f = part ? V1_STATUS : V1_SPEC;
            size_t n = part ? 2 : 4;
            for (size_t i = 0; i < n; i++)
                if (one_in(2))
                    json_object_object_add(s, f[i], v1_value(f[i]));
        }
        json_object_object_add(o, name, s);
    }
    return o;
}

/* The record as the webhook writes it: members in the table's order. */
static json_object *canonical_record(json_object *spec_fields, json_object *status_fields, json_object *annotation)
{
    json_object *r = json_object_new_object();
    if (spec_fields)
        json_object_object_add(r, "spec", spec_fields);
    if (status_fields)
        json_object_object_add(r, "status", status_fields);
    if (annotation)
        json_object_object_add(r, "annotation", annotation);
    return r;
}

/* Each of the n v1-only fields in names with probability 1/2, as an object; NULL when
 * none was drawn. */
static json_object *rnd_v1_fields(const char *const *names, size_t n)
{
    json_object *f = json_object_new_object();
    for (size_t i = 0; i < n; i++)
        if (one_in(2))
            json_object_object_add(f, names[i], v1_value(names[i]));
    if (json_object_object_length(f))
        return f;
    json_object_put(f);
    return NULL;
}

/* A v1alpha1 object that may carry a canonical annotation, written here independently of
 * the code under test: the record's fields only where the object has a spec / status
 * object to hold them, and never the record a missing annotation stands for. */
static json_object *rnd_v1alpha1(void)
{
    json_object *o = rnd_base(CONVERSION_V1ALPHA1, 0);
    if (one_in(3))
        return o;
    json_object *spec = jsonx_get(o, "spec"), *status = jsonx_get(o, "status"), *sf = NULL, *stf = NULL, *an = NULL;
    if (spec && json_object_is_type(spec, json_type_object))
        sf = rnd_v1_fields(V1_SPEC, 4);
    if (status && json_object_is_type(status, json_type_object))
        stf = rnd_v1_fields(V1_STATUS, 2);
    if (one_in(6))
        an = rnd_string();
    json_object *rec = canonical_record(sf, stf, an);
    json_object *implied = json_tokener_parse(spec && json_object_is_type(spec, json_type_object)
                                                  ? "{\"spec\":{\"mode\":\"Standalone\",\"persistence\":\"aof\"}}"
                                                  : "{}");
    if (!json_object_equal(rec, implied)) {
        json_object *meta = jsonx_get(o, "metadata"), *ann = jsonx_get(meta, "annotations");
        if (!ann) {
            ann = json_object_new_object();
            json_object_object_add(meta, "annotations", ann);
        }
        json_object_object_add(ann, CONVERSION_ANNOTATION,
                               json_object_new_string(json_object_to_json_string_ext(rec, PLAIN)));
    }
    json_object_put(implied);
    json_object_put(rec);
    return o;
}

static json_object *rnd_v1(void)
{
    json_object *o = rnd_base(CONVERSION_V1, 1);
    if (one_in(8)) { /* a v1 object that carries the annotation (copied from a v1alpha1 view) */
        json_object *meta = jsonx_get(o, "metadata"), *ann = jsonx_get(meta, "annotations");
        if (!ann) {
            ann = json_object_new_object();
            json_object_object_add(meta, "annotations", ann);
        }
        json_object_object_add(ann, CONVERSION_ANNOTATION, rnd_string());
    }
    return o;
}

/* Nothing of v1 is left in a v1alpha1 object (v1alpha1's schema would prune it). */
static int has_no_v1_fields(const json_object *o)
{
    json_object *spec = jsonx_get(o, "spec"), *status = jsonx_get(o, "status");
    for (size_t i = 0; i < 4; i++)
        if (spec && json_object_is_type(spec, json_type_object) && json_object_object_get_ex(spec, V1_SPEC[i], NULL))
            return 0;
    for (size_t i = 0; i < 2; i++)
        if (status && json_object_is_type(status, json_type_object) &&
            json_object_object_get_ex(status, V1_STATUS[i], NULL))
            return 0;
    return 1;
}

#define ROUNDS 10000

static void test_round_trip_v1_v1alpha1_v1(void)
{
    int failures = 0, annotated = 0;
    for (int i = 0; i < ROUNDS && failures < 5; i++) {
        json_object *v = rnd_v1(), *down = conv(v, CONVERSION_V1ALPHA1);
        json_object *back = down ? conv(down, CONVERSION_V1) : NULL;
        if (!down || !back || !has_no_v1_fields(down) || !same(back, v, "v1 -> v1alpha1 -> v1"))
            failures++;
        annotated += annotation_of(down) != NULL;
        /* Converting the result again gives the same v1alpha1 text (a stable view). */
        json_object *again = back ? conv(back, CONVERSION_V1ALPHA1) : NULL;
        if (!again || !same(again, down, "second v1 -> v1alpha1"))
            failures++;
        json_object_put(again);
        json_object_put(back);
        json_object_put(down);
        json_object_put(v);
    }
    CU_ASSERT_EQUAL(failures, 0);
    /* The generator exercised both outcomes. */
    CU_ASSERT(annotated > ROUNDS / 4);
    CU_ASSERT(annotated < ROUNDS);
}

static void test_round_trip_v1alpha1_v1_v1alpha1(void)
{
    int failures = 0, annotated = 0;
    for (int i = 0; i < ROUNDS && failures < 5; i++) {
        json_object *a = rnd_v1alpha1(), *up = conv(a, CONVERSION_V1);
        json_object *back = up ? conv(up, CONVERSION_V1ALPHA1) : NULL;
        annotated += annotation_of(a) != NULL;
        if (!up || !back || !same(back, a, "v1alpha1 -> v1 -> v1alpha1"))
            failures++;
        /* The canonical annotation comes back byte for byte. */
        const char *want = annotation_of(a), *have = back ? annotation_of(back) : NULL;
        if ((want || have) && (!want || !have || strcmp(want, have))) {
            fprintf(stderr, "annotation text changed:\n  have %s\n  want %s\n", have ? have : "(none)",
                    want ? want : "(none)");
            failures++;
        }
        /* A v1alpha1 object without the annotation is Standalone with AOF in v1. */
        json_object *spec = jsonx_get(up, "spec");
        if (up && !want && spec && json_object_is_type(spec, json_type_object) &&
            (!jsonx_str(spec, "mode") || strcmp(jsonx_str(spec, "mode"), "Standalone")))
            failures++;
        /* The annotation never shows in v1, unless v1 itself carried one. */
        json_object_put(back);
        json_object_put(up);
        json_object_put(a);
    }
    CU_ASSERT_EQUAL(failures, 0);
    CU_ASSERT(annotated > ROUNDS / 4);
    CU_ASSERT(annotated < ROUNDS);
}

/* Objects made by down-converting generated v1 objects are also v1alpha1 objects: up and
 * down again is the identity on them. */
static void test_round_trip_from_webhook_annotations(void)
{
    int failures = 0;
    for (int i = 0; i < ROUNDS / 2 && failures < 5; i++) {
        json_object *v = rnd_v1(), *a = conv(v, CONVERSION_V1ALPHA1);
        json_object *up = a ? conv(a, CONVERSION_V1) : NULL, *back = up ? conv(up, CONVERSION_V1ALPHA1) : NULL;
        if (!back || !same(back, a, "down(v1) -> v1 -> v1alpha1"))
            failures++;
        json_object_put(back);
        json_object_put(up);
        json_object_put(a);
        json_object_put(v);
    }
    CU_ASSERT_EQUAL(failures, 0);
}

/* ---- The review ----------------------------------------------------------------------------- */

typedef struct {
    int rc;
    conversion_outcome_t o;
    json_object *root, *response, *result;
} answer_t;

static answer_t ask(const char *body, size_t len)
{
    answer_t a;
    memset(&a, 0, sizeof(a));
    char *out = NULL;
    a.rc = conversion_review(body, len, &out, &a.o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    a.root = json_tokener_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a.root);
    a.response = jsonx_get(a.root, "response");
    a.result = jsonx_get(a.response, "result");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a.result);
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.root, "kind"), "ConversionReview");
    free(out);
    return a;
}

static answer_t ask_str(const char *body)
{
    return ask(body, strlen(body));
}

static char *review(const char *api_version, const char *uid, const char *desired, const char *objects)
{
    buf_t b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"apiVersion\":\"%s\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"%s\","
                   "\"desiredAPIVersion\":\"%s\",\"objects\":%s}}",
               api_version, uid, desired, objects);
    return buf_detach(&b);
}

static void test_review_converts_in_order(void)
{
    char *body = review("apiextensions.k8s.io/v1", "705ab4f5-6393-11e8", CONVERSION_V1,
                        "[{" A "\"metadata\":{\"name\":\"one\"},\"spec\":{\"size\":1}},"
                        "{" V "\"metadata\":{\"name\":\"two\"},\"spec\":{\"size\":2,\"mode\":\"Replication\"}},"
                        "{" A "\"metadata\":{\"name\":\"three\"},\"spec\":{\"size\":3}}]");
    answer_t a = ask_str(body);
    CU_ASSERT_EQUAL(a.rc, 0);
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.root, "apiVersion"), "apiextensions.k8s.io/v1");
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.response, "uid"), "705ab4f5-6393-11e8");
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.result, "status"), "Success");
    json_object *objs = jsonx_get(a.response, "convertedObjects");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(objs), 3);
    static const char *const names[] = {"one", "two", "three"};
    static const char *const modes[] = {"Standalone", "Replication", "Standalone"};
    for (size_t i = 0; i < 3; i++) {
        json_object *o = json_object_array_get_idx(objs, i);
        CU_ASSERT_STRING_EQUAL(jsonx_str(o, "apiVersion"), CONVERSION_V1);
        CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(o, "metadata"), "name"), names[i]);
        CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(o, "spec"), "mode"), modes[i]);
    }
    CU_ASSERT(a.o.success && !a.o.bad_request && a.o.code == 200);
    CU_ASSERT_EQUAL(a.o.objects, 3);
    CU_ASSERT_EQUAL(a.o.up, 2);
    CU_ASSERT_EQUAL(a.o.same, 1);
    CU_ASSERT_EQUAL(a.o.down, 0);
    CU_ASSERT_STRING_EQUAL(a.o.desired, CONVERSION_V1);
    json_object_put(a.root);
    free(body);

    /* Down, with v1beta1 answered in kind; an empty list is a Success. */
    body = review("apiextensions.k8s.io/v1beta1", "u2", CONVERSION_V1ALPHA1,
                  "[{" V "\"metadata\":{\"name\":\"x\"},\"spec\":{\"size\":2,\"mode\":\"Replication\"}}]");
    a = ask_str(body);
    CU_ASSERT_EQUAL(a.rc, 0);
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.root, "apiVersion"), "apiextensions.k8s.io/v1beta1");
    json_object *o = json_object_array_get_idx(jsonx_get(a.response, "convertedObjects"), 0);
    CU_ASSERT_STRING_EQUAL(jsonx_str(o, "apiVersion"), CONVERSION_V1ALPHA1);
    CU_ASSERT_STRING_EQUAL(annotation_of(o), "{\"spec\":{\"mode\":\"Replication\"}}");
    CU_ASSERT_PTR_NULL(jsonx_get(jsonx_get(o, "spec"), "mode"));
    CU_ASSERT_EQUAL(a.o.down, 1);
    json_object_put(a.root);
    free(body);
    body = review("apiextensions.k8s.io/v1", "u3", CONVERSION_V1, "[]");
    a = ask_str(body);
    CU_ASSERT_EQUAL(a.rc, 0);
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.result, "status"), "Success");
    CU_ASSERT_EQUAL(json_object_array_length(jsonx_get(a.response, "convertedObjects")), 0);
    json_object_put(a.root);
    free(body);
}

static void test_review_failures(void)
{
    static const struct {
        const char *desired, *objects, *message;
    } cases[] = {
        {"cache.example.com/v2", "[]",
         "desiredAPIVersion \"cache.example.com/v2\": this webhook converts RedisClusters to "
         "cache.example.com/v1alpha1 or "
         "cache.example.com/v1"},
        {CONVERSION_V1, "[{" A "\"metadata\":{\"name\":\"ok\"}},{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                        "\"metadata\":{\"name\":\"cm\",\"namespace\":\"ns\"}}]",
         "objects[1] (ns/cm): kind: must be RedisCluster, have \"ConfigMap\""},
        {CONVERSION_V1, "[7]", "objects[0]: must be a RedisCluster object, have a number"},
        {CONVERSION_V1,
         "[{" A "\"metadata\":{\"name\":\"bad\",\"annotations\":{\"cache.example.com/v1-fields\":\"{\"}}}]",
         "objects[0] (bad): metadata.annotations[\"cache.example.com/v1-fields\"]: not JSON"},
        {CONVERSION_V1ALPHA1, "[{\"apiVersion\":\"cache.example.com/v3\",\"kind\":\"RedisCluster\",\"metadata\":{}}]",
         "objects[0]: apiVersion \"cache.example.com/v3\": must be"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *body = review("apiextensions.k8s.io/v1", "uid-f", cases[i].desired, cases[i].objects);
        answer_t a = ask_str(body);
        CU_ASSERT_EQUAL(a.rc, 0);
        CU_ASSERT_STRING_EQUAL(jsonx_str(a.response, "uid"), "uid-f");
        CU_ASSERT_STRING_EQUAL(jsonx_str(a.result, "status"), "Failure");
        CU_ASSERT_EQUAL(json_object_get_int(jsonx_get(a.result, "code")), 422);
        CU_ASSERT_STRING_EQUAL(jsonx_str(a.result, "reason"), "Invalid");
        CU_ASSERT_EQUAL(json_object_array_length(jsonx_get(a.response, "convertedObjects")), 0);
        const char *msg = jsonx_str(a.result, "message");
        if (!msg || !strstr(msg, cases[i].message)) {
            fprintf(stderr, "case %zu: have \"%s\", want a part \"%s\"\n", i, msg ? msg : "(none)", cases[i].message);
            CU_FAIL("failure message");
        }
        CU_ASSERT(!a.o.success && !a.o.bad_request && a.o.code == 422);
        CU_ASSERT_STRING_EQUAL(a.o.message, msg ? msg : "");
        json_object_put(a.root);
        free(body);
    }
}

static void test_malformed_reviews_are_bad_requests(void)
{
    static const text_case_t cases[] = {
        {"", "body: empty"},
        {"{", "not JSON: unexpected end of input"},
        {"{} {}", "body: not JSON"},
        {"42", "must be a ConversionReview object, have a number"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"x\"}}",
         "apiVersion: must be apiextensions.k8s.io/v1"},
        {"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", "kind: must be ConversionReview"},
        {"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\"}", "request: required, an object"},
        {"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"objects\":[]}}",
         "request.uid: required"},
        {"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"u\","
         "\"objects\":{}}}",
         "request.objects: required, an array, have an object"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        answer_t a = ask_str(cases[i].in);
        CU_ASSERT_EQUAL(a.rc, 1);
        CU_ASSERT_STRING_EQUAL(jsonx_str(a.result, "status"), "Failure");
        CU_ASSERT_EQUAL(json_object_get_int(jsonx_get(a.result, "code")), 400);
        CU_ASSERT_STRING_EQUAL(jsonx_str(a.result, "reason"), "BadRequest");
        const char *msg = jsonx_str(a.result, "message");
        if (!msg || !strstr(msg, cases[i].want)) {
            fprintf(stderr, "case %zu: have \"%s\", want a part \"%s\"\n", i, msg ? msg : "(none)", cases[i].want);
            CU_FAIL("bad request message");
        }
        CU_ASSERT(a.o.bad_request && a.o.code == 400);
        json_object_put(a.root);
    }
    /* The uid is echoed as soon as it is known, even in a bad request. */
    answer_t a = ask_str("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":"
                         "{\"uid\":\"known\",\"objects\":null}}");
    CU_ASSERT_STRING_EQUAL(jsonx_str(a.response, "uid"), "known");
    json_object_put(a.root);
    /* Nesting past the cap. */
    buf_t b;
    buf_init(&b, 0);
    for (int i = 0; i < CONVERSION_MAX_DEPTH + 2; i++)
        buf_puts(&b, "[");
    a = ask(b.data, b.len);
    CU_ASSERT_EQUAL(a.rc, 1);
    json_object_put(a.root);
    buf_free(&b);
    /* A NULL body. */
    char *out = NULL;
    CU_ASSERT_EQUAL(conversion_review(NULL, 0, &out, NULL), 1);
    CU_ASSERT_PTR_NOT_NULL(out);
    free(out);
}

/* Every prefix of a valid review and random byte flips of it: an answer, never a crash
 * (the sanitizers watch), the same answer twice. */
static void test_review_survives_any_bytes(void)
{
    char *body = review("apiextensions.k8s.io/v1", "u-any", CONVERSION_V1ALPHA1,
                        "[{" V "\"metadata\":{\"name\":\"a\",\"annotations\":{\"cache.example.com/v1-fields\":\"{}\"}},"
                        "\"spec\":{\"size\":3,\"mode\":\"Replication\",\"failover\":{\"downAfter\":\"3s\"}},"
                        "\"status\":{\"nodes\":[{\"pod\":\"a-0\"}]}}]");
    size_t len = strlen(body);
    int answered = 0;
    for (size_t n = 0; n <= len; n++) {
        char *out = NULL;
        int rc = conversion_review(body, n, &out, NULL);
        json_object *root = out ? json_tokener_parse(out) : NULL;
        answered += rc >= 0 && root && jsonx_get(jsonx_get(root, "response"), "result") ? 1 : 0;
        json_object_put(root);
        free(out);
    }
    CU_ASSERT_EQUAL(answered, (int)len + 1);
    char *copy = malloc(len);
    for (int i = 0; i < 3000; i++) {
        memcpy(copy, body, len);
        for (int k = (int)(rnd() % 4); k >= 0; k--)
            copy[rnd() % len] = (char)(rnd() & 0xFF);
        char *out = NULL, *out2 = NULL;
        int rc = conversion_review(copy, len, &out, NULL), rc2 = conversion_review(copy, len, &out2, NULL);
        CU_ASSERT(rc >= 0 && rc == rc2 && out && out2 && !strcmp(out, out2));
        json_object *root = out ? json_tokener_parse(out) : NULL;
        CU_ASSERT_PTR_NOT_NULL(jsonx_get(jsonx_get(root, "response"), "result"));
        json_object_put(root);
        free(out);
        free(out2);
    }
    free(copy);
    free(body);
}

static void test_metrics_count_reviews(void)
{
    conversion_metrics_register();
    metric_family_t *req = metrics_counter(metrics_default(), "webhook_conversion_requests_total", "", "result");
    metric_family_t *obj = metrics_counter(metrics_default(), "webhook_conversion_objects_total", "", "from,to");
    double ok0 = metric_value(req, METRIC_LABELS("Success")), fail0 = metric_value(req, METRIC_LABELS("Failure")),
           bad0 = metric_value(req, METRIC_LABELS("BadRequest"));
    double up0 = metric_value(obj, METRIC_LABELS("v1alpha1", "v1"));
    char *bodies[3] = {
        review("apiextensions.k8s.io/v1", "m1", CONVERSION_V1, "[{" A "\"metadata\":{}},{" A "\"metadata\":{}}]"),
        review("apiextensions.k8s.io/v1", "m2", "x/y", "[]"),
        strdup("nope"),
    };
    for (int i = 0; i < 3; i++) {
        char *out = NULL;
        conversion_outcome_t o;
        int rc = conversion_review(bodies[i], strlen(bodies[i]), &out, &o);
        conversion_metrics_observe(rc, &o);
        free(out);
        free(bodies[i]);
    }
    CU_ASSERT_EQUAL(metric_value(req, METRIC_LABELS("Success")), ok0 + 1);
    CU_ASSERT_EQUAL(metric_value(req, METRIC_LABELS("Failure")), fail0 + 1);
    CU_ASSERT_EQUAL(metric_value(req, METRIC_LABELS("BadRequest")), bad0 + 1);
    CU_ASSERT_EQUAL(metric_value(obj, METRIC_LABELS("v1alpha1", "v1")), up0 + 2);
    char *text = exposition_of(metrics_default());
    ASSERT_TEXT_HAS(text, "webhook_conversion_requests_total{result=\"Success\"}",
                    "webhook_conversion_objects_total{from=\"v1\",to=\"v1alpha1\"} 0");
    free(text);
    metrics_default_free();
}

static const cu_entry_t tests[] = {
    CU_SUITE("conversion: table"),
    {"pairs convert both ways, annotation text exact", test_pairs_both_ways},
    {"the input object is not modified", test_input_is_not_modified},
    {"refusals say why", test_refusals_say_why},
    CU_SUITE("conversion: round trip"),
    {"v1 -> v1alpha1 -> v1 is the identity (10k objects)", test_round_trip_v1_v1alpha1_v1},
    {"v1alpha1 -> v1 -> v1alpha1 is the identity (10k objects)", test_round_trip_v1alpha1_v1_v1alpha1},
    {"the webhook's own annotations round-trip", test_round_trip_from_webhook_annotations},
    CU_SUITE("conversion: review"),
    {"objects converted in order, uid echoed", test_review_converts_in_order},
    {"unknown version and bad objects fail with a message", test_review_failures},
    {"malformed reviews are bad requests", test_malformed_reviews_are_bad_requests},
    {"any bytes: an answer, deterministic", test_review_survives_any_bytes},
    {"metrics count reviews and objects", test_metrics_count_reviews},
};

CU_MAIN(tests)
