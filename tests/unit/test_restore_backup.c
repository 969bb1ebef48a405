/* test_restore_backup: spec.restore.from.backup, restore at creation from a RedisBackup
 * (issue 36; docs/backup.md "Restore from a RedisBackup"; workerd/plan_restore.h).
 *
 *   - rdc_spec's rules as a table: the backup form, both forms, neither, a bad name, the
 *     reserved names, Cluster mode; the typed spec; immutability;
 *   - the admission webhook refuses both and neither with the words of the CRD's CEL
 *     rules, which the CRD carries (read from crds/);
 *   - conversion: spec.restore.from.backup and status.restore survive v1alpha1;
 *   - the plan's decisions as a table (not read, absent, unreadable, Pending, Running,
 *     Failed, Succeeded without a key, Succeeded): no StatefulSet, the Ready condition,
 *     Degraded and its Warning Event, the record, the requeue, whether it asks for the
 *     RedisBackup; the backoff; an unchanged answer writes nothing; a StatefulSet whose
 *     record was lost is left alone;
 *   - the record: no read, the StatefulSet created from it even when the RedisBackup is
 *     gone, and rendered exactly as the bucket/key form with the same values renders.
 */
#include "admission.h"
#include "conversion.h"
#include "crd_file.h"
#include "cu_table.h"
#include "json_at.h"
#include "plan.h"
#include "plan_fixture.h"
#include "rdc_spec.h"
#include "render.h"
#include "spec_rows.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <ctype.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T1 INT64_C(1714564800000000000) /* 2024-05-01T12:00:00Z */
#define NS_PER_S INT64_C(1000000000)
#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define RESTORE(from) "\"restore\":{\"from\":{" from "}}"
#define BACKUP "\"backup\":\"one\""
#define STANDALONE "{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\""
#define FROM "\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"key\":\"prod/cache.rdb\""
#define CREDS "\"credentialsSecret\":\"s3-creds\""

/* A RedisBackup "one" of cluster src (destination and Secrets as the record below says)
 * with status (a JSON object's text). */
#define RB(status)                                                                                                 \
    "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisBackup\",\"metadata\":{\"name\":\"one\","            \
    "\"namespace\":\"default\"},\"spec\":{\"source\":{\"cluster\":\"src\"},\"destination\":{\"endpoint\":"          \
    "\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"prefix\":\"one/\",\"region\":\"eu-west-1\"},"             \
    "\"credentialsSecret\":{\"name\":\"s3-creds\"},\"caSecret\":{\"name\":\"s3-ca\"}},\"status\":" status "}"
#define SUCCEEDED "{\"phase\":\"Succeeded\",\"key\":\"one/one.rdb\",\"size\":89,\"sha256\":\"" SHA "\"}"
/* What a Succeeded "one" resolves to: the same object in the bucket/key form's fields. */
#define OBJECT_FIELDS                                                                                              \
    "\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"key\":\"one/one.rdb\",\"region\":"           \
    "\"eu-west-1\",\"credentialsSecret\":\"s3-creds\",\"caSecret\":\"s3-ca\",\"sha256\":\"" SHA "\""
#define RECORD "{\"backup\":\"one\"," OBJECT_FIELDS "}"

/* ---- rdc_spec's rules ------------------------------------------------------------------ */

static void test_rules(void)
{
    static const spec_row_t rows[] = {
        {RESTORE(BACKUP), ""},
        {RESTORE("\"backup\":\"cache-202612061400.weekly\""), ""},
        /* both forms, each field of the object's counting */
        {RESTORE(BACKUP "," FROM "," CREDS), "spec.restore.from: Forbidden: " RDC_SPEC_RESTORE_BOTH},
        {RESTORE(BACKUP ",\"region\":\"eu-west-1\""), "spec.restore.from: Forbidden: " RDC_SPEC_RESTORE_BOTH},
        {RESTORE(BACKUP ",\"sha256\":\"" SHA "\""), "spec.restore.from: Forbidden: " RDC_SPEC_RESTORE_BOTH},
        /* neither */
        {RESTORE(""), "spec.restore.from: Required value: " RDC_SPEC_RESTORE_NEITHER},
        {RESTORE("\"backup\":null"), "spec.restore.from: Required value: " RDC_SPEC_RESTORE_NEITHER},
        /* a bad name */
        {RESTORE("\"backup\":\"One_1\""),
         "spec.restore.from.backup: Invalid value: \"One_1\": must be the name of a RedisBackup in this namespace"},
        {RESTORE("\"backup\":\"-one\""), "spec.restore.from.backup: Invalid value: \"-one\""},
        {RESTORE("\"backup\":7"), "spec.restore.from.backup: Invalid value: 7: must be a string"},
        {RESTORE("\"backup\":\"\""), "spec.restore.from.backup: Required value"},
        /* the object form alone, part of it: each missing field named, as before */
        {RESTORE(CREDS), "spec.restore.from.endpoint: Required value"},
        /* the operator's names, reserved with the backup form too */
        {RESTORE(BACKUP) ",\"initContainers\":[{\"name\":\"restore\",\"image\":\"busybox\"}]",
         "spec.initContainers[0].name: Forbidden: \"restore\" is the operator's container"},
        {RESTORE(BACKUP) ",\"volumes\":[{\"name\":\"restore-ca\",\"emptyDir\":{}}]",
         "spec.volumes[0].name: Forbidden: \"restore-ca\" is the operator's volume"},
    };
    check_spec_rows(STANDALONE, rows, sizeof(rows) / sizeof(rows[0]));
    /* exactly one error for both and for neither: the fields of the form are not judged */
    char *both = errors_of(STANDALONE "," RESTORE(BACKUP ",\"endpoint\":\"nope\"") "}");
    CU_ASSERT_STRING_EQUAL(both, "spec.restore.from: Forbidden: " RDC_SPEC_RESTORE_BOTH);
    free(both);
    /* Cluster mode restores from a RedisBackup (each shard its own object) */
    char *cluster = errors_of("{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\"," RESTORE(BACKUP) "}");
    CU_ASSERT_STRING_EQUAL(cluster, "");
    free(cluster);
}

