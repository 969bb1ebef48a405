/* webhook_server: the HTTPS shell around admission_review(). See webhook_server.h. */
#include "webhook_server.h"

#include "admission.h"
#include "clock.h"
#include "conversion.h"
#include "dlist.h"
#include "log.h"
#include "metrics.h"
#include "webhook_tls.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_HEADERS ((size_t)64 << 10)
#define CERT_CHECK_INTERVAL_NS NS_PER_SEC /* at most one look at the files per second */
#define REFUSE_BATCH 64 /* connections refused per wake-up, so that the loop goes on */

typedef struct conn conn_t;
typedef struct pending pending_t;

struct webhook_server {
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound; /* NULL once we stopped accepting */
    struct event *refuser;             /* on the listening socket while the cap is reached */
    webhook_tls_t *tls;
    int port;
    int max_connections;
    int request_timeout_ms, idle_timeout_ms;
    int64_t next_cert_check_ns;
    unsigned long requests, refused, timed_out;
    int open;        /* connections with a conn_t, i.e. between accept and SSL_free */
    int paused;      /* evhttp's listener disabled, refuser on */
    conn_t *conns;   /* every open connection (to detach them on destroy) */
    metric_family_t *m_total, *m_latency, *m_in_flight, *m_cert_reads, *m_cert_errors;
    metric_family_t *m_open, *m_refused, *m_timed_out;
    classcheck_reader_t *classes; /* borrowed; NULL = none */
    pending_t *pending;           /* validating reviews waiting for their StorageClass */
};

/* One accepted TLS connection. evhttp owns the connection and its bufferevent, which
 * owns the SSL; this rides on the SSL (ex_data) and is freed with it, so its life is
 * exactly the connection's, however evhttp ends it. */
struct conn {
    webhook_server_t *s; /* NULL once the server is gone (finalizers may run later) */
    SSL *ssl;
    int nodelay;         /* TCP_NODELAY set on the socket */
    struct event *deadline;
    conn_t *prev, *next;
};

/* ---- Listening ---------------------------------------------------------------------------- */

/* Bind and listen on one address. Returns the descriptor, or -1 with errno set. */
static int bind_listen(int family, const struct sockaddr *sa, socklen_t len, int dual_stack)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (dual_stack)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, sa, len) == 0 && listen(fd, SOMAXCONN) == 0) /* the kernel caps it */
        return fd;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* A non-blocking listening socket on host:port. host NULL or "" means every interface, as
 * Go's ":9443" does: IPv6 dual-stack, or IPv4 when the kernel has no IPv6. A literal IPv6
 * address may be bracketed ("[::1]"). Returns the descriptor, or -1 with err set. */
static int listen_on(const char *host, int port, char *err, size_t errlen)
{
    if (!host || !*host) {
        struct sockaddr_in6 a6 = {
            .sin6_family = AF_INET6, .sin6_addr = in6addr_any, .sin6_port = htons((uint16_t)port)};
        int fd = bind_listen(AF_INET6, (struct sockaddr *)&a6, sizeof(a6), 1);
        if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
            struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
                                     .sin_port = htons((uint16_t)port)};
            fd = bind_listen(AF_INET, (struct sockaddr *)&a4, sizeof(a4), 0);
        }
        if (fd < 0)
            snprintf(err, errlen, "cannot listen on :%d: %s", port, strerror(errno));
        return fd;
    }
    char hostbuf[256], portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    size_t n = strlen(host);
    if (host[0] == '[' && n >= 3 && host[n - 1] == ']' && n - 2 < sizeof(hostbuf)) {
        memcpy(hostbuf, host + 1, n - 2);
        hostbuf[n - 2] = '\0';
    } else {
        snprintf(hostbuf, sizeof(hostbuf), "%s", host);
    }
    struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int gai = getaddrinfo(hostbuf, portstr, &hints, &res);
    if (gai) {
        snprintf(err, errlen, "cannot resolve the bind address \"%s\": %s", host, gai_strerror(gai));
        return -1;
    }
    int fd = -1, saved = EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        if ((fd = bind_listen(ai->ai_family, ai->ai_addr, ai->ai_addrlen, 0)) < 0)
            saved = errno;
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(err, errlen, "cannot listen on %s port %d: %s", host, port, strerror(saved));
    return fd;
}

