#include "informer.h"

#include "informer_internal.h"

#include <stddef.h>

/* ---- deltas: publish, print, enqueue ---------------------------------------------- */

static void enqueue_now(void *ud, const char *key)
{
    informer_t *inf = ud;
    workqueue_add(inf->queue, key, clock_mono_ns());
}

/* A Secret changed (added, modified, deleted, or resynced): enqueue the RedisClusters
 * whose spec.auth names it (a password rotation starts at once). */
static void secret_changed(informer_t *inf, const cache_item_t *it)
{
    size_t n = secretref_each(inf->secretrefs, it->key, enqueue_now, inf);
    if (n) {
        char count[24];
        snprintf(count, sizeof(count), "%zu", n);
        rlog_info("Secret changed: its RedisClusters enqueued", "secret", it->key, "resourceVersion",
                  it->resource_version ? it->resource_version : "", "clusters", count);
    }
}

/* Keep the Secret index (secretref.h) up to date with a RedisCluster delta. */
static void index_secretref(informer_t *inf, const cache_delta_t *d, const char *key)
{
    if (d->type == CACHE_DELETED) {
        secretref_forget(inf->secretrefs, key);
        return;
    }
    if (!strstr(d->item->json, "\"secretRef\"")) { /* most clusters: no parse */
        secretref_forget(inf->secretrefs, key);
        return;
    }
    json_object *rc = json_tokener_parse(d->item->json);
    if (secretref_set(inf->secretrefs, key, secretref_of(rc)))
        rlog_warn("cannot index the RedisCluster's Secret (out of memory)", "key", key);
    json_object_put(rc);
}

