/* jsonx: reading fields of untrusted JSON (objects from the API server, AdmissionReview
 * bodies) without trusting their types. */
#ifndef RDC_JSONX_H
#define RDC_JSONX_H

#include <json-c/json.h>

typedef enum { JSONX_ABSENT, JSONX_OK, JSONX_BAD } jsonx_field_t;

/* The value of key in o; NULL when o is not an object, the key is absent, or it is null.
 * The result is borrowed from o. */
json_object *jsonx_get(const json_object *o, const char *key);

/* o[key] as a string. Absent or null: JSONX_ABSENT. A string without an embedded NUL:
 * JSONX_OK with *out set (borrowed from o). Anything else: JSONX_BAD. *out is NULL unless
 * JSONX_OK. */
jsonx_field_t jsonx_string(const json_object *o, const char *key, const char **out);

#endif
