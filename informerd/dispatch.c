/* informerd: see informer_internal.h for how its files divide the work. */
#include "informer_internal.h"

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

/* Give key back to the queue: counted as a crash of the key (crash 1) or not. */
static void give_back(informer_t *inf, worker_slot_t *w, const char *key, const char *why, int crash, int64_t now)
{
    if (!crash) {
        workqueue_done(inf->queue, key, now);
        workqueue_add(inf->queue, key, now);
        return;
    }
    workqueue_abandon(inf->queue, key, now);
    unsigned crashes = workqueue_crash_count(inf->queue, key);
    char n[16];
    snprintf(n, sizeof(n), "%u", crashes);
    rlog_warn("worker lost with an item in flight; requeued", "worker", w->id, "key", key, "reason", why,
              "crashes", n);
    if (crashes >= CRASHES_TO_QUARANTINE) {
        workqueue_quarantine(inf->queue, key, now + QUARANTINE_NS);
        metric_counter_add(inf->m_quarantined, NULL, 1);
        quarantine_report(inf, key);
    }
}

/* Every key the worker holds goes back to the queue (each counted as a crash of that key
 * when crash), and the worker is forgotten. */
static void worker_release_all(informer_t *inf, worker_slot_t *w, const char *why, int crash, int64_t now)
{
    while (w->held.n) {
        char key[WORKSLOT_KEY_MAX];
        snprintf(key, sizeof(key), "%s", w->held.key[w->held.n - 1]);
        workslot_release(&w->held, key);
        give_back(inf, w, key, why, crash, now);
    }
    worker_forget(inf, w);
}

/* The worker died or went silent with items: requeue each and count a crash of each. */
static void worker_lost(informer_t *inf, worker_slot_t *w, const char *why, int64_t now)
{
    worker_release_all(inf, w, why, 1, now);
}

/* Returns 0 when the worker got key, -1 when the key went back to the queue, 1 when
 * the worker is gone (and forgotten: w's place holds another worker now). */
static int send_work(informer_t *inf, worker_slot_t *w, const char *key, int64_t now)
{
    /* dispatch() checked that the owner is cached. The children go as one JSON object
     * spliced from the cache's text (workitem.h). */
    const cache_item_t *rc = cache_lookup(inf->cache, OWNER_KIND, key);
    buf_t children;
    buf_init(&children, 0);
    size_t obslen = 0;
    const char *obs = obsstore_get(inf->observations, key, &obslen);
    int bad = workitem_children(inf->cache, key, obs, obslen, &children);
    int alone = workqueue_crash_count(inf->queue, key) > 0;
    if (bad || workslot_hold(&w->held, key, now, alone)) {
        /* Out of memory (or a key too long to hold): the key waits and comes back, it is
         * not lost. */
        buf_free(&children);
        rlog_error("cannot build the work item; retrying later", "key", key);
        workqueue_done(inf->queue, key, now);
        workqueue_add_rate_limited(inf->queue, key, now);
        return -1;
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
        /* The worker is gone (ROUTER_MANDATORY): give its keys back untouched (this one
         * too: it never got it). */
        worker_release_all(inf, w, "unreachable", 0, now);
        return 1;
    }
    return 0;
}

int may_dispatch(const informer_t *inf)
{
    if (inf->stopping)
        return 0;
    if (!inf->cfg->opts->leader_elect)
        return 1;
    return inf->is_leader && clock_mono_ns() / NS_PER_MS < inf->valid_until_ms;
}

