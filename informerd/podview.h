/* podview: the compact form in which informerd caches a Redis pod. Pure.
 *
 * A Pod object is mostly what nobody here reads (the whole container spec, volumes,
 * tolerations, container statuses). The compact form is the Pod's projection
 * (common/projection.h, docs/projections.md: the one table that also decides which pod
 * changes queue their RedisCluster): of metadata its name, namespace, uid,
 * resourceVersion, creation and deletion times, the labels app.kubernetes.io/instance,
 * cache.example.com/role and controller-revision-hash and the annotation
 * cache.example.com/runtime-config (not the other labels, annotations or owner
 * references: the pod belongs to the RedisCluster its instance label names);
 * spec.nodeName, and status.podIP, status.podIPs, status.phase, the Ready condition
 * {type, status, lastTransitionTime} and the PodScheduled one {type, status, reason,
 * message}, and status.containerStatuses and initContainerStatuses reduced to
 * [{name, restartCount, state.waiting {reason, message}, lastState.terminated {exitCode,
 * reason}}] (workerd's runtime config notes container restarts; its diagnosis quotes a
 * container waiting and how it last ended), so a pod costs a few hundred bytes however
 * large its spec is. The cache reduces every Pod so itself (cache_set_projection); this
 * is the same reduction, in place, for a tree.
 */
#ifndef RDC_INFORMERD_PODVIEW_H
#define RDC_INFORMERD_PODVIEW_H

#include <json-c/json.h>

/* Reduce the Pod object pod (edited in place) to its compact form. Members that are
 * absent stay absent; a spec or status that is not an object is dropped. Returns 0, or
 * -1 when pod is not an object or memory ran out (pod is then whole or partly reduced,
 * never invalid JSON). */
int podview_compact(json_object *pod);

#endif
