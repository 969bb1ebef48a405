/* election: the pure core of leader election over a Lease. See election.h for the
 * mapping to client-go and the fencing rule. */
#include "election.h"

#include "buf.h"
#include "clock.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* client-go's leaderelection.JitterFactor. Also its RenewDeadline > JitterFactor *
 * RetryPeriod check, done in integers below as deadline * 5 > period * 6. */
#define JITTER_FACTOR 1.2
#define MAX_DURATION_NS (INT64_C(24) * 3600 * NS_PER_SEC)
#define NS_PER_US INT64_C(1000)
/* Years that fit int64 nanoseconds with room for a zone offset (clock_parse_rfc3339
 * does not check for overflow). */
#define MICROTIME_MIN_YEAR 1678
#define MICROTIME_MAX_YEAR 2261

typedef enum { ST_FOLLOWER = 0, ST_LEADER, ST_RELEASED } state_t;
typedef enum { W_NONE = 0, W_ACQUIRE, W_RENEW, W_RELEASE } write_kind_t;

struct election {
    char id[ELECTION_HOLDER_MAX];
    char identity[ELECTION_HOLDER_MAX];
    int64_t lease_ns, deadline_ns, retry_ns;
    int64_t fence_window_ns; /* min(renew deadline, lease duration - safety margin) */
    uint64_t rng;

    state_t state;
    /* client-go's observedRecord / observedTime (monotonic) and reportedLeader. */
    election_record_t observed;
    int have_observed;
    int64_t observed_mono;
    char reported_holder[ELECTION_HOLDER_MAX];

    /* The term we lead. */
    int64_t epoch;
    int64_t last_renew_start; /* monotonic decision time of the last successful write */

    /* The write the shell is performing. */
    write_kind_t pending;
    int pending_fast; /* decided by the fast path (no GET before it) */
    election_record_t pending_record;
    int64_t pending_start;

    int64_t next_attempt;
    int fast_failed; /* the last fast-path renew failed: GET before the next one */
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    BUF_FORMAT_VA(err, errlen, fmt);
}

