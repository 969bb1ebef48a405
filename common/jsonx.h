/* jsonx: reading fields of untrusted JSON (objects from the API server, AdmissionReview
 * bodies) without trusting their types. */
#ifndef RDC_JSONX_H
#define RDC_JSONX_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { JSONX_ABSENT, JSONX_OK, JSONX_BAD } jsonx_field_t;

/* The value of key in o; NULL when o is not an object, the key is absent, or it is null.
 * The result is borrowed from o. */
json_object *jsonx_get(const json_object *o, const char *key);

/* o[key] as a string. Absent or null: JSONX_ABSENT. A string without an embedded NUL:
 * JSONX_OK with *out set (borrowed from o). Anything else: JSONX_BAD. *out is NULL unless
 * JSONX_OK. */
jsonx_field_t jsonx_string(const json_object *o, const char *key, const char **out);

/* o[key] as a string, or NULL when absent, null, not a string, or holding a NUL byte
 * (jsonx_string without the distinction between absent and bad). Borrowed from o. */
const char *jsonx_str(const json_object *o, const char *key);

/* o[key] as an integer (a JSON integer, not a float or a numeric string): 0 with *out
 * set, or -1 (and *out unchanged) when absent, null or not an integer. */
int jsonx_int(const json_object *o, const char *key, int64_t *out);

/* o[key] as a non-empty string, or NULL (jsonx_str, with "" counted as absent: an
 * optional string that is "" is unset, rdc_spec.h). Borrowed from o. */
const char *jsonx_str_set(const json_object *o, const char *key);

/* o[key] as an integer, or dflt when absent, null or not an integer. */
int64_t jsonx_int_or(const json_object *o, const char *key, int64_t dflt);

/* 1 when o[key] is the boolean true; 0 when false, absent or not a boolean. */
int jsonx_true(const json_object *o, const char *key);

/* 1 when o[key] is the string want, absent and null counting as "" (want NULL is ""
 * too); 0 when it differs or is not a string. */
int jsonx_str_is(const json_object *o, const char *key, const char *want);

/* 1 when o[key] is the integer want; 0 when it differs, is absent or is not an integer. */
int jsonx_int_is(const json_object *o, const char *key, int64_t want);

/* v when it is of type t, else NULL (a NULL v included): a value from untrusted JSON
 * used as an object or an array only once it is one. */
const json_object *jsonx_typed(const json_object *v, json_type t);

/* The number of elements of an array; 0 when v is not an array (or NULL). */
size_t jsonx_len(const json_object *v);

/* The first element of the array arr that is an object whose key is the string want
 * ("type" of a condition, "name" of a container), or NULL (arr not an array, want NULL,
 * no such element). Borrowed from arr. */
const json_object *jsonx_find(const json_object *arr, const char *key, const char *want);

/* The first element of the array arr whose metadata.name is name, as jsonx_str_is compares
 * (a Kubernetes object of a list: a pod, a claim template), or NULL. Borrowed from arr. */
const json_object *jsonx_find_named(const json_object *arr, const char *name);

/* The text of a string value (up to any NUL byte in it), or NULL when v is not a string.
 * For values whose type the caller has seen; borrowed from v. */
const char *jsonx_value_str(const json_object *v);

/* The value at a path of object keys, e.g. JSONX_AT(obj, "metadata", "labels", k): NULL
 * as soon as one step is not an object or lacks the key. keys ends with a NULL entry;
 * use the macros, which add it. Borrowed from o. */
json_object *jsonx_path(const json_object *o, const char *const *keys);
/* The string at a path (as jsonx_str for the last step), or NULL. */
const char *jsonx_path_str(const json_object *o, const char *const *keys);

#define JSONX_AT(o, ...) jsonx_path((o), (const char *const[]){__VA_ARGS__, NULL})
#define JSONX_STR_AT(o, ...) jsonx_path_str((o), (const char *const[]){__VA_ARGS__, NULL})

/* How jsonx_parse_ex ended. */
typedef enum {
    JSONX_PARSED = 0, /* *out is the value (NULL for a JSON null) */
    JSONX_INCOMPLETE, /* the text ends inside the value (a truncated body) */
    JSONX_NOT_JSON,   /* json-c's reason in err; nesting deeper than allowed included */
    JSONX_TRAILING,   /* something other than blanks after the value */
    JSONX_TOO_LARGE,  /* len does not fit an int */
    JSONX_NO_MEMORY,
} jsonx_parse_t;

/* THE parser of JSON text from outside (API response bodies, watch lines, webhook
 * reviews): all len bytes of text as one value, strictly (json-c's STRICT and
 * VALIDATE_UTF8 flags), at most max_depth levels deep, with nothing but blanks after it;
 * a bare number at the very end counts as complete. tok: a tokener the caller keeps for
 * many calls (a watch's lines; it is reset and its flags set here; its own depth applies),
 * or NULL for one made and freed here. Returns JSONX_PARSED with *out (the caller puts
 * it), else why not, with *out NULL and one line in err ("unexpected end of input",
 * "<json-c's reason> at byte N", "unexpected data after the value at byte N", "too
 * large", "out of memory"); *at (when at is not NULL) is the byte where parsing stopped. */
jsonx_parse_t jsonx_parse_ex(json_tokener *tok, const char *text, size_t len, int max_depth, json_object **out,
                             size_t *at, char *err, size_t errlen);

/* jsonx_parse_ex for a whole body that must be a value: 0 with *out (the caller puts it);
 * 1 with *out NULL and why in err (a JSON null: "the value is null"); -1 when out of
 * memory. */
int jsonx_parse_strict(const char *text, size_t len, int max_depth, json_object **out, char *err,
                       size_t errlen);

/* Building JSON with one allocation-failure flag: every call below sets *oom (and never
 * clears it) when memory runs out, so a builder makes all its calls and checks *oom once
 * at the end; a NULL from one call is accepted (and ignored) by the next. */

/* A new string (s NULL: ""), or NULL with *oom set. */
json_object *jsonx_new_str(const char *s, int *oom);
/* A new int, or NULL with *oom set. */
json_object *jsonx_new_int(int64_t v, int *oom);
/* A new object / array, or NULL with *oom set. */
json_object *jsonx_new_obj(int *oom);
json_object *jsonx_new_arr(int *oom);
/* obj[key] = val, taking val (freed on failure). A NULL obj or val sets *oom. */
void jsonx_put(json_object *obj, const char *key, json_object *val, int *oom);
/* Append val to arr, taking val (freed on failure). A NULL arr or val sets *oom. */
void jsonx_push(json_object *arr, json_object *val, int *oom);
/* The end of a build: o when oom is 0, else NULL with o freed (the one check a builder
 * makes). */
json_object *jsonx_done(json_object *o, int oom);

#endif
