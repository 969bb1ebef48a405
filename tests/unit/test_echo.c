/* Unit tests of informerd's echo (a RedisCluster's change that only echoes its own
 * reconcile's writes queues nothing): a table of steps on one set, each an operation and
 * its answer. */
#include "cu_table.h"
#include "echo.h"

#include <CUnit/CUnit.h>
#include <string.h>

typedef enum { FRESH, BEGIN, DELTA, END, FORGET } op_t;

typedef struct {
    op_t op;
    const char *key;
    const char *a;      /* BEGIN: the version read; DELTA: old version; END: the writes, "w1 w2" */
    const char *b;      /* DELTA: new version */
    int answer;         /* BEGIN: tracked; DELTA: echo_answer_t; END: queue; FRESH: the max */
    size_t count;       /* keys tracked after the step */
} step_t;

#define Q ECHO_QUEUE
#define D ECHO_DEFER
#define O ECHO_OWN

/* Each FRESH starts a new set. */
static const step_t steps[] = {
    /* The common case: the finalizer's echo comes while the reconcile runs, the status's
     * after DONE: neither queues; the next change (a user's) does. */
    {FRESH, NULL, NULL, NULL, 16, 0},
    {BEGIN, "ns/a", "100", NULL, 1, 1},
    {DELTA, "ns/a", "100", "101", D, 1}, /* the finalizer's PATCH */
    {END, "ns/a", "102 101", NULL, 0, 1}, /* DONE: last 102, earlier 101 */
    {DELTA, "ns/a", "101", "102", O, 0},  /* the status's: every echo came, forgotten */
    {DELTA, "ns/a", "102", "103", Q, 0},  /* a user's label */
    /* Another writer between our two writes: its version is none of ours; it queues at
     * DONE (came in flight) or at once (after), and every later change queues. */
    {BEGIN, "ns/b", "200", NULL, 1, 1},
    {DELTA, "ns/b", "200", "201", D, 1},  /* ours */
    {DELTA, "ns/b", "201", "202", D, 1},  /* a user's spec change */
    {DELTA, "ns/b", "202", "203", D, 1},  /* ours, from 202: not known either */
    {END, "ns/b", "203 201", NULL, 1, 0},
    {BEGIN, "ns/b", "203", NULL, 1, 1},
    {END, "ns/b", "205", NULL, 0, 1},     /* wrote 205; 204 (a user's) comes first */
    {DELTA, "ns/b", "203", "204", Q, 0},
    {DELTA, "ns/b", "204", "205", Q, 0},  /* untracked now: queued as any change */
    /* A relist that jumped over versions: the old version is none the reconcile knew. */
    {BEGIN, "ns/c", "300", NULL, 1, 1},
    {END, "ns/c", "302", NULL, 0, 1},
    {DELTA, "ns/c", "299", "302", Q, 0},
    /* A reconcile that wrote nothing: what came in flight queues; nothing is kept. */
    {BEGIN, "ns/d", "400", NULL, 1, 1},
    {END, "ns/d", "", NULL, 0, 0},
    {BEGIN, "ns/d", "400", NULL, 1, 1},
    {DELTA, "ns/d", "400", "401", D, 1},
    {END, "ns/d", "", NULL, 1, 0},
    /* Not in flight and never handed out: queued. Forget ends a flight (worker lost): what
     * came in it was for the caller to queue; later changes queue. */
    {DELTA, "ns/zz", "1", "2", Q, 0},
    {BEGIN, "ns/e", "500", NULL, 1, 1},
    {FORGET, "ns/e", NULL, NULL, 0, 0},
    {DELTA, "ns/e", "500", "501", Q, 0},
    {END, "ns/e", "501", NULL, 0, 0},      /* DONE for a forgotten flight: nothing */
    /* A new flight replaces what an old one awaited. */
    {BEGIN, "ns/f", "600", NULL, 1, 1},
    {END, "ns/f", "601", NULL, 0, 1},
    {BEGIN, "ns/f", "700", NULL, 1, 1},    /* 601 never came (a relist): dispatched again */
    {DELTA, "ns/f", "600", "601", D, 1},
    {END, "ns/f", "", NULL, 1, 0},
    /* The read version itself is no write: a MODIFIED to it is not an echo. */
    {BEGIN, "ns/g", "800", NULL, 1, 1},
    {END, "ns/g", "801", NULL, 0, 1},
    {DELTA, "ns/g", "801", "800", Q, 0},
    /* No version, or one too long: not tracked. */
    {BEGIN, "ns/h", "", NULL, 0, 0},
    {BEGIN, "ns/h", NULL, NULL, 0, 0},
    {BEGIN, "ns/h", "1234567890123456789012345678901234567890123456789012345678901234567890", NULL, 0, 0},
    /* In flight, more changes than remembered: the one past the bound queues at once and
     * the key is untracked (the reconcile queued by it reads them all). */
    {BEGIN, "ns/i", "1", NULL, 1, 1},
    {DELTA, "ns/i", "1", "2", D, 1},
    {DELTA, "ns/i", "2", "3", D, 1},
    {DELTA, "ns/i", "3", "4", D, 1},
    {DELTA, "ns/i", "4", "5", D, 1},
    {DELTA, "ns/i", "5", "6", D, 1},
    {DELTA, "ns/i", "6", "7", D, 1},
    {DELTA, "ns/i", "7", "8", D, 1},
    {DELTA, "ns/i", "8", "9", D, 1},
    {DELTA, "ns/i", "9", "10", Q, 0},
    {END, "ns/i", "10", NULL, 0, 0},
    /* A full set tracks no new key; a tracked one goes on. */
    {FRESH, NULL, NULL, NULL, 2, 0},
    {BEGIN, "ns/a", "1", NULL, 1, 1},
    {BEGIN, "ns/b", "1", NULL, 1, 2},
    {BEGIN, "ns/c", "1", NULL, 0, 2},
    {DELTA, "ns/c", "1", "2", Q, 2},
    {BEGIN, "ns/a", "5", NULL, 1, 2},
    {END, "ns/a", "6", NULL, 0, 2},
    {DELTA, "ns/a", "5", "6", O, 1},
};

