/* topology: the pure replication decisions of a RedisCluster in mode Replication (plan.h,
 * REPLICATION). No I/O, no clock: from the cluster's name and size, the primary its status
 * names, its pods (children.Pods of the work item) and observerd's latest observation
 * (children.Redis, docs/observer.md), it says
 *   - which pod is the primary: status.primary when it names one of the cluster's pods
 *     (<name>-<ordinal>, ordinal < size), else <name>-0 (a cluster's first primary);
 *   - the role label each pod must carry (cache.example.com/role: primary | replica), by
 *     that designation, for the pods whose label is not that value already: the
 *     designated primary's role=primary only once it is one (observed a master, or
 *     promoted in this plan; with no observation, never); no other pod, terminating ones
 *     included, keeps role=primary; and when role=primary is given, every other pod is
 *     labelled replica whatever its label shows (the pod cache may not hold the
 *     operator's own last label patches yet). A terminating pod is otherwise left as it
 *     is (the designated primary's own keeps its label until a handover takes it);
 *   - the Redis commands that restore the topology: only when the primary is reachable
 *     and reports role master, every other reachable node that is a master too (two
 *     primaries: a restarted pod comes up as a master) or follows another address gets
 *     REPLICAOF <primary ip> 6379. Without FAILOVER (below) nothing is promoted or elected:
 *     a primary that is unreachable or is itself a replica leaves every node as it is. A
 *     node that is unreachable, or whose observed IP is not its pod's current IP (a stale
 *     observation), is reported and left alone;
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
 *       recheck_after_ms says when it will not be. Checked against the replicas: none
 *       while a reachable replica linked to D heard from it after the observer's
 *       probes of it began failing (masterIoAgoMs below D's downSinceMs: D is alive,
 *       cut off from the operator alone); none yet while such a replica was probed less
 *       than a second after they began (it cannot tell yet; recheck in 1 s); or
 *   (b) D is reachable but a replica (role slave) whose primary is not a reachable master
 *       of the set (every node follows a dead address; a promotion recorded but not yet
 *       done); or
 *   (c) D is a reachable master that no node follows while a reachable node that does
 *       not follow it has a higher offset, or holds keys while D holds none at an offset
 *       as high (keys: INFO keyspace; a restart from the AOF starts the offset again)
 *       (D restarted empty: the replicas must not resynchronise from it).
 * Candidates: D itself when reachable; every other reachable node that is a master, or
 * a replica linked recently (link up, or its linkDownSinceMs at most D's downSinceMs +
 * 10 x down_after_ms, Sentinel's rule; when D answers, (b) and (c), from the shortest
 * linkDownSinceMs of the reachable replicas: when they lost the primary they follow).
 * The highest offset wins; on equal offsets one holding keys before one holding none,
 * then D, then the lowest ordinal; a winner at offset 0 holding no key gives way to the
 * reachable node holding keys with the highest offset, linked recently or not; under (c)
 * a D holding no key while a node holds some never wins: no_candidate (nothing elected,
 * nothing repointed to D). A replica of D with its link up to a reachable master of the set
 * (D's promotion recorded, then the old primary came back) elects that master.
 *   - elected == D and D is a replica: REPLICAOF D on every other reachable node that
 *     does not follow D, then REPLICAOF NO ONE on D (no_one), in the same plan (a
 *     replica left following the old primary's address would give it back the replica
 *     min-replicas-to-write needs, should it return; in this order a plan stopped
 *     anywhere leaves one master: the replicas told so far follow D, still a replica of
 *     the old address until it is promoted);
 *   - elected != D: elect is set; the caller records elected as status.primary (with a
 *     resourceVersion precondition) and does nothing else: the promotion happens in the
 *     next reconcile, from the record (so a crash between the two never leaves two
 *     primaries, and a stale decision cannot overwrite a newer one);
 *   - no candidate: no_candidate is set, reason NoFailoverCandidate.
 * down_after_ms <= 0 turns the election off (topo_compute: the replication issue's rules).
 *
 * SWITCHOVER (topo_compute_switchover; docs/failover.md, "Planned switchover"): the
 * StatefulSet rolls OnDelete, and the operator deletes the pods itself, one at a time;
 * the primary role is handed over with Redis's FAILOVER before its pod goes. A pod is
 * outdated when its controller-revision-hash label is not roll->update_revision ("" or
 * NULL: no rollout). Evaluated after the failover rules, and only when they leave the
 * designated primary D as it is (no election, no promotion):
 *   (1) a switchover in progress (roll->switchover_from names the old primary O, D is
 *       the recorded new one): D a replica linked to O, O a reachable master (its pod
 *       present or terminating): take O's role label (replica), then on O
 *       `FAILOVER TO <D ip> 6379 TIMEOUT <TOPO_FAILOVER_TIMEOUT_MS>` (failover_to); D gets
 *       the primary label only once it reports role master. O a replica of D's IP: the
 *       handoff is under way, nothing is sent. The failover rule "a designated replica
 *       linked to a reachable master elects that master back" is not applied here.
 *       Otherwise (O gone, D not linked) the failover rules decide as for any record;
 *       switchover stays set (status.switchoverFrom) while (1) applies, and not after;
 *   (2) D reachable master and terminating (deletionTimestamp: kubectl delete pod, a
 *       node drain), or outdated while every other pod of 0..size-1 is up to date: a
 *       candidate is a pod present (not terminating), Ready, reachable, a replica of D's
 *       IP with its link up, at most TOPO_SWITCHOVER_MAX_LAG bytes behind D, and (for a
 *       rollout) up to date. The highest offset wins, ties the lowest ordinal:
 *       switch_record with switch_to; the caller records status.primary := switch_to
 *       and status.switchoverFrom := D with D's resourceVersion precondition (as an
 *       election), and nothing else. No candidate: no switchover; switch_blocked with
 *       the reason (a rollout with replicas present but none linked and caught up) or
 *       switch_wait (a replica coming back; a replica behind: wait). size 1: nothing to
 *       hand over to: D is deleted in place (its AOF carries the data);
 *   (3) D reachable master, not terminating, up to date or not, and some replica
 *       outdated: when every pod of 0..size-1 is present, Ready, reachable, and every
 *       replica linked to D, delete_pod names the outdated replica of highest ordinal
 *       (delete_uid its uid); otherwise switch_wait says which pod is awaited. A deleted
 *       pod comes back on the new revision; the next is deleted only once it is back,
 *       Ready and linked (so min-replicas-to-write keeps being met). A replica of an
 *       old revision that is not Ready is deleted at once instead of awaited: it serves
 *       nothing, and waiting would hold the rollout for ever (a revision whose pods crash,
 *       then a fixed one);
 *   (4) no Redis node of the set answers (every member present or terminating observed
 *       unreachable, the primary down for downAfter with no candidate: fake pods, a
 *       partition between the operator and the pods, a revision crashing everywhere):
 *       no role can be handed over, so the rollout goes as the StatefulSet's
 *       RollingUpdate would: once every pod is present and Ready, the outdated pod of
 *       highest ordinal, the primary's too (an outdated pod that is not Ready first);
 *       otherwise switch_wait. Without any observation nothing is deleted.
 * A terminating primary whose role has moved is left to go (its role=primary label taken);
 * a replica's deletion needs nothing.
 *
 * SCALE-IN (roll->keep; plan.h SCALE-IN): size is the pods the StatefulSet still runs and
 * keep the new spec.size. Before (2) and (3): D a reachable master, not terminating, at
 * an ordinal >= keep: its role is handed over as in (2) (switch_record, then (1)), the
 * candidates only among ordinals < keep, whatever their revision (a rollout then goes
 * on from the new primary); none: switch_wait while some replica below keep is linked to
 * D (one coming back, one behind), else switch_blocked. The pods >= keep are not rolled
 * meanwhile (they are about to go). The caller lowers the StatefulSet only once status
 * names a primary below keep and no switchover from a pod >= keep is recorded. */
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

