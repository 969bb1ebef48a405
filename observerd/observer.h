/* observer: observerd's event loop: the only process that watches Redis itself.
 *
 * It follows informerd's cache over the delta stream (the Clone pattern: SUB first, then
 * a snapshot from the snapshot socket, then only deltas newer than it; a gap, a HUGZ
 * ahead of us, or two HUGZ behind us (informerd restarted) take a new snapshot).
 * From the RedisClusters it reads spec.auth.secretRef {name, key (default "password")}
 * and spec.tls {secretRef, clientAuth} and fetches those Secrets over the loop
 * (secretfetch.h: never blocking, never logging the password), again when the delta
 * stream shows a Secret's metadata changed (a rotation, a renewal) or a probe is refused
 * for its password or its TLS; from the Pods (labelled app.kubernetes.io/instance=
 * <cluster>) it keeps one Redis connection per pod IP (redisnode.h), over TLS for a pod
 * annotated cache.example.com/tls: on (ca.crt trusted, tls.crt presented with clientAuth,
 * the name <pod>.<cluster>.<namespace>.svc checked; not probed before the Secret is read;
 * a pod that presents another certificate than the Secret's is met on a fresh connection
 * each probe, so that the observation's tlsCert shows when it took a renewal), and
 * probes each every --probe-interval: PING and
 * INFO replication within --probe-timeout, INFO with every default section every
 * --info-every probes for the metrics, and for a cluster whose spec.mode is Cluster
 * CLUSTER NODES and CLUSTER INFO too (a CLUSTER NODES answer cn_parse refuses is logged
 * as a warning once per change). A cluster workerd says it acts on (HOT key for_ms on
 * the hint socket it binds, proto.h) is probed every OBSERVE_HOT_INTERVAL_MS too until
 * its deadline (cadence.h); a hint socket it cannot bind leaves every cluster at the
 * 1 s cadence, with a warning.
 *
 * It decides nothing. After each probe it builds the cluster's observation (obsdiff.h)
 * and, when it is news (a node's reachability, role, primary or link, in Cluster mode its
 * CLUSTER NODES text, cluster state or slot counts, or the set of nodes changed), or a
 * primary is still unreachable and a second has passed since the last one, sends
 * OBSERVED key observation to informerd (proto.h, observe socket), which keeps it for
 * the worker and queues the key. A send that informerd cannot take now is
 * retried by the next probe's comparison.
 *
 * Metrics (its own registry file, merged by the supervisor): per pod rdc_redis_up,
 * rdc_redis_role (1 primary, 0 replica), rdc_redis_replication_lag_bytes,
 * rdc_redis_connected_clients and redis_exporter's names from the full INFO
 * (redis_up, redis_connected_clients, redis_memory_used_bytes, redis_memory_max_bytes,
 * redis_evicted_keys_total, redis_expired_keys_total, redis_keyspace_hits_total,
 * redis_keyspace_misses_total, redis_commands_processed_total, redis_connected_slaves,
 * redis_master_repl_offset, redis_rdb_last_bgsave_status), all labelled
 * {namespace,rediscluster,pod}; for the pods of Cluster-mode clusters, while they answer,
 * rdc_redis_cluster_state (1 ok, 0 fail), rdc_redis_cluster_slots_assigned,
 * rdc_redis_cluster_slots_ok, rdc_redis_cluster_slots_pfail, rdc_redis_cluster_slots_fail,
 * rdc_redis_cluster_slots_migrating and rdc_redis_cluster_known_nodes; per cluster
 * rdc_redis_primary_changes_total and, with spec.tls, rdc_redis_tls_cert_expiry_seconds
 * (the Secret's certificate: seconds until its notAfter, negative once past); and
 * rdc_observer_observations_sent_total.
 */
#ifndef RDC_OBSERVERD_OBSERVER_H
#define RDC_OBSERVERD_OBSERVER_H

#include "kube_client.h"
#include "opts.h"

#include <stdint.h>
#include <stdio.h>

typedef struct {
    kube_client_t *client;          /* for Secrets; NULL = no auth (passwords unknown) */
    const rdc_common_opts_t *opts;
    const char *runtime_dir;
    const char *name;               /* metrics file name: $RDC_CHILD_NAME or "observerd" */
    int signal_fd;
    int64_t probe_interval_ns;      /* 1 s */
    int64_t probe_timeout_ns;       /* 500 ms */
    int info_every;                 /* a full INFO every this many probes (5) */
    int redis_port;                 /* 6379 */
} observer_config_t;

#define OBSERVER_PROBE_INTERVAL_DEFAULT 1.0
#define OBSERVER_PROBE_TIMEOUT_DEFAULT 0.5
#define OBSERVER_INFO_EVERY_DEFAULT 5

/* Run until SIGTERM/SIGINT. Returns the exit code. */
int observer_run(const observer_config_t *cfg);

/* --once: observe the pods of the RedisCluster ns/name once, reading the cluster, its
 * pods and its Secret from the API (blocking), and print the observation JSON (with
 * each node's full INFO figures under "info", and in Cluster mode its "cluster" object)
 * on out. Returns the exit code (0 when the
 * observation was printed, whatever it says). */
int observer_once(kube_client_t *client, const char *ns, const char *name, int port, int64_t timeout_ns,
                  FILE *out);

#endif
