#include "redisinfo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A decimal integer filling exactly [v, v+n); -1 (and *ok 0) otherwise. */
static int64_t parse_int(const char *v, size_t n, int *ok)
{
    char tmp[32];
    *ok = 0;
    if (n == 0 || n >= sizeof(tmp))
        return -1;
    memcpy(tmp, v, n);
    tmp[n] = '\0';
    char *end = NULL;
    errno = 0;
    long long x = strtoll(tmp, &end, 10);
    if (errno || !end || *end)
        return -1;
    *ok = 1;
    return (int64_t)x;
}

static void copy_field(char *dst, size_t cap, const char *v, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static int name_is(const char *name, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(name, lit, n) == 0;
}

/* "ip=127.0.0.1,port=6380,state=online,offset=42,lag=0" */
static void parse_slave(const char *v, size_t n, redisinfo_slave_t *s)
{
    memset(s, 0, sizeof(*s));
    s->offset = -1;
    s->lag_s = -1;
    const char *p = v, *end = v + n;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        if (eq) {
            size_t kn = (size_t)(eq - p), vn = (size_t)(stop - eq - 1);
            int ok;
            if (name_is(p, kn, "ip"))
                copy_field(s->ip, sizeof(s->ip), eq + 1, vn);
            else if (name_is(p, kn, "port"))
                s->port = (int)parse_int(eq + 1, vn, &ok);
            else if (name_is(p, kn, "state"))
                copy_field(s->state, sizeof(s->state), eq + 1, vn);
            else if (name_is(p, kn, "offset"))
                s->offset = parse_int(eq + 1, vn, &ok);
            else if (name_is(p, kn, "lag"))
                s->lag_s = parse_int(eq + 1, vn, &ok);
        }
        p = stop + 1;
    }
}

/* INFO keyspace's "dbN:keys=K,expires=E,avg_ttl=T": every database's keys add up into
 * out->keys. 1 when the line was one. */
static int keyspace_line(const char *name, size_t nn, const char *v, size_t vn, redisinfo_t *out)
{
    int ok = 0;
    if (nn < 3 || strncmp(name, "db", 2) || name[2] < '0' || name[2] > '9' || vn < 6 || strncmp(v, "keys=", 5))
        return 0;
    size_t kl = 0; /* the text is not NUL-terminated: the number ends at a comma or the line's end */
    while (5 + kl < vn && v[5 + kl] != ',')
        kl++;
    int64_t k = parse_int(v + 5, kl, &ok);
    if (ok && k >= 0)
        out->keys = (out->keys > 0 ? out->keys : 0) + k;
    return 1;
}

/* "slave0", "slave1", ...: a replica a primary lists. */
static int is_slave_line(const char *name, size_t nn)
{
    return nn > 5 && memcmp(name, "slave", 5) == 0 && name[5] >= '0' && name[5] <= '9';
}

static void parse_line(const char *name, size_t nn, const char *v, size_t vn, redisinfo_t *out, int *saw_role)
{
    int ok = 0;
    static const struct {
        const char *name;
        size_t off;
    } ints[] = {
        {"slave_repl_offset", offsetof(redisinfo_t, slave_repl_offset)},
        {"master_repl_offset", offsetof(redisinfo_t, master_repl_offset)},
        {"connected_slaves", offsetof(redisinfo_t, connected_slaves)},
        {"connected_clients", offsetof(redisinfo_t, connected_clients)},
        {"used_memory", offsetof(redisinfo_t, used_memory)},
        {"maxmemory", offsetof(redisinfo_t, maxmemory)},
        {"evicted_keys", offsetof(redisinfo_t, evicted_keys)},
        {"expired_keys", offsetof(redisinfo_t, expired_keys)},
        {"keyspace_hits", offsetof(redisinfo_t, keyspace_hits)},
        {"keyspace_misses", offsetof(redisinfo_t, keyspace_misses)},
        {"total_commands_processed", offsetof(redisinfo_t, total_commands_processed)},
        {"master_link_down_since_seconds", offsetof(redisinfo_t, link_down_s)}, /* -1: never linked */
        {"master_last_io_seconds_ago", offsetof(redisinfo_t, master_io_s)},     /* -1: not linked */
    };
    if (name_is(name, nn, "role")) {
        *saw_role = 1;
        out->role = name_is(v, vn, "master") ? REDISINFO_ROLE_MASTER
                    : name_is(v, vn, "slave") ? REDISINFO_ROLE_SLAVE
                                              : REDISINFO_ROLE_UNKNOWN;
        return;
    }
    if (name_is(name, nn, "master_host")) {
        copy_field(out->master_host, sizeof(out->master_host), v, vn);
        return;
    }
    if (name_is(name, nn, "master_port")) {
        int64_t p = parse_int(v, vn, &ok);
        out->master_port = ok && p > 0 && p < 65536 ? (int)p : 0;
        return;
    }
    if (keyspace_line(name, nn, v, vn, out))
        return;
    if (name_is(name, nn, "master_link_status")) {
        out->link_up = name_is(v, vn, "up");
        return;
    }
    if (name_is(name, nn, "rdb_last_bgsave_status")) {
        out->rdb_last_bgsave_ok = name_is(v, vn, "ok") ? 1 : 0;
        return;
    }
    if (is_slave_line(name, nn)) {
        out->nslaves++;
        return;
    }
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        if (name_is(name, nn, ints[i].name)) {
            int64_t x = parse_int(v, vn, &ok);
            *(int64_t *)((char *)out + ints[i].off) = ok ? x : -1;
            return;
        }
    }
}

