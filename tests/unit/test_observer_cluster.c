/* observerd in Cluster mode (observer_run in a child process, observer_harness.h) against
 * four REAL redis-server processes with cluster-enabled (127.78.N.1..4:6379, N = pid %
 * 250 + 1, each announcing its own address: pods of RedisCluster ns1/shop, spec.mode
 * Cluster) and one plain redis-server (127.78.N.9: the pod of ns1/plain, Replication
 * mode), with this test playing informerd. Shown:
 *   - each node of shop carries a "cluster" object: its CLUSTER NODES normalized (cn_parse
 *     reads it back), cluster_state and the slot counts; plain's node carries none;
 *   - the slots and the replica the test assigns itself (CLUSTER MEET, ADDSLOTSRANGE,
 *     REPLICATE) show: state ok, 16384 slots assigned and ok, 4 known nodes, at most one
 *     observation a probe round while every node's view changes;
 *   - ping-sent / pong-recv, which move in every CLUSTER NODES answer, are never news: a
 *     quiet window of 3 s while the raw text changed; an open slot (SETSLOT MIGRATING,
 *     seen only in CLUSTER NODES) is news, and so is its end;
 *   - the metrics rdc_redis_cluster_* for shop's pods only, and rdc_redis_role (from INFO
 *     replication) 1 for a shard's master, 0 for its replica;
 *   - the plain server never got a CLUSTER command (INFO commandstats), shop's did;
 *   - observerd --once (observer_once, over a fake API server) prints the cluster object;
 *   - plain switched to Cluster mode (a delta): its server, without cluster support,
 *     still answers, its cluster object says why it has no nodes text, and the warning
 *     is logged once;
 *   - SIGTERM ends observerd with 0 (and LeakSanitizer's check under the sanitizers).
 * The tests run in order: each starts from where the one before left the servers. */
#include "clusternodes.h"
#include "cu_table.h"
#include "fake_api.h"
#include "observer_harness.h"
#include "redis_servers.h"

#include <CUnit/CUnit.h>
#include <stdio.h>

#define NODES 4
#define PLAIN NODES /* srv[] index of the plain server */

static oh_t h;
static server_t srv[NODES + 1];
static char ip[NODES + 1][32];
static char node_dir[128];
static const char *const pods[NODES + 1] = {"shop-shard0-0", "shop-shard1-0", "shop-shard2-0", "shop-shard0-1",
                                            "plain-0"};
static char pod_json[NODES + 1][512];
static char pod_keys[NODES + 1][64];
static oh_item_t snapshot[NODES + 3];
static json_object *shop_obs, *plain_obs; /* the latest observation of each */

static const char SHOP_JSON[] = "{\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"shop\",\"namespace\":\"ns1\"},"
                                "\"spec\":{\"mode\":\"Cluster\",\"size\":4,\"cluster\":{\"shards\":3}}}";
static const char PLAIN_JSON[] =
    "{\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"plain\",\"namespace\":\"ns1\"},\"spec\":{\"size\":1}}";

static void make_pod(int i)
{
    snprintf(pod_keys[i], sizeof(pod_keys[i]), "ns1/%s", pods[i]);
    snprintf(pod_json[i], sizeof(pod_json[i]),
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\",\"labels\":"
             "{\"app.kubernetes.io/instance\":\"%s\",\"app.kubernetes.io/managed-by\":\"rediscluster-operator\"}},"
             "\"status\":{\"phase\":\"Running\",\"podIP\":\"%s\"}}",
             pods[i], i == PLAIN ? "plain" : "shop", ip[i]);
}

static int start_node(int i)
{
    if (i == PLAIN)
        return server_start_at(&srv[i], ip[i], 6379, NULL);
    char d[160], conf[192];
    snprintf(d, sizeof(d), "%s/n%d", node_dir, i);
    mkdir(d, 0700);
    snprintf(conf, sizeof(conf), "%s/nodes.conf", d);
    const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf, "--cluster-node-timeout",
                           "5000", "--cluster-announce-ip", ip[i], "--dir", d, NULL};
    return server_start_at(&srv[i], ip[i], 6379, extra);
}

