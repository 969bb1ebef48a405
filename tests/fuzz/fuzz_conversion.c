/* libFuzzer target for the conversion webhook's core (conversion_review, conversion_convert).
 *
 * The first input byte chooses a mode; the rest is the payload:
 *   mode & 3 == 0   the payload is the whole request body (raw ConversionReview bytes);
 *   mode & 3 == 1   the payload is one object in a well-formed review to v1;
 *   mode & 3 == 2   the same, to v1alpha1;
 *   mode & 3 == 3   the payload is the annotation's text on a v1alpha1 object, to v1.
 * Checks, beyond the sanitizers: an answer always comes back, it is JSON with kind
 * ConversionReview, a response with a string uid and a result whose status is Success or
 * Failure (Failure with a message under the cap); the same input gives the same answer;
 * on Success every converted object has the desired apiVersion, and converting it back
 * and forth again gives the same object (the round trip is stable).
 *
 * scripts/fuzz.sh builds every tests/fuzz/fuzz_*.c with the daemons' modules, so this
 * target needs nothing more there.
 */
#include "buf.h"
#include "conversion.h"
#define FUZZ_TARGET "fuzz_conversion"
#include "fuzz_review.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void wrap(buf_t *b, const char *desired, const char *obj, size_t len)
{
    buf_printf(b, "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"
                  "\"uid\":\"f-1\",\"desiredAPIVersion\":\"%s\",\"objects\":[",
               desired);
    buf_append(b, obj, len);
    buf_puts(b, "]}}");
}

/* A v1alpha1 object whose annotation is the payload, as a JSON string. */
static void annotated(buf_t *b, const uint8_t *p, size_t len)
{
    json_object *o = json_tokener_parse("{\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"RedisCluster\","
                                        "\"metadata\":{\"name\":\"c\",\"annotations\":{}},\"spec\":{\"size\":1},"
                                        "\"status\":{}}");
    json_object *ann = get(get(o, "metadata"), "annotations");
    json_object_object_add(ann, CONVERSION_ANNOTATION, json_object_new_string_len((const char *)p, (int)len));
    const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    wrap(b, CONVERSION_V1, text, strlen(text));
    json_object_put(o);
}

/* The API server's ObjectMeta drops an empty or null annotations map: so do we before
 * comparing (conversion.h: the one normalisation). */
static void normalize(json_object *o)
{
    json_object *meta = get(o, "metadata"), *ann = NULL;
    if (meta && json_object_is_type(meta, json_type_object) && json_object_object_get_ex(meta, "annotations", &ann) &&
        (!ann || (json_object_is_type(ann, json_type_object) && json_object_object_length(ann) == 0)))
        json_object_object_del(meta, "annotations");
}

static json_object *convert(json_object *obj, const char *to)
{
    json_object *out = NULL;
    char err[512];
    if (conversion_convert(obj, to, &out, err, sizeof(err)))
        return NULL;
    normalize(out);
    return out;
}

/* The round trip is the identity on every v1 object, and on every v1alpha1 object the
 * webhook itself produced (a hand-made annotation may be non-canonical: its v1 view is
 * what must be stable). */
static void check_stable(json_object *obj, const char *desired, const char *out)
{
    json_object *same = convert(obj, desired), *v1 = NULL, *a = NULL, *v1again = NULL, *aagain = NULL;
    json_object *o = convert(obj, desired); /* a normalised copy */
    check(same && json_object_equal(same, o), "same-version conversion is not a no-op", out);
    if (!strcmp(desired, CONVERSION_V1)) {
        a = convert(o, CONVERSION_V1ALPHA1);
        check(a != NULL, "a v1 object could not be converted to v1alpha1", out);
        v1again = convert(a, CONVERSION_V1);
        check(v1again && json_object_equal(v1again, o), "v1 -> v1alpha1 -> v1 changed the object", out);
    } else if ((v1 = convert(o, CONVERSION_V1))) {
        a = convert(v1, CONVERSION_V1ALPHA1);
        check(a != NULL, "the way back was refused", out);
        v1again = convert(a, CONVERSION_V1);
        check(v1again && json_object_equal(v1again, v1), "the v1 view is not stable", out);
        aagain = convert(v1again, CONVERSION_V1ALPHA1);
        check(aagain && json_object_equal(aagain, a), "a webhook-made v1alpha1 object did not round-trip", out);
    }
    json_object_put(same);
    json_object_put(o);
    json_object_put(v1);
    json_object_put(a);
    json_object_put(v1again);
    json_object_put(aagain);
}

/* conversion_review as a fuzz_review_fn. */
static int review(const char *body, size_t len, char **out, void *outcome, void *arg)
{
    (void)arg;
    return conversion_review(body, len, out, outcome);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in;
    if (fuzz_input(data, size, &in))
        return 0;
    const char *desired = in.mode == 2 ? CONVERSION_V1ALPHA1 : CONVERSION_V1;
    if (in.mode == 3)
        annotated(&in.body, data + 1, in.plen);
    else if (in.mode != 0)
        wrap(&in.body, desired, in.payload, in.plen);

    char *out;
    conversion_outcome_t o;
    int rc = review_twice(review, NULL, &in.body, &out, &o);
    if (rc < 0)
        return 0;

    /* The answer nests as deep as the objects it carries: parse it with room for that. */
    json_tokener *tok = json_tokener_new_ex(CONVERSION_MAX_DEPTH + 8);
    json_object *root = json_tokener_parse_ex(tok, out, (int)strlen(out));
    json_tokener_free(tok);
    check(root && !strcmp(json_object_get_string(get(root, "kind")), "ConversionReview"), "answer is not a review",
          out);
    json_object *resp = get(root, "response"), *result = get(resp, "result");
    check(json_object_is_type(get(resp, "uid"), json_type_string), "no response.uid", out);
    const char *status = json_object_get_string(get(result, "status"));
    check(status && (!strcmp(status, "Success") || !strcmp(status, "Failure")), "result.status", out);
    check(rc != 1 || !strcmp(status, "Failure"), "bad request answered Success", out);
    check((strcmp(status, "Success") == 0) == o.success, "outcome disagrees with the answer", out);
    if (!strcmp(status, "Failure")) {
        const char *msg = json_object_get_string(get(result, "message"));
        check(msg && *msg && strlen(msg) < CONVERSION_MESSAGE_CAP, "failure without a bounded message", out);
    } else if (in.mode != 0) {
        /* The in.payload may hold no object or several ("{..},{..}"): each one in order. */
        json_object *objs = get(resp, "convertedObjects");
        check(json_object_array_length(objs) == o.objects, "objects in and out differ in number", out);
        for (size_t i = 0; i < json_object_array_length(objs); i++) {
            json_object *obj = json_object_array_get_idx(objs, i);
            check(!strcmp(json_object_get_string(get(obj, "apiVersion")), desired), "wrong apiVersion", out);
            check_stable(obj, desired, out);
        }
    }
    json_object_put(root);
    free(out);
    buf_free(&in.body);
    return 0;
}
