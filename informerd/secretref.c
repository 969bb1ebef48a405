/* secretref: Secret -> RedisClusters index. See secretref.h. */
#include "secretref.h"

#include "hashmap.h"
#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One reference of a RedisCluster to a Secret, in its Secret's bucket. */
typedef struct rcrefs rcrefs_t;
typedef struct {
    rcrefs_t *owner;
    char *secret_key;
} ref_t;

/* A RedisCluster's references (by_rc under rc_key). */
struct rcrefs {
    char *rc_key;
    ref_t refs[SECRETREF_MAX];
    size_t n;
};

/* The RedisClusters of one Secret. */
typedef struct {
    char *secret_key;
    ref_t **refs;
    size_t n, cap;
} bucket_t;

struct secretref {
    hm_t *by_rc;     /* rc_key -> rcrefs_t */
    hm_t *by_secret; /* secret_key -> bucket_t */
};

secretref_t *secretref_new(void)
{
    secretref_t *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->by_rc = hm_new(0);
    x->by_secret = hm_new(0);
    if (!x->by_rc || !x->by_secret)
        secretref_destroy(&x);
    return x;
}

static void rcrefs_free(void *p)
{
    rcrefs_t *r = p;
    for (size_t i = 0; i < r->n; i++)
        free(r->refs[i].secret_key);
    free(r->rc_key);
    free(r);
}

static void bucket_free(void *p)
{
    bucket_t *b = p;
    free(b->secret_key);
    free(b->refs);
    free(b);
}

void secretref_destroy(secretref_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    secretref_t *x = *self_p;
    hm_destroy_with(&x->by_rc, rcrefs_free);
    hm_destroy_with(&x->by_secret, bucket_free);
    free(x);
    *self_p = NULL;
}

const char *secretref_of(const json_object *rc)
{
    const char *s = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "name");
    return s && *s ? s : NULL;
}

/* name into names[*n] unless it is empty, there already or names is full. */
static void add_name(const char *name, const char **names, size_t *n, size_t cap)
{
    if (!name || !*name || *n == cap)
        return;
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(names[i], name))
            return;
    names[(*n)++] = name;
}

size_t secretref_of_all(const json_object *rc, const char **names, size_t cap)
{
    size_t n = 0;
    add_name(secretref_of(rc), names, &n, cap);
    add_name(JSONX_STR_AT(rc, "spec", "tls", "secretRef", "name"), names, &n, cap);
    const json_object *users = JSONX_AT(rc, "spec", "acl", "users");
    for (size_t i = 0; i < jsonx_len(users); i++)
        add_name(JSONX_STR_AT(json_object_array_get_idx(users, i), "passwordSecretRef", "name"), names, &n, cap);
    return n;
}

/* Take every reference of r out of its Secret's bucket (a bucket goes when it empties). */
static void unbucket(secretref_t *x, rcrefs_t *r)
{
    for (size_t k = 0; k < r->n; k++) {
        bucket_t *b = hm_get(x->by_secret, r->refs[k].secret_key);
        for (size_t i = 0; b && i < b->n; i++) {
            if (b->refs[i] == &r->refs[k]) {
                b->refs[i] = b->refs[--b->n];
                break;
            }
        }
        if (b && !b->n) {
            hm_remove(x->by_secret, b->secret_key);
            bucket_free(b);
        }
    }
}

/* unbucket r, take it out of by_rc, and free it. */
static void drop(secretref_t *x, rcrefs_t *r)
{
    unbucket(x, r);
    hm_remove(x->by_rc, r->rc_key);
    rcrefs_free(r);
}

void secretref_forget(secretref_t *x, const char *rc_key)
{
    rcrefs_t *r = hm_get(x->by_rc, rc_key);
    if (r)
        drop(x, r);
}

/* 1 when r references exactly the Secret keys of fresh. */
static int same_refs(const rcrefs_t *r, const rcrefs_t *fresh)
{
    if (r->n != fresh->n)
        return 0;
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->refs[i].secret_key, fresh->refs[i].secret_key))
            return 0;
    return 1;
}

/* The new references of rc_key ("ns/name") to names[0..n) of its namespace (allocated,
 * not yet indexed), or NULL when out of memory. */
