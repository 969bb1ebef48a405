#include "observer.h"

#include "b64.h"
#include "cadence.h"
#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "jsonx.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics.h"
#include "obsdiff.h"
#include "rdc_api.h"
#include "rdc_spec.h"
#include "proto.h"
#include "redis_tls.h"
#include "redisnode.h"
#include "rmsg.h"
#include "secretfetch.h"
#include "tlscert.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define INSTANCE_LABEL "app.kubernetes.io/instance"
#define SNAPSHOT_TIMEOUT_NS (INT64_C(10) * NS_PER_SEC)
#define SECRET_RETRY_NS (INT64_C(10) * NS_PER_SEC)
#define TLS_ANNOTATION "cache.example.com/tls" /* workerd/render.h RENDER_TLS_ANNOTATION */
#define METRICS_EVERY_NS NS_PER_SEC
/* Pods of one cluster: Cluster mode has up to 100 (shards x (1 + replicasPerShard)). */
#define MAX_NODES 128

typedef struct cluster cluster_t;
typedef struct observer observer_t;

/* Kept per pod of every cluster, so kept small (issue 33: observerd's memory grows with
 * the pods): the key and name share one allocation with the struct, a Cluster-mode error
 * is allocated only when there is one. */
typedef struct pod {
    observer_t *ob;
    const char *name;           /* in key, after the namespace's '/' */
    char ip[64];                /* "" until it has one */
    int tls;                    /* its annotation says it speaks TLS on the Redis port */
    cluster_t *cluster;
    redisnode_t *node;          /* NULL while no IP */
    unsigned probes;
    int reprobe;                /* probe again as soon as the one in flight ends */
    char *cluster_error;        /* the node's cluster error last logged (NULL none) */
    int seen;                   /* mark of the snapshot in progress */
    struct pod *next, *cnext;   /* all pods; the cluster's pods */
    char key[];                 /* namespace/name */
} pod_t;

struct cluster {
    observer_t *ob;
    char key[512], ns[254], name[254];
    int has_object;             /* the RedisCluster is cached (else: pods only, so far) */
    char secret_key[254];       /* spec.auth.secretRef.key; "" = no auth */
    char *password;             /* NULL until the Secret was read */
    secretfetch_t *auth_f;      /* spec.auth's Secret */
    secretfetch_t *tls_f;       /* spec.tls's Secret */
    int tls_client_auth;        /* spec.tls.clientAuth: present tls.crt, tls.key */
    redis_tls_t *tls;           /* the probes' TLS settings from it; NULL until read */
    tlscert_check_t tls_cert;   /* its certificate (have_cert: read) */
    int cluster_mode;           /* spec.mode Cluster: probes ask CLUSTER NODES and CLUSTER INFO */
    int64_t evaluated_ns;       /* when on_probe last evaluated it */
    obs_node_t *sent;           /* the observation last sent (obsdiff_copy: owns its texts) */
    size_t nsent;
    int ever_sent;
    int64_t last_sent_ns;
    int64_t down_after_ms;      /* spec.failover.downAfter (0: the default; -1: Standalone,
                                   no failover, obsdiff_still_down_due) */
    char primary[254];          /* the sole reachable master last seen, "" none yet */
    int64_t cmd_wall_ns;        /* status.lastRedisCommandTime (Replication), 0 none */
    int64_t cmd_mono_ns;        /* ... on the loop clock */
    int64_t cmd_sent_ns;        /* the cmd_wall_ns the last observation sent was wholly probed
                                   after (0: it was not) */
    int64_t hot_until_ns;       /* probed every OBSERVE_HOT_INTERVAL_MS until then (loop
                                   clock; 0: cold; cadence.h) */
    int seen;
    pod_t *pods;
    struct cluster *next;
};

struct observer {
    const observer_config_t *cfg;
    loop_t *loop;
    CURLM *multi;
    loop_curl_t *lc;
    void *zctx, *sub, *snap, *push, *hint;
    int snapshotting;
    int snap_timer;
    uint64_t seq;
    int hugz_behind;            /* HUGZ in a row whose seq was below ours */
    int synced;                 /* a snapshot completed at least once */
    cluster_t *clusters;
    pod_t *pods;
    int tick_timer;
    int hot_timer;              /* the fast probes' timer while a cluster is hot (0: none) */
    metric_family_t *m_up, *m_role, *m_lag, *m_clients, *m_changes, *m_sent, *m_rx_up, *m_rx_clients,
        *m_rx_mem, *m_rx_maxmem, *m_rx_evicted, *m_rx_expired, *m_rx_hits, *m_rx_misses, *m_rx_cmds,
        *m_rx_slaves, *m_rx_offset, *m_rx_bgsave;
    metric_family_t *m_cl_state, *m_cl_assigned, *m_cl_ok, *m_cl_pfail, *m_cl_fail, *m_cl_known, *m_cl_migrating;
    metric_family_t *m_tls_expiry;
    obs_node_t scratch[MAX_NODES]; /* evaluate's observation under construction */
};

/* ---- clusters and pods ---------------------------------------------------------------- */

static cluster_t *cluster_find(observer_t *ob, const char *key)
{
    for (cluster_t *c = ob->clusters; c; c = c->next)
        if (strcmp(c->key, key) == 0)
            return c;
    return NULL;
}

static void on_auth_secret(const json_object *secret, const char *why, void *arg);
static void on_tls_secret(const json_object *secret, const char *why, void *arg);

static cluster_t *cluster_get(observer_t *ob, const char *key)
{
    cluster_t *c = cluster_find(ob, key);
    if (c)
        return c;
    const char *slash = strchr(key, '/');
    if (!slash || strlen(key) >= sizeof(c->key) || (size_t)(slash - key) >= sizeof(c->ns) ||
        strlen(slash + 1) >= sizeof(c->name))
        return NULL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->ob = ob;
    snprintf(c->key, sizeof(c->key), "%s", key);
    snprintf(c->ns, sizeof(c->ns), "%.*s", (int)(slash - key), key);
    snprintf(c->name, sizeof(c->name), "%s", slash + 1);
    c->auth_f = secretfetch_new(ob->lc, ob->cfg->client, c->ns, on_auth_secret, c);
    c->tls_f = secretfetch_new(ob->lc, ob->cfg->client, c->ns, on_tls_secret, c);
    if (!c->auth_f || !c->tls_f) {
        secretfetch_destroy(&c->auth_f);
        secretfetch_destroy(&c->tls_f);
        free(c);
        return NULL;
    }
    c->seen = 1;
    c->next = ob->clusters;
    ob->clusters = c;
    return c;
}

static void password_forget(cluster_t *c)
{
    if (c->password) {
        memset(c->password, 0, strlen(c->password));
        free(c->password);
    }
    c->password = NULL;
}

/* Free c when nothing refers to it any more (no object, no pods). */
static void cluster_maybe_free(observer_t *ob, cluster_t *c)
{
    if (c->has_object || c->pods)
        return;
    cluster_t **pp = &ob->clusters;
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    secretfetch_destroy(&c->auth_f);
    secretfetch_destroy(&c->tls_f);
    password_forget(c);
    redis_tls_destroy(&c->tls);
    obsdiff_free(&c->sent, c->nsent);
    free(c);
}

static pod_t *pod_find(observer_t *ob, const char *key)
{
    for (pod_t *p = ob->pods; p; p = p->next)
        if (strcmp(p->key, key) == 0)
            return p;
    return NULL;
}

static void pod_unlink_cluster(observer_t *ob, pod_t *p)
{
    cluster_t *c = p->cluster;
    if (!c)
        return;
    pod_t **pp = &c->pods;
    while (*pp && *pp != p)
        pp = &(*pp)->cnext;
    if (*pp)
        *pp = p->cnext;
    p->cluster = NULL;
    p->cnext = NULL;
    cluster_maybe_free(ob, c);
}

static void pod_remove(observer_t *ob, pod_t *p)
{
    pod_t **pp = &ob->pods;
    while (*pp && *pp != p)
        pp = &(*pp)->next;
    if (*pp)
        *pp = p->next;
    redisnode_destroy(&p->node);
    pod_unlink_cluster(ob, p);
    free(p->cluster_error);
    free(p);
}

static void on_probe(redisnode_t *node, void *arg);

/* p's node as its cluster says: the password, TLS when the pod speaks it (its name
 * under the headless Service checked), Cluster mode. */
static void node_settings(const pod_t *p)
{
    const cluster_t *c = p->cluster;
    if (!p->node || !c)
        return;
    char name[800];
    snprintf(name, sizeof(name), "%s.%s.%s.svc", p->name, c->name, c->ns);
    redisnode_set_password(p->node, c->password);
    redisnode_set_tls(p->node, p->tls ? c->tls : NULL, name);
    redisnode_set_cluster(p->node, c->cluster_mode);
}

