/* sim_cluster: a deterministic simulation of a RedisCluster in mode Cluster under faults,
 * with the operator's own decisions linked in (docs/simulation.md, "Cluster mode").
 *
 * Every step is 100 ms of simulated time. The world holds:
 *   - Redis Cluster, modelled node by node (a node is a node id: a pod that loses its
 *     nodes.conf comes back as a new one): its role and master, config epoch and
 *     currentEpoch, its own slot table (the owner of each of the 16384 slots as it
 *     believes, Redis's highest-config-epoch rule applied to what it hears, UPDATE
 *     messages included), its IMPORTING/MIGRATING slots, what it knows of every other
 *     node (address or noaddr, pfail, fail, epoch, master), handshakes, its keys (a
 *     value generation per key) and its replication (the address it follows, full
 *     resynchronisation, catch-up, offset). The cluster bus: every linked pair hears the
 *     other each step (liveness) and exchanges claims, UPDATEs and gossip every second;
 *     PFAIL after cluster-node-timeout (3 s), FAIL once a majority of the masters with
 *     slots report it (failure reports travel in gossip, which leaves out noaddr nodes),
 *     FAIL cleared as Redis clears it; a PONG from another node id at a node's address
 *     marks it noaddr, and Redis 7.0's clusterCron never times a noaddr node out (no
 *     PFAIL, so no FAIL, so no failover). Replica promotion as Redis does it: the
 *     replicas of a failed master elect after 500 ms + random + rank (offset) x 1 s, a
 *     majority of the masters with slots must vote (one vote per epoch, none for the
 *     same master within twice the timeout), the winner bumps currentEpoch and takes
 *     its master's slots; a master hearing its slots claimed with a higher epoch (or an
 *     UPDATE) gives them up and, left with none, follows the new owner
 *     (cluster-allow-replica-migration), deleting the keys of slots it lost otherwise;
 *     config epoch collisions resolved by the smaller node id. Start without nodes.conf
 *     but with an AOF: the node claims the slots of its keys at epoch 0.
 *   - the commands the operator sends, answered as Redis 7 answers them, refusals
 *     included: CLUSTER MEET, FORGET (60 s blacklist), ADDSLOTSRANGE, DELSLOTSRANGE,
 *     REPLICATE, FAILOVER (a coordinated manual failover: catch-up, then a vote),
 *     RESET HARD (a new node id), FLUSHALL, and for slot moves CLUSTER NODES, SETSLOT
 *     IMPORTING/MIGRATING/NODE (the epoch bump without consensus), GETKEYSINSLOT,
 *     MIGRATE (BUSYKEY, REPLACE).
 *   - pods: one per StatefulSet ordinal, a fixed IP each (a restarted container keeps
 *     its pod's address); a shard's StatefulSet created when spec.cluster.shards grows,
 *     deleted when the operator's layout drops it.
 *   - observerd: each pod's CLUSTER NODES, cluster_state, link and offset taken every
 *     second, delivered 0..2 s late (later under a stall fault).
 *   - workerd: cluster_topo's ctopo_compute decides each reconcile from the delivered
 *     observations (each node's CLUSTER NODES text parsed by cn_parse), its commands
 *     run in order (the first refusal stops the plan), its slot moves by slotmove_run
 *     (the real state machine) over the model; a reconcile on news or on the plan's
 *     requeue.
 *   - a client: SET then WAIT 1 on keys spread over the slots, routed like a cluster
 *     client (a node's slot table, -MOVED, -ASK during a move); a write is
 *     acknowledged when a replica linked to its master holds it within 1 s.
 * Faults (sc_fault_t) are drawn from the seed, one at a time unless cfg.overlap; the
 * layout goes 3 -> 4 -> 3 shards during every run. Invariants:
 *   - never two masters claiming a slot with the same config epoch (checked whenever
 *     claims changed, at most every second);
 *   - no acknowledged key lost: a replica promoted holds every acknowledged key of the
 *     slots it takes; a write landing on the slot's owner finds the acknowledged value
 *     there; after convergence the owner of each key's slot holds it;
 *   - convergence within cfg.converge_within steps of the tail's start (no faults in the
 *     tail): the spec's shards only, every node knowing every other at its address with
 *     no failure flag, every slot table the same, all 16384 slots owned by masters of
 *     the layout, each shard one master holding slots and its R replicas linked and
 *     caught up, no slot importing or migrating.
 */
#ifndef RDC_TESTS_SIM_CLUSTER_H
#define RDC_TESTS_SIM_CLUSTER_H

#include <stdint.h>
#include <stdio.h>

