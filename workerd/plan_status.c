/* plan_status: the status, computed and written. See plan_status.h and plan.h (STATUS,
 * STATUS WRITE POLICY). */
#include "plan_status.h"

#include "buf.h"
#include "clock.h"
#include "jsonx.h"
#include "plan_observe.h"
#include "plan_restore.h"
#include "plan_tls.h"
#include "render.h"
#include "status_policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { COND_READY, COND_PROGRESSING, COND_DEGRADED, COND_COUNT };

static const plan_kids_t no_kids; /* findings of a plan that planned no child */

void plan_cond_set(plan_cond_t *k, const char *type, int status, const char *reason, const char *fmt, ...)
{
    k->type = type;
    k->status = status ? "True" : "False";
    k->reason = reason;
    BUF_FORMAT_VA(k->message, sizeof(k->message), fmt);
}

json_object *plan_cond_json(const plan_ctx_t *c, const plan_cond_t *k, const json_object *ostatus, int *oom)
{
    const json_object *old = plan_observed_cond(ostatus, k->type);
    const char *old_status = jsonx_str_set(old, "status"), *old_time = jsonx_str_set(old, "lastTransitionTime");
    char now[40];
    clock_format_rfc3339(c->now, 0, now, sizeof(now));
    const char *when = old_status && old_time && !strcmp(old_status, k->status) ? old_time : now;
    /* lastUpdateTime: when status, reason or message last changed (the count is in the
     * message: STATUS WRITE POLICY). Only the observed value when it says the same. */
    const char *old_update = jsonx_str_set(old, "lastUpdateTime");
    int same_says = old && jsonx_str_is(old, "status", k->status) && jsonx_str_is(old, "reason", k->reason) &&
                    jsonx_str_is(old, "message", k->message);
    const char *updated = same_says ? old_update : now;
    json_object *j = jsonx_new_obj(oom);
    jsonx_put(j, "type", jsonx_new_str(k->type, oom), oom);
    jsonx_put(j, "status", jsonx_new_str(k->status, oom), oom);
    if (c->generation >= 0)
        jsonx_put(j, "observedGeneration", jsonx_new_int(c->generation, oom), oom);
    jsonx_put(j, "lastTransitionTime", jsonx_new_str(when, oom), oom);
    if (updated)
        jsonx_put(j, "lastUpdateTime", jsonx_new_str(updated, oom), oom);
    jsonx_put(j, "reason", jsonx_new_str(k->reason, oom), oom);
    if (k->message[0])
        jsonx_put(j, "message", jsonx_new_str(k->message, oom), oom);
    return j;
}

/* ---- Phase and conditions --------------------------------------------------------------- */

/* How the StatefulSet moves (STATUS in plan.h). */
typedef struct {
    int scaling;    /* its replicas differ from spec.size, or this plan changes them */
    int rolling;    /* it rolls out, or this plan gives it a new template */
    int continuing; /* a scale-up between two pods: stays Scaling, no Pending flicker */
    int creating;   /* CREATING: a new cluster's first rollout */
} motion_t;

static motion_t motion_of(const plan_ctx_t *c, const plan_findings_t *f, const plan_sts_view_t *v)
{
    const plan_kids_t *k = f->kids ? f->kids : &no_kids;
    const json_object *ostatus = jsonx_get(c->rc, "status");
    int size = c->spec->size;
    motion_t m = {0};
    m.scaling = v->spec_replicas != size || k->sts_replicas_change;
    m.rolling = v->rolling || k->sts_template_change;
    const char *was = jsonx_str_set(ostatus, "phase");
    int diagnosed = f->diag && f->diag->reason;
    m.continuing = !m.scaling && !m.rolling && !diagnosed && v->ready > 0 && v->ready < size && was &&
                   !strcmp(was, "Scaling");
    /* CREATING: a new cluster's first rollout (the StatefulSet starts its pods one by
     * one) stays Pending with Progressing=True Creating until it is Running, its ready
     * count being the progress (STATUS WRITE POLICY), rather than going Pending, Scaling
     * at the first pod, Running: one phase change less per cluster. A resize or a new pod
     * template meanwhile is Scaling or RollingUpdate as ever. No status yet (CRITICAL
     * PATH) counts as Creating. */
    const json_object *oprog = plan_observed_cond(ostatus, "Progressing");
    int was_creating = !was || (jsonx_str_is(oprog, "status", "True") && jsonx_str_is(oprog, "reason", "Creating"));
    m.creating = !m.scaling && !k->sts_template_change && was_creating && (v->ready < size || v->rolling);
    return m;
}

