/* Unit tests of the observer's pure parts: the INFO parser over real INFO texts (captured
 * from Debian's redis-server 7.0: a primary with two online replicas, a replica linked,
 * a replica whose primary died, every default section of a replica), and the change
 * detector: which transitions are news (a reconcile), which are not. */
#include "obsdiff.h"
#include "redisinfo.h"

#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <string.h>

/* The lines every INFO replication text below ends with, as Redis 7.0 writes them after
 * the role's own: */
#define REPL_TAIL \
    "master_failover_state:no-failover\r\n" \
    "master_replid:c685ab100b03b42e93509ddfb59119e0becb2f8f\r\n" \
    "master_replid2:0000000000000000000000000000000000000000\r\n" \
    "master_repl_offset:50\r\n" \
    "second_repl_offset:-1\r\n" \
    "repl_backlog_active:1\r\n" \
    "repl_backlog_size:1048576\r\n" \
    "repl_backlog_first_byte_offset:1\r\n" \
    "repl_backlog_histlen:50\r\n"
/* and those a replica's ends with. */
#define REPLICA_TAIL \
    "slave_priority:100\r\n" \
    "slave_read_only:1\r\n" \
    "replica_announced:1\r\n" \
    "connected_slaves:0\r\n" \
    REPL_TAIL

static const char INFO_MASTER_2_SLAVES[] =
    "# Replication\r\n"
    "role:master\r\n"
    "connected_slaves:2\r\n"
    "slave0:ip=127.0.0.1,port=17003,state=online,offset=50,lag=1\r\n"
    "slave1:ip=127.0.0.1,port=17002,state=online,offset=50,lag=1\r\n"
    REPL_TAIL;
static const char INFO_REPLICA_UP[] =
    "# Replication\r\n"
    "role:slave\r\n"
    "master_host:127.0.0.1\r\n"
    "master_port:17001\r\n"
    "master_link_status:up\r\n"
    "master_last_io_seconds_ago:2\r\n"
    "master_sync_in_progress:0\r\n"
    "slave_read_repl_offset:50\r\n"
    "slave_repl_offset:50\r\n"
    REPLICA_TAIL;
static const char INFO_REPLICA_DOWN[] =
    "# Replication\r\n"
    "role:slave\r\n"
    "master_host:127.0.0.1\r\n"
    "master_port:17001\r\n"
    "master_link_status:down\r\n"
    "master_last_io_seconds_ago:-1\r\n"
    "master_sync_in_progress:0\r\n"
    "slave_read_repl_offset:50\r\n"
    "slave_repl_offset:50\r\n"
    "master_link_down_since_seconds:1\r\n"
    REPLICA_TAIL;
static const char INFO_FULL_REPLICA[] =
    "# Server\r\n"
    "redis_version:7.0.15\r\n"
    "# Clients\r\n"
    "connected_clients:1\r\n"
    "# Memory\r\n"
    "used_memory:1055104\r\n"
    "maxmemory:0\r\n"
    "# Persistence\r\n"
    "rdb_last_bgsave_status:ok\r\n"
    "# Stats\r\n"
    "total_commands_processed:3\r\n"
    "expired_keys:0\r\n"
    "evicted_keys:0\r\n"
    "keyspace_hits:0\r\n"
    "keyspace_misses:0\r\n"
    "# Replication\r\n"
    "role:slave\r\n"
    "master_host:127.0.0.1\r\n"
    "master_port:17001\r\n"
    "master_link_status:down\r\n"
    "slave_repl_offset:50\r\n"
    "connected_slaves:0\r\n"
    "master_repl_offset:50\r\n"
    "# CPU\r\n"
    "# Modules\r\n"
    "# Errorstats\r\n"
    "# Cluster\r\n"
    "# Keyspace\r\n";

/* What each INFO replication text says, field by field. */
static const struct {
    const char *text;
    redisinfo_role_t role;
    const char *role_name, *master_host;
    int master_port, link_up;
    int64_t link_down_s, offset, connected_slaves;
    size_t nslaves;
} repl_cases[] = {
    {INFO_MASTER_2_SLAVES, REDISINFO_ROLE_MASTER, "master", "", 0, 0, -1, 50, 2, 2},
    {INFO_REPLICA_UP, REDISINFO_ROLE_SLAVE, "slave", "127.0.0.1", 17001, 1, -1, 50, 0, 0},
    /* The primary died a second ago: failover's "linked recently". */
    {INFO_REPLICA_DOWN, REDISINFO_ROLE_SLAVE, "slave", "127.0.0.1", 17001, 0, 1, 50, 0, 0},
    /* Never linked since it started: Redis 7 says -1. */
    {"role:slave\r\nmaster_link_status:down\r\nmaster_link_down_since_seconds:-1\r\n", REDISINFO_ROLE_SLAVE,
     "slave", "", 0, 0, -1, -1, -1, 0},
};

