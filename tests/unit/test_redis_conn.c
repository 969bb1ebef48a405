/* Unit tests of the Redis connection (redis_conn.h) and its blocking face
 * (redis_sync.h).
 *
 * "redis_conn, canned": the protocol half over a socketpair whose other end the test
 * plays with canned bytes: commands as hiredis formats them, replies split at every byte
 * and several in one read, a protocol error, a close in the middle of a reply, a reply
 * nobody asked for, deadlines, a callback that destroys the connection, the reply size
 * cap, AUTH sent first and alone (user and password, the fallback password of a
 * rotation), and no password in any error line.
 *
 * "redis_conn, redis-server": against REAL redis-server processes on 127.0.0.1 (stopped
 * by PID) with certificates made in the test (redis_tls_certs.h): a refused connection,
 * handshake and command deadlines, TLS 1.3 and 1.2 round trips checked by IP and by
 * name, a wrong CA, a wrong name and an expired certificate refused with clear lines,
 * a client certificate required (--tls-auth-clients yes) with and without one, plain
 * text to a TLS port and TLS to a plain one, AUTH with a password and with ACL users
 * (a read-only one refused a write), redis_sync over TLS, the certificate a server
 * presented, and whether a server answered anything at all (redis_sync_answers). */
#include "clock.h"
#include "cu_table.h"
#include "loop.h"
#include "redis_conn.h"
#include "redis_sync.h"

#include "redis_servers.h"
#include "redis_tls_certs.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <poll.h>

#define MAX_CALLS 16

/* What the callbacks saw, in order. */
typedef struct {
    int calls;
    redisReply *reply[MAX_CALLS];
    char err[MAX_CALLS][512];
    int64_t at_ns[MAX_CALLS];
} rec_t;

static void on_rec(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    (void)conn;
    rec_t *r = arg;
    if (r->calls >= MAX_CALLS) {
        freeReplyObject(reply);
        return;
    }
    r->reply[r->calls] = reply;
    snprintf(r->err[r->calls], sizeof(r->err[0]), "%s", err ? err : "");
    r->at_ns[r->calls] = clock_mono_ns();
    r->calls++;
}

static void rec_free(rec_t *r)
{
    for (int i = 0; i < r->calls; i++)
        freeReplyObject(r->reply[i]);
    memset(r, 0, sizeof(*r));
}

/* Run loop turns until r has want calls or ms passed. */
static void run_until(loop_t *loop, const rec_t *r, int want, int ms)
{
    int64_t end = clock_mono_ns() + ms * NS_PER_MS;
    while (r->calls < want && clock_mono_ns() < end)
        loop_run_once(loop, 20 * NS_PER_MS);
}

/* The bytes of argv on the wire (as hiredis formats it). */
static size_t wire_len(int argc, const char *const *argv)
{
    char *out = NULL;
    int n = redisFormatCommandArgv(&out, argc, (const char **)argv, NULL);
    redisFreeCommand(out);
    return n > 0 ? (size_t)n : 0;
}

static int cmd(redis_conn_t *c, rec_t *r, int64_t timeout_ns, int argc, const char *const *argv)
{
    return redis_conn_command(c, argc, argv, NULL, timeout_ns, on_rec, r);
}

#define SEC NS_PER_SEC

/* ---- canned: the peer of a socketpair ------------------------------------------------- */

typedef struct {
    loop_t *loop;
    redis_conn_t *c;
    int peer;
    rec_t r;
} canned_t;

static void canned_open(canned_t *f, const redis_conn_opts_t *auth)
{
    memset(f, 0, sizeof(*f));
    int sv[2];
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    redis_conn_opts_t o = auth ? *auth : (redis_conn_opts_t){0};
    o.host = "127.0.0.1";
    o.port = 6379;
    f->loop = loop_new();
    f->c = redis_conn_new_stream(f->loop, redis_stream_new_plain(sv[0]), &o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->c);
    f->peer = sv[1];
}

/* Destroy the connection, which must give the loop back every reader and timer. */
static void canned_close(canned_t *f)
{
    redis_conn_destroy(&f->c);
    CU_ASSERT_EQUAL(loop_reader_count(f->loop), 0);
    CU_ASSERT_EQUAL(loop_timer_count(f->loop), 0);
    loop_destroy(&f->loop);
    close(f->peer);
    rec_free(&f->r);
}

/* What the connection wrote to the peer within ms (running the loop meanwhile), as a
 * string (peer_got bytes): it stops once want bytes came (0: wait the whole ms). */
static size_t peer_got;
static char *peer_read(canned_t *f, size_t want, int ms)
{
    static char buf[8192];
    size_t n = 0;
    int64_t end = clock_mono_ns() + ms * NS_PER_MS;
    while ((want == 0 || n < want) && clock_mono_ns() < end) {
        loop_run_once(f->loop, 5 * NS_PER_MS);
        ssize_t r = read(f->peer, buf + n, sizeof(buf) - 1 - n);
        if (r > 0)
            n += (size_t)r;
    }
    buf[n] = '\0';
    peer_got = n;
    return buf;
}

