/* Unit tests of electord's election state machine, over a fake clock and a fake Lease
 * store that behaves as the API server does for one Lease: it rejects a write whose
 * resourceVersion is stale (409 Conflict) and a create when the Lease exists. */
#include "clock.h"
#include "../../electord/election.h"
#include "cu_table.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SEC(x) ((int64_t)(x) * NS_PER_SEC)
#define MSEC(x) ((int64_t)(x) * NS_PER_MS)
#define PLAIN (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define WALL0 (INT64_C(1714564800) * NS_PER_SEC) /* 2024-05-01T12:00:00Z */

/* ---- fake Lease store ---------------------------------------------------------------- */

typedef struct {
    election_record_t rec; /* rec.exists 0: no Lease */
    long rv;
    int writes;
    int64_t now_ms, changed_at_ms; /* the simulation's clock; when the spec last changed */
} store_t;

static int same_spec(const election_record_t *a, const election_record_t *b)
{
    return a->exists == b->exists && strcmp(a->holder, b->holder) == 0 &&
           a->lease_duration_s == b->lease_duration_s &&
           a->acquire_time_wall_ns == b->acquire_time_wall_ns &&
           a->renew_time_wall_ns == b->renew_time_wall_ns && a->transitions == b->transitions;
}

static void store_apply(store_t *s, const election_record_t *r)
{
    election_record_t next = *r;
    next.exists = 1;
    if (!same_spec(&s->rec, &next))
        s->changed_at_ms = s->now_ms;
    s->rec = *r;
    s->rec.exists = 1;
    snprintf(s->rec.resource_version, sizeof(s->rec.resource_version), "%ld", ++s->rv);
    s->writes++;
}

/* A write as the API server judges it; on success rv_out gets the new resourceVersion. */
static election_write_status_t store_write(store_t *s, election_action_t action,
                                           const election_record_t *r, char *rv_out,
                                           size_t rvlen)
{
    if (action == ELECTION_CREATE && s->rec.exists)
        return ELECTION_WRITE_CONFLICT; /* AlreadyExists */
    if (action == ELECTION_UPDATE) {
        if (!s->rec.exists)
            return ELECTION_WRITE_ERROR; /* NotFound */
        if (strcmp(r->resource_version, s->rec.resource_version) != 0)
            return ELECTION_WRITE_CONFLICT;
    }
    store_apply(s, r);
    snprintf(rv_out, rvlen, "%s", s->rec.resource_version);
    return ELECTION_WRITE_OK;
}

/* Another client (client-go, say) writes the Lease. */
static void store_put_foreign(store_t *s, const char *holder, int64_t duration_s,
                              int64_t renew_wall, int64_t transitions)
{
    election_record_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.holder, sizeof(r.holder), "%s", holder);
    r.lease_duration_s = duration_s;
    r.acquire_time_wall_ns = renew_wall;
    r.renew_time_wall_ns = renew_wall;
    r.transitions = transitions;
    store_apply(s, &r);
}

/* ---- helpers ------------------------------------------------------------------------- */

static election_config_t config(const char *identity, uint64_t seed)
{
    election_config_t c = {
        .id = "rdc-operator-leader",
        .identity = identity,
        .lease_duration_ns = ELECTION_DEFAULT_LEASE_DURATION_NS,
        .renew_deadline_ns = ELECTION_DEFAULT_RENEW_DEADLINE_NS,
        .retry_period_ns = ELECTION_DEFAULT_RETRY_PERIOD_NS,
        .seed = seed,
    };
    return c;
}

static election_t *make(const char *identity, uint64_t seed)
{
    election_config_t c = config(identity, seed);
    char err[256] = "";
    election_t *e = election_new(&c, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    return e;
}

typedef struct {
    election_action_t action;
    election_record_t written;
    election_write_status_t status;
    unsigned events;
} attempt_t;

/* One attempt as the shell makes it: GET (or a failed GET), step, write, report. */
static attempt_t attempt(election_t *e, store_t *s, int64_t mono, int64_t wall, int get_fails,
                         int write_fails)
{
    attempt_t a;
    memset(&a, 0, sizeof(a));
    election_record_t obs = s->rec;
    election_decision_t d;
    CU_ASSERT_EQUAL(election_step(e, mono, wall, get_fails ? NULL : &obs, &d), 0);
    a.action = d.action;
    a.written = d.record;
    a.events = d.events;
    if (d.action != ELECTION_WAIT) {
        char rv[ELECTION_RV_MAX] = "";
        a.status = write_fails ? ELECTION_WRITE_ERROR
                               : store_write(s, d.action, &d.record, rv, sizeof(rv));
        unsigned ev = 0;
        CU_ASSERT_EQUAL(election_write_result(e, mono, a.status, rv, &ev), 0);
        a.events |= ev;
    }
    return a;
}

/* ---- flags --------------------------------------------------------------------------- */

static void test_config_validation(void)
{
    char err[256];
    election_config_t c = config("node-1_abc", 1);
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), 0);

    c.lease_duration_ns = SEC(10); /* 10/10/2 */
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "lease duration 10s must be greater than renew deadline 10s"));

    c = config("me", 1);
    c.retry_period_ns = SEC(9); /* 15/10/9: 10 <= 10.8 */
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "renew deadline 10s must be greater than 1.2 x retry period 9s (10800ms)"));

    /* Exactly 1.2 x is refused, as client-go's <= check does; just above is fine. */
    c = config("me", 1);
    c.renew_deadline_ns = SEC(12);
    c.retry_period_ns = SEC(10);
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
    c.retry_period_ns = SEC(10) - 1;
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), 0);

    const int64_t bad[] = {0, -SEC(1)};
    for (size_t i = 0; i < 2; i++) {
        c = config("me", 1);
        c.lease_duration_ns = bad[i];
        CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "lease duration must be greater than zero"));
        c = config("me", 1);
        c.renew_deadline_ns = bad[i];
        CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "renew deadline must be greater than zero"));
        c = config("me", 1);
        c.retry_period_ns = bad[i];
        CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "retry period must be greater than zero"));
    }
    c = config("me", 1);
    c.lease_duration_ns = c.renew_deadline_ns = c.retry_period_ns = 0;
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);

    c = config("me", 1);
    c.lease_duration_ns = MSEC(15500);
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "whole number of seconds"));

    c = config("me", 1);
    c.lease_duration_ns = SEC(48 * 3600);
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);

    c = config("me", 1);
    c.safety_margin_ns = SEC(15);
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
    c.safety_margin_ns = -1;
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);

    c = config("", 1);
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "identity"));
    c = config("me", 1);
    c.id = NULL;
    CU_ASSERT_EQUAL(election_validate_config(&c, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(election_validate_config(NULL, err, sizeof(err)), -1);

    c = config("me", 1);
    c.lease_duration_ns = SEC(10);
    err[0] = '\0';
    CU_ASSERT_PTR_NULL(election_new(&c, err, sizeof(err)));
    CU_ASSERT_NOT_EQUAL(err[0], '\0');
}

/* ---- acquiring and renewing ------------------------------------------------------------ */

static void test_acquire_fresh_and_renew(void)
{
    store_t s;
    memset(&s, 0, sizeof(s));
    election_t *a = make("a", 1);
    CU_ASSERT_TRUE(election_attempt_due(a, SEC(100)));
    CU_ASSERT_FALSE(election_is_leader(a));
    CU_ASSERT_EQUAL(election_epoch(a), -1);
    CU_ASSERT_FALSE(election_may_write(a, SEC(100)));

    attempt_t r = attempt(a, &s, SEC(100), WALL0 + 123456789, 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_CREATE);
    CU_ASSERT_EQUAL(r.status, ELECTION_WRITE_OK);
    CU_ASSERT_STRING_EQUAL(r.written.holder, "a");
    CU_ASSERT_EQUAL(r.written.lease_duration_s, 15);
    CU_ASSERT_EQUAL(r.written.transitions, 0); /* client-go creates with 0 */
    CU_ASSERT_EQUAL(r.written.acquire_time_wall_ns, WALL0 + 123456000); /* MicroTime */
    CU_ASSERT_EQUAL(r.written.renew_time_wall_ns, WALL0 + 123456000);
    CU_ASSERT_STRING_EQUAL(r.written.resource_version, "");
    CU_ASSERT_EQUAL(r.events, ELECTION_EV_BECAME_LEADER | ELECTION_EV_NEW_LEADER);
    CU_ASSERT_STRING_EQUAL(election_holder(a), "a");
    CU_ASSERT_TRUE(election_is_leader(a));
    CU_ASSERT_EQUAL(election_epoch(a), 0);
    CU_ASSERT_TRUE(election_may_write(a, SEC(100)));
    CU_ASSERT_EQUAL(election_fence_deadline(a), SEC(110));
    CU_ASSERT_TRUE(election_may_write(a, SEC(110) - 1));
    CU_ASSERT_FALSE(election_may_write(a, SEC(110)));

    /* The renew loop: every retry period, no jitter. */
    CU_ASSERT_EQUAL(election_next_wakeup(a), SEC(102));
    CU_ASSERT_FALSE(election_attempt_due(a, SEC(102) - 1));
    CU_ASSERT_TRUE(election_attempt_due(a, SEC(102)));
    r = attempt(a, &s, SEC(102), WALL0 + SEC(2), 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_UPDATE);
    CU_ASSERT_STRING_EQUAL(r.written.resource_version, "1"); /* precondition: the rv read */
    CU_ASSERT_EQUAL(r.written.acquire_time_wall_ns, WALL0 + 123456000);
    CU_ASSERT_EQUAL(r.written.renew_time_wall_ns, WALL0 + SEC(2));
    CU_ASSERT_EQUAL(r.written.transitions, 0);
    CU_ASSERT_EQUAL(r.status, ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(r.events, 0);
    CU_ASSERT_EQUAL(election_fence_deadline(a), SEC(112));
    CU_ASSERT_EQUAL(election_epoch(a), 0);

    /* client-go's fast path: renew from the cached record without a GET. */
    election_decision_t d;
    CU_ASSERT_EQUAL(election_step_cached(a, SEC(104), WALL0 + SEC(4), &d), 0);
    CU_ASSERT_EQUAL(d.action, ELECTION_UPDATE);
    CU_ASSERT_STRING_EQUAL(d.record.resource_version, "2");
    CU_ASSERT_EQUAL(d.record.renew_time_wall_ns, WALL0 + SEC(4));
    char rv[ELECTION_RV_MAX];
    CU_ASSERT_EQUAL(store_write(&s, d.action, &d.record, rv, sizeof(rv)), ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(104), ELECTION_WRITE_OK, rv, NULL), 0);
    CU_ASSERT_EQUAL(election_fence_deadline(a), SEC(114));

    /* A failed fast path makes the next attempt a GET, at once. */
    CU_ASSERT_EQUAL(election_step_cached(a, SEC(106), WALL0 + SEC(6), &d), 0);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(106), ELECTION_WRITE_CONFLICT, NULL, NULL), 0);
    CU_ASSERT_TRUE(election_attempt_due(a, SEC(106)));
    CU_ASSERT_EQUAL(election_step_cached(a, SEC(106), WALL0 + SEC(6), &d), ELECTION_NOTHING);
    r = attempt(a, &s, SEC(106), WALL0 + SEC(6), 0, 0);
    CU_ASSERT_EQUAL(r.status, ELECTION_WRITE_OK);
    CU_ASSERT_TRUE(election_is_leader(a));
    CU_ASSERT_EQUAL(election_fence_deadline(a), SEC(116));

    /* Past the fence the fast path declines and changes nothing; the slow path (or the
     * tick) reports the step-down. */
    CU_ASSERT_EQUAL(election_step_cached(a, SEC(116), WALL0 + SEC(16), &d), ELECTION_NOTHING);
    CU_ASSERT_EQUAL(d.action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(d.events, 0);
    CU_ASSERT_TRUE(election_is_leader(a));
    r = attempt(a, &s, SEC(116), WALL0 + SEC(16), 0, 0);
    CU_ASSERT(r.events & ELECTION_EV_LOST);
    CU_ASSERT_EQUAL(r.action, ELECTION_WAIT); /* the Lease names a: a new term must wait */
    CU_ASSERT_FALSE(election_is_leader(a));

    /* The fast path is for leaders only. */
    election_t *b = make("b", 2);
    CU_ASSERT_EQUAL(election_step_cached(b, SEC(106), WALL0, &d), ELECTION_NOTHING);
    CU_ASSERT_EQUAL(d.action, ELECTION_WAIT);
    election_destroy(&b);
    election_destroy(&a);
    CU_ASSERT_PTR_NULL(a);
    election_destroy(&a); /* twice is fine */
    election_destroy(NULL);
}

