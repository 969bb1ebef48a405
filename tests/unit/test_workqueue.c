/* Unit tests of informerd's work queue (client-go semantics over a fake clock) and of the
 * hash table under it. */
#include "../../informerd/hashmap.h"
#include "../../informerd/workqueue.h"

#include "cu_table.h"
#include "metrics.h"
#include "metrics_text.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)
#define T0 (INT64_C(1000) * SEC) /* the fake clock starts far from 0 */

static workqueue_t *new_queue(void)
{
    workqueue_t *q = workqueue_new("test", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    return q;
}

/* 1 when get() hands out exactly want (NULL = nothing). */
static int get_is(workqueue_t *q, int64_t now, const char *want)
{
    const char *got = workqueue_get(q, now);
    if (!want || !got)
        return got == want;
    return strcmp(got, want) == 0;
}

#define ASSERT_GET(q, now, want) CU_ASSERT(get_is((q), (now), (want)))

/* ---- basic semantics ---- */

static void test_dedup_and_fifo(void)
{
    workqueue_t *q = new_queue();
    CU_ASSERT_EQUAL(workqueue_add(q, "ns/c", T0), 0);
    CU_ASSERT_EQUAL(workqueue_add(q, "ns/a", T0), 0);
    CU_ASSERT_EQUAL(workqueue_add(q, "ns/c", T0), 0);
    CU_ASSERT_EQUAL(workqueue_add(q, "ns/b", T0), 0);
    CU_ASSERT_EQUAL(workqueue_add(q, "ns/a", T0), 0);
    CU_ASSERT_EQUAL(workqueue_len(q), 3);
    ASSERT_GET(q, T0, "ns/c");
    ASSERT_GET(q, T0, "ns/a");
    ASSERT_GET(q, T0, "ns/b");
    ASSERT_GET(q, T0, NULL);
    CU_ASSERT_EQUAL(workqueue_processing_count(q), 3);
    CU_ASSERT_EQUAL(workqueue_add(q, NULL, T0), -1);
    CU_ASSERT_EQUAL(workqueue_add(q, "", T0), -1);
    workqueue_destroy(&q);
    CU_ASSERT_PTR_NULL(q);
    workqueue_destroy(&q); /* NULL is ignored */
    CU_ASSERT_PTR_NULL(workqueue_new("", NULL));
}

static void test_exclusive_while_processing(void)
{
    workqueue_t *q = new_queue();
    workqueue_add(q, "ns/a", T0);
    const char *k = workqueue_get(q, T0);
    CU_ASSERT_STRING_EQUAL(k, "ns/a");
    CU_ASSERT(workqueue_is_processing(q, "ns/a"));
    /* Added again while in flight: not handed to anyone else. */
    workqueue_add(q, "ns/a", T0 + 1);
    workqueue_add(q, "ns/a", T0 + 2);
    CU_ASSERT_EQUAL(workqueue_len(q), 0);
    ASSERT_GET(q, T0 + 3, NULL);
    /* done() hands it out again, once. */
    CU_ASSERT_EQUAL(workqueue_done(q, k, T0 + 4), 0);
    CU_ASSERT_EQUAL(workqueue_len(q), 1);
    ASSERT_GET(q, T0 + 5, "ns/a");
    ASSERT_GET(q, T0 + 5, NULL);
    CU_ASSERT_EQUAL(workqueue_done(q, "ns/a", T0 + 6), 0);
    /* Not dirty: nothing comes back. */
    ASSERT_GET(q, T0 + 7, NULL);
    CU_ASSERT_FALSE(workqueue_is_processing(q, "ns/a"));
    CU_ASSERT_EQUAL(workqueue_done(q, "ns/a", T0 + 8), -1);
    CU_ASSERT_EQUAL(workqueue_done(q, "ns/unknown", T0 + 8), -1);
    CU_ASSERT_EQUAL(workqueue_done(q, NULL, T0 + 8), -1);
    workqueue_destroy(&q);
}

static void test_dirty_readd_goes_to_the_back(void)
{
    workqueue_t *q = new_queue();
    workqueue_add(q, "a", T0);
    ASSERT_GET(q, T0, "a");
    workqueue_add(q, "a", T0);
    workqueue_add(q, "b", T0);
    workqueue_done(q, "a", T0);
    ASSERT_GET(q, T0, "b");
    ASSERT_GET(q, T0, "a");
    workqueue_destroy(&q);
}

/* ---- rate limiting ---- */

static void test_backoff_sequence(void)
{
    workqueue_t *q = new_queue();
    int64_t t = T0;
    for (unsigned n = 0; n < 30; n++) {
        int64_t want = (5 * MS) << n; /* fits: 5 ms * 2^29 < 2^63 ns */
        if (want > 1000 * SEC)
            want = 1000 * SEC;
        CU_ASSERT_EQUAL(workqueue_add_rate_limited(q, "ns/a", t), 0);
        CU_ASSERT_EQUAL(workqueue_num_requeues(q, "ns/a"), n + 1);
        CU_ASSERT_EQUAL(workqueue_delayed_count(q), 1);
        CU_ASSERT_EQUAL(workqueue_next_deadline(q, t), t + want);
        ASSERT_GET(q, t + want - 1, NULL);
        ASSERT_GET(q, t + want, "ns/a");
        workqueue_done(q, "ns/a", t + want);
        t += want;
    }
    /* The first steps, spelled out: 5 ms, 10 ms, 20 ms; the cap is reached at n = 18. */
    CU_ASSERT_EQUAL((5 * MS) << 2, 20 * MS);
    CU_ASSERT((5 * MS) << 17 < 1000 * SEC && (5 * MS) << 18 > 1000 * SEC);
    workqueue_destroy(&q);
}

static void test_forget_resets_backoff(void)
{
    workqueue_t *q = new_queue();
    int64_t t = T0;
    for (int i = 0; i < 3; i++) {
        workqueue_add_rate_limited(q, "a", t);
        t = workqueue_next_deadline(q, t);
        ASSERT_GET(q, t, "a");
        workqueue_done(q, "a", t);
    }
    CU_ASSERT_EQUAL(workqueue_num_requeues(q, "a"), 3);
    workqueue_add_rate_limited(q, "a", t);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, t), t + 40 * MS);
    t += 40 * MS;
    ASSERT_GET(q, t, "a");
    workqueue_forget(q, "a");
    CU_ASSERT_EQUAL(workqueue_num_requeues(q, "a"), 0);
    workqueue_done(q, "a", t);
    workqueue_add_rate_limited(q, "a", t);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, t), t + 5 * MS);
    workqueue_forget(q, "unknown"); /* ignored */
    workqueue_destroy(&q);
}

