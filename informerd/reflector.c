/* reflector: LIST and WATCH one kind into the cache. See reflector.h. */
#include "reflector.h"

#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "watch.h"

#include <curl/curl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RELIST_MIN_NS (INT64_C(800) * NS_PER_MS)  /* backoff of relists and rewatches */
#define RELIST_MAX_NS (INT64_C(30) * NS_PER_SEC)
#define ABSENT_RELIST_NS (INT64_C(300) * NS_PER_SEC) /* an optional kind not served or not allowed */
#define MAX_ERROR_BODY ((size_t)64 << 10)         /* kept of a refused watch's Status */
#define SHORT_WATCH_NS NS_PER_SEC                 /* a watch shorter than this did not serve */
#define MAX_EVENT_BYTES ((size_t)16 << 20)        /* one watch event at most */

/* One namespace ("" = all) of the kind: its LIST (pages in flight through the loop's curl
 * multi, never blocking the loop), then its WATCH stream. */
typedef struct {
    reflector_t *r;
    const char *ns;
    CURL *easy;                 /* the watch, or NULL */
    struct curl_slist *headers;
    watch_decoder_t *dec;
    int failed;                 /* an event was lost or refused: relist the kind */
    char why[1024];
    long status;                /* HTTP status of the watch response, 0 until known */
    buf_t errbody;              /* the body of a non-200 watch response (a Status) */
    int64_t started_ns;         /* when the current watch request was made */
    int64_t rewatch_ns;         /* resume the watch at this time; 0 = not pending */
    unsigned rewatch_failures;  /* resumes in a row that did not get a stream */
    kube_pager_t *pager;        /* the LIST in progress, or NULL */
    CURL *list_easy;            /* its page in flight, or NULL */
    int listed;                 /* this namespace's LIST is complete */
} stream_t;

struct reflector {
    reflector_kind_t k;
    reflector_config_t cfg;
    stream_t *streams;
    size_t nstreams;
    uint64_t rng;               /* jitter of the backoffs, the watches' random timeout */
    int synced;                 /* listed at least once */
    int need_relist;
    int listing;                /* a LIST is in progress */
    int64_t list_started_ns;
    int64_t next_list_ns;
    unsigned failures;          /* relists in a row that failed, for backoff */
    int optional;               /* not in the sync gate: reflector_set_optional */
    int absent;                 /* optional, and its last LIST was a 404 or 403 */
    int64_t last_event_wall_ns;
    char last_error[512];       /* why the last LIST or WATCH failed, "" when none did */
    metric_family_t *m_lists, *m_watches, *m_relists, *m_errors, *m_objects, *m_synced, *m_rv_age;
};

/* ---- metrics -------------------------------------------------------------------------- */

static void reflector_metrics(reflector_t *r)
{
    metrics_registry_t *reg = metrics_default();
    r->m_lists = metrics_counter(reg, "informer_list_total", "LIST requests per kind.", "kind");
    r->m_watches = metrics_counter(reg, "informer_watch_total", "WATCH streams started per kind.", "kind");
    r->m_relists = metrics_counter(reg, "informer_relists_total",
                                   "Relists after a broken or expired watch, per kind.", "kind");
    r->m_errors = metrics_counter(reg, "informer_errors_total", "List, watch and bad-object errors per kind.",
                                  "kind,reason");
    r->m_objects = metrics_gauge(reg, "informer_cache_objects", "Objects in the cache per kind.", "kind");
    r->m_rv_age = metrics_gauge(reg, "informer_last_event_age_seconds",
                                "Seconds since the last watch event (bookmarks included) per kind.", "kind");
    r->m_synced = metrics_gauge(reg, "informer_cache_synced",
                                "1 once the kind's first LIST completed (no work is dispatched before every kind "
                                "is synced), else 0.",
                                "kind");
}

/* An error of the kind, counted under reason (list, watch, bad_object). */
static void count_error(const reflector_t *r, const char *reason)
{
    metric_counter_add(r->m_errors, METRIC_LABELS(r->k.kind, reason), 1);
}

