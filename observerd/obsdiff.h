/* obsdiff: what the observer saw of one cluster's Redis nodes, when that is news worth a
 * reconcile, and the observation JSON informerd hands to the worker. Pure: no I/O, no
 * clock (times come in as arguments).
 *
 * News (OBSDIFF_CHANGED): the set of nodes (pod names) changed, or for a node of the
 * same pod: its IP, its reachability, its role, the primary it follows (host or port),
 * or its link to it. Offsets, lastOkAgoMs and downSinceMs alone are never news: they move
 * all the time and plan decides nothing from them alone.
 * OBSDIFF_STILL_DOWN: no news, but a node that is a primary (its last known role is
 * master, or it never answered so its role is unknown) is unreachable: failover waits for
 * spec.failover.downAfter to elapse, so plan needs to hear "still down for X ms" again;
 * the caller sends it at most once a second. A node without an IP (a pod not running
 * yet) is never "still down": there is nothing to wait for.
 * Nodes are compared by pod name, in whatever order they come.
 */
#ifndef RDC_OBSERVERD_OBSDIFF_H
#define RDC_OBSERVERD_OBSDIFF_H

#include "buf.h"
#include "redisinfo.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char pod[254];
    char ip[64];
    int reachable;              /* the last probe answered PING and INFO */
    redisinfo_role_t role;      /* last known (kept while unreachable) */
    char master_host[256];      /* replica: the primary it follows; "" otherwise */
    int master_port;
    int link_up;                /* replica: master_link_status:up */
    int64_t link_down_ms;       /* replica with its link down: since when (Redis' own
                                   master_link_down_since_seconds); -1 otherwise */
    int64_t offset;             /* replication offset, -1 unknown */
    int64_t last_ok_ago_ms;     /* since the last answered probe; -1 never answered */
    int64_t down_since_ms;      /* how long unreachable; 0 when reachable */
} obs_node_t;

typedef enum {
    OBSDIFF_SAME = 0,
    OBSDIFF_CHANGED,
    OBSDIFF_STILL_DOWN
} obsdiff_t;

/* Compare the observation last sent (prev, nprev nodes; nprev 0 and prev NULL when none
 * was sent) with the current one. */
obsdiff_t obsdiff_compare(const obs_node_t *prev, size_t nprev, const obs_node_t *cur, size_t ncur);

/* Why obsdiff_compare said CHANGED, for the log: "cache-1: reachable true->false" or
 * "nodes: 3->2"; "" when it did not. Writes at most cap bytes (NUL included). */
void obsdiff_explain(const obs_node_t *prev, size_t nprev, const obs_node_t *cur, size_t ncur,
                     char *out, size_t cap);

/* Append the observation JSON to out: {"observedAt": observed_at (RFC 3339),
 * "nodes": [{"pod","ip","reachable","role","masterHost","masterPort","linkUp","offset",
 * "lastOkAgoMs","downSinceMs","linkDownSinceMs"}, ...]}. Returns 0, or -1 when out's cap or memory ran out. */
int obsdiff_json(const obs_node_t *nodes, size_t n, const char *observed_at, buf_t *out);

#endif