static void nodes_settings(const cluster_t *c)
{
    for (pod_t *p = c->pods; p; p = p->cnext)
        node_settings(p);
}

/* Probe pod p now: at once when idle, else as soon as its probe in flight ends (it may
 * have begun before what the caller wants to see). */
static void probe_now(pod_t *p)
{
    if (!p->node)
        return;
    if (redisnode_busy(p->node)) {
        p->reprobe = 1;
        return;
    }
    p->probes++;
    (void)redisnode_probe(p->node, 0); /* a probe that could not start reported its failure */
}

/* status.lastRedisCommandTime of the RedisCluster obj (docs/failover.md, "Decisions after
 * the operator's own commands"): a newer one has every pod of c probed at once (issue
 * 33: a cluster being acted on is looked at sooner), and the first observation whose
 * every pod was probed after it is sent even without news (evaluate), so that plan,
 * which decides nothing from a pod probed before the operator's last command, has one
 * to decide from. */
static void cluster_commanded(observer_t *ob, cluster_t *c, const json_object *obj)
{
    const char *t = JSONX_STR_AT(obj, "status", "lastRedisCommandTime");
    int64_t at = 0;
    if (!t || clock_parse_rfc3339(t, &at) || at == c->cmd_wall_ns)
        return;
    int64_t now_wall = clock_wall_ns(), now = loop_now(ob->loop);
    c->cmd_wall_ns = at;
    c->cmd_mono_ns = now - (now_wall - at);
    if (at > now_wall)
        return; /* the end of a window still open: the regular probes pass it */
    for (pod_t *p = c->pods; p; p = p->cnext)
        probe_now(p);
}

/* 1 when every pod of c with an IP was last probed after mono (the loop clock). */
static int probed_after(const cluster_t *c, int64_t mono)
{
    for (const pod_t *p = c->pods; p; p = p->cnext) {
        const redisnode_state_t *st = p->node ? redisnode_state(p->node) : NULL;
        if (st && (!st->probes || st->last_probe_ns <= mono))
            return 0;
    }
    return 1;
}

/* ---- the delta stream: apply objects ------------------------------------------------- */

/* spec.auth: the Secret and key the password is read from. */
static void apply_auth(observer_t *ob, cluster_t *c, const json_object *obj)
{
    const char *sname = JSONX_STR_AT(obj, "spec", "auth", "secretRef", "name");
    const char *skey = JSONX_STR_AT(obj, "spec", "auth", "secretRef", "key");
    if (!sname)
        sname = "";
    if (!skey || !*skey)
        skey = "password";
    if (!*sname)
        skey = "";
    int renamed = secretfetch_set(c->auth_f, sname, loop_now(ob->loop));
    if (!renamed && !strcmp(skey, c->secret_key))
        return;
    snprintf(c->secret_key, sizeof(c->secret_key), "%s", skey);
    secretfetch_due(c->auth_f, loop_now(ob->loop));
    password_forget(c);
    nodes_settings(c);
    if (*sname)
        rlog_info("cluster authenticates: reading its Secret", "cluster", c->key, "secret", sname, "secretKey", skey);
}

/* spec.tls: the Secret the probes' TLS settings are made from (docs/tls-and-acl.md); the
 * settings in use stay until the new ones are read. */
static void apply_tls(observer_t *ob, cluster_t *c, const json_object *obj)
{
    const char *tname = JSONX_STR_AT(obj, "spec", "tls", "secretRef", "name");
    const json_object *ca = JSONX_AT(obj, "spec", "tls", "clientAuth");
    int client_auth = ca && json_object_is_type(ca, json_type_boolean) && json_object_get_boolean(ca);
    if (!secretfetch_set(c->tls_f, tname, loop_now(ob->loop)) && client_auth == c->tls_client_auth)
        return;
    c->tls_client_auth = client_auth;
    if (!tname || !*tname) {
        redis_tls_t *old = c->tls;
        c->tls = NULL;
        memset(&c->tls_cert, 0, sizeof(c->tls_cert));
        nodes_settings(c);
        redis_tls_destroy(&old);
        return;
    }
    secretfetch_due(c->tls_f, loop_now(ob->loop));
    rlog_info("cluster speaks TLS: reading its Secret", "cluster", c->key, "secret", tname);
}

static void cluster_apply(observer_t *ob, const char *key, json_object *obj, int deleted)
{
    cluster_t *c = deleted ? cluster_find(ob, key) : cluster_get(ob, key);
    if (!c)
        return;
    c->seen = 1;
    if (deleted) {
        c->has_object = 0;
        c->secret_key[0] = '\0';
        secretfetch_set(c->auth_f, NULL, 0);
        secretfetch_set(c->tls_f, NULL, 0);
        password_forget(c);
        cluster_maybe_free(ob, c);
        return;
    }
    c->has_object = 1;
    cluster_commanded(ob, c, obj);
    /* How long "still down" is repeated every second (obsdiff_still_down_due). */
    const char *down_after = JSONX_STR_AT(obj, "spec", "failover", "downAfter");
    int64_t down_ns = 0;
    c->down_after_ms = down_after && !rdc_spec_duration_ns(down_after, &down_ns) ? down_ns / NS_PER_MS : 0;
    const char *mode = JSONX_STR_AT(obj, "spec", "mode");
    if (mode && !strcmp(mode, "Standalone"))
        c->down_after_ms = -1; /* nothing waits for downAfter: a down pod is news once */
    int cluster_mode = mode && !strcmp(mode, "Cluster");
    if (cluster_mode != c->cluster_mode) {
        c->cluster_mode = cluster_mode;
        nodes_settings(c);
    }
    apply_auth(ob, c, obj);
    apply_tls(ob, c, obj);
}

/* A Secret's metadata changed (the delta stream: no data): a Secret a cluster reads whose
 * resourceVersion is not the one read is read again at once. */
static void secret_apply(observer_t *ob, const char *key, const json_object *obj)
{
    const char *slash = strchr(key, '/'), *rv = JSONX_STR_AT(obj, "metadata", "resourceVersion");
    if (!slash)
        return;
    for (cluster_t *c = ob->clusters; c; c = c->next) {
        if (strncmp(c->ns, key, (size_t)(slash - key)) || c->ns[slash - key])
            continue;
        secretfetch_t *f[2] = {c->auth_f, c->tls_f};
        for (int i = 0; i < 2; i++)
            if (!strcmp(secretfetch_name(f[i]), slash + 1) && (!rv || strcmp(rv, secretfetch_rv(f[i]))))
                secretfetch_due(f[i], loop_now(ob->loop));
    }
}

