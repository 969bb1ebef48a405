/* test_backup_metrics: the metrics of backups (docs/backup.md "Metrics").
 *
 * rdc_backups_total (workerd): a RedisBackup's final status write carries the
 * resourceVersion it was planned from, and the executor counts it once the API took it:
 * against a fake API server that keeps a RedisBackup's resourceVersion as the real one
 * does, a transition counts once however many runs of its plan are made (the second is a
 * 409), a write of one deleted meanwhile (404) and the non-final writes (Running) count
 * nothing, a reconcile that sees the phase final writes nothing; the series of two worker
 * processes stay apart in the supervisor's merge.
 *
 * The gauges (informerd, backupgauge.h): from a cache of RedisClusters and RedisBackups
 * fed delta by delta, the last success's time and size, the schedule's period (and its
 * refresh), the time since which a schedule without a success waits, and each going away
 * with what it was computed from.
 */
#include "backupgauge.h"
#include "buf.h"
#include "cache.h"
#include "cu_table.h"
#include "executor.h"
#include "fake_api.h"
#include "json_at.h"
#include "merge.h"
#include "metrics.h"
#include "metrics_text.h"
#include "plan.h"
#include "plan_fixture.h"
#include "projection.h"
#include "schedule.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS INT64_C(1000000000)
#define T1 (INT64_C(1714564800) * NS) /* 2024-05-01T12:00:00Z */

/* ---- rdc_backups_total ----------------------------------------------------------------- */

#define RB_STATUS_PATH "/redisbackups/b1/status"
#define OK_LINE                                                                                                    \
    "{\"result\":\"ok\",\"key\":\"prod/b1.rdb\",\"size\":4096,\"sha256\":\"00\",\"startTime\":"                     \
    "\"2024-05-01T11:59:01Z\",\"completionTime\":\"2024-05-01T11:59:02Z\"}"

/* The fake API: the RedisBackup b1's resourceVersion as the API server keeps it (a status
 * apply that names another is refused 409, one that is taken moves it), or 404 for it
 * when gone; every other request is taken. */
typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    int rv;            /* b1's resourceVersion */
    int gone;          /* b1 was deleted */
    int rb_writes;     /* status writes of b1 taken */
} api_t;

static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                      buf_t *out)
{
    (void)c;
    api_t *a = user;
    if (!strstr(url, RB_STATUS_PATH)) {
        buf_puts(out, body && *body ? body : "{}");
        return !strcmp(method, "POST") ? 201 : 200;
    }
    json_object *o = json_tokener_parse(body);
    const char *want = str_at(o, "metadata resourceVersion");
    pthread_mutex_lock(&a->mu);
    char have[16];
    snprintf(have, sizeof(have), "%d", a->rv);
    int code = a->gone ? 404 : want && strcmp(want, have) ? 409 : 200;
    if (code == 200) {
        a->rv++;
        a->rb_writes++;
    }
    pthread_mutex_unlock(&a->mu);
    json_object_put(o);
    if (code == 200)
        buf_puts(out, body);
    else
        buf_printf(out,
                   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":%d,"
                   "\"reason\":\"%s\"}",
                   code, code == 404 ? "NotFound" : "Conflict");
    return code;
}

/* The RedisBackup b1 of "cache" at resourceVersion rv with status (a JSON object text). */
static json_object *rb1(int rv, const char *status)
{
    return parsef("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisBackup\",\"metadata\":{\"name\":\"b1\","
                  "\"namespace\":\"default\",\"uid\":\"uid-b1\",\"resourceVersion\":\"%d\",\"creationTimestamp\":"
                  "\"2024-05-01T11:59:00Z\"},\"spec\":{\"source\":{\"cluster\":\"cache\"},\"destination\":{"
                  "\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"prefix\":\"prod/\"},"
                  "\"credentialsSecret\":{\"name\":\"s3\"}},\"status\":%s}",
                  rv, status);
}

/* The plan of the Standalone "cache" (its pod cache-0 Ready) with the RedisBackup rb and,
 * when job, its Job b1, whose pod, when exit_code >= 0, terminated with exit_code and
 * message. */
