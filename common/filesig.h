/* filesig: a file's identity and modification stamp, to notice that it changed.
 *
 * A serving certificate is usually a mounted Secret that cert-manager rotates: the kubelet
 * swaps the files atomically through a symlink, so a file is known by its device, inode,
 * size and modification time as stat (which follows symlinks) reports them. Used by
 * webhookd's and metricsd's certificate reloads, through filesig_watch_t. */
#ifndef RDC_FILESIG_H
#define RDC_FILESIG_H

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

typedef struct {
    int ok; /* 0: the file could not be stat'ed */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} filesig_t;

/* The stamp of path now; ok 0 when stat fails (a missing file has that stamp). */
filesig_t filesig_of(const char *path);

/* 1 when the two stamps are the same (two missing files included), else 0. */
int filesig_equal(const filesig_t *a, const filesig_t *b);

/* The stamps of a certificate and its key, taken together. */
typedef struct {
    filesig_t cert, key;
} filesig_pair_t;

/* The stamps of cert_path and key_path now. */
filesig_pair_t filesig_pair_of(const char *cert_path, const char *key_path);

/* 1 when both stamps are the same, else 0. */
int filesig_pair_equal(const filesig_pair_t *a, const filesig_pair_t *b);

/* A certificate and key pair watched for a change: the reload both TLS listeners do.
 *
 *     filesig_pair_t now;
 *     if (!filesig_watch_changed(&w, &now))
 *         return 0;                                  nothing changed
 *     ... read and check both files ...
 *     if (!filesig_watch_settle(&w, &now))
 *         drop what was read; return 0;               swapped while read: next time
 *     ... serve it, or report it bad: it is not tried again until the files change ...
 */
typedef struct {
    char *cert_path, *key_path; /* owned */
    filesig_pair_t sig;         /* of the files last tried (used or not) */
} filesig_watch_t;

/* Watch dir/cert_name and dir/key_name, stamped now. Returns 0, or -1 when out of memory
 * (w then holds nothing). Free with filesig_watch_free. */
int filesig_watch_init(filesig_watch_t *w, const char *dir, const char *cert_name, const char *key_name);

/* Free w's paths; w is then empty (an empty or zeroed w may be freed again). */
void filesig_watch_free(filesig_watch_t *w);

/* 1 when the files' stamps differ from the last tried, with the stamps in *now; else 0. */
int filesig_watch_changed(const filesig_watch_t *w, filesig_pair_t *now);

/* After reading the files stamped *now (filesig_watch_changed): 1 when they still have
 * those stamps, which are recorded as tried; 0 when they changed during the read (the pair
 * read may be mixed), recording nothing, so that the next check tries again. */
int filesig_watch_settle(filesig_watch_t *w, const filesig_pair_t *now);

#endif
