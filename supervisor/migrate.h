/* migrate: storage version migration of RedisClusters (`supervisor ctl migrate-storage`).
 *
 * After the CRD's storage version became v1, objects written before stay in etcd as
 * v1alpha1 until something writes them. migrate_storage writes each one once, then tells
 * the API server that no object is stored as anything else any more:
 *
 *   1. GET the CRD; its storage version must be opts->version (else KERR_CONFIG: the
 *      new CRD is not applied yet). When status.storedVersions is already exactly
 *      [version] there is nothing to do: return 0 at once (report->already_done).
 *   2. LIST the resource as opts->version, page by page (opts->page_size, following
 *      metadata.continue), and for each object a no-op update: PUT of the object exactly
 *      as read, its metadata.resourceVersion the precondition. The API server converts
 *      it and stores it in the storage version; an object already stored so is not
 *      written at all (etcd sees identical bytes), which the unchanged resourceVersion
 *      of the answer shows. On 409 Conflict (someone wrote it in between) the object is
 *      read again and the PUT repeated, up to opts->max_conflict_retries times; 404 (it
 *      was deleted) counts as gone. Any other error counts the object as failed and
 *      goes on with the next one. PUTs are spaced by a token bucket (opts->qps, burst).
 *   3. When no object failed: PATCH (merge) the CRD's /status with storedVersions =
 *      [version]. The API server refuses a list without the current storage version, so
 *      a concurrent rollback of the CRD cannot be hidden.
 *
 * RESUMABLE. The whole run is idempotent (a second run rewrites nothing and only patches
 * storedVersions). With opts->state_file, progress (the continue token of the next page
 * and the counts so far) is written after every page (to FILE.new, renamed into place),
 * and a run that finds the file starts from that page; an expired token (410) starts the
 * listing over from the first page (report->restarted). The file is removed when the run
 * completes. A state file for another CRD or version is ignored.
 *
 * Blocking: meant for a one-shot command, not for the daemons' event loops. The waits of
 * the rate limit go through opts->sleep_ns (nanosleep by default), so tests run on a
 * fake clock. Every API call goes through the client (its own QPS limiter, retries and
 * metrics apply too).
 */
#ifndef RDC_MIGRATE_H
#define RDC_MIGRATE_H

#include "buf.h"
#include "kube_client.h"
#include "kube_error.h"

#include <stdint.h>

#define MIGRATE_DEFAULT_CRD "redisclusters.cache.example.com"
#define MIGRATE_DEFAULT_GROUP "cache.example.com"
#define MIGRATE_DEFAULT_RESOURCE "redisclusters"
#define MIGRATE_DEFAULT_VERSION "v1"

typedef struct {
    const char *crd_name;       /* NULL = MIGRATE_DEFAULT_CRD */
    const char *group;          /* NULL = MIGRATE_DEFAULT_GROUP */
    const char *resource;       /* NULL = MIGRATE_DEFAULT_RESOURCE */
    const char *version;        /* the storage version to migrate to; NULL = "v1" */
    long page_size;             /* objects per LIST page; <= 0 = 100 */
    double qps;                 /* PUTs per second; 0 = 10; < 0 = unlimited */
    int burst;                  /* < 1 = 1 */
    int max_conflict_retries;   /* re-reads per object after a 409; < 0 = 0; 0 = 5 */
    const char *state_file;     /* progress for resuming; NULL = none */
    int dry_run;                /* PUT with dryRun=All and never patch the CRD */
    int64_t (*now_ns)(void *user);         /* monotonic clock; NULL = clock_mono_ns */
    void (*sleep_ns)(void *user, int64_t); /* NULL = nanosleep */
    void *clock_user;
} migrate_opts_t;

typedef struct {
    uint64_t listed;            /* objects seen in the listing */
    uint64_t rewritten;         /* written anew (their resourceVersion changed) */
    uint64_t unchanged;         /* the update was a no-op: stored in `version` already */
    uint64_t conflicts;         /* 409 answers, each followed by a re-read */
    uint64_t gone;              /* deleted before they could be written */
    uint64_t failed;            /* could not be written; last_error says why */
    uint64_t pages;             /* LIST pages read (this run) */
    int resumed;                /* started from the state file's page */
    int restarted;              /* a continue token had expired: listed again from the start */
    int already_done;           /* storedVersions was [version] already: nothing done */
    int stored_versions_patched;
    char stored_before[128];    /* status.storedVersions before, "v1alpha1,v1" */
    char stored_after[128];     /* after ("" when not patched) */
    char last_error[512];       /* "default/cache: PUT ...: 422 Invalid: ..." */
} migrate_report_t;

/* Run the migration above with client (borrowed) and opts (NULL = defaults). *report
 * (required) is filled in every case. Returns 0 when every object is stored as
 * opts->version and storedVersions is [version] (or, with dry_run, every PUT passed);
 * otherwise the kube_error_code_t of the failure with err (optional) filled: the CRD
 * could not be read or is not ready (KERR_CONFIG), the listing failed (what is done
 * stays done), objects failed (the last one's code; storedVersions left alone), or the
 * status patch failed. */
int migrate_storage(kube_client_t *client, const migrate_opts_t *opts, migrate_report_t *report,
                    kube_error_t *err);

/* Append one line for humans: "migrate-storage redisclusters.cache.example.com to v1:
 * 20 listed, 20 rewritten, 0 unchanged, 0 conflicts, 0 gone, 0 failed, 1 page;
 * storedVersions [v1alpha1,v1] -> [v1]". Returns buf_printf's result. */
int migrate_report_format(const migrate_report_t *r, const migrate_opts_t *opts, buf_t *out);

#endif
