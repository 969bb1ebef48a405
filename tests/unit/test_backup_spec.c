/* test_backup_spec: spec.backup on RedisCluster (issue 36; docs/backup.md "What the
 * operator does"): the rules as a table with the messages the webhook and workerd give
 * (a bad schedule says cron_parse's words), the typed spec with its defaults, Cluster mode
 * refused, the admission webhook refusing, and the field surviving a v1alpha1 round trip
 * (spec.backup and status.backup). */
#include "admission.h"
#include "conversion.h"
#include "cu_table.h"
#include "json_at.h"
#include "plan_fixture.h"
#include "rdc_spec.h"
#include "spec_errors.h"
#include "spec_rows.h"
#include "text_assert.h"
#include "v1_only.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STANDALONE "{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\""
#define DEST "\"destination\":{\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"prefix\":\"prod/cache\"}"
#define CREDS "\"credentialsSecret\":\"s3-creds\""
#define BACKUP(fields) "\"backup\":{" fields "}"
#define GOOD BACKUP("\"schedule\":\"*/5 * * * *\"," DEST "," CREDS)

static void test_rules(void)
{
    static const spec_row_t rows[] = {
        {GOOD, ""},
        {BACKUP("\"schedule\":\"@daily\",\"keep\":100," DEST "," CREDS ",\"caSecret\":\"s3-ca\""), ""},
        {BACKUP("\"schedule\":\"0 3 * * mon-fri\"," DEST "," CREDS), ""},
        {"\"backup\":7", "spec.backup: Invalid value: 7: must be an object"},
        {BACKUP(DEST "," CREDS), "spec.backup.schedule: Required value"},
        {BACKUP("\"schedule\":\"\"," DEST "," CREDS), "spec.backup.schedule: Required value"},
        {BACKUP("\"schedule\":\"* * * *\"," DEST "," CREDS),
         "spec.backup.schedule: Invalid value: \"* * * *\": must be a cron schedule (minute hour day-of-month "
         "month day-of-week, UTC): "},
        {BACKUP("\"schedule\":\"0 0 * * mon-fry\"," DEST "," CREDS),
         "spec.backup.schedule: Invalid value: \"0 0 * * mon-fry\": must be a cron schedule"},
        {BACKUP("\"schedule\":\"61 * * * *\"," DEST "," CREDS), "spec.backup.schedule: Invalid value: \"61 * * * *\""},
        {BACKUP("\"schedule\":\"0 0 * * *                                                                       "
                "                                                                   \"," DEST "," CREDS),
         "spec.backup.schedule: Invalid value: \"0 0 * * *  "},
        {BACKUP("\"schedule\":\"@daily\",\"keep\":0," DEST "," CREDS),
         "spec.backup.keep: Invalid value: 0: must be between 1 and 100"},
        {BACKUP("\"schedule\":\"@daily\",\"keep\":101," DEST "," CREDS), "spec.backup.keep: Invalid value: 101"},
        {BACKUP("\"schedule\":\"@daily\",\"keep\":\"2\"," DEST "," CREDS), "spec.backup.keep: Invalid value: \"2\""},
        {BACKUP("\"schedule\":\"@daily\"," CREDS), "spec.backup.destination: Required value"},
        {BACKUP("\"schedule\":\"@daily\"," DEST), "spec.backup.credentialsSecret: Required value"},
        {BACKUP("\"schedule\":\"@daily\"," CREDS ",\"destination\":{\"bucket\":\"backups\",\"prefix\":\"p\"}"),
         "spec.backup.destination.endpoint: Required value"},
        {BACKUP("\"schedule\":\"@daily\"," CREDS ",\"destination\":{\"endpoint\":\"http://h\",\"bucket\":\"backups\"}"),
         "spec.backup.destination.prefix: Required value"},
        {BACKUP("\"schedule\":\"@daily\"," CREDS
                ",\"destination\":{\"endpoint\":\"http://h\",\"bucket\":\"backups\",\"prefix\":\"/abs\"}"),
         "spec.backup.destination.prefix: Invalid value: \"/abs\": must be 1 to 900 bytes"},
        {BACKUP("\"schedule\":\"@daily\"," CREDS
                ",\"destination\":{\"endpoint\":\"http://h/x\",\"bucket\":\"backups\",\"prefix\":\"p\"}"),
         "spec.backup.destination.endpoint: Invalid value: \"http://h/x\""},
        {BACKUP("\"schedule\":\"@daily\"," CREDS
                ",\"destination\":{\"endpoint\":\"http://h\",\"bucket\":\"B\",\"prefix\":\"p\"}"),
         "spec.backup.destination.bucket: Invalid value: \"B\""},
        {BACKUP("\"schedule\":\"@daily\"," CREDS
                ",\"destination\":{\"endpoint\":\"http://h\",\"bucket\":\"bkt\",\"prefix\":\"p\",\"region\":\"EU\"}"),
         "spec.backup.destination.region: Invalid value: \"EU\""},
        {BACKUP("\"schedule\":\"@daily\"," DEST ",\"credentialsSecret\":\"S3\""),
         "spec.backup.credentialsSecret: Invalid value: \"S3\": must be the name of a Secret"},
        {BACKUP("\"schedule\":\"@daily\"," DEST "," CREDS ",\"caSecret\":\"a_b\""),
         "spec.backup.caSecret: Invalid value: \"a_b\""},
    };
    check_spec_rows(STANDALONE, rows, sizeof(rows) / sizeof(rows[0]));
}

