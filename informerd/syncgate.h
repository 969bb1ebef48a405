/* syncgate: when informerd may start dispatching work, as controller-runtime's manager
 * decides when to start its controllers' workers (WaitForCacheSync with CacheSyncTimeout).
 *
 * The gate opens when every kind has synced (listed once); the caller latches it (a
 * later relist does not close it again: the cache is then complete but for the changes
 * the relist is about to deliver, as in client-go). Before that it waits, and once the
 * timeout has passed since the start it reports the kinds still not synced and why (the
 * last error of each, or that its LIST is in progress or not started), so the caller can
 * fail with a message that names them. A timeout of 0 waits forever. Pure: no clock, no
 * I/O.
 */
#ifndef RDC_INFORMERD_SYNCGATE_H
#define RDC_INFORMERD_SYNCGATE_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *kind;
    int synced;             /* listed at least once */
    int listing;            /* a LIST is in progress */
    const char *last_error; /* why its last LIST or WATCH failed; NULL or "" when none did */
} syncgate_kind_t;

typedef enum {
    SYNCGATE_WAIT = 0,  /* not every kind synced; the timeout has not passed */
    SYNCGATE_OPEN,      /* every kind synced: dispatch may start */
    SYNCGATE_TIMED_OUT  /* not every kind synced and the timeout has passed */
} syncgate_state_t;

/* The gate for n kinds, started at started_ns, at now_ns, with timeout_ns (0 = none).
 * When it is not OPEN and names/why are not NULL, the kinds not synced are appended to
 * names ("ConfigMap,StatefulSet") and each with its reason to why ("ConfigMap (LIST
 * failed: ...); StatefulSet (LIST in progress)"); appends that do not fit the buffers'
 * caps are left out, never failing the call. */
syncgate_state_t syncgate_check(const syncgate_kind_t *kinds, size_t n, int64_t started_ns,
                                int64_t now_ns, int64_t timeout_ns, buf_t *names, buf_t *why);

#endif
