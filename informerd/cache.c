#include "cache.h"

#include "buf.h"
#include "dlist.h"
#include "hashmap.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct owner_group owner_group_t;
typedef struct store store_t;

typedef struct entry {
    cache_item_t pub; /* the public view; its strings point at the fields below */
    store_t *store;
    char *key;
    char *rv;
    char *uid;
    char *owner_uid;
    char *owner_fallback; /* "<namespace>/<owner reference name>", or NULL */
    char *json;           /* the object as compact JSON text */
    owner_group_t *group; /* children of the same controller owner */
    struct entry *gprev, *gnext;
    uint64_t gen; /* store generation of the last relist that saw it */
    uint64_t digest; /* projection_digest of its READ parts; 0: none (no projection, minimal form) */
    uint64_t late;   /* projection_late_digest of its LATE parts (with digest) */
} entry_t;

/* Every cached child (of any kind) whose controller owner has this UID; or, in
 * label_owners, every object of a kind owned by label (cache_set_owner_label) whose
 * label names this owner key. */
struct owner_group {
    char *uid;     /* the owner's UID, or its key in label_owners */
    hm_t *home;    /* the index holding the group */
    entry_t *head;
};

struct store {
    char *kind;
    hm_t *by_key; /* key -> entry_t */
    hm_t *by_uid; /* uid -> entry_t */
    uint64_t gen;
    char *owner_label; /* cache_set_owner_label, or NULL */
    char *owner_field; /* cache_set_owner_field ("spec.source.cluster"), or NULL */
    const projection_t *projection; /* cache_set_projection, or NULL */
};

struct cache {
    char *owner_kind;
    store_t **stores; /* stores[0] holds the owner kind */
    size_t nstores;
    hm_t *owners; /* owner uid -> owner_group_t */
    hm_t *label_owners; /* owner key -> owner_group_t, for kinds owned by label */
    uint64_t seq;
    cache_delta_fn on_delta;
    void *on_delta_ud;
    size_t max_object_bytes; /* 0 = no limit */
};

/* What the cache reads from an object; strings are borrowed from the object except key. */
typedef struct {
    const char *ns, *name, *rv, *uid;
    const char *owner_uid, *owner_name; /* controller ownerReference of the owner kind */
    bool has_owner;
    bool deleting;      /* metadata.deletionTimestamp is set */
    int64_t generation; /* metadata.generation, 0 when absent or not an integer */
    char *key; /* allocated */
} parsed_t;

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static store_t *find_store(const cache_t *c, const char *kind);

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    BUF_FORMAT_VA(err, errlen, fmt);
}

const char *cache_change_name(cache_change_t type)
{
    switch (type) {
    case CACHE_ADDED:
        return "ADDED";
    case CACHE_MODIFIED:
        return "MODIFIED";
    case CACHE_DELETED:
        return "DELETED";
    case CACHE_SYNC:
        return "SYNC";
    case CACHE_UNCHANGED:
        break;
    }
    return "UNCHANGED";
}

/* ---- reading objects ---- */

/* The member `name` of o: 1 and *out when it is a string, 0 when absent or null, -1 when
 * it is something else. */
