/* plan_build: the plan object and its accessors. See plan_build.h and plan.h. */
#include "plan_build.h"

#include "jsonx.h"
#include "render.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    json_object *involved; /* what pub.involved points to, or NULL */
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
    int wants_claims;    /* plan_wants_claims */
    char *storage_class; /* plan_storage_class_to_check, or NULL */
    char *selector;      /* plan_pod_selector, or NULL */
    char *restore_backup; /* plan_restore_backup_to_read, or NULL */
    int commanding;      /* COMMAND RECORD: plan_set_command_window */
    size_t command_at;
    int64_t command_until_ns;
};

plan_t *plan_new(void)
{
    return calloc(1, sizeof(plan_t));
}

int *plan_oom(plan_t *p)
{
    return &p->oom;
}

/* What each kind of action sends (plan.h, ACTIONS): its name, the verb phrase messages use,
 * the method (NULL: no request), the content type, the query (a field manager, "" none)
 * and the subresource. */
#define FM "?fieldManager=" RENDER_FIELD_MANAGER
static const struct {
    const char *name, *verb, *method, *content_type, *query, *subresource;
} kinds[] = {
    [PLAN_ADD_FINALIZER] = {"addFinalizer", "add the finalizer to", "PATCH", CT_MERGE, "", NULL},
    [PLAN_REMOVE_FINALIZER] = {"removeFinalizer", "remove the finalizer from", "PATCH", CT_MERGE, "", NULL},
    [PLAN_CLEANUP] = {"cleanup", "clean up", NULL, NULL, NULL, NULL},
    [PLAN_CREATE] = {"create", "create", "POST", CT_JSON, FM, NULL},
    [PLAN_APPLY] = {"apply", "apply", "PATCH", CT_APPLY, FM "&force=true", NULL},
    [PLAN_REPLACE] = {"replace", "replace", "PUT", CT_JSON, FM, NULL},
    [PLAN_DELETE] = {"delete", "delete", "DELETE", CT_JSON, "", NULL},
    [PLAN_UPDATE_STATUS] = {"updateStatus", "write the status of", "PATCH", CT_APPLY, FM "&force=true", "status"},
    [PLAN_LABEL_POD] = {"labelPod", "label", "PATCH", CT_MERGE, "", NULL},
    [PLAN_REDIS] = {"redis", "send a Redis command to", NULL, NULL, NULL, NULL},
    [PLAN_AUTH_RECORD] = {"authRecord", "record the password in", "PATCH", CT_APPLY, FM "&force=true", NULL},
    [PLAN_ANNOTATE_POD] = {"annotatePod", "annotate", "PATCH", CT_MERGE, "", NULL},
    [PLAN_SLOT_MOVE] = {"slotMove", "move hash slots from", NULL, NULL, NULL, NULL},
    [PLAN_ACL_FILE] = {"aclFile", "write the ACL file into", "PATCH", CT_APPLY, FM "&force=true", NULL},
    [PLAN_RESIZE_CLAIM] = {"resizeClaim", "resize", "PATCH", CT_MERGE, "", NULL},
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

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
         (a->subresource && put_segment(&path, a->subresource)) || buf_puts(&path, kinds[a->kind].query);
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

int plan_add_action(plan_t *p, plan_action_kind_t kind, const char *group_version, const char *resource,
                    const char *ns, const char *name, json_object *body, const char *why)
{
    assert(p->n_actions < PLAN_MAX_ACTIONS && (size_t)kind < N_KINDS);
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
    int request = kinds[kind].method != NULL; /* PLAN_CLEANUP and PLAN_REDIS send none */
    if (request && !p->oom) {
        a->pub.method = kinds[kind].method;
        a->pub.content_type = kinds[kind].content_type;
        a->pub.subresource = kinds[kind].subresource;
        a->pub.field_manager = *kinds[kind].query ? RENDER_FIELD_MANAGER : NULL;
        a->path = request_path(&a->pub);
        a->pub.path = a->path;
        if (!a->path)
            p->oom = 1;
    }
    if (!body && request)
        p->oom = 1;
    return p->oom ? -1 : (int)(p->n_actions - 1);
}

json_object *plan_delete_options(const char *uid, const char *rv, int *oom)
{
    json_object *opts = jsonx_new_obj(oom), *pre = jsonx_new_obj(oom);
    jsonx_put(opts, "apiVersion", jsonx_new_str("v1", oom), oom);
    jsonx_put(opts, "kind", jsonx_new_str("DeleteOptions", oom), oom);
    if (uid)
        jsonx_put(pre, "uid", jsonx_new_str(uid, oom), oom);
    if (rv)
        jsonx_put(pre, "resourceVersion", jsonx_new_str(rv, oom), oom);
    jsonx_put(opts, "preconditions", pre, oom);
    return jsonx_done(opts, *oom);
}

int plan_add_redis_action(plan_t *p, const char *ns, const char *pod, const char *ip, int argc,
                          const char *const *argv, const char *why)
{
    int i = plan_add_action(p, PLAN_REDIS, "v1", "pods", ns, pod, NULL, why);
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

void plan_add_event(plan_t *p, const char *type, const char *reason, int action, const char *fmt, ...)
{
    assert(p->n_events < PLAN_MAX_EVENTS);
    buf_t m;
    buf_init(&m, 2 * PLAN_MESSAGE_CAP);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&m, fmt, ap); /* a message over the cap stays empty rather than failing */
    va_end(ap);
    event_slot_t *e = &p->events[p->n_events++];
    e->message = buf_detach(&m);
    e->involved = NULL;
    if (!e->message)
        p->oom = 1;
    e->pub.type = type;
    e->pub.reason = reason;
    e->pub.message = e->message;
    e->pub.action = action;
}

int plan_add_pod_delete(plan_t *p, const char *ns, const char *pod, const char *uid, const char *why)
{
    int *oom = plan_oom(p);
    json_object *body = jsonx_new_obj(oom), *pre = jsonx_new_obj(oom);
    jsonx_put(body, "apiVersion", jsonx_new_str("v1", oom), oom);
    jsonx_put(body, "kind", jsonx_new_str("DeleteOptions", oom), oom);
    jsonx_put(pre, "uid", jsonx_new_str(uid, oom), oom);
    jsonx_put(body, "preconditions", pre, oom);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    return plan_add_action(p, PLAN_DELETE, "v1", "pods", ns, pod, body, why);
}

int plan_add_pod_annotations(plan_t *p, const char *ns, const char *pod, const char *const *kv, size_t n,
                             const char *why)
{
    int *oom = plan_oom(p);
    json_object *body = jsonx_new_obj(oom), *meta = jsonx_new_obj(oom), *ann = jsonx_new_obj(oom);
    for (size_t i = 0; i < n; i++)
        jsonx_put(ann, kv[2 * i], jsonx_new_str(kv[2 * i + 1], oom), oom);
    jsonx_put(meta, "annotations", ann, oom);
    jsonx_put(body, "metadata", meta, oom);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    return plan_add_action(p, PLAN_ANNOTATE_POD, "v1", "pods", ns, pod, body, why);
}

void plan_set_redis_body(plan_t *p, int i, json_object *body)
{
    if (!body || i < 0 || (size_t)i >= p->n_actions || p->actions[i].pub.kind != PLAN_REDIS) {
        p->oom |= !body;
        json_object_put(body);
        return;
    }
    json_object_put(p->actions[i].pub.body);
    p->actions[i].pub.body = body;
}

void plan_set_not_after(plan_t *p, int i, int64_t wall_ns)
{
    if (i >= 0 && (size_t)i < p->n_actions)
        p->actions[i].pub.not_after_wall_ns = wall_ns;
}

void plan_move_action(plan_t *p, size_t from, size_t to)
{
    assert(to <= from && from < p->n_actions);
    action_slot_t moved = p->actions[from];
    memmove(&p->actions[to + 1], &p->actions[to], (from - to) * sizeof(p->actions[0]));
    p->actions[to] = moved;
    for (size_t e = 0; e < p->n_events; e++) {
        int *k = &p->events[e].pub.action;
        if (*k == (int)from)
            *k = (int)to;
        else if (*k >= (int)to && *k < (int)from)
            (*k)++;
    }
}

void plan_set_command_window(plan_t *p, size_t at, int64_t until_wall_ns)
{
    p->commanding = 1;
    p->command_at = at;
    p->command_until_ns = until_wall_ns;
}

int plan_command_window(const plan_t *p, size_t *at, int64_t *until_wall_ns)
{
    if (at)
        *at = p->command_at;
    if (until_wall_ns)
        *until_wall_ns = p->command_until_ns;
    return p->commanding;
}

size_t plan_room(const plan_t *p)
{
    return PLAN_MAX_ACTIONS - p->n_actions;
}

void plan_requeue_within(plan_t *p, int64_t ns)
{
    if (!p->requeue_after_ns || ns < p->requeue_after_ns)
        p->requeue_after_ns = ns;
}

void plan_take_status(plan_t *p, json_object *status)
{
    json_object_put(p->status);
    p->status = status;
}

void plan_hold_status(plan_t *p, int64_t ns)
{
    plan_requeue_within(p, ns);
    p->status_held_ns = ns;
}

void plan_set_error(plan_t *p, const char *what)
{
    free(p->error);
    p->error = dup_or_oom(p, what);
}

void plan_set_wants_claims(plan_t *p)
{
    p->wants_claims = 1;
}

void plan_set_restore_read(plan_t *p, const char *backup)
{
    free(p->restore_backup);
    p->restore_backup = dup_or_oom(p, backup);
}

void plan_set_reads(plan_t *p, int wants_diagnosis, const char *storage_class, const char *selector)
{
    p->wants_diagnosis = wants_diagnosis;
    free(p->storage_class);
    free(p->selector);
    p->storage_class = storage_class ? dup_or_oom(p, storage_class) : NULL;
    p->selector = dup_or_oom(p, selector ? selector : "");
}

/* ---- Accessors (plan.h) --------------------------------------------------------------- */

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
    for (size_t i = 0; i < p->n_events; i++) {
        free(p->events[i].message);
        json_object_put(p->events[i].involved);
    }
    json_object_put(p->status);
    free(p->error);
    free(p->storage_class);
    free(p->selector);
    free(p->restore_backup);
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
    return plan->status ? jsonx_str_set(plan->status, "phase") : NULL;
}

const char *plan_error(const plan_t *plan)
{
    return plan->error;
}

int plan_wants_diagnosis(const plan_t *plan)
{
    return plan->wants_diagnosis;
}

int plan_wants_claims(const plan_t *plan)
{
    return plan->wants_claims;
}

const char *plan_restore_backup_to_read(const plan_t *plan)
{
    return plan->restore_backup;
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
    return (size_t)kind < N_KINDS ? kinds[kind].name : "unknown";
}

const char *plan_action_verb(plan_action_kind_t kind)
{
    return (size_t)kind < N_KINDS ? kinds[kind].verb : "write";
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
    return jsonx_done(root, oom);
}

void plan_event_about(plan_t *p, json_object *involved)
{
    assert(p->n_events > 0);
    event_slot_t *e = &p->events[p->n_events - 1];
    if (!involved)
        p->oom = 1;
    json_object_put(e->involved);
    e->involved = involved;
    e->pub.involved = involved;
}
