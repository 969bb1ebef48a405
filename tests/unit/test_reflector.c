/* Unit tests of informerd's reflector (informerd/reflector.h) against an in-process fake
 * API server, on a real loop and curl multi: it LISTs its kind into the cache and WATCHes
 * from the list's resourceVersion; the events reach the cache; a watch that ends resumes
 * from the last resourceVersion seen; a 410 Gone relists, and the relist deletes what the
 * list no longer has; an object the transform refuses relists too. */
#include "buf.h"
#include "cache.h"
#include "clock.h"
#include "fake_api.h"
#include "loop_api.h"
#include "kube_client.h"
#include "kube_config.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics.h"
#include "reflector.h"

#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fake API server's script: the n-th LIST and the n-th WATCH answer what the test set. */
#define SCRIPT_MAX 8
typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    int lists, watches;
    char watch_rv[SCRIPT_MAX][32];   /* the resourceVersion each watch asked from */
    int list_code[SCRIPT_MAX];
    const char *list_body[SCRIPT_MAX];
    int watch_code[SCRIPT_MAX];
    const char *watch_body[SCRIPT_MAX];
} api_t;

static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                      buf_t *out)
{
    (void)method, (void)url, (void)body;
    api_t *a = user;
    const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
    const char *rv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
    pthread_mutex_lock(&a->mu);
    int code;
    const char *text;
    if (watch && (!strcmp(watch, "1") || !strcmp(watch, "true"))) {
        int n = a->watches < SCRIPT_MAX ? a->watches : SCRIPT_MAX - 1;
        snprintf(a->watch_rv[n], sizeof(a->watch_rv[n]), "%s", rv ? rv : "");
        a->watches++;
        code = a->watch_code[n] ? a->watch_code[n] : 200;
        text = a->watch_body[n] ? a->watch_body[n] : "";
    } else {
        int n = a->lists < SCRIPT_MAX ? a->lists : SCRIPT_MAX - 1;
        a->lists++;
        code = a->list_code[n] ? a->list_code[n] : 200;
        text = a->list_body[n] ? a->list_body[n] : "{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}";
    }
    pthread_mutex_unlock(&a->mu);
    buf_puts(out, text);
    return code;
}

typedef struct {
    api_t api;
    loop_api_t la;              /* the client, the loop and its curl multi */
    cache_t *cache;
    reflector_t *r;
} fx_t;

static fx_t fx;

/* Refuses an object named "bad" (a Pod's compact form that cannot be made, say). */
static int refuse_bad(json_object *obj)
{
    json_object *md = NULL, *name = NULL;
    json_object_object_get_ex(obj, "metadata", &md);
    json_object_object_get_ex(md, "name", &name);
    return name && !strcmp(json_object_get_string(name), "bad") ? -1 : 0;
}

static const reflector_kind_t KIND = {"RedisCluster", "cache.example.com", "v1", "redisclusters", NULL, refuse_bad, 0};

static void fx_start(void)
{
    memset(&fx, 0, sizeof(fx));
    pthread_mutex_init(&fx.api.mu, NULL);
    fake_api_start(&fx.api.srv, on_request, &fx.api);
    loop_api_start(&fx.la, &fx.api.srv);
    fx.cache = cache_new("RedisCluster");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx.cache);
}

static void fx_reflector(void)
{
    opt_strlist_t all = {{NULL}, 0};
    reflector_config_t rc = {fx.la.client, fx.la.lc, fx.cache, &all, 5, 100, 1 << 20};
    fx.r = reflector_new(&KIND, &rc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx.r);
    CU_ASSERT_STRING_EQUAL(reflector_kind(fx.r), "RedisCluster");
}

static void fx_stop(void)
{
    reflector_destroy(&fx.r);
    CU_ASSERT_PTR_NULL(fx.r);
    loop_api_stop(&fx.la);
    cache_destroy(&fx.cache);
    fake_api_stop(&fx.api.srv);
    pthread_mutex_destroy(&fx.api.mu);
}

/* Turns of the loop, stepping the reflector as informer.c does, until cond() or ms pass. */
static int run_until(int (*cond)(void), int ms)
{
    int64_t until = clock_mono_ns() + (int64_t)ms * NS_PER_MS;
    while (!cond() && clock_mono_ns() < until) {
        int64_t now = clock_mono_ns();
        reflector_step(fx.r, now);
        int64_t next = reflector_next_deadline(fx.r);
        int64_t wait = 20 * NS_PER_MS;
        if (next - now < wait)
            wait = next > now ? next - now : 0;
        loop_run_once(fx.la.loop, wait);
    }
    return cond();
}

