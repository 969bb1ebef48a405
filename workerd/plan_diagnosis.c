/* plan_diagnosis: why a cluster's pods are not ready. See plan_diagnosis.h and plan.h
 * (DIAGNOSIS). */
#include "plan_diagnosis.h"

#include "jsonx.h"
#include "plan_build.h"
#include "plan_observe.h"
#include "projection.h"
#include "render.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PLAN_MAX_ORDINALS 1024 /* plan_diagnosis_reads walks no further (spec.size is far less) */
/* A pod's own causes count after this; its PodScheduled condition is read for nothing
 * else, which informerd's queue relies on (projection.h PROJ_LATE). */
#define DIAG_POD_GRACE_NS PROJ_LATE_AFTER_NS
#define DIAG_CREATE_GRACE_NS (INT64_C(10) * 1000000000) /* a pod not made this long after it could be */

void plan_diag_init(plan_diag_t *d)
{
    d->reason = NULL;
    buf_init(&d->message, PLAN_MESSAGE_CAP / 2);
}

void plan_diag_free(plan_diag_t *d)
{
    buf_free(&d->message);
}

/* ---- Reading pods and Events ---------------------------------------------------------- */

/* When an Event last happened: lastTimestamp, else eventTime, else creationTimestamp
 * (RFC 3339 strings compare in time order). "" when none. */
static const char *event_time(const json_object *e)
{
    const char *t = jsonx_str_set(e, "lastTimestamp");
    if (!t)
        t = jsonx_str_set(e, "eventTime");
    if (!t)
        t = jsonx_str_set(jsonx_get(e, "metadata"), "creationTimestamp");
    return t ? t : "";
}

/* The latest Event of the list (the later one in list order on a tie) that is a Warning
 * (reason NULL) or has reason a or b, or NULL. */
static const json_object *latest_event(const json_object *events, const char *a, const char *b)
{
    const json_object *best = NULL;
    for (size_t i = 0; i < jsonx_len(events); i++) {
        const json_object *e = json_object_array_get_idx(events, i);
        const char *type = jsonx_str_set(e, "type"), *reason = jsonx_str_set(e, "reason");
        if (!reason || (!a && (!type || strcmp(type, "Warning"))) || (a && strcmp(reason, a) && strcmp(reason, b)))
            continue;
        if (!best || strcmp(event_time(e), event_time(best)) >= 0)
            best = e;
    }
    return best;
}

/* When the pod's Ready condition last changed (its lastTransitionTime), or NULL. */
static const char *ready_since(const json_object *pod)
{
    return jsonx_str_set(plan_observed_cond(jsonx_get(pod, "status"), "Ready"), "lastTransitionTime");
}

/* 1 when the pod's Ready condition is True. */
static int pod_ready(const json_object *pod)
{
    return jsonx_str_is(plan_observed_cond(jsonx_get(pod, "status"), "Ready"), "status", "True");
}

/* The pod named name in pods, or NULL. */
static const json_object *pod_named(const json_object *pods, const char *name)
{
    for (size_t i = 0; name && i < jsonx_len(pods); i++) {
        const json_object *pod = json_object_array_get_idx(pods, i);
        const char *n = JSONX_STR_AT(pod, "metadata", "name");
        if (n && !strcmp(n, name))
            return pod;
    }
    return NULL;
}

/* How old the pod is by now (its creationTimestamp); -1 when unknown. */
static int64_t pod_age_ns(const json_object *pod, int64_t now)
{
    return plan_age_ns(JSONX_STR_AT(pod, "metadata", "creationTimestamp"), now);
}

const char *plan_pod_to_explain(const json_object *pods)
{
    for (size_t i = 0; i < jsonx_len(pods); i++) {
        const json_object *pod = json_object_array_get_idx(pods, i);
        const char *n = jsonx_str_set(jsonx_get(pod, "metadata"), "name");
        if (n && !pod_ready(pod))
            return n;
    }
    return NULL;
}

