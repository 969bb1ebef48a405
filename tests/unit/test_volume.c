/* VOLUME EXPANSION (plan.h, workerd/plan_volume.h, docs/knobs.md "Growing the volumes"):
 * spec.storage.size grows. The plan, step by step over the observed states: the claims
 * read first; each claim that asks less patched, then the StatefulSet deleted with its
 * pods orphaned (preconditions uid and resourceVersion); created again with the new
 * claim template once absent; Progressing=True VolumeResizing until every claim reports
 * the new capacity; a StatefulSet being deleted waited for; and which template changes
 * are a growth (the same class, a larger request) and which stay ImmutableFieldChanged.
 *
 * Invariant under test: the StatefulSet is deleted only with propagationPolicy Orphan, in
 * a plan whose claim patches come first, so no pod is deleted and a refused patch (a class
 * without expansion) stops the plan before the StatefulSet goes. */
#include "cu_table.h"
#include "jsonx.h"
#include "plan.h"
#include "plan_fixture.h"
#include "plan_volume.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#define NOW (INT64_C(1714564800) * 1000000000)

#define RC_JSON(size, status)                                                                                \
    "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","                                   \
    "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"rc-uid\",\"resourceVersion\":\"77\","      \
    "\"generation\":2,\"finalizers\":[\"" PLAN_FINALIZER "\"]},"                                             \
    "\"spec\":{\"size\":3,\"image\":\"redis\",\"version\":\"7.2\",\"mode\":\"Standalone\","                 \
    "\"storage\":{\"size\":\"" size "\"}},\"status\":" status "}"

#define RESIZING "{\"conditions\":[{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"VolumeResizing\"}]}"

/* The StatefulSet of c with the claim template "data" at size; terminating when dying. */
static json_object *sts_of(const char *size, int dying)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\","
             "\"uid\":\"sts-uid\",\"resourceVersion\":\"55\"%s,"
             "\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"name\":\"c\","
             "\"uid\":\"rc-uid\",\"controller\":true}]},\"spec\":{\"replicas\":3,\"serviceName\":\"c\","
             "\"selector\":{\"matchLabels\":{\"app.kubernetes.io/name\":\"redis\","
             "\"app.kubernetes.io/instance\":\"c\"}},"
             "\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"data\"},"
             "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
             "\"resources\":{\"requests\":{\"storage\":\"%s\"}}}}]},"
             "\"status\":{\"replicas\":3,\"readyReplicas\":3,\"currentRevision\":\"r1\",\"updateRevision\":\"r1\"}}",
             dying ? ",\"deletionTimestamp\":\"2024-05-01T11:59:00Z\"" : "", size);
    json_object *o = json_tokener_parse(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

/* A list answer of the claims data-c-0..2, each "request/capacity" in specs. */
static json_object *claims_of(const char *const specs[3])
{
    json_object *items = json_object_new_array();
    for (int i = 0; i < 3; i++) {
        char req[32], cap[32], text[512];
        size_t l = strcspn(specs[i], "/");
        snprintf(req, sizeof(req), "%.*s", (int)l, specs[i]);
        snprintf(cap, sizeof(cap), "%s", specs[i] + l + (specs[i][l] ? 1 : 0));
        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"data-c-%d\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"%s\"}}},"
                 "\"status\":{\"phase\":\"Bound\",\"capacity\":{\"storage\":\"%s\"}}}",
                 i, req, cap);
        json_object_array_add(items, json_tokener_parse(text));
    }
    json_object *list = json_object_new_object();
    json_object_object_add(list, "items", items);
    return list;
}

static plan_t *plan_of(const char *rc_text, json_object *sts, json_object *claims)
{
    json_object *rc = json_tokener_parse(rc_text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rc);
    plan_observed_t more = {.claims = claims};
    plan_t *p = plan_compute_observed(rc, NULL, NULL, sts, &more, NOW);
    json_object_put(rc);
    json_object_put(sts);
    json_object_put(claims);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static const json_object *cond_of(const plan_t *p, const char *type)
{
    const json_object *conds = jsonx_get(plan_status(p), "conditions");
    for (size_t i = 0; i < jsonx_len(conds); i++)
        if (jsonx_str_is(json_object_array_get_idx(conds, i), "type", type))
            return json_object_array_get_idx(conds, i);
    return NULL;
}

static const char *progressing(const plan_t *p, const char *key)
{
    return jsonx_str(cond_of(p, "Progressing"), key);
}

/* 1Gi -> 2Gi: the claims are read first (nothing written for them yet). */
static void test_claims_read_first(void)
{
    plan_t *p = plan_of(RC_JSON("2Gi", "{}"), sts_of("1Gi", 0), NULL);
    CU_ASSERT_TRUE(plan_wants_claims(p));
    CU_ASSERT_EQUAL(count_actions(p, PLAN_RESIZE_CLAIM, "persistentvolumeclaims"), 0);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_DELETE, "statefulsets"), 0);
    CU_ASSERT_STRING_EQUAL(progressing(p, "reason"), "VolumeResizing");
    CU_ASSERT_STRING_EQUAL(jsonx_str(cond_of(p, "Degraded"), "reason"), "AsExpected");
    CU_ASSERT_TRUE(plan_requeue_after_ns(p) > 0);
    plan_destroy(&p);
    /* An unchanged size reads nothing. */
    p = plan_of(RC_JSON("1Gi", "{}"), sts_of("1Gi", 0), NULL);
    CU_ASSERT_FALSE(plan_wants_claims(p));
    plan_destroy(&p);
}

