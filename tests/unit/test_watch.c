/* Unit tests for the watch stream decoder. */
#include "cu_table.h"
#include "text_assert.h"
#include "watch.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the callback saw, flattened to one comparable string per event. */
typedef struct {
    char log[8192];
    size_t len;
    int count;
    int stop_after; /* 0 = never stop */
    kube_error_code_t last_error;
} seen_t;

static int record(const watch_event_t *ev, void *user)
{
    seen_t *s = user;
    if (s->len + 1 < sizeof(s->log)) {
        int n = snprintf(s->log + s->len, sizeof(s->log) - s->len, "%s %s/%s rv=%s|",
                         ev->type_name, ev->ns ? ev->ns : "-", ev->name ? ev->name : "-",
                         ev->resource_version ? ev->resource_version : "-");
        s->len += (size_t)n < sizeof(s->log) - s->len ? (size_t)n : sizeof(s->log) - s->len - 1;
    }
    if (ev->type == WATCH_ERROR) {
        CU_ASSERT_PTR_NOT_NULL(ev->error);
        s->last_error = ev->error->code;
    } else {
        CU_ASSERT_PTR_NULL(ev->error);
    }
    CU_ASSERT(json_object_is_type(ev->object, json_type_object));
    s->count++;
    return s->stop_after && s->count >= s->stop_after;
}

/* A realistic stream: events of a ConfigMap, a bookmark, an empty line, CRLF. */
static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
    "\"metadata\":{\"name\":\"cache-config\",\"namespace\":\"default\",\"uid\":"
    "\"4d3a7c1e-1111-2222-3333-444455556666\",\"resourceVersion\":\"1001\","
    "\"labels\":{\"app.kubernetes.io/managed-by\":\"rdc\"}},\"data\":{\"redis.conf\":"
    "\"maxmemory 256mb\\nmaxmemory-policy allkeys-lru\\n\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
    "\"metadata\":{\"name\":\"cache-config\",\"namespace\":\"default\","
    "\"resourceVersion\":\"1002\"},\"data\":{\"k\":\"caf\xc3\xa9 \\u00e9 {}\\\"\"}}}\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
    "\"metadata\":{\"resourceVersion\":\"1500\",\"annotations\":"
    "{\"k8s.io/initial-events-end\":\"true\"}}}}\r\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
    "\"metadata\":{\"name\":\"cache-config\",\"namespace\":\"default\","
    "\"resourceVersion\":\"1600\"}}}\n";

static const char STREAM_EXPECT[] = "ADDED default/cache-config rv=1001|"
                                    "MODIFIED default/cache-config rv=1002|"
                                    "BOOKMARK -/- rv=1500|"
                                    "DELETED default/cache-config rv=1600|";

static void feed_all(watch_decoder_t *d, const char *s, size_t len, size_t chunk)
{
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        CU_ASSERT_EQUAL_FATAL(watch_decoder_feed(d, s + off, n), WATCH_OK);
    }
}

static void test_whole_stream(void)
{
    seen_t s = {0};
    watch_decoder_t *d = watch_decoder_new(0, record, &s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "");
    CU_ASSERT_EQUAL(watch_decoder_feed(d, STREAM, sizeof(STREAM) - 1), WATCH_OK);
    CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_OK);
    CU_ASSERT_STRING_EQUAL(s.log, STREAM_EXPECT);
    CU_ASSERT_EQUAL(watch_decoder_events(d), 4);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "1600");
    CU_ASSERT_PTR_NULL(watch_decoder_server_error(d));
    CU_ASSERT_STRING_EQUAL(watch_decoder_error(d), "");
    watch_decoder_destroy(&d);
    CU_ASSERT_PTR_NULL(d);
    watch_decoder_destroy(&d); /* NULL-safe */
}

/* A stream of len bytes that is fed, finishes cleanly and yields no event. */
static void assert_no_events(const char *stream, size_t len)
{
    seen_t s = {0};
    watch_decoder_t *d = watch_decoder_new(0, record, &s);
    CU_ASSERT_EQUAL(watch_decoder_feed(d, stream, len), WATCH_OK);
    CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_OK);
    CU_ASSERT_EQUAL(s.count, 0);
    watch_decoder_destroy(&d);
}

