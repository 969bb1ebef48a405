/* informer: informerd's composition root. It builds the rooms, wires them, and runs the
 * loop that drives them (informer.h says what informerd does; docs/informerd.md draws the
 * rooms and how a change travels through them):
 *
 *   reflectors --write--> cache --delta handler (on_delta)--> deltapub    (PUB, --tail)
 *                                                          \-> reporter   (ObjectTooLarge)
 *                                                          \-> dispatcher (keys, queue, workers)
 *                                                          |       \--calls--> reporter
 *                                                          \-> backupgauge (backup gauges)
 *
 * What stays here is what belongs to no room: the table of watched kinds, the sockets'
 * endpoints, the sync gate over the reflectors, the periodic resync, the signals and the
 * drain, the metrics file, and the order of setup and teardown.
 */
#include "informer.h"

#include "backupgauge.h"
#include "cache.h"
#include "clock.h"
#include "daemon.h"
#include "deltapub.h"
#include "dispatcher.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "podview.h"
#include "projection.h"
#include "proto.h"
#include "rdc_api.h"
#include "reflector.h"
#include "reporter.h"
#include "secretref.h"
#include "syncgate.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define MANAGED_BY_SELECTOR "app.kubernetes.io/managed-by=rediscluster-operator"
/* A Pod's controller is its StatefulSet; this label names its RedisCluster. */
#define POD_OWNER_LABEL "app.kubernetes.io/instance"
/* A backup Job's pod names its RedisCluster with this label (not the instance label: the
 * cluster's Services, PodDisruptionBudget and NetworkPolicy select by that one). */
#define BACKUP_POD_OWNER_LABEL "cache.example.com/backup-cluster"

/* What informerd lists and watches, a reflector each, in this order (the cache's and the
 * snapshots' order too). */
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
    /* DAY-2: the NetworkPolicies of spec.networkPolicy, for their drift. Not part of the
     * sync gate (an older ClusterRole without networkpolicies must not stop the operator;
     * a policy the cache then lacks is created again and refused AlreadyExists). */
    {{"NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies", MANAGED_BY_SELECTOR, NULL, 0}, 1},
    /* The Redis pods, for observerd (which follows our deltas) and the workers (children
     * "Pods"): the pod template carries the managed-by label too. Kept compact. */
    {{"Pod", "", "v1", "pods", MANAGED_BY_SELECTOR, podview_compact, 0}, 0},
    /* Secrets, metadata only (PartialObjectMetadata: no data ever reaches this process),
     * so that a change of the one a RedisCluster's spec.auth names enqueues it at once
     * (secretref.h). Not part of the sync gate: it only hastens what the next reconcile
     * does anyway (workerd reads the Secret itself), and an older ClusterRole without
     * list/watch on Secrets must not stop the operator. */
    {{"Secret", "", "v1", "secrets", NULL, secretref_metadata_only, 1}, 1},
    /* BACKUPS (docs/backup.md "What the operator does"): the RedisBackups (each its
     * cluster's by spec.source.cluster), the Jobs that take them (by their instance label)
     * and those Jobs' pods, for rdc-backup's line (kind BackupPod: by their
     * backup-cluster label; never among the Redis pods, which observerd probes). Not part
     * of the sync gate: an older ClusterRole without them must not stop the operator. */
    {{"RedisBackup", RDC_API_GROUP, "v1", "redisbackups", NULL, NULL, 0}, 1},
    {{"Job", "batch", "v1", "jobs", MANAGED_BY_SELECTOR, NULL, 0}, 1},
    {{"BackupPod", "", "v1", "pods", BACKUP_POD_OWNER_LABEL, NULL, 0}, 1},
};
#define NKINDS (sizeof(watched) / sizeof(watched[0]))

