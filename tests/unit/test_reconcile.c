/* Unit tests of workerd's shell (reconcile_run, exec_plan) against an in-process fake API
 * server (libmicrohttpd on 127.0.0.1) that keeps objects by path: which requests a
 * reconcile makes when the cache lacks a child, when a user's object is in the way, when
 * a write is refused and refused again.
 */
#include "buf.h"
#include "clock.h"
#include "cu_table.h"
#include "executor.h"
#include "fake_api.h"
#include "json_at.h"
#include "jsonx.h"
#include "kube_client.h"
#include "kube_config.h"
#include "reconcile.h"

#include <CUnit/CUnit.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The fake API server ---------------------------------------------------------------- */

#define MAX_OBJS 32

typedef struct {
    fake_api_t srv;
    int port;
    pthread_mutex_t mu;
    char *path[MAX_OBJS]; /* object paths, NULL = free */
    json_object *obj[MAX_OBJS];
    fake_log_t log;
    int rv;
    int events;
    const char *refuse;      /* a collection whose creates get 403 */
    int events_expire;       /* PATCH of an Event answers 404 */
    const char *refuse_patch; /* an object whose PATCHes get 422 */
    const char *refuse_put;   /* an object whose PUTs get 422 */
    const char *mutate_create; /* a collection whose creates get other data stored (a webhook) */
    int stamp_creates;        /* creates get a creationTimestamp (now) */
} api_t;

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

/* Answer one request from the store. Returns the HTTP status; the body in out. */
static int serve(api_t *a, const char *method, const char *url, const char *body, buf_t *out)
{
    char buf[1024];
    json_object *in = body && *body ? json_tokener_parse(body) : NULL;
    int code = 200;
    int i = find_obj(a, url);
    size_t ulen = strlen(url);
    int collection = ulen > 5 && (!strcmp(url + ulen - 5, "/pods") || !strcmp(url + ulen - 7, "/events"));
    if (!strcmp(method, "GET") && collection) {
        /* A list: every object stored right under the collection (no selectors). */
        json_object *list = json_object_new_object(), *items = json_object_new_array();
        for (int k = 0; k < MAX_OBJS; k++)
            if (a->path[k] && !strncmp(a->path[k], url, ulen) && a->path[k][ulen] == '/' &&
                !strchr(a->path[k] + ulen + 1, '/'))
                json_object_array_add(items, json_object_get(a->obj[k]));
        json_object_object_add(list, "items", items);
        json_object_object_add(list, "metadata", json_object_new_object());
        buf_puts(out, json_object_to_json_string(list));
        json_object_put(list);
    } else if (!strcmp(method, "PUT")) {
        if (i < 0) {
            code = 404;
            buf_puts(out, status_json(404, "NotFound", "not found", buf, sizeof(buf)));
        } else if (a->refuse_put && !strcmp(url, a->refuse_put)) {
            code = 422;
            buf_puts(out, status_json(422, "Invalid", "put refused", buf, sizeof(buf)));
        } else {
            put_obj(a, url, json_object_get(in));
            buf_puts(out, json_object_to_json_string(in));
        }
    } else if (!strcmp(method, "DELETE")) {
        if (i < 0) {
            code = 404;
            buf_puts(out, status_json(404, "NotFound", "not found", buf, sizeof(buf)));
        } else {
            free(a->path[i]);
            a->path[i] = NULL;
            json_object_put(a->obj[i]);
            a->obj[i] = NULL;
        }
    } else if (!strcmp(method, "GET")) {
        if (i < 0) {
            code = 404;
            buf_puts(out, status_json(404, "NotFound", "not found", buf, sizeof(buf)));
        } else {
            buf_puts(out, json_object_to_json_string(a->obj[i]));
        }
    } else if (!strcmp(method, "POST")) {
        const char *name = JSONX_STR_AT(in, "metadata", "name");
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
            buf_puts(out, status_json(403, "Forbidden", "exceeded quota: q", buf, sizeof(buf)));
        } else if (find_obj(a, path) >= 0) {
            code = 409;
            buf_puts(out, status_json(409, "AlreadyExists", "already exists", buf, sizeof(buf)));
        } else {
            /* As the API server: the creation time, and what a mutating admission changes. */
            char now[40];
            json_object *md = json_object_object_get(in, "metadata");
            if (a->stamp_creates && md && !json_object_object_get_ex(md, "creationTimestamp", NULL))
                json_object_object_add(md, "creationTimestamp",
                                       json_object_new_string(clock_format_rfc3339(clock_wall_ns(), 0, now,
                                                                                   sizeof(now))));
            if (a->mutate_create && strstr(url, a->mutate_create))
                json_object_object_add(in, "data", parse("{\"redis.conf\":\"changed by a webhook\"}"));
            put_obj(a, path, json_object_get(in));
            code = 201;
            buf_puts(out, json_object_to_json_string(in));
        }
    } else if (!strcmp(method, "PATCH")) {
        char base[512];
        snprintf(base, sizeof(base), "%s", url);
        char *st = strstr(base, "/status");
        if (st)
            *st = '\0';
        i = find_obj(a, base);
        const char *want_rv = json_object_get_string(
            json_object_object_get(json_object_object_get(in, "metadata"), "resourceVersion"));
        const char *have_rv = i >= 0 ? json_object_get_string(json_object_object_get(
                                           json_object_object_get(a->obj[i], "metadata"), "resourceVersion"))
                                     : NULL;
        if (want_rv && have_rv && strcmp(want_rv, have_rv)) { /* the precondition */
            code = 409;
            buf_puts(out, status_json(409, "Conflict", "the object has been modified", buf, sizeof(buf)));
        } else if (a->refuse_patch && !strcmp(url, a->refuse_patch)) {
            code = 422;
            buf_puts(out, status_json(422, "Invalid", "spec.ports[1].name: Duplicate value: \\\"redis\\\"", buf,
                                      sizeof(buf)));
        } else if (i < 0 || (a->events_expire && strstr(url, "/events/"))) {
            code = 404;
            buf_puts(out, status_json(404, "NotFound", "not found", buf, sizeof(buf)));
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
            json_object *fin = NULL; /* the finalizer patch's list */
            if (json_object_object_get_ex(json_object_object_get(in, "metadata"), "finalizers", &fin))
                json_object_object_add(json_object_object_get(o, "metadata"), "finalizers", json_object_get(fin));
            put_obj(a, base, o);
            buf_puts(out, json_object_to_json_string(o));
        }
    }
    json_object_put(in);
    if (!out->len)
        buf_puts(out, "{}");
    return code;
}

