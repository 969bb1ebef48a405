/* conversion: RedisCluster v1alpha1 <-> v1 and the ConversionReview core. See conversion.h. */
#include "conversion.h"

#include "buf.h"
#include "jsonx.h"
#include "metrics.h"
#include "rdc_spec.h"
#include "review.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIND "RedisCluster"
#define PATH_PARTS 4 /* a v1-only path has at most this many segments */

/* The v1-only fields: in v1's schema and not in v1alpha1's. The first segment is spec or
 * status. Their order here is the order of the record's members (its canonical text). */
static const char *const CONVERSION_V1_ONLY[][PATH_PARTS] = {
    {"spec", "mode", NULL},
    {"spec", "auth", NULL},
    {"spec", "persistence", NULL},
    {"spec", "scaleDownPolicy", NULL},
    {"spec", "failover", NULL},
    {"spec", "resources", NULL},
    {"spec", "securityContext", NULL},
    {"spec", "podSecurityContext", NULL},
    {"spec", "affinity", NULL},
    {"spec", "tolerations", NULL},
    {"spec", "nodeSelector", NULL},
    {"spec", "topologySpreadConstraints", NULL},
    {"spec", "priorityClassName", NULL},
    {"spec", "imagePullSecrets", NULL},
    {"spec", "podMetadata", NULL},
    {"spec", "serviceMetadata", NULL},
    {"spec", "terminationGracePeriodSeconds", NULL},
    {"spec", "podDisruptionBudget", NULL},
    {"spec", "storage", "retention", NULL},
    {"spec", "config", "extra", NULL},
    {"spec", "cluster", NULL},
    {"spec", "tls", NULL},
    {"spec", "acl", NULL},
    /* DAY-2 (issue 34) */
    {"spec", "service", NULL},
    {"spec", "imagePullPolicy", NULL},
    {"spec", "serviceAccountName", NULL},
    {"spec", "env", NULL},
    {"spec", "volumes", NULL},
    {"spec", "volumeMounts", NULL},
    {"spec", "initContainers", NULL},
    {"spec", "containers", NULL},
    {"spec", "networkPolicy", NULL},
    {"spec", "restore", NULL}, /* issue 36: docs/backup.md "Restore at creation" */
    {"spec", "backup", NULL},  /* issue 36: docs/backup.md "What the operator does" */
    {"status", "primary", NULL},
    {"status", "nodes", NULL},
    {"status", "cluster", NULL},
    {"status", "switchoverFrom", NULL},
    {"status", "lastRedisCommandTime", NULL},
    {"status", "backup", NULL},
    {"status", "restore", NULL}, /* issue 36: spec.restore.from.backup's recorded source */
};
#define N_V1_ONLY (sizeof(CONVERSION_V1_ONLY) / sizeof(CONVERSION_V1_ONLY[0]))

/* What a v1alpha1 object without the annotation is in v1 (when its spec is an object):
 * the defaults of a spec that sets neither (rdc_spec.h DEFAULTS). */
#define IMPLIED_MODE RDC_SPEC_DEFAULT_MODE
#define IMPLIED_PERSISTENCE RDC_SPEC_DEFAULT_PERSISTENCE

typedef enum { CONV_OK = 0, CONV_REFUSED = 1, CONV_OOM = -1 } conv_rc_t;

/* ---- Small helpers ------------------------------------------------------------------ */

/* Write a printf-style message into err (errlen bytes; nothing when errlen is 0). */
static conv_rc_t refuse(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static conv_rc_t refuse(char *err, size_t errlen, const char *fmt, ...)
{
    if (errlen) {
        BUF_FORMAT_VA(err, errlen, fmt);
    }
    return CONV_REFUSED;
}

/* Does object o have member key (null counts)? *v gets the value (NULL for null). */
static int has(json_object *o, const char *key, json_object **v)
{
    *v = NULL;
    return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, v);
}