static int setup(void)
{
    int net = (int)(getpid() % 250) + 1;
    snprintf(node_dir, sizeof(node_dir), "/tmp/rdc-observer-cluster-nodes-%d", (int)getpid());
    if (mkdir(node_dir, 0700))
        return 1;
    for (int i = 0; i <= NODES; i++) {
        snprintf(ip[i], sizeof(ip[i]), "127.78.%d.%d", net, i == PLAIN ? 9 : i + 1);
        make_pod(i);
        if (start_node(i)) {
            for (int k = 0; k <= i; k++)
                server_stop(&srv[k]); /* CUnit runs no cleanup after a failed init */
            tmpdir_remove(node_dir);
            return 1;
        }
    }
    snapshot[0] = (oh_item_t){"RedisCluster", "ns1/shop", SHOP_JSON};
    snapshot[1] = (oh_item_t){"RedisCluster", "ns1/plain", PLAIN_JSON};
    for (int i = 0; i <= NODES; i++)
        snapshot[i + 2] = (oh_item_t){"Pod", pod_keys[i], pod_json[i]};
    h.items = snapshot;
    h.nitems = NODES + 3;
    h.seq = 3;
    h.log_to_file = 1;
    return oh_start(&h, "observer-cluster", 6379);
}

static int teardown(void)
{
    oh_stop(&h);
    for (int i = 0; i <= NODES; i++)
        server_stop(&srv[i]);
    json_object_put(shop_obs);
    json_object_put(plain_obs);
    tmpdir_remove(node_dir);
    return 0;
}

CU_HOOKS({"observerd in Cluster mode", setup, teardown, NULL, NULL});

/* The next observation of want ("ns1/shop" or "ns1/plain") within ms, kept in shop_obs or
 * plain_obs as every observation that comes meanwhile; NULL when none came. */
static json_object *next_of(const char *want, int ms)
{
    int64_t end = clock_mono_ns() + (int64_t)ms * NS_PER_MS;
    while (clock_mono_ns() < end) {
        char key[256] = "";
        json_object *o = oh_next_observed(&h, (int)((end - clock_mono_ns()) / NS_PER_MS) + 1, key, sizeof(key));
        if (!o)
            break;
        json_object **slot = strcmp(key, "ns1/shop") == 0 ? &shop_obs : &plain_obs;
        json_object_put(*slot);
        *slot = o;
        if (!strcmp(key, want))
            return o;
    }
    return NULL;
}

static json_object *next_shop(int ms)
{
    return next_of("ns1/shop", ms);
}

static json_object *cluster_of(json_object *obs, int i)
{
    json_object *cl = NULL;
    json_object_object_get_ex(oh_node_of(obs, pods[i]), "cluster", &cl);
    return cl;
}

/* Node i's cluster object in obs: its nodes text parsed into *view (NULL when it has none). */
static void view_of(json_object *obs, int i, cn_view_t **view)
{
    *view = NULL;
    const char *text = oh_str(cluster_of(obs, i), "nodes");
    char err[256];
    if (*text && cn_parse(text, strlen(text), view, err, sizeof(err)))
        fprintf(stderr, "\n  %s: cn_parse: %s", pods[i], err);
}

/* A command's reply text from node i ("" on error; the caller frees). */
static char *ask(int i, const char *cmd)
{
    redisContext *c = redisConnect(ip[i], 6379);
    redisReply *r = c && !c->err ? redisCommand(c, cmd) : NULL;
    char *s = strdup(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? r->str : "");
    if (r && r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "\n  %s on %s: %s", cmd, pods[i], r->str);
    freeReplyObject(r);
    redisFree(c);
    return s;
}

