#include "informer.h"

#include "backoff.h"
#include "buf.h"
#include "cache.h"
#include "clock.h"
#include "crashcond.h"
#include "daemon.h"
#include "event.h"
#include "jsonx.h"
#include "kube_async.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics.h"
#include "proto.h"
#include "rdc_api.h"
#include "syncgate.h"
#include "watch.h"
#include "workqueue.h"
#include "zmsg.h"

#include <curl/curl.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define OWNER_KIND "RedisCluster"
#define MANAGED_BY_SELECTOR "app.kubernetes.io/managed-by=rediscluster-operator"
#define MAX_NAMESPACES OPT_STRLIST_MAX
#define MAX_WORKERS 128
#define RELIST_MIN_NS (INT64_C(800) * NS_PER_MS)
#define RELIST_MAX_NS (INT64_C(30) * NS_PER_SEC)
#define MAX_ERROR_BODY ((size_t)64 << 10)
#define SHORT_WATCH_NS NS_PER_SEC
#define QUARANTINE_NS (INT64_C(3600) * NS_PER_SEC)
#define CRASHES_TO_QUARANTINE 3
#define MAX_EVENT_BYTES ((size_t)16 << 20)
#define TOO_LARGE_PENDING 256
#define TOO_LARGE_EVENTS_PER_TURN 4
#define EVENT_DEADLINE_NS (INT64_C(5) * NS_PER_SEC)

typedef struct informer informer_t;

/* What a curl handle's CURLOPT_PRIVATE points at: the first member of a stream_t (its
 * watch) or of its list_xfer_t (a LIST page). */
typedef enum { XFER_WATCH = 1, XFER_LIST, XFER_WRITE } xfer_kind_t;

struct stream;
typedef struct {
    xfer_kind_t xfer;           /* XFER_LIST */
    struct stream *s;
} list_xfer_t;

/* One kind in one namespace ("" = all): its LIST (pages in flight through the same curl
 * multi as the watches, never blocking the loop), then its WATCH stream. */
typedef struct stream {
    xfer_kind_t xfer;           /* XFER_WATCH */
    struct reflector *r;
    const char *ns;
    CURL *easy;
    struct curl_slist *headers;
    watch_decoder_t *dec;
    int active;
    int failed;                 /* an event was lost or refused: relist the kind */
    char why[1024];
    long status;                /* HTTP status of the watch response, 0 until known */
    buf_t errbody;              /* the body of a non-200 watch response (a Status) */
    int64_t started_ns;         /* when the current watch request was made */
    int64_t rewatch_ns;         /* resume the watch at this time; 0 = not pending */
    unsigned rewatch_failures;  /* resumes in a row that did not get a stream */
    list_xfer_t lx;
    kube_pager_t *pager;        /* the LIST in progress, or NULL */
    CURL *list_easy;            /* its page in flight, or NULL */
    int listed;                 /* this namespace's LIST is complete */
} stream_t;

/* Lists and watches one kind. */
typedef struct reflector {
    informer_t *inf;
    const char *kind, *group, *version, *resource, *selector;
    stream_t streams[MAX_NAMESPACES];
    size_t nstreams;
    int synced;                 /* listed at least once */
    int need_relist;
    int listing;                /* a LIST is in progress */
    int64_t list_started_ns;
    int64_t next_list_ns;
    unsigned failures;          /* relists in a row that failed, for backoff */
    int64_t last_event_wall_ns;
    char last_error[512];       /* why the last LIST or WATCH failed, "" when none did */
} reflector_t;

typedef struct {
    char id[64];                /* routing id, "w-<pid>" */
    size_t idlen;
    int idle;
    char key[512];              /* in-flight key, "" when idle */
    int64_t dispatched_ns;
    int64_t last_heard_ns;
} worker_slot_t;

/* A write informerd makes itself (an Event, the ReconcileCrashed condition), run by the
 * loop's curl multi so the loop never blocks on it; best effort: a failure is logged. */
typedef struct write_xfer {
    xfer_kind_t kind; /* XFER_WRITE: first, as CURLINFO_PRIVATE is read as an xfer_kind_t */
    informer_t *inf;
    kube_async_t *req;
    struct write_xfer *next, *prev;
    char what[64];    /* for the log: "Event ReconcileCrashed", "ReconcileCrashed condition" */
    char key[320];
    int clearing;     /* it turns the condition False: say so when it lands */
} write_xfer_t;

struct informer {
    const informer_config_t *cfg;
    cache_t *cache;
    workqueue_t *queue;
    reflector_t refl[4];
    size_t nrefl;
    CURLM *multi;
    loop_t *loop;
    loop_curl_t *lc;            /* drives multi on loop */
    write_xfer_t *writes;       /* writes in flight (a list) */
    char hostname[256];         /* reportingInstance of its Events */
    int exit_code;              /* what informer_run returns once the loop ends */
    void *zctx, *pub, *snapshot, *work, *leader_sub, *events_sub;
    worker_slot_t workers[MAX_WORKERS];
    size_t nworkers;
    int is_leader;
    int64_t epoch;
    int64_t valid_until_ms;
    int64_t next_resync_ns;
    int stopping;
    int64_t stop_deadline_ns;
    int ready_sent;             /* every reflector has synced once: dispatch may start */
    int64_t started_ns;
    uint64_t rng;
    /* Objects kept in minimal form (too large) waiting for their Warning Event, which
     * only the leader writes, after the caches synced: "kind\tkey" strings, a FIFO. */
    char *too_large[TOO_LARGE_PENDING];
    size_t too_large_head, too_large_n;
    metric_family_t *m_lists, *m_watches, *m_relists, *m_errors, *m_objects, *m_rv_age,
        *m_deltas, *m_quarantined, *m_skipped, *m_synced;
};

/* ---- deltas: publish, print, enqueue ---------------------------------------------- */

static void publish_delta(informer_t *inf, const char *frame0, uint64_t seq, const char *type,
                          const char *kind, const char *key, const char *rv,
                          const char *json, size_t json_len, void *sock)
{
    zmsg_t *m = zmsg_new();
    zmsg_addstr(m, frame0);
    zmsg_addf(m, "%llu", (unsigned long long)seq);
    if (type)
        zmsg_addstr(m, type);
    zmsg_addstr(m, kind);
    zmsg_addstr(m, key);
    zmsg_addstr(m, rv ? rv : "");
    zmsg_addmem(m, json, json_len);
    zmsg_send(&m, sock, ZMQ_DONTWAIT);
    (void)inf;
}

/* One JSON line: {"seq","type","kind","key","resourceVersion","object"}; the object is the
 * cache's text as is. */
static void tail_print(FILE *out, uint64_t seq, const char *type, const char *kind,
                       const char *key, const char *rv, const char *json)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "seq", json_object_new_int64((int64_t)seq));
    json_object_object_add(o, "type", json_object_new_string(type));
    json_object_object_add(o, "kind", json_object_new_string(kind));
    json_object_object_add(o, "key", json_object_new_string(key));
    json_object_object_add(o, "resourceVersion", json_object_new_string(rv ? rv : ""));
    const char *head = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    /* head ends with '}': splice the object in as the last member. */
    if (head && *head)
        fprintf(out, "%.*s,\"object\":%s}\n", (int)strlen(head) - 1, head, json);
    fflush(out);
    json_object_put(o);
}

/* ---- objects too large to keep whole ------------------------------------------------ */

/* The reason label of a minimal-form item: why it is not whole. */
static const char *too_large_reason(const cache_item_t *it)
{
    return it->truncated == 1 ? "response_cap" : "max_object_bytes";
}

/* A cache item was stored in its minimal form (cache.h): log it, count it, and queue
 * its Warning Event (written by the leader once the caches synced: too_large_report). */
