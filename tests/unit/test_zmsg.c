/* Unit tests of ZeroMQ message framing over an inproc PAIR. */
#include "zmsg.h"

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
    if (zmq_bind(a, "inproc://zmsg-test") || zmq_connect(b, "inproc://zmsg-test"))
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

static void test_roundtrip(void)
{
    zmsg_t *m = zmsg_new();
    CU_ASSERT_EQUAL(zmsg_addstr(m, "DONE"), 0);
    CU_ASSERT_EQUAL(zmsg_addstr(m, "default/cache"), 0);
    CU_ASSERT_EQUAL(zmsg_addf(m, "%d", 1500), 0);
    CU_ASSERT_EQUAL(zmsg_addmem(m, "\0bin\0", 5), 0);
    CU_ASSERT_EQUAL(zmsg_pushstr(m, "envelope"), 0);
    CU_ASSERT_EQUAL(zmsg_size(m), 5);
    CU_ASSERT_EQUAL(zmsg_send(&m, a, 0), 0);
    CU_ASSERT_PTR_NULL(m);

    zmsg_t *r = zmsg_recv(b, 0, 16, 1024);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(zmsg_size(r), 5);
    zmsg_t *env = zmsg_pop_frame_msg(r);
    CU_ASSERT(zmsg_frame_is(env, 0, "envelope"));
    CU_ASSERT(zmsg_frame_is(r, 0, "DONE"));
    CU_ASSERT(!zmsg_frame_is(r, 0, "DON"));
    char *key = zmsg_strdup(r, 1);
    CU_ASSERT_STRING_EQUAL(key, "default/cache");
    free(key);
    int64_t v = 0;
    CU_ASSERT_EQUAL(zmsg_frame_int64(r, 2, &v), 0);
    CU_ASSERT_EQUAL(v, 1500);
    CU_ASSERT_EQUAL(zmsg_frame_int64(r, 1, &v), -1); /* not a number */
    CU_ASSERT_EQUAL(zmsg_frame_int64(r, 9, &v), -1); /* no such frame */
    size_t len = 0;
    const char *bin = zmsg_frame(r, 3, &len);
    CU_ASSERT_EQUAL(len, 5);
    CU_ASSERT_EQUAL(memcmp(bin, "\0bin\0", 5), 0);
    CU_ASSERT_PTR_NULL(zmsg_frame(r, 4, NULL));
    char *first = zmsg_popstr(r);
    CU_ASSERT_STRING_EQUAL(first, "DONE");
    free(first);
    CU_ASSERT_EQUAL(zmsg_size(r), 3);
    zmsg_destroy(&r);
    zmsg_destroy(&env);
}

static void test_limits_and_nonblocking(void)
{
    CU_ASSERT_PTR_NULL(zmsg_recv(b, ZMQ_DONTWAIT, 16, 1024));
    CU_ASSERT_EQUAL(errno, EAGAIN);

    /* Too many frames: dropped whole, and the next message is intact. */
    zmsg_t *m = zmsg_new();
    for (int i = 0; i < 10; i++)
        zmsg_addf(m, "f%d", i);
    zmsg_send(&m, a, 0);
    m = zmsg_new();
    zmsg_addstr(m, "next");
    zmsg_send(&m, a, 0);
    CU_ASSERT_PTR_NULL(zmsg_recv(b, 0, 4, 1024));
    CU_ASSERT_EQUAL(errno, EMSGSIZE);
    zmsg_t *r = zmsg_recv(b, 0, 4, 1024);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT(zmsg_frame_is(r, 0, "next"));
    zmsg_destroy(&r);

    /* Too many bytes. */
    m = zmsg_new();
    char big[2000];
    memset(big, 'x', sizeof(big));
    zmsg_addmem(m, big, sizeof(big));
    zmsg_send(&m, a, 0);
    CU_ASSERT_PTR_NULL(zmsg_recv(b, 0, 4, 1024));
    CU_ASSERT_EQUAL(errno, EMSGSIZE);
}

static CU_TestInfo tests[] = {{"multipart round trip and accessors", test_roundtrip},
                              {"size limits and non-blocking receive", test_limits_and_nonblocking},
                              CU_TEST_INFO_NULL};
static CU_SuiteInfo suites[] = {{"zmsg", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};

#include "cu_main.h"