static void test_wait_on_live_foreign_lease(void)
{
    store_t s;
    memset(&s, 0, sizeof(s));
    store_put_foreign(&s, "other_1234", 15, WALL0, 3);
    election_t *b = make("b", 2);
    int writes_before = s.writes;
    int64_t t = SEC(1000);
    attempt_t r = attempt(b, &s, t, WALL0, 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(r.events, ELECTION_EV_NEW_LEADER);
    CU_ASSERT_STRING_EQUAL(election_holder(b), "other_1234");
    CU_ASSERT_EQUAL(election_observed_transitions(b), 3);

    /* The holder keeps renewing (client-go: every 2 s) for ten minutes: never taken. */
    int64_t next_renew = t + SEC(2);
    int waits = 0;
    while (t < SEC(1600)) {
        t = election_next_wakeup(b);
        while (next_renew <= t) {
            store_put_foreign(&s, "other_1234", 15, WALL0 + (next_renew - SEC(1000)), 3);
            writes_before++;
            next_renew += SEC(2);
        }
        r = attempt(b, &s, t, WALL0 + (t - SEC(1000)), 0, 0);
        CU_ASSERT_EQUAL(r.action, ELECTION_WAIT);
        CU_ASSERT_EQUAL(r.events, 0);
        CU_ASSERT_FALSE(election_is_leader(b));
        waits++;
    }
    CU_ASSERT(waits > 100);
    CU_ASSERT_EQUAL(s.writes, writes_before); /* b wrote nothing */

    /* Renewing less often than the lease duration is still renewing. */
    t = election_next_wakeup(b);
    for (int i = 0; i < 40; i++) {
        if (i % 7 == 0)
            store_put_foreign(&s, "other_1234", 15, WALL0 + t, 3);
        r = attempt(b, &s, t, WALL0 + t, 0, 0);
        CU_ASSERT_EQUAL(r.action, ELECTION_WAIT);
        t += SEC(2); /* 7 x 2 s = 14 s between renews < 15 s */
    }
    election_destroy(&b);
}

static void test_take_over_expired_lease(void)
{
    store_t s;
    memset(&s, 0, sizeof(s));
    store_put_foreign(&s, "other_1234", 15, WALL0 - SEC(3600), 3);
    election_t *b = make("b", 3);
    /* First sight at 1000 s; nothing changes afterwards. */
    CU_ASSERT_EQUAL(attempt(b, &s, SEC(1000), WALL0, 0, 0).action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(attempt(b, &s, SEC(1010), WALL0 + SEC(10), 0, 0).action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(attempt(b, &s, SEC(1015) - 1, WALL0 + SEC(15), 0, 0).action, ELECTION_WAIT);
    CU_ASSERT_FALSE(election_is_leader(b));

    attempt_t r = attempt(b, &s, SEC(1015), WALL0 + SEC(15), 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_UPDATE);
    CU_ASSERT_STRING_EQUAL(r.written.resource_version, "1");
    CU_ASSERT_STRING_EQUAL(r.written.holder, "b");
    CU_ASSERT_EQUAL(r.written.transitions, 4);
    CU_ASSERT_EQUAL(r.written.acquire_time_wall_ns, WALL0 + SEC(15));
    CU_ASSERT_EQUAL(r.written.renew_time_wall_ns, WALL0 + SEC(15));
    CU_ASSERT_EQUAL(r.written.lease_duration_s, 15);
    CU_ASSERT_EQUAL(r.status, ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(r.events, ELECTION_EV_BECAME_LEADER | ELECTION_EV_NEW_LEADER);
    CU_ASSERT_TRUE(election_is_leader(b));
    CU_ASSERT_EQUAL(election_epoch(b), 4);
    CU_ASSERT_STRING_EQUAL(s.rec.holder, "b");
    CU_ASSERT_EQUAL(s.rec.transitions, 4);

    /* A Lease with no holder (released) is free at once; one without a duration too. */
    store_put_foreign(&s, "", 1, WALL0, 9);
    election_t *c = make("c", 4);
    r = attempt(c, &s, SEC(5), WALL0, 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_UPDATE);
    CU_ASSERT_EQUAL(r.written.transitions, 10);
    CU_ASSERT_TRUE(election_is_leader(c));
    election_destroy(&c);
    store_put_foreign(&s, "x", 0, WALL0, 11);
    c = make("c", 4);
    CU_ASSERT_EQUAL(attempt(c, &s, SEC(5), WALL0, 0, 0).action, ELECTION_UPDATE);
    CU_ASSERT_EQUAL(election_epoch(c), 12);
    election_destroy(&c);
    election_destroy(&b);
}

static void test_foreign_clock_skew_has_no_effect(void)
{
    const int64_t skews[] = {-SEC(5 * 3600), SEC(5 * 3600)};
    for (size_t i = 0; i < 2; i++) {
        store_t s;
        memset(&s, 0, sizeof(s));
        int64_t theirs = WALL0 + skews[i];
        store_put_foreign(&s, "other", 15, theirs, 0);
        election_t *b = make("b", 5);
        /* Renewed hours ago by their clock: still live, because we only just saw it. */
        for (int64_t t = 0; t < SEC(15); t += SEC(2))
            CU_ASSERT_EQUAL(attempt(b, &s, SEC(50) + t, WALL0 + t, 0, 0).action, ELECTION_WAIT);
        /* It keeps changing with their skewed clock (every 10 s): still live. */
        int64_t last_change = 0;
        for (int k = 0; k < 50; k++) {
            int64_t t = SEC(15) + k * SEC(2);
            if (k % 5 == 0) {
                store_put_foreign(&s, "other", 15, theirs + t, 0);
                last_change = t;
            }
            CU_ASSERT_EQUAL(attempt(b, &s, SEC(50) + t, WALL0 + t, 0, 0).action, ELECTION_WAIT);
        }
        /* It stops changing: taken 15 s after we last saw a change, whatever it says
         * (even renewTime hours in OUR future). */
        CU_ASSERT_EQUAL(attempt(b, &s, SEC(50) + last_change + SEC(15) - 1, WALL0, 0, 0).action,
                        ELECTION_WAIT);
        attempt_t r = attempt(b, &s, SEC(50) + last_change + SEC(15), WALL0, 0, 0);
        CU_ASSERT_EQUAL(r.action, ELECTION_UPDATE);
        CU_ASSERT_TRUE(election_is_leader(b));
        CU_ASSERT_EQUAL(election_epoch(b), 1);
        election_destroy(&b);
    }
}

static void test_conflict_loses_the_race(void)
{
    store_t s;
    memset(&s, 0, sizeof(s));
    election_t *a = make("a", 1), *b = make("b", 2);
    election_decision_t da, db;
    election_record_t none = s.rec;
    /* Both see NotFound and both create: one wins, the other gets AlreadyExists. */
    CU_ASSERT_EQUAL(election_step(a, SEC(10), WALL0, &none, &da), 0);
    CU_ASSERT_EQUAL(election_step(b, SEC(10), WALL0, &none, &db), 0);
    CU_ASSERT_EQUAL(da.action, ELECTION_CREATE);
    CU_ASSERT_EQUAL(db.action, ELECTION_CREATE);
    /* Stepping again before reporting the write is refused. */
    election_decision_t dx;
    CU_ASSERT_EQUAL(election_step(b, SEC(10), WALL0, &none, &dx), -1);
    CU_ASSERT_EQUAL(dx.action, ELECTION_WAIT);
    CU_ASSERT_FALSE(election_attempt_due(b, SEC(100)));

    char rv[ELECTION_RV_MAX] = "";
    unsigned ev = 0;
    CU_ASSERT_EQUAL(store_write(&s, da.action, &da.record, rv, sizeof(rv)), ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(10), ELECTION_WRITE_OK, rv, &ev), 0);
    CU_ASSERT(ev & ELECTION_EV_BECAME_LEADER);
    election_write_status_t st = store_write(&s, db.action, &db.record, rv, sizeof(rv));
    CU_ASSERT_EQUAL(st, ELECTION_WRITE_CONFLICT);
    CU_ASSERT_EQUAL(election_write_result(b, SEC(10), st, NULL, &ev), 0);
    CU_ASSERT_EQUAL(ev, 0);
    CU_ASSERT_FALSE(election_is_leader(b));
    CU_ASSERT_FALSE(election_may_write(b, SEC(10)));
    /* b retries a jittered retry period later, and then sees a's live Lease. */
    int64_t w = election_next_wakeup(b);
    CU_ASSERT(w >= SEC(12) && w < SEC(10) + MSEC(4400));
    attempt_t r = attempt(b, &s, w, WALL0 + SEC(3), 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_WAIT);
    CU_ASSERT_STRING_EQUAL(election_holder(b), "a");
    election_destroy(&a);
    election_destroy(&b);

    /* An update race on an expired Lease: both decide with the same resourceVersion. */
    memset(&s, 0, sizeof(s));
    store_put_foreign(&s, "old", 15, WALL0, 7);
    a = make("a", 1);
    b = make("b", 2);
    election_record_t seen = s.rec;
    CU_ASSERT_EQUAL(election_step(a, SEC(0), WALL0, &seen, &da), 0);
    CU_ASSERT_EQUAL(election_step(b, SEC(0), WALL0, &seen, &db), 0);
    CU_ASSERT_EQUAL(election_step(a, SEC(15), WALL0, &seen, &da), 0);
    CU_ASSERT_EQUAL(election_step(b, SEC(15), WALL0, &seen, &db), 0);
    CU_ASSERT_EQUAL(da.action, ELECTION_UPDATE);
    CU_ASSERT_EQUAL(db.action, ELECTION_UPDATE);
    CU_ASSERT_EQUAL(da.record.transitions, 8);
    CU_ASSERT_EQUAL(store_write(&s, db.action, &db.record, rv, sizeof(rv)), ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(election_write_result(b, SEC(15), ELECTION_WRITE_OK, rv, &ev), 0);
    st = store_write(&s, da.action, &da.record, rv, sizeof(rv));
    CU_ASSERT_EQUAL(st, ELECTION_WRITE_CONFLICT);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(15), st, NULL, &ev), 0);
    CU_ASSERT_FALSE(election_is_leader(a));
    CU_ASSERT_TRUE(election_is_leader(b));
    /* a's next look restarts its clock on b's record: no take-over for 15 s. */
    CU_ASSERT_EQUAL(attempt(a, &s, SEC(17), WALL0, 0, 0).action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(attempt(a, &s, SEC(31), WALL0, 0, 0).action, ELECTION_WAIT);
    election_destroy(&a);
    election_destroy(&b);
}

/* An empty Lease store s, and "a" (seed 1), which took the Lease at 100 s. */
static election_t *leader_a(store_t *s)
{
    memset(s, 0, sizeof(*s));
    election_t *a = make("a", 1);
    attempt(a, s, SEC(100), WALL0, 0, 0);
    CU_ASSERT_TRUE_FATAL(election_is_leader(a));
    return a;
}

/* ---- losing the Lease and fencing ------------------------------------------------------- */

static void test_renew_failure_steps_down_before_expiry(void)
{
    store_t s;
    memset(&s, 0, sizeof(s));
    election_t *a = make("a", 1), *b = make("b", 2);
    CU_ASSERT_EQUAL(attempt(a, &s, SEC(100), WALL0, 0, 0).status, ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(attempt(a, &s, SEC(102), WALL0 + SEC(2), 0, 0).status, ELECTION_WRITE_OK);
    /* b watches; its GET after the last successful renew comes half a second later. */
    CU_ASSERT_EQUAL(attempt(b, &s, MSEC(102500), WALL0, 0, 0).action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(election_fence_deadline(a), SEC(112));

    /* From now on every renew fails: GETs, then PUTs, then conflicts. */
    attempt_t r = attempt(a, &s, SEC(104), WALL0 + SEC(4), 1, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(election_next_wakeup(a), SEC(106));
    attempt(a, &s, SEC(106), WALL0 + SEC(6), 1, 0);
    r = attempt(a, &s, SEC(108), WALL0 + SEC(8), 0, 1);
    CU_ASSERT_EQUAL(r.action, ELECTION_UPDATE);
    CU_ASSERT_EQUAL(r.status, ELECTION_WRITE_ERROR);
    CU_ASSERT_TRUE(election_is_leader(a));
    CU_ASSERT_EQUAL(election_fence_deadline(a), SEC(112)); /* a failed renew buys nothing */
    attempt(a, &s, SEC(110), WALL0 + SEC(10), 0, 1);
    CU_ASSERT_EQUAL(election_next_wakeup(a), SEC(112));
    CU_ASSERT_TRUE(election_may_write(a, SEC(112) - 1));
    CU_ASSERT_FALSE(election_may_write(a, SEC(112))); /* before tick: the query is exact */
    CU_ASSERT_TRUE(election_is_leader(a));
    CU_ASSERT_EQUAL(election_tick(a, SEC(112) - 1), 0);
    CU_ASSERT_EQUAL(election_tick(a, SEC(112)), ELECTION_EV_LOST);
    CU_ASSERT_FALSE(election_is_leader(a));
    CU_ASSERT_EQUAL(election_epoch(a), -1);
    CU_ASSERT_EQUAL(election_fence_deadline(a), INT64_MIN);
    CU_ASSERT_EQUAL(election_tick(a, SEC(113)), 0); /* reported once */

    /* b, meanwhile, cannot take the Lease before 102.5 + 15 = 117.5 s > 112 s. */
    int64_t t = SEC(103);
    while (attempt(b, &s, t, WALL0, 0, 0).action == ELECTION_WAIT)
        t += MSEC(100);
    CU_ASSERT_EQUAL(t, MSEC(117500));
    CU_ASSERT(t > SEC(112));
    CU_ASSERT_TRUE(election_is_leader(b));
    CU_ASSERT_EQUAL(election_epoch(b), 1);

    /* a sees b's Lease and stays a follower. */
    r = attempt(a, &s, SEC(118), WALL0, 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(r.events, ELECTION_EV_NEW_LEADER);
    CU_ASSERT_STRING_EQUAL(election_holder(a), "b");
    election_destroy(&a);
    election_destroy(&b);
}

static void test_stepped_down_leader_starts_a_new_term(void)
{
    store_t s;
    election_t *a = leader_a(&s);
    CU_ASSERT_EQUAL(election_tick(a, SEC(110)), ELECTION_EV_LOST);
    /* The Lease still names a, but a's term is over: it waits for it to expire (15 s
     * after it last saw it change, at its own write at 100 s) like anyone would. */
    attempt_t r = attempt(a, &s, SEC(111), WALL0 + SEC(11), 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_WAIT);
    CU_ASSERT_FALSE(election_is_leader(a));
    CU_ASSERT_EQUAL(attempt(a, &s, SEC(115) - 1, WALL0, 0, 0).action, ELECTION_WAIT);
    r = attempt(a, &s, SEC(115), WALL0 + SEC(15), 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_UPDATE);
    CU_ASSERT_EQUAL(r.written.transitions, 1);
    CU_ASSERT_EQUAL(r.written.acquire_time_wall_ns, WALL0 + SEC(15));
    CU_ASSERT(r.events & ELECTION_EV_BECAME_LEADER);
    CU_ASSERT_EQUAL(election_epoch(a), 1); /* a new epoch for the new term */
    election_destroy(&a);
}

static void test_leader_steps_down_on_foreign_holder_or_deletion(void)
{
    store_t s;
    election_t *a = leader_a(&s);
    /* Someone overwrote the Lease: stop at once, not at the deadline. */
    store_put_foreign(&s, "rogue", 15, WALL0, 5);
    attempt_t r = attempt(a, &s, SEC(102), WALL0, 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(r.events, ELECTION_EV_LOST | ELECTION_EV_NEW_LEADER);
    CU_ASSERT_FALSE(election_may_write(a, SEC(102)));
    election_destroy(&a);

    /* The Lease was deleted under the leader: stop, then create it anew. */
    a = leader_a(&s);
    memset(&s.rec, 0, sizeof(s.rec));
    election_decision_t d;
    election_record_t gone = s.rec;
    CU_ASSERT_EQUAL(election_step(a, SEC(102), WALL0, &gone, &d), 0);
    CU_ASSERT_EQUAL(d.action, ELECTION_CREATE);
    CU_ASSERT(d.events & ELECTION_EV_LOST);
    CU_ASSERT(d.events & ELECTION_EV_NEW_LEADER); /* holder "" */
    CU_ASSERT_STRING_EQUAL(election_holder(a), "");
    CU_ASSERT_FALSE(election_may_write(a, SEC(102)));
    char rv[ELECTION_RV_MAX];
    unsigned ev;
    CU_ASSERT_EQUAL(store_write(&s, d.action, &d.record, rv, sizeof(rv)), ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(102), ELECTION_WRITE_OK, rv, &ev), 0);
    CU_ASSERT(ev & ELECTION_EV_BECAME_LEADER);
    CU_ASSERT_EQUAL(election_epoch(a), 0);
    election_destroy(&a);
}

static void test_slow_writes_buy_no_time(void)
{
    store_t s;
    memset(&s, 0, sizeof(s));
    election_t *a = make("a", 1);
    election_decision_t d;
    election_record_t obs = s.rec;
    char rv[ELECTION_RV_MAX];
    unsigned ev;
    /* An acquire whose answer comes after the fence window: not a term. */
    CU_ASSERT_EQUAL(election_step(a, SEC(100), WALL0, &obs, &d), 0);
    CU_ASSERT_EQUAL(store_write(&s, d.action, &d.record, rv, sizeof(rv)), ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(111), ELECTION_WRITE_OK, rv, &ev), 0);
    CU_ASSERT_EQUAL(ev, ELECTION_EV_NEW_LEADER);
    CU_ASSERT_FALSE(election_is_leader(a));
    CU_ASSERT_EQUAL(attempt(a, &s, SEC(125), WALL0, 0, 0).action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(attempt(a, &s, SEC(126), WALL0 + SEC(26), 0, 0).action, ELECTION_UPDATE);
    CU_ASSERT_TRUE(election_is_leader(a));
    CU_ASSERT_EQUAL(election_epoch(a), 1);

    /* A renew decided at 128 whose answer comes at 139: the fence (128 + 10) has
     * passed, so the leader steps down when it hears. */
    obs = s.rec;
    CU_ASSERT_EQUAL(election_step(a, SEC(128), WALL0 + SEC(28), &obs, &d), 0);
    CU_ASSERT_EQUAL(d.action, ELECTION_UPDATE);
    CU_ASSERT_EQUAL(store_write(&s, d.action, &d.record, rv, sizeof(rv)), ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(139), ELECTION_WRITE_OK, rv, &ev), 0);
    CU_ASSERT_EQUAL(ev, ELECTION_EV_LOST);
    CU_ASSERT_FALSE(election_is_leader(a));

    /* A record without a resourceVersion cannot be written over conditionally. */
    election_t *c = make("c", 9);
    election_record_t norv;
    memset(&norv, 0, sizeof(norv));
    snprintf(norv.holder, sizeof(norv.holder), "%s", "");
    norv.exists = 1;
    CU_ASSERT_EQUAL(election_step(c, SEC(1), WALL0, &norv, &d), 0);
    CU_ASSERT_EQUAL(d.action, ELECTION_WAIT);
    election_destroy(&c);

    /* Misuse: no write pending; OK without a resourceVersion counts as an error. */
    CU_ASSERT_EQUAL(election_write_result(a, SEC(140), ELECTION_WRITE_OK, "9", &ev), -1);
    election_destroy(&a);
    memset(&s, 0, sizeof(s));
    a = make("a", 1);
    obs = s.rec;
    CU_ASSERT_EQUAL(election_step(a, SEC(1), WALL0, &obs, &d), 0);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(1), ELECTION_WRITE_OK, "", &ev), -1);
    CU_ASSERT_FALSE(election_is_leader(a));
    CU_ASSERT_EQUAL(election_step(a, SEC(10), WALL0, &obs, &d), 0);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(10), ELECTION_WRITE_OK, NULL, &ev), -1);
    CU_ASSERT_FALSE(election_is_leader(a));
    election_destroy(&a);
}

static void test_renew_time_always_changes(void)
{
    store_t s;
    election_t *a = leader_a(&s);
    /* A frozen wall clock, then one stepped back an hour: observers must still see a
     * change on every renew, or they would not restart their clocks. */
    attempt_t r = attempt(a, &s, SEC(102), WALL0, 0, 0);
    CU_ASSERT_EQUAL(r.written.renew_time_wall_ns, WALL0 + 1000);
    r = attempt(a, &s, SEC(104), WALL0 - SEC(3600), 0, 0);
    CU_ASSERT_EQUAL(r.written.renew_time_wall_ns, WALL0 + 2000);
    CU_ASSERT_EQUAL(r.written.acquire_time_wall_ns, WALL0);
    CU_ASSERT_TRUE(election_is_leader(a));
    election_destroy(&a);
}

static void test_release_hands_over(void)
{
    store_t s;
    memset(&s, 0, sizeof(s));
    store_put_foreign(&s, "old", 15, WALL0, 5);
    election_t *a = make("a", 1), *b = make("b", 2);
    attempt(a, &s, SEC(0), WALL0, 0, 0);
    CU_ASSERT_EQUAL(attempt(a, &s, SEC(15), WALL0 + SEC(15), 0, 0).status, ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(election_epoch(a), 6);
    CU_ASSERT_EQUAL(attempt(b, &s, SEC(16), WALL0, 0, 0).action, ELECTION_WAIT);

    election_record_t rel;
    unsigned ev = 0;
    CU_ASSERT_EQUAL(election_release(a, SEC(17), WALL0 + SEC(17) + 999, &rel, &ev), 0);
    CU_ASSERT_EQUAL(ev, ELECTION_EV_LOST);
    CU_ASSERT_FALSE(election_may_write(a, SEC(17))); /* before the release is written */
    CU_ASSERT_FALSE(election_is_leader(a));
    CU_ASSERT_STRING_EQUAL(rel.holder, "");
    CU_ASSERT_EQUAL(rel.lease_duration_s, 1);
    CU_ASSERT_EQUAL(rel.transitions, 6);
    CU_ASSERT_EQUAL(rel.acquire_time_wall_ns, WALL0 + SEC(17));
    CU_ASSERT_EQUAL(rel.renew_time_wall_ns, WALL0 + SEC(17));
    CU_ASSERT_STRING_EQUAL(rel.resource_version, s.rec.resource_version);
    char rv[ELECTION_RV_MAX];
    CU_ASSERT_EQUAL(store_write(&s, ELECTION_UPDATE, &rel, rv, sizeof(rv)), ELECTION_WRITE_OK);
    CU_ASSERT_EQUAL(election_write_result(a, SEC(17), ELECTION_WRITE_OK, rv, &ev), 0);
    CU_ASSERT_EQUAL(ev, ELECTION_EV_NEW_LEADER);
    CU_ASSERT_STRING_EQUAL(election_holder(a), "");

    /* The standby takes it at its next retry, long before 15 s. */
    int64_t w = election_next_wakeup(b);
    CU_ASSERT(w < SEC(16) + MSEC(4400));
    attempt_t r = attempt(b, &s, w, WALL0 + SEC(19), 0, 0);
    CU_ASSERT_EQUAL(r.action, ELECTION_UPDATE);
    CU_ASSERT(r.events & ELECTION_EV_BECAME_LEADER);
    CU_ASSERT_EQUAL(election_epoch(b), 7);
    CU_ASSERT_EQUAL(s.rec.lease_duration_s, 15);

    /* The released machine is done. */
    CU_ASSERT_FALSE(election_attempt_due(a, SEC(1000)));
    CU_ASSERT_EQUAL(election_next_wakeup(a), INT64_MAX);
    election_decision_t d;
    election_record_t obs = s.rec;
    CU_ASSERT_EQUAL(election_step(a, SEC(1000), WALL0, &obs, &d), 0);
    CU_ASSERT_EQUAL(d.action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(d.wakeup_mono_ns, INT64_MAX);
    CU_ASSERT_EQUAL(election_release(a, SEC(1000), WALL0, &rel, &ev), ELECTION_NOTHING);
    election_destroy(&a);

    /* A follower has nothing to release. */
    election_t *c = make("c", 3);
    CU_ASSERT_EQUAL(attempt(c, &s, SEC(20), WALL0, 0, 0).action, ELECTION_WAIT);
    CU_ASSERT_EQUAL(election_release(c, SEC(21), WALL0, &rel, &ev), ELECTION_NOTHING);
    CU_ASSERT_EQUAL(ev, 0);
    election_destroy(&c);
    election_destroy(&b);
}

static void test_retry_jitter(void)
{
    store_t s;
    memset(&s, 0, sizeof(s));
    store_put_foreign(&s, "other", 15, WALL0, 0);
    election_t *b = make("b", 42);
    int64_t t = 0, lo = INT64_MAX, hi = 0;
    for (int i = 0; i < 500; i++) {
        if (i % 3 == 0)
            store_put_foreign(&s, "other", 15, WALL0 + t, 0);
        attempt(b, &s, t, WALL0, 0, 0);
        int64_t d = election_next_wakeup(b) - t;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
        t += d;
    }
    /* wait.Jitter(2s, 1.2): [2 s, 4.4 s), and it does spread. */
    CU_ASSERT(lo >= SEC(2));
    CU_ASSERT(hi < MSEC(4400));
    CU_ASSERT(hi - lo > SEC(2));
    election_destroy(&b);
}

static void test_make_identity(void)
{
    unsigned char rnd[16];
    for (int i = 0; i < 16; i++)
        rnd[i] = (unsigned char)i;
    char id[ELECTION_HOLDER_MAX];
    CU_ASSERT_EQUAL(election_make_identity("node-1", rnd, id, sizeof(id)), 0);
    CU_ASSERT_STRING_EQUAL(id, "node-1_00010203-0405-4607-8809-0a0b0c0d0e0f");
    char small[10];
    CU_ASSERT_EQUAL(election_make_identity("node-1", rnd, small, sizeof(small)), -1);
    CU_ASSERT_EQUAL(election_make_identity("", rnd, id, sizeof(id)), -1);
    char host[300];
    memset(host, 'h', sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    char big[400];
    CU_ASSERT_EQUAL(election_make_identity(host, rnd, big, sizeof(big)), -1);
}

/* ---- Lease JSON ---------------------------------------------------------------------- */

static void test_json_round_trip(void)
{
    election_record_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.holder, sizeof(r.holder), "node-1_00010203-0405-4607-8809-0a0b0c0d0e0f");
    r.lease_duration_s = 15;
    r.acquire_time_wall_ns = WALL0 + 123456000;
    r.renew_time_wall_ns = WALL0 + SEC(2) + 654321000;
    r.transitions = 7;
    snprintf(r.resource_version, sizeof(r.resource_version), "4242");
    r.exists = 1;

    char err[256];
    json_object *o = NULL;
    CU_ASSERT_EQUAL_FATAL(election_record_to_json(&r, "rdc-leader", "default", NULL, &o, err,
                                                  sizeof(err)),
                          0);
    const char *txt = json_object_to_json_string_ext(o, PLAIN);
    ASSERT_TEXT_HAS(txt, "\"apiVersion\":\"coordination.k8s.io/v1\"", "\"kind\":\"Lease\"",
                    "\"name\":\"rdc-leader\"", "\"namespace\":\"default\"", "\"resourceVersion\":\"4242\"",
                    "\"leaseDurationSeconds\":15", "\"acquireTime\":\"2024-05-01T12:00:00.123456Z\"",
                    "\"renewTime\":\"2024-05-01T12:00:02.654321Z\"", "\"leaseTransitions\":7");

    /* Back through text, as it travels. */
    json_object *p = json_tokener_parse(txt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    election_record_t back;
    memset(&back, 0x5a, sizeof(back));
    CU_ASSERT_EQUAL(election_record_from_json(p, &back, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(back.holder, r.holder);
    CU_ASSERT_EQUAL(back.lease_duration_s, 15);
    CU_ASSERT_EQUAL(back.acquire_time_wall_ns, r.acquire_time_wall_ns);
    CU_ASSERT_EQUAL(back.renew_time_wall_ns, r.renew_time_wall_ns);
    CU_ASSERT_EQUAL(back.transitions, 7);
    CU_ASSERT_STRING_EQUAL(back.resource_version, "4242");
    CU_ASSERT_EQUAL(back.exists, 1);
    json_object_put(p);
    json_object_put(o);

    /* A create carries no resourceVersion; a released record an empty holder. */
    r.resource_version[0] = '\0';
    r.holder[0] = '\0';
    CU_ASSERT_EQUAL(election_record_to_json(&r, "rdc-leader", NULL, NULL, &o, err, sizeof(err)), 0);
    txt = json_object_to_json_string_ext(o, PLAIN);
    ASSERT_TEXT_LACKS(txt, "resourceVersion", "namespace");
    CU_ASSERT_PTR_NOT_NULL(strstr(txt, "\"holderIdentity\":\"\""));
    json_object_put(o);

    /* Bad arguments. */
    o = NULL;
    CU_ASSERT_EQUAL(election_record_to_json(&r, "", NULL, NULL, &o, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(o);
    json_object *arr = json_object_new_array();
    CU_ASSERT_EQUAL(election_record_to_json(&r, "x", NULL, arr, &o, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(o);
    json_object_put(arr);
    json_object *odd = json_tokener_parse("{\"metadata\":{},\"spec\":\"x\"}");
    CU_ASSERT_EQUAL(election_record_to_json(&r, "x", NULL, odd, &o, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(o);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "spec of the Lease read is a string"));
    json_object_put(odd);
}

/* A Lease as the API server returns one written by client-go (kubectl get -o json). */
static const char client_go_lease[] =
    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
    "\"metadata\":{\"creationTimestamp\":\"2024-05-01T11:00:00Z\",\"name\":\"rdc-leader\","
    "\"namespace\":\"default\",\"resourceVersion\":\"98765\",\"uid\":\"6f1c\","
    "\"labels\":{\"app\":\"rdc\"},"
    "\"managedFields\":[{\"manager\":\"manager\",\"operation\":\"Update\"}]},"
    "\"spec\":{\"acquireTime\":\"2024-05-01T11:59:00.000001Z\","
    "\"holderIdentity\":\"rdc-7d9f_3b1e2c4d-aaaa-4bbb-8ccc-0123456789ab\","
    "\"leaseDurationSeconds\":15,\"leaseTransitions\":12,"
    "\"renewTime\":\"2024-05-01T12:00:00.500000+02:00\",\"strategy\":\"OldestEmulationVersion\"}}";

static void test_json_client_go_lease_and_base(void)
{
    char err[256];
    json_object *lease = json_tokener_parse(client_go_lease);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lease);
    election_record_t r;
    CU_ASSERT_EQUAL_FATAL(election_record_from_json(lease, &r, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(r.holder, "rdc-7d9f_3b1e2c4d-aaaa-4bbb-8ccc-0123456789ab");
    CU_ASSERT_EQUAL(r.lease_duration_s, 15);
    CU_ASSERT_EQUAL(r.transitions, 12);
    CU_ASSERT_EQUAL(r.acquire_time_wall_ns, WALL0 - SEC(60) + 1000);
    CU_ASSERT_EQUAL(r.renew_time_wall_ns, WALL0 - SEC(7200) + MSEC(500));
    CU_ASSERT_STRING_EQUAL(r.resource_version, "98765");

    /* Writing over the Lease read keeps what others put there. */
    snprintf(r.holder, sizeof(r.holder), "me");
    r.transitions = 13;
    json_object *o = NULL;
    CU_ASSERT_EQUAL_FATAL(election_record_to_json(&r, "rdc-leader", "default", lease, &o, err,
                                                  sizeof(err)),
                          0);
    CU_ASSERT_PTR_NOT_EQUAL(o, lease);
    const char *txt = json_object_to_json_string_ext(o, PLAIN);
    ASSERT_TEXT_HAS(txt, "\"labels\":{\"app\":\"rdc\"}", "\"uid\":\"6f1c\"",
                    "\"strategy\":\"OldestEmulationVersion\"", "\"holderIdentity\":\"me\"",
                    "\"leaseTransitions\":13", "\"resourceVersion\":\"98765\"");
    json_object_put(o);
    /* ... and leaves the Lease read alone. */
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_to_json_string_ext(lease, PLAIN),
                                  "\"holderIdentity\":\"rdc-7d9f_"));
    /* A create over a base drops its resourceVersion. */
    r.resource_version[0] = '\0';
    CU_ASSERT_EQUAL(election_record_to_json(&r, "rdc-leader", "default", lease, &o, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NULL(strstr(json_object_to_json_string_ext(o, PLAIN),
                              "resourceVersion"));
    json_object_put(o);
    json_object_put(lease);

    /* Absent spec fields read as client-go reads them. */
    json_object *empty = json_tokener_parse("{\"metadata\":{\"name\":\"l\",\"resourceVersion\":\"1\"},"
                                            "\"spec\":{\"holderIdentity\":null}}");
    CU_ASSERT_EQUAL(election_record_from_json(empty, &r, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(r.holder, "");
    CU_ASSERT_EQUAL(r.lease_duration_s, 0);
    CU_ASSERT_EQUAL(r.acquire_time_wall_ns, 0);
    CU_ASSERT_EQUAL(r.renew_time_wall_ns, 0);
    CU_ASSERT_EQUAL(r.transitions, 0);
    CU_ASSERT_EQUAL(r.exists, 1);
    json_object_put(empty);
}

static void test_json_malformed(void)
{
    static const struct {
        const char *json;
        const char *want; /* in the message */
    } cases[] = {
        {"[]", "expected a JSON object"},
        {"{}", "metadata"},
        {"{\"metadata\":[],\"spec\":{}}", "metadata"},
        {"{\"metadata\":{\"name\":\"l\",\"namespace\":\"ns\",\"resourceVersion\":\"1\"}}",
         "Lease ns/l: spec is missing"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":\"x\"}", "spec"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":null}", "spec"},
        {"{\"metadata\":{},\"spec\":{}}", "metadata.resourceVersion"},
        {"{\"metadata\":{\"resourceVersion\":\"\"},\"spec\":{}}", "metadata.resourceVersion"},
        {"{\"metadata\":{\"resourceVersion\":5},\"spec\":{}}", "metadata.resourceVersion"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":5}}",
         "spec.holderIdentity: expected a string, got int"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":\"15\"}}",
         "spec.leaseDurationSeconds: expected an integer, got string"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":1.5}}",
         "spec.leaseDurationSeconds: expected an integer, got double"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":-3}}",
         "spec.leaseDurationSeconds: -3 is out of range"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":99999999999999999999}}",
         "spec.leaseDurationSeconds"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseTransitions\":true}}",
         "spec.leaseTransitions"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"renewTime\":\"yesterday\"}}",
         "spec.renewTime"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"renewTime\":12345}}",
         "spec.renewTime: expected a MicroTime string"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"acquireTime\":\"9999-12-31T23:59:59.999999Z\"}}",
         "spec.acquireTime"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"acquireTime\":\"0001-01-01T00:00:00Z\"}}",
         "spec.acquireTime"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"renewTime\":\"2024-13-01T00:00:00Z\"}}",
         "spec.renewTime"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"renewTime\":\"\"}}", "spec.renewTime"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"a\\u0000b\"}}",
         "spec.holderIdentity"},
    };
    char err[256];
    election_record_t r, sentinel;
    memset(&sentinel, 0x5a, sizeof(sentinel));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *o = json_tokener_parse(cases[i].json);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        r = sentinel;
        err[0] = '\0';
        CU_ASSERT_EQUAL(election_record_from_json(o, &r, err, sizeof(err)), -1);
        CU_ASSERT_EQUAL(memcmp(&r, &sentinel, sizeof(r)), 0); /* untouched */
        if (strstr(err, cases[i].want) == NULL) {
            fprintf(stderr, "\ncase %zu: message \"%s\" lacks \"%s\"\n", i, err, cases[i].want);
            CU_FAIL("error message does not name the field");
        }
        json_object_put(o);
    }
    CU_ASSERT_EQUAL(election_record_from_json(NULL, &r, err, sizeof(err)), -1);

    /* Over-long strings. */
    char holder[400], json[600];
    memset(holder, 'h', 300);
    holder[300] = '\0';
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"%s\"}}", holder);
    json_object *o = json_tokener_parse(json);
    CU_ASSERT_EQUAL(election_record_from_json(o, &r, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "spec.holderIdentity: longer than 255 bytes"));
    json_object_put(o);
    snprintf(json, sizeof(json), "{\"metadata\":{\"resourceVersion\":\"%.100s\"},\"spec\":{}}", holder);
    o = json_tokener_parse(json);
    CU_ASSERT_EQUAL(election_record_from_json(o, &r, err, sizeof(err)), -1);
    json_object_put(o);
}

/* ---- two replicas over simulated time -------------------------------------------------- */

/* One shared Lease store and two processes that reach it over a network that is slow, loses
 * requests, loses answers, delivers some writes after the client gave up on them, and
 * partitions; processes crash, restart under a new identity and shut down gracefully. Each
 * machine has its own monotonic offset and rate (+-SIM_MAX_PPM) and a wall clock hours off.
 *
 * Invariant 3, checked without sampling error (fence deadlines are converted to global time):
 *   - a replica that may write is the Lease's current holder, and at most one may write;
 *   - while a replica leads and the Lease names it, its fence deadline comes before the
 *     Lease could expire for ANY observer that follows client-go's rules: one that saw its
 *     last change at once and whose clock runs at the fastest rate allowed;
 *   - whenever the Lease changes hands, every earlier term's fence has passed;
 *   - every term's epoch is above all earlier ones. */

#define SIM_NODES 2
#define SIM_TICK_MS 10
#define SIM_LATE_MAX 64
#define SIM_LEASE_MS 3000
#define SIM_MAX_PPM 2000

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rnd(rng_t *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static int64_t rnd_below(rng_t *r, int64_t n)
{
    return (int64_t)(rnd(r) % (uint64_t)n);
}

typedef enum { IO_IDLE, IO_GET, IO_WRITE } io_t;
typedef enum { FATE_NORMAL, FATE_LOST, FATE_NO_ANSWER, FATE_LATE } fate_t;

typedef struct {
    election_t *e;
    char identity[64];
    int gen, up;
    int64_t restart_at;
    int64_t mono_off, wall_off, drift_ppm;
    io_t io;
    int64_t read_at, resp_at, commit_at;
    int get_ok, snapped;
    election_record_t snap;
    election_action_t wact;
    election_record_t wrec;
    fate_t fate;
    int committed, releasing;
    election_write_status_t wstatus;
    char wrv[ELECTION_RV_MAX];
    int64_t partition_until;
    char term_identity[64]; /* who held this machine's latest term */
    int64_t term_fence;     /* its fence deadline (machine mono); INT64_MIN: no term yet */
} node_t;

typedef struct {
    int64_t at;
    election_action_t act;
    election_record_t rec;
} late_t;

typedef struct {
    store_t store;
    node_t n[SIM_NODES];
    late_t late[SIM_LATE_MAX];
    int nlate;
    rng_t rng;
    int64_t max_epoch;
    char prev_holder[ELECTION_HOLDER_MAX];
    long terms, violations, writer_ticks, late_commits, releases, crashes, handovers;
} sim_t;

static int64_t node_mono(const node_t *n, int64_t t_ms)
{
    int64_t ns = MSEC(t_ms);
    return n->mono_off + ns + ns / 1000000 * n->drift_ppm;
}

static int64_t node_wall(const node_t *n, int64_t t_ms)
{
    return WALL0 + n->wall_off + MSEC(t_ms);
}

/* The global time (ms) at which machine n's monotonic clock reads mono. */
static double node_global_ms(const node_t *n, int64_t mono)
{
    return (double)(mono - n->mono_off) / (1.0 + (double)n->drift_ppm / 1e6) / 1e6;
}

static void violation(sim_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void violation(sim_t *s, const char *fmt, ...)
{
    if (s->violations++ > 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputc('\n', stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int chance(sim_t *s, int per_million)
{
    return rnd_below(&s->rng, 1000000) < per_million;
}

/* Mostly fast; one request in fifty takes up to 2.5 s (more than the renew deadline). */
static int64_t latency(sim_t *s)
{
    return chance(s, 20000) ? rnd_below(&s->rng, 2500) : rnd_below(&s->rng, 150);
}

static void node_start(sim_t *s, node_t *n, int idx)
{
    election_config_t c = config(NULL, rnd(&s->rng));
    n->gen++;
    snprintf(n->identity, sizeof(n->identity), "node-%d_%d", idx, n->gen);
    c.identity = n->identity;
    c.lease_duration_ns = MSEC(SIM_LEASE_MS);
    c.renew_deadline_ns = SEC(2);
    c.retry_period_ns = MSEC(250);
    char err[256];
    n->e = election_new(&c, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(n->e);
    n->up = 1;
    n->io = IO_IDLE;
    n->releasing = 0;
}

static void queue_late(sim_t *s, int64_t at, election_action_t act, const election_record_t *rec)
{
    if (s->nlate == SIM_LATE_MAX)
        return;
    late_t *l = &s->late[s->nlate++];
    l->at = at;
    l->act = act;
    l->rec = *rec;
}

static void node_down(sim_t *s, node_t *n, int64_t t)
{
    /* A write already sent still reaches the server. */
    if (n->io == IO_WRITE && !n->committed && n->fate != FATE_LOST)
        queue_late(s, n->commit_at, n->wact, &n->wrec);
    election_destroy(&n->e);
    n->up = 0;
    n->io = IO_IDLE;
    n->restart_at = t + rnd_below(&s->rng, 4000);
}

/* The server side of a write in flight: commit when its time has come. */
static void write_progress(sim_t *s, node_t *n, int64_t t)
{
    if (!n->committed && (n->fate == FATE_NORMAL || n->fate == FATE_NO_ANSWER) &&
        t >= n->commit_at) {
        n->wstatus = store_write(&s->store, n->wact, &n->wrec, n->wrv, sizeof(n->wrv));
        n->committed = 1;
    }
}

static void begin_write(sim_t *s, node_t *n, int64_t t, election_action_t act,
                        const election_record_t *rec)
{
    n->io = IO_WRITE;
    n->wact = act;
    n->wrec = *rec;
    n->committed = 0;
    n->wstatus = ELECTION_WRITE_ERROR;
    n->wrv[0] = '\0';
    int64_t r = rnd_below(&s->rng, 100);
    if (t < n->partition_until) {
        n->fate = FATE_LOST;
        n->resp_at = t + 1000; /* client timeout */
    } else if (r < 4) {
        n->fate = FATE_NO_ANSWER; /* committed, answer lost: the client times out */
        n->commit_at = t + latency(s);
        n->resp_at = n->commit_at + 1000;
    } else if (r < 8) {
        n->fate = FATE_LATE; /* the client gives up; the server commits afterwards */
        n->resp_at = t + 1000;
        n->commit_at = n->resp_at + rnd_below(&s->rng, 3000);
    } else if (r < 11) {
        n->fate = FATE_LOST;
        n->resp_at = t + latency(s);
    } else {
        n->fate = FATE_NORMAL;
        n->commit_at = t + latency(s);
        n->resp_at = n->commit_at + latency(s);
    }
    write_progress(s, n, t);
}

static void begin_get(sim_t *s, node_t *n, int64_t t)
{
    n->io = IO_GET;
    n->snapped = 0;
    if (t < n->partition_until || chance(s, 50000)) {
        n->get_ok = 0;
        n->resp_at = t + (t < n->partition_until ? 1000 : latency(s));
        return;
    }
    n->get_ok = 1;
    n->read_at = t + latency(s);
    n->resp_at = n->read_at + latency(s);
}

static void on_events(sim_t *s, node_t *n, int64_t t, unsigned ev)
{
    if (!(ev & ELECTION_EV_BECAME_LEADER))
        return;
    s->terms++;
    int64_t epoch = election_epoch(n->e);
    if (epoch <= s->max_epoch)
        violation(s, "t=%" PRId64 "ms %s: epoch %" PRId64 " not above %" PRId64, t, n->identity,
                  epoch, s->max_epoch);
    if (epoch > s->max_epoch)
        s->max_epoch = epoch;
    for (int j = 0; j < SIM_NODES; j++) {
        node_t *o = &s->n[j];
        if (o->term_fence != INT64_MIN && node_global_ms(o, o->term_fence) > (double)t)
            violation(s, "t=%" PRId64 "ms %s became leader before the fence of %s", t,
                      n->identity, o->term_identity);
    }
    snprintf(n->term_identity, sizeof(n->term_identity), "%s", n->identity);
    n->term_fence = election_fence_deadline(n->e);
}

static void node_tick(sim_t *s, node_t *n, int idx, int64_t t)
{
    if (!n->up) {
        if (t >= n->restart_at)
            node_start(s, n, idx);
        return;
    }
    int64_t m = node_mono(n, t), w = node_wall(n, t);
    election_tick(n->e, m);
    if (n->io == IO_IDLE && chance(s, 150)) {
        s->crashes++;
        node_down(s, n, t);
        return;
    }
    if (chance(s, 300))
        n->partition_until = t + 500 + rnd_below(&s->rng, 5000);

    election_decision_t d;
    unsigned ev = 0;
    switch (n->io) {
    case IO_IDLE:
        if (election_is_leader(n->e) && chance(s, 500)) {
            election_record_t rel;
            s->releases++;
            n->term_fence = m; /* writes stop now */
            if (election_release(n->e, m, w, &rel, &ev) == 0) {
                n->releasing = 1;
                begin_write(s, n, t, ELECTION_UPDATE, &rel);
            } else {
                node_down(s, n, t);
            }
            break;
        }
        if (!election_attempt_due(n->e, m))
            break;
        if (election_step_cached(n->e, m, w, &d) == 0) {
            begin_write(s, n, t, d.action, &d.record);
            break;
        }
        begin_get(s, n, t);
        __attribute__((fallthrough)); /* the read may happen at once */
    case IO_GET:
        if (n->get_ok && !n->snapped && t >= n->read_at) {
            n->snap = s->store.rec;
            n->snapped = 1;
        }
        if (t < n->resp_at)
            break;
        election_step(n->e, m, w, n->get_ok ? &n->snap : NULL, &d);
        on_events(s, n, t, d.events);
        n->io = IO_IDLE;
        if (d.action != ELECTION_WAIT)
            begin_write(s, n, t, d.action, &d.record);
        break;
    case IO_WRITE:
        write_progress(s, n, t);
        if (t < n->resp_at)
            break;
        if (n->fate == FATE_LATE)
            queue_late(s, n->commit_at, n->wact, &n->wrec);
        election_write_result(n->e, m, n->fate == FATE_NORMAL ? n->wstatus : ELECTION_WRITE_ERROR,
                              n->wrv, &ev);
        on_events(s, n, t, ev);
        n->io = IO_IDLE;
        if (n->releasing)
            node_down(s, n, t);
        break;
    }
    if (n->up && election_is_leader(n->e))
        n->term_fence = election_fence_deadline(n->e);
}

static void check_invariants(sim_t *s, int64_t t)
{
    const store_t *st = &s->store;
    const char *holder = st->rec.exists ? st->rec.holder : "";
    /* The earliest global time a fast observer may deem the current record expired. */
    double expiry = (double)st->changed_at_ms +
                    SIM_LEASE_MS * 1e6 / (1e6 + (double)SIM_MAX_PPM);
    int writers = 0;
    for (int i = 0; i < SIM_NODES; i++) {
        node_t *n = &s->n[i];
        if (!n->up || !election_is_leader(n->e))
            continue;
        int named = strcmp(holder, n->identity) == 0;
        if (election_may_write(n->e, node_mono(n, t))) {
            writers++;
            if (!named)
                violation(s, "t=%" PRId64 "ms %s may write but the Lease names \"%s\"", t,
                          n->identity, holder);
        }
        double fence = node_global_ms(n, election_fence_deadline(n->e));
        if (named && fence > expiry)
            violation(s, "t=%" PRId64 "ms %s: fence at %.3fms, but its Lease (changed at %" PRId64
                      "ms) may expire for others at %.3fms", t, n->identity, fence,
                      st->changed_at_ms, expiry);
    }
    if (writers > 1)
        violation(s, "t=%" PRId64 "ms two replicas may write", t);
    s->writer_ticks += writers;
    if (strcmp(holder, s->prev_holder) != 0) {
        s->handovers++;
        for (int i = 0; i < SIM_NODES; i++) {
            node_t *n = &s->n[i];
            if (n->term_fence == INT64_MIN || strcmp(n->term_identity, holder) == 0)
                continue;
            if (node_global_ms(n, n->term_fence) > (double)t)
                violation(s, "t=%" PRId64 "ms the Lease went to \"%s\" before the fence of %s", t,
                          holder, n->term_identity);
        }
        snprintf(s->prev_holder, sizeof(s->prev_holder), "%s", holder);
    }
}

static void sim_run(uint64_t seed, int64_t ticks, sim_t *s)
{
    memset(s, 0, sizeof(*s));
    s->rng.s = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
    s->max_epoch = -1;
    for (int i = 0; i < SIM_NODES; i++) {
        node_t *n = &s->n[i];
        n->mono_off = SEC(1000) + rnd_below(&s->rng, SEC(100000));
        n->wall_off = rnd_below(&s->rng, SEC(6 * 3600)) - SEC(3 * 3600);
        n->drift_ppm = rnd_below(&s->rng, 2 * SIM_MAX_PPM + 1) - SIM_MAX_PPM;
        n->term_fence = INT64_MIN;
        node_start(s, n, i);
    }
    for (int64_t k = 0; k < ticks; k++) {
        int64_t t = k * SIM_TICK_MS;
        s->store.now_ms = t;
        for (int i = 0; i < s->nlate;) {
            if (s->late[i].at <= t) {
                char rv[ELECTION_RV_MAX];
                store_write(&s->store, s->late[i].act, &s->late[i].rec, rv, sizeof(rv));
                s->late_commits++;
                s->late[i] = s->late[--s->nlate];
            } else {
                i++;
            }
        }
        int first = (int)(rnd(&s->rng) & 1); /* who moves first varies */
        for (int j = 0; j < SIM_NODES; j++) {
            int i = (first + j) % SIM_NODES;
            node_tick(s, &s->n[i], i, t);
        }
        check_invariants(s, t);
    }
    for (int i = 0; i < SIM_NODES; i++)
        election_destroy(&s->n[i].e);
}

static void test_two_replicas_fencing_simulation(void)
{
    const int64_t ticks = 60000; /* 600 s of simulated time per seed, 10 ms steps */
    long terms = 0, late = 0, releases = 0, crashes = 0, handovers = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        sim_t s;
        sim_run(seed, ticks, &s);
        CU_ASSERT_EQUAL(s.violations, 0);
        /* Not vacuous: leaders were elected, and someone could write most of the time. */
        CU_ASSERT(s.terms >= 5);
        CU_ASSERT(s.writer_ticks > ticks / 3);
        terms += s.terms;
        late += s.late_commits;
        releases += s.releases;
        crashes += s.crashes;
        handovers += s.handovers;
    }
    CU_ASSERT(late > 0);
    CU_ASSERT(releases > 0);
    CU_ASSERT(crashes > 0);
    fprintf(stderr, "\n  [sim: %ld terms, %ld handovers, %ld late commits, %ld releases, %ld crashes] ",
            terms, handovers, late, releases, crashes);
}

static const cu_entry_t tests[] = {
    CU_SUITE("election"),
    {"flags are checked as client-go does", test_config_validation},
    {"acquire a missing Lease, renew, fast path", test_acquire_fresh_and_renew},
    {"a live foreign Lease is never taken", test_wait_on_live_foreign_lease},
    {"take over after lease duration without change", test_take_over_expired_lease},
    {"remote clock skew has no effect", test_foreign_clock_skew_has_no_effect},
    {"conflicts lose the race", test_conflict_loses_the_race},
    {"renew failure steps down before expiry", test_renew_failure_steps_down_before_expiry},
    {"a stepped-down leader starts a new term", test_stepped_down_leader_starts_a_new_term},
    {"foreign holder or deletion: step down", test_leader_steps_down_on_foreign_holder_or_deletion},
    {"slow writes buy no time", test_slow_writes_buy_no_time},
    {"renewTime always changes", test_renew_time_always_changes},
    {"release hands over at the next retry", test_release_hands_over},
    {"acquire retries with client-go jitter", test_retry_jitter},
    {"identity is hostname_uuid", test_make_identity},
    {"Lease JSON round trip", test_json_round_trip},
    {"client-go Lease and PUT over the Lease read", test_json_client_go_lease_and_base},
    {"malformed Lease JSON is an error", test_json_malformed},
    {"two replicas never write together", test_two_replicas_fencing_simulation},
};

CU_MAIN(tests)
