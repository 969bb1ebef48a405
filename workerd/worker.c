#include "worker.h"

#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "keyfile.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "proto.h"
#include "reconcile.h"
#include "rmsg.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define RECONNECT_MIN_NS (INT64_C(1) * NS_PER_SEC)
#define RECONNECT_MAX_NS (INT64_C(32) * NS_PER_SEC)

typedef struct {
    const worker_config_t *cfg;
    void *ctx;
    void *dealer;
    void *leader;
    void *hint;              /* PUSH to observerd's hint.sock (proto.h HOT); NULL: none */
    /* Leadership as last published by electord. */
    int is_leader;
    int64_t leader_epoch;
    int64_t valid_until_ms;
    int64_t last_heard_ns;   /* last message from informerd */
    int64_t last_said_ns;    /* last heartbeat a long step sent (worker_keepalive) */
    int64_t reconnect_delay_ns;
    loop_t *loop;
    exec_memo_t *memo;       /* the status writes this worker made (executor.h) */
    loop_curl_t *lc;         /* the one curl multi of this process: its reads, writes and
                              * Events, over TLS one HTTP/2 connection */
    recorder_t *recorder;    /* Events, sent asynchronously on lc (recorder.h) */
    existsmemo_t *exists;    /* children a create met AlreadyExists on (existsmemo.h) */
    exec_async_t *async;     /* the writes of every key in flight (executor.h ASYNC) */
    struct item *items;      /* cfg->max_inflight places */
    int inflight;            /* keys held */
    int stopping;            /* SIGTERM: finish what is held, take nothing more */
    char hostname[256];
    daemon_metrics_t metrics; /* where our metrics go */
    daemon_trim_t trim;       /* the heap given back when idle (daemon.h) */
} worker_t;

/* One key in flight: the work item and its reconcile, running on the loop. */
typedef struct item {
    worker_t *w;
    int used;
    char *key;
    int64_t taken_ms;           /* when it came (wall clock, for `supervisor ctl status`) */
    int64_t epoch;              /* the leadership epoch it was dispatched under */
    int64_t valid_until_ms;     /* its lease (CLOCK_MONOTONIC ms): no write after it; 0 none */
    json_object *rc, *children; /* the work item's objects (the reconcile borrows them) */
    reconcile_job_t *job;       /* its reconcile, on the loop */
    exec_ctx_t x;
    char rid[37];
} item_t;

/* The keys in flight and when each came (common/keyfile.h; "" when none), for
 * `supervisor ctl status`. */
static void worker_state_file(worker_t *w)
{
    char path[4200];
    buf_t b;
    buf_init(&b, 0);
    for (int i = 0; w->items && i < w->cfg->max_inflight; i++)
        if (w->items[i].used)
            keyfile_append(&b, w->items[i].key, w->items[i].taken_ms);
    snprintf(path, sizeof(path), "%s/metrics/%s.key", w->cfg->runtime_dir, w->cfg->name);
    daemon_write_file_atomic(path, b.len ? buf_str(&b) : "", b.len);
    buf_free(&b);
}

/* READY or HEARTBEAT with the number of keys this worker takes at once. */
static void worker_say(worker_t *w, const char *what)
{
    rmsg_t *m = rmsg_new();
    rmsg_addstr(m, what);
    rmsg_addf(m, "%d", w->cfg->max_inflight);
    rmsg_send(&m, w->dealer, ZMQ_DONTWAIT);
}

static int on_dealer(loop_t *loop, void *socket, int fd, int revents, void *arg);
static void worker_keepalive(void *arg);

