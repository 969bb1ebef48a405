/* Unit tests of informerd's ownwrite (a key held back until the cache holds its own last
 * write): a table of steps on one set, each an operation at a time and its answer. */
#include "cu_table.h"
#include "ownwrite.h"

#include <CUnit/CUnit.h>
#include <string.h>

typedef enum { FRESH, EXPECT, SEEN, MAY, EXPIRE } op_t;

typedef struct {
    op_t op;
    const char *key;
    const char *rv;     /* EXPECT: written; SEEN: now cached (NULL: deleted) */
    const char *cached; /* EXPECT: what the cache holds */
    int64_t at;         /* EXPECT: the deadline; MAY, EXPIRE: now; FRESH: the set's max */
    int answer;         /* the call's answer (EXPIRE: how many forgotten) */
    const char *due;    /* EXPIRE: the keys handed back, in a space-separated list */
    size_t count;       /* awaited after the step */
    int64_t next;       /* ownwrite_next_deadline after the step */
} step_t;

/* Each FRESH starts a new set. */
static const step_t steps[] = {
    /* The write's version arrives: the key was held back while it had not; the delta that
     * brings it ends the hold (the delta itself queues the key: nothing is handed back). */
    {FRESH, NULL, NULL, NULL, 16, 0, NULL, 0, 0},
    {EXPECT, "ns/a", "105", "100", 50, 1, NULL, 1, 0},
    {EXPIRE, NULL, NULL, NULL, 10, 0, NULL, 1, 0},  /* before any deadline: nothing goes */
    {MAY, "ns/a", NULL, NULL, 10, 0, NULL, 1, 50},  /* held: now it has a deadline to keep */
    {MAY, "ns/b", NULL, NULL, 10, 1, NULL, 1, 50},  /* another key: not held */
    {SEEN, "ns/a", "103", NULL, 0, 0, NULL, 1, 50}, /* an older event (the finalizer's) */
    {MAY, "ns/a", NULL, NULL, 20, 0, NULL, 1, 50},
    {SEEN, "ns/a", "105", NULL, 0, 1, NULL, 0, 0},
    {MAY, "ns/a", NULL, NULL, 30, 1, NULL, 0, 0},
    {EXPIRE, NULL, NULL, NULL, 100, 0, NULL, 0, 0}, /* nothing to hand back */
    /* The version never comes (a relist jumped past it, a lost event): the deadline ends
     * the hold and hands back only the keys that were held; one never asked for goes
     * quietly; past its deadline a key is dispatched even before the sweep. */
    {FRESH, NULL, NULL, NULL, 16, 0, NULL, 0, 0},
    {EXPECT, "ns/a", "7", "6", 50, 1, NULL, 1, 0},
    {EXPECT, "ns/b", "9", "8", 40, 1, NULL, 2, 0},
    {MAY, "ns/a", NULL, NULL, 10, 0, NULL, 2, 50},
    {EXPIRE, NULL, NULL, NULL, 45, 1, NULL, 1, 50}, /* b: expired, never held */
    {EXPIRE, NULL, NULL, NULL, 50, 1, "ns/a", 0, 0},
    {MAY, "ns/a", NULL, NULL, 51, 1, NULL, 0, 0},
    {EXPECT, "ns/c", "9", "8", 60, 1, NULL, 1, 0},
    {MAY, "ns/c", NULL, NULL, 60, 1, NULL, 1, 0},
    /* Versions: the same one, or a larger decimal one, is seen; opaque ones only when
     * equal (then the deadline ends the hold). Nothing is awaited when the cache holds the
     * write already (its delta came before the worker's DONE), or a newer one (a user's
     * write after ours). A second write of the key replaces the first's expectation. */
    {FRESH, NULL, NULL, NULL, 16, 0, NULL, 0, 0},
    {EXPECT, "ns/a", "105", "105", 50, 0, NULL, 0, 0},
    {EXPECT, "ns/a", "105", "120", 50, 0, NULL, 0, 0},
    {EXPECT, "ns/a", "105", "99", 50, 1, NULL, 1, 0},
    {SEEN, "ns/a", "110", NULL, 0, 1, NULL, 0, 0}, /* newer: met */
    {EXPIRE, NULL, NULL, NULL, 50, 0, NULL, 0, 0}, /* its deadline, with it gone: nothing */
    {EXPECT, "ns/x", "abc", "abb", 50, 1, NULL, 1, 0},
    {SEEN, "ns/x", "abd", NULL, 0, 0, NULL, 1, 0}, /* opaque: not known to be newer */
    {SEEN, "ns/x", "abc", NULL, 0, 1, NULL, 0, 0},
    {EXPECT, "ns/y", "18446744073709551616", "1", 50, 1, NULL, 1, 0}, /* too big: opaque */
    {SEEN, "ns/y", "99999999999999999999", NULL, 0, 0, NULL, 1, 0},
    {SEEN, "ns/y", NULL, NULL, 0, 1, NULL, 0, 0},  /* deleted: nothing to wait for */
    {EXPECT, "ns/b", "5", "4", 50, 1, NULL, 1, 0},
    {EXPECT, "ns/b", "6", "5", 70, 1, NULL, 1, 0}, /* the second write's expectation */
    {MAY, "ns/b", NULL, NULL, 60, 0, NULL, 1, 70},
    {SEEN, "ns/b", "5", NULL, 0, 0, NULL, 1, 70},
    {SEEN, "ns/b", "6", NULL, 0, 1, NULL, 0, 0},
    {EXPECT, "ns/b", "5", NULL, 50, 1, NULL, 1, 0},  /* not cached at all */
    {EXPECT, "ns/c", "", "1", 50, 0, NULL, 1, 0},    /* no version: nothing awaited */
    {EXPECT, "ns/c", NULL, "1", 50, 0, NULL, 1, 0},
    {SEEN, "ns/unknown", "1", NULL, 0, 0, NULL, 1, 0},
    /* A full set awaits no more keys (they are dispatched as before); a key already
     * awaited may still be renewed. */
    {FRESH, NULL, NULL, NULL, 2, 0, NULL, 0, 0},
    {EXPECT, "ns/a", "2", "1", 50, 1, NULL, 1, 0},
    {EXPECT, "ns/b", "2", "1", 50, 1, NULL, 2, 0},
    {EXPECT, "ns/c", "2", "1", 50, 0, NULL, 2, 0},
    {MAY, "ns/c", NULL, NULL, 10, 1, NULL, 2, 0},
    {EXPECT, "ns/a", "3", "2", 60, 1, NULL, 2, 0},
};

