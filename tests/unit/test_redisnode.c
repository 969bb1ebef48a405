/* Unit tests of the observer's probes (redisnode.h) over the Redis transport
 * (redis_conn.h) against REAL redis-server processes (Debian's redis-server) on
 * 127.0.0.1, each on a free port with no persistence, stopped by PID: a PING + INFO
 * round trip, the deadline on a server that hangs (SIGSTOP), a reconnect after a restart,
 * a replica's role and link, AUTH, a connection the server closes under the loop's
 * handler, the same probes over TLS, and Cluster mode's CLUSTER NODES and CLUSTER INFO
 * (a cluster-enabled server on 127.78.<pid % 250 + 1>.1:6379, a loopback address of this
 * suite's own, as test_cluster_live uses 127.77.N.x). */
#include "clock.h"
#include "clusternodes.h"
#include "cu_table.h"
#include "loop.h"
#include "redis_conn.h"
#include "redisnode.h"

#include "redis_servers.h"
#include "redis_tls_certs.h"
#include "tmpdir.h"

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

/* The transport alone: a connection the server closes (CLIENT KILL of every normal
 * client, ours included) is noticed under the loop's handler and leaves the loop clean:
 * its socket off the loop at once, a command queued afterwards failed with the line on
 * the next turn (it was hiredis's adapter's test before the transport replaced it). */
static int disconnected;
static char disconnect_err[512];
static void on_kill_reply(redis_conn_t *c, redisReply *reply, const char *err, void *arg)
{
    (void)c;
    (void)arg;
    freeReplyObject(reply); /* the kill's own answer, sent before the close */
    if (err)
        snprintf(disconnect_err, sizeof(disconnect_err), "%s", err);
}

static void on_after(redis_conn_t *c, redisReply *reply, const char *err, void *arg)
{
    (void)c;
    (void)arg;
    CU_ASSERT_PTR_NULL(reply);
    snprintf(disconnect_err, sizeof(disconnect_err), "%s", err ? err : "");
    disconnected++;
}

static void test_transport_server_close(void)
{
    server_t s = {0};
    CU_ASSERT_EQUAL_FATAL(server_start(&s, 0, NULL), 0);
    loop_t *loop = loop_new();
    redis_conn_t *c = redis_conn_new(loop, &(redis_conn_opts_t){.host = "127.0.0.1", .port = s.port});
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 1);
    const char *kill_all[] = {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"};
    CU_ASSERT_EQUAL(redis_conn_command(c, 6, kill_all, NULL, 3 * NS_PER_SEC, on_kill_reply, NULL), 0);
    int64_t end = clock_mono_ns() + 3 * NS_PER_SEC;
    while (redis_conn_state(c) != REDIS_CONN_FAILED && clock_mono_ns() < end)
        loop_run_once(loop, 50 * NS_PER_MS);
    CU_ASSERT_EQUAL(redis_conn_state(c), REDIS_CONN_FAILED);
    CU_ASSERT_PTR_NOT_NULL(strstr(redis_conn_error(c), "connection closed by the server"));
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0);
    const char *ping[] = {"PING"};
    CU_ASSERT_EQUAL(redis_conn_command(c, 1, ping, NULL, NS_PER_SEC, on_after, NULL), 0);
    CU_ASSERT_EQUAL(disconnected, 0);
    loop_run_once(loop, 50 * NS_PER_MS);
    CU_ASSERT_EQUAL(disconnected, 1);
    CU_ASSERT_STRING_EQUAL(disconnect_err, redis_conn_error(c));
    redis_conn_destroy(&c);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0);
    CU_ASSERT_EQUAL(loop_timer_count(loop), 0);
    loop_destroy(&loop);
    server_stop(&s);
}

/* Probes over TLS (with AUTH): answered when the CA and the name match, refused with the
 * transport's line when they do not; changing the settings reconnects. */
