#include "clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t clock_read(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

int64_t clock_mono_ns(void)
{
    return clock_read(CLOCK_MONOTONIC);
}

int64_t clock_wall_ns(void)
{
    return clock_read(CLOCK_REALTIME);
}

char *clock_format_rfc3339(int64_t wall_ns, int frac_digits, char *out, size_t len)
{
    time_t secs = (time_t)(wall_ns / NS_PER_SEC);
    long frac = (long)(wall_ns % NS_PER_SEC);
    if (frac < 0) {
        frac += NS_PER_SEC;
        secs -= 1;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac_digits <= 0) {
        snprintf(out, len, "%sZ", base);
        return out;
    }
    if (frac_digits > 9)
        frac_digits = 9;
    for (int i = frac_digits; i < 9; i++)
        frac /= 10;
    snprintf(out, len, "%s.%0*ldZ", base, frac_digits, frac);
    return out;
}

/* Read exactly n decimal digits from *p. */
static int take_digits(const char **p, int n, int *val)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *val = v;
    return 0;
}

/* "YYYY-MM-DDTHH:MM:SS" as a layout: each field's digit count and the character after it
 * ('T' also matches 't'; 0: nothing). */
enum { F_YEAR, F_MON, F_DAY, F_HOUR, F_MIN, F_SEC, F_COUNT };
static const struct {
    int digits;
    char after;
} date_time_layout[F_COUNT] = {{4, '-'}, {2, '-'}, {2, 'T'}, {2, ':'}, {2, ':'}, {2, 0}};

/* Read the date and time fields into f. 0, or -1 when *p does not follow the layout. */
static int take_date_time(const char **p, int f[F_COUNT])
{
    for (int i = 0; i < F_COUNT; i++) {
        char after = date_time_layout[i].after;
        if (take_digits(p, date_time_layout[i].digits, &f[i]))
            return -1;
        if (after && **p != after && !(after == 'T' && **p == 't'))
            return -1;
        *p += after ? 1 : 0;
    }
    return 0;
}

/* 1 when the fields name a real calendar day and a time of day (second 60: a leap second). */
static int date_time_valid(const int f[F_COUNT])
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int year = f[F_YEAR], mon = f[F_MON];
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (mon < 1 || mon > 12)
        return 0;
    return f[F_DAY] >= 1 && f[F_DAY] <= mdays[mon - 1] + (mon == 2 && leap) && f[F_HOUR] <= 23 &&
           f[F_MIN] <= 59 && f[F_SEC] <= 60;
}

/* An optional ".digits" (at least one; past nine they are dropped) as nanoseconds. */
static int take_fraction(const char **p, int64_t *frac)
{
    *frac = 0;
    if (**p != '.')
        return 0;
    (*p)++;
    int digits = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        if (digits < 9) {
            *frac = *frac * 10 + (**p - '0');
            digits++;
        }
    }
    if (digits == 0)
        return -1;
    for (; digits < 9; digits++)
        *frac *= 10;
    return 0;
}

/* The zone: "Z" (or "z") or "+HH:MM" / "-HH:MM", as seconds east of UTC. */
static int take_offset(const char **p, int64_t *offset)
{
    *offset = 0;
    if (**p == 'Z' || **p == 'z') {
        (*p)++;
        return 0;
    }
    if (**p != '+' && **p != '-')
        return -1;
    int sign = **p == '-' ? -1 : 1, oh, om;
    (*p)++;
    if (take_digits(p, 2, &oh) || **p != ':')
        return -1;
    (*p)++;
    if (take_digits(p, 2, &om) || oh > 23 || om > 59)
        return -1;
    *offset = sign * ((int64_t)oh * 3600 + om * 60);
    return 0;
}

int clock_parse_rfc3339(const char *s, int64_t *wall_ns)
{
    int f[F_COUNT];
    int64_t frac, offset;
    const char *p = s;
    if (take_date_time(&p, f) || !date_time_valid(f) || take_fraction(&p, &frac) || take_offset(&p, &offset) ||
        *p != '\0')
        return -1;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = f[F_YEAR] - 1900;
    tm.tm_mon = f[F_MON] - 1;
    tm.tm_mday = f[F_DAY];
    tm.tm_hour = f[F_HOUR];
    tm.tm_min = f[F_MIN];
    tm.tm_sec = f[F_SEC];
    int64_t t = (int64_t)timegm(&tm) - offset;
    /* Nanoseconds since 1970 fit in int64 only from 1678 to 2262. */
    if (t > INT64_MAX / NS_PER_SEC - 1 || t < INT64_MIN / NS_PER_SEC + 1)
        return -1;
    *wall_ns = t * NS_PER_SEC + frac;
    return 0;
}