/* Every cache change: publish it, print it with --tail, and enqueue the key it concerns. */
static void on_delta(void *ud, const cache_delta_t *d)
{
    informer_t *inf = ud;
    const cache_item_t *it = d->item;
    deltapub_delta(inf->deltas, d);

    if (it->truncated && (d->type == CACHE_ADDED || d->type == CACHE_MODIFIED))
        reporter_too_large(inf->reporter, it);
    if (!strcmp(it->kind, "Secret")) {
        secret_changed(inf, it);
        return;
    }

    char key[512];
    int rc = cache_item_owner_key(inf->cache, it, key, sizeof(key));
    if (rc != 0 || !key[0])
        return;
    int64_t now = clock_mono_ns();
    if (strcmp(it->kind, OWNER_KIND) == 0) {
        index_secretref(inf, d, key);
        if (ownwrite_seen(inf->ownwrites, key, d->type == CACHE_DELETED ? NULL : it->resource_version))
            metric_counter_add(inf->m_ownwrites, METRIC_LABELS("seen"), 1);
        if (d->type == CACHE_DELETED) {
            obsstore_forget(inf->observations, key);
            return; /* gone for good: the finalizer already ran; children go with the GC */
        }
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

/* ---- metrics ------------------------------------------------------------------------- */

static void update_metrics(informer_t *inf, int64_t now)
{
    int64_t wall = clock_wall_ns();
    for (size_t i = 0; i < inf->nrefl; i++)
        reflector_update_metrics(inf->refl[i], wall);
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

/* What informerd lists and watches, a reflector each, in this order (the cache's and
 * the snapshots' order too). */
typedef struct {
    reflector_kind_t k;
    int optional; /* not part of the sync gate */
} watched_kind_t;

static const watched_kind_t watched[] = {
    {{RDC_KIND, RDC_API_GROUP, RDC_API_VERSION, RDC_RESOURCE, NULL, NULL, 0}, 0},
    {{"ConfigMap", "", "v1", "configmaps", MANAGED_BY_SELECTOR, NULL, 0}, 0},
    {{"Service", "", "v1", "services", MANAGED_BY_SELECTOR, NULL, 0}, 0},
    {{"StatefulSet", "apps", "v1", "statefulsets", MANAGED_BY_SELECTOR, NULL, 0}, 0},
    {{"PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", MANAGED_BY_SELECTOR, NULL, 0}, 0},
    /* The Redis pods, for observerd (which follows our deltas) and the workers (children
     * "Pods"): the pod template carries the managed-by label too. Kept compact. */
    {{"Pod", "", "v1", "pods", MANAGED_BY_SELECTOR, podview_compact, 0}, 0},
    /* Secrets, metadata only (PartialObjectMetadata: no data ever reaches this process),
     * so that a change of the one a RedisCluster's spec.auth names enqueues it at once
     * (secretref.h). Not part of the sync gate: it only hastens what the next reconcile
     * does anyway (workerd reads the Secret itself), and an older ClusterRole without
     * list/watch on Secrets must not stop the operator. */
    {{"Secret", "", "v1", "secrets", NULL, secretref_metadata_only, 1}, 1},
};

/* A reflector per watched kind. 0, or -1 when out of memory. */
static int reflectors_new(informer_t *inf)
{
    _Static_assert(sizeof(watched) / sizeof(watched[0]) == NREFLECTORS, "a reflector per watched kind");
    const informer_config_t *c = inf->cfg;
    reflector_config_t rc = {
        .client = c->client,
        .lc = inf->lc,
        .cache = inf->cache,
        .namespaces = &c->opts->namespaces,
        .watch_timeout_s = c->watch_timeout_s,
        .list_page_size = c->list_page_size > 0 ? c->list_page_size : INFORMER_LIST_PAGE_DEFAULT,
        .max_response_bytes = c->max_response_bytes,
    };
    for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++) {
        inf->refl[i] = reflector_new(&watched[i].k, &rc);
        if (!inf->refl[i])
            return -1;
        inf->nrefl++;
    }
    return 0;
}

/* informerd's metric families: where each goes in informer_t, counter or gauge. */
typedef struct {
    size_t field;
    int gauge;
    const char *name, *help, *labels;
} informer_metric_t;

#define INF_METRIC(member) offsetof(informer_t, member)
static const informer_metric_t informer_metrics[] = {
    {INF_METRIC(m_quarantined), 0, "informer_quarantined_keys_total",
     "Keys quarantined after crashing workers repeatedly.", ""},
    {INF_METRIC(m_observations), 0, "informer_observations_total",
     "OBSERVED messages from observerd by result (stored, unknown_key, malformed).", "result"},
    {INF_METRIC(m_ownwrites), 0, "informer_own_write_waits_total",
     "Keys awaiting the RedisCluster version their last reconcile wrote, by how the wait began or ended: awaited, "
     "cached (no wait: the cache held it when the worker said it), seen, expired (handed out after waiting in "
     "vain).", "result"},
};

static int informer_setup(informer_t *inf)
{
    inf->cache = cache_new(OWNER_KIND);
    inf->queue = workqueue_new("rediscluster", metrics_default());
    if (!inf->cache || !inf->queue)
        return -1;
    cache_set_max_object_bytes(inf->cache, inf->cfg->max_object_bytes);
    cache_set_delta_handler(inf->cache, on_delta, inf);
    inf->secretrefs = secretref_new();
    inf->observations = obsstore_new();
    inf->ownwrites = ownwrite_new(OWNWRITE_MAX_KEYS);
    if (!inf->observations || !inf->secretrefs || !inf->ownwrites || cache_set_owner_label(inf->cache, "Pod", POD_OWNER_LABEL))
        return -1;
    inf->multi = curl_multi_init();
    inf->loop = loop_new();
    if (!inf->multi || !inf->loop)
        return -1;
    inf->lc = loop_curl_new(inf->loop, inf->multi, NULL, NULL);
    if (!inf->lc || reflectors_new(inf))
        return -1;
    reporter_config_t rc = {inf->cfg->client, inf->lc, inf->cache, inf->cfg->serve};
    inf->reporter = reporter_new(&rc);
    if (!inf->reporter)
        return -1;
    metrics_registry_t *reg = metrics_default();
    for (size_t i = 0; i < sizeof(informer_metrics) / sizeof(informer_metrics[0]); i++) {
        const informer_metric_t *d = &informer_metrics[i];
        metric_family_t **f = (metric_family_t **)(void *)((char *)inf + d->field);
        *f = d->gauge ? metrics_gauge(reg, d->name, d->help, d->labels) : metrics_counter(reg, d->name, d->help, d->labels);
    }
    inf->zctx = zmq_ctx_new();
    void *pub = NULL, *snapshot = NULL;
    if (inf->cfg->serve) {
        pub = bind_socket(inf, ZMQ_PUB, PROTO_EP_DELTAS);
        snapshot = bind_socket(inf, ZMQ_ROUTER, PROTO_EP_SNAPSHOT);
    }
    int bound = !inf->cfg->serve || (pub && snapshot);
    inf->deltas = deltapub_new(inf->cache, &pub, &snapshot, inf->cfg->tail);
    if (!bound || !inf->deltas)
        return -1;
    if (inf->cfg->serve) {
        inf->work = bind_socket(inf, ZMQ_ROUTER, PROTO_EP_WORK);
        inf->observe = bind_socket(inf, ZMQ_PULL, PROTO_EP_OBSERVE);
        if (!inf->work || !inf->observe)
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
    deltapub_destroy(&inf->deltas);
    for (size_t i = 0; i < inf->nrefl; i++)
        reflector_destroy(&inf->refl[i]);
    reporter_destroy(&inf->reporter);
    loop_curl_destroy(&inf->lc);
    if (inf->multi)
        curl_multi_cleanup(inf->multi);
    loop_destroy(&inf->loop);
    void *socks[] = {inf->work, inf->leader_sub, inf->events_sub, inf->observe};
    for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++) {
        if (socks[i])
            zmq_close(socks[i]);
    }
    if (inf->zctx)
        zmq_ctx_term(inf->zctx);
    workqueue_destroy(&inf->queue);
    cache_destroy(&inf->cache);
    obsstore_destroy(&inf->observations);
    secretref_destroy(&inf->secretrefs);
    ownwrite_destroy(&inf->ownwrites);
}

/* The sync gate (syncgate.h) over the reflectors. */
static syncgate_state_t sync_state(const informer_t *inf, int64_t now, buf_t *names, buf_t *why)
{
    syncgate_kind_t kinds[NREFLECTORS];
    size_t n = 0;
    for (size_t i = 0; i < inf->nrefl; i++) {
        if (!watched[i].optional)
            kinds[n++] = reflector_sync_state(inf->refl[i]);
    }
    return syncgate_check(kinds, n, inf->started_ns, now,
                          (int64_t)(inf->cfg->cache_sync_timeout_s * 1e9), names, why);
}

static int in_flight(const informer_t *inf)
{
    for (size_t i = 0; i < inf->nworkers; i++) {
        if (inf->workers[i].held.n)
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
    q = ownwrite_next_deadline(inf->ownwrites);
    if (q > 0 && q < next)
        next = q;
    for (size_t i = 0; i < inf->nrefl; i++) {
        int64_t r = reflector_next_deadline(inf->refl[i]);
        if (r < next)
            next = r;
    }
    if (inf->stopping && inf->stop_deadline_ns < next)
        next = inf->stop_deadline_ns;
    *wait = next > now ? next - now : 0;
}

/* Relists and rewatches that are due. */
static void reflectors_step(informer_t *inf, int64_t now)
{
    for (size_t i = 0; i < inf->nrefl && !inf->stopping; i++)
        reflector_step(inf->refl[i], now);
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

/* A key held back for its own write, which did not come in time: queued again. */
static void ownwrite_due(const char *key, void *arg)
{
    informer_t *inf = arg;
    metric_counter_add(inf->m_ownwrites, METRIC_LABELS("expired"), 1);
    workqueue_add(inf->queue, key, clock_mono_ns());
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
    ownwrite_expire(inf->ownwrites, now, ownwrite_due, inf);
    /* No work before every cache synced (controller-runtime starts its workers only
     * then): a child on a page not yet listed would look absent to a worker. */
    if (inf->work && inf->ready_sent) {
        dispatch(inf, now);
        if (reporter_too_large_pending(inf->reporter) && may_dispatch(inf))
            reporter_write_too_large(inf->reporter, write_fence(inf));
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

/* Every socket informerd reads but the signal fd: the one that is ready says which
 * handler of dispatch.c reads it. */
static int on_socket(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)fd, (void)revents;
    informer_t *inf = arg;
    int64_t now = clock_mono_ns();
    if (socket == inf->work)
        handle_work_socket(inf, now);
    else if (socket == inf->observe)
        handle_observe(inf, now);
    else if (socket == inf->events_sub)
        handle_events(inf, now);
    else if (socket == inf->leader_sub)
        handle_leader(inf);
    return 0;
}

/* Every heartbeat period: the workers' liveness and HUGZ on the delta stream. */
static int on_hugz(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    informer_t *inf = arg;
    heartbeat_workers(inf, clock_mono_ns());
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
    if (inf->leader_sub && loop_add_socket(l, inf->leader_sub, LOOP_IN, on_socket, inf))
        return -1;
    if (!inf->work)
        return 0;
    if (loop_add_socket(l, inf->events_sub, LOOP_IN, on_socket, inf) ||
        loop_add_socket(l, inf->work, LOOP_IN, on_socket, inf) ||
        loop_add_socket(l, inf->observe, LOOP_IN, on_socket, inf) ||
        loop_add_timer(l, 0, beat, on_hugz, inf) < 0 || deltapub_attach(inf->deltas, l))
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
