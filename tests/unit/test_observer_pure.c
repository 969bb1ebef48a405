/* Unit tests of the observer's pure parts: the INFO parser over real INFO texts (captured
 * from Debian's redis-server 7.0: a primary with two online replicas, a replica linked,
 * a replica whose primary died, every default section of a replica), the change
 * detector: which transitions are news (a reconcile), which are not (in Cluster mode
 * too: the CLUSTER NODES text, cluster state and slot counts), and the normalized CLUSTER
 * NODES text the observation carries. */
#include "obsdiff.h"
#include "proto.h"
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
    int64_t master_io_s; /* master_last_io_seconds_ago while linked (the "one observer" witness) */
} repl_cases[] = {
    {INFO_MASTER_2_SLAVES, REDISINFO_ROLE_MASTER, "master", "", 0, 0, -1, 50, 2, 2, -1},
    {INFO_REPLICA_UP, REDISINFO_ROLE_SLAVE, "slave", "127.0.0.1", 17001, 1, -1, 50, 0, 0, 2},
    /* The primary died a second ago: failover's "linked recently". */
    {INFO_REPLICA_DOWN, REDISINFO_ROLE_SLAVE, "slave", "127.0.0.1", 17001, 0, 1, 50, 0, 0, -1},
    /* Never linked since it started: Redis 7 says -1. */
    {"role:slave\r\nmaster_link_status:down\r\nmaster_link_down_since_seconds:-1\r\n", REDISINFO_ROLE_SLAVE,
     "slave", "", 0, 0, -1, -1, -1, 0, -1},
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
        CU_ASSERT_EQUAL(in.master_io_s, repl_cases[i].master_io_s);
        CU_ASSERT_EQUAL(redisinfo_offset(&in), repl_cases[i].offset);
        if (in.role == REDISINFO_ROLE_SLAVE) /* a replica's offset is the one it applied */
            CU_ASSERT_EQUAL(in.slave_repl_offset, repl_cases[i].offset);
        CU_ASSERT_EQUAL(in.connected_slaves, repl_cases[i].connected_slaves);
        CU_ASSERT_EQUAL(in.nslaves, repl_cases[i].nslaves);
    }
}

/* INFO keyspace: the keys of every database; the section without a line: none; a text
 * without the section: unknown. */