static int get_string(json_object *o, const char *name, const char **out)
{
    json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(o, name, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return -1;
    *out = json_object_get_string(v);
    return 1;
}

/* The controller ownerReference of kind owner_kind, if any. Malformed references are
 * skipped: they make an object no one's child, never an error. */
static void find_controller_owner(json_object *meta, const char *owner_kind, parsed_t *p)
{
    json_object *refs = NULL;
    if (!json_object_object_get_ex(meta, "ownerReferences", &refs) ||
        !json_object_is_type(refs, json_type_array))
        return;
    size_t n = json_object_array_length(refs);
    for (size_t i = 0; i < n; i++) {
        json_object *ref = json_object_array_get_idx(refs, i);
        json_object *controller = NULL;
        const char *kind = NULL;
        if (!json_object_is_type(ref, json_type_object) ||
            !json_object_object_get_ex(ref, "controller", &controller) ||
            !json_object_is_type(controller, json_type_boolean) ||
            !json_object_get_boolean(controller) || get_string(ref, "kind", &kind) != 1 ||
            strcmp(kind, owner_kind) != 0)
            continue;
        get_string(ref, "uid", &p->owner_uid);
        get_string(ref, "name", &p->owner_name);
        if (p->owner_uid && !*p->owner_uid)
            p->owner_uid = NULL;
        if (p->owner_name && !*p->owner_name)
            p->owner_name = NULL;
        p->has_owner = p->owner_uid || p->owner_name;
        return;
    }
}

/* Owned by a field (cache_set_owner_field): the string at the dotted path names the
 * owner, whatever the object's ownerReferences say; none (absent, not a string, empty):
 * no one's. */
static void owner_by_field(json_object *obj, const char *path, parsed_t *p)
{
    p->owner_uid = p->owner_name = NULL;
    p->has_owner = false;
    char step[64];
    json_object *at = obj;
    for (const char *s = path; at && *s;) {
        size_t n = strcspn(s, ".");
        if (n >= sizeof(step))
            return;
        memcpy(step, s, n);
        step[n] = '\0';
        json_object *next = NULL;
        at = json_object_is_type(at, json_type_object) && json_object_object_get_ex(at, step, &next) ? next : NULL;
        s += n + (s[n] == '.');
    }
    if (at && json_object_is_type(at, json_type_string) && json_object_get_string_len(at) > 0) {
        p->owner_name = json_object_get_string(at);
        p->has_owner = true;
    }
}

static char *make_key(const char *ns, const char *name)
{
    size_t nl = ns ? strlen(ns) : 0, ml = strlen(name);
    char *key = malloc(nl + ml + 2);
    if (!key)
        return NULL;
    if (nl) {
        memcpy(key, ns, nl);
        key[nl++] = '/';
    }
    memcpy(key + nl, name, ml + 1);
    return key;
}

/* Check obj as an object of kind and read what the cache needs. prefix starts every
 * message ("items[3]: " for a list). Returns 0, or -1 with a message (p->key NULL). */
static int parse_object(const cache_t *c, const char *kind, json_object *obj,
                        const char *prefix, parsed_t *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    json_object *meta = NULL;
    const char *obj_kind = NULL;
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        set_err(err, errlen, "%s%s: not a JSON object (%s)", prefix, kind,
                json_type_to_name(json_object_get_type(obj)));
        return -1;
    }
    if (!json_object_object_get_ex(obj, "metadata", &meta) ||
        !json_object_is_type(meta, json_type_object)) {
        set_err(err, errlen, "%s%s object without metadata", prefix, kind);
        return -1;
    }
    if (get_string(meta, "name", &p->name) != 1 || !*p->name) {
        set_err(err, errlen, "%s%s object without metadata.name", prefix, kind);
        return -1;
    }
    if (get_string(meta, "namespace", &p->ns) < 0) {
        set_err(err, errlen, "%s%s %s: metadata.namespace is not a string", prefix, kind,
                p->name);
        return -1;
    }
    p->key = make_key(p->ns, p->name);
    if (!p->key) {
        set_err(err, errlen, "%s%s %s: out of memory", prefix, kind, p->name);
        return -1;
    }
    /* Items of a List usually carry no kind; when one is given it must match. */
    int rc = get_string(obj, "kind", &obj_kind);
    if (rc < 0) {
        set_err(err, errlen, "%s%s %s: kind is not a string", prefix, kind, p->key);
        goto fail;
    }
    if (rc == 1 && strcmp(obj_kind, kind) != 0) {
        set_err(err, errlen, "%s%s %s: kind is \"%s\", expected %s", prefix, kind, p->key,
                obj_kind, kind);
        goto fail;
    }
    if (get_string(meta, "resourceVersion", &p->rv) < 0) {
        set_err(err, errlen, "%s%s %s: metadata.resourceVersion is not a string", prefix,
                kind, p->key);
        goto fail;
    }
    if (get_string(meta, "uid", &p->uid) < 0) {
        set_err(err, errlen, "%s%s %s: metadata.uid is not a string", prefix, kind, p->key);
        goto fail;
    }
    if (p->uid && !*p->uid)
        p->uid = NULL;
    json_object *deleted = NULL;
    p->deleting = json_object_object_get_ex(meta, "deletionTimestamp", &deleted) && deleted;
    json_object *gen = NULL;
    if (json_object_object_get_ex(meta, "generation", &gen) && json_object_is_type(gen, json_type_int))
        p->generation = json_object_get_int64(gen);
    find_controller_owner(meta, c->owner_kind, p);
    const store_t *s = find_store(c, kind);
    if (s && s->owner_field)
        owner_by_field(obj, s->owner_field, p);
    if (!p->has_owner && s && s->owner_label) {
        /* Owned by label (a Pod: its StatefulSet is the controller, the instance label
         * names the RedisCluster). A label that is not a string owns nothing. */
        json_object *labels = NULL;
        const char *v = NULL;
        if (json_object_object_get_ex(meta, "labels", &labels) && json_object_is_type(labels, json_type_object) &&
            get_string(labels, s->owner_label, &v) == 1 && *v) {
            p->owner_name = v;
            p->has_owner = true;
        }
    }
    return 0;
fail:
    free(p->key);
    p->key = NULL;
    return -1;
}

