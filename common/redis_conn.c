/* redis_conn: one Redis connection on the event loop. See redis_conn.h.
 *
 * The connection moves from state to state only through set_state() (and fail(), which
 * ends it); advance() is the one place that drives the I/O of the current state, called
 * by the socket's handler; on_timer() enforces the deadlines. Callbacks run only under
 * those two handlers, which count their depth, so a callback that destroys the
 * connection only marks it: the handler frees it on the way out. */
#include "redis_conn.h"

#include "buf.h"
#include "clock.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_CONNECT_TIMEOUT_NS (2 * NS_PER_SEC)
#define READ_CHUNK 16384

typedef struct pending {
    redis_conn_reply_fn *fn;
    void *arg;
    int64_t deadline_ns, timeout_ns;
    char name[32];              /* the command's first word, for a timeout's line */
    struct pending *next;
} pending_t;

struct redis_conn {
    loop_t *loop;
    redis_conn_state_t state;
    char host[64];
    int port;
    char addr[80];
    int tls;                    /* a TLS session was asked for */
    char *user, *password, *fallback;
    int auth_sent;              /* AUTH commands sent (2 with the fallback) */
    int64_t connect_timeout_ns, connect_deadline_ns;
    size_t max_reply, reply_bytes; /* bytes fed since the last complete reply */
    redis_stream_t *stream;     /* NULL once closed */
    int fd, events;             /* the socket and the events watched (registered while stream) */
    int hs_want, rd_want, wr_want; /* what the last handshake / read / write waits for */
    redisReader *reader;
    buf_t out;                  /* formatted commands for the wire */
    buf_t held;                 /* formatted commands queued before READY */
    pending_t *head, *tail;
    size_t npending;
    int timer;                  /* the deadline timer, 0 none */
    int64_t timer_at;
    int depth;                  /* handlers of ours running */
    int dead;                   /* destroyed under a handler: free on the way out */
    int heard;                  /* the server sent something (kept once the stream is closed) */
    char peer_cert[65];         /* SHA-256 of the server's certificate, "" none */
    char error[512];
};

static int on_io(loop_t *loop, void *socket, int fd, int revents, void *arg);
static int on_timer(loop_t *loop, int id, void *arg);

/* ---- small helpers ------------------------------------------------------------------- */

static void wipe(void *p, size_t n)
{
    if (p && n)
        explicit_bzero(p, n);
}

static void wipe_free_str(char **s)
{
    if (*s)
        wipe(*s, strlen(*s));
    free(*s);
    *s = NULL;
}

/* Free b, zeroing everything it ever held (a consumed AUTH stays in the allocation). */
static void wipe_buf(buf_t *b)
{
    wipe(b->data, b->alloc);
    buf_free(b);
}

