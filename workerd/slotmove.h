/* slotmove: moving hash slots of a Redis Cluster from one master to another with Redis's
 * own protocol, resumable from any point (docs/cluster-mode.md, "Resharding").
 *
 * THE STEPS of one slot s from source S to target T (ids and addresses in the job):
 *   IMPORTING   on T: CLUSTER SETSLOT s IMPORTING <S>   (T accepts ASKING clients for s)
 *   MIGRATING   on S: CLUSTER SETSLOT s MIGRATING <T>   (S sends -ASK for keys it lacks)
 *   GETKEYS     on S: CLUSTER GETKEYSINSLOT s <count> (LISTING); none left: NODE_TARGET
 *   SIZES       on S: MEMORY USAGE of the listed keys not sized yet, pipelined (LISTING):
 *               the batch is the keys whose sizes sum to batch_bytes (at least one key)
 *   MIGRATE     on S: MIGRATE <T ip> <T port> "" 0 <timeout> [REPLACE] [AUTH <pw>] KEYS ...;
 *               then SIZES again while keys the last GETKEYS listed are left, else GETKEYS
 *   NODE_TARGET on T: CLUSTER SETSLOT s NODE <T>        (T owns s; CLOSING: the group's
 *               in one MULTI/EXEC, one epoch bump)
 *   NODE_SOURCE on S: CLUSTER SETSLOT s NODE <T>        (S forgets MIGRATING; Redis
 *               refuses while S still holds a key of s)
 *   NODE_OTHERS on each other master: CLUSTER SETSLOT s NODE <T> (gossip would tell them
 *               too; an error is ignored)
 *
 * RESUMING: every slot starts at IMPORTING whatever happened before, and the answers say
 * where it stands: T answering "I'm already the owner" (an earlier NODE_TARGET) goes on
 * at NODE_SOURCE; IMPORTING and MIGRATING set again are what they were; GETKEYS finds
 * the keys still to move; a MIGRATE cut off after copying a key and before deleting it
 * leaves it on both sides, and the next MIGRATE's BUSYKEY is answered with REPLACE (the
 * source's copy is the one written last: while s is MIGRATING a client writes a key S
 * still has on S, and one S lacks on T). So a worker, the operator or a pod killed at any
 * step leaves slots the next run finishes (tests/unit/test_slotmove.c runs the machine
 * from every point against a model of Redis's answers, and test_cluster_live.c against
 * real servers). Any other error answer, or a connection failure, stops the run with
 * Redis's words: the next reconcile looks at CLUSTER NODES again first.
 *
 * A run first asks the source for CLUSTER NODES: a slot it neither owns nor has MIGRATING
 * (moved since the plan's observation) is skipped.
 *
 * GROUPS: the slots go in groups of up to SLOTMOVE_MAX_GROUP (job->group_slots), each
 * slot's machine as above, the group's in lockstep: each step of the group is one
 * pipeline to its node (IMPORTING of every slot to T, then MIGRATING to S, GETKEYS to S,
 * MEMORY USAGE of their keys to S, their MIGRATEs to S, NODE to T, to S, to each other
 * master), so a group costs about as many round trips as one slot did, and Redis saves
 * its nodes.conf once per pipeline rather than once per slot. One batch (the MIGRATEs
 * after one GETKEYS and SIZES round) is at most batch_bytes in all, at least one key: a
 * slot's keys that do not fit wait, listed and maybe sized, for the next batch (LISTING).
 * A MIGRATE ... KEYS names keys of one slot (Redis: CROSSSLOT), so a batch is one MIGRATE
 * per slot. Each reply is fed to
 * its own slot's machine; a refusal stops the run after its pipeline, a connection lost
 * stops it with every slot of the pipeline unanswered. Either way, and at any point a
 * worker is killed, up to a group of slots is left open, each in a state RESUMING
 * finishes: the plan resumes every open slot of the same source and target in one move
 * (cluster_topo.c, RESHARD). A run stopped by its budget mid-group still closes the slots
 * already emptied.
 *
 * CLOSING: SETSLOT NODE <T> on T while T imports s bumps T's epoch (when not already the
 * highest) and sends every node a PONG, which each node digests by walking all the slots
 * of the claim and saving its nodes.conf: 64 of them at once stalled every node's clients
 * (docs/cluster-mode.md, "CLOSING"). So the NODE_TARGET round is one transaction to T:
 * MULTI, then SETSLOT s STABLE and SETSLOT s NODE <T> for every slot but the last (the
 * STABLE clears T's IMPORTING: that NODE bumps and tells nothing), SETSLOT NODE <T> of
 * the last alone (the one bump, one PONG carrying the whole group), EXEC. No client is
 * served between a slot's STABLE and NODE; a worker killed before EXEC leaves none done.
 * Each slot is fed its NODE's element of EXEC's answer (its STABLE's when that failed).
 *
 * LISTING: each key is listed and sized once. A GETKEYS asks for about as many keys as a
 * batch takes (slotmove_list_count: SLOTMOVE_FIRST_KEYS until the run has sized a key,
 * then batch_bytes over the mean size seen, 1 to SLOTMOVE_MAX_KEYS), and the slot's
 * listed keys and their sizes stay with the run until they have all gone in MIGRATEs:
 * the next GETKEYS of the slot comes only then (and the last one, answering none, closes
 * it). SIZES asks MEMORY USAGE only of listed keys not sized yet, in the group's order,
 * only as many as the batch may take (the sizes known, the mean for those asked), in
 * pipelines of at most SLOTMOVE_SIZES_ROUND commands (SLOTMOVE_FIRST_KEYS before any size
 * is known) so that the source serves its clients between them, as between pipelines of
 * MIGRATEs; a key sized and not taken waits, sized, for the next batch. What the run keeps
 * is its memory only: a run resumed lists again. A kept key gone from the source since
 * (deleted, expired) is skipped by MIGRATE (NOKEY when it names none left); the source
 * gains no key of s while s is MIGRATING (a write of a key it lacks is sent to T with
 * -ASK), and a key it did would be listed by the GETKEYS that ends the slot anyway.
 *
 * PIPELINES: MIGRATE blocks the source until the target has restored its keys, and Redis
 * runs a pipeline's commands one after the other before it serves another client, so the
 * longest a client of the source waits is one pipeline of MIGRATEs: each a round trip from
 * S to T (a fixed cost, dominant with few keys a slot) plus its keys' bytes. A batch's
 * MIGRATEs therefore go in pipelines of at most job->pipeline_bytes (their keys' MEMORY
 * USAGE summed; SLOTMOVE_DEFAULT_PIPELINE_BYTES) and at most job->pipeline_migrates
 * MIGRATEs (SLOTMOVE_PIPELINE_MIGRATES), at least one MIGRATE each, in the group's order;
 * and one slot's MIGRATE is itself at most pipeline_bytes, at least one key (the slot's
 * other keys wait for the next batch, as above). The source serves its other clients
 * between two pipelines; the cost is a round trip from the worker to S per pipeline
 * (bench/README.md, "The longest pause": the defaults come from that table).
 *
 * REPLICATED (wait_replicas > 0): MIGRATE deletes the keys on the source as soon as the
 * target has them, and the target's replicas get them asynchronously, so a failover of
 * the target before that loses them (docs/simulation.md, finding 5). A run that moved
 * keys therefore ends by confirming that wait_replicas of the target's replicas hold
 * them: INFO replication on the target gives its master_repl_offset O (every RESTORE
 * included); while fewer than wait_replicas replica lines say state=online with an
 * offset >= O, WAIT <connected + 1> SLOTMOVE_ACK_WAIT_MS on the target asks its replicas
 * to acknowledge now (Redis sends REPLCONF GETACK when a WAIT blocks; WAIT itself cannot
 * count the RESTOREs: it waits only for the calling connection's own writes, and the
 * RESTOREs are the source's) and INFO replication is read again, until
 * SLOTMOVE_CONFIRM_NS has passed: then the run fails ("the target's replicas did not
 * acknowledge"), and the next plan moves nothing until the target's replicas are linked
 * again. A run stopped by its budget confirms too; a failed one does not (it reports
 * its own failure). With the target's replicas in the job, a run that closed slots also
 * waits, within the same time, until wait_replicas of them credit the target with every
 * slot it closed in their own CLUSTER NODES (docs/simulation.md, finding 9: a target lost
 * before its replica heard of its new slots leaves the replica promoted with the old set
 * and the old master, back, holding the moved ones: two masters in one shard). The
 * window left is a batch's replication latency: a target lost before its replica received
 * a batch loses it, as with redis-cli --cluster reshard.
 *
 * The machine (slotmove_t, slotmove_feed) is pure; slotmove_run drives it over an io_t
 * (real connections: slotmove_io_sync.c; a model of Redis in the unit test).
 */
