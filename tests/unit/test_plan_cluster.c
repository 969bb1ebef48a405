/* test_plan_cluster: the plan of a Cluster-mode RedisCluster (plan.h CLUSTER,
 * workerd/plan_cluster.h): the shards' children, the Redis Cluster commands from the work
 * item's observation as actions with their Events, the role labels, the rollout's pod
 * deletion, and the status (status.cluster, ClusterHealthy, Running only when healthy). */
#include "clock.h"
#include "cu_table.h"
#include "json_at.h"
#include "executor.h"
#include "plan.h"
#include "render.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T1 (INT64_C(1714564800) * NS_PER_SEC)
#define RC_JSON(status)                                                                                          \
    "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"c\","         \
    "\"namespace\":\"ns\",\"uid\":\"uid-1\",\"generation\":1,\"resourceVersion\":\"5\","                       \
    "\"finalizers\":[\"cache.example.com/finalizer\"]},\"spec\":{\"size\":6,\"image\":\"redis\",\"version\":" \
    "\"7.2\",\"mode\":\"Cluster\",\"cluster\":{\"shards\":3,\"replicasPerShard\":1}}" status "}"

static const char *const IDS[6] = {
    "0000000000000000000000000000000000000000", "1111111111111111111111111111111111111111",
    "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333",
    "4444444444444444444444444444444444444444", "5555555555555555555555555555555555555555"};

/* The plan's actions as "kind name[ argv]" lines. */
static void actions_text(const plan_t *p, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        off += (size_t)snprintf(out + off, len - off, "%s %s %s", plan_action_kind_name(a->kind), a->resource,
                                a->name ? a->name : "");
        for (int k = 0; a->kind == PLAN_REDIS && k < a->argc && k < 3; k++)
            off += (size_t)snprintf(out + off, len - off, " %.12s", a->argv[k]);
        off += (size_t)snprintf(out + off, len - off, "\n");
    }
}

static int has_event(const plan_t *p, const char *reason)
{
    for (size_t i = 0; i < plan_event_count(p); i++)
        if (!strcmp(plan_event(p, i)->reason, reason))
            return 1;
    return 0;
}

/* The children of a converged cluster: the ConfigMap, the Service and each shard's
 * StatefulSet and PDB as the operator renders them, the StatefulSets' status all ready
 * at revision rev. Appended to sts and pdbs (arrays); *cm and *svc made. */
static void children(json_object *rc, json_object **cm, json_object **svc, json_object *sts, json_object *pdbs)
{
    /* plan once from nothing: the creates' bodies are the children */
    plan_observed_t more = {0};
    plan_t *p = plan_compute_children(rc, &(plan_children_t){0}, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        json_object *o = NULL;
        if (a->kind != PLAN_CREATE)
            continue;
        json_object_deep_copy(a->body, &o, NULL);
        if (!strcmp(a->resource, "configmaps"))
            *cm = o;
        else if (!strcmp(a->resource, "services"))
            *svc = o;
        else if (!strcmp(a->resource, "statefulsets")) {
            json_object_object_add(o, "status",
                                   parse("{\"replicas\":2,\"readyReplicas\":2,\"updatedReplicas\":2,"
                                         "\"currentRevision\":\"r1\",\"updateRevision\":\"r1\","
                                         "\"observedGeneration\":1}"));
            json_object_object_add(json_object_object_get(o, "metadata"), "generation", json_object_new_int(1));
            json_object_array_add(sts, o);
        } else
            json_object_array_add(pdbs, o);
    }
    plan_destroy(&p);
}

/* Pod i of the layout, Ready at 10.0.0.(i+1), revision r1, labelled role (NULL: none). */
static json_object *pod(int i, const char *role)
{
    char t[1024];
    snprintf(t, sizeof(t),
             "{\"metadata\":{\"name\":\"c-shard%d-%d\",\"uid\":\"pod-uid-%d\",\"labels\":{"
             "\"controller-revision-hash\":\"r1\"%s%s%s}},\"status\":{\"podIP\":\"10.0.0.%d\","
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             i / 2, i % 2, i, role ? ",\"cache.example.com/role\":\"" : "", role ? role : "", role ? "\"" : "", i + 1);
    return parse(t);
}

/* An observation of the six nodes: healthy (3 masters with their slots, each followed by
 * its replica) or fresh (each knows only itself). */
