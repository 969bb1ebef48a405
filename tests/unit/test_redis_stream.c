/* Unit tests of the transport half of the Redis client (redis_stream.h, redis_tls.h),
 * without a Redis server: a client session and a server session of OpenSSL joined by a
 * BIO pair in this one thread (and a plain stream over a socketpair), the server side
 * played by the test with canned bytes.
 * Shown: the handshake's WANT_READ/WANT_WRITE steps at TLS 1.3 and 1.2, replies split
 * at every byte (one TLS record each) fed to hiredis's reader, partial writes through a
 * small pipe, every verification failure refused with its reason (unknown CA, name, IP,
 * expired, an old protocol), renegotiation refused, a client certificate presented when
 * asked and its absence refused; and redis_tls_new's refusals of unusable settings. */
#include "cu_table.h"
#include "redis_stream.h"
#include "redis_tls.h"

#include "redis_tls_certs.h"

#include <CUnit/CUnit.h>
#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

static tc_pki_t pki;
static void make_canned(void);

static int suite_init(void)
{
    tc_pki_make(&pki);
    make_canned();
    return 0;
}

static int suite_clean(void)
{
    tc_pki_free(&pki);
    return 0;
}

/* ---- a client stream and a server session over a BIO pair ------------------------------ */

typedef struct {
    SSL_CTX *sctx;
    SSL *server;
    redis_tls_t *tls;
    redis_stream_t *client;
    char err[512];
    int hs_wants_read, hs_wants_write; /* what the client's handshake asked for on the way */
} pair_t;

/* A server context with cert, at most max_version; ca: ask for and verify a client
 * certificate against it (NULL: do not ask). */
static SSL_CTX *server_ctx(const tc_cert_t *cert, int max_version, const tc_cert_t *ca)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    CU_ASSERT_FATAL(ctx != NULL);
    CU_ASSERT(SSL_CTX_use_certificate(ctx, cert->crt) == 1);
    CU_ASSERT(SSL_CTX_use_PrivateKey(ctx, cert->key) == 1);
    if (max_version)
        SSL_CTX_set_max_proto_version(ctx, max_version);
    if (max_version && max_version < TLS1_2_VERSION) {
        SSL_CTX_set_security_level(ctx, 0); /* OpenSSL 3 refuses TLS 1.1 at level 1 */
        SSL_CTX_set_min_proto_version(ctx, max_version);
    }
    if (ca) {
        X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca->crt);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    return ctx;
}

