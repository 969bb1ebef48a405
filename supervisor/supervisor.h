/* supervisor: runs, restarts and isolates the operator's daemons.
 *
 * One event loop (zmq_poll over a signalfd, the children's readiness pipes, the control
 * socket and the HTTP endpoints) with deadlines for everything: respawn throttling,
 * shutdown grace, metrics collection. The supervisor parses no untrusted input: no API
 * objects, no webhook bodies and no scraper's token ever reach this process (with
 * --metrics-secure the child metricsd authenticates scrapers and reads the supervisor's
 * metrics from a loopback port).
 */
#ifndef RDC_SUPERVISOR_H
#define RDC_SUPERVISOR_H

#include "opts.h"

#include <stddef.h>

typedef struct supervisor supervisor_t;

typedef struct {
    const char *bindir;          /* where the daemon executables are */
    const char *runtime_dir;     /* resolved and created by the caller */
    int workers;                 /* initial size of the workerd pool */
    int webhook;                 /* 1: also run the webhook server */
    int observer;                /* 1: also run observerd, the Redis observer */
    double grace_s;              /* --graceful-shutdown-timeout */
    const char *metrics_addr;    /* --metrics-bind-address */
    const char *health_addr;     /* --health-probe-bind-address */
    int child_argc;              /* flags passed through to every child */
    char **child_argv;
    int webhook_argc;            /* flags for the webhook server only (--webhook-*) */
    char **webhook_argv;
    int metrics_secure;          /* --metrics-secure: metricsd serves metrics_addr over HTTPS
                                  * with TokenReview/SubjectAccessReview; the supervisor's
                                  * own metrics server then listens on 127.0.0.1:0 only */
    int metrics_argc;            /* flags for metricsd only (--metrics-cert-*) */
    char **metrics_argv;
} supervisor_config_t;

/* Create the supervisor: bind the control socket and the HTTP endpoints. Starts no
 * child yet. Returns 0, or -1 with err naming what failed (nothing is left open). */
int supervisor_new(const supervisor_config_t *cfg, supervisor_t **out, char *err,
                   size_t errlen);

/* Run until shutdown: start the children, supervise them, and on SIGTERM/SIGINT or a
 * SHUTDOWN command drain and stop them in order. Returns the process exit code: 0 after
 * an orderly shutdown, 1 after a forced one (second signal, grace exceeded). */
int supervisor_run(supervisor_t *s, int signal_fd);

/* Free everything; sets *self_p to NULL. Children must be gone (supervisor_run
 * returned). */
void supervisor_destroy(supervisor_t **self_p);

/* `supervisor ctl ...`: send one command to a running supervisor's control socket in
 * runtime_dir and print the answer. Returns the exit code. */
int supervisor_ctl(const char *runtime_dir, int argc, const char **argv);

#endif