static void node_id(int i, char *id, size_t cap)
{
    char *s = ask(i, "CLUSTER MYID");
    snprintf(id, cap, "%s", s);
    free(s);
}

/* 1 when obs holds every node of shop and each one's cluster section and parsed CLUSTER
 * NODES are as says(i, cluster, view) wants. */
static int every_node(json_object *obs, int (*says)(int i, json_object *cl, const cn_view_t *view))
{
    int ok = obs != NULL;
    for (int i = 0; ok && i < NODES; i++) {
        json_object *cl = cluster_of(obs, i);
        cn_view_t *view = NULL;
        view_of(obs, i, &view);
        ok = cl && view && says(i, cl, view);
        cn_view_destroy(&view);
    }
    return ok;
}

/* What a fresh node says: itself alone, no slot. */
static int fresh_node(int i, json_object *cl, const cn_view_t *view)
{
    return view->n == 1 && cn_myself(view) && !strcmp(cn_myself(view)->ip, ip[i]) &&
           !strcmp(oh_str(cl, "state"), "fail") && oh_int(cl, "slotsAssigned") == 0 &&
           oh_int(cl, "knownNodes") == 1 && oh_int(cl, "slotsOk") == 0 && oh_int(cl, "currentEpoch") >= 0;
}

/* Every node of shop in obs says what a fresh node says. */
static int fresh(json_object *obs)
{
    return every_node(obs, fresh_node);
}

static void test_first_observation(void)
{
    int64_t end = clock_mono_ns() + 15 * NS_PER_SEC;
    while ((!fresh(shop_obs) || !plain_obs) && clock_mono_ns() < end)
        next_shop(1000);
    CU_ASSERT_TRUE_FATAL(fresh(shop_obs));
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain_obs);
    json_object *plain = oh_node_of(plain_obs, "plain-0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    CU_ASSERT_EQUAL(oh_int(plain, "reachable"), 1);
    CU_ASSERT_FALSE(json_object_object_get_ex(plain, "cluster", NULL));
    CU_ASSERT_STRING_EQUAL(oh_str(oh_node_of(shop_obs, pods[0]), "role"), "master");
}

/* A node of the cluster the test built: ok, every slot, 4 nodes. */
static int assembled_node(int i, json_object *cl, const cn_view_t *view)
{
    (void)i;
    return view->n == NODES && !strcmp(oh_str(cl, "state"), "ok") && oh_int(cl, "slotsAssigned") == CN_SLOTS &&
           oh_int(cl, "slotsOk") == CN_SLOTS && oh_int(cl, "slotsPfail") == 0 && oh_int(cl, "slotsFail") == 0 &&
           oh_int(cl, "knownNodes") == NODES;
}

/* Every node of shop in obs sees the cluster the test built, its replica linked. */
static int assembled(json_object *obs)
{
    return every_node(obs, assembled_node) && !strcmp(oh_str(oh_node_of(obs, pods[3]), "role"), "slave") &&
           oh_int(oh_node_of(obs, pods[3]), "linkUp") == 1;
}

