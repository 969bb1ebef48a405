/* Unit tests of how informerd caches the Redis pods: the compact form (podview.h) and
 * the owner-by-label index of the cache (cache_set_owner_label: a Pod belongs to the
 * RedisCluster its app.kubernetes.io/instance label names; the work item's "Pods"). */
#include "cache.h"
#include "cu_table.h"
#include "jsonx.h"
#include "podview.h"
#include "workitem.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#define LABEL "app.kubernetes.io/instance"

static const char BIG_POD[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"cache-0\",\"namespace\":\"ns1\","
    "\"uid\":\"u-p0\",\"resourceVersion\":\"10\",\"labels\":{\"app.kubernetes.io/instance\":\"cache\","
    "\"app.kubernetes.io/name\":\"redis\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
    "\"StatefulSet\",\"name\":\"cache\",\"uid\":\"u-sts\",\"controller\":true}],\"managedFields\":[{\"manager\":"
    "\"kube-controller-manager\"}]},\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"redis\","
    "\"image\":\"redis:7.2\",\"args\":[\"/etc/redis/redis.conf\"]}],\"volumes\":[{\"name\":\"data\"}],"
    "\"tolerations\":[{\"key\":\"x\"}]},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.5\",\"podIPs\":"
    "[{\"ip\":\"10.0.0.5\"}],\"hostIP\":\"192.168.0.1\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
    "\"containerStatuses\":[{\"name\":\"redis\",\"restartCount\":0,\"image\":\"redis:7.2\"}]}}";

static void test_podview_compact(void)
{
    json_object *pod = json_tokener_parse(BIG_POD);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pod);
    size_t before = strlen(json_object_to_json_string(pod));
    CU_ASSERT_EQUAL(podview_compact(pod), 0);
    json_object *spec = NULL, *status = NULL, *v = NULL;
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(pod, "spec", &spec));
    CU_ASSERT_EQUAL(json_object_object_length(spec), 1);
    CU_ASSERT_TRUE(json_object_object_get_ex(spec, "nodeName", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "node-1");
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(pod, "status", &status));
    CU_ASSERT_EQUAL(json_object_object_length(status), 5);
    CU_ASSERT_TRUE(json_object_object_get_ex(status, "podIP", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "10.0.0.5");
    CU_ASSERT_TRUE(json_object_object_get_ex(status, "phase", NULL));
    CU_ASSERT_TRUE(json_object_object_get_ex(status, "conditions", NULL));
    CU_ASSERT_TRUE(json_object_object_get_ex(status, "podIPs", NULL));
    /* containerStatuses reduced to name and restartCount (workerd's runtime config), and
     * a waiting state and the last termination when there are (below). */
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(status, "containerStatuses", &v));
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN),
                           "[{\"name\":\"redis\",\"restartCount\":0}]");
    CU_ASSERT_FALSE(json_object_object_get_ex(status, "hostIP", NULL));
    /* Of metadata, what is read (docs/projections.md): identity, version, the instance
     * label (the pod's owner); not the other labels, the owner references (a Pod's owner
     * is its instance label's) or managedFields. */
    json_object *md = NULL;
    CU_ASSERT_TRUE(json_object_object_get_ex(pod, "metadata", &md));
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(md, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                           "{\"name\":\"cache-0\",\"namespace\":\"ns1\",\"uid\":\"u-p0\",\"resourceVersion\":\"10\","
                           "\"labels\":{\"app.kubernetes.io/instance\":\"cache\"}}");
    CU_ASSERT(strlen(json_object_to_json_string(pod)) < before);
    json_object_put(pod);
    /* A container waiting (and an init container that crashed): what a diagnosis quotes is
     * kept, the rest of each state goes. */
    pod = json_tokener_parse(
        "{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":"
        "\"init\",\"restartCount\":3,\"image\":\"busybox\",\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\","
        "\"message\":\"back-off 40s\"}},\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\","
        "\"startedAt\":\"2026-01-01T00:00:00Z\",\"containerID\":\"x\"}}}],\"containerStatuses\":[{\"name\":"
        "\"redis\",\"restartCount\":0,\"state\":{\"running\":{\"startedAt\":\"2026-01-01T00:00:00Z\"}},"
        "\"ready\":false},{\"name\":\"side\",\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":"
        "\"ImagePullBackOff\",\"message\":\"Back-off pulling image nope\"}},\"lastState\":{}}]}}");
    CU_ASSERT_EQUAL(podview_compact(pod), 0);
    CU_ASSERT_STRING_EQUAL(
        json_object_to_json_string_ext(json_object_object_get(pod, "status"), JSON_C_TO_STRING_PLAIN),
        "{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"init\",\"restartCount\":3,"
        "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off 40s\"}},"
        "\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\"}}}],"
        "\"containerStatuses\":[{\"name\":\"redis\",\"restartCount\":0},{\"name\":\"side\","
        "\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"ImagePullBackOff\",\"message\":"
        "\"Back-off pulling image nope\"}}}]}");
    json_object_put(pod);
    /* A pod without status (just created), a spec that is not an object, not an object. */
    pod = json_tokener_parse("{\"metadata\":{\"name\":\"p\"},\"spec\":7}");
    CU_ASSERT_EQUAL(podview_compact(pod), 0);
    CU_ASSERT_FALSE(json_object_object_get_ex(pod, "spec", NULL));
    CU_ASSERT_FALSE(json_object_object_get_ex(pod, "status", NULL));
    json_object_put(pod);
    json_object *arr = json_object_new_array();
    CU_ASSERT_EQUAL(podview_compact(arr), -1);
    CU_ASSERT_EQUAL(podview_compact(NULL), -1);
    json_object_put(arr);
}

