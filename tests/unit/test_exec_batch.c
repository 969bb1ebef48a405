/* Unit tests of the executor's stages (exec_stage_end), of exec_plan and the ASYNC machine,
 * and of the reads (reads.h) against an in-process fake API server: a stage's independent
 * child writes go out together, the StatefulSet only after the ConfigMap is written, a
 * refused write stops the writes that depend on it, a transient failure is retried by
 * the one rule (a create's 503 is not, and the fence can refuse a retry),
 * several keys progress together on one loop, and a reconcile's reads go out at once.
 */
#include "buf.h"
#include "clock.h"
#include "executor.h"
#include "fake_api.h"
#include "kube_client.h"
#include "kube_config.h"
#include "loop.h"
#include "plan.h"
#include "plan_build.h"
#include "reads.h"

#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REQS 128

typedef struct {
    char method[8];
    char path[256];
    char ns[32];         /* the key: its namespace (a create's path has no name) */
    int64_t start, end;
    int code;
} req_t;

typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    req_t r[MAX_REQS];
    int n;
    int active, max_active; /* requests other than Events in flight */
    int delay_ms;
    const char *refuse;   /* a path part whose requests get 403 */
    const char *flaky;    /* a path part whose first request gets 503 */
    const char *missing;  /* a path part whose GETs get 404 */
    const char *list;     /* a path part whose GETs are LISTs of two pages of one pod */
    int flaked;
    char status_body[4096]; /* the last status write's body */
} api_t;

static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url,
                      const char *body, buf_t *out)
{
    api_t *a = user;
    pthread_mutex_lock(&a->mu);
    int i = a->n < MAX_REQS ? a->n++ : MAX_REQS - 1;
    snprintf(a->r[i].method, sizeof(a->r[i].method), "%s", method);
    snprintf(a->r[i].path, sizeof(a->r[i].path), "%s", url);
    if (strstr(url, "/status") && body)
        snprintf(a->status_body, sizeof(a->status_body), "%s", body);
    const char *nsp = strstr(url, "/namespaces/");
    snprintf(a->r[i].ns, sizeof(a->r[i].ns), "%.*s", nsp ? (int)strcspn(nsp + 12, "/") : 0, nsp ? nsp + 12 : "");
    a->r[i].start = clock_mono_ns();
    int event = strstr(url, "/events") != NULL;
    if (!event && ++a->active > a->max_active)
        a->max_active = a->active;
    int code = !strcmp(method, "POST") ? 201 : 200;
    if (a->refuse && strstr(url, a->refuse))
        code = 403;
    if (a->missing && strstr(url, a->missing))
        code = 404;
    if (a->flaky && strstr(url, a->flaky) && !a->flaked) {
        a->flaked = 1;
        code = 503;
    }
    int delay = a->delay_ms;
    pthread_mutex_unlock(&a->mu);
    if (delay)
        usleep((useconds_t)delay * 1000);
    if (code >= 400)
        buf_printf(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":%d,"
                        "\"reason\":\"%s\",\"message\":\"no\"}",
                   code, code == 403 ? "Forbidden" : code == 404 ? "NotFound" : "ServiceUnavailable");
    else if (!strcmp(method, "GET") && a->list && strstr(url, a->list))
        buf_printf(out, "{\"metadata\":{%s},\"items\":[{\"metadata\":{\"name\":\"p%d\"}}]}",
                   MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue") ? ""
                                                                                     : "\"continue\":\"more\"",
                   MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue") ? 2 : 1);
    else if (!strcmp(method, "GET"))
        buf_printf(out, "{\"metadata\":{\"name\":\"%s\"}}", strrchr(url, '/') + 1);
    else
        buf_puts(out, body && *body ? body : "{}");
    pthread_mutex_lock(&a->mu);
    if (!event)
        a->active--;
    a->r[i].end = clock_mono_ns();
    a->r[i].code = code;
    pthread_mutex_unlock(&a->mu);
    return code;
}

/* A new cluster's plan, carried out against the fake server. */
typedef struct {
    json_object *rc;
    plan_t *plan;
    size_t failed;    /* run_plan's failed action and error */
    kube_error_t err;
    exec_ctx_t x;
    api_t api;
    kube_config_t *cfg;
    kube_client_t *client;
} env_t;

static void env_open(env_t *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->api.mu, NULL);
    kube_client_opts_t o = fake_api_opts(2);
    fake_api_open(&e->api.srv, on_request, &e->api, &o, &e->cfg, &e->client);
    e->x = (exec_ctx_t){.client = e->client, .reconcile_id = "test", .instance = "test"};
    /* a new cluster: finalizer, ConfigMap, Service, StatefulSet, status */
    e->rc = json_tokener_parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{"
                               "\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1,"
                               "\"resourceVersion\":\"5\"},\"spec\":{\"size\":1,\"image\":\"redis\"}}");
    e->plan = plan_compute(e->rc, NULL, NULL, NULL, clock_wall_ns());
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->plan);
    CU_ASSERT_EQUAL_FATAL(plan_action_count(e->plan), 6);
}

