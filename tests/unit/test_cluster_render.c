/* test_cluster_render: what Cluster mode renders (workerd/render.h, CLUSTER): a shard's
 * StatefulSet and PodDisruptionBudget, the pod's cluster settings, redis.conf's cluster
 * directives; and that the other modes render nothing of it. */
#include "cu_table.h"
#include "json_at.h"
#include "render.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

/* The typed spec of text (a valid RedisCluster), parsed once; the JSON is kept, as the
 * typed spec points into it. */
static const rdc_spec_t *typed(const char *text, json_object **keep, rdc_spec_t *spec)
{
    if (!*keep) {
        *keep = json_tokener_parse(text);
        rdc_field_errors_t *e = rdc_field_errors_new();
        CU_ASSERT_EQUAL_FATAL(rdc_spec_parse(*keep, spec, e), 0);
        rdc_field_errors_destroy(&e);
    }
    return spec;
}

static json_object *cluster_json, *replication_json;
static rdc_spec_t cluster_spec, replication_spec;

static render_input_t cluster_input(int shard)
{
    render_input_t in = {.name = "cache", .ns = "default", .uid = "uid-1", .shard = shard,
                         .spec = typed("{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":6,"
                                       "\"image\":\"redis:7.2\",\"mode\":\"Cluster\",\"cluster\":{\"shards\":3,"
                                       "\"replicasPerShard\":1},\"failover\":{\"downAfter\":\"2s\"}}}",
                                       &cluster_json, &cluster_spec)};
    return in;
}

static const char *str(const json_object *o, const char *path)
{
    return str_at(o, path);
}

static void test_shard_statefulset(void)
{
    render_input_t in = cluster_input(2);
    json_object *sts = render_statefulset(&in, "hash");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
    CU_ASSERT_EQUAL(int_at(sts, "spec replicas"), 2);
    ASSERT_STRS_AT(sts, {"metadata name", "cache-shard2"}, {"metadata labels cache.example.com/shard", "2"},
                   {"spec serviceName", "cache"}, {"spec podManagementPolicy", "Parallel"},
                   {"spec updateStrategy type", "OnDelete"}, {"spec selector matchLabels cache.example.com/shard", "2"},
                   {"spec selector matchLabels app.kubernetes.io/instance", "cache"},
                   {"spec template metadata labels cache.example.com/shard", "2"});
    /* the ConfigMap of the whole cluster */
    json_object *vols = at(sts, "spec template spec volumes");
    CU_ASSERT_STRING_EQUAL(str(json_object_array_get_idx(vols, 0), "configMap name"), "cache");
    json_object *c = json_object_array_get_idx(at(sts, "spec template spec containers"), 0);
    const char *cmd = json_object_to_json_string(at(c, "command"));
    const char *announce = strstr(cmd, "\"--cluster-announce-ip\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(announce);
    CU_ASSERT_PTR_NOT_NULL(strstr(announce, "\"$(POD_IP)\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_to_json_string(at(c, "env")), "status.podIP"));
    CU_ASSERT_PTR_NOT_NULL(at(c, "lifecycle preStop exec command"));
    /* a shard's pods spread over nodes: the anti-affinity selects the shard */
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_to_json_string(at(sts, "spec template spec affinity")),
                                  "cache.example.com\\/shard"));
    json_object_put(sts);

    json_object *pdb = render_pdb(&in);
    CU_ASSERT_STRING_EQUAL(str(pdb, "metadata name"), "cache-shard2");
    CU_ASSERT_STRING_EQUAL(str(pdb, "spec selector matchLabels cache.example.com/shard"), "2");
    CU_ASSERT_EQUAL(int_at(pdb, "spec maxUnavailable"), 1);
    json_object_put(pdb);
}

static void test_cluster_conf(void)
{
    render_input_t in = cluster_input(-1);
    buf_t conf, restart;
    buf_init(&conf, 0);
    buf_init(&restart, 0);
    CU_ASSERT_EQUAL(render_redis_conf(&in, &conf), 0);
    CU_ASSERT_EQUAL(render_redis_conf_restart(&in, &restart), 0);
    const char *want = "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 2000\n"
                       "cluster-allow-replica-migration no\n";
    CU_ASSERT_PTR_NOT_NULL(strstr(buf_str(&conf), want));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf_str(&restart), want)); /* not run-time: part of the hash */
    /* the cluster's ConfigMap and Service carry no shard label */
    json_object *svc = render_service(&in);
    CU_ASSERT_PTR_NULL(at(svc, "metadata labels cache.example.com/shard"));
    CU_ASSERT_PTR_NULL(at(svc, "spec selector cache.example.com/shard"));
    json_object_put(svc);
    buf_free(&conf);
    buf_free(&restart);
    char name[64];
    CU_ASSERT_EQUAL(render_shard_name("cache", 13, name, sizeof(name)), 0);
    CU_ASSERT_STRING_EQUAL(name, "cache-shard13");
    CU_ASSERT_EQUAL(render_shard_name("cache", 13, name, 8), -1);
}

/* The other modes: none of it (shard 0 of a zeroed input does not matter). */
static void test_other_modes_unchanged(void)
{
    render_input_t in = {.name = "cache", .ns = "default", .uid = "uid-1",
                         .spec = typed("{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":3,"
                                       "\"image\":\"redis:7.2\",\"mode\":\"Replication\"}}",
                                       &replication_json, &replication_spec)};
    json_object *sts = render_statefulset(&in, "hash");
    CU_ASSERT_STRING_EQUAL(str(sts, "metadata name"), "cache");
    CU_ASSERT_PTR_NULL(at(sts, "metadata labels cache.example.com/shard"));
    CU_ASSERT_PTR_NULL(at(sts, "spec podManagementPolicy"));
    CU_ASSERT_EQUAL(int_at(sts, "spec replicas"), 3);
    CU_ASSERT_PTR_NULL(strstr(json_object_to_json_string(sts), "cluster-announce-ip"));
    json_object_put(sts);
    buf_t conf;
    buf_init(&conf, 0);
    CU_ASSERT_EQUAL(render_redis_conf(&in, &conf), 0);
    CU_ASSERT_PTR_NULL(strstr(buf_str(&conf), "\ncluster-"));
    buf_free(&conf);
}

static const cu_entry_t tests[] = {
    CU_SUITE("cluster mode: render"),
    {"a shard's StatefulSet and PodDisruptionBudget", test_shard_statefulset},
    {"redis.conf's cluster directives; the cluster-wide children", test_cluster_conf},
    {"the other modes render none of it", test_other_modes_unchanged},
};

CU_MAIN(tests)
