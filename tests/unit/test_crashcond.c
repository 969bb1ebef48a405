/* Unit tests of the ReconcileCrashed condition: reading it back (so a restarted informerd
 * restores the quarantine for the rest of its window, and only then) and the apply body. */
#include "clock.h"
#include "crashcond.h"
#include "cu_table.h"
#include "json_at.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 (INT64_C(1714564800) * NS_PER_SEC) /* 2024-05-01T12:00:00Z */
#define HOUR (INT64_C(3600) * NS_PER_SEC)

/* A RedisCluster at generation gen whose status carries conds (a JSON array text). */
static json_object *rc_with(int64_t gen, const char *conds)
{
    return parsef("{\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"RedisCluster\","
                  "\"metadata\":{\"name\":\"cache\",\"namespace\":\"team-a\",\"generation\":%lld},"
                  "\"spec\":{\"size\":1,\"image\":\"redis\"},\"status\":{\"phase\":\"Pending\",\"conditions\":%s}}",
                  (long long)gen, conds);
}

#define CRASHED_AT_12_GEN_4                                                                                        \
    "[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Creating\"},"                                     \
    "{\"type\":\"ReconcileCrashed\",\"status\":\"True\",\"reason\":\"WorkerCrashed\","                        \
    "\"lastTransitionTime\":\"2024-05-01T12:00:00Z\",\"observedGeneration\":4}]"

static void test_is_true(void)
{
    int64_t since = -1, gen = -7;
    json_object *rc = rc_with(4, CRASHED_AT_12_GEN_4);
    CU_ASSERT_EQUAL(crashcond_is_true(rc, &since, &gen), 1);
    CU_ASSERT_EQUAL(since, T0);
    CU_ASSERT_EQUAL(gen, 4);
    CU_ASSERT_EQUAL(crashcond_is_true(rc, NULL, NULL), 1);
    json_object_put(rc);

    static const char *const not_true[] = {
        "[]",
        "null",
        "{}",
        "[{\"type\":\"Ready\",\"status\":\"True\"}]",
        "[{\"type\":\"ReconcileCrashed\",\"status\":\"False\",\"reason\":\"ReconcileCompleted\"}]",
        "[{\"type\":\"ReconcileCrashed\",\"status\":true}]",
        "[{\"type\":\"ReconcileCrashed\"}]",
        "[\"ReconcileCrashed\", 7, null]",
    };
    for (size_t i = 0; i < sizeof(not_true) / sizeof(not_true[0]); i++) {
        rc = rc_with(4, not_true[i]);
        CU_ASSERT_EQUAL(crashcond_is_true(rc, &since, &gen), 0);
        json_object_put(rc);
    }
    CU_ASSERT_EQUAL(crashcond_is_true(NULL, NULL, NULL), 0);

    /* True with neither time nor generation: still True, both unknown. */
    rc = rc_with(4, "[{\"type\":\"ReconcileCrashed\",\"status\":\"True\",\"lastTransitionTime\":\"yesterday\"}]");
    CU_ASSERT_EQUAL(crashcond_is_true(rc, &since, &gen), 1);
    CU_ASSERT_EQUAL(since, 0);
    CU_ASSERT_EQUAL(gen, -1);
    json_object_put(rc);
}