static void too_large_noted(informer_t *inf, const cache_item_t *it)
{
    char bytes[32];
    snprintf(bytes, sizeof(bytes), "%zu", it->truncated);
    const char *reason = too_large_reason(it);
    metric_counter_add(inf->m_skipped, METRIC_LABELS(it->kind, reason), 1);
    rlog_warn("object too large: only its metadata is cached; its RedisCluster is not reconciled "
              "(deletion still is)", "kind", it->kind, "key", it->key, "resourceVersion",
              it->resource_version ? it->resource_version : "", "bytes", it->truncated == 1 ? "unknown" : bytes,
              "reason", reason);
    if (!inf->cfg->serve)
        return;
    if (inf->too_large_n == TOO_LARGE_PENDING) {
        rlog_warn("too many objects too large: no Event for this one", "kind", it->kind, "key", it->key);
        return;
    }
    size_t n = strlen(it->kind) + strlen(it->key) + 2;
    char *entry = malloc(n);
    if (!entry)
        return;
    snprintf(entry, n, "%s\t%s", it->kind, it->key);
    inf->too_large[(inf->too_large_head + inf->too_large_n++) % TOO_LARGE_PENDING] = entry;
}

/* The name of the cached object that makes key's RedisCluster impossible to reconcile
 * (itself or a child kept in minimal form), or NULL. A RedisCluster being deleted is
 * never held back: its finalizer only needs its metadata (plan.h, decision 2). */
static const cache_item_t *too_large_blocker(const informer_t *inf, const cache_item_t *rc)
{
    static const char *const kinds[] = {"ConfigMap", "Service", "StatefulSet"};
    if (rc->deleting)
        return NULL;
    if (rc->truncated)
        return rc;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const cache_item_t *ch = cache_lookup(inf->cache, kinds[i], rc->key);
        if (ch && ch->truncated)
            return ch;
    }
    return NULL;
}

static void too_large_event(informer_t *inf, const char *kind, const char *key);

/* Write the queued Warning Events, a few per turn, while this replica may write. */
static void too_large_report(informer_t *inf)
{
    for (int i = 0; i < TOO_LARGE_EVENTS_PER_TURN && inf->too_large_n; i++) {
        char *entry = inf->too_large[inf->too_large_head];
        inf->too_large_head = (inf->too_large_head + 1) % TOO_LARGE_PENDING;
        inf->too_large_n--;
        char *tab = strchr(entry, '\t');
        if (tab) {
            *tab = '\0';
            too_large_event(inf, entry, tab + 1);
        }
        free(entry);
    }
}

/* Every cache change: publish it, print it with --tail, and enqueue the key it concerns. */
static void on_delta(void *ud, const cache_delta_t *d)
{
    informer_t *inf = ud;
    const cache_item_t *it = d->item;
    const char *type = cache_change_name(d->type);
    metric_counter_add(inf->m_deltas, METRIC_LABELS(it->kind, type), 1);
    if (inf->pub)
        publish_delta(inf, PROTO_DELTA, d->seq, type, it->kind, it->key, it->resource_version,
                      it->json, it->json_len, inf->pub);
    if (inf->cfg->tail)
        tail_print(inf->cfg->tail, d->seq, type, it->kind, it->key, it->resource_version, it->json);

    if (it->truncated && (d->type == CACHE_ADDED || d->type == CACHE_MODIFIED))
        too_large_noted(inf, it);

    char key[512];
    int rc = cache_item_owner_key(inf->cache, it, key, sizeof(key));
    if (rc != 0 || !key[0])
        return;
    int64_t now = clock_mono_ns();
    if (strcmp(it->kind, OWNER_KIND) == 0) {
        if (d->type == CACHE_DELETED)
            return; /* gone for good: the finalizer already ran; children go with the GC */
        /* A new spec lifts a quarantine: the change may well be the fix. */
        if (d->type == CACHE_MODIFIED && d->old_generation != it->generation)
            workqueue_unquarantine(inf->queue, key);
        /* A quarantine recorded on the object by an earlier informerd (this one restarted,
         * or another replica led): hold the key back for the rest of its window rather
         * than let it crash workers again. */
        if (d->type == CACHE_ADDED && strstr(it->json, "\"" CRASHCOND_TYPE "\"") &&
            !workqueue_is_quarantined(inf->queue, key)) {
            json_object *rc_obj = json_tokener_parse(it->json);
            int64_t left = crashcond_quarantine_left_ns(rc_obj, clock_wall_ns(), QUARANTINE_NS);
            json_object_put(rc_obj);
            if (left > 0 && workqueue_quarantine(inf->queue, key, now + left) == 0) {
                char secs[32];
                snprintf(secs, sizeof(secs), "%lld", (long long)(left / NS_PER_SEC));
                rlog_warn("key quarantined by its ReconcileCrashed condition", "key", key, "seconds_left", secs);
            }
        }
    }
    workqueue_add(inf->queue, key, now);
}

/* ---- reflectors -------------------------------------------------------------------- */

static void reflector_path(const reflector_t *r, const char *ns, buf_t *path)
{
    buf_reset(path);
    kube_path(path, r->group, r->version, ns && *ns ? ns : NULL, r->resource, NULL, NULL);
}

/* Set kind/apiVersion on list items (lists leave them out) so deltas are self-describing. */
static void stamp_items(const reflector_t *r, json_object *items)
{
    char gv[128];
    snprintf(gv, sizeof(gv), "%s%s%s", r->group, *r->group ? "/" : "", r->version);
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *o = json_object_array_get_idx(items, i);
        if (!json_object_is_type(o, json_type_object))
            continue;
        json_object_object_add(o, "kind", json_object_new_string(r->kind));
        json_object_object_add(o, "apiVersion", json_object_new_string(gv));
    }
}

static void stream_stop_list(informer_t *inf, stream_t *s)
{
    if (s->list_easy)
        curl_multi_remove_handle(inf->multi, s->list_easy);
    s->list_easy = NULL;
    kube_pager_destroy(&s->pager); /* frees the handle */
    s->listed = 0;
}

static void stream_stop(informer_t *inf, stream_t *s)
{
    stream_stop_list(inf, s);
    if (s->easy) {
        curl_multi_remove_handle(inf->multi, s->easy);
        curl_easy_cleanup(s->easy);
        s->easy = NULL;
    }
    curl_slist_free_all(s->headers);
    s->headers = NULL;
    s->active = 0;
    s->rewatch_ns = 0;
    buf_free(&s->errbody);
}

static void reflector_fail(reflector_t *r, const char *why, int64_t now)
{
    informer_t *inf = r->inf;
    for (size_t i = 0; i < r->nstreams; i++)
        stream_stop(inf, &r->streams[i]);
    snprintf(r->last_error, sizeof(r->last_error), "%s", why);
    r->listing = 0;
    r->need_relist = 1;
    int64_t d = backoff_exponential(RELIST_MIN_NS, RELIST_MAX_NS, r->failures);
    r->next_list_ns = now + backoff_jitter(d, 0.5, &inf->rng);
    r->failures++;
    char delay[32];
    snprintf(delay, sizeof(delay), "%.1fs", (double)(r->next_list_ns - now) / 1e9);
    rlog_warn("relisting", "kind", r->kind, "reason", why, "after", delay);
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

static int on_watch_event(const watch_event_t *ev, void *ud)
{
    stream_t *s = ud;
    reflector_t *r = s->r;
    informer_t *inf = r->inf;
    char err[512];
    r->last_event_wall_ns = clock_wall_ns();
    switch (ev->type) {
    case WATCH_BOOKMARK:
        return 0; /* the decoder remembers its resourceVersion */
    case WATCH_ERROR: {
        char line[512];
        snprintf(s->why, sizeof(s->why), "watch error: %s",
                 kube_error_str(ev->error, line, sizeof(line)));
        s->failed = 1;
        return 1;
    }
    case WATCH_ADDED:
    case WATCH_MODIFIED: {
        json_object_object_add(ev->object, "kind", json_object_new_string(r->kind));
        cache_change_t ch;
        if (cache_upsert(inf->cache, r->kind, ev->object, &ch, err, sizeof(err))) {
            metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "bad_object"), 1);
            snprintf(s->why, sizeof(s->why), "bad object in watch: %s", err);
            s->failed = 1;
            return 1;
        }
        return 0;
    }
    case WATCH_DELETED: {
        char key[512];
        if (!ev->name) {
            metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "bad_object"), 1);
            snprintf(s->why, sizeof(s->why), "DELETED event without metadata.name");
            s->failed = 1;
            return 1;
        }
        snprintf(key, sizeof(key), "%s%s%s", ev->ns ? ev->ns : "", ev->ns ? "/" : "", ev->name);
        cache_change_t ch;
        cache_delete(inf->cache, r->kind, key, &ch, err, sizeof(err));
        return 0;
    }
    }
    return 0;
}

