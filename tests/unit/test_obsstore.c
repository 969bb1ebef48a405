/* Unit tests of informerd's store of observerd's observations (informerd/obsstore.h):
 * the latest per key, copied, replaced, forgotten. */
#include "../../informerd/obsstore.h"
#include "cu_table.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

static void test_latest_per_key(void)
{
    obsstore_t *s = obsstore_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    size_t len = 99;
    CU_ASSERT_PTR_NULL(obsstore_get(s, "ns/a", &len));
    CU_ASSERT_EQUAL(len, 0);
    /* The text is copied (the message frame it came in goes) and NUL-terminated. */
    char frame[] = "{\"nodes\":[1]}garbage";
    CU_ASSERT_EQUAL(obsstore_put(s, "ns/a", frame, 13), 0);
    memset(frame, 'x', sizeof(frame) - 1);
    CU_ASSERT_STRING_EQUAL(obsstore_get(s, "ns/a", &len), "{\"nodes\":[1]}");
    CU_ASSERT_EQUAL(len, 13);
    /* A newer one replaces it; other keys are apart. */
    CU_ASSERT_EQUAL(obsstore_put(s, "ns/a", "{\"nodes\":[]}", 12), 0);
    CU_ASSERT_EQUAL(obsstore_put(s, "ns/b", "{\"nodes\":[2]}", 13), 0);
    CU_ASSERT_STRING_EQUAL(obsstore_get(s, "ns/a", NULL), "{\"nodes\":[]}");
    CU_ASSERT_STRING_EQUAL(obsstore_get(s, "ns/b", NULL), "{\"nodes\":[2]}");
    CU_ASSERT_EQUAL(obsstore_count(s), 2);
    /* Forgotten with its RedisCluster; unknown keys and NULL are ignored. */
    obsstore_forget(s, "ns/a");
    obsstore_forget(s, "ns/zzz");
    obsstore_forget(s, NULL);
    CU_ASSERT_PTR_NULL(obsstore_get(s, "ns/a", NULL));
    CU_ASSERT_PTR_NULL(obsstore_get(s, NULL, NULL));
    CU_ASSERT_EQUAL(obsstore_count(s), 1);
    CU_ASSERT_EQUAL(obsstore_put(s, NULL, "{}", 2), -1);
    CU_ASSERT_EQUAL(obsstore_count(s), 1);
    obsstore_destroy(&s);
    CU_ASSERT_PTR_NULL(s);
    obsstore_destroy(&s);
    obsstore_destroy(NULL);
}

/* A thousand keys, each replaced once, half forgotten; an empty text is kept as "" (the
 * caller decides what it accepts). */
static void test_many_keys(void)
{
    obsstore_t *s = obsstore_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    char key[32], text[64];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 1000; i++) {
            snprintf(key, sizeof(key), "ns/c%d", i);
            int n = snprintf(text, sizeof(text), "{\"nodes\":[%d]}", i + round);
            CU_ASSERT_EQUAL_FATAL(obsstore_put(s, key, text, (size_t)n), 0);
        }
    }
    CU_ASSERT_EQUAL(obsstore_count(s), 1000);
    CU_ASSERT_STRING_EQUAL(obsstore_get(s, "ns/c7", NULL), "{\"nodes\":[8]}");
    CU_ASSERT_EQUAL(obsstore_put(s, "ns/empty", "", 0), 0);
    CU_ASSERT_STRING_EQUAL(obsstore_get(s, "ns/empty", NULL), "");
    for (int i = 0; i < 1000; i += 2) {
        snprintf(key, sizeof(key), "ns/c%d", i);
        obsstore_forget(s, key);
    }
    CU_ASSERT_EQUAL(obsstore_count(s), 501);
    CU_ASSERT_PTR_NULL(obsstore_get(s, "ns/c8", NULL));
    CU_ASSERT_PTR_NOT_NULL(obsstore_get(s, "ns/c9", NULL));
    obsstore_destroy(&s);
}

static const cu_entry_t tests[] = {
    CU_SUITE("informerd observations"),
    {"the latest per key, copied, replaced, forgotten", test_latest_per_key},
    {"a thousand keys, replaced and half forgotten", test_many_keys},
};

CU_MAIN(tests)
