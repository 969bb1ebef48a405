/* redisexec: workerd's synchronous Redis commands against real redis-server processes:
 * replies, AUTH (refused, accepted, never echoed), the password token, REPLICAOF and the
 * INFO it shows, timeouts against a stopped server, and the --once observation; then the
 * same over TLS (redis-server --tls-port, certificates made in the test): the pod's name
 * checked, a wrong one refused, a client certificate required and presented, a secret
 * token (an ACL user's password hash), the TLS files read again with CONFIG SET
 * ${current} (the served certificate changes, no restart), replication over TLS and the
 * promotion guard, a switchover, and the observation's tlsCert. */
#include "clock.h"
#include "cu_table.h"
#include "jsonx.h"
#include "redis_sync.h"
#include "redisexec.h"

#include "redis_servers.h"
#include "redis_tls_certs.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <string.h>

#define PW "s3cret-pw"
#define MS (INT64_C(1000000))

static void test_reply_and_errors(void)
{
    server_t a = {0};
    CU_ASSERT_EQUAL_FATAL(server_start(&a, 0, NULL), 0);
    char reply[256], err[256];
    const char *ping[] = {"PING"};
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", a.port, NULL, NULL, 1, ping, 500 * MS, reply, sizeof(reply), err, sizeof(err)),
        0);
    CU_ASSERT_STRING_EQUAL(reply, "PONG");
    const char *bad[] = {"NOSUCHCOMMAND", "x"};
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", a.port, NULL, NULL, 2, bad, 500 * MS, NULL, 0, err, sizeof(err)),
                    -1);
    CU_ASSERT_TRUE(strstr(err, "NOSUCHCOMMAND") != NULL && strstr(err, "ERR") != NULL);
    const char *incr[] = {"INCR", "k"};
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", a.port, NULL, NULL, 2, incr, 500 * MS, reply, sizeof(reply), err, sizeof(err)),
        0);
    CU_ASSERT_STRING_EQUAL(reply, "1");
    int port = a.port;
    server_stop(&a);
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", port, NULL, NULL, 1, ping, 500 * MS, NULL, 0, err, sizeof(err)), -1);
    CU_ASSERT_TRUE(strncmp(err, "connect 127.0.0.1:", 18) == 0);
}

static void test_auth(void)
{
    server_t b = {0};
    const char *extra[] = {"--requirepass", PW, NULL};
    CU_ASSERT_EQUAL_FATAL(server_start(&b, 0, extra), 0);
    char reply[256], err[256];
    const char *ping[] = {"PING"};
    /* Without the password: refused. */
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", b.port, NULL, NULL, 1, ping, 500 * MS, reply, sizeof(reply), err, sizeof(err)),
        -1);
    CU_ASSERT_TRUE(strstr(err, "NOAUTH") != NULL);
    /* A wrong one: refused, and not repeated in the message. */
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", b.port, "wrong-one", NULL, 1, ping, 500 * MS, reply, sizeof(reply),
                                      err, sizeof(err)),
                    -1);
    CU_ASSERT_TRUE(strncmp(err, "AUTH ", 5) == 0);
    CU_ASSERT_PTR_NULL(strstr(err, "wrong-one"));
    /* The right one. */
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", b.port, PW, NULL, 1, ping, 500 * MS, reply, sizeof(reply), err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(reply, "PONG");
    /* The token goes out as the password. */
    const char *set[] = {"CONFIG", "SET", "masterauth", REDISEXEC_PASSWORD_TOKEN};
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", b.port, PW, NULL, 4, set, 500 * MS, NULL, 0, err, sizeof(err)), 0);
    redisContext *c = redisConnect("127.0.0.1", b.port);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    redisReply *r = redisCommand(c, "AUTH %s", PW);
    freeReplyObject(r);
    r = redisCommand(c, "CONFIG GET masterauth");
    CU_ASSERT_TRUE(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && !strcmp(r->element[1]->str, PW));
    freeReplyObject(r);
    redisFree(c);
    server_stop(&b);
}

