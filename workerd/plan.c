/* plan: the pure core of a RedisCluster reconcile. See plan.h for the contract. */
#include "plan.h"

#include "jsonx.h"
#include "clock.h"
#include "rdc_spec.h"
#include "render.h"
#include "redisexec.h"
#include "runtimecfg.h"
#include "status_policy.h"
#include "topology.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A finalizer, five children, a label and a Redis command per pod (at most 10), a status. */
#define PLAN_MAX_ACTIONS 96
#define PLAN_MAX_EVENTS 64
#define MESSAGE_CAP 2048 /* a condition or event message never grows past this */
#define VALUE_SHOWN 64   /* bytes of a user's value quoted in a message */

#define CT_APPLY "application/apply-patch+yaml"
#define CT_MERGE "application/merge-patch+json"
#define CT_JSON "application/json"

typedef struct {
    plan_action_t pub;
    char *ns, *name, *path, *why; /* what pub's strings point to */
    char *ip, **argv_s; /* PLAN_REDIS: argc strings */
    const char **argv;
} action_slot_t;

typedef struct {
    plan_event_t pub;
    char *message;
} event_slot_t;

struct plan {
    action_slot_t actions[PLAN_MAX_ACTIONS];
    size_t n_actions;
    event_slot_t events[PLAN_MAX_EVENTS];
    size_t n_events;
    json_object *status; /* computed status, or NULL */
    char *error;         /* decision 1, or NULL */
    int64_t requeue_after_ns;
    int64_t status_held_ns; /* STATUS WRITE POLICY: a changed status not written, held this long */
    int oom;             /* an allocation failed: plan_compute returns NULL */
    int wants_diagnosis; /* plan_wants_diagnosis */
    char *storage_class; /* plan_storage_class_to_check, or NULL */
    char *selector;      /* plan_pod_selector, or NULL */
};

/* ---- Reading untrusted JSON --------------------------------------------------------- */

/* The string of a string value. json_object_get_string takes a non-const object, but on a
 * string it only reads, so the inputs stay untouched. */
static const char *str_of(const json_object *v)
{
    return json_object_get_string((json_object *)v);
}

/* o[key] as a non-empty string, or NULL. */
static const char *jstr(const json_object *o, const char *key)
{
    const char *s;
    return jsonx_string(o, key, &s) == JSONX_OK && *s ? s : NULL;
}

/* o[key] as an integer, or dflt when absent or not an integer. */
static int64_t jint(const json_object *o, const char *key, int64_t dflt)
{
    const json_object *v = jsonx_get(o, key);
    return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : dflt;
}

/* ---- Building the plan --------------------------------------------------------------- */

/* Append one path segment, percent-encoding all but unreserved characters, so that no
 * name can change the shape of the request path. Returns 0, or -1 when b refused. */
static int put_segment(buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = buf_puts(b, "/");
    for (; *s && !rc; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '.' || c == '_' || c == '~')
            rc = buf_append(b, s, 1);
        else
            rc = buf_printf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
    }
    return rc;
}

/* The request path of an action (see plan.h), or NULL when out of memory. */
static char *request_path(const plan_action_t *a)
{
    buf_t path;
    buf_init(&path, 0);
    int rc = strcmp(a->group_version, "v1") ? buf_printf(&path, "/apis/%s", a->group_version)
                                            : buf_puts(&path, "/api/v1");
    rc = rc || buf_puts(&path, "/namespaces") || put_segment(&path, a->ns) || put_segment(&path, a->resource) ||
         (a->kind != PLAN_CREATE && put_segment(&path, a->name)) ||
         (a->subresource && put_segment(&path, a->subresource)) ||
         ((a->kind == PLAN_APPLY || a->kind == PLAN_UPDATE_STATUS || a->kind == PLAN_AUTH_RECORD) &&
          buf_puts(&path, "?fieldManager=" RENDER_FIELD_MANAGER "&force=true")) ||
         ((a->kind == PLAN_CREATE || a->kind == PLAN_REPLACE) &&
          buf_puts(&path, "?fieldManager=" RENDER_FIELD_MANAGER));
    if (rc) {
        buf_free(&path);
        return NULL;
    }
    return buf_detach(&path);
}

static char *dup_or_oom(plan_t *p, const char *s)
{
    char *d = strdup(s);
    if (!d)
        p->oom = 1;
    return d;
}

/* Add an action, taking body. Returns its index, or -1 when out of memory. */
static int add_action(plan_t *p, plan_action_kind_t kind, const char *group_version, const char *resource,
                      const char *ns, const char *name, json_object *body, const char *why)
{
    assert(p->n_actions < PLAN_MAX_ACTIONS);
    action_slot_t *a = &p->actions[p->n_actions];
    memset(a, 0, sizeof(*a));
    a->pub.kind = kind;
    a->pub.group_version = group_version;
    a->pub.resource = resource;
    a->pub.body = body;
    p->n_actions++; /* from here plan_destroy frees what the slot holds */
    a->ns = dup_or_oom(p, ns);
    a->name = dup_or_oom(p, name);
    a->why = dup_or_oom(p, why);
    a->pub.ns = a->ns;
    a->pub.name = a->name;
    a->pub.why = a->why;
    if (kind != PLAN_CLEANUP && kind != PLAN_REDIS && !p->oom) {
        int apply = kind == PLAN_APPLY || kind == PLAN_UPDATE_STATUS || kind == PLAN_AUTH_RECORD;
        int plain = kind == PLAN_CREATE || kind == PLAN_REPLACE || kind == PLAN_DELETE;
        a->pub.method = kind == PLAN_CREATE    ? "POST"
                        : kind == PLAN_REPLACE ? "PUT"
                        : kind == PLAN_DELETE  ? "DELETE"
                                               : "PATCH";
        a->pub.content_type = plain ? CT_JSON : apply ? CT_APPLY : CT_MERGE;
        a->pub.subresource = kind == PLAN_UPDATE_STATUS ? "status" : NULL;
        a->pub.field_manager =
            apply || kind == PLAN_CREATE || kind == PLAN_REPLACE ? RENDER_FIELD_MANAGER : NULL;
        a->path = request_path(&a->pub);
        a->pub.path = a->path;
        if (!a->path)
            p->oom = 1;
    }
    if (!body && kind != PLAN_CLEANUP && kind != PLAN_REDIS)
        p->oom = 1;
    return p->oom ? -1 : (int)(p->n_actions - 1);
}

/* Add a PLAN_REDIS action: argv (argc <= PLAN_REDIS_MAX_ARGS) on pod at ip. Returns its index, or -1 when
 * out of memory. */
static int add_redis_action(plan_t *p, const char *ns, const char *pod, const char *ip, int argc,
                            const char *const *argv, const char *why)
{
    int i = add_action(p, PLAN_REDIS, "v1", "pods", ns, pod, NULL, why);
    if (i < 0)
        return -1;
    action_slot_t *a = &p->actions[i];
    a->ip = dup_or_oom(p, ip);
    a->pub.ip = a->ip;
    assert(argc >= 1 && argc <= PLAN_REDIS_MAX_ARGS);
    a->argv_s = calloc((size_t)argc, sizeof(*a->argv_s));
    a->argv = calloc((size_t)argc, sizeof(*a->argv));
    if (!a->argv_s || !a->argv) {
        p->oom = 1;
        return -1;
    }
    a->pub.argc = argc; /* from here plan_destroy frees argc strings */
    for (int k = 0; k < argc; k++) {
        a->argv_s[k] = dup_or_oom(p, argv[k]);
        a->argv[k] = a->argv_s[k];
    }
    a->pub.argv = a->argv;
    return p->oom ? -1 : i;
}

/* Add an event reporting action (or -1). */
static void add_event(plan_t *p, const char *type, const char *reason, int action, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add_event(plan_t *p, const char *type, const char *reason, int action, const char *fmt, ...)
{
    assert(p->n_events < PLAN_MAX_EVENTS);
    buf_t m;
    buf_init(&m, 2 * MESSAGE_CAP);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&m, fmt, ap); /* a message over the cap stays empty rather than failing */
    va_end(ap);
    event_slot_t *e = &p->events[p->n_events++];
    e->message = buf_detach(&m);
    if (!e->message)
        p->oom = 1;
    e->pub.type = type;
    e->pub.reason = reason;
    e->pub.message = e->message;
    e->pub.action = action;
}

/* ---- Managed-field comparison -------------------------------------------------------- */

/* Shorten b to its first len bytes (len <= b->len). */
static void cut_to(buf_t *b, size_t len)
{
    b->len = len;
    if (b->data)
        b->data[len] = '\0';
}

static const char *type_name(const json_object *v)
{
    return v ? json_type_to_name(json_object_get_type(v)) : "nothing";
}