static void pod_apply(observer_t *ob, const char *key, json_object *obj, int deleted)
{
    pod_t *p = pod_find(ob, key);
    if (deleted) {
        if (p)
            pod_remove(ob, p);
        return;
    }
    const char *ns = JSONX_STR_AT(obj, "metadata", "namespace");
    const char *name = JSONX_STR_AT(obj, "metadata", "name");
    const char *inst = JSONX_STR_AT(obj, "metadata", "labels", INSTANCE_LABEL);
    const char *ip = JSONX_STR_AT(obj, "status", "podIP");
    const char *phase = JSONX_STR_AT(obj, "status", "phase");
    const char *tls = JSONX_STR_AT(obj, "metadata", "annotations", TLS_ANNOTATION);
    if (!ns || !name || !inst || !*inst) {
        if (p)
            pod_remove(ob, p);
        return;
    }
    /* A pod that ended has no server to watch, even if its IP is still reported. */
    if (!ip || (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
        ip = "";
    char ckey[512];
    snprintf(ckey, sizeof(ckey), "%s/%s", ns, inst);
    if (!p) {
        size_t kn = strlen(key), nn = strlen(name);
        if (kn >= 512 || nn >= 254 || nn >= kn || strcmp(key + kn - nn, name) != 0)
            return; /* key is namespace/name: name is its end */
        p = calloc(1, sizeof(*p) + kn + 1);
        if (!p)
            return;
        p->ob = ob;
        memcpy(p->key, key, kn + 1);
        p->name = p->key + kn - nn;
        p->next = ob->pods;
        ob->pods = p;
    }
    p->seen = 1;
    p->tls = tls && !strcmp(tls, "on");
    if (!p->cluster || strcmp(p->cluster->key, ckey) != 0) {
        pod_unlink_cluster(ob, p);
        cluster_t *c = cluster_get(ob, ckey);
        if (!c) {
            pod_remove(ob, p);
            return;
        }
        p->cluster = c;
        p->cnext = c->pods;
        c->pods = p;
    }
    if (strcmp(p->ip, ip) != 0) {
        /* A new IP is a new server (the pod was recreated): a new connection. */
        redisnode_destroy(&p->node);
        snprintf(p->ip, sizeof(p->ip), "%s", ip);
        p->probes = 0;
        if (*ip)
            p->node = redisnode_new(ob->loop, ip, ob->cfg->redis_port, ob->cfg->probe_timeout_ns, on_probe, p);
    }
    node_settings(p);
}

static void apply_item(observer_t *ob, const char *kind, const char *key, const char *json, size_t len,
                       int deleted)
{
    int is_rc = strcmp(kind, "RedisCluster") == 0, is_pod = strcmp(kind, "Pod") == 0;
    if (!is_rc && !is_pod && strcmp(kind, "Secret"))
        return;
    json_object *obj = NULL;
    if (!deleted) {
        json_tokener *tok = json_tokener_new();
        obj = tok ? json_tokener_parse_ex(tok, json, (int)len) : NULL;
        json_tokener_free(tok);
        if (!obj || !json_object_is_type(obj, json_type_object)) {
            proto_error("deltas", "object is not JSON");
            json_object_put(obj);
            return;
        }
    }
    if (is_rc)
        cluster_apply(ob, key, obj, deleted);
    else if (is_pod)
        pod_apply(ob, key, obj, deleted);
    else
        secret_apply(ob, key, obj);
    json_object_put(obj);
}

/* ---- the delta stream: Clone pattern -------------------------------------------------- */

static int on_sub(loop_t *loop, void *socket, int fd, int revents, void *arg);
static void take_snapshot(observer_t *ob);

static void *new_dealer(observer_t *ob)
{
    char ep[4200];
    void *s = zmq_socket(ob->zctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_connect(s, daemon_endpoint(ob->cfg->runtime_dir, PROTO_EP_SNAPSHOT, ep, sizeof(ep)));
    return s;
}

static int on_snap_timeout(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    observer_t *ob = arg;
    ob->snap_timer = 0;
    rlog_warn("no snapshot from informerd yet; asking again");
    take_snapshot(ob);
    return 0;
}

static int on_snap(loop_t *loop, void *socket, int fd, int revents, void *arg);

/* Ask for a snapshot on a fresh DEALER (a late answer to an earlier request cannot mix
 * in), and stop reading deltas until it is complete: they wait in the SUB socket. */
static void take_snapshot(observer_t *ob)
{
    if (ob->snap) {
        loop_remove_socket(ob->loop, ob->snap);
        zmq_close(ob->snap);
    }
    ob->snap = new_dealer(ob);
    loop_add_socket(ob->loop, ob->snap, LOOP_IN, on_snap, ob);
    loop_remove_socket(ob->loop, ob->sub);
    ob->snapshotting = 1;
    for (cluster_t *c = ob->clusters; c; c = c->next)
        c->seen = 0;
    for (pod_t *p = ob->pods; p; p = p->next)
        p->seen = 0;
    rmsg_t *req = rmsg_new();
    rmsg_addstr(req, PROTO_ICANHAZ);
    rmsg_send(&req, ob->snap, ZMQ_DONTWAIT);
    if (ob->snap_timer)
        loop_cancel_timer(ob->loop, ob->snap_timer);
    ob->snap_timer = loop_add_timer(ob->loop, SNAPSHOT_TIMEOUT_NS, 0, on_snap_timeout, ob);
    if (ob->snap_timer < 0)
        ob->snap_timer = 0;
}

/* The snapshot is complete: what it did not mention is gone. */
static void snapshot_done(observer_t *ob, uint64_t seq)
{
    for (pod_t *p = ob->pods, *next; p; p = next) {
        next = p->next;
        if (!p->seen)
            pod_remove(ob, p);
    }
    for (cluster_t *c = ob->clusters, *next; c; c = next) {
        next = c->next;
        /* informerd may have restarted: whatever it knew of our observations is lost. */
        c->ever_sent = 0;
        if (!c->seen && c->has_object)
            cluster_apply(ob, c->key, NULL, 1);
    }
    ob->seq = seq;
    ob->snapshotting = 0;
    if (ob->snap_timer)
        loop_cancel_timer(ob->loop, ob->snap_timer);
    ob->snap_timer = 0;
    loop_add_socket(ob->loop, ob->sub, LOOP_IN, on_sub, ob);
    if (!ob->synced) {
        ob->synced = 1;
        daemon_notify_ready();
    }
    size_t np = 0, nc = 0;
    for (pod_t *p = ob->pods; p; p = p->next)
        np++;
    for (cluster_t *c = ob->clusters; c; c = c->next)
        nc++;
    char s[32], a[32], b[32];
    snprintf(s, sizeof(s), "%llu", (unsigned long long)seq);
    snprintf(a, sizeof(a), "%zu", nc);
    snprintf(b, sizeof(b), "%zu", np);
    rlog_info("snapshot applied", "seq", s, "clusters", a, "pods", b);
}

static int on_snap(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)fd, (void)revents;
    observer_t *ob = arg;
    rmsg_t *m;
    while (socket == ob->snap && (m = rmsg_recv(socket, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, PROTO_MAX_BYTES))) {
        int64_t seq = -1;
        if (rmsg_frame_is(m, 0, PROTO_SNAP) && ob->snapshotting) {
            /* SNAP seq kind key rv object */
            char *kind = rmsg_strdup(m, 2), *key = rmsg_strdup(m, 3);
            size_t len = 0;
            const char *json = rmsg_frame(m, 5, &len);
            if (kind && key && json)
                apply_item(ob, kind, key, json, len, 0);
            else
                proto_error("snapshot", "malformed SNAP");
            free(kind);
            free(key);
        } else if (rmsg_frame_is(m, 0, PROTO_KTHXBAI) && rmsg_frame_int64(m, 1, &seq) == 0 && ob->snapshotting) {
            rmsg_destroy(&m);
            snapshot_done(ob, (uint64_t)seq);
            return 0; /* the socket may have been replaced meanwhile: no more reads */
        }
        rmsg_destroy(&m);
    }
    return 0;
}

static int on_sub(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)fd, (void)revents;
    observer_t *ob = arg;
    rmsg_t *m;
    while (!ob->snapshotting && (m = rmsg_recv(socket, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, PROTO_MAX_BYTES))) {
        int64_t seq = 0;
        if (rmsg_frame_is(m, 0, PROTO_HUGZ) && rmsg_frame_int64(m, 1, &seq) == 0) {
            /* Ahead of us: deltas were lost. Behind us twice in a row: informerd restarted
             * from 0 (once may be a heartbeat queued before our snapshot). */
            ob->hugz_behind = (uint64_t)seq < ob->seq ? ob->hugz_behind + 1 : 0;
            if ((uint64_t)seq > ob->seq || ob->hugz_behind >= 2) {
                rlog_warn("delta stream out of step with informerd; taking a new snapshot");
                ob->hugz_behind = 0;
                take_snapshot(ob);
            }
        } else if (rmsg_frame_is(m, 0, PROTO_DELTA) && rmsg_frame_int64(m, 1, &seq) == 0) {
            if ((uint64_t)seq > ob->seq) {
                if ((uint64_t)seq != ob->seq + 1) {
                    rlog_warn("gap in the delta stream; taking a new snapshot");
                    take_snapshot(ob);
                } else {
                    /* DELTA seq type kind key rv object */
                    char *kind = rmsg_strdup(m, 3), *key = rmsg_strdup(m, 4);
                    size_t len = 0;
                    const char *json = rmsg_frame(m, 6, &len);
                    if (kind && key && json)
                        apply_item(ob, kind, key, json, len, rmsg_frame_is(m, 2, "DELETED"));
                    else
                        proto_error("deltas", "malformed DELTA");
                    free(kind);
                    free(key);
                    ob->seq = (uint64_t)seq;
                }
            }
        }
        rmsg_destroy(&m);
    }
    return 0;
}

/* ---- Secrets -------------------------------------------------------------------------- */

/* spec.auth's Secret read (secretfetch.h): its key's password for every pod's node. */
static void on_auth_secret(const json_object *secret, const char *why_, void *arg)
{
    cluster_t *c = arg;
    observer_t *ob = c->ob;
    const char *b64 = jsonx_str(jsonx_get(secret, "data"), c->secret_key);
    char *pw = b64 ? b64_text(b64) : NULL, why[300];
    if (!secret)
        snprintf(why, sizeof(why), "%s", why_ ? why_ : "");
    else if (!b64)
        snprintf(why, sizeof(why), "the Secret has no data key \"%.200s\"", c->secret_key);
    else if (!pw)
        snprintf(why, sizeof(why), "data key \"%.200s\" is not base64", c->secret_key);
    if (!pw) {
        secretfetch_due(c->auth_f, loop_now(ob->loop) + SECRET_RETRY_NS);
        rlog_warn("cannot read the cluster's Secret; probing without a password", "cluster", c->key, "secret",
                  secretfetch_name(c->auth_f), "reason", why);
        return;
    }
    int changed = !c->password || strcmp(c->password, pw) != 0;
    password_forget(c);
    c->password = pw;
    nodes_settings(c);
    if (changed)
        rlog_info("read the cluster's Secret", "cluster", c->key, "secret", secretfetch_name(c->auth_f));
}

/* The decoded data key of secret (a new string), or NULL. */
static char *data_of(const json_object *secret, const char *key)
{
    const char *b64 = jsonx_str(jsonx_get(secret, "data"), key);
    return b64 ? b64_text(b64) : NULL;
}

/* spec.tls's Secret read: new TLS settings for every pod's node that speaks TLS (those in
 * use until now go once the nodes have the new ones), and its certificate's facts (the
 * expiry metric; a pod that serves another is met on fresh connections, on_probe). */
static void on_tls_secret(const json_object *secret, const char *why_, void *arg)
{
    cluster_t *c = arg;
    observer_t *ob = c->ob;
    char *crt = data_of(secret, "tls.crt"), *key = data_of(secret, "tls.key"), *ca = data_of(secret, "ca.crt");
    char err[300] = "";
    int pair = c->tls_client_auth;
    redis_tls_config_t cfg = {.ca_pem = ca, .ca_len = ca ? strlen(ca) : 0, .cert_pem = pair ? crt : NULL,
                              .cert_len = pair && crt ? strlen(crt) : 0, .key_pem = pair ? key : NULL,
                              .key_len = pair && key ? strlen(key) : 0};
    redis_tls_t *tls = NULL;
    if (!secret)
        snprintf(err, sizeof(err), "%s", why_ ? why_ : "");
    else if (!ca)
        snprintf(err, sizeof(err), "the Secret has no ca.crt to verify the pods with");
    else
        tls = redis_tls_new(&cfg, err, sizeof(err));
    if (tls) {
        redis_tls_t *old = c->tls;
        c->tls = tls;
        if (tlscert_read(crt, crt ? strlen(crt) : 0, &c->tls_cert))
            memset(&c->tls_cert, 0, sizeof(c->tls_cert));
        nodes_settings(c);
        redis_tls_destroy(&old);
        rlog_info("read the cluster's TLS Secret", "cluster", c->key, "secret", secretfetch_name(c->tls_f), "serial",
                  c->tls_cert.serial);
    } else {
        secretfetch_due(c->tls_f, loop_now(ob->loop) + SECRET_RETRY_NS);
        rlog_warn("cannot use the cluster's TLS Secret", "cluster", c->key, "secret", secretfetch_name(c->tls_f),
                  "reason", err);
    }
    if (key)
        explicit_bzero(key, strlen(key));
    free(key);
    free(crt);
    free(ca);
}

static void on_curl_done(CURL *easy, CURLcode result, void *arg)
{
    (void)result, (void)arg;
    curl_easy_cleanup(easy); /* none of ours: the Secrets' transfers have their own callback */
}

/* ---- observations ------------------------------------------------------------------- */

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const obs_node_t *)a)->pod, ((const obs_node_t *)b)->pod);
}

