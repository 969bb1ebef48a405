#include "loop.h"

#include "clock.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

typedef struct {
    void *socket; /* NULL for an fd reader */
    int fd;
    int events; /* LOOP_* */
    loop_reader_fn *fn;
    void *arg;
    int dead; /* removed; the slot is reclaimed at the end of the turn */
} reader_t;

typedef struct {
    int id;
    int64_t when;
    int64_t interval;
    loop_timer_fn *fn;
    void *arg;
    int dead;
} timer_t_;

typedef struct {
    loop_prepare_fn *fn;
    void *arg;
} prepare_t;

struct loop {
    reader_t *readers;
    int nreaders, readers_cap;
    timer_t_ *timers;
    int ntimers, timers_cap;
    prepare_t *prepares;
    int nprepares, prepares_cap;
    int next_timer_id;
    int stopping;
    int in_turn; /* a turn is running: removals only mark, compaction waits */
    loop_clock_fn *clock;
    void *clock_arg;
    zmq_pollitem_t *items; /* this turn's poll set */
    int *item_reader;      /* items[i] belongs to readers[item_reader[i]] */
    int items_cap;
    char error[160];
};

/* Grow *arr (of elem bytes each) so that it holds at least need; 0 or -1 (unchanged). */
static int grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

loop_t *loop_new(void)
{
    loop_t *loop = calloc(1, sizeof(*loop));
    if (loop)
        loop->next_timer_id = 1;
    return loop;
}

void loop_destroy(loop_t **loop_p)
{
    if (!loop_p || !*loop_p)
        return;
    loop_t *loop = *loop_p;
    assert(!loop->in_turn);
    free(loop->readers);
    free(loop->timers);
    free(loop->prepares);
    free(loop->items);
    free(loop->item_reader);
    free(loop);
    *loop_p = NULL;
}

void loop_set_clock(loop_t *loop, loop_clock_fn *clock, void *arg)
{
    loop->clock = clock;
    loop->clock_arg = arg;
}

int64_t loop_now(const loop_t *loop)
{
    return loop->clock ? loop->clock(loop->clock_arg) : clock_mono_ns();
}

/* The live reader watching socket (or fd when socket is NULL), or -1. */
static int find_reader(const loop_t *loop, void *socket, int fd)
{
    for (int i = 0; i < loop->nreaders; i++) {
        const reader_t *r = &loop->readers[i];
        if (!r->dead && r->socket == socket && (socket || r->fd == fd))
            return i;
    }
    return -1;
}

static int add_reader(loop_t *loop, void *socket, int fd, int events, loop_reader_fn *fn,
                      void *arg)
{
    if (grow((void **)&loop->readers, &loop->readers_cap, loop->nreaders + 1, sizeof(reader_t)))
        return -1;
    /* A second registration replaces the first. The old slot is only marked, so a turn in
     * progress never calls the old handler with the new argument or the reverse. */
    int old = find_reader(loop, socket, fd);
    if (old >= 0)
        loop->readers[old].dead = 1;
    loop->readers[loop->nreaders++] = (reader_t){socket, socket ? -1 : fd, events, fn, arg, 0};
    return 0;
}

int loop_add_socket(loop_t *loop, void *socket, int events, loop_reader_fn *fn, void *arg)
{
    assert(socket && fn);
    return add_reader(loop, socket, -1, events, fn, arg);
}

int loop_add_fd(loop_t *loop, int fd, int events, loop_reader_fn *fn, void *arg)
{
    assert(fd >= 0 && fn);
    return add_reader(loop, NULL, fd, events, fn, arg);
}

int loop_set_fd_events(loop_t *loop, int fd, int events)
{
    int i = find_reader(loop, NULL, fd);
    if (i < 0)
        return -1;
    loop->readers[i].events = events;
    return 0;
}

void loop_remove_socket(loop_t *loop, void *socket)
{
    int i = find_reader(loop, socket, -1);
    if (i >= 0)
        loop->readers[i].dead = 1;
}

void loop_remove_fd(loop_t *loop, int fd)
{
    int i = find_reader(loop, NULL, fd);
    if (i >= 0)
        loop->readers[i].dead = 1;
}

