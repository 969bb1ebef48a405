/* supervisor: the pod's entrypoint. Starts electord, informerd and a pool of workerd
 * (and the webhook server when enabled), restarts them with backoff, serves /healthz,
 * /readyz and /metrics, and drains everything in order on SIGTERM.
 *
 *   supervisor [flags]                 run
 *   supervisor ctl status              print the process table of a running supervisor
 *   supervisor ctl workers N           resize its worker pool
 *   supervisor ctl shutdown            ask it to drain and exit
 *   supervisor ctl migrate-storage     rewrite every RedisCluster in the CRD's storage
 *                                      version (v1) and drop v1alpha1 from storedVersions
 *                                      (migrate.h; talks to the API, not to a supervisor)
 */
#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "kube_client.h"
#include "kube_config.h"
#include "log.h"
#include "migrate.h"
#include "opts.h"
#include "ratelimit_shared.h"
#include "rundir.h"
#include "supervisor.h"

#include <curl/curl.h>
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
    "/readyz and /metrics, and drains in order on SIGTERM. The shared flags are passed\n"
    "through to every child, --webhook-port, --webhook-bind-address and --webhook-cert-dir\n"
    "to the webhook server only.\n\n"
    "One supervisor per runtime directory: without --runtime-dir, when another supervisor\n"
    "holds the default one, the first free of <default>-2 ... <default>-16 is used (logged\n"
    "at start; pass it to `supervisor ctl --runtime-dir`).\n\n"
    "  supervisor ctl [--runtime-dir DIR] status | workers N | shutdown\n\n"
    "  supervisor ctl migrate-storage [--kubeconfig F] [--state-file F] [--page-size N]\n"
    "                                 [--qps Q] [--dry-run]\n"
    "      the storage migration of the upgrade to cache.example.com/v1\n"
    "      (docs/api-versions.md): every RedisCluster rewritten as v1, then the CRD's\n"
    "      status.storedVersions set to [v1]; prints one line, exits 1 on failure.";

/* The flags of `ctl migrate-storage` (never passed to the children). */
typedef struct {
    const char *state_file;
    int page_size;
    double qps;
    int dry_run;
} migrate_flags_t;

/* `supervisor ctl migrate-storage`: migrate_storage() with the shared connection flags.
 * Prints the report line on stdout (and the error on stderr). Returns the exit code:
 * 0 when every object is stored as v1 and storedVersions is [v1], else 1. */
static int run_migrate_storage(const rdc_common_opts_t *c, const migrate_flags_t *f)
{
    int code = 1;
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    buf_t line;
    buf_init(&line, 0);
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        fprintf(stderr, "supervisor: migrate-storage: cannot initialise libcurl\n");
        return 1;
    }
    kube_client_opts_t co = daemon_client_opts("supervisor-migrate-storage/" RDC_VERSION);
    co.max_retries = 3;
    if (daemon_kube_connect(c, &co, &cfg, &client))
        goto out;
    migrate_opts_t mo = {
        .page_size = f->page_size,
        .qps = f->qps,
        .state_file = f->state_file,
        .dry_run = f->dry_run,
    };
    migrate_report_t report;
    kube_error_t kerr;
    kube_error_clear(&kerr);
    int rc = migrate_storage(client, &mo, &report, &kerr);
    if (migrate_report_format(&report, &mo, &line) == 0)
        printf("%s%s\n", buf_str(&line), f->dry_run ? " (dry run)" : "");
    fflush(stdout);
    if (rc) {
        char err[1024];
        fprintf(stderr, "supervisor: migrate-storage failed: %s\n", kube_error_str(&kerr, err, sizeof(err)));
        if (report.last_error[0])
            fprintf(stderr, "supervisor: migrate-storage: last object error: %s\n", report.last_error);
        goto out;
    }
    code = 0;
out:
    buf_free(&line);
    kube_client_destroy(&client);
    kube_config_destroy(&cfg);
    curl_global_cleanup();
    return code;
}

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