typedef enum {
    SC_F_KILL_MASTER = 0,  /* SIGKILL of a master; back 0.5..6 s later with nodes.conf and AOF */
    SC_F_KILL_REPLICA,     /* SIGKILL of a replica; back 0.5..6 s later with nodes.conf and AOF,
                              or with neither */
    SC_F_LOSE_CONF,        /* a master's pod back without nodes.conf (a new node id) nor AOF,
                              after the cluster marked the old id FAIL; never the 4th shard's
                              (see SC_F_LOSE_LEAVING) */
    SC_F_STALE_AOF,        /* a master's or a replica's pod back without nodes.conf but with its
                              AOF (the master's after FAIL): it claims its keys' slots at epoch 0
                              (finding 1) */
    SC_F_LOSE_CONF_EARLY,  /* a master's pod back without nodes.conf (its AOF kept) 0.5..2.5 s
                              later, before the old id is FAIL: the old id goes noaddr, never
                              failed over by Redis (finding 2) */
    SC_F_LOSE_LEAVING,     /* lose-conf of the 4th shard's master while the spec drops it, before
                              its slots moved out (finding 4) */
    SC_F_DELETE_MASTER,    /* kubectl delete pod of a master: terminating until its node is a
                              replica (the operator's handover) or 30 s; recreated 2..5 s later
                              with its volume, at a new IP half the time */
    SC_F_PARTITION,        /* one pod cut off from everyone for 1..15 s */
    SC_F_OPERATOR_CRASH,   /* the operator killed mid-plan (between commands, mid slot move) */
    SC_F_OBS_LATE,         /* observations 1..2.5 s late for 5..30 s */
    SC_F_OBS_STALL,        /* observations 3..10 s late for 5..30 s (finding 3's trigger) */
    SC_F_KILL_TARGET,      /* SIGKILL of a slot move's target 0.1..0.3 s after a run moved keys
                              into it (half the runs), back 0.5..6 s later with nodes.conf and
                              AOF (the trigger of findings 5 and 9); not drawn with the others
                              but by the runs, so the kinds above keep each seed's schedule */
    SC_F_COUNT
} sc_fault_t;

#define SC_F_DRAWN SC_F_KILL_TARGET /* the kinds drawn at random times: those before it */
#define SC_FAULT_BIT(f) (1u << (f))
#define SC_FAULTS_ALL (SC_FAULT_BIT(SC_F_COUNT) - 1)
/* The triggers of findings still open (test_sim_cluster.c), off by default: none since
 * finding 9's fix (kill-target joined the default set then). stale-aof and lose-leaving
 * joined it with finding 8's fix, lose-conf-early and obs-stall with the FRESHNESS rule of
 * Cluster mode. */
#define SC_FAULTS_FOUND 0u
#define SC_FAULTS_DEFAULT (SC_FAULTS_ALL & ~SC_FAULTS_FOUND)
/* The sets the findings' seeds were found with, before kill-target existed. */
#define SC_FAULTS_ALL_V1 (SC_FAULT_BIT(SC_F_KILL_TARGET) - 1)
#define SC_FAULTS_DEFAULT_V1 (SC_FAULTS_ALL_V1 & ~(SC_FAULT_BIT(SC_F_STALE_AOF) | SC_FAULT_BIT(SC_F_LOSE_LEAVING)))

typedef struct {
    uint64_t seed;
    int64_t steps;           /* of the whole run, the tail included */
    int64_t tail;            /* the last steps, without faults */
    int64_t converge_within; /* steps from the tail's start */
    int replicas;            /* per shard, 1..2; 0: drawn from the seed */
    int overlap;             /* faults may overlap */
    unsigned faults;         /* bits of sc_fault_t; 0: SC_FAULTS_DEFAULT */
    int64_t fault_every;     /* mean steps between faults; 0: 300 */
    int no_reshard;          /* 1: the layout stays 3 shards */
    FILE *trace;             /* every event as a line, or NULL */
    int trace_why;           /* with a trace, each command's reason (SIM_TRACE=2) */
    int no_force_guard;      /* 1: the executor's guard of FAILOVER FORCE left out (finding 8's
                              * fix: its rows show the seed fails without it) */
    int no_move_wait;        /* 1: slot moves without WAIT on the target (finding 5's fix) nor the
                              * target's replicas' view of the slots (finding 9's) */
    int no_broadcast;        /* 1: the model of before finding 9: SETSLOT NODE closing an import
                              * sends no PONG to every node (Redis 7 does): the cluster hears of
                              * the target's new slots at the next step */
} sc_cfg_t;

typedef struct {
    int failed;
    int64_t step;
    char why[1024];
    uint64_t digest;         /* of every event: equal for equal seeds and configurations */
    int replicas;
    int64_t steps, writes, acked, reconciles, decisions, commands, refused, moves, slots_moved, keys_moved;
    int64_t unsafe_acked;    /* acknowledged by a master flagged FAIL somewhere: not kept by Redis */
    int64_t elections, manual_failovers, noaddr, reshards_done;
    int64_t faults[SC_F_COUNT];
    int64_t recoveries, recover_max_steps;
    int64_t converged_after; /* steps from the tail's start to convergence; -1 never */
} sc_result_t;

/* A whole run. Returns 0 when every invariant held, 1 when one broke (out says which
 * and when), -1 when the world could not be made. */
int sc_run(const sc_cfg_t *cfg, sc_result_t *out);

/* The name of a fault kind ("kill-master", ...). */
const char *sc_fault_name(int f);

#endif
