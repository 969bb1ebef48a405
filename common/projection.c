/* projection: the parts of a child the operator reads (projection.h). One table per kind;
 * docs/projections.md walks them row by row with the code that reads each. */
#include "projection.h"

#include "hash.h"
#include "jsonx.h"

#include <stdio.h>
#include <string.h>

/* A child's apiVersion and kind: the desired object names them, so the drift comparison
 * reads them (the reflector stamps them on a LIST's items). */
#define IDENTITY_ROWS(use, reader) {use, {"apiVersion"}, reader}, {use, {"kind"}, reader}
#define DRIFT_IDENTITY "plan_children.c: drift (plan_json_subset, desired a subset of observed)"

/* A child's metadata: who controls it, its labels and annotations, its deletion; the
 * version only for the writes that carry it. */
#define METADATA_ROWS(reader)                                                                                        \
    {PROJ_READ, {"metadata"}, reader},                                                                               \
    {PROJ_WRITE, {"metadata", "resourceVersion"}, "executor: the precondition of a replace or a delete"},            \
    {PROJ_DROP, {"metadata", "managedFields"}, "nobody (the cache strips it, as controller-runtime does)"}
#define CHILD_METADATA                                                                                               \
    "plan_children.c: controller_of (ownerReferences), spec_hash_observed and rendered_before (annotations), "      \
    "drift of labels and annotations, a replace's body (plan_replace_changed; plan_failed.c: plan_take_back); "       \
    "plan_diagnosis.c: the StatefulSet's creationTimestamp; cache: the owner index"

static const proj_row_t configmap_rows[] = {
    IDENTITY_ROWS(PROJ_READ, DRIFT_IDENTITY),
    METADATA_ROWS(CHILD_METADATA),
    {PROJ_READ, {"data"}, "plan_children.c: drift of redis.conf (plan_child)"},
    {PROJ_READ, {"binaryData"}, "plan_children.c, plan_failed.c: a replace's body (plan_json_merge_over)"},
    {PROJ_READ, {"immutable"}, "plan_children.c, plan_failed.c: a replace's body (plan_json_merge_over)"},
};

static const proj_row_t service_rows[] = {
    IDENTITY_ROWS(PROJ_READ, DRIFT_IDENTITY),
    METADATA_ROWS(CHILD_METADATA),
    {PROJ_READ, {"spec"},
     "plan_children.c: drift (plan_child, plan_role_service), a replace's body (its clusterIP kept)"},
};

static const proj_row_t statefulset_rows[] = {
    IDENTITY_ROWS(PROJ_READ, DRIFT_IDENTITY),
    METADATA_ROWS(CHILD_METADATA),
    {PROJ_READ, {"spec"},
     "plan_children.c: drift (sts_same_but_replicas), immutable fields (selector, serviceName, "
     "volumeClaimTemplates), replicas, a replace's body; plan_observe.c: plan_view_statefulset (spec.replicas)"},
    {PROJ_READ, {"status", "replicas"}, "plan_observe.c: plan_view_statefulset (status.replicas, rolling)"},
    {PROJ_READ, {"status", "readyReplicas"}, "plan_observe.c: plan_view_statefulset (readyReplicas, the phase)"},
    {PROJ_READ, {"status", "updatedReplicas"}, "plan_observe.c: plan_view_statefulset (rolling)"},
    {PROJ_READ, {"status", "observedGeneration"}, "plan_observe.c: plan_view_statefulset (rolling)"},
    {PROJ_READ, {"status", "currentRevision"}, "plan_observe.c: plan_view_statefulset (rolling)"},
    {PROJ_READ, {"status", "updateRevision"},
     "plan_observe.c: plan_view_statefulset (rolling); plan_replication.c, topology.c: SWITCHOVER (outdated)"},
};

static const proj_row_t pdb_rows[] = {
    IDENTITY_ROWS(PROJ_READ, DRIFT_IDENTITY),
    METADATA_ROWS(CHILD_METADATA),
    {PROJ_READ, {"spec"}, "plan_children.c: drift of maxUnavailable and the selector (plan_child)"},
};

