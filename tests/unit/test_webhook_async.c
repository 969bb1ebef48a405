/* Unit tests of the validating review that waits for its StorageClass (webhook_server.h,
 * "the one deferred answer"): while the read of one review is held by a slow API server,
 * other requests (a conversion, an admission that needs no read) are answered on other
 * connections; the waiting review is answered with the right decision when the read
 * ends; a read that never ends is refused at the reader's deadline with the message of a
 * failed read; a client that goes away first, or the server destroyed while a review
 * waits, touch no freed request (the ASan run checks). The server runs on its own loop in
 * a thread, the fake API server (libmicrohttpd) on its threads, the clients are blocking
 * OpenSSL in the test's thread. */
#include "cert_files.h"
#include "classcheck.h"
#include "cu_table.h"
#include "fake_api.h"
#include "log.h"
#include "text_assert.h"
#include "tls_client.h"
#include "webhook_fixture.h"
#include "webhook_server.h"

#include <CUnit/CUnit.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SC(name, ann, expand) \
    "{\"metadata\":{\"name\":\"" name "\"" ann "},\"provisioner\":\"p\"" expand "}"
#define DEF ",\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"true\"}"

static char tmpdir[64];
static SSL_CTX *client_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- The API server: class "slow" waits at a gate ------------------------------------------ */

typedef struct {
    int gate[2];  /* a byte (or the write end closed) opens the gate */
    int entered;  /* requests that reached the gate (atomic) */
} api_state_t;

static int api_handler(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                       buf_t *out)
{
    (void)c, (void)method, (void)body;
    api_state_t *st = user;
    if (!strcmp(url, "/apis/storage.k8s.io/v1/storageclasses")) {
        buf_puts(out, "{\"kind\":\"StorageClassList\",\"items\":[" SC("standard", DEF, ",\"allowVolumeExpansion\":true")
                      "]}");
        return 200;
    }
    if (!strcmp(url, "/apis/storage.k8s.io/v1/storageclasses/slow")) {
        __atomic_add_fetch(&st->entered, 1, __ATOMIC_SEQ_CST);
        struct pollfd p = {.fd = st->gate[0], .events = POLLIN};
        poll(&p, 1, 10000);
        buf_puts(out, SC("slow", "", ",\"allowVolumeExpansion\":false"));
        return 200;
    }
    buf_puts(out, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}");
    return 404;
}

typedef struct {
    api_state_t st;
    fake_api_t api;
    kube_config_t *cfg;
    kube_client_t *client;
    fixture_t f;
} world_t;

/* The fake API server, a client of it, and the webhook server with a reader whose reads
 * end within timeout_ms. */
static void world_start(world_t *w, int timeout_ms)
{
    memset(w, 0, sizeof(*w));
    CU_ASSERT_FATAL(pipe(w->st.gate) == 0);
    kube_client_opts_t co = fake_api_opts(0);
    fake_api_open(&w->api, api_handler, &w->st, &co, &w->cfg, &w->client);
    cert_files_make(tmpdir, "server", "tls.crt", "tls.key");
    webhook_server_config_t cfg = {.bind_address = "127.0.0.1", .port = 0, .cert_dir = tmpdir, .timeout_s = 30};
    webhook_fixture_start_classes(&w->f, &cfg, w->client, NULL, timeout_ms);
}

static void gate_open(world_t *w)
{
    if (w->st.gate[1] >= 0)
        close(w->st.gate[1]);
    w->st.gate[1] = -1;
}

/* Wait (up to 5 s) until n requests reached the gate. */
static int gate_reached(world_t *w, int n)
{
    for (int i = 0; i < 500 && __atomic_load_n(&w->st.entered, __ATOMIC_SEQ_CST) < n; i++)
        poll(NULL, 0, 10);
    return __atomic_load_n(&w->st.entered, __ATOMIC_SEQ_CST) >= n;
}

/* Stop the webhook server (if still running), then the API server. */
static void world_stop(world_t *w, int server_running)
{
    if (server_running)
        fixture_halt(&w->f);
    fixture_free(&w->f);
    gate_open(w);
    fake_api_stop(&w->api);
    kube_client_destroy(&w->client);
    kube_config_destroy(&w->cfg);
    close(w->st.gate[0]);
}

/* ---- Requests ------------------------------------------------------------------------------- */

