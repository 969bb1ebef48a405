/* ownwrite: a key is not handed out again before the cache holds what its last reconcile
 * wrote to the RedisCluster. Pure: no I/O, no clock (times come in as arguments).
 *
 * Why: a reconcile writes the RedisCluster (its finalizer, its status) and its children;
 * the watch events of the children may come back before the RedisCluster's own, and the
 * key, made dirty by them while it was in flight, was handed out again at once with the
 * RedisCluster as it was before the write. That reconcile planned from a status without
 * what had just been written (a new cluster's Progressing=Creating, say) and wrote a
 * different one: two or three status writes in the first second of every cluster. The
 * kube-controller-manager's controllers keep "expectations" for the same reason (a
 * ReplicaSet is not synced again before the pods it created are seen), and client-go's
 * MutationCache serves a write's answer until the informer catches up.
 *
 * The worker says in DONE which resourceVersion the API answered its last write of the
 * RedisCluster with (proto.h). Until the cache holds that version, or a newer one, or
 * OWNWRITE_WAIT_NS has passed, the key is held back: dispatch asks ownwrite_may_dispatch
 * and skips a held key, and the key is queued again when the version arrives (the delta
 * queues it like any change) or when the wait ends (ownwrite_expire hands it back).
 * "Newer": resourceVersions are opaque to clients (API conventions); when both are
 * decimal integers (etcd's revisions: what every API server sends) a larger one is newer,
 * as client-go's MutationCache compares them; otherwise only the same one counts, and
 * the wait ends the hold.
 */
#ifndef RDC_INFORMERD_OWNWRITE_H
#define RDC_INFORMERD_OWNWRITE_H

#include <stddef.h>
#include <stdint.h>

#define OWNWRITE_WAIT_NS (INT64_C(2) * 1000000000) /* at most this long held back */
#define OWNWRITE_RV_MAX 64                          /* longest resourceVersion kept */

typedef struct ownwrite ownwrite_t;

/* An empty set of expectations for at most max keys at once (a write past that is not
 * awaited: its key is dispatched as before). NULL when out of memory. */
ownwrite_t *ownwrite_new(size_t max);

/* Free the set; *self_p = NULL. NULL is fine. */
void ownwrite_destroy(ownwrite_t **self_p);

/* Key's RedisCluster was written and the API answered with resourceVersion rv; the cache
 * holds cached_rv (NULL: it holds no such object). Unless the cache holds rv or newer
 * already, key is awaited until deadline_ns (a later write of the same key replaces the
 * expectation). Returns 1 when key is now awaited, 0 when not (already seen, rv NULL or
 * empty or too long, the set full, or out of memory). */
int ownwrite_expect(ownwrite_t *w, const char *key, const char *rv, const char *cached_rv, int64_t deadline_ns);

/* The cache now holds key's RedisCluster at rv (NULL: deleted). Returns 1 when that ends
 * key's expectation (it is forgotten), else 0. */
int ownwrite_seen(ownwrite_t *w, const char *key, const char *rv);

/* Whether key may be handed out at now_ns: 1, or 0 when it is awaited (then it is marked
 * as held back, so that ownwrite_expire hands it back if the version never comes). */
int ownwrite_may_dispatch(ownwrite_t *w, const char *key, int64_t now_ns);

/* Whether key is awaited and dispatch has held it back for that (ownwrite_may_dispatch
 * said 0): 1, else 0. Such a key is off the queue until its version is seen or the wait
 * ends, so the delta that brings the version must queue it. */
int ownwrite_held(const ownwrite_t *w, const char *key);

/* Forget the expectations whose deadline is at or before now_ns, calling due(key, arg)
 * for each that held its key back (the caller queues it); returns how many were
 * forgotten. due may not call into w. */
size_t ownwrite_expire(ownwrite_t *w, int64_t now_ns, void (*due)(const char *key, void *arg), void *arg);

/* The earliest deadline of an expectation that holds its key back, or 0 when none does.
 * This and ownwrite_expire cost no walk of the set on a loop turn when nothing is due. */
int64_t ownwrite_next_deadline(ownwrite_t *w);

/* Keys awaited now. */
size_t ownwrite_count(const ownwrite_t *w);

#endif
