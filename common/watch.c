#include "watch.h"

#include "buf.h"
#include "jsonx.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_DEFAULT_MAX ((size_t)16 << 20)
/* json-c takes an int length. */
#define WATCH_HARD_MAX ((size_t)INT_MAX - 1)
/* Kubernetes objects nest deeper than json-c's default of 32 (managedFields). */
#define WATCH_JSON_DEPTH 128
/* After an unusually large event, give the memory back rather than keep it forever. */
#define WATCH_KEEP_ALLOC ((size_t)256 << 10)
#define WATCH_RV_MAX 256

struct watch_decoder {
    size_t max;
    watch_event_fn fn;
    void *user;
    buf_t line;          /* the pieces of a line split across chunks */
    json_tokener *tok;
    int status;          /* sticky watch_status_t */
    char err[512];
    char last_rv[WATCH_RV_MAX];
    kube_error_t server_error;
    int has_server_error;
    uint64_t lines;      /* lines seen in this stream */
    uint64_t events;     /* events delivered since creation */
};

static const char *const type_names[] = {
    [WATCH_ADDED] = "ADDED",       [WATCH_MODIFIED] = "MODIFIED", [WATCH_DELETED] = "DELETED",
    [WATCH_BOOKMARK] = "BOOKMARK", [WATCH_ERROR] = "ERROR",
};

const char *watch_event_type_name(watch_event_type_t type)
{
    if (type >= WATCH_ADDED && type <= WATCH_ERROR)
        return type_names[type];
    return "UNKNOWN";
}

const char *watch_status_name(int status)
{
    switch (status) {
    case WATCH_OK: return "ok";
    case WATCH_ERR_TOO_LONG: return "too long";
    case WATCH_ERR_SYNTAX: return "syntax";
    case WATCH_ERR_NOT_OBJECT: return "not an object";
    case WATCH_ERR_BAD_EVENT: return "bad event";
    case WATCH_ERR_TRUNCATED: return "truncated";
    case WATCH_ERR_STOPPED: return "stopped";
    case WATCH_ERR_NOMEM: return "out of memory";
    default: return "unknown";
    }
}

watch_decoder_t *watch_decoder_new(size_t max_event_bytes, watch_event_fn fn, void *user)
{
    watch_decoder_t *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->max = max_event_bytes ? max_event_bytes : WATCH_DEFAULT_MAX;
    if (d->max > WATCH_HARD_MAX)
        d->max = WATCH_HARD_MAX;
    d->fn = fn;
    d->user = user;
    buf_init(&d->line, d->max);
    d->tok = json_tokener_new_ex(WATCH_JSON_DEPTH);
    if (!d->tok) {
        free(d);
        return NULL;
    }
    return d;
}

void watch_decoder_destroy(watch_decoder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    watch_decoder_t *d = *self_p;
    buf_free(&d->line);
    json_tokener_free(d->tok);
    free(d);
    *self_p = NULL;
}

/* Enter the failed state with a message; returns status. */
__attribute__((format(printf, 3, 4)))
static int fail(watch_decoder_t *d, int status, const char *fmt, ...)
{
    BUF_FORMAT_VA(d->err, sizeof(d->err), fmt);
    d->status = status;
    return status;
}