static void test_replicaof_and_info(void)
{
    server_t p = {0}, q = {0};
    CU_ASSERT_EQUAL_FATAL(server_start(&p, 0, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(server_start(&q, 0, NULL), 0);
    char port[16], reply[8192], err[256];
    snprintf(port, sizeof(port), "%d", p.port);
    const char *rof[] = {"REPLICAOF", "127.0.0.1", port};
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", q.port, NULL, NULL, 3, rof, 500 * MS, reply, sizeof(reply), err, sizeof(err)),
        0);
    CU_ASSERT_STRING_EQUAL(reply, "OK");
    const char *info[] = {"INFO", "replication"};
    char role[16], host[256];
    int mport = 0, link = 0;
    int64_t off = -1;
    /* Wait for the link (a loop with a deadline; the sync takes a moment). */
    for (int i = 0; i < 100 && !link; i++) {
        CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", q.port, NULL, NULL, 2, info, 500 * MS, reply, sizeof(reply), err,
                                          sizeof(err)),
                        0);
        redisexec_parse_info(reply, role, sizeof(role), host, sizeof(host), &mport, &link, &off);
        if (!link)
            nap_ms(50);
    }
    CU_ASSERT_STRING_EQUAL(role, "slave");
    CU_ASSERT_STRING_EQUAL(host, "127.0.0.1");
    CU_ASSERT_EQUAL(mport, p.port);
    CU_ASSERT_EQUAL(link, 1);
    CU_ASSERT_TRUE(off >= 0);
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", p.port, NULL, NULL, 2, info, 500 * MS, reply, sizeof(reply), err, sizeof(err)),
        0);
    redisexec_parse_info(reply, role, sizeof(role), host, sizeof(host), &mport, &link, &off);
    CU_ASSERT_STRING_EQUAL(role, "master");
    CU_ASSERT_STRING_EQUAL(host, "");
    /* The --once observation of two "pods" at the same address. */
    json_object *pods = json_tokener_parse("[{\"metadata\":{\"name\":\"c-0\"},\"status\":{\"podIP\":\"127.0.0.1\"}},"
                                           "{\"metadata\":{\"name\":\"c-1\"},\"status\":{}}]");
    json_object *o = redisexec_observe(pods, NULL, q.port, 500 * MS, "t", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(o, "observedAt"), "t");
    json_object *n0 = json_object_array_get_idx(jsonx_get(o, "nodes"), 0),
                *n1 = json_object_array_get_idx(jsonx_get(o, "nodes"), 1);
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(n0, "role"), "slave");
    CU_ASSERT_TRUE(json_object_get_boolean(jsonx_get(n0, "reachable")));
    CU_ASSERT_EQUAL(json_object_get_int(jsonx_get(n0, "masterPort")), p.port);
    CU_ASSERT_FALSE(json_object_get_boolean(jsonx_get(n1, "reachable")));
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(n1, "ip"), "");
    json_object_put(o);
    json_object_put(pods);
    server_stop(&p);
    server_stop(&q);
}

static void test_timeout_on_stopped_server(void)
{
    server_t s = {0};
    CU_ASSERT_EQUAL_FATAL(server_start(&s, 0, NULL), 0);
    kill(s.pid, SIGSTOP); /* the kernel still accepts; nothing answers */
    char err[256];
    const char *ping[] = {"PING"};
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", s.port, NULL, NULL, 1, ping, 300 * MS, NULL, 0, err, sizeof(err)),
                    -1);
    int64_t took = clock_mono_ns() - t0;
    CU_ASSERT_TRUE(took >= 250 * MS && took < 1500 * MS);
    server_stop(&s);
}

static void test_parse_info_partial(void)
{
    char role[16], host[64];
    int mport = 7, link = 7;
    int64_t off = 7;
    redisexec_parse_info("garbage", role, sizeof(role), host, sizeof(host), &mport, &link, &off);
    CU_ASSERT_STRING_EQUAL(role, "");
    CU_ASSERT_EQUAL(mport, 0);
    CU_ASSERT_EQUAL(off, -1);
    redisexec_parse_info("# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\n"
                         "master_link_status:down\r\nslave_repl_offset:42\r\nmaster_repl_offset:50\r\n",
                         role, sizeof(role), host, sizeof(host), &mport, &link, &off);
    CU_ASSERT_STRING_EQUAL(role, "slave");
    CU_ASSERT_STRING_EQUAL(host, "10.0.0.1");
    CU_ASSERT_EQUAL(mport, 6379);
    CU_ASSERT_EQUAL(link, 0);
    CU_ASSERT_EQUAL(off, 42);
}


/* CLUSTER FAILOVER FORCE's guard (step 2b), on what the executor reads: the replica's own
 * CLUSTER NODES line, each candidate's INFO replication. A table: the texts, the verdict. */
