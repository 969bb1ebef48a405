/* Unit tests of the shared event loop: readers on fds and ZeroMQ sockets, timers on an
 * explicit clock, the flag vocabulary, re-entrancy, and how the loop ends. */
#include "cu_table.h"
#include "loop.h"

#include "clock.h"
#include "loop_curl.h"
#include "loopback.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

static int64_t fake_now;
static int64_t fake_clock(void *arg)
{
    (void)arg;
    return fake_now;
}

typedef struct {
    int calls;
    int last_revents;
    int ret;
    int remove_other_fd; /* fd to remove from inside the handler, or -1 */
    int remove_self;
    int add_timer;       /* add a delay-0 timer from inside the handler */
    char order[32];
    size_t norder;
    char tag;
} probe_t;

static probe_t *order_sink;

static int on_reader(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    probe_t *p = arg;
    p->calls++;
    p->last_revents = revents;
    if (order_sink && order_sink->norder < sizeof(order_sink->order) - 1)
        order_sink->order[order_sink->norder++] = p->tag;
    if (p->remove_other_fd >= 0)
        loop_remove_fd(loop, p->remove_other_fd);
    if (p->remove_self) {
        if (socket)
            loop_remove_socket(loop, socket);
        else
            loop_remove_fd(loop, fd);
    }
    char c;
    if (!socket && (revents & LOOP_IN))
        (void)!read(fd, &c, 1);
    return p->ret;
}

static int timer_calls, timer_last_id, timer_ret;
static char timer_order[16];
static size_t ntimer_order;

static int on_timer(loop_t *loop, int id, void *arg)
{
    (void)loop;
    timer_calls++;
    timer_last_id = id;
    if (arg && ntimer_order < sizeof(timer_order) - 1)
        timer_order[ntimer_order++] = *(const char *)arg;
    return timer_ret;
}

static int on_timer_adds_timer(loop_t *loop, int id, void *arg)
{
    (void)id;
    (void)arg;
    timer_calls++;
    loop_add_timer(loop, 0, 0, on_timer, NULL);
    return 0;
}

static void reset_timers(void)
{
    timer_calls = timer_last_id = timer_ret = 0;
    ntimer_order = 0;
    memset(timer_order, 0, sizeof(timer_order));
}

static probe_t probe(char tag)
{
    probe_t p;
    memset(&p, 0, sizeof(p));
    p.remove_other_fd = -1;
    p.tag = tag;
    return p;
}

/* A loop and a pipe, its read end fds[0] and write end fds[1], and a probe tagged tag
 * for the reader that the test registers. */
typedef struct {
    int fds[2];
    loop_t *loop;
    probe_t p;
} pipe_loop_t;

static void pipe_loop_open(pipe_loop_t *t, char tag)
{
    CU_ASSERT_FATAL(pipe(t->fds) == 0);
    t->loop = loop_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->loop);
    t->p = probe(tag);
}

static void pipe_loop_close(pipe_loop_t *t)
{
    loop_destroy(&t->loop);
    CU_ASSERT_PTR_NULL(t->loop);
    close(t->fds[0]);
    close(t->fds[1]);
}

static void test_fd_reader(void)
{
    pipe_loop_t t;
    pipe_loop_open(&t, 'a');
    CU_ASSERT_EQUAL(loop_add_fd(t.loop, t.fds[0], LOOP_IN, on_reader, &t.p), 0);
    CU_ASSERT_EQUAL(loop_reader_count(t.loop), 1);
    CU_ASSERT_EQUAL(loop_run_once(t.loop, 0), 0);
    CU_ASSERT_EQUAL(t.p.calls, 0); /* nothing to read yet */
    CU_ASSERT_EQUAL(write(t.fds[1], "x", 1), 1);
    CU_ASSERT_EQUAL(loop_run_once(t.loop, 0), 0);
    CU_ASSERT_EQUAL(t.p.calls, 1);
    CU_ASSERT_EQUAL(t.p.last_revents & LOOP_IN, LOOP_IN);
    loop_remove_fd(t.loop, t.fds[0]);
    CU_ASSERT_EQUAL(loop_reader_count(t.loop), 0);
    CU_ASSERT_EQUAL(write(t.fds[1], "x", 1), 1);
    CU_ASSERT_EQUAL(loop_run_once(t.loop, 0), 0);
    CU_ASSERT_EQUAL(t.p.calls, 1);
    pipe_loop_close(&t);
}

