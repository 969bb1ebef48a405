/* Unit tests of how often observerd repeats "a primary is still unreachable"
 * (obsdiff_still_down_due, observerd/obsdiff.h): every second until the cluster's
 * downAfter has passed with a margin, so plan hears a downness of at least downAfter and
 * failover times do not change; then once a minute, so pods that never answer do not
 * cost a reconcile a second forever. */
#include "obsdiff.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

static obs_node_t node(const char *pod, const char *ip, int reachable, redisinfo_role_t role, int64_t last_ok_ago_ms,
                       int64_t down_since_ms)
{
    obs_node_t x;
    memset(&x, 0, sizeof(x));
    snprintf(x.pod, sizeof(x.pod), "%s", pod);
    snprintf(x.ip, sizeof(x.ip), "%s", ip);
    x.reachable = reachable;
    x.role = role;
    x.last_ok_ago_ms = last_ok_ago_ms;
    x.down_since_ms = down_since_ms;
    x.offset = -1;
    x.link_down_ms = -1;
    return x;
}

typedef struct {
    const char *name;
    int64_t last_ok_ago_ms, down_since_ms; /* of the primary, unreachable */
    int64_t down_after_ms;
    int64_t since_sent_ms;
    int want;
} bound_case_t;

static void test_bound_table(void)
{
    static const bound_case_t cases[] = {
        {"just down, a second since the last send", 1000, 1000, 3000, 1000, 1},
        {"just down, half a second since: not yet", 1000, 1000, 3000, 500, 0},
        {"down 2.5 s of 3 s downAfter: every second", 2500, 2500, 3000, 1000, 1},
        {"down 4.9 s (downAfter 3 s + margin 2 s not reached): every second", 4900, 4900, 3000, 1000, 1},
        {"down 5 s (downAfter + margin): no more every second", 5000, 5000, 3000, 1000, 0},
        {"down 5 s, 59 s since the last send: not yet", 5000, 5000, 3000, 59000, 0},
        {"down long, a minute since the last send: once a minute", 600000, 600000, 3000, 60000, 1},
        {"never answered (lastOkAgoMs -1), down 4 s: every second", -1, 4000, 3000, 1000, 1},
        {"never answered, down 10 min: once a minute only", -1, 600000, 3000, 1000, 0},
        {"lastOkAgoMs counts as plan counts it (the larger)", 6000, 1000, 3000, 1000, 0},
        {"downAfter 30 s: down 20 s is still every second", 20000, 20000, 30000, 1000, 1},
        {"downAfter 30 s: down 32 s is past it", 32000, 32000, 30000, 1000, 0},
        {"downAfter unknown (0): the default 3 s", 4000, 4000, 0, 1000, 1},
        {"downAfter unknown (0): the default 3 s, past it", 5000, 5000, 0, 1000, 0},
        {"Standalone (-1, no failover): never repeated", 1000, 1000, -1, 1000, 0},
        {"Standalone: not even once a minute", 600000, 600000, -1, 3600000, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const bound_case_t *k = &cases[i];
        obs_node_t nodes[3] = {
            node("cache-0", "10.0.0.1", 0, REDISINFO_ROLE_MASTER, k->last_ok_ago_ms, k->down_since_ms),
            node("cache-1", "10.0.0.2", 1, REDISINFO_ROLE_SLAVE, 100, 0),
            node("cache-2", "10.0.0.3", 1, REDISINFO_ROLE_SLAVE, 100, 0),
        };
        CU_ASSERT_EQUAL_FATAL(obsdiff_compare(nodes, 3, nodes, 3), OBSDIFF_STILL_DOWN);
        int got = obsdiff_still_down_due(nodes, 3, k->down_after_ms, k->since_sent_ms);
        if (got != k->want)
            fprintf(stderr, "\n  case \"%s\": due %d, want %d\n", k->name, got, k->want);
        CU_ASSERT_EQUAL(got, k->want);
    }
}

/* Any node still short of downAfter + margin keeps the fast repeat. */
static void test_bound_youngest_node_decides(void)
{
    obs_node_t nodes[2] = {
        node("cache-0", "10.0.0.1", 0, REDISINFO_ROLE_MASTER, 600000, 600000),
        node("cache-1", "10.0.0.2", 0, REDISINFO_ROLE_UNKNOWN, -1, 1500),
    };
    CU_ASSERT_EQUAL(obsdiff_still_down_due(nodes, 2, 3000, 1000), 1);
    nodes[1].down_since_ms = 7000;
    CU_ASSERT_EQUAL(obsdiff_still_down_due(nodes, 2, 3000, 1000), 0);
}

/* A primary down long whose replica's link to it is still up (cut off from the observer
 * alone, or SIGSTOPped within repl-timeout): every second, since plan holds the election
 * while the replica hears it and must hear when it stops. */
static void test_bound_followed(void)
{
    obs_node_t nodes[2] = {
        node("cache-0", "10.0.0.1", 0, REDISINFO_ROLE_MASTER, 600000, 600000),
        node("cache-1", "10.0.0.2", 1, REDISINFO_ROLE_SLAVE, 100, 0),
    };
    CU_ASSERT_EQUAL(obsdiff_still_down_due(nodes, 2, 3000, 1000), 0);
    snprintf(nodes[1].master_host, sizeof(nodes[1].master_host), "10.0.0.1");
    CU_ASSERT_EQUAL(obsdiff_still_down_due(nodes, 2, 3000, 1000), 0); /* link down */
    nodes[1].link_up = 1;
    CU_ASSERT_EQUAL(obsdiff_still_down_due(nodes, 2, 3000, 1000), 1);
    CU_ASSERT_EQUAL(obsdiff_still_down_due(nodes, 2, 3000, 500), 0);
}

/* Nothing still down (a replica down, a pod without IP, all up): never due. */
static void test_bound_nothing_down(void)
{
    obs_node_t nodes[3] = {
        node("cache-0", "10.0.0.1", 1, REDISINFO_ROLE_MASTER, 100, 0),
        node("cache-1", "10.0.0.2", 0, REDISINFO_ROLE_SLAVE, 1000, 1000),
        node("cache-2", "", 0, REDISINFO_ROLE_UNKNOWN, -1, 0),
    };
    CU_ASSERT_EQUAL(obsdiff_compare(nodes, 3, nodes, 3), OBSDIFF_SAME);
    CU_ASSERT_EQUAL(obsdiff_still_down_due(nodes, 3, 3000, 1000), 0);
    CU_ASSERT_EQUAL(obsdiff_still_down_due(nodes, 3, 3000, 3600000), 0);
    CU_ASSERT_EQUAL(obsdiff_still_down_due(NULL, 0, 3000, 3600000), 0);
}

/* A walk in time as observerd's loop makes it (a probe a second, send when due): the
 * repeats stop once downAfter + margin has passed, and the last one sent carries a
 * downness of at least downAfter (what plan's election needs); an hour of a pod that
 * never answers costs 60 sends, not 3600. */
static void test_bound_walk(void)
{
    const int64_t down_after = 3000;
    int64_t last_sent = 0, sends = 0, last_down_sent = -1;
    for (int64_t t = 1000; t <= 3600 * 1000; t += 1000) {
        obs_node_t x = node("cache-0", "10.0.0.1", 0, REDISINFO_ROLE_MASTER, t, t);
        if (obsdiff_still_down_due(&x, 1, down_after, t - last_sent)) {
            sends++;
            last_sent = t;
            if (t < 60000)
                last_down_sent = t;
        }
    }
    CU_ASSERT(last_down_sent >= down_after);
    CU_ASSERT(last_down_sent < down_after + OBSDIFF_STILL_DOWN_MARGIN_MS);
    CU_ASSERT(sends <= (down_after + OBSDIFF_STILL_DOWN_MARGIN_MS) / 1000 + 3600 / 60);
    CU_ASSERT(sends >= 3600 / 60);
}

static CU_TestInfo tests[] = {
    {"still down: table", test_bound_table},
    {"still down: the youngest node decides", test_bound_youngest_node_decides},
    {"still down: nothing down, never due", test_bound_nothing_down},
    {"still down: a replica still linked to it, every second", test_bound_followed},
    {"still down: an hour's walk", test_bound_walk},
    CU_TEST_INFO_NULL,
};

#define CU_ONE_SUITE "observer: still-down bound", NULL, NULL, tests
#include "cu_main.h"
