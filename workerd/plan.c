/* plan: the pure core of a RedisCluster reconcile, in the order of plan.h's DECISIONS.
 * See plan.h for the contract.
 *
 * This file runs one reconcile's plan from its context (plan_internal.h): decisions 1
 * to 4 here, then each piece in turn, each behind its own header and owning what it
 * finds: the children (plan_children), the password (plan_auth), the mode's own
 * decisions (plan_replication for Replication; Cluster mode's plan_cluster,
 * beside it), the diagnosis (plan_diagnosis), the status (plan_status), the runtime
 * config (plan_runtime), then what the caller is asked to read. The plan object is
 * plan_build's; the plans after a refused write are plan_failed's. */
#include "plan.h"

#include "jsonx.h"
#include "plan_acl.h"
#include "plan_backup.h"
#include "plan_auth.h"
#include "plan_build.h"
#include "plan_children.h"
#include "plan_cluster.h"
#include "plan_diagnosis.h"
#include "plan_internal.h"
#include "plan_observe.h"
#include "plan_replication.h"
#include "plan_restore.h"
#include "plan_runtime.h"
#include "plan_scale.h"
#include "plan_status.h"
#include "plan_tls.h"
#include "plan_volume.h"
#include "rdc_spec.h"
#include "render.h"
#include "status_policy.h"

#include <stdarg.h>
#include <string.h>

/* ---- The context (plan_internal.h) ---------------------------------------------------- */

void plan_ctx_init(plan_ctx_t *c, plan_t *p, const json_object *rc, int64_t now, plan_degraded_t *degraded)
{
    const json_object *meta = jsonx_get(rc, "metadata");
    memset(c, 0, sizeof(*c));
    c->plan = p;
    c->rc = rc;
    c->name = jsonx_str_set(meta, "name");
    c->ns = jsonx_str_set(meta, "namespace");
    c->uid = jsonx_str_set(meta, "uid");
    c->generation = jsonx_int_or(meta, "generation", -1);
    c->now = now;
    static const rdc_spec_t none; /* size 0, and the first value of every enum (the defaults) */
    c->spec = &none;
    c->in.name = c->name;
    c->in.ns = c->ns;
    c->in.uid = c->uid;
    c->in.spec = c->spec;
    c->in.shard = -1; /* the cluster's own objects (headless Service, ...): every shard's pods */
    degraded->reason = NULL;
    buf_init(&degraded->message, PLAN_MESSAGE_CAP);
    c->degraded = degraded;
}

void plan_degraded_free(plan_degraded_t *d)
{
    buf_free(&d->message);
}

void plan_degrade(const plan_ctx_t *c, const char *reason, const char *fmt, ...)
{
    plan_degraded_t *d = c->degraded;
    if (!d->reason)
        d->reason = reason;
    if (d->message.len)
        buf_puts(&d->message, "; ");
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&d->message, fmt, ap);
    va_end(ap);
}

int plan_critical_path_first(const plan_ctx_t *c)
{
    return c->more && c->more->budget_short;
}

/* ---- Decision 4: the spec ---------------------------------------------------------------- */

/* Decision 4: the uid and the spec, parsed with rdc_spec_parse, whose rules are the
 * admission webhook's, so the two cannot disagree. An unset version, maxmemoryPolicy,
 * storage size and the rest take the defaults rdc_spec.h states, so a cluster runs the
 * same with or without the defaulting webhook. When either is invalid, sets
 * f->failed_reason and f->invalid (pointing into invalid): every problem as the API
 * server words field errors ("spec.size: Invalid value: 11: must be between 1 and 10",
 * several as "[..., ...]"), and *spec stays the defaults alone; else *spec is the spec
 * and c reads it. Returns 0, or -1 when out of memory. */
static int check_spec(plan_ctx_t *c, rdc_spec_t *spec, buf_t *invalid, plan_findings_t *f)
{
    rdc_spec_defaults(spec);
    f->invalid = "";
    if (!c->uid) {
        f->failed_reason = "InvalidObject";
        buf_puts(invalid, "metadata.uid: missing, empty or not a string; the children's owner references need it");
        f->invalid = buf_str(invalid);
        return 0;
    }
    rdc_field_errors_t *errs = rdc_field_errors_new();
    if (!errs)
        return -1;
    rdc_spec_t parsed;
    size_t n = rdc_spec_parse(c->rc, &parsed, errs);
    int oom = rdc_field_errors_oom(errs) || (n && rdc_field_errors_format(errs, invalid));
    rdc_field_errors_destroy(&errs);
    if (oom)
        return -1;
    if (n) {
        f->failed_reason = "InvalidSpec";
        f->invalid = buf_str(invalid);
    } else {
        *spec = parsed;
    }
    return 0;
}

