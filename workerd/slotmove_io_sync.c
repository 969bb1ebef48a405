/* slotmove on real connections (redis_sync.h): slotmove_run_sync. See slotmove.h. */
#include "slotmove.h"

#include "clock.h"
#include "redis_sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMMAND_TIMEOUT_NS (INT64_C(2000000000))

typedef struct {
    const slotmove_job_t *job;
    redis_conn_opts_t opts;
    redis_sync_t *source, *target, *other; /* the others one at a time: each gets one command per slot */
    int other_at;                          /* the index other is open to, -1 none */
} sync_io_t;

static const slotmove_node_t *node_of(const sync_io_t *s, int to)
{
    return to == SLOTMOVE_TO_SOURCE ? &s->job->source : to == SLOTMOVE_TO_TARGET ? &s->job->target
                                                                                 : &s->job->others[to];
}

/* The open connection to node to, opened when needed; NULL with err. */
static redis_sync_t *conn_to(sync_io_t *s, int to, char *err, size_t errlen)
{
    redis_sync_t **c = to == SLOTMOVE_TO_SOURCE ? &s->source : to == SLOTMOVE_TO_TARGET ? &s->target : &s->other;
    if (c == &s->other && s->other_at != to)
        redis_sync_close(&s->other);
    if (!*c) {
        redis_conn_opts_t o = s->opts;
        o.host = node_of(s, to)->ip;
        o.port = node_of(s, to)->port;
        *c = redis_sync_open(&o, err, errlen);
        if (c == &s->other)
            s->other_at = *c ? to : -1;
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
    if (!r && c) { /* a failed connection stays failed: the next command opens another */
        redis_sync_t **slot = to == SLOTMOVE_TO_SOURCE ? &s->source : to == SLOTMOVE_TO_TARGET ? &s->target : &s->other;
        redis_sync_close(slot);
    }
    return r;
}

static int sync_sizes(void *user, const redisReply *keys, int64_t *sizes, char *err, size_t errlen)
{
    sync_io_t *s = user;
    size_t n = keys->elements < SLOTMOVE_MAX_KEYS ? keys->elements : SLOTMOVE_MAX_KEYS;
    redis_sync_t *c = conn_to(s, SLOTMOVE_TO_SOURCE, err, errlen);
    int argcs[SLOTMOVE_MAX_KEYS];
    const char *const *argvs[SLOTMOVE_MAX_KEYS];
    const size_t *lenss[SLOTMOVE_MAX_KEYS];
    const char *(*av)[3] = calloc(n ? n : 1, sizeof(*av));
    size_t(*lv)[3] = calloc(n ? n : 1, sizeof(*lv));
    redisReply **rs = calloc(n ? n : 1, sizeof(*rs));
    int rc = -1;
    if (!c || !av || !lv || !rs) {
        if (c)
            snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        av[i][0] = "MEMORY";
        av[i][1] = "USAGE";
        av[i][2] = keys->element[i]->str;
        lv[i][0] = 6;
        lv[i][1] = 5;
        lv[i][2] = keys->element[i]->len;
        argcs[i] = 3;
        argvs[i] = av[i];
        lenss[i] = lv[i];
    }
    if (redis_sync_pipeline(c, n, argcs, argvs, lenss, COMMAND_TIMEOUT_NS, rs, err, errlen)) {
        redis_sync_close(&s->source);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        sizes[i] = rs[i]->type == REDIS_REPLY_INTEGER ? rs[i]->integer : 0; /* nil: gone since */
        freeReplyObject(rs[i]);
    }
    rc = 0;
out:
    free(av);
    free(lv);
    free(rs);
    return rc;
}

static int64_t sync_now(void *user)
{
    (void)user;
    return clock_mono_ns();
}

int slotmove_run_sync(const slotmove_job_t *job, const char *password, const char *password_fallback,
                      slotmove_progress_t *progress, char *err, size_t errlen)
{
    sync_io_t s = {.job = job, .other_at = -1};
    s.opts.connect_timeout_ns = COMMAND_TIMEOUT_NS;
    s.opts.password = password;
    s.opts.password_fallback = password_fallback;
    slotmove_io_t io = {sync_command, sync_sizes, sync_now, &s};
    int rc = slotmove_run(job, &io, password, progress, err, errlen);
    redis_sync_close(&s.source);
    redis_sync_close(&s.target);
    redis_sync_close(&s.other);
    return rc;
}