void reflector_update_metrics(const reflector_t *r, int64_t now_wall_ns)
{
    const char *kind = r->k.kind;
    metric_gauge_set(r->m_objects, METRIC_LABELS(kind), (double)cache_count(r->cfg.cache, kind));
    metric_gauge_set(r->m_synced, METRIC_LABELS(kind), r->synced ? 1 : 0);
    if (r->last_event_wall_ns)
        metric_gauge_set(r->m_rv_age, METRIC_LABELS(kind), (double)(now_wall_ns - r->last_event_wall_ns) / 1e9);
}

/* ---- streams ---------------------------------------------------------------------------- */

static void reflector_path(const reflector_t *r, const char *ns, buf_t *path)
{
    buf_reset(path);
    kube_path(path, r->k.group, r->k.version, ns && *ns ? ns : NULL, r->k.resource, NULL, NULL);
}

/* Set kind/apiVersion on list items (lists leave them out) so deltas are self-describing. */
static void stamp_items(const reflector_t *r, json_object *items)
{
    char gv[128];
    snprintf(gv, sizeof(gv), "%s%s%s", r->k.group, *r->k.group ? "/" : "", r->k.version);
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *o = json_object_array_get_idx(items, i);
        if (!json_object_is_type(o, json_type_object))
            continue;
        json_object_object_add(o, "kind", json_object_new_string(r->k.kind));
        json_object_object_add(o, "apiVersion", json_object_new_string(gv));
    }
}

static void stream_stop_list(stream_t *s)
{
    if (s->list_easy)
        loop_curl_remove(s->r->cfg.lc, s->list_easy);
    s->list_easy = NULL;
    kube_pager_destroy(&s->pager); /* frees the handle */
    s->listed = 0;
}

/* Stop s's LIST and WATCH transfers, if any. */
static void stream_stop(stream_t *s)
{
    stream_stop_list(s);
    if (s->easy) {
        loop_curl_remove(s->r->cfg.lc, s->easy);
        curl_easy_cleanup(s->easy);
        s->easy = NULL;
    }
    curl_slist_free_all(s->headers);
    s->headers = NULL;
    s->rewatch_ns = 0;
    buf_free(&s->errbody);
}

/* Stop every stream and relist after the kind's backoff. */
static void reflector_fail(reflector_t *r, const char *why, int64_t now)
{
    for (size_t i = 0; i < r->nstreams; i++)
        stream_stop(&r->streams[i]);
    snprintf(r->last_error, sizeof(r->last_error), "%s", why);
    r->listing = 0;
    r->need_relist = 1;
    int64_t d = backoff_exponential(RELIST_MIN_NS, RELIST_MAX_NS, r->failures);
    r->next_list_ns = now + backoff_jitter(d, 0.5, &r->rng);
    r->failures++;
    char delay[32];
    snprintf(delay, sizeof(delay), "%.1fs", (double)(r->next_list_ns - now) / 1e9);
    rlog_warn("relisting", "kind", r->k.kind, "reason", why, "after", delay);
}

/* An optional kind whose LIST the API server refused with 404 (its CRD is not installed)
 * or 403 (an older ClusterRole): said once at warn, then at debug, and listed again every
 * ABSENT_RELIST_NS (jittered) rather than at the failure backoff, which would say it
 * every 30 s for ever. Installing the CRD or the role takes effect within that period. */
static void reflector_absent(reflector_t *r, const char *why, int64_t now)
{
    for (size_t i = 0; i < r->nstreams; i++)
        stream_stop(&r->streams[i]);
    snprintf(r->last_error, sizeof(r->last_error), "%.*s", (int)sizeof(r->last_error) - 1, why);
    r->listing = 0;
    r->need_relist = 1;
    r->next_list_ns = now + backoff_jitter(ABSENT_RELIST_NS, 0.1, &r->rng);
    if (!r->absent)
        rlog_warn("kind not served or not allowed: listing it again every 5 minutes (not part of the sync gate)",
                  "kind", r->k.kind, "reason", why);
    else
        rlog_debug("kind still not served or not allowed", "kind", r->k.kind, "reason", why);
    r->absent = 1;
}

