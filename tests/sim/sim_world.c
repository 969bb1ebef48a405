/* sim_world: the failover simulation. See sim_world.h and docs/simulation.md. */
#include "sim_world.h"

#include "buf.h"
#include "clock.h"
#include "jsonx.h"
#include "obsdiff.h"
#include "plan.h"
#include "proto.h"
#include "redisexec.h"
#include "redisinfo.h"
#include "render.h"
#include "sim_redis.h"
#include "topology.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define NAME "cache"
#define RING 256                 /* steps of pod history the caches can lag behind */
#define VERS 64                  /* RedisCluster versions kept for the cache */
#define PARCELS 64               /* observations on their way to informerd */
#define WALL0_NS (INT64_C(1714564800) * 1000000000) /* 2024-05-01T12:00:00Z */
#define TICK_NS ((int64_t)SR_TICK_MS * 1000000)
#define PROBE_TICKS 10           /* observerd probes each pod every second */
#define CLIENT_TIMEOUT_TICKS 10  /* the client gives a command 1 s */
#define OWNWRITE_TICKS 20        /* OWNWRITE_WAIT_NS */
#define TAKE_BACK_TICKS 1200     /* informerd takes a silent worker's item back after its
                                    reconcile timeout (--reconcile-timeout, 120 s) */
#define LEASE_TICKS (TAKE_BACK_TICKS - PROTO_LEASE_MARGIN_MS / SR_TICK_MS) /* the item's lease */
#define PRESTOP_TICKS 150        /* the preStop hook waits at most 15 s */
#define PRESTOP_QUIET_TICKS 20   /* ... a pod it saw a master, until no replica for 2 s */
#define GRACE_TICKS 300          /* then SIGKILL at the grace period's end (30 s) */
#define CAUGHT_UP_WRITES 20      /* a replica this close to its master is caught up */
#define BACKOFF_CAP_NS (INT64_C(1000) * 1000000000)

enum { LBL_NONE = 0, LBL_PRIMARY, LBL_REPLICA };
enum { EXEC_DONE = 0, EXEC_409, EXEC_FAIL };
enum { CLIENT_IDLE = 0, CLIENT_SENT, CLIENT_WAITING };

typedef struct {
    int present, uid, ip, revision, label, terminating, ready, stopping;
    int hook_master, hook_quiet; /* the preStop hook saw it a master; its polls with no replica in a row */
    int64_t deleted_at; /* terminating since */
    int64_t start_at;   /* its container (Redis) starts then; -1 none */
    int64_t ready_at;   /* Ready turns True then; -1 none */
    int64_t unready_at; /* Ready turns False then (a frozen server failing its probe); -1 none */
    int64_t restart_at; /* the kubelet restarts the killed container then; -1 none */
    int64_t kill_at;    /* the grace period ends for a pod that did not stop; -1 none */
} pod_t;

typedef struct {
    int ip;
    int64_t probes;
    int reachable, ever_answered;
    redisinfo_t info;
    int64_t last_ok, down_since; /* ticks; -1 none */
    int64_t last_probe;          /* tick of the last probe; -1 none */
} probe_t;

typedef struct {
    int64_t at;
    json_object *obs;
} parcel_t;

struct sim {
    sim_cfg_t cfg;
    sim_rng_t rng;
    int64_t tick, tail_start;
    int size, done;
    sr_cluster_t redis;
    /* the pods, and what the kubelet and the StatefulSet controller do next */
    pod_t pod[SR_MAX_NODES];
    int wiped[SR_MAX_NODES], reuse_ip[SR_MAX_NODES];
    int64_t create_at[SR_MAX_NODES];
    int64_t thaw_at[SR_MAX_NODES], isolated_until[SR_MAX_NODES], cut_until[SR_MAX_NODES];
    int next_uid, next_ip, revision;
    int64_t pod_version;
    /* the API server */
    json_object *rc;
    int64_t rv;
    json_object *ver[VERS];
    int64_t ver_tick[VERS], ver_rv[VERS], nver;
    json_object *cm, *svc, *sts, *pdb, *svc_primary, *svc_replicas;
    /* informerd */
    pod_t ring[RING][SR_MAX_NODES];
    int64_t ring_version[RING];
    int64_t pods_cached, rc_cached, pods_stall_until, rc_stall_until, seen_pod_version, seen_rv;
    json_object *obs;
    parcel_t parcel[PARCELS];
    int nparcels;
    int dirty, fails;
    int64_t requeue_at, own_rv, own_until;
    int64_t worker_down_until, operator_down_until, observer_down_until;
    int crash_armed, stale_armed;
    plan_t *paused;
    size_t paused_next;
    int64_t paused_resume, paused_lease, held_until;
    /* observerd */
    probe_t probe[SR_MAX_NODES];
    int phase[SR_MAX_NODES];
    obs_node_t sent[SR_MAX_NODES];
    size_t nsent;
    int ever_sent;
    int64_t last_sent;
    int64_t cmd_seen_ns, cmd_sent_ns; /* status.lastRedisCommandTime as observerd last saw it; the
                                         one the last observation sent was wholly probed after
                                         (0: it was not) */
    /* the client */
    int conn_ip, cstate;
    sr_write_t cw, last_acked;
    int64_t csent;
    /* faults */
    int64_t fault_at; /* the step the fault being recovered from began; -1 none */
    int ever_converged;
    sim_result_t res;
};

static const char *const fault_names[SIM_F_COUNT] = {
    "kill",         "freeze",           "isolate",          "obs-cut",          "lose-pod",
    "delete-pod",   "delete-primary",   "primary-obs-cut",  "rollout",          "worker-crash",
    "operator-restart", "operator-outage", "observer-restart", "watch-stall",    "informer-restart",
    "stale-plan"};

const char *sim_fault_name(sim_fault_t f)
{
    return f < SIM_F_COUNT ? fault_names[f] : "?";
}

/* ---- the event log: a digest of every event, a line each when tracing --------------- */

static void mix(sim_t *s, uint64_t v)
{
    s->res.digest = (s->res.digest ^ v) * UINT64_C(0x100000001b3);
}