/* curl asks for "writable" while connecting: the loop must wake at once for it, not at
 * the next timer (poll(2)'s POLLOUT is 4, which zmq_poll reads as ZMQ_POLLERR). */
static void test_writable_wakes_at_once(void)
{
    pipe_loop_t t;
    pipe_loop_open(&t, 'w');
    CU_ASSERT_EQUAL(loop_add_fd(t.loop, t.fds[1], LOOP_IN, on_reader, &t.p), 0);
    CU_ASSERT_EQUAL(loop_set_fd_events(t.loop, t.fds[1], LOOP_OUT), 0);
    CU_ASSERT_EQUAL(loop_set_fd_events(t.loop, 12345, LOOP_OUT), -1);
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(loop_run_once(t.loop, 2 * NS_PER_SEC), 0);
    CU_ASSERT(clock_mono_ns() - t0 < NS_PER_SEC);
    CU_ASSERT_EQUAL(t.p.calls, 1);
    CU_ASSERT_EQUAL(t.p.last_revents, LOOP_OUT);
    pipe_loop_close(&t);
}

static void test_zmq_reader(void)
{
    void *ctx = zmq_ctx_new();
    void *a = zmq_socket(ctx, ZMQ_PAIR), *b = zmq_socket(ctx, ZMQ_PAIR);
    CU_ASSERT_FATAL(zmq_bind(a, "inproc://loop-test") == 0);
    CU_ASSERT_FATAL(zmq_connect(b, "inproc://loop-test") == 0);
    loop_t *loop = loop_new();
    probe_t p = probe('z');
    CU_ASSERT_EQUAL(loop_add_socket(loop, b, LOOP_IN, on_reader, &p), 0);
    /* A second registration replaces the first. */
    CU_ASSERT_EQUAL(loop_add_socket(loop, b, LOOP_IN, on_reader, &p), 0);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 1);
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(p.calls, 0);
    CU_ASSERT_EQUAL(zmq_send(a, "hi", 2, 0), 2);
    CU_ASSERT_EQUAL(loop_run_once(loop, NS_PER_SEC), 0);
    CU_ASSERT_EQUAL(p.calls, 1);
    CU_ASSERT_EQUAL(p.last_revents, LOOP_IN);
    char buf[4];
    CU_ASSERT_EQUAL(zmq_recv(b, buf, sizeof(buf), 0), 2);
    loop_remove_socket(loop, b);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0);
    loop_destroy(&loop);
    zmq_close(a);
    zmq_close(b);
    zmq_ctx_term(ctx);
}

static void test_timers_on_fake_clock(void)
{
    reset_timers();
    fake_now = 1000 * NS_PER_SEC;
    loop_t *loop = loop_new();
    loop_set_clock(loop, fake_clock, NULL);
    CU_ASSERT_EQUAL(loop_now(loop), fake_now);
    char a = 'a', b = 'b', c = 'c';
    int once = loop_add_timer(loop, 35 * NS_PER_MS, 0, on_timer, &c);
    int every = loop_add_timer(loop, 10 * NS_PER_MS, 10 * NS_PER_MS, on_timer, &a);
    int cancelled = loop_add_timer(loop, 5 * NS_PER_MS, 0, on_timer, &b);
    CU_ASSERT(once > 0 && every > 0 && cancelled > 0 && once != every);
    loop_cancel_timer(loop, cancelled);
    loop_cancel_timer(loop, 9999); /* unknown: ignored */
    CU_ASSERT_EQUAL(loop_timer_count(loop), 2);

    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 0);
    fake_now += 10 * NS_PER_MS; /* +10 */
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 1);
    CU_ASSERT_EQUAL(timer_last_id, every);
    fake_now += 17 * NS_PER_MS; /* +27: the repeating one (due +20), re-armed for +30 */
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 2);
    fake_now += 13 * NS_PER_MS; /* +40: both due, earliest deadline first (+30, then +35) */
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 4);
    CU_ASSERT_STRING_EQUAL(timer_order, "aaac");
    CU_ASSERT_EQUAL(loop_timer_count(loop), 1); /* the once-timer is gone */
    fake_now += 100 * NS_PER_MS; /* fell far behind: one call, no catch-up burst */
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 5);
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 5);
    /* Reset moves the deadline. */
    CU_ASSERT_EQUAL(loop_timer_reset(loop, every, 100 * NS_PER_MS), 0);
    CU_ASSERT_EQUAL(loop_timer_reset(loop, once, 0), -1);
    fake_now += 50 * NS_PER_MS;
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 5);
    fake_now += 50 * NS_PER_MS;
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 6);
    loop_destroy(&loop);
}