/* Record the first difference: "<path>: <detail>". Always returns 0 (no match). */
static int differ(buf_t *where, const buf_t *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int differ(buf_t *where, const buf_t *path, const char *fmt, ...)
{
    if (!where)
        return 0;
    buf_printf(where, "%s: ", path->len ? buf_str(path) : "(object)");
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(where, fmt, ap);
    va_end(ap);
    return 0;
}

/* The key that identifies elements of a desired array: "uid" when every element is an
 * object with a string uid, else "name" likewise, else NULL (match by position). */
static const char *array_key(const json_object *d)
{
    static const char *const keys[] = {"uid", "name"};
    size_t n = json_object_array_length(d);
    for (size_t k = 0; k < 2 && n; k++) {
        size_t i = 0;
        for (; i < n; i++) {
            if (!jstr(json_object_array_get_idx(d, i), keys[k]))
                break;
        }
        if (i == n)
            return keys[k];
    }
    return NULL;
}

static int subset_at(const json_object *d, const json_object *o, int quantity, buf_t *path, buf_t *where);

/* 1 when two apiVersions name the same group ("cache.example.com/v1" and
 * "cache.example.com/v1alpha1"; "v1" and "v1" are the core group). */
static int same_group(const char *a, const char *b)
{
    const char *sa = strchr(a, '/'), *sb = strchr(b, '/');
    size_t la = sa ? (size_t)(sa - a) : 0, lb = sb ? (size_t)(sb - b) : 0;
    return la == lb && strncmp(a, b, la) == 0;
}

/* An owner reference names its owner by uid; its apiVersion may be any version the
 * owner's group serves: the references an operator of cache.example.com/v1alpha1 wrote
 * are still right after the upgrade to v1, and rewriting them would be one apply per
 * child for nothing. path is at "...ownerReferences[<uid>].apiVersion". */
static int owner_ref_version_ok(const json_object *d, const json_object *o, const buf_t *path)
{
    return strstr(buf_str(path), "ownerReferences[") && o && json_object_is_type(d, json_type_string) &&
           json_object_is_type(o, json_type_string) && same_group(str_of(d), str_of(o));
}

static int subset_object(const json_object *d, const json_object *o, int quantity, buf_t *path, buf_t *where)
{
    if (!o || !json_object_is_type(o, json_type_object))
        return differ(where, path, "want an object, have %s", type_name(o));
    size_t mark = path->len;
    json_object_object_foreach((json_object *)d, key, dv)
    {
        buf_printf(path, mark ? ".%s" : "%s", key);
        json_object *ov = NULL;
        json_object_object_get_ex(o, key, &ov);
        int q = quantity || !strcmp(key, "requests") || !strcmp(key, "limits");
        int ok = (!strcmp(key, "apiVersion") && owner_ref_version_ok(dv, ov, path)) ||
                 subset_at(dv, ov, q, path, where);
        cut_to(path, mark);
        if (!ok)
            return 0;
    }
    return 1;
}

static int subset_array(const json_object *d, const json_object *o, int quantity, buf_t *path, buf_t *where)
{
    if (!o || !json_object_is_type(o, json_type_array))
        return differ(where, path, "want an array, have %s", type_name(o));
    size_t nd = json_object_array_length(d), no = json_object_array_length(o);
    const char *key = array_key(d);
    if (!key && nd != no)
        return differ(where, path, "want %zu elements, have %zu", nd, no);
    size_t mark = path->len;
    for (size_t i = 0; i < nd; i++) {
        const json_object *de = json_object_array_get_idx(d, i), *oe = NULL;
        if (key) {
            const char *want = jstr(de, key);
            buf_printf(path, "[%s]", want);
            for (size_t j = 0; j < no && !oe; j++) {
                const json_object *cand = json_object_array_get_idx(o, j);
                const char *have = jstr(cand, key);
                if (have && !strcmp(have, want))
                    oe = cand;
            }
        } else {
            buf_printf(path, "[%zu]", i);
            oe = json_object_array_get_idx(o, i);
        }
        int ok = oe ? subset_at(de, oe, quantity, path, where) : differ(where, path, "missing");
        cut_to(path, mark);
        if (!ok)
            return 0;
    }
    return 1;
}

static int subset_at(const json_object *d, const json_object *o, int quantity, buf_t *path, buf_t *where)
{
    if (o && json_object_is_type(o, json_type_null))
        o = NULL;
    switch (d ? json_object_get_type(d) : json_type_null) {
    case json_type_null:
        return o ? differ(where, path, "want nothing, have %s", type_name(o)) : 1;
    case json_type_object:
        return subset_object(d, o, quantity, path, where);
    case json_type_array:
        return subset_array(d, o, quantity, path, where);
    case json_type_string: {
        if (!o || !json_object_is_type(o, json_type_string))
            return differ(where, path, "want a string, have %s", type_name(o));
        const char *ds = str_of(d), *os = str_of(o);
        if (!strcmp(ds, os) || (quantity && render_quantity_equal(ds, os)))
            return 1;
        if (strlen(ds) > VALUE_SHOWN || strlen(os) > VALUE_SHOWN)
            return differ(where, path, "differs");
        return differ(where, path, "want \"%s\", have \"%s\"", ds, os);
    }
    case json_type_int:
    case json_type_double: {
        if (!o || !(json_object_is_type(o, json_type_int) || json_object_is_type(o, json_type_double)))
            return differ(where, path, "want a number, have %s", type_name(o));
        int same = json_object_is_type(d, json_type_int) && json_object_is_type(o, json_type_int)
                       ? json_object_get_int64(d) == json_object_get_int64(o)
                       : json_object_get_double(d) == json_object_get_double(o);
        if (same)
            return 1;
        if (json_object_is_type(d, json_type_int) && json_object_is_type(o, json_type_int))
            return differ(where, path, "want %lld, have %lld", (long long)json_object_get_int64(d),
                          (long long)json_object_get_int64(o));
        return differ(where, path, "want %g, have %g", json_object_get_double(d), json_object_get_double(o));
    }
    case json_type_boolean:
        if (!o || !json_object_is_type(o, json_type_boolean))
            return differ(where, path, "want a boolean, have %s", type_name(o));
        if (!json_object_get_boolean(d) == !json_object_get_boolean(o))
            return 1;
        return differ(where, path, "want %s", json_object_get_boolean(d) ? "true" : "false");
    }
    return differ(where, path, "cannot compare");
}

/* Compare with a path prefix (the desired value's place in its object). */
static int subset_prefixed(const json_object *d, const json_object *o, const char *prefix, buf_t *where)
{
    buf_t path;
    buf_init(&path, 4096);
    buf_puts(&path, prefix);
    int ok = subset_at(d, o, 0, &path, where);
    buf_free(&path);
    return ok;
}

int plan_json_subset(const json_object *desired, const json_object *observed, buf_t *where)
{
    return subset_prefixed(desired, observed, "", where);
}

/* ---- Spec validation -------------------------------------------------------------------- */

/* Decision 4's spec rules are rdc_spec_validate's, the ones the admission webhook applies,
 * so the two cannot disagree. Appends every problem to message as the API server words
 * field errors ("spec.size: Invalid value: 11: must be between 1 and 10", several as
 * "[..., ...]"). Returns how many there are, or -1 when out of memory. */
static int spec_problems(const json_object *rc, buf_t *message)
{
    rdc_field_errors_t *errs = rdc_field_errors_new();
    if (!errs)
        return -1;
    size_t n = rdc_spec_validate(rc, errs);
    int oom = rdc_field_errors_oom(errs) || (n && rdc_field_errors_format(errs, message));
    rdc_field_errors_destroy(&errs);
    return oom ? -1 : (int)n;
}

/* Fill in from a spec that rdc_spec_validate accepted (an optional string that is null or
 * "" is unset). An unset version, maxmemoryPolicy or storage size takes the default the
 * defaulting webhook would have written (rdc_spec.h), so a cluster runs the same with or
 * without the webhook. The strings in in point into rc, image or static storage. Returns
 * 0, or -1 when out of memory. */
static int spec_input(const json_object *rc, render_input_t *in, buf_t *image)
{
    const json_object *spec = jsonx_get(rc, "spec");
    const json_object *config = jsonx_get(spec, "config"), *storage = jsonx_get(spec, "storage");
    in->size = (int)jint(spec, "size", 0);
    in->spec = spec;
    in->maxmemory = jstr(config, "maxmemory");
    in->maxmemory_policy = jstr(config, "maxmemoryPolicy");
    if (!in->maxmemory_policy)
        in->maxmemory_policy = RDC_SPEC_DEFAULT_MAXMEMORY_POLICY;
    in->storage_size = jstr(storage, "size");
    if (!in->storage_size)
        in->storage_size = RDC_SPEC_DEFAULT_STORAGE_SIZE;
    in->storage_class = jstr(storage, "storageClass");
    /* No mode is Standalone: the v1 schema defaults it to Replication on every object the
     * API server hands out, and v1alpha1 clusters are converted to Standalone. */
    const char *mode = jstr(spec, "mode");
    in->replication = mode && !strcmp(mode, "Replication");
    const json_object *sref = jsonx_get(jsonx_get(spec, "auth"), "secretRef");
    in->auth_secret = jstr(sref, "name");
    in->auth_key = jstr(sref, "key");
    if (!in->auth_key)
        in->auth_key = RENDER_AUTH_DEFAULT_KEY;
    const char *version = jstr(spec, "version");
    /* The version is the tag of an image that names none (render_image_ref ignores it
     * otherwise). At most RDC_SPEC_IMAGE_MAX bytes, ':' and a 128-byte tag: only memory
     * can fail. */
    if (render_image_ref(jstr(spec, "image"), version ? version : RDC_SPEC_DEFAULT_VERSION, image))
        return -1;
    in->image = buf_str(image);
    return 0;
}

/* ---- Reconcile context ---------------------------------------------------------------- */

typedef struct {
    plan_t *plan;
    const json_object *rc;
    const char *name, *ns, *uid;
    int64_t generation; /* -1 when metadata.generation is absent */
    int64_t now;
    render_input_t in;
    const char *failed_reason; /* InvalidSpec / InvalidObject, or NULL */
    buf_t invalid;             /* why, when failed_reason is set */
    const char *degraded_reason; /* ImmutableFieldChanged / OwnerConflict, or NULL */
    buf_t degraded;
    int owner_conflict;      /* an observed child is not ours */
    int sts_ours;            /* the observed StatefulSet is ours (its status counts) */
    int sts_replicas_change; /* this plan changes the StatefulSet's replicas */
    int sts_template_change; /* ... or its pod template */
    int sts_created;         /* this plan creates the StatefulSet */
    const plan_observed_t *more; /* what the caller read on request, or NULL */
    const json_object *pdb;  /* the observed PodDisruptionBudget, or NULL */
    const char *diag_reason; /* DIAGNOSIS: the cause found, or NULL */
    buf_t diag;              /* its message */
    topo_t *topo;            /* REPLICATION: the decisions, or NULL (Standalone, invalid) */
    int rotating;            /* AUTH: this plan rotates the password */
    const json_object *sts;  /* the observed StatefulSet when ours, else NULL (SWITCHOVER) */
} ctx_t;

/* CRITICAL PATH (plan.h): 1 when the caller says the client-side budget is short. */
static int critical_path_first(const ctx_t *c)
{
    return c->more && c->more->budget_short;
}

/* A zeroed context for planning p about rc (whose metadata is meta) at now: the name,
 * namespace, uid and generation (-1 when absent) read from meta. */
static void ctx_init(ctx_t *c, plan_t *p, const json_object *rc, const json_object *meta, int64_t now)
{
    memset(c, 0, sizeof(*c));
    c->plan = p;
    c->rc = rc;
    c->name = jstr(meta, "name");
    c->ns = jstr(meta, "namespace");
    c->uid = jstr(meta, "uid");
    c->now = now;
    c->generation = jint(meta, "generation", -1);
}

static void degrade(ctx_t *c, const char *reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void degrade(ctx_t *c, const char *reason, const char *fmt, ...)
{
    if (!c->degraded_reason)
        c->degraded_reason = reason;
    if (c->degraded.len)
        buf_puts(&c->degraded, "; ");
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&c->degraded, fmt, ap);
    va_end(ap);
}

/* ---- Finalizer ------------------------------------------------------------------------ */

static int has_finalizer(const json_object *meta)
{
    const json_object *f = jsonx_get(meta, "finalizers");
    if (!f || !json_object_is_type(f, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(f); i++) {
        const json_object *e = json_object_array_get_idx(f, i);
        if (e && json_object_is_type(e, json_type_string) && !strcmp(str_of(e), PLAN_FINALIZER))
            return 1;
    }
    return 0;
}

/* The merge patch that sets the finalizer list to the observed one plus (add) or minus
 * ours, with the resourceVersion precondition. */
static json_object *finalizer_patch(const json_object *meta, int add, int *oom)
{
    json_object *list = jsonx_new_arr(oom);
    const json_object *f = jsonx_get(meta, "finalizers");
    size_t n = f && json_object_is_type(f, json_type_array) ? json_object_array_length(f) : 0;
    for (size_t i = 0; i < n; i++) {
        const json_object *e = json_object_array_get_idx(f, i);
        if (e && json_object_is_type(e, json_type_string) && strcmp(str_of(e), PLAN_FINALIZER))
            jsonx_push(list, jsonx_new_str(str_of(e), oom), oom);
    }
    if (add)
        jsonx_push(list, jsonx_new_str(PLAN_FINALIZER, oom), oom);
    json_object *m = jsonx_new_obj(oom);
    jsonx_put(m, "finalizers", list, oom);
    const char *rv = jstr(meta, "resourceVersion");
    if (rv)
        jsonx_put(m, "resourceVersion", jsonx_new_str(rv, oom), oom);
    json_object *patch = jsonx_new_obj(oom);
    jsonx_put(patch, "metadata", m, oom);
    if (*oom) {
        json_object_put(patch);
        return NULL;
    }
    return patch;
}

/* ---- Children ------------------------------------------------------------------------- */

/* Who controls an observed child. */
typedef enum {
    CTL_OURS,  /* a controller reference with our uid */
    CTL_NONE,  /* no controller reference at all */
    CTL_OTHER  /* another object's controller reference */
} controller_t;

/* Who controls obs; for CTL_OTHER, *kind and *name (either may stay NULL) say what. */
static controller_t controller_of(const ctx_t *c, const json_object *obs, const char **kind, const char **name)
{
    const json_object *refs = jsonx_get(jsonx_get(obs, "metadata"), "ownerReferences");
    size_t n = refs && json_object_is_type(refs, json_type_array) ? json_object_array_length(refs) : 0;
    for (size_t i = 0; i < n; i++) {
        const json_object *r = json_object_array_get_idx(refs, i);
        const json_object *ctl = jsonx_get(r, "controller");
        if (!ctl || !json_object_is_type(ctl, json_type_boolean) || !json_object_get_boolean(ctl))
            continue;
        /* The API server allows one controller reference per object: the first decides. */
        const char *uid = jstr(r, "uid");
        if (uid && !strcmp(uid, c->uid))
            return CTL_OURS;
        *kind = jstr(r, "kind");
        *name = jstr(r, "name");
        return CTL_OTHER;
    }
    return CTL_NONE;
}

/* Ownership (see plan.h): 1 when obs exists and is not ours; then the Degraded message
 * says whose it is. An object the operator did not create is never written. */
static int owner_conflict(ctx_t *c, const char *kind, const json_object *obs)
{
    const char *other_kind = NULL, *other_name = NULL;
    if (!obs)
        return 0;
    controller_t who = controller_of(c, obs, &other_kind, &other_name);
    if (who == CTL_OURS)
        return 0;
    c->owner_conflict = 1;
    if (who == CTL_OTHER)
        degrade(c, "OwnerConflict",
                "%s %s/%s is controlled by another %s%s%.*s%s; the operator leaves it alone (delete or rename it, or "
                "rename the RedisCluster)",
                kind, c->ns, c->name, other_kind ? other_kind : "object", other_name ? " \"" : "", VALUE_SHOWN,
                other_name ? other_name : "", other_name ? "\"" : "");
    else
        degrade(c, "OwnerConflict",
                "%s %s/%s exists and was not created by this RedisCluster (it has no controller owner reference); "
                "the operator leaves it alone (delete or rename it to let the operator create its own)",
                kind, c->ns, c->name);
    return 1;
}

/* ---- Spec hash (REMOVED KNOBS in plan.h) ------------------------------------------------ */

static json_object *merge_over(const json_object *d, const json_object *o, int *oom);
static json_object *observed_claim_templates(const json_object *obs_vct);

/* The part of a desired child the spec hash covers, serialised into b: a StatefulSet's
 * pod template, a Service's labels, annotations and spec. 1 when the resource carries a
 * hash, 0 when not (ConfigMap, PodDisruptionBudget), -1 when out of memory. */
static int spec_hash_of(const char *resource, const json_object *desired, char hex[65])
{
    buf_t b;
    buf_init(&b, 0);
    int rc = 0;
    if (!strcmp(resource, "statefulsets")) {
        const json_object *t = JSONX_AT(desired, "spec", "template");
        rc = buf_puts(&b, t ? json_object_to_json_string_ext((json_object *)t, JSON_C_TO_STRING_PLAIN) : "null");
    } else if (!strcmp(resource, "services")) {
        const json_object *meta = jsonx_get(desired, "metadata");
        const json_object *parts[3] = {jsonx_get(meta, "labels"), jsonx_get(meta, "annotations"),
                                       jsonx_get(desired, "spec")};
        for (int i = 0; i < 3 && !rc; i++)
            rc = buf_puts(&b, parts[i] ? json_object_to_json_string_ext((json_object *)parts[i],
                                                                        JSON_C_TO_STRING_PLAIN)
                                       : "null") ||
                 buf_puts(&b, "\n");
    } else {
        buf_free(&b);
        return 0;
    }
    rc = rc || render_sha256_hex(b.data, b.len, hex);
    buf_free(&b);
    return rc ? -1 : 1;
}

/* The spec hash an observed child records, or NULL when it has none (written by an older
 * operator). Borrowed from obs. */
static const char *spec_hash_observed(const json_object *obs)
{
    return JSONX_STR_AT(obs, "metadata", "annotations", PLAN_SPEC_HASH_ANNOTATION);
}

/* Record hex in desired's metadata.annotations. */
static void spec_hash_stamp(json_object *desired, const char *hex, int *oom)
{
    json_object *meta = (json_object *)jsonx_get(desired, "metadata");
    if (!meta || !json_object_is_type(meta, json_type_object)) {
        *oom = 1;
        return;
    }
    json_object *ann = (json_object *)jsonx_get(meta, "annotations");
    if (!ann || !json_object_is_type(ann, json_type_object)) {
        ann = jsonx_new_obj(oom);
        jsonx_put(meta, "annotations", ann, oom);
    }
    if (*oom)
        return;
    if (!strcmp(jstr(desired, "kind") ? jstr(desired, "kind") : "", "Service")) {
        /* What metadata the operator sets, for drop_unrendered on a later change. */
        buf_t keys;
        buf_init(&keys, 256);
        static const char *const fields[] = {"labels", "annotations"};
        for (int f = 0; f < 2; f++) {
            json_object *set = (json_object *)jsonx_get(meta, fields[f]);
            if (!set || !json_object_is_type(set, json_type_object))
                continue;
            json_object_object_foreach(set, k, v)
            {
                (void)v;
                buf_printf(&keys, "%s%s:%s", keys.len ? "," : "", fields[f], k);
            }
        }
        jsonx_put(ann, PLAN_RENDERED_KEYS_ANNOTATION, jsonx_new_str(buf_str(&keys), oom), oom);
        buf_free(&keys);
    }
    jsonx_put(ann, PLAN_SPEC_HASH_ANNOTATION, jsonx_new_str(hex, oom), oom);
}

/* 1 when the observed object's PLAN_RENDERED_KEYS_ANNOTATION lists "<field>:<key>". (The
 * informer cache drops managedFields, so the operator records what it set itself.) */
static int rendered_before(const json_object *obs, const char *field, const char *key)
{
    const char *list = JSONX_STR_AT(obs, "metadata", "annotations", PLAN_RENDERED_KEYS_ANNOTATION);
    size_t fl = strlen(field), kl = strlen(key);
    for (const char *s = list; s && *s;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == fl + 1 + kl && !strncmp(s, field, fl) && s[fl] == ':' && !strncmp(s + fl + 1, key, kl))
            return 1;
        s = e ? e + 1 : s + n;
    }
    return 0;
}

/* In body's metadata.<field> (labels or annotations), drop each key the desired object no
 * longer sets that the operator set before (rendered_before): others' keys stay. */
static void drop_unrendered(json_object *body, const json_object *desired, const json_object *obs,
                            const char *field)
{
    json_object *have = (json_object *)JSONX_AT(body, "metadata", field);
    const json_object *want = JSONX_AT(desired, "metadata", field);
    if (!have || !json_object_is_type(have, json_type_object))
        return;
    const char *gone[64];
    size_t n = 0;
    json_object_object_foreach(have, key, val)
    {
        (void)val;
        if (n < sizeof(gone) / sizeof(gone[0]) && !jsonx_get(want, key) && rendered_before(obs, field, key))
            gone[n++] = key;
    }
    for (size_t i = 0; i < n; i++)
        json_object_object_del(have, gone[i]);
}

/* The spec changed since the child was last written (its recorded hash is another):
 * PLAN_REPLACE it, so that what the operator no longer renders is gone (REMOVED KNOBS in
 * plan.h). Takes desired. Returns 0, or -1 when out of memory. */
static int plan_replace_changed(ctx_t *c, const char *kind, const char *gv, const char *resource,
                                json_object *desired, const json_object *obs, const char *hex)
{
    plan_t *p = c->plan;
    int *oom = &p->oom;
    const char *name = jstr(jsonx_get(desired, "metadata"), "name");
    buf_t where;
    buf_init(&where, MESSAGE_CAP);
    /* The first difference the comparison sees, when there is one (a removal has none). */
    int same = plan_json_subset(desired, obs, &where);
    spec_hash_stamp(desired, hex, oom);
    json_object *body = *oom ? NULL : merge_over(desired, obs, oom);
    json_object *meta = (json_object *)jsonx_get(body, "metadata");
    json_object *spec = (json_object *)jsonx_get(body, "spec");
    if (body && meta && spec) {
        json_object_object_del(meta, "managedFields");
        json_object_object_del(body, "status");
        json_object *copy = NULL;
        if (!strcmp(resource, "statefulsets")) {
            /* The pod template wholesale: the API server fills its defaults in again. */
            if (json_object_deep_copy((json_object *)JSONX_AT(desired, "spec", "template"), &copy, NULL))
                *oom = 1;
            const char *restarted =
                JSONX_STR_AT(obs, "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt");
            json_object *tann = (json_object *)JSONX_AT(copy, "metadata", "annotations");
            if (restarted && tann && json_object_is_type(tann, json_type_object)) /* no extra roll */
                jsonx_put(tann, "kubectl.kubernetes.io/restartedAt", jsonx_new_str(restarted, oom), oom);
            jsonx_put(spec, "template", copy, oom);
            const json_object *ovct = JSONX_AT(obs, "spec", "volumeClaimTemplates");
            if (ovct && json_object_is_type(ovct, json_type_array)) /* immutable: as observed */
                jsonx_put(spec, "volumeClaimTemplates", observed_claim_templates(ovct), oom);
        } else {
            static const char *const keys[] = {"selector", "ports"};
            for (size_t i = 0; i < 2; i++) {
                const json_object *v = JSONX_AT(desired, "spec", keys[i]);
                copy = NULL;
                if (v && json_object_deep_copy((json_object *)v, &copy, NULL))
                    *oom = 1;
                if (v)
                    jsonx_put(spec, keys[i], copy, oom);
            }
        }
        drop_unrendered(body, desired, obs, "labels");
        drop_unrendered(body, desired, obs, "annotations");
    } else {
        *oom = 1;
    }
    buf_t why;
    buf_init(&why, 2 * MESSAGE_CAP);
    buf_printf(&why, "%s %s/%s: the spec changed (%s %.12s, want %.12s)%s%s; replace it", kind, c->ns, name,
               PLAN_SPEC_HASH_ANNOTATION, spec_hash_observed(obs), hex, same ? "" : ": ",
               same ? "" : buf_str(&where));
    buf_free(&where);
    int i = add_action(p, PLAN_REPLACE, gv, resource, c->ns, name, body, buf_str(&why));
    add_event(p, "Normal", "Updated", i, "Updated %s %s/%s: the spec changed; replaced it with the rendered state",
              kind, c->ns, name);
    buf_free(&why);
    json_object_put(desired);
    return *oom ? -1 : 0;
}

/* Plan the create or update of one child, taking desired. obs is the observed object or
 * NULL. Returns 0, or -1 when out of memory. */
static int plan_child(ctx_t *c, const char *kind, const char *gv, const char *resource, json_object *desired,
                      const json_object *obs)
{
    plan_t *p = c->plan;
    buf_t why;
    buf_init(&why, 2 * MESSAGE_CAP);
    int rc = 0;
    char hex[65];
    int hashed = spec_hash_of(resource, desired, hex);
    const char *ohash = obs ? spec_hash_observed(obs) : NULL;
    if (hashed < 0) {
        p->oom = 1;
        json_object_put(desired);
    } else if (!obs) {
        /* Created, never applied: a create fails with AlreadyExists instead of taking over
         * an object that appeared since it was observed absent. */
        if (hashed)
            spec_hash_stamp(desired, hex, &p->oom);
        buf_printf(&why, "%s %s/%s is missing", kind, c->ns, c->name);
        int i = add_action(p, PLAN_CREATE, gv, resource, c->ns, c->name, desired, buf_str(&why));
        add_event(p, "Normal", "Created", i, "Created %s %s/%s", kind, c->ns, c->name);
    } else if (owner_conflict(c, kind, obs)) {
        json_object_put(desired);
    } else if (hashed && ohash && strcmp(ohash, hex)) {
        plan_replace_changed(c, kind, gv, resource, desired, obs, hex);
    } else {
        buf_t where;
        buf_init(&where, MESSAGE_CAP);
        if (plan_json_subset(desired, obs, &where)) {
            json_object_put(desired);
        } else {
            if (hashed)
                spec_hash_stamp(desired, hex, &p->oom);
            buf_printf(&why, "%s %s/%s: %s", kind, c->ns, c->name, buf_str(&where));
            int i = add_action(p, PLAN_APPLY, gv, resource, c->ns, c->name, desired, buf_str(&why));
            add_event(p, "Normal", "Updated", i, "Updated %s %s/%s: %s", kind, c->ns, c->name, buf_str(&where));
        }
        buf_free(&where);
    }
    if (p->oom)
        rc = -1;
    buf_free(&why);
    return rc;
}

/* Plan the Service <name>-primary or <name>-replicas (REPLICATION in plan.h) as the other
 * children: create when absent, apply on drift, nothing but OwnerConflict when it is not
 * ours. Returns 0, or -1 when out of memory. */
static int plan_role_service(ctx_t *c, const char *role, const json_object *obs)
{
    plan_t *p = c->plan;
    char name[300];
    render_role_service_name(c->name, role, name, sizeof(name));
    json_object *d = render_role_service(&c->in, role);
    if (!d)
        return -1;
    obs = obs && json_object_is_type(obs, json_type_object) ? obs : NULL;
    const char *k = NULL, *n = NULL;
    buf_t why, where;
    buf_init(&why, 2 * MESSAGE_CAP);
    buf_init(&where, MESSAGE_CAP);
    if (!obs) {
        buf_printf(&why, "Service %s/%s is missing", c->ns, name);
        int i = add_action(p, PLAN_CREATE, "v1", "services", c->ns, name, d, buf_str(&why));
        add_event(p, "Normal", "Created", i, "Created Service %s/%s", c->ns, name);
    } else if (controller_of(c, obs, &k, &n) != CTL_OURS) {
        json_object_put(d);
        c->owner_conflict = 1;
        degrade(c, "OwnerConflict",
                "Service %s/%s exists and was not created by this RedisCluster; the operator leaves it alone (delete or "
                "rename it)",
                c->ns, name);
    } else if (plan_json_subset(d, obs, &where)) {
        json_object_put(d);
    } else {
        buf_printf(&why, "Service %s/%s: %s", c->ns, name, buf_str(&where));
        int i = add_action(p, PLAN_APPLY, "v1", "services", c->ns, name, d, buf_str(&why));
        add_event(p, "Normal", "Updated", i, "Updated Service %s/%s: %s", c->ns, name, buf_str(&where));
    }
    buf_free(&why);
    buf_free(&where);
    return p->oom ? -1 : 0;
}

/* The IP of each pod <name>-<i>, i < size, from the work item's pods; 0 when every one
 * has an IP (ips[i] point into pods), -1 when one is missing or has none yet. */
static int member_ips(const ctx_t *c, const json_object *pods, const char *ips[], int n)
{
    for (int i = 0; i < n; i++)
        ips[i] = NULL;
    size_t len = pods && json_object_is_type(pods, json_type_array) ? json_object_array_length(pods) : 0;
    size_t nl = strlen(c->name);
    for (size_t k = 0; k < len; k++) {
        const json_object *p = json_object_array_get_idx(pods, k);
        const char *pn = JSONX_STR_AT(p, "metadata", "name"), *ip = JSONX_STR_AT(p, "status", "podIP");
        if (!pn || strncmp(pn, c->name, nl) || pn[nl] != '-' || !ip || !*ip)
            continue;
        char *end = NULL;
        long o = strtol(pn + nl + 1, &end, 10);
        if (*end || end == pn + nl + 1 || o < 0 || o >= n)
            continue;
        ips[o] = ip;
    }
    for (int i = 0; i < n; i++)
        if (!ips[i])
            return -1;
    return 0;
}

/* AUTH (plan.h): record the password Redis runs with, or rotate it. Returns 0, or -1
 * when out of memory. */
static int plan_auth(ctx_t *c)
{
    plan_t *p = c->plan;
    plan_auth_t st = c->more ? c->more->auth : PLAN_AUTH_UNKNOWN;
    if (!c->in.auth_secret || st == PLAN_AUTH_UNKNOWN || st == PLAN_AUTH_CURRENT)
        return 0;
    char rec[300], why[600], pod[320];
    snprintf(rec, sizeof(rec), "%s" RENDER_AUTH_RECORD_SUFFIX, c->name);
    if (st == PLAN_AUTH_UNRECORDED) {
        snprintf(why, sizeof(why), "Secret %s/%s: no record of the password Redis runs with yet", c->ns, rec);
        return add_action(p, PLAN_AUTH_RECORD, "v1", "secrets", c->ns, rec,
                          render_auth_record(&c->in, REDISEXEC_PASSWORD_TOKEN), why) < 0 ? -1 : 0;
    }
    const char *ips[RDC_SPEC_SIZE_MAX];
    int n = c->in.size < RDC_SPEC_SIZE_MAX ? c->in.size : RDC_SPEC_SIZE_MAX;
    if (member_ips(c, c->more->members, ips, n)) {
        degrade(c, "PasswordRotationWaiting",
                "the password in Secret %s/%s changed; it is rotated once every pod has an IP", c->ns,
                c->in.auth_secret);
        p->requeue_after_ns = PLAN_REQUEUE_NOT_READY_NS;
        return 0;
    }
    c->rotating = 1;
    static const char *const add[] = {"ACL", "SETUSER", "default", "on", REDISEXEC_ACL_ADD_PASSWORD};
    static const char *const mauth[] = {"CONFIG", "SET", "masterauth", REDISEXEC_PASSWORD_TOKEN};
    static const char *const drop[] = {"ACL", "SETUSER", "default", REDISEXEC_ACL_DROP_OLD_PASSWORD};
    for (int i = 0; i < n; i++) {
        snprintf(pod, sizeof(pod), "%s-%d", c->name, i);
        snprintf(why, sizeof(why), "password rotation: %s accepts the new password too", pod);
        if (add_redis_action(p, c->ns, pod, ips[i], 5, add, why) < 0)
            return -1;
        snprintf(why, sizeof(why), "password rotation: %s authenticates to its primary with the new password", pod);
        if (add_redis_action(p, c->ns, pod, ips[i], 4, mauth, why) < 0)
            return -1;
    }
    for (int i = 0; i < n; i++) {
        snprintf(pod, sizeof(pod), "%s-%d", c->name, i);
        snprintf(why, sizeof(why), "password rotation: every pod accepts the new password; %s drops the old one", pod);
        if (add_redis_action(p, c->ns, pod, ips[i], 4, drop, why) < 0)
            return -1;
    }
    snprintf(why, sizeof(why), "Secret %s/%s: the password rotated on %d pods", c->ns, rec, n);
    int k = add_action(p, PLAN_AUTH_RECORD, "v1", "secrets", c->ns, rec,
                       render_auth_record(&c->in, REDISEXEC_PASSWORD_TOKEN), why);
    add_event(p, "Normal", "PasswordRotated", k, "Rotated the password of %d pods to the one in Secret %s/%s", n,
              c->ns, c->in.auth_secret);
    return p->oom ? -1 : 0;
}

static int64_t age_ns(const char *t, int64_t now);

/* spec.failover.downAfter in milliseconds (FAILOVER; default 3 s). */
static int64_t down_after_ms(const ctx_t *c)
{
    const char *s = jstr(jsonx_get(c->in.spec, "failover"), "downAfter");
    int64_t ns = 0;
    if (!s || rdc_spec_duration_ns(s, &ns) || ns < 1000000)
        return PLAN_FAILOVER_DOWN_AFTER_MS;
    return ns / 1000000;
}

/* Plan the role label patch l (REPLICATION). Returns 0, or -1 when out of memory. */
static int plan_label(ctx_t *c, const topo_label_t *l)
{
    plan_t *p = c->plan;
    int *oom = &p->oom;
    char why[600];
    json_object *body = jsonx_new_obj(oom), *meta = jsonx_new_obj(oom), *labels = jsonx_new_obj(oom);
    jsonx_put(labels, RENDER_LABEL_ROLE, jsonx_new_str(l->role, oom), oom);
    jsonx_put(meta, "labels", labels, oom);
    jsonx_put(body, "metadata", meta, oom);
    snprintf(why, sizeof(why), "pod %s/%s: label %s is \"%s\", its role is %s", c->ns, l->pod, RENDER_LABEL_ROLE,
             l->have, l->role);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    return add_action(p, PLAN_LABEL_POD, "v1", "pods", c->ns, l->pod, body, why) < 0 ? -1 : 0;
}

/* SWITCHOVER: PLAN_DELETE of the pod topo names, with its uid as precondition (a pod
 * recreated meanwhile under the same name is not deleted), and its event. Returns 0, or
 * -1 when out of memory. */
static int plan_delete_pod(ctx_t *c)
{
    plan_t *p = c->plan;
    int *oom = &p->oom;
    json_object *body = jsonx_new_obj(oom), *pre = jsonx_new_obj(oom);
    jsonx_put(body, "apiVersion", jsonx_new_str("v1", oom), oom);
    jsonx_put(body, "kind", jsonx_new_str("DeleteOptions", oom), oom);
    jsonx_put(pre, "uid", jsonx_new_str(c->topo->delete_uid, oom), oom);
    jsonx_put(body, "preconditions", pre, oom);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    int i = add_action(p, PLAN_DELETE, "v1", "pods", c->ns, c->topo->delete_pod, body, c->topo->delete_why);
    add_event(p, "Normal", "RolledPod", i, "%s", c->topo->delete_why);
    return p->oom ? -1 : 0;
}

/* REPLICATION and FAILOVER (plan.h): the role labels and the Redis commands
 * topo_compute_failover decides. Labels that take the primary role away come first,
 * the Redis commands next, the labels that give it last: two pods never carry
 * role=primary at the same moment, and a pod is labelled primary only once it is one.
 * Returns 0, or -1 when out of memory. */
static int plan_replication(ctx_t *c)
{
    plan_t *p = c->plan;
    const plan_observed_t *m = c->more;
    const char *sp = jstr(jsonx_get(c->rc, "status"), "primary");
    /* The observation's age counts as evidence: observerd reports a node that answers
     * again at once, so "down for X ms, Y ms ago" is down for X + Y now. At most 1 s of
     * it: observerd repeats a down primary every second until downAfter + 2 s have
     * passed (then once a minute, when the decision has long been taken), so before that
     * an older observation means observerd is not running and nobody would report the
     * primary's return; the evidence never runs more than 1 s ahead of what an observer
     * saw. */
    int64_t age = m && m->redis ? age_ns(jstr(m->redis, "observedAt"), c->now) : -1;
    int64_t age_ms = age > 0 ? (age < INT64_C(1000000000) ? age : INT64_C(1000000000)) / 1000000 : 0;
    topo_roll_t roll = {jstr(jsonx_get(c->sts, "status"), "updateRevision"),
                        jstr(jsonx_get(c->rc, "status"), "switchoverFrom")};
    topo_compute_switchover(c->name, c->in.size, sp, m ? m->members : NULL, m ? m->redis : NULL, down_after_ms(c),
                            age_ms, &roll, c->topo);
    /* Look again when downAfter is reached rather than at the next "still down". */
    int64_t recheck = c->topo->recheck_after_ms * 1000000;
    if (recheck > 0 && (!p->requeue_after_ns || recheck < p->requeue_after_ns))
        p->requeue_after_ns = recheck;
    if (c->topo->no_candidate)
        degrade(c, "NoFailoverCandidate", "%s", c->topo->elect_why);
    if (c->topo->switch_blocked)
        degrade(c, "NoSwitchoverCandidate", "%s", c->topo->switch_why);
    /* SWITCHOVER: a rollout or a handover in progress looks again soon (a pod coming
     * back is a watch event; a replica catching up or a role changing hands is not). */
    if ((c->topo->switch_wait || c->topo->switch_record || c->topo->switchover_from[0] || c->topo->delete_pod[0]) &&
        (!p->requeue_after_ns || p->requeue_after_ns > PLAN_REQUEUE_SWITCHOVER_NS))
        p->requeue_after_ns = PLAN_REQUEUE_SWITCHOVER_NS;
    for (size_t i = 0; i < c->topo->n_labels; i++)
        if (strcmp(c->topo->labels[i].role, RENDER_ROLE_PRIMARY) && plan_label(c, &c->topo->labels[i]))
            return -1;
    /* Without an observation nothing is known of Redis: no command; nor while the
     * password rotates (the observer cannot authenticate then). */
    for (size_t i = 0; m && m->redis && !c->rotating && i < c->topo->n_cmds; i++) {
        const topo_cmd_t *t = &c->topo->cmds[i];
        const char *argv[6] = {"REPLICAOF", t->primary_ip, "6379"};
        char timeout[24];
        snprintf(timeout, sizeof(timeout), "%d", TOPO_FAILOVER_TIMEOUT_MS);
        int argc = 3;
        if (t->no_one) {
            argv[1] = "NO";
            argv[2] = "ONE";
        } else if (t->failover_to) {
            const char *fo[6] = {"FAILOVER", "TO", t->primary_ip, "6379", "TIMEOUT", timeout};
            memcpy(argv, fo, sizeof(fo));
            argc = 6;
        }
        int k = add_redis_action(p, c->ns, t->pod, t->ip, argc, argv, t->why);
        add_event(p, "Normal", t->no_one ? "Promoted" : t->failover_to ? "SwitchedOver" : "Repointed", k, "%s",
                  t->why);
    }
    for (size_t i = 0; i < c->topo->n_labels; i++)
        if (!strcmp(c->topo->labels[i].role, RENDER_ROLE_PRIMARY) && plan_label(c, &c->topo->labels[i]))
            return -1;
    if (m && m->redis && !c->rotating && c->topo->delete_pod[0] && plan_delete_pod(c))
        return -1;
    return p->oom ? -1 : 0;
}

/* RUNTIME CONFIG (plan.h): CONFIG SET the run-time directives of spec.config.extra on
 * each pod runtimecfg_compute names, then record them on it. Returns 0, or -1 when out
 * of memory. */
static int plan_runtime_config(ctx_t *c)
{
    plan_t *p = c->plan;
    const plan_observed_t *m = c->more;
    if (!m || !c->sts_ours)
        return 0;
    runtimecfg_t *rt = calloc(1, sizeof(*rt));
    if (!rt)
        return -1;
    if (runtimecfg_compute(c->in.spec, c->name, c->in.size, m->members, m->redis, rt)) {
        free(rt);
        return -1;
    }
    /* Room for the command and the annotation of each pod: a plan never overflows; what
     * does not fit now is the next reconcile's (the requeue). */
    size_t room = (PLAN_MAX_ACTIONS - p->n_actions) / 2, n = rt->n_pods < room ? rt->n_pods : room;
    if (n < rt->n_pods && !p->requeue_after_ns)
        p->requeue_after_ns = PLAN_REQUEUE_NOT_READY_NS;
    char why[600];
    buf_t pods;
    buf_init(&pods, MESSAGE_CAP / 2);
    int last = -1;
    for (size_t i = 0; i < n && !p->oom; i++) {
        const runtimecfg_pod_t *x = &rt->pods[i];
        snprintf(why, sizeof(why), "pod %s/%s: runtime config %.16s is not applied (annotation %s is \"%.80s\")", c->ns,
                 x->pod, rt->hash, RUNTIMECFG_ANNOTATION, x->have);
        if (add_redis_action(p, c->ns, x->pod, x->ip, rt->argc, rt->argv, why) < 0)
            break;
        int *oom = &p->oom;
        json_object *body = jsonx_new_obj(oom), *meta = jsonx_new_obj(oom), *ann = jsonx_new_obj(oom);
        jsonx_put(ann, RUNTIMECFG_ANNOTATION, jsonx_new_str(x->record, oom), oom);
        jsonx_put(meta, "annotations", ann, oom);
        jsonx_put(body, "metadata", meta, oom);
        if (*oom) {
            json_object_put(body);
            break;
        }
        snprintf(why, sizeof(why), "pod %s/%s: record the runtime config applied", c->ns, x->pod);
        last = add_action(p, PLAN_ANNOTATE_POD, "v1", "pods", c->ns, x->pod, body, why);
        buf_printf(&pods, "%s%s", i ? ", " : "", x->pod);
    }
    if (last >= 0 && !p->oom)
        add_event(p, "Normal", "ConfigApplied", last,
                  "Applied %d run-time directive(s) (spec.persistence, spec.config.extra) with CONFIG SET, without a restart, to %s",
                  (rt->argc - 2) / 2, buf_str(&pods));
    buf_free(&pods);
    free(rt);
    return p->oom ? -1 : 0;
}

/* A copy of the observed volumeClaimTemplates without what the API server adds on its
 * own (status, creationTimestamp), to apply unchanged; NULL when out of memory. */
static json_object *observed_claim_templates(const json_object *obs_vct)
{
    json_object *copy = NULL;
    if (json_object_deep_copy((json_object *)obs_vct, &copy, NULL))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(copy); i++) {
        json_object *e = json_object_array_get_idx(copy, i);
        if (!json_object_is_type(e, json_type_object))
            continue;
        json_object_object_del(e, "status");
        json_object *meta = NULL;
        if (json_object_object_get_ex(e, "metadata", &meta) && json_object_is_type(meta, json_type_object))
            json_object_object_del(meta, "creationTimestamp");
    }
    return copy;
}