/* The typed spec: the name, the object's fields unset until the plan resolves it. */
static void test_typed(void)
{
    json_object *rc = rc_with(STANDALONE "," RESTORE(BACKUP) "}");
    rdc_field_errors_t *e = rdc_field_errors_new();
    rdc_spec_t s;
    CU_ASSERT_EQUAL(rdc_spec_parse(rc, &s, e), 0);
    CU_ASSERT_STRING_EQUAL(s.restore.backup, "one");
    CU_ASSERT_PTR_NULL(s.restore.endpoint);
    CU_ASSERT_PTR_NULL(s.restore.key);
    /* a record parsed into it: the object's fields, region defaulted, backup kept */
    json_object *src = parse("{\"backup\":\"one\",\"endpoint\":\"http://h\",\"bucket\":\"bkt\",\"key\":\"k\","
                             "\"credentialsSecret\":\"c\"}");
    CU_ASSERT_EQUAL(rdc_spec_parse_restore_source(src, "status.restore.source", &s, e), 0);
    ASSERT_TEXT_HAS(s.restore.endpoint, "http://h");
    CU_ASSERT_STRING_EQUAL(s.restore.region, RDC_SPEC_DEFAULT_RESTORE_REGION);
    CU_ASSERT_STRING_EQUAL(s.restore.backup, "one");
    /* one that is not: every problem named under the path, the spec unchanged */
    json_object *bad = parse("{\"endpoint\":\"ftp://h\",\"bucket\":\"bkt\",\"credentialsSecret\":\"c\"}");
    rdc_field_errors_t *e2 = rdc_field_errors_new();
    CU_ASSERT_EQUAL(rdc_spec_parse_restore_source(bad, "source", &s, e2), 2);
    ASSERT_TEXT_HAS(rdc_field_error_text(e2, 0), "source.endpoint: Invalid value: \"ftp://h\"");
    ASSERT_TEXT_HAS(rdc_field_error_text(e2, 1), "source.key: Required value");
    ASSERT_TEXT_HAS(s.restore.endpoint, "http://h");
    rdc_field_errors_destroy(&e2);
    PUT_EACH(src, bad, rc);
    rdc_field_errors_destroy(&e);
}

/* Immutable as the object form is: from the backup form to another backup, to the object
 * form or to none is Forbidden; the same spec passes; and unset to set is Forbidden too. */
static void test_immutable(void)
{
    static const spec_row_t to[] = {
        {RESTORE(BACKUP), ""},
        {RESTORE("\"backup\":\"two\""), "spec.restore: Forbidden: is immutable"},
        {RESTORE(FROM "," CREDS), "spec.restore: Forbidden: is immutable"},
        {"\"persistence\":\"aof\"", "spec.restore: Forbidden: is immutable"},
    };
    const size_t rows = sizeof(to) / sizeof(to[0]);
    json_object *from = rc_with(STANDALONE "," RESTORE(BACKUP) "}"), *none = rc_with(STANDALONE "}");
    for (size_t i = 0; i <= rows; i++) {
        char spec[1024];
        /* the last pass: from none to the backup form */
        snprintf(spec, sizeof(spec), STANDALONE ",%s}", i < rows ? to[i].fields : RESTORE(BACKUP));
        json_object *next = rc_with(spec);
        rdc_field_errors_t *e = rdc_field_errors_new();
        size_t n = rdc_spec_validate_update(i < rows ? from : none, next, e);
        const char *want = i < rows ? to[i].want : "spec.restore: Forbidden: is immutable, also from unset to set";
        CU_ASSERT_EQUAL(n > 0, *want != '\0');
        if (*want)
            ASSERT_TEXT_HAS(n ? rdc_field_error_text(e, 0) : "", want);
        rdc_field_errors_destroy(&e);
        json_object_put(next);
    }
    PUT_EACH(from, none);
}

