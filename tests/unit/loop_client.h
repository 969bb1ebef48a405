/* loop_client: a blocking client step run in a thread of its own while the test's thread
 * turns the loop that serves it (metricsd's listener runs on a loop, with no thread of
 * its own: a client in the loop's thread would wait for an answer that never comes).
 * Header-only. */
#ifndef RDC_TEST_LOOP_CLIENT_H
#define RDC_TEST_LOOP_CLIENT_H

#include "clock.h"
#include "loop.h"

#include <CUnit/CUnit.h>
#include <pthread.h>
#include <unistd.h>

/* A client step: blocking calls, then its result. */
typedef int loop_client_fn(void *arg);

typedef struct {
    loop_client_fn *fn;
    void *arg;
    int result;
    int done[2]; /* a pipe: written when the step is over */
} loop_client_t;

static inline void *loop_client_main(void *p)
{
    loop_client_t *j = p;
    j->result = j->fn(j->arg);
    CU_ASSERT_EQUAL(write(j->done[1], "x", 1), 1);
    return NULL;
}

static inline int loop_client_on_done(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)socket, (void)fd, (void)revents, (void)arg;
    loop_stop(loop);
    return 0;
}

/* Run fn(arg) in a thread while loop serves (loop_run), until fn returns; fn's result. */
static inline int loop_client_run(loop_t *loop, loop_client_fn *fn, void *arg)
{
    loop_client_t j = {.fn = fn, .arg = arg};
    CU_ASSERT_FATAL(pipe(j.done) == 0);
    CU_ASSERT_FATAL(loop_add_fd(loop, j.done[0], LOOP_IN, loop_client_on_done, NULL) == 0);
    pthread_t th;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, loop_client_main, &j) == 0);
    CU_ASSERT_EQUAL(loop_run(loop, 100 * NS_PER_MS), 0);
    pthread_join(th, NULL);
    loop_remove_fd(loop, j.done[0]);
    close(j.done[0]);
    close(j.done[1]);
    return j.result;
}

#endif
