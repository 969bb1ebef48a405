/* election: the pure core of leader election over a coordination.k8s.io/v1 Lease.
 *
 * The machine does no I/O and reads no clock. The shell (electord's event loop) GETs the
 * Lease, hands what it read to election_step() together with the current monotonic and
 * wall-clock times, performs the write the machine asks for (POST or PUT with the
 * resourceVersion it read: optimistic concurrency), and reports the outcome with
 * election_write_result(). Every decision is therefore a function of its inputs and can be
 * tested over a fake clock and a fake Lease store.
 *
 * Mapping to client-go (k8s.io/client-go/tools/leaderelection, LeaderElector):
 *
 *   acquire loop   wait.JitterUntil(tryAcquireOrRenew, RetryPeriod, JitterFactor 1.2):
 *                  while not leader, every attempt is GET + election_step(); after a WAIT
 *                  the next attempt is due RetryPeriod * (1 + 1.2 * rand) later (client-go's
 *                  wait.Jitter), drawn from a PRNG seeded by the config (still pure).
 *   renew loop     wait.Until(PollImmediateUntil(RetryPeriod, tryAcquireOrRenew,
 *                  timeout RenewDeadline), RetryPeriod): the leader renews every
 *                  RetryPeriod and retries a failed renew every RetryPeriod; when no renew
 *                  has succeeded for the renew deadline it steps down (ELECTION_EV_LOST).
 *                  The deadline is measured from the START of the last successful renew
 *                  (client-go measures it from the start of the first failing round, one
 *                  retry period plus a request's latency later), so we are stricter.
 *   tryAcquireOrRenew, step by step, as election_step():
 *     1. fast path: the leader PUTs its last written record without a GET
 *        (election_step_cached(); after a failed fast path the next attempt GETs).
 *     2. GET; NotFound -> CREATE with leaseTransitions 0, acquireTime = renewTime = now.
 *     3. the record's spec differs from the observed one -> observedRecord = it,
 *        observedTime = now (OUR monotonic clock). renewTime is never compared with our
 *        clock: a remote clock hours off has no effect, only observed changes matter.
 *     4. holder non-empty, observedTime + leaseDurationSeconds > now, not leader -> WAIT.
 *     5. leader: UPDATE keeping acquireTime and leaseTransitions (renew); otherwise UPDATE
 *        with leaseTransitions + 1 and acquireTime = now (acquire). An empty holder (a
 *        released Lease) can be taken at once.
 *     6. on success setObservedRecord(written record) -> election_write_result(OK).
 *   maybeReportTransition / OnNewLeader -> ELECTION_EV_NEW_LEADER (holder may be "").
 *   ReleaseOnCancel / release() -> election_release(): holderIdentity "",
 *                  leaseDurationSeconds 1, acquireTime = renewTime = now, leaseTransitions
 *                  kept, so a standby takes the Lease at its next retry.
 *
 * Where this machine is stricter than client-go (each keeps the other's rules intact, so a
 * client-go replica and this one respect each other's Leases):
 *   - a leader that observes another holder, or a deleted Lease, steps down at once
 *     (client-go keeps polling until its renew deadline);
 *   - a replica that stepped down never resumes its old term, even when the Lease still
 *     names it: it waits for the Lease to expire like anyone else and then acquires a new
 *     term (leaseTransitions + 1), so every term has its own epoch;
 *   - a renew always changes renewTime (it is moved past the observed one if our wall clock
 *     stepped back), because observers only restart their clock on a visible change;
 *   - the lease duration must be a whole number of seconds (leaseDurationSeconds is an
 *     integer; client-go truncates, which would silently shorten the lease for others).
 *
 * Fencing (invariant 3). Others judge our Lease expired no earlier than lease_duration after
 * they saw our last renew, and they cannot see it before the request that wrote it
 * started. So with S = monotonic time at which the last successful renew (or acquire) was
 * decided (<= the start of its request):
 *
 *     fence_deadline = S + min(renew_deadline, lease_duration - safety_margin)
 *
 * election_may_write(e, now) is true only while leader and now < fence_deadline, and the
 * machine steps down (ELECTION_EV_LOST) at fence_deadline. safety_margin (default
 * lease_duration / 10) absorbs monotonic clock RATE differences between replicas; the
 * renew deadline (< lease_duration) usually binds first. A write that is in flight at the
 * fence must not be able to land after it: give every guarded request a timeout that ends
 * at election_fence_deadline().
 *
 * The epoch published with is_leader is the leaseTransitions value of the term we won; it
 * grows with every change of holder. Limitation: deleting the Lease resets
 * leaseTransitions to 0 (client-go does the same on create), so epochs are only ordered
 * while the Lease object lives.
 */
