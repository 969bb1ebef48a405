/* Unit tests of jsonx: reading untrusted JSON by key and by path. */
#include "cu_table.h"
#include "jsonx.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

static json_object *doc;

static int setup(void)
{
    doc = json_tokener_parse(
        "{\"metadata\":{\"name\":\"cache\",\"namespace\":null,\"generation\":3,"
        "\"labels\":{\"app.kubernetes.io/name\":\"redis\"},\"uid\":7},"
        "\"spec\":{\"size\":2.5,\"image\":\"redis\"},\"list\":[1,2],\"s\":\"x\"}");
    return doc ? 0 : -1;
}

static int teardown(void)
{
    json_object_put(doc);
    return 0;
}

CU_HOOKS({"jsonx", setup, teardown, NULL, NULL});

static void test_str_and_int(void)
{
    CU_ASSERT_STRING_EQUAL(jsonx_str(jsonx_get(doc, "metadata"), "name"), "cache");
    CU_ASSERT_PTR_NULL(jsonx_str(jsonx_get(doc, "metadata"), "namespace")); /* null */
    CU_ASSERT_PTR_NULL(jsonx_str(jsonx_get(doc, "metadata"), "uid"));       /* not a string */
    CU_ASSERT_PTR_NULL(jsonx_str(jsonx_get(doc, "metadata"), "missing"));
    CU_ASSERT_PTR_NULL(jsonx_str(NULL, "name"));
    CU_ASSERT_PTR_NULL(jsonx_str(jsonx_get(doc, "list"), "name")); /* not an object */
    int64_t v = -1;
    CU_ASSERT_EQUAL(jsonx_int(jsonx_get(doc, "metadata"), "generation", &v), 0);
    CU_ASSERT_EQUAL(v, 3);
    CU_ASSERT_EQUAL(jsonx_int(jsonx_get(doc, "spec"), "size", &v), -1); /* a float */
    CU_ASSERT_EQUAL(jsonx_int(jsonx_get(doc, "metadata"), "name", &v), -1);
    CU_ASSERT_EQUAL(v, 3); /* unchanged on failure */
    /* A string with a NUL byte in it is not a string we hand out. */
    json_object *o = json_object_new_object();
    json_object_object_add(o, "k", json_object_new_string_len("a\0b", 3));
    CU_ASSERT_PTR_NULL(jsonx_str(o, "k"));
    json_object_put(o);
}

static void test_paths(void)
{
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(doc, "metadata", "name"), "cache");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(doc, "metadata", "labels", "app.kubernetes.io/name"), "redis");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(doc, "s"), "x");
    CU_ASSERT_PTR_NULL(JSONX_STR_AT(doc, "metadata", "nope", "name"));
    CU_ASSERT_PTR_NULL(JSONX_STR_AT(doc, "list", "name"));
    CU_ASSERT_PTR_NULL(JSONX_STR_AT(doc, "metadata", "generation"));
    CU_ASSERT_PTR_NULL(JSONX_STR_AT(NULL, "metadata", "name"));
    CU_ASSERT_PTR_NOT_NULL(JSONX_AT(doc, "metadata", "labels"));
    CU_ASSERT(json_object_is_type(JSONX_AT(doc, "spec", "size"), json_type_double));
    CU_ASSERT_PTR_NULL(JSONX_AT(doc, "metadata", "namespace")); /* null reads as absent */
    CU_ASSERT_PTR_NULL(JSONX_AT(doc, "s", "deeper"));
}

static void test_parse_strict(void)
{
    json_object *o = NULL;
    char why[128];
    CU_ASSERT_EQUAL(jsonx_parse_strict("{\"a\":1} \n", 9, 8, &o, why, sizeof(why)), 0);
    CU_ASSERT_PTR_NOT_NULL(o);
    json_object_put(o);
    CU_ASSERT_EQUAL(jsonx_parse_strict("42", 2, 8, &o, why, sizeof(why)), 0); /* a bare number at the end */
    CU_ASSERT_EQUAL(json_object_get_int(o), 42);
    json_object_put(o);
    CU_ASSERT_EQUAL(jsonx_parse_strict("{\"a\":", 5, 8, &o, why, sizeof(why)), 1);
    CU_ASSERT_PTR_NULL(o);
    CU_ASSERT_STRING_EQUAL(why, "unexpected end of input");
    CU_ASSERT_EQUAL(jsonx_parse_strict("{} x", 4, 8, &o, why, sizeof(why)), 1); /* data after the value */
    CU_ASSERT_PTR_NULL(o);
    CU_ASSERT(strstr(why, "at byte 3") != NULL);
    CU_ASSERT_EQUAL(jsonx_parse_strict("[[[[1]]]]", 9, 3, &o, why, sizeof(why)), 1); /* too deep */
    CU_ASSERT_PTR_NULL(o);
    CU_ASSERT_EQUAL(jsonx_parse_strict("{\"a\":1,}", 8, 8, &o, why, sizeof(why)), 1); /* strict: no trailing comma */
    CU_ASSERT(strstr(why, "at byte") != NULL);
}