static void test_info_replication(void)
{
    for (size_t i = 0; i < sizeof(repl_cases) / sizeof(repl_cases[0]); i++) {
        redisinfo_t in;
        CU_ASSERT_EQUAL_FATAL(redisinfo_parse(repl_cases[i].text, strlen(repl_cases[i].text), &in), 0);
        CU_ASSERT_EQUAL(in.role, repl_cases[i].role);
        CU_ASSERT_STRING_EQUAL(redisinfo_role_name(in.role), repl_cases[i].role_name);
        CU_ASSERT_STRING_EQUAL(in.master_host, repl_cases[i].master_host);
        CU_ASSERT_EQUAL(in.master_port, repl_cases[i].master_port);
        CU_ASSERT_EQUAL(in.link_up, repl_cases[i].link_up);
        CU_ASSERT_EQUAL(in.link_down_s, repl_cases[i].link_down_s);
        CU_ASSERT_EQUAL(redisinfo_offset(&in), repl_cases[i].offset);
        if (in.role == REDISINFO_ROLE_SLAVE) /* a replica's offset is the one it applied */
            CU_ASSERT_EQUAL(in.slave_repl_offset, repl_cases[i].offset);
        CU_ASSERT_EQUAL(in.connected_slaves, repl_cases[i].connected_slaves);
        CU_ASSERT_EQUAL(in.nslaves, repl_cases[i].nslaves);
    }
}

static void test_info_master_two_slaves(void)
{
    redisinfo_t in;
    CU_ASSERT_EQUAL_FATAL(redisinfo_parse(INFO_MASTER_2_SLAVES, strlen(INFO_MASTER_2_SLAVES), &in), 0);
    CU_ASSERT_EQUAL(in.master_repl_offset, 50);
    CU_ASSERT_EQUAL_FATAL(in.nslaves, 2);
    CU_ASSERT_STRING_EQUAL(in.slaves[0].ip, "127.0.0.1");
    CU_ASSERT_EQUAL(in.slaves[0].port, 17003);
    CU_ASSERT_STRING_EQUAL(in.slaves[0].state, "online");
    CU_ASSERT_EQUAL(in.slaves[0].offset, 50);
    CU_ASSERT_EQUAL(in.slaves[0].lag_s, 1);
    CU_ASSERT_EQUAL(in.slaves[1].port, 17002);
    /* INFO replication alone has no default-section figures. */
    CU_ASSERT_EQUAL(in.connected_clients, -1);
    CU_ASSERT_EQUAL(in.used_memory, -1);
    CU_ASSERT_EQUAL(in.rdb_last_bgsave_ok, -1);
}

static void test_info_full_sections(void)
{
    redisinfo_t in;
    CU_ASSERT_EQUAL_FATAL(redisinfo_parse(INFO_FULL_REPLICA, strlen(INFO_FULL_REPLICA), &in), 0);
    CU_ASSERT_EQUAL(in.role, REDISINFO_ROLE_SLAVE);
    CU_ASSERT_EQUAL(in.connected_clients, 1);
    CU_ASSERT_EQUAL(in.used_memory, 1055104);
    CU_ASSERT_EQUAL(in.maxmemory, 0);
    CU_ASSERT_EQUAL(in.rdb_last_bgsave_ok, 1);
    CU_ASSERT_EQUAL(in.total_commands_processed, 3);
    CU_ASSERT_EQUAL(in.expired_keys, 0);
    CU_ASSERT_EQUAL(in.evicted_keys, 0);
    CU_ASSERT_EQUAL(in.keyspace_hits, 0);
    CU_ASSERT_EQUAL(in.keyspace_misses, 0);
}

