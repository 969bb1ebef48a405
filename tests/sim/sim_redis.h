/* sim_redis: a model of N Redis servers replicating, for the failover simulation
 * (tests/sim/sim_world.h, docs/simulation.md). Pure and deterministic: no I/O, no clock
 * (the tick comes in as an argument), randomness only from the caller's sim_rng_t.
 *
 * What is modelled, per server (one per StatefulSet ordinal; its pod may come and go):
 *   - the process: running or not, frozen (SIGSTOP), cut off from the network;
 *   - its role: master, or replica of an address (REPLICAOF host port), with the link
 *     (up, down since when), a full resynchronisation in progress;
 *   - its data as a position in a history tree: every time a server becomes a master
 *     (a restart, REPLICAOF NO ONE, the target of FAILOVER) it starts a history of its
 *     own forked from the data it held, so two masters never write "the same" history.
 *     A write is (history, position); a server holds it when the write lies on its
 *     history's ancestry below the length it holds. The reported replication offset is
 *     length - the history's base (a restarted server starts again at 0, a promoted one
 *     carries on, as Redis's replid/replid2 do);
 *   - replication: a linked replica receives its master's writes with a small lag; a
 *     (re)connecting replica resynchronises partially when its history is its master's
 *     (or the parent of a promoted master's, replid2) and it is not ahead, else in full
 *     (it keeps its old data until the transfer ends, then takes the master's); a
 *     replica serves replicas of its own (chained) only while its own link is up
 *     (-NOMASTERLINK otherwise); a server whose master changes history (promoted,
 *     resynchronised, restarted) drops its followers, which reconnect; a killed master's replicas see the link drop at
 *     once, a frozen or cut-off one's after repl-timeout (60 s);
 *   - min-replicas-to-write / min-replicas-max-lag: a master with fewer replicas linked
 *     and acknowledging within the lag refuses writes (NOREPLICAS);
 *   - WAIT 1: a write is acknowledged once a replica linked to its master holds it;
 *   - FAILOVER TO host port TIMEOUT ms: the master pauses writes until the target (a
 *     linked replica) holds every write, then the target is promoted and the old master
 *     follows it (partial resync); past the timeout it aborts and the master goes on;
 *   - INFO replication text of a server as Redis writes it (role, master_host,
 *     master_link_status, master_link_down_since_seconds, slaveN lines, offsets,
 *     master_failover_state), which the real parsers read (observerd/redisinfo.h,
 *     workerd/redisexec.h).
 * Not modelled: the keyspace itself (writes are counted, not stored), the backlog size,
 * disk (a restart with data keeps everything: AOF with fsync, a process kill loses
 * nothing the kernel has), diskless loading, replica-serve-stale-data.
 */
#ifndef RDC_TESTS_SIM_REDIS_H
#define RDC_TESTS_SIM_REDIS_H

#include "sim_rng.h"

#include <stddef.h>
#include <stdint.h>

#define SR_MAX_NODES 8
#define SR_TICK_MS 100                  /* one step of the simulation */
#define SR_WRITE_BYTES 100              /* offsets move by this much a write */
#define SR_REPL_TIMEOUT_TICKS 600       /* repl-timeout 60 s */
#define SR_RECONNECT_TICKS 10           /* a replica retries its master every second */
#define SR_PING_TICKS 100               /* an idle master PINGs its replicas: repl-ping-replica-period 10 s */

typedef enum { SR_MASTER = 0, SR_REPLICA } sr_role_t;

/* Why a write is refused (sr_write_refusal). */
typedef enum {
    SR_OK = 0,
    SR_GONE,       /* nothing listens (process down, no such address): connection refused */
    SR_NO_ANSWER,  /* frozen or cut off: the client times out */
    SR_PAUSED,     /* FAILOVER in progress: the write waits */
    SR_READONLY,   /* a replica */
    SR_NOREPLICAS  /* min-replicas-to-write not met */
} sr_refusal_t;

typedef struct {
    int parent;    /* -1: a root (an empty server's) */
    int64_t fork;  /* data length at which it left parent */
    int64_t base;  /* offset = length - base */
    int promoted;  /* 1: started by a promotion (its followers of parent resync partially) */
} sr_hist_t;

typedef struct {
    /* the process */
    int running;
    int frozen;
    int64_t frozen_since;
    int isolated;         /* cut off from every peer (clients, other servers, operator) */
    int ip;               /* the address it listens on (its pod's IP); 0 none */
    /* replication */
    sr_role_t role;
    int master_ip;        /* replica: the address it follows */
    int link_up;
    int64_t link_down_since; /* tick the link went down (or the replica was made one) */
    int64_t last_io;      /* replica: last tick its master was heard from */
    int syncing;          /* a full resynchronisation in progress */
    int64_t sync_done;    /* ... ends at this tick */
    int sync_hist;        /* ... from the master while it had this history */
    int64_t next_connect; /* tick of the next attempt to reach the master */
    /* data */
    int hist;
    int64_t len;
    /* settings (from redis.conf at start) */
    int min_replicas;
    int max_lag_s;
    /* FAILOVER TO, on a master */
    int fo_target;        /* target address; 0 none */
    int64_t fo_deadline;
} sr_node_t;

