#include "daemon.h"

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "proto.h"
#include "ratelimit_shared.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

int daemon_signalfd(char *err, size_t errlen)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL)) {
        snprintf(err, errlen, "sigprocmask: %s", strerror(errno));
        return -1;
    }
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        snprintf(err, errlen, "signalfd: %s", strerror(errno));
    return fd;
}

int daemon_read_signal(int fd)
{
    struct signalfd_siginfo si;
    ssize_t n = read(fd, &si, sizeof(si));
    if (n != (ssize_t)sizeof(si))
        return 0;
    return (int)si.ssi_signo;
}

int daemon_stop_requested(int fd)
{
    int sig, stops = 0;
    while ((sig = daemon_read_signal(fd)) != 0)
        stops += sig == SIGTERM || sig == SIGINT;
    return stops;
}

void daemon_reset_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigprocmask(SIG_SETMASK, &set, NULL);
    signal(SIGPIPE, SIG_DFL);
}

void daemon_notify_ready(void)
{
    const char *s = getenv("RDC_NOTIFY_FD");
    if (!s || !*s)
        return;
    char *end = NULL;
    long fd = strtol(s, &end, 10);
    if (*end || fd < 3 || fd > 1024)
        return;
    ssize_t n = write((int)fd, "READY\n", 6);
    (void)n;
    close((int)fd);
    unsetenv("RDC_NOTIFY_FD");
}

int daemon_runtime_dir_check(const char *path, const struct stat *st, uid_t uid, char *err,
                             size_t errlen)
{
    if (S_ISLNK(st->st_mode)) {
        snprintf(err, errlen, "runtime directory %s is a symbolic link: refusing to follow it "
                 "(remove it, or pass --runtime-dir with a directory of yours)", path);
        return -1;
    }
    if (!S_ISDIR(st->st_mode)) {
        snprintf(err, errlen, "runtime directory %s is not a directory", path);
        return -1;
    }
    if (st->st_uid != uid) {
        snprintf(err, errlen, "runtime directory %s is owned by uid %u, not by us (uid %u): "
                 "pass --runtime-dir with a directory of yours", path, (unsigned)st->st_uid,
                 (unsigned)uid);
        return -1;
    }
    if ((st->st_mode & 0777) != 0700) {
        snprintf(err, errlen, "runtime directory %s has mode %04o, not 0700: other users could "
                 "reach its sockets (chmod 700 %s)", path, (unsigned)(st->st_mode & 0777), path);
        return -1;
    }
    return 0;
}

/* Create path with mode 0700 when missing, then open it without following a final
 * symbolic link and check what was opened. Returns 0 or -1 with err set. */
static int runtime_dir_ensure(const char *path, char *err, size_t errlen)
{
    int created = mkdir(path, 0700) == 0;
    if (!created && errno != EEXIST) {
        snprintf(err, errlen, "runtime directory %s: cannot create it: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int saved = errno;
        if (lstat(path, &st) == 0 && daemon_runtime_dir_check(path, &st, getuid(), err, errlen))
            return -1;
        snprintf(err, errlen, "runtime directory %s: %s", path, strerror(saved));
        return -1;
    }
    int rc = -1;
    if (fstat(fd, &st)) {
        snprintf(err, errlen, "runtime directory %s: %s", path, strerror(errno));
        goto out;
    }
    /* Ours since a moment ago: the umask may have taken bits mkdir asked for. */
    if (created && st.st_uid == getuid() && (st.st_mode & 0777) != 0700) {
        if (fchmod(fd, 0700 | (st.st_mode & S_ISGID)) || fstat(fd, &st)) {
            snprintf(err, errlen, "runtime directory %s: chmod 700: %s", path, strerror(errno));
            goto out;
        }
    }
    rc = daemon_runtime_dir_check(path, &st, getuid(), err, errlen);
out:
    close(fd);
    return rc;
}

int daemon_runtime_dir(const char *explicit_dir, char *out, size_t outlen, char *err,
                       size_t errlen)
{
    int n;
    if (explicit_dir && *explicit_dir)
        n = snprintf(out, outlen, "%s", explicit_dir);
    else
        n = (int)strlen(opts_default_runtime_dir(out, outlen));
    if (n < 0 || (size_t)n >= outlen || (size_t)n > 4000) {
        snprintf(err, errlen, "runtime directory %.64s...: path too long", out);
        return -1;
    }
    if (runtime_dir_ensure(out, err, errlen))
        return -1;
    char sub[4200];
    snprintf(sub, sizeof(sub), "%s/metrics", out);
    return runtime_dir_ensure(sub, err, errlen);
}

char *daemon_endpoint(const char *dir, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "ipc://%s/%s", dir, name);
    return out;
}