static void peer_write(canned_t *f, const char *s)
{
    CU_ASSERT_EQUAL((size_t)send(f->peer, s, strlen(s), MSG_NOSIGNAL), strlen(s));
}

static const char *const replies[4] = {"+PONG\r\n", "$26\r\n# Replication\r\nrole:master\r\n",
                                       "*3\r\n:1\r\n$-1\r\n-ERR nope\r\n", "$3\r\na\0b\r\n"};
static const size_t reply_len[4] = {7, 33, 24, 9};

static void check_replies(const rec_t *r)
{
    CU_ASSERT_EQUAL_FATAL(r->calls, 4);
    CU_ASSERT(r->reply[0] && r->reply[0]->type == REDIS_REPLY_STATUS && !strcmp(r->reply[0]->str, "PONG"));
    CU_ASSERT(r->reply[1] && r->reply[1]->type == REDIS_REPLY_STRING && strstr(r->reply[1]->str, "role:master"));
    CU_ASSERT(r->reply[2] && r->reply[2]->type == REDIS_REPLY_ARRAY && r->reply[2]->elements == 3 &&
              r->reply[2]->element[1]->type == REDIS_REPLY_NIL && r->reply[2]->element[2]->type == REDIS_REPLY_ERROR);
    CU_ASSERT(r->reply[3] && r->reply[3]->len == 3 && !memcmp(r->reply[3]->str, "a\0b", 3));
    for (int i = 0; i < 4; i++)
        CU_ASSERT_STRING_EQUAL(r->err[i], "");
}

/* Queue the four commands the replies above answer; returns what reaches the wire. */
static const char *queue_four(canned_t *f)
{
    const char *ping[] = {"PING"}, *info[] = {"INFO", "replication"}, *mget[] = {"MGET", "x", "y", "z"};
    const char *get[] = {"GET", "a\0b"};
    const size_t get_lens[] = {3, 3};
    CU_ASSERT_EQUAL(cmd(f->c, &f->r, 5 * SEC, 1, ping), 0);
    CU_ASSERT_EQUAL(cmd(f->c, &f->r, 5 * SEC, 2, info), 0);
    CU_ASSERT_EQUAL(cmd(f->c, &f->r, 5 * SEC, 4, mget), 0);
    CU_ASSERT_EQUAL(redis_conn_command(f->c, 2, get, get_lens, 5 * SEC, on_rec, &f->r), 0);
    CU_ASSERT_EQUAL(redis_conn_pending(f->c), 4);
    CU_ASSERT_EQUAL(f->r.calls, 0); /* never from inside redis_conn_command */
    return peer_read(f, 14 + 32 + 35 + 22, 2000);
}

static void test_split_at_every_byte(void)
{
    canned_t f;
    canned_open(&f, NULL);
    const char *wire = queue_four(&f);
    static const char want[] = "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n"
                               "*4\r\n$4\r\nMGET\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n*2\r\n$3\r\nGET\r\n$3\r\na\0b\r\n";
    CU_ASSERT_EQUAL(peer_got, sizeof(want) - 1);
    CU_ASSERT(memcmp(wire, want, sizeof(want) - 1) == 0);
    CU_ASSERT_EQUAL(redis_conn_state(f.c), REDIS_CONN_READY);
    /* One byte at a time: a reply is handed over at its last byte, never before. */
    int done = 0;
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < reply_len[k]; i++) {
            CU_ASSERT_EQUAL(send(f.peer, replies[k] + i, 1, MSG_NOSIGNAL), 1);
            loop_run_once(f.loop, 50 * NS_PER_MS);
            done += i + 1 == reply_len[k];
            CU_ASSERT_EQUAL(f.r.calls, done);
        }
    check_replies(&f.r);
    CU_ASSERT_EQUAL(redis_conn_pending(f.c), 0);
    canned_close(&f);
}

static void test_several_in_one_read(void)
{
    canned_t f;
    canned_open(&f, NULL);
    queue_four(&f);
    char all[128];
    size_t n = 0;
    for (int k = 0; k < 4; k++) {
        memcpy(all + n, replies[k], reply_len[k]);
        n += reply_len[k];
    }
    CU_ASSERT_EQUAL((size_t)send(f.peer, all, n, MSG_NOSIGNAL), n);
    loop_run_once(f.loop, 500 * NS_PER_MS); /* one turn: one read, four callbacks */
    check_replies(&f.r);
    canned_close(&f);
}

