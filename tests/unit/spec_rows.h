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
 *   rc = spec_parsed(spec, &s)
 *                          rdc_spec_parse of rc_with(spec) into s, without an error; s's
 *                          strings are rc's: the caller puts rc when done with them
 *   ASSERT_S3_PLACE(x, endpoint, bucket, region, credentials)
 *                          the S3 place rdc_spec_parse types for spec.backup.destination
 *                          and spec.restore.from alike (x: s.backup, s.restore), as wanted,
 *                          without a CA Secret
 *   check_review_rows(rows, n)
 *                          for each row, the webhook refuses op of spec (old_spec the
 *                          oldObject's, NULL: none) with code and want in its message; a
 *                          row that differs is printed with what was said
 */
#ifndef RDC_TEST_SPEC_ROWS_H
#define RDC_TEST_SPEC_ROWS_H

#include "admission.h"
#include "buf.h"
#include "plan_fixture.h"
#include "rdc_spec.h"
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

typedef struct {
    const char *op, *old_spec, *spec; /* op: CREATE, UPDATE; old_spec NULL: no oldObject */
    const char *want;                 /* in the message */
    int code;                         /* 403 when every error is Forbidden, else 422 */
} review_row_t;

#define ASSERT_S3_PLACE(x, endpoint_, bucket_, region_, credentials_)                                               \
    do {                                                                                                           \
        CU_ASSERT_STRING_EQUAL((x).endpoint, endpoint_);                                                           \
        CU_ASSERT_STRING_EQUAL((x).bucket, bucket_);                                                               \
        CU_ASSERT_STRING_EQUAL((x).region, region_);                                                               \
        CU_ASSERT_STRING_EQUAL((x).credentials_secret, credentials_);                                              \
        CU_ASSERT_PTR_NULL((x).ca_secret);                                                                         \
    } while (0)

static inline json_object *spec_parsed(const char *spec, rdc_spec_t *s)
{
    json_object *rc = rc_with(spec);
    rdc_field_errors_t *e = rdc_field_errors_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL(rdc_spec_parse(rc, s, e), 0);
    rdc_field_errors_destroy(&e);
    return rc;
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

static inline void check_review_rows(const review_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_object *rc = rc_with(rows[i].spec), *old = rows[i].old_spec ? rc_with(rows[i].old_spec) : NULL;
        admission_outcome_t o;
        validate_review(rows[i].op, old, rc, i, &o);
        CU_ASSERT_FALSE(o.allowed);
        if (o.code != rows[i].code || !strstr(o.message, rows[i].want))
            fprintf(stderr, "\n  row %zu: %d %s\n", i, o.code, o.message);
        CU_ASSERT_EQUAL(o.code, rows[i].code);
        ASSERT_TEXT_HAS(o.message, rows[i].want);
        json_object_put(rc);
        json_object_put(old);
    }
}

#endif