static rcrefs_t *rcrefs_new(const char *rc_key, size_t nsl, const char *const *names, size_t n)
{
    rcrefs_t *r = calloc(1, sizeof(*r));
    if (!r || !(r->rc_key = strdup(rc_key))) {
        free(r);
        return NULL;
    }
    for (size_t i = 0; i < n && i < SECRETREF_MAX; i++) {
        size_t len = nsl + 1 + strlen(names[i]) + 1;
        if (!(r->refs[i].secret_key = malloc(len))) {
            rcrefs_free(r);
            return NULL;
        }
        snprintf(r->refs[i].secret_key, len, "%.*s/%s", (int)nsl, rc_key, names[i]);
        r->refs[i].owner = r;
        r->n++;
    }
    return r;
}

/* Room in r's buckets for r's references (new buckets made and put). 0, or -1 when out
 * of memory (buckets made stay, empty: a later put fills them, or a destroy frees them). */
static int make_room(secretref_t *x, const rcrefs_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        bucket_t *b = hm_get(x->by_secret, r->refs[i].secret_key);
        if (!b) {
            if (hm_reserve(x->by_secret, hm_count(x->by_secret) + 1) || !(b = calloc(1, sizeof(*b))) ||
                !(b->secret_key = strdup(r->refs[i].secret_key))) {
                free(b);
                return -1;
            }
            hm_put(x->by_secret, b->secret_key, b, NULL);
        }
        if (b->n + r->n > b->cap) {
            size_t cap = b->cap ? 2 * b->cap + r->n : 4 + r->n;
            ref_t **refs = realloc(b->refs, cap * sizeof(*refs));
            if (!refs)
                return -1;
            b->refs = refs;
            b->cap = cap;
        }
    }
    return hm_reserve(x->by_rc, hm_count(x->by_rc) + 1);
}

int secretref_set_all(secretref_t *x, const char *rc_key, const char *const *names, size_t n)
{
    const char *slash = strchr(rc_key, '/');
    if (!slash)
        return -1;
    rcrefs_t *old = hm_get(x->by_rc, rc_key);
    if (!n) {
        if (old)
            drop(x, old);
        return 0;
    }
    rcrefs_t *r = rcrefs_new(rc_key, (size_t)(slash - rc_key), names, n);
    if (!r)
        return -1;
    if (old && same_refs(old, r)) {
        rcrefs_free(r);
        return 0; /* unchanged */
    }
    /* Room first, so a failure leaves the references as they were; then r's references
     * in, old's out (r's buckets are not empty then: never freed). */
    if (make_room(x, r)) {
        rcrefs_free(r);
        return -1;
    }
    for (size_t i = 0; i < r->n; i++) {
        bucket_t *b = hm_get(x->by_secret, r->refs[i].secret_key);
        b->refs[b->n++] = &r->refs[i];
    }
    if (old)
        unbucket(x, old);
    void *prev = NULL;
    hm_put(x->by_rc, r->rc_key, r, &prev);
    if (prev)
        rcrefs_free(prev);
    return 0;
}

int secretref_set(secretref_t *x, const char *rc_key, const char *secret_name)
{
    const char *names[1] = {secret_name};
    return secretref_set_all(x, rc_key, names, secret_name && *secret_name ? 1 : 0);
}

size_t secretref_each(const secretref_t *x, const char *secret_key, void (*fn)(void *ud, const char *rc_key),
                      void *ud)
{
    const bucket_t *b = hm_get(x->by_secret, secret_key);
    for (size_t i = 0; b && i < b->n; i++)
        fn(ud, b->refs[i]->owner->rc_key);
    return b ? b->n : 0;
}

size_t secretref_count(const secretref_t *x)
{
    return hm_count(x->by_rc);
}

int secretref_metadata_only(json_object *obj)
{
    if (!obj || !json_object_is_type(obj, json_type_object))
        return -1;
    /* Members are dropped after the walk (deleting during it is not allowed), up to 64 a
     * round; an object with more takes more rounds. */
    size_t n;
    do {
        const char *drop[64];
        n = 0;
        json_object_object_foreach(obj, k, v)
        {
            (void)v;
            if (strcmp(k, "metadata") && strcmp(k, "apiVersion") && strcmp(k, "kind") && n < 64)
                drop[n++] = k;
        }
        for (size_t i = 0; i < n; i++)
            json_object_object_del(obj, drop[i]);
    } while (n == 64);
    return 0;
}
