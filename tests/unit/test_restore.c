/* test_restore: restore at creation, spec.restore.from (issue 36; docs/backup.md "Restore
 * at creation").
 *
 *   - rdc_spec's rules, one row a problem, with the message the webhook and workerd give,
 *     and the typed spec they parse into (the region's default);
 *   - the transition rule: immutable, also from unset to set;
 *   - the admission webhook refuses them with those messages;
 *   - render: the restore init container as a table (with and without caSecret and
 *     sha256, persistence aof/rdb/none, appendonly from config.extra), its volumes, and the
 *     operator's image;
 *   - plan: a pod whose restore init container failed is RestoreFailed with rdc-backup's
 *     line; one that completed says nothing.
 */
#include "admission.h"
#include "conversion.h"
#include "cu_table.h"
#include "json_at.h"
#include "plan.h"
#include "plan_fixture.h"
#include "rdc_spec.h"
#include "render.h"
#include "spec_errors.h"
#include "spec_rows.h"
#include "text_assert.h"
#include "v1_only.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T1 INT64_C(1714564800000000000)
#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define FROM "\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"key\":\"prod/cache.rdb\""
#define CREDS "\"credentialsSecret\":\"s3-creds\""
#define RESTORE(from) "\"restore\":{\"from\":{" from "}}"
#define STANDALONE "{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\""

/* ---- rdc_spec's rules ------------------------------------------------------------------ */

static void test_rules(void)
{
    static const spec_row_t rows[] = {
        {RESTORE(FROM "," CREDS), ""},
        {RESTORE(FROM "," CREDS ",\"region\":\"eu-west-1\",\"caSecret\":\"s3-ca\",\"sha256\":\"" SHA "\""), ""},
        {RESTORE("\"endpoint\":\"https://s3.eu-west-1.amazonaws.com/\",\"bucket\":\"b.c-d\",\"key\":\"k\"," CREDS),
         ""},
        {"\"restore\":{}", "spec.restore.from: Required value"},
        {"\"restore\":\"s3://b/k\"", "spec.restore: Invalid value: \"s3://b/k\": must be an object"},
        {RESTORE(CREDS), "spec.restore.from.endpoint: Required value"},
        {RESTORE(FROM), "spec.restore.from.credentialsSecret: Required value"},
        {RESTORE("\"endpoint\":\"\",\"bucket\":\"backups\",\"key\":\"k\"," CREDS),
         "spec.restore.from.endpoint: Required value"},
        {RESTORE("\"endpoint\":\"s3.amazonaws.com\",\"bucket\":\"backups\",\"key\":\"k\"," CREDS),
         "spec.restore.from.endpoint: Invalid value: \"s3.amazonaws.com\": must be http:// or https://"},
        {RESTORE("\"endpoint\":\"http://h/path\",\"bucket\":\"backups\",\"key\":\"k\"," CREDS),
         "spec.restore.from.endpoint: Invalid value: \"http://h/path\""},
        {RESTORE("\"endpoint\":\"http://u@h\",\"bucket\":\"backups\",\"key\":\"k\"," CREDS),
         "spec.restore.from.endpoint: Invalid value"},
        {RESTORE("\"endpoint\":\"http://h\",\"bucket\":\"Backups\",\"key\":\"k\"," CREDS),
         "spec.restore.from.bucket: Invalid value: \"Backups\": must be an S3 bucket name"},
        {RESTORE("\"endpoint\":\"http://h\",\"bucket\":\"b\",\"key\":\"k\"," CREDS),
         "spec.restore.from.bucket: Invalid value: \"b\""},
        {RESTORE("\"endpoint\":\"http://h\",\"bucket\":\"bkt\",\"key\":\"a\\nb\"," CREDS),
         "spec.restore.from.key: Invalid value: \"a\\x0ab\": must be an object key"},
        {RESTORE(FROM "," CREDS ",\"region\":\"EU\""), "spec.restore.from.region: Invalid value: \"EU\""},
        {RESTORE(FROM ",\"credentialsSecret\":\"S3\""),
         "spec.restore.from.credentialsSecret: Invalid value: \"S3\": must be the name of a Secret"},
        {RESTORE(FROM "," CREDS ",\"caSecret\":\"a_b\""), "spec.restore.from.caSecret: Invalid value: \"a_b\""},
        {RESTORE(FROM "," CREDS ",\"sha256\":\"ABC\""),
         "spec.restore.from.sha256: Invalid value: \"ABC\": must be 64 lower-case hex digits"},
        {RESTORE(FROM "," CREDS ",\"sha256\":7"), "spec.restore.from.sha256: Invalid value: 7: must be a string"},
        /* its names, reserved while it is set (and only then) */
        {RESTORE(FROM "," CREDS) ",\"initContainers\":[{\"name\":\"restore\",\"image\":\"busybox\"}]",
         "spec.initContainers[0].name: Forbidden: \"restore\" is the operator's container"},
        {"\"initContainers\":[{\"name\":\"restore\",\"image\":\"busybox\"}]", ""},
        {RESTORE(FROM "," CREDS) ",\"volumes\":[{\"name\":\"restore-credentials\",\"emptyDir\":{}}]",
         "spec.volumes[0].name: Forbidden: \"restore-credentials\" is the operator's volume"},
    };
    check_spec_rows(STANDALONE, rows, sizeof(rows) / sizeof(rows[0]));
}

