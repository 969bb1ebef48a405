/* schedule: the decisions of spec.backup.schedule, as pure functions: when a cron
 * schedule fires next, whether a run is due, and which backups retention deletes.
 *
 * CRON. The standard five fields, as Kubernetes CronJobs read them (robfig/cron's
 * standard parser, itself Vixie cron's language):
 *
 *   minute 0-59   hour 0-23   day-of-month 1-31   month 1-12 or jan-dec   day-of-week 0-7
 *   or sun-sat (0 and 7 are Sunday)
 *
 * Each field is a comma-separated list of: "*", a value, a range "a-b", and any of these
 * with a step "/n" ("*\/15", "1-30/2", and "5/15", which means 5-max/15 as robfig's and
 * not Vixie's). Names are case-insensitive and allowed in ranges ("mon-fri"). The macros
 * @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly stand for their
 * five fields. Fields are separated by spaces or tabs. No seconds field, no "?", "L", "W"
 * or "#" (not in the standard; a CronJob refuses them too), no time zone: UTC always.
 *
 * Day-of-month and day-of-week: when both are restricted (neither begins with "*"), a day
 * matches when EITHER does (Vixie cron's OR rule: "0 0 13 * 5" fires every 13th and every
 * Friday); when one begins with "*" (also "*\/2"), only the other one counts.
 *
 * No Debian package parses cron expressions for C (cron and its forks parse their own
 * files in their binaries; no library is shipped), so the parser is ours, in this file's
 * .c, with a table test of its edge cases (tests/unit/test_schedule.c).
 *
 * RETENTION. Of the backups a schedule made: the keep_succeeded newest successful ones
 * are kept and older successful ones deleted; the keep_failed newest failed ones are kept
 * (so a user sees why the latest runs failed) and older failed ones deleted; a running
 * one is never deleted. "Newest" is by time, then by name (for equal times).
 *
 * Pure: no clock read (times are inputs, Unix seconds UTC), no I/O, no allocation.
 */
#ifndef RDC_SCHEDULE_H
#define RDC_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t minutes; /* bit m: minute m (0-59) */
    uint32_t hours;   /* bit h: 0-23 */
    uint32_t doms;    /* bit d: 1-31 */
    uint32_t months;  /* bit m: 1-12 */
    uint32_t dows;    /* bit d: 0-6, Sunday 0 */
    int dom_star;     /* the day-of-month field began with '*' */
    int dow_star;     /* the day-of-week field began with '*' */
} cron_t;

/* Parses expr into *c: 0, or -1 with err naming the field and the fault ("day-of-week:
 * \"mon-fry\": not a number or name"); *c is then zeroed. */
int cron_parse(const char *expr, cron_t *c, char *err, size_t errlen);

/* The first time the schedule fires strictly after t (Unix seconds, UTC; a whole minute),
 * or -1 when it fires on no day within the next 10 years ("0 0 30 2 *": February 30th). */
int64_t cron_next(const cron_t *c, int64_t t);

/* Whether a run is due at now, given the time the last one was scheduled for (last; 0 =
 * never: then the schedule's first time after created counts): 1 when a fire time lies
 * in (last, now], and *scheduled gets the LATEST such time (missed ones are not run one
 * by one, as a CronJob with concurrencyPolicy Forbid catches up once). *next gets the
 * first fire time after now (-1: none), when to look again. */
int cron_due(const cron_t *c, int64_t last, int64_t created, int64_t now, int64_t *scheduled,
             int64_t *next);

/* PERIOD (docs/backup.md "Metrics"): the schedule's period as the alert on backups reads
 * it: the longest interval between consecutive fire times among those that begin within
 * CRON_PERIOD_SPAN seconds after now (the first one always: the interval between the next
 * two fire times), looking at CRON_PERIOD_MAX_FIRES fire times at most. For a regular
 * schedule ("*\/5 * * * *", "0 3 * * *") that is the interval between any two runs; for
 * "0 3 * * 1-5" it is the weekend's three days, not the weekday's one, so "no success
 * within twice the period" does not hold every Sunday. Unix seconds; -1 when the schedule
 * fires fewer than twice within cron_next's 10 years. */
#define CRON_PERIOD_SPAN (7 * 86400)
#define CRON_PERIOD_MAX_FIRES 2048
int64_t cron_period(const cron_t *c, int64_t now);

typedef enum { BACKUP_RUNNING, BACKUP_SUCCEEDED, BACKUP_FAILED } backup_state_t;

typedef struct {
    const char *name;     /* the RedisBackup's name (ties of time are broken by it) */
    int64_t time;         /* when it was scheduled or started */
    backup_state_t state;
} backup_ref_t;

/* Retention over the n backups of one schedule: writes the indexes (into b) of those to
 * delete into del (room for n), oldest first, and returns their count. keep_succeeded
 * below 1 counts as 1: retention never deletes the last good backup. keep_failed < 0
 * counts as 0. */
size_t retention_pick(const backup_ref_t *b, size_t n, int keep_succeeded, int keep_failed,
                      size_t *del);

#endif