/* SCALE-IN: what holds the StatefulSet's replicas (the primary's handover). */
static const char *scale_in_step(const topo_t *t)
{
    if (t->switch_why[0])
        return t->switch_why;
    return t->switchover_from[0] ? "the primary role is being handed over first"
                                 : "waiting for the primary to be handed over to a pod that stays";
}

static void decide_progressing(const plan_ctx_t *c, const plan_findings_t *f, const plan_sts_view_t *v,
                               const motion_t *m, plan_cond_t *prog)
{
    const plan_kids_t *k = f->kids ? f->kids : &no_kids;
    int wait = f->topo && f->topo->switch_wait;
    if (f->volume && f->volume->active)
        plan_cond_set(prog, "Progressing", 1, "VolumeResizing", "%s", f->volume->message);
    else if (m->scaling && v->spec_replicas > c->spec->size)
        /* SCALE-IN (plan_scale.h): the highest ordinals go; a primary among them first
         * hands its role over, which the switchover's words say */
        plan_cond_set(prog, "Progressing", 1, "ScalingIn", "scaling in from %lld to %d replicas%s%s",
                      (long long)v->spec_replicas, c->spec->size, f->topo && c->in.shard_replicas ? ": " : "",
                      f->topo && c->in.shard_replicas ? scale_in_step(f->topo) : "");
    else if (m->scaling)
        plan_cond_set(prog, "Progressing", 1, "Scaling", "scaling from %lld to %d replicas",
                      (long long)v->spec_replicas, c->spec->size);
    else if (m->creating)
        plan_cond_set(prog, "Progressing", 1, "Creating", "creating StatefulSet %s/%s", c->ns, c->name);
    else if (m->continuing)
        plan_cond_set(prog, "Progressing", 1, "Scaling", "scaling to %d replicas, %lld ready", c->spec->size,
                      (long long)v->ready);
    else if (m->rolling)
        /* An operator-driven rollout (Replication) that waits says for what: a pod coming
         * back, or a replica not caught up enough to take the primary role. */
        plan_cond_set(prog, "Progressing", 1, "RollingUpdate", "%lld/%lld replicas updated%s%s%s",
                      (long long)v->updated, (long long)v->spec_replicas,
                      k->sts_template_change ? ", applying a new pod template" : "", wait ? "; " : "",
                      wait ? f->topo->switch_why : "");
    else
        plan_cond_set(prog, "Progressing", 0, "Stable", "%s", "");
}

static const char *phase_of(const plan_ctx_t *c, const plan_sts_view_t *v, const motion_t *m)
{
    if (v->ready == 0 || m->creating)
        return "Pending";
    if (m->scaling || m->rolling || m->continuing)
        return "Scaling";
    return v->ready >= c->spec->size ? "Running" : "Pending";
}

static void decide_ready(const plan_ctx_t *c, const plan_findings_t *f, const plan_sts_view_t *v, const motion_t *m,
                         const char *phase, plan_cond_t *ready)
{
    long long n = (long long)v->ready;
    int size = c->spec->size;
    if (!strcmp(phase, "Running"))
        plan_cond_set(ready, "Ready", 1, "AllReplicasReady", "%lld/%d replicas ready", n, size);
    else if (f->diag && f->diag->reason)
        plan_cond_set(ready, "Ready", 0, f->diag->reason, "%lld/%d replicas ready: %s", n, size,
                      buf_str(&f->diag->message));
    else if (m->creating) /* the reason it had while the StatefulSet was made: only the count moves */
        plan_cond_set(ready, "Ready", 0, "Creating", "%lld/%d replicas ready", n, size);
    else
        plan_cond_set(ready, "Ready", 0, "ReplicasNotReady", "%lld/%d replicas ready", n, size);
}

