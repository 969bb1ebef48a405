/* test_plan_cluster: the plan of a Cluster-mode RedisCluster (plan.h CLUSTER,
 * workerd/plan_cluster.h): the shards' children, the Redis Cluster commands from the work
 * item's observation as actions with their Events, the role labels, the rollout's pod
 * deletion, and the status (status.cluster, ClusterHealthy, Running only when healthy). */
#include "clock.h"
#include "cluster_fixture.h"
#include "cu_table.h"
#include "json_at.h"
#include "executor.h"
#include "plan.h"
#include "plan_fixture.h"
#include "plan_build.h"
#include "render.h"
#include "text_assert.h"

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
    return parsef("{\"metadata\":{\"name\":\"c-shard%d-%d\",\"uid\":\"pod-uid-%d\",\"labels\":{"
                  "\"controller-revision-hash\":\"r1\"%s%s%s}},\"status\":{\"podIP\":\"10.0.0.%d\","
                  "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                  i / 2, i % 2, i, role ? ",\"cache.example.com/role\":\"" : "", role ? role : "", role ? "\"" : "",
                  i + 1);
}

/* Six fresh nodes: each knows only itself. */
static const onode_t FRESH[6] = {{-1, NULL, 1}, {-1, NULL, 1}, {-1, NULL, 1},
                                 {-1, NULL, 1}, {-1, NULL, 1}, {-1, NULL, 1}};

/* What a plan of a cluster whose children are in place reads: the RedisCluster, its
 * children (children()), its pods and the observation of their nodes. */
typedef struct {
    json_object *rc, *cm, *svc, *sts, *pdbs, *pods, *obs;
    json_object *backups, *jobs, *bpods; /* BACKUP (NULL: none) */
} world_t;

/* rc parsed from rc_json and its children rendered; no pod yet (an empty array) and no
 * observation (the test adds them). */
static void world_open(world_t *w, const char *rc_json)
{
    w->rc = parse(rc_json);
    w->cm = w->svc = NULL;
    w->sts = json_object_new_array();
    w->pdbs = json_object_new_array();
    children(w->rc, &w->cm, &w->svc, w->sts, w->pdbs);
    w->pods = json_object_new_array();
    w->obs = w->backups = w->jobs = w->bpods = NULL;
}

/* The plan of w at T1; the caller destroys it. */
static plan_t *world_plan(const world_t *w)
{
    plan_observed_t more = {.members = w->pods,
                            .redis = w->obs,
                            .shard_statefulsets = w->sts,
                            .shard_budgets = w->pdbs,
                            .backups = w->backups,
                            .jobs = w->jobs,
                            .backup_pods = w->bpods,
                            .operator_image = "op:test"};
    return plan_compute_children(w->rc, &(plan_children_t){w->cm, w->svc, NULL, NULL}, &more, T1);
}