static void test_overall_bucket(void)
{
    workqueue_t *q = new_queue();
    char key[32];
    /* 110 distinct keys fail at the same instant: the burst of 100 passes with the
     * per-key 5 ms, then the bucket spaces the rest 100 ms apart (10 qps). */
    for (int i = 0; i < 110; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        CU_ASSERT_EQUAL(workqueue_add_rate_limited(q, key, T0), 0);
    }
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0), T0 + 5 * MS);
    ASSERT_GET(q, T0 + 5 * MS - 1, NULL);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        ASSERT_GET(q, T0 + 5 * MS, key);
    }
    ASSERT_GET(q, T0 + 5 * MS, NULL);
    for (int i = 100; i < 110; i++) {
        int64_t at = T0 + (i - 99) * 100 * MS;
        CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0 + 5 * MS), at);
        ASSERT_GET(q, at - 1, NULL);
        snprintf(key, sizeof(key), "k%03d", i);
        ASSERT_GET(q, at, key);
    }
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0 + 2 * SEC), INT64_MAX);
    workqueue_destroy(&q);
}

static void test_set_rate_limits(void)
{
    workqueue_t *q = new_queue();
    workqueue_set_rate_limits(q, 1 * MS, 4 * MS, 0, 1); /* no overall limit */
    int64_t want[] = {1 * MS, 2 * MS, 4 * MS, 4 * MS};
    for (int i = 0; i < 4; i++) {
        workqueue_add_rate_limited(q, "a", T0);
        CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0), T0 + want[i]);
        ASSERT_GET(q, T0 + want[i], "a");
        workqueue_done(q, "a", T0 + want[i]);
    }
    workqueue_destroy(&q);
}

/* ---- requeue after ---- */

static void test_add_after_earlier_deadline_wins(void)
{
    workqueue_t *q = new_queue();
    CU_ASSERT_EQUAL(workqueue_add_after(q, "a", 100 * MS, T0), 0);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0), T0 + 100 * MS);
    workqueue_add_after(q, "a", 50 * MS, T0); /* earlier: wins */
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0), T0 + 50 * MS);
    workqueue_add_after(q, "a", 200 * MS, T0 + 10 * MS); /* later: does not delay */
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0), T0 + 50 * MS);
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 1);
    CU_ASSERT_EQUAL(workqueue_len(q), 0);
    ASSERT_GET(q, T0 + 50 * MS - 1, NULL);
    ASSERT_GET(q, T0 + 50 * MS, "a");
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 0);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0 + 50 * MS), INT64_MAX);
    /* A deadline in the past is reported as now. */
    workqueue_add_after(q, "b", 1 * MS, T0 + 50 * MS);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0 + SEC), T0 + SEC);
    /* delay <= 0 adds at once. */
    workqueue_add_after(q, "c", 0, T0 + 50 * MS);
    CU_ASSERT_EQUAL(workqueue_len(q), 1);
    ASSERT_GET(q, T0 + 50 * MS, "c");
    CU_ASSERT_EQUAL(workqueue_add_after(q, "", 1, T0), -1);
    workqueue_destroy(&q);
}

/* add_soon (a child's delta): a burst within the window is one add; a queued key is not
 * added again; a key handed out meanwhile drops the delayed add (its reconcile reads the
 * change); a key processing and clean is queued after the window; another wait stays. */