/* Decide the phase and the conditions Ready, Progressing and Degraded. */
static const char *decide(const plan_ctx_t *c, const plan_findings_t *f, const plan_sts_view_t *v,
                          plan_cond_t conds[COND_COUNT])
{
    plan_cond_t *ready = &conds[COND_READY], *prog = &conds[COND_PROGRESSING], *deg = &conds[COND_DEGRADED];
    if (f->failed_reason) {
        plan_cond_set(ready, "Ready", 0, f->failed_reason, "%s", f->invalid);
        plan_cond_set(prog, "Progressing", 0, f->failed_reason, "the spec must be fixed first");
        plan_cond_set(deg, "Degraded", 1, f->failed_reason, "%s", f->invalid);
        return "Failed";
    }
    if (c->degraded->reason)
        plan_cond_set(deg, "Degraded", 1, c->degraded->reason, "%s", buf_str(&c->degraded->message));
    else
        plan_cond_set(deg, "Degraded", 0, "AsExpected", "%s", "");
    if (!v->present && f->volume && f->volume->active) {
        /* VOLUME EXPANSION: orphaned and created again; the pods keep running meanwhile */
        plan_cond_set(ready, "Ready", 0, "VolumeResizing", "the StatefulSet is created again; its pods keep running");
        plan_cond_set(prog, "Progressing", 1, "VolumeResizing", "%s", f->volume->message);
        return "Scaling";
    }
    const plan_restore_t *rs = f->restore;
    if (!v->present && rs && rs->hold) {
        /* RESTORE FROM A REDISBACKUP: no StatefulSet before the restore's source is recorded */
        plan_cond_set(ready, "Ready", 0, rs->reason, "%s", rs->message);
        plan_cond_set(prog, "Progressing", rs->state != PLAN_RESTORE_FAILED, rs->reason, "%s", rs->message);
        return "Pending";
    }
    if (!v->present) {
        plan_cond_set(ready, "Ready", 0, "Creating", "0/%d replicas ready", c->spec->size); /* as CREATING goes on */
        plan_cond_set(prog, "Progressing", 1, "Creating", "creating StatefulSet %s/%s", c->ns, c->name);
        return "Pending";
    }
    motion_t m = motion_of(c, f, v);
    decide_progressing(c, f, v, &m, prog);
    const char *phase = phase_of(c, v, &m);
    decide_ready(c, f, v, &m, phase, ready);
    /* CLUSTER: Running only when Redis Cluster is healthy too (docs/cluster-mode.md) */
    const ctopo_result_t *r = f->cluster ? f->cluster->r : NULL;
    if (f->cluster && !strcmp(phase, "Running") && !(r && r->healthy)) {
        phase = "Pending";
        plan_cond_set(ready, "Ready", 0, r ? r->reason : "NotObserved", "%lld/%d pods ready; Redis Cluster: %s",
                      (long long)v->ready, c->spec->size, r ? r->message : "not observed yet");
    }
    return phase;
}

/* ---- Whether it is written -------------------------------------------------------------- */

/* 1 when the observed status.nodes say what the computed ones say on pod, ip, role and
 * linkUp (REPLICATION: offsets and lag alone never make a status write). */
static int nodes_current(const json_object *computed, const json_object *ostatus)
{
    const json_object *want = jsonx_get(computed, "nodes"), *have = jsonx_get(ostatus, "nodes");
    if (!want)
        return 1; /* Standalone: not ours to compare */
    if (!jsonx_typed(have, json_type_array) || jsonx_len(have) != jsonx_len(want))
        return 0;
    for (size_t i = 0; i < jsonx_len(want); i++) {
        const json_object *w = json_object_array_get_idx(want, i), *h = json_object_array_get_idx(have, i);
        const json_object *lu = jsonx_get(w, "linkUp");
        int link_up = lu && json_object_get_boolean((json_object *)lu);
        if (!jsonx_str_is(h, "pod", jsonx_str_set(w, "pod")) || !jsonx_str_is(h, "ip", jsonx_str_set(w, "ip")) ||
            !jsonx_str_is(h, "role", jsonx_str_set(w, "role")) || jsonx_true(h, "linkUp") != link_up)
            return 0;
    }
    return 1;
}

/* 1 when the observed status.cluster says what the computed one says (CLUSTER): state,
 * slots, bootstrapped, each shard's primary, slots and replicas with their links; the
 * replicas' offsets alone never make a status write (as REPLICATION's). */
static int cluster_current(const json_object *computed, const json_object *ostatus)
{
    const json_object *want = jsonx_get(computed, "cluster"), *have = jsonx_get(ostatus, "cluster");
    if (!want)
        return 1;
    if (!jsonx_str_is(have, "state", jsonx_str_set(want, "state")) ||
        !jsonx_int_is(have, "slotsAssigned", jsonx_int_or(want, "slotsAssigned", 0)) ||
        jsonx_true(have, "bootstrapped") != jsonx_true(want, "bootstrapped") ||
        jsonx_int_or(have, "slotsToMove", 0) != jsonx_int_or(want, "slotsToMove", 0) ||
        jsonx_int_or(have, "slotsMoved", 0) != jsonx_int_or(want, "slotsMoved", 0))
        return 0;
    const json_object *ws = jsonx_get(want, "shards"), *hs = jsonx_get(have, "shards");
    if (jsonx_len(ws) != jsonx_len(hs))
        return 0;
    for (size_t i = 0; i < jsonx_len(ws); i++) {
        const json_object *w = json_object_array_get_idx(ws, i), *h = json_object_array_get_idx(hs, i);
        const json_object *wr = jsonx_get(w, "replicas"), *hr = jsonx_get(h, "replicas");
        if (!jsonx_str_is(h, "primary", jsonx_str_set(w, "primary")) ||
            !jsonx_str_is(h, "slots", jsonx_str_set(w, "slots")) || jsonx_len(wr) != jsonx_len(hr) ||
            jsonx_true(h, "leaving") != jsonx_true(w, "leaving"))
            return 0;
        for (size_t k = 0; k < jsonx_len(wr); k++) {
            const json_object *a = json_object_array_get_idx(wr, k), *b = json_object_array_get_idx(hr, k);
            if (!jsonx_str_is(b, "pod", jsonx_str_set(a, "pod")) || jsonx_true(b, "linkUp") != jsonx_true(a, "linkUp"))
                return 0;
        }
    }
    return 1;
}