static size_t on_watch_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    stream_t *s = ud;
    size_t len = size * nmemb;
    if (s->failed)
        return 0; /* abort the transfer */
    if (s->status == 0)
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status != 200) {
        /* Refused (410 for a resourceVersion the server no longer has, 403, 429...): the
         * body is one Status, not events. Keep it for stream_done. */
        size_t room = MAX_ERROR_BODY - s->errbody.len;
        if (room)
            (void)buf_append(&s->errbody, ptr, len < room ? len : room); /* best effort */
        return len;
    }
    int st = watch_decoder_feed(s->dec, ptr, len);
    if (st != WATCH_OK) {
        /* The event handler may have said why already (an ERROR event, a bad object). */
        if (!s->failed)
            snprintf(s->why, sizeof(s->why), "%s", watch_decoder_error(s->dec));
        s->failed = 1;
        return 0;
    }
    return len;
}

/* The stream fails with why (an object the kind refuses): counted as a bad object. */
static int bad_object(stream_t *s, const char *why)
{
    count_error(s->r, "bad_object");
    snprintf(s->why, sizeof(s->why), "%s", why);
    s->failed = 1;
    return 1;
}

/* ADDED or MODIFIED: the object, in its cached form, to the cache. */
static int watch_upsert(stream_t *s, json_object *obj)
{
    reflector_t *r = s->r;
    char err[512], why[600];
    json_object_object_add(obj, "kind", json_object_new_string(r->k.kind));
    if (r->k.transform && r->k.transform(obj)) {
        snprintf(why, sizeof(why), "cannot reduce a %s to its cached form", r->k.kind);
        return bad_object(s, why);
    }
    cache_change_t ch;
    if (cache_upsert(r->cfg.cache, r->k.kind, obj, &ch, err, sizeof(err))) {
        snprintf(why, sizeof(why), "bad object in watch: %s", err);
        return bad_object(s, why);
    }
    return 0;
}

/* One decoded watch event: 0 to go on, 1 to stop the stream (s->failed says why). */
static int on_watch_event(const watch_event_t *ev, void *ud)
{
    stream_t *s = ud;
    reflector_t *r = s->r;
    r->last_event_wall_ns = clock_wall_ns();
    switch (ev->type) {
    case WATCH_BOOKMARK:
        return 0; /* the decoder remembers its resourceVersion */
    case WATCH_ERROR: {
        char line[512];
        snprintf(s->why, sizeof(s->why), "watch error: %s", kube_error_str(ev->error, line, sizeof(line)));
        s->failed = 1;
        return 1;
    }
    case WATCH_ADDED:
    case WATCH_MODIFIED:
        return watch_upsert(s, ev->object);
    case WATCH_DELETED: {
        char key[512], err[512];
        if (!ev->name)
            return bad_object(s, "DELETED event without metadata.name");
        snprintf(key, sizeof(key), "%s%s%s", ev->ns ? ev->ns : "", ev->ns ? "/" : "", ev->name);
        cache_change_t ch;
        cache_delete(r->cfg.cache, r->k.kind, key, &ch, err, sizeof(err));
        return 0;
    }
    }
    return 0;
}

static void on_watch_done(CURL *easy, CURLcode result, void *arg);