static void test_info_bad_input(void)
{
    redisinfo_t in;
    static const struct {
        const char *text;
        int rc;
        redisinfo_role_t role;
    } cases[] = {
        {"", -1, REDISINFO_ROLE_UNKNOWN},
        {"PONG", -1, REDISINFO_ROLE_UNKNOWN},
        {"# Replication\nrole:sentinel\n", 0, REDISINFO_ROLE_UNKNOWN},
        /* LF only, a malformed port, an offset that is not a number. */
        {"role:slave\nmaster_host:10.0.0.1\nmaster_port:notaport\nslave_repl_offset:12x\n", 0, REDISINFO_ROLE_SLAVE},
        /* A primary's text carrying stray replica fields keeps none of them. */
        {"role:master\r\nmaster_host:10.0.0.9\r\nmaster_port:6379\r\nmaster_link_status:up\r\n", 0,
         REDISINFO_ROLE_MASTER},
        /* No trailing newline, a line without a colon, an over-long value. */
        {"garbage\r\nrole:master\r\nmaster_repl_offset:123456789012345678901234567890", 0, REDISINFO_ROLE_MASTER},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CU_ASSERT_EQUAL(redisinfo_parse(cases[i].text, strlen(cases[i].text), &in), cases[i].rc);
        CU_ASSERT_EQUAL(in.role, cases[i].role);
    }
    redisinfo_parse(cases[3].text, strlen(cases[3].text), &in);
    CU_ASSERT_STRING_EQUAL(in.master_host, "10.0.0.1");
    CU_ASSERT_EQUAL(in.master_port, 0);
    CU_ASSERT_EQUAL(in.slave_repl_offset, -1);
    redisinfo_parse(cases[4].text, strlen(cases[4].text), &in);
    CU_ASSERT_STRING_EQUAL(in.master_host, "");
    CU_ASSERT_EQUAL(in.master_port, 0);
    CU_ASSERT_EQUAL(in.link_up, 0);
    redisinfo_parse(cases[5].text, strlen(cases[5].text), &in);
    CU_ASSERT_EQUAL(in.master_repl_offset, -1);
    /* More slaveN lines than the table holds: the first 16 are kept. */
    char many[4096] = "role:master\r\n";
    for (int i = 0; i < 20; i++) {
        char line[96];
        snprintf(line, sizeof(line), "slave%d:ip=10.0.0.%d,port=6379,state=online,offset=%d,lag=0\r\n", i, i, i);
        strncat(many, line, sizeof(many) - strlen(many) - 1);
    }
    CU_ASSERT_EQUAL(redisinfo_parse(many, strlen(many), &in), 0);
    CU_ASSERT_EQUAL(in.nslaves, REDISINFO_MAX_SLAVES);
    CU_ASSERT_STRING_EQUAL(in.slaves[15].ip, "10.0.0.15");
}

/* ---- change detector ---------------------------------------------------------------- */

static obs_node_t primary(const char *pod, const char *ip, int64_t offset)
{
    obs_node_t n;
    memset(&n, 0, sizeof(n));
    snprintf(n.pod, sizeof(n.pod), "%s", pod);
    snprintf(n.ip, sizeof(n.ip), "%s", ip);
    n.reachable = 1;
    n.role = REDISINFO_ROLE_MASTER;
    n.offset = offset;
    return n;
}

static obs_node_t replica(const char *pod, const char *ip, const char *mhost, int link, int64_t offset)
{
    obs_node_t n = primary(pod, ip, offset);
    n.role = REDISINFO_ROLE_SLAVE;
    snprintf(n.master_host, sizeof(n.master_host), "%s", mhost);
    n.master_port = 6379;
    n.link_up = link;
    return n;
}

typedef struct {
    const char *name;
    void (*mutate)(obs_node_t *cur, size_t *n);
    obsdiff_t want;
    const char *why; /* obsdiff_explain's text (prefix) */
} diff_case_t;

