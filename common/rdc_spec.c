/* rdc_spec: the rules and defaults of a RedisCluster. See rdc_spec.h for the contract. */
#include "rdc_spec.h"

#include "jsonx.h"
#include "redisconf.h"

#include <arpa/inet.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VALUE_SHOWN 64 /* bytes of a user's value quoted in a message */
#define STR_(x) #x
#define STR(x) STR_(x) /* a number's define as a string literal */
#define TEXT_CAP 1024  /* one error's text never grows past this */
/* A knob is kept only when its own rules passed: count the problems before and after. */
#define PROBLEMS(e) ((e)->n + (e)->dropped)

/* ---- Field errors ------------------------------------------------------------------ */

typedef struct {
    rdc_field_error_type_t type;
    char *field;
    char *text;
} field_error_t;

struct rdc_field_errors {
    field_error_t items[RDC_FIELD_ERRORS_MAX];
    size_t n;
    size_t dropped;
    int oom;
};

rdc_field_errors_t *rdc_field_errors_new(void)
{
    return calloc(1, sizeof(rdc_field_errors_t));
}

void rdc_field_errors_destroy(rdc_field_errors_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    rdc_field_errors_t *e = *self_p;
    for (size_t i = 0; i < e->n; i++) {
        free(e->items[i].field);
        free(e->items[i].text);
    }
    free(e);
    *self_p = NULL;
}

size_t rdc_field_errors_count(const rdc_field_errors_t *e)
{
    return e->n;
}

size_t rdc_field_errors_dropped(const rdc_field_errors_t *e)
{
    return e->dropped;
}

int rdc_field_errors_oom(const rdc_field_errors_t *e)
{
    return e->oom;
}

rdc_field_error_type_t rdc_field_error_type(const rdc_field_errors_t *e, size_t i)
{
    return i < e->n ? e->items[i].type : RDC_FIELD_INVALID;
}

const char *rdc_field_error_field(const rdc_field_errors_t *e, size_t i)
{
    return i < e->n ? e->items[i].field : NULL;
}

const char *rdc_field_error_text(const rdc_field_errors_t *e, size_t i)
{
    return i < e->n ? e->items[i].text : NULL;
}

int rdc_field_errors_all_forbidden(const rdc_field_errors_t *e)
{
    if (e->n == 0)
        return 0;
    for (size_t i = 0; i < e->n; i++)
        if (e->items[i].type != RDC_FIELD_FORBIDDEN)
            return 0;
    return 1;
}

/* Room kept at the end of a list for ", and <N> more]" (N at most 20 digits). */
#define LIST_END_ROOM 40

int rdc_field_errors_format(const rdc_field_errors_t *e, buf_t *out)
{
    if (e->n == 1 && !e->dropped && !buf_puts(out, e->items[0].text))
        return 0;
    /* A text that would leave no room for the end of the list is said in the count. */
    size_t cap = out->cap ? out->cap : BUF_DEFAULT_CAP, kept = 0;
    int rc = buf_puts(out, "[");
    for (size_t i = 0; i < e->n && !rc; i++) {
        if (out->len + 2 + strlen(e->items[i].text) + LIST_END_ROOM > cap)
            break;
        rc = buf_printf(out, "%s%s", kept ? ", " : "", e->items[i].text);
        kept += !rc;
    }
    size_t more = e->n - kept + e->dropped;
    if (!rc && more)
        rc = buf_printf(out, "%sand %zu more", kept ? ", " : "", more);
    return rc ? rc : buf_puts(out, "]");
}

/* Append the n bytes at s quoted as Go's %q would show them, cut to max bytes at a UTF-8
 * character boundary, so that no value can break the message's shape. */
static void put_quoted(buf_t *b, const char *s, size_t n, size_t max)
{
    int cut = 0;
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
        cut = 1;
    }
    buf_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            buf_printf(b, "\\x%02x", c);
        else
            buf_append(b, &s[i], 1);
    }
    buf_puts(b, cut ? "...\"" : "\"");
}

void rdc_spec_put_quoted(buf_t *b, const char *s, size_t max)
{
    put_quoted(b, s, strlen(s), max);
}

/* Append a JSON value as a message shows it: strings quoted, anything else as JSON text
 * (cut to VALUE_SHOWN bytes). */
static void put_value(buf_t *b, const json_object *v)
{
    if (!v) {
        buf_puts(b, "null");
        return;
    }
    if (json_object_is_type(v, json_type_string)) {
        put_quoted(b, json_object_get_string((json_object *)v),
                   (size_t)json_object_get_string_len(v), VALUE_SHOWN);
        return;
    }
    const char *t =
        json_object_to_json_string_ext((json_object *)v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t n = strlen(t);
    if (n > VALUE_SHOWN) {
        buf_append(b, t, VALUE_SHOWN);
        buf_puts(b, "...");
    } else {
        buf_append(b, t, n);
    }
}

/* Record one error; detail is printf-style (NULL for none). value is shown for INVALID
 * and UNSUPPORTED. */
static void field_error(rdc_field_errors_t *e, rdc_field_error_type_t type, const char *field,
                        const json_object *value, const char *detail, ...)
    __attribute__((format(printf, 5, 6)));
static void field_error(rdc_field_errors_t *e, rdc_field_error_type_t type, const char *field,
                        const json_object *value, const char *detail, ...)
{
    if (e->n == RDC_FIELD_ERRORS_MAX) {
        e->dropped++;
        return;
    }
    static const char *const labels[] = {"Required value", "Invalid value", "Unsupported value",
                                         "Forbidden"};
    buf_t t;
    buf_init(&t, TEXT_CAP);
    buf_printf(&t, "%s: %s", field, labels[type]);
    if (type == RDC_FIELD_INVALID || type == RDC_FIELD_UNSUPPORTED) {
        buf_puts(&t, ": ");
        put_value(&t, value);
    }
    if (detail) {
        buf_puts(&t, ": ");
        va_list ap;
        va_start(ap, detail);
        buf_vprintf(&t, detail, ap);
        va_end(ap);
    }
    char *text = buf_detach(&t);
    char *f = strdup(field);
    if (!text || !f) {
        free(text);
        free(f);
        e->oom = 1;
        return;
    }
    field_error_t *item = &e->items[e->n++];
    item->type = type;
    item->field = f;
    item->text = text;
}

/* ---- Reading untrusted JSON --------------------------------------------------------- */

/* An optional string field: JSONX_OK with a non-empty *out, JSONX_ABSENT for absent, null or "",
 * JSONX_BAD (recorded in e when e is not NULL) for anything else. */
static jsonx_field_t optional_string(rdc_field_errors_t *e, const json_object *o, const char *key,
                                const char *field, const char **out)
{
    jsonx_field_t r = jsonx_string(o, key, out);
    if (r == JSONX_BAD && e)
        field_error(e, RDC_FIELD_INVALID, field, jsonx_get(o, key), "must be a string without NUL bytes");
    else if (r == JSONX_OK && !**out)
        r = JSONX_ABSENT;
    return r;
}

/* An optional object field: the object, or NULL (a wrong type is recorded in e). */
static const json_object *optional_object(rdc_field_errors_t *e, const json_object *o,
                                          const char *key, const char *field)
{
    const json_object *v = jsonx_get(o, key);
    if (v && !json_object_is_type(v, json_type_object)) {
        if (e)
            field_error(e, RDC_FIELD_INVALID, field, v, "must be an object");
        return NULL;
    }
    return v;
}

/* An optional string field that must pass ok: the string when it does; NULL when it is
 * absent, or does not (recorded, Invalid with detail). */
static const char *checked_string(rdc_field_errors_t *e, const json_object *o, const char *key, const char *field,
                                  int (*ok)(const char *), const char *detail)
{
    const char *s = NULL;
    if (optional_string(e, o, key, field, &s) != JSONX_OK)
        return NULL;
    if (ok(s))
        return s;
    field_error(e, RDC_FIELD_INVALID, field, jsonx_get(o, key), "%s", detail);
    return NULL;
}

/* Set *dst to v when v is not NULL. */
static void set_if(const char **dst, const char *v)
{
    if (v)
        *dst = v;
}

/* ---- Predicates ------------------------------------------------------------------------ */

static int is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int rdc_spec_is_dns1035_label(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || !(s[0] >= 'a' && s[0] <= 'z') || !is_lower_alnum(s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return 0;
    return 1;
}

int rdc_spec_is_dns1123_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RDC_SPEC_STORAGE_CLASS_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int edge = (i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.');
        if (c == '.' ? (i == 0 || s[i - 1] == '.') : !(is_lower_alnum(c) || (c == '-' && !edge)))
            return 0;
    }
    return s[n - 1] != '.';
}

int rdc_spec_is_image_tag(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RDC_SPEC_VERSION_MAX || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(is_lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

int rdc_spec_is_image_ref(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] <= ' ' || (unsigned char)s[n] >= 0x7f)
            return 0;
    return n > 0 && n <= RDC_SPEC_IMAGE_MAX;
}

int rdc_spec_image_has_tag_or_digest(const char *image)
{
    if (strchr(image, '@'))
        return 1;
    const char *last = strrchr(image, '/');
    return strchr(last ? last + 1 : image, ':') != NULL;
}

int rdc_spec_is_redis_memory(const char *s)
{
    size_t d = 0;
    while (s[d] >= '0' && s[d] <= '9')
        d++;
    /* 19 digits and a unit of at most 2 letters: RDC_SPEC_MAXMEMORY_MAX bytes at most. */
    if (d == 0 || d > 19 || strlen(s) > RDC_SPEC_MAXMEMORY_MAX)
        return 0;
    static const char *const units[] = {"", "b", "k", "kb", "m", "mb", "g", "gb"};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strcasecmp(s + d, units[i]))
            return 1;
    return 0;
}

rdc_storage_rc_t rdc_spec_storage_bytes(const char *s, uint64_t *bytes)
{
    const uint64_t limit = UINT64_C(1) << 62;
    size_t d = 0;
    uint64_t n = 0;
    int big = 0;
    for (; s[d] >= '0' && s[d] <= '9'; d++) {
        /* Past the limit the exact value no longer matters: it is too large. */
        if (!big && n > (limit - (uint64_t)(s[d] - '0')) / 10)
            big = 1;
        else if (!big)
            n = n * 10 + (uint64_t)(s[d] - '0');
    }
    int shift = !strcmp(s + d, "Mi") ? 20 : !strcmp(s + d, "Gi") ? 30 : !strcmp(s + d, "Ti") ? 40 : 0;
    if (d == 0 || shift == 0)
        return RDC_STORAGE_BAD_FORMAT;
    if (big || n > (limit >> shift))
        return RDC_STORAGE_TOO_LARGE;
    if (n == 0)
        return RDC_STORAGE_ZERO;
    *bytes = n << shift;
    return RDC_STORAGE_OK;
}

/* ---- Validation ---------------------------------------------------------------------- */

static void check_name(rdc_field_errors_t *e, const json_object *rc)
{
    const json_object *meta = jsonx_get(rc, "metadata");
    const json_object *v = jsonx_get(meta, "name");
    const char *name = NULL;
    if (meta && !json_object_is_type(meta, json_type_object))
        field_error(e, RDC_FIELD_INVALID, "metadata", meta, "must be an object");
    else if (!v)
        field_error(e, RDC_FIELD_REQUIRED, "metadata.name", NULL, NULL);
    else if (jsonx_string(meta, "name", &name) != JSONX_OK)
        field_error(e, RDC_FIELD_INVALID, "metadata.name", v, "must be a string without NUL bytes");
    else if (!rdc_spec_is_dns1035_label(name, RDC_SPEC_NAME_MAX))
        field_error(e, RDC_FIELD_INVALID, "metadata.name", v,
                    "must be a DNS-1035 label of at most %d characters ([a-z]([-a-z0-9]*[a-z0-9])?): "
                    "it names the Service and the StatefulSet's pods",
                    RDC_SPEC_NAME_MAX);
    else if (rdc_spec_cluster_layout(jsonx_get(rc, "spec"), NULL, NULL) && strlen(name) > RDC_SPEC_CLUSTER_NAME_MAX)
        field_error(e, RDC_FIELD_INVALID, "metadata.name", v,
                    "must be at most %d characters in Cluster mode (each shard is a StatefulSet <name>-shard<k>)",
                    RDC_SPEC_CLUSTER_NAME_MAX);
}