/* What node state st (NULL: none) says of Redis Cluster, into x (borrowing its nodes
 * text); on: the cluster is in Cluster mode. */
static void cluster_of(int on, const redisnode_state_t *st, obs_cluster_t *x)
{
    x->on = on;
    cn_info_parse(NULL, 0, &x->info);
    if (!x->on || !st || !st->cluster_known)
        return;
    x->known = 1;
    x->nodes = st->cluster_nodes;
    snprintf(x->error, sizeof(x->error), "%s", st->cluster_error);
    x->info = st->cluster_info;
}

/* The cluster's nodes now, sorted by pod name, borrowing the nodes' cluster texts.
 * Returns how many (at most cap). */
static size_t build_nodes(const cluster_t *c, int64_t now, obs_node_t *out, size_t cap)
{
    size_t n = 0;
    for (const pod_t *p = c->pods; p && n < cap; p = p->cnext) {
        obs_node_t *x = &out[n++];
        memset(x, 0, sizeof(*x));
        snprintf(x->pod, sizeof(x->pod), "%s", p->name);
        snprintf(x->ip, sizeof(x->ip), "%s", p->ip);
        x->offset = x->keys = -1;
        x->last_ok_ago_ms = -1;
        x->link_down_ms = x->master_io_ms = -1;
        x->probed_ago_ms = -1;
        const redisnode_state_t *st = p->node ? redisnode_state(p->node) : NULL;
        cluster_of(c->cluster_mode, st, &x->cluster);
        if (!st || !st->probes)
            continue; /* no IP yet, or not probed yet: unknown, unreachable */
        x->reachable = st->reachable;
        snprintf(x->tls_cert, sizeof(x->tls_cert), "%s", st->tls_cert);
        x->probed_ago_ms = (now - st->last_probe_ns) / NS_PER_MS;
        if (st->ever_answered) {
            x->role = st->info.role;
            snprintf(x->master_host, sizeof(x->master_host), "%s", st->info.master_host);
            x->master_port = st->info.master_port;
            x->link_up = st->info.link_up;
            /* As of the last answer: Redis counts whole seconds. */
            if (st->info.role == REDISINFO_ROLE_SLAVE && !st->info.link_up && st->info.link_down_s >= 0)
                x->link_down_ms = st->info.link_down_s * 1000 + (now - st->last_ok_ns) / NS_PER_MS;
            if (st->info.role == REDISINFO_ROLE_SLAVE && st->info.link_up && st->info.master_io_s >= 0)
                x->master_io_ms = (st->info.master_io_s + 1) * 1000 + (now - st->last_ok_ns) / NS_PER_MS;
            x->offset = redisinfo_offset(&st->info);
            x->keys = st->info.keys;
            x->last_ok_ago_ms = (now - st->last_ok_ns) / NS_PER_MS;
        }
        x->down_since_ms = st->down_since_ns ? (now - st->down_since_ns) / NS_PER_MS : 0;
    }
    qsort(out, n, sizeof(*out), cmp_node);
    return n;
}

/* Every pod of c has been probed at least once (so a first observation is whole). */
static int all_probed(const cluster_t *c)
{
    for (const pod_t *p = c->pods; p; p = p->cnext)
        if (p->node && !redisnode_state(p->node)->probes)
            return 0;
    return 1;
}

static void count_primary(observer_t *ob, cluster_t *c, const obs_node_t *nodes, size_t n)
{
    const char *only = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!nodes[i].reachable || nodes[i].role != REDISINFO_ROLE_MASTER)
            continue;
        if (only)
            return; /* two primaries: not a change of primary (plan's business) */
        only = nodes[i].pod;
    }
    if (!only || strcmp(only, c->primary) == 0)
        return;
    if (c->primary[0]) {
        metric_counter_add(ob->m_changes, METRIC_LABELS(c->ns, c->name), 1);
        rlog_info("primary changed", "cluster", c->key, "from", c->primary, "to", only);
    }
    snprintf(c->primary, sizeof(c->primary), "%.253s", only);
}

