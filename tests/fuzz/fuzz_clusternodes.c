/* libFuzzer target for the CLUSTER NODES and CLUSTER INFO parsers (common/clusternodes.h),
 * what observerd reads from every Redis node of a Cluster-mode RedisCluster.
 *
 * Checks, beyond the sanitizers: a view that parses has well-formed nodes (40-character
 * ids, ranges inside 0..16383 with from <= to, open slots naming a peer); its normalized
 * text (cn_format) parses back, and formats to the same text again.
 */
#include "clusternodes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_view(const cn_view_t *v)
{
    for (size_t i = 0; i < v->n; i++) {
        const cn_node_t *n = &v->nodes[i];
        if (strlen(n->id) != CN_ID_LEN || (n->master[0] && strlen(n->master) != CN_ID_LEN))
            abort();
        for (size_t r = 0; r < n->nranges; r++)
            if (n->ranges[r].from < 0 || n->ranges[r].from > n->ranges[r].to || n->ranges[r].to >= CN_SLOTS)
                abort();
        for (size_t o = 0; o < n->nopen; o++)
            if (n->open[o].slot < 0 || n->open[o].slot >= CN_SLOTS || strlen(n->open[o].peer) != CN_ID_LEN)
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    cn_info_t info;
    cn_info_parse(text, size, &info);
    cn_view_t *v = NULL, *back = NULL;
    char err[256];
    if (cn_parse(text, size, &v, err, sizeof(err))) {
        if (v || !err[0])
            abort();
        return 0;
    }
    check_view(v);
    size_t cap = size * 2 + 4096;
    char *a = malloc(cap), *b = malloc(cap);
    if (a && b && cn_format(v, a, cap) == 0) {
        if (cn_parse(a, strlen(a), &back, err, sizeof(err)) || back->n != v->n)
            abort();
        if (cn_format(back, b, cap) || strcmp(a, b))
            abort();
    }
    cn_view_destroy(&back);
    cn_view_destroy(&v);
    free(a);
    free(b);
    return 0;
}