/* The fake_api handler: log the request, answer it from the store. */
static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url,
                      const char *body, buf_t *out)
{
    (void)c;
    api_t *a = user;
    pthread_mutex_lock(&a->mu);
    fake_log_add(&a->log, method, url);
    int code = serve(a, method, url, body, out);
    pthread_mutex_unlock(&a->mu);
    return code;
}

typedef struct {
    api_t api;
    kube_config_t *cfg;
    kube_client_t *client;
    exec_memo_t *memo;
    existsmemo_t *exists;  /* env_batched: workerd's context */
    exec_ctx_t x;
} env_t;

static void env_open(env_t *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->api.mu, NULL);
    fake_api_start(&e->api.srv, on_request, &e->api);
    e->api.port = e->api.srv.port;
    kube_client_opts_t o = fake_api_opts(0);
    fake_api_connect(&e->api.srv, &o, &e->cfg, &e->client);
    e->memo = exec_memo_new();
    e->x = (exec_ctx_t){.client = e->client, .memo = e->memo, .reconcile_id = "test", .instance = "test"};
}

/* The context workerd's worker gives a reconcile: the memo of children that exist
 * outside the cache. */
static void env_batched(env_t *e)
{
    env_open(e);
    e->exists = existsmemo_new(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->exists);
    e->x.exists = e->exists;
}

static void env_close(env_t *e)
{
    fake_api_stop(&e->api.srv);
    for (int i = 0; i < MAX_OBJS; i++) {
        free(e->api.path[i]);
        json_object_put(e->api.obj[i]);
    }
    pthread_mutex_destroy(&e->api.mu);
    exec_memo_destroy(&e->memo);
    CU_ASSERT_PTR_NULL(e->memo);
    existsmemo_destroy(&e->exists);
    kube_client_destroy(&e->client);
    kube_config_destroy(&e->cfg);
}

/* How many logged requests have this method and a path containing part. */
static int count_req(env_t *e, const char *method, const char *part)
{
    return fake_log_count(&e->api.log, method, part);
}

#define NS "/api/v1/namespaces/default"
#define RC_PATH "/apis/cache.example.com/v1/namespaces/default/redisclusters/cache"

/* A copy of the stored object at path (as a cache would hand it), or NULL. */
static json_object *stored(env_t *e, const char *path)
{
    int i = find_obj(&e->api, path);
    json_object *copy = NULL;
    if (i >= 0 && json_object_deep_copy(e->api.obj[i], &copy, NULL))
        copy = NULL;
    return copy;
}

/* A RedisCluster stored with the finalizer or (new) without it yet; a copy of it returned,
 * as the cache would hand it. */
static json_object *store_rc_finalized(env_t *e, int finalized)
{
    char text[512];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{"
             "\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1%s},"
             "\"spec\":{\"size\":1,\"image\":\"redis\"}}",
             finalized ? ",\"finalizers\":[\"cache.example.com/finalizer\"]" : "");
    put_obj(&e->api, RC_PATH, parse(text));
    return stored(e, RC_PATH);
}

static json_object *store_rc(env_t *e)
{
    return store_rc_finalized(e, 1);
}

static json_object *store_new_rc(env_t *e)
{
    return store_rc_finalized(e, 0);
}

/* Reconcile rc with nothing in the cache (no children, no pods, no observation); its
 * outcome into out. */
static void run_uncached(env_t *e, json_object *rc, reconcile_outcome_t *out)
{
    reconcile_run(&e->x, rc, NULL, NULL, NULL, NULL, NULL, out);
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
    run_uncached(&e, rc, &out);
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
    int n = e.api.log.n;
    reconcile_run(&e.x, rc, NULL, svc, NULL, NULL, NULL, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_EQUAL(e.api.log.n - n, 3); /* GET configmap, statefulset, poddisruptionbudget: no write */
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/services/cache"), 1);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string(e.api.obj[find_obj(&e.api, NS "/configmaps/cache")]), before);
    json_object_put(svc);
    json_object_put(rc);
    free(before);
    env_close(&e);
}

/* The StatefulSet controller's status: replicas created and ready. */
static void settle_sts(env_t *e, int ready)
{
    const char *path = "/apis/apps/v1/namespaces/default/statefulsets/cache";
    json_object *sts = stored(e, path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
    char st[256];
    snprintf(st, sizeof(st),
             "{\"observedGeneration\":0,\"replicas\":1,\"readyReplicas\":%d,\"updatedReplicas\":1,"
             "\"currentRevision\":\"r1\",\"updateRevision\":\"r1\"}",
             ready);
    json_object_object_add(sts, "status", parse(st));
    put_obj(&e->api, path, sts);
}

/* The stored RedisCluster's status tells the StatefulSet's counts (as the write after a
 * settled StatefulSet does): a diagnosis is only read for a cluster whose counts are told
 * (plan.h, DIAGNOSIS). */
static void tell_counts(env_t *e)
{
    json_object *sts = stored(e, "/apis/apps/v1/namespaces/default/statefulsets/cache"), *rc = stored(e, RC_PATH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rc);
    json_object *sst = json_object_object_get(sts, "status"), *st = json_object_object_get(rc, "status");
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    json_object_object_add(st, "replicas", json_object_get(json_object_object_get(sst, "replicas")));
    json_object_object_add(st, "readyReplicas", json_object_get(json_object_object_get(sst, "readyReplicas")));
    put_obj(&e->api, RC_PATH, rc);
    json_object_put(sts);
}

/* The RedisCluster stored and its children created by a first reconcile, the StatefulSet
 * then settled with ready ready replicas. Returns the RedisCluster as first stored (the
 * caller puts it). */
static json_object *created(env_t *e, int ready)
{
    json_object *rc = store_rc(e);
    reconcile_outcome_t out;
    run_uncached(e, rc, &out);
    settle_sts(e, ready);
    return rc;
}

/* A new cluster's reconcile writes its RedisCluster twice (the finalizer, then the
 * status): the outcome names the last write's resourceVersion and the one before, which
 * DONE tells informerd so that the watch's echoes of both queue nothing (informerd/echo.h). */
static void children(env_t *e, json_object *kids[4]);
static void put_kids(json_object *kids[4]);

static void test_outcome_names_each_write_of_the_rediscluster(void)
{
    env_t e;
    env_batched(&e);
    json_object *rc = store_new_rc(&e);
    reconcile_outcome_t out;
    run_uncached(&e, rc, &out);
    int all = count_req(&e, "PATCH", RC_PATH), status = count_req(&e, "PATCH", RC_PATH "/status");
    CU_ASSERT_EQUAL(all - status, 1); /* the finalizer */
    CU_ASSERT_EQUAL(status, 1);
    json_object *now = stored(&e, RC_PATH);
    const char *rv = JSONX_STR_AT(now, "metadata", "resourceVersion");
    CU_ASSERT_STRING_EQUAL(out.rc_written_rv, rv ? rv : "?");
    CU_ASSERT(out.rc_earlier_rv[0][0] != '\0');
    long earlier = strtol(out.rc_earlier_rv[0], NULL, 10), last = strtol(out.rc_written_rv, NULL, 10);
    CU_ASSERT(earlier > 0 && earlier < last);
    CU_ASSERT_EQUAL(out.rc_earlier_rv[1][0], '\0');
    json_object_put(now);
    json_object_put(rc);
    /* With its children, a status change alone: the plan of what it wrote does nothing. */
    json_object *kids[4];
    children(&e, kids);
    rc = store_rc(&e); /* with the finalizer (the fake's PATCH keeps metadata as it was) */
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH "/status"), 2);
    CU_ASSERT(out.rc_written_rv[0] != '\0');
    CU_ASSERT_EQUAL(out.rc_write_quiet, 1);
    put_kids(kids);
    json_object_put(rc);
    env_close(&e);
}

