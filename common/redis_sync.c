/* redis_sync: redis_conn run to completion on a private loop. See redis_sync.h. */
#include "redis_sync.h"

#include "clock.h"
#include "loop.h"

#include <stdio.h>
#include <stdlib.h>

/* How long past a deadline the private loop waits for the connection's own timer. */
#define GRACE_NS (100 * NS_PER_MS)

struct redis_sync {
    loop_t *loop;
    redis_conn_t *conn;
};

typedef struct {
    int done;
    redisReply *reply;
    char *err;
    size_t errlen;
} call_t;

/* Run s's loop until *done or the connection failed, for at most budget_ns (the
 * connection's own deadlines fire first; this is the backstop). 0, or -1 when the
 * budget ran out or the loop failed. */
static int run_until(redis_sync_t *s, const int *done, int64_t budget_ns)
{
    int64_t end = clock_mono_ns() + budget_ns + GRACE_NS;
    while (!*done) {
        int64_t left = end - clock_mono_ns();
        if (left <= 0 || loop_run_once(s->loop, left) < 0)
            return -1;
    }
    return 0;
}

static void on_reply(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    (void)conn;
    call_t *call = arg;
    call->done = 1;
    call->reply = reply;
    if (!reply)
        snprintf(call->err, call->errlen, "%s", err);
}

redisReply *redis_sync_command(redis_sync_t *s, int argc, const char *const *argv, const size_t *lens,
                               int64_t timeout_ns, char *err, size_t errlen)
{
    call_t call = {0, NULL, err, errlen};
    if (!s->conn) {
        snprintf(err, errlen, "the connection was closed after a wait without an answer");
        return NULL;
    }
    if (redis_conn_command(s->conn, argc, argv, lens, timeout_ns, on_reply, &call)) {
        snprintf(err, errlen, "%s: a command of %d arguments, or out of memory", redis_conn_addr(s->conn), argc);
        return NULL;
    }
    if (run_until(s, &call.done, timeout_ns)) {
        /* The backstop: the loop failed; the connection cannot be trusted any more. */
        snprintf(err, errlen, "%s: %s: the wait ended without an answer", redis_conn_addr(s->conn),
                 argc > 0 ? argv[0] : "");
        redis_conn_destroy(&s->conn);
        return NULL;
    }
    return call.reply;
}

/* One reply of a pipeline: its slot, and the count of those still to come. */
typedef struct {
    redisReply **slot;
    size_t *left;
    char *err;
    size_t errlen;
} piped_t;

static void on_piped(redis_conn_t *conn, redisReply *reply, const char *err, void *arg)
{
    (void)conn;
    piped_t *p = arg;
    *p->slot = reply;
    if (!reply && !*p->err)
        snprintf(p->err, p->errlen, "%s", err);
    (*p->left)--;
}

int redis_sync_pipeline(redis_sync_t *s, size_t n, const int *argcs, const char *const *const *argvs,
                        const size_t *const *lenss, int64_t timeout_ns, redisReply **replies, char *err,
                        size_t errlen)
{
    piped_t *calls = calloc(n ? n : 1, sizeof(*calls));
    size_t left = 0;
    int rc = 0;
    err[0] = '\0';
    if (!calls || !s->conn) {
        snprintf(err, errlen, "%s", calls ? "the connection was closed after a wait without an answer"
                                          : "out of memory");
        free(calls);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        replies[i] = NULL;
        calls[i] = (piped_t){&replies[i], &left, err, errlen};
        if (redis_conn_command(s->conn, argcs[i], argvs[i], lenss ? lenss[i] : NULL, timeout_ns, on_piped,
                               &calls[i])) {
            snprintf(err, errlen, "%s: a command of %d arguments, or out of memory", redis_conn_addr(s->conn),
                     argcs[i]);
            redis_conn_destroy(&s->conn); /* the queued ones end without a callback */
            rc = -1;
            break;
        }
        left++;
    }
    if (!rc && left > 0) {
        /* run until every reply came: done when left reaches 0 */
        int64_t end = clock_mono_ns() + timeout_ns + GRACE_NS;
        while (left > 0) {
            int64_t wait = end - clock_mono_ns();
            if (wait <= 0 || loop_run_once(s->loop, wait) < 0) {
                snprintf(err, errlen, "%s: a pipeline of %zu: the wait ended without every answer",
                         redis_conn_addr(s->conn), n);
                redis_conn_destroy(&s->conn);
                rc = -1;
                break;
            }
        }
    }
    for (size_t i = 0; i < n && !rc; i++)
        rc = replies[i] ? 0 : -1;
    if (rc)
        for (size_t i = 0; i < n; i++)
            if (replies[i]) {
                freeReplyObject(replies[i]);
                replies[i] = NULL;
            }
    free(calls);
    return rc;
}

/* 1 once the connection is READY or FAILED. */
static int settled(const redis_conn_t *c)
{
    return redis_conn_state(c) >= REDIS_CONN_READY;
}

redis_sync_t *redis_sync_open(const redis_conn_opts_t *opts, char *err, size_t errlen)
{
    redis_sync_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->loop = loop_new()) || !(s->conn = redis_conn_new(s->loop, opts))) {
        snprintf(err, errlen, "connect: out of memory");
        redis_sync_close(&s);
        return NULL;
    }
    int64_t end = clock_mono_ns() + (opts->connect_timeout_ns > 0 ? opts->connect_timeout_ns : 2 * NS_PER_SEC) +
                  GRACE_NS;
    while (!settled(s->conn) && clock_mono_ns() < end)
        if (loop_run_once(s->loop, end - clock_mono_ns()) < 0)
            break;
    if (redis_conn_state(s->conn) != REDIS_CONN_READY) {
        snprintf(err, errlen, "%s", *redis_conn_error(s->conn) ? redis_conn_error(s->conn) : "connect: no answer");
        redis_sync_close(&s);
        return NULL;
    }
    return s;
}

void redis_sync_close(redis_sync_t **s_p)
{
    if (!s_p || !*s_p)
        return;
    redis_sync_t *s = *s_p;
    redis_conn_destroy(&s->conn);
    loop_destroy(&s->loop);
    free(s);
    *s_p = NULL;
}

redisReply *redis_sync_once(const redis_conn_opts_t *opts, int argc, const char *const *argv, const size_t *lens,
                            int64_t timeout_ns, char *err, size_t errlen)
{
    redis_sync_t *s = redis_sync_open(opts, err, errlen);
    redisReply *r = s ? redis_sync_command(s, argc, argv, lens, timeout_ns, err, errlen) : NULL;
    redis_sync_close(&s);
    return r;
}
