#include "podview.h"

#include <stddef.h>

/* A new object with the members of src named in keep (shared, not copied), or NULL. */
static json_object *pick(json_object *src, const char *const *keep, size_t n, int *oom)
{
    json_object *out = json_object_new_object();
    if (!out) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *v = NULL;
        if (json_object_object_get_ex(src, keep[i], &v) &&
            json_object_object_add(out, keep[i], json_object_get(v))) {
            json_object_put(v);
            *oom = 1;
        }
    }
    return out;
}

/* Add to dst, under name, the members of src's object `under` named in keep (one level
 * down: {"waiting": {...}} for name "state", under "waiting"); nothing when src has no
 * such object. */
static void pick_under(json_object *dst, json_object *src, const char *name, const char *under,
                       const char *const *keep, size_t n, int *oom)
{
    json_object *from = NULL, *inner = NULL;
    if (!json_object_object_get_ex(src, name, &from) || !json_object_is_type(from, json_type_object) ||
        !json_object_object_get_ex(from, under, &inner) || !json_object_is_type(inner, json_type_object))
        return;
    json_object *small = pick(inner, keep, n, oom), *wrap = NULL;
    if (!small)
        return;
    if (!(wrap = json_object_new_object()) || json_object_object_add(wrap, under, small)) {
        json_object_put(small); /* not taken by a failed add */
        json_object_put(wrap);
        *oom = 1;
        return;
    }
    if (json_object_object_add(dst, name, wrap)) {
        json_object_put(wrap);
        *oom = 1;
    }
}

/* A container status list reduced to [{name, restartCount, state.waiting {reason,
 * message}, lastState.terminated {exitCode, reason}}]: the restarts are what the runtime
 * config's record notes (workerd/runtimecfg.h); a container waiting, and how it last
 * ended, are what a diagnosis quotes (workerd/plan.h, DIAGNOSIS), from the cache instead
 * of a LIST of the pods. NULL when out of memory. */
static json_object *container_states(json_object *cs, int *oom)
{
    static const char *const keep[] = {"name", "restartCount"}, *const waiting[] = {"reason", "message"},
                             *const terminated[] = {"exitCode", "reason"};
    json_object *out = json_object_new_array();
    if (!out) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        json_object *small = c && json_object_is_type(c, json_type_object) ? pick(c, keep, 2, oom) : NULL;
        if (small) {
            pick_under(small, c, "state", "waiting", waiting, 2, oom);
            pick_under(small, c, "lastState", "terminated", terminated, 2, oom);
        }
        if (small && json_object_array_add(out, small)) {
            json_object_put(small);
            *oom = 1;
        }
    }
    return out;
}

int podview_compact(json_object *pod)
{
    static const char *const spec_keep[] = {"nodeName"};
    static const char *const status_keep[] = {"podIP", "podIPs", "phase", "conditions"};
    if (!pod || !json_object_is_type(pod, json_type_object))
        return -1;
    int oom = 0;
    json_object *spec = NULL, *status = NULL;
    if (json_object_object_get_ex(pod, "spec", &spec)) {
        json_object *small = json_object_is_type(spec, json_type_object) ? pick(spec, spec_keep, 1, &oom) : NULL;
        if (small)
            oom |= json_object_object_add(pod, "spec", small) != 0;
        else
            json_object_object_del(pod, "spec");
    }
    if (json_object_object_get_ex(pod, "status", &status)) {
        json_object *small = json_object_is_type(status, json_type_object) ? pick(status, status_keep, 4, &oom) : NULL;
        static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
        for (size_t l = 0; small && l < 2; l++) {
            json_object *cs = NULL, *r = NULL;
            if (json_object_object_get_ex(status, lists[l], &cs) && json_object_is_type(cs, json_type_array) &&
                (r = container_states(cs, &oom)) && json_object_object_add(small, lists[l], r)) {
                json_object_put(r);
                oom = 1;
            }
        }
        if (small)
            oom |= json_object_object_add(pod, "status", small) != 0;
        else
            json_object_object_del(pod, "status");
    }
    return oom ? -1 : 0;
}