static plan_t *plan_with(json_object *rb, int job, int exit_code, const char *message)
{
    json_object *rbs = json_object_new_array(), *jobs = json_object_new_array(), *bpods = json_object_new_array();
    json_object *pods = json_object_new_array();
    json_object_array_add(pods, pod_of("cache-0 10.0.0.9 r 1 0 -"));
    json_object_array_add(rbs, json_object_get(rb));
    if (job)
        json_object_array_add(jobs, parsef("{\"metadata\":{\"name\":\"b1\",\"namespace\":\"default\",\"labels\":{"
                                           "\"cache.example.com/backup\":\"b1\"}},\"status\":{\"active\":1}}"));
    if (job && exit_code >= 0) {
        json_object *pod = parsef("{\"metadata\":{\"name\":\"b1-x\",\"namespace\":\"default\",\"labels\":{"
                                  "\"cache.example.com/backup\":\"b1\"}},\"status\":{\"phase\":\"%s\","
                                  "\"containerStatuses\":[{\"state\":{}}]}}",
                                  exit_code ? "Failed" : "Succeeded");
        json_object *t = json_object_new_object();
        json_object_object_add(t, "exitCode", json_object_new_int(exit_code));
        json_object_object_add(t, "message", json_object_new_string(message));
        json_object_object_add(at(pod, "status containerStatuses 0 state"), "terminated", t);
        json_object_array_add(bpods, pod);
    }
    json_object *rc = rc_with("{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\"}");
    plan_observed_t more = {
        .members = pods, .backups = rbs, .jobs = jobs, .backup_pods = bpods, .operator_image = "op:test"};
    plan_t *p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    PUT_EACH(rc, pods, rbs, jobs, bpods);
    return p;
}

/* The plan's status write of b1, or NULL. */
static const plan_action_t *rb_write(const plan_t *p)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_UPDATE_STATUS && !strcmp(a->resource, "redisbackups"))
            return a;
    }
    return NULL;
}

static double backups_total(const char *result)
{
    metric_family_t *f = metrics_counter(metrics_default(), "rdc_backups_total", "", "namespace,rediscluster,result");
    return metric_value(f, METRIC_LABELS("default", "cache", result));
}

/* Carry out p against a; returns the result. */
static exec_result_t run(api_t *a, const plan_t *p)
{
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    kube_client_opts_t o = fake_api_opts(0);
    fake_api_connect(&a->srv, &o, &cfg, &client);
    exec_ctx_t x = {.client = client, .reconcile_id = "test", .instance = "test"};
    json_object *rc = rc_with("{\"size\":1,\"image\":\"redis\"}");
    size_t failed = 0;
    kube_error_t err;
    exec_result_t r = exec_plan(&x, rc, p, &failed, &err);
    json_object_put(rc);
    kube_client_destroy(&client);
    kube_config_destroy(&cfg);
    return r;
}

static void api_open(api_t *a, int rv)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->mu, NULL);
    a->rv = rv;
    fake_api_start(&a->srv, on_request, a);
}

static void api_close(api_t *a)
{
    fake_api_stop(&a->srv);
    pthread_mutex_destroy(&a->mu);
}

/* Run p against a: it returns want, and the counts read succeeded and failed after it. */
static void run_counts(api_t *a, const plan_t *p, exec_result_t want, double succeeded, double failed)
{
    CU_ASSERT_EQUAL(run(a, p), want);
    CU_ASSERT_EQUAL(backups_total("succeeded"), succeeded);
    CU_ASSERT_EQUAL(backups_total("failed"), failed);
}

/* Succeeded once: the write carries the observed resourceVersion; the API takes the first
 * run of the plan (counted), refuses the second made from the same observation (a retry
 * dispatched before the watch brought the first, or another worker: 409, not counted);
 * the next reconcile sees Succeeded and writes nothing. */