/* Is a the flag --name or --name=value? */
static int is_flag(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

/* Split our argv: the shared flags go to every child, --webhook-* flags (with their
 * values) to the webhook server only, and --bindir/--webhook/--redis-observer stay here. */
static void split_flags(int argc, char **argv, char **common, int *ncommon, int max_common,
                        char **webhook, int *nwebhook, char **metrics, int *nmetrics, int max)
{
    static const char *const valued_metrics[] = {"--metrics-cert-path", "--metrics-cert-name",
                                                 "--metrics-cert-key"};
    static const char *const valued_webhook[] = {"--webhook-cert-dir", "--webhook-port",
                                                 "--webhook-bind-address"};
    static const char *const valued_ctl[] = {"--state-file", "--page-size", "--qps"};
    *ncommon = *nwebhook = *nmetrics = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_flag(a, "--bindir")) {
            if (!strchr(a, '='))
                i++; /* skip its value */
            continue;
        }
        if (is_flag(a, "--webhook") || is_flag(a, "--redis-observer") || is_flag(a, "--dry-run") ||
            is_flag(a, "--metrics-secure"))
            continue;
        int mt = 0;
        for (size_t k = 0; k < 3; k++)
            mt |= is_flag(a, valued_metrics[k]);
        if (mt) { /* metricsd's own */
            if (*nmetrics < max)
                metrics[(*nmetrics)++] = argv[i];
            if (!strchr(a, '=') && i + 1 < argc && *nmetrics < max)
                metrics[(*nmetrics)++] = argv[++i];
            continue;
        }
        int ctl = 0;
        for (size_t k = 0; k < 3; k++)
            ctl |= is_flag(a, valued_ctl[k]);
        if (ctl) { /* ctl migrate-storage's own: the children do not know them */
            if (!strchr(a, '='))
                i++;
            continue;
        }
        int wh = 0;
        for (size_t k = 0; k < 3; k++)
            wh |= is_flag(a, valued_webhook[k]);
        if (wh) {
            if (*nwebhook < max)
                webhook[(*nwebhook)++] = argv[i];
            if (!strchr(a, '=') && i + 1 < argc && *nwebhook < max)
                webhook[(*nwebhook)++] = argv[++i];
            continue;
        }
        if (*ncommon < max_common)
            common[(*ncommon)++] = argv[i];
    }
}

/* The supervisor's own flags, as read. */
typedef struct {
    const char *bindir, *wh_dir, *wh_addr, *m_cert_path, *m_cert_name, *m_cert_key;
    int webhook, wh_port, observer, metrics_secure;
    migrate_flags_t mf;
} own_opts_t;

/* `supervisor ctl ...`: the exit code. */
static int run_ctl(const rdc_common_opts_t *c, const own_opts_t *o, const char **pos, size_t npos)
{
    char err[1536], rtdir[4096];
    if (npos >= 2 && !strcmp(pos[0], "ctl") && !strcmp(pos[1], "migrate-storage")) {
        if (npos > 2 || o->mf.page_size < 1 || o->mf.page_size > 500 || o->mf.qps == 0) {
            fprintf(stderr, "supervisor: ctl migrate-storage takes no arguments, --page-size 1..500 and a --qps "
                            "other than 0\n");
            return 2;
        }
        return run_migrate_storage(c, &o->mf);
    }
    if (daemon_runtime_dir(c->runtime_dir, rtdir, sizeof(rtdir), err, sizeof(err))) {
        fprintf(stderr, "supervisor: %s\n", err);
        return 1;
    }
    if (strcmp(pos[0], "ctl") != 0) {
        fprintf(stderr, "supervisor: unknown command \"%s\" (see --help)\n", pos[0]);
        return 2;
    }
    return supervisor_ctl(rtdir, (int)npos - 1, pos + 1);
}

