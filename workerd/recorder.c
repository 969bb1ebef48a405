#include "recorder.h"

#include "clock.h"
#include "event.h"
#include "hash.h"
#include "jsonx.h"
#include "kube_async.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics.h"
#include "ratelimit.h"
#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES 512     /* Events remembered for aggregation (and waiting) */
#define SPAM_OBJECTS 256 /* per-object spam buckets */
#define WINDOW_NS ((int64_t)RECORDER_WINDOW_S * NS_PER_SEC)

typedef struct xfer xfer_t;

/* One distinct Event (involved object, type, reason, message). */
typedef struct {
    uint64_t key;         /* 0 = free */
    json_object *ev;      /* the Event as POSTed (its name chosen here), until created */
    char *ev_text;        /* ... once created: as text, a fifth of the tree's memory (a
                             worker keeps up to ENTRIES for aggregation); parsed back by
                             entry_ev for a new POST (the Event expired) */
    char path[600];       /* .../events/<name> */
    char coll[400];       /* .../events */
    int64_t count_want;   /* times recorded */
    int64_t count_sent;   /* the count the API has; 0 = not created */
    int64_t last_ns;      /* monotonic time of the last recording */
    int64_t deadline_ns;  /* of the latest recording; 0 = none */
    uint64_t seq;         /* queue order while queued */
    int64_t send_at;      /* its token's time (monotonic), once reserved; 0 = none yet */
    int queued;           /* waits to be sent */
    xfer_t *x;            /* the request in flight, or NULL */
} entry_t;

struct xfer {
    recorder_t *r;
    entry_t *e;
    kube_async_t *req;
    int64_t count;   /* the count this request sets */
    int post;
};

typedef struct {
    uint64_t obj;   /* 0 = free */
    ratelimit_t rl;
} spam_t;

struct recorder {
    kube_client_t *c;
    loop_curl_t *lc; /* the worker's multi (borrowed) */
    recorder_opts_t o;
    entry_t e[ENTRIES];
    spam_t spam[SPAM_OBJECTS];
    size_t spam_next;
    size_t queued, in_flight;
    uint64_t seq;
    recorder_stats_t st;
    int timer;                 /* the loop timer waiting for a token (of c's limiter); 0 = none */
    metric_family_t *m_total, *m_wait;
};

/* Count one of the recorder's outcomes, in its stats and in event_recorder_total. */
static void bump(recorder_t *r, uint64_t *field, const char *result)
{
    (*field)++;
    const char *labels[] = {result};
    metric_counter_add(r->m_total, labels, 1);
}


const char *recorder_result_name(recorder_result_t res)
{
    switch (res) {
    case RECORDER_QUEUED: return "queued";
    case RECORDER_AGGREGATED: return "aggregated";
    case RECORDER_SPAM: return "spam";
    case RECORDER_FULL: return "full";
    case RECORDER_INVALID: return "invalid";
    }
    return "unknown";
}

static void on_transfer(CURL *easy, CURLcode result, void *arg);

recorder_t *recorder_new(kube_client_t *c, loop_curl_t *lc, const recorder_opts_t *o)
{
    recorder_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->c = c;
    r->lc = lc;
    if (o)
        r->o = *o;
    if (!r->o.queue_cap)
        r->o.queue_cap = 256;
    if (r->o.max_in_flight <= 0)
        r->o.max_in_flight = 8;
    if (!(r->o.spam_qps > 0))
        r->o.spam_qps = 1.0 / RECORDER_SPAM_REFILL_S;
    if (r->o.spam_burst <= 0)
        r->o.spam_burst = RECORDER_SPAM_BURST;
    static const char total_help[] = "Events of the worker's recorder by outcome: requests sent (posted, "
                                     "patched), repeats aggregated, Events dropped or failed (post_failed: a "
                                     "POST sent and refused)";
    static const char wait_help[] = "Time the recorder's requests waited for the Events' QPS budget";
    r->m_total = metrics_counter(metrics_default(), "event_recorder_total", total_help, "result");
    r->m_wait = metrics_counter(metrics_default(), "event_recorder_limiter_wait_seconds_total", wait_help, NULL);
    return r;
}