static void env_close(env_t *e)
{
    plan_destroy(&e->plan);
    json_object_put(e->rc);
    fake_api_close(&e->api.srv, &e->cfg, &e->client);
    pthread_mutex_destroy(&e->api.mu);
}

/* Carry out e's plan with exec_plan; its result, the failed action and error in e. */
static exec_result_t run_plan(env_t *e)
{
    e->failed = 99;
    return exec_plan(&e->x, e->rc, e->plan, &e->failed, &e->err);
}

/* Open e with a fake server that refuses (403) the requests whose path contains refuse
 * and answers the first that contains flaky 503 (NULL: none); run its plan, which comes
 * to want. The caller closes e. */
static void run_faulty(env_t *e, const char *refuse, const char *flaky, exec_result_t want)
{
    env_open(e);
    e->api.refuse = refuse;
    e->api.flaky = flaky;
    CU_ASSERT_EQUAL(run_plan(e), want);
}

static const req_t *find(env_t *e, const char *method, const char *part)
{
    for (int i = 0; i < e->api.n; i++)
        if (!strcmp(e->api.r[i].method, method) && strstr(e->api.r[i].path, part))
            return &e->api.r[i];
    return NULL;
}

/* Requests other than Events (exec_plan records them on its own recorder). */
static int writes(env_t *e)
{
    int n = 0;
    for (int i = 0; i < e->api.n; i++)
        n += strstr(e->api.r[i].path, "/events") == NULL;
    return n;
}

/* The stages of a new cluster's plan: [finalizer] [ConfigMap, Service] [StatefulSet,
 * PodDisruptionBudget] [status]. */
