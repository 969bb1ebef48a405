#include "event.h"

#include "clock.h"
#include "jsonx.h"
#include "rdc_api.h"

#include <stdio.h>
#include <string.h>

void event_involve(event_spec_t *spec, const json_object *obj)
{
    spec->api_version = jsonx_str(obj, "apiVersion");
    spec->kind = jsonx_str(obj, "kind");
    spec->name = JSONX_STR_AT(obj, "metadata", "name");
    spec->ns = JSONX_STR_AT(obj, "metadata", "namespace");
    spec->uid = JSONX_STR_AT(obj, "metadata", "uid");
    spec->resource_version = JSONX_STR_AT(obj, "metadata", "resourceVersion");
}

event_spec_t event_about_cluster(const json_object *rc, const char *type, const char *reason,
                                 const char *message, const char *instance)
{
    event_spec_t spec = {0};
    event_involve(&spec, rc);
    spec.api_version = RDC_GROUP_VERSION;
    spec.kind = "RedisCluster";
    spec.type = type;
    spec.reason = reason;
    spec.message = message ? message : "";
    spec.action = "Reconcile";
    spec.instance = instance;
    return spec;
}

json_object *event_build(const event_spec_t *spec, int64_t now_wall_ns)
{
    if (!spec->name || !*spec->name || !spec->ns || !*spec->ns || !spec->type || !spec->reason)
        return NULL;
    int oom = 0;
    char now[40], micro[40], gen[320];
    clock_format_rfc3339(now_wall_ns, 0, now, sizeof(now));
    clock_format_rfc3339(now_wall_ns, 6, micro, sizeof(micro));
    snprintf(gen, sizeof(gen), "%.250s.", spec->name);
    const char *msg = spec->message ? spec->message : "";
    size_t mlen = strlen(msg);
    char cut[EVENT_MESSAGE_MAX + 1];
    if (mlen > EVENT_MESSAGE_MAX) {
        /* Cut on a UTF-8 character boundary. */
        size_t n = EVENT_MESSAGE_MAX;
        while (n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80)
            n--;
        memcpy(cut, msg, n);
        cut[n] = '\0';
        msg = cut;
    }
    json_object *ev = jsonx_new_obj(&oom);
    jsonx_put(ev, "apiVersion", jsonx_new_str("v1", &oom), &oom);
    jsonx_put(ev, "kind", jsonx_new_str("Event", &oom), &oom);
    json_object *md = jsonx_new_obj(&oom);
    jsonx_put(md, "generateName", jsonx_new_str(gen, &oom), &oom);
    jsonx_put(md, "namespace", jsonx_new_str(spec->ns, &oom), &oom);
    jsonx_put(ev, "metadata", md, &oom);
    json_object *inv = jsonx_new_obj(&oom);
    jsonx_put(inv, "apiVersion", jsonx_new_str(spec->api_version, &oom), &oom);
    jsonx_put(inv, "kind", jsonx_new_str(spec->kind, &oom), &oom);
    jsonx_put(inv, "name", jsonx_new_str(spec->name, &oom), &oom);
    jsonx_put(inv, "namespace", jsonx_new_str(spec->ns, &oom), &oom);
    if (spec->uid)
        jsonx_put(inv, "uid", jsonx_new_str(spec->uid, &oom), &oom);
    if (spec->resource_version)
        jsonx_put(inv, "resourceVersion", jsonx_new_str(spec->resource_version, &oom), &oom);
    jsonx_put(ev, "involvedObject", inv, &oom);
    jsonx_put(ev, "type", jsonx_new_str(spec->type, &oom), &oom);
    jsonx_put(ev, "reason", jsonx_new_str(spec->reason, &oom), &oom);
    jsonx_put(ev, "message", jsonx_new_str(msg, &oom), &oom);
    json_object *src = jsonx_new_obj(&oom);
    jsonx_put(src, "component", jsonx_new_str(EVENT_COMPONENT, &oom), &oom);
    jsonx_put(ev, "source", src, &oom);
    jsonx_put(ev, "reportingComponent", jsonx_new_str(EVENT_COMPONENT, &oom), &oom);
    jsonx_put(ev, "reportingInstance", jsonx_new_str(spec->instance ? spec->instance : "unknown", &oom), &oom);
    jsonx_put(ev, "firstTimestamp", jsonx_new_str(now, &oom), &oom);
    jsonx_put(ev, "lastTimestamp", jsonx_new_str(now, &oom), &oom);
    jsonx_put(ev, "eventTime", jsonx_new_str(micro, &oom), &oom);
    jsonx_put(ev, "action", jsonx_new_str(spec->action ? spec->action : "Reconcile", &oom), &oom);
    jsonx_put(ev, "count", jsonx_new_int(1, &oom), &oom);
    return jsonx_done(ev, oom);
}
