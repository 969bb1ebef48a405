/* test_plan_backup: workerd's BACKUP steps (workerd/plan_backup.h; docs/backup.md "What
 * the operator does"), through plan_compute_observed with the work item's RedisBackups,
 * Jobs and BackupPods: the Job of a RedisBackup (its command and mounts, the replica
 * chosen over the primary), its status from the pod's termination line (never Succeeded
 * without "result":"ok"), spec.backup.schedule (due, not due, the requeue), retention. */
#include "cu_table.h"
#include "json_at.h"
#include "plan.h"
#include "plan_fixture.h"
#include "render.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS INT64_C(1000000000)
#define T1 (INT64_C(1714564800) * NS) /* 2024-05-01T12:00:00Z */
#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define REPLICATION                                                                                                \
    "{\"size\":2,\"image\":\"redis\",\"mode\":\"Replication\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}}"
#define STANDALONE "{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\""
#define SCHEDULE(cron, keep)                                                                                        \
    ",\"backup\":{\"schedule\":\"" cron "\",\"keep\":" #keep                                                       \
    ",\"destination\":{\"endpoint\":\"http://127.0.0.1:7070\","                                                    \
    "\"bucket\":\"backups\",\"prefix\":\"sched/cache\"},\"credentialsSecret\":\"s3\"}"
#define RB_SPEC                                                                                                     \
    "\"spec\":{\"source\":{\"cluster\":\"cache\"},\"destination\":{\"endpoint\":\"http://127.0.0.1:7070\","         \
    "\"bucket\":\"backups\",\"prefix\":\"prod/cache/\"},\"credentialsSecret\":{\"name\":\"s3\"},"                    \
    "\"caSecret\":{\"name\":\"s3-ca\"}}"

/* A RedisBackup name of the cluster "cache" with labels (JSON members, "" none) and
 * status (a JSON object text, "" none). */
static json_object *rb_of(const char *name, const char *labels, const char *created, const char *status)
{
    return parsef("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisBackup\",\"metadata\":{\"name\":\"%s\","
                  "\"namespace\":\"default\",\"uid\":\"uid-%s\",\"creationTimestamp\":\"%s\",\"labels\":{%s}}," RB_SPEC
                  "%s%s}",
                  name, name, created, labels, *status ? ",\"status\":" : "", status);
}

/* The plan of rc_text with the pods, backups, jobs and backup pods given (each may be NULL). */
static plan_t *plan_of(const char *rc_text, const json_object *pods, const json_object *backups,
                       const json_object *jobs, const json_object *bpods, int64_t now)
{
    json_object *rc = parse(rc_text);
    plan_observed_t more = {0};
    more.members = pods;
    more.backups = backups;
    more.jobs = jobs;
    more.backup_pods = bpods;
    more.operator_image = "op:test";
    plan_t *p = plan_compute_observed(rc, NULL, NULL, NULL, &more, now);
    json_object_put(rc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* The RedisCluster "cache" with spec (a JSON object text) and status (a JSON object
 * text, "" none), created at 11:50. Static storage: one at a time. */
static const char *rc_text(const char *spec, const char *status)
{
    static char out[4096];
    snprintf(out, sizeof(out),
             "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\","
             "\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1,\"creationTimestamp\":"
             "\"2024-05-01T11:50:00Z\",\"finalizers\":[\"" PLAN_FINALIZER "\"]},\"spec\":%s%s%s}",
             spec, *status ? ",\"status\":" : "", status);
    return out;
}

/* The plan's action of kind on resource named name, or NULL. */
static const plan_action_t *action_on(const plan_t *p, plan_action_kind_t kind, const char *resource,
                                      const char *name)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == kind && !strcmp(a->resource, resource) && !strcmp(a->name, name))
            return a;
    }
    return NULL;
}

