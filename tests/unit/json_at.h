/* json_at: JSON in a test. parse(text) parses a document the test wrote (a test error,
 * fatal, naming the text, when it is not JSON; the caller puts the object), and these read
 * one by a space-separated path ("spec template spec containers 0 image"; numeric steps
 * index arrays):
 *
 *     at(o, path)       the value there, or NULL when any step is missing
 *     str_at(o, path)   its string, or NULL when it is missing or not a string
 *     int_at(o, path)   its integer, or -999 when it is missing or not an integer
 */
#ifndef RDC_TEST_JSON_AT_H
#define RDC_TEST_JSON_AT_H

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static inline json_object *parse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    if (!o)
        fprintf(stderr, "\n  test JSON does not parse: %s\n", text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

static inline json_object *at(const json_object *o, const char *path)
{
    json_object *cur = (json_object *)o;
    const char *p = path;
    while (cur && *p) {
        const char *end = strchr(p, ' ');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char step[256];
        CU_ASSERT_FATAL(n < sizeof(step));
        memcpy(step, p, n);
        step[n] = '\0';
        if (json_object_is_type(cur, json_type_array)) {
            char *e = NULL;
            long i = strtol(step, &e, 10);
            cur = (*e || i < 0) ? NULL : json_object_array_get_idx(cur, (size_t)i);
        } else if (json_object_is_type(cur, json_type_object)) {
            json_object *next = NULL;
            cur = json_object_object_get_ex(cur, step, &next) ? next : NULL;
        } else {
            cur = NULL;
        }
        p += n;
        if (*p == ' ')
            p++;
    }
    return cur;
}

static inline const char *str_at(const json_object *o, const char *path)
{
    json_object *v = at(o, path);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static inline int64_t int_at(const json_object *o, const char *path)
{
    json_object *v = at(o, path);
    return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -999;
}

#endif
