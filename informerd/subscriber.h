/* subscriber: a client of informerd's delta stream (the ZeroMQ guide's Clone pattern).
 *
 * It subscribes first, then asks the snapshot socket for the whole cache, prints every
 * object of the snapshot, and from then on prints only the deltas whose sequence number
 * is greater than the snapshot's. A gap in the sequence (PUB drops messages when a
 * subscriber is slow) makes it ask for a new snapshot, so what it printed last always
 * equals informerd's cache. `informerd --subscribe` runs it: the way a user or a test
 * sees what a running operator sees.
 */
#ifndef RDC_SUBSCRIBER_H
#define RDC_SUBSCRIBER_H

#include <stdio.h>

/* Run until SIGTERM/SIGINT on signal_fd. Every line printed to out is one JSON object
 * {"seq","type","kind","key","resourceVersion","object"}, type SNAPSHOT for snapshot
 * items (then one {"type":"SYNCED","seq":S} line) and ADDED/MODIFIED/DELETED/SYNC for
 * deltas. Returns the exit code. */
int subscriber_run(const char *runtime_dir, FILE *out, int signal_fd);

#endif