/* controller-runtime's default transform: managedFields is large and never read. */
static void strip_managed_fields(json_object *obj)
{
    json_object *meta = NULL;
    if (json_object_object_get_ex(obj, "metadata", &meta) &&
        json_object_is_type(meta, json_type_object))
        json_object_object_del(meta, "managedFields");
}

json_object *cache_minimal_form(json_object *obj, const char *why)
{
    static const char *const keep[] = {"name", "namespace", "uid", "resourceVersion", "generation",
                                       "creationTimestamp", "deletionTimestamp",
                                       "deletionGracePeriodSeconds", "ownerReferences", "finalizers"};
    json_object *meta = NULL, *v = NULL;
    json_object *mini = json_object_new_object();
    json_object *mmeta = json_object_new_object();
    json_object *ann = json_object_new_object();
    json_object *reason = json_object_new_string(why ? why : "");
    int bad = !mini || !mmeta || !ann || !reason;
    if (!bad && json_object_object_get_ex(obj, "apiVersion", &v))
        bad |= json_object_object_add(mini, "apiVersion", json_object_get(v));
    if (!bad && json_object_object_get_ex(obj, "kind", &v))
        bad |= json_object_object_add(mini, "kind", json_object_get(v));
    if (!bad && json_object_object_get_ex(obj, "metadata", &meta) && json_object_is_type(meta, json_type_object))
        for (size_t i = 0; !bad && i < sizeof(keep) / sizeof(keep[0]); i++)
            if (json_object_object_get_ex(meta, keep[i], &v))
                bad |= json_object_object_add(mmeta, keep[i], json_object_get(v));
    if (!bad) {
        bad |= json_object_object_add(ann, CACHE_TRUNCATED_ANNOTATION, reason);
        reason = NULL;
    }
    if (!bad) {
        bad |= json_object_object_add(mmeta, "annotations", ann);
        ann = NULL;
    }
    if (!bad) {
        bad |= json_object_object_add(mini, "metadata", mmeta);
        mmeta = NULL;
    }
    json_object_put(reason);
    json_object_put(ann);
    json_object_put(mmeta);
    if (bad) {
        json_object_put(mini);
        return NULL;
    }
    return mini;
}

/* ---- stores, entries and the owner index ---- */

static store_t *find_store(const cache_t *c, const char *kind)
{
    if (!kind)
        return NULL;
    for (size_t i = 0; i < c->nstores; i++)
        if (strcmp(c->stores[i]->kind, kind) == 0)
            return c->stores[i];
    return NULL;
}

/* Free e's strings (e itself stays). */
static void entry_clear(entry_t *e)
{
    free(e->json);
    free(e->owner_fallback);
    free(e->key);
    free(e->rv);
    free(e->uid);
    free(e->owner_uid);
}

static void entry_free(void *p)
{
    entry_clear(p);
    free(p);
}

static void entry_sync_view(entry_t *e)
{
    e->pub.kind = e->store->kind;
    e->pub.key = e->key;
    e->pub.resource_version = e->rv;
    e->pub.uid = e->uid;
    e->pub.owner_uid = e->owner_uid;
    e->pub.json = e->json;
}

/* Free a group (the values of the owner indexes). */
static void owner_group_free(void *p)
{
    owner_group_t *g = p;
    free(g->uid);
    free(g);
}

/* The group of owner uid, created when missing; NULL when out of memory. */
static owner_group_t *group_get_or_create(hm_t *home, const char *uid)
{
    owner_group_t *g = hm_get(home, uid);
    if (g)
        return g;
    g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->uid = strdup(uid);
    g->home = home;
    if (!g->uid || hm_put(home, g->uid, g, NULL)) {
        owner_group_free(g);
        return NULL;
    }
    return g;
}

static void group_link(owner_group_t *g, entry_t *e)
{
    e->group = g;
    DLIST_PUSH_FRONT(g->head, e, gprev, gnext);
}

/* Take e out of its group, freeing the group when it becomes empty. */
static void group_unlink(cache_t *c, entry_t *e)
{
    (void)c;
    owner_group_t *g = e->group;
    if (!g)
        return;
    DLIST_UNLINK(g->head, e, gprev, gnext);
    e->group = NULL;
    if (!g->head) {
        hm_remove(g->home, g->uid);
        owner_group_free(g);
    }
}

