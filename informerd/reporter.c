/* reporter: informerd's own writes (Events, the ReconcileCrashed condition). See
 * reporter.h. */
#include "reporter.h"

#include "buf.h"
#include "clock.h"
#include "crashcond.h"
#include "dlist.h"
#include "event.h"
#include "jsonx.h"
#include "kube_async.h"
#include "log.h"
#include "metrics.h"
#include "rdc_api.h"
#include "toolarge.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One write in flight. */
typedef struct write {
    reporter_t *rep;
    kube_async_t *req;
    struct write *next, *prev;
    char what[64];    /* for the log: "Event ReconcileCrashed", "ReconcileCrashed condition True" */
    char key[320];
    int clearing;     /* it turns the condition False: say so when it lands */
} write_t;

struct reporter {
    reporter_config_t cfg;
    char hostname[256];         /* reportingInstance of its Events */
    toolarge_t *too_large;      /* objects awaiting their ObjectTooLarge Event */
    write_t *writes;            /* in flight (a list) */
    metric_family_t *m_skipped;
};

reporter_t *reporter_new(const reporter_config_t *cfg)
{
    reporter_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->cfg = *cfg;
    gethostname(r->hostname, sizeof(r->hostname) - 1);
    r->too_large = toolarge_new(REPORTER_TOO_LARGE_PENDING);
    r->m_skipped = metrics_counter(metrics_default(), "informer_objects_skipped_total",
                                   "Objects too large to cache whole (kept as metadata only), per kind and reason "
                                   "(max_object_bytes, response_cap).",
                                   "kind,reason");
    if (!r->too_large)
        reporter_destroy(&r);
    return r;
}

/* ---- writes on the loop ----------------------------------------------------------------- */

static void on_write_done(const kube_error_t *err, long status, void *arg)
{
    (void)status;
    write_t *w = arg;
    char line[512];
    if (err->code != KERR_OK)
        rlog_warn("cannot write", "what", w->what, "key", w->key, "error",
                  kube_error_str(err, line, sizeof(line)));
    else if (w->clearing)
        rlog_info("ReconcileCrashed condition cleared: the reconcile completed", "key", w->key);
}

/* The transfer of w ended: report it (on_write_done) and forget it. */
static void on_transfer_done(CURL *easy, CURLcode result, void *arg)
{
    (void)easy;
    write_t *w = arg;
    DLIST_UNLINK(w->rep->writes, w, prev, next);
    kube_async_finish(&w->req, result); /* calls on_write_done */
    free(w);
}

/* Start a write on the loop, to end within REPORTER_WRITE_DEADLINE_NS and by fence_ns.
 * Failures to start are logged; returns nothing (best effort). */
static void write_start(reporter_t *r, const char *what, const char *key, const char *method, const char *path,
                        const char *content_type, const char *body, int clearing, int64_t fence_ns)
{
    int64_t deadline = clock_mono_ns() + REPORTER_WRITE_DEADLINE_NS;
    if (fence_ns < deadline)
        deadline = fence_ns;
    write_t *w = calloc(1, sizeof(*w));
    kube_error_t err;
    kube_error_clear(&err);
    char line[512];
    if (!w) {
        rlog_warn("cannot write: out of memory", "what", what, "key", key);
        return;
    }
    w->rep = r;
    w->clearing = clearing;
    snprintf(w->what, sizeof(w->what), "%s", what);
    snprintf(w->key, sizeof(w->key), "%s", key);
    w->req = kube_async_new(r->cfg.client, method, path, content_type, body, strlen(body), deadline, on_write_done,
                            w, &err);
    if (!w->req) {
        rlog_warn("cannot write", "what", what, "key", key, "error", kube_error_str(&err, line, sizeof(line)));
        free(w);
        return;
    }
    if (loop_curl_add_cb(r->cfg.lc, kube_async_handle(w->req), on_transfer_done, w)) {
        rlog_warn("cannot write: curl refused the transfer", "what", what, "key", key);
        kube_async_destroy(&w->req);
        free(w);
        return;
    }
    DLIST_PUSH_FRONT(r->writes, w, prev, next);
}

/* Record an Event about obj (kind overrides obj's own when given). */
static void event_write(reporter_t *r, const char *key, const json_object *obj, const char *kind, const char *action,
                        const char *reason, const char *message, int64_t fence_ns)
{
    event_spec_t spec = {0};
    event_involve(&spec, obj);
    if (kind)
        spec.kind = kind;
    spec.type = "Warning";
    spec.reason = reason;
    spec.message = message;
    spec.action = action;
    spec.instance = r->hostname;
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
    write_start(r, what, key, "POST", buf_str(&path), "application/json",
                json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN), 0, fence_ns);
    buf_free(&path);
    json_object_put(ev);
}

/* ---- objects too large ---------------------------------------------------------------- */