/* With the claims: each patched (merge patch of the request), then the StatefulSet
 * deleted with Orphan and its preconditions, event ResizingVolumes. */
static void test_claims_patched_then_orphaned(void)
{
    static const char *const claims[3] = {"1Gi/1Gi", "2Gi/1Gi", "1Gi/1Gi"}; /* c-1's patched already */
    plan_t *p = plan_of(RC_JSON("2Gi", "{}"), sts_of("1Gi", 0), claims_of(claims));
    CU_ASSERT_FALSE(plan_wants_claims(p));
    size_t del = plan_action_count(p), last_patch = 0, patches = 0;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_RESIZE_CLAIM) {
            patches++;
            last_patch = i;
            CU_ASSERT_STRING_EQUAL(a->method, "PATCH");
            CU_ASSERT_STRING_EQUAL(a->content_type, "application/merge-patch+json");
            CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(a->body, "spec", "resources", "requests", "storage"), "2Gi");
            CU_ASSERT(!strcmp(a->path, "/api/v1/namespaces/ns/persistentvolumeclaims/data-c-0") ||
                      !strcmp(a->path, "/api/v1/namespaces/ns/persistentvolumeclaims/data-c-2"));
        }
        if (a->kind == PLAN_DELETE && !strcmp(a->resource, "statefulsets")) {
            del = i;
            CU_ASSERT_STRING_EQUAL(a->path, "/apis/apps/v1/namespaces/ns/statefulsets/c");
            CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(a->body, "propagationPolicy"), "Orphan");
            CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(a->body, "preconditions", "uid"), "sts-uid");
            CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(a->body, "preconditions", "resourceVersion"), "55");
        }
    }
    CU_ASSERT_EQUAL(patches, 2);
    CU_ASSERT_FATAL(del < plan_action_count(p));
    CU_ASSERT_TRUE(last_patch < del);
    CU_ASSERT_TRUE(has_event(p, "ResizingVolumes"));
    /* The StatefulSet's apply (if any) keeps the observed claim template: no other delete kind. */
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_APPLY && !strcmp(a->resource, "statefulsets"))
            CU_ASSERT_STRING_EQUAL(
                JSONX_STR_AT(json_object_array_get_idx(JSONX_AT(a->body, "spec", "volumeClaimTemplates"), 0), "spec",
                             "resources", "requests", "storage"),
                "1Gi");
        CU_ASSERT_NOT_EQUAL(a->kind == PLAN_DELETE && strcmp(a->resource, "statefulsets"), 1);
    }
    CU_ASSERT_STRING_EQUAL(progressing(p, "reason"), "VolumeResizing");
    CU_ASSERT_PTR_NOT_NULL(strstr(progressing(p, "message"), "0/3 claims at 2Gi"));
    plan_destroy(&p);
}

/* Being deleted (the orphaning under way): nothing more is deleted; the claims that
 * still ask less are patched. */
static void test_terminating_statefulset_waited_for(void)
{
    static const char *const claims[3] = {"2Gi/1Gi", "2Gi/1Gi", "2Gi/1Gi"};
    plan_t *p = plan_of(RC_JSON("2Gi", "{}"), sts_of("1Gi", 1), claims_of(claims));
    CU_ASSERT_EQUAL(count_actions(p, PLAN_DELETE, "statefulsets"), 0);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_RESIZE_CLAIM, "persistentvolumeclaims"), 0);
    CU_ASSERT_STRING_EQUAL(progressing(p, "reason"), "VolumeResizing");
    plan_destroy(&p);
}

