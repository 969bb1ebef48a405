/* schedule: see schedule.h. */
#include "schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct {
    const char *name;
    int lo, hi;
    const char *const *names; /* names[i] is value names_base + i, or NULL */
    int names_base;
} field_t;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                          "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const field_t fields[5] = {
    {"minute", 0, 59, NULL, 0},
    {"hour", 0, 23, NULL, 0},
    {"day-of-month", 1, 31, NULL, 0},
    {"month", 1, 12, month_names, 1},
    {"day-of-week", 0, 7, dow_names, 0},
};

/* A number or a name of field f at *p (len bytes): 0 with *v, or -1. */
static int value_of(const field_t *f, const char *p, size_t len, int *v)
{
    if (len == 0 || len > 3)
        return -1;
    if (f->names && len == 3) {
        for (int i = 0; f->names[i]; i++)
            if (strncasecmp(p, f->names[i], 3) == 0) {
                *v = f->names_base + i;
                return 0;
            }
    }
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        n = n * 10 + (p[i] - '0');
    }
    *v = n;
    return 0;
}

/* One list element ("*", "a", "a-b", each with "/n") into *bits. */
static int element(const field_t *f, const char *p, size_t len, uint64_t *bits, char *why,
                   size_t whylen)
{
    const char *slash = memchr(p, '/', len);
    size_t rlen = slash ? (size_t)(slash - p) : len;
    int lo = f->lo, hi = f->hi, step = 1;
    const char *dash = memchr(p, '-', rlen);
    if (slash) {
        size_t slen = len - rlen - 1;
        if (slen == 0 || slen > 2 || value_of(&fields[0], slash + 1, slen, &step) != 0 ||
            step < 1) {
            snprintf(why, whylen, "bad step");
            return -1;
        }
    }
    if (!(rlen == 1 && p[0] == '*')) {
        size_t alen = dash ? (size_t)(dash - p) : rlen;
        if (value_of(f, p, alen, &lo) != 0 ||
            (dash && value_of(f, dash + 1, rlen - alen - 1, &hi) != 0)) {
            snprintf(why, whylen, "not a number or name");
            return -1;
        }
        if (!dash && !slash)
            hi = lo; /* "5" alone; "5/15" is 5 to the field's end */
    }
    if (lo < f->lo || hi > f->hi || lo > hi) {
        snprintf(why, whylen, "out of range %d-%d", f->lo, f->hi);
        return -1;
    }
    for (int v = lo; v <= hi; v += step)
        *bits |= (uint64_t)1 << v;
    return 0;
}

static int parse_field(int i, const char *p, size_t len, uint64_t *bits, char *err, size_t errlen)
{
    const field_t *f = &fields[i];
    char why[64] = "";
    *bits = 0;
    for (size_t a = 0; a <= len;) {
        size_t b = a;
        while (b < len && p[b] != ',')
            b++;
        if (b == a || element(f, p + a, b - a, bits, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: \"%.*s\": %s", f->name, (int)len, p,
                     why[0] ? why : "empty list element");
            return -1;
        }
        a = b + 1;
    }
    return 0;
}

static const struct {
    const char *name;
    const char *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

static int parse_fields(const char *expr, cron_t *c, char *err, size_t errlen)
{
    const char *p = expr;
    uint64_t bits[5];
    int dom_star = 0, dow_star = 0;
    for (int i = 0; i < 5; i++) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *start = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (p == start) {
            snprintf(err, errlen, "want 5 fields (minute hour day-of-month month day-of-week), "
                                  "got %d", i);
            return -1;
        }
        if (parse_field(i, start, (size_t)(p - start), &bits[i], err, errlen) != 0)
            return -1;
        if (i == 2)
            dom_star = *start == '*';
        if (i == 4)
            dow_star = *start == '*';
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p) {
        snprintf(err, errlen, "more than 5 fields at \"%s\"", p);
        return -1;
    }
    c->minutes = bits[0];
    c->hours = (uint32_t)bits[1];
    c->doms = (uint32_t)bits[2];
    c->months = (uint32_t)bits[3];
    c->dows = (uint32_t)((bits[4] | bits[4] >> 7) & 0x7f); /* 7 is Sunday too */
    c->dom_star = dom_star;
    c->dow_star = dow_star;
    return 0;
}