/* world_plan, not NULL (else the test stops), its actions as text in out (actions_text). */
static plan_t *world_plan_text(const world_t *w, char *out, size_t len)
{
    plan_t *p = world_plan(w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    actions_text(p, out, len);
    return p;
}

static void world_close(world_t *w)
{
    json_object *all[] = {w->rc, w->cm, w->svc, w->sts, w->pdbs, w->pods, w->obs, w->backups, w->jobs, w->bpods};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        json_object_put(all[i]);
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
    /* the headless Service selects every shard's pods (it selected shard 0's only while
     * the plan's render input named shard 0 by default: a DNS name for a third of the pods) */
    const json_object *svc = plan_action(p, 1)->body;
    CU_ASSERT_STRING_EQUAL(str_at(svc, "spec selector app.kubernetes.io/instance"), "c");
    CU_ASSERT_PTR_NULL(at(svc, "spec selector cache.example.com/shard"));
    CU_ASSERT_PTR_NULL(at(svc, "metadata labels cache.example.com/shard"));
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

/* The plan of fresh nodes (MEETs to send) with status.lastRedisCommandTime cmd (NULL:
 * none) and an observation taken at 11:59:59.800 whose every node was probed probed_ago ms
 * before (< 0: an observation that says neither). */
static plan_t *meet_plan(const char *cmd, int probed_ago)
{
    char status[160] = "";
    if (cmd)
        snprintf(status, sizeof(status), ",\"status\":{\"lastRedisCommandTime\":\"%s\"}", cmd);
    char text[1024];
    snprintf(text, sizeof(text), RC_JSON("%s"), status);
    world_t w;
    world_open(&w, text);
    w.obs = cluster_observation("c", FRESH, 6, "fail");
    if (probed_ago >= 0)
        json_object_object_add(w.obs, "observedAt", json_object_new_string("2024-05-01T11:59:59.800Z"));
    json_object *nodes = json_object_object_get(w.obs, "nodes");
    for (int i = 0; i < 6; i++) {
        json_object_array_add(w.pods, pod(i, NULL));
        if (probed_ago >= 0)
            json_object_object_add(json_object_array_get_idx(nodes, i), "probedAgoMs",
                                   json_object_new_int(probed_ago));
    }
    plan_t *p = world_plan(&w);
    world_close(&w);
    return p;
}

/* The shards there, the nodes fresh: the anchor meets the others, one Event. */
static void test_fresh_nodes_are_met(void)
{
    plan_t *p = meet_plan(NULL, -1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char text[8192];
    actions_text(p, text, sizeof(text));
    ASSERT_TEXT_HAS(text, "redis pods c-shard0-0 CLUSTER MEET 10.0.0.2\n",
                    "redis pods c-shard0-0 CLUSTER MEET 10.0.0.6\n");
    CU_ASSERT_PTR_NULL(strstr(text, "create "));
    CU_ASSERT_TRUE(has_event(p, "ClusterMeet"));
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT(plan_requeue_after_ns(p) > 0 && plan_requeue_after_ns(p) <= PLAN_REQUEUE_SWITCHOVER_NS);
    plan_destroy(&p);
}

/* FRESHNESS and COMMAND RECORD (plan.h) in Cluster mode, as in Replication mode: the
 * commands go only from an observation whose every pod was probed after the operator's
 * last command (the simulation's findings: a FAILOVER FORCE sent twice, a FLUSHALL on a
 * promoted replica, both from older looks), each within the window the status records
 * before them; a record still in the future is closed and nothing decided. */
static void test_freshness(void)
{
    char text[8192];
    size_t at = 0;
    int64_t until = 0;
    /* the last command at 11:59:59, every pod probed 100 ms before 11:59:59.800: current */
    plan_t *p = meet_plan("2024-05-01T11:59:59Z", 100);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    actions_text(p, text, sizeof(text));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "CLUSTER MEET"));
    CU_ASSERT_TRUE(plan_command_window(p, &at, &until));
    CU_ASSERT_EQUAL(until, T1 + PLAN_COMMAND_WINDOW_NS);
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == PLAN_REDIS)
            CU_ASSERT_EQUAL(plan_action(p, i)->not_after_wall_ns, T1 + PLAN_COMMAND_WINDOW_NS);
    plan_destroy(&p);
    /* probed 900 ms before the observation: before the last command; nothing sent */
    p = meet_plan("2024-05-01T11:59:59Z", 900);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    actions_text(p, text, sizeof(text));
    CU_ASSERT_PTR_NULL(strstr(text, "CLUSTER"));
    CU_ASSERT_FALSE(plan_command_window(p, NULL, NULL));
    CU_ASSERT(plan_requeue_after_ns(p) > 0 && plan_requeue_after_ns(p) <= PLAN_REQUEUE_OBSERVE_NS);
    plan_destroy(&p);
    /* a record in the future (a plan that stopped in its window): closed, nothing sent */
    p = meet_plan("2024-05-01T12:00:05Z", 100);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    actions_text(p, text, sizeof(text));
    CU_ASSERT_PTR_NULL(strstr(text, "CLUSTER"));
    CU_ASSERT_TRUE(plan_command_window(p, NULL, &until));
    CU_ASSERT_EQUAL(until, 0);
    plan_destroy(&p);
}

/* Healthy: no command; the labels set as Redis says; Running with status.cluster and
 * ClusterHealthy True; then, with the status and labels in place, nothing at all. */