static void note(sim_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(sim_t *s, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    mix(s, (uint64_t)s->tick);
    for (const char *p = line; *p; p++)
        mix(s, (unsigned char)*p);
    if (s->cfg.trace)
        fprintf(s->cfg.trace, "%8lld %s\n", (long long)s->tick, line);
}

static void fail(sim_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(sim_t *s, const char *fmt, ...)
{
    if (s->res.failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->res.why, sizeof(s->res.why), fmt, ap);
    va_end(ap);
    s->res.failed = 1;
    s->res.step = s->tick;
    s->done = 1;
    note(s, "INVARIANT BROKEN: %s", s->res.why);
}

static int64_t wall(const sim_t *s)
{
    return WALL0_NS + s->tick * TICK_NS;
}

static void pod_name(int i, char *out, size_t cap)
{
    snprintf(out, cap, NAME "-%d", i);
}

/* The ordinal of pod name, or -1. */
static int ordinal(const sim_t *s, const char *name)
{
    size_t l = strlen(NAME);
    if (!name || strncmp(name, NAME "-", l + 1))
        return -1;
    char *end = NULL;
    long v = strtol(name + l + 1, &end, 10);
    return *end || v < 0 || v >= s->size ? -1 : (int)v;
}

static const char *ipstr(int ip, char *buf, size_t cap)
{
    sr_ip_str(ip, buf, cap);
    return buf;
}

/* ---- the API server: the RedisCluster and its versions -------------------------------- */

static void rc_store(sim_t *s)
{
    s->rv++;
    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", (long long)s->rv);
    json_object_object_add(jsonx_get(s->rc, "metadata"), "resourceVersion", json_object_new_string(rv));
    int64_t k = s->nver % VERS;
    json_object_put(s->ver[k]);
    s->ver[k] = NULL;
    json_object_deep_copy(s->rc, &s->ver[k], NULL);
    s->ver_tick[k] = s->tick;
    s->ver_rv[k] = s->rv;
    s->nver++;
}

/* The newest version the cache holds: written at or before rc_cached (the oldest one
 * kept when the cache is further behind than VERS writes). */
static const json_object *rc_cached(const sim_t *s, int64_t *rv)
{
    int64_t oldest = s->nver > VERS ? s->nver - VERS : 0, v = s->nver - 1;
    while (v > oldest && s->ver_tick[v % VERS] > s->rc_cached)
        v--;
    *rv = s->ver_rv[v % VERS];
    return s->ver[v % VERS];
}

/* 1 when the resourceVersion precondition of body (if any) fails. */
static int stale_precondition(const sim_t *s, const json_object *body)
{
    const char *pre = JSONX_STR_AT(body, "metadata", "resourceVersion");
    return pre && strtoll(pre, NULL, 10) != s->rv;
}

static const char *status_str(const sim_t *s, const char *key)
{
    return JSONX_STR_AT(s->rc, "status", key);
}

/* The status of condition type in the stored RedisCluster, or NULL. */
static const char *condition(const sim_t *s, const char *type, const char **reason)
{
    const json_object *list = JSONX_AT(s->rc, "status", "conditions");
    size_t n = list && json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        const json_object *c = json_object_array_get_idx(list, i);
        const char *t = JSONX_STR_AT(c, "type");
        if (t && !strcmp(t, type)) {
            *reason = JSONX_STR_AT(c, "reason");
            return JSONX_STR_AT(c, "status");
        }
    }
    *reason = NULL;
    return NULL;
}

/* ---- pods, the kubelet, the StatefulSet controller ------------------------------------ */

static void pod_changed(sim_t *s)
{
    s->pod_version++;
}

/* min-replicas-to-write and -max-lag as the ConfigMap's redis.conf says (what a starting
 * container reads). */
static void conf_min_replicas(const sim_t *s, int *min, int *lag)
{
    const char *conf = JSONX_STR_AT(s->cm, "data", RENDER_CONFIG_KEY);
    const char *m = conf ? strstr(conf, "min-replicas-to-write ") : NULL;
    const char *l = conf ? strstr(conf, "min-replicas-max-lag ") : NULL;
    *min = m ? (int)strtol(m + strlen("min-replicas-to-write "), NULL, 10) : 0;
    *lag = l ? (int)strtol(l + strlen("min-replicas-max-lag "), NULL, 10) : 10;
}

static void container_start(sim_t *s, int i)
{
    pod_t *p = &s->pod[i];
    int min, lag;
    conf_min_replicas(s, &min, &lag);
    sr_start(&s->redis, i, p->ip, !s->wiped[i], min, lag, s->tick);
    note(s, "%s-%d: redis-server started at %s%s (min-replicas-to-write %d)", NAME, i,
         ipstr(p->ip, (char[32]){0}, 32), s->wiped[i] ? " empty" : " with its data", min);
    s->wiped[i] = 0;
    p->start_at = -1;
    p->ready_at = s->tick + sim_rng_range(&s->rng, 50, 100);
}

/* The pod of ordinal i is gone; the StatefulSet controller makes it again later. */
static void pod_gone(sim_t *s, int i, int64_t after)
{
    pod_t *p = &s->pod[i];
    if (s->redis.n[i].running)
        sr_stop(&s->redis, i);
    note(s, "%s-%d: pod gone (uid-%d)", NAME, i, p->uid);
    p->present = 0;
    s->create_at[i] = s->tick + after;
    pod_changed(s);
}

/* 1 when a replica is connected to server i (what the preStop hook waits on). */
static int has_replica(const sim_t *s, int i)
{
    for (int k = 0; k < s->size; k++) {
        const sr_node_t *r = &s->redis.n[k];
        if (k != i && r->running && r->role == SR_REPLICA && r->master_ip == s->redis.n[i].ip &&
            (r->link_up || r->syncing) && !r->isolated && !s->redis.n[i].isolated)
            return 1;
    }
    return 0;
}

/* A terminating pod: the preStop hook (render.h) polls every 100 ms, up to 15 s, while a
 * replica is connected, and, once it saw the pod a master, until none has been for 2 s;
 * then Redis is stopped (SIGTERM; a frozen one only by the SIGKILL at the grace
 * period's end). */
static void terminating_step(sim_t *s, int i)
{
    pod_t *p = &s->pod[i];
    const sr_node_t *n = &s->redis.n[i];
    if (!p->stopping) {
        int answers = n->running && !n->frozen;
        if (answers && s->tick - p->deleted_at < PRESTOP_TICKS) {
            p->hook_master |= n->role == SR_MASTER;
            p->hook_quiet = has_replica(s, i) ? 0 : p->hook_quiet + 1;
            if (!p->hook_quiet || (p->hook_master && p->hook_quiet < PRESTOP_QUIET_TICKS))
                return;
        }
        p->stopping = 1;
        p->kill_at = p->deleted_at + GRACE_TICKS;
    }
    if (!n->running || !n->frozen || s->tick >= p->kill_at)
        pod_gone(s, i, sim_rng_range(&s->rng, 1, 5));
}

static void readiness_step(sim_t *s, int i)
{
    pod_t *p = &s->pod[i];
    const sr_node_t *n = &s->redis.n[i];
    if (p->ready_at >= 0 && s->tick >= p->ready_at) {
        p->ready_at = -1;
        if (n->running && !n->frozen && !p->ready) {
            p->ready = 1;
            pod_changed(s);
        }
    }
    if (p->unready_at >= 0 && s->tick >= p->unready_at) {
        p->unready_at = -1;
        if (n->frozen && p->ready) {
            p->ready = 0;
            pod_changed(s);
        }
    }
}

/* The StatefulSet controller, OrderedReady: the missing pod of lowest ordinal is made
 * once every pod before it is there and Ready. */
static void statefulset_step(sim_t *s)
{
    if (!s->sts)
        return;
    for (int i = 0; i < s->size; i++) {
        pod_t *p = &s->pod[i];
        if (p->present) {
            if (!p->ready || p->terminating)
                return;
            continue;
        }
        if (s->tick < s->create_at[i])
            return;
        int old = p->ip;
        memset(p, 0, sizeof(*p));
        p->present = 1;
        p->uid = ++s->next_uid;
        p->ip = s->reuse_ip[i] && old ? old : ++s->next_ip;
        p->revision = s->revision;
        p->start_at = s->tick + sim_rng_range(&s->rng, 1, 3);
        p->ready_at = p->unready_at = p->restart_at = p->kill_at = -1;
        s->redis.n[i].ip = p->ip;
        pod_changed(s);
        note(s, "%s-%d: pod created (uid-%d, %s, revision r%d)", NAME, i, p->uid, ipstr(p->ip, (char[32]){0}, 32),
             p->revision);
        return;
    }
}

static void kube_step(sim_t *s)
{
    for (int i = 0; i < s->size; i++) {
        pod_t *p = &s->pod[i];
        if (!p->present)
            continue;
        if (p->start_at >= 0 && s->tick >= p->start_at)
            container_start(s, i);
        if (p->restart_at >= 0 && s->tick >= p->restart_at) {
            p->restart_at = -1;
            note(s, "%s-%d: the kubelet restarts redis-server", NAME, i);
            container_start(s, i);
        }
        readiness_step(s, i);
        if (p->terminating)
            terminating_step(s, i);
    }
    statefulset_step(s);
}

/* Graceful deletion of pod i (kubectl delete pod, or the plan's PLAN_DELETE). */
static void pod_delete(sim_t *s, int i)
{
    pod_t *p = &s->pod[i];
    if (!p->present || p->terminating)
        return;
    p->terminating = 1;
    p->deleted_at = s->tick;
    s->reuse_ip[i] = !s->cfg.new_ips && sim_rng_chance(&s->rng, 1, 2);
    pod_changed(s);
    note(s, "%s-%d: pod deleted (uid-%d): terminating", NAME, i, p->uid);
}

/* ---- the client: SET, then WAIT 1, through the -primary Service ----------------------- */

/* The pod the Service <name>-primary selects (labelled primary, Ready, not terminating),
 * or -1. */
static int service_primary(const sim_t *s)
{
    for (int i = 0; i < s->size; i++) {
        const pod_t *p = &s->pod[i];
        if (p->present && p->label == LBL_PRIMARY && p->ready && !p->terminating)
            return i;
    }
    return -1;
}

/* A master acknowledges a write: every write acknowledged before must be on it too. */
static void check_holds(sim_t *s, int i, const char *what)
{
    if (sr_holds(&s->redis, i, s->last_acked))
        return;
    if (s->cfg.overlap) {
        /* counted once: the acknowledged writes from here on form a new chain */
        s->res.lost_acked++;
        s->last_acked.hist = -1;
        note(s, "%s-%d %s without the last acknowledged write (overlapping faults: counted)", NAME, i, what);
        return;
    }
    fail(s, "%s-%d %s without the acknowledged write %lld (it holds history %d up to %lld; the write is at "
            "history %d position %lld)",
         NAME, i, what, (long long)s->res.acked, s->redis.n[i].hist, (long long)s->redis.n[i].len, s->last_acked.hist,
         (long long)s->last_acked.pos);
}

static void client_sent(sim_t *s)
{
    int i = sr_at(&s->redis, s->conn_ip);
    sr_refusal_t r = sr_write_refusal(&s->redis, i, s->tick);
    if (r == SR_OK) {
        s->cw = sr_write(&s->redis, i);
        s->cstate = CLIENT_WAITING;
        s->res.writes++;
        return;
    }
    if ((r == SR_PAUSED || r == SR_NO_ANSWER) && s->tick - s->csent < CLIENT_TIMEOUT_TICKS)
        return;
    s->conn_ip = 0; /* refused or timed out: look the primary up again */
    s->cstate = CLIENT_IDLE;
}

static void client_waiting(sim_t *s)
{
    int i = sr_at(&s->redis, s->conn_ip);
    /* a master made a replica unblocks its WAITs with an error (Redis 7) */
    if (i >= 0 && sr_answers(&s->redis, i) && s->redis.n[i].role == SR_MASTER &&
        sr_acked(&s->redis, i, s->cw, s->tick)) {
        check_holds(s, i, "acknowledged a write");
        s->last_acked = s->cw;
        s->res.acked++;
        s->cstate = CLIENT_IDLE;
        return;
    }
    int gone = i < 0 || !s->redis.n[i].running || s->redis.n[i].role != SR_MASTER;
    if (s->tick - s->csent >= CLIENT_TIMEOUT_TICKS || gone) {
        if (gone)
            s->conn_ip = 0;
        s->cstate = CLIENT_IDLE;
    }
}

static void client_step(sim_t *s)
{
    if (s->cstate == CLIENT_SENT)
        client_sent(s);
    else if (s->cstate == CLIENT_WAITING)
        client_waiting(s);
    if (s->cstate != CLIENT_IDLE)
        return;
    if (!s->conn_ip) {
        int i = service_primary(s);
        if (i < 0)
            return;
        s->conn_ip = s->pod[i].ip;
    }
    s->cstate = CLIENT_SENT;
    s->csent = s->tick;
    client_sent(s);
}

/* ---- observerd: a probe per pod a second, obsdiff's rules for what is sent ----------- */

/* 1 when the operator (observerd, workerd) gets an answer from server i. */
static int operator_reaches(const sim_t *s, int i)
{
    return i >= 0 && sr_answers(&s->redis, i) && s->cut_until[i] <= s->tick;
}

static const pod_t *cached_pods(const sim_t *s)
{
    return s->ring[s->pods_cached % RING];
}

static void probe(sim_t *s, int i)
{
    probe_t *pr = &s->probe[i];
    int node = sr_at(&s->redis, pr->ip);
    pr->probes++;
    pr->last_probe = s->tick;
    if (!operator_reaches(s, node)) {
        pr->reachable = 0;
        if (pr->down_since < 0)
            pr->down_since = s->tick;
        return;
    }
    char info[4096];
    sr_info(&s->redis, node, s->tick, info, sizeof(info));
    redisinfo_parse(info, strlen(info), &pr->info);
    redisinfo_t ks; /* INFO keyspace, the probe's next reply */
    sr_info_keyspace(&s->redis, node, info, sizeof(info));
    redisinfo_parse(info, strlen(info), &ks);
    pr->info.keys = ks.keys;
    pr->reachable = pr->ever_answered = 1;
    pr->last_ok = s->tick;
    pr->down_since = -1;
}

/* The observation now, as observerd's build_nodes makes it (pods in name order). */
static size_t build_nodes(const sim_t *s, obs_node_t *out)
{
    const pod_t *pods = cached_pods(s);
    size_t n = 0;
    for (int i = 0; i < s->size; i++) {
        if (!pods[i].present)
            continue;
        const probe_t *pr = &s->probe[i];
        obs_node_t *x = &out[n++];
        memset(x, 0, sizeof(*x));
        pod_name(i, x->pod, sizeof(x->pod));
        sr_ip_str(pods[i].ip, x->ip, sizeof(x->ip));
        x->offset = x->keys = x->last_ok_ago_ms = x->link_down_ms = x->probed_ago_ms = x->master_io_ms = -1;
        if (!pr->probes)
            continue;
        x->reachable = pr->reachable;
        x->probed_ago_ms = (s->tick - pr->last_probe) * SR_TICK_MS;
        if (pr->ever_answered) {
            x->role = pr->info.role;
            snprintf(x->master_host, sizeof(x->master_host), "%s", pr->info.master_host);
            x->master_port = pr->info.master_port;
            x->link_up = pr->info.link_up;
            int64_t ago_ms = (s->tick - pr->last_ok) * SR_TICK_MS;
            if (pr->info.role == REDISINFO_ROLE_SLAVE && !pr->info.link_up && pr->info.link_down_s >= 0)
                x->link_down_ms = pr->info.link_down_s * 1000 + ago_ms;
            if (pr->info.role == REDISINFO_ROLE_SLAVE && pr->info.link_up && pr->info.master_io_s >= 0)
                x->master_io_ms = (pr->info.master_io_s + 1) * 1000 + ago_ms;
            x->offset = redisinfo_offset(&pr->info);
            x->keys = pr->info.keys;
            x->last_ok_ago_ms = ago_ms;
        }
        x->down_since_ms = pr->down_since >= 0 ? (s->tick - pr->down_since) * SR_TICK_MS : 0;
    }
    return n;
}

static void observation_send(sim_t *s, const obs_node_t *nodes, size_t n, obsdiff_t d)
{
    char at[40];
    clock_format_rfc3339(wall(s), 3, at, sizeof(at));
    buf_t body;
    buf_init(&body, 65536);
    json_object *obs = obsdiff_json(nodes, n, at, &body) ? NULL : json_tokener_parse(buf_str(&body));
    buf_free(&body);
    memcpy(s->sent, nodes, n * sizeof(*nodes));
    s->nsent = n;
    s->ever_sent = 1;
    s->last_sent = s->tick;
    if (!obs)
        return;
    if (s->nparcels == PARCELS) {
        note(s, "observation lost on the way (%s)", d == OBSDIFF_STILL_DOWN ? "still down" : "news");
        json_object_put(obs);
        return;
    }
    s->parcel[s->nparcels++] = (parcel_t){s->tick + sim_rng_range(&s->rng, 0, 2), obs};
}

/* 1 when every node was probed after wall time t (observerd's evaluate). */
static int probed_after(const sim_t *s, const obs_node_t *nodes, size_t n, int64_t t)
{
    for (size_t k = 0; k < n; k++)
        if (nodes[k].ip[0] && (nodes[k].probed_ago_ms < 0 || wall(s) - nodes[k].probed_ago_ms * 1000000 <= t))
            return 0;
    return 1;
}

static void evaluate(sim_t *s)
{
    const pod_t *pods = cached_pods(s);
    for (int i = 0; i < s->size; i++)
        if (pods[i].present && pods[i].ip && !s->probe[i].probes)
            return; /* a first observation is whole */
    obs_node_t nodes[SR_MAX_NODES];
    size_t n = build_nodes(s, nodes);
    obsdiff_t d = s->ever_sent ? obsdiff_compare(s->sent, s->nsent, nodes, n) : OBSDIFF_CHANGED;
    int after = s->cmd_seen_ns && probed_after(s, nodes, n, s->cmd_seen_ns);
    int fresh = after && s->cmd_sent_ns != s->cmd_seen_ns && d != OBSDIFF_CHANGED;
    if (fresh) { /* the first observation wholly after the operator's commands: sent */
        note(s, "observerd: every pod probed after the operator's commands");
        d = OBSDIFF_CHANGED;
    }
    if (d == OBSDIFF_SAME ||
        (d == OBSDIFF_STILL_DOWN &&
         !obsdiff_still_down_due(nodes, n, PLAN_FAILOVER_DOWN_AFTER_MS, (s->tick - s->last_sent) * SR_TICK_MS)))
        return;
    if (d == OBSDIFF_CHANGED && !fresh) { /* noted with or without a trace: the digest is the same */
        char why[600] = "first observation";
        if (s->ever_sent)
            obsdiff_explain(s->sent, s->nsent, nodes, n, why, sizeof(why));
        note(s, "observerd: %s", why);
    }
    s->cmd_sent_ns = after ? s->cmd_seen_ns : 0;
    observation_send(s, nodes, n, d);
}

static void observer_reset(sim_t *s)
{
    memset(s->probe, 0, sizeof(s->probe));
    for (int i = 0; i < SR_MAX_NODES; i++)
        s->probe[i].last_ok = s->probe[i].down_since = s->probe[i].last_probe = -1;
    s->nsent = 0;
    s->ever_sent = 0;
    s->cmd_seen_ns = s->cmd_sent_ns = 0;
}

static void observer_step(sim_t *s)
{
    if (s->operator_down_until > s->tick || s->observer_down_until > s->tick)
        return;
    const pod_t *pods = cached_pods(s);
    for (int i = 0; i < s->size; i++) {
        probe_t *pr = &s->probe[i];
        if (!pods[i].present || pods[i].ip == pr->ip)
            continue;
        memset(pr, 0, sizeof(*pr)); /* a new IP is a new server */
        pr->ip = pods[i].ip;
        pr->last_ok = pr->down_since = pr->last_probe = -1;
    }
    /* A newer record of the operator's commands: every pod is probed at once. */
    int64_t rv = 0, cmd = 0;
    const char *t = JSONX_STR_AT(rc_cached(s, &rv), "status", "lastRedisCommandTime");
    int now = t && !clock_parse_rfc3339(t, &cmd) && cmd != s->cmd_seen_ns && cmd < wall(s);
    if (t && cmd != s->cmd_seen_ns)
        s->cmd_seen_ns = cmd;
    for (int i = 0; i < s->size; i++) {
        if (!pods[i].present || !pods[i].ip || (!now && (s->tick + s->phase[i]) % PROBE_TICKS))
            continue;
        probe(s, i);
        evaluate(s);
    }
}

/* ---- informerd: late caches, the latest observation, the queue ------------------------ */

static void informer_step(sim_t *s)
{
    memcpy(s->ring[s->tick % RING], s->pod, sizeof(s->pod));
    s->ring_version[s->tick % RING] = s->pod_version;
    int down = s->operator_down_until > s->tick;
    while (s->nparcels && s->parcel[0].at <= s->tick) {
        json_object *o = s->parcel[0].obs;
        memmove(s->parcel, s->parcel + 1, (size_t)--s->nparcels * sizeof(*s->parcel));
        if (down) {
            json_object_put(o);
            continue;
        }
        json_object_put(s->obs);
        s->obs = o;
        s->dirty = 1;
    }
    if (down)
        return;
    int64_t lag = sim_rng_range(&s->rng, 0, 2);
    if (s->pods_stall_until <= s->tick && s->tick - lag > s->pods_cached)
        s->pods_cached = s->tick - lag;
    lag = sim_rng_range(&s->rng, 0, 2);
    if (s->rc_stall_until <= s->tick && s->tick - lag > s->rc_cached)
        s->rc_cached = s->tick - lag;
    int64_t pv = s->ring_version[s->pods_cached % RING], rv = 0;
    rc_cached(s, &rv);
    if (pv != s->seen_pod_version || rv != s->seen_rv)
        s->dirty = 1;
    s->seen_pod_version = pv;
    s->seen_rv = rv;
}

/* ---- workerd: the plan, and the executor's rules --------------------------------------- */

/* The pods of the cached snapshot as the work item's children.Pods. */
static json_object *pods_json(const sim_t *s)
{
    const pod_t *pods = cached_pods(s);
    json_object *arr = json_object_new_array();
    for (int i = 0; i < s->size; i++) {
        const pod_t *p = &pods[i];
        if (!p->present)
            continue;
        char name[32], uid[32], rev[32], ip[32];
        pod_name(i, name, sizeof(name));
        snprintf(uid, sizeof(uid), "uid-%d", p->uid);
        snprintf(rev, sizeof(rev), NAME "-r%d", p->revision);
        json_object *labels = json_object_new_object(), *meta = json_object_new_object();
        json_object_object_add(labels, RENDER_LABEL_INSTANCE, json_object_new_string(NAME));
        json_object_object_add(labels, "controller-revision-hash", json_object_new_string(rev));
        if (p->label)
            json_object_object_add(labels, TOPO_ROLE_LABEL,
                                   json_object_new_string(p->label == LBL_PRIMARY ? "primary" : "replica"));
        json_object_object_add(meta, "name", json_object_new_string(name));
        json_object_object_add(meta, "uid", json_object_new_string(uid));
        json_object_object_add(meta, "labels", labels);
        if (p->terminating)
            json_object_object_add(meta, "deletionTimestamp", json_object_new_string("2024-05-01T12:00:00Z"));
        json_object *ready = json_object_new_object(), *conds = json_object_new_array(), *st = json_object_new_object();
        json_object_object_add(ready, "type", json_object_new_string("Ready"));
        json_object_object_add(ready, "status", json_object_new_string(p->ready ? "True" : "False"));
        json_object_array_add(conds, ready);
        json_object_object_add(st, "podIP", json_object_new_string(ipstr(p->ip, ip, sizeof(ip))));
        json_object_object_add(st, "phase", json_object_new_string("Running"));
        json_object_object_add(st, "conditions", conds);
        json_object *pod = json_object_new_object();
        json_object_object_add(pod, "metadata", meta);
        json_object_object_add(pod, "status", st);
        json_object_array_add(arr, pod);
    }
    return arr;
}

/* The StatefulSet's status as its controller writes it, from the cached pods. */
static void sts_status(const sim_t *s)
{
    const pod_t *pods = cached_pods(s);
    int present = 0, ready = 0, updated = 0;
    for (int i = 0; i < s->size; i++) {
        present += pods[i].present;
        ready += pods[i].present && pods[i].ready && !pods[i].terminating;
        updated += pods[i].present && pods[i].revision == s->revision;
    }
    char rev[32], cur[32];
    snprintf(rev, sizeof(rev), NAME "-r%d", s->revision);
    snprintf(cur, sizeof(cur), NAME "-r%d", updated == s->size ? s->revision : s->revision - 1);
    json_object *st = json_object_new_object();
    json_object_object_add(st, "observedGeneration", json_object_new_int(1));
    json_object_object_add(st, "replicas", json_object_new_int(present));
    json_object_object_add(st, "readyReplicas", json_object_new_int(ready));
    json_object_object_add(st, "availableReplicas", json_object_new_int(ready));
    json_object_object_add(st, "currentReplicas", json_object_new_int(present));
    json_object_object_add(st, "updatedReplicas", json_object_new_int(updated));
    json_object_object_add(st, "currentRevision", json_object_new_string(cur));
    json_object_object_add(st, "updateRevision", json_object_new_string(rev));
    json_object_object_add(s->sts, "status", st);
}

static json_object **child_slot(sim_t *s, const char *resource, const char *name)
{
    if (!strcmp(resource, "configmaps"))
        return &s->cm;
    if (!strcmp(resource, "statefulsets"))
        return &s->sts;
    if (!strcmp(resource, "poddisruptionbudgets"))
        return &s->pdb;
    if (!strcmp(resource, "services"))
        return !strcmp(name, NAME "-primary") ? &s->svc_primary : !strcmp(name, NAME "-replicas") ? &s->svc_replicas
                                                                                                    : &s->svc;
    return NULL;
}

/* Never two pods labelled primary, at any moment (between two actions too). */
static void check_labels(sim_t *s)
{
    int n = 0;
    for (int i = 0; i < s->size; i++)
        n += s->pod[i].present && s->pod[i].label == LBL_PRIMARY;
    if (n > 1)
        fail(s, "%d pods labelled primary", n);
}

/* A server was made a master by the plan's command (or the FAILOVER it sent). */
static void promoted(sim_t *s, int i, const char *how)
{
    s->res.promotions++;
    note(s, "%s-%d promoted by %s (offset %lld)", NAME, i, how, (long long)sr_offset(&s->redis, i));
    check_holds(s, i, "made a master");
}

/* REPLICAOF NO ONE behind redisexec_promote_guard: a master already is done; a replica
 * whose primary answers the operator as a primary is refused. */
static int exec_no_one(sim_t *s, int i)
{
    if (s->redis.n[i].role == SR_MASTER)
        return EXEC_DONE;
    int m = sr_at(&s->redis, s->redis.n[i].master_ip);
    if (operator_reaches(s, m) && s->redis.n[m].role == SR_MASTER) {
        note(s, "%s-%d: promotion refused: its primary answers again", NAME, i);
        return EXEC_FAIL;
    }
    sr_no_one(&s->redis, i, s->tick);
    promoted(s, i, "REPLICAOF NO ONE");
    return EXEC_DONE;
}

/* FAILOVER TO behind redisexec_switchover (its check on the model's INFO text). */
static int exec_failover(sim_t *s, int i, const plan_action_t *a)
{
    char info[4096], err[256];
    sr_info(&s->redis, i, s->tick, info, sizeof(info));
    int check = redisexec_switchover_check(info, a->argv[2], (int)strtol(a->argv[3], NULL, 10),
                                           TOPO_SWITCHOVER_MAX_LAG, err, sizeof(err));
    if (check)
        note(s, "%s-%d: FAILOVER %s", NAME, i, check > 0 ? "done already" : err);
    if (check)
        return check > 0 ? EXEC_DONE : EXEC_FAIL;
    int64_t timeout = a->argc >= 6 ? strtoll(a->argv[5], NULL, 10) : TOPO_FAILOVER_TIMEOUT_MS;
    if (sr_failover_to(&s->redis, i, sr_ip_parse(a->argv[2]), timeout, s->tick))
        return EXEC_FAIL;
    s->res.switchovers++;
    note(s, "%s-%d: FAILOVER TO %s sent", NAME, i, a->argv[2]);
    return EXEC_DONE;
}

/* A PLAN_REDIS action, as exec_redis carries it out. */
static int exec_redis(sim_t *s, const plan_action_t *a)
{
    int i = sr_at(&s->redis, sr_ip_parse(a->ip));
    if (a->not_after_wall_ns > 0 && wall(s) >= a->not_after_wall_ns) {
        note(s, "%s: %s not sent: its plan's moment has passed", a->name, a->argv[0]);
        return EXEC_FAIL;
    }
    if (!operator_reaches(s, i)) {
        note(s, "%s: %s %s: no answer", a->name, a->argv[0], a->argc > 1 ? a->argv[1] : "");
        return EXEC_FAIL;
    }
    s->res.commands++;
    if (a->argc == 3 && !strcmp(a->argv[0], "REPLICAOF") && !strcmp(a->argv[1], "NO"))
        return exec_no_one(s, i);
    if (a->argc >= 4 && !strcmp(a->argv[0], "FAILOVER"))
        return exec_failover(s, i, a);
    if (a->argc != 3 || strcmp(a->argv[0], "REPLICAOF"))
        return EXEC_DONE;
    char info[4096], role[16], host[256];
    int port = 0, link = 0;
    int64_t off = -1;
    sr_info(&s->redis, i, s->tick, info, sizeof(info));
    redisexec_parse_info(info, role, sizeof(role), host, sizeof(host), &port, &link, &off);
    if (!strcmp(role, "slave") && !strcmp(host, a->argv[1]) && port == (int)strtol(a->argv[2], NULL, 10))
        return EXEC_DONE; /* in effect already */
    sr_replicaof(&s->redis, i, sr_ip_parse(a->argv[1]), s->tick);
    note(s, "%s-%d: REPLICAOF %s", NAME, i, a->argv[1]);
    return EXEC_DONE;
}

static int exec_delete(sim_t *s, const plan_action_t *a)
{
    if (strcmp(a->resource, "pods")) {
        json_object **slot = child_slot(s, a->resource, a->name);
        if (slot) {
            json_object_put(*slot);
            *slot = NULL;
        }
        return EXEC_DONE;
    }
    int i = ordinal(s, a->name);
    const char *uid = JSONX_STR_AT(a->body, "preconditions", "uid");
    char have[32];
    snprintf(have, sizeof(have), "uid-%d", i >= 0 ? s->pod[i].uid : 0);
    if (i < 0 || !s->pod[i].present)
        return EXEC_DONE; /* 404: gone already */
    if (uid && strcmp(uid, have))
        return EXEC_409;
    pod_delete(s, i);
    return EXEC_DONE;
}

static int exec_label(sim_t *s, const plan_action_t *a)
{
    int i = ordinal(s, a->name);
    if (i < 0 || !s->pod[i].present)
        return EXEC_FAIL; /* 404 */
    const char *role = JSONX_STR_AT(a->body, "metadata", "labels", TOPO_ROLE_LABEL);
    int want = role && !strcmp(role, "primary") ? LBL_PRIMARY : LBL_REPLICA;
    if (s->pod[i].label != want) {
        s->pod[i].label = want;
        pod_changed(s);
        note(s, "%s-%d labelled %s", NAME, i, role ? role : "?");
    }
    check_labels(s);
    return EXEC_DONE;
}

static int exec_rc_write(sim_t *s, const plan_action_t *a)
{
    if (stale_precondition(s, a->body)) {
        s->res.conflicts++;
        note(s, "%s: 409 Conflict (resourceVersion %s, stored %lld)", plan_action_kind_name(a->kind),
             JSONX_STR_AT(a->body, "metadata", "resourceVersion"), (long long)s->rv);
        return EXEC_409;
    }
    json_object *copy = NULL;
    if (a->kind == PLAN_UPDATE_STATUS) {
        json_object_deep_copy(jsonx_get(a->body, "status"), &copy, NULL);
        const char *cmd = JSONX_STR_AT(copy, "lastRedisCommandTime");
        if (cmd && !strcmp(cmd, PLAN_NOW_TOKEN)) { /* the executor writes the time it sends it */
            char at[40];
            clock_format_rfc3339(wall(s), 3, at, sizeof(at));
            json_object_object_add(copy, "lastRedisCommandTime", json_object_new_string(at));
        }
        json_object_object_add(s->rc, "status", copy);
        const char *was = JSONX_STR_AT(s->ver[(s->nver - 1) % VERS], "status", "primary");
        const char *now = status_str(s, "primary");
        if (now && (!was || strcmp(was, now)))
            note(s, "status.primary := %s (%s)", now, a->why);
        if (JSONX_STR_AT(a->body, "metadata", "resourceVersion") && now && (!was || strcmp(was, now)))
            s->res.records++;
    } else {
        json_object_deep_copy(JSONX_AT(a->body, "metadata", "finalizers"), &copy, NULL);
        json_object_object_add(jsonx_get(s->rc, "metadata"), "finalizers", copy);
    }
    rc_store(s);
    return EXEC_DONE;
}

static int exec_action(sim_t *s, const plan_action_t *a)
{
    s->res.actions++;
    switch (a->kind) {
    case PLAN_ADD_FINALIZER:
    case PLAN_REMOVE_FINALIZER:
    case PLAN_UPDATE_STATUS:
        return exec_rc_write(s, a);
    case PLAN_CREATE:
    case PLAN_APPLY:
    case PLAN_REPLACE: {
        json_object **slot = child_slot(s, a->resource, a->name);
        if (!slot)
            return EXEC_DONE;
        if (a->kind == PLAN_CREATE && *slot)
            return EXEC_409; /* AlreadyExists */
        json_object_put(*slot);
        *slot = NULL;
        json_object_deep_copy(a->body, slot, NULL);
        if (slot == &s->sts)
            json_object_object_add(jsonx_get(s->sts, "metadata"), "generation", json_object_new_int(1));
        s->dirty = 1;
        return EXEC_DONE;
    }
    case PLAN_DELETE:
        return exec_delete(s, a);
    case PLAN_LABEL_POD:
        return exec_label(s, a);
    case PLAN_REDIS:
        return exec_redis(s, a);
    default:
        return EXEC_DONE;
    }
}

/* Run the actions of p from *next, up to end (exclusive), stopping at the first failure.
 * Returns the first failure's result, or EXEC_DONE. */
static int exec_plan(sim_t *s, const plan_t *p, size_t *next, size_t end)
{
    for (; *next < end && !s->done; (*next)++) {
        int r = exec_action(s, plan_action(p, *next));
        if (r != EXEC_DONE) {
            (*next)++;
            return r;
        }
    }
    return EXEC_DONE;
}

static int64_t backoff_ticks(int fails)
{
    int64_t ns = INT64_C(5000000);
    for (int k = 1; k < fails && ns < BACKOFF_CAP_NS; k++)
        ns *= 2;
    if (ns > BACKOFF_CAP_NS)
        ns = BACKOFF_CAP_NS;
    return (ns + TICK_NS - 1) / TICK_NS;
}

/* A fault armed for the next plan with actions: the worker dies, or stops, after a
 * prefix of them. Returns how many actions run now. */
static size_t interrupted(sim_t *s, plan_t *p, size_t n, int *keep)
{
    *keep = 0;
    if (!n || (!s->crash_armed && !s->stale_armed))
        return n;
    size_t k = (size_t)sim_rng_below(&s->rng, (int64_t)n);
    if (s->crash_armed) {
        s->crash_armed = 0;
        s->worker_down_until = s->tick + sim_rng_range(&s->rng, 10, 30);
        note(s, "workerd killed after %zu of %zu actions", k, n);
        return k;
    }
    s->stale_armed = 0;
    plan_destroy(&s->paused);
    s->paused = p;
    s->paused_next = k;
    s->paused_resume = s->tick + sim_rng_range(&s->rng, 30, 2000);
    s->paused_lease = s->tick + LEASE_TICKS;
    s->held_until = s->tick + TAKE_BACK_TICKS;
    *keep = 1;
    note(s, "workerd stopped after %zu of %zu actions (resumes at step %lld)", k, n, (long long)s->paused_resume);
    return k;
}

/* SIM_TRACE=2: what a reconcile saw and planned. */
static void trace_plan(const sim_t *s, const json_object *rc, const json_object *pods, const plan_t *p)
{
    const int flags = JSON_C_TO_STRING_PLAIN;
    fprintf(s->cfg.trace, "%8lld   reconcile from resourceVersion %s, status %s\n", (long long)s->tick,
            JSONX_STR_AT(rc, "metadata", "resourceVersion"),
            json_object_to_json_string_ext(jsonx_get(rc, "status"), flags));
    fprintf(s->cfg.trace, "%8lld   pods %s\n", (long long)s->tick,
            json_object_to_json_string_ext((json_object *)pods, flags));
    fprintf(s->cfg.trace, "%8lld   observation %s\n", (long long)s->tick,
            s->obs ? json_object_to_json_string_ext(s->obs, flags) : "none");
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        fprintf(s->cfg.trace, "%8lld   action %s %s: %s\n", (long long)s->tick, plan_action_kind_name(a->kind),
                a->name ? a->name : "", a->why ? a->why : "");
    }
}

