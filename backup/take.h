/* take: `rdc-backup take`, the I/O shell around replsync.h and s3.h. It connects to the
 * node (TCP to an IP literal, TLS when --tls-dir is given, over redis_stream.h: the
 * operator's one transport), sends the handshake pipelined
 *
 *     [AUTH [user] password] REPLCONF capa eof, REPLCONF rdb-only 1, PSYNC ? -1
 *
 * and streams the RDB's bytes, as replsync hands them over, straight into s3_put's
 * buffer: memory is one part (s3.h) and one 64 KiB read buffer, whatever the RDB's
 * size; nothing is written to disk. The upload's SHA-256 and size are the RDB's.
 * "REPLCONF rdb-only 1" (Redis 7.0+; an error from an older server is accepted) tells the
 * node that this replica wants the RDB and no command stream, so the node keeps no
 * replication buffer for it; "capa eof" lets a diskless node stream its RDB to us
 * instead of falling back to a disk save for our sake.
 *
 * Every wait (connect, TLS, each read) is bounded by --timeout of silence; a node that
 * sends keepalives while its BGSAVE runs is not silent. A failure of the node, the stream
 * or the upload ends the command: s3_put aborts a multipart upload, so no object (or the
 * previous object of that key, untouched) is left.
 *
 * --slots (slots.h; Cluster mode, one shard): before the handshake, and again once the
 * whole RDB has been read and before the upload is completed (the single PutObject or
 * CompleteMultipartUpload: take_read gives s3_put its end only after the check), the take
 * asks the node for CLUSTER NODES on a second connection (TLS and AUTH as the sync's) and
 * compares its shard's master's slots with --slots. A difference, or an error reply (a
 * node not in cluster mode), fails the take: before the sync nothing is read or sent to
 * S3; after the RDB the upload is aborted (no object). On success the line has "slots".
 */
#ifndef RDC_BACKUP_TAKE_H
#define RDC_BACKUP_TAKE_H

#include "cli.h"
#include "s3.h"

#include <stdio.h>

/* The whole command for args (a->cmd TAKE) with the client s: 0 with the JSON line on out
 * ({"result":"ok","key":..,"size":..,"sha256":..,"offset":..,"replid":..,"startTime":..,
 * "completionTime":..,...}); 1 with one line in err. The key is --key, or with --prefix
 * the start time's name (retain.h). With --keep, once the upload succeeded, retention
 * runs (prune_apply, the new key always kept) and its outcome is the line's "retention"
 * object; what it could not delete or list is said there and does not make the command
 * fail. */
int take_run(const backup_args_t *a, s3_t *s, FILE *out, char *err, size_t errlen);

/* The --slots check alone (a->slots given and parsed): CLUSTER NODES from a->host:port
 * (--tls-dir, --user, password: may be NULL), every wait at most timeout_ms, compared by
 * slots_check. 0, or -1 with one line in err (the connection's failure, the node's error
 * reply, slots_check's). */
int take_check_slots(const backup_args_t *a, const char *password, int timeout_ms, char *err, size_t errlen);

#endif
