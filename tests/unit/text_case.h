/* text_case: one row of a table-driven test that feeds a text in and wants a text back
 * (a spec and the message it must be refused with, a header and the token read from it,
 * a body and the error it earns). The tables of many suites have this one shape; they
 * share the type instead of each declaring it again:
 *
 *     static const text_case_t cases[] = {
 *         {"{\"size\":0}", "spec.size: Invalid value: 0"},
 *         {"Bearer ", NULL},
 *     };
 *
 * What `want` means (equal to, a part of, NULL for "refused") each test says. */
#ifndef RDC_TEST_TEXT_CASE_H
#define RDC_TEST_TEXT_CASE_H

typedef struct {
    const char *in;   /* the input the row feeds in */
    const char *want; /* what the test must see come back */
} text_case_t;

#endif
