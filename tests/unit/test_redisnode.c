/* Unit tests of hiredis on our loop (redis_loop.h) and the observer's probes
 * (redisnode.h) against REAL redis-server processes (Debian's redis-server) on
 * 127.0.0.1, each on a free port with no persistence, stopped by PID: a PING + INFO
 * round trip, the deadline on a server that hangs (SIGSTOP), a reconnect after a restart,
 * a replica's role and link, and AUTH. */
#include "clock.h"
#include "cu_table.h"
#include "loop.h"
#include "redis_loop.h"
#include "redisnode.h"

#include "redis_servers.h"

#include <CUnit/CUnit.h>

#define PROBE_TIMEOUT_NS (300 * NS_PER_MS)

typedef struct {
    int calls;
    int64_t at_ns;
} probe_result_t;

static void on_result(redisnode_t *node, void *arg)
{
    (void)node;
    probe_result_t *r = arg;
    r->calls++;
    r->at_ns = clock_mono_ns();
}

/* A redis-server on a free port and a node probing it on a new loop; fixture_stop frees
 * all three. */
typedef struct {
    server_t s;
    loop_t *loop;
    probe_result_t r;
    redisnode_t *n;
} node_fixture_t;

/* Start the server with the extra flags (NULL: none), then the loop and the node. */
static void fixture_start(node_fixture_t *f, const char *const *extra)
{
    memset(f, 0, sizeof(*f));
    CU_ASSERT_EQUAL_FATAL(server_start(&f->s, 0, extra), 0);
    f->loop = loop_new();
    f->n = redisnode_new(f->loop, "127.0.0.1", f->s.port, PROBE_TIMEOUT_NS, on_result, &f->r);
}

/* Destroy the node, which must give its loop every reader and timer back whatever it was
 * doing, then the loop and the server. */
static void fixture_stop(node_fixture_t *f)
{
    redisnode_destroy(&f->n);
    CU_ASSERT_PTR_NULL(f->n);
    CU_ASSERT_EQUAL(loop_reader_count(f->loop), 0);
    CU_ASSERT_EQUAL(loop_timer_count(f->loop), 0);
    loop_destroy(&f->loop);
    server_stop(&f->s);
}

/* Probe once and run the loop until the callback came (or 5 s). */
static const redisnode_state_t *probe_once(node_fixture_t *f, int full)
{
    int before = f->r.calls;
    CU_ASSERT(redisnode_probe(f->n, full) >= -1);
    int64_t end = clock_mono_ns() + 5 * NS_PER_SEC;
    while (f->r.calls == before && clock_mono_ns() < end)
        loop_run_once(f->loop, 50 * NS_PER_MS);
    CU_ASSERT_EQUAL(f->r.calls, before + 1);
    return redisnode_state(f->n);
}

static void test_ping_round_trip(void)
{
    node_fixture_t f;
    fixture_start(&f, NULL);
    const redisnode_state_t *st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_STRING_EQUAL(st->error, "");
    CU_ASSERT_EQUAL(st->info.role, REDISINFO_ROLE_MASTER);
    CU_ASSERT(st->info.master_repl_offset >= 0);
    CU_ASSERT_EQUAL(st->have_full, 0);
    CU_ASSERT_EQUAL(st->info.connected_clients, -1); /* INFO replication only */
    /* A second probe reuses the connection; a full one reads the default sections. */
    st = probe_once(&f, 1);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->have_full, 1);
    CU_ASSERT(st->full.connected_clients >= 1);
    CU_ASSERT(st->full.used_memory > 0);
    CU_ASSERT_EQUAL(st->full.rdb_last_bgsave_ok, 1);
    CU_ASSERT_EQUAL(st->probes, 2);
    CU_ASSERT_EQUAL(st->failures, 0);
    /* One connection: the server counts ours plus the one that asks. */
    redisContext *c = redisConnect("127.0.0.1", f.s.port);
    redisReply *rep = redisCommand(c, "CLIENT LIST");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
    int lines = 0;
    for (const char *p = rep->str; p && (p = strchr(p, '\n')); p++)
        lines++;
    CU_ASSERT_EQUAL(lines, 2);
    freeReplyObject(rep);
    redisFree(c);
    /* A probe while one is in flight is refused. */
    CU_ASSERT_EQUAL(redisnode_probe(f.n, 0), 0);
    CU_ASSERT_EQUAL(redisnode_probe(f.n, 0), 1);
    fixture_stop(&f); /* with a probe in flight: no callback, no leak */
}

static void test_timeout_on_stopped_server(void)
{
    node_fixture_t f;
    fixture_start(&f, NULL);
    CU_ASSERT_EQUAL(probe_once(&f, 0)->reachable, 1);
    kill(f.s.pid, SIGSTOP);
    int64_t t0 = clock_mono_ns();
    const redisnode_state_t *st = probe_once(&f, 0);
    int64_t took = f.r.at_ns - t0;
    CU_ASSERT_EQUAL(st->reachable, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(st->error, "no answer within 300 ms"));
    CU_ASSERT(took >= PROBE_TIMEOUT_NS);
    CU_ASSERT(took < PROBE_TIMEOUT_NS + 200 * NS_PER_MS);
    CU_ASSERT(st->down_since_ns > 0);
    CU_ASSERT_EQUAL(st->info.role, REDISINFO_ROLE_MASTER); /* the last known role stays */
    /* Still stopped: a fresh connection (the kernel accepts it) gets no answer either. */
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 0);
    CU_ASSERT_EQUAL(st->failures, 2);
    int64_t down = st->down_since_ns;
    kill(f.s.pid, SIGCONT);
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->down_since_ns, 0);
    CU_ASSERT(down > 0);
    fixture_stop(&f);
}