/* Each way a stream can go wrong: the one line, every pending command ended with it. */
static void failing(const char *peer_sends, int close_after, const char *want)
{
    canned_t f;
    canned_open(&f, NULL);
    const char *get[] = {"GET", "k"};
    cmd(f.c, &f.r, 5 * SEC, 2, get);
    cmd(f.c, &f.r, 5 * SEC, 2, get);
    peer_read(&f, 2 * wire_len(2, get), 2000);
    peer_write(&f, peer_sends);
    if (close_after)
        shutdown(f.peer, SHUT_WR);
    run_until(f.loop, &f.r, 2, 2000);
    CU_ASSERT_EQUAL(f.r.calls, 2);
    CU_ASSERT_PTR_NULL(f.r.reply[0]);
    CU_ASSERT_STRING_EQUAL(f.r.err[0], want);
    CU_ASSERT_STRING_EQUAL(f.r.err[1], want);
    CU_ASSERT_EQUAL(redis_conn_state(f.c), REDIS_CONN_FAILED);
    CU_ASSERT_STRING_EQUAL(redis_conn_error(f.c), want);
    CU_ASSERT_EQUAL(loop_reader_count(f.loop), 0); /* the socket is closed at once */
    canned_close(&f);
}

static void test_stream_failures(void)
{
    failing("!x\r\n", 0, "127.0.0.1:6379: protocol error: Protocol error, got \"!\" as reply type byte");
    failing("$10\r\nabc", 1, "127.0.0.1:6379: connection closed by the server");
    failing("", 1, "127.0.0.1:6379: connection closed by the server");
}

/* A reply with no command (Redis's "max number of clients" greeting) fails the
 * connection; a command queued after that fails on the next turn, not at once. */
static void test_reply_to_no_command(void)
{
    canned_t f;
    canned_open(&f, NULL);
    peer_write(&f, "-ERR max number of clients reached\r\n");
    for (int i = 0; i < 5 && redis_conn_state(f.c) != REDIS_CONN_FAILED; i++)
        loop_run_once(f.loop, 50 * NS_PER_MS);
    CU_ASSERT_STRING_EQUAL(redis_conn_error(f.c),
                           "127.0.0.1:6379: a reply to no command: ERR max number of clients reached");
    const char *ping[] = {"PING"};
    CU_ASSERT_EQUAL(cmd(f.c, &f.r, 5 * SEC, 1, ping), 0);
    CU_ASSERT_EQUAL(f.r.calls, 0);
    loop_run_once(f.loop, 50 * NS_PER_MS);
    CU_ASSERT_EQUAL(f.r.calls, 1);
    CU_ASSERT_STRING_EQUAL(f.r.err[0], redis_conn_error(f.c));
    canned_close(&f);
}

/* The first deadline to pass fails the pipeline: both commands end then, with its line. */
static void test_deadline(void)
{
    canned_t f;
    canned_open(&f, NULL);
    const char *ping[] = {"PING"}, *info[] = {"INFO"};
    int64_t t0 = clock_mono_ns();
    cmd(f.c, &f.r, 150 * NS_PER_MS, 1, ping);
    cmd(f.c, &f.r, 2 * SEC, 1, info);
    run_until(f.loop, &f.r, 2, 2000);
    CU_ASSERT_EQUAL(f.r.calls, 2);
    CU_ASSERT_STRING_EQUAL(f.r.err[0], "127.0.0.1:6379: PING: no answer within 150 ms");
    CU_ASSERT_STRING_EQUAL(f.r.err[1], f.r.err[0]);
    int64_t took = f.r.at_ns[1] - t0;
    CU_ASSERT(took >= 150 * NS_PER_MS && took < 400 * NS_PER_MS);
    canned_close(&f);
}

/* A callback that destroys the connection: the replies after it are not handed over,
 * nothing is left on the loop (ASan: nothing touched after the free). */
static canned_t *destroying;
static void on_destroy(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    on_rec(conn, reply, err, arg);
    redis_conn_destroy(&destroying->c);
    CU_ASSERT_PTR_NULL(destroying->c);
}

static void test_destroy_in_callback(void)
{
    canned_t f;
    canned_open(&f, NULL);
    destroying = &f;
    const char *ping[] = {"PING"};
    for (int i = 0; i < 3; i++)
        redis_conn_command(f.c, 1, ping, NULL, SEC, i == 0 ? on_destroy : on_rec, &f.r);
    peer_read(&f, 42, 2000);
    peer_write(&f, "+PONG\r\n+PONG\r\n+PONG\r\n");
    for (int i = 0; i < 3; i++)
        loop_run_once(f.loop, 50 * NS_PER_MS);
    CU_ASSERT_EQUAL(f.r.calls, 1);
    CU_ASSERT_EQUAL(loop_reader_count(f.loop), 0);
    CU_ASSERT_EQUAL(loop_timer_count(f.loop), 0);
    canned_close(&f);
}

/* A callback that queues the next command: it goes out and is answered. */
static canned_t *chaining;
static void on_chain(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    on_rec(conn, reply, err, arg);
    const char *echo[] = {"ECHO", "next"};
    CU_ASSERT_EQUAL(redis_conn_command(conn, 2, echo, NULL, 5 * SEC, on_rec, &chaining->r), 0);
}