/* The test builds the cluster itself (as the operator's plan will): meet, slots, replica. */
static void test_slots_assigned(void)
{
    char cmd[128], master[64];
    for (int i = 1; i < NODES; i++) {
        snprintf(cmd, sizeof(cmd), "CLUSTER MEET %s 6379", ip[i]);
        free(ask(0, cmd));
    }
    static const char *const ranges[3] = {"0 5460", "5461 10922", "10923 16383"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof(cmd), "CLUSTER ADDSLOTSRANGE %s", ranges[i]);
        free(ask(i, cmd));
    }
    node_id(0, master, sizeof(master));
    snprintf(cmd, sizeof(cmd), "CLUSTER REPLICATE %s", master);
    int replicating = 0;
    for (int tries = 0; tries < 100 && !replicating; tries++) {
        char *nodes = ask(3, "CLUSTER NODES");
        if (strstr(nodes, master)) { /* gossip told it of the master */
            char *ok = ask(3, cmd);
            replicating = !strcmp(ok, "OK");
            free(ok);
        }
        free(nodes);
        if (!replicating)
            nap_ms(100);
    }
    CU_ASSERT_TRUE_FATAL(replicating);
    /* Every view changes as the nodes meet: one observation a probe round at most (all
     * four nodes' probes end within a few ms of each other, a round a second). */
    int64_t end = clock_mono_ns() + 30 * NS_PER_SEC, last = 0, min_gap = INT64_MAX;
    int sent = 0;
    while (!assembled(shop_obs) && clock_mono_ns() < end) {
        if (!next_shop(1000))
            continue;
        int64_t at = clock_mono_ns();
        if (sent++ && at - last < min_gap)
            min_gap = at - last;
        last = at;
    }
    CU_ASSERT_TRUE_FATAL(assembled(shop_obs));
    CU_ASSERT(sent >= 1);
    CU_ASSERT(sent < 2 || min_gap > 200 * NS_PER_MS); /* before: one per node, within a millisecond */
    cn_view_t *view = NULL;
    view_of(shop_obs, 3, &view);
    CU_ASSERT_PTR_NOT_NULL_FATAL(view);
    CU_ASSERT_TRUE(cn_myself(view)->flags & CN_REPLICA);
    CU_ASSERT_STRING_EQUAL(cn_myself(view)->master, master);
    cn_view_destroy(&view);
}

/* The raw answers move every second (ping-sent, pong-recv); the observation does not. */
static void test_ping_pong_is_no_news(void)
{
    int quiet = 0, moved = 0;
    int64_t end = clock_mono_ns() + 40 * NS_PER_SEC;
    while (!quiet && clock_mono_ns() < end) {
        char *before = ask(1, "CLUSTER NODES");
        json_object *o = next_shop(3000);
        char *after = ask(1, "CLUSTER NODES");
        quiet = o == NULL; /* 3 s without news (the cluster may still settle its epochs) */
        moved = strcmp(before, after) != 0;
        free(before);
        free(after);
    }
    CU_ASSERT_TRUE(quiet);
    CU_ASSERT_TRUE(moved);
    CU_ASSERT_TRUE(assembled(shop_obs));
}

