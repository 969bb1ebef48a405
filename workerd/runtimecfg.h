/* runtimecfg: which running Redis pods need the run-time directives applied with CONFIG
 * SET (docs/knobs.md, "config.extra at run time" and "Persistence"). Pure: no I/O, no
 * clock.
 *
 * The run-time directives are spec.persistence's (render.h PERSISTENCE: appendonly,
 * appendfsync, save) and spec.config.extra's that Redis can change at run time
 * (redisconf_runtime_settable). They do not roll the pods (render_redis_conf_restart
 * leaves them out of the pod template's hash), so a change to them must reach the running
 * servers another way: one `CONFIG SET name value [name value ...]` per pod (atomic in
 * Redis 7: all or none) with all of them, sorted by name, then a record of it on the pod,
 * the annotation RUNTIMECFG_ANNOTATION = "<sha256 of the directives>/<restarts>":
 *   - the hash is over the "name value\n" lines of the directives, sorted by name
 *     (runtimecfg_compute's hash);
 *   - restarts is the restartCount of the pod's "redis" container (0 when not reported):
 *     a container restart reads redis.conf again from the ConfigMap volume, which the
 *     kubelet refreshes only after a delay, so a restarted container is given the
 *     directives again.
 * A pod whose annotation is the desired record needs nothing, so a resync of a healthy
 * cluster sends no Redis command and writes nothing. A pod without the annotation runs
 * what its redis.conf said when it started: when the desired directives are a default
 * spec's (persistence aof, no run-time directive in extra), which is what every pod ran
 * before this rule, it needs nothing either; otherwise (new, or from before this rule) it
 * is given them once (CONFIG SET is idempotent). A pod recorded with other directives is
 * given the desired ones, which is how a change back to the defaults reaches it.
 *
 * Which pods: <name>-<i> for i < size (Cluster mode: <name>-shard<k>-<j>, render_pod_name),
 * with status.podIP, Ready, not being deleted, and
 * not observed unreachable (observation node "reachable": false): a command to a server
 * that cannot answer would only fail the reconcile; the pod's next change brings it back.
 *
 * What is not sent: a directive removed from spec.config.extra keeps its value in the
 * running servers until they restart, as redis.conf has no "default" to set back
 * (docs/knobs.md; persistence's directives always have a value); a value that ends with
 * one of redisexec's password tokens (it would be replaced by the password on the wire)
 * is left to the next start of the pods, as the ConfigMap holds it.
 */
#ifndef RDC_WORKERD_RUNTIMECFG_H
#define RDC_WORKERD_RUNTIMECFG_H

#include "rdc_spec.h"
#include "redisconf.h"

#include <json-c/json.h>
#include <stddef.h>

#define RUNTIMECFG_ANNOTATION "cache.example.com/runtime-config"
#define RUNTIMECFG_MAX_DIRECTIVES (REDISCONF_EXTRA_MAX + 3) /* extra's and persistence's (render.h) */
#define RUNTIMECFG_MAX_ARGS (2 + 2 * RUNTIMECFG_MAX_DIRECTIVES) /* CONFIG SET and the pairs */
#define RUNTIMECFG_RECORD_MAX 96

typedef struct {
    char pod[300];
    const char *ip;                     /* points into the pods given */
    const char *have;                   /* its annotation, "" when none (points into pods) */
    char record[RUNTIMECFG_RECORD_MAX]; /* the annotation to write once the command succeeded */
    const json_object *meta;            /* its metadata (points into the pods given) */
} runtimecfg_pod_t;

typedef struct {
    int argc;                             /* 0: nothing to apply */
    const char *argv[RUNTIMECFG_MAX_ARGS]; /* "CONFIG", "SET", name, value, ... (into spec) */
    char hash[65];                        /* of the directives' lines */
    size_t n_pods;
    runtimecfg_pod_t pods[RDC_SPEC_CLUSTER_SIZE_MAX];
} runtimecfg_t;

/* Fill out for the cluster name of size pods (1..RDC_SPEC_CLUSTER_SIZE_MAX, named as
 * render_pod_name names them) with spec (the typed
 * spec, NULL: every default; its persistence and config.extra are read), the work item's
 * pods (an array, may be NULL) and observerd's observation (may be NULL). out's strings
 * point into spec and pods, which must outlive it. Returns 0, or -1 when hashing failed
 * (out then has argc 0 and no pods). */
int runtimecfg_compute(const rdc_spec_t *spec, const char *name, int size, const json_object *pods,
                       const json_object *observation, runtimecfg_t *out);

/* The pods runtimecfg_compute would pick (named by the layout, with an IP, Ready, not
 * being deleted, not observed unreachable) whose annotation `annotation` is not
 * "<hash>/<restarts>", each with that record, at most cap, into out (pointing into pods);
 * a pod without the annotation counts as current when none_current. For the other
 * per-pod records of the same shape (ACL, plan_acl.c). Returns how many. */
size_t runtimecfg_pods(const rdc_spec_t *spec, const char *name, int size, const json_object *pods,
                       const json_object *observation, const char *annotation, const char *hash, int none_current,
                       runtimecfg_pod_t *out, size_t cap);

#endif