static void entry_free(entry_t *e)
{
    json_object_put(e->ev);
    free(e->ev_text);
    memset(e, 0, sizeof(*e));
}

/* The Event as an object again (from its text once created); NULL when out of memory. */
static json_object *entry_ev(entry_t *e)
{
    if (!e->ev && e->ev_text) {
        e->ev = json_tokener_parse(e->ev_text);
        if (e->ev) {
            free(e->ev_text);
            e->ev_text = NULL;
        }
    }
    return e->ev;
}

/* Created: keep the Event as text only (a repeat is a PATCH of count and time). */
static void entry_created(entry_t *e)
{
    const char *t = e->ev ? json_object_to_json_string_ext(e->ev, JSON_C_TO_STRING_PLAIN) : NULL;
    char *text = t ? strdup(t) : NULL;
    if (!text)
        return; /* keep the tree */
    json_object_put(e->ev);
    e->ev = NULL;
    e->ev_text = text;
}

void recorder_destroy(recorder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    recorder_t *r = *self_p;
    if (r->timer)
        loop_cancel_timer(loop_curl_loop(r->lc), r->timer);
    for (size_t i = 0; i < ENTRIES; i++) {
        entry_t *e = &r->e[i];
        if (e->x) {
            loop_curl_remove(r->lc, kube_async_handle(e->x->req));
            kube_async_destroy(&e->x->req);
            free(e->x);
        }
        entry_free(e);
    }
    free(r);
    *self_p = NULL;
}

size_t recorder_pending(const recorder_t *r)
{
    return r->queued + r->in_flight;
}

recorder_stats_t recorder_stats(const recorder_t *r)
{
    return r->st;
}

/* The spam filter: may obj have one more new Event at now? */
static int spam_allow(recorder_t *r, uint64_t obj, int64_t now)
{
    spam_t *s = NULL;
    for (size_t i = 0; i < SPAM_OBJECTS && !s; i++)
        if (r->spam[i].obj == obj)
            s = &r->spam[i];
    if (!s) {
        s = &r->spam[r->spam_next];
        r->spam_next = (r->spam_next + 1) % SPAM_OBJECTS;
        s->obj = obj;
        ratelimit_init(&s->rl, r->o.spam_qps, r->o.spam_burst);
    }
    return ratelimit_allow(&s->rl, now);
}

static entry_t *entry_find(recorder_t *r, uint64_t key, int64_t now)
{
    for (size_t i = 0; i < ENTRIES; i++)
        if (r->e[i].key == key && (r->e[i].queued || r->e[i].x || now - r->e[i].last_ns < WINDOW_NS))
            return &r->e[i];
    return NULL;
}

/* A slot for a new Event: a free one, else the oldest one neither waiting nor in flight;
 * NULL when every slot waits or is in flight. */
static entry_t *entry_slot(recorder_t *r)
{
    entry_t *best = NULL;
    for (size_t i = 0; i < ENTRIES; i++) {
        entry_t *e = &r->e[i];
        if (!e->key)
            return e;
        if (!e->queued && !e->x && (!best || e->last_ns < best->last_ns))
            best = e;
    }
    if (best)
        entry_free(best);
    return best;
}

static void enqueue(recorder_t *r, entry_t *e)
{
    if (e->queued)
        return;
    e->queued = 1;
    e->seq = ++r->seq;
    r->queued++;
}

static void dequeue(recorder_t *r, entry_t *e)
{
    if (!e->queued)
        return;
    e->queued = 0;
    r->queued--;
}

/* Name the Event as client-go does: "<object>.<time in ns, hex>", unique per recording. */
static int entry_name(entry_t *e)
{
    if (!entry_ev(e))
        return -1;
    const char *obj = JSONX_STR_AT(e->ev, "involvedObject", "name");
    char name[300];
    snprintf(name, sizeof(name), "%.240s.%llx", obj ? obj : "event", (unsigned long long)clock_wall_ns());
    json_object *md = NULL;
    if (!json_object_object_get_ex(e->ev, "metadata", &md))
        return -1;
    json_object_object_del(md, "generateName");
    json_object_object_add(md, "name", json_object_new_string(name));
    return snprintf(e->path, sizeof(e->path), "%s/%s", e->coll, name) >= (int)sizeof(e->path) ? -1 : 0;
}