/* Open the DEALER, watch it, and say READY. Returns 0 or -1. */
static int worker_connect(worker_t *w)
{
    w->dealer = zmq_socket(w->ctx, ZMQ_DEALER);
    if (!w->dealer)
        return -1;
    char id[32];
    int idlen = snprintf(id, sizeof(id), "w-%d", (int)getpid());
    int linger = 0;
    zmq_setsockopt(w->dealer, ZMQ_ROUTING_ID, id, (size_t)idlen);
    zmq_setsockopt(w->dealer, ZMQ_LINGER, &linger, sizeof(linger));
    if (zmq_connect(w->dealer, w->cfg->work_endpoint)) {
        rlog_error("cannot connect to informerd", "endpoint", w->cfg->work_endpoint, "error",
                   zmq_strerror(errno));
        return -1;
    }
    if (loop_add_socket(w->loop, w->dealer, LOOP_IN, on_dealer, w))
        return -1;
    worker_say(w, PROTO_READY);
    return 0;
}

static void worker_disconnect(worker_t *w, int flush)
{
    if (w->dealer) {
        if (w->loop)
            loop_remove_socket(w->loop, w->dealer);
        /* On the way out, give a DONE just sent a moment to reach informerd. */
        int linger = flush ? 1000 : 0;
        zmq_setsockopt(w->dealer, ZMQ_LINGER, &linger, sizeof(linger));
        zmq_close(w->dealer);
        w->dealer = NULL;
    }
}

/* Apply every LEADER message waiting on the subscription. */
static void drain_leader(worker_t *w)
{
    if (!w->leader)
        return;
    rmsg_t *m;
    while ((m = rmsg_recv(w->leader, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096)) != NULL) {
        int64_t is_leader, transitions, epoch, valid;
        if (rmsg_frame_is(m, 0, PROTO_LEADER) && rmsg_frame_int64(m, 1, &is_leader) == 0 &&
            rmsg_frame_int64(m, 3, &transitions) == 0 && rmsg_frame_int64(m, 4, &epoch) == 0 &&
            rmsg_frame_int64(m, 5, &valid) == 0) {
            w->is_leader = is_leader != 0;
            w->leader_epoch = epoch;
            w->valid_until_ms = valid;
        } else {
            proto_error("leader", "not a LEADER message with numeric frames 1, 3, 4 and 5");
        }
        rmsg_destroy(&m);
    }
}

/* The fence: may this worker write for this item now? Only within the item's lease
 * (informerd may hand the key to another worker after it: a worker stopped or stuck
 * longer than that must not carry on, invariant 1) and, with leader election, while this
 * replica leads under the item's epoch. */
static int worker_may_write(void *user)
{
    item_t *it = user;
    worker_t *w = it->w;
    int64_t now_ms = clock_mono_ns() / NS_PER_MS, until = it->valid_until_ms;
    if (until && now_ms >= until)
        return 0;
    if (w->leader) {
        drain_leader(w);
        if (!w->is_leader || w->leader_epoch != it->epoch || now_ms >= w->valid_until_ms)
            return 0;
        if (!until || w->valid_until_ms < until)
            until = w->valid_until_ms;
    }
    /* The write that follows must also end before then: a request still in flight at the
     * fence must not land after someone else leads, or holds the key. */
    if (until)
        kube_client_set_deadline(w->cfg->client, until * NS_PER_MS);
    return 1;
}

static json_object *child_of(json_object *children, const char *kind)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(children, kind, &v) || !json_object_is_type(v, json_type_object))
        return NULL;
    return v;
}

/* children[key] as an array, or NULL. */
static json_object *array_of(json_object *children, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(children, key, &v) || !json_object_is_type(v, json_type_array))
        return NULL;
    return v;
}

/* Tell observerd how closely to watch key now (hothint.h), when there is something to
 * say. observerd not taking it (not running, its queue full): dropped, the cadence stays
 * as it was and a hot one runs out by itself. */
static void worker_hint(worker_t *w, const char *key, hothint_t hint)
{
    if (!w->hint || !key || hint == HOTHINT_NONE)
        return;
    rmsg_t *m = proto_hot_new(key, hint == HOTHINT_HOT ? HOTHINT_MS : 0);
    (void)rmsg_send(&m, w->hint, ZMQ_DONTWAIT);
    rmsg_destroy(&m);
}

