/* Unit tests of metricsd's HTTPS listener (metricsd/metrics_tls.h): the certificate from
 * a directory, served over real TLS on 127.0.0.1; a rotation (files renamed into place,
 * as the kubelet swaps a mounted Secret) is served to new connections while a connection
 * opened before it is still answered; a half rotation, a mismatched key and junk keep the
 * current certificate; without a directory a self-signed one. The listener runs on a loop
 * in the test's thread; each client step runs in a thread of its own meanwhile
 * (loop_client.h), so that the server answers only as its loop turns. */
#include "cert_files.h"
#include "log.h"
#include "loop_client.h"
#include "loopback.h"
#include "metrics_tls.h"
#include "tls_client.h"
#include "text_assert.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64];

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_size, void **req)
{
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload_data;
    (void)upload_size;
    (void)req;
    static const char body[] = "ok\n";
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

static SSL_CTX *client_ctx(void)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* the test looks at the certificate itself */
    return ctx;
}

/* The CN of the certificate the server presented on c, into cn. */
static void peer_cn(tls_client_t *c, char *cn, size_t cap)
{
    cn[0] = '\0';
    X509 *x = SSL_get1_peer_certificate(c->ssl);
    if (x) {
        X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, (int)cap);
        X509_free(x);
    }
}

/* One GET on an open connection (keep-alive); 1 when the answer is 200 "ok". */
static int get_ok(tls_client_t *c)
{
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (SSL_write(c->ssl, req, (int)sizeof(req) - 1) <= 0)
        return 0;
    char buf[2048];
    size_t n = 0;
    while (n < sizeof(buf) - 1) {
        int r = SSL_read(c->ssl, buf + n, (int)(sizeof(buf) - 1 - n));
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\nok\n"))
            break;
    }
    buf[n] = '\0';
    return strncmp(buf, "HTTP/1.1 200", 12) == 0 && strstr(buf, "\r\n\r\nok\n") != NULL;
}

/* Connect, and say which certificate is served (cn) and whether a GET is answered. */
static int served_now(SSL_CTX *ctx, unsigned port, char *cn, size_t cap)
{
    tls_client_t c;
    if (tls_client_open(ctx, (int)port, 1, &c)) {
        cn[0] = '\0';
        return 0;
    }
    peer_cn(&c, cn, cap);
    int ok = get_ok(&c);
    tls_client_close(&c);
    return ok;
}

/* The client steps, each run in a thread while the loop serves (loop_client.h). */
typedef struct {
    SSL_CTX *ctx;
    unsigned port;
    char *cn;
    size_t cap;
    tls_client_t *c;
} step_t;

static int step_served(void *arg)
{
    step_t *st = arg;
    return served_now(st->ctx, st->port, st->cn, st->cap);
}

static int step_open(void *arg)
{
    step_t *st = arg;
    return tls_client_open(st->ctx, (int)st->port, 1, st->c) == 0;
}

static int step_get(void *arg)
{
    step_t *st = arg;
    return get_ok(st->c);
}

static int served(loop_t *loop, SSL_CTX *ctx, unsigned port, char *cn, size_t cap)
{
    step_t st = {.ctx = ctx, .port = port, .cn = cn, .cap = cap};
    return loop_client_run(loop, step_served, &st);
}

static int client_open(loop_t *loop, SSL_CTX *ctx, unsigned port, tls_client_t *c)
{
    step_t st = {.ctx = ctx, .port = port, .c = c};
    return loop_client_run(loop, step_open, &st);
}

static int client_get(loop_t *loop, tls_client_t *c)
{
    step_t st = {.c = c};
    return loop_client_run(loop, step_get, &st);
}

static mtls_opts_t opts(const struct sockaddr_in *sin, const char *dir)
{
    mtls_opts_t o = {.cert_dir = dir, .cert_name = "tls.crt", .key_name = "tls.key", .addr = sin,
                     .handler = answer, .handler_cls = NULL, .connection_limit = 8, .connection_timeout_s = 5,
                     .connection_memory_limit = 64 * 1024};
    return o;
}