static void test_add_soon_merges_a_burst(void)
{
    workqueue_t *q = new_queue();
    CU_ASSERT_EQUAL(workqueue_add_soon(q, "a", 100 * MS, T0), 0);
    workqueue_add_soon(q, "a", 100 * MS, T0 + 20 * MS); /* the StatefulSet's status after the pod */
    workqueue_add_soon(q, "a", 100 * MS, T0 + 60 * MS);
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 1);
    ASSERT_GET(q, T0 + 99 * MS, NULL);
    ASSERT_GET(q, T0 + 100 * MS, "a"); /* three deltas, one reconcile */
    workqueue_done(q, "a", T0 + 101 * MS);
    ASSERT_GET(q, T0 + 10 * SEC, NULL);
    /* Queued already (the RedisCluster changed): nothing more. */
    workqueue_add(q, "b", T0);
    workqueue_add_soon(q, "b", 100 * MS, T0 + 1);
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 0);
    ASSERT_GET(q, T0 + 2, "b");
    workqueue_done(q, "b", T0 + 3);
    ASSERT_GET(q, T0 + SEC, NULL);
    /* Waiting in the window, then added at once and handed out: the delayed add goes. */
    workqueue_add_soon(q, "c", 100 * MS, T0);
    workqueue_add(q, "c", T0 + 10 * MS);
    ASSERT_GET(q, T0 + 11 * MS, "c");
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 0);
    workqueue_done(q, "c", T0 + 12 * MS);
    ASSERT_GET(q, T0 + SEC, NULL);
    /* Processing and clean (its reconcile read the cache before the change): queued after. */
    workqueue_add(q, "d", T0);
    ASSERT_GET(q, T0, "d");
    workqueue_add_soon(q, "d", 100 * MS, T0 + 1);
    workqueue_done(q, "d", T0 + 2);
    ASSERT_GET(q, T0 + 50 * MS, NULL);
    ASSERT_GET(q, T0 + 100 * MS + 1, "d");
    workqueue_done(q, "d", T0 + 101 * MS);
    /* Processing and dirty already: done() queues it; no second add after the window. */
    workqueue_add(q, "e", T0);
    ASSERT_GET(q, T0, "e");
    workqueue_add(q, "e", T0 + 1);
    workqueue_add_soon(q, "e", 100 * MS, T0 + 2);
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 0);
    workqueue_done(q, "e", T0 + 3);
    ASSERT_GET(q, T0 + 4, "e");
    workqueue_done(q, "e", T0 + 5);
    ASSERT_GET(q, T0 + SEC, NULL);
    /* A requeue in 30 s is brought forward, and is not dropped by a get. */
    workqueue_add_after(q, "f", 30 * SEC, T0);
    workqueue_add_soon(q, "f", 100 * MS, T0 + 1);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0 + 1), T0 + 1 + 100 * MS);
    workqueue_add_after(q, "g", 30 * SEC, T0);
    workqueue_add_soon(q, "g", 100 * MS, T0 + 1);
    workqueue_add(q, "g", T0 + 2);
    ASSERT_GET(q, T0 + 3, "g");
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 2); /* f's and g's: a requeue's wait stays, as add_after's */
    workqueue_destroy(&q);
}

/* requeue_after (a reconcile's own "look again"): handed out earlier for another add,
 * the wait goes; left alone, it comes; a wait of another kind (add_after's, a backoff)
 * stays through a get; two requeues keep the earlier deadline. */
static void test_requeue_after_dropped_when_overtaken(void)
{
    workqueue_t *q = new_queue();
    CU_ASSERT_EQUAL(workqueue_requeue_after(q, "a", 10 * SEC, T0), 0);
    workqueue_add(q, "a", T0 + SEC); /* a change overtakes it */
    ASSERT_GET(q, T0 + SEC, "a");
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 0);
    workqueue_done(q, "a", T0 + SEC + 1);
    ASSERT_GET(q, T0 + 11 * SEC, NULL);
    /* Alone: on time, not before. */
    workqueue_requeue_after(q, "b", 10 * SEC, T0);
    ASSERT_GET(q, T0 + 10 * SEC - 1, NULL);
    ASSERT_GET(q, T0 + 10 * SEC, "b");
    workqueue_done(q, "b", T0 + 10 * SEC);
    /* Two requeues: the earlier deadline; still dropped by a get. */
    workqueue_requeue_after(q, "c", 10 * SEC, T0);
    workqueue_requeue_after(q, "c", 2 * SEC, T0 + 1);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0 + 1), T0 + 1 + 2 * SEC);
    workqueue_add(q, "c", T0 + 2);
    ASSERT_GET(q, T0 + 2, "c");
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 0);
    workqueue_done(q, "c", T0 + 3);
    /* A backoff, then a requeue: the backoff's kind stays through a get. */
    CU_ASSERT_EQUAL(workqueue_add_rate_limited(q, "d", T0), 0);
    workqueue_requeue_after(q, "d", 10 * SEC, T0);
    workqueue_add(q, "d", T0 + 1);
    ASSERT_GET(q, T0 + 1, "d");
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 1);
    workqueue_done(q, "d", T0 + 2);
    /* add_after's wait, then a requeue: stays through a get too. */
    workqueue_add_after(q, "e", 30 * SEC, T0);
    workqueue_requeue_after(q, "e", 20 * SEC, T0);
    workqueue_add(q, "e", T0 + 1);
    ASSERT_GET(q, T0 + 1, "e");
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 2);
    CU_ASSERT_EQUAL(workqueue_requeue_after(q, "", 1, T0), -1);
    workqueue_destroy(&q);
}

static void test_add_after_while_processing_and_ordering(void)
{
    workqueue_t *q = new_queue();
    workqueue_add(q, "a", T0);
    ASSERT_GET(q, T0, "a");
    /* The worker asks for "requeue after 30 s" while it still holds the key. */
    workqueue_add_after(q, "a", 30 * SEC, T0 + 1);
    workqueue_done(q, "a", T0 + 2);
    ASSERT_GET(q, T0 + 3, NULL);
    /* Equal deadlines come out in the order they were asked for. */
    workqueue_add_after(q, "z", 30 * SEC + 1, T0);
    workqueue_add_after(q, "y", 30 * SEC + 1, T0);
    ASSERT_GET(q, T0 + 30 * SEC + 1, "a");
    ASSERT_GET(q, T0 + 30 * SEC + 1, "z");
    ASSERT_GET(q, T0 + 30 * SEC + 1, "y");
    /* A delayed key that was added meanwhile is not queued twice. */
    workqueue_add_after(q, "b", 10 * MS, T0);
    workqueue_add(q, "b", T0);
    workqueue_advance(q, T0 + 10 * MS);
    CU_ASSERT_EQUAL(workqueue_len(q), 1);
    workqueue_destroy(&q);
}