static void test_every_split_point(void)
{
    size_t len = sizeof(STREAM) - 1;
    /* Two chunks, cut at every byte boundary. */
    for (size_t cut = 0; cut <= len; cut++) {
        seen_t s = {0};
        watch_decoder_t *d = watch_decoder_new(0, record, &s);
        CU_ASSERT_EQUAL(watch_decoder_feed(d, STREAM, cut), WATCH_OK);
        CU_ASSERT_EQUAL(watch_decoder_feed(d, STREAM + cut, len - cut), WATCH_OK);
        CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_OK);
        if (strcmp(s.log, STREAM_EXPECT) != 0) {
            CU_FAIL("events differ when split");
            fprintf(stderr, "cut %zu: %s\n", cut, s.log);
        }
        watch_decoder_destroy(&d);
    }
    /* Fixed chunk sizes from one byte at a time upward. */
    for (size_t chunk = 1; chunk <= 64; chunk++) {
        seen_t s = {0};
        watch_decoder_t *d = watch_decoder_new(0, record, &s);
        feed_all(d, STREAM, len, chunk);
        CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_OK);
        CU_ASSERT_STRING_EQUAL(s.log, STREAM_EXPECT);
        CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "1600");
        watch_decoder_destroy(&d);
    }
    /* Empty feeds are harmless. */
    assert_no_events("", 0);
}

static void test_bookmark_updates_rv(void)
{
    seen_t s = {0};
    watch_decoder_t *d = watch_decoder_new(0, record, &s);
    CU_ASSERT_EQUAL(watch_decoder_set_last_rv(d, "900"), 0);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "900");
    const char *bm = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"RedisCluster\","
                     "\"apiVersion\":\"cache.example.com/v1alpha1\",\"metadata\":"
                     "{\"resourceVersion\":\"12345\"}}}\n";
    CU_ASSERT_EQUAL(watch_decoder_feed(d, bm, strlen(bm)), WATCH_OK);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "12345");
    CU_ASSERT_STRING_EQUAL(s.log, "BOOKMARK -/- rv=12345|");
    /* An event without a resourceVersion leaves it. */
    const char *norv = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n";
    CU_ASSERT_EQUAL(watch_decoder_feed(d, norv, strlen(norv)), WATCH_OK);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "12345");
    char big[400];
    memset(big, '7', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CU_ASSERT_EQUAL(watch_decoder_set_last_rv(d, big), -1);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "12345");
    watch_decoder_destroy(&d);
}

static void test_error_event_gone(void)
{
    seen_t s = {0};
    watch_decoder_t *d = watch_decoder_new(0, record, &s);
    const char *stream =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
        "\"resourceVersion\":\"5\"}}}\n"
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
        "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 5 "
        "(4711)\",\"reason\":\"Expired\",\"code\":410}}\n";
    CU_ASSERT_EQUAL(watch_decoder_feed(d, stream, strlen(stream)), WATCH_OK);
    CU_ASSERT_EQUAL(s.count, 2);
    CU_ASSERT_EQUAL(s.last_error, KERR_GONE);
    const kube_error_t *e = watch_decoder_server_error(d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT(kube_error_is_gone(e));
    CU_ASSERT_EQUAL(e->http_status, 410);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "too old resource version"));
    /* An ERROR does not move the resume point. */
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "5");
    CU_ASSERT_EQUAL(watch_decoder_status(d), WATCH_OK);
    /* A new stream forgets the error, keeps the rv. */
    watch_decoder_reset(d);
    CU_ASSERT_PTR_NULL(watch_decoder_server_error(d));
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "5");
    /* Other Status errors map as well. */
    const char *other = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":"
                        "\"Failure\",\"message\":\"internal error\",\"reason\":"
                        "\"InternalError\",\"code\":500}}\n";
    CU_ASSERT_EQUAL(watch_decoder_feed(d, other, strlen(other)), WATCH_OK);
    CU_ASSERT_EQUAL(s.last_error, KERR_INTERNAL);
    watch_decoder_destroy(&d);
}

static void test_oversized_event(void)
{
    seen_t s = {0};
    watch_decoder_t *d = watch_decoder_new(128, record, &s);
    const char *small = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n";
    CU_ASSERT_EQUAL(watch_decoder_feed(d, small, strlen(small)), WATCH_OK);
    char big[300];
    int n = snprintf(big, sizeof(big), "{\"type\":\"ADDED\",\"object\":{\"data\":\"%0200d\"}}\n", 0);
    /* Fed in pieces, the limit trips as soon as the pending line passes it, before the
     * newline arrives. */
    CU_ASSERT_EQUAL(watch_decoder_feed(d, big, 100), WATCH_OK);
    CU_ASSERT_EQUAL(watch_decoder_feed(d, big + 100, 100), WATCH_ERR_TOO_LONG);
    CU_ASSERT_PTR_NOT_NULL(strstr(watch_decoder_error(d), "watch event 2: line exceeds 128"));
    /* Sticky: nothing more is decoded. */
    CU_ASSERT_EQUAL(watch_decoder_feed(d, small, strlen(small)), WATCH_ERR_TOO_LONG);
    CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_ERR_TOO_LONG);
    CU_ASSERT_EQUAL(s.count, 1);
    /* In one piece as well. */
    watch_decoder_reset(d);
    CU_ASSERT_EQUAL(watch_decoder_feed(d, big, (size_t)n), WATCH_ERR_TOO_LONG);
    /* A line of exactly the limit is fine. */
    watch_decoder_t *d2 = watch_decoder_new(strlen(small) - 1, record, &s);
    CU_ASSERT_EQUAL(watch_decoder_feed(d2, small, strlen(small)), WATCH_OK);
    CU_ASSERT_EQUAL(s.count, 2);
    watch_decoder_destroy(&d2);
    watch_decoder_destroy(&d);
}

