/* observerd's whole loop (observer_run, in a child process) against three REAL
 * redis-server processes, a primary on 127.0.0.1 and two replicas on 127.0.0.2 and
 * 127.0.0.3 (one port: the pod IPs differ, as in a cluster), with this test playing
 * informerd: it binds the deltas PUB, the snapshot ROUTER and the observe PULL of a
 * runtime directory of its own, answers the snapshot with a RedisCluster and its three
 * pods, and reads what observerd sends and its metrics file. Shown: the first
 * observation (roles, links), offsets alone send nothing, a SIGSTOPped primary is
 * reported unreachable (and rdc_redis_up 0) within 3 s and again every second while
 * down, its return is reported, a pod deleted by a delta leaves the observation, an
 * informerd restart (heartbeats behind) brings a new snapshot and the observation again,
 * and SIGTERM ends the daemon with 0. */
#include "cu_table.h"
#include "daemon.h"
#include "observer.h"
#include "proto.h"
#include "redis_servers.h"
#include "rmsg.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <zmq.h>

static char dir[128];
static void *zctx, *pub, *router, *pull;
static server_t srv[3];
static const char *const ips[3] = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
static int port;
static pid_t child;
static uint64_t seq;

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

static void *bind_at(int type, const char *name)
{
    char ep[256];
    void *s = zmq_socket(zctx, type);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    if (zmq_bind(s, daemon_endpoint(dir, name, ep, sizeof(ep)))) {
        zmq_close(s);
        return NULL;
    }
    return s;
}

static void answer_snapshot(void)
{
    rmsg_t *m;
    while ((m = rmsg_recv(router, ZMQ_DONTWAIT, 8, 1 << 20)) != NULL) {
        size_t idlen = 0;
        const char *id = rmsg_frame(m, 0, &idlen);
        if (rmsg_frame_is(m, 1, PROTO_ICANHAZ)) {
            const char *kinds[4] = {"RedisCluster", "Pod", "Pod", "Pod"};
            const char *keys[4] = {"ns1/cache", "ns1/cache-0", "ns1/cache-1", "ns1/cache-2"};
            for (int i = 0; i < 4; i++) {
                rmsg_t *r = rmsg_new();
                rmsg_addmem(r, id, idlen);
                rmsg_addstr(r, PROTO_SNAP);
                rmsg_addf(r, "%llu", (unsigned long long)seq);
                rmsg_addstr(r, kinds[i]);
                rmsg_addstr(r, keys[i]);
                rmsg_addstr(r, "1");
                rmsg_addstr(r, i ? pod_json(i - 1) : RC_JSON);
                rmsg_send(&r, router, 0);
            }
            rmsg_t *r = rmsg_new();
            rmsg_addmem(r, id, idlen);
            rmsg_addstr(r, PROTO_KTHXBAI);
            rmsg_addf(r, "%llu", (unsigned long long)seq);
            rmsg_send(&r, router, 0);
        }
        rmsg_destroy(&m);
    }
}

/* The next OBSERVED within ms (answering snapshot requests meanwhile), parsed; NULL when
 * none came. *key gets its key. */
static json_object *next_observed(int ms, char *key, size_t keycap)
{
    int64_t end = clock_mono_ns() + (int64_t)ms * NS_PER_MS;
    while (clock_mono_ns() < end) {
        zmq_pollitem_t it[2] = {{pull, 0, ZMQ_POLLIN, 0}, {router, 0, ZMQ_POLLIN, 0}};
        zmq_poll(it, 2, 50);
        answer_snapshot();
        rmsg_t *m = rmsg_recv(pull, ZMQ_DONTWAIT, 8, 1 << 20);
        if (!m)
            continue;
        json_object *o = NULL;
        if (rmsg_frame_is(m, 0, PROTO_OBSERVED) && rmsg_size(m) == 3) {
            char *k = rmsg_strdup(m, 1);
            snprintf(key, keycap, "%s", k ? k : "");
            free(k);
            char *text = rmsg_strdup(m, 2);
            o = text ? json_tokener_parse(text) : NULL;
            free(text);
        }
        rmsg_destroy(&m);
        if (o)
            return o;
    }
    return NULL;
}

