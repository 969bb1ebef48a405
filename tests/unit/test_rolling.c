/* A fast rolling restart (issue 33; docs/observer.md "Cadence", docs/replication.md "Full
 * resynchronisation at once"): the redis.conf directive that starts a replica's full
 * sync at once and when spec.config.extra overrides it (render.h REPLICATION SYNC),
 * observerd's probe cadence (observerd/cadence.h), the HOT message between workerd and
 * observerd (common/proto.h), and which finished reconciles ask for it
 * (workerd/hothint.h). */
#include "cadence.h"
#include "clock.h"
#include "cu_table.h"
#include "hothint.h"
#include "json_at.h"
#include "plan.h"
#include "proto.h"
#include "rdc_spec.h"
#include "render.h"
#include "rmsg.h"
#include "text_case.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

/* ---- render: repl-diskless-sync-delay ------------------------------------------------ */

/* The lines of cache's redis.conf (full: 1, else the restart text) for the spec fields
 * given (size and image added) that start with "repl-diskless", into out. */
static void sync_lines(const char *fields, int full, char *out, size_t cap)
{
    json_object *rc = parsef("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":"
                             "{\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1},"
                             "\"spec\":{\"size\":%s,\"image\":\"redis\"%s%s}}",
                             strstr(fields, "\"Cluster\"") ? "6" : "3", *fields ? "," : "", fields);
    rdc_spec_t spec;
    rdc_field_errors_t *errs = rdc_field_errors_new();
    CU_ASSERT_EQUAL_FATAL(rdc_spec_parse(rc, &spec, errs), 0);
    rdc_field_errors_destroy(&errs);
    render_input_t in = {.name = "cache", .ns = "default", .uid = "uid-1", .spec = &spec};
    buf_t conf;
    buf_init(&conf, 0);
    CU_ASSERT_EQUAL_FATAL(full ? render_redis_conf(&in, &conf) : render_redis_conf_restart(&in, &conf), 0);
    size_t off = 0;
    out[0] = '\0';
    for (const char *l = buf_str(&conf); *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) + 1 : strlen(l);
        if (!strncmp(l, "repl-diskless", 13) && off < cap)
            off += (size_t)snprintf(out + off, cap - off, "%.*s", (int)n, l);
        l += n;
    }
    buf_free(&conf);
    json_object_put(rc);
}

