/* Unit tests of informerd's handling of objects cached in minimal form (toolarge.h): the
 * reason they are counted under, which one keeps a RedisCluster from being reconciled,
 * and the bounded FIFO of their Warning Events. */
#include "../../informerd/toolarge.h"
#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OWNER "RedisCluster"

/* A RedisCluster default/<name> (uid u-<name>), with a 2000-byte spec.image when big and a
 * deletionTimestamp when deleting. */
static json_object *rc(const char *name, const char *rv, int big, int deleting)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"kind\":\"RedisCluster\",\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"resourceVersion\":\"%s\"%s},\"spec\":{\"image\":\"%0*d\"}}",
             name, name, rv, deleting ? ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"" : "", big ? 2000 : 1, 0);
    json_object *o = json_tokener_parse(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

/* A child of kind default/<name> controlled by the RedisCluster <name>, with 2000 bytes of
 * data when big. */
static json_object *child(const char *kind, const char *name, const char *rv, int big)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"kind\":\"%s\",\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\",\"uid\":\"c-%s-%s\","
             "\"resourceVersion\":\"%s\",\"ownerReferences\":[{\"kind\":\"RedisCluster\",\"name\":\"%s\","
             "\"uid\":\"u-%s\",\"controller\":true}]},\"data\":{\"x\":\"%0*d\"}}",
             kind, name, kind, name, rv, name, name, big ? 2000 : 1, 0);
    json_object *o = json_tokener_parse(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

static void put(cache_t *c, const char *kind, json_object *o)
{
    char err[256];
    CU_ASSERT_EQUAL(cache_upsert(c, kind, o, NULL, err, sizeof(err)), 0);
    json_object_put(o);
}

static void test_blocker(void)
{
    static const char *const kinds[] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget", "Pod"};
    cache_t *c = cache_new(OWNER);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        CU_ASSERT_EQUAL(cache_add_kind(c, kinds[i]), 0);
    cache_set_max_object_bytes(c, 1024);
    put(c, OWNER, rc("a", "1", 0, 0));
    const cache_item_t *a = cache_lookup(c, OWNER, "default/a");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NULL(toolarge_blocker(c, a));
    /* Whole children block nothing; a big one of each kind the plan reads does. */
    for (size_t i = 0; i < 4; i++) {
        put(c, kinds[i], child(kinds[i], "a", "2", 0));
        CU_ASSERT_PTR_NULL(toolarge_blocker(c, cache_lookup(c, OWNER, "default/a")));
        put(c, kinds[i], child(kinds[i], "a", "3", 1));
        const cache_item_t *b = toolarge_blocker(c, cache_lookup(c, OWNER, "default/a"));
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        CU_ASSERT_STRING_EQUAL(b->kind, kinds[i]);
        CU_ASSERT_STRING_EQUAL(b->key, "default/a");
        CU_ASSERT_STRING_EQUAL(toolarge_reason(b), "max_object_bytes");
        put(c, kinds[i], child(kinds[i], "a", "4", 0));
        CU_ASSERT_PTR_NULL(toolarge_blocker(c, cache_lookup(c, OWNER, "default/a")));
    }
    /* A big Pod does not stop the reconcile (the plan reads pods in compact form). */
    put(c, "Pod", child("Pod", "a", "5", 1));
    CU_ASSERT_PTR_NULL(toolarge_blocker(c, cache_lookup(c, OWNER, "default/a")));
    /* The RedisCluster itself in minimal form: it is its own blocker... */
    put(c, OWNER, rc("a", "6", 1, 0));
    a = cache_lookup(c, OWNER, "default/a");
    CU_ASSERT_PTR_EQUAL(toolarge_blocker(c, a), a);
    /* ...but never while it is being deleted, nor are its children then. */
    put(c, "ConfigMap", child("ConfigMap", "a", "7", 1));
    put(c, OWNER, rc("a", "8", 1, 1));
    CU_ASSERT_PTR_NULL(toolarge_blocker(c, cache_lookup(c, OWNER, "default/a")));
    cache_destroy(&c);
}

static void test_reason(void)
{
    cache_item_t it = {.truncated = 1};
    CU_ASSERT_STRING_EQUAL(toolarge_reason(&it), "response_cap");
    it.truncated = 5000;
    CU_ASSERT_STRING_EQUAL(toolarge_reason(&it), "max_object_bytes");
}

/* What the drain saw, as "kind key;kind key;". */
static void record(void *arg, const char *kind, const char *key)
{
    char *out = arg;
    size_t l = strlen(out);
    snprintf(out + l, 512 - l, "%s %s;", kind, key);
}

static void test_fifo(void)
{
    CU_ASSERT_PTR_NULL(toolarge_new(0));
    toolarge_t *q = toolarge_new(3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    char seen[512] = "";
    CU_ASSERT_EQUAL(toolarge_drain(q, 4, record, seen), 0);
    CU_ASSERT_EQUAL(toolarge_push(q, "RedisCluster", "ns/a"), 0);
    CU_ASSERT_EQUAL(toolarge_push(q, "ConfigMap", "ns/b"), 0);
    CU_ASSERT_EQUAL(toolarge_push(q, "Service", "ns/c"), 0);
    /* Full: the fourth is refused, the three kept. */
    CU_ASSERT_EQUAL(toolarge_push(q, "StatefulSet", "ns/d"), 1);
    CU_ASSERT_EQUAL(toolarge_count(q), 3);
    /* A few per turn, oldest first. */
    CU_ASSERT_EQUAL(toolarge_drain(q, 2, record, seen), 2);
    CU_ASSERT_STRING_EQUAL(seen, "RedisCluster ns/a;ConfigMap ns/b;");
    CU_ASSERT_EQUAL(toolarge_count(q), 1);
    /* Around the ring. */
    CU_ASSERT_EQUAL(toolarge_push(q, "Pod", "ns/e"), 0);
    CU_ASSERT_EQUAL(toolarge_push(q, "Secret", "ns/f"), 0);
    seen[0] = '\0';
    CU_ASSERT_EQUAL(toolarge_drain(q, 10, record, seen), 3);
    CU_ASSERT_STRING_EQUAL(seen, "Service ns/c;Pod ns/e;Secret ns/f;");
    CU_ASSERT_EQUAL(toolarge_count(q), 0);
    /* Destroyed with entries in it: freed (the sanitizers' run checks). */
    CU_ASSERT_EQUAL(toolarge_push(q, "Pod", "ns/g"), 0);
    toolarge_destroy(&q);
    CU_ASSERT_PTR_NULL(q);
    toolarge_destroy(&q);
}

static const cu_entry_t tests[] = {
    CU_SUITE("informerd objects too large"),
    {"the object that keeps a RedisCluster from its reconcile", test_blocker},
    {"the reason label", test_reason},
    {"a bounded FIFO of Warning Events to write", test_fifo},
};

CU_MAIN(tests)
