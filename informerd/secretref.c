/* secretref: Secret -> RedisClusters index. See secretref.h. */
#include "secretref.h"

#include "hashmap.h"
#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One RedisCluster's reference, in both maps: by_rc under rc_key, and in its Secret's
 * bucket. */
typedef struct {
    char *rc_key;
    char *secret_key;
} ref_t;

/* The RedisClusters of one Secret. */
typedef struct {
    char *secret_key;
    ref_t **refs;
    size_t n, cap;
} bucket_t;

struct secretref {
    hm_t *by_rc;     /* rc_key -> ref_t */
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

static void ref_free(void *p)
{
    ref_t *r = p;
    free(r->rc_key);
    free(r->secret_key);
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
    hm_destroy_with(&x->by_rc, ref_free);
    hm_destroy_with(&x->by_secret, bucket_free);
    free(x);
    *self_p = NULL;
}

const char *secretref_of(const json_object *rc)
{
    const char *s = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "name");
    return s && *s ? s : NULL;
}

/* Take r out of its Secret's bucket (the bucket goes when it empties) and out of by_rc,
 * and free it. */
static void drop(secretref_t *x, ref_t *r)
{
    bucket_t *b = hm_get(x->by_secret, r->secret_key);
    for (size_t i = 0; b && i < b->n; i++) {
        if (b->refs[i] == r) {
            b->refs[i] = b->refs[--b->n];
            break;
        }
    }
    if (b && !b->n) {
        hm_remove(x->by_secret, b->secret_key);
        bucket_free(b);
    }
    hm_remove(x->by_rc, r->rc_key);
    ref_free(r);
}

void secretref_forget(secretref_t *x, const char *rc_key)
{
    ref_t *r = hm_get(x->by_rc, rc_key);
    if (r)
        drop(x, r);
}

int secretref_set(secretref_t *x, const char *rc_key, const char *secret_name)
{
    const char *slash = strchr(rc_key, '/');
    if (!slash)
        return -1;
    ref_t *old = hm_get(x->by_rc, rc_key);
    if (!secret_name || !*secret_name) {
        if (old)
            drop(x, old);
        return 0;
    }
    size_t nsl = (size_t)(slash - rc_key), len = nsl + 1 + strlen(secret_name) + 1;
    char *skey = malloc(len);
    if (!skey)
        return -1;
    snprintf(skey, len, "%.*s/%s", (int)nsl, rc_key, secret_name);
    if (old && !strcmp(old->secret_key, skey)) {
        free(skey);
        return 0; /* unchanged */
    }
    /* Make every allocation before changing anything, so a failure leaves it as it was. */
    ref_t *r = calloc(1, sizeof(*r));
    bucket_t *b = hm_get(x->by_secret, skey), *nb = NULL;
    if (!r || !(r->rc_key = strdup(rc_key)))
        goto fail;
    r->secret_key = skey;
    if (!b) {
        if (!(nb = calloc(1, sizeof(*nb))) || !(nb->secret_key = strdup(skey)))
            goto fail;
        b = nb;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 4;
        ref_t **refs = realloc(b->refs, cap * sizeof(*refs));
        if (!refs)
            goto fail;
        b->refs = refs;
        b->cap = cap;
    }
    if (hm_reserve(x->by_rc, hm_count(x->by_rc) + 1) || hm_reserve(x->by_secret, hm_count(x->by_secret) + 1))
        goto fail;
    if (old)
        drop(x, old); /* never frees b: b's bucket is not old's (their keys differ) */
    if (nb)
        hm_put(x->by_secret, nb->secret_key, nb, NULL);
    b->refs[b->n++] = r;
    hm_put(x->by_rc, r->rc_key, r, NULL);
    return 0;
fail:
    if (nb)
        bucket_free(nb);
    if (r) {
        free(r->rc_key);
        free(r);
    }
    free(skey);
    return -1;
}

size_t secretref_each(const secretref_t *x, const char *secret_key, void (*fn)(void *ud, const char *rc_key),
                      void *ud)
{
    const bucket_t *b = hm_get(x->by_secret, secret_key);
    for (size_t i = 0; b && i < b->n; i++)
        fn(ud, b->refs[i]->rc_key);
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
