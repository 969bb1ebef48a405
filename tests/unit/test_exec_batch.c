/* Unit tests of the executor's stages (exec_stage_end) and of its batched path (exec_plan
 * with a curl multi) against an in-process fake API server: a stage's independent child
 * writes go out together, the StatefulSet only after the ConfigMap is written, a refused
 * write stops the writes that depend on it, a transient failure is retried, and the
 * serial path (no multi) makes the same requests one at a time.
 */
#include "buf.h"
#include "clock.h"
#include "executor.h"
#include "fake_api.h"
#include "kube_client.h"
#include "kube_config.h"
#include "plan.h"

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REQS 64

typedef struct {
    char method[8];
    char path[256];
    int64_t start, end;
    int code;
} req_t;

typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    req_t r[MAX_REQS];
    int n;
    int active, max_active;
    int delay_ms;
    const char *refuse;   /* a path part whose requests get 403 */
    const char *flaky;    /* a path part whose first request gets 503 */
    const char *missing;  /* a path part whose GETs get 404 */
    int flaked;
} api_t;

static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url,
                      const char *body, buf_t *out)
{
    (void)c;
    api_t *a = user;
    pthread_mutex_lock(&a->mu);
    int i = a->n < MAX_REQS ? a->n++ : MAX_REQS - 1;
    snprintf(a->r[i].method, sizeof(a->r[i].method), "%s", method);
    snprintf(a->r[i].path, sizeof(a->r[i].path), "%s", url);
    a->r[i].start = clock_mono_ns();
    if (++a->active > a->max_active)
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
                        "\"reason\":\"%s\",\"message\":\"no\"}", code, code == 403 ? "Forbidden" : code == 404 ? "NotFound" : "ServiceUnavailable");
    else if (!strcmp(method, "GET"))
        buf_printf(out, "{\"metadata\":{\"name\":\"%s\"}}", strrchr(url, '/') + 1);
    else
        buf_puts(out, body && *body ? body : "{}");
    pthread_mutex_lock(&a->mu);
    a->active--;
    a->r[i].end = clock_mono_ns();
    a->r[i].code = code;
    pthread_mutex_unlock(&a->mu);
    return code;
}

typedef struct {
    api_t api;
    kube_config_t *cfg;
    kube_client_t *client;
    CURLM *multi;
    exec_ctx_t x;
    json_object *rc;
    plan_t *plan;
} env_t;

static void env_open(env_t *e, int batched)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->api.mu, NULL);
    fake_api_start(&e->api.srv, on_request, &e->api);
    char yaml[1024], err[256];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster: {server: http://127.0.0.1:%d}\n"
             "contexts:\n- name: f\n  context: {cluster: f, user: u}\ncurrent-context: f\n"
             "users:\n- name: u\n  user: {token: t}\n",
             e->api.srv.port);
    CU_ASSERT_FATAL(kube_config_load_buffer(yaml, strlen(yaml), "test", NULL, &e->cfg, err, sizeof(err)) == 0);
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 0;
    o.max_retries = 2;
    o.retry_base_ms = 1;
    e->client = kube_client_new(e->cfg, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->client);
    if (batched) {
        e->multi = curl_multi_init();
        curl_multi_setopt(e->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    }
    e->x = (exec_ctx_t){.client = e->client, .reconcile_id = "test", .instance = "test", .batch = e->multi};
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
    if (e->multi)
        curl_multi_cleanup(e->multi);
    kube_client_destroy(&e->client);
    kube_config_destroy(&e->cfg);
    fake_api_stop(&e->api.srv);
    pthread_mutex_destroy(&e->api.mu);
}

static const req_t *find(env_t *e, const char *method, const char *part)
{
    for (int i = 0; i < e->api.n; i++)
        if (!strcmp(e->api.r[i].method, method) && strstr(e->api.r[i].path, part))
            return &e->api.r[i];
    return NULL;
}

/* Requests other than Events (recorded synchronously here: no recorder). */
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
    env_open(&e, 0);
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

/* Batched: the ConfigMap and the Service are in flight at once; the StatefulSet starts
 * after the ConfigMap has been answered; the status comes last. */
static void test_batch_concurrent_and_ordered(void)
{
    env_t e;
    env_open(&e, 1);
    e.api.delay_ms = 150;
    size_t failed = 99;
    kube_error_t err;
    CU_ASSERT_EQUAL(exec_plan(&e.x, e.rc, e.plan, &failed, &err), EXEC_OK);
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
    env_close(&e);
}

/* The same plan without a multi: one request at a time, in the plan's order. */
static void test_serial_without_multi(void)
{
    env_t e;
    env_open(&e, 0);
    e.api.delay_ms = 20;
    size_t failed = 99;
    kube_error_t err;
    CU_ASSERT_EQUAL(exec_plan(&e.x, e.rc, e.plan, &failed, &err), EXEC_OK);
    CU_ASSERT_EQUAL(writes(&e), 6);
    CU_ASSERT_EQUAL(e.api.max_active, 1);
    const req_t *cm = find(&e, "POST", "/configmaps"), *svc = find(&e, "POST", "/services");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cm);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svc);
    CU_ASSERT(cm->end <= svc->start);
    env_close(&e);
}