static void test_command_from_callback(void)
{
    canned_t f;
    canned_open(&f, NULL);
    chaining = &f;
    const char *ping[] = {"PING"};
    redis_conn_command(f.c, 1, ping, NULL, 5 * SEC, on_chain, &f.r);
    peer_read(&f, 14, 2000);
    peer_write(&f, "+PONG\r\n");
    CU_ASSERT_STRING_EQUAL(peer_read(&f, 24, 2000), "*2\r\n$4\r\nECHO\r\n$4\r\nnext\r\n");
    peer_write(&f, "$4\r\nnext\r\n");
    run_until(f.loop, &f.r, 2, 2000);
    CU_ASSERT_EQUAL(f.r.calls, 2);
    CU_ASSERT(f.r.reply[1] && !strcmp(f.r.reply[1]->str, "next"));
    canned_close(&f);
}

/* A reply longer than the cap fails the connection before it is all buffered. */
static void test_reply_cap(void)
{
    canned_t f;
    redis_conn_opts_t o = {.max_reply_bytes = 1000};
    canned_open(&f, &o);
    const char *get[] = {"GET", "big"};
    cmd(f.c, &f.r, 5 * SEC, 2, get);
    peer_read(&f, wire_len(2, get), 2000);
    char big[1300];
    memset(big, 'x', sizeof(big));
    memcpy(big, "$5000\r\n", 7);
    CU_ASSERT_EQUAL(send(f.peer, big, sizeof(big), MSG_NOSIGNAL), (ssize_t)sizeof(big));
    run_until(f.loop, &f.r, 1, 2000);
    CU_ASSERT_STRING_EQUAL(f.r.err[0], "127.0.0.1:6379: a reply of more than 1000 bytes");
    canned_close(&f);
}

/* ---- AUTH ------------------------------------------------------------------------------ */

/* A canned connection with the options o (its password) asked for PING: what the AUTH
 * tests start from. */
static void open_pinged(canned_t *f, const redis_conn_opts_t *o)
{
    static const char *const ping[] = {"PING"};
    canned_open(f, o);
    cmd(f->c, &f->r, 5 * SEC, 1, ping);
}

/* AUTH [user] password is the only thing on the wire until it is accepted. */
static void test_auth_first_and_alone(void)
{
    canned_t f;
    redis_conn_opts_t o = {.user = "app", .password = "app-pw"};
    open_pinged(&f, &o);
    CU_ASSERT_STRING_EQUAL(peer_read(&f, 0, 150), "*3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$6\r\napp-pw\r\n");
    CU_ASSERT_EQUAL(redis_conn_state(f.c), REDIS_CONN_AUTH);
    peer_write(&f, "+OK\r\n");
    CU_ASSERT_STRING_EQUAL(peer_read(&f, 14, 2000), "*1\r\n$4\r\nPING\r\n");
    CU_ASSERT_EQUAL(redis_conn_state(f.c), REDIS_CONN_READY);
    peer_write(&f, "+PONG\r\n");
    run_until(f.loop, &f.r, 1, 2000);
    CU_ASSERT(f.r.calls == 1 && f.r.reply[0] && !strcmp(f.r.reply[0]->str, "PONG"));
    canned_close(&f);
}

/* Refused: once more with the fallback password (a rotation), then the connection fails
 * with Redis's words and without either password. */