#define GONE "000000000000000000000000000000000000dead"
#define FOLLOWS(master)                                                                                               \
    "1111111111111111111111111111111111111111 10.0.0.2:6379@16379 myself,slave " master " 0 0 5 connected\n"
#define R(off, replid)                                                                                                \
    "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\nmaster_link_status:down\r\n"      \
    "slave_repl_offset:" #off "\r\nmaster_replid:" replid "\r\nmaster_repl_offset:" #off "\r\n"
static void test_force_check(void)
{
    static const char *const pods[] = {"c-shard0-1", "c-shard0-2", "c-shard0-3"};
    static const struct {
        const char *what, *nodes, *info[3];
        size_t n;
        int rc;
        const char *err; /* a part of its words */
    } rows[] = {
        {"alone, still following the gone master", FOLLOWS(GONE), {R(130, "aaaa")}, 1, 0, NULL},
        {"the highest offset of one history", FOLLOWS(GONE), {R(131, "aaaa"), R(130, "aaaa"), R(131, "aaaa")}, 3, 0,
         NULL},
        {"another replica one write ahead (finding 8: the observed offsets were older)", FOLLOWS(GONE),
         {R(130, "aaaa"), R(131, "aaaa")}, 2, -1, "c-shard0-2 at 131"},
        {"another history (resynchronised from the new node at the old address): waited for", FOLLOWS(GONE),
         {R(9000, "aaaa"), R(12, "bbbb")}, 2, -1, "different replication histories"},
        {"another history even when behind by its number", FOLLOWS(GONE), {R(12, "aaaa"), R(9000, "bbbb")}, 2, -1,
         "different replication histories"},
        {"a candidate silent: its offset unknown", FOLLOWS(GONE), {R(130, "aaaa"), NULL}, 2, -1,
         "c-shard0-2 does not answer"},
        {"the replica itself silent", FOLLOWS(GONE), {NULL}, 1, -1, "does not answer"},
        {"a candidate promoted since (a master)", FOLLOWS(GONE),
         {R(130, "aaaa"), "role:master\r\nmaster_replid:aaaa\r\nmaster_repl_offset:200\r\n"}, 2, -1,
         "no replica"},
        {"no master_replid: no history to compare", FOLLOWS(GONE), {"role:slave\r\nslave_repl_offset:5\r\n"}, 1, -1,
         "no replica"},
        {"following another master since (a stale plan: FORCE would take a live master's slots)",
         FOLLOWS("2222222222222222222222222222222222222222"), {R(130, "aaaa")}, 1, -1, "no longer follows"},
        {"a master itself", "1111111111111111111111111111111111111111 10.0.0.2:6379@16379 myself,master - 0 0 5 "
                            "connected 0-5\n",
         {R(130, "aaaa")}, 1, -1, "no longer follows"},
        {"its CLUSTER NODES not read", NULL, {R(130, "aaaa")}, 1, -1, "no longer follows"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char err[512] = "";
        int rc = redisexec_force_check(rows[i].nodes, GONE, rows[i].info, pods, rows[i].n, err, sizeof(err));
        if (rc != rows[i].rc || (rows[i].err && !strstr(err, rows[i].err)))
            fprintf(stderr, "\n  row %zu (%s): %d: %s", i, rows[i].what, rc, err);
        CU_ASSERT_EQUAL(rc, rows[i].rc);
        CU_ASSERT(!rows[i].err || strstr(err, rows[i].err));
    }
}
#undef R
#undef FOLLOWS
#undef GONE

/* A rotation as workerd runs it: AUTH falls back to the old password, ACL adds the new one
 * (both accepted), drops the old; ACL's error quoting the password is scrubbed. */
static void test_rotation_steps(void)
{
    server_t b = {0};
    const char *extra[] = {"--requirepass", "old-" PW, NULL};
    CU_ASSERT_EQUAL_FATAL(server_start(&b, 0, extra), 0);
    char reply[256], err[256];
    const char *add[] = {"ACL", "SETUSER", "default", "on", REDISEXEC_ACL_ADD_PASSWORD};
    const char *drop[] = {"ACL", "SETUSER", "default", REDISEXEC_ACL_DROP_OLD_PASSWORD};
    const char *ping[] = {"PING"};
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", b.port, "new-" PW, NULL, 1, ping, 500 * MS, NULL, 0, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", b.port, "new-" PW, "old-" PW, 5, add, 500 * MS, NULL, 0, err, sizeof(err)), 0);
    /* Both accepted now. */
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", b.port, "new-" PW, NULL, 1, ping, 500 * MS, reply, sizeof(reply),
                                      err, sizeof(err)),
                    0);
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", b.port, "old-" PW, NULL, 1, ping, 500 * MS, reply, sizeof(reply),
                                      err, sizeof(err)),
                    0);
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", b.port, "new-" PW, "old-" PW, 4, drop, 500 * MS, NULL, 0, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", b.port, "old-" PW, NULL, 1, ping, 500 * MS, NULL, 0, err, sizeof(err)), -1);
    /* Again: Redis says the password does not exist, quoting it; the message has the token. */
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", b.port, "new-" PW, "old-" PW, 4, drop, 500 * MS, NULL, 0, err, sizeof(err)), -1);
    CU_ASSERT_TRUE(strstr(err, "does not exist") != NULL);
    CU_ASSERT_PTR_NULL(strstr(err, PW));
    CU_ASSERT_TRUE(strstr(err, REDISEXEC_OLD_PASSWORD_TOKEN) != NULL);
    /* that answer means done (the executor goes on); to an add, or another command, not */
    CU_ASSERT_TRUE(redisexec_done_already(4, drop, err));
    CU_ASSERT_FALSE(redisexec_done_already(5, add, err));
    CU_ASSERT_FALSE(redisexec_done_already(1, ping, err));
    CU_ASSERT_FALSE(redisexec_done_already(4, drop, "ERR something else"));
    server_stop(&b);
}

