#include "redisnode.h"

#include "buf.h"
#include "obsdiff.h"
#include "redis_conn.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct redisnode {
    loop_t *loop;
    char ip[64];
    int port;
    int64_t timeout_ns;
    redisnode_fn *fn;
    void *arg;
    char *password;
    const redis_tls_t *tls;  /* borrowed; NULL: plain text */
    char *server_name;       /* NULL: verify the IP */
    redis_conn_t *conn;      /* NULL when not connected */
    int stale;               /* settings changed under a probe: drop conn after it */
    int busy;                /* a probe is in flight */
    int64_t started_ns;      /* ... since then (loop clock) */
    int pending;             /* replies the probe still waits for */
    int failed;              /* the probe already failed (an error reply) */
    int full;                /* the probe in flight asked every default section */
    int cluster;             /* probes ask CLUSTER NODES and CLUSTER INFO */
    int probe_cluster;       /* the probe in flight asked them */
    char *c_nodes;           /* its answers so far (committed when it is answered) */
    char c_error[256];
    cn_info_t c_info;
    char why[256];
    redisnode_state_t st;
};

static void set_why(redisnode_t *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_why(redisnode_t *n, const char *fmt, ...)
{
    if (n->failed)
        return; /* keep the first reason */
    n->failed = 1;
    BUF_FORMAT_VA(n->why, sizeof(n->why), fmt);
}

static void free_secret(char **s)
{
    if (*s) {
        memset(*s, 0, strlen(*s));
        free(*s);
    }
    *s = NULL;
}

/* Drop the connection (safe from its own callbacks: redis_conn frees it afterwards). */
static void drop_conn(redisnode_t *n)
{
    redis_conn_destroy(&n->conn);
    n->stale = 0;
}

static void cluster_forget(redisnode_state_t *st)
{
    free(st->cluster_nodes);
    st->cluster_nodes = NULL;
    st->cluster_known = 0;
    st->cluster_error[0] = '\0';
}

/* The cluster answers of an answered probe become the node's cluster state. */
static void cluster_commit(redisnode_t *n)
{
    cluster_forget(&n->st);
    n->st.cluster_known = 1;
    n->st.cluster_nodes = n->c_nodes;
    n->c_nodes = NULL;
    snprintf(n->st.cluster_error, sizeof(n->st.cluster_error), "%s", n->c_error);
    n->st.cluster_info = n->c_info;
}

/* End the probe in flight: record the outcome, then tell the owner. */
static void finish(redisnode_t *n, int ok)
{
    if (!n->busy)
        return;
    n->busy = 0;
    if (ok && n->probe_cluster && n->cluster)
        cluster_commit(n);
    free(n->c_nodes);
    n->c_nodes = NULL;
    int64_t now = loop_now(n->loop);
    n->st.probes++;
    n->st.last_probe_ns = n->started_ns;
    if (ok) {
        n->st.reachable = 1;
        n->st.ever_answered = 1;
        snprintf(n->st.tls_cert, sizeof(n->st.tls_cert), "%s", n->conn ? redis_conn_peer_cert(n->conn) : "");
        n->st.last_ok_ns = now;
        n->st.down_since_ns = 0;
        n->st.error[0] = '\0';
    } else {
        n->st.failures++;
        n->st.reachable = 0;
        if (!n->st.down_since_ns)
            n->st.down_since_ns = now;
        snprintf(n->st.error, sizeof(n->st.error), "%s", n->why[0] ? n->why : "no answer");
    }
    if (!ok || n->stale)
        drop_conn(n);
    n->fn(n, n->arg);
}

/* One reply of the probe arrived (freed here): the probe ends with the last. */
static void reply_done(redisnode_t *n, redisReply *reply)
{
    freeReplyObject(reply);
    if (--n->pending == 0)
        finish(n, !n->failed);
}

/* A CLUSTER command's reply that is not the text asked for: why, into c_error (the
 * first reason kept); a failed connection fails the probe. 1 when it was not text. */
static int cluster_reply_bad(redisnode_t *n, redisReply *reply, const char *err, const char *cmd)
{
    if (!reply) {
        set_why(n, "%s", err);
        return 1;
    }
    if (reply->type == REDIS_REPLY_STRING)
        return 0;
    if (!n->c_error[0] && reply->type == REDIS_REPLY_ERROR)
        snprintf(n->c_error, sizeof(n->c_error), "redis error: %.120s", reply->str ? reply->str : "");
    else if (!n->c_error[0])
        snprintf(n->c_error, sizeof(n->c_error), "%s: not a text reply", cmd);
    return 1;
}

static void on_cluster_nodes(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    (void)conn;
    redisnode_t *n = arg;
    if (!cluster_reply_bad(n, reply, err, "CLUSTER NODES")) {
        char why[200];
        free(n->c_nodes);
        if (obsdiff_normalize_nodes(reply->str, reply->len, &n->c_nodes, why, sizeof(why)))
            snprintf(n->c_error, sizeof(n->c_error), "CLUSTER NODES: %s", why);
    }
    reply_done(n, reply);
}

static void on_cluster_info(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    (void)conn;
    redisnode_t *n = arg;
    if (!cluster_reply_bad(n, reply, err, "CLUSTER INFO"))
        cn_info_parse(reply->str, reply->len, &n->c_info);
    reply_done(n, reply);
}

/* A reply of the probe (or its failure: reply NULL, err the connection's line). */
static void on_reply(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    (void)conn;
    redisnode_t *n = arg;
    if (!reply) {
        set_why(n, "%s", err);
    } else if (reply->type == REDIS_REPLY_ERROR) {
        /* NOAUTH, LOADING...: unreachable for our purpose. The first words of the error
         * name it; the password never appears in a Redis error. */
        set_why(n, "redis error: %.120s", reply->str ? reply->str : "");
    } else if (reply->type == REDIS_REPLY_STRING && reply->str && !n->failed) {
        if (redisinfo_parse(reply->str, reply->len, &n->st.info))
            set_why(n, "INFO without a role field");
        else if (n->full) {
            n->st.full = n->st.info;
            n->st.have_full = 1;
        }
    }
    reply_done(n, reply);
}

/* INFO keyspace (after INFO replication on the same connection): the keys it holds. Its
 * failure does not fail the probe (a node answered, its keys unknown). */
static void on_keyspace(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    (void)conn, (void)err;
    redisnode_t *n = arg;
    if (reply && reply->type == REDIS_REPLY_STRING && reply->str) {
        redisinfo_t ks;
        redisinfo_parse(reply->str, reply->len, &ks);
        n->st.info.keys = ks.keys;
    }
    reply_done(n, reply);
}

redisnode_t *redisnode_new(loop_t *loop, const char *ip, int port, int64_t timeout_ns, redisnode_fn *fn,
                           void *arg)
{
    redisnode_t *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->loop = loop;
    snprintf(n->ip, sizeof(n->ip), "%s", ip);
    n->port = port;
    n->timeout_ns = timeout_ns;
    n->fn = fn;
    n->arg = arg;
    n->st.info.master_repl_offset = n->st.info.slave_repl_offset = -1;
    cn_info_parse(NULL, 0, &n->st.cluster_info);
    return n;
}

void redisnode_destroy(redisnode_t **node_p)
{
    if (!node_p || !*node_p)
        return;
    redisnode_t *n = *node_p;
    n->busy = 0;
    drop_conn(n); /* a probe in flight ends without a callback */
    free_secret(&n->password);
    free(n->server_name);
    free(n->c_nodes);
    cluster_forget(&n->st);
    free(n);
    *node_p = NULL;
}

/* The connection's settings changed: reconnect for the next probe. */
static void settings_changed(redisnode_t *n)
{
    if (n->busy)
        n->stale = 1;
    else
        drop_conn(n);
}

int redisnode_set_password(redisnode_t *n, const char *password)
{
    if (password && !*password)
        password = NULL;
    if ((!password && !n->password) || (password && n->password && strcmp(password, n->password) == 0))
        return 0;
    char *copy = NULL;
    if (password && !(copy = strdup(password)))
        return -1;
    free_secret(&n->password);
    n->password = copy;
    settings_changed(n);
    return 0;
}

int redisnode_set_tls(redisnode_t *n, const redis_tls_t *tls, const char *server_name)
{
    if (server_name && !*server_name)
        server_name = NULL;
    int same_name = (!server_name && !n->server_name) ||
                    (server_name && n->server_name && strcmp(server_name, n->server_name) == 0);
    if (tls == n->tls && same_name)
        return 0;
    char *copy = NULL;
    if (server_name && !(copy = strdup(server_name)))
        return -1;
    free(n->server_name);
    n->server_name = copy;
    n->tls = tls;
    settings_changed(n);
    return 0;
}

void redisnode_reconnect(redisnode_t *n)
{
    settings_changed(n);
}

void redisnode_set_cluster(redisnode_t *n, int on)
{
    n->cluster = on != 0;
    if (!on)
        cluster_forget(&n->st);
}

/* Queue one command of the probe, its reply to fn. 0, or -1 (out of memory). */
static int probe_command(redisnode_t *n, int argc, const char *const *argv, redis_conn_reply_fn *fn)
{
    if (redis_conn_command(n->conn, argc, argv, NULL, n->timeout_ns, fn, n))
        return -1;
    n->pending++;
    return 0;
}

int redisnode_probe(redisnode_t *n, int full)
{
    if (n->busy)
        return 1;
    n->busy = 1;
    n->started_ns = loop_now(n->loop);
    n->full = full;
    n->failed = 0;
    n->why[0] = '\0';
    n->pending = 0;
    n->probe_cluster = n->cluster;
    n->c_error[0] = '\0';
    cn_info_parse(NULL, 0, &n->c_info);
    if (n->conn && redis_conn_state(n->conn) == REDIS_CONN_FAILED)
        drop_conn(n); /* the server closed it since the last probe */
    if (!n->conn) {
        redis_conn_opts_t o = {.host = n->ip,
                               .port = n->port,
                               .connect_timeout_ns = n->timeout_ns,
                               .tls = n->tls,
                               .tls_server_name = n->server_name,
                               .password = n->password};
        n->conn = redis_conn_new(n->loop, &o);
    }
    static const char *const ping[] = {"PING"}, *const info[] = {"INFO", "replication"},
                             *const keyspace[] = {"INFO", "keyspace"}, *const nodes[] = {"CLUSTER", "NODES"},
                             *const cinfo[] = {"CLUSTER", "INFO"};
    if (!n->conn || probe_command(n, 1, ping, on_reply) || probe_command(n, full ? 1 : 2, info, on_reply) ||
        (!full && probe_command(n, 2, keyspace, on_keyspace)) ||
        (n->probe_cluster &&
         (probe_command(n, 2, nodes, on_cluster_nodes) || probe_command(n, 2, cinfo, on_cluster_info)))) {
        set_why(n, "%s:%d: out of memory starting a probe", n->ip, n->port);
        n->pending = 0;
        finish(n, 0); /* drops the connection: a queued PING's callback never comes */
        return -1;
    }
    return 0;
}

const redisnode_state_t *redisnode_state(const redisnode_t *n)
{
    return &n->st;
}

const char *redisnode_ip(const redisnode_t *n)
{
    return n->ip;
}

int redisnode_port(const redisnode_t *n)
{
    return n->port;
}

int redisnode_busy(const redisnode_t *n)
{
    return n->busy;
}