static int watches_at_least(int n)
{
    pthread_mutex_lock(&fx.api.mu);
    int w = fx.api.watches;
    pthread_mutex_unlock(&fx.api.mu);
    return w >= n;
}

static int synced(void)
{
    return reflector_sync_state(fx.r).synced;
}

static int second_watch(void)
{
    return watches_at_least(2);
}

static int relisted_without_b(void)
{
    return !cache_lookup(fx.cache, "RedisCluster", "ns/b") && watches_at_least(3) &&
           !reflector_sync_state(fx.r).listing;
}

static const char *rv_of(const char *key)
{
    const cache_item_t *it = cache_lookup(fx.cache, "RedisCluster", key);
    return it && it->resource_version ? it->resource_version : "";
}

static double errors(const char *reason)
{
    metric_family_t *f = metrics_counter(metrics_default(), "informer_errors_total", NULL, "kind,reason");
    return metric_value(f, METRIC_LABELS("RedisCluster", reason));
}

#define RC(name, rv) \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"uid\":\"u-" name "\",\"resourceVersion\":\"" rv "\"}}"
#define EVENT(type, name, rv) "{\"type\":\"" type "\",\"object\":" RC(name, rv) "}\n"

static void test_list_watch_relist(void)
{
    fx_start();
    double watch_errors = errors("watch");
    fx.api.list_body[0] = "{\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[" RC("a", "10") "," RC("b", "10") "]}";
    /* The first watch brings two events and a bookmark, then the server ends it at once. */
    fx.api.watch_body[0] = EVENT("MODIFIED", "a", "11") EVENT("ADDED", "c", "12")
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"RedisCluster\",\"metadata\":{\"resourceVersion\":\"13\"}}}\n";
    /* Resumed from 13, the server no longer has it. */
    fx.api.watch_code[1] = 410;
    fx.api.watch_body[1] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Expired\","
                           "\"message\":\"too old resource version: 13 (14)\",\"code\":410}";
    fx.api.list_body[1] = "{\"metadata\":{\"resourceVersion\":\"14\"},\"items\":[" RC("a", "11") "," RC("c", "12") "]}";
    fx_reflector();
    syncgate_kind_t st = reflector_sync_state(fx.r);
    CU_ASSERT_FALSE(st.synced);
    CU_ASSERT_EQUAL(reflector_next_deadline(fx.r), 0); /* due at once */
    CU_ASSERT_TRUE_FATAL(run_until(synced, 3000));
    /* Listed (the watch's events may have come in the same turn), kind and apiVersion
     * stamped on every listed item. */
    const char *b = cache_get_json(fx.cache, "RedisCluster", "ns/b");
    CU_ASSERT_PTR_NOT_NULL(b && strstr(b, "\"apiVersion\":\"cache.example.com/v1\""));
    CU_ASSERT_PTR_NOT_NULL(b && strstr(b, "\"kind\":\"RedisCluster\""));
    CU_ASSERT_TRUE_FATAL(run_until(second_watch, 5000));
    CU_ASSERT_STRING_EQUAL(fx.api.watch_rv[0], "10"); /* from the list's resourceVersion */
    CU_ASSERT_STRING_EQUAL(rv_of("ns/a"), "11");
    CU_ASSERT_STRING_EQUAL(rv_of("ns/c"), "12");
    CU_ASSERT_STRING_EQUAL(fx.api.watch_rv[1], "13"); /* resumed from the bookmark, no relist */
    CU_ASSERT_EQUAL(fx.api.lists, 1);
    /* The 410 relists; the list no longer has b: it is deleted. */
    CU_ASSERT_TRUE_FATAL(run_until(relisted_without_b, 5000));
    CU_ASSERT_EQUAL(fx.api.lists, 2);
    CU_ASSERT_STRING_EQUAL(fx.api.watch_rv[2], "14");
    CU_ASSERT_EQUAL(cache_count(fx.cache, "RedisCluster"), 2);
    st = reflector_sync_state(fx.r);
    CU_ASSERT_TRUE(st.synced);
    CU_ASSERT_STRING_EQUAL(st.last_error, "");
    CU_ASSERT(errors("watch") >= watch_errors + 2); /* the short watch and the 410 */
    fx_stop();
}