/* The object that holds the last segment of path inside root, or NULL when some parent
 * is absent or not an object. */
static json_object *parent_of(json_object *root, const char *const *path)
{
    json_object *o = root;
    for (size_t i = 0; i + 1 < PATH_PARTS && path[i + 1]; i++) {
        json_object *next;
        if (!has(o, path[i], &next) || !json_object_is_type(next, json_type_object))
            return NULL;
        o = next;
    }
    return o;
}

static const char *leaf_of(const char *const *path)
{
    size_t i = 0;
    while (i + 1 < PATH_PARTS && path[i + 1])
        i++;
    return path[i];
}

/* "spec.storage.retention" */
static void path_str(const char *const *path, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < PATH_PARTS && path[i] && off < len; i++)
        off += (size_t)snprintf(out + off, len - off, "%s%s", i ? "." : "", path[i]);
}

/* Like parent_of, creating absent parents as objects. Returns NULL with *bad naming the
 * segment index whose value is not an object (*bad = -1: out of memory). */
static json_object *parent_make(json_object *root, const char *const *path, int *bad)
{
    json_object *o = root;
    *bad = -1;
    for (size_t i = 0; i + 1 < PATH_PARTS && path[i + 1]; i++) {
        json_object *next;
        if (!has(o, path[i], &next) || !next) {
            if (!(next = json_object_new_object()))
                return NULL;
            if (json_object_object_add(o, path[i], next)) {
                json_object_put(next);
                return NULL;
            }
        } else if (!json_object_is_type(next, json_type_object)) {
            *bad = (int)i;
            return NULL;
        }
        o = next;
    }
    return o;
}

/* The record a v1alpha1 object without the annotation stands for. NULL when out of memory. */
static json_object *implied_record(json_object *obj)
{
    json_object *spec, *r = json_object_new_object();
    int oom = !r;
    if (!oom && has(obj, "spec", &spec) && spec && json_object_is_type(spec, json_type_object)) {
        json_object *s = jsonx_new_obj(&oom);
        jsonx_put(s, "mode", jsonx_new_str(IMPLIED_MODE, &oom), &oom);
        jsonx_put(s, "persistence", jsonx_new_str(IMPLIED_PERSISTENCE, &oom), &oom);
        jsonx_put(r, "spec", s, &oom);
    }
    return jsonx_done(r, oom);
}

/* Check the object's envelope: an object of kind RedisCluster in one of the two versions,
 * with a metadata object whose annotations (when present) are an object. *version gets
 * the apiVersion. */
static conv_rc_t check_object(json_object *obj, const char **version, char *err, size_t errlen)
{
    if (!obj || !json_object_is_type(obj, json_type_object))
        return refuse(err, errlen, "must be a RedisCluster object, have %s", review_type_name(obj));
    const char *kind = jsonx_str(obj, "kind"), *av = jsonx_str(obj, "apiVersion");
    if (!kind || strcmp(kind, KIND))
        return refuse(err, errlen, "kind: must be " KIND ", have %s%.64s%s", kind ? "\"" : "",
                      kind ? kind : review_type_name(jsonx_get(obj, "kind")), kind ? "\"" : "");
    if (!av || (strcmp(av, CONVERSION_V1ALPHA1) && strcmp(av, CONVERSION_V1)))
        return refuse(err, errlen, "apiVersion %s%.64s%s: must be " CONVERSION_V1ALPHA1 " or " CONVERSION_V1,
                      av ? "\"" : "", av ? av : review_type_name(jsonx_get(obj, "apiVersion")), av ? "\"" : "");
    json_object *meta = jsonx_get(obj, "metadata"), *ann;
    if (!meta || !json_object_is_type(meta, json_type_object))
        return refuse(err, errlen, "metadata: required, an object, have %s", review_type_name(meta));
    if ((ann = jsonx_get(meta, "annotations")) && !json_object_is_type(ann, json_type_object))
        return refuse(err, errlen, "metadata.annotations: must be an object, have %s", review_type_name(ann));
    json_object *a;
    if (has(ann, CONVERSION_ANNOTATION, &a) && !json_object_is_type(a, json_type_string))
        return refuse(err, errlen, "metadata.annotations[\"" CONVERSION_ANNOTATION "\"]: must be a string, have %s",
                      review_type_name(a));
    *version = av;
    return CONV_OK;
}