static char due_keys[256];

static void on_due(const char *key, void *arg)
{
    (void)arg;
    size_t n = strlen(due_keys);
    snprintf(due_keys + n, sizeof(due_keys) - n, "%s%s", n ? " " : "", key);
}

static void test_steps(void)
{
    ownwrite_t *w = NULL;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        const step_t *s = &steps[i];
        int got = 0;
        due_keys[0] = '\0';
        switch (s->op) {
        case FRESH:
            ownwrite_destroy(&w);
            CU_ASSERT_PTR_NULL(w);
            w = ownwrite_new((size_t)s->at);
            CU_ASSERT_PTR_NOT_NULL_FATAL(w);
            break;
        case EXPECT: got = ownwrite_expect(w, s->key, s->rv, s->cached, s->at); break;
        case SEEN: got = ownwrite_seen(w, s->key, s->rv); break;
        case MAY: got = ownwrite_may_dispatch(w, s->key, s->at); break;
        case EXPIRE: got = (int)ownwrite_expire(w, s->at, on_due, NULL); break;
        }
        CU_ASSERT_EQUAL(got, s->answer);
        CU_ASSERT_STRING_EQUAL(due_keys, s->due ? s->due : "");
        CU_ASSERT_EQUAL(ownwrite_count(w), s->count);
        CU_ASSERT_EQUAL(ownwrite_next_deadline(w), s->next);
        if (got != s->answer || ownwrite_count(w) != s->count)
            fprintf(stderr, "step %zu: answer %d (want %d), count %zu (want %zu)\n", i, got, s->answer,
                    ownwrite_count(w), s->count);
    }
    ownwrite_destroy(&w);
}

static const cu_entry_t tests[] = {
    CU_SUITE("ownwrite"),
    {"steps: held until seen, the deadline hands back, versions, a full set", test_steps},
};

CU_MAIN(tests)