/* The rooms, and the little the root itself keeps. */
typedef struct {
    const informer_config_t *cfg;
    loop_t *loop;
    CURLM *multi;
    loop_curl_t *lc;            /* drives multi on loop: the LISTs, watches and writes */
    void *zctx;
    cache_t *cache;
    reflector_t *refl[NKINDS];
    size_t nrefl;
    reporter_t *reporter;       /* informerd's own writes */
    deltapub_t *deltas;         /* the delta stream, its snapshots, --tail */
    dispatcher_t *dispatcher;   /* keys, the queue, the workers */
    backupgauge_t *backups;     /* the backup gauges (docs/backup.md "Metrics") */
    int64_t started_ns;
    int ready;                  /* the sync gate opened ("caches synced"): dispatch may start */
    int64_t next_resync_ns;
    int stopping;
    int64_t stop_deadline_ns;
    int exit_code;              /* what informer_run returns once the loop ends */
    daemon_trim_t trim;         /* the heap given back when idle (daemon.h) */
    uint64_t trim_seq;          /* the cache's sequence number at the last metrics tick */
} informer_t;

/* ---- deltas: the cache's delta handler ---------------------------------------------- */

/* Every cache change: publish it (and print it with --tail), note an object kept in
 * minimal form, and let the dispatcher queue the key it concerns. */
static void on_delta(void *ud, const cache_delta_t *d)
{
    informer_t *inf = ud;
    deltapub_delta(inf->deltas, d);
    if (d->item->truncated && (d->type == CACHE_ADDED || d->type == CACHE_MODIFIED))
        reporter_too_large(inf->reporter, d->item);
    dispatcher_on_delta(inf->dispatcher, d);
    backupgauge_on_delta(inf->backups, d);
}

/* ---- setup and teardown ------------------------------------------------------------- */

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

/* A reflector per watched kind, writing to the cache. 0, or -1 when out of memory. */
static int reflectors_new(informer_t *inf)
{
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
    for (size_t i = 0; i < NKINDS; i++) {
        inf->refl[i] = reflector_new(&watched[i].k, &rc);
        if (!inf->refl[i])
            return -1;
        reflector_set_optional(inf->refl[i], watched[i].optional);
        inf->nrefl++;
    }
    return 0;
}

/* Compare each child kind by what the plans read of it (projection.h): a change of
 * anything else is published but queues nothing. 0, or -1 (a kind not watched). */
static int projections_set(informer_t *inf)
{
    for (size_t i = 0; i < NKINDS; i++) {
        const projection_t *p = projection_of(watched[i].k.kind);
        if (p && cache_set_projection(inf->cache, watched[i].k.kind, p))
            return -1;
    }
    return 0;
}

/* The sockets (when serving), the publisher and the dispatcher, which take them. 0, or -1
 * when a socket cannot be bound or memory ran out. */
static int serving_rooms_new(informer_t *inf)
{
    const informer_config_t *c = inf->cfg;
    void *pub = NULL, *snapshot = NULL;
    dispatcher_sockets_t ds = {0};
    int bound = 1;
    if (c->serve) {
        pub = bind_socket(inf, ZMQ_PUB, PROTO_EP_DELTAS);
        snapshot = bind_socket(inf, ZMQ_ROUTER, PROTO_EP_SNAPSHOT);
        ds.work = bind_socket(inf, ZMQ_ROUTER, PROTO_EP_WORK);
        ds.observe = bind_socket(inf, ZMQ_PULL, PROTO_EP_OBSERVE);
        bound = pub && snapshot && ds.work && ds.observe;
        if (bound && c->opts->leader_elect)
            ds.leader = connect_sub(inf, PROTO_EP_LEADER, PROTO_LEADER);
        if (bound)
            ds.events = connect_sub(inf, PROTO_EP_EVENTS, PROTO_EXITED);
    }
    inf->deltas = deltapub_new(inf->cache, &pub, &snapshot, c->tail);
    dispatcher_config_t dc = {inf->cache, inf->reporter, c->opts->leader_elect, c->reconcile_timeout_s,
                              (int64_t)(c->child_enqueue_delay_s * 1e9), (int64_t)(c->opts->sync_period * 1e9)};
    inf->dispatcher = dispatcher_new(&dc, &ds);
    return bound && inf->deltas && inf->dispatcher ? 0 : -1;
}