/* Tell the delta handler; unread: 1 nothing read changed, 2 only what is read late. */
static void emit(cache_t *c, cache_change_t type, const cache_item_t *item, int64_t old_generation,
                 int unread, const char *old_rv)
{
    cache_delta_t d = {.seq = ++c->seq,
                       .type = type,
                       .item = item,
                       .old_generation = old_generation,
                       .unread_only = unread == 1,
                       .late_only = unread == 2,
                       .old_resource_version = old_rv};
    if (c->on_delta)
        c->on_delta(c->on_delta_ud, &d);
}

/* The JSON text to keep of obj: its compact form (what proj keeps, projection.h; the
 * whole object without one), or its minimal form when that is over --max-object-bytes or
 * only its metadata came (partial_why says why), *truncated then telling which
 * (cache_item_t.truncated). NULL when out of memory. */
static char *stored_json(const cache_t *c, const projection_t *proj, json_object *obj, const char *partial_why,
                         size_t *truncated)
{
    const int fmt = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
    int oom = 0;
    json_object *compact = proj && !partial_why ? projection_reduce(proj, obj, PROJ_KEPT, &oom) : NULL;
    const char *text = oom ? NULL : json_object_to_json_string_ext(compact ? compact : obj, fmt);
    json_object *mini = NULL;
    *truncated = 0;
    if (text && (partial_why || (c->max_object_bytes && strlen(text) > c->max_object_bytes))) {
        /* Too large to keep (or only its metadata came): keep what names it and what its
         * deletion needs, and say why on it, so every reader sees it is not whole. */
        char why[256];
        *truncated = partial_why ? 1 : strlen(text);
        if (partial_why)
            snprintf(why, sizeof(why), "%s", partial_why);
        else
            snprintf(why, sizeof(why), "object of %zu bytes is over informerd's --max-object-bytes "
                     "(%zu): only its metadata is cached", *truncated, c->max_object_bytes);
        mini = cache_minimal_form(obj, why);
        text = mini ? json_object_to_json_string_ext(mini, fmt) : NULL;
    }
    char *json = text ? strdup(text) : NULL;
    json_object_put(mini);
    json_object_put(compact);
    return json;
}

/* The strings the upsert of p (object obj, of a kind compared by proj or NULL) stores,
 * made aside in next (a zeroed entry: rv, uid, owner_uid, owner_fallback, json,
 * pub.truncated and digest). Returns 0, or -1 when out of memory; either way
 * entry_clear(next) frees what was made. */
static int upsert_prepare(const cache_t *c, const projection_t *proj, const parsed_t *p, json_object *obj,
                          const char *partial_why, entry_t *next)
{
    int oom = 0;
    next->rv = str_dup_opt(p->rv, &oom);
    next->uid = str_dup_opt(p->uid, &oom);
    next->owner_uid = str_dup_opt(p->owner_uid, &oom);
    if (p->owner_name && !(next->owner_fallback = make_key(p->ns, p->owner_name)))
        oom = 1;
    if (!(next->json = stored_json(c, proj, obj, partial_why, &next->pub.truncated)))
        oom = 1;
    /* What a plan reads of it; a minimal form has no digest (its every change counts). */
    if (proj && !next->pub.truncated) {
        next->digest = projection_digest(proj, obj);
        next->late = projection_late_digest(proj, obj);
    }
    return oom ? -1 : 0;
}

/* Free *dst and move *src into it (*src becomes NULL). */
static void take_str(char **dst, char **src)
{
    free(*dst);
    *dst = *src;
    *src = NULL;
}

/* Give e what p says and the strings of next (taken), keeping s's uid index and the owner
 * groups in step; e joins group (NULL: none). Nothing here fails. */
static void entry_take(cache_t *c, store_t *s, entry_t *e, const parsed_t *p, entry_t *next,
                       owner_group_t *group)
{
    take_str(&e->json, &next->json);
    e->pub.json_len = strlen(e->json);
    e->pub.generation = p->generation;
    e->pub.truncated = next->pub.truncated;
    e->pub.deleting = p->deleting;
    take_str(&e->owner_fallback, &next->owner_fallback);
    take_str(&e->rv, &next->rv);
    /* The uid index holds e->uid's pointer: drop it before freeing the string. */
    if (e->uid && hm_get(s->by_uid, e->uid) == e)
        hm_remove(s->by_uid, e->uid);
    take_str(&e->uid, &next->uid);
    if (e->uid)
        hm_put(s->by_uid, e->uid, e, NULL);
    if (group != e->group) {
        group_unlink(c, e);
        if (group)
            group_link(group, e);
    }
    take_str(&e->owner_uid, &next->owner_uid);
    e->digest = next->digest;
    e->late = next->late;
    e->gen = s->gen;
    entry_sync_view(e);
}

/* Insert or replace the parsed object in s. Everything that can fail happens before the
 * first change, so on -1 (out of memory) s is unchanged. Takes p->key when it creates an
 * entry (p->key is then NULL). */
