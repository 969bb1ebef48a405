/* bench_util: what the bench's Redis clients (ackwriter, clusterwriter) share: the stop
 * flag their SIGINT/SIGTERM handler sets, and the wall clock in epoch milliseconds (their
 * event logs are compared with other processes' timestamps: the kill time of the bench
 * script, the label sampler's). Header-only: each client is one file. */
#ifndef RDC_BENCH_UTIL_H
#define RDC_BENCH_UTIL_H

#include <signal.h>
#include <stdint.h>
#include <time.h>

/* Set by bench_on_signal; the clients' loops end when it is. */
static volatile sig_atomic_t bench_stop;

static void bench_on_signal(int sig)
{
    (void)sig;
    bench_stop = 1;
}

static int64_t bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
