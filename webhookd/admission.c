/* admission: the pure core of the RedisCluster admission webhooks. See admission.h. */
#include "admission.h"

#include "classcheck.h"
#include "jsonx.h"
#include "review.h"

#include "buf.h"
#include "rdc_spec.h"

#include <json-c/json.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MESSAGE_CAP 4096 /* status.message never grows past this */
#define NAME_SHOWN 253   /* bytes of an object name quoted in a message */
#define GROUP "cache.example.com"
#define KIND "RedisCluster"

typedef struct {
    admission_kind_t kind;
    admission_outcome_t *out;
    const char *api_version;   /* echoed in the response */
    const char *uid;           /* "" until known */
    int bad;                   /* a bad request */
    int allowed;
    int code;
    const char *reason;        /* "BadRequest", "Invalid", "Forbidden" */
    buf_t message;
    json_object *patch_ops;    /* JSON Patch operations, or NULL */
    json_object *warnings;     /* array of strings, or NULL */
    const admission_classes_t *classes; /* StorageClass reader, or NULL */
    int deferred;              /* the reader has no answer yet (ADMISSION_DEFERRED) */
    int oom;
} review_t;

/* ---- Small helpers ------------------------------------------------------------------- */

/* Refuse the request as malformed: code 400, reason BadRequest, message printf-style. */
static void bad_request(review_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad_request(review_t *r, const char *fmt, ...)
{
    r->bad = 1;
    r->allowed = 0;
    r->code = 400;
    r->reason = "BadRequest";
    buf_reset(&r->message);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&r->message, fmt, ap);
    va_end(ap);
}

static void add_warning(review_t *r, const char *text)
{
    if (!r->warnings && !(r->warnings = json_object_new_array())) {
        r->oom = 1;
        return;
    }
    json_object *s = json_object_new_string(text);
    if (!s || json_object_array_add(r->warnings, s)) {
        json_object_put(s);
        r->oom = 1;
    }
}

/* ---- Parsing the envelope ------------------------------------------------------------- */

/* Check the AdmissionReview envelope and return its request, or NULL (a bad request). */
static json_object *envelope(review_t *r, const json_object *root)
{
    if (!json_object_is_type(root, json_type_object)) {
        bad_request(r, "body: must be an AdmissionReview object, have %s", review_type_name(root));
        return NULL;
    }
    json_object *request = jsonx_get(root, "request");
    const char *uid = jsonx_str(request, "uid");
    if (uid && *uid)
        r->uid = uid; /* from here on, even a refusal answers the right request */
    const char *av = jsonx_str(root, "apiVersion"), *kind = jsonx_str(root, "kind");
    if (av && (!strcmp(av, "admission.k8s.io/v1") || !strcmp(av, "admission.k8s.io/v1beta1")))
        r->api_version = av;
    if (!av || r->api_version != av) {
        bad_request(r, "apiVersion: must be admission.k8s.io/v1");
        return NULL;
    }
    if (!kind || strcmp(kind, "AdmissionReview")) {
        bad_request(r, "kind: must be AdmissionReview");
        return NULL;
    }
    if (!request || !json_object_is_type(request, json_type_object)) {
        bad_request(r, "request: required, an object, have %s", review_type_name(request));
        return NULL;
    }
    if (!uid || !*uid) {
        bad_request(r, "request.uid: required, a non-empty string");
        return NULL;
    }
    return request;
}

/* "group/kind" of request.kind equals (group, kind)? An absent group means "" (core). */
static int kind_is(const json_object *k, const char *group, const char *kind)
{
    const char *g = jsonx_str(k, "group"), *n = jsonx_str(k, "kind");
    return n && !strcmp(n, kind) && !strcmp(g ? g : "", group);
}

/* ---- Validating ------------------------------------------------------------------------- */

/* Refuse with the field errors: 403 Forbidden when only transition rules were broken,
 * else 422 Invalid. */
static void refuse(review_t *r, const rdc_field_errors_t *errs, const char *name)
{
    int forbidden = rdc_field_errors_all_forbidden(errs);
    r->allowed = 0;
    r->code = forbidden ? 403 : 422;
    r->reason = forbidden ? "Forbidden" : "Invalid";
    buf_reset(&r->message);
    buf_puts(&r->message, KIND "." GROUP " ");
    rdc_spec_put_quoted(&r->message, name ? name : "", NAME_SHOWN);
    buf_puts(&r->message, forbidden ? " is forbidden: " : " is invalid: ");
    rdc_field_errors_format(errs, &r->message);
    if (rdc_field_errors_oom(errs))
        r->oom = 1;
}

