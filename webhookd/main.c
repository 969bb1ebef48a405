/* webhookd: the admission webhook server of the rdc-operator.
 *
 *   webhookd --webhook-cert-dir DIR [--webhook-port 9443] [--webhook-bind-address ADDR]
 *            [--webhook-max-connections 1024] [--webhook-request-timeout 10s]
 *            [--webhook-idle-timeout 10s]
 *
 * Serves the validating and mutating (defaulting) webhooks for RedisClusters over HTTPS
 * (admission.h has the rules, webhook_server.h the HTTP side). It runs in a process of its
 * own because it parses untrusted input; under the supervisor it is the child "webhook",
 * reports readiness once listening, publishes its metrics file every 2 s and exits 0 on
 * SIGTERM after it stopped accepting connections. SIGHUP rereads the certificate at once
 * (it is reread anyway within a second or two of a change).
 *
 * The one review that calls the API server: an update that grows spec.storage.size reads
 * its StorageClass (classcheck.h) through a client of the shared --kubeconfig / --context
 * flags (else KUBECONFIG, in-cluster, ~/.kube/config). The read runs on the same libevent
 * loop (a curl multi on it, evcurl.h) and never blocks it: that review's answer waits for
 * the read, with a 2 s deadline (CLASSCHECK_TIMEOUT_MS), while every other request and
 * connection is served (webhook_server.h, "the one deferred answer"). A configuration
 * that does not load, or a client that cannot be made, refuses such growth; no
 * configuration at all (a local run) turns the check off, said once at start. On SIGTERM
 * the drain also waits out the reads in flight, so that their reviews are answered.
 */
#include "classcheck.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "opts.h"
#include "webhook_server.h"
#include "webhook_tls.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define TICK_S 2           /* metrics file and certificate check */
#define DRAIN_GRACE_MS 500 /* after the listener closed, for replies still being written */
#define SPARE_FDS 64       /* descriptors besides the connections: listener, logs, signals */

static const char summary[] =
    "The webhook server of the rdc-operator: validates and defaults RedisClusters\n"
    "(AdmissionReview admission.k8s.io/v1) and converts them between cache.example.com/v1alpha1\n"
    "and cache.example.com/v1 (ConversionReview apiextensions.k8s.io/v1) over HTTPS at\n"
    "  /validate-cache-example-com-v1alpha1-rediscluster\n"
    "  /mutate-cache-example-com-v1alpha1-rediscluster\n"
    "  /convert\n"
    "with the certificate and key in --webhook-cert-dir (reloaded when they change).\n"
    "The shared flags are accepted so that the supervisor can pass its own through.";

typedef struct {
    struct event_base *base;
    webhook_server_t *server;
    const char *runtime_dir;
    const char *name;
    int draining;
} app_t;

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    app_t *a = arg;
    webhook_server_check_certs(a->server);
    daemon_publish_metrics(a->runtime_dir, a->name);
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    app_t *a = arg;
    int sig;
    while ((sig = daemon_read_signal(fd)) > 0) {
        if (sig == SIGHUP) {
            webhook_server_check_certs(a->server);
        } else if ((sig == SIGTERM || sig == SIGINT) && !a->draining) {
            a->draining = 1;
            rlog_info("shutting down: no new connections", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
            webhook_server_stop_accepting(a->server);
            /* reviews waiting for a StorageClass are answered by the read's deadline */
            int ms = DRAIN_GRACE_MS + (webhook_server_waiting(a->server) ? CLASSCHECK_TIMEOUT_MS : 0);
            struct timeval grace = {ms / 1000, (ms % 1000) * 1000};
            event_base_loopexit(a->base, &grace);
        }
    }
}

/* The connection cap must fit under the open-file limit, or accept() would fail with
 * EMFILE before the cap is reached. Raise the soft limit as far as needed and allowed
 * (Go's runtime raises it to the hard limit), and lower the cap when even the hard limit
 * is too small, saying so. Returns the cap to use. */
static int fit_open_files(int max_connections)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)max_connections + SPARE_FDS;
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return max_connections;
    if (rl.rlim_cur < want) {
        rlim_t old = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl))
            rl.rlim_cur = old;
    }
    if (rl.rlim_cur >= want)
        return max_connections;
    int fit = rl.rlim_cur > 2 * SPARE_FDS ? (int)(rl.rlim_cur - SPARE_FDS) : SPARE_FDS;
    char have[24], use[24];
    snprintf(have, sizeof(have), "%llu", (unsigned long long)rl.rlim_cur);
    snprintf(use, sizeof(use), "%d", fit);
    rlog_warn("--webhook-max-connections lowered to fit the open-file limit", "limit", have,
              "maxConnections", use);
    return fit;
}

