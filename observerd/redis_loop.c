#include "redis_loop.h"

#include <stdlib.h>

typedef struct {
    redisAsyncContext *ac;
    loop_t *loop;
    int fd;
    int events;      /* LOOP_IN | LOOP_OUT wanted now */
    int registered;  /* the fd is on the loop */
    int in_handler;  /* on_ready is running: defer the free */
    int dead;        /* cleanup ran: ac is gone */
} redis_loop_ev_t;

static int on_ready(loop_t *loop, void *socket, int fd, int revents, void *arg);

/* Make the loop watch exactly e->events on e->fd. Out of memory leaves the fd unwatched:
 * the caller's timeout then frees the context. */
static void apply(redis_loop_ev_t *e)
{
    if (!e->events) {
        if (e->registered)
            loop_remove_fd(e->loop, e->fd);
        e->registered = 0;
        return;
    }
    if (e->registered && loop_set_fd_events(e->loop, e->fd, e->events) == 0)
        return;
    e->registered = loop_add_fd(e->loop, e->fd, e->events, on_ready, e) == 0;
}

/* Start (on) or stop wanting the events in bit on e's fd. */
static void want(redis_loop_ev_t *e, int bit, int on)
{
    e->events = on ? e->events | bit : e->events & ~bit;
    apply(e);
}

/* hiredis's four event hooks, each one want() call. */
static void add_read(void *p) { want(p, LOOP_IN, 1); }
static void del_read(void *p) { want(p, LOOP_IN, 0); }
static void add_write(void *p) { want(p, LOOP_OUT, 1); }
static void del_write(void *p) { want(p, LOOP_OUT, 0); }

static void cleanup(void *p)
{
    redis_loop_ev_t *e = p;
    e->events = 0;
    apply(e);
    e->dead = 1;
    e->ac = NULL;
    if (!e->in_handler)
        free(e);
}

static int on_ready(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop;
    (void)socket;
    (void)fd;
    redis_loop_ev_t *e = arg;
    e->in_handler = 1;
    /* An error or hang-up is read: hiredis then sees the failure and disconnects. */
    if (revents & (LOOP_IN | LOOP_ERR))
        redisAsyncHandleRead(e->ac);
    if (!e->dead && (revents & LOOP_OUT))
        redisAsyncHandleWrite(e->ac);
    e->in_handler = 0;
    if (e->dead)
        free(e);
    return 0;
}

int redis_loop_attach(redisAsyncContext *ac, loop_t *loop)
{
    if (!ac || !loop || ac->ev.data)
        return -1;
    redis_loop_ev_t *e = calloc(1, sizeof(*e));
    if (!e)
        return -1;
    e->ac = ac;
    e->loop = loop;
    e->fd = ac->c.fd;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    ac->ev.data = e;
    /* As hiredis's adapters: watch both at once; writability completes the connect. */
    e->events = LOOP_IN | LOOP_OUT;
    apply(e);
    if (!e->registered) {
        ac->ev.addRead = ac->ev.delRead = ac->ev.addWrite = ac->ev.delWrite = NULL;
        ac->ev.cleanup = NULL;
        ac->ev.data = NULL;
        free(e);
        return -1;
    }
    return 0;
}
