/* metrics_text: a registry's exposition text, for the unit suites that assert on it
 * (with text_assert.h's ASSERT_TEXT_HAS). Header-only: include it in the test file. */
#ifndef RDC_TEST_METRICS_TEXT_H
#define RDC_TEST_METRICS_TEXT_H

#include "buf.h"
#include "metrics.h"

#include <CUnit/CUnit.h>

/* What metrics_expose writes for reg, as a malloc'd string the caller frees (NULL when
 * out of memory: every needle then counts as absent). One assertion: the whole exposition
 * fit (metrics_expose returned 0). */
static inline char *exposition_of(metrics_registry_t *reg)
{
    buf_t out;
    buf_init(&out, 0);
    CU_ASSERT_EQUAL(metrics_expose(reg, &out), 0);
    char *text = buf_detach(&out);
    buf_free(&out);
    return text;
}

#endif
