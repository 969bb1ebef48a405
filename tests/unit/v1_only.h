/* v1_only: fields a RedisCluster has only in v1 (conversion.h), as test_backup_spec,
 * test_day2, test_knobs and test_restore check them:
 *
 *   down = V1_ONLY_ROUND_TRIP(v1, "path", ...)
 *       v1 converted to v1alpha1 has none of the paths (json_at.h's, from the object's
 *       root: "spec backup"), each one still there printed; converted back to v1 it equals
 *       v1 again. Returns the v1alpha1 object for more checks; the caller puts it.
 */
#ifndef RDC_TEST_V1_ONLY_H
#define RDC_TEST_V1_ONLY_H

#include "conversion.h"
#include "json_at.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>

#define V1_ONLY_ROUND_TRIP(v1, ...) v1_only_round_trip((v1), (const char *const[]){__VA_ARGS__, NULL})

static inline json_object *v1_only_round_trip(const json_object *v1, const char *const *paths)
{
    json_object *down = NULL, *up = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(conversion_convert(v1, CONVERSION_V1ALPHA1, &down, err, sizeof(err)), 0);
    for (size_t i = 0; paths[i]; i++) {
        if (at(down, paths[i]))
            fprintf(stderr, "\n  v1alpha1 still has %s\n", paths[i]);
        CU_ASSERT_PTR_NULL(at(down, paths[i]));
    }
    CU_ASSERT_EQUAL_FATAL(conversion_convert(down, CONVERSION_V1, &up, err, sizeof(err)), 0);
    CU_ASSERT_TRUE(json_object_equal(up, (json_object *)v1));
    json_object_put(up);
    return down;
}

#endif