/* DONE's frame of the children a quiet reconcile wrote (proto.h PROTO_DONE_CHILDREN). */
static void done_add_children(rmsg_t *done, const reconcile_outcome_t *out)
{
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, PROTO_DONE_CHILDREN "\n");
    for (size_t i = 0; i < out->n_child_written; i++)
        buf_printf(&b, "%s %s %s\n", out->child_written[i].kind, out->child_written[i].name,
                   out->child_written[i].rv);
    rmsg_addmem(done, buf_str(&b), b.len);
    buf_free(&b);
}

/* Answer DONE for key (which also frees its place at informerd). */
static void worker_done(worker_t *w, const char *key, const reconcile_outcome_t *out)
{
    worker_hint(w, key, out->hint);
    rmsg_t *done = rmsg_new();
    rmsg_addstr(done, PROTO_DONE);
    rmsg_addstr(done, key ? key : "");
    rmsg_addstr(done, reconcile_result_name(out->result));
    rmsg_addf(done, "%lld", (long long)(out->requeue_after_ns / NS_PER_MS));
    int kids = out->rc_write_quiet && out->n_child_written;
    if (out->rc_written_rv[0] || kids) {
        rmsg_addstr(done, out->rc_written_rv); /* "": only children written */
        rmsg_addstr(done, out->rc_write_quiet ? "quiet" : "act");
        for (size_t i = 0; out->rc_write_quiet && i < EXEC_RC_EARLIER_MAX && out->rc_earlier_rv[i][0]; i++)
            rmsg_addstr(done, out->rc_earlier_rv[i]);
    }
    if (kids)
        done_add_children(done, out);
    if (w->dealer)
        rmsg_send(&done, w->dealer, ZMQ_DONTWAIT);
    rmsg_destroy(&done);
}

/* The item's reconcile ended with out: answer, free the place. */
static void item_finish(item_t *it, const reconcile_outcome_t *out)
{
    worker_t *w = it->w;
    worker_done(w, it->key, out);
    json_object_put(it->rc);
    json_object_put(it->children);
    free(it->key);
    memset(it, 0, sizeof(*it));
    it->w = w;
    w->inflight--;
    worker_state_file(w);
    if (!w->inflight) {
        kube_client_set_deadline(w->cfg->client, 0);
        if (w->stopping) {
            rlog_info("stopping: no item in flight");
            loop_stop(w->loop);
        }
    }
}

static void on_reconciled(const reconcile_outcome_t *out, void *arg)
{
    item_t *it = arg;
    it->job = NULL;
    item_finish(it, out);
}

/* Take one WORK item: its reconcile starts on the loop (reads, plan, writes), and the
 * DONE goes when it ends. An item that cannot be taken is answered at once. */
