#include "informer.h"

#include "backoff.h"
#include "buf.h"
#include "cache.h"
#include "clock.h"
#include "crashcond.h"
#include "daemon.h"
#include "jsonx.h"
#include "log.h"
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
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define OWNER_KIND "RedisCluster"
#define MANAGED_BY_SELECTOR "app.kubernetes.io/managed-by=rediscluster-operator"
#define MAX_NAMESPACES OPT_STRLIST_MAX
#define MAX_SOCKETS 64
#define MAX_WORKERS 128
#define RELIST_MIN_NS (INT64_C(800) * NS_PER_MS)
#define RELIST_MAX_NS (INT64_C(30) * NS_PER_SEC)
#define MAX_ERROR_BODY ((size_t)64 << 10)
#define SHORT_WATCH_NS NS_PER_SEC
#define METRICS_EVERY_NS (INT64_C(2) * NS_PER_SEC)
#define QUARANTINE_NS (INT64_C(3600) * NS_PER_SEC)
#define CRASHES_TO_QUARANTINE 3
#define MAX_EVENT_BYTES ((size_t)16 << 20)
#define TOO_LARGE_PENDING 256
#define TOO_LARGE_EVENTS_PER_TURN 4
#define EVENT_DEADLINE_NS (INT64_C(5) * NS_PER_SEC)

typedef struct informer informer_t;

/* What a curl handle's CURLOPT_PRIVATE points at: the first member of a stream_t (its
 * watch) or of its list_xfer_t (a LIST page). */
typedef enum { XFER_WATCH = 1, XFER_LIST } xfer_kind_t;

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