#ifndef RDC_WORKERD_SLOTMOVE_H
#define RDC_WORKERD_SLOTMOVE_H

#include "clusternodes.h"
#include "redis_tls.h"

#include <hiredis/hiredis.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define SLOTMOVE_MAX_RANGES 64
#define SLOTMOVE_MAX_OTHERS 24 /* the other masters: shards at most 20, and some leaving */
#define SLOTMOVE_MAX_REPLICAS 4 /* the target's replicas: replicasPerShard at most 4 */
#define SLOTMOVE_MAX_KEYS 1000            /* GETKEYSINSLOT's count, keys in one MIGRATE at most */
#define SLOTMOVE_FIRST_KEYS 16            /* LISTING: GETKEYSINSLOT's count, MEMORY USAGEs of a
                                           * pipeline, before a key's size is known */
#define SLOTMOVE_SIZES_ROUND 128          /* LISTING: MEMORY USAGEs of one pipeline at most */
#define SLOTMOVE_MAX_GROUP 64             /* slots moved in lockstep (GROUPS), at most and by default */
#define SLOTMOVE_DEFAULT_BATCH_BYTES (1 << 20)
#define SLOTMOVE_DEFAULT_PIPELINE_BYTES (64 << 10) /* PIPELINES: a pipeline's MIGRATEs' bytes */
#define SLOTMOVE_PIPELINE_MIGRATES 4              /* PIPELINES: a pipeline's MIGRATEs */
#define SLOTMOVE_DEFAULT_BUDGET_NS (INT64_C(8000000000))
#define SLOTMOVE_PACE_TICK_NS (INT64_C(500000000)) /* a keepalive at least this often while paced */
#define SLOTMOVE_MIGRATE_TIMEOUT_MS 5000
#define SLOTMOVE_ACK_WAIT_MS 10                        /* REPLICATED: one WAIT's block */
#define SLOTMOVE_CONFIRM_NS (INT64_C(2000000000))      /* REPLICATED: at most this long */

