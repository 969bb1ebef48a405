/* Unit tests of informerd's work side (informerd/dispatcher.h) on a real loop and real
 * ZeroMQ sockets, with the reporter writing to an in-process fake API server: a
 * RedisCluster's change walks from the cache to a worker's WORK item; observerd's
 * observation rides with it; a key that crashes workers three times is quarantined,
 * reported (Event and condition) and held back until its spec changes; nothing is handed
 * out without a valid lease; a key waits for the cache to hold its own write; a drain
 * hands out nothing. The test plays the worker (a DEALER "w-1"), observerd (a PUSH) and
 * electord (a PUB). */
#include "buf.h"
#include "cache.h"
#include "clock.h"
#include "dispatcher.h"
#include "fake_api.h"
#include "loop_api.h"
#include "kube_client.h"
#include "kube_config.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics.h"
#include "projection.h"
#include "proto.h"
#include "reporter.h"
#include "rmsg.h"
#include "text_assert.h"
#include "tmpdir.h"

#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    fake_log_t log;
    char body[FAKE_LOG_MAX][1024]; /* the start of each request's body */
} api_t;

static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                      buf_t *out)
{
    (void)c;
    api_t *a = user;
    pthread_mutex_lock(&a->mu);
    int i = fake_log_add(&a->log, method, url);
    snprintf(a->body[i], sizeof(a->body[i]), "%s", body);
    pthread_mutex_unlock(&a->mu);
    buf_puts(out, "{}");
    return strcmp(method, "POST") ? 200 : 201;
}

/* Requests of method whose path contains part, so far. */
static int api_count(api_t *a, const char *method, const char *part)
{
    return fake_log_tally(&a->mu, &a->log, method, part);
}

/* Whether some request of method to a path containing part had a body containing text. */
static int api_body_has(api_t *a, const char *method, const char *part, const char *text)
{
    int found = 0;
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->log.n && !found; i++)
        found = !strcmp(a->log.method[i], method) && strstr(a->log.path[i], part) && strstr(a->body[i], text);
    pthread_mutex_unlock(&a->mu);
    return found;
}

/* Everything one test runs on. */
typedef struct {
    char dir[64];
    api_t api;
    loop_api_t la;              /* the client, the loop and its curl multi */
    cache_t *cache;
    reporter_t *reporter;
    dispatcher_t *d;
    void *zctx;
    void *worker;   /* DEALER "w-1" on the work socket */
    void *observer; /* PUSH to the observe socket */
    void *elector;  /* PUB the leader socket listens to (leader election tests) */
} fx_t;

static fx_t fx;

static void on_delta(void *ud, const cache_delta_t *delta)
{
    dispatcher_on_delta(ud, delta);
}

static void endpoint(char *out, size_t len, const char *name)
{
    snprintf(out, len, "ipc://%s/%s", fx.dir, name);
}

static void *bound(int type, const char *name)
{
    char ep[128];
    endpoint(ep, sizeof(ep), name);
    void *s = zmq_socket(fx.zctx, type);
    int linger = 0, one = 1;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    if (type == ZMQ_ROUTER)
        zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
    CU_ASSERT_EQUAL_FATAL(zmq_bind(s, ep), 0);
    return s;
}

static void *connected(int type, const char *name, const char *identity, const char *topic)
{
    char ep[128];
    endpoint(ep, sizeof(ep), name);
    void *s = zmq_socket(fx.zctx, type);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    if (identity)
        zmq_setsockopt(s, ZMQ_ROUTING_ID, identity, strlen(identity));
    if (topic)
        zmq_setsockopt(s, ZMQ_SUBSCRIBE, topic, strlen(topic));
    CU_ASSERT_EQUAL_FATAL(zmq_connect(s, ep), 0);
    return s;
}

/* A dispatcher (with leader election when elect) over a cache of informerd's kinds. */
static int64_t fx_child_delay_ns;  /* the next fx_start's dispatcher_config_t child_delay_ns */
static int64_t fx_resync_merge_ns; /* ... and resync_merge_ns */

static void fx_start(int elect)
{
    memset(&fx, 0, sizeof(fx));
    snprintf(fx.dir, sizeof(fx.dir), "/tmp/rdc-dispatcher-XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(fx.dir));
    pthread_mutex_init(&fx.api.mu, NULL);
    fake_api_start(&fx.api.srv, on_request, &fx.api);
    loop_api_start(&fx.la, &fx.api.srv);
    fx.cache = cache_new("RedisCluster");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx.cache);
    static const char *const kinds[] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget", "Pod", "Secret"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        CU_ASSERT_EQUAL(cache_add_kind(fx.cache, kinds[i]), 0);
    CU_ASSERT_EQUAL(cache_set_owner_label(fx.cache, "Pod", "app.kubernetes.io/instance"), 0);
    reporter_config_t rc = {fx.la.client, fx.la.lc, fx.cache, 1};
    fx.reporter = reporter_new(&rc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx.reporter);
    fx.zctx = zmq_ctx_new();
    dispatcher_sockets_t socks = {
        .work = bound(ZMQ_ROUTER, "work.sock"),
        .observe = bound(ZMQ_PULL, "observe.sock"),
    };
    if (elect) {
        fx.elector = bound(ZMQ_PUB, "leader.sock");
        socks.leader = connected(ZMQ_SUB, "leader.sock", NULL, PROTO_LEADER);
    }
    dispatcher_config_t dc = {fx.cache, fx.reporter, elect, 120, fx_child_delay_ns, fx_resync_merge_ns};
    fx.d = dispatcher_new(&dc, &socks);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx.d);
    CU_ASSERT_PTR_NULL(socks.work); /* taken */
    CU_ASSERT_EQUAL_FATAL(dispatcher_attach(fx.d, fx.la.loop), 0);
    cache_set_delta_handler(fx.cache, on_delta, fx.d);
    fx.worker = connected(ZMQ_DEALER, "work.sock", "w-1", NULL);
    fx.observer = connected(ZMQ_PUSH, "observe.sock", NULL, NULL);
}

