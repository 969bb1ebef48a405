/* sim_env: what the simulations' test drivers share (test_sim_failover.c,
 * test_sim_cluster.c): their knobs from the environment, a list of fault names as a bit
 * set, the replay line's settings, a stopwatch, and the event digest. Header only. */
#ifndef RDC_TESTS_SIM_ENV_H
#define RDC_TESTS_SIM_ENV_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The integer in environment variable name (any base strtoll reads), else dflt. */
static inline int64_t sim_env_int(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 0) : dflt;
}

/* The comma-separated names in environment variable var as a bit set over the kinds
 * 0..count-1 that name_of names (unknown names are ignored); 0 when unset. */
static inline unsigned sim_env_kinds(const char *var, int count, const char *(*name_of)(int))
{
    const char *v = getenv(var);
    unsigned bits = 0;
    for (const char *p = v; p && *p;) {
        size_t l = strcspn(p, ",");
        for (int f = 0; f < count; f++)
            if (strlen(name_of(f)) == l && !strncmp(p, name_of(f), l))
                bits |= 1u << f;
        p += l + (p[l] == ',');
    }
    return bits;
}

/* " NAME=value" for each of the nknobs environment variables that is set, into out[cap]:
 * the settings a replay needs besides the seed. */
static inline void sim_env_knobs(const char *const *knobs, size_t nknobs, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t k = 0; k < nknobs; k++) {
        const char *v = getenv(knobs[k]);
        size_t l = strlen(out);
        if (v && *v && l < cap)
            snprintf(out + l, cap - l, " %s=%s", knobs[k], v);
    }
}

/* Seconds on the monotonic clock (a run's wall time, never its schedule). */
static inline double sim_env_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The digest of a run's events: FNV-1a over len bytes of p, folded into *d. */
static inline void sim_digest(uint64_t *d, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        *d = (*d ^ b[i]) * UINT64_C(0x100000001b3);
}

#endif