typedef enum {
    SLOTMOVE_IMPORTING,
    SLOTMOVE_MIGRATING,
    SLOTMOVE_GETKEYS,
    SLOTMOVE_SIZES,
    SLOTMOVE_MIGRATE,
    SLOTMOVE_NODE_TARGET,
    SLOTMOVE_NODE_SOURCE,
    SLOTMOVE_NODE_OTHERS,
    SLOTMOVE_DONE,
    SLOTMOVE_FAILED
} slotmove_state_t;

/* Where a command goes. */
enum { SLOTMOVE_TO_SOURCE = -1, SLOTMOVE_TO_TARGET = -2 }; /* else: others[i], or replicas[i - MAX_OTHERS] */
#define SLOTMOVE_TO_REPLICA(i) (SLOTMOVE_MAX_OTHERS + (int)(i))

typedef struct {
    char pod[254];
    char ip[64];
    int port;
    char id[CN_ID_LEN + 1];
} slotmove_node_t;

typedef struct {
    char cluster[254];                      /* the RedisCluster's name (metrics) */
    slotmove_node_t source, target;
    size_t nothers;
    slotmove_node_t others[SLOTMOVE_MAX_OTHERS]; /* the other masters */
    size_t nranges;
    cn_range_t ranges[SLOTMOVE_MAX_RANGES]; /* the slots, in this order */
    int64_t batch_bytes;                    /* > 0 */
    int64_t pipeline_bytes;                 /* PIPELINES: one pipeline's MIGRATEs carry at most
                                             * this; 0: SLOTMOVE_DEFAULT_PIPELINE_BYTES */
    int pipeline_migrates;                  /* PIPELINES: MIGRATEs in one pipeline at most; 0
                                             * (and above SLOTMOVE_MAX_GROUP): SLOTMOVE_
                                             * PIPELINE_MIGRATES (not in the JSON body) */
    int64_t max_bytes;                      /* stop once this much moved; 0: no bound */
    int64_t budget_ns;                      /* stop (resumable) after this long; > 0 */
    int64_t bytes_per_second;               /* pace: the run waits before each batch and each
                                             * pipeline of MIGRATEs so that what it moved
                                             * is due at this rate; 0: none */
    int wait_replicas;                      /* REPLICATED: replicas of the target that must
                                             * hold the moved keys; 0: not confirmed */
    int group_slots;                        /* GROUPS: slots moved in lockstep; 0 (and above
                                             * SLOTMOVE_MAX_GROUP): SLOTMOVE_MAX_GROUP (not in
                                             * the JSON body: a tuning of this code's) */
    size_t nreplicas;
    slotmove_node_t replicas[SLOTMOVE_MAX_REPLICAS]; /* REPLICATED: the target's replicas, whose
                                             * own CLUSTER NODES must credit it with the
                                             * slots moved; none: not asked */
} slotmove_job_t;