/* One supervisor per runtime directory (s6's lock file); without --runtime-dir a free one
 * is picked rather than failing because another operator of ours runs. The lock's fd, or
 * -1 after logging. */
static int lock_runtime_dir(const rdc_common_opts_t *c, char *rtdir, size_t len)
{
    char err[1536];
    int fallback = 0;
    int lockfd = rundir_acquire(c->runtime_dir, rtdir, len, &fallback, err, sizeof(err));
    if (lockfd < 0) {
        rlog_error("cannot use a runtime directory", "error", err);
        return -1;
    }
    if (fallback) {
        char def[4096], holder[32];
        opts_default_runtime_dir(def, sizeof(def));
        snprintf(holder, sizeof(holder), "%ld", rundir_holder(def));
        rlog_warn("another supervisor holds the default runtime directory: using a free one "
                  "(pass --runtime-dir to `supervisor ctl` to reach this one)",
                  "default", def, "holder_pid", holder, "runtime_dir", rtdir);
    }
    return lockfd;
}

/* With a QPS limit: create the operator's shared buckets in rtdir, one for its requests
 * and one for its workers' Events (a controller-runtime manager's recorder has a client,
 * and a limiter, of its own), and name them to the children in the environment; without
 * one, make sure none is named. 0, or -1 after logging. */
static int share_budget(const rdc_common_opts_t *c, const char *rtdir, ratelimit_shared_t *bucket[2])
{
    static const char *const env[2] = {RATELIMIT_SHARED_ENV, RATELIMIT_SHARED_EVENTS_ENV};
    static const char *const file[2] = {RATELIMIT_SHARED_FILE, RATELIMIT_SHARED_EVENTS_FILE};
    for (int i = 0; i < 2; i++) {
        if (c->kube_api_qps <= 0) {
            unsetenv(env[i]);
            continue;
        }
        char path[4200], err[512];
        snprintf(path, sizeof(path), "%s/%s", rtdir, file[i]);
        if (ratelimit_shared_create(path, c->kube_api_qps, c->kube_api_burst, clock_mono_ns(), &bucket[i], err,
                                    sizeof(err))) {
            rlog_error("cannot create the operator's QPS bucket", "error", err);
            return -1;
        }
        setenv(env[i], path, 1);
    }
    return 0;
}

