/* prune: the I/O shell of retention and of `rdc-backup list` over retain.h's decisions.
 *
 * THE CATALOG of a prefix P: ListObjectsV2 of "P/", every page (continuation tokens, via
 * s3_list), then a HeadObject of each object named as ours (retain.h) to see whether it
 * carries x-amz-meta-sha256 (a listing does not show user metadata); objects named
 * otherwise get no request. An object gone between the listing and its HEAD (404) is
 * left out. Any other failure of the listing or of a HEAD fails the whole catalog:
 * retention deletes nothing unless it sees every object, so a backup it could not
 * examine is never counted out.
 *
 * RETENTION (prune_apply): the catalog, retain_decide, then a DeleteObject for each
 * RETAIN_DELETE, oldest first. A failed delete is recorded and the others are still
 * tried. The outcome goes into a JSON object as
 *
 *     "keep":N, "kept":K, "pruned":["P/..rdb",...],
 *     "pruneFailed":[{"key":"P/..rdb","error":"DeleteObject b/k: HTTP 403 AccessDenied: ..."}],
 *     "foreign":F
 *
 * (kept: the backups of ours kept, the new one included; foreign: the objects under P
 * left alone, not ours), or, when the catalog failed, "keep":N, "pruneError":"<line>"
 * and nothing deleted.
 */
#ifndef RDC_BACKUP_PRUNE_H
#define RDC_BACKUP_PRUNE_H

#include "cli.h"
#include "s3.h"

#include <json-c/json.h>
#include <stdio.h>

/* Retention of prefix (normalised) in bucket, keeping keep backups, new_key (NULL: none)
 * always among them; the outcome's fields put into o (the header; *oom set when memory
 * ran out). 0 when every delete decided was done; 1 when some failed ("pruneFailed");
 * -1 when the catalog failed ("pruneError"; nothing deleted). */
int prune_apply(s3_t *s, const char *bucket, const char *prefix, int keep, const char *new_key, json_object *o,
                int *oom);

/* `rdc-backup prune`: prune_apply without a new backup, its JSON line on out
 * ({"result":"pruned","bucket":..,"prefix":..,<the fields>}). 0 when all went; 1 with
 * the line printed when a delete failed; 1 with err and nothing printed when the catalog
 * failed. */
int prune_run(const backup_args_t *a, s3_t *s, FILE *out, char *err, size_t errlen);

/* `rdc-backup list`: one JSON line per backup of ours under a->prefix on out, newest
 * first: {"key":..,"size":..,"sha256":..,"time":"2026-12-06T14:00:00Z"}; none: nothing.
 * 0, or 1 with err (nothing printed). */
int list_run(const backup_args_t *a, s3_t *s, FILE *out, char *err, size_t errlen);

#endif