static void test_stages(void)
{
    env_t e;
    env_open(&e);
    const plan_t *p = e.plan;
    CU_ASSERT_EQUAL(plan_action(p, 0)->kind, PLAN_ADD_FINALIZER);
    CU_ASSERT_STRING_EQUAL(plan_action(p, 1)->resource, "configmaps");
    CU_ASSERT_STRING_EQUAL(plan_action(p, 2)->resource, "services");
    CU_ASSERT_STRING_EQUAL(plan_action(p, 3)->resource, "statefulsets");
    CU_ASSERT_STRING_EQUAL(plan_action(p, 4)->resource, "poddisruptionbudgets");
    CU_ASSERT_EQUAL(plan_action(p, 5)->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_EQUAL(exec_stage_end(p, 0), 1);
    CU_ASSERT_EQUAL(exec_stage_end(p, 1), 3);
    CU_ASSERT_EQUAL(exec_stage_end(p, 3), 5); /* StatefulSet and PDB */
    CU_ASSERT_EQUAL(exec_stage_end(p, 5), 6);
    CU_ASSERT_EQUAL(exec_stage_end(p, 6), 6);
    /* a stage without a ConfigMap write takes the StatefulSet (from the Service on) */
    CU_ASSERT_EQUAL(exec_stage_end(p, 2), 5);
    env_close(&e);
}

/* The ConfigMap and the Service are in flight at once; the StatefulSet starts after the
 * ConfigMap has been answered; the status comes last; the Events of the writes go out. */
static void test_batch_concurrent_and_ordered(void)
{
    env_t e;
    env_open(&e);
    e.api.delay_ms = 150;
    CU_ASSERT_EQUAL(run_plan(&e), EXEC_OK);
    CU_ASSERT_EQUAL(writes(&e), 6);
    CU_ASSERT_EQUAL(e.api.max_active, 2);
    const req_t *cm = find(&e, "POST", "/configmaps"), *svc = find(&e, "POST", "/services"),
                *sts = find(&e, "POST", "/statefulsets"), *st = find(&e, "PATCH", "/status"),
                *fin = find(&e, "PATCH", "/redisclusters/cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cm);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fin);
    CU_ASSERT(fin->end <= cm->start && fin->end <= svc->start);
    CU_ASSERT(cm->start < svc->end && svc->start < cm->end); /* overlapped */
    CU_ASSERT(sts->start >= cm->end);
    CU_ASSERT(st->start >= sts->end);
    const req_t *pdb = find(&e, "POST", "/poddisruptionbudgets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pdb);
    CU_ASSERT(pdb->start >= cm->end && pdb->start < sts->end && sts->start < pdb->end); /* with the StatefulSet */
    CU_ASSERT(st->start >= pdb->end);
    CU_ASSERT_PTR_NOT_NULL(find(&e, "POST", "/events")); /* recorded (exec_plan's own recorder) */
    env_close(&e);
}

/* A refused ConfigMap stops what depends on it (the StatefulSet, the status); the Service
 * of the same stage is written all the same; the failure is the ConfigMap's. */
static void test_refused_write_stops_dependents(void)
{
    env_t e;
    run_faulty(&e, "/configmaps", NULL, EXEC_ERROR);
    CU_ASSERT_EQUAL(e.failed, 1);
    CU_ASSERT(kube_error_is_forbidden(&e.err));
    CU_ASSERT_PTR_NOT_NULL(find(&e, "POST", "/services"));
    CU_ASSERT_PTR_NULL(find(&e, "POST", "/statefulsets"));
    CU_ASSERT_PTR_NULL(find(&e, "PATCH", "/status"));
    /* the Service refused instead: reported as the Service (index 2) */
    env_close(&e);
    run_faulty(&e, "/services", NULL, EXEC_ERROR);
    CU_ASSERT_EQUAL(e.failed, 2);
    CU_ASSERT_PTR_NULL(find(&e, "POST", "/statefulsets"));
    env_close(&e);
}

/* A 503 on a write that is safe to repeat (the status, a server-side apply) is retried
 * and the plan goes on. (A create's 503 is not: the next test.) */
static void test_transient_failure_retried(void)
{
    env_t e;
    run_faulty(&e, NULL, "/status", EXEC_OK);
    CU_ASSERT_EQUAL(e.api.flaked, 1);
    CU_ASSERT_EQUAL(writes(&e), 7); /* 6 + the retried status */
    CU_ASSERT_PTR_NOT_NULL(find(&e, "POST", "/statefulsets"));
    CU_ASSERT_PTR_NOT_NULL(find(&e, "PATCH", "/status"));
    env_close(&e);
}

/* The one retry rule (kube_retry.h): a create (POST) answered 503 once sent is not sent
 * again, the server may have acted; the run stops there, the Service's failure reported
 * as such, and the next reconcile observes what is there. */
static void test_create_503_not_retried(void)
{
    env_t e;
    run_faulty(&e, NULL, "/services", EXEC_ERROR);
    CU_ASSERT_EQUAL(e.api.flaked, 1);
    CU_ASSERT_EQUAL(e.failed, 2);
    CU_ASSERT_EQUAL(e.err.code, KERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(writes(&e), 3); /* finalizer, ConfigMap, the Service once */
    CU_ASSERT_PTR_NULL(find(&e, "POST", "/statefulsets"));
    env_close(&e);
}

/* Leadership lost while a write waits for its retry: the fence, asked before the retry,
 * refuses it; the run ends fenced at that write, which is not sent again. */
static int leads_until_503(void *user)
{
    api_t *a = user;
    pthread_mutex_lock(&a->mu);
    int flaked = a->flaked;
    pthread_mutex_unlock(&a->mu);
    return !flaked;
}

static void test_fence_refuses_retry(void)
{
    env_t e;
    env_open(&e);
    e.api.flaky = "/status";
    e.x.fence = leads_until_503;
    e.x.fence_user = &e.api;
    CU_ASSERT_EQUAL(run_plan(&e), EXEC_FENCED);
    CU_ASSERT_EQUAL(e.failed, 5);
    CU_ASSERT_EQUAL(writes(&e), 6); /* the status once */
    env_close(&e);
}

/* Run a set of reads to its end on a loop of its own; the seconds it took. */
static int reads_finished;
static void on_reads_done(void *arg)
{
    (void)arg;
    reads_finished = 1;
}

static double run_reads(env_t *e, reads_req_t *req, size_t n)
{
    loop_t *loop = loop_new();
    loop_curl_t *lc = loop_curl_open(loop);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lc);
    reads_finished = 0;
    int64_t t0 = clock_mono_ns();
    reads_t *r = reads_start(lc, e->client, req, n, on_reads_done, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(reads_finished, 0); /* never from inside reads_start */
    for (int i = 0; i < 200 && !reads_finished; i++)
        loop_run_once(loop, 50 * NS_PER_MS);
    CU_ASSERT(reads_finished);
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    loop_curl_destroy(&lc);
    loop_destroy(&loop);
    return secs;
}

/* reads: GETs at once (404 -> no object, no error), a LIST followed page by page, a
 * refused read failing alone, a 503 retried. */
static void test_reads(void)
{
    env_t e;
    env_open(&e);
    e.api.delay_ms = 100;
    e.api.missing = "/services/";
    e.api.refuse = "/secrets/";
    e.api.flaky = "/statefulsets/";
    e.api.list = "/pods";
    reads_req_t req[5];
    CU_ASSERT_EQUAL(reads_get(&req[0], "", "v1", "default", "configmaps", "cache"), 0);
    CU_ASSERT_EQUAL(reads_get(&req[1], "", "v1", "default", "services", "cache"), 0);
    CU_ASSERT_EQUAL(reads_get(&req[2], "apps", "v1", "default", "statefulsets", "cache"), 0);
    CU_ASSERT_EQUAL(reads_get(&req[3], "", "v1", "default", "secrets", "auth"), 0);
    CU_ASSERT_EQUAL(reads_list(&req[4], "default", "pods", "app=cache", NULL), 0);
    double secs = run_reads(&e, req, 5);
    CU_ASSERT_EQUAL(e.api.max_active, 5); /* all at once */
    CU_ASSERT(secs < 0.9);                 /* 2 rounds (the retry, the second page) + 0.2 s backoff */
    CU_ASSERT(req[0].err.code == KERR_OK && req[0].obj != NULL);
    CU_ASSERT(req[1].err.code == KERR_OK && req[1].obj == NULL); /* 404: absent */
    CU_ASSERT(req[2].err.code == KERR_OK && req[2].obj != NULL); /* after the 503 */
    CU_ASSERT_EQUAL(e.api.flaked, 1);
    CU_ASSERT(kube_error_is_forbidden(&req[3].err));
    CU_ASSERT_PTR_NULL(req[3].obj);
    CU_ASSERT_FATAL(req[4].err.code == KERR_OK && req[4].obj != NULL);
    CU_ASSERT_EQUAL(json_object_array_length(req[4].obj), 2); /* two pages of one */
    json_object *md = NULL, *nm = NULL;
    CU_ASSERT(req[2].obj && json_object_object_get_ex(req[2].obj, "metadata", &md) &&
              json_object_object_get_ex(md, "name", &nm) && !strcmp(json_object_get_string(nm), "cache"));
    for (int k = 0; k < 5; k++)
        json_object_put(req[k].obj);
    env_close(&e);
}

/* The fence refusing: nothing of the stage is sent. */
static int never(void *user)
{
    (void)user;
    return 0;
}

static void test_fenced_batch_sends_nothing(void)
{
    env_t e;
    env_open(&e);
    e.x.fence = never;
    CU_ASSERT_EQUAL(run_plan(&e), EXEC_FENCED);
    CU_ASSERT_EQUAL(e.api.n, 0);
    env_close(&e);
}

/* ---- several keys in flight on one loop (executor.h ASYNC) ---------------------------- */

#define KEYS 3

typedef struct {
    exec_run_outcome_t out; /* the run's done argument */
    json_object *rc;
    plan_t *plan;
} key_t_;

static int on_tick(loop_t *loop, int id, void *arg)
{
    (void)loop;
    (void)id;
    (*(int *)arg)++;
    return 0;
}

/* KEYS new clusters in namespaces ns-0.. run together on one loop; returns the seconds
 * it took. ticks counts a 10 ms loop timer meanwhile (the loop was never blocked). */
static double run_keys(env_t *e, key_t_ k[KEYS], int *ticks)
{
    loop_t *loop = loop_new();
    exec_async_t *a = exec_async_new(loop, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    /* Events go out on the loop too, on the same multi, as in workerd */
    recorder_t *rec = recorder_new(e->client, exec_async_curl(a), NULL);
    e->x.recorder = rec;
    *ticks = 0;
    loop_add_timer(loop, 10 * NS_PER_MS, 10 * NS_PER_MS, on_tick, ticks);
    for (int i = 0; i < KEYS; i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{"
                 "\"name\":\"cache\",\"namespace\":\"ns-%d\",\"uid\":\"uid-%d\",\"generation\":1,"
                 "\"resourceVersion\":\"5\"},\"spec\":{\"size\":1,\"image\":\"redis\"}}", i, i);
        memset(&k[i], 0, sizeof(k[i]));
        k[i].rc = json_tokener_parse(text);
        k[i].plan = plan_compute(k[i].rc, NULL, NULL, NULL, clock_wall_ns());
        CU_ASSERT_PTR_NOT_NULL_FATAL(k[i].plan);
    }
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < KEYS; i++)
        CU_ASSERT_PTR_NOT_NULL_FATAL(exec_run_start(a, &e->x, k[i].rc, k[i].plan, exec_run_keep_outcome, &k[i].out));
    CU_ASSERT_EQUAL(exec_async_runs(a), KEYS);
    for (int spins = 0; spins < 2000; spins++) {
        int all = 1;
        for (int i = 0; i < KEYS; i++)
            all &= k[i].out.finished;
        if (all)
            break;
        loop_run_once(loop, 100 * NS_PER_MS);
    }
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    CU_ASSERT_EQUAL(exec_async_runs(a), 0);
    for (int i = 0; i < 100 && recorder_pending(rec); i++)
        loop_run_once(loop, 10 * NS_PER_MS);
    e->x.recorder = NULL;
    recorder_destroy(&rec);
    exec_async_destroy(&a);
    loop_destroy(&loop);
    return secs;
}

static void keys_free(key_t_ k[KEYS])
{
    for (int i = 0; i < KEYS; i++) {
        plan_destroy(&k[i].plan);
        json_object_put(k[i].rc);
    }
}

static const req_t *find_ns(env_t *e, const char *ns, const char *method, const char *part)
{
    for (int i = 0; i < e->api.n; i++)
        if (!strcmp(e->api.r[i].ns, ns) && !strcmp(e->api.r[i].method, method) && strstr(e->api.r[i].path, part))
            return &e->api.r[i];
    return NULL;
}

/* Three keys progress together: their stages overlap (up to 2 requests each in flight),
 * the whole takes about one key's time, and each key keeps its order (ConfigMap before
 * StatefulSet, status last). */
static void test_keys_together(void)
{
    env_t e;
    env_open(&e);
    e.api.delay_ms = 100;
    key_t_ k[KEYS];
    int ticks = 0;
    double secs = run_keys(&e, k, &ticks);
    for (int i = 0; i < KEYS; i++) {
        CU_ASSERT(k[i].out.finished);
        CU_ASSERT_EQUAL(k[i].out.r, EXEC_OK);
    }
    CU_ASSERT_EQUAL(writes(&e), 6 * KEYS);
    CU_ASSERT(e.api.max_active >= KEYS); /* the keys' requests were in flight together */
    /* one key is 4 round trips of 100 ms; three one after another would be 1.2 s */
    fprintf(stderr, "keys together: %.3f s, %d ticks\n", secs, ticks);
    CU_ASSERT(secs < 0.9);
    CU_ASSERT(ticks >= 20); /* the loop ran its timers meanwhile */
    for (int i = 0; i < KEYS; i++) {
        char ns[16];
        snprintf(ns, sizeof(ns), "ns-%d", i);
        const req_t *cm = find_ns(&e, ns, "POST", "/configmaps"), *sts = find_ns(&e, ns, "POST", "/statefulsets"),
                    *st = find_ns(&e, ns, "PATCH", "/status");
        CU_ASSERT_PTR_NOT_NULL_FATAL(cm);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
        CU_ASSERT_PTR_NOT_NULL_FATAL(st);
        CU_ASSERT(sts->start >= cm->end);
        CU_ASSERT(st->start >= sts->end);
    }
    keys_free(k);
    env_close(&e);
}

/* A refused ConfigMap stops that key's StatefulSet and status, and only that key's; a
 * 503 on another key's status write (an apply: safe to repeat) is retried and that key
 * converges. */
static void test_keys_failure_isolated(void)
{
    env_t e;
    env_open(&e);
    e.api.delay_ms = 20;
    e.api.refuse = "/namespaces/ns-1/configmaps";
    e.api.flaky = "/namespaces/ns-2/redisclusters/cache/status";
    key_t_ k[KEYS];
    int ticks = 0;
    run_keys(&e, k, &ticks);
    CU_ASSERT_EQUAL(k[0].out.r, EXEC_OK);
    CU_ASSERT_EQUAL(k[1].out.r, EXEC_ERROR);
    CU_ASSERT_EQUAL(k[1].out.failed, 1);
    CU_ASSERT(kube_error_is_forbidden(&k[1].out.err));
    CU_ASSERT_EQUAL(k[2].out.r, EXEC_OK);
    CU_ASSERT_EQUAL(e.api.flaked, 1);
    CU_ASSERT_PTR_NOT_NULL(find_ns(&e, "ns-1", "POST", "/services")); /* same stage: sent */
    CU_ASSERT_PTR_NULL(find_ns(&e, "ns-1", "POST", "/statefulsets"));
    CU_ASSERT_PTR_NULL(find_ns(&e, "ns-1", "PATCH", "/status"));
    CU_ASSERT_PTR_NOT_NULL(find_ns(&e, "ns-0", "PATCH", "/status"));
    CU_ASSERT_PTR_NOT_NULL(find_ns(&e, "ns-2", "PATCH", "/status"));
    CU_ASSERT_EQUAL(writes(&e), 6 + 3 + 7); /* key 1 stopped after its first stage pair */
    keys_free(k);
    env_close(&e);
}

/* With the client's limiter on (50/s, burst 1), the waits for tokens are loop timers: the
 * writes are spaced by the limit, and the loop's other timers run meanwhile. */
static void test_keys_token_wait_is_a_timer(void)
{
    env_t e;
    env_open(&e);
    kube_client_destroy(&e.client);
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 50;
    o.burst = 1;
    e.client = kube_client_new(e.cfg, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e.client);
    e.x.client = e.client;
    key_t_ k[KEYS];
    int ticks = 0;
    double secs = run_keys(&e, k, &ticks);
    for (int i = 0; i < KEYS; i++)
        CU_ASSERT_EQUAL(k[i].out.r, EXEC_OK);
    CU_ASSERT_EQUAL(writes(&e), 6 * KEYS);
    CU_ASSERT(secs >= (6.0 * KEYS - 1) / 50 - 0.02); /* 17 waits of 20 ms */
    fprintf(stderr, "token waits: %.3f s, %d ticks\n", secs, ticks);
    CU_ASSERT(ticks >= (int)(secs * 100 / 2)); /* never blocked for long */
    keys_free(k);
    env_close(&e);
}

/* A run cancelled with requests in flight calls nothing and leaks nothing (ASan). */
static void test_run_cancel(void)
{
    env_t e;
    env_open(&e);
    e.api.delay_ms = 200;
    loop_t *loop = loop_new();
    exec_async_t *a = exec_async_new(loop, NULL);
    key_t_ k = {0};
    exec_run_t *run = exec_run_start(a, &e.x, e.rc, e.plan, exec_run_keep_outcome, &k.out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(run);
    for (int i = 0; i < 5; i++)
        loop_run_once(loop, 10 * NS_PER_MS);
    exec_run_cancel(&run);
    CU_ASSERT_PTR_NULL(run);
    CU_ASSERT_EQUAL(exec_async_runs(a), 0);
    for (int i = 0; i < 5; i++)
        loop_run_once(loop, 10 * NS_PER_MS);
    CU_ASSERT_EQUAL(k.out.finished, 0);
    exec_async_destroy(&a);
    loop_destroy(&loop);
    env_close(&e);
}

/* COMMAND RECORD (plan.h): a status write whose lastRedisCommandTime is PLAN_NOW_TOKEN
 * goes with the time it is sent; a Redis command is not sent once its plan's window has
 * passed (a plan resumed late), and nothing after it either. */
static void test_command_record(void)
{
    env_t e;
    env_open(&e);
    plan_destroy(&e.plan);
    e.plan = plan_new();
    json_object *body = json_tokener_parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
                                           "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},"
                                           "\"status\":{\"phase\":\"Running\","
                                           "\"lastRedisCommandTime\":\"" PLAN_NOW_TOKEN "\"}}");
    json_object *again = NULL;
    json_object_deep_copy(body, &again, NULL);
    plan_add_action(e.plan, PLAN_UPDATE_STATUS, "cache.example.com/v1", "redisclusters", "default", "cache", body,
                    "status");
    int64_t before = clock_wall_ns() / NS_PER_MS * NS_PER_MS;
    CU_ASSERT_EQUAL(run_plan(&e), EXEC_OK);
    int64_t after = clock_wall_ns(), sent = 0;
    json_object *got = json_tokener_parse(e.api.status_body), *st = NULL, *t = NULL;
    CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(got, "status", &st) &&
                         json_object_object_get_ex(st, "lastRedisCommandTime", &t));
    CU_ASSERT_EQUAL(clock_parse_rfc3339(json_object_get_string(t), &sent), 0);
    CU_ASSERT(sent >= before && sent <= after);
    json_object_put(got);
    /* the plan itself still holds the token (a retry of it is stamped anew) */
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(
                               json_object_object_get(plan_action(e.plan, 0)->body, "status"), "lastRedisCommandTime")),
                           PLAN_NOW_TOKEN);
    plan_destroy(&e.plan);

    /* A command whose moment has passed: refused before any connection, the plan stops. */
    e.plan = plan_new();
    const char *argv[] = {"REPLICAOF", "NO", "ONE"};
    int k = plan_add_redis_action(e.plan, "default", "cache-1", "192.0.2.1", 3, argv, "promote");
    plan_set_not_after(e.plan, k, clock_wall_ns() - NS_PER_MS);
    plan_add_action(e.plan, PLAN_UPDATE_STATUS, "cache.example.com/v1", "redisclusters", "default", "cache", again,
                    "status");
    int n0 = e.api.n;
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(run_plan(&e), EXEC_ERROR);
    CU_ASSERT(clock_mono_ns() - t0 < 500 * NS_PER_MS); /* no connection tried */
    CU_ASSERT_EQUAL(e.failed, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.err.message, "moment has passed"));
    CU_ASSERT_EQUAL(e.api.n, n0);
    env_close(&e);
}

static const cu_entry_t tests[] = {
    CU_SUITE("exec_batch"),
    {"stages of a new cluster", test_stages},
    {"batched: concurrent, StatefulSet after ConfigMap", test_batch_concurrent_and_ordered},
    {"a refused write stops its dependents", test_refused_write_stops_dependents},
    {"a transient failure is retried", test_transient_failure_retried},
    {"a create's 503 is not retried once sent", test_create_503_not_retried},
    {"the fence refuses a retry", test_fence_refuses_retry},
    {"fenced: nothing sent", test_fenced_batch_sends_nothing},
    {"reads at once: 404, a LIST of pages, a refusal, a retry", test_reads},
    {"several keys in flight progress together, each in order", test_keys_together},
    {"a key's failure stops its own writes only; retries", test_keys_failure_isolated},
    {"a wait for tokens is a loop timer", test_keys_token_wait_is_a_timer},
    {"a cancelled run", test_run_cancel},
    {"the command record: the time a status is sent; a command past its moment", test_command_record},
};
CU_MAIN(tests)
