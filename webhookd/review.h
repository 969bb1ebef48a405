/* review: what the two review cores of webhookd (admission.c's AdmissionReview and
 * conversion.c's ConversionReview) share: reading the request body, naming a JSON value's
 * type in messages, and copying strings into the fixed-size outcome fields. Pure: no I/O,
 * no global state.
 */
#ifndef RDC_REVIEW_H
#define RDC_REVIEW_H

#include <json-c/json.h>
#include <stddef.h>

/* Parse the len bytes of body (NULL: none) as one JSON value, strictly, at most max_depth
 * levels (jsonx_parse_strict). Returns the value (the caller puts it), or NULL: with the
 * bad request's message in msg (msglen bytes) -- "body: empty; <what> (JSON) is required"
 * (what e.g. "an AdmissionReview"), "body: too large" (over INT_MAX) or "body: not JSON:
 * <reason>" -- or with msg "": out of memory (*oom set), or the body is the JSON null. */
json_object *review_parse_body(const char *body, size_t len, int max_depth, const char *what, int *oom,
                               char *msg, size_t msglen);

/* A short description of a JSON value's type for messages: "null" (for NULL too),
 * "a boolean", "a number", "an object", "an array", "a string". */
const char *review_type_name(const json_object *v);

/* Copy src (NULL: "") into dst (size bytes, at least 1), cut at a UTF-8 character
 * boundary when it does not fit. */
void review_copy_cut(char *dst, size_t size, const char *src);

#endif
