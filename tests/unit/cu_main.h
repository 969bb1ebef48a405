/* The older main() for the CUnit suites, in CUnit's own tables (new test files use
 * cu_table.h: one table, a row a suite or a test): a test file defines its suites in a
 * CU_SuiteInfo array named `suites` and includes this header last. A file with one suite
 * defines instead, just before the include,
 *     #define CU_ONE_SUITE "name", init, clean, tests
 * (init and clean as in CU_SuiteInfo, NULL for none; tests its CU_TestInfo array).
 * Exit status as cu_run's: 1 when any assertion or test failed, so make and the CI runner
 * see failures. */
#ifndef RDC_CU_MAIN_H
#define RDC_CU_MAIN_H

#include "cu_run.h"

#include <CUnit/Basic.h>

#ifdef CU_ONE_SUITE
#define CU_ONE_SUITE_INFO_(name, init, clean, tests) {name, init, clean, NULL, NULL, tests}
#define CU_ONE_SUITE_INFO(...) CU_ONE_SUITE_INFO_(__VA_ARGS__)
static CU_SuiteInfo suites[] = {CU_ONE_SUITE_INFO(CU_ONE_SUITE), CU_SUITE_INFO_NULL};
#endif

static int cu_register_suites(const void *arg)
{
    return CU_register_suites((CU_SuiteInfo *)arg) != CUE_SUCCESS;
}

int main(void)
{
    return cu_run(cu_register_suites, suites);
}

#endif
