#include "status_policy.h"

#include "clock.h"
#include "jsonx.h"

#include <string.h>

/* Status fields that are progress (status_policy.h); every other field says something. */
static int progress_field(const char *key)
{
    static const char *const keys[] = {"replicas", "readyReplicas", "ready", "nodes"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!strcmp(key, keys[i]))
            return 1;
    return 0;
}

/* 1 when a and b are both absent or equal JSON. */
static int same_value(const json_object *a, const json_object *b)
{
    if (!a || !b)
        return !a && !b;
    return json_object_equal((json_object *)a, (json_object *)b);
}

/* The condition of this type in the status' conditions list, or NULL. */
static const json_object *cond_of(const json_object *status, const char *type)
{
    return jsonx_find(jsonx_get(status, "conditions"), "type", type);
}

/* 1 when the two conditions say the same, the message aside when its type carries a
 * count (Ready, Progressing). */
static int cond_says_same(const json_object *want, const json_object *have)
{
    static const char *const keys[] = {"status", "reason", "lastTransitionTime", "observedGeneration"};
    if (!have)
        return 0;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!same_value(jsonx_get(want, keys[i]), jsonx_get(have, keys[i])))
            return 0;
    const char *type = jsonx_str(want, "type");
    if (type && (!strcmp(type, "Ready") || !strcmp(type, "Progressing")))
        return 1;
    return same_value(jsonx_get(want, "message"), jsonx_get(have, "message"));
}

/* 1 when every condition of one list has its like in the other, saying the same. */
static int conds_say_same(const json_object *computed, const json_object *observed)
{
    const json_object *want = jsonx_get(computed, "conditions"), *have = jsonx_get(observed, "conditions");
    size_t nw = want && json_object_is_type(want, json_type_array) ? json_object_array_length(want) : 0;
    for (size_t i = 0; i < nw; i++) {
        const json_object *k = json_object_array_get_idx(want, i);
        if (!cond_says_same(k, cond_of(observed, jsonx_str(k, "type"))))
            return 0;
    }
    /* A condition of ours that would go is news too; others' conditions (informerd's
     * ReconcileCrashed) are not ours to compare: only types the computed list knows. */
    size_t nh = have && json_object_is_type(have, json_type_array) ? json_object_array_length(have) : 0;
    for (size_t i = 0; i < nh; i++) {
        const char *t = jsonx_str(json_object_array_get_idx(have, i), "type");
        if (t && (!strcmp(t, "Ready") || !strcmp(t, "Progressing") || !strcmp(t, "Degraded")) &&
            !cond_of(computed, t))
            return 0;
    }
    return 1;
}

int status_policy_progress_only(const json_object *computed, const json_object *observed)
{
    if (!computed || !observed || !json_object_is_type(computed, json_type_object) ||
        !json_object_is_type(observed, json_type_object))
        return 0;
    json_object_object_foreach((json_object *)computed, key, val) {
        if (progress_field(key) || !strcmp(key, "conditions"))
            continue;
        if (!same_value(val, jsonx_get(observed, key)))
            return 0;
    }
    return conds_say_same(computed, observed);
}

/* 1 when the status is one of a converging cluster: Pending or Scaling, Progressing True. */
static int converging(const json_object *status)
{
    const char *phase = jsonx_str(status, "phase");
    const char *prog = jsonx_str(cond_of(status, "Progressing"), "status");
    return phase && (!strcmp(phase, "Pending") || !strcmp(phase, "Scaling")) && prog && !strcmp(prog, "True");
}

/* 1 when the status is one of a new cluster's first rollout: Pending, Progressing True
 * with reason Creating (plan_status.c, CREATING). */
static int creating(const json_object *status)
{
    const char *phase = jsonx_str(status, "phase");
    const char *reason = jsonx_str(cond_of(status, "Progressing"), "reason");
    return converging(status) && !strcmp(phase, "Pending") && reason && !strcmp(reason, "Creating");
}

/* How long ago (by now) the observed Ready condition's count was written; -1 when that
 * time is missing or unreadable. A time ahead of now (a clock step) counts as now. */
static int64_t count_age_ns(const json_object *observed, int64_t now_wall_ns)
{
    const char *t = jsonx_str(cond_of(observed, "Ready"), "lastUpdateTime");
    int64_t at = 0;
    if (!t || clock_parse_rfc3339(t, &at))
        return -1;
    return at > now_wall_ns ? 0 : now_wall_ns - at;
}

int64_t status_policy_hold_ns(const json_object *computed, const json_object *observed, int64_t now_wall_ns)
{
    if (!converging(computed) || !converging(observed) || !status_policy_progress_only(computed, observed))
        return 0;
    int64_t age = count_age_ns(observed, now_wall_ns);
    if (age < 0)
        return 0;
    int64_t window = creating(computed) && creating(observed) ? STATUS_POLICY_CREATING_NS : STATUS_POLICY_COALESCE_NS;
    return age >= window ? 0 : window - age;
}

int status_policy_counts_told(const json_object *observed, int64_t sts_replicas, int64_t sts_ready)
{
    return jsonx_int_or(observed, "replicas", 0) == sts_replicas &&
           jsonx_int_or(observed, "readyReplicas", 0) == sts_ready;
}

int status_policy_diagnosis_due(const json_object *observed, int64_t sts_replicas, int64_t sts_ready, int held,
                                int64_t now_wall_ns)
{
    if (status_policy_counts_told(observed, sts_replicas, sts_ready))
        return 1;
    return held && count_age_ns(observed, now_wall_ns) >= STATUS_POLICY_COALESCE_NS;
}
