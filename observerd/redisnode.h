/* redisnode: the observer's link to one Redis server: one connection of the Redis
 * transport (common/redis_conn.h: plain or TLS, AUTH, deadlines) on the loop, and probes.
 *
 * A probe connects when there is no usable connection (then AUTH when a password is
 * set), sends PING and INFO (the replication and keyspace sections, or every default
 * section when asked: the metrics' figures), pipelined, each bounded by the node's timeout from the
 * probe's start (so the connect, TLS handshake and AUTH of a new connection count
 * against it too), and ends in exactly one call of the node's callback: answered (both
 * replies came, INFO parsed: state.reachable 1) or failed (connection refused or
 * closed, a TLS refusal, an error reply such as NOAUTH/WRONGPASS, or no answer within
 * the timeout: state.reachable 0). A failed probe drops the connection, so a server
 * that hangs (SIGSTOP) or comes back (restart) is met on a fresh connection by the next
 * probe. The callback may start the next probe but must not destroy the node.
 *
 * Cluster mode (redisnode_set_cluster): each probe also sends CLUSTER NODES and CLUSTER
 * INFO, pipelined after INFO under the same deadline. Their answers do not decide
 * whether the node answered: an error reply (a server without cluster-enabled) or a
 * CLUSTER NODES text that cn_parse refuses is kept as state.cluster_error, the probe
 * still answered. An answered probe replaces the cluster state; a failed one keeps the
 * last (as it keeps the last role).
 *
 * The password is copied and never logged; state.error is the transport's line
 * ("10.0.0.5:6379: connect: Connection refused", "...: PING: no answer within 500 ms",
 * "...: TLS handshake: certificate verify failed: ...") or "redis error: <Redis's
 * words>", never with the password.
 */
#ifndef RDC_OBSERVERD_REDISNODE_H
#define RDC_OBSERVERD_REDISNODE_H

#include "clusternodes.h"
#include "loop.h"
#include "redis_tls.h"
#include "redisinfo.h"

#include <stdint.h>

typedef struct redisnode redisnode_t;

typedef struct {
    int reachable;          /* the last probe was answered */
    int ever_answered;
    int64_t last_ok_ns;     /* loop clock of the last answered probe, 0 never */
    int64_t down_since_ns;  /* loop clock of the first failed probe of this outage, 0 when up */
    int64_t last_probe_ns;  /* loop clock at which the last ended probe began (answered or
                               not): what the state says is no older than that */
    redisinfo_t info;       /* from the last answered probe (kept while unreachable) */
    redisinfo_t full;       /* from the last answered full probe (every default section) */
    int have_full;
    char error[256];        /* why the last probe failed, "" after an answered one */
    char tls_cert[65];      /* the SHA-256 of the certificate the server presented on the
                               connection of the last answered probe (TLS); "" plain text */
    uint64_t probes, failures;
    /* Cluster mode only, from the last answered probe that asked */
    int cluster_known;      /* CLUSTER NODES and CLUSTER INFO were answered */
    char *cluster_nodes;    /* the normalized CLUSTER NODES text (obsdiff_normalize_nodes),
                               the node's; NULL when cluster_error says why there is none */
    char cluster_error[256]; /* cn_parse's message or "redis error: <Redis's words>"; "" */
    cn_info_t cluster_info; /* CLUSTER INFO (fields it did not give: -1) */
} redisnode_state_t;

typedef void redisnode_fn(redisnode_t *node, void *arg);

/* A node for ip:port on loop, probes bounded by timeout_ns, results to fn(node, arg);
 * plain text until redisnode_set_tls. Nothing is sent before redisnode_probe. NULL when
 * out of memory. */
redisnode_t *redisnode_new(loop_t *loop, const char *ip, int port, int64_t timeout_ns, redisnode_fn *fn,
                           void *arg);

/* Drop the connection (no callback for a probe in flight) and free the node; *node_p =
 * NULL. NULL is fine. Not from inside the node's own callback. */
void redisnode_destroy(redisnode_t **node_p);

/* Use password (copied; NULL or "" = none) from the next connection on; a changed
 * password drops the current connection so the next probe authenticates again. Returns
 * 0, or -1 when out of memory (the old password stays). */
int redisnode_set_password(redisnode_t *node, const char *password);

/* Speak TLS with tls's settings (borrowed: it must outlive the node, or be replaced
 * first; NULL: plain text), verifying server_name (copied; NULL: the node's IP as an IP
 * SAN), from the next connection on; a change drops the current connection (not under
 * a probe in flight: after it). Returns 0, or -1 when out of memory (nothing changed). */
int redisnode_set_tls(redisnode_t *node, const redis_tls_t *tls, const char *server_name);

/* Drop the connection (after a probe in flight), so that the next probe makes a new one:
 * a new TLS handshake shows the certificate the server serves now (a renewal). */
void redisnode_reconnect(redisnode_t *node);

/* Ask (on 1) CLUSTER NODES and CLUSTER INFO with every probe from the next one on, or
 * stop (on 0: the cluster state is forgotten, cluster_known 0). */
void redisnode_set_cluster(redisnode_t *node, int on);

/* Start a probe; full asks INFO with every default section instead of INFO replication.
 * Returns 0, 1 when a probe is already in flight (nothing started), or -1 when memory
 * ran out (the callback has then been called with the failure). Every other failure,
 * however early (a refused connection), reaches the callback from the loop. */
int redisnode_probe(redisnode_t *node, int full);

/* The node's state after its last probe (borrowed). */
const redisnode_state_t *redisnode_state(const redisnode_t *node);

/* The address it probes. */
const char *redisnode_ip(const redisnode_t *node);
int redisnode_port(const redisnode_t *node);

/* 1 while a probe is in flight. */
int redisnode_busy(const redisnode_t *node);

#endif