/* ---- v1 -> v1alpha1 ------------------------------------------------------------------ */

/* Move every v1-only field present in from into to (its parents in to created as
 * objects) and delete it from from: the first step down (object -> record) and the last
 * but one up (record -> object). CONV_OK; CONV_OOM; CONV_REFUSED (why in err) when a
 * parent in to is there but not an object. */
static conv_rc_t move_v1_fields(json_object *from, json_object *to, char *err, size_t errlen)
{
    for (size_t i = 0; i < N_V1_ONLY; i++) {
        const char *const *path = CONVERSION_V1_ONLY[i];
        json_object *src = parent_of(from, path), *v;
        if (!has(src, leaf_of(path), &v))
            continue;
        int bad;
        json_object *dst = parent_make(to, path, &bad);
        if (!dst && bad < 0)
            return CONV_OOM;
        if (!dst) {
            char where[128], field[128];
            const char *prefix[PATH_PARTS] = {NULL};
            for (int k = 0; k <= bad; k++)
                prefix[k] = path[k];
            path_str(prefix, where, sizeof(where));
            path_str(path, field, sizeof(field));
            return refuse(err, errlen, "%s: must be an object to hold %s, have %s", where, field,
                          review_type_name(jsonx_get(parent_of(to, prefix), path[bad])));
        }
        if (json_object_object_add(dst, leaf_of(path), json_object_get(v))) {
            json_object_put(v);
            return CONV_OOM;
        }
        json_object_object_del(src, leaf_of(path));
    }
    return CONV_OK;
}

/* The last step of both directions: metadata.annotations[CONVERSION_ANNOTATION] = value
 * (taken; NULL: the annotations are left alone), the map created in meta when ann is
 * NULL; then apiVersion = api_version. 0, or -1 when out of memory (value freed). */
static int finish(json_object *obj, json_object *meta, json_object *ann, json_object *value,
                  const char *api_version)
{
    if (value) {
        if (!ann && (!(ann = json_object_new_object()) || json_object_object_add(meta, "annotations", ann))) {
            json_object_put(ann);
            json_object_put(value);
            return -1;
        }
        if (json_object_object_add(ann, CONVERSION_ANNOTATION, value)) {
            json_object_put(value);
            return -1;
        }
    }
    json_object *av = json_object_new_string(api_version);
    if (!av || json_object_object_add(obj, "apiVersion", av)) {
        json_object_put(av);
        return -1;
    }
    return 0;
}

static conv_rc_t to_v1alpha1(json_object *obj, char *err, size_t errlen)
{
    conv_rc_t rc = CONV_OOM;
    json_object *rec = json_object_new_object(), *implied = NULL, *record_text = NULL;
    if (!rec)
        goto out;
    if ((rc = move_v1_fields(obj, rec, err, errlen)) != CONV_OK)
        goto out;
    rc = CONV_OOM;
    json_object *meta = jsonx_get(obj, "metadata"), *ann = jsonx_get(meta, "annotations"), *a;
    if (has(ann, CONVERSION_ANNOTATION, &a)) { /* a v1 object carrying it: keep its value */
        if (json_object_object_add(rec, "annotation", json_object_get(a))) {
            json_object_put(a);
            goto out;
        }
        json_object_object_del(ann, CONVERSION_ANNOTATION);
    }
    if (!(implied = implied_record(obj)))
        goto out;
    if (!json_object_equal(rec, implied)) {
        const char *text = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || !(record_text = json_object_new_string(text)))
            goto out;
    }
    if (finish(obj, meta, ann, record_text, CONVERSION_V1ALPHA1))
        goto out;
    rc = CONV_OK;