/* Gone: created again with the new claim template. */
static void test_created_with_new_template(void)
{
    plan_t *p = plan_of(RC_JSON("2Gi", RESIZING), NULL, NULL);
    const plan_action_t *c = NULL;
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == PLAN_CREATE && !strcmp(plan_action(p, i)->resource, "statefulsets"))
            c = plan_action(p, i);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(
        JSONX_STR_AT(json_object_array_get_idx(JSONX_AT(c->body, "spec", "volumeClaimTemplates"), 0), "spec",
                     "resources", "requests", "storage"),
        "2Gi");
    /* The status goes on saying the resize (not Creating), so the next plans look at the claims. */
    CU_ASSERT_STRING_EQUAL(progressing(p, "reason"), "VolumeResizing");
    CU_ASSERT_PTR_NOT_NULL(strstr(progressing(p, "message"), "creating StatefulSet ns/c again"));
    plan_destroy(&p);
}

/* The new StatefulSet: VolumeResizing until every claim reports the capacity; no writes
 * but the status. */
static void test_status_until_capacity(void)
{
    static const char *const part[3] = {"2Gi/2Gi", "2Gi/2048Mi", "2Gi/1Gi"};
    plan_t *p = plan_of(RC_JSON("2Gi", RESIZING), sts_of("2Gi", 0), NULL);
    CU_ASSERT_TRUE(plan_wants_claims(p)); /* the status says resizing: look */
    plan_destroy(&p);
    p = plan_of(RC_JSON("2Gi", RESIZING), sts_of("2Gi", 0), claims_of(part));
    CU_ASSERT_EQUAL(count_actions(p, PLAN_RESIZE_CLAIM, "persistentvolumeclaims"), 0);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_DELETE, "statefulsets"), 0);
    CU_ASSERT_STRING_EQUAL(progressing(p, "reason"), "VolumeResizing");
    CU_ASSERT_STRING_EQUAL(progressing(p, "message"), "2/3 claims at 2Gi; waiting for the capacity of data-c-2");
    CU_ASSERT_TRUE(plan_requeue_after_ns(p) > 0);
    plan_destroy(&p);
    static const char *const done[3] = {"2Gi/2Gi", "2Gi/2Gi", "2Gi/3Gi"};
    p = plan_of(RC_JSON("2Gi", RESIZING), sts_of("2Gi", 0), claims_of(done));
    CU_ASSERT_STRING_NOT_EQUAL(progressing(p, "reason"), "VolumeResizing");
    plan_destroy(&p);
}

/* Which template changes are a growth. */
static void test_grows_table(void)
{
    static const struct {
        const char *d, *o; /* the template's spec: request, then any class */
        int grows;
    } rows[] = {
        {"{\"storage\":\"2Gi\"}}", "{\"storage\":\"1Gi\"}}", 1},
        {"{\"storage\":\"1Gi\"}}", "{\"storage\":\"1024Mi\"}}", 0},
        {"{\"storage\":\"512Mi\"}}", "{\"storage\":\"1Gi\"}}", 0},
        {"{\"storage\":\"2Gi\"}},\"storageClassName\":\"fast\"", "{\"storage\":\"1Gi\"}},\"storageClassName\":\"fast\"",
         1},
        {"{\"storage\":\"2Gi\"}},\"storageClassName\":\"fast\"", "{\"storage\":\"1Gi\"}}", 0},
        {"{\"storage\":\"2Gi\"}}", "{\"storage\":\"x\"}}", 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char d[512], o[512];
        snprintf(d, sizeof(d), "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":{\"requests\":%s}}]",
                 rows[i].d);
        snprintf(o, sizeof(o), "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":{\"requests\":%s}}]",
                 rows[i].o);
        json_object *dj = json_tokener_parse(d), *oj = json_tokener_parse(o);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dj);
        CU_ASSERT_PTR_NOT_NULL_FATAL(oj);
        CU_ASSERT_EQUAL(plan_volume_grows(dj, oj), rows[i].grows);
        json_object_put(dj);
        json_object_put(oj);
    }
    CU_ASSERT_FALSE(plan_volume_grows(NULL, NULL));
}

static const cu_entry_t tests[] = {
    CU_SUITE("volume expansion"),
    {"the claims read first", test_claims_read_first},
    {"claims patched, then the StatefulSet deleted with Orphan", test_claims_patched_then_orphaned},
    {"a StatefulSet being deleted is waited for", test_terminating_statefulset_waited_for},
    {"created again with the new claim template", test_created_with_new_template},
    {"VolumeResizing until every claim reports the capacity", test_status_until_capacity},
    {"which template changes are a growth (table)", test_grows_table},
};
CU_MAIN(tests)