int rdc_spec_cluster_layout(const json_object *spec, int *shards, int *replicas)
{
    const char *mode = JSONX_STR_AT(spec, "mode");
    if (!mode || strcmp(mode, "Cluster"))
        return 0;
    const json_object *c = jsonx_get(spec, "cluster");
    const json_object *s = jsonx_get(c, "shards"), *r = jsonx_get(c, "replicasPerShard");
    if (shards)
        *shards = s && json_object_is_type(s, json_type_int) ? (int)json_object_get_int64(s) : RDC_SPEC_DEFAULT_SHARDS;
    if (replicas)
        *replicas = r && json_object_is_type(r, json_type_int) ? (int)json_object_get_int64(r)
                                                               : RDC_SPEC_DEFAULT_REPLICAS_PER_SHARD;
    return 1;
}

/* A part of the spec checked: each problem recorded in e, what passed set in out. */
typedef void spec_check_fn(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out);

static void check_size(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *v = jsonx_get(spec, "size");
    int shards = 0, replicas = 0;
    if (!v)
        field_error(e, RDC_FIELD_REQUIRED, "spec.size", NULL, NULL);
    else if (!json_object_is_type(v, json_type_int))
        field_error(e, RDC_FIELD_INVALID, "spec.size", v, "must be an integer");
    else if (rdc_spec_cluster_layout(spec, &shards, &replicas)) {
        if (json_object_get_int64(v) != (int64_t)shards * (1 + replicas))
            field_error(e, RDC_FIELD_INVALID, "spec.size", v,
                        "in Cluster mode spec.size is the number of pods, spec.cluster.shards x (1 + "
                        "spec.cluster.replicasPerShard) = %d, which the defaulting webhook sets; to add capacity "
                        "change spec.cluster.shards, not kubectl scale",
                        shards * (1 + replicas));
        else
            out->size = (int)json_object_get_int64(v);
    } else if (json_object_get_int64(v) < RDC_SPEC_SIZE_MIN || json_object_get_int64(v) > RDC_SPEC_SIZE_MAX)
        field_error(e, RDC_FIELD_INVALID, "spec.size", v, "must be between %d and %d", RDC_SPEC_SIZE_MIN,
                    RDC_SPEC_SIZE_MAX);
    else
        out->size = (int)json_object_get_int64(v);
}

static void check_image(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *v = jsonx_get(spec, "image");
    const char *img = NULL;
    jsonx_field_t r = jsonx_string(spec, "image", &img);
    if (r == JSONX_ABSENT)
        field_error(e, RDC_FIELD_REQUIRED, "spec.image", NULL, NULL);
    else if (r == JSONX_BAD)
        field_error(e, RDC_FIELD_INVALID, "spec.image", v, "must be a string without NUL bytes");
    else if (!*img)
        field_error(e, RDC_FIELD_REQUIRED, "spec.image", NULL, "must not be empty");
    else if (!rdc_spec_is_image_ref(img))
        field_error(e, RDC_FIELD_INVALID, "spec.image", v,
                    "must be an image reference: printable ASCII without blanks, at most %d bytes",
                    RDC_SPEC_IMAGE_MAX);
    else
        out->image = img;
    out->version = checked_string(e, spec, "version", "spec.version", rdc_spec_is_image_tag,
                                  "must be an image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})");
}

static void check_config(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *config = optional_object(e, spec, "config", "spec.config");
    const char *s = NULL;
    out->config.maxmemory =
        checked_string(e, config, "maxmemory", "spec.config.maxmemory", rdc_spec_is_redis_memory,
                       "must be a memory size: digits with an optional unit b, k, kb, m, mb, g or gb, e.g. 256mb");
    if (optional_string(e, config, "maxmemoryPolicy", "spec.config.maxmemoryPolicy", &s) == JSONX_OK) {
        if (strcmp(s, "allkeys-lru") && strcmp(s, "volatile-lru") && strcmp(s, "noeviction"))
            field_error(e, RDC_FIELD_UNSUPPORTED, "spec.config.maxmemoryPolicy", jsonx_get(config, "maxmemoryPolicy"),
                        "supported values: \"allkeys-lru\", \"noeviction\", \"volatile-lru\"");
        else
            out->config.maxmemory_policy = s;
    }
}

static void check_storage(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *storage = optional_object(e, spec, "storage", "spec.storage");
    const char *s = NULL;
    uint64_t bytes = 0;
    if (optional_string(e, storage, "size", "spec.storage.size", &s) == JSONX_OK) {
        const json_object *v = jsonx_get(storage, "size");
        if (strlen(s) > RDC_SPEC_STORAGE_SIZE_MAX)
            field_error(e, RDC_FIELD_INVALID, "spec.storage.size", v, "must be at most %d characters",
                        RDC_SPEC_STORAGE_SIZE_MAX);
        else switch (rdc_spec_storage_bytes(s, &bytes)) {
        case RDC_STORAGE_OK:
            out->storage.size = s;
            break;
        case RDC_STORAGE_BAD_FORMAT:
            field_error(e, RDC_FIELD_INVALID, "spec.storage.size", v, "must match ^[0-9]+(Gi|Mi|Ti)$, e.g. 10Gi");
            break;
        case RDC_STORAGE_TOO_LARGE:
            field_error(e, RDC_FIELD_INVALID, "spec.storage.size", v, "must be at most 2^62 bytes");
            break;
        case RDC_STORAGE_ZERO:
            field_error(e, RDC_FIELD_INVALID, "spec.storage.size", v, "must be greater than zero");
            break;
        }
    }
    out->storage.storage_class =
        checked_string(e, storage, "storageClass", "spec.storage.storageClass", rdc_spec_is_dns1123_subdomain,
                       "must be the name of a StorageClass: a DNS subdomain of lower case alphanumerics, "
                       "'-' and '.', at most 253 characters");
}

/* ---- The fields only v1 has (docs/api-versions.md; the CRD's v1 schema) ------------- */

int rdc_spec_duration_ns(const char *s, int64_t *ns)
{
    /* Go's time.ParseDuration restricted to the CRD's pattern ^([0-9]+([.][0-9]+)?(ms|s|m|h))+$ */
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
    if (!s || !*s)
        return -1;
    double total = 0;
    const char *p = s;
    while (*p) {
        const char *start = p;
        double whole = 0, frac = 0, scale = 1;
        while (*p >= '0' && *p <= '9' && p - start < 24)
            whole = whole * 10 + (*p++ - '0');
        if (p == start || (*p >= '0' && *p <= '9'))
            return -1;
        if (*p == '.') {
            const char *f = ++p;
            while (*p >= '0' && *p <= '9' && p - f < 24) {
                scale /= 10;
                frac += (*p++ - '0') * scale;
            }
            if (p == f || (*p >= '0' && *p <= '9'))
                return -1;
        }
        size_t u = 0, n = sizeof(units) / sizeof(units[0]);
        while (u < n && strncmp(p, units[u].unit, strlen(units[u].unit)))
            u++;
        if (u == n)
            return -1;
        p += strlen(units[u].unit);
        total += (whole + frac) * units[u].ns;
        if (total > 9.2e18)
            return -1;
    }
    *ns = (int64_t)total;
    return 0;
}

/* A Secret data key: [-._a-zA-Z0-9]+ of at most 253 characters. */
static int is_secret_key(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RDC_SPEC_SECRET_KEY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') && !(s[i] >= '0' && s[i] <= '9') &&
            s[i] != '-' && s[i] != '.' && s[i] != '_')
            return 0;
    return 1;
}

/* An optional string field of the values (NULL-terminated): the index of its value, or -1
 * when it is absent or not one of them (recorded). */
static int check_enum(rdc_field_errors_t *e, const json_object *o, const char *key, const char *field,
                      const char *const *values, const char *supported)
{
    const char *s = NULL;
    if (optional_string(e, o, key, field, &s) != JSONX_OK)
        return -1;
    for (int i = 0; values[i]; i++)
        if (!strcmp(s, values[i]))
            return i;
    field_error(e, RDC_FIELD_UNSUPPORTED, field, jsonx_get(o, key), "supported values: %s", supported);
    return -1;
}

/* An optional field of type t: o[key], or NULL when it is absent, null, or of another
 * type (recorded: field "must be" what). */
static const json_object *optional_of_type(rdc_field_errors_t *e, const json_object *o, const char *key,
                                           const char *field, json_type t, const char *what)
{
    const json_object *v = jsonx_get(o, key);
    if (!v || json_object_is_type(v, json_type_null))
        return NULL;
    if (!json_object_is_type(v, t)) {
        field_error(e, RDC_FIELD_INVALID, field, v, "must be %s", what);
        return NULL;
    }
    return v;
}

/* An optional integer field from lo to hi: 1 with *out its value, or 0 when it is absent
 * or not one (recorded). */
static int check_int_range(rdc_field_errors_t *e, const json_object *o, const char *key, const char *field,
                           int64_t lo, int64_t hi, int64_t *out)
{
    const json_object *v = optional_of_type(e, o, key, field, json_type_int, "an integer");
    if (!v)
        return 0;
    if (json_object_get_int64(v) < lo || json_object_get_int64(v) > hi) {
        field_error(e, RDC_FIELD_INVALID, field, v, "must be between %lld and %lld", (long long)lo, (long long)hi);
        return 0;
    }
    *out = json_object_get_int64(v);
    return 1;
}

/* parent.<refkey> {name[, key]} at field pfield (".secretRef"): *name when it is a valid
 * Secret name (else untouched), *key when with_key and a valid data key is given (else
 * untouched). Problems recorded, the reference required. */
static void check_secret_ref(rdc_field_errors_t *e, const json_object *parent, const char *pfield, const char *refkey,
                             int with_key, const char **name, const char **key)
{
    char f[200], fn[220], fk[220];
    snprintf(f, sizeof(f), "%s.%s", pfield, refkey);
    snprintf(fn, sizeof(fn), "%s.name", f);
    snprintf(fk, sizeof(fk), "%s.key", f);
    const json_object *ref = optional_object(e, parent, refkey, f);
    const char *s = NULL;
    if (!jsonx_get(parent, refkey)) {
        field_error(e, RDC_FIELD_REQUIRED, f, NULL, NULL);
        return;
    }
    if (!ref)
        return;
    jsonx_field_t r = optional_string(e, ref, "name", fn, &s);
    if (r == JSONX_ABSENT)
        field_error(e, RDC_FIELD_REQUIRED, fn, NULL, NULL);
    else if (r == JSONX_OK && !rdc_spec_is_dns1123_subdomain(s))
        field_error(e, RDC_FIELD_INVALID, fn, jsonx_get(ref, "name"),
                    "must be the name of a Secret: a DNS subdomain of lower case alphanumerics, "
                    "'-' and '.', at most 253 characters");
    else if (r == JSONX_OK)
        *name = s;
    static const char key_rule[] =
        "must be a Secret data key ([-._a-zA-Z0-9]+, at most " STR(RDC_SPEC_SECRET_KEY_MAX) " characters)";
    if (with_key)
        set_if(key, checked_string(e, ref, "key", fk, is_secret_key, key_rule));
}

static void check_auth(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *auth = optional_object(e, spec, "auth", "spec.auth");
    if (auth)
        check_secret_ref(e, auth, "spec.auth", "secretRef", 1, &out->auth.secret, &out->auth.key);
}

/* An optional boolean field: its value, or dflt when absent (a wrong type recorded). */
static int optional_bool(rdc_field_errors_t *e, const json_object *o, const char *key, const char *field, int dflt)
{
    const json_object *v = optional_of_type(e, o, key, field, json_type_boolean, "a boolean");
    return v ? json_object_get_boolean(v) : dflt;
}

