/* obsdiff: what the observer saw of one cluster's Redis nodes, when that is news worth a
 * reconcile, and the observation JSON informerd hands to the worker. Pure: no I/O, no
 * clock (times come in as arguments).
 *
 * News (OBSDIFF_CHANGED): the set of nodes (pod names) changed, or for a node of the
 * same pod: its IP, its reachability, its role, the primary it follows (host or port),
 * its link to it, or the certificate it presents (TLS: a renewal taken). Offsets, keys,
 * lastOkAgoMs, downSinceMs, probedAgoMs and masterIoAgoMs alone are never news: they move
 * all the time and plan decides nothing from them alone.
 * In Cluster mode (obs_cluster_t) a node's cluster object is news when it appears or goes,
 * when its CLUSTER NODES text (normalized: ping-sent and pong-recv zeroed, so the
 * timestamps that move every second never make news) or the reason it has none changes,
 * or when CLUSTER INFO's cluster_state or a slot count (assigned, ok, pfail, fail)
 * changes; knownNodes and currentEpoch alone are not.
 * OBSDIFF_STILL_DOWN: no news, but a node that is a primary (its last known role is
 * master, or it never answered so its role is unknown) is unreachable: failover waits for
 * spec.failover.downAfter to elapse, so plan needs to hear "still down for X ms" again.
 * A node without an IP (a pod not running yet) is never "still down": there is nothing
 * to wait for. How often (obsdiff_still_down_due): every OBSDIFF_STILL_DOWN_EVERY_MS
 * while some such node has been down (max of lastOkAgoMs and downSinceMs, as plan counts
 * it) for less than downAfter + OBSDIFF_STILL_DOWN_MARGIN_MS, so the last observation
 * sent says "down for at least downAfter" and plan can decide, or while a replica's link
 * to it is up (it may be alive, cut off from the observer alone: plan holds the
 * election while its replicas hear it, masterIoAgoMs, and decides once they do not);
 * after that only every OBSDIFF_STILL_DOWN_SLOW_MS (news is sent at once as ever). A pod that never answers
 * (kwok's fake pods, a pod whose Redis never started) costs a reconcile a minute, not
 * one a second.
 * Nodes are compared by pod name, in whatever order they come.
 */
#ifndef RDC_OBSERVERD_OBSDIFF_H
#define RDC_OBSERVERD_OBSDIFF_H

#include "buf.h"
#include "clusternodes.h"
#include "redisinfo.h"

#include <stddef.h>
#include <stdint.h>

/* What a node of a Cluster-mode cluster says of Redis Cluster (CLUSTER NODES, CLUSTER INFO). */
typedef struct {
    int on;                     /* the cluster is in Cluster mode: the node carries a "cluster"
                                   object once known */
    int known;                  /* CLUSTER NODES and CLUSTER INFO were answered (the last answer
                                   is kept while the node is unreachable) */
    const char *nodes;          /* the normalized CLUSTER NODES text (obsdiff_normalize_nodes);
                                   NULL when error says why there is none. Not owned by the
                                   struct: the builder's, or an obsdiff_copy array's */
    char error[256];            /* cn_parse's message, or Redis's error reply; "" with nodes */
    cn_info_t info;             /* CLUSTER INFO; -1 for what it did not give */
} obs_cluster_t;

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
    int64_t master_io_ms;       /* replica with its link up: it heard from its primary at most
                                   this long ago (master_last_io_seconds_ago + 1 s, Redis
                                   counting whole seconds, + the probe's age); -1 otherwise */
    int64_t offset;             /* replication offset, -1 unknown */
    int64_t keys;               /* keys of every database (INFO keyspace), -1 unknown */
    int64_t last_ok_ago_ms;     /* since the last answered probe; -1 never answered */
    int64_t down_since_ms;      /* how long unreachable; 0 when reachable */
    int64_t probed_ago_ms;      /* since the last probe that ended (answered or not) began:
                                   what the node says is no older than that; -1 never probed */
    obs_cluster_t cluster;      /* Cluster mode only (cluster.on) */
    char tls_cert[65];          /* the SHA-256 of the certificate the node presented on its
                                   connection (TLS), "" for plain text or not known yet */
} obs_node_t;