/* Warnings for settings that have no effect (spec: what rdc_spec_parse found valid). */
static void spec_warnings(review_t *r, const rdc_spec_t *spec)
{
    const char *img = spec->image, *version = spec->version;
    if (img && version && rdc_spec_image_has_tag_or_digest(img)) {
        buf_t w;
        buf_init(&w, MESSAGE_CAP);
        buf_puts(&w, "spec.version ");
        rdc_spec_put_quoted(&w, version, 64);
        buf_puts(&w, " has no effect: spec.image ");
        rdc_spec_put_quoted(&w, img, 128);
        buf_puts(&w, " already names a tag or digest");
        add_warning(r, buf_str(&w));
        buf_free(&w);
    }
}

/* The scale subresource (kind autoscaling/v1 Scale, whose spec.replicas is the
 * RedisCluster's spec.size): 1..10. A decrease is not refused here: whether it is
 * allowed is the RedisCluster's spec.scaleDownPolicy, which a Scale does not carry; the
 * API server applies the CRD's CEL rules (scaleDownPolicy, minReplicasToWrite < size) to
 * the RedisCluster the scale subresource writes, so they hold for kubectl scale too. */
static void validate_scale(review_t *r, const char *op, const json_object *obj)
{
    if (strcmp(op, "UPDATE"))
        return;
    const char *name = jsonx_str(jsonx_get(obj, "metadata"), "name");
    json_object *nv = jsonx_get(jsonx_get(obj, "spec"), "replicas");
    buf_t d;
    buf_init(&d, MESSAGE_CAP);
    if (!nv || !json_object_is_type(nv, json_type_int)) {
        buf_printf(&d, "spec.replicas: Invalid value: %s: must be an integer", review_type_name(nv));
    } else if (json_object_get_int64(nv) < RDC_SPEC_SIZE_MIN || json_object_get_int64(nv) > RDC_SPEC_SIZE_MAX) {
        buf_printf(&d, "spec.replicas: Invalid value: %lld: must be between %d and %d",
                   (long long)json_object_get_int64(nv), RDC_SPEC_SIZE_MIN, RDC_SPEC_SIZE_MAX);
    }
    if (d.len) {
        r->allowed = 0;
        r->code = 422;
        r->reason = "Invalid";
        buf_reset(&r->message);
        buf_puts(&r->message, "Scale.autoscaling ");
        rdc_spec_put_quoted(&r->message, name ? name : "", NAME_SHOWN);
        buf_printf(&r->message, " is invalid: %s", buf_str(&d));
    }
    buf_free(&d);
}

/* The spec.storage.size of a RedisCluster's spec, the default when unset; NULL when it
 * is not a string. */
