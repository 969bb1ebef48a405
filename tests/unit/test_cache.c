/* Unit tests of informerd's object cache: upserts, the owner index and child -> owner key
 * mapping, relist diffing, refusal of bad input, sequence numbers and snapshots. */
#include "../../informerd/cache.h"
#include "cu_table.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OWNER "RedisCluster"

/* A parsed object from printf-style JSON (single quotes stand for double quotes). */
static json_object *obj(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_object *obj(const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    for (char *p = text; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_object *o = json_tokener_parse(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

/* A namespaced object with name, resourceVersion and uid. */
static json_object *simple(const char *kind, const char *ns, const char *name, const char *rv,
                           const char *uid)
{
    return obj("{'kind':'%s','metadata':{'namespace':'%s','name':'%s',"
               "'resourceVersion':'%s','uid':'%s'}}",
               kind, ns, name, rv, uid);
}

/* A child of kind with a controller reference to the RedisCluster owner_name/owner_uid. */
static json_object *child(const char *kind, const char *name, const char *rv,
                          const char *owner_name, const char *owner_uid)
{
    return obj("{'kind':'%s','metadata':{'namespace':'default','name':'%s',"
               "'resourceVersion':'%s','uid':'uid-%s',"
               "'ownerReferences':[{'apiVersion':'v1','kind':'Other','name':'x','uid':'ux',"
               "'controller':false},"
               "{'apiVersion':'cache.example.com/v1alpha1','kind':'RedisCluster',"
               "'name':'%s','uid':'%s','controller':true,'blockOwnerDeletion':true}]}}",
               kind, name, rv, name, owner_name, owner_uid);
}

/* Delta recorder. */
typedef struct {
    int n;
    cache_change_t type[64];
    char key[64][64];
    char kind[64][32];
    char rv[64][16];
    int64_t gen[64], old_gen[64];
    uint64_t seq[64];
    int unread[64];
    int late[64];
} rec_t;

static void record(void *ud, const cache_delta_t *d)
{
    rec_t *r = ud;
    if (r->n >= 64)
        return;
    int i = r->n++;
    r->type[i] = d->type;
    r->seq[i] = d->seq;
    snprintf(r->key[i], sizeof(r->key[i]), "%s", d->item->key);
    snprintf(r->kind[i], sizeof(r->kind[i]), "%s", d->item->kind);
    snprintf(r->rv[i], sizeof(r->rv[i]), "%s",
             d->item->resource_version ? d->item->resource_version : "");
    r->gen[i] = d->item->generation;
    r->old_gen[i] = d->old_generation;
    r->unread[i] = d->unread_only;
    r->late[i] = d->late_only;
}

/* Index of the delta for key, or -1. */
static int find_delta(const rec_t *r, const char *key)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->key[i], key) == 0)
            return i;
    return -1;
}

static cache_t *new_cache(rec_t *r)
{
    cache_t *c = cache_new(OWNER);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(cache_add_kind(c, "ConfigMap"), 0);
    CU_ASSERT_EQUAL(cache_add_kind(c, "StatefulSet"), 0);
    CU_ASSERT_EQUAL(cache_add_kind(c, "ConfigMap"), 0); /* twice is harmless */
    if (r) {
        memset(r, 0, sizeof(*r));
        cache_set_delta_handler(c, record, r);
    }
    return c;
}

/* Upsert and drop our reference; returns the change (or -1 on error). */
static int put(cache_t *c, const char *kind, json_object *o)
{
    cache_change_t ch;
    char err[256];
    int rc = cache_upsert(c, kind, o, &ch, err, sizeof(err));
    json_object_put(o);
    return rc ? -1 : (int)ch;
}

/* metadata.<key> of an object's text (NULL: none) into out: the value itself (a string's
 * text), or with as_json its JSON. Returns out, or NULL when there is no such member. */
static const char *meta_field(const char *text, const char *key, int as_json, char *out, size_t outlen)
{
    json_object *o = text ? json_tokener_parse(text) : NULL, *m = NULL, *v = NULL;
    const char *res = NULL;
    if (o && json_object_object_get_ex(o, "metadata", &m) && json_object_object_get_ex(m, key, &v)) {
        snprintf(out, outlen, "%s",
                 as_json ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
                         : json_object_get_string(v));
        res = out;
    }
    json_object_put(o);
    return res;
}

/* metadata.resourceVersion of a cached object's text (in a static buffer), or NULL. */
static const char *rv_of(const char *json)
{
    static char out[64];
    return meta_field(json, "resourceVersion", 0, out, sizeof(out));
}

/* ---- upsert, delete ---- */

static void test_upsert_added_unchanged_modified(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    CU_ASSERT_EQUAL(cache_seq(c), 0);
    CU_ASSERT_EQUAL(put(c, OWNER, simple(OWNER, "default", "cache", "1", "u1")), CACHE_ADDED);
    CU_ASSERT_EQUAL(put(c, OWNER, simple(OWNER, "default", "cache", "1", "u1")),
                    CACHE_UNCHANGED);
    CU_ASSERT_EQUAL(put(c, OWNER, simple(OWNER, "default", "cache", "2", "u1")),
                    CACHE_MODIFIED);
    CU_ASSERT_EQUAL(r.n, 2);
    CU_ASSERT_EQUAL(r.type[0], CACHE_ADDED);
    CU_ASSERT_EQUAL(r.seq[0], 1);
    CU_ASSERT_EQUAL(r.type[1], CACHE_MODIFIED);
    CU_ASSERT_EQUAL(r.seq[1], 2);
    CU_ASSERT_STRING_EQUAL(r.key[1], "default/cache");
    CU_ASSERT_STRING_EQUAL(r.kind[1], OWNER);
    CU_ASSERT_STRING_EQUAL(r.rv[1], "2");
    CU_ASSERT_EQUAL(r.old_gen[1], 0); /* no metadata.generation in these objects */
    CU_ASSERT_EQUAL(cache_seq(c), 2);

    const cache_item_t *it = cache_lookup(c, OWNER, "default/cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(it);
    CU_ASSERT_STRING_EQUAL(it->resource_version, "2");
    CU_ASSERT_STRING_EQUAL(it->uid, "u1");
    CU_ASSERT_EQUAL(it->seq, 2);
    CU_ASSERT_PTR_EQUAL(cache_get_json(c, OWNER, "default/cache"), it->json);
    CU_ASSERT_EQUAL(strlen(it->json), it->json_len);
    CU_ASSERT_STRING_EQUAL(rv_of(it->json), "2");
    CU_ASSERT_PTR_EQUAL(cache_lookup_uid(c, OWNER, "u1"), it);
    CU_ASSERT_PTR_NULL(cache_get_json(c, OWNER, "default/other"));
    CU_ASSERT_PTR_NULL(cache_get_json(c, "ConfigMap", "default/cache"));
    CU_ASSERT_PTR_NULL(cache_get_json(c, "Pod", "default/cache"));
    CU_ASSERT_PTR_NULL(cache_get_parsed(c, "Pod", "default/cache"));

    /* Cluster-scoped objects (no namespace) are keyed by name; no rv = always modified. */
    CU_ASSERT_EQUAL(put(c, "ConfigMap", obj("{'metadata':{'name':'global'}}")), CACHE_ADDED);
    CU_ASSERT_EQUAL(put(c, "ConfigMap", obj("{'metadata':{'name':'global'}}")), CACHE_MODIFIED);
    CU_ASSERT_PTR_NOT_NULL(cache_get_json(c, "ConfigMap", "global"));
    CU_ASSERT_EQUAL(cache_count(c, NULL), 2);
    CU_ASSERT_EQUAL(cache_count(c, OWNER), 1);

    /* Delete: the handler sees the last object; a missing key is not an error. */
    cache_change_t ch = CACHE_ADDED;
    char err[256];
    CU_ASSERT_EQUAL(cache_delete(c, OWNER, "default/cache", &ch, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(ch, CACHE_DELETED);
    CU_ASSERT_EQUAL(r.type[r.n - 1], CACHE_DELETED);
    CU_ASSERT_STRING_EQUAL(r.rv[r.n - 1], "2");
    CU_ASSERT_PTR_NULL(cache_get_json(c, OWNER, "default/cache"));
    CU_ASSERT_PTR_NULL(cache_lookup_uid(c, OWNER, "u1"));
    CU_ASSERT_EQUAL(cache_delete(c, OWNER, "default/cache", &ch, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(ch, CACHE_UNCHANGED);
    CU_ASSERT_EQUAL(cache_delete(c, "Pod", "default/x", &ch, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "Pod"));
    CU_ASSERT_STRING_EQUAL(cache_change_name(CACHE_MODIFIED), "MODIFIED");
    CU_ASSERT_STRING_EQUAL(cache_change_name(CACHE_SYNC), "SYNC");
    cache_destroy(&c);
    CU_ASSERT_PTR_NULL(c);
    cache_destroy(&c);
}

/* The cache keeps compact text and the generation; a MODIFIED delta carries the old one,
 * so a spec change (new generation) can be told from a status write. */
static void test_text_and_generation(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    CU_ASSERT_EQUAL(put(c, OWNER, obj("{'metadata':{'name':'g','namespace':'default','resourceVersion':'1',"
                                      "'generation':3},  'spec': {'size': 1}}")),
                    CACHE_ADDED);
    const cache_item_t *it = cache_lookup(c, OWNER, "default/g");
    CU_ASSERT_PTR_NOT_NULL_FATAL(it);
    CU_ASSERT_EQUAL(it->generation, 3);
    CU_ASSERT_STRING_EQUAL(it->json, "{\"metadata\":{\"name\":\"g\",\"namespace\":\"default\","
                                     "\"resourceVersion\":\"1\",\"generation\":3},\"spec\":{\"size\":1}}");
    CU_ASSERT_EQUAL(r.gen[0], 3);
    CU_ASSERT_EQUAL(r.old_gen[0], 0);
    /* A status write: same generation. */
    put(c, OWNER, obj("{'metadata':{'name':'g','namespace':'default','resourceVersion':'2','generation':3},"
                      "'status':{'phase':'Running'}}"));
    CU_ASSERT_EQUAL(r.type[1], CACHE_MODIFIED);
    CU_ASSERT_EQUAL(r.old_gen[1], 3);
    CU_ASSERT_EQUAL(r.gen[1], 3);
    /* A spec change. */
    put(c, OWNER, obj("{'metadata':{'name':'g','namespace':'default','resourceVersion':'3','generation':4}}"));
    CU_ASSERT_EQUAL(r.old_gen[2], 3);
    CU_ASSERT_EQUAL(r.gen[2], 4);
    /* A generation that is not an integer counts as none. */
    put(c, OWNER, obj("{'metadata':{'name':'g','namespace':'default','resourceVersion':'4','generation':'5'}}"));
    CU_ASSERT_EQUAL(r.gen[3], 0);
    /* Slashes are not escaped (the text is what the API server sent, minus managedFields). */
    put(c, "ConfigMap", obj("{'metadata':{'name':'s','namespace':'default','resourceVersion':'1'},"
                            "'data':{'p':'/etc/redis'}}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(cache_get_json(c, "ConfigMap", "default/s"), "\"/etc/redis\""));
    cache_destroy(&c);
}

static void test_managed_fields_stripped(void)
{
    cache_t *c = new_cache(NULL);
    json_object *o = obj("{'metadata':{'name':'cm','namespace':'default','resourceVersion':'5',"
                         "'managedFields':[{'manager':'kubectl','operation':'Apply'}],"
                         "'labels':{'app':'redis'}},'data':{'k':'v'}}");
    CU_ASSERT_EQUAL(put(c, "ConfigMap", o), CACHE_ADDED);
    json_object *got = cache_get_parsed(c, "ConfigMap", "default/cm");
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    json_object *meta, *x;
    CU_ASSERT(json_object_object_get_ex(got, "metadata", &meta));
    CU_ASSERT_FALSE(json_object_object_get_ex(meta, "managedFields", &x));
    CU_ASSERT(json_object_object_get_ex(meta, "labels", &x));
    CU_ASSERT(json_object_object_get_ex(got, "data", &x));
    json_object_put(got);
    CU_ASSERT_PTR_NULL(strstr(cache_get_json(c, "ConfigMap", "default/cm"), "managedFields"));
    cache_destroy(&c);
}

/* ---- the owner index ---- */

static int collect_keys(void *ud, const cache_item_t *item)
{
    char *out = ud;
    size_t len = strlen(out);
    snprintf(out + len, 256 - len, "%s%s:%s", len ? "," : "", item->kind, item->key);
    return 0;
}

static void test_owner_index_and_key_mapping(void)
{
    cache_t *c = new_cache(NULL);
    char key[128], list[256] = "";
    put(c, OWNER, simple(OWNER, "default", "cache", "1", "owner-uid"));
    put(c, "ConfigMap", child("ConfigMap", "cache-config", "10", "cache", "owner-uid"));
    put(c, "StatefulSet", child("StatefulSet", "cache", "11", "cache", "owner-uid"));
    /* Owned by a controller of another kind only: not indexed, not ours. */
    json_object *stranger = obj("{'metadata':{'namespace':'default','name':'other','uid':'s1',"
                                "'resourceVersion':'3','ownerReferences':[{'kind':'Deployment',"
                                "'name':'d','uid':'d1','controller':true}]}}");
    CU_ASSERT_EQUAL(cache_upsert(c, "ConfigMap", stranger, NULL, NULL, 0), 0);

    CU_ASSERT_EQUAL(cache_children_of(c, "owner-uid", NULL, collect_keys, list), 2);
    ASSERT_TEXT_HAS(list, "ConfigMap:default/cache-config", "StatefulSet:default/cache");
    CU_ASSERT_EQUAL(cache_children_of(c, "owner-uid", "ConfigMap", NULL, NULL), 1);
    CU_ASSERT_EQUAL(cache_children_of(c, "owner-uid", "Service", NULL, NULL), 0);
    CU_ASSERT_EQUAL(cache_children_of(c, "nobody", NULL, NULL, NULL), 0);
    CU_ASSERT_STRING_EQUAL(cache_lookup(c, "ConfigMap", "default/cache-config")->owner_uid,
                           "owner-uid");

    /* Child -> owner key; the owner itself maps to its own key. */
    json_object *cm = cache_get_parsed(c, "ConfigMap", "default/cache-config");
    CU_ASSERT_EQUAL(cache_owner_key(c, "ConfigMap", cm, key, sizeof(key)), 0);
    CU_ASSERT_STRING_EQUAL(key, "default/cache");
    json_object_put(cm);
    json_object *own = cache_get_parsed(c, OWNER, "default/cache");
    CU_ASSERT_EQUAL(cache_owner_key(c, OWNER, own, key, sizeof(key)), 0);
    CU_ASSERT_STRING_EQUAL(key, "default/cache");
    json_object_put(own);
    /* The same from what the cache recorded. */
    CU_ASSERT_EQUAL(cache_item_owner_key(c, cache_lookup(c, "ConfigMap", "default/cache-config"), key, sizeof(key)),
                    0);
    CU_ASSERT_STRING_EQUAL(key, "default/cache");
    CU_ASSERT_EQUAL(cache_item_owner_key(c, cache_lookup(c, OWNER, "default/cache"), key, sizeof(key)), 0);
    CU_ASSERT_STRING_EQUAL(key, "default/cache");
    CU_ASSERT_EQUAL(cache_item_owner_key(c, cache_lookup(c, OWNER, "default/cache"), key, 5), -1);
    CU_ASSERT_EQUAL(cache_owner_key(c, "ConfigMap", stranger, key, sizeof(key)), 1);
    CU_ASSERT_STRING_EQUAL(key, "");
    json_object_put(stranger);
    CU_ASSERT_EQUAL(cache_owner_key(c, "ConfigMap", cm, key, 4), -1); /* too small */

    /* The UID decides when the owner is cached, even if the reference's name is stale. */
    json_object *stale = child("ConfigMap", "x", "1", "renamed", "owner-uid");
    CU_ASSERT_EQUAL(cache_owner_key(c, "ConfigMap", stale, key, sizeof(key)), 0);
    CU_ASSERT_STRING_EQUAL(key, "default/cache");
    json_object_put(stale);
    /* Owner not cached (yet): the reference's name in the child's namespace. */
    json_object *orphan = child("Service", "early", "1", "later", "uid-not-yet");
    CU_ASSERT_EQUAL(cache_owner_key(c, "Service", orphan, key, sizeof(key)), 0);
    CU_ASSERT_STRING_EQUAL(key, "default/later");
    json_object_put(orphan);
    CU_ASSERT_EQUAL(cache_owner_key(c, "ConfigMap", NULL, key, sizeof(key)), -1);

    /* A child that changes owner moves in the index; a deleted child leaves it. */
    put(c, "ConfigMap", child("ConfigMap", "cache-config", "12", "second", "second-uid"));
    CU_ASSERT_EQUAL(cache_children_of(c, "owner-uid", NULL, NULL, NULL), 1);
    CU_ASSERT_EQUAL(cache_children_of(c, "second-uid", NULL, NULL, NULL), 1);
    cache_delete(c, "StatefulSet", "default/cache", NULL, NULL, 0);
    CU_ASSERT_EQUAL(cache_children_of(c, "owner-uid", NULL, NULL, NULL), 0);
    /* The same owner again (same rv bump) keeps exactly one index entry. */
    put(c, "ConfigMap", child("ConfigMap", "cache-config", "13", "second", "second-uid"));
    CU_ASSERT_EQUAL(cache_children_of(c, "second-uid", NULL, NULL, NULL), 1);
    cache_destroy(&c);
}

/* The handler maps every delta to the owner key, as informerd does. */
typedef struct {
    cache_t *c;
    char keys[8][64];
    int n;
} mapper_t;

static void map_delta(void *ud, const cache_delta_t *d)
{
    mapper_t *m = ud;
    char key[64];
    if (m->n < 8 && cache_item_owner_key(m->c, d->item, key, sizeof(key)) == 0)
        snprintf(m->keys[m->n++], sizeof(m->keys[0]), "%s", key);
}

static void test_deltas_map_to_owner_keys(void)
{
    mapper_t m = {0};
    cache_t *c = new_cache(NULL);
    m.c = c;
    cache_set_delta_handler(c, map_delta, &m);
    put(c, "ConfigMap", child("ConfigMap", "cfg", "1", "cache", "u1")); /* owner not cached */
    put(c, OWNER, simple(OWNER, "prod", "cache", "1", "u1"));
    put(c, "ConfigMap", child("ConfigMap", "cfg", "2", "cache", "u1")); /* owner cached */
    cache_delete(c, "ConfigMap", "default/cfg", NULL, NULL, 0);
    CU_ASSERT_EQUAL(m.n, 4);
    CU_ASSERT_STRING_EQUAL(m.keys[0], "default/cache");
    CU_ASSERT_STRING_EQUAL(m.keys[1], "prod/cache");
    CU_ASSERT_STRING_EQUAL(m.keys[2], "prod/cache"); /* found by UID */
    CU_ASSERT_STRING_EQUAL(m.keys[3], "prod/cache"); /* a DELETED child too */
    cache_destroy(&c);
}

/* ---- relist ---- */

static void test_replace_diff(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    char err[256];
    put(c, "ConfigMap", simple("ConfigMap", "default", "same", "1", "a"));
    put(c, "ConfigMap", simple("ConfigMap", "default", "changed", "1", "b"));
    put(c, "ConfigMap", simple("ConfigMap", "default", "vanished", "1", "c"));
    put(c, OWNER, simple(OWNER, "default", "other-kind", "1", "o"));
    uint64_t before = cache_seq(c);
    r.n = 0;

    /* A list: items of a List usually carry no kind. */
    json_object *items = obj("[{'metadata':{'namespace':'default','name':'same','resourceVersion':'1','uid':'a'}},"
                             " {'metadata':{'namespace':'default','name':'changed','resourceVersion':'7','uid':'b'}},"
                             " {'metadata':{'namespace':'default','name':'new','resourceVersion':'8','uid':'d',"
                             "   'managedFields':[{}]}}]");
    CU_ASSERT_EQUAL(cache_replace(c, "ConfigMap", items, err, sizeof(err)), 0);
    json_object_put(items);
    CU_ASSERT_EQUAL(r.n, 3);
    int i = find_delta(&r, "default/changed");
    CU_ASSERT(i >= 0 && r.type[i] == CACHE_MODIFIED && strcmp(r.rv[i], "7") == 0);
    i = find_delta(&r, "default/new");
    CU_ASSERT(i >= 0 && r.type[i] == CACHE_ADDED);
    i = find_delta(&r, "default/vanished");
    CU_ASSERT(i >= 0 && r.type[i] == CACHE_DELETED);
    CU_ASSERT_EQUAL(find_delta(&r, "default/same"), -1);
    for (int k = 0; k < r.n; k++)
        CU_ASSERT_EQUAL(r.seq[k], before + 1 + (uint64_t)k);
    CU_ASSERT_EQUAL(cache_count(c, "ConfigMap"), 3);
    CU_ASSERT_PTR_NULL(cache_get_json(c, "ConfigMap", "default/vanished"));
    CU_ASSERT_PTR_NULL(cache_lookup_uid(c, "ConfigMap", "c"));
    CU_ASSERT_STRING_EQUAL(rv_of(cache_get_json(c, "ConfigMap", "default/changed")), "7");
    CU_ASSERT_PTR_NULL(strstr(cache_get_json(c, "ConfigMap", "default/new"), "managedFields"));
    /* Other kinds are untouched. */
    CU_ASSERT_PTR_NOT_NULL(cache_get_json(c, OWNER, "default/other-kind"));

    /* The same list again: nothing. An empty list: everything goes. */
    r.n = 0;
    items = obj("[{'metadata':{'namespace':'default','name':'same','resourceVersion':'1'}}]");
    CU_ASSERT_EQUAL(cache_replace(c, "ConfigMap", items, err, sizeof(err)), 0);
    json_object_put(items);
    CU_ASSERT_EQUAL(r.n, 2); /* changed and new vanished */
    CU_ASSERT_EQUAL(r.type[0], CACHE_DELETED);
    CU_ASSERT_EQUAL(r.type[1], CACHE_DELETED);
    r.n = 0;
    items = obj("[]");
    CU_ASSERT_EQUAL(cache_replace(c, "ConfigMap", items, err, sizeof(err)), 0);
    json_object_put(items);
    CU_ASSERT_EQUAL(r.n, 1);
    CU_ASSERT_EQUAL(cache_count(c, "ConfigMap"), 0);
    cache_destroy(&c);
}

static void test_replace_10k(void)
{
    enum { N = 10000 };
    rec_t r;
    cache_t *c = new_cache(&r);
    char err[256];
    json_object *items = json_object_new_array();
    for (int i = 0; i < N; i++) {
        char name[32], uid[32];
        snprintf(name, sizeof(name), "cm-%05d", i);
        snprintf(uid, sizeof(uid), "u-%05d", i);
        json_object_array_add(items, simple("ConfigMap", "default", name, "1", uid));
    }
    CU_ASSERT_EQUAL(cache_replace(c, "ConfigMap", items, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cache_count(c, "ConfigMap"), N);
    CU_ASSERT_EQUAL(cache_seq(c), N);
    /* Relist with every tenth changed and the last hundred gone. */
    json_object *again = json_object_new_array();
    for (int i = 0; i < N - 100; i++) {
        char name[32], uid[32];
        snprintf(name, sizeof(name), "cm-%05d", i);
        snprintf(uid, sizeof(uid), "u-%05d", i);
        json_object_array_add(again, simple("ConfigMap", "default", name, i % 10 ? "1" : "2",
                                            uid));
    }
    CU_ASSERT_EQUAL(cache_replace(c, "ConfigMap", again, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cache_seq(c), N + (N - 100) / 10 + 100);
    CU_ASSERT_EQUAL(cache_count(c, "ConfigMap"), N - 100);
    json_object_put(items);
    json_object_put(again);
    cache_destroy(&c);
}

/* ---- bad input ---- */

static void test_bad_objects_refused(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    char err[256];
    cache_change_t ch;
    put(c, "ConfigMap", simple("ConfigMap", "default", "keep", "1", "k"));
    uint64_t seq = cache_seq(c);
    struct {
        const char *kind;
        const char *json; /* NULL = a NULL object */
        const char *want;  /* substring of the message */
    } cases[] = {
        {"ConfigMap", NULL, "ConfigMap: not a JSON object"},
        {"ConfigMap", "[1,2]", "ConfigMap: not a JSON object (array)"},
        {"ConfigMap", "'text'", "not a JSON object (string)"},
        {"ConfigMap", "{'data':{}}", "ConfigMap object without metadata"},
        {"ConfigMap", "{'metadata':'x'}", "ConfigMap object without metadata"},
        {"ConfigMap", "{'metadata':{'namespace':'default'}}", "ConfigMap object without metadata.name"},
        {"ConfigMap", "{'metadata':{'name':''}}", "without metadata.name"},
        {"ConfigMap", "{'metadata':{'name':7}}", "without metadata.name"},
        {"ConfigMap", "{'metadata':{'name':'keep','namespace':3}}",
         "ConfigMap keep: metadata.namespace is not a string"},
        {"ConfigMap", "{'kind':'Secret','metadata':{'name':'keep','namespace':'default','resourceVersion':'9'}}",
         "ConfigMap default/keep: kind is \"Secret\", expected ConfigMap"},
        {"ConfigMap", "{'kind':5,'metadata':{'name':'keep','namespace':'default'}}", "kind is not a string"},
        {"ConfigMap", "{'metadata':{'name':'keep','namespace':'default','resourceVersion':9}}",
         "ConfigMap default/keep: metadata.resourceVersion is not a string"},
        {"ConfigMap", "{'metadata':{'name':'keep','namespace':'default','uid':[]}}", "metadata.uid is not a string"},
        {"Pod", "{'metadata':{'name':'p','namespace':'default'}}", "kind Pod is not watched"},
        {NULL, "{'metadata':{'name':'p','namespace':'default'}}", "kind (null) is not watched"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *o = cases[i].json ? obj("%s", cases[i].json) : NULL;
        err[0] = '\0';
        ch = CACHE_ADDED;
        CU_ASSERT_EQUAL(cache_upsert(c, cases[i].kind, o, &ch, err, sizeof(err)), -1);
        CU_ASSERT_EQUAL(ch, CACHE_UNCHANGED);
        if (!strstr(err, cases[i].want))
            fprintf(stderr, "\ncase %zu: message \"%s\", want \"%s\"\n", i, err, cases[i].want);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].want));
        json_object_put(o);
    }
    /* Unchanged: same objects, same sequence, no deltas beyond the first. */
    CU_ASSERT_EQUAL(cache_seq(c), seq);
    CU_ASSERT_EQUAL(r.n, 1);
    CU_ASSERT_EQUAL(cache_count(c, NULL), 1);
    CU_ASSERT_STRING_EQUAL(rv_of(cache_get_json(c, "ConfigMap", "default/keep")), "1");
    /* err may be NULL. */
    CU_ASSERT_EQUAL(cache_upsert(c, "Pod", NULL, NULL, NULL, 0), -1);

    /* A list with one bad item, or a key twice, is refused whole. */
    const char *lists[][2] = {
        {"[{'metadata':{'name':'a','namespace':'default'}},{'metadata':{}}]",
         "ConfigMap list: items[1]: ConfigMap object without metadata.name"},
        {"[{'metadata':{'name':'a','namespace':'default'}},{'metadata':{'name':'a','namespace':'default'}}]",
         "ConfigMap list: items[1]: duplicate key default/a"},
        {"{'items':[]}", "ConfigMap list: items is not a JSON array (object)"},
    };
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        json_object *items = obj("%s", lists[i][0]);
        CU_ASSERT_EQUAL(cache_replace(c, "ConfigMap", items, err, sizeof(err)), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, lists[i][1]));
        json_object_put(items);
    }
    CU_ASSERT_EQUAL(cache_replace(c, "ConfigMap", NULL, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(cache_replace(c, "Pod", NULL, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(cache_seq(c), seq);
    CU_ASSERT_EQUAL(r.n, 1);
    CU_ASSERT_PTR_NOT_NULL(cache_get_json(c, "ConfigMap", "default/keep"));

    /* Malformed owner references are not errors: the object is just nobody's child. */
    CU_ASSERT_EQUAL(put(c, "ConfigMap", obj("{'metadata':{'name':'odd','namespace':'default',"
                                            "'ownerReferences':[1,{'controller':'yes','kind':'RedisCluster'},"
                                            "{'controller':true,'kind':'RedisCluster'}]}}")),
                    CACHE_ADDED);
    char key[64];
    json_object *odd = cache_get_parsed(c, "ConfigMap", "default/odd");
    CU_ASSERT_EQUAL(cache_owner_key(c, "ConfigMap", odd, key, sizeof(key)), 1);
    json_object_put(odd);
    CU_ASSERT_EQUAL(cache_item_owner_key(c, cache_lookup(c, "ConfigMap", "default/odd"), key, sizeof(key)), 1);
    CU_ASSERT_PTR_NULL(cache_new(""));
    CU_ASSERT_EQUAL(cache_add_kind(c, ""), -1);
    cache_destroy(&c);
}

/* A relist that arrives page by page: deltas as the pages come, deletions at the end. */
static void test_relist_in_pages(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    char err[256];
    put(c, "ConfigMap", obj("{'metadata':{'namespace':'d','name':'keep','resourceVersion':'1'}}"));
    put(c, "ConfigMap", obj("{'metadata':{'namespace':'d','name':'gone','resourceVersion':'1'}}"));
    put(c, "ConfigMap", obj("{'metadata':{'namespace':'d','name':'late','resourceVersion':'1'}}"));
    put(c, OWNER, obj("{'metadata':{'namespace':'d','name':'owner','resourceVersion':'1'}}"));
    r.n = 0;
    CU_ASSERT_EQUAL(cache_relist_begin(c, "ConfigMap", err, sizeof(err)), 0);
    json_object *p1 = obj("[{'metadata':{'namespace':'d','name':'keep','resourceVersion':'1'}},"
                          " {'metadata':{'namespace':'d','name':'new','resourceVersion':'5'}}]");
    CU_ASSERT_EQUAL(cache_relist_add(c, "ConfigMap", p1, err, sizeof(err)), 0);
    json_object_put(p1);
    CU_ASSERT_EQUAL(r.n, 1); /* ADDED new, at once */
    CU_ASSERT_EQUAL(r.type[0], CACHE_ADDED);
    /* A bad page is refused whole; what the earlier pages did stays. */
    json_object *bad = obj("[{'metadata':{'namespace':'d','name':'late','resourceVersion':'2'}}, 7]");
    CU_ASSERT_EQUAL(cache_relist_add(c, "ConfigMap", bad, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "items[1]"));
    json_object_put(bad);
    CU_ASSERT_EQUAL(r.n, 1);
    CU_ASSERT_STRING_EQUAL(rv_of(cache_get_json(c, "ConfigMap", "d/late")), "1");
    json_object *p2 = obj("[{'metadata':{'namespace':'d','name':'late','resourceVersion':'2'}}]");
    CU_ASSERT_EQUAL(cache_relist_add(c, "ConfigMap", p2, err, sizeof(err)), 0);
    json_object_put(p2);
    CU_ASSERT_EQUAL(r.n, 2);
    CU_ASSERT_EQUAL(r.type[1], CACHE_MODIFIED);
    CU_ASSERT_PTR_NOT_NULL(cache_get_json(c, "ConfigMap", "d/gone")); /* not before the end */
    CU_ASSERT_EQUAL(cache_relist_end(c, "ConfigMap", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(r.n, 3);
    CU_ASSERT_EQUAL(r.type[2], CACHE_DELETED);
    CU_ASSERT_STRING_EQUAL(r.key[2], "d/gone");
    CU_ASSERT_EQUAL(cache_count(c, "ConfigMap"), 3);
    CU_ASSERT_PTR_NOT_NULL(cache_get_json(c, OWNER, "d/owner")); /* other kinds untouched */
    /* Unknown kinds are errors. */
    CU_ASSERT_EQUAL(cache_relist_begin(c, "Pod", err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(cache_relist_add(c, "Pod", NULL, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(cache_relist_end(c, "Pod", err, sizeof(err)), -1);
    /* An empty relist empties the kind. */
    CU_ASSERT_EQUAL(cache_relist_begin(c, "ConfigMap", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cache_relist_end(c, "ConfigMap", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cache_count(c, "ConfigMap"), 0);
    cache_destroy(&c);
}

/* A work item's children: every kind present or null, whatever the objects' size. */
static void test_children_json(void)
{
    cache_t *c = new_cache(NULL);
    char big[12000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    put(c, "ConfigMap",
        obj("{'metadata':{'namespace':'d','name':'cache','resourceVersion':'1'},'data':{'redis.conf':'%s'}}", "small"));
    json_object *sts = json_object_new_object(), *md = json_object_new_object();
    json_object_object_add(md, "namespace", json_object_new_string("d"));
    json_object_object_add(md, "name", json_object_new_string("cache"));
    json_object_object_add(md, "resourceVersion", json_object_new_string("2"));
    json_object_object_add(sts, "metadata", md);
    json_object_object_add(sts, "pad", json_object_new_string(big)); /* a 12 KB StatefulSet */
    CU_ASSERT_EQUAL(put(c, "StatefulSet", sts), CACHE_ADDED);
    static const char *const kinds[] = {"ConfigMap", "Service", "StatefulSet"};
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL(cache_children_json(c, "d/cache", kinds, 2 + 1, &b), 0);
    json_object *got = json_tokener_parse(buf_str(&b));
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    json_object *x;
    CU_ASSERT(json_object_object_get_ex(got, "ConfigMap", &x) && json_object_is_type(x, json_type_object));
    CU_ASSERT(json_object_object_get_ex(got, "Service", &x) && x == NULL); /* present, null */
    CU_ASSERT(json_object_object_get_ex(got, "StatefulSet", &x) && json_object_is_type(x, json_type_object));
    CU_ASSERT_EQUAL(strlen(json_object_get_string(json_object_object_get(x, "pad"))), sizeof(big) - 1);
    json_object_put(got);
    /* A cap too small is an error, never a silently missing child. */
    buf_t small;
    buf_init(&small, 4096);
    CU_ASSERT_EQUAL(cache_children_json(c, "d/cache", kinds, 3, &small), -1);
    buf_free(&small);
    buf_free(&b);
    cache_destroy(&c);
}

/* ---- sequence numbers, snapshots, resync ---- */

typedef struct {
    int n;
    uint64_t max_seq;
} snap_t;

static int snap_visit(void *ud, const cache_item_t *item)
{
    snap_t *s = ud;
    s->n++;
    if (item->seq > s->max_seq)
        s->max_seq = item->seq;
    return 0;
}

static int stop_at_first(void *ud, const cache_item_t *item)
{
    (void)item;
    (*(int *)ud)++;
    return 1;
}

static void test_snapshot_and_resync(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    put(c, OWNER, simple(OWNER, "default", "a", "1", "ua"));
    put(c, "ConfigMap", simple("ConfigMap", "default", "a", "1", "ca"));
    put(c, "ConfigMap", simple("ConfigMap", "default", "b", "1", "cb"));
    put(c, "ConfigMap", simple("ConfigMap", "default", "b", "2", "cb"));

    /* A late subscriber: snapshot at S, then only deltas after S. */
    snap_t s = {0};
    uint64_t S = cache_snapshot(c, NULL, snap_visit, &s);
    CU_ASSERT_EQUAL(S, 4);
    CU_ASSERT_EQUAL(s.n, 3);
    CU_ASSERT(s.max_seq <= S);
    snap_t only = {0};
    CU_ASSERT_EQUAL(cache_snapshot(c, "ConfigMap", snap_visit, &only), 4);
    CU_ASSERT_EQUAL(only.n, 2);
    r.n = 0;
    put(c, "ConfigMap", simple("ConfigMap", "default", "c", "1", "cc"));
    CU_ASSERT_EQUAL(r.n, 1);
    CU_ASSERT_EQUAL(r.seq[0], S + 1);

    int visited = 0;
    CU_ASSERT_EQUAL(cache_foreach(c, NULL, stop_at_first, &visited), 1);
    CU_ASSERT_EQUAL(visited, 1);
    CU_ASSERT_EQUAL(cache_foreach(c, "StatefulSet", snap_visit, &s), 0);

    r.n = 0;
    CU_ASSERT_EQUAL(cache_resync(c, "ConfigMap"), 3);
    CU_ASSERT_EQUAL(r.n, 3);
    CU_ASSERT_EQUAL(r.type[0], CACHE_SYNC);
    CU_ASSERT_EQUAL(r.seq[2], S + 4);
    CU_ASSERT_EQUAL(cache_resync(c, NULL), 4);
    /* SYNC changes nothing: items keep the seq of their last change. */
    CU_ASSERT_EQUAL(cache_lookup(c, "ConfigMap", "default/b")->seq, 4);
    cache_destroy(&c);
}

/* ---- objects too large to keep ---- */

/* A RedisCluster with a spec.image of n bytes, a finalizer, a label and an annotation. */
static json_object *big_rc(const char *rv, size_t n, int deleting)
{
    json_object *o = obj("{'apiVersion':'cache.example.com/v1alpha1','kind':'RedisCluster','metadata':"
                         "{'namespace':'default','name':'big','uid':'ubig','resourceVersion':'%s',"
                         "'generation':3,%s'finalizers':['cache.example.com/finalizer'],"
                         "'labels':{'team':'a'},'annotations':{'note':'x'},"
                         "'managedFields':[{'manager':'kubectl'}]},'spec':{'size':3}}",
                         rv, deleting ? "'deletionTimestamp':'2026-01-01T00:00:00Z'," : "");
    json_object *spec = NULL;
    json_object_object_get_ex(o, "spec", &spec);
    char *image = malloc(n + 1);
    memset(image, 'r', n);
    image[n] = '\0';
    json_object_object_add(spec, "image", json_object_new_string(image));
    free(image);
    return o;
}

/* The JSON at metadata.<key> of text, or NULL (static buffer). */
static const char *meta_of(const char *text, const char *key)
{
    static char out[256];
    return meta_field(text, key, 1, out, sizeof(out));
}

static void test_max_object_bytes(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    cache_set_max_object_bytes(c, 4096);
    /* Under the bound: whole. */
    CU_ASSERT_EQUAL(put(c, OWNER, big_rc("1", 1000, 0)), CACHE_ADDED);
    const cache_item_t *it = cache_lookup(c, OWNER, "default/big");
    CU_ASSERT_PTR_NOT_NULL_FATAL(it);
    CU_ASSERT_EQUAL(it->truncated, 0);
    CU_ASSERT_EQUAL(it->deleting, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(it->json, "rrrrrrrr"));
    CU_ASSERT_PTR_NULL(strstr(it->json, CACHE_TRUNCATED_ANNOTATION));

    /* Over it: the minimal form, a MODIFIED delta like any change, its length recorded. */
    CU_ASSERT_EQUAL(put(c, OWNER, big_rc("2", 100000, 0)), CACHE_MODIFIED);
    it = cache_lookup(c, OWNER, "default/big");
    CU_ASSERT_PTR_NOT_NULL_FATAL(it);
    CU_ASSERT(it->truncated > 100000 && it->truncated < 101000);
    CU_ASSERT(it->json_len < 1024);
    ASSERT_TEXT_LACKS(it->json, "rrrrrrrr", "\"spec\"");
    CU_ASSERT_PTR_NULL(strstr(it->json, "team"));      /* labels go */
    CU_ASSERT_PTR_NULL(strstr(it->json, "note"));      /* other annotations go */
    CU_ASSERT_PTR_NULL(strstr(it->json, "kubectl"));   /* managedFields went first */
    CU_ASSERT_STRING_EQUAL(meta_of(it->json, "finalizers"), "[\"cache.example.com/finalizer\"]");
    CU_ASSERT_STRING_EQUAL(meta_of(it->json, "uid"), "\"ubig\"");
    CU_ASSERT_STRING_EQUAL(meta_of(it->json, "resourceVersion"), "\"2\"");
    ASSERT_TEXT_HAS(it->json, "\"kind\":\"RedisCluster\"", "\"apiVersion\":\"cache.example.com/v1alpha1\"");
    CU_ASSERT_PTR_NOT_NULL(strstr(meta_of(it->json, "annotations"), "over informerd's --max-object-bytes (4096)"));
    CU_ASSERT_EQUAL(it->generation, 3);
    CU_ASSERT_EQUAL(r.type[r.n - 1], CACHE_MODIFIED);
    CU_ASSERT_PTR_EQUAL(cache_lookup_uid(c, OWNER, "ubig"), it);

    /* Being deleted: the deletionTimestamp is kept and said. */
    CU_ASSERT_EQUAL(put(c, OWNER, big_rc("3", 100000, 1)), CACHE_MODIFIED);
    it = cache_lookup(c, OWNER, "default/big");
    CU_ASSERT_EQUAL(it->deleting, 1);
    CU_ASSERT_STRING_EQUAL(meta_of(it->json, "deletionTimestamp"), "\"2026-01-01T00:00:00Z\"");

    /* Small again: whole again. */
    CU_ASSERT_EQUAL(put(c, OWNER, big_rc("4", 10, 0)), CACHE_MODIFIED);
    it = cache_lookup(c, OWNER, "default/big");
    CU_ASSERT_EQUAL(it->truncated, 0);
    CU_ASSERT_EQUAL(it->deleting, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(it->json, "\"spec\""));

    /* A child over the bound is still indexed under its owner. */
    json_object *ch = child("ConfigMap", "cm", "5", "big", "ubig");
    char *data = calloc(1, 9000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    memset(data, 'd', 8999);
    json_object_object_add(ch, "data", json_object_new_string(data));
    free(data);
    CU_ASSERT_EQUAL(put(c, "ConfigMap", ch), CACHE_ADDED);
    it = cache_lookup(c, "ConfigMap", "default/cm");
    CU_ASSERT(it->truncated > 8999);
    CU_ASSERT_STRING_EQUAL(it->owner_uid, "ubig");
    char key[128];
    CU_ASSERT_EQUAL(cache_item_owner_key(c, it, key, sizeof(key)), 0);
    CU_ASSERT_STRING_EQUAL(key, "default/big");
    CU_ASSERT_PTR_NOT_NULL(strstr(it->json, "ownerReferences"));

    /* No bound: everything whole. */
    cache_set_max_object_bytes(c, 0);
    CU_ASSERT_EQUAL(put(c, OWNER, big_rc("6", 100000, 0)), CACHE_MODIFIED);
    CU_ASSERT_EQUAL(cache_lookup(c, OWNER, "default/big")->truncated, 0);
    cache_destroy(&c);
}

/* A StatefulSet of the owner "o" at rv with these status counts (ready, available) and
 * a ballast annotation of pad bytes. */
static json_object *counted_sts(const char *rv, int ready, int available, size_t pad)
{
    json_object *o = obj("{'kind':'StatefulSet','metadata':{'namespace':'default','name':'s','resourceVersion':'%s',"
                         "'uid':'uid-s','managedFields':[{'manager':'m%s'}],'ownerReferences':[{'kind':'RedisCluster',"
                         "'name':'o','uid':'uo','controller':true}]},'spec':{'replicas':3},'status':{'replicas':3,"
                         "'readyReplicas':%d,'availableReplicas':%d}}",
                         rv, rv, ready, available);
    char *ballast = calloc(1, pad + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ballast);
    memset(ballast, 'b', pad);
    json_object *meta = NULL;
    json_object_object_get_ex(o, "metadata", &meta);
    json_object *ann = json_object_new_object();
    json_object_object_add(ann, "ballast", json_object_new_string(ballast));
    json_object_object_add(meta, "annotations", ann);
    free(ballast);
    return o;
}

/* With a projection, a MODIFIED that changed nothing the READ rows name says so
 * (unread_only); every other delta, and every delta of a kind without one, does not. The
 * object is kept in its compact form. */
static void test_projection_marks_unread_changes(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    CU_ASSERT_EQUAL(cache_set_projection(c, OWNER, projection_of("StatefulSet")), -1);
    CU_ASSERT_EQUAL(cache_set_projection(c, "Pod", projection_of("Pod")), -1);
    CU_ASSERT_EQUAL(cache_set_projection(c, "StatefulSet", projection_of("StatefulSet")), 0);
    const struct {
        const char *rv;
        int ready, available;
        size_t pad;
        cache_change_t change;
        int unread;
    } steps[] = {
        {"1", 1, 1, 10, CACHE_ADDED, 0},
        {"2", 1, 2, 10, CACHE_MODIFIED, 1},   /* availableReplicas, rv, managedFields: unread */
        {"3", 2, 2, 10, CACHE_MODIFIED, 0},   /* readyReplicas: read */
        {"3", 3, 3, 10, CACHE_UNCHANGED, 0},  /* same version: no delta at all */
        {"4", 2, 3, 10, CACHE_MODIFIED, 1},
        {"5", 2, 3, 9000, CACHE_MODIFIED, 0}, /* an annotation (read), and over the bound */
        {"6", 2, 1, 9000, CACHE_MODIFIED, 0}, /* minimal form: no digest, every change counts */
        {"7", 2, 1, 10, CACHE_MODIFIED, 0},   /* whole again */
        {"8", 2, 2, 10, CACHE_MODIFIED, 1},
    };
    cache_set_max_object_bytes(c, 4096);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        int before = r.n;
        json_object *o = counted_sts(steps[i].rv, steps[i].ready, steps[i].available, steps[i].pad);
        CU_ASSERT_EQUAL(put(c, "StatefulSet", o), (int)steps[i].change);
        CU_ASSERT_EQUAL(r.n, before + (steps[i].change != CACHE_UNCHANGED));
        if (r.n > before && r.unread[r.n - 1] != steps[i].unread)
            fprintf(stderr, "\n  step %zu (rv %s): unread_only %d, want %d\n", i, steps[i].rv, r.unread[r.n - 1],
                    steps[i].unread);
        CU_ASSERT(r.n == before || r.unread[r.n - 1] == steps[i].unread);
    }
    /* A relist that finds only unread changes says so too. */
    json_object *items = json_object_new_array();
    json_object_array_add(items, counted_sts("9", 2, 3, 10));
    CU_ASSERT_EQUAL_FATAL(cache_replace(c, "StatefulSet", items, NULL, 0), 0);
    json_object_put(items);
    CU_ASSERT_EQUAL(r.type[r.n - 1], CACHE_MODIFIED);
    CU_ASSERT_EQUAL(r.unread[r.n - 1], 1);
    /* A kind without a projection: every MODIFIED counts. */
    CU_ASSERT_EQUAL(put(c, "ConfigMap", child("ConfigMap", "cm", "1", "o", "uo")), CACHE_ADDED);
    CU_ASSERT_EQUAL(put(c, "ConfigMap", child("ConfigMap", "cm", "2", "o", "uo")), CACHE_MODIFIED);
    CU_ASSERT_EQUAL(r.unread[r.n - 1], 0);
    /* What is kept is the compact form: the read, keep and write rows; the bound applies to
     * it, so an object large only in what nobody reads stays whole (not minimal). */
    json_object *big = counted_sts("10", 2, 3, 10);
    json_object *st = NULL;
    json_object_object_get_ex(big, "status", &st);
    char *noise = calloc(1, 9001);
    CU_ASSERT_PTR_NOT_NULL_FATAL(noise);
    memset(noise, 'n', 9000);
    json_object_object_add(st, "conditions", obj("[{'type':'Unread','status':'True'}]"));
    json_object_object_add(st, "note", json_object_new_string(noise));
    free(noise);
    CU_ASSERT_EQUAL(put(c, "StatefulSet", big), CACHE_MODIFIED);
    const cache_item_t *it = cache_lookup(c, "StatefulSet", "default/s");
    CU_ASSERT_PTR_NOT_NULL_FATAL(it);
    CU_ASSERT_EQUAL(it->truncated, 0);
    CU_ASSERT_EQUAL(r.unread[r.n - 1], 1);
    CU_ASSERT_STRING_EQUAL(it->json,
                           "{\"kind\":\"StatefulSet\",\"metadata\":{\"namespace\":\"default\",\"name\":\"s\","
                           "\"resourceVersion\":\"10\",\"uid\":\"uid-s\",\"ownerReferences\":[{\"kind\":"
                           "\"RedisCluster\",\"name\":\"o\",\"uid\":\"uo\",\"controller\":true}],\"annotations\":"
                           "{\"ballast\":\"bbbbbbbbbb\"}},\"spec\":{\"replicas\":3},\"status\":{\"replicas\":3,"
                           "\"readyReplicas\":2}}");
    /* ... and a kind without one keeps the whole object (managedFields apart). */
    CU_ASSERT_PTR_NOT_NULL(strstr(cache_get_json(c, "ConfigMap", "default/cm"), "blockOwnerDeletion"));
    /* SYNC and DELETED never are. */
    cache_resync(c, "StatefulSet");
    CU_ASSERT_EQUAL(r.type[r.n - 1], CACHE_SYNC);
    CU_ASSERT_EQUAL(r.unread[r.n - 1], 0);
    CU_ASSERT_EQUAL(cache_delete(c, "StatefulSet", "default/s", NULL, NULL, 0), 0);
    CU_ASSERT_EQUAL(r.type[r.n - 1], CACHE_DELETED);
    CU_ASSERT_EQUAL(r.unread[r.n - 1], 0);
    cache_destroy(&c);
}

/* A pod's change of its PodScheduled condition alone (projection.h PROJ_LATE) is
 * late_only, not unread_only; one of that and of another read field is neither; the
 * kubelet's noise is unread_only as before. */
static void test_projection_marks_late_changes(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    CU_ASSERT_EQUAL(cache_add_kind(c, "Pod"), 0);
    CU_ASSERT_EQUAL(cache_set_projection(c, "Pod", projection_of("Pod")), 0);
    const struct {
        const char *rv, *scheduled, *ready, *probed;
        int unread, late;
    } steps[] = {
        {"1", "", "False", "t1", 0, 0},      /* ADDED */
        {"2", "False", "False", "t1", 0, 1}, /* the scheduler waits for the claim */
        {"3", "False", "False", "t2", 1, 0}, /* a probe's time: unread */
        {"4", "True", "False", "t2", 0, 1},  /* scheduled */
        {"5", "True", "True", "t2", 0, 0},   /* Ready: read at once */
        {"6", "False", "False", "t3", 0, 0}, /* both */
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        char sched[128] = "";
        if (*steps[i].scheduled)
            snprintf(sched, sizeof(sched), ",{'type':'PodScheduled','status':'%s','reason':'x'}", steps[i].scheduled);
        CU_ASSERT_EQUAL(put(c, "Pod",
                            obj("{'kind':'Pod','metadata':{'name':'p','namespace':'default','resourceVersion':'%s',"
                                "'labels':{'app.kubernetes.io/instance':'o'}},'status':{'conditions':[{'type':"
                                "'Ready','status':'%s','lastProbeTime':'%s'}%s]}}",
                                steps[i].rv, steps[i].ready, steps[i].probed, sched)),
                        i ? CACHE_MODIFIED : CACHE_ADDED);
        if (r.unread[r.n - 1] != steps[i].unread || r.late[r.n - 1] != steps[i].late)
            fprintf(stderr, "\n  step %zu: unread_only %d late_only %d, want %d %d\n", i, r.unread[r.n - 1],
                    r.late[r.n - 1], steps[i].unread, steps[i].late);
        CU_ASSERT_EQUAL(r.unread[r.n - 1], steps[i].unread);
        CU_ASSERT_EQUAL(r.late[r.n - 1], steps[i].late);
    }
    cache_destroy(&c);
}

/* Metadata-only items of a relist (PartialObjectMetadata) are kept as minimal forms
 * with the reason given, and count as seen: the relist's end does not delete them. */
static void test_relist_partial(void)
{
    rec_t r;
    cache_t *c = new_cache(&r);
    char err[256];
    CU_ASSERT_EQUAL(put(c, "ConfigMap", simple("ConfigMap", "default", "big", "1", "u1")), CACHE_ADDED);
    CU_ASSERT_EQUAL(put(c, "ConfigMap", simple("ConfigMap", "default", "gone", "1", "u2")), CACHE_ADDED);
    CU_ASSERT_EQUAL(cache_relist_begin(c, "ConfigMap", err, sizeof(err)), 0);
    json_object *whole = json_object_new_array();
    json_object_array_add(whole, simple("ConfigMap", "default", "small", "3", "u3"));
    CU_ASSERT_EQUAL(cache_relist_add(c, "ConfigMap", whole, err, sizeof(err)), 0);
    json_object_put(whole);
    json_object *meta = json_object_new_array();
    json_object_array_add(meta, obj("{'kind':'ConfigMap','apiVersion':'v1','metadata':{'namespace':'default',"
                                    "'name':'big','resourceVersion':'2','uid':'u1','labels':{'a':'b'}}}"));
    CU_ASSERT_EQUAL(cache_relist_add_partial(c, "ConfigMap", meta, "over the response cap", err, sizeof(err)), 0);
    json_object_put(meta);
    CU_ASSERT_EQUAL(cache_relist_end(c, "ConfigMap", err, sizeof(err)), 0);
    const cache_item_t *it = cache_lookup(c, "ConfigMap", "default/big");
    CU_ASSERT_PTR_NOT_NULL_FATAL(it);
    CU_ASSERT_EQUAL(it->truncated, 1);
    CU_ASSERT_STRING_EQUAL(it->resource_version, "2");
    CU_ASSERT_PTR_NOT_NULL(strstr(it->json, "over the response cap"));
    CU_ASSERT_EQUAL(cache_lookup(c, "ConfigMap", "default/small")->truncated, 0);
    CU_ASSERT_PTR_NULL(cache_lookup(c, "ConfigMap", "default/gone"));
    CU_ASSERT_EQUAL(cache_count(c, "ConfigMap"), 2);
    cache_destroy(&c);
}

static const cu_entry_t tests[] = {
    CU_SUITE("cache"),
    {"upsert: added, unchanged, modified; delete", test_upsert_added_unchanged_modified},
    {"text and generation", test_text_and_generation},
    {"managedFields stripped", test_managed_fields_stripped},
    {"bad objects refused, cache unchanged", test_bad_objects_refused},
    {"objects over max_object_bytes kept in minimal form", test_max_object_bytes},
    {"relist: metadata-only items", test_relist_partial},
    {"a projection marks changes no plan reads", test_projection_marks_unread_changes},
    {"a projection marks changes read late", test_projection_marks_late_changes},
    CU_SUITE("cache owners"),
    {"owner index and child -> owner key", test_owner_index_and_key_mapping},
    {"deltas map to owner keys", test_deltas_map_to_owner_keys},
    CU_SUITE("cache relist and snapshots"),
    {"relist diff", test_replace_diff},
    {"relist in pages", test_relist_in_pages},
    {"work item children as JSON", test_children_json},
    {"relist of 10k objects", test_replace_10k},
    {"snapshot at S, resync", test_snapshot_and_resync},
};

CU_MAIN(tests)