/* Make s's watch request from its last resourceVersion. Returns 0, or -1 with s->why set. */
static int stream_start(stream_t *s, int64_t now)
{
    reflector_t *r = s->r;
    buf_t path;
    buf_init(&path, 4096);
    reflector_path(r, s->ns, &path);
    kube_req_opts_t ro;
    memset(&ro, 0, sizeof(ro));
    ro.label_selector = r->k.selector;
    ro.metadata_only = r->k.metadata_only;
    ro.resource_version = watch_decoder_last_rv(s->dec);
    ro.allow_watch_bookmarks = 1;
    /* client-go: a random timeout between 5 and 10 minutes spreads the reconnects. */
    ro.timeout_seconds = r->cfg.watch_timeout_s > 0 ? (long)r->cfg.watch_timeout_s
                                                    : 300 + (long)(backoff_rng_unit(&r->rng) * 300);
    kube_error_t err;
    kube_error_clear(&err);
    s->easy = kube_client_watch_handle(r->cfg.client, buf_str(&path), &ro, &s->headers, &err);
    buf_free(&path);
    if (!s->easy) {
        char line[512];
        snprintf(s->why, sizeof(s->why), "%s", kube_error_str(&err, line, sizeof(line)));
        return -1;
    }
    watch_decoder_reset(s->dec);
    s->failed = 0;
    s->why[0] = '\0';
    s->status = 0;
    s->started_ns = now;
    s->rewatch_ns = 0;
    buf_free(&s->errbody);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_watch_data);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    if (loop_curl_add_cb(r->cfg.lc, s->easy, on_watch_done, s)) {
        snprintf(s->why, sizeof(s->why), "cannot add the WATCH transfer to the curl multi handle");
        return -1;
    }
    metric_counter_add(r->m_watches, METRIC_LABELS(r->k.kind), 1);
    return 0;
}

static void on_list_done(CURL *easy, CURLcode result, void *arg);

/* Start the next page of s's LIST. Returns 0, or -1 with s->why set. */
static int list_page_start(stream_t *s)
{
    kube_error_t err;
    CURL *h = kube_pager_start(s->pager, &err);
    if (!h) {
        char line[512];
        snprintf(s->why, sizeof(s->why), "%s", kube_error_str(&err, line, sizeof(line)));
        return -1;
    }
    if (loop_curl_add_cb(s->r->cfg.lc, h, on_list_done, s)) {
        snprintf(s->why, sizeof(s->why), "cannot add the LIST transfer to the curl multi handle");
        return -1;
    }
    s->list_easy = h;
    return 0;
}

/* LIST every namespace of the kind, all at once and page by page in the loop; list_done
 * replaces the cache's view and starts the watches when the last one completes. */
static void reflector_list(reflector_t *r, int64_t now)
{
    buf_t path;
    buf_init(&path, 4096);
    r->need_relist = 0;
    r->listing = 1;
    r->list_started_ns = now;
    char err[256];
    if (cache_relist_begin(r->cfg.cache, r->k.kind, err, sizeof(err))) {
        buf_free(&path);
        reflector_fail(r, err, now);
        return;
    }
    for (size_t i = 0; i < r->nstreams; i++) {
        stream_t *s = &r->streams[i];
        stream_stop(s);
        reflector_path(r, s->ns, &path);
        kube_req_opts_t ro;
        memset(&ro, 0, sizeof(ro));
        ro.label_selector = r->k.selector;
        ro.metadata_only = r->k.metadata_only;
        ro.limit = r->cfg.list_page_size;
        metric_counter_add(r->m_lists, METRIC_LABELS(r->k.kind), 1);
        s->pager = kube_pager_new(r->cfg.client, buf_str(&path), &ro);
        if (!s->pager)
            snprintf(s->why, sizeof(s->why), "out of memory starting a LIST");
        if (!s->pager || list_page_start(s)) {
            buf_free(&path);
            count_error(r, "list");
            reflector_fail(r, s->why, now);
            return;
        }
    }
    buf_free(&path);
}

/* Every namespace of r is listed: delete what the lists did not mention, hand the
 * transient memory of the pages back, and start the watches from the lists'
 * resourceVersions. */