/* DAY-2: the NetworkPolicy of spec.networkPolicy. */
static const proj_row_t netpol_rows[] = {
    IDENTITY_ROWS(PROJ_READ, DRIFT_IDENTITY),
    METADATA_ROWS(CHILD_METADATA),
    {PROJ_READ, {"spec"}, "plan_children.c: drift of the pod selector and the ingress rules (plan_network_policy)"},
};

/* A container status, under status.initContainerStatuses[] or status.containerStatuses[]. */
#define WAITING "plan_diagnosis.c: container_waiting"
#define LAST_END "plan_diagnosis.c: CrashLoopBackOff (how it last ended)"
#define CONTAINER_ROWS(list)                                                                                         \
    {PROJ_READ, {"status", list, "[]", "name"}, "plan_diagnosis.c: container_waiting; runtimecfg.c: restarts"},     \
    {PROJ_READ, {"status", list, "[]", "restartCount"}, "runtimecfg.c: the record's restart count"},                \
    {PROJ_READ, {"status", list, "[]", "state", "waiting", "reason"}, WAITING},                                      \
    {PROJ_READ, {"status", list, "[]", "state", "waiting", "message"}, WAITING},                                     \
    {PROJ_READ, {"status", list, "[]", "lastState", "terminated", "exitCode"}, LAST_END},                            \
    {PROJ_READ, {"status", list, "[]", "lastState", "terminated", "reason"}, LAST_END}
/* RESTORE: how the restore init container ended, now or last (cause_restore_failed). */
#define RESTORE "plan_diagnosis.c: cause_restore_failed (RestoreFailed)"
#define RESTORE_ROWS                                                                                                 \
    {PROJ_READ, {"status", "initContainerStatuses", "[]", "state", "terminated", "exitCode"}, RESTORE},             \
    {PROJ_READ, {"status", "initContainerStatuses", "[]", "state", "terminated", "message"}, RESTORE},              \
    {PROJ_READ, {"status", "initContainerStatuses", "[]", "lastState", "terminated", "message"}, RESTORE}
#define READY "plan_diagnosis.c, topology.c, runtimecfg.c: whether the pod is Ready"
#define UNSCHEDULABLE "plan_diagnosis.c: unschedulable (a pod past its grace, PROJ_LATE_AFTER_NS)"

/* A pod is never replaced, so of its metadata only what is read is kept: not the other
 * labels and annotations, its owner references (its owner is the instance label's) or
 * generateName. */