static void evaluate(observer_t *ob, cluster_t *c)
{
    if (!all_probed(c))
        return;
    int64_t now = loop_now(ob->loop);
    obs_node_t *nodes = ob->scratch;
    size_t n = build_nodes(c, now, nodes, MAX_NODES);
    count_primary(ob, c, nodes, n);
    obsdiff_t d = c->ever_sent ? obsdiff_compare(c->sent, c->nsent, nodes, n) : OBSDIFF_CHANGED;
    int after = c->cmd_wall_ns && probed_after(c, c->cmd_mono_ns);
    int fresh = after && c->cmd_sent_ns != c->cmd_wall_ns && d != OBSDIFF_CHANGED;
    if (fresh)
        d = OBSDIFF_CHANGED; /* the first one wholly after the operator's commands */
    if (d == OBSDIFF_SAME ||
        (d == OBSDIFF_STILL_DOWN &&
         !obsdiff_still_down_due(nodes, n, c->down_after_ms, (now - c->last_sent_ns) / NS_PER_MS)))
        return;
    char why[600] = "first observation";
    if (c->ever_sent)
        obsdiff_explain(c->sent, c->nsent, nodes, n, why, sizeof(why));
    if (d == OBSDIFF_STILL_DOWN)
        snprintf(why, sizeof(why), "a primary is still unreachable");
    if (fresh)
        snprintf(why, sizeof(why), "every pod probed after the operator's last Redis commands");
    char at[40];
    clock_format_rfc3339(clock_wall_ns(), 3, at, sizeof(at));
    buf_t body;
    buf_init(&body, PROTO_MAX_OBSERVATION_BYTES);
    if (obsdiff_json(nodes, n, at, &body)) {
        buf_free(&body);
        rlog_warn("observation too large to send", "cluster", c->key);
        return;
    }
    rmsg_t *m = rmsg_new();
    rmsg_addstr(m, PROTO_OBSERVED);
    rmsg_addstr(m, c->key);
    rmsg_addmem(m, buf_str(&body), body.len);
    int rc = rmsg_send(&m, ob->push, ZMQ_DONTWAIT);
    rmsg_destroy(&m);
    buf_free(&body);
    if (rc) {
        /* informerd is not taking it now: the next probe compares against what was last
         * sent, so the news is sent then. */
        return;
    }
    obs_node_t *copy = NULL;
    if (obsdiff_copy(nodes, n, &copy))
        return;
    obsdiff_free(&c->sent, c->nsent);
    c->sent = copy;
    c->nsent = n;
    c->ever_sent = 1;
    c->last_sent_ns = now;
    c->cmd_sent_ns = after ? c->cmd_wall_ns : 0;
    metric_counter_add(ob->m_sent, METRIC_LABELS(d == OBSDIFF_STILL_DOWN ? "still_down" : "changed"), 1);
    if (d == OBSDIFF_CHANGED)
        rlog_info("observation sent", "cluster", c->key, "reason", why);
    else
        rlog_debug("observation sent", "cluster", c->key, "reason", why);
}

/* A probe of one of c's pods is in flight. */
static int cluster_probing(const cluster_t *c)
{
    for (const pod_t *p = c->pods; p; p = p->cnext)
        if (p->node && redisnode_busy(p->node))
            return 1;
    return 0;
}

/* A Cluster-mode pod that answered without a usable CLUSTER NODES: a warning once per
 * change of reason. */
static void warn_cluster_error(const cluster_t *c, pod_t *p, const redisnode_state_t *st)
{
    if (!st->reachable || strcmp(st->cluster_error, p->cluster_error ? p->cluster_error : "") == 0)
        return;
    if (st->cluster_error[0])
        rlog_warn("the pod's CLUSTER NODES is not usable", "cluster", c->key, "pod", p->name, "error",
                  st->cluster_error);
    free(p->cluster_error);
    p->cluster_error = st->cluster_error[0] ? strdup(st->cluster_error) : NULL; /* NULL: say it again */
}

/* What a probe of p says of c's Secrets: a password not read yet, or refused (rotated?),
 * or a TLS refusal (renewed?): read again after a while; a pod that served another
 * certificate than the Secret's is met on a fresh connection next time (a new handshake
 * shows whether it took the new one). */
static void secrets_after_probe(observer_t *ob, cluster_t *c, pod_t *p, const redisnode_state_t *st)
{
    int64_t later = loop_now(ob->loop) + SECRET_RETRY_NS;
    int auth_pending = secretfetch_pending(c->auth_f), tls_pending = secretfetch_pending(c->tls_f);
    if (!st->reachable && *secretfetch_name(c->auth_f) && !auth_pending &&
        (!c->password || strstr(st->error, "WRONGPASS") || strstr(st->error, "NOAUTH")))
        secretfetch_due(c->auth_f, later);
    if (!st->reachable && p->tls && *secretfetch_name(c->tls_f) && !tls_pending &&
        (!c->tls || strstr(st->error, "TLS")))
        secretfetch_due(c->tls_f, later);
    if (p->tls && c->tls_cert.have_cert && st->reachable && strcmp(st->tls_cert, c->tls_cert.sha256))
        redisnode_reconnect(p->node);
}

static void on_probe(redisnode_t *node, void *arg)
{
    pod_t *p = arg;
    observer_t *ob = p->ob;
    const redisnode_state_t *st = redisnode_state(node);
    cluster_t *c = p->cluster;
    if (c)
        secrets_after_probe(ob, c, p, st);
    if (c && c->cluster_mode)
        warn_cluster_error(c, p, st);
    /* In Cluster mode every node's view lists every node, so an observation is large
     * (about 130 bytes x pods^2) and a change (a meet, a failover) shows in every view at
     * once: it is evaluated once a round, when the last probe of the cluster's pods has
     * ended, not after each (and at least every two rounds, should probes that outlast
     * the interval overlap for ever: rounds end up to a probe timeout apart from the
     * interval, so the bound must be longer than both). */
    int64_t now = loop_now(ob->loop), bound = 2 * ob->cfg->probe_interval_ns + ob->cfg->probe_timeout_ns;
    if (c && (!c->cluster_mode || !cluster_probing(c) || now - c->evaluated_ns >= bound)) {
        c->evaluated_ns = now;
        evaluate(ob, c);
    }
    if (p->reprobe) { /* asked for while this one was in flight (probe_now): the next at once */
        p->reprobe = 0;
        p->probes++;
        (void)redisnode_probe(node, 0);
    }
}

/* ---- ticks and metrics -------------------------------------------------------------- */

/* 1 when p can be probed now: it has a node with no probe in flight, and it is not a pod
 * that speaks TLS whose cluster's TLS Secret is still being read (in plain text it would
 * only look unreachable). */
static int may_probe(const pod_t *p)
{
    if (!p->node || redisnode_busy(p->node))
        return 0;
    const cluster_t *c = p->cluster;
    return !(p->tls && c && !c->tls && *secretfetch_name(c->tls_f) && secretfetch_pending(c->tls_f));
}

/* The fast probes (cadence.h): every OBSERVE_HOT_INTERVAL_MS while some cluster is hot,
 * each due pod of a hot cluster probed (PING and INFO replication; the full INFO stays
 * on the 1 s tick's count); the timer ends once none is hot. */
static int on_hot(loop_t *loop, int id, void *arg)
{
    observer_t *ob = arg;
    int64_t now = loop_now(loop);
    int any = 0;
    for (cluster_t *c = ob->clusters; c; c = c->next) {
        if (!cadence_hot(c->hot_until_ns, now)) {
            if (c->hot_until_ns)
                rlog_info("probe cadence: every second again", "cluster", c->key, "reason", "the hint expired");
            c->hot_until_ns = 0;
            continue;
        }
        any = 1;
        for (pod_t *p = c->pods; p; p = p->cnext)
            if (may_probe(p) && cadence_due(c->hot_until_ns, now, 0, redisnode_state(p->node)->last_probe_ns))
                (void)redisnode_probe(p->node, 0); /* one that could not start reported it */
    }
    if (!any) {
        loop_cancel_timer(loop, id);
        ob->hot_timer = 0;
    }
    return 0;
}

/* A HOT hint for the cluster key (proto.h): its new deadline, the fast probes' timer
 * started when it is the first hot one. A cluster observerd does not follow (yet) is
 * ignored: its probes begin with its pods, and a worker says it again. */
static void apply_hint(observer_t *ob, const char *key, int64_t for_ms)
{
    cluster_t *c = cluster_find(ob, key);
    if (!c)
        return;
    int64_t now = loop_now(ob->loop);
    int was = cadence_hot(c->hot_until_ns, now);
    c->hot_until_ns = cadence_hint(now, for_ms);
    int hot = cadence_hot(c->hot_until_ns, now);
    if (hot != was) {
        char ms[24];
        snprintf(ms, sizeof(ms), "%lld", (long long)for_ms);
        rlog_info(hot ? "probe cadence: fast while the operator acts" : "probe cadence: every second again",
                  "cluster", c->key, "for_ms", ms);
    }
    if (hot && !ob->hot_timer) {
        int64_t every = OBSERVE_HOT_INTERVAL_MS * NS_PER_MS;
        ob->hot_timer = loop_add_timer(ob->loop, every, every, on_hot, ob);
        if (ob->hot_timer < 0)
            ob->hot_timer = 0; /* out of memory: every second, as before */
    }
}

/* workerd's hints (proto.h HOT): applied; a malformed one counted and dropped. */
static int on_hint(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)fd, (void)revents;
    observer_t *ob = arg;
    rmsg_t *m;
    while ((m = rmsg_recv(socket, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, PROTO_MAX_BYTES))) {
        char key[PROTO_HOT_KEY_MAX];
        int64_t for_ms = 0;
        const char *why = NULL;
        if (proto_hot_parse(m, key, &for_ms, &why))
            proto_error("hint", why);
        else
            apply_hint(ob, key, for_ms);
        rmsg_destroy(&m);
    }
    return 0;
}

