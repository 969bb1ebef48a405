/* Unit tests of workerd's recorder (asynchronous, aggregated Events) against an
 * in-process fake API server: repeats PATCH the count of the Event recorded instead of
 * POSTing again (also while its POST is in flight), an expired Event is POSTed anew, the
 * per-object spam filter, the queue bound, and that recording never waits for the server.
 */
#include "buf.h"
#include "clock.h"
#include "fake_api.h"
#include "jsonx.h"
#include "kube_client.h"
#include "kube_config.h"
#include "loop.h"
#include "loop_curl.h"
#include "ratelimit_shared.h"
#include "recorder.h"

#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    fake_log_t log;
    long count[FAKE_LOG_MAX]; /* the body's count, by log entry */
    int64_t at[FAKE_LOG_MAX]; /* when it arrived (monotonic), by log entry */
    int delay_ms;     /* every answer waits this long */
    int expire_patch; /* PATCHes answer 404 */
    char last_post[2048]; /* the body of the last POST */
} api_t;

static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url,
                      const char *body, buf_t *out)
{
    (void)c;
    api_t *a = user;
    if (a->delay_ms)
        usleep((useconds_t)a->delay_ms * 1000);
    json_object *in = json_tokener_parse(body);
    json_object *cnt = NULL;
    pthread_mutex_lock(&a->mu);
    int i = fake_log_add(&a->log, method, url);
    a->at[i] = clock_mono_ns();
    a->count[i] = in && json_object_object_get_ex(in, "count", &cnt) ? (long)json_object_get_int64(cnt) : -1;
    int expire = a->expire_patch;
    if (!strcmp(method, "POST"))
        snprintf(a->last_post, sizeof(a->last_post), "%s", body ? body : "");
    pthread_mutex_unlock(&a->mu);
    int code = 200;
    if (!strcmp(method, "POST")) {
        code = 201;
        buf_puts(out, body);
    } else if (expire) {
        code = 404;
        buf_puts(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":404,"
                      "\"reason\":\"NotFound\",\"message\":\"gone\"}");
    } else {
        buf_puts(out, "{}");
    }
    json_object_put(in);
    return code;
}

typedef struct {
    api_t api;
    kube_config_t *cfg;
    kube_client_t *client;
    loop_t *loop;
    loop_curl_t *lc;
    recorder_t *r;
    json_object *rc[2];
} env_t;

/* The recorder's client has the options co (NULL: unlimited), its limiter the Events'
 * budget (recorder.h). */
static void env_open_client(env_t *e, const recorder_opts_t *o, const kube_client_opts_t *co)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->api.mu, NULL);
    fake_api_open(&e->api.srv, on_request, &e->api, co, &e->cfg, &e->client);
    e->loop = loop_new();
    e->lc = loop_curl_open(e->loop);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->lc);
    e->r = recorder_new(e->client, e->lc, o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->r);
    e->rc[0] = json_tokener_parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
                                  "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u-a\"}}");
    e->rc[1] = json_tokener_parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
                                  "\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"uid\":\"u-b\"}}");
}

static void env_open(env_t *e, const recorder_opts_t *o)
{
    env_open_client(e, o, NULL);
}

static void env_close(env_t *e)
{
    recorder_destroy(&e->r);
    CU_ASSERT_PTR_NULL(e->r);
    loop_curl_destroy(&e->lc);
    loop_destroy(&e->loop);
    fake_api_close(&e->api.srv, &e->cfg, &e->client);
    pthread_mutex_destroy(&e->api.mu);
    json_object_put(e->rc[0]);
    json_object_put(e->rc[1]);
}

/* Turn the loop until nothing is pending (at most 5 s). */
static void drain(env_t *e)
{
    int64_t end = clock_mono_ns() + 5 * NS_PER_SEC;
    while (recorder_pending(e->r) && clock_mono_ns() < end)
        loop_run_once(e->loop, 50 * NS_PER_MS);
    CU_ASSERT_EQUAL(recorder_pending(e->r), 0);
}