/* Cluster mode: a schedule too (each shard's objects under <prefix>/shard-<k>). */
static void test_in_cluster_mode(void)
{
    char *err = errors_of("{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\"," GOOD "}");
    CU_ASSERT_STRING_EQUAL(err, "");
    free(err);
    rdc_spec_t s;
    json_object *rc = spec_parsed("{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\"," GOOD "}", &s);
    CU_ASSERT_STRING_EQUAL(s.backup.schedule, "*/5 * * * *");
    json_object_put(rc);
}

/* The typed spec: every field, the defaults (keep 7, us-east-1), the parsed schedule;
 * nothing without spec.backup. */
static void test_typed(void)
{
    rdc_spec_t s;
    json_object *rc = spec_parsed(STANDALONE "," GOOD "}", &s);
    CU_ASSERT_STRING_EQUAL(s.backup.schedule, "*/5 * * * *");
    for (int m = 0; m < 60; m++) /* minutes 0, 5, ..., 55 */
        CU_ASSERT_EQUAL((s.backup.cron.minutes >> m) & 1, m % 5 == 0);
    CU_ASSERT_EQUAL(s.backup.keep, RDC_SPEC_DEFAULT_BACKUP_KEEP);
    ASSERT_S3_PLACE(s.backup, "http://127.0.0.1:7070", "backups", RDC_SPEC_DEFAULT_RESTORE_REGION, "s3-creds");
    CU_ASSERT_STRING_EQUAL(s.backup.prefix, "prod/cache");
    json_object_put(rc);
    rc = spec_parsed(STANDALONE "," BACKUP("\"schedule\":\"@hourly\",\"keep\":2," DEST "," CREDS
                                           ",\"caSecret\":\"ca\"") "}",
                     &s);
    CU_ASSERT_EQUAL(s.backup.keep, 2);
    CU_ASSERT_STRING_EQUAL(s.backup.ca_secret, "ca");
    json_object_put(rc);
    rc = spec_parsed(STANDALONE "}", &s);
    CU_ASSERT_PTR_NULL(s.backup.schedule);
    json_object_put(rc);
}

/* The webhook refuses a bad schedule with cron_parse's words. */
static void test_webhook(void)
{
    static const review_row_t rows[] = {
        {"CREATE", NULL, STANDALONE "," BACKUP("\"schedule\":\"*/0 * * * *\"," DEST "," CREDS) "}",
         "spec.backup.schedule: Invalid value: \"*/0 * * * *\": must be a cron schedule", 422},
    };
    check_review_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

/* v1-only: spec.backup and status.backup gone in v1alpha1 (kept in the annotation), back
 * whole in v1. */
static void test_survives_v1alpha1(void)
{
    json_object *v1 = rc_with(STANDALONE "," BACKUP("\"schedule\":\"@daily\",\"keep\":3," DEST "," CREDS) "}");
    json_object_object_add(v1, "status",
                           json_tokener_parse("{\"phase\":\"Running\",\"backup\":{\"lastScheduleTime\":"
                                              "\"2026-12-06T14:00:00Z\"}}"));
    json_object *down = V1_ONLY_ROUND_TRIP(v1, "spec backup", "status backup");
    PUT_EACH(v1, down);
}

static const cu_entry_t tests[] = {
    CU_SUITE("scheduled backups: spec.backup"),
    {"rules (table), cron_parse's message", test_rules},
    {"in Cluster mode too", test_in_cluster_mode},
    {"the typed spec, its defaults", test_typed},
    {"the admission webhook refuses them", test_webhook},
    {"conversion: spec.backup and status.backup survive v1alpha1", test_survives_v1alpha1},
};
CU_MAIN(tests)
