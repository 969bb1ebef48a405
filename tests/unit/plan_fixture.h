/* plan_fixture: what the tests of plan.h build their inputs from and read their plans
 * with, written once (test_day2, test_knobs, test_scale, test_switchover, test_volume,
 * test_plan_cluster, test_plan, test_tls_acl, test_status_policy).
 *
 *   rc_with(spec)          the RedisCluster "cache" in "default" (uid-1, generation 1, our
 *                          finalizer) with spec, a JSON text; the caller puts it
 *   errors_of(spec)        rdc_spec_validate's joined errors for rc_with(spec) ("" when
 *                          valid); the caller frees
 *   pod_of(row)            a pod "name ip revision ready(1|0) terminating(1|0) label"
 *                          (label "-": none; uid "uid-<name>"); the caller puts it
 *   node_of(row)           an observation node "pod ip role masterHost linkUp(1|0) offset"
 *                          (role "-": unreachable for 60 s, masterHost "-": none); the
 *                          caller puts it
 *   pods_of_rows(rows, n)  an array of pod_of of the n rows (NULL rows skipped)
 *   redis_observation_of(rows, n, observed_at)
 *                          observerd's observation {"nodes": node_of of the n rows (NULL
 *                          rows skipped)}, with observedAt when observed_at is not NULL
 *   plan_observed_of(rc_text, sts_text, pods, obs, now)
 *                          plan_compute_observed of the RedisCluster and StatefulSet
 *                          texts with the pods and the observation (obs may be NULL)
 *                          given, at now; fatal when it gives no plan. Borrows pods and
 *                          obs; the caller destroys the plan
 *   find_action(p, kind, resource)
 *                          the plan's first action of kind on resource (NULL: any), or NULL
 *   status_action(p)       the plan's status write (PLAN_UPDATE_STATUS), or NULL
 *   count_actions(p, kind, resource)
 *                          how many of the plan's actions are of kind on resource (NULL:
 *                          any); count_kind(p, kind) the same of any resource
 *   find_event(p, reason)  the plan's first Event with that reason, or NULL
 *   find_event_in(p, reason, in_message)
 *                          the same, the Event's message also containing in_message
 *                          (NULL: any message)
 *   has_event(p, reason), has_event_in(p, reason, in_message)
 *                          1 when there is such an Event, else 0
 *
 * Rows that do not split into their fields, and JSON that does not parse, are test
 * errors (fatal).
 */
#ifndef RDC_TEST_PLAN_FIXTURE_H
#define RDC_TEST_PLAN_FIXTURE_H

#include "json_at.h"
#include "plan.h"
#include "spec_errors.h"
#include "split_fields.h"
#include "topology.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline json_object *rc_with(const char *spec)
{
    return parsef("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\","
                  "\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1,\"finalizers\":[\"" PLAN_FINALIZER
                  "\"]},\"spec\":%s}",
                  spec);
}

static inline char *errors_of(const char *spec)
{
    json_object *rc = rc_with(spec);
    char *s = spec_errors(rc);
    json_object_put(rc);
    return s;
}

static inline json_object *pod_of(const char *row)
{
    char f[6][64];
    CU_ASSERT_EQUAL_FATAL(split_fields(row, f, 6), 6);
    int labelled = strcmp(f[5], "-") != 0;
    return parsef(
        "{\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\",\"labels\":{\"controller-revision-hash\":\"%s\"%s%s%s}%s},"
        "\"status\":{\"podIP\":\"%s\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
        f[0], f[0], f[2], labelled ? ",\"" TOPO_ROLE_LABEL "\":\"" : "", labelled ? f[5] : "", labelled ? "\"" : "",
        !strcmp(f[4], "1") ? ",\"deletionTimestamp\":\"2024-05-01T12:00:00Z\"" : "", f[1],
        !strcmp(f[3], "1") ? "True" : "False");
}

static inline json_object *node_of(const char *row)
{
    char f[6][64];
    CU_ASSERT_EQUAL_FATAL(split_fields(row, f, 6), 6);
    int up = strcmp(f[2], "-") != 0;
    return parsef("{\"pod\":\"%s\",\"ip\":\"%s\",\"reachable\":%s,\"role\":\"%s\",\"masterHost\":\"%s\","
                  "\"masterPort\":6379,\"linkUp\":%s,\"offset\":%s,\"downSinceMs\":%s,\"lastOkAgoMs\":%s}",
                  f[0], f[1], up ? "true" : "false", up ? f[2] : "", strcmp(f[3], "-") ? f[3] : "",
                  !strcmp(f[4], "1") ? "true" : "false", f[5], up ? "0" : "60000", up ? "0" : "60000");
}

static inline json_object *pods_of_rows(const char *const *rows, size_t n)
{
    json_object *pods = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        if (rows[i])
            json_object_array_add(pods, pod_of(rows[i]));
    return pods;
}

static inline json_object *redis_observation_of(const char *const *rows, size_t n, const char *observed_at)
{
    json_object *obs = json_object_new_object(), *nodes = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        if (rows[i])
            json_object_array_add(nodes, node_of(rows[i]));
    json_object_object_add(obs, "nodes", nodes);
    if (observed_at)
        json_object_object_add(obs, "observedAt", json_object_new_string(observed_at));
    return obs;
}

static inline plan_t *plan_observed_of(const char *rc_text, const char *sts_text, const json_object *pods,
                                       const json_object *obs, int64_t now)
{
    json_object *rc = parse(rc_text), *sts = parse(sts_text);
    plan_observed_t more = {0};
    more.members = pods;
    more.redis = obs;
    plan_t *p = plan_compute_observed(rc, NULL, NULL, sts, &more, now);
    PUT_EACH(rc, sts);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static inline const plan_action_t *find_action(const plan_t *p, plan_action_kind_t kind, const char *resource)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == kind && (!resource || (a->resource && !strcmp(a->resource, resource))))
            return a;
    }
    return NULL;
}

static inline const plan_action_t *status_action(const plan_t *p)
{
    return find_action(p, PLAN_UPDATE_STATUS, NULL);
}

static inline size_t count_actions(const plan_t *p, plan_action_kind_t kind, const char *resource)
{
    size_t n = 0;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        n += a->kind == kind && (!resource || (a->resource && !strcmp(a->resource, resource)));
    }
    return n;
}

static inline size_t count_kind(const plan_t *p, plan_action_kind_t kind)
{
    return count_actions(p, kind, NULL);
}

static inline const plan_event_t *find_event_in(const plan_t *p, const char *reason, const char *in_message)
{
    for (size_t i = 0; i < plan_event_count(p); i++) {
        const plan_event_t *e = plan_event(p, i);
        if (!strcmp(e->reason, reason) && (!in_message || strstr(e->message, in_message)))
            return e;
    }
    return NULL;
}

static inline const plan_event_t *find_event(const plan_t *p, const char *reason)
{
    return find_event_in(p, reason, NULL);
}

static inline int has_event_in(const plan_t *p, const char *reason, const char *in_message)
{
    return find_event_in(p, reason, in_message) != NULL;
}

static inline int has_event(const plan_t *p, const char *reason)
{
    return find_event(p, reason) != NULL;
}

#endif
