/* metricsd: the supervisor's /metrics behind HTTPS, authentication and authorization, as
 * controller-runtime's metrics server serves it since 0.16 (--metrics-secure).
 *
 *   metricsd --metrics-bind-address :8443 --upstream http://127.0.0.1:PORT/metrics
 *            [--metrics-cert-path DIR [--metrics-cert-name tls.crt] [--metrics-cert-key tls.key]]
 *
 * The supervisor starts it (child "metricsd") when it runs with --metrics-secure, and then
 * serves its merged metrics on a loopback port only, which it hands over as --upstream.
 * Every request to /metrics is authenticated by TokenReview and authorized by
 * SubjectAccessReview (metrics_auth.h; decisions cached briefly, bounded); an allowed one
 * gets the supervisor's exposition, fetched from upstream (metrics_serve.h). It runs in a
 * process of its own, like the webhook server, because it parses untrusted input (TLS,
 * HTTP, tokens, the review answers): the supervisor keeps parsing none.
 *
 * One loop (common/loop, docs/daemon-loop.md), no thread: libmicrohttpd's HTTPS in its
 * external epoll mode (metrics_tls.h, at most MAX_CONNECTIONS, each bounded by
 * CONNECTION_TIMEOUT_S), the reviews and the upstream fetch as transfers of one curl multi
 * (common/loop_curl), the signalfd, and a timer every CHECK_EVERY_MS that looks at the
 * certificate files: the certificate is tls.crt/tls.key in --metrics-cert-path (the
 * webhook's mechanism: a Secret mounted there by cert-manager or deploy/gen-certs.sh),
 * reloaded when the files change, else a self-signed one made at start for localhost and
 * 127.0.0.1, as controller-runtime does. Its metrics file is published every 2 s (with
 * --runtime-dir). Exits 0 on SIGTERM.
 */
#include "clock.h"
#include "daemon.h"
#include "httpd.h"
#include "kube_client.h"
#include "kube_config.h"
#include "log.h"
#include "loop.h"
#include "loop_curl.h"
#include "metrics_auth.h"
#include "metrics_serve.h"
#include "metrics_tls.h"
#include "opts.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CONNECTIONS 32u
#define CONNECTION_TIMEOUT_S 10u
#define REVIEW_TIMEOUT_NS (INT64_C(5) * NS_PER_SEC)
#define UPSTREAM_TIMEOUT_NS (INT64_C(10) * NS_PER_SEC)
#define CHECK_EVERY_MS 2000

static const char summary[] =
    "Serves the supervisor's /metrics over HTTPS to scrapers the API server authenticates\n"
    "(TokenReview) and authorizes (SubjectAccessReview: get on the non-resource URL /metrics),\n"
    "as controller-runtime's secure metrics server. Started by the supervisor with\n"
    "--metrics-secure; the shared flags are accepted so that the supervisor can pass its own.";

typedef struct {
    const char *upstream, *cert_path, *cert_name, *key_name;
} metricsd_opts_t;

static int listen_addr(const char *addr, struct sockaddr_in *sin, char *err, size_t errlen)
{
    char host[64];
    int port;
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    if (httpd_parse_addr(addr, host, sizeof(host), &port)) {
        snprintf(err, errlen, "--metrics-bind-address \"%s\": expected host:port or :port", addr);
        return -1;
    }
    sin->sin_port = htons((uint16_t)port);
    if (!*host || !strcmp(host, "0.0.0.0"))
        sin->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (!strcmp(host, "localhost"))
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
        snprintf(err, errlen, "--metrics-bind-address \"%s\": not an IPv4 address", addr);
        return -1;
    }
    return 0;
}

static int on_signal(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)socket, (void)revents, (void)arg;
    if (daemon_stop_requested(fd))
        loop_stop(loop);
    return 0;
}

/* A rotated certificate (cert-manager, gen-certs.sh) is served from here on. */
static int on_check(loop_t *loop, int timer_id, void *arg)
{
    (void)loop, (void)timer_id;
    mtls_t *tls = arg;
    char err[1024];
    int r = mtls_check(tls, clock_mono_ns(), err, sizeof(err));
    if (r > 0) {
        char loads[16];
        snprintf(loads, sizeof(loads), "%u", mtls_loads(tls));
        rlog_info("serving certificate reloaded", "loads", loads);
    } else if (r < 0) {
        rlog_error("cannot reload the serving certificate; still serving the previous one", "error", err);
    }
    return 0;
}

/* Everything the loop serves, made and torn down together. */
typedef struct {
    loop_t *loop;
    kube_config_t *cfg;
    kube_client_t *client;
    mserve_stack_t stack;
    daemon_metrics_t metrics;
} app_t;

