#include "ratelimit_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUCKET_MAGIC 0x7264636b71707331ULL /* "rdckqps1" */

/* The file's layout: written once by the creator, then only empty_ns changes. */
typedef struct {
    uint64_t magic;
    double qps;
    int64_t interval_ns; /* 1/qps */
    int64_t burst;
    _Atomic int64_t empty_ns;
} bucket_file_t;

struct ratelimit_shared {
    bucket_file_t *f;
};

static int map_fd(int fd, const char *path, ratelimit_shared_t **out, char *err,
                  size_t errlen)
{
    ratelimit_shared_t *rl = calloc(1, sizeof(*rl));
    if (!rl) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    void *p = mmap(NULL, sizeof(bucket_file_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        free(rl);
        return -1;
    }
    rl->f = p;
    *out = rl;
    return 0;
}

int ratelimit_shared_create(const char *path, double qps, int burst, int64_t now_ns,
                            ratelimit_shared_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!(qps > 0)) {
        snprintf(err, errlen, "%s: a shared bucket needs qps > 0", path);
        return -1;
    }
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new", path) >= sizeof(tmp)) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    int rc = -1;
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: open: %s", tmp, strerror(errno));
        return -1;
    }
    bucket_file_t init;
    memset(&init, 0, sizeof(init));
    init.magic = BUCKET_MAGIC;
    init.qps = qps;
    double iv = ceil(1e9 / qps);
    init.interval_ns = iv < 1 ? 1 : (iv > 9e18 ? INT64_MAX / 4 : (int64_t)iv);
    init.burst = burst < 1 ? 1 : burst;
    /* Full at now: empty burst intervals ago. */
    atomic_init(&init.empty_ns, now_ns - init.burst * init.interval_ns);
    if (write(fd, &init, sizeof(init)) != (ssize_t)sizeof(init)) {
        snprintf(err, errlen, "%s: write: %s", tmp, strerror(errno));
        goto out;
    }
    if (map_fd(fd, tmp, out, err, errlen))
        goto out;
    if (rename(tmp, path)) {
        snprintf(err, errlen, "rename %s to %s: %s", tmp, path, strerror(errno));
        ratelimit_shared_destroy(out);
        goto out;
    }
    rc = 0;
out:
    close(fd);
    if (rc)
        unlink(tmp);
    return rc;
}

int ratelimit_shared_open(const char *path, ratelimit_shared_t **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: open: %s", path, strerror(errno));
        return -1;
    }
    int rc = -1;
    struct stat st;
    if (fstat(fd, &st) || st.st_size != (off_t)sizeof(bucket_file_t)) {
        snprintf(err, errlen, "%s: not a QPS bucket (size %lld, want %zu)", path,
                 (long long)st.st_size, sizeof(bucket_file_t));
        goto out;
    }
    if (map_fd(fd, path, out, err, errlen))
        goto out;
    if ((*out)->f->magic != BUCKET_MAGIC || !((*out)->f->qps > 0) ||
        (*out)->f->interval_ns < 1 || (*out)->f->burst < 1) {
        snprintf(err, errlen, "%s: not a QPS bucket of this version", path);
        ratelimit_shared_destroy(out);
        goto out;
    }
    rc = 0;
out:
    close(fd);
    return rc;
}

void ratelimit_shared_destroy(ratelimit_shared_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    munmap((*self_p)->f, sizeof(bucket_file_t));
    free(*self_p);
    *self_p = NULL;
}

int ratelimit_shared_try_reserve(ratelimit_shared_t *rl, int64_t now_ns,
                                 int64_t max_wait_ns, int64_t *wait_ns)
{
    bucket_file_t *f = rl->f;
    int64_t full = now_ns - f->burst * f->interval_ns; /* empty_ns of a full bucket */
    int64_t cur = atomic_load(&f->empty_ns);
    for (;;) {
        int64_t base = cur > full ? cur : full;
        int64_t next = base + f->interval_ns;
        int64_t wait = next > now_ns ? next - now_ns : 0;
        if (wait > max_wait_ns) {
            *wait_ns = 0;
            return -1;
        }
        /* On failure cur is reloaded with the value another process stored. */
        if (atomic_compare_exchange_weak(&f->empty_ns, &cur, next)) {
            *wait_ns = wait;
            return 0;
        }
    }
}

double ratelimit_shared_qps(const ratelimit_shared_t *rl)
{
    return rl->f->qps;
}

int ratelimit_shared_burst(const ratelimit_shared_t *rl)
{
    return (int)rl->f->burst;
}

double ratelimit_shared_tokens(const ratelimit_shared_t *rl, int64_t now_ns)
{
    int64_t e = atomic_load(&rl->f->empty_ns);
    double t = (double)(now_ns - e) / (double)rl->f->interval_ns;
    return t > (double)rl->f->burst ? (double)rl->f->burst : t;
}
