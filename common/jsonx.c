#include "jsonx.h"

#include <string.h>

json_object *jsonx_get(const json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
        return NULL;
    return json_object_is_type(v, json_type_null) ? NULL : v;
}

jsonx_field_t jsonx_string(const json_object *o, const char *key, const char **out)
{
    json_object *v = jsonx_get(o, key);
    *out = NULL;
    if (!v)
        return JSONX_ABSENT;
    if (!json_object_is_type(v, json_type_string))
        return JSONX_BAD;
    /* json_object_get_string only reads a string object. */
    const char *s = json_object_get_string(v);
    if (strlen(s) != (size_t)json_object_get_string_len(v))
        return JSONX_BAD;
    *out = s;
    return JSONX_OK;
}

const char *jsonx_str(const json_object *o, const char *key)
{
    const char *s;
    return jsonx_string(o, key, &s) == JSONX_OK ? s : NULL;
}

int jsonx_int(const json_object *o, const char *key, int64_t *out)
{
    json_object *v = jsonx_get(o, key);
    if (!v || !json_object_is_type(v, json_type_int))
        return -1;
    *out = json_object_get_int64(v);
    return 0;
}

json_object *jsonx_path(const json_object *o, const char *const *keys)
{
    json_object *v = (json_object *)o;
    for (; *keys && v; keys++)
        v = jsonx_get(v, *keys);
    return v;
}

const char *jsonx_path_str(const json_object *o, const char *const *keys)
{
    if (!keys[0])
        return NULL;
    const json_object *parent = o;
    for (; keys[1] && parent; keys++)
        parent = jsonx_get(parent, keys[0]);
    return parent ? jsonx_str(parent, keys[0]) : NULL;
}

/* ---- building -------------------------------------------------------------------------- */

json_object *jsonx_new_str(const char *s, int *oom)
{
    json_object *o = json_object_new_string(s ? s : "");
    if (!o)
        *oom = 1;
    return o;
}

json_object *jsonx_new_int(int64_t v, int *oom)
{
    json_object *o = json_object_new_int64(v);
    if (!o)
        *oom = 1;
    return o;
}

json_object *jsonx_new_obj(int *oom)
{
    json_object *o = json_object_new_object();
    if (!o)
        *oom = 1;
    return o;
}

json_object *jsonx_new_arr(int *oom)
{
    json_object *o = json_object_new_array();
    if (!o)
        *oom = 1;
    return o;
}

void jsonx_put(json_object *obj, const char *key, json_object *val, int *oom)
{
    if (!obj || !val || json_object_object_add(obj, key, val)) {
        json_object_put(val);
        *oom = 1;
    }
}

void jsonx_push(json_object *arr, json_object *val, int *oom)
{
    if (!arr || !val || json_object_array_add(arr, val)) {
        json_object_put(val);
        *oom = 1;
    }
}