static void test_healthy_is_running(void)
{
    world_t w;
    world_open(&w, RC_JSON(""));
    w.obs = cluster_observation("c", MET, 6, "ok");
    for (int i = 0; i < 6; i++)
        json_object_array_add(w.pods, pod(i, NULL));
    char text[8192];
    plan_t *p = world_plan_text(&w, text, sizeof(text));
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
    json_object_put(w.rc);
    w.rc = parse(rcj);
    json_object_put(w.pods);
    w.pods = json_object_new_array();
    for (int i = 0; i < 6; i++)
        json_object_array_add(w.pods, pod(i, i % 2 ? "replica" : "primary"));
    p = world_plan(&w);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    actions_text(p, text, sizeof(text));
    if (plan_action_count(p))
        fprintf(stderr, "\n%s", text);
    plan_destroy(&p);
    world_close(&w);
}

/* A rollout (a pod of an old revision): the outdated replica of the highest index goes,
 * with its uid as precondition. */
static void test_rollout_deletes_a_replica(void)
{
    world_t w;
    world_open(&w, RC_JSON(",\"status\":{\"cluster\":{\"bootstrapped\":true}}"));
    for (size_t k = 0; k < json_object_array_length(w.sts); k++) /* every shard has a new revision */
        json_object_object_add(json_object_object_get(json_object_array_get_idx(w.sts, k), "status"),
                               "updateRevision", json_object_new_string("r2"));
    w.obs = cluster_observation("c", MET, 6, "ok");
    for (int i = 0; i < 6; i++)
        json_object_array_add(w.pods, pod(i, i % 2 ? "replica" : "primary"));
    char text[8192];
    plan_t *p = world_plan_text(&w, text, sizeof(text));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "delete pods c-shard2-1\n"));
    CU_ASSERT_TRUE(has_event(p, "RolledPod"));
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == PLAN_DELETE)
            CU_ASSERT_STRING_EQUAL(str_at(plan_action(p, i)->body, "preconditions uid"), "pod-uid-5");
    plan_destroy(&p);
    world_close(&w);
}

#define RC4_JSON                                                                                                 \
    "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"c\","         \
    "\"namespace\":\"ns\",\"uid\":\"uid-1\",\"generation\":2,\"resourceVersion\":\"5\","                       \
    "\"finalizers\":[\"cache.example.com/finalizer\"]},\"spec\":{\"size\":8,\"image\":\"redis\",\"version\":" \
    "\"7.2\",\"mode\":\"Cluster\",\"cluster\":{\"shards\":4,\"replicasPerShard\":1}},"                       \
    "\"status\":{\"cluster\":{\"bootstrapped\":true}}}"

/* Shards 3 -> 4: the new shard's nodes met and its replica following its seed, the plan
 * moves the highest slots of each shard to it (PLAN_SLOT_MOVE, slotmove.h's job as body),
 * with its Event; not Running while slots are to move; looked at again soon. */
static void test_scale_out_moves_slots(void)
{
    world_t w;
    world_open(&w, RC4_JSON);
    CU_ASSERT_EQUAL(json_object_array_length(w.sts), 4);
    w.obs = cluster_observation("c", MET, 8, "ok");
    for (int i = 0; i < 8; i++)
        json_object_array_add(w.pods, pod(i, i % 2 ? "replica" : i < 6 ? "primary" : NULL));
    plan_t *p = world_plan(&w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const plan_action_t *mv = NULL;
    int moves = 0;
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == PLAN_SLOT_MOVE && !moves++)
            mv = plan_action(p, i);
    CU_ASSERT_EQUAL(moves, 3); /* one move from each of the three shards to the fourth */
    CU_ASSERT_PTR_NOT_NULL_FATAL(mv);
    CU_ASSERT_STRING_EQUAL(mv->name, "c-shard0-0");
    CU_ASSERT_STRING_EQUAL(str_at(mv->body, "slots"), "4096-5460");
    CU_ASSERT_STRING_EQUAL(str_at(mv->body, "target pod"), "c-shard3-0");
    CU_ASSERT_STRING_EQUAL(str_at(mv->body, "target id"), CLUSTER_IDS[6]);
    CU_ASSERT_EQUAL(int_at(mv->body, "batchBytes"), 1 << 20);
    CU_ASSERT_EQUAL(json_object_array_length(at(mv->body, "others")), 2);
    CU_ASSERT_TRUE(has_event(p, "ClusterReshard"));
    CU_ASSERT(plan_requeue_after_ns(p) > 0 && plan_requeue_after_ns(p) <= PLAN_REQUEUE_RESHARD_NS);
    json_object *st = plan_status(p);
    CU_ASSERT_EQUAL(int_at(st, "cluster slotsToMove"), 4096);
    CU_ASSERT_STRING_NOT_EQUAL(plan_phase(p), "Running");
    const json_object *conds = at(st, "conditions"), *ch = NULL;
    for (size_t i = 0; i < json_object_array_length(conds); i++)
        if (!strcmp(str_at(json_object_array_get_idx(conds, i), "type"), "ClusterHealthy"))
            ch = json_object_array_get_idx(conds, i);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ch);
    CU_ASSERT_STRING_EQUAL(str_at(ch, "status"), "False");
    CU_ASSERT_STRING_EQUAL(str_at(ch, "reason"), "Resharding");
    plan_destroy(&p);
    world_close(&w);
}