/* The promotion guard: a master is "done", a replica of a primary that answers is
 * refused, of a stopped (SIGSTOP) or dead primary allowed, and so is one of a server
 * that answers as a replica (two servers replicas of each other: finding 1 of
 * docs/simulation.md, the guard refused every promotion for ever). */
static void test_promote_guard(void)
{
    server_t p = {0}, q = {0};
    CU_ASSERT_EQUAL_FATAL(server_start(&p, 0, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(server_start(&q, 0, NULL), 0);
    char port[16], err[256];
    snprintf(port, sizeof(port), "%d", p.port);
    const char *rof[] = {"REPLICAOF", "127.0.0.1", port};
    CU_ASSERT_EQUAL_FATAL(
        redisexec_command("127.0.0.1", q.port, NULL, NULL, 3, rof, 500 * MS, NULL, 0, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(redisexec_promote_guard("127.0.0.1", p.port, NULL, NULL, 300 * MS, err, sizeof(err)), 1);
    err[0] = '\0';
    CU_ASSERT_EQUAL(redisexec_promote_guard("127.0.0.1", q.port, NULL, NULL, 300 * MS, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "answers again"));
    /* p follows q too: each a replica of the other, neither a primary to come back to */
    char qport[16];
    snprintf(qport, sizeof(qport), "%d", q.port);
    const char *back[] = {"REPLICAOF", "127.0.0.1", qport}, *none[] = {"REPLICAOF", "NO", "ONE"};
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", p.port, NULL, NULL, 3, back, 500 * MS, NULL, 0, err, sizeof(err)),
                    0);
    CU_ASSERT_EQUAL(redisexec_promote_guard("127.0.0.1", q.port, NULL, NULL, 300 * MS, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", p.port, NULL, NULL, 3, none, 500 * MS, NULL, 0, err, sizeof(err)),
                    0);
    kill(p.pid, SIGSTOP);
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(redisexec_promote_guard("127.0.0.1", q.port, NULL, NULL, 300 * MS, err, sizeof(err)), 0);
    CU_ASSERT_TRUE(clock_mono_ns() - t0 < 1500 * MS);
    kill(p.pid, SIGCONT);
    server_stop(&p);
    CU_ASSERT_EQUAL(redisexec_promote_guard("127.0.0.1", q.port, NULL, NULL, 300 * MS, err, sizeof(err)), 0);
    server_stop(&q);
    /* Nothing to ask: refused. */
    CU_ASSERT_EQUAL(redisexec_promote_guard("127.0.0.1", q.port, NULL, NULL, 300 * MS, err, sizeof(err)), -1);

    /* With a password: a primary that refuses the password is alive (refused), one that
     * takes the old password during a rotation is asked with it (a primary: refused). */
    const char *pw[] = {"--requirepass", PW, "--masterauth", PW, NULL};
    CU_ASSERT_EQUAL_FATAL(server_start(&p, 0, pw), 0);
    CU_ASSERT_EQUAL_FATAL(server_start(&q, 0, pw), 0);
    snprintf(port, sizeof(port), "%d", p.port);
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", q.port, PW, NULL, 3, rof, 500 * MS, NULL, 0, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(redisexec_promote_guard("127.0.0.1", q.port, PW, NULL, 300 * MS, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "as a primary"));
    CU_ASSERT_EQUAL(redisexec_promote_guard("127.0.0.1", q.port, "new-" PW, PW, 300 * MS, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "as a primary"));
    CU_ASSERT_PTR_NULL(strstr(err, PW));
    server_stop(&p);
    server_stop(&q);
}

/* ---- over TLS ---------------------------------------------------------------------- */

static char dir[64];
static tc_pki_t pki;
static redis_tls_t *tls, *tls_client;

static int tls_init(void)
{
    if (tmpdir_make(dir, sizeof(dir), "rdc-redisexec-tls"))
        return -1;
    tc_pki_make(&pki);
    tc_pki_write(&pki, dir);
    char err[256];
    redis_tls_config_t cfg = {.ca_pem = pki.ca.crt_pem, .ca_len = strlen(pki.ca.crt_pem)};
    tls = redis_tls_new(&cfg, err, sizeof(err));
    cfg.cert_pem = pki.client.crt_pem;
    cfg.cert_len = strlen(pki.client.crt_pem);
    cfg.key_pem = pki.client.key_pem;
    cfg.key_len = strlen(pki.client.key_pem);
    tls_client = redis_tls_new(&cfg, err, sizeof(err));
    return tls && tls_client ? 0 : -1;
}

static int tls_clean(void)
{
    redis_tls_destroy(&tls);
    redis_tls_destroy(&tls_client);
    tc_pki_free(&pki);
    return tmpdir_remove(dir);
}

static const char *const PING[] = {"PING"};

/* The pod "redis" under "test": the certificate's DNS:redis.test. */
static void test_tls_names_and_client_certs(void)
{
    server_t s = {0};
    const char *const extra[] = {"--requirepass", PW, NULL};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 1, extra), 0);
    redisexec_client_t cl = {.password = PW, .tls = tls_client, .tls_domain = "test"};
    char reply[64], err[512];
    CU_ASSERT_EQUAL(redisexec_run(&cl, "redis", "127.0.0.1", s.port, 1, PING, 500 * MS, reply, sizeof(reply), err,
                                  sizeof(err)),
                    0);
    CU_ASSERT_STRING_EQUAL(reply, "PONG");
    /* another pod's name: refused, the phase first */
    CU_ASSERT_EQUAL(
        redisexec_run(&cl, "other", "127.0.0.1", s.port, 1, PING, 500 * MS, NULL, 0, err, sizeof(err)), -1);
    char want[256];
    snprintf(want, sizeof(want),
             "TLS handshake 127.0.0.1:%d: certificate verify failed: hostname mismatch (the certificate is not "
             "for other.test)",
             s.port);
    CU_ASSERT_STRING_EQUAL(err, want);
    /* no client certificate where the server asks for one */
    cl.tls = tls;
    CU_ASSERT_EQUAL(
        redisexec_run(&cl, "redis", "127.0.0.1", s.port, 1, PING, 500 * MS, NULL, 0, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "certificate required"));
    CU_ASSERT_PTR_NULL(strstr(err, PW));
    /* plain text to the TLS port */
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", s.port, PW, NULL, 1, PING, 300 * MS, NULL, 0, err, sizeof(err)),
                    -1);
    server_stop(&s);
}

/* A secret token: an ACL user's password hash goes out as #<hash>, never into err. */
static void test_tls_secret_tokens(void)
{
    server_t s = {0};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 0, NULL), 0);
    /* sha256("app-secret") */
    const redisexec_secret_t sec[] = {
        {"${acl-hash:app}", "6c904c5190e8b45c2f0af062eefdb2f5b41ce3809b0e6b5bc50aafdd60b290d8"}};
    redisexec_client_t cl = {.tls = tls, .secrets = sec, .n_secrets = 1};
    char err[512];
    const char *bad[] = {"ACL", "SETUSER", "app", "on", "#${acl-hash:app}", "nonsense-rule"};
    CU_ASSERT_EQUAL(redisexec_run(&cl, NULL, "127.0.0.1", s.port, 6, bad, 500 * MS, NULL, 0, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(strstr(err, sec[0].value));
    const char *set[] = {"ACL", "SETUSER", "app", "reset", "on", "#${acl-hash:app}", "~*", "+@read"};
    CU_ASSERT_EQUAL(redisexec_run(&cl, NULL, "127.0.0.1", s.port, 8, set, 500 * MS, NULL, 0, err, sizeof(err)), 0);
    /* the user authenticates with the password whose hash went out */
    redis_conn_opts_t o = {.host = "127.0.0.1", .port = s.port, .tls = tls, .user = "app", .password = "app-secret"};
    const char *get[] = {"GET", "k"}, *wr[] = {"SET", "k", "v"};
    redisReply *r = redis_sync_once(&o, 2, get, NULL, 500 * MS, err, sizeof(err));
    CU_ASSERT(r && r->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    r = redis_sync_once(&o, 3, wr, NULL, 500 * MS, err, sizeof(err));
    CU_ASSERT(r && r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOPERM"));
    freeReplyObject(r);
    server_stop(&s);
}

/* The served certificate changes with CONFIG SET tls-cert-file ${current} (the path the
 * server has, read with CONFIG GET): Redis reads the files again, no restart. */
static void test_tls_reload_files(void)
{
    tc_write_file(dir, "live.crt", pki.server.crt_pem);
    tc_write_file(dir, "live.key", pki.server.key_pem);
    server_t s = {0};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "live.crt", "live.key", 0, NULL), 0);
    redisexec_client_t cl = {.tls = tls, .tls_domain = "test"};
    const char *pods = "[{\"metadata\":{\"name\":\"redis\"},\"status\":{\"podIP\":\"127.0.0.1\"}}]";
    json_object *p = json_tokener_parse(pods);
    json_object *o = redisexec_observe_with(p, &cl, s.port, 500 * MS, "t", 0);
    const char *before = JSONX_STR_AT(json_object_array_get_idx(jsonx_get(o, "nodes"), 0), "tlsCert");
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    char was[65];
    snprintf(was, sizeof(was), "%s", before);
    json_object_put(o);
    /* a renewal: same CA, same names, a new certificate and key in the same files */
    tc_cert_t renewed = tc_make("redis.test", &pki.ca, 0, "DNS:redis.test,IP:127.0.0.1", "serverAuth", -60, 86400);
    tc_write_file(dir, "live.crt", renewed.crt_pem);
    tc_write_file(dir, "live.key", renewed.key_pem);
    o = redisexec_observe_with(p, &cl, s.port, 500 * MS, "t", 0);
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(json_object_array_get_idx(jsonx_get(o, "nodes"), 0), "tlsCert"), was);
    json_object_put(o);
    const char *reload[] = {"CONFIG", "SET", "tls-cert-file", REDISEXEC_CURRENT_TOKEN, "tls-key-file",
                            REDISEXEC_CURRENT_TOKEN, "tls-ca-cert-file", REDISEXEC_CURRENT_TOKEN};
    char err[512];
    CU_ASSERT_EQUAL(redisexec_run(&cl, "redis", "127.0.0.1", s.port, 8, reload, 500 * MS, NULL, 0, err, sizeof(err)),
                    0);
    o = redisexec_observe_with(p, &cl, s.port, 500 * MS, "t", 0);
    const char *now = JSONX_STR_AT(json_object_array_get_idx(jsonx_get(o, "nodes"), 0), "tlsCert");
    CU_ASSERT(now && strcmp(now, was) && strlen(now) == 64);
    json_object_put(o);
    /* a CONFIG GET of a directive with no value: said */
    const char *nothing[] = {"CONFIG", "SET", "no-such-directive", REDISEXEC_CURRENT_TOKEN};
    CU_ASSERT_EQUAL(
        redisexec_run(&cl, "redis", "127.0.0.1", s.port, 4, nothing, 500 * MS, NULL, 0, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "CONFIG GET no-such-directive"));
    json_object_put(p);
    tc_cert_free(&renewed);
    server_stop(&s);
}