struct informer {
    const informer_config_t *cfg;
    cache_t *cache;
    workqueue_t *queue;
    reflector_t refl[4];
    size_t nrefl;
    CURLM *multi;
    struct pollfd curl_fds[MAX_SOCKETS];
    int ncurl_fds;
    int64_t curl_timer_ns;      /* -1 = none */
    void *zctx, *pub, *snapshot, *work, *leader_sub, *events_sub;
    worker_slot_t workers[MAX_WORKERS];
    size_t nworkers;
    int is_leader;
    int64_t epoch;
    int64_t valid_until_ms;
    int64_t next_resync_ns;
    int64_t next_metrics_ns;
    int64_t next_hugz_ns;
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

/* ---- curl multi inside our loop ----------------------------------------------------- */

static int curl_socket_cb(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp)
{
    (void)easy;
    (void)sockp;
    informer_t *inf = ud;
    int i;
    for (i = 0; i < inf->ncurl_fds && inf->curl_fds[i].fd != fd; i++)
        ;
    if (what == CURL_POLL_REMOVE) {
        if (i < inf->ncurl_fds)
            inf->curl_fds[i] = inf->curl_fds[--inf->ncurl_fds];
        return 0;
    }
    if (i == inf->ncurl_fds) {
        if (inf->ncurl_fds == MAX_SOCKETS)
            return -1;
        inf->ncurl_fds++;
    }
    inf->curl_fds[i].fd = fd;
    inf->curl_fds[i].events = (short)(((what & CURL_POLL_IN) ? POLLIN : 0) |
                                      ((what & CURL_POLL_OUT) ? POLLOUT : 0));
    return 0;
}

static int curl_timer_cb(CURLM *multi, long timeout_ms, void *ud)
{
    (void)multi;
    informer_t *inf = ud;
    inf->curl_timer_ns = timeout_ms < 0 ? -1 : clock_mono_ns() + (int64_t)timeout_ms * NS_PER_MS;
    return 0;
}

static void curl_collect(informer_t *inf, int64_t now)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(inf->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        xfer_kind_t *x = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        if (x && *x == XFER_WATCH)
            stream_done(inf, (stream_t *)x, msg->data.result, now);
        else if (x && *x == XFER_LIST)
            list_done(inf, ((list_xfer_t *)x)->s, msg->data.result, now);
    }
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
    const json_object *md = jsonx_get(rc, "metadata");
    const char *name = NULL, *ns = NULL;
    if (jsonx_string(md, "name", &name) != JSONX_OK || jsonx_string(md, "namespace", &ns) != JSONX_OK)
        return;
    char *body = crashcond_apply_body(rc, crashed, msg, clock_wall_ns());
    if (!body) {
        rlog_warn("cannot build the ReconcileCrashed condition", "key", key);
        return;
    }
    if (inf->cfg->opts->leader_elect)
        kube_client_set_deadline(inf->cfg->client, inf->valid_until_ms * NS_PER_MS);
    buf_t path;
    buf_init(&path, 0);
    kube_path(&path, RDC_API_GROUP, RDC_API_VERSION, ns, "redisclusters", name, "status");
    buf_puts(&path, "?fieldManager=" CRASHCOND_FIELD_MANAGER "&force=true");
    kube_error_t err;
    kube_error_clear(&err);
    char line[512];
    if (kube_client_request(inf->cfg->client, "PATCH", buf_str(&path), NULL, "application/apply-patch+yaml",
                            body, strlen(body), 1, NULL, &err))
        rlog_warn("cannot set the ReconcileCrashed condition", "key", key, "status", crashed ? "True" : "False",
                  "error", kube_error_str(&err, line, sizeof(line)));
    else if (!crashed)
        rlog_info("ReconcileCrashed condition cleared: the reconcile completed", "key", key);
    kube_client_set_deadline(inf->cfg->client, 0);
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
 * Failures are logged, not retried. */
static void quarantine_report(informer_t *inf, const char *key)
{
    json_object *rc = cache_get_parsed(inf->cache, OWNER_KIND, key);
    json_object *md = NULL, *v = NULL;
    if (!rc || !json_object_object_get_ex(rc, "metadata", &md)) {
        json_object_put(rc);
        return;
    }
    const char *name = json_object_object_get_ex(md, "name", &v) ? json_object_get_string(v) : "";
    const char *ns = json_object_object_get_ex(md, "namespace", &v) ? json_object_get_string(v) : "";
    const char *uid = json_object_object_get_ex(md, "uid", &v) ? json_object_get_string(v) : "";
    rlog_error("key quarantined: it crashed workers repeatedly", "key", key);
    if (!may_dispatch(inf)) {
        json_object_put(rc);
        return;
    }
    /* Fenced like the workers' writes: nothing lands after our leadership's validity. */
    if (inf->cfg->opts->leader_elect)
        kube_client_set_deadline(inf->cfg->client, inf->valid_until_ms * NS_PER_MS);
    char msg[512], now[40], line[512];
    snprintf(msg, sizeof(msg),
             "reconcile crashed the worker %d times in a row; retried after 1h or when the spec changes",
             CRASHES_TO_QUARANTINE);
    clock_format_rfc3339(clock_wall_ns(), 0, now, sizeof(now));
    char body[2048];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"generateName\":\"%s.\","
             "\"namespace\":\"%s\"},\"involvedObject\":{\"apiVersion\":\"" RDC_GROUP_VERSION "\","
             "\"kind\":\"RedisCluster\",\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\"},"
             "\"type\":\"Warning\",\"reason\":\"ReconcileCrashed\",\"message\":\"%s\","
             "\"source\":{\"component\":\"rediscluster-operator\"},\"firstTimestamp\":\"%s\","
             "\"lastTimestamp\":\"%s\",\"count\":1}",
             name, ns, name, ns, uid, msg, now, now);
    buf_t path;
    buf_init(&path, 4096);
    kube_error_t err;
    kube_error_clear(&err);
    kube_path(&path, "", "v1", ns, "events", NULL, NULL);
    if (kube_client_request(inf->cfg->client, "POST", buf_str(&path), NULL, "application/json",
                            body, strlen(body), 0, NULL, &err))
        rlog_warn("cannot record event", "key", key, "error", kube_error_str(&err, line, sizeof(line)));
    kube_client_set_deadline(inf->cfg->client, 0);
    buf_free(&path);
    crashcond_write(inf, key, rc, 1, msg);
    json_object_put(rc);
}

/* The Warning Event ObjectTooLarge on the object of kind at key, if it is still cached in
 * minimal form. Fenced like the workers' writes and bounded in time; failures are
 * logged, not retried (the log line and the metric already said it). */