static int on_tick(loop_t *loop, int id, void *arg)
{
    (void)id;
    observer_t *ob = arg;
    int64_t now = loop_now(loop);
    for (cluster_t *c = ob->clusters; c; c = c->next) {
        secretfetch_tick(c->auth_f, now, SECRET_RETRY_NS);
        secretfetch_tick(c->tls_f, now, SECRET_RETRY_NS);
    }
    for (pod_t *p = ob->pods; p; p = p->next) {
        if (!may_probe(p))
            continue;
        int full = ob->cfg->info_every > 0 && p->probes % (unsigned)ob->cfg->info_every == 0;
        p->probes++;
        /* A probe that could not start already reported its failure. */
        (void)redisnode_probe(p->node, full);
    }
    return 0;
}

static void set_if(metric_family_t *f, const char *const *labels, int64_t v)
{
    if (v >= 0)
        metric_gauge_set(f, labels, (double)v);
}

/* A Cluster-mode pod's CLUSTER INFO figures, while it answers (a last known state is
 * not a current one). */
static void cluster_metrics(observer_t *ob, const char *const *l, const redisnode_state_t *st)
{
    if (!st->reachable || !st->cluster_known)
        return;
    const cn_info_t *in = &st->cluster_info;
    const struct {
        metric_family_t *f;
        int64_t v;
    } figs[] = {{ob->m_cl_state, in->state_ok},    {ob->m_cl_assigned, in->slots_assigned},
                {ob->m_cl_ok, in->slots_ok},       {ob->m_cl_pfail, in->slots_pfail},
                {ob->m_cl_fail, in->slots_fail},   {ob->m_cl_known, in->known_nodes}};
    for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++)
        set_if(figs[i].f, l, figs[i].v);
    /* the slots this node has MIGRATING (a resharding under way, or a move cut off) */
    cn_view_t *v = NULL;
    char err[128];
    if (st->cluster_nodes && !cn_parse(st->cluster_nodes, strlen(st->cluster_nodes), &v, err, sizeof(err))) {
        const cn_node_t *me = cn_myself(v);
        int64_t migrating = 0;
        for (size_t i = 0; me && i < me->nopen; i++)
            migrating += !me->open[i].importing;
        metric_gauge_set(ob->m_cl_migrating, l, (double)migrating);
    }
    cn_view_destroy(&v);
}

static int on_metrics(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    observer_t *ob = arg;
    metric_family_t *gauges[] = {ob->m_up, ob->m_role, ob->m_lag, ob->m_clients, ob->m_rx_up, ob->m_rx_clients,
                                 ob->m_rx_mem, ob->m_rx_maxmem, ob->m_rx_evicted, ob->m_rx_expired, ob->m_rx_hits,
                                 ob->m_rx_misses, ob->m_rx_cmds, ob->m_rx_slaves, ob->m_rx_offset, ob->m_rx_bgsave,
                                 ob->m_cl_state, ob->m_cl_assigned, ob->m_cl_ok, ob->m_cl_pfail, ob->m_cl_fail,
                                 ob->m_cl_known, ob->m_cl_migrating};
    /* Rebuilt from scratch: a pod that went leaves no series behind. */
    for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
        metric_family_reset(gauges[i]);
    metric_family_reset(ob->m_tls_expiry);
    int64_t wall_s = clock_wall_ns() / NS_PER_SEC;
    for (cluster_t *c = ob->clusters; c; c = c->next) {
        if (c->tls && c->tls_cert.have_cert)
            metric_gauge_set(ob->m_tls_expiry, METRIC_LABELS(c->ns, c->name),
                             (double)(c->tls_cert.not_after_s - wall_s));
        int64_t primary_offset = -1;
        for (pod_t *p = c->pods; p; p = p->cnext) {
            const redisnode_state_t *st = p->node ? redisnode_state(p->node) : NULL;
            if (st && st->reachable && st->info.role == REDISINFO_ROLE_MASTER &&
                st->info.master_repl_offset > primary_offset)
                primary_offset = st->info.master_repl_offset;
        }
        for (pod_t *p = c->pods; p; p = p->cnext) {
            const char *const *l = METRIC_LABELS(c->ns, c->name, p->name);
            const redisnode_state_t *st = p->node ? redisnode_state(p->node) : NULL;
            int up = st && st->reachable;
            metric_gauge_set(ob->m_up, l, up);
            metric_gauge_set(ob->m_rx_up, l, up);
            if (!st || !st->ever_answered)
                continue;
            const redisinfo_t *in = &st->info;
            if (in->role != REDISINFO_ROLE_UNKNOWN)
                metric_gauge_set(ob->m_role, l, in->role == REDISINFO_ROLE_MASTER);
            int64_t off = redisinfo_offset(in);
            if (in->role == REDISINFO_ROLE_MASTER)
                metric_gauge_set(ob->m_lag, l, 0);
            else if (in->role == REDISINFO_ROLE_SLAVE && off >= 0 && primary_offset >= 0)
                metric_gauge_set(ob->m_lag, l, (double)(primary_offset > off ? primary_offset - off : 0));
            set_if(ob->m_rx_offset, l, in->master_repl_offset);
            set_if(ob->m_rx_slaves, l, in->connected_slaves);
            if (c->cluster_mode)
                cluster_metrics(ob, l, st);
            if (!st->have_full)
                continue;
            const redisinfo_t *f = &st->full;
            set_if(ob->m_clients, l, f->connected_clients);
            set_if(ob->m_rx_clients, l, f->connected_clients);
            set_if(ob->m_rx_mem, l, f->used_memory);
            set_if(ob->m_rx_maxmem, l, f->maxmemory);
            set_if(ob->m_rx_evicted, l, f->evicted_keys);
            set_if(ob->m_rx_expired, l, f->expired_keys);
            set_if(ob->m_rx_hits, l, f->keyspace_hits);
            set_if(ob->m_rx_misses, l, f->keyspace_misses);
            set_if(ob->m_rx_cmds, l, f->total_commands_processed);
            set_if(ob->m_rx_bgsave, l, f->rdb_last_bgsave_ok);
        }
    }
    daemon_publish_metrics(ob->cfg->runtime_dir, ob->cfg->name);
    return 0;
}

static int on_signal(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)socket, (void)revents, (void)arg;
    if (daemon_stop_requested(fd)) {
        rlog_info("stopping");
        loop_stop(loop);
    }
    return 0;
}