/* Compare every managed field of the StatefulSet but spec.replicas. */
static int sts_same_but_replicas(const json_object *d, const json_object *o, buf_t *where)
{
    json_object_object_foreach((json_object *)d, key, dv)
    {
        const json_object *ov = jsonx_get(o, key);
        if (strcmp(key, "spec")) {
            if (!subset_prefixed(dv, ov, key, where))
                return 0;
            continue;
        }
        json_object_object_foreach(dv, skey, sdv)
        {
            if (!strcmp(skey, "replicas"))
                continue;
            buf_t prefix;
            buf_init(&prefix, 256);
            buf_printf(&prefix, "spec.%s", skey);
            int ok = subset_prefixed(sdv, jsonx_get(ov, skey), buf_str(&prefix), where);
            buf_free(&prefix);
            if (!ok)
                return 0;
        }
    }
    return 1;
}

/* Plan the StatefulSet, taking desired: immutable fields first, then drift. */
static int plan_statefulset(ctx_t *c, json_object *desired, const json_object *obs)
{
    plan_t *p = c->plan;
    if (!obs || owner_conflict(c, "StatefulSet", obs)) {
        if (obs) {
            json_object_put(desired);
            return 0;
        }
        return plan_child(c, "StatefulSet", "apps/v1", "statefulsets", desired, obs);
    }
    const json_object *dspec = jsonx_get(desired, "spec"), *ospec = jsonx_get(obs, "spec");

    buf_t where;
    buf_init(&where, MESSAGE_CAP);
    int rc = 0;
    if (!subset_prefixed(jsonx_get(dspec, "selector"), jsonx_get(ospec, "selector"), "spec.selector", &where) ||
        !subset_prefixed(jsonx_get(dspec, "serviceName"), jsonx_get(ospec, "serviceName"), "spec.serviceName", &where)) {
        degrade(c, "ImmutableFieldChanged",
                "StatefulSet %s/%s: %s; this field cannot change, delete the StatefulSet (its volumes are kept) "
                "to let the operator recreate it",
                c->ns, c->name, buf_str(&where));
        json_object_put(desired);
        goto out;
    }
    buf_reset(&where);
    const json_object *obs_vct = jsonx_get(ospec, "volumeClaimTemplates");
    if (obs_vct && json_object_is_type(obs_vct, json_type_array) &&
        !subset_prefixed(jsonx_get(dspec, "volumeClaimTemplates"), obs_vct, "spec.volumeClaimTemplates", &where)) {
        /* A StatefulSet's claim templates are immutable: apply the observed ones, so the
         * rest of the object still converges, and report the storage change instead. */
        /* Never advise recreating the StatefulSet: its claims stay, and the new pods
         * would get the new class or size beside the old ones (a mixed set). */
        degrade(c, "ImmutableFieldChanged",
                "spec.storage: not applied to StatefulSet %s/%s, whose volumeClaimTemplates cannot change "
                "(%s); set spec.storage back to what the StatefulSet has. To move the data to other storage, "
                "create a new RedisCluster with the new spec.storage and migrate the data to it",
                c->ns, c->name, buf_str(&where));
        json_object *vct = observed_claim_templates(obs_vct);
        jsonx_put((json_object *)dspec, "volumeClaimTemplates", vct, &p->oom);
        if (p->oom) {
            json_object_put(desired);
            rc = -1;
            goto out;
        }
    }

    int64_t want = jint(dspec, "replicas", 1), have = jint(ospec, "replicas", 1);
    char hex[65];
    if (spec_hash_of("statefulsets", desired, hex) < 0) {
        json_object_put(desired);
        rc = -1;
        goto out;
    }
    const char *ohash = spec_hash_observed(obs);
    if (ohash && strcmp(ohash, hex)) {
        /* REMOVED KNOBS: the template is replaced wholesale (replicas and the rest merged). */
        c->sts_replicas_change = want != have;
        c->sts_template_change = 1;
        rc = plan_replace_changed(c, "StatefulSet", "apps/v1", "statefulsets", desired, obs, hex);
        goto out;
    }
    buf_reset(&where);
    int others_same = sts_same_but_replicas(desired, obs, &where);
    c->sts_replicas_change = want != have;
    c->sts_template_change = !subset_prefixed(jsonx_get(dspec, "template"), jsonx_get(ospec, "template"), "", NULL);
    if (others_same && !c->sts_replicas_change) {
        json_object_put(desired);
        goto out;
    }
    buf_t why;
    buf_init(&why, 2 * MESSAGE_CAP);
    if (c->sts_replicas_change)
        buf_printf(&why, "StatefulSet %s/%s: spec.replicas: want %lld, have %lld%s%s", c->ns, c->name,
                   (long long)want, (long long)have, others_same ? "" : "; ", others_same ? "" : buf_str(&where));
    else
        buf_printf(&why, "StatefulSet %s/%s: %s", c->ns, c->name, buf_str(&where));
    spec_hash_stamp(desired, hex, &p->oom);
    int i = add_action(p, PLAN_APPLY, "apps/v1", "statefulsets", c->ns, c->name, desired, buf_str(&why));
    buf_free(&why);
    if (c->sts_replicas_change)
        add_event(p, "Normal", "Scaled", i, "Scaled StatefulSet %s/%s from %lld to %lld replicas", c->ns, c->name,
                  (long long)have, (long long)want);
    if (!others_same)
        add_event(p, "Normal", "Updated", i, "Updated StatefulSet %s/%s: %s", c->ns, c->name, buf_str(&where));
    rc = p->oom ? -1 : 0;
out:
    buf_free(&where);
    return rc;
}