static int store_upsert(cache_t *c, store_t *s, parsed_t *p, json_object *obj,
                        const char *partial_why, cache_change_t *change)
{
    entry_t *e = hm_get(s->by_key, p->key);
    if (e && e->rv && p->rv && strcmp(e->rv, p->rv) == 0) {
        e->gen = s->gen;
        *change = CACHE_UNCHANGED;
        return 0;
    }
    int rc = -1;
    entry_t *fresh = NULL;
    owner_group_t *group = NULL;
    entry_t next = {0};
    if (upsert_prepare(c, s->projection, p, obj, partial_why, &next))
        goto out;
    if (!e && !(fresh = calloc(1, sizeof(*fresh))))
        goto out;
    if (hm_reserve(s->by_key, hm_count(s->by_key) + 1) ||
        hm_reserve(s->by_uid, hm_count(s->by_uid) + 1))
        goto out;
    /* Last fallible step: a group created here is kept (it gets e below). */
    if (next.owner_uid && !(group = group_get_or_create(c->owners, next.owner_uid)))
        goto out;
    if (!next.owner_uid && next.owner_fallback && (s->owner_label || s->owner_field) &&
        !(group = group_get_or_create(c->label_owners, next.owner_fallback)))
        goto out;

    /* Commit; nothing below can fail. */
    int64_t old_generation = 0;
    int unread = 0;
    char old_rv[CACHE_OLD_RV_MAX] = "";
    cache_change_t type = CACHE_MODIFIED;
    if (fresh) {
        e = fresh;
        fresh = NULL;
        e->store = s;
        e->key = p->key;
        p->key = NULL;
        hm_put(s->by_key, e->key, e, NULL);
        type = CACHE_ADDED;
    } else {
        old_generation = e->pub.generation;
        /* 1: nothing read changed; 2: only what is read late (projection.h PROJ_LATE) */
        if (e->digest && e->digest == next.digest)
            unread = !e->late || !next.late ? 0 : e->late == next.late ? 1 : 2;
        if (e->rv && strlen(e->rv) < sizeof(old_rv))
            memcpy(old_rv, e->rv, strlen(e->rv) + 1);
    }
    entry_take(c, s, e, p, &next, group);
    e->pub.seq = c->seq + 1;
    emit(c, type, &e->pub, old_generation, unread, old_rv[0] ? old_rv : NULL);
    *change = type;
    rc = 0;
out:
    entry_clear(&next);
    free(fresh);
    return rc;
}

/* Remove e from s and its indexes, emit DELETED, free it. */
static void store_delete(cache_t *c, store_t *s, entry_t *e)
{
    hm_remove(s->by_key, e->key);
    if (e->uid && hm_get(s->by_uid, e->uid) == e)
        hm_remove(s->by_uid, e->uid);
    group_unlink(c, e);
    emit(c, CACHE_DELETED, &e->pub, 0, 0, NULL);
    entry_free(e);
}

static void store_free(store_t *s)
{
    if (!s)
        return;
    hm_destroy_with(&s->by_key, entry_free);
    hm_destroy(&s->by_uid);
    free(s->kind);
    free(s->owner_label);
    free(s->owner_field);
    free(s);
}

/* ---- public API ---- */

void cache_destroy(cache_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cache_t *c = *self_p;
    for (size_t i = 0; i < c->nstores; i++)
        store_free(c->stores[i]);
    free(c->stores);
    hm_destroy_with(&c->owners, owner_group_free);
    hm_destroy_with(&c->label_owners, owner_group_free);
    free(c->owner_kind);
    free(c);
    *self_p = NULL;
}

cache_t *cache_new(const char *owner_kind)
{
    cache_t *c = owner_kind && *owner_kind ? calloc(1, sizeof(*c)) : NULL;
    if (!c)
        return NULL;
    c->owner_kind = strdup(owner_kind);
    c->owners = hm_new(0);
    c->label_owners = hm_new(0);
    if (!c->owner_kind || !c->owners || !c->label_owners || cache_add_kind(c, owner_kind)) {
        cache_destroy(&c);
        return NULL;
    }
    return c;
}

int cache_add_kind(cache_t *c, const char *kind)
{
    if (!kind || !*kind)
        return -1;
    if (find_store(c, kind))
        return 0;
    store_t **stores = realloc(c->stores, (c->nstores + 1) * sizeof(*stores));
    if (!stores)
        return -1;
    c->stores = stores;
    store_t *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->kind = strdup(kind);
    s->by_key = hm_new(0);
    s->by_uid = hm_new(0);
    if (!s->kind || !s->by_key || !s->by_uid) {
        store_free(s);
        return -1;
    }
    c->stores[c->nstores++] = s;
    return 0;
}