static void test_info_keyspace(void)
{
    static const struct {
        const char *text;
        int64_t keys;
    } rows[] = {
        {"# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=0\r\ndb2:keys=4,expires=0,avg_ttl=0\r\n", 7},
        {"# Keyspace\r\n", 0},
        {INFO_REPLICA_UP, -1},
        {"# Keyspace\r\ndb0:keys=x,expires=0\r\n", 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        redisinfo_t in;
        redisinfo_parse(rows[i].text, strlen(rows[i].text), &in);
        CU_ASSERT_EQUAL(in.keys, rows[i].keys);
    }
}

static void test_info_master_two_slaves(void)
{
    redisinfo_t in;
    CU_ASSERT_EQUAL_FATAL(redisinfo_parse(INFO_MASTER_2_SLAVES, strlen(INFO_MASTER_2_SLAVES), &in), 0);
    CU_ASSERT_EQUAL(in.master_repl_offset, 50);
    CU_ASSERT_EQUAL_FATAL(in.nslaves, 2);
    redisinfo_slave_t sl[REDISINFO_MAX_SLAVES];
    CU_ASSERT_EQUAL_FATAL(redisinfo_slaves(INFO_MASTER_2_SLAVES, strlen(INFO_MASTER_2_SLAVES), sl, 16), 2);
    CU_ASSERT_STRING_EQUAL(sl[0].ip, "127.0.0.1");
    CU_ASSERT_EQUAL(sl[0].port, 17003);
    CU_ASSERT_STRING_EQUAL(sl[0].state, "online");
    CU_ASSERT_EQUAL(sl[0].offset, 50);
    CU_ASSERT_EQUAL(sl[0].lag_s, 1);
    CU_ASSERT_EQUAL(sl[1].port, 17002);
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
    /* More slaveN lines than the table holds: all counted, the first 16 filled. */
    char many[4096] = "role:master\r\n";
    for (int i = 0; i < 20; i++) {
        char line[96];
        snprintf(line, sizeof(line), "slave%d:ip=10.0.0.%d,port=6379,state=online,offset=%d,lag=0\r\n", i, i, i);
        strncat(many, line, sizeof(many) - strlen(many) - 1);
    }
    CU_ASSERT_EQUAL(redisinfo_parse(many, strlen(many), &in), 0);
    CU_ASSERT_EQUAL(in.nslaves, 20);
    redisinfo_slave_t sl[REDISINFO_MAX_SLAVES];
    CU_ASSERT_EQUAL(redisinfo_slaves(many, strlen(many), sl, REDISINFO_MAX_SLAVES), 20);
    CU_ASSERT_STRING_EQUAL(sl[15].ip, "10.0.0.15");
    CU_ASSERT_EQUAL(sl[15].offset, 15);
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
    int cluster;     /* from healthy_cluster(): three masters of a Cluster-mode cluster */
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

/* Cluster mode: the normalized CLUSTER NODES texts of the three masters (their views
 * differ only in who is myself), and what changes them. */
#define ID_A "3c3a0c74aae0b56170ccb03a76b60cfe7dc1912e"
#define ID_B "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
#define ID_C "f0e1d2c3b4a5968778695a4b3c2d1e0f12345678"
#define LINE_A(self) ID_A " 10.0.0.1:6379@16379 " self "master - 0 0 1 connected 0-5460\n"
#define LINE_B(self) ID_B " 10.0.0.2:6379@16379 " self "master - 0 0 2 connected 5461-10922\n"
#define LINE_C(self) ID_C " 10.0.0.3:6379@16379 " self "master - 0 0 3 connected 10923-16383\n"
static const char *const view_of[3] = {LINE_A("myself,") LINE_B("") LINE_C(""), LINE_A("") LINE_B("myself,") LINE_C(""),
                                       LINE_A("") LINE_B("") LINE_C("myself,")};
/* Node 0's text again, in a buffer of its own: compared by content, never by address. */
static char view_0_copy[512];
/* A slot being migrated from A to B: only A's view says so. */
static const char VIEW_0_MIGRATING[] =
    ID_A " 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460 [42->-" ID_B "]\n" LINE_B("") LINE_C("");

/* CLUSTER INFO of a healthy three-master cluster, as Redis 7.0 begins it. */
static const char CLUSTER_INFO_OK[] = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n"
                                      "cluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\n"
                                      "cluster_slots_fail:0\r\ncluster_known_nodes:3\r\ncluster_size:3\r\n"
                                      "cluster_current_epoch:3\r\ncluster_my_epoch:1\r\n";

static obs_cluster_t cluster_ok(const char *nodes)
{
    obs_cluster_t x;
    memset(&x, 0, sizeof(x));
    x.on = x.known = 1;
    x.nodes = nodes;
    cn_info_parse(CLUSTER_INFO_OK, strlen(CLUSTER_INFO_OK), &x.info);
    return x;
}

static size_t healthy_cluster(obs_node_t *n)
{
    n[0] = primary("cache-0", "10.0.0.1", 100);
    n[1] = primary("cache-1", "10.0.0.2", 200);
    n[2] = primary("cache-2", "10.0.0.3", 300);
    for (int i = 0; i < 3; i++)
        n[i].cluster = cluster_ok(view_of[i]);
    return 3;
}

static void m_cl_same_text(obs_node_t *c, size_t *n)
{
    (void)n;
    snprintf(view_0_copy, sizeof(view_0_copy), "%s", view_of[0]);
    c[0].cluster.nodes = view_0_copy;
}
static void m_cl_nodes(obs_node_t *c, size_t *n) { (void)n; c[0].cluster.nodes = VIEW_0_MIGRATING; }
static void m_cl_refused(obs_node_t *c, size_t *n)
{
    (void)n;
    c[1].cluster.nodes = NULL;
    snprintf(c[1].cluster.error, sizeof(c[1].cluster.error), "CLUSTER NODES: line 2: 3 fields, want at least 8");
}
static void m_cl_error_other(obs_node_t *c, size_t *n)
{
    m_cl_refused(c, n);
    snprintf(c[1].cluster.error, sizeof(c[1].cluster.error), "redis error: ERR cluster support disabled");
}
static void m_cl_state(obs_node_t *c, size_t *n) { (void)n; c[2].cluster.info.state_ok = 0; }
static void m_cl_assigned(obs_node_t *c, size_t *n) { (void)n; c[0].cluster.info.slots_assigned = 10923; }
static void m_cl_slots_ok(obs_node_t *c, size_t *n) { (void)n; c[0].cluster.info.slots_ok = 10923; }
static void m_cl_pfail(obs_node_t *c, size_t *n) { (void)n; c[1].cluster.info.slots_pfail = 5461; }
static void m_cl_fail(obs_node_t *c, size_t *n) { (void)n; c[1].cluster.info.slots_fail = 5461; }
static void m_cl_known_nodes(obs_node_t *c, size_t *n) { (void)n; c[0].cluster.info.known_nodes = 4; }
static void m_cl_epoch(obs_node_t *c, size_t *n) { (void)n; c[0].cluster.info.current_epoch = 9; }
static void m_cl_unknown(obs_node_t *c, size_t *n) { (void)n; c[2].cluster.known = 0; }
static void m_cl_offsets_epoch(obs_node_t *c, size_t *n)
{
    m_offsets(c, n);
    m_times(c, n);
    m_cl_epoch(c, n);
    c[1].cluster.info.my_epoch = 7;
    c[2].cluster.info.size = 2; /* cluster_size is not part of the observation */
}

static const diff_case_t diff_cases[] = {
    {"nothing changed", m_none, OBSDIFF_SAME, "", 0},
    {"offsets alone", m_offsets, OBSDIFF_SAME, "", 0},
    {"lastOkAgoMs/downSinceMs alone", m_times, OBSDIFF_SAME, "", 0},
    {"the same nodes in another order", m_reordered, OBSDIFF_SAME, "", 0},
    {"a replica unreachable", m_replica_down, OBSDIFF_CHANGED, "cache-1: reachable true->false", 0},
    {"the primary unreachable", m_primary_down, OBSDIFF_CHANGED, "cache-0: reachable true->false", 0},
    {"a replica's link down", m_link_down, OBSDIFF_CHANGED, "cache-2: linkUp true->false", 0},
    {"a replica promoted", m_promoted, OBSDIFF_CHANGED, "cache-1: role slave->master", 0},
    {"a replica pointed elsewhere", m_repointed, OBSDIFF_CHANGED, "cache-2: master 10.0.0.1:6379->10.0.0.99:6379", 0},
    {"a replica's primary port", m_port, OBSDIFF_CHANGED, "cache-2: master", 0},
    {"a pod with a new IP", m_new_ip, OBSDIFF_CHANGED, "cache-1: ip 10.0.0.2->10.0.0.12", 0},
    {"a node more", m_scaled_up, OBSDIFF_CHANGED, "nodes: 3->4", 0},
    {"a node less", m_scaled_down, OBSDIFF_CHANGED, "nodes: 3->2", 0},
    {"a node replaced by another name", m_renamed, OBSDIFF_CHANGED, "cache-9: new node", 0},
    /* Cluster mode */
    {"cluster: nothing changed", m_none, OBSDIFF_SAME, "", 1},
    {"cluster: the same nodes text in another buffer", m_cl_same_text, OBSDIFF_SAME, "", 1},
    {"cluster: offsets, times and epochs alone", m_cl_offsets_epoch, OBSDIFF_SAME, "", 1},
    {"cluster: knownNodes alone", m_cl_known_nodes, OBSDIFF_SAME, "", 1},
    {"cluster: a node's CLUSTER NODES text", m_cl_nodes, OBSDIFF_CHANGED, "cache-0: cluster nodes changed", 1},
    {"cluster: CLUSTER NODES refused by cn_parse", m_cl_refused, OBSDIFF_CHANGED,
     "cache-1: cluster nodes changed: CLUSTER NODES: line 2", 1},
    {"cluster: another error instead of the text", m_cl_error_other, OBSDIFF_CHANGED,
     "cache-1: cluster nodes changed: redis error", 1},
    {"cluster: cluster_state ok->fail", m_cl_state, OBSDIFF_CHANGED, "cache-2: cluster state ok->fail", 1},
    {"cluster: slots assigned", m_cl_assigned, OBSDIFF_CHANGED, "cache-0: cluster slotsAssigned 16384->10923", 1},
    {"cluster: slots ok", m_cl_slots_ok, OBSDIFF_CHANGED, "cache-0: cluster slotsOk 16384->10923", 1},
    {"cluster: slots pfail", m_cl_pfail, OBSDIFF_CHANGED, "cache-1: cluster slotsPfail 0->5461", 1},
    {"cluster: slots fail", m_cl_fail, OBSDIFF_CHANGED, "cache-1: cluster slotsFail 0->5461", 1},
    {"cluster: a node's cluster object gone", m_cl_unknown, OBSDIFF_CHANGED, "cache-2: cluster gone", 1},
    {"cluster: the primary unreachable", m_primary_down, OBSDIFF_CHANGED, "cache-0: reachable true->false", 1},
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
        size_t np = diff_cases[i].cluster ? healthy_cluster(prev) : healthy(prev);
        size_t nc = diff_cases[i].cluster ? healthy_cluster(cur) : healthy(cur);
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

/* A node that never answered CLUSTER NODES, then did: news; the first observation
 * (nothing sent) carries it too. */
static void test_diff_cluster_known(void)
{
    obs_node_t prev[8], cur[8];
    size_t np = healthy_cluster(prev), nc = healthy_cluster(cur);
    prev[1].cluster.known = 0;
    prev[1].cluster.nodes = NULL;
    CU_ASSERT_EQUAL(obsdiff_compare(prev, np, cur, nc), OBSDIFF_CHANGED);
    char why[200];
    obsdiff_explain(prev, np, cur, nc, why, sizeof(why));
    CU_ASSERT_STRING_EQUAL(why, "cache-1: cluster known");
    /* Not in Cluster mode: whatever the cluster fields hold is no news, nor JSON. */
    np = healthy_cluster(prev);
    for (size_t i = 0; i < nc; i++)
        prev[i].cluster.on = cur[i].cluster.on = 0;
    cur[0].cluster.nodes = VIEW_0_MIGRATING;
    cur[1].cluster.info.state_ok = 0;
    CU_ASSERT_EQUAL(obsdiff_compare(prev, np, cur, nc), OBSDIFF_SAME);
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL(obsdiff_json(cur, nc, "x", &b), 0);
    CU_ASSERT_PTR_NULL(strstr(buf_str(&b), "cluster"));
    buf_free(&b);
}

/* The cluster object of the observation JSON: the nodes text (parsing back to the same
 * view), the state and the counts; "error" instead of nodes; -1 and no state for what
 * CLUSTER INFO did not give. */
static void test_diff_cluster_json(void)
{
    obs_node_t cur[8];
    size_t n = healthy_cluster(cur);
    m_cl_refused(cur, &n);
    static const char TWO_FIELDS[] = "cluster_state:fail\r\ncluster_slots_assigned:0\r\n";
    cn_info_parse(TWO_FIELDS, strlen(TWO_FIELDS), &cur[2].cluster.info);
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL_FATAL(obsdiff_json(cur, n, "2026-12-01T16:00:00.000Z", &b), 0);
    json_object *o = json_tokener_parse(buf_str(&b)), *nodes = NULL, *cl = NULL, *v = NULL;
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(o, "nodes", &nodes));
    /* node 0: everything */
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(json_object_array_get_idx(nodes, 0), "cluster", &cl));
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(cl, "nodes", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), view_of[0]);
    cn_view_t *view = NULL;
    char err[200];
    CU_ASSERT_EQUAL_FATAL(cn_parse(json_object_get_string(v), strlen(json_object_get_string(v)), &view, err,
                                   sizeof(err)),
                          0);
    CU_ASSERT_EQUAL(view->n, 3);
    CU_ASSERT_STRING_EQUAL(cn_myself(view)->id, ID_A);
    cn_view_destroy(&view);
    CU_ASSERT_FALSE(json_object_object_get_ex(cl, "error", NULL));
    static const struct {
        const char *field;
        int64_t want;
    } figs[] = {{"slotsAssigned", 16384}, {"slotsOk", 16384}, {"slotsPfail", 0},
                {"slotsFail", 0},         {"knownNodes", 3},  {"currentEpoch", 3}};
    for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++) {
        CU_ASSERT_TRUE(json_object_object_get_ex(cl, figs[i].field, &v));
        CU_ASSERT_EQUAL(json_object_get_int64(v), figs[i].want);
    }
    json_object_object_get_ex(cl, "state", &v);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "ok");
    /* node 1: cn_parse refused its text */
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(json_object_array_get_idx(nodes, 1), "cluster", &cl));
    CU_ASSERT_FALSE(json_object_object_get_ex(cl, "nodes", NULL));
    CU_ASSERT_TRUE(json_object_object_get_ex(cl, "error", &v));
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "CLUSTER NODES: line 2: 3 fields, want at least 8");
    /* node 2: a CLUSTER INFO of two fields */
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(json_object_array_get_idx(nodes, 2), "cluster", &cl));
    json_object_object_get_ex(cl, "state", &v);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "fail");
    json_object_object_get_ex(cl, "slotsAssigned", &v);
    CU_ASSERT_EQUAL(json_object_get_int64(v), 0);
    json_object_object_get_ex(cl, "slotsOk", &v);
    CU_ASSERT_EQUAL(json_object_get_int64(v), -1);
    json_object_object_get_ex(cl, "currentEpoch", &v);
    CU_ASSERT_EQUAL(json_object_get_int64(v), -1);
    /* CLUSTER INFO gave no state: no "state" */
    cur[2].cluster.info.state_ok = -1;
    buf_reset(&b);
    CU_ASSERT_EQUAL_FATAL(obsdiff_json(cur, n, "x", &b), 0);
    json_object_put(o);
    o = json_tokener_parse(buf_str(&b));
    json_object_object_get_ex(o, "nodes", &nodes);
    json_object_object_get_ex(json_object_array_get_idx(nodes, 2), "cluster", &cl);
    CU_ASSERT_FALSE(json_object_object_get_ex(cl, "state", NULL));
    /* A node whose cluster is not known yet has no cluster object. */
    cur[2].cluster.known = 0;
    buf_reset(&b);
    CU_ASSERT_EQUAL_FATAL(obsdiff_json(cur, n, "x", &b), 0);
    json_object_put(o);
    o = json_tokener_parse(buf_str(&b));
    json_object_object_get_ex(o, "nodes", &nodes);
    CU_ASSERT_FALSE(json_object_object_get_ex(json_object_array_get_idx(nodes, 2), "cluster", NULL));
    json_object_put(o);
    buf_free(&b);
}