static void reconcile(sim_t *s)
{
    int64_t rv = 0;
    const json_object *rc = rc_cached(s, &rv);
    json_object *pods = pods_json(s);
    if (s->sts)
        sts_status(s);
    plan_observed_t more = {.members = pods, .redis = s->obs, .primary_service = s->svc_primary,
                            .replicas_service = s->svc_replicas};
    plan_children_t kids = {s->cm, s->svc, s->sts, s->pdb};
    plan_t *p = plan_compute_children(rc, &kids, &more, wall(s));
    s->res.reconciles++;
    if (p && s->cfg.trace && s->cfg.trace_plans)
        trace_plan(s, rc, pods, p);
    json_object_put(pods);
    if (!p)
        return;
    size_t n = plan_action_count(p), next = 0;
    int keep = 0;
    int64_t rv_before = s->rv;
    size_t end = interrupted(s, p, n, &keep);
    int r = exec_plan(s, p, &next, end);
    if (end < n) {
        s->dirty = 1;
    } else if (r == EXEC_DONE) {
        s->fails = 0;
        int64_t after = plan_requeue_after_ns(p);
        s->requeue_at = after > 0 ? s->tick + (after + TICK_NS - 1) / TICK_NS : 0;
    } else {
        s->fails++;
        s->requeue_at = s->tick + backoff_ticks(s->fails);
    }
    if (s->rv != rv_before) {
        s->own_rv = s->rv;
        s->own_until = s->tick + OWNWRITE_TICKS;
    }
    if (!keep)
        plan_destroy(&p);
}