static void test_reconnect_after_restart(void)
{
    node_fixture_t f;
    fixture_start(&f, NULL);
    CU_ASSERT_EQUAL(probe_once(&f, 0)->reachable, 1);
    int port = f.s.port;
    server_stop(&f.s);
    /* Killed: the connection closes (or the reconnect is refused) at once, no timeout. */
    for (int i = 0; i < 2; i++) {
        int64_t t0 = clock_mono_ns();
        const redisnode_state_t *st = probe_once(&f, 0);
        CU_ASSERT_EQUAL(st->reachable, 0);
        CU_ASSERT(f.r.at_ns - t0 < PROBE_TIMEOUT_NS);
        CU_ASSERT(strstr(st->error, "closed") || strstr(st->error, "refused") || strstr(st->error, "connect"));
    }
    CU_ASSERT_EQUAL_FATAL(server_start(&f.s, port, NULL), 0);
    const redisnode_state_t *st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_STRING_EQUAL(st->error, "");
    fixture_stop(&f);
}

static void test_replica_role_and_link(void)
{
    server_t p = {0};
    CU_ASSERT_EQUAL_FATAL(server_start(&p, 0, NULL), 0);
    char port[16];
    snprintf(port, sizeof(port), "%d", p.port);
    const char *const extra[] = {"--replicaof", "127.0.0.1", port, NULL};
    node_fixture_t f;
    fixture_start(&f, extra);
    const redisnode_state_t *st = NULL;
    for (int i = 0; i < 50; i++) {
        st = probe_once(&f, 0);
        if (st->info.link_up)
            break;
        nap_ms(100);
    }
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->info.role, REDISINFO_ROLE_SLAVE);
    CU_ASSERT_STRING_EQUAL(st->info.master_host, "127.0.0.1");
    CU_ASSERT_EQUAL(st->info.master_port, p.port);
    CU_ASSERT_EQUAL(st->info.link_up, 1);
    /* The primary dies: the replica is reachable, its link goes down. */
    server_stop(&p);
    for (int i = 0; i < 50; i++) {
        st = probe_once(&f, 0);
        if (!st->info.link_up)
            break;
        nap_ms(100);
    }
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->info.link_up, 0);
    CU_ASSERT_EQUAL(st->info.role, REDISINFO_ROLE_SLAVE);
    fixture_stop(&f);
}

static void test_auth(void)
{
    node_fixture_t f;
    const char *const extra[] = {"--requirepass", "s3cret-pw", NULL};
    fixture_start(&f, extra);
    const redisnode_state_t *st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(st->error, "NOAUTH"));
    CU_ASSERT_EQUAL(redisnode_set_password(f.n, "wrong"), 0);
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 0);
    CU_ASSERT(strstr(st->error, "WRONGPASS") || strstr(st->error, "invalid"));
    CU_ASSERT_PTR_NULL(strstr(st->error, "wrong"));
    CU_ASSERT_EQUAL(redisnode_set_password(f.n, "s3cret-pw"), 0);
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->info.role, REDISINFO_ROLE_MASTER);
    /* The password never shows in what the node reports. */
    CU_ASSERT_PTR_NULL(strstr(st->error, "s3cret"));
    /* Rotated on the server: the next probe fails; given the new one, it reconnects. */
    redisContext *c = redisConnect("127.0.0.1", f.s.port);
    redisReply *rep = redisCommand(c, "AUTH s3cret-pw");
    freeReplyObject(rep);
    rep = redisCommand(c, "CONFIG SET requirepass n3w-pw");
    freeReplyObject(rep);
    redisFree(c);
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1); /* an authenticated connection stays authenticated */
    CU_ASSERT_EQUAL(redisnode_set_password(f.n, "n3w-pw"), 0);
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1);
    fixture_stop(&f);
}

/* The adapter alone: a context freed by hiredis after the server closed it (under our
 * handler) leaves the loop clean. */
static int disconnected;
static void on_disc(const redisAsyncContext *c, int status)
{
    (void)c;
    (void)status;
    disconnected++;
}

static void test_adapter_server_close(void)
{
    server_t s = {0};
    CU_ASSERT_EQUAL_FATAL(server_start(&s, 0, NULL), 0);
    loop_t *loop = loop_new();
    redisAsyncContext *ac = redisAsyncConnect("127.0.0.1", s.port);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ac);
    CU_ASSERT_EQUAL_FATAL(ac->err, 0);
    CU_ASSERT_EQUAL(redis_loop_attach(ac, loop), 0);
    CU_ASSERT_EQUAL(redis_loop_attach(ac, loop), -1); /* once only */
    CU_ASSERT_EQUAL(loop_reader_count(loop), 1);
    redisAsyncSetDisconnectCallback(ac, on_disc);
    redisAsyncCommand(ac, NULL, NULL, "CLIENT KILL TYPE normal SKIPME no");
    int64_t end = clock_mono_ns() + 3 * NS_PER_SEC;
    while (!disconnected && clock_mono_ns() < end)
        loop_run_once(loop, 50 * NS_PER_MS);
    CU_ASSERT_EQUAL(disconnected, 1);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0);
    loop_destroy(&loop);
    server_stop(&s);
}

static const cu_entry_t tests[] = {
    CU_SUITE("redisnode"),
    {"PING and INFO round trip", test_ping_round_trip},
    {"deadline on a SIGSTOPped server", test_timeout_on_stopped_server},
    {"reconnect after a restart", test_reconnect_after_restart},
    {"a replica's role and link", test_replica_role_and_link},
    {"AUTH, wrong password, rotation", test_auth},
    {"adapter: server closes the connection", test_adapter_server_close},
};

CU_MAIN(tests)
