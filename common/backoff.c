#include "backoff.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int64_t backoff_exponential(int64_t base_ns, int64_t cap_ns, unsigned attempt)
{
    if (base_ns <= 0)
        return 0;
    int64_t limit = cap_ns > 0 ? cap_ns : INT64_MAX;
    if (base_ns >= limit)
        return limit;
    int64_t d = base_ns;
    /* Double until the cap is reached; stop before an overflow can happen. */
    for (unsigned i = 0; i < attempt; i++) {
        if (d > limit / 2)
            return limit;
        d *= 2;
    }
    return d < limit ? d : limit;
}

uint64_t backoff_rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

double backoff_rng_unit(uint64_t *state)
{
    return (double)(backoff_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* d + x with saturation at INT64_MAX; x >= 0. */
static int64_t add_saturating(int64_t d, double x)
{
    double sum = (double)d + x;
    if (sum >= 9223372036854775807.0)
        return INT64_MAX;
    int64_t r = (int64_t)sum;
    return r < d ? d : r;
}

int64_t backoff_jitter(int64_t d, double factor, uint64_t *rng_state)
{
    if (d <= 0)
        return d;
    if (!(factor > 0))
        factor = 1.0;
    double r = backoff_rng_unit(rng_state);
    return add_saturating(d, r * factor * (double)d);
}

int64_t backoff_spread(int64_t d, double spread, uint64_t *rng_state)
{
    if (d <= 0)
        return d;
    if (!(spread > 0))
        spread = 0;
    if (spread > 1)
        spread = 1;
    double r = backoff_rng_unit(rng_state);
    double v = (double)d * (1.0 - spread) + r * 2.0 * spread * (double)d;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    return v < 0 ? 0 : (int64_t)v;
}

uint64_t backoff_rng_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
        /* No entropy yet (early boot) or no syscall: mix what differs between runs. */
        struct timespec a, b;
        clock_gettime(CLOCK_REALTIME, &a);
        clock_gettime(CLOCK_MONOTONIC, &b);
        uint64_t mix = (uint64_t)a.tv_nsec ^ ((uint64_t)a.tv_sec << 20) ^
                       ((uint64_t)b.tv_nsec << 7) ^ ((uint64_t)getpid() << 40);
        seed = backoff_rng_next(&mix);
    }
    return seed ? seed : UINT64_C(0x853C49E6748FEA9B);
}

void backoff_init(backoff_t *b, int64_t base_ns, int64_t cap_ns, double jitter,
                  uint64_t seed)
{
    b->base_ns = base_ns;
    b->cap_ns = cap_ns;
    b->jitter = jitter;
    b->attempt = 0;
    b->rng = seed ? seed : backoff_rng_seed();
}

int64_t backoff_next(backoff_t *b)
{
    int64_t d = backoff_exponential(b->base_ns, b->cap_ns, b->attempt);
    if (b->attempt < 64)
        b->attempt++;
    if (b->jitter > 0)
        d = backoff_jitter(d, b->jitter, &b->rng);
    return d;
}

void backoff_reset(backoff_t *b)
{
    b->attempt = 0;
}
