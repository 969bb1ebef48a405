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

const json_object *jsonx_find_named(const json_object *arr, const char *name)
{
    for (size_t i = 0; i < jsonx_len(arr); i++) {
        const json_object *o = json_object_array_get_idx(arr, i);
        if (jsonx_str_is(jsonx_get(o, "metadata"), "name", name))
            return o;
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

/* The first byte at or after from that is not a blank, or len. */
static size_t past_blanks(const char *text, size_t from, size_t len)
{
    while (from < len && (text[from] == ' ' || text[from] == '\t' || text[from] == '\n' || text[from] == '\r'))
        from++;
    return from;
}

/* 1 when text[0..end) is one whole value: the strict tokener stops with an error at the
 * first byte after a value (end), which is trailing data, not a syntax error. */
static int value_before(json_tokener *tok, const char *text, size_t end)
{
    if (end == 0)
        return 0;
    json_tokener_reset(tok);
    json_object *v = json_tokener_parse_ex(tok, text, (int)end);
    if (!v && json_tokener_get_error(tok) == json_tokener_continue)
        v = json_tokener_parse_ex(tok, " ", 1);
    int whole = json_tokener_get_error(tok) == json_tokener_success;
    json_object_put(v);
    return whole;
}

jsonx_parse_t jsonx_parse_ex(json_tokener *tok, const char *text, size_t len, int max_depth, json_object **out,
                             size_t *at, char *err, size_t errlen)
{
    size_t where = 0;
    jsonx_parse_t rc = JSONX_PARSED;
    json_tokener *own = NULL;
    *out = NULL;
    if (len > INT_MAX) {
        snprintf(err, errlen, "too large");
        return JSONX_TOO_LARGE;
    }
    if (!tok && !(tok = own = json_tokener_new_ex(max_depth))) {
        snprintf(err, errlen, "out of memory");
        return JSONX_NO_MEMORY;
    }
    json_tokener_reset(tok);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *root = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    where = json_tokener_get_parse_end(tok);
    if (!root && jerr == json_tokener_continue) {
        /* A value at the very end (a bare number) is only complete once something
         * follows it: a blank ends it without completing anything unfinished. */
        root = json_tokener_parse_ex(tok, " ", 1);
        jerr = json_tokener_get_error(tok);
        where = len;
    }
    if (jerr == json_tokener_continue) {
        snprintf(err, errlen, "unexpected end of input");
        rc = JSONX_INCOMPLETE;
    } else if (jerr != json_tokener_success && !value_before(tok, text, where)) {
        snprintf(err, errlen, "%s at byte %zu", json_tokener_error_desc(jerr), where);
        rc = JSONX_NOT_JSON;
    } else if ((where = past_blanks(text, where, len)) < len) {
        snprintf(err, errlen, "unexpected data after the value at byte %zu", where);
        rc = JSONX_TRAILING;
    }
    if (own)
        json_tokener_free(own);
    if (rc)
        json_object_put(root);
    else
        *out = root; /* NULL for a JSON null */
    if (at)
        *at = where;
    return rc;
}

int jsonx_parse_strict(const char *text, size_t len, int max_depth, json_object **out, char *err,
                       size_t errlen)
{
    jsonx_parse_t rc = jsonx_parse_ex(NULL, text, len, max_depth, out, NULL, err, errlen);
    if (rc == JSONX_PARSED && !*out) {
        snprintf(err, errlen, "the value is null");
        return 1;
    }
    return rc == JSONX_NO_MEMORY ? -1 : rc != JSONX_PARSED;
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

json_object *jsonx_done(json_object *o, int oom)
{
    if (oom) {
        json_object_put(o);
        return NULL;
    }
    return o;
}
