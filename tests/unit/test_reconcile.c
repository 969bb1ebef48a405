/* Unit tests of workerd's shell (reconcile_run, exec_plan, exec_record_event) against an
 * in-process fake API server (libmicrohttpd on 127.0.0.1) that keeps objects by path:
 * which requests a reconcile makes when the cache lacks a child, when a user's object is
 * in the way, when a write is refused and refused again, and how Events repeat.
 */
#include "buf.h"
#include "clock.h"
#include "executor.h"
#include "kube_client.h"
#include "kube_config.h"
#include "reconcile.h"

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- The fake API server ---------------------------------------------------------------- */

#define MAX_OBJS 32
#define MAX_LOG 256

typedef struct {
    char method[8];
    char path[512]; /* without the query */
} req_t;

typedef struct {
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    char *path[MAX_OBJS]; /* object paths, NULL = free */
    json_object *obj[MAX_OBJS];
    req_t log[MAX_LOG];
    int nlog;
    int rv;
    int events;
    const char *refuse;      /* a collection whose creates get 403 */
    int events_expire;       /* PATCH of an Event answers 404 */
} api_t;

typedef struct {
    char method[8];
    char url[512];
    buf_t body;
} conn_t;

static int find_obj(api_t *a, const char *path)
{
    for (int i = 0; i < MAX_OBJS; i++)
        if (a->path[i] && !strcmp(a->path[i], path))
            return i;
    return -1;
}

static void put_obj(api_t *a, const char *path, json_object *o)
{
    int i = find_obj(a, path);
    if (i < 0)
        for (i = 0; i < MAX_OBJS && a->path[i]; i++)
            ;
    CU_ASSERT_FATAL(i < MAX_OBJS);
    if (!a->path[i])
        a->path[i] = strdup(path);
    json_object_put(a->obj[i]);
    char rv[16];
    snprintf(rv, sizeof(rv), "%d", ++a->rv);
    json_object *md = NULL;
    if (json_object_object_get_ex(o, "metadata", &md))
        json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
    a->obj[i] = o;
}

static const char *status_json(int code, const char *reason, const char *msg, char *out, size_t len)
{
    snprintf(out, len, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":%d,"
                       "\"reason\":\"%s\",\"message\":\"%s\"}", code, reason, msg);
    return out;
}

/* Answer one request from the store. Returns the HTTP status; *out is the body. */
static int serve(api_t *a, const char *method, const char *url, const char *body, char **out)
{
    char buf[1024];
    json_object *in = body && *body ? json_tokener_parse(body) : NULL;
    int code = 200;
    *out = NULL;
    int i = find_obj(a, url);
    if (!strcmp(method, "GET")) {
        if (i < 0) {
            code = 404;
            *out = strdup(status_json(404, "NotFound", "not found", buf, sizeof(buf)));
        } else {
            *out = strdup(json_object_to_json_string(a->obj[i]));
        }
    } else if (!strcmp(method, "POST")) {
        const char *name = json_object_get_string(json_object_object_get(json_object_object_get(in, "metadata"), "name"));
        char path[600];
        if (strstr(url, "/events")) {
            snprintf(path, sizeof(path), "%s/cache.%d", url, ++a->events);
            json_object_object_add(json_object_object_get(in, "metadata"), "name",
                                   json_object_new_string(strrchr(path, '/') + 1));
        } else {
            snprintf(path, sizeof(path), "%s/%s", url, name ? name : "");
        }
        if (a->refuse && strstr(url, a->refuse)) {
            code = 403;
            *out = strdup(status_json(403, "Forbidden", "exceeded quota: q", buf, sizeof(buf)));
        } else if (find_obj(a, path) >= 0) {
            code = 409;
            *out = strdup(status_json(409, "AlreadyExists", "already exists", buf, sizeof(buf)));
        } else {
            put_obj(a, path, json_object_get(in));
            code = 201;
            *out = strdup(json_object_to_json_string(in));
        }
    } else if (!strcmp(method, "PATCH")) {
        char base[512];
        snprintf(base, sizeof(base), "%s", url);
        char *st = strstr(base, "/status");
        if (st)
            *st = '\0';
        i = find_obj(a, base);
        if (i < 0 || (a->events_expire && strstr(url, "/events/"))) {
            code = 404;
            *out = strdup(status_json(404, "NotFound", "not found", buf, sizeof(buf)));
        } else {
            /* Enough of a merge for the tests: top-level keys, and status whole. */
            json_object *o = NULL;
            json_object_deep_copy(a->obj[i], &o, NULL);
            json_object_object_foreach(in, k, v)
            {
                if (!strcmp(k, "metadata") || !strcmp(k, "apiVersion") || !strcmp(k, "kind"))
                    continue;
                json_object_object_add(o, k, json_object_get(v));
            }
            put_obj(a, base, o);
            *out = strdup(json_object_to_json_string(o));
        }
    }
    json_object_put(in);
    if (!*out)
        *out = strdup("{}");
    return code;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    api_t *a = cls;
    conn_t *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof(*st));
        snprintf(st->method, sizeof(st->method), "%s", method);
        snprintf(st->url, sizeof(st->url), "%s", url);
        buf_init(&st->body, 0);
        *con_cls = st;
        return MHD_YES;
    }
    if (*upload_size) {
        buf_append(&st->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&a->mu);
    if (a->nlog < MAX_LOG) {
        snprintf(a->log[a->nlog].method, sizeof(a->log[0].method), "%s", method);
        snprintf(a->log[a->nlog].path, sizeof(a->log[0].path), "%s", url);
        a->nlog++;
    }
    char *out = NULL;
    int code = serve(a, method, url, st->body.len ? buf_str(&st->body) : NULL, &out);
    pthread_mutex_unlock(&a->mu);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(out), out, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, r);
    MHD_destroy_response(r);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    (void)cls;
    (void)c;
    (void)t;
    conn_t *st = *con_cls;
    if (st) {
        buf_free(&st->body);
        free(st);
    }
    *con_cls = NULL;
}

