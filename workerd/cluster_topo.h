/* cluster_topo: the pure decisions of a RedisCluster in mode Cluster (docs/cluster-mode.md).
 * No I/O, no clock: from the layout (shards S, replicas per shard r), each pod of the
 * layout (present, Ready, IP, terminating, outdated) and what its Redis says of the
 * cluster (its CLUSTER NODES and CLUSTER INFO, as observerd reports them), it says which
 * Redis Cluster commands to send, which role labels to set, and the cluster's status.
 *
 * LAYOUT: shard k (0..S-1) is the StatefulSet <name>-shard<k> of 1 + r pods
 * <name>-shard<k>-<j>. While the spec shrinks, the layout is wider than the spec: nshards
 * (>= S) shards of width (>= 1 + r) pods each, pod index i = k * width + j; a pod with
 * k >= S or j > r is LEAVING, the others are WANTED. A pod's shard never changes; its
 * role within the shard does (Redis Cluster fails a master over to one of its replicas).
 * Shard k's slots at bootstrap are [k * 16384 / S, (k + 1) * 16384 / S - 1], each bound
 * rounded to the nearest slot (redis-cli --cluster create's split: 0-5460, 5461-10922,
 * 10923-16383 for 3).
 *
 * Redis Cluster detects failures and promotes replicas itself (cluster-node-timeout);
 * the operator does what it cannot do alone, in this order, one step per plan (each step
 * changes what the next one sees, so the next reconcile, from a fresh observation, takes
 * it):
 *   1. MEET: the anchor (the observed node that knows, and is known by, the most nodes of
 *      the layout at their pods' IPs; ties: the lowest index) must know every observed
 *      node at its pod's current IP: CLUSTER
 *      MEET <ip> 6379 on the anchor for each one it does not know, or knows at another
 *      address (a pod back with a new IP). A MEET already in handshake with that IP is
 *      waited for, never sent twice. Gossip spreads the rest.
 *   2. FORGET: once every pod of the layout is observed (so every current node id is
 *      known), a node that none of them is, that the cluster marks fail or noaddr, that
 *      holds no slot and is nobody's master (a pod that lost its nodes.conf left its old
 *      id behind; a pod removed) is forgotten with CLUSTER FORGET <id> on every node
 *      that lists it. Handshake entries are left to Redis (they time out).
 *   3. SLOTS (only until bootstrapped): once every pod is observed and knows every other,
 *      each slot that no view of any node attributes to anyone (never assigned) is given
 *      to its shard's master with CLUSTER ADDSLOTSRANGE, the whole cluster in one pass; a
 *      crash mid-way leaves some slots assigned, and the next pass gives only the rest.
 *      A slot some view attributes to a node, alive or failed, is never assigned again:
 *      its data may live there. Bootstrapped (the caller records it in the status) once
 *      every slot is held by an observed master; after that no slot is ever assigned:
 *      an uncovered slot is reported (Degraded, SlotsUncovered, naming the slots and who
 *      held them) and waits for its node or for the user.
 *   4. REPLICATE: in each shard with exactly one master holding slots (its master), every
 *      other observed pod of the shard that is not its replica (an empty master: new, or
 *      back without its nodes.conf; a replica of another shard's master) gets CLUSTER
 *      REPLICATE <master id>, once it knows that master (gossip); an empty master never
 *      takes slots. Redis refuses to make a master that holds keys a replica, and a pod
 *      back without nodes.conf still has its AOF: a master without slots is sent FLUSHALL
 *      first (its keys are stale copies of slots its shard's master serves; the shard
 *      having a master that holds slots is the condition), and CLUSTER DELSLOTSRANGE of
 *      the slots it claims by itself (Redis, starting without nodes.conf but with keys,
 *      takes the slots of its keys with config epoch 0; the cluster gives them to
 *      others). A shard whose slots have no
 *      master (r = 0 and its master lost) has nobody to follow: its pods wait, their data
 *      kept.
 *   5. HANDOVER (ROLLOUT below): a master whose pod is terminating (kubectl delete pod, a
 *      drain) or outdated hands its role to a linked replica with CLUSTER FAILOVER on
 *      that replica (a coordinated manual failover: the replica catches up first, so no
 *      acknowledged write is lost).
 *   5b. TWO MASTERS: a shard with two masters holding slots (its master, a move's target,
 *      lost before its replica heard of the slots moved into it: the replica, promoted,
 *      took the slots it knew; the master, back with nodes.conf, kept the moved ones:
 *      simulation finding 9). Once slots may move (as for 6, without its conditions on
 *      heads and replicas), the other's slots move to the shard's chosen master (the one
 *      holding most, then the higher config epoch, then the lowest index): a move inside
 *      the shard, carried out as 6's; an open slot is finished first. The emptied master
 *      follows the one that took its last slot (Redis), or is made a replica by 4.
 *   6. RESHARD (docs/cluster-mode.md, "Resharding"; bootstrapped clusters only): once every
 *      pod is observed, met and says cluster_state:ok, every slot held, no shard with two
 *      masters and every
 *      wanted shard with a head and its replicas linked: an open slot (a node's own line
 *      shows it MIGRATING or IMPORTING: a move cut off) is finished first, from the node
 *      the cluster agrees owns it to the head of the shard it was going to (the
 *      importing node's, or the MIGRATING target's: a failover since moves the end, not
 *      the move); else, when a shard holds more or fewer slots than its share (16384 /
 *      shards, the remainder one each to the shards that hold most now; a leaving shard's
 *      share is 0), the highest slots of the first shard with too many (leaving shards
 *      first) go to the first shard with too few, at most what both can give and take,
 *      and so on until the counts are even: a move (source, target, ranges) for each such
 *      pair in one plan (an open slot: its move alone), slotmove.h carries each out (the
 *      next plan, from an older observation, finds the slots moved and skips them). A shard's
 *      HEAD is its master holding slots, or for a shard that holds none yet (new) its
 *      SEED: the observed empty master of its pods that most of them follow, else the
 *      lowest index; the shard's replicas REPLICATE to the seed as to a master (4).
 *   7. RETIRE: a leaving pod (of a shard >= shards, or of index > replicas in its shard:
 *      the spec shrank) that holds no slot and has no open slot is taken out: CLUSTER
 *      FORGET <its id> on every other node that knows it, then CLUSTER RESET HARD on it
 *      (Redis refuses that to a master that still has keys: a safety net) so that it
 *      never gossips itself back. A leaving master that holds slots in a wanted shard
 *      hands over first (CLUSTER FAILOVER on a wanted linked replica). Once every
 *      leaving pod of a shard is retired (its own view lists itself alone) or gone, the
 *      layout drops it: replicas_of[k] shrinks to 1 + replicas, keep_shard[k] = 0 for a
 *      leaving shard (its StatefulSet and budget are deleted by the caller).
 *   8. ROLLOUT: the StatefulSets roll OnDelete; when every pod is present, Ready,
 *      observed and every replica linked, the outdated replica of the highest index is
 *      deleted (delete_pod); an outdated master first hands over (5); a shard without
 *      replicas (r = 0) deletes its master in place (its data and nodes.conf are on its
 *      volume).
 * SLOT OWNERSHIP: who holds a slot is what the cluster agrees on, Redis's own rule: the
 * claim with the highest config epoch in any node's view; a node's own claim alone does
 * not count (see 4). Every "holds slots" above means that.
 *
 * Labels: cache.example.com/role primary for a master that holds slots, replica for a
 * replica, each as the pod itself reports it (Redis Cluster's own failovers are followed
 * within one observation).
 *
 * STATUS: per shard its master pod, slot ranges and replicas (link, offset); the cluster
 * state (every observed node says cluster_state:ok), slots assigned and covered, and the
 * condition ClusterHealthy (True ClusterOK, or False with the first of NotObserved,
 * Meeting, Bootstrapping, SlotsUncovered, TwoMasters, ReplicasMissing, ClusterStateFail).
 */