int daemon_write_file_atomic(const char *path, const char *data, size_t len)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new", path) >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int saved = errno;
            close(fd);
            unlink(tmp);
            errno = saved;
            return -1;
        }
        off += (size_t)n;
    }
    if (close(fd) || rename(tmp, path)) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}

int daemon_publish_metrics(const char *dir, const char *name)
{
    buf_t b;
    buf_init(&b, 32 << 20);
    metrics_expose(metrics_default(), &b);
    char path[4096];
    snprintf(path, sizeof(path), "%s/metrics/%s.prom", dir, name);
    int rc = daemon_write_file_atomic(path, buf_str(&b), b.len);
    buf_free(&b);
    return rc;
}

static int on_publish_metrics(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    const daemon_metrics_t *m = arg;
    daemon_publish_metrics(m->dir, m->name);
    return 0;
}

int daemon_add_metrics_timer(loop_t *loop, daemon_metrics_t *m)
{
    return loop_add_timer(loop, 0, PROTO_METRICS_EVERY_MS * NS_PER_MS, on_publish_metrics, m);
}

kube_client_opts_t daemon_client_opts(const char *user_agent)
{
    kube_client_opts_t co;
    kube_client_opts_init(&co);
    co.user_agent = user_agent;
    return co;
}

int daemon_kube_connect(const rdc_common_opts_t *c, kube_client_opts_t *co,
                        kube_config_t **cfg, kube_client_t **client)
{
    char err[1024];
    *client = NULL;
    kube_config_opts_t ko = {.kubeconfig_path = c->kubeconfig, .context = c->context};
    if (kube_config_load(&ko, cfg, err, sizeof(err))) {
        rlog_error("cannot load the Kubernetes configuration", "error", err);
        return -1;
    }
    co->qps = c->kube_api_qps;
    co->burst = c->kube_api_burst;
    /* Under the supervisor the budget is the operator's: one bucket for all its children
     * (common/ratelimit_shared.h). Alone, a daemon keeps its own. */
    const char *bucket = getenv(RATELIMIT_SHARED_ENV);
    co->shared_bucket = (bucket && *bucket && c->kube_api_qps > 0) ? bucket : NULL;
    kube_error_t kerr;
    kube_error_clear(&kerr);
    *client = kube_client_new(*cfg, co, &kerr);
    if (!*client) {
        rlog_error("cannot create the API client", "error",
                   kube_error_str(&kerr, err, sizeof(err)));
        kube_config_destroy(cfg);
        return -1;
    }
    return 0;
}

int daemon_loop_setup(const char *explicit_dir, char *rtdir, size_t rtdirlen)
{
    char err[1024];
    if (daemon_runtime_dir(explicit_dir, rtdir, rtdirlen, err, sizeof(err))) {
        rlog_error("cannot use the runtime directory", "error", err);
        return -1;
    }
    int fd = daemon_signalfd(err, sizeof(err));
    if (fd < 0)
        rlog_error("cannot set up signals", "error", err);
    return fd;
}

void daemon_release(int sfd, kube_client_t **client, kube_config_t **cfg)
{
    if (sfd >= 0)
        close(sfd);
    kube_client_destroy(client);
    kube_config_destroy(cfg);
    metrics_default_free();
}

const char *daemon_child_name(const char *fallback)
{
    const char *name = getenv("RDC_CHILD_NAME");
    return name && *name ? name : fallback;
}

int daemon_trim_idle(daemon_trim_t *t, int busy, int64_t now_ns)
{
    if (busy) {
        t->idle_since_ns = 0;
        t->trimmed = 0;
        return 0;
    }
    if (!t->idle_since_ns) {
        t->idle_since_ns = now_ns > 0 ? now_ns : 1;
        return 0;
    }
    if (t->trimmed || now_ns - t->idle_since_ns < DAEMON_TRIM_IDLE_NS)
        return 0;
    t->trimmed = 1;
#ifdef __GLIBC__
    malloc_trim(0);
    return 1;
#else
    return 0;
#endif
}