static void send_one(recorder_t *r, entry_t *e);
static void pump(recorder_t *r);

static int on_token_timer(loop_t *loop, int id, void *arg)
{
    (void)loop;
    recorder_t *r = arg;
    if (r->timer == id)
        r->timer = 0;
    pump(r);
    return 0;
}

/* 1 when e may be sent at now: its token of the client's limiter (reserved here the
 * first time it is asked for, in queue order; none to take without a limit) is due.
 * Else 0, with a timer set for when it is. */
static int token_due(recorder_t *r, entry_t *e, int64_t now)
{
    if (!e->send_at) {
        int64_t wait = kube_client_throttle(r->c);
        e->send_at = now + (wait > 0 ? wait : 0);
        if (wait > 0) {
            r->st.throttled++;
            r->st.throttled_ns += wait;
            metric_counter_add(r->m_wait, NULL, (double)wait / NS_PER_SEC);
        }
    }
    if (e->send_at <= now)
        return 1;
    if (!r->timer) {
        int t = loop_add_timer(loop_curl_loop(r->lc), e->send_at - now, 0, on_token_timer, r);
        r->timer = t > 0 ? t : 0; /* out of memory: the next recording or answer pumps */
    }
    return 0;
}

/* Start what waits, oldest first, up to max_in_flight, each once its token is due. */
static void pump(recorder_t *r)
{
    while (r->queued && r->in_flight < (size_t)r->o.max_in_flight) {
        entry_t *next = NULL;
        for (size_t i = 0; i < ENTRIES; i++)
            if (r->e[i].queued && !r->e[i].x && (!next || r->e[i].seq < next->seq))
                next = &r->e[i];
        if (!next || !token_due(r, next, clock_mono_ns()))
            return;
        dequeue(r, next);
        next->send_at = 0;
        send_one(r, next);
    }
}

static void on_done(const kube_error_t *err, long status, void *arg);

static void send_one(recorder_t *r, entry_t *e)
{
    char now[40];
    clock_format_rfc3339(clock_wall_ns(), 0, now, sizeof(now));
    json_object *body = NULL;
    const char *method, *path, *ctype;
    int post = e->count_sent == 0;
    if (post) {
        body = json_object_get(entry_ev(e));
        json_object_object_add(body, "count", json_object_new_int64(e->count_want));
        json_object_object_add(body, "lastTimestamp", json_object_new_string(now));
        method = "POST", path = e->coll, ctype = "application/json";
    } else {
        body = json_object_new_object();
        json_object_object_add(body, "count", json_object_new_int64(e->count_want));
        json_object_object_add(body, "lastTimestamp", json_object_new_string(now));
        method = "PATCH", path = e->path, ctype = "application/merge-patch+json";
    }
    const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
    xfer_t *x = calloc(1, sizeof(*x));
    kube_error_t err;
    kube_error_clear(&err);
    char line[512];
    if (!x) {
        bump(r, &r->st.failed, "failed");
        goto drop;
    }
    x->r = r;
    x->e = e;
    x->count = e->count_want;
    x->post = post;
    x->req = kube_async_new(r->c, method, path, ctype, text, strlen(text), e->deadline_ns, on_done, x, &err);
    if (!x->req) {
        /* Past the deadline (no longer leading) or out of memory: the Event is dropped. */
        rlog_debug("event not sent", "path", path, "error", kube_error_str(&err, line, sizeof(line)));
        bump(r, &r->st.failed, "failed");
        free(x);
        goto drop;
    }
    /* a stream of the worker's one connection (HTTP/2 over TLS) */
    loop_curl_share_connection(kube_async_handle(x->req));
    if (loop_curl_add_cb(r->lc, kube_async_handle(x->req), on_transfer, x)) {
        kube_async_destroy(&x->req);
        free(x);
        bump(r, &r->st.failed, "failed");
        goto drop;
    }
    e->x = x;
    r->in_flight++;
    if (post)
        bump(r, &r->st.posts, "posted");
    else
        bump(r, &r->st.patches, "patched");
    json_object_put(body);
    return;
drop:
    /* An Event never created is forgotten (a repeat starts it anew); one that exists keeps
     * its count for the next repeat's PATCH. */
    if (post)
        entry_free(e);
    json_object_put(body);
}

