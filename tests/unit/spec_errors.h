/* spec_errors: what rdc_spec_validate says of a RedisCluster, as one string, for tests
 * that compare it with what the API server would say. */
#ifndef RDC_TEST_SPEC_ERRORS_H
#define RDC_TEST_SPEC_ERRORS_H

#include "buf.h"
#include "rdc_spec.h"

#include <CUnit/CUnit.h>

/* The errors rdc_spec_validate records for rc, joined as the API does ("" when it is
 * valid); the caller frees. */
static inline char *spec_errors(const json_object *rc)
{
    rdc_field_errors_t *e = rdc_field_errors_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    rdc_spec_validate(rc, e);
    buf_t out;
    buf_init(&out, 0);
    if (rdc_field_errors_count(e))
        rdc_field_errors_format(e, &out);
    rdc_field_errors_destroy(&e);
    return buf_detach(&out);
}

#endif