/* The pair: the client trusts cfg, checks name (NULL: ip); BIOs of bufsize bytes. */
static void pair_open(pair_t *p, SSL_CTX *sctx, const redis_tls_config_t *cfg, const char *name, const char *ip,
                      size_t bufsize)
{
    memset(p, 0, sizeof(*p));
    p->sctx = sctx;
    p->tls = redis_tls_new(cfg, p->err, sizeof(p->err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->tls);
    SSL *cssl = redis_tls_session(p->tls, name, ip, p->err, sizeof(p->err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(cssl);
    BIO *cb = NULL, *sb = NULL;
    CU_ASSERT_FATAL(BIO_new_bio_pair(&cb, bufsize, &sb, bufsize) == 1);
    SSL_set_bio(cssl, cb, cb);
    p->server = SSL_new(sctx);
    SSL_set_bio(p->server, sb, sb);
    SSL_set_accept_state(p->server);
    p->client = redis_stream_new_tls(cssl, -1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->client);
}

static void pair_close(pair_t *p)
{
    redis_stream_destroy(&p->client);
    SSL_free(p->server);
    SSL_CTX_free(p->sctx);
    redis_tls_destroy(&p->tls);
    ERR_clear_error();
}

/* Both sides step until the client's handshake ends. Returns its last status. */
static redis_stream_status_t pair_handshake(pair_t *p)
{
    redis_stream_status_t st = REDIS_STREAM_WANT_READ;
    for (int i = 0; i < 50; i++) {
        st = redis_stream_handshake(p->client, p->err, sizeof(p->err));
        p->hs_wants_read += st == REDIS_STREAM_WANT_READ;
        p->hs_wants_write += st == REDIS_STREAM_WANT_WRITE;
        (void)SSL_do_handshake(p->server);
        if (st == REDIS_STREAM_OK || st == REDIS_STREAM_ERROR)
            break;
    }
    return st;
}

static redis_tls_config_t trust(const tc_cert_t *ca)
{
    return (redis_tls_config_t){.ca_pem = ca->crt_pem, .ca_len = strlen(ca->crt_pem)};
}

/* ---- a reply split at every byte --------------------------------------------------------- */

/* Four replies, as the server sends them; canned is their concatenation. */
static const char *const canned_parts[4] = {"+PONG\r\n", "$26\r\n# Replication\r\nrole:master\r\n",
                                            "*3\r\n:1\r\n$-1\r\n-ERR nope\r\n", ":42\r\n"};
static char canned[256];
static size_t canned_ends[4]; /* where each reply ends in canned */

static void make_canned(void)
{
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        size_t l = strlen(canned_parts[i]);
        memcpy(canned + n, canned_parts[i], l);
        canned_ends[i] = n += l;
    }
    canned[n] = '\0';
}

/* Check the four replies of canned. */
static void check_canned(redisReply **r)
{
    CU_ASSERT(r[0] && r[0]->type == REDIS_REPLY_STATUS && !strcmp(r[0]->str, "PONG"));
    CU_ASSERT(r[1] && r[1]->type == REDIS_REPLY_STRING && r[1]->len == 26 && strstr(r[1]->str, "role:master"));
    CU_ASSERT(r[2] && r[2]->type == REDIS_REPLY_ARRAY && r[2]->elements == 3);
    if (r[2] && r[2]->elements == 3) {
        CU_ASSERT_EQUAL(r[2]->element[0]->integer, 1);
        CU_ASSERT_EQUAL(r[2]->element[1]->type, REDIS_REPLY_NIL);
        CU_ASSERT_STRING_EQUAL(r[2]->element[2]->str, "ERR nope");
    }
    CU_ASSERT(r[3] && r[3]->type == REDIS_REPLY_INTEGER && r[3]->integer == 42);
}

static void split_at_every_byte(int max_version, const char *want_version)
{
    pair_t p;
    redis_tls_config_t cfg = trust(&pki.ca);
    pair_open(&p, server_ctx(&pki.server, max_version, NULL), &cfg, NULL, "127.0.0.1", 4096);
    redis_tls_destroy(&p.tls); /* the session keeps its context: the settings may go first */
    CU_ASSERT_EQUAL_FATAL(pair_handshake(&p), REDIS_STREAM_OK);
    CU_ASSERT(p.hs_wants_read > 0); /* the client waited for the server's flights */
    CU_ASSERT_STRING_EQUAL(redis_stream_tls_version(p.client), want_version);
    /* The client's command reaches the server intact. */
    size_t n = 0;
    CU_ASSERT_EQUAL(redis_stream_write(p.client, "*1\r\n$4\r\nPING\r\n", 14, &n, p.err, sizeof(p.err)),
                    REDIS_STREAM_OK);
    CU_ASSERT_EQUAL(n, 14);
    char got[64] = "";
    CU_ASSERT_EQUAL(SSL_read(p.server, got, sizeof(got) - 1), 14);
    CU_ASSERT_STRING_EQUAL(got, "*1\r\n$4\r\nPING\r\n");
    /* The replies, one byte a record: each completes at its last byte, not before. */
    redisReader *rd = redisReaderCreate();
    redisReply *r[4] = {0};
    size_t nr = 0;
    char buf[64];
    CU_ASSERT_EQUAL(redis_stream_read(p.client, buf, sizeof(buf), &n, p.err, sizeof(p.err)), REDIS_STREAM_WANT_READ);
    for (size_t i = 0; i < strlen(canned); i++) {
        CU_ASSERT_EQUAL_FATAL(SSL_write(p.server, canned + i, 1), 1);
        CU_ASSERT_EQUAL(redis_stream_read(p.client, buf, sizeof(buf), &n, p.err, sizeof(p.err)), REDIS_STREAM_OK);
        CU_ASSERT_EQUAL(n, 1);
        redisReaderFeed(rd, buf, n);
        void *one = NULL;
        CU_ASSERT_EQUAL(redisReaderGetReply(rd, &one), REDIS_OK);
        if (one && nr < 4)
            r[nr++] = one;
        CU_ASSERT_EQUAL(!!one, nr > 0 && i + 1 == canned_ends[nr - 1]);
    }
    CU_ASSERT_EQUAL(nr, 4);
    check_canned(r);
    /* The server closes with close_notify: the stream ended, no error. */
    SSL_shutdown(p.server);
    CU_ASSERT_EQUAL(redis_stream_read(p.client, buf, sizeof(buf), &n, p.err, sizeof(p.err)), REDIS_STREAM_CLOSED);
    for (size_t i = 0; i < nr; i++)
        freeReplyObject(r[i]);
    redisReaderFree(rd);
    pair_close(&p);
}

static void test_split_tls13(void)
{
    split_at_every_byte(0, "TLSv1.3");
}

static void test_split_tls12(void)
{
    split_at_every_byte(TLS1_2_VERSION, "TLSv1.2");
}

/* Several replies in one record: one read, four replies. */
static void test_several_in_one_read(void)
{
    pair_t p;
    redis_tls_config_t cfg = trust(&pki.ca);
    pair_open(&p, server_ctx(&pki.server, 0, NULL), &cfg, NULL, "127.0.0.1", 4096);
    CU_ASSERT_EQUAL_FATAL(pair_handshake(&p), REDIS_STREAM_OK);
    CU_ASSERT_EQUAL(SSL_write(p.server, canned, (int)strlen(canned)), (int)strlen(canned));
    char buf[4096];
    size_t n = 0;
    CU_ASSERT_EQUAL(redis_stream_read(p.client, buf, sizeof(buf), &n, p.err, sizeof(p.err)), REDIS_STREAM_OK);
    CU_ASSERT_EQUAL(n, strlen(canned));
    redisReader *rd = redisReaderCreate();
    redisReaderFeed(rd, buf, n);
    redisReply *r[4] = {0};
    for (int i = 0; i < 4; i++)
        CU_ASSERT(redisReaderGetReply(rd, (void **)&r[i]) == REDIS_OK && r[i]);
    check_canned(r);
    for (int i = 0; i < 4; i++)
        freeReplyObject(r[i]);
    redisReaderFree(rd);
    pair_close(&p);
}

/* A 64 KiB command through a 512-byte pipe: partial writes and WANT_WRITE until the
 * server reads; every byte arrives once, in order. */
static void test_partial_writes(void)
{
    pair_t p;
    redis_tls_config_t cfg = trust(&pki.ca);
    pair_open(&p, server_ctx(&pki.server, 0, NULL), &cfg, NULL, "127.0.0.1", 512);
    CU_ASSERT_EQUAL_FATAL(pair_handshake(&p), REDIS_STREAM_OK);
    size_t len = 65536, sent = 0, got = 0;
    unsigned char *data = malloc(len), *recv = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 7 + i / 251);
    int wants_write = 0;
    for (int rounds = 0; (sent < len || got < len) && rounds < 100000; rounds++) {
        size_t n = 0;
        if (sent < len) {
            redis_stream_status_t st = redis_stream_write(p.client, data + sent, len - sent, &n, p.err, sizeof(p.err));
            CU_ASSERT(st == REDIS_STREAM_OK || st == REDIS_STREAM_WANT_WRITE);
            wants_write += st == REDIS_STREAM_WANT_WRITE;
            sent += n;
        }
        int r = SSL_read(p.server, recv + got, (int)(len - got));
        if (r > 0)
            got += (size_t)r;
    }
    CU_ASSERT_EQUAL(sent, len);
    CU_ASSERT_EQUAL(got, len);
    CU_ASSERT(wants_write > 0);
    CU_ASSERT(memcmp(data, recv, len) == 0);
    free(data);
    free(recv);
    pair_close(&p);
}

/* A plain stream over a socketpair: a write larger than the socket takes is partial,
 * then WANT_WRITE until the peer reads; a read with nothing there wants to read; the
 * peer's close is CLOSED, a write after it an error naming the closed connection. */
static void test_plain_socketpair(void)
{
    int sv[2];
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    redis_stream_t *s = redis_stream_new_plain(sv[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(redis_stream_fd(s), sv[0]);
    CU_ASSERT_EQUAL(redis_stream_is_tls(s), 0);
    char err[256] = "";
    CU_ASSERT_EQUAL(redis_stream_handshake(s, err, sizeof(err)), REDIS_STREAM_OK);
    size_t len = 4 << 20, sent = 0, got = 0, n = 0;
    char *data = calloc(1, len), *sink = malloc(65536);
    redis_stream_status_t st = redis_stream_write(s, data, len, &n, err, sizeof(err));
    CU_ASSERT_EQUAL(st, REDIS_STREAM_OK);
    CU_ASSERT(n > 0 && n < len); /* partial */
    sent = n;
    CU_ASSERT_EQUAL(redis_stream_write(s, data + sent, len - sent, &n, err, sizeof(err)), REDIS_STREAM_WANT_WRITE);
    while (sent < len) {
        ssize_t r = read(sv[1], sink, 65536);
        if (r > 0)
            got += (size_t)r;
        if (redis_stream_write(s, data + sent, len - sent, &n, err, sizeof(err)) == REDIS_STREAM_OK)
            sent += n;
    }
    for (ssize_t r; (r = read(sv[1], sink, 65536)) > 0;)
        got += (size_t)r;
    CU_ASSERT_EQUAL(got, len);
    char buf[16];
    CU_ASSERT_EQUAL(redis_stream_read(s, buf, sizeof(buf), &n, err, sizeof(err)), REDIS_STREAM_WANT_READ);
    CU_ASSERT_EQUAL(write(sv[1], "+OK\r\n", 5), 5);
    CU_ASSERT_EQUAL(redis_stream_read(s, buf, sizeof(buf), &n, err, sizeof(err)), REDIS_STREAM_OK);
    CU_ASSERT_EQUAL(n, 5);
    close(sv[1]);
    CU_ASSERT_EQUAL(redis_stream_read(s, buf, sizeof(buf), &n, err, sizeof(err)), REDIS_STREAM_CLOSED);
    CU_ASSERT_EQUAL(redis_stream_write(s, "x", 1, &n, err, sizeof(err)), REDIS_STREAM_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "write: connection closed by the server"));
    redis_stream_destroy(&s);
    CU_ASSERT_PTR_NULL(s);
    free(data);
    free(sink);
}

/* ---- verification --------------------------------------------------------------------- */

/* The client's handshake fails with want in its line (and the server's too). */
static void refused(const tc_cert_t *server_cert, const tc_cert_t *ca, const char *name, const char *ip,
                    int max_version, const char *want)
{
    pair_t p;
    redis_tls_config_t cfg = trust(ca);
    pair_open(&p, server_ctx(server_cert, max_version, NULL), &cfg, name, ip, 4096);
    CU_ASSERT_EQUAL(pair_handshake(&p), REDIS_STREAM_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, want));
    if (!strstr(p.err, want))
        fprintf(stderr, "\n  got: %s\n  want: %s\n", p.err, want);
    CU_ASSERT_EQUAL(strncmp(p.err, "TLS handshake: ", 15), 0);
    pair_close(&p);
}

static void test_verify_failures(void)
{
    refused(&pki.server, &pki.other_ca, NULL, "127.0.0.1", 0,
            "certificate verify failed: unable to get local issuer certificate");
    refused(&pki.server, &pki.ca, "other.test", NULL, 0,
            "certificate verify failed: hostname mismatch (the certificate is not for other.test)");
    refused(&pki.server, &pki.ca, NULL, "10.0.0.5", 0,
            "certificate verify failed: IP address mismatch (the certificate is not for 10.0.0.5)");
    refused(&pki.expired, &pki.ca, NULL, "127.0.0.1", 0, "certificate verify failed: certificate has expired");
    /* A server that speaks TLS 1.1 at most: no protocol in common. */
    refused(&pki.server, &pki.ca, NULL, "127.0.0.1", TLS1_1_VERSION, "TLS handshake: ");
    /* The name the certificate has passes, by DNS name and as an IP given as the name. */
    const char *ok_names[] = {"redis.test", "127.0.0.1"};
    for (int i = 0; i < 2; i++) {
        pair_t p;
        redis_tls_config_t cfg = trust(&pki.ca);
        pair_open(&p, server_ctx(&pki.server, 0, NULL), &cfg, ok_names[i], "10.9.9.9", 4096);
        CU_ASSERT_EQUAL(pair_handshake(&p), REDIS_STREAM_OK);
        pair_close(&p);
    }
}

/* The DNS name is sent as SNI; an IP address is not. */
static int sni_seen;
static char sni_name[256];
static int on_sni(SSL *ssl, int *alert, void *arg)
{
    (void)alert;
    (void)arg;
    const char *n = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    sni_seen++;
    snprintf(sni_name, sizeof(sni_name), "%s", n ? n : "");
    return SSL_TLSEXT_ERR_OK;
}

static void test_sni(void)
{
    const char *names[] = {"redis.test", NULL};
    const char *want[] = {"redis.test", ""};
    for (int i = 0; i < 2; i++) {
        pair_t p;
        redis_tls_config_t cfg = trust(&pki.ca);
        SSL_CTX *s = server_ctx(&pki.server, 0, NULL);
        SSL_CTX_set_tlsext_servername_callback(s, on_sni);
        sni_seen = 0;
        pair_open(&p, s, &cfg, names[i], "127.0.0.1", 4096);
        CU_ASSERT_EQUAL(pair_handshake(&p), REDIS_STREAM_OK);
        CU_ASSERT_EQUAL(sni_seen, 1);
        CU_ASSERT_STRING_EQUAL(sni_name, want[i]);
        pair_close(&p);
    }
}

/* A TLS 1.2 server that asks to renegotiate is refused: the client answers with
 * no_renegotiation and the server gives up; no second handshake happens. */
static void test_no_renegotiation(void)
{
    pair_t p;
    redis_tls_config_t cfg = trust(&pki.ca);
    pair_open(&p, server_ctx(&pki.server, TLS1_2_VERSION, NULL), &cfg, NULL, "127.0.0.1", 4096);
    CU_ASSERT_EQUAL_FATAL(pair_handshake(&p), REDIS_STREAM_OK);
    CU_ASSERT_EQUAL(SSL_renegotiate(p.server), 1);
    CU_ASSERT_EQUAL(SSL_do_handshake(p.server), 1); /* HelloRequest out */
    char buf[64];
    size_t n = 0;
    redis_stream_status_t st = redis_stream_read(p.client, buf, sizeof(buf), &n, p.err, sizeof(p.err));
    CU_ASSERT(st == REDIS_STREAM_WANT_READ);
    int r = SSL_read(p.server, buf, sizeof(buf)); /* the client's no_renegotiation */
    CU_ASSERT(r <= 0);
    CU_ASSERT_EQUAL(SSL_get_error(p.server, r), SSL_ERROR_SSL);
    CU_ASSERT_EQUAL(ERR_GET_REASON(ERR_peek_last_error()), SSL_R_NO_RENEGOTIATION);
    ERR_clear_error();
    CU_ASSERT_EQUAL(SSL_total_renegotiations(p.server), 1); /* asked once, never done */
    pair_close(&p);
}

/* A server that requires a client certificate: presented from the config, and refused
 * without one (TLS 1.3: the client's handshake completes, the server's alert arrives
 * with the first read). */
static void test_client_certificate(void)
{
    pair_t p;
    redis_tls_config_t cfg = trust(&pki.ca);
    cfg.cert_pem = pki.client.crt_pem;
    cfg.cert_len = strlen(pki.client.crt_pem);
    cfg.key_pem = pki.client.key_pem;
    cfg.key_len = strlen(pki.client.key_pem);
    pair_open(&p, server_ctx(&pki.server, 0, &pki.ca), &cfg, NULL, "127.0.0.1", 4096);
    CU_ASSERT_EQUAL(pair_handshake(&p), REDIS_STREAM_OK);
    char buf[64];
    size_t n = 0;
    CU_ASSERT_EQUAL(redis_stream_write(p.client, "*1\r\n$4\r\nPING\r\n", 14, &n, p.err, sizeof(p.err)),
                    REDIS_STREAM_OK);
    CU_ASSERT_EQUAL(SSL_read(p.server, buf, sizeof(buf)), 14);
    X509 *peer = SSL_get1_peer_certificate(p.server);
    CU_ASSERT_PTR_NOT_NULL(peer);
    char cn[64] = "";
    if (peer)
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn));
    CU_ASSERT_STRING_EQUAL(cn, "rdc-operator");
    X509_free(peer);
    pair_close(&p);

    cfg = trust(&pki.ca);
    pair_open(&p, server_ctx(&pki.server, 0, &pki.ca), &cfg, NULL, "127.0.0.1", 4096);
    redis_stream_status_t st = pair_handshake(&p);
    if (st == REDIS_STREAM_OK) {
        (void)SSL_do_handshake(p.server); /* reads the empty Certificate, sends the alert */
        st = redis_stream_read(p.client, buf, sizeof(buf), &n, p.err, sizeof(p.err));
    }
    CU_ASSERT_EQUAL(st, REDIS_STREAM_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "certificate required"));
    pair_close(&p);
}