static void fx_stop(void)
{
    dispatcher_destroy(&fx.d);
    CU_ASSERT_PTR_NULL(fx.d);
    reporter_destroy(&fx.reporter);
    void *mine[] = {fx.worker, fx.observer, fx.elector};
    for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
        if (mine[i])
            zmq_close(mine[i]);
    zmq_ctx_term(fx.zctx);
    loop_api_stop(&fx.la);
    cache_destroy(&fx.cache);
    fake_api_stop(&fx.api.srv);
    pthread_mutex_destroy(&fx.api.mu);
    tmpdir_remove(fx.dir);
}

/* One turn of informerd's loop as informer.c runs it, after its readers and timers. */
static void turn(void)
{
    loop_run_once(fx.la.loop, 5 * NS_PER_MS);
    int64_t now = clock_mono_ns();
    dispatcher_advance(fx.d, now);
    dispatcher_dispatch(fx.d, now);
}

/* Turn until the worker receives a message whose frame 0 is cmd (HEARTBEATs are skipped)
 * or ms pass; the message or NULL. */
static rmsg_t *worker_wait(const char *cmd, int ms)
{
    int64_t until = clock_mono_ns() + (int64_t)ms * NS_PER_MS;
    while (clock_mono_ns() < until) {
        turn();
        rmsg_t *m;
        while ((m = rmsg_recv(fx.worker, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 1 << 20)) != NULL) {
            if (rmsg_frame_is(m, 0, cmd))
                return m;
            rmsg_destroy(&m);
        }
    }
    return NULL;
}

/* The worker says something: frames as strings, NULL-terminated. */
static void worker_says(const char *const *frames)
{
    rmsg_t *m = rmsg_new();
    for (; *frames; frames++)
        rmsg_addstr(m, *frames);
    CU_ASSERT_EQUAL(rmsg_send(&m, fx.worker, 0), 0);
    for (int i = 0; i < 5; i++)
        turn();
}

#define SAY(...) worker_says((const char *const[]){__VA_ARGS__, NULL})

/* Turn until cond() or ms pass; cond()'s last answer. */
static int turn_until(int (*cond)(void), int ms)
{
    int64_t until = clock_mono_ns() + (int64_t)ms * NS_PER_MS;
    while (!cond() && clock_mono_ns() < until)
        turn();
    return cond();
}