static const proj_row_t pod_rows[] = {
    IDENTITY_ROWS(PROJ_KEEP, "informerd --tail, --subscribe"),
    {PROJ_READ, {"metadata", "name"}, "topology.c, runtimecfg.c, plan_diagnosis.c: which ordinal; observerd"},
    {PROJ_READ, {"metadata", "namespace"}, "observerd: the pod's key"},
    {PROJ_READ, {"metadata", "uid"}, "topology.c: the precondition of a pod's delete (SWITCHOVER)"},
    {PROJ_WRITE, {"metadata", "resourceVersion"}, "informerd: the cache's version (a delta's resourceVersion)"},
    {PROJ_READ, {"metadata", "creationTimestamp"}, "plan_diagnosis.c: a pod's age"},
    {PROJ_READ, {"metadata", "deletionTimestamp"}, "topology.c, runtimecfg.c, plan_diagnosis.c: a pod going away"},
    {PROJ_READ, {"metadata", "labels", "app.kubernetes.io/instance"}, "cache: the owner key; observerd: the cluster"},
    {PROJ_READ, {"metadata", "labels", "cache.example.com/role"}, "topology.c: the role label (REPLICATION)"},
    {PROJ_READ, {"metadata", "labels", "controller-revision-hash"}, "topology.c: SWITCHOVER (an outdated pod)"},
    {PROJ_READ, {"metadata", "annotations", "cache.example.com/runtime-config"},
     "runtimecfg.c: the runtime config applied (RUNTIME CONFIG)"},
    {PROJ_READ, {"metadata", "annotations", "cache.example.com/acl"}, "plan_acl.c: the ACL users applied (ACL)"},
    {PROJ_READ, {"metadata", "annotations", "cache.example.com/tls"},
     "plan_tls.c, observerd: the pod speaks TLS on 6379 (TLS)"},
    {PROJ_READ, {"metadata", "annotations", "cache.example.com/acl-users"},
     "plan_acl.c: the users applied, whom a removal drops (ACL)"},
    {PROJ_KEEP, {"spec", "nodeName"}, "informerd --tail (where the pod runs)"},
    {PROJ_READ, {"status", "podIP"}, "topology.c, runtimecfg.c, plan_auth.c: each pod's IP; observerd: whom to probe"},
    {PROJ_KEEP, {"status", "podIPs"}, "informerd --tail (a dual-stack pod's addresses)"},
    {PROJ_KEEP, {"status", "phase"}, "observerd: probe only a pod that is not Succeeded or Failed"},
    {PROJ_READ, {"status", "conditions", "[type=Ready]", "type"}, READY},
    {PROJ_READ, {"status", "conditions", "[type=Ready]", "status"}, READY},
    {PROJ_READ, {"status", "conditions", "[type=Ready]", "lastTransitionTime"},
     "plan_diagnosis.c: plan_diagnosis_reads (ready_since)"},
    {PROJ_LATE, {"status", "conditions", "[type=PodScheduled]", "type"}, UNSCHEDULABLE},
    {PROJ_LATE, {"status", "conditions", "[type=PodScheduled]", "status"}, UNSCHEDULABLE},
    {PROJ_LATE, {"status", "conditions", "[type=PodScheduled]", "reason"}, UNSCHEDULABLE},
    {PROJ_LATE, {"status", "conditions", "[type=PodScheduled]", "message"}, UNSCHEDULABLE},
    CONTAINER_ROWS("initContainerStatuses"),
    RESTORE_ROWS,
    CONTAINER_ROWS("containerStatuses"),
};

/* BACKUPS (docs/backup.md "What the operator does"): a RedisBackup, the Job that takes
 * it, and that Job's pod (kind BackupPod: pods labelled cache.example.com/backup-cluster,
 * apart from the Redis pods). Of each, what plan_backup.c reads. */
#define BACKUP_PLAN "plan_backup.c: plan_backup_view"
#define BACKUP_GAUGE "informerd: backupgauge.c, the backup gauges"
static const proj_row_t redisbackup_rows[] = {
    IDENTITY_ROWS(PROJ_KEEP, "informerd --tail, --subscribe"),
    {PROJ_READ, {"metadata", "name"}, BACKUP_PLAN " (the Job's name, the key)"},
    {PROJ_READ, {"metadata", "namespace"}, BACKUP_PLAN},
    {PROJ_READ, {"metadata", "uid"}, BACKUP_PLAN " (the Job's owner reference)"},
    {PROJ_WRITE, {"metadata", "resourceVersion"}, BACKUP_PLAN " (the precondition of a final phase's write)"},
    {PROJ_READ, {"metadata", "creationTimestamp"},
     BACKUP_PLAN " (retention's order); " BACKUP_GAUGE " (waiting since)"},
    {PROJ_READ, {"metadata", "deletionTimestamp"}, BACKUP_PLAN " (one going away is left alone)"},
    {PROJ_READ, {"metadata", "labels", "cache.example.com/schedule"},
     BACKUP_PLAN " (a schedule's backup); " BACKUP_GAUGE " (the schedule's)"},
    {PROJ_READ, {"spec"}, BACKUP_PLAN " (source, destination, credentials: the Job's command)"},
    {PROJ_READ, {"status"},
     BACKUP_PLAN " (its phase; a status written only when it changes); " BACKUP_GAUGE
                 " (phase, completionTime, size)"},
};