static void test_counted_once_per_transition(void)
{
    api_t a;
    api_open(&a, 7);
    json_object *running = rb1(7, "{\"phase\":\"Running\",\"sourcePod\":\"cache-0\"}");
    plan_t *p = plan_with(running, 1, 0, OK_LINE);
    const plan_action_t *w = rb_write(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    ASSERT_STRS_AT(w->body, {"status phase", "Succeeded"}, {"metadata resourceVersion", "7"});
    CU_ASSERT_STRING_EQUAL(plan_backup_result(w), "succeeded");
    double before = backups_total("succeeded"), failed_before = backups_total("failed");
    run_counts(&a, p, EXEC_OK, before + 1, failed_before);
    run_counts(&a, p, EXEC_CONFLICT, before + 1, failed_before); /* the same transition again: refused */
    CU_ASSERT_EQUAL(a.rb_writes, 1);
    plan_destroy(&p);
    /* the next reconcile, from the RedisBackup as the API now has it */
    json_object *done = rb1(8, "{\"phase\":\"Succeeded\",\"completionTime\":\"2024-05-01T11:59:02Z\"}");
    p = plan_with(done, 1, 0, OK_LINE);
    CU_ASSERT_PTR_NULL(rb_write(p));
    run_counts(&a, p, EXEC_OK, before + 1, failed_before);
    plan_destroy(&p);
    PUT_EACH(running, done);
    api_close(&a);
}

/* Failed counts as failed; a final write to a RedisBackup deleted meanwhile (404, which
 * the executor takes as done) counts nothing; a non-final write (Running) counts nothing. */
static void test_failed_gone_and_unfinished(void)
{
    api_t a;
    api_open(&a, 3);
    json_object *running = rb1(3, "{\"phase\":\"Running\",\"sourcePod\":\"cache-0\"}");
    plan_t *p = plan_with(running, 1, 1, "rdc-backup take: PutObject: HTTP 404 NoSuchBucket");
    const plan_action_t *w = rb_write(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_STRING_EQUAL(plan_backup_result(w), "failed");
    double before = backups_total("failed"), ok_before = backups_total("succeeded");
    a.gone = 1;
    run_counts(&a, p, EXEC_OK, ok_before, before);
    a.gone = 0;
    run_counts(&a, p, EXEC_OK, ok_before, before + 1);
    plan_destroy(&p);
    /* START: no Job yet, a pod to take it from: the Job and phase Running, no count */
    json_object *fresh = rb1(4, "{}");
    p = plan_with(fresh, 0, -1, NULL);
    w = rb_write(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_STRING_EQUAL(str_at(w->body, "status phase"), "Running");
    CU_ASSERT_PTR_NULL(str_at(w->body, "metadata resourceVersion"));
    CU_ASSERT_PTR_NULL(plan_backup_result(w));
    run_counts(&a, p, EXEC_OK, ok_before, before + 1);
    plan_destroy(&p);
    PUT_EACH(fresh, running);
    api_close(&a);
}

/* Two worker processes count the same cluster's backups: the supervisor's merge keeps
 * each one's series (label child), so their sum is the total. */
static void test_workers_sum_in_the_merge(void)
{
    metrics_registry_t *r1 = metrics_registry_new(), *r2 = metrics_registry_new();
    const char *const *l = METRIC_LABELS("default", "cache", "succeeded");
    metric_counter_add(metrics_counter(r1, "rdc_backups_total", "h", "namespace,rediscluster,result"), l, 2);
    metric_counter_add(metrics_counter(r2, "rdc_backups_total", "h", "namespace,rediscluster,result"), l, 3);
    char *t1 = exposition_of(r1), *t2 = exposition_of(r2);
    merge_t *m = merge_new();
    CU_ASSERT_EQUAL(merge_add(m, "workerd-0", t1, strlen(t1)), 0);
    CU_ASSERT_EQUAL(merge_add(m, "workerd-1", t2, strlen(t2)), 0);
    buf_t out;
    buf_init(&out, 0);
    CU_ASSERT_EQUAL(merge_render(m, &out), 0);
    double sum = 0;
    int series = 0;
    for (const char *s = strstr(buf_str(&out), "\nrdc_backups_total{"); s; s = strstr(s + 1, "\nrdc_backups_total{")) {
        series++;
        const char *eol = strchr(s + 1, '\n'), *sp = s;
        for (const char *q = s + 1; q < (eol ? eol : s + strlen(s)); q++)
            if (*q == ' ')
                sp = q;
        sum += strtod(sp, NULL);
    }
    CU_ASSERT_EQUAL(series, 2);
    CU_ASSERT_EQUAL(sum, 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf_str(&out), "child=\"workerd-0\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf_str(&out), "child=\"workerd-1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf_str(&out), "# TYPE rdc_backups_total counter"));
    buf_free(&out);
    merge_destroy(&m);
    free(t1);
    free(t2);
    metrics_registry_destroy(&r1);
    metrics_registry_destroy(&r2);
}

/* ---- the gauges ------------------------------------------------------------------------ */

#define DAY 86400
/* 2024-01-15T00:00:00Z, a Monday */
#define MON INT64_C(1705276800)

typedef struct {
    cache_t *cache;
    backupgauge_t *g;
    metrics_registry_t *reg;
} gauges_t;

static void on_delta(void *ud, const cache_delta_t *d)
{
    backupgauge_on_delta(ud, d);
}

static void gauges_open(gauges_t *t)
{
    t->cache = cache_new("RedisCluster");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->cache);
    CU_ASSERT_EQUAL_FATAL(cache_add_kind(t->cache, "RedisBackup"), 0);
    CU_ASSERT_EQUAL_FATAL(cache_add_kind(t->cache, "Pod"), 0);
    CU_ASSERT_EQUAL_FATAL(cache_set_projection(t->cache, "RedisBackup", projection_of("RedisBackup")), 0);
    CU_ASSERT_EQUAL_FATAL(cache_set_owner_field(t->cache, "RedisBackup", "spec.source.cluster"), 0);
    t->reg = metrics_registry_new();
    t->g = backupgauge_new(t->cache, t->reg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->g);
    cache_set_delta_handler(t->cache, on_delta, t->g);
}

static void gauges_close(gauges_t *t)
{
    backupgauge_destroy(&t->g);
    cache_destroy(&t->cache);
    metrics_registry_destroy(&t->reg);
}

static void put(gauges_t *t, const char *kind, json_object *o)
{
    char err[256] = "";
    CU_ASSERT_EQUAL(cache_upsert(t->cache, kind, o, NULL, err, sizeof(err)), 0);
    if (*err)
        fprintf(stderr, "\n  %s\n", err);
    json_object_put(o);
}

static void del(gauges_t *t, const char *kind, const char *key)
{
    char err[256];
    CU_ASSERT_EQUAL(cache_delete(t->cache, kind, key, NULL, err, sizeof(err)), 0);
}

/* The RedisCluster ns/name (resourceVersion rv) with spec.backup.schedule (NULL: none). */
static void put_rc(gauges_t *t, const char *ns, const char *name, int rv, const char *schedule)
{
    char backup[256] = "";
    if (schedule)
        snprintf(backup, sizeof(backup), ",\"backup\":{\"schedule\":\"%s\"}", schedule);
    put(t, "RedisCluster",
        parsef("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"%s\","
               "\"namespace\":\"%s\",\"uid\":\"uid-%s\",\"resourceVersion\":\"%d\"},\"spec\":{\"size\":1%s}}",
               name, ns, name, rv, backup));
}

/* The RedisBackup default/name of cluster, created at created (Unix seconds), of the
 * cluster's schedule or not, in phase (NULL: no status) with completionTime done (-1:
 * none) and size. */
static void put_rb(gauges_t *t, const char *name, const char *cluster, int64_t created, int scheduled,
                   const char *phase, int64_t done, int64_t size)
{
    char c[40], d[40], status[256] = "", labels[128] = "";
    time_t tc = (time_t)created, td = (time_t)done;
    struct tm tm;
    strftime(c, sizeof(c), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&tc, &tm));
    strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&td, &tm));
    if (phase)
        snprintf(status, sizeof(status), ",\"status\":{\"phase\":\"%s\",\"size\":%lld%s%s%s}", phase,
                 (long long)size, done >= 0 ? ",\"completionTime\":\"" : "", done >= 0 ? d : "",
                 done >= 0 ? "\"" : "");
    if (scheduled)
        snprintf(labels, sizeof(labels), ",\"labels\":{\"cache.example.com/schedule\":\"%s\"}", cluster);
    put(t, "RedisBackup",
        parsef("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\",\"resourceVersion\":"
               "\"%lld\",\"creationTimestamp\":\"%s\"%s},\"spec\":{\"source\":{\"cluster\":\"%s\"}}%s}",
               name, name, (long long)created, c, labels, cluster, status));
}