/* One slot's machine. */
typedef struct {
    slotmove_state_t state;
    int slot;
    int replace;          /* the next MIGRATE with REPLACE (after a BUSYKEY) */
    size_t other;         /* NODE_OTHERS: the next of job->others */
    size_t nkeys;         /* keys the last GETKEYS gave */
    size_t moved;         /* of them, those MIGRATE took already (the first moved) */
    size_t take;          /* keys the next MIGRATE moves (take after the moved ones) */
    char why[256];        /* FAILED: the command and Redis's answer */
} slotmove_t;

/* What a run did. */
typedef struct {
    int slots_done;       /* slots now owned by the target and closed */
    int skipped;          /* slots the source no longer has (moved since the plan was made) */
    int64_t keys, bytes;  /* keys migrated, their MEMORY USAGE summed */
    int commands;         /* commands sent */
    int round_trips;      /* pipelines sent (each one round trip), CLUSTER NODES included */
    int migrate_rounds;   /* of which pipelines of MIGRATEs (PIPELINES) */
    int stopped;          /* 1: the budget or max_bytes ended it before every slot */
    int failed;           /* 1: an error stopped it (err says it) */
} slotmove_progress_t;

/* The commands' transport: command(user, to, argc, argv, lens) is the reply (the caller
 * frees it) or NULL with err when the node could not be asked (lens: each argument's
 * bytes, keys being binary); pipeline(user, to, n, argcs, argvs, lenss, replies) sends n
 * commands to the node at once and fills replies[0..n) (the caller's), returning 0, or -1
 * with err when the node could not be asked or stopped answering (every replies[i] NULL
 * then, as redis_sync_pipeline); NULL: the commands go one by one through command. */
typedef struct {
    redisReply *(*command)(void *user, int to, int argc, const char *const *argv, const size_t *lens, char *err,
                           size_t errlen);
    int (*pipeline)(void *user, int to, size_t n, const int *argcs, const char *const *const *argvs,
                    const size_t *const *lenss, redisReply **replies, char *err, size_t errlen);
    int64_t (*now_ns)(void *user); /* a monotonic clock */
    void *user;
    void (*tick)(void *arg);        /* between slots and batches: the caller's keepalive; NULL none */
    void *tick_arg;
    void (*wait)(void *user, int64_t ns); /* block this long (bytes_per_second); NULL: the
                                           * run stops instead of waiting */
} slotmove_io_t;

/* The node a command to `to` goes to (SLOTMOVE_TO_SOURCE, _TARGET, others[i],
 * SLOTMOVE_TO_REPLICA(i)). */