static void reflector_listed(reflector_t *r, int64_t now)
{
    char err[512];
    if (cache_relist_end(r->cfg.cache, r->k.kind, err, sizeof(err))) {
        reflector_fail(r, err, now);
        return;
    }
    if (r->synced)
        metric_counter_add(r->m_relists, METRIC_LABELS(r->k.kind), 1);
    r->synced = 1;
    r->listing = 0;
    r->last_error[0] = '\0';
    if (r->absent)
        rlog_info("kind served again", "kind", r->k.kind);
    r->absent = 0;
    char count[32], took[32];
    snprintf(count, sizeof(count), "%zu", cache_count(r->cfg.cache, r->k.kind));
    snprintf(took, sizeof(took), "%.3fs", (double)(now - r->list_started_ns) / 1e9);
    rlog_info("listed", "kind", r->k.kind, "objects", count, "resourceVersion", kube_pager_rv(r->streams[0].pager),
              "took", took);
    for (size_t i = 0; i < r->nstreams; i++) {
        stream_t *s = &r->streams[i];
        watch_decoder_set_last_rv(s->dec, kube_pager_rv(s->pager));
        stream_stop_list(s);
        if (stream_start(s, now)) {
            reflector_fail(r, s->why, now);
            return;
        }
    }
#ifdef __GLIBC__
    /* The pages were parsed into trees and freed; glibc keeps freed heap mapped, which
     * would leave the process at its listing peak (measured: 124 MB PSS instead of 42 MB
     * after listing 1000 clusters). */
    malloc_trim(0);
#endif
}

/* The objects a page of one could not hold (only their metadata came) to the cache in
 * minimal form. Returns 0, or -1 with err set. */
static int list_take_skipped(reflector_t *r, json_object *skipped, char *err, size_t errlen)
{
    if (!json_object_array_length(skipped))
        return 0;
    char why[160];
    snprintf(why, sizeof(why), "object larger than the response cap (--max-response-bytes %zu): "
             "only its metadata was listed", r->cfg.max_response_bytes);
    stamp_items(r, skipped);
    return cache_relist_add_partial(r->cfg.cache, r->k.kind, skipped, why, err, errlen);
}

/* Hand the items of s's pages so far to the cache. Returns 0, or -1 with s->why set. */
static int list_take_page(stream_t *s)
{
    reflector_t *r = s->r;
    json_object *items = kube_pager_take_items(s->pager);
    char err[512];
    if (!items) {
        snprintf(s->why, sizeof(s->why), "out of memory taking LIST items");
        return -1;
    }
    stamp_items(r, items);
    for (size_t i = 0; r->k.transform && i < json_object_array_length(items); i++) {
        if (r->k.transform(json_object_array_get_idx(items, i))) {
            json_object_put(items);
            snprintf(s->why, sizeof(s->why), "cannot reduce a listed %s to its cached form", r->k.kind);
            return -1;
        }
    }
    int rc = cache_relist_add(r->cfg.cache, r->k.kind, items, err, sizeof(err));
    json_object_put(items);
    json_object *skipped = rc ? NULL : kube_pager_take_skipped(s->pager);
    if (!rc && !skipped) {
        snprintf(s->why, sizeof(s->why), "out of memory taking LIST items");
        return -1;
    }
    if (!rc)
        rc = list_take_skipped(r, skipped, err, sizeof(err));
    json_object_put(skipped);
    if (rc) {
        count_error(r, "bad_object");
        snprintf(s->why, sizeof(s->why), "%s", err);
    }
    return rc;
}

/* A LIST page of s ended: the next page, the end of this namespace's list, or a relist. */
static void on_list_done(CURL *easy, CURLcode code, void *arg)
{
    (void)easy;
    stream_t *s = arg;
    reflector_t *r = s->r;
    int64_t now = clock_mono_ns();
    if (!s->pager || !s->list_easy)
        return; /* stopped meanwhile (a sibling's failure): nothing of ours in flight */
    s->list_easy = NULL;
    kube_error_t err;
    kube_pager_state_t st = kube_pager_finish(s->pager, code, &err);
    if (st == KUBE_PAGER_ERROR) {
        char line[768];
        kube_error_str(&err, line, sizeof(line));
        count_error(r, "list");
        if (r->optional && (err.http_status == 404 || err.http_status == 403))
            reflector_absent(r, line, now);
        else
            reflector_fail(r, line, now);
        return;
    }
    if (list_take_page(s)) {
        reflector_fail(r, s->why, now);
        return;
    }
    if (st == KUBE_PAGER_MORE) {
        if (list_page_start(s)) {
            count_error(r, "list");
            reflector_fail(r, s->why, now);
        }
        return;
    }
    s->listed = 1;
    for (size_t i = 0; i < r->nstreams; i++)
        if (!r->streams[i].listed)
            return;
    reflector_listed(r, now);
}