/* spec.tls (docs/tls-and-acl.md). */
static void check_tls(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *tls = optional_object(e, spec, "tls", "spec.tls");
    if (!tls)
        return;
    const char *name = NULL;
    check_secret_ref(e, tls, "spec.tls", "secretRef", 0, &name, NULL);
    out->tls.client_auth = optional_bool(e, tls, "clientAuth", "spec.tls.clientAuth", 0);
    out->tls.allow_plaintext = optional_bool(e, tls, "allowPlaintext", "spec.tls.allowPlaintext", 0);
    out->tls.secret = name;
}

/* ---- spec.restore (docs/backup.md "Restore at creation") ------------------------------ */

/* An S3 endpoint: http:// or https://, then a host (and port) of [-.:[]A-Za-z0-9] only, an
 * optional final '/': a scheme and host, no path, query or user. */
static int is_s3_endpoint(const char *s)
{
    size_t n = strlen(s), i;
    if (n > RDC_SPEC_RESTORE_ENDPOINT_MAX)
        return 0;
    if (!strncmp(s, "https://", 8))
        i = 8;
    else if (!strncmp(s, "http://", 7))
        i = 7;
    else
        return 0;
    size_t host = i;
    for (; i < n; i++)
        if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') && !(s[i] >= '0' && s[i] <= '9') &&
            !strchr("-.:[]", s[i]) && !(s[i] == '/' && i == n - 1))
            return 0;
    return n > host && s[host] != '/';
}

/* Every byte of s a lower-case letter, a digit or one of extra. */
static int lower_alnum_or(const char *s, const char *extra)
{
    for (; *s; s++)
        if (!is_lower_alnum(*s) && !strchr(extra, *s))
            return 0;
    return 1;
}

/* An S3 bucket name: 3..63 of [a-z0-9.-], a letter or digit at both ends. */
static int is_s3_bucket(const char *s)
{
    size_t n = strlen(s);
    return n >= 3 && n <= 63 && is_lower_alnum(s[0]) && is_lower_alnum(s[n - 1]) && lower_alnum_or(s, "-.");
}

/* An object key: 1..1024 bytes, no control byte. */
static int is_s3_key(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RDC_SPEC_RESTORE_KEY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

/* A region: 1..64 of [a-z0-9-]. */
static int is_s3_region(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= RDC_SPEC_RESTORE_REGION_MAX && lower_alnum_or(s, "-");
}

/* 64 lower-case hex digits. */
static int is_sha256_hex(const char *s)
{
    size_t n = strlen(s);
    if (n != 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] >= '0' && s[i] <= '9') && !(s[i] >= 'a' && s[i] <= 'f'))
            return 0;
    return 1;
}

/* The fields of spec.restore.from: key, whether required, rule, its detail, where it goes. */
typedef struct {
    const char *key;
    int required;
    int (*ok)(const char *);
    const char *detail;
    size_t offset; /* of the const char * in rdc_spec_t */
} restore_field_t;

#define S3_ENDPOINT_RULE "must be http:// or https:// and a host[:port], nothing after it"
#define S3_BUCKET_RULE "must be an S3 bucket name: 3 to 63 of a-z, 0-9, '.' and '-', a letter or digit at both ends"
#define S3_REGION_RULE "must be 1 to " STR(RDC_SPEC_RESTORE_REGION_MAX) " of a-z, 0-9 and '-'"
#define SECRET_NAME_RULE "must be the name of a Secret: a DNS subdomain"
#define S3_KEY_RULE "must be an object key of 1 to " STR(RDC_SPEC_RESTORE_KEY_MAX) " bytes without control characters"
#define SHA256_RULE "must be 64 lower-case hex digits"
#define RESTORE_BACKUP_RULE                                                                                        \
    "must be the name of a RedisBackup in this namespace: a DNS subdomain of lower case alphanumerics, '-' and "   \
    "'.', at most 253 characters"
/* The rows of an S3 place, spec.restore.from's and spec.backup.destination's (AT(m): the
 * offset of its member m in rdc_spec_t): endpoint and bucket, the rows that follow (the
 * object's key or prefix), region; and the Secrets it is read with. */
#define S3_PLACE_ROWS(AT, ...)                                                                                     \
    {"endpoint", 1, is_s3_endpoint, S3_ENDPOINT_RULE, AT(endpoint)},                                               \
        {"bucket", 1, is_s3_bucket, S3_BUCKET_RULE, AT(bucket)}, __VA_ARGS__,                                      \
        {"region", 0, is_s3_region, S3_REGION_RULE, AT(region)}
#define S3_SECRET_ROWS(AT)                                                                                         \
    {"credentialsSecret", 1, rdc_spec_is_dns1123_subdomain, SECRET_NAME_RULE, AT(credentials_secret)},             \
        {"caSecret", 0, rdc_spec_is_dns1123_subdomain, SECRET_NAME_RULE, AT(ca_secret)}
#define RESTORE_AT(m) offsetof(rdc_spec_t, restore.m)
static const restore_field_t restore_fields[] = {
    S3_PLACE_ROWS(RESTORE_AT, {"key", 1, is_s3_key, S3_KEY_RULE, RESTORE_AT(key)}),
    S3_SECRET_ROWS(RESTORE_AT),
    {"sha256", 0, is_sha256_hex, SHA256_RULE, RESTORE_AT(sha256)},
};

/* Each field of a table under obj (at field path "<path>.<key>") into got: problems
 * recorded, the required ones Required when absent. */
static void check_fields(rdc_field_errors_t *e, const json_object *obj, const char *path, const restore_field_t *fields,
                         size_t n, rdc_spec_t *got)
{
    for (size_t i = 0; i < n; i++) {
        const restore_field_t *f = &fields[i];
        char field[160];
        snprintf(field, sizeof(field), "%s.%s", path, f->key);
        size_t had = PROBLEMS(e);
        const char *v = checked_string(e, obj, f->key, field, f->ok, f->detail);
        if (!v && f->required && PROBLEMS(e) == had) /* absent, null or "" */
            field_error(e, RDC_FIELD_REQUIRED, field, NULL, NULL);
        if (v)
            *(const char **)((char *)got + f->offset) = v;
    }
}

#define N_RESTORE_FIELDS (sizeof(restore_fields) / sizeof(restore_fields[0]))

/* 1 when from (spec.restore.from) sets any field of the bucket/key form. */
static int names_an_object(const json_object *from)
{
    for (size_t i = 0; i < N_RESTORE_FIELDS; i++)
        if (jsonx_get(from, restore_fields[i].key))
            return 1;
    return 0;
}

/* A restore source's shards (rdc_spec.h): each shard's key and sha256 into got. */
static void restore_shards(rdc_field_errors_t *e, const json_object *shards, const char *path, rdc_spec_t *got)
{
    char field[160];
    snprintf(field, sizeof(field), "%s.shards", path);
    if (!shards)
        return;
    size_t n = jsonx_len(shards);
    if (!jsonx_typed(shards, json_type_array) || n < 1 || n > RDC_SPEC_CLUSTER_SHARDS_MAX) {
        field_error(e, RDC_FIELD_INVALID, field, shards,
                    "must be an array of 1 to " STR(RDC_SPEC_CLUSTER_SHARDS_MAX) " objects, one per shard");
        return;
    }
    for (size_t k = 0; k < n; k++) {
        const json_object *o = json_object_array_get_idx(shards, k);
        char f[200];
        snprintf(f, sizeof(f), "%s[%zu].key", field, k);
        size_t had = PROBLEMS(e);
        got->restore.shard[k].key = checked_string(e, o, "key", f, is_s3_key, S3_KEY_RULE);
        if (!got->restore.shard[k].key && PROBLEMS(e) == had)
            field_error(e, RDC_FIELD_REQUIRED, f, NULL, NULL);
        snprintf(f, sizeof(f), "%s[%zu].sha256", field, k);
        got->restore.shard[k].sha256 = checked_string(e, o, "sha256", f, is_sha256_hex, SHA256_RULE);
    }
    got->restore.nshards = (int)n;
}

size_t rdc_spec_parse_restore_source(const json_object *src, const char *path, rdc_spec_t *out,
                                     rdc_field_errors_t *errs)
{
    size_t before = PROBLEMS(errs);
    if (!jsonx_typed(src, json_type_object)) {
        field_error(errs, src ? RDC_FIELD_INVALID : RDC_FIELD_REQUIRED, path, src, src ? "must be an object" : NULL);
        return PROBLEMS(errs) - before;
    }
    rdc_spec_t got = *out;
    got.restore.endpoint = got.restore.bucket = got.restore.key = NULL;
    got.restore.credentials_secret = got.restore.ca_secret = got.restore.sha256 = NULL;
    got.restore.region = RDC_SPEC_DEFAULT_RESTORE_REGION;
    got.restore.nshards = 0;
    check_fields(errs, src, path, restore_fields, N_RESTORE_FIELDS, &got);
    restore_shards(errs, jsonx_get(src, "shards"), path, &got);
    if (PROBLEMS(errs) == before)
        out->restore = got.restore;
    return PROBLEMS(errs) - before;
}

/* spec.restore.from.backup: the RedisBackup's name, a DNS subdomain (Required when ""). */
static void check_restore_backup(rdc_field_errors_t *e, const json_object *from, rdc_spec_t *out)
{
    size_t had = PROBLEMS(e);
    const char *b = checked_string(e, from, "backup", "spec.restore.from.backup", rdc_spec_is_dns1123_subdomain,
                                   RESTORE_BACKUP_RULE);
    if (!b && PROBLEMS(e) == had)
        field_error(e, RDC_FIELD_REQUIRED, "spec.restore.from.backup", NULL, NULL);
    if (b)
        out->restore.backup = b;
}

/* As optional_object, and Required when absent. */
static const json_object *required_object(rdc_field_errors_t *e, const json_object *o, const char *key,
                                          const char *field)
{
    const json_object *v = optional_object(e, o, key, field);
    if (!jsonx_get(o, key))
        field_error(e, RDC_FIELD_REQUIRED, field, NULL, NULL);
    return v;
}

/* spec.restore (after spec.mode): from names a RedisBackup (backup) or an object (the
 * bucket/key form), exactly one of the two (RDC_SPEC_RESTORE_BOTH, RDC_SPEC_RESTORE_NEITHER:
 * the CRD's CEL rules say the same words); in Cluster mode only a RedisBackup
 * (RDC_SPEC_RESTORE_CLUSTER_OBJECT: each shard restores its own object). out->restore.endpoint
 * and out->restore.backup stay NULL unless every field passed. */
static void check_restore(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *r = optional_object(e, spec, "restore", "spec.restore");
    if (!r)
        return;
    const json_object *from = required_object(e, r, "from", "spec.restore.from");
    if (!from)
        return;
    int backup = jsonx_get(from, "backup") != NULL, object = names_an_object(from);
    if (backup && object) {
        field_error(e, RDC_FIELD_FORBIDDEN, "spec.restore.from", NULL, "%s", RDC_SPEC_RESTORE_BOTH);
        return;
    }
    if (!backup && !object) {
        field_error(e, RDC_FIELD_REQUIRED, "spec.restore.from", NULL, "%s", RDC_SPEC_RESTORE_NEITHER);
        return;
    }
    if (backup) {
        check_restore_backup(e, from, out);
        return;
    }
    if (out->mode == RDC_MODE_CLUSTER) {
        field_error(e, RDC_FIELD_FORBIDDEN, "spec.restore.from", NULL, "%s", RDC_SPEC_RESTORE_CLUSTER_OBJECT);
        return;
    }
    size_t before = PROBLEMS(e);
    rdc_spec_t got = *out;
    check_fields(e, from, "spec.restore.from", restore_fields, N_RESTORE_FIELDS, &got);
    if (PROBLEMS(e) == before)
        out->restore = got.restore;
}

/* ---- spec.backup (docs/backup.md "What the operator does") ---------------------------- */

/* A key prefix for take --prefix: 1..900 bytes, no control byte, not beginning with '/'. */
static int is_s3_prefix(const char *s)
{
    return s[0] != '/' && strlen(s) <= RDC_SPEC_BACKUP_PREFIX_MAX && is_s3_key(s);
}