/* The stored version of the object at path, as a number (0: none). */
static long stored_rv(env_t *e, const char *path)
{
    int i = find_obj(&e->api, path);
    const char *rv = i >= 0 ? JSONX_STR_AT(e->api.obj[i], "metadata", "resourceVersion") : NULL;
    return rv ? strtol(rv, NULL, 10) : 0;
}

/* The version out names for the child kind/name written, as a number (0: not named). */
static long named_rv(const reconcile_outcome_t *out, const char *kind, const char *name)
{
    for (size_t i = 0; i < out->n_child_written; i++)
        if (!strcmp(out->child_written[i].kind, kind) && !strcmp(out->child_written[i].name, name))
            return strtol(out->child_written[i].rv, NULL, 10);
    return 0;
}

/* A new cluster's first reconcile creates its children; planned again with them as the
 * API answered the creates (and the RedisCluster as its status write left it), there is
 * nothing to do: quiet, naming each child at the version its create was answered with,
 * so that their echoes queue nothing (informerd/echo.h CHILDREN). It asks to look again
 * no later than that plan would: by the time the young StatefulSet's diagnosis is due. */
static void test_first_reconcile_quiet_with_its_children(void)
{
    env_t e;
    env_batched(&e);
    e.api.stamp_creates = 1;
    json_object *rc = store_new_rc(&e);
    reconcile_outcome_t out;
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 1);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT(out.requeue_after_ns > 0 && out.requeue_after_ns <= RECONCILE_DIAGNOSIS_AFTER_NS);
    CU_ASSERT_EQUAL(out.rc_write_quiet, 1);
    CU_ASSERT_EQUAL(out.n_child_written, 4);
    CU_ASSERT_EQUAL(named_rv(&out, "ConfigMap", "cache"), stored_rv(&e, NS "/configmaps/cache"));
    CU_ASSERT_EQUAL(named_rv(&out, "Service", "cache"), stored_rv(&e, NS "/services/cache"));
    CU_ASSERT_EQUAL(named_rv(&out, "StatefulSet", "cache"),
                    stored_rv(&e, "/apis/apps/v1/namespaces/default/statefulsets/cache"));
    CU_ASSERT_EQUAL(named_rv(&out, "PodDisruptionBudget", "cache"),
                    stored_rv(&e, "/apis/policy/v1/namespaces/default/poddisruptionbudgets/cache"));
    CU_ASSERT(named_rv(&out, "ConfigMap", "cache") > 0);
    /* What it wrote, handed to the next reconcile as the cache would: nothing to write. */
    json_object *kids[4];
    children(&e, kids);
    json_object *now = stored(&e, RC_PATH);
    int writes = count_req(&e, "POST", "/") + count_req(&e, "PATCH", "/");
    reconcile_run_children(&e.x, now, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/") + count_req(&e, "PATCH", "/"), writes);
    put_kids(kids);
    PUT_EACH(now, rc);
    env_close(&e);
}

/* A child the API stored otherwise than it was sent (a mutating webhook changed its
 * data): the plan of what the writes left would apply it again, so the reconcile is not
 * quiet and names no child: their echoes queue the key, whose next reconcile acts. */
static void test_child_stored_otherwise_is_not_quiet(void)
{
    env_t e;
    env_batched(&e);
    e.api.mutate_create = "/configmaps";
    e.api.stamp_creates = 1;
    json_object *rc = store_new_rc(&e);
    reconcile_outcome_t out;
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/configmaps"), 1);
    CU_ASSERT_EQUAL(out.rc_write_quiet, 0);
    CU_ASSERT_EQUAL(out.n_child_written, 0);
    json_object_put(rc);
    env_close(&e);
}