static int count_req(env_t *e, const char *method)
{
    return fake_log_tally(&e->api.mu, &e->api.log, method, "");
}

static long last_count(env_t *e)
{
    pthread_mutex_lock(&e->api.mu);
    long c = e->api.log.n ? e->api.count[e->api.log.n - 1] : -1;
    pthread_mutex_unlock(&e->api.mu);
    return c;
}

/* Repeats after the POST has landed: one PATCH per round, carrying the count. A different
 * message is another Event. */
static void test_repeats_patch_the_count(void)
{
    env_t e;
    env_open(&e, NULL);
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Normal", "Created", "Created ConfigMap a", "h", 0),
                    RECORDER_QUEUED);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 1);
    CU_ASSERT_EQUAL(last_count(&e), 1);
    CU_ASSERT_STRING_EQUAL(e.api.log.path[0], "/api/v1/namespaces/ns/events");
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Normal", "Created", "Created ConfigMap a", "h", 0),
                    RECORDER_AGGREGATED);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH"), 1);
    CU_ASSERT_EQUAL(last_count(&e), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.api.log.path[1], "/api/v1/namespaces/ns/events/a."));
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Normal", "Created", "Created Service a", "h", 0),
                    RECORDER_QUEUED);
    /* the same reason and message on another object is another Event */
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[1], "Normal", "Created", "Created ConfigMap a", "h", 0),
                    RECORDER_QUEUED);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 3);
    recorder_stats_t st = recorder_stats(e.r);
    CU_ASSERT_EQUAL(st.posts, 3);
    CU_ASSERT_EQUAL(st.patches, 1);
    CU_ASSERT_EQUAL(st.aggregated, 1);
    env_close(&e);
}

/* Ten repeats recorded while the POST is still on its way: no second POST, and a single
 * PATCH with count 11 once the POST has landed. Recording never waited for the slow
 * server (200 ms per answer). */
static void test_repeats_in_flight_fold_into_one_patch(void)
{
    env_t e;
    env_open(&e, NULL);
    e.api.delay_ms = 200;
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Warning", "Failed", "boom", "h", 0), RECORDER_QUEUED);
    loop_run_once(e.loop, 0); /* the POST starts */
    for (int i = 0; i < 10; i++)
        CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Warning", "Failed", "boom", "h", 0), RECORDER_AGGREGATED);
    CU_ASSERT(clock_mono_ns() - t0 < 100 * NS_PER_MS); /* nothing waited for an answer */
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH"), 1);
    CU_ASSERT_EQUAL(last_count(&e), 11);
    env_close(&e);
}

/* A repeat whose Event has expired (PATCH 404) is POSTed as a new Event. */
static void test_expired_event_is_posted_again(void)
{
    env_t e;
    env_open(&e, NULL);
    recorder_record(e.r, e.rc[0], "Normal", "Scaled", "to 3", "h", 0);
    drain(&e);
    e.api.expire_patch = 1;
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Normal", "Scaled", "to 3", "h", 0), RECORDER_AGGREGATED);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "PATCH"), 1);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 2);
    CU_ASSERT_EQUAL(recorder_stats(e.r).failed, 0);
    /* The new POST is the whole Event again (kept as text once created), renamed. */
    json_object *again = json_tokener_parse(e.api.last_post);
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(again, "reason"), "Scaled");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(again, "message"), "to 3");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(again, "type"), "Normal");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(again, "involvedObject", "name"), "a");
    CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(again, "count")), 2);
    const char *name = JSONX_STR_AT(again, "metadata", "name");
    CU_ASSERT(name && !strncmp(name, "a.", 2));
    json_object_put(again);
    env_close(&e);
}

/* The spam filter: 25 new Events per object, then drops; repeats of a recorded one still
 * count; another object has its own bucket. */