static void worker_step(sim_t *s)
{
    if (s->paused && s->tick >= s->paused_resume) {
        /* Its fence: no write once the item's lease is over (informerd may have handed
         * the key to another worker); within it, the key was nobody else's. */
        if (s->tick >= s->paused_lease) {
            note(s, "the stopped workerd resumes: its item's lease is over, it writes nothing");
        } else {
            note(s, "the stopped workerd resumes its plan at action %zu", s->paused_next);
            exec_plan(s, s->paused, &s->paused_next, plan_action_count(s->paused));
            s->held_until = 0; /* its DONE frees the key */
            s->dirty = 1;
        }
        plan_destroy(&s->paused);
    }
    if (s->operator_down_until > s->tick || s->worker_down_until > s->tick || s->held_until > s->tick)
        return;
    if (!s->dirty && !(s->requeue_at && s->tick >= s->requeue_at))
        return;
    int64_t rv = 0;
    rc_cached(s, &rv);
    if (rv < s->own_rv && s->tick < s->own_until)
        return; /* informerd waits for the cache to hold its own write */
    s->dirty = 0;
    s->requeue_at = 0;
    reconcile(s);
}

/* ---- invariants and convergence --------------------------------------------------------- */

static int replication_healthy(const sim_t *s)
{
    const char *reason = NULL, *st = condition(s, "ReplicationHealthy", &reason);
    return st && !strcmp(st, "True");
}

