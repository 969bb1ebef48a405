/* spec_rows: tables of spec fields and what rdc_spec and the validating admission webhook
 * say of them, one row at a time (test_day2, test_restore).
 *
 *   check_spec_rows(prefix, rows, n)
 *                          for each row, the spec prefix + "," + fields + "}" (prefix an
 *                          object's text without its closing brace): rdc_spec_validate's
 *                          errors are "" when want is "", else contain want; a row that
 *                          differs is printed with what was said
 *   validate_review(op, old_rc, rc, i, &o)
 *                          the validating webhook's answer to an AdmissionReview of op
 *                          (CREATE, UPDATE) of rc (old_rc: its oldObject, NULL: none), uid
 *                          "u-<i>", into o; asserts it was answered
 */
#ifndef RDC_TEST_SPEC_ROWS_H
#define RDC_TEST_SPEC_ROWS_H

#include "admission.h"
#include "buf.h"
#include "plan_fixture.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *fields, *want; /* want "": valid */
} spec_row_t;

static inline void check_spec_rows(const char *prefix, const spec_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char spec[2048];
        snprintf(spec, sizeof(spec), "%s,%s}", prefix, rows[i].fields);
        char *err = errors_of(spec);
        if (*rows[i].want ? !strstr(err, rows[i].want) : *err != '\0')
            fprintf(stderr, "\n  row %zu: want \"%s\", have \"%s\"\n", i, rows[i].want, err);
        if (!*rows[i].want) {
            CU_ASSERT_STRING_EQUAL(err, "");
        } else {
            ASSERT_TEXT_HAS(err, rows[i].want);
        }
        free(err);
    }
}

static inline void validate_review(const char *op, const json_object *old_rc, const json_object *rc, size_t i,
                                   admission_outcome_t *o)
{
    buf_t b;
    buf_init(&b, 0);
    buf_printf(&b,
               "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
               "\"uid\":\"u-%zu\",\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1\",\"kind\":"
               "\"RedisCluster\"},\"operation\":\"%s\",\"name\":\"cache\",\"namespace\":\"default\","
               "\"object\":%s",
               i, op, json_object_to_json_string_ext((json_object *)rc, JSON_C_TO_STRING_PLAIN));
    if (old_rc)
        buf_printf(&b, ",\"oldObject\":%s",
                   json_object_to_json_string_ext((json_object *)old_rc, JSON_C_TO_STRING_PLAIN));
    buf_puts(&b, "}}");
    char *out = NULL;
    CU_ASSERT_EQUAL(admission_review(b.data, b.len, ADMISSION_VALIDATE, &out, o), 0);
    free(out);
    buf_free(&b);
}

#endif
