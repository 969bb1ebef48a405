/* retain: the pure half of scheduled backups' naming and retention (issue 36): what a
 * backup under a prefix is called, which objects under it are backups of ours, in what
 * order, and which of them retention deletes. No I/O, no clock: prune.h is the shell.
 *
 * NAMES. A backup taken with --prefix P (and no --key) is the object
 *
 *     P/<YYYYMMDD>T<HHMMSS>Z.rdb          e.g. prod/cache/20261206T140000Z.rdb
 *
 * its start time in UTC in ISO 8601's basic form (no ':' to quote in a URL or a file
 * name; it sorts as it reads). P is given with or without its trailing '/'.
 *
 * OURS. Retention and `list` consider only objects that are both
 *   - named so, directly under P: "P/<time>.rdb" and nothing else (not "P/sub/<time>.rdb",
 *     which belongs to another prefix, not "P/<time>.rdb.part", not "P/notes.txt"), and
 *   - complete: carrying x-amz-meta-sha256 (s3.h: an upload that did not finish, or an
 *     object someone else put there, has none).
 * Everything else under P is foreign: never deleted, never counted.
 *
 * ORDER. By the time in the name, newest first. Not by LastModified: that is the time the
 * object was last written, which a bucket migration or replication (a copy) resets for
 * every object at once, which our own multipart path sets to the metadata copy's time,
 * and which is the server's clock; the name is the snapshot's time, fixed when the
 * backup was taken, survives copies, and is in the listing (no request per object to read
 * it). Distinct keys cannot tie (the name is the time, to the second); equal keys (the
 * new key also in the listing) are one backup.
 *
 * KEEP N (N >= 1; N = 0 would delete every backup and is refused). The object just
 * written (new_key, when given) is kept whatever its name says (a Job on a node whose
 * clock is behind names its backup older than the last one, but its data is the newest)
 * and counts as one of the N, whether or not the listing shows it yet; the N - 1 newest
 * other backups of ours are kept; older backups of ours are deleted.
 */
#ifndef RDC_BACKUP_RETAIN_H
#define RDC_BACKUP_RETAIN_H

#include <stddef.h>
#include <stdint.h>

/* "P/" + the name: "20261206T140000Z.rdb" */
#define RETAIN_NAME_LEN 20

/* The longest prefix taken (the key must fit S3's 1024 bytes). */
#define RETAIN_PREFIX_MAX (1024 - 1 - RETAIN_NAME_LEN)

typedef enum {
    RETAIN_FOREIGN = 0, /* not ours (the header): left alone, not counted */
    RETAIN_NEW,         /* the object just written: kept always */
    RETAIN_KEEP,        /* ours, among the N newest: kept */
    RETAIN_DELETE,      /* ours, older than the N kept */
} retain_verdict_t;

typedef struct {
    const char *key;          /* in: the object's key (the caller's) */
    int complete;             /* in: it carries x-amz-meta-sha256 */
    size_t ref;               /* in: the caller's (its index elsewhere), carried through the sort */
    int64_t time;             /* out: the time its name says (Unix seconds), -1: not ours by name */
    retain_verdict_t verdict; /* out */
} retain_obj_t;

/* The prefix without its trailing '/'s into out: 0; -1 with err when it is empty, starts
 * with '/', is longer than RETAIN_PREFIX_MAX, or out (cap bytes) cannot hold it. */
int retain_prefix_norm(const char *prefix, char *out, size_t cap, char *err, size_t errlen);

/* The key of a backup taken at t (Unix seconds) under the normalised prefix into out
 * (cap >= strlen(prefix) + 22): 0, or -1 when it does not fit or t is out of range. */
int retain_key_name(const char *prefix, int64_t t, char *out, size_t cap);

/* The time key names under the normalised prefix ("P/<time>.rdb", a real date): 0 with
 * *t; -1 when key is not that. */
int retain_key_time(const char *prefix, const char *key, int64_t *t);

/* Fill time and verdict of the n objects (the listing of prefix, any order, pages
 * joined) and sort them newest first: ours by time (ties, which only equal keys make, by
 * key, the greater first), then foreign ones in key order. new_key (NULL: none, as for
 * `rdc-backup prune`) is the object just written. Returns how many are RETAIN_DELETE; -1
 * with err when keep < 1 (the objects untouched). */
int retain_decide(const char *prefix, retain_obj_t *objs, size_t n, int keep, const char *new_key, char *err,
                  size_t errlen);

/* The time as RFC 3339 ("2026-12-06T14:00:00Z") into out (cap >= 21). */
void retain_time_str(int64_t t, char *out, size_t cap);

#endif
