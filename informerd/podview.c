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

/* status.containerStatuses reduced to [{name, restartCount}] (a container restart is
 * what the runtime config's record notes: workerd/runtimecfg.h), or NULL. */
static json_object *container_restarts(json_object *cs, int *oom)
{
    static const char *const keep[] = {"name", "restartCount"};
    json_object *out = json_object_new_array();
    if (!out) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        json_object *small = c && json_object_is_type(c, json_type_object) ? pick(c, keep, 2, oom) : NULL;
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
        json_object *cs = NULL;
        if (small && json_object_object_get_ex(status, "containerStatuses", &cs) &&
            json_object_is_type(cs, json_type_array)) {
            json_object *r = container_restarts(cs, &oom);
            if (r && json_object_object_add(small, "containerStatuses", r)) {
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