/* ---- adds by cause ---- */

/* What the outcome callback was told, per cause and outcome. */
static unsigned told[WORKQUEUE_CAUSES_MAX][3];

static void on_outcome(void *arg, unsigned cause, workqueue_outcome_t outcome)
{
    (void)arg;
    told[cause][outcome]++;
}

/* 1 when cause was told exactly q queued, m merged and d dropped so far. */
static int told_is(unsigned cause, unsigned q, unsigned m, unsigned d)
{
    const unsigned *t = told[cause];
    return t[WORKQUEUE_QUEUED] == q && t[WORKQUEUE_MERGED] == m && t[WORKQUEUE_DROPPED] == d;
}

/* Each add is told once, under its own cause: queued when it made the key due, merged
 * into a key already due or a wait that comes first, dropped when a get overtook its
 * wait or the queue shut down; a delayed add when its wait ends. */
static void test_outcomes_by_cause(void)
{
    memset(told, 0, sizeof(told));
    workqueue_t *q = new_queue();
    workqueue_on_outcome(q, on_outcome, NULL);
    /* Now: the first makes it due, the second finds it due. */
    workqueue_put(q, "a", WORKQUEUE_NOW, 0, 1, T0);
    workqueue_put(q, "a", WORKQUEUE_NOW, 0, 2, T0);
    CU_ASSERT(told_is(1, 1, 0, 0) && told_is(2, 0, 1, 0));
    /* In flight: the first marks it for once more, the next merges. */
    ASSERT_GET(q, T0, "a");
    workqueue_put(q, "a", WORKQUEUE_NOW, 0, 3, T0);
    workqueue_put(q, "a", WORKQUEUE_SOON, 100 * MS, 4, T0);
    CU_ASSERT(told_is(3, 1, 0, 0) && told_is(4, 0, 1, 0));
    workqueue_done(q, "a", T0);
    ASSERT_GET(q, T0, "a");
    workqueue_done(q, "a", T0);
    /* Soon: told when the wait ends; a second soon merges into the first's wait. */
    workqueue_put(q, "b", WORKQUEUE_SOON, 100 * MS, 5, T0);
    workqueue_put(q, "b", WORKQUEUE_SOON, 100 * MS, 6, T0 + MS);
    CU_ASSERT(told_is(5, 0, 0, 0) && told_is(6, 0, 1, 0));
    workqueue_advance(q, T0 + 100 * MS);
    CU_ASSERT(told_is(5, 1, 0, 0));
    ASSERT_GET(q, T0 + 100 * MS, "b");
    workqueue_done(q, "b", T0 + 100 * MS);
    /* A sooner add takes the wait over: the requeue it replaced merged. */
    workqueue_put(q, "c", WORKQUEUE_REQUEUE, 10 * SEC, 7, T0);
    workqueue_put(q, "c", WORKQUEUE_SOON, 100 * MS, 8, T0);
    CU_ASSERT(told_is(7, 0, 1, 0) && told_is(8, 0, 0, 0));
    ASSERT_GET(q, T0 + 100 * MS, "c");
    CU_ASSERT(told_is(8, 1, 0, 0));
    workqueue_done(q, "c", T0 + 100 * MS);
    /* A requeue a change overtook: dropped at the get. */
    workqueue_put(q, "d", WORKQUEUE_REQUEUE, 10 * SEC, 9, T0);
    workqueue_put(q, "d", WORKQUEUE_NOW, 0, 10, T0 + MS);
    CU_ASSERT(told_is(9, 0, 0, 0) && told_is(10, 1, 0, 0));
    ASSERT_GET(q, T0 + MS, "d");
    CU_ASSERT(told_is(9, 0, 0, 1));
    workqueue_done(q, "d", T0 + MS);
    /* A wait of add_after's that ends with the key due already: merged. */
    workqueue_put(q, "e", WORKQUEUE_AFTER, 100 * MS, 13, T0);
    workqueue_put(q, "e", WORKQUEUE_NOW, 0, 14, T0);
    workqueue_advance(q, T0 + 100 * MS);
    CU_ASSERT(told_is(13, 0, 1, 0) && told_is(14, 1, 0, 0));
    ASSERT_GET(q, T0 + 100 * MS, "e");
    /* abandon()'s backoff is cause 0; a cause out of range is refused, and told nothing. */
    workqueue_abandon(q, "e", T0 + 100 * MS);
    workqueue_advance(q, T0 + SEC);
    CU_ASSERT(told_is(0, 1, 0, 0));
    CU_ASSERT_EQUAL(workqueue_put(q, "e", WORKQUEUE_NOW, 0, WORKQUEUE_CAUSES_MAX, T0 + SEC), -1);
    /* The add functions are cause 0. */
    workqueue_add(q, "e", T0 + SEC);
    CU_ASSERT(told_is(0, 1, 1, 0));
    /* Shut down: the waits are dropped, and so is every add after. */
    workqueue_put(q, "f", WORKQUEUE_RATE_LIMITED, 0, 11, T0 + SEC);
    workqueue_shut_down(q);
    workqueue_put(q, "f", WORKQUEUE_NOW, 0, 12, T0 + SEC);
    CU_ASSERT(told_is(11, 0, 0, 1) && told_is(12, 0, 0, 1));
    workqueue_destroy(&q);
}


