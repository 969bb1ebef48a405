/* restore: `rdc-backup restore`, an init step of a Redis pod: download an RDB from S3,
 * verify it, and put it where redis-server will load it, or leave the data directory
 * alone.
 *
 * THE SKIP RULE (restore_decide, pure). A pod that restarts runs its init containers
 * again; by then its volume holds the data it has written since the restore, which is
 * newer than the backup. So the restore writes only into a data directory that holds no
 * data: it SKIPS (exit 0, one line saying so) when the target (dump.rdb) exists and is
 * not empty, or when an append-only file is there (the directory appendonlydir with any
 * entry, or a non-empty appendonly.aof: Redis loads the AOF instead of the RDB when
 * appendonly is on). --force restores anyway (a deliberate restore over the data). An
 * empty dump.rdb or an empty appendonlydir is no data.
 *
 * THE WRITE. The object goes to a temporary file beside the target (same directory,
 * same file system: "<target>.restore.XXXXXX"), is verified by s3_get_fd (against
 * --expect-sha256, else the object's x-amz-meta-sha256; an object with neither is
 * refused), fsynced, renamed over the target, and the directory fsynced. On any failure
 * the temporary file is removed and the target is as it was (absent, or with --force the
 * old file): the command exits non-zero with one line saying why, so an init container
 * keeps redis-server from starting on an empty or wrong data set. Temporary files of an
 * earlier restore that was killed are removed before a new one starts.
 *
 * THE AOF FORM (--aof, for a pod whose redis.conf says appendonly yes). Redis 7 with
 * appendonly yes and no append-only directory does not load dump.rdb: it starts empty
 * and writes that empty data set as its first AOF base (docs/backup.md says how this was
 * checked). So with --aof the verified RDB is not renamed to the target but becomes
 * appendonlydir/appendonly.aof.1.base.rdb beside it, with a manifest naming it as the
 * base ("file appendonly.aof.1.base.rdb seq 1 type b"), which Redis 7 loads and then
 * adds its incr file to. Both are built in appendonlydir.restore (fsynced) and renamed
 * to appendonlydir in one step, over an absent or empty one: a restore killed midway
 * leaves no appendonlydir and runs again. --aof with --force is refused.
 *
 * ONLY ONE POD (--only-pod NAME, Cluster mode). Every pod of a shard's StatefulSet runs
 * the same init container, but only the first (<sts>-0) may load the shard's RDB: a
 * replica that loaded it too would start as a master of the same slots at epoch 0, a
 * second owner of the shard's slots. So when this host's name (gethostname(2); a pod's
 * host name is its name) is not NAME, the restore SKIPS before anything else (exit 0,
 * the data directory not even looked at, no S3 request); the pod starts empty and the
 * operator makes it a replica, which copies the data from its shard's master. When the
 * names are equal the restore goes on as without the flag (the skip rule included).
 */
#ifndef RDC_BACKUP_RESTORE_H
#define RDC_BACKUP_RESTORE_H

#include "cli.h"
#include "s3.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What the data directory holds, as restore_survey sees it. */
typedef struct {
    int target_exists;
    uint64_t target_size;
    int aof_dir_entries;   /* entries of appendonlydir (0: absent or empty) */
    uint64_t aof_file_size;/* appendonly.aof (0: absent or empty) */
} restore_seen_t;

typedef enum {
    RESTORE_DO = 0,   /* download into place */
    RESTORE_SKIP,     /* the directory holds data: leave it */
} restore_action_t;

/* The skip rule (the header): RESTORE_SKIP with why ("dump.rdb has 1234 bytes") when
 * seen shows data and force is 0; RESTORE_DO otherwise (why then says what is replaced
 * with force, else ""). Pure. */
restore_action_t restore_decide(const restore_seen_t *seen, int force, char *why, size_t whylen);

/* ONLY ONE POD: RESTORE_SKIP with why ("this pod is cache-shard0-1, the restore is for
 * cache-shard0-0: ...") when only_pod is given and is not host; RESTORE_DO otherwise (why
 * ""). Pure. */
restore_action_t restore_decide_pod(const char *host, const char *only_pod, char *why, size_t whylen);

/* Look at target's directory: 0 with *seen filled; -1 with err when it cannot be read
 * (the directory missing is an error: the volume is not mounted). */
int restore_survey(const char *target, restore_seen_t *seen, char *err, size_t errlen);

/* The first half of the command for args (a->cmd RESTORE), before any S3 request: with
 * --only-pod the host name's decision, then survey and decide. 0: go on with
 * restore_download; 1: skipped, its JSON line printed on out ("result":"skipped" and
 * "reason"; a restarted pod needs neither the network nor the credentials to keep its
 * data); -1 with one line in err (gethostname failing too). */
int restore_prepare(const backup_args_t *a, FILE *out, char *err, size_t errlen);

/* The second half: download, verify and rename into place (the header) with the client
 * s, then the JSON line on out. 0, or -1 with one line in err (nothing left behind). */
int restore_download(const backup_args_t *a, s3_t *s, FILE *out, char *err, size_t errlen);

#endif
