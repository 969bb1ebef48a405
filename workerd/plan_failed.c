/* plan_failed: the plans that follow a refused write: the report of a failed write, and
 * taking a child back. See plan.h (A FAILED WRITE, TAKING A CHILD BACK). */
#include "plan.h"

#include "jsonx.h"
#include "plan_build.h"
#include "plan_compare.h"
#include "plan_internal.h"
#include "plan_observe.h"
#include "plan_status.h"
#include "render.h"

#include <string.h>

/* "ConfigMap" for "configmaps", and so on. */
static const char *kind_of_resource(const char *resource)
{
    static const char *const map[][2] = {{"configmaps", "ConfigMap"},
                                         {"services", "Service"},
                                         {"statefulsets", "StatefulSet"},
                                         {"poddisruptionbudgets", "PodDisruptionBudget"},
                                         {"networkpolicies", "NetworkPolicy"},
                                         {"pods", "Pod"},
                                         {"secrets", "Secret"},
                                         {"persistentvolumeclaims", "PersistentVolumeClaim"},
                                         {"redisclusters", RENDER_KIND}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(map[i][0], resource))
            return map[i][1];
    return resource;
}

/* ---- A failed write ------------------------------------------------------------------- */

/* The Degraded condition that reports a refused a: reason the API's when it can be a
 * condition's, else WriteFailed; the API's message verbatim (it is what a user searches
 * for), the object named, and whatever else was already degraded in status after it. */
static void failed_condition(plan_cond_t *k, const plan_action_t *a, const json_object *status, int http_status,
                             const char *api_reason, const char *api_message)
{
    const char *reason = plan_condition_reason_ok(api_reason) ? api_reason : "WriteFailed";
    const json_object *was = plan_observed_cond(status, "Degraded");
    const char *was_msg = jsonx_str_is(was, "status", "True") ? jsonx_str_set(was, "message") : NULL;
    memset(k, 0, sizeof(*k));
    plan_cond_set(k, "Degraded", 1, reason, "cannot %s %s %s/%s: %d %s: %s%s%s", plan_action_verb(a->kind),
                  kind_of_resource(a->resource), a->ns, a->name, http_status,
                  api_reason && *api_reason ? api_reason : "error",
                  api_message && *api_message ? api_message : "(no message)", was_msg ? "; " : "",
                  was_msg ? was_msg : "");
}

/* A copy of the computed status with deg (taken) in place of its Degraded condition, or
 * NULL: out of memory (*oom set) or no Degraded condition to replace. The computed
 * status may come from an older copy of the object than ostatus: a condition ostatus
 * already shows with the same status keeps the time shown there. */