static const char conversion[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"c-1\","
    "\"desiredAPIVersion\":\"cache.example.com/v1\",\"objects\":[{\"apiVersion\":\"cache.example.com/v1alpha1\","
    "\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},"
    "\"spec\":{\"size\":1,\"image\":\"redis\"}}]}}";

/* An AdmissionReview of op on RedisCluster "cache" from old_storage to new_storage (the
 * spec.storage objects), into b. */
static void admission_body(buf_t *b, const char *uid, const char *op, const char *old_storage,
                           const char *new_storage)
{
    buf_printf(b,
               "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"%s\","
               "\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1\",\"kind\":\"RedisCluster\"},"
               "\"operation\":\"%s\",\"name\":\"cache\",\"namespace\":\"d\","
               "\"object\":{\"metadata\":{\"name\":\"cache\"},"
               "\"spec\":{\"size\":3,\"image\":\"redis\",\"storage\":%s}},"
               "\"oldObject\":{\"metadata\":{\"name\":\"cache\"},"
               "\"spec\":{\"size\":3,\"image\":\"redis\",\"storage\":%s}}}}",
               uid, op, new_storage, old_storage);
}

/* Open a connection and send one POST of body to path (Connection: close). Returns 0. */
static int send_post(int port, const char *path, const char *body, tls_client_t *c)
{
    if (tls_client_open(client_ctx, port, 1, c))
        return -1;
    buf_t req;
    buf_init(&req, 0);
    buf_printf(&req, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s", path, strlen(body), body);
    int rc = SSL_write(c->ssl, req.data, (int)req.len) == (int)req.len ? 0 : -1;
    buf_free(&req);
    return rc;
}

/* Read the answer until the server closes (the socket's 5 s timeout bounds it); the HTTP
 * status, or -1 when none came. *body gets the body (caller frees b). */
static int read_answer(tls_client_t *c, buf_t *b, const char **body)
{
    char tmp[16384];
    int r;
    while ((r = SSL_read(c->ssl, tmp, sizeof(tmp))) > 0)
        buf_append(b, tmp, (size_t)r);
    ERR_clear_error();
    const char *t = buf_str(b), *sep = strstr(t, "\r\n\r\n");
    *body = sep ? sep + 4 : "";
    return strncmp(t, "HTTP/1.1 ", 9) ? -1 : (int)strtol(t + 9, NULL, 10);
}

/* POST body to path on a new connection and read the answer: the HTTP status. */
static int post(int port, const char *path, const char *body, buf_t *b, const char **answer)
{
    tls_client_t c;
    int status = send_post(port, path, body, &c) ? -1 : read_answer(&c, b, answer);
    tls_client_close(&c);
    return status;
}

/* A world with a growth waiting for its read: the request, the connection it was sent
 * on, and a buffer for answers. */
typedef struct {
    world_t w;
    buf_t req, ans;
    tls_client_t c;
} growth_t;

/* Start g's world (reads end within timeout_ms) and send, on g->c, a growth of class
 * "slow" whose read the API server holds (uid names it). growth_end frees g. */
static void start_growth(growth_t *g, int timeout_ms, const char *uid)
{
    world_start(&g->w, timeout_ms);
    buf_init(&g->req, 0);
    buf_init(&g->ans, 0);
    admission_body(&g->req, uid, "UPDATE", "{\"size\":\"1Gi\",\"storageClass\":\"slow\"}",
                   "{\"size\":\"2Gi\",\"storageClass\":\"slow\"}");
    CU_ASSERT_EQUAL_FATAL(send_post(g->w.f.port, ADMISSION_VALIDATE_PATH, buf_str(&g->req), &g->c), 0);
    CU_ASSERT_FATAL(gate_reached(&g->w, 1)); /* its read is held by the API server */
}

/* Halt g's webhook server, which then has waiting reviews still waiting for a read, stop
 * the world and free the buffers; the connection is the caller's. */
static void growth_end(growth_t *g, int waiting)
{
    fixture_halt(&g->w.f);
    CU_ASSERT_EQUAL(webhook_server_waiting(g->w.f.srv), waiting);
    world_stop(&g->w, 0); /* server, then reader, then base */
    buf_free(&g->req);
    buf_free(&g->ans);
}

/* ---- Tests ----------------------------------------------------------------------------------- */

/* The point: a review waiting for its class does not hold up anyone else. */
static void test_others_answered_while_a_read_waits(void)
{
    growth_t g;
    start_growth(&g, 5000, "grow-slow");
    /* meanwhile: a conversion, a create (no read), a mutation, each on its own connection */
    const char *body;
    double t0 = now_s();
    CU_ASSERT_EQUAL(post(g.w.f.port, "/convert", conversion, &g.ans, &body), 200);
    CU_ASSERT(text_contains(body, "\"uid\":\"c-1\""));
    buf_reset(&g.ans);
    buf_t create;
    buf_init(&create, 0);
    admission_body(&create, "create-1", "CREATE", "{}", "{\"size\":\"2Gi\",\"storageClass\":\"slow\"}");
    CU_ASSERT_EQUAL(post(g.w.f.port, ADMISSION_VALIDATE_PATH, buf_str(&create), &g.ans, &body), 200);
    CU_ASSERT(text_contains(body, "\"uid\":\"create-1\"") && text_contains(body, "\"allowed\":true"));
    buf_reset(&g.ans);
    CU_ASSERT_EQUAL(post(g.w.f.port, ADMISSION_MUTATE_PATH, buf_str(&g.req), &g.ans, &body), 200);
    CU_ASSERT(now_s() - t0 < 2.0); /* not behind the held read (5 s) */
    /* another growth waits too, beside the first: the list of every class answers at once */
    buf_t dflt;
    buf_init(&dflt, 0);
    admission_body(&dflt, "grow-default", "UPDATE", "{\"size\":\"1Gi\"}", "{\"size\":\"3Gi\"}");
    buf_reset(&g.ans);
    CU_ASSERT_EQUAL(post(g.w.f.port, ADMISSION_VALIDATE_PATH, buf_str(&dflt), &g.ans, &body), 200);
    CU_ASSERT(text_contains(body, "\"uid\":\"grow-default\"") && text_contains(body, "\"allowed\":true"));
    CU_ASSERT_EQUAL(__atomic_load_n(&g.w.st.entered, __ATOMIC_SEQ_CST), 1);
    /* the read ends: the first review is answered, refused by what was read */
    gate_open(&g.w);
    buf_reset(&g.ans);
    CU_ASSERT_EQUAL(read_answer(&g.c, &g.ans, &body), 200);
    ASSERT_TEXT_HAS(body, "\"uid\":\"grow-slow\"", "\"allowed\":false", "\"code\":403",
                    "spec.storage.size: Forbidden: cannot grow from \\\"1Gi\\\" to \\\"2Gi\\\": "
                    "StorageClass \\\"slow\\\" does not allow volume expansion");
    tls_client_close(&g.c);
    growth_end(&g, 0);
    buf_free(&create);
    buf_free(&dflt);
}

/* A read that never ends: refused at the reader's deadline, with a failed read's message. */
static void test_read_deadline_refuses(void)
{
    growth_t g;
    double t0 = now_s();
    start_growth(&g, 300, "grow-never");
    const char *body;
    CU_ASSERT_EQUAL(read_answer(&g.c, &g.ans, &body), 200);
    double took = now_s() - t0;
    CU_ASSERT(took >= 0.25 && took < 2.0);
    ASSERT_TEXT_HAS(body, "\"uid\":\"grow-never\"", "\"allowed\":false", "\"code\":403",
                    "cannot grow from \\\"1Gi\\\" to \\\"2Gi\\\" now: StorageClass \\\"slow\\\" could "
                    "not be read to check allowVolumeExpansion: ", "; the change may be retried");
    tls_client_close(&g.c);
    growth_end(&g, 0);
}

/* The client goes away while its review waits: the answer, when the read ends, goes
 * nowhere and the server goes on serving. */
static void test_client_closes_first(void)
{
    growth_t g;
    start_growth(&g, 5000, "grow-gone");
    tls_client_close(&g.c);
    poll(NULL, 0, 50);
    gate_open(&g.w);
    poll(NULL, 0, 200); /* the read ends, the answer is written to a closed connection */
    const char *body;
    CU_ASSERT_EQUAL(post(g.w.f.port, "/convert", conversion, &g.ans, &body), 200);
    growth_end(&g, 0);
}

/* The server is destroyed while a review waits: its read is cancelled, its request left
 * to evhttp (nothing leaks, nothing freed twice). */
static void test_destroyed_while_waiting(void)
{
    growth_t g;
    start_growth(&g, 5000, "grow-stop");
    growth_end(&g, 1);
    tls_client_close(&g.c);
}

static int suite_init(void)
{
    rlog_init("test_webhook_async", RLOG_ERROR, RLOG_TEXT, NULL);
    signal(SIGPIPE, SIG_IGN);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_webhook_async.XXXXXX");
    client_ctx = SSL_CTX_new(TLS_client_method());
    return mkdtemp(tmpdir) && client_ctx ? 0 : -1;
}

static int suite_clean(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/tls.crt", tmpdir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/tls.key", tmpdir);
    unlink(path);
    rmdir(tmpdir);
    SSL_CTX_free(client_ctx);
    return 0;
}

static const cu_entry_t tests[] = {
    CU_SUITE("webhook: the review that waits for its StorageClass"),
    {"other requests answered while a read waits; then the right answer", test_others_answered_while_a_read_waits},
    {"a read that never ends: refused at the deadline, may be retried", test_read_deadline_refuses},
    {"the client closes first: no answer, the server goes on", test_client_closes_first},
    {"the server destroyed while a review waits", test_destroyed_while_waiting},
};

CU_HOOKS({"webhook: the review that waits for its StorageClass", suite_init, suite_clean, NULL, NULL});

CU_MAIN(tests)
