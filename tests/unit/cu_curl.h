/* cu_curl: CUnit suite hooks for the suites that speak HTTP through libcurl: curl's
 * process-wide state, set up before the suite's first test and torn down after its last.
 *
 *     CU_HOOKS({"migrate", cu_curl_init, cu_curl_clean, NULL, NULL});
 *
 * A suite with more to set up calls them from its own hooks. */
#ifndef RDC_CU_CURL_H
#define RDC_CU_CURL_H

#include <curl/curl.h>

/* curl_global_init; 0, or 1 (the suite is not run) when curl cannot start. */
static inline int cu_curl_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : 1;
}

/* curl_global_cleanup; always 0. */
static inline int cu_curl_clean(void)
{
    curl_global_cleanup();
    return 0;
}

#endif