/* What observerd keeps of the observation it sent owns its texts: the builder's buffers
 * may change or go. */
static void test_diff_copy(void)
{
    obs_node_t cur[8], *sent = NULL;
    size_t n = healthy_cluster(cur);
    m_cl_same_text(cur, &n);
    m_cl_refused(cur, &n);
    CU_ASSERT_EQUAL_FATAL(obsdiff_copy(cur, n, &sent), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sent);
    CU_ASSERT_PTR_NOT_EQUAL(sent[0].cluster.nodes, view_0_copy);
    CU_ASSERT_PTR_NULL(sent[1].cluster.nodes);
    view_0_copy[0] = 'x'; /* the builder's buffer changes: the copy does not */
    CU_ASSERT_STRING_EQUAL(sent[0].cluster.nodes, view_of[0]);
    CU_ASSERT_EQUAL(obsdiff_compare(sent, n, cur, n), OBSDIFF_CHANGED);
    view_0_copy[0] = view_of[0][0];
    CU_ASSERT_EQUAL(obsdiff_compare(sent, n, cur, n), OBSDIFF_SAME);
    obsdiff_free(&sent, n);
    CU_ASSERT_PTR_NULL(sent);
    obsdiff_free(&sent, n);
    CU_ASSERT_EQUAL(obsdiff_copy(cur, 0, &sent), 0);
    CU_ASSERT_PTR_NULL(sent);
}

