/* restore: rdc-backup restore (restore.h). */
#include "restore.h"

#include "jsonx.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define AOF_DIR "appendonlydir"
#define AOF_FILE "appendonly.aof"
/* --aof: Redis 7's names for the first base of an AOF directory and its manifest (the
 * defaults of appendfilename and appenddirname), and where they are put together. */
#define AOF_BASE AOF_FILE ".1.base.rdb"
#define AOF_MANIFEST AOF_FILE ".manifest"
#define AOF_STAGING AOF_DIR ".restore"

restore_action_t restore_decide(const restore_seen_t *seen, int force, char *why, size_t whylen)
{
    const char *what = NULL;
    char buf[128];
    if (seen->target_exists && seen->target_size > 0) {
        snprintf(buf, sizeof buf, "the target has %" PRIu64 " bytes", seen->target_size);
        what = buf;
    } else if (seen->aof_dir_entries > 0) {
        snprintf(buf, sizeof buf, AOF_DIR " has %d entries", seen->aof_dir_entries);
        what = buf;
    } else if (seen->aof_file_size > 0) {
        snprintf(buf, sizeof buf, AOF_FILE " has %" PRIu64 " bytes", seen->aof_file_size);
        what = buf;
    }
    if (!what) {
        snprintf(why, whylen, "%s", "");
        return RESTORE_DO;
    }
    if (force) {
        snprintf(why, whylen, "--force: restoring although %s", what);
        return RESTORE_DO;
    }
    snprintf(why, whylen, "the data directory holds data (%s): left alone (--force restores over it)", what);
    return RESTORE_SKIP;
}

restore_action_t restore_decide_pod(const char *host, const char *only_pod, char *why, size_t whylen)
{
    snprintf(why, whylen, "%s", "");
    if (!only_pod || strcmp(host, only_pod) == 0)
        return RESTORE_DO;
    snprintf(why, whylen,
             "this pod is %s, the restore is for %s (--only-pod): it starts empty and replicates from its "
             "shard's master",
             host, only_pod);
    return RESTORE_SKIP;
}

/* target's directory into dir (dirname without touching target). */
static void dir_of(const char *target, char *dir, size_t cap)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", target);
    snprintf(dir, cap, "%s", dirname(copy));
}

static int count_entries(const char *path, int *n)
{
    DIR *d = opendir(path);
    *n = 0;
    if (!d)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            (*n)++;
    closedir(d);
    return 0;
}

/* The size of path (0 with *exists 0 when absent); -1 on another error. */
static int size_of(const char *path, int *exists, uint64_t *size)
{
    struct stat st;
    *exists = 0;
    *size = 0;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    *exists = 1;
    *size = (uint64_t)st.st_size;
    return 0;
}