static void test_typed_readers(void)
{
    const json_object *meta = jsonx_get(doc, "metadata");
    json_object *o = json_tokener_parse("{\"e\":\"\",\"t\":true,\"f\":false,\"n\":null,\"one\":\"1\"}");
    CU_ASSERT_STRING_EQUAL(jsonx_str_set(meta, "name"), "cache");
    CU_ASSERT_PTR_NULL(jsonx_str_set(o, "e")); /* "" is unset */
    CU_ASSERT_PTR_NULL(jsonx_str_set(meta, "uid"));
    CU_ASSERT_EQUAL(jsonx_int_or(meta, "generation", -1), 3);
    CU_ASSERT_EQUAL(jsonx_int_or(jsonx_get(doc, "spec"), "size", -1), -1); /* a float */
    CU_ASSERT_EQUAL(jsonx_int_or(NULL, "x", 7), 7);
    CU_ASSERT_EQUAL(jsonx_true(o, "t"), 1);
    CU_ASSERT_EQUAL(jsonx_true(o, "f"), 0);
    CU_ASSERT_EQUAL(jsonx_true(o, "one"), 0); /* not a boolean */
    CU_ASSERT_EQUAL(jsonx_true(o, "missing"), 0);
    CU_ASSERT_EQUAL(jsonx_str_is(meta, "name", "cache"), 1);
    CU_ASSERT_EQUAL(jsonx_str_is(meta, "name", "other"), 0);
    CU_ASSERT_EQUAL(jsonx_str_is(o, "n", ""), 1);    /* null is "" */
    CU_ASSERT_EQUAL(jsonx_str_is(o, "missing", NULL), 1);
    CU_ASSERT_EQUAL(jsonx_str_is(o, "t", ""), 0);    /* not a string: never equal */
    CU_ASSERT_EQUAL(jsonx_int_is(meta, "generation", 3), 1);
    CU_ASSERT_EQUAL(jsonx_int_is(meta, "generation", 4), 0);
    CU_ASSERT_EQUAL(jsonx_int_is(meta, "name", 0), 0); /* not an integer */
    CU_ASSERT_EQUAL(jsonx_int_is(meta, "missing", 0), 0);
    CU_ASSERT_PTR_EQUAL(jsonx_typed(meta, json_type_object), meta);
    CU_ASSERT_PTR_NULL(jsonx_typed(meta, json_type_array));
    CU_ASSERT_PTR_NULL(jsonx_typed(NULL, json_type_object));
    CU_ASSERT_EQUAL(jsonx_len(jsonx_get(doc, "list")), 2);
    CU_ASSERT_EQUAL(jsonx_len(meta), 0);
    CU_ASSERT_EQUAL(jsonx_len(NULL), 0);
    CU_ASSERT_STRING_EQUAL(jsonx_value_str(jsonx_get(doc, "s")), "x");
    CU_ASSERT_PTR_NULL(jsonx_value_str(jsonx_get(doc, "list")));
    CU_ASSERT_PTR_NULL(jsonx_value_str(NULL));
    json_object_put(o);
    json_object *list = json_tokener_parse("[1,{\"type\":\"A\"},{\"type\":7},{\"type\":\"B\",\"n\":1},"
                                           "{\"type\":\"B\",\"n\":2}]");
    CU_ASSERT_EQUAL(jsonx_int_or(jsonx_find(list, "type", "B"), "n", 0), 1); /* the first */
    CU_ASSERT_PTR_NOT_NULL(jsonx_find(list, "type", "A"));
    CU_ASSERT_PTR_NULL(jsonx_find(list, "type", "C"));
    CU_ASSERT_PTR_NULL(jsonx_find(list, "type", NULL));
    CU_ASSERT_PTR_NULL(jsonx_find(meta, "type", "A")); /* not an array */
    json_object_put(list);
    list = json_tokener_parse("[1,{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"},\"n\":1},"
                              "{\"metadata\":{\"name\":\"b\"},\"n\":2}]");
    CU_ASSERT_EQUAL(jsonx_int_or(jsonx_find_named(list, "b"), "n", 0), 1); /* the first */
    CU_ASSERT_PTR_NOT_NULL(jsonx_find_named(list, "a"));
    CU_ASSERT_PTR_NULL(jsonx_find_named(list, "c"));
    CU_ASSERT_PTR_NULL(jsonx_find_named(meta, "a")); /* not an array */
    json_object_put(list);
}