static const char *storage_size(const json_object *rc)
{
    json_object *v = jsonx_get(jsonx_get(jsonx_get(rc, "spec"), "storage"), "size");
    if (!v || json_object_is_type(v, json_type_null))
        return RDC_SPEC_DEFAULT_STORAGE_SIZE;
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* An update that passed every rule: when its storage size grows, may its StorageClass
 * grow claims? Reads the class (the only API call of a review) and refuses with 403; a
 * reader without the answer yet defers the whole review. */
static void check_expansion(review_t *r, const json_object *old, const rdc_spec_t *spec, const char *name)
{
    const char *os = storage_size(old), *ns = spec->storage.size;
    uint64_t ob = 0, nb = 0;
    if (!r->classes || !r->classes->read || !os || !ns || rdc_spec_storage_bytes(os, &ob) != RDC_STORAGE_OK ||
        rdc_spec_storage_bytes(ns, &nb) != RDC_STORAGE_OK || nb <= ob)
        return;
    json_object *read = NULL;
    char err[512] = "";
    int failed = r->classes->read(r->classes->user, spec->storage.storage_class, &read, err, sizeof(err));
    if (failed == ADMISSION_READ_LATER) {
        r->deferred = 1;
        json_object_put(read);
        return;
    }
    buf_t d;
    buf_init(&d, MESSAGE_CAP);
    if (classcheck_decide(os, ns, spec->storage.storage_class, read, failed ? (*err ? err : "unknown error") : NULL,
                          &d)) {
        r->allowed = 0;
        r->code = 403;
        r->reason = "Forbidden";
        buf_reset(&r->message);
        buf_puts(&r->message, KIND "." GROUP " ");
        rdc_spec_put_quoted(&r->message, name ? name : "", NAME_SHOWN);
        buf_printf(&r->message, " is forbidden: spec.storage.size: Forbidden: %s", buf_str(&d));
    }
    buf_free(&d);
    json_object_put(read);
}

static void validate(review_t *r, const char *op, const char *sub, const json_object *obj,
                     const json_object *old, const char *name)
{
    if (!strcmp(sub, "scale")) {
        validate_scale(r, op, obj);
        return;
    }
    rdc_field_errors_t *errs = rdc_field_errors_new();
    if (!errs) {
        r->oom = 1;
        return;
    }
    if (*sub || (strcmp(op, "CREATE") && strcmp(op, "UPDATE")))
        goto out; /* status, DELETE, CONNECT: nothing to check */
    if (!strcmp(op, "UPDATE") &&
        (jsonx_get(jsonx_get(obj, "metadata"), "deletionTimestamp") || rdc_spec_unchanged(old, obj)))
        goto out;
    rdc_spec_t spec;
    rdc_spec_parse(obj, &spec, errs);
    if (!strcmp(op, "UPDATE"))
        rdc_spec_validate_update(old, obj, errs);
    if (rdc_field_errors_count(errs) || rdc_field_errors_dropped(errs))
        refuse(r, errs, name);
    else if (!strcmp(op, "UPDATE"))
        check_expansion(r, old, &spec, name);
    spec_warnings(r, &spec);
out:
    rdc_field_errors_destroy(&errs);
}

/* ---- Mutating --------------------------------------------------------------------------- */

static void mutate(review_t *r, const char *op, const char *sub, const json_object *obj)
{
    if (*sub || (strcmp(op, "CREATE") && strcmp(op, "UPDATE")))
        return;
    if (jsonx_get(jsonx_get(obj, "metadata"), "deletionTimestamp"))
        return; /* being deleted: change nothing under the finalizer's feet */
    json_object *ops = json_object_new_array();
    int n = ops ? rdc_spec_default_ops(obj, ops) : -1;
    if (n < 0) {
        r->oom = 1;
        json_object_put(ops);
    } else if (n == 0) {
        json_object_put(ops);
    } else {
        r->patch_ops = ops;
    }
}

/* ---- Response ----------------------------------------------------------------------------- */

char *admission_base64(const unsigned char *data, size_t len)
{
    if (len > (size_t)INT_MAX / 4 * 3 - 3)
        return NULL;
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (!out)
        return NULL;
    int n = EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    if (n < 0) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return out;
}

/* obj[key] = val (taking val); records allocation failure in r. */
static void put(review_t *r, json_object *obj, const char *key, json_object *val)
{
    if (!obj || !val || json_object_object_add(obj, key, val)) {
        json_object_put(val);
        r->oom = 1;
    }
}

static char *render(review_t *r)
{
    char *patch64 = NULL, *out = NULL;
    json_object *root = json_object_new_object(), *resp = json_object_new_object();
    if (!root || !resp) {
        json_object_put(resp);
        goto out;
    }
    put(r, root, "apiVersion", json_object_new_string(r->api_version));
    put(r, root, "kind", json_object_new_string("AdmissionReview"));
    put(r, root, "response", resp);
    put(r, resp, "uid", json_object_new_string(r->uid));
    put(r, resp, "allowed", json_object_new_boolean(r->allowed));
    if (!r->allowed) {
        json_object *st = json_object_new_object();
        put(r, st, "metadata", json_object_new_object());
        put(r, st, "status", json_object_new_string("Failure"));
        put(r, st, "message", json_object_new_string(buf_str(&r->message)));
        put(r, st, "reason", json_object_new_string(r->reason));
        put(r, st, "code", json_object_new_int(r->code));
        put(r, resp, "status", st);
    } else if (r->patch_ops) {
        const char *text = json_object_to_json_string_ext(r->patch_ops, JSON_C_TO_STRING_PLAIN |
                                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || !(patch64 = admission_base64((const unsigned char *)text, strlen(text)))) {
            r->oom = 1;
            goto out;
        }
        put(r, resp, "patchType", json_object_new_string("JSONPatch"));
        put(r, resp, "patch", json_object_new_string(patch64));
    }
    if (r->warnings) {
        put(r, resp, "warnings", json_object_get(r->warnings));
    }
    if (r->oom)
        goto out;
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    out = text ? strdup(text) : NULL;
out:
    free(patch64);
    json_object_put(root);
    return out;
}

static void fill_outcome(const review_t *r, admission_outcome_t *o, const json_object *request, const char *name)
{
    memset(o, 0, sizeof(*o));
    o->bad_request = r->bad;
    o->allowed = r->allowed;
    o->code = r->allowed ? 200 : r->code;
    o->patched = r->allowed && r->patch_ops;
    json_object *dry = jsonx_get(request, "dryRun");
    o->dry_run = dry && json_object_is_type(dry, json_type_boolean) && json_object_get_boolean(dry);
    review_copy_cut(o->uid, sizeof(o->uid), r->uid);
    review_copy_cut(o->operation, sizeof(o->operation), jsonx_str(request, "operation"));
    review_copy_cut(o->ns, sizeof(o->ns), jsonx_str(request, "namespace"));
    review_copy_cut(o->name, sizeof(o->name), name);
    if (!r->allowed)
        review_copy_cut(o->message, sizeof(o->message), buf_str(&r->message));
}

int admission_review(const char *body, size_t len, admission_kind_t kind, char **response_json_out,
                     admission_outcome_t *outcome)
{
    return admission_review_classes(body, len, kind, NULL, response_json_out, outcome);
}

int admission_review_classes(const char *body, size_t len, admission_kind_t kind,
                             const admission_classes_t *classes, char **response_json_out,
                             admission_outcome_t *outcome)
{
    review_t r = {.kind = kind, .classes = classes, .api_version = "admission.k8s.io/v1", .uid = "", .allowed = 1,
                  .code = 200};
    buf_init(&r.message, MESSAGE_CAP);
    char msg[320];
    json_object *root =
        review_parse_body(body, len, ADMISSION_MAX_DEPTH, "an AdmissionReview", &r.oom, msg, sizeof(msg));
    if (msg[0])
        bad_request(&r, "%s", msg);
    json_object *request = NULL;
    const char *name = NULL;
    if (root)
        request = envelope(&r, root);
    if (request) {
        static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
        const char *op = jsonx_str(request, "operation");
        const char *sub = jsonx_str(request, "subResource");
        json_object *k = jsonx_get(request, "kind"), *obj = jsonx_get(request, "object"),
                    *old = jsonx_get(request, "oldObject");
        size_t i = 0;
        while (op && i < sizeof(ops) / sizeof(ops[0]) && strcmp(op, ops[i]))
            i++;
        sub = sub ? sub : "";
        name = jsonx_str(request, "name");
        if (!name || !*name)
            name = jsonx_str(jsonx_get(obj, "metadata"), "name");
        if (!op || i == sizeof(ops) / sizeof(ops[0]))
            bad_request(&r, "request.operation: must be CREATE, UPDATE, DELETE or CONNECT");
        else if (!strcmp(sub, "scale") ? !kind_is(k, "autoscaling", "Scale") : !kind_is(k, GROUP, KIND))
            bad_request(&r, "request.kind: this webhook serves %s", !strcmp(sub, "scale")
                                                                       ? "autoscaling Scale (redisclusters/scale)"
                                                                       : GROUP " " KIND);
        else if ((!strcmp(op, "CREATE") || !strcmp(op, "UPDATE")) &&
                 (!obj || !json_object_is_type(obj, json_type_object)))
            bad_request(&r, "request.object: required for %s, an object, have %s", op, review_type_name(obj));
        else if (!strcmp(op, "UPDATE") && (!old || !json_object_is_type(old, json_type_object)))
            bad_request(&r, "request.oldObject: required for UPDATE, an object, have %s", review_type_name(old));
        else if (kind == ADMISSION_VALIDATE)
            validate(&r, op, sub, obj, old, name);
        else
            mutate(&r, op, sub, obj);
    }
    if (outcome)
        fill_outcome(&r, outcome, request, name);
    char *text = r.oom || r.deferred ? NULL : render(&r);
    json_object_put(r.patch_ops);
    json_object_put(r.warnings);
    json_object_put(root); /* last: r's strings point into it */
    buf_free(&r.message);
    *response_json_out = text;
    if (r.deferred && !r.oom)
        return ADMISSION_DEFERRED;
    if (!text)
        return -1;
    return r.bad ? 1 : 0;
}