#define BACKUP_AT(m) offsetof(rdc_spec_t, backup.m)
static const restore_field_t backup_destination_fields[] = {
    S3_PLACE_ROWS(BACKUP_AT, {"prefix", 1, is_s3_prefix,
                              "must be 1 to " STR(RDC_SPEC_BACKUP_PREFIX_MAX) " bytes without control characters, "
                              "not beginning with '/'", BACKUP_AT(prefix)}),
};
static const restore_field_t backup_secret_fields[] = {S3_SECRET_ROWS(BACKUP_AT)};

/* spec.backup.schedule: required, bounded, and what cron_parse reads (its message). */
static void check_backup_schedule(rdc_field_errors_t *e, const json_object *b, rdc_spec_t *got)
{
    const char *s = NULL;
    char err[160];
    jsonx_field_t r = optional_string(e, b, "schedule", "spec.backup.schedule", &s);
    if (r == JSONX_ABSENT)
        field_error(e, RDC_FIELD_REQUIRED, "spec.backup.schedule", NULL, NULL);
    if (r != JSONX_OK)
        return;
    if (strlen(s) > RDC_SPEC_BACKUP_SCHEDULE_MAX)
        field_error(e, RDC_FIELD_INVALID, "spec.backup.schedule", jsonx_get(b, "schedule"),
                    "must be at most " STR(RDC_SPEC_BACKUP_SCHEDULE_MAX) " bytes");
    else if (cron_parse(s, &got->backup.cron, err, sizeof(err)))
        field_error(e, RDC_FIELD_INVALID, "spec.backup.schedule", jsonx_get(b, "schedule"),
                    "must be a cron schedule (minute hour day-of-month month day-of-week, UTC): %s", err);
    else
        got->backup.schedule = s;
}

/* spec.backup. out->backup.schedule stays NULL
 * unless every field passed. */
static void check_backup(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *b = optional_object(e, spec, "backup", "spec.backup");
    if (!b)
        return;
    size_t before = PROBLEMS(e);
    rdc_spec_t got = *out;
    int64_t keep;
    check_backup_schedule(e, b, &got);
    if (check_int_range(e, b, "keep", "spec.backup.keep", 1, RDC_SPEC_BACKUP_KEEP_MAX, &keep))
        got.backup.keep = (int)keep;
    const json_object *d = required_object(e, b, "destination", "spec.backup.destination");
    if (d)
        check_fields(e, d, "spec.backup.destination", backup_destination_fields,
                     sizeof(backup_destination_fields) / sizeof(backup_destination_fields[0]), &got);
    check_fields(e, b, "spec.backup", backup_secret_fields,
                 sizeof(backup_secret_fields) / sizeof(backup_secret_fields[0]), &got);
    if (PROBLEMS(e) == before)
        out->backup = got.backup;
}

/* ---- spec.acl (docs/tls-and-acl.md) ---------------------------------------------------- */

static const json_object *optional_object_array(rdc_field_errors_t *e, const json_object *o, const char *key,
                                                const char *field, size_t max);

int rdc_spec_acl_user_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RDC_SPEC_ACL_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

/* Why the operator owns token t (a password or the user's state), or NULL. */
static const char *acl_token_owned(const char *t, size_t n)
{
    static const char *const words[] = {"on", "off", "nopass", "resetpass", "reset"};
    if (*t == '>' || *t == '<' || *t == '#' || *t == '!')
        return "passwords come from passwordSecretRef";
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (n == strlen(words[i]) && !strncasecmp(t, words[i], n))
            return "the operator sets the user on, with its password, and from a reset";
    return NULL;
}

int rdc_spec_acl_rules_split(const char *rules, rdc_acl_token_t *tok, size_t max, const char **why)
{
    size_t n = 0;
    for (const char *p = rules; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        const char *start = p;
        if (*p == '(') { /* a selector: one token, blanks and all */
            while (*p && *p != ')')
                p++;
            if (!*p) {
                *why = "a selector \"(\" without its \")\"";
                return -1;
            }
            p++;
        } else {
            while (*p && *p != ' ')
                p++;
        }
        for (const char *q = start; q < p; q++)
            if (*q < ' ' || *q > '~') {
                *why = "only printable ASCII and blanks";
                return -1;
            }
        if ((*why = acl_token_owned(start, (size_t)(p - start))))
            return -1;
        if (n == max) {
            *why = "too many rules (at most " STR(RDC_SPEC_ACL_TOKENS_MAX) ")";
            return -1;
        }
        tok[n++] = (rdc_acl_token_t){start, (size_t)(p - start)};
    }
    return (int)n;
}

static int by_user_name(const void *a, const void *b)
{
    return strcmp(((const rdc_acl_user_t *)a)->name, ((const rdc_acl_user_t *)b)->name);
}

/* spec.acl.users[i] into *u; 0 when it passed its own rules. */
static int check_acl_user(rdc_field_errors_t *e, const json_object *it, size_t i, rdc_acl_user_t *u)
{
    char f[64], fn[80], fr[80];
    snprintf(f, sizeof(f), "spec.acl.users[%zu]", i);
    snprintf(fn, sizeof(fn), "%s.name", f);
    snprintf(fr, sizeof(fr), "%s.rules", f);
    size_t before = PROBLEMS(e);
    const char *name = NULL, *rules = NULL, *why = NULL;
    jsonx_field_t r = optional_string(e, it, "name", fn, &name);
    if (r == JSONX_ABSENT)
        field_error(e, RDC_FIELD_REQUIRED, fn, NULL, NULL);
    else if (r == JSONX_OK && !rdc_spec_acl_user_name_ok(name))
        field_error(e, RDC_FIELD_INVALID, fn, jsonx_get(it, "name"),
                    "must be 1 to " STR(RDC_SPEC_ACL_NAME_MAX) " characters of [A-Za-z0-9_.-]");
    else if (r == JSONX_OK && !strcmp(name, "default"))
        field_error(e, RDC_FIELD_FORBIDDEN, fn, NULL, "the default user is spec.auth's");
    r = optional_string(e, it, "rules", fr, &rules);
    rdc_acl_token_t tok[RDC_SPEC_ACL_TOKENS_MAX];
    if (r == JSONX_ABSENT)
        field_error(e, RDC_FIELD_REQUIRED, fr, NULL, NULL);
    else if (r == JSONX_OK && strlen(rules) > RDC_SPEC_ACL_RULES_MAX)
        field_error(e, RDC_FIELD_INVALID, fr, NULL, "must be at most " STR(RDC_SPEC_ACL_RULES_MAX) " bytes");
    else if (r == JSONX_OK && rdc_spec_acl_rules_split(rules, tok, RDC_SPEC_ACL_TOKENS_MAX, &why) < 0)
        field_error(e, RDC_FIELD_INVALID, fr, jsonx_get(it, "rules"), "ACL rules of Redis: %s", why);
    u->key = RDC_SPEC_DEFAULT_AUTH_KEY;
    check_secret_ref(e, it, f, "passwordSecretRef", 1, &u->secret, &u->key);
    u->name = name;
    u->rules = rules;
    return PROBLEMS(e) != before;
}

static void check_acl(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *acl = optional_object(e, spec, "acl", "spec.acl");
    const json_object *users =
        optional_object_array(e, acl, "users", "spec.acl.users", RDC_SPEC_ACL_USERS_MAX);
    if (!users || !json_object_array_length(users))
        return;
    if (!jsonx_typed(jsonx_get(spec, "auth"), json_type_object))
        field_error(e, RDC_FIELD_FORBIDDEN, "spec.acl", NULL,
                    "ACL users need spec.auth: it is the default user's password (an ACL file without one "
                    "would leave the default user open)");
    for (size_t i = 0; i < json_object_array_length(users); i++) {
        rdc_acl_user_t u = {0};
        if (check_acl_user(e, json_object_array_get_idx(users, i), i, &u))
            continue;
        int dup = 0;
        for (size_t k = 0; k < out->acl.n_users; k++)
            dup |= !strcmp(out->acl.users[k].name, u.name);
        char f[64];
        snprintf(f, sizeof(f), "spec.acl.users[%zu].name", i);
        if (dup)
            field_error(e, RDC_FIELD_INVALID, f, jsonx_get(json_object_array_get_idx(users, i), "name"),
                        "must be unique: another user has this name");
        else
            out->acl.users[out->acl.n_users++] = u;
    }
    qsort(out->acl.users, out->acl.n_users, sizeof(out->acl.users[0]), by_user_name);
}

static void check_down_after(rdc_field_errors_t *e, const json_object *fo, rdc_spec_t *out)
{
    const char *s = NULL;
    int64_t ns = 0;
    if (optional_string(e, fo, "downAfter", "spec.failover.downAfter", &s) != JSONX_OK)
        return;
    const json_object *v = jsonx_get(fo, "downAfter");
    if (strlen(s) > RDC_SPEC_DOWN_AFTER_MAX || rdc_spec_duration_ns(s, &ns))
        field_error(e, RDC_FIELD_INVALID, "spec.failover.downAfter", v,
                    "must be a duration such as 3s, 1m30s or 500ms (at most %d characters)", RDC_SPEC_DOWN_AFTER_MAX);
    else if (ns < RDC_SPEC_DOWN_AFTER_MIN_NS || ns > RDC_SPEC_DOWN_AFTER_MAX_NS)
        field_error(e, RDC_FIELD_INVALID, "spec.failover.downAfter", v, "must be between 1s and 5m");
    else
        out->failover.down_after_ns = ns;
}

static void check_failover(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *fo = optional_object(e, spec, "failover", "spec.failover");
    int64_t v = 0;
    if (!fo)
        return;
    check_down_after(e, fo, out);
    int write_ok = check_int_range(e, fo, "minReplicasToWrite", "spec.failover.minReplicasToWrite", 0,
                                   RDC_SPEC_SIZE_MAX - 1, &v);
    int64_t want = v;
    if (check_int_range(e, fo, "minReplicasMaxLag", "spec.failover.minReplicasMaxLag", 1, 3600, &v))
        out->failover.min_replicas_max_lag = (int)v;
    const json_object *w = jsonx_get(fo, "minReplicasToWrite"), *size = jsonx_get(spec, "size");
    if (write_ok && size && json_object_is_type(size, json_type_int) && want >= json_object_get_int64(size))
        field_error(e, RDC_FIELD_INVALID, "spec.failover.minReplicasToWrite", w,
                    "must be less than spec.size (the primary counts replicas besides itself)");
    else if (write_ok)
        out->failover.min_replicas_to_write = (int)want;
}

/* spec.scaleDownPolicy: 1 for Forbid, 0 for Allow or absent (a bad value recorded in e
 * when e is not NULL). */
static int scale_down_forbidden(rdc_field_errors_t *e, const json_object *spec)
{
    static const char *const policies[] = {"Allow", "Forbid", NULL};
    if (!e) {
        const char *s = NULL;
        return optional_string(NULL, spec, "scaleDownPolicy", NULL, &s) == JSONX_OK && !strcmp(s, "Forbid");
    }
    return check_enum(e, spec, "scaleDownPolicy", "spec.scaleDownPolicy", policies, "\"Allow\", \"Forbid\"") == 1;
}

