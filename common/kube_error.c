#include "kube_error.h"

#include "buf.h"
#include "jsonx.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Longest piece of a non-Status body quoted in a message. */
#define BODY_SNIPPET_MAX 200

static const char *const code_names[] = {
    [KERR_OK] = "OK",
    [KERR_TRANSPORT] = "Transport",
    [KERR_TIMEOUT] = "Timeout",
    [KERR_BAD_REQUEST] = "BadRequest",
    [KERR_UNAUTHORIZED] = "Unauthorized",
    [KERR_FORBIDDEN] = "Forbidden",
    [KERR_NOT_FOUND] = "NotFound",
    [KERR_METHOD_NOT_ALLOWED] = "MethodNotAllowed",
    [KERR_ALREADY_EXISTS] = "AlreadyExists",
    [KERR_CONFLICT] = "Conflict",
    [KERR_GONE] = "Gone",
    [KERR_INVALID] = "Invalid",
    [KERR_TOO_MANY_REQUESTS] = "TooManyRequests",
    [KERR_INTERNAL] = "InternalError",
    [KERR_SERVER_TIMEOUT] = "ServerTimeout",
    [KERR_UNAVAILABLE] = "ServiceUnavailable",
    [KERR_DECODE] = "Decode",
    [KERR_CONFIG] = "Config",
    [KERR_OTHER] = "Other",
};

const char *kube_error_code_name(kube_error_code_t code)
{
    if ((unsigned)code < sizeof(code_names) / sizeof(code_names[0]) && code_names[code])
        return code_names[code];
    return "Unknown";
}

/* Status reasons (metav1.StatusReason) that name a code on their own. Reasons not
 * listed (NotAcceptable, UnsupportedMediaType, RequestEntityTooLarge, Unknown, "") leave
 * the decision to the HTTP status. */
static const struct {
    const char *reason;
    kube_error_code_t code;
} reason_codes[] = {
    {"NotFound", KERR_NOT_FOUND},
    {"AlreadyExists", KERR_ALREADY_EXISTS},
    {"Conflict", KERR_CONFLICT},
    {"Gone", KERR_GONE},
    {"Expired", KERR_GONE},
    {"Invalid", KERR_INVALID},
    {"Forbidden", KERR_FORBIDDEN},
    {"Unauthorized", KERR_UNAUTHORIZED},
    {"BadRequest", KERR_BAD_REQUEST},
    {"MethodNotAllowed", KERR_METHOD_NOT_ALLOWED},
    {"TooManyRequests", KERR_TOO_MANY_REQUESTS},
    {"Timeout", KERR_TIMEOUT},
    {"ServerTimeout", KERR_SERVER_TIMEOUT},
    {"InternalError", KERR_INTERNAL},
    {"ServiceUnavailable", KERR_UNAVAILABLE},
};

static kube_error_code_t code_for_reason(const char *reason)
{
    for (size_t i = 0; i < sizeof(reason_codes) / sizeof(reason_codes[0]); i++) {
        if (strcmp(reason, reason_codes[i].reason) == 0)
            return reason_codes[i].code;
    }
    return KERR_OK;
}

kube_error_code_t kube_error_code_for_http(int s)
{
    if (s < 400)
        return KERR_OK;
    switch (s) {
    case 400: return KERR_BAD_REQUEST;
    case 401: return KERR_UNAUTHORIZED;
    case 403: return KERR_FORBIDDEN;
    case 404: return KERR_NOT_FOUND;
    case 405: return KERR_METHOD_NOT_ALLOWED;
    case 409: return KERR_CONFLICT;
    case 410: return KERR_GONE;
    case 422: return KERR_INVALID;
    case 429: return KERR_TOO_MANY_REQUESTS;
    case 502:
    case 503: return KERR_UNAVAILABLE;
    case 504: return KERR_TIMEOUT;
    default: return s >= 500 && s < 600 ? KERR_INTERNAL : KERR_OTHER;
    }
}

static const char *http_phrase(int s)
{
    switch (s) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return NULL;
    }
}

/* Copy at most n bytes of src into dst[size], cutting at a UTF-8 boundary and turning
 * control characters into spaces so that the text stays on one line. */
