/* crashcond: the ReconcileCrashed condition (see crashcond.h). */
#include "crashcond.h"

#include "clock.h"
#include "jsonx.h"
#include "rdc_api.h"

#include <stdlib.h>
#include <string.h>

/* The ReconcileCrashed entry of rc's status.conditions, or NULL. */
static const json_object *find_condition(const json_object *rc)
{
    return jsonx_find(JSONX_AT(rc, "status", "conditions"), "type", CRASHCOND_TYPE);
}

int crashcond_is_true(const json_object *rc, int64_t *since_ns, int64_t *generation)
{
    const json_object *c = find_condition(rc);
    const char *status = NULL, *ltt = NULL;
    if (!c || jsonx_string(c, "status", &status) != JSONX_OK || strcmp(status, "True") != 0)
        return 0;
    if (since_ns) {
        *since_ns = 0;
        if (jsonx_string(c, "lastTransitionTime", &ltt) == JSONX_OK && clock_parse_rfc3339(ltt, since_ns) != 0)
            *since_ns = 0;
    }
    if (generation)
        *generation = jsonx_int_or(c, "observedGeneration", -1);
    return 1;
}

int64_t crashcond_quarantine_left_ns(const json_object *rc, int64_t now_ns, int64_t window_ns)
{
    int64_t since = 0, gen = -1;
    if (!crashcond_is_true(rc, &since, &gen) || since <= 0 || gen < 0)
        return 0;
    if (gen != jsonx_int_or(jsonx_get(rc, "metadata"), "generation", -2))
        return 0; /* the spec changed since: the change may be the fix */
    if (since > now_ns)
        since = now_ns;
    int64_t elapsed = now_ns - since;
    return elapsed < window_ns ? window_ns - elapsed : 0;
}

char *crashcond_apply_body(const json_object *rc, int crashed, const char *message, int64_t now_ns)
{
    const json_object *md = jsonx_get(rc, "metadata");
    const char *name = NULL, *ns = NULL;
    if (jsonx_string(md, "name", &name) != JSONX_OK || jsonx_string(md, "namespace", &ns) != JSONX_OK)
        return NULL;
    char when[40];
    if (!clock_format_rfc3339(now_ns, 0, when, sizeof(when)))
        return NULL;
    int oom = 0;
    json_object *c = jsonx_new_obj(&oom);
    jsonx_put(c, "type", jsonx_new_str(CRASHCOND_TYPE, &oom), &oom);
    jsonx_put(c, "status", jsonx_new_str(crashed ? "True" : "False", &oom), &oom);
    jsonx_put(c, "reason", jsonx_new_str(crashed ? CRASHCOND_REASON_CRASHED : CRASHCOND_REASON_COMPLETED, &oom),
              &oom);
    jsonx_put(c, "message", jsonx_new_str(message, &oom), &oom);
    jsonx_put(c, "lastTransitionTime", jsonx_new_str(when, &oom), &oom);
    int64_t gen = jsonx_int_or(md, "generation", -1);
    if (gen >= 0)
        jsonx_put(c, "observedGeneration", jsonx_new_int(gen, &oom), &oom);
    json_object *conds = jsonx_new_arr(&oom), *status = jsonx_new_obj(&oom), *meta = jsonx_new_obj(&oom),
                *body = jsonx_new_obj(&oom);
    jsonx_push(conds, c, &oom);
    jsonx_put(status, "conditions", conds, &oom);
    jsonx_put(meta, "name", jsonx_new_str(name, &oom), &oom);
    jsonx_put(meta, "namespace", jsonx_new_str(ns, &oom), &oom);
    jsonx_put(body, "apiVersion", jsonx_new_str(RDC_GROUP_VERSION, &oom), &oom);
    jsonx_put(body, "kind", jsonx_new_str("RedisCluster", &oom), &oom);
    jsonx_put(body, "metadata", meta, &oom);
    jsonx_put(body, "status", status, &oom);
    char *out = NULL;
    if (!oom) {
        const char *s = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        out = s ? strdup(s) : NULL;
    }
    json_object_put(body);
    return out;
}