static int stream_start(reflector_t *r, stream_t *s, int64_t now)
{
    informer_t *inf = r->inf;
    buf_t path;
    buf_init(&path, 4096);
    reflector_path(r, s->ns, &path);
    kube_req_opts_t ro;
    memset(&ro, 0, sizeof(ro));
    ro.label_selector = r->selector;
    ro.resource_version = watch_decoder_last_rv(s->dec);
    ro.allow_watch_bookmarks = 1;
    /* client-go: a random timeout between 5 and 10 minutes spreads the reconnects. */
    ro.timeout_seconds = inf->cfg->watch_timeout_s > 0
                             ? (long)inf->cfg->watch_timeout_s
                             : 300 + (long)(backoff_rng_unit(&inf->rng) * 300);
    kube_error_t err;
    kube_error_clear(&err);
    s->easy = kube_client_watch_handle(inf->cfg->client, buf_str(&path), &ro, &s->headers, &err);
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
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
    curl_multi_add_handle(inf->multi, s->easy);
    s->active = 1;
    metric_counter_add(inf->m_watches, METRIC_LABELS(r->kind), 1);
    return 0;
}

/* Start the next page of s's LIST. Returns 0, or -1 with s->why set. */
static int list_page_start(informer_t *inf, stream_t *s)
{
    kube_error_t err;
    CURL *h = kube_pager_start(s->pager, &err);
    if (!h) {
        char line[512];
        snprintf(s->why, sizeof(s->why), "%s", kube_error_str(&err, line, sizeof(line)));
        return -1;
    }
    s->lx.xfer = XFER_LIST;
    s->lx.s = s;
    curl_easy_setopt(h, CURLOPT_PRIVATE, &s->lx);
    if (curl_multi_add_handle(inf->multi, h) != CURLM_OK) {
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
    informer_t *inf = r->inf;
    buf_t path;
    buf_init(&path, 4096);
    r->need_relist = 0;
    r->listing = 1;
    r->list_started_ns = now;
    char err[256];
    if (cache_relist_begin(inf->cache, r->kind, err, sizeof(err))) {
        buf_free(&path);
        reflector_fail(r, err, now);
        return;
    }
    for (size_t i = 0; i < r->nstreams; i++) {
        stream_t *s = &r->streams[i];
        stream_stop(inf, s);
        reflector_path(r, s->ns, &path);
        kube_req_opts_t ro;
        memset(&ro, 0, sizeof(ro));
        ro.label_selector = r->selector;
        ro.limit = inf->cfg->list_page_size > 0 ? inf->cfg->list_page_size : INFORMER_LIST_PAGE_DEFAULT;
        metric_counter_add(inf->m_lists, METRIC_LABELS(r->kind), 1);
        s->pager = kube_pager_new(inf->cfg->client, buf_str(&path), &ro);
        if (!s->pager)
            snprintf(s->why, sizeof(s->why), "out of memory starting a LIST");
        if (!s->pager || list_page_start(inf, s)) {
            buf_free(&path);
            metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "list"), 1);
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
    informer_t *inf = r->inf;
    char err[512];
    if (cache_relist_end(inf->cache, r->kind, err, sizeof(err))) {
        reflector_fail(r, err, now);
        return;
    }
    if (r->synced)
        metric_counter_add(inf->m_relists, METRIC_LABELS(r->kind), 1);
    r->synced = 1;
    r->listing = 0;
    r->last_error[0] = '\0';
    char count[32], took[32];
    snprintf(count, sizeof(count), "%zu", cache_count(inf->cache, r->kind));
    snprintf(took, sizeof(took), "%.3fs", (double)(now - r->list_started_ns) / 1e9);
    rlog_info("listed", "kind", r->kind, "objects", count, "resourceVersion", kube_pager_rv(r->streams[0].pager),
              "took", took);
    for (size_t i = 0; i < r->nstreams; i++) {
        stream_t *s = &r->streams[i];
        watch_decoder_set_last_rv(s->dec, kube_pager_rv(s->pager));
        stream_stop_list(inf, s);
        if (stream_start(r, s, now)) {
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

/* Hand the items of s's pages so far to the cache. Returns 0, or -1 with s->why set. */
static int list_take_page(reflector_t *r, stream_t *s)
{
    json_object *items = kube_pager_take_items(s->pager);
    char err[512];
    if (!items) {
        snprintf(s->why, sizeof(s->why), "out of memory taking LIST items");
        return -1;
    }
    stamp_items(r, items);
    int rc = cache_relist_add(r->inf->cache, r->kind, items, err, sizeof(err));
    json_object_put(items);
    json_object *skipped = rc ? NULL : kube_pager_take_skipped(s->pager);
    if (!rc && !skipped) {
        snprintf(s->why, sizeof(s->why), "out of memory taking LIST items");
        return -1;
    }
    if (!rc && json_object_array_length(skipped)) {
        /* Objects a page of one could not hold: only their metadata came. */
        char why[160];
        snprintf(why, sizeof(why), "object larger than the response cap (--max-response-bytes %zu): "
                 "only its metadata was listed", r->inf->cfg->max_response_bytes);
        stamp_items(r, skipped);
        rc = cache_relist_add_partial(r->inf->cache, r->kind, skipped, why, err, sizeof(err));
    }
    json_object_put(skipped);
    if (rc) {
        metric_counter_add(r->inf->m_errors, METRIC_LABELS(r->kind, "bad_object"), 1);
        snprintf(s->why, sizeof(s->why), "%s", err);
    }
    return rc;
}

/* A LIST page of s ended: the next page, the end of this namespace's list, or a relist. */
static void list_done(informer_t *inf, stream_t *s, CURLcode code, int64_t now)
{
    reflector_t *r = s->r;
    if (!s->pager || !s->list_easy)
        return; /* stopped meanwhile (a sibling's failure): nothing of ours in flight */
    curl_multi_remove_handle(inf->multi, s->list_easy);
    s->list_easy = NULL;
    kube_error_t err;
    kube_pager_state_t st = kube_pager_finish(s->pager, code, &err);
    if (st == KUBE_PAGER_ERROR) {
        char line[768];
        kube_error_str(&err, line, sizeof(line));
        metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "list"), 1);
        reflector_fail(r, line, now);
        return;
    }
    if (list_take_page(r, s)) {
        reflector_fail(r, s->why, now);
        return;
    }
    if (st == KUBE_PAGER_MORE) {
        if (list_page_start(inf, s)) {
            metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "list"), 1);
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

static void stream_rewatch(stream_t *s, int64_t now)
{
    s->rewatch_ns = 0;
    if (stream_start(s->r, s, now))
        reflector_fail(s->r, s->why, now);
}

/* Resume s's watch from its last resourceVersion, at once (delay_ns 0) or later. No
 * relist: the cache is right up to that version, and a version the server no longer has
 * is answered with 410, which does relist. */
static void stream_resume(stream_t *s, const char *why, int64_t delay_ns, int64_t now)
{
    char delay[32];
    snprintf(delay, sizeof(delay), "%.1fs", (double)delay_ns / 1e9);
    rlog_warn("watch broke; resuming", "kind", s->r->kind, "reason", why, "resourceVersion",
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
    d = backoff_jitter(d, 0.5, &s->r->inf->rng);
    if (at_least_ns > RELIST_MAX_NS)
        at_least_ns = RELIST_MAX_NS;
    s->rewatch_failures++;
    stream_resume(s, why, d > at_least_ns ? d : at_least_ns, now);
}

/* A watch transfer ended. As client-go's reflector: a stream the server ended, or one the
 * network broke, resumes from the last resourceVersion (at once if it had been serving,
 * after a backoff if it could not connect); a lost or malformed event, an ERROR event and
 * a refused watch (410 Gone above all) relist the kind. */
static void stream_done(informer_t *inf, stream_t *s, CURLcode code, int64_t now)
{
    reflector_t *r = s->r;
    long status = s->status;
    if (status == 0)
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
    int finish = watch_decoder_finish(s->dec);
    char why[1200];
    if (s->failed) {
        stream_stop(inf, s);
        metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "watch"), 1);
        reflector_fail(r, s->why, now);
        return;
    }
    if (status != 0 && status != 200) {
        kube_error_t err;
        kube_error_from_response((int)status, buf_str(&s->errbody), s->errbody.len, &err);
        char line[768];
        snprintf(why, sizeof(why), "watch refused: %s", kube_error_str(&err, line, sizeof(line)));
        int again = kube_error_is_too_many_requests(&err) ||
                    (kube_error_retryable(&err) && !kube_error_is_gone(&err));
        stream_stop(inf, s);
        metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "watch"), 1);
        if (again) /* 429 "storage is (re)initializing" from a starting apiserver, 5xx */
            stream_rewatch_later(s, why, (int64_t)err.retry_after_s * NS_PER_SEC, now);
        else
            reflector_fail(r, why, now);
        return;
    }
    /* client-go's "very short watch": a stream that ends within a second of its request
     * is not resumed at once, so a server or proxy that drops every watch cannot spin us. */
    int served = now - s->started_ns >= SHORT_WATCH_NS;
    if (code == CURLE_OK && finish == WATCH_OK && served) {
        /* The server's timeoutSeconds ended a healthy watch: resume where it stopped. */
        stream_stop(inf, s);
        r->failures = 0;
        s->rewatch_failures = 0;
        stream_rewatch(s, now);
        return;
    }
    if (code != CURLE_OK)
        snprintf(why, sizeof(why), "watch stream broke: curl %d (%s)", (int)code,
                 curl_easy_strerror(code));
    else if (finish != WATCH_OK)
        snprintf(why, sizeof(why), "watch stream cut short: %s", watch_decoder_error(s->dec));
    else
        snprintf(why, sizeof(why), "watch ended after %.3fs", (double)(now - s->started_ns) / 1e9);
    stream_stop(inf, s);
    metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "watch"), 1);
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