/* ---- Decisions 2 and 3: the finalizer ------------------------------------------------------ */

static int has_finalizer(const json_object *meta)
{
    const json_object *f = jsonx_get(meta, "finalizers");
    for (size_t i = 0; i < jsonx_len(f); i++) {
        const char *s = jsonx_value_str(json_object_array_get_idx(f, i));
        if (s && !strcmp(s, PLAN_FINALIZER))
            return 1;
    }
    return 0;
}

/* The merge patch that sets the finalizer list to the observed one plus (add) or minus
 * ours, with the resourceVersion precondition. */
static json_object *finalizer_patch(const json_object *meta, int add, int *oom)
{
    json_object *list = jsonx_new_arr(oom);
    const json_object *f = jsonx_get(meta, "finalizers");
    for (size_t i = 0; i < jsonx_len(f); i++) {
        const char *s = jsonx_value_str(json_object_array_get_idx(f, i));
        if (s && strcmp(s, PLAN_FINALIZER))
            jsonx_push(list, jsonx_new_str(s, oom), oom);
    }
    if (add)
        jsonx_push(list, jsonx_new_str(PLAN_FINALIZER, oom), oom);
    json_object *m = jsonx_new_obj(oom);
    jsonx_put(m, "finalizers", list, oom);
    const char *rv = jsonx_str_set(meta, "resourceVersion");
    if (rv)
        jsonx_put(m, "resourceVersion", jsonx_new_str(rv, oom), oom);
    json_object *patch = jsonx_new_obj(oom);
    jsonx_put(patch, "metadata", m, oom);
    return jsonx_done(patch, *oom);
}

/* Decision 2: deletion. */
static void plan_deletion(plan_t *p, const json_object *meta)
{
    const char *ns = jsonx_str_set(meta, "namespace"), *name = jsonx_str_set(meta, "name");
    if (!has_finalizer(meta))
        return;
    int i = plan_add_action(p, PLAN_CLEANUP, RENDER_GROUP_VERSION, "redisclusters", ns, name, NULL,
                            "RedisCluster is being deleted: run the cleanup hook");
    plan_add_event(p, "Normal", "CleanedUp", i, "Cleaned up RedisCluster %s/%s before deletion", ns, name);
    plan_add_action(p, PLAN_REMOVE_FINALIZER, RENDER_GROUP_VERSION, "redisclusters", ns, name,
                    finalizer_patch(meta, 0, plan_oom(p)),
                    "RedisCluster is being deleted: cleanup done, remove " PLAN_FINALIZER);
}

/* ---- Decisions 5 to 7 -------------------------------------------------------------------- */

/* What the pieces of one live plan find, each piece's own. */
typedef struct {
    rdc_spec_t spec;   /* decision 4 */
    plan_findings_t f; /* what the status is computed from (pointing into the rest) */
    plan_kids_t kids;
    topo_t topo;
    plan_cluster_t cluster;
    plan_diag_t diag;
    plan_tls_found_t tls;
    plan_volume_t volume;
    plan_restore_t restore; /* RESTORE FROM A REDISBACKUP, before the children */
    int rotating;      /* AUTH: a password rotation is in this plan */
    char last_schedule[40]; /* BACKUP: status.backup.lastScheduleTime ("" none) */
} found_t;

/* For a valid spec: the children, the password, the mode's own decisions (REPLICATION;
 * CLUSTER, plan_cluster.c), then the diagnosis.
 * Returns 0, or -1 when out of memory. */
