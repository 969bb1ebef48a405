/* backoff: pure helpers that pick the next retry delay, and a small seeded RNG.
 *
 * Nothing here reads a clock or sleeps: callers turn the returned delay into a deadline
 * (or, in the blocking REST client, a bounded sleep). The random source is explicit so
 * that tests are deterministic; backoff_rng_seed() seeds one from getrandom().
 *
 * Users: the REST client's retries, the work queue's per-key backoff (client-go's
 * ItemExponentialFailureRateLimiter, 5 ms .. 1000 s) and watch/worker reconnects.
 */
#ifndef RDC_BACKOFF_H
#define RDC_BACKOFF_H

#include <stdint.h>

/* base_ns * 2^attempt, capped at cap_ns (attempt 0 gives base_ns). Never overflows: any
 * result above cap_ns (or INT64_MAX) is cap_ns. base_ns <= 0 gives 0; cap_ns <= 0 means
 * no cap beyond INT64_MAX. Pure. */
int64_t backoff_exponential(int64_t base_ns, int64_t cap_ns, unsigned attempt);

/* Jitter as client-go's wait.Jitter does: d + r * factor * d with r uniform in [0, 1)
 * drawn from *rng_state; factor <= 0 means 1. The result lies in [d, d + factor*d) and
 * saturates at INT64_MAX. d <= 0 gives d. Advances *rng_state. */
int64_t backoff_jitter(int64_t d, double factor, uint64_t *rng_state);

/* Full jitter around a centre: uniform in [d * (1 - spread), d * (1 + spread)), spread
 * clamped to [0, 1]. Used for reconnect delays where a thundering herd must spread out
 * both ways. Advances *rng_state. */
int64_t backoff_spread(int64_t d, double spread, uint64_t *rng_state);

/* A new RNG state from getrandom(); falls back to the clocks and the pid when getrandom
 * fails. Never returns 0. */
uint64_t backoff_rng_seed(void);

/* Next 64 random bits (splitmix64); advances *state. Any state value is valid. */
uint64_t backoff_rng_next(uint64_t *state);

/* Uniform double in [0, 1) with 53 random bits; advances *state. */
double backoff_rng_unit(uint64_t *state);

/* A retry sequence: attempt counter plus the parameters, for callers that back off one
 * thing at a time (a reconnect loop). A plain value; no allocation. */
typedef struct {
    int64_t base_ns;   /* first delay */
    int64_t cap_ns;    /* largest delay before jitter */
    double jitter;     /* factor for backoff_jitter; 0 = none */
    unsigned attempt;  /* failures so far */
    uint64_t rng;      /* RNG state */
} backoff_t;

/* Initialise a sequence; the RNG is seeded with seed, or from getrandom() when seed is
 * 0. */
void backoff_init(backoff_t *b, int64_t base_ns, int64_t cap_ns, double jitter,
                  uint64_t seed);

/* The delay before the next try, and count one more failure. */
int64_t backoff_next(backoff_t *b);

/* Forget past failures (call after a success). */
void backoff_reset(backoff_t *b);

#endif