/* END's writes: the space-separated versions of s into rvs; how many. */
static size_t split(const char *s, char buf[][32], const char **rvs, size_t max)
{
    size_t n = 0;
    while (s && *s && n < max) {
        size_t len = strcspn(s, " ");
        snprintf(buf[n], 32, "%.*s", (int)len, s);
        rvs[n] = buf[n];
        n++;
        s += len + (s[len] == ' ');
    }
    return n;
}

static void test_steps(void)
{
    echo_t *e = NULL;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        const step_t *s = &steps[i];
        int got = 0;
        char buf[8][32];
        const char *rvs[8];
        switch (s->op) {
        case FRESH:
            echo_destroy(&e);
            CU_ASSERT_PTR_NULL(e);
            e = echo_new((size_t)s->answer);
            CU_ASSERT_PTR_NOT_NULL_FATAL(e);
            got = s->answer;
            break;
        case BEGIN: got = echo_flight_begin(e, s->key, s->a); break;
        case DELTA: got = (int)echo_delta(e, s->key, s->a, s->b); break;
        case END: got = echo_flight_end(e, s->key, rvs, split(s->a, buf, rvs, 8)); break;
        case FORGET: echo_forget(e, s->key); break;
        }
        CU_ASSERT_EQUAL(got, s->answer);
        CU_ASSERT_EQUAL(echo_count(e), s->count);
        if (got != s->answer || echo_count(e) != s->count)
            fprintf(stderr, "step %zu: answer %d (want %d), count %zu (want %zu)\n", i, got, s->answer,
                    echo_count(e), s->count);
    }
    echo_destroy(&e);
    echo_destroy(&e); /* NULL is fine */
    CU_ASSERT_EQUAL(echo_delta(NULL, "k", "1", "2"), ECHO_QUEUE);
    CU_ASSERT_EQUAL(echo_flight_end(NULL, "k", NULL, 0), 0);
}

static const cu_entry_t tests[] = {
    CU_SUITE("echo"),
    {"steps: echoes in flight and after, other writers, relists, bounds", test_steps},
};

CU_MAIN(tests)