static int local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len))
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* ---- TLS ---------------------------------------------------------------------------------- */

int webhook_server_check_certs(webhook_server_t *s)
{
    char err[512];
    s->next_cert_check_ns = clock_mono_ns() + CERT_CHECK_INTERVAL_NS;
    int rc = webhook_tls_check(s->tls, err, sizeof(err));
    if (rc == 1) {
        metric_counter_add(s->m_cert_reads, NULL, 1);
        char loads[16];
        snprintf(loads, sizeof(loads), "%u", webhook_tls_loads(s->tls));
        rlog_info("serving certificate reloaded", "loads", loads);
    } else if (rc < 0) {
        metric_counter_add(s->m_cert_reads, NULL, 1);
        metric_counter_add(s->m_cert_errors, NULL, 1);
        rlog_error("cannot reload the serving certificate; still serving the previous one", "error", err);
    }
    return rc;
}

/* ---- Connections: the cap and the whole-request deadline ------------------------------------- */

static int conn_index = -1;
static pthread_once_t conn_index_once = PTHREAD_ONCE_INIT;

static void pause_accepting(webhook_server_t *s);
static void resume_accepting(webhook_server_t *s);

/* OpenSSL calls this for every SSL it frees, ptr being our conn_t or NULL. */
static void conn_free_cb(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    conn_t *c = ptr;
    if (!c)
        return;
    webhook_server_t *s = c->s;
    if (s) {
        DLIST_UNLINK(s->conns, c, prev, next);
        s->open--;
        metric_gauge_set(s->m_open, NULL, s->open);
        if (s->paused && s->open < s->max_connections)
            resume_accepting(s);
    }
    if (c->deadline)
        event_free(c->deadline);
    free(c);
}

static void conn_index_init(void)
{
    conn_index = SSL_get_ex_new_index(0, "webhook_server conn", NULL, NULL, conn_free_cb);
}

/* The deadline passed: shut the socket down. evhttp then sees the end of the stream and
 * frees the connection (and with it the SSL and this conn_t). The socket is still ours
 * here: libevent closes it in the same step that frees the SSL. */
static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    conn_t *c = arg;
    int sock = SSL_get_fd(c->ssl);
    if (!c->s || sock < 0)
        return;
    c->s->timed_out++;
    metric_counter_add(c->s->m_timed_out, NULL, 1);
    rlog_debug("connection closed at the whole-request deadline");
    shutdown(sock, SHUT_RDWR);
}

static void conn_arm(conn_t *c, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(c->deadline, &tv);
}

/* Accept every pending connection and close it at once with a reset: the cap is reached. */
static void on_refuse(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    webhook_server_t *s = arg;
    for (int i = 0; i < REFUSE_BATCH; i++) {
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            break; /* EAGAIN; or EMFILE and the like, tried again at the next wake-up */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(c);
        if (s->refused++ % 1000 == 0) {
            char max[16];
            snprintf(max, sizeof(max), "%d", s->max_connections);
            rlog_warn("connection limit reached: refusing new connections (logged once per 1000)",
                      "maxConnections", max);
        }
        metric_counter_add(s->m_refused, NULL, 1);
    }
}

static void pause_accepting(webhook_server_t *s)
{
    if (!s->bound || s->paused)
        return;
    evconnlistener_disable(evhttp_bound_socket_get_listener(s->bound));
    event_add(s->refuser, NULL);
    s->paused = 1;
}

static void resume_accepting(webhook_server_t *s)
{
    if (!s->paused)
        return;
    event_del(s->refuser);
    if (s->bound)
        evconnlistener_enable(evhttp_bound_socket_get_listener(s->bound));
    s->paused = 0;
}

