/* ownwrite: see ownwrite.h. */
#include "ownwrite.h"

#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *key;                  /* the map's key: stored here */
    char rv[OWNWRITE_RV_MAX];
    int64_t deadline_ns;
    int held;                   /* dispatch skipped the key for it */
} expect_t;

/* informerd asks ownwrite_expire and ownwrite_next_deadline at every turn of its loop:
 * both answer from two bounds without walking the map, which is walked only when one is
 * due (an expectation's deadline came) or stale (a held one went). */
struct ownwrite {
    hm_t *map;                  /* key -> expect_t */
    size_t max;
    int64_t earliest;           /* no deadline is before it (INT64_MAX: none) */
    int64_t held_next;          /* the earliest deadline of a held one (0: none), */
    int held_stale;             /* unless a held one went or moved since: walk again */
};

ownwrite_t *ownwrite_new(size_t max)
{
    ownwrite_t *w = calloc(1, sizeof(*w));
    if (w && !(w->map = hm_new(64))) {
        free(w);
        return NULL;
    }
    if (w) {
        w->max = max;
        w->earliest = INT64_MAX;
    }
    return w;
}

static void expect_free(void *v)
{
    expect_t *e = v;
    if (e)
        free(e->key);
    free(e);
}

/* Remove e (key's) from the map and free it. */
static void forget(ownwrite_t *w, expect_t *e)
{
    if (e->held)
        w->held_stale = 1;
    hm_remove(w->map, e->key); /* allowed while iterating */
    expect_free(e);
}

void ownwrite_destroy(ownwrite_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    hm_destroy_with(&(*self_p)->map, expect_free);
    free(*self_p);
    *self_p = NULL;
}

/* A decimal integer that fits in 64 bits into *n: 1, or 0. */
static int decimal(const char *s, uint64_t *n)
{
    uint64_t v = 0;
    if (!s || !*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *n = v;
    return 1;
}

/* 1 when have (what the cache holds) is want or newer (ownwrite.h). */
static int at_least(const char *have, const char *want)
{
    uint64_t h, w;
    if (!have)
        return 0;
    if (!strcmp(have, want))
        return 1;
    return decimal(have, &h) && decimal(want, &w) && h > w;
}

int ownwrite_expect(ownwrite_t *w, const char *key, const char *rv, const char *cached_rv, int64_t deadline_ns)
{
    if (!w || !key || !rv || !*rv || strlen(rv) >= OWNWRITE_RV_MAX)
        return 0;
    expect_t *e = hm_get(w->map, key);
    if (at_least(cached_rv, rv)) {
        if (e)
            forget(w, e); /* an older expectation is met too */
        return 0;
    }
    if (!e) {
        if (hm_count(w->map) >= w->max || !(e = calloc(1, sizeof(*e))) || !(e->key = strdup(key)) ||
            hm_put(w->map, e->key, e, NULL)) {
            expect_free(e);
            return 0;
        }
    }
    memcpy(e->rv, rv, strlen(rv) + 1);
    if (e->held && e->deadline_ns != deadline_ns)
        w->held_stale = 1;
    e->deadline_ns = deadline_ns;
    if (deadline_ns < w->earliest)
        w->earliest = deadline_ns;
    return 1;
}

int ownwrite_held(const ownwrite_t *w, const char *key)
{
    const expect_t *e = w && key ? hm_get(w->map, key) : NULL;
    return e && e->held;
}

int ownwrite_seen(ownwrite_t *w, const char *key, const char *rv)
{
    expect_t *e = w && key ? hm_get(w->map, key) : NULL;
    if (!e || (rv && !at_least(rv, e->rv)))
        return 0;
    forget(w, e);
    return 1;
}

int ownwrite_may_dispatch(ownwrite_t *w, const char *key, int64_t now_ns)
{
    expect_t *e = w && key ? hm_get(w->map, key) : NULL;
    if (!e || now_ns >= e->deadline_ns)
        return 1;
    if (!e->held && (!w->held_next || e->deadline_ns < w->held_next))
        w->held_next = e->deadline_ns;
    e->held = 1;
    return 0;
}

size_t ownwrite_expire(ownwrite_t *w, int64_t now_ns, void (*due)(const char *key, void *arg), void *arg)
{
    if (!w || now_ns < w->earliest)
        return 0;
    size_t n = 0;
    int64_t earliest = INT64_MAX;
    hm_iter_t it = HM_ITER_INIT;
    void *v;
    while (hm_next(w->map, &it, NULL, &v)) {
        expect_t *e = v;
        if (e->deadline_ns > now_ns) {
            if (e->deadline_ns < earliest)
                earliest = e->deadline_ns;
            continue;
        }
        if (e->held && due)
            due(e->key, arg);
        forget(w, e);
        n++;
    }
    w->earliest = earliest;
    return n;
}

int64_t ownwrite_next_deadline(ownwrite_t *w)
{
    if (!w || !w->held_stale)
        return w ? w->held_next : 0;
    int64_t next = 0;
    hm_iter_t it = HM_ITER_INIT;
    void *v;
    while (hm_next(w->map, &it, NULL, &v)) {
        const expect_t *e = v;
        if (e->held && (!next || e->deadline_ns < next))
            next = e->deadline_ns;
    }
    w->held_next = next;
    w->held_stale = 0;
    return next;
}

size_t ownwrite_count(const ownwrite_t *w)
{
    return w ? hm_count(w->map) : 0;
}