static json_object *observation(int healthy)
{
    static const char *const slots[3] = {"0-5460", "5461-10922", "10923-16383"};
    json_object *obs = json_object_new_object(), *nodes = json_object_new_array();
    for (int i = 0; i < 6; i++) {
        char view[4096] = "", line[512];
        for (int j = 0; j < 6; j++) {
            if (!healthy && j != i)
                continue;
            int master = j % 2 == 0;
            snprintf(line, sizeof(line), "%s 10.0.0.%d:6379@16379 %s%s %s 0 0 1 connected %s\n", IDS[j], j + 1,
                     j == i ? "myself," : "", !healthy || master ? "master" : "slave",
                     !healthy || master ? "-" : IDS[j - 1], healthy && master ? slots[j / 2] : "");
            strcat(view, line); /* banned-ok: a test's fixed-size text */
        }
        json_object *n = json_object_new_object(), *cl = json_object_new_object();
        char p[32], ip[32];
        snprintf(p, sizeof(p), "c-shard%d-%d", i / 2, i % 2);
        snprintf(ip, sizeof(ip), "10.0.0.%d", i + 1);
        json_object_object_add(n, "pod", json_object_new_string(p));
        json_object_object_add(n, "ip", json_object_new_string(ip));
        json_object_object_add(n, "reachable", json_object_new_boolean(1));
        json_object_object_add(n, "linkUp", json_object_new_boolean(healthy && i % 2));
        json_object_object_add(n, "offset", json_object_new_int(100));
        json_object_object_add(cl, "nodes", json_object_new_string(view));
        json_object_object_add(cl, "state", json_object_new_string(healthy ? "ok" : "fail"));
        json_object_object_add(n, "cluster", cl);
        json_object_array_add(nodes, n);
    }
    json_object_object_add(obs, "nodes", nodes);
    return obs;
}

/* A new cluster: the ConfigMap, the Service, a StatefulSet and a PDB per shard; no
 * single StatefulSet; Pending. */
static void test_new_cluster_children(void)
{
    json_object *rc = parse(RC_JSON(""));
    plan_t *p = plan_compute_children(rc, &(plan_children_t){0}, &(plan_observed_t){0}, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char text[8192];
    actions_text(p, text, sizeof(text));
    CU_ASSERT_STRING_EQUAL(text, "create configmaps c\ncreate services c\n"
                                 "create statefulsets c-shard0\ncreate poddisruptionbudgets c-shard0\n"
                                 "create statefulsets c-shard1\ncreate poddisruptionbudgets c-shard1\n"
                                 "create statefulsets c-shard2\ncreate poddisruptionbudgets c-shard2\n"
                                 "updateStatus redisclusters c\n");
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_to_json_string(plan_status(p)), "\"ClusterHealthy\""));
    plan_destroy(&p);
    json_object_put(rc);
}

/* Ten shards bring twenty child writes in a row: the executor's stages cut them at
 * EXEC_MAX_STAGE (a longer stage aborted workerd: found by bench/cluster.sh, S = 6). */
static void test_many_shards_stages(void)
{
    json_object *rc = parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{"
                            "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"uid-1\",\"generation\":1,"
                            "\"resourceVersion\":\"5\",\"finalizers\":[\"cache.example.com/finalizer\"]},\"spec\":{"
                            "\"size\":20,\"image\":\"redis\",\"version\":\"7.2\",\"mode\":\"Cluster\","
                            "\"cluster\":{\"shards\":10,\"replicasPerShard\":1}}}");
    plan_t *p = plan_compute_children(rc, &(plan_children_t){0}, &(plan_observed_t){0}, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    size_t n = plan_action_count(p), creates = 0, stages = 0;
    for (size_t i = 0; i < n; i++)
        creates += plan_action(p, i)->kind == PLAN_CREATE;
    CU_ASSERT_EQUAL(creates, 2 + 2 * 10);
    for (size_t i = 0; i < n; stages++) {
        size_t end = exec_stage_end(p, i);
        CU_ASSERT_FATAL(end > i);
        CU_ASSERT(end - i <= EXEC_MAX_STAGE);
        i = end;
    }
    CU_ASSERT(stages >= 1 + (2 * 10 + EXEC_MAX_STAGE - 1) / EXEC_MAX_STAGE);
    plan_destroy(&p);
    json_object_put(rc);
}

/* The shards there, the nodes fresh: the anchor meets the others, one Event. */
static void test_fresh_nodes_are_met(void)
{
    json_object *rc = parse(RC_JSON(""));
    json_object *cm = NULL, *svc = NULL, *sts = json_object_new_array(), *pdbs = json_object_new_array();
    children(rc, &cm, &svc, sts, pdbs);
    json_object *pods = json_object_new_array(), *obs = observation(0);
    for (int i = 0; i < 6; i++)
        json_object_array_add(pods, pod(i, NULL));
    plan_observed_t more = {.members = pods, .redis = obs, .shard_statefulsets = sts, .shard_budgets = pdbs};
    plan_t *p = plan_compute_children(rc, &(plan_children_t){cm, svc, NULL, NULL}, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char text[8192];
    actions_text(p, text, sizeof(text));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "redis pods c-shard0-0 CLUSTER MEET 10.0.0.2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "redis pods c-shard0-0 CLUSTER MEET 10.0.0.6\n"));
    CU_ASSERT_PTR_NULL(strstr(text, "create "));
    CU_ASSERT_TRUE(has_event(p, "ClusterMeet"));
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT(plan_requeue_after_ns(p) > 0 && plan_requeue_after_ns(p) <= PLAN_REQUEUE_SWITCHOVER_NS);
    plan_destroy(&p);
    json_object_put(obs);
    json_object_put(pods);
    json_object_put(rc);
    json_object_put(cm);
    json_object_put(svc);
    json_object_put(sts);
    json_object_put(pdbs);
}

/* Healthy: no command; the labels set as Redis says; Running with status.cluster and
 * ClusterHealthy True; then, with the status and labels in place, nothing at all. */
static void test_healthy_is_running(void)
{
    json_object *rc = parse(RC_JSON(""));
    json_object *cm = NULL, *svc = NULL, *sts = json_object_new_array(), *pdbs = json_object_new_array();
    children(rc, &cm, &svc, sts, pdbs);
    json_object *pods = json_object_new_array(), *obs = observation(1);
    for (int i = 0; i < 6; i++)
        json_object_array_add(pods, pod(i, NULL));
    plan_observed_t more = {.members = pods, .redis = obs, .shard_statefulsets = sts, .shard_budgets = pdbs};
    plan_t *p = plan_compute_children(rc, &(plan_children_t){cm, svc, NULL, NULL}, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char text[8192];
    actions_text(p, text, sizeof(text));
    CU_ASSERT_PTR_NULL(strstr(text, "redis "));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "labelPod pods c-shard0-0\n"));
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    json_object *st = plan_status(p);
    CU_ASSERT_STRING_EQUAL(str_at(st, "cluster state"), "ok");
    CU_ASSERT_EQUAL(int_at(st, "cluster slotsAssigned"), 16384);
    CU_ASSERT_TRUE(json_object_get_boolean(at(st, "cluster bootstrapped")));
    CU_ASSERT_STRING_EQUAL(str_at(json_object_array_get_idx(at(st, "cluster shards"), 1), "primary"), "c-shard1-0");
    CU_ASSERT_STRING_EQUAL(str_at(json_object_array_get_idx(at(st, "cluster shards"), 1), "slots"), "5461-10922");
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN),
                                  "\"type\":\"ClusterHealthy\",\"status\":\"True\""));
    /* the status and labels in place: a resync writes nothing */
    char status[16384];
    snprintf(status, sizeof(status), ",\"status\":%s", json_object_to_json_string(st));
    plan_destroy(&p);
    char rcj[32768];
    snprintf(rcj, sizeof(rcj), RC_JSON("%s"), status);
    json_object *rc2 = parse(rcj);
    json_object_put(pods);
    pods = json_object_new_array();
    for (int i = 0; i < 6; i++)
        json_object_array_add(pods, pod(i, i % 2 ? "replica" : "primary"));
    more.members = pods;
    p = plan_compute_children(rc2, &(plan_children_t){cm, svc, NULL, NULL}, &more, T1);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    actions_text(p, text, sizeof(text));
    if (plan_action_count(p))
        fprintf(stderr, "\n%s", text);
    plan_destroy(&p);
    json_object_put(rc2);
    json_object_put(obs);
    json_object_put(pods);
    json_object_put(rc);
    json_object_put(cm);
    json_object_put(svc);
    json_object_put(sts);
    json_object_put(pdbs);
}

