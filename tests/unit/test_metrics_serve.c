/* Unit tests of metricsd's scrapes (metricsd/metrics_serve.h) on its loop, as the daemon
 * runs them: the HTTPS listener (metrics_tls, self-signed) in the test's thread, a fake API
 * server that answers the TokenReviews and SubjectAccessReviews and also serves the
 * upstream exposition, and scrapers in threads of their own (loop_client.h). What is
 * shown: no token 401, an unknown token 401, a token without the role 403, with it 200
 * and the exposition; decisions cached (no more reviews), a failed review (500) not
 * cached; scrapes of one token at once share one review; a listener stopped while a
 * scrape waits for its review ends it cleanly; an unreachable upstream is a 502. */
#include "fake_api.h"
#include "log.h"
#include "loop_client.h"
#include "loop_curl.h"
#include "metrics_auth.h"
#include "metrics_serve.h"
#include "metrics_tls.h"
#include "tls_client.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPOSITION "# TYPE workqueue_depth gauge\nworkqueue_depth 0\n"

/* ---- the fake API server (and upstream) ---------------------------------------------------- */

typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    int token_reviews, access_reviews, scrapes;
    int review_delay_ms; /* each TokenReview waits this long first */
} api_t;

static api_t api;

static int on_api(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                  buf_t *out)
{
    (void)c;
    api_t *a = user;
    if (!strcmp(method, "GET") && !strcmp(url, "/metrics")) {
        pthread_mutex_lock(&a->mu);
        a->scrapes++;
        pthread_mutex_unlock(&a->mu);
        buf_puts(out, EXPOSITION);
        return 200;
    }
    json_object *in = json_tokener_parse(body), *spec = NULL, *v = NULL;
    json_object_object_get_ex(in, "spec", &spec);
    int status = 404;
    if (!strcmp(url, "/apis/authentication.k8s.io/v1/tokenreviews")) {
        pthread_mutex_lock(&a->mu);
        a->token_reviews++;
        int delay = a->review_delay_ms;
        pthread_mutex_unlock(&a->mu);
        usleep((useconds_t)delay * 1000);
        const char *token = json_object_object_get_ex(spec, "token", &v) ? json_object_get_string(v) : "";
        if (!strcmp(token, "boom")) {
            buf_puts(out, "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":500,\"message\":\"etcd down\"}");
            status = 500;
        } else if (!strcmp(token, "reader") || !strcmp(token, "stranger")) {
            buf_printf(out, "{\"kind\":\"TokenReview\",\"status\":{\"authenticated\":true,"
                            "\"user\":{\"username\":\"%s\",\"groups\":[\"g\"]}}}", token);
            status = 201;
        } else {
            buf_puts(out, "{\"kind\":\"TokenReview\",\"status\":{\"authenticated\":false,\"error\":\"invalid\"}}");
            status = 201;
        }
    } else if (!strcmp(url, "/apis/authorization.k8s.io/v1/subjectaccessreviews")) {
        pthread_mutex_lock(&a->mu);
        a->access_reviews++;
        pthread_mutex_unlock(&a->mu);
        const char *who = json_object_object_get_ex(spec, "user", &v) ? json_object_get_string(v) : "";
        buf_printf(out, "{\"kind\":\"SubjectAccessReview\",\"status\":{\"allowed\":%s}}",
                   !strcmp(who, "reader") ? "true" : "false");
        status = 201;
    }
    json_object_put(in);
    return status;
}

static void api_counts(int *tr, int *sar, int *scrapes)
{
    pthread_mutex_lock(&api.mu);
    *tr = api.token_reviews;
    *sar = api.access_reviews;
    *scrapes = api.scrapes;
    pthread_mutex_unlock(&api.mu);
}

/* ---- metricsd's pieces on a loop ---------------------------------------------------------- */

typedef struct {
    loop_t *loop;
    kube_config_t *cfg;
    kube_client_t *client;
    mserve_stack_t st; /* as metricsd assembles it */
    char upstream[128];
} server_t;