static void check_v1_fields(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    static const char *const modes[] = {"Standalone", "Replication", "Cluster", NULL}; /* as rdc_mode_t */
    static const char *const persistence[] = {"aof", "rdb", "none", NULL};             /* as rdc_persistence_t */
    int mode = check_enum(e, spec, "mode", "spec.mode", modes, "\"Replication\", \"Standalone\", \"Cluster\"");
    const json_object *cluster = optional_object(e, spec, "cluster", "spec.cluster");
    int64_t v = 0;
    if (check_int_range(e, cluster, "shards", "spec.cluster.shards", RDC_SPEC_CLUSTER_SHARDS_MIN,
                        RDC_SPEC_CLUSTER_SHARDS_MAX, &v))
        out->cluster.shards = (int)v;
    if (check_int_range(e, cluster, "replicasPerShard", "spec.cluster.replicasPerShard", 0,
                        RDC_SPEC_CLUSTER_REPLICAS_MAX, &v))
        out->cluster.replicas_per_shard = (int)v;
    const json_object *mig = cluster ? optional_object(e, cluster, "migration", "spec.cluster.migration") : NULL;
    if (check_int_range(e, mig, "batchBytes", "spec.cluster.migration.batchBytes", RDC_SPEC_MIGRATION_BATCH_MIN,
                        RDC_SPEC_MIGRATION_BATCH_MAX, &v))
        out->cluster.migration_batch_bytes = v;
    if (check_int_range(e, mig, "bytesPerSecond", "spec.cluster.migration.bytesPerSecond", 0,
                        RDC_SPEC_MIGRATION_RATE_MAX, &v))
        out->cluster.migration_bytes_per_second = v;
    int p = check_enum(e, spec, "persistence", "spec.persistence", persistence, "\"aof\", \"none\", \"rdb\"");
    out->scale_down_forbidden = scale_down_forbidden(e, spec);
    if (mode >= 0)
        out->mode = (rdc_mode_t)mode;
    if (p >= 0) {
        out->persistence = (rdc_persistence_t)p;
        out->persistence_set = 1;
    }
    /* The fields that depend on spec.mode, in the order of their errors. */
    static spec_check_fn *const after_mode[] = {check_auth, check_failover, check_tls,
                                                check_acl,  check_restore,  check_backup};
    for (size_t i = 0; i < sizeof(after_mode) / sizeof(after_mode[0]); i++)
        after_mode[i](e, spec, out);
}

/* ---- v1 pod, PDB, storage and config knobs (issue 20) ---------------------------------- */

/* A Kubernetes quantity as the API parses one: [+-]digits[.digits] then a binary or
 * decimal suffix or an exponent ("500m", "1Gi", "0.5", "1e3"). */
static int is_quantity(const char *s)
{
    size_t i = (*s == '+' || *s == '-'), digits = 0;
    for (int dot = 0; (s[i] >= '0' && s[i] <= '9') || (s[i] == '.' && !dot); i++) {
        dot |= s[i] == '.';
        digits += s[i] != '.';
    }
    if (!digits || strlen(s) > 64)
        return 0;
    static const char *const suffixes[] = {"",  "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n",
                                           "u", "m",  "k",  "M",  "G",  "T",  "P",  "E"};
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++)
        if (!strcmp(s + i, suffixes[k]))
            return 1;
    if (s[i] != 'e' && s[i] != 'E')
        return 0;
    i += 1 + (s[i + 1] == '+' || s[i + 1] == '-');
    if (!s[i])
        return 0;
    for (; s[i]; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* A label value: at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends ("" too). */
static int is_label_value(const char *s)
{
    size_t n = strlen(s);
    if (n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && ((i == 0 || i == n - 1) || (c != '.' && c != '_' && c != '-')))
            return 0;
    }
    return 1;
}

/* A label or annotation key: [prefix/]name, prefix a DNS subdomain, name a label value of
 * 1..63 characters. */
static int is_qualified_name(const char *s)
{
    const char *slash = strchr(s, '/');
    if (slash) {
        char prefix[254];
        size_t n = (size_t)(slash - s);
        if (n == 0 || n >= sizeof(prefix))
            return 0;
        memcpy(prefix, s, n);
        prefix[n] = '\0';
        if (!rdc_spec_is_dns1123_subdomain(prefix))
            return 0;
        s = slash + 1;
    }
    return *s && is_label_value(s);
}

/* An optional array of at most max objects; returns it or NULL (problems recorded). */
static const json_object *optional_object_array(rdc_field_errors_t *e, const json_object *o, const char *key,
                                                const char *field, size_t max)
{
    const json_object *v = optional_of_type(e, o, key, field, json_type_array, "an array");
    if (!v)
        return NULL;
    if (json_object_array_length(v) > max) {
        field_error(e, RDC_FIELD_INVALID, field, NULL, "must have at most %zu items", max);
        return NULL;
    }
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        const json_object *it = json_object_array_get_idx(v, i);
        if (!it || !json_object_is_type(it, json_type_object)) {
            char f[128];
            snprintf(f, sizeof(f), "%s[%zu]", field, i);
            field_error(e, RDC_FIELD_INVALID, f, it, "must be an object");
            return NULL;
        }
    }
    return v;
}

/* A map of label keys to label values (values_label) or to any strings (annotations).
 * Keys starting with one of the reserved prefixes (NULL-terminated) are forbidden. */
static void check_string_map(rdc_field_errors_t *e, const json_object *o, const char *key, const char *field,
                             int values_label, const char *const *reserved)
{
    const json_object *m = optional_object(e, o, key, field);
    if (!m)
        return;
    if (json_object_object_length(m) > RDC_SPEC_MAP_MAX) {
        field_error(e, RDC_FIELD_INVALID, field, NULL, "must have at most %d entries", RDC_SPEC_MAP_MAX);
        return;
    }
    json_object_object_foreach((json_object *)m, k, v)
    {
        char f[384];
        snprintf(f, sizeof(f), "%s[%.300s]", field, k);
        const char *s = NULL;
        if (!is_qualified_name(k)) {
            field_error(e, RDC_FIELD_INVALID, f, NULL,
                        "must be a qualified name ([prefix/]name, name of [A-Za-z0-9._-] of at most 63 characters)");
            continue;
        }
        for (size_t i = 0; reserved && reserved[i]; i++)
            if (!strncmp(k, reserved[i], strlen(reserved[i]))) {
                field_error(e, RDC_FIELD_FORBIDDEN, f, NULL, "%s is set by the operator", k);
                break;
            }
        if (!v || !json_object_is_type(v, json_type_string) || jsonx_string(m, k, &s) != JSONX_OK)
            field_error(e, RDC_FIELD_INVALID, f, v, "must be a string");
        else if (values_label ? !is_label_value(s) : strlen(s) > RDC_SPEC_ANNOTATION_MAX)
            field_error(e, RDC_FIELD_INVALID, f, v,
                        values_label ? "must be a label value: at most 63 characters of [A-Za-z0-9._-], "
                                       "alphanumeric at both ends"
                                     : "must be at most 4096 bytes");
    }
}

/* {labels, annotations} for pods or Services. */
static const json_object *check_extra_metadata(rdc_field_errors_t *e, const json_object *spec, const char *key,
                                               const char *field)
{
    static const char *const labels[] = {"app.kubernetes.io/name", "app.kubernetes.io/instance",
                                         "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", NULL};
    static const char *const annotations[] = {"cache.example.com/", NULL};
    const json_object *m = optional_object(e, spec, key, field);
    char f[128];
    snprintf(f, sizeof(f), "%s.labels", field);
    check_string_map(e, m, "labels", f, 1, labels);
    snprintf(f, sizeof(f), "%s.annotations", field);
    check_string_map(e, m, "annotations", f, 0, annotations);
    return m;
}

static const json_object *check_resources(rdc_field_errors_t *e, const json_object *spec)
{
    const json_object *res = optional_object(e, spec, "resources", "spec.resources");
    if (!res)
        return NULL;
    json_object_object_foreach((json_object *)res, part, list)
    {
        char f[384];
        snprintf(f, sizeof(f), "spec.resources.%.64s", part);
        if (strcmp(part, "requests") && strcmp(part, "limits")) {
            field_error(e, RDC_FIELD_FORBIDDEN, f, NULL, "only requests and limits may be set");
            continue;
        }
        if (!list || json_object_is_type(list, json_type_null))
            continue;
        if (!json_object_is_type(list, json_type_object)) {
            field_error(e, RDC_FIELD_INVALID, f, list, "must be an object");
            continue;
        }
        json_object_object_foreach(list, name, q)
        {
            snprintf(f, sizeof(f), "spec.resources.%s[%.253s]", part, name);
            const char *s = NULL;
            if (q && json_object_is_type(q, json_type_int) && json_object_get_int64(q) >= 0)
                continue;
            if (!q || !json_object_is_type(q, json_type_string) || jsonx_string(list, name, &s) != JSONX_OK ||
                !is_quantity(s))
                field_error(e, RDC_FIELD_INVALID, f, q, "must be a quantity, e.g. 500m, 1Gi or 2");
        }
    }
    return res;
}

static void check_pdb(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *pdb = optional_object(e, spec, "podDisruptionBudget", "spec.podDisruptionBudget");
    const json_object *mu = jsonx_get(pdb, "maxUnavailable");
    if (!mu || json_object_is_type(mu, json_type_null))
        return;
    const char *s = json_object_is_type(mu, json_type_string) ? json_object_get_string((json_object *)mu) : NULL;
    size_t n = s ? strspn(s, "0123456789") : 0;
    if (json_object_is_type(mu, json_type_int)) {
        if (json_object_get_int64(mu) < 0 || json_object_get_int64(mu) > RDC_SPEC_SIZE_MAX)
            field_error(e, RDC_FIELD_INVALID, "spec.podDisruptionBudget.maxUnavailable", mu,
                        "must be between 0 and %d", RDC_SPEC_SIZE_MAX);
        else
            out->pdb.max_unavailable = (int)json_object_get_int64(mu);
    } else if (!s || n == 0 || n > 3 || strcmp(s + n, "%") || strtol(s, NULL, 10) > 100) {
        field_error(e, RDC_FIELD_INVALID, "spec.podDisruptionBudget.maxUnavailable", mu,
                    "must be an integer or a percentage from 0%% to 100%%");
    } else {
        out->pdb.max_unavailable_percent = s;
    }
}

static void check_retention(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *storage = jsonx_get(spec, "storage");
    if (storage && !json_object_is_type(storage, json_type_object))
        return; /* check_storage reported it */
    const json_object *ret = optional_object(e, storage, "retention", "spec.storage.retention");
    static const char *const policies[] = {"Retain", "Delete", NULL}; /* as rdc_retention_t */
    int deleted = check_enum(e, ret, "whenDeleted", "spec.storage.retention.whenDeleted", policies,
                             "\"Delete\", \"Retain\"");
    int scaled = check_enum(e, ret, "whenScaled", "spec.storage.retention.whenScaled", policies,
                            "\"Delete\", \"Retain\"");
    out->storage.retention_set = ret != NULL;
    out->storage.when_deleted = deleted > 0 ? RDC_DELETE : RDC_RETAIN;
    out->storage.when_scaled = scaled > 0 ? RDC_DELETE : RDC_RETAIN;
}

/* spec.config.extra: directive -> value, never one the operator owns (redisconf.h). */
static int by_directive_name(const void *a, const void *b)
{
    return strcmp(((const rdc_directive_t *)a)->name, ((const rdc_directive_t *)b)->name);
}

static void check_config_extra(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *config = jsonx_get(spec, "config");
    if (config && !json_object_is_type(config, json_type_object))
        return; /* check_config reported it */
    const json_object *extra = optional_object(e, config, "extra", "spec.config.extra");
    if (!extra)
        return;
    if (json_object_object_length(extra) > REDISCONF_EXTRA_MAX) {
        field_error(e, RDC_FIELD_INVALID, "spec.config.extra", NULL, "must have at most %d directives",
                    REDISCONF_EXTRA_MAX);
        return;
    }
    const char *persistence = NULL;
    if (optional_string(NULL, spec, "persistence", NULL, &persistence) != JSONX_OK)
        persistence = NULL;
    json_object_object_foreach((json_object *)extra, name, v)
    {
        char f[384];
        snprintf(f, sizeof(f), "spec.config.extra.%.300s", name);
        const char *s = NULL, *why = NULL;
        if (!redisconf_name_ok(name))
            field_error(e, RDC_FIELD_INVALID, f, NULL,
                        "must be a redis.conf directive name in lower case ([a-z][a-z0-9-]{0,63})");
        else if ((why = redisconf_owned(name, persistence)))
            field_error(e, RDC_FIELD_FORBIDDEN, f, NULL, "directive \"%s\" is owned by the operator: %s", name, why);
        else if (!v || !json_object_is_type(v, json_type_string) || jsonx_string(extra, name, &s) != JSONX_OK ||
                 !redisconf_value_ok(s))
            field_error(e, RDC_FIELD_INVALID, f, v,
                        "must be a string of 1 to %d printable characters (no line breaks)", REDISCONF_VALUE_MAX);
        else
            out->config.extra[out->config.n_extra++] = (rdc_directive_t){name, s};
    }
    /* The API's order is not promised: by name, so redis.conf is stable. */
    qsort(out->config.extra, out->config.n_extra, sizeof(out->config.extra[0]), by_directive_name);
}