const char *redis_conn_state_name(redis_conn_state_t state)
{
    static const char *const names[] = {"connect", "TLS handshake", "AUTH", "ready", "failed"};
    return (unsigned)state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

/* The phase a deadline that passes now interrupts, for its line. */
static const char *phase_name(const redis_conn_t *c)
{
    if (c->state == REDIS_CONN_HANDSHAKE && !c->tls)
        return "connect";
    return redis_conn_state_name(c->state);
}

/* ---- the loop: socket events and the deadline timer ------------------------------------ */

/* Watch the events the current state waits for. */
static void update_events(redis_conn_t *c)
{
    if (c->dead || !c->stream)
        return;
    int ev;
    if (c->state == REDIS_CONN_CONNECTING)
        ev = LOOP_OUT;
    else if (c->state == REDIS_CONN_HANDSHAKE)
        ev = c->hs_want;
    else
        ev = c->rd_want | (c->out.len ? c->wr_want : 0);
    if (ev != c->events && loop_set_fd_events(c->loop, c->fd, ev) == 0)
        c->events = ev;
}

/* The earliest deadline: the way to READY, every queued command; "now" for commands
 * queued on a FAILED connection. INT64_MAX for none. */
static int64_t next_deadline(const redis_conn_t *c)
{
    if (c->state == REDIS_CONN_FAILED)
        return c->head ? loop_now(c->loop) : INT64_MAX;
    int64_t at = c->state < REDIS_CONN_READY ? c->connect_deadline_ns : INT64_MAX;
    for (const pending_t *p = c->head; p; p = p->next)
        if (p->deadline_ns < at)
            at = p->deadline_ns;
    return at;
}

/* Arm the one timer at the earliest deadline (or none). */
static void rearm_timer(redis_conn_t *c)
{
    if (c->dead)
        return;
    int64_t at = next_deadline(c);
    if (c->timer && at == c->timer_at)
        return;
    if (c->timer)
        loop_cancel_timer(c->loop, c->timer);
    c->timer = 0;
    if (at == INT64_MAX)
        return;
    int64_t delay = at - loop_now(c->loop);
    c->timer = loop_add_timer(c->loop, delay > 0 ? delay : 0, 0, on_timer, c);
    if (c->timer < 0)
        c->timer = 0; /* out of memory: the next command or event arms it again */
    c->timer_at = at;
}

/* Take the socket off the loop and close the stream (and with it the socket). */
static void close_transport(redis_conn_t *c)
{
    if (c->stream) {
        c->heard |= redis_stream_heard(c->stream);
        loop_remove_fd(c->loop, c->fd);
        redis_stream_destroy(&c->stream);
    }
    c->fd = -1;
}

static void conn_free(redis_conn_t *c)
{
    close_transport(c);
    if (c->timer)
        loop_cancel_timer(c->loop, c->timer);
    for (pending_t *p = c->head, *next; p; p = next) {
        next = p->next;
        free(p);
    }
    if (c->reader)
        redisReaderFree(c->reader);
    wipe_buf(&c->out);
    wipe_buf(&c->held);
    wipe_free_str(&c->user);
    wipe_free_str(&c->password);
    wipe_free_str(&c->fallback);
    free(c);
}

/* A handler of ours starts / ends; the last one out frees a connection destroyed meanwhile. */
static void enter(redis_conn_t *c)
{
    c->depth++;
}

static void leave(redis_conn_t *c)
{
    if (--c->depth == 0 && c->dead)
        conn_free(c);
}

/* ---- states ---------------------------------------------------------------------------- */

static pending_t *pop_pending(redis_conn_t *c)
{
    pending_t *p = c->head;
    if (p) {
        c->head = p->next;
        if (!c->head)
            c->tail = NULL;
        c->npending--;
    }
    return p;
}

/* End the commands queued now (not those their callbacks queue: the next turn's) with
 * the failure line. */
static void fail_pending(redis_conn_t *c)
{
    for (size_t n = c->npending; n > 0 && !c->dead; n--) {
        pending_t *p = pop_pending(c);
        if (p->fn)
            p->fn(c, NULL, c->error, p->arg);
        free(p);
    }
}

/* The connection fails for good with "<addr>: <fmt...>": closed, its commands ended.
 * Returns -1 (for the callers' "return fail(...)"). */
static int fail(redis_conn_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(redis_conn_t *c, const char *fmt, ...)
{
    if (c->state == REDIS_CONN_FAILED || c->dead)
        return -1;
    char msg[400];
    BUF_FORMAT_VA(msg, sizeof(msg), fmt);
    snprintf(c->error, sizeof(c->error), "%s: %s", c->addr, msg);
    c->state = REDIS_CONN_FAILED;
    close_transport(c);
    wipe_buf(&c->out);
    wipe_buf(&c->held);
    fail_pending(c);
    rearm_timer(c);
    return -1;
}

/* Format AUTH [user] password onto the wire (the formatted copy wiped). 0, or -1 failed. */
static int send_auth(redis_conn_t *c, const char *password)
{
    const char *argv[3] = {"AUTH"};
    int argc = 1;
    if (c->user)
        argv[argc++] = c->user;
    argv[argc++] = password;
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);
    int rc = len < 0 || buf_append(&c->out, cmd, (size_t)len) ? -1 : 0;
    if (cmd) {
        wipe(cmd, len > 0 ? (size_t)len : 0);
        redisFreeCommand(cmd);
    }
    if (rc)
        return fail(c, "AUTH: out of memory");
    c->auth_sent++;
    return 0;
}

/* The one setter of the state. READY releases the commands held until then. */
static int set_state(redis_conn_t *c, redis_conn_state_t st)
{
    c->state = st;
    if (st != REDIS_CONN_READY)
        return 0;
    if (c->out.len == 0) {
        wipe_buf(&c->out); /* the AUTH that went out */
        c->out = c->held;
        buf_init(&c->held, 0);
    } else if (buf_append(&c->out, c->held.data, c->held.len)) {
        return fail(c, "out of memory");
    }
    wipe_buf(&c->held);
    return 0;
}

/* The transport is up: AUTH first when there is a password, else READY. */
static int transport_up(redis_conn_t *c)
{
    if (!c->password)
        return set_state(c, REDIS_CONN_READY);
    if (send_auth(c, c->password))
        return -1;
    return set_state(c, REDIS_CONN_AUTH);
}

/* The reply to AUTH (taken). 0, or -1 failed. */
static int auth_reply(redis_conn_t *c, redisReply *r)
{
    int rc;
    if (r->type == REDIS_REPLY_STATUS)
        rc = set_state(c, REDIS_CONN_READY);
    else if (r->type == REDIS_REPLY_ERROR && c->fallback && c->auth_sent == 1)
        rc = send_auth(c, c->fallback); /* a rotation in progress: the node has the old one */
    else if (c->user)
        rc = fail(c, "AUTH (user %.64s): %.200s", c->user, r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    else
        rc = fail(c, "AUTH: %.200s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    return rc;
}

/* ---- I/O of each state ----------------------------------------------------------------- */

/* CONNECTING: the socket said something (writable or an error): connected, or why not.
 * 0 connected, 1 still waiting, -1 failed. */
static int step_connect(redis_conn_t *c, int revents)
{
    if (!(revents & (LOOP_OUT | LOOP_ERR)))
        return 1;
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
        soerr = errno;
    if (soerr)
        return fail(c, "connect: %s", strerror(soerr));
    return set_state(c, REDIS_CONN_HANDSHAKE);
}

/* What a stream operation's status means here: 0 done (go on), 1 wait (*want: for
 * which event), -1 failed. e is the stream's line. */
static int stream_outcome(redis_conn_t *c, redis_stream_status_t st, int *want, const char *e)
{
    switch (st) {
    case REDIS_STREAM_OK:
        return 0;
    case REDIS_STREAM_WANT_READ:
        *want = LOOP_IN;
        return 1;
    case REDIS_STREAM_WANT_WRITE:
        *want = LOOP_OUT;
        return 1;
    case REDIS_STREAM_CLOSED:
        return fail(c, "connection closed by the server");
    default:
        return fail(c, "%s", e);
    }
}

/* HANDSHAKE: 0 done (AUTH or READY now), 1 waiting, -1 failed. */
static int step_handshake(redis_conn_t *c)
{
    char e[320];
    int r = stream_outcome(c, redis_stream_handshake(c->stream, e, sizeof(e)), &c->hs_want, e);
    if (r)
        return r;
    (void)redis_stream_peer_cert_sha256(c->stream, c->peer_cert); /* "" for plain text */
    return transport_up(c);
}

/* Write what the socket takes. 0 (all written, or waiting), or -1 failed. */
static int step_write(redis_conn_t *c)
{
    while (c->out.len) {
        char e[320];
        size_t n = 0;
        int r = stream_outcome(c, redis_stream_write(c->stream, c->out.data, c->out.len, &n, e, sizeof(e)),
                               &c->wr_want, e);
        if (r)
            return r < 0 ? -1 : 0;
        buf_consume(&c->out, n);
        c->wr_want = LOOP_OUT;
    }
    return 0;
}

/* Hand every complete reply to its command (or to AUTH). 0, or -1 failed/destroyed. */
static int deliver(redis_conn_t *c)
{
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(c->reader, &r) != REDIS_OK)
            return fail(c, "protocol error: %.200s", c->reader->errstr);
        if (!r)
            return 0;
        c->reply_bytes = c->reader->len - c->reader->pos; /* the next reply's start */
        if (c->state == REDIS_CONN_AUTH) {
            if (auth_reply(c, r))
                return -1;
            continue;
        }
        pending_t *p = pop_pending(c);
        if (!p) {
            redisReply *u = r;
            int rc = fail(c, "a reply to no command: %.120s", u->type == REDIS_REPLY_ERROR ? u->str : "(not an error)");
            freeReplyObject(u);
            return rc;
        }
        if (p->fn)
            p->fn(c, r, NULL, p->arg);
        else
            freeReplyObject(r);
        free(p);
        if (c->dead)
            return -1;
    }
}

/* Read all there is and deliver it. 0 (waiting for more), or -1 failed/destroyed. */
static int step_read(redis_conn_t *c)
{
    for (;;) {
        char chunk[READ_CHUNK], e[320];
        size_t n = 0;
        int r = stream_outcome(c, redis_stream_read(c->stream, chunk, sizeof(chunk), &n, e, sizeof(e)), &c->rd_want,
                               e);
        if (r)
            return r < 0 ? -1 : 0;
        c->rd_want = LOOP_IN;
        c->reply_bytes += n;
        if (c->reply_bytes > c->max_reply)
            return fail(c, "a reply of more than %zu bytes", c->max_reply);
        if (redisReaderFeed(c->reader, chunk, n) != REDIS_OK)
            return fail(c, "reading a reply: %.200s", c->reader->errstr);
        if (deliver(c))
            return -1;
    }
}

/* Move c as far as its socket allows now (revents: what the loop saw). */
static void advance(redis_conn_t *c, int revents)
{
    int r = 0;
    if (c->state == REDIS_CONN_CONNECTING)
        r = step_connect(c, revents);
    if (r == 0 && c->state == REDIS_CONN_HANDSHAKE)
        r = step_handshake(c);
    if (r == 0 && (c->state == REDIS_CONN_AUTH || c->state == REDIS_CONN_READY)) {
        r = step_write(c);
        if (r == 0)
            r = step_read(c); /* may release commands (AUTH accepted) or queue more */
        if (r == 0)
            r = step_write(c);
    }
    if (r >= 0) {
        update_events(c);
        rearm_timer(c);
    }
}

static int on_io(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd;
    redis_conn_t *c = arg;
    enter(c);
    advance(c, revents);
    leave(c);
    return 0;
}

static int on_timer(loop_t *loop, int id, void *arg)
{
    (void)id;
    redis_conn_t *c = arg;
    c->timer = 0;
    enter(c);
    int64_t now = loop_now(loop);
    if (c->state == REDIS_CONN_FAILED) {
        fail_pending(c);
    } else if (c->state < REDIS_CONN_READY && now >= c->connect_deadline_ns) {
        fail(c, "%s: no answer within %lld ms", phase_name(c), (long long)(c->connect_timeout_ns / NS_PER_MS));
    } else {
        for (const pending_t *p = c->head; p; p = p->next)
            if (p->deadline_ns <= now) {
                fail(c, "%s: no answer within %lld ms", c->state < REDIS_CONN_READY ? phase_name(c) : p->name,
                     (long long)(p->timeout_ns / NS_PER_MS));
                break;
            }
    }
    rearm_timer(c);
    leave(c);
    return 0;
}

/* ---- making one ------------------------------------------------------------------------ */

static redis_conn_t *conn_alloc(loop_t *loop, const redis_conn_opts_t *opts)
{
    redis_conn_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->loop = loop;
    c->fd = -1;
    c->rd_want = LOOP_IN;
    c->wr_want = c->hs_want = LOOP_OUT;
    buf_init(&c->out, 0);
    buf_init(&c->held, 0);
    snprintf(c->host, sizeof(c->host), "%s", opts->host ? opts->host : "");
    c->port = opts->port;
    snprintf(c->addr, sizeof(c->addr), strchr(c->host, ':') ? "[%s]:%d" : "%s:%d", c->host, c->port);
    c->tls = opts->tls != NULL;
    c->connect_timeout_ns = opts->connect_timeout_ns > 0 ? opts->connect_timeout_ns : DEFAULT_CONNECT_TIMEOUT_NS;
    c->connect_deadline_ns = loop_now(loop) + c->connect_timeout_ns;
    c->max_reply = opts->max_reply_bytes ? opts->max_reply_bytes : REDIS_CONN_DEFAULT_MAX_REPLY;
    int oom = 0;
    if (opts->password && *opts->password) {
        c->password = str_dup_opt(opts->password, &oom);
        c->user = str_dup_opt(opts->user && *opts->user ? opts->user : NULL, &oom);
        c->fallback = str_dup_opt(opts->password_fallback && *opts->password_fallback ? opts->password_fallback : NULL,
                                  &oom);
    }
    c->reader = redisReaderCreate();
    if (oom || !c->reader) {
        conn_free(c);
        return NULL;
    }
    return c;
}

/* Take stream and watch its socket. 0, or -1 failed. */
static int attach(redis_conn_t *c, redis_stream_t *stream, int events)
{
    c->stream = stream;
    c->fd = redis_stream_fd(stream);
    if (c->fd < 0 || loop_add_fd(c->loop, c->fd, events, on_io, c)) {
        c->stream = NULL; /* not on the loop: close it here */
        redis_stream_destroy(&stream);
        c->fd = -1;
        return fail(c, "cannot watch the socket");
    }
    c->events = events;
    return 0;
}

/* The stream over a new socket fd: plain, or TLS checking the server's name. 0, or -1
 * failed (fd closed). */
static int make_stream(redis_conn_t *c, int fd, const redis_conn_opts_t *opts)
{
    if (!opts->tls) {
        redis_stream_t *s = redis_stream_new_plain(fd);
        if (!s) {
            close(fd);
            return fail(c, "out of memory");
        }
        return attach(c, s, LOOP_OUT);
    }
    char e[320];
    SSL *ssl = redis_tls_session(opts->tls, opts->tls_server_name, c->host, e, sizeof(e));
    if (!ssl) {
        close(fd);
        return fail(c, "%s", e);
    }
    redis_stream_t *s = redis_stream_new_tls(ssl, fd);
    if (!s) {
        SSL_free(ssl);
        close(fd);
        return fail(c, "out of memory");
    }
    return attach(c, s, LOOP_OUT);
}

/* Open the socket and start connecting. 0, or -1 failed. */
static int start(redis_conn_t *c, const redis_conn_opts_t *opts)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", c->port);
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (c->port < 1 || c->port > 65535 || getaddrinfo(c->host, port, &hints, &ai) || !ai) {
        if (ai)
            freeaddrinfo(ai);
        return fail(c, "connect: \"%.64s\" is not an IP address and port", c->host);
    }
    int rc = -1, fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail(c, "connect: socket: %s", strerror(errno));
        goto out;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (make_stream(c, fd, opts))
        goto out;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        rc = set_state(c, REDIS_CONN_HANDSHAKE); /* writable at once: the loop goes on */
    else if (errno == EINPROGRESS)
        rc = 0;
    else
        fail(c, "connect: %s", strerror(errno));
out:
    freeaddrinfo(ai);
    return rc;
}