/* A look that brings no change (a resync) adds a key only when no hand-out of it is
 * coming: not when it is due, in flight, or waits for a deadline within the bound. */
static void test_unless_coming(void)
{
    memset(told, 0, sizeof(told));
    workqueue_t *q = new_queue();
    workqueue_on_outcome(q, on_outcome, NULL);
    /* Idle: now. In flight: merged, and no hand-out after it. */
    workqueue_put(q, "g", WORKQUEUE_UNLESS_COMING, 10 * SEC, 1, T0);
    ASSERT_GET(q, T0, "g");
    workqueue_put(q, "g", WORKQUEUE_UNLESS_COMING, 10 * SEC, 1, T0);
    workqueue_done(q, "g", T0);
    ASSERT_GET(q, T0, NULL);
    CU_ASSERT(told_is(1, 1, 1, 0));
    /* A requeue within the bound: merged, handed out at the requeue's time alone. */
    workqueue_put(q, "h", WORKQUEUE_REQUEUE, 5 * SEC, 2, T0);
    workqueue_put(q, "h", WORKQUEUE_UNLESS_COMING, 10 * SEC, 3, T0);
    ASSERT_GET(q, T0 + 5 * SEC - 1, NULL);
    ASSERT_GET(q, T0 + 5 * SEC, "h");
    workqueue_done(q, "h", T0 + 5 * SEC);
    CU_ASSERT(told_is(2, 1, 0, 0) && told_is(3, 0, 1, 0));
    /* A requeue past the bound: now, and the requeue dropped by that hand-out. */
    workqueue_put(q, "i", WORKQUEUE_REQUEUE, 30 * SEC, 4, T0);
    workqueue_put(q, "i", WORKQUEUE_UNLESS_COMING, 10 * SEC, 5, T0);
    ASSERT_GET(q, T0, "i");
    CU_ASSERT(told_is(4, 0, 0, 1) && told_is(5, 1, 0, 0));
    workqueue_done(q, "i", T0);
    /* Due already: merged. */
    workqueue_add(q, "j", T0);
    workqueue_put(q, "j", WORKQUEUE_UNLESS_COMING, 0, 6, T0);
    CU_ASSERT(told_is(6, 0, 1, 0));
    ASSERT_GET(q, T0, "j");
    workqueue_done(q, "j", T0);
    ASSERT_GET(q, T0 + 60 * SEC, NULL);
    workqueue_destroy(&q);
}

/* ---- crashes and quarantine ---- */

static void test_abandon_counts_crashes(void)
{
    workqueue_t *q = new_queue();
    int64_t t = T0;
    CU_ASSERT_EQUAL(workqueue_abandon(q, "a", t), -1); /* not processing */
    workqueue_add(q, "a", t);
    for (unsigned i = 1; i <= 3; i++) {
        ASSERT_GET(q, t, "a");
        CU_ASSERT_EQUAL(workqueue_abandon(q, "a", t), 0);
        CU_ASSERT_EQUAL(workqueue_crash_count(q, "a"), i);
        CU_ASSERT_FALSE(workqueue_is_processing(q, "a"));
        CU_ASSERT_EQUAL(workqueue_delayed_count(q), 1);
        /* Retried with the per-key backoff: 5, 10, 20 ms. */
        CU_ASSERT_EQUAL(workqueue_next_deadline(q, t), t + (5 * MS << (i - 1)));
        t = workqueue_next_deadline(q, t);
    }
    ASSERT_GET(q, t, "a");
    workqueue_done(q, "a", t);
    /* A success (forget) resets the crash count. */
    workqueue_forget(q, "a");
    CU_ASSERT_EQUAL(workqueue_crash_count(q, "a"), 0);
    CU_ASSERT_EQUAL(workqueue_num_requeues(q, "a"), 0);
    workqueue_destroy(&q);
}

static void test_quarantine_and_unquarantine(void)
{
    workqueue_t *q = new_queue();
    int64_t t = T0;
    workqueue_add(q, "bad", t);
    for (int i = 0; i < 3; i++) {
        ASSERT_GET(q, t, "bad");
        workqueue_abandon(q, "bad", t);
        t = workqueue_next_deadline(q, t);
    }
    CU_ASSERT_EQUAL(workqueue_crash_count(q, "bad"), 3);
    /* The supervisor quarantines it for an hour. */
    CU_ASSERT_EQUAL(workqueue_quarantine(q, "bad", t + 3600 * SEC), 0);
    CU_ASSERT(workqueue_is_quarantined(q, "bad"));
    ASSERT_GET(q, t, NULL); /* its retry came due, but it is held back */
    workqueue_add(q, "bad", t);
    workqueue_add(q, "good", t);
    ASSERT_GET(q, t, "good"); /* every other key goes on */
    ASSERT_GET(q, t, NULL);
    workqueue_done(q, "good", t);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, t), t + 3600 * SEC);
    /* Its spec changed: released at once, with a fresh crash count. */
    workqueue_unquarantine(q, "bad");
    CU_ASSERT_FALSE(workqueue_is_quarantined(q, "bad"));
    CU_ASSERT_EQUAL(workqueue_crash_count(q, "bad"), 0);
    ASSERT_GET(q, t, "bad");
    ASSERT_GET(q, t, NULL);
    workqueue_done(q, "bad", t);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, t), INT64_MAX);
    workqueue_unquarantine(q, "unknown"); /* ignored */
    workqueue_destroy(&q);
}