typedef struct {
    api_t api;
    kube_config_t *cfg;
    kube_client_t *client;
    exec_memo_t *memo;
    exec_ctx_t x;
} env_t;

static void env_open(env_t *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->api.mu, NULL);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    e->api.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
                                on_request, &e->api, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
                                on_completed, NULL, MHD_OPTION_END);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->api.d);
    e->api.port = MHD_get_daemon_info(e->api.d, MHD_DAEMON_INFO_BIND_PORT)->port;
    char yaml[1024], err[256];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster: {server: http://127.0.0.1:%d}\n"
             "contexts:\n- name: f\n  context: {cluster: f, user: u}\ncurrent-context: f\n"
             "users:\n- name: u\n  user: {token: t}\n",
             e->api.port);
    CU_ASSERT_FATAL(kube_config_load_buffer(yaml, strlen(yaml), "test", NULL, &e->cfg, err, sizeof(err)) == 0);
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 0;
    o.max_retries = 0;
    e->client = kube_client_new(e->cfg, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->client);
    e->memo = exec_memo_new();
    e->x = (exec_ctx_t){.client = e->client, .memo = e->memo, .reconcile_id = "test", .instance = "test"};
}

static void env_close(env_t *e)
{
    MHD_stop_daemon(e->api.d);
    for (int i = 0; i < MAX_OBJS; i++) {
        free(e->api.path[i]);
        json_object_put(e->api.obj[i]);
    }
    pthread_mutex_destroy(&e->api.mu);
    exec_memo_destroy(&e->memo);
    CU_ASSERT_PTR_NULL(e->memo);
    kube_client_destroy(&e->client);
    kube_config_destroy(&e->cfg);
}

/* How many logged requests have this method and a path containing part. */
static int count_req(env_t *e, const char *method, const char *part)
{
    int n = 0;
    for (int i = 0; i < e->api.nlog; i++)
        n += !strcmp(e->api.log[i].method, method) && strstr(e->api.log[i].path, part) != NULL;
    return n;
}

#define NS "/api/v1/namespaces/default"
#define RC_PATH "/apis/cache.example.com/v1/namespaces/default/redisclusters/cache"