redis_conn_t *redis_conn_new(loop_t *loop, const redis_conn_opts_t *opts)
{
    redis_conn_t *c = conn_alloc(loop, opts);
    if (!c)
        return NULL;
    c->state = REDIS_CONN_CONNECTING;
    if (start(c, opts) == 0)
        rearm_timer(c);
    return c;
}

redis_conn_t *redis_conn_new_stream(loop_t *loop, redis_stream_t *stream, const redis_conn_opts_t *opts)
{
    redis_conn_t *c = conn_alloc(loop, opts);
    if (!c) {
        redis_stream_destroy(&stream);
        return NULL;
    }
    c->tls = redis_stream_is_tls(stream);
    c->state = REDIS_CONN_HANDSHAKE;
    if (attach(c, stream, LOOP_IN | LOOP_OUT) == 0)
        rearm_timer(c);
    return c;
}

void redis_conn_destroy(redis_conn_t **conn_p)
{
    if (!conn_p || !*conn_p)
        return;
    redis_conn_t *c = *conn_p;
    *conn_p = NULL;
    if (c->dead)
        return;
    c->dead = 1;
    if (c->depth) {
        /* Under our own handler: off the loop now, freed when it returns. */
        close_transport(c);
        if (c->timer)
            loop_cancel_timer(c->loop, c->timer);
        c->timer = 0;
        return;
    }
    conn_free(c);
}

