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

/* One seed's run for sim_env_seeds: seed, steps, trace (stderr when SIM_TRACE is set for
 * a replay, else NULL) and the trace level; it prints a failure and adds the run to the
 * caller's totals. Returns 0 (held), 1 (an invariant broke) or -1 (no world), with the
 * steps run and the run's digest. */
typedef int (*sim_seed_fn)(void *arg, uint64_t seed, int64_t steps, FILE *trace, int64_t level, int64_t *ran,
                           uint64_t *digest);

/* The seeds of a simulation's unit test: from SIM_SEED (default 1), SIM_STEPS (default
 * dflt_steps) steps each, until SIM_TOTAL (default dflt_total) steps in all; a failure
 * counted in *failed, stopping at max_failures (a broken rule fails every seed: a few say
 * enough). SIM_SEED without SIM_TOTAL is a replay: that seed alone, traced with
 * SIM_TRACE, its digest printed. Returns 1 for a replay, else 0; *secs the wall time. */
static inline int sim_env_seeds(int64_t dflt_total, int64_t dflt_steps, int max_failures, sim_seed_fn one, void *arg,
                                int *failed, int *world_missing, double *secs)
{
    int replay = getenv("SIM_SEED") && !getenv("SIM_TOTAL");
    int64_t per = sim_env_int("SIM_STEPS", dflt_steps);
    int64_t total = replay ? per : sim_env_int("SIM_TOTAL", dflt_total);
    int64_t level = replay ? sim_env_int("SIM_TRACE", 0) : 0;
    uint64_t seed = (uint64_t)sim_env_int("SIM_SEED", 1);
    double a = sim_env_now();
    *failed = *world_missing = 0;
    for (int64_t done = 0; done < total; seed++) {
        int64_t ran = 0;
        uint64_t digest = 0;
        int rc = one(arg, seed, per, level ? stderr : NULL, level, &ran, &digest);
        if (rc < 0) {
            *world_missing = 1;
            break;
        }
        *failed += rc;
        if (replay)
            fprintf(stderr, "\n  seed %#llx: digest %016llx", (unsigned long long)seed, (unsigned long long)digest);
        done += ran;
        if (replay || *failed == max_failures)
            break;
    }
    *secs = sim_env_now() - a;
    return replay;
}

/* The digest of a run's events: FNV-1a over len bytes of p, folded into *d. */
static inline void sim_digest(uint64_t *d, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        *d = (*d ^ b[i]) * UINT64_C(0x100000001b3);
}

#endif
