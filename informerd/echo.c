/* echo: see echo.h. */
#include "echo.h"

#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

typedef char rv_t[ECHO_RV_MAX];

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

static void track_free(void *v)
{
    track_t *t = v;
    if (t)
        free(t->key);
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

int echo_flight_end(echo_t *e, const char *key, const char *const *written, size_t n)
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
    t->flying = 0;
    int queue = 0;
    for (size_t i = 0; i < t->ndeferred && !queue; i++)
        queue = !own(t, t->deferred[i].from, t->deferred[i].to);
    t->ndeferred = 0;
    if (queue || all_seen(t))
        echo_forget(e, key);
    return queue;
}