/* Build the three desired children and plan their applies. Returns 0, or -1 when out of
 * memory. */
static int plan_children(ctx_t *c, const json_object *cm, const json_object *svc, const json_object *sts)
{
    buf_t conf;
    buf_init(&conf, 0);
    char hash[65];
    int rc = -1;
    buf_t restart;
    buf_init(&restart, 0);
    /* The pods roll when what they read at start changes, not for directives Redis takes
     * at run time (render_redis_conf_restart). */
    int bad = render_redis_conf(&c->in, &conf) || render_redis_conf_restart(&c->in, &restart) ||
              render_sha256_hex(restart.data, restart.len, hash);
    buf_free(&restart);
    if (bad)
        goto out;
    json_object *d = render_configmap(&c->in, buf_str(&conf));
    if (!d || plan_child(c, "ConfigMap", "v1", "configmaps", d, cm))
        goto out;
    /* Only ours after its own check: the ConfigMap's conflict was just reported. */
    int cm_ours = !cm || !c->owner_conflict;
    d = render_service(&c->in);
    if (!d || plan_child(c, "Service", "v1", "services", d, svc))
        goto out;
    if (c->in.replication &&
        (plan_role_service(c, RENDER_ROLE_PRIMARY, c->more ? c->more->primary_service : NULL) ||
         plan_role_service(c, RENDER_ROLE_REPLICA, c->more ? c->more->replicas_service : NULL)))
        goto out;
    const char *k = NULL, *n = NULL;
    c->sts_ours = sts && controller_of(c, sts, &k, &n) == CTL_OURS;
    if (!cm_ours && (!sts || c->sts_ours)) {
        /* Pods would mount the other object's redis.conf: hold the StatefulSet back. */
        degrade(c, "OwnerConflict", "StatefulSet %s/%s is not %s while the ConfigMap it mounts is not the operator's",
                c->ns, c->name, sts ? "updated" : "created");
        rc = 0;
        goto out;
    }
    if (c->in.storage_class && c->more && c->more->storage_class_missing) {
        /* Not a reason to hold the StatefulSet back: claims of a class with no
         * StorageClass object still bind to PersistentVolumes created with that class
         * name (static provisioning). While the pods are not ready it is the likely
         * cause, so say it. */
        degrade(c, "StorageClassNotFound",
                "StorageClass \"%.*s\" (spec.storage.storageClass) does not exist: the claims of StatefulSet %s/%s "
                "bind only to PersistentVolumes created with that storageClassName; create the StorageClass (or such "
                "PersistentVolumes)",
                VALUE_SHOWN, c->in.storage_class, c->ns, c->name);
    }
    d = render_statefulset(&c->in, hash);
    if (!d || plan_statefulset(c, d, sts))
        goto out;
    c->sts_created = !sts;
    /* The budget covers the pods of our StatefulSet only: none while another's is there.
     * CRITICAL PATH (plan.h): while the budget is short, none either in the plan that
     * creates the StatefulSet; the next reconcile creates it. */
    if (sts ? c->sts_ours : !critical_path_first(c)) {
        d = render_pdb(&c->in);
        if (!d || plan_child(c, "PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", d, c->pdb))
            goto out;
    }
    rc = 0;
out:
    if (rc)
        c->plan->oom = 1;
    buf_free(&conf);
    return rc;
}

