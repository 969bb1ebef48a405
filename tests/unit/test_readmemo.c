/* Unit tests of workerd's readmemo (recent API answers by key): a table of steps, each an
 * operation at a time and what the memo answers. */
#include "cu_table.h"
#include "readmemo.h"

#include <CUnit/CUnit.h>
#include <string.h>

typedef enum { PUT, GET } op_t;

typedef struct {
    op_t op;
    const char *key;
    int64_t at;       /* the step's clock */
    const char *json; /* PUT: the value ("null" = found nothing); GET: the one expected */
    int hit;          /* GET: readmemo_get's answer */
    size_t count;     /* after the step */
} step_t;

/* Two slots, ttl 10: a value within ttl and not after it; "found nothing" is an answer
 * too; a put replaces its key's value and time; a third key evicts the oldest entry. */
static const step_t steps[] = {
    {GET, "a", 0, NULL, 0, 0},
    {PUT, "a", 0, "[1]", 0, 1},
    {GET, "a", 10, "[1]", 1, 1},   /* ttl included */
    {GET, "a", 11, NULL, 0, 1},    /* too old */
    {GET, "b", 5, NULL, 0, 1},     /* another key */
    {PUT, "b", 5, "null", 0, 2},   /* found nothing */
    {GET, "b", 6, "null", 1, 2},
    {PUT, "a", 12, "[2]", 0, 2},   /* replaced, time renewed */
    {GET, "a", 20, "[2]", 1, 2},
    {PUT, "c", 21, "{}", 0, 2},    /* full: b (kept at 5) makes room */
    {GET, "b", 21, NULL, 0, 2},
    {GET, "a", 21, "[2]", 1, 2},
    {GET, "c", 21, "{}", 1, 2},
    {GET, "c", 20, NULL, 0, 2},    /* a clock before the read: not trusted */
};

static void test_steps(void)
{
    readmemo_t *m = readmemo_new(2, 10);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        const step_t *s = &steps[i];
        if (s->op == PUT) {
            json_object *v = json_tokener_parse(s->json);
            CU_ASSERT_EQUAL(readmemo_put(m, s->key, v, s->at), 0);
            json_object_put(v); /* the memo holds its own reference */
        } else {
            json_object *v = (json_object *)1;
            int hit = readmemo_get(m, s->key, s->at, &v);
            CU_ASSERT_EQUAL(hit, s->hit);
            if (!s->json || !strcmp(s->json, "null")) {
                CU_ASSERT_PTR_NULL(v);
            } else {
                CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), s->json);
            }
            json_object_put(v);
        }
        CU_ASSERT_EQUAL(readmemo_count(m), s->count);
    }
    readmemo_clear(m);
    CU_ASSERT_EQUAL(readmemo_count(m), 0);
    readmemo_destroy(&m);
    CU_ASSERT_PTR_NULL(m);
    readmemo_destroy(&m);
}

/* A value handed out stays valid after its entry is replaced or the memo is gone. */
static void test_values_outlive_entries(void)
{
    readmemo_t *m = readmemo_new(1, 100);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    json_object *v = json_tokener_parse("{\"items\":[1,2,3]}"), *got = NULL;
    CU_ASSERT_EQUAL(readmemo_put(m, "k", v, 0), 0);
    json_object_put(v);
    CU_ASSERT_EQUAL(readmemo_get(m, "k", 1, &got), 1);
    CU_ASSERT_EQUAL(readmemo_put(m, "other", NULL, 2), 0);
    readmemo_destroy(&m);
    CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(got, "items")), 3);
    json_object_put(got);
    CU_ASSERT_PTR_NULL(readmemo_new(0, 1));
}

static const cu_entry_t tests[] = {
    CU_SUITE("readmemo"),
    {"steps: within ttl, too old, nothing found, replace, evict the oldest", test_steps},
    {"values outlive their entries", test_values_outlive_entries},
};

CU_MAIN(tests)
