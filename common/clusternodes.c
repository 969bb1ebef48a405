/* clusternodes: CLUSTER NODES and CLUSTER INFO, parsed. See clusternodes.h. */
#include "clusternodes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS (8 + CN_SLOTS) /* the fixed fields and at most one slot field a slot */

/* A field of a line: start and length, not terminated. */
typedef struct {
    const char *p;
    size_t n;
} field_t;

static int fail(char *err, size_t errlen, size_t line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, size_t line, const char *fmt, ...)
{
    if (errlen) {
        int k = snprintf(err, errlen, "CLUSTER NODES line %zu: ", line);
        va_list ap;
        va_start(ap, fmt);
        if (k >= 0 && (size_t)k < errlen)
            vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int field_is(field_t f, const char *s)
{
    return f.n == strlen(s) && !memcmp(f.p, s, f.n);
}

/* An unsigned decimal of f into *v (at most max). Returns 0 or -1. */
static int field_uint(field_t f, uint64_t max, uint64_t *v)
{
    char b[24];
    if (!f.n || f.n >= sizeof(b))
        return -1;
    for (size_t i = 0; i < f.n; i++)
        if (f.p[i] < '0' || f.p[i] > '9')
            return -1;
    memcpy(b, f.p, f.n);
    b[f.n] = '\0';
    errno = 0;
    unsigned long long x = strtoull(b, NULL, 10);
    if (errno || x > max)
        return -1;
    *v = x;
    return 0;
}

static int is_id(field_t f)
{
    if (f.n != CN_ID_LEN)
        return 0;
    for (size_t i = 0; i < f.n; i++) {
        char c = f.p[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return 0;
    }
    return 1;
}

static void copy_field(char *dst, size_t size, field_t f)
{
    size_t n = f.n < size - 1 ? f.n : size - 1;
    memcpy(dst, f.p, n);
    dst[n] = '\0';
}

/* "ip:port@cport[,hostname]" into node. Returns 0 or -1. */
static int parse_address(field_t f, cn_node_t *node)
{
    const char *end = f.p + f.n, *comma = memchr(f.p, ',', f.n);
    if (comma)
        end = comma;
    const char *at = memchr(f.p, '@', (size_t)(end - f.p));
    const char *colon = NULL;
    for (const char *q = at ? at : end; q > f.p; q--)
        if (q[-1] == ':') {
            colon = q - 1;
            break;
        }
    if (!colon)
        return -1;
    uint64_t port = 0, cport = 0;
    field_t fp = {colon + 1, (size_t)((at ? at : end) - colon - 1)};
    if (field_uint(fp, 65535, &port))
        return -1;
    if (at && field_uint((field_t){at + 1, (size_t)(end - at - 1)}, 65535, &cport))
        return -1;
    size_t iplen = (size_t)(colon - f.p);
    if (iplen >= sizeof(node->ip))
        return -1;
    memcpy(node->ip, f.p, iplen);
    node->ip[iplen] = '\0';
    node->port = (int)port;
    node->cport = (int)cport;
    return 0;
}

static unsigned parse_flags(field_t f)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"myself", CN_MYSELF},   {"master", CN_MASTER},       {"slave", CN_REPLICA},
                 {"fail?", CN_PFAIL},     {"fail", CN_FAIL},           {"handshake", CN_HANDSHAKE},
                 {"noaddr", CN_NOADDR},   {"nofailover", CN_NOFAILOVER}};
    unsigned flags = 0;
    const char *p = f.p, *end = f.p + f.n;
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        field_t one = {p, (size_t)((c ? c : end) - p)};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (field_is(one, names[i].name))
                flags |= names[i].bit;
        p = c ? c + 1 : end;
    }
    return flags;
}