static int plan_valid(plan_ctx_t *c, const plan_children_t *kids, found_t *x)
{
    int rotating = 0;
    /* RESTORE FROM A REDISBACKUP: the source the pods restore from, or the StatefulSet held */
    if (plan_restore(c, &x->spec, &x->restore))
        return -1;
    c->restore = &x->restore;
    x->f.restore = &x->restore;
    /* CLUSTER: decided first, the children keep its layout (a shard or pods leaving) */
    if (c->spec->mode == RDC_MODE_CLUSTER) {
        if (plan_cluster_decide(c, &x->cluster))
            return -1;
        c->cluster = x->cluster.r;
        c->cluster_in = x->cluster.in;
    }
    /* SCALE-IN: the StatefulSet keeps the pod of a primary that is to go until it hands over */
    c->in.shard_replicas = plan_scale_in_hold(c, kids->statefulset);
    if (plan_acl_file(c, 1) || plan_children(c, kids, &x->kids) || plan_auth(c, &rotating))
        return -1;
    x->rotating = rotating;
    x->f.kids = &x->kids;
    /* The StatefulSet whose status counts: ours, else none. */
    const json_object *sts = x->kids.sts_ours ? kids->statefulset : NULL;
    /* TLS turned on or off: every pod restarts at once, no topology command with it (a
     * pod of the other protocol cannot be spoken to), as with a password rotation. */
    size_t before = plan_action_count(c->plan);
    if (plan_tls_restart(c, sts))
        return -1;
    rotating |= plan_action_count(c->plan) != before;
    if (c->spec->mode == RDC_MODE_REPLICATION) {
        x->f.topo = &x->topo;
        if (plan_replication(c, sts, rotating, &x->topo))
            return -1;
    }
    if (c->spec->mode == RDC_MODE_CLUSTER) {
        x->f.cluster = &x->cluster;
        /* no Redis Cluster command while a password rotation's are in the plan (the
         * observer cannot authenticate meanwhile), as REPLICATION */
        if (!rotating && plan_cluster(c, &x->kids, &x->cluster))
            return -1;
    }
    /* VOLUME EXPANSION: after the pods' commands, the claims, then the StatefulSet orphaned */
    if (c->spec->mode != RDC_MODE_CLUSTER && plan_volume(c, x->kids.volume_grow, sts, &x->volume))
        return -1;
    x->f.volume = &x->volume;
    plan_diagnose(c, sts, &x->diag);
    x->f.diag = &x->diag;
    plan_tls(c, &x->tls);
    x->f.tls = &x->tls;
    return 0;
}

/* What goes after the status (RUNTIME CONFIG, ACL, TLS's rotation: a command a pod
 * refuses fails the reconcile, not the children or the status), once the pods are ours.
 * Returns 0, or -1 when out of memory. */
static int plan_pods_last(const plan_ctx_t *c, const found_t *x)
{
    if (!x->kids.sts_ours && !x->cluster.view.present)
        return 0;
    return plan_runtime_config(c) || plan_acl_pods(c, x->rotating) || plan_acl_file(c, 0) || plan_tls_rotate(c)
               ? -1
               : 0;
}

/* What the caller is asked to read next, and the requeue of decision 7. */
static void plan_reads(const plan_ctx_t *c, const found_t *x, const json_object *sts)
{
    plan_t *p = c->plan;
    const char *phase = plan_phase(p);
    int sts_ours = !x->f.failed_reason && x->kids.sts_ours;
    int not_running = sts_ours && phase && strcmp(phase, "Running");
    int wants = not_running;
    if (wants) {
        /* DIAGNOSIS: not while the cluster moves (its counts are not told yet: a pod
         * created or Ready since) unless the told count is a window old (a first
         * rollout holds its count longer, status_policy.h); a converging cluster is
         * reconciled at every pod change. The status write that tells the counts, or
         * the requeue at the window's end, brings the next look. */
        plan_sts_view_t v = plan_view_statefulset(sts);
        wants = status_policy_diagnosis_due(jsonx_get(c->rc, "status"), v.replicas, v.ready,
                                            plan_status_held_ns(p) > 0, c->now);
    }
    /* The class is looked up when the StatefulSet is created and while the cluster is not
     * Running (a healthy resync reads nothing more), whether or not the diagnosis is due:
     * a reconcile that did not look would clear StorageClassNotFound and the next that did
     * would set it again (a status write and an Event each time). */
    const char *cls = c->spec->storage.storage_class;
    if (!x->kids.sts_created && !not_running)
        cls = NULL;
    plan_set_reads(p, wants, cls, jsonx_str_set(plan_status(p), "selector"));
    /* An object in the way is not watched (it has not our labels): look again. A restore
     * that waits for its RedisBackup has its own pace (plan_restore.h, BACKOFF). */
    if (x->restore.hold && !x->kids.owner_conflict)
        plan_requeue_within(p, x->restore.requeue_ns);
    else if (x->kids.owner_conflict || (phase && strcmp(phase, "Running") && strcmp(phase, "Failed")))
        plan_requeue_within(p, PLAN_REQUEUE_NOT_READY_NS);
}

