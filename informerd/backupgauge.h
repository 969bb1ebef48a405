/* backupgauge: the gauges of backups, from informerd's cache (docs/backup.md "Metrics"),
 * as kube-state-metrics would make them from the API, without it.
 *
 * Per RedisCluster (labels namespace, rediscluster) that is cached and has a RedisBackup
 * (one whose spec.source.cluster names it, cache_set_owner_field) or spec.backup.schedule:
 *
 *   rdc_backup_last_success_timestamp_seconds   the latest status.completionTime of its
 *                                               Succeeded RedisBackups (none Succeeded: absent)
 *   rdc_backup_last_success_size_bytes          that RedisBackup's status.size
 *   rdc_backup_schedule_period_seconds          with a schedule cron_parse takes:
 *                                               cron_period (common/schedule.h), computed
 *                                               again when the schedule changes and at least
 *                                               every BACKUPGAUGE_PERIOD_REFRESH_S
 *   rdc_backup_schedule_waiting_since_timestamp_seconds
 *                                               with a schedule and no Succeeded RedisBackup:
 *                                               the oldest metadata.creationTimestamp of the
 *                                               schedule's RedisBackups (label
 *                                               cache.example.com/schedule: <cluster>), the
 *                                               time since which the schedule has been waiting
 *                                               for a first success; absent when it made none
 *
 * A cluster's values are computed again from the cache at the update after a delta of the
 * RedisCluster or of one of its RedisBackups (the work is the changed clusters', not all
 * of them), and the families are written anew from the kept values at every update, so a
 * cluster deleted, or one left without backups and schedule, leaves no series behind; a
 * RedisBackup deleted no longer counts. A cluster's RedisBackups without the cluster cached
 * make no series. Bad or missing fields (a completionTime that is not RFC 3339) count as
 * absent. Single-threaded, on informerd's loop.
 */
#ifndef RDC_INFORMERD_BACKUPGAUGE_H
#define RDC_INFORMERD_BACKUPGAUGE_H

#include "cache.h"
#include "metrics.h"

#include <stdint.h>

#define BACKUPGAUGE_PERIOD_REFRESH_S 3600 /* a period is computed again at least this often */

typedef struct backupgauge backupgauge_t;

/* A new one reading cache (borrowed, outliving it), its families registered in reg. NULL
 * when out of memory. */
backupgauge_t *backupgauge_new(const cache_t *cache, metrics_registry_t *reg);

/* Free it (its series stay in the registry); sets *self_p to NULL. NULL is fine. */
void backupgauge_destroy(backupgauge_t **self_p);

/* A cache delta (the cache's delta handler passes each): a RedisCluster's, or a
 * RedisBackup's that is not unread_only, marks its cluster to be computed again. Out of
 * memory: the mark is lost until the cluster's next delta. */
void backupgauge_on_delta(backupgauge_t *g, const cache_delta_t *d);

/* Compute the marked clusters again from the cache and the periods due (now_s: wall clock,
 * Unix seconds), then write the families. */
void backupgauge_update(backupgauge_t *g, int64_t now_s);

#endif
