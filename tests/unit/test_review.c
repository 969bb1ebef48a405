/* Unit tests of webhookd/review: the body reader's four answers, the type names, the
 * UTF-8-safe copy. */
#include "cu_table.h"
#include "review.h"

#include <CUnit/CUnit.h>
#include <string.h>

static void test_parse_body(void)
{
    static const struct {
        const char *body; /* NULL: no body */
        size_t len;
        int depth;
        const char *msg;  /* "" when parsed */
    } cases[] = {
        {NULL, 0, 8, "body: empty; an AdmissionReview (JSON) is required"},
        {"{}", 0, 8, "body: empty; an AdmissionReview (JSON) is required"},
        {"{", 1, 8, "body: not JSON: unexpected end of input"},
        {"{} x", 4, 8, "body: not JSON: "},
        {"{\"a\":[1]} ", 10, 8, ""},
        {"[[[1]]]", 7, 8, ""},
        {"[[[1]]]", 7, 2, "body: not JSON: "},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[320];
        int oom = 0;
        json_object *v = review_parse_body(cases[i].body, cases[i].len, cases[i].depth, "an AdmissionReview", &oom, msg,
                                           sizeof(msg));
        CU_ASSERT_EQUAL(oom, 0);
        if (!cases[i].msg[0]) {
            CU_ASSERT_STRING_EQUAL(msg, "");
            CU_ASSERT_PTR_NOT_NULL(v);
        } else {
            CU_ASSERT_PTR_NULL(v);
            CU_ASSERT_EQUAL(strncmp(msg, cases[i].msg, strlen(cases[i].msg)), 0);
            if (strncmp(msg, cases[i].msg, strlen(cases[i].msg)))
                fprintf(stderr, "\n  case %zu: have \"%s\", want \"%s...\"\n", i, msg, cases[i].msg);
        }
        json_object_put(v);
    }
    /* Over INT_MAX: refused before the parser sees it (the bytes are never read). */
    char msg[64];
    int oom = 0;
    CU_ASSERT_PTR_NULL(review_parse_body("{}", (size_t)1 << 31, 8, "x", &oom, msg, sizeof(msg)));
    CU_ASSERT_STRING_EQUAL(msg, "body: too large");
}

static void test_type_name(void)
{
    json_object *vals[] = {NULL, json_object_new_boolean(1), json_object_new_int(1), json_object_new_double(1.5),
                           json_object_new_object(), json_object_new_array(), json_object_new_string("s")};
    static const char *const want[] = {"null", "a boolean", "a number", "a number", "an object", "an array",
                                       "a string"};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        CU_ASSERT_STRING_EQUAL(review_type_name(vals[i]), want[i]);
        json_object_put(vals[i]);
    }
}

static void test_copy_cut(void)
{
    char dst[6];
    review_copy_cut(dst, sizeof(dst), NULL);
    CU_ASSERT_STRING_EQUAL(dst, "");
    review_copy_cut(dst, sizeof(dst), "abc");
    CU_ASSERT_STRING_EQUAL(dst, "abc");
    review_copy_cut(dst, sizeof(dst), "abcdefgh");
    CU_ASSERT_STRING_EQUAL(dst, "abcde");
    review_copy_cut(dst, sizeof(dst), "abc\xc3\xa9z"); /* "abcéz": é would end past the cap */
    CU_ASSERT_STRING_EQUAL(dst, "abc\xc3\xa9");
    review_copy_cut(dst, sizeof(dst), "abcd\xc3\xa9"); /* é would be cut in half: left out */
    CU_ASSERT_STRING_EQUAL(dst, "abcd");
    review_copy_cut(dst, 1, "abc");
    CU_ASSERT_STRING_EQUAL(dst, "");
}

static const cu_entry_t tests[] = {
    CU_SUITE("review"),
    {"parse_body: empty, too large, not JSON, parsed", test_parse_body},
    {"type names", test_type_name},
    {"copy cut at a character boundary", test_copy_cut},
};

CU_MAIN(tests)