/* Cluster mode: the bucket/key form refused (one object cannot be every shard's), with
 * the words docs/backup.md uses. */
static void test_not_in_cluster_mode(void)
{
    char *err = errors_of("{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\"," RESTORE(FROM "," CREDS) "}");
    CU_ASSERT_STRING_EQUAL(err, "spec.restore.from: Forbidden: " RDC_SPEC_RESTORE_CLUSTER_OBJECT);
    free(err);
}

/* The typed spec: every field, the region's default, nothing without spec.restore. */
static void test_typed(void)
{
    rdc_spec_t s;
    json_object *rc = spec_parsed(STANDALONE "," RESTORE(FROM "," CREDS ",\"sha256\":\"" SHA "\"") "}", &s);
    ASSERT_S3_PLACE(s.restore, "http://127.0.0.1:7070", "backups", RDC_SPEC_DEFAULT_RESTORE_REGION, "s3-creds");
    CU_ASSERT_STRING_EQUAL(s.restore.key, "prod/cache.rdb");
    CU_ASSERT_STRING_EQUAL(s.restore.sha256, SHA);
    json_object_put(rc);
    rc = spec_parsed(STANDALONE "}", &s);
    CU_ASSERT_PTR_NULL(s.restore.endpoint);
    json_object_put(rc);
}

/* Immutable: set, changed, taken out, added later: each Forbidden; the same spec passes. */
static void test_immutable(void)
{
    static const struct {
        const char *old_fields, *new_fields;
        int refused;
    } rows[] = {
        {RESTORE(FROM "," CREDS), RESTORE(FROM "," CREDS), 0},
        {"\"persistence\":\"aof\"", "\"persistence\":\"rdb\"", 0},
        {RESTORE(FROM "," CREDS), RESTORE(FROM ",\"credentialsSecret\":\"other\""), 1},
        {RESTORE(FROM "," CREDS), "\"persistence\":\"aof\"", 1},
        {"\"persistence\":\"aof\"", RESTORE(FROM "," CREDS), 1},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char a[1024], b[1024];
        snprintf(a, sizeof(a), STANDALONE ",%s}", rows[i].old_fields);
        snprintf(b, sizeof(b), STANDALONE ",%s}", rows[i].new_fields);
        json_object *o = rc_with(a), *n = rc_with(b);
        rdc_field_errors_t *e = rdc_field_errors_new();
        CU_ASSERT_EQUAL(rdc_spec_validate_update(o, n, e) > 0, rows[i].refused);
        if (rows[i].refused)
            ASSERT_TEXT_HAS(rdc_field_error_text(e, 0), "spec.restore: Forbidden: is immutable, also from unset "
                                                        "to set: a restore happens only when the RedisCluster is "
                                                        "created");
        rdc_field_errors_destroy(&e);
        PUT_EACH(o, n);
    }
}