#ifndef RDC_ELECTION_H
#define RDC_ELECTION_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define ELECTION_HOLDER_MAX 256
#define ELECTION_RV_MAX 64

/* Default timings, as controller-runtime's manager. */
#define ELECTION_DEFAULT_LEASE_DURATION_NS (INT64_C(15) * INT64_C(1000000000))
#define ELECTION_DEFAULT_RENEW_DEADLINE_NS (INT64_C(10) * INT64_C(1000000000))
#define ELECTION_DEFAULT_RETRY_PERIOD_NS (INT64_C(2) * INT64_C(1000000000))

/* The election state of a Lease, as client-go's LeaderElectionRecord plus the Lease's
 * resourceVersion. Times are wall-clock ns since the epoch (MicroTime: microsecond
 * precision on the wire), 0 when absent. exists is 0 for "the Lease is not there". */
typedef struct {
    char holder[ELECTION_HOLDER_MAX];
    int64_t lease_duration_s;
    int64_t acquire_time_wall_ns, renew_time_wall_ns;
    int64_t transitions;
    char resource_version[ELECTION_RV_MAX];
    int exists;
} election_record_t;

typedef struct {
    const char *id;           /* Lease name (--leader-election-id); copied */
    const char *identity;     /* our holderIdentity (hostname_uuid); copied */
    int64_t lease_duration_ns; /* whole seconds, > renew_deadline_ns */
    int64_t renew_deadline_ns; /* > 1.2 x retry_period_ns */
    int64_t retry_period_ns;  /* > 0 */
    int64_t safety_margin_ns; /* 0 = lease_duration / 10; see "Fencing" above */
    uint64_t seed;            /* seeds the retry jitter; give each process a random one */
} election_config_t;

typedef enum {
    ELECTION_WAIT = 0, /* nothing to write; attempt again at wakeup_mono_ns */
    ELECTION_CREATE,   /* POST the record (the Lease did not exist) */
    ELECTION_UPDATE    /* PUT the record with its resource_version as precondition */
} election_action_t;

/* Transitions, or-ed together into an `events` bit set so the shell can log and publish. */
enum {
    ELECTION_EV_BECAME_LEADER = 1u << 0, /* we hold the Lease: epoch = election_epoch() */
    ELECTION_EV_LOST = 1u << 1,          /* we stopped leading (deadline, takeover, release) */
    ELECTION_EV_NEW_LEADER = 1u << 2     /* the observed holder changed: election_holder() */
};

typedef struct {
    election_action_t action;
    election_record_t record; /* CREATE/UPDATE: the Lease to write */
    int64_t wakeup_mono_ns;   /* the next election_next_wakeup(); INT64_MAX: never */
    unsigned events;          /* ELECTION_EV_* that happened during this step */
} election_decision_t;

typedef enum {
    ELECTION_WRITE_OK = 0,   /* 200/201: resource_version is the Lease's new one */
    ELECTION_WRITE_CONFLICT, /* 409: stale resourceVersion, or AlreadyExists on create */
    ELECTION_WRITE_ERROR     /* anything else, including timeouts: outcome unknown */
} election_write_status_t;

/* election_release() result when there is nothing to release (we do not lead). */
#define ELECTION_NOTHING 1

typedef struct election election_t;

/* Check flags as client-go's NewLeaderElector does, plus our own limits: every duration
 * > 0 and <= 24h, lease duration a whole number of seconds, lease duration > renew
 * deadline > 1.2 x retry period, 0 <= safety margin < lease duration, non-empty id and
 * identity that fit a Lease. Returns 0, or -1 with a message naming the flag in err. */
int election_validate_config(const election_config_t *cfg, char *err, size_t errlen);

/* Create a follower that has observed nothing; its first attempt is due at once. Returns
 * NULL with a message in err when the config is invalid or memory runs out. */
election_t *election_new(const election_config_t *cfg, char *err, size_t errlen);

/* Free the machine and set *e to NULL. NULL and *e == NULL are accepted. */
void election_destroy(election_t **e);

/* One attempt of tryAcquireOrRenew: `observed` is what the GET returned (exists 0 for
 * NotFound), or NULL when the GET failed (an existing record without a resourceVersion
 * counts as a failed read: a write must be conditional); now_mono_ns should be taken after the GET
 * returned, as it is the moment the record was observed and the start of any write
 * decided. Fills *out with the write to perform, if any, and the events that happened
 * (a leader that finds the Lease gone or held by another steps down first). When
 * out->action is CREATE or UPDATE a write is pending and the shell must report it with
 * election_write_result() before stepping again.
 * Returns 0, or -1 (nothing changed, out->action WAIT) when a write is still pending. */