/* ---- curl multi on the loop (loop_curl) --------------------------------------------- */

/* A LIST page or a watch stream ended: hand it to its owner. */
static void on_transfer_done(CURL *easy, CURLcode result, void *arg)
{
    informer_t *inf = arg;
    xfer_kind_t *x = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
    int64_t now = clock_mono_ns();
    if (x && *x == XFER_WATCH) {
        stream_done(inf, (stream_t *)x, result, now);
    } else if (x && *x == XFER_LIST) {
        list_done(inf, ((list_xfer_t *)x)->s, result, now);
    } else if (x && *x == XFER_WRITE) {
        write_xfer_t *w = (write_xfer_t *)x;
        if (w->prev)
            w->prev->next = w->next;
        else
            inf->writes = w->next;
        if (w->next)
            w->next->prev = w->prev;
        kube_async_finish(&w->req, result); /* calls on_write_done */
        free(w);
    }
}

static void on_write_done(const kube_error_t *err, long status, void *arg)
{
    (void)status;
    write_xfer_t *w = arg;
    char line[512];
    if (err->code != KERR_OK)
        rlog_warn("cannot write", "what", w->what, "key", w->key, "error",
                  kube_error_str(err, line, sizeof(line)));
    else if (w->clearing)
        rlog_info("ReconcileCrashed condition cleared: the reconcile completed", "key", w->key);
}

/* Start a write on the loop, fenced by the leadership's validity and bounded by
 * EVENT_DEADLINE_NS. Failures to start are logged; returns nothing (best effort). */
static void informer_write(informer_t *inf, const char *what, const char *key, const char *method,
                           const char *path, const char *content_type, const char *body,
                           int clearing)
{
    int64_t deadline = clock_mono_ns() + EVENT_DEADLINE_NS;
    if (inf->cfg->opts->leader_elect && inf->valid_until_ms * NS_PER_MS < deadline)
        deadline = inf->valid_until_ms * NS_PER_MS;
    write_xfer_t *w = calloc(1, sizeof(*w));
    kube_error_t err;
    kube_error_clear(&err);
    char line[512];
    if (!w) {
        rlog_warn("cannot write: out of memory", "what", what, "key", key);
        return;
    }
    w->kind = XFER_WRITE;
    w->inf = inf;
    w->clearing = clearing;
    snprintf(w->what, sizeof(w->what), "%s", what);
    snprintf(w->key, sizeof(w->key), "%s", key);
    w->req = kube_async_new(inf->cfg->client, method, path, content_type, body, strlen(body),
                            deadline, on_write_done, w, &err);
    if (!w->req) {
        rlog_warn("cannot write", "what", what, "key", key, "error", kube_error_str(&err, line, sizeof(line)));
        free(w);
        return;
    }
    CURL *h = kube_async_handle(w->req);
    curl_easy_setopt(h, CURLOPT_PRIVATE, (char *)w);
    if (loop_curl_add(inf->lc, h)) {
        rlog_warn("cannot write: curl refused the transfer", "what", what, "key", key);
        kube_async_destroy(&w->req);
        free(w);
        return;
    }
    w->next = inf->writes;
    if (inf->writes)
        inf->writes->prev = w;
    inf->writes = w;
}

/* Record an Event about obj (kind overrides obj's own when given). */
static void informer_event(informer_t *inf, const char *key, const json_object *obj, const char *kind,
                           const char *action, const char *type, const char *reason, const char *message)
{
    event_spec_t spec = {0};
    event_involve(&spec, obj);
    if (kind)
        spec.kind = kind;
    spec.type = type;
    spec.reason = reason;
    spec.message = message;
    spec.action = action;
    spec.instance = inf->hostname;
    json_object *ev = event_build(&spec, clock_wall_ns());
    if (!ev) {
        rlog_warn("cannot build the event", "reason", reason, "key", key);
        return;
    }
    buf_t path;
    buf_init(&path, 4096);
    kube_path(&path, "", "v1", spec.ns, "events", NULL, NULL);
    char what[64];
    snprintf(what, sizeof(what), "Event %s", reason);
    informer_write(inf, what, key, "POST", buf_str(&path), "application/json",
                   json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN), 0);
    buf_free(&path);
    json_object_put(ev);
}

/* ---- workers ------------------------------------------------------------------------ */

static worker_slot_t *worker_find(informer_t *inf, const char *id, size_t len)
{
    for (size_t i = 0; i < inf->nworkers; i++) {
        if (inf->workers[i].idlen == len && memcmp(inf->workers[i].id, id, len) == 0)
            return &inf->workers[i];
    }
    return NULL;
}

static void worker_forget(informer_t *inf, worker_slot_t *w)
{
    *w = inf->workers[--inf->nworkers];
}

static void quarantine_report(informer_t *inf, const char *key);

/* The worker died or went silent with an item: requeue it and count a crash. */
static void worker_lost(informer_t *inf, worker_slot_t *w, const char *why, int64_t now)
{
    if (w->key[0]) {
        workqueue_abandon(inf->queue, w->key, now);
        unsigned crashes = workqueue_crash_count(inf->queue, w->key);
        char n[16];
        snprintf(n, sizeof(n), "%u", crashes);
        rlog_warn("worker lost with an item in flight; requeued", "worker", w->id, "key",
                  w->key, "reason", why, "crashes", n);
        if (crashes >= CRASHES_TO_QUARANTINE) {
            workqueue_quarantine(inf->queue, w->key, now + QUARANTINE_NS);
            metric_counter_add(inf->m_quarantined, NULL, 1);
            quarantine_report(inf, w->key);
        }
    }
    worker_forget(inf, w);
}