/* The poll sleeps until the earliest deadline, not the cap. */
static void test_wait_follows_earliest_deadline(void)
{
    reset_timers();
    loop_t *loop = loop_new();
    int fds[2];
    CU_ASSERT_FATAL(pipe(fds) == 0);
    probe_t p = probe('r');
    loop_add_fd(loop, fds[0], LOOP_IN, on_reader, &p);
    loop_add_timer(loop, 50 * NS_PER_MS, 0, on_timer, NULL);
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(loop_run_once(loop, 5 * NS_PER_SEC), 0);
    int64_t took = clock_mono_ns() - t0;
    CU_ASSERT(took >= 45 * NS_PER_MS);
    CU_ASSERT(took < 2 * NS_PER_SEC);
    CU_ASSERT_EQUAL(timer_calls, 1);
    CU_ASSERT_EQUAL(p.calls, 0);
    loop_destroy(&loop);
    close(fds[0]);
    close(fds[1]);
}

static int prepare_calls;
static int on_prepare(loop_t *loop, int64_t now, int64_t *wait, void *arg)
{
    (void)loop;
    (void)now;
    prepare_calls++;
    *wait = *(int64_t *)arg;
    return 0;
}

static void test_prepare_lowers_wait(void)
{
    loop_t *loop = loop_new();
    int64_t want = 20 * NS_PER_MS;
    prepare_calls = 0;
    CU_ASSERT_EQUAL(loop_add_prepare(loop, on_prepare, &want), 0);
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(loop_run_once(loop, 5 * NS_PER_SEC), 0);
    CU_ASSERT(clock_mono_ns() - t0 < 2 * NS_PER_SEC);
    CU_ASSERT_EQUAL(prepare_calls, 1);
    loop_destroy(&loop);
}

/* A handler removes a reader that is also ready this turn: it is not called. A handler
 * removes itself: safe, and never called again. */
static void test_remove_during_dispatch(void)
{
    int f1[2], f2[2];
    CU_ASSERT_FATAL(pipe(f1) == 0 && pipe(f2) == 0);
    loop_t *loop = loop_new();
    probe_t p1 = probe('1'), p2 = probe('2');
    p1.remove_other_fd = f2[0];
    p1.remove_self = 1;
    loop_add_fd(loop, f1[0], LOOP_IN, on_reader, &p1);
    loop_add_fd(loop, f2[0], LOOP_IN, on_reader, &p2);
    CU_ASSERT_EQUAL(write(f1[1], "x", 1), 1);
    CU_ASSERT_EQUAL(write(f2[1], "x", 1), 1);
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(p1.calls, 1);
    CU_ASSERT_EQUAL(p2.calls, 0);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0);
    CU_ASSERT_EQUAL(write(f1[1], "x", 1), 1);
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(p1.calls, 1);
    loop_destroy(&loop);
    close(f1[0]), close(f1[1]), close(f2[0]), close(f2[1]);
}

