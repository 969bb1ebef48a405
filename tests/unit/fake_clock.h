/* fake_clock: a monotonic clock for the unit tests that only moves when the code under
 * test sleeps, for the (now, sleep, user) clock hooks of kube_client and migrate: fc_now
 * and fc_sleep with a fake_clock_t as the user pointer. It counts what was slept. */
#ifndef RDC_TEST_FAKE_CLOCK_H
#define RDC_TEST_FAKE_CLOCK_H

#include <stdint.h>

typedef struct {
    int64_t now;        /* nanoseconds */
    int64_t slept;      /* all the sleeps together */
    int sleeps;         /* how many */
    int64_t last_sleep; /* the last one */
} fake_clock_t;

static inline int64_t fc_now(void *user)
{
    return ((fake_clock_t *)user)->now;
}

/* Sleeping is the only thing that moves the clock. */
static inline void fc_sleep(void *user, int64_t ns)
{
    fake_clock_t *fc = user;
    fc->now += ns;
    fc->slept += ns;
    fc->sleeps++;
    fc->last_sleep = ns;
}

#endif