static void send_work(informer_t *inf, worker_slot_t *w, const char *key, int64_t now)
{
    /* dispatch() checked that the owner is cached. The children go as one JSON object
     * {"ConfigMap":...,"Service":...,"StatefulSet":...} spliced from the cache's text. */
    const cache_item_t *rc = cache_lookup(inf->cache, OWNER_KIND, key);
    static const char *const kinds[] = {"ConfigMap", "Service", "StatefulSet"};
    buf_t children;
    buf_init(&children, 0);
    if (cache_children_json(inf->cache, key, kinds, 3, &children)) {
        /* Out of memory: the key waits and comes back, it is not lost. */
        buf_free(&children);
        rlog_error("cannot build the work item; retrying later", "key", key);
        workqueue_done(inf->queue, key, now);
        workqueue_add_rate_limited(inf->queue, key, now);
        return;
    }
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, w->id, w->idlen);
    zmsg_addstr(m, PROTO_WORK);
    zmsg_addstr(m, key);
    zmsg_addf(m, "%lld", (long long)inf->epoch);
    zmsg_addf(m, "%lld", (long long)(rc ? rc->generation : 0));
    zmsg_addmem(m, rc ? rc->json : "null", rc ? rc->json_len : 4);
    zmsg_addmem(m, buf_str(&children), children.len);
    buf_free(&children);
    if (zmsg_send(&m, inf->work, ZMQ_DONTWAIT)) {
        /* The worker is gone (ROUTER_MANDATORY): give the key back untouched. */
        workqueue_done(inf->queue, key, now);
        workqueue_add(inf->queue, key, now);
        worker_forget(inf, w);
        return;
    }
    snprintf(w->key, sizeof(w->key), "%s", key);
    w->idle = 0;
    w->dispatched_ns = now;
}

static int may_dispatch(const informer_t *inf)
{
    if (inf->stopping)
        return 0;
    if (!inf->cfg->opts->leader_elect)
        return 1;
    return inf->is_leader && clock_mono_ns() / NS_PER_MS < inf->valid_until_ms;
}

static void dispatch(informer_t *inf, int64_t now)
{
    if (!may_dispatch(inf))
        return;
    for (size_t i = 0; i < inf->nworkers; i++) {
        worker_slot_t *w = &inf->workers[i];
        if (!w->idle)
            continue;
        const char *key;
        for (;;) {
            key = workqueue_get(inf->queue, now);
            if (!key)
                return;
            const cache_item_t *rc = cache_lookup(inf->cache, OWNER_KIND, key);
            const cache_item_t *big = rc ? too_large_blocker(inf, rc) : NULL;
            if (rc && !big)
                break;
            /* Deleted meanwhile: nothing to reconcile. Or it, or a child, is kept in
             * minimal form: a worker would take the missing spec or data for a change to
             * make. It waits for a smaller object (a delta) or its deletion. */
            if (big)
                rlog_info("not reconciled: an object is too large (see its Warning Event)", "key", key,
                          "kind", big->kind, "object", big->key);
            workqueue_forget(inf->queue, key);
            workqueue_done(inf->queue, key, now);
        }
        char k[512];
        snprintf(k, sizeof(k), "%s", key);
        send_work(inf, w, k, now);
    }
}

static void crashcond_clear(informer_t *inf, const char *key);

static void handle_done(informer_t *inf, worker_slot_t *w, zmsg_t *m, int64_t now)
{
    char *key = zmsg_strdup(m, 1);
    char *result = zmsg_strdup(m, 2);
    int64_t after_ms = 0;
    zmsg_frame_int64(m, 3, &after_ms);
    if (!key || !result || strcmp(key, w->key) != 0) {
        /* A confused peer: hand its real item back rather than leave it "processing". */
        rlog_warn("DONE for a key the worker was not given; its item is requeued", "worker",
                  w->id, "key", w->key);
        if (w->key[0]) {
            workqueue_done(inf->queue, w->key, now);
            workqueue_add(inf->queue, w->key, now);
        }
        goto out;
    }
    workqueue_done(inf->queue, key, now);
    /* The reconcile ran to its end without crashing the worker: a quarantine recorded on
     * the object is over. */
    crashcond_clear(inf, key);
    if (strcmp(result, "done") == 0) {
        workqueue_forget(inf->queue, key);
    } else if (strcmp(result, "requeue_after") == 0) {
        workqueue_forget(inf->queue, key);
        workqueue_add_after(inf->queue, key, after_ms * NS_PER_MS, now);
    } else if (strcmp(result, "fenced") == 0) {
        workqueue_add(inf->queue, key, now);
    } else {
        /* error or conflict: back off per key (client-go's AddRateLimited). */
        workqueue_add_rate_limited(inf->queue, key, now);
    }
out:
    w->key[0] = '\0';
    w->idle = 1;
    free(key);
    free(result);
}

static void handle_work_socket(informer_t *inf, int64_t now)
{
    zmsg_t *m;
    while ((m = zmsg_recv(inf->work, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 1 << 20)) != NULL) {
        size_t idlen = 0;
        const char *id = zmsg_frame(m, 0, &idlen);
        worker_slot_t *w = worker_find(inf, id, idlen);
        if (!w && idlen < sizeof(w->id) && inf->nworkers < MAX_WORKERS) {
            w = &inf->workers[inf->nworkers++];
            memset(w, 0, sizeof(*w));
            memcpy(w->id, id, idlen);
            w->idlen = idlen;
            w->idle = 1;
        }
        if (!w) {
            zmsg_destroy(&m);
            continue;
        }
        w->last_heard_ns = now;
        if (zmsg_frame_is(m, 1, PROTO_READY)) {
            if (w->key[0]) /* it restarted its link while holding an item */
                worker_lost(inf, w, "reconnected", now);
            else
                w->idle = 1;
        } else if (zmsg_frame_is(m, 1, PROTO_DONE)) {
            zmsg_t *body = zmsg_pop_frame_msg(m);
            zmsg_destroy(&body);
            handle_done(inf, w, m, now);
        } else if (!zmsg_frame_is(m, 1, PROTO_HEARTBEAT)) {
            rlog_warn("unknown message on the work socket; dropped", "worker", w->id);
        }
        zmsg_destroy(&m);
    }
}

static void heartbeat_workers(informer_t *inf, int64_t now)
{
    for (size_t i = 0; i < inf->nworkers;) {
        worker_slot_t *w = &inf->workers[i];
        int64_t silent = now - w->last_heard_ns;
        int64_t limit = w->key[0] ? (int64_t)(inf->cfg->reconcile_timeout_s * 1e9)
                                  : (int64_t)PROTO_LIVENESS * PROTO_HEARTBEAT_MS * NS_PER_MS;
        if (silent > limit) {
            worker_lost(inf, w, w->key[0] ? "reconcile timed out" : "silent", now);
            continue; /* the slot now holds another worker */
        }
        /* Busy workers too: a worker measures our silence in wall time, and a reconcile
         * longer than its liveness window would otherwise make it drop the link (and its
         * DONE) and report READY again, which counts as a crash of the key. */
        zmsg_t *m = zmsg_new();
        zmsg_addmem(m, w->id, w->idlen);
        zmsg_addstr(m, PROTO_HEARTBEAT);
        zmsg_send(&m, inf->work, ZMQ_DONTWAIT);
        i++;
    }
}