/* ---- Status -------------------------------------------------------------------------- */

typedef struct {
    const char *type;
    const char *status; /* "True" / "False" */
    const char *reason;
    char message[MESSAGE_CAP];
} cond_t;

enum { COND_READY, COND_PROGRESSING, COND_DEGRADED, COND_COUNT };

static void set_cond(cond_t *k, const char *type, int status, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void set_cond(cond_t *k, const char *type, int status, const char *reason, const char *fmt, ...)
{
    k->type = type;
    k->status = status ? "True" : "False";
    k->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->message, sizeof(k->message), fmt, ap);
    va_end(ap);
}

static int same_str(const json_object *o, const char *key, const char *want);

/* The observed condition of this type, or NULL. */
static const json_object *observed_cond(const json_object *ostatus, const char *type)
{
    const json_object *list = jsonx_get(ostatus, "conditions");
    size_t n = list && json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        const json_object *e = json_object_array_get_idx(list, i);
        const char *t = jstr(e, "type");
        if (t && !strcmp(t, type))
            return e;
    }
    return NULL;
}

/* What the StatefulSet reports. */
typedef struct {
    int present;
    int64_t spec_replicas, replicas, ready, updated;
    int rolling; /* not settled on its current spec */
} sts_view_t;

static sts_view_t view_statefulset(const json_object *sts)
{
    sts_view_t v = {0};
    if (!sts)
        return v;
    const json_object *spec = jsonx_get(sts, "spec"), *st = jsonx_get(sts, "status"), *meta = jsonx_get(sts, "metadata");
    v.present = 1;
    v.spec_replicas = jint(spec, "replicas", 1);
    v.replicas = jint(st, "replicas", 0);
    v.ready = jint(st, "readyReplicas", 0);
    v.updated = jint(st, "updatedReplicas", 0);
    int64_t gen = jint(meta, "generation", 0), seen = jint(st, "observedGeneration", 0);
    const char *cur = jstr(st, "currentRevision"), *upd = jstr(st, "updateRevision");
    v.rolling = seen < gen || v.updated != v.spec_replicas || v.replicas != v.spec_replicas ||
                (cur && upd && strcmp(cur, upd));
    return v;
}

/* ---- Diagnosis ------------------------------------------------------------------------ */

#define API_QUOTED 1024 /* bytes of the API's own message quoted in a diagnosis */
#define PLAN_MAX_ORDINALS 1024 /* plan_diagnosis_reads walks no further (spec.size is far less) */
#define DIAG_POD_GRACE_NS (INT64_C(30) * 1000000000)       /* a pod's own causes count after this */
#define DIAG_CREATE_GRACE_NS (INT64_C(10) * 1000000000)    /* a pod not made this long after it could be */

/* How long ago (by now) the RFC 3339 time t was; -1 when t is missing or unreadable. */
static int64_t age_ns(const char *t, int64_t now)
{
    int64_t at = 0;
    if (!t || !*t || clock_parse_rfc3339(t, &at))
        return -1;
    return now > at ? now - at : 0;
}

static int condition_reason_ok(const char *s);

/* Items of a list (an array), or NULL. */
static const json_object *items_of(const json_object *list)
{
    return list && json_object_is_type(list, json_type_array) ? list : NULL;
}

/* When an Event last happened: lastTimestamp, else eventTime, else creationTimestamp
 * (RFC 3339 strings compare in time order). "" when none. */
static const char *event_time(const json_object *e)
{
    const char *t = jstr(e, "lastTimestamp");
    if (!t)
        t = jstr(e, "eventTime");
    if (!t)
        t = jstr(jsonx_get(e, "metadata"), "creationTimestamp");
    return t ? t : "";
}

/* The latest Event of the list (the later one in list order on a tie) that is a Warning
 * (reason NULL) or has reason a or b, or NULL. */
static const json_object *latest_event(const json_object *events, const char *a, const char *b)
{
    const json_object *best = NULL;
    events = items_of(events);
    for (size_t i = 0; events && i < json_object_array_length(events); i++) {
        const json_object *e = json_object_array_get_idx(events, i);
        const char *type = jstr(e, "type"), *reason = jstr(e, "reason");
        if (!reason || (!a && (!type || strcmp(type, "Warning"))) || (a && strcmp(reason, a) && strcmp(reason, b)))
            continue;
        if (!best || strcmp(event_time(e), event_time(best)) >= 0)
            best = e;
    }
    return best;
}

/* When the pod's Ready condition last changed (its lastTransitionTime), or NULL. */
static const char *ready_since(const json_object *pod)
{
    return jstr(observed_cond(jsonx_get(pod, "status"), "Ready"), "lastTransitionTime");
}

/* 1 when the pod's Ready condition is True. */
static int pod_ready(const json_object *pod)
{
    return same_str(observed_cond(jsonx_get(pod, "status"), "Ready"), "status", "True");
}

/* The pod named name in pods, or NULL. */
static const json_object *pod_named(const json_object *pods, const char *name)
{
    pods = items_of(pods);
    for (size_t i = 0; pods && name && i < json_object_array_length(pods); i++) {
        const json_object *pod = json_object_array_get_idx(pods, i);
        const char *n = jstr(jsonx_get(pod, "metadata"), "name");
        if (n && !strcmp(n, name))
            return pod;
    }
    return NULL;
}

const char *plan_pod_to_explain(const json_object *pods)
{
    pods = items_of(pods);
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        const json_object *pod = json_object_array_get_idx(pods, i);
        const char *n = jstr(jsonx_get(pod, "metadata"), "name");
        if (n && !pod_ready(pod))
            return n;
    }
    return NULL;
}

/* Record the cause found: reason, and a message quoting the API. */
static void diagnosed(ctx_t *c, const char *reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void diagnosed(ctx_t *c, const char *reason, const char *fmt, ...)
{
    c->diag_reason = reason;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&c->diag, fmt, ap);
    va_end(ap);
}

/* A container of the pod waiting for a reason that explains it, or NULL; *container
 * and *message say more (either may stay NULL), and *exit_code / *exit_reason how it
 * last ended (-1 / NULL when unknown). A CrashLoopBackOff's own message names a back-off
 * that doubles at every restart, so the caller says how the container ended instead:
 * the status then stays the same while the loop goes on. */
static const char *container_waiting(const json_object *pod, const char **container, const char **message,
                                     int64_t *exit_code, const char **exit_reason)
{
    static const char *const reasons[] = {"ErrImagePull",     "ImagePullBackOff",           "CrashLoopBackOff",
                                          "InvalidImageName", "CreateContainerConfigError", "RunContainerError",
                                          "CreateContainerError"};
    static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
    const json_object *st = jsonx_get(pod, "status");
    for (size_t l = 0; l < 2; l++) {
        const json_object *cs = items_of(jsonx_get(st, lists[l]));
        for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
            const json_object *e = json_object_array_get_idx(cs, i);
            const json_object *w = jsonx_get(jsonx_get(e, "state"), "waiting");
            const char *r = jstr(w, "reason");
            for (size_t k = 0; r && k < sizeof(reasons) / sizeof(reasons[0]); k++) {
                if (!strcmp(r, reasons[k])) {
                    const json_object *t = jsonx_get(jsonx_get(e, "lastState"), "terminated");
                    *container = jstr(e, "name");
                    *message = jstr(w, "message");
                    *exit_code = jint(t, "exitCode", -1);
                    *exit_reason = jstr(t, "reason");
                    return reasons[k];
                }
            }
        }
    }
    return NULL;
}

/* The message of the pod's PodScheduled condition when it is False, or NULL. */
static const char *unschedulable(const json_object *pod)
{
    const json_object *conds = items_of(jsonx_get(jsonx_get(pod, "status"), "conditions"));
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        const json_object *k = json_object_array_get_idx(conds, i);
        const char *t = jstr(k, "type"), *st = jstr(k, "status");
        if (t && !strcmp(t, "PodScheduled") && st && !strcmp(st, "False")) {
            const char *m = jstr(k, "message");
            return m ? m : jstr(k, "reason") ? jstr(k, "reason") : "unschedulable";
        }
    }
    return NULL;
}

void plan_diagnosis_reads(const json_object *statefulset, const json_object *pods, int64_t now_wall_ns,
                          plan_diag_reads_t *out)
{
    sts_view_t v = view_statefulset(statefulset);
    const char *sts = jstr(jsonx_get(statefulset, "metadata"), "name");
    pods = items_of(pods);
    /* The StatefulSet controller's walk (OrderedReady): ordinal by ordinal, a missing pod
     * is created (and may fail to be), one not Ready makes it wait there. */
    out->sts_events = 0;
    /* Since when the controller could have created the next pod: the StatefulSet's
     * creation, then each Ready pod's turning Ready (unknown: long ago). */
    int64_t since = age_ns(jstr(jsonx_get(statefulset, "metadata"), "creationTimestamp"), now_wall_ns);
    for (int64_t i = 0; sts && i < v.spec_replicas && i < PLAN_MAX_ORDINALS; i++) {
        char name[320];
        snprintf(name, sizeof(name), "%s-%lld", sts, (long long)i);
        const json_object *pod = pod_named(pods, name);
        if (!pod || jsonx_get(jsonx_get(pod, "metadata"), "deletionTimestamp")) {
            /* a pod being deleted is waited for; a missing one the controller had
             * DIAG_CREATE_GRACE_NS to make and did not may have failed to */
            out->sts_events = pod || since < 0 || since >= DIAG_CREATE_GRACE_NS;
            break;
        }
        if (!pod_ready(pod))
            break;
        since = age_ns(ready_since(pod), now_wall_ns);
    }
    out->pod = plan_pod_to_explain(pods);
    const json_object *pod = pod_named(pods, out->pod);
    const char *container = NULL, *msg = NULL, *exit_reason = NULL;
    int64_t exit_code = -1, age = age_ns(jstr(jsonx_get(pod, "metadata"), "creationTimestamp"), now_wall_ns);
    if (pod && ((age >= 0 && age < DIAG_POD_GRACE_NS) || container_waiting(pod, &container, &msg, &exit_code, &exit_reason) ||
                unschedulable(pod)))
        out->pod = NULL;
}

/* DIAGNOSIS (plan.h): find why fewer replicas than wanted are ready, from what the
 * caller read. Sets c->diag_reason and c->diag, and degrades with them. */
