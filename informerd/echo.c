/* echo: see echo.h. */
#include "echo.h"

#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

typedef char rv_t[ECHO_RV_MAX];

/* A child's version: a write DONE named, or a change that came in flight. */
typedef struct {
    char *kind;                         /* one allocation: the kind, then the name */
    const char *name;
    rv_t rv;
    int seen;                           /* a write's echo came */
    int64_t at;                         /* a change's arrival */
} child_t;

typedef struct {
    child_t *v;                         /* up to max */
    size_t n;
} children_t;

typedef struct {
    char *key;                          /* the map's key: stored here */
    int flying;                         /* 1: between flight_begin and flight_end */
    rv_t known[1 + ECHO_WRITES_MAX];    /* the version read, then the writes' */
    int seen[1 + ECHO_WRITES_MAX];      /* a write's echo came */
    size_t nknown;
    struct {
        rv_t from, to;
    } deferred[ECHO_DEFER_MAX];         /* the MODIFIEDs of the flight */
    size_t ndeferred;
    children_t written;                 /* the child writes DONE named */
    children_t came;                    /* the children's changes of the flight */
} track_t;

struct echo {
    hm_t *map; /* key -> track_t */
    size_t max;
};

echo_t *echo_new(size_t max)
{
    echo_t *e = calloc(1, sizeof(*e));
    if (e && !(e->map = hm_new(64))) {
        free(e);
        return NULL;
    }
    if (e)
        e->max = max;
    return e;
}

static void children_clear(children_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].kind);
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

/* Add kind/name at rv (at) to c, which holds at most max: 0, or -1 when full, too long
 * or out of memory (c unchanged). */
static int children_add(children_t *c, size_t max, const char *kind, const char *name, const char *rv, int64_t at)
{
    size_t kl = kind ? strlen(kind) : 0, nl = name ? strlen(name) : 0;
    if (c->n == max || !kl || !nl || !rv || !*rv || strlen(rv) >= ECHO_RV_MAX)
        return -1;
    if (!c->v && !(c->v = calloc(max, sizeof(*c->v))))
        return -1;
    char *both = malloc(kl + nl + 2);
    if (!both)
        return -1;
    memcpy(both, kind, kl + 1);
    memcpy(both + kl + 1, name, nl + 1);
    child_t *ch = &c->v[c->n++];
    memset(ch, 0, sizeof(*ch));
    ch->kind = both;
    ch->name = both + kl + 1;
    memcpy(ch->rv, rv, strlen(rv) + 1);
    ch->at = at;
    return 0;
}

/* The write of c that kind/name at rv echoes, or NULL. */
static child_t *children_find(children_t *c, const char *kind, const char *name, const char *rv)
{
    for (size_t i = 0; kind && name && rv && i < c->n; i++)
        if (!strcmp(c->v[i].kind, kind) && !strcmp(c->v[i].name, name) && !strcmp(c->v[i].rv, rv))
            return &c->v[i];
    return NULL;
}

static void track_free(void *v)
{
    track_t *t = v;
    if (t) {
        free(t->key);
        children_clear(&t->written);
        children_clear(&t->came);
    }
    free(t);
}

void echo_destroy(echo_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    hm_destroy_with(&(*self_p)->map, track_free);
    free(*self_p);
    *self_p = NULL;
}

void echo_forget(echo_t *e, const char *key)
{
    if (e && key)
        track_free(hm_remove(e->map, key));
}

size_t echo_count(const echo_t *e)
{
    return e ? hm_count(e->map) : 0;
}

/* A version that fits: 1, else 0 (NULL and "" do not). */
static int fits(const char *rv)
{
    return rv && *rv && strlen(rv) < ECHO_RV_MAX;
}

int echo_flight_begin(echo_t *e, const char *key, const char *read_rv)
{
    if (!e || !key)
        return 0;
    track_t *t = hm_get(e->map, key);
    if (!fits(read_rv) || (!t && hm_count(e->map) >= e->max)) {
        echo_forget(e, key);
        return 0;
    }
    if (!t) {
        t = calloc(1, sizeof(*t));
        char *k = t ? strdup(key) : NULL;
        if (!k || hm_put(e->map, k, t, NULL)) {
            free(k);
            free(t);
            return 0;
        }
        t->key = k;
    }
    char *k = t->key;
    children_clear(&t->written);
    children_clear(&t->came);
    memset(t, 0, sizeof(*t));
    t->key = k;
    t->flying = 1;
    memcpy(t->known[0], read_rv, strlen(read_rv) + 1);
    t->seen[0] = 1; /* the version read is no write: nothing to await */
    t->nknown = 1;
    return 1;
}