#define TOPO_SWITCHOVER_MAX_LAG (INT64_C(1048576)) /* a candidate's most bytes behind */
#define TOPO_FAILOVER_TIMEOUT_MS 5000             /* FAILOVER ... TIMEOUT: the longest pause */

typedef struct {
    char pod[254];
    char ip[64];
    char primary_ip[64]; /* REPLICAOF <primary_ip> 6379; "" with no_one; FAILOVER TO it with failover_to */
    int no_one;          /* REPLICAOF NO ONE: the promotion of the designated primary */
    int failover_to;     /* FAILOVER TO <primary_ip> 6379 TIMEOUT ms on pod (SWITCHOVER) */
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
    int observed;           /* decided from an observation (else: nothing is known of Redis) */
    int healthy;
    const char *reason;
    char message[1024];
    /* FAILOVER */
    int elect;              /* record elected as status.primary, nothing else */
    int no_candidate;       /* an election found no candidate */
    char elected[254];
    char elect_why[1024];   /* old and new primary, offsets, why */
    int64_t recheck_after_ms; /* > 0: D unreachable, downAfter reached in this many ms */
    /* SWITCHOVER */
    int switch_record;      /* record switch_to as status.primary, switchover_from as D */
    char switch_to[254];
    char switchover_from[254]; /* status.switchoverFrom to write ("" none) */
    int switch_blocked;     /* a rollout cannot hand the primary role over: switch_why */
    int switch_wait;        /* a rollout waits (a pod coming back, a replica behind) */
    char switch_why[1024];
    char delete_pod[254];   /* delete this pod (uid precondition delete_uid), "" none */
    char delete_uid[128];
    char delete_why[1024];
} topo_t;

