/* slotmove on real connections (redis_sync.h): slotmove_run_sync. See slotmove.h. */
#include "slotmove.h"

#include "clock.h"
#include "redis_sync.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COMMAND_TIMEOUT_NS (INT64_C(2000000000))

typedef struct {
    const slotmove_job_t *job;
    redis_conn_opts_t opts;
    const char *tls_domain; /* TLS: a node's certificate is for <pod>.<this> */
    redis_sync_t *source, *target, *others[SLOTMOVE_MAX_OTHERS + SLOTMOVE_MAX_REPLICAS]; /* opened when needed */
} sync_io_t;

static const slotmove_node_t *node_of(const sync_io_t *s, int to)
{
    return slotmove_node(s->job, to);
}

static redis_sync_t **slot_of(sync_io_t *s, int to)
{
    return to == SLOTMOVE_TO_SOURCE ? &s->source : to == SLOTMOVE_TO_TARGET ? &s->target : &s->others[to];
}

/* The open connection to node to, opened when needed; NULL with err. */
static redis_sync_t *conn_to(sync_io_t *s, int to, char *err, size_t errlen)
{
    redis_sync_t **c = slot_of(s, to);
    if (!*c) {
        redis_conn_opts_t o = s->opts;
        char name[600];
        o.host = node_of(s, to)->ip;
        o.port = node_of(s, to)->port;
        if (o.tls && s->tls_domain && node_of(s, to)->pod[0]) {
            snprintf(name, sizeof(name), "%s.%s", node_of(s, to)->pod, s->tls_domain);
            o.tls_server_name = name;
        }
        *c = redis_sync_open(&o, err, errlen);
    }
    return *c;
}

static redisReply *sync_command(void *user, int to, int argc, const char *const *argv, const size_t *lens, char *err,
                                size_t errlen)
{
    sync_io_t *s = user;
    redis_sync_t *c = conn_to(s, to, err, errlen);
    int64_t timeout = COMMAND_TIMEOUT_NS + (!strcmp(argv[0], "MIGRATE") ? SLOTMOVE_MIGRATE_TIMEOUT_MS * NS_PER_MS : 0);
    redisReply *r = c ? redis_sync_command(c, argc, argv, lens, timeout, err, errlen) : NULL;
    if (!r && c) /* a failed connection stays failed: the next command opens another */
        redis_sync_close(slot_of(s, to));
    return r;
}

static int sync_pipeline(void *user, int to, size_t n, const int *argcs, const char *const *const *argvs,
                         const size_t *const *lenss, redisReply **replies, char *err, size_t errlen)
{
    sync_io_t *s = user;
    redis_sync_t *c = conn_to(s, to, err, errlen);
    int64_t timeout = COMMAND_TIMEOUT_NS;
    for (size_t i = 0; i < n; i++) /* MIGRATEs: each its own timeout more */
        timeout += !strcmp(argvs[i][0], "MIGRATE") ? SLOTMOVE_MIGRATE_TIMEOUT_MS * NS_PER_MS : 0;
    if (c && !redis_sync_pipeline(c, n, argcs, argvs, lenss, timeout, replies, err, errlen))
        return 0;
    for (size_t i = 0; i < n; i++)
        replies[i] = NULL;
    if (c) /* a failed connection stays failed: the next command opens another */
        redis_sync_close(slot_of(s, to));
    return -1;
}

static int64_t sync_now(void *user)
{
    (void)user;
    return clock_mono_ns();
}

/* Pacing (bytes_per_second): the worker's keepalive is called between waits, each at
 * most SLOTMOVE_PACE_TICK_NS; a synchronous slot move blocks its worker anyway. */
static void sync_wait(void *user, int64_t ns)
{
    (void)user;
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static struct {
    void (*tick)(void *arg);
    void *arg;
} keepalive;

void slotmove_sync_keepalive(void (*tick)(void *arg), void *arg)
{
    keepalive.tick = tick;
    keepalive.arg = arg;
}

int slotmove_run_sync(const slotmove_job_t *job, const char *password, const char *password_fallback,
                      slotmove_progress_t *progress, char *err, size_t errlen)
{
    return slotmove_run_sync_tls(job, password, password_fallback, NULL, NULL, progress, err, errlen);
}

int slotmove_run_sync_tls(const slotmove_job_t *job, const char *password, const char *password_fallback,
                          const redis_tls_t *tls, const char *tls_domain, slotmove_progress_t *progress, char *err,
                          size_t errlen)
{
    static sync_io_t s; /* (large: one run at a time in a worker) */
    memset(&s, 0, sizeof(s));
    s.job = job;
    s.tls_domain = tls_domain;
    s.opts.connect_timeout_ns = COMMAND_TIMEOUT_NS;
    s.opts.tls = tls;
    s.opts.password = password;
    s.opts.password_fallback = password_fallback;
    slotmove_io_t io = {.command = sync_command, .pipeline = sync_pipeline, .now_ns = sync_now, .user = &s,
                        .tick = keepalive.tick, .tick_arg = keepalive.arg, .wait = sync_wait};
    int rc = slotmove_run(job, &io, password, progress, err, errlen);
    redis_sync_close(&s.source);
    redis_sync_close(&s.target);
    for (size_t i = 0; i < SLOTMOVE_MAX_OTHERS + SLOTMOVE_MAX_REPLICAS; i++)
        redis_sync_close(&s.others[i]);
    return rc;
}