static void diagnose(ctx_t *c, const json_object *sts)
{
    const plan_observed_t *m = c->more;
    if (!m || !sts)
        return;
    sts_view_t v = view_statefulset(sts);
    if (v.ready >= c->in.size)
        return;
    const json_object *pods = items_of(m->pods);
    int64_t live = 0;
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++)
        live += !jsonx_get(jsonx_get(json_object_array_get_idx(pods, i), "metadata"), "deletionTimestamp");
    /* The StatefulSet controller records SuccessfulCreate for every pod it made: a
     * FailedCreate after the last of those still stands (an older one is history). */
    const json_object *e = latest_event(m->sts_events, "FailedCreate", "SuccessfulCreate");
    const char *pod_name = plan_pod_to_explain(pods);
    const json_object *pod = pod_named(pods, pod_name);
    const char *container = NULL, *msg = NULL, *why, *exit_reason = NULL;
    int64_t exit_code = -1;
    /* Causes that pass on their own (the scheduler waits for a claim being provisioned,
     * a pod just made has no conditions yet) are not causes: a pod's own problems count
     * once it is DIAG_POD_GRACE_NS old. */
    int64_t pod_age = age_ns(jstr(jsonx_get(pod, "metadata"), "creationTimestamp"), c->now);
    int pod_settled = pod_age < 0 || pod_age >= DIAG_POD_GRACE_NS;
    if (live < v.spec_replicas && e && !strcmp(jstr(e, "reason"), "FailedCreate")) {
        diagnosed(c, "FailedCreate", "StatefulSet %s/%s cannot create its pods: %.*s", c->ns, c->name, API_QUOTED,
                  jstr(e, "message") ? jstr(e, "message") : "(no message)");
    } else if (pod && (why = container_waiting(pod, &container, &msg, &exit_code, &exit_reason))) {
        if (!strcmp(why, "CrashLoopBackOff"))
            diagnosed(c, why, "pod %s/%s, container %s: CrashLoopBackOff: it keeps exiting (last exit code %lld%s%s%s)",
                      c->ns, pod_name, container ? container : "?", (long long)exit_code, exit_reason ? ", " : "",
                      exit_reason ? exit_reason : "", exit_code < 0 ? "; unknown" : "");
        else
            diagnosed(c, why, "pod %s/%s, container %s: %s%s%.*s", c->ns, pod_name, container ? container : "?", why,
                      msg ? ": " : "", API_QUOTED, msg ? msg : "");
    } else if (pod && pod_settled && (msg = unschedulable(pod))) {
        diagnosed(c, "FailedScheduling", "pod %s/%s cannot be scheduled: %.*s", c->ns, pod_name, API_QUOTED, msg);
    } else if (pod && pod_settled && (e = latest_event(m->pod_events, NULL, NULL)) && condition_reason_ok(jstr(e, "reason"))) {
        diagnosed(c, jstr(e, "reason"), "pod %s/%s: %s: %.*s", c->ns, pod_name, jstr(e, "reason"), API_QUOTED,
                  jstr(e, "message") ? jstr(e, "message") : "(no message)");
    }
    if (c->diag_reason)
        degrade(c, c->diag_reason, "%s", buf_str(&c->diag));
}

/* Decide phase and conditions. */
static const char *decide(const ctx_t *c, const sts_view_t *v, cond_t conds[COND_COUNT])
{
    cond_t *ready = &conds[COND_READY], *prog = &conds[COND_PROGRESSING], *deg = &conds[COND_DEGRADED];
    if (c->failed_reason) {
        const char *msg = buf_str(&c->invalid);
        set_cond(ready, "Ready", 0, c->failed_reason, "%s", msg);
        set_cond(prog, "Progressing", 0, c->failed_reason, "the spec must be fixed first");
        set_cond(deg, "Degraded", 1, c->failed_reason, "%s", msg);
        return "Failed";
    }
    if (c->degraded_reason)
        set_cond(deg, "Degraded", 1, c->degraded_reason, "%s", buf_str(&c->degraded));
    else
        set_cond(deg, "Degraded", 0, "AsExpected", "%s", "");
    if (!v->present) {
        set_cond(ready, "Ready", 0, "Creating", "0/%d replicas ready", c->in.size); /* as CREATING goes on */
        set_cond(prog, "Progressing", 1, "Creating", "creating StatefulSet %s/%s", c->ns, c->name);
        return "Pending";
    }
    int scaling = v->spec_replicas != c->in.size || c->sts_replicas_change;
    int rolling = v->rolling || c->sts_template_change;
    /* A scale-up between two pods (the StatefulSet settled on the new replica count, the
     * next pod not ready yet) stays Scaling instead of flickering to Pending. */
    const char *was = jstr(jsonx_get(c->rc, "status"), "phase");
    int continuing = !scaling && !rolling && !c->diag_reason && v->ready > 0 && v->ready < c->in.size && was &&
                     !strcmp(was, "Scaling");
    /* CREATING: a new cluster's first rollout (the StatefulSet starts its pods one by
     * one) stays Pending with Progressing=True Creating until it is Running, its ready
     * count being the progress (STATUS WRITE POLICY), rather than going Pending, Scaling
     * at the first pod, Running: one phase change less per cluster. A resize or a new pod
     * template meanwhile is Scaling or RollingUpdate as ever. */
    const json_object *oprog = observed_cond(jsonx_get(c->rc, "status"), "Progressing");
    int fresh = !jstr(jsonx_get(c->rc, "status"), "phase"); /* no status yet: CRITICAL PATH */
    int creating = !scaling && !c->sts_template_change &&
                   (fresh || (same_str(oprog, "status", "True") && same_str(oprog, "reason", "Creating"))) &&
                   (v->ready < c->in.size || v->rolling);
    if (scaling)
        set_cond(prog, "Progressing", 1, "Scaling", "scaling from %lld to %d replicas", (long long)v->spec_replicas,
                 c->in.size);
    else if (creating)
        set_cond(prog, "Progressing", 1, "Creating", "creating StatefulSet %s/%s", c->ns, c->name);
    else if (continuing)
        set_cond(prog, "Progressing", 1, "Scaling", "scaling to %d replicas, %lld ready", c->in.size,
                 (long long)v->ready);
    else if (rolling)
        /* An operator-driven rollout (Replication) that waits says for what: a pod coming
         * back, or a replica not caught up enough to take the primary role. */
        set_cond(prog, "Progressing", 1, "RollingUpdate", "%lld/%lld replicas updated%s%s%s", (long long)v->updated,
                 (long long)v->spec_replicas, c->sts_template_change ? ", applying a new pod template" : "",
                 c->topo && c->topo->switch_wait ? "; " : "", c->topo && c->topo->switch_wait ? c->topo->switch_why : "");
    else
        set_cond(prog, "Progressing", 0, "Stable", "%s", "");
    const char *phase;
    if (v->ready == 0 || creating)
        phase = "Pending";
    else if (scaling || rolling || continuing)
        phase = "Scaling";
    else if (v->ready >= c->in.size)
        phase = "Running";
    else
        phase = "Pending";
    if (!strcmp(phase, "Running"))
        set_cond(ready, "Ready", 1, "AllReplicasReady", "%lld/%d replicas ready", (long long)v->ready, c->in.size);
    else if (c->diag_reason)
        set_cond(ready, "Ready", 0, c->diag_reason, "%lld/%d replicas ready: %s", (long long)v->ready, c->in.size,
                 buf_str(&c->diag));
    else if (creating) /* the reason it had while the StatefulSet was made: only the count moves */
        set_cond(ready, "Ready", 0, "Creating", "%lld/%d replicas ready", (long long)v->ready, c->in.size);
    else
        set_cond(ready, "Ready", 0, "ReplicasNotReady", "%lld/%d replicas ready", (long long)v->ready, c->in.size);
    return phase;
}

/* One condition as JSON, keeping the observed lastTransitionTime unless the status flips. */
static json_object *cond_json(const ctx_t *c, const cond_t *k, const json_object *ostatus, int *oom)
{
    const json_object *old = observed_cond(ostatus, k->type);
    const char *old_status = jstr(old, "status"), *old_time = jstr(old, "lastTransitionTime");
    char now[40];
    clock_format_rfc3339(c->now, 0, now, sizeof(now));
    const char *when = old_status && old_time && !strcmp(old_status, k->status) ? old_time : now;
    /* lastUpdateTime: when status, reason or message last changed (the count is in the
     * message: STATUS WRITE POLICY). Only the observed value when it says the same. */
    const char *old_update = jstr(old, "lastUpdateTime");
    int same_says = old && same_str(old, "status", k->status) && same_str(old, "reason", k->reason) &&
                    same_str(old, "message", k->message);
    const char *updated = same_says ? old_update : now;
    json_object *j = jsonx_new_obj(oom);
    jsonx_put(j, "type", jsonx_new_str(k->type, oom), oom);
    jsonx_put(j, "status", jsonx_new_str(k->status, oom), oom);
    if (c->generation >= 0)
        jsonx_put(j, "observedGeneration", jsonx_new_int(c->generation, oom), oom);
    jsonx_put(j, "lastTransitionTime", jsonx_new_str(when, oom), oom);
    if (updated)
        jsonx_put(j, "lastUpdateTime", jsonx_new_str(updated, oom), oom);
    jsonx_put(j, "reason", jsonx_new_str(k->reason, oom), oom);
    if (k->message[0])
        jsonx_put(j, "message", jsonx_new_str(k->message, oom), oom);
    return j;
}

/* 1 when observed o[key] is the string want ("" matches absent). */
static int same_str(const json_object *o, const char *key, const char *want)
{
    const char *have = NULL;
    if (jsonx_string(o, key, &have) == JSONX_BAD)
        return 0;
    return !strcmp(have ? have : "", want ? want : "");
}

/* 1 when observed o[key] is the integer want. */
static int same_int(const json_object *o, const char *key, int64_t want)
{
    const json_object *v = jsonx_get(o, key);
    return v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) == want;
}

/* 1 when o[key] is the boolean want (absent counts as false). */
static int same_bool(const json_object *o, const char *key, int want)
{
    const json_object *v = jsonx_get(o, key);
    int have = v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
    return have == want;
}

/* 1 when the observed status.nodes say what the computed ones say on pod, ip, role and
 * linkUp (REPLICATION: offsets and lag alone never make a status write). */
static int nodes_current(const json_object *computed, const json_object *ostatus)
{
    const json_object *want = jsonx_get(computed, "nodes"), *have = jsonx_get(ostatus, "nodes");
    if (!want)
        return 1; /* Standalone: not ours to compare */
    if (!have || !json_object_is_type(have, json_type_array) ||
        json_object_array_length(have) != json_object_array_length((json_object *)want))
        return 0;
    for (size_t i = 0; i < json_object_array_length((json_object *)want); i++) {
        const json_object *w = json_object_array_get_idx(want, i), *h = json_object_array_get_idx(have, i);
        const json_object *lu = jsonx_get(w, "linkUp");
        if (!same_str(h, "pod", jstr(w, "pod")) || !same_str(h, "ip", jstr(w, "ip")) ||
            !same_str(h, "role", jstr(w, "role")) || !same_bool(h, "linkUp", lu && json_object_get_boolean((json_object *)lu)))
            return 0;
    }
    return 1;
}

/* status.nodes from the topology (REPLICATION); NULL when out of memory. */
static json_object *nodes_json(const topo_t *t, int *oom)
{
    json_object *arr = jsonx_new_arr(oom);
    for (size_t i = 0; i < t->n_nodes; i++) {
        const topo_node_t *n = &t->nodes[i];
        json_object *j = jsonx_new_obj(oom);
        jsonx_put(j, "pod", jsonx_new_str(n->pod, oom), oom);
        if (n->ip[0])
            jsonx_put(j, "ip", jsonx_new_str(n->ip, oom), oom);
        jsonx_put(j, "role", jsonx_new_str(n->role, oom), oom);
        jsonx_put(j, "linkUp", json_object_new_boolean(n->link_up), oom);
        if (n->offset >= 0)
            jsonx_put(j, "offset", jsonx_new_int(n->offset, oom), oom);
        if (n->lag_bytes >= 0)
            jsonx_put(j, "lagBytes", jsonx_new_int(n->lag_bytes, oom), oom);
        jsonx_push(arr, j, oom);
    }
    return arr;
}