static void m_none(obs_node_t *c, size_t *n) { (void)c; (void)n; }
static void m_offsets(obs_node_t *c, size_t *n)
{
    (void)n;
    c[0].offset += 1000;
    c[1].offset += 900;
    c[2].offset += 1000;
}
static void m_times(obs_node_t *c, size_t *n)
{
    (void)n;
    c[1].last_ok_ago_ms = 900;
    c[1].down_since_ms = 0;
}
static void m_replica_down(obs_node_t *c, size_t *n) { (void)n; c[1].reachable = 0; c[1].down_since_ms = 1000; }
static void m_primary_down(obs_node_t *c, size_t *n) { (void)n; c[0].reachable = 0; c[0].down_since_ms = 1000; }
static void m_link_down(obs_node_t *c, size_t *n) { (void)n; c[2].link_up = 0; }
static void m_promoted(obs_node_t *c, size_t *n)
{
    (void)n;
    c[1].role = REDISINFO_ROLE_MASTER;
    c[1].master_host[0] = '\0';
    c[1].master_port = 0;
    c[1].link_up = 0;
}
static void m_repointed(obs_node_t *c, size_t *n)
{
    (void)n;
    snprintf(c[2].master_host, sizeof(c[2].master_host), "10.0.0.99");
}
static void m_port(obs_node_t *c, size_t *n) { (void)n; c[2].master_port = 6380; }
static void m_new_ip(obs_node_t *c, size_t *n) { (void)n; snprintf(c[1].ip, sizeof(c[1].ip), "10.0.0.12"); }
static void m_scaled_up(obs_node_t *c, size_t *n) { c[(*n)++] = replica("cache-3", "10.0.0.4", "10.0.0.1", 1, 0); }
static void m_scaled_down(obs_node_t *c, size_t *n) { (void)c; (*n)--; }
static void m_renamed(obs_node_t *c, size_t *n) { (void)n; snprintf(c[2].pod, sizeof(c[2].pod), "cache-9"); }
static void m_reordered(obs_node_t *c, size_t *n)
{
    (void)n;
    obs_node_t t = c[0];
    c[0] = c[2];
    c[2] = t;
}

static const diff_case_t diff_cases[] = {
    {"nothing changed", m_none, OBSDIFF_SAME, ""},
    {"offsets alone", m_offsets, OBSDIFF_SAME, ""},
    {"lastOkAgoMs/downSinceMs alone", m_times, OBSDIFF_SAME, ""},
    {"the same nodes in another order", m_reordered, OBSDIFF_SAME, ""},
    {"a replica unreachable", m_replica_down, OBSDIFF_CHANGED, "cache-1: reachable true->false"},
    {"the primary unreachable", m_primary_down, OBSDIFF_CHANGED, "cache-0: reachable true->false"},
    {"a replica's link down", m_link_down, OBSDIFF_CHANGED, "cache-2: linkUp true->false"},
    {"a replica promoted", m_promoted, OBSDIFF_CHANGED, "cache-1: role slave->master"},
    {"a replica pointed elsewhere", m_repointed, OBSDIFF_CHANGED, "cache-2: master 10.0.0.1:6379->10.0.0.99:6379"},
    {"a replica's primary port", m_port, OBSDIFF_CHANGED, "cache-2: master"},
    {"a pod with a new IP", m_new_ip, OBSDIFF_CHANGED, "cache-1: ip 10.0.0.2->10.0.0.12"},
    {"a node more", m_scaled_up, OBSDIFF_CHANGED, "nodes: 3->4"},
    {"a node less", m_scaled_down, OBSDIFF_CHANGED, "nodes: 3->2"},
    {"a node replaced by another name", m_renamed, OBSDIFF_CHANGED, "cache-9: new node"},
};

static size_t healthy(obs_node_t *n)
{
    n[0] = primary("cache-0", "10.0.0.1", 100);
    n[1] = replica("cache-1", "10.0.0.2", "10.0.0.1", 1, 100);
    n[2] = replica("cache-2", "10.0.0.3", "10.0.0.1", 1, 90);
    return 3;
}

static void test_diff_table(void)
{
    for (size_t i = 0; i < sizeof(diff_cases) / sizeof(diff_cases[0]); i++) {
        obs_node_t prev[8], cur[8];
        size_t np = healthy(prev), nc = healthy(cur);
        diff_cases[i].mutate(cur, &nc);
        obsdiff_t got = obsdiff_compare(prev, np, cur, nc);
        char why[700];
        obsdiff_explain(prev, np, cur, nc, why, sizeof(why));
        if (got != diff_cases[i].want || strncmp(why, diff_cases[i].why, strlen(diff_cases[i].why)) != 0 ||
            (diff_cases[i].want == OBSDIFF_SAME && why[0]))
            fprintf(stderr, "\ncase \"%s\": got %d (%s), want %d (%s)\n", diff_cases[i].name, got, why,
                    diff_cases[i].want, diff_cases[i].why);
        CU_ASSERT_EQUAL(got, diff_cases[i].want);
        CU_ASSERT_EQUAL(strncmp(why, diff_cases[i].why, strlen(diff_cases[i].why)), 0);
    }
}

/* After the news of a primary going down was sent, "no change" is STILL_DOWN (plan needs
 * to hear it again until downAfter has passed); a replica down, a pod without an IP, or a
 * first observation with nothing sent yet, is not. */
