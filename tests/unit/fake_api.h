/* fake_api: the in-process HTTP server of the unit suites that talk to a fake API server
 * (libmicrohttpd on 127.0.0.1, a free port, one thread per connection).
 *
 * It gathers each request's body and calls the suite's handler once per request with the
 * method, the URL (path without the query; MHD_lookup_connection_value on c gives the
 * query arguments) and the body ("" when there is none). The handler writes the response
 * body to out and returns the HTTP status; the response goes out as application/json. A
 * handler that returns a negative status drops the connection without an answer (a
 * server that died mid-request).
 * Handlers run on the server's threads: a handler that touches state the test also reads
 * takes the suite's own lock.
 *
 * fake_api_connect gives a suite a kubeconfig (token auth) and a client aimed at the
 * server; fake_api_open starts the server and connects them, fake_api_close undoes both.
 * A handler that wants a response header (Retry-After) names it with
 * fake_api_reply_header.
 *
 * It counts the TCP connections it accepted (connections) and the requests being served
 * at once, from their headers to their response sent (in_flight, its peak max_in_flight),
 * so that a suite can tell whether a client reused its connections: over HTTP/1.1 (all
 * this server speaks) a client needs at least as many connections as requests it has in
 * flight at once, and with one connection pool no more.
 *
 * Header-only (each suite is one executable): include it in the test file.
 */
#ifndef RDC_TEST_FAKE_API_H
#define RDC_TEST_FAKE_API_H

#include "buf.h"
#include "kube_client.h"
#include "kube_config.h"
#include "loopback.h"

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*fake_api_handler_t)(void *user, struct MHD_Connection *c, const char *method,
                                  const char *url, const char *body, buf_t *out);

typedef struct {
    struct MHD_Daemon *d;
    int port;
    fake_api_handler_t handle;
    void *user;
    int connections;   /* accepted so far (read with __atomic_load_n) */
    int in_flight;     /* requests being served */
    int max_in_flight; /* the peak of in_flight */
} fake_api_t;

/* A header for the response of the request being handled: the handler calls
 * fake_api_reply_header (on its thread) before it returns. */
static __thread char fake_api_header_name[64], fake_api_header_value[256];

/* Send the header "name: value" with the response of the request the calling handler
 * serves (one header; a second call replaces it). Call only from a handler. */
static inline void fake_api_reply_header(const char *name, const char *value)
{
    snprintf(fake_api_header_name, sizeof(fake_api_header_name), "%s", name);
    snprintf(fake_api_header_value, sizeof(fake_api_header_value), "%s", value);
}

static inline void fake_api_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                                          enum MHD_ConnectionNotificationCode toe)
{
    (void)c;
    (void)socket_context;
    fake_api_t *f = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        __atomic_add_fetch(&f->connections, 1, __ATOMIC_SEQ_CST);
}