/* The supervisor says a child exited: a worker's item comes back at once. */
static void handle_events(informer_t *inf, int64_t now)
{
    zmsg_t *m;
    while ((m = zmsg_recv(inf->events_sub, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096)) != NULL) {
        int64_t pid = 0, sig = 0;
        if (zmsg_frame_is(m, 0, PROTO_EXITED) && zmsg_frame_int64(m, 2, &pid) == 0 &&
            zmsg_frame_int64(m, 3, &sig) == 0) {
            char id[64];
            int len = snprintf(id, sizeof(id), "w-%lld", (long long)pid);
            worker_slot_t *w = worker_find(inf, id, (size_t)len);
            int64_t code = -1;
            zmsg_frame_int64(m, 4, &code);
            if (w && sig == 0 && code == 0) {
                /* A clean exit (a worker retired by `ctl workers`, or stopping) is no
                 * crash: an item it never got to goes back without counting against
                 * its key. */
                if (w->key[0]) {
                    workqueue_done(inf->queue, w->key, now);
                    workqueue_add(inf->queue, w->key, now);
                }
                worker_forget(inf, w);
            } else if (w) {
                char why[64];
                snprintf(why, sizeof(why), sig ? "killed by signal %lld" : "exited",
                         (long long)sig);
                worker_lost(inf, w, why, now);
            }
        }
        zmsg_destroy(&m);
    }
}

static void handle_leader(informer_t *inf)
{
    zmsg_t *m;
    while ((m = zmsg_recv(inf->leader_sub, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096)) != NULL) {
        int64_t is_leader, epoch, valid;
        if (zmsg_frame_is(m, 0, PROTO_LEADER) && zmsg_frame_int64(m, 1, &is_leader) == 0 &&
            zmsg_frame_int64(m, 4, &epoch) == 0 && zmsg_frame_int64(m, 5, &valid) == 0) {
            if ((is_leader != 0) != inf->is_leader)
                rlog_info(is_leader ? "leading: dispatching work" : "not leading: work waits");
            inf->is_leader = is_leader != 0;
            inf->epoch = epoch;
            inf->valid_until_ms = valid;
        }
        zmsg_destroy(&m);
    }
}

/* ---- quarantine report ---------------------------------------------------------------- */

/* Set the ReconcileCrashed condition (crashcond.h) on the cached RedisCluster of key by
 * server-side apply under a field manager of its own, so the worker's status writes and
 * this condition do not overwrite each other. Fenced like the workers' writes. Failures
 * are logged, not retried (the condition only reports; the quarantine is in memory). */
static void crashcond_write(informer_t *inf, const char *key, const json_object *rc, int crashed, const char *msg)
{
    const char *name = JSONX_STR_AT(rc, "metadata", "name");
    const char *ns = JSONX_STR_AT(rc, "metadata", "namespace");
    if (!name || !ns)
        return;
    char *body = crashcond_apply_body(rc, crashed, msg, clock_wall_ns());
    if (!body) {
        rlog_warn("cannot build the ReconcileCrashed condition", "key", key);
        return;
    }
    buf_t path;
    buf_init(&path, 0);
    kube_path(&path, RDC_API_GROUP, RDC_API_VERSION, ns, "redisclusters", name, "status");
    buf_puts(&path, "?fieldManager=" CRASHCOND_FIELD_MANAGER "&force=true");
    informer_write(inf, crashed ? "ReconcileCrashed condition True" : "ReconcileCrashed condition False",
                   key, "PATCH", buf_str(&path), "application/apply-patch+yaml", body, !crashed);
    buf_free(&path);
    free(body);
}

/* After a reconcile of key that did not crash: turn a True ReconcileCrashed condition
 * False. */
static void crashcond_clear(informer_t *inf, const char *key)
{
    const char *text = cache_get_json(inf->cache, OWNER_KIND, key);
    /* Parse only the rare object that names the condition at all. */
    if (!text || !strstr(text, "\"" CRASHCOND_TYPE "\"") || !may_dispatch(inf))
        return;
    json_object *rc = json_tokener_parse(text);
    if (crashcond_is_true(rc, NULL, NULL))
        crashcond_write(inf, key, rc, 0, "the reconcile completed without crashing the worker");
    json_object_put(rc);
}

/* Tell the user on the object itself: a Warning Event and a ReconcileCrashed condition.
 * Both are written on the loop (no wait here); failures are logged, not retried. */
static void quarantine_report(informer_t *inf, const char *key)
{
    rlog_error("key quarantined: it crashed workers repeatedly", "key", key);
    if (!may_dispatch(inf))
        return;
    json_object *rc = cache_get_parsed(inf->cache, OWNER_KIND, key);
    if (!rc)
        return;
    char msg[512];
    snprintf(msg, sizeof(msg),
             "reconcile crashed the worker %d times in a row; retried after 1h or when the spec changes",
             CRASHES_TO_QUARANTINE);
    informer_event(inf, key, rc, OWNER_KIND, "Quarantine", "Warning", "ReconcileCrashed", msg);
    crashcond_write(inf, key, rc, 1, msg);
    json_object_put(rc);
}

/* The Warning Event ObjectTooLarge on the object of kind at key, if it is still cached in
 * minimal form; written on the loop, failures logged (the log line and the metric
 * already said it). */
static void too_large_event(informer_t *inf, const char *kind, const char *key)
{
    const cache_item_t *it = cache_lookup(inf->cache, kind, key);
    if (!it || !it->truncated)
        return;
    json_object *o = json_tokener_parse(it->json);
    const char *name = JSONX_STR_AT(o, "metadata", "name"), *ns = JSONX_STR_AT(o, "metadata", "namespace");
    const char *why = JSONX_STR_AT(o, "metadata", "annotations", CACHE_TRUNCATED_ANNOTATION);
    if (name && ns) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s %s/%s: %s; %s", kind, ns, name, why ? why : "too large",
                 strcmp(kind, OWNER_KIND) == 0 ? "it is not reconciled until it is smaller, but it can be deleted"
                                               : "the RedisCluster it belongs to is not reconciled until it is smaller");
        informer_event(inf, key, o, kind, "Cache", "Warning", "ObjectTooLarge", msg);
    }
    json_object_put(o);
}

/* ---- snapshots (Clone pattern) ------------------------------------------------------- */

typedef struct {
    informer_t *inf;
    zmsg_t *id;
    uint64_t seq;
} snap_ctx_t;

static int snap_visit(void *ud, const cache_item_t *it)
{
    snap_ctx_t *sc = ud;
    zmsg_t *m = zmsg_new();
    size_t idlen;
    const char *id = zmsg_frame(sc->id, 0, &idlen);
    zmsg_addmem(m, id, idlen);
    zmsg_addstr(m, PROTO_SNAP);
    zmsg_addf(m, "%llu", (unsigned long long)sc->seq);
    zmsg_addstr(m, it->kind);
    zmsg_addstr(m, it->key);
    zmsg_addstr(m, it->resource_version ? it->resource_version : "");
    zmsg_addmem(m, it->json, it->json_len);
    zmsg_send(&m, sc->inf->snapshot, 0);
    return 0;
}

static void handle_snapshot(informer_t *inf)
{
    zmsg_t *m;
    while ((m = zmsg_recv(inf->snapshot, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096)) != NULL) {
        zmsg_t *id = zmsg_pop_frame_msg(m);
        if (id && zmsg_frame_is(m, 0, PROTO_ICANHAZ)) {
            snap_ctx_t sc = {inf, id, cache_seq(inf->cache)};
            for (size_t i = 0; i < inf->nrefl; i++)
                cache_snapshot(inf->cache, inf->refl[i].kind, snap_visit, &sc);
            zmsg_t *end = zmsg_new();
            size_t idlen;
            const char *idb = zmsg_frame(id, 0, &idlen);
            zmsg_addmem(end, idb, idlen);
            zmsg_addstr(end, PROTO_KTHXBAI);
            zmsg_addf(end, "%llu", (unsigned long long)sc.seq);
            zmsg_send(&end, inf->snapshot, 0);
        }
        zmsg_destroy(&id);
        zmsg_destroy(&m);
    }
}

/* ---- metrics ------------------------------------------------------------------------- */

static void update_metrics(informer_t *inf, int64_t now)
{
    int64_t wall = clock_wall_ns();
    for (size_t i = 0; i < inf->nrefl; i++) {
        reflector_t *r = &inf->refl[i];
        metric_gauge_set(inf->m_objects, METRIC_LABELS(r->kind), (double)cache_count(inf->cache, r->kind));
        metric_gauge_set(inf->m_synced, METRIC_LABELS(r->kind), r->synced ? 1 : 0);
        if (r->last_event_wall_ns)
            metric_gauge_set(inf->m_rv_age, METRIC_LABELS(r->kind),
                             (double)(wall - r->last_event_wall_ns) / 1e9);
    }
    workqueue_update_metrics(inf->queue, now);
    daemon_publish_metrics(inf->cfg->runtime_dir, inf->cfg->name);
}

