/* cluster_observe: the input of Cluster mode's decisions (cluster_topo.h) from what a work
 * item carries. Pure: no I/O, no clock.
 *
 * For each pod of the layout (<name>-shard<k>-<j>, k < shards, j <= replicas):
 *   - from the work item's pods (children.Pods): present, Ready (its Ready condition),
 *     its IP, terminating (deletionTimestamp), its role label, and outdated: its
 *     controller-revision-hash label is not its shard StatefulSet's status.updateRevision
 *     (no StatefulSet or no revision: not outdated);
 *   - from observerd's observation (children.Redis, docs/observer.md) the node of that
 *     pod, used only when reachable and observed at the pod's current IP: its
 *     "cluster" object's "nodes" text parsed with cn_parse (a node whose text does not
 *     parse, or that carries "error", is not observed), its state and slot counts as
 *     CLUSTER INFO's, and linkUp and offset (INFO replication).
 */
#ifndef RDC_WORKERD_CLUSTER_OBSERVE_H
#define RDC_WORKERD_CLUSTER_OBSERVE_H

#include "cluster_topo.h"

#include <json-c/json.h>

/* Fill in for the cluster name (the layout: shards x (1 + replicas) pods, widened by the
 * shard StatefulSets and pods still there when the spec shrank: cluster_topo.h LAYOUT,
 * sts_replicas from each StatefulSet's spec.replicas; bootstrapped as its status records
 * it) from pods (an array, may be NULL), observation (may be NULL) and the shard
 * StatefulSets sts[0..nsts) (any order; matched by name). Each observed pod's parsed view
 * goes to views[i] (CTOPO_MAX_PODS entries; the caller frees them with cn_view_destroy;
 * in->pod[i].view borrows it). Returns 0, or -1 when the layout is out of range or out of
 * memory (in and views then hold nothing to free). */
int cluster_observe(const char *name, int shards, int replicas, int bootstrapped, const json_object *pods,
                    const json_object *observation, const json_object *const *sts, size_t nsts, ctopo_input_t *in,
                    cn_view_t **views);

#endif
