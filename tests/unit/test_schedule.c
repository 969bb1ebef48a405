/* The backup schedule's decisions (common/schedule.h): cron parsing, the next fire time
 * (month ends, February 29th, the day-of-month/day-of-week OR rule), due runs after an
 * outage, and retention. Tables: one row a case. */
#include "schedule.h"

#include "cu_table.h"
#include "text_case.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* "2024-02-28 23:59" (UTC) as Unix seconds. */
static int64_t at(const char *s)
{
    struct tm tm = {0};
    int n = 0;
    const char *p = s;
    int v[5] = {0};
    for (int i = 0; i < 5; i++) {
        int x = 0;
        while (*p >= '0' && *p <= '9')
            x = x * 10 + (*p++ - '0');
        v[i] = x;
        n++;
        while (*p && (*p < '0' || *p > '9'))
            p++;
    }
    tm.tm_year = v[0] - 1900, tm.tm_mon = v[1] - 1, tm.tm_mday = v[2], tm.tm_hour = v[3],
    tm.tm_min = v[4];
    return n == 5 ? (int64_t)timegm(&tm) : -1;
}

static void show(int64_t t, char *buf, size_t len)
{
    if (t < 0) {
        snprintf(buf, len, "never");
        return;
    }
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
}

static void test_next_table(void)
{
    static const struct {
        const char *expr, *after, *want;
    } rows[] = {
        {"* * * * *", "2024-01-01 00:00", "2024-01-01 00:01"}, /* strictly after */
        {"*/15 * * * *", "2024-01-01 00:14", "2024-01-01 00:15"},
        {"5/15 * * * *", "2024-01-01 00:51", "2024-01-01 01:05"}, /* 5-59/15 */
        {"0 0 * * *", "2024-12-31 23:59", "2025-01-01 00:00"},      /* year end */
        {"0 0 31 * *", "2024-04-01 00:00", "2024-05-31 00:00"},     /* April has 30 days */
        {"0 0 31 * *", "2024-01-31 00:00", "2024-03-31 00:00"},     /* skips February */
        {"0 12 29 2 *", "2024-03-01 00:00", "2028-02-29 12:00"},    /* the next Feb 29 */
        {"0 12 29 2 *", "2096-03-01 00:00", "2104-02-29 12:00"},    /* 2100 is no leap year */
        {"0 0 30 2 *", "2024-01-01 00:00", "never"},                /* February 30th */
        {"0 0 1 * *", "2024-01-31 10:00", "2024-02-01 00:00"},      /* @monthly's fields */
        {"@monthly", "2024-02-29 00:00", "2024-03-01 00:00"},
        {"@weekly", "2024-01-01 00:00", "2024-01-07 00:00"},        /* 2024-01-07: Sunday */
        {"@hourly", "2024-01-01 00:00", "2024-01-01 01:00"},
        {"@yearly", "2024-01-01 00:00", "2025-01-01 00:00"},
        /* The OR rule: the 13th OR a Friday. 2024-09-06 is a Friday, the 13th is too. */
        {"0 0 13 * 5", "2024-09-01 00:00", "2024-09-06 00:00"},
        {"0 0 13 * 5", "2024-09-06 00:00", "2024-09-13 00:00"},
        {"0 0 14 * 5", "2024-09-13 00:00", "2024-09-14 00:00"},
        /* A starred day-of-month (also "*\/2"): day-of-week alone counts. */
        {"0 0 * * 5", "2024-09-07 00:00", "2024-09-13 00:00"},
        {"0 0 */2 * 5", "2024-09-01 00:00", "2024-09-13 00:00"},   /* odd days AND Fridays */
        {"0 0 1 * *", "2024-09-01 00:00", "2024-10-01 00:00"},     /* starred dow: dom alone */
        {"0 9 * * mon-fri", "2024-09-06 09:00", "2024-09-09 09:00"}, /* Fri -> Mon */
        {"0 0 * * 7", "2024-09-01 00:00", "2024-09-08 00:00"},     /* 7 is Sunday */
        {"0 0 * * SUN", "2024-09-01 00:00", "2024-09-08 00:00"},
        {"30 4 1,15 * *", "2024-09-01 04:30", "2024-09-15 04:30"},
        {"0 0 1 jan,jul *", "2024-02-01 00:00", "2024-07-01 00:00"},
        {"0 22 * * 1-5/2", "2024-09-09 22:00", "2024-09-11 22:00"}, /* Mon, Wed, Fri */
        {"59 23 31 12 *", "2024-12-31 23:58", "2024-12-31 23:59"},
        {"0 0 * * *", "2024-02-28 23:30", "2024-02-29 00:00"},     /* leap day exists */
        {"0 0 29 * *", "2023-02-01 00:00", "2023-03-29 00:00"},    /* 2023: no Feb 29 */
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cron_t c;
        char err[160], got[32];
        if (cron_parse(rows[i].expr, &c, err, sizeof err) != 0) {
            printf("\n  row %zu \"%s\": %s", i, rows[i].expr, err);
            bad++;
            continue;
        }
        show(cron_next(&c, at(rows[i].after)), got, sizeof got);
        if (strcmp(got, rows[i].want) != 0) {
            printf("\n  row %zu \"%s\" after %s: got %s, want %s", i, rows[i].expr,
                   rows[i].after, got, rows[i].want);
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_parse_refusals(void)
{
    static const text_case_t rows[] = {
        {"", "want 5 fields"},
        {"* * * *", "got 4"},
        {"* * * * * *", "more than 5 fields"},
        {"60 * * * *", "minute: \"60\": out of range 0-59"},
        {"* 24 * * *", "hour"},
        {"* * 0 * *", "day-of-month: \"0\": out of range 1-31"},
        {"* * 32 * *", "day-of-month"},
        {"* * * 13 *", "month"},
        {"* * * * 8", "day-of-week"},
        {"* * * * mon-fry", "day-of-week: \"mon-fry\": not a number or name"},
        {"*/0 * * * *", "bad step"},
        {"5-1 * * * *", "out of range"},
        {"1,,2 * * * *", "empty list element"},
        {"-1 * * * *", "not a number"},
        {"@every 5m", "unknown macro"},
        {"* * * jan-dez *", "month"},
        {"* * ? * *", "day-of-month"},
        {"* * L * *", "day-of-month"},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cron_t c;
        char err[160] = "";
        if (cron_parse(rows[i].in, &c, err, sizeof err) == 0 ||
            !strstr(err, rows[i].want)) {
            printf("\n  \"%s\": err \"%s\", want it to contain \"%s\"", rows[i].in, err,
                   rows[i].want);
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_parse_bits(void)
{
    cron_t c;
    char err[160];
    CU_ASSERT_EQUAL_FATAL(cron_parse(" 0,30  9-17/4\t* Jan-MAR 1-5 ", &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.minutes, (1ULL << 0) | (1ULL << 30));
    CU_ASSERT_EQUAL(c.hours, (1U << 9) | (1U << 13) | (1U << 17));
    CU_ASSERT_EQUAL(c.months, (1U << 1) | (1U << 2) | (1U << 3));
    CU_ASSERT_EQUAL(c.dows, 0x3eU);
    CU_ASSERT_TRUE(c.dom_star);
    CU_ASSERT_FALSE(c.dow_star);
    CU_ASSERT_EQUAL(cron_parse("@DAILY", &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.minutes, 1ULL);
    CU_ASSERT_EQUAL(c.dows, 0x7fU);
}

static void test_due(void)
{
    cron_t c;
    char err[160];
    int64_t sched = 0, next = 0;
    CU_ASSERT_EQUAL_FATAL(cron_parse("*/10 * * * *", &c, err, sizeof err), 0);
    /* Never run, created 09:05: the first time is 09:10; not due at 09:09. */
    CU_ASSERT_EQUAL(cron_due(&c, 0, at("2024-01-01 09:05"), at("2024-01-01 09:09"), &sched, &next), 0);
    CU_ASSERT_EQUAL(next, at("2024-01-01 09:10"));
    /* Due at 09:10 exactly. */
    CU_ASSERT_EQUAL(cron_due(&c, 0, at("2024-01-01 09:05"), at("2024-01-01 09:10"), &sched, &next), 1);
    CU_ASSERT_EQUAL(sched, at("2024-01-01 09:10"));
    CU_ASSERT_EQUAL(next, at("2024-01-01 09:20"));
    /* Ran 09:10, the operator was down until 11:43: one run, for 11:40, not 15. */
    CU_ASSERT_EQUAL(cron_due(&c, at("2024-01-01 09:10"), 0, at("2024-01-01 11:43") + 17, &sched,
                             &next), 1);
    CU_ASSERT_EQUAL(sched, at("2024-01-01 11:40"));
    CU_ASSERT_EQUAL(next, at("2024-01-01 11:50"));
    /* Ran 11:40 already: nothing due at 11:45. */
    CU_ASSERT_EQUAL(cron_due(&c, at("2024-01-01 11:40"), 0, at("2024-01-01 11:45"), &sched, &next), 0);
    /* Down for three days, every minute: the latest minute, bounded stepping. */
    CU_ASSERT_EQUAL_FATAL(cron_parse("* * * * *", &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(cron_due(&c, at("2024-01-01 00:00"), 0, at("2024-01-04 07:31") + 59, &sched,
                             &next), 1);
    CU_ASSERT_EQUAL(sched, at("2024-01-04 07:31"));
    /* A schedule that never fires is never due, and has no next time. */
    CU_ASSERT_EQUAL_FATAL(cron_parse("0 0 30 2 *", &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(cron_due(&c, 0, at("2024-01-01 00:00"), at("2030-01-01 00:00"), &sched, &next), 0);
    CU_ASSERT_EQUAL(next, -1);
}

/* cron_period: the longest interval between fire times beginning in the week after now,
 * the first one always. */
static void test_period_table(void)
{
    static const struct {
        const char *expr, *now;
        int64_t want; /* seconds, -1: none */
    } rows[] = {
        {"*/5 * * * *", "2024-01-01 00:02", 300},
        {"0 3 * * *", "2024-01-01 12:00", 86400},
        {"@weekly", "2024-01-03 00:00", 7 * 86400},
        {"0 3 * * 1-5", "2024-01-15 00:00", 3 * 86400},   /* Monday: the weekend ahead */
        {"0 3 * * 1-5", "2024-01-20 12:00", 3 * 86400},   /* Saturday: the next weekend */
        {"0 9-17 * * 1-5", "2024-01-16 10:00", 64 * 3600}, /* Tuesday: Fri 17:00 to Mon 09:00 */
        {"0 0 1 * *", "2024-01-15 00:00", 29 * 86400},    /* Feb 1 to Mar 1 of a leap year */
        {"0 0 1 * *", "2024-02-15 00:00", 31 * 86400},
        {"0 12 29 2 *", "2024-03-01 00:00", 1461 * 86400}, /* 2028 to 2032 */
        {"0 0 30 2 *", "2024-01-01 00:00", -1},
        /* every minute in office hours: 2048 fire times (34 hours) see a night, not the weekend */
        {"* 9-17 * * 1-5", "2024-01-16 10:00", 15 * 3600 + 60},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cron_t c;
        char err[160];
        CU_ASSERT_EQUAL_FATAL(cron_parse(rows[i].expr, &c, err, sizeof err), 0);
        int64_t got = cron_period(&c, at(rows[i].now));
        if (got != rows[i].want) {
            printf("\n  \"%s\" at %s: %lld, want %lld", rows[i].expr, rows[i].now, (long long)got,
                   (long long)rows[i].want);
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_retention_table(void)
{
    static const backup_ref_t b[] = {
        {"b-0100", 100, BACKUP_SUCCEEDED}, /* 0 */
        {"b-0200", 200, BACKUP_FAILED},    /* 1 */
        {"b-0300", 300, BACKUP_SUCCEEDED}, /* 2 */
        {"b-0400", 400, BACKUP_SUCCEEDED}, /* 3 */
        {"b-0500", 500, BACKUP_FAILED},    /* 4 */
        {"b-0600", 600, BACKUP_RUNNING},   /* 5 */
        {"b-0050", 50, BACKUP_RUNNING},    /* 6: an old one still running: never deleted */
        {"b-0400b", 400, BACKUP_SUCCEEDED},/* 7: same time as 3, newer by name */
    };
    static const struct {
        int keep_ok, keep_failed;
        size_t n;
        const char *want; /* indexes deleted, oldest first */
    } rows[] = {
        {3, 1, 8, "0 1"},     /* succeeded kept: 7, 3, 2; failed kept: 4 */
        {2, 1, 8, "0 1 2"},   /* oldest first, both states together */
        {1, 0, 8, "0 1 2 3 4"},
        {0, 0, 8, "0 1 2 3 4"}, /* keep 0 means 1: 7 stays */
        {10, 10, 8, ""},
        {1, 5, 5, "0 2"},     /* 3 kept; both failed kept */
        {2, -1, 2, "1"},      /* keep_failed < 0 is 0 */
        {3, 3, 0, ""},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        size_t del[8], nd = retention_pick(b, rows[i].n, rows[i].keep_ok, rows[i].keep_failed, del);
        char got[64] = "";
        size_t len = 0;
        for (size_t j = 0; j < nd; j++)
            len += (size_t)snprintf(got + len, sizeof got - len, "%s%zu", j ? " " : "", del[j]);
        if (strcmp(got, rows[i].want) != 0) {
            printf("\n  row %zu: deleted \"%s\", want \"%s\"", i, got, rows[i].want);
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static const cu_entry_t tests[] = {
    CU_SUITE("cron"),
    {"next fire time: month ends, Feb 29, the OR rule, names, steps", test_next_table},
    {"refusals name the field and the fault", test_parse_refusals},
    {"fields as bits; macros", test_parse_bits},
    {"due runs: first run, catch-up after an outage, never", test_due},
    {"the period: the longest interval of the coming week", test_period_table},
    CU_SUITE("retention"),
    {"keep N succeeded and M failed, never a running one", test_retention_table},
};
CU_MAIN(tests)