/* The webhook says the same (CREATE and UPDATE). */
static void test_webhook(void)
{
    static const review_row_t rows[] = {
        {"CREATE", NULL, "{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\"," RESTORE(FROM "," CREDS) "}",
         "spec.restore.from: Forbidden: in Cluster mode must name a RedisBackup (backup)", 403},
        {"CREATE", NULL, STANDALONE "," RESTORE(FROM ",\"credentialsSecret\":\"S3\"") "}",
         "spec.restore.from.credentialsSecret: Invalid value: \"S3\"", 422},
        {"UPDATE", STANDALONE "}", STANDALONE "," RESTORE(FROM "," CREDS) "}",
         "spec.restore: Forbidden: is immutable", 403},
    };
    check_review_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

/* v1-only: gone in v1alpha1 (kept in the annotation), back whole in v1. */
static void test_survives_v1alpha1(void)
{
    json_object *v1 = rc_with(STANDALONE "," RESTORE(FROM "," CREDS ",\"sha256\":\"" SHA "\"") "}");
    json_object *down = V1_ONLY_ROUND_TRIP(v1, "spec restore");
    PUT_EACH(v1, down);
}

/* ---- render ------------------------------------------------------------------------------ */

/* The pod template of a first reconcile of spec, with more (NULL: none). */
static json_object *template_of(const char *spec, const plan_observed_t *more)
{
    json_object *rc = rc_with(spec);
    plan_t *p = plan_compute_children(rc, &(plan_children_t){NULL, NULL, NULL, NULL}, more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    json_object *tmpl = NULL;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->resource && !strcmp(a->resource, "statefulsets"))
            tmpl = json_object_get(at(a->body, "spec template spec"));
    }
    plan_destroy(&p);
    json_object_put(rc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmpl);
    return tmpl;
}

#define ARGS_BASE                                                                                                  \
    RENDER_RESTORE_BIN " restore --to " RENDER_RESTORE_DATA_DIR "/dump.rdb --endpoint http://127.0.0.1:7070 "     \
                       "--bucket backups --key prod/cache.rdb --region us-east-1 --credentials-dir "             \
                       RENDER_RESTORE_CREDENTIALS_DIR