/* Which modes get the directive, and the user's batching settings win. */
static void test_render_sync_delay(void)
{
    static const text_case_t rows[] = {
        {"\"mode\":\"Replication\"", "repl-diskless-sync-delay 0\n"},
        {"\"mode\":\"Cluster\",\"cluster\":{\"shards\":3,\"replicasPerShard\":1}", "repl-diskless-sync-delay 0\n"},
        /* independent servers: no replica to sync, the text unchanged */
        {"\"mode\":\"Standalone\"", ""},
        {"", ""},
        /* the user tunes the batching: theirs alone */
        {"\"mode\":\"Replication\",\"config\":{\"extra\":{\"repl-diskless-sync-delay\":\"5\"}}",
         "repl-diskless-sync-delay 5\n"},
        {"\"mode\":\"Replication\",\"config\":{\"extra\":{\"repl-diskless-sync-max-replicas\":\"2\"}}",
         "repl-diskless-sync-max-replicas 2\n"},
        {"\"mode\":\"Replication\",\"config\":{\"extra\":{\"repl-diskless-sync-delay\":\"2\","
         "\"repl-diskless-sync-max-replicas\":\"2\"}}",
         "repl-diskless-sync-delay 2\nrepl-diskless-sync-max-replicas 2\n"},
        /* another repl- directive of the user's leaves ours in place */
        {"\"mode\":\"Replication\",\"config\":{\"extra\":{\"repl-diskless-sync\":\"no\"}}",
         "repl-diskless-sync-delay 0\nrepl-diskless-sync no\n"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char got[512], restart[512];
        sync_lines(rows[i].in, 1, got, sizeof(got));
        if (strcmp(got, rows[i].want))
            fprintf(stderr, "\n{%s}: got\n%s", rows[i].in, got);
        CU_ASSERT_STRING_EQUAL(got, rows[i].want);
        /* Redis changes all of them at run time: none is in the text that rolls the pods */
        sync_lines(rows[i].in, 0, restart, sizeof(restart));
        CU_ASSERT_STRING_EQUAL(restart, "");
    }
}

/* ---- observerd's cadence ------------------------------------------------------------- */

#define SEC (INT64_C(1000000000))

static void test_cadence_hint_and_expiry(void)
{
    int64_t now = 50 * SEC;
    static const struct {
        int64_t for_ms, want_ms; /* want: until - now, -1 for cold (0) */
    } rows[] = {
        {5000, 5000}, {1, 1}, {0, -1}, {-7, -1}, {PROTO_HOT_MAX_MS, PROTO_HOT_MAX_MS},
        {PROTO_HOT_MAX_MS + 1, PROTO_HOT_MAX_MS}, {INT64_C(1) << 40, PROTO_HOT_MAX_MS},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int64_t until = cadence_hint(now, rows[i].for_ms);
        if (rows[i].want_ms < 0) {
            CU_ASSERT_EQUAL(until, 0);
            CU_ASSERT_FALSE(cadence_hot(until, now));
            continue;
        }
        CU_ASSERT_EQUAL(until, now + rows[i].want_ms * NS_PER_MS);
        CU_ASSERT_TRUE(cadence_hot(until, now));
        CU_ASSERT_TRUE(cadence_hot(until, until - 1));
        CU_ASSERT_FALSE(cadence_hot(until, until)); /* runs out by itself */
        CU_ASSERT_FALSE(cadence_hot(until, until + 60 * SEC));
    }
    /* a new hint replaces the last: hot for a short while, or cold at once */
    int64_t until = cadence_hint(now, 5000);
    until = cadence_hint(now + SEC, 100);
    CU_ASSERT_FALSE(cadence_hot(until, now + SEC + 100 * NS_PER_MS));
    until = cadence_hint(now + SEC, 0);
    CU_ASSERT_FALSE(cadence_hot(until, now + SEC));
}

static void test_cadence_due(void)
{
    int64_t now = 50 * SEC, hot = now + 5 * SEC, iv = OBSERVE_HOT_INTERVAL_MS * NS_PER_MS;
    static const struct {
        const char *what;
        int hot, busy;
        int64_t since_ns; /* now - last probe; -1: never probed */
        int want;
    } rows[] = {
        {"hot, never probed", 1, 0, -1, 1},
        {"hot, probed an interval ago", 1, 0, 100 * INT64_C(1000000), 1},
        {"hot, probed a little less than an interval ago (the timer's turn)", 1, 0, 99 * INT64_C(1000000), 1},
        {"hot, probed half an interval ago", 1, 0, 50 * INT64_C(1000000), 1},
        {"hot, probed a second ago", 1, 0, SEC, 1},
        {"hot, probed just now by another (the tick, a command record)", 1, 0, 50 * INT64_C(1000000) - 1, 0},
        {"hot, probed now", 1, 0, 0, 0},
        {"hot, a probe in flight", 1, 1, SEC, 0},
        {"cold: the 1 s tick's alone", 0, 0, SEC, 0},
        {"cold, never probed", 0, 0, -1, 0},
    };
    CU_ASSERT_EQUAL(iv, 100 * INT64_C(1000000));
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int64_t last = rows[i].since_ns < 0 ? 0 : now - rows[i].since_ns;
        int got = cadence_due(rows[i].hot ? hot : 0, now, rows[i].busy, last);
        if (got != rows[i].want)
            fprintf(stderr, "\n%s: due %d\n", rows[i].what, got);
        CU_ASSERT_EQUAL(got, rows[i].want);
    }
    /* expired: not due, however long ago the last probe */
    CU_ASSERT_FALSE(cadence_due(hot, hot, 0, 0));
}

/* ---- HOT on the wire ----------------------------------------------------------------- */

static void test_proto_hot_round_trip(void)
{
    static const struct {
        const char *key;
        int64_t for_ms, want;
    } rows[] = {
        {"default/cache", 5000, 5000},
        {"ns/c", 0, 0},
        {"ns/c", -3, 0}, /* sent as 0 */
        {"a-very-long-namespace-name/a-very-long-cluster-name", PROTO_HOT_MAX_MS * 4, PROTO_HOT_MAX_MS},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        rmsg_t *m = proto_hot_new(rows[i].key, rows[i].for_ms);
        CU_ASSERT_EQUAL(rmsg_size(m), 3);
        CU_ASSERT_TRUE(rmsg_frame_is(m, 0, PROTO_HOT));
        char key[PROTO_HOT_KEY_MAX] = "";
        int64_t ms = -1;
        const char *why = NULL;
        CU_ASSERT_EQUAL(proto_hot_parse(m, key, &ms, &why), 0);
        CU_ASSERT_STRING_EQUAL(key, rows[i].key);
        CU_ASSERT_EQUAL(ms, rows[i].want);
        CU_ASSERT_PTR_NULL(why);
        rmsg_destroy(&m);
    }
}

/* A message of frames (NULL-terminated); long: a key of PROTO_HOT_KEY_MAX bytes instead
 * of frame 1. */