const slotmove_node_t *slotmove_node(const slotmove_job_t *job, int to);

/* Start s's machine at IMPORTING. */
void slotmove_start(slotmove_t *m, int slot);

/* The state's name ("importing", ...). */
const char *slotmove_state_name(slotmove_state_t state);

/* Feed the answer to the command of m's state (reply NULL: the node could not be
 * asked, err_line says why) and move on. For GETKEYS the caller keeps the reply's keys
 * until they have all gone in MIGRATEs; for SIZES it passes the sizes instead (reply NULL,
 * sizes non-NULL: of the keys not moved yet, nkeys - moved). Pure. */
void slotmove_feed(slotmove_t *m, const slotmove_job_t *job, const redisReply *reply, const int64_t *sizes,
                   const char *err_line);

/* LISTING: GETKEYSINSLOT's count after a run has sized keys_seen keys of bytes_seen bytes
 * in all: SLOTMOVE_FIRST_KEYS when none, else the keys of that mean size batch_bytes
 * holds, within 1..SLOTMOVE_MAX_KEYS. Pure. */
size_t slotmove_list_count(int64_t batch_bytes, int64_t bytes_seen, int64_t keys_seen);

/* REPLICATED: how many replica lines of the INFO replication text info say state=online
 * with an acknowledged offset >= offset. Pure. */
int slotmove_acked(const char *info, int64_t offset);

/* Run the job's slots over io in GROUPS, password for MIGRATE's AUTH (NULL or "":
 * none). Stops at the first failure (progress->failed, err), or when the budget or
 * max_bytes is spent (progress->stopped): at a group's start, or between batches once
 * twice the budget is (the group's slots still holding keys left open, as RESUMING
 * says). Returns 0 when every slot is done, 1 when stopped, -1 when failed. */
int slotmove_run(const slotmove_job_t *job, const slotmove_io_t *io, const char *password,
                 slotmove_progress_t *progress, char *err, size_t errlen);

/* Count what a run moved in the process's metrics: rdc_redis_cluster_moved_keys_total,
 * rdc_redis_cluster_moved_bytes_total and rdc_redis_cluster_moved_slots_total, labels
 * namespace and rediscluster. */
void slotmove_count(const char *ns, const char *cluster, const slotmove_progress_t *progress);

/* The job as a plan action's body: {"cluster": name, "slots": "0-5,9", "source": {"pod","ip","port","id"},
 * "target": {...}, "others": [{...}], "batchBytes": n, "maxBytes": n, "budgetMs": n,
 * "bytesPerSecond": n, "waitReplicas": n}. A
 * new object, NULL when out of memory. */
json_object *slotmove_job_to_json(const slotmove_job_t *job);

/* The job from such a body. Returns 0, or -1 with err when the body is not one. */
int slotmove_job_from_json(const json_object *body, slotmove_job_t *job, char *err, size_t errlen);

/* Run job on real connections (redis_sync, 2 s per command, MIGRATE's own timeout
 * more), with password for AUTH and MIGRATE (fallback: a rotation's old one). As
 * slotmove_run. */
int slotmove_run_sync(const slotmove_job_t *job, const char *password, const char *password_fallback,
                      slotmove_progress_t *progress, char *err, size_t errlen);

/* slotmove_run_sync over TLS with tls's settings (spec.tls; NULL: plain text), each node's
 * certificate checked for "<pod>.<tls_domain>" (tls_domain NULL: for its IP). Redis
 * itself speaks TLS to the target for MIGRATE (tls-cluster yes). */
int slotmove_run_sync_tls(const slotmove_job_t *job, const char *password, const char *password_fallback,
                          const redis_tls_t *tls, const char *tls_domain, slotmove_progress_t *progress, char *err,
                          size_t errlen);

/* The keepalive the next slotmove_run_sync* calls between slots and batches (tick(arg);
 * NULL none): a worker's heartbeat while its loop waits for the move. */
void slotmove_sync_keepalive(void (*tick)(void *arg), void *arg);

#endif