/* A short, printable quote of the start of a line for error messages. */
static void snippet(const char *s, size_t n, char *out, size_t outlen)
{
    size_t max = outlen > 4 ? outlen - 4 : 0;
    size_t i;
    for (i = 0; i < n && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c < 0x20 || c >= 0x7f || c == '"') ? '?' : (char)c;
    }
    if (i < n && outlen >= 4) {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = '\0';
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int parse_type(const char *s, watch_event_type_t *out)
{
    for (int t = WATCH_ADDED; t <= WATCH_ERROR; t++) {
        if (strcmp(s, type_names[t]) == 0) {
            *out = (watch_event_type_t)t;
            return 0;
        }
    }
    return -1;
}

/* Check the shape of a parsed line and hand the event to the callback. Takes obj. */
static int deliver(watch_decoder_t *d, json_object *obj)
{
    int rc = WATCH_OK;
    uint64_t idx = d->lines;
    if (!json_object_is_type(obj, json_type_object)) {
        rc = fail(d, WATCH_ERR_NOT_OBJECT, "watch event %llu: a JSON %s, not an object",
                  (unsigned long long)idx, json_type_to_name(json_object_get_type(obj)));
        goto out;
    }
    json_object *object = jsonx_get(obj, "object");
    json_object *meta = jsonx_get(object, "metadata");
    watch_event_t ev = {0};
    ev.object = object;
    ev.ns = jsonx_str(meta, "namespace");
    ev.name = jsonx_str(meta, "name");
    ev.resource_version = jsonx_str(meta, "resourceVersion");
    ev.index = idx;
    const char *type = jsonx_str(obj, "type");
    const char *key_ns = ev.ns ? ev.ns : "";
    const char *key_name = ev.name ? ev.name : "";
    const char *sep = ev.ns ? "/" : "";
    if (!type) {
        rc = fail(d, WATCH_ERR_BAD_EVENT, "watch event %llu (%s%s%s): missing \"type\"",
                  (unsigned long long)idx, key_ns, sep, key_name);
        goto out;
    }
    if (parse_type(type, &ev.type)) {
        char quoted[40];
        snippet(type, strlen(type), quoted, sizeof(quoted));
        rc = fail(d, WATCH_ERR_BAD_EVENT, "watch event %llu (%s%s%s): unknown type \"%s\"",
                  (unsigned long long)idx, key_ns, sep, key_name, quoted);
        goto out;
    }
    if (!json_object_is_type(object, json_type_object)) {
        rc = fail(d, WATCH_ERR_BAD_EVENT, "watch event %llu: %s without an \"object\"",
                  (unsigned long long)idx, type);
        goto out;
    }
    ev.type_name = type_names[ev.type];
    if (ev.type == WATCH_ERROR) {
        kube_error_from_status(object, 0, &d->server_error);
        d->has_server_error = 1;
        ev.error = &d->server_error;
    } else if (ev.resource_version && ev.resource_version[0]) {
        size_t n = strlen(ev.resource_version);
        if (n >= sizeof(d->last_rv)) {
            rc = fail(d, WATCH_ERR_BAD_EVENT,
                      "watch event %llu (%s%s%s): resourceVersion of %zu bytes",
                      (unsigned long long)idx, key_ns, sep, key_name, n);
            goto out;
        }
        memcpy(d->last_rv, ev.resource_version, n + 1);
    }
    d->events++;
    if (d->fn && d->fn(&ev, d->user) != 0)
        rc = fail(d, WATCH_ERR_STOPPED, "watch event %llu (%s %s%s%s): stopped by the handler",
                  (unsigned long long)idx, type, key_ns, sep, key_name);
out:
    json_object_put(obj);
    return rc;
}

/* Decode one complete line (without its '\n') with the one JSON parser (jsonx_parse_ex)
 * and the decoder's tokener. at_end: the stream ended here without a newline, so an
 * incomplete value means truncation. */
static int handle_line(watch_decoder_t *d, const char *s, size_t n, int at_end)
{
    d->lines++;
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    size_t start = 0;
    while (start < n && is_blank(s[start]))
        start++;
    if (start == n)
        return WATCH_OK; /* blank line: keepalive or framing, never an event */
    json_object *obj = NULL;
    size_t at = 0;
    char why[128], quote[64];
    jsonx_parse_t rc = jsonx_parse_ex(d->tok, s, n, WATCH_JSON_DEPTH, &obj, &at, why, sizeof(why));
    if (rc == JSONX_NO_MEMORY)
        return fail(d, WATCH_ERR_NOMEM, "watch event %llu: out of memory", (unsigned long long)d->lines);
    if (rc == JSONX_INCOMPLETE && at_end) {
        snippet(s + start, n - start, quote, sizeof(quote));
        return fail(d, WATCH_ERR_TRUNCATED, "watch event %llu: stream ended inside the event after %zu bytes: \"%s\"",
                    (unsigned long long)d->lines, n, quote);
    }
    if (rc == JSONX_TRAILING) {
        snippet(s + at, n - at, quote, sizeof(quote));
        return fail(d, WATCH_ERR_SYNTAX, "watch event %llu: unexpected data after the JSON value at byte %zu: \"%s\"",
                    (unsigned long long)d->lines, at, quote);
    }
    if (rc) {
        snippet(s + start, n - start, quote, sizeof(quote));
        return fail(d, WATCH_ERR_SYNTAX, "watch event %llu: not JSON (%s): \"%s\"", (unsigned long long)d->lines,
                    rc == JSONX_INCOMPLETE ? "incomplete value" : why, quote);
    }
    return deliver(d, obj);
}

/* Forget the gathered line, returning a large allocation to the system. */
static void drop_line(watch_decoder_t *d)
{
    if (d->line.alloc > WATCH_KEEP_ALLOC)
        buf_free(&d->line);
    else
        buf_reset(&d->line);
}

int watch_decoder_feed(watch_decoder_t *d, const char *chunk, size_t len)
{
    if (d->status)
        return d->status;
    const char *p = chunk;
    const char *end = chunk + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t seg = (size_t)((nl ? nl : end) - p);
        if (seg > d->max || d->line.len > d->max - seg) {
            drop_line(d);
            return fail(d, WATCH_ERR_TOO_LONG, "watch event %llu: line exceeds %zu bytes",
                        (unsigned long long)d->lines + 1, d->max);
        }
        if (!nl) {
            if (buf_append(&d->line, p, seg))
                return fail(d, WATCH_ERR_NOMEM, "watch event %llu: out of memory",
                            (unsigned long long)d->lines + 1);
            break;
        }
        int rc;
        if (d->line.len == 0) {
            rc = handle_line(d, p, seg, 0); /* whole line in this chunk: parse in place */
        } else {
            if (buf_append(&d->line, p, seg))
                return fail(d, WATCH_ERR_NOMEM, "watch event %llu: out of memory",
                            (unsigned long long)d->lines + 1);
            rc = handle_line(d, d->line.data, d->line.len, 0);
            drop_line(d);
        }
        if (rc)
            return rc;
        p = nl + 1;
    }
    return WATCH_OK;
}