/* One slot field into node's ranges or open slots (arrays of room max). Returns 0 or -1. */
static int parse_slot(field_t f, cn_node_t *node, size_t max)
{
    uint64_t a = 0, b = 0;
    if (f.n && f.p[0] == '[') {
        /* "[N->-id]" or "[N-<-id]" */
        const char *dash = memchr(f.p, '-', f.n);
        if (!dash || f.p[f.n - 1] != ']' || dash + 3 > f.p + f.n ||
            field_uint((field_t){f.p + 1, (size_t)(dash - f.p - 1)}, CN_SLOTS - 1, &a))
            return -1;
        int importing = dash[1] == '<';
        if ((dash[1] != '<' && dash[1] != '>') || dash[2] != '-')
            return -1;
        field_t id = {dash + 3, (size_t)(f.p + f.n - 1 - (dash + 3))};
        if (!is_id(id) || node->nopen >= max)
            return -1;
        cn_open_slot_t *o = &node->open[node->nopen++];
        o->slot = (int)a;
        o->importing = importing;
        copy_field(o->peer, sizeof(o->peer), id);
        return 0;
    }
    const char *dash = memchr(f.p, '-', f.n);
    if (dash) {
        if (field_uint((field_t){f.p, (size_t)(dash - f.p)}, CN_SLOTS - 1, &a) ||
            field_uint((field_t){dash + 1, (size_t)(f.p + f.n - dash - 1)}, CN_SLOTS - 1, &b) || b < a)
            return -1;
    } else if (field_uint(f, CN_SLOTS - 1, &a)) {
        return -1;
    } else {
        b = a;
    }
    if (node->nranges >= max)
        return -1;
    node->ranges[node->nranges++] = (cn_range_t){(int)a, (int)b};
    return 0;
}

/* Split line (n bytes) at spaces into f (at most MAX_FIELDS). Returns how many, or -1 when
 * there are more. */
static int split(const char *line, size_t n, field_t *f)
{
    int k = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && line[i] == ' ')
            i++;
        if (i == n)
            break;
        size_t s = i;
        while (i < n && line[i] != ' ')
            i++;
        if (k == MAX_FIELDS)
            return -1;
        f[k++] = (field_t){line + s, i - s};
    }
    return k;
}

static void node_free(cn_node_t *n)
{
    free(n->ranges);
    free(n->open);
}

/* At most max bytes of f, for a message. */
#define SHOW(f, max) (int)((f).n > (max) ? (max) : (f).n), (f).p

/* One line (its fields f[0..k)) into node. Returns 0, or -1 with err. */
static int parse_node(const field_t *f, int k, cn_node_t *node, size_t lineno, char *err, size_t errlen)
{
    uint64_t v = 0;
    memset(node, 0, sizeof(*node));
    if (k < 8)
        return fail(err, errlen, lineno, "%d fields, want at least 8", k);
    if (!is_id(f[0]))
        return fail(err, errlen, lineno, "node id \"%.*s\" is not 40 hexadecimal characters", SHOW(f[0], 48));
    copy_field(node->id, sizeof(node->id), f[0]);
    if (parse_address(f[1], node))
        return fail(err, errlen, lineno, "address \"%.*s\" is not ip:port@cport", SHOW(f[1], 80));
    node->flags = parse_flags(f[2]);
    if (!field_is(f[3], "-") && !is_id(f[3]))
        return fail(err, errlen, lineno, "master \"%.*s\" is neither - nor a node id", SHOW(f[3], 48));
    if (!field_is(f[3], "-"))
        copy_field(node->master, sizeof(node->master), f[3]);
    if (field_uint(f[4], UINT64_MAX, &v) || field_uint(f[5], UINT64_MAX, &v) ||
        field_uint(f[6], UINT64_MAX, &node->config_epoch))
        return fail(err, errlen, lineno, "ping-sent, pong-recv and config-epoch must be unsigned numbers");
    if (!field_is(f[7], "connected") && !field_is(f[7], "disconnected"))
        return fail(err, errlen, lineno, "link-state \"%.*s\" is neither connected nor disconnected", SHOW(f[7], 32));
    node->connected = field_is(f[7], "connected");
    size_t nslots = (size_t)(k - 8);
    if (nslots) {
        node->ranges = calloc(nslots, sizeof(*node->ranges));
        node->open = calloc(nslots, sizeof(*node->open));
        if (!node->ranges || !node->open) {
            node_free(node);
            return fail(err, errlen, lineno, "out of memory");
        }
    }
    for (int i = 8; i < k; i++)
        if (parse_slot(f[i], node, nslots)) {
            node_free(node);
            return fail(err, errlen, lineno, "slot \"%.*s\" is not N, A-B, [N->-id] or [N-<-id] (0..16383)",
                        SHOW(f[i], 64));
        }
    return 0;
}

void cn_view_destroy(cn_view_t **view_p)
{
    if (!view_p || !*view_p)
        return;
    cn_view_t *v = *view_p;
    for (size_t i = 0; i < v->n; i++)
        node_free(&v->nodes[i]);
    free(v->nodes);
    free(v);
    *view_p = NULL;
}

