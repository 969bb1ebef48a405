/* split_fields: a test table's row text split at blanks, for the tables that describe
 * pods and observation nodes as "name ip role ..." (plan_fixture.h's pod_of and node_of). */
#ifndef RDC_TEST_SPLIT_FIELDS_H
#define RDC_TEST_SPLIT_FIELDS_H

#include <stdio.h>
#include <string.h>

/* Split spec at blanks into at most max fields of f (each up to 63 bytes); returns how
 * many. */
static inline int split_fields(const char *spec, char f[][64], int max)
{
    int n = 0;
    for (const char *p = spec; *p && n < max;) {
        size_t l = strcspn(p, " ");
        snprintf(f[n++], 64, "%.*s", (int)l, p);
        p += l;
        p += strspn(p, " ");
    }
    return n;
}

#endif
