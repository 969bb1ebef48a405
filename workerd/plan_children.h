/* plan_children: decision 5 for the children (plan.h): the desired ConfigMap, Service,
 * role Services (REPLICATION), StatefulSet and PodDisruptionBudget, compared with the
 * observed ones and planned as creates, applies or replaces, under OWNERSHIP, REMOVED
 * KNOBS (the spec hash) and IMMUTABLE STATEFULSET FIELDS (workerd/plan*.c only).
 *
 * It owns what it finds out about the children (plan_kids_t), which the status, the
 * runtime config and the diagnosis read after it. */
#ifndef RDC_WORKERD_PLAN_CHILDREN_H
#define RDC_WORKERD_PLAN_CHILDREN_H

#include "plan_internal.h"

/* What planning the children found. */
typedef struct {
    int owner_conflict;      /* an observed child is not ours (OWNERSHIP): look again later */
    int sts_ours;            /* the observed StatefulSet is ours (its status counts) */
    int sts_replicas_change; /* this plan changes the StatefulSet's replicas */
    int sts_template_change; /* ... or its pod template */
    int sts_created;         /* this plan creates the StatefulSet */
    int volume_grow;         /* VOLUME EXPANSION: spec.storage.size grew (plan_volume_grows) */
    /* CLUSTER: the shards' StatefulSets instead of the cluster's one (render.h CLUSTER) */
    int shards_ours;         /* how many of shards 0..S-1 have a StatefulSet of ours */
} plan_kids_t;

/* Build the desired children from c's spec and plan their writes, with their events,
 * (in Cluster mode a StatefulSet and a PodDisruptionBudget per shard, observed in
 * c->more's shard_statefulsets and shard_budgets, instead of the cluster's one),
 * against the observed ones in kids (each NULL when absent; the role Services come from
 * c->more); a child that is not ours is reported with plan_degrade and left alone. Fills
 * *out (cleared first). Returns 0, or -1 when out of memory. */
int plan_children(const plan_ctx_t *c, const plan_children_t *kids, plan_kids_t *out);

/* CLUSTER: the observed object of shard k among objs (an array of StatefulSets or PDBs),
 * by its name <name>-shard<k>, or NULL. */
const json_object *plan_shard_object(const plan_ctx_t *c, const json_object *objs, int k);

#endif