/* The cluster as the end of every recovery must leave it (sim_world.h); a replica is
 * caught up when at most the writes of the last two seconds are on their way to it.
 * When it is not, why (if why is not NULL) says the first thing found. */
static int converged_why(const sim_t *s, char *why, size_t cap)
{
    char scratch[8];
    if (!why) {
        why = scratch;
        cap = sizeof(scratch);
    }
    int p = -1;
    for (int i = 0; i < s->size; i++) {
        const pod_t *x = &s->pod[i];
        if (!x->present || x->terminating || !x->ready || x->revision != s->revision || !operator_reaches(s, i)) {
            snprintf(why, cap, "%s-%d: present %d, terminating %d, ready %d, revision r%d of r%d, answers %d", NAME, i,
                     x->present, x->terminating, x->ready, x->revision, s->revision, operator_reaches(s, i));
            return 0;
        }
        if ((x->label == LBL_PRIMARY && p >= 0) || x->label == LBL_NONE) {
            snprintf(why, cap, "%s-%d: label %d", NAME, i, x->label);
            return 0;
        }
        if (x->label == LBL_PRIMARY)
            p = i;
    }
    char name[32];
    pod_name(p, name, sizeof(name));
    const char *primary = status_str(s, "primary"), *reason = NULL;
    condition(s, "ReplicationHealthy", &reason);
    if (p < 0 || !primary || strcmp(primary, name) || status_str(s, "switchoverFrom") || !replication_healthy(s)) {
        snprintf(why, cap, "labelled primary %s, status.primary %s, switchoverFrom %s, ReplicationHealthy %s",
                 p < 0 ? "none" : name, primary ? primary : "none", status_str(s, "switchoverFrom") ? "set" : "unset",
                 reason ? reason : "none");
        return 0;
    }
    const sr_node_t *m = &s->redis.n[p];
    if (m->role != SR_MASTER || m->fo_target) {
        snprintf(why, cap, "%s is not a master (or in FAILOVER)", name);
        return 0;
    }
    for (int i = 0; i < s->size; i++) {
        const sr_node_t *r = &s->redis.n[i];
        if (i != p && (r->role != SR_REPLICA || r->master_ip != m->ip || !r->link_up || r->hist != m->hist ||
                       m->len - r->len > CAUGHT_UP_WRITES)) {
            snprintf(why, cap, "%s-%d: role %d following %d (primary at %d), link %d, %lld writes behind", NAME, i,
                     r->role, r->master_ip, m->ip, r->link_up, (long long)(m->len - r->len));
            return 0;
        }
    }
    return 1;
}