/* The value of name{namespace="default",rediscluster=cluster} after an update at now, or
 * -1 when there is no such series. */
static double gauge(gauges_t *t, const char *name, const char *cluster)
{
    char *text = exposition_of(t->reg), want[256];
    snprintf(want, sizeof(want), "\n%s{namespace=\"default\",rediscluster=\"%s\"} ", name, cluster);
    const char *s = text ? strstr(text, want) : NULL;
    double v = s ? strtod(s + strlen(want), NULL) : -1;
    free(text);
    return v;
}

#define SUCCESS "rdc_backup_last_success_timestamp_seconds"
#define SIZE "rdc_backup_last_success_size_bytes"
#define PERIOD "rdc_backup_schedule_period_seconds"
#define WAITING "rdc_backup_schedule_waiting_since_timestamp_seconds"

/* A schedule, then its backups: waiting since the oldest of them while none succeeded
 * (a one-off failure older than them does not count); then the latest success and its
 * size, whatever the order they come in; a deleted success gives way to the one before. */
static void test_gauges_from_backups(void)
{
    gauges_t t;
    gauges_open(&t);
    put_rc(&t, "default", "cache", 1, "0 3 * * *");
    backupgauge_update(t.g, MON);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "cache"), DAY);
    CU_ASSERT_EQUAL(gauge(&t, SUCCESS, "cache"), -1);
    CU_ASSERT_EQUAL(gauge(&t, WAITING, "cache"), -1); /* the schedule made none yet */
    put_rb(&t, "old-oneoff", "cache", MON - 30 * DAY, 0, "Failed", MON - 30 * DAY, 0);
    put_rb(&t, "cache-1", "cache", MON + 3 * 3600, 1, "Failed", MON + 3 * 3600 + 60, 0);
    put_rb(&t, "cache-2", "cache", MON + DAY + 3 * 3600, 1, "Running", -1, 0);
    backupgauge_update(t.g, MON + 2 * DAY);
    CU_ASSERT_EQUAL(gauge(&t, WAITING, "cache"), MON + 3 * 3600);
    CU_ASSERT_EQUAL(gauge(&t, SUCCESS, "cache"), -1);
    CU_ASSERT_EQUAL(gauge(&t, SIZE, "cache"), -1);
    put_rb(&t, "cache-3", "cache", MON + 2 * DAY, 1, "Succeeded", MON + 2 * DAY + 90, 4096);
    put_rb(&t, "oneoff", "cache", MON + DAY, 0, "Succeeded", MON + DAY + 30, 1024); /* older, comes later */
    backupgauge_update(t.g, MON + 2 * DAY + 100);
    CU_ASSERT_EQUAL(gauge(&t, SUCCESS, "cache"), MON + 2 * DAY + 90);
    CU_ASSERT_EQUAL(gauge(&t, SIZE, "cache"), 4096);
    CU_ASSERT_EQUAL(gauge(&t, WAITING, "cache"), -1);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "cache"), DAY);
    del(&t, "RedisBackup", "default/cache-3");
    backupgauge_update(t.g, MON + 2 * DAY + 200);
    CU_ASSERT_EQUAL(gauge(&t, SUCCESS, "cache"), MON + DAY + 30);
    CU_ASSERT_EQUAL(gauge(&t, SIZE, "cache"), 1024);
    del(&t, "RedisBackup", "default/oneoff");
    backupgauge_update(t.g, MON + 2 * DAY + 300);
    CU_ASSERT_EQUAL(gauge(&t, SUCCESS, "cache"), -1);
    CU_ASSERT_EQUAL(gauge(&t, WAITING, "cache"), MON + 3 * 3600);
    gauges_close(&t);
}