/* Start s's watch again now; a failure to start relists the kind. */
static void stream_rewatch(stream_t *s, int64_t now)
{
    s->rewatch_ns = 0;
    if (stream_start(s, now))
        reflector_fail(s->r, s->why, now);
}

/* Resume s's watch from its last resourceVersion, at once (delay_ns 0) or later. No
 * relist: the cache is right up to that version, and a version the server no longer has
 * is answered with 410, which does relist. */
static void stream_resume(stream_t *s, const char *why, int64_t delay_ns, int64_t now)
{
    char delay[32];
    snprintf(delay, sizeof(delay), "%.1fs", (double)delay_ns / 1e9);
    rlog_warn("watch broke; resuming", "kind", s->r->k.kind, "reason", why, "resourceVersion",
              watch_decoder_last_rv(s->dec), "after", delay);
    if (delay_ns <= 0)
        stream_rewatch(s, now);
    else
        s->rewatch_ns = now + delay_ns;
}

/* Resume after the stream's backoff, and not before at_least_ns (a Retry-After). */
static void stream_rewatch_later(stream_t *s, const char *why, int64_t at_least_ns, int64_t now)
{
    int64_t d = backoff_exponential(RELIST_MIN_NS, RELIST_MAX_NS, s->rewatch_failures);
    d = backoff_jitter(d, 0.5, &s->r->rng);
    if (at_least_ns > RELIST_MAX_NS)
        at_least_ns = RELIST_MAX_NS;
    s->rewatch_failures++;
    stream_resume(s, why, d > at_least_ns ? d : at_least_ns, now);
}

/* The watch was refused (status not 200): a 429 or a retryable 5xx resumes after a
 * backoff; a 410 Gone or any other refusal relists. */
static void stream_refused(stream_t *s, long status, int64_t now)
{
    kube_error_t err;
    kube_error_clear(&err); /* from_response keeps a retry-after hint it finds in err */
    kube_error_from_response((int)status, buf_str(&s->errbody), s->errbody.len, &err);
    char line[768], why[1200];
    snprintf(why, sizeof(why), "watch refused: %s", kube_error_str(&err, line, sizeof(line)));
    int again = kube_error_is_too_many_requests(&err) || (kube_error_retryable(&err) && !kube_error_is_gone(&err));
    stream_stop(s);
    count_error(s->r, "watch");
    if (again) /* 429 "storage is (re)initializing" from a starting apiserver, 5xx */
        stream_rewatch_later(s, why, (int64_t)err.retry_after_s * NS_PER_SEC, now);
    else
        reflector_fail(s->r, why, now);
}

/* A watch transfer ended. As client-go's reflector: a stream the server ended, or one the
 * network broke, resumes from the last resourceVersion (at once if it had been serving,
 * after a backoff if it could not connect); a lost or malformed event, an ERROR event and
 * a refused watch (410 Gone above all) relist the kind. */