/* 0 when the flags hold together (and wc's timeouts set from them), else 2 after saying
 * why on stderr. */
static int check_flags(webhook_server_config_t *wc, double request_timeout, double idle_timeout)
{
    if (wc->port < 0 || wc->port > 65535) {
        fprintf(stderr, "webhookd: --webhook-port must be from 0 to 65535, have %d\n", wc->port);
        return 2;
    }
    if (wc->max_connections < 1) {
        fprintf(stderr, "webhookd: --webhook-max-connections must be at least 1, have %d\n", wc->max_connections);
        return 2;
    }
    /* Whole milliseconds and whole seconds (evhttp's timeout), up to a day. */
    if (request_timeout < 0.001 || request_timeout > 86400 || idle_timeout < 1 || idle_timeout > 86400) {
        fprintf(stderr, "webhookd: --webhook-request-timeout must be from 1ms to 24h and --webhook-idle-timeout "
                        "from 1s to 24h, have %gs and %gs\n", request_timeout, idle_timeout);
        return 2;
    }
    wc->request_timeout_ms = (int)(request_timeout * 1000 + 0.5);
    wc->timeout_s = (int)(idle_timeout + 0.5);
    return 0;
}

static void log_listening(const app_t *a, const webhook_server_config_t *wc)
{
    char port[16], maxc[16], rto[16], ito[16];
    snprintf(port, sizeof(port), "%d", webhook_server_port(a->server));
    snprintf(maxc, sizeof(maxc), "%d", wc->max_connections);
    snprintf(rto, sizeof(rto), "%dms", wc->request_timeout_ms);
    snprintf(ito, sizeof(ito), "%ds", wc->timeout_s);
    rlog_info("webhook server listening", "version", RDC_VERSION, "address",
              *wc->bind_address ? wc->bind_address : "*", "port", port, "certDir", wc->cert_dir,
              "maxConnections", maxc, "requestTimeout", rto, "idleTimeout", ito);
}

/* The StorageClass reader of the validating webhook (classcheck.h) on base into *reader,
 * with the configuration and client it reads through. *reader stays NULL, the check off, only when
 * there is no Kubernetes configuration at all; a configuration that does not load or a
 * client that cannot be made gives a reader whose reads fail (growth refused). Returns -1
 * only when out of memory. */
static int connect_classes(const rdc_common_opts_t *c, struct event_base *base, kube_config_t **cfg,
                           kube_client_t **client, classcheck_reader_t **reader)
{
    char err[1024] = "", why[1100];
    kube_config_opts_t ko = {.kubeconfig_path = c->kubeconfig, .context = c->context};
    if (kube_config_load(&ko, cfg, err, sizeof(err))) {
        if (!strncmp(err, "no configuration:", 17)) {
            rlog_warn("no Kubernetes configuration: the StorageClass check of a growing spec.storage.size is "
                      "off, such updates are allowed (give --kubeconfig to turn it on)", "error", err);
            return 0;
        }
        snprintf(why, sizeof(why), "the Kubernetes configuration of webhookd did not load: %s", err);
    } else {
        kube_client_opts_t co = daemon_client_opts("webhookd/" RDC_VERSION);
        co.qps = c->kube_api_qps;
        co.burst = c->kube_api_burst;
        co.timeout_ms = CLASSCHECK_TIMEOUT_MS;
        co.connect_timeout_ms = CLASSCHECK_TIMEOUT_MS / 2;
        kube_error_t kerr;
        kube_error_clear(&kerr);
        if (!(*client = kube_client_new(*cfg, &co, &kerr)))
            snprintf(why, sizeof(why), "webhookd has no API client: %s", kube_error_str(&kerr, err, sizeof(err)));
    }
    if (!*client)
        rlog_error("the StorageClass check of a growing spec.storage.size refuses every growth", "error", why);
    else
        rlog_info("a growing spec.storage.size is checked against its StorageClass", "server",
                  kube_config_rest(*cfg)->server);
    *reader = classcheck_reader_new(base, *client, *client ? NULL : why);
    return *reader ? 0 : -1;
}