static void test_tls_probe(void)
{
    char dir[64] = "/tmp/rdc-redisnode-tls-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    tc_pki_t pki;
    tc_pki_make(&pki);
    tc_pki_write(&pki, dir);
    char err[256];
    redis_tls_t *good = redis_tls_new(&(redis_tls_config_t){.ca_pem = pki.ca.crt_pem, .ca_len = strlen(pki.ca.crt_pem)},
                                      err, sizeof(err));
    redis_tls_t *bad = redis_tls_new(
        &(redis_tls_config_t){.ca_pem = pki.other_ca.crt_pem, .ca_len = strlen(pki.other_ca.crt_pem)}, err,
        sizeof(err));
    CU_ASSERT_FATAL(good && bad);
    node_fixture_t f;
    memset(&f, 0, sizeof(f));
    const char *const extra[] = {"--requirepass", "s3cret-pw", NULL};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&f.s, dir, "server.crt", "server.key", 0, extra), 0);
    f.loop = loop_new();
    f.n = redisnode_new(f.loop, "127.0.0.1", f.s.port, PROBE_TIMEOUT_NS, on_result, &f.r);
    CU_ASSERT_EQUAL(redisnode_set_password(f.n, "s3cret-pw"), 0);
    CU_ASSERT_EQUAL(redisnode_set_tls(f.n, good, NULL), 0);
    const redisnode_state_t *st = probe_once(&f, 1);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->info.role, REDISINFO_ROLE_MASTER);
    CU_ASSERT_EQUAL(st->have_full, 1);
    CU_ASSERT_EQUAL(redisnode_set_tls(f.n, good, "redis.test"), 0);
    CU_ASSERT_EQUAL(probe_once(&f, 0)->reachable, 1);
    CU_ASSERT_EQUAL(redisnode_set_tls(f.n, good, "cache-0.cache.ns.svc"), 0);
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(st->error, "TLS handshake: certificate verify failed: hostname mismatch"));
    CU_ASSERT_EQUAL(redisnode_set_tls(f.n, bad, NULL), 0);
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(st->error, "certificate verify failed"));
    CU_ASSERT_PTR_NULL(strstr(st->error, "s3cret"));
    CU_ASSERT_EQUAL(redisnode_set_tls(f.n, NULL, NULL), 0); /* plain text to a TLS-only server */
    CU_ASSERT_EQUAL(probe_once(&f, 0)->reachable, 0);
    CU_ASSERT_EQUAL(redisnode_set_tls(f.n, good, NULL), 0);
    CU_ASSERT_EQUAL(probe_once(&f, 0)->reachable, 1);
    fixture_stop(&f);
    redis_tls_destroy(&good);
    redis_tls_destroy(&bad);
    tc_pki_free(&pki);
    tmpdir_remove(dir);
}

/* How many times the server at ip:port ran cmd ("cluster|nodes"), from INFO commandstats. */
static long command_calls(const char *ip, int port, const char *cmd)
{
    redisContext *c = redisConnect(ip, port);
    redisReply *r = c && !c->err ? redisCommand(c, "INFO commandstats") : NULL;
    char key[64];
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", cmd);
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, key) : NULL;
    long calls = at ? strtol(at + strlen(key), NULL, 10) : 0;
    freeReplyObject(r);
    redisFree(c);
    return calls;
}

/* Cluster mode: each probe also reads CLUSTER NODES (normalized) and CLUSTER INFO; the
 * slots the test assigns show; turned off, no CLUSTER command is sent and the state is
 * forgotten. */