/* evhttp asks for a bufferevent for every accepted connection: a TLS one, with its
 * deadline; the connection that reaches the cap pauses the listener. On failure evhttp
 * makes a plain bufferevent, which on_request refuses. */
static struct bufferevent *make_bufferevent(struct event_base *base, void *arg)
{
    webhook_server_t *s = arg;
    if (clock_mono_ns() >= s->next_cert_check_ns)
        webhook_server_check_certs(s);
    SSL *ssl = SSL_new(webhook_tls_ctx(s->tls));
    conn_t *c = calloc(1, sizeof(*c));
    if (!ssl || !c || !(c->deadline = evtimer_new(base, on_deadline, c))) {
        SSL_free(ssl);
        free(c);
        return NULL;
    }
    struct bufferevent *bev =
        bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) { /* libevent has freed the SSL (or, out of memory itself, leaks that one) */
        event_free(c->deadline);
        free(c);
        return NULL;
    }
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    c->s = s;
    c->ssl = ssl;
    SSL_set_ex_data(ssl, conn_index, c);
    DLIST_PUSH_FRONT(s->conns, c, prev, next);
    conn_arm(c, s->request_timeout_ms);
    s->open++;
    metric_gauge_set(s->m_open, NULL, s->open);
    if (s->open >= s->max_connections)
        pause_accepting(s);
    return bev;
}

/* ---- Requests ----------------------------------------------------------------------------- */

static const char *reason_of(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 415: return "Unsupported Media Type";
    default: return "Internal Server Error";
    }
}

/* Send code with body (len bytes) as content_type. */
static void reply(struct evhttp_request *req, int code, const char *content_type, const char *body, size_t len)
{
    struct evbuffer *out = evbuffer_new();
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", content_type);
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    if (code == 405)
        evhttp_add_header(h, "Allow", "POST");
    if (out)
        evbuffer_add(out, body, len);
    evhttp_send_reply(req, code, reason_of(code), out);
    if (out)
        evbuffer_free(out);
}

static void reply_text(struct evhttp_request *req, int code, const char *text)
{
    reply(req, code, "text/plain; charset=utf-8", text, strlen(text));
}

/* application/json, with or without parameters ("; charset=utf-8"), in any case. */
static int is_json(const char *ct)
{
    if (!ct)
        return 0;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strlen("application/json");
    if (strncasecmp(ct, "application/json", n))
        return 0;
    ct += n;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == '\0' || *ct == ';';
}

static void log_outcome(const char *webhook, int http, const admission_outcome_t *o, int64_t elapsed_ns)
{
    char code[8], status[8], ms[32];
    snprintf(code, sizeof(code), "%d", http);
    snprintf(status, sizeof(status), "%d", o->code);
    snprintf(ms, sizeof(ms), "%.3f", (double)elapsed_ns / 1e6);
    rlog_level_t level = o->allowed ? RLOG_DEBUG : RLOG_INFO;
    if (!rlog_enabled(level))
        return;
    rlog(level,
         o->bad_request ? "bad admission request"
         : o->allowed   ? "admitted"
                        : "denied",
         "webhook", webhook, "uid", o->uid, "operation", o->operation, "namespace", o->ns, "name", o->name, "dryRun",
         o->dry_run ? "true" : "false", "patched", o->patched ? "true" : "false", "httpCode", code, "code", status,
         "message", o->allowed ? NULL : o->message, "ms", ms);
}

/* One review endpoint: what it is called in messages and metrics, and what it does with
 * a well-formed POST body. review answers into *resp and returns 0, 1 (a bad request: the
 * answer is still JSON) or -1 (out of memory), or ADMISSION_DEFERRED (no answer yet: defer
 * takes the request over, 0, or -1 when out of memory: then 500 now); done logs the
 * outcome with the HTTP code. */
typedef struct {
    const char *path;
    const char *what; /* "an AdmissionReview", "a ConversionReview" */
    int (*review)(const char *body, size_t len, char **resp, void *ctx);
    void (*done)(int http, void *ctx, int64_t elapsed_ns);
    int (*defer)(webhook_server_t *s, struct evhttp_request *req, const char *body, size_t len, int64_t t0,
                 void *ctx); /* NULL: the review never defers */
    void *ctx;
} review_route_t;