void cache_set_delta_handler(cache_t *c, cache_delta_fn fn, void *ud)
{
    c->on_delta = fn;
    c->on_delta_ud = ud;
}

/* The store of kind, or NULL with a message. */
static store_t *store_or_err(const cache_t *c, const char *kind, char *err, size_t errlen)
{
    store_t *s = find_store(c, kind);
    if (!s)
        set_err(err, errlen, "kind %s is not watched by the cache", kind ? kind : "(null)");
    return s;
}

int cache_upsert(cache_t *c, const char *kind, json_object *obj, cache_change_t *change,
                 char *err, size_t errlen)
{
    cache_change_t dummy;
    parsed_t p = {0};
    int rc = -1;
    if (!change)
        change = &dummy;
    *change = CACHE_UNCHANGED;
    store_t *s = store_or_err(c, kind, err, errlen);
    if (!s || parse_object(c, kind, obj, "", &p, err, errlen))
        goto out;
    strip_managed_fields(obj);
    if (store_upsert(c, s, &p, obj, NULL, change)) {
        set_err(err, errlen, "%s %s: out of memory", kind, p.key);
        goto out;
    }
    rc = 0;
out:
    free(p.key);
    return rc;
}

int cache_delete(cache_t *c, const char *kind, const char *key, cache_change_t *change,
                 char *err, size_t errlen)
{
    if (change)
        *change = CACHE_UNCHANGED;
    store_t *s = store_or_err(c, kind, err, errlen);
    if (!s)
        return -1;
    if (!key) {
        set_err(err, errlen, "%s: delete without a key", kind);
        return -1;
    }
    entry_t *e = hm_get(s->by_key, key);
    if (!e)
        return 0;
    store_delete(c, s, e);
    if (change)
        *change = CACHE_DELETED;
    return 0;
}

/* Check every item of items, then upsert them all into s under its current generation.
 * Messages name the list as "<kind> list: items[i]". Returns 0, or -1 with a message (the
 * cache unchanged when an item is bad; partly updated when memory ran out). */
static int store_add_items(cache_t *c, store_t *s, const char *kind, json_object *items,
                           const char *partial_why, char *err, size_t errlen)
{
    int rc = -1;
    parsed_t *ps = NULL;
    hm_t *seen = NULL;
    size_t n = 0;
    if (!items || !json_object_is_type(items, json_type_array)) {
        set_err(err, errlen, "%s list: items is not a JSON array (%s)", kind,
                json_type_to_name(json_object_get_type(items)));
        goto out;
    }
    n = json_object_array_length(items);
    ps = calloc(n ? n : 1, sizeof(*ps));
    seen = hm_new(n);
    if (!ps || !seen) {
        set_err(err, errlen, "%s list: out of memory", kind);
        goto out;
    }
    /* Check the whole list before touching the cache: all or nothing. */
    for (size_t i = 0; i < n; i++) {
        char prefix[64];
        void *dup = NULL;
        snprintf(prefix, sizeof(prefix), "%s list: items[%zu]: ", kind, i);
        if (parse_object(c, kind, json_object_array_get_idx(items, i), prefix, &ps[i], err,
                         errlen))
            goto out;
        if (hm_put(seen, ps[i].key, &ps[i], &dup)) {
            set_err(err, errlen, "%s list: out of memory", kind);
            goto out;
        }
        if (dup) {
            set_err(err, errlen, "%sduplicate key %s", prefix, ps[i].key);
            goto out;
        }
    }
    hm_destroy(&seen); /* its keys are about to move into entries */

    for (size_t i = 0; i < n; i++) {
        json_object *obj = json_object_array_get_idx(items, i);
        cache_change_t change;
        strip_managed_fields(obj);
        if (store_upsert(c, s, &ps[i], obj, partial_why, &change)) {
            set_err(err, errlen, "%s list: items[%zu] %s: out of memory", kind, i, ps[i].key);
            goto out;
        }
    }
    rc = 0;
out:
    hm_destroy(&seen);
    if (ps)
        for (size_t i = 0; i < n; i++)
            free(ps[i].key);
    free(ps);
    return rc;
}

/* Delete what the current generation of s has not seen. Removal while iterating is safe. */
static void store_sweep(cache_t *c, store_t *s)
{
    hm_iter_t it = HM_ITER_INIT;
    void *v;
    while (hm_next(s->by_key, &it, NULL, &v)) {
        entry_t *e = v;
        if (e->gen != s->gen)
            store_delete(c, s, e);
    }
}