static void worker_handle_work(worker_t *w, rmsg_t *m)
{
    reconcile_outcome_t out = {.result = RECONCILE_ERROR};
    item_t *it = NULL;
    for (int i = 0; i < w->cfg->max_inflight && !it; i++)
        if (!w->items[i].used)
            it = &w->items[i];
    char *key = rmsg_strdup(m, 1);
    int64_t epoch = 0, generation = 0;
    size_t rclen = 0, chlen = 0;
    const char *rctext = rmsg_frame(m, 4, &rclen);
    const char *chtext = rmsg_frame(m, 5, &chlen);
    if (!key || rmsg_frame_int64(m, 2, &epoch) || rmsg_frame_int64(m, 3, &generation) || !rctext || !chtext) {
        proto_error("work", "WORK without key, numeric epoch and generation, or objects");
        goto answer;
    }
    if (!it || w->stopping) {
        /* more than we said we take (informerd holds it for us all the same), or we are
         * stopping: hand it back, no failure counted */
        rlog_warn(w->stopping ? "stopping: item handed back" : "no place for another item; handed back", "key", key);
        out.result = RECONCILE_FENCED;
        goto answer;
    }
    it->used = 1;
    it->key = key;
    it->taken_ms = clock_wall_ns() / NS_PER_MS;
    key = NULL;
    it->epoch = epoch;
    it->valid_until_ms = 0;
    if (rmsg_frame_int64(m, 6, &it->valid_until_ms)) /* none: no lease (an older informerd) */
        it->valid_until_ms = 0;
    it->rc = json_tokener_parse(rctext);
    it->children = json_tokener_parse(chtext);
    w->inflight++;
    worker_state_file(w);
    if (!it->rc || !json_object_is_type(it->rc, json_type_object)) {
        rlog_error("WORK item without a RedisCluster object", "key", it->key);
        out.result = RECONCILE_DONE;
        item_finish(it, &out);
        return;
    }
    reconcile_new_id(it->rid);
    it->x = (exec_ctx_t){.client = w->cfg->client,
                         .memo = w->memo,
                         .fence = worker_may_write,
                         .fence_user = it,
                         .keepalive = worker_keepalive,
                         .keepalive_user = w,
                         .reconcile_id = it->rid,
                         .instance = w->hostname,
                         .recorder = w->recorder,
                         .exists = w->exists,
                         .event_deadline_ns = w->leader ? w->valid_until_ms * NS_PER_MS : 0};
    json_object *children = it->children;
    plan_children_t kids = {child_of(children, "ConfigMap"), child_of(children, "Service"),
                            child_of(children, "StatefulSet"), child_of(children, "PodDisruptionBudget")};
    /* The rest of the work item (workitem.h): pods, observation, role Services. */
    plan_observed_t seen = {.members = array_of(children, "Pods"),
                            .redis = child_of(children, "Redis"),
                            .primary_service = child_of(children, "ServicePrimary"),
                            .replicas_service = child_of(children, "ServiceReplicas"),
                            .network_policy = child_of(children, "NetworkPolicy"),
                            .operator_namespace = w->cfg->operator_namespace,
                            .operator_image = w->cfg->operator_image,
                            .shard_statefulsets = array_of(children, "ShardStatefulSets"),
                            .shard_budgets = array_of(children, "ShardBudgets"),
                            .backups = array_of(children, "RedisBackups"),
                            .jobs = array_of(children, "Jobs"),
                            .backup_pods = array_of(children, "BackupPods")};
    it->job = reconcile_start(w->async, &it->x, it->rc, &kids, &seen, NULL, on_reconciled, it);
    if (!it->job) {
        snprintf(out.message, sizeof(out.message), "out of memory");
        item_finish(it, &out);
    }
    return;
answer:
    worker_done(w, key, &out);
    free(key);
}

/* Drop every item in flight without answering (their writes may be half made; the next
 * reconcile of each key plans from what is there). On a lost link: informerd gives the
 * keys back when it sees this worker again (READY), and may hand them to another worker,
 * which must not find this one still writing (invariant 1). */
static void worker_abandon_all(worker_t *w)
{
    for (int i = 0; i < w->cfg->max_inflight; i++) {
        item_t *it = &w->items[i];
        if (!it->used)
            continue;
        rlog_warn("item abandoned with the link to informerd", "key", it->key);
        reconcile_cancel(&it->job);
        json_object_put(it->rc);
        json_object_put(it->children);
        free(it->key);
        memset(it, 0, sizeof(*it));
        it->w = w;
    }
    w->inflight = 0;
    worker_state_file(w);
    kube_client_set_deadline(w->cfg->client, 0);
    if (w->stopping)
        loop_stop(w->loop);
}

static int on_reconnect(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    worker_t *w = arg;
    if (worker_connect(w))
        worker_disconnect(w, 0);
    w->last_heard_ns = clock_mono_ns();
    return 0;
}

/* A long synchronous step of the executor (a slot move) holds the loop: tell informerd we
 * live, at most once a heartbeat period, and do not count the time we could not listen
 * as its silence (its messages wait on the socket). The lease of each item (its fence)
 * still bounds what the step may write. */
static void worker_keepalive(void *arg)
{
    worker_t *w = arg;
    int64_t now = clock_mono_ns();
    if (!w->dealer || now - w->last_said_ns < (int64_t)PROTO_HEARTBEAT_MS * NS_PER_MS)
        return;
    worker_say(w, PROTO_HEARTBEAT);
    w->last_said_ns = now;
    w->last_heard_ns = now;
}

