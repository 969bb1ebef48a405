/* plan_backup: BACKUP, the pure steps of RedisBackups and spec.backup.schedule
 * (docs/backup.md "What the operator does"; workerd/plan*.c only).
 *
 * From what the work item carries (plan_observed_t.backups, jobs, backup_pods) and the
 * cluster's pods (members):
 *
 *   SCHEDULE (before the status): with spec.backup.schedule, cron_due (common/schedule.h)
 *     from status.backup.lastScheduleTime (else metadata.creationTimestamp) to now. When a
 *     run is due: PLAN_CREATE of the RedisBackup <cluster>-<UTC yyyymmddhhmm of the fire
 *     time> (the cluster's name cut to 50 characters: a Job's name is a label value, at
 *     most 63), owned by the RedisCluster, labelled managed-by, backup-cluster and
 *     schedule <cluster>, its spec from spec.backup (unless one of that name is cached
 *     already), and the fire time is the status's backup.lastScheduleTime. The plan
 *     requeues at the next fire time.
 *   START (after the status): each RedisBackup not being deleted, whose phase is neither
 *     Succeeded nor Failed nor Running, and whose Job (label cache.example.com/backup) is
 *     not cached: the source pod is a Ready pod with an IP, not being deleted, labelled
 *     role replica when there is one, else any other (the primary; Standalone's pod).
 *     PLAN_CREATE of render_backup_job (render.h): --key <prefix>[/]<name>.rdb, or for a
 *     schedule's backup (label schedule) --prefix <prefix> --keep <spec.backup.keep>;
 *     then PLAN_UPDATE_STATUS of redisbackups/<name>/status: phase Running, sourcePod,
 *     startTime; Normal Event BackupStarted on the RedisBackup. No pod: phase Pending
 *     with a message (written when it changes), requeue within PLAN_REQUEUE_NOT_READY_NS.
 *     A spec without endpoint, bucket or credentialsSecret: phase Failed.
 *     CLUSTER (spec.mode Cluster): every shard at once, one Job whose pod has a container
 *     RENDER_BACKUP_SHARD_PREFIX "<k>" per shard (render.h), each taking from a Ready,
 *     linked replica of shard k's master (else the master) with --slots <the slots the
 *     master serves>, into <prefix>[/]<name>/shard-<k>.rdb (a schedule's: --prefix
 *     <prefix>[/]shard-<k>); the Running status lists each shard's sourcePod and slots
 *     (status.shards). Pending while slots are to move or open (a reshard: "waiting for
 *     the reshard to finish") or the cluster is not healthy (cluster_topo.h's reason), or
 *     a shard has no pod to take from. While it runs, RESHARD starts no move
 *     (plan_backup_running): a slot moved between two shards' takes would be in both RDBs
 *     or in neither.
 *   FINISH: a RedisBackup not yet Succeeded or Failed whose Job's pod (BackupPod, label
 *     cache.example.com/backup) has terminated: its container's termination message, one
 *     JSON line of rdc-backup take, gives phase Succeeded with key, size, sha256, offset,
 *     startTime, completionTime (and the sourcePod kept) only when the line parses, says
 *     "result":"ok" and the exit code is 0; anything else is phase Failed with the
 *     message (trimmed, at most 1024 bytes) and a Warning Event BackupFailed on the
 *     RedisBackup. A Job whose Failed condition is True with no pod message (its deadline)
 *     is Failed with the condition's reason and message.
 *     CLUSTER: Succeeded only when every shard's container said ok: status.shards[k] its
 *     key, size, sha256, offset, slots and sourcePod, status.key the prefix the shards'
 *     keys share (to its last '/'), size their sum, the earliest start and latest
 *     completion; else Failed with each failed shard's "shard <k>: <why>".
 *   RETENTION: with spec.backup.schedule, the schedule's RedisBackups (label schedule
 *     <cluster>) by creationTimestamp through retention_pick: keep spec.backup.keep
 *     Succeeded and PLAN_BACKUP_KEEP_FAILED Failed; PLAN_DELETE (uid precondition) of the
 *     others, never a running one. Their objects are pruned by the take itself.
 *
 * Status writes are server-side applies (field manager rediscluster-operator) of the
 * RedisBackup's status subresource: {"apiVersion","kind":"RedisBackup","metadata":{name,
 * namespace},"status":{...}}; one that sets a final phase (Succeeded, Failed) carries the
 * observed metadata.resourceVersion too, a compare-and-swap: of the writes of one
 * transition, the API takes one (plan_backup_result: what rdc_backups_total counts). Each
 * step stops when the plan has no room left. */
#ifndef RDC_WORKERD_PLAN_BACKUP_H
#define RDC_WORKERD_PLAN_BACKUP_H

#include "plan_internal.h"

#include <stddef.h>

#define PLAN_BACKUP_KEEP_FAILED 3   /* failed schedule backups kept, so a user sees why */
#define PLAN_BACKUP_MESSAGE_MAX 1024 /* bytes of a termination message in status.message */
#define PLAN_BACKUP_JOB_GONE_S 60    /* a Running RedisBackup without its Job: Failed after this */
#define PLAN_BACKUP_MAX 128          /* RedisBackups of one schedule retention looks at */

/* SCHEDULE: plans the due RedisBackup's create and writes into last (len >= 32) the
 * status.backup.lastScheduleTime the status is to say ("" when none: no schedule and none
 * recorded). Returns 0, or -1 when out of memory. */
int plan_backup_schedule(const plan_ctx_t *c, char *last, size_t len);

/* 1 when a RedisBackup of c's cluster is running (phase Running, or its Job cached while
 * unfinished): Cluster mode's RESHARD then starts no move (cluster_topo.h moves_held). */
int plan_backup_running(const plan_ctx_t *c);

/* START, FINISH and RETENTION. Returns 0, or -1 when out of memory. */
int plan_backups(const plan_ctx_t *c);

#endif