static void server_start(server_t *s, const char *upstream)
{
    memset(s, 0, sizeof(*s));
    fake_api_start(&api.srv, on_api, &api);
    if (!upstream) /* the fake API server's own */
        snprintf(s->upstream, sizeof(s->upstream), "http://127.0.0.1:%d/metrics", api.srv.port);
    else
        snprintf(s->upstream, sizeof(s->upstream), "%s", upstream);
    s->loop = loop_new();
    CU_ASSERT_FATAL(s->loop != NULL);
    fake_api_connect(&api.srv, NULL, &s->cfg, &s->client);
    static struct sockaddr_in sin;
    sin = loopback_any_port();
    mserve_config_t sc = {.client = s->client, .upstream = s->upstream, .review_timeout_ns = 5 * NS_PER_SEC,
                          .upstream_timeout_ns = 5 * NS_PER_SEC};
    mtls_opts_t to = {.addr = &sin, .connection_limit = 8, .connection_timeout_s = 5,
                      .connection_memory_limit = 64 * 1024};
    char err[512];
    CU_ASSERT_EQUAL_FATAL(mserve_stack_start(&s->st, s->loop, sc, to, err, sizeof(err)), 0);
}

static void server_stop(server_t *s)
{
    mtls_stop(&s->st.tls);
    CU_ASSERT_EQUAL(mserve_requests(s->st.serve), 0);
    mserve_stack_stop(&s->st);
    kube_client_destroy(&s->client);
    kube_config_destroy(&s->cfg);
    loop_destroy(&s->loop);
    fake_api_stop(&api.srv);
}

/* ---- scrapers ------------------------------------------------------------------------------ */

typedef struct {
    unsigned port;
    const char *request;
    int status;        /* the answer's, 0 when none came */
    char body[2048];
    int www_bearer;    /* the answer has WWW-Authenticate: Bearer */
} scrape_t;

static int scrape_now(void *arg)
{
    scrape_t *sc = arg;
    sc->status = 0;
    sc->body[0] = '\0';
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    tls_client_t c;
    if (!ctx || tls_client_open(ctx, (int)sc->port, 1, &c)) {
        SSL_CTX_free(ctx);
        return 0;
    }
    char buf[4096];
    size_t n = 0;
    if (SSL_write(c.ssl, sc->request, (int)strlen(sc->request)) > 0) {
        int r;
        while (n < sizeof(buf) - 1 && (r = SSL_read(c.ssl, buf + n, (int)(sizeof(buf) - 1 - n))) > 0)
            n += (size_t)r;
    }
    buf[n] = '\0';
    tls_client_close(&c);
    SSL_CTX_free(ctx);
    int status = 0;
    if (sscanf(buf, "HTTP/1.1 %d", &status) != 1) /* banned-ok: a test reading a status line */
        return 0;
    sc->status = status;
    sc->www_bearer = strstr(buf, "WWW-Authenticate: Bearer") != NULL;
    const char *b = strstr(buf, "\r\n\r\n");
    snprintf(sc->body, sizeof(sc->body), "%s", b ? b + 4 : "");
    return 1;
}

/* One scrape of GET path with Authorization: Bearer token (NULL: none); its status. */
static int scrape(server_t *s, const char *method, const char *path, const char *token, scrape_t *out)
{
    static char req[512];
    if (token)
        snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer %s\r\n\r\n",
                 method, path, token);
    else
        snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", method, path);
    out->port = mtls_port(s->st.tls);
    out->request = req;
    loop_client_run(s->loop, scrape_now, out);
    return out->status;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_decisions_cached(void)
{
    server_t s;
    server_start(&s, NULL);
    scrape_t sc;
    int tr0, sar0, up0, tr, sar, up;
    api_counts(&tr0, &sar0, &up0);

    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", NULL, &sc), 401);
    CU_ASSERT(sc.www_bearer);
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/other", "reader", &sc), 404);
    CU_ASSERT_EQUAL(scrape(&s, "POST", "/metrics", "reader", &sc), 405);
    api_counts(&tr, &sar, &up);
    CU_ASSERT_EQUAL(tr - tr0, 0);

    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "reader", &sc), 200);
    CU_ASSERT_STRING_EQUAL(sc.body, EXPOSITION);
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "reader", &sc), 200);
    api_counts(&tr, &sar, &up);
    CU_ASSERT_EQUAL(tr - tr0, 1); /* the second scrape's decision was cached */
    CU_ASSERT_EQUAL(sar - sar0, 1);
    CU_ASSERT_EQUAL(up - up0, 2);

    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "stranger", &sc), 403);
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "stranger", &sc), 403);
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "nobody", &sc), 401);
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "nobody", &sc), 401);
    api_counts(&tr, &sar, &up);
    CU_ASSERT_EQUAL(tr - tr0, 3);
    CU_ASSERT_EQUAL(sar - sar0, 2);
    CU_ASSERT_EQUAL(up - up0, 2);

    /* A review the API server cannot make: 500, and asked again next time. */
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "boom", &sc), 500);
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "boom", &sc), 500);
    api_counts(&tr, &sar, &up);
    CU_ASSERT_EQUAL(tr - tr0, 5);
    CU_ASSERT_EQUAL(mserve_reviews(s.st.serve), 0);
    CU_ASSERT_EQUAL(mserve_requests(s.st.serve), 0);
    server_stop(&s);
}