int cron_parse(const char *expr, cron_t *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    while (*expr == ' ' || *expr == '\t')
        expr++;
    if (*expr == '@') {
        for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
            if (strcasecmp(expr, macros[i].name) == 0)
                return parse_fields(macros[i].expr, c, err, errlen);
        snprintf(err, errlen, "unknown macro \"%s\"", expr);
        return -1;
    }
    if (parse_fields(expr, c, err, errlen) != 0) {
        memset(c, 0, sizeof *c);
        return -1;
    }
    return 0;
}

static int day_matches(const cron_t *c, const struct tm *tm)
{
    int dom = (c->doms >> tm->tm_mday) & 1, dow = (c->dows >> tm->tm_wday) & 1;
    if (c->dom_star || c->dow_star)
        return dom && dow; /* the starred one matches every day */
    return dom || dow;
}

int64_t cron_next(const cron_t *c, int64_t t)
{
    time_t s = (time_t)(t - (t % 60 + 60) % 60 + 60); /* the next whole minute */
    struct tm tm;
    if (!gmtime_r(&s, &tm))
        return -1;
    int limit_year = tm.tm_year + 10;
    tm.tm_sec = 0;
    while (tm.tm_year <= limit_year) {
        if (!((c->months >> (tm.tm_mon + 1)) & 1)) {
            tm.tm_mon++, tm.tm_mday = 1, tm.tm_hour = 0, tm.tm_min = 0;
        } else if (!day_matches(c, &tm)) {
            tm.tm_mday++, tm.tm_hour = 0, tm.tm_min = 0;
        } else if (!((c->hours >> tm.tm_hour) & 1)) {
            tm.tm_hour++, tm.tm_min = 0;
        } else if (!((c->minutes >> tm.tm_min) & 1)) {
            tm.tm_min++;
        } else {
            return (int64_t)timegm(&tm);
        }
        s = timegm(&tm); /* normalises the field that overflowed, and sets tm_wday */
        if (s == (time_t)-1 || !gmtime_r(&s, &tm))
            return -1;
    }
    return -1;
}

int cron_due(const cron_t *c, int64_t last, int64_t created, int64_t now, int64_t *scheduled,
             int64_t *next)
{
    int64_t from = last > 0 ? last : created;
    int64_t t = cron_next(c, from);
    *next = cron_next(c, now);
    if (t < 0 || t > now)
        return 0;
    /* The latest fire time <= now: the one before *next, found by stepping from t. An
     * every-minute schedule a day behind steps 1440 times: cheap, and only after an
     * outage. Start no earlier than a day before now to bound it. */
    if (now - t > 86400) {
        int64_t u = cron_next(c, now - 86400 - 60);
        if (u >= 0 && u <= now)
            t = u;
    }
    for (int64_t u = cron_next(c, t); u >= 0 && u <= now; u = cron_next(c, t))
        t = u;
    *scheduled = t;
    return 1;
}

int64_t cron_period(const cron_t *c, int64_t now)
{
    int64_t t = cron_next(c, now), longest = -1;
    for (int i = 0; t >= 0 && i < CRON_PERIOD_MAX_FIRES; i++) {
        int64_t u = cron_next(c, t);
        if (u < 0)
            break;
        if (u - t > longest)
            longest = u - t;
        if (u > now + CRON_PERIOD_SPAN)
            break;
        t = u;
    }
    return longest;
}

/* Newer first: by time, then by name. */
static int newer(const backup_ref_t *a, const backup_ref_t *b)
{
    if (a->time != b->time)
        return a->time > b->time;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "") > 0;
}

size_t retention_pick(const backup_ref_t *b, size_t n, int keep_succeeded, int keep_failed,
                      size_t *del)
{
    size_t nd = 0;
    keep_succeeded = keep_succeeded < 1 ? 1 : keep_succeeded;
    keep_failed = keep_failed < 0 ? 0 : keep_failed;
    for (size_t i = 0; i < n; i++) {
        if (b[i].state == BACKUP_RUNNING)
            continue;
        /* Its rank among the backups of its state: how many of them are newer. */
        size_t rank = 0;
        for (size_t j = 0; j < n; j++)
            if (j != i && b[j].state == b[i].state && newer(&b[j], &b[i]))
                rank++;
        size_t keep = (size_t)(b[i].state == BACKUP_SUCCEEDED ? keep_succeeded : keep_failed);
        if (rank >= keep)
            del[nd++] = i;
    }
    /* Oldest first (insertion sort: n is a schedule's history, a handful). */
    for (size_t i = 1; i < nd; i++)
        for (size_t j = i; j > 0 && newer(&b[del[j - 1]], &b[del[j]]); j--) {
            size_t x = del[j];
            del[j] = del[j - 1];
            del[j - 1] = x;
        }
    return nd;
}