/* Work added during dispatch waits for the next turn. */
static void test_added_during_dispatch_waits(void)
{
    reset_timers();
    fake_now = 0;
    loop_t *loop = loop_new();
    loop_set_clock(loop, fake_clock, NULL);
    loop_add_timer(loop, 0, 0, on_timer_adds_timer, NULL);
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 1); /* the new delay-0 timer did not run in the same turn */
    CU_ASSERT_EQUAL(loop_timer_count(loop), 1);
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_EQUAL(timer_calls, 2);
    CU_ASSERT_EQUAL(loop_timer_count(loop), 0);
    loop_destroy(&loop);
}

/* Readers run in registration order. */
static void test_reader_order(void)
{
    int f1[2], f2[2];
    CU_ASSERT_FATAL(pipe(f1) == 0 && pipe(f2) == 0);
    loop_t *loop = loop_new();
    probe_t sink = probe('-');
    order_sink = &sink;
    probe_t p1 = probe('1'), p2 = probe('2');
    loop_add_fd(loop, f2[0], LOOP_IN, on_reader, &p2);
    loop_add_fd(loop, f1[0], LOOP_IN, on_reader, &p1);
    CU_ASSERT_EQUAL(write(f1[1], "x", 1), 1);
    CU_ASSERT_EQUAL(write(f2[1], "x", 1), 1);
    CU_ASSERT_EQUAL(loop_run_once(loop, 0), 0);
    CU_ASSERT_STRING_EQUAL(sink.order, "21");
    order_sink = NULL;
    loop_destroy(&loop);
    close(f1[0]), close(f1[1]), close(f2[0]), close(f2[1]);
}

static int stop_after;
static int on_timer_stop(loop_t *loop, int id, void *arg)
{
    (void)id;
    (void)arg;
    if (--stop_after == 0)
        loop_stop(loop);
    return 0;
}

/* loop_run ends with 0 on loop_stop, -1 when a handler says so. */
static void test_run_ends(void)
{
    loop_t *loop = loop_new();
    stop_after = 3;
    loop_add_timer(loop, 0, NS_PER_MS, on_timer_stop, NULL);
    CU_ASSERT_EQUAL(loop_run(loop, NS_PER_SEC), 0);
    CU_ASSERT_EQUAL(stop_after, 0);
    loop_destroy(&loop);

    reset_timers();
    loop = loop_new();
    timer_ret = -1;
    loop_add_timer(loop, 0, 0, on_timer, NULL);
    CU_ASSERT_EQUAL(loop_run(loop, NS_PER_SEC), -1);
    CU_ASSERT_EQUAL(timer_calls, 1);
    loop_destroy(&loop);
    timer_ret = 0;

    int fds[2];
    CU_ASSERT_FATAL(pipe(fds) == 0);
    loop = loop_new();
    probe_t p = probe('x');
    p.ret = -1;
    loop_add_fd(loop, fds[0], LOOP_IN, on_reader, &p);
    CU_ASSERT_EQUAL(write(fds[1], "x", 1), 1);
    CU_ASSERT_EQUAL(loop_run(loop, NS_PER_SEC), -1);
    CU_ASSERT_EQUAL(p.calls, 1);
    loop_destroy(&loop);
    close(fds[0]);
    close(fds[1]);
}

/* A poll that fails ends the loop with an error instead of spinning. */
static void test_poll_failure_ends_loop(void)
{
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_PAIR);
    loop_t *loop = loop_new();
    probe_t p = probe('s');
    loop_add_socket(loop, s, LOOP_IN, on_reader, &p);
    /* The loop now holds a closed socket: libzmq keeps it until the context ends and
     * zmq_poll reports ENOTSOCK for it. */
    zmq_close(s);
    CU_ASSERT_EQUAL(loop_run(loop, NS_PER_SEC), -1);
    CU_ASSERT(strstr(loop_error(loop), "zmq_poll") != NULL);
    CU_ASSERT_EQUAL(p.calls, 0);
    loop_destroy(&loop);
    zmq_ctx_term(ctx);
}


/* ---- loop_curl: curl's multi on the loop, against a local HTTP server --------------- */

static enum MHD_Result on_http(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **state)
{
    (void)cls, (void)method, (void)version, (void)data, (void)size, (void)state;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(url), (void *)url, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

typedef struct {
    int done, failed;
    size_t len[2];
} fetch_t;

/* Count the body's bytes. */
static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += size * n;
    return size * n;
}