static int failed_then_relisted(void)
{
    return fx.api.lists >= 2 && synced() && !reflector_sync_state(fx.r).listing;
}

/* A LIST refused, then one with an object the transform refuses: each ends in a relist
 * after a backoff, with the reason kept for the sync gate until a LIST succeeds. */
static void test_failures_relist(void)
{
    fx_start();
    double bad = errors("bad_object"), list = errors("list");
    fx.api.list_code[0] = 403;
    fx.api.list_body[0] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Forbidden\","
                          "\"message\":\"redisclusters is forbidden\",\"code\":403}";
    fx.api.list_body[1] = "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[" RC("bad", "5") "]}";
    fx.api.list_body[2] = "{\"metadata\":{\"resourceVersion\":\"6\"},\"items\":[" RC("good", "6") "]}";
    fx_reflector();
    int64_t now = clock_mono_ns();
    reflector_step(fx.r, now);
    CU_ASSERT_TRUE(reflector_sync_state(fx.r).listing);
    int64_t until = now + 3000 * NS_PER_MS;
    while (clock_mono_ns() < until && fx.api.lists < 1)
        loop_run_once(fx.la.loop, 10 * NS_PER_MS);
    for (int i = 0; i < 20; i++)
        loop_run_once(fx.la.loop, 5 * NS_PER_MS);
    syncgate_kind_t st = reflector_sync_state(fx.r);
    CU_ASSERT_FALSE(st.synced);
    CU_ASSERT_FALSE(st.listing);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.last_error, "forbidden"));
    CU_ASSERT(reflector_next_deadline(fx.r) > clock_mono_ns()); /* after a backoff */
    CU_ASSERT_TRUE_FATAL(run_until(failed_then_relisted, 10000));
    CU_ASSERT_EQUAL(fx.api.lists, 3);
    CU_ASSERT_PTR_NULL(cache_lookup(fx.cache, "RedisCluster", "ns/bad"));
    CU_ASSERT_STRING_EQUAL(rv_of("ns/good"), "6");
    CU_ASSERT_EQUAL(errors("list"), list + 1);
    CU_ASSERT_EQUAL(errors("bad_object"), bad); /* the transform's refusal failed the LIST, no object went in */
    fx_stop();
}

/* An optional kind whose LIST is refused with 404 (its CRD not installed) is listed again
 * after 5 minutes, not at the failure backoff; a required kind keeps the backoff. */
static void run_404(int optional, int64_t *delay_ns)
{
    fx_start();
    for (int i = 0; i < 2; i++) {
        fx.api.list_code[i] = 404;
        fx.api.list_body[i] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                              "\"reason\":\"NotFound\",\"message\":\"the server could not find the requested "
                              "resource\",\"code\":404}";
    }
    fx_reflector();
    reflector_set_optional(fx.r, optional);
    int64_t now = clock_mono_ns();
    reflector_step(fx.r, now);
    int64_t until = now + 3000 * NS_PER_MS;
    while (clock_mono_ns() < until && (fx.api.lists < 1 || reflector_sync_state(fx.r).listing))
        loop_run_once(fx.la.loop, 10 * NS_PER_MS);
    syncgate_kind_t st = reflector_sync_state(fx.r);
    CU_ASSERT_FALSE(st.synced);
    CU_ASSERT_FALSE(st.listing);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.last_error, "404"));
    *delay_ns = reflector_next_deadline(fx.r) - clock_mono_ns();
    fx_stop();
}

static void test_optional_absent(void)
{
    int64_t optional_ns, required_ns;
    run_404(1, &optional_ns);
    run_404(0, &required_ns);
    /* 5 minutes, jittered by at most 10 %; the required kind's first backoff is about 1 s. */
    CU_ASSERT(optional_ns > 260 * NS_PER_SEC && optional_ns <= 330 * NS_PER_SEC);
    CU_ASSERT(required_ns > 0 && required_ns < 5 * NS_PER_SEC);
}

static const cu_entry_t tests[] = {
    CU_SUITE("informerd reflector"),
    {"LIST, WATCH, resume from a bookmark, relist on 410", test_list_watch_relist},
    {"a refused LIST and a refused object relist after a backoff", test_failures_relist},
    {"an optional kind not served (404): listed again in 5 minutes, a required one at the backoff",
     test_optional_absent},
};

CU_MAIN(tests)