static json_object *parse(const char *s)
{
    json_object *o = json_tokener_parse(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

/* A copy of the stored object at path (as a cache would hand it), or NULL. */
static json_object *stored(env_t *e, const char *path)
{
    int i = find_obj(&e->api, path);
    json_object *copy = NULL;
    if (i >= 0 && json_object_deep_copy(e->api.obj[i], &copy, NULL))
        copy = NULL;
    return copy;
}

/* The RedisCluster in the store, and a copy of it as the cache would hand it. */
static json_object *store_rc(env_t *e)
{
    put_obj(&e->api, RC_PATH,
            parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{"
                  "\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1,"
                  "\"finalizers\":[\"cache.example.com/finalizer\"]},\"spec\":{\"size\":1,\"image\":\"redis\"}}"));
    return stored(e, RC_PATH);
}

static const char *degraded(env_t *e, const char *field)
{
    json_object *rc = e->api.obj[find_obj(&e->api, RC_PATH)], *st = NULL, *list = NULL;
    if (!json_object_object_get_ex(rc, "status", &st) || !json_object_object_get_ex(st, "conditions", &list))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *c = json_object_array_get_idx(list, i), *t = NULL, *v = NULL;
        if (json_object_object_get_ex(c, "type", &t) && !strcmp(json_object_get_string(t), "Degraded") &&
            json_object_object_get_ex(c, field, &v))
            return json_object_get_string(v);
    }
    return NULL;
}

/* ---- Tests ------------------------------------------------------------------------------ */

/* The cache has no child; the API has the user's ConfigMap: it is read by name and left
 * alone; the other children are created with POST; a second pass reads again and writes
 * nothing. */
static void test_absent_in_cache_is_read_and_left_alone(void)
{
    env_t e;
    env_open(&e);
    json_object *rc = store_rc(&e);
    put_obj(&e.api, NS "/configmaps/cache",
            parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cache\",\"namespace\":"
                  "\"default\",\"uid\":\"u\"},\"data\":{\"redis.conf\":\"mine\",\"other\":\"x\"}}"));
    char *before = strdup(json_object_to_json_string(e.api.obj[find_obj(&e.api, NS "/configmaps/cache")]));
    reconcile_outcome_t out;
    reconcile_run(&e.x, rc, NULL, NULL, NULL, NULL, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/configmaps/cache"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/services/cache"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/statefulsets/cache"), 1);
    /* Nothing but reads reaches the ConfigMap; the Service is created, not applied; the
     * StatefulSet waits for a ConfigMap of ours. */
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", "/configmaps"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/configmaps"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", NS "/services"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", "/services"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 0);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string(e.api.obj[find_obj(&e.api, NS "/configmaps/cache")]), before);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "OwnerConflict");
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/events"), 2); /* Created Service, OwnerConflict */
    /* Again, with the RedisCluster as the store has it now and the Service in the cache. */
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    json_object *svc = stored(&e, NS "/services/cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(svc);
    int n = e.api.nlog;
    reconcile_run(&e.x, rc, NULL, svc, NULL, NULL, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_EQUAL(e.api.nlog - n, 2); /* GET configmap, GET statefulset: no write */
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/services/cache"), 1);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string(e.api.obj[find_obj(&e.api, NS "/configmaps/cache")]), before);
    json_object_put(svc);
    json_object_put(rc);
    free(before);
    env_close(&e);
}

/* Everything in the cache: no read at all. */
static void test_nothing_absent_reads_nothing(void)
{
    env_t e;
    env_open(&e);
    json_object *rc = store_rc(&e);
    reconcile_outcome_t out;
    reconcile_run(&e.x, rc, NULL, NULL, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 1);
    json_object *kids[3];
    static const char *const paths[3] = {NS "/configmaps/cache", NS "/services/cache",
                                         "/apis/apps/v1/namespaces/default/statefulsets/cache"};
    for (int i = 0; i < 3; i++) {
        kids[i] = stored(&e, paths[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(kids[i]);
    }
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    int writes = count_req(&e, "POST", "/") + count_req(&e, "PATCH", "/");
    reconcile_run(&e.x, rc, kids[0], kids[1], kids[2], NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/"), 3); /* only the first pass's */
    /* The status (a StatefulSet is there now) is the only write. */
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/") + count_req(&e, "PATCH", "/"), writes + 1);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH "/status"), 2);
    for (int i = 0; i < 3; i++)
        json_object_put(kids[i]);
    json_object_put(rc);
    env_close(&e);
}

/* A create refused with 403: the status says so once; the retry, handed the stale
 * RedisCluster, writes no status and records no Event. */
static void test_refused_write_reported_once(void)
{
    env_t e;
    env_open(&e);
    e.api.refuse = "/statefulsets";
    json_object *rc = store_rc(&e);
    reconcile_outcome_t out;
    reconcile_run(&e.x, rc, NULL, NULL, NULL, NULL, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_ERROR);
    CU_ASSERT(strstr(out.message, "403") != NULL);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "status"), "True");
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "Forbidden");
    CU_ASSERT(strstr(degraded(&e, "message"), "cannot create StatefulSet default/cache: 403 Forbidden: exceeded quota") != NULL);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH "/status"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "GET", RC_PATH), 1);
    int events = count_req(&e, "POST", "/events");
    for (int retry = 0; retry < 3; retry++) {
        /* The cache now has the ConfigMap and Service, but not the new status. */
        json_object *cm = stored(&e, NS "/configmaps/cache"), *svc = stored(&e, NS "/services/cache");
        CU_ASSERT_PTR_NOT_NULL_FATAL(cm);
        CU_ASSERT_PTR_NOT_NULL_FATAL(svc);
        reconcile_run(&e.x, rc, cm, svc, NULL, NULL, &out);
        CU_ASSERT_EQUAL(out.result, RECONCILE_ERROR);
        json_object_put(cm);
        json_object_put(svc);
    }
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 4);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH "/status"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/events"), events);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", "/events"), 0);
    /* The quota goes: the StatefulSet is created and Degraded clears. */
    e.api.refuse = NULL;
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    reconcile_run(&e.x, rc, NULL, NULL, NULL, NULL, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "status"), "False");
    json_object_put(rc);
    env_close(&e);
}