static json_object *node_of(json_object *obs, const char *pod)
{
    json_object *nodes = NULL;
    json_object_object_get_ex(obs, "nodes", &nodes);
    for (size_t i = 0; i < json_object_array_length(nodes); i++) {
        json_object *n = json_object_array_get_idx(nodes, i), *p = NULL;
        if (json_object_object_get_ex(n, "pod", &p) && strcmp(json_object_get_string(p), pod) == 0)
            return n;
    }
    return NULL;
}

static const char *field_str(json_object *n, const char *f)
{
    json_object *v = NULL;
    return json_object_object_get_ex(n, f, &v) ? json_object_get_string(v) : "";
}

static int64_t field_int(json_object *n, const char *f)
{
    json_object *v = NULL;
    return json_object_object_get_ex(n, f, &v) ? json_object_get_int64(v) : -999;
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
        json_object *n = node_of(obs, pod);
        if (!n || field_int(n, "reachable") != 1)
            return 0;
        if (i > 0 && field_int(n, "linkUp") != 1)
            return 0;
    }
    return 1;
}

/* The value of the metric line starting with prefix in the metrics file, or -1. */
static double metric(const char *prefix)
{
    char path[256], line[1024];
    snprintf(path, sizeof(path), "%s/metrics/observerd-test.prom", dir);
    FILE *f = fopen(path, "r");
    double v = -1;
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            v = strtod(line + strlen(prefix), NULL);
            break;
        }
    }
    if (f)
        fclose(f);
    return v;
}

static int setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/rdc-observer-test-%d", (int)getpid());
    char mdir[160];
    snprintf(mdir, sizeof(mdir), "%s/metrics", dir);
    mkdir(dir, 0700);
    mkdir(mdir, 0700);
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
    seq = 7;
    /* Fork before this process makes its ZeroMQ context (and its threads): the child
     * connects, and ZeroMQ reconnects once the binds below exist. */
    child = fork();
    if (child == 0) {
        char err[128];
        int sfd = daemon_signalfd(err, sizeof(err));
        rdc_common_opts_t opts;
        opts_common_defaults(&opts);
        observer_config_t cfg = {
            .client = NULL,
            .opts = &opts,
            .runtime_dir = dir,
            .name = "observerd-test",
            .signal_fd = sfd,
            .probe_interval_ns = NS_PER_SEC,
            .probe_timeout_ns = 500 * NS_PER_MS,
            .info_every = 5,
            .redis_port = port,
        };
        exit(observer_run(&cfg)); /* exit, not _exit: LeakSanitizer checks the daemon */
    }
    zctx = zmq_ctx_new();
    pub = bind_at(ZMQ_PUB, PROTO_EP_DELTAS);
    router = bind_at(ZMQ_ROUTER, PROTO_EP_SNAPSHOT);
    pull = bind_at(ZMQ_PULL, PROTO_EP_OBSERVE);
    if (!pub || !router || !pull)
        return 1;
    return child > 0 ? 0 : 1;
}

static int teardown(void)
{
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    for (int i = 0; i < 3; i++)
        server_stop(&srv[i]);
    zmq_close(pub);
    zmq_close(router);
    zmq_close(pull);
    zmq_ctx_term(zctx);
    (void)tmpdir_remove(dir);
    return 0;
}

