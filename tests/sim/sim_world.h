/* sim_world: a deterministic simulation of one RedisCluster in mode Replication under
 * faults, with the operator's own decisions linked in (docs/simulation.md).
 *
 * Every step is SR_TICK_MS (100 ms) of simulated time. The world holds:
 *   - the Redis servers (sim_redis.h), one per StatefulSet ordinal;
 *   - the Kubernetes side: the RedisCluster as the API server stores it (resourceVersion,
 *     status, the resourceVersion precondition of an election's record), the children the
 *     plan created, the pods (uid, IP, Ready, revision, role label, deletion with the
 *     preStop hook's wait) and the StatefulSet controller (OrderedReady, OnDelete:
 *     a deleted pod comes back on the update revision, with its data);
 *   - informerd's caches, each a consistent but late copy (0..2 steps, longer in a watch
 *     stall), the work queue (an event queues the key, a failure requeues it with
 *     client-go's backoff, a plan's requeue-after), and the wait for the cache to hold a
 *     reconcile's own write (informerd/ownwrite.h);
 *   - observerd: one probe per pod a second (INFO replication text of the model, parsed by
 *     observerd's redisinfo_parse), the observation built, compared and serialised by
 *     observerd's obsdiff (news at once, "still down" repeats), delivered 0..2 steps late;
 *   - workerd: the plan is plan_compute_children (workerd/plan.h, topology.h inside it)
 *     from the cached RedisCluster, children, pods and the latest observation; its actions
 *     run as the executor runs them: label patches, pod deletions (uid precondition), the
 *     status apply (409 on a stale resourceVersion precondition), Redis commands behind
 *     the executor's guards (redisexec_switchover_check on the model's INFO text; the
 *     promotion guard's PING of the old primary; a REPLICAOF already in effect skipped);
 *     the first failure stops the plan;
 *   - a client: SET then WAIT 1 against the pod the -primary Service selects (labelled
 *     primary, Ready, not terminating), keeping its connection until an error or a 1 s
 *     timeout; a write is acknowledged when a replica linked to the master holds it.
 * Faults are drawn from the seed (sim_fault_t). Invariants, checked at every step:
 *   - never two pods labelled primary (also between two actions of a plan);
 *   - never two masters that would both take and acknowledge a write;
 *   - no acknowledged write lost: a server made master (REPLICAOF NO ONE, FAILOVER) holds
 *     every acknowledged write, and so does every master acknowledging a new one;
 *   - after the faults stop (the tail), convergence within a bound: every pod Ready on
 *     the update revision, one master named by status.primary and labelled primary, the
 *     others linked to it and caught up, ReplicationHealthy True; and it stays so.
 * With cfg.overlap, faults may overlap (a second one before the cluster recovered from
 * the first): what no single-failure design promises (a promoted server missing a write
 * only a dead or cut-off server holds) is counted instead of failed; the labels and the
 * convergence stay invariants.
 */
#ifndef RDC_TESTS_SIM_WORLD_H
#define RDC_TESTS_SIM_WORLD_H

#include <stdint.h>
#include <stdio.h>

/* The faults. The default set (SIM_FAULTS_DEFAULT) is every kind: the operator is meant
 * to survive each without a broken invariant (the four once off by default, delete-primary,
 * primary-obs-cut, operator-outage and stale-plan, were the findings of
 * docs/simulation.md, since fixed). Server faults hit the primary half of the time. */
