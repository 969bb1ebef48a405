/* runtimecfg: which running Redis pods need spec.config.extra's run-time directives
 * applied with CONFIG SET (docs/knobs.md, "config.extra at run time"). Pure: no I/O, no
 * clock.
 *
 * The directives Redis can change at run time (redisconf_runtime_settable) do not roll
 * the pods (render_redis_conf_restart leaves them out of the pod template's hash), so a
 * change to them must reach the running servers another way: one `CONFIG SET name value
 * [name value ...]` per pod (atomic in Redis 7: all or none), then a record of it on the
 * pod, the annotation RUNTIMECFG_ANNOTATION = "<sha256 of the directives>/<restarts>":
 *   - the hash is over the "name value\n" lines of the run-time directives, sorted by
 *     name (runtimecfg_compute's hash);
 *   - restarts is the restartCount of the pod's "redis" container (0 when not reported):
 *     a container restart reads redis.conf again from the ConfigMap volume, which the
 *     kubelet refreshes only after a delay, so a restarted container is given the
 *     directives again.
 * A pod whose annotation is the desired record needs nothing, so a resync of a healthy
 * cluster sends no Redis command and writes nothing. A pod without the annotation (new,
 * or from before this rule) is given them once (CONFIG SET is idempotent).
 *
 * Which pods: <name>-<i> for i < size, with status.podIP, Ready, not being deleted, and
 * not observed unreachable (observation node "reachable": false): a command to a server
 * that cannot answer would only fail the reconcile; the pod's next change brings it back.
 *
 * What is not sent: nothing when spec.config.extra has no run-time directive (a removed
 * directive keeps its value in the running servers until they restart, as redis.conf
 * has no "default" to set back: docs/knobs.md); a value that ends with one of redisexec's
 * password tokens (it would be replaced by the password on the wire) is left to the next
 * start of the pods, as the ConfigMap holds it.
 */
#ifndef RDC_WORKERD_RUNTIMECFG_H
#define RDC_WORKERD_RUNTIMECFG_H

#include "rdc_spec.h"
#include "redisconf.h"

#include <json-c/json.h>
#include <stddef.h>

#define RUNTIMECFG_ANNOTATION "cache.example.com/runtime-config"
#define RUNTIMECFG_MAX_ARGS (2 + 2 * REDISCONF_EXTRA_MAX) /* CONFIG SET and the pairs */
#define RUNTIMECFG_RECORD_MAX 96

typedef struct {
    char pod[300];
    const char *ip;                     /* points into the pods given */
    const char *have;                   /* its annotation, "" when none (points into pods) */
    char record[RUNTIMECFG_RECORD_MAX]; /* the annotation to write once the command succeeded */
} runtimecfg_pod_t;

typedef struct {
    int argc;                             /* 0: nothing to apply */
    const char *argv[RUNTIMECFG_MAX_ARGS]; /* "CONFIG", "SET", name, value, ... (into spec) */
    char hash[65];                        /* of the directives' lines */
    size_t n_pods;
    runtimecfg_pod_t pods[RDC_SPEC_SIZE_MAX];
} runtimecfg_t;

/* Fill out for the cluster name of size pods (1..RDC_SPEC_SIZE_MAX) with spec (its
 * config.extra is read), the work item's pods (an array, may be NULL) and observerd's
 * observation (may be NULL). out's strings point into spec and pods, which must outlive
 * it. Returns 0, or -1 when hashing failed (out then has argc 0 and no pods). */
int runtimecfg_compute(const json_object *spec, const char *name, int size, const json_object *pods,
                       const json_object *observation, runtimecfg_t *out);

#endif
