/* Unit tests for ratelimit (token bucket with explicit time) and backoff (pure delay
 * helpers). Time is a plain number here: no test sleeps. */
#include "backoff.h"
#include "clock.h"
#include "cu_table.h"
#include "ratelimit.h"
#include "ratelimit_shared.h"

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS NS_PER_MS
#define SEC NS_PER_SEC

/* |a - b| <= 1 µs: the bucket works in double precision. Evaluates a once. */
#define ASSERT_NS(a, b)                                                                     \
    do {                                                                                    \
        int64_t got_ = (a), want_ = (b);                                                    \
        CU_ASSERT((got_ > want_ ? got_ - want_ : want_ - got_) <= 1000);                    \
    } while (0)

static void test_burst_then_spacing(void)
{
    ratelimit_t rl;
    ratelimit_init(&rl, 10.0, 3); /* 10 qps: one token per 100 ms */
    int64_t t0 = 5 * SEC;
    /* The bucket starts full: burst requests go at once. */
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(ratelimit_reserve(&rl, t0), 0);
    /* Then each request at the same instant waits one more interval. */
    ASSERT_NS(ratelimit_reserve(&rl, t0), 100 * MS);
    ASSERT_NS(ratelimit_reserve(&rl, t0), 200 * MS);
    ASSERT_NS(ratelimit_reserve(&rl, t0), 300 * MS);
    /* A caller arriving 250 ms later queues behind those reservations. */
    ASSERT_NS(ratelimit_reserve(&rl, t0 + 250 * MS), 150 * MS);
}

static void test_steady_rate(void)
{
    ratelimit_t rl;
    ratelimit_init(&rl, 5.0, 1);
    int64_t t = 0;
    CU_ASSERT_EQUAL(ratelimit_reserve(&rl, t), 0);
    /* A caller that always waits what it is told proceeds exactly every 200 ms. */
    for (int i = 0; i < 20; i++) {
        int64_t w = ratelimit_reserve(&rl, t);
        ASSERT_NS(w, 200 * MS);
        t += w;
    }
    ASSERT_NS(t, 20 * 200 * MS);
    /* 100 requests spread over 20 s at 5 qps never wait. */
    ratelimit_init(&rl, 5.0, 1);
    for (int i = 0; i < 100; i++)
        CU_ASSERT_EQUAL(ratelimit_reserve(&rl, (int64_t)i * 200 * MS), 0);
}

static void test_refill_caps_at_burst(void)
{
    ratelimit_t rl;
    ratelimit_init(&rl, 100.0, 4);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(ratelimit_reserve(&rl, 0), 0);
    CU_ASSERT(ratelimit_tokens(&rl, 0) < 0.001);
    /* A long idle time refills the bucket to burst, no further. */
    CU_ASSERT_DOUBLE_EQUAL(ratelimit_tokens(&rl, 60 * SEC), 4.0, 1e-9);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(ratelimit_reserve(&rl, 60 * SEC), 0);
    CU_ASSERT(ratelimit_reserve(&rl, 60 * SEC) > 0);
}

static void test_when_allow_try(void)
{
    ratelimit_t rl;
    ratelimit_init(&rl, 2.0, 1);
    CU_ASSERT_EQUAL(ratelimit_when(&rl, 0), 0);
    CU_ASSERT_EQUAL(ratelimit_allow(&rl, 0), 1);
    /* when() looks without consuming. */
    ASSERT_NS(ratelimit_when(&rl, 0), 500 * MS);
    ASSERT_NS(ratelimit_when(&rl, 0), 500 * MS);
    CU_ASSERT_EQUAL(ratelimit_allow(&rl, 100 * MS), 0); /* not yet, nothing taken */
    ASSERT_NS(ratelimit_when(&rl, 100 * MS), 400 * MS);
    int64_t w = -1;
    /* A wait longer than allowed is refused and leaves the bucket alone. */
    CU_ASSERT_EQUAL(ratelimit_try_reserve(&rl, 100 * MS, 300 * MS, &w), -1);
    ASSERT_NS(ratelimit_when(&rl, 100 * MS), 400 * MS);
    CU_ASSERT_EQUAL(ratelimit_try_reserve(&rl, 100 * MS, 400 * MS, &w), 0);
    ASSERT_NS(w, 400 * MS);
    CU_ASSERT_EQUAL(ratelimit_allow(&rl, 500 * MS), 0);
    CU_ASSERT_EQUAL(ratelimit_allow(&rl, 1000 * MS), 1);
}