static json_object *pod(const char *name, const char *rv, const char *instance, const char *ip)
{
    char text[1024];
    char labels[256] = "";
    if (instance)
        snprintf(labels, sizeof(labels), ",\"labels\":{\"" LABEL "\":\"%s\"}", instance);
    snprintf(text, sizeof(text),
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\",\"uid\":\"u-%s\","
             "\"resourceVersion\":\"%s\"%s,\"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":\"x\","
             "\"uid\":\"u-sts\",\"controller\":true}]},\"status\":{\"podIP\":\"%s\"}}",
             name, name, rv, labels, ip);
    return json_tokener_parse(text);
}

static char last_key[512];
static int deltas;
static void on_delta(void *ud, const cache_delta_t *d)
{
    cache_t *c = ud;
    deltas++;
    if (cache_item_owner_key(c, d->item, last_key, sizeof(last_key)) != 0)
        last_key[0] = '\0';
}

static int upsert(cache_t *c, json_object *o)
{
    char err[256];
    cache_change_t ch;
    int rc = cache_upsert(c, "Pod", o, &ch, err, sizeof(err));
    json_object_put(o);
    return rc;
}

/* A RedisCluster cache that also holds the kinds in children (NULL-terminated; NULL: none)
 * and Pods, a Pod belonging to the cluster its LABEL names; deltas go to on_delta. */
static cache_t *cluster_cache(const char *const *children)
{
    cache_t *c = cache_new("RedisCluster");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    for (; children && *children; children++)
        CU_ASSERT_EQUAL_FATAL(cache_add_kind(c, *children), 0);
    CU_ASSERT_EQUAL_FATAL(cache_add_kind(c, "Pod"), 0);
    CU_ASSERT_EQUAL_FATAL(cache_set_owner_label(c, "Pod", LABEL), 0);
    cache_set_delta_handler(c, on_delta, c);
    return c;
}