static void test_render_table(void)
{
    static const struct {
        const char *name, *fields, *command, *volumes;
    } rows[] = {
        {"aof (the default): --aof", RESTORE(FROM "," CREDS), ARGS_BASE " --aof", "restore-credentials"},
        {"rdb: dump.rdb", "\"persistence\":\"rdb\"," RESTORE(FROM "," CREDS), ARGS_BASE, "restore-credentials"},
        {"none: dump.rdb", "\"persistence\":\"none\"," RESTORE(FROM "," CREDS), ARGS_BASE, "restore-credentials"},
        {"config.extra appendonly no (persistence unset): dump.rdb",
         "\"config\":{\"extra\":{\"appendonly\":\"no\"}}," RESTORE(FROM "," CREDS), ARGS_BASE,
         "restore-credentials"},
        {"caSecret and sha256, region",
         "\"persistence\":\"rdb\"," RESTORE(FROM "," CREDS ",\"region\":\"eu-west-1\",\"caSecret\":\"s3-ca\","
                                                           "\"sha256\":\"" SHA "\""),
         RENDER_RESTORE_BIN " restore --to " RENDER_RESTORE_DATA_DIR "/dump.rdb --endpoint http://127.0.0.1:7070 "
                            "--bucket backups --key prod/cache.rdb --region eu-west-1 --credentials-dir "
                            RENDER_RESTORE_CREDENTIALS_DIR " --s3-ca-file " RENDER_RESTORE_CA_DIR
                            "/ca.crt --expect-sha256 " SHA,
         "restore-credentials,restore-ca"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char spec[2048], line[2048], vols[256] = "";
        snprintf(spec, sizeof(spec), STANDALONE ",%s}", rows[i].fields);
        json_object *pod = template_of(spec, NULL);
        const json_object *c = at(pod, "initContainers 0");
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        strs_line(at(c, "command"), line, sizeof(line));
        if (strcmp(line, rows[i].command))
            fprintf(stderr, "\n  row \"%s\": %s\n", rows[i].name, line);
        CU_ASSERT_STRING_EQUAL(line, rows[i].command);
        ASSERT_STRS_AT(c, {"name", RENDER_RESTORE_CONTAINER}, {"image", RENDER_OPERATOR_IMAGE_DEFAULT},
                       {"terminationMessagePolicy", "FallbackToLogsOnError"},
                       {"volumeMounts 0 name", "data"}, {"volumeMounts 0 mountPath", RENDER_RESTORE_DATA_DIR},
                       {"volumeMounts 1 name", RENDER_RESTORE_CREDENTIALS_VOLUME},
                       {"volumeMounts 1 mountPath", RENDER_RESTORE_CREDENTIALS_DIR},
                       {"securityContext capabilities drop 0", "ALL"});
        CU_ASSERT_TRUE(json_object_get_boolean(at(c, "volumeMounts 1 readOnly")));
        /* the Secrets' volumes, after the operator's config volume */
        const json_object *vl = at(pod, "volumes");
        for (size_t k = 0; k < jsonx_len(vl); k++) {
            const char *n = str_at(json_object_array_get_idx(vl, k), "name");
            if (!strncmp(n, "restore-", 8))
                snprintf(vols + strlen(vols), sizeof(vols) - strlen(vols), "%s%s", *vols ? "," : "", n);
        }
        CU_ASSERT_STRING_EQUAL(vols, rows[i].volumes);
        ASSERT_STRS_AT(pod, {"volumes 1 secret secretName", "s3-creds"},
                       {"volumes 1 secret items 0 key", "access-key-id"},
                       {"volumes 1 secret items 1 key", "secret-access-key"});
        json_object_put(pod);
    }
}

/* The operator's image from workerd (--operator-image), the user's init containers after
 * restore, none without spec.restore. */
static void test_render_image_and_order(void)
{
    plan_observed_t more = {.operator_image = "registry.example.com/rdc/operator:1.2.3"};
    json_object *pod =
        template_of(STANDALONE "," RESTORE(FROM "," CREDS) ",\"initContainers\":[{\"name\":\"prep\",\"image\":"
                               "\"busybox\",\"command\":[\"true\"]}]}",
                    &more);
    ASSERT_STRS_AT(pod, {"initContainers 0 name", "restore"},
                   {"initContainers 0 image", "registry.example.com/rdc/operator:1.2.3"},
                   {"initContainers 1 name", "prep"});
    CU_ASSERT_EQUAL(jsonx_len(at(pod, "initContainers")), 2);
    json_object_put(pod);
    pod = template_of(STANDALONE "}", NULL);
    CU_ASSERT_PTR_NULL(at(pod, "initContainers"));
    json_object_put(pod);
}

/* ---- diagnosis ----------------------------------------------------------------------------- */

#define STS_OURS                                                                                                   \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"cache\",\"namespace\":"        \
    "\"default\",\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","        \
    "\"name\":\"cache\",\"uid\":\"uid-1\",\"controller\":true}]},\"spec\":{\"replicas\":1},"                       \
    "\"status\":{\"replicas\":1,\"readyReplicas\":0}}"
#define LINE "rdc-backup restore: GetObject backups/prod/cache.rdb: SHA-256 of the 89 bytes is 08c8, want 43de"
#define POD_INIT(init)                                                                                             \
    "[{\"metadata\":{\"name\":\"cache-0\",\"creationTimestamp\":\"2024-05-01T11:00:00Z\"},\"status\":{"           \
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],\"initContainerStatuses\":[" init "],"             \
    "\"containerStatuses\":[{\"name\":\"redis\",\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}}]}}]"

