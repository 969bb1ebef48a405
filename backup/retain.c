/* retain: backup names and retention, pure (retain.h). */
#include "retain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int retain_prefix_norm(const char *prefix, char *out, size_t cap, char *err, size_t errlen)
{
    size_t len = prefix ? strlen(prefix) : 0;
    while (len && prefix[len - 1] == '/')
        len--;
    if (len == 0 || prefix[0] == '/') {
        snprintf(err, errlen, "--prefix \"%s\": a key prefix (\"prod/cache\"): not empty, not starting with '/'",
                 prefix ? prefix : "");
        return -1;
    }
    if (len > RETAIN_PREFIX_MAX || len >= cap) {
        snprintf(err, errlen, "--prefix: longer than %d bytes (a key is at most 1024)", RETAIN_PREFIX_MAX);
        return -1;
    }
    memcpy(out, prefix, len);
    out[len] = '\0';
    return 0;
}

int retain_key_name(const char *prefix, int64_t t, char *out, size_t cap)
{
    struct tm tm;
    time_t tt = (time_t)t;
    char name[32];
    if (t < 0 || t > 253402300799LL || !gmtime_r(&tt, &tm)) /* 9999-12-31T23:59:59Z */
        return -1;
    if (strftime(name, sizeof name, "%Y%m%dT%H%M%SZ.rdb", &tm) != RETAIN_NAME_LEN)
        return -1;
    int n = snprintf(out, cap, "%s/%s", prefix, name);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* n decimal digits at s into *v: 0, or -1. */
static int digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        *v = *v * 10 + (s[i] - '0');
    }
    return 0;
}

int retain_key_time(const char *prefix, const char *key, int64_t *t)
{
    size_t plen = strlen(prefix);
    if (strncmp(key, prefix, plen) != 0 || key[plen] != '/')
        return -1;
    const char *s = key + plen + 1;
    if (strlen(s) != RETAIN_NAME_LEN || s[8] != 'T' || strcmp(s + 15, "Z.rdb") != 0)
        return -1;
    int y, mo, d, h, mi, sec;
    if (digits(s, 4, &y) || digits(s + 4, 2, &mo) || digits(s + 6, 2, &d) || digits(s + 9, 2, &h) ||
        digits(s + 11, 2, &mi) || digits(s + 13, 2, &sec))
        return -1;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = sec};
    time_t tt = timegm(&tm);
    /* timegm normalises (February 30th becomes March 2nd): a real date comes back as it
     * went in, an impossible one does not. */
    if (tt < 0 || tm.tm_year != y - 1900 || tm.tm_mon != mo - 1 || tm.tm_mday != d || tm.tm_hour != h ||
        tm.tm_min != mi || tm.tm_sec != sec)
        return -1;
    *t = (int64_t)tt;
    return 0;
}

/* Newest first: ours (time >= 0) by time descending, then key descending; foreign ones
 * after them by key ascending. */
static int newest_first(const void *pa, const void *pb)
{
    const retain_obj_t *a = pa, *b = pb;
    int a_ours = a->time >= 0, b_ours = b->time >= 0;
    if (a_ours != b_ours)
        return b_ours - a_ours;
    if (!a_ours)
        return strcmp(a->key, b->key);
    if (a->time != b->time)
        return a->time < b->time ? 1 : -1;
    return -strcmp(a->key, b->key);
}

int retain_decide(const char *prefix, retain_obj_t *objs, size_t n, int keep, const char *new_key, char *err,
                  size_t errlen)
{
    if (keep < 1) {
        snprintf(err, errlen, "--keep %d: at least 1 (the backup just written is always kept)", keep);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t t = -1;
        objs[i].time = objs[i].complete && retain_key_time(prefix, objs[i].key, &t) == 0 ? t : -1;
        objs[i].verdict = RETAIN_FOREIGN;
    }
    if (n > 1)
        qsort(objs, n, sizeof *objs, newest_first);
    /* The new backup is one of the N whether or not the listing shows it yet. */
    size_t budget = new_key ? (size_t)keep - 1 : (size_t)keep;
    int deleted = 0;
    for (size_t i = 0; i < n && objs[i].time >= 0; i++) {
        if (new_key && strcmp(objs[i].key, new_key) == 0) {
            objs[i].verdict = RETAIN_NEW;
        } else if (i > 0 && strcmp(objs[i].key, objs[i - 1].key) == 0) {
            objs[i].verdict = objs[i - 1].verdict; /* the same object listed twice: one backup */
        } else if (budget > 0) {
            objs[i].verdict = RETAIN_KEEP;
            budget--;
        } else {
            objs[i].verdict = RETAIN_DELETE;
        }
        deleted += objs[i].verdict == RETAIN_DELETE;
    }
    return deleted;
}

void retain_time_str(int64_t t, char *out, size_t cap)
{
    struct tm tm;
    time_t tt = (time_t)t;
    if (!gmtime_r(&tt, &tm) || strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, cap, "%s", "");
}
