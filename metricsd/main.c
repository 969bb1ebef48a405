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
 * gets the supervisor's exposition, fetched from upstream. It runs in a process of its own,
 * like the webhook server, because it parses untrusted input (TLS, HTTP, tokens, the
 * review answers): the supervisor keeps parsing none.
 *
 * TLS and HTTP are libmicrohttpd's (built with GnuTLS on Debian): one thread per connection,
 * at most MAX_CONNECTIONS, each bounded by CONNECTION_TIMEOUT_S; the reviews are
 * serialized by a mutex (one client, one cache). The certificate is tls.crt/tls.key in
 * --metrics-cert-path (the webhook's mechanism: a Secret mounted there by cert-manager or
 * deploy/gen-certs.sh), reloaded when the files change (metrics_tls.h: checked every
 * PUBLISH_EVERY_MS), else a self-signed one made at start for localhost and 127.0.0.1,
 * as controller-runtime does. Exits 0 on SIGTERM.
 */
#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "httpd.h"
#include "kube_client.h"
#include "kube_config.h"
#include "log.h"
#include "metrics_auth.h"
#include "metrics_tls.h"
#include "opts.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define MAX_CONNECTIONS 32u
#define CONNECTION_TIMEOUT_S 10u
#define UPSTREAM_TIMEOUT_MS 10000L
#define MAX_EXPOSITION ((size_t)32 << 20)
#define PUBLISH_EVERY_MS 2000

static const char summary[] =
    "Serves the supervisor's /metrics over HTTPS to scrapers the API server authenticates\n"
    "(TokenReview) and authorizes (SubjectAccessReview: get on the non-resource URL /metrics),\n"
    "as controller-runtime's secure metrics server. Started by the supervisor with\n"
    "--metrics-secure; the shared flags are accepted so that the supervisor can pass its own.";

typedef struct {
    const char *upstream;
    kube_client_t *client;
    mauth_cache_t *cache;
    pthread_mutex_t mu;
} app_t;

/* ---- requests ----------------------------------------------------------------------- */

static size_t on_upstream(char *data, size_t size, size_t n, void *user)
{
    return buf_append(user, data, size * n) ? 0 : size * n;
}

/* GET the supervisor's exposition into out. Returns 0, or -1 with err. */
static int fetch_upstream(const char *url, buf_t *out, char *err, size_t errlen)
{
    CURL *h = curl_easy_init();
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, UPSTREAM_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_upstream);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK || status != 200) {
        snprintf(err, errlen, "upstream %s: %s (HTTP %ld)", url, curl_easy_strerror(rc), status);
        return -1;
    }
    return 0;
}

/* 200, 401, 403 or 500 for the Authorization header value auth (NULL: none). */
static int decide(app_t *a, const char *auth, const char *path)
{
    const char *token = mauth_bearer(auth);
    if (!token)
        return 401;
    unsigned char hash[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, strlen(token), hash);
    char why[512] = "";
    pthread_mutex_lock(&a->mu);
    int d = mauth_cache_get(a->cache, hash, clock_mono_ns());
    if (!d) {
        d = mauth_check(a->client, token, path, why, sizeof(why));
        mauth_cache_put(a->cache, hash, d, clock_mono_ns());
    }
    pthread_mutex_unlock(&a->mu);
    if (d == 500)
        rlog_error("cannot review a scraper's token", "error", why);
    else if (d != 200 && *why)
        rlog_info("metrics request refused", "status", d == 401 ? "401" : "403", "reason", why);
    return d;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *ctype,
                             const char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (status == 401)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
    (void)version;
    (void)upload_data;
    app_t *a = cls;
    if (*req_cls == NULL) { /* headers only so far */
        *req_cls = a;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    static const char text[] = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") != 0)
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, text, "method not allowed\n", 19);
    if (strcmp(url, "/metrics") != 0)
        return reply(conn, MHD_HTTP_NOT_FOUND, text, "not found\n", 10);
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    switch (decide(a, auth, url)) {
    case 200:
        break;
    case 401:
        return reply(conn, MHD_HTTP_UNAUTHORIZED, text, "Unauthorized\n", 13);
    case 403:
        return reply(conn, MHD_HTTP_FORBIDDEN, text, "Forbidden\n", 10);
    default:
        return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, text, "Internal Server Error\n", 22);
    }
    buf_t body;
    buf_init(&body, MAX_EXPOSITION);
    char err[512];
    enum MHD_Result rc;
    if (fetch_upstream(a->upstream, &body, err, sizeof(err))) {
        rlog_error("cannot read the supervisor's metrics", "error", err);
        rc = reply(conn, MHD_HTTP_BAD_GATEWAY, text, "Bad Gateway\n", 12);
    } else {
        rc = reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf_str(&body), body.len);
    }
    buf_free(&body);
    return rc;
}