static void copy_text(char *dst, size_t size, const char *src, size_t n)
{
    if (size == 0)
        return;
    if (!src)
        n = 0;
    if (n >= size) {
        n = size - 1;
        /* src[n] is the first byte left out; if it continues a sequence, drop its
         * start too. */
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    dst[n] = '\0';
}

static void copy_str(char *dst, size_t size, const char *src)
{
    copy_text(dst, size, src, src ? strlen(src) : 0);
}

void kube_error_clear(kube_error_t *e)
{
    memset(e, 0, sizeof(*e));
}

/* Clear everything except the request identity and the retry-after hint. */
static void reset_keep_request(kube_error_t *e)
{
    char method[sizeof(e->method)];
    char target[sizeof(e->target)];
    int64_t retry_after = e->retry_after_s;
    memcpy(method, e->method, sizeof(method));
    memcpy(target, e->target, sizeof(target));
    kube_error_clear(e);
    memcpy(e->method, method, sizeof(method));
    memcpy(e->target, target, sizeof(target));
    e->retry_after_s = retry_after;
}

void kube_error_set_request(kube_error_t *e, const char *method, const char *target)
{
    if (method)
        copy_str(e->method, sizeof(e->method), method);
    if (target)
        copy_str(e->target, sizeof(e->target), target);
}

void kube_error_set(kube_error_t *e, kube_error_code_t code, const char *fmt, ...)
{
    reset_keep_request(e);
    e->retry_after_s = 0;
    e->code = code;
    char tmp[sizeof(e->message)];
    BUF_FORMAT_VA(tmp, sizeof(tmp), fmt);
    copy_str(e->message, sizeof(e->message), tmp);
}

void kube_error_set_transport(kube_error_t *e, int curl_code, int timed_out,
                              const char *summary, const char *detail)
{
    reset_keep_request(e);
    e->retry_after_s = 0;
    e->code = timed_out ? KERR_TIMEOUT : KERR_TRANSPORT;
    e->curl_code = curl_code;
    char tmp[sizeof(e->transport)];
    int has_summary = summary && *summary;
    int has_detail = detail && *detail;
    snprintf(tmp, sizeof(tmp), "curl %d%s%s%s%s%s", curl_code, has_summary ? " (" : "",
             has_summary ? summary : "", has_summary ? ")" : "", has_detail ? ": " : "",
             has_detail ? detail : "");
    copy_str(e->transport, sizeof(e->transport), tmp);
}


/* A Status says kind: Status; older or hand-made ones at least say status: Failure. */
static int looks_like_status(json_object *o)
{
    if (!json_object_is_type(o, json_type_object))
        return 0;
    const char *kind = jsonx_str(o, "kind");
    if (kind)
        return strcmp(kind, "Status") == 0;
    const char *status = jsonx_str(o, "status");
    return status && strcmp(status, "Failure") == 0;
}

static void take_causes(json_object *details, kube_error_t *out)
{
    json_object *causes;
    if (!details || !json_object_object_get_ex(details, "causes", &causes) ||
        !json_object_is_type(causes, json_type_array))
        return;
    size_t n = json_object_array_length(causes);
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(causes, i);
        if (!json_object_is_type(c, json_type_object))
            continue;
        out->ncauses_total++;
        if (out->ncauses >= KUBE_ERROR_MAX_CAUSES)
            continue;
        kube_error_cause_t *dst = &out->causes[out->ncauses++];
        copy_str(dst->field, sizeof(dst->field), jsonx_str(c, "field"));
        copy_str(dst->reason, sizeof(dst->reason), jsonx_str(c, "reason"));
        copy_str(dst->message, sizeof(dst->message), jsonx_str(c, "message"));
    }
}

kube_error_code_t kube_error_from_status(json_object *status, int http_status,
                                         kube_error_t *out)
{
    reset_keep_request(out);
    out->http_status = http_status;
    if (!looks_like_status(status)) {
        out->code = KERR_DECODE;
        copy_str(out->message, sizeof(out->message), "expected a Status object");
        return out->code;
    }
    int64_t code = 0;
    if (jsonx_int(status, "code", &code) == 0 && http_status <= 0 && code > 0 && code < 1000)
        out->http_status = (int)code;
    const char *reason = jsonx_str(status, "reason");
    const char *message = jsonx_str(status, "message");
    const char *st = jsonx_str(status, "status");
    copy_str(out->reason, sizeof(out->reason), reason);
    copy_str(out->message, sizeof(out->message), message);

    json_object *details = NULL;
    json_object_object_get_ex(status, "details", &details);
    if (details && !json_object_is_type(details, json_type_object))
        details = NULL;
    take_causes(details, out);
    int64_t ra = 0;
    if (out->retry_after_s <= 0 && jsonx_int(details, "retryAfterSeconds", &ra) == 0 && ra > 0)
        out->retry_after_s = ra;

    kube_error_code_t c = reason ? code_for_reason(reason) : KERR_OK;
    if (c == KERR_OK)
        c = kube_error_code_for_http(out->http_status);
    /* A Status with no failing code and no reason: a Failure we cannot place. */
    if (c == KERR_OK && (out->http_status == 0 || out->http_status >= 400) &&
        !(st && strcmp(st, "Success") == 0))
        c = KERR_OTHER;
    /* Before reasons existed for it, an expired watch said only this. */
    if (c != KERR_OK && message && strstr(message, "too old resource version"))
        c = KERR_GONE;
    out->code = c;
    return c;
}

