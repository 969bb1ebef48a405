/* What the webhook fuzz targets (fuzz_admission, fuzz_conversion) share: a check that
 * stops the run with the answer under test, and the JSON member look-up they walk the
 * answer with. Each target defines FUZZ_TARGET (its name, for the message) first. */
#ifndef RDC_FUZZ_REVIEW_H
#define RDC_FUZZ_REVIEW_H

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>

/* A failed check: name it and the answer (out, cut at 2000 bytes), then abort, which
 * libFuzzer reports as a crash with the input. */
static inline void check(int ok, const char *what, const char *out)
{
    if (!ok) {
        fprintf(stderr, FUZZ_TARGET ": %s\nanswer: %.2000s\n", what, out ? out : "(null)");
        abort();
    }
}

/* o[key], or NULL when o is NULL, not an object or has no such member. */
static inline json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

#endif