static int informer_setup(informer_t *inf)
{
    const informer_config_t *c = inf->cfg;
    inf->cache = cache_new(RDC_KIND);
    inf->loop = loop_new();
    inf->multi = curl_multi_init();
    inf->zctx = zmq_ctx_new();
    if (!inf->cache || !inf->loop || !inf->multi || !inf->zctx)
        return -1;
    cache_set_max_object_bytes(inf->cache, c->max_object_bytes);
    cache_set_delta_handler(inf->cache, on_delta, inf);
    inf->lc = loop_curl_new(inf->loop, inf->multi, NULL, NULL);
    if (!inf->lc || reflectors_new(inf) || cache_set_owner_label(inf->cache, "Pod", POD_OWNER_LABEL) ||
        cache_set_owner_label(inf->cache, "Job", POD_OWNER_LABEL) ||
        cache_set_owner_label(inf->cache, "BackupPod", BACKUP_POD_OWNER_LABEL) ||
        cache_set_owner_field(inf->cache, "RedisBackup", "spec.source.cluster") || projections_set(inf))
        return -1;
    reporter_config_t rc = {c->client, inf->lc, inf->cache, c->serve};
    inf->reporter = reporter_new(&rc);
    inf->backups = backupgauge_new(inf->cache, metrics_default());
    if (!inf->reporter || !inf->backups || serving_rooms_new(inf))
        return -1;
    int64_t now = clock_mono_ns();
    inf->started_ns = now;
    inf->next_resync_ns = now + (int64_t)(c->opts->sync_period * 1e9);
    return 0;
}

/* In the reverse order of the wiring: the rooms that hold transfers or readers go while
 * the loop and its curl multi are still there. */
static void informer_teardown(informer_t *inf)
{
    dispatcher_destroy(&inf->dispatcher);
    backupgauge_destroy(&inf->backups);
    deltapub_destroy(&inf->deltas);
    reporter_destroy(&inf->reporter);
    for (size_t i = 0; i < inf->nrefl; i++)
        reflector_destroy(&inf->refl[i]);
    loop_curl_destroy(&inf->lc);
    if (inf->multi)
        curl_multi_cleanup(inf->multi);
    loop_destroy(&inf->loop);
    if (inf->zctx)
        zmq_ctx_term(inf->zctx);
    cache_destroy(&inf->cache);
}

/* ---- every turn ------------------------------------------------------------------------ */

static void update_metrics(informer_t *inf, int64_t now)
{
    int64_t wall = clock_wall_ns();
    for (size_t i = 0; i < inf->nrefl; i++)
        reflector_update_metrics(inf->refl[i], wall);
    dispatcher_update_metrics(inf->dispatcher, now);
    backupgauge_update(inf->backups, wall / 1000000000);
    daemon_publish_metrics(inf->cfg->runtime_dir, inf->cfg->name);
}

/* The sync gate (syncgate.h) over the reflectors of the kinds it waits for. */
static syncgate_state_t sync_state(const informer_t *inf, int64_t now, buf_t *names, buf_t *why)
{
    syncgate_kind_t kinds[NKINDS];
    size_t n = 0;
    for (size_t i = 0; i < inf->nrefl; i++) {
        if (!watched[i].optional)
            kinds[n++] = reflector_sync_state(inf->refl[i]);
    }
    return syncgate_check(kinds, n, inf->started_ns, now, (int64_t)(inf->cfg->cache_sync_timeout_s * 1e9), names,
                          why);
}

