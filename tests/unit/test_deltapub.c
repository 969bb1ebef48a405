/* Unit tests of informerd's delta stream (informerd/deltapub.h), the server side of the
 * Clone pattern, on real ZeroMQ sockets: every cache delta goes out as DELTA on the PUB
 * and as a JSON line with --tail; ICANHAZ is answered with the whole cache (SNAP ... in the
 * cache's kind order) and KTHXBAI at the snapshot's sequence number; HUGZ carries the
 * cache's sequence number. The test plays a subscriber (SUB + DEALER). */
#include "cache.h"
#include "clock.h"
#include "deltapub.h"
#include "loop.h"
#include "metrics.h"
#include "proto.h"
#include "rmsg.h"
#include "tmpdir.h"

#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static void on_delta(void *ud, const cache_delta_t *d)
{
    deltapub_delta(ud, d);
}

static void put(cache_t *c, const char *kind, const char *name, const char *rv)
{
    char text[512], err[256];
    snprintf(text, sizeof(text),
             "{\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"u-%s-%s\","
             "\"resourceVersion\":\"%s\"}}",
             kind, name, kind, name, rv);
    json_object *o = json_tokener_parse(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_EQUAL(cache_upsert(c, kind, o, NULL, err, sizeof(err)), 0);
    json_object_put(o);
}

/* The next message on s within ms while the loop turns, or NULL. */
static rmsg_t *next_msg(loop_t *loop, void *s, int ms)
{
    int64_t until = clock_mono_ns() + (int64_t)ms * NS_PER_MS;
    while (clock_mono_ns() < until) {
        rmsg_t *m = rmsg_recv(s, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 1 << 20);
        if (m)
            return m;
        loop_run_once(loop, 5 * NS_PER_MS);
    }
    return NULL;
}

static void *sock(void *ctx, int type, const char *dir, const char *name, int bind)
{
    char ep[128];
    snprintf(ep, sizeof(ep), "ipc://%s/%s", dir, name);
    void *s = zmq_socket(ctx, type);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    if (type == ZMQ_SUB)
        zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
    CU_ASSERT_EQUAL_FATAL(bind ? zmq_bind(s, ep) : zmq_connect(s, ep), 0);
    return s;
}

static void test_deltas_snapshots_hugz(void)
{
    char dir[] = "/tmp/rdc-deltapub-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    void *ctx = zmq_ctx_new();
    loop_t *loop = loop_new();
    cache_t *c = cache_new("RedisCluster");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(cache_add_kind(c, "ConfigMap"), 0);
    char *tail = NULL;
    size_t tail_len = 0;
    FILE *out = open_memstream(&tail, &tail_len);
    void *pub = sock(ctx, ZMQ_PUB, dir, "deltas.sock", 1), *snapshot = sock(ctx, ZMQ_ROUTER, dir, "snapshot.sock", 1);
    deltapub_t *p = deltapub_new(c, &pub, &snapshot, out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_PTR_NULL(pub); /* taken */
    CU_ASSERT_PTR_NULL(snapshot);
    CU_ASSERT_EQUAL_FATAL(deltapub_attach(p, loop), 0);
    cache_set_delta_handler(c, on_delta, p);
    void *sub = sock(ctx, ZMQ_SUB, dir, "deltas.sock", 0), *asker = sock(ctx, ZMQ_DEALER, dir, "snapshot.sock", 0);
    metric_family_t *deltas = metrics_counter(metrics_default(), "informer_deltas_total", NULL, "kind,type");
    double added = metric_value(deltas, METRIC_LABELS("ConfigMap", "ADDED"));

    /* HUGZ with the sequence number, until the subscription is up (a SUB that just
     * connected misses what came before). */
    rmsg_t *m = NULL;
    for (int i = 0; i < 400 && !m; i++) {
        m = next_msg(loop, sub, 10);
        if (m && !rmsg_frame_is(m, 0, PROTO_HUGZ))
            rmsg_destroy(&m);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_TRUE(rmsg_frame_is(m, 1, "0"));
    rmsg_destroy(&m);

    /* A delta: DELTA seq type kind key rv object, and its JSON line. */
    put(c, "ConfigMap", "a", "5");
    do {
        rmsg_destroy(&m);
        m = next_msg(loop, sub, 2000);
    } while (m && rmsg_frame_is(m, 0, PROTO_HUGZ));
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(rmsg_size(m), 7);
    CU_ASSERT_TRUE(rmsg_frame_is(m, 0, PROTO_DELTA));
    CU_ASSERT_TRUE(rmsg_frame_is(m, 1, "1"));
    CU_ASSERT_TRUE(rmsg_frame_is(m, 2, "ADDED"));
    CU_ASSERT_TRUE(rmsg_frame_is(m, 3, "ConfigMap"));
    CU_ASSERT_TRUE(rmsg_frame_is(m, 4, "ns/a"));
    CU_ASSERT_TRUE(rmsg_frame_is(m, 5, "5"));
    CU_ASSERT_TRUE(rmsg_frame_is(m, 6, cache_get_json(c, "ConfigMap", "ns/a")));
    rmsg_destroy(&m);
    CU_ASSERT_EQUAL(metric_value(deltas, METRIC_LABELS("ConfigMap", "ADDED")), added + 1);
    fflush(out);
    char want[512];
    snprintf(want, sizeof(want),
             "{\"seq\":1,\"type\":\"ADDED\",\"kind\":\"ConfigMap\",\"key\":\"ns/a\",\"resourceVersion\":\"5\","
             "\"object\":%s}\n",
             cache_get_json(c, "ConfigMap", "ns/a"));
    CU_ASSERT_STRING_EQUAL(tail, want);

    /* A snapshot: every object, the owner kind first, then KTHXBAI at seq 2. */
    put(c, "RedisCluster", "a", "6");
    rmsg_t *ask = rmsg_new();
    rmsg_addstr(ask, PROTO_ICANHAZ);
    CU_ASSERT_EQUAL(rmsg_send(&ask, asker, 0), 0);
    const char *want_kinds[] = {"RedisCluster", "ConfigMap"};
    for (int i = 0; i < 2; i++) {
        m = next_msg(loop, asker, 2000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_TRUE(rmsg_frame_is(m, 0, PROTO_SNAP));
        CU_ASSERT_TRUE(rmsg_frame_is(m, 1, "2"));
        CU_ASSERT_TRUE(rmsg_frame_is(m, 2, want_kinds[i]));
        CU_ASSERT_TRUE(rmsg_frame_is(m, 3, "ns/a"));
        rmsg_destroy(&m);
    }
    m = next_msg(loop, asker, 2000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_TRUE(rmsg_frame_is(m, 0, PROTO_KTHXBAI));
    CU_ASSERT_TRUE(rmsg_frame_is(m, 1, "2"));
    rmsg_destroy(&m);

    deltapub_destroy(&p);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0); /* detached */
    CU_ASSERT_EQUAL(loop_timer_count(loop), 0);
    zmq_close(sub);
    zmq_close(asker);
    zmq_ctx_term(ctx);
    fclose(out);
    free(tail);
    cache_destroy(&c);
    loop_destroy(&loop);
    tmpdir_remove(dir);
}

/* --tail alone: no sockets, every delta a line. */
static void test_tail_only(void)
{
    cache_t *c = cache_new("RedisCluster");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    char *tail = NULL;
    size_t tail_len = 0;
    FILE *out = open_memstream(&tail, &tail_len);
    void *none = NULL, *none2 = NULL;
    deltapub_t *p = deltapub_new(c, &none, &none2, out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    loop_t *loop = loop_new();
    CU_ASSERT_EQUAL(deltapub_attach(p, loop), 0);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0);
    CU_ASSERT_EQUAL(loop_timer_count(loop), 0);
    cache_set_delta_handler(c, on_delta, p);
    put(c, "RedisCluster", "a", "1");
    char err[64];
    CU_ASSERT_EQUAL(cache_delete(c, "RedisCluster", "ns/a", NULL, err, sizeof(err)), 0);
    fflush(out);
    CU_ASSERT_PTR_NOT_NULL(strstr(tail, "{\"seq\":1,\"type\":\"ADDED\",\"kind\":\"RedisCluster\",\"key\":\"ns/a\""));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tail, "\n{\"seq\":2,\"type\":\"DELETED\",\"kind\":\"RedisCluster\",\"key\":\"ns/a\""));
    deltapub_destroy(&p);
    loop_destroy(&loop);
    fclose(out);
    free(tail);
    cache_destroy(&c);
}

static const cu_entry_t tests[] = {
    CU_SUITE("informerd delta stream"),
    {"DELTA, --tail line, SNAP..KTHXBAI at the snapshot's seq, HUGZ", test_deltas_snapshots_hugz},
    {"--tail alone", test_tail_only},
};

CU_MAIN(tests)
