/* Unit tests of the Event builder. */
#include "cu_table.h"
#include "event.h"

#include "clock.h"
#include "jsonx.h"

#include <CUnit/CUnit.h>
#include <string.h>

static void test_build(void)
{
    json_object *rc = json_tokener_parse(
        "{\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"RedisCluster\","
        "\"metadata\":{\"name\":\"cache\",\"namespace\":\"ns\",\"uid\":\"u-1\",\"resourceVersion\":\"42\"}}");
    event_spec_t s = {0};
    event_involve(&s, rc);
    s.type = "Warning";
    s.reason = "ReconcileCrashed";
    s.message = "quote \" and \\ and \n newline";
    s.action = "Reconcile";
    int64_t t = INT64_C(1764590400) * NS_PER_SEC + 123456789;
    json_object *ev = event_build(&s, t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    CU_ASSERT_STRING_EQUAL(jsonx_str(ev, "kind"), "Event");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(ev, "metadata", "generateName"), "cache.");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(ev, "metadata", "namespace"), "ns");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(ev, "involvedObject", "apiVersion"), "cache.example.com/v1alpha1");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(ev, "involvedObject", "kind"), "RedisCluster");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(ev, "involvedObject", "uid"), "u-1");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(ev, "involvedObject", "resourceVersion"), "42");
    CU_ASSERT_STRING_EQUAL(jsonx_str(ev, "message"), s.message); /* escaped, not broken */
    CU_ASSERT_STRING_EQUAL(jsonx_str(ev, "firstTimestamp"), "2025-12-01T12:00:00Z");
    CU_ASSERT_STRING_EQUAL(jsonx_str(ev, "lastTimestamp"), "2025-12-01T12:00:00Z");
    CU_ASSERT_STRING_EQUAL(jsonx_str(ev, "eventTime"), "2025-12-01T12:00:00.123456Z");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(ev, "source", "component"), EVENT_COMPONENT);
    CU_ASSERT_STRING_EQUAL(jsonx_str(ev, "reportingInstance"), "unknown");
    int64_t count = 0;
    CU_ASSERT_EQUAL(jsonx_int(ev, "count", &count), 0);
    CU_ASSERT_EQUAL(count, 1);
    /* Same input, same output. */
    json_object *again = event_build(&s, t);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string(ev), json_object_to_json_string(again));
    json_object_put(again);
    json_object_put(ev);
    /* A reconciler's Event: the RedisCluster as the operator addresses it, whatever
     * version it was read in. */
    event_spec_t c = event_about_cluster(rc, "Normal", "Created", NULL, "host-1");
    CU_ASSERT_STRING_EQUAL(c.api_version, "cache.example.com/v1");
    CU_ASSERT_STRING_EQUAL(c.kind, "RedisCluster");
    CU_ASSERT_STRING_EQUAL(c.name, "cache");
    CU_ASSERT_STRING_EQUAL(c.uid, "u-1");
    CU_ASSERT_STRING_EQUAL(c.message, "");
    CU_ASSERT_STRING_EQUAL(c.action, "Reconcile");
    CU_ASSERT_STRING_EQUAL(c.instance, "host-1");
    json_object_put(rc);
}

static void test_refusals_and_cut(void)
{
    event_spec_t s = {.name = "x", .ns = "ns", .type = "Normal", .reason = "Created"};
    json_object *ev = event_build(&s, 0);
    CU_ASSERT_PTR_NOT_NULL(ev);
    CU_ASSERT_PTR_NULL(JSONX_AT(ev, "involvedObject", "uid"));
    /* eventTime is set, so the API server requires action and reportingInstance. */
    CU_ASSERT_STRING_EQUAL(jsonx_str(ev, "action"), "Reconcile");
    CU_ASSERT_STRING_EQUAL(jsonx_str(ev, "reportingInstance"), "unknown");
    json_object_put(ev);
    event_spec_t no_ns = {.name = "x", .type = "Normal", .reason = "Created"};
    CU_ASSERT_PTR_NULL(event_build(&no_ns, 0));
    event_spec_t no_reason = {.name = "x", .ns = "ns", .type = "Normal"};
    CU_ASSERT_PTR_NULL(event_build(&no_reason, 0));
    /* A long message is cut to the API's limit on a character boundary. */
    char msg[3000];
    memset(msg, 'a', sizeof(msg));
    memcpy(msg + EVENT_MESSAGE_MAX - 1, "\xc3\xa9", 2); /* é across the limit */
    msg[sizeof(msg) - 1] = '\0';
    s.message = msg;
    ev = event_build(&s, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    CU_ASSERT_EQUAL(strlen(jsonx_str(ev, "message")), EVENT_MESSAGE_MAX - 1);
    json_object_put(ev);
}

static const cu_entry_t tests[] = {
    CU_SUITE("event"),
    {"an Event from an object", test_build},
    {"refusals and the message cut", test_refusals_and_cut},
};

CU_MAIN(tests)