static int find_timer(const loop_t *loop, int id)
{
    for (int i = 0; i < loop->ntimers; i++)
        if (!loop->timers[i].dead && loop->timers[i].id == id)
            return i;
    return -1;
}

int loop_add_timer(loop_t *loop, int64_t delay_ns, int64_t interval_ns, loop_timer_fn *fn,
                   void *arg)
{
    assert(fn);
    if (grow((void **)&loop->timers, &loop->timers_cap, loop->ntimers + 1, sizeof(timer_t_)))
        return -1;
    int id = loop->next_timer_id++;
    if (loop->next_timer_id == INT_MAX)
        loop->next_timer_id = 1;
    loop->timers[loop->ntimers++] = (timer_t_){id, loop_now(loop) + (delay_ns > 0 ? delay_ns : 0),
                                               interval_ns > 0 ? interval_ns : 0, fn, arg, 0};
    return id;
}

int loop_timer_reset(loop_t *loop, int timer_id, int64_t delay_ns)
{
    int i = find_timer(loop, timer_id);
    if (i < 0)
        return -1;
    loop->timers[i].when = loop_now(loop) + (delay_ns > 0 ? delay_ns : 0);
    return 0;
}

void loop_cancel_timer(loop_t *loop, int timer_id)
{
    int i = find_timer(loop, timer_id);
    if (i >= 0)
        loop->timers[i].dead = 1;
}

int loop_add_prepare(loop_t *loop, loop_prepare_fn *fn, void *arg)
{
    assert(fn);
    if (grow((void **)&loop->prepares, &loop->prepares_cap, loop->nprepares + 1, sizeof(prepare_t)))
        return -1;
    loop->prepares[loop->nprepares++] = (prepare_t){fn, arg};
    return 0;
}

void loop_stop(loop_t *loop)
{
    loop->stopping = 1;
}

const char *loop_error(const loop_t *loop)
{
    return loop->error;
}

int loop_reader_count(const loop_t *loop)
{
    int n = 0;
    for (int i = 0; i < loop->nreaders; i++)
        n += !loop->readers[i].dead;
    return n;
}

int loop_timer_count(const loop_t *loop)
{
    int n = 0;
    for (int i = 0; i < loop->ntimers; i++)
        n += !loop->timers[i].dead;
    return n;
}

static short to_zmq(int events)
{
    return (short)(((events & LOOP_IN) ? ZMQ_POLLIN : 0) | ((events & LOOP_OUT) ? ZMQ_POLLOUT : 0));
}

static int from_zmq(short revents)
{
    return ((revents & ZMQ_POLLIN) ? LOOP_IN : 0) | ((revents & ZMQ_POLLOUT) ? LOOP_OUT : 0) |
           ((revents & ZMQ_POLLERR) ? LOOP_ERR : 0);
}

/* Drop the slots marked dead (between turns only). */
static void compact(loop_t *loop)
{
    int n = 0;
    for (int i = 0; i < loop->nreaders; i++)
        if (!loop->readers[i].dead)
            loop->readers[n++] = loop->readers[i];
    loop->nreaders = n;
    n = 0;
    for (int i = 0; i < loop->ntimers; i++)
        if (!loop->timers[i].dead)
            loop->timers[n++] = loop->timers[i];
    loop->ntimers = n;
}

/* Build the poll set from the live readers. 0, or -1 when out of memory. */
static int build_items(loop_t *loop, int *n_out)
{
    if (grow((void **)&loop->items, &loop->items_cap, loop->nreaders, sizeof(zmq_pollitem_t)))
        return -1;
    /* item_reader grows with items: same capacity, reallocated to match. */
    int *map = realloc(loop->item_reader, (size_t)(loop->items_cap ? loop->items_cap : 1) * sizeof(int));
    if (!map)
        return -1;
    loop->item_reader = map;
    int n = 0;
    for (int i = 0; i < loop->nreaders; i++) {
        const reader_t *r = &loop->readers[i];
        if (r->dead)
            continue;
        loop->items[n] = (zmq_pollitem_t){r->socket, r->socket ? 0 : r->fd, to_zmq(r->events), 0};
        loop->item_reader[n] = i;
        n++;
    }
    *n_out = n;
    return 0;
}