static const proj_row_t job_rows[] = {
    IDENTITY_ROWS(PROJ_KEEP, "informerd --tail, --subscribe"),
    {PROJ_READ, {"metadata", "name"}, BACKUP_PLAN " (the backup's Job exists)"},
    {PROJ_READ, {"metadata", "namespace"}, BACKUP_PLAN},
    {PROJ_READ, {"metadata", "uid"}, BACKUP_PLAN " (the precondition of its delete)"},
    {PROJ_WRITE, {"metadata", "resourceVersion"}, "informerd: the cache's version"},
    {PROJ_READ, {"metadata", "labels", "app.kubernetes.io/instance"}, "cache: the owner key"},
    {PROJ_READ, {"metadata", "labels", "cache.example.com/backup"}, BACKUP_PLAN " (whose Job)"},
    {PROJ_READ, {"metadata", "deletionTimestamp"}, BACKUP_PLAN},
    {PROJ_READ, {"status", "active"}, BACKUP_PLAN " (running)"},
    {PROJ_READ, {"status", "succeeded"}, BACKUP_PLAN " (ended)"},
    {PROJ_READ, {"status", "failed"}, BACKUP_PLAN " (ended: a pod that never said why)"},
    {PROJ_READ, {"status", "conditions"}, BACKUP_PLAN " (Complete, Failed: DeadlineExceeded)"},
};

#define BACKUP_LINE BACKUP_PLAN " (rdc-backup's line: the termination message)"
static const proj_row_t backuppod_rows[] = {
    IDENTITY_ROWS(PROJ_KEEP, "informerd --tail, --subscribe"),
    {PROJ_READ, {"metadata", "name"}, BACKUP_PLAN},
    {PROJ_READ, {"metadata", "namespace"}, BACKUP_PLAN},
    {PROJ_WRITE, {"metadata", "resourceVersion"}, "informerd: the cache's version"},
    {PROJ_READ, {"metadata", "labels", "cache.example.com/backup-cluster"}, "cache: the owner key"},
    {PROJ_READ, {"metadata", "labels", "cache.example.com/backup"}, BACKUP_PLAN " (whose pod)"},
    {PROJ_READ, {"status", "phase"}, BACKUP_PLAN " (Succeeded, Failed)"},
    {PROJ_READ, {"status", "containerStatuses", "[]", "name"},
     BACKUP_PLAN " (Cluster mode: container shard-<k> is shard k's take)"},
    {PROJ_READ, {"status", "containerStatuses", "[]", "state", "terminated", "exitCode"}, BACKUP_LINE},
    {PROJ_READ, {"status", "containerStatuses", "[]", "state", "terminated", "message"}, BACKUP_LINE},
};