/* Every heartbeat period: tell informerd we live; if it has been silent for
 * PROTO_LIVENESS periods, drop the link and reconnect after a doubling delay (Paranoid
 * Pirate). */
static int on_heartbeat(loop_t *loop, int id, void *arg)
{
    (void)id;
    worker_t *w = arg;
    int64_t now = clock_mono_ns();
    daemon_trim_idle(&w->trim, w->inflight > 0, now);
    if (!w->dealer)
        return 0; /* a reconnect is scheduled */
    if (now - w->last_heard_ns > (int64_t)PROTO_LIVENESS * PROTO_HEARTBEAT_MS * NS_PER_MS) {
        char d[16];
        snprintf(d, sizeof(d), "%llds", (long long)(w->reconnect_delay_ns / NS_PER_SEC));
        rlog_warn("informerd is silent; reconnecting", "after", d);
        worker_abandon_all(w);
        worker_disconnect(w, 0);
        if (loop_add_timer(loop, w->reconnect_delay_ns, 0, on_reconnect, w) < 0)
            return -1;
        w->reconnect_delay_ns *= 2;
        if (w->reconnect_delay_ns > RECONNECT_MAX_NS)
            w->reconnect_delay_ns = RECONNECT_MAX_NS;
        return 0;
    }
    worker_say(w, PROTO_HEARTBEAT);
    return 0;
}

/* Messages from informerd: WORK items (up to cfg->max_inflight in flight) and
 * heartbeats. */
static int on_dealer(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    worker_t *w = arg;
    rmsg_t *m;
    while (w->dealer &&
           (m = rmsg_recv(w->dealer, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, PROTO_MAX_BYTES))) {
        w->last_heard_ns = clock_mono_ns();
        w->reconnect_delay_ns = RECONNECT_MIN_NS;
        if (rmsg_frame_is(m, 0, PROTO_WORK)) {
            worker_handle_work(w, m);
            /* One item per turn of the loop: the next WORK waits on the socket (zmq_poll
             * reports it at once) while the loop lets the requests the item started go
             * out. */
            rmsg_destroy(&m);
            break;
        } else if (!rmsg_frame_is(m, 0, PROTO_HEARTBEAT)) {
            proto_error("work", "unknown message from informerd");
        }
        rmsg_destroy(&m);
    }
    return 0;
}

static int on_leader(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    drain_leader(arg);
    return 0;
}

/* SIGTERM/SIGINT: finish the items in flight (the supervisor's grace period bounds it),
 * hand back any that arrives meanwhile, then stop. */
static int on_signal(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)socket, (void)revents;
    worker_t *w = arg;
    if (daemon_stop_requested(fd)) {
        w->stopping = 1;
        if (!w->inflight) {
            rlog_info("stopping: no item in flight");
            loop_stop(loop);
        } else {
            char n[16];
            snprintf(n, sizeof(n), "%d", w->inflight);
            rlog_info("stopping once the items in flight are done", "items", n);
        }
    }
    return 0;
}

/* The hint socket (proto.h HOT): messages are queued only to a connected observerd
 * (ZMQ_IMMEDIATE), at most a few hundred, never kept at exit. Without a runtime dir, or
 * when the socket cannot be made, no hints: observerd probes every second. */
