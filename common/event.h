/* event: the one builder of core/v1 Event objects for every daemon that records Events.
 *
 * Pure: the same input gives the same JSON, no clock read (the caller passes the time),
 * no I/O. Strings are copied into the JSON and escaped by json-c, so a name or message
 * can never change the object's shape.
 *
 * The Event: metadata.generateName "<name>." in the involved object's namespace,
 * involvedObject {apiVersion, kind, name, namespace, uid?, resourceVersion?}, type,
 * reason, message (cut to EVENT_MESSAGE_MAX bytes as the API server requires), source
 * {component}, reportingComponent, reportingInstance, firstTimestamp = lastTimestamp
 * (RFC 3339, seconds), eventTime (MicroTime), action, count 1. The API server refuses an
 * Event with an eventTime and no action or reportingInstance, so both always have a value.
 */
#ifndef RDC_EVENT_H
#define RDC_EVENT_H

#include <json-c/json.h>
#include <stdint.h>

#define EVENT_MESSAGE_MAX 1024
#define EVENT_COMPONENT "rediscluster-operator"

typedef struct {
    const char *api_version; /* of the involved object: "cache.example.com/v1" */
    const char *kind;        /* "RedisCluster", "ConfigMap", ... */
    const char *name;        /* required */
    const char *ns;          /* required */
    const char *uid;         /* optional */
    const char *resource_version; /* optional */
    const char *type;        /* "Normal" | "Warning" */
    const char *reason;      /* UpperCamelCase */
    const char *message;
    const char *action;      /* what was being done; NULL = "Reconcile" */
    const char *instance;    /* reportingInstance (host name); optional */
} event_spec_t;

/* A new Event for spec at wall-clock time now_wall_ns, which the caller puts; NULL when
 * name, namespace, type or reason is missing, or when out of memory. */
json_object *event_build(const event_spec_t *spec, int64_t now_wall_ns);

/* The spec's involved object from a Kubernetes object (apiVersion, kind, metadata's
 * name, namespace, uid, resourceVersion), borrowed from obj. Fields absent in obj stay
 * NULL. */
void event_involve(event_spec_t *spec, const json_object *obj);

/* The spec of a reconciler's Event about the RedisCluster rc (event_involve, borrowed
 * from rc), its apiVersion and kind as the operator addresses it (RDC_GROUP_VERSION,
 * "RedisCluster") whatever version rc was read in, action "Reconcile", message "" for
 * NULL. The strings are borrowed. */
event_spec_t event_about_cluster(const json_object *rc, const char *type, const char *reason,
                                 const char *message, const char *instance);

#endif
