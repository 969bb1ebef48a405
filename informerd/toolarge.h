/* toolarge: what informerd does about the objects it caches in minimal form (cache.h:
 * too large to keep whole, or only their metadata came). Pure: no I/O, no clock.
 *
 *  - Which reason an object is counted under (informer_objects_skipped_total{reason}).
 *  - Which cached object keeps a RedisCluster from being reconciled: itself or a child
 *    (ConfigMap, Service, StatefulSet, PodDisruptionBudget) in minimal form, since a
 *    worker would read the missing spec or data as a change to make; never while the
 *    RedisCluster is being deleted, because its minimal form carries all its finalizer
 *    needs (workerd/plan.h, decision 2).
 *  - The objects whose Warning Event ObjectTooLarge is still to be written: a bounded FIFO,
 *    filled as the deltas come and drained a few at a time once this replica may write.
 */
#ifndef RDC_INFORMERD_TOOLARGE_H
#define RDC_INFORMERD_TOOLARGE_H

#include "cache.h"

#include <stddef.h>

/* "response_cap" (only the metadata came: cache_relist_add_partial) or
 * "max_object_bytes" (the object was over the cache's bound), for an item whose
 * truncated is set. */
const char *toolarge_reason(const cache_item_t *it);

/* The cached object that makes the RedisCluster rc (an item of c) impossible to
 * reconcile now: rc itself or a child at rc's key kept in minimal form; NULL when there
 * is none or rc is being deleted. Borrowed from c. */
const cache_item_t *toolarge_blocker(const cache_t *c, const cache_item_t *rc);

typedef struct toolarge toolarge_t;

/* An empty FIFO of at most max objects (max >= 1), or NULL when out of memory. */
toolarge_t *toolarge_new(size_t max);

/* Free the FIFO and what it holds; sets *self_p to NULL. NULL is ignored. */
void toolarge_destroy(toolarge_t **self_p);

/* Queue the object of kind at key (both copied). Returns 0; 1 when the FIFO is full
 * (nothing queued); -1 when out of memory (nothing queued). */
int toolarge_push(toolarge_t *q, const char *kind, const char *key);

/* Take up to n of the oldest objects out of the FIFO and call fn(arg, kind, key) for
 * each, in the order they were queued (the strings are freed after fn returns; fn may
 * push). Returns how many were taken. */
size_t toolarge_drain(toolarge_t *q, size_t n, void (*fn)(void *arg, const char *kind, const char *key),
                      void *arg);

/* Objects queued. */
size_t toolarge_count(const toolarge_t *q);

#endif