static void on_done(CURL *easy, CURLcode result, void *arg)
{
    fetch_t *f = arg;
    if (result == CURLE_OK) {
        long code = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
        f->done += code == 200;
    } else {
        f->failed++;
    }
    curl_easy_cleanup(easy);
}

static int on_give_up(loop_t *loop, int id, void *arg)
{
    (void)id, (void)arg;
    loop_stop(loop);
    return 0;
}

static int until_finished(loop_t *loop, int64_t now, int64_t *wait, void *arg)
{
    (void)now, (void)wait;
    fetch_t *f = arg;
    if (f->done + f->failed >= 2)
        loop_stop(loop);
    return 0;
}

static CURL *easy_get(const char *url, size_t *len)
{
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, len);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    return e;
}

/* An HTTP server on 127.0.0.1 answering with handler(arg) on its own thread; *port is
 * its port. The caller stops it. */
static struct MHD_Daemon *http_on_loopback(MHD_AccessHandlerCallback handler, void *arg, int *port)
{
    struct sockaddr_in sa = loopback_any_port();
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, arg,
                                            MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    *port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
    return d;
}

/* A new loop and curl multi, joined by a loop_curl that counts into *f (zeroed), and
 * until_finished on the loop. The caller destroys all three. */
static loop_curl_t *curl_on_new_loop(fetch_t *f, loop_t **loop, CURLM **multi)
{
    *loop = loop_new();
    *multi = curl_multi_init();
    memset(f, 0, sizeof(*f));
    loop_curl_t *lc = loop_curl_new(*loop, *multi, on_done, f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lc);
    loop_add_prepare(*loop, until_finished, f);
    return lc;
}

static void test_curl_transfers(void)
{
    int port;
    struct MHD_Daemon *d = http_on_loopback(on_http, NULL, &port);
    /* A port nobody listens on: bind one, note it, close it. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in free_sa = loopback_any_port();
    socklen_t sl = sizeof(free_sa);
    CU_ASSERT_FATAL(bind(s, (struct sockaddr *)&free_sa, sizeof(free_sa)) == 0);
    getsockname(s, (struct sockaddr *)&free_sa, &sl);
    close(s);

    loop_t *loop;
    CURLM *multi;
    fetch_t f;
    loop_curl_t *lc = curl_on_new_loop(&f, &loop, &multi);
    loop_add_timer(loop, 5 * NS_PER_SEC, 0, on_give_up, NULL);
    char url[2][96];
    snprintf(url[0], sizeof(url[0]), "http://127.0.0.1:%d/one", port);
    snprintf(url[1], sizeof(url[1]), "http://127.0.0.1:%d/two", port);
    CU_ASSERT_EQUAL(loop_curl_add(lc, easy_get(url[0], &f.len[0])), 0);
    CU_ASSERT_EQUAL(loop_curl_add(lc, easy_get(url[1], &f.len[1])), 0);
    int64_t t0 = clock_mono_ns();
    CU_ASSERT_EQUAL(loop_run(loop, NS_PER_SEC), 0);
    CU_ASSERT_EQUAL(f.done, 2);
    CU_ASSERT_EQUAL(f.len[0], 4); /* "/one" */
    CU_ASSERT_EQUAL(f.len[1], 4);
    CU_ASSERT(clock_mono_ns() - t0 < 3 * NS_PER_SEC);
    CU_ASSERT_EQUAL(loop_curl_running(lc), 0);

    /* A refused connection ends in done with the error, not a hang. */
    memset(&f, 0, sizeof(f));
    snprintf(url[0], sizeof(url[0]), "http://127.0.0.1:%d/x", ntohs(free_sa.sin_port));
    CU_ASSERT_EQUAL(loop_curl_add(lc, easy_get(url[0], &f.len[0])), 0);
    CU_ASSERT_EQUAL(loop_curl_add(lc, easy_get(url[1], &f.len[1])), 0);
    CU_ASSERT_EQUAL(loop_run(loop, NS_PER_SEC), 0);
    CU_ASSERT_EQUAL(f.failed, 1);
    CU_ASSERT_EQUAL(f.done, 1);

    loop_curl_destroy(&lc);
    CU_ASSERT_PTR_NULL(lc);
    CU_ASSERT_EQUAL(loop_reader_count(loop), 0); /* destroy took its fds back */
    curl_multi_cleanup(multi);
    loop_destroy(&loop);
    MHD_stop_daemon(d);
}