/* An open slot shows only in its node's CLUSTER NODES: news, and so is its end. */
static void test_nodes_change_is_news(void)
{
    char target[64], cmd[160], want[96];
    node_id(1, target, sizeof(target));
    snprintf(cmd, sizeof(cmd), "CLUSTER SETSLOT 42 MIGRATING %s", target);
    snprintf(want, sizeof(want), " [42->-%s]", target);
    free(ask(0, cmd));
    int64_t t0 = clock_mono_ns();
    json_object *o = next_shop(3000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT(clock_mono_ns() - t0 < 2500 * NS_PER_MS);
    CU_ASSERT_PTR_NOT_NULL(strstr(oh_str(cluster_of(o, 0), "nodes"), want));
    CU_ASSERT_PTR_NULL(strstr(oh_str(cluster_of(o, 1), "nodes"), "[42"));
    CU_ASSERT_STRING_EQUAL(oh_str(cluster_of(o, 0), "state"), "ok");
    free(ask(0, "CLUSTER SETSLOT 42 STABLE"));
    o = next_shop(3000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_PTR_NULL(strstr(oh_str(cluster_of(o, 0), "nodes"), "[42"));
}

static double pod_metric(const char *name, int i)
{
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "%s{namespace=\"ns1\",rediscluster=\"%s\",pod=\"%s\"} ", name,
             i == PLAIN ? "plain" : "shop", pods[i]);
    return oh_metric(&h, prefix);
}

static void test_metrics(void)
{
    for (int tries = 0; tries < 30 && pod_metric("rdc_redis_cluster_known_nodes", 3) != NODES; tries++)
        nap_ms(100);
    for (int i = 0; i < NODES; i++) {
        CU_ASSERT_EQUAL(pod_metric("rdc_redis_cluster_state", i), 1);
        CU_ASSERT_EQUAL(pod_metric("rdc_redis_cluster_slots_assigned", i), CN_SLOTS);
        CU_ASSERT_EQUAL(pod_metric("rdc_redis_cluster_slots_ok", i), CN_SLOTS);
        CU_ASSERT_EQUAL(pod_metric("rdc_redis_cluster_slots_pfail", i), 0);
        CU_ASSERT_EQUAL(pod_metric("rdc_redis_cluster_slots_fail", i), 0);
        CU_ASSERT_EQUAL(pod_metric("rdc_redis_cluster_known_nodes", i), NODES);
        CU_ASSERT_EQUAL(pod_metric("rdc_redis_role", i), i == 3 ? 0 : 1); /* per shard: its master, its replica */
    }
    CU_ASSERT_EQUAL(pod_metric("rdc_redis_up", PLAIN), 1);
    CU_ASSERT_EQUAL(pod_metric("rdc_redis_role", PLAIN), 1);
    CU_ASSERT_EQUAL(pod_metric("rdc_redis_cluster_state", PLAIN), -1); /* absent */
    CU_ASSERT_EQUAL(pod_metric("rdc_redis_cluster_known_nodes", PLAIN), -1);
}

/* How many times node i ran cmd ("cluster|nodes"), from INFO commandstats; -1 when never. */
static long calls(int i, const char *cmd)
{
    char *stats = ask(i, "INFO commandstats"), key[64];
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", cmd);
    const char *at = strstr(stats, key);
    long n = at ? strtol(at + strlen(key), NULL, 10) : -1;
    free(stats);
    return n;
}

/* INFO commandstats: CLUSTER NODES and CLUSTER INFO with every probe of shop's nodes
 * (one a second), never a CLUSTER command on plain's. */
static void test_commands_sent(void)
{
    long nodes = calls(2, "cluster|nodes"), info = calls(2, "cluster|info");
    long ping = calls(PLAIN, "ping");
    nap_ms(2500);
    CU_ASSERT(calls(2, "cluster|nodes") >= nodes + 2);
    CU_ASSERT(calls(2, "cluster|info") >= info + 2);
    CU_ASSERT(calls(PLAIN, "ping") >= ping + 2);
    char *plain = ask(PLAIN, "INFO commandstats");
    CU_ASSERT_PTR_NULL(strstr(plain, "cmdstat_cluster"));
    free(plain);
}

/* --once: the fake API server serves the RedisClusters and their pods. */
static int once_api(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                    buf_t *out)
{
    (void)user;
    (void)body;
    if (strcmp(method, "GET") != 0)
        return 405;
    if (!strcmp(url, "/apis/cache.example.com/v1/namespaces/ns1/redisclusters/shop"))
        return buf_puts(out, SHOP_JSON) ? 500 : 200;
    if (!strcmp(url, "/apis/cache.example.com/v1/namespaces/ns1/redisclusters/plain"))
        return buf_puts(out, PLAIN_JSON) ? 500 : 200;
    if (strcmp(url, "/api/v1/namespaces/ns1/pods") != 0)
        return 404;
    const char *sel = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "labelSelector");
    int plain = sel && strstr(sel, "instance=plain");
    buf_puts(out, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[");
    for (int i = plain ? PLAIN : 0; i < (plain ? PLAIN + 1 : NODES); i++)
        buf_printf(out, "%s%s", i == (plain ? PLAIN : 0) ? "" : ",", pod_json[i]);
    return buf_puts(out, "]}") ? 500 : 200;
}

/* observer_once for ns1/name into a parsed JSON (NULL when it printed none). */
static json_object *once(kube_client_t *client, const char *name)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(observer_once(client, "ns1", name, 6379, 500 * NS_PER_MS, f), 0);
    fclose(f);
    json_object *o = json_tokener_parse(text);
    free(text);
    return o;
}

static void test_once(void)
{
    fake_api_t api;
    fake_api_start(&api, once_api, NULL);
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    fake_api_connect(&api, NULL, &cfg, &client);
    json_object *o = once(client, "shop");
    CU_ASSERT_PTR_NOT_NULL(o);
    CU_ASSERT_TRUE(assembled(o));
    json_object *cl = cluster_of(o, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(oh_str(cl, "nodes"), " myself,master "));
    CU_ASSERT_TRUE(json_object_object_get_ex(oh_node_of(o, pods[2]), "info", NULL));
    json_object_put(o);
    o = once(client, "plain");
    json_object *plain = oh_node_of(o, "plain-0");
    CU_ASSERT_PTR_NOT_NULL(plain);
    CU_ASSERT_EQUAL(oh_int(plain, "reachable"), 1);
    CU_ASSERT_FALSE(json_object_object_get_ex(plain, "cluster", NULL));
    json_object_put(o);
    fake_api_close(&api, &cfg, &client);
}

/* A Cluster-mode cluster whose pod runs Redis without cluster support: the pod answers,
 * its cluster object carries the error instead of nodes, the warning is logged once. */
static void test_cluster_refused(void)
{
    static const char PLAIN_CLUSTER[] = "{\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"plain\","
                                        "\"namespace\":\"ns1\"},\"spec\":{\"mode\":\"Cluster\",\"size\":1}}";
    oh_delta(&h, "MODIFIED", "RedisCluster", "ns1/plain", PLAIN_CLUSTER);
    json_object *o = next_of("ns1/plain", 4000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    json_object *plain = oh_node_of(o, "plain-0"), *cl = NULL;
    CU_ASSERT_EQUAL(oh_int(plain, "reachable"), 1);
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(plain, "cluster", &cl));
    CU_ASSERT_FALSE(json_object_object_get_ex(cl, "nodes", NULL));
    CU_ASSERT_PTR_NOT_NULL(strstr(oh_str(cl, "error"), "cluster support disabled"));
    CU_ASSERT_FALSE(json_object_object_get_ex(cl, "state", NULL));
    CU_ASSERT_EQUAL(oh_int(cl, "slotsAssigned"), -1);
    CU_ASSERT_PTR_NULL(next_of("ns1/plain", 2500)); /* the same error: no news */
    static const char *const warning[] = {"CLUSTER NODES is not usable", "plain-0", "cluster support disabled"};
    CU_ASSERT_EQUAL(oh_log_count(&h, warning, 3), 1);
}

/* SIGTERM: exit 0 (under the sanitizers LeakSanitizer has then checked the daemon, its
 * kept observation and the nodes' cluster texts included). */
static void test_sigterm(void)
{
    CU_ASSERT_TRUE(oh_sigterm(&h));
}

static const cu_entry_t tests[] = {
    CU_SUITE("observerd in Cluster mode"),
    {"the first observation: a cluster object per node of shop, none for plain", test_first_observation},
    {"slots and a replica assigned by the test show", test_slots_assigned},
    {"ping-sent / pong-recv moving is no news", test_ping_pong_is_no_news},
    {"an open slot in CLUSTER NODES is news, and its end", test_nodes_change_is_news},
    {"rdc_redis_cluster_* for Cluster-mode pods, rdc_redis_role per shard", test_metrics},
    {"CLUSTER commands only to Cluster-mode pods", test_commands_sent},
    {"observerd --once prints the cluster object", test_once},
    {"a Cluster-mode pod without cluster support: the error, warned once", test_cluster_refused},
    {"SIGTERM ends it with 0", test_sigterm},
};

CU_MAIN(tests)