int cache_relist_begin(cache_t *c, const char *kind, char *err, size_t errlen)
{
    store_t *s = store_or_err(c, kind, err, errlen);
    if (!s)
        return -1;
    s->gen++;
    return 0;
}

int cache_relist_add(cache_t *c, const char *kind, json_object *items, char *err, size_t errlen)
{
    store_t *s = store_or_err(c, kind, err, errlen);
    return s ? store_add_items(c, s, kind, items, NULL, err, errlen) : -1;
}

int cache_relist_add_partial(cache_t *c, const char *kind, json_object *items, const char *why,
                             char *err, size_t errlen)
{
    store_t *s = store_or_err(c, kind, err, errlen);
    return s ? store_add_items(c, s, kind, items, why ? why : "only its metadata was listed", err, errlen) : -1;
}

int cache_set_projection(cache_t *c, const char *kind, const projection_t *p)
{
    store_t *s = find_store(c, kind);
    if (!s || s == c->stores[0])
        return -1;
    s->projection = p;
    return 0;
}

void cache_set_max_object_bytes(cache_t *c, size_t max)
{
    c->max_object_bytes = max;
}

int cache_relist_end(cache_t *c, const char *kind, char *err, size_t errlen)
{
    store_t *s = store_or_err(c, kind, err, errlen);
    if (!s)
        return -1;
    store_sweep(c, s);
    return 0;
}

int cache_replace(cache_t *c, const char *kind, json_object *items, char *err,
                  size_t errlen)
{
    store_t *s = store_or_err(c, kind, err, errlen);
    if (!s)
        return -1;
    /* A new generation with nothing marked yet changes nothing visible: a refused list
     * leaves the cache as it was, and the next relist starts a generation of its own. */
    s->gen++;
    if (store_add_items(c, s, kind, items, NULL, err, errlen))
        return -1;
    store_sweep(c, s);
    return 0;
}

size_t cache_resync(cache_t *c, const char *kind)
{
    size_t count = 0;
    for (size_t i = 0; i < c->nstores; i++) {
        store_t *s = c->stores[i];
        if (kind && strcmp(kind, s->kind) != 0)
            continue;
        hm_iter_t it = HM_ITER_INIT;
        void *v;
        while (hm_next(s->by_key, &it, NULL, &v)) {
            emit(c, CACHE_SYNC, &((entry_t *)v)->pub, 0, 0, NULL);
            count++;
        }
    }
    return count;
}

/* The entry of kind under id in its store's index by_uid (else by key), or NULL. */
static const cache_item_t *lookup(const cache_t *c, const char *kind, const char *id, int by_uid)
{
    const store_t *s = find_store(c, kind);
    if (!s || !id)
        return NULL;
    const entry_t *e = hm_get(by_uid ? s->by_uid : s->by_key, id);
    return e ? &e->pub : NULL;
}

const cache_item_t *cache_lookup(const cache_t *c, const char *kind, const char *key)
{
    return lookup(c, kind, key, 0);
}

const char *cache_get_json(const cache_t *c, const char *kind, const char *key)
{
    const cache_item_t *item = cache_lookup(c, kind, key);
    return item ? item->json : NULL;
}

int cache_children_json(const cache_t *c, const char *key, const char *const *kinds, size_t nkinds, buf_t *out)
{
    int rc = buf_puts(out, "{");
    for (size_t i = 0; i < nkinds && rc == 0; i++) {
        const char *o = cache_get_json(c, kinds[i], key);
        rc = buf_printf(out, "%s\"%s\":", i ? "," : "", kinds[i]);
        if (rc == 0)
            rc = buf_puts(out, o ? o : "null");
    }
    return rc == 0 ? buf_puts(out, "}") : -1;
}

/* What cache_set_owner_label and cache_set_owner_field share: kind's store (a child kind,
 * still empty) keeps a copy of how, its owner_field when is_field (a field path), else its
 * owner_label. Returns 0, or -1 with the store unchanged. */
static int set_owner_how(cache_t *c, const char *kind, const char *how, int is_field)
{
    store_t *s = find_store(c, kind);
    if (!s || !how || !*how || strcmp(kind, c->owner_kind) == 0 || hm_count(s->by_key))
        return -1;
    char *copy = strdup(how);
    if (!copy)
        return -1;
    char **at = is_field ? &s->owner_field : &s->owner_label;
    free(*at);
    *at = copy;
    return 0;
}

int cache_set_owner_label(cache_t *c, const char *kind, const char *label)
{
    return set_owner_how(c, kind, label, 0);
}

int cache_set_owner_field(cache_t *c, const char *kind, const char *path)
{
    return set_owner_how(c, kind, path, 1);
}

