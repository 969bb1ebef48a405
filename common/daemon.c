#include "daemon.h"

#include "log.h"
#include "metrics.h"

#include <errno.h>
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

int daemon_runtime_dir(const char *explicit_dir, char *out, size_t outlen, char *err,
                       size_t errlen)
{
    if (explicit_dir && *explicit_dir) {
        snprintf(out, outlen, "%s", explicit_dir);
    } else {
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        if (xdg && *xdg)
            snprintf(out, outlen, "%s/rdc-operator", xdg);
        else
            snprintf(out, outlen, "/tmp/rdc-operator-%u", (unsigned)getuid());
    }
    if (mkdir(out, 0700) && errno != EEXIST) {
        snprintf(err, errlen, "runtime directory %s: %s", out, strerror(errno));
        return -1;
    }
    struct stat st;
    if (stat(out, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        snprintf(err, errlen, "runtime directory %s: not a directory owned by uid %u", out,
                 (unsigned)getuid());
        return -1;
    }
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/metrics", out);
    if (mkdir(sub, 0700) && errno != EEXIST) {
        snprintf(err, errlen, "runtime directory %s: %s", sub, strerror(errno));
        return -1;
    }
    return 0;
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