static void test_auth_fallback_and_refusal(void)
{
    canned_t f;
    redis_conn_opts_t o = {.password = "new-pw", .password_fallback = "old-pw"};
    open_pinged(&f, &o);
    CU_ASSERT_STRING_EQUAL(peer_read(&f, 26, 2000), "*2\r\n$4\r\nAUTH\r\n$6\r\nnew-pw\r\n");
    peer_write(&f, "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    CU_ASSERT_STRING_EQUAL(peer_read(&f, 26, 2000), "*2\r\n$4\r\nAUTH\r\n$6\r\nold-pw\r\n");
    peer_write(&f, "+OK\r\n");
    CU_ASSERT_STRING_EQUAL(peer_read(&f, 14, 2000), "*1\r\n$4\r\nPING\r\n");
    canned_close(&f);

    const redis_conn_opts_t refusals[] = {{.password = "new-pw", .password_fallback = "old-pw"},
                                          {.user = "app", .password = "new-pw"}};
    const char *want[] = {"127.0.0.1:6379: AUTH: WRONGPASS invalid username-password pair or user is disabled.",
                          "127.0.0.1:6379: AUTH (user app): WRONGPASS invalid username-password pair or user "
                          "is disabled."};
    for (int i = 0; i < 2; i++) {
        open_pinged(&f, &refusals[i]);
        for (int k = 0; k < 1 + (i == 0); k++) {
            peer_read(&f, 10, 2000);
            peer_write(&f, "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
        }
        run_until(f.loop, &f.r, 1, 2000);
        CU_ASSERT_STRING_EQUAL(f.r.err[0], want[i]);
        CU_ASSERT_PTR_NULL(strstr(f.r.err[0], "-pw"));
        CU_ASSERT_EQUAL(redis_conn_state(f.c), REDIS_CONN_FAILED);
        canned_close(&f);
    }
}

/* ---- against redis-server ---------------------------------------------------------------- */

static char dir[64];
static tc_pki_t pki;

static int real_init(void)
{
    /* SIGPIPE is NOT ignored in this suite: the transport must not raise it. */
    snprintf(dir, sizeof(dir), "/tmp/rdc-redis-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    tc_pki_make(&pki);
    tc_pki_write(&pki, dir);
    return 0;
}

static int real_clean(void)
{
    tc_pki_free(&pki);
    return tmpdir_remove(dir);
}

/* Settings trusting ca, presenting the client certificate when client. */
static redis_tls_t *tls_of(const tc_cert_t *ca, int client)
{
    redis_tls_config_t cfg = {.ca_pem = ca->crt_pem, .ca_len = strlen(ca->crt_pem)};
    if (client) {
        cfg.cert_pem = pki.client.crt_pem;
        cfg.cert_len = strlen(pki.client.crt_pem);
        cfg.key_pem = pki.client.key_pem;
        cfg.key_len = strlen(pki.client.key_pem);
    }
    char err[256];
    redis_tls_t *t = redis_tls_new(&cfg, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    return t;
}

/* One command on a new connection of opts on a new loop; the reply (or NULL) and the
 * error line into *r. */
static void one(const redis_conn_opts_t *opts, int argc, const char *const *argv, rec_t *r)
{
    memset(r, 0, sizeof(*r));
    loop_t *loop = loop_new();
    redis_conn_t *c = redis_conn_new(loop, opts);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    cmd(c, r, 2 * SEC, argc, argv);
    run_until(loop, r, 1, 5000);
    CU_ASSERT_EQUAL(r->calls, 1);
    redis_conn_destroy(&c);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0);
    CU_ASSERT_EQUAL(loop_timer_count(loop), 0);
    loop_destroy(&loop);
}

static const char *const PING[] = {"PING"};

static void expect_pong(const redis_conn_opts_t *o)
{
    rec_t r;
    one(o, 1, PING, &r);
    CU_ASSERT(r.reply[0] && r.reply[0]->type == REDIS_REPLY_STATUS && !strcmp(r.reply[0]->str, "PONG"));
    if (!r.reply[0])
        fprintf(stderr, "\n  failed: %s\n", r.err[0]);
    rec_free(&r);
}

/* The connection fails with exactly "<127.0.0.1:port>: <want>" (want_sub: contains it). */
static void expect_fail(const redis_conn_opts_t *o, const char *want, int exact)
{
    rec_t r;
    one(o, 1, PING, &r);
    char full[512];
    snprintf(full, sizeof(full), "127.0.0.1:%d: %s", o->port, want);
    CU_ASSERT_PTR_NULL(r.reply[0]);
    int ok = exact ? !strcmp(r.err[0], full) : strstr(r.err[0], want) != NULL;
    CU_ASSERT(ok);
    if (!ok)
        fprintf(stderr, "\n  got:  %s\n  want: %s\n", r.err[0], full);
    rec_free(&r);
}

static void test_refused_and_bad_host(void)
{
    int port = free_port();
    expect_fail(&(redis_conn_opts_t){.host = "127.0.0.1", .port = port}, "connect: Connection refused", 1);
    rec_t r;
    one(&(redis_conn_opts_t){.host = "redis.example", .port = 6379}, 1, PING, &r);
    CU_ASSERT_STRING_EQUAL(r.err[0], "redis.example:6379: connect: \"redis.example\" is not an IP address and port");
    rec_free(&r);
}

/* A listener that never answers: the plain command and the TLS handshake time out. */
static void test_deadlines_on_a_silent_server(void)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lfd, 8) == 0 &&
                    getsockname(lfd, (struct sockaddr *)&a, &len) == 0);
    int port = ntohs(a.sin_port);
    redis_conn_opts_t o = {.host = "127.0.0.1", .port = port, .connect_timeout_ns = 200 * NS_PER_MS};
    rec_t r;
    memset(&r, 0, sizeof(r));
    loop_t *loop = loop_new();
    redis_conn_t *c = redis_conn_new(loop, &o);
    int64_t t0 = clock_mono_ns();
    cmd(c, &r, 300 * NS_PER_MS, 1, PING);
    run_until(loop, &r, 1, 3000);
    CU_ASSERT_STRING_EQUAL(r.err[0], redis_conn_error(c));
    char want[128];
    snprintf(want, sizeof(want), "127.0.0.1:%d: PING: no answer within 300 ms", port);
    CU_ASSERT_STRING_EQUAL(r.err[0], want);
    CU_ASSERT(r.at_ns[0] - t0 >= 300 * NS_PER_MS && r.at_ns[0] - t0 < 600 * NS_PER_MS);
    redis_conn_destroy(&c);
    rec_free(&r);
    o.tls = tls_of(&pki.ca, 0);
    c = redis_conn_new(loop, &o);
    redis_tls_destroy((redis_tls_t **)&o.tls); /* the connection keeps what it needs */
    t0 = clock_mono_ns();
    cmd(c, &r, SEC, 1, PING);
    run_until(loop, &r, 1, 3000);
    snprintf(want, sizeof(want), "127.0.0.1:%d: TLS handshake: no answer within 200 ms", port);
    CU_ASSERT_STRING_EQUAL(r.err[0], want);
    CU_ASSERT(r.at_ns[0] - t0 >= 200 * NS_PER_MS && r.at_ns[0] - t0 < 500 * NS_PER_MS);
    redis_conn_destroy(&c);
    rec_free(&r);
    loop_destroy(&loop);
    close(lfd);
}