static void worker_hint_connect(worker_t *w)
{
    char ep[4200];
    int linger = 0, immediate = 1, hwm = 256;
    if (!w->cfg->runtime_dir || !(w->hint = zmq_socket(w->ctx, ZMQ_PUSH)))
        return;
    zmq_setsockopt(w->hint, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_setsockopt(w->hint, ZMQ_IMMEDIATE, &immediate, sizeof(immediate));
    zmq_setsockopt(w->hint, ZMQ_SNDHWM, &hwm, sizeof(hwm));
    if (zmq_connect(w->hint, daemon_endpoint(w->cfg->runtime_dir, PROTO_EP_HINT, ep, sizeof(ep)))) {
        zmq_close(w->hint);
        w->hint = NULL;
    }
}

int worker_run(const worker_config_t *cfg)
{
    worker_t w = {.cfg = cfg, .metrics = {cfg->runtime_dir, cfg->name}};
    int rc = 0;
    w.memo = exec_memo_new(); /* without it (out of memory) stale retries may write again */
    w.exists = existsmemo_new(0); /* without it every absent child is read, as --once does */
    gethostname(w.hostname, sizeof(w.hostname) - 1);
    w.ctx = zmq_ctx_new();
    w.loop = loop_new();
    if (!w.ctx || !w.loop ||
        loop_add_fd(w.loop, cfg->signal_fd, LOOP_IN, on_signal, &w) ||
        loop_add_timer(w.loop, PROTO_HEARTBEAT_MS * NS_PER_MS, PROTO_HEARTBEAT_MS * NS_PER_MS,
                       on_heartbeat, &w) < 0 ||
        daemon_add_metrics_timer(w.loop, &w.metrics) < 0 ||
        (w.lc = loop_curl_open(w.loop)) == NULL ||
        (w.recorder = recorder_new(cfg->events_client ? cfg->events_client : cfg->client, w.lc, NULL)) == NULL ||
        (w.async = exec_async_new(w.loop, w.lc)) == NULL ||
        (w.items = calloc((size_t)cfg->max_inflight, sizeof(item_t))) == NULL) {
        rlog_error("out of memory");
        rc = 1;
        goto out;
    }
    if (cfg->leader_endpoint) {
        w.leader = zmq_socket(w.ctx, ZMQ_SUB);
        int linger = 0;
        zmq_setsockopt(w.leader, ZMQ_LINGER, &linger, sizeof(linger));
        zmq_setsockopt(w.leader, ZMQ_SUBSCRIBE, PROTO_LEADER, strlen(PROTO_LEADER));
        zmq_connect(w.leader, cfg->leader_endpoint);
        if (loop_add_socket(w.loop, w.leader, LOOP_IN, on_leader, &w)) {
            rc = 1;
            goto out;
        }
    }
    worker_hint_connect(&w);
    w.reconnect_delay_ns = RECONNECT_MIN_NS;
    if (worker_connect(&w)) {
        worker_disconnect(&w, 0);
        if (loop_add_timer(w.loop, w.reconnect_delay_ns, 0, on_reconnect, &w) < 0) {
            rc = 1;
            goto out;
        }
    }
    for (int i = 0; i < cfg->max_inflight; i++)
        w.items[i].w = &w;
    w.last_heard_ns = clock_mono_ns();
    daemon_notify_ready();
    worker_state_file(&w);
    if (loop_run(w.loop, PROTO_HEARTBEAT_MS * NS_PER_MS)) {
        rlog_error("event loop failed", "error", loop_error(w.loop));
        rc = 1;
    }
    /* Events still queued get a bounded moment to go out. */
    for (int i = 0; w.recorder && recorder_pending(w.recorder) && i < 40; i++)
        loop_run_once(w.loop, 50 * NS_PER_MS);
out:
    /* Items still in flight (a failed loop): abandoned; informerd gives them back when
     * this process exits. */
    for (int i = 0; w.items && i < cfg->max_inflight; i++) {
        reconcile_cancel(&w.items[i].job);
        json_object_put(w.items[i].rc);
        json_object_put(w.items[i].children);
        free(w.items[i].key);
    }
    free(w.items);
    exec_async_destroy(&w.async);
    recorder_destroy(&w.recorder);
    loop_curl_destroy(&w.lc);
    worker_disconnect(&w, 1);
    if (w.leader)
        zmq_close(w.leader);
    if (w.hint)
        zmq_close(w.hint);
    loop_destroy(&w.loop);
    if (w.ctx)
        zmq_ctx_term(w.ctx);
    exec_memo_destroy(&w.memo);
    existsmemo_destroy(&w.exists);
    return rc;
}