/* Two answers of one node a second apart (ping-sent and pong-recv moved, the lines in
 * another order, a hostname after the address) normalize to one text, sorted by id with
 * ping and pong 0; a text cn_parse refuses gives its message. */
static void test_normalize_nodes(void)
{
    static const char T1[] =
        ID_C " 10.0.0.3:6379@16379,cache-2 master - 0 1733450000300 3 connected 10923-16383\n"
        ID_A " 10.0.0.1:6379@16379,cache-0 myself,master - 0 1733450000000 1 connected 0-5460\n"
        ID_B " 10.0.0.2:6379@16379,cache-1 master - 1733450000100 1733450000200 2 connected 5461-10922\n";
    static const char T2[] =
        ID_A " 10.0.0.1:6379@16379,cache-0 myself,master - 0 1733450001000 1 connected 0-5460\n"
        ID_B " 10.0.0.2:6379@16379,cache-1 master - 0 1733450001200 2 connected 5461-10922\n"
        ID_C " 10.0.0.3:6379@16379,cache-2 master - 1733450001250 1733450001300 3 connected 10923-16383\n";
    char *n1 = NULL, *n2 = NULL, err[200] = "";
    CU_ASSERT_EQUAL_FATAL(obsdiff_normalize_nodes(T1, strlen(T1), &n1, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(obsdiff_normalize_nodes(T2, strlen(T2), &n2, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(n1, n2);
    CU_ASSERT_STRING_EQUAL(n1, view_of[0]);
    free(n2);
    /* Normalized text is a fixed point. */
    CU_ASSERT_EQUAL_FATAL(obsdiff_normalize_nodes(n1, strlen(n1), &n2, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(n1, n2);
    free(n1);
    free(n2);
    static const char BAD[] = ID_A " 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\nhello world\n";
    n1 = (char *)"untouched";
    CU_ASSERT_EQUAL(obsdiff_normalize_nodes(BAD, strlen(BAD), &n1, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(n1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "line 2"));
    /* A flags field cn_parse does not know grows to "noflags": still normalized. */
    static const char ODD[] = ID_A " 10.0.0.1:6379@16379 - - 0 0 1 connected\n";
    CU_ASSERT_EQUAL_FATAL(obsdiff_normalize_nodes(ODD, strlen(ODD), &n1, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(n1, ID_A " 10.0.0.1:6379@16379 noflags - 0 0 1 connected\n");
    free(n1);
}

/* The largest Cluster-mode cluster the API allows (20 shards x (1 + 4 replicas) = 100
 * pods), each node's view listing all 100: its observation fits what informerd takes. */
static void test_largest_cluster_fits(void)
{
    enum { SHARDS = 20, PER = 5, N = SHARDS * PER };
    static char ids[N][CN_ID_LEN + 1];
    static obs_node_t nodes[N];
    buf_t text;
    buf_init(&text, 0);
    for (int i = 0; i < N; i++)
        snprintf(ids[i], sizeof(ids[i]), "%08x%032x", 0x9e3779b9u * (unsigned)(i + 1), (unsigned)i);
    for (int i = 0; i < N; i++) {
        int k = i / PER, m = k * PER;
        if (i == m)
            buf_printf(&text, "%s 10.244.%d.%d:6379@16379 master - 0 0 %d connected %d-%d\n", ids[i], i / 200,
                       100 + i % 150, k + 1, k * CN_SLOTS / SHARDS, (k + 1) * CN_SLOTS / SHARDS - 1);
        else
            buf_printf(&text, "%s 10.244.%d.%d:6379@16379 slave %s 0 0 %d connected\n", ids[i], i / 200,
                       100 + i % 150, ids[m], k + 1);
    }
    char *normal = NULL, err[200];
    CU_ASSERT_EQUAL_FATAL(obsdiff_normalize_nodes(buf_str(&text), text.len, &normal, err, sizeof(err)), 0);
    for (int i = 0; i < N; i++) {
        char pod[64];
        snprintf(pod, sizeof(pod), "cache-shard%d-%d", i / PER, i % PER);
        nodes[i] = primary(pod, "10.244.200.200", 1234567);
        nodes[i].cluster = cluster_ok(normal);
        nodes[i].cluster.info.known_nodes = N;
    }
    buf_t out;
    buf_init(&out, PROTO_MAX_OBSERVATION_BYTES);
    CU_ASSERT_EQUAL(obsdiff_json(nodes, N, "2026-12-01T16:00:00.123Z", &out), 0);
    fprintf(stderr, "\n  100 pods: a view of %zu bytes, the observation %zu bytes (cap %zu)\n", strlen(normal),
            out.len, PROTO_MAX_OBSERVATION_BYTES);
    CU_ASSERT(out.len > (size_t)N * strlen(normal));
    free(normal);
    buf_free(&out);
    buf_free(&text);
}

static const cu_entry_t tests[] = {
    CU_SUITE("redisinfo"),
    {"replication: primary, replica linked, unlinked, never linked", test_info_replication},
    {"keyspace: the keys of every database", test_info_keyspace},
    {"primary: its replicas", test_info_master_two_slaves},
    {"every default section", test_info_full_sections},
    {"malformed and foreign input", test_info_bad_input},
    CU_SUITE("obsdiff"),
    {"which transitions are news", test_diff_table},
    {"a primary still down is repeated", test_diff_still_down},
    {"the observation JSON", test_diff_json},
    {"cluster mode: a node's cluster object appears; other modes carry none", test_diff_cluster_known},
    {"cluster mode: the cluster object in the JSON", test_diff_cluster_json},
    {"cluster mode: the observation kept owns its texts", test_diff_copy},
    {"cluster mode: CLUSTER NODES normalized", test_normalize_nodes},
    {"cluster mode: the largest cluster's observation fits", test_largest_cluster_fits},
};
CU_MAIN(tests)
