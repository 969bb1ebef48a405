/* Unit tests of ZeroMQ message framing over an inproc PAIR. */
#include "cu_table.h"
#include "rmsg.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static void *ctx, *a, *b;

static int setup(void)
{
    ctx = zmq_ctx_new();
    a = zmq_socket(ctx, ZMQ_PAIR);
    b = zmq_socket(ctx, ZMQ_PAIR);
    if (zmq_bind(a, "inproc://rmsg-test") || zmq_connect(b, "inproc://rmsg-test"))
        return -1;
    return 0;
}

static int teardown(void)
{
    zmq_close(a);
    zmq_close(b);
    zmq_ctx_term(ctx);
    return 0;
}

CU_HOOKS({"rmsg", setup, teardown, NULL, NULL});

static void test_roundtrip(void)
{
    rmsg_t *m = rmsg_new();
    CU_ASSERT_EQUAL(rmsg_addstr(m, "DONE"), 0);
    CU_ASSERT_EQUAL(rmsg_addstr(m, "default/cache"), 0);
    CU_ASSERT_EQUAL(rmsg_addf(m, "%d", 1500), 0);
    CU_ASSERT_EQUAL(rmsg_addmem(m, "\0bin\0", 5), 0);
    CU_ASSERT_EQUAL(rmsg_pushstr(m, "envelope"), 0);
    CU_ASSERT_EQUAL(rmsg_size(m), 5);
    CU_ASSERT_EQUAL(rmsg_send(&m, a, 0), 0);
    CU_ASSERT_PTR_NULL(m);

    rmsg_t *r = rmsg_recv(b, 0, 16, 1024);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(rmsg_size(r), 5);
    rmsg_t *env = rmsg_pop_frame_msg(r);
    CU_ASSERT(rmsg_frame_is(env, 0, "envelope"));
    CU_ASSERT(rmsg_frame_is(r, 0, "DONE"));
    CU_ASSERT(!rmsg_frame_is(r, 0, "DON"));
    char *key = rmsg_strdup(r, 1);
    CU_ASSERT_STRING_EQUAL(key, "default/cache");
    free(key);
    int64_t v = 0;
    CU_ASSERT_EQUAL(rmsg_frame_int64(r, 2, &v), 0);
    CU_ASSERT_EQUAL(v, 1500);
    CU_ASSERT_EQUAL(rmsg_frame_int64(r, 1, &v), -1); /* not a number */
    CU_ASSERT_EQUAL(rmsg_frame_int64(r, 9, &v), -1); /* no such frame */
    size_t len = 0;
    const char *bin = rmsg_frame(r, 3, &len);
    CU_ASSERT_EQUAL(len, 5);
    CU_ASSERT_EQUAL(memcmp(bin, "\0bin\0", 5), 0);
    CU_ASSERT_PTR_NULL(rmsg_frame(r, 4, NULL));
    char *first = rmsg_popstr(r);
    CU_ASSERT_STRING_EQUAL(first, "DONE");
    free(first);
    CU_ASSERT_EQUAL(rmsg_size(r), 3);
    rmsg_destroy(&r);
    rmsg_destroy(&env);
}

static void test_limits_and_nonblocking(void)
{
    CU_ASSERT_PTR_NULL(rmsg_recv(b, ZMQ_DONTWAIT, 16, 1024));
    CU_ASSERT_EQUAL(errno, EAGAIN);

    /* Too many frames: dropped whole, and the next message is intact. */
    rmsg_t *m = rmsg_new();
    for (int i = 0; i < 10; i++)
        rmsg_addf(m, "f%d", i);
    rmsg_send(&m, a, 0);
    m = rmsg_new();
    rmsg_addstr(m, "next");
    rmsg_send(&m, a, 0);
    CU_ASSERT_PTR_NULL(rmsg_recv(b, 0, 4, 1024));
    CU_ASSERT_EQUAL(errno, EMSGSIZE);
    rmsg_t *r = rmsg_recv(b, 0, 4, 1024);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT(rmsg_frame_is(r, 0, "next"));
    rmsg_destroy(&r);

    /* Too many bytes. */
    m = rmsg_new();
    char big[2000];
    memset(big, 'x', sizeof(big));
    rmsg_addmem(m, big, sizeof(big));
    rmsg_send(&m, a, 0);
    CU_ASSERT_PTR_NULL(rmsg_recv(b, 0, 4, 1024));
    CU_ASSERT_EQUAL(errno, EMSGSIZE);
}

static const cu_entry_t tests[] = {
    CU_SUITE("rmsg"),
    {"multipart round trip and accessors", test_roundtrip},
    {"size limits and non-blocking receive", test_limits_and_nonblocking},
};

CU_MAIN(tests)
