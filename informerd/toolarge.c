/* toolarge: objects kept in minimal form. See toolarge.h. */
#include "toolarge.h"

#include <stdlib.h>
#include <string.h>

/* One queued object: "kind\0key\0" in one allocation. */
struct toolarge {
    char **ring;
    size_t max, head, n;
};

const char *toolarge_reason(const cache_item_t *it)
{
    return it->truncated == 1 ? "response_cap" : "max_object_bytes";
}

const cache_item_t *toolarge_blocker(const cache_t *c, const cache_item_t *rc)
{
    static const char *const kinds[] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget"};
    if (rc->deleting)
        return NULL;
    if (rc->truncated)
        return rc;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const cache_item_t *ch = cache_lookup(c, kinds[i], rc->key);
        if (ch && ch->truncated)
            return ch;
    }
    return NULL;
}

toolarge_t *toolarge_new(size_t max)
{
    toolarge_t *q = calloc(1, sizeof(*q));
    if (!q || !max)
        goto fail;
    q->ring = calloc(max, sizeof(*q->ring));
    if (!q->ring)
        goto fail;
    q->max = max;
    return q;
fail:
    free(q);
    return NULL;
}

int toolarge_push(toolarge_t *q, const char *kind, const char *key)
{
    if (q->n == q->max)
        return 1;
    size_t lk = strlen(kind) + 1, lkey = strlen(key) + 1;
    char *entry = malloc(lk + lkey);
    if (!entry)
        return -1;
    memcpy(entry, kind, lk);
    memcpy(entry + lk, key, lkey);
    q->ring[(q->head + q->n++) % q->max] = entry;
    return 0;
}

size_t toolarge_drain(toolarge_t *q, size_t n, void (*fn)(void *arg, const char *kind, const char *key),
                      void *arg)
{
    size_t taken = 0;
    for (; taken < n && q->n; taken++) {
        char *entry = q->ring[q->head];
        q->head = (q->head + 1) % q->max;
        q->n--;
        fn(arg, entry, entry + strlen(entry) + 1);
        free(entry);
    }
    return taken;
}

size_t toolarge_count(const toolarge_t *q)
{
    return q->n;
}

void toolarge_destroy(toolarge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    toolarge_t *q = *self_p;
    for (; q->n; q->n--, q->head = (q->head + 1) % q->max)
        free(q->ring[q->head]);
    free(q->ring);
    free(q);
    *self_p = NULL;
}