static void test_tls_round_trips(void)
{
    server_t s = {0};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 0, NULL), 0);
    redis_tls_t *t = tls_of(&pki.ca, 0);
    redis_conn_opts_t o = {.host = "127.0.0.1", .port = s.port, .tls = t};
    expect_pong(&o); /* checked as an IP SAN */
    o.tls_server_name = "redis.test";
    expect_pong(&o); /* checked as a DNS name, sent as SNI */
    /* TLS 1.3 by default; the version is visible while the connection lives. */
    loop_t *loop = loop_new();
    redis_conn_t *c = redis_conn_new(loop, &o);
    rec_t r = {0};
    cmd(c, &r, 2 * SEC, 1, PING);
    run_until(loop, &r, 1, 5000);
    CU_ASSERT_STRING_EQUAL(redis_conn_tls_version(c), "TLSv1.3");
    redis_conn_destroy(&c);
    loop_destroy(&loop);
    rec_free(&r);
    /* Wrong CA, wrong name, an expired certificate. */
    redis_tls_t *other = tls_of(&pki.other_ca, 0);
    o.tls = other;
    o.tls_server_name = NULL;
    /* (redis-server sends its CA with its certificate: the chain ends in a CA we do not trust) */
    expect_fail(&o, "TLS handshake: certificate verify failed: self-signed certificate in certificate chain", 1);
    o.tls = t;
    o.tls_server_name = "cache-0.cache.ns.svc";
    expect_fail(&o,
                "TLS handshake: certificate verify failed: hostname mismatch (the certificate is not for "
                "cache-0.cache.ns.svc)",
                1);
    server_stop(&s);
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "expired.crt", "expired.key", 0, NULL), 0);
    o.port = s.port;
    o.tls_server_name = NULL;
    expect_fail(&o, "TLS handshake: certificate verify failed: certificate has expired", 1);
    server_stop(&s);
    /* A server that speaks TLS 1.2 only. */
    const char *const v12[] = {"--tls-protocols", "TLSv1.2", NULL};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 0, v12), 0);
    o.port = s.port;
    loop = loop_new();
    c = redis_conn_new(loop, &o);
    cmd(c, &r, 2 * SEC, 1, PING);
    run_until(loop, &r, 1, 5000);
    CU_ASSERT(r.reply[0] && !strcmp(r.reply[0]->str, "PONG"));
    CU_ASSERT_STRING_EQUAL(redis_conn_tls_version(c), "TLSv1.2");
    redis_conn_destroy(&c);
    loop_destroy(&loop);
    rec_free(&r);
    server_stop(&s);
    redis_tls_destroy(&t);
    redis_tls_destroy(&other);
}

static void test_client_certificate_required(void)
{
    server_t s = {0};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 1, NULL), 0);
    redis_tls_t *without = tls_of(&pki.ca, 0), *with = tls_of(&pki.ca, 1);
    redis_conn_opts_t o = {.host = "127.0.0.1", .port = s.port, .tls = without};
    expect_fail(&o, "certificate required", 0);
    o.tls = with;
    expect_pong(&o);
    server_stop(&s);
    redis_tls_destroy(&without);
    redis_tls_destroy(&with);
}

/* Plain text to a TLS port and TLS to a plain port: refused with a line, no hang. */
static void test_mixed_up_ports(void)
{
    server_t tls_srv = {0}, plain = {0};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&tls_srv, dir, "server.crt", "server.key", 0, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(server_start(&plain, 0, NULL), 0);
    expect_fail(&(redis_conn_opts_t){.host = "127.0.0.1", .port = tls_srv.port}, "connection closed by the server",
                0);
    redis_tls_t *t = tls_of(&pki.ca, 0);
    /* redis-server reads a ClientHello as the start of an inline command and waits for
     * its end: the handshake's deadline ends it. */
    expect_fail(&(redis_conn_opts_t){.host = "127.0.0.1", .port = plain.port, .tls = t,
                                     .connect_timeout_ns = 300 * NS_PER_MS},
                "TLS handshake: no answer within 300 ms", 1);
    redis_tls_destroy(&t);
    server_stop(&tls_srv);
    server_stop(&plain);
}