/* The upload handler: consume the body, then answer its size. */
static enum MHD_Result on_upload(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *data,
                                 size_t *size, void **state)
{
    (void)url, (void)method, (void)version, (void)data;
    size_t *total = cls;
    if (!*state) {
        *state = (void *)1;
        return MHD_YES;
    }
    if (*size) {
        *total += *size;
        *size = 0;
        return MHD_YES;
    }
    char n[32];
    snprintf(n, sizeof(n), "%zu", *total);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(n), n, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* A connect and a request body larger than the socket buffers: curl asks to be told when
 * the socket is writable (CURL_POLL_OUT) again and again. Each must wake the loop at once
 * (LOOP_OUT -> ZMQ_POLLOUT); a wrong flag (poll(2)'s POLLOUT, which zmq_poll reads as
 * ZMQ_POLLERR) leaves curl waiting for its own timer, and the upload crawls or stalls
 * until the give-up timer. 3 uploads of 16 MiB, each on a new connection, in under 3 s. */
static void test_curl_send_does_not_wait_for_timer(void)
{
    size_t received = 0;
    int port;
    struct MHD_Daemon *d = http_on_loopback(on_upload, &received, &port);
    enum { BODY = 16 << 20 };
    char *body = malloc(BODY);
    CU_ASSERT_PTR_NOT_NULL_FATAL(body);
    memset(body, 'x', BODY);
    loop_t *loop;
    CURLM *multi;
    fetch_t f;
    loop_curl_t *lc = curl_on_new_loop(&f, &loop, &multi);
    int give_up = loop_add_timer(loop, 20 * NS_PER_SEC, 0, on_give_up, NULL);
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/up", port);
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < 3; i++) {
        memset(&f, 0, sizeof(f));
        f.failed = 1; /* until_finished stops at done + failed >= 2: after this one */
        CURL *e = easy_get(url, &f.len[0]);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)BODY);
        curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L); /* a connect every time */
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 4000L);  /* a stall fails, not hangs */
        CU_ASSERT_EQUAL(loop_curl_add(lc, e), 0);
        /* A long maximum wait: only readiness (or curl's timer) may wake the loop. */
        CU_ASSERT_EQUAL(loop_run(loop, 30 * NS_PER_SEC), 0);
        CU_ASSERT_EQUAL(f.done, 1);
    }
    int64_t took = clock_mono_ns() - t0;
    CU_ASSERT(took < 3 * NS_PER_SEC);
    CU_ASSERT_EQUAL(received, (size_t)3 * BODY);
    loop_cancel_timer(loop, give_up);
    loop_curl_destroy(&lc);
    curl_multi_cleanup(multi);
    loop_destroy(&loop);
    MHD_stop_daemon(d);
    free(body);
}

static const cu_entry_t tests[] = {
    CU_SUITE("loop"),
    {"fd reader", test_fd_reader},
    {"writable fd wakes the loop at once", test_writable_wakes_at_once},
    {"zmq socket reader", test_zmq_reader},
    {"timers on an explicit clock", test_timers_on_fake_clock},
    {"wait follows the earliest deadline", test_wait_follows_earliest_deadline},
    {"prepare hook lowers the wait", test_prepare_lowers_wait},
    {"removal during dispatch", test_remove_during_dispatch},
    {"work added during dispatch waits a turn", test_added_during_dispatch_waits},
    {"readers run in registration order", test_reader_order},
    {"loop_run ends on stop and on -1", test_run_ends},
    {"poll failure ends the loop", test_poll_failure_ends_loop},
    {"curl transfers on the loop", test_curl_transfers},
    {"curl's connect and body send wake the loop at once", test_curl_send_does_not_wait_for_timer},
};

CU_MAIN(tests)