#define TABLE(kind, rows) {kind, rows, sizeof(rows) / sizeof(rows[0])}
static const projection_t tables[] = {
    TABLE("ConfigMap", configmap_rows),
    TABLE("Service", service_rows),
    TABLE("StatefulSet", statefulset_rows),
    TABLE("PodDisruptionBudget", pdb_rows),
    TABLE("NetworkPolicy", netpol_rows),
    TABLE("Pod", pod_rows),
    TABLE("RedisBackup", redisbackup_rows),
    TABLE("Job", job_rows),
    TABLE("BackupPod", backuppod_rows),
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

const projection_t *projection_of(const char *kind)
{
    for (size_t i = 0; kind && i < NTABLES; i++)
        if (!strcmp(tables[i].kind, kind))
            return &tables[i];
    return NULL;
}

const projection_t *projection_at(size_t i)
{
    return i < NTABLES ? &tables[i] : NULL;
}

const char *projection_use_name(proj_use_t use)
{
    switch (use) {
    case PROJ_READ: return "read";
    case PROJ_KEEP: return "keep";
    case PROJ_WRITE: return "write";
    case PROJ_LATE: return "late";
    case PROJ_DROP: break;
    }
    return "drop";
}

int projection_element_step(json_object *elem, char *out, size_t outlen)
{
    json_object *t = NULL;
    const char *type = json_object_object_get_ex(elem, "type", &t) && json_object_is_type(t, json_type_string)
                           ? json_object_get_string(t)
                           : NULL;
    int n = type ? snprintf(out, outlen, "[type=%s]", type) : -1;
    if (n < 0 || (size_t)n >= outlen)
        snprintf(out, outlen, "[]");
    return 0;
}

/* 1 when a row's step names the path's step at: the same member, or "[]" for any
 * element ("[type=X]" names only an element whose type is X). */
static int step_matches(const char *row, const char *at)
{
    return !strcmp(row, at) || (!strcmp(row, "[]") && at[0] == '[');
}

/* The rows of mask (bit i: p->rows[i]) whose step at depth names step. */
static uint64_t rows_with_step(const projection_t *p, uint64_t mask, size_t depth, const char *step)
{
    uint64_t out = 0;
    for (size_t i = 0; i < p->nrows; i++)
        if ((mask >> i & 1) && p->rows[i].step[depth] && step_matches(p->rows[i].step[depth], step))
            out |= UINT64_C(1) << i;
    return out;
}

/* Reduce v, at depth steps down a path every row of mask matches so far, whose nearest
 * row above says covering. Returns 1 with *out (a new reference; NULL is JSON null) when
 * something of v is kept, 0 when nothing is; *oom on failure. */
static int reduce_at(const projection_t *p, json_object *v, uint64_t mask, size_t depth, proj_use_t covering,
                     unsigned uses, json_object **out, int *oom)
{
    uint64_t deeper = 0;
    for (size_t i = 0; i < p->nrows; i++) {
        if (!(mask >> i & 1))
            continue;
        if (p->rows[i].step[depth])
            deeper |= UINT64_C(1) << i;
        else
            covering = p->rows[i].use; /* a row ends here */
    }
    int wanted = (uses & PROJ_BIT(covering)) != 0;
    *out = NULL;
    json_type t = json_object_get_type(v);
    if (!deeper || depth >= PROJ_MAX_STEPS || (t != json_type_object && t != json_type_array)) {
        *out = wanted ? json_object_get(v) : NULL;
        return wanted;
    }
    json_object *r = t == json_type_object ? json_object_new_object() : json_object_new_array();
    if (!r) {
        *oom = 1;
        return 0;
    }
    if (t == json_type_object) {
        json_object_object_foreach(v, key, cv)
        {
            json_object *sub = NULL;
            if (reduce_at(p, cv, rows_with_step(p, deeper, depth, key), depth + 1, covering, uses, &sub, oom) &&
                json_object_object_add(r, key, sub)) {
                json_object_put(sub);
                *oom = 1;
            }
        }
    } else {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *sub = NULL, *e = json_object_array_get_idx(v, i);
            char step[160];
            projection_element_step(e, step, sizeof(step));
            uint64_t each = rows_with_step(p, deeper, depth, step);
            if (reduce_at(p, e, each, depth + 1, covering, uses, &sub, oom) &&
                json_object_array_add(r, sub)) {
                json_object_put(sub);
                *oom = 1;
            }
        }
    }
    size_t n = t == json_type_object ? (size_t)json_object_object_length(r) : json_object_array_length(r);
    if (*oom || (!n && !wanted)) {
        json_object_put(r);
        return 0;
    }
    *out = r;
    return 1;
}

json_object *projection_reduce(const projection_t *p, json_object *obj, unsigned uses, int *oom)
{
    if (!p || !obj || !json_object_is_type(obj, json_type_object))
        return NULL;
    uint64_t all = p->nrows >= 64 ? UINT64_MAX : (UINT64_C(1) << p->nrows) - 1;
    json_object *out = NULL;
    int local = 0;
    if (!reduce_at(p, obj, all, 0, PROJ_DROP, uses, &out, &local) || local) {
        json_object_put(out);
        if (local)
            *oom = 1;
        return NULL;
    }
    return out;
}