int cn_parse(const char *text, size_t len, cn_view_t **out, char *err, size_t errlen)
{
    *out = NULL;
    cn_view_t *v = calloc(1, sizeof(*v));
    field_t *f = malloc(MAX_FIELDS * sizeof(*f));
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    lines = lines < CN_MAX_NODES ? lines + 1 : CN_MAX_NODES;
    if (v && f)
        v->nodes = calloc(lines, sizeof(*v->nodes));
    int rc = 0;
    if (!v || !f || !v->nodes)
        rc = fail(err, errlen, 0, "out of memory");
    size_t lineno = 0, at = 0;
    while (!rc && at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        const char *line = text + at;
        at += n + (nl != NULL);
        lineno++;
        if (n && line[n - 1] == '\r')
            n--;
        if (memchr(line, '\0', n))
            rc = fail(err, errlen, lineno, "a NUL byte");
        int k = rc ? 0 : split(line, n, f);
        if (rc || k == 0)
            continue;
        if (k < 0)
            rc = fail(err, errlen, lineno, "more than %d fields", MAX_FIELDS);
        else if (v->n >= CN_MAX_NODES)
            rc = fail(err, errlen, lineno, "more than %d nodes", CN_MAX_NODES);
        else if (parse_node(f, k, &v->nodes[v->n], lineno, err, errlen) == 0)
            v->n++;
        else
            rc = -1;
    }
    free(f);
    if (rc) {
        cn_view_destroy(&v);
        return -1;
    }
    *out = v;
    return 0;
}

static int by_id(const void *a, const void *b)
{
    return strcmp((*(const cn_node_t *const *)a)->id, (*(const cn_node_t *const *)b)->id);
}

/* node's flags as CLUSTER NODES prints them, into out. */
static void flags_text(unsigned flags, char *out, size_t len)
{
    static const char *const names[] = {"myself", "master", "slave", "fail?", "fail", "handshake", "noaddr",
                                        "nofailover"};
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (flags & (1u << i))
            off += (size_t)snprintf(out + off, len - off, "%s%s", off ? "," : "", names[i]);
    if (!off)
        snprintf(out, len, "noflags");
}

/* One node's normalized line into out; returns its length, or -1 when it does not fit. */
static int format_node(const cn_node_t *n, char *out, size_t len)
{
    char flags[96];
    flags_text(n->flags, flags, sizeof(flags));
    size_t off = 0;
    int k = snprintf(out, len, "%s %s:%d@%d %s %s 0 0 %llu %s", n->id, n->ip, n->port, n->cport, flags,
                     n->master[0] ? n->master : "-", (unsigned long long)n->config_epoch,
                     n->connected ? "connected" : "disconnected");
    for (size_t i = 0; k >= 0 && (size_t)k < len && i < n->nranges + n->nopen; i++) {
        off = (size_t)k;
        if (i < n->nranges)
            k += n->ranges[i].from == n->ranges[i].to
                     ? snprintf(out + off, len - off, " %d", n->ranges[i].from)
                     : snprintf(out + off, len - off, " %d-%d", n->ranges[i].from, n->ranges[i].to);
        else
            k += snprintf(out + off, len - off, " [%d-%c-%s]", n->open[i - n->nranges].slot,
                          n->open[i - n->nranges].importing ? '<' : '>', n->open[i - n->nranges].peer);
    }
    if (k < 0 || (size_t)k + 1 >= len)
        return -1;
    out[k++] = '\n';
    out[k] = '\0';
    return k;
}

int cn_format(const cn_view_t *view, char *out, size_t outlen)
{
    if (!outlen)
        return -1;
    out[0] = '\0';
    const cn_node_t **sorted = view && view->n ? malloc(view->n * sizeof(*sorted)) : NULL;
    if (view && view->n && !sorted)
        return -1;
    for (size_t i = 0; view && i < view->n; i++)
        sorted[i] = &view->nodes[i];
    if (sorted)
        qsort(sorted, view->n, sizeof(*sorted), by_id);
    size_t off = 0;
    int rc = 0;
    for (size_t i = 0; view && i < view->n && !rc; i++) {
        int k = format_node(sorted[i], out + off, outlen - off);
        if (k < 0) {
            out[off] = '\0';
            rc = -1;
        } else {
            off += (size_t)k;
        }
    }
    free(sorted);
    return rc;
}