static inline enum MHD_Result fake_api_on_request(void *cls, struct MHD_Connection *c,
                                                  const char *url, const char *method,
                                                  const char *version, const char *upload,
                                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    fake_api_t *f = cls;
    buf_t *body = *con_cls;
    if (!body) { /* the headers: make room for the body */
        body = calloc(1, sizeof(*body));
        if (!body)
            return MHD_NO;
        buf_init(body, 0);
        *con_cls = body;
        int now = __atomic_add_fetch(&f->in_flight, 1, __ATOMIC_SEQ_CST);
        int peak = __atomic_load_n(&f->max_in_flight, __ATOMIC_SEQ_CST);
        while (now > peak &&
               !__atomic_compare_exchange_n(&f->max_in_flight, &peak, now, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            ;
        return MHD_YES;
    }
    if (*upload_size) {
        buf_append(body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    buf_t out;
    buf_init(&out, 0);
    int code = f->handle(f->user, c, method, url, buf_str(body), &out);
    if (code < 0) { /* the handler drops the connection: no answer at all */
        buf_free(&out);
        return MHD_NO;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(out.len, (void *)buf_str(&out), MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (fake_api_header_name[0])
        MHD_add_response_header(resp, fake_api_header_name, fake_api_header_value);
    fake_api_header_name[0] = '\0';
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, resp);
    MHD_destroy_response(resp);
    buf_free(&out);
    return ret;
}

static inline void fake_api_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    fake_api_t *f = cls;
    buf_t *body = *con_cls;
    if (body) {
        __atomic_sub_fetch(&f->in_flight, 1, __ATOMIC_SEQ_CST);
        buf_free(body);
        free(body);
    }
    *con_cls = NULL;
}

/* Start serving on 127.0.0.1 with handler(user, ...); f->port is the port. A server that
 * cannot start fails the test (CU_ASSERT_*_FATAL). Stop it with fake_api_stop. */
static inline void fake_api_start(fake_api_t *f, fake_api_handler_t handler, void *user)
{
    memset(f, 0, sizeof(*f));
    f->handle = handler;
    f->user = user;
    struct sockaddr_in sa = loopback_any_port();
    f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                            NULL, NULL, fake_api_on_request, f, MHD_OPTION_SOCK_ADDR, &sa,
                            MHD_OPTION_NOTIFY_COMPLETED, fake_api_on_completed, f,
                            MHD_OPTION_NOTIFY_CONNECTION, fake_api_on_connection, f, MHD_OPTION_END);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->d);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    CU_ASSERT_PTR_NOT_NULL_FATAL(info);
    f->port = info->port;
}

/* Stop the server (waiting for its threads); no handler runs after it returns. */
static inline void fake_api_stop(fake_api_t *f)
{
    if (f->d)
        MHD_stop_daemon(f->d);
    f->d = NULL;
}

/* The options of a client of the fake server: no client-side rate limit (qps 0) and
 * max_retries retries, the first 1 ms after the failure (a test never waits on backoff). */
static inline kube_client_opts_t fake_api_opts(int max_retries)
{
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 0;
    o.max_retries = max_retries;
    o.retry_base_ms = 1;
    return o;
}

/* Load a kubeconfig whose one context points at f (http, token "t") into *cfg and create
 * *client from it with the options o (NULL: the defaults without the client-side rate
 * limit, qps 0). Failing either fails the test (CU_ASSERT_*_FATAL). The caller destroys
 * both (kube_client_destroy, kube_config_destroy). */
static inline void fake_api_connect(const fake_api_t *f, const kube_client_opts_t *o, kube_config_t **cfg,
                                    kube_client_t **client)
{
    kube_client_opts_t unlimited;
    if (!o) {
        kube_client_opts_init(&unlimited);
        unlimited.qps = 0;
        o = &unlimited;
    }
    char yaml[1024], err[256];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster: {server: http://127.0.0.1:%d}\n"
             "contexts:\n- name: f\n  context: {cluster: f, user: u}\ncurrent-context: f\n"
             "users:\n- name: u\n  user: {token: t}\n",
             f->port);
    CU_ASSERT_FATAL(kube_config_load_buffer(yaml, strlen(yaml), "test", NULL, cfg, err, sizeof(err)) == 0);
    *client = kube_client_new(*cfg, o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*client);
}

/* The suites' usual pair: f started with handler(user), and *cfg and *client aimed at it
 * (fake_api_connect, options o); fake_api_close undoes both. */
static inline void fake_api_open(fake_api_t *f, fake_api_handler_t handler, void *user, const kube_client_opts_t *o,
                                 kube_config_t **cfg, kube_client_t **client)
{
    fake_api_start(f, handler, user);
    fake_api_connect(f, o, cfg, client);
}

/* Destroys *client and *cfg (setting them to NULL) and stops f. */
static inline void fake_api_close(fake_api_t *f, kube_config_t **cfg, kube_client_t **client)
{
    kube_client_destroy(client);
    kube_config_destroy(cfg);
    fake_api_stop(f);
}

/* A request log: the suite's handler adds each request (under the suite's own lock) and
 * its checks count them. */
#define FAKE_LOG_MAX 256
typedef struct {
    char method[FAKE_LOG_MAX][8];
    char path[FAKE_LOG_MAX][512]; /* without the query */
    int n;
} fake_log_t;

/* Log method and url; returns the entry's index (a full log reuses its last entry). */
static inline int fake_log_add(fake_log_t *l, const char *method, const char *url)
{
    int i = l->n < FAKE_LOG_MAX ? l->n++ : FAKE_LOG_MAX - 1;
    snprintf(l->method[i], sizeof(l->method[i]), "%s", method);
    snprintf(l->path[i], sizeof(l->path[i]), "%s", url);
    return i;
}

/* fake_log_add under the suite's lock mu (a handler on the server's thread). */
static inline void fake_log_note(pthread_mutex_t *mu, fake_log_t *l, const char *method, const char *url)
{
    pthread_mutex_lock(mu);
    fake_log_add(l, method, url);
    pthread_mutex_unlock(mu);
}

/* How many logged requests have this method and a path containing part ("" = any). */
static inline int fake_log_count(const fake_log_t *l, const char *method, const char *part)
{
    int n = 0;
    for (int i = 0; i < l->n; i++)
        n += !strcmp(l->method[i], method) && strstr(l->path[i], part) != NULL;
    return n;
}

/* fake_log_count under the suite's lock mu (the test's thread, while the server runs). */
static inline int fake_log_tally(pthread_mutex_t *mu, const fake_log_t *l, const char *method, const char *part)
{
    pthread_mutex_lock(mu);
    int n = fake_log_count(l, method, part);
    pthread_mutex_unlock(mu);
    return n;
}

#endif