static void test_unlimited_and_odd_input(void)
{
    ratelimit_t rl;
    ratelimit_init(&rl, 0, 0);
    CU_ASSERT(ratelimit_unlimited(&rl));
    for (int i = 0; i < 10000; i++)
        CU_ASSERT_EQUAL(ratelimit_reserve(&rl, 0), 0);
    ratelimit_init(&rl, -3.5, 10);
    CU_ASSERT(ratelimit_unlimited(&rl));
    CU_ASSERT_EQUAL(ratelimit_when(&rl, 0), 0);
    /* burst < 1 behaves as 1. */
    ratelimit_init(&rl, 1.0, 0);
    CU_ASSERT_FALSE(ratelimit_unlimited(&rl));
    CU_ASSERT_EQUAL(ratelimit_reserve(&rl, 10 * SEC), 0);
    ASSERT_NS(ratelimit_reserve(&rl, 10 * SEC), 1 * SEC);
    /* A clock going backwards does not mint tokens. */
    ratelimit_init(&rl, 1.0, 1);
    CU_ASSERT_EQUAL(ratelimit_reserve(&rl, 100 * SEC), 0);
    CU_ASSERT(ratelimit_reserve(&rl, 50 * SEC) >= 1 * SEC - 1000);
}

static void test_backoff_exponential(void)
{
    int64_t base = 5 * MS, cap = 1000 * SEC; /* the work queue's per-key limits */
    CU_ASSERT_EQUAL(backoff_exponential(base, cap, 0), 5 * MS);
    CU_ASSERT_EQUAL(backoff_exponential(base, cap, 1), 10 * MS);
    CU_ASSERT_EQUAL(backoff_exponential(base, cap, 2), 20 * MS);
    CU_ASSERT_EQUAL(backoff_exponential(base, cap, 10), 5120 * MS);
    /* 5 ms * 2^18 = 1310.72 s > 1000 s */
    CU_ASSERT_EQUAL(backoff_exponential(base, cap, 17), 655360 * MS);
    CU_ASSERT_EQUAL(backoff_exponential(base, cap, 18), cap);
    CU_ASSERT_EQUAL(backoff_exponential(base, cap, 200), cap);
    CU_ASSERT_EQUAL(backoff_exponential(base, cap, 4000000000u), cap);
    /* No cap: saturates instead of overflowing. */
    CU_ASSERT_EQUAL(backoff_exponential(1 * SEC, 0, 100), INT64_MAX);
    CU_ASSERT(backoff_exponential(1, 0, 62) > 0);
    CU_ASSERT_EQUAL(backoff_exponential(0, cap, 3), 0);
    CU_ASSERT_EQUAL(backoff_exponential(2 * SEC, 1 * SEC, 0), 1 * SEC);
    /* Monotonic in attempt. */
    int64_t prev = 0;
    for (unsigned a = 0; a < 80; a++) {
        int64_t d = backoff_exponential(100 * MS, 32 * SEC, a);
        CU_ASSERT(d >= prev);
        CU_ASSERT(d <= 32 * SEC);
        prev = d;
    }
}

