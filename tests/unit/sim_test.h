/* sim_test: what the unit tests of the simulations (test_sim_failover, test_sim_cluster)
 * share around sim_env.h: the seeds run until SIM_TOTAL steps, each one required to hold,
 * and the check that a replay is deterministic. Each test gives its simulation as one
 * function, sim_test_run_fn, and keeps its own totals, knobs and findings. */
#ifndef RDC_SIM_TEST_H
#define RDC_SIM_TEST_H

#include "sim_env.h"

#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>

/* One run as these tests read it. */
typedef struct {
    int rc;          /* 0 held, 1 an invariant broke, -1 no world (the others unset) */
    int64_t steps;   /* steps run */
    int64_t step;    /* the step it ended at */
    int64_t acked;   /* writes acknowledged */
    uint64_t digest; /* of its events */
} sim_test_run_t;

/* Runs the simulation under test for seed, steps steps, with its knobs from the
 * environment, traced to trace (NULL: not) at trace level level. With totals (the test's
 * own; NULL: a bare run) a broken invariant is printed with its replay command and the
 * run is added to them. */
typedef void (*sim_test_run_fn)(void *totals, uint64_t seed, int64_t steps, FILE *trace, int64_t level,
                                sim_test_run_t *out);

typedef struct {
    sim_test_run_fn run;
    void *totals;
} sim_test_seed_arg_t;

/* sim_env_seeds' one seed: the run must hold. */
static inline int sim_test_one_seed(void *arg, uint64_t seed, int64_t steps, FILE *trace, int64_t level,
                                    int64_t *ran, uint64_t *digest)
{
    const sim_test_seed_arg_t *a = arg;
    sim_test_run_t r;
    a->run(a->totals, seed, steps, trace, level, &r);
    if (r.rc < 0)
        return -1;
    CU_ASSERT_EQUAL(r.rc, 0);
    *ran = r.steps;
    *digest = r.digest;
    return r.rc;
}

/* Prints the totals of the seeds run: the test's own type behind totals; secs the wall time. */
typedef void (*sim_test_print_fn)(const void *totals, double secs);

/* The seeds of sim_env_seeds (SIM_SEED, SIM_STEPS, SIM_TOTAL; defaults dflt_total and
 * dflt_steps; at most max_failures failed), each run added to totals and required to
 * hold, then the totals printed by print; the test stops when there is no world.
 * Returns 1 for a replay (one seed asked for), else 0. */
static inline int sim_test_seeds(sim_test_run_fn run, void *totals, sim_test_print_fn print, int64_t dflt_total,
                                 int64_t dflt_steps, int max_failures)
{
    sim_test_seed_arg_t arg = {run, totals};
    int failed, missing;
    double secs;
    int replay = sim_env_seeds(dflt_total, dflt_steps, max_failures, sim_test_one_seed, &arg, &failed, &missing,
                               &secs);
    CU_ASSERT_FALSE_FATAL(missing);
    print(totals, secs);
    return replay;
}

/* A sim_test_run_fn's tail, for a run of seed's steps steps that broke an invariant: prints
 * the step, the world's size in words (size, e.g. "3 pods"), why, and the command that
 * replays it with build/tests/test and the knobs[nknobs] of the environment that are set. */
static inline void sim_test_print_failure(const char *test, uint64_t seed, int64_t steps, int64_t step,
                                          const char *size, const char *why, const char *const *knobs,
                                          size_t nknobs)
{
    char env[512];
    sim_env_knobs(knobs, nknobs, env, sizeof(env));
    fprintf(stderr,
            "\n  SIMULATION FAILED: seed %#llx, step %lld (%s): %s\n"
            "  replay: SIM_SEED=%#llx SIM_STEPS=%lld%s SIM_TRACE=1 build/tests/%s\n",
            (unsigned long long)seed, (long long)step, size, why, (unsigned long long)seed, (long long)steps, env,
            test);
}

/* A run's last steps are without faults: a tenth of them, at most SIM_TEST_TAIL_STEPS (200
 * simulated seconds); it must have converged within SIM_TEST_CONVERGE_WITHIN steps (3
 * minutes) of the last fault, or within the tail when that is shorter. */
