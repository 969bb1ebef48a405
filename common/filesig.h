/* filesig: a file's identity and modification stamp, to notice that it changed.
 *
 * A serving certificate is usually a mounted Secret that cert-manager rotates: the kubelet
 * swaps the files atomically through a symlink, so a file is known by its device, inode,
 * size and modification time as stat (which follows symlinks) reports them. Used by
 * webhookd's and metricsd's certificate reloads. */
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

#endif