typedef struct {
    scrape_t a, b;
} pair_t;

static void *scrape_thread(void *arg)
{
    scrape_now(arg);
    return NULL;
}

static int scrape_two(void *arg)
{
    pair_t *p = arg;
    pthread_t ta, tb;
    pthread_create(&ta, NULL, scrape_thread, &p->a);
    pthread_create(&tb, NULL, scrape_thread, &p->b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    return 1;
}

static void test_one_review_for_a_burst(void)
{
    server_t s;
    server_start(&s, NULL);
    int tr0, sar0, up0, tr, sar, up;
    api_counts(&tr0, &sar0, &up0);
    pthread_mutex_lock(&api.mu);
    api.review_delay_ms = 300; /* both scrapes arrive while the review is in flight */
    pthread_mutex_unlock(&api.mu);
    static const char req[] =
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer reader\r\n\r\n";
    pair_t p = {.a = {.port = mtls_port(s.st.tls), .request = req}, .b = {.port = mtls_port(s.st.tls), .request = req}};
    loop_client_run(s.loop, scrape_two, &p);
    pthread_mutex_lock(&api.mu);
    api.review_delay_ms = 0;
    pthread_mutex_unlock(&api.mu);
    CU_ASSERT_EQUAL(p.a.status, 200);
    CU_ASSERT_EQUAL(p.b.status, 200);
    api_counts(&tr, &sar, &up);
    CU_ASSERT_EQUAL(tr - tr0, 1);
    CU_ASSERT_EQUAL(sar - sar0, 1);
    CU_ASSERT_EQUAL(up - up0, 2);
    server_stop(&s);
}

/* The listener stops while a scrape waits for its review: the scrape ends, nothing
 * leaks (under ASan), libmicrohttpd is not left with a suspended connection. */
static server_t *stopping;

static int on_watch(loop_t *loop, int timer_id, void *arg)
{
    (void)loop, (void)timer_id, (void)arg;
    if (stopping->st.tls && mserve_reviews(stopping->st.serve) == 1 && mserve_requests(stopping->st.serve) == 1)
        mtls_stop(&stopping->st.tls);
    return 0;
}

static void test_stop_while_reviewing(void)
{
    server_t s;
    server_start(&s, NULL);
    stopping = &s;
    pthread_mutex_lock(&api.mu);
    api.review_delay_ms = 500;
    pthread_mutex_unlock(&api.mu);
    int watch = loop_add_timer(s.loop, 0, 10 * NS_PER_MS, on_watch, NULL);
    scrape_t sc;
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "reader", &sc), 0); /* no answer: closed */
    loop_cancel_timer(s.loop, watch);
    pthread_mutex_lock(&api.mu);
    api.review_delay_ms = 0;
    pthread_mutex_unlock(&api.mu);
    CU_ASSERT_PTR_NULL(s.st.tls);
    CU_ASSERT_EQUAL(mserve_requests(s.st.serve), 0);
    CU_ASSERT_EQUAL(mserve_reviews(s.st.serve), 0);
    server_stop(&s);
}

static void test_upstream_down(void)
{
    server_t s;
    server_start(&s, "http://127.0.0.1:1/metrics");
    scrape_t sc;
    CU_ASSERT_EQUAL(scrape(&s, "GET", "/metrics", "reader", &sc), 502);
    CU_ASSERT_STRING_EQUAL(sc.body, "Bad Gateway\n");
    server_stop(&s);
}

static int suite_init(void)
{
    rlog_init("test_metrics_serve", RLOG_ERROR, RLOG_TEXT, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_mutex_init(&api.mu, NULL);
    return 0;
}

static int suite_clean(void)
{
    pthread_mutex_destroy(&api.mu);
    return 0;
}

static CU_TestInfo tests[] = {
    {"401, 403, 200 with the exposition; decisions cached, failures not", test_decisions_cached},
    {"scrapes of one token at once share one review", test_one_review_for_a_burst},
    {"a listener stopped while a scrape waits for its review", test_stop_while_reviewing},
    {"an unreachable upstream is a 502", test_upstream_down},
    CU_TEST_INFO_NULL,
};

#define CU_ONE_SUITE "metricsd scrapes", suite_init, suite_clean, tests
#include "cu_main.h"