/* The validating webhook's answer to a CREATE of spec: allowed when code is 0, else
 * refused with that code and a message holding want. */
static void webhook_says(const char *spec, int code, const char *want)
{
    json_object *rc = rc_with(spec);
    admission_outcome_t o;
    validate_review("CREATE", NULL, rc, 0, &o);
    if (o.allowed != !code || (code && !strstr(o.message, want)))
        fprintf(stderr, "\n  %s: %d %s\n", spec, o.code, o.message);
    CU_ASSERT_EQUAL(o.allowed, !code);
    if (code) {
        CU_ASSERT_EQUAL(o.code, code);
        ASSERT_TEXT_HAS(o.message, want);
    }
    json_object_put(rc);
}

/* The webhook: both is Forbidden (403), neither and a bad name Invalid (422), each with
 * rdc_spec's words; the backup form alone is allowed. */
static void test_webhook(void)
{
    webhook_says(STANDALONE "," RESTORE(BACKUP "," FROM "," CREDS) "}", 403,
                 "spec.restore.from: Forbidden: " RDC_SPEC_RESTORE_BOTH);
    webhook_says(STANDALONE "," RESTORE("") "}", 422, "spec.restore.from: Required value: " RDC_SPEC_RESTORE_NEITHER);
    webhook_says(STANDALONE "," RESTORE("\"backup\":\"One_1\"") "}", 422,
                 "spec.restore.from.backup: Invalid value: \"One_1\"");
    webhook_says(STANDALONE "," RESTORE(BACKUP) "}", 0, NULL);
}

/* The CRD's text with every run of blanks and newlines made one space (YAML's folded
 * scalars read so); the caller frees. */
static char *crd_folded(void)
{
    FILE *f = crd_open();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f); /* run from the repository's top (or set RDC_TOP) */
    buf_t b;
    buf_init(&b, 0);
    int c, blank = 0;
    while ((c = fgetc(f)) != EOF) {
        if (isspace(c)) {
            blank = 1;
            continue;
        }
        char ch[2] = {' ', (char)c};
        buf_append(&b, blank && b.len ? ch : ch + 1, blank && b.len ? 2 : 1);
        blank = 0;
    }
    fclose(f);
    return buf_detach(&b);
}

#define ANY_OBJECT_FIELD                                                                                           \
    "has(self.endpoint) || has(self.bucket) || has(self.key) || has(self.region) || has(self.credentialsSecret) " \
    "|| has(self.caSecret) || has(self.sha256)"

/* The API server says what the webhook says, without it: the CRD's rules on
 * spec.restore.from, their messages rdc_spec's, their reasons the same kinds of error. */
static void test_crd_says_the_same(void)
{
    char *crd = crd_folded();
    static const char *const said[] = {
        "- rule: >- !has(self.backup) || !(" ANY_OBJECT_FIELD ") message: >- " RDC_SPEC_RESTORE_BOTH
        " reason: FieldValueForbidden",
        "- rule: >- has(self.backup) || " ANY_OBJECT_FIELD " message: >- " RDC_SPEC_RESTORE_NEITHER
        " reason: FieldValueRequired",
        "backup: type: string minLength: 1 maxLength: 253 pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
        "([-a-z0-9]*[a-z0-9])?)*$'",
        /* region has no schema default: it would make every backup form name an object */
        "pattern: '^[a-z0-9-]+$' description: The region requests are signed for (SigV4); absent means us-east-1.",
        /* the record's schema */
        "restore: type: object description: The restore at creation (spec.restore.from.backup). properties: "
        "source: type: object",
        /* Cluster mode: the RedisBackup form only */
        "self.mode != 'Cluster' || !has(self.restore.from) || has(self.restore.from.backup)\" message: \""
        RDC_SPEC_RESTORE_CLUSTER_OBJECT "\" fieldPath: .restore.from reason: FieldValueForbidden",
    };
    for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
        if (!strstr(crd, said[i]))
            fprintf(stderr, "\n  the CRD does not say: %s\n", said[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(crd, said[i]));
    }
    CU_ASSERT_PTR_NULL(strstr(crd, "default: us-east-1"));
    free(crd);
}

