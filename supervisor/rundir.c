#include "rundir.h"

#include "daemon.h"
#include "opts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int rundir_candidate(const char *base, int i, char *out, size_t outlen)
{
    int n = i == 0 ? snprintf(out, outlen, "%s", base) : snprintf(out, outlen, "%s-%d", base, i + 1);
    if (n < 0 || (size_t)n >= outlen) {
        if (outlen)
            out[0] = '\0';
        return -1;
    }
    return 0;
}

long rundir_holder(const char *dir)
{
    char path[4200], text[32];
    snprintf(path, sizeof(path), "%s/" RUNDIR_LOCK_NAME, dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    char *end = NULL;
    long pid = strtol(text, &end, 10);
    return pid > 0 && (*end == '\n' || *end == '\0') ? pid : 0;
}

/* Lock dir's lock file. Returns the descriptor, -2 when another process holds the lock,
 * or -1 with err set. */
static int lock_dir(const char *dir, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/" RUNDIR_LOCK_NAME, dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "lock file %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        int saved = errno;
        close(fd);
        if (saved == EWOULDBLOCK)
            return -2;
        snprintf(err, errlen, "lock file %s: %s", path, strerror(saved));
        return -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n) {
        snprintf(err, errlen, "lock file %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int rundir_acquire(const char *explicit_dir, char *out, size_t outlen, int *fallback,
                   char *err, size_t errlen)
{
    *fallback = 0;
    if (explicit_dir && *explicit_dir) {
        if (daemon_runtime_dir(explicit_dir, out, outlen, err, errlen))
            return -1;
        int fd = lock_dir(out, err, errlen);
        if (fd == -2)
            snprintf(err, errlen, "another supervisor (pid %ld) runs on the runtime directory "
                     "%s: stop it, or pass another --runtime-dir (or none: a free one is then "
                     "picked)", rundir_holder(out), out);
        return fd < 0 ? -1 : fd;
    }
    char base[4096], dir[4200], held[1024] = "";
    size_t hlen = 0;
    opts_default_runtime_dir(base, sizeof(base));
    for (int i = 0; i < RUNDIR_CANDIDATES; i++) {
        if (rundir_candidate(base, i, dir, sizeof(dir)) ||
            daemon_runtime_dir(dir, out, outlen, err, errlen))
            return -1;
        int fd = lock_dir(out, err, errlen);
        if (fd >= 0) {
            *fallback = i > 0;
            return fd;
        }
        if (fd == -1)
            return -1;
        int n = snprintf(held + hlen, sizeof(held) - hlen, "%s%s (pid %ld)", hlen ? ", " : "",
                         out, rundir_holder(out));
        if (n > 0 && (size_t)n < sizeof(held) - hlen)
            hlen += (size_t)n;
    }
    snprintf(err, errlen, "every default runtime directory has a supervisor: %s; stop one, or "
             "pass --runtime-dir with a directory of yours", held);
    return -1;
}