/* The next key to hand out, or NULL when none is ready. */
static const char *next_key(informer_t *inf, int64_t now)
{
    for (;;) {
        const char *key = workqueue_get(inf->queue, now);
        if (!key)
            return NULL;
        const cache_item_t *rc = cache_lookup(inf->cache, OWNER_KIND, key);
        const cache_item_t *big = rc ? toolarge_blocker(inf->cache, rc) : NULL;
        if (rc && !big && ownwrite_may_dispatch(inf->ownwrites, key, now))
            return key;
        if (rc && !big) {
            /* Its last reconcile wrote the RedisCluster, and the cache does not hold that
             * yet: it waits for the delta that brings it (which queues it) or the end of
             * the wait (ownwrite.h). */
            workqueue_done(inf->queue, key, now);
            continue;
        }
        /* Deleted meanwhile: nothing to reconcile. Or it, or a child, is kept in minimal
         * form: a worker would take the missing spec or data for a change to make. It
         * waits for a smaller object (a delta) or its deletion. */
        if (big)
            rlog_info("not reconciled: an object is too large (see its Warning Event)", "key", key, "kind",
                      big->kind, "object", big->key);
        workqueue_forget(inf->queue, key);
        workqueue_done(inf->queue, key, now);
    }
}

void dispatch(informer_t *inf, int64_t now)
{
    if (!may_dispatch(inf))
        return;
    /* Round robin, one key per worker with room per pass: C keys to the first worker
     * before the second gets one would leave the others idle while it works. */
    for (int more = 1; more;) {
        more = 0;
        for (size_t i = 0; i < inf->nworkers;) {
            worker_slot_t *w = &inf->workers[i];
            if (!workslot_room(&w->held)) {
                i++;
                continue;
            }
            const char *key = next_key(inf, now);
            if (!key)
                return;
            char k[WORKSLOT_KEY_MAX];
            snprintf(k, sizeof(k), "%s", key);
            if (workqueue_crash_count(inf->queue, k) > 0 && w->held.n) {
                /* It crashed a worker: it runs alone, in a worker that holds nothing. */
                worker_slot_t *idle = NULL;
                for (size_t j = 0; j < inf->nworkers && !idle; j++)
                    if (!inf->workers[j].held.n)
                        idle = &inf->workers[j];
                if (!idle) {
                    /* none yet: it goes back to the queue and dispatch pauses for this
                     * turn, so the workers drain until one is empty (under a constant
                     * flow of keys it may wait several turns) */
                    workqueue_done(inf->queue, k, now);
                    workqueue_add(inf->queue, k, now);
                    return;
                }
                if (send_work(inf, idle, k, now) == 1)
                    more = 1;
                continue;
            }
            int sent = send_work(inf, w, k, now);
            if (sent == 1)
                continue; /* place i now holds another worker: look at it */
            if (sent == 0 && workslot_room(&w->held))
                more = 1;
            i++;
        }
    }
}

static void crashcond_clear(informer_t *inf, const char *key);