/* Replication over TLS: the replica links (tls-replication), the promotion guard sees
 * its primary answer over TLS (checked as an IP), then not once it is stopped; a
 * switchover behind its guard. */
static void test_tls_replication_and_guards(void)
{
    server_t p = {0}, q = {0};
    const char *const repl[] = {"--tls-replication", "yes", NULL};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&p, dir, "server.crt", "server.key", 0, repl), 0);
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&q, dir, "server.crt", "server.key", 0, repl), 0);
    redisexec_client_t cl = {.tls = tls, .tls_domain = "test"};
    char port[16], err[512], info[8192], role[16], host[64];
    snprintf(port, sizeof(port), "%d", p.port);
    const char *rof[] = {"REPLICAOF", "127.0.0.1", port}, *inf[] = {"INFO", "replication"};
    CU_ASSERT_EQUAL(redisexec_run(&cl, "redis", "127.0.0.1", q.port, 3, rof, 500 * MS, NULL, 0, err, sizeof(err)), 0);
    int mport = 0, link = 0;
    int64_t off = -1;
    for (int i = 0; i < 100 && !link; i++) {
        redisexec_run(&cl, "redis", "127.0.0.1", q.port, 2, inf, 500 * MS, info, sizeof(info), err, sizeof(err));
        redisexec_parse_info(info, role, sizeof(role), host, sizeof(host), &mport, &link, &off);
        if (!link)
            nap_ms(50);
    }
    CU_ASSERT_EQUAL(link, 1);
    CU_ASSERT_EQUAL(redisexec_promote_guard_on(&cl, "redis", "127.0.0.1", p.port, 300 * MS, err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(redisexec_promote_guard_on(&cl, "redis", "127.0.0.1", q.port, 300 * MS, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "answers again"));
    /* FAILOVER TO q on p, behind its guard */
    char qport[16];
    snprintf(qport, sizeof(qport), "%d", q.port);
    const char *fo[] = {"FAILOVER", "TO", "127.0.0.1", qport, "TIMEOUT", "5000"};
    int sent = -1;
    for (int i = 0; i < 50 && sent; i++) {
        sent = redisexec_switchover_on(&cl, "redis", "127.0.0.1", p.port, 6, fo, 1 << 20, err, sizeof(err));
        if (sent)
            nap_ms(50);
    }
    CU_ASSERT_EQUAL(sent, 0);
    link = 0;
    for (int i = 0; i < 100 && !link; i++) { /* p follows q now */
        redisexec_run(&cl, "redis", "127.0.0.1", p.port, 2, inf, 500 * MS, info, sizeof(info), err, sizeof(err));
        redisexec_parse_info(info, role, sizeof(role), host, sizeof(host), &mport, &link, &off);
        if (!link)
            nap_ms(50);
    }
    CU_ASSERT_STRING_EQUAL(role, "slave");
    CU_ASSERT_EQUAL(mport, q.port);
    kill(q.pid, SIGSTOP); /* the new primary freezes: p may be promoted */
    CU_ASSERT_EQUAL(redisexec_promote_guard_on(&cl, "redis", "127.0.0.1", p.port, 300 * MS, err, sizeof(err)), 0);
    server_stop(&p);
    server_stop(&q);
}

static const cu_entry_t tests[] = {
    CU_SUITE("redisexec"),
    {"promotion guard", test_promote_guard},
    {"replies, error replies, connection refused", test_reply_and_errors},
    {"AUTH refused, accepted, never echoed; the password token", test_auth},
    {"REPLICAOF, INFO replication, the --once observation", test_replicaof_and_info},
    {"a stopped server times out", test_timeout_on_stopped_server},
    {"rotation: AUTH falls back, ACL adds and drops, errors scrubbed", test_rotation_steps},
    {"INFO parsing of partial text", test_parse_info_partial},
    {"CLUSTER FAILOVER FORCE's guard (a table)", test_force_check},
    CU_SUITE("redisexec over TLS"),
    {"the pod's name, a client certificate, plain text refused", test_tls_names_and_client_certs},
    {"a secret token goes out, never into an error", test_tls_secret_tokens},
    {"CONFIG SET ${current}: the TLS files read again", test_tls_reload_files},
    {"replication, the promotion guard and a switchover over TLS", test_tls_replication_and_guards},
};

CU_HOOKS({"redisexec over TLS", tls_init, tls_clean, NULL, NULL});

CU_MAIN(tests)