int watch_decoder_finish(watch_decoder_t *d)
{
    if (d->status)
        return d->status;
    if (d->line.len == 0)
        return WATCH_OK;
    int rc = handle_line(d, d->line.data, d->line.len, 1);
    drop_line(d);
    return rc;
}

void watch_decoder_reset(watch_decoder_t *d)
{
    buf_free(&d->line);
    json_tokener_reset(d->tok);
    d->status = WATCH_OK;
    d->err[0] = '\0';
    d->has_server_error = 0;
    kube_error_clear(&d->server_error);
    d->lines = 0;
}

const char *watch_decoder_last_rv(const watch_decoder_t *d)
{
    return d->last_rv;
}

int watch_decoder_set_last_rv(watch_decoder_t *d, const char *rv)
{
    if (!rv)
        return -1;
    size_t n = strlen(rv);
    if (n >= sizeof(d->last_rv))
        return -1;
    memcpy(d->last_rv, rv, n + 1);
    return 0;
}

int watch_decoder_status(const watch_decoder_t *d)
{
    return d->status;
}

const char *watch_decoder_error(const watch_decoder_t *d)
{
    return d->err;
}

const kube_error_t *watch_decoder_server_error(const watch_decoder_t *d)
{
    return d->has_server_error ? &d->server_error : NULL;
}

uint64_t watch_decoder_events(const watch_decoder_t *d)
{
    return d->events;
}