static void test_spam_filter_per_object(void)
{
    env_t e;
    env_open(&e, NULL);
    char msg[32];
    int queued = 0, spam = 0;
    for (int i = 0; i < 30; i++) {
        snprintf(msg, sizeof(msg), "message %d", i);
        recorder_result_t res = recorder_record(e.r, e.rc[0], "Normal", "Step", msg, "h", 0);
        queued += res == RECORDER_QUEUED;
        spam += res == RECORDER_SPAM;
    }
    CU_ASSERT_EQUAL(queued, RECORDER_SPAM_BURST);
    CU_ASSERT_EQUAL(spam, 30 - RECORDER_SPAM_BURST);
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Normal", "Step", "message 0", "h", 0), RECORDER_AGGREGATED);
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[1], "Normal", "Step", "message 0", "h", 0), RECORDER_QUEUED);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), RECORDER_SPAM_BURST + 1);
    CU_ASSERT_EQUAL(recorder_stats(e.r).dropped_spam, (uint64_t)(30 - RECORDER_SPAM_BURST));
    env_close(&e);
}

/* The queue bound: with the server slow and 2 in flight, at most queue_cap Events wait;
 * past it new ones are dropped at once (never a wait), and everything queued goes out. */
static void test_queue_is_bounded(void)
{
    env_t e;
    recorder_opts_t o = {.queue_cap = 4, .max_in_flight = 2, .spam_burst = 1000, .spam_qps = 1};
    env_open(&e, &o);
    e.api.delay_ms = 100;
    char msg[32];
    int queued = 0, full = 0;
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < 20; i++) {
        snprintf(msg, sizeof(msg), "m%d", i);
        recorder_result_t res = recorder_record(e.r, e.rc[0], "Normal", "Step", msg, "h", 0);
        queued += res == RECORDER_QUEUED;
        full += res == RECORDER_FULL;
    }
    CU_ASSERT(clock_mono_ns() - t0 < 100 * NS_PER_MS);
    /* 2 handed to curl (in flight), 4 wait, the other 14 are dropped */
    CU_ASSERT_EQUAL(queued, 6);
    CU_ASSERT_EQUAL(full, 14);
    CU_ASSERT_EQUAL(recorder_pending(e.r), 6);
    CU_ASSERT_EQUAL(recorder_stats(e.r).dropped_full, 14);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 6);
    env_close(&e);
}

/* An Event whose deadline (the leadership's validity) has passed is not sent. */
static void test_past_deadline_is_dropped(void)
{
    env_t e;
    env_open(&e, NULL);
    recorder_record(e.r, e.rc[0], "Normal", "Late", "x", "h", clock_mono_ns() - 1);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 0);
    CU_ASSERT_EQUAL(recorder_stats(e.r).failed, 1);
    /* forgotten, not stuck: recorded again in time, it is POSTed */
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Normal", "Late", "x", "h", 0), RECORDER_QUEUED);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 1);
    CU_ASSERT_EQUAL(recorder_record(e.r, e.rc[0], "Normal", "Bad", "x", NULL, 0), RECORDER_QUEUED);
    json_object *noname = json_tokener_parse("{\"metadata\":{}}");
    CU_ASSERT_EQUAL(recorder_record(e.r, noname, "Normal", "Bad", "x", NULL, 0), RECORDER_INVALID);
    json_object_put(noname);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 2);
    env_close(&e);
}

/* The i-th request's arrival (monotonic). */
static int64_t arrival(env_t *e, int i)
{
    pthread_mutex_lock(&e->api.mu);
    int64_t t = i < e->api.log.n ? e->api.at[i] : 0;
    pthread_mutex_unlock(&e->api.mu);
    return t;
}

/* Record four distinct Events on rc from r and say how long recording took. */
static int64_t record_four(recorder_t *r, const json_object *rc)
{
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < 4; i++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "Created child %d", i);
        CU_ASSERT_EQUAL(recorder_record(r, rc, "Normal", "Created", msg, "h", 0), RECORDER_QUEUED);
    }
    return clock_mono_ns() - t0;
}

/* With a budget of 10 QPS, burst 1, the Events' requests go out a token apart (100 ms),
 * in the order recorded, while recording returns at once; the waits are counted. */