/* The Ready condition the plan writes, or NULL. */
static const json_object *ready_of(const plan_t *p)
{
    const plan_action_t *a = status_action(p);
    const json_object *conds = a ? at(a->body, "status conditions") : NULL;
    for (size_t i = 0; i < jsonx_len(conds); i++)
        if (!strcmp(str_at(json_object_array_get_idx(conds, i), "type"), "Ready"))
            return json_object_array_get_idx(conds, i);
    return NULL;
}

static void test_diagnosis(void)
{
    static const struct {
        const char *name, *init, *reason, *message;
    } rows[] = {
        {"waiting to run again: the last run's line", "{\"name\":\"restore\",\"restartCount\":1,\"state\":{"
         "\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off 10s\"}},\"lastState\":{"
         "\"terminated\":{\"exitCode\":1,\"reason\":\"Error\",\"message\":\"" LINE "\"}}}",
         "RestoreFailed", "pod default/cache-0: the restore from spec.restore.from failed (exit code 1): " LINE},
        {"just failed (restartPolicy Never's shape)", "{\"name\":\"restore\",\"state\":{\"terminated\":{"
         "\"exitCode\":1,\"reason\":\"Error\",\"message\":\"" LINE "\"}}}",
         "RestoreFailed", LINE},
        {"no message: where to look", "{\"name\":\"restore\",\"state\":{\"terminated\":{\"exitCode\":2}}}",
         "RestoreFailed", "(exit code 2): (no message: see kubectl logs -c restore)"},
        {"completed: not a cause", "{\"name\":\"restore\",\"state\":{\"terminated\":{\"exitCode\":0,"
         "\"reason\":\"Completed\"}}}", NULL, NULL},
        {"running the first time: not a cause", "{\"name\":\"restore\",\"state\":{\"running\":{}}}", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *rc = rc_with(STANDALONE "," RESTORE(FROM "," CREDS) "}"), *sts = parse(STS_OURS);
        char pods_text[2048];
        snprintf(pods_text, sizeof(pods_text), POD_INIT("%s"), rows[i].init);
        json_object *pods = parse(pods_text);
        plan_observed_t more = {.members = pods, .pods = pods, .sts_events = NULL, .pod_events = NULL};
        plan_t *p = plan_compute_observed(rc, NULL, NULL, sts, &more, T1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        const json_object *ready = ready_of(p);
        const char *reason = str_at(ready, "reason"), *msg = str_at(ready, "message");
        if (rows[i].reason ? !reason || strcmp(reason, rows[i].reason) || !strstr(msg, rows[i].message)
                           : reason && !strcmp(reason, "RestoreFailed"))
            fprintf(stderr, "\n  row \"%s\": %s: %s\n", rows[i].name, reason ? reason : "-", msg ? msg : "-");
        if (rows[i].reason) {
            CU_ASSERT_STRING_EQUAL(reason ? reason : "", rows[i].reason);
            ASSERT_TEXT_HAS(msg ? msg : "", rows[i].message);
        } else {
            CU_ASSERT(!reason || strcmp(reason, "RestoreFailed"));
        }
        plan_destroy(&p);
        PUT_EACH(rc, sts, pods);
    }
}

static const cu_entry_t tests[] = {
    CU_SUITE("restore at creation (spec.restore)"),
    {"rules (table), reserved names", test_rules},
    {"the bucket/key form not in Cluster mode", test_not_in_cluster_mode},
    {"the typed spec", test_typed},
    {"immutable, also from unset to set (table)", test_immutable},
    {"the admission webhook refuses them, with the messages", test_webhook},
    {"conversion: spec.restore survives v1alpha1", test_survives_v1alpha1},
    {"render: the restore init container (table)", test_render_table},
    {"render: the operator's image, the user's init containers after", test_render_image_and_order},
    {"plan: RestoreFailed with rdc-backup's line (table)", test_diagnosis},
};
CU_MAIN(tests)