/* "15s", "1.5s", "250ms": durations as the flags spell them. */
static const char *fmt_duration(int64_t ns, char *out, size_t len)
{
    if (ns % NS_PER_SEC == 0)
        snprintf(out, len, "%" PRId64 "s", ns / NS_PER_SEC);
    else if (ns % NS_PER_MS == 0)
        snprintf(out, len, "%" PRId64 "ms", ns / NS_PER_MS);
    else
        snprintf(out, len, "%" PRId64 "ns", ns);
    return out;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* MicroTime carries microseconds: truncate so what we write is what we read back. */
static int64_t trunc_us(int64_t ns)
{
    int64_t r = ns % NS_PER_US;
    if (r < 0)
        r += NS_PER_US;
    return ns - r;
}

static int64_t default_margin(int64_t lease_ns)
{
    return lease_ns / 10;
}

static int check_positive(const char *what, int64_t ns, char *err, size_t errlen)
{
    char a[32], b[32];
    if (ns <= 0) {
        set_err(err, errlen, "%s must be greater than zero (got %s)", what,
                fmt_duration(ns, a, sizeof(a)));
        return -1;
    }
    if (ns > MAX_DURATION_NS) {
        set_err(err, errlen, "%s %s exceeds the limit of %s", what, fmt_duration(ns, a, sizeof(a)),
                fmt_duration(MAX_DURATION_NS, b, sizeof(b)));
        return -1;
    }
    return 0;
}

int election_validate_config(const election_config_t *cfg, char *err, size_t errlen)
{
    char a[32], b[32], c[32];
    if (cfg == NULL) {
        set_err(err, errlen, "leader election: no configuration");
        return -1;
    }
    if (cfg->id == NULL || cfg->id[0] == '\0' || strlen(cfg->id) > 253) {
        set_err(err, errlen, "leader election id must be a Lease name of 1 to 253 characters");
        return -1;
    }
    if (cfg->identity == NULL || cfg->identity[0] == '\0' ||
        strlen(cfg->identity) >= ELECTION_HOLDER_MAX) {
        set_err(err, errlen, "leader election identity must have 1 to %d characters",
                ELECTION_HOLDER_MAX - 1);
        return -1;
    }
    if (check_positive("lease duration", cfg->lease_duration_ns, err, errlen) ||
        check_positive("renew deadline", cfg->renew_deadline_ns, err, errlen) ||
        check_positive("retry period", cfg->retry_period_ns, err, errlen))
        return -1;
    if (cfg->lease_duration_ns % NS_PER_SEC != 0) {
        set_err(err, errlen,
                "lease duration %s must be a whole number of seconds (leaseDurationSeconds is an integer)",
                fmt_duration(cfg->lease_duration_ns, a, sizeof(a)));
        return -1;
    }
    if (cfg->lease_duration_ns <= cfg->renew_deadline_ns) {
        set_err(err, errlen, "lease duration %s must be greater than renew deadline %s",
                fmt_duration(cfg->lease_duration_ns, a, sizeof(a)),
                fmt_duration(cfg->renew_deadline_ns, b, sizeof(b)));
        return -1;
    }
    /* Durations are capped at 24h, so these products cannot overflow. */
    if (cfg->renew_deadline_ns * 5 <= cfg->retry_period_ns * 6) {
        set_err(err, errlen, "renew deadline %s must be greater than 1.2 x retry period %s (%s)",
                fmt_duration(cfg->renew_deadline_ns, a, sizeof(a)),
                fmt_duration(cfg->retry_period_ns, b, sizeof(b)),
                fmt_duration(cfg->retry_period_ns * 6 / 5, c, sizeof(c)));
        return -1;
    }
    if (cfg->safety_margin_ns < 0 || cfg->safety_margin_ns >= cfg->lease_duration_ns) {
        set_err(err, errlen,
                "fencing safety margin %s must be at least 0 and less than lease duration %s",
                fmt_duration(cfg->safety_margin_ns, a, sizeof(a)),
                fmt_duration(cfg->lease_duration_ns, b, sizeof(b)));
        return -1;
    }
    return 0;
}

election_t *election_new(const election_config_t *cfg, char *err, size_t errlen)
{
    if (election_validate_config(cfg, err, errlen))
        return NULL;
    election_t *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        set_err(err, errlen, "leader election: out of memory");
        return NULL;
    }
    snprintf(e->id, sizeof(e->id), "%s", cfg->id);
    snprintf(e->identity, sizeof(e->identity), "%s", cfg->identity);
    e->lease_ns = cfg->lease_duration_ns;
    e->deadline_ns = cfg->renew_deadline_ns;
    e->retry_ns = cfg->retry_period_ns;
    int64_t margin = cfg->safety_margin_ns ? cfg->safety_margin_ns : default_margin(e->lease_ns);
    e->fence_window_ns = min64(e->deadline_ns, e->lease_ns - margin);
    e->rng = cfg->seed ^ UINT64_C(0x6a09e667f3bcc909);
    e->state = ST_FOLLOWER;
    e->epoch = -1;
    e->next_attempt = INT64_MIN; /* JitterUntil runs the first attempt at once */
    return e;
}

void election_destroy(election_t **e)
{
    if (e == NULL || *e == NULL)
        return;
    free(*e);
    *e = NULL;
}