/* v1-only: spec.restore.from.backup and status.restore go into the annotation and back. */
static void test_survives_v1alpha1(void)
{
    json_object *v1 = rc_with(STANDALONE "," RESTORE(BACKUP) "}");
    json_object_object_add(v1, "status", parse("{\"phase\":\"Pending\",\"restore\":{\"source\":" RECORD "}}"));
    json_object *down = NULL, *up = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(conversion_convert(v1, CONVERSION_V1ALPHA1, &down, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NULL(at(down, "spec restore"));
    CU_ASSERT_PTR_NULL(at(down, "status restore"));
    CU_ASSERT_STRING_EQUAL(str_at(down, "status phase"), "Pending");
    CU_ASSERT_EQUAL_FATAL(conversion_convert(down, CONVERSION_V1, &up, err, sizeof(err)), 0);
    CU_ASSERT_TRUE(json_object_equal(up, v1));
    PUT_EACH(v1, down, up);
}

/* ---- the plan ------------------------------------------------------------------------------ */

/* The RedisCluster restoring from "one" (fields: more of its spec, "" none) with status
 * (NULL: none). The caller puts it. */
static json_object *rc_restoring(const char *fields, const char *status)
{
    char spec[2048];
    snprintf(spec, sizeof(spec), STANDALONE "," RESTORE(BACKUP) "%s%s}", *fields ? "," : "", fields);
    json_object *rc = rc_with(spec);
    if (status)
        json_object_object_add(rc, "status", parse(status));
    return rc;
}

/* A first plan of rc (no child) with more (NULL: none). */
static plan_t *plan_new_cluster(const json_object *rc, const plan_observed_t *more)
{
    plan_t *p = plan_compute_children(rc, &(plan_children_t){NULL, NULL, NULL, NULL}, more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* The condition of type in the plan's computed status, or NULL. */
static const json_object *cond_of(const plan_t *p, const char *type)
{
    const json_object *conds = at(plan_status(p), "conditions");
    for (size_t i = 0; i < jsonx_len(conds); i++)
        if (!strcmp(str_at(json_object_array_get_idx(conds, i), "type"), type))
            return json_object_array_get_idx(conds, i);
    return NULL;
}

typedef struct {
    const char *name;
    int read;            /* the caller read it (else: not asked for yet) */
    const char *rb;      /* what the read found, NULL: absent (404) */
    const char *error;   /* the read failed, NULL: it did not */
    const char *reason;  /* Ready's (and Progressing's) reason */
    const char *message; /* in Ready's message */
    int failed;          /* Degraded True RestoreFailed and its Warning Event; Progressing False */
    int recorded;        /* status.restore.source written, the RECORD */
    int64_t requeue_ns;
} decision_row_t;

static void check_decision(const decision_row_t *r)
{
    json_object *rc = rc_restoring("", NULL), *rb = r->rb ? parse(r->rb) : NULL;
    plan_observed_t more = {.restore_backup_read = r->read, .restore_backup = rb, .restore_backup_error = r->error};
    plan_t *p = plan_new_cluster(rc, &more);
    const json_object *ready = cond_of(p, "Ready"), *prog = cond_of(p, "Progressing"), *deg = cond_of(p, "Degraded");
    const char *msg = str_at(ready, "message");
    if (!msg || !strstr(msg, r->message))
        fprintf(stderr, "\n  row \"%s\": %s: %s\n", r->name, str_at(ready, "reason"), msg ? msg : "-");
    /* no pod may start empty: no StatefulSet, no budget; the rest is made as usual */
    CU_ASSERT_EQUAL(count_actions(p, PLAN_CREATE, "statefulsets"), 0);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_CREATE, "poddisruptionbudgets"), 0);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_CREATE, "configmaps"), 1);
    ASSERT_STRS_AT(plan_status(p), {"phase", "Pending"});
    ASSERT_STRS_AT(ready, {"status", "False"}, {"reason", r->reason});
    ASSERT_TEXT_HAS(msg ? msg : "", "spec.restore.from.backup: RedisBackup default/one", r->message);
    ASSERT_STRS_AT(prog, {"status", r->failed ? "False" : "True"}, {"reason", r->reason});
    ASSERT_STRS_AT(deg, {"status", r->failed ? "True" : "False"},
                   {"reason", r->failed ? "RestoreFailed" : "AsExpected"});
    CU_ASSERT_EQUAL(has_event_in(p, "RestoreFailed", "RedisBackup default/one"), r->failed);
    /* asked for only when not read */
    CU_ASSERT_EQUAL(plan_restore_backup_to_read(p) != NULL, !r->read);
    if (!r->read)
        CU_ASSERT_STRING_EQUAL(plan_restore_backup_to_read(p), "one");
    json_object *want = parse(RECORD);
    const json_object *src = at(plan_status(p), "restore source");
    CU_ASSERT_EQUAL(src != NULL, r->recorded);
    if (r->recorded) {
        CU_ASSERT_TRUE(json_object_equal((json_object *)src, want));
        CU_ASSERT_PTR_NOT_NULL(at(status_action(p)->body, "status restore source"));
    }
    if (plan_requeue_after_ns(p) != r->requeue_ns)
        fprintf(stderr, "\n  row \"%s\": requeue %lld\n", r->name, (long long)plan_requeue_after_ns(p));
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), r->requeue_ns);
    plan_destroy(&p);
    PUT_EACH(rc, rb, want);
}