void reporter_too_large(reporter_t *r, const cache_item_t *it)
{
    char bytes[32];
    snprintf(bytes, sizeof(bytes), "%zu", it->truncated);
    const char *reason = toolarge_reason(it);
    metric_counter_add(r->m_skipped, METRIC_LABELS(it->kind, reason), 1);
    rlog_warn("object too large: only its metadata is cached; its RedisCluster is not reconciled "
              "(deletion still is)", "kind", it->kind, "key", it->key, "resourceVersion",
              it->resource_version ? it->resource_version : "", "bytes", it->truncated == 1 ? "unknown" : bytes,
              "reason", reason);
    if (!r->cfg.events)
        return;
    if (toolarge_push(r->too_large, it->kind, it->key) == 1)
        rlog_warn("too many objects too large: no Event for this one", "kind", it->kind, "key", it->key);
}

size_t reporter_too_large_pending(const reporter_t *r)
{
    return toolarge_count(r->too_large);
}

typedef struct {
    reporter_t *rep;
    int64_t fence_ns;
} too_large_ctx_t;

/* The Warning Event ObjectTooLarge on the object of kind at key, if it is still cached in
 * minimal form. */
static void too_large_event(void *arg, const char *kind, const char *key)
{
    const too_large_ctx_t *ctx = arg;
    const cache_item_t *it = cache_lookup(ctx->rep->cfg.cache, kind, key);
    if (!it || !it->truncated)
        return;
    json_object *o = json_tokener_parse(it->json);
    const char *name = JSONX_STR_AT(o, "metadata", "name"), *ns = JSONX_STR_AT(o, "metadata", "namespace");
    const char *why = JSONX_STR_AT(o, "metadata", "annotations", CACHE_TRUNCATED_ANNOTATION);
    if (name && ns) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s %s/%s: %s; %s", kind, ns, name, why ? why : "too large",
                 strcmp(kind, RDC_KIND) == 0 ? "it is not reconciled until it is smaller, but it can be deleted"
                                             : "the RedisCluster it belongs to is not reconciled until it is smaller");
        event_write(ctx->rep, key, o, kind, "Cache", "ObjectTooLarge", msg, ctx->fence_ns);
    }
    json_object_put(o);
}

void reporter_write_too_large(reporter_t *r, int64_t fence_ns)
{
    too_large_ctx_t ctx = {r, fence_ns};
    toolarge_drain(r->too_large, REPORTER_EVENTS_PER_TURN, too_large_event, &ctx);
}

/* ---- the quarantine's record ------------------------------------------------------------ */

/* Set the ReconcileCrashed condition (crashcond.h) on the RedisCluster rc of key by
 * server-side apply under a field manager of its own. */
static void crashcond_write(reporter_t *r, const char *key, const json_object *rc, int crashed, const char *msg,
                            int64_t fence_ns)
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
    kube_path(&path, RDC_API_GROUP, RDC_API_VERSION, ns, RDC_RESOURCE, name, "status");
    buf_puts(&path, "?fieldManager=" CRASHCOND_FIELD_MANAGER "&force=true");
    write_start(r, crashed ? "ReconcileCrashed condition True" : "ReconcileCrashed condition False", key, "PATCH",
                buf_str(&path), "application/apply-patch+yaml", body, !crashed, fence_ns);
    buf_free(&path);
    free(body);
}

void reporter_quarantined(reporter_t *r, const char *key, unsigned crashes, int64_t fence_ns)
{
    json_object *rc = cache_get_parsed(r->cfg.cache, RDC_KIND, key);
    if (!rc)
        return;
    char msg[512];
    snprintf(msg, sizeof(msg),
             "reconcile crashed the worker %u times in a row; retried after 1h or when the spec changes", crashes);
    event_write(r, key, rc, RDC_KIND, "Quarantine", "ReconcileCrashed", msg, fence_ns);
    crashcond_write(r, key, rc, 1, msg, fence_ns);
    json_object_put(rc);
}

void reporter_reconcile_completed(reporter_t *r, const char *key, int64_t fence_ns)
{
    const char *text = cache_get_json(r->cfg.cache, RDC_KIND, key);
    /* Parse only the rare object that names the condition at all. */
    if (!text || !strstr(text, "\"" CRASHCOND_TYPE "\""))
        return;
    json_object *rc = json_tokener_parse(text);
    if (crashcond_is_true(rc, NULL, NULL))
        crashcond_write(r, key, rc, 0, "the reconcile completed without crashing the worker", fence_ns);
    json_object_put(rc);
}

void reporter_destroy(reporter_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    reporter_t *r = *self_p;
    while (r->writes) {
        write_t *w = r->writes;
        r->writes = w->next;
        loop_curl_remove(r->cfg.lc, kube_async_handle(w->req));
        kube_async_destroy(&w->req);
        free(w);
    }
    toolarge_destroy(&r->too_large);
    free(r);
    *self_p = NULL;
}