static int converged(const sim_t *s)
{
    return converged_why(s, NULL, 0);
}

static void check_step(sim_t *s)
{
    check_labels(s);
    int writers = 0;
    for (int i = 0; i < s->size; i++)
        writers += sr_write_refusal(&s->redis, i, s->tick) == SR_OK && sr_can_ack(&s->redis, i, s->tick);
    if (writers < 2)
        return;
    if (s->cfg.overlap) {
        s->res.dual_writers++;
        return;
    }
    fail(s, "%d masters take and acknowledge writes at once", writers);
}

/* ---- faults -------------------------------------------------------------------------- */

static int fault_node(sim_t *s, sim_fault_t f, int i)
{
    pod_t *p = &s->pod[i];
    sr_node_t *n = &s->redis.n[i];
    switch (f) {
    case SIM_F_KILL:
        if (!n->running || p->terminating)
            return -1;
        sr_stop(&s->redis, i);
        p->ready = 0;
        pod_changed(s);
        p->restart_at = s->tick + sim_rng_range(&s->rng, 5, 100);
        return 0;
    case SIM_F_FREEZE:
        if (!n->running || n->frozen)
            return -1;
        sr_freeze(&s->redis, i, s->tick);
        p->unready_at = s->tick + sim_rng_range(&s->rng, 100, 150);
        s->thaw_at[i] = s->tick + sim_rng_range(&s->rng, 5, 700);
        return 0;
    case SIM_F_ISOLATE:
        n->isolated = 1;
        s->isolated_until[i] = s->tick + sim_rng_range(&s->rng, 5, 400);
        return 0;
    case SIM_F_OBS_CUT:
    case SIM_F_PRIMARY_OBS_CUT:
        if (s->cut_until[i] > s->tick)
            return -1;
        s->cut_until[i] = s->tick + sim_rng_range(&s->rng, 10, 400);
        return 0;
    case SIM_F_LOSE_POD:
        if (!p->present)
            return -1;
        s->wiped[i] = 1;
        s->reuse_ip[i] = 0;
        pod_gone(s, i, sim_rng_range(&s->rng, 5, 50));
        return 0;
    case SIM_F_DELETE_POD:
    case SIM_F_DELETE_PRIMARY:
        if (!p->present || p->terminating)
            return -1;
        pod_delete(s, i);
        return 0;
    default:
        return -1;
    }
}

