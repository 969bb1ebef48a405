#include "elector.h"

#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "election.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "proto.h"
#include "rmsg.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <zmq.h>

#define ALWAYS_VALID_MS (INT64_C(1) << 60)

typedef struct {
    const elector_config_t *cfg;
    election_t *e;
    void *zctx, *pub;
    json_object *last_read;   /* the Lease as last read, the base of our next PUT */
    metric_family_t *m_status;
    int64_t next_publish_ns;
    daemon_metrics_t metrics; /* where our metrics go */
    int code; /* the exit code elector_run returns */
} elector_t;

static void publish(elector_t *el, int64_t now)
{
    int leader = el->e ? election_may_write(el->e, now) : 1;
    int64_t valid_ms = !el->e ? ALWAYS_VALID_MS
                       : leader ? election_fence_deadline(el->e) / NS_PER_MS
                                : 0;
    metric_gauge_set(el->m_status, METRIC_LABELS(el->cfg->opts->leader_election_id), leader);
    if (!el->pub)
        return;
    rmsg_t *m = rmsg_new();
    rmsg_addstr(m, PROTO_LEADER);
    rmsg_addf(m, "%d", leader);
    rmsg_addstr(m, el->e ? election_holder(el->e) : "");
    rmsg_addf(m, "%lld", (long long)(el->e ? election_observed_transitions(el->e) : 0));
    rmsg_addf(m, "%lld", (long long)(el->e ? (leader ? election_epoch(el->e) : -1) : 0));
    rmsg_addf(m, "%lld", (long long)valid_ms);
    rmsg_send(&m, el->pub, ZMQ_DONTWAIT);
    el->next_publish_ns = now + (int64_t)(el->cfg->opts->retry_period * 1e9);
}

static void report(elector_t *el, unsigned events)
{
    char epoch[32];
    snprintf(epoch, sizeof(epoch), "%lld", (long long)election_epoch(el->e));
    if (events & ELECTION_EV_BECAME_LEADER)
        rlog_info("became leader", "lease", election_id(el->e), "identity",
                  election_identity(el->e), "epoch", epoch);
    if (events & ELECTION_EV_LOST)
        rlog_warn("stopped leading", "lease", election_id(el->e), "identity",
                  election_identity(el->e));
    if (events & ELECTION_EV_NEW_LEADER)
        rlog_info("new leader observed", "lease", election_id(el->e), "holder",
                  election_holder(el->e));
}

static void lease_path(elector_t *el, buf_t *path, int with_name)
{
    kube_path(path, "coordination.k8s.io", "v1", el->cfg->ns, "leases",
              with_name ? el->cfg->opts->leader_election_id : NULL, NULL);
}

/* Perform the write the machine asked for and report its outcome. */
static unsigned do_write(elector_t *el, election_action_t action, const election_record_t *rec)
{
    char err[512];
    json_object *body = NULL, *out = NULL;
    unsigned events = 0;
    if (election_record_to_json(rec, el->cfg->opts->leader_election_id, el->cfg->ns,
                                action == ELECTION_UPDATE ? el->last_read : NULL, &body, err,
                                sizeof(err))) {
        rlog_error("cannot build the Lease", "error", err);
        election_write_result(el->e, clock_mono_ns(), ELECTION_WRITE_ERROR, NULL, &events);
        return events;
    }
    buf_t path;
    buf_init(&path, 1024);
    lease_path(el, &path, action == ELECTION_UPDATE);
    kube_error_t kerr;
    kube_error_clear(&kerr);
    int rc = action == ELECTION_CREATE
                 ? kube_client_create(el->cfg->client, buf_str(&path), body, NULL, &out, &kerr)
                 : kube_client_update(el->cfg->client, buf_str(&path), body, NULL, &out, &kerr);
    buf_free(&path);
    json_object_put(body);
    int64_t now = clock_mono_ns();
    if (rc == 0) {
        election_record_t written;
        if (election_record_from_json(out, &written, err, sizeof(err)) == 0) {
            json_object_put(el->last_read);
            el->last_read = out;
            out = NULL;
            election_write_result(el->e, now, ELECTION_WRITE_OK, written.resource_version, &events);
        } else {
            election_write_result(el->e, now, ELECTION_WRITE_ERROR, NULL, &events);
        }
    } else {
        int conflict = kube_error_is_conflict(&kerr) || kube_error_is_already_exists(&kerr);
        if (!conflict) {
            char line[512];
            rlog_warn("Lease write failed", "error", kube_error_str(&kerr, line, sizeof(line)));
        }
        election_write_result(el->e, now,
                              conflict ? ELECTION_WRITE_CONFLICT : ELECTION_WRITE_ERROR, NULL,
                              &events);
    }
    json_object_put(out);
    return events;
}

/* One tryAcquireOrRenew. */
static void attempt(elector_t *el)
{
    int64_t now = clock_mono_ns();
    election_decision_t d;
    memset(&d, 0, sizeof(d));
    if (election_step_cached(el->e, now, clock_wall_ns(), &d) == ELECTION_NOTHING) {
        buf_t path;
        buf_init(&path, 1024);
        lease_path(el, &path, 1);
        json_object *lease = NULL;
        kube_error_t kerr;
        kube_error_clear(&kerr);
        int rc = kube_client_get(el->cfg->client, buf_str(&path), NULL, &lease, &kerr);
        buf_free(&path);
        election_record_t rec;
        const election_record_t *observed = &rec;
        memset(&rec, 0, sizeof(rec));
        char err[512];
        if (rc == 0) {
            if (election_record_from_json(lease, &rec, err, sizeof(err))) {
                rlog_warn("unreadable Lease; treated as a failed read", "error", err);
                observed = NULL;
            } else {
                json_object_put(el->last_read);
                el->last_read = json_object_get(lease);
            }
        } else if (kube_error_is_not_found(&kerr)) {
            rec.exists = 0;
        } else {
            char line[512];
            rlog_warn("cannot read the Lease", "error", kube_error_str(&kerr, line, sizeof(line)));
            observed = NULL;
        }
        json_object_put(lease);
        now = clock_mono_ns();
        if (election_step(el->e, now, clock_wall_ns(), observed, &d))
            return; /* a write is still pending: nothing to do */
    }
    unsigned events = d.events;
    if (d.action != ELECTION_WAIT)
        events |= do_write(el, d.action, &d.record);
    report(el, events);
    if (events)
        publish(el, clock_mono_ns());
}

