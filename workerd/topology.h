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
 *     REPLICAOF <primary ip> 6379. Nothing is ever promoted or elected here: a primary
 *     that is unreachable or is itself a replica leaves every node as it is (issue 15's
 *     failover decides that). A node that is unreachable, or whose observed IP is not its
 *     pod's current IP (a stale observation), is reported and left alone;
 *   - status.nodes[] (pod, ip, role primary|replica|unknown, linkUp, offset, lagBytes)
 *     and the ReplicationHealthy condition (True AllReplicasLinked, or False with the
 *     first of NotObserved, PrimaryUnreachable, NoPrimary, Repointing, NodeUnreachable,
 *     ReplicaLinkDown, ReplicasMissing).
 * An observation node is matched to a pod by name; pods are taken in ordinal order.
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
    char primary_ip[64]; /* REPLICAOF <primary_ip> 6379 */
    char why[512];
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
} topo_t;

/* Decide as above into *out (cleared first). name and size are the validated spec's;
 * status_primary may be NULL; pods and observation may be NULL (absent) or anything
 * (wrong types count as absent). The inputs are only read. */
void topo_compute(const char *name, int size, const char *status_primary, const json_object *pods,
                  const json_object *observation, topo_t *out);

#endif