typedef enum {
    OBSDIFF_SAME = 0,
    OBSDIFF_CHANGED,
    OBSDIFF_STILL_DOWN
} obsdiff_t;

#define OBSDIFF_STILL_DOWN_EVERY_MS 1000     /* while downAfter may still run out */
#define OBSDIFF_STILL_DOWN_MARGIN_MS 2000    /* past downAfter: two more probes' worth */
#define OBSDIFF_STILL_DOWN_SLOW_MS 60000     /* after that */
#define OBSDIFF_DEFAULT_DOWN_AFTER_MS 3000   /* spec.failover.downAfter's default (plan.h) */

/* Whether a STILL_DOWN observation of cur (ncur nodes) is due, since_sent_ms after the
 * last observation was sent, for a cluster whose downAfter is down_after_ms (0: the
 * default; < 0: the cluster has no failover, spec.mode Standalone, so a repeat is never
 * due: news is still sent at once): 1 or 0, per the rule above; 0 when no node is still
 * down. */
int obsdiff_still_down_due(const obs_node_t *cur, size_t ncur, int64_t down_after_ms, int64_t since_sent_ms);

/* Compare the observation last sent (prev, nprev nodes; nprev 0 and prev NULL when none
 * was sent) with the current one. */
obsdiff_t obsdiff_compare(const obs_node_t *prev, size_t nprev, const obs_node_t *cur, size_t ncur);

/* Why obsdiff_compare said CHANGED, for the log: "cache-1: reachable true->false" or
 * "nodes: 3->2"; "" when it did not. Writes at most cap bytes (NUL included). */
void obsdiff_explain(const obs_node_t *prev, size_t nprev, const obs_node_t *cur, size_t ncur,
                     char *out, size_t cap);

/* Append the observation JSON to out: {"observedAt": observed_at (RFC 3339),
 * "nodes": [{"pod","ip","reachable","role","masterHost","masterPort","linkUp","offset",
 * "lastOkAgoMs","downSinceMs","linkDownSinceMs","probedAgoMs","masterIoAgoMs","keys"
 * [,"tlsCert"][,"cluster"]}, ...]}, tlsCert when the node presented a certificate, and
 * where a node whose
 * cluster is on and known has "cluster": {"nodes" (or "error" when there is no text),
 * "state": "ok"|"fail" (absent when CLUSTER INFO did not say), "slotsAssigned",
 * "slotsOk", "slotsPfail", "slotsFail", "knownNodes", "currentEpoch" (each -1 when
 * CLUSTER INFO did not give it)}. Returns 0, or -1 when out's cap or memory ran out. */
int obsdiff_json(const obs_node_t *nodes, size_t n, const char *observed_at, buf_t *out);

/* A copy of nodes[0..n) that owns copies of their cluster nodes texts, into *out (NULL
 * when n is 0); free it with obsdiff_free. Returns 0, or -1 when out of memory (*out
 * NULL, nothing to free). */
int obsdiff_copy(const obs_node_t *nodes, size_t n, obs_node_t **out);

/* Free an obsdiff_copy array of n nodes and its texts; *nodes_p = NULL. NULL is fine. */
void obsdiff_free(obs_node_t **nodes_p, size_t n);

/* The normalized form of a CLUSTER NODES answer (len bytes of text): cn_parse, then
 * cn_format (sorted by id, ping-sent and pong-recv 0), as a new string into *out (the
 * caller frees it). Returns 0, or -1 with err (errlen bytes) holding cn_parse's message
 * (or "out of memory") and *out NULL. */
int obsdiff_normalize_nodes(const char *text, size_t len, char **out, char *err, size_t errlen);

#endif