/* 1 when the observed status already says what computed says (see plan.h). */
static int status_current(const ctx_t *c, const json_object *computed, const json_object *ostatus)
{
    if (!ostatus || !json_object_is_type(ostatus, json_type_object))
        return 0;
    if (!same_str(ostatus, "phase", jstr(computed, "phase")) || !same_str(ostatus, "selector", jstr(computed, "selector")) ||
        !same_int(ostatus, "replicas", jint(computed, "replicas", 0)) ||
        !same_int(ostatus, "readyReplicas", jint(computed, "readyReplicas", 0)) ||
        !same_str(ostatus, "ready", jstr(computed, "ready")))
        return 0;
    if (c->generation >= 0 && !same_int(ostatus, "observedGeneration", c->generation))
        return 0;
    if (!same_str(ostatus, "primary", jstr(computed, "primary")) || !nodes_current(computed, ostatus) ||
        !same_str(ostatus, "switchoverFrom", jstr(computed, "switchoverFrom")))
        return 0;
    const json_object *list = jsonx_get(computed, "conditions");
    for (size_t i = 0; i < json_object_array_length((json_object *)list); i++) {
        const json_object *k = json_object_array_get_idx(list, i);
        const json_object *o = observed_cond(ostatus, jstr(k, "type"));
        static const char *const keys[] = {"status", "reason", "message", "lastTransitionTime"};
        if (!o)
            return 0;
        for (size_t j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
            if (!same_str(o, keys[j], jstr(k, keys[j])))
                return 0;
        if (c->generation >= 0 && !same_int(o, "observedGeneration", c->generation))
            return 0;
    }
    return 1;
}

/* Plan the write of the computed status st (taken: it becomes the plan's status) unless
 * the observed one already says it. A Warning event of the Degraded condition's reason
 * goes with the write when that condition is True and says something new, so an unchanged
 * problem is not re-recorded on every resync. why is the action's log line. Returns 0,
 * or -1 when out of memory. */
static int status_write(ctx_t *c, json_object *st, const char *why)
{
    plan_t *p = c->plan;
    int *oom = &p->oom;
    const json_object *ostatus = jsonx_get(c->rc, "status");
    p->status = st;
    if (status_current(c, st, ostatus))
        return 0;
    /* CRITICAL PATH (plan.h): while the budget is short, a new cluster's first status
     * waits for the reconcile after the one that creates its StatefulSet, unless it
     * tells a problem. A cluster not Running is requeued anyway (plan_compute_children),
     * and the StatefulSet's watch event comes sooner. */
    if (c->sts_created && critical_path_first(c) && !jstr(ostatus, "phase") && !c->degraded_reason &&
        !(c->topo && c->topo->elect))
        return 0;
    /* STATUS WRITE POLICY: progress alone waits for its window (status_policy.h); an
     * election's record is never held. */
    int64_t hold = c->topo && c->topo->elect ? 0 : status_policy_hold_ns(st, ostatus, c->now);
    if (hold > 0) {
        if (!p->requeue_after_ns || hold < p->requeue_after_ns)
            p->requeue_after_ns = hold;
        p->status_held_ns = hold;
        return 0;
    }

    json_object *body = jsonx_new_obj(oom), *meta = jsonx_new_obj(oom), *copy = NULL;
    jsonx_put(body, "apiVersion", jsonx_new_str(RENDER_GROUP_VERSION, oom), oom);
    jsonx_put(body, "kind", jsonx_new_str(RENDER_KIND, oom), oom);
    jsonx_put(meta, "name", jsonx_new_str(c->name, oom), oom);
    jsonx_put(meta, "namespace", jsonx_new_str(c->ns, oom), oom);
    /* FAILOVER: the record of an election is a compare-and-swap on the object as the
     * decision saw it: a decision from a stale copy fails with 409 and is taken again. */
    const char *rv = jstr(jsonx_get(c->rc, "metadata"), "resourceVersion");
    if (c->topo && (c->topo->elect || c->topo->switch_record) && rv)
        jsonx_put(meta, "resourceVersion", jsonx_new_str(rv, oom), oom);
    jsonx_put(body, "metadata", meta, oom);
    if (json_object_deep_copy(st, &copy, NULL))
        *oom = 1;
    jsonx_put(body, "status", copy, oom);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    int i = add_action(p, PLAN_UPDATE_STATUS, RENDER_GROUP_VERSION, "redisclusters", c->ns, c->name, body, why);
    if (c->topo && c->topo->elect)
        add_event(p, "Warning", "FailedOver", i, "%s", c->topo->elect_why);
    if (c->topo && c->topo->switch_record)
        add_event(p, "Normal", "SwitchingOver", i, "%s", c->topo->switch_why);
    const json_object *deg = observed_cond(st, "Degraded"), *old = observed_cond(ostatus, "Degraded");
    const char *reason = jstr(deg, "reason"), *message = jstr(deg, "message");
    if (reason && same_str(deg, "status", "True") &&
        (!same_str(old, "status", "True") || !same_str(old, "reason", reason) || !same_str(old, "message", message)))
        add_event(p, "Warning", reason, i, "%s", message ? message : "");
    return p->oom ? -1 : 0;
}

/* Compute the status, and plan its write (with its events) when it changed. */
static int plan_status_write(ctx_t *c, const json_object *sts)
{
    plan_t *p = c->plan;
    int *oom = &p->oom;
    sts_view_t v = view_statefulset(sts);
    cond_t conds[COND_COUNT];
    memset(conds, 0, sizeof(conds));
    const char *phase = decide(c, &v, conds);
    const json_object *ostatus = jsonx_get(c->rc, "status");
    /* REPLICATION: without an observation, what the status says of Redis stays. */
    cond_t repl;
    const json_object *kept_nodes = NULL;
    memset(&repl, 0, sizeof(repl));
    if (c->topo) {
        const json_object *was = observed_cond(ostatus, "ReplicationHealthy");
        if (!(c->more && c->more->redis) && was && jstr(was, "status") && jstr(was, "reason")) {
            set_cond(&repl, "ReplicationHealthy", same_str(was, "status", "True"), jstr(was, "reason"), "%s",
                     jstr(was, "message") ? jstr(was, "message") : "");
            kept_nodes = jsonx_get(ostatus, "nodes");
            if (!kept_nodes || !json_object_is_type(kept_nodes, json_type_array))
                kept_nodes = NULL;
        } else {
            set_cond(&repl, "ReplicationHealthy", c->topo->healthy, c->topo->reason, "%s", c->topo->message);
        }
    }

    buf_t sel;
    buf_init(&sel, 1024);
    render_selector_string(c->name, &sel);
    json_object *st = jsonx_new_obj(oom);
    jsonx_put(st, "phase", jsonx_new_str(phase, oom), oom);
    jsonx_put(st, "replicas", jsonx_new_int(v.replicas, oom), oom);
    jsonx_put(st, "readyReplicas", jsonx_new_int(v.ready, oom), oom);
    char ready[48];
    if (c->in.size > 0)
        snprintf(ready, sizeof(ready), "%lld/%d", (long long)v.ready, c->in.size);
    else /* an invalid spec: no size to count against */
        snprintf(ready, sizeof(ready), "%lld", (long long)v.ready);
    jsonx_put(st, "ready", jsonx_new_str(ready, oom), oom);
    if (c->generation >= 0)
        jsonx_put(st, "observedGeneration", jsonx_new_int(c->generation, oom), oom);
    jsonx_put(st, "selector", jsonx_new_str(buf_str(&sel), oom), oom);
    buf_free(&sel);
    if (c->topo) {
        jsonx_put(st, "primary", jsonx_new_str(c->topo->primary, oom), oom);
        if (c->topo->switchover_from[0])
            jsonx_put(st, "switchoverFrom", jsonx_new_str(c->topo->switchover_from, oom), oom);
        json_object *nodes = NULL;
        if (kept_nodes && json_object_deep_copy((json_object *)kept_nodes, &nodes, NULL))
            *oom = 1;
        jsonx_put(st, "nodes", kept_nodes ? nodes : nodes_json(c->topo, oom), oom);
    }
    json_object *list = jsonx_new_arr(oom);
    for (size_t i = 0; i < COND_COUNT; i++)
        jsonx_push(list, cond_json(c, &conds[i], ostatus, oom), oom);
    if (c->topo)
        jsonx_push(list, cond_json(c, &repl, ostatus, oom), oom);
    /* Only the operator's own conditions: the status is server-side applied, and the
     * conditions list is a map keyed by type, so a condition someone else applies
     * (informerd's ReconcileCrashed, say) is theirs and stays as they wrote it. */
    jsonx_put(st, "conditions", list, oom);
    if (*oom) {
        json_object_put(st);
        return -1;
    }
    buf_t why;
    buf_init(&why, 2 * MESSAGE_CAP);
    buf_printf(&why, "status of RedisCluster %s/%s changed: phase %s, %lld/%d ready", c->ns, c->name, phase,
               (long long)v.ready, c->in.size);
    if (c->topo)
        buf_printf(&why, ", primary %s, ReplicationHealthy %s", c->topo->primary, repl.reason);
    int rc = status_write(c, st, buf_str(&why));
    buf_free(&why);
    return rc;
}

/* ---- plan_compute -------------------------------------------------------------------- */

static const json_object *as_object(const json_object *o)
{
    return o && json_object_is_type(o, json_type_object) ? o : NULL;
}

/* Decision 1: name and namespace. Returns 0, or -1 with p->error set. */
static int check_addressable(plan_t *p, const json_object *rc, const json_object *meta)
{
    const char *what = NULL;
    if (!as_object(rc))
        what = "the RedisCluster is not a JSON object";
    else if (!as_object(meta))
        what = "metadata: missing or not an object";
    else if (!jstr(meta, "name"))
        what = "metadata.name: missing, empty or not a string";
    else if (!jstr(meta, "namespace"))
        what = "metadata.namespace: missing, empty or not a string";
    if (!what)
        return 0;
    p->error = dup_or_oom(p, what);
    return -1;
}

/* Decision 2: deletion. */
static void plan_deletion(plan_t *p, const json_object *meta, const char *ns, const char *name)
{
    if (!has_finalizer(meta))
        return;
    int i = add_action(p, PLAN_CLEANUP, RENDER_GROUP_VERSION, "redisclusters", ns, name, NULL,
                       "RedisCluster is being deleted: run the cleanup hook");
    add_event(p, "Normal", "CleanedUp", i, "Cleaned up RedisCluster %s/%s before deletion", ns, name);
    add_action(p, PLAN_REMOVE_FINALIZER, RENDER_GROUP_VERSION, "redisclusters", ns, name,
               finalizer_patch(meta, 0, &p->oom), "RedisCluster is being deleted: cleanup done, remove " PLAN_FINALIZER);
}

static void plan_live(plan_t *p, const json_object *rc, const json_object *meta, const json_object *cm,
                      const json_object *svc, const json_object *sts, const json_object *pdb,
                      const plan_observed_t *more, int64_t now)
{
    ctx_t c;
    ctx_init(&c, p, rc, meta, now);
    c.pdb = pdb;
    c.in.name = c.name;
    c.in.ns = c.ns;
    c.in.uid = c.uid;
    buf_init(&c.invalid, MESSAGE_CAP - 1); /* it must fit a condition's message */
    buf_init(&c.degraded, MESSAGE_CAP);
    buf_init(&c.diag, MESSAGE_CAP / 2);
    c.more = more;
    buf_t image;
    buf_init(&image, 4096);

    if (!has_finalizer(meta))
        add_action(p, PLAN_ADD_FINALIZER, RENDER_GROUP_VERSION, "redisclusters", c.ns, c.name,
                   finalizer_patch(meta, 1, &p->oom), "RedisCluster has no " PLAN_FINALIZER " yet");
    if (p->oom)
        goto out;

    if (!c.uid) {
        c.failed_reason = "InvalidObject";
        buf_puts(&c.invalid, "metadata.uid: missing, empty or not a string; the children's owner references need it");
    } else {
        int problems = spec_problems(rc, &c.invalid);
        if (problems < 0 || (problems == 0 && spec_input(rc, &c.in, &image))) {
            p->oom = 1;
            goto out;
        }
        if (problems)
            c.failed_reason = "InvalidSpec";
    }
    if (!c.failed_reason && plan_children(&c, cm, svc, sts))
        goto out;
    if (!c.failed_reason && plan_auth(&c))
        goto out;
    topo_t topo;
    if (!c.failed_reason && c.in.replication) {
        c.topo = &topo;
        c.sts = c.sts_ours ? sts : NULL;
        if (plan_replication(&c))
            goto out;
    }
    if (!c.failed_reason && c.sts_ours)
        diagnose(&c, sts);
    if (plan_status_write(&c, c.failed_reason || !c.sts_ours ? NULL : sts))
        goto out;
    if (!c.failed_reason && plan_runtime_config(&c))
        goto out;
    const char *phase = plan_phase(p);
    p->wants_diagnosis = !c.failed_reason && c.sts_ours && phase && strcmp(phase, "Running");
    if (p->wants_diagnosis) {
        /* DIAGNOSIS: not while the cluster moves (its counts are not told yet: a pod
         * created or Ready since) unless the told count is a window old (a first
         * rollout holds its count longer, status_policy.h); a converging cluster is
         * reconciled at every pod change. The status write that tells the counts, or
         * the requeue at the window's end, brings the next look. */
        sts_view_t v = view_statefulset(sts);
        if (!status_policy_diagnosis_due(jsonx_get(c.rc, "status"), v.replicas, v.ready, p->status_held_ns > 0,
                                         c.now))
            p->wants_diagnosis = 0;
    }
    /* The class is looked up when the StatefulSet is created and while the cluster is not
     * Running (a healthy resync reads nothing more). */
    if (c.in.storage_class && (c.sts_created || p->wants_diagnosis))
        p->storage_class = dup_or_oom(p, c.in.storage_class);
    p->selector = dup_or_oom(p, jstr(plan_status(p), "selector") ? jstr(plan_status(p), "selector") : "");
    /* An object in the way is not watched (it has not our labels): look again. */
    if ((c.owner_conflict || (phase && strcmp(phase, "Running") && strcmp(phase, "Failed"))) &&
        (!p->requeue_after_ns || p->requeue_after_ns > PLAN_REQUEUE_NOT_READY_NS))
        p->requeue_after_ns = PLAN_REQUEUE_NOT_READY_NS;
out:
    buf_free(&image);
    buf_free(&c.invalid);
    buf_free(&c.degraded);
    buf_free(&c.diag);
}

plan_t *plan_compute(const json_object *rediscluster, const json_object *configmap, const json_object *service,
                     const json_object *statefulset, int64_t now_wall_ns)
{
    return plan_compute_observed(rediscluster, configmap, service, statefulset, NULL, now_wall_ns);
}

plan_t *plan_compute_observed(const json_object *rediscluster, const json_object *configmap,
                              const json_object *service, const json_object *statefulset,
                              const plan_observed_t *more, int64_t now_wall_ns)
{
    plan_children_t kids = {configmap, service, statefulset, NULL};
    return plan_compute_children(rediscluster, &kids, more, now_wall_ns);
}

plan_t *plan_compute_children(const json_object *rediscluster, const plan_children_t *kids,
                              const plan_observed_t *more, int64_t now_wall_ns)
{
    plan_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    const json_object *meta = jsonx_get(as_object(rediscluster), "metadata");
    if (check_addressable(p, rediscluster, meta))
        goto out;
    if (jsonx_get(meta, "deletionTimestamp"))
        plan_deletion(p, meta, jstr(meta, "namespace"), jstr(meta, "name"));
    else
        plan_live(p, rediscluster, meta, as_object(kids->configmap), as_object(kids->service),
                  as_object(kids->statefulset), as_object(kids->pdb), more, now_wall_ns);
out:
    if (p->oom)
        plan_destroy(&p);
    return p;
}

/* ---- A failed write ------------------------------------------------------------------ */

/* 1 when s can be a condition reason (metav1.Condition: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$). */
static int condition_reason_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n > 1024 || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char ch = s[i];
        int alnum = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
        if (!alnum && !((ch == ',' || ch == ':') && i + 1 < n))
            return 0;
    }
    return 1;
}

/* "ConfigMap" for "configmaps", and so on. */
static const char *kind_of_resource(const char *resource)
{
    static const char *const map[][2] = {{"configmaps", "ConfigMap"},
                                         {"services", "Service"},
                                         {"statefulsets", "StatefulSet"},
                                         {"poddisruptionbudgets", "PodDisruptionBudget"},
                                         {"pods", "Pod"},
                                         {"secrets", "Secret"},
                                         {"redisclusters", RENDER_KIND}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(map[i][0], resource))
            return map[i][1];
    return resource;
}

/* What an action does, as a verb phrase for messages. */
static const char *action_verb(plan_action_kind_t kind)
{
    switch (kind) {
    case PLAN_CREATE: return "create";
    case PLAN_APPLY: return "apply";
    case PLAN_REPLACE: return "replace";
    case PLAN_DELETE: return "delete";
    case PLAN_ADD_FINALIZER: return "add the finalizer to";
    case PLAN_REMOVE_FINALIZER: return "remove the finalizer from";
    case PLAN_UPDATE_STATUS: return "write the status of";
    case PLAN_CLEANUP: return "clean up";
    case PLAN_LABEL_POD: return "label";
    case PLAN_REDIS: return "send a Redis command to";
    case PLAN_AUTH_RECORD: return "record the password in";
    case PLAN_ANNOTATE_POD: return "annotate";
    }
    return "write";
}