#ifndef RDC_WORKERD_CLUSTER_TOPO_H
#define RDC_WORKERD_CLUSTER_TOPO_H

#include "clusternodes.h"

#include <stddef.h>
#include <stdint.h>

#define CTOPO_MAX_SHARDS 20
#define CTOPO_MAX_REPLICAS 4
#define CTOPO_MAX_PODS (CTOPO_MAX_SHARDS * (1 + CTOPO_MAX_REPLICAS))
#define CTOPO_MAX_RANGES 16 /* ADDSLOTSRANGE's ranges in one command: the rest is the next plan's */
#define CTOPO_MAX_ARGS (2 + 2 * CTOPO_MAX_RANGES)
#define CTOPO_MAX_CMDS (2 * CTOPO_MAX_PODS)
#define CTOPO_PORT 6379

typedef struct {
    char pod[254];          /* <name>-shard<k>-<j> */
    int present, ready, terminating, outdated;
    char ip[64];            /* the pod's IP, "" when none */
    /* what observerd saw of it (observed 0: nothing usable: unreachable, another IP, no
     * CLUSTER NODES) */
    int observed;
    const cn_view_t *view;  /* its CLUSTER NODES (borrowed) */
    cn_info_t info;         /* its CLUSTER INFO */
    int link_up;            /* a replica's link to its master (INFO replication) */
    int64_t offset;         /* its replication offset, -1 unknown */
    const char *label;      /* its role label, NULL when none */
} ctopo_pod_t;