/* The JSON text of o, plain. */
static const char *text_of(const json_object *o)
{
    return o ? json_object_to_json_string_ext((json_object *)o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
             : "(null)";
}

/* ---- START ----------------------------------------------------------------------------- */

static void test_job_of_a_backup(void)
{
    json_object *pods = json_object_new_array();
    json_object_array_add(pods, pod_of("cache-0 10.0.0.1 r1 1 0 primary"));
    json_object_array_add(pods, pod_of("cache-1 10.0.0.2 r1 1 0 replica"));
    json_object *rbs = json_object_new_array();
    json_object_array_add(rbs, rb_of("b1", "", "2024-05-01T11:59:00Z", ""));
    plan_t *p = plan_of(rc_text(REPLICATION "}", ""), pods, rbs, NULL, NULL, T1);
    const plan_action_t *job = action_on(p, PLAN_CREATE, "jobs", "b1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    CU_ASSERT_STRING_EQUAL(job->path, "/apis/batch/v1/namespaces/default/jobs?fieldManager=rediscluster-operator");
    CU_ASSERT_STRING_EQUAL(
        text_of(at(job->body, "spec template spec containers 0 command")),
        "[\"/usr/local/bin/rdc-backup\",\"take\",\"--redis\",\"10.0.0.2:6379\",\"--password-file\","
        "\"/var/run/rdc-backup/auth/password\",\"--endpoint\",\"http://127.0.0.1:7070\",\"--bucket\",\"backups\","
        "\"--key\",\"prod/cache/b1.rdb\",\"--credentials-dir\",\"/var/run/rdc-backup/s3\",\"--s3-ca-file\","
        "\"/var/run/rdc-backup/s3-ca/ca.crt\",\"--termination-log\",\"/dev/termination-log\"]");
    CU_ASSERT_STRING_EQUAL(
        text_of(at(job->body, "spec template spec containers 0 volumeMounts")),
        "[{\"name\":\"backup-auth\",\"mountPath\":\"/var/run/rdc-backup/auth\",\"readOnly\":true},"
        "{\"name\":\"backup-s3\",\"mountPath\":\"/var/run/rdc-backup/s3\",\"readOnly\":true},"
        "{\"name\":\"backup-s3-ca\",\"mountPath\":\"/var/run/rdc-backup/s3-ca\",\"readOnly\":true}]");
    ASSERT_STRS_AT(job->body, {"metadata name", "b1"}, {"metadata namespace", "default"},
                   {"metadata labels app.kubernetes.io/managed-by", "rediscluster-operator"},
                   {"metadata labels app.kubernetes.io/instance", "cache"},
                   {"metadata labels cache.example.com/backup", "b1"},
                   {"metadata ownerReferences 0 kind", "RedisBackup"},
                   {"metadata ownerReferences 0 uid", "uid-b1"},
                   {"spec template metadata labels cache.example.com/backup-cluster", "cache"},
                   {"spec template metadata labels cache.example.com/backup", "b1"},
                   {"spec template metadata labels app.kubernetes.io/instance", NULL},
                   {"spec template spec restartPolicy", "Never"},
                   {"spec template spec containers 0 image", "op:test"},
                   {"spec template spec containers 0 terminationMessagePolicy", "FallbackToLogsOnError"},
                   {"spec template spec volumes 0 secret secretName", "pw"},
                   {"spec template spec volumes 1 secret secretName", "s3"},
                   {"spec template spec volumes 2 secret secretName", "s3-ca"});
    CU_ASSERT(json_object_get_boolean(at(job->body, "metadata ownerReferences 0 controller")));
    CU_ASSERT(json_object_get_boolean(at(job->body, "spec template spec securityContext runAsNonRoot")));
    CU_ASSERT(json_object_get_boolean(
        at(job->body, "spec template spec containers 0 securityContext readOnlyRootFilesystem")));
    CU_ASSERT_EQUAL(int_at(job->body, "spec backoffLimit"), 0);
    CU_ASSERT_EQUAL(int_at(job->body, "spec activeDeadlineSeconds"), RENDER_BACKUP_DEADLINE_S);
    const plan_action_t *st = action_on(p, PLAN_UPDATE_STATUS, "redisbackups", "b1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    CU_ASSERT_STRING_EQUAL(st->path, "/apis/cache.example.com/v1/namespaces/default/redisbackups/b1/status"
                                     "?fieldManager=rediscluster-operator&force=true");
    ASSERT_STRS_AT(st->body, {"kind", "RedisBackup"}, {"status phase", "Running"}, {"status sourcePod", "cache-1"},
                   {"status startTime", "2024-05-01T12:00:00Z"});
    CU_ASSERT(job < st); /* the Job first: Running says there is one */
    const plan_event_t *ev = find_event(p, "BackupStarted");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    CU_ASSERT_STRING_EQUAL(str_at(ev->involved, "kind"), "RedisBackup");
    CU_ASSERT_STRING_EQUAL(str_at(ev->involved, "metadata uid"), "uid-b1");
    plan_destroy(&p);
    PUT_EACH(pods, rbs);
}

/* Which pod a backup is taken from, and what a cached Job or a final phase leaves alone. */
static void test_source_and_idempotence(void)
{
    static const struct {
        const char *name, *pods[3], *phase;
        int job;
        const char *source; /* NULL: no Job create */
        const char *status; /* the phase written, NULL: none */
    } rows[] = {
        {"replica over primary", {"cache-0 10.0.0.1 r 1 0 primary", "cache-1 10.0.0.2 r 1 0 replica"}, "", 0,
         "10.0.0.2:6379", "Running"},
        {"a replica not Ready: the primary", {"cache-0 10.0.0.1 r 1 0 primary", "cache-1 10.0.0.2 r 0 0 replica"}, "",
         0, "10.0.0.1:6379", "Running"},
        {"a terminating replica: the primary",
         {"cache-0 10.0.0.1 r 1 0 primary", "cache-1 10.0.0.2 r 1 1 replica"}, "", 0, "10.0.0.1:6379", "Running"},
        {"Standalone's one pod (no role label)", {"cache-0 10.0.0.9 r 1 0 -"}, "", 0, "10.0.0.9:6379", "Running"},
        {"IPv6", {"cache-0 fd00::5 r 1 0 -"}, "", 0, "[fd00::5]:6379", "Running"},
        {"no Ready pod: Pending", {"cache-0 10.0.0.1 r 0 0 primary"}, "", 0, NULL, "Pending"},
        {"a Job cached: no second one", {"cache-0 10.0.0.1 r 1 0 primary"}, "", 1, NULL, NULL},
        {"Running without a cached Job for 60 s (no startTime: since its creation): Failed",
         {"cache-0 10.0.0.1 r 1 0 primary"}, "Running", 0, NULL, "Failed"},
        {"Succeeded: nothing", {"cache-0 10.0.0.1 r 1 0 primary"}, "Succeeded", 0, NULL, NULL},
        {"Failed: nothing", {"cache-0 10.0.0.1 r 1 0 primary"}, "Failed", 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *pods = json_object_new_array(), *rbs = json_object_new_array(), *jobs = json_object_new_array();
        for (size_t k = 0; k < 3 && rows[i].pods[k]; k++)
            json_object_array_add(pods, pod_of(rows[i].pods[k]));
        char status[100] = "";
        if (*rows[i].phase)
            snprintf(status, sizeof(status), "{\"phase\":\"%s\"}", rows[i].phase);
        json_object_array_add(rbs, rb_of("b1", "", "2024-05-01T11:59:00Z", status));
        if (rows[i].job)
            json_object_array_add(jobs, parse("{\"metadata\":{\"name\":\"b1\",\"namespace\":\"default\",\"labels\":"
                                              "{\"cache.example.com/backup\":\"b1\"}},\"status\":{\"active\":1}}"));
        plan_t *p = plan_of(rc_text(REPLICATION "}", ""), pods, rbs, jobs, NULL, T1);
        const plan_action_t *job = action_on(p, PLAN_CREATE, "jobs", "b1");
        const plan_action_t *st = action_on(p, PLAN_UPDATE_STATUS, "redisbackups", "b1");
        const char *src = job ? str_at(job->body, "spec template spec containers 0 command 3") : NULL;
        const char *phase = st ? str_at(st->body, "status phase") : NULL;
        if ((rows[i].source ? !src || strcmp(src, rows[i].source) : src != NULL) ||
            (rows[i].status ? !phase || strcmp(phase, rows[i].status) : phase != NULL))
            fprintf(stderr, "\n  row \"%s\": source %s, phase %s\n", rows[i].name, src ? src : "-",
                    phase ? phase : "-");
        CU_ASSERT_STRING_EQUAL(src ? src : "-", rows[i].source ? rows[i].source : "-");
        CU_ASSERT_STRING_EQUAL(phase ? phase : "-", rows[i].status ? rows[i].status : "-");
        plan_destroy(&p);
        PUT_EACH(pods, rbs, jobs);
    }
}

/* ---- FINISH ---------------------------------------------------------------------------- */

#define OK_LINE                                                                                                    \
    "{\"result\":\"ok\",\"source\":\"10.0.0.2:6379\",\"bucket\":\"backups\",\"key\":\"prod/cache/b1.rdb\","       \
    "\"size\":26889072,\"sha256\":\"" SHA "\",\"offset\":29188913,\"startTime\":\"2024-05-01T11:59:01Z\","          \
    "\"completionTime\":\"2024-05-01T11:59:02Z\"}"
#define BAD_LINE                                                                                                   \
    "rdc-backup take: PutObject backups/prod/cache/b1.rdb: HTTP 404 NoSuchBucket: The specified bucket does not "  \
    "exist."

static void test_finish(void)
{
    static const struct {
        const char *name, *pod_phase;
        int exit_code;
        const char *message; /* NULL: the container has not terminated */
        int deadline;        /* the Job's Failed condition, DeadlineExceeded */
        const char *phase;   /* the phase written, NULL: none */
        const char *status_message;
    } rows[] = {
        {"ok line: Succeeded", "Succeeded", 0, OK_LINE "\n", 0, "Succeeded", ""},
        {"failure line: Failed with it", "Failed", 1, BAD_LINE "\n", 0, "Failed", BAD_LINE},
        {"result not ok: never Succeeded", "Succeeded", 0, "{\"result\":\"skipped\"}", 0, "Failed",
         "{\"result\":\"skipped\"}"},
        {"ok line, exit 1: Failed", "Failed", 1, OK_LINE, 0, "Failed", OK_LINE},
        {"no message: Failed", "Succeeded", 0, "", 0, "Failed",
         "the backup's container ended with exit code 0 and no message"},
        {"killed before its line (exit 137): Failed, the signal said", "Failed", 137, "", 0, "Failed",
         "the backup's container was killed by signal 9 (exit code 137) before it said anything: no object was "
         "completed"},
        {"exit 2, no message: Failed with the code", "Failed", 2, "", 0, "Failed",
         "the backup's container ended with exit code 2 and no message"},
        {"not JSON: Failed", "Succeeded", 0, "done", 0, "Failed", "done"},
        {"two lines (the log's tail): Failed", "Succeeded", 0, OK_LINE "\n" OK_LINE, 0, "Failed", NULL},
        {"running: nothing", "Running", 0, NULL, 0, NULL, NULL},
        {"no pod, Job past its deadline: Failed", NULL, 0, NULL, 1, "Failed",
         "Job b1 failed: DeadlineExceeded: Job was active longer than specified deadline"},
        {"no pod, Job active: nothing", NULL, 0, NULL, 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *pods = json_object_new_array(), *rbs = json_object_new_array(), *jobs = json_object_new_array();
        json_object *bpods = json_object_new_array();
        json_object_array_add(pods, pod_of("cache-0 10.0.0.9 r 1 0 -"));
        json_object_array_add(rbs, rb_of("b1", "", "2024-05-01T11:59:00Z",
                                         "{\"phase\":\"Running\",\"sourcePod\":\"cache-0\",\"startTime\":"
                                         "\"2024-05-01T11:59:00Z\"}"));
        json_object_array_add(
            jobs, parsef("{\"metadata\":{\"name\":\"b1\",\"namespace\":\"default\",\"labels\":{"
                         "\"cache.example.com/backup\":\"b1\"}},\"status\":{%s}}",
                         rows[i].deadline ? "\"failed\":1,\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\","
                                            "\"reason\":\"DeadlineExceeded\",\"message\":\"Job was active longer "
                                            "than specified deadline\"}]"
                                          : "\"active\":1"));
        if (rows[i].pod_phase) {
            json_object *pod = parsef("{\"metadata\":{\"name\":\"b1-xyz\",\"namespace\":\"default\",\"labels\":{"
                                      "\"cache.example.com/backup-cluster\":\"cache\",\"cache.example.com/backup\":"
                                      "\"b1\"}},\"status\":{\"phase\":\"%s\",\"containerStatuses\":[{\"state\":{}}]}}",
                                      rows[i].pod_phase);
            if (rows[i].message) {
                json_object *t = json_object_new_object();
                json_object_object_add(t, "exitCode", json_object_new_int(rows[i].exit_code));
                json_object_object_add(t, "message", json_object_new_string(rows[i].message));
                json_object_object_add(at(pod, "status containerStatuses 0 state"), "terminated", t);
            }
            json_object_array_add(bpods, pod);
        }
        plan_t *p = plan_of(rc_text(STANDALONE "}", ""), pods, rbs, jobs, bpods, T1);
        const plan_action_t *st = action_on(p, PLAN_UPDATE_STATUS, "redisbackups", "b1");
        const char *phase = st ? str_at(st->body, "status phase") : NULL;
        if (rows[i].phase ? !phase || strcmp(phase, rows[i].phase) : phase != NULL)
            fprintf(stderr, "\n  row \"%s\": phase %s\n", rows[i].name, phase ? phase : "-");
        CU_ASSERT_STRING_EQUAL(phase ? phase : "-", rows[i].phase ? rows[i].phase : "-");
        CU_ASSERT_PTR_NULL(action_on(p, PLAN_CREATE, "jobs", "b1"));
        if (st && rows[i].status_message)
            CU_ASSERT_PTR_NOT_NULL(strstr(str_at(st->body, "status message"), rows[i].status_message));
        if (phase && !strcmp(phase, "Succeeded")) {
            ASSERT_STRS_AT(st->body, {"status key", "prod/cache/b1.rdb"}, {"status sha256", SHA},
                           {"status sourcePod", "cache-0"}, {"status startTime", "2024-05-01T11:59:01Z"},
                           {"status completionTime", "2024-05-01T11:59:02Z"});
            CU_ASSERT_EQUAL(int_at(st->body, "status size"), 26889072);
            CU_ASSERT_EQUAL(int_at(st->body, "status offset"), 29188913);
            CU_ASSERT(has_event(p, "BackupSucceeded"));
        }
        if (phase && !strcmp(phase, "Failed")) {
            const plan_event_t *ev = find_event(p, "BackupFailed");
            CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
            CU_ASSERT_STRING_EQUAL(ev->type, "Warning");
            CU_ASSERT_STRING_EQUAL(str_at(ev->involved, "metadata name"), "b1");
            CU_ASSERT_PTR_NULL(str_at(st->body, "status sha256"));
        }
        plan_destroy(&p);
        PUT_EACH(pods, rbs, jobs, bpods);
    }
}

/* A Running RedisBackup whose Job is not cached: waits PLAN_BACKUP_JOB_GONE_S from its
 * startTime (the Job's ADDED event may be on the way), then Failed. */
static void test_job_gone(void)
{
    static const struct {
        const char *name, *start;
        const char *phase;   /* written, NULL: none */
    } rows[] = {
        {"started 30 s ago: waits (requeue within 30 s)", "2024-05-01T11:59:30Z", NULL},
        {"started 2 min ago: Failed, its Job is gone", "2024-05-01T11:58:00Z", "Failed"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *pods = json_object_new_array(), *rbs = json_object_new_array();
        json_object_array_add(pods, pod_of("cache-0 10.0.0.9 r 1 0 -"));
        char st[200];
        snprintf(st, sizeof(st), "{\"phase\":\"Running\",\"sourcePod\":\"cache-0\",\"startTime\":\"%s\"}",
                 rows[i].start);
        json_object_array_add(rbs, rb_of("b1", "", "2024-05-01T11:58:00Z", st));
        plan_t *p = plan_of(rc_text(STANDALONE "}", ""), pods, rbs, NULL, NULL, T1);
        const plan_action_t *w = action_on(p, PLAN_UPDATE_STATUS, "redisbackups", "b1");
        const char *phase = w ? str_at(w->body, "status phase") : NULL;
        CU_ASSERT_STRING_EQUAL(phase ? phase : "-", rows[i].phase ? rows[i].phase : "-");
        CU_ASSERT_PTR_NULL(action_on(p, PLAN_CREATE, "jobs", "b1")); /* never a second Job */
        if (!rows[i].phase)
            CU_ASSERT(plan_requeue_after_ns(p) > 0 && plan_requeue_after_ns(p) <= 30 * NS);
        if (phase) {
            CU_ASSERT_PTR_NOT_NULL(strstr(str_at(w->body, "status message"), "its Job b1 is gone"));
            CU_ASSERT(has_event(p, "BackupFailed"));
        }
        plan_destroy(&p);
        PUT_EACH(pods, rbs);
    }
}

/* ---- SCHEDULE and RETENTION -------------------------------------------------------------- */

static void test_schedule(void)
{
    static const struct {
        const char *name, *status; /* the cluster's status ("" none) */
        int64_t now_s;             /* after T1 */
        int existing;              /* the RedisBackup of 12:00 is cached */
        const char *created;       /* the RedisBackup created, NULL: none */
        const char *last;          /* status.backup.lastScheduleTime written, NULL: no write of it */
        int64_t requeue_s;         /* the requeue at most (the cluster, not Running, asks 10 s) */
    } rows[] = {
        {"never ran: due at 12:00 (created 11:50)", "", 0, 0, "cache-202405011200", "2024-05-01T12:00:00Z", 10},
        {"ran at 12:00, now 12:04:56: not due, requeue at 12:05", "{\"backup\":{\"lastScheduleTime\":"
         "\"2024-05-01T12:00:00Z\"}}", 296, 0, NULL, NULL, 4},
        {"ran at 11:55, now 12:07: due for 12:05 (missed ones once)", "{\"backup\":{\"lastScheduleTime\":"
         "\"2024-05-01T11:55:00Z\"}}", 420, 0, "cache-202405011205", "2024-05-01T12:05:00Z", 10},
        {"its RedisBackup cached already: recorded, not created again", "", 0, 1, NULL, "2024-05-01T12:00:00Z",
         10},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *pods = json_object_new_array(), *rbs = json_object_new_array();
        json_object_array_add(pods, pod_of("cache-0 10.0.0.9 r 1 0 -"));
        if (rows[i].existing)
            json_object_array_add(rbs, rb_of("cache-202405011200", "\"cache.example.com/schedule\":\"cache\"",
                                             "2024-05-01T12:00:00Z", "{\"phase\":\"Running\"}"));
        plan_t *p = plan_of(rc_text(STANDALONE SCHEDULE("*/5 * * * *", 2) "}", rows[i].status), pods, rbs, NULL,
                            NULL, T1 + rows[i].now_s * NS);
        const plan_action_t *made = find_action(p, PLAN_CREATE, "redisbackups");
        const plan_action_t *st = action_on(p, PLAN_UPDATE_STATUS, "redisclusters", "cache");
        const char *last = st ? str_at(st->body, "status backup lastScheduleTime") : NULL;
        if (rows[i].last && (!last || strcmp(last, rows[i].last)))
            fprintf(stderr, "\n  row \"%s\": lastScheduleTime %s\n", rows[i].name, last ? last : "-");
        CU_ASSERT_STRING_EQUAL(made ? made->name : "-", rows[i].created ? rows[i].created : "-");
        if (rows[i].last)
            CU_ASSERT_STRING_EQUAL(last ? last : "-", rows[i].last);
        CU_ASSERT(plan_requeue_after_ns(p) > 0 && plan_requeue_after_ns(p) <= rows[i].requeue_s * NS);
        if (made) {
            ASSERT_STRS_AT(made->body, {"kind", "RedisBackup"}, {"metadata labels cache.example.com/schedule", "cache"},
                           {"metadata labels cache.example.com/backup-cluster", "cache"},
                           {"metadata labels app.kubernetes.io/managed-by", "rediscluster-operator"},
                           {"metadata ownerReferences 0 kind", "RedisCluster"},
                           {"metadata ownerReferences 0 uid", "uid-1"}, {"spec source cluster", "cache"},
                           {"spec destination prefix", "sched/cache"}, {"spec credentialsSecret name", "s3"});
            CU_ASSERT(made < st); /* created before the time is recorded */
        }
        plan_destroy(&p);
        PUT_EACH(pods, rbs);
    }
}

/* A schedule's RedisBackup's Job: take --prefix P --keep N instead of --key. */
static void test_scheduled_job(void)
{
    json_object *pods = json_object_new_array(), *rbs = json_object_new_array();
    json_object_array_add(pods, pod_of("cache-0 10.0.0.9 r 1 0 -"));
    json_object *rb =
        rb_of("cache-202405011200", "\"cache.example.com/schedule\":\"cache\"", "2024-05-01T12:00:00Z", "");
    json_object_object_add(at(rb, "spec destination"), "prefix", json_object_new_string("sched/cache"));
    json_object_array_add(rbs, rb);
    plan_t *p = plan_of(rc_text(STANDALONE SCHEDULE("*/5 * * * *", 2) "}",
                                "{\"backup\":{\"lastScheduleTime\":\"2024-05-01T12:00:00Z\"}}"),
                        pods, rbs, NULL, NULL, T1 + 10 * NS);
    const plan_action_t *job = action_on(p, PLAN_CREATE, "jobs", "cache-202405011200");
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    const char *cmd = text_of(at(job->body, "spec template spec containers 0 command"));
    CU_ASSERT_PTR_NOT_NULL(strstr(cmd, "\"--prefix\",\"sched/cache\",\"--keep\",\"2\",\"--credentials-dir\""));
    CU_ASSERT_PTR_NULL(strstr(cmd, "--key"));
    plan_destroy(&p);
    PUT_EACH(pods, rbs);
}

static void test_retention(void)
{
    static const struct {
        const char *name, *created, *phase;
    } rbs_rows[] = {
        {"cache-202405010900", "2024-05-01T09:00:00Z", "Running"}, /* the oldest, never deleted */
        {"cache-202405011000", "2024-05-01T10:00:00Z", "Succeeded"},
        {"cache-202405011005", "2024-05-01T10:05:00Z", "Failed"},
        {"cache-202405011100", "2024-05-01T11:00:00Z", "Succeeded"},
        {"cache-202405011130", "2024-05-01T11:30:00Z", "Succeeded"},
        {"cache-202405011145", "2024-05-01T11:45:00Z", "Succeeded"},
        {"other", "2024-05-01T08:00:00Z", "Succeeded"}, /* not the schedule's: not its to trim */
    };
    json_object *pods = json_object_new_array(), *rbs = json_object_new_array();
    json_object_array_add(pods, pod_of("cache-0 10.0.0.9 r 1 0 -"));
    for (size_t i = 0; i < sizeof(rbs_rows) / sizeof(rbs_rows[0]); i++) {
        char status[64];
        snprintf(status, sizeof(status), "{\"phase\":\"%s\"}", rbs_rows[i].phase);
        json_object_array_add(rbs, rb_of(rbs_rows[i].name, strcmp(rbs_rows[i].name, "other")
                                                               ? "\"cache.example.com/schedule\":\"cache\""
                                                               : "",
                                         rbs_rows[i].created, status));
    }
    json_object *jobs = parse("[{\"metadata\":{\"name\":\"cache-202405010900\",\"labels\":{"
                              "\"cache.example.com/backup\":\"cache-202405010900\"}},\"status\":{\"active\":1}}]");
    plan_t *p = plan_of(rc_text(STANDALONE SCHEDULE("0 * * * *", 2) "}",
                                "{\"backup\":{\"lastScheduleTime\":\"2024-05-01T12:00:00Z\"}}"),
                        pods, rbs, jobs, NULL, T1 + 60 * NS);
    CU_ASSERT_EQUAL(count_actions(p, PLAN_DELETE, "redisbackups"), 2);
    const plan_action_t *d1 = action_on(p, PLAN_DELETE, "redisbackups", "cache-202405011000");
    const plan_action_t *d2 = action_on(p, PLAN_DELETE, "redisbackups", "cache-202405011100");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d1);
    CU_ASSERT_PTR_NOT_NULL(d2);
    CU_ASSERT_STRING_EQUAL(str_at(d1->body, "preconditions uid"), "uid-cache-202405011000");
    CU_ASSERT_PTR_NULL(action_on(p, PLAN_DELETE, "redisbackups", "cache-202405010900"));
    CU_ASSERT_PTR_NULL(action_on(p, PLAN_DELETE, "redisbackups", "other"));
    CU_ASSERT_PTR_NULL(action_on(p, PLAN_DELETE, "redisbackups", "cache-202405011005"));
    plan_destroy(&p);
    PUT_EACH(pods, rbs, jobs);
}

static const cu_entry_t tests[] = {
    CU_SUITE("BACKUP (plan_backup.h)"),
    {"a RedisBackup's Job: command, mounts, labels, status Running", test_job_of_a_backup},
    {"the source pod; a cached Job or a final phase (table)", test_source_and_idempotence},
    {"the outcome from the termination line (table)", test_finish},
    {"a Running RedisBackup whose Job is gone: waits 60 s, then Failed (table)", test_job_gone},
    {"spec.backup.schedule: due, not due, the requeue (table)", test_schedule},
    {"a schedule's Job: --prefix --keep", test_scheduled_job},
    {"retention: the oldest Succeeded, never a running one", test_retention},
};
CU_MAIN(tests)
