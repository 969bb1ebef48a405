/* bench_util: what the bench's Redis clients (ackwriter, clusterwriter) share: the stop
 * flag their SIGINT/SIGTERM handler sets, the monotonic clock in microseconds (the waits
 * they time), and the wall clock in epoch milliseconds (their event logs are compared
 * with other processes' timestamps: the kill time of the bench script, the label
 * sampler's). Header-only: each client is one file. */
#ifndef RDC_BENCH_UTIL_H
#define RDC_BENCH_UTIL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Set by bench_on_signal; the clients' loops end when it is. */
static volatile sig_atomic_t bench_stop;

static inline void bench_on_signal(int sig)
{
    (void)sig;
    bench_stop = 1;
}

static inline int64_t bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The monotonic clock in microseconds: waits, immune to the wall clock's steps. */
static inline int64_t bench_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* CRC16-CCITT (XMODEM), Redis Cluster's key hash (cluster spec, "Keys distribution model"). */
static inline uint16_t bench_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

/* The hash slot of key (its {tag} when it has one). */
static inline int bench_key_slot(const char *key)
{
    size_t len = strlen(key);
    const char *open = memchr(key, '{', len);
    if (open) {
        const char *close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
        if (close && close > open + 1)
            return bench_crc16(open + 1, (size_t)(close - open - 1)) & 16383;
    }
    return bench_crc16(key, len) & 16383;
}

#endif