/* 1 when the observed status.restore is the computed one (RESTORE FROM A REDISBACKUP). */
static int restore_current(const json_object *computed, const json_object *ostatus)
{
    return json_object_equal(jsonx_get(computed, "restore"), jsonx_get(ostatus, "restore"));
}

/* 1 when the observed conditions say what the computed ones say (status, reason,
 * message, lastTransitionTime, observedGeneration). */
static int conditions_current(const plan_ctx_t *c, const json_object *computed, const json_object *ostatus)
{
    static const char *const keys[] = {"status", "reason", "message", "lastTransitionTime"};
    const json_object *list = jsonx_get(computed, "conditions");
    for (size_t i = 0; i < jsonx_len(list); i++) {
        const json_object *k = json_object_array_get_idx(list, i);
        const json_object *o = plan_observed_cond(ostatus, jsonx_str_set(k, "type"));
        if (!o)
            return 0;
        for (size_t j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
            if (!jsonx_str_is(o, keys[j], jsonx_str_set(k, keys[j])))
                return 0;
        if (c->generation >= 0 && !jsonx_int_is(o, "observedGeneration", c->generation))
            return 0;
    }
    return 1;
}

/* 1 when the observed status already says what computed says (STATUS in plan.h). */
static int status_current(const plan_ctx_t *c, const json_object *computed, const json_object *ostatus)
{
    static const char *const strings[] = {"phase",          "selector", "ready", "primary", "switchoverFrom",
                                          "lastRedisCommandTime"};
    static const char *const ints[] = {"replicas", "readyReplicas"};
    if (!jsonx_typed(ostatus, json_type_object))
        return 0;
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        if (!jsonx_str_is(ostatus, strings[i], jsonx_str_set(computed, strings[i])))
            return 0;
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if (!jsonx_int_is(ostatus, ints[i], jsonx_int_or(computed, ints[i], 0)))
            return 0;
    if (c->generation >= 0 && !jsonx_int_is(ostatus, "observedGeneration", c->generation))
        return 0;
    if (!jsonx_str_is(jsonx_get(ostatus, "backup"), "lastScheduleTime",
                      JSONX_STR_AT(computed, "backup", "lastScheduleTime")) ||
        !restore_current(computed, ostatus))
        return 0;
    return nodes_current(computed, ostatus) && cluster_current(computed, ostatus) &&
           conditions_current(c, computed, ostatus);
}

/* > 0: how long the write of st waits. CRITICAL PATH (plan.h): while the budget is
 * short, a new cluster's first status waits for the reconcile after the one that creates
 * its StatefulSet, unless it tells a problem (a cluster not Running is requeued anyway,
 * and the StatefulSet's watch event comes sooner): -1, for good. STATUS WRITE POLICY:
 * progress alone waits for its window (status_policy.h); an election's record is never
 * held. */
static int64_t status_hold_ns(const plan_ctx_t *c, const plan_findings_t *f, const json_object *st,
                              const json_object *ostatus)
{
    int elect = f->topo && f->topo->elect;
    /* BACKUP: a run's record is never held (the next plan would find it due again); nor a
     * restore's source (the StatefulSet waits for it) */
    if (!jsonx_str_is(jsonx_get(ostatus, "backup"), "lastScheduleTime",
                      JSONX_STR_AT(st, "backup", "lastScheduleTime")) ||
        !restore_current(st, ostatus))
        return 0;
    if (f->kids && f->kids->sts_created && plan_critical_path_first(c) && !jsonx_str_set(ostatus, "phase") &&
        !c->degraded->reason && !elect)
        return -1;
    return elect ? 0 : status_policy_hold_ns(st, ostatus, c->now);
}

/* The server-side apply body of st; NULL when out of memory. FAILOVER: the record of an
 * election or a switchover is a compare-and-swap on the object as the decision saw it: a
 * decision from a stale copy fails with 409 and is taken again. */
static json_object *status_body(const plan_ctx_t *c, int cas, const json_object *st, int *oom)
{
    json_object *body = jsonx_new_obj(oom), *meta = jsonx_new_obj(oom), *copy = NULL;
    jsonx_put(body, "apiVersion", jsonx_new_str(RENDER_GROUP_VERSION, oom), oom);
    jsonx_put(body, "kind", jsonx_new_str(RENDER_KIND, oom), oom);
    jsonx_put(meta, "name", jsonx_new_str(c->name, oom), oom);
    jsonx_put(meta, "namespace", jsonx_new_str(c->ns, oom), oom);
    const char *rv = JSONX_STR_AT(c->rc, "metadata", "resourceVersion");
    if (cas && rv && *rv)
        jsonx_put(meta, "resourceVersion", jsonx_new_str(rv, oom), oom);
    jsonx_put(body, "metadata", meta, oom);
    if (json_object_deep_copy((json_object *)st, &copy, NULL))
        *oom = 1;
    jsonx_put(body, "status", copy, oom);
    return jsonx_done(body, *oom);
}

/* COMMAND RECORD (plan.h): the status write that goes before the labels and Redis
 * commands of a plan that sends some (at: where they begin), as the one computed (st)
 * but for status.lastRedisCommandTime, the end of the commands' window (until: none is
 * sent after it), and with the resourceVersion precondition: the commands go only from
 * a plan decided on the object as it is, and the next plans wait for Redis to be probed
 * after them even when this plan stops before its last status write (which records the
 * time it is sent). Returns 0, or -1 when out of memory. */
static int command_record_first(const plan_ctx_t *c, const json_object *st, size_t at, int64_t until)
{
    plan_t *p = c->plan;
    int *oom = plan_oom(p);
    char t[40];
    clock_format_rfc3339(until, 3, t, sizeof(t));
    json_object *first = NULL;
    if (json_object_deep_copy((json_object *)st, &first, NULL))
        *oom = 1;
    jsonx_put(first, "lastRedisCommandTime", jsonx_new_str(t, oom), oom);
    json_object *body = first ? status_body(c, 1, first, oom) : NULL;
    json_object_put(first);
    char why[300];
    snprintf(why, sizeof(why), "Redis commands to send: record it first (status.lastRedisCommandTime %s, their last "
             "moment)", t);
    int i = body ? plan_add_action(p, PLAN_UPDATE_STATUS, RENDER_GROUP_VERSION, "redisclusters", c->ns, c->name,
                                   body, why)
                 : -1;
    if (i < 0)
        return -1;
    plan_move_action(p, (size_t)i, at);
    return 0;
}

/* The events that go with the status write i: an election's, a switchover's, and the
 * Warning of a True Degraded condition whose status, reason or message changed. */
static void status_events(const plan_ctx_t *c, const plan_findings_t *f, const json_object *st,
                          const json_object *ostatus, int i)
{
    plan_t *p = c->plan;
    if (f->topo && f->topo->elect)
        plan_add_event(p, "Warning", "FailedOver", i, "%s", f->topo->elect_why);
    if (f->topo && f->topo->switch_record)
        plan_add_event(p, "Normal", "SwitchingOver", i, "%s", f->topo->switch_why);
    /* CLUSTER: a shard's master moved (Redis Cluster's failover, or a handover) */
    const json_object *ws = JSONX_AT(st, "cluster", "shards"), *hs = JSONX_AT(ostatus, "cluster", "shards");
    for (size_t k = 0; k < jsonx_len(ws) && k < jsonx_len(hs); k++) {
        const char *now = jsonx_str_set(json_object_array_get_idx(ws, k), "primary");
        const char *was = jsonx_str_set(json_object_array_get_idx(hs, k), "primary");
        if (now && was && strcmp(now, was))
            plan_add_event(p, "Normal", "PrimaryChanged", i, "shard %zu: %s is its master now (was %s)", k, now, was);
    }
    /* TLS: a certificate about to expire (a False TLSReady is a Degraded finding) */
    const json_object *tls = plan_observed_cond(st, "TLSReady"), *was = plan_observed_cond(ostatus, "TLSReady");
    if (jsonx_str_is(tls, "reason", "TLSCertificateExpiring") && !jsonx_str_is(was, "reason", "TLSCertificateExpiring"))
        plan_add_event(p, "Warning", "TLSCertificateExpiring", i, "%s",
                       jsonx_str_set(tls, "message") ? jsonx_str_set(tls, "message") : "");
    const json_object *deg = plan_observed_cond(st, "Degraded"), *old = plan_observed_cond(ostatus, "Degraded");
    const char *reason = jsonx_str_set(deg, "reason"), *message = jsonx_str_set(deg, "message");
    if (reason && jsonx_str_is(deg, "status", "True") &&
        (!jsonx_str_is(old, "status", "True") || !jsonx_str_is(old, "reason", reason) ||
         !jsonx_str_is(old, "message", message)))
        plan_add_event(p, "Warning", reason, i, "%s", message ? message : "");
}

int plan_status_write(const plan_ctx_t *c, json_object *st, const char *why, const plan_findings_t *f)
{
    plan_t *p = c->plan;
    const json_object *ostatus = jsonx_get(c->rc, "status");
    plan_take_status(p, st);
    if (status_current(c, st, ostatus))
        return 0;
    size_t at = 0;
    int64_t until = 0;
    int commanding = plan_command_window(p, &at, &until);
    int64_t hold = commanding ? 0 : status_hold_ns(c, f, st, ostatus);
    if (hold > 0)
        plan_hold_status(p, hold);
    if (hold)
        return 0;
    int cas = (f->topo && (f->topo->elect || f->topo->switch_record)) || (commanding && !until);
    json_object *body = status_body(c, cas, st, plan_oom(p));
    if (!body)
        return -1;
    int i = plan_add_action(p, PLAN_UPDATE_STATUS, RENDER_GROUP_VERSION, "redisclusters", c->ns, c->name, body, why);
    status_events(c, f, st, ostatus, i);
    if (commanding && until && command_record_first(c, st, at, until))
        return -1;
    return *plan_oom(p) ? -1 : 0;
}

/* ---- The status computed -------------------------------------------------------------- */

/* status.nodes from the topology (REPLICATION); NULL when out of memory. */
static json_object *nodes_json(const topo_t *t, int *oom)
{
    json_object *arr = jsonx_new_arr(oom);
    for (size_t i = 0; i < t->n_nodes; i++) {
        const topo_node_t *n = &t->nodes[i];
        json_object *j = jsonx_new_obj(oom);
        jsonx_put(j, "pod", jsonx_new_str(n->pod, oom), oom);
        if (n->ip[0])
            jsonx_put(j, "ip", jsonx_new_str(n->ip, oom), oom);
        jsonx_put(j, "role", jsonx_new_str(n->role, oom), oom);
        jsonx_put(j, "linkUp", json_object_new_boolean(n->link_up), oom);
        if (n->offset >= 0)
            jsonx_put(j, "offset", jsonx_new_int(n->offset, oom), oom);
        if (n->lag_bytes >= 0)
            jsonx_put(j, "lagBytes", jsonx_new_int(n->lag_bytes, oom), oom);
        jsonx_push(arr, j, oom);
    }
    return arr;
}

/* REPLICATION: the ReplicationHealthy condition into *repl and status.nodes, as the
 * topology says; without an observation, what the status says of Redis stays (the
 * observed condition and nodes). A new array, or NULL with *oom set. */
static json_object *replication_status(const plan_ctx_t *c, const topo_t *t, plan_cond_t *repl, int *oom)
{
    const json_object *ostatus = jsonx_get(c->rc, "status");
    const json_object *was = plan_observed_cond(ostatus, "ReplicationHealthy");
    json_object *nodes = NULL;
    if (t->observed || !jsonx_str_set(was, "status") || !jsonx_str_set(was, "reason")) {
        plan_cond_set(repl, "ReplicationHealthy", t->healthy, t->reason, "%s", t->message);
        return nodes_json(t, oom);
    }
    const char *msg = jsonx_str_set(was, "message");
    plan_cond_set(repl, "ReplicationHealthy", jsonx_str_is(was, "status", "True"), jsonx_str_set(was, "reason"), "%s",
                  msg ? msg : "");
    const json_object *kept = jsonx_typed(jsonx_get(ostatus, "nodes"), json_type_array);
    if (!kept)
        return nodes_json(t, oom);
    if (json_object_deep_copy((json_object *)kept, &nodes, NULL))
        *oom = 1;
    return nodes;
}

/* CLUSTER: the slots moved since the resharding under way (or the last) began: what the
 * status said, plus what the slots to move went down by; 0 again when a new one begins. */
static int slots_moved(const json_object *was, int to_move)
{
    int64_t before = jsonx_int_or(was, "slotsToMove", 0), moved = jsonx_int_or(was, "slotsMoved", 0);
    if (before <= 0)
        return 0;
    return (int)(moved + (before > to_move ? before - to_move : 0));
}

/* CLUSTER: status.cluster from the decisions and what the status said (was) (a new
 * object, NULL with *oom set). */
static json_object *cluster_json(const plan_cluster_t *x, const json_object *was, int *oom)
{
    const ctopo_result_t *r = x->r;
    const ctopo_input_t *in = x->in;
    json_object *o = jsonx_new_obj(oom), *shards = jsonx_new_arr(oom);
    int any = 0;
    for (int i = 0; i < r->nshards * (in->width ? in->width : 1 + in->replicas); i++)
        any |= in->pod[i].observed;
    jsonx_put(o, "state", jsonx_new_str(!any ? "unknown" : r->state_ok ? "ok" : "fail", oom), oom);
    jsonx_put(o, "slotsAssigned", jsonx_new_int(r->slots_assigned, oom), oom);
    jsonx_put(o, "bootstrapped", json_object_new_boolean(r->bootstrapped), oom);
    jsonx_put(o, "slotsToMove", jsonx_new_int(r->slots_to_move, oom), oom);
    int moved = slots_moved(was, r->slots_to_move);
    if (moved || jsonx_get(was, "slotsMoved"))
        jsonx_put(o, "slotsMoved", jsonx_new_int(moved ? moved : jsonx_int_or(was, "slotsMoved", 0), oom), oom);
    for (int k = 0; k < r->nshards; k++) {
        const ctopo_shard_t *sh = &r->shard[k];
        json_object *j = jsonx_new_obj(oom), *reps = jsonx_new_arr(oom);
        jsonx_put(j, "index", jsonx_new_int(k, oom), oom);
        if (k >= in->shards)
            jsonx_put(j, "leaving", json_object_new_boolean(1), oom);
        jsonx_put(j, "primary", jsonx_new_str(sh->master >= 0 ? in->pod[sh->master].pod : "", oom), oom);
        jsonx_put(j, "slots", jsonx_new_str(sh->slots, oom), oom);
        for (int m = 0; m <= CTOPO_MAX_REPLICAS && sh->replica[m] >= 0; m++) {
            const ctopo_pod_t *p = &in->pod[sh->replica[m]];
            json_object *rep = jsonx_new_obj(oom);
            jsonx_put(rep, "pod", jsonx_new_str(p->pod, oom), oom);
            jsonx_put(rep, "linkUp", json_object_new_boolean(p->link_up), oom);
            if (p->offset >= 0)
                jsonx_put(rep, "offset", jsonx_new_int(p->offset, oom), oom);
            jsonx_push(reps, rep, oom);
        }
        jsonx_put(j, "replicas", reps, oom);
        jsonx_push(shards, j, oom);
    }
    jsonx_put(o, "shards", shards, oom);
    return o;
}

/* CLUSTER: the ClusterHealthy condition into *k and status.cluster into st, from the
 * decisions; without any (a shard's StatefulSet missing), what the status says stays
 * (or NotObserved). */
static void cluster_status(const plan_ctx_t *c, const plan_cluster_t *x, json_object *st, plan_cond_t *k, int *oom)
{
    const json_object *ostatus = jsonx_get(c->rc, "status");
    const json_object *was = plan_observed_cond(ostatus, "ClusterHealthy"), *kept = jsonx_get(ostatus, "cluster");
    if (x->r) {
        plan_cond_set(k, "ClusterHealthy", x->r->healthy, x->r->reason, "%s", x->r->message);
        jsonx_put(st, "cluster", cluster_json(x, kept, oom), oom);
        return;
    }
    if (jsonx_str_set(was, "status") && jsonx_str_set(was, "reason")) {
        const char *msg = jsonx_str_set(was, "message");
        plan_cond_set(k, "ClusterHealthy", jsonx_str_is(was, "status", "True"), jsonx_str_set(was, "reason"), "%s",
                      msg ? msg : "");
    } else {
        plan_cond_set(k, "ClusterHealthy", 0, "NotObserved", "the shards' StatefulSets are not all there yet");
    }
    json_object *copy = NULL;
    if (jsonx_typed(kept, json_type_object)) {
        if (json_object_deep_copy((json_object *)kept, &copy, NULL))
            *oom = 1;
        jsonx_put(st, "cluster", copy, oom);
    }
}

/* RESTORE FROM A REDISBACKUP: status.restore.source into st, the one plan_restore decided,
 * or (it did not run: an invalid spec) the observed one, kept: the status is applied whole,
 * and a record dropped would have to be resolved again. */
static void restore_status(const plan_findings_t *f, const json_object *ostatus, json_object *st, int *oom)
{
    const json_object *src = f->restore ? f->restore->source : JSONX_AT(ostatus, "restore", "source");
    json_object *copy = NULL, *r = NULL;
    if (!src)
        return;
    if (json_object_deep_copy((json_object *)src, &copy, NULL))
        *oom = 1;
    r = jsonx_new_obj(oom);
    jsonx_put(r, "source", copy, oom);
    jsonx_put(st, "restore", r, oom);
}

/* The counts, the selector for /scale and the generation of the status st. */
static void status_counts(const plan_ctx_t *c, json_object *st, const plan_sts_view_t *v, int *oom)
{
    buf_t sel;
    buf_init(&sel, 1024);
    render_selector_string(c->name, &sel);
    jsonx_put(st, "replicas", jsonx_new_int(v->replicas, oom), oom);
    jsonx_put(st, "readyReplicas", jsonx_new_int(v->ready, oom), oom);
    char ready[48];
    if (c->spec->size > 0)
        snprintf(ready, sizeof(ready), "%lld/%d", (long long)v->ready, c->spec->size);
    else /* an invalid spec: no size to count against */
        snprintf(ready, sizeof(ready), "%lld", (long long)v->ready);
    jsonx_put(st, "ready", jsonx_new_str(ready, oom), oom);
    if (c->generation >= 0)
        jsonx_put(st, "observedGeneration", jsonx_new_int(c->generation, oom), oom);
    jsonx_put(st, "selector", jsonx_new_str(buf_str(&sel), oom), oom);
    buf_free(&sel);
}

int plan_status_compute(const plan_ctx_t *c, const json_object *sts, const plan_findings_t *f)
{
    int *oom = plan_oom(c->plan);
    plan_sts_view_t v = f->cluster ? f->cluster->view : plan_view_statefulset(sts);
    plan_cond_t conds[COND_COUNT + 2]; /* and ReplicationHealthy or ClusterHealthy, TLSReady */
    memset(conds, 0, sizeof(conds));
    const char *phase = decide(c, f, &v, conds);
    const json_object *ostatus = jsonx_get(c->rc, "status");
    json_object *st = jsonx_new_obj(oom), *list = jsonx_new_arr(oom);
    jsonx_put(st, "phase", jsonx_new_str(phase, oom), oom);
    status_counts(c, st, &v, oom);
    if (f->topo) {
        jsonx_put(st, "primary", jsonx_new_str(f->topo->primary, oom), oom);
        if (f->topo->switchover_from[0])
            jsonx_put(st, "switchoverFrom", jsonx_new_str(f->topo->switchover_from, oom), oom);
        const char *cmd = plan_command_window(c->plan, NULL, NULL)
                              ? PLAN_NOW_TOKEN
                              : JSONX_STR_AT(c->rc, "status", "lastRedisCommandTime");
        if (cmd)
            jsonx_put(st, "lastRedisCommandTime", jsonx_new_str(cmd, oom), oom);
        jsonx_put(st, "nodes", replication_status(c, f->topo, &conds[COND_COUNT], oom), oom);
    }
    if (f->cluster)
        cluster_status(c, f->cluster, st, &conds[COND_COUNT], oom);
    if (f->last_schedule && *f->last_schedule) {
        json_object *b = jsonx_new_obj(oom);
        jsonx_put(b, "lastScheduleTime", jsonx_new_str(f->last_schedule, oom), oom);
        jsonx_put(st, "backup", b, oom);
    }
    restore_status(f, ostatus, st, oom);
    int extra = f->topo != NULL || f->cluster != NULL;
    if (f->tls && f->tls->has)
        conds[COND_COUNT + extra++] = f->tls->cond;
    /* Only the operator's own conditions: the status is server-side applied, and the
     * conditions list is a map keyed by type, so a condition someone else applies
     * (informerd's ReconcileCrashed, say) is theirs and stays as they wrote it. */
    for (size_t i = 0; i < COND_COUNT + (size_t)extra; i++)
        jsonx_push(list, plan_cond_json(c, &conds[i], ostatus, oom), oom);
    jsonx_put(st, "conditions", list, oom);
    if (*oom) {
        json_object_put(st);
        return -1;
    }
    buf_t why;
    buf_init(&why, 2 * PLAN_MESSAGE_CAP);
    buf_printf(&why, "status of RedisCluster %s/%s changed: phase %s, %lld/%d ready", c->ns, c->name, phase,
               (long long)v.ready, c->spec->size);
    if (f->topo)
        buf_printf(&why, ", primary %s, ReplicationHealthy %s", f->topo->primary, conds[COND_COUNT].reason);
    if (f->cluster)
        buf_printf(&why, ", ClusterHealthy %s", conds[COND_COUNT].reason);
    if (f->tls && f->tls->has)
        buf_printf(&why, ", TLSReady %s", f->tls->cond.reason);
    int rc = plan_status_write(c, st, buf_str(&why), f);
    buf_free(&why);
    return rc;
}