/* A container waiting for a reason that explains it: the reason, the container's name
 * and the waiting message (either may be NULL), and how it last ended (-1 / NULL when
 * unknown). A CrashLoopBackOff's own message names a back-off that doubles at every
 * restart, so the diagnosis says how the container ended instead: the status then stays
 * the same while the loop goes on. */
typedef struct {
    const char *reason, *container, *message, *exit_reason;
    int64_t exit_code;
} waiting_t;

/* The first container (init containers first) of the pod waiting for a reason that
 * explains it, into *w; 1 when there is one, else 0. */
static int container_waiting(const json_object *pod, waiting_t *w)
{
    static const char *const reasons[] = {"ErrImagePull",     "ImagePullBackOff",           "CrashLoopBackOff",
                                          "InvalidImageName", "CreateContainerConfigError", "RunContainerError",
                                          "CreateContainerError"};
    static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
    const json_object *st = jsonx_get(pod, "status");
    for (size_t l = 0; l < 2; l++) {
        const json_object *cs = jsonx_get(st, lists[l]);
        for (size_t i = 0; i < jsonx_len(cs); i++) {
            const json_object *e = json_object_array_get_idx(cs, i);
            const json_object *wt = JSONX_AT(e, "state", "waiting");
            const char *r = jsonx_str_set(wt, "reason");
            for (size_t k = 0; r && k < sizeof(reasons) / sizeof(reasons[0]); k++) {
                if (strcmp(r, reasons[k]))
                    continue;
                const json_object *t = JSONX_AT(e, "lastState", "terminated");
                *w = (waiting_t){reasons[k], jsonx_str_set(e, "name"), jsonx_str_set(wt, "message"),
                                 jsonx_str_set(t, "reason"), jsonx_int_or(t, "exitCode", -1)};
                return 1;
            }
        }
    }
    return 0;
}

/* The message of the pod's PodScheduled condition when it is False, or NULL. */
static const char *unschedulable(const json_object *pod)
{
    const json_object *conds = JSONX_AT(pod, "status", "conditions");
    for (size_t i = 0; i < jsonx_len(conds); i++) {
        const json_object *k = json_object_array_get_idx(conds, i);
        const char *t = jsonx_str_set(k, "type"), *st = jsonx_str_set(k, "status");
        if (t && !strcmp(t, "PodScheduled") && st && !strcmp(st, "False")) {
            const char *m = jsonx_str_set(k, "message");
            return m ? m : jsonx_str_set(k, "reason") ? jsonx_str_set(k, "reason") : "unschedulable";
        }
    }
    return NULL;
}

/* ---- What to read ----------------------------------------------------------------------- */

/* plan_diagnosis_reads's sts_events: walking the ordinals of the StatefulSet named sts
 * as its controller does (OrderedReady), a pod is missing (or being deleted) before any
 * is found not Ready, and the controller could have made a missing one
 * DIAG_CREATE_GRACE_NS ago. */
static int may_have_failed_create(const json_object *statefulset, const char *sts, const json_object *pods,
                                  int64_t now)
{
    plan_sts_view_t v = plan_view_statefulset(statefulset);
    /* Since when the controller could have created the next pod: the StatefulSet's
     * creation, then each Ready pod's turning Ready (unknown: long ago). */
    int64_t since = pod_age_ns(statefulset, now);
    for (int64_t i = 0; i < v.spec_replicas && i < PLAN_MAX_ORDINALS; i++) {
        char name[320];
        snprintf(name, sizeof(name), "%s-%lld", sts, (long long)i);
        const json_object *pod = pod_named(pods, name);
        if (!pod || JSONX_AT(pod, "metadata", "deletionTimestamp")) {
            /* a pod being deleted is waited for; a missing one the controller had
             * DIAG_CREATE_GRACE_NS to make and did not may have failed to */
            return pod || since < 0 || since >= DIAG_CREATE_GRACE_NS;
        }
        if (!pod_ready(pod))
            return 0;
        since = plan_age_ns(ready_since(pod), now);
    }
    return 0;
}

