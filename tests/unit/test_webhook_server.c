/* Unit tests of webhook_server's connection limits: the cap (connection cap+1 refused at
 * accept while the accepted ones are served, accepting again once one closes) and the
 * whole-request deadline (a slow-loris client that trickles a byte at a time is closed at
 * the deadline although every single read is quick; a client that never finishes its
 * TLS handshake too; a kept-alive connection that completes its requests in time is not).
 * The server runs on its own event loop in a thread; the clients are blocking OpenSSL. */
#include "admission.h"
#include "cu_table.h"
#include "log.h"
#include "metrics.h"
#include "tls_client.h"
#include "tmpdir.h"
#include "webhook_fixture.h"
#include "webhook_server.h"

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[64];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(int ms)
{
    poll(NULL, 0, ms);
}

/* A self-signed P-256 certificate for 127.0.0.1 into tmpdir/tls.crt and tls.key. */
static void make_cert(void)
{
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    CU_ASSERT_FATAL(pkey && x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"server", -1, -1, 0);
    X509_set_issuer_name(x, name);
    CU_ASSERT_FATAL(X509_sign(x, pkey, EVP_sha256()) > 0);
    char path[128];
    snprintf(path, sizeof(path), "%s/tls.crt", tmpdir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    PEM_write_X509(f, x);
    fclose(f);
    snprintf(path, sizeof(path), "%s/tls.key", tmpdir);
    f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(pkey);
}

/* ---- The server on a thread ------------------------------------------------------------------ */

static void fixture_start(fixture_t *f, int max_connections, int request_timeout_ms, int idle_s)
{
    make_cert();
    webhook_server_config_t cfg = {.bind_address = "127.0.0.1", .port = 0, .cert_dir = tmpdir,
                                   .timeout_s = idle_s, .request_timeout_ms = request_timeout_ms,
                                   .max_connections = max_connections};
    webhook_fixture_start(f, &cfg);
}

/* ---- Clients ------------------------------------------------------------------------------------ */

static SSL_CTX *client_ctx;

typedef tls_client_t client_t;

static int tcp_connect(int port)
{
    return tls_tcp_connect(port, 0);
}

/* Connect and finish the TLS handshake. Returns 0, or -1 (c cleared) when the server
 * closed or reset the connection instead. */
static int client_open(int port, client_t *c)
{
    return tls_client_open(client_ctx, port, 0, c);
}

/* A server (fixture_start's caps) and one client connected to it. */
static void fixture_with_client(fixture_t *f, int max_connections, int request_timeout_ms, int idle_s,
                                client_t *c)
{
    fixture_start(f, max_connections, request_timeout_ms, idle_s);
    CU_ASSERT_EQUAL_FATAL(client_open(f->port, c), 0);
}

/* GET /healthz on a kept-alive connection; returns the HTTP status, or -1. */
static int client_healthz(client_t *c)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (SSL_write(c->ssl, req, (int)strlen(req)) != (int)strlen(req))
        return -1;
    char buf[4096];
    size_t have = 0;
    for (;;) { /* the answer is short: up to its body "ok\n" */
        int r = SSL_read(c->ssl, buf + have, (int)(sizeof(buf) - 1 - have));
        if (r <= 0)
            return -1;
        have += (size_t)r;
        buf[have] = '\0';
        if (strstr(buf, "\r\n\r\nok\n") || have >= sizeof(buf) - 1)
            break;
    }
    return strncmp(buf, "HTTP/1.1 ", 9) ? -1 : (int)strtol(buf + 9, NULL, 10);
}

/* Has the server closed fd? Waits up to ms for it. */
static int closed_by_server(int fd, SSL *ssl, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    if (ssl) {
        char b[256];
        int r = SSL_read(ssl, b, sizeof(b));
        ERR_clear_error();
        return r <= 0;
    }
    char b[256];
    return read(fd, b, sizeof(b)) <= 0;
}

/* ---- Tests ------------------------------------------------------------------------------------------ */

static void test_cap_refuses_one_over(void)
{
    fixture_t f;
    fixture_start(&f, 3, 30000, 30);
    client_t c[4];
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(client_open(f.port, &c[i]), 0);
    /* The 4th: the kernel completes the TCP handshake, webhookd resets it at once. */
    CU_ASSERT_EQUAL(client_open(f.port, &c[3]), -1);
    /* The accepted ones are served, on the same connection, more than once. */
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(client_healthz(&c[i]), 200);
        CU_ASSERT_EQUAL(client_healthz(&c[i]), 200);
    }
    /* One closes: accepting resumes. */
    tls_client_close(&c[1]);
    int reopened = -1;
    for (int tries = 0; tries < 50 && reopened; tries++) {
        pause_ms(20);
        reopened = client_open(f.port, &c[1]);
    }
    CU_ASSERT_EQUAL(reopened, 0);
    if (reopened == 0)
        CU_ASSERT_EQUAL(client_healthz(&c[1]), 200);
    fixture_halt(&f);
    CU_ASSERT(webhook_server_refused(f.srv) >= 1);
    CU_ASSERT_EQUAL(webhook_server_open_connections(f.srv), 3);
    CU_ASSERT_EQUAL(webhook_server_timed_out(f.srv), 0);
    metric_family_t *m = metrics_counter(metrics_default(), "webhook_connections_refused_total",
                                         "Connections closed at accept because the connection cap was reached.", NULL);
    CU_ASSERT_EQUAL(metric_value(m, NULL), (double)webhook_server_refused(f.srv));
    for (int i = 0; i < 3; i++)
        tls_client_close(&c[i]);
    fixture_free(&f);
}