/* ---- main --------------------------------------------------------------------------- */

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

static int serve(const rdc_common_opts_t *c, const metricsd_opts_t *o)
{
    char err[1024];
    app_t a = {.upstream = o->upstream};
    kube_config_t *cfg = NULL;
    mtls_t *tls = NULL;
    int code = 1, sfd = daemon_signalfd(err, sizeof(err));
    pthread_mutex_init(&a.mu, NULL);
    struct sockaddr_in sin;
    if (sfd < 0 || listen_addr(c->metrics_bind_address, &sin, err, sizeof(err))) {
        rlog_error("cannot start", "error", err);
        goto out;
    }
    kube_client_opts_t co;
    kube_client_opts_init(&co);
    co.timeout_ms = 5000;
    co.max_retries = 1;
    a.cache = mauth_cache_new(MAUTH_DEFAULT_CAPACITY);
    if (!a.cache || daemon_kube_connect(c, &co, &cfg, &a.client))
        goto out;
    if (!o->cert_path || !*o->cert_path)
        rlog_info("no --metrics-cert-path: serving a self-signed certificate for localhost");
    mtls_opts_t to = {.cert_dir = o->cert_path, .cert_name = o->cert_name, .key_name = o->key_name, .addr = &sin,
                      .handler = answer, .handler_cls = &a, .connection_limit = MAX_CONNECTIONS,
                      .connection_timeout_s = CONNECTION_TIMEOUT_S, .connection_memory_limit = (size_t)64 * 1024};
    if (mtls_start(&to, &tls, err, sizeof(err))) {
        rlog_error("cannot serve HTTPS", "addr", c->metrics_bind_address, "error", err);
        goto out;
    }
    char port[16];
    snprintf(port, sizeof(port), "%u", mtls_port(tls));
    rlog_info("serving metrics over HTTPS with authentication and authorization", "addr",
              c->metrics_bind_address, "port", port, "paths", "/metrics", "upstream", o->upstream);
    daemon_notify_ready();
    const char *name = daemon_child_name("metricsd");
    for (;;) { /* the signalfd is non-blocking: wait for it, publishing our metrics file */
        if (c->runtime_dir) { /* the registry is also written by the reviews: under the lock */
            pthread_mutex_lock(&a.mu);
            daemon_publish_metrics(c->runtime_dir, name);
            pthread_mutex_unlock(&a.mu);
        }
        /* A rotated certificate (cert-manager, gen-certs.sh) is served from here on. */
        int r = mtls_check(tls, clock_mono_ns(), err, sizeof(err));
        if (r > 0) {
            char loads[16];
            snprintf(loads, sizeof(loads), "%u", mtls_loads(tls));
            rlog_info("serving certificate reloaded", "loads", loads);
        } else if (r < 0) {
            rlog_error("cannot reload the serving certificate; still serving the previous one", "error", err);
        }
        struct pollfd pfd = {.fd = sfd, .events = POLLIN};
        if (poll(&pfd, 1, PUBLISH_EVERY_MS) <= 0)
            continue;
        int sig = daemon_read_signal(sfd);
        if (sig == SIGTERM || sig == SIGINT)
            break;
    }
    code = 0;
out:
    mtls_stop(&tls);
    mauth_cache_destroy(&a.cache);
    pthread_mutex_destroy(&a.mu);
    daemon_release(sfd, &a.client, &cfg);
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