/* Everything in the cache and Running: no read at all. */
static void test_nothing_absent_reads_nothing(void)
{
    env_t e;
    env_open(&e);
    json_object_put(created(&e, 1));
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 1);
    json_object *kids[4];
    children(&e, kids);
    json_object *rc = stored(&e, RC_PATH);
    reconcile_outcome_t out;
    int writes = count_req(&e, "POST", "/") + count_req(&e, "PATCH", "/");
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_DONE);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/pods"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/events"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/"), 4); /* only the first pass's */
    /* The status (a StatefulSet is there now) is the only write. */
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/") + count_req(&e, "PATCH", "/"), writes + 1);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH "/status"), 2);
    PUT_EACH(kids[0], kids[1], kids[2], kids[3], rc);
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
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_ERROR);
    CU_ASSERT(strstr(out.message, "403") != NULL);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "status"), "True");
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "Forbidden");
    CU_ASSERT(strstr(degraded(&e, "message"),
                     "cannot create StatefulSet default/cache: 403 Forbidden: exceeded quota") != NULL);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH "/status"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "GET", RC_PATH), 1);
    int events = count_req(&e, "POST", "/events");
    for (int retry = 0; retry < 3; retry++) {
        /* The cache now has the ConfigMap and Service, but not the new status. */
        json_object *cm = stored(&e, NS "/configmaps/cache"), *svc = stored(&e, NS "/services/cache");
        CU_ASSERT_PTR_NOT_NULL_FATAL(cm);
        CU_ASSERT_PTR_NOT_NULL_FATAL(svc);
        reconcile_run(&e.x, rc, cm, svc, NULL, NULL, NULL, &out);
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
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "status"), "False");
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

/* The children of a first reconcile, read back as the cache would hand them. */
static void children(env_t *e, json_object *kids[4])
{
    static const char *const paths[4] = {NS "/configmaps/cache", NS "/services/cache",
                                         "/apis/apps/v1/namespaces/default/statefulsets/cache",
                                         "/apis/policy/v1/namespaces/default/poddisruptionbudgets/cache"};
    for (int i = 0; i < 4; i++) {
        kids[i] = stored(e, paths[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(kids[i]);
    }
}

static void put_kids(json_object *kids[4])
{
    put_all(kids, 4);
}

/* A cluster whose StatefulSet cannot create its pods (quota): created, its counts told,
 * the StatefulSet's Events (a create, then the refusal) stored; its children into kids.
 * Returns the RedisCluster as stored now (the caller puts it). */
static json_object *quota_stuck(env_t *e, json_object *kids[4])
{
    json_object_put(created(e, 0));
    tell_counts(e);
    put_obj(&e->api, NS "/events/sts-0",
            parse("{\"metadata\":{\"name\":\"sts-0\"},\"type\":\"Normal\",\"reason\":\"SuccessfulCreate\","
                  "\"lastTimestamp\":\"2026-01-01T00:00:00Z\",\"message\":\"create Pod cache-0 in StatefulSet cache "
                  "successful\"}"));
    put_obj(&e->api, NS "/events/sts-1",
            parse("{\"metadata\":{\"name\":\"sts-1\"},\"type\":\"Warning\",\"reason\":\"FailedCreate\","
                  "\"lastTimestamp\":\"2026-01-01T00:00:01Z\",\"message\":\"create Pod cache-0 in StatefulSet cache "
                  "failed error: pods \\\"cache-0\\\" is forbidden: exceeded quota: pods\"}"));
    children(e, kids);
    return stored(e, RC_PATH);
}

/* Not Running: the pods of the selector, the StatefulSet's Events and the first
 * unready pod's Events are read, and the cause lands in the status; Running again: no
 * more reads. */
static void test_not_running_reads_and_reports_the_cause(void)
{
    env_t e;
    env_open(&e);
    json_object *kids[4], *rc = quota_stuck(&e, kids);
    reconcile_outcome_t out;
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/pods"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/events"), 1); /* no pod, so no pod Events */
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "FailedCreate");
    CU_ASSERT(strstr(degraded(&e, "message"), "exceeded quota: pods") != NULL);
    /* A pod now exists, unscheduled; its Events are read too. */
    put_obj(&e.api, NS "/pods/cache-0",
            parse("{\"metadata\":{\"name\":\"cache-0\"},\"status\":{\"conditions\":[{\"type\":\"PodScheduled\","
                  "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes are available: "
                  "pod has unbound immediate PersistentVolumeClaims\"}]}}"));
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/events"), 3);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "FailedScheduling");
    CU_ASSERT(strstr(degraded(&e, "message"), "unbound immediate PersistentVolumeClaims") != NULL);
    put_kids(kids);
    settle_sts(&e, 1);
    children(&e, kids);
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    int gets = count_req(&e, "GET", "/");
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/"), gets);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "status"), "False");
    put_kids(kids);
    json_object_put(rc);
    env_close(&e);
}

/* env_batched (a worker's context: it has the memos) with a quota_stuck cluster whose
 * diagnosis the worker keeps: the first reconcile reads and writes the cause; its own
 * status write changed the RedisCluster, so the next reads once more and keeps the
 * reads under that status. Returns the RedisCluster as stored now (the caller puts it). */
static json_object *diagnosis_kept(env_t *e, json_object *kids[4])
{
    env_batched(e);
    reconcile_forget_storage_classes();
    json_object *rc = quota_stuck(e, kids);
    reconcile_outcome_t out;
    const plan_children_t k = {kids[0], kids[1], kids[2], kids[3]};
    reconcile_run_children(&e->x, rc, &k, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(e, "GET", NS "/pods"), 1);
    CU_ASSERT_EQUAL(count_req(e, "GET", NS "/events"), 1);
    CU_ASSERT_STRING_EQUAL(degraded(e, "reason"), "FailedCreate");
    json_object_put(rc);
    rc = stored(e, RC_PATH);
    reconcile_run_children(&e->x, rc, &k, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(e, "GET", NS "/pods"), 2);
    return rc;
}

/* A worker (its context has the exists memo) keeps a stuck cluster's diagnosis reads:
 * once the status tells the cause (diagnosis_kept), the next reconciles of the same
 * StatefulSet and RedisCluster read nothing and report the same cause; a new resourceVersion of the
 * StatefulSet (a pod more or less, Ready or not) reads again. */
static void test_diagnosis_reads_kept_while_nothing_changes(void)
{
    env_t e;
    json_object *kids[4], *rc = diagnosis_kept(&e, kids);
    reconcile_outcome_t out;
    const plan_children_t k = {kids[0], kids[1], kids[2], kids[3]};
    int writes = count_req(&e, "PATCH", RC_PATH);
    for (int i = 0; i < 3; i++)
        reconcile_run_children(&e.x, rc, &k, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/pods"), 2);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/events"), 2);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH), writes);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "FailedCreate");
    json_object_object_add(json_object_object_get(kids[2], "metadata"), "resourceVersion",
                           json_object_new_string("a pod more"));
    reconcile_run_children(&e.x, rc, &k, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/pods"), 3);
    put_kids(kids);
    json_object_put(rc);
    reconcile_forget_storage_classes();
    env_close(&e);
}

