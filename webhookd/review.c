/* review: the parts the AdmissionReview and ConversionReview cores share (review.h). */
#include "review.h"

#include "jsonx.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

json_object *review_parse_body(const char *body, size_t len, int max_depth, const char *what, int *oom,
                               char *msg, size_t msglen)
{
    json_object *root = NULL;
    char why[256];
    msg[0] = '\0';
    if (!body || len == 0)
        snprintf(msg, msglen, "body: empty; %s (JSON) is required", what);
    else if (len > INT_MAX)
        snprintf(msg, msglen, "body: too large");
    else {
        int rc = jsonx_parse_strict(body, len, max_depth, &root, why, sizeof(why));
        if (rc < 0)
            *oom = 1;
        else if (rc > 0)
            snprintf(msg, msglen, "body: not JSON: %s", why);
    }
    return root;
}

const char *review_type_name(const json_object *v)
{
    switch (v ? json_object_get_type(v) : json_type_null) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_double:
    case json_type_int: return "a number";
    case json_type_object: return "an object";
    case json_type_array: return "an array";
    case json_type_string: return "a string";
    }
    return "an unknown value";
}

void review_copy_cut(char *dst, size_t size, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= size) {
        n = size - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--;
    }
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}
