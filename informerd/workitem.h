/* workitem: the children object of a WORK message (proto.h), built from the cache's text.
 * Pure: no I/O.
 *
 *   {"ConfigMap": obj|null, "Service": obj|null, "StatefulSet": obj|null,
 *    "PodDisruptionBudget": obj|null, "ServicePrimary": obj|null, "ServiceReplicas": obj|null,
 *    "NetworkPolicy": obj|null, "ShardStatefulSets": [sts, ...], "ShardBudgets": [pdb, ...],
 *    ["RedisBackups": [rb, ...], "Jobs": [job, ...], "BackupPods": [pod, ...],]
 *    "Pods": [pod, ...], "Redis": observation|null}
 *
 * Every object is the cache's text: a child or pod in its compact form, what the
 * operator reads of it (docs/projections.md). ConfigMap, Service, StatefulSet and
 * PodDisruptionBudget are the cached objects at the RedisCluster's own key;
 * ServicePrimary and ServiceReplicas the Services at <key>-primary and <key>-replicas
 * (a Replication cluster's role Services, docs/replication.md); NetworkPolicy the one at
 * the key (spec.networkPolicy, docs/knobs.md "Day-2");
 * ShardStatefulSets and ShardBudgets the StatefulSets and PodDisruptionBudgets at
 * <key>-shard<k>, k < RDC_SPEC_CLUSTER_SHARDS_MAX, in k's order (a Cluster-mode cluster's
 * shards, docs/cluster-mode.md; [] for the other modes);
 * RedisBackups are those whose spec.source.cluster names it (cache_set_owner_field), Jobs
 * those whose instance label does, BackupPods the backup Jobs' pods whose
 * cache.example.com/backup-cluster label does (docs/backup.md "What the operator does"),
 * each present only when not empty;
 * Pods are the pods that belong to it by their instance label (cache_set_owner_label),
 * in compact form; Redis is observerd's latest observation (OBSERVED), or null. Readers
 * that look children up by kind (workerd's child_of) see the keys they always saw.
 */
#ifndef RDC_INFORMERD_WORKITEM_H
#define RDC_INFORMERD_WORKITEM_H

#include "buf.h"
#include "cache.h"

#include <stddef.h>

/* Append key's children object to out. observation (obslen bytes of JSON) may be NULL.
 * Returns 0, or -1 when out's cap or memory ran out (out is then unusable). */
int workitem_children(const cache_t *c, const char *key, const char *observation, size_t obslen, buf_t *out);

#endif
