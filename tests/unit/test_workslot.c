/* Unit tests of informerd's worker slots (informerd/workslot.h) with the work queue, as
 * dispatcher.c drives them: a worker of capacity C holds up to C keys, a key is never held
 * twice (by one worker or by two: invariant 1), a lost worker gives back every key it
 * held (each counted as a crash), and a key that crashed a worker runs alone.
 */
#include "backoff.h"
#include "cu_table.h"
#include "workqueue.h"
#include "workslot.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

static void test_capacity_and_release(void)
{
    workslot_t s;
    workslot_init(&s, 3);
    CU_ASSERT_EQUAL(workslot_room(&s), 3);
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/a", 10, 0), 0);
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/a", 11, 0), -1); /* never twice */
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/b", 20, 0), 0);
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/c", 30, 0), 0);
    CU_ASSERT_EQUAL(workslot_room(&s), 0);
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/d", 40, 0), -1); /* full */
    CU_ASSERT_EQUAL(workslot_oldest(&s), 10);
    CU_ASSERT_EQUAL(workslot_release(&s, "ns/a"), 0);
    CU_ASSERT_EQUAL(workslot_release(&s, "ns/a"), -1); /* not held any more */
    CU_ASSERT_FALSE(workslot_holds(&s, "ns/a"));
    CU_ASSERT_TRUE(workslot_holds(&s, "ns/c"));
    CU_ASSERT_EQUAL(workslot_oldest(&s), 20);
    CU_ASSERT_EQUAL(workslot_room(&s), 1);
    /* capacity clamped; lowering it keeps what is held */
    workslot_set_capacity(&s, 1000);
    CU_ASSERT_EQUAL(s.capacity, WORKSLOT_MAX);
    workslot_set_capacity(&s, 0);
    CU_ASSERT_EQUAL(s.capacity, 1);
    CU_ASSERT_EQUAL(s.n, 2);
    CU_ASSERT_EQUAL(workslot_room(&s), 0);
    char longkey[WORKSLOT_KEY_MAX + 8];
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    workslot_init(&s, 2);
    CU_ASSERT_EQUAL(workslot_hold(&s, longkey, 1, 0), -1);
    CU_ASSERT_EQUAL(s.n, 0);
}

static void test_alone(void)
{
    workslot_t s;
    workslot_init(&s, 4);
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/a", 1, 0), 0);
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/suspect", 2, 1), -1); /* not into a busy worker */
    CU_ASSERT_EQUAL(workslot_release(&s, "ns/a"), 0);
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/suspect", 3, 1), 0);
    CU_ASSERT_EQUAL(workslot_room(&s), 0); /* nothing beside it */
    CU_ASSERT_EQUAL(workslot_hold(&s, "ns/b", 4, 0), -1);
    CU_ASSERT_EQUAL(workslot_release(&s, "ns/suspect"), 0);
    CU_ASSERT_EQUAL(workslot_room(&s), 4);
}

#define WORKERS 3
#define KEYS 12

/* dispatcher.c's rules on a model: hand out keys round robin to workers with room (a key
 * with a crash to an empty worker only), DONE releases, a crash gives everything back. */
static void test_random_walk(void)
{
    workqueue_t *q = workqueue_new("walk", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    workqueue_set_rate_limits(q, 1, 1000, 1e9, 1000000);
    workslot_t w[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        workslot_init(&w[i], 2 + i);
    char keys[KEYS][16];
    for (int k = 0; k < KEYS; k++)
        snprintf(keys[k], sizeof(keys[k]), "ns/k%d", k);
    uint64_t rng = 12345;
    int64_t now = 1000;
    int crashes = 0, dones = 0, gives = 0, max_held = 0;
    for (int step = 0; step < 20000; step++) {
        now += 1000;
        unsigned op = (unsigned)(backoff_rng_next(&rng) % 10);
        if (op < 3) {
            workqueue_add(q, keys[backoff_rng_next(&rng) % KEYS], now);
        } else if (op < 7) {
            /* dispatch one key */
            int i = (int)(backoff_rng_next(&rng) % WORKERS);
            if (!workslot_room(&w[i]))
                continue;
            const char *key = workqueue_get(q, now);
            if (!key)
                continue;
            char k[16];
            snprintf(k, sizeof(k), "%s", key);
            int alone = workqueue_crash_count(q, k) > 0;
            /* invariant 1: nobody holds it */
            for (int j = 0; j < WORKERS; j++)
                CU_ASSERT_FALSE(workslot_holds(&w[j], k));
            if (workslot_hold(&w[i], k, now, alone)) {
                CU_ASSERT_TRUE(alone && w[i].n > 0);
                workqueue_done(q, k, now);
                workqueue_add(q, k, now);
                continue;
            }
            gives++;
        } else if (op < 9) {
            /* a DONE for one held key */
            int i = (int)(backoff_rng_next(&rng) % WORKERS);
            if (!w[i].n)
                continue;
            char k[16];
            snprintf(k, sizeof(k), "%s", w[i].key[backoff_rng_next(&rng) % (uint64_t)w[i].n]);
            CU_ASSERT_EQUAL(workslot_release(&w[i], k), 0);
            CU_ASSERT_EQUAL(workqueue_done(q, k, now), 0);
            workqueue_forget(q, k);
            dones++;
        } else {
            /* a worker crashes: all its keys back, a crash each */
            int i = (int)(backoff_rng_next(&rng) % WORKERS);
            while (w[i].n) {
                char k[16];
                snprintf(k, sizeof(k), "%s", w[i].key[0]);
                unsigned before = workqueue_crash_count(q, k);
                CU_ASSERT_EQUAL(workslot_release(&w[i], k), 0);
                CU_ASSERT_EQUAL(workqueue_abandon(q, k, now), 0);
                CU_ASSERT_EQUAL(workqueue_crash_count(q, k), before + 1);
                CU_ASSERT_FALSE(workqueue_is_processing(q, k));
            }
            crashes++;
        }
        /* every held key is processing, held once, within capacity; alone is alone */
        size_t held = 0;
        for (int i = 0; i < WORKERS; i++) {
            CU_ASSERT(w[i].n <= w[i].capacity);
            CU_ASSERT(!w[i].alone || w[i].n == 1);
            held += (size_t)w[i].n;
            for (int a = 0; a < w[i].n; a++) {
                CU_ASSERT_TRUE(workqueue_is_processing(q, w[i].key[a]));
                for (int j = 0; j < WORKERS; j++)
                    for (int b = 0; b < w[j].n; b++)
                        if (i != j || a != b)
                            CU_ASSERT(strcmp(w[i].key[a], w[j].key[b]) != 0);
            }
        }
        CU_ASSERT_EQUAL(held, workqueue_processing_count(q));
        if ((int)held > max_held)
            max_held = (int)held;
    }
    /* the walk did what it says */
    CU_ASSERT(crashes > 100 && dones > 1000 && gives > 1000);
    CU_ASSERT(max_held > WORKERS); /* workers held several keys at once */
    workqueue_destroy(&q);
}

static const cu_entry_t tests[] = {
    CU_SUITE("workslot"),
    {"capacity, release, never twice", test_capacity_and_release},
    {"a key that crashed a worker runs alone", test_alone},
    {"random walk with the work queue: invariant 1, crashes give all back", test_random_walk},
};

CU_MAIN(tests)
