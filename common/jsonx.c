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
