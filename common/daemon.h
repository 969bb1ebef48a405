/* daemon: what every long-lived process of the operator shares with its supervisor.
 *
 * - Signals arrive through a signalfd (the loop polls it); handlers never run.
 * - Readiness: a supervised child writes "READY\n" to the descriptor named by
 *   $RDC_NOTIFY_FD once it can serve (s6's notification-fd), then closes it.
 * - Runtime directory: the ipc:// endpoints, metrics and state files live there.
 * - Metrics and state files are written to "<path>.new" and renamed into place, so a
 *   reader never sees half a file.
 */
#ifndef RDC_DAEMON_H
#define RDC_DAEMON_H

#include "kube_client.h"
#include "loop.h"
#include "opts.h"

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Block SIGTERM, SIGINT, SIGHUP, SIGCHLD and SIGPIPE... (SIGPIPE is ignored) and return a
 * non-blocking, close-on-exec signalfd for the first four, or -1 with err set. */
int daemon_signalfd(char *err, size_t errlen);

/* Read one pending signal from fd; returns its number, or 0 when none is pending. */
int daemon_read_signal(int fd);

/* Read every pending signal from fd; how many of them were SIGTERM or SIGINT (0: none).
 * The signal handler of a daemon that stops on the first request (a second one may mean
 * "now"). */
int daemon_stop_requested(int fd);

/* Unblock every signal and restore default dispositions (in a child before exec). */
void daemon_reset_signals(void);

/* Tell the supervisor that this process is ready (no-op when not supervised). */
void daemon_notify_ready(void);

/* Resolve the runtime directory: explicit (from --runtime-dir) or the default
 * (opts_default_runtime_dir: $XDG_RUNTIME_DIR/rdc-operator, else /tmp/rdc-operator-<uid>),
 * creating it (and its metrics/ subdirectory) with mode 0700 when missing. An existing one
 * must be a real directory (not a symbolic link: it is opened with O_NOFOLLOW, so the check
 * and the use see the same inode), owned by our uid, with permission bits exactly 0700
 * (set-gid, which an fsGroup volume gives, is allowed). Returns 0, or -1 with err naming the
 * path, what is wrong and how to fix it; nothing is changed in an existing directory. */
int daemon_runtime_dir(const char *explicit_dir, char *out, size_t outlen, char *err,
                       size_t errlen);

/* The pure part of daemon_runtime_dir's check: is st (from lstat or fstat of path) a
 * runtime directory we may use as uid? Returns 0, or -1 with err naming path and the
 * problem (a symbolic link, not a directory, owned by another uid, mode not 0700). */
int daemon_runtime_dir_check(const char *path, const struct stat *st, uid_t uid, char *err,
                             size_t errlen);

/* What every daemon's loop needs: the runtime directory (daemon_runtime_dir of
 * explicit_dir) in rtdir, and the signalfd, returned. -1 after logging why. */
int daemon_loop_setup(const char *explicit_dir, char *rtdir, size_t rtdirlen);

/* "ipc://<dir>/<name>" into out; returns out. */
char *daemon_endpoint(const char *dir, const char *name, char *out, size_t outlen);

/* Write data atomically to path (via path.new and rename). Returns 0, or -1 (errno). */
int daemon_write_file_atomic(const char *path, const char *data, size_t len);

/* Write this process's metrics (the default registry) to <dir>/metrics/<name>.prom for
 * the supervisor to merge. Returns 0 or -1. */
int daemon_publish_metrics(const char *dir, const char *name);

/* Where daemon_add_metrics_timer publishes: dir (the runtime directory) and the name of
 * the file, <dir>/metrics/<name>.prom. */
typedef struct {
    const char *dir;
    const char *name;
} daemon_metrics_t;

/* A timer on loop that publishes this process's metrics (daemon_publish_metrics of m) on
 * the next turn and then every PROTO_METRICS_EVERY_MS. m (not copied) must outlive the
 * timer. Returns the timer id, or -1 when out of memory. */
int daemon_add_metrics_timer(loop_t *loop, daemon_metrics_t *m);

/* The client settings a daemon starts from: kube_client_opts_init's defaults with the
 * User-Agent user_agent ("workerd/" RDC_VERSION; a string that outlives the client's
 * creation). */
kube_client_opts_t daemon_client_opts(const char *user_agent);

/* Load the Kubernetes configuration named by the shared flags (--kubeconfig, --context,
 * else KUBECONFIG, in-cluster, ~/.kube/config) and make a client with the settings in co
 * (the QPS and burst flags are applied to it). Returns 0 with *cfg and *client owned by
 * the caller (destroy the client first), or -1 with the reason logged and both NULL. */
int daemon_kube_connect(const rdc_common_opts_t *c, kube_client_opts_t *co,
                        kube_config_t **cfg, kube_client_t **client);

/* The name this process has among its supervisor's children ($RDC_CHILD_NAME, set by the
 * supervisor: "workerd-2"), or fallback when it runs alone (unset or empty). */
const char *daemon_child_name(const char *fallback);

/* Give the heap's free pages back to the kernel once a daemon has been idle a while.
 * glibc keeps freed memory mapped, so a daemon stays at the peak of its last burst (a
 * worker's reconciles of 100 new clusters left it 4 MiB larger, idle); malloc_trim(0)
 * returns what is free, also from the middle of the heap and other threads' arenas.
 * Call daemon_trim_idle at a regular tick with busy = whether it holds work now: it trims
 * once per idle spell, when busy has stayed 0 for DAEMON_TRIM_IDLE_NS, and returns 1 when
 * it did. A zeroed daemon_trim_t is ready. Not glibc: never trims. */
#define DAEMON_TRIM_IDLE_NS (INT64_C(2) * 1000000000)
typedef struct {
    int64_t idle_since_ns; /* 0: busy, or not seen idle yet */
    int trimmed;           /* this idle spell's trim is done */
} daemon_trim_t;

int daemon_trim_idle(daemon_trim_t *t, int busy, int64_t now_ns);

/* The end of every daemon's main(): close the signalfd sfd (when >= 0), destroy *client
 * and then *cfg (either may be NULL; both are set to NULL) and free the default metrics
 * registry. */
void daemon_release(int sfd, kube_client_t **client, kube_config_t **cfg);

#endif