/* Make the loop's pieces and start listening. 0, or -1 after logging why. */
static int app_start(app_t *a, const rdc_common_opts_t *c, const metricsd_opts_t *o, const struct sockaddr_in *sin)
{
    char err[1024];
    kube_client_opts_t co;
    kube_client_opts_init(&co);
    co.timeout_ms = REVIEW_TIMEOUT_NS / NS_PER_MS;
    if (!(a->loop = loop_new())) {
        rlog_error("cannot start", "error", "out of memory");
        return -1;
    }
    if (daemon_kube_connect(c, &co, &a->cfg, &a->client))
        return -1;
    if (!o->cert_path || !*o->cert_path)
        rlog_info("no --metrics-cert-path: serving a self-signed certificate for localhost");
    mserve_config_t sc = {.client = a->client, .upstream = o->upstream, .review_timeout_ns = REVIEW_TIMEOUT_NS,
                          .upstream_timeout_ns = UPSTREAM_TIMEOUT_NS};
    mtls_opts_t to = {.cert_dir = o->cert_path, .cert_name = o->cert_name, .key_name = o->key_name, .addr = sin,
                      .connection_limit = MAX_CONNECTIONS, .connection_timeout_s = CONNECTION_TIMEOUT_S,
                      .connection_memory_limit = (size_t)64 * 1024};
    if (mserve_stack_start(&a->stack, a->loop, sc, to, err, sizeof(err))) {
        rlog_error("cannot serve HTTPS", "addr", c->metrics_bind_address, "error", err);
        return -1;
    }
    return 0;
}

static int serve(const rdc_common_opts_t *c, const metricsd_opts_t *o)
{
    char err[1024];
    app_t a = {.metrics = {.dir = c->runtime_dir, .name = daemon_child_name("metricsd")}};
    int code = 1, sfd = daemon_signalfd(err, sizeof(err));
    struct sockaddr_in sin;
    if (sfd < 0 || listen_addr(c->metrics_bind_address, &sin, err, sizeof(err))) {
        rlog_error("cannot start", "error", err);
        goto out;
    }
    if (app_start(&a, c, o, &sin))
        goto out;
    if (loop_add_fd(a.loop, sfd, LOOP_IN, on_signal, NULL) ||
        loop_add_timer(a.loop, CHECK_EVERY_MS * NS_PER_MS, CHECK_EVERY_MS * NS_PER_MS, on_check, a.stack.tls) < 0 ||
        (c->runtime_dir && daemon_add_metrics_timer(a.loop, &a.metrics) < 0)) {
        rlog_error("cannot start", "error", "out of memory");
        goto out;
    }
    char port[16];
    snprintf(port, sizeof(port), "%u", mtls_port(a.stack.tls));
    rlog_info("serving metrics over HTTPS with authentication and authorization", "addr",
              c->metrics_bind_address, "port", port, "paths", "/metrics", "upstream", o->upstream);
    daemon_notify_ready();
    if (loop_run(a.loop, NS_PER_SEC)) {
        rlog_error("the event loop failed", "error", loop_error(a.loop));
        goto out;
    }
    code = 0;
out:
    mserve_stack_stop(&a.stack);
    loop_destroy(&a.loop);
    daemon_release(sfd, &a.client, &a.cfg);
    return code;
}

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    c.metrics_bind_address = ":8443";
    metricsd_opts_t o = {.upstream = NULL, .cert_name = "tls.crt", .key_name = "tls.key"};
    const opt_t own[] = {
        {"upstream", OPT_STRING, &o.upstream, "URL of the plain metrics to protect (the supervisor's, on loopback)"},
        {"metrics-cert-path", OPT_STRING, &o.cert_path,
         "directory of the serving certificate and key (default: a self-signed one)"},
        {"metrics-cert-name", OPT_STRING, &o.cert_name, "certificate file in --metrics-cert-path"},
        {"metrics-cert-key", OPT_STRING, &o.key_name, "key file in --metrics-cert-path"},
        {NULL, OPT_END, NULL, NULL},
    };
    int early = opts_daemon_main("metricsd", summary, &c, own, argc, argv,
                                 "kubeconfig,context,metrics-bind-address,log-level,log-format");
    if (early >= 0)
        return early;
    if (!o.upstream || strncmp(o.upstream, "http://", 7) != 0) {
        fprintf(stderr, "metricsd: --upstream http://HOST:PORT/metrics is required\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int code = serve(&c, &o);
    curl_global_cleanup();
    return code;
}
