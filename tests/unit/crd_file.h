/* crd_file: the RedisCluster CRD as the repository ships it, for tests that check the
 * code against the schema. crd_open() opens crds/cache.example.com_redisclusters.yaml
 * below $RDC_TOP (the repository's top; "." when unset or empty, so run from the top),
 * for reading; NULL when it cannot. The caller fcloses. */
#ifndef RDC_TEST_CRD_FILE_H
#define RDC_TEST_CRD_FILE_H

#include <stdio.h>
#include <stdlib.h>

static inline FILE *crd_open(void)
{
    const char *top = getenv("RDC_TOP");
    char path[4096];
    snprintf(path, sizeof(path), "%s/crds/cache.example.com_redisclusters.yaml", top && *top ? top : ".");
    return fopen(path, "r");
}

#endif