#define SIM_TEST_TAIL_STEPS 2000
#define SIM_TEST_CONVERGE_WITHIN 1800

/* Sets a simulation's configuration c (sim_cfg_t or sc_cfg_t): its seed, its steps and
 * from them its tail and converge_within as above. A macro for the reason of
 * SIM_TEST_ADD_SHARED below. */
#define SIM_TEST_CFG_STEPS(c, seed_, steps_)                                                                       \
    do {                                                                                                           \
        (c).seed = (seed_);                                                                                        \
        (c).steps = (steps_);                                                                                      \
        (c).tail = (c).steps / 10 < SIM_TEST_TAIL_STEPS ? (c).steps / 10 : SIM_TEST_TAIL_STEPS;                    \
        (c).converge_within = (c).tail < SIM_TEST_CONVERGE_WITHIN ? (c).tail : SIM_TEST_CONVERGE_WITHIN;           \
    } while (0)

/* Adds a run's result r (sim_result_t or sc_result_t) to a test's totals t: the counters
 * both simulations have (seeds, failed, steps, writes, acked, reconciles, commands,
 * recoveries, the faults by kind) summed, recover_max and converge_max the longest. Each
 * test adds its own counters after it. A macro: the two results are different types with
 * these fields named alike. */
#define SIM_TEST_ADD_SHARED(t, r)                                                                                  \
    do {                                                                                                           \
        (t)->seeds++;                                                                                              \
        (t)->failed += (r)->failed;                                                                                \
        (t)->steps += (r)->steps;                                                                                  \
        (t)->writes += (r)->writes;                                                                                \
        (t)->acked += (r)->acked;                                                                                  \
        (t)->reconciles += (r)->reconciles;                                                                        \
        (t)->commands += (r)->commands;                                                                            \
        (t)->recoveries += (r)->recoveries;                                                                        \
        if ((r)->recover_max_steps > (t)->recover_max)                                                             \
            (t)->recover_max = (r)->recover_max_steps;                                                             \
        if ((r)->converged_after > (t)->converge_max)                                                              \
            (t)->converge_max = (r)->converged_after;                                                              \
        for (size_t f_ = 0; f_ < sizeof((t)->faults) / sizeof((t)->faults[0]); f_++)                               \
            (t)->faults[f_] += (r)->faults[f_];                                                                    \
    } while (0)

/* Prints "\n  faults:" and each kind that happened (name(kind) and its count, of the
 * n kinds in faults), then a newline: the totals' last line. */
static inline void sim_test_print_faults(const int64_t *faults, int n, const char *(*name)(int))
{
    fprintf(stderr, "\n  faults:");
    for (int f = 0; f < n; f++)
        if (faults[f])
            fprintf(stderr, " %s %lld", name(f), (long long)faults[f]);
    fprintf(stderr, "\n");
}

/* The same seed gives the same run, event for event, traced (to /dev/null, at level) or
 * not; the next seed another: for seeds first..last, 6000 steps each. */
static inline void sim_test_replay(sim_test_run_fn run, uint64_t first, uint64_t last, int64_t level)
{
    FILE *devnull = fopen("/dev/null", "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(devnull);
    for (uint64_t seed = first; seed <= last; seed++) {
        sim_test_run_t r1, r2, r3;
        run(NULL, seed, 6000, NULL, 0, &r1);
        CU_ASSERT_NOT_EQUAL_FATAL(r1.rc, -1);
        run(NULL, seed, 6000, devnull, level, &r2);
        CU_ASSERT_NOT_EQUAL_FATAL(r2.rc, -1);
        CU_ASSERT_EQUAL(r1.digest, r2.digest);
        CU_ASSERT_EQUAL(r1.acked, r2.acked);
        CU_ASSERT_EQUAL(r1.step, r2.step);
        run(NULL, seed + 1, 6000, NULL, level, &r3);
        CU_ASSERT_NOT_EQUAL_FATAL(r3.rc, -1);
        CU_ASSERT_NOT_EQUAL(r1.digest, r3.digest);
    }
    fclose(devnull);
}

#endif
