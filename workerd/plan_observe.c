/* plan_observe: readers of the observed objects. See plan_observe.h. */
#include "plan_observe.h"

#include "clock.h"
#include "jsonx.h"

#include <string.h>

plan_sts_view_t plan_view_statefulset(const json_object *sts)
{
    plan_sts_view_t v = {0};
    if (!sts)
        return v;
    const json_object *spec = jsonx_get(sts, "spec"), *st = jsonx_get(sts, "status");
    const json_object *meta = jsonx_get(sts, "metadata");
    v.present = 1;
    v.spec_replicas = jsonx_int_or(spec, "replicas", 1);
    v.replicas = jsonx_int_or(st, "replicas", 0);
    v.ready = jsonx_int_or(st, "readyReplicas", 0);
    v.updated = jsonx_int_or(st, "updatedReplicas", 0);
    int64_t gen = jsonx_int_or(meta, "generation", 0), seen = jsonx_int_or(st, "observedGeneration", 0);
    const char *cur = jsonx_str_set(st, "currentRevision"), *upd = jsonx_str_set(st, "updateRevision");
    v.rolling = seen < gen || v.updated != v.spec_replicas || v.replicas != v.spec_replicas ||
                (cur && upd && strcmp(cur, upd));
    return v;
}

const json_object *plan_observed_cond(const json_object *status, const char *type)
{
    return jsonx_find(jsonx_get(status, "conditions"), "type", type);
}

int64_t plan_age_ns(const char *t, int64_t now)
{
    int64_t at = 0;
    if (!t || !*t || clock_parse_rfc3339(t, &at))
        return -1;
    return now > at ? now - at : 0;
}

int plan_condition_reason_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n > 1024 || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char ch = s[i];
        int alnum = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
        if (!alnum && !((ch == ',' || ch == ':') && i + 1 < n))
            return 0;
    }
    return 1;
}