static void test_quarantine_expires_and_pulls_queued_key(void)
{
    workqueue_t *q = new_queue();
    workqueue_add(q, "a", T0);
    workqueue_add(q, "b", T0);
    workqueue_add(q, "c", T0);
    /* Quarantining a key that waits in the queue takes it out of the queue. */
    workqueue_quarantine(q, "b", T0 + 10 * SEC);
    CU_ASSERT_EQUAL(workqueue_len(q), 2);
    ASSERT_GET(q, T0, "a");
    ASSERT_GET(q, T0, "c");
    ASSERT_GET(q, T0, NULL);
    /* A later call replaces the deadline. */
    workqueue_quarantine(q, "b", T0 + 20 * SEC);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0), T0 + 20 * SEC);
    ASSERT_GET(q, T0 + 20 * SEC - 1, NULL);
    ASSERT_GET(q, T0 + 20 * SEC, "b");
    CU_ASSERT_FALSE(workqueue_is_quarantined(q, "b"));
    /* A processing key that gets quarantined finishes; its re-add waits. */
    workqueue_quarantine(q, "b", INT64_MAX);
    workqueue_add(q, "b", T0 + 20 * SEC);
    CU_ASSERT_EQUAL(workqueue_done(q, "b", T0 + 21 * SEC), 0);
    ASSERT_GET(q, T0 + 1000 * SEC, NULL);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0), INT64_MAX);
    workqueue_unquarantine(q, "b");
    ASSERT_GET(q, T0 + 1000 * SEC, "b");
    CU_ASSERT_EQUAL(workqueue_quarantine(q, NULL, 0), -1);
    workqueue_destroy(&q);
}

/* ---- shutdown ---- */

static void test_shutdown(void)
{
    workqueue_t *q = new_queue();
    workqueue_add(q, "a", T0);
    workqueue_add(q, "b", T0);
    workqueue_add_after(q, "c", SEC, T0);
    ASSERT_GET(q, T0, "a");
    CU_ASSERT_FALSE(workqueue_shutting_down(q));
    workqueue_shut_down(q);
    workqueue_shut_down(q); /* twice is harmless */
    CU_ASSERT(workqueue_shutting_down(q));
    CU_ASSERT_EQUAL(workqueue_add(q, "d", T0), 0); /* ignored */
    CU_ASSERT_EQUAL(workqueue_add_after(q, "e", SEC, T0), 0);
    CU_ASSERT_EQUAL(workqueue_add_rate_limited(q, "f", T0), 0);
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 0);
    CU_ASSERT_EQUAL(workqueue_next_deadline(q, T0), INT64_MAX);
    /* What was queued drains; then NULL. */
    ASSERT_GET(q, T0, "b");
    ASSERT_GET(q, T0 + 2 * SEC, NULL);
    /* In-flight keys still finish; a re-add while processing is dropped. */
    workqueue_add(q, "a", T0);
    CU_ASSERT_EQUAL(workqueue_done(q, "a", T0), 0);
    CU_ASSERT_EQUAL(workqueue_abandon(q, "b", T0), 0);
    CU_ASSERT_EQUAL(workqueue_processing_count(q), 0);
    ASSERT_GET(q, T0 + 2 * SEC, NULL);
    workqueue_destroy(&q);
}

/* ---- metrics ---- */

static void test_metrics(void)
{
    metrics_registry_t *reg = metrics_registry_new();
    workqueue_t *q = workqueue_new("rediscluster", reg);
    workqueue_t *other = workqueue_new("other", reg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    const char *const *l = METRIC_LABELS("rediscluster");
    metric_family_t *depth = metrics_gauge(reg, "workqueue_depth", "", "name");
    metric_family_t *adds = metrics_counter(reg, "workqueue_adds_total", "", "name");
    metric_family_t *retries = metrics_counter(reg, "workqueue_retries_total", "", "name");
    metric_family_t *qdur = metrics_histogram(reg, "workqueue_queue_duration_seconds", "",
                                              "name", NULL, 0);
    metric_family_t *wdur = metrics_histogram(reg, "workqueue_work_duration_seconds", "",
                                              "name", NULL, 0);
    metric_family_t *unfinished = metrics_gauge(reg, "workqueue_unfinished_work_seconds", "",
                                                "name");
    metric_family_t *longest = metrics_gauge(
        reg, "workqueue_longest_running_processor_seconds", "", "name");

    workqueue_add(q, "a", T0);
    workqueue_add(q, "a", T0); /* dedup: not an add */
    workqueue_add(q, "b", T0);
    workqueue_add(other, "x", T0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(depth, l), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(adds, l), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(adds, METRIC_LABELS("other")), 1, 0);

    ASSERT_GET(q, T0 + 2 * SEC, "a");
    CU_ASSERT_DOUBLE_EQUAL(metric_value(depth, l), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(qdur, l), 1, 0);
    ASSERT_GET(q, T0 + 3 * SEC, "b");
    workqueue_update_metrics(q, T0 + 5 * SEC);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(unfinished, l), 3 + 2, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(longest, l), 3, 1e-9);
    workqueue_done(q, "a", T0 + 5 * SEC);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(wdur, l), 1, 0);

    workqueue_add_rate_limited(q, "a", T0 + 5 * SEC);
    workqueue_add_after(q, "c", SEC, T0 + 5 * SEC);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(retries, l), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(depth, l), 0, 0); /* delayed keys are not depth */
    workqueue_advance(q, T0 + 7 * SEC);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(depth, l), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(adds, l), 4, 0);
    workqueue_done(q, "b", T0 + 7 * SEC);
    workqueue_update_metrics(q, T0 + 8 * SEC);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(unfinished, l), 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(longest, l), 0, 0);

    char *text = exposition_of(reg);
    ASSERT_TEXT_HAS(text, "workqueue_depth{name=\"rediscluster\"} 2\n",
                    "# TYPE workqueue_queue_duration_seconds histogram");
    free(text);
    workqueue_destroy(&q);
    workqueue_destroy(&other);
    metrics_registry_destroy(&reg);
}