/* A review request ended (answered with code): its count, latency and in-flight gauge. */
static void review_count(webhook_server_t *s, const char *path, int code, int64_t t0)
{
    char cs[8];
    snprintf(cs, sizeof(cs), "%d", code);
    metric_counter_add(s->m_total, METRIC_LABELS(path, cs), 1);
    metric_histogram_observe(s->m_latency, METRIC_LABELS(path), (double)(clock_mono_ns() - t0) / 1e9);
    metric_gauge_add(s->m_in_flight, METRIC_LABELS(path), -1);
    s->requests++;
}

/* Answer a review with what the route's review gave (rc, resp: taken), log and count. */
static void review_reply(webhook_server_t *s, struct evhttp_request *req, const review_route_t *r, int rc,
                         char *resp, int64_t t0)
{
    int code;
    if (rc < 0 || !resp) {
        code = 500;
        reply_text(req, code, "500 out of memory\n");
    } else {
        code = rc == 1 ? 400 : 200;
        reply(req, code, "application/json", resp, strlen(resp));
    }
    free(resp);
    r->done(code, r->ctx, clock_mono_ns() - t0);
    review_count(s, r->path, code, t0);
}

/* Serve one review request (admission or conversion alike): POST only, JSON only, the
 * body to the route's review, the answer (now, or when a deferred review's read ends),
 * and the metrics of every request. */
static void serve_review(webhook_server_t *s, struct evhttp_request *req, const review_route_t *r)
{
    int64_t t0 = clock_mono_ns();
    metric_gauge_add(s->m_in_flight, METRIC_LABELS(r->path), 1);
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        char msg[128];
        snprintf(msg, sizeof(msg), "405 method not allowed: %s is POSTed\n", r->what);
        reply_text(req, 405, msg);
        review_count(s, r->path, 405, t0);
        return;
    }
    if (!is_json(ct)) {
        char msg[512];
        snprintf(msg, sizeof(msg),
                 "415 unsupported media type: Content-Type must be application/json, have \"%.200s\"\n", ct ? ct : "");
        reply_text(req, 415, msg);
        review_count(s, r->path, 415, t0);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    char *resp = NULL;
    int rc = body ? r->review(body, len, &resp, r->ctx) : -1;
    if (rc == ADMISSION_DEFERRED && r->defer && r->defer(s, req, body, len, t0, r->ctx) == 0)
        return; /* answered when the read ends */
    review_reply(s, req, r, rc, resp, t0);
}

/* ---- The validating review that waits for its StorageClass --------------------------------- */

/* The class a validating review asks for: what the first pass asked (probe_read), and
 * what the second pass is given (replay_read). */
typedef struct {
    int asked;               /* the review asked for a class */
    int list;                /* the cluster's default: every class */
    char *cls;               /* the class (owned), NULL for the list */
    int oom;
    const json_object *read; /* replay: what was read (borrowed) */
    const char *err;         /* replay: why it could not be read */
} class_ask_t;

/* The first pass's reader: note the class and defer the review. */
static int probe_read(void *user, const char *cls, json_object **out, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    class_ask_t *k = user;
    *out = NULL;
    k->asked = 1;
    k->list = !cls;
    if (cls && !(k->cls = strdup(cls)))
        k->oom = 1;
    return ADMISSION_READ_LATER;
}

/* The second pass's reader: what was read for the same class. */
static int replay_read(void *user, const char *cls, json_object **out, char *err, size_t errlen)
{
    const class_ask_t *k = user;
    *out = NULL;
    if (k->list != !cls || (cls && strcmp(cls, k->cls))) {
        snprintf(err, errlen, "the review asked for another StorageClass the second time");
        return -1;
    }
    if (!k->read) {
        snprintf(err, errlen, "%s", k->err ? k->err : "unknown error");
        return -1;
    }
    *out = json_object_get((json_object *)k->read);
    return 0;
}