/* Feed line (split in the middle, to cover the gathered path too) to a fresh decoder
 * after one good event; return the status. */
static int bad_line(const char *line, char *msg, size_t msglen)
{
    seen_t s = {0};
    watch_decoder_t *d = watch_decoder_new(0, record, &s);
    const char *good = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok\"}}}\n";
    watch_decoder_feed(d, good, strlen(good));
    size_t half = strlen(line) / 2;
    int rc = watch_decoder_feed(d, line, half);
    if (rc == WATCH_OK)
        rc = watch_decoder_feed(d, line + half, strlen(line) - half);
    snprintf(msg, msglen, "%s", watch_decoder_error(d));
    CU_ASSERT_EQUAL(s.count, 1);
    watch_decoder_destroy(&d);
    return rc;
}

static void test_garbage_lines(void)
{
    char msg[512];
    CU_ASSERT_EQUAL(bad_line("garbage here\n", msg, sizeof(msg)), WATCH_ERR_SYNTAX);
    ASSERT_TEXT_HAS(msg, "watch event 2: not JSON", "garbage here");
    CU_ASSERT_EQUAL(bad_line("{\"type\":\"ADDED\",\"object\":{}\n", msg, sizeof(msg)),
                    WATCH_ERR_SYNTAX); /* unterminated object on its line */
    CU_ASSERT_EQUAL(bad_line("{\"type\":\"ADDED\",\"object\":{}} trailing\n", msg, sizeof(msg)),
                    WATCH_ERR_SYNTAX);
    CU_ASSERT_EQUAL(bad_line("{\"type\":\"ADDED\",\"object\":{}}{\"type\":\"ADDED\"}\n", msg,
                             sizeof(msg)),
                    WATCH_ERR_SYNTAX);
    CU_ASSERT_EQUAL(bad_line("[1,2,3]\n", msg, sizeof(msg)), WATCH_ERR_NOT_OBJECT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "array"));
    CU_ASSERT_EQUAL(bad_line("null\n", msg, sizeof(msg)), WATCH_ERR_NOT_OBJECT);
    CU_ASSERT_EQUAL(bad_line("42\n", msg, sizeof(msg)), WATCH_ERR_NOT_OBJECT);
    CU_ASSERT_EQUAL(bad_line("{\"object\":{\"metadata\":{\"name\":\"n\",\"namespace\":\"x\"}}}\n",
                             msg, sizeof(msg)),
                    WATCH_ERR_BAD_EVENT);
    /* The message names the object's key. */
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "(x/n): missing \"type\""));
    CU_ASSERT_EQUAL(bad_line("{\"type\":\"ADDED\"}\n", msg, sizeof(msg)), WATCH_ERR_BAD_EVENT);
    CU_ASSERT_EQUAL(bad_line("{\"type\":\"ADDED\",\"object\":\"str\"}\n", msg, sizeof(msg)),
                    WATCH_ERR_BAD_EVENT);
    CU_ASSERT_EQUAL(bad_line("{\"type\":\"EXPLODED\",\"object\":{}}\n", msg, sizeof(msg)),
                    WATCH_ERR_BAD_EVENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "unknown type \"EXPLODED\""));
    CU_ASSERT_EQUAL(bad_line("{\"type\":7,\"object\":{}}\n", msg, sizeof(msg)),
                    WATCH_ERR_BAD_EVENT);
    /* A NUL byte inside a line. */
    seen_t s = {0};
    watch_decoder_t *d = watch_decoder_new(0, record, &s);
    const char nul[] = "{\"type\":\"ADDED\",\0\"object\":{}}\n";
    CU_ASSERT_NOT_EQUAL(watch_decoder_feed(d, nul, sizeof(nul) - 1), WATCH_OK);
    CU_ASSERT_EQUAL(s.count, 0);
    watch_decoder_destroy(&d);
    /* Whitespace-only lines are skipped like empty ones. */
    assert_no_events("\n \r\n\t\n\n", 7);
}

