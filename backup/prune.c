/* prune: retention and listing over S3 (prune.h). */
#include "prune.h"

#include "jsonx.h"
#include "retain.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    retain_obj_t *objs;  /* n of them; objs[i].ref indexes keys and meta */
    char **keys;
    s3_object_t *meta;
    size_t n, cap;
    int oom;
} catalog_t;

static void catalog_free(catalog_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->keys[i]);
    free(c->keys);
    free(c->meta);
    free(c->objs);
    memset(c, 0, sizeof *c);
}

/* s3_list_fn: one object of the listing into the catalog. */
static int catalog_add(void *ctx, const s3_object_t *obj, const char *key)
{
    catalog_t *c = ctx;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 32;
        char **k = realloc(c->keys, ncap * sizeof *k);
        if (k)
            c->keys = k;
        s3_object_t *m = k ? realloc(c->meta, ncap * sizeof *m) : NULL;
        if (m)
            c->meta = m;
        retain_obj_t *o = m ? realloc(c->objs, ncap * sizeof *o) : NULL;
        if (!o) {
            c->oom = 1;
            return 1;
        }
        c->objs = o;
        c->cap = ncap;
    }
    c->keys[c->n] = strdup(key);
    if (!c->keys[c->n]) {
        c->oom = 1;
        return 1;
    }
    c->meta[c->n] = *obj;
    c->meta[c->n].sha256[0] = '\0'; /* a listing has no metadata: HEAD tells */
    c->n++;
    return 0;
}

/* HEAD each object named as ours; drop those gone since the listing. 0, or -1 with err. */
static int catalog_head(s3_t *s, const char *bucket, const char *prefix, catalog_t *c, char *err, size_t errlen)
{
    size_t w = 0;
    for (size_t i = 0; i < c->n; i++) {
        int64_t t;
        s3_object_t head;
        s3_error_t e;
        if (retain_key_time(prefix, c->keys[i], &t) == 0) {
            if (s3_head(s, bucket, c->keys[i], &head, &e) == 0) {
                snprintf(c->meta[i].sha256, sizeof c->meta[i].sha256, "%s", head.sha256);
            } else if (e.code == S3_ERR_NOT_FOUND) {
                free(c->keys[i]);
                continue;
            } else {
                s3_error_str(&e, err, errlen);
                for (size_t j = i; j < c->n; j++) /* the rest, for catalog_free */
                    c->keys[w++] = c->keys[j];
                c->n = w;
                return -1;
            }
        }
        c->keys[w] = c->keys[i];
        c->meta[w] = c->meta[i];
        w++;
    }
    c->n = w;
    for (size_t i = 0; i < c->n; i++)
        c->objs[i] = (retain_obj_t){.key = c->keys[i], .complete = c->meta[i].sha256[0] != '\0', .ref = i};
    return 0;
}

/* The catalog of prefix (prune.h): 0, or -1 with err (*c then empty). */
static int catalog_load(s3_t *s, const char *bucket, const char *prefix, catalog_t *c, char *err, size_t errlen)
{
    char dir[RETAIN_PREFIX_MAX + 2];
    s3_error_t e;
    memset(c, 0, sizeof *c);
    snprintf(dir, sizeof dir, "%s/", prefix);
    int rc = s3_list(s, bucket, dir, catalog_add, c, &e);
    if (rc < 0)
        s3_error_str(&e, err, errlen);
    else if (rc > 0 || c->oom)
        snprintf(err, errlen, "ListObjectsV2 %s/%s: out of memory", bucket, dir);
    if (rc == 0 && !c->oom && catalog_head(s, bucket, prefix, c, err, errlen) == 0)
        return 0;
    catalog_free(c);
    return -1;
}

/* Delete what the decision marks, oldest first (the sorted array's end). The number that
 * failed. */
static int delete_marked(s3_t *s, const char *bucket, const catalog_t *c, json_object *pruned,
                         json_object *failed, int *oom)
{
    int nfailed = 0;
    for (size_t i = c->n; i-- > 0;) {
        const retain_obj_t *r = &c->objs[i];
        s3_error_t e;
        char line[1024];
        if (r->verdict != RETAIN_DELETE || (i > 0 && strcmp(r->key, c->objs[i - 1].key) == 0))
            continue;
        if (s3_delete(s, bucket, r->key, &e) == 0) {
            jsonx_push(pruned, jsonx_new_str(r->key, oom), oom);
            continue;
        }
        json_object *f = jsonx_new_obj(oom);
        jsonx_put(f, "key", jsonx_new_str(r->key, oom), oom);
        jsonx_put(f, "error", jsonx_new_str(s3_error_str(&e, line, sizeof line), oom), oom);
        jsonx_push(failed, f, oom);
        nfailed++;
    }
    return nfailed;
}