static void test_budget_spaces_the_requests(void)
{
    env_t e;
    kube_client_opts_t co;
    kube_client_opts_init(&co);
    co.qps = 10;
    co.burst = 1;
    env_open_client(&e, NULL, &co);
    int64_t took = record_four(e.r, e.rc[0]);
    CU_ASSERT(took < 250 * NS_PER_MS); /* never waits for a token itself (that takes 300 ms) */
    drain(&e);
    CU_ASSERT_EQUAL_FATAL(count_req(&e, "POST"), 4);
    for (int i = 1; i < 4; i++)
        CU_ASSERT(arrival(&e, i) - arrival(&e, 0) >= i * 100 * NS_PER_MS - 10 * NS_PER_MS);
    recorder_stats_t st = recorder_stats(e.r);
    CU_ASSERT_EQUAL(st.posts, 4);
    CU_ASSERT_EQUAL(st.throttled, 3);
    CU_ASSERT(st.throttled_ns >= 270 * NS_PER_MS); /* 3 x 100 ms (each waits once at the head), less slack */
    env_close(&e);
}

/* Two workers' recorders on the operator's one Events bucket share its budget: 4 Events
 * from each, 10 QPS burst 2 in all, take 0.6 s at least, not 0.3. Without a budget
 * nothing waits. */
static void test_shared_budget_across_recorders(void)
{
    char path[] = "/tmp/rdc-test-events-bucket-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    char err[256];
    ratelimit_shared_t *bucket = NULL;
    CU_ASSERT_FATAL(ratelimit_shared_create(path, 10, 2, clock_mono_ns(), &bucket, err, sizeof(err)) == 0);
    env_t e;
    kube_client_opts_t co;
    kube_client_opts_init(&co);
    co.qps = 1000; /* the file wins */
    co.burst = 1000;
    co.shared_bucket = path;
    env_open_client(&e, NULL, &co);
    kube_client_t *other_client = kube_client_new(e.cfg, &co, NULL); /* another worker's */
    CU_ASSERT_PTR_NOT_NULL_FATAL(other_client);
    recorder_t *other = recorder_new(other_client, e.lc, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    record_four(e.r, e.rc[0]);
    record_four(other, e.rc[1]);
    int64_t end = clock_mono_ns() + 5 * NS_PER_SEC;
    while ((recorder_pending(e.r) || recorder_pending(other)) && clock_mono_ns() < end)
        loop_run_once(e.loop, 50 * NS_PER_MS);
    CU_ASSERT_EQUAL_FATAL(count_req(&e, "POST"), 8);
    /* 8 tokens of a bucket of 2 at 10/s: the last 6 come 100 ms apart */
    CU_ASSERT(arrival(&e, 7) - arrival(&e, 0) >= 600 * NS_PER_MS - 20 * NS_PER_MS);
    CU_ASSERT_EQUAL(recorder_stats(e.r).throttled + recorder_stats(other).throttled, 6);
    recorder_destroy(&other);
    kube_client_destroy(&other_client);
    env_close(&e);
    ratelimit_shared_destroy(&bucket);
    unlink(path);

    env_open(&e, NULL); /* an unlimited client: no budget */
    record_four(e.r, e.rc[0]);
    drain(&e);
    CU_ASSERT_EQUAL(count_req(&e, "POST"), 4);
    CU_ASSERT_EQUAL(recorder_stats(e.r).throttled, 0);
    env_close(&e);
}

static const cu_entry_t tests[] = {
    CU_SUITE("recorder"),
    {"repeats PATCH the count", test_repeats_patch_the_count},
    {"repeats in flight fold into one PATCH", test_repeats_in_flight_fold_into_one_patch},
    {"an expired Event is POSTed again", test_expired_event_is_posted_again},
    {"spam filter per object", test_spam_filter_per_object},
    {"the queue is bounded", test_queue_is_bounded},
    {"past the deadline: dropped", test_past_deadline_is_dropped},
    {"a QPS budget spaces the requests", test_budget_spaces_the_requests},
    {"the operator's Events bucket is shared", test_shared_budget_across_recorders},
};
CU_MAIN(tests)
