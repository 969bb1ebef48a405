/* plan_restore: RESTORE FROM A REDISBACKUP (plan.h; docs/backup.md "Restore from a
 * RedisBackup"): where the pods of a RedisCluster whose spec.restore.from names a
 * RedisBackup (spec.restore.backup) restore from (workerd/plan*.c only).
 *
 * The RedisBackup is not in the cluster's work item: informerd hands a RedisBackup to
 * the cluster its spec.source.cluster names, another one. So the plan asks the caller
 * to read it (plan_restore_backup_to_read, the READ_MORE step of reconcile.h), and
 * only while the restore is not recorded. Decided before the children, in this order:
 *
 *   RECORDED  status.restore.source names the spec's backup and passes spec.restore.from's
 *             bucket/key rules (rdc_spec_parse_restore_source): the spec's restore fields
 *             become the record's, the pods are rendered from it exactly as from the
 *             bucket/key form (render.h RESTORE), and the record is written with every
 *             status. Nothing is read: what became of the RedisBackup since (deleted,
 *             say) changes nothing; the object in the bucket is what the pods restore.
 *   else the StatefulSet (and its PodDisruptionBudget) is held: neither created nor
 *   changed, so no pod starts empty; the ConfigMap and Services are made as usual.
 *     not read        (the caller has not read it: the plan asks) Ready False
 *                     RestorePending "... is not read yet"
 *     unreadable      the read failed: RestorePending with the error; BACKOFF
 *     absent          RestoreFailed "... does not exist"; BACKOFF
 *     Failed          RestoreFailed with its status.message; BACKOFF
 *     not Succeeded   (no status, Pending, Running) RestorePending "... is Running";
 *                     looked at again within PLAN_RESTORE_POLL_NS
 *     misfit          (Succeeded, but not of this shape) RestoreFailed: a Cluster-mode
 *                     backup (status.shards) into another mode, or into fewer shards than
 *                     it has; a backup of one server into Cluster mode; BACKOFF
 *     Succeeded       its object as a source: endpoint and bucket of spec.destination,
 *                     region (empty: absent), credentialsSecret and caSecret of
 *                     spec.credentialsSecret.name and spec.caSecret.name, key and sha256
 *                     of its status, its status.shards' keys and sha256 as shards (Cluster
 *                     mode: shard k's pods restore shards[k], render.h RESTORE), and its
 *                     name as backup. One that fails the bucket/key
 *                     rules (no key, say) is RestoreFailed "... cannot be restored from";
 *                     else RESOLVED: this plan's status records it (status.restore.source,
 *                     a write never held by the STATUS WRITE POLICY), Ready False
 *                     RestorePending, and the StatefulSet is created by the next plan,
 *                     from that record (the status write's echo brings it; requeued
 *                     within PLAN_RESTORE_RECORDED_NS besides). So the pod template never
 *                     rests on the RedisBackup itself.
 *   RestoreFailed is also the Degraded condition (its Warning Event goes with the status
 *   write that first says it). Each message names the RedisBackup and its phase. While
 *   no StatefulSet exists the phase is Pending, Ready False and Progressing the reason
 *   (True RestorePending, False RestoreFailed), both with the message; a StatefulSet
 *   that exists (its record was lost) is left as it is and said so.
 *   BACKOFF: a RedisBackup that appears or is replaced queues nothing for this cluster,
 *   so it is looked at again after as long as the cluster has been waiting (since the
 *   Ready condition last turned False), at least PLAN_RESTORE_BACKOFF_MIN_NS and at most
 *   PLAN_RESTORE_BACKOFF_MAX_NS; an unchanged answer writes nothing.
 */
#ifndef RDC_WORKERD_PLAN_RESTORE_H
#define RDC_WORKERD_PLAN_RESTORE_H

#include "plan_build.h"
#include "plan_internal.h"

#include <json-c/json.h>
#include <stdint.h>

#define PLAN_RESTORE_POLL_NS (INT64_C(5) * 1000000000)        /* a RedisBackup not finished yet */
#define PLAN_RESTORE_RECORDED_NS (INT64_C(1) * 1000000000)    /* after recording the source */
#define PLAN_RESTORE_BACKOFF_MIN_NS (INT64_C(5) * 1000000000) /* absent, Failed, unreadable */
#define PLAN_RESTORE_BACKOFF_MAX_NS (INT64_C(120) * 1000000000)

typedef enum {
    PLAN_RESTORE_NONE = 0, /* no spec.restore.from.backup */
    PLAN_RESTORE_RECORDED, /* rendered from status.restore.source */
    PLAN_RESTORE_RESOLVED, /* the RedisBackup Succeeded: recorded by this plan's status */
    PLAN_RESTORE_WAITING,  /* RestorePending */
    PLAN_RESTORE_FAILED    /* RestoreFailed */
} plan_restore_state_t;

/* What plan_restore decided. */
typedef struct plan_restore {
    plan_restore_state_t state;
    int hold;                      /* the StatefulSet is neither created nor changed */
    const char *reason;            /* RestorePending or RestoreFailed while held, else NULL */
    char message[PLAN_MESSAGE_CAP]; /* why, naming the RedisBackup and its phase */
    json_object *source;           /* status.restore.source to write (RECORDED, RESOLVED), owned */
    int64_t requeue_ns;            /* look again within this (while held) */
} plan_restore_t;

/* Decide as above for c's RedisCluster; spec is the plan's own typed spec (c->spec), whose
 * restore fields a record fills in (borrowed from c->rc). Clears *out first; nothing to
 * decide (PLAN_RESTORE_NONE) without spec->restore.backup. Asks the caller for the
 * RedisBackup through the plan when it is needed and was not given. Returns 0, or -1
 * when out of memory. */
int plan_restore(const plan_ctx_t *c, rdc_spec_t *spec, plan_restore_t *out);

/* Put out's source. */
void plan_restore_free(plan_restore_t *out);

#endif
