/* obsstore: observerd's latest observation of each RedisCluster's Redis nodes (proto.h,
 * OBSERVED), kept by informerd for the next work item of that key (workitem.h, "Redis").
 * Pure: no I/O, no clock.
 *
 * One observation per key; a newer one replaces the one before. The text is copied as
 * given (the caller checked it is {"nodes":[...]}) and handed out as is. A key is
 * forgotten when its RedisCluster leaves the cache.
 */
#ifndef RDC_INFORMERD_OBSSTORE_H
#define RDC_INFORMERD_OBSSTORE_H

#include <stddef.h>

typedef struct obsstore obsstore_t;

/* A new, empty store, or NULL when out of memory. */
obsstore_t *obsstore_new(void);

/* Free the store and every observation; sets *self_p to NULL. NULL is ignored. */
void obsstore_destroy(obsstore_t **self_p);

/* Keep json (len bytes, copied and NUL-terminated) as key's latest observation, replacing
 * the one before. Returns 0, or -1 when out of memory or key is NULL (store unchanged). */
int obsstore_put(obsstore_t *s, const char *key, const char *json, size_t len);

/* key's latest observation, NUL-terminated, with its length in *len (when len is not
 * NULL); NULL when there is none. Borrowed: valid until the next put or forget of key. */
const char *obsstore_get(const obsstore_t *s, const char *key, size_t *len);

/* Forget key's observation (its RedisCluster was deleted). Unknown keys are ignored. */
void obsstore_forget(obsstore_t *s, const char *key);

/* Keys with an observation. */
size_t obsstore_count(const obsstore_t *s);

#endif