static void register_metrics(observer_t *ob)
{
    metrics_registry_t *reg = metrics_default();
    const char *pl = "namespace,rediscluster,pod";
    ob->m_up = metrics_gauge(reg, "rdc_redis_up", "1 when the pod's Redis answered the last PING and INFO.", pl);
    ob->m_role = metrics_gauge(reg, "rdc_redis_role", "1 for a primary (role:master), 0 for a replica.", pl);
    ob->m_lag = metrics_gauge(reg, "rdc_redis_replication_lag_bytes",
                              "The primary's master_repl_offset minus this replica's offset (0 on the primary).", pl);
    ob->m_clients = metrics_gauge(reg, "rdc_redis_connected_clients", "connected_clients from INFO.", pl);
    ob->m_changes = metrics_counter(reg, "rdc_redis_primary_changes_total",
                                    "Times the cluster's single reachable primary became another pod.",
                                    "namespace,rediscluster");
    ob->m_sent = metrics_counter(reg, "rdc_observer_observations_sent_total",
                                 "Observations sent to informerd, by reason (changed, still_down).", "reason");
    ob->m_rx_up = metrics_gauge(reg, "redis_up", "redis_exporter's redis_up: 1 when the last probe answered.", pl);
    ob->m_rx_clients = metrics_gauge(reg, "redis_connected_clients", "INFO connected_clients.", pl);
    ob->m_rx_mem = metrics_gauge(reg, "redis_memory_used_bytes", "INFO used_memory.", pl);
    ob->m_rx_maxmem = metrics_gauge(reg, "redis_memory_max_bytes", "INFO maxmemory (0 = no limit).", pl);
    ob->m_rx_evicted = metrics_gauge(reg, "redis_evicted_keys_total", "INFO evicted_keys (Redis's counter).", pl);
    ob->m_rx_expired = metrics_gauge(reg, "redis_expired_keys_total", "INFO expired_keys (Redis's counter).", pl);
    ob->m_rx_hits = metrics_gauge(reg, "redis_keyspace_hits_total", "INFO keyspace_hits (Redis's counter).", pl);
    ob->m_rx_misses = metrics_gauge(reg, "redis_keyspace_misses_total", "INFO keyspace_misses (Redis's counter).", pl);
    ob->m_rx_cmds = metrics_gauge(reg, "redis_commands_processed_total",
                                  "INFO total_commands_processed (Redis's counter).", pl);
    ob->m_rx_slaves = metrics_gauge(reg, "redis_connected_slaves", "INFO connected_slaves.", pl);
    ob->m_rx_offset = metrics_gauge(reg, "redis_master_repl_offset", "INFO master_repl_offset.", pl);
    ob->m_rx_bgsave = metrics_gauge(reg, "redis_rdb_last_bgsave_status", "1 when rdb_last_bgsave_status is ok.", pl);
    ob->m_cl_state = metrics_gauge(reg, "rdc_redis_cluster_state",
                                   "Cluster mode: 1 when the pod says cluster_state:ok, 0 for fail.", pl);
    ob->m_cl_assigned = metrics_gauge(reg, "rdc_redis_cluster_slots_assigned",
                                      "Cluster mode: CLUSTER INFO cluster_slots_assigned.", pl);
    ob->m_cl_ok = metrics_gauge(reg, "rdc_redis_cluster_slots_ok", "Cluster mode: CLUSTER INFO cluster_slots_ok.", pl);
    ob->m_cl_pfail = metrics_gauge(reg, "rdc_redis_cluster_slots_pfail",
                                   "Cluster mode: CLUSTER INFO cluster_slots_pfail.", pl);
    ob->m_cl_fail = metrics_gauge(reg, "rdc_redis_cluster_slots_fail",
                                  "Cluster mode: CLUSTER INFO cluster_slots_fail.", pl);
    ob->m_cl_migrating = metrics_gauge(reg, "rdc_redis_cluster_slots_migrating",
                                       "Cluster mode: slots this node has MIGRATING to another (a move under way).",
                                       pl);
    ob->m_cl_known = metrics_gauge(reg, "rdc_redis_cluster_known_nodes",
                                   "Cluster mode: CLUSTER INFO cluster_known_nodes.", pl);
    ob->m_tls_expiry = metrics_gauge(reg, "rdc_redis_tls_cert_expiry_seconds",
                                     "spec.tls: seconds until the certificate in the cluster's Secret expires "
                                     "(negative once it has).",
                                     "namespace,rediscluster");
}

int observer_run(const observer_config_t *cfg)
{
    observer_t *ob = calloc(1, sizeof(*ob));
    if (!ob)
        return 1;
    ob->cfg = cfg;
    int code = 1;
    char ep[4200];
    register_metrics(ob);
    ob->loop = loop_new();
    ob->multi = curl_multi_init();
    ob->zctx = zmq_ctx_new();
    if (!ob->loop || !ob->multi || !ob->zctx || !(ob->lc = loop_curl_new(ob->loop, ob->multi, on_curl_done, ob)))
        goto out;
    int linger = 0;
    ob->sub = zmq_socket(ob->zctx, ZMQ_SUB);
    zmq_setsockopt(ob->sub, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_setsockopt(ob->sub, ZMQ_SUBSCRIBE, PROTO_DELTA, strlen(PROTO_DELTA));
    zmq_setsockopt(ob->sub, ZMQ_SUBSCRIBE, PROTO_HUGZ, strlen(PROTO_HUGZ));
    zmq_connect(ob->sub, daemon_endpoint(cfg->runtime_dir, PROTO_EP_DELTAS, ep, sizeof(ep)));
    ob->push = zmq_socket(ob->zctx, ZMQ_PUSH);
    zmq_setsockopt(ob->push, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_connect(ob->push, daemon_endpoint(cfg->runtime_dir, PROTO_EP_OBSERVE, ep, sizeof(ep)));
    /* workerd's hints: without them every cluster is probed every second, as before */
    ob->hint = zmq_socket(ob->zctx, ZMQ_PULL);
    zmq_setsockopt(ob->hint, ZMQ_LINGER, &linger, sizeof(linger));
    if (zmq_bind(ob->hint, daemon_endpoint(cfg->runtime_dir, PROTO_EP_HINT, ep, sizeof(ep))) ||
        loop_add_socket(ob->loop, ob->hint, LOOP_IN, on_hint, ob))
        rlog_warn("no probe cadence hints: every cluster is probed every second", "endpoint", ep, "error",
                  zmq_strerror(zmq_errno()));
    if (loop_add_fd(ob->loop, cfg->signal_fd, LOOP_IN, on_signal, ob) ||
        (ob->tick_timer = loop_add_timer(ob->loop, cfg->probe_interval_ns, cfg->probe_interval_ns, on_tick, ob)) < 0 ||
        loop_add_timer(ob->loop, METRICS_EVERY_NS, METRICS_EVERY_NS, on_metrics, ob) < 0)
        goto out;
    /* Subscribed first (above), then the snapshot: nothing falls between the two. */
    take_snapshot(ob);
    rlog_info("observerd started", "runtime_dir", cfg->runtime_dir);
    code = loop_run(ob->loop, cfg->probe_interval_ns) ? 1 : 0;
    if (code)
        rlog_error("event loop failed", "error", loop_error(ob->loop));
out:
    while (ob->pods)
        pod_remove(ob, ob->pods);
    while (ob->clusters) {
        cluster_t *c = ob->clusters;
        c->has_object = 0;
        cluster_maybe_free(ob, c);
    }
    loop_curl_destroy(&ob->lc);
    if (ob->multi)
        curl_multi_cleanup(ob->multi);
    void *socks[] = {ob->sub, ob->snap, ob->push, ob->hint};
    for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++)
        if (socks[i])
            zmq_close(socks[i]);
    if (ob->zctx)
        zmq_ctx_term(ob->zctx);
    loop_destroy(&ob->loop);
    free(ob);
    return code;
}

/* ---- --once --------------------------------------------------------------------------- */

typedef struct {
    int left;
} once_t;

static void once_probe(redisnode_t *node, void *arg)
{
    (void)node;
    once_t *o = arg;
    o->left--;
}

static json_object *info_json(const redisinfo_t *f)
{
    json_object *o = json_object_new_object();
    const struct {
        const char *name;
        int64_t v;
    } figs[] = {{"connected_clients", f->connected_clients},   {"used_memory", f->used_memory},
                {"maxmemory", f->maxmemory},                   {"evicted_keys", f->evicted_keys},
                {"expired_keys", f->expired_keys},             {"keyspace_hits", f->keyspace_hits},
                {"keyspace_misses", f->keyspace_misses},
                {"total_commands_processed", f->total_commands_processed},
                {"connected_slaves", f->connected_slaves},     {"master_repl_offset", f->master_repl_offset},
                {"rdb_last_bgsave_ok", f->rdb_last_bgsave_ok}};
    for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++)
        if (figs[i].v >= 0)
            json_object_object_add(o, figs[i].name, json_object_new_int64(figs[i].v));
    return o;
}

/* observer_once: the TLS settings of rc's spec.tls Secret (GET, blocking) into *tls
 * (NULL without spec.tls); 0, or -1 said on stderr. */
static int once_tls(kube_client_t *client, const char *ns, const json_object *rc, redis_tls_t **tls)
{
    const char *tname = JSONX_STR_AT(rc, "spec", "tls", "secretRef", "name");
    const json_object *ca_flag = JSONX_AT(rc, "spec", "tls", "clientAuth");
    int pair = ca_flag && json_object_is_type(ca_flag, json_type_boolean) && json_object_get_boolean(ca_flag);
    if (!tname || !*tname)
        return 0;
    char line[512], err[300] = "";
    kube_error_t kerr;
    kube_error_clear(&kerr);
    json_object *secret = NULL;
    buf_t path;
    buf_init(&path, 4096);
    kube_path(&path, "", "v1", ns, "secrets", tname, NULL);
    int rc_code = kube_client_get(client, buf_str(&path), NULL, &secret, &kerr);
    buf_free(&path);
    if (rc_code) {
        fprintf(stderr, "observerd: Secret %s/%s: %s\n", ns, tname, kube_error_str(&kerr, line, sizeof(line)));
        return -1;
    }
    char *crt = data_of(secret, "tls.crt"), *key = data_of(secret, "tls.key"), *ca = data_of(secret, "ca.crt");
    redis_tls_config_t cfg = {.ca_pem = ca, .ca_len = ca ? strlen(ca) : 0, .cert_pem = pair ? crt : NULL,
                              .cert_len = pair && crt ? strlen(crt) : 0, .key_pem = pair ? key : NULL,
                              .key_len = pair && key ? strlen(key) : 0};
    *tls = ca ? redis_tls_new(&cfg, err, sizeof(err)) : NULL;
    if (!*tls)
        fprintf(stderr, "observerd: Secret %s/%s: %s\n", ns, tname, ca ? err : "no ca.crt");
    if (key)
        explicit_bzero(key, strlen(key));
    free(key);
    free(crt);
    free(ca);
    json_object_put(secret);
    return *tls ? 0 : -1;
}