/* Without a schedule: the last success only; the schedule removed takes its period and
 * waiting series with it; the cluster deleted takes everything (its RedisBackups left
 * make none); another cluster's series are its own. */
static void test_gauges_go_away(void)
{
    gauges_t t;
    gauges_open(&t);
    put_rc(&t, "default", "cache", 1, "*/15 * * * *");
    put_rc(&t, "default", "other", 1, NULL);
    put_rc(&t, "default", "plain", 1, NULL); /* no backups, no schedule: no series */
    put_rb(&t, "o1", "other", MON, 0, "Succeeded", MON + 60, 77);
    put_rb(&t, "c1", "cache", MON, 1, "Failed", MON + 60, 0);
    backupgauge_update(t.g, MON + 3600);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "cache"), 900);
    CU_ASSERT_EQUAL(gauge(&t, WAITING, "cache"), MON);
    CU_ASSERT_EQUAL(gauge(&t, SUCCESS, "other"), MON + 60);
    CU_ASSERT_EQUAL(gauge(&t, SIZE, "other"), 77);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "other"), -1);
    CU_ASSERT_EQUAL(gauge(&t, WAITING, "other"), -1);
    char *text = exposition_of(t.reg);
    CU_ASSERT_PTR_NULL(strstr(text, "rediscluster=\"plain\""));
    free(text);
    put_rc(&t, "default", "cache", 2, NULL); /* the schedule removed */
    backupgauge_update(t.g, MON + 3700);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "cache"), -1);
    CU_ASSERT_EQUAL(gauge(&t, WAITING, "cache"), -1);
    put_rc(&t, "default", "cache", 3, "not a schedule");
    backupgauge_update(t.g, MON + 3800);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "cache"), -1);
    del(&t, "RedisCluster", "default/other");
    backupgauge_update(t.g, MON + 3900);
    text = exposition_of(t.reg);
    CU_ASSERT_PTR_NULL(strstr(text, "rediscluster=\"other\""));
    CU_ASSERT_PTR_NULL(strstr(text, "rediscluster=\"cache\""));
    free(text);
    put_rc(&t, "default", "cache", 4, "@hourly"); /* back, with the failure it had */
    backupgauge_update(t.g, MON + 4000);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "cache"), 3600);
    CU_ASSERT_EQUAL(gauge(&t, WAITING, "cache"), MON);
    gauges_close(&t);
}