typedef struct {
    int shards, replicas;   /* the spec: S (3..CTOPO_MAX_SHARDS), r (0..CTOPO_MAX_REPLICAS) */
    int nshards, width;     /* the layout (LAYOUT): >= shards, >= 1 + replicas; 0: the spec's */
    int bootstrapped;       /* the status says every slot was covered once */
    int stale;              /* FRESHNESS (plan.h): some pod was not probed since the
                             * operator's last Redis command; ctopo_compute then decides
                             * nothing (no command, move, deletion or label) and waits */
    int moves_held;         /* BACKUP: a RedisBackup of the cluster is not finished: RESHARD
                             * finishes an open slot but starts no other move (a take reads
                             * each shard once; a slot moved between two shards' takes would
                             * be in both RDBs or in neither) */
    int sts_replicas[CTOPO_MAX_SHARDS]; /* each shard StatefulSet's spec.replicas, 0 none */
    ctopo_pod_t pod[CTOPO_MAX_PODS]; /* nshards * width, index k * width + j */
} ctopo_input_t;

typedef enum {
    CTOPO_MEET,
    CTOPO_FORGET,
    CTOPO_ADDSLOTS,
    CTOPO_REPLICATE,
    CTOPO_FAILOVER,
    CTOPO_FLUSH,
    CTOPO_DELSLOTS,
    CTOPO_RESET,
    CTOPO_EPOCH, /* CLUSTER BUMPEPOCH: a unique, non-zero config epoch (step 9) */
    CTOPO_NKINDS /* how many kinds: not a command */
} ctopo_cmd_kind_t;

typedef struct {
    ctopo_cmd_kind_t kind;
    int pod;                /* the pod it is sent to */
    int argc;
    char argv[CTOPO_MAX_ARGS][48];
    char why[320];
    /* FAILOVER FORCE (step 2b), for the executor's check right before it
     * (redisexec_force_check): the gone master's id, and the other candidates (every
     * present pod of the shard whose own look names it its master, whether or not that
     * look shows it replaced yet), whose INFO replication it reads: pod indexes */
    char gone[CN_ID_LEN + 1];
    int npeers;
    int peer[1 + CTOPO_MAX_REPLICAS];
} ctopo_cmd_t;

typedef struct {
    int master;             /* pod index of its master, -1 none */
    char slots[1024];       /* its master's ranges, "0-5460" (cn_ranges_text: ",..." when cut) */
    int nreplicas;          /* replicas linked to its master */
    int replica[1 + CTOPO_MAX_REPLICAS]; /* their pod indexes (linked or not), -1 ended */
} ctopo_shard_t;

#define CTOPO_MAX_MOVE_RANGES 32
#define CTOPO_MAX_MOVES CTOPO_MAX_SHARDS

/* A move of slots (RESHARD): from the source's master to the target's head. */
typedef struct {
    int source, target;     /* pod indexes */
    size_t nranges;
    cn_range_t ranges[CTOPO_MAX_MOVE_RANGES];
    int slots;              /* slots in the ranges */
    int resume;             /* 1: an open slot finished (a move cut off) */
    size_t nothers;
    int others[CTOPO_MAX_SHARDS]; /* the other masters holding slots (pod indexes) */
    size_t nreplicas;
    int replicas[CTOPO_MAX_REPLICAS]; /* the pods that follow the target (slotmove.h,
                                       * REPLICATED: their own view must credit it) */
} ctopo_move_t;

typedef struct {
    size_t ncmds;
    ctopo_cmd_t cmd[CTOPO_MAX_CMDS];
    const char *label[CTOPO_MAX_PODS]; /* "primary" / "replica" to set; NULL: leave */
    int delete_pod;         /* ROLLOUT: the pod to delete, -1 none */
    ctopo_shard_t shard[CTOPO_MAX_SHARDS];
    int bootstrapped;       /* to record (in->bootstrapped, or every slot held now) */
    int slots_assigned;     /* slots some observed master holds */
    int state_ok;           /* every observed node says cluster_state:ok (and some does) */
    int healthy;            /* ClusterHealthy */
    char reason[64];        /* ClusterOK or the first problem */
    char message[1024];
    int degraded;           /* a problem the operator will not solve alone */
    int waiting;            /* something is under way: look again soon */
    size_t nmoves;
    ctopo_move_t moves[CTOPO_MAX_MOVES]; /* RESHARD's moves, in order */
    int slots_to_move;      /* slots not yet where the layout wants them (open ones too) */
    int nshards;            /* the layout's shards */
    int replicas_of[CTOPO_MAX_SHARDS]; /* the StatefulSet replicas of each shard to keep */
    int keep_shard[CTOPO_MAX_SHARDS];  /* 0: shard k (leaving, retired) is to be deleted */
} ctopo_result_t;

/* Decide for in into out (the caller's; large: allocate it). Returns 0, or -1 when in is
 * not a layout (shards or replicas out of range). */
int ctopo_compute(const ctopo_input_t *in, ctopo_result_t *out);

/* Shard k's bootstrap range (of shards): [*from, *to]. */
void ctopo_shard_range(int shards, int k, int *from, int *to);

const char *ctopo_cmd_kind_name(ctopo_cmd_kind_t kind);

#endif