typedef enum {
    SIM_F_KILL = 0,         /* SIGKILL of a redis-server; the kubelet restarts it (same IP, AOF) */
    SIM_F_FREEZE,           /* SIGSTOP, SIGCONT 0.5..70 s later */
    SIM_F_ISOLATE,          /* a server cut off from everyone (clients, peers, operator) */
    SIM_F_OBS_CUT,          /* a replica cut off from the operator only */
    SIM_F_LOSE_POD,         /* the pod and its volume lost: back empty at a new IP */
    SIM_F_DELETE_POD,       /* kubectl delete pod of a replica (graceful, preStop) */
    SIM_F_DELETE_PRIMARY,   /* kubectl delete pod of the primary (the handover by FAILOVER) */
    SIM_F_PRIMARY_OBS_CUT,  /* the primary cut off from the operator only */
    SIM_F_ROLLOUT,          /* the StatefulSet's update revision changes */
    SIM_F_WORKER_CRASH,     /* workerd killed between two actions of a plan */
    SIM_F_OPERATOR_RESTART, /* the whole operator restarts (observer history, caches lost) */
    SIM_F_OPERATOR_OUTAGE,  /* the same, away 30 s .. 5 min (a slow upgrade, a crash loop) */
    SIM_F_OBSERVER_RESTART, /* observerd restarts (its evidence starts again) */
    SIM_F_WATCH_STALL,      /* a cache (pods or the RedisCluster) stops following for 2..8 s */
    SIM_F_INFORMER_RESTART, /* informerd restarts: its latest observation and those on the way
                               are lost, it lists again, observerd sends everything again */
    SIM_F_STALE_PLAN,       /* a worker stops mid-plan, the key goes to another worker after
                               3 s, it resumes 3..20 s later and carries on with its plan */
    SIM_F_COUNT
} sim_fault_t;

#define SIM_FAULT_BIT(f) (1u << (f))
#define SIM_FAULTS_ALL (SIM_FAULT_BIT(SIM_F_COUNT) - 1)
#define SIM_FAULTS_DEFAULT SIM_FAULTS_ALL

typedef struct {
    uint64_t seed;
    int64_t steps;           /* of the whole run, the tail included */
    int64_t tail;            /* the last steps, without faults */
    int64_t converge_within; /* steps from the tail's start */
    int size;                /* 2..5; 0: drawn from the seed */
    int overlap;             /* faults may overlap (above) */
    int new_ips;             /* a recreated pod always gets a new IP (most CNI plugins); 0: its
                                old one half the time (the test pod runtime, tests/cluster) */
    unsigned faults;         /* bits of sim_fault_t; 0: SIM_FAULTS_DEFAULT */
    int64_t fault_every;     /* mean steps between faults once one may start; 0: 100 */
    FILE *trace;             /* every event as a line, or NULL */
    int trace_plans;         /* also each reconcile's observation and plan (JSON) */
} sim_cfg_t;

typedef struct {
    int failed;              /* an invariant broke (why, at step) */
    int64_t step;
    char why[1024];
    uint64_t digest;         /* of every event: equal for equal seeds and configurations */
    int size;
    int64_t steps, writes, acked, reconciles, actions, commands, promotions, records, switchovers, conflicts;
    int64_t faults[SIM_F_COUNT];
    int64_t recoveries, recover_max_steps, recover_total_steps; /* fault -> converged again */
    int64_t converged_after; /* steps from the tail's start to convergence; -1 never */
    int64_t lost_acked;      /* overlap: promotions or acknowledgements missing a write */
    int64_t dual_writers;    /* overlap: steps with two masters taking acknowledged writes */
} sim_result_t;

typedef struct sim sim_t;

/* A world for cfg (copied); NULL when out of memory or cfg is unusable (steps <= tail). */
sim_t *sim_new(const sim_cfg_t *cfg);

/* Free the world and set *s_p to NULL. NULL is fine. */
void sim_destroy(sim_t **s_p);

/* One step. Returns 1 while the run goes on, 0 at its end or at the first broken
 * invariant (sim_result says which). */
int sim_step(sim_t *s);

/* What happened so far. */
void sim_result(const sim_t *s, sim_result_t *out);

/* A whole run: sim_new, sim_step to the end, sim_result. Returns 0 when every invariant
 * held, 1 when one broke, -1 when the world could not be made. */
int sim_run(const sim_cfg_t *cfg, sim_result_t *out);

/* The name of a fault kind ("kill", "freeze", ...). */
const char *sim_fault_name(sim_fault_t f);

#endif