typedef struct {
    admission_kind_t kind;
    const char *path;
    const admission_classes_t *classes; /* NULL: no check */
    class_ask_t *ask;                   /* the probe's, when classes is */
    admission_outcome_t o;
} admission_ctx_t;

/* A validating review waiting for its StorageClass read: the request (evhttp's, attached
 * to evcon; see webhook_server.h), a copy of its body, the read. */
struct pending {
    webhook_server_t *s;
    struct evhttp_request *req;
    struct evhttp_connection *evcon; /* its close callback is ours while this waits */
    classcheck_read_t *read;
    admission_kind_t kind;
    const char *path;
    char *body;
    size_t len;
    int64_t t0;
    class_ask_t ask;
    pending_t *prev, *next;
};

static void pending_free(pending_t *p)
{
    DLIST_UNLINK(p->s->pending, p, prev, next);
    classcheck_read_cancel(&p->read);
    free(p->ask.cls);
    free(p->body);
    free(p);
}

/* Give up on p without answering (its connection is going): the request is evhttp's to
 * free while it is on its connection, ours once evhttp detached it. */
static void pending_drop(pending_t *p, const char *why)
{
    if (p->req && !evhttp_request_get_connection(p->req))
        evhttp_request_free(p->req);
    metric_gauge_add(p->s->m_in_flight, METRIC_LABELS(p->path), -1);
    rlog_debug("validating review dropped before its StorageClass was read", "reason", why);
    pending_free(p);
}

/* evhttp frees a connection with a review waiting on it (called before its requests are
 * freed). */
static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    webhook_server_t *s = arg;
    pending_t *next;
    for (pending_t *p = s->pending; p; p = next) {
        next = p->next;
        if (p->evcon == evcon)
            pending_drop(p, "the connection closed");
    }
}

static int admission_route_review(const char *body, size_t len, char **resp, void *ctx)
{
    admission_ctx_t *a = ctx;
    return admission_review_classes(body, len, a->kind, a->classes, resp, &a->o);
}

static void admission_route_done(int http, void *ctx, int64_t elapsed_ns)
{
    admission_ctx_t *a = ctx;
    log_outcome(a->kind == ADMISSION_VALIDATE ? "validate" : "mutate", http, &a->o, elapsed_ns);
}

static int admission_route_defer(webhook_server_t *s, struct evhttp_request *req, const char *body, size_t len,
                                 int64_t t0, void *ctx);

static review_route_t admission_route(admission_ctx_t *a)
{
    return (review_route_t){a->path, "an AdmissionReview", admission_route_review, admission_route_done,
                            admission_route_defer, a};
}

/* The read ended: the review again with what was read, and its answer. */
static void on_class_read(const json_object *read, const char *err, void *arg)
{
    pending_t *p = arg;
    p->read = NULL; /* freed when this returns */
    p->ask.read = read;
    p->ask.err = err;
    admission_classes_t replay = {replay_read, &p->ask};
    admission_ctx_t a = {.kind = p->kind, .path = p->path, .classes = &replay};
    review_route_t r = admission_route(&a);
    char *resp = NULL;
    int rc = admission_route_review(p->body, p->len, &resp, &a);
    evhttp_connection_set_closecb(p->evcon, NULL, NULL);
    review_reply(p->s, p->req, &r, rc, resp, p->t0);
    pending_free(p);
}

/* Keep the request and start its class read; -1 when out of memory (nothing kept). */
static int admission_route_defer(webhook_server_t *s, struct evhttp_request *req, const char *body, size_t len,
                                 int64_t t0, void *ctx)
{
    admission_ctx_t *a = ctx;
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    pending_t *p = calloc(1, sizeof(*p));
    char *copy = malloc(len ? len : 1);
    if (!p || !copy || !evcon || !a->ask || a->ask->oom) {
        free(p);
        free(copy);
        return -1;
    }
    memcpy(copy, body, len);
    *p = (pending_t){.s = s, .req = req, .evcon = evcon, .kind = a->kind, .path = a->path, .body = copy,
                     .len = len, .t0 = t0, .ask = *a->ask};
    a->ask->cls = NULL; /* p's now */
    DLIST_PUSH_FRONT(s->pending, p, prev, next);
    if (!(p->read = classcheck_read_start(s->classes, p->ask.cls, on_class_read, p))) {
        pending_free(p);
        return -1;
    }
    evhttp_connection_set_closecb(evcon, on_conn_close, s);
    return 0;
}