/* What a rollout needs besides the failover's inputs (SWITCHOVER). */
typedef struct {
    const char *update_revision; /* the StatefulSet's status.updateRevision; NULL or "": no rollout */
    const char *switchover_from; /* status.switchoverFrom; NULL or "": none in progress */
    int keep;                    /* SCALE-IN: > 0 and < size: the pods of ordinals keep..size-1
                                    are to go; 0: none */
} topo_roll_t;

/* The ordinal of pod <name>-<N> with N < size, or -1 when pod (NULL allowed) is not one
 * of those. */
int topo_ordinal(const char *name, int size, const char *pod);

/* Decide as above into *out (cleared first). name and size are the validated spec's;
 * status_primary may be NULL; pods and observation may be NULL (absent) or anything
 * (wrong types count as absent). The inputs are only read. */
void topo_compute(const char *name, int size, const char *status_primary, const json_object *pods,
                  const json_object *observation, topo_t *out);

/* topo_compute with FAILOVER above; down_after_ms <= 0 is topo_compute. obs_age_ms is
 * how long ago the observation was taken (0 when unknown). */
void topo_compute_failover(const char *name, int size, const char *status_primary, const json_object *pods,
                           const json_object *observation, int64_t down_after_ms, int64_t obs_age_ms, topo_t *out);

/* FRESHNESS (docs/failover.md, "Decisions after the operator's own commands"): 1 when
 * observation shows every pod of 0..size-1 (present or terminating) that has an IP as
 * probed after the operator's last Redis command: its node at the pod's IP with
 * probedAgoMs in 0..lead_ms-1, where lead_ms is how long after that command the
 * observation was taken (observedAt minus status.lastRedisCommandTime; <= 0: none is).
 * Else 0, with why (cap bytes) naming the first pod that was not. An observation that
 * is not current is none to decide from: a node probed before a command may show the
 * world as it was before it (a primary handing over, a replica repointed). Inputs as
 * topo_compute's, only read. */
int topo_observation_current(const char *name, int size, const json_object *pods, const json_object *observation,
                             int64_t lead_ms, char *why, size_t cap);

/* topo_compute_failover with SWITCHOVER above; roll NULL is topo_compute_failover. */
void topo_compute_switchover(const char *name, int size, const char *status_primary, const json_object *pods,
                             const json_object *observation, int64_t down_after_ms, int64_t obs_age_ms,
                             const topo_roll_t *roll, topo_t *out);

#endif