int redis_conn_command(redis_conn_t *c, int argc, const char *const *argv, const size_t *lens, int64_t timeout_ns,
                       redis_conn_reply_fn *fn, void *arg)
{
    if (argc < 1 || argc > REDIS_CONN_MAX_ARGS || c->dead)
        return -1;
    pending_t *p = calloc(1, sizeof(*p));
    char *cmd = NULL;
    int len = p ? redisFormatCommandArgv(&cmd, argc, (const char **)argv, lens) : -1;
    int rc = -1;
    if (len < 0)
        goto out;
    if (c->state != REDIS_CONN_FAILED &&
        buf_append(c->state == REDIS_CONN_READY ? &c->out : &c->held, cmd, (size_t)len))
        goto out;
    p->fn = fn;
    p->arg = arg;
    p->timeout_ns = timeout_ns > 0 ? timeout_ns : 1;
    p->deadline_ns = loop_now(c->loop) + p->timeout_ns;
    size_t n0 = lens ? lens[0] : strlen(argv[0]);
    snprintf(p->name, sizeof(p->name), "%.*s", (int)(n0 < sizeof(p->name) ? n0 : sizeof(p->name) - 1), argv[0]);
    if (c->tail)
        c->tail->next = p;
    else
        c->head = p;
    c->tail = p;
    c->npending++;
    p = NULL;
    rc = 0;
    update_events(c);
    rearm_timer(c);
out:
    if (cmd) {
        wipe(cmd, len > 0 ? (size_t)len : 0);
        redisFreeCommand(cmd);
    }
    free(p);
    return rc;
}

redis_conn_state_t redis_conn_state(const redis_conn_t *c)
{
    return c->state;
}

const char *redis_conn_error(const redis_conn_t *c)
{
    return c->error;
}

const char *redis_conn_addr(const redis_conn_t *c)
{
    return c->addr;
}

size_t redis_conn_pending(const redis_conn_t *c)
{
    return c->npending;
}

const char *redis_conn_tls_version(const redis_conn_t *c)
{
    return c->stream ? redis_stream_tls_version(c->stream) : "";
}

const char *redis_conn_peer_cert(const redis_conn_t *c)
{
    return c->peer_cert;
}

int redis_conn_heard(const redis_conn_t *c)
{
    return c->heard || (c->stream && redis_stream_heard(c->stream));
}