/* evhttp hands on_request a request it already gave us only when it fails it (its
 * callback answers the failure): a review still waiting on it is given up first. */
static void pending_forget(webhook_server_t *s, struct evhttp_request *req)
{
    for (pending_t *p = s->pending; p; p = p->next)
        if (p->req == req) {
            evhttp_connection_set_closecb(p->evcon, NULL, NULL);
            p->req = NULL; /* answered by on_request now, never by us */
            pending_drop(p, "evhttp failed the request");
            return;
        }
}

static void serve_admission(webhook_server_t *s, struct evhttp_request *req, const char *path, admission_kind_t kind)
{
    class_ask_t ask = {0};
    admission_classes_t probe = {probe_read, &ask};
    admission_ctx_t a = {.kind = kind, .path = path, .classes = s->classes ? &probe : NULL, .ask = &ask};
    review_route_t r = admission_route(&a);
    serve_review(s, req, &r);
    free(ask.cls); /* NULL when a deferred review took it */
}

static void log_conversion(int http, const conversion_outcome_t *o, int64_t elapsed_ns)
{
    char code[8], status[8], ms[32], objects[24];
    snprintf(code, sizeof(code), "%d", http);
    snprintf(status, sizeof(status), "%d", o->code);
    snprintf(ms, sizeof(ms), "%.3f", (double)elapsed_ns / 1e6);
    snprintf(objects, sizeof(objects), "%zu", o->objects);
    rlog_level_t level = o->success ? RLOG_DEBUG : RLOG_INFO;
    if (!rlog_enabled(level))
        return;
    rlog(level, o->bad_request ? "bad conversion request" : o->success ? "converted" : "conversion refused",
         "webhook", CONVERSION_PATH, "uid", o->uid, "desiredAPIVersion", o->desired, "objects", objects,
         "httpCode", code, "code", status, "message", o->success ? NULL : o->message, "ms", ms);
}

static int conversion_route_review(const char *body, size_t len, char **resp, void *ctx)
{
    conversion_outcome_t *o = ctx;
    int rc = conversion_review(body, len, resp, o);
    conversion_metrics_observe(rc, o);
    return rc;
}

static void conversion_route_done(int http, void *ctx, int64_t elapsed_ns)
{
    log_conversion(http, ctx, elapsed_ns);
}

/* POST /convert: a ConversionReview, under the same checks, body cap and deadline as the
 * admission paths. */