/* Run the daemons until a signal; the exit code. */
static int supervise(const rdc_common_opts_t *c, const own_opts_t *o, int argc, char **argv)
{
    char err[1536], rtdir[4096], bindir_buf[4096];
    int lockfd = lock_runtime_dir(c, rtdir, sizeof(rtdir));
    if (lockfd < 0)
        return 1;
    int sfd = daemon_signalfd(err, sizeof(err));
    if (sfd < 0) {
        rlog_error("cannot set up signals", "error", err);
        close(lockfd);
        return 1;
    }
    const char *bindir = o->bindir;
    if (!bindir) {
        default_bindir(bindir_buf, sizeof(bindir_buf));
        bindir = bindir_buf;
    }
    char *cargv[128], *wargv[16], *margv[16];
    int cargc = 0, wargc = 0, margc = 0;
    split_flags(argc, argv, cargv, &cargc, 128, wargv, &wargc, margv, &margc, 16);
    supervisor_config_t cfg = {
        .bindir = bindir,
        .runtime_dir = rtdir,
        .workers = c->workers,
        .webhook = o->webhook,
        .observer = o->observer,
        .grace_s = c->graceful_shutdown_timeout,
        .metrics_addr = c->metrics_bind_address,
        .health_addr = c->health_probe_bind_address,
        .child_argc = cargc,
        .child_argv = cargv,
        .webhook_argc = wargc,
        .webhook_argv = wargv,
        .metrics_secure = o->metrics_secure,
        .metrics_argc = margc,
        .metrics_argv = margv,
    };
    /* --kube-api-qps/--kube-api-burst are the whole operator's budget: one bucket in
     * the runtime directory, named to every child, and one of the same size for the
     * workers' Events (ratelimit_shared.h). */
    ratelimit_shared_t *bucket[2] = {NULL, NULL};
    supervisor_t *s = NULL;
    int rc = 1;
    if (share_budget(c, rtdir, bucket))
        goto out;
    if (supervisor_new(&cfg, &s, err, sizeof(err))) {
        rlog_error("cannot start", "error", err);
        goto out;
    }
    char nworkers[16];
    snprintf(nworkers, sizeof(nworkers), "%d", c->workers);
    rlog_info("supervisor started", "version", RDC_VERSION, "runtime_dir", rtdir, "bindir",
              bindir, "workers", nworkers);
    rc = supervisor_run(s, sfd);
    supervisor_destroy(&s);
out:
    ratelimit_shared_destroy(&bucket[0]);
    ratelimit_shared_destroy(&bucket[1]);
    close(sfd);
    close(lockfd); /* the file stays: see rundir.h */
    return rc;
}

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    own_opts_t o = {.wh_port = 9443, .observer = 1, .mf = {.page_size = 100, .qps = 10}};
    const opt_t own[] = {
        {"bindir", OPT_STRING, &o.bindir, "directory of the daemon executables (default: beside supervisor)"},
        {"webhook", OPT_BOOL, &o.webhook, "also run the admission webhook server"},
        {"webhook-cert-dir", OPT_STRING, &o.wh_dir,
         "webhook server: directory of tls.crt and tls.key "
         "(default: webhookd's, /tmp/k8s-webhook-server/serving-certs)"},
        {"webhook-port", OPT_INT, &o.wh_port, "webhook server: HTTPS port"},
        {"webhook-bind-address", OPT_STRING, &o.wh_addr, "webhook server: address to listen on (default all)"},
        {"state-file", OPT_STRING, &o.mf.state_file,
         "ctl migrate-storage: progress file to resume from (default none)"},
        {"page-size", OPT_INT, &o.mf.page_size, "ctl migrate-storage: objects per LIST page"},
        {"qps", OPT_DOUBLE, &o.mf.qps, "ctl migrate-storage: object writes per second (< 0: unlimited)"},
        {"dry-run", OPT_BOOL, &o.mf.dry_run,
         "ctl migrate-storage: send the writes with dryRun=All, leave the CRD alone"},
        {"metrics-secure", OPT_BOOL, &o.metrics_secure,
         "serve --metrics-bind-address over HTTPS, to scrapers the API server authenticates (TokenReview) "
         "and authorizes (SubjectAccessReview, get /metrics), through the child metricsd; default off as "
         "in controller-runtime (deploy/ turns it on, on :8443)"},
        {"metrics-cert-path", OPT_STRING, &o.m_cert_path,
         "with --metrics-secure: directory of the serving certificate (default: a self-signed one)"},
        {"metrics-cert-name", OPT_STRING, &o.m_cert_name, "with --metrics-secure: certificate file (tls.crt)"},
        {"metrics-cert-key", OPT_STRING, &o.m_cert_key, "with --metrics-secure: key file (tls.key)"},
        {"redis-observer", OPT_BOOL, &o.observer,
         "also run observerd, which probes every Redis pod (--redis-observer=false: not)"},
        {NULL, OPT_END, NULL, NULL},
    };
    opt_t table[OPTS_JOINED_LEN(own)];
    opts_common_join(&c, own, table);
    const char *pos[4];
    size_t npos = 0;
    int early = opts_main("supervisor", summary, table, &c, argc, argv, pos, 4, &npos);
    if (early >= 0)
        return early;
    if (npos > 0)
        return run_ctl(&c, &o, pos, npos);
    if (c.workers < 0 || c.workers > 64) {
        fprintf(stderr, "supervisor: --workers must be from 0 to 64\n");
        return 2;
    }
    return supervise(&c, &o, argc, argv);
}