/* AUTH over TLS: the default user's password, ACL users (a read-only one refused a
 * write: a reply, not a failure), a wrong password refused without showing it. */
static void test_auth_and_acl_users(void)
{
    server_t s = {0};
    const char *const extra[] = {"--requirepass", "def-secret", "--user", "app", "on", ">app-secret", "~*", "+@all",
                                 "--user", "reader", "on", ">reader-secret", "~*", "+@read", "+ping", NULL};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 0, extra), 0);
    redis_tls_t *t = tls_of(&pki.ca, 0);
    redis_conn_opts_t o = {.host = "127.0.0.1", .port = s.port, .tls = t};
    rec_t r;
    one(&o, 1, PING, &r); /* no password: a NOAUTH reply, not a failure */
    CU_ASSERT(r.reply[0] && r.reply[0]->type == REDIS_REPLY_ERROR && strstr(r.reply[0]->str, "NOAUTH"));
    rec_free(&r);
    o.password = "def-secret";
    expect_pong(&o);
    o.password = "not-it";
    expect_fail(&o, "AUTH: WRONGPASS invalid username-password pair or user is disabled.", 1);
    o.password_fallback = "def-secret"; /* a rotation: the node still has the old one */
    expect_pong(&o);
    o.password_fallback = NULL;
    o.user = "app";
    o.password = "app-secret";
    const char *set[] = {"SET", "k", "v"}, *get[] = {"GET", "k"};
    one(&o, 3, set, &r);
    CU_ASSERT(r.reply[0] && r.reply[0]->type == REDIS_REPLY_STATUS);
    rec_free(&r);
    o.user = "reader";
    o.password = "reader-secret";
    one(&o, 2, get, &r);
    CU_ASSERT(r.reply[0] && r.reply[0]->type == REDIS_REPLY_STRING && !strcmp(r.reply[0]->str, "v"));
    rec_free(&r);
    one(&o, 3, set, &r);
    CU_ASSERT(r.reply[0] && r.reply[0]->type == REDIS_REPLY_ERROR && strstr(r.reply[0]->str, "NOPERM"));
    rec_free(&r);
    o.password = "app-secret";
    expect_fail(&o, "AUTH (user reader): WRONGPASS invalid username-password pair or user is disabled.", 1);
    server_stop(&s);
    redis_tls_destroy(&t);
}

/* redis_sync: the same transport, blocking. */
static void test_sync(void)
{
    server_t s = {0};
    const char *const extra[] = {"--requirepass", "def-secret", NULL};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 0, extra), 0);
    redis_tls_t *t = tls_of(&pki.ca, 0);
    redis_conn_opts_t o = {.host = "127.0.0.1", .port = s.port, .tls = t, .password = "def-secret"};
    char err[512] = "";
    const char *info[] = {"INFO", "replication"};
    redisReply *r = redis_sync_once(&o, 2, info, NULL, 2 * SEC, err, sizeof(err));
    CU_ASSERT(r && r->type == REDIS_REPLY_STRING && strstr(r->str, "role:master"));
    freeReplyObject(r);
    redis_sync_t *sc = redis_sync_open(&o, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
    for (int i = 0; i < 3; i++) { /* one connection, several commands */
        r = redis_sync_command(sc, 1, PING, NULL, 2 * SEC, err, sizeof(err));
        CU_ASSERT(r && !strcmp(r->str, "PONG"));
        freeReplyObject(r);
    }
    /* The server goes away: the next command says so, and so does every later one. */
    server_stop(&s);
    r = redis_sync_command(sc, 1, PING, NULL, 2 * SEC, err, sizeof(err));
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "connection closed by the server"));
    char first[512];
    snprintf(first, sizeof(first), "%s", err);
    r = redis_sync_command(sc, 1, PING, NULL, 2 * SEC, err, sizeof(err));
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_STRING_EQUAL(err, first);
    redis_sync_close(&sc);
    CU_ASSERT_PTR_NULL(sc);
    /* A refused handshake: NULL from open, with the line. */
    redis_tls_t *other = tls_of(&pki.other_ca, 0);
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 0, NULL), 0);
    o.port = s.port;
    o.tls = other;
    o.password = NULL;
    CU_ASSERT_PTR_NULL(redis_sync_open(&o, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(err, ": TLS handshake: certificate verify failed: self-signed certificate in certificate chain"));
    server_stop(&s);
    redis_tls_destroy(&t);
    redis_tls_destroy(&other);
}

