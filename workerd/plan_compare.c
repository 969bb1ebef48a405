/* plan_compare: the managed-field comparison and the merge over an observed object. See
 * plan_compare.h and plan.h (MANAGED-FIELD COMPARISON). */
#include "plan_compare.h"

#include "plan.h"
#include "plan_build.h"
#include "jsonx.h"
#include "render.h"

#include <stdarg.h>
#include <string.h>

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

const char *plan_json_array_key(const json_object *d)
{
    static const char *const keys[] = {"uid", "name"};
    size_t n = json_object_array_length(d);
    for (size_t k = 0; k < 2 && n; k++) {
        size_t i = 0;
        for (; i < n; i++) {
            if (!jsonx_str_set(json_object_array_get_idx(d, i), keys[k]))
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
           json_object_is_type(o, json_type_string) && same_group(jsonx_value_str(d), jsonx_value_str(o));
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
    const char *key = plan_json_array_key(d);
    if (!key && nd != no)
        return differ(where, path, "want %zu elements, have %zu", nd, no);
    size_t mark = path->len;
    for (size_t i = 0; i < nd; i++) {
        const json_object *de = json_object_array_get_idx(d, i), *oe = NULL;
        if (key) {
            const char *want = jsonx_str_set(de, key);
            buf_printf(path, "[%s]", want);
            for (size_t j = 0; j < no && !oe; j++) {
                const json_object *cand = json_object_array_get_idx(o, j);
                const char *have = jsonx_str_set(cand, key);
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

static int subset_string(const json_object *d, const json_object *o, int quantity, const buf_t *path, buf_t *where)
{
    if (!o || !json_object_is_type(o, json_type_string))
        return differ(where, path, "want a string, have %s", type_name(o));
    const char *ds = jsonx_value_str(d), *os = jsonx_value_str(o);
    if (!strcmp(ds, os) || (quantity && render_quantity_equal(ds, os)))
        return 1;
    if (strlen(ds) > PLAN_VALUE_SHOWN || strlen(os) > PLAN_VALUE_SHOWN)
        return differ(where, path, "differs");
    return differ(where, path, "want \"%s\", have \"%s\"", ds, os);
}

static int subset_number(const json_object *d, const json_object *o, const buf_t *path, buf_t *where)
{
    if (!o || !(json_object_is_type(o, json_type_int) || json_object_is_type(o, json_type_double)))
        return differ(where, path, "want a number, have %s", type_name(o));
    int ints = json_object_is_type(d, json_type_int) && json_object_is_type(o, json_type_int);
    int same = ints ? json_object_get_int64(d) == json_object_get_int64(o)
                    : json_object_get_double(d) == json_object_get_double(o);
    if (same)
        return 1;
    if (ints)
        return differ(where, path, "want %lld, have %lld", (long long)json_object_get_int64(d),
                      (long long)json_object_get_int64(o));
    return differ(where, path, "want %g, have %g", json_object_get_double(d), json_object_get_double(o));
}

static int subset_boolean(const json_object *d, const json_object *o, const buf_t *path, buf_t *where)
{
    if (!o || !json_object_is_type(o, json_type_boolean))
        return differ(where, path, "want a boolean, have %s", type_name(o));
    if (!json_object_get_boolean(d) == !json_object_get_boolean(o))
        return 1;
    return differ(where, path, "want %s", json_object_get_boolean(d) ? "true" : "false");
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
    case json_type_string:
        return subset_string(d, o, quantity, path, where);
    case json_type_int:
    case json_type_double:
        return subset_number(d, o, path, where);
    case json_type_boolean:
        return subset_boolean(d, o, path, where);
    }
    return differ(where, path, "cannot compare");
}

int plan_json_subset_at(const json_object *d, const json_object *o, const char *prefix, buf_t *where)
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
    return plan_json_subset_at(desired, observed, "", where);
}

/* Desired's elements merged over observed's of the same key (plan_json_merge_over). */
static json_object *merge_keyed(const json_object *d, const json_object *o, const char *key, int *oom)
{
    size_t nd = json_object_array_length(d), no = json_object_array_length(o);
    char used[64] = {0};
    json_object *out = jsonx_new_arr(oom);
    for (size_t j = 0; j < no; j++) {
        const json_object *oe = json_object_array_get_idx(o, j), *de = NULL;
        const char *have = jsonx_str_set(oe, key);
        for (size_t i = 0; have && i < nd && i < sizeof(used) && !de; i++) {
            if (!used[i] && !strcmp(jsonx_str_set(json_object_array_get_idx(d, i), key), have)) {
                de = json_object_array_get_idx(d, i);
                used[i] = 1;
            }
        }
        jsonx_push(out, plan_json_merge_over(de ? de : oe, de ? oe : NULL, oom), oom);
    }
    for (size_t i = 0; i < nd; i++)
        if (i >= sizeof(used) || !used[i])
            jsonx_push(out, plan_json_merge_over(json_object_array_get_idx(d, i), NULL, oom), oom);
    return out;
}

json_object *plan_json_merge_over(const json_object *d, const json_object *o, int *oom)
{
    json_object *out = NULL;
    if (jsonx_typed(d, json_type_object) && jsonx_typed(o, json_type_object)) {
        if (json_object_deep_copy((json_object *)o, &out, NULL)) {
            *oom = 1;
            return NULL;
        }
        json_object_object_foreach((json_object *)d, key, dv)
        {
            jsonx_put(out, key, plan_json_merge_over(dv, jsonx_get(o, key), oom), oom);
        }
        return out;
    }
    const char *key = jsonx_typed(d, json_type_array) ? plan_json_array_key(d) : NULL;
    if (key && jsonx_typed(o, json_type_array))
        return merge_keyed(d, o, key, oom);
    if (!d)
        return NULL; /* JSON null */
    if (json_object_deep_copy((json_object *)d, &out, NULL))
        *oom = 1;
    return out;
}