void plan_diagnosis_reads(const json_object *statefulset, const json_object *pods, int64_t now_wall_ns,
                          plan_diag_reads_t *out)
{
    const char *sts = JSONX_STR_AT(statefulset, "metadata", "name");
    pods = jsonx_typed(pods, json_type_array);
    out->sts_events = sts && *sts && may_have_failed_create(statefulset, sts, pods, now_wall_ns);
    out->pod = plan_pod_to_explain(pods);
    const json_object *pod = pod_named(pods, out->pod);
    waiting_t w;
    int64_t age = pod_age_ns(pod, now_wall_ns);
    if (pod && ((age >= 0 && age < DIAG_POD_GRACE_NS) || container_waiting(pod, &w) || unschedulable(pod)))
        out->pod = NULL;
}

/* ---- The causes, in order --------------------------------------------------------------- */

/* What the causes are looked for in. */
typedef struct {
    const plan_ctx_t *c;
    plan_sts_view_t v;
    const json_object *pods; /* c->more's, an array or NULL */
    const char *pod_name;    /* plan_pod_to_explain, or NULL */
    const json_object *pod;  /* that pod, or NULL */
    int pod_settled;         /* it is DIAG_POD_GRACE_NS old (or its age is unknown) */
} diag_in_t;

/* Record the cause found: reason, and a message quoting the API. Returns 1. */
static int diagnosed(plan_diag_t *out, const char *reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int diagnosed(plan_diag_t *out, const char *reason, const char *fmt, ...)
{
    out->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&out->message, fmt, ap);
    va_end(ap);
    return 1;
}

/* Fewer pods exist than the StatefulSet wants, and its latest FailedCreate is later than
 * any SuccessfulCreate (recorded for every pod it made: an older one is history). */
static int cause_failed_create(const diag_in_t *d, plan_diag_t *out)
{
    int64_t live = 0;
    for (size_t i = 0; i < jsonx_len(d->pods); i++)
        live += !JSONX_AT(json_object_array_get_idx(d->pods, i), "metadata", "deletionTimestamp");
    const json_object *e = latest_event(d->c->more->sts_events, "FailedCreate", "SuccessfulCreate");
    if (live >= d->v.spec_replicas || !e || strcmp(jsonx_str_set(e, "reason"), "FailedCreate"))
        return 0;
    const char *msg = jsonx_str_set(e, "message");
    return diagnosed(out, "FailedCreate", "StatefulSet %s/%s cannot create its pods: %.*s", d->c->ns, d->c->name,
                     PLAN_API_QUOTED, msg ? msg : "(no message)");
}

/* A container of the pod is waiting for a reason that explains it. */
static int cause_container(const diag_in_t *d, plan_diag_t *out)
{
    waiting_t w;
    const char *ns = d->c->ns;
    if (!d->pod || !container_waiting(d->pod, &w))
        return 0;
    if (!strcmp(w.reason, "CrashLoopBackOff"))
        return diagnosed(out, w.reason,
                         "pod %s/%s, container %s: CrashLoopBackOff: it keeps exiting (last exit code %lld%s%s%s)", ns,
                         d->pod_name, w.container ? w.container : "?", (long long)w.exit_code,
                         w.exit_reason ? ", " : "", w.exit_reason ? w.exit_reason : "",
                         w.exit_code < 0 ? "; unknown" : "");
    return diagnosed(out, w.reason, "pod %s/%s, container %s: %s%s%.*s", ns, d->pod_name,
                     w.container ? w.container : "?", w.reason, w.message ? ": " : "", PLAN_API_QUOTED,
                     w.message ? w.message : "");
}

