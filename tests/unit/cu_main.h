/* Shared main() for the CUnit suites: each tests/unit/test_*.c defines its suites in a
 * CU_SuiteInfo array named `suites` and includes this header last. Exit status is 1 when
 * any assertion failed, so make and the CI runner see failures. */
#ifndef RDC_CU_MAIN_H
#define RDC_CU_MAIN_H

#include <CUnit/Basic.h>

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    if (CU_register_suites(suites) != CUE_SUCCESS) {
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failures ? 1 : 0;
}

#endif
