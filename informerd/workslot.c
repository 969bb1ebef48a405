#include "workslot.h"

#include <string.h>

static int clamp(int64_t cap)
{
    return cap < 1 ? 1 : cap > WORKSLOT_MAX ? WORKSLOT_MAX : (int)cap;
}

void workslot_init(workslot_t *s, int64_t cap)
{
    memset(s, 0, sizeof(*s));
    s->capacity = clamp(cap);
}

void workslot_set_capacity(workslot_t *s, int64_t cap)
{
    s->capacity = clamp(cap);
}

int workslot_room(const workslot_t *s)
{
    if (s->alone)
        return 0;
    return s->n < s->capacity ? s->capacity - s->n : 0;
}

static int find(const workslot_t *s, const char *key)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->key[i], key) == 0)
            return i;
    return -1;
}

int workslot_hold(workslot_t *s, const char *key, int64_t now_ns, int alone)
{
    size_t len = strlen(key);
    if (!workslot_room(s) || (alone && s->n) || len >= WORKSLOT_KEY_MAX || find(s, key) >= 0)
        return -1;
    s->alone = alone;
    memcpy(s->key[s->n], key, len + 1);
    s->since_ns[s->n] = now_ns;
    s->n++;
    return 0;
}

int workslot_release(workslot_t *s, const char *key)
{
    int i = find(s, key);
    if (i < 0)
        return -1;
    s->n--;
    if (i != s->n) {
        memcpy(s->key[i], s->key[s->n], sizeof(s->key[i]));
        s->since_ns[i] = s->since_ns[s->n];
    }
    s->key[s->n][0] = '\0';
    if (!s->n)
        s->alone = 0;
    return 0;
}

int workslot_holds(const workslot_t *s, const char *key)
{
    return find(s, key) >= 0;
}

int64_t workslot_oldest(const workslot_t *s)
{
    int64_t t = 0;
    for (int i = 0; i < s->n; i++)
        if (!t || s->since_ns[i] < t)
            t = s->since_ns[i];
    return t;
}