/* spec.imagePullSecrets: an array of objects, each with a Secret's name. */
static const json_object *check_pull_secrets(rdc_field_errors_t *e, const json_object *spec)
{
    const json_object *ips = optional_object_array(e, spec, "imagePullSecrets", "spec.imagePullSecrets",
                                                   RDC_SPEC_LIST_MAX);
    int ok = 1;
    for (size_t i = 0; ips && i < json_object_array_length(ips); i++) {
        const char *s = NULL;
        char f[64];
        snprintf(f, sizeof(f), "spec.imagePullSecrets[%zu].name", i);
        if (optional_string(e, json_object_array_get_idx(ips, i), "name", f, &s) != JSONX_OK ||
            !rdc_spec_is_dns1123_subdomain(s)) {
            field_error(e, RDC_FIELD_INVALID, f, s ? jsonx_get(json_object_array_get_idx(ips, i), "name") : NULL,
                        "must be the name of a Secret (a DNS subdomain)");
            ok = 0;
        }
    }
    return ok ? ips : NULL;
}


/* ---- Day-2 knobs (issue 34): spec.service, the pod extras, spec.networkPolicy -------- */

/* An IPv4 or IPv6 CIDR ("10.0.0.0/8", "2001:db8::/32"). */
static int is_cidr(const char *s)
{
    const char *slash = strchr(s, '/');
    char addr[64];
    size_t n = slash ? (size_t)(slash - s) : 0;
    if (!slash || n == 0 || n >= sizeof(addr) || strlen(s) > RDC_SPEC_CIDR_MAX)
        return 0;
    memcpy(addr, s, n);
    addr[n] = '\0';
    unsigned char bin[16];
    int v6 = strchr(addr, ':') != NULL;
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1)
        return 0;
    const char *p = slash + 1;
    size_t digits = strspn(p, "0123456789");
    if (!digits || digits > 3 || p[digits])
        return 0;
    return strtol(p, NULL, 10) <= (v6 ? 128 : 32);
}

/* An environment variable's name: [-._a-zA-Z][-._a-zA-Z0-9]*, at most RDC_SPEC_ENV_NAME_MAX. */
static int is_env_name(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > RDC_SPEC_ENV_NAME_MAX || (*s >= '0' && *s <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
              c == '_'))
            return 0;
    }
    return 1;
}

static int is_dns1123_label(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > RDC_SPEC_CONTAINER_NAME_MAX || s[0] == '-' || s[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return 0;
    return 1;
}

/* 1 when s is one of list (NULL-terminated). */
static int one_of(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(s, list[i]))
            return 1;
    return 0;
}

static const char *const service_types[] = {"ClusterIP", "NodePort", "LoadBalancer", NULL}; /* rdc_service_type_t */

const char *rdc_spec_service_type_name(rdc_service_type_t t)
{
    return (size_t)t < 3 ? service_types[t] : "ClusterIP";
}

static void check_source_ranges(rdc_field_errors_t *e, const json_object *svc, rdc_spec_t *out)
{
    const json_object *r = optional_of_type(e, svc, "loadBalancerSourceRanges", "spec.service.loadBalancerSourceRanges",
                                            json_type_array, "an array");
    if (!r)
        return;
    size_t before = PROBLEMS(e);
    if (json_object_array_length(r) > RDC_SPEC_SOURCE_RANGES_MAX)
        field_error(e, RDC_FIELD_INVALID, "spec.service.loadBalancerSourceRanges", NULL, "must have at most %d items",
                    RDC_SPEC_SOURCE_RANGES_MAX);
    for (size_t i = 0; PROBLEMS(e) == before && i < json_object_array_length(r); i++) {
        const json_object *it = json_object_array_get_idx(r, i);
        char f[96];
        snprintf(f, sizeof(f), "spec.service.loadBalancerSourceRanges[%zu]", i);
        const char *c = it && json_object_is_type(it, json_type_string) ? json_object_get_string((json_object *)it)
                                                                        : NULL;
        if (!c || strlen(c) != (size_t)json_object_get_string_len(it) || !is_cidr(c))
            field_error(e, RDC_FIELD_INVALID, f, it, "must be a CIDR (an IPv4 or IPv6 address and prefix, e.g. "
                                                     "203.0.113.0/24)");
    }
    if (PROBLEMS(e) == before && json_object_array_length(r) && out->service.type != RDC_SVC_LOAD_BALANCER)
        field_error(e, RDC_FIELD_FORBIDDEN, "spec.service.loadBalancerSourceRanges", NULL,
                    "may only be set with spec.service.type LoadBalancer");
    else if (PROBLEMS(e) == before)
        out->service.source_ranges = r;
}

/* spec.service: the role Services' type, metadata and traffic settings. */
static void check_service(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *svc = optional_object(e, spec, "service", "spec.service");
    if (!svc)
        return;
    int t = check_enum(e, svc, "type", "spec.service.type", service_types,
                       "\"ClusterIP\", \"LoadBalancer\", \"NodePort\"");
    if (t > 0 && out->mode != RDC_MODE_REPLICATION)
        field_error(e, RDC_FIELD_FORBIDDEN, "spec.service.type", NULL,
                    "%s applies to the role Services <name>-primary and <name>-replicas, which only spec.mode "
                    "Replication has",
                    service_types[t]);
    else if (t > 0)
        out->service.type = (rdc_service_type_t)t;
    static const char *const labels[] = {"app.kubernetes.io/name", "app.kubernetes.io/instance",
                                         "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", NULL};
    static const char *const annotations[] = {"cache.example.com/", NULL};
    size_t before = PROBLEMS(e);
    check_string_map(e, svc, "labels", "spec.service.labels", 1, labels);
    out->service.labels = PROBLEMS(e) == before ? jsonx_typed(jsonx_get(svc, "labels"), json_type_object) : NULL;
    before = PROBLEMS(e);
    check_string_map(e, svc, "annotations", "spec.service.annotations", 0, annotations);
    out->service.annotations =
        PROBLEMS(e) == before ? jsonx_typed(jsonx_get(svc, "annotations"), json_type_object) : NULL;
    static const char *const policies[] = {"Cluster", "Local", NULL};
    int p = check_enum(e, svc, "externalTrafficPolicy", "spec.service.externalTrafficPolicy", policies,
                       "\"Cluster\", \"Local\"");
    if (p >= 0 && out->service.type == RDC_SVC_CLUSTER_IP)
        field_error(e, RDC_FIELD_FORBIDDEN, "spec.service.externalTrafficPolicy", NULL,
                    "may only be set with spec.service.type NodePort or LoadBalancer");
    else if (p >= 0)
        out->service.external_traffic_policy = policies[p];
    check_source_ranges(e, svc, out);
}

/* The environment variables the operator sets on the redis container (render.c). */
static const char *const operator_env[] = {"REDIS_PASSWORD", "REDISCLI_AUTH", "POD_IP", "REDIS_TLS_DIR", NULL};

static void check_env(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    size_t before = PROBLEMS(e);
    const json_object *env = optional_object_array(e, spec, "env", "spec.env", RDC_SPEC_ENV_MAX);
    for (size_t i = 0; env && i < json_object_array_length(env); i++) {
        const json_object *it = json_object_array_get_idx(env, i);
        char f[64], fv[64];
        snprintf(f, sizeof(f), "spec.env[%zu].name", i);
        snprintf(fv, sizeof(fv), "spec.env[%zu].value", i);
        const char *name = NULL, *value = NULL;
        if (optional_string(e, it, "name", f, &name) != JSONX_OK || !is_env_name(name)) {
            field_error(e, RDC_FIELD_INVALID, f, jsonx_get(it, "name"),
                        "must be an environment variable name ([-._a-zA-Z][-._a-zA-Z0-9]*, at most %d characters)",
                        RDC_SPEC_ENV_NAME_MAX);
            continue;
        }
        if (one_of(name, operator_env))
            field_error(e, RDC_FIELD_FORBIDDEN, f, NULL, "%s is set by the operator", name);
        for (size_t j = 0; j < i; j++)
            if (jsonx_str_is(json_object_array_get_idx(env, j), "name", name)) {
                field_error(e, RDC_FIELD_INVALID, f, jsonx_get(it, "name"), "must be unique (spec.env[%zu] has it)",
                            j);
                break;
            }
        if (optional_string(e, it, "value", fv, &value) == JSONX_OK && strlen(value) > RDC_SPEC_ENV_VALUE_MAX)
            field_error(e, RDC_FIELD_INVALID, fv, NULL, "must be at most %d bytes", RDC_SPEC_ENV_VALUE_MAX);
        snprintf(fv, sizeof(fv), "spec.env[%zu].valueFrom", i);
        if (optional_object(e, it, "valueFrom", fv) && value)
            field_error(e, RDC_FIELD_INVALID, fv, NULL, "may not be set with value");
    }
    out->extras.env = PROBLEMS(e) == before ? env : NULL;
}

/* A list of named objects (volumes, containers): each name a DNS-1123 label, unique in
 * the list and among seen (names of an earlier list, n_seen of them, appended to), never
 * one of reserved (Forbidden: "<name> is the operator's <what>"). Returns the list when
 * it passed. */
static const json_object *check_named_list(rdc_field_errors_t *e, const json_object *spec, const char *key,
                                           size_t max, const char *const *reserved, const char *what,
                                           const char **seen, size_t *n_seen)
{
    size_t before = PROBLEMS(e);
    char field[64];
    snprintf(field, sizeof(field), "spec.%s", key);
    const json_object *l = optional_object_array(e, spec, key, field, max);
    for (size_t i = 0; l && i < json_object_array_length(l); i++) {
        const json_object *it = json_object_array_get_idx(l, i);
        char f[96];
        snprintf(f, sizeof(f), "spec.%s[%zu].name", key, i);
        const char *name = NULL;
        if (optional_string(e, it, "name", f, &name) != JSONX_OK || !is_dns1123_label(name)) {
            field_error(e, RDC_FIELD_INVALID, f, jsonx_get(it, "name"),
                        "must be a DNS-1123 label (lower case alphanumerics and '-', at most %d characters)",
                        RDC_SPEC_CONTAINER_NAME_MAX);
            continue;
        }
        if (one_of(name, reserved))
            field_error(e, RDC_FIELD_FORBIDDEN, f, NULL, "\"%s\" is the operator's %s", name, what);
        for (size_t j = 0; j < *n_seen; j++)
            if (!strcmp(seen[j], name)) {
                field_error(e, RDC_FIELD_INVALID, f, jsonx_get(it, "name"), "must be unique among the %ss", what);
                break;
            }
        if (*n_seen < 2 * RDC_SPEC_CONTAINERS_MAX + RDC_SPEC_VOLUMES_MAX)
            seen[(*n_seen)++] = name;
    }
    return PROBLEMS(e) == before ? l : NULL;
}

/* Containers need an image (the API server says so too, later and less clearly). */
static void check_images(rdc_field_errors_t *e, const json_object *l, const char *key)
{
    for (size_t i = 0; l && i < json_object_array_length(l); i++) {
        char f[96];
        snprintf(f, sizeof(f), "spec.%s[%zu].image", key, i);
        const char *img = NULL;
        if (optional_string(e, json_object_array_get_idx(l, i), "image", f, &img) != JSONX_OK)
            field_error(e, RDC_FIELD_REQUIRED, f, NULL, NULL);
        else if (!rdc_spec_is_image_ref(img))
            field_error(e, RDC_FIELD_INVALID, f, NULL, "must be an image reference (printable ASCII without "
                                                        "blanks, at most %d bytes)", RDC_SPEC_IMAGE_MAX);
    }
}