static void test_decisions(void)
{
    static const decision_row_t rows[] = {
        {"not read: asked for", 0, NULL, NULL, "RestorePending", "is not read yet: no pod is created", 0, 0,
         5 * NS_PER_S},
        {"absent (404)", 1, NULL, NULL, "RestoreFailed", "does not exist: no pod is created", 1, 0, 5 * NS_PER_S},
        {"unreadable", 1, NULL, "GET redisbackups/one: HTTP 403 Forbidden", "RestorePending",
         "cannot be read (GET redisbackups/one: HTTP 403 Forbidden)", 0, 0, 5 * NS_PER_S},
        {"no status yet", 1, RB("{}"), NULL, "RestorePending", "is Pending: no pod is created before it has "
         "Succeeded", 0, 0, 5 * NS_PER_S},
        {"Running", 1, RB("{\"phase\":\"Running\",\"sourcePod\":\"src-0\"}"), NULL, "RestorePending",
         "is Running: no pod is created before it has Succeeded", 0, 0, 5 * NS_PER_S},
        {"Failed", 1, RB("{\"phase\":\"Failed\",\"message\":\"rdc-backup take: 10.0.0.5:6379: NoSuchBucket\"}"),
         NULL, "RestoreFailed", "Failed (rdc-backup take: 10.0.0.5:6379: NoSuchBucket): no pod is created", 1, 0,
         5 * NS_PER_S},
        {"Succeeded without a key", 1, RB("{\"phase\":\"Succeeded\",\"sha256\":\"" SHA "\"}"), NULL,
         "RestoreFailed", "Succeeded but cannot be restored from: source.key: Required value", 1, 0, 5 * NS_PER_S},
        {"Succeeded: its object recorded, the StatefulSet next", 1, RB(SUCCEEDED), NULL, "RestorePending",
         "Succeeded: its object backups/one/one.rdb is recorded in status.restore.source", 0, 1, 1 * NS_PER_S},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        check_decision(&rows[i]);
}

/* BACKOFF: as long as the cluster has waited (since Ready turned False), 5 s to 2 min; a
 * running backup is looked at every 5 s whatever. */
static void test_backoff(void)
{
    static const struct {
        const char *since, *rb;
        int64_t want;
    } rows[] = {
        {"2024-05-01T11:59:59Z", NULL, 5 * NS_PER_S},
        {"2024-05-01T11:59:00Z", NULL, 60 * NS_PER_S},
        {"2024-05-01T11:00:00Z", NULL, 120 * NS_PER_S},
        {"2024-05-01T11:00:00Z", RB("{\"phase\":\"Running\"}"), 5 * NS_PER_S},
        {"2024-05-01T12:30:00Z", NULL, 5 * NS_PER_S}, /* a time ahead of the clock: the least */
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char status[512];
        snprintf(status, sizeof(status), "{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
                 "\"False\",\"reason\":\"Creating\",\"lastTransitionTime\":\"%s\"}]}", rows[i].since);
        json_object *rc = rc_restoring("", status), *rb = rows[i].rb ? parse(rows[i].rb) : NULL;
        plan_observed_t more = {.restore_backup_read = 1, .restore_backup = rb};
        plan_t *p = plan_new_cluster(rc, &more);
        CU_ASSERT_EQUAL(plan_requeue_after_ns(p), rows[i].want);
        plan_destroy(&p);
        PUT_EACH(rc, rb);
    }
}

/* Looked at again with the same answer: its status is already said, so nothing is written
 * and no Event is recorded again. */
static void test_unchanged_writes_nothing(void)
{
    json_object *rc = rc_restoring("", NULL);
    plan_observed_t more = {.restore_backup_read = 1};
    plan_t *p = plan_new_cluster(rc, &more);
    CU_ASSERT_PTR_NOT_NULL_FATAL(status_action(p));
    json_object_object_add(rc, "status", json_copy(plan_status(p)));
    plan_destroy(&p);
    p = plan_new_cluster(rc, &more);
    CU_ASSERT_PTR_NULL(status_action(p));
    CU_ASSERT_FALSE(has_event(p, "RestoreFailed"));
    plan_destroy(&p);
    json_object_put(rc);
}

/* A record as written reads back the same (the region defaulted when the RedisBackup
 * names none): the next plan, from the record, creates the StatefulSet and has the record
 * to say already. */
static void test_record_reads_back_the_same(void)
{
    json_object *rc = rc_restoring("", NULL), *rb = parse(RB(SUCCEEDED));
    json_object_object_del(at(rb, "spec destination"), "region");
    plan_observed_t more = {.restore_backup_read = 1, .restore_backup = rb};
    plan_t *p = plan_new_cluster(rc, &more);
    ASSERT_STRS_AT(plan_status(p), {"restore source region", RDC_SPEC_DEFAULT_RESTORE_REGION},
                   {"restore source backup", "one"}, {"restore source key", "one/one.rdb"});
    json_object_object_add(rc, "status", json_copy(plan_status(p)));
    plan_destroy(&p);
    p = plan_new_cluster(rc, NULL);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_CREATE, "statefulsets"), 1);
    CU_ASSERT_TRUE(json_object_equal(at(plan_status(p), "restore"), at(rc, "status restore")));
    CU_ASSERT_PTR_NULL(plan_restore_backup_to_read(p));
    plan_destroy(&p);
    PUT_EACH(rc, rb);
}