/* ---- setup and loop ------------------------------------------------------------------ */

static void *bind_socket(informer_t *inf, int type, const char *name)
{
    char ep[4200];
    daemon_endpoint(inf->cfg->runtime_dir, name, ep, sizeof(ep));
    void *s = zmq_socket(inf->zctx, type);
    int linger = 0, one = 1;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    if (type == ZMQ_ROUTER)
        zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
    if (zmq_bind(s, ep)) {
        rlog_error("cannot bind", "endpoint", ep, "error", zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    return s;
}

static void *connect_sub(informer_t *inf, const char *name, const char *topic)
{
    char ep[4200];
    daemon_endpoint(inf->cfg->runtime_dir, name, ep, sizeof(ep));
    void *s = zmq_socket(inf->zctx, ZMQ_SUB);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_setsockopt(s, ZMQ_SUBSCRIBE, topic, strlen(topic));
    zmq_connect(s, ep);
    return s;
}

static void reflector_init(informer_t *inf, const char *kind, const char *group,
                           const char *version, const char *resource, const char *selector)
{
    reflector_t *r = &inf->refl[inf->nrefl++];
    memset(r, 0, sizeof(*r));
    r->inf = inf;
    r->kind = kind;
    r->group = group;
    r->version = version;
    r->resource = resource;
    r->selector = selector;
    r->need_relist = 1;
    const opt_strlist_t *nss = &inf->cfg->opts->namespaces;
    r->nstreams = nss->n ? nss->n : 1;
    for (size_t i = 0; i < r->nstreams; i++) {
        stream_t *s = &r->streams[i];
        s->xfer = XFER_WATCH;
        s->r = r;
        s->ns = nss->n ? nss->items[i] : "";
        s->dec = watch_decoder_new(MAX_EVENT_BYTES, on_watch_event, s);
        buf_init(&s->errbody, MAX_ERROR_BODY);
    }
    cache_add_kind(inf->cache, kind);
}

static int informer_setup(informer_t *inf)
{
    inf->rng = backoff_rng_seed();
    gethostname(inf->hostname, sizeof(inf->hostname) - 1);
    inf->cache = cache_new(OWNER_KIND);
    inf->queue = workqueue_new("rediscluster", metrics_default());
    if (!inf->cache || !inf->queue)
        return -1;
    cache_set_max_object_bytes(inf->cache, inf->cfg->max_object_bytes);
    cache_set_delta_handler(inf->cache, on_delta, inf);
    reflector_init(inf, OWNER_KIND, RDC_API_GROUP, RDC_API_VERSION, "redisclusters", NULL);
    reflector_init(inf, "ConfigMap", "", "v1", "configmaps", MANAGED_BY_SELECTOR);
    reflector_init(inf, "Service", "", "v1", "services", MANAGED_BY_SELECTOR);
    reflector_init(inf, "StatefulSet", "apps", "v1", "statefulsets", MANAGED_BY_SELECTOR);
    inf->multi = curl_multi_init();
    inf->loop = loop_new();
    if (!inf->multi || !inf->loop)
        return -1;
    inf->lc = loop_curl_new(inf->loop, inf->multi, on_transfer_done, inf);
    if (!inf->lc)
        return -1;
    metrics_registry_t *reg = metrics_default();
    inf->m_lists = metrics_counter(reg, "informer_list_total", "LIST requests per kind.", "kind");
    inf->m_watches = metrics_counter(reg, "informer_watch_total", "WATCH streams started per kind.", "kind");
    inf->m_relists = metrics_counter(reg, "informer_relists_total",
                                     "Relists after a broken or expired watch, per kind.", "kind");
    inf->m_errors = metrics_counter(reg, "informer_errors_total",
                                    "List, watch and bad-object errors per kind.", "kind,reason");
    inf->m_objects = metrics_gauge(reg, "informer_cache_objects", "Objects in the cache per kind.", "kind");
    inf->m_rv_age = metrics_gauge(reg, "informer_last_event_age_seconds",
                                  "Seconds since the last watch event (bookmarks included) per kind.", "kind");
    inf->m_deltas = metrics_counter(reg, "informer_deltas_total", "Cache deltas per kind and type.", "kind,type");
    inf->m_quarantined = metrics_counter(reg, "informer_quarantined_keys_total",
                                         "Keys quarantined after crashing workers repeatedly.", "");
    inf->m_skipped = metrics_counter(reg, "informer_objects_skipped_total",
                                     "Objects too large to cache whole (kept as metadata only), per kind and "
                                     "reason (max_object_bytes, response_cap).", "kind,reason");
    inf->m_synced = metrics_gauge(reg, "informer_cache_synced",
                                  "1 once the kind's first LIST completed (no work is dispatched before every "
                                  "kind is synced), else 0.", "kind");
    inf->zctx = zmq_ctx_new();
    if (inf->cfg->serve) {
        inf->pub = bind_socket(inf, ZMQ_PUB, PROTO_EP_DELTAS);
        inf->snapshot = bind_socket(inf, ZMQ_ROUTER, PROTO_EP_SNAPSHOT);
        inf->work = bind_socket(inf, ZMQ_ROUTER, PROTO_EP_WORK);
        if (!inf->pub || !inf->snapshot || !inf->work)
            return -1;
        if (inf->cfg->opts->leader_elect)
            inf->leader_sub = connect_sub(inf, PROTO_EP_LEADER, PROTO_LEADER);
        inf->events_sub = connect_sub(inf, PROTO_EP_EVENTS, PROTO_EXITED);
    }
    int64_t now = clock_mono_ns();
    inf->started_ns = now;
    inf->next_resync_ns = now + (int64_t)(inf->cfg->opts->sync_period * 1e9);
    return 0;
}

static void informer_teardown(informer_t *inf)
{
    for (size_t i = 0; i < inf->nrefl; i++) {
        for (size_t k = 0; k < inf->refl[i].nstreams; k++) {
            stream_stop(inf, &inf->refl[i].streams[k]);
            watch_decoder_destroy(&inf->refl[i].streams[k].dec);
        }
    }
    while (inf->writes) {
        write_xfer_t *w = inf->writes;
        inf->writes = w->next;
        curl_multi_remove_handle(inf->multi, kube_async_handle(w->req));
        kube_async_destroy(&w->req);
        free(w);
    }
    loop_curl_destroy(&inf->lc);
    if (inf->multi)
        curl_multi_cleanup(inf->multi);
    loop_destroy(&inf->loop);
    void *socks[] = {inf->pub, inf->snapshot, inf->work, inf->leader_sub, inf->events_sub};
    for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++) {
        if (socks[i])
            zmq_close(socks[i]);
    }
    if (inf->zctx)
        zmq_ctx_term(inf->zctx);
    workqueue_destroy(&inf->queue);
    cache_destroy(&inf->cache);
    for (; inf->too_large_n; inf->too_large_n--, inf->too_large_head = (inf->too_large_head + 1) % TOO_LARGE_PENDING)
        free(inf->too_large[inf->too_large_head]);
}

/* The sync gate (syncgate.h) over the reflectors. */
static syncgate_state_t sync_state(const informer_t *inf, int64_t now, buf_t *names, buf_t *why)
{
    syncgate_kind_t kinds[4];
    for (size_t i = 0; i < inf->nrefl; i++) {
        const reflector_t *r = &inf->refl[i];
        kinds[i] = (syncgate_kind_t){r->kind, r->synced, r->listing, r->last_error};
    }
    return syncgate_check(kinds, inf->nrefl, inf->started_ns, now,
                          (int64_t)(inf->cfg->cache_sync_timeout_s * 1e9), names, why);
}

static int in_flight(const informer_t *inf)
{
    for (size_t i = 0; i < inf->nworkers; i++) {
        if (inf->workers[i].key[0])
            return 1;
    }
    return 0;
}

/* Lower *wait to the next deadline the informer itself keeps: the queue's delayed adds,
 * relists and rewatches, the drain deadline. (curl's timer is a loop timer of its own.) */
static void next_deadline(const informer_t *inf, int64_t now, int64_t *wait)
{
    int64_t next = now + *wait;
    int64_t q = workqueue_next_deadline(inf->queue, now);
    if (q > 0 && q < next)
        next = q;
    for (size_t i = 0; i < inf->nrefl; i++) {
        const reflector_t *r = &inf->refl[i];
        if (r->need_relist && r->next_list_ns < next)
            next = r->next_list_ns;
        for (size_t j = 0; j < r->nstreams; j++)
            if (r->streams[j].rewatch_ns && r->streams[j].rewatch_ns < next)
                next = r->streams[j].rewatch_ns;
    }
    if (inf->stopping && inf->stop_deadline_ns < next)
        next = inf->stop_deadline_ns;
    *wait = next > now ? next - now : 0;
}

/* Relists and rewatches that are due. */
static void reflectors_step(informer_t *inf, int64_t now)
{
    for (size_t i = 0; i < inf->nrefl && !inf->stopping; i++) {
        reflector_t *r = &inf->refl[i];
        if (r->need_relist && now >= r->next_list_ns) {
            reflector_list(r, clock_mono_ns());
            continue;
        }
        for (size_t j = 0; j < r->nstreams && !r->need_relist; j++)
            if (r->streams[j].rewatch_ns && now >= r->streams[j].rewatch_ns)
                stream_rewatch(&r->streams[j], clock_mono_ns());
    }
}

/* The sync gate: readiness once every kind listed; exit (-1) at the timeout. */
static int sync_step(informer_t *inf, int64_t now)
{
    syncgate_state_t gate = inf->ready_sent ? SYNCGATE_OPEN : sync_state(inf, now, NULL, NULL);
    if (!inf->ready_sent && gate == SYNCGATE_OPEN) {
        char took[32];
        snprintf(took, sizeof(took), "%.3fs", (double)(clock_mono_ns() - inf->started_ns) / 1e9);
        inf->ready_sent = 1;
        rlog_info("caches synced", "took", took);
        update_metrics(inf, now); /* informer_cache_synced at once, not at the next round */
        daemon_notify_ready();
    } else if (gate == SYNCGATE_TIMED_OUT) {
        /* controller-runtime's CacheSyncTimeout: the manager fails, and so do we; the
         * supervisor restarts us with its backoff and reports us not ready meanwhile. */
        buf_t kinds, why;
        buf_init(&kinds, 1024);
        buf_init(&why, 4096);
        sync_state(inf, now, &kinds, &why);
        char after[32];
        snprintf(after, sizeof(after), "%.0fs", inf->cfg->cache_sync_timeout_s);
        rlog_error("timed out waiting for caches to sync; exiting", "kinds", buf_str(&kinds), "reason",
                   buf_str(&why), "after", after);
        buf_free(&kinds);
        buf_free(&why);
        update_metrics(inf, now);
        inf->exit_code = 1;
        return -1;
    }
    return 0;
}

/* Every turn: relists and rewatches, the sync gate, the periodic resync, the queue's
 * delayed adds, dispatch, and the end of a drain. */
static int on_turn(loop_t *loop, int64_t now, int64_t *wait, void *arg)
{
    informer_t *inf = arg;
    reflectors_step(inf, now);
    if (sync_step(inf, now))
        return -1;
    now = clock_mono_ns();
    if (inf->ready_sent && now >= inf->next_resync_ns) {
        /* The periodic resync: every RedisCluster goes through the queue again. */
        cache_resync(inf->cache, OWNER_KIND);
        inf->next_resync_ns = now + (int64_t)(inf->cfg->opts->sync_period * 1e9);
    }
    workqueue_advance(inf->queue, now);
    /* No work before every cache synced (controller-runtime starts its workers only
     * then): a child on a page not yet listed would look absent to a worker. */
    if (inf->work && inf->ready_sent) {
        dispatch(inf, now);
        if (inf->too_large_n && may_dispatch(inf))
            too_large_report(inf);
    }
    if (inf->stopping && (!in_flight(inf) || now >= inf->stop_deadline_ns))
        loop_stop(loop);
    if (inf->ready_sent && inf->next_resync_ns - now < *wait)
        *wait = inf->next_resync_ns > now ? inf->next_resync_ns - now : 0;
    next_deadline(inf, now, wait);
    return 0;
}

/* SIGTERM/SIGINT: stop dispatching and drain; a second one ends the drain at once. */
static int on_signal(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)revents;
    informer_t *inf = arg;
    int64_t now = clock_mono_ns();
    int sig;
    while ((sig = daemon_read_signal(fd)) != 0) {
        if ((sig == SIGTERM || sig == SIGINT) && !inf->stopping) {
            rlog_info("stopping: no new work; waiting for in-flight items");
            inf->stopping = 1;
            inf->stop_deadline_ns = now + (int64_t)(inf->cfg->opts->graceful_shutdown_timeout * 1e9);
        } else if (sig == SIGTERM || sig == SIGINT) {
            inf->stop_deadline_ns = now;
        }
    }
    return 0;
}

