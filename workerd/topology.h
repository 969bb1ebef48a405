/* topology: the pure replication decisions of a RedisCluster in mode Replication (plan.h,
 * REPLICATION). No I/O, no clock: from the cluster's name and size, the primary its status
 * names, its pods (children.Pods of the work item) and observerd's latest observation
 * (children.Redis, docs/observer.md), it says
 *   - which pod is the primary: status.primary when it names one of the cluster's pods
 *     (<name>-<ordinal>, ordinal < size), else <name>-0 (a cluster's first primary);
 *   - the role label each pod must carry (cache.example.com/role: primary | replica), by
 *     that designation, for the pods whose label is not that value already;
 *   - the Redis commands that restore the topology: only when the primary is reachable
 *     and reports role master, every other reachable node that is a master too (two
 *     primaries: a restarted pod comes up as a master) or follows another address gets
 *     REPLICAOF <primary ip> 6379. Without FAILOVER (below) nothing is promoted or elected:
 *     a primary that is unreachable or is itself a replica leaves every node as it is. A node that is unreachable, or whose observed IP is not its
 *     pod's current IP (a stale observation), is reported and left alone;
 *   - status.nodes[] (pod, ip, role primary|replica|unknown, linkUp, offset, lagBytes)
 *     and the ReplicationHealthy condition (True AllReplicasLinked, or False with the
 *     first of NotObserved, PrimaryUnreachable, NoPrimary, Repointing, NodeUnreachable,
 *     ReplicaLinkDown, ReplicasMissing).
 * An observation node is matched to a pod by name; pods are taken in ordinal order.
 *
 * FAILOVER (topo_compute_failover; docs/failover.md) adds an election to the above. With D
 * the designated primary, an election is held when
 *   (a) D is unreachable and observerd has heard nothing from it for at least
 *       down_after_ms: its observation node's lastOkAgoMs (since its last answer, as
 *       Sentinel's down-after counts; -1 when this observer never heard it) or else
 *       downSinceMs (since the first failed probe), plus obs_age_ms (how old the
 *       observation is, the caller caps it at 1 s; the node would have been reported
 *       back at once). It is the
 *       evidence of one observer, which a fresh observer has to gather again, so an
 *       operator restart never triggers one. While it is short of down_after_ms,
 *       recheck_after_ms says when it will not be; or
 *   (b) D is reachable but a replica (role slave) whose primary is not a reachable master
 *       of the set (every node follows a dead address; a promotion recorded but not yet
 *       done); or
 *   (c) D is a reachable master that no node follows while a reachable node that does
 *       not follow it has a higher offset (D restarted empty: the replicas must not
 *       resynchronise from it).
 * Candidates: D itself when reachable; every other reachable node that is a master, or
 * a replica linked recently (link up, or its linkDownSinceMs at most D's downSinceMs +
 * 10 x down_after_ms, Sentinel's rule). The highest offset wins; on equal offsets D,
 * then the lowest ordinal. A replica of D with its link up to a reachable master of the
 * set (D's promotion recorded, then the old primary came back) elects that master.
 *   - elected == D and D is a replica: REPLICAOF NO ONE on D (no_one) first, then
 *     REPLICAOF D on every other reachable node that does not follow D, in the same plan
 *     (a replica left following the old primary's address would give it back the
 *     replica min-replicas-to-write needs, should it return);
 *   - elected != D: elect is set; the caller records elected as status.primary (with a
 *     resourceVersion precondition) and does nothing else: the promotion happens in the
 *     next reconcile, from the record (so a crash between the two never leaves two
 *     primaries, and a stale decision cannot overwrite a newer one);
 *   - no candidate: no_candidate is set, reason NoFailoverCandidate.
 * down_after_ms <= 0 turns the election off (topo_compute: the replication issue's rules).
 */
#ifndef RDC_WORKERD_TOPOLOGY_H
#define RDC_WORKERD_TOPOLOGY_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define TOPO_ROLE_LABEL "cache.example.com/role"
#define TOPO_MAX_NODES 32
#define TOPO_REDIS_PORT 6379

typedef struct {
    char pod[254];
    char ip[64];
    const char *role;  /* "primary", "replica", "unknown" */
    int link_up;       /* replica: link to its primary up; primary: 1 */
    int64_t offset;    /* -1 unknown */
    int64_t lag_bytes; /* -1 unknown */
} topo_node_t;

typedef struct {
    char pod[254];
    char ip[64];
    char primary_ip[64]; /* REPLICAOF <primary_ip> 6379; "" with no_one */
    int no_one;          /* REPLICAOF NO ONE: the promotion of the designated primary */
    char why[1200];
} topo_cmd_t;

typedef struct {
    char pod[254];
    const char *role; /* the label value it must get */
    const char *have; /* the value it has, "" none */
} topo_label_t;

typedef struct {
    char primary[254];
    topo_node_t nodes[TOPO_MAX_NODES];
    size_t n_nodes;
    topo_cmd_t cmds[TOPO_MAX_NODES];
    size_t n_cmds;
    topo_label_t labels[TOPO_MAX_NODES];
    size_t n_labels;
    int healthy;
    const char *reason;
    char message[1024];
    /* FAILOVER */
    int elect;              /* record elected as status.primary, nothing else */
    int no_candidate;       /* an election found no candidate */
    char elected[254];
    char elect_why[1024];   /* old and new primary, offsets, why */
    int64_t recheck_after_ms; /* > 0: D unreachable, downAfter reached in this many ms */
} topo_t;

/* Decide as above into *out (cleared first). name and size are the validated spec's;
 * status_primary may be NULL; pods and observation may be NULL (absent) or anything
 * (wrong types count as absent). The inputs are only read. */
void topo_compute(const char *name, int size, const char *status_primary, const json_object *pods,
                  const json_object *observation, topo_t *out);

/* topo_compute with FAILOVER above; down_after_ms <= 0 is topo_compute. obs_age_ms is
 * how long ago the observation was taken (0 when unknown). */
void topo_compute_failover(const char *name, int size, const char *status_primary, const json_object *pods,
                           const json_object *observation, int64_t down_after_ms, int64_t obs_age_ms, topo_t *out);

#endif
