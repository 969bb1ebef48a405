/* Shared main() for the CUnit suites: each tests/unit/test_*.c defines its suites in a
 * CU_SuiteInfo array named `suites` and includes this header last. A file with one suite
 * defines instead, just before the include,
 *     #define CU_ONE_SUITE "name", init, clean, tests
 * (init and clean as in CU_SuiteInfo, NULL for none; tests its CU_TestInfo array).
 * Exit status is 1 when any assertion failed, so make and the CI runner see failures. */
#ifndef RDC_CU_MAIN_H
#define RDC_CU_MAIN_H

#include <CUnit/Basic.h>

#ifdef CU_ONE_SUITE
#define CU_ONE_SUITE_INFO_(name, init, clean, tests) {name, init, clean, NULL, NULL, tests}
#define CU_ONE_SUITE_INFO(...) CU_ONE_SUITE_INFO_(__VA_ARGS__)
static CU_SuiteInfo suites[] = {CU_ONE_SUITE_INFO(CU_ONE_SUITE), CU_SUITE_INFO_NULL};
#endif

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
