/* cu_run: the body of every CUnit test main() (cu_table.h's CU_MAIN, cu_main.h). */
#ifndef RDC_CU_RUN_H
#define RDC_CU_RUN_H

#include <CUnit/Basic.h>

/* A fresh registry, add(arg) to fill it (0 = done), a verbose run. Returns the exit
 * status: 0 when every test passed, 1 when an assertion or a test failed or a suite's
 * init or cleanup hook did (CUnit then runs none of that suite's tests and counts no
 * failed test: without this a suite that cannot set up would pass), 2 when the registry
 * could not be filled. */
static inline int cu_run(int (*add)(const void *arg), const void *arg)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    if (add(arg)) {
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed() +
                        CU_get_number_of_suites_failed();
    CU_cleanup_registry();
    return failures ? 1 : 0;
}

#endif