/* A rollout (a pod of an old revision): the outdated replica of the highest index goes,
 * with its uid as precondition. */
static void test_rollout_deletes_a_replica(void)
{
    json_object *rc = parse(RC_JSON(",\"status\":{\"cluster\":{\"bootstrapped\":true}}"));
    json_object *cm = NULL, *svc = NULL, *sts = json_object_new_array(), *pdbs = json_object_new_array();
    children(rc, &cm, &svc, sts, pdbs);
    for (size_t k = 0; k < json_object_array_length(sts); k++) /* every shard has a new revision */
        json_object_object_add(json_object_object_get(json_object_array_get_idx(sts, k), "status"),
                               "updateRevision", json_object_new_string("r2"));
    json_object *pods = json_object_new_array(), *obs = observation(1);
    for (int i = 0; i < 6; i++)
        json_object_array_add(pods, pod(i, i % 2 ? "replica" : "primary"));
    plan_observed_t more = {.members = pods, .redis = obs, .shard_statefulsets = sts, .shard_budgets = pdbs};
    plan_t *p = plan_compute_children(rc, &(plan_children_t){cm, svc, NULL, NULL}, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char text[8192];
    actions_text(p, text, sizeof(text));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "delete pods c-shard2-1\n"));
    CU_ASSERT_TRUE(has_event(p, "RolledPod"));
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == PLAN_DELETE)
            CU_ASSERT_STRING_EQUAL(str_at(plan_action(p, i)->body, "preconditions uid"), "pod-uid-5");
    plan_destroy(&p);
    json_object_put(obs);
    json_object_put(pods);
    json_object_put(rc);
    json_object_put(cm);
    json_object_put(svc);
    json_object_put(sts);
    json_object_put(pdbs);
}

static const cu_entry_t tests[] = {
    CU_SUITE("plan: Cluster mode"),
    {"a new cluster: a StatefulSet and a PDB per shard", test_new_cluster_children},
    {"ten shards: the child writes in stages of at most EXEC_MAX_STAGE", test_many_shards_stages},
    {"fresh nodes are met from one anchor", test_fresh_nodes_are_met},
    {"healthy: Running, status.cluster, then a resync writes nothing", test_healthy_is_running},
    {"a rollout deletes the outdated replica of the highest index", test_rollout_deletes_a_replica},
};

CU_MAIN(tests)