static void test_backoff_jitter(void)
{
    uint64_t rng = 42;
    int64_t d = 1 * SEC;
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < 10000; i++) {
        int64_t j = backoff_jitter(d, 0.5, &rng);
        CU_ASSERT(j >= d && j < d + d / 2);
        lo = j < lo ? j : lo;
        hi = j > hi ? j : hi;
    }
    /* It really spreads over the range. */
    CU_ASSERT(lo < d + d / 20);
    CU_ASSERT(hi > d + d / 2 - d / 20);
    /* factor <= 0 means 1 (client-go's wait.Jitter). */
    for (int i = 0; i < 1000; i++) {
        int64_t j = backoff_jitter(d, 0, &rng);
        CU_ASSERT(j >= d && j < 2 * d);
    }
    CU_ASSERT_EQUAL(backoff_jitter(0, 1.0, &rng), 0);
    CU_ASSERT_EQUAL(backoff_jitter(INT64_MAX - 1, 1.0, &rng) >= INT64_MAX - 1, 1);
    /* Same seed, same sequence: tests can rely on it. */
    uint64_t a = 7, b = 7;
    for (int i = 0; i < 100; i++)
        CU_ASSERT_EQUAL(backoff_jitter(d, 1.0, &a), backoff_jitter(d, 1.0, &b));
    for (int i = 0; i < 1000; i++) {
        int64_t s = backoff_spread(d, 0.2, &rng);
        CU_ASSERT(s >= d - d / 5 && s < d + d / 5);
        double u = backoff_rng_unit(&rng);
        CU_ASSERT(u >= 0.0 && u < 1.0);
    }
    CU_ASSERT(backoff_rng_seed() != 0);
}

static void test_backoff_sequence(void)
{
    backoff_t b;
    backoff_init(&b, 1 * SEC, 32 * SEC, 0, 1); /* the worker link: 1 s to 32 s */
    int64_t want[] = {1, 2, 4, 8, 16, 32, 32, 32};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        CU_ASSERT_EQUAL(backoff_next(&b), want[i] * SEC);
    backoff_reset(&b);
    CU_ASSERT_EQUAL(backoff_next(&b), 1 * SEC);
    backoff_init(&b, 100 * MS, 1 * SEC, 0.1, 99);
    for (int i = 0; i < 50; i++) {
        int64_t d = backoff_next(&b);
        int64_t base = backoff_exponential(100 * MS, 1 * SEC, (unsigned)i);
        CU_ASSERT(d >= base && d < base + base / 10 + 1);
    }
}

