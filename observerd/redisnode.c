#include "redisnode.h"

#include "redis_loop.h"

#include <hiredis/hiredis.h>
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
    redisAsyncContext *ac;   /* NULL when not connected */
    int busy;                /* a probe is in flight */
    int timer;               /* its deadline, 0 none */
    int pending;             /* replies the probe still waits for */
    int failed;              /* the probe already failed (an error reply) */
    int full;                /* the probe in flight asked every default section */
    char why[256];
    redisnode_state_t st;
};

static void set_why(redisnode_t *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_why(redisnode_t *n, const char *fmt, ...)
{
    if (n->failed)
        return; /* keep the first reason */
    n->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->why, sizeof(n->why), fmt, ap);
    va_end(ap);
}

/* Forget the context without freeing it (hiredis frees it itself after a disconnect). */
static void forget_context(redisnode_t *n)
{
    if (n->ac)
        n->ac->data = NULL;
    n->ac = NULL;
}

/* Free our context: its pending callbacks run with NULL replies and are ignored. */
static void drop_context(redisnode_t *n)
{
    redisAsyncContext *ac = n->ac;
    forget_context(n);
    if (ac)
        redisAsyncFree(ac);
}

/* End the probe in flight: record the outcome, then tell the owner. */
static void finish(redisnode_t *n, int ok)
{
    if (!n->busy)
        return;
    n->busy = 0;
    if (n->timer)
        loop_cancel_timer(n->loop, n->timer);
    n->timer = 0;
    int64_t now = loop_now(n->loop);
    n->st.probes++;
    if (ok) {
        n->st.reachable = 1;
        n->st.ever_answered = 1;
        n->st.last_ok_ns = now;
        n->st.down_since_ns = 0;
        n->st.error[0] = '\0';
    } else {
        n->st.failures++;
        n->st.reachable = 0;
        if (!n->st.down_since_ns)
            n->st.down_since_ns = now;
        snprintf(n->st.error, sizeof(n->st.error), "%s", n->why[0] ? n->why : "no answer");
        drop_context(n);
    }
    n->fn(n, n->arg);
}

static int on_timeout(loop_t *loop, int id, void *arg)
{
    (void)loop;
    (void)id;
    redisnode_t *n = arg;
    n->timer = 0;
    set_why(n, "no answer within %lld ms", (long long)(n->timeout_ns / 1000000));
    finish(n, 0);
    return 0;
}

/* A reply of the probe. privdata is the node; c->data is NULL once we let go of c. */
static void on_reply(redisAsyncContext *c, void *r, void *privdata)
{
    redisnode_t *n = privdata;
    redisReply *reply = r;
    if (!c->data || c != n->ac || !n->busy)
        return; /* a context we dropped, flushing its callbacks */
    if (!reply) {
        set_why(n, "connection lost: %s", c->errstr[0] ? c->errstr : "closed");
        return; /* the disconnect callback ends the probe */
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        /* NOAUTH, WRONGPASS, LOADING...: unreachable for our purpose. The first words
         * of the error name it; the password never appears in a Redis error. */
        set_why(n, "redis error: %.120s", reply->str ? reply->str : "");
    } else if (reply->type == REDIS_REPLY_STRING && reply->str && !n->failed) {
        if (redisinfo_parse(reply->str, reply->len, &n->st.info))
            set_why(n, "INFO without a role field");
        else if (n->full) {
            n->st.full = n->st.info;
            n->st.have_full = 1;
        }
    }
    if (--n->pending == 0)
        finish(n, !n->failed);
}

static void on_connect(const redisAsyncContext *c, int status)
{
    redisnode_t *n = c->data;
    if (!n || status == REDIS_OK)
        return;
    /* hiredis frees c after this returns. */
    set_why(n, "connect %s:%d: %s", n->ip, n->port, c->errstr[0] ? c->errstr : "failed");
    forget_context(n);
    finish(n, 0);
}

static void on_disconnect(const redisAsyncContext *c, int status)
{
    redisnode_t *n = c->data;
    (void)status;
    if (!n)
        return;
    set_why(n, "connection to %s:%d closed: %s", n->ip, n->port, c->errstr[0] ? c->errstr : "by the server");
    forget_context(n);
    finish(n, 0); /* no-op when no probe is in flight */
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
    return n;
}

void redisnode_destroy(redisnode_t **node_p)
{
    if (!node_p || !*node_p)
        return;
    redisnode_t *n = *node_p;
    n->busy = 0;
    if (n->timer)
        loop_cancel_timer(n->loop, n->timer);
    drop_context(n);
    if (n->password) {
        memset(n->password, 0, strlen(n->password));
        free(n->password);
    }
    free(n);
    *node_p = NULL;
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
    if (n->password) {
        memset(n->password, 0, strlen(n->password));
        free(n->password);
    }
    n->password = copy;
    if (!n->busy)
        drop_context(n); /* authenticate again on the next probe */
    return 0;
}

/* Connect (asynchronously) and queue AUTH. Returns 0, or -1 with n->why set. */
static int connect_node(redisnode_t *n)
{
    redisAsyncContext *ac = redisAsyncConnect(n->ip, n->port);
    if (!ac) {
        set_why(n, "connect %s:%d: out of memory", n->ip, n->port);
        return -1;
    }
    if (ac->err) {
        set_why(n, "connect %s:%d: %s", n->ip, n->port, ac->errstr);
        redisAsyncFree(ac);
        return -1;
    }
    if (redis_loop_attach(ac, n->loop)) {
        set_why(n, "connect %s:%d: cannot watch the socket", n->ip, n->port);
        redisAsyncFree(ac);
        return -1;
    }
    ac->data = n;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    n->ac = ac;
    if (n->password) {
        const char *argv[2] = {"AUTH", n->password};
        size_t lens[2] = {4, strlen(n->password)};
        if (redisAsyncCommandArgv(ac, on_reply, n, 2, argv, lens) == REDIS_OK)
            n->pending++;
    }
    return 0;
}

int redisnode_probe(redisnode_t *n, int full)
{
    if (n->busy)
        return 1;
    n->busy = 1;
    n->full = full;
    n->failed = 0;
    n->why[0] = '\0';
    n->pending = 0;
    if (!n->ac && connect_node(n)) {
        finish(n, 0);
        return -1;
    }
    int want = n->pending + 2;
    if (redisAsyncCommand(n->ac, on_reply, n, "PING") == REDIS_OK)
        n->pending++;
    if (redisAsyncCommand(n->ac, on_reply, n, full ? "INFO" : "INFO replication") == REDIS_OK)
        n->pending++;
    if (n->pending != want) {
        set_why(n, "cannot queue the probe's commands");
        finish(n, 0);
        return -1;
    }
    n->timer = loop_add_timer(n->loop, n->timeout_ns, 0, on_timeout, n);
    if (n->timer < 0) {
        n->timer = 0;
        set_why(n, "out of memory arming the probe's deadline");
        finish(n, 0);
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
