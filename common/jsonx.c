#include "jsonx.h"

#include <limits.h>
#include <stdio.h>
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

const char *jsonx_str_set(const json_object *o, const char *key)
{
    const char *s = jsonx_str(o, key);
    return s && *s ? s : NULL;
}

int64_t jsonx_int_or(const json_object *o, const char *key, int64_t dflt)
{
    int64_t v = dflt;
    jsonx_int(o, key, &v);
    return v;
}

int jsonx_true(const json_object *o, const char *key)
{
    json_object *v = jsonx_get(o, key);
    return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

int jsonx_str_is(const json_object *o, const char *key, const char *want)
{
    const char *have = NULL;
    if (jsonx_string(o, key, &have) == JSONX_BAD)
        return 0;
    return !strcmp(have ? have : "", want ? want : "");
}

int jsonx_int_is(const json_object *o, const char *key, int64_t want)
{
    int64_t v = 0;
    return jsonx_int(o, key, &v) == 0 && v == want;
}

const json_object *jsonx_typed(const json_object *v, json_type t)
{
    return v && json_object_is_type(v, t) ? v : NULL;
}

size_t jsonx_len(const json_object *v)
{
    return v && json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
}

const json_object *jsonx_find(const json_object *arr, const char *key, const char *want)
{
    for (size_t i = 0; want && i < jsonx_len(arr); i++) {
        const json_object *e = json_object_array_get_idx(arr, i);
        const char *have = jsonx_str(e, key);
        if (have && !strcmp(have, want))
            return e;
    }
    return NULL;
}

const char *jsonx_value_str(const json_object *v)
{
    /* json_object_get_string only reads a string object. */
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string((json_object *)v) : NULL;
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

int jsonx_parse_strict(const char *text, size_t len, int max_depth, json_object **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    if (len > INT_MAX) {
        snprintf(err, errlen, "too large");
        return 1;
    }
    json_tokener *tok = json_tokener_new_ex(max_depth);
    if (!tok)
        return -1;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *root = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    if (!root && jerr == json_tokener_continue) {
        /* A value at the very end (a bare number) is only complete once something
         * follows it: a blank ends it without completing anything unfinished. */
        root = json_tokener_parse_ex(tok, " ", 1);
        jerr = json_tokener_get_error(tok);
        end = len;
    }
    json_tokener_free(tok);
    if (!root || jerr != json_tokener_success) {
        if (jerr == json_tokener_continue)
            snprintf(err, errlen, "unexpected end of input");
        else
            snprintf(err, errlen, "%s at byte %zu", json_tokener_error_desc(jerr), end);
        json_object_put(root);
        return 1;
    }
    for (size_t i = end; i < len; i++) {
        char c = text[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            snprintf(err, errlen, "unexpected data after the value at byte %zu", i);
            json_object_put(root);
            return 1;
        }
    }
    *out = root;
    return 0;
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
