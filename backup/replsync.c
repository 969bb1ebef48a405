/* replsync: the replica's side of a full synchronisation (replsync.h). */
#include "replsync.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void replsync_init(replsync_t *p, size_t n, const char *const *names, const int *optional)
{
    memset(p, 0, sizeof *p);
    p->offset = -1;
    if (n > REPLSYNC_MAX_PRE)
        n = REPLSYNC_MAX_PRE;
    p->n_pre = n;
    for (size_t i = 0; i < n; i++) {
        p->pre_names[i] = names[i];
        p->pre_optional[i] = optional ? optional[i] : 0;
    }
    p->state = n ? REPLSYNC_PRE : REPLSYNC_FULLRESYNC;
}

const char *replsync_state_name(replsync_state_t s)
{
    switch (s) {
    case REPLSYNC_PRE: return "handshake";
    case REPLSYNC_FULLRESYNC: return "FULLRESYNC";
    case REPLSYNC_HEADER: return "RDB header";
    case REPLSYNC_PAYLOAD: return "RDB";
    case REPLSYNC_DONE: return "done";
    case REPLSYNC_FAILED: return "failed";
    }
    return "?";
}

static replsync_state_t fail(replsync_t *p, const char *fmt, const char *what)
{
    snprintf(p->err, sizeof p->err, fmt, what);
    p->state = REPLSYNC_FAILED;
    return p->state;
}

/* A decimal of 1..19 digits, whole: 0 with *v; -1 otherwise. */
static int parse_u64(const char *s, uint64_t *v)
{
    size_t n = strlen(s);
    if (n == 0 || n > 19 || strspn(s, "0123456789") != n)
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, NULL, 10);
    if (errno)
        return -1;
    *v = (uint64_t)x;
    return 0;
}

/* "+FULLRESYNC <replid> <offset>" (the "+" already gone). */
static replsync_state_t on_fullresync(replsync_t *p, const char *l)
{
    const char *id = l + strlen("FULLRESYNC ");
    const char *sp = strchr(id, ' ');
    uint64_t off = 0;
    if (!sp || sp == id || (size_t)(sp - id) >= sizeof p->replid || parse_u64(sp + 1, &off) != 0 ||
        off > INT64_MAX)
        return fail(p, "PSYNC: malformed reply \"+%.200s\"", l);
    memcpy(p->replid, id, (size_t)(sp - id));
    p->replid[sp - id] = '\0';
    p->offset = (int64_t)off;
    p->state = REPLSYNC_HEADER;
    return p->state;
}

/* "$<len>" or "$EOF:<mark>" (the "$" already gone). */
static replsync_state_t on_header(replsync_t *p, const char *l)
{
    if (strncmp(l, "EOF:", 4) == 0) {
        if (strlen(l + 4) != REPLSYNC_MARK_LEN)
            return fail(p, "RDB header: EOF marker not %s bytes", "40");
        memcpy(p->mark, l + 4, REPLSYNC_MARK_LEN);
        p->eof_form = 1;
    } else if (parse_u64(l, &p->remaining) != 0) {
        return fail(p, "RDB header: malformed length \"$%.200s\"", l);
    }
    p->state = REPLSYNC_PAYLOAD;
    if (!p->eof_form && p->remaining == 0)
        p->state = REPLSYNC_DONE;
    return p->state;
}

static replsync_state_t on_pre(replsync_t *p, const char *l)
{
    size_t i = p->pre_seen++;
    if (l[0] == '-' && !p->pre_optional[i]) {
        snprintf(p->err, sizeof p->err, "%s: %.200s", p->pre_names[i], l + 1);
        p->state = REPLSYNC_FAILED;
        return p->state;
    }
    if (l[0] != '-' && l[0] != '+')
        return fail(p, "handshake: unexpected reply \"%.200s\"", l);
    if (p->pre_seen == p->n_pre)
        p->state = REPLSYNC_FULLRESYNC;
    return p->state;
}

/* One whole line (CR LF or LF removed). Empty lines are keepalives. */
static replsync_state_t on_line(replsync_t *p, const char *l)
{
    if (l[0] == '\0')
        return p->state;
    switch (p->state) {
    case REPLSYNC_PRE:
        return on_pre(p, l);
    case REPLSYNC_FULLRESYNC:
        if (strncmp(l, "+FULLRESYNC ", 12) == 0)
            return on_fullresync(p, l + 1);
        if (l[0] == '-')
            return fail(p, "PSYNC: %.200s", l + 1);
        return fail(p, "PSYNC: not a full resynchronisation: \"%.200s\"", l);
    case REPLSYNC_HEADER:
        if (l[0] == '$')
            return on_header(p, l + 1);
        if (l[0] == '-')
            return fail(p, "RDB: the server gave up: %.200s", l + 1);
        return fail(p, "RDB header: unexpected line \"%.200s\"", l);
    default:
        return p->state;
    }
}