out:
    json_object_put(rec);
    json_object_put(implied);
    return rc;
}

/* ---- v1alpha1 -> v1 ------------------------------------------------------------------ */

/* Parse the annotation's text as a record (an object, bounded). */
static conv_rc_t parse_record(const char *text, size_t len, json_object **out, char *err, size_t errlen)
{
    *out = NULL;
    if (len > CONVERSION_MAX_RECORD)
        return refuse(err, errlen, "metadata.annotations[\"" CONVERSION_ANNOTATION "\"]: %zu bytes, more than %d",
                      len, CONVERSION_MAX_RECORD);
    json_object *r = NULL;
    char why[256];
    jsonx_parse_t pr = jsonx_parse_ex(NULL, text, len, CONVERSION_MAX_DEPTH, &r, NULL, why, sizeof(why));
    if (pr == JSONX_NO_MEMORY)
        return CONV_OOM;
    if (pr)
        return refuse(err, errlen, "metadata.annotations[\"" CONVERSION_ANNOTATION "\"]: not JSON: %s", why);
    if (!json_object_is_type(r, json_type_object)) {
        conv_rc_t rc = refuse(err, errlen,
                              "metadata.annotations[\"" CONVERSION_ANNOTATION "\"]: must be a JSON object, have %s",
                              review_type_name(r));
        json_object_put(r);
        return rc;
    }
    *out = r;
    return CONV_OK;
}

/* After the v1-only fields were taken out of rec's member `top`, nothing but empty
 * objects may be left in it: anything else is not a v1-only field. prefix names the
 * member for the message. */
static conv_rc_t check_leftover(json_object *o, char *prefix, size_t plen, size_t cap, char *err, size_t errlen)
{
    json_object_object_foreach(o, key, val)
    {
        int n = snprintf(prefix + plen, cap - plen, ".%s", key);
        size_t nlen = n < 0 ? plen : plen + (size_t)n < cap ? plen + (size_t)n : cap - 1;
        if (!val || !json_object_is_type(val, json_type_object))
            return refuse(err, errlen, "metadata.annotations[\"" CONVERSION_ANNOTATION "\"]: %s: not a field "
                                       "that only v1 has",
                          prefix);
        conv_rc_t rc = check_leftover(val, prefix, nlen, cap, err, errlen);
        prefix[plen] = '\0';
        if (rc)
            return rc;
    }
    return CONV_OK;
}

static conv_rc_t to_v1(json_object *obj, char *err, size_t errlen)
{
    conv_rc_t rc = CONV_OOM;
    json_object *meta = jsonx_get(obj, "metadata"), *ann = jsonx_get(meta, "annotations"), *a, *rec = NULL;
    if (has(ann, CONVERSION_ANNOTATION, &a)) {
        if ((rc = parse_record(json_object_get_string(a), (size_t)json_object_get_string_len(a), &rec, err, errlen)))
            goto out;
        rc = CONV_OOM;
        json_object_object_del(ann, CONVERSION_ANNOTATION);
        if (json_object_object_length(ann) == 0) {
            json_object_object_del(meta, "annotations");
            ann = NULL;
        }
    } else if (!(rec = implied_record(obj))) {
        goto out;
    }
    json_object_object_foreach(rec, key, val)
    {
        if (strcmp(key, "spec") && strcmp(key, "status") && strcmp(key, "annotation")) {
            rc = refuse(err, errlen, "metadata.annotations[\"" CONVERSION_ANNOTATION "\"]: %.64s: not a member of "
                                     "the record (spec, status, annotation)", key);
            goto out;
        }
        if (!strcmp(key, "annotation") ? !val || !json_object_is_type(val, json_type_string)
                                       : !val || !json_object_is_type(val, json_type_object)) {
            rc = refuse(err, errlen, "metadata.annotations[\"" CONVERSION_ANNOTATION "\"]: %s: must be %s, have %s",
                        key, strcmp(key, "annotation") ? "an object" : "a string", review_type_name(val));
            goto out;
        }
    }
    if ((rc = move_v1_fields(rec, obj, err, errlen)) != CONV_OK)
        goto out;
    char prefix[256];
    static const char *const tops[] = {"spec", "status"};
    for (size_t i = 0; i < 2; i++) {
        json_object *t = jsonx_get(rec, tops[i]);
        review_copy_cut(prefix, sizeof(prefix), tops[i]);
        if (t && (rc = check_leftover(t, prefix, strlen(prefix), sizeof(prefix), err, errlen)))
            goto out;
    }
    rc = CONV_OOM;
    if (finish(obj, meta, ann, has(rec, "annotation", &a) ? json_object_get(a) : NULL, CONVERSION_V1))
        goto out;
    rc = CONV_OK;
out:
    json_object_put(rec);
    return rc;
}

