#include "existsmemo.h"

#include "hash.h"

#include <stdint.h>
#include <stdlib.h>

struct existsmemo {
    size_t cap, count;
    int saturated;
    uint64_t slot[]; /* hash of the name; 0 = free */
};

existsmemo_t *existsmemo_new(size_t cap)
{
    if (!cap)
        cap = EXISTSMEMO_CAP;
    existsmemo_t *m = calloc(1, sizeof(*m) + cap * sizeof(uint64_t));
    if (m)
        m->cap = cap;
    return m;
}

void existsmemo_destroy(existsmemo_t **m_p)
{
    if (!m_p)
        return;
    free(*m_p);
    *m_p = NULL;
}

static uint64_t key_of(const char *resource, const char *ns, const char *name)
{
    return hash_fnv(hash_fnv(hash_fnv(HASH_FNV_START, resource), ns), name); /* never 0 */
}

/* The slot holding key, or cap when none. */
static size_t find(const existsmemo_t *m, uint64_t key)
{
    size_t i = 0;
    while (i < m->cap && m->slot[i] != key)
        i++;
    return i;
}

int existsmemo_add(existsmemo_t *m, const char *resource, const char *ns, const char *name)
{
    uint64_t key = key_of(resource, ns, name);
    if (find(m, key) < m->cap)
        return 0;
    size_t free_slot = find(m, 0);
    if (free_slot == m->cap) {
        m->saturated = 1;
        return -1;
    }
    m->slot[free_slot] = key;
    m->count++;
    return 0;
}

void existsmemo_drop(existsmemo_t *m, const char *resource, const char *ns, const char *name)
{
    size_t i = find(m, key_of(resource, ns, name));
    if (i < m->cap) {
        m->slot[i] = 0;
        m->count--;
    }
    if (m->count <= m->cap / 2)
        m->saturated = 0;
}

int existsmemo_has(const existsmemo_t *m, const char *resource, const char *ns, const char *name)
{
    return find(m, key_of(resource, ns, name)) < m->cap;
}

int existsmemo_saturated(const existsmemo_t *m)
{
    return m->saturated;
}

size_t existsmemo_count(const existsmemo_t *m)
{
    return m->count;
}