/* The refusals are counted one per connection, and many of them cost nothing lasting. */
static void test_cap_many_refused(void)
{
    fixture_t f;
    client_t held, c;
    fixture_with_client(&f, 1, 30000, 30, &held);
    int refused = 0;
    for (int i = 0; i < 20; i++)
        refused += client_open(f.port, &c) == -1;
    CU_ASSERT_EQUAL(refused, 20);
    CU_ASSERT_EQUAL(client_healthz(&held), 200);
    fixture_halt(&f);
    CU_ASSERT_EQUAL(webhook_server_refused(f.srv), 20);
    CU_ASSERT_EQUAL(webhook_server_open_connections(f.srv), 1);
    tls_client_close(&held);
    fixture_free(&f);
}

static void test_slow_loris_closed_at_deadline(void)
{
    /* Each read waits at most 5 s (idle), each byte comes every 150 ms: only the
     * whole-request deadline (700 ms) can end this. */
    fixture_t f;
    client_t c;
    fixture_with_client(&f, 10, 700, 5, &c);
    static const char req[] = "POST " ADMISSION_VALIDATE_PATH " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
    double t0 = now_s(), closed_at = 0;
    for (size_t i = 0; i < 40 && !closed_at; i++) {
        if (SSL_write(c.ssl, req + i % (sizeof(req) - 1), 1) != 1 || closed_by_server(c.fd, c.ssl, 150))
            closed_at = now_s() - t0;
    }
    ERR_clear_error();
    CU_ASSERT(closed_at > 0.5);
    CU_ASSERT(closed_at < 2.0);
    tls_client_close(&c);

    /* A client that never starts its TLS handshake: the same deadline. */
    int fd = tcp_connect(f.port);
    CU_ASSERT_FATAL(fd >= 0);
    t0 = now_s();
    CU_ASSERT(closed_by_server(fd, NULL, 3000));
    double dt = now_s() - t0;
    CU_ASSERT(dt > 0.5 && dt < 2.0);
    close(fd);

    fixture_halt(&f);
    CU_ASSERT_EQUAL(webhook_server_timed_out(f.srv), 2);
    fixture_free(&f);
}

static void test_keepalive_requests_in_time_survive(void)
{
    /* Deadline 600 ms per request: five requests 300 ms apart (1.2 s in all) are served
     * on one connection; then, silent, it is closed after idle + deadline at the latest. */
    fixture_t f;
    client_t c;
    fixture_with_client(&f, 10, 600, 1, &c);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(client_healthz(&c), 200);
        pause_ms(300);
    }
    double t0 = now_s();
    CU_ASSERT(closed_by_server(c.fd, c.ssl, 4000));
    CU_ASSERT(now_s() - t0 < 2.0);
    tls_client_close(&c);
    fixture_halt(&f);
    CU_ASSERT_EQUAL(webhook_server_open_connections(f.srv), 0);
    fixture_free(&f);
}

static void test_stop_accepting_at_cap(void)
{
    /* Draining while the cap is reached: the refuser goes with the listener. */
    fixture_t f;
    client_t held, c;
    fixture_with_client(&f, 1, 30000, 30, &held);
    CU_ASSERT_EQUAL(client_open(f.port, &c), -1);
    fixture_halt(&f);
    webhook_server_stop_accepting(f.srv);
    CU_ASSERT_EQUAL(tcp_connect(f.port), -1);
    tls_client_close(&held);
    fixture_free(&f);
}

static int suite_init(void)
{
    rlog_init("test_webhook_server", RLOG_ERROR, RLOG_TEXT, NULL);
    signal(SIGPIPE, SIG_IGN);
    client_ctx = SSL_CTX_new(TLS_client_method());
    return client_ctx && tmpdir_make(tmpdir, sizeof(tmpdir), "test_webhook_server") == 0 ? 0 : -1;
}

static int suite_clean(void)
{
    SSL_CTX_free(client_ctx);
    metrics_default_free();
    return tmpdir_remove(tmpdir);
}

CU_HOOKS({"webhook server: connection limits", suite_init, suite_clean, NULL, NULL});

static const cu_entry_t tests[] = {
    CU_SUITE("webhook server: connection limits"),
    {"cap: connection cap+1 refused, accepted ones served, accepting resumes", test_cap_refuses_one_over},
    {"cap: every refusal counted", test_cap_many_refused},
    {"deadline: slow-loris and silent handshake closed at the whole-request deadline",
     test_slow_loris_closed_at_deadline},
    {"deadline: kept-alive requests in time survive, a silent one is closed",
     test_keepalive_requests_in_time_survive},
    {"stop accepting while at the cap", test_stop_accepting_at_cap},
};

CU_MAIN(tests)
