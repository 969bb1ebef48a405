/* test_backup_cache: how informerd caches the objects of backups (docs/backup.md "What
 * the operator does"): a RedisBackup belongs to the RedisCluster its spec.source.cluster
 * names, whatever its ownerReferences say (cache_set_owner_field); a backup Job to its
 * instance label's; a backup Job's pod (kind BackupPod) to its backup-cluster label's;
 * each kept in its compact form (projection.c: the termination message kept, the pod's
 * spec not); the work item carries them as RedisBackups, Jobs, BackupPods, only when
 * there are any. */
#include "cache.h"
#include "cu_table.h"
#include "jsonx.h"
#include "projection.h"
#include "text_assert.h"
#include "workitem.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

static const char RC[] = "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":"
                         "\"cache\",\"namespace\":\"ns1\",\"uid\":\"u-rc\",\"resourceVersion\":\"1\"},\"spec\":{}}";
/* A user's RedisBackup of cache; a schedule's (owned by the RedisCluster "other" by its
 * ownerReference, yet naming cache: the field wins); one naming nobody. */
static const char RB_USER[] =
    "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisBackup\",\"metadata\":{\"name\":\"b1\",\"namespace\":"
    "\"ns1\",\"uid\":\"u-b1\",\"resourceVersion\":\"2\",\"creationTimestamp\":\"2026-12-06T14:00:00Z\","
    "\"managedFields\":[{\"manager\":\"kubectl\"}],\"annotations\":{\"a\":\"b\"}},\"spec\":{\"source\":{\"cluster\":"
    "\"cache\"},\"destination\":{\"endpoint\":\"http://s3:7070\",\"bucket\":\"backups\"},\"credentialsSecret\":"
    "{\"name\":\"s3\"}}}";
static const char RB_SCHED[] =
    "{\"metadata\":{\"name\":\"cache-202612061400\",\"namespace\":\"ns1\",\"uid\":\"u-b2\",\"resourceVersion\":\"3\","
    "\"labels\":{\"cache.example.com/schedule\":\"cache\"},\"ownerReferences\":[{\"apiVersion\":"
    "\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"name\":\"other\",\"uid\":\"u-other\",\"controller\":true}]},"
    "\"spec\":{\"source\":{\"cluster\":\"cache\"}},\"status\":{\"phase\":\"Running\"}}";
static const char RB_NOBODY[] = "{\"metadata\":{\"name\":\"b3\",\"namespace\":\"ns1\",\"uid\":\"u-b3\","
                                "\"resourceVersion\":\"4\"},\"spec\":{\"source\":{\"cluster\":7}}}";
static const char JOB[] =
    "{\"metadata\":{\"name\":\"b1\",\"namespace\":\"ns1\",\"uid\":\"u-j1\",\"resourceVersion\":\"5\",\"labels\":"
    "{\"app.kubernetes.io/instance\":\"cache\",\"app.kubernetes.io/managed-by\":\"rediscluster-operator\","
    "\"cache.example.com/backup\":\"b1\"},\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":"
    "\"RedisBackup\",\"name\":\"b1\",\"uid\":\"u-b1\",\"controller\":true}]},\"spec\":{\"backoffLimit\":0,"
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"take\"}]}}},\"status\":{\"failed\":1,\"conditions\":[{"
    "\"type\":\"Failed\",\"status\":\"True\",\"reason\":\"BackoffLimitExceeded\"}]}}";
#define LINE "rdc-backup take: 10.0.0.5:6379: AUTH: WRONGPASS"
static const char POD[] =
    "{\"metadata\":{\"name\":\"b1-x7k2p\",\"namespace\":\"ns1\",\"uid\":\"u-p1\",\"resourceVersion\":\"6\",\"labels\":"
    "{\"cache.example.com/backup-cluster\":\"cache\",\"cache.example.com/backup\":\"b1\",\"job-name\":\"b1\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"take\",\"args\":[\"take\"]}]},\"status\":{\"phase\":\"Failed\","
    "\"podIP\":\"10.0.0.9\",\"containerStatuses\":[{\"name\":\"take\",\"image\":\"op\",\"state\":{\"terminated\":{"
    "\"exitCode\":1,\"reason\":\"Error\",\"message\":\"" LINE "\"}}}]}}";