/* The SHA-256 of a certificate's DER as hex. */
static void der_sha256(X509 *x, char hex[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    CU_ASSERT_FATAL(X509_digest(x, EVP_sha256(), md, &n) == 1 && n == 32);
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* The certificate a server presented (certificate rotation compares it), and whether a
 * server said anything at all (the promotion guard's question): a TLS server whose
 * certificate we refuse has, a closed port and a silent listener have not. */
static void test_peer_cert_and_heard(void)
{
    server_t s = {0};
    CU_ASSERT_EQUAL_FATAL(server_start_tls(&s, dir, "server.crt", "server.key", 0, NULL), 0);
    redis_tls_t *t = tls_of(&pki.ca, 0), *other = tls_of(&pki.other_ca, 0);
    redis_conn_opts_t o = {.host = "127.0.0.1", .port = s.port, .tls = t};
    char want[65], err[256];
    der_sha256(pki.server.crt, want);
    redis_sync_t *sc = redis_sync_open(&o, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
    CU_ASSERT_STRING_EQUAL(redis_sync_peer_cert(sc), want);
    redis_sync_close(&sc);
    CU_ASSERT_EQUAL(redis_sync_answers(&o, 500 * NS_PER_MS), 1);
    o.tls = other; /* refused by us: the server spoke all the same */
    CU_ASSERT_EQUAL(redis_sync_answers(&o, 500 * NS_PER_MS), 1);
    rec_t r;
    loop_t *loop = loop_new();
    redis_conn_t *c = redis_conn_new(loop, &o);
    memset(&r, 0, sizeof(r));
    cmd(c, &r, SEC, 1, PING);
    run_until(loop, &r, 1, 3000);
    CU_ASSERT_EQUAL(redis_conn_state(c), REDIS_CONN_FAILED);
    CU_ASSERT_EQUAL(redis_conn_heard(c), 1);
    CU_ASSERT_STRING_EQUAL(redis_conn_peer_cert(c), "");
    redis_conn_destroy(&c);
    rec_free(&r);
    server_stop(&s);
    o.tls = t;
    CU_ASSERT_EQUAL(redis_sync_answers(&o, 300 * NS_PER_MS), 0); /* nothing listens any more */
    /* A plain server: no certificate; answers. */
    CU_ASSERT_EQUAL_FATAL(server_start(&s, 0, NULL), 0);
    redis_conn_opts_t p = {.host = "127.0.0.1", .port = s.port};
    sc = redis_sync_open(&p, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
    CU_ASSERT_STRING_EQUAL(redis_sync_peer_cert(sc), "");
    redis_sync_close(&sc);
    CU_ASSERT_EQUAL(redis_sync_answers(&p, 500 * NS_PER_MS), 1);
    p.password = "wrong"; /* an AUTH refusal is an answer too */
    CU_ASSERT_EQUAL(redis_sync_answers(&p, 500 * NS_PER_MS), 1);
    kill(s.pid, SIGSTOP); /* accepts (the kernel does), never answers */
    p.password = NULL;
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(redis_sync_answers(&p, 300 * NS_PER_MS), 0);
    CU_ASSERT(clock_mono_ns() - t0 < 800 * NS_PER_MS);
    o.port = s.port; /* TLS to it: no handshake message either */
    CU_ASSERT_EQUAL(redis_sync_answers(&o, 300 * NS_PER_MS), 0);
    server_stop(&s);
    loop_destroy(&loop);
    redis_tls_destroy(&t);
    redis_tls_destroy(&other);
}

static const cu_entry_t tests[] = {
    CU_SUITE("redis_conn, canned"),
    {"commands as hiredis formats them; replies split at every byte", test_split_at_every_byte},
    {"several replies in one read", test_several_in_one_read},
    {"protocol error, close mid-reply, EOF", test_stream_failures},
    {"a reply to no command; commands after a failure", test_reply_to_no_command},
    {"a deadline fails the pipeline", test_deadline},
    {"a callback destroys the connection", test_destroy_in_callback},
    {"a callback queues the next command", test_command_from_callback},
    {"reply size cap", test_reply_cap},
    {"AUTH user password, first and alone", test_auth_first_and_alone},
    {"AUTH refused: fallback password, then failure", test_auth_fallback_and_refusal},
    CU_SUITE("redis_conn, redis-server"),
    {"connection refused; a host that is not an IP", test_refused_and_bad_host},
    {"deadlines on a silent server, plain and TLS", test_deadlines_on_a_silent_server},
    {"TLS 1.3 and 1.2; wrong CA, name, expired refused", test_tls_round_trips},
    {"client certificate required, without and with", test_client_certificate_required},
    {"plain to a TLS port, TLS to a plain port", test_mixed_up_ports},
    {"AUTH password, ACL users, read-only refused a write", test_auth_and_acl_users},
    {"redis_sync over TLS", test_sync},
    {"the server's certificate; whether a server answered at all", test_peer_cert_and_heard},
};

CU_HOOKS({"redis_conn, redis-server", real_init, real_clean, NULL, NULL});

CU_MAIN(tests)
