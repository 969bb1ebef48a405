/* Unit tests of bench/latency_hist.h: the buckets the bench's writers count their waits
 * in, and the percentiles and counts they print (clusterwriter, bench_slotmove). */
#include "../../bench/latency_hist.h"
#include "cu_table.h"

#include <CUnit/CUnit.h>

static lh_t h;

/* Every wait falls in the bucket whose range holds it: the tops are increasing, a bucket
 * starts one above the previous top, and a top is within 1/LH_SUB of the bucket's start. */
static void test_buckets(void)
{
    const int64_t waits[] = {0, 1, 15, 16, 17, 31, 32, 33, 999, 1000, 1023, 1024, 10000, 50001, INT64_C(1) << 40};
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        int k = lh_bucket(waits[i]);
        CU_ASSERT(k >= 0 && k < LH_BUCKETS);
        CU_ASSERT(lh_bucket_top(k) >= waits[i]);
        CU_ASSERT(k == 0 || lh_bucket_top(k - 1) < waits[i]);
    }
    CU_ASSERT_EQUAL(lh_bucket(-5), 0);
    CU_ASSERT_EQUAL(lh_bucket(15), 15);
    CU_ASSERT_EQUAL(lh_bucket(16), 16);
    CU_ASSERT_EQUAL(lh_bucket_top(16), 16); /* [16, 32) in 16 buckets of 1 */
    CU_ASSERT_EQUAL(lh_bucket_top(lh_bucket(32)), 33); /* [32, 64) in buckets of 2 */
    CU_ASSERT_EQUAL(lh_bucket_top(lh_bucket(1000)), 1023); /* [512, 1024): buckets of 32 */
    CU_ASSERT_EQUAL(lh_bucket(INT64_MAX), LH_BUCKETS - 1);
    CU_ASSERT_EQUAL(lh_bucket_top(LH_BUCKETS - 1), INT64_MAX);
    for (int k = 1; k < LH_BUCKETS; k++) {
        int64_t lo = lh_bucket_top(k - 1) + 1, top = lh_bucket_top(k);
        CU_ASSERT_FATAL(top >= lo);
        CU_ASSERT_FATAL(lh_bucket(lo) == k && lh_bucket(top) == k);
        CU_ASSERT_FATAL(lo < LH_SUB || (top - lo + 1) * LH_SUB <= lo);
    }
}

/* 1..1000 us once each: the median is 500 and the 99th percentile 990, reported as the top
 * of their buckets (never below, within 1/LH_SUB above); the max and the counts exact. */
static void test_uniform(void)
{
    memset(&h, 0, sizeof(h));
    for (int64_t us = 1; us <= 1000; us++)
        lh_add(&h, us);
    CU_ASSERT_EQUAL(h.n, 1000);
    CU_ASSERT_EQUAL(h.max_us, 1000);
    int64_t p50 = lh_quantile(&h, 0.5), p99 = lh_quantile(&h, 0.99), p999 = lh_quantile(&h, 0.999);
    CU_ASSERT(p50 >= 500 && p50 <= 500 + 500 / LH_SUB);
    CU_ASSERT_EQUAL(p50, 511); /* [496, 512) */
    CU_ASSERT(p99 >= 990 && p99 <= 1000);
    CU_ASSERT(p999 >= 999 && p999 <= 1000);        /* the bucket's top, capped at the max */
    CU_ASSERT_EQUAL(lh_quantile(&h, 1.0), 1000);
    CU_ASSERT_EQUAL(lh_quantile(&h, 0.0001), 1); /* at least one wait counted */
    CU_ASSERT_EQUAL(h.over[0], 0);
}

/* The tail the benches are about: 990 short waits and 10 long ones. The 99th percentile is
 * still a short one (990 of 1000 are), the 99.9th a long one; over 10 ms and over 50 ms
 * are counted exactly, a wait of exactly 10 ms not being over it. */
static void test_tail_and_counts(void)
{
    memset(&h, 0, sizeof(h));
    for (int i = 0; i < 990; i++)
        lh_add(&h, 200);
    const int64_t longs[] = {10000, 10001, 12000, 20000, 30000, 49999, 50000, 50001, 70000, 123456};
    for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++)
        lh_add(&h, longs[i]);
    CU_ASSERT_EQUAL(lh_quantile(&h, 0.5), 207); /* [200, 208) */
    CU_ASSERT_EQUAL(lh_quantile(&h, 0.99), 207);
    int64_t p999 = lh_quantile(&h, 0.999);
    CU_ASSERT(p999 >= 70000 && p999 <= 70000 + 70000 / LH_SUB);
    CU_ASSERT_EQUAL(lh_quantile(&h, 1.0), 123456);
    CU_ASSERT_EQUAL(h.over[0], 9); /* 10000 itself is not over 10 ms */
    CU_ASSERT_EQUAL(h.over[1], 3); /* 50001, 70000, 123456 */
}

/* Two writers' histograms merged count as one that saw every wait; an empty one reads 0. */
static void test_merge_and_empty(void)
{
    static lh_t a, b, all;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&all, 0, sizeof(all));
    CU_ASSERT_EQUAL(lh_quantile(&a, 0.99), 0);
    for (int64_t us = 0; us < 3000; us += 7) {
        lh_add(us % 2 ? &a : &b, us * 31);
        lh_add(&all, us * 31);
    }
    lh_merge(&a, &b);
    CU_ASSERT_EQUAL(a.n, all.n);
    CU_ASSERT_EQUAL(a.max_us, all.max_us);
    CU_ASSERT_EQUAL(a.over[0], all.over[0]);
    CU_ASSERT_EQUAL(a.over[1], all.over[1]);
    CU_ASSERT(a.over[0] > 0 && a.over[1] > 0);
    CU_ASSERT_EQUAL(lh_quantile(&a, 0.5), lh_quantile(&all, 0.5));
    CU_ASSERT_EQUAL(lh_quantile(&a, 0.999), lh_quantile(&all, 0.999));
    CU_ASSERT_EQUAL(memcmp(a.b, all.b, sizeof(a.b)), 0);
}

static const cu_entry_t tests[] = {
    CU_SUITE("latency_hist"),
    {"every wait in the bucket whose range holds it, buckets within 1/16 wide", test_buckets},
    {"uniform waits: percentiles at their bucket's top, capped at the max", test_uniform},
    {"a tail of 1%: p99 short, p99.9 long, over 10/50 ms exact", test_tail_and_counts},
    {"merged histograms are the one that saw every wait; empty reads 0", test_merge_and_empty},
};

CU_MAIN(tests)
