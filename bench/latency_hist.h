/* latency_hist: a fixed-memory histogram of waits in microseconds for the bench's Redis
 * clients (clusterwriter's SETs, bench_slotmove's writers): a single longest wait on a
 * shared 2-core machine is mostly the scheduler's, so the benches report percentiles.
 *
 * Log-linear buckets: waits below LH_SUB us have a bucket each; above, each power of two
 * [2^e, 2^(e+1)) is cut into LH_SUB equal buckets, so a percentile is at most 1/LH_SUB
 * (6.25%) above the true value (it is reported as its bucket's highest value, never
 * below the truth, and never above the largest wait seen). The waits over 10 ms and over
 * 50 ms are counted exactly (LH_OVER_US), the maximum kept exactly. Header-only, as
 * bench_util.h: each client is one file. */
#ifndef RDC_LATENCY_HIST_H
#define RDC_LATENCY_HIST_H

#include <stdint.h>

#define LH_SUB_BITS 4
#define LH_SUB (1 << LH_SUB_BITS)
#define LH_BUCKETS (LH_SUB + (63 - LH_SUB_BITS) * LH_SUB) /* up to 2^63 us */
#define LH_OVER 2

/* The thresholds of lh_t.over, in us: 10 ms and 50 ms. */
static const int64_t LH_OVER_US[LH_OVER] = {10000, 50000};

typedef struct {
    long long n;               /* waits added */
    int64_t max_us;            /* the longest */
    long long over[LH_OVER];   /* waits longer than LH_OVER_US[i] */
    long long b[LH_BUCKETS];   /* counts by lh_bucket */
} lh_t;

/* The bucket of a wait of us microseconds (negative counts as 0). */
static inline int lh_bucket(int64_t us)
{
    uint64_t v = us > 0 ? (uint64_t)us : 0;
    if (v < LH_SUB)
        return (int)v;
    int e = 63 - __builtin_clzll(v); /* v in [2^e, 2^(e+1)), e >= LH_SUB_BITS */
    return LH_SUB + (e - LH_SUB_BITS) * LH_SUB + (int)((v >> (e - LH_SUB_BITS)) & (LH_SUB - 1));
}

/* The highest wait that falls in bucket k. */
static inline int64_t lh_bucket_top(int k)
{
    if (k < LH_SUB)
        return k;
    int e = (k - LH_SUB) / LH_SUB + LH_SUB_BITS, sub = (k - LH_SUB) % LH_SUB;
    uint64_t width = UINT64_C(1) << (e - LH_SUB_BITS);
    return (int64_t)((UINT64_C(1) << e) + (uint64_t)(sub + 1) * width - 1);
}

static inline void lh_add(lh_t *h, int64_t us)
{
    h->n++;
    if (us > h->max_us)
        h->max_us = us;
    for (int i = 0; i < LH_OVER; i++)
        h->over[i] += us > LH_OVER_US[i];
    h->b[lh_bucket(us)]++;
}

/* Adds every wait of from into into (the writers of one run into one). */
static inline void lh_merge(lh_t *into, const lh_t *from)
{
    into->n += from->n;
    if (from->max_us > into->max_us)
        into->max_us = from->max_us;
    for (int i = 0; i < LH_OVER; i++)
        into->over[i] += from->over[i];
    for (int k = 0; k < LH_BUCKETS; k++)
        into->b[k] += from->b[k];
}

/* The q-quantile (0 < q <= 1) in us: the top of the first bucket by which at least
 * ceil(q * n) waits are counted, at most max_us; 0 when nothing was added. */
static inline int64_t lh_quantile(const lh_t *h, double q)
{
    if (h->n <= 0)
        return 0;
    double want = q * (double)h->n;
    long long rank = (long long)want;
    rank += (double)rank < want; /* ceil, without libm */
    if (rank < 1)
        rank = 1;
    long long seen = 0;
    for (int k = 0; k < LH_BUCKETS; k++) {
        seen += h->b[k];
        if (seen >= rank) {
            int64_t top = lh_bucket_top(k);
            return top < h->max_us ? top : h->max_us;
        }
    }
    return h->max_us;
}

#endif
