/* dispatcher: informerd's work side. It owns the work queue (workqueue.h) and everything
 * that decides when a key goes to which worker:
 *
 *  - Keys. Every cache delta (dispatcher_on_delta) is mapped to the key of the RedisCluster
 *    it concerns (cache_item_owner_key) and queued, but for a child's MODIFIED that changed
 *    nothing a plan reads (unread_only, projection.h: counted in
 *    informer_enqueue_skipped_total{kind} instead); a Secret's change queues the
 *    RedisClusters whose spec.auth names it (secretref.h). A RedisCluster's delta also
 *    ends the wait for its own write (ownwrite.h), forgets its observation when it is
 *    deleted, lifts its quarantine when its spec changes, and restores a quarantine that
 *    its ReconcileCrashed condition records (crashcond.h) when an earlier informerd set it.
 *    A resync (CACHE_SYNC, no change) queues a key only when no hand-out of it is coming
 *    within resync_merge_ns anyway (WORKQUEUE_UNLESS_COMING).
 *    Every add names its cause (a watch event by kind, an observation, a requeue...), and
 *    what it became (queued, merged, dropped: workqueue_on_outcome) is counted in
 *    informer_queue_adds_total{cause,result} (docs/informerd.md).
 *  - Observations. observerd PUSHes OBSERVED key observation (proto.h) to the observe
 *    socket; the latest per cached RedisCluster is kept (obsstore.h) and handed to the
 *    worker with the key's children ("Redis"), and the key is queued. Counted in
 *    informer_observations_total{result=stored|unknown_key|malformed}.
 *  - Workers, over the work ROUTER (the ZeroMQ guide's Paranoid Pirate): READY and
 *    HEARTBEAT say a worker is there and how many keys it takes at once (workslot.h); it
 *    gets WORK key epoch generation object children, round robin, one key per worker with
 *    room per pass, while this replica leads (or election is off) and is not draining,
 *    and only keys whose RedisCluster is cached, whole (toolarge.h) and not awaiting its
 *    own write. DONE key result [after] [written] gives the key back (done, requeue after,
 *    fenced, or a rate-limited retry). A worker that dies (the supervisor's EXITED), is
 *    silent past PROTO_LIVENESS heartbeats (or, with keys, past the reconcile timeout) or
 *    holds a key past the reconcile timeout loses its keys back to the queue, each
 *    counted as a crash of that key; a key that crashed a worker runs alone.
 *  - Quarantine. A key that crashes workers DISPATCHER_CRASHES_TO_QUARANTINE times in a
 *    row is held back for DISPATCHER_QUARANTINE_NS or until its spec changes, counted in
 *    informer_quarantined_keys_total, logged, and reported on the object by the reporter
 *    (Warning Event and condition, reporter.h); the next reconcile that completes clears
 *    the condition.
 *  - Leadership, from electord's LEADER messages when leader election is on: whether this
 *    replica may dispatch and write, the epoch its WORK carries, and the fence (the lease's
 *    validity) of every write.
 *
 * It reads the cache (borrowed) and calls the reporter (borrowed); nothing calls back into
 * it but the loop and its owner. Without sockets (informerd --tail) it still maps and queues
 * keys, and hands out none.
 */
#ifndef RDC_INFORMERD_DISPATCHER_H
#define RDC_INFORMERD_DISPATCHER_H

#include "cache.h"
#include "loop.h"
#include "reporter.h"

#include <stdint.h>

#define DISPATCHER_CRASHES_TO_QUARANTINE 3
#define DISPATCHER_QUARANTINE_NS (INT64_C(3600) * 1000000000) /* an hour */

typedef struct dispatcher dispatcher_t;

typedef struct {
    const cache_t *cache;       /* borrowed: the objects keys are mapped from and sent with */
    reporter_t *reporter;       /* borrowed: a quarantine's Event and condition */
    int leader_elect;           /* 1: dispatch and write only while electord says we lead */
    double reconcile_timeout_s; /* a key held longer is taken back from its worker */
    int64_t child_delay_ns;     /* a child's delta queues its owner this much later
                                   (workqueue_add_soon); 0: at once */
    int64_t resync_merge_ns;    /* a resync queues nothing for a key due, in flight, or waiting
                                   (a requeue) to be handed out within this (the sync period):
                                   that reconcile is the resync's; 0: only due or in flight */
} dispatcher_config_t;

/* Its sockets, bound or connected by the caller; any may be NULL (none: informerd --tail;
 * leader: no leader election). */
typedef struct {
    void *work;                 /* ROUTER on PROTO_EP_WORK, ZMQ_ROUTER_MANDATORY */
    void *observe;              /* PULL on PROTO_EP_OBSERVE */
    void *events;               /* SUB to the supervisor's PROTO_EP_EVENTS (EXITED) */
    void *leader;               /* SUB to electord's PROTO_EP_LEADER (LEADER) */
} dispatcher_sockets_t;

/* A dispatcher with an empty queue and no workers, its metric families registered (the
 * queue's and informerd's). Takes the sockets of *socks in every case (the struct is
 * zeroed; they are closed on failure and by dispatcher_destroy). NULL when out of memory. */
dispatcher_t *dispatcher_new(const dispatcher_config_t *cfg, dispatcher_sockets_t *socks);

/* Detach from the loop, close the sockets, free the queue and the rest; *self_p = NULL.
 * NULL is ignored. */
void dispatcher_destroy(dispatcher_t **self_p);

/* Read the sockets it has on loop, and heartbeat the workers every PROTO_HEARTBEAT_MS.
 * Returns 0, or -1 when out of memory. */
int dispatcher_attach(dispatcher_t *d, loop_t *loop);

/* A cache delta (the cache's delta handler calls this, after the publisher): map it to its
 * key and queue it, as the list above says. */
void dispatcher_on_delta(dispatcher_t *d, const cache_delta_t *delta);

/* Move delayed keys whose time came into the queue, and queue again the keys whose wait for
 * their own write ended at now_ns (counted as expired). */
void dispatcher_advance(dispatcher_t *d, int64_t now_ns);

/* Hand out ready keys to workers with room, when this replica may (dispatcher_may_write).
 * Call once the caches synced. */
void dispatcher_dispatch(dispatcher_t *d, int64_t now_ns);

/* 1 when this replica may hand out work and write: it leads with a lease still valid now
 * (or leader election is off) and is not draining; else 0. *fence_ns (when not NULL) is
 * the monotonic time its writes must end by: the lease's validity, or INT64_MAX without
 * leader election. */
int dispatcher_may_write(const dispatcher_t *d, int64_t *fence_ns);

/* Stop handing out work for good (SIGTERM): the keys in flight may still come back. */
void dispatcher_drain(dispatcher_t *d);

/* 1 while some worker holds a key, else 0. */
int dispatcher_in_flight(const dispatcher_t *d);

/* The earliest time (monotonic ns, >= now_ns) a delayed key, a quarantine or a wait for an
 * own write falls due; INT64_MAX when none does. */
int64_t dispatcher_next_deadline(dispatcher_t *d, int64_t now_ns);

/* Refresh the queue's time-based gauges (workqueue_update_metrics). */
void dispatcher_update_metrics(dispatcher_t *d, int64_t now_ns);

#endif
