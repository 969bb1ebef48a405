/* text_assert: CUnit assertions on text (a --help, a rendered JSON document, a log line):
 *
 *     ASSERT_TEXT_HAS(text, "needle", ...);    every needle is in text
 *     ASSERT_TEXT_LACKS(text, "needle", ...);  no needle is
 *
 * One assertion a needle; a missing (or unwanted) needle is named on stderr, so a
 * failure says which. text may be NULL: every needle then counts as absent.
 *
 *     text_contains(text, needle)              1 when both are set and needle is in text
 */
#ifndef RDC_TEST_TEXT_ASSERT_H
#define RDC_TEST_TEXT_ASSERT_H

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

static inline int text_contains(const char *text, const char *needle)
{
    return text && needle && strstr(text, needle) != NULL;
}

#define ASSERT_TEXT_HAS(text, ...) text_assert_each((text), (const char *const[]){__VA_ARGS__, NULL}, 1)
#define ASSERT_TEXT_LACKS(text, ...) text_assert_each((text), (const char *const[]){__VA_ARGS__, NULL}, 0)

static inline void text_assert_each(const char *text, const char *const *needles, int want)
{
    for (; *needles; needles++) {
        int found = text && strstr(text, *needles) != NULL;
        if (found != want)
            fprintf(stderr, "\n  text %s \"%s\"\n", want ? "lacks" : "has", *needles);
        CU_ASSERT(found == want);
    }
}

#endif
