/* observerd's whole loop (observer_run, in a child process) against three REAL
 * redis-server processes, a primary on 127.0.0.1 and two replicas on 127.0.0.2 and
 * 127.0.0.3 (one port: the pod IPs differ, as in a cluster), with this test playing
 * informerd: it binds the deltas PUB, the snapshot ROUTER and the observe PULL of a
 * runtime directory of its own, answers the snapshot with a RedisCluster and its three
 * pods, and reads what observerd sends and its metrics file. Shown: the first
 * observation (roles, links), offsets alone send nothing, a HOT hint has the pods probed
 * ten times a second until HOT 0 or its expiry (PINGs counted by a replica), a SIGSTOPped primary is
 * reported unreachable (and rdc_redis_up 0) within 3 s and again every second while
 * down, its return is reported, a pod deleted by a delta leaves the observation, an
 * informerd restart (heartbeats behind) brings a new snapshot and the observation again,
 * and SIGTERM ends the daemon with 0. */
#include "cu_table.h"
#include "observer_harness.h"
#include "redis_servers.h"

#include <CUnit/CUnit.h>

static oh_t h;
static server_t srv[3];
static const char *const ips[3] = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
static int port;

static char *pod_json(int i)
{
    static char buf[3][512];
    snprintf(buf[i], sizeof(buf[i]),
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"cache-%d\",\"namespace\":\"ns1\",\"labels\":"
             "{\"app.kubernetes.io/instance\":\"cache\",\"app.kubernetes.io/name\":\"redis\"}},"
             "\"status\":{\"phase\":\"Running\",\"podIP\":\"%s\"}}",
             i, ips[i]);
    return buf[i];
}

static const char RC_JSON[] =
    "{\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\",\"namespace\":\"ns1\"},\"spec\":{\"size\":3}}";

static oh_item_t snapshot[4];

static json_object *next_observed(int ms, char *key, size_t keycap)
{
    return oh_next_observed(&h, ms, key, keycap);
}

/* The value of the metric line starting with prefix in the metrics file, or -1. */
static double metric(const char *prefix)
{
    return oh_metric(&h, prefix);
}

static int all_linked(json_object *obs)
{
    json_object *nodes = NULL;
    json_object_object_get_ex(obs, "nodes", &nodes);
    if (json_object_array_length(nodes) != 3)
        return 0;
    for (int i = 0; i < 3; i++) {
        char pod[32];
        snprintf(pod, sizeof(pod), "cache-%d", i);
        json_object *n = oh_node_of(obs, pod);
        if (!n || oh_int(n, "reachable") != 1)
            return 0;
        if (i > 0 && oh_int(n, "linkUp") != 1)
            return 0;
    }
    return 1;
}

static int setup(void)
{
    port = free_port();
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    const char *const extra[] = {"--replicaof", ips[0], p, NULL};
    for (int i = 0; i < 3; i++) {
        if (server_start_at(&srv[i], ips[i], port, i ? extra : NULL)) {
            for (int k = 0; k <= i; k++)
                server_stop(&srv[k]); /* CUnit runs no cleanup after a failed init */
            return 1;
        }
    }
    static const char *const keys[4] = {"ns1/cache", "ns1/cache-0", "ns1/cache-1", "ns1/cache-2"};
    snapshot[0] = (oh_item_t){"RedisCluster", keys[0], RC_JSON};
    for (int i = 0; i < 3; i++)
        snapshot[i + 1] = (oh_item_t){"Pod", keys[i + 1], pod_json(i)};
    h.items = snapshot;
    h.nitems = 4;
    h.seq = 7;
    return oh_start(&h, "observer-test", port);
}

static int teardown(void)
{
    oh_stop(&h);
    for (int i = 0; i < 3; i++)
        server_stop(&srv[i]);
    return 0;
}

CU_HOOKS({"observer_run", setup, teardown, NULL, NULL});