int prune_apply(s3_t *s, const char *bucket, const char *prefix, int keep, const char *new_key, json_object *o,
                int *oom)
{
    catalog_t c;
    char err[1024];
    jsonx_put(o, "keep", jsonx_new_int(keep, oom), oom);
    if (catalog_load(s, bucket, prefix, &c, err, sizeof err) != 0 ||
        retain_decide(prefix, c.objs, c.n, keep, new_key, err, sizeof err) < 0) {
        catalog_free(&c);
        jsonx_put(o, "pruneError", jsonx_new_str(err, oom), oom);
        return -1;
    }
    int kept = new_key ? 1 : 0, foreign = 0;
    for (size_t i = 0; i < c.n; i++) {
        kept += c.objs[i].verdict == RETAIN_KEEP;
        foreign += c.objs[i].verdict == RETAIN_FOREIGN;
    }
    json_object *pruned = jsonx_new_arr(oom), *failed = jsonx_new_arr(oom);
    int nfailed = delete_marked(s, bucket, &c, pruned, failed, oom);
    jsonx_put(o, "kept", jsonx_new_int(kept, oom), oom);
    jsonx_put(o, "pruned", pruned, oom);
    jsonx_put(o, "pruneFailed", failed, oom);
    jsonx_put(o, "foreign", jsonx_new_int(foreign, oom), oom);
    catalog_free(&c);
    return nfailed ? 1 : 0;
}

int prune_run(const backup_args_t *a, s3_t *s, FILE *out, char *err, size_t errlen)
{
    int oom = 0;
    json_object *o = jsonx_new_obj(&oom);
    jsonx_put(o, "result", jsonx_new_str("pruned", &oom), &oom);
    jsonx_put(o, "bucket", jsonx_new_str(a->bucket, &oom), &oom);
    jsonx_put(o, "prefix", jsonx_new_str(a->prefix, &oom), &oom);
    int rc = prune_apply(s, a->bucket, a->prefix, a->keep, NULL, o, &oom);
    if (rc < 0) {
        snprintf(err, errlen, "%s", json_object_get_string(json_object_object_get(o, "pruneError")));
        json_object_put(o);
        return 1;
    }
    if (rc > 0) {
        size_t nfailed = json_object_array_length(json_object_object_get(o, "pruneFailed"));
        size_t ndone = json_object_array_length(json_object_object_get(o, "pruned"));
        snprintf(err, errlen, "%zu of %zu deletes failed (pruneFailed)", nfailed, nfailed + ndone);
    }
    backup_print_json(out, o, oom);
    return rc;
}

int list_run(const backup_args_t *a, s3_t *s, FILE *out, char *err, size_t errlen)
{
    catalog_t c;
    if (catalog_load(s, a->bucket, a->prefix, &c, err, errlen) != 0)
        return 1;
    /* Keeping every backup is the decision that only sorts: ours newest first. */
    (void)retain_decide(a->prefix, c.objs, c.n, INT_MAX, NULL, err, errlen);
    for (size_t i = 0; i < c.n && c.objs[i].verdict == RETAIN_KEEP; i++) {
        const s3_object_t *m = &c.meta[c.objs[i].ref];
        char when[32];
        int oom = 0;
        retain_time_str(c.objs[i].time, when, sizeof when);
        json_object *o = jsonx_new_obj(&oom);
        jsonx_put(o, "key", jsonx_new_str(c.objs[i].key, &oom), &oom);
        jsonx_put(o, "size", jsonx_new_int((int64_t)m->size, &oom), &oom);
        jsonx_put(o, "sha256", jsonx_new_str(m->sha256, &oom), &oom);
        jsonx_put(o, "time", jsonx_new_str(when, &oom), &oom);
        backup_print_json(out, o, oom);
    }
    catalog_free(&c);
    return 0;
}