#define STS_OURS                                                                                                   \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"cache\",\"namespace\":"        \
    "\"default\",\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","        \
    "\"name\":\"cache\",\"uid\":\"uid-1\",\"controller\":true}]},\"spec\":{\"replicas\":1,\"template\":{}},"      \
    "\"status\":{\"replicas\":1,\"readyReplicas\":1}}"

/* A StatefulSet that exists while the record does not (a status restored without it) and
 * the RedisBackup is gone: left as it is (no write can drop its restore container), which
 * Degraded says. */
static void test_record_lost_statefulset_left(void)
{
    json_object *rc = rc_restoring("", NULL), *sts = parse(STS_OURS);
    plan_observed_t more = {.restore_backup_read = 1};
    plan_t *p = plan_compute_children(rc, &(plan_children_t){NULL, NULL, sts, NULL}, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_APPLY, "statefulsets"), 0);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_REPLACE, "statefulsets"), 0);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_APPLY, "poddisruptionbudgets"), 0);
    ASSERT_STRS_AT(cond_of(p, "Degraded"), {"status", "True"}, {"reason", "RestoreFailed"});
    ASSERT_TEXT_HAS(str_at(cond_of(p, "Degraded"), "message"), "does not exist",
                    "StatefulSet default/cache is left as it is");
    plan_destroy(&p);
    PUT_EACH(rc, sts);
}

/* The StatefulSet's create in a first plan of rc, taken (the caller puts it), or NULL. */
static json_object *sts_created(const json_object *rc, const plan_observed_t *more)
{
    plan_t *p = plan_new_cluster(rc, more);
    const plan_action_t *a = find_action(p, PLAN_CREATE, "statefulsets");
    json_object *body = a ? json_object_get(a->body) : NULL;
    CU_ASSERT_PTR_NULL(plan_restore_backup_to_read(p));
    plan_destroy(&p);
    return body;
}

#define RECORDED_STATUS "{\"phase\":\"Pending\",\"restore\":{\"source\":" RECORD "}}"

/* Recorded: nothing read, the StatefulSet created from the record even though the
 * RedisBackup is gone, and exactly the StatefulSet the bucket/key form with the record's
 * values gives (persistence aof and rdb); the record written with the status again. */
static void test_record_renders_as_bucket_key(void)
{
    static const char *const fields[] = {"", "\"persistence\":\"rdb\""};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        json_object *rc = rc_restoring(fields[i], RECORDED_STATUS);
        char spec[2048];
        snprintf(spec, sizeof(spec), STANDALONE "%s%s," RESTORE(OBJECT_FIELDS) "}", *fields[i] ? "," : "",
                 fields[i]);
        json_object *plain = rc_with(spec);
        plan_observed_t gone = {.restore_backup_read = 1}; /* given, not needed */
        json_object *a = sts_created(rc, NULL), *b = sts_created(rc, &gone), *c = sts_created(plain, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_TRUE(json_object_equal(a, b));
        if (!json_object_equal(a, c))
            fprintf(stderr, "\n  from the record: %s\n  bucket/key:      %s\n", json_object_to_json_string(a),
                    json_object_to_json_string(c));
        CU_ASSERT_TRUE(json_object_equal(a, c));
        ASSERT_STRS_AT(a, {"spec template spec initContainers 0 name", RENDER_RESTORE_CONTAINER},
                       {"spec template spec initContainers 0 command 9", "one/one.rdb"},
                       {"spec template spec volumes 1 secret secretName", "s3-creds"});
        PUT_EACH(rc, plain, a, b, c);
    }
    /* the status keeps the record (it is applied whole) */
    json_object *rc = rc_restoring("", RECORDED_STATUS), *want = parse(RECORD);
    plan_t *p = plan_new_cluster(rc, NULL);
    CU_ASSERT_TRUE(json_object_equal(at(plan_status(p), "restore source"), want));
    plan_destroy(&p);
    PUT_EACH(rc, want);
}

/* A record that is not the spec's backup's, or not one at all, is resolved again. */
static void test_record_not_trusted(void)
{
    static const char *const statuses[] = {
        "{\"restore\":{\"source\":{\"backup\":\"two\"," OBJECT_FIELDS "}}}",
        "{\"restore\":{\"source\":{\"backup\":\"one\",\"endpoint\":\"http://h\",\"bucket\":\"bkt\"}}}",
        "{\"restore\":{\"source\":\"backups/one.rdb\"}}",
    };
    for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        json_object *rc = rc_restoring("", statuses[i]);
        plan_t *p = plan_new_cluster(rc, NULL);
        CU_ASSERT_STRING_EQUAL(plan_restore_backup_to_read(p) ? plan_restore_backup_to_read(p) : "", "one");
        CU_ASSERT_EQUAL(count_actions(p, PLAN_CREATE, "statefulsets"), 0);
        plan_destroy(&p);
        json_object_put(rc);
    }
}

/* An invalid spec (another field) keeps the record: the status is applied whole. */
static void test_invalid_spec_keeps_record(void)
{
    json_object *rc = rc_restoring("\"version\":\"bad tag\"", RECORDED_STATUS), *want = parse(RECORD);
    plan_t *p = plan_new_cluster(rc, NULL);
    ASSERT_STRS_AT(plan_status(p), {"phase", "Failed"});
    CU_ASSERT_TRUE(json_object_equal(at(plan_status(p), "restore source"), want));
    plan_destroy(&p);
    PUT_EACH(rc, want);
}