/* The PINGs cache-1's server has answered since its last CONFIG RESETSTAT, or -1. */
static long long pings(int reset)
{
    redisContext *c = redisConnect(ips[1], port);
    long long n = -1;
    redisReply *r = c && !c->err ? redisCommand(c, "INFO commandstats") : NULL;
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "cmdstat_ping:calls=") : NULL;
    if (at)
        n = strtoll(at + strlen("cmdstat_ping:calls="), NULL, 10);
    else if (r && r->type == REDIS_REPLY_STRING)
        n = 0;
    freeReplyObject(r);
    if (reset && c && !c->err)
        freeReplyObject(redisCommand(c, "CONFIG RESETSTAT"));
    redisFree(c);
    return n;
}

static void *push; /* hint's socket, closed at the end of cadence_steps */

/* Send observerd a hint (workerd's side of proto.h HOT; an extra frame when bad). */
static void hint(const char *key, long long ms, int bad)
{
    if (!push) {
        char ep[256];
        push = zmq_socket(h.zctx, ZMQ_PUSH);
        int linger = 0;
        zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof(linger));
        zmq_connect(push, daemon_endpoint(h.dir, PROTO_EP_HINT, ep, sizeof(ep)));
    }
    rmsg_t *m = proto_hot_new(key, ms);
    if (bad)
        rmsg_addstr(m, "extra");
    rmsg_send(&m, push, 0);
    rmsg_destroy(&m);
}

/* PINGs on cache-1 within the next ms. */
static long long pings_within(int ms)
{
    pings(1);
    usleep((useconds_t)ms * 1000);
    return pings(0);
}

static void cadence_steps(void)
{
    long long cold = pings_within(1000);
    hint("ns1/cache", 2500, 0);
    usleep(100 * 1000);
    long long hot = pings_within(1000);
    hint("ns1/cache", 0, 0);
    usleep(100 * 1000);
    long long off = pings_within(1000);
    hint("ns1/cache", 700, 0);
    usleep(800 * 1000); /* runs out by itself */
    long long expired = pings_within(1000);
    hint("ns1/cache", 5000, 1); /* malformed: dropped */
    hint("ns1/other", 5000, 0); /* a cluster it does not follow: ignored */
    usleep(100 * 1000);
    long long ignored = pings_within(1000);
    fprintf(stderr, "\n  PINGs of a replica in 1 s: cold %lld, hot %lld, after HOT 0 %lld, after expiry %lld, "
                    "after bad hints %lld\n",
            cold, hot, off, expired, ignored);
    CU_ASSERT(cold >= 0 && cold <= 3);
    CU_ASSERT(hot >= 7);
    zmq_close(push);
    push = NULL;
    CU_ASSERT(off >= 0 && off <= 3);
    CU_ASSERT(expired >= 0 && expired <= 3);
    CU_ASSERT(ignored >= 0 && ignored <= 3);
    /* nothing changed meanwhile: no observation for any of it */
    char key[512];
    json_object *obs = next_observed(200, key, sizeof(key));
    CU_ASSERT_PTR_NULL(obs);
    json_object_put(obs);
}