static void test_rotation_served(void)
{
    char err[512], cn[128];
    loop_t *loop = loop_new();
    struct sockaddr_in sin = loopback_any_port();
    mtls_opts_t o = opts(&sin, tmpdir);
    mtls_t *t = NULL;
    cert_files_make(tmpdir, "first", "tls.crt", "tls.key");
    CU_ASSERT_EQUAL_FATAL(mtls_start(loop, &o, &t, err, sizeof(err)), 0);
    CU_ASSERT(mtls_port(t) > 0);
    CU_ASSERT_EQUAL(mtls_loads(t), 1);
    SSL_CTX *ctx = client_ctx();
    CU_ASSERT(served(loop, ctx, mtls_port(t), cn, sizeof(cn)));
    CU_ASSERT_STRING_EQUAL(cn, "first");
    CU_ASSERT_EQUAL(mtls_check(t, 1, err, sizeof(err)), 0); /* nothing changed */

    /* A connection opened (handshake done) before the rotation, its request sent after
     * it (libmicrohttpd closes after each answer here, so one request a connection). */
    tls_client_t before;
    CU_ASSERT_FATAL(client_open(loop, ctx, mtls_port(t), &before));

    cert_files_make(tmpdir, "second", "tls.crt", "tls.key");
    CU_ASSERT_EQUAL(mtls_check(t, 2, err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(mtls_loads(t), 2);
    CU_ASSERT(served(loop, ctx, mtls_port(t), cn, sizeof(cn)));
    CU_ASSERT_STRING_EQUAL(cn, "second");
    /* The old connection is still answered by the draining daemon, with its certificate. */
    CU_ASSERT(client_get(loop, &before));
    peer_cn(&before, cn, sizeof(cn));
    CU_ASSERT_STRING_EQUAL(cn, "first");
    tls_client_close(&before);
    CU_ASSERT_EQUAL(mtls_check(t, 3, err, sizeof(err)), 0);

    /* Half a rotation (a certificate whose key is not there yet): the current pair stays,
     * the failure is said once, and the completed rotation is served. */
    cert_files_make(tmpdir, "third", "tls.crt", NULL);
    CU_ASSERT_EQUAL(mtls_check(t, 4, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "does not match"));
    CU_ASSERT(served(loop, ctx, mtls_port(t), cn, sizeof(cn)));
    CU_ASSERT_STRING_EQUAL(cn, "second");
    CU_ASSERT_EQUAL(mtls_check(t, 5, err, sizeof(err)), 0);
    cert_files_make(tmpdir, "fourth", "tls.crt", "tls.key");
    CU_ASSERT_EQUAL(mtls_check(t, 6, err, sizeof(err)), 1);
    CU_ASSERT(served(loop, ctx, mtls_port(t), cn, sizeof(cn)));
    CU_ASSERT_STRING_EQUAL(cn, "fourth");

    /* Junk where the certificate was: said, and the current one stays. */
    char path[128];
    snprintf(path, sizeof(path), "%s/tls.crt", tmpdir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs("-----BEGIN CERTIFICATE-----\nnot base64\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(mtls_check(t, 7, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "tls.crt"));
    CU_ASSERT(served(loop, ctx, mtls_port(t), cn, sizeof(cn)));
    CU_ASSERT_STRING_EQUAL(cn, "fourth");

    /* Two rotations in a row: the first one's daemon is stopped at once for the second. */
    cert_files_make(tmpdir, "fifth", "tls.crt", "tls.key");
    CU_ASSERT_EQUAL(mtls_check(t, 8, err, sizeof(err)), 1);
    cert_files_make(tmpdir, "sixth", "tls.crt", "tls.key");
    CU_ASSERT_EQUAL(mtls_check(t, 9, err, sizeof(err)), 1);
    CU_ASSERT(served(loop, ctx, mtls_port(t), cn, sizeof(cn)));
    CU_ASSERT_STRING_EQUAL(cn, "sixth");
    CU_ASSERT_EQUAL(mtls_loads(t), 5);
    /* A drained old daemon is stopped (nothing left open; past the drain time). */
    CU_ASSERT_EQUAL(mtls_check(t, 9 + MTLS_DRAIN_NS, err, sizeof(err)), 0);
    CU_ASSERT(served(loop, ctx, mtls_port(t), cn, sizeof(cn)));
    SSL_CTX_free(ctx);
    mtls_stop(&t);
    CU_ASSERT_PTR_NULL(t);
    mtls_stop(&t); /* NULL is fine */
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0); /* the listener left the loop */
    CU_ASSERT_EQUAL(loop_timer_count(loop), 0);
    loop_destroy(&loop);
}

static void test_start_errors_and_self_signed(void)
{
    char err[512], cn[128];
    loop_t *loop = loop_new();
    struct sockaddr_in sin = loopback_any_port();
    mtls_opts_t o = opts(&sin, "/nonexistent-dir");
    mtls_t *t = NULL;
    CU_ASSERT_EQUAL(mtls_start(loop, &o, &t, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT(text_contains(err, "/nonexistent-dir/tls.crt"));
    cert_files_make(tmpdir, "a", "tls.crt", "tls.key");
    cert_files_make(tmpdir, "b", "other.crt", "other.key");
    o = opts(&sin, tmpdir);
    o.key_name = "other.key";
    CU_ASSERT_EQUAL(mtls_start(loop, &o, &t, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "does not match"));

    o = opts(&sin, NULL);
    CU_ASSERT_EQUAL_FATAL(mtls_start(loop, &o, &t, err, sizeof(err)), 0);
    SSL_CTX *ctx = client_ctx();
    CU_ASSERT(served(loop, ctx, mtls_port(t), cn, sizeof(cn)));
    CU_ASSERT_STRING_EQUAL(cn, "localhost@rdc-operator");
    CU_ASSERT_EQUAL(mtls_check(t, 1, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(mtls_loads(t), 1);
    /* The port is taken: a second listener on it fails with a message. */
    struct sockaddr_in same = loopback_any_port();
    same.sin_port = htons((uint16_t)mtls_port(t));
    mtls_opts_t o2 = opts(&same, NULL);
    mtls_t *t2 = NULL;
    CU_ASSERT_EQUAL(mtls_start(loop, &o2, &t2, err, sizeof(err)), -1);
    CU_ASSERT(text_contains(err, "cannot serve HTTPS"));
    SSL_CTX_free(ctx);
    mtls_stop(&t);
    loop_destroy(&loop);
}

static int suite_init(void)
{
    rlog_init("test_metrics_tls", RLOG_ERROR, RLOG_TEXT, NULL);
    signal(SIGPIPE, SIG_IGN);
    return tmpdir_make(tmpdir, sizeof(tmpdir), "test_metrics_tls");
}

static int suite_clean(void)
{
    return tmpdir_remove(tmpdir);
}

static CU_TestInfo tests[] = {
    {"a rotated certificate is served, old connections drain", test_rotation_served},
    {"start errors and the self-signed certificate", test_start_errors_and_self_signed},
    CU_TEST_INFO_NULL,
};

#define CU_ONE_SUITE "metricsd TLS", suite_init, suite_clean, tests
#include "cu_main.h"
