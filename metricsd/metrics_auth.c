#include "metrics_auth.h"

#include "jsonx.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    unsigned char hash[32];
    int decision;
    int64_t expires_ns;
} mauth_entry_t;

struct mauth_cache {
    mauth_entry_t *e;
    size_t n, cap;
};

mauth_cache_t *mauth_cache_new(size_t capacity)
{
    if (capacity == 0)
        return NULL;
    mauth_cache_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->e = calloc(capacity, sizeof(*c->e));
    if (!c->e) {
        free(c);
        return NULL;
    }
    c->cap = capacity;
    return c;
}

void mauth_cache_destroy(mauth_cache_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->e);
    free(*self_p);
    *self_p = NULL;
}

static mauth_entry_t *find(const mauth_cache_t *c, const unsigned char hash[32])
{
    for (size_t i = 0; i < c->n; i++) {
        if (memcmp(c->e[i].hash, hash, 32) == 0)
            return &c->e[i];
    }
    return NULL;
}

int mauth_cache_get(const mauth_cache_t *c, const unsigned char hash[32], int64_t now_ns)
{
    const mauth_entry_t *e = find(c, hash);
    return e && now_ns < e->expires_ns ? e->decision : 0;
}

void mauth_cache_put(mauth_cache_t *c, const unsigned char hash[32], int decision, int64_t now_ns)
{
    int64_t ttl = decision == 200 ? MAUTH_ALLOW_TTL_NS
                : decision == 403 ? MAUTH_DENY_TTL_NS
                : decision == 401 ? MAUTH_UNAUTH_TTL_NS : 0;
    if (!ttl)
        return;
    mauth_entry_t *e = find(c, hash);
    if (!e && c->n < c->cap)
        e = &c->e[c->n++];
    if (!e) { /* full: the entry that expires first (an expired one if any) goes */
        e = &c->e[0];
        for (size_t i = 1; i < c->n; i++) {
            if (c->e[i].expires_ns < e->expires_ns)
                e = &c->e[i];
        }
    }
    memcpy(e->hash, hash, 32);
    e->decision = decision;
    e->expires_ns = now_ns + ttl;
}

size_t mauth_cache_size(const mauth_cache_t *c)
{
    return c->n;
}

const char *mauth_bearer(const char *header)
{
    if (!header || strncasecmp(header, "Bearer ", 7) != 0)
        return NULL;
    const char *t = header + 7;
    while (*t == ' ')
        t++;
    size_t n = strlen(t);
    if (n == 0 || n > MAUTH_MAX_TOKEN || strpbrk(t, " \t"))
        return NULL;
    return t;
}

json_object *mauth_token_review(const char *token)
{
    int oom = 0;
    json_object *r = jsonx_new_obj(&oom), *spec = jsonx_new_obj(&oom);
    jsonx_put(r, "apiVersion", jsonx_new_str("authentication.k8s.io/v1", &oom), &oom);
    jsonx_put(r, "kind", jsonx_new_str("TokenReview", &oom), &oom);
    jsonx_put(spec, "token", jsonx_new_str(token, &oom), &oom);
    jsonx_put(r, "spec", spec, &oom);
    return jsonx_done(r, oom);
}

int mauth_token_review_user(json_object *review, json_object **user)
{
    json_object *status = jsonx_get(review, "status");
    json_object *auth = jsonx_get(status, "authenticated");
    json_object *u = jsonx_get(status, "user");
    const char *name = jsonx_str(u, "username");
    if (!auth || !json_object_is_type(auth, json_type_boolean) || !json_object_get_boolean(auth) ||
        !name || !*name)
        return 0;
    *user = u;
    return 1;
}

json_object *mauth_access_review(json_object *user, const char *path)
{
    int oom = 0;
    json_object *r = jsonx_new_obj(&oom), *spec = jsonx_new_obj(&oom), *nra = jsonx_new_obj(&oom);
    jsonx_put(r, "apiVersion", jsonx_new_str("authorization.k8s.io/v1", &oom), &oom);
    jsonx_put(r, "kind", jsonx_new_str("SubjectAccessReview", &oom), &oom);
    jsonx_put(spec, "user", jsonx_new_str(jsonx_str(user, "username"), &oom), &oom);
    const char *uid = jsonx_str(user, "uid");
    if (uid)
        jsonx_put(spec, "uid", jsonx_new_str(uid, &oom), &oom);
    json_object *groups = jsonx_get(user, "groups"), *extra = jsonx_get(user, "extra");
    if (groups && json_object_is_type(groups, json_type_array))
        jsonx_put(spec, "groups", json_object_get(groups), &oom);
    if (extra && json_object_is_type(extra, json_type_object))
        jsonx_put(spec, "extra", json_object_get(extra), &oom);
    jsonx_put(nra, "path", jsonx_new_str(path, &oom), &oom);
    jsonx_put(nra, "verb", jsonx_new_str("get", &oom), &oom);
    jsonx_put(spec, "nonResourceAttributes", nra, &oom);
    jsonx_put(r, "spec", spec, &oom);
    return jsonx_done(r, oom);
}

int mauth_access_allowed(json_object *review)
{
    json_object *status = jsonx_get(review, "status");
    json_object *allowed = jsonx_get(status, "allowed"), *denied = jsonx_get(status, "denied");
    if (denied && json_object_is_type(denied, json_type_boolean) && json_object_get_boolean(denied))
        return 0;
    return allowed && json_object_is_type(allowed, json_type_boolean) &&
           json_object_get_boolean(allowed);
}