/* The index of rv in t's known versions, or -1. */
static int known_at(const track_t *t, const char *rv)
{
    for (size_t i = 0; rv && i < t->nknown; i++)
        if (strcmp(t->known[i], rv) == 0)
            return (int)i;
    return -1;
}

/* old_rv -> new_rv is an echo of t's writes: marks the write's echo seen; 1, else 0. */
static int own(track_t *t, const char *old_rv, const char *new_rv)
{
    int to = known_at(t, new_rv);
    if (to < 1 || known_at(t, old_rv) < 0) /* to 0: the version read is nobody's write here */
        return 0;
    t->seen[to] = 1;
    return 1;
}

/* Every write's echo came: nothing more to recognise. */
static int all_seen(const track_t *t)
{
    for (size_t i = 0; i < t->nknown; i++)
        if (!t->seen[i])
            return 0;
    for (size_t i = 0; i < t->written.n; i++)
        if (!t->written.v[i].seen)
            return 0;
    return 1;
}

echo_answer_t echo_delta(echo_t *e, const char *key, const char *old_rv, const char *new_rv)
{
    track_t *t = e && key ? hm_get(e->map, key) : NULL;
    if (!t)
        return ECHO_QUEUE;
    if (t->flying) {
        if (t->ndeferred == ECHO_DEFER_MAX || !fits(old_rv) || !fits(new_rv)) {
            echo_forget(e, key); /* judged now: the key is queued, and then all of it read */
            return ECHO_QUEUE;
        }
        memcpy(t->deferred[t->ndeferred].from, old_rv, strlen(old_rv) + 1);
        memcpy(t->deferred[t->ndeferred].to, new_rv, strlen(new_rv) + 1);
        t->ndeferred++;
        return ECHO_DEFER;
    }
    if (!own(t, old_rv, new_rv)) {
        echo_forget(e, key); /* somebody else's: from now on, every change counts */
        return ECHO_QUEUE;
    }
    if (all_seen(t))
        echo_forget(e, key);
    return ECHO_OWN;
}

echo_answer_t echo_child_delta(echo_t *e, const char *key, const char *kind, const char *name, const char *rv,
                               int64_t at_ns)
{
    track_t *t = e && key ? hm_get(e->map, key) : NULL;
    if (!t)
        return ECHO_QUEUE;
    if (t->flying)
        return children_add(&t->came, ECHO_DEFER_MAX, kind, name, rv, at_ns) ? ECHO_QUEUE : ECHO_DEFER;
    child_t *w = children_find(&t->written, kind, name, rv);
    if (!w)
        return ECHO_QUEUE; /* a change: the writes named may still echo, each by its version */
    w->seen = 1;
    if (all_seen(t))
        echo_forget(e, key);
    return ECHO_OWN;
}

/* DONE named children[0..n): kept (past ECHO_CHILD_WRITES_MAX, or one that does not fit,
 * not: its echo queues). */
static void keep_child_writes(track_t *t, const echo_child_t *children, size_t n)
{
    for (size_t i = 0; children && i < n; i++)
        (void)children_add(&t->written, ECHO_CHILD_WRITES_MAX, children[i].kind, children[i].name, children[i].rv, 0);
}

/* The children's changes of the flight: each that echoes no write named goes to fn.
 * Returns 1 when one was no echo and there is no fn, else 0. */
static int judge_children(track_t *t, echo_queue_fn *fn, void *arg)
{
    int queue = 0;
    for (size_t i = 0; i < t->came.n; i++) {
        const child_t *c = &t->came.v[i];
        child_t *w = children_find(&t->written, c->kind, c->name, c->rv);
        if (w)
            w->seen = 1;
        else if (fn)
            fn(arg, c->kind, c->at);
        else
            queue = 1;
    }
    children_clear(&t->came);
    return queue;
}

int echo_flight_end(echo_t *e, const char *key, const char *const *written, size_t n, const echo_child_t *children,
                    size_t nchildren, echo_queue_fn *fn, void *arg)
{
    track_t *t = e && key ? hm_get(e->map, key) : NULL;
    if (!t || !t->flying)
        return 0; /* not tracked: its changes were queued as they came */
    for (size_t i = 0; i < n && t->nknown < 1 + ECHO_WRITES_MAX; i++) {
        if (!fits(written[i]) || known_at(t, written[i]) >= 0)
            continue;
        memcpy(t->known[t->nknown], written[i], strlen(written[i]) + 1);
        t->seen[t->nknown++] = 0;
    }
    keep_child_writes(t, children, nchildren);
    t->flying = 0;
    int queue = judge_children(t, fn, arg);
    for (size_t i = 0; i < t->ndeferred && !queue; i++)
        queue = !own(t, t->deferred[i].from, t->deferred[i].to);
    t->ndeferred = 0;
    if (queue || all_seen(t))
        echo_forget(e, key);
    return queue;
}
