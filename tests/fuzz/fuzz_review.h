/* What the webhook fuzz targets (fuzz_admission, fuzz_conversion) share: a check that
 * stops the run with the answer under test, the JSON member look-up they walk the answer
 * with, and the review asked twice. Each target defines FUZZ_TARGET (its name, for the
 * message) first. */
#ifndef RDC_FUZZ_REVIEW_H
#define RDC_FUZZ_REVIEW_H

#include "buf.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The input as both targets read it: the first byte chooses the mode (its low two bits;
 * the target may read more of data[0]), the rest is the payload; in mode 0 the payload is
 * the whole request body. */
typedef struct {
    int mode;
    const char *payload;
    size_t plen;
    buf_t body; /* mode 0: the payload; else empty, for the target to build */
} fuzz_in_t;

/* Splits data (size bytes) into in. Returns 0 (in->body to be freed), or -1 for an input
 * empty or over 1 MiB (nothing to free). */
static inline int fuzz_input(const uint8_t *data, size_t size, fuzz_in_t *in)
{
    if (size < 1 || size > (1u << 20))
        return -1;
    in->mode = data[0] & 3;
    in->payload = (const char *)data + 1;
    in->plen = size - 1;
    buf_init(&in->body, 0);
    if (in->mode == 0)
        buf_append(&in->body, in->payload, in->plen);
    return 0;
}

/* A webhook's review under test: body (len bytes) answered into *out (the caller frees),
 * outcome (the target's outcome type; NULL: not wanted) filled; arg is the target's own.
 * Returns 0, 1 for a bad request (answered too), or -1 when out of memory. */
typedef int (*fuzz_review_fn)(const char *body, size_t len, char **out, void *outcome, void *arg);

/* Asks review for body twice: returns its first code and answer (*out, the caller frees)
 * and outcome; checks that an answer came and that the second one is the same (the review
 * is deterministic). -1: out of memory, body freed and nothing else to free. */
static inline int review_twice(fuzz_review_fn review, void *arg, buf_t *body, char **out, void *outcome)
{
    const char *b = body->data ? body->data : "";
    char *again = NULL;
    *out = NULL;
    int rc = review(b, body->len, out, outcome, arg);
    if (rc < 0) { /* out of memory only */
        buf_free(body);
        return -1;
    }
    check(*out != NULL, "no answer", NULL);
    int rc2 = review(b, body->len, &again, NULL, arg);
    check(rc2 == rc && again && !strcmp(*out, again), "not deterministic", *out);
    free(again);
    return rc;
}

#endif