/* Decisions 3 to 7 for an object that is not being deleted. Out of memory sets the
 * plan's flag. */
static void plan_live(plan_t *p, const json_object *rc, const plan_children_t *kids, const plan_observed_t *more,
                      int64_t now)
{
    plan_ctx_t c;
    plan_degraded_t degraded;
    found_t x;
    memset(&x, 0, sizeof(x));
    plan_ctx_init(&c, p, rc, now, &degraded);
    c.more = more;
    c.in.operator_image = more ? more->operator_image : NULL; /* RESTORE (render.h) */
    plan_diag_init(&x.diag);
    buf_t invalid;
    buf_init(&invalid, PLAN_MESSAGE_CAP - 1); /* it must fit a condition's message */
    c.spec = c.in.spec = &x.spec;
    x.f.last_schedule = x.last_schedule;
    const json_object *meta = jsonx_get(rc, "metadata");
    if (!has_finalizer(meta))
        plan_add_action(p, PLAN_ADD_FINALIZER, RENDER_GROUP_VERSION, "redisclusters", c.ns, c.name,
                        finalizer_patch(meta, 1, plan_oom(p)), "RedisCluster has no " PLAN_FINALIZER " yet");
    int bad = *plan_oom(p) || check_spec(&c, &x.spec, &invalid, &x.f) ||
              (!x.f.failed_reason && plan_valid(&c, kids, &x)) ||
              plan_backup_schedule(&c, x.last_schedule, sizeof(x.last_schedule)) ||
              plan_status_compute(&c, x.kids.sts_ours ? kids->statefulset : NULL, &x.f) ||
              (!x.f.failed_reason && (plan_pods_last(&c, &x) || plan_backups(&c)));
    if (!bad)
        plan_reads(&c, &x, kids->statefulset);
    else
        *plan_oom(p) = 1;
    buf_free(&invalid);
    plan_restore_free(&x.restore);
    plan_cluster_free(&x.cluster);
    plan_diag_free(&x.diag);
    plan_degraded_free(&degraded);
}

/* Decision 1: name and namespace. Returns 0, or -1 with the plan's error set. */
static int check_addressable(plan_t *p, const json_object *rc, const json_object *meta)
{
    const char *what = NULL;
    if (!jsonx_typed(rc, json_type_object))
        what = "the RedisCluster is not a JSON object";
    else if (!jsonx_typed(meta, json_type_object))
        what = "metadata: missing or not an object";
    else if (!jsonx_str_set(meta, "name"))
        what = "metadata.name: missing, empty or not a string";
    else if (!jsonx_str_set(meta, "namespace"))
        what = "metadata.namespace: missing, empty or not a string";
    if (!what)
        return 0;
    plan_set_error(p, what);
    return -1;
}

plan_t *plan_compute(const json_object *rediscluster, const json_object *configmap, const json_object *service,
                     const json_object *statefulset, int64_t now_wall_ns)
{
    return plan_compute_observed(rediscluster, configmap, service, statefulset, NULL, now_wall_ns);
}

plan_t *plan_compute_observed(const json_object *rediscluster, const json_object *configmap,
                              const json_object *service, const json_object *statefulset,
                              const plan_observed_t *more, int64_t now_wall_ns)
{
    plan_children_t kids = {configmap, service, statefulset, NULL};
    return plan_compute_children(rediscluster, &kids, more, now_wall_ns);
}

plan_t *plan_compute_children(const json_object *rediscluster, const plan_children_t *kids,
                              const plan_observed_t *more, int64_t now_wall_ns)
{
    plan_t *p = plan_new();
    if (!p)
        return NULL;
    const json_object *meta = jsonx_get(jsonx_typed(rediscluster, json_type_object), "metadata");
    /* A non-object child counts as absent. */
    plan_children_t observed = {jsonx_typed(kids->configmap, json_type_object),
                                jsonx_typed(kids->service, json_type_object),
                                jsonx_typed(kids->statefulset, json_type_object),
                                jsonx_typed(kids->pdb, json_type_object)};
    if (check_addressable(p, rediscluster, meta) == 0) {
        if (jsonx_get(meta, "deletionTimestamp"))
            plan_deletion(p, meta);
        else
            plan_live(p, rediscluster, &observed, more, now_wall_ns);
    }
    if (*plan_oom(p))
        plan_destroy(&p);
    return p;
}