int cache_label_children_json(const cache_t *c, const char *kind, const char *key, buf_t *out)
{
    const owner_group_t *g = key ? hm_get(c->label_owners, key) : NULL;
    int rc = buf_puts(out, "[");
    size_t n = 0;
    for (const entry_t *e = g ? g->head : NULL; e && rc == 0; e = e->gnext) {
        if (kind && strcmp(kind, e->store->kind) != 0)
            continue;
        rc = buf_puts(out, n++ ? "," : "");
        if (rc == 0)
            rc = buf_puts(out, e->json);
    }
    return rc == 0 ? buf_puts(out, "]") : -1;
}

json_object *cache_get_parsed(const cache_t *c, const char *kind, const char *key)
{
    const cache_item_t *item = cache_lookup(c, kind, key);
    return item ? json_tokener_parse(item->json) : NULL;
}

const cache_item_t *cache_lookup_uid(const cache_t *c, const char *kind, const char *uid)
{
    return lookup(c, kind, uid, 1);
}

size_t cache_count(const cache_t *c, const char *kind)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nstores; i++)
        if (!kind || strcmp(kind, c->stores[i]->kind) == 0)
            n += hm_count(c->stores[i]->by_key);
    return n;
}

size_t cache_foreach(const cache_t *c, const char *kind, cache_visit_fn visit, void *ud)
{
    size_t count = 0;
    for (size_t i = 0; i < c->nstores; i++) {
        const store_t *s = c->stores[i];
        if (kind && strcmp(kind, s->kind) != 0)
            continue;
        hm_iter_t it = HM_ITER_INIT;
        void *v;
        while (hm_next(s->by_key, &it, NULL, &v)) {
            count++;
            if (visit && visit(ud, &((const entry_t *)v)->pub))
                return count;
        }
    }
    return count;
}

uint64_t cache_seq(const cache_t *c)
{
    return c->seq;
}

uint64_t cache_snapshot(const cache_t *c, const char *kind, cache_visit_fn visit, void *ud)
{
    /* Single-threaded and visitors may not modify: the state cannot move under us. */
    uint64_t seq = c->seq;
    cache_foreach(c, kind, visit, ud);
    return seq;
}

size_t cache_children_of(const cache_t *c, const char *owner_uid, const char *kind,
                         cache_visit_fn visit, void *ud)
{
    if (!owner_uid)
        return 0;
    const owner_group_t *g = hm_get(c->owners, owner_uid);
    size_t count = 0;
    for (const entry_t *e = g ? g->head : NULL; e; e = e->gnext) {
        if (kind && strcmp(kind, e->store->kind) != 0)
            continue;
        count++;
        if (visit && visit(ud, &e->pub))
            break;
    }
    return count;
}

int cache_owner_key(const cache_t *c, const char *kind, json_object *obj, char *out,
                    size_t outlen)
{
    parsed_t p;
    int rc = -1;
    if (!out || !outlen || !kind)
        return -1;
    out[0] = '\0';
    if (parse_object(c, kind, obj, "", &p, NULL, 0))
        return -1;
    const char *key = NULL;
    char *fallback = NULL;
    if (strcmp(kind, c->owner_kind) == 0) {
        key = p.key;
    } else if (p.has_owner) {
        const cache_item_t *owner = cache_lookup_uid(c, c->owner_kind, p.owner_uid);
        if (owner)
            key = owner->key;
        else if (p.owner_name)
            key = fallback = make_key(p.ns, p.owner_name);
        if (!key) {
            rc = p.owner_name ? -1 : 1; /* out of memory, or nothing to resolve */
            goto out;
        }
    } else {
        rc = 1;
        goto out;
    }
    if (strlen(key) < outlen) {
        memcpy(out, key, strlen(key) + 1);
        rc = 0;
    }
out:
    free(fallback);
    free(p.key);
    return rc;
}

int cache_item_owner_key(const cache_t *c, const cache_item_t *item, char *out, size_t outlen)
{
    if (!item || !out || !outlen)
        return -1;
    out[0] = '\0';
    const entry_t *e = (const entry_t *)item; /* pub is the entry's first member */
    const char *key = NULL;
    if (strcmp(item->kind, c->owner_kind) == 0) {
        key = item->key;
    } else if (item->owner_uid || e->owner_fallback) {
        const cache_item_t *owner = cache_lookup_uid(c, c->owner_kind, item->owner_uid);
        key = owner ? owner->key : e->owner_fallback;
        if (!key)
            return 1; /* a uid nobody has, and no name to fall back on */
    } else {
        return 1;
    }
    size_t n = strlen(key);
    if (n >= outlen)
        return -1;
    memcpy(out, key, n + 1);
    return 0;
}