static void test_quarantine_left(void)
{
    json_object *rc = rc_with(4, CRASHED_AT_12_GEN_4);
    /* Within the window: what is left of it. */
    CU_ASSERT_EQUAL(crashcond_quarantine_left_ns(rc, T0, HOUR), HOUR);
    CU_ASSERT_EQUAL(crashcond_quarantine_left_ns(rc, T0 + 10 * 60 * NS_PER_SEC, HOUR), 50 * 60 * NS_PER_SEC);
    CU_ASSERT_EQUAL(crashcond_quarantine_left_ns(rc, T0 + HOUR - 1, HOUR), 1);
    /* Over. */
    CU_ASSERT_EQUAL(crashcond_quarantine_left_ns(rc, T0 + HOUR, HOUR), 0);
    CU_ASSERT_EQUAL(crashcond_quarantine_left_ns(rc, T0 + 5 * HOUR, HOUR), 0);
    /* A transition time in the future (clock skew between replicas) never stretches the
     * quarantine past one window. */
    CU_ASSERT_EQUAL(crashcond_quarantine_left_ns(rc, T0 - 2 * HOUR, HOUR), HOUR);
    json_object_put(rc);

    /* The spec changed since the crashes: no quarantine. */
    rc = rc_with(5, CRASHED_AT_12_GEN_4);
    CU_ASSERT_EQUAL(crashcond_quarantine_left_ns(rc, T0, HOUR), 0);
    json_object_put(rc);

    /* Cleared, or incomplete: no quarantine. */
    static const char *const none[] = {
        "[{\"type\":\"ReconcileCrashed\",\"status\":\"False\",\"lastTransitionTime\":\"2024-05-01T12:00:00Z\","
        "\"observedGeneration\":4}]",
        "[{\"type\":\"ReconcileCrashed\",\"status\":\"True\",\"observedGeneration\":4}]",
        "[{\"type\":\"ReconcileCrashed\",\"status\":\"True\",\"lastTransitionTime\":\"2024-05-01T12:00:00Z\"}]",
        "[{\"type\":\"ReconcileCrashed\",\"status\":\"True\",\"lastTransitionTime\":\"2024-05-01T12:00:00Z\","
        "\"observedGeneration\":\"4\"}]",
    };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        rc = rc_with(4, none[i]);
        CU_ASSERT_EQUAL(crashcond_quarantine_left_ns(rc, T0, HOUR), 0);
        json_object_put(rc);
    }
}

static void test_apply_body(void)
{
    json_object *rc = rc_with(4, "[]");
    char *s = crashcond_apply_body(rc, 1, "crashed \"3\" times", T0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    json_object *b = json_tokener_parse(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    /* The body read back is a condition crashcond_is_true sees, restoring a full window. */
    int64_t since = 0, gen = 0;
    CU_ASSERT_EQUAL(crashcond_is_true(b, &since, &gen), 1);
    CU_ASSERT_EQUAL(since, T0);
    CU_ASSERT_EQUAL(gen, 4);
    json_object *c = json_object_array_get_idx(
        json_object_object_get(json_object_object_get(b, "status"), "conditions"), 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(c, "reason")), "WorkerCrashed");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(c, "message")), "crashed \"3\" times");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(b, "kind")), "RedisCluster");
    json_object *md = json_object_object_get(b, "metadata");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(md, "name")), "cache");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(md, "namespace")), "team-a");
    /* Only the condition: the apply must not touch the worker's phase or other fields. */
    CU_ASSERT_EQUAL(json_object_object_length(json_object_object_get(b, "status")), 1);
    CU_ASSERT_PTR_NULL(json_object_object_get(b, "spec"));
    json_object_put(b);
    free(s);

    s = crashcond_apply_body(rc, 0, "ok", T0 + HOUR);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    b = json_tokener_parse(s);
    CU_ASSERT_EQUAL(crashcond_is_true(b, NULL, NULL), 0);
    c = json_object_array_get_idx(json_object_object_get(json_object_object_get(b, "status"), "conditions"), 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(c, "status")), "False");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(c, "reason")), "ReconcileCompleted");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(c, "lastTransitionTime")),
                           "2024-05-01T13:00:00Z");
    json_object_put(b);
    free(s);
    json_object_put(rc);

    /* Without a name or namespace there is nothing to address. */
    rc = json_tokener_parse("{\"metadata\":{\"name\":\"cache\"}}");
    CU_ASSERT_PTR_NULL(crashcond_apply_body(rc, 1, "x", T0));
    json_object_put(rc);
    rc = json_tokener_parse("{\"metadata\":{\"name\":7,\"namespace\":\"a\"}}");
    CU_ASSERT_PTR_NULL(crashcond_apply_body(rc, 1, "x", T0));
    json_object_put(rc);
    /* Without a generation the condition has no observedGeneration (and so restores none). */
    rc = json_tokener_parse("{\"metadata\":{\"name\":\"cache\",\"namespace\":\"a\"}}");
    s = crashcond_apply_body(rc, 1, NULL, T0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NULL(strstr(s, "observedGeneration"));
    free(s);
    json_object_put(rc);
}

static const cu_entry_t tests[] = {
    CU_SUITE("crashcond"),
    {"is_true reads only a True ReconcileCrashed", test_is_true},
    {"quarantine left: window, generation, skew", test_quarantine_left},
    {"apply body round trip", test_apply_body},
};

CU_MAIN(tests)