/* The mount paths of the operator's volumes: a user's mount may be neither one nor below one. */
static const char *const operator_paths[] = {"/data", "/etc/redis", "/etc/redis-tls", "/etc/redis-acl", NULL};

static int path_clashes(const char *p)
{
    for (size_t i = 0; operator_paths[i]; i++) {
        size_t n = strlen(operator_paths[i]);
        if (!strncmp(p, operator_paths[i], n) && (p[n] == '\0' || p[n] == '/'))
            return 1;
    }
    return 0;
}

static void check_mounts(rdc_field_errors_t *e, const json_object *spec, const json_object *volumes,
                         rdc_spec_t *out)
{
    size_t before = PROBLEMS(e);
    const json_object *m = optional_object_array(e, spec, "volumeMounts", "spec.volumeMounts", RDC_SPEC_VOLUMES_MAX);
    for (size_t i = 0; m && i < json_object_array_length(m); i++) {
        const json_object *it = json_object_array_get_idx(m, i);
        char f[64], fp[64];
        snprintf(f, sizeof(f), "spec.volumeMounts[%zu].name", i);
        snprintf(fp, sizeof(fp), "spec.volumeMounts[%zu].mountPath", i);
        const char *name = NULL, *path = NULL;
        int found = 0;
        if (optional_string(e, it, "name", f, &name) == JSONX_OK)
            for (size_t j = 0; volumes && j < json_object_array_length(volumes); j++)
                found |= jsonx_str_is(json_object_array_get_idx(volumes, j), "name", name);
        if (!found)
            field_error(e, RDC_FIELD_INVALID, f, jsonx_get(it, "name"), "must name a volume of spec.volumes");
        if (optional_string(e, it, "mountPath", fp, &path) != JSONX_OK)
            field_error(e, RDC_FIELD_REQUIRED, fp, NULL, NULL);
        else if (path[0] != '/' || strlen(path) > RDC_SPEC_MOUNT_PATH_MAX)
            field_error(e, RDC_FIELD_INVALID, fp, jsonx_get(it, "mountPath"),
                        "must be an absolute path of at most %d bytes", RDC_SPEC_MOUNT_PATH_MAX);
        else if (path_clashes(path))
            field_error(e, RDC_FIELD_FORBIDDEN, fp, NULL,
                        "%s is (or is below) a path the operator mounts: /data, /etc/redis, /etc/redis-tls, "
                        "/etc/redis-acl", path);
    }
    out->extras.volume_mounts = PROBLEMS(e) == before ? m : NULL;
}

static void check_netpol(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    const json_object *np = optional_object(e, spec, "networkPolicy", "spec.networkPolicy");
    out->netpol.enabled = optional_bool(e, np, "enabled", "spec.networkPolicy.enabled", 0);
    size_t before = PROBLEMS(e);
    const json_object *peers =
        optional_object_array(e, np, "allowedPeers", "spec.networkPolicy.allowedPeers", RDC_SPEC_PEERS_MAX);
    for (size_t i = 0; peers && i < json_object_array_length(peers); i++) {
        const json_object *it = json_object_array_get_idx(peers, i);
        char f[64], fn[128], fpod[128];
        snprintf(f, sizeof(f), "spec.networkPolicy.allowedPeers[%zu]", i);
        snprintf(fn, sizeof(fn), "%s.namespaceSelector", f);
        snprintf(fpod, sizeof(fpod), "%s.podSelector", f);
        const json_object *ns = optional_object(e, it, "namespaceSelector", fn);
        const json_object *pod = optional_object(e, it, "podSelector", fpod);
        if (!ns && !pod && PROBLEMS(e) == before)
            field_error(e, RDC_FIELD_REQUIRED, f, NULL, "a namespaceSelector, a podSelector or both");
    }
    out->netpol.allowed_peers = PROBLEMS(e) == before ? peers : NULL;
}

/* The day-2 knobs, after check_pod_knobs (spec.mode is known). */
static void check_day2_knobs(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    static const char *const policies[] = {"Always", "IfNotPresent", "Never", NULL};
    /* spec.restore adds the restore init container and its Secrets' volumes (render.h) */
    static const char *const volumes_plain[] = {"data", "config", "tls", "acl", NULL};
    static const char *const volumes_restore[] = {"data", "config", "tls", "acl", "restore-credentials",
                                                  "restore-ca", NULL};
    static const char *const containers_plain[] = {"redis", NULL};
    static const char *const containers_restore[] = {"redis", "restore", NULL};
    int restores = out->restore.endpoint || out->restore.backup;
    const char *const *our_volumes = restores ? volumes_restore : volumes_plain;
    const char *const *our_containers = restores ? containers_restore : containers_plain;
    check_service(e, spec, out);
    int p = check_enum(e, spec, "imagePullPolicy", "spec.imagePullPolicy", policies,
                       "\"Always\", \"IfNotPresent\", \"Never\"");
    out->extras.image_pull_policy = p >= 0 ? policies[p] : NULL;
    out->extras.service_account_name =
        checked_string(e, spec, "serviceAccountName", "spec.serviceAccountName", rdc_spec_is_dns1123_subdomain,
                       "must be the name of a ServiceAccount (a DNS subdomain)");
    check_env(e, spec, out);
    const char *seen[2 * RDC_SPEC_CONTAINERS_MAX + RDC_SPEC_VOLUMES_MAX];
    size_t n = 0;
    out->extras.volumes =
        check_named_list(e, spec, "volumes", RDC_SPEC_VOLUMES_MAX, our_volumes, "volume", seen, &n);
    check_mounts(e, spec, out->extras.volumes, out);
    n = 0;
    static const char *const lists[] = {"initContainers", "containers"};
    const json_object **dst[] = {&out->extras.init_containers, &out->extras.containers};
    for (size_t i = 0; i < 2; i++) {
        size_t before = PROBLEMS(e);
        const json_object *l =
            check_named_list(e, spec, lists[i], RDC_SPEC_CONTAINERS_MAX, our_containers, "container", seen, &n);
        check_images(e, l, lists[i]);
        *dst[i] = PROBLEMS(e) == before ? l : NULL;
    }
    check_netpol(e, spec, out);
}


static void check_pod_knobs(rdc_field_errors_t *e, const json_object *spec, rdc_spec_t *out)
{
    size_t before = PROBLEMS(e);
    const json_object *res = check_resources(e, spec);
    out->pod.resources = PROBLEMS(e) == before ? res : NULL;
    out->pod.security_context = optional_object(e, spec, "securityContext", "spec.securityContext");
    out->pod.pod_security_context = optional_object(e, spec, "podSecurityContext", "spec.podSecurityContext");
    out->pod.affinity = optional_object(e, spec, "affinity", "spec.affinity");
    out->pod.tolerations = optional_object_array(e, spec, "tolerations", "spec.tolerations", RDC_SPEC_LIST_MAX);
    out->pod.topology_spread_constraints = optional_object_array(
        e, spec, "topologySpreadConstraints", "spec.topologySpreadConstraints", RDC_SPEC_LIST_MAX);
    out->pod.image_pull_secrets = check_pull_secrets(e, spec);
    before = PROBLEMS(e);
    check_string_map(e, spec, "nodeSelector", "spec.nodeSelector", 1, NULL);
    const json_object *ns = jsonx_typed(jsonx_get(spec, "nodeSelector"), json_type_object);
    out->pod.node_selector = PROBLEMS(e) == before ? ns : NULL;
    out->pod.priority_class_name =
        checked_string(e, spec, "priorityClassName", "spec.priorityClassName", rdc_spec_is_dns1123_subdomain,
                       "must be the name of a PriorityClass (a DNS subdomain)");
    check_int_range(e, spec, "terminationGracePeriodSeconds", "spec.terminationGracePeriodSeconds", 0,
                    RDC_SPEC_GRACE_MAX, &out->pod.termination_grace_period_seconds);
    before = PROBLEMS(e);
    const json_object *pm = check_extra_metadata(e, spec, "podMetadata", "spec.podMetadata");
    out->pod.pod_metadata = PROBLEMS(e) == before ? pm : NULL;
    before = PROBLEMS(e);
    const json_object *sm = check_extra_metadata(e, spec, "serviceMetadata", "spec.serviceMetadata");
    out->pod.service_metadata = PROBLEMS(e) == before ? sm : NULL;
    check_pdb(e, spec, out);
    check_retention(e, spec, out);
    check_config_extra(e, spec, out);
}

static const char *const persistence_names[] = {"aof", "rdb", "none"};  /* as rdc_persistence_t */
static const char *const retention_names[] = {"Retain", "Delete"};      /* as rdc_retention_t */

const char *rdc_spec_persistence_name(rdc_persistence_t p)
{
    return (size_t)p < sizeof(persistence_names) / sizeof(persistence_names[0]) ? persistence_names[p] : "aof";
}

const char *rdc_spec_retention_name(rdc_retention_t r)
{
    return (size_t)r < sizeof(retention_names) / sizeof(retention_names[0]) ? retention_names[r] : "Retain";
}

void rdc_spec_defaults(rdc_spec_t *out)
{
    memset(out, 0, sizeof(*out));
    out->mode = RDC_MODE_STANDALONE;
    out->persistence = RDC_PERSISTENCE_AOF;
    out->config.maxmemory_policy = RDC_SPEC_DEFAULT_MAXMEMORY_POLICY;
    out->storage.size = RDC_SPEC_DEFAULT_STORAGE_SIZE;
    out->storage.when_deleted = out->storage.when_scaled = RDC_RETAIN;
    out->auth.key = RDC_SPEC_DEFAULT_AUTH_KEY;
    out->failover.down_after_ns = RDC_SPEC_DEFAULT_DOWN_AFTER_NS;
    out->failover.min_replicas_to_write = -1; /* by size, once it is known */
    out->failover.min_replicas_max_lag = RDC_SPEC_DEFAULT_MIN_REPLICAS_MAX_LAG;
    out->pdb.max_unavailable = RDC_SPEC_DEFAULT_MAX_UNAVAILABLE;
    out->cluster.shards = RDC_SPEC_DEFAULT_SHARDS;
    out->cluster.replicas_per_shard = RDC_SPEC_DEFAULT_REPLICAS_PER_SHARD;
    out->cluster.migration_batch_bytes = RDC_SPEC_DEFAULT_MIGRATION_BATCH;
    out->cluster.migration_bytes_per_second = RDC_SPEC_DEFAULT_MIGRATION_RATE;
    out->pod.termination_grace_period_seconds = -1;
    out->tag = RDC_SPEC_DEFAULT_VERSION;
    out->restore.region = RDC_SPEC_DEFAULT_RESTORE_REGION;
    out->backup.region = RDC_SPEC_DEFAULT_RESTORE_REGION;
    out->backup.keep = RDC_SPEC_DEFAULT_BACKUP_KEEP;
}

/* The defaults that depend on other fields: the image's tag, min-replicas-to-write. */
static void derived_defaults(rdc_spec_t *out)
{
    out->tag = out->image && rdc_spec_image_has_tag_or_digest(out->image) ? NULL
               : out->version                                             ? out->version
                                                                          : RDC_SPEC_DEFAULT_VERSION;
    if (out->failover.min_replicas_to_write < 0)
        out->failover.min_replicas_to_write = out->size >= 3 ? RDC_SPEC_DEFAULT_MIN_REPLICAS_TO_WRITE : 0;
}