static void too_large_event(informer_t *inf, const char *kind, const char *key)
{
    const cache_item_t *it = cache_lookup(inf->cache, kind, key);
    if (!it || !it->truncated)
        return;
    json_object *o = json_tokener_parse(it->json);
    const json_object *md = jsonx_get(o, "metadata");
    const char *name = NULL, *ns = NULL, *uid = NULL, *api = NULL, *why = NULL;
    jsonx_string(md, "name", &name);
    jsonx_string(md, "namespace", &ns);
    jsonx_string(md, "uid", &uid);
    jsonx_string(o, "apiVersion", &api);
    jsonx_string(jsonx_get(md, "annotations"), CACHE_TRUNCATED_ANNOTATION, &why);
    if (!name || !ns) {
        json_object_put(o);
        return;
    }
    char msg[1024], now[40], gen[300], line[512];
    snprintf(msg, sizeof(msg), "%s %s/%s: %s; %s", kind, ns, name, why ? why : "too large",
             strcmp(kind, OWNER_KIND) == 0 ? "it is not reconciled until it is smaller, but it can be deleted"
                                           : "the RedisCluster it belongs to is not reconciled until it is smaller");
    snprintf(gen, sizeof(gen), "%s.", name);
    clock_format_rfc3339(clock_wall_ns(), 0, now, sizeof(now));
    json_object *ev = json_object_new_object(), *meta = json_object_new_object(),
                *inv = json_object_new_object(), *src = json_object_new_object();
    json_object_object_add(meta, "generateName", json_object_new_string(gen));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(inv, "apiVersion", json_object_new_string(api ? api : ""));
    json_object_object_add(inv, "kind", json_object_new_string(kind));
    json_object_object_add(inv, "name", json_object_new_string(name));
    json_object_object_add(inv, "namespace", json_object_new_string(ns));
    if (uid)
        json_object_object_add(inv, "uid", json_object_new_string(uid));
    json_object_object_add(src, "component", json_object_new_string("rediscluster-operator"));
    json_object_object_add(ev, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(ev, "kind", json_object_new_string("Event"));
    json_object_object_add(ev, "metadata", meta);
    json_object_object_add(ev, "involvedObject", inv);
    json_object_object_add(ev, "type", json_object_new_string("Warning"));
    json_object_object_add(ev, "reason", json_object_new_string("ObjectTooLarge"));
    json_object_object_add(ev, "message", json_object_new_string(msg));
    json_object_object_add(ev, "source", src);
    json_object_object_add(ev, "firstTimestamp", json_object_new_string(now));
    json_object_object_add(ev, "lastTimestamp", json_object_new_string(now));
    json_object_object_add(ev, "count", json_object_new_int(1));
    int64_t deadline = clock_mono_ns() + EVENT_DEADLINE_NS;
    if (inf->cfg->opts->leader_elect && inf->valid_until_ms * NS_PER_MS < deadline)
        deadline = inf->valid_until_ms * NS_PER_MS;
    kube_client_set_deadline(inf->cfg->client, deadline);
    buf_t path;
    buf_init(&path, 4096);
    kube_path(&path, "", "v1", ns, "events", NULL, NULL);
    kube_error_t err;
    kube_error_clear(&err);
    if (kube_client_create(inf->cfg->client, buf_str(&path), ev, NULL, NULL, &err))
        rlog_warn("cannot record event", "kind", kind, "key", key, "error", kube_error_str(&err, line, sizeof(line)));
    kube_client_set_deadline(inf->cfg->client, 0);
    buf_free(&path);
    json_object_put(ev);
    json_object_put(o); /* ns and the others point into it */
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
    inf->curl_timer_ns = -1;
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
    curl_multi_setopt(inf->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
    curl_multi_setopt(inf->multi, CURLMOPT_SOCKETDATA, inf);
    curl_multi_setopt(inf->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
    curl_multi_setopt(inf->multi, CURLMOPT_TIMERDATA, inf);
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
    if (inf->multi)
        curl_multi_cleanup(inf->multi);
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

static long loop_timeout_ms(informer_t *inf, int64_t now)
{
    int64_t next = now + (int64_t)PROTO_HEARTBEAT_MS * NS_PER_MS;
    int64_t q = workqueue_next_deadline(inf->queue, now);
    if (q > 0 && q < next)
        next = q;
    if (inf->curl_timer_ns >= 0 && inf->curl_timer_ns < next)
        next = inf->curl_timer_ns;
    for (size_t i = 0; i < inf->nrefl; i++) {
        reflector_t *r = &inf->refl[i];
        if (r->need_relist && r->next_list_ns < next)
            next = r->next_list_ns;
        for (size_t j = 0; j < r->nstreams; j++)
            if (r->streams[j].rewatch_ns && r->streams[j].rewatch_ns < next)
                next = r->streams[j].rewatch_ns;
    }
    return next <= now ? 0 : (long)((next - now + NS_PER_MS - 1) / NS_PER_MS);
}

int informer_run(const informer_config_t *cfg)
{
    informer_t *inf = calloc(1, sizeof(*inf));
    if (!inf)
        return 1;
    inf->cfg = cfg;
    int code = 0;
    if (informer_setup(inf)) {
        rlog_error("cannot start the informer");
        code = 1;
        goto out;
    }
    for (;;) {
        int64_t now = clock_mono_ns();
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
            snprintf(after, sizeof(after), "%.0fs", cfg->cache_sync_timeout_s);
            rlog_error("timed out waiting for caches to sync; exiting", "kinds", buf_str(&kinds), "reason",
                       buf_str(&why), "after", after);
            buf_free(&kinds);
            buf_free(&why);
            update_metrics(inf, now);
            code = 1;
            break;
        }
        now = clock_mono_ns();
        if (inf->ready_sent && now >= inf->next_resync_ns) {
            /* The periodic resync: every RedisCluster goes through the queue again. */
            cache_resync(inf->cache, OWNER_KIND);
            inf->next_resync_ns = now + (int64_t)(cfg->opts->sync_period * 1e9);
        }
        /* No work before every cache synced (controller-runtime starts its workers only
         * then): a child on a page not yet listed would look absent to a worker. */
        if (inf->work && inf->ready_sent) {
            dispatch(inf, now);
            if (inf->too_large_n && may_dispatch(inf))
                too_large_report(inf);
        }
        if (inf->stopping && (!in_flight(inf) || now >= inf->stop_deadline_ns))
            break;

        zmq_pollitem_t items[8 + MAX_SOCKETS];
        int n = 0;
        items[n++] = (zmq_pollitem_t){NULL, cfg->signal_fd, ZMQ_POLLIN, 0};
        int work_i = -1, snap_i = -1, lead_i = -1, ev_i = -1;
        if (inf->work) {
            work_i = n;
            items[n++] = (zmq_pollitem_t){inf->work, 0, ZMQ_POLLIN, 0};
            snap_i = n;
            items[n++] = (zmq_pollitem_t){inf->snapshot, 0, ZMQ_POLLIN, 0};
            ev_i = n;
            items[n++] = (zmq_pollitem_t){inf->events_sub, 0, ZMQ_POLLIN, 0};
        }
        if (inf->leader_sub) {
            lead_i = n;
            items[n++] = (zmq_pollitem_t){inf->leader_sub, 0, ZMQ_POLLIN, 0};
        }
        int curl_first = n;
        for (int i = 0; i < inf->ncurl_fds; i++)
            items[n++] = (zmq_pollitem_t){NULL, inf->curl_fds[i].fd, inf->curl_fds[i].events, 0};
        int rc = zmq_poll(items, n, loop_timeout_ms(inf, now));
        now = clock_mono_ns();
        if (rc < 0 && errno != EINTR) {
            rlog_error("zmq_poll failed", "error", zmq_strerror(errno));
            code = 1;
            break;
        }
        if (items[0].revents & ZMQ_POLLIN) {
            int sig;
            while ((sig = daemon_read_signal(cfg->signal_fd)) != 0) {
                if ((sig == SIGTERM || sig == SIGINT) && !inf->stopping) {
                    rlog_info("stopping: no new work; waiting for in-flight items");
                    inf->stopping = 1;
                    inf->stop_deadline_ns = now + (int64_t)(cfg->opts->graceful_shutdown_timeout * 1e9);
                } else if (sig == SIGTERM || sig == SIGINT) {
                    inf->stop_deadline_ns = now;
                }
            }
        }
        /* curl: hand over the ready sockets, then the timer. */
        int running;
        for (int i = curl_first; i < n; i++) {
            if (!items[i].revents)
                continue;
            int ev = ((items[i].revents & ZMQ_POLLIN) ? CURL_CSELECT_IN : 0) |
                     ((items[i].revents & ZMQ_POLLOUT) ? CURL_CSELECT_OUT : 0) |
                     ((items[i].revents & ZMQ_POLLERR) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(inf->multi, items[i].fd, ev, &running);
        }
        if (inf->curl_timer_ns >= 0 && now >= inf->curl_timer_ns) {
            inf->curl_timer_ns = -1;
            curl_multi_socket_action(inf->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        curl_collect(inf, now);
        if (lead_i >= 0)
            handle_leader(inf);
        if (ev_i >= 0)
            handle_events(inf, now);
        if (work_i >= 0)
            handle_work_socket(inf, now);
        if (snap_i >= 0)
            handle_snapshot(inf);
        (void)rc;
        workqueue_advance(inf->queue, now);
        if (inf->work && now >= inf->next_hugz_ns) {
            heartbeat_workers(inf, now);
            zmsg_t *h = zmsg_new();
            zmsg_addstr(h, PROTO_HUGZ);
            zmsg_addf(h, "%llu", (unsigned long long)cache_seq(inf->cache));
            zmsg_send(&h, inf->pub, ZMQ_DONTWAIT);
            inf->next_hugz_ns = now + (int64_t)PROTO_HEARTBEAT_MS * NS_PER_MS;
        }
        if (now >= inf->next_metrics_ns) {
            update_metrics(inf, now);
            inf->next_metrics_ns = now + METRICS_EVERY_NS;
        }
    }
    rlog_info("informer stopped");
out:
    informer_teardown(inf);
    free(inf);
    return code;
}