int election_step(election_t *e, int64_t now_mono_ns, int64_t now_wall_ns,
                  const election_record_t *observed, election_decision_t *out);

/* client-go's fast path: when we lead, decide a renew from the record we last wrote,
 * without a GET. Returns 0 with out filled as election_step(); or ELECTION_NOTHING,
 * changing nothing, when the fast path does not apply (not leader, past the fence, last
 * attempt failed, write pending): the shell then GETs and calls election_step(). */
int election_step_cached(election_t *e, int64_t now_mono_ns, int64_t now_wall_ns,
                         election_decision_t *out);

/* Report the outcome of the pending write. resource_version is the Lease's new one and is
 * required with ELECTION_WRITE_OK. Sets *events (may be NULL). Returns 0; or -1 when no
 * write is pending (nothing changes) or OK came without a usable resource_version (then
 * the write is treated as ELECTION_WRITE_ERROR: outcome unknown). */
int election_write_result(election_t *e, int64_t now_mono_ns, election_write_status_t status,
                          const char *resource_version, unsigned *events);

/* Apply deadlines without an observation (step down at the fence deadline). Call it at
 * election_next_wakeup() even while a request is in flight. Returns the events. */
unsigned election_tick(election_t *e, int64_t now_mono_ns);

/* Give the Lease up for a graceful shutdown (client-go's ReleaseOnCancel). When we lead:
 * stop leading at once (may_write is false from now on, events gets ELECTION_EV_LOST),
 * fill *out with the record to PUT, mark it pending (report it with
 * election_write_result()) and return 0; a write still pending is abandoned. When we do
 * not lead return ELECTION_NOTHING. Either way the machine is finished: later steps WAIT
 * forever. */
int election_release(election_t *e, int64_t now_mono_ns, int64_t now_wall_ns,
                     election_record_t *out, unsigned *events);

/* 1 while we lead (between BECAME_LEADER and LOST), else 0. */
int election_is_leader(const election_t *e);

/* 1 when guarded writes are allowed at now: we lead and now < the fence deadline. */
int election_may_write(const election_t *e, int64_t now_mono_ns);

/* The monotonic time after which guarded writes must not happen; INT64_MIN when not
 * leader. */
int64_t election_fence_deadline(const election_t *e);

/* The leaseTransitions value of the term we lead, or -1 when not leader. */
int64_t election_epoch(const election_t *e);

/* 1 when the shell should GET and step now: no write pending, not released, and the next
 * attempt is due. */
int election_attempt_due(const election_t *e, int64_t now_mono_ns);

/* The earliest monotonic time at which the shell must call election_tick() and, when
 * election_attempt_due(), attempt: the next attempt or, while leading, the fence deadline.
 * INT64_MAX when nothing is scheduled. */
int64_t election_next_wakeup(const election_t *e);

/* The last observed holder ("" when none or not yet observed); owned by e, valid until the
 * next call that changes e. */
const char *election_holder(const election_t *e);

/* The leaseTransitions of the last observed record, 0 when none. */
int64_t election_observed_transitions(const election_t *e);

/* Our identity and the Lease name, as configured; owned by e. */
const char *election_identity(const election_t *e);
const char *election_id(const election_t *e);

/* Build an identity as client-go does, hostname + "_" + a UUID (version 4, from the 16
 * random bytes given). Returns 0, or -1 when it does not fit len or a Lease holder. */
int election_make_identity(const char *hostname, const unsigned char random16[16], char *out,
                           size_t len);

/* Read a Lease object (as GET returns it) into *out (exists = 1). metadata.resourceVersion
 * and spec are required; absent spec fields read as client-go reads them (holder "",
 * duration 0, times 0, transitions 0). Returns 0; or -1 with a message naming the field in
 * err, leaving *out unchanged, for anything malformed (wrong types, out-of-range numbers,
 * bad MicroTime, over-long strings). Never keeps a reference to lease. */
int election_record_from_json(json_object *lease, election_record_t *out, char *err,
                              size_t errlen);

/* Build the Lease to POST/PUT for record r: apiVersion, kind, metadata name, namespace
 * (omitted when NULL or "") and resourceVersion (omitted when r's is ""), spec
 * holderIdentity, leaseDurationSeconds, acquireTime, renewTime (MicroTime, omitted when 0)
 * and leaseTransitions. When base (the Lease as last read) is not NULL it is deep-copied
 * first, so labels, annotations and other spec fields survive a PUT; base is not
 * modified. On success *out is a new object the caller puts; returns 0. Returns -1 with
 * err filled and *out untouched on a bad argument or out of memory. */
int election_record_to_json(const election_record_t *r, const char *name, const char *ns,
                            json_object *base, json_object **out, char *err, size_t errlen);

#endif