/* ---- scale ---- */

/* Hand out every item, now and as delays pass (*t moves on to each next deadline), until
 * the queue is empty: each key goes to seen (when not NULL), is forgotten (with forget)
 * and done. Returns how many items were handed out. */
static size_t drain_all(workqueue_t *q, int64_t *t, int forget, void (*seen)(const char *key, void *arg),
                        void *arg)
{
    size_t handed = 0;
    for (;;) {
        const char *k;
        while ((k = workqueue_get(q, *t))) {
            handed++;
            if (seen)
                seen(k, arg);
            if (forget)
                workqueue_forget(q, k);
            workqueue_done(q, k, *t);
        }
        int64_t next = workqueue_next_deadline(q, *t);
        if (next == INT64_MAX)
            return handed;
        *t = next;
    }
}

/* drain_all's seen for the random walk: key "k<i>" is no longer pending. */
static void not_pending(const char *key, void *arg)
{
    ((unsigned char *)arg)[strtol(key + 1, NULL, 10)] = 0;
}

static void test_stress_100k_keys(void)
{
    enum { N = 100000 };
    workqueue_t *q = new_queue();
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "ns/k%06d", i);
        CU_ASSERT_EQUAL_FATAL(workqueue_add(q, key, T0), 0);
    }
    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof(key), "ns/k%06d", i);
        workqueue_add(q, key, T0); /* dedup */
    }
    CU_ASSERT_EQUAL(workqueue_len(q), N);
    int in_order = 1;
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "ns/k%06d", i);
        const char *k = workqueue_get(q, T0);
        in_order &= k && strcmp(k, key) == 0;
    }
    CU_ASSERT(in_order);
    CU_ASSERT_EQUAL(workqueue_processing_count(q), N);
    /* Every third key changes while in flight, every fifth one fails. */
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "ns/k%06d", i);
        if (i % 3 == 0)
            workqueue_add(q, key, T0 + 1);
        if (i % 5 == 0)
            workqueue_add_rate_limited(q, key, T0 + 1);
        CU_ASSERT_EQUAL_FATAL(workqueue_done(q, key, T0 + 2), 0);
    }
    CU_ASSERT_EQUAL(workqueue_len(q), (N + 2) / 3);
    /* Drain everything, including the rate-limited keys (the bucket spaces them out). */
    int64_t t = T0 + 2;
    size_t handed = drain_all(q, &t, 1, NULL, NULL);
    /* Keys both re-added and rate-limited were queued again after their delay. */
    size_t want = 0;
    for (int i = 0; i < N; i++)
        want += (i % 3 == 0) + (i % 5 == 0);
    CU_ASSERT_EQUAL(handed, want);
    CU_ASSERT_EQUAL(workqueue_processing_count(q), 0);
    CU_ASSERT_EQUAL(workqueue_delayed_count(q), 0);
    workqueue_destroy(&q);
}

/* A random walk over 10k keys that checks invariant 1 after every step: a key is never
 * handed out while it is processing, and every add is followed by a hand-out. */
static uint64_t rng_state = 42;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % n;
}

static void test_random_walk_10k(void)
{
    enum { N = 10000, STEPS = 300000 };
    workqueue_t *q = new_queue();
    unsigned char *processing = calloc(N, 1);
    unsigned char *pending = calloc(N, 1); /* added since it was last handed out */
    int *inflight = calloc(N, sizeof(int));
    size_t ninflight = 0;
    int violations = 0;
    char key[32];
    int64_t t = T0;
    for (int s = 0; s < STEPS; s++) {
        uint32_t op = rnd(100);
        int k = (int)rnd(N);
        snprintf(key, sizeof(key), "k%d", k);
        if (op < 35) {
            workqueue_add(q, key, t);
            pending[k] = 1;
        } else if (op < 40) {
            workqueue_add_after(q, key, rnd(2000) * MS, t);
        } else if (op < 45) {
            workqueue_add_rate_limited(q, key, t);
        } else if (op < 75) {
            const char *got = workqueue_get(q, t);
            if (got) {
                int g = (int)strtol(got + 1, NULL, 10);
                violations += processing[g];
                processing[g] = 1;
                pending[g] = 0;
                inflight[ninflight++] = g;
            }
        } else if (op < 97 && ninflight) {
            size_t i = rnd((uint32_t)ninflight);
            int g = inflight[i];
            inflight[i] = inflight[--ninflight];
            processing[g] = 0;
            snprintf(key, sizeof(key), "k%d", g);
            if (op < 95) {
                violations += workqueue_done(q, key, t) != 0;
                if (op < 85)
                    workqueue_forget(q, key);
            } else {
                violations += workqueue_abandon(q, key, t) != 0;
            }
        } else {
            t += rnd(50) * MS;
        }
    }
    CU_ASSERT_EQUAL(violations, 0);
    /* Quiesce: finish what is in flight, then drain until nothing is left. */
    while (ninflight) {
        int g = inflight[--ninflight];
        processing[g] = 0;
        snprintf(key, sizeof(key), "k%d", g);
        CU_ASSERT_EQUAL(workqueue_done(q, key, t), 0);
    }
    drain_all(q, &t, 0, not_pending, pending);
    int lost = 0;
    for (int i = 0; i < N; i++)
        lost += pending[i];
    CU_ASSERT_EQUAL(lost, 0);
    free(processing);
    free(pending);
    free(inflight);
    workqueue_destroy(&q);
}

