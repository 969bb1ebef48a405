/* libFuzzer target for the watch decoder.
 *
 * The first bytes of the input choose the decoder's line limit and a sequence of chunk
 * sizes; the rest is the stream, fed in those chunks and finished. Checks, beyond the
 * sanitizers: every delivered event has a known type and an object, and the same input
 * fed in one piece gives the same events and the same final status (chunking must not
 * change the outcome).
 *
 * Build: clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
 *   -Icommon tests/fuzz/fuzz_watch.c common/watch.c common/kube_error.c common/buf.c \
 *   -ljson-c -o /tmp/fw && /tmp/fw -max_total_time=30
 */
#include "watch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t hash; /* order-sensitive digest of the events seen */
    size_t count;
} digest_t;

static int on_event(const watch_event_t *ev, void *user)
{
    digest_t *dg = user;
    if (ev->type < WATCH_ADDED || ev->type > WATCH_ERROR || !ev->object ||
        !json_object_is_type(ev->object, json_type_object))
        abort();
    if ((ev->type == WATCH_ERROR) != (ev->error != NULL))
        abort();
    uint64_t h = dg->hash ^ (uint64_t)ev->type;
    const char *rv = ev->resource_version ? ev->resource_version : "";
    for (const char *p = rv; *p; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
    dg->hash = h * UINT64_C(1099511628211);
    dg->count++;
    return 0;
}

static int run(const uint8_t *data, size_t size, size_t max, const uint8_t *sizes,
               size_t nsizes, digest_t *dg, char *rv, size_t rvlen)
{
    watch_decoder_t *d = watch_decoder_new(max, on_event, dg);
    if (!d)
        return -1;
    size_t off = 0, i = 0;
    int rc = WATCH_OK;
    while (off < size && rc == WATCH_OK) {
        size_t n = nsizes ? (size_t)sizes[i++ % nsizes] + 1 : size;
        if (n > size - off)
            n = size - off;
        rc = watch_decoder_feed(d, (const char *)data + off, n);
        off += n;
    }
    if (rc == WATCH_OK)
        rc = watch_decoder_finish(d);
    if (rc != WATCH_OK && watch_decoder_error(d)[0] == '\0')
        abort(); /* every failure explains itself */
    snprintf(rv, rvlen, "%s", watch_decoder_last_rv(d));
    watch_decoder_destroy(&d);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t max = 16 + (size_t)data[0] * 8; /* 16 .. 2056 bytes per line */
    size_t nsizes = data[1] % 16;
    if (size < 2 + nsizes)
        return 0;
    const uint8_t *sizes = data + 2;
    const uint8_t *stream = data + 2 + nsizes;
    size_t len = size - 2 - nsizes;

    digest_t a = {0}, b = {0};
    char rva[300], rvb[300];
    int ra = run(stream, len, max, sizes, nsizes, &a, rva, sizeof(rva));
    int rb = run(stream, len, max, NULL, 0, &b, rvb, sizeof(rvb));
    /* The too-long check fires before a line completes when it arrives in pieces, and
     * only once its newline is seen in one piece: outcomes then match, event counts
     * too, because the offending line is never delivered either way. */
    if (ra != rb || a.count != b.count || a.hash != b.hash || strcmp(rva, rvb) != 0)
        abort();
    return 0;
}