/* The sync gate: readiness once every kind listed; exit (-1) at the timeout. */
static int sync_step(informer_t *inf, int64_t now)
{
    syncgate_state_t gate = inf->ready ? SYNCGATE_OPEN : sync_state(inf, now, NULL, NULL);
    if (!inf->ready && gate == SYNCGATE_OPEN) {
        char took[32];
        snprintf(took, sizeof(took), "%.3fs", (double)(clock_mono_ns() - inf->started_ns) / 1e9);
        inf->ready = 1;
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

/* Lower *wait to the next deadline the rooms keep (relists and rewatches; the queue's
 * delayed keys, quarantines and own-write waits), the resync and the drain's end. (curl's
 * timer is a loop timer of its own.) */
static void next_deadline(informer_t *inf, int64_t now, int64_t *wait)
{
    int64_t next = now + *wait;
    if (inf->ready && inf->next_resync_ns < next)
        next = inf->next_resync_ns;
    int64_t q = dispatcher_next_deadline(inf->dispatcher, now);
    if (q < next)
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

/* Every turn: relists and rewatches, the sync gate, the periodic resync, the queue's
 * delayed adds, dispatch and the Events it allows, and the end of a drain. */
static int on_turn(loop_t *loop, int64_t now, int64_t *wait, void *arg)
{
    informer_t *inf = arg;
    for (size_t i = 0; i < inf->nrefl && !inf->stopping; i++)
        reflector_step(inf->refl[i], now);
    if (sync_step(inf, now))
        return -1;
    now = clock_mono_ns();
    if (inf->ready && now >= inf->next_resync_ns) {
        /* The periodic resync: every RedisCluster goes through the queue again. */
        cache_resync(inf->cache, RDC_KIND);
        inf->next_resync_ns = now + (int64_t)(inf->cfg->opts->sync_period * 1e9);
    }
    dispatcher_advance(inf->dispatcher, now);
    /* No work before every cache synced (controller-runtime starts its workers only
     * then): a child on a page not yet listed would look absent to a worker. */
    if (inf->cfg->serve && inf->ready) {
        dispatcher_dispatch(inf->dispatcher, now);
        int64_t fence;
        if (reporter_too_large_pending(inf->reporter) && dispatcher_may_write(inf->dispatcher, &fence))
            reporter_write_too_large(inf->reporter, fence);
    }
    if (inf->stopping && (!dispatcher_in_flight(inf->dispatcher) || now >= inf->stop_deadline_ns))
        loop_stop(loop);
    next_deadline(inf, now, wait);
    return 0;
}

static int on_metrics(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    informer_t *inf = arg;
    int64_t now = clock_mono_ns();
    update_metrics(inf, now);
    /* Idle: no delta since the last tick and no key in flight. */
    uint64_t seq = cache_seq(inf->cache);
    int busy = seq != inf->trim_seq || (inf->dispatcher && dispatcher_in_flight(inf->dispatcher));
    inf->trim_seq = seq;
    daemon_trim_idle(&inf->trim, busy, now);
    return 0;
}

/* SIGTERM/SIGINT: stop dispatching and drain; a second one ends the drain at once. */
static int on_signal(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)revents;
    informer_t *inf = arg;
    int64_t now = clock_mono_ns();
    int stops = daemon_stop_requested(fd);
    if (stops && !inf->stopping) {
        rlog_info("stopping: no new work; waiting for in-flight items");
        inf->stopping = 1;
        inf->stop_deadline_ns = now + (int64_t)(inf->cfg->opts->graceful_shutdown_timeout * 1e9);
        dispatcher_drain(inf->dispatcher);
        stops--;
    }
    if (stops)
        inf->stop_deadline_ns = now;
    return 0;
}

/* Register the root's handlers, then the rooms'. 0, or -1 when out of memory. */
static int informer_handlers(informer_t *inf)
{
    loop_t *l = inf->loop;
    if (loop_add_prepare(l, on_turn, inf) || loop_add_fd(l, inf->cfg->signal_fd, LOOP_IN, on_signal, inf) ||
        loop_add_timer(l, 0, PROTO_METRICS_EVERY_MS * NS_PER_MS, on_metrics, inf) < 0)
        return -1;
    return dispatcher_attach(inf->dispatcher, l) || deltapub_attach(inf->deltas, l) ? -1 : 0;
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
