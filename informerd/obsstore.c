/* obsstore: the latest observation per RedisCluster. See obsstore.h. */
#include "obsstore.h"

#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *key; /* the map's key lives here (hashmap.h) */
    char *json;
    size_t len;
} observation_t;

struct obsstore {
    hm_t *by_key; /* key -> observation_t */
};

static void observation_free(void *p)
{
    observation_t *o = p;
    if (!o)
        return;
    free(o->key);
    free(o->json);
    free(o);
}

obsstore_t *obsstore_new(void)
{
    obsstore_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->by_key = hm_new(0);
    if (!s->by_key) {
        free(s);
        return NULL;
    }
    return s;
}

int obsstore_put(obsstore_t *s, const char *key, const char *json, size_t len)
{
    if (!key)
        return -1;
    observation_t *o = calloc(1, sizeof(*o));
    if (o) {
        o->key = strdup(key);
        o->json = malloc(len + 1);
        o->len = len;
    }
    /* Room first, so that the put below cannot fail with o half-owned. */
    if (!o || !o->key || !o->json || hm_reserve(s->by_key, hm_count(s->by_key) + 1)) {
        observation_free(o);
        return -1;
    }
    memcpy(o->json, json, len);
    o->json[len] = '\0';
    void *old = NULL;
    hm_put(s->by_key, o->key, o, &old);
    observation_free(old);
    return 0;
}

const char *obsstore_get(const obsstore_t *s, const char *key, size_t *len)
{
    const observation_t *o = key ? hm_get(s->by_key, key) : NULL;
    if (len)
        *len = o ? o->len : 0;
    return o ? o->json : NULL;
}

void obsstore_forget(obsstore_t *s, const char *key)
{
    if (key)
        observation_free(hm_remove(s->by_key, key));
}

size_t obsstore_count(const obsstore_t *s)
{
    return hm_count(s->by_key);
}

void obsstore_destroy(obsstore_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    hm_destroy_with(&(*self_p)->by_key, observation_free);
    free(*self_p);
    *self_p = NULL;
}
