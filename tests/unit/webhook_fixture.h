/* webhook_fixture: a webhook_server on its own libevent loop in a thread of the test
 * process, for the suites that talk HTTPS to it (test_admission, test_webhook_server).
 * The caller writes the certificate into cfg->cert_dir first; the loop ends when a byte
 * arrives on the stop pipe. webhook_fixture_start_classes adds a StorageClass reader
 * (classcheck.h) on the server's loop, freed with the fixture (test_webhook_async).
 * Header-only (each suite is one executable): include it in the test file.
 */
#ifndef RDC_TEST_WEBHOOK_FIXTURE_H
#define RDC_TEST_WEBHOOK_FIXTURE_H

#include "classcheck.h"
#include "webhook_server.h"

#include <CUnit/CUnit.h>
#include <event2/event.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    struct event_base *base;
    webhook_server_t *srv;
    classcheck_reader_t *reader; /* NULL: none */
    struct event *stop_ev;
    int stop[2];
    pthread_t th;
    int port;
} fixture_t;

static inline void webhook_fixture_on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static inline void *webhook_fixture_serve(void *arg)
{
    fixture_t *f = arg;
    event_base_dispatch(f->base);
    return NULL;
}

/* Start the server with cfg on f->base (made) and serve it from a new thread. */
static inline void webhook_fixture_serve_on(fixture_t *f, const webhook_server_config_t *cfg)
{
    char err[512];
    CU_ASSERT_EQUAL_FATAL(webhook_server_new(f->base, cfg, &f->srv, err, sizeof(err)), 0);
    f->port = webhook_server_port(f->srv);
    CU_ASSERT(f->port > 0);
    CU_ASSERT_FATAL(pipe(f->stop) == 0);
    f->stop_ev = event_new(f->base, f->stop[0], EV_READ, webhook_fixture_on_stop, f->base);
    event_add(f->stop_ev, NULL);
    CU_ASSERT_FATAL(pthread_create(&f->th, NULL, webhook_fixture_serve, f) == 0);
}

/* Start a server with cfg (port 0: a free one, in f->port) and serve it from a new thread.
 * A server that cannot start fails the test (CU_ASSERT_*_FATAL). */
static inline void webhook_fixture_start(fixture_t *f, const webhook_server_config_t *cfg)
{
    memset(f, 0, sizeof(*f));
    f->base = event_base_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->base);
    webhook_fixture_serve_on(f, cfg);
}

/* webhook_fixture_start with a StorageClass reader through client (borrowed; NULL: reads
 * fail with why_none) whose reads end within timeout_ms, in cfg->classes. */
static inline void webhook_fixture_start_classes(fixture_t *f, webhook_server_config_t *cfg, kube_client_t *client,
                                                 const char *why_none, int timeout_ms)
{
    memset(f, 0, sizeof(*f));
    f->base = event_base_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->base);
    f->reader = classcheck_reader_new(f->base, client, why_none);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->reader);
    classcheck_reader_set_timeout(f->reader, timeout_ms);
    cfg->classes = f->reader;
    webhook_fixture_serve_on(f, cfg);
}

/* Stop the loop and join its thread: the server's counters can be read from here on. */
static inline void fixture_halt(fixture_t *f)
{
    CU_ASSERT(write(f->stop[1], "x", 1) == 1);
    pthread_join(f->th, NULL);
}

/* Free what webhook_fixture_start made (after fixture_halt). */
static inline void fixture_free(fixture_t *f)
{
    event_free(f->stop_ev);
    webhook_server_destroy(&f->srv);
    classcheck_reader_destroy(&f->reader); /* after the server, before the base */
    event_base_free(f->base);
    close(f->stop[0]);
    close(f->stop[1]);
}

/* fixture_halt, then fixture_free. */
static inline void fixture_stop(fixture_t *f)
{
    fixture_halt(f);
    fixture_free(f);
}

#endif
