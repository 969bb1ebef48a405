#include "hashmap.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HM_MIN_CAP 16

/* A removed slot: probing must go on past it, inserts may reuse it. */
static const char hm_tombstone[1];
#define TOMBSTONE ((const char *)hm_tombstone)

typedef struct {
    const char *key; /* NULL = empty, TOMBSTONE = removed */
    void *value;
    uint64_t hash;
} hm_slot_t;

struct hm {
    hm_slot_t *slots;
    size_t cap; /* power of two */
    size_t count;
    size_t tombstones;
};

/* FNV-1a over the bytes, then a 64-bit finaliser (murmur3's fmix64) so that the low bits
 * used for the index depend on every byte of the key. */
static uint64_t hm_hash(const char *key)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= UINT64_C(1099511628211);
    }
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

/* Smallest power-of-two capacity that keeps n entries under the 70% load limit. */
static size_t hm_cap_for(size_t n)
{
    size_t cap = HM_MIN_CAP;
    while (cap / 10 * 7 <= n) {
        if (cap > SIZE_MAX / 4)
            return 0;
        cap *= 2;
    }
    return cap;
}

hm_t *hm_new(size_t expected)
{
    hm_t *m = calloc(1, sizeof(*m));
    size_t cap = hm_cap_for(expected); /* 0: too many to hold */
    if (m && cap)
        m->slots = calloc(cap, sizeof(hm_slot_t));
    if (!m || !m->slots) {
        free(m);
        return NULL;
    }
    m->cap = cap;
    return m;
}

void hm_destroy(hm_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->slots);
    free(*self_p);
    *self_p = NULL;
}

void hm_destroy_with(hm_t **self_p, void (*free_value)(void *value))
{
    if (!self_p || !*self_p)
        return;
    hm_iter_t it = HM_ITER_INIT;
    void *v;
    while (hm_next(*self_p, &it, NULL, &v))
        free_value(v);
    hm_destroy(self_p);
}

size_t hm_count(const hm_t *m)
{
    return m->count;
}

/* Index of key's slot, or SIZE_MAX when absent. */
static size_t hm_find(const hm_t *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        const hm_slot_t *s = &m->slots[i];
        if (!s->key)
            return SIZE_MAX;
        if (s->key != TOMBSTONE && s->hash == h && strcmp(s->key, key) == 0)
            return i;
    }
}

/* Rebuild into a table of new_cap slots, dropping tombstones. -1 when out of memory. */
static int hm_rehash(hm_t *m, size_t new_cap)
{
    hm_slot_t *slots = calloc(new_cap, sizeof(hm_slot_t));
    if (!slots)
        return -1;
    size_t mask = new_cap - 1;
    for (size_t i = 0; i < m->cap; i++) {
        const hm_slot_t *s = &m->slots[i];
        if (!s->key || s->key == TOMBSTONE)
            continue;
        size_t j = (size_t)s->hash & mask;
        while (slots[j].key)
            j = (j + 1) & mask;
        slots[j] = *s;
    }
    free(m->slots);
    m->slots = slots;
    m->cap = new_cap;
    m->tombstones = 0;
    return 0;
}

int hm_reserve(hm_t *m, size_t n)
{
    /* Room means: n live entries plus the current tombstones stay under the limit. */
    if (n < m->count)
        n = m->count;
    if (n + m->tombstones < m->cap / 10 * 7)
        return 0;
    size_t cap = hm_cap_for(n);
    if (!cap)
        return -1;
    return hm_rehash(m, cap);
}

void *hm_get(const hm_t *m, const char *key)
{
    size_t i = hm_find(m, key, hm_hash(key));
    return i == SIZE_MAX ? NULL : m->slots[i].value;
}

int hm_put(hm_t *m, const char *key, void *value, void **old)
{
    assert(key && value);
    uint64_t h = hm_hash(key);
    size_t i = hm_find(m, key, h);
    if (i != SIZE_MAX) {
        if (old)
            *old = m->slots[i].value;
        m->slots[i].key = key;
        m->slots[i].value = value;
        return 0;
    }
    if (hm_reserve(m, m->count + 1))
        return -1;
    size_t mask = m->cap - 1;
    size_t j = (size_t)h & mask;
    while (m->slots[j].key && m->slots[j].key != TOMBSTONE)
        j = (j + 1) & mask;
    if (m->slots[j].key == TOMBSTONE)
        m->tombstones--;
    m->slots[j] = (hm_slot_t){key, value, h};
    m->count++;
    if (old)
        *old = NULL;
    return 0;
}

void *hm_remove(hm_t *m, const char *key)
{
    size_t i = hm_find(m, key, hm_hash(key));
    if (i == SIZE_MAX)
        return NULL;
    void *v = m->slots[i].value;
    /* A slot followed by an empty one ends every probe chain through it: it can become
     * empty instead of a tombstone. */
    if (!m->slots[(i + 1) & (m->cap - 1)].key) {
        m->slots[i] = (hm_slot_t){0};
    } else {
        m->slots[i] = (hm_slot_t){TOMBSTONE, NULL, 0};
        m->tombstones++;
    }
    m->count--;
    return v;
}

int hm_next(const hm_t *m, hm_iter_t *it, const char **key, void **value)
{
    while (it->pos < m->cap) {
        const hm_slot_t *s = &m->slots[it->pos++];
        if (s->key && s->key != TOMBSTONE) {
            if (key)
                *key = s->key;
            if (value)
                *value = s->value;
            return 1;
        }
    }
    return 0;
}
