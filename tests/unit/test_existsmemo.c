/* Unit tests of workerd's existsmemo (the children known to exist outside the cache): a
 * table of steps, each an operation and what the memo says after it. */
#include "cu_table.h"
#include "existsmemo.h"

#include <CUnit/CUnit.h>
#include <stdio.h>

typedef enum { ADD, DROP } op_t;

typedef struct {
    op_t op;
    const char *resource, *ns, *name;
    int add_rc;    /* existsmemo_add's answer (ADD only) */
    size_t count;  /* after the step */
    int saturated; /* after the step */
} step_t;

/* A memo of 4: names kept and dropped, a repeat kept once, triples that differ in one
 * part are different names, the fifth name saturates it, and it stays saturated until
 * drops bring it to 2. */
static const step_t steps[] = {
    {ADD, "configmaps", "ns", "a", 0, 1, 0},
    {ADD, "configmaps", "ns", "a", 0, 1, 0},   /* kept already */
    {ADD, "services", "ns", "a", 0, 2, 0},     /* another resource */
    {ADD, "configmaps", "other", "a", 0, 3, 0},/* another namespace */
    {DROP, "configmaps", "ns", "b", 0, 3, 0},  /* not kept: nothing */
    {ADD, "configmaps", "ns", "b", 0, 4, 0},
    {ADD, "statefulsets", "ns", "a", -1, 4, 1},/* full */
    {DROP, "configmaps", "ns", "b", 0, 3, 1},  /* still above half */
    {ADD, "statefulsets", "ns", "a", 0, 4, 1}, /* room again, still saturated */
    {DROP, "statefulsets", "ns", "a", 0, 3, 1},
    {DROP, "services", "ns", "a", 0, 2, 0},    /* half: trusted again */
    {DROP, "configmaps", "ns", "a", 0, 1, 0},
    {DROP, "configmaps", "other", "a", 0, 0, 0},
};

static void test_steps(void)
{
    existsmemo_t *m = existsmemo_new(4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(existsmemo_count(m), 0);
    CU_ASSERT_FALSE(existsmemo_has(m, "configmaps", "ns", "a"));
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        const step_t *s = &steps[i];
        if (s->op == ADD) {
            CU_ASSERT_EQUAL(existsmemo_add(m, s->resource, s->ns, s->name), s->add_rc);
            CU_ASSERT_EQUAL(existsmemo_has(m, s->resource, s->ns, s->name), s->add_rc == 0);
        } else {
            existsmemo_drop(m, s->resource, s->ns, s->name);
            CU_ASSERT_FALSE(existsmemo_has(m, s->resource, s->ns, s->name));
        }
        if (existsmemo_count(m) != s->count || existsmemo_saturated(m) != s->saturated)
            fprintf(stderr, "step %zu: count %zu saturated %d\n", i, existsmemo_count(m), existsmemo_saturated(m));
        CU_ASSERT_EQUAL(existsmemo_count(m), s->count);
        CU_ASSERT_EQUAL(existsmemo_saturated(m), s->saturated);
    }
    existsmemo_destroy(&m);
    CU_ASSERT_PTR_NULL(m);
    existsmemo_destroy(&m); /* NULL is fine */
    existsmemo_destroy(NULL);
}

/* The default capacity holds EXISTSMEMO_CAP names, not one more. */
static void test_default_capacity(void)
{
    existsmemo_t *m = existsmemo_new(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    char name[32];
    for (int i = 0; i < EXISTSMEMO_CAP; i++) {
        snprintf(name, sizeof(name), "c%d", i);
        CU_ASSERT_EQUAL(existsmemo_add(m, "configmaps", "ns", name), 0);
    }
    CU_ASSERT_EQUAL(existsmemo_count(m), EXISTSMEMO_CAP);
    CU_ASSERT_FALSE(existsmemo_saturated(m));
    CU_ASSERT_EQUAL(existsmemo_add(m, "configmaps", "ns", "one more"), -1);
    CU_ASSERT_TRUE(existsmemo_saturated(m));
    CU_ASSERT_TRUE(existsmemo_has(m, "configmaps", "ns", "c0"));
    existsmemo_destroy(&m);
}

static const cu_entry_t tests[] = {
    CU_SUITE("existsmemo"),
    {"steps: keep, drop, saturate, trust again", test_steps},
    {"the default capacity", test_default_capacity},
};

CU_MAIN(tests)