static void handle_done(informer_t *inf, worker_slot_t *w, rmsg_t *m, int64_t now)
{
    char *key = rmsg_strdup(m, 1);
    char *result = rmsg_strdup(m, 2);
    int64_t after_ms = 0;
    rmsg_frame_int64(m, 3, &after_ms);
    char *written = rmsg_size(m) > 4 ? rmsg_strdup(m, 4) : NULL;
    if (!key || !result || workslot_release(&w->held, key) != 0) {
        /* A confused peer (or one we gave up on): the keys it holds stay its own until it
         * answers for them or is lost; nothing is released twice. */
        rlog_warn("DONE for a key the worker does not hold; ignored", "worker", w->id, "key", key ? key : "");
        goto out;
    }
    if (written) {
        /* The key is not handed out again before the cache holds what it wrote. */
        const cache_item_t *rc = cache_lookup(inf->cache, OWNER_KIND, key);
        int awaited =
            ownwrite_expect(inf->ownwrites, key, written, rc ? rc->resource_version : NULL, now + OWNWRITE_WAIT_NS);
        metric_counter_add(inf->m_ownwrites, METRIC_LABELS(awaited ? "awaited" : "cached"), 1);
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
    free(key);
    free(result);
    free(written);
}

/* The capacity a READY or HEARTBEAT announces in frame 2 (after the routing id and the
 * command), or 1 when it says none (a worker of one key at a time). */
static int64_t announced_capacity(const rmsg_t *m)
{
    int64_t cap = 1;
    if (rmsg_size(m) > 2 && rmsg_frame_int64(m, 2, &cap))
        cap = 1;
    return cap;
}

void handle_work_socket(informer_t *inf, int64_t now)
{
    rmsg_t *m;
    while ((m = rmsg_recv(inf->work, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 1 << 20)) != NULL) {
        size_t idlen = 0;
        const char *id = rmsg_frame(m, 0, &idlen);
        worker_slot_t *w = worker_find(inf, id, idlen);
        int ready = rmsg_frame_is(m, 1, PROTO_READY);
        if (w && ready && w->held.n) {
            /* it restarted its link while holding items: they are lost with it */
            worker_lost(inf, w, "reconnected", now);
            w = NULL;
        }
        if (!w && idlen < sizeof(w->id) && inf->nworkers < MAX_WORKERS) {
            w = &inf->workers[inf->nworkers++];
            memset(w, 0, sizeof(*w));
            memcpy(w->id, id, idlen);
            w->idlen = idlen;
            workslot_init(&w->held, 1);
        }
        if (!w) {
            rmsg_destroy(&m);
            continue;
        }
        w->last_heard_ns = now;
        if (ready || rmsg_frame_is(m, 1, PROTO_HEARTBEAT)) {
            workslot_set_capacity(&w->held, announced_capacity(m));
        } else if (rmsg_frame_is(m, 1, PROTO_DONE)) {
            rmsg_t *body = rmsg_pop_frame_msg(m);
            rmsg_destroy(&body);
            handle_done(inf, w, m, now);
        } else {
            rlog_warn("unknown message on the work socket; dropped", "worker", w->id);
        }
        rmsg_destroy(&m);
    }
}

void heartbeat_workers(informer_t *inf, int64_t now)
{
    int64_t timeout = (int64_t)(inf->cfg->reconcile_timeout_s * 1e9);
    for (size_t i = 0; i < inf->nworkers;) {
        worker_slot_t *w = &inf->workers[i];
        int64_t silent = now - w->last_heard_ns;
        int64_t oldest = workslot_oldest(&w->held);
        /* A worker with keys may be silent while it reads or runs a Redis command (a
         * blocking step); one without is dead after PROTO_LIVENESS heartbeats. Each key
         * also has the reconcile timeout from when it was handed out: a worker that keeps
         * one longer is stuck, and all its keys go back. */
        int64_t limit = w->held.n ? timeout : (int64_t)PROTO_LIVENESS * PROTO_HEARTBEAT_MS * NS_PER_MS;
        if (silent > limit || (oldest && now - oldest > timeout)) {
            worker_lost(inf, w, w->held.n ? "reconcile timed out" : "silent", now);
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

/* The supervisor says a child exited: a worker's items come back at once. */
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
                 * crash: items it never got to go back without counting against their
                 * keys. */
                worker_release_all(inf, w, "exited", 0, now);
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

int64_t write_fence(const informer_t *inf)
{
    return inf->cfg->opts->leader_elect ? inf->valid_until_ms * NS_PER_MS : INT64_MAX;
}

/* After a reconcile of key that did not crash: turn a True ReconcileCrashed condition
 * False. */
static void crashcond_clear(informer_t *inf, const char *key)
{
    if (may_dispatch(inf))
        reporter_reconcile_completed(inf->reporter, key, write_fence(inf));
}

/* Tell the user on the object itself: a Warning Event and a ReconcileCrashed condition.
 * Both are written on the loop (no wait here); failures are logged, not retried. */
static void quarantine_report(informer_t *inf, const char *key)
{
    rlog_error("key quarantined: it crashed workers repeatedly", "key", key);
    if (may_dispatch(inf))
        reporter_quarantined(inf->reporter, key, CRASHES_TO_QUARANTINE, write_fence(inf));
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
        if (obsstore_put(inf->observations, key, text, len)) {
            rlog_warn("out of memory keeping an observation", "key", key);
            goto next;
        }
        metric_counter_add(inf->m_observations, METRIC_LABELS("stored"), 1);
        workqueue_add(inf->queue, key, now);
    next:
        json_object_put(o);
        free(key);
        rmsg_destroy(&m);
    }
}