const cn_node_t *cn_myself(const cn_view_t *view)
{
    for (size_t i = 0; view && i < view->n; i++)
        if (view->nodes[i].flags & CN_MYSELF)
            return &view->nodes[i];
    return NULL;
}

const cn_node_t *cn_find(const cn_view_t *view, const char *id)
{
    for (size_t i = 0; view && id && i < view->n; i++)
        if (!strcmp(view->nodes[i].id, id))
            return &view->nodes[i];
    return NULL;
}

int cn_slot_count(const cn_node_t *node)
{
    int n = 0;
    for (size_t i = 0; node && i < node->nranges; i++)
        n += node->ranges[i].to - node->ranges[i].from + 1;
    return n;
}

void cn_ranges_text(const cn_range_t *ranges, size_t n, char *out, size_t outlen)
{
    size_t off = 0;
    if (outlen)
        out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char one[24];
        int k = ranges[i].from == ranges[i].to ? snprintf(one, sizeof(one), "%s%d", i ? "," : "", ranges[i].from)
                                               : snprintf(one, sizeof(one), "%s%d-%d", i ? "," : "", ranges[i].from,
                                                          ranges[i].to);
        /* room for this range, and for ",..." after it unless it is the last */
        if (k < 0 || off + (size_t)k + 1 + (i + 1 < n ? 4 : 0) > outlen) {
            size_t mark = off ? 5 : 4; /* ",..." or "...", with the terminator */
            if (off + mark <= outlen)
                memcpy(out + off, off ? ",..." : "...", mark);
            return;
        }
        memcpy(out + off, one, (size_t)k + 1);
        off += (size_t)k;
    }
}

void cn_slots_add_node(cn_slots_t *s, const cn_node_t *node)
{
    for (size_t i = 0; node && i < node->nranges; i++)
        for (int slot = node->ranges[i].from; slot <= node->ranges[i].to; slot++)
            cn_slots_set(s, slot);
}

size_t cn_slots_ranges(const cn_slots_t *s, int from, int to, int want, cn_range_t *out, size_t max)
{
    size_t n = 0;
    int start = -1;
    for (int slot = from; slot <= to + 1; slot++) {
        int in = slot <= to && cn_slots_has(s, slot) == want;
        if (in && start < 0)
            start = slot;
        if (!in && start >= 0) {
            if (n < max)
                out[n] = (cn_range_t){start, slot - 1};
            n++;
            start = -1;
        }
    }
    return n;
}

/* The integer value of "key:value" line's value into *v when key matches. */
static void info_int(const char *line, size_t n, const char *key, int64_t *v)
{
    size_t k = strlen(key);
    char b[24];
    if (n <= k + 1 || memcmp(line, key, k) || line[k] != ':' || n - k - 1 >= sizeof(b))
        return;
    memcpy(b, line + k + 1, n - k - 1);
    b[n - k - 1] = '\0';
    char *end = NULL;
    errno = 0;
    long long x = strtoll(b, &end, 10);
    if (!errno && end && *end == '\0' && end != b)
        *v = x;
}

void cn_info_parse(const char *text, size_t len, cn_info_t *out)
{
    int64_t v[9] = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
    static const char *const keys[] = {"cluster_slots_assigned", "cluster_slots_ok", "cluster_slots_pfail",
                                       "cluster_slots_fail",     "cluster_known_nodes", "cluster_size",
                                       "cluster_current_epoch",  "cluster_my_epoch"};
    out->state_ok = -1;
    size_t at = 0;
    while (text && at < len) {
        const char *line = text + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + (nl != NULL);
        if (n && line[n - 1] == '\r')
            n--;
        if (n == strlen("cluster_state:ok") && !memcmp(line, "cluster_state:ok", n))
            out->state_ok = 1;
        else if (n == strlen("cluster_state:fail") && !memcmp(line, "cluster_state:fail", n))
            out->state_ok = 0;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            info_int(line, n, keys[i], &v[i]);
    }
    out->slots_assigned = (int)v[0];
    out->slots_ok = (int)v[1];
    out->slots_pfail = (int)v[2];
    out->slots_fail = (int)v[3];
    out->known_nodes = (int)v[4];
    out->size = (int)v[5];
    out->current_epoch = v[6];
    out->my_epoch = v[7];
}