/* splitmix64: small, seedable, good enough for jitter. */
static uint64_t next_random(election_t *e)
{
    uint64_t z = (e->rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* client-go's wait.Jitter(RetryPeriod, 1.2): period + rand[0,1) * 1.2 * period. */
static int64_t jittered_retry(election_t *e)
{
    double u = (double)(next_random(e) >> 11) / 9007199254740992.0; /* [0, 1) */
    return e->retry_ns + (int64_t)(u * JITTER_FACTOR * (double)e->retry_ns);
}

static int64_t fence_deadline(const election_t *e)
{
    return sat_add(e->last_renew_start, e->fence_window_ns);
}

static void step_down(election_t *e, unsigned *events)
{
    if (e->state != ST_LEADER)
        return;
    e->state = ST_FOLLOWER;
    e->epoch = -1;
    *events |= ELECTION_EV_LOST;
}

static unsigned apply_deadlines(election_t *e, int64_t now)
{
    unsigned ev = 0;
    if (e->state == ST_LEADER && now >= fence_deadline(e))
        step_down(e, &ev);
    return ev;
}

/* The fields client-go's raw-record comparison covers: the spec, not the metadata. */
static int same_spec(const election_record_t *a, const election_record_t *b)
{
    return a->exists == b->exists && strcmp(a->holder, b->holder) == 0 &&
           a->lease_duration_s == b->lease_duration_s &&
           a->acquire_time_wall_ns == b->acquire_time_wall_ns &&
           a->renew_time_wall_ns == b->renew_time_wall_ns && a->transitions == b->transitions;
}

static void report_holder(election_t *e, unsigned *events)
{
    const char *h = e->observed.exists ? e->observed.holder : "";
    if (strcmp(h, e->reported_holder) == 0)
        return;
    snprintf(e->reported_holder, sizeof(e->reported_holder), "%s", h);
    *events |= ELECTION_EV_NEW_LEADER;
}

/* setObservedRecord, but only when the spec changed: observedTime restarts on a change
 * seen by us, never on the remote timestamps. The resourceVersion is always taken. */
static void observe(election_t *e, int64_t now, const election_record_t *r, unsigned *events)
{
    if (!e->have_observed || !same_spec(&e->observed, r))
        e->observed_mono = now;
    e->observed = *r;
    e->have_observed = 1;
    report_holder(e, events);
}

static int64_t clamp_duration_s(int64_t s)
{
    if (s < 0)
        return 0;
    if (s > INT32_MAX)
        return INT32_MAX;
    return s;
}

static int64_t next_transitions(int64_t t)
{
    if (t < 0)
        return 0;
    return t >= INT32_MAX ? INT32_MAX : t + 1;
}

static void fill_ours(const election_t *e, election_record_t *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->holder, sizeof(r->holder), "%s", e->identity);
    r->lease_duration_s = e->lease_ns / NS_PER_SEC;
    r->exists = 1;
}

/* Record the write as pending and describe it in *out. */
static void start_write(election_t *e, int64_t now, write_kind_t kind, int fast,
                        election_action_t action, const election_record_t *r,
                        election_decision_t *out)
{
    e->pending = kind;
    e->pending_fast = fast;
    e->pending_record = *r;
    e->pending_start = now;
    out->action = action;
    out->record = *r;
}

/* A renew of the record we observed holding: keep acquireTime and leaseTransitions, and
 * make sure renewTime changes so that observers restart their clocks. */
static void build_renew(const election_t *e, int64_t now_wall, election_record_t *r)
{
    fill_ours(e, r);
    r->acquire_time_wall_ns = e->observed.acquire_time_wall_ns;
    r->transitions = e->observed.transitions;
    int64_t renew = trunc_us(now_wall);
    if (renew <= e->observed.renew_time_wall_ns)
        renew = sat_add(e->observed.renew_time_wall_ns, NS_PER_US);
    r->renew_time_wall_ns = renew;
    snprintf(r->resource_version, sizeof(r->resource_version), "%s", e->observed.resource_version);
}

static void begin_decision(election_decision_t *out)
{
    memset(out, 0, sizeof(*out));
    out->action = ELECTION_WAIT;
}

int election_step(election_t *e, int64_t now_mono_ns, int64_t now_wall_ns,
                  const election_record_t *observed, election_decision_t *out)
{
    begin_decision(out);
    if (e->pending != W_NONE) {
        out->wakeup_mono_ns = election_next_wakeup(e);
        return -1;
    }
    if (e->state == ST_RELEASED)
        goto out;
    out->events |= apply_deadlines(e, now_mono_ns);
    e->fast_failed = 0;

    /* Without a resourceVersion our PUT would not be conditional: treat as a failed read. */
    if (observed != NULL && observed->exists && observed->resource_version[0] == '\0')
        observed = NULL;
    if (observed == NULL) {
        /* GET failed: try again a retry period later; a leader keeps its fence. */
        e->next_attempt = now_mono_ns + (e->state == ST_LEADER ? e->retry_ns : jittered_retry(e));
        goto out;
    }

    election_record_t rec;
    if (!observed->exists) {
        /* Someone deleted the Lease under us: anyone may create it now, so stop. */
        step_down(e, &out->events);
        election_record_t gone;
        memset(&gone, 0, sizeof(gone));
        observe(e, now_mono_ns, &gone, &out->events);
        fill_ours(e, &rec);
        rec.acquire_time_wall_ns = rec.renew_time_wall_ns = trunc_us(now_wall_ns);
        rec.transitions = 0; /* client-go creates with LeaderTransitions 0 */
        start_write(e, now_mono_ns, W_ACQUIRE, 0, ELECTION_CREATE, &rec, out);
        goto out;
    }

    election_record_t obs = *observed;
    obs.lease_duration_s = clamp_duration_s(obs.lease_duration_s);
    observe(e, now_mono_ns, &obs, &out->events);
    int ours = strcmp(obs.holder, e->identity) == 0;
    if (e->state == ST_LEADER && !ours)
        step_down(e, &out->events); /* taken over: never write alongside the new holder */

    if (e->state == ST_LEADER) {
        build_renew(e, now_wall_ns, &rec);
        start_write(e, now_mono_ns, W_RENEW, 0, ELECTION_UPDATE, &rec, out);
        goto out;
    }
    /* Not leading. A Lease naming us is treated like anyone's: our old term is over. */
    int64_t expiry = sat_add(e->observed_mono, obs.lease_duration_s * NS_PER_SEC);
    if (obs.holder[0] != '\0' && expiry > now_mono_ns) {
        e->next_attempt = now_mono_ns + jittered_retry(e);
        goto out;
    }
    fill_ours(e, &rec);
    rec.acquire_time_wall_ns = rec.renew_time_wall_ns = trunc_us(now_wall_ns);
    rec.transitions = next_transitions(obs.transitions);
    snprintf(rec.resource_version, sizeof(rec.resource_version), "%s", obs.resource_version);
    start_write(e, now_mono_ns, W_ACQUIRE, 0, ELECTION_UPDATE, &rec, out);
out:
    out->wakeup_mono_ns = election_next_wakeup(e);
    return 0;
}

int election_step_cached(election_t *e, int64_t now_mono_ns, int64_t now_wall_ns,
                         election_decision_t *out)
{
    begin_decision(out);
    /* Past the fence the slow path reports the step-down; here nothing changes. */
    int usable = e->state == ST_LEADER && now_mono_ns < fence_deadline(e) &&
                 e->pending == W_NONE && !e->fast_failed && e->have_observed &&
                 e->observed.exists && strcmp(e->observed.holder, e->identity) == 0 &&
                 e->observed.resource_version[0] != '\0';
    if (usable) {
        election_record_t rec;
        build_renew(e, now_wall_ns, &rec);
        start_write(e, now_mono_ns, W_RENEW, 1, ELECTION_UPDATE, &rec, out);
    }
    out->wakeup_mono_ns = election_next_wakeup(e);
    return usable ? 0 : ELECTION_NOTHING;
}

/* After our write succeeded: setObservedRecord(written record). */
static void observe_written(election_t *e, int64_t now, const char *rv, unsigned *events)
{
    election_record_t r = e->pending_record;
    snprintf(r.resource_version, sizeof(r.resource_version), "%s", rv);
    r.exists = 1;
    e->observed = r;
    e->observed_mono = now;
    e->have_observed = 1;
    report_holder(e, events);
}

static void acquire_done(election_t *e, int64_t now, int ok, unsigned *events)
{
    if (!ok) {
        e->next_attempt = now + jittered_retry(e);
        return;
    }
    /* A write that took longer than the fence window buys no time: stay a follower and let
     * the Lease that names us expire like anyone's. */
    if (now < sat_add(e->pending_start, e->fence_window_ns)) {
        e->state = ST_LEADER;
        e->epoch = e->pending_record.transitions;
        e->last_renew_start = e->pending_start;
        *events |= ELECTION_EV_BECAME_LEADER;
        e->next_attempt = now + e->retry_ns;
    } else {
        e->next_attempt = now + jittered_retry(e);
    }
}

static void renew_done(election_t *e, int64_t now, int ok)
{
    if (ok) {
        if (e->state == ST_LEADER)
            e->last_renew_start = e->pending_start;
        e->next_attempt = now + e->retry_ns;
        return;
    }
    if (e->pending_fast) {
        /* client-go falls back to the slow path at once. */
        e->fast_failed = 1;
        e->next_attempt = now;
        return;
    }
    e->next_attempt = now + (e->state == ST_LEADER ? e->retry_ns : jittered_retry(e));
}

int election_write_result(election_t *e, int64_t now_mono_ns, election_write_status_t status,
                          const char *resource_version, unsigned *events)
{
    unsigned ev = 0;
    int ret = 0;
    if (e->pending == W_NONE) {
        ret = -1;
        goto out;
    }
    if (status == ELECTION_WRITE_OK &&
        (resource_version == NULL || resource_version[0] == '\0' ||
         strlen(resource_version) >= ELECTION_RV_MAX)) {
        /* Without the new resourceVersion our next write could not be conditional. */
        status = ELECTION_WRITE_ERROR;
        ret = -1;
    }
    int ok = status == ELECTION_WRITE_OK;
    write_kind_t kind = e->pending;
    e->pending = W_NONE;
    if (ok)
        observe_written(e, now_mono_ns, resource_version, &ev);
    switch (kind) {
    case W_ACQUIRE:
        acquire_done(e, now_mono_ns, ok, &ev);
        break;
    case W_RENEW:
        renew_done(e, now_mono_ns, ok);
        break;
    case W_RELEASE:
    case W_NONE:
        e->next_attempt = INT64_MAX;
        break;
    }
    ev |= apply_deadlines(e, now_mono_ns);
out:
    if (events)
        *events = ev;
    return ret;
}

unsigned election_tick(election_t *e, int64_t now_mono_ns)
{
    return apply_deadlines(e, now_mono_ns);
}

int election_release(election_t *e, int64_t now_mono_ns, int64_t now_wall_ns,
                     election_record_t *out, unsigned *events)
{
    unsigned ev = 0;
    int ret = ELECTION_NOTHING;
    /* client-go releases when IsLeader(), i.e. the observed record names us. A stale
     * resourceVersion makes the PUT fail with a conflict, which is harmless. */
    int named = e->state != ST_RELEASED && e->have_observed && e->observed.exists &&
                strcmp(e->observed.holder, e->identity) == 0;
    step_down(e, &ev);
    e->state = ST_RELEASED;
    e->pending = W_NONE;
    e->next_attempt = INT64_MAX;
    if (named) {
        election_record_t r;
        memset(&r, 0, sizeof(r));
        r.lease_duration_s = 1;
        r.acquire_time_wall_ns = r.renew_time_wall_ns = trunc_us(now_wall_ns);
        r.transitions = e->observed.transitions;
        snprintf(r.resource_version, sizeof(r.resource_version), "%s",
                 e->observed.resource_version);
        r.exists = 1;
        e->pending = W_RELEASE;
        e->pending_fast = 0;
        e->pending_record = r;
        e->pending_start = now_mono_ns;
        *out = r;
        ret = 0;
    }
    if (events)
        *events = ev;
    return ret;
}

int election_is_leader(const election_t *e)
{
    return e->state == ST_LEADER;
}

int election_may_write(const election_t *e, int64_t now_mono_ns)
{
    return e->state == ST_LEADER && now_mono_ns < fence_deadline(e);
}

int64_t election_fence_deadline(const election_t *e)
{
    return e->state == ST_LEADER ? fence_deadline(e) : INT64_MIN;
}

int64_t election_epoch(const election_t *e)
{
    return e->state == ST_LEADER ? e->epoch : -1;
}

int election_attempt_due(const election_t *e, int64_t now_mono_ns)
{
    return e->state != ST_RELEASED && e->pending == W_NONE && now_mono_ns >= e->next_attempt;
}

int64_t election_next_wakeup(const election_t *e)
{
    if (e->state == ST_RELEASED)
        return INT64_MAX;
    int64_t w = e->pending == W_NONE ? e->next_attempt : INT64_MAX;
    if (e->state == ST_LEADER)
        w = min64(w, fence_deadline(e));
    return w;
}

const char *election_holder(const election_t *e)
{
    return e->reported_holder;
}

int64_t election_observed_transitions(const election_t *e)
{
    return e->have_observed && e->observed.exists ? e->observed.transitions : 0;
}

const char *election_identity(const election_t *e)
{
    return e->identity;
}

const char *election_id(const election_t *e)
{
    return e->id;
}

int election_make_identity(const char *hostname, const unsigned char random16[16], char *out,
                           size_t len)
{
    if (hostname == NULL || hostname[0] == '\0' || out == NULL || len == 0)
        return -1;
    unsigned char b[16];
    memcpy(b, random16, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    int n = snprintf(out, len,
                     "%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                     hostname, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
                     b[11], b[12], b[13], b[14], b[15]);
    if (n < 0 || (size_t)n >= len || n >= ELECTION_HOLDER_MAX) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

/* ---- Lease JSON ------------------------------------------------------------------- */

/* Look up an optional member: 0 absent or null, 1 found with the wanted type, -1 found
 * with another type (*v is then the offending value). */
static int member(json_object *obj, const char *key, json_type want, json_object **v)
{
    json_object *x = NULL;
    *v = NULL;
    if (!json_object_object_get_ex(obj, key, &x) || x == NULL)
        return 0;
    *v = x;
    return json_object_is_type(x, want) ? 1 : -1;
}

static const char *type_name(json_object *v)
{
    return json_type_to_name(json_object_get_type(v));
}

/* member() of the reader of <where> <sect>.<key>, which expects what ("an integer"): on
 * -1 (another type), err says so. */
static int typed_member(json_object *obj, const char *where, const char *sect, const char *key,
                        json_type want, const char *what, json_object **v, char *err,
                        size_t errlen)
{
    int r = member(obj, key, want, v);
    if (r < 0)
        set_err(err, errlen, "%s %s.%s: expected %s, got %s", where, sect, key, what,
                type_name(*v));
    return r;
}

static int read_string(json_object *obj, const char *where, const char *sect, const char *key,
                       char *dst, size_t dstlen, char *err, size_t errlen)
{
    json_object *v;
    dst[0] = '\0';
    int r = typed_member(obj, where, sect, key, json_type_string, "a string", &v, err, errlen);
    if (r <= 0)
        return r;
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (n >= dstlen || strlen(s) != n) {
        set_err(err, errlen, "%s %s.%s: longer than %zu bytes or contains NUL", where, sect, key,
                dstlen - 1);
        return -1;
    }
    memcpy(dst, s, n + 1);
    return 0;
}

static int read_int32(json_object *obj, const char *where, const char *sect, const char *key,
                      int64_t *dst, char *err, size_t errlen)
{
    json_object *v;
    *dst = 0;
    int r = typed_member(obj, where, sect, key, json_type_int, "an integer", &v, err, errlen);
    if (r <= 0)
        return r;
    int64_t x = json_object_get_int64(v);
    if (x < 0 || x > INT32_MAX) {
        set_err(err, errlen, "%s %s.%s: %" PRId64 " is out of range 0..%d", where, sect, key, x,
                INT32_MAX);
        return -1;
    }
    *dst = x;
    return 0;
}

static int read_microtime(json_object *obj, const char *where, const char *sect,
                          const char *key, int64_t *dst, char *err, size_t errlen)
{
    json_object *v;
    *dst = 0;
    int r = typed_member(obj, where, sect, key, json_type_string, "a MicroTime string", &v, err,
                         errlen);
    if (r <= 0)
        return r;
    const char *s = json_object_get_string(v);
    int year = 0;
    for (int i = 0; i < 4; i++) {
        if (s[i] < '0' || s[i] > '9') {
            year = -1;
            break;
        }
        year = year * 10 + (s[i] - '0');
    }
    if (year < MICROTIME_MIN_YEAR || year > MICROTIME_MAX_YEAR ||
        clock_parse_rfc3339(s, dst) != 0) {
        *dst = 0;
        set_err(err, errlen, "%s %s.%s: \"%.64s\" is not an RFC 3339 time between %d and %d",
                where, sect, key, s, MICROTIME_MIN_YEAR, MICROTIME_MAX_YEAR);
        return -1;
    }
    return 0;
}

int election_record_from_json(json_object *lease, election_record_t *out, char *err,
                              size_t errlen)
{
    election_record_t r;
    memset(&r, 0, sizeof(r));
    char where[320] = "Lease";
    json_object *meta, *spec;
    int ret = -1;

    if (lease == NULL || !json_object_is_type(lease, json_type_object)) {
        set_err(err, errlen, "Lease: expected a JSON object, got %s",
                lease ? type_name(lease) : "nothing");
        goto out;
    }
    if (member(lease, "metadata", json_type_object, &meta) != 1) {
        set_err(err, errlen, "Lease: metadata is missing or not an object");
        goto out;
    }
    json_object *n, *ns;
    if (member(meta, "name", json_type_string, &n) == 1) {
        if (member(meta, "namespace", json_type_string, &ns) == 1)
            snprintf(where, sizeof(where), "Lease %.100s/%.100s", json_object_get_string(ns),
                     json_object_get_string(n));
        else
            snprintf(where, sizeof(where), "Lease %.100s", json_object_get_string(n));
    }
    if (read_string(meta, where, "metadata", "resourceVersion", r.resource_version,
                    sizeof(r.resource_version), err, errlen))
        goto out;
    if (r.resource_version[0] == '\0') {
        set_err(err, errlen, "%s metadata.resourceVersion: missing or empty", where);
        goto out;
    }
    if (member(lease, "spec", json_type_object, &spec) != 1) {
        set_err(err, errlen, "%s: spec is missing or not an object", where);
        goto out;
    }
    if (read_string(spec, where, "spec", "holderIdentity", r.holder, sizeof(r.holder), err,
                    errlen) ||
        read_int32(spec, where, "spec", "leaseDurationSeconds", &r.lease_duration_s, err,
                   errlen) ||
        read_microtime(spec, where, "spec", "acquireTime", &r.acquire_time_wall_ns, err,
                       errlen) ||
        read_microtime(spec, where, "spec", "renewTime", &r.renew_time_wall_ns, err, errlen) ||
        read_int32(spec, where, "spec", "leaseTransitions", &r.transitions, err, errlen))
        goto out;
    r.exists = 1;
    *out = r;
    ret = 0;
out:
    return ret;
}

/* Add val under key, taking ownership of val; -1 (val freed) when val is NULL (out of
 * memory) or the add fails. */
static int put(json_object *obj, const char *key, json_object *val)
{
    if (val == NULL)
        return -1;
    if (json_object_object_add(obj, key, val) != 0) {
        json_object_put(val);
        return -1;
    }
    return 0;
}

static int put_time(json_object *obj, const char *key, int64_t wall_ns)
{
    if (wall_ns == 0) {
        json_object_object_del(obj, key);
        return 0;
    }
    char t[48];
    clock_format_rfc3339(wall_ns, 6, t, sizeof(t));
    return put(obj, key, json_object_new_string(t));
}

/* The object under key in obj, created when absent. Returns NULL with err filled when it
 * is something else or memory runs out. */
static json_object *child_object(json_object *obj, const char *name, const char *key,
                                 char *err, size_t errlen)
{
    json_object *v;
    int r = member(obj, key, json_type_object, &v);
    if (r == 1)
        return v;
    if (r < 0) {
        set_err(err, errlen, "Lease %s: %s of the Lease read is a %s, not an object", name, key,
                type_name(v));
        return NULL;
    }
    v = json_object_new_object();
    if (put(obj, key, v)) {
        set_err(err, errlen, "Lease %s: out of memory", name);
        return NULL;
    }
    return v;
}

int election_record_to_json(const election_record_t *r, const char *name, const char *ns,
                            json_object *base, json_object **out, char *err, size_t errlen)
{
    json_object *o = NULL;
    int ret = -1;
    if (r == NULL || out == NULL || name == NULL || name[0] == '\0') {
        set_err(err, errlen, "Lease: record, name and output are required");
        goto out;
    }
    if (base != NULL) {
        if (!json_object_is_type(base, json_type_object) ||
            json_object_deep_copy(base, &o, NULL) != 0) {
            o = NULL;
            set_err(err, errlen,
                    "Lease %s: cannot copy the Lease read (not an object, or out of memory)", name);
            goto out;
        }
    } else if ((o = json_object_new_object()) == NULL) {
        goto oom;
    }
    json_object *meta, *spec;
    if ((meta = child_object(o, name, "metadata", err, errlen)) == NULL ||
        (spec = child_object(o, name, "spec", err, errlen)) == NULL)
        goto out;
    if (put(o, "apiVersion", json_object_new_string("coordination.k8s.io/v1")) ||
        put(o, "kind", json_object_new_string("Lease")))
        goto oom;
    if (put(meta, "name", json_object_new_string(name)))
        goto oom;
    if (ns != NULL && ns[0] != '\0' && put(meta, "namespace", json_object_new_string(ns)))
        goto oom;
    if (r->resource_version[0] != '\0') {
        if (put(meta, "resourceVersion", json_object_new_string(r->resource_version)))
            goto oom;
    } else {
        json_object_object_del(meta, "resourceVersion");
    }
    if (put(spec, "holderIdentity", json_object_new_string(r->holder)) ||
        put(spec, "leaseDurationSeconds", json_object_new_int64(r->lease_duration_s)) ||
        put_time(spec, "acquireTime", r->acquire_time_wall_ns) ||
        put_time(spec, "renewTime", r->renew_time_wall_ns) ||
        put(spec, "leaseTransitions", json_object_new_int64(r->transitions)))
        goto oom;
    *out = o;
    o = NULL;
    ret = 0;
    goto out;
oom:
    set_err(err, errlen, "Lease %s: out of memory", name);
out:
    json_object_put(o);
    return ret;
}