static void test_diff_still_down(void)
{
    obs_node_t prev[8], cur[8];
    size_t np = healthy(prev), nc = healthy(cur);
    m_primary_down(prev, &np);
    m_primary_down(cur, &nc);
    cur[0].down_since_ms = 5000;
    CU_ASSERT_EQUAL(obsdiff_compare(prev, np, cur, nc), OBSDIFF_STILL_DOWN);
    /* The primary comes back: news. */
    cur[0].reachable = 1;
    cur[0].down_since_ms = 0;
    CU_ASSERT_EQUAL(obsdiff_compare(prev, np, cur, nc), OBSDIFF_CHANGED);
    /* A replica down for long: nothing new, nothing to repeat. */
    np = healthy(prev);
    nc = healthy(cur);
    m_replica_down(prev, &np);
    m_replica_down(cur, &nc);
    CU_ASSERT_EQUAL(obsdiff_compare(prev, np, cur, nc), OBSDIFF_SAME);
    /* A node never answered (role unknown) with an IP: maybe the primary, repeat. */
    np = healthy(prev);
    nc = healthy(cur);
    prev[0].reachable = cur[0].reachable = 0;
    prev[0].role = cur[0].role = REDISINFO_ROLE_UNKNOWN;
    CU_ASSERT_EQUAL(obsdiff_compare(prev, np, cur, nc), OBSDIFF_STILL_DOWN);
    /* Without an IP (not running yet): nothing to wait for. */
    prev[0].ip[0] = cur[0].ip[0] = '\0';
    CU_ASSERT_EQUAL(obsdiff_compare(prev, np, cur, nc), OBSDIFF_SAME);
    /* Nothing sent before: every current node is news. */
    nc = healthy(cur);
    CU_ASSERT_EQUAL(obsdiff_compare(NULL, 0, cur, nc), OBSDIFF_CHANGED);
    CU_ASSERT_EQUAL(obsdiff_compare(NULL, 0, NULL, 0), OBSDIFF_SAME);
}

static void test_diff_json(void)
{
    obs_node_t cur[8];
    size_t n = healthy(cur);
    cur[2].reachable = 0;
    cur[2].down_since_ms = 1500;
    cur[2].last_ok_ago_ms = 1600;
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL_FATAL(obsdiff_json(cur, n, "2026-12-01T16:00:00.000Z", &b), 0);
    json_object *o = json_tokener_parse(buf_str(&b));
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    json_object *v = NULL, *nodes = NULL;
    CU_ASSERT_TRUE(json_object_object_get_ex(o, "observedAt", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "2026-12-01T16:00:00.000Z");
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(o, "nodes", &nodes));
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(nodes), 3);
    json_object *r = json_object_array_get_idx(nodes, 2);
    static const char *const fields[] = {"pod", "ip", "reachable", "role", "masterHost", "masterPort",
                                         "linkUp", "offset", "lastOkAgoMs", "downSinceMs", "linkDownSinceMs"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        CU_ASSERT_TRUE(json_object_object_get_ex(r, fields[i], NULL));
    json_object_object_get_ex(r, "reachable", &v);
    CU_ASSERT_FALSE(json_object_get_boolean(v));
    json_object_object_get_ex(r, "role", &v);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "slave");
    json_object_object_get_ex(r, "masterHost", &v);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "10.0.0.1");
    json_object_object_get_ex(r, "downSinceMs", &v);
    CU_ASSERT_EQUAL(json_object_get_int64(v), 1500);
    json_object_object_get_ex(json_object_array_get_idx(nodes, 0), "role", &v);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "master");
    json_object_put(o);
    /* Over the buffer's cap: -1, never a cut observation. */
    buf_t small;
    buf_init(&small, 64);
    CU_ASSERT_EQUAL(obsdiff_json(cur, n, "x", &small), -1);
    buf_free(&small);
    buf_free(&b);
}

static const cu_entry_t tests[] = {
    CU_SUITE("redisinfo"),
    {"replication: primary, replica linked, unlinked, never linked", test_info_replication},
    {"primary: its replicas", test_info_master_two_slaves},
    {"every default section", test_info_full_sections},
    {"malformed and foreign input", test_info_bad_input},
    CU_SUITE("obsdiff"),
    {"which transitions are news", test_diff_table},
    {"a primary still down is repeated", test_diff_still_down},
    {"the observation JSON", test_diff_json},
};
CU_MAIN(tests)