/* Upsert the object of kind that fmt and its arguments print (JSON) into the cache. */
__attribute__((format(printf, 2, 3))) static void upsert_text(const char *kind, const char *fmt, ...)
{
    char text[2048], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    json_object *o = json_tokener_parse(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_EQUAL(cache_upsert(fx.cache, kind, o, NULL, err, sizeof(err)), 0);
    json_object_put(o);
}

/* Upsert a RedisCluster ns/<name>; extra is JSON members after spec (or ""). */
static void put_rc(const char *name, const char *rv, int gen, const char *extra)
{
    upsert_text("RedisCluster",
                "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"%s\","
                "\"namespace\":\"ns\",\"uid\":\"u-%s\",\"resourceVersion\":\"%s\",\"generation\":%d},"
                "\"spec\":{\"size\":3,\"image\":\"redis\",\"mode\":\"Replication\"}%s}",
                name, name, rv, gen, extra);
}

/* Upsert a ConfigMap ns/<name> controlled by the RedisCluster of the same name. */
static void put_cm(const char *name, const char *rv)
{
    upsert_text("ConfigMap",
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\","
                "\"uid\":\"c-%s\",\"resourceVersion\":\"%s\",\"ownerReferences\":[{\"kind\":\"RedisCluster\","
                "\"name\":\"%s\",\"uid\":\"u-%s\",\"controller\":true}]},\"data\":{\"redis.conf\":\"rv %s\"}}",
                name, name, rv, name, name, rv);
}

static double counter(const char *name, const char *label)
{
    metric_family_t *f = metrics_counter(metrics_default(), name, NULL, label ? "result" : "");
    return metric_value(f, label ? METRIC_LABELS(label) : NULL);
}

/* A WORK item for key: its frames checked, the message freed; the children's JSON
 * returned (static buffer). Its lease (frame 6) ends the reconcile timeout (120 s) less
 * PROTO_LEASE_MARGIN_MS after the worker's last word at the latest. */
static const char *expect_work(const char *key, const char *epoch, const char *rc_rv)
{
    static char children[4096];
    children[0] = '\0';
    rmsg_t *m = worker_wait(PROTO_WORK, 2000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(rmsg_size(m), 7);
    int64_t lease = 0, now_ms = clock_mono_ns() / NS_PER_MS;
    CU_ASSERT_EQUAL(rmsg_frame_int64(m, 6, &lease), 0);
    CU_ASSERT(lease > now_ms + 100000 && lease <= now_ms + 120000 - PROTO_LEASE_MARGIN_MS);
    CU_ASSERT_TRUE(rmsg_frame_is(m, 1, key));
    CU_ASSERT_TRUE(rmsg_frame_is(m, 2, epoch));
    char *rc = rmsg_strdup(m, 4);
    char want[64];
    snprintf(want, sizeof(want), "\"resourceVersion\":\"%s\"", rc_rv);
    CU_ASSERT_PTR_NOT_NULL(rc && strstr(rc, want));
    char *ch = rmsg_strdup(m, 5);
    snprintf(children, sizeof(children), "%s", ch ? ch : "");
    free(rc);
    free(ch);
    rmsg_destroy(&m);
    return children;
}

static void expect_no_work(int ms)
{
    rmsg_t *m = worker_wait(PROTO_WORK, ms);
    CU_ASSERT_PTR_NULL(m);
    rmsg_destroy(&m);
}

/* The RedisCluster ns/name stored at rv (generation 1) and a worker READY: the key is
 * handed out to it (epoch 0). */
static void hand_out_first(const char *name, const char *rv)
{
    char key[64];
    snprintf(key, sizeof(key), "ns/%s", name);
    put_rc(name, rv, 1, "");
    SAY(PROTO_READY, "1");
    expect_work(key, "0", rv);
}

static int idle(void)
{
    return !dispatcher_in_flight(fx.d);
}

/* ---- the walk --------------------------------------------------------------------------- */

static void test_change_reaches_a_worker(void)
{
    fx_start(0);
    put_rc("a", "1", 1, "");
    put_cm("a", "2");
    SAY(PROTO_READY, "1");
    const char *children = expect_work("ns/a", "0", "1");
    ASSERT_TEXT_HAS(children, "\"ConfigMap\":{", "\"rv 2\"", "\"Redis\":null");
    CU_ASSERT_TRUE(dispatcher_in_flight(fx.d));
    /* A change while it is in flight is not a second item: it waits for DONE. */
    put_rc("a", "3", 2, "");
    expect_no_work(100);
    SAY(PROTO_DONE, "ns/a", "done", "0");
    /* ...and then the key goes out again, with the RedisCluster as it is now. */
    expect_work("ns/a", "0", "3");
    SAY(PROTO_DONE, "ns/a", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    /* A child's change queues its owner's key. */
    put_cm("a", "4");
    children = expect_work("ns/a", "0", "3");
    CU_ASSERT_PTR_NOT_NULL(strstr(children, "\"rv 4\""));
    SAY(PROTO_DONE, "ns/a", "done", "0");
    /* A DONE for a key the worker does not hold changes nothing. */
    SAY(PROTO_DONE, "ns/zzz", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    CU_ASSERT_EQUAL(api_count(&fx.api, "POST", ""), 0); /* nothing reported */
    fx_stop();
}

static void observe(const char *key, const char *json)
{
    rmsg_t *m = rmsg_new();
    rmsg_addstr(m, PROTO_OBSERVED);
    rmsg_addstr(m, key);
    rmsg_addstr(m, json);
    CU_ASSERT_EQUAL(rmsg_send(&m, fx.observer, 0), 0);
}

static void test_observation_rides_along(void)
{
    fx_start(0);
    double stored = counter("informer_observations_total", "stored");
    double unknown = counter("informer_observations_total", "unknown_key");
    double malformed = counter("informer_observations_total", "malformed");
    hand_out_first("a", "1");
    SAY(PROTO_DONE, "ns/a", "done", "0");
    /* An observation queues the key and goes with its next item. */
    observe("ns/a", "{\"nodes\":[{\"pod\":\"a-0\",\"role\":\"master\"}]}");
    const char *children = expect_work("ns/a", "0", "1");
    CU_ASSERT_PTR_NOT_NULL(strstr(children, "\"Redis\":{\"nodes\":[{\"pod\":\"a-0\""));
    SAY(PROTO_DONE, "ns/a", "done", "0");
    CU_ASSERT_EQUAL(counter("informer_observations_total", "stored"), stored + 1);
    /* Of a RedisCluster not cached, or not {"nodes":[...]}: counted and dropped. */
    observe("ns/nope", "{\"nodes\":[]}");
    observe("ns/a", "{\"nodes\":7}");
    observe("ns/a", "not json");
    for (int i = 0; i < 10; i++)
        turn();
    CU_ASSERT_EQUAL(counter("informer_observations_total", "unknown_key"), unknown + 1);
    CU_ASSERT_EQUAL(counter("informer_observations_total", "malformed"), malformed + 2);
    expect_no_work(100);
    /* Deleted, the observation goes with it: the RedisCluster made again has none. */
    char err[256];
    CU_ASSERT_EQUAL(cache_delete(fx.cache, "RedisCluster", "ns/a", NULL, err, sizeof(err)), 0);
    expect_no_work(100);
    put_rc("a", "9", 1, "");
    children = expect_work("ns/a", "0", "9");
    CU_ASSERT_PTR_NOT_NULL(strstr(children, "\"Redis\":null"));
    SAY(PROTO_DONE, "ns/a", "done", "0");
    fx_stop();
}

/* The RedisCluster ns/name at rv with spec (a JSON object's text). */
static void put_rc_spec(const char *name, const char *rv, const char *spec)
{
    upsert_text("RedisCluster",
                "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"%s\","
                "\"namespace\":\"ns\",\"uid\":\"u-%s\",\"resourceVersion\":\"%s\",\"generation\":1},\"spec\":%s}",
                name, name, rv, spec);
}

#define OBS_UP(ip) "{\"nodes\":[{\"pod\":\"s-0\",\"ip\":\"" ip "\",\"reachable\":true,\"role\":\"master\"}]}"
#define OBS_DOWN "{\"nodes\":[{\"pod\":\"s-0\",\"ip\":\"10.0.0.1\",\"reachable\":false}]}"

static double not_read_before;
static void observe_stored(const char *key, const char *json);

static int observation_not_read(void)
{
    return counter("informer_observations_total", "stored_not_read") > not_read_before;
}

/* A Standalone cluster without TLS reads of an observation only which pods are
 * unreachable (projection.h OBSERVATIONS): one that says nothing else new is kept, for
 * the next item, and queues nothing; an unreachable pod queues. With TLS, or in
 * Replication mode, every observation queues. */
static void test_observation_a_standalone_plan_does_not_read(void)
{
    fx_start(0);
    put_rc_spec("s", "1", "{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\"}");
    SAY(PROTO_READY, "1");
    expect_work("ns/s", "0", "1");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    double stored = counter("informer_observations_total", "stored");
    /* The first observation, all reachable, then a new IP and role: kept, not queued. */
    not_read_before = counter("informer_observations_total", "stored_not_read");
    observe("ns/s", OBS_UP("10.0.0.1"));
    CU_ASSERT_TRUE(turn_until(observation_not_read, 1000));
    expect_no_work(150);
    not_read_before = counter("informer_observations_total", "stored_not_read");
    observe("ns/s", OBS_UP("10.0.0.2"));
    CU_ASSERT_TRUE(turn_until(observation_not_read, 1000));
    expect_no_work(150);
    CU_ASSERT_EQUAL(counter("informer_observations_total", "stored"), stored);
    /* It rides with the next item all the same. */
    put_rc_spec("s", "2", "{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\",\"version\":\"7.2\"}");
    const char *children = expect_work("ns/s", "0", "2");
    CU_ASSERT_PTR_NOT_NULL(strstr(children, "\"ip\":\"10.0.0.2\""));
    SAY(PROTO_DONE, "ns/s", "done", "0");
    /* Unreachable: news (the run-time config skips the pod), and back up again. */
    observe_stored("ns/s", OBS_DOWN);
    expect_work("ns/s", "0", "2");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    observe_stored("ns/s", OBS_UP("10.0.0.2"));
    expect_work("ns/s", "0", "2");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    /* With TLS the served certificates are read: a new IP queues. */
    put_rc_spec("s", "3",
                "{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\",\"tls\":{\"secretRef\":{\"name\":\"t\"}}}");
    expect_work("ns/s", "0", "3");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    observe_stored("ns/s", OBS_UP("10.0.0.3"));
    expect_work("ns/s", "0", "3");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    /* An invalid spec: in doubt, queued. */
    put_rc_spec("s", "4", "{\"size\":-1,\"image\":\"redis\",\"mode\":\"Standalone\"}");
    expect_work("ns/s", "0", "4");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    observe_stored("ns/s", OBS_UP("10.0.0.4"));
    expect_work("ns/s", "0", "4");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    fx_stop();
}

/* ---- crashes and quarantine ---------------------------------------------------------------- */

static int reported(void)
{
    return api_count(&fx.api, "POST", "/api/v1/namespaces/ns/events") == 1 &&
           api_count(&fx.api, "PATCH", "/redisclusters/q/status") == 1;
}

static int cleared(void)
{
    return api_count(&fx.api, "PATCH", "/redisclusters/q/status") == 2;
}

static void test_crashes_quarantine(void)
{
    fx_start(0);
    double quarantined = counter("informer_quarantined_keys_total", NULL);
    put_rc("q", "1", 1, "");
    SAY(PROTO_READY, "1");
    /* The worker comes back READY while it holds the key: it crashed with it. */
    for (int crash = 0; crash < DISPATCHER_CRASHES_TO_QUARANTINE; crash++) {
        expect_work("ns/q", "0", "1");
        SAY(PROTO_READY, "1");
    }
    CU_ASSERT_EQUAL(counter("informer_quarantined_keys_total", NULL), quarantined + 1);
    /* Reported on the object: a Warning Event and the condition True. */
    CU_ASSERT_TRUE(turn_until(reported, 3000));
    CU_ASSERT_TRUE(api_body_has(&fx.api, "POST", "/events", "\"reason\":\"ReconcileCrashed\""));
    CU_ASSERT_TRUE(api_body_has(&fx.api, "PATCH", "/status", "\"status\":\"True\""));
    CU_ASSERT_TRUE(api_body_has(&fx.api, "POST", "/events", "crashed the worker 3 times in a row"));
    /* Held back: a change of its status alone does not release it... */
    put_rc("q", "2", 1, ",\"status\":{\"phase\":\"Pending\"}");
    expect_no_work(300);
    /* ...a new spec does; the condition as the cache has it now is True, and the reconcile
     * that completes turns it False. */
    put_rc("q", "3", 2,
           ",\"status\":{\"conditions\":[{\"type\":\"ReconcileCrashed\",\"status\":\"True\","
           "\"reason\":\"WorkerCrashed\"}]}");
    expect_work("ns/q", "0", "3");
    SAY(PROTO_DONE, "ns/q", "done", "0");
    CU_ASSERT_TRUE(turn_until(cleared, 3000));
    CU_ASSERT_TRUE(api_body_has(&fx.api, "PATCH", "/status", "\"status\":\"False\""));
    fx_stop();
}

/* A RedisCluster whose ReconcileCrashed condition an earlier informerd set, for this
 * generation and a minute ago, is held back for the rest of the hour. */
static void test_quarantine_restored_from_condition(void)
{
    fx_start(0);
    char since[64], extra[512];
    time_t t = time(NULL) - 60;
    strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    snprintf(extra, sizeof(extra),
             ",\"status\":{\"conditions\":[{\"type\":\"ReconcileCrashed\",\"status\":\"True\","
             "\"lastTransitionTime\":\"%s\",\"observedGeneration\":4}]}",
             since);
    put_rc("r", "1", 4, extra);
    SAY(PROTO_READY, "1");
    expect_no_work(300);
    /* The same condition on an older generation holds nothing back. */
    put_rc("s", "1", 5, extra);
    expect_work("ns/s", "0", "1");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    fx_stop();
}

/* ---- leadership, own writes, drain ---------------------------------------------------------- */

static int64_t lease_until_ms;
static const char *lease_leading;

/* electord says LEADER (again: a SUB that just connected misses the first ones); 1 once
 * the dispatcher's fence is the lease's end it was told. */
static int lease_heard(void)
{
    rmsg_t *m = rmsg_new();
    rmsg_addstr(m, PROTO_LEADER);
    rmsg_addstr(m, lease_leading);
    rmsg_addstr(m, "me");
    rmsg_addstr(m, "1");
    rmsg_addstr(m, "7");
    rmsg_addf(m, "%lld", (long long)lease_until_ms);
    rmsg_send(&m, fx.elector, 0);
    int64_t fence = 0;
    dispatcher_may_write(fx.d, &fence);
    return fence == lease_until_ms * NS_PER_MS;
}

static void test_leadership(void)
{
    fx_start(1);
    put_rc("l", "1", 1, "");
    SAY(PROTO_READY, "1");
    /* Not told it leads: nothing goes out, nothing may be written. */
    int64_t fence = 0;
    CU_ASSERT_FALSE(dispatcher_may_write(fx.d, &fence));
    CU_ASSERT_EQUAL(fence, 0);
    expect_no_work(200);
    /* Leading with a lease valid for 10 s: work goes out with the lease's epoch, and the
     * fence is the lease's end. */
    lease_until_ms = clock_mono_ns() / NS_PER_MS + 10000;
    lease_leading = "1";
    CU_ASSERT_TRUE_FATAL(turn_until(lease_heard, 3000));
    CU_ASSERT_TRUE(dispatcher_may_write(fx.d, NULL));
    expect_work("ns/l", "7", "1");
    SAY(PROTO_DONE, "ns/l", "done", "0");
    /* Still the leader, but with a lease that has run out: nothing more. */
    lease_until_ms = clock_mono_ns() / NS_PER_MS - 1;
    CU_ASSERT_TRUE_FATAL(turn_until(lease_heard, 3000));
    CU_ASSERT_FALSE(dispatcher_may_write(fx.d, NULL));
    put_rc("l", "2", 2, "");
    expect_no_work(200);
    /* Not leading: the same. */
    lease_until_ms = 0;
    lease_leading = "0";
    CU_ASSERT_TRUE_FATAL(turn_until(lease_heard, 3000));
    CU_ASSERT_FALSE(dispatcher_may_write(fx.d, NULL));
    expect_no_work(100);
    fx_stop();
}

static void test_own_write_awaited(void)
{
    fx_start(0);
    double awaited = counter("informer_own_write_waits_total", "awaited");
    double seen = counter("informer_own_write_waits_total", "seen");
    put_rc("w", "10", 1, "");
    put_cm("w", "11");
    SAY(PROTO_READY, "1");
    expect_work("ns/w", "0", "10");
    /* It wrote the RedisCluster at 12; the cache holds 10. */
    SAY(PROTO_DONE, "ns/w", "done", "0", "12");
    CU_ASSERT_EQUAL(counter("informer_own_write_waits_total", "awaited"), awaited + 1);
    /* A child's change does not hand it out with the RedisCluster as it was... */
    put_cm("w", "13");
    expect_no_work(300);
    /* ...its own write arriving does. */
    put_rc("w", "12", 1, ",\"status\":{\"phase\":\"Running\"}");
    expect_work("ns/w", "0", "12");
    CU_ASSERT_EQUAL(counter("informer_own_write_waits_total", "seen"), seen + 1);
    SAY(PROTO_DONE, "ns/w", "done", "0");
    fx_stop();
}

/* The watch's echoes of the reconcile's own writes queue nothing: the finalizer's, come
 * while it ran, and the status's, come after DONE. Another writer's change queues, in
 * flight and after. */
static void test_own_echoes_queue_nothing(void)
{
    fx_start(0);
    double own = counter("informer_own_echoes_total", "own");
    double deferred = counter("informer_own_echoes_total", "deferred");
    hand_out_first("e", "20");
    put_rc("e", "21", 1, ",\"status\":{}"); /* its finalizer PATCH's echo, while it runs */
    SAY(PROTO_DONE, "ns/e", "done", "0", "22", "quiet", "21");
    expect_no_work(200);
    put_rc("e", "22", 1, ",\"status\":{\"phase\":\"Creating\"}"); /* its status's echo */
    expect_no_work(200);
    CU_ASSERT_EQUAL(counter("informer_own_echoes_total", "own"), own + 1);
    CU_ASSERT_EQUAL(counter("informer_own_echoes_total", "deferred"), deferred + 1);
    /* Somebody else's change (a label): queued. */
    put_rc("e", "23", 1, ",\"status\":{\"phase\":\"Creating\"},\"x\":1");
    expect_work("ns/e", "0", "23");
    /* In flight: a user's spec change between two of its writes is reconciled after DONE. */
    put_rc("e", "24", 1, ",\"status\":{\"phase\":\"Running\"}");        /* its status */
    put_rc("e", "25", 2, ",\"status\":{\"phase\":\"Running\"}");        /* the user's */
    SAY(PROTO_DONE, "ns/e", "done", "0", "24", "quiet");
    expect_work("ns/e", "0", "25");
    /* A write whose result the worker did not find quiet (a step recorded for the next
     * plan): its echo queues the key. */
    SAY(PROTO_DONE, "ns/e", "done", "0", "26", "act");
    put_rc("e", "26", 2, ",\"status\":{\"phase\":\"Running\",\"primary\":\"e-1\"}");
    expect_work("ns/e", "0", "26");
    SAY(PROTO_DONE, "ns/e", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    fx_stop();
}

/* Upsert a child of kind (a ConfigMap, Service, StatefulSet, budget) ns/<name> of the
 * RedisCluster of that name, at rv; extra is JSON members after metadata (or ""). */
static void put_child(const char *kind, const char *name, const char *rv, const char *extra)
{
    upsert_text(kind,
                "{\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s-%s\","
                "\"resourceVersion\":\"%s\",\"ownerReferences\":[{\"kind\":\"RedisCluster\",\"name\":\"%s\","
                "\"uid\":\"u-%s\",\"controller\":true}]}%s}",
                kind, name, kind, name, rv, name, name, extra);
}

/* A new cluster's first reconcile creates its children and says it quiet, naming them at
 * the versions its writes were answered with: their ADDEDs, come while it ran or after,
 * queue nothing; the StatefulSet controller's status (another version) does. Without the
 * names (a reconcile not quiet), each ADDED queues the key as before. */
static void test_child_echoes_queue_nothing(void)
{
    fx_start(0);
    double own = counter("informer_own_echoes_total", "child_own");
    double deferred = counter("informer_own_echoes_total", "child_deferred");
    hand_out_first("n", "1");
    put_rc("n", "2", 1, ",\"status\":{}");          /* its finalizer's echo */
    put_child("ConfigMap", "n", "3", ",\"data\":{\"redis.conf\":\"x\"}");
    put_child("Service", "n", "4", ",\"spec\":{\"clusterIP\":\"None\"}");
    SAY(PROTO_DONE, "ns/n", "requeue_after", "60000", "6", "quiet", "2",
        PROTO_DONE_CHILDREN "\nConfigMap n 3\nService n 4\nStatefulSet n 5\nPodDisruptionBudget n 7\n");
    put_child("StatefulSet", "n", "5", ",\"spec\":{\"replicas\":3}");
    put_rc("n", "6", 1, ",\"status\":{\"phase\":\"Pending\"}"); /* its status's echo */
    put_child("PodDisruptionBudget", "n", "7", ",\"spec\":{\"maxUnavailable\":1}");
    expect_no_work(300);
    CU_ASSERT_EQUAL(counter("informer_own_echoes_total", "child_deferred"), deferred + 2);
    CU_ASSERT_EQUAL(counter("informer_own_echoes_total", "child_own"), own + 2);
    /* The controller's status of the StatefulSet: a change. */
    put_child("StatefulSet", "n", "8", ",\"spec\":{\"replicas\":3},\"status\":{\"replicas\":1}");
    expect_work("ns/n", "0", "6");
    /* Not quiet: its children's ADDEDs queue as any change (names or not). */
    SAY(PROTO_DONE, "ns/n", "done", "0", "", "act", PROTO_DONE_CHILDREN "\nConfigMap n 10\n");
    put_child("ConfigMap", "n", "10", ",\"data\":{\"redis.conf\":\"y\"}");
    expect_work("ns/n", "0", "6");
    /* In flight, a change of a child it did not write: queued after DONE. */
    put_child("Service", "n", "11", ",\"spec\":{\"clusterIP\":\"None\",\"x\":1}");
    SAY(PROTO_DONE, "ns/n", "done", "0", "", "quiet", PROTO_DONE_CHILDREN "\nConfigMap n 12\n");
    expect_work("ns/n", "0", "6");
    SAY(PROTO_DONE, "ns/n", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    fx_stop();
}

static double adds(const char *cause, const char *result);

/* Upsert Pod ns/<name>-0 of the RedisCluster <name>, made ago_s seconds ago, with
 * conditions (JSON array members, or ""). */
static void put_pod_made(const char *name, const char *rv, int ago_s, const char *conditions)
{
    char made[40];
    clock_format_rfc3339(clock_wall_ns() - (int64_t)ago_s * NS_PER_SEC, 0, made, sizeof(made));
    upsert_text("Pod",
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-0\",\"namespace\":\"ns\","
                "\"uid\":\"p-%s\",\"resourceVersion\":\"%s\",\"creationTimestamp\":\"%s\","
                "\"labels\":{\"app.kubernetes.io/instance\":\"%s\"}},\"status\":{\"phase\":\"Pending\","
                "\"conditions\":[%s]}}",
                name, name, rv, made, name, conditions);
}

#define UNSCHEDULED                                                                                                \
    "{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"pod has " \
    "unbound immediate PersistentVolumeClaims\"}"

/* A young pod's PodScheduled alone changed (the scheduler waits for its claim): read only
 * once the pod is past its grace (projection.h PROJ_LATE), it queues nothing now and
 * waits until then, dropped when the key is handed out first (cause pod_scheduling). An
 * older pod's same change, or a young pod's change of anything else read, queues as a
 * pod's change. */
static void test_young_pod_scheduling_waits(void)
{
    fx_start(0);
    CU_ASSERT_EQUAL_FATAL(cache_set_projection(fx.cache, "Pod", projection_of("Pod")), 0);
    double dropped = adds("pod_scheduling", "dropped"), pods = adds("pod", "queued");
    hand_out_first("u", "1");
    SAY(PROTO_DONE, "ns/u", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    put_pod_made("u", "2", 1, "");
    expect_work("ns/u", "0", "1");
    SAY(PROTO_DONE, "ns/u", "done", "0");
    put_pod_made("u", "3", 1, UNSCHEDULED);
    expect_no_work(300);
    CU_ASSERT_TRUE(dispatcher_next_deadline(fx.d, clock_mono_ns()) > clock_mono_ns() + 20 * NS_PER_SEC);
    put_rc("u", "4", 2, ""); /* handed out for this: the wait is dropped */
    expect_work("ns/u", "0", "4");
    SAY(PROTO_DONE, "ns/u", "done", "0");
    CU_ASSERT_EQUAL(adds("pod_scheduling", "dropped"), dropped + 1);
    CU_ASSERT_EQUAL(adds("pod", "queued"), pods + 1);
    /* A pod past its grace: the same change is read at once. */
    const char *const older[][2] = {{"5", ""}, {"6", UNSCHEDULED}};
    for (size_t i = 0; i < 2; i++) {
        put_pod_made("u", older[i][0], 60, older[i][1]);
        expect_work("ns/u", "0", "4");
        SAY(PROTO_DONE, "ns/u", "done", "0");
    }
    CU_ASSERT_EQUAL(adds("pod", "queued"), pods + 3);
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    fx_stop();
}

/* A resync that comes while a key is in flight keeps what the flight remembered: a
 * user's change then is reconciled after DONE (a resync queues no key in flight). */
static void test_resync_in_flight_keeps_a_change(void)
{
    fx_start(0);
    hand_out_first("y", "1");
    put_rc("y", "2", 2, "");                 /* the user's new spec, while it runs */
    cache_resync(fx.cache, "RedisCluster");
    SAY(PROTO_DONE, "ns/y", "done", "0", "3", "quiet");
    expect_work("ns/y", "0", "2");
    SAY(PROTO_DONE, "ns/y", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    fx_stop();
}

/* With a child delay, a burst of child changes is one item, handed out after the delay;
 * the RedisCluster's own change goes at once. */
static void test_child_burst_is_one_item(void)
{
    fx_child_delay_ns = 150 * NS_PER_MS;
    fx_start(0);
    fx_child_delay_ns = 0;
    hand_out_first("c", "1");
    SAY(PROTO_DONE, "ns/c", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    int64_t t0 = clock_mono_ns();
    put_cm("c", "2");
    put_cm("c", "3");
    put_cm("c", "4");
    const char *children = expect_work("ns/c", "0", "1");
    CU_ASSERT(clock_mono_ns() - t0 >= 150 * NS_PER_MS);
    CU_ASSERT_PTR_NOT_NULL(strstr(children, "\"rv 4\""));
    SAY(PROTO_DONE, "ns/c", "done", "0");
    expect_no_work(300); /* the three were one item */
    t0 = clock_mono_ns();
    put_rc("c", "5", 2, "");
    expect_work("ns/c", "0", "5");
    CU_ASSERT(clock_mono_ns() - t0 < 150 * NS_PER_MS);
    SAY(PROTO_DONE, "ns/c", "done", "0");
    fx_stop();
}

/* A reconcile's "look again in 400 ms" is dropped when a change hands the key out
 * before then: that reconcile decided from newer inputs (here: nothing more to do), so
 * the stale requeue makes no reconcile. Left alone, a requeue comes on time. */
static void test_requeue_overtaken_is_dropped(void)
{
    fx_start(0);
    hand_out_first("q", "1");
    SAY(PROTO_DONE, "ns/q", "requeue_after", "400");
    put_rc("q", "2", 2, ""); /* the user's change, 400 ms early */
    expect_work("ns/q", "0", "2");
    SAY(PROTO_DONE, "ns/q", "done", "0");
    expect_no_work(800);
    /* Nothing in between: the requeue comes. */
    put_rc("q", "3", 3, "");
    expect_work("ns/q", "0", "3");
    int64_t t0 = clock_mono_ns();
    SAY(PROTO_DONE, "ns/q", "requeue_after", "200");
    expect_work("ns/q", "0", "3");
    CU_ASSERT(clock_mono_ns() - t0 >= 200 * NS_PER_MS);
    SAY(PROTO_DONE, "ns/q", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    fx_stop();
}

static void test_drain(void)
{
    fx_start(0);
    put_rc("a", "1", 1, "");
    put_rc("b", "1", 1, "");
    SAY(PROTO_READY, "1");
    expect_work("ns/a", "0", "1");
    /* Draining: the key in flight may come back, no other goes out. */
    dispatcher_drain(fx.d);
    CU_ASSERT_FALSE(dispatcher_may_write(fx.d, NULL));
    CU_ASSERT_TRUE(dispatcher_in_flight(fx.d));
    SAY(PROTO_DONE, "ns/a", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    expect_no_work(200);
    CU_ASSERT_TRUE(dispatcher_next_deadline(fx.d, clock_mono_ns()) >= clock_mono_ns());
    fx_stop();
}

/* Upsert ConfigMap ns/<name> of the RedisCluster of that name with its data, at rv, with
 * a managedFields entry stamped at when (what the API server moves on every write). */
static void put_cm_data(const char *name, const char *rv, const char *data, const char *when)
{
    upsert_text("ConfigMap",
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\","
                "\"uid\":\"c-%s\",\"resourceVersion\":\"%s\",\"managedFields\":[{\"manager\":\"x\",\"time\":\"%s\"}],"
                "\"ownerReferences\":[{\"kind\":\"RedisCluster\",\"name\":\"%s\",\"uid\":\"u-%s\","
                "\"controller\":true}]},"
                "\"data\":{\"redis.conf\":\"%s\"},\"example.com/unread\":\"%s\"}",
                name, name, rv, when, name, name, data, when);
}

static double skipped(const char *kind)
{
    metric_family_t *f = metrics_counter(metrics_default(), "informer_enqueue_skipped_total", NULL, "kind");
    return metric_value(f, METRIC_LABELS(kind));
}

/* A child's change that no plan reads (projection.h) queues nothing, and is counted; one
 * it reads queues its RedisCluster as before. */
static void test_unread_change_queues_nothing(void)
{
    fx_start(0);
    CU_ASSERT_EQUAL_FATAL(cache_set_projection(fx.cache, "ConfigMap", projection_of("ConfigMap")), 0);
    put_rc("a", "1", 1, "");
    put_cm_data("a", "2", "maxmemory 1mb", "t1");
    SAY(PROTO_READY, "1");
    expect_work("ns/a", "0", "1");
    SAY(PROTO_DONE, "ns/a", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    double before = skipped("ConfigMap");
    put_cm_data("a", "3", "maxmemory 1mb", "t2"); /* resourceVersion, managedFields, a field nobody reads */
    expect_no_work(200);
    CU_ASSERT_EQUAL(skipped("ConfigMap"), before + 1);
    put_cm_data("a", "4", "maxmemory 2mb", "t2"); /* data: read */
    const char *children = expect_work("ns/a", "0", "1");
    CU_ASSERT_PTR_NOT_NULL(strstr(children, "maxmemory 2mb"));
    CU_ASSERT_EQUAL(skipped("ConfigMap"), before + 1);
    SAY(PROTO_DONE, "ns/a", "done", "0");
    fx_stop();
}

/* ---- adds by cause -------------------------------------------------------------------------- */

/* informer_queue_adds_total{cause,result} so far. */
static double adds(const char *cause, const char *result)
{
    metric_family_t *f = metrics_counter(metrics_default(), "informer_queue_adds_total", NULL, "cause,result");
    return metric_value(f, METRIC_LABELS(cause, result));
}

/* Upsert Pod ns/<name>-0 of the RedisCluster <name> (by its instance label), its phase. */
static void put_pod(const char *name, const char *rv, const char *phase)
{
    upsert_text("Pod",
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-0\",\"namespace\":\"ns\","
                "\"uid\":\"p-%s\",\"resourceVersion\":\"%s\",\"labels\":{\"app.kubernetes.io/instance\":\"%s\"}},"
                "\"status\":{\"phase\":\"%s\"}}",
                name, name, rv, name, phase);
}

static double stored_before; /* informer_observations_total{stored} before observe_stored() */

static int observation_stored(void)
{
    return counter("informer_observations_total", "stored") > stored_before;
}

/* observerd's observation of key, read and stored before the test goes on. */
static void observe_stored(const char *key, const char *json)
{
    stored_before = counter("informer_observations_total", "stored");
    observe(key, json);
    CU_ASSERT_TRUE(turn_until(observation_stored, 1000));
}

/* The causes counted, each as what its adds became. */
static const char *const counted[][2] = {
    {"rediscluster", "queued"}, {"rediscluster", "merged"}, {"configmap", "queued"}, {"configmap", "merged"},
    {"pod", "queued"},          {"pod", "merged"},          {"observation", "queued"}, {"observation", "merged"},
    {"requeue", "queued"},      {"requeue", "dropped"},     {"resync", "queued"},      {"error", "queued"},
};
#define NCOUNTED (sizeof(counted) / sizeof(counted[0]))

/* Each add is counted once, under its own cause, as what it became: a reconcile more
 * (queued), one already due (merged), or a wait a hand-out overtook (dropped). */
static void test_adds_counted_by_cause(void)
{
    fx_start(0);
    double was[NCOUNTED];
    for (size_t i = 0; i < NCOUNTED; i++)
        was[i] = adds(counted[i][0], counted[i][1]);
#define GREW(i) (adds(counted[i][0], counted[i][1]) - was[i])
    put_rc("k", "1", 1, "");     /* rediscluster: queued */
    put_cm("k", "2");            /* configmap: merged, the key due already */
    observe_stored("ns/k", "{\"nodes\":[]}"); /* observation: merged */
    SAY(PROTO_READY, "1");
    expect_work("ns/k", "0", "1");
    put_pod("k", "3", "Pending"); /* pod: in flight, so once more after it */
    put_pod("k", "4", "Running"); /* pod: merged into that */
    SAY(PROTO_DONE, "ns/k", "requeue_after", "60000"); /* requeue: dropped by the next hand-out */
    expect_work("ns/k", "0", "1");
    observe_stored("ns/k", "{\"nodes\":[]}"); /* observation: in flight, once more */
    SAY(PROTO_DONE, "ns/k", "error", "0"); /* error: a backoff of 5 ms, which a hand-out does not drop */
    expect_work("ns/k", "0", "1");          /* the observation's */
    SAY(PROTO_DONE, "ns/k", "done", "0");
    expect_work("ns/k", "0", "1");          /* the backoff's */
    SAY(PROTO_DONE, "ns/k", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    cache_resync(fx.cache, "RedisCluster"); /* resync: queued */
    expect_work("ns/k", "0", "1");
    SAY(PROTO_DONE, "ns/k", "done", "0");
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    static const double want[NCOUNTED] = {1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1};
    for (size_t i = 0; i < NCOUNTED; i++) {
        if (GREW(i) != want[i])
            fprintf(stderr, "\n  %s %s: %g, want %g", counted[i][0], counted[i][1], GREW(i), want[i]);
        CU_ASSERT_EQUAL(GREW(i), want[i]);
    }
#undef GREW
    fx_stop();
}

/* A resync queues no key whose requeue comes within the sync period: that reconcile is
 * the resync's (one hand-out, at the requeue's time). A key with none comes at once. */
static void test_resync_merges_into_a_requeue(void)
{
    fx_resync_merge_ns = 10 * NS_PER_SEC;
    fx_start(0);
    fx_resync_merge_ns = 0;
    double merged = adds("resync", "merged"), queued = adds("resync", "queued");
    hand_out_first("s", "1");
    int64_t t0 = clock_mono_ns();
    SAY(PROTO_DONE, "ns/s", "requeue_after", "400");
    cache_resync(fx.cache, "RedisCluster");
    expect_work("ns/s", "0", "1");
    CU_ASSERT(clock_mono_ns() - t0 >= 400 * NS_PER_MS);
    SAY(PROTO_DONE, "ns/s", "done", "0");
    expect_no_work(300); /* the resync and the requeue were one */
    CU_ASSERT_EQUAL(adds("resync", "merged"), merged + 1);
    cache_resync(fx.cache, "RedisCluster"); /* nothing coming: at once */
    expect_work("ns/s", "0", "1");
    SAY(PROTO_DONE, "ns/s", "done", "0");
    CU_ASSERT_EQUAL(adds("resync", "queued"), queued + 1);
    CU_ASSERT_TRUE(turn_until(idle, 1000));
    fx_stop();
}

/* Without sockets (informerd --tail) it maps and queues, and hands out nothing. */
static void test_without_sockets(void)
{
    cache_t *c = cache_new("RedisCluster");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    dispatcher_sockets_t none = {0};
    dispatcher_config_t dc = {c, NULL, 0, 120, 0, 0};
    dispatcher_t *d = dispatcher_new(&dc, &none);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    cache_set_delta_handler(c, on_delta, d);
    json_object *o = json_tokener_parse("{\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
                                        "\"resourceVersion\":\"1\"}}");
    char err[256];
    CU_ASSERT_EQUAL(cache_upsert(c, "RedisCluster", o, NULL, err, sizeof(err)), 0);
    json_object_put(o);
    dispatcher_dispatch(d, clock_mono_ns());
    CU_ASSERT_FALSE(dispatcher_in_flight(d));
    dispatcher_destroy(&d);
    cache_destroy(&c);
}

static const cu_entry_t tests[] = {
    CU_SUITE("informerd dispatcher"),
    {"a RedisCluster's change walks from the cache to a worker", test_change_reaches_a_worker},
    {"observerd's observation rides with the next item", test_observation_rides_along},
    {"an observation a Standalone plan does not read queues nothing", test_observation_a_standalone_plan_does_not_read},
    {"three crashes quarantine a key, reported and lifted by a new spec", test_crashes_quarantine},
    {"a quarantine is restored from the ReconcileCrashed condition", test_quarantine_restored_from_condition},
    {"no work and no writes without a valid lease", test_leadership},
    {"a key waits for the cache to hold its own write", test_own_write_awaited},
    {"a drain hands out nothing more", test_drain},
    {"the echoes of its own writes queue nothing", test_own_echoes_queue_nothing},
    {"a burst of child changes is one item after the delay", test_child_burst_is_one_item},
    {"a requeue a change overtook is dropped", test_requeue_overtaken_is_dropped},
    {"the echoes of the children a quiet reconcile wrote queue nothing", test_child_echoes_queue_nothing},
    {"a resync in flight keeps a change remembered there", test_resync_in_flight_keeps_a_change},
    {"a young pod's PodScheduled alone waits until it is read", test_young_pod_scheduling_waits},
    {"without sockets: keys mapped, none handed out", test_without_sockets},
    {"a child's change no plan reads queues nothing", test_unread_change_queues_nothing},
    {"each queue add is counted under its cause", test_adds_counted_by_cause},
    {"a resync merges into a requeue that comes within the sync period", test_resync_merges_into_a_requeue},
};

CU_MAIN(tests)