/* Convert obj in place to desired. *direction: 1 up, -1 down, 0 same. On a refusal or
 * out of memory obj may be half converted: the caller drops it. */
static conv_rc_t convert_in_place(json_object *obj, const char *desired, int *direction, char *err, size_t errlen)
{
    const char *have = NULL;
    conv_rc_t rc = check_object(obj, &have, err, errlen);
    if (rc)
        return rc;
    if (!strcmp(have, desired)) {
        *direction = 0;
        return CONV_OK;
    }
    if (!strcmp(desired, CONVERSION_V1)) {
        *direction = 1;
        return to_v1(obj, err, errlen);
    }
    *direction = -1;
    return to_v1alpha1(obj, err, errlen);
}

static int desired_known(const char *d)
{
    return d && (!strcmp(d, CONVERSION_V1) || !strcmp(d, CONVERSION_V1ALPHA1));
}

int conversion_convert(const json_object *obj, const char *desired, json_object **out, char *err, size_t errlen)
{
    json_object *copy = NULL;
    int direction;
    *out = NULL;
    if (errlen)
        err[0] = '\0';
    if (!desired_known(desired)) {
        refuse(err, errlen, "desiredAPIVersion %s%.64s%s: must be " CONVERSION_V1ALPHA1 " or " CONVERSION_V1,
               desired ? "\"" : "", desired ? desired : "null", desired ? "\"" : "");
        return -1;
    }
    if (obj && json_object_deep_copy((json_object *)obj, &copy, NULL)) {
        refuse(err, errlen, "out of memory");
        return -1;
    }
    conv_rc_t rc = convert_in_place(copy, desired, &direction, err, errlen);
    if (rc) {
        if (rc == CONV_OOM)
            refuse(err, errlen, "out of memory");
        json_object_put(copy);
        return -1;
    }
    *out = copy;
    return 0;
}

/* ---- The review ------------------------------------------------------------------------ */

typedef struct {
    const char *api_version; /* echoed */
    const char *uid;         /* "" until known */
    int bad, failed, oom;
    buf_t message;
} review_t;