static rmsg_t *msg_of(const char *const *frames, int long_key)
{
    rmsg_t *m = rmsg_new();
    for (size_t i = 0; frames[i]; i++) {
        if (i == 1 && long_key) {
            char k[PROTO_HOT_KEY_MAX + 1];
            memset(k, 'a', PROTO_HOT_KEY_MAX);
            k[3] = '/';
            k[PROTO_HOT_KEY_MAX] = '\0';
            rmsg_addstr(m, k);
        } else {
            rmsg_addstr(m, frames[i]);
        }
    }
    return m;
}

static void test_proto_hot_malformed(void)
{
    static const struct {
        const char *frames[5];
        int long_key;
        const char *why;
    } rows[] = {
        {{"HOT", "ns/c", NULL}, 0, "not HOT key for_ms"},
        {{"HOT", "ns/c", "10", "x", NULL}, 0, "not HOT key for_ms"},
        {{"OBSERVED", "ns/c", "10", NULL}, 0, "not HOT key for_ms"},
        {{"HOT", "", "10", NULL}, 0, "HOT: the key is not namespace/name"},
        {{"HOT", "cache", "10", NULL}, 0, "HOT: the key is not namespace/name"},
        {{"HOT", "x", "10", NULL}, 1, "HOT: the key is not namespace/name"},
        {{"HOT", "ns/c", "", NULL}, 0, "HOT: for_ms is not a number of milliseconds"},
        {{"HOT", "ns/c", "5s", NULL}, 0, "HOT: for_ms is not a number of milliseconds"},
        {{"HOT", "ns/c", "-1", NULL}, 0, "HOT: for_ms is not a number of milliseconds"},
        {{"HOT", "ns/c", "99999999999999999999999", NULL}, 0, "HOT: for_ms is not a number of milliseconds"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        rmsg_t *m = msg_of(rows[i].frames, rows[i].long_key);
        char key[PROTO_HOT_KEY_MAX] = "unchanged";
        int64_t ms = 42;
        const char *why = NULL;
        CU_ASSERT_EQUAL(proto_hot_parse(m, key, &ms, &why), -1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(why);
        CU_ASSERT_STRING_EQUAL(why, rows[i].why);
        CU_ASSERT_STRING_EQUAL(key, "unchanged");
        CU_ASSERT_EQUAL(ms, 42);
        rmsg_destroy(&m);
    }
}

/* ---- workerd's hint ------------------------------------------------------------------ */

static void test_hothint_decide(void)
{
    static const struct {
        rdc_mode_t mode;
        int acted;
        int64_t requeue_ns;
        hothint_t want;
    } rows[] = {
        {RDC_MODE_REPLICATION, 1, 0, HOTHINT_HOT},                          /* a command, a pod deleted */
        {RDC_MODE_REPLICATION, 0, PLAN_REQUEUE_SWITCHOVER_NS, HOTHINT_HOT}, /* a step under way */
        {RDC_MODE_REPLICATION, 0, PLAN_REQUEUE_OBSERVE_NS, HOTHINT_HOT},    /* waiting for a fresh look */
        {RDC_MODE_REPLICATION, 0, PLAN_REQUEUE_SWITCHOVER_NS + 1, HOTHINT_COLD},
        {RDC_MODE_REPLICATION, 0, 10 * SEC, HOTHINT_COLD},
        {RDC_MODE_REPLICATION, 0, 0, HOTHINT_COLD}, /* converged: every second again */
        {RDC_MODE_STANDALONE, 1, 0, HOTHINT_NONE},
        {RDC_MODE_STANDALONE, 0, SEC, HOTHINT_NONE},
        {RDC_MODE_CLUSTER, 1, PLAN_REQUEUE_RESHARD_NS, HOTHINT_NONE},
        {RDC_MODE_CLUSTER, 0, 0, HOTHINT_NONE},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        CU_ASSERT_EQUAL(hothint_decide(rows[i].mode, rows[i].acted, rows[i].requeue_ns), rows[i].want);
    CU_ASSERT_EQUAL(hothint_of(RDC_MODE_REPLICATION, NULL), HOTHINT_NONE);
    /* the hint outlasts the requeue that renews it, and stays under the wire's bound */
    CU_ASSERT_TRUE(HOTHINT_MS * NS_PER_MS > PLAN_REQUEUE_SWITCHOVER_NS);
    CU_ASSERT_TRUE(HOTHINT_MS <= PROTO_HOT_MAX_MS);
}

static const cu_entry_t tests[] = {
    CU_SUITE("rolling restart"),
    {"render: repl-diskless-sync-delay 0, the user's batching wins", test_render_sync_delay},
    {"cadence: a hint, its bound, its expiry", test_cadence_hint_and_expiry},
    {"cadence: which pod is due for a fast probe", test_cadence_due},
    {"proto: HOT round trip", test_proto_hot_round_trip},
    {"proto: a malformed HOT is refused, named", test_proto_hot_malformed},
    {"hothint: hot, cold or nothing to say", test_hothint_decide},
};

CU_MAIN(tests)
