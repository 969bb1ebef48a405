/* conversion: RedisCluster between cache.example.com/v1alpha1 and cache.example.com/v1,
 * and the pure core of the CRD conversion webhook (ConversionReview in, out).
 *
 *   conversion_review(ConversionReview request body) -> ConversionReview response
 *   conversion_convert(one RedisCluster, desired apiVersion) -> the converted object
 *
 * No I/O, no clock, no global state (the metrics helpers at the end are the only part
 * that touches the process: they are for the HTTP shell). docs/api-versions.md is the
 * user-facing statement of the rules below.
 *
 * THE TWO VERSIONS. v1 is v1alpha1 plus the "v1-only" fields, listed once in
 * conversion.c (CONVERSION_V1_ONLY): spec.mode, spec.auth, spec.persistence,
 * spec.scaleDownPolicy, spec.failover, the pod, budget, storage and config knobs of issue 20 (spec.resources,
 * securityContext, podSecurityContext, affinity, tolerations, nodeSelector,
 * topologySpreadConstraints, priorityClassName, imagePullSecrets, podMetadata,
 * serviceMetadata, terminationGracePeriodSeconds, podDisruptionBudget, storage.retention,
 * config.extra), spec.cluster, spec.tls, spec.acl, status.primary, status.nodes,
 * status.cluster, and the day-2 fields of issue 34 (spec.service, imagePullPolicy,
 * serviceAccountName, env, volumes, volumeMounts, initContainers, containers,
 * networkPolicy), and issue 36's spec.restore, spec.backup, status.backup and
 * status.restore. A new v1 field is one more line there and
 * in the CRD.
 * Everything else (metadata, the shared spec and status fields, fields unknown to both)
 * is carried through untouched, value for value.
 *
 * v1 -> v1alpha1 (down): apiVersion becomes cache.example.com/v1alpha1; every v1-only
 *   field that is present (null included) is moved out of the object into a record
 *   {"spec":{...},"status":{...}} that mirrors the object's shape, in the table's order.
 *   A v1 object that itself carries the annotation CONVERSION_ANNOTATION (a user copied
 *   it from a v1alpha1 view) keeps it losslessly: its value goes into the record as
 *   "annotation". Then:
 *     - the record equals the IMPLIED record: no annotation (a v1alpha1 object that
 *       never saw v1 reads back exactly as it was written);
 *     - otherwise metadata.annotations[CONVERSION_ANNOTATION] = the record's JSON text
 *       (compact, keys in the table's order: the canonical text).
 *   The IMPLIED record is {"spec":{"mode":"Standalone","persistence":"aof"}} when spec
 *   is an object, else {}: what a v1alpha1 cluster is (independent servers, AOF plus RDB
 *   snapshots, as the operator has always run them).
 * v1alpha1 -> v1 (up): apiVersion becomes cache.example.com/v1; the record is the
 *   annotation's JSON when present (the annotation is removed, and metadata.annotations
 *   with it when that leaves it empty), else the IMPLIED record; every v1-only field of
 *   the record is set in the object (parent objects created as needed; a value already
 *   there is replaced), and a recorded "annotation" is put back as the annotation.
 * Same version: the object unchanged.
 *
 * LOSSLESS. For every v1 object o: up(down(o)) == o; for every v1alpha1 object a whose
 * annotation, when present, is the canonical text: down(up(a)) == a. (== is JSON
 * equality: objects are unordered. One normalisation: an empty metadata.annotations map
 * and an absent one are the same, as the API server's ObjectMeta makes them.) So no
 * client ever sees a change it did not make, and an update through either version that
 * leaves the object as read is a no-op for the API server (no new generation).
 *
 * REFUSALS (a clear message, never a crash): an object that is not a JSON object, whose
 * kind is not RedisCluster, whose apiVersion is neither version, whose metadata or
 * metadata.annotations is not an object (of strings); on the way up, an annotation that
 * is not the JSON of a record: not an object, a member other than spec/status/annotation,
 * a field that is not v1-only, a parent to restore into that is not an object, more than
 * CONVERSION_MAX_RECORD bytes or CONVERSION_MAX_DEPTH levels.
 *
 * THE REVIEW (apiextensions.k8s.io/v1 ConversionReview; v1beta1 has the same shape and is
 * answered in kind). Request: {"apiVersion","kind":"ConversionReview","request":{"uid",
 * "desiredAPIVersion","objects":[...]}}. Response: {"apiVersion": the request's,
 * "kind":"ConversionReview","response":{"uid": the request's ("" when unknown),
 * "convertedObjects":[...in the request's order...],"result":{"status":"Success"}}}, or
 * on any refusal "convertedObjects":[] and "result":{"status":"Failure","message":...,
 * "reason":"BadRequest" or "Invalid","code":400 or 422} (the API server shows the
 * message: "conversion webhook for cache.example.com/v1, Kind=RedisCluster failed: ...").
 * A body that is not such a review (not JSON, trailing bytes, nesting deeper than
 * CONVERSION_MAX_DEPTH, no request or uid, objects not an array) is a bad request:
 * answered with reason BadRequest, code 400 (send it with HTTP 400). An unknown
 * desiredAPIVersion, or any object refused as above, fails the whole review (code 422),
 * the message naming the object's index, namespace/name and the reason, e.g.
 * `objects[2] (default/cache): apiVersion "cache.example.com/v2": must be
 * cache.example.com/v1alpha1 or cache.example.com/v1`. Messages are cut to
 * CONVERSION_MESSAGE_CAP bytes. Memory is bounded by the body's size.
 */
