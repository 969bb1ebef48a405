/* Unit tests of informerd's sync gate: no dispatch before every kind synced, and after
 * the timeout a message naming the kinds that are not, with why. */
#include "../../informerd/syncgate.h"
#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#define S INT64_C(1000000000)

static const struct {
    const char *name;
    syncgate_kind_t kinds[4];
    int64_t elapsed, timeout;
    syncgate_state_t want;
    const char *names, *why;
} cases[] = {
    {"all synced",
     {{"RedisCluster", 1, 0, NULL}, {"ConfigMap", 1, 0, NULL}, {"Service", 1, 0, NULL}, {"StatefulSet", 1, 0, NULL}},
     1 * S, 120 * S, SYNCGATE_OPEN, "", ""},
    {"all synced, past the timeout: open all the same",
     {{"RedisCluster", 1, 0, NULL}, {"ConfigMap", 1, 0, "an old error"}, {"Service", 1, 0, NULL},
      {"StatefulSet", 1, 0, NULL}},
     500 * S, 120 * S, SYNCGATE_OPEN, "", ""},
    {"one still listing: wait",
     {{"RedisCluster", 1, 0, NULL}, {"ConfigMap", 0, 1, NULL}, {"Service", 1, 0, NULL}, {"StatefulSet", 1, 0, NULL}},
     119 * S, 120 * S, SYNCGATE_WAIT, "ConfigMap", "ConfigMap (LIST in progress)"},
    {"one still listing at the timeout: timed out",
     {{"RedisCluster", 1, 0, NULL}, {"ConfigMap", 0, 1, NULL}, {"Service", 1, 0, NULL}, {"StatefulSet", 1, 0, NULL}},
     120 * S, 120 * S, SYNCGATE_TIMED_OUT, "ConfigMap", "ConfigMap (LIST in progress)"},
    {"two failing, each with its error",
     {{"RedisCluster", 0, 0, "GET /apis/...: Forbidden"}, {"ConfigMap", 1, 0, NULL}, {"Service", 0, 0, ""},
      {"StatefulSet", 0, 0, "response body exceeds 65536 bytes"}},
     300 * S, 120 * S, SYNCGATE_TIMED_OUT, "RedisCluster,Service,StatefulSet",
     "RedisCluster (GET /apis/...: Forbidden); Service (LIST not started); "
     "StatefulSet (response body exceeds 65536 bytes)"},
    {"no timeout: wait forever",
     {{"RedisCluster", 0, 0, "x"}, {"ConfigMap", 1, 0, NULL}, {"Service", 1, 0, NULL}, {"StatefulSet", 1, 0, NULL}},
     1000000 * S, 0, SYNCGATE_WAIT, "RedisCluster", "RedisCluster (x)"},
};

static void test_gate_table(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        buf_t names, why;
        buf_init(&names, 1024);
        buf_init(&why, 4096);
        int64_t start = 77 * S;
        syncgate_state_t st =
            syncgate_check(cases[i].kinds, 4, start, start + cases[i].elapsed, cases[i].timeout, &names, &why);
        CU_ASSERT_EQUAL(st, cases[i].want);
        CU_ASSERT_STRING_EQUAL(buf_str(&names), cases[i].names);
        CU_ASSERT_STRING_EQUAL(buf_str(&why), cases[i].why);
        if (st != cases[i].want || strcmp(buf_str(&why), cases[i].why))
            fprintf(stderr, "\ncase %s: state %d, names \"%s\", why \"%s\"\n", cases[i].name, (int)st, buf_str(&names),
                    buf_str(&why));
        /* Without buffers: the same decision. */
        CU_ASSERT_EQUAL(
            syncgate_check(cases[i].kinds, 4, start, start + cases[i].elapsed, cases[i].timeout, NULL, NULL), st);
        buf_free(&names);
        buf_free(&why);
    }
}

/* A reason longer than the buffer's cap is left out, the call still decides. */
static void test_small_buffers(void)
{
    syncgate_kind_t k[2] = {{"ConfigMap", 0, 0, "a very long reason that will not fit in sixteen bytes"},
                            {"Service", 0, 1, NULL}};
    buf_t names, why;
    buf_init(&names, 8);
    buf_init(&why, 16);
    CU_ASSERT_EQUAL(syncgate_check(k, 2, 0, 10 * S, 5 * S, &names, &why), SYNCGATE_TIMED_OUT);
    CU_ASSERT(names.len <= 8);
    CU_ASSERT(why.len <= 16);
    buf_free(&names);
    buf_free(&why);
    /* No kinds at all: nothing to wait for. */
    CU_ASSERT_EQUAL(syncgate_check(k, 0, 0, 10 * S, 5 * S, NULL, NULL), SYNCGATE_OPEN);
}

static const cu_entry_t tests[] = {
    CU_SUITE("syncgate"),
    {"gate: open, wait, timed out, with the kinds and why", test_gate_table},
    {"gate: small buffers", test_small_buffers},
};

CU_MAIN(tests)