/* RESTORE (render.h): the pod's restore init container ended with an exit code other
 * than 0, now or in its last run (it runs again after its back-off): RestoreFailed with
 * its termination message (rdc-backup's one line: FallbackToLogsOnError). Before the
 * waiting reasons: a CrashLoopBackOff of restore says less. */
static int cause_restore_failed(const diag_in_t *d, plan_diag_t *out)
{
    const json_object *cs = JSONX_AT(d->pod, "status", "initContainerStatuses");
    if (!d->pod || !d->c->spec->restore.endpoint)
        return 0;
    for (size_t i = 0; i < jsonx_len(cs); i++) {
        const json_object *e = json_object_array_get_idx(cs, i);
        if (!jsonx_str_is(e, "name", RENDER_RESTORE_CONTAINER))
            continue;
        /* the run that ended, else (running again, or waiting to) the last one that did */
        const json_object *t = JSONX_AT(e, "state", "terminated");
        if (!t)
            t = JSONX_AT(e, "lastState", "terminated");
        int64_t code = jsonx_int_or(t, "exitCode", 0);
        if (!t || !code)
            return 0;
        const char *msg = jsonx_str_set(t, "message");
        return diagnosed(out, "RestoreFailed",
                         "pod %s/%s: the restore from spec.restore.from failed (exit code %lld): %.*s", d->c->ns,
                         d->pod_name, (long long)code, PLAN_API_QUOTED,
                         msg ? msg : "(no message: see kubectl logs -c restore)");
    }
    return 0;
}

/* The pod, settled, cannot be scheduled. */
static int cause_unschedulable(const diag_in_t *d, plan_diag_t *out)
{
    const char *msg = d->pod && d->pod_settled ? unschedulable(d->pod) : NULL;
    if (!msg)
        return 0;
    return diagnosed(out, "FailedScheduling", "pod %s/%s cannot be scheduled: %.*s", d->c->ns, d->pod_name,
                     PLAN_API_QUOTED, msg);
}

/* The settled pod's latest Warning Event, when its reason can be a condition's. */
static int cause_pod_event(const diag_in_t *d, plan_diag_t *out)
{
    const json_object *e = d->pod && d->pod_settled ? latest_event(d->c->more->pod_events, NULL, NULL) : NULL;
    const char *reason = jsonx_str_set(e, "reason"), *msg = jsonx_str_set(e, "message");
    if (!e || !plan_condition_reason_ok(reason))
        return 0;
    return diagnosed(out, reason, "pod %s/%s: %s: %.*s", d->c->ns, d->pod_name, reason, PLAN_API_QUOTED,
                     msg ? msg : "(no message)");
}

/* DIAGNOSIS's causes, in plan.h's order: the first found is the one reported. */
static int (*const causes[])(const diag_in_t *, plan_diag_t *) = {
    cause_failed_create,
    cause_restore_failed,
    cause_container,
    cause_unschedulable,
    cause_pod_event,
};

void plan_diagnose(const plan_ctx_t *c, const json_object *sts, plan_diag_t *out)
{
    if (!c->more || !sts)
        return;
    diag_in_t d = {.c = c, .v = plan_view_statefulset(sts), .pods = jsonx_typed(c->more->pods, json_type_array)};
    if (d.v.ready >= c->spec->size)
        return;
    d.pod_name = plan_pod_to_explain(d.pods);
    d.pod = pod_named(d.pods, d.pod_name);
    /* Causes that pass on their own (the scheduler waits for a claim being provisioned,
     * a pod just made has no conditions yet) are not causes: a pod's own problems count
     * once it is DIAG_POD_GRACE_NS old. */
    int64_t age = pod_age_ns(d.pod, c->now);
    d.pod_settled = age < 0 || age >= DIAG_POD_GRACE_NS;
    for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
        if (causes[i](&d, out)) {
            plan_degrade(c, out->reason, "%s", buf_str(&out->message));
            return;
        }
}