static int on_work(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    handle_work_socket(arg, clock_mono_ns());
    return 0;
}

static int on_snapshot(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    handle_snapshot(arg);
    return 0;
}

static int on_events(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    handle_events(arg, clock_mono_ns());
    return 0;
}

static int on_leader(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    handle_leader(arg);
    return 0;
}

/* Every heartbeat period: the workers' liveness and HUGZ on the delta stream. */
static int on_hugz(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    informer_t *inf = arg;
    heartbeat_workers(inf, clock_mono_ns());
    zmsg_t *h = zmsg_new();
    zmsg_addstr(h, PROTO_HUGZ);
    zmsg_addf(h, "%llu", (unsigned long long)cache_seq(inf->cache));
    zmsg_send(&h, inf->pub, ZMQ_DONTWAIT);
    return 0;
}

static int on_metrics(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    update_metrics(arg, clock_mono_ns());
    return 0;
}

/* Register every handler. 0, or -1 when out of memory. */
static int informer_handlers(informer_t *inf)
{
    loop_t *l = inf->loop;
    const int64_t beat = PROTO_HEARTBEAT_MS * NS_PER_MS;
    if (loop_add_prepare(l, on_turn, inf) ||
        loop_add_fd(l, inf->cfg->signal_fd, LOOP_IN, on_signal, inf) ||
        loop_add_timer(l, 0, PROTO_METRICS_EVERY_MS * NS_PER_MS, on_metrics, inf) < 0)
        return -1;
    if (inf->leader_sub && loop_add_socket(l, inf->leader_sub, LOOP_IN, on_leader, inf))
        return -1;
    if (!inf->work)
        return 0;
    if (loop_add_socket(l, inf->events_sub, LOOP_IN, on_events, inf) ||
        loop_add_socket(l, inf->work, LOOP_IN, on_work, inf) ||
        loop_add_socket(l, inf->snapshot, LOOP_IN, on_snapshot, inf) ||
        loop_add_timer(l, 0, beat, on_hugz, inf) < 0)
        return -1;
    return 0;
}

int informer_run(const informer_config_t *cfg)
{
    informer_t *inf = calloc(1, sizeof(*inf));
    if (!inf)
        return 1;
    inf->cfg = cfg;
    if (informer_setup(inf) || informer_handlers(inf)) {
        rlog_error("cannot start the informer");
        inf->exit_code = 1;
        goto out;
    }
    if (loop_run(inf->loop, PROTO_HEARTBEAT_MS * NS_PER_MS) && !inf->exit_code) {
        rlog_error("event loop failed", "error", loop_error(inf->loop));
        inf->exit_code = 1;
    }
    rlog_info("informer stopped");
out:;
    int code = inf->exit_code;
    informer_teardown(inf);
    free(inf);
    return code;
}