/* A fresh directory for bucket files; removed by rm_bucket_dir. */
static void bucket_dir(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/rdc-test-bucket.XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

static void rm_bucket_dir(const char *dir, const char *path)
{
    unlink(path);
    rmdir(dir);
}

/* Two handles on one file behave as one bucket: the burst is shared, and the spacing
 * after it counts every handle's reservations. */
static void test_shared_one_budget(void)
{
    char dir[64], path[128], err[256];
    bucket_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/b", dir);
    int64_t t0 = 100 * SEC;
    ratelimit_shared_t *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(ratelimit_shared_create(path, 10.0, 3, t0, &a, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(ratelimit_shared_open(path, &b, err, sizeof(err)), 0);
    CU_ASSERT_DOUBLE_EQUAL(ratelimit_shared_qps(b), 10.0, 1e-9);
    CU_ASSERT_EQUAL(ratelimit_shared_burst(b), 3);
    int64_t w = -1;
    /* burst 3, taken from both handles */
    CU_ASSERT_EQUAL(ratelimit_shared_try_reserve(a, t0, INT64_MAX, &w), 0);
    CU_ASSERT_EQUAL(w, 0);
    CU_ASSERT_EQUAL(ratelimit_shared_try_reserve(b, t0, INT64_MAX, &w), 0);
    CU_ASSERT_EQUAL(w, 0);
    CU_ASSERT_EQUAL(ratelimit_shared_try_reserve(a, t0, INT64_MAX, &w), 0);
    CU_ASSERT_EQUAL(w, 0);
    /* then 100 ms apart, whichever handle asks */
    CU_ASSERT_EQUAL(ratelimit_shared_try_reserve(b, t0, INT64_MAX, &w), 0);
    ASSERT_NS(w, 100 * MS);
    CU_ASSERT_EQUAL(ratelimit_shared_try_reserve(a, t0, INT64_MAX, &w), 0);
    ASSERT_NS(w, 200 * MS);
    /* a wait over the caller's limit consumes nothing */
    CU_ASSERT_EQUAL(ratelimit_shared_try_reserve(b, t0, 250 * MS, &w), -1);
    CU_ASSERT_EQUAL(ratelimit_shared_try_reserve(b, t0, 300 * MS, &w), 0);
    ASSERT_NS(w, 300 * MS);
    /* refill caps at the burst */
    CU_ASSERT_DOUBLE_EQUAL(ratelimit_shared_tokens(a, t0 + 100 * SEC), 3.0, 1e-9);
    ratelimit_shared_destroy(&a);
    ratelimit_shared_destroy(&b);
    CU_ASSERT_PTR_NULL(a);
    rm_bucket_dir(dir, path);
}

/* Four processes reserve 50 tokens each at the same instant from one bucket (10 qps,
 * burst 5): every reservation gets its own slot, so the 200 waits are exactly the
 * slots 0 (x5), 100 ms, ..., 19.5 s, whatever the interleaving. */
static void test_shared_across_processes(void)
{
    char dir[64], path[128], err[256];
    bucket_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/b", dir);
    int64_t t0 = 50 * SEC;
    ratelimit_shared_t *rl = NULL;
    CU_ASSERT_EQUAL_FATAL(ratelimit_shared_create(path, 10.0, 5, t0, &rl, err, sizeof(err)), 0);
    enum { PROCS = 4, EACH = 50 };
    int fds[2];
    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    for (int p = 0; p < PROCS; p++) {
        pid_t pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            ratelimit_shared_t *mine = NULL;
            char e2[256];
            if (ratelimit_shared_open(path, &mine, e2, sizeof(e2)))
                _exit(3);
            int64_t waits[EACH];
            for (int i = 0; i < EACH; i++)
                if (ratelimit_shared_try_reserve(mine, t0, INT64_MAX, &waits[i]))
                    _exit(4);
            if (write(fds[1], waits, sizeof(waits)) != (ssize_t)sizeof(waits))
                _exit(5);
            _exit(0);
        }
    }
    close(fds[1]);
    int64_t all[PROCS * EACH];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof(all) && (r = read(fds[0], (char *)all + got, sizeof(all) - got)) > 0)
        got += (size_t)r;
    close(fds[0]);
    for (int p = 0; p < PROCS; p++) {
        int st = -1;
        CU_ASSERT(wait(&st) > 0);
        CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CU_ASSERT_EQUAL_FATAL(got, sizeof(all));
    /* count each slot: slot 0 five times (the burst), slots 1..195 once each */
    int slots[PROCS * EACH] = {0};
    for (int i = 0; i < PROCS * EACH; i++) {
        int64_t s = (all[i] + 50 * MS) / (100 * MS);
        CU_ASSERT_FATAL(s >= 0 && s < PROCS * EACH);
        slots[s]++;
    }
    CU_ASSERT_EQUAL(slots[0], 5);
    for (int s = 1; s <= PROCS * EACH - 5; s++)
        CU_ASSERT_EQUAL(slots[s], 1);
    ratelimit_shared_destroy(&rl);
    rm_bucket_dir(dir, path);
}

static void test_shared_refuses_bad_files(void)
{
    char dir[64], path[128], err[256];
    bucket_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/b", dir);
    ratelimit_shared_t *rl = NULL;
    CU_ASSERT_EQUAL(ratelimit_shared_open(path, &rl, err, sizeof(err)), -1); /* missing */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
    CU_ASSERT_EQUAL(ratelimit_shared_create(path, 0, 3, 0, &rl, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(ratelimit_shared_create(path, -1, 3, 0, &rl, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(rl);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("not a bucket", f);
    fclose(f);
    CU_ASSERT_EQUAL(ratelimit_shared_open(path, &rl, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(rl);
    rm_bucket_dir(dir, path);
}

static const cu_entry_t tests[] = {
    CU_SUITE("ratelimit"),
    {"burst then spacing", test_burst_then_spacing},
    {"steady rate", test_steady_rate},
    {"refill caps at burst", test_refill_caps_at_burst},
    {"when/allow/try_reserve", test_when_allow_try},
    {"unlimited and odd input", test_unlimited_and_odd_input},
    {"shared: one budget for two handles", test_shared_one_budget},
    {"shared: four processes, one bucket", test_shared_across_processes},
    {"shared: refuses bad files", test_shared_refuses_bad_files},
    CU_SUITE("backoff"),
    {"exponential and caps", test_backoff_exponential},
    {"jitter bounds", test_backoff_jitter},
    {"sequence", test_backoff_sequence},
};

CU_MAIN(tests)