#ifndef RDC_CONVERSION_H
#define RDC_CONVERSION_H

#include <json-c/json.h>
#include <stddef.h>

#define CONVERSION_PATH "/convert"
#define CONVERSION_ANNOTATION "cache.example.com/v1-fields"
#define CONVERSION_V1ALPHA1 "cache.example.com/v1alpha1"
#define CONVERSION_V1 "cache.example.com/v1"
#define CONVERSION_MAX_DEPTH 128          /* JSON nesting accepted in a body or a record */
#define CONVERSION_MAX_RECORD (256 << 10) /* bytes of an annotation's record (the API's cap on all annotations) */
#define CONVERSION_MESSAGE_CAP 4096       /* result.message never grows past this */

/* What happened, for logs and metrics. */
typedef struct {
    int bad_request;          /* 1: not a ConversionReview we understand (code 400) */
    int success;              /* result.status Success */
    int code;                 /* 200 on success, else 400 or 422 */
    size_t objects;           /* objects in the request (when it had an array) */
    size_t up, down, same;    /* converted v1alpha1->v1, v1->v1alpha1, unchanged (on success) */
    char uid[128];            /* request.uid, cut to fit ("" when absent) */
    char desired[64];         /* request.desiredAPIVersion, cut to fit */
    char message[512];        /* result.message, cut to fit ("" on success) */
} conversion_outcome_t;

/* Convert one RedisCluster (borrowed, only read) to desired (CONVERSION_V1ALPHA1 or
 * CONVERSION_V1) by the rules above. Returns 0 with *out a new object the caller puts
 * (json_object_put); -1 with *out NULL and err (when errlen > 0) holding one line that
 * says why ("metadata.annotations[\"cache.example.com/v1-fields\"]: not JSON: ..."), or
 * "out of memory". */
int conversion_convert(const json_object *obj, const char *desired, json_object **out, char *err,
                       size_t errlen);

/* Answer one ConversionReview request of len bytes at body (need not be NUL-terminated;
 * anything at all is accepted). On return *response_json_out is a NUL-terminated JSON
 * ConversionReview the caller frees, and outcome (when not NULL) describes it. Returns 0
 * when the review was answered (Success or Failure: send with HTTP 200), 1 when the body
 * was a bad request (answered with a Failure, code 400: send it with HTTP 400), -1 when
 * out of memory (*response_json_out NULL). */
int conversion_review(const char *body, size_t len, char **response_json_out, conversion_outcome_t *outcome);

/* ---- Metrics (for the HTTP shell; the default registry, metrics.h) ------------------- */

/* Register the conversion metrics with every series at zero, as controller-runtime shows
 * its webhook series before the first request:
 *   webhook_conversion_requests_total{result}        result = Success | Failure | BadRequest
 *   webhook_conversion_objects_total{from,to}         objects converted, by version (v1alpha1, v1)
 * Idempotent. */
void conversion_metrics_register(void);

/* Count one answered review (rc as returned by conversion_review; -1 counts nothing). */
void conversion_metrics_observe(int rc, const conversion_outcome_t *o);

#endif