/* A copy of shard 2's object in arr as shard 3's, with a uid. */
static void add_shard3(json_object *arr, const char *uid)
{
    json_object *o = NULL;
    json_object_deep_copy(json_object_array_get_idx(arr, 2), &o, NULL);
    json_object *meta = json_object_object_get(o, "metadata");
    json_object_object_add(meta, "name", json_object_new_string("c-shard3"));
    json_object_object_add(meta, "uid", json_object_new_string(uid));
    json_object_array_add(arr, o);
}

/* Shards 4 -> 3, the fourth drained and its nodes retired (each alone): its StatefulSet
 * and PDB deleted with their uids as preconditions, Event ShardRemoved; the other shards'
 * children untouched. */
static void test_scale_in_drops_the_shard(void)
{
    world_t w;
    world_open(&w, RC_JSON(",\"status\":{\"cluster\":{\"bootstrapped\":true}}"));
    add_shard3(w.sts, "sts-uid-3");
    add_shard3(w.pdbs, "pdb-uid-3");
    static const onode_t retired[8] = {{-1, "0-5460", 0},     {0, NULL, 0}, {-1, "5461-10922", 0}, {2, NULL, 0},
                                       {-1, "10923-16383", 0}, {4, NULL, 0}, {-1, NULL, 1},        {-1, NULL, 1}};
    w.obs = cluster_observation("c", retired, 8, "ok");
    for (int i = 0; i < 8; i++)
        json_object_array_add(w.pods, pod(i, i < 6 ? (i % 2 ? "replica" : "primary") : NULL));
    char text[8192];
    plan_t *p = world_plan_text(&w, text, sizeof(text));
    ASSERT_TEXT_HAS(text, "delete statefulsets c-shard3\n", "delete poddisruptionbudgets c-shard3\n");
    CU_ASSERT_PTR_NULL(strstr(text, "c-shard2\n")); /* the others untouched */
    CU_ASSERT_PTR_NULL(strstr(text, "redis "));
    CU_ASSERT_TRUE(has_event(p, "ShardRemoved"));
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_DELETE)
            CU_ASSERT_STRING_EQUAL(str_at(a->body, "preconditions uid"),
                                   !strcmp(a->resource, "statefulsets") ? "sts-uid-3" : "pdb-uid-3");
    }
    plan_destroy(&p);
    /* still in the cluster (not retired): the shard stays, its nodes are forgotten and reset */
    json_object_put(w.obs);
    w.obs = cluster_observation("c", MET, 8, "ok");
    p = world_plan(&w);
    actions_text(p, text, sizeof(text));
    CU_ASSERT_PTR_NULL(strstr(text, "delete statefulsets c-shard3\n"));
    ASSERT_TEXT_HAS(text, "redis pods c-shard1-0 CLUSTER FORGET 666666666666\n",
                    "redis pods c-shard3-0 CLUSTER RESET HARD\n");
    CU_ASSERT_TRUE(has_event(p, "ClusterNodeRetired"));
    plan_destroy(&p);
    world_close(&w);
}

/* ---- BACKUP in Cluster mode (plan_backup.h; docs/backup.md "Cluster mode") ------------- */