/* A TLS stream over a socket whose other end is gone: the handshake's first write is
 * an error line, not a SIGPIPE (nothing in this suite ignores it). */
static void test_tls_no_sigpipe(void)
{
    int sv[2];
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    close(sv[1]);
    char err[256] = "";
    redis_tls_config_t cfg = trust(&pki.ca);
    redis_tls_t *t = redis_tls_new(&cfg, err, sizeof(err));
    SSL *ssl = redis_tls_session(t, NULL, "127.0.0.1", err, sizeof(err));
    redis_stream_t *s = redis_stream_new_tls(ssl, sv[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(redis_stream_fd(s), sv[0]);
    CU_ASSERT_EQUAL(redis_stream_handshake(s, err, sizeof(err)), REDIS_STREAM_ERROR);
    CU_ASSERT_STRING_EQUAL(err, "TLS handshake: connection closed by the server (Broken pipe)");
    redis_stream_destroy(&s);
    redis_tls_destroy(&t);
}

/* ---- unusable settings ----------------------------------------------------------------- */

static void expect_refused(const redis_tls_config_t *cfg, const char *want)
{
    char err[512] = "";
    redis_tls_t *t = redis_tls_new(cfg, err, sizeof(err));
    CU_ASSERT_PTR_NULL(t);
    redis_tls_destroy(&t);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    if (!strstr(err, want))
        fprintf(stderr, "\n  got: %s\n  want: %s\n", err, want);
}

static void test_config_refusals(void)
{
    const char *crt = pki.client.crt_pem, *key = pki.client.key_pem, *other_key = pki.server.key_pem;
    expect_refused(&(redis_tls_config_t){.ca_pem = "not PEM", .ca_len = 7}, "CA bundle: no PEM certificate");
    expect_refused(&(redis_tls_config_t){.ca_file = "/nonexistent/ca.crt"}, "CA file /nonexistent/ca.crt: ");
    expect_refused(&(redis_tls_config_t){.cert_pem = crt, .cert_len = strlen(crt)},
                   "client certificate: a certificate without its key");
    expect_refused(&(redis_tls_config_t){.key_pem = key, .key_len = strlen(key)},
                   "client certificate: a key without its certificate");
    expect_refused(&(redis_tls_config_t){.cert_pem = crt, .cert_len = strlen(crt), .key_pem = other_key,
                                         .key_len = strlen(other_key)},
                   "client key: not the certificate's key");
    expect_refused(&(redis_tls_config_t){.cert_pem = "junk", .cert_len = 4, .key_pem = key, .key_len = strlen(key)},
                   "client certificate: no PEM certificate");
    /* No key material in any of those lines. */
    char err[512] = "";
    redis_tls_t *t = redis_tls_new(&(redis_tls_config_t){.cert_pem = crt, .cert_len = strlen(crt), .key_pem = other_key,
                                                         .key_len = strlen(other_key)},
                                   err, sizeof(err));
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_PTR_NULL(strstr(err, "PRIVATE KEY"));
    /* A session needs a name or an address to check. */
    redis_tls_config_t cfg = trust(&pki.ca);
    t = redis_tls_new(&cfg, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NULL(redis_tls_session(t, NULL, NULL, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no server name or address"));
    redis_tls_destroy(&t);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT(redis_tls_is_ip("10.0.0.5") && redis_tls_is_ip("fd00::5") && !redis_tls_is_ip("redis.test"));
}

static const cu_entry_t tests[] = {
    CU_SUITE("redis_stream"),
    {"TLS 1.3: a reply split at every byte", test_split_tls13},
    {"TLS 1.2: a reply split at every byte", test_split_tls12},
    {"several replies in one read", test_several_in_one_read},
    {"TLS writes through a small pipe", test_partial_writes},
    {"plain: partial writes, WANT_*, close", test_plain_socketpair},
    {"verification failures refused with their reason", test_verify_failures},
    {"SNI for a name, none for an address", test_sni},
    {"renegotiation refused", test_no_renegotiation},
    {"client certificate presented; refused without one", test_client_certificate},
    {"TLS over a closed socket: an error, no SIGPIPE", test_tls_no_sigpipe},
    {"unusable settings refused", test_config_refusals},
};

CU_HOOKS({"redis_stream", suite_init, suite_clean, NULL, NULL});

CU_MAIN(tests)