static json_object *status_with(const json_object *computed, json_object *deg, const json_object *ostatus, int *oom)
{
    json_object *st = NULL;
    if (json_object_deep_copy((json_object *)computed, &st, NULL)) {
        *oom = 1;
        json_object_put(deg);
        return NULL;
    }
    json_object *list = (json_object *)jsonx_get(st, "conditions");
    for (size_t i = 0; i < jsonx_len(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const json_object *o = plan_observed_cond(ostatus, jsonx_str_set(e, "type"));
        const char *t = jsonx_str_set(o, "lastTransitionTime");
        if (t && jsonx_str_is(o, "status", jsonx_str_set(e, "status")))
            jsonx_put(e, "lastTransitionTime", jsonx_new_str(t, oom), oom);
    }
    for (size_t i = 0; deg && i < jsonx_len(list); i++) {
        if (jsonx_str_is(json_object_array_get_idx(list, i), "type", "Degraded")) {
            if (json_object_array_put_idx(list, i, deg))
                *oom = 1;
            deg = NULL;
        }
    }
    if (deg || *oom) { /* not placed: the status had no Degraded condition */
        json_object_put(deg);
        json_object_put(st);
        return NULL;
    }
    return st;
}

plan_t *plan_write_failed(const json_object *rediscluster, const plan_t *failed, size_t action, int http_status,
                          const char *api_reason, const char *api_message, int64_t now_wall_ns)
{
    plan_t *p = plan_new();
    if (!p)
        return NULL;
    const plan_action_t *a = plan_action(failed, action);
    const json_object *computed = plan_status(failed);
    const json_object *meta = jsonx_get(jsonx_typed(rediscluster, json_type_object), "metadata");
    /* A status write that failed cannot report itself; nothing planned, nothing to say. */
    if (!a || a->kind == PLAN_UPDATE_STATUS || a->kind == PLAN_CLEANUP || !computed ||
        !jsonx_str_set(meta, "name") || !jsonx_str_set(meta, "namespace"))
        return p;
    plan_ctx_t c;
    plan_degraded_t degraded;
    plan_ctx_init(&c, p, rediscluster, now_wall_ns, &degraded);
    int *oom = plan_oom(p);
    plan_cond_t k;
    failed_condition(&k, a, computed, http_status, api_reason, api_message);
    const json_object *ostatus = jsonx_get(rediscluster, "status");
    json_object *deg = plan_cond_json(&c, &k, ostatus, oom), *st = NULL;
    if (*oom)
        json_object_put(deg);
    else
        st = status_with(computed, deg, ostatus, oom);
    if (st) {
        buf_t why;
        buf_init(&why, 2 * PLAN_MESSAGE_CAP);
        buf_printf(&why, "status of RedisCluster %s/%s: a write failed: %s", c.ns, c.name, k.message);
        plan_findings_t none = {0};
        plan_status_write(&c, st, buf_str(&why), &none);
        buf_free(&why);
    }
    plan_degraded_free(&degraded);
    if (*oom)
        plan_destroy(&p);
    return p;
}

/* ---- Taking a child back ---------------------------------------------------------------- */

/* PLAN_REPLACE of a's child by a's body merged over the observed object, with the
 * DriftRepaired event. */
static void take_back_replace(plan_t *p, const plan_action_t *a, const json_object *observed, const char *kind,
                              int http_status, const char *reason, const char *msg)
{
    int *oom = plan_oom(p);
    buf_t why;
    buf_init(&why, 2 * PLAN_MESSAGE_CAP);
    json_object *body = plan_json_merge_over(a->body, observed, oom);
    json_object *meta = (json_object *)jsonx_typed(jsonx_get(body, "metadata"), json_type_object);
    if (meta)
        json_object_object_del(meta, "managedFields");
    if (jsonx_typed(body, json_type_object))
        json_object_object_del(body, "status");
    buf_printf(&why, "%s %s/%s: the apply was refused (%d %s); replace it with the desired state", kind, a->ns,
               a->name, http_status, reason);
    int i = plan_add_action(p, PLAN_REPLACE, a->group_version, a->resource, a->ns, a->name, body, buf_str(&why));
    plan_add_event(p, "Normal", "DriftRepaired", i,
                   "Took back %s %s/%s: another field manager's change made the apply fail (%d %s: %.*s); replaced "
                   "it with the operator's desired state",
                   kind, a->ns, a->name, http_status, reason, PLAN_API_QUOTED / 2, msg);
    buf_free(&why);
}

/* PLAN_DELETE of a's child (preconditions the observed uid and resourceVersion), then
 * PLAN_CREATE of a's body, with the Recreated event. */
static void take_back_recreate(plan_t *p, const plan_action_t *a, const json_object *observed, const char *kind,
                               int http_status, const char *reason, const char *msg)
{
    int *oom = plan_oom(p);
    const json_object *ometa = jsonx_get(observed, "metadata");
    const char *uid = jsonx_str_set(ometa, "uid"), *rv = jsonx_str_set(ometa, "resourceVersion");
    buf_t why;
    buf_init(&why, 2 * PLAN_MESSAGE_CAP);
    json_object *opts = plan_delete_options(uid, rv, oom), *desired = NULL;
    buf_printf(&why, "%s %s/%s: cannot be updated (%d %s); delete and create it", kind, a->ns, a->name, http_status,
               reason);
    plan_add_action(p, PLAN_DELETE, a->group_version, a->resource, a->ns, a->name, opts, buf_str(&why));
    if (!*oom && json_object_deep_copy(a->body, &desired, NULL))
        *oom = 1;
    int i = *oom ? -1
                 : plan_add_action(p, PLAN_CREATE, a->group_version, a->resource, a->ns, a->name, desired,
                                   buf_str(&why));
    plan_add_event(p, "Warning", "Recreated", i,
                   "Recreated %s %s/%s: it could not be updated to the operator's desired state (%d %s: %.*s)", kind,
                   a->ns, a->name, http_status, reason, PLAN_API_QUOTED / 2, msg);
    buf_free(&why);
}

plan_t *plan_take_back(const plan_t *failed, size_t action, const json_object *observed, int recreate,
                       int http_status, const char *api_reason, const char *api_message)
{
    plan_t *p = plan_new();
    if (!p)
        return NULL;
    const plan_action_t *a = plan_action(failed, action);
    observed = jsonx_typed(observed, json_type_object);
    if (!a || a->kind != PLAN_APPLY || !observed || !strcmp(a->resource, "redisclusters") ||
        (recreate && strcmp(a->resource, "services")))
        return p;
    const char *kind = kind_of_resource(a->resource);
    const char *reason = api_reason && *api_reason ? api_reason : "error";
    const char *msg = api_message && *api_message ? api_message : "(no message)";
    if (recreate)
        take_back_recreate(p, a, observed, kind, http_status, reason, msg);
    else
        take_back_replace(p, a, observed, kind, http_status, reason, msg);
    if (*plan_oom(p))
        plan_destroy(&p);
    return p;
}