size_t rdc_spec_parse(const json_object *rc, rdc_spec_t *out, rdc_field_errors_t *errs)
{
    size_t before = PROBLEMS(errs);
    rdc_spec_defaults(out);
    if (!rc || !json_object_is_type(rc, json_type_object)) {
        field_error(errs, RDC_FIELD_INVALID, "<object>", rc, "must be an object");
        return PROBLEMS(errs) - before;
    }
    check_name(errs, rc);
    const json_object *spec = jsonx_get(rc, "spec");
    if (!spec)
        field_error(errs, RDC_FIELD_REQUIRED, "spec", NULL, NULL);
    else if (!json_object_is_type(spec, json_type_object))
        field_error(errs, RDC_FIELD_INVALID, "spec", spec, "must be an object");
    else {
        /* Every part of the spec, in the order of their errors. */
        static spec_check_fn *const checks[] = {check_size,      check_image,     check_config,    check_storage,
                                                check_v1_fields, check_pod_knobs, check_day2_knobs};
        for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
            checks[i](errs, spec, out);
    }
    derived_defaults(out);
    return PROBLEMS(errs) - before;
}

size_t rdc_spec_validate(const json_object *rc, rdc_field_errors_t *errs)
{
    rdc_spec_t scratch;
    return rdc_spec_parse(rc, &scratch, errs);
}

/* ---- Update rules ---------------------------------------------------------------------- */

/* The effective storage size of a spec ("1Gi" when absent), or NULL when it is of a wrong
 * type or the storage parent is. */
static const char *effective_storage_size(const json_object *spec)
{
    const json_object *storage = jsonx_get(spec, "storage");
    const char *s = NULL;
    if (storage && !json_object_is_type(storage, json_type_object))
        return NULL;
    jsonx_field_t r = optional_string(NULL, storage, "size", NULL, &s);
    return r == JSONX_BAD ? NULL : r == JSONX_ABSENT ? RDC_SPEC_DEFAULT_STORAGE_SIZE : s;
}

/* The effective storage class of a spec: *cls NULL for the cluster's default. Returns 0,
 * or -1 when it (or its parent) is of a wrong type. */
static int effective_storage_class(const json_object *spec, const char **cls)
{
    const json_object *storage = jsonx_get(spec, "storage");
    *cls = NULL;
    if (storage && !json_object_is_type(storage, json_type_object))
        return -1;
    jsonx_field_t r = optional_string(NULL, storage, "storageClass", NULL, cls);
    if (r == JSONX_ABSENT)
        *cls = NULL;
    return r == JSONX_BAD ? -1 : 0;
}

static void put_class(buf_t *b, const char *cls)
{
    if (cls)
        rdc_spec_put_quoted(b, cls, VALUE_SHOWN);
    else
        buf_puts(b, "unset (the cluster's default)");
}

size_t rdc_spec_validate_update(const json_object *old_rc, const json_object *new_rc,
                                rdc_field_errors_t *errs)
{
    size_t before = errs->n + errs->dropped;
    const json_object *olds = jsonx_get(old_rc, "spec"), *news = jsonx_get(new_rc, "spec");
    if (!olds || !news || !json_object_is_type(olds, json_type_object) ||
        !json_object_is_type(news, json_type_object))
        return 0;

    if (rdc_spec_cluster_layout(olds, NULL, NULL) != rdc_spec_cluster_layout(news, NULL, NULL))
        field_error(errs, RDC_FIELD_FORBIDDEN, "spec.mode", NULL,
                    "cannot change to or from Cluster mode: Cluster mode spreads the keyspace over several masters "
                    "by hash slot, the other modes keep it whole on each server; create a new RedisCluster in the "
                    "other mode and migrate the data");
    json_object *orst = (json_object *)jsonx_get(olds, "restore"), *nrst = (json_object *)jsonx_get(news, "restore");
    if (!json_object_equal(orst, nrst))
        field_error(errs, RDC_FIELD_FORBIDDEN, "spec.restore", NULL,
                    "is immutable, also from unset to set: a restore happens only when the RedisCluster is "
                    "created (its pods start from the backup); to restore again, create a new RedisCluster");
    const json_object *os = jsonx_get(olds, "size"), *ns = jsonx_get(news, "size");
    /* (in Cluster mode the size follows the shards, which may shrink: their slots move first) */
    if (os && ns && json_object_is_type(os, json_type_int) && json_object_is_type(ns, json_type_int) &&
        json_object_get_int64(ns) < json_object_get_int64(os) && !rdc_spec_cluster_layout(news, NULL, NULL) &&
        scale_down_forbidden(NULL, news))
        field_error(errs, RDC_FIELD_FORBIDDEN, "spec.size", NULL,
                    "may not decrease from %lld to %lld (spec.scaleDownPolicy is Forbid: scaling this "
                    "RedisCluster down is not allowed)",
                    (long long)json_object_get_int64(os), (long long)json_object_get_int64(ns));

    const char *oz = effective_storage_size(olds), *nz = effective_storage_size(news);
    uint64_t ob = 0, nb = 0;
    if (oz && nz && rdc_spec_storage_bytes(oz, &ob) == RDC_STORAGE_OK &&
        rdc_spec_storage_bytes(nz, &nb) == RDC_STORAGE_OK &&
        (nb < ob || (nb != ob && rdc_spec_cluster_layout(news, NULL, NULL)))) {
        /* It may grow (the claims are resized: workerd/plan_volume.h), not in Cluster mode */
        buf_t d;
        buf_init(&d, TEXT_CAP);
        buf_puts(&d, nb < ob ? "may not shrink (a PersistentVolumeClaim can only grow; it sizes the StatefulSet's "
                               "volumeClaimTemplates): was "
                             : "is immutable in Cluster mode (the shards' claims are not resized): was ");
        rdc_spec_put_quoted(&d, oz, VALUE_SHOWN);
        buf_puts(&d, ", now ");
        rdc_spec_put_quoted(&d, nz, VALUE_SHOWN);
        field_error(errs, RDC_FIELD_FORBIDDEN, "spec.storage.size", NULL, "%s", buf_str(&d));
        buf_free(&d);
    }

    const char *oc = NULL, *nc = NULL;
    if (!effective_storage_class(olds, &oc) && !effective_storage_class(news, &nc) &&
        (!oc != !nc || (oc && strcmp(oc, nc)))) {
        buf_t d;
        buf_init(&d, TEXT_CAP);
        buf_puts(&d, "is immutable (it is part of the StatefulSet's volumeClaimTemplates): was ");
        put_class(&d, oc);
        buf_puts(&d, ", now ");
        put_class(&d, nc);
        field_error(errs, RDC_FIELD_FORBIDDEN, "spec.storage.storageClass", NULL, "%s", buf_str(&d));
        buf_free(&d);
    }
    return errs->n + errs->dropped - before;
}

/* ---- Defaults -------------------------------------------------------------------------- */

/* Append {"op":"add","path":path,"value":value} to ops, taking value. Returns 0 or -1. */
static int add_op(json_object *ops, const char *path, json_object *value)
{
    json_object *op = json_object_new_object(), *o = json_object_new_string("add"),
                *p = json_object_new_string(path);
    if (!op || !o || !p || !value) {
        json_object_put(op);
        json_object_put(o);
        json_object_put(p);
        json_object_put(value);
        return -1;
    }
    json_object_object_add(op, "op", o);
    json_object_object_add(op, "path", p);
    json_object_object_add(op, "value", value);
    if (json_object_array_add(ops, op)) {
        json_object_put(op);
        return -1;
    }
    return 0;
}

/* {key: value} with a string value, or NULL when out of memory. */
static json_object *object_with(const char *key, const char *value)
{
    json_object *o = json_object_new_object(), *v = json_object_new_string(value);
    if (!o || !v) {
        json_object_put(o);
        json_object_put(v);
        return NULL;
    }
    json_object_object_add(o, key, v);
    return o;
}

/* One nested default: spec[parent][key] = value. Returns ops added (0 or 1) or -1. */
static int default_nested(const json_object *spec, const char *parent, const char *key, const char *value,
                          json_object *ops)
{
    const json_object *p = jsonx_get(spec, parent);
    char path[128];
    if (!p) {
        snprintf(path, sizeof(path), "/spec/%s", parent);
        return add_op(ops, path, object_with(key, value)) ? -1 : 1;
    }
    const char *s = NULL;
    if (!json_object_is_type(p, json_type_object) || optional_string(NULL, p, key, NULL, &s) != JSONX_ABSENT)
        return 0;
    snprintf(path, sizeof(path), "/spec/%s/%s", parent, key);
    return add_op(ops, path, json_object_new_string(value)) ? -1 : 1;
}

int rdc_spec_default_ops(const json_object *rc, json_object *ops)
{
    const json_object *spec = jsonx_get(rc, "spec");
    if (!spec || !json_object_is_type(spec, json_type_object))
        return 0;
    int n = 0, r;
    const char *s = NULL, *img = NULL;
    /* The version is only used as the image's tag: leave it unset when the image has one,
     * so that the object does not claim a version it does not run. */
    int tagged = jsonx_string(spec, "image", &img) == JSONX_OK && rdc_spec_image_has_tag_or_digest(img);
    if (!tagged && optional_string(NULL, spec, "version", NULL, &s) == JSONX_ABSENT) {
        if (add_op(ops, "/spec/version", json_object_new_string(RDC_SPEC_DEFAULT_VERSION)))
            return -1;
        n++;
    }
    int shards = 0, replicas = 0;
    if (!jsonx_get(spec, "size") && rdc_spec_cluster_layout(spec, &shards, &replicas)) {
        if (add_op(ops, "/spec/size", json_object_new_int(shards * (1 + replicas))))
            return -1;
        n++;
    }
    /* Cluster mode's layout written out (the CRD defaults its fields only when the object
     * is there), so that kubectl get shows the shards */
    if (rdc_spec_cluster_layout(spec, &shards, &replicas) && !jsonx_get(spec, "cluster")) {
        json_object *c = json_object_new_object();
        if (c) {
            json_object_object_add(c, "shards", json_object_new_int(shards));
            json_object_object_add(c, "replicasPerShard", json_object_new_int(replicas));
        }
        if (add_op(ops, "/spec/cluster", c))
            return -1;
        n++;
    }
    if ((r = default_nested(spec, "storage", "size", RDC_SPEC_DEFAULT_STORAGE_SIZE, ops)) < 0)
        return -1;
    n += r;
    if ((r = default_nested(spec, "config", "maxmemoryPolicy", RDC_SPEC_DEFAULT_MAXMEMORY_POLICY, ops)) < 0)
        return -1;
    return n + r;
}

json_object *rdc_spec_defaulted(const json_object *rc)
{
    const json_object *spec = jsonx_get(rc, "spec");
    json_object *copy = NULL, *ops = NULL;
    if (!spec || !json_object_is_type(spec, json_type_object))
        return NULL;
    if (json_object_deep_copy((json_object *)spec, &copy, NULL) || !(ops = json_object_new_array()) ||
        rdc_spec_default_ops(rc, ops) < 0)
        goto fail;
    /* Apply the "add" operations: paths are /spec/<key> or /spec/<parent>/<key>, and a
     * parent is always an object (absent parents are added whole). */
    for (size_t i = 0; i < json_object_array_length(ops); i++) {
        json_object *op = json_object_array_get_idx(ops, i), *path = NULL, *value = NULL;
        json_object_object_get_ex(op, "path", &path);
        json_object_object_get_ex(op, "value", &value);
        char buf[128];
        snprintf(buf, sizeof(buf), "%s", json_object_get_string(path) + strlen("/spec/"));
        char *slash = strchr(buf, '/');
        json_object *target = copy;
        if (slash) {
            *slash = '\0';
            if (!json_object_object_get_ex(copy, buf, &target))
                goto fail;
        }
        if (json_object_object_add(target, slash ? slash + 1 : buf, json_object_get(value))) {
            json_object_put(value);
            goto fail;
        }
    }
    json_object_put(ops);
    return copy;
fail:
    json_object_put(ops);
    json_object_put(copy);
    return NULL;
}

int rdc_spec_unchanged(const json_object *old_rc, const json_object *new_rc)
{
    json_object *olds = (json_object *)jsonx_get(old_rc, "spec"), *news = (json_object *)jsonx_get(new_rc, "spec");
    if (!olds || !news)
        return !olds && !news;
    if (json_object_equal(olds, news))
        return 1;
    json_object *defaulted = rdc_spec_defaulted(old_rc);
    int same = defaulted && json_object_equal(defaulted, news);
    json_object_put(defaulted);
    return same;
}