/* The RedisBackup "one" of the cluster c, with status (a JSON object text, "" none), in
 * an array. */
static json_object *backups_of(const char *status)
{
    return parsef("[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisBackup\",\"metadata\":{\"name\":\"one\","
                  "\"namespace\":\"ns\",\"uid\":\"uid-one\",\"resourceVersion\":\"9\"},\"spec\":{\"source\":{"
                  "\"cluster\":\"c\"},\"destination\":{\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"b\","
                  "\"prefix\":\"prod/cache\"},\"credentialsSecret\":{\"name\":\"s3\"}}%s%s}]",
                  *status ? ",\"status\":" : "", status);
}

/* w: a healthy cluster of 3 shards, its pods labelled. */
static void healthy_world(world_t *w)
{
    world_open(w, RC_JSON(""));
    w->obs = cluster_observation("c", MET, 6, "ok");
    for (int i = 0; i < 6; i++)
        json_object_array_add(w->pods, pod(i, i % 2 ? "replica" : "primary"));
}

/* The plan's action of kind on resource (the first), or NULL. */
static const plan_action_t *action_of(const plan_t *p, plan_action_kind_t kind, const char *resource)
{
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == kind && !strcmp(plan_action(p, i)->resource, resource))
            return plan_action(p, i);
    return NULL;
}

/* A healthy cluster's backup: one Job, one container per shard (shard-<k>), each taking
 * its shard's replica into <prefix>/<name>/shard-<k>.rdb with the slots its master serves;
 * the RedisBackup Running with each shard's source pod and slots. */