/* A refused ConfigMap stops what depends on it (the StatefulSet, the status); the Service
 * of the same stage is written all the same; the failure is the ConfigMap's. */
static void test_refused_write_stops_dependents(void)
{
    env_t e;
    env_open(&e, 1);
    e.api.refuse = "/configmaps";
    size_t failed = 99;
    kube_error_t err;
    CU_ASSERT_EQUAL(exec_plan(&e.x, e.rc, e.plan, &failed, &err), EXEC_ERROR);
    CU_ASSERT_EQUAL(failed, 1);
    CU_ASSERT(kube_error_is_forbidden(&err));
    CU_ASSERT_PTR_NOT_NULL(find(&e, "POST", "/services"));
    CU_ASSERT_PTR_NULL(find(&e, "POST", "/statefulsets"));
    CU_ASSERT_PTR_NULL(find(&e, "PATCH", "/status"));
    /* the Service refused instead: reported as the Service (index 2) */
    env_close(&e);
    env_open(&e, 1);
    e.api.refuse = "/services";
    CU_ASSERT_EQUAL(exec_plan(&e.x, e.rc, e.plan, &failed, &err), EXEC_ERROR);
    CU_ASSERT_EQUAL(failed, 2);
    CU_ASSERT_PTR_NULL(find(&e, "POST", "/statefulsets"));
    env_close(&e);
}

/* A 503 on a batched write is retried (through the client) and the plan goes on. */
static void test_transient_failure_retried(void)
{
    env_t e;
    env_open(&e, 1);
    e.api.flaky = "/services";
    size_t failed = 99;
    kube_error_t err;
    CU_ASSERT_EQUAL(exec_plan(&e.x, e.rc, e.plan, &failed, &err), EXEC_OK);
    CU_ASSERT_EQUAL(e.api.flaked, 1);
    CU_ASSERT_EQUAL(writes(&e), 7); /* 6 + the retried Service */
    CU_ASSERT_PTR_NOT_NULL(find(&e, "POST", "/statefulsets"));
    CU_ASSERT_PTR_NOT_NULL(find(&e, "PATCH", "/status"));
    env_close(&e);
}

/* exec_get_many: the reads at once over the multi (404 -> NULL), and the same answers
 * one at a time without it. */
static void test_get_many(void)
{
    for (int batched = 1; batched >= 0; batched--) {
        env_t e;
        env_open(&e, batched);
        e.api.delay_ms = 100;
        e.api.missing = "/services/";
        const char *paths[3] = {"/api/v1/namespaces/default/configmaps/cache",
                                "/api/v1/namespaces/default/services/cache",
                                "/apis/apps/v1/namespaces/default/statefulsets/cache"};
        json_object *out[3];
        kube_error_t err;
        CU_ASSERT_EQUAL(exec_get_many(&e.x, paths, 3, out, &err), 0);
        CU_ASSERT_PTR_NOT_NULL(out[0]);
        CU_ASSERT_PTR_NULL(out[1]);
        CU_ASSERT_PTR_NOT_NULL(out[2]);
        json_object *md = NULL, *nm = NULL;
        CU_ASSERT(out[2] && json_object_object_get_ex(out[2], "metadata", &md) &&
                  json_object_object_get_ex(md, "name", &nm) && !strcmp(json_object_get_string(nm), "cache"));
        CU_ASSERT_EQUAL(e.api.n, 3);
        CU_ASSERT_EQUAL(e.api.max_active, batched ? 3 : 1);
        for (int k = 0; k < 3; k++)
            json_object_put(out[k]);
        /* a refused read fails the whole call, every out[] NULL */
        e.api.refuse = "/configmaps/";
        CU_ASSERT_EQUAL(exec_get_many(&e.x, paths, 3, out, &err), -1);
        CU_ASSERT(kube_error_is_forbidden(&err));
        CU_ASSERT(!out[0] && !out[1] && !out[2]);
        env_close(&e);
    }
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
    env_open(&e, 1);
    e.x.fence = never;
    size_t failed = 99;
    kube_error_t err;
    CU_ASSERT_EQUAL(exec_plan(&e.x, e.rc, e.plan, &failed, &err), EXEC_FENCED);
    CU_ASSERT_EQUAL(e.api.n, 0);
    env_close(&e);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("exec_batch", NULL, NULL);
    CU_add_test(s, "stages of a new cluster", test_stages);
    CU_add_test(s, "batched: concurrent, StatefulSet after ConfigMap", test_batch_concurrent_and_ordered);
    CU_add_test(s, "serial without a multi", test_serial_without_multi);
    CU_add_test(s, "a refused write stops its dependents", test_refused_write_stops_dependents);
    CU_add_test(s, "a transient failure is retried", test_transient_failure_retried);
    CU_add_test(s, "fenced: nothing sent", test_fenced_batch_sends_nothing);
    CU_add_test(s, "reads at once (exec_get_many)", test_get_many);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    int failed = CU_get_number_of_failures() > 0;
    CU_cleanup_registry();
    return failed;
}