/* Two workers on one stuck cluster (a key goes to whichever worker is free; each keeps
 * its own memo): this one kept the reads that found the quota refusal; the cause went
 * away, and another worker, reading afresh, wrote a status without it. This worker's
 * next reconcile sees that status (a new resourceVersion of the RedisCluster): it reads
 * again rather than plan from its older reads, and does not write the cause back. */
static void test_diagnosis_memo_older_than_the_status_is_not_used(void)
{
    env_t e;
    json_object *kids[4], *rc = diagnosis_kept(&e, kids);
    reconcile_outcome_t out;
    const plan_children_t k = {kids[0], kids[1], kids[2], kids[3]};
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "FailedCreate");
    /* the quota was raised: the StatefulSet made its pod (no new resourceVersion of the
     * StatefulSet yet: the pod is not Ready), and the other worker wrote what it read.
     * (The fake lists every Event of the namespace, the operator's own FailedCreate on
     * the RedisCluster too: this one is later than those.) */
    put_obj(&e.api, NS "/events/sts-2",
            parse("{\"metadata\":{\"name\":\"sts-2\"},\"type\":\"Normal\",\"reason\":\"SuccessfulCreate\","
                  "\"lastTimestamp\":\"2099-01-01T00:00:00Z\",\"message\":\"create Pod cache-0 in StatefulSet cache "
                  "successful\"}"));
    json_object *other = stored(&e, RC_PATH);
    json_object *conds = json_object_object_get(json_object_object_get(other, "status"), "conditions");
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (!strcmp(json_object_get_string(json_object_object_get(c, "type")), "Degraded")) {
            json_object_object_add(c, "status", json_object_new_string("False"));
            json_object_object_add(c, "reason", json_object_new_string("AsExpected"));
            json_object_object_del(c, "message");
        }
    }
    put_obj(&e.api, RC_PATH, json_object_get(other));
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    reconcile_run_children(&e.x, rc, &k, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/pods"), 3);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "AsExpected");
    json_object_put(other);
    put_kids(kids);
    json_object_put(rc);
    reconcile_forget_storage_classes();
    env_close(&e);
}

/* A worker has the cluster's pods from informerd's cache (seen.members): it does not LIST
 * them, and reads only the Events that may explain what the pods do not. A quota refusal
 * (no pod at all): the StatefulSet's Events only, and the cause as before. */
static void test_diagnosis_with_the_cache_pods(void)
{
    env_t e;
    env_open(&e);
    json_object *kids[4], *rc = quota_stuck(&e, kids), *none = parse("[]");
    reconcile_outcome_t out;
    const plan_children_t k = {kids[0], kids[1], kids[2], kids[3]};
    plan_observed_t seen = {.members = none};
    reconcile_run_children(&e.x, rc, &k, &seen, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/pods"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/events"), 1);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "FailedCreate");
    /* pod cache-0 exists, just made and not Ready yet: the StatefulSet waits for it, and a
     * pod this young needs no explaining: nothing is read */
    json_object *young = parse("[{\"metadata\":{\"name\":\"cache-0\",\"creationTimestamp\":\"2099-01-01T00:00:00Z\"},"
                               "\"status\":{\"phase\":\"Pending\"}}]");
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    seen.members = young;
    reconcile_run_children(&e.x, rc, &k, &seen, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/pods"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/events"), 1);
    json_object_put(young);
    json_object_put(none);
    put_kids(kids);
    json_object_put(rc);
    env_close(&e);
}

/* An apply refused with 422 (another manager's port in the way): the Service is taken
 * back with a PUT carrying the observed resourceVersion; when the PUT is refused too, it
 * is deleted and created again. Either way an Event says so and nothing is retried in a
 * loop. */
static void test_refused_apply_takes_the_child_back(void)
{
    for (int recreate = 0; recreate < 2; recreate++) {
        env_t e;
        env_open(&e);
        json_object *rc = created(&e, 1), *kids[4];
        reconcile_outcome_t out;
        /* kubectl patch: the port list replaced by one of port 7000 named "redis". */
        json_object *svc = stored(&e, NS "/services/cache");
        CU_ASSERT_PTR_NOT_NULL_FATAL(svc);
        json_object *spec = json_object_object_get(svc, "spec");
        json_object_object_add(spec, "ports", parse("[{\"name\":\"redis\",\"port\":7000,\"protocol\":\"TCP\"}]"));
        json_object_object_add(spec, "sessionAffinity", json_object_new_string("None"));
        put_obj(&e.api, NS "/services/cache", svc);
        const char *rv = json_object_get_string(
            json_object_object_get(json_object_object_get(svc, "metadata"), "resourceVersion"));
        char rv_seen[16];
        snprintf(rv_seen, sizeof(rv_seen), "%s", rv);
        e.api.refuse_patch = NS "/services/cache";
        e.api.refuse_put = recreate ? NS "/services/cache" : NULL;
        children(&e, kids);
        json_object_put(rc);
        rc = stored(&e, RC_PATH);
        reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
        CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
        CU_ASSERT_EQUAL(count_req(&e, "PATCH", NS "/services/cache"), 1);
        CU_ASSERT_EQUAL(count_req(&e, "PUT", NS "/services/cache"), 1);
        CU_ASSERT_EQUAL(count_req(&e, "DELETE", NS "/services/cache"), recreate);
        json_object *now = stored(&e, NS "/services/cache");
        CU_ASSERT_PTR_NOT_NULL_FATAL(now);
        json_object *ports = json_object_object_get(json_object_object_get(now, "spec"), "ports");
        CU_ASSERT_EQUAL(json_object_array_length(ports), 1);
        CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(json_object_array_get_idx(ports, 0), "port")), 6379);
        if (!recreate) {
            /* Other fields of the observed object stay; no managedFields or status sent. */
            CU_ASSERT_STRING_EQUAL(
                json_object_get_string(json_object_object_get(json_object_object_get(now, "spec"), "sessionAffinity")),
                "None");
            CU_ASSERT_PTR_NULL(json_object_object_get(json_object_object_get(now, "metadata"), "managedFields"));
        }
        /* The Event that says so. */
        int found = 0;
        for (int i = 0; i < MAX_OBJS; i++) {
            json_object *r = NULL;
            if (e.api.path[i] && strstr(e.api.path[i], "/events/") &&
                json_object_object_get_ex(e.api.obj[i], "reason", &r))
                found += !strcmp(json_object_get_string(r), recreate ? "Recreated" : "DriftRepaired");
        }
        CU_ASSERT_EQUAL(found, 1);
        /* The status was not touched by the refusal: nothing to report. */
        CU_ASSERT_STRING_NOT_EQUAL(degraded(&e, "reason"), "Invalid");
        json_object_put(now);
        put_kids(kids);
        json_object_put(rc);
        env_close(&e);
    }
}