static void on_transfer(CURL *easy, CURLcode result, void *arg)
{
    (void)easy;
    xfer_t *x = arg;
    recorder_t *r = x->r;
    kube_async_finish(&x->req, result); /* calls on_done */
    free(x);
    pump(r);
}

static void on_done(const kube_error_t *err, long status, void *arg)
{
    (void)status;
    xfer_t *x = arg;
    recorder_t *r = x->r;
    entry_t *e = x->e;
    e->x = NULL;
    r->in_flight--;
    if (err->code == KERR_OK) {
        if (x->post)
            entry_created(e);
        e->count_sent = x->count;
        if (e->count_want > e->count_sent)
            enqueue(r, e); /* repeats made meanwhile: one PATCH for all of them */
        return;
    }
    if (!x->post && kube_error_is_not_found(err)) {
        /* Expired (or deleted): a new Event, as client-go does. */
        e->count_sent = 0;
        if (entry_name(e) == 0) {
            enqueue(r, e);
            return;
        }
    }
    char line[512];
    const char *reason = JSONX_STR_AT(entry_ev(e), "reason");
    rlog_warn("cannot record event", "reason", reason ? reason : "", "error",
              kube_error_str(err, line, sizeof(line)));
    /* a POST refused (a namespace being deleted refuses new Events) created nothing */
    bump(r, &r->st.failed, x->post ? "post_failed" : "failed");
    if (x->post)
        entry_free(e); /* nothing on the server to aggregate into */
}

recorder_result_t recorder_record(recorder_t *r, const json_object *rc, const char *type,
                                  const char *reason, const char *message,
                                  const char *instance, int64_t deadline_mono_ns)
{
    event_spec_t spec = event_about_cluster(rc, type, reason, message, instance);
    if (jsonx_str_is(rc, "kind", "RedisBackup"))
        spec.kind = "RedisBackup"; /* BACKUP: an Event about one backup (plan_event_t.involved) */
    if (!spec.name || !spec.ns || !type || !reason)
        return RECORDER_INVALID;
    int64_t now = clock_mono_ns();
    uint64_t obj = hash_fnv(hash_fnv(hash_fnv(HASH_FNV_START, spec.ns), spec.name), spec.uid);
    uint64_t key = hash_fnv(hash_fnv(hash_fnv(obj, type), reason), spec.message);
    entry_t *e = entry_find(r, key, now);
    if (e) {
        /* A repeat: count it; one request carries it (and any further repeats). */
        e->count_want++;
        e->last_ns = now;
        e->deadline_ns = deadline_mono_ns;
        bump(r, &r->st.aggregated, "aggregated");
        if (!e->x && e->count_sent > 0)
            enqueue(r, e);
        pump(r);
        return RECORDER_AGGREGATED;
    }
    if (r->queued >= r->o.queue_cap) {
        bump(r, &r->st.dropped_full, "dropped_full");
        return RECORDER_FULL;
    }
    if (!spam_allow(r, obj, now)) {
        bump(r, &r->st.dropped_spam, "dropped_spam");
        return RECORDER_SPAM;
    }
    e = entry_slot(r);
    if (!e) {
        bump(r, &r->st.dropped_full, "dropped_full");
        return RECORDER_FULL;
    }
    e->ev = event_build(&spec, clock_wall_ns());
    if (!e->ev || snprintf(e->coll, sizeof(e->coll), "/api/v1/namespaces/%s/events", spec.ns) >= (int)sizeof(e->coll) ||
        entry_name(e)) {
        entry_free(e);
        return RECORDER_INVALID;
    }
    e->key = key;
    e->count_want = 1;
    e->count_sent = 0;
    e->last_ns = now;
    e->deadline_ns = deadline_mono_ns;
    enqueue(r, e);
    pump(r);
    return RECORDER_QUEUED;
}
