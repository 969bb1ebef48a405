/* hashmap: a string-keyed hash table for informerd's queue and cache.
 *
 * Open addressing with linear probing and tombstones; the table doubles when it is 70%
 * full (live entries plus tombstones), so lookups, inserts and removals are O(1) on
 * average. The map does NOT copy keys: the caller stores the key string inside the value
 * it maps to (an item's or an entry's own key), which keeps one copy of every key and
 * makes the lifetime rule simple: the key must stay valid and unchanged while its entry
 * is in the map. Values are non-NULL pointers the map never dereferences or frees.
 *
 * Removing entries while iterating is allowed (a removal never moves other entries);
 * inserting while iterating is not (an insert may rehash). Not thread-safe.
 */
#ifndef RDC_INFORMERD_HASHMAP_H
#define RDC_INFORMERD_HASHMAP_H

#include <stddef.h>

typedef struct hm hm_t;

/* Iteration cursor; initialise with HM_ITER_INIT. */
typedef struct {
    size_t pos;
} hm_iter_t;

#define HM_ITER_INIT ((hm_iter_t){0})

/* A new empty map sized for about `expected` entries (0 = small). NULL when out of
 * memory. */
hm_t *hm_new(size_t expected);

/* Free the map (not the keys or values); sets *self_p to NULL. NULL is ignored. */
void hm_destroy(hm_t **self_p);

/* hm_destroy, after passing every value to free_value (which must not touch the map; the
 * keys, being inside the values, go with them). NULL is ignored. */
void hm_destroy_with(hm_t **self_p, void (*free_value)(void *value));

/* Number of entries. */
size_t hm_count(const hm_t *m);

/* The value mapped to key, or NULL when there is none. */
void *hm_get(const hm_t *m, const char *key);

/* Map key to value (non-NULL). When key is present, both its stored key pointer and its
 * value are replaced and the previous value is stored in *old (when old is not NULL;
 * *old is NULL when the key was new). Returns 0, or -1 when out of memory (map
 * unchanged). Never fails after hm_reserve() made room for this entry. */
int hm_put(hm_t *m, const char *key, void *value, void **old);

/* Remove key; returns the value it mapped to, or NULL when absent. Never fails. */
void *hm_remove(hm_t *m, const char *key);

/* Make room for `n` live entries in total, so that inserts up to that count cannot fail
 * or rehash. Returns 0, or -1 when out of memory (map unchanged). */
int hm_reserve(hm_t *m, size_t n);

/* Next entry of an iteration: returns 1 and fills *key / *value (either may be NULL),
 * or 0 when the iteration is over. The order is unspecified. */
int hm_next(const hm_t *m, hm_iter_t *it, const char **key, void **value);

#endif
