/* projection: per kind of child object, the parts the operator reads. Pure.
 *
 * A child the operator owns (ConfigMap, Service, StatefulSet, PodDisruptionBudget, Pod)
 * changes far more often than anything the operator reads of it changes: the StatefulSet
 * controller counts availableReplicas, the disruption controller rewrites a budget's
 * status at every pod change, the kubelet (kwok here) stamps conditions' lastProbeTime and
 * containers' startedAt. One table per kind lists, as paths into the object, what is read
 * and by whom (docs/projections.md says the same, row by row, beside the plan code that
 * reads each row). Every use of a child's fields in informerd follows from it:
 *
 *   - the digest of the READ rows (projection_digest): informerd enqueues a child's
 *     RedisCluster on a MODIFIED only when it differs (the cache compares it,
 *     cache_set_projection; informer_enqueue_skipped_total counts the others);
 *   - the compact form (projection_reduce with PROJ_KEPT): what the cache keeps of the
 *     object, and so what a work item, a delta and a snapshot carry.
 *
 * A row is a path of steps from the object's top: a member name, "[]" for every element
 * of an array, or "[type=X]" for the elements whose member "type" is X (a pod's Ready
 * condition). A node's use is that of the longest row that is a prefix of its
 * path; a node under no row is dropped (PROJ_DROP). So {"metadata"} READ with
 * {"metadata","resourceVersion"} WRITE and {"metadata","managedFields"} DROP keeps all of
 * metadata, reads all of it but the version, and drops the managed fields.
 *
 *   PROJ_READ   the plan, the status or the diagnosis (workerd/plan.h) reads it: a
 *               change enqueues the owner. tests/unit/test_projection.c fails when a
 *               field outside these rows changes a plan.
 *   PROJ_KEEP   kept for another reader (observerd reads a pod's phase; informerd
 *               --tail shows a pod's node), never read by a plan: no enqueue.
 *   PROJ_WRITE  kept because a write carries it (metadata.resourceVersion, the
 *               precondition of a replace or delete); it changes with every change, so
 *               it alone never enqueues.
 *   PROJ_LATE   read, but only once the object is PROJ_LATE_AFTER_NS old (its
 *               creationTimestamp): a pod's PodScheduled condition, which only the
 *               diagnosis reads and only for a pod past its grace (plan_diagnosis.c:
 *               the scheduler waits for a claim being bound meanwhile). Its own digest
 *               (projection_late_digest): a change of it alone, in a younger object, is
 *               queued for when it is read (informerd/dispatcher.c, cause pod_scheduling).
 *
 * The RedisCluster and Secrets have no table (projection_of returns NULL): the
 * RedisCluster is kept whole and every change of it is reconciled; informerd keeps only
 * a Secret's metadata and every change of one counts (its data, which no cache holds, may
 * have changed).
 */
#ifndef RDC_PROJECTION_H
#define RDC_PROJECTION_H

#include "rdc_spec.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { PROJ_DROP = 0, PROJ_READ, PROJ_KEEP, PROJ_WRITE, PROJ_LATE } proj_use_t;

#define PROJ_BIT(use) (1u << (use))
#define PROJ_KEPT (PROJ_BIT(PROJ_READ) | PROJ_BIT(PROJ_KEEP) | PROJ_BIT(PROJ_WRITE) | PROJ_BIT(PROJ_LATE))
#define PROJ_LATE_AFTER_NS (INT64_C(30) * 1000000000) /* PROJ_LATE rows are read from this age */
#define PROJ_MAX_STEPS 7

/* One row: the steps of a path (NULL-terminated), its use, and who reads it. */
typedef struct {
    proj_use_t use;
    const char *step[PROJ_MAX_STEPS + 1];
    const char *reader; /* "plan: view_statefulset (phase, Scaling)", for the docs and tests */
} proj_row_t;

typedef struct {
    const char *kind;
    const proj_row_t *rows;
    size_t nrows; /* at most 64 */
} projection_t;

/* The table of kind ("StatefulSet", ...), or NULL when the kind has none (kept whole,
 * every change counts). */
const projection_t *projection_of(const char *kind);

/* The i-th table (for tests and docs), or NULL past the last. */
const projection_t *projection_at(size_t i);

/* A new object holding the parts of obj whose use is in uses (PROJ_BIT()s; PROJ_KEPT for
 * the compact form), sharing their values with obj (reference counts, no copies: treat
 * both as read-only while both live). Absent parts stay absent; a node under a row that
 * names deeper steps is dropped when none of them is there, unless the node's own use is
 * wanted. The caller puts it. NULL with *oom set when memory ran out; NULL with *oom
 * untouched when nothing of obj is wanted (obj is not an object, or no row matched). */
json_object *projection_reduce(const projection_t *p, json_object *obj, unsigned uses, int *oom);

/* A 64-bit digest (FNV-1a) of the READ parts of obj, as projection_reduce(READ) prints
 * them: equal for two objects that differ only outside the READ rows. Never 0; 0 only
 * when memory ran out (the caller then counts the object as changed). */
uint64_t projection_digest(const projection_t *p, json_object *obj);

/* The same of the LATE parts of obj (equal for two objects without any). */
uint64_t projection_late_digest(const projection_t *p, json_object *obj);

/* The step that names the array element elem in a path: "[type=X]" when it is an object
 * whose "type" is the string X (not too long for outlen), else "[]". Returns 0. */
int projection_element_step(json_object *elem, char *out, size_t outlen);

/* The use of the node at the path steps[0..n-1] (an array element named as
 * projection_element_step names it): that of the longest row that is a prefix of it,
 * PROJ_DROP when none is. */
proj_use_t projection_use_at(const projection_t *p, const char *const *steps, size_t n);

/* The row's path as docs/projections.md writes it ("status.conditions[].type", a step
 * with a dot or slash in brackets: "metadata.labels[\"app.kubernetes.io/instance\"]") into out.
 * Returns 0, or -1 when outlen is too small (out is then truncated). */
int projection_row_path(const proj_row_t *row, char *out, size_t outlen);

/* "read", "keep", "write", "late" or "drop". */
const char *projection_use_name(proj_use_t use);

/* OBSERVATIONS. What a plan reads of observerd's observation ({"nodes": [{pod, ip,
 * reachable, role, master..., tlsCert, cluster...}]}, plan_observed_t.redis) depends on
 * the mode. Replication and Cluster mode read it all (topology, failover, slots), and so
 * does TLS (plan_tls.c: each node's pod, ip, tlsCert and reachable, and whether there is
 * an observation at all). A Standalone cluster without TLS reads of it only which pods
 * are observed unreachable ("reachable": false): runtimecfg_pods skips them (run-time
 * config, workerd/runtimecfg.c; ACL users, plan_acl.c); a node's appearing reachable,
 * its IP, role or replication fields change no such plan (tests/unit/test_plan.c ties
 * this to the plan: "an observation news to no Standalone plan").
 *
 * 1 when the plan of spec (NULL: an invalid spec, or not known: any news counts) may read
 * a difference between the observation was (NULL: none yet) and now; 0 when it reads
 * none, so informerd keeps now for the next reconcile and queues nothing for it. */
int projection_observation_news(const rdc_spec_t *spec, const json_object *was, const json_object *now);

/* 1 when the first node of pod in the observation obs says "reachable": false: the read
 * of a Standalone plan without TLS (runtimecfg.c), and so what the projection compares. */
int projection_observed_unreachable(const json_object *obs, const char *pod);

#endif