/* ---- Cluster mode: each shard its own object ---------------------------------------------- */

#define CLUSTER_OF(size, shards)                                                                                   \
    "{\"size\":" #size ",\"image\":\"redis\",\"mode\":\"Cluster\",\"cluster\":{\"shards\":" #shards                  \
    ",\"replicasPerShard\":1}"
#define CLUSTER3 CLUSTER_OF(6, 3)
#define CLUSTER4 CLUSTER_OF(8, 4)
#define SHARD_KEY(k) "one/one/shard-" #k ".rdb"
#define SHARDS3                                                                                                    \
    "[{\"shard\":0,\"key\":\"" SHARD_KEY(0) "\",\"sha256\":\"" SHA "\"},{\"shard\":1,\"key\":\"" SHARD_KEY(1)       \
    "\"},{\"shard\":2,\"key\":\"" SHARD_KEY(2) "\",\"sha256\":\"" SHA "\"}]"
#define CLUSTER_SUCCEEDED "{\"phase\":\"Succeeded\",\"key\":\"one/one/\",\"size\":300,\"shards\":" SHARDS3 "}"
#define CLUSTER_RECORD                                                                                             \
    "{\"backup\":\"one\",\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"key\":\"one/one/\","      \
    "\"region\":\"eu-west-1\",\"credentialsSecret\":\"s3-creds\",\"caSecret\":\"s3-ca\",\"shards\":["              \
    "{\"key\":\"" SHARD_KEY(0) "\",\"sha256\":\"" SHA "\"},{\"key\":\"" SHARD_KEY(1) "\"},{\"key\":\""             \
    SHARD_KEY(2) "\",\"sha256\":\"" SHA "\"}]}"

/* The first plan of a RedisCluster of spec restoring from "one" (status: NULL none) with
 * the RedisBackup rb read (NULL: none read). */
static plan_t *cluster_plan(const char *spec, const char *status, const char *rb)
{
    char text[1024];
    snprintf(text, sizeof(text), "%s," RESTORE(BACKUP) "}", spec);
    json_object *rc = rc_with(text), *b = rb ? parse(rb) : NULL;
    if (status)
        json_object_object_add(rc, "status", parse(status));
    plan_observed_t more = {.restore_backup_read = rb != NULL, .restore_backup = b};
    plan_t *p = plan_new_cluster(rc, &more);
    PUT_EACH(rc, b);
    return p;
}

/* A Cluster-mode RedisBackup (status.shards) resolves into a record of each shard's
 * object, no StatefulSet yet; one that does not fit is RestoreFailed with why. */
static void test_cluster_resolves(void)
{
    plan_t *p = cluster_plan(CLUSTER3, NULL, RB(CLUSTER_SUCCEEDED));
    json_object *want = parse(CLUSTER_RECORD);
    const json_object *src = at(plan_status(p), "restore source");
    if (!json_object_equal((json_object *)src, want))
        fprintf(stderr, "\n  record: %s\n", src ? json_object_to_json_string((json_object *)src) : "none");
    CU_ASSERT_TRUE(json_object_equal((json_object *)src, want));
    CU_ASSERT_EQUAL(count_actions(p, PLAN_CREATE, "statefulsets"), 0);
    plan_destroy(&p);
    json_object_put(want);
    static const struct {
        const char *spec, *rb, *why;
    } misfits[] = {
        {STANDALONE, RB(CLUSTER_SUCCEEDED), "is a Cluster-mode backup of 3 shards: it restores only into a "
                                            "RedisCluster of mode Cluster"},
        {CLUSTER3, RB(SUCCEEDED), "is a backup of one server (Standalone or Replication)"},
        {CLUSTER3,
         RB("{\"phase\":\"Succeeded\",\"key\":\"one/one/\",\"shards\":[{\"key\":\"a\"},{\"key\":\"b\"},{\"key\":"
            "\"c\"},{\"key\":\"d\"}]}"),
         "has 4 shards and spec.cluster.shards is 3: restore into at least 4 shards"},
    };
    for (size_t i = 0; i < sizeof(misfits) / sizeof(misfits[0]); i++) {
        p = cluster_plan(misfits[i].spec, NULL, misfits[i].rb);
        CU_ASSERT_PTR_NULL(at(plan_status(p), "restore source"));
        ASSERT_STRS_AT(cond_of(p, "Degraded"), {"status", "True"}, {"reason", "RestoreFailed"});
        ASSERT_TEXT_HAS(str_at(cond_of(p, "Degraded"), "message"), misfits[i].why);
        CU_ASSERT_EQUAL(count_actions(p, PLAN_CREATE, "statefulsets"), 0);
        plan_destroy(&p);
    }
}