static int fault_operator(sim_t *s, sim_fault_t f)
{
    switch (f) {
    case SIM_F_ROLLOUT:
        s->revision++;
        pod_changed(s);
        return 0;
    case SIM_F_WORKER_CRASH:
        if (s->crash_armed || s->worker_down_until > s->tick)
            return -1;
        s->crash_armed = 1;
        return 0;
    case SIM_F_STALE_PLAN:
        if (s->stale_armed || s->paused)
            return -1;
        s->stale_armed = 1;
        return 0;
    case SIM_F_OPERATOR_RESTART:
    case SIM_F_OPERATOR_OUTAGE:
        if (s->operator_down_until > s->tick)
            return -1;
        s->operator_down_until = s->tick + (f == SIM_F_OPERATOR_RESTART ? sim_rng_range(&s->rng, 10, 50)
                                                                         : sim_rng_range(&s->rng, 300, 3000));
        observer_reset(s);
        json_object_put(s->obs);
        s->obs = NULL;
        plan_destroy(&s->paused);
        s->held_until = 0;
        s->dirty = 1;
        return 0;
    case SIM_F_OBSERVER_RESTART:
        s->observer_down_until = s->tick + sim_rng_range(&s->rng, 5, 20);
        observer_reset(s);
        return 0;
    case SIM_F_WATCH_STALL:
        if (sim_rng_chance(&s->rng, 1, 2))
            s->pods_stall_until = s->tick + sim_rng_range(&s->rng, 20, 80);
        else
            s->rc_stall_until = s->tick + sim_rng_range(&s->rng, 20, 80);
        return 0;
    case SIM_F_INFORMER_RESTART:
        /* its latest observation and those on the way are lost; it lists again, and
         * observerd, taking a new snapshot from it, sends every observation again */
        json_object_put(s->obs);
        s->obs = NULL;
        for (int k = 0; k < s->nparcels; k++)
            json_object_put(s->parcel[k].obs);
        s->nparcels = 0;
        s->ever_sent = 0;
        s->pods_cached = s->rc_cached = s->tick;
        s->dirty = 1;
        return 0;
    default:
        return -1;
    }
}

/* 1 for a fault of one server (or its pod). */
static int server_fault(sim_fault_t f)
{
    return f <= SIM_F_PRIMARY_OBS_CUT;
}

/* 1 for the faults of the cluster itself (its servers, pods, network, rollouts), of
 * which one at a time is in effect without cfg.overlap; the others are the operator's
 * own (its processes, caches, observations), which may come at any moment. */
static int cluster_fault(sim_fault_t f)
{
    return f <= SIM_F_ROLLOUT;
}

/* The server a fault of kind f hits: the labelled primary, a replica, or either (the
 * primary half of the time); -1 when there is none. */
static int target_of(sim_t *s, sim_fault_t f)
{
    int p = service_primary(s);
    if (f == SIM_F_DELETE_PRIMARY || f == SIM_F_PRIMARY_OBS_CUT)
        return p;
    if (f == SIM_F_DELETE_POD || f == SIM_F_OBS_CUT || p < 0 || sim_rng_chance(&s->rng, 1, 2)) {
        int i = (int)sim_rng_below(&s->rng, s->size);
        return i == p ? (i + 1 + (int)sim_rng_below(&s->rng, s->size - 1)) % s->size : i;
    }
    return p;
}

/* Start a fault of one class (cluster_fault or not), of a kind enabled, drawn from the
 * seed. Returns 0, or -1 when none is enabled or the one drawn does not apply now (a
 * kill of a server that is down, a second rollout). */
static int inject(sim_t *s, int cluster)
{
    unsigned kinds = s->cfg.faults ? s->cfg.faults : SIM_FAULTS_DEFAULT;
    int n = 0, pick[SIM_F_COUNT];
    for (int f = 0; f < SIM_F_COUNT; f++)
        if ((kinds & SIM_FAULT_BIT(f)) && cluster_fault((sim_fault_t)f) == cluster)
            pick[n++] = f;
    if (!n)
        return -1;
    sim_fault_t f = (sim_fault_t)pick[sim_rng_below(&s->rng, n)];
    if (f == SIM_F_ROLLOUT) {
        for (int k = 0; k < s->size; k++)
            if (s->pod[k].present && s->pod[k].revision != s->revision)
                return -1; /* one rollout at a time */
    }
    int i = server_fault(f) ? target_of(s, f) : -1;
    int rc = server_fault(f) ? (i < 0 ? -1 : fault_node(s, f, i)) : fault_operator(s, f);
    if (rc)
        return -1;
    s->res.faults[f]++;
    if (server_fault(f))
        note(s, "FAULT %s %s-%d", sim_fault_name(f), NAME, i);
    else
        note(s, "FAULT %s", sim_fault_name(f));
    return 0;
}