static void test_backup_takes_every_shard(void)
{
    world_t w;
    healthy_world(&w);
    w.backups = backups_of("");
    plan_t *p = world_plan(&w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const plan_action_t *job = action_of(p, PLAN_CREATE, "jobs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    const json_object *cs = at(job->body, "spec template spec containers");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(cs), 3);
    static const char *const slots[] = {"0-5460", "5461-10922", "10923-16383"};
    for (int k = 0; k < 3; k++) {
        const json_object *c = json_object_array_get_idx(cs, (size_t)k);
        char name[24], redis[40], key[64], cmd[2048];
        snprintf(name, sizeof(name), "shard-%d", k);
        snprintf(redis, sizeof(redis), " --redis 10.0.0.%d:6379 ", 2 * k + 2); /* the replica */
        snprintf(key, sizeof(key), " --key prod/cache/one/shard-%d.rdb ", k);
        CU_ASSERT_STRING_EQUAL(str_at(c, "name"), name);
        strs_line(at(c, "command"), cmd, sizeof(cmd) - 1);
        strcat(cmd, " "); /* banned-ok: room left (a test's fixed-size text) */
        ASSERT_TEXT_HAS(cmd, " take ", redis, key, slots[k]);
    }
    const plan_action_t *st = action_of(p, PLAN_UPDATE_STATUS, "redisbackups");
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    CU_ASSERT_STRING_EQUAL(str_at(st->body, "status phase"), "Running");
    CU_ASSERT_STRING_EQUAL(str_at(st->body, "status shards 1 sourcePod"), "c-shard1-1");
    CU_ASSERT_STRING_EQUAL(str_at(st->body, "status shards 2 slots"), "10923-16383");
    CU_ASSERT_TRUE(has_event(p, "BackupStarted"));
    plan_destroy(&p);
    world_close(&w);
}

/* A schedule's backup in Cluster mode: each shard's take keeps its own objects under
 * <prefix>/shard-<k> (take --prefix ... --keep N prunes per shard). */
static void test_backup_schedule_per_shard(void)
{
    world_t w;
    healthy_world(&w);
    w.backups = backups_of("");
    json_object_object_add(json_object_object_get(json_object_array_get_idx(w.backups, 0), "metadata"), "labels",
                           parse("{\"" RENDER_LABEL_SCHEDULE "\":\"c\"}"));
    plan_t *p = world_plan(&w);
    const plan_action_t *job = action_of(p, PLAN_CREATE, "jobs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    for (int k = 0; k < 3; k++) {
        char cmd[2048], prefix[64], path[64];
        snprintf(path, sizeof(path), "spec template spec containers %d command", k);
        snprintf(prefix, sizeof(prefix), " --prefix prod/cache/shard-%d --keep 7 ", k);
        strs_line(at(job->body, path), cmd, sizeof(cmd) - 1);
        strcat(cmd, " "); /* banned-ok: room left (a test's fixed-size text) */
        ASSERT_TEXT_HAS(cmd, prefix);
        CU_ASSERT_PTR_NULL(strstr(cmd, "--key"));
    }
    plan_destroy(&p);
    world_close(&w);
}

/* Shards 3 -> 4 under way: a new backup waits (Pending, why) while the slots move; a
 * running one holds the moves (none planned) until it is done. */
static void test_backup_and_reshard(void)
{
    world_t w;
    world_open(&w, RC4_JSON);
    w.obs = cluster_observation("c", MET, 8, "ok");
    for (int i = 0; i < 8; i++)
        json_object_array_add(w.pods, pod(i, i % 2 ? "replica" : i < 6 ? "primary" : NULL));
    w.backups = backups_of("");
    plan_t *p = world_plan(&w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_PTR_NULL(action_of(p, PLAN_CREATE, "jobs"));
    CU_ASSERT_PTR_NOT_NULL(action_of(p, PLAN_SLOT_MOVE, "pods"));
    const plan_action_t *st = action_of(p, PLAN_UPDATE_STATUS, "redisbackups");
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    CU_ASSERT_STRING_EQUAL(str_at(st->body, "status phase"), "Pending");
    ASSERT_TEXT_HAS(str_at(st->body, "status message"), "waiting for the reshard to finish");
    plan_destroy(&p);
    json_object_put(w.backups);
    w.backups = backups_of("{\"phase\":\"Running\",\"startTime\":\"2024-05-01T11:59:00Z\"}");
    w.jobs = parsef("[{\"metadata\":{\"name\":\"one\",\"labels\":{\"" RENDER_LABEL_BACKUP "\":\"one\"}}}]");
    p = world_plan(&w);
    CU_ASSERT_PTR_NULL(action_of(p, PLAN_SLOT_MOVE, "pods"));
    CU_ASSERT_EQUAL(int_at(plan_status(p), "cluster slotsToMove"), 4096); /* still to move, later */
    plan_destroy(&p);
    world_close(&w);
}

/* The backup pod's containers, shard-0..2, each terminated with exit code codes[k] and
 * message msgs[k]. */
static json_object *backup_pod(const int *codes, const char *const *msgs)
{
    json_object *cs = json_object_new_array();
    for (int k = 0; k < 3; k++) {
        json_object *t = parsef("{\"exitCode\":%d}", codes[k]);
        json_object_object_add(t, "message", json_object_new_string(msgs[k]));
        json_object *c = parsef("{\"name\":\"shard-%d\",\"state\":{}}", k);
        json_object_object_add(json_object_object_get(c, "state"), "terminated", t);
        json_object_array_add(cs, c);
    }
    json_object *pod = parsef("{\"metadata\":{\"name\":\"one-x\",\"labels\":{\"" RENDER_LABEL_BACKUP "\":\"one\"}},"
                              "\"status\":{\"phase\":\"%s\"}}",
                              codes[0] || codes[1] || codes[2] ? "Failed" : "Succeeded");
    json_object_object_add(json_object_object_get(pod, "status"), "containerStatuses", cs);
    json_object *arr = json_object_new_array();
    json_object_array_add(arr, pod);
    return arr;
}

/* FINISH: every shard's line ok: Succeeded, key the prefix the shards' keys share, size
 * their sum, each shard's key, sha256, size and slots; one shard failed: Failed naming it. */
static void test_backup_finish_shards(void)
{
    world_t w;
    healthy_world(&w);
    w.backups = backups_of("{\"phase\":\"Running\",\"sourcePod\":\"c-shard0-1\",\"shards\":[{\"shard\":0,"
                           "\"sourcePod\":\"c-shard0-1\",\"slots\":\"0-5460\"},{\"shard\":1,\"sourcePod\":"
                           "\"c-shard1-1\",\"slots\":\"5461-10922\"},{\"shard\":2,\"sourcePod\":\"c-shard2-1\","
                           "\"slots\":\"10923-16383\"}]}");
    w.jobs = parsef("[{\"metadata\":{\"name\":\"one\",\"labels\":{\"" RENDER_LABEL_BACKUP "\":\"one\"}}}]");
    char lines[3][512];
    const char *msgs[3];
    for (int k = 0; k < 3; k++) {
        snprintf(lines[k], sizeof(lines[k]), "{\"result\":\"ok\",\"key\":\"prod/cache/one/shard-%d.rdb\",\"size\":%d,"
                 "\"sha256\":\"%064d\",\"offset\":7,\"startTime\":\"2024-05-01T11:59:0%dZ\",\"completionTime\":"
                 "\"2024-05-01T11:59:3%dZ\"}", k, 100 * (k + 1), k, k, 3 - k);
        msgs[k] = lines[k];
    }
    w.bpods = backup_pod((const int[]){0, 0, 0}, msgs);
    plan_t *p = world_plan(&w);
    const plan_action_t *st = action_of(p, PLAN_UPDATE_STATUS, "redisbackups");
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    ASSERT_STRS_AT(st->body, {"status phase", "Succeeded"}, {"status key", "prod/cache/one/"},
                   {"status startTime", "2024-05-01T11:59:00Z"}, {"status completionTime", "2024-05-01T11:59:33Z"},
                   {"status shards 1 key", "prod/cache/one/shard-1.rdb"}, {"status shards 2 slots", "10923-16383"},
                   {"status shards 0 sourcePod", "c-shard0-1"});
    CU_ASSERT_EQUAL(int_at(st->body, "status size"), 600);
    CU_ASSERT_EQUAL(int_at(st->body, "status shards 2 size"), 300);
    CU_ASSERT_EQUAL(int_at(st->body, "status shards 1 shard"), 1);
    CU_ASSERT_STRING_EQUAL(str_at(st->body, "metadata resourceVersion"), "9"); /* the CAS */
    plan_destroy(&p);
    json_object_put(w.bpods);
    msgs[1] = "{\"result\":\"error\",\"message\":\"the shard's master serves 0-5000, not 5461-10922\"}";
    w.bpods = backup_pod((const int[]){0, 1, 0}, msgs);
    p = world_plan(&w);
    st = action_of(p, PLAN_UPDATE_STATUS, "redisbackups");
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    CU_ASSERT_STRING_EQUAL(str_at(st->body, "status phase"), "Failed");
    ASSERT_TEXT_HAS(str_at(st->body, "status message"), "shard 1: {\"result\":\"error\"", "0-5000");
    CU_ASSERT_PTR_NULL(strstr(str_at(st->body, "status message"), "shard 0"));
    CU_ASSERT_TRUE(has_event(p, "BackupFailed"));
    plan_destroy(&p);
    world_close(&w);
}

static const cu_entry_t tests[] = {
    CU_SUITE("plan: Cluster mode"),
    {"a new cluster: a StatefulSet and a PDB per shard", test_new_cluster_children},
    {"ten shards: the child writes in stages of at most EXEC_MAX_STAGE", test_many_shards_stages},
    {"fresh nodes are met from one anchor", test_fresh_nodes_are_met},
    {"healthy: Running, status.cluster, then a resync writes nothing", test_healthy_is_running},
    {"a rollout deletes the outdated replica of the highest index", test_rollout_deletes_a_replica},
    {"commands only from an observation newer than the last ones, within their record", test_freshness},
    {"shards 3 -> 4: slots move to the new shard (PLAN_SLOT_MOVE)", test_scale_out_moves_slots},
    {"shards 4 -> 3: a drained, retired shard's StatefulSet and PDB deleted", test_scale_in_drops_the_shard},
    {"a backup: one Job, a container per shard, each its replica, key and slots", test_backup_takes_every_shard},
    {"a backup waits for a reshard; a running one holds the moves", test_backup_and_reshard},
    {"a schedule's backup: each shard its own prefix <prefix>/shard-<k>", test_backup_schedule_per_shard},
    {"a backup's finish: every shard ok, Succeeded with each; one failed, Failed naming it",
     test_backup_finish_shards},
};

CU_MAIN(tests)