/* A StorageClass named in the spec is looked up before the StatefulSet is created;
 * missing, the StatefulSet is created all the same (static volumes of that class name may
 * bind) and Degraded names the class, read again at every reconcile; made, Degraded
 * clears and the answer is kept. */
static void test_missing_storage_class_holds_the_statefulset(void)
{
    env_t e;
    env_open(&e);
    put_obj(&e.api, RC_PATH,
            parse("{\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"RedisCluster\",\"metadata\":{"
                  "\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1,"
                  "\"finalizers\":[\"cache.example.com/finalizer\"]},\"spec\":{\"size\":1,\"image\":\"redis\","
                  "\"storage\":{\"storageClass\":\"fast\"}}}"));
    reconcile_forget_storage_classes();
    json_object *rc = stored(&e, RC_PATH);
    reconcile_outcome_t out;
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/apis/storage.k8s.io/v1/storageclasses/fast"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 1);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "StorageClassNotFound");
    CU_ASSERT(strstr(degraded(&e, "message"), "StorageClass \"fast\"") != NULL);
    /* a missing class is not kept: the next reconcile asks again (another worker may have
     * seen it created; two answers would flip the status between them), also while the
     * StatefulSet is too young for a diagnosis (not looking would clear the condition) */
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    json_object *kids[4], *md = NULL;
    children(&e, kids);
    char now[40];
    clock_format_rfc3339(clock_wall_ns(), 0, now, sizeof(now));
    CU_ASSERT_FATAL(kids[2] && json_object_object_get_ex(kids[2], "metadata", &md));
    json_object_object_add(md, "creationTimestamp", json_object_new_string(now));
    /* and moving: a pod made since the status told its counts (no diagnosis now) */
    json_object_object_add(kids[2], "status", parse("{\"replicas\":1,\"readyReplicas\":0}"));
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    put_kids(kids);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/apis/storage.k8s.io/v1/storageclasses/fast"), 2);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "StorageClassNotFound");
    /* created: the next reconcile sees it, and the class found is kept (30 s per process) */
    put_obj(&e.api, "/apis/storage.k8s.io/v1/storageclasses/fast",
            parse("{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{"
                  "\"name\":\"fast\"},\"provisioner\":\"example.com/p\"}"));
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/apis/storage.k8s.io/v1/storageclasses/fast"), 3);
    const char *reason = degraded(&e, "reason");
    CU_ASSERT(!reason || strcmp(reason, "StorageClassNotFound") != 0);
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/apis/storage.k8s.io/v1/storageclasses/fast"), 3);
    reconcile_forget_storage_classes();
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", "/apis/storage.k8s.io/v1/storageclasses/fast"), 4);
    reconcile_forget_storage_classes();
    json_object_put(rc);
    env_close(&e);
}

/* A StatefulSet created a moment ago: its starting pods need no explanation, so no pods
 * or Events are read, and the key comes back when the diagnosis is due. */
static void test_young_statefulset_no_diagnosis_yet(void)
{
    env_t e;
    env_open(&e);
    json_object *rc = created(&e, 0), *kids[4];
    reconcile_outcome_t out;
    tell_counts(&e);
    children(&e, kids);
    char now[40];
    clock_format_rfc3339(clock_wall_ns(), 0, now, sizeof(now));
    json_object *md = NULL;
    CU_ASSERT_FATAL(kids[2] && json_object_object_get_ex(kids[2], "metadata", &md));
    json_object_object_add(md, "creationTimestamp", json_object_new_string(now));
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    int pods = count_req(&e, "GET", NS "/pods"), events = count_req(&e, "GET", NS "/events");
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/pods"), pods);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/events"), events);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT(out.requeue_after_ns > 0 && out.requeue_after_ns <= RECONCILE_DIAGNOSIS_AFTER_NS);
    /* ten seconds old: read */
    clock_format_rfc3339(clock_wall_ns() - RECONCILE_DIAGNOSIS_AFTER_NS - NS_PER_SEC, 0, now, sizeof(now));
    json_object_object_add(md, "creationTimestamp", json_object_new_string(now));
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/pods"), pods + 1);
    put_kids(kids);
    json_object_put(rc);
    env_close(&e);
}


/* The GETs of children (any of the four kinds) logged so far. */
static int child_gets(env_t *e)
{
    return count_req(e, "GET", "/configmaps") + count_req(e, "GET", "/services") +
           count_req(e, "GET", "/statefulsets") + count_req(e, "GET", "/poddisruptionbudgets");
}

/* With workerd's context a new cluster reads no child: its creates are POSTs, all made;
 * a second pass with the children in the cache reads none either. */