/* client-go's recorder: an identical Event within the window bumps the count of the one
 * recorded; another message, or an expired one, is a new Event; without a memo every
 * recording is a POST. */
static void test_event_repeats_bump_the_count(void)
{
    env_t e;
    env_open(&e);
    json_object *rc = store_rc(&e);
    kube_error_t err;
    CU_ASSERT_EQUAL(exec_record_event(&e.x, rc, "Warning", "Forbidden", "no", &err), 0);
    CU_ASSERT_EQUAL(exec_record_event(&e.x, rc, "Warning", "Forbidden", "no", &err), 0);
    CU_ASSERT_EQUAL(exec_record_event(&e.x, rc, "Warning", "Forbidden", "no", &err), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/events"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", NS "/events/cache.1"), 2);
    json_object *ev = e.api.obj[find_obj(&e.api, NS "/events/cache.1")];
    CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(ev, "count")), 3);
    CU_ASSERT_EQUAL(exec_record_event(&e.x, rc, "Warning", "Forbidden", "other", &err), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/events"), 2);
    e.api.events_expire = 1;
    CU_ASSERT_EQUAL(exec_record_event(&e.x, rc, "Warning", "Forbidden", "no", &err), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/events"), 3);
    e.x.memo = NULL;
    CU_ASSERT_EQUAL(exec_record_event(&e.x, rc, "Warning", "Forbidden", "no", &err), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/events"), 4);
    json_object_put(rc);
    env_close(&e);
}

/* A create that meets an object made since (409 AlreadyExists) is a conflict: requeue
 * at once, nothing else written. */
static void test_create_already_exists_requeues(void)
{
    env_t e;
    env_open(&e);
    json_object *rc = store_rc(&e);
    /* A Service made after the plan saw none. */
    put_obj(&e.api, NS "/services/cache", parse("{\"metadata\":{\"name\":\"cache\"}}"));
    plan_t *p = plan_compute(rc, NULL, NULL, NULL, clock_wall_ns());
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    size_t failed = 0;
    kube_error_t err;
    CU_ASSERT_EQUAL(exec_plan(&e.x, rc, p, &failed, &err), EXEC_CONFLICT);
    CU_ASSERT_EQUAL(plan_action(p, failed)->kind, PLAN_CREATE);
    CU_ASSERT_STRING_EQUAL(plan_action(p, failed)->resource, "services");
    CU_ASSERT(kube_error_is_already_exists(&err));
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", "/services"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH), 0);
    plan_destroy(&p);
    json_object_put(rc);
    env_close(&e);
}

static CU_TestInfo shell_tests[] = {
    {"a child absent from the cache is read and, not ours, left alone", test_absent_in_cache_is_read_and_left_alone},
    {"nothing absent: no read", test_nothing_absent_reads_nothing},
    {"a refused write is reported once", test_refused_write_reported_once},
    {"Event repeats bump the count", test_event_repeats_bump_the_count},
    {"create meets AlreadyExists: conflict", test_create_already_exists_requeues},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"workerd shell", NULL, NULL, NULL, NULL, shell_tests},
    CU_SUITE_INFO_NULL,
};

#include "cu_main.h"