/* Serve on libevent until SIGTERM/SIGINT; the exit code. */
static int serve(const rdc_common_opts_t *c, webhook_server_config_t *wc)
{
    int code = 1, sfd = -1;
    char rtdir[4096], err[1024];
    app_t a = {.name = daemon_child_name("webhookd"), .runtime_dir = rtdir};
    struct event *sig_ev = NULL, *tick_ev = NULL;
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    classcheck_reader_t *reader = NULL;
    if ((sfd = daemon_loop_setup(c->runtime_dir, rtdir, sizeof(rtdir))) < 0)
        goto out;
    if (!(a.base = event_base_new())) {
        rlog_error("cannot create the event loop");
        goto out;
    }
    if (connect_classes(c, a.base, &cfg, &client, &reader)) {
        rlog_error("out of memory");
        goto out;
    }
    wc->classes = reader;
    wc->max_connections = fit_open_files(wc->max_connections);
    if (webhook_server_new(a.base, wc, &a.server, err, sizeof(err))) {
        rlog_error("cannot start the webhook server", "error", err);
        goto out;
    }
    struct timeval tick = {TICK_S, 0};
    sig_ev = event_new(a.base, sfd, EV_READ | EV_PERSIST, on_signal, &a);
    tick_ev = event_new(a.base, -1, EV_PERSIST, on_tick, &a);
    if (!sig_ev || !tick_ev || event_add(sig_ev, NULL) || event_add(tick_ev, &tick)) {
        rlog_error("cannot set up the event loop");
        goto out;
    }
    log_listening(&a, wc);
    daemon_publish_metrics(rtdir, a.name);
    daemon_notify_ready();
    if (event_base_dispatch(a.base) < 0) {
        rlog_error("the event loop failed");
        goto out;
    }
    code = 0;
    rlog_info("stopped");
out:
    if (a.server)
        daemon_publish_metrics(rtdir, a.name);
    if (sig_ev)
        event_free(sig_ev);
    if (tick_ev)
        event_free(tick_ev);
    webhook_server_destroy(&a.server); /* before the reader: it cancels its reads */
    classcheck_reader_destroy(&reader); /* before the base: its events are on it */
    if (a.base)
        event_base_free(a.base);
    daemon_release(sfd, &client, &cfg);
    return code;
}

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    webhook_server_config_t wc = {
        .bind_address = "",
        .port = WEBHOOK_DEFAULT_PORT,
        .cert_dir = WEBHOOK_DEFAULT_CERT_DIR,
        .cert_name = "tls.crt",
        .key_name = "tls.key",
        .max_connections = WEBHOOK_DEFAULT_MAX_CONNECTIONS,
    };
    double request_timeout = WEBHOOK_DEFAULT_REQUEST_TIMEOUT_MS / 1000.0, idle_timeout = WEBHOOK_DEFAULT_TIMEOUT_S;
    const opt_t own[] = {
        {"webhook-port", OPT_INT, &wc.port, "port of the webhook server (0 = any free port)"},
        {"webhook-bind-address", OPT_STRING, &wc.bind_address,
         "address the webhook server listens on (empty = every interface)"},
        {"webhook-cert-dir", OPT_STRING, &wc.cert_dir,
         "directory of the serving certificate and key (reloaded when they change)"},
        {"webhook-cert-name", OPT_STRING, &wc.cert_name, "certificate file in --webhook-cert-dir"},
        {"webhook-key-name", OPT_STRING, &wc.key_name, "key file in --webhook-cert-dir"},
        {"webhook-max-connections", OPT_INT, &wc.max_connections,
         "open connections at most; over it new ones are closed at accept (counted in "
         "webhook_connections_refused_total)"},
        {"webhook-request-timeout", OPT_DURATION, &request_timeout,
         "a connection must deliver a whole request (TLS handshake, headers, body) within this of "
         "its accept, or of the previous request plus --webhook-idle-timeout"},
        {"webhook-idle-timeout", OPT_DURATION, &idle_timeout,
         "a kept-alive connection silent this long is closed (also: any read or write stall)"},
        {NULL, OPT_END, NULL, NULL},
    };
    /* Accepts every shared flag (the supervisor passes them all), lists those it uses. */
    int early = opts_daemon_main("webhookd", summary, &c, own, argc, argv,
                                 "kubeconfig,context,kube-api-qps,kube-api-burst,log-level,log-format,runtime-dir");
    if (early >= 0)
        return early;
    if (check_flags(&wc, request_timeout, idle_timeout))
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int code = serve(&c, &wc);
    curl_global_cleanup();
    return code;
}
