/* Unit tests of informerd's echo (a RedisCluster's change that only echoes its own
 * reconcile's writes queues nothing): a table of steps on one set, each an operation and
 * its answer. */
#include "cu_table.h"
#include "echo.h"

#include <CUnit/CUnit.h>
#include <string.h>

typedef enum { FRESH, BEGIN, DELTA, CHILD, END, FORGET } op_t;

typedef struct {
    op_t op;
    const char *key;
    const char *a;      /* BEGIN: the version read; DELTA: old version; END: the writes, "w1 w2";
                           CHILD: the child, "Kind/name" */
    const char *b;      /* DELTA, CHILD: new version; END: the child writes, "Kind/name/rv ...", then
                           "| Kind Kind" the kinds of the child changes handed back (none: no "|") */
    int answer;         /* BEGIN: tracked; DELTA, CHILD: echo_answer_t; END: queue; FRESH: the max */
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
    /* CHILDREN. A new cluster's first reconcile: its children's ADDEDs come while it runs
     * and after DONE; each at the version its write was answered with is no change. The
     * controller's status of the StatefulSet (another version) is one, at DONE. */
    {FRESH, NULL, NULL, NULL, 16, 0},
    {BEGIN, "ns/n", "1", NULL, 1, 1},
    {DELTA, "ns/n", "1", "2", D, 1},                     /* the finalizer */
    {CHILD, "ns/n", "ConfigMap/n", "3", D, 1},
    {CHILD, "ns/n", "Service/n", "4", D, 1},
    {CHILD, "ns/n", "StatefulSet/n", "5", D, 1},
    {CHILD, "ns/n", "StatefulSet/n", "6", D, 1},         /* its controller's status */
    {END, "ns/n", "8 2", "ConfigMap/n/3 Service/n/4 StatefulSet/n/5 PodDisruptionBudget/n/7 | StatefulSet", 0, 1},
    {CHILD, "ns/n", "PodDisruptionBudget/n", "7", O, 1},
    {CHILD, "ns/n", "StatefulSet/n", "9", Q, 1},         /* a change: the rest still echo */
    {CHILD, "ns/n", "PodDisruptionBudget/n", "7", O, 1}, /* that version again: that object */
    {DELTA, "ns/n", "2", "8", O, 0},                     /* every write echoed: forgotten */
    {CHILD, "ns/n", "ConfigMap/n", "3", Q, 0},
    /* The same name of another kind, another name, another version: changes. */
    {BEGIN, "ns/m", "1", NULL, 1, 1},
    {END, "ns/m", "", "ConfigMap/m/2", 0, 1},
    {CHILD, "ns/m", "Service/m", "2", Q, 1},
    {CHILD, "ns/m", "ConfigMap/m2", "2", Q, 1},
    {CHILD, "ns/m", "ConfigMap/m", "3", Q, 1},
    {CHILD, "ns/m", "ConfigMap/m", "2", O, 0},
    /* A reconcile that was not quiet names none: what came in flight is handed back. */
    {BEGIN, "ns/p", "1", NULL, 1, 1},
    {CHILD, "ns/p", "ConfigMap/p", "2", D, 1},
    {CHILD, "ns/p", "Service/p", "3", D, 1},
    {END, "ns/p", "", "| ConfigMap Service", 0, 0},
    {CHILD, "ns/p", "ConfigMap/p", "2", Q, 0},           /* untracked: queued */
    /* A change of the RedisCluster by another writer: every later change queues, its
     * children's echoes too. Forget drops what a flight remembered (the caller queues). */
    {BEGIN, "ns/r", "1", NULL, 1, 1},
    {END, "ns/r", "2", "ConfigMap/r/3", 0, 1},
    {DELTA, "ns/r", "2", "4", Q, 0},
    {CHILD, "ns/r", "ConfigMap/r", "3", Q, 0},
    {BEGIN, "ns/r", "4", NULL, 1, 1},
    {CHILD, "ns/r", "ConfigMap/r", "5", D, 1},
    {FORGET, "ns/r", NULL, NULL, 0, 0},
    {END, "ns/r", "", "ConfigMap/r/5", 0, 0},
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

/* END's child writes: "Kind/name/rv ..." into kids (pointing into buf); how many. */
static size_t split_children(const char *s, char buf[][64], echo_child_t *kids, size_t max)
{
    size_t n = 0;
    while (s && *s && n < max) {
        size_t len = strcspn(s, " ");
        snprintf(buf[n], 64, "%.*s", (int)len, s);
        char *name = strchr(buf[n], '/'), *rv = name ? strchr(name + 1, '/') : NULL;
        CU_ASSERT_PTR_NOT_NULL_FATAL(rv);
        *name++ = '\0';
        *rv++ = '\0';
        kids[n] = (echo_child_t){buf[n], name, rv};
        n++;
        s += len + (s[len] == ' ');
    }
    return n;
}

/* echo_flight_end's hand-backs, as "Kind Kind". */
static char given[512];

static void give(void *arg, const char *kind, int64_t at_ns)
{
    (void)arg;
    CU_ASSERT_EQUAL(at_ns, 42);
    size_t len = strlen(given);
    snprintf(given + len, sizeof(given) - len, "%s%s", len ? " " : "", kind);
}

/* A CHILD step: "Kind/name" and rv to echo_child_delta. */
static int child_step(echo_t *e, const step_t *s)
{
    char kind[64];
    snprintf(kind, sizeof(kind), "%s", s->a);
    char *name = strchr(kind, '/');
    CU_ASSERT_PTR_NOT_NULL_FATAL(name);
    *name++ = '\0';
    return (int)echo_child_delta(e, s->key, kind, name, s->b, 42);
}

/* An END step: the writes, the child writes, and the hand-backs checked. */
static int end_step(echo_t *e, const step_t *s)
{
    char buf[8][32], kbuf[8][64], writes[256];
    const char *rvs[8], *bar = s->b ? strchr(s->b, '|') : NULL;
    echo_child_t kids[8];
    snprintf(writes, sizeof(writes), "%.*s", bar ? (int)(bar - s->b) : 255, s->b ? s->b : "");
    size_t n = split(s->a, buf, rvs, 8), nk = split_children(writes, kbuf, kids, 8);
    given[0] = '\0';
    int got = echo_flight_end(e, s->key, rvs, n, kids, nk, give, NULL);
    CU_ASSERT_STRING_EQUAL(given, bar ? bar + 2 : "");
    return got;
}

static void test_steps(void)
{
    echo_t *e = NULL;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        const step_t *s = &steps[i];
        int got = 0;
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
        case CHILD: got = child_step(e, s); break;
        case END: got = end_step(e, s); break;
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
    CU_ASSERT_EQUAL(echo_flight_end(NULL, "k", NULL, 0, NULL, 0, NULL, NULL), 0);
    CU_ASSERT_EQUAL(echo_child_delta(NULL, "k", "ConfigMap", "k", "1", 0), ECHO_QUEUE);
    /* More child changes in one flight than remembered: the one past the bound queues at
     * once, the others are judged at DONE (the last one here an echo). A new flight
     * forgets the writes named before. */
    e = echo_new(4);
    CU_ASSERT_EQUAL(echo_flight_begin(e, "ns/q", "1"), 1);
    char rv[16];
    for (int i = 0; i <= ECHO_DEFER_MAX; i++) {
        snprintf(rv, sizeof(rv), "%d", 2 + i);
        CU_ASSERT_EQUAL(echo_child_delta(e, "ns/q", "StatefulSet", "q", rv, 42),
                        i < ECHO_DEFER_MAX ? ECHO_DEFER : ECHO_QUEUE);
    }
    snprintf(rv, sizeof(rv), "%d", 1 + ECHO_DEFER_MAX);
    echo_child_t kids[] = {{"StatefulSet", "q", rv}, {"ConfigMap", "q", "99"}};
    given[0] = '\0';
    CU_ASSERT_EQUAL(echo_flight_end(e, "ns/q", NULL, 0, kids, 2, give, NULL), 0);
    CU_ASSERT_EQUAL(strlen(given), (ECHO_DEFER_MAX - 1) * strlen("StatefulSet ") - 1);
    CU_ASSERT_EQUAL(echo_count(e), 1); /* the ConfigMap's echo is still to come */
    CU_ASSERT_EQUAL(echo_flight_begin(e, "ns/q", "1"), 1);
    CU_ASSERT_EQUAL(echo_flight_end(e, "ns/q", NULL, 0, NULL, 0, give, NULL), 0);
    CU_ASSERT_EQUAL(echo_child_delta(e, "ns/q", "ConfigMap", "q", "99", 0), ECHO_QUEUE);
    echo_destroy(&e);
    /* Without a hand-back function, a child change that was no echo queues the key. */
    e = echo_new(4);
    CU_ASSERT_EQUAL(echo_flight_begin(e, "ns/k", "1"), 1);
    CU_ASSERT_EQUAL(echo_child_delta(e, "ns/k", "Service", "k", "2", 0), ECHO_DEFER);
    CU_ASSERT_EQUAL(echo_flight_end(e, "ns/k", NULL, 0, NULL, 0, NULL, NULL), 1);
    CU_ASSERT_EQUAL(echo_count(e), 0);
    echo_destroy(&e);
}

static const cu_entry_t tests[] = {
    CU_SUITE("echo"),
    {"steps: echoes in flight and after, other writers, relists, bounds, children", test_steps},
};

CU_MAIN(tests)
