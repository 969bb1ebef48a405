/* ratelimit: a token bucket with explicit time (golang.org/x/time/rate semantics, as
 * client-go's QPS/burst limiter uses it).
 *
 * The bucket holds up to burst tokens and refills at qps tokens per second. A caller
 * reserves one token per request and is told how long to wait before it may proceed;
 * the reservation is binding (the token is consumed now, possibly driving the bucket
 * into debt that later callers wait out), so N callers reserving at the same instant are
 * spaced 1/qps apart. Time is passed in by the caller (monotonic ns), which keeps the
 * module pure and the tests exact. Not thread-safe; one limiter per client.
 */
#ifndef RDC_RATELIMIT_H
#define RDC_RATELIMIT_H

#include <stdint.h>

typedef struct {
    double qps;      /* refill rate; <= 0 = unlimited */
    int burst;       /* bucket size (>= 1) */
    double tokens;   /* tokens at time last_ns; negative = debt */
    int64_t last_ns; /* time of the last update */
    int started;     /* 0 until the first call that passes a time */
} ratelimit_t;

/* Initialise a full bucket. qps <= 0 (or NaN) means unlimited: every reservation is
 * immediate. burst < 1 is treated as 1 (a limiter that never admits anything is not
 * useful). */
void ratelimit_init(ratelimit_t *rl, double qps, int burst);

/* 1 when the limiter never delays. */
int ratelimit_unlimited(const ratelimit_t *rl);

/* Reserve one token at now_ns and return how long (ns, >= 0) the caller must wait before
 * acting; 0 = act now. Always consumes. A clock that goes backwards is treated as not
 * moving. */
int64_t ratelimit_reserve(ratelimit_t *rl, int64_t now_ns);

/* Like ratelimit_reserve, but only when the wait would be at most max_wait_ns: returns
 * 0 and stores the wait in *wait_ns, or returns -1 and consumes nothing (as client-go's
 * Wait refuses a wait that would pass the context deadline). */
int ratelimit_try_reserve(ratelimit_t *rl, int64_t now_ns, int64_t max_wait_ns,
                          int64_t *wait_ns);

/* The wait a reservation made at now_ns would get, without consuming anything. */
int64_t ratelimit_when(const ratelimit_t *rl, int64_t now_ns);

/* Take a token only if one is available at now_ns: returns 1 (consumed) or 0 (nothing
 * changed). */
int ratelimit_allow(ratelimit_t *rl, int64_t now_ns);

/* Tokens available at now_ns (negative while in debt); for metrics and tests. */
double ratelimit_tokens(const ratelimit_t *rl, int64_t now_ns);

#endif