/* ---- the hash table ---- */

static void test_hashmap(void)
{
    enum { N = 100000 };
    hm_t *m = hm_new(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    char (*keys)[16] = malloc(sizeof(*keys) * N);
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "key-%d", i);
        CU_ASSERT_EQUAL_FATAL(hm_put(m, keys[i], keys[i], NULL), 0);
    }
    CU_ASSERT_EQUAL(hm_count(m), N);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= hm_get(m, keys[i]) == keys[i];
    CU_ASSERT(ok);
    CU_ASSERT_PTR_NULL(hm_get(m, "absent"));
    /* Replace returns the old value. */
    void *old = NULL;
    static char other[] = "other";
    CU_ASSERT_EQUAL(hm_put(m, keys[7], other, &old), 0);
    CU_ASSERT_PTR_EQUAL(old, keys[7]);
    CU_ASSERT_PTR_EQUAL(hm_get(m, "key-7"), other);
    CU_ASSERT_EQUAL(hm_count(m), N);
    /* Remove the odd keys while iterating. */
    hm_iter_t it = HM_ITER_INIT;
    const char *k;
    size_t seen = 0;
    while (hm_next(m, &it, &k, NULL)) {
        seen++;
        if (strtol(k + 4, NULL, 10) % 2)
            CU_ASSERT_PTR_NOT_NULL(hm_remove(m, k));
    }
    CU_ASSERT_EQUAL(seen, N);
    CU_ASSERT_EQUAL(hm_count(m), N / 2);
    ok = 1;
    for (int i = 0; i < N; i++)
        ok &= (hm_get(m, keys[i]) != NULL) == (i % 2 == 0);
    CU_ASSERT(ok);
    CU_ASSERT_PTR_NULL(hm_remove(m, "key-1"));
    /* Churn through tombstones: the table stays usable and bounded. */
    for (int round = 0; round < 5; round++)
        for (int i = 1; i < N; i += 2) {
            hm_put(m, keys[i], keys[i], NULL);
            hm_remove(m, keys[i]);
        }
    CU_ASSERT_EQUAL(hm_count(m), N / 2);
    CU_ASSERT_EQUAL(hm_reserve(m, N), 0);
    CU_ASSERT_EQUAL(hm_count(m), N / 2);
    CU_ASSERT_PTR_EQUAL(hm_get(m, "key-0"), keys[0]);
    hm_destroy(&m);
    CU_ASSERT_PTR_NULL(m);
    free(keys);
}

static int values_freed;

static void count_and_free(void *value)
{
    values_freed++;
    free(value);
}

/* hm_destroy_with hands every value, and only those, to the free function once. */
static void test_hashmap_destroy_with(void)
{
    hm_t *m = hm_new(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    for (int i = 0; i < 50; i++) {
        char *v = malloc(16);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v);
        snprintf(v, 16, "v%d", i);
        CU_ASSERT_EQUAL_FATAL(hm_put(m, v, v, NULL), 0);
    }
    char *gone = hm_remove(m, "v7");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gone);
    free(gone);
    values_freed = 0;
    hm_destroy_with(&m, count_and_free);
    CU_ASSERT_PTR_NULL(m);
    CU_ASSERT_EQUAL(values_freed, 49);
    hm_destroy_with(&m, count_and_free); /* NULL is ignored */
    CU_ASSERT_EQUAL(values_freed, 49);
}

static const cu_entry_t tests[] = {
    CU_SUITE("workqueue"),
    {"dedup and FIFO", test_dedup_and_fifo},
    {"a key in flight is exclusive", test_exclusive_while_processing},
    {"dirty re-add goes to the back", test_dirty_readd_goes_to_the_back},
    CU_SUITE("workqueue rate limiting"),
    {"backoff 5ms doubling, capped at 1000s", test_backoff_sequence},
    {"forget resets the backoff", test_forget_resets_backoff},
    {"overall bucket: burst 100 then 10/s", test_overall_bucket},
    {"custom rate limits", test_set_rate_limits},
    {"add_after: earlier deadline wins", test_add_after_earlier_deadline_wins},
    {"add_after while processing, order", test_add_after_while_processing_and_ordering},
    {"add_soon merges a burst into one add", test_add_soon_merges_a_burst},
    {"requeue_after is dropped when a get overtakes it", test_requeue_after_dropped_when_overtaken},
    {"each add is told once, under its cause", test_outcomes_by_cause},
    {"unless_coming adds only when no hand-out is coming", test_unless_coming},
    CU_SUITE("workqueue crashes and shutdown"),
    {"abandon counts crashes and backs off", test_abandon_counts_crashes},
    {"quarantine holds one key, others go on", test_quarantine_and_unquarantine},
    {"quarantine expiry and queued keys", test_quarantine_expires_and_pulls_queued_key},
    {"shutdown", test_shutdown},
    CU_SUITE("workqueue metrics"),
    {"client-go metrics", test_metrics},
    CU_SUITE("workqueue scale"),
    {"100k keys", test_stress_100k_keys},
    {"random walk over 10k keys keeps invariant 1", test_random_walk_10k},
    {"hash table", test_hashmap},
    {"hash table destroy frees each value once", test_hashmap_destroy_with},
};

CU_MAIN(tests)
