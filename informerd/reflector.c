/* informerd: see informer_internal.h for how its files divide the work. */
#include "informer_internal.h"

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

void stream_stop(informer_t *inf, stream_t *s)
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

int on_watch_event(const watch_event_t *ev, void *ud)
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
        if (r->transform && r->transform(ev->object)) {
            metric_counter_add(inf->m_errors, METRIC_LABELS(r->kind, "bad_object"), 1);
            snprintf(s->why, sizeof(s->why), "cannot reduce a %s to its cached form", r->kind);
            s->failed = 1;
            return 1;
        }
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
    ro.metadata_only = r->metadata_only;
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
void reflector_list(reflector_t *r, int64_t now)
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
        ro.metadata_only = r->metadata_only;
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
    for (size_t i = 0; r->transform && i < json_object_array_length(items); i++) {
        if (r->transform(json_object_array_get_idx(items, i))) {
            json_object_put(items);
            snprintf(s->why, sizeof(s->why), "cannot reduce a listed %s to its cached form", r->kind);
            return -1;
        }
    }
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

void stream_rewatch(stream_t *s, int64_t now)
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
void on_transfer_done(CURL *easy, CURLcode result, void *arg)
{
    informer_t *inf = arg;
    xfer_kind_t *x = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
    int64_t now = clock_mono_ns();
    if (x && *x == XFER_WATCH) {
        stream_done(inf, (stream_t *)x, result, now);
    } else if (x && *x == XFER_LIST) {
        list_done(inf, ((list_xfer_t *)x)->s, result, now);
    }
}