static void fail(review_t *r, int bad, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(review_t *r, int bad, const char *fmt, ...)
{
    char tmp[CONVERSION_MESSAGE_CAP], cut[CONVERSION_MESSAGE_CAP];
    BUF_FORMAT_VA(tmp, sizeof(tmp), fmt);
    review_copy_cut(cut, sizeof(cut) - 1, tmp); /* the cap, at a character boundary */
    r->bad = bad;
    r->failed = 1;
    buf_reset(&r->message);
    buf_puts(&r->message, cut);
}

/* Check the envelope and return request, or NULL (a bad request). */
static json_object *envelope(review_t *r, json_object *root)
{
    if (!json_object_is_type(root, json_type_object)) {
        fail(r, 1, "body: must be a ConversionReview object, have %s", review_type_name(root));
        return NULL;
    }
    json_object *request = jsonx_get(root, "request");
    const char *uid = jsonx_str(request, "uid"), *av = jsonx_str(root, "apiVersion"), *kind = jsonx_str(root, "kind");
    if (uid && *uid)
        r->uid = uid;
    if (av && (!strcmp(av, "apiextensions.k8s.io/v1") || !strcmp(av, "apiextensions.k8s.io/v1beta1")))
        r->api_version = av;
    else {
        fail(r, 1, "apiVersion: must be apiextensions.k8s.io/v1");
        return NULL;
    }
    if (!kind || strcmp(kind, "ConversionReview")) {
        fail(r, 1, "kind: must be ConversionReview");
        return NULL;
    }
    if (!request || !json_object_is_type(request, json_type_object)) {
        fail(r, 1, "request: required, an object, have %s", review_type_name(request));
        return NULL;
    }
    if (!uid || !*uid) {
        fail(r, 1, "request.uid: required, a non-empty string");
        return NULL;
    }
    json_object *objects = jsonx_get(request, "objects");
    if (!objects || !json_object_is_type(objects, json_type_array)) {
        fail(r, 1, "request.objects: required, an array, have %s", review_type_name(objects));
        return NULL;
    }
    return request;
}

/* Convert every object of request in place; on success *converted is a new array of
 * them in order. */
static void convert_all(review_t *r, json_object *request, json_object **converted, conversion_outcome_t *o)
{
    const char *desired = jsonx_str(request, "desiredAPIVersion");
    json_object *objects = jsonx_get(request, "objects");
    size_t n = json_object_array_length(objects);
    o->objects = n;
    review_copy_cut(o->desired, sizeof(o->desired), desired);
    if (!desired_known(desired)) {
        fail(r, 0, "desiredAPIVersion %s%.64s%s: this webhook converts RedisClusters to " CONVERSION_V1ALPHA1
                   " or " CONVERSION_V1,
             desired ? "\"" : "", desired ? desired : review_type_name(jsonx_get(request, "desiredAPIVersion")),
             desired ? "\"" : "");
        return;
    }
    json_object *out = json_object_new_array_ext((int)(n < 1024 ? n : 1024));
    if (!out) {
        r->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *obj = json_object_array_get_idx(objects, i);
        char err[1024] = "";
        int direction = 0;
        conv_rc_t rc = convert_in_place(obj, desired, &direction, err, sizeof(err));
        if (rc == CONV_OOM) {
            r->oom = 1;
            break;
        }
        if (rc) {
            json_object *meta = jsonx_get(obj, "metadata");
            const char *ns = jsonx_str(meta, "namespace"), *name = jsonx_str(meta, "name");
            if (name)
                fail(r, 0, "objects[%zu] (%.63s%s%.253s): %s", i, ns ? ns : "", ns ? "/" : "", name, err);
            else
                fail(r, 0, "objects[%zu]: %s", i, err);
            break;
        }
        if (json_object_array_add(out, json_object_get(obj))) {
            json_object_put(obj);
            r->oom = 1;
            break;
        }
        if (direction > 0)
            o->up++;
        else if (direction < 0)
            o->down++;
        else
            o->same++;
    }
    if (r->failed || r->oom) {
        json_object_put(out);
        o->up = o->down = o->same = 0;
        return;
    }
    *converted = out;
}

static char *render(review_t *r, json_object *converted)
{
    int oom = 0;
    char *text = NULL;
    json_object *root = jsonx_new_obj(&oom), *resp = jsonx_new_obj(&oom), *result = jsonx_new_obj(&oom);
    jsonx_put(root, "apiVersion", jsonx_new_str(r->api_version, &oom), &oom);
    jsonx_put(root, "kind", jsonx_new_str("ConversionReview", &oom), &oom);
    jsonx_put(resp, "uid", jsonx_new_str(r->uid, &oom), &oom);
    jsonx_put(resp, "convertedObjects", converted ? json_object_get(converted) : jsonx_new_arr(&oom), &oom);
    jsonx_put(result, "status", jsonx_new_str(r->failed ? "Failure" : "Success", &oom), &oom);
    if (r->failed) {
        jsonx_put(result, "message", jsonx_new_str(buf_str(&r->message), &oom), &oom);
        jsonx_put(result, "reason", jsonx_new_str(r->bad ? "BadRequest" : "Invalid", &oom), &oom);
        jsonx_put(result, "code", jsonx_new_int(r->bad ? 400 : 422, &oom), &oom);
    }
    jsonx_put(resp, "result", result, &oom);
    jsonx_put(root, "response", resp, &oom);
    if (!oom) {
        const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        text = s ? strdup(s) : NULL;
    }
    json_object_put(root);
    return text;
}

int conversion_review(const char *body, size_t len, char **response_json_out, conversion_outcome_t *outcome)
{
    conversion_outcome_t local;
    conversion_outcome_t *o = outcome ? outcome : &local;
    memset(o, 0, sizeof(*o));
    review_t r = {.api_version = "apiextensions.k8s.io/v1", .uid = ""};
    buf_init(&r.message, CONVERSION_MESSAGE_CAP);
    char msg[320];
    json_object *converted = NULL, *request = NULL;
    json_object *root =
        review_parse_body(body, len, CONVERSION_MAX_DEPTH, "a ConversionReview", &r.oom, msg, sizeof(msg));
    if (msg[0])
        fail(&r, 1, "%s", msg);
    else if (root)
        request = envelope(&r, root);
    if (request)
        convert_all(&r, request, &converted, o);
    o->bad_request = r.bad;
    o->success = !r.failed;
    o->code = r.failed ? (r.bad ? 400 : 422) : 200;
    review_copy_cut(o->uid, sizeof(o->uid), r.uid);
    if (r.failed)
        review_copy_cut(o->message, sizeof(o->message), buf_str(&r.message));
    char *text = r.oom ? NULL : render(&r, converted);
    json_object_put(converted);
    json_object_put(root); /* last: r's strings point into it */
    buf_free(&r.message);
    *response_json_out = text;
    if (!text)
        return -1;
    return r.bad ? 1 : 0;
}

/* ---- Metrics ----------------------------------------------------------------------------- */

static metric_family_t *m_requests(void)
{
    return metrics_counter(metrics_default(), "webhook_conversion_requests_total",
                           "ConversionReviews answered, by result (Success, Failure, BadRequest).", "result");
}

static metric_family_t *m_objects(void)
{
    return metrics_counter(metrics_default(), "webhook_conversion_objects_total",
                           "RedisCluster objects converted, by version from and to.", "from,to");
}

void conversion_metrics_register(void)
{
    static const char *const results[] = {"Success", "Failure", "BadRequest"};
    metric_family_t *req = m_requests(), *obj = m_objects();
    for (size_t i = 0; i < 3; i++)
        metric_counter_add(req, METRIC_LABELS(results[i]), 0);
    metric_counter_add(obj, METRIC_LABELS("v1alpha1", "v1"), 0);
    metric_counter_add(obj, METRIC_LABELS("v1", "v1alpha1"), 0);
}

void conversion_metrics_observe(int rc, const conversion_outcome_t *o)
{
    if (rc < 0 || !o)
        return;
    metric_counter_add(m_requests(),
                       METRIC_LABELS(o->bad_request ? "BadRequest"
                                     : o->success   ? "Success"
                                                    : "Failure"),
                       1);
    if (o->up)
        metric_counter_add(m_objects(), METRIC_LABELS("v1alpha1", "v1"), (double)o->up);
    if (o->down)
        metric_counter_add(m_objects(), METRIC_LABELS("v1", "v1alpha1"), (double)o->down);
}
