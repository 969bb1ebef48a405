/* deltapub: informerd's delta stream, the server side of the ZeroMQ guide's Clone pattern
 * (proto.h):
 *
 *   deltas PUB      DELTA seq type kind key resourceVersion object, for every cache change,
 *                   and HUGZ seq every PROTO_HEARTBEAT_MS, so that a subscriber tells a
 *                   quiet stream from a dead one and sees a gap in the sequence;
 *   snapshot ROUTER ICANHAZ is answered with SNAP seq kind key resourceVersion object for
 *                   every cached object (kinds in the cache's registration order), then
 *                   KTHXBAI seq, where seq is the cache's sequence number the snapshot is
 *                   at: the subscriber applies the deltas after it.
 *
 * With --tail it prints every delta as one JSON line instead
 * ({"seq","type","kind","key","resourceVersion","object"}, the object the cache's text: a
 * child in its compact form, docs/projections.md).
 * Every delta counts in informer_deltas_total{kind,type}. The publisher reads the cache
 * (borrowed) and knows nothing else of informerd: the cache's delta handler hands it each
 * delta (deltapub_delta).
 */
#ifndef RDC_INFORMERD_DELTAPUB_H
#define RDC_INFORMERD_DELTAPUB_H

#include "cache.h"
#include "loop.h"

#include <stdio.h>

typedef struct deltapub deltapub_t;

/* A publisher of cache's deltas (borrowed) on the bound PUB socket *pub_p and snapshots
 * on the bound ROUTER *snapshot_p, and/or printed to tail (borrowed); a NULL socket or
 * tail is not used. Takes both sockets in every case (*pub_p, *snapshot_p = NULL; they
 * are closed on failure and by deltapub_destroy). NULL when out of memory. */
deltapub_t *deltapub_new(const cache_t *cache, void **pub_p, void **snapshot_p, FILE *tail);

/* Detach from the loop, close the sockets and free the publisher; *self_p = NULL. NULL
 * is ignored. */
void deltapub_destroy(deltapub_t **self_p);

/* Serve snapshots and send HUGZ on loop (a reader of the snapshot socket, a heartbeat
 * timer), when there are sockets. Returns 0, or -1 when out of memory. */
int deltapub_attach(deltapub_t *p, loop_t *loop);

/* Count d, publish it and print it (as configured). Never fails: a subscriber that is too
 * slow loses deltas (PUB drops them) and sees the gap in the sequence. */
void deltapub_delta(deltapub_t *p, const cache_delta_t *d);

#endif