plan_t *plan_write_failed(const json_object *rediscluster, const plan_t *failed, size_t action, int http_status,
                          const char *api_reason, const char *api_message, int64_t now_wall_ns)
{
    plan_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    const plan_action_t *a = plan_action(failed, action);
    const json_object *meta = jsonx_get(as_object(rediscluster), "metadata");
    /* A status write that failed cannot report itself; nothing planned, nothing to say. */
    if (!a || a->kind == PLAN_UPDATE_STATUS || a->kind == PLAN_CLEANUP || !failed->status || !jstr(meta, "name") ||
        !jstr(meta, "namespace"))
        return p;
    ctx_t c;
    ctx_init(&c, p, rediscluster, meta, now_wall_ns);
    int *oom = &p->oom;

    cond_t k;
    memset(&k, 0, sizeof(k));
    const char *reason = condition_reason_ok(api_reason) ? api_reason : "WriteFailed";
    const json_object *was = observed_cond(failed->status, "Degraded");
    const char *was_msg = same_str(was, "status", "True") ? jstr(was, "message") : NULL;
    /* The API's message verbatim (it is what a user searches for), the object named, and
     * whatever else was already degraded after it. */
    set_cond(&k, "Degraded", 1, reason, "cannot %s %s %s/%s: %d %s: %s%s%s", action_verb(a->kind),
             kind_of_resource(a->resource), a->ns, a->name, http_status,
             api_reason && *api_reason ? api_reason : "error", api_message && *api_message ? api_message : "(no message)",
             was_msg ? "; " : "", was_msg ? was_msg : "");
    const json_object *ostatus = jsonx_get(rediscluster, "status");
    json_object *st = NULL, *deg = NULL;
    if (json_object_deep_copy(failed->status, &st, NULL)) {
        p->oom = 1;
        goto out;
    }
    deg = cond_json(&c, &k, ostatus, oom);
    json_object *list = (json_object *)jsonx_get(st, "conditions");
    /* failed may have been computed from an older copy than rediscluster: a condition
     * rediscluster already shows with the same status keeps the time shown there. */
    for (size_t i = 0; list && i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const json_object *o = observed_cond(ostatus, jstr(e, "type"));
        const char *t = jstr(o, "lastTransitionTime");
        if (t && same_str(o, "status", jstr(e, "status")))
            jsonx_put(e, "lastTransitionTime", jsonx_new_str(t, oom), oom);
    }
    for (size_t i = 0; deg && list && i < json_object_array_length(list); i++) {
        const char *t = jstr(json_object_array_get_idx(list, i), "type");
        if (t && !strcmp(t, "Degraded")) {
            if (json_object_array_put_idx(list, i, deg))
                *oom = 1;
            deg = NULL;
        }
    }
    if (deg || *oom) { /* not placed: the status had no Degraded condition */
        json_object_put(deg);
        json_object_put(st);
        if (!*oom)
            return p;
        goto out;
    }
    buf_t why;
    buf_init(&why, 2 * MESSAGE_CAP);
    buf_printf(&why, "status of RedisCluster %s/%s: a write failed: %s", c.ns, c.name, k.message);
    status_write(&c, st, buf_str(&why));
    buf_free(&why);
out:
    if (p->oom)
        plan_destroy(&p);
    return p;
}

/* ---- Taking a child back ------------------------------------------------------------------ */

/* desired merged over observed, as a new value (TAKING A CHILD BACK in plan.h): objects
 * key by key, keyed lists of objects element by element (observed order, unmatched
 * desired elements appended), anything else desired's. NULL only when out of memory. */
static json_object *merge_over(const json_object *d, const json_object *o, int *oom)
{
    json_object *out = NULL;
    if (d && o && json_object_is_type(d, json_type_object) && json_object_is_type(o, json_type_object)) {
        if (json_object_deep_copy((json_object *)o, &out, NULL)) {
            *oom = 1;
            return NULL;
        }
        json_object_object_foreach((json_object *)d, key, dv)
        {
            jsonx_put(out, key, merge_over(dv, jsonx_get(o, key), oom), oom);
        }
        return out;
    }
    const char *key = d && json_object_is_type(d, json_type_array) ? array_key(d) : NULL;
    if (key && o && json_object_is_type(o, json_type_array)) {
        size_t nd = json_object_array_length(d), no = json_object_array_length(o);
        char used[64] = {0};
        out = jsonx_new_arr(oom);
        for (size_t j = 0; j < no; j++) {
            const json_object *oe = json_object_array_get_idx(o, j), *de = NULL;
            const char *have = jstr(oe, key);
            for (size_t i = 0; have && i < nd && i < sizeof(used) && !de; i++) {
                if (!used[i] && !strcmp(jstr(json_object_array_get_idx(d, i), key), have)) {
                    de = json_object_array_get_idx(d, i);
                    used[i] = 1;
                }
            }
            jsonx_push(out, merge_over(de ? de : oe, de ? oe : NULL, oom), oom);
        }
        for (size_t i = 0; i < nd; i++)
            if (i >= sizeof(used) || !used[i])
                jsonx_push(out, merge_over(json_object_array_get_idx(d, i), NULL, oom), oom);
        return out;
    }
    if (!d)
        return NULL; /* JSON null */
    if (json_object_deep_copy((json_object *)d, &out, NULL))
        *oom = 1;
    return out;
}

plan_t *plan_take_back(const plan_t *failed, size_t action, const json_object *observed, int recreate,
                       int http_status, const char *api_reason, const char *api_message)
{
    plan_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    const plan_action_t *a = plan_action(failed, action);
    observed = as_object(observed);
    if (!a || a->kind != PLAN_APPLY || !observed || !strcmp(a->resource, "redisclusters") ||
        (recreate && strcmp(a->resource, "services")))
        return p;
    const char *kind = kind_of_resource(a->resource);
    const json_object *ometa = jsonx_get(observed, "metadata");
    const char *uid = jstr(ometa, "uid"), *rv = jstr(ometa, "resourceVersion");
    const char *reason = api_reason && *api_reason ? api_reason : "error";
    const char *msg = api_message && *api_message ? api_message : "(no message)";
    int *oom = &p->oom;
    buf_t why;
    buf_init(&why, 2 * MESSAGE_CAP);
    if (!recreate) {
        json_object *body = merge_over(a->body, observed, oom);
        json_object *meta = (json_object *)jsonx_get(body, "metadata");
        if (meta && json_object_is_type(meta, json_type_object))
            json_object_object_del(meta, "managedFields");
        if (body && json_object_is_type(body, json_type_object))
            json_object_object_del(body, "status");
        buf_printf(&why, "%s %s/%s: the apply was refused (%d %s); replace it with the desired state", kind, a->ns,
                   a->name, http_status, reason);
        int i = add_action(p, PLAN_REPLACE, a->group_version, a->resource, a->ns, a->name, body, buf_str(&why));
        add_event(p, "Normal", "DriftRepaired", i,
                  "Took back %s %s/%s: another field manager's change made the apply fail (%d %s: %.*s); replaced "
                  "it with the operator's desired state",
                  kind, a->ns, a->name, http_status, reason, API_QUOTED / 2, msg);
    } else {
        json_object *opts = jsonx_new_obj(oom), *pre = jsonx_new_obj(oom), *desired = NULL;
        jsonx_put(opts, "apiVersion", jsonx_new_str("v1", oom), oom);
        jsonx_put(opts, "kind", jsonx_new_str("DeleteOptions", oom), oom);
        if (uid)
            jsonx_put(pre, "uid", jsonx_new_str(uid, oom), oom);
        if (rv)
            jsonx_put(pre, "resourceVersion", jsonx_new_str(rv, oom), oom);
        jsonx_put(opts, "preconditions", pre, oom);
        buf_printf(&why, "%s %s/%s: cannot be updated (%d %s); delete and create it", kind, a->ns, a->name,
                   http_status, reason);
        add_action(p, PLAN_DELETE, a->group_version, a->resource, a->ns, a->name, opts, buf_str(&why));
        if (!*oom && json_object_deep_copy(a->body, &desired, NULL))
            *oom = 1;
        int i = *oom ? -1 : add_action(p, PLAN_CREATE, a->group_version, a->resource, a->ns, a->name, desired,
                                        buf_str(&why));
        add_event(p, "Warning", "Recreated", i,
                  "Recreated %s %s/%s: it could not be updated to the operator's desired state (%d %s: %.*s)", kind,
                  a->ns, a->name, http_status, reason, API_QUOTED / 2, msg);
    }
    buf_free(&why);
    if (p->oom)
        plan_destroy(&p);
    return p;
}

/* ---- Accessors ------------------------------------------------------------------------ */

void plan_destroy(plan_t **plan_p)
{
    if (!plan_p || !*plan_p)
        return;
    plan_t *p = *plan_p;
    for (size_t i = 0; i < p->n_actions; i++) {
        action_slot_t *a = &p->actions[i];
        json_object_put(a->pub.body);
        free(a->ns);
        free(a->name);
        free(a->path);
        free(a->why);
        free(a->ip);
        for (int k = 0; a->argv_s && k < a->pub.argc; k++)
            free(a->argv_s[k]);
        free(a->argv_s);
        free(a->argv);
    }
    for (size_t i = 0; i < p->n_events; i++)
        free(p->events[i].message);
    json_object_put(p->status);
    free(p->error);
    free(p->storage_class);
    free(p->selector);
    free(p);
    *plan_p = NULL;
}

size_t plan_action_count(const plan_t *plan)
{
    return plan->n_actions;
}

const plan_action_t *plan_action(const plan_t *plan, size_t i)
{
    return i < plan->n_actions ? &plan->actions[i].pub : NULL;
}

size_t plan_event_count(const plan_t *plan)
{
    return plan->n_events;
}

const plan_event_t *plan_event(const plan_t *plan, size_t i)
{
    return i < plan->n_events ? &plan->events[i].pub : NULL;
}

int64_t plan_requeue_after_ns(const plan_t *plan)
{
    return plan->requeue_after_ns;
}

int64_t plan_status_held_ns(const plan_t *plan)
{
    return plan->status_held_ns;
}

json_object *plan_status(const plan_t *plan)
{
    return plan->status;
}

const char *plan_phase(const plan_t *plan)
{
    return plan->status ? jstr(plan->status, "phase") : NULL;
}

const char *plan_error(const plan_t *plan)
{
    return plan->error;
}

int plan_wants_diagnosis(const plan_t *plan)
{
    return plan->wants_diagnosis;
}

const char *plan_pod_selector(const plan_t *plan)
{
    return plan->selector && *plan->selector ? plan->selector : NULL;
}

const char *plan_storage_class_to_check(const plan_t *plan)
{
    return plan->storage_class;
}

const char *plan_action_kind_name(plan_action_kind_t kind)
{
    switch (kind) {
    case PLAN_ADD_FINALIZER:
        return "addFinalizer";
    case PLAN_REMOVE_FINALIZER:
        return "removeFinalizer";
    case PLAN_CLEANUP:
        return "cleanup";
    case PLAN_APPLY:
        return "apply";
    case PLAN_CREATE:
        return "create";
    case PLAN_REPLACE:
        return "replace";
    case PLAN_DELETE:
        return "delete";
    case PLAN_UPDATE_STATUS:
        return "updateStatus";
    case PLAN_LABEL_POD:
        return "labelPod";
    case PLAN_REDIS:
        return "redis";
    case PLAN_AUTH_RECORD:
        return "authRecord";
    case PLAN_ANNOTATE_POD:
        return "annotatePod";
    }
    return "unknown";
}

/* A new string, or JSON null for NULL. */
static json_object *str_or_null(const char *s, int *oom)
{
    return s ? jsonx_new_str(s, oom) : NULL;
}

/* obj[key] = s, or null when s is NULL. */
static void put_opt(json_object *obj, const char *key, const char *s, int *oom)
{
    if (!s) {
        if (!obj || json_object_object_add(obj, key, NULL))
            *oom = 1;
        return;
    }
    jsonx_put(obj, key, str_or_null(s, oom), oom);
}

json_object *plan_to_json(const plan_t *plan)
{
    int oom = 0;
    json_object *root = jsonx_new_obj(&oom), *actions = jsonx_new_arr(&oom), *events = jsonx_new_arr(&oom);
    for (size_t i = 0; i < plan->n_actions; i++) {
        const plan_action_t *a = &plan->actions[i].pub;
        json_object *j = jsonx_new_obj(&oom);
        jsonx_put(j, "kind", jsonx_new_str(plan_action_kind_name(a->kind), &oom), &oom);
        put_opt(j, "method", a->method, &oom);
        put_opt(j, "path", a->path, &oom);
        put_opt(j, "contentType", a->content_type, &oom);
        jsonx_put(j, "why", jsonx_new_str(a->why, &oom), &oom);
        if (a->kind == PLAN_REDIS) {
            /* The arguments never hold a password (redisexec.h's token at most). */
            jsonx_put(j, "pod", jsonx_new_str(a->name, &oom), &oom);
            jsonx_put(j, "ip", jsonx_new_str(a->ip ? a->ip : "", &oom), &oom);
            json_object *av = jsonx_new_arr(&oom);
            for (int k = 0; k < a->argc; k++)
                jsonx_push(av, jsonx_new_str(a->argv[k], &oom), &oom);
            jsonx_put(j, "argv", av, &oom);
        } else if (a->body)
            jsonx_put(j, "body", json_object_get(a->body), &oom);
        else
            put_opt(j, "body", NULL, &oom);
        jsonx_push(actions, j, &oom);
    }
    for (size_t i = 0; i < plan->n_events; i++) {
        const plan_event_t *e = &plan->events[i].pub;
        json_object *j = jsonx_new_obj(&oom);
        jsonx_put(j, "type", jsonx_new_str(e->type, &oom), &oom);
        jsonx_put(j, "reason", jsonx_new_str(e->reason, &oom), &oom);
        jsonx_put(j, "message", jsonx_new_str(e->message, &oom), &oom);
        jsonx_put(j, "action", jsonx_new_int(e->action, &oom), &oom);
        jsonx_push(events, j, &oom);
    }
    jsonx_put(root, "actions", actions, &oom);
    jsonx_put(root, "events", events, &oom);
    if (plan->status)
        jsonx_put(root, "status", json_object_get(plan->status), &oom);
    else
        put_opt(root, "status", NULL, &oom);
    jsonx_put(root, "requeueAfterNs", jsonx_new_int(plan->requeue_after_ns, &oom), &oom);
    put_opt(root, "error", plan->error, &oom);
    if (oom) {
        json_object_put(root);
        return NULL;
    }
    return root;
}