/* Line mode: take bytes up to a LF; returns the bytes consumed. */
static size_t feed_line(replsync_t *p, const char *b, size_t len)
{
    const char *nl = memchr(b, '\n', len);
    size_t take = nl ? (size_t)(nl - b) + 1 : len;
    size_t body = nl ? take - 1 : take;
    if (p->line_len + body >= sizeof p->line) {
        fail(p, "%s: line too long", replsync_state_name(p->state));
        return take;
    }
    memcpy(p->line + p->line_len, b, body);
    p->line_len += body;
    if (!nl)
        return take;
    if (p->line_len && p->line[p->line_len - 1] == '\r')
        p->line_len--;
    p->line[p->line_len] = '\0';
    p->line_len = 0;
    on_line(p, p->line);
    return take;
}

static int give(replsync_t *p, replsync_sink_fn sink, void *ctx, const void *b, size_t n)
{
    if (n == 0)
        return 0;
    if (sink(ctx, b, n) != 0) {
        fail(p, "%s: the RDB's sink failed", "RDB");
        return -1;
    }
    p->rdb_len += n;
    return 0;
}

/* The EOF form: all of b is consumed; what cannot be the marker goes to the sink. */
static void feed_eof_form(replsync_t *p, const char *b, size_t len, replsync_sink_fn sink, void *ctx)
{
    size_t total = p->held_len + len;
    if (total > REPLSYNC_MARK_LEN) {
        size_t out = total - REPLSYNC_MARK_LEN; /* bytes that are surely the RDB's */
        size_t from_held = out < p->held_len ? out : p->held_len;
        if (give(p, sink, ctx, p->held, from_held) != 0 || give(p, sink, ctx, b, out - from_held) != 0)
            return;
        memmove(p->held, p->held + from_held, p->held_len - from_held);
        p->held_len -= from_held;
        b += out - from_held;
        len -= out - from_held;
    }
    memcpy(p->held + p->held_len, b, len);
    p->held_len += len;
    if (p->held_len == REPLSYNC_MARK_LEN && memcmp(p->held, p->mark, REPLSYNC_MARK_LEN) == 0)
        p->state = REPLSYNC_DONE;
}

/* The $<len> form: up to remaining bytes; returns the count consumed. */
static size_t feed_len_form(replsync_t *p, const char *b, size_t len, replsync_sink_fn sink, void *ctx)
{
    size_t n = (uint64_t)len < p->remaining ? len : (size_t)p->remaining;
    if (give(p, sink, ctx, b, n) != 0)
        return n;
    p->remaining -= n;
    if (p->remaining == 0)
        p->state = REPLSYNC_DONE;
    return n;
}

replsync_state_t replsync_feed(replsync_t *p, const void *buf, size_t len, size_t *used,
                               replsync_sink_fn sink, void *ctx)
{
    const char *b = buf;
    size_t off = 0;
    while (off < len && p->state != REPLSYNC_DONE && p->state != REPLSYNC_FAILED) {
        if (p->state != REPLSYNC_PAYLOAD) {
            off += feed_line(p, b + off, len - off);
        } else if (p->eof_form) {
            feed_eof_form(p, b + off, len - off, sink, ctx);
            off = len;
        } else {
            off += feed_len_form(p, b + off, len - off, sink, ctx);
        }
    }
    if (used)
        *used = off;
    return p->state;
}

replsync_state_t replsync_closed(replsync_t *p)
{
    if (p->state == REPLSYNC_DONE || p->state == REPLSYNC_FAILED)
        return p->state;
    if (p->state == REPLSYNC_PAYLOAD && !p->eof_form) {
        snprintf(p->err, sizeof p->err, "connection closed after %" PRIu64 " of %" PRIu64 " RDB bytes",
                 p->rdb_len, p->rdb_len + p->remaining);
    } else if (p->state == REPLSYNC_PAYLOAD) {
        snprintf(p->err, sizeof p->err, "connection closed after %" PRIu64 " RDB bytes, before the EOF marker",
                 p->rdb_len + p->held_len);
    } else {
        snprintf(p->err, sizeof p->err, "connection closed by the server while waiting for the %s",
                 p->state == REPLSYNC_PRE ? "handshake's replies" : replsync_state_name(p->state));
    }
    p->state = REPLSYNC_FAILED;
    return p->state;
}
