/* loop_api: what the unit suite of a loop module that talks to the API server needs
 * beside the fake server itself (fake_api.h): a client aimed at it, and a loop with a
 * curl multi driven by it (loop_curl). Header-only. */
#ifndef RDC_TEST_LOOP_API_H
#define RDC_TEST_LOOP_API_H

#include "fake_api.h"
#include "loop.h"
#include "loop_curl.h"

#include <CUnit/CUnit.h>
#include <curl/curl.h>

typedef struct {
    kube_config_t *kcfg;
    kube_client_t *client;
    loop_t *loop;
    CURLM *multi;
    loop_curl_t *lc;
} loop_api_t;

/* A client of srv (started) and a loop with a curl multi; failing fails the test. */
static inline void loop_api_start(loop_api_t *la, const fake_api_t *srv)
{
    fake_api_connect(srv, NULL, &la->kcfg, &la->client);
    la->loop = loop_new();
    la->multi = curl_multi_init();
    CU_ASSERT_PTR_NOT_NULL_FATAL(la->loop);
    CU_ASSERT_PTR_NOT_NULL_FATAL(la->multi);
    la->lc = loop_curl_new(la->loop, la->multi, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(la->lc);
}

/* Undo loop_api_start (after whatever still has transfers in the multi is gone). */
static inline void loop_api_stop(loop_api_t *la)
{
    loop_curl_destroy(&la->lc);
    if (la->multi)
        curl_multi_cleanup(la->multi);
    la->multi = NULL;
    loop_destroy(&la->loop);
    kube_client_destroy(&la->client);
    kube_config_destroy(&la->kcfg);
}

#endif