/* The names listed for key, sorted, comma separated. */
static void names_of(cache_t *c, const char *key, char *out, size_t cap)
{
    buf_t b;
    buf_init(&b, 0);
    out[0] = '\0';
    CU_ASSERT_EQUAL_FATAL(cache_label_children_json(c, "Pod", key, &b), 0);
    json_object *arr = json_tokener_parse(buf_str(&b));
    CU_ASSERT_TRUE_FATAL(json_object_is_type(arr, json_type_array));
    const char *names[16];
    size_t n = 0;
    for (size_t i = 0; i < json_object_array_length(arr) && n < 16; i++) {
        json_object *md = NULL, *nm = NULL;
        json_object_object_get_ex(json_object_array_get_idx(arr, i), "metadata", &md);
        json_object_object_get_ex(md, "name", &nm);
        names[n++] = json_object_get_string(nm);
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s%s", i ? "," : "", names[i]);
    json_object_put(arr);
    buf_free(&b);
}

static void test_owner_label(void)
{
    cache_t *c = cache_new("RedisCluster");
    CU_ASSERT_EQUAL(cache_add_kind(c, "Pod"), 0);
    CU_ASSERT_EQUAL(cache_set_owner_label(c, "RedisCluster", LABEL), -1); /* not the owner kind */
    CU_ASSERT_EQUAL(cache_set_owner_label(c, "Secret", LABEL), -1);       /* not watched */
    CU_ASSERT_EQUAL(cache_set_owner_label(c, "Pod", LABEL), 0);
    cache_set_delta_handler(c, on_delta, c);
    char names[256];

    CU_ASSERT_EQUAL(upsert(c, pod("cache-0", "1", "cache", "10.0.0.1")), 0);
    CU_ASSERT_STRING_EQUAL(last_key, "ns1/cache");
    CU_ASSERT_EQUAL(upsert(c, pod("cache-1", "2", "cache", "10.0.0.2")), 0);
    CU_ASSERT_EQUAL(upsert(c, pod("other-0", "3", "other", "10.0.0.3")), 0);
    CU_ASSERT_STRING_EQUAL(last_key, "ns1/other");
    /* No label: no owner, in no list. */
    CU_ASSERT_EQUAL(upsert(c, pod("stray", "4", NULL, "10.0.0.4")), 0);
    CU_ASSERT_STRING_EQUAL(last_key, "");
    CU_ASSERT_EQUAL(cache_set_owner_label(c, "Pod", "x"), -1); /* objects stored already */

    names_of(c, "ns1/cache", names, sizeof(names));
    CU_ASSERT_STRING_EQUAL(names, "cache-0,cache-1");
    names_of(c, "ns1/other", names, sizeof(names));
    CU_ASSERT_STRING_EQUAL(names, "other-0");
    names_of(c, "ns1/none", names, sizeof(names));
    CU_ASSERT_STRING_EQUAL(names, "");

    /* A status change: the same list, the new text. */
    CU_ASSERT_EQUAL(upsert(c, pod("cache-1", "5", "cache", "10.0.0.22")), 0);
    buf_t b;
    buf_init(&b, 0);
    cache_label_children_json(c, "Pod", "ns1/cache", &b);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf_str(&b), "10.0.0.22"));
    CU_ASSERT_PTR_NULL(strstr(buf_str(&b), "10.0.0.2\""));
    buf_free(&b);
    /* Relabelled: it moves. */
    CU_ASSERT_EQUAL(upsert(c, pod("other-0", "6", "cache", "10.0.0.3")), 0);
    names_of(c, "ns1/cache", names, sizeof(names));
    CU_ASSERT_STRING_EQUAL(names, "cache-0,cache-1,other-0");
    names_of(c, "ns1/other", names, sizeof(names));
    CU_ASSERT_STRING_EQUAL(names, "");
    /* Deleted: gone from the list, its delta still maps to the cluster. */
    char err[128];
    cache_change_t ch;
    CU_ASSERT_EQUAL(cache_delete(c, "Pod", "ns1/cache-0", &ch, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(ch, CACHE_DELETED);
    CU_ASSERT_STRING_EQUAL(last_key, "ns1/cache");
    names_of(c, "ns1/cache", names, sizeof(names));
    CU_ASSERT_STRING_EQUAL(names, "cache-1,other-0");

    /* A relist replaces the list: what it does not mention goes. */
    json_object *items = json_object_new_array();
    json_object_array_add(items, pod("cache-1", "5", "cache", "10.0.0.22"));
    json_object_array_add(items, pod("cache-2", "7", "cache", "10.0.0.7"));
    CU_ASSERT_EQUAL(cache_replace(c, "Pod", items, err, sizeof(err)), 0);
    json_object_put(items);
    names_of(c, "ns1/cache", names, sizeof(names));
    CU_ASSERT_STRING_EQUAL(names, "cache-1,cache-2");
    cache_destroy(&c);
}

/* A RedisCluster controller owner wins over the label. */
static void test_controller_owner_wins(void)
{
    cache_t *c = cluster_cache(NULL);
    json_object *o = json_tokener_parse(
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns1\",\"resourceVersion\":\"1\","
        "\"labels\":{\"" LABEL "\":\"bylabel\"},\"ownerReferences\":[{\"kind\":\"RedisCluster\",\"name\":\"byowner\","
        "\"uid\":\"u-rc\",\"controller\":true}]}}");
    CU_ASSERT_EQUAL(upsert(c, o), 0);
    CU_ASSERT_STRING_EQUAL(last_key, "ns1/byowner");
    char names[64];
    names_of(c, "ns1/bylabel", names, sizeof(names));
    CU_ASSERT_STRING_EQUAL(names, "");
    cache_destroy(&c);
}

/* The work item's children: the four kinds (the PodDisruptionBudget since issue 20), the
 * cluster's pods, the latest observation. */
static void test_workitem_children(void)
{
    static const char *const children[] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget", NULL};
    cache_t *c = cluster_cache(children);
    char err[256];
    cache_change_t ch;
    json_object *cm =
        json_tokener_parse("{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cache\",\"namespace\":\"ns1\","
                           "\"resourceVersion\":\"1\"},\"data\":{\"redis.conf\":\"x\"}}");
    CU_ASSERT_EQUAL(cache_upsert(c, "ConfigMap", cm, &ch, err, sizeof(err)), 0);
    json_object_put(cm);
    json_object *pdb =
        json_tokener_parse("{\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"cache\","
                           "\"namespace\":\"ns1\",\"resourceVersion\":\"5\"},\"spec\":{\"maxUnavailable\":1}}");
    CU_ASSERT_EQUAL(cache_upsert(c, "PodDisruptionBudget", pdb, &ch, err, sizeof(err)), 0);
    json_object_put(pdb);
    /* A role Service of a Replication cluster, at <key>-primary. */
    json_object *ps = json_tokener_parse("{\"kind\":\"Service\",\"metadata\":{\"name\":\"cache-primary\","
                                         "\"namespace\":\"ns1\",\"resourceVersion\":\"5\"}}");
    CU_ASSERT_EQUAL(cache_upsert(c, "Service", ps, &ch, err, sizeof(err)), 0);
    json_object_put(ps);
    upsert(c, pod("cache-0", "2", "cache", "10.0.0.1"));
    upsert(c, pod("cache-1", "3", "cache", "10.0.0.2"));
    upsert(c, pod("other-0", "4", "other", "10.0.0.3"));
    /* Cluster mode's shards: StatefulSets <key>-shard<k>, in k's order (not the cache's) */
    static const char *const shards[] = {"cache-shard2", "cache-shard0", "cachex-shard1"};
    for (int i = 0; i < 3; i++) {
        char t[256];
        snprintf(t, sizeof(t), "{\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\","
                 "\"resourceVersion\":\"%d\"}}", shards[i], 10 + i);
        json_object *sts = json_tokener_parse(t);
        CU_ASSERT_EQUAL(cache_upsert(c, "StatefulSet", sts, &ch, err, sizeof(err)), 0);
        json_object_put(sts);
    }
    static const char obs[] = "{\"observedAt\":\"t\",\"nodes\":[{\"pod\":\"cache-0\",\"role\":\"master\"}]}";
    for (int with_obs = 0; with_obs < 2; with_obs++) {
        buf_t b;
        buf_init(&b, 0);
        CU_ASSERT_EQUAL_FATAL(workitem_children(c, "ns1/cache", with_obs ? obs : NULL, strlen(obs), &b), 0);
        json_object *o = json_tokener_parse(buf_str(&b));
        CU_ASSERT_TRUE_FATAL(json_object_is_type(o, json_type_object));
        json_object *v = NULL;
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "ConfigMap", &v) && json_object_is_type(v, json_type_object));
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "Service", &v) && v == NULL);
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "StatefulSet", &v) && v == NULL);
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "PodDisruptionBudget", &v) &&
                       json_object_is_type(v, json_type_object));
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "ServicePrimary", &v) && json_object_is_type(v, json_type_object) &&
                       !strcmp(JSONX_STR_AT(v, "metadata", "name"), "cache-primary"));
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "ServiceReplicas", &v) && v == NULL);
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "NetworkPolicy", &v) && v == NULL); /* DAY-2 */
        CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(o, "ShardStatefulSets", &v) &&
                             json_object_is_type(v, json_type_array) && json_object_array_length(v) == 2);
        CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(json_object_array_get_idx(v, 0), "metadata", "name"), "cache-shard0");
        CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(json_object_array_get_idx(v, 1), "metadata", "name"), "cache-shard2");
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "ShardBudgets", &v) && json_object_array_length(v) == 0);
        CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(o, "Pods", &v) && json_object_is_type(v, json_type_array));
        CU_ASSERT_EQUAL(json_object_array_length(v), 2);
        CU_ASSERT_TRUE(json_object_object_get_ex(o, "Redis", &v));
        if (with_obs) {
            json_object *nodes = NULL;
            CU_ASSERT_TRUE(json_object_object_get_ex(v, "nodes", &nodes) && json_object_array_length(nodes) == 1);
        } else {
            CU_ASSERT_PTR_NULL(v);
        }
        json_object_put(o);
        buf_free(&b);
    }
    /* A key with nothing: nulls and an empty list. */
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL(workitem_children(c, "ns1/none", NULL, 0, &b), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b),
                           "{\"ConfigMap\":null,\"Service\":null,\"StatefulSet\":null,\"PodDisruptionBudget\":null,"
                           "\"ServicePrimary\":null,\"ServiceReplicas\":null,\"NetworkPolicy\":null,"
                           "\"ShardStatefulSets\":[],"
                           "\"ShardBudgets\":[],\"Pods\":[],\"Redis\":null}");
    buf_free(&b);
    /* Over the buffer's cap: -1. */
    buf_init(&b, 40);
    CU_ASSERT_EQUAL(workitem_children(c, "ns1/cache", obs, strlen(obs), &b), -1);
    buf_free(&b);
    cache_destroy(&c);
}

static const cu_entry_t tests[] = {
    CU_SUITE("podcache"),
    {"compact form of a pod", test_podview_compact},
    {"pods belong to their instance label's cluster", test_owner_label},
    {"a controller owner wins over the label", test_controller_owner_wins},
    {"the work item's children: kinds, Pods, Redis", test_workitem_children},
};

CU_MAIN(tests)