/* Fire the timers due at now, earliest first. Returns 0 or -1 (a handler said stop). */
static int fire_timers(loop_t *loop, int64_t now)
{
    /* The due set is fixed before the first handler runs: a timer added or re-armed for
     * "now" by a handler waits for the next turn. */
    int due[64], ndue = 0;
    for (int i = 0; i < loop->ntimers && ndue < 64; i++)
        if (!loop->timers[i].dead && loop->timers[i].when <= now)
            due[ndue++] = loop->timers[i].id;
    /* Insertion sort by deadline (few timers are ever due at once). */
    for (int a = 1; a < ndue; a++)
        for (int b = a; b > 0; b--) {
            int x = find_timer(loop, due[b - 1]), y = find_timer(loop, due[b]);
            if (loop->timers[x].when <= loop->timers[y].when)
                break;
            int t = due[b - 1];
            due[b - 1] = due[b];
            due[b] = t;
        }
    for (int k = 0; k < ndue; k++) {
        int i = find_timer(loop, due[k]);
        if (i < 0 || loop->timers[i].when > now)
            continue; /* cancelled or moved by an earlier handler */
        timer_t_ *t = &loop->timers[i];
        loop_timer_fn *fn = t->fn;
        void *arg = t->arg;
        if (t->interval > 0) {
            t->when += t->interval;
            if (t->when <= now)
                t->when = now + t->interval; /* fell behind: no burst of catch-up calls */
        } else {
            t->dead = 1;
        }
        if (fn(loop, due[k], arg))
            return -1;
    }
    return 0;
}

int loop_run_once(loop_t *loop, int64_t max_wait_ns)
{
    assert(!loop->in_turn);
    loop->in_turn = 1;
    int rc = 0;
    int64_t now = loop_now(loop);
    int64_t wait = max_wait_ns > 0 ? max_wait_ns : 0;
    for (int i = 0; i < loop->nprepares; i++)
        if (loop->prepares[i].fn(loop, now, &wait, loop->prepares[i].arg)) {
            rc = -1;
            goto out;
        }
    for (int i = 0; i < loop->ntimers; i++) {
        const timer_t_ *t = &loop->timers[i];
        if (!t->dead && t->when - now < wait)
            wait = t->when > now ? t->when - now : 0;
    }
    if (loop->stopping)
        wait = 0;
    int n = 0;
    if (build_items(loop, &n)) {
        snprintf(loop->error, sizeof(loop->error), "out of memory building the poll set");
        rc = -1;
        goto out;
    }
    /* Round up: waking before the earliest deadline would only spin once more. */
    long timeout_ms = (long)((wait + NS_PER_MS - 1) / NS_PER_MS);
    int ready = zmq_poll(loop->items, n, timeout_ms);
    if (ready < 0) {
        if (errno == EINTR)
            goto out;
        snprintf(loop->error, sizeof(loop->error), "zmq_poll: %s", zmq_strerror(errno));
        rc = -1;
        goto out;
    }
    for (int k = 0; k < n && ready > 0; k++) {
        if (!loop->items[k].revents)
            continue;
        ready--;
        int i = loop->item_reader[k];
        reader_t *r = &loop->readers[i];
        if (r->dead)
            continue; /* removed by an earlier handler of this turn */
        if (r->fn(loop, r->socket, r->fd, from_zmq(loop->items[k].revents), r->arg)) {
            rc = -1;
            goto out;
        }
    }
    rc = fire_timers(loop, loop_now(loop));
out:
    compact(loop);
    loop->in_turn = 0;
    return rc;
}

int loop_run(loop_t *loop, int64_t max_wait_ns)
{
    loop->stopping = 0;
    for (;;) {
        if (loop_run_once(loop, max_wait_ns))
            return -1;
        if (loop->stopping) {
            loop->stopping = 0;
            return 0;
        }
    }
}
