/* supervisor: the pod's entrypoint. Starts electord, informerd and a pool of workerd
 * (and the webhook server when enabled), restarts them with backoff, serves /healthz,
 * /readyz and /metrics, and drains everything in order on SIGTERM.
 *
 *   supervisor [flags]                 run
 *   supervisor ctl status              print the process table of a running supervisor
 *   supervisor ctl workers N           resize its worker pool
 *   supervisor ctl shutdown            ask it to drain and exit
 */
#include "daemon.h"
#include "log.h"
#include "opts.h"
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static const char summary[] =
    "The rdc-operator's entrypoint: runs electord, informerd, --workers workerd processes\n"
    "(and the webhook server with --webhook), restarts them with backoff, serves /healthz,\n"
    "/readyz and /metrics, and drains in order on SIGTERM. Every flag except --bindir and\n"
    "--webhook is passed through to the children.\n\n"
    "  supervisor ctl [--runtime-dir DIR] status | workers N | shutdown";

/* Directory of our own executable: the children live beside it by default. */
static void default_bindir(char *out, size_t len)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        snprintf(out, len, ".");
        return;
    }
    self[n] = '\0';
    snprintf(out, len, "%s", dirname(self));
}

/* Flags the children understand: everything except ours and the subcommand. */
static int child_flags(int argc, char **argv, char **out, int max)
{
    int n = 0;
    for (int i = 1; i < argc && n < max; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--bindir", 8) == 0 || strncmp(a, "--webhook", 9) == 0) {
            if (!strchr(a, '=') && strncmp(a, "--bindir", 8) == 0)
                i++; /* skip its value */
            continue;
        }
        out[n++] = argv[i];
    }
    return n;
}

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    const char *bindir = NULL;
    int webhook = 0;
    opt_t table[OPTS_COMMON_COUNT + 3];
    opts_common_fill(&c, table);
    table[OPTS_COMMON_COUNT] = (opt_t){"bindir", OPT_STRING, &bindir,
                                       "directory of the daemon executables (default: beside supervisor)"};
    table[OPTS_COMMON_COUNT + 1] = (opt_t){"webhook", OPT_BOOL, &webhook,
                                           "also run the admission webhook server"};
    table[OPTS_COMMON_COUNT + 2] = (opt_t){NULL, OPT_END, NULL, NULL};

    const char *pos[4];
    size_t npos = 0;
    char err[512];
    if (opts_parse(table, argc, argv, pos, 4, &npos, err, sizeof(err))) {
        fprintf(stderr, "supervisor: %s\n", err);
        return 2;
    }
    if (c.help) {
        opts_usage(stdout, "supervisor", summary, table);
        return 0;
    }
    if (c.version) {
        printf("supervisor %s\n", RDC_VERSION);
        return 0;
    }
    if (opts_apply_logging(&c, "supervisor", err, sizeof(err))) {
        fprintf(stderr, "supervisor: %s\n", err);
        return 2;
    }
    char rtdir[4096];
    if (daemon_runtime_dir(c.runtime_dir, rtdir, sizeof(rtdir), err, sizeof(err))) {
        fprintf(stderr, "supervisor: %s\n", err);
        return 1;
    }
    if (npos > 0) {
        if (strcmp(pos[0], "ctl") != 0) {
            fprintf(stderr, "supervisor: unknown command \"%s\" (see --help)\n", pos[0]);
            return 2;
        }
        return supervisor_ctl(rtdir, (int)npos - 1, pos + 1);
    }
    if (c.workers < 0 || c.workers > 64) {
        fprintf(stderr, "supervisor: --workers must be from 0 to 64\n");
        return 2;
    }

    /* One supervisor per runtime directory (s6's lock file). */
    char lockpath[4200];
    snprintf(lockpath, sizeof(lockpath), "%s/supervisor.lock", rtdir);
    int lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB)) {
        rlog_error("another supervisor runs on this runtime directory (use --runtime-dir)",
                   "dir", rtdir, NULL);
        return 1;
    }
    int sfd = daemon_signalfd(err, sizeof(err));
    if (sfd < 0) {
        rlog_error("cannot set up signals", "error", err, NULL);
        return 1;
    }
    char bindir_buf[4096];
    if (!bindir) {
        default_bindir(bindir_buf, sizeof(bindir_buf));
        bindir = bindir_buf;
    }
    char *cargv[128];
    supervisor_config_t cfg = {
        .bindir = bindir,
        .runtime_dir = rtdir,
        .workers = c.workers,
        .webhook = webhook,
        .grace_s = c.graceful_shutdown_timeout,
        .metrics_addr = c.metrics_bind_address,
        .health_addr = c.health_probe_bind_address,
        .child_argc = child_flags(argc, argv, cargv, 128),
        .child_argv = cargv,
    };
    supervisor_t *s = NULL;
    if (supervisor_new(&cfg, &s, err, sizeof(err))) {
        rlog_error("cannot start", "error", err, NULL);
        return 1;
    }
    char nworkers[16];
    snprintf(nworkers, sizeof(nworkers), "%d", c.workers);
    rlog_info("supervisor started", "version", RDC_VERSION, "runtime_dir", rtdir, "bindir",
              bindir, "workers", nworkers, NULL);
    int rc = supervisor_run(s, sfd);
    supervisor_destroy(&s);
    close(sfd);
    unlink(lockpath);
    close(lockfd);
    return rc;
}