/* The line at *p (not past end) into *line: its end (the CR of a CRLF, the LF, or end),
 * with *p moved to the next line; NULL when no line is left. */
static const char *next_line(const char **p, const char *end, const char **line)
{
    if (!*p || *p >= end)
        return NULL;
    *line = *p;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    *p = stop + 1;
    return stop > *line && stop[-1] == '\r' ? stop - 1 : stop;
}

/* The colon of a "field:value" line [line, line_end), or NULL (a "# Section" header, an
 * empty line, no colon). */
static const char *field_colon(const char *line, const char *line_end)
{
    if (line_end <= line || *line == '#')
        return NULL;
    return memchr(line, ':', (size_t)(line_end - line));
}

size_t redisinfo_slaves(const char *text, size_t len, redisinfo_slave_t *out, size_t max)
{
    size_t n = 0;
    const char *p = text, *end = text ? text + len : NULL, *line = NULL, *line_end;
    while ((line_end = next_line(&p, end, &line)) != NULL) {
        const char *colon = field_colon(line, line_end);
        if (colon && is_slave_line(line, (size_t)(colon - line))) {
            if (n < max)
                parse_slave(colon + 1, (size_t)(line_end - colon - 1), &out[n]);
            n++;
        }
    }
    return n;
}

int redisinfo_parse(const char *text, size_t len, redisinfo_t *out)
{
    memset(out, 0, sizeof(*out));
    out->slave_repl_offset = out->master_repl_offset = out->connected_slaves = -1;
    out->connected_clients = out->used_memory = out->maxmemory = -1;
    out->evicted_keys = out->expired_keys = out->keyspace_hits = out->keyspace_misses = -1;
    out->total_commands_processed = -1;
    out->link_down_s = out->master_io_s = out->keys = -1;
    out->rdb_last_bgsave_ok = -1;
    int saw_role = 0;
    const char *p = text, *end = text ? text + len : NULL, *line = NULL, *line_end;
    while ((line_end = next_line(&p, end, &line)) != NULL) {
        if ((size_t)(line_end - line) >= 10 && !strncmp(line, "# Keyspace", 10) && out->keys < 0)
            out->keys = 0; /* the section, with a line per database that holds keys */
        const char *colon = field_colon(line, line_end);
        if (colon)
            parse_line(line, (size_t)(colon - line), colon + 1, (size_t)(line_end - colon - 1), out, &saw_role);
    }
    if (out->role != REDISINFO_ROLE_SLAVE) {
        /* A primary's master_* fields do not exist; make sure nothing half-read stays. */
        out->master_host[0] = '\0';
        out->master_port = 0;
        out->link_up = 0;
        out->link_down_s = out->master_io_s = -1;
    }
    if (out->link_up)
        out->link_down_s = -1;
    else
        out->master_io_s = -1;
    return saw_role ? 0 : -1;
}

int64_t redisinfo_offset(const redisinfo_t *info)
{
    if (info->role == REDISINFO_ROLE_SLAVE && info->slave_repl_offset >= 0)
        return info->slave_repl_offset;
    return info->master_repl_offset;
}

const char *redisinfo_role_name(redisinfo_role_t role)
{
    return role == REDISINFO_ROLE_MASTER ? "master" : role == REDISINFO_ROLE_SLAVE ? "slave" : "";
}