static void test_observer_end_to_end(void)
{
    char key[512];
    /* 1. The first observation, then news until both replicas are linked. */
    json_object *obs = NULL;
    int linked = 0, messages = 0;
    int64_t end = clock_mono_ns() + 15 * NS_PER_SEC;
    while (!linked && clock_mono_ns() < end) {
        json_object_put(obs);
        obs = next_observed(1000, key, sizeof(key));
        if (obs) {
            messages++;
            CU_ASSERT_STRING_EQUAL(key, "ns1/cache");
            linked = all_linked(obs);
        }
    }
    CU_ASSERT_TRUE_FATAL(linked);
    json_object *n0 = oh_node_of(obs, "cache-0"), *n1 = oh_node_of(obs, "cache-1");
    CU_ASSERT_STRING_EQUAL(oh_str(n0, "role"), "master");
    CU_ASSERT_STRING_EQUAL(oh_str(n0, "ip"), "127.0.0.1");
    CU_ASSERT_STRING_EQUAL(oh_str(n1, "role"), "slave");
    CU_ASSERT_STRING_EQUAL(oh_str(n1, "masterHost"), "127.0.0.1");
    CU_ASSERT_EQUAL(oh_int(n1, "masterPort"), port);
    CU_ASSERT_EQUAL(oh_int(n0, "downSinceMs"), 0);
    CU_ASSERT(oh_int(n1, "offset") >= 0);
    json_object *at = NULL;
    CU_ASSERT_TRUE(json_object_object_get_ex(obs, "observedAt", &at));
    json_object_put(obs);

    /* 2. Writes move the offsets only: nothing is sent. */
    redisContext *c = redisConnect(ips[0], port);
    for (int i = 0; i < 50; i++)
        freeReplyObject(redisCommand(c, "SET k%d v", i));
    redisFree(c);
    obs = next_observed(2500, key, sizeof(key));
    CU_ASSERT_PTR_NULL(obs);
    json_object_put(obs);
    /* Metrics of a healthy cluster. */
    CU_ASSERT_EQUAL(metric("rdc_redis_up{namespace=\"ns1\",rediscluster=\"cache\",pod=\"cache-0\"} "), 1);
    CU_ASSERT_EQUAL(metric("rdc_redis_role{namespace=\"ns1\",rediscluster=\"cache\",pod=\"cache-0\"} "), 1);
    CU_ASSERT_EQUAL(metric("rdc_redis_role{namespace=\"ns1\",rediscluster=\"cache\",pod=\"cache-2\"} "), 0);
    CU_ASSERT(metric("rdc_redis_replication_lag_bytes{namespace=\"ns1\",rediscluster=\"cache\",pod=\"cache-1\"} ") >=
              0);
    CU_ASSERT(metric("redis_connected_clients{namespace=\"ns1\",rediscluster=\"cache\",pod=\"cache-0\"} ") >= 1);
    CU_ASSERT(metric("redis_memory_used_bytes{namespace=\"ns1\",rediscluster=\"cache\",pod=\"cache-1\"} ") > 0);
    CU_ASSERT_EQUAL(metric("redis_connected_slaves{namespace=\"ns1\",rediscluster=\"cache\",pod=\"cache-0\"} "), 2);

    /* 2b. The operator's record of its Redis commands (status.lastRedisCommandTime, a
     * RedisCluster delta): every pod is probed at once, and the observation is sent
     * though nothing changed, each node probed after that time; then nothing more. */
    char rc[512], t[40];
    int64_t cmd = clock_wall_ns();
    clock_format_rfc3339(cmd, 3, t, sizeof(t));
    snprintf(rc, sizeof(rc),
             "{\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\",\"namespace\":\"ns1\"},"
             "\"spec\":{\"size\":3},\"status\":{\"lastRedisCommandTime\":\"%s\"}}",
             t);
    int64_t t1 = clock_mono_ns();
    oh_delta(&h, "MODIFIED", "RedisCluster", "ns1/cache", rc);
    obs = next_observed(900, key, sizeof(key));
    CU_ASSERT_PTR_NOT_NULL_FATAL(obs);
    int64_t fresh_ms = (clock_mono_ns() - t1) / NS_PER_MS, observed = 0;
    CU_ASSERT(fresh_ms < 900);
    CU_ASSERT_EQUAL(clock_parse_rfc3339(oh_str(obs, "observedAt"), &observed), 0);
    for (int i = 0; i < 3; i++) {
        char pod[24];
        snprintf(pod, sizeof(pod), "cache-%d", i);
        int64_t ago = oh_int(oh_node_of(obs, pod), "probedAgoMs");
        CU_ASSERT(ago >= 0 && observed - ago * NS_PER_MS > cmd - NS_PER_MS); /* ms rounding */
    }
    fprintf(stderr, "\n  the operator's command record: an observation probed after it in %lld ms\n",
            (long long)fresh_ms);
    /* INFO keyspace: the 50 keys written, on the primary and its replicas */
    CU_ASSERT_EQUAL(oh_int(oh_node_of(obs, "cache-0"), "keys"), 50);
    CU_ASSERT_EQUAL(oh_int(oh_node_of(obs, "cache-1"), "keys"), 50);
    json_object_put(obs);
    obs = next_observed(1500, key, sizeof(key));
    CU_ASSERT_PTR_NULL(obs);
    json_object_put(obs);

    /* 2c. The probe cadence (cadence.h): a HOT hint has every pod probed every ~100 ms
     * (PINGs counted by the replica itself), HOT 0 and the hint's own expiry bring it back
     * to every second; a malformed hint is dropped. */
    cadence_steps();

    /* 3. The primary hangs: unreachable within 3 s, in the observation and the metric. */
    kill(srv[0].pid, SIGSTOP);
    int64_t t0 = clock_mono_ns();
    obs = next_observed(3000, key, sizeof(key));
    CU_ASSERT_PTR_NOT_NULL_FATAL(obs);
    int64_t seen_ms = (clock_mono_ns() - t0) / NS_PER_MS;
    CU_ASSERT(seen_ms < 2000);
    n0 = oh_node_of(obs, "cache-0");
    CU_ASSERT_EQUAL(oh_int(n0, "reachable"), 0);
    CU_ASSERT_STRING_EQUAL(oh_str(n0, "role"), "master"); /* last known */
    int64_t down1 = oh_int(n0, "downSinceMs");
    json_object_put(obs);
    double up = 1;
    while (up != 0 && clock_mono_ns() - t0 < 3 * NS_PER_SEC) {
        json_object_put(next_observed(100, key, sizeof(key)));
        up = metric("rdc_redis_up{namespace=\"ns1\",rediscluster=\"cache\",pod=\"cache-0\"} ");
    }
    int64_t metric_ms = (clock_mono_ns() - t0) / NS_PER_MS;
    CU_ASSERT_EQUAL(up, 0);
    CU_ASSERT(metric_ms < 3000);
    fprintf(stderr, "\n  SIGSTOP of the primary: observation after %lld ms, rdc_redis_up 0 after %lld ms\n",
            (long long)seen_ms, (long long)metric_ms);
    /* Still down: repeated about every second, downSinceMs growing. */
    obs = next_observed(2500, key, sizeof(key));
    CU_ASSERT_PTR_NOT_NULL_FATAL(obs);
    CU_ASSERT(oh_int(oh_node_of(obs, "cache-0"), "downSinceMs") > down1);
    CU_ASSERT_EQUAL(oh_int(oh_node_of(obs, "cache-0"), "reachable"), 0);
    json_object_put(obs);

    /* 4. Back: reported. */
    kill(srv[0].pid, SIGCONT);
    int back = 0;
    end = clock_mono_ns() + 5 * NS_PER_SEC;
    while (!back && clock_mono_ns() < end) {
        obs = next_observed(500, key, sizeof(key));
        back = obs && oh_int(oh_node_of(obs, "cache-0"), "reachable") == 1;
        json_object_put(obs);
    }
    CU_ASSERT_TRUE(back);

    /* 5. A pod deleted (a delta): the observation has two nodes. */
    oh_delta(&h, "DELETED", "Pod", "ns1/cache-2", pod_json(2));
    obs = next_observed(3000, key, sizeof(key));
    CU_ASSERT_PTR_NOT_NULL_FATAL(obs);
    json_object *nodes = NULL;
    json_object_object_get_ex(obs, "nodes", &nodes);
    CU_ASSERT_EQUAL(json_object_array_length(nodes), 2);
    CU_ASSERT_PTR_NULL(oh_node_of(obs, "cache-2"));
    json_object_put(obs);

    /* 6. informerd "restarts": its heartbeats fall behind our sequence number twice; a
     * new snapshot (with cache-2 back) follows, and the observation is sent again. */
    h.seq = 1;
    for (int i = 0; i < 2; i++) {
        rmsg_t *hugz = rmsg_new();
        rmsg_addstr(hugz, PROTO_HUGZ);
        rmsg_addstr(hugz, "1");
        rmsg_send(&hugz, h.pub, 0);
    }
    obs = next_observed(4000, key, sizeof(key));
    CU_ASSERT_PTR_NOT_NULL_FATAL(obs);
    json_object_object_get_ex(obs, "nodes", &nodes);
    CU_ASSERT_EQUAL(json_object_array_length(nodes), 3);
    json_object_put(obs);

    /* 7. SIGTERM: exit 0. */
    CU_ASSERT_TRUE(oh_sigterm(&h));
}

static const cu_entry_t tests[] = {
    CU_SUITE("observer_run"),
    {"observerd against three real Redis servers", test_observer_end_to_end},
};

CU_MAIN(tests)