static void test_new_cluster_reads_no_child(void)
{
    env_t e;
    env_batched(&e);
    json_object *rc = created(&e, 1);
    CU_ASSERT_EQUAL(child_gets(&e), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", NS "/configmaps"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST", NS "/services"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/poddisruptionbudgets"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH "/status"), 1);
    CU_ASSERT_EQUAL(existsmemo_count(e.exists), 0);
    json_object *kids[4];
    children(&e, kids);
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    reconcile_outcome_t out;
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_DONE);
    CU_ASSERT_EQUAL(child_gets(&e), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", NS "/configmaps"), 1);
    put_kids(kids);
    json_object_put(rc);
    env_close(&e);
}

/* The Event reasons in the store, in order, joined by ',' into out. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The reasons of the Events stored, sorted and joined by commas: a batched stage posts its
 * writes' Events as they complete, in no fixed order. */
static const char *event_reasons(env_t *e, char *out, size_t len)
{
    const char *r[16];
    size_t n = 0;
    out[0] = '\0';
    for (int k = 1; k < 16; k++) {
        char path[128];
        snprintf(path, sizeof(path), NS "/events/cache.%d", k);
        int i = find_obj(&e->api, path);
        if (i < 0)
            break;
        r[n++] = json_object_get_string(json_object_object_get(e->api.obj[i], "reason"));
    }
    qsort(r, n, sizeof(r[0]), cmp_str);
    for (size_t i = 0; i < n; i++) {
        size_t at = strlen(out);
        snprintf(out + at, len - at, "%s%s", at ? "," : "", r[i] ? r[i] : "");
    }
    return out;
}

/* Open e (workerd's context, with the memos, when batched) with the RedisCluster stored
 * (with the finalizer or new) and a user's ConfigMap of the cluster's name, unlabelled
 * (the cache lacks it). Returns the RedisCluster (the caller puts it). */
static json_object *open_with_foreign_configmap(env_t *e, int batched, int finalized)
{
    if (batched)
        env_batched(e);
    else
        env_open(e);
    json_object *rc = store_rc_finalized(e, finalized);
    put_obj(&e->api, NS "/configmaps/cache",
            parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cache\",\"namespace\":"
                  "\"default\",\"uid\":\"u\"},\"data\":{\"redis.conf\":\"mine\",\"other\":\"x\"}}"));
    return rc;
}

/* With workerd's context a user's ConfigMap in the way: the create meets it (POST, 409
 * AlreadyExists, nothing changed); the same reconcile then reads it by name and leaves
 * it alone, ending with the status and Events the read-first path gives; it is read
 * again as long as it is there; once it goes, the read's 404 drops it from the memo and
 * the ConfigMap of ours is created. */
static void test_foreign_configmap_met_by_create_then_read(void)
{
    /* The read-first path (no memo), for the status and Events to match. */
    env_t old;
    json_object *rc = open_with_foreign_configmap(&old, 0, 1);
    reconcile_outcome_t out;
    run_uncached(&old, rc, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_PTR_NOT_NULL_FATAL(degraded(&old, "message"));
    char *want_message = strdup(degraded(&old, "message")), want_events[256];
    event_reasons(&old, want_events, sizeof(want_events));
    CU_ASSERT_STRING_EQUAL(want_events, "Created,OwnerConflict");
    json_object_put(rc);
    env_close(&old);

    env_t e;
    rc = open_with_foreign_configmap(&e, 1, 1);
    char *before = strdup(json_object_to_json_string(e.api.obj[find_obj(&e.api, NS "/configmaps/cache")]));
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_EQUAL(count_req(&e, "POST", NS "/configmaps"), 1);     /* the 409 */
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/configmaps/cache"), 1); /* then read */
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", "/configmaps"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "PUT", "/configmaps"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "DELETE", "/configmaps"), 0);
    CU_ASSERT_EQUAL(count_req(&e, "POST", NS "/services"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 0); /* not without our config */
    CU_ASSERT_TRUE(existsmemo_has(e.exists, "configmaps", "default", "cache"));
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string(e.api.obj[find_obj(&e.api, NS "/configmaps/cache")]), before);
    CU_ASSERT_STRING_EQUAL(degraded(&e, "reason"), "OwnerConflict");
    CU_ASSERT_STRING_EQUAL(degraded(&e, "message"), want_message);
    char got_events[256];
    /* the Service's Created (its write made in the stage the 409 failed), OwnerConflict */
    CU_ASSERT_STRING_EQUAL(event_reasons(&e, got_events, sizeof(got_events)), want_events);
    /* Again, with the RedisCluster as stored and the Service in the cache: read again,
     * nothing written. */
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    json_object *svc = stored(&e, NS "/services/cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(svc);
    int writes = count_req(&e, "POST", "/") + count_req(&e, "PATCH", "/") + count_req(&e, "PUT", "/");
    reconcile_run(&e.x, rc, NULL, svc, NULL, NULL, NULL, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/configmaps/cache"), 2);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/services/cache"), 1); /* the 409's reads; then in the cache */
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/") + count_req(&e, "PATCH", "/") + count_req(&e, "PUT", "/"), writes);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string(e.api.obj[find_obj(&e.api, NS "/configmaps/cache")]), before);
    /* The user deletes it: the read answers 404, the name leaves the memo, ours is made. */
    int i = find_obj(&e.api, NS "/configmaps/cache");
    free(e.api.path[i]);
    e.api.path[i] = NULL;
    json_object_put(e.api.obj[i]);
    e.api.obj[i] = NULL;
    reconcile_run(&e.x, rc, NULL, svc, NULL, NULL, NULL, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/configmaps/cache"), 3);
    CU_ASSERT_FALSE(existsmemo_has(e.exists, "configmaps", "default", "cache"));
    CU_ASSERT_EQUAL(count_req(&e, "POST", NS "/configmaps"), 2);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 1);
    CU_ASSERT_EQUAL(existsmemo_count(e.exists), 0);
    json_object_put(svc);
    json_object_put(rc);
    free(before);
    free(want_message);
    env_close(&e);
}

/* The same on a brand-new RedisCluster (no finalizer yet): the first run adds the
 * finalizer, its create meets the user's ConfigMap; the plan made again after the reads
 * starts from the RedisCluster with the finalizer (it must not add it again with the
 * resourceVersion it was observed at: 409), so the one reconcile ends with the conflict
 * reported and the finalizer PATCHed once. */
static void test_foreign_configmap_new_cluster_one_reconcile(void)
{
    env_t e;
    json_object *rc = open_with_foreign_configmap(&e, 1, 0);
    reconcile_outcome_t out;
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER); /* not RECONCILE_REQUEUE: no 409 on the finalizer */
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH), 2);  /* the finalizer once, and the status */
    CU_ASSERT_EQUAL(count_req(&e, "PATCH", RC_PATH "/status"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "GET", NS "/configmaps/cache"), 1);
    CU_ASSERT_PTR_NOT_NULL(degraded(&e, "reason"));
    CU_ASSERT(degraded(&e, "reason") && !strcmp(degraded(&e, "reason"), "OwnerConflict"));
    json_object_put(rc);
    env_close(&e);
}

