/* informerd: see informer_internal.h for how its files divide the work. */
#include "informer_internal.h"

void observation_free(observation_t *o)
{
    if (!o)
        return;
    free(o->key);
    free(o->json);
    free(o);
}

void observation_forget(informer_t *inf, const char *key)
{
    observation_free(hm_remove(inf->observations, key));
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
     * spliced from the cache's text (workitem.h). */
    const cache_item_t *rc = cache_lookup(inf->cache, OWNER_KIND, key);
    buf_t children;
    buf_init(&children, 0);
    const observation_t *obs = hm_get(inf->observations, key);
    int bad = workitem_children(inf->cache, key, obs ? obs->json : NULL, obs ? obs->len : 0, &children);
    if (bad) {
        /* Out of memory: the key waits and comes back, it is not lost. */
        buf_free(&children);
        rlog_error("cannot build the work item; retrying later", "key", key);
        workqueue_done(inf->queue, key, now);
        workqueue_add_rate_limited(inf->queue, key, now);
        return;
    }
    rmsg_t *m = rmsg_new();
    rmsg_addmem(m, w->id, w->idlen);
    rmsg_addstr(m, PROTO_WORK);
    rmsg_addstr(m, key);
    rmsg_addf(m, "%lld", (long long)inf->epoch);
    rmsg_addf(m, "%lld", (long long)(rc ? rc->generation : 0));
    rmsg_addmem(m, rc ? rc->json : "null", rc ? rc->json_len : 4);
    rmsg_addmem(m, buf_str(&children), children.len);
    buf_free(&children);
    if (rmsg_send(&m, inf->work, ZMQ_DONTWAIT)) {
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

int may_dispatch(const informer_t *inf)
{
    if (inf->stopping)
        return 0;
    if (!inf->cfg->opts->leader_elect)
        return 1;
    return inf->is_leader && clock_mono_ns() / NS_PER_MS < inf->valid_until_ms;
}

void dispatch(informer_t *inf, int64_t now)
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

static void handle_done(informer_t *inf, worker_slot_t *w, rmsg_t *m, int64_t now)
{
    char *key = rmsg_strdup(m, 1);
    char *result = rmsg_strdup(m, 2);
    int64_t after_ms = 0;
    rmsg_frame_int64(m, 3, &after_ms);
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

void handle_work_socket(informer_t *inf, int64_t now)
{
    rmsg_t *m;
    while ((m = rmsg_recv(inf->work, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 1 << 20)) != NULL) {
        size_t idlen = 0;
        const char *id = rmsg_frame(m, 0, &idlen);
        worker_slot_t *w = worker_find(inf, id, idlen);
        if (!w && idlen < sizeof(w->id) && inf->nworkers < MAX_WORKERS) {
            w = &inf->workers[inf->nworkers++];
            memset(w, 0, sizeof(*w));
            memcpy(w->id, id, idlen);
            w->idlen = idlen;
            w->idle = 1;
        }
        if (!w) {
            rmsg_destroy(&m);
            continue;
        }
        w->last_heard_ns = now;
        if (rmsg_frame_is(m, 1, PROTO_READY)) {
            if (w->key[0]) /* it restarted its link while holding an item */
                worker_lost(inf, w, "reconnected", now);
            else
                w->idle = 1;
        } else if (rmsg_frame_is(m, 1, PROTO_DONE)) {
            rmsg_t *body = rmsg_pop_frame_msg(m);
            rmsg_destroy(&body);
            handle_done(inf, w, m, now);
        } else if (!rmsg_frame_is(m, 1, PROTO_HEARTBEAT)) {
            rlog_warn("unknown message on the work socket; dropped", "worker", w->id);
        }
        rmsg_destroy(&m);
    }
}

void heartbeat_workers(informer_t *inf, int64_t now)
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
        rmsg_t *m = rmsg_new();
        rmsg_addmem(m, w->id, w->idlen);
        rmsg_addstr(m, PROTO_HEARTBEAT);
        rmsg_send(&m, inf->work, ZMQ_DONTWAIT);
        i++;
    }
}

/* The supervisor says a child exited: a worker's item comes back at once. */
void handle_events(informer_t *inf, int64_t now)
{
    rmsg_t *m;
    while ((m = rmsg_recv(inf->events_sub, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096)) != NULL) {
        int64_t pid = 0, sig = 0;
        if (rmsg_frame_is(m, 0, PROTO_EXITED) && rmsg_frame_int64(m, 2, &pid) == 0 &&
            rmsg_frame_int64(m, 3, &sig) == 0) {
            char id[64];
            int len = snprintf(id, sizeof(id), "w-%lld", (long long)pid);
            worker_slot_t *w = worker_find(inf, id, (size_t)len);
            int64_t code = -1;
            rmsg_frame_int64(m, 4, &code);
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
        rmsg_destroy(&m);
    }
}

void handle_leader(informer_t *inf)
{
    rmsg_t *m;
    while ((m = rmsg_recv(inf->leader_sub, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096)) != NULL) {
        int64_t is_leader, epoch, valid;
        if (rmsg_frame_is(m, 0, PROTO_LEADER) && rmsg_frame_int64(m, 1, &is_leader) == 0 &&
            rmsg_frame_int64(m, 4, &epoch) == 0 && rmsg_frame_int64(m, 5, &valid) == 0) {
            if ((is_leader != 0) != inf->is_leader)
                rlog_info(is_leader ? "leading: dispatching work" : "not leading: work waits");
            inf->is_leader = is_leader != 0;
            inf->epoch = epoch;
            inf->valid_until_ms = valid;
        }
        rmsg_destroy(&m);
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
void too_large_event(informer_t *inf, const char *kind, const char *key)
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

/* ---- observations from observerd ------------------------------------------------------ */

/* OBSERVED key observation: keep it as the key's latest and queue the key. Only for a
 * cached RedisCluster (observerd follows our cache, so anything else is stale). */
void handle_observe(informer_t *inf, int64_t now)
{
    rmsg_t *m;
    while ((m = rmsg_recv(inf->observe, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, PROTO_MAX_OBSERVATION_BYTES + 1024)) != NULL) {
        size_t len = 0;
        char *key = rmsg_strdup(m, 1);
        const char *text = rmsg_frame(m, 2, &len);
        json_object *o = NULL;
        if (!rmsg_frame_is(m, 0, PROTO_OBSERVED) || !key || !text || rmsg_size(m) != 3) {
            proto_error("observe", "malformed OBSERVED");
            metric_counter_add(inf->m_observations, METRIC_LABELS("malformed"), 1);
            goto next;
        }
        json_tokener *tok = json_tokener_new();
        o = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
        if (tok && json_tokener_get_error(tok) != json_tokener_success) {
            json_object_put(o);
            o = NULL;
        }
        json_tokener_free(tok);
        if (!o || !json_object_is_type(jsonx_get(o, "nodes"), json_type_array)) {
            proto_error("observe", "OBSERVED observation is not {\"nodes\":[...]}");
            metric_counter_add(inf->m_observations, METRIC_LABELS("malformed"), 1);
            goto next;
        }
        if (!cache_lookup(inf->cache, OWNER_KIND, key)) {
            metric_counter_add(inf->m_observations, METRIC_LABELS("unknown_key"), 1);
            goto next;
        }
        observation_t *ob = calloc(1, sizeof(*ob));
        if (ob) {
            ob->key = strdup(key);
            ob->json = malloc(len + 1);
            ob->len = len;
        }
        if (!ob || !ob->key || !ob->json || hm_reserve(inf->observations, hm_count(inf->observations) + 1)) {
            observation_free(ob);
            rlog_warn("out of memory keeping an observation", "key", key);
            goto next;
        }
        memcpy(ob->json, text, len);
        ob->json[len] = '\0';
        void *old = NULL;
        hm_put(inf->observations, ob->key, ob, &old);
        observation_free(old);
        metric_counter_add(inf->m_observations, METRIC_LABELS("stored"), 1);
        workqueue_add(inf->queue, key, now);
    next:
        json_object_put(o);
        free(key);
        rmsg_destroy(&m);
    }
}

/* ---- snapshots (Clone pattern) ------------------------------------------------------- */

typedef struct {
    informer_t *inf;
    rmsg_t *id;
    uint64_t seq;
} snap_ctx_t;

static int snap_visit(void *ud, const cache_item_t *it)
{
    snap_ctx_t *sc = ud;
    rmsg_t *m = rmsg_new();
    size_t idlen;
    const char *id = rmsg_frame(sc->id, 0, &idlen);
    rmsg_addmem(m, id, idlen);
    rmsg_addstr(m, PROTO_SNAP);
    rmsg_addf(m, "%llu", (unsigned long long)sc->seq);
    rmsg_addstr(m, it->kind);
    rmsg_addstr(m, it->key);
    rmsg_addstr(m, it->resource_version ? it->resource_version : "");
    rmsg_addmem(m, it->json, it->json_len);
    rmsg_send(&m, sc->inf->snapshot, 0);
    return 0;
}

void handle_snapshot(informer_t *inf)
{
    rmsg_t *m;
    while ((m = rmsg_recv(inf->snapshot, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096)) != NULL) {
        rmsg_t *id = rmsg_pop_frame_msg(m);
        if (id && rmsg_frame_is(m, 0, PROTO_ICANHAZ)) {
            snap_ctx_t sc = {inf, id, cache_seq(inf->cache)};
            for (size_t i = 0; i < inf->nrefl; i++)
                cache_snapshot(inf->cache, inf->refl[i].kind, snap_visit, &sc);
            rmsg_t *end = rmsg_new();
            size_t idlen;
            const char *idb = rmsg_frame(id, 0, &idlen);
            rmsg_addmem(end, idb, idlen);
            rmsg_addstr(end, PROTO_KTHXBAI);
            rmsg_addf(end, "%llu", (unsigned long long)sc.seq);
            rmsg_send(&end, inf->snapshot, 0);
        }
        rmsg_destroy(&id);
        rmsg_destroy(&m);
    }
}