/* The digest of the parts of obj whose use is in uses (0: out of memory). */
static uint64_t digest_of(const projection_t *p, json_object *obj, unsigned uses)
{
    int oom = 0;
    json_object *read = projection_reduce(p, obj, uses, &oom);
    if (oom)
        return 0;
    const char *text = read ? json_object_to_json_string_ext(read, JSON_C_TO_STRING_PLAIN) : "";
    uint64_t h = text ? hash_fnv(HASH_FNV_START, text) : 0;
    json_object_put(read);
    return h;
}

uint64_t projection_digest(const projection_t *p, json_object *obj)
{
    return digest_of(p, obj, PROJ_BIT(PROJ_READ));
}

uint64_t projection_late_digest(const projection_t *p, json_object *obj)
{
    int late = 0;
    for (size_t i = 0; p && i < p->nrows && !late; i++)
        late = p->rows[i].use == PROJ_LATE;
    /* (a kind without late rows: that of nothing, without a walk of obj) */
    return late ? digest_of(p, obj, PROJ_BIT(PROJ_LATE)) : hash_fnv(HASH_FNV_START, "");
}

proj_use_t projection_use_at(const projection_t *p, const char *const *steps, size_t n)
{
    proj_use_t use = PROJ_DROP;
    size_t best = 0;
    for (size_t i = 0; p && i < p->nrows; i++) {
        const proj_row_t *r = &p->rows[i];
        size_t k = 0;
        while (k < n && r->step[k] && step_matches(r->step[k], steps[k]))
            k++;
        if (!r->step[k] && k >= best) { /* the row is a prefix of the path, and the longest yet */
            best = k;
            use = r->use;
        }
    }
    return use;
}

int projection_row_path(const proj_row_t *row, char *out, size_t outlen)
{
    size_t len = 0;
    int over = 0;
    if (outlen)
        out[0] = '\0';
    for (size_t k = 0; row->step[k] && !over; k++) {
        const char *st = row->step[k];
        int arr = st[0] == '[', quoted = !arr && strpbrk(st, "./") != NULL; /* a label's key: ["a.b/c"] */
        int n = snprintf(out + len, outlen > len ? outlen - len : 0, quoted ? "[\"%s\"]" : "%s%s",
                         quoted ? st : (k && !arr ? "." : ""), quoted ? "" : st);
        over = n < 0 || (size_t)n >= (outlen > len ? outlen - len : 0);
        len += over ? 0 : (size_t)n;
    }
    return over ? -1 : 0;
}

/* ---- OBSERVATIONS (projection.h) ---------------------------------------------------------- */

int projection_observed_unreachable(const json_object *obs, const char *pod)
{
    const json_object *r = jsonx_get(jsonx_find(jsonx_get(obs, "nodes"), "pod", pod), "reachable");
    return r && json_object_is_type(r, json_type_boolean) && !json_object_get_boolean(r);
}

/* 1 when some pod named in a's nodes is unreachable in one of a and b and not the other. */
static int unreachable_differs(const json_object *a, const json_object *b)
{
    const json_object *nodes = jsonx_get(a, "nodes");
    size_t n = json_object_is_type(nodes, json_type_array) ? json_object_array_length(nodes) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *pod = jsonx_str_set(json_object_array_get_idx(nodes, i), "pod");
        if (pod && projection_observed_unreachable(a, pod) != projection_observed_unreachable(b, pod))
            return 1;
    }
    return 0;
}

int projection_observation_news(const rdc_spec_t *spec, const json_object *was, const json_object *now)
{
    if (!spec || spec->mode != RDC_MODE_STANDALONE || spec->tls.secret)
        return 1;
    return unreachable_differs(now, was) || unreachable_differs(was, now);
}