/* The shard StatefulSet k's create in p, or NULL. */
static const json_object *shard_sts(const plan_t *p, int k)
{
    char name[32];
    snprintf(name, sizeof(name), "cache-shard%d", k);
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == PLAN_CREATE && !strcmp(plan_action(p, i)->resource, "statefulsets") &&
            !strcmp(plan_action(p, i)->name, name))
            return plan_action(p, i)->body;
    return NULL;
}

/* Recorded: shard k's pods restore shard k's object, only its first pod (--only-pod
 * <name>-shard<k>-0), with the shard's sha256 when the backup has one; a shard past the
 * backup's (4 shards from 3) has no restore at all: it starts empty. */
static void test_cluster_shards_restore_their_own(void)
{
    plan_t *p = cluster_plan(CLUSTER4, "{\"phase\":\"Pending\",\"restore\":{\"source\":" CLUSTER_RECORD "}}", NULL);
    char cmd[4096];
    for (int k = 0; k < 3; k++) {
        const json_object *sts = shard_sts(p, k);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
        char key[64], only[64];
        snprintf(key, sizeof(key), " --key one/one/shard-%d.rdb ", k);
        snprintf(only, sizeof(only), " --only-pod cache-shard%d-0 ", k);
        strs_line(at(sts, "spec template spec initContainers 0 command"), cmd, sizeof(cmd));
        strcat(cmd, " "); /* banned-ok: room left (a test's fixed-size text) */
        ASSERT_TEXT_HAS(cmd, " restore ", key, only);
        CU_ASSERT_EQUAL(strstr(cmd, "--expect-sha256 " SHA) != NULL, k != 1);
    }
    const json_object *sts3 = shard_sts(p, 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sts3);
    CU_ASSERT_PTR_NULL(at(sts3, "spec template spec initContainers"));
    CU_ASSERT_PTR_NULL(strstr(json_object_to_json_string((json_object *)sts3), "s3-creds"));
    plan_destroy(&p);
}

/* A record's shards pass the key and sha256 rules, each named by its index. */
static void test_cluster_record_rules(void)
{
    static const struct {
        const char *shards, *want;
    } rows[] = {
        {"[{\"key\":\"\"}]", "source.shards[0].key: Required value"},
        {"[{\"key\":\"a\"},{\"key\":\"b\",\"sha256\":\"ABC\"}]", "source.shards[1].sha256: Invalid value"},
        {"[]", "source.shards: Invalid value"},
        {"{\"key\":\"a\"}", "source.shards: Invalid value"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *src = parsef("{\"endpoint\":\"http://h:1\",\"bucket\":\"bkt\",\"key\":\"k/\","
                                  "\"credentialsSecret\":\"s\",\"shards\":%s}", rows[i].shards);
        rdc_spec_t s;
        memset(&s, 0, sizeof(s));
        rdc_field_errors_t *e = rdc_field_errors_new();
        CU_ASSERT_TRUE(rdc_spec_parse_restore_source(src, "source", &s, e) > 0);
        buf_t b;
        buf_init(&b, 0);
        rdc_field_errors_format(e, &b);
        ASSERT_TEXT_HAS(buf_str(&b), rows[i].want);
        CU_ASSERT_PTR_NULL(s.restore.endpoint); /* unchanged */
        buf_free(&b);
        rdc_field_errors_destroy(&e);
        json_object_put(src);
    }
}

static const cu_entry_t tests[] = {
    CU_SUITE("spec.restore.from.backup: the API"),
    {"rules (table): the backup form, both, neither, a bad name, reserved names", test_rules},
    {"the typed spec; a source parsed into it", test_typed},
    {"immutable (table)", test_immutable},
    {"the admission webhook refuses both and neither with rdc_spec's words", test_webhook},
    {"the CRD's CEL rules carry the same words", test_crd_says_the_same},
    {"conversion: spec.restore.from.backup and status.restore survive v1alpha1", test_survives_v1alpha1},
    CU_SUITE("spec.restore.from.backup: the plan"),
    {"decisions (table): not read, absent, unreadable, Pending, Running, Failed, Succeeded", test_decisions},
    {"backoff from the time Ready turned False (table)", test_backoff},
    {"the same answer again writes nothing", test_unchanged_writes_nothing},
    {"a record as written reads back the same; the StatefulSet follows", test_record_reads_back_the_same},
    {"record lost, RedisBackup gone: the StatefulSet left as it is", test_record_lost_statefulset_left},
    {"the record: no read, rendered as the bucket/key form with its values", test_record_renders_as_bucket_key},
    {"a record of another backup, or none, is resolved again (table)", test_record_not_trusted},
    {"an invalid spec keeps the record", test_invalid_spec_keeps_record},
    {"Cluster mode: a sharded backup resolves into each shard's object; misfits refused", test_cluster_resolves},
    {"Cluster mode: shard k's first pod restores shard k's object; a shard past them none",
     test_cluster_shards_restore_their_own},
    {"Cluster mode: a record's shards pass the key and sha256 rules (table)", test_cluster_record_rules},
};

CU_MAIN(tests)