typedef struct {
    sr_node_t n[SR_MAX_NODES];
    int count;
    sr_hist_t *hists;
    size_t nhists, caphists;
    int64_t promotions;   /* REPLICAOF NO ONE or FAILOVER that made a replica a master */
} sr_cluster_t;

/* A write: where it lies. */
typedef struct {
    int hist;
    int64_t pos;
} sr_write_t;

/* An empty cluster of count servers (<= SR_MAX_NODES), none running, each holding no
 * data (history 0, the empty root). Returns 0, or -1 when out of memory. */
int sr_init(sr_cluster_t *c, int count);

/* Free what sr_init allocated. */
void sr_free(sr_cluster_t *c);

/* The server listening at ip, or -1. */
int sr_at(const sr_cluster_t *c, int ip);

/* Start server i at ip (its container started): a master with the data it had on disk
 * (with_data) or none, offset 0 again, min-replicas settings as given. */
void sr_start(sr_cluster_t *c, int i, int ip, int with_data, int min_replicas, int max_lag_s, int64_t tick);

/* Stop server i (killed, or shut down): its data stays on disk. */
void sr_stop(sr_cluster_t *c, int i);

/* SIGSTOP of server i (running). */
void sr_freeze(sr_cluster_t *c, int i, int64_t tick);

/* SIGCONT of server i. A replica frozen past repl-timeout finds its master dropped it
 * (its link is down). */
void sr_thaw(sr_cluster_t *c, int i, int64_t tick);

/* 1 when a peer (another server, a client, the operator) gets an answer from server i:
 * running, not frozen, not cut off. */
int sr_answers(const sr_cluster_t *c, int i);

/* REPLICAOF ip 6379 on server i (which must answer). Following ip already: nothing. */
void sr_replicaof(sr_cluster_t *c, int i, int ip, int64_t tick);

/* REPLICAOF NO ONE on server i (which must answer): a replica becomes a master of a
 * history of its own. Returns 1 when it was a replica, 0 when a master already. */
int sr_no_one(sr_cluster_t *c, int i, int64_t tick);

/* FAILOVER TO target_ip 6379 TIMEOUT timeout_ms on server i (a master). Returns 0, or -1
 * when Redis refuses it (not a master, target not a linked replica, one in progress). */
int sr_failover_to(sr_cluster_t *c, int i, int target_ip, int64_t timeout_ms, int64_t tick);

/* One step of replication for every server: links, resynchronisations, streaming,
 * FAILOVER progress. promoted (may be NULL) gets the servers a FAILOVER promoted in this
 * step (-1 terminated), at most SR_MAX_NODES. */
void sr_step(sr_cluster_t *c, int64_t tick, sim_rng_t *rng, int *promoted);

/* Whether server i would take a client's write now (SR_OK) or why not. */
sr_refusal_t sr_write_refusal(const sr_cluster_t *c, int i, int64_t tick);

/* Append a write on server i (sr_write_refusal said SR_OK); returns where it lies. */
sr_write_t sr_write(sr_cluster_t *c, int i);

/* 1 when a replica linked to master i holds w (WAIT 1 would return 1). */
int sr_acked(const sr_cluster_t *c, int i, sr_write_t w, int64_t tick);

/* 1 when server i holds w. w.hist < 0 (no write) is held by everyone. */
int sr_holds(const sr_cluster_t *c, int i, sr_write_t w);

/* 1 when master i has a replica linked that would acknowledge a write now. */
int sr_can_ack(const sr_cluster_t *c, int i, int64_t tick);

/* The offset server i reports. */
int64_t sr_offset(const sr_cluster_t *c, int i);

/* INFO replication of server i as Redis writes it, into out[cap] (truncated to fit). */
void sr_info(const sr_cluster_t *c, int i, int64_t tick, char *out, size_t cap);

/* INFO keyspace of server i as Redis writes it (a line for db0 when it holds data: a
 * write is counted as a key), into out[cap]. */
void sr_info_keyspace(const sr_cluster_t *c, int i, char *out, size_t cap);

/* The dotted form of ip into out[cap]. */
void sr_ip_str(int ip, char *out, size_t cap);

/* The address of dotted text s, or 0 when it is not one of ours. */
int sr_ip_parse(const char *s);

#endif