static void on_watch_done(CURL *easy, CURLcode code, void *arg)
{
    (void)easy;
    stream_t *s = arg;
    reflector_t *r = s->r;
    int64_t now = clock_mono_ns();
    long status = s->status;
    if (status == 0)
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
    int finish = watch_decoder_finish(s->dec);
    char why[1200];
    if (s->failed) {
        stream_stop(s);
        count_error(r, "watch");
        reflector_fail(r, s->why, now);
        return;
    }
    if (status != 0 && status != 200) {
        stream_refused(s, status, now);
        return;
    }
    /* client-go's "very short watch": a stream that ends within a second of its request
     * is not resumed at once, so a server or proxy that drops every watch cannot spin us. */
    int served = now - s->started_ns >= SHORT_WATCH_NS;
    if (code == CURLE_OK && finish == WATCH_OK && served) {
        /* The server's timeoutSeconds ended a healthy watch: resume where it stopped. */
        stream_stop(s);
        r->failures = 0;
        s->rewatch_failures = 0;
        stream_rewatch(s, now);
        return;
    }
    if (code != CURLE_OK)
        snprintf(why, sizeof(why), "watch stream broke: curl %d (%s)", (int)code, curl_easy_strerror(code));
    else if (finish != WATCH_OK)
        snprintf(why, sizeof(why), "watch stream cut short: %s", watch_decoder_error(s->dec));
    else
        snprintf(why, sizeof(why), "watch ended after %.3fs", (double)(now - s->started_ns) / 1e9);
    stream_stop(s);
    count_error(r, "watch");
    if (status == 200 && served) {
        /* It was serving: the events up to the break were whole (the decoder delivers
         * complete lines only), so go on from the last one at once. */
        r->failures = 0;
        s->rewatch_failures = 0;
        stream_resume(s, why, 0, now);
        return;
    }
    stream_rewatch_later(s, why, 0, now);
}

/* ---- the reflector ---------------------------------------------------------------------- */

reflector_t *reflector_new(const reflector_kind_t *kind, const reflector_config_t *cfg)
{
    reflector_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    const opt_strlist_t *nss = cfg->namespaces;
    r->k = *kind;
    r->cfg = *cfg;
    r->need_relist = 1;
    r->rng = backoff_rng_seed();
    r->nstreams = nss && nss->n ? nss->n : 1; /* a stream per namespace, or one for all */
    r->streams = calloc(r->nstreams, sizeof(*r->streams));
    if (!r->streams)
        goto fail;
    for (size_t i = 0; i < r->nstreams; i++) {
        stream_t *s = &r->streams[i];
        s->r = r;
        s->ns = nss && nss->n ? nss->items[i] : "";
        s->dec = watch_decoder_new(MAX_EVENT_BYTES, on_watch_event, s);
        buf_init(&s->errbody, MAX_ERROR_BODY);
        if (!s->dec)
            goto fail;
    }
    reflector_metrics(r);
    if (cache_add_kind(cfg->cache, kind->kind))
        goto fail;
    return r;
fail:
    reflector_destroy(&r);
    return NULL;
}

void reflector_step(reflector_t *r, int64_t now_ns)
{
    if (r->need_relist && now_ns >= r->next_list_ns) {
        reflector_list(r, clock_mono_ns());
        return;
    }
    for (size_t j = 0; j < r->nstreams && !r->need_relist; j++)
        if (r->streams[j].rewatch_ns && now_ns >= r->streams[j].rewatch_ns)
            stream_rewatch(&r->streams[j], clock_mono_ns());
}

int64_t reflector_next_deadline(const reflector_t *r)
{
    int64_t next = INT64_MAX;
    if (r->need_relist)
        next = r->next_list_ns;
    for (size_t j = 0; j < r->nstreams; j++)
        if (r->streams[j].rewatch_ns && r->streams[j].rewatch_ns < next)
            next = r->streams[j].rewatch_ns;
    return next;
}

syncgate_kind_t reflector_sync_state(const reflector_t *r)
{
    return (syncgate_kind_t){r->k.kind, r->synced, r->listing, r->last_error};
}

void reflector_set_optional(reflector_t *r, int optional)
{
    r->optional = optional;
}

const char *reflector_kind(const reflector_t *r)
{
    return r->k.kind;
}

void reflector_destroy(reflector_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    reflector_t *r = *self_p;
    for (size_t i = 0; r->streams && i < r->nstreams; i++) {
        stream_stop(&r->streams[i]);
        watch_decoder_destroy(&r->streams[i].dec);
    }
    free(r->streams);
    free(r);
    *self_p = NULL;
}