/* observer_once: the RedisCluster's password, or NULL without auth (*password), its TLS
 * settings (*tls, NULL without spec.tls) and whether it is in Cluster mode
 * (*cluster_mode); 0, or -1 said on stderr. */
static int once_spec(kube_client_t *client, const char *ns, const char *name, char **password, redis_tls_t **tls,
                     int *cluster_mode)
{
    char line[512];
    kube_error_t err;
    kube_error_clear(&err);
    json_object *rc = NULL, *secret = NULL;
    int rc_code = -1;
    buf_t path;
    buf_init(&path, 4096);
    kube_path(&path, RDC_API_GROUP, RDC_API_VERSION, ns, "redisclusters", name, NULL);
    if (kube_client_get(client, buf_str(&path), NULL, &rc, &err)) {
        fprintf(stderr, "observerd: RedisCluster %s/%s: %s\n", ns, name, kube_error_str(&err, line, sizeof(line)));
        goto out;
    }
    const char *sname = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "name");
    const char *skey = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "key");
    const char *mode = JSONX_STR_AT(rc, "spec", "mode");
    *cluster_mode = mode && !strcmp(mode, "Cluster");
    if (sname && *sname) {
        buf_reset(&path);
        kube_path(&path, "", "v1", ns, "secrets", sname, NULL);
        if (kube_client_get(client, buf_str(&path), NULL, &secret, &err)) {
            fprintf(stderr, "observerd: Secret %s/%s: %s\n", ns, sname, kube_error_str(&err, line, sizeof(line)));
            goto out;
        }
        const char *b64 = jsonx_str(jsonx_get(secret, "data"), skey && *skey ? skey : "password");
        if (!b64 || !(*password = b64_text(b64))) {
            fprintf(stderr, "observerd: Secret %s/%s has no usable key \"%s\"\n", ns, sname,
                    skey && *skey ? skey : "password");
            goto out;
        }
    }
    rc_code = once_tls(client, ns, rc, tls);
out:
    json_object_put(rc);
    json_object_put(secret);
    buf_free(&path);
    return rc_code;
}

/* observer_once: the cluster's pods as informerd caches them (the operator's managed-by
 * label and this instance) into *pods; 0, or -1 said on stderr. */
static int once_pods(kube_client_t *client, const char *ns, const char *name, json_object **pods)
{
    char line[512];
    kube_error_t err;
    kube_error_clear(&err);
    buf_t path, sel;
    buf_init(&path, 4096);
    buf_init(&sel, 1024);
    kube_path(&path, "", "v1", ns, "pods", NULL, NULL);
    buf_printf(&sel, "app.kubernetes.io/managed-by=rediscluster-operator," INSTANCE_LABEL "=%s", name);
    kube_req_opts_t ro;
    memset(&ro, 0, sizeof(ro));
    ro.label_selector = buf_str(&sel);
    ro.limit = 500;
    char *list_rv = NULL;
    int lrc = kube_client_list_all(client, buf_str(&path), &ro, pods, &list_rv, &err);
    free(list_rv);
    if (lrc)
        fprintf(stderr, "observerd: pods of %s/%s: %s\n", ns, name, kube_error_str(&err, line, sizeof(line)));
    buf_free(&path);
    buf_free(&sel);
    return lrc ? -1 : 0;
}

/* observer_once: one observation node of pod name/ip as JSON, with its INFO (or the
 * probe's error) beside the fields observerd publishes (its cluster object in Cluster
 * mode); NULL on out of memory. */
static json_object *once_node(const char *name, const char *ip, const redisnode_state_t *st, int cluster_mode,
                              int64_t now, const char *at, buf_t *body)
{
    obs_node_t x;
    memset(&x, 0, sizeof(x));
    snprintf(x.pod, sizeof(x.pod), "%s", name);
    snprintf(x.ip, sizeof(x.ip), "%s", ip ? ip : "");
    x.offset = x.keys = x.last_ok_ago_ms = x.probed_ago_ms = x.master_io_ms = -1;
    if (st && st->probes)
        x.probed_ago_ms = (now - st->last_probe_ns) / NS_PER_MS;
    if (st && st->reachable) {
        x.reachable = 1;
        snprintf(x.tls_cert, sizeof(x.tls_cert), "%s", st->tls_cert);
        x.role = st->info.role;
        snprintf(x.master_host, sizeof(x.master_host), "%s", st->info.master_host);
        x.master_port = st->info.master_port;
        x.link_up = st->info.link_up;
        x.offset = redisinfo_offset(&st->info);
        x.keys = st->info.keys;
        x.last_ok_ago_ms = (now - st->last_ok_ns) / NS_PER_MS;
        cluster_of(cluster_mode, st, &x.cluster);
    }
    buf_reset(body);
    obsdiff_json(&x, 1, at, body);
    json_object *one = json_tokener_parse(buf_str(body));
    json_object *node = json_object_get(json_object_array_get_idx(jsonx_get(one, "nodes"), 0));
    json_object_put(one);
    if (node && st && st->reachable)
        json_object_object_add(node, "info", info_json(&st->full));
    else if (node && st)
        json_object_object_add(node, "error", json_object_new_string(st->error));
    return node;
}

int observer_once(kube_client_t *client, const char *ns, const char *name, int port, int64_t timeout_ns, FILE *out)
{
    int code = 1;
    json_object *pods = NULL;
    char *password = NULL;
    redis_tls_t *tls = NULL;
    int cluster_mode = 0;
    loop_t *loop = NULL;
    redisnode_t *nodes[MAX_NODES] = {0};
    const char *pod_names[MAX_NODES] = {0};
    const char *pod_ips[MAX_NODES] = {0};
    size_t n = 0;
    buf_t body;
    buf_init(&body, PROTO_MAX_OBSERVATION_BYTES);
    if (once_spec(client, ns, name, &password, &tls, &cluster_mode) || once_pods(client, ns, name, &pods))
        goto out;
    loop = loop_new();
    once_t o = {0};
    if (!loop)
        goto out;
    for (size_t i = 0; i < json_object_array_length(pods) && n < MAX_NODES; i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        pod_names[n] = JSONX_STR_AT(p, "metadata", "name");
        pod_ips[n] = JSONX_STR_AT(p, "status", "podIP");
        if (!pod_names[n])
            continue;
        if (pod_ips[n] && *pod_ips[n]) {
            nodes[n] = redisnode_new(loop, pod_ips[n], port, timeout_ns, once_probe, &o);
            const char *on = JSONX_STR_AT(p, "metadata", "annotations", TLS_ANNOTATION);
            char sni[800];
            snprintf(sni, sizeof(sni), "%s.%s.%s.svc", pod_names[n], name, ns);
            if (nodes[n]) {
                redisnode_set_password(nodes[n], password);
                redisnode_set_tls(nodes[n], on && !strcmp(on, "on") ? tls : NULL, sni);
                redisnode_set_cluster(nodes[n], cluster_mode);
                o.left++;
                (void)redisnode_probe(nodes[n], 1); /* a failure already called back */
            }
        }
        n++;
    }
    while (o.left > 0)
        if (loop_run_once(loop, timeout_ns) < 0)
            break;
    json_object *res = json_object_new_object(), *arr = json_object_new_array();
    char at[40];
    clock_format_rfc3339(clock_wall_ns(), 3, at, sizeof(at));
    json_object_object_add(res, "observedAt", json_object_new_string(at));
    json_object_object_add(res, "cluster", json_object_new_string(name));
    json_object_object_add(res, "namespace", json_object_new_string(ns));
    json_object_object_add(res, "nodes", arr);
    int64_t now = loop_now(loop);
    for (size_t i = 0; i < n; i++) {
        json_object *node =
            once_node(pod_names[i], pod_ips[i], nodes[i] ? redisnode_state(nodes[i]) : NULL, cluster_mode, now, at,
                      &body);
        if (node)
            json_object_array_add(arr, node);
    }
    fprintf(out, "%s\n", json_object_to_json_string_ext(res, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(res);
    code = 0;
out:
    for (size_t i = 0; i < MAX_NODES; i++)
        redisnode_destroy(&nodes[i]);
    redis_tls_destroy(&tls);
    loop_destroy(&loop);
    if (password) {
        memset(password, 0, strlen(password));
        free(password);
    }
    json_object_put(pods);
    buf_free(&body);
    return code;
}