static cache_t *backup_cache(void)
{
    cache_t *c = cache_new("RedisCluster");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    static const char *const kinds[] = {"RedisBackup", "Job", "BackupPod"};
    for (size_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL_FATAL(cache_add_kind(c, kinds[i]), 0);
        CU_ASSERT_EQUAL_FATAL(cache_set_projection(c, kinds[i], projection_of(kinds[i])), 0);
    }
    CU_ASSERT_EQUAL_FATAL(cache_set_owner_field(c, "RedisBackup", "spec.source.cluster"), 0);
    CU_ASSERT_EQUAL_FATAL(cache_set_owner_label(c, "Job", "app.kubernetes.io/instance"), 0);
    CU_ASSERT_EQUAL_FATAL(cache_set_owner_label(c, "BackupPod", "cache.example.com/backup-cluster"), 0);
    CU_ASSERT_EQUAL(cache_set_owner_field(c, "RedisCluster", "spec.x"), -1); /* not the owner kind */
    CU_ASSERT_EQUAL(cache_set_owner_field(c, "Secret", "spec.x"), -1);       /* not watched */
    const struct {
        const char *kind, *text;
    } objs[] = {{"RedisCluster", RC}, {"RedisBackup", RB_USER}, {"RedisBackup", RB_SCHED},
                {"RedisBackup", RB_NOBODY}, {"Job", JOB}, {"BackupPod", POD}};
    for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
        json_object *o = json_tokener_parse(objs[i].text);
        char err[256] = "";
        CU_ASSERT_EQUAL(cache_upsert(c, objs[i].kind, o, NULL, err, sizeof(err)), 0);
        if (*err)
            fprintf(stderr, "\n  %s\n", err);
        json_object_put(o);
    }
    return c;
}

/* The key each object's change queues. */
static void test_owner_keys(void)
{
    cache_t *c = backup_cache();
    const struct {
        const char *kind, *key;
        int rc;
        const char *want;
    } rows[] = {
        {"RedisBackup", "ns1/b1", 0, "ns1/cache"},
        {"RedisBackup", "ns1/cache-202612061400", 0, "ns1/cache"}, /* the field, not the ownerReference */
        {"RedisBackup", "ns1/b3", 1, ""},                          /* not a string: no one's */
        {"Job", "ns1/b1", 0, "ns1/cache"},                         /* its controller is the RedisBackup */
        {"BackupPod", "ns1/b1-x7k2p", 0, "ns1/cache"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const cache_item_t *it = cache_lookup(c, rows[i].kind, rows[i].key);
        CU_ASSERT_PTR_NOT_NULL_FATAL(it);
        char key[256];
        CU_ASSERT_EQUAL(cache_item_owner_key(c, it, key, sizeof(key)), rows[i].rc);
        CU_ASSERT_STRING_EQUAL(key, rows[i].want);
    }
    cache_destroy(&c);
}

/* What is kept: the RedisBackup's spec and status, not managedFields or annotations; the
 * Job's status and labels, not its spec; the pod's termination message, not its spec or IP. */
static void test_compact(void)
{
    cache_t *c = backup_cache();
    const char *rb = cache_get_json(c, "RedisBackup", "ns1/b1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rb);
    ASSERT_TEXT_HAS(rb, "\"credentialsSecret\"", "\"creationTimestamp\"");
    ASSERT_TEXT_LACKS(rb, "managedFields", "annotations");
    const char *job = cache_get_json(c, "Job", "ns1/b1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    ASSERT_TEXT_HAS(job, "BackoffLimitExceeded", "cache.example.com/backup");
    ASSERT_TEXT_LACKS(job, "backoffLimit\"", "ownerReferences");
    const char *pod = cache_get_json(c, "BackupPod", "ns1/b1-x7k2p");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pod);
    ASSERT_TEXT_HAS(pod, LINE, "\"exitCode\":1", "\"phase\":\"Failed\"");
    ASSERT_TEXT_LACKS(pod, "\"spec\"", "10.0.0.9", "job-name");
    cache_destroy(&c);
}

/* The work item: the three lists for cache, none of them for a cluster without backups. */
static void test_work_item(void)
{
    cache_t *c = backup_cache();
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL_FATAL(workitem_children(c, "ns1/cache", NULL, 0, &b), 0);
    json_object *o = json_tokener_parse(buf_str(&b));
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    json_object *v = NULL;
    CU_ASSERT_TRUE(json_object_object_get_ex(o, "RedisBackups", &v) && json_object_array_length(v) == 2);
    CU_ASSERT_TRUE(json_object_object_get_ex(o, "Jobs", &v) && json_object_array_length(v) == 1);
    CU_ASSERT_TRUE(json_object_object_get_ex(o, "BackupPods", &v) && json_object_array_length(v) == 1);
    CU_ASSERT_TRUE(json_object_object_get_ex(o, "Pods", &v) && json_object_array_length(v) == 0);
    json_object_put(o);
    buf_free(&b);
    buf_init(&b, 0);
    CU_ASSERT_EQUAL_FATAL(workitem_children(c, "ns1/other", NULL, 0, &b), 0);
    CU_ASSERT_PTR_NULL(strstr(buf_str(&b), "RedisBackups"));
    CU_ASSERT_PTR_NULL(strstr(buf_str(&b), "Jobs"));
    CU_ASSERT_PTR_NULL(strstr(buf_str(&b), "BackupPods"));
    buf_free(&b);
    cache_destroy(&c);
}

static const cu_entry_t tests[] = {
    CU_SUITE("informerd: the objects of backups"),
    {"each maps to its RedisCluster's key", test_owner_keys},
    {"the compact forms", test_compact},
    {"the work item carries them, only when there are any", test_work_item},
};
CU_MAIN(tests)