/* A monthly schedule's period is that month's, computed again at least hourly; one that
 * never fires has none; a weekday schedule's is the weekend's. */
static void test_gauges_period(void)
{
    gauges_t t;
    gauges_open(&t);
    put_rc(&t, "default", "monthly", 1, "0 0 1 * *");
    put_rc(&t, "default", "never", 1, "0 0 30 2 *");
    put_rc(&t, "default", "weekdays", 1, "0 3 * * 1-5");
    backupgauge_update(t.g, MON); /* 2024-01-15: next Feb 1, then Mar 1 (a leap year) */
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "monthly"), 29 * DAY);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "never"), -1);
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "weekdays"), 3 * DAY);
    backupgauge_update(t.g, MON + 5 * DAY); /* Saturday */
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "weekdays"), 3 * DAY);
    backupgauge_update(t.g, MON + 31 * DAY); /* 2024-02-15: Mar 1 to Apr 1, no delta needed */
    CU_ASSERT_EQUAL(gauge(&t, PERIOD, "monthly"), 31 * DAY);
    gauges_close(&t);
}

static const cu_entry_t tests[] = {
    CU_SUITE("rdc_backups_total"),
    {"a transition counts once: its write is a compare-and-swap", test_counted_once_per_transition},
    {"failed counts; gone and unfinished do not", test_failed_gone_and_unfinished},
    {"two workers' series sum in the supervisor's merge", test_workers_sum_in_the_merge},
    CU_SUITE("backup gauges"),
    {"last success, size, waiting since", test_gauges_from_backups},
    {"series go with the schedule, the cluster, the backups", test_gauges_go_away},
    {"the schedule's period", test_gauges_period},
};
CU_MAIN(tests)