int restore_survey(const char *target, restore_seen_t *seen, char *err, size_t errlen)
{
    char dir[4096], path[4200];
    struct stat st;
    int exists = 0;
    memset(seen, 0, sizeof *seen);
    dir_of(target, dir, sizeof dir);
    errno = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "data directory %s: %s", dir, errno ? strerror(errno) : "not a directory");
        return -1;
    }
    if (size_of(target, &seen->target_exists, &seen->target_size) != 0) {
        snprintf(err, errlen, "%s: %s", target, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/" AOF_DIR, dir);
    if (count_entries(path, &seen->aof_dir_entries) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/" AOF_FILE, dir);
    if (size_of(path, &exists, &seen->aof_file_size) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Rename tmp over target and fsync the directory: 0, or -1 with err (target removed
 * when only the fsync failed; tmp left for the caller). */
static int rdb_into_place(const char *tmp, const char *target, char *err, size_t errlen)
{
    char dir[4096];
    if (rename(tmp, target) != 0) {
        snprintf(err, errlen, "rename %s to %s: %s", tmp, target, strerror(errno));
        return -1;
    }
    dir_of(target, dir, sizeof dir);
    if (fsync_dir(dir) != 0) {
        /* The file is in place and whole; only its name may not survive a crash. */
        snprintf(err, errlen, "%s: fsync: %s", dir, strerror(errno));
        unlink(target);
        return -1;
    }
    return 0;
}

/* Remove AOF_STAGING of dir and what it holds (an earlier restore killed midway). */
static void remove_staging(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" AOF_STAGING, dir);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    (void)rmdir(path);
}

/* --aof (restore.h, THE AOF FORM): tmp becomes AOF_BASE of a new AOF_DIR beside target,
 * with a manifest naming it, built in AOF_STAGING and renamed into place whole. 0, or
 * -1 with err (the staging directory removed; tmp may be gone). */
static int aof_into_place(const char *tmp, const char *target, char *err, size_t errlen)
{
    static const char manifest[] = "file " AOF_BASE " seq 1 type b\n";
    char dir[4096], stage[4200], path[4400], final[4200];
    const char *what = stage;
    int fd = -1;
    dir_of(target, dir, sizeof dir);
    snprintf(stage, sizeof stage, "%s/" AOF_STAGING, dir);
    snprintf(final, sizeof final, "%s/" AOF_DIR, dir);
    remove_staging(dir);
    if (mkdir(stage, 0755) != 0)
        goto fail;
    snprintf(path, sizeof path, "%s/" AOF_BASE, stage);
    what = path;
    if (rename(tmp, path) != 0)
        goto fail;
    snprintf(path, sizeof path, "%s/" AOF_MANIFEST, stage);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, manifest, sizeof manifest - 1) != (ssize_t)(sizeof manifest - 1) || fsync(fd) != 0)
        goto fail;
    close(fd);
    fd = -1;
    what = final;
    /* over an absent or empty appendonlydir (the skip rule let nothing else through) */
    if (fsync_dir(stage) != 0 || rename(stage, final) != 0 || fsync_dir(dir) != 0)
        goto fail;
    return 0;
fail:
    snprintf(err, errlen, "%s: %s", what, strerror(errno ? errno : EIO));
    if (fd >= 0)
        close(fd);
    remove_staging(dir);
    return -1;
}

/* Download into a temporary file beside a->to, verify, fsync, rename. 0 with *obj; -1
 * with err (the temporary file removed, the target untouched). */
static int download_into_place(const backup_args_t *a, s3_t *s, s3_object_t *obj, char *err, size_t errlen)
{
    char tmp[4200], line[1024];
    s3_error_t e;
    int rc = -1, fd = -1;
    snprintf(tmp, sizeof tmp, "%s.restore.XXXXXX", a->to);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    if (s3_get_fd(s, a->bucket, a->key, fd, a->expect_sha256, obj, &e) != 0) {
        snprintf(err, errlen, "%s", s3_error_str(&e, line, sizeof line));
        goto out;
    }
    if (fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    if (close(fd) != 0) {
        fd = -1;
        snprintf(err, errlen, "%s: close: %s", tmp, strerror(errno));
        goto out;
    }
    fd = -1;
    if (a->aof ? aof_into_place(tmp, a->to, err, errlen) : rdb_into_place(tmp, a->to, err, errlen))
        goto out;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        unlink(tmp);
    return rc;
}

static void print_result(FILE *out, const backup_args_t *a, const char *result, const char *why,
                         const s3_object_t *obj)
{
    int oom = 0;
    json_object *o = jsonx_new_obj(&oom);
    jsonx_put(o, "result", jsonx_new_str(result, &oom), &oom);
    jsonx_put(o, "bucket", jsonx_new_str(a->bucket, &oom), &oom);
    jsonx_put(o, "key", jsonx_new_str(a->key, &oom), &oom);
    jsonx_put(o, "to", jsonx_new_str(a->to, &oom), &oom);
    if (obj) {
        jsonx_put(o, "size", jsonx_new_int((int64_t)obj->size, &oom), &oom);
        jsonx_put(o, "sha256", jsonx_new_str(obj->sha256[0] ? obj->sha256 : a->expect_sha256, &oom), &oom);
    }
    if (why && *why)
        jsonx_put(o, "reason", jsonx_new_str(why, &oom), &oom);
    backup_print_json(out, o, oom);
}

/* Remove the temporary files an earlier restore into target left when it was killed
 * (<target's name>.restore.XXXXXX): they are never data Redis loads. Best effort. */
static void remove_stale_temps(const char *target)
{
    char dir[4096], copy[4096], prefix[512];
    dir_of(target, dir, sizeof dir);
    snprintf(copy, sizeof copy, "%s", target);
    int n = snprintf(prefix, sizeof prefix, "%s.restore.", basename(copy));
    DIR *d = opendir(dir);
    if (!d || n < 0 || (size_t)n >= sizeof prefix) {
        if (d)
            closedir(d);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, (size_t)n) == 0 && strlen(e->d_name) == (size_t)n + 6)
            (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

/* --only-pod: 0 (restore here), 1 (skipped: the line printed) or -1 with err. */
static int prepare_pod(const backup_args_t *a, FILE *out, char *err, size_t errlen)
{
    char host[256], why[640];
    if (!a->only_pod)
        return 0;
    if (gethostname(host, sizeof host) != 0) {
        snprintf(err, errlen, "--only-pod: gethostname: %s", strerror(errno));
        return -1;
    }
    host[sizeof host - 1] = '\0';
    if (restore_decide_pod(host, a->only_pod, why, sizeof why) == RESTORE_DO)
        return 0;
    print_result(out, a, "skipped", why, NULL);
    return 1;
}

int restore_prepare(const backup_args_t *a, FILE *out, char *err, size_t errlen)
{
    restore_seen_t seen;
    char why[256];
    int pod = prepare_pod(a, out, err, errlen);
    if (pod != 0)
        return pod;
    if (restore_survey(a->to, &seen, err, errlen) != 0)
        return -1;
    if (restore_decide(&seen, a->force, why, sizeof why) == RESTORE_DO) {
        remove_stale_temps(a->to);
        if (why[0])
            fprintf(stderr, "rdc-backup restore: %s\n", why);
        return 0;
    }
    print_result(out, a, "skipped", why, NULL);
    return 1;
}

int restore_download(const backup_args_t *a, s3_t *s, FILE *out, char *err, size_t errlen)
{
    s3_object_t obj;
    memset(&obj, 0, sizeof obj);
    if (download_into_place(a, s, &obj, err, errlen) != 0)
        return -1;
    print_result(out, a, "restored", NULL, &obj);
    return 0;
}