CU_HOOKS({"observer_run", setup, teardown, NULL, NULL});

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
    json_object *n0 = node_of(obs, "cache-0"), *n1 = node_of(obs, "cache-1");
    CU_ASSERT_STRING_EQUAL(field_str(n0, "role"), "master");
    CU_ASSERT_STRING_EQUAL(field_str(n0, "ip"), "127.0.0.1");
    CU_ASSERT_STRING_EQUAL(field_str(n1, "role"), "slave");
    CU_ASSERT_STRING_EQUAL(field_str(n1, "masterHost"), "127.0.0.1");
    CU_ASSERT_EQUAL(field_int(n1, "masterPort"), port);
    CU_ASSERT_EQUAL(field_int(n0, "downSinceMs"), 0);
    CU_ASSERT(field_int(n1, "offset") >= 0);
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

    /* 3. The primary hangs: unreachable within 3 s, in the observation and the metric. */
    kill(srv[0].pid, SIGSTOP);
    int64_t t0 = clock_mono_ns();
    obs = next_observed(3000, key, sizeof(key));
    CU_ASSERT_PTR_NOT_NULL_FATAL(obs);
    int64_t seen_ms = (clock_mono_ns() - t0) / NS_PER_MS;
    CU_ASSERT(seen_ms < 2000);
    n0 = node_of(obs, "cache-0");
    CU_ASSERT_EQUAL(field_int(n0, "reachable"), 0);
    CU_ASSERT_STRING_EQUAL(field_str(n0, "role"), "master"); /* last known */
    int64_t down1 = field_int(n0, "downSinceMs");
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
    CU_ASSERT(field_int(node_of(obs, "cache-0"), "downSinceMs") > down1);
    CU_ASSERT_EQUAL(field_int(node_of(obs, "cache-0"), "reachable"), 0);
    json_object_put(obs);

    /* 4. Back: reported. */
    kill(srv[0].pid, SIGCONT);
    int back = 0;
    end = clock_mono_ns() + 5 * NS_PER_SEC;
    while (!back && clock_mono_ns() < end) {
        obs = next_observed(500, key, sizeof(key));
        back = obs && field_int(node_of(obs, "cache-0"), "reachable") == 1;
        json_object_put(obs);
    }
    CU_ASSERT_TRUE(back);

    /* 5. A pod deleted (a delta): the observation has two nodes. */
    rmsg_t *d = rmsg_new();
    rmsg_addstr(d, PROTO_DELTA);
    rmsg_addf(d, "%llu", (unsigned long long)++seq);
    rmsg_addstr(d, "DELETED");
    rmsg_addstr(d, "Pod");
    rmsg_addstr(d, "ns1/cache-2");
    rmsg_addstr(d, "2");
    rmsg_addstr(d, pod_json(2));
    rmsg_send(&d, pub, 0);
    obs = next_observed(3000, key, sizeof(key));
    CU_ASSERT_PTR_NOT_NULL_FATAL(obs);
    json_object *nodes = NULL;
    json_object_object_get_ex(obs, "nodes", &nodes);
    CU_ASSERT_EQUAL(json_object_array_length(nodes), 2);
    CU_ASSERT_PTR_NULL(node_of(obs, "cache-2"));
    json_object_put(obs);

    /* 6. informerd "restarts": its heartbeats fall behind our sequence number twice; a
     * new snapshot (with cache-2 back) follows, and the observation is sent again. */
    seq = 1;
    for (int i = 0; i < 2; i++) {
        rmsg_t *h = rmsg_new();
        rmsg_addstr(h, PROTO_HUGZ);
        rmsg_addstr(h, "1");
        rmsg_send(&h, pub, 0);
    }
    obs = next_observed(4000, key, sizeof(key));
    CU_ASSERT_PTR_NOT_NULL_FATAL(obs);
    json_object_object_get_ex(obs, "nodes", &nodes);
    CU_ASSERT_EQUAL(json_object_array_length(nodes), 3);
    json_object_put(obs);

    /* 7. SIGTERM: exit 0. */
    kill(child, SIGTERM);
    int status = 0;
    CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    child = 0;
}

static const cu_entry_t tests[] = {
    CU_SUITE("observer_run"),
    {"observerd against three real Redis servers", test_observer_end_to_end},
};

CU_MAIN(tests)
