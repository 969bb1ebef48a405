/* cu_table: a CUnit test file's whole registration as one table, read top to bottom:
 *
 *     static const cu_entry_t tests[] = {
 *         CU_SUITE("workqueue"),
 *         {"dedup and FIFO", test_dedup_and_fifo},
 *         {"a key in flight is exclusive", test_exclusive_while_processing},
 *         CU_SUITE("workqueue server"),
 *         {"serves", test_serves},
 *     };
 *     CU_MAIN(tests)
 *
 * A CU_SUITE row starts a suite; each {name, function} row after it is one of its tests.
 * No terminator: CU_MAIN takes the table's length from its type. Suites with CUnit's
 * hooks (init and cleanup around the suite, setup and teardown around each test; NULL for
 * none) are named once, by suite name, best just after the hook functions:
 *
 *     CU_HOOKS({"workqueue server", suite_init, suite_clean, NULL, NULL});
 *
 * The main() CU_MAIN defines runs every suite verbosely and exits 1 when an assertion or a
 * test failed, 2 when the tests could not be registered (a test row before the first
 * suite, hooks for a suite the table lacks, CUnit out of memory), so make and the CI
 * runner see failures. (cu_main.h is the older form, CUnit's own CU_SuiteInfo tables.)
 */
#ifndef RDC_CU_TABLE_H
#define RDC_CU_TABLE_H

#include "cu_run.h"

#include <CUnit/Basic.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    const char *name;
    CU_TestFunc test; /* NULL: this row starts the suite named */
} cu_entry_t;

typedef struct {
    const char *suite;
    CU_InitializeFunc init;
    CU_CleanupFunc cleanup;
    CU_SetUpFunc setup;
    CU_TearDownFunc teardown;
} cu_hooks_t;

#define CU_SUITE(name) {(name), NULL}

/* The file's hooks, an array ended by a NULL suite: a tentative definition, NULL unless
 * the file defines it with CU_HOOKS (C allows both in one translation unit). */
static const cu_hooks_t *cu_hooks_of_file;

#define CU_HOOKS(...)                                                                      \
    static const cu_hooks_t cu_hooks_[] = {__VA_ARGS__, {NULL, NULL, NULL, NULL, NULL}};   \
    static const cu_hooks_t *cu_hooks_of_file = cu_hooks_

typedef struct {
    const cu_entry_t *rows;
    size_t n;
    const cu_hooks_t *hooks; /* ended by a NULL suite; NULL for none */
} cu_table_t;

/* The hooks of suite in t, or NULL. */
static inline const cu_hooks_t *cu_table_hooks(const cu_table_t *t, const char *suite)
{
    for (const cu_hooks_t *h = t->hooks; h && h->suite; h++)
        if (strcmp(h->suite, suite) == 0)
            return h;
    return NULL;
}

/* Add the suites and tests of table (a cu_table_t) to CUnit's registry. Returns 0, or -1
 * when a row could not be added or a hooks entry names no suite of the table. */
static inline int cu_table_register(const void *table)
{
    const cu_table_t *t = table;
    CU_pSuite suite = NULL;
    size_t hooked = 0;
    for (size_t i = 0; i < t->n; i++) {
        const cu_entry_t *e = &t->rows[i];
        if (!e->test) {
            const cu_hooks_t *h = cu_table_hooks(t, e->name);
            hooked += h != NULL;
            suite = h ? CU_add_suite_with_setup_and_teardown(e->name, h->init, h->cleanup, h->setup, h->teardown)
                      : CU_add_suite(e->name, NULL, NULL);
        }
        if (!suite || (e->test && !CU_add_test(suite, e->name, e->test)))
            return -1;
    }
    size_t nhooks = 0;
    for (const cu_hooks_t *h = t->hooks; h && h->suite; h++)
        nhooks++;
    return hooked == nhooks ? 0 : -1;
}

#define CU_MAIN(table)                                                                     \
    int main(void)                                                                         \
    {                                                                                      \
        const cu_table_t t = {(table), sizeof(table) / sizeof((table)[0]), cu_hooks_of_file}; \
        return cu_run(cu_table_register, &t);                                              \
    }

#endif
