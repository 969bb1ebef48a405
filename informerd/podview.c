#include "podview.h"

#include "projection.h"

int podview_compact(json_object *pod)
{
    if (!pod || !json_object_is_type(pod, json_type_object))
        return -1;
    int oom = 0;
    json_object *small = projection_reduce(projection_of("Pod"), pod, PROJ_KEPT, &oom);
    if (oom)
        return -1;
    /* small holds its own references to what it keeps: empty pod, then fill it again. */
    while (json_object_object_length(pod) > 0) {
        struct json_object_iterator first = json_object_iter_begin(pod);
        json_object_object_del(pod, json_object_iter_peek_name(&first));
    }
    if (small) {
        json_object_object_foreach(small, k, v)
        {
            if (json_object_object_add(pod, k, json_object_get(v))) {
                json_object_put(v);
                oom = 1;
            }
        }
    }
    json_object_put(small);
    return oom ? -1 : 0;
}