/* The one parser: each way it ends, with the caller's tokener kept across calls. */
static void test_parse_ex(void)
{
    static const struct {
        const char *text;
        jsonx_parse_t want;
        size_t at;       /* where it stopped (checked when want is not PARSED) */
        const char *why; /* the start of err */
    } rows[] = {
        {"{\"a\":1}\n", JSONX_PARSED, 0, ""},
        {"7", JSONX_PARSED, 0, ""},
        {"null", JSONX_PARSED, 0, ""},
        {"{\"a\":", JSONX_INCOMPLETE, 5, "unexpected end of input"},
        {"{\"a\":\"b", JSONX_INCOMPLETE, 7, "unexpected end of input"},
        {"{} x", JSONX_TRAILING, 3, "unexpected data after the value at byte 3"},
        {"12x", JSONX_TRAILING, 2, "unexpected data after the value at byte 2"},
        {"{\"a\":1,}", JSONX_NOT_JSON, 7, ""},
        {"[[[1]]]", JSONX_NOT_JSON, 2, ""}, /* deeper than 2 */
        {"{\"a\":\"\xc3\x28\"}", JSONX_NOT_JSON, 0, ""},
    };
    json_tokener *tok = json_tokener_new_ex(2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tok);
    for (int own = 0; own < 2; own++) {
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
            json_object *o = (json_object *)1;
            size_t at = 0;
            char why[128];
            jsonx_parse_t rc = jsonx_parse_ex(own ? NULL : tok, rows[i].text, strlen(rows[i].text), 2, &o, &at, why,
                                              sizeof(why));
            if (rc != rows[i].want)
                fprintf(stderr, "\n  %s: %d, want %d (%s)\n", rows[i].text, (int)rc, (int)rows[i].want, why);
            CU_ASSERT_EQUAL(rc, rows[i].want);
            if (rc != JSONX_PARSED) {
                CU_ASSERT_PTR_NULL(o);
                CU_ASSERT_EQUAL(strncmp(why, rows[i].why, strlen(rows[i].why)), 0);
                if (rows[i].at && at != rows[i].at)
                    fprintf(stderr, "\n  %s: at %zu, want %zu\n", rows[i].text, at, rows[i].at);
                if (rows[i].at)
                    CU_ASSERT_EQUAL(at, rows[i].at);
            }
            json_object_put(o == (json_object *)1 ? NULL : o);
        }
    }
    json_tokener_free(tok);
    /* jsonx_parse_strict: a body must be a value */
    json_object *o = NULL;
    char why[128];
    CU_ASSERT_EQUAL(jsonx_parse_strict("null", 4, 8, &o, why, sizeof(why)), 1);
    CU_ASSERT_STRING_EQUAL(why, "the value is null");
}

/* A build ends with jsonx_done: the object when nothing failed, else NULL (the object
 * freed: ASan's leak check would see it otherwise). */
static void test_build_done(void)
{
    int oom = 0;
    json_object *o = jsonx_new_obj(&oom);
    jsonx_put(o, "a", jsonx_new_int(1, &oom), &oom);
    json_object *done = jsonx_done(o, oom);
    CU_ASSERT_PTR_EQUAL(done, o);
    CU_ASSERT(jsonx_int_is(done, "a", 1));
    json_object_put(done);
    o = jsonx_new_obj(&oom);
    jsonx_put(o, "a", NULL, &oom); /* a failed allocation */
    CU_ASSERT_EQUAL(oom, 1);
    CU_ASSERT_PTR_NULL(jsonx_done(o, oom));
}

static const cu_entry_t tests[] = {
    CU_SUITE("jsonx"),
    {"str and int by key", test_str_and_int},
    {"values by path", test_paths},
    {"strict parse of a whole body", test_parse_strict},
    {"the one parser: parsed, incomplete, trailing, not JSON; a kept tokener", test_parse_ex},
    {"typed readers: set strings, ints with a default, booleans, equality, types, find", test_typed_readers},
    {"a build ends with jsonx_done: the object, or NULL when an allocation failed", test_build_done},
};

CU_MAIN(tests)