static void test_cluster_probe(void)
{
    char dir[64] = "/tmp/rdc-redisnode-cluster-XXXXXX", conf[128], ip[32];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(conf, sizeof(conf), "%s/nodes.conf", dir);
    snprintf(ip, sizeof(ip), "127.78.%d.1", (int)(getpid() % 250) + 1);
    const char *const extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf, "--cluster-announce-ip",
                                 ip, "--dir", dir, NULL};
    node_fixture_t f;
    memset(&f, 0, sizeof(f));
    CU_ASSERT_EQUAL_FATAL(server_start_at(&f.s, ip, 6379, extra), 0);
    f.loop = loop_new();
    f.n = redisnode_new(f.loop, ip, 6379, PROBE_TIMEOUT_NS, on_result, &f.r);
    const redisnode_state_t *st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->cluster_known, 0); /* not asked */
    CU_ASSERT_EQUAL(command_calls(ip, 6379, "cluster|nodes"), 0);
    redisnode_set_cluster(f.n, 1);
    st = probe_once(&f, 1);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->have_full, 1);
    CU_ASSERT_EQUAL_FATAL(st->cluster_known, 1);
    CU_ASSERT_STRING_EQUAL(st->cluster_error, "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(st->cluster_nodes);
    cn_view_t *view = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(cn_parse(st->cluster_nodes, strlen(st->cluster_nodes), &view, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(view->n, 1);
    CU_ASSERT_PTR_NOT_NULL(cn_myself(view));
    CU_ASSERT_STRING_EQUAL(cn_myself(view)->ip, ip);
    cn_view_destroy(&view);
    CU_ASSERT_EQUAL(st->cluster_info.state_ok, 0); /* no slot assigned */
    CU_ASSERT_EQUAL(st->cluster_info.slots_assigned, 0);
    CU_ASSERT_EQUAL(st->cluster_info.known_nodes, 1);
    CU_ASSERT_EQUAL(command_calls(ip, 6379, "cluster|nodes"), 1);
    CU_ASSERT_EQUAL(command_calls(ip, 6379, "cluster|info"), 1);
    /* Every slot to it: the state turns ok. */
    redisContext *c = redisConnect(ip, 6379);
    freeReplyObject(redisCommand(c, "CLUSTER ADDSLOTSRANGE 0 16383"));
    redisFree(c);
    for (int i = 0; i < 50 && st->cluster_info.state_ok != 1; i++) {
        nap_ms(100);
        st = probe_once(&f, 0);
    }
    CU_ASSERT_EQUAL(st->cluster_info.state_ok, 1);
    CU_ASSERT_EQUAL(st->cluster_info.slots_assigned, CN_SLOTS);
    CU_ASSERT_EQUAL(st->cluster_info.slots_ok, CN_SLOTS);
    CU_ASSERT_EQUAL(st->cluster_info.slots_fail, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(st->cluster_nodes, " connected 0-16383\n"));
    /* A hung server: unreachable, the last cluster state kept (as the last role is). */
    kill(f.s.pid, SIGSTOP);
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 0);
    CU_ASSERT_EQUAL(st->cluster_known, 1);
    CU_ASSERT_EQUAL(st->cluster_info.state_ok, 1);
    kill(f.s.pid, SIGCONT);
    /* Off: no CLUSTER command any more, nothing kept. */
    redisnode_set_cluster(f.n, 0);
    CU_ASSERT_EQUAL(st->cluster_known, 0);
    CU_ASSERT_PTR_NULL(st->cluster_nodes);
    long calls = command_calls(ip, 6379, "cluster|nodes");
    st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_EQUAL(st->cluster_known, 0);
    CU_ASSERT_EQUAL(command_calls(ip, 6379, "cluster|nodes"), calls);
    fixture_stop(&f);
    tmpdir_remove(dir);
}

/* Cluster mode against a server without cluster-enabled: the node answers (PING and
 * INFO did), and its cluster state says why it has no CLUSTER NODES. */
static void test_cluster_probe_disabled(void)
{
    node_fixture_t f;
    fixture_start(&f, NULL);
    redisnode_set_cluster(f.n, 1);
    const redisnode_state_t *st = probe_once(&f, 0);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_STRING_EQUAL(st->error, "");
    CU_ASSERT_EQUAL(st->cluster_known, 1);
    CU_ASSERT_PTR_NULL(st->cluster_nodes);
    CU_ASSERT_PTR_NOT_NULL(strstr(st->cluster_error, "redis error: ERR This instance has cluster support disabled"));
    CU_ASSERT_EQUAL(st->cluster_info.state_ok, -1);
    CU_ASSERT_EQUAL(st->cluster_info.slots_assigned, -1);
    fixture_stop(&f);
}

static const cu_entry_t tests[] = {
    CU_SUITE("redisnode"),
    {"PING and INFO round trip", test_ping_round_trip},
    {"deadline on a SIGSTOPped server", test_timeout_on_stopped_server},
    {"reconnect after a restart", test_reconnect_after_restart},
    {"a replica's role and link", test_replica_role_and_link},
    {"AUTH, wrong password, rotation", test_auth},
    {"transport: server closes the connection", test_transport_server_close},
    {"probes over TLS", test_tls_probe},
    {"cluster mode: CLUSTER NODES and CLUSTER INFO with each probe", test_cluster_probe},
    {"cluster mode against a server without cluster support", test_cluster_probe_disabled},
};

CU_MAIN(tests)