static void release(elector_t *el)
{
    election_record_t rec;
    unsigned events = 0;
    if (election_release(el->e, clock_mono_ns(), clock_wall_ns(), &rec, &events) == 0) {
        publish(el, clock_mono_ns()); /* stop our workers first */
        events |= do_write(el, ELECTION_UPDATE, &rec);
        rlog_info("released the Lease", "lease", election_id(el->e));
    }
    report(el, events);
    publish(el, clock_mono_ns());
}

static int elector_setup(elector_t *el)
{
    const rdc_common_opts_t *o = el->cfg->opts;
    el->m_status = metrics_gauge(
        metrics_default(), "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. "
        "'name' is the string used to identify the lease.",
        "name");
    el->zctx = zmq_ctx_new();
    if (el->cfg->publish) {
        char ep[4200];
        daemon_endpoint(el->cfg->runtime_dir, PROTO_EP_LEADER, ep, sizeof(ep));
        el->pub = zmq_socket(el->zctx, ZMQ_PUB);
        int linger = 0;
        zmq_setsockopt(el->pub, ZMQ_LINGER, &linger, sizeof(linger));
        if (zmq_bind(el->pub, ep)) {
            rlog_error("cannot bind", "endpoint", ep, "error", zmq_strerror(errno));
            return -1;
        }
    }
    if (!o->leader_elect)
        return 0;
    char host[256] = "", identity[ELECTION_HOLDER_MAX], err[512];
    gethostname(host, sizeof(host) - 1);
    unsigned char rnd[16];
    uint64_t seed = 0;
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        rlog_error("getrandom failed");
        return -1;
    }
    memcpy(&seed, rnd, sizeof(seed));
    seed ^= (uint64_t)clock_mono_ns() ^ (uint64_t)getpid();
    election_make_identity(host, rnd, identity, sizeof(identity));
    election_config_t ec = {
        .id = o->leader_election_id,
        .identity = identity,
        .lease_duration_ns = (int64_t)(o->lease_duration * 1e9),
        .renew_deadline_ns = (int64_t)(o->renew_deadline * 1e9),
        .retry_period_ns = (int64_t)(o->retry_period * 1e9),
        .seed = seed,
    };
    el->e = election_new(&ec, err, sizeof(err));
    if (!el->e) {
        rlog_error("invalid leader election settings", "error", err);
        return -1;
    }
    rlog_info("campaigning", "lease", o->leader_election_id, "namespace", el->cfg->ns,
              "identity", identity);
    return 0;
}

/* Every turn: step the lease machine, publish when due, and sleep until the next of
 * the machine's wakeup and the next publish. */
static int on_turn(loop_t *loop, int64_t now, int64_t *wait, void *arg)
{
    (void)loop;
    elector_t *el = arg;
    if (el->e) {
        unsigned ev = election_tick(el->e, now);
        report(el, ev);
        if (ev)
            publish(el, now);
        if (election_attempt_due(el->e, now))
            attempt(el);
    }
    now = clock_mono_ns();
    if (now >= el->next_publish_ns)
        publish(el, now);
    int64_t next = el->next_publish_ns;
    if (el->e && election_next_wakeup(el->e) < next)
        next = election_next_wakeup(el->e);
    if (next - now < *wait)
        *wait = next > now ? next - now : 0;
    return 0;
}

/* SIGTERM/SIGINT: release the Lease (so a standby takes over at once) and stop. */
static int on_signal(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)socket, (void)revents;
    elector_t *el = arg;
    if (daemon_stop_requested(fd)) {
        if (el->e)
            release(el);
        loop_stop(loop);
    }
    return 0;
}

int elector_run(const elector_config_t *cfg)
{
    elector_t el = {.cfg = cfg, .metrics = {cfg->runtime_dir, cfg->name}};
    loop_t *loop = NULL;
    if (elector_setup(&el)) {
        el.code = 1;
        goto out;
    }
    loop = loop_new();
    if (!loop || loop_add_prepare(loop, on_turn, &el) ||
        loop_add_fd(loop, cfg->signal_fd, LOOP_IN, on_signal, &el) ||
        daemon_add_metrics_timer(loop, &el.metrics) < 0) {
        rlog_error("out of memory");
        el.code = 1;
        goto out;
    }
    daemon_notify_ready();
    if (loop_run(loop, PROTO_METRICS_EVERY_MS * NS_PER_MS)) {
        rlog_error("event loop failed", "error", loop_error(loop));
        el.code = 1;
    }
    daemon_publish_metrics(cfg->runtime_dir, cfg->name);
out:
    loop_destroy(&loop);
    election_destroy(&el.e);
    json_object_put(el.last_read);
    if (el.pub)
        zmq_close(el.pub);
    if (el.zctx)
        zmq_ctx_term(el.zctx);
    return el.code;
}