/* Faults that end by themselves: thaw, reconnect, the operator back. */
static void heal_step(sim_t *s, int all)
{
    for (int i = 0; i < s->size; i++) {
        if (s->redis.n[i].frozen && (all || s->tick >= s->thaw_at[i])) {
            sr_thaw(&s->redis, i, s->tick);
            if (!s->pod[i].ready && s->pod[i].ready_at < 0)
                s->pod[i].ready_at = s->tick + sim_rng_range(&s->rng, 0, 50);
            s->pod[i].unready_at = -1;
            note(s, "%s-%d thawed", NAME, i);
        }
        if (s->redis.n[i].isolated && (all || s->tick >= s->isolated_until[i])) {
            s->redis.n[i].isolated = 0;
            note(s, "%s-%d reconnected", NAME, i);
        }
        if (all)
            s->cut_until[i] = 0;
    }
    if (all) {
        s->pods_stall_until = s->rc_stall_until = 0;
        s->crash_armed = s->stale_armed = 0;
        if (s->paused)
            s->paused_resume = s->tick;
        if (s->operator_down_until > s->tick) /* an outage ends with the faults */
            s->operator_down_until = s->tick;
        if (s->observer_down_until > s->tick)
            s->observer_down_until = s->tick;
        if (s->worker_down_until > s->tick)
            s->worker_down_until = s->tick;
    }
    if (s->operator_down_until == s->tick && s->tick) { /* the operator back: it lists anew */
        s->pods_cached = s->rc_cached = s->tick;
        s->dirty = 1;
    }
}

/* 1 when no fault of the cluster is in effect: nothing frozen or cut off. */
static int quiet(const sim_t *s)
{
    for (int i = 0; i < s->size; i++)
        if (s->redis.n[i].frozen || s->redis.n[i].isolated || s->cut_until[i] > s->tick)
            return 0;
    return 1;
}

/* Whether a fault starts now, and the recovery figures. A fault of the cluster starts,
 * without cfg.overlap, only once the cluster recovered from the last one (converged and
 * quiet); the operator's own faults come at any moment, each kind once at a time. */
static void fault_step(sim_t *s)
{
    if (s->tick == s->tail_start) {
        heal_step(s, 1);
        note(s, "faults stop");
    }
    int ok = converged(s) && quiet(s);
    if (ok && s->fault_at >= 0) {
        int64_t took = s->tick - s->fault_at;
        s->res.recoveries++;
        s->res.recover_total_steps += took;
        if (took > s->res.recover_max_steps)
            s->res.recover_max_steps = took;
        s->fault_at = -1;
    }
    s->ever_converged |= ok;
    if (s->tick >= s->tail_start || !s->ever_converged)
        return;
    int64_t every = s->cfg.fault_every > 0 ? s->cfg.fault_every : 100;
    if ((s->cfg.overlap || (ok && s->fault_at < 0)) && sim_rng_chance(&s->rng, 1, every) && !inject(s, 1) &&
        s->fault_at < 0)
        s->fault_at = s->tick;
    if (sim_rng_chance(&s->rng, 1, 2 * every))
        inject(s, 0);
}

/* ---- the world ---------------------------------------------------------------------- */

static int world_init(sim_t *s)
{
    char text[512];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"" NAME
             "\",\"namespace\":\"default\",\"uid\":\"rc-uid\",\"generation\":1,\"creationTimestamp\":"
             "\"2024-05-01T11:00:00Z\"},\"spec\":{\"size\":%d,\"image\":\"redis\",\"mode\":\"Replication\"}}",
             s->size);
    s->rc = json_tokener_parse(text);
    if (!s->rc || sr_init(&s->redis, s->size))
        return -1;
    rc_store(s);
    s->revision = 1;
    for (int i = 0; i < SR_MAX_NODES; i++) {
        s->phase[i] = (int)sim_rng_below(&s->rng, PROBE_TICKS);
        s->create_at[i] = 0;
        s->wiped[i] = 1; /* a new cluster's volumes are empty */
    }
    observer_reset(s);
    s->fault_at = -1;
    s->last_acked.hist = -1; /* nothing acknowledged yet */
    s->res.converged_after = -1;
    s->dirty = 1;
    return 0;
}

sim_t *sim_new(const sim_cfg_t *cfg)
{
    if (!cfg || cfg->steps <= cfg->tail || cfg->tail < 0)
        return NULL;
    sim_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cfg = *cfg;
    s->rng.s = cfg->seed;
    s->size = cfg->size >= 2 && cfg->size <= 5 ? cfg->size : (int)sim_rng_range(&s->rng, 2, 5);
    s->res.size = s->size;
    s->tail_start = cfg->steps - cfg->tail;
    if (world_init(s)) {
        sim_destroy(&s);
        return NULL;
    }
    note(s, "seed %#llx: %d pods, %lld steps, faults stop at step %lld", (unsigned long long)cfg->seed, s->size,
         (long long)cfg->steps, (long long)s->tail_start);
    return s;
}

void sim_destroy(sim_t **s_p)
{
    sim_t *s = s_p ? *s_p : NULL;
    if (!s)
        return;
    json_object_put(s->rc);
    for (int k = 0; k < VERS; k++)
        json_object_put(s->ver[k]);
    json_object *kids[] = {s->cm, s->svc, s->sts, s->pdb, s->svc_primary, s->svc_replicas, s->obs};
    for (size_t k = 0; k < sizeof(kids) / sizeof(kids[0]); k++)
        json_object_put(kids[k]);
    for (int k = 0; k < s->nparcels; k++)
        json_object_put(s->parcel[k].obs);
    plan_destroy(&s->paused);
    sr_free(&s->redis);
    free(s);
    *s_p = NULL;
}

/* The tail: faults stop, and the cluster must converge in time and stay so. */
static void tail_step(sim_t *s)
{
    if (s->tick < s->tail_start)
        return;
    char why[512];
    int ok = converged_why(s, why, sizeof(why));
    if (ok && s->res.converged_after < 0)
        s->res.converged_after = s->tick - s->tail_start;
    if (!ok && s->res.converged_after >= 0)
        fail(s, "converged at step %lld, then no more: %s", (long long)(s->tail_start + s->res.converged_after), why);
    else if (!ok && s->tick - s->tail_start >= s->cfg.converge_within)
        fail(s, "not converged %lld steps after the faults stopped: %s", (long long)s->cfg.converge_within, why);
}

int sim_step(sim_t *s)
{
    if (s->done)
        return 0;
    fault_step(s);
    heal_step(s, 0);
    kube_step(s);
    int up[SR_MAX_NODES + 1];
    sr_step(&s->redis, s->tick, &s->rng, up);
    for (int k = 0; k < SR_MAX_NODES && up[k] >= 0 && !s->done; k++)
        promoted(s, up[k], "FAILOVER");
    client_step(s);
    informer_step(s);
    observer_step(s);
    worker_step(s);
    if (!s->done)
        check_step(s);
    if (!s->done)
        tail_step(s);
    s->res.steps = ++s->tick;
    if (s->tick >= s->cfg.steps)
        s->done = 1;
    return !s->done;
}

void sim_result(const sim_t *s, sim_result_t *out)
{
    *out = s->res;
}

int sim_run(const sim_cfg_t *cfg, sim_result_t *out)
{
    sim_t *s = sim_new(cfg);
    if (!s)
        return -1;
    while (sim_step(s))
        ;
    sim_result(s, out);
    sim_destroy(&s);
    return out->failed ? 1 : 0;
}
