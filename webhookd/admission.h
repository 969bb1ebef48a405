/* admission: the pure core of the RedisCluster admission webhooks.
 *
 *   admission_review(AdmissionReview request body, validate | mutate) -> AdmissionReview response
 *
 * No I/O, no clock, no global state (the one exception, a growing storage size, reads its
 * StorageClass through a reader the caller passes in, admission_review_classes, which may
 * answer later: the review is then deferred and asked again; the decision itself is
 * pure, classcheck_decide): the same body always gives the same answer, so the
 * HTTP server (webhook_server.h) is a thin shell and every rule is tested without sockets.
 *
 * REQUEST (admission.k8s.io/v1, also v1beta1 which has the same shape): a JSON object
 * {"apiVersion","kind":"AdmissionReview","request":{"uid","kind":{group,version,kind},
 * "resource":{group,version,resource},"subResource","operation","name","namespace",
 * "object","oldObject","dryRun",...}}. Anything else (not JSON, trailing bytes, nesting
 * deeper than ADMISSION_MAX_DEPTH, a missing request or uid, an unknown operation, a kind
 * other than RedisCluster, or Scale for the scale subresource, an object that is not an
 * object) is a bad request: the answer is an AdmissionReview whose response refuses with
 * status code 400, reason BadRequest and a message naming what is wrong.
 *
 * VALIDATING (ADMISSION_VALIDATE):
 *   CREATE   every rule of rdc_spec.h on the object;
 *   UPDATE   when the object is being deleted (metadata.deletionTimestamp), or its spec is
 *            the old spec (possibly with defaults added), allowed: metadata-only changes
 *            such as the operator's finalizer must never be blocked by a spec that predates
 *            the webhook. Otherwise every rule on the new object, plus the transition
 *            rules: spec.size may not decrease, storage size may grow, never shrink (not
 *            in Cluster mode), storage class immutable. When all of that passes and the
 *            storage size grows, the StorageClass is read through the caller's
 *            admission_classes_t (the only review that may call the API) and
 *            classcheck_decide (classcheck.h) refuses the growth (403) when the class
 *            does not allow volume expansion or cannot be read; without a reader the
 *            growth is allowed (the check is off);
 *   UPDATE of the scale subresource (kind autoscaling/v1 Scale): spec.replicas must be
 *            1..10 and may not decrease;
 *   DELETE, CONNECT, and other subresources: allowed.
 *   A refusal carries status.code 403 and reason Forbidden when only transition rules were
 *   broken, else 422 and reason Invalid; status.message is
 *   `RedisCluster.cache.example.com "<name>" is invalid: <field errors>` (or "is forbidden"),
 *   each field error naming the field and the rule, e.g.
 *   `spec.size: Invalid value: 11: must be between 1 and 10`.
 *
 * MUTATING (ADMISSION_MUTATE):
 *   CREATE and UPDATE of the main resource (not being deleted): allowed, with the defaults
 *   of rdc_spec_default_ops as a base64 JSON Patch (patchType JSONPatch) when any applies,
 *   and no patch when none does. Anything else: allowed without a patch.
 *
 * Both kinds add warnings (response.warnings) for settings that have no effect, such as a
 * spec.version next to an image that already names a tag.
 *
 * RESPONSE: {"apiVersion": the request's (admission.k8s.io/v1 when unknown),
 * "kind":"AdmissionReview","response":{"uid": the request's uid ("" when unknown),
 * "allowed", "status":{"metadata":{},"status":"Failure","message","reason","code"} when
 * refused, "patchType","patch" when patched, "warnings" when any}}.
 */
#ifndef RDC_ADMISSION_H
#define RDC_ADMISSION_H

#include <json-c/json.h>
#include <stddef.h>

#define ADMISSION_MAX_DEPTH 64 /* JSON nesting accepted in a request body */

#define ADMISSION_VALIDATE_PATH "/validate-cache-example-com-v1alpha1-rediscluster"
#define ADMISSION_MUTATE_PATH "/mutate-cache-example-com-v1alpha1-rediscluster"

typedef enum { ADMISSION_VALIDATE, ADMISSION_MUTATE } admission_kind_t;

/* What happened, for logs and metrics. Strings point into outcome's own storage. */
typedef struct {
    int bad_request;     /* 1: the body was not an AdmissionReview we understand */
    int allowed;         /* response.allowed */
    int code;            /* status.code when refused (400, 403, 422), else 200 */
    int patched;         /* 1: a JSON Patch was returned */
    int dry_run;         /* request.dryRun */
    char uid[128];       /* request.uid, cut to fit ("" when absent) */
    char operation[16];  /* request.operation ("" when absent) */
    char ns[64];         /* request.namespace, cut to fit */
    char name[256];      /* request.name or the object's metadata.name, cut to fit */
    char message[512];   /* status.message, cut to fit ("" when allowed) */
} admission_outcome_t;

/* Answer one AdmissionReview request of len bytes at body (need not be NUL-terminated;
 * anything at all is accepted). On return *response_json_out is a NUL-terminated JSON
 * AdmissionReview the caller frees, and outcome (when not NULL) describes it.
 * Returns 0 when the review was answered (allowed or refused), 1 when the body was a bad
 * request (answered with a refusal, code 400: send it with HTTP 400), -1 when out of
 * memory (*response_json_out NULL). */
int admission_review(const char *body, size_t len, admission_kind_t kind, char **response_json_out,
                     admission_outcome_t *outcome);

/* Reads a StorageClass for the volume-expansion check: cls set: that class (*out the
 * object); cls NULL: every class (*out the array of items). Returns 0 with *out owned by
 * the caller, -1 with err saying why, or ADMISSION_READ_LATER when the answer is not there
 * yet (a read on the event loop: the review is then deferred, see
 * admission_review_classes). webhook_server.c's readers, over classcheck_read_start, are
 * the real ones. */
#define ADMISSION_READ_LATER 1
typedef int (*admission_class_reader_fn)(void *user, const char *cls, json_object **out, char *err,
                                         size_t errlen);
typedef struct {
    admission_class_reader_fn read; /* NULL: the check is off (growth allowed) */
    void *user;
} admission_classes_t;

/* admission_review with a StorageClass reader (NULL: none, as admission_review): only an
 * UPDATE whose spec.storage.size grows, and that passes every other rule, calls it,
 * once. Same contract otherwise, plus: when the reader returns ADMISSION_READ_LATER the
 * review is not answered: ADMISSION_DEFERRED is returned with *response_json_out NULL
 * (outcome, when given, describes the request so far). The caller reads the class and
 * asks again with the same body and a reader that has the answer; the review being pure,
 * the second pass asks the reader for the same class, once, and answers. */
#define ADMISSION_DEFERRED 2
int admission_review_classes(const char *body, size_t len, admission_kind_t kind,
                             const admission_classes_t *classes, char **response_json_out,
                             admission_outcome_t *outcome);

/* Standard base64 (RFC 4648, with padding) of len bytes, through OpenSSL's EVP_EncodeBlock.
 * Returns a new NUL-terminated string the caller frees, or NULL when out of memory. */
char *admission_base64(const unsigned char *data, size_t len);

#endif
