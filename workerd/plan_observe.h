/* plan_observe: reading what the API server reports of the observed objects, as the
 * status, the diagnosis and a failed write's report need it (workerd/plan*.c only).
 * Pure functions of their arguments, no state; anything at all is accepted (wrong types
 * read as absent). */
#ifndef RDC_WORKERD_PLAN_OBSERVE_H
#define RDC_WORKERD_PLAN_OBSERVE_H

#include <json-c/json.h>
#include <stdint.h>

/* What a StatefulSet reports. */
typedef struct {
    int present;
    int64_t spec_replicas, replicas, ready, updated;
    int rolling; /* not settled on its current spec: status.observedGeneration behind
                    metadata.generation, updatedReplicas or status.replicas not
                    spec.replicas, or currentRevision not updateRevision */
} plan_sts_view_t;

/* The view of sts (NULL: not present; spec.replicas defaults to 1, counts to 0). */
plan_sts_view_t plan_view_statefulset(const json_object *sts);

/* The condition of this type in status.conditions (status is an object's status), or
 * NULL. Borrowed from status. */
const json_object *plan_observed_cond(const json_object *status, const char *type);

/* How long ago (by now) the RFC 3339 time t was, 0 when it is in the future; -1 when t
 * is NULL, empty or unreadable. */
int64_t plan_age_ns(const char *t, int64_t now);

/* 1 when s can be a condition reason (metav1.Condition:
 * ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most 1024 bytes), else 0. */
int plan_condition_reason_ok(const char *s);

#endif