/* Parse body as one JSON value (jsonx_parse_ex); NULL when it is not exactly that. */
static json_object *parse_body(const char *body, size_t len)
{
    json_object *o = NULL;
    char err[128];
    if (!body || len == 0)
        return NULL;
    jsonx_parse_ex(NULL, body, len, 64, &o, NULL, err, sizeof(err));
    return o;
}

kube_error_code_t kube_error_from_response(int http_status, const char *body, size_t len,
                                           kube_error_t *out)
{
    if (http_status > 0 && http_status < 400) {
        reset_keep_request(out);
        out->retry_after_s = 0;
        out->http_status = http_status;
        return KERR_OK;
    }
    json_object *o = parse_body(body, len);
    if (o && looks_like_status(o)) {
        kube_error_from_status(o, http_status, out);
        json_object_put(o);
        return out->code;
    }
    json_object_put(o);
    reset_keep_request(out);
    out->http_status = http_status;
    out->code = http_status > 0 ? kube_error_code_for_http(http_status) : KERR_DECODE;
    /* Quote the start of whatever came back (an HTML error page, a proxy's text). */
    while (len > 0 && (body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == ' '))
        len--;
    size_t n = len < BODY_SNIPPET_MAX ? len : BODY_SNIPPET_MAX;
    while (n < len && n > 0 && ((unsigned char)body[n] & 0xC0) == 0x80)
        n--; /* do not cut a UTF-8 character */
    copy_text(out->message, sizeof(out->message), body, n);
    if (n < len && strlen(out->message) + 4 < sizeof(out->message))
        memcpy(out->message + strlen(out->message), "...", 4);
    return out->code;
}

/* Append formatted text at *off within buf[len], never past the end. */
static void put(char *buf, size_t len, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
    if (*off >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *off, len - *off, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    *off += (size_t)n < len - *off ? (size_t)n : len - *off - 1;
}

char *kube_error_str(const kube_error_t *e, char *buf, size_t len)
{
    size_t off = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (e->method[0] && e->target[0])
        put(buf, len, &off, "%s %s: ", e->method, e->target);
    else if (e->target[0])
        put(buf, len, &off, "%s: ", e->target);

    if (e->code == KERR_OK) {
        put(buf, len, &off, "ok");
        return buf;
    }
    if (e->transport[0]) {
        put(buf, len, &off, "%s: %s", e->code == KERR_TIMEOUT ? "timeout" : "transport",
            e->transport);
        if (e->message[0])
            put(buf, len, &off, ": %s", e->message);
        return buf;
    }
    if (e->http_status > 0) {
        const char *label = e->reason[0] ? e->reason : http_phrase(e->http_status);
        put(buf, len, &off, "%d %s", e->http_status,
            label ? label : kube_error_code_name(e->code));
    } else {
        put(buf, len, &off, "%s", e->reason[0] ? e->reason : kube_error_code_name(e->code));
    }
    if (e->message[0]) {
        put(buf, len, &off, ": %s", e->message);
    } else {
        /* No message: the causes are all there is to say. */
        for (size_t i = 0; i < e->ncauses; i++)
            put(buf, len, &off, "%s%s%s%s", i ? "; " : ": ", e->causes[i].field,
                e->causes[i].field[0] ? ": " : "", e->causes[i].message);
    }
    if (e->ncauses_total > 1)
        put(buf, len, &off, " [%zu causes]", e->ncauses_total);
    if (e->retry_after_s > 0)
        put(buf, len, &off, " (retry after %llds)", (long long)e->retry_after_s);
    return buf;
}

#define PRED(name, c)                                                                       \
    int kube_error_is_##name(const kube_error_t *e) { return e && e->code == (c); }
PRED(not_found, KERR_NOT_FOUND)
PRED(already_exists, KERR_ALREADY_EXISTS)
PRED(conflict, KERR_CONFLICT)
PRED(gone, KERR_GONE)
PRED(invalid, KERR_INVALID)
PRED(forbidden, KERR_FORBIDDEN)
PRED(unauthorized, KERR_UNAUTHORIZED)
PRED(too_many_requests, KERR_TOO_MANY_REQUESTS)
PRED(timeout, KERR_TIMEOUT)
#undef PRED

int kube_error_retryable(const kube_error_t *e)
{
    if (!e || e->code == KERR_OK)
        return 0;
    if (e->retry_after_s > 0)
        return 1;
    switch (e->code) {
    case KERR_TRANSPORT:
    case KERR_TIMEOUT:
    case KERR_TOO_MANY_REQUESTS:
    case KERR_SERVER_TIMEOUT:
    case KERR_UNAVAILABLE:
        return 1;
    default:
        return 0;
    }
}