/* A name in the memo whose child the cache now holds leaves it (no read). */
static void test_child_in_cache_leaves_the_memo(void)
{
    env_t e;
    env_batched(&e);
    json_object *rc = created(&e, 1), *kids[4];
    children(&e, kids);
    CU_ASSERT_EQUAL(existsmemo_add(e.exists, "configmaps", "default", "cache"), 0);
    int gets = child_gets(&e);
    json_object_put(rc);
    rc = stored(&e, RC_PATH);
    reconcile_outcome_t out;
    reconcile_run_children(&e.x, rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, NULL, &out);
    CU_ASSERT_EQUAL(child_gets(&e), gets);
    CU_ASSERT_FALSE(existsmemo_has(e.exists, "configmaps", "default", "cache"));
    put_kids(kids);
    json_object_put(rc);
    env_close(&e);
}

#define RB_PATH "/apis/cache.example.com/v1/namespaces/default/redisbackups/one"
#define STS_PATH "/apis/apps/v1/namespaces/default/statefulsets/cache"

/* RESTORE FROM A REDISBACKUP (plan_restore.h): a RedisCluster restoring from the RedisBackup
 * "one", which the cache does not hand it, reads it once (READ_MORE), records its object in
 * the status and creates no StatefulSet; the next reconcile, once the RedisBackup is
 * deleted, reads none and creates the StatefulSet from the record. */
static void test_restore_from_backup_read_once_then_recorded(void)
{
    env_t e;
    env_open(&e);
    put_obj(&e.api, RC_PATH,
            parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":"
                  "\"cache\",\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1,\"finalizers\":["
                  "\"cache.example.com/finalizer\"]},\"spec\":{\"size\":1,\"image\":\"redis\",\"restore\":{"
                  "\"from\":{\"backup\":\"one\"}}}}"));
    put_obj(&e.api, RB_PATH,
            parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisBackup\",\"metadata\":{\"name\":"
                  "\"one\",\"namespace\":\"default\"},\"spec\":{\"source\":{\"cluster\":\"src\"},"
                  "\"destination\":{\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"prefix\":"
                  "\"one/\"},\"credentialsSecret\":{\"name\":\"s3-creds\"}},\"status\":{\"phase\":"
                  "\"Succeeded\",\"key\":\"one/one.rdb\"}}"));
    json_object *rc = stored(&e, RC_PATH);
    reconcile_outcome_t out;
    run_uncached(&e, rc, &out);
    CU_ASSERT_EQUAL(out.result, RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_EQUAL(out.requeue_after_ns, INT64_C(1000000000));
    CU_ASSERT_EQUAL(count_req(&e, "GET", RB_PATH), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 0);
    json_object *after = stored(&e, RC_PATH);
    ASSERT_STRS_AT(after, {"status restore source backup", "one"}, {"status restore source key", "one/one.rdb"},
                   {"status restore source region", "us-east-1"}, {"status conditions 0 reason", "RestorePending"});
    /* the RedisBackup deleted: nothing of it is needed any more */
    int k = find_obj(&e.api, RB_PATH);
    CU_ASSERT_FATAL(k >= 0);
    free(e.api.path[k]);
    e.api.path[k] = NULL;
    json_object_put(e.api.obj[k]);
    e.api.obj[k] = NULL;
    run_uncached(&e, after, &out);
    CU_ASSERT_EQUAL(count_req(&e, "GET", RB_PATH), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST", "/statefulsets"), 1);
    json_object *sts = stored(&e, STS_PATH);
    ASSERT_STRS_AT(sts, {"spec template spec initContainers 0 name", "restore"},
                   {"spec template spec initContainers 0 command 9", "one/one.rdb"});
    PUT_EACH(rc, after, sts);
    env_close(&e);
}

static const cu_entry_t tests[] = {
    CU_SUITE("workerd shell"),
    {"the outcome names each write of the RedisCluster", test_outcome_names_each_write_of_the_rediscluster},
    {"a new cluster's first reconcile is quiet, naming its children", test_first_reconcile_quiet_with_its_children},
    {"a child stored otherwise than sent: not quiet", test_child_stored_otherwise_is_not_quiet},
    {"not Running: pods and Events read, the cause reported", test_not_running_reads_and_reports_the_cause},
    {"a worker keeps a stuck cluster's diagnosis reads while nothing changes",
     test_diagnosis_reads_kept_while_nothing_changes},
    {"two workers: a memo older than the status is not used", test_diagnosis_memo_older_than_the_status_is_not_used},
    {"a worker with the cache's pods reads only the Events that may explain", test_diagnosis_with_the_cache_pods},
    {"a refused apply takes the child back", test_refused_apply_takes_the_child_back},
    {"a missing StorageClass is named, the StatefulSet made", test_missing_storage_class_holds_the_statefulset},
    {"a young StatefulSet: no diagnosis yet, requeued", test_young_statefulset_no_diagnosis_yet},
    {"a child absent from the cache is read and, not ours, left alone", test_absent_in_cache_is_read_and_left_alone},
    {"nothing absent: no read", test_nothing_absent_reads_nothing},
    {"a refused write is reported once", test_refused_write_reported_once},
    {"create meets AlreadyExists: conflict", test_create_already_exists_requeues},
    {"workerd's context: a new cluster reads no child", test_new_cluster_reads_no_child},
    {"workerd's context: a foreign ConfigMap met by a create, read and left alone",
     test_foreign_configmap_met_by_create_then_read},
    {"workerd's context: a new cluster's create meets a foreign ConfigMap: one reconcile",
     test_foreign_configmap_new_cluster_one_reconcile},
    {"workerd's context: a child in the cache leaves the memo", test_child_in_cache_leaves_the_memo},
    {"restore from a RedisBackup: read once, recorded, then the StatefulSet from the record",
     test_restore_from_backup_read_once_then_recorded},
};

CU_MAIN(tests)
