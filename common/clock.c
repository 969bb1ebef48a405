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

static int expect(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

int clock_parse_rfc3339(const char *s, int64_t *wall_ns)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int year, mon, day, hh, mm, ss;
    const char *p = s;
    if (take_digits(&p, 4, &year) || expect(&p, '-') || take_digits(&p, 2, &mon) ||
        expect(&p, '-') || take_digits(&p, 2, &day))
        return -1;
    if (*p != 'T' && *p != 't')
        return -1;
    p++;
    if (take_digits(&p, 2, &hh) || expect(&p, ':') || take_digits(&p, 2, &mm) ||
        expect(&p, ':') || take_digits(&p, 2, &ss))
        return -1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (mon < 1 || mon > 12 || day < 1 || day > mdays[mon - 1] + (mon == 2 && leap) ||
        hh > 23 || mm > 59 || ss > 60)
        return -1;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            if (digits < 9) {
                frac = frac * 10 + (*p - '0');
                digits++;
            }
            p++;
        }
        if (digits == 0)
            return -1;
        for (; digits < 9; digits++)
            frac *= 10;
    }
    int64_t offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        int oh, om;
        p++;
        if (take_digits(&p, 2, &oh) || expect(&p, ':') || take_digits(&p, 2, &om) ||
            oh > 23 || om > 59)
            return -1;
        offset = sign * ((int64_t)oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hh;
    tm.tm_min = mm;
    tm.tm_sec = ss;
    int64_t t = (int64_t)timegm(&tm) - offset;
    /* Nanoseconds since 1970 fit in int64 only from 1678 to 2262. */
    if (t > INT64_MAX / NS_PER_SEC - 1 || t < INT64_MIN / NS_PER_SEC + 1)
        return -1;
    *wall_ns = t * NS_PER_SEC + frac;
    return 0;
}
