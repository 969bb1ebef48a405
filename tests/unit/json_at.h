/* json_at: JSON in a test. parse(text) parses a document the test wrote (a test error,
 * fatal, naming the text, when it is not JSON; the caller puts the object), parsef(fmt, ...)
 * the same of a text printf formats (16 KiB at most: a longer one is a test error), and these read
 * one by a space-separated path ("spec template spec containers 0 image"; numeric steps
 * index arrays):
 *
 *     at(o, path)       the value there, or NULL when any step is missing
 *     str_at(o, path)   its string, or NULL when it is missing or not a string
 *     int_at(o, path)   its integer, or -999 when it is missing or not an integer
 *
 * ASSERT_STRS_AT(o, {path, want}, ...) asserts a list of them at once: str_at(o, path) is
 * want for each row (NULL: missing or not a string), one CUnit assertion a row, a failure
 * reported at the caller's line with the path, the string wanted and the one found;
 *
 * json_copy(o) is a deep copy of o (fatal when out of memory; the caller puts it);
 * strs_line(arr, out, cap) joins an array of strings (a container's command) with one blank
 * between them into out (cut at cap);
 *
 * and a test's objects are put at its end, an array of n with put_all(o, n), a list with
 * PUT_EACH(a, b, c) (NULLs are ignored, as json_object_put does).
 */
#ifndef RDC_TEST_JSON_AT_H
#define RDC_TEST_JSON_AT_H

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdarg.h>
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

__attribute__((format(printf, 1, 2))) static inline json_object *parsef(const char *fmt, ...)
{
    char text[16384];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    CU_ASSERT_FATAL(n >= 0 && (size_t)n < sizeof(text));
    return parse(text);
}

static inline json_object *json_copy(const json_object *o)
{
    json_object *c = NULL;
    CU_ASSERT_FATAL(json_object_deep_copy((json_object *)o, &c, NULL) == 0);
    return c;
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

typedef struct {
    const char *path, *want;
} str_at_row_t;

static inline void assert_strs_at(const json_object *o, const str_at_row_t *rows, size_t n, const char *file,
                                  unsigned line)
{
    for (size_t i = 0; i < n; i++) {
        const char *have = str_at(o, rows[i].path), *want = rows[i].want;
        char what[768];
        snprintf(what, sizeof(what), "str_at(\"%s\") is %s%s%s (have %s%s%s)", rows[i].path, want ? "\"" : "",
                 want ? want : "NULL", want ? "\"" : "", have ? "\"" : "", have ? have : "NULL", have ? "\"" : "");
        int same = have && want ? !strcmp(have, want) : have == want;
        CU_assertImplementation(same ? CU_TRUE : CU_FALSE, line, what, file, "", CU_FALSE);
    }
}

#define ASSERT_STRS_AT(o, ...)                                                                                     \
    assert_strs_at((o), (const str_at_row_t[]){__VA_ARGS__},                                                       \
                   sizeof((const str_at_row_t[]){__VA_ARGS__}) / sizeof(str_at_row_t), __FILE__, __LINE__)

static inline void put_all(json_object *const *o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_object_put(o[i]);
}

static inline void strs_line(const json_object *arr, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; json_object_is_type(arr, json_type_array) && i < json_object_array_length(arr) && n < cap;
         i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "",
                              json_object_get_string(json_object_array_get_idx(arr, i)));
}

#define PUT_EACH(...)                                                                                              \
    put_all((json_object *const[]){__VA_ARGS__}, sizeof((json_object *const[]){__VA_ARGS__}) / sizeof(json_object *))

#endif
