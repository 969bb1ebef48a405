/* sim_rng: the simulation's only source of randomness, splitmix64 (Steele, Lea and
 * Flood, "Fast splittable pseudorandom number generators", 2014): a 64-bit state, one
 * addition and a mix per draw. The same seed gives the same schedule on every machine,
 * which is what makes a failing seed replayable. */
#ifndef RDC_TESTS_SIM_RNG_H
#define RDC_TESTS_SIM_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s;
} sim_rng_t;

static inline uint64_t sim_rng_next(sim_rng_t *r)
{
    uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A number in [0, n) (n > 0); the modulo bias is irrelevant at these sizes. */
static inline int64_t sim_rng_below(sim_rng_t *r, int64_t n)
{
    return (int64_t)(sim_rng_next(r) % (uint64_t)n);
}

/* A number in [lo, hi]. */
static inline int64_t sim_rng_range(sim_rng_t *r, int64_t lo, int64_t hi)
{
    return lo + sim_rng_below(r, hi - lo + 1);
}

/* 1 with probability num/den. */
static inline int sim_rng_chance(sim_rng_t *r, int64_t num, int64_t den)
{
    return sim_rng_below(r, den) < num;
}

#endif