static void test_truncated_final_line(void)
{
    seen_t s = {0};
    watch_decoder_t *d = watch_decoder_new(0, record, &s);
    size_t len = sizeof(STREAM) - 1;
    /* Cut the stream in the middle of the last event. */
    CU_ASSERT_EQUAL(watch_decoder_feed(d, STREAM, len - 20), WATCH_OK);
    CU_ASSERT_EQUAL(s.count, 3);
    CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_ERR_TRUNCATED);
    CU_ASSERT_PTR_NOT_NULL(strstr(watch_decoder_error(d), "stream ended inside the event"));
    CU_ASSERT_EQUAL(s.count, 3);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "1500");
    watch_decoder_destroy(&d);
    /* A complete last event that only lost its newline is delivered. */
    seen_t s2 = {0};
    d = watch_decoder_new(0, record, &s2);
    CU_ASSERT_EQUAL(watch_decoder_feed(d, STREAM, len - 1), WATCH_OK);
    CU_ASSERT_EQUAL(s2.count, 3);
    CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_OK);
    CU_ASSERT_STRING_EQUAL(s2.log, STREAM_EXPECT);
    watch_decoder_destroy(&d);
    /* Trailing garbage without newline is a syntax error, not truncation. */
    seen_t s3 = {0};
    d = watch_decoder_new(0, record, &s3);
    CU_ASSERT_EQUAL(watch_decoder_feed(d, "oops", 4), WATCH_OK);
    CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_ERR_SYNTAX);
    watch_decoder_destroy(&d);
}

static void test_callback_stops(void)
{
    seen_t s = {0};
    s.stop_after = 2;
    watch_decoder_t *d = watch_decoder_new(0, record, &s);
    CU_ASSERT_EQUAL(watch_decoder_feed(d, STREAM, sizeof(STREAM) - 1), WATCH_ERR_STOPPED);
    CU_ASSERT_EQUAL(s.count, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(watch_decoder_error(d), "MODIFIED default/cache-config"));
    CU_ASSERT_EQUAL(watch_decoder_feed(d, STREAM, sizeof(STREAM) - 1), WATCH_ERR_STOPPED);
    CU_ASSERT_EQUAL(s.count, 2);
    CU_ASSERT_STRING_EQUAL(watch_status_name(WATCH_ERR_STOPPED), "stopped");
    CU_ASSERT_STRING_EQUAL(watch_event_type_name(WATCH_BOOKMARK), "BOOKMARK");
    watch_decoder_destroy(&d);
}

/* Keep a reference past the callback: the object stays valid. */
static int keep(const watch_event_t *ev, void *user)
{
    json_object **slot = user;
    json_object_put(*slot);
    *slot = json_object_get(ev->object);
    return 0;
}

static void test_object_ownership(void)
{
    json_object *kept = NULL;
    watch_decoder_t *d = watch_decoder_new(0, keep, &kept);
    CU_ASSERT_EQUAL(watch_decoder_feed(d, STREAM, sizeof(STREAM) - 1), WATCH_OK);
    watch_decoder_destroy(&d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kept);
    json_object *meta;
    CU_ASSERT(json_object_object_get_ex(kept, "metadata", &meta));
    json_object_put(kept);
}

/* Many events in big chunks: linear work (a quadratic decoder would take long here). */
static void test_many_events(void)
{
    size_t n = 20000;
    size_t cap = n * 128;
    char *buf = malloc(cap);
    size_t off = 0;
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(buf + off, cap - off,
                                "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":"
                                "\"o%zu\",\"resourceVersion\":\"%zu\"}}}\n",
                                i, i + 1);
    seen_t s = {0};
    s.len = sizeof(s.log) - 1; /* do not log */
    watch_decoder_t *d = watch_decoder_new(4096, record, &s);
    feed_all(d, buf, off, 4093);
    CU_ASSERT_EQUAL(s.count, (int)n);
    char want[32];
    snprintf(want, sizeof(want), "%zu", n);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), want);
    watch_decoder_destroy(&d);
    free(buf);
}

static const cu_entry_t tests[] = {
    CU_SUITE("watch"),
    {"whole stream", test_whole_stream},
    {"split at every byte / one byte at a time", test_every_split_point},
    {"bookmark updates last rv", test_bookmark_updates_rv},
    {"ERROR 410 -> KERR_GONE", test_error_event_gone},
    {"oversized event", test_oversized_event},
    {"garbage lines", test_garbage_lines},
    {"truncated final line", test_truncated_final_line},
    {"callback stops", test_callback_stops},
    {"object ownership", test_object_ownership},
    {"many events, linear", test_many_events},
};

CU_MAIN(tests)