static void serve_conversion(webhook_server_t *s, struct evhttp_request *req)
{
    conversion_outcome_t o;
    memset(&o, 0, sizeof(o));
    review_route_t r = {CONVERSION_PATH, "a ConversionReview", conversion_route_review, conversion_route_done, NULL,
                        &o};
    serve_review(s, req, &r);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    webhook_server_t *s = arg;
    if (s->pending)
        pending_forget(s, req);
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
    if (!bev || !bufferevent_openssl_get_ssl(bev)) {
        /* Only when TLS could not be set up for this connection (out of memory). */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        reply_text(req, 500, "500 TLS unavailable\n");
        return;
    }
    /* A complete request: the next one is due within idle + request timeout. */
    conn_t *c = SSL_get_ex_data(bufferevent_openssl_get_ssl(bev), conn_index);
    if (c)
        conn_arm(c, s->idle_timeout_ms + s->request_timeout_ms);
    if (c && !c->nodelay) {
        /* The answer leaves as several TLS records: without this, Nagle holds the last
         * one until the client's delayed ACK (40 ms on Linux) for every request. */
        int one = 1, sock = SSL_get_fd(c->ssl);
        if (sock >= 0)
            setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->nodelay = 1;
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (path && !strcmp(path, ADMISSION_VALIDATE_PATH))
        serve_admission(s, req, ADMISSION_VALIDATE_PATH, ADMISSION_VALIDATE);
    else if (path && !strcmp(path, ADMISSION_MUTATE_PATH))
        serve_admission(s, req, ADMISSION_MUTATE_PATH, ADMISSION_MUTATE);
    else if (path && !strcmp(path, CONVERSION_PATH))
        serve_conversion(s, req);
    else if (path && (!strcmp(path, "/healthz") || !strcmp(path, "/readyz")) &&
             (cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD))
        reply_text(req, 200, "ok\n");
    else if (path && (!strcmp(path, "/healthz") || !strcmp(path, "/readyz")))
        reply_text(req, 405, "405 method not allowed\n");
    else
        reply_text(req, 404, "404 not found: the webhooks are " ADMISSION_VALIDATE_PATH ", " ADMISSION_MUTATE_PATH
                                " and " CONVERSION_PATH "\n");
}

/* ---- Life cycle --------------------------------------------------------------------------- */

static void register_metrics(webhook_server_t *s)
{
    metrics_registry_t *reg = metrics_default();
    s->m_total = metrics_counter(reg, "controller_runtime_webhook_requests_total",
                                 "Total number of admission requests by HTTP status code.", "webhook,code");
    s->m_latency = metrics_histogram(reg, "controller_runtime_webhook_latency_seconds",
                                     "Histogram of the latency of processing admission requests", "webhook", NULL, 0);
    s->m_in_flight = metrics_gauge(reg, "controller_runtime_webhook_requests_in_flight",
                                   "Current number of admission requests being served.", "webhook");
    s->m_cert_reads = metrics_counter(reg, "certwatcher_read_certificate_total",
                                      "Total number of certificate reads", NULL);
    s->m_cert_errors = metrics_counter(reg, "certwatcher_read_certificate_errors_total",
                                       "Total number of certificate read errors", NULL);
    /* As controller-runtime does: the series exist (at zero) before the first request. */
    static const char *const paths[] = {ADMISSION_VALIDATE_PATH, ADMISSION_MUTATE_PATH, CONVERSION_PATH};
    for (size_t i = 0; i < 3; i++) {
        metric_counter_add(s->m_total, METRIC_LABELS(paths[i], "200"), 0);
        metric_counter_add(s->m_total, METRIC_LABELS(paths[i], "500"), 0);
        metric_gauge_add(s->m_in_flight, METRIC_LABELS(paths[i]), 0);
    }
    metric_counter_add(s->m_cert_reads, NULL, 0);
    metric_counter_add(s->m_cert_errors, NULL, 0);
    conversion_metrics_register();
    s->m_open = metrics_gauge(reg, "webhook_open_connections", "Open connections to the webhook server.", NULL);
    s->m_refused = metrics_counter(reg, "webhook_connections_refused_total",
                                   "Connections closed at accept because the connection cap was reached.", NULL);
    s->m_timed_out = metrics_counter(reg, "webhook_connections_timed_out_total",
                                     "Connections closed at the whole-request deadline.", NULL);
    metric_gauge_set(s->m_open, NULL, 0);
    metric_counter_add(s->m_refused, NULL, 0);
    metric_counter_add(s->m_timed_out, NULL, 0);
}

int webhook_server_new(struct event_base *base, const webhook_server_config_t *cfg, webhook_server_t **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    webhook_server_t *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->base = base;
    s->classes = cfg->classes;
    s->max_connections = cfg->max_connections > 0 ? cfg->max_connections : WEBHOOK_DEFAULT_MAX_CONNECTIONS;
    s->request_timeout_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : WEBHOOK_DEFAULT_REQUEST_TIMEOUT_MS;
    int idle_s = cfg->timeout_s > 0 ? cfg->timeout_s : WEBHOOK_DEFAULT_TIMEOUT_S;
    s->idle_timeout_ms = idle_s * 1000;
    pthread_once(&conn_index_once, conn_index_init);
    if (conn_index < 0) {
        snprintf(err, errlen, "cannot register the connection data with OpenSSL");
        free(s);
        return -1;
    }
    register_metrics(s);
    metric_counter_add(s->m_cert_reads, NULL, 1);
    if (webhook_tls_new(cfg->cert_dir, cfg->cert_name ? cfg->cert_name : "tls.crt",
                        cfg->key_name ? cfg->key_name : "tls.key", &s->tls, err, errlen)) {
        metric_counter_add(s->m_cert_errors, NULL, 1);
        goto fail;
    }
    s->next_cert_check_ns = clock_mono_ns() + CERT_CHECK_INTERVAL_NS;
    if (!(s->http = evhttp_new(base))) {
        snprintf(err, errlen, "cannot create the HTTP server: out of memory");
        goto fail;
    }
    evhttp_set_bevcb(s->http, make_bufferevent, s);
    evhttp_set_gencb(s->http, on_request, s);
    evhttp_set_max_body_size(s->http, (ev_ssize_t)(cfg->max_body ? cfg->max_body : WEBHOOK_DEFAULT_MAX_BODY));
    evhttp_set_max_headers_size(s->http, (ev_ssize_t)MAX_HEADERS);
    evhttp_set_timeout(s->http, idle_s);
    /* Every method reaches on_request, which answers 405 itself (evhttp would say 501). */
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                            EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    int fd = listen_on(cfg->bind_address, cfg->port, err, errlen);
    if (fd < 0)
        goto fail;
    s->port = local_port(fd);
    if (!(s->bound = evhttp_accept_socket_with_handle(s->http, fd))) {
        close(fd);
        snprintf(err, errlen, "cannot accept connections on port %d", s->port);
        goto fail;
    }
    if (!(s->refuser = event_new(base, fd, EV_READ | EV_PERSIST, on_refuse, s))) {
        snprintf(err, errlen, "cannot create the connection refuser: out of memory");
        goto fail;
    }
    *out = s;
    return 0;
fail:
    webhook_server_destroy(&s);
    return -1;
}

void webhook_server_stop_accepting(webhook_server_t *s)
{
    if (s->refuser) { /* before the listening socket closes */
        event_free(s->refuser);
        s->refuser = NULL;
    }
    s->paused = 0;
    if (s->bound) {
        evhttp_del_accept_socket(s->http, s->bound);
        s->bound = NULL;
    }
}

void webhook_server_destroy(webhook_server_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    webhook_server_t *s = *self_p;
    webhook_server_stop_accepting(s);
    /* evhttp_free frees every connection, but libevent may finalize their bufferevents
     * (and so free their SSLs) later, up to event_base_free: detach them from us now. */
    for (conn_t *c = s->conns; c; c = c->next) {
        c->s = NULL;
        event_free(c->deadline);
        c->deadline = NULL;
    }
    s->conns = NULL;
    if (s->http)
        evhttp_free(s->http); /* closes the listener and every connection (on_conn_close) */
    while (s->pending) {      /* none: on_conn_close dropped them; never touch their requests */
        s->pending->req = NULL;
        pending_free(s->pending);
    }
    webhook_tls_destroy(&s->tls);
    free(s);
    *self_p = NULL;
}

int webhook_server_port(const webhook_server_t *s)
{
    return s->port;
}

unsigned long webhook_server_requests(const webhook_server_t *s)
{
    return s->requests;
}

int webhook_server_open_connections(const webhook_server_t *s)
{
    return s->open;
}

unsigned long webhook_server_refused(const webhook_server_t *s)
{
    return s->refused;
}

int webhook_server_waiting(const webhook_server_t *s)
{
    int n = 0;
    for (const pending_t *p = s->pending; p; p = p->next)
        n++;
    return n;
}

unsigned long webhook_server_timed_out(const webhook_server_t *s)
{
    return s->timed_out;
}
