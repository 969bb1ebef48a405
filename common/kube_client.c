#include "kube_client.h"

#include "backoff.h"
#include "clock.h"
#include "jsonx.h"
#include "kube_client_internal.h"
#include "kube_retry.h"
#include "log.h"
#include "metrics.h"
#include "ratelimit.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void kube_client_opts_init(kube_client_opts_t *o)
{
    *o = (kube_client_opts_t){
        .user_agent = DEFAULT_USER_AGENT,
        .qps = 20,
        .burst = 30,
        .timeout_ms = 30000,
        .connect_timeout_ms = 10000,
        .max_retries = 10,
        .retry_base_ms = 100,
        .retry_cap_ms = 5000,
        .retry_after_cap_ms = 10000,
        .max_response_bytes = BUF_DEFAULT_CAP,
    };
}

/* Replace unset or out-of-range options with defaults. */
static void opts_normalise(kube_client_opts_t *o)
{
    kube_client_opts_t d;
    kube_client_opts_init(&d);
    if (!o->user_agent || !*o->user_agent)
        o->user_agent = d.user_agent;
    if (o->timeout_ms <= 0)
        o->timeout_ms = d.timeout_ms;
    if (o->connect_timeout_ms <= 0)
        o->connect_timeout_ms = d.connect_timeout_ms;
    if (o->max_retries < 0)
        o->max_retries = 0;
    if (o->retry_base_ms <= 0)
        o->retry_base_ms = d.retry_base_ms;
    if (o->retry_cap_ms <= 0)
        o->retry_cap_ms = d.retry_cap_ms;
    if (o->retry_after_cap_ms <= 0)
        o->retry_after_cap_ms = d.retry_after_cap_ms;
    if (o->max_response_bytes == 0)
        o->max_response_bytes = d.max_response_bytes;
}

/* ---- time ---------------------------------------------------------------------- */

static int64_t now_ns(const kube_client_t *c)
{
    return c->clk.now_ns ? c->clk.now_ns(c->clk.user) : clock_mono_ns();
}

static void sleep_for(kube_client_t *c, int64_t ns)
{
    if (ns <= 0)
        return;
    if (c->clk.sleep_ns) {
        c->clk.sleep_ns(c->clk.user, ns);
        return;
    }
    /* Absolute deadline, so a signal cannot stretch or cut the wait. */
    int64_t t = clock_mono_ns() + ns;
    struct timespec ts = {.tv_sec = (time_t)(t / NS_PER_SEC), .tv_nsec = (long)(t % NS_PER_SEC)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

void kube_client_set_clock(kube_client_t *c, const kube_client_clock_t *clk)
{
    if (clk)
        c->clk = *clk;
    else
        memset(&c->clk, 0, sizeof(c->clk));
}

/* ---- setting up a handle ------------------------------------------------------- */

/* client-go's rest_client_* families in the process's registry (metrics_default), kept
 * in c for the request path; registering again returns the families already there. */
static void register_metrics(kube_client_t *c)
{
    static const double buckets[] = {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
    size_t nb = sizeof(buckets) / sizeof(buckets[0]);
    metrics_registry_t *reg = metrics_default();
    c->m_requests = metrics_counter(reg, "rest_client_requests_total",
                                    "Number of HTTP requests, partitioned by status code, method, and host.",
                                    "code,method,host");
    c->m_duration = metrics_histogram(reg, "rest_client_request_duration_seconds",
                                      "Request latency in seconds. Broken down by verb, and host.", "verb,host",
                                      buckets, nb);
    c->m_retries = metrics_counter(reg, "rest_client_request_retries_total",
                                   "Number of request retries, partitioned by status code, verb, and host.",
                                   "code,verb,host");
    c->m_throttle = metrics_histogram(reg, "rest_client_rate_limiter_duration_seconds",
                                      "Client side rate limiter latency in seconds. Broken down by verb, and host.",
                                      "verb,host", buckets, nb);
}

static int parse_server(kube_client_t *c, kube_error_t *err)
{
    const char *server = c->rest->server;
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    buf_t b;
    buf_init(&b, 4096);
    int rc = -1;
    if (!u) {
        kube_error_set(err, KERR_CONFIG, "out of memory");
        goto out;
    }
    if (!server || !*server ||
        curl_url_set(u, CURLUPART_URL, server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        kube_error_set(err, KERR_CONFIG, "kubeconfig %s: server \"%s\" is not a URL",
                       c->rest->source ? c->rest->source : "?", server ? server : "");
        goto out;
    }
    if (strcasecmp(scheme, "https") != 0 && strcasecmp(scheme, "http") != 0) {
        kube_error_set(err, KERR_CONFIG, "kubeconfig %s: server \"%s\": scheme must be https",
                       c->rest->source ? c->rest->source : "?", server);
        goto out;
    }
    /* Drop a trailing '/' of the prefix: API paths start with one. */
    size_t plen = strlen(path);
    while (plen > 0 && path[plen - 1] == '/')
        path[--plen] = '\0';
    if (buf_printf(&b, "%s:%s", host, port))
        goto nomem;
    c->host = buf_detach(&b);
    const char *tsn = c->rest->tls_server_name;
    if (tsn && *tsn && strcasecmp(scheme, "https") == 0) {
        /* curl has no option for the verified name: put the name in the URL (so it is
         * the SNI and the name checked against the certificate) and route name:port to
         * the real address with CONNECT_TO. Host: keeps the real address, as Go does. */
        if (buf_printf(&b, "%s:%s:%s:%s", tsn, port, host, port))
            goto nomem;
        c->connect_to = curl_slist_append(NULL, buf_str(&b));
        buf_reset(&b);
        if (!c->connect_to || buf_printf(&b, "Host: %s", c->host))
            goto nomem;
        c->host_header = buf_detach(&b);
        if (buf_printf(&b, "https://%s:%s%s", tsn, port, path))
            goto nomem;
    } else if (buf_printf(&b, "%s://%s:%s%s", scheme, host, port, path)) {
        goto nomem;
    }
    c->base_url = buf_detach(&b);
    if (!c->host || !c->base_url)
        goto nomem;
    rc = 0;
    goto out;
nomem:
    kube_error_set(err, KERR_CONFIG, "out of memory");
out:
    buf_free(&b);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}

kube_client_t *kube_client_new(kube_config_t *cfg, const kube_client_opts_t *opts,
                               kube_error_t *err)
{
    kube_error_t local;
    if (!err)
        err = &local;
    kube_error_clear(err);
    assert(cfg);
    kube_client_t *c = calloc(1, sizeof(*c));
    if (!c) {
        kube_error_set(err, KERR_CONFIG, "out of memory");
        return NULL;
    }
    c->cfg = cfg;
    c->rest = kube_config_rest(cfg);
    if (opts)
        c->opts = *opts;
    else
        kube_client_opts_init(&c->opts);
    opts_normalise(&c->opts);
    c->user_agent = strdup(c->opts.user_agent);
    c->opts.user_agent = c->user_agent;
    c->easy = curl_easy_init();
    if (!c->user_agent || !c->easy) {
        kube_error_set(err, KERR_CONFIG, "out of memory initialising curl");
        goto fail;
    }
    if (parse_server(c, err))
        goto fail;
    ratelimit_init(&c->rl, c->opts.qps, c->opts.burst);
    if (c->opts.shared_bucket) {
        char why[512];
        if (ratelimit_shared_open(c->opts.shared_bucket, &c->shared_rl, why, sizeof(why))) {
            kube_error_set(err, KERR_CONFIG, "the operator's QPS bucket: %s", why);
            goto fail;
        }
        c->opts.qps = ratelimit_shared_qps(c->shared_rl);
        c->opts.burst = ratelimit_shared_burst(c->shared_rl);
        c->opts.shared_bucket = NULL; /* borrowed only for the call */
    }
    c->rng = backoff_rng_seed();

    register_metrics(c);
    return c;
fail:
    kube_client_destroy(&c);
    return NULL;
}

void kube_client_destroy(kube_client_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    kube_client_t *c = *self_p;
    if (c->easy)
        curl_easy_cleanup(c->easy);
    curl_slist_free_all(c->connect_to);
    ratelimit_shared_destroy(&c->shared_rl);
    free(c->user_agent);
    free(c->base_url);
    free(c->host);
    free(c->host_header);
    free(c);
    *self_p = NULL;
}

const char *kube_client_host(const kube_client_t *c)
{
    return c->host;
}

void kube_client_stats(const kube_client_t *c, kube_client_stats_t *out)
{
    *out = c->stats;
}

/* A stream handle's note of the credential it was sent with, so that a 401 on it
 * invalidates that credential only if it is still the current one (one plugin run per
 * burst of 401s, however many watches got it). It is the first node of the handle's
 * header list, which the caller keeps until the handle is done and frees with
 * curl_slist_free_all: that frees node.data and then the node, i.e. the whole ticket
 * (node is the first member, and libcurl frees with free() unless
 * curl_global_init_mem replaced it, which nothing here does). */
typedef struct {
    struct curl_slist node;
    kube_client_t *client;
    uint64_t gen;
    int64_t retry_after_s; /* the Retry-After of the latest response; 0 = none */
} cred_ticket_t;

/* Put line at the head of h as a cred_ticket_t. NULL when out of memory (h unchanged). */
static struct curl_slist *ticket_prepend(struct curl_slist *h, const char *line,
                                         kube_client_t *c, uint64_t gen)
{
    cred_ticket_t *t = calloc(1, sizeof(*t));
    if (!t || !(t->node.data = strdup(line))) {
        free(t);
        return NULL;
    }
    t->node.next = h;
    t->client = c;
    t->gen = gen;
    return &t->node;
}

/* Append a copy of line to *h. Returns 0, or -1 when out of memory (*h unchanged). */
static int header_add(struct curl_slist **h, const char *line)
{
    struct curl_slist *t = curl_slist_append(*h, line);
    if (!t)
        return -1;
    *h = t;
    return 0;
}

/* The request headers: Accept, bearer token, impersonation, Host override, content
 * type. *gen gets the generation of the credential used. With ticket the list starts
 * with a cred_ticket_t (for stream handles). Returns the list (caller frees) or NULL
 * with err filled. */
static struct curl_slist *build_headers(kube_client_t *c, const char *content_type,
                                        int ticket, const char **cert, const char **key,
                                        uint64_t *gen, kube_error_t *err)
{
    static const char accept[] = "Accept: application/json";
    struct curl_slist *h = NULL;
    const char *token = NULL;
    char cerr[256] = "";
    int ok = 0;
    buf_t line;
    buf_init(&line, 64 << 10);
    *cert = NULL;
    *key = NULL;
    int crc = kube_config_credentials(c->cfg, &token, cert, key, cerr, sizeof(cerr));
    *gen = kube_config_credentials_generation(c->cfg);
    if (crc && !token && !*cert) {
        kube_error_set(err, KERR_CONFIG, "credentials: %s", cerr);
        goto out;
    }
    if (crc)
        rlog_warn("credential refresh failed; using the previous credential", "error", cerr);
    h = ticket ? ticket_prepend(NULL, accept, c, *gen) : curl_slist_append(NULL, accept);
    /* Large bodies: no 100-continue round trip (the API server answers at once). */
    int oom = !h || header_add(&h, "Expect:");
    if (!oom && token && *token)
        oom = buf_printf(&line, "Authorization: Bearer %s", token) || header_add(&h, buf_str(&line));
    /* Impersonation on every request, as client-go's impersonating round tripper. */
    for (size_t i = 0; !oom && i < c->rest->n_impersonate_headers; i++)
        oom = header_add(&h, c->rest->impersonate_headers[i]);
    if (!oom && c->host_header)
        oom = header_add(&h, c->host_header);
    if (!oom && content_type) {
        buf_reset(&line);
        oom = buf_printf(&line, "Content-Type: %s", content_type) || header_add(&h, buf_str(&line));
    }
    if (oom)
        kube_error_set(err, KERR_CONFIG, "out of memory building request headers");
    ok = !oom;
out:
    buf_free(&line);
    if (!ok) {
        curl_slist_free_all(h);
        h = NULL;
    }
    return h;
}

/* Options every request and stream shares: URL, TLS, identity, connection behaviour. */
static CURLcode setup_handle(kube_client_t *c, CURL *e, const char *url,
                             struct curl_slist *headers, const char *cert, const char *key)
{
    CURLcode rc = CURLE_OK;
#define SET(opt, val)                                                                       \
    do {                                                                                    \
        if ((rc = curl_easy_setopt(e, opt, val)) != CURLE_OK)                               \
            return rc;                                                                      \
    } while (0)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_USERAGENT, c->user_agent);
    SET(CURLOPT_ACCEPT_ENCODING, ""); /* gzip: big LISTs shrink a lot */
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)c->opts.connect_timeout_ms);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_TCP_KEEPIDLE, KEEPALIVE_IDLE_S);
    SET(CURLOPT_TCP_KEEPINTVL, KEEPALIVE_INTVL_S);
    if (c->connect_to)
        SET(CURLOPT_CONNECT_TO, c->connect_to);
    const kube_rest_config_t *r = c->rest;
    /* The proxy kube_config chose (proxy-url, else the environment with Go's rules), or
     * none: "" keeps curl from reading *_proxy / no_proxy itself, whose rules differ
     * (curl reads http_proxy only in lower case and proxies loopback hosts). */
    SET(CURLOPT_PROXY, r->proxy ? r->proxy : "");
    SET(CURLOPT_NOPROXY, "");
    if (r->insecure_skip_tls_verify) {
        SET(CURLOPT_SSL_VERIFYPEER, 0L);
        SET(CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        SET(CURLOPT_SSL_VERIFYPEER, 1L);
        SET(CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (r->ca_pem && r->ca_pem_len) {
        struct curl_blob ca = {(void *)r->ca_pem, r->ca_pem_len, CURL_BLOB_COPY};
        SET(CURLOPT_CAINFO_BLOB, &ca);
        /* Trust the cluster's CA only, not the system store as well (as client-go). */
        SET(CURLOPT_CAINFO, (char *)NULL);
        SET(CURLOPT_CAPATH, (char *)NULL);
    }
    if (cert && *cert && key && *key) {
        struct curl_blob cb = {(void *)cert, strlen(cert), CURL_BLOB_COPY};
        struct curl_blob kb = {(void *)key, strlen(key), CURL_BLOB_COPY};
        SET(CURLOPT_SSLCERT_BLOB, &cb);
        SET(CURLOPT_SSLCERTTYPE, "PEM");
        SET(CURLOPT_SSLKEY_BLOB, &kb);
        SET(CURLOPT_SSLKEYTYPE, "PEM");
    }
#undef SET
    return rc;
}

/* The request URL base_url + path [+ "?" query] into url. -1 with err set (KERR_CONFIG)
 * when path does not start with "/" or the URL does not fit url's cap. */
static int build_url(const kube_client_t *c, const char *path, const char *query, buf_t *url,
                     kube_error_t *err)
{
    if (!path || path[0] != '/') {
        kube_error_set(err, KERR_CONFIG, "API path \"%s\" must start with /", path ? path : "");
        return -1;
    }
    if (buf_puts(url, c->base_url) || buf_puts(url, path) ||
        (query && *query && (buf_puts(url, "?") || buf_puts(url, query)))) {
        kube_error_set(err, KERR_CONFIG, "URL longer than %zu bytes", url->cap);
        return -1;
    }
    return 0;
}

/* ---- one attempt --------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    response_t *r = user;
    if (buf_append(&r->body, data, size * n)) {
        r->too_large = 1;
        return 0; /* makes curl stop with CURLE_WRITE_ERROR */
    }
    return size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    response_t *r = user;
    size_t len = size * n;
    if (len >= 5 && strncmp(data, "HTTP/", 5) == 0)
        r->retry_after_s = 0; /* a new response (after 100 Continue) starts */
    else
        kube_retry_parse_after(data, len, &r->retry_after_s);
    return len;
}

static size_t read_body(char *buf, size_t size, size_t n, void *user)
{
    kc_body_t *b = user;
    size_t k = size * n < b->len - b->off ? size * n : b->len - b->off;
    memcpy(buf, b->data + b->off, k);
    b->off += k;
    return k;
}

/* libcurl asks to read the body again from its start: only before a byte was read. */
static int refuse_rewind(void *user, curl_off_t offset, int origin)
{
    const kc_body_t *b = user;
    return offset == 0 && origin == SEEK_SET && b->off == 0 ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL;
}

CURLcode kc_set_body(CURL *e, kc_body_t *b)
{
    b->off = 0;
    CURLcode rc = curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(b->data ? b->len : 0));
    if (rc == CURLE_OK && (b->idempotent || !b->data))
        return curl_easy_setopt(e, CURLOPT_POSTFIELDS, b->data ? b->data : "");
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_POST, 1L);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_READFUNCTION, read_body);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_READDATA, b);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, refuse_rewind);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_SEEKDATA, b);
    return rc;
}

/* Send one attempt of method with body; the response (status, body, Retry-After) lands
 * in *resp. Returns the CURLcode. */
static CURLcode perform(kube_client_t *c, const char *method, const char *url,
                        struct curl_slist *headers, const char *cert, const char *key,
                        kc_body_t *body, int64_t timeout_ns, response_t *resp, int *sent)
{
    CURL *e = c->easy;
    /* Reset keeps the connection cache, so the next request reuses the connection. */
    curl_easy_reset(e);
    c->errbuf[0] = '\0';
    CURLcode rc = setup_handle(c, e, url, headers, cert, key);
    if (rc)
        return rc;
    long timeout_ms = (long)(timeout_ns / NS_PER_MS);
    if (timeout_ms < 1)
        timeout_ms = 1;
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (c->opts.connect_timeout_ms > timeout_ms)
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, resp);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        kc_set_body(e, body);
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    rc = curl_easy_perform(e);
    long status = 0, connects = 0, request_size = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
    curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &request_size);
    *sent = request_size > 0;
    resp->http_status = (int)status;
    c->stats.connects += (uint64_t)(connects > 0 ? connects : 0);
    c->stats.requests++;
    return rc;
}

static void status_label(CURLcode rc, int status, char *out, size_t len)
{
    if (rc != CURLE_OK || status <= 0)
        snprintf(out, len, "<error>");
    else
        snprintf(out, len, "%d", status);
}

/* Wait for the limiter within the deadline. Returns 0, or -1 when the wait would pass
 * the deadline (nothing consumed). */
static int reserve(kube_client_t *c, int64_t now, int64_t max_wait, int64_t *wait)
{
    if (c->shared_rl)
        return ratelimit_shared_try_reserve(c->shared_rl, now, max_wait, wait);
    return ratelimit_try_reserve(&c->rl, now, max_wait, wait);
}

int kube_client_budget_short(kube_client_t *c)
{
    if (c->shared_rl)
        return ratelimit_shared_tokens(c->shared_rl, now_ns(c)) < 1.0;
    return !ratelimit_unlimited(&c->rl) && ratelimit_tokens(&c->rl, now_ns(c)) < 1.0;
}

int kc_take_token(kube_client_t *c, const char *method, int64_t deadline, int64_t *wait)
{
    *wait = 0;
    if (!c->shared_rl && ratelimit_unlimited(&c->rl))
        return 0;
    int64_t now = now_ns(c);
    if (reserve(c, now, deadline > 0 ? deadline - now : INT64_MAX, wait))
        return -1;
    c->stats.throttled_ns += *wait;
    metric_histogram_observe(c->m_throttle, METRIC_LABELS(method, c->host), (double)*wait / 1e9);
    return 0;
}

static int throttle(kube_client_t *c, const char *method, int64_t deadline)
{
    int64_t wait = 0;
    if (kc_take_token(c, method, deadline, &wait))
        return -1;
    sleep_for(c, wait);
    if (wait >= THROTTLE_LOG_NS) {
        char ms[32];
        snprintf(ms, sizeof(ms), "%lld", (long long)(wait / NS_PER_MS));
        rlog_info("waited for client-side throttling", "method", method, "waitMs", ms);
    }
    return 0;
}

int64_t kube_client_deadline(const kube_client_t *c)
{
    return c->call_deadline_ns;
}

int64_t kube_client_throttle(kube_client_t *c)
{
    int64_t wait = 0;
    kc_take_token(c, "GET", 0, &wait);
    return wait;
}

int64_t kc_now(const kube_client_t *c)
{
    return now_ns(c);
}

/* Parse a whole response body as one JSON value (jsonx_parse_ex, the one parser). */
json_object *kc_parse_json(const char *s, size_t len, char *why, size_t whylen)
{
    json_object *o = NULL;
    char err[256];
    jsonx_parse_t rc = jsonx_parse_ex(NULL, s, len, JSON_DEPTH, &o, NULL, err, sizeof(err));
    if (rc == JSONX_TOO_LARGE)
        snprintf(why, whylen, "body of %zu bytes is too large to parse", len);
    else if (rc)
        snprintf(why, whylen, "%s", err);
    else if (!o)
        snprintf(why, whylen, "body is JSON null");
    return o;
}

/* Turn a finished attempt into err (KERR_OK on 2xx). */
static void classify(kube_client_t *c, CURLcode rc, const response_t *resp, kube_error_t *err)
{
    if (resp->too_large) {
        kube_error_set(err, KERR_DECODE, "response body exceeds %zu bytes",
                       c->opts.max_response_bytes);
        err->http_status = resp->http_status;
        err->curl_code = rc;
        return;
    }
    if (rc != CURLE_OK) {
        kube_error_set_transport(err, rc, rc == CURLE_OPERATION_TIMEDOUT,
                                 curl_easy_strerror(rc), c->errbuf);
        return;
    }
    err->retry_after_s = resp->retry_after_s;
    kube_error_from_response(resp->http_status, resp->body.data, resp->body.len, err);
}

kube_retry_policy_t kc_retry_policy(const kube_client_t *c)
{
    return (kube_retry_policy_t){
        .max_retries = c->opts.max_retries,
        .base_ns = c->opts.retry_base_ms * NS_PER_MS,
        .cap_ns = c->opts.retry_cap_ms * NS_PER_MS,
        .retry_after_cap_ns = c->opts.retry_after_cap_ms * NS_PER_MS,
    };
}

void kc_count_retry(kube_client_t *c, const char *method, int curl_code, int http_status)
{
    char code[16];
    status_label((CURLcode)curl_code, http_status, code, sizeof(code));
    metric_counter_add(c->m_retries, METRIC_LABELS(code, method, c->host), 1);
    c->stats.retries++;
}

void kc_log_retry(const kube_error_t *err, const kube_retry_t *d, int retry, const char *log_id)
{
    if (!rlog_enabled(RLOG_INFO))
        return;
    char line[768], n[16], ms[32];
    snprintf(n, sizeof(n), "%d", retry);
    snprintf(ms, sizeof(ms), "%lld", (long long)(d->delay_ns / NS_PER_MS));
    kube_error_str(err, line, sizeof(line));
    const char *why = kube_retry_reason_name(d->reason);
    if (log_id)
        rlog_info("retrying request", "reconcileID", log_id, "retry", n, "reason", why, "delayMs", ms, "error", line);
    else
        rlog_info("retrying request", "retry", n, "reason", why, "delayMs", ms, "error", line);
}

/* The deadline of a call starting now: the client's timeout, or the caller's
 * kube_client_set_deadline when that is sooner. Returns 0, or KERR_TIMEOUT with err set
 * when it has passed already. */
static int call_deadline(kube_client_t *c, int64_t *deadline, kube_error_t *err)
{
    int64_t start = now_ns(c);
    *deadline = start + c->opts.timeout_ms * NS_PER_MS;
    if (c->call_deadline_ns && c->call_deadline_ns < *deadline)
        *deadline = c->call_deadline_ns;
    if (*deadline > start)
        return 0;
    kube_error_set(err, KERR_TIMEOUT, "the caller's deadline passed before the request was sent");
    return err->code;
}

/* One attempt: send within the deadline, count it in the request metrics, and turn the
 * answer into err (KERR_OK on 2xx) and resp. *rc and *sent (perform's) are for the retry
 * rules. Returns 0, or KERR_TIMEOUT with err set when no time is left to send. */
static int attempt_once(kube_client_t *c, const char *method, const char *url,
                        struct curl_slist *headers, const char *cert, const char *key,
                        kc_body_t *body, int64_t deadline, response_t *resp,
                        CURLcode *rc, int *sent, kube_error_t *err)
{
    buf_free(&resp->body);
    buf_init(&resp->body, c->opts.max_response_bytes);
    resp->too_large = 0;
    resp->retry_after_s = 0;
    resp->http_status = 0;
    *sent = 0;
    int64_t remaining = deadline - now_ns(c);
    if (remaining < NS_PER_MS) {
        kube_error_set(err, KERR_TIMEOUT, "no time left before the deadline to send the request");
        return err->code;
    }
    int64_t real0 = clock_mono_ns();
    *rc = perform(c, method, url, headers, cert, key, body, remaining, resp, sent);
    int64_t took = clock_mono_ns() - real0;
    char code[16];
    status_label(*rc, resp->http_status, code, sizeof(code));
    metric_counter_add(c->m_requests, METRIC_LABELS(code, method, c->host), 1);
    metric_histogram_observe(c->m_duration, METRIC_LABELS(method, c->host), (double)took / 1e9);
    classify(c, *rc, resp, err);
    kube_error_set_request(err, method, url);
    return 0;
}

/* Run a request with limiter, retries (kube_retry.h, the one rule) and metrics. On
 * success returns 0 with the body in resp->body; otherwise the error code with err
 * filled. */
static int execute(kube_client_t *c, const char *method, const char *path, const char *query,
                   const char *content_type, const char *body, size_t len, int idempotent,
                   response_t *resp, kube_error_t *err)
{
    buf_t url;
    buf_init(&url, 1 << 20);
    struct curl_slist *headers = NULL;
    int64_t deadline;
    kube_error_clear(err);
    kube_error_set_request(err, method, path);
    if (call_deadline(c, &deadline, err) || build_url(c, path, query, &url, err))
        goto out;
    kube_retry_policy_t policy = kc_retry_policy(c);
    kc_body_t upload = {body, len, idempotent, 0};
    /* After a 401 the credential is refreshed (exec plugin re-run, token file re-read)
     * and the request sent once more, but only with a different credential. */
    int refresh_due = 0, refreshed = 0;
    uint64_t gen = 0, rejected_gen = 0;
    for (int attempt = 0;; attempt++) {
        const char *cert, *key;
        curl_slist_free_all(headers);
        headers = build_headers(c, content_type, 0, &cert, &key, &gen, err);
        if (!headers)
            goto out;
        if (refresh_due) {
            if (gen == rejected_gen)
                goto out; /* nothing new to offer: err still holds the 401 */
            refresh_due = 0;
            refreshed = 1;
            kc_count_retry(c, method, CURLE_OK, 401);
            rlog_info("retrying request with a refreshed credential after 401", "method",
                      method, "path", path);
        }
        if (throttle(c, method, deadline)) {
            kube_error_set(err, KERR_TIMEOUT,
                           "client rate limiter wait would exceed the %lld ms timeout",
                           (long long)c->opts.timeout_ms);
            goto out;
        }
        CURLcode rc = CURLE_OK;
        int sent = 0;
        if (attempt_once(c, method, buf_str(&url), headers, cert, key, &upload, deadline, resp,
                         &rc, &sent, err) ||
            err->code == KERR_OK)
            goto out;
        if (resp->http_status == 401)
            kube_config_credentials_rejected(c->cfg, gen);
        kube_retry_in_t in = {idempotent, (int)rc, sent, resp->http_status, err->retry_after_s,
                              attempt, refreshed, now_ns(c), deadline};
        kube_retry_t d = kube_retry_decide(&policy, &in, &c->rng);
        if (!d.retry)
            goto out;
        if (d.reason == KUBE_RETRY_REFRESH) {
            refresh_due = 1;
            rejected_gen = gen;
            continue;
        }
        kc_count_retry(c, method, rc, resp->http_status);
        kc_log_retry(err, &d, attempt + 1, NULL);
        sleep_for(c, d.delay_ns);
    }
out:
    curl_slist_free_all(headers);
    buf_free(&url);
    return err->code;
}

/* execute, then parse the body into *out when asked. */
static int call(kube_client_t *c, const char *method, const char *path, const char *query,
                const char *content_type, const char *body, size_t len, int idempotent,
                json_object **out, kube_error_t *err)
{
    kube_error_t local;
    if (!err)
        err = &local;
    if (out)
        *out = NULL;
    response_t resp;
    memset(&resp, 0, sizeof(resp));
    buf_init(&resp.body, c->opts.max_response_bytes);
    int rc = execute(c, method, path, query, content_type, body, len, idempotent, &resp, err);
    if (rc == 0 && out && resp.body.len > 0) {
        char why[160];
        *out = kc_parse_json(resp.body.data, resp.body.len, why, sizeof(why));
        if (!*out) {
            kube_error_set(err, KERR_DECODE, "decode response: %s", why);
            err->http_status = resp.http_status;
            rc = err->code;
        }
    }
    buf_free(&resp.body);
    return rc;
}

int kube_client_request(kube_client_t *c, const char *method, const char *path,
                        const char *query, const char *content_type, const char *body,
                        size_t len, int idempotent, json_object **out, kube_error_t *err)
{
    return call(c, method, path, query, content_type, body, len, idempotent, out, err);
}

/* ---- operations ---------------------------------------------------------------- */

/* Query parameters of writes. */
static int write_query(buf_t *q, const kube_req_opts_t *ro)
{
    if (!ro)
        return 0;
    if (kc_query_add(q, "fieldManager", ro->field_manager))
        return -1;
    if (ro->dry_run && kc_query_add(q, "dryRun", "All"))
        return -1;
    return 0;
}

/* Fail a call before it is sent (query too long, out of memory). */
static int early_error(kube_error_t *err, const char *method, const char *path,
                       const char *what)
{
    kube_error_t local;
    if (!err)
        err = &local;
    kube_error_clear(err);
    kube_error_set_request(err, method, path);
    kube_error_set(err, KERR_CONFIG, "%s", what);
    return err->code;
}

int kc_query_error(kube_error_t *err, const char *method, const char *path)
{
    return early_error(err, method, path, "query string too long");
}

int kube_client_get(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                    json_object **out, kube_error_t *err)
{
    buf_t q;
    buf_init(&q, 64 << 10);
    int rc;
    if (ro && kc_query_add(&q, "resourceVersion", ro->resource_version)) {
        rc = kc_query_error(err, "GET", path);
        goto out;
    }
    rc = call(c, "GET", path, buf_str(&q), NULL, NULL, 0, 1, out, err);
out:
    buf_free(&q);
    return rc;
}

/* Query of one LIST page. */
int kc_list_query(buf_t *q, const kube_req_opts_t *ro, const char *cont, int paged)
{
    if (!ro)
        return 0;
    if (kc_query_add(q, "labelSelector", ro->label_selector) ||
        kc_query_add(q, "fieldSelector", ro->field_selector))
        return -1;
    if (paged && ro->limit > 0 && kc_query_add_long(q, "limit", ro->limit))
        return -1;
    if (cont && *cont)
        return kc_query_add(q, "continue", cont);
    if (kc_query_add(q, "resourceVersion", ro->resource_version) ||
        kc_query_add(q, "resourceVersionMatch", ro->resource_version_match))
        return -1;
    return 0;
}

/* The pager behind kube_client_list and kube_client_list_all. paged = 0 asks for
 * everything at once (the fallback after an expired continue token). */
static int list_pages(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                      int paged, kube_list_page_fn fn, void *user, kube_error_t *err)
{
    buf_t q;
    buf_init(&q, 64 << 10);
    char *cont = NULL;
    json_object *page = NULL;
    int rc = 0;
    for (int n = 0;; n++) {
        buf_reset(&q);
        if (kc_list_query(&q, ro, cont, paged)) {
            rc = kc_query_error(err, "GET", path);
            goto out;
        }
        rc = call(c, "GET", path, buf_str(&q), NULL, NULL, 0, 1, &page, err);
        if (rc)
            goto out;
        if (!json_object_is_type(page, json_type_object)) {
            kube_error_set(err, KERR_DECODE, "LIST response is not an object");
            rc = err->code;
            goto out;
        }
        const char *next = JSONX_STR_AT(page, "metadata", "continue");
        if (fn(page, user) != 0 || !next || !*next)
            goto out;
        if ((cont && strcmp(cont, next) == 0) || n + 1 >= MAX_LIST_PAGES) {
            kube_error_set(err, KERR_DECODE, "LIST does not end: continue token repeats");
            rc = err->code;
            goto out;
        }
        free(cont);
        cont = strdup(next);
        json_object_put(page);
        page = NULL;
        if (!cont) {
            kube_error_set(err, KERR_CONFIG, "out of memory");
            rc = err->code;
            goto out;
        }
    }
out:
    json_object_put(page);
    free(cont);
    buf_free(&q);
    return rc;
}

int kube_client_list(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                     kube_list_page_fn fn, void *user, kube_error_t *err)
{
    kube_error_t local;
    return list_pages(c, path, ro, 1, fn, user, err ? err : &local);
}

int kc_collect_page(json_object *page, void *user)
{
    collect_t *col = user;
    json_object *items;
    if (json_object_object_get_ex(page, "items", &items) &&
        json_object_is_type(items, json_type_array)) {
        size_t n = json_object_array_length(items);
        for (size_t i = 0; i < n; i++) {
            json_object *it = json_object_array_get_idx(items, i);
            if (json_object_array_add(col->items, json_object_get(it))) {
                json_object_put(it);
                col->failed = 1;
                return 1;
            }
        }
    }
    const char *rv = JSONX_STR_AT(page, "metadata", "resourceVersion");
    free(col->rv);
    col->rv = strdup(rv ? rv : "");
    if (!col->rv) {
        col->failed = 1;
        return 1;
    }
    return 0;
}

int kube_client_list_all(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                         json_object **items, char **rv, kube_error_t *err)
{
    kube_error_t local;
    if (!err)
        err = &local;
    *items = NULL;
    *rv = NULL;
    collect_t col = {json_object_new_array(), NULL, 0};
    int rc;
    if (!col.items) {
        kube_error_set(err, KERR_CONFIG, "out of memory");
        rc = err->code;
        goto out;
    }
    rc = list_pages(c, path, ro, 1, kc_collect_page, &col, err);
    if (rc == KERR_GONE && ro && ro->limit > 0 && json_object_array_length(col.items) > 0) {
        /* The continue token expired mid-way: start again, unpaged. */
        rlog_info("continue token expired; listing again without paging", "path", path);
        json_object_put(col.items);
        free(col.rv);
        col.rv = NULL;
        col.items = json_object_new_array();
        if (!col.items) {
            kube_error_set(err, KERR_CONFIG, "out of memory");
            rc = err->code;
            goto out;
        }
        rc = list_pages(c, path, ro, 0, kc_collect_page, &col, err);
    }
    if (rc == 0 && (col.failed || !col.rv)) {
        kube_error_set(err, KERR_CONFIG, "out of memory collecting LIST items");
        rc = err->code;
    }
    if (rc)
        goto out;
    *items = col.items;
    *rv = col.rv;
    col.items = NULL;
    col.rv = NULL;
out:
    json_object_put(col.items);
    free(col.rv);
    return rc;
}

/* Serialise body and send it with method. */
static int send_json(kube_client_t *c, const char *method, const char *path, const char *query,
                     const char *content_type, json_object *body, int idempotent,
                     json_object **out, kube_error_t *err)
{
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!text)
        return early_error(err, method, path, "cannot serialise the request body");
    return call(c, method, path, query, content_type, text, len, idempotent, out, err);
}

/* A JSON body sent with method (POST or PUT) and ro's query: kube_client_create and
 * kube_client_update. */
static int send_object(kube_client_t *c, const char *method, const char *path, json_object *body,
                       int idempotent, const kube_req_opts_t *ro, json_object **out,
                       kube_error_t *err)
{
    buf_t q;
    buf_init(&q, 64 << 10);
    int rc = write_query(&q, ro)
                 ? kc_query_error(err, method, path)
                 : send_json(c, method, path, buf_str(&q), "application/json", body, idempotent,
                             out, err);
    buf_free(&q);
    return rc;
}

int kube_client_create(kube_client_t *c, const char *path, json_object *body,
                       const kube_req_opts_t *ro, json_object **out, kube_error_t *err)
{
    return send_object(c, "POST", path, body, 0, ro, out, err);
}

int kube_client_update(kube_client_t *c, const char *path, json_object *body,
                       const kube_req_opts_t *ro, json_object **out, kube_error_t *err)
{
    return send_object(c, "PUT", path, body, 1, ro, out, err);
}

int kube_client_patch(kube_client_t *c, const char *path, kube_patch_type_t type,
                      json_object *patch, const kube_req_opts_t *ro, json_object **out,
                      kube_error_t *err)
{
    static const char *const content_types[] = {
        [KUBE_PATCH_MERGE] = "application/merge-patch+json",
        [KUBE_PATCH_JSON] = "application/json-patch+json",
        [KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
        [KUBE_PATCH_APPLY] = "application/apply-patch+yaml",
    };
    kube_error_t local;
    if (!err)
        err = &local;
    if (out)
        *out = NULL;
    buf_t q;
    buf_init(&q, 64 << 10);
    int rc;
    if ((unsigned)type > KUBE_PATCH_APPLY) {
        rc = early_error(err, "PATCH", path, "unknown patch type");
        goto out;
    }
    if (type == KUBE_PATCH_APPLY && (!ro || !ro->field_manager || !*ro->field_manager)) {
        rc = early_error(err, "PATCH", path, "server-side apply needs a field manager");
        goto out;
    }
    if (write_query(&q, ro) ||
        (type == KUBE_PATCH_APPLY && kc_query_add(&q, "force", ro->force ? "true" : "false"))) {
        rc = kc_query_error(err, "PATCH", path);
        goto out;
    }
    /* Apply is declarative and safe to repeat; the other patch types may not be
     * (a JSON patch "add" to a list). */
    rc = send_json(c, "PATCH", path, buf_str(&q), content_types[type], patch,
                   type == KUBE_PATCH_APPLY, out, err);
out:
    buf_free(&q);
    return rc;
}

/* DeleteOptions for ro; NULL when out of memory. */
static json_object *delete_options(const kube_req_opts_t *ro)
{
    static const char *const policies[] = {NULL, "Foreground", "Background", "Orphan"};
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    int bad = json_object_object_add(o, "kind", json_object_new_string("DeleteOptions")) ||
              json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    if (ro && ro->propagation > KUBE_PROPAGATION_DEFAULT &&
        ro->propagation <= KUBE_PROPAGATION_ORPHAN)
        bad |= json_object_object_add(o, "propagationPolicy",
                                      json_object_new_string(policies[ro->propagation]));
    if (ro && ((ro->precondition_uid && *ro->precondition_uid) ||
               (ro->precondition_rv && *ro->precondition_rv))) {
        json_object *pre = json_object_new_object();
        bad |= json_object_object_add(o, "preconditions", pre);
        if (ro->precondition_uid && *ro->precondition_uid)
            bad |= json_object_object_add(pre, "uid",
                                          json_object_new_string(ro->precondition_uid));
        if (ro->precondition_rv && *ro->precondition_rv)
            bad |= json_object_object_add(pre, "resourceVersion",
                                          json_object_new_string(ro->precondition_rv));
    }
    if (ro && ro->has_grace_period)
        bad |= json_object_object_add(o, "gracePeriodSeconds",
                                      json_object_new_int64(ro->grace_period_seconds));
    if (bad) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

int kube_client_delete(kube_client_t *c, const char *path, const kube_req_opts_t *ro,
                       json_object **out, kube_error_t *err)
{
    buf_t q;
    buf_init(&q, 64 << 10);
    json_object *body = delete_options(ro);
    int rc;
    if (!body) {
        rc = early_error(err, "DELETE", path, "out of memory building DeleteOptions");
        goto out;
    }
    if (ro && ro->dry_run && kc_query_add(&q, "dryRun", "All")) {
        rc = kc_query_error(err, "DELETE", path);
        goto out;
    }
    rc = send_json(c, "DELETE", path, buf_str(&q), "application/json", body, 1, out, err);
out:
    json_object_put(body);
    buf_free(&q);
    return rc;
}

/* ---- streams ------------------------------------------------------------------- */

/* Header callback of stream handles: a 401 status line tells kube_config that the
 * credential in the handle's ticket was refused. */
static size_t on_stream_header(char *data, size_t size, size_t n, void *user)
{
    cred_ticket_t *t = user;
    size_t len = size * n;
    /* "HTTP/1.1 401 ..." or "HTTP/2 401 ..." */
    if (len > 12 && strncmp(data, "HTTP/", 5) == 0) {
        t->retry_after_s = 0; /* a new response starts */
        const char *sp = memchr(data, ' ', len);
        if (sp && (size_t)(sp - data) + 4 <= len && strncmp(sp + 1, "401", 3) == 0 &&
            (size_t)(sp - data) + 4 < len && (sp[4] == ' ' || sp[4] == '\r'))
            kube_config_credentials_rejected(t->client->cfg, t->gen);
    } else {
        kube_retry_parse_after(data, len, &t->retry_after_s);
    }
    return len;
}

int64_t kc_stream_retry_after(const struct curl_slist *headers)
{
    return headers ? ((const cred_ticket_t *)headers)->retry_after_s : 0;
}

uint64_t kc_stream_credential(const struct curl_slist *headers)
{
    return headers ? ((const cred_ticket_t *)headers)->gen : 0;
}

CURL *kube_client_stream_handle(kube_client_t *c, const char *path, const char *query,
                                int64_t deadline_ms, struct curl_slist **headers,
                                kube_error_t *err)
{
    kube_error_t local;
    if (!err)
        err = &local;
    kube_error_clear(err);
    kube_error_set_request(err, "GET", path);
    *headers = NULL;
    CURL *e = NULL;
    buf_t url;
    buf_init(&url, 1 << 20);
    const char *cert, *key;
    if (build_url(c, path, query, &url, err))
        goto fail;
    kube_error_set_request(err, "GET", buf_str(&url));
    uint64_t gen;
    *headers = build_headers(c, NULL, 1, &cert, &key, &gen, err);
    if (!*headers)
        goto fail;
    e = curl_easy_init();
    if (!e) {
        kube_error_set(err, KERR_CONFIG, "out of memory initialising curl");
        goto fail;
    }
    /* The URL is copied by curl; headers must live as long as the handle. */
    CURLcode rc = setup_handle(c, e, buf_str(&url), *headers, cert, key);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_stream_header);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)*headers);
    if (rc == CURLE_OK && deadline_ms > 0)
        rc = curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)deadline_ms);
    if (rc != CURLE_OK) {
        kube_error_set_transport(err, rc, 0, curl_easy_strerror(rc), "setting up the handle");
        goto fail;
    }
    buf_free(&url);
    return e;
fail:
    if (e)
        curl_easy_cleanup(e);
    curl_slist_free_all(*headers);
    *headers = NULL;
    buf_free(&url);
    return NULL;
}

CURL *kube_client_watch_handle(kube_client_t *c, const char *path,
                               const kube_req_opts_t *ro, struct curl_slist **headers,
                               kube_error_t *err)
{
    buf_t q;
    buf_init(&q, 64 << 10);
    CURL *e = NULL;
    *headers = NULL;
    int bad = kc_query_add(&q, "watch", "1");
    if (ro) {
        bad |= kc_query_add(&q, "labelSelector", ro->label_selector);
        bad |= kc_query_add(&q, "fieldSelector", ro->field_selector);
        bad |= kc_query_add(&q, "resourceVersion", ro->resource_version);
        if (ro->allow_watch_bookmarks)
            bad |= kc_query_add(&q, "allowWatchBookmarks", "true");
        if (ro->timeout_seconds > 0)
            bad |= kc_query_add_long(&q, "timeoutSeconds", ro->timeout_seconds);
    }
    if (bad) {
        kc_query_error(err, "GET", path);
        goto out;
    }
    int64_t deadline_ms = 0;
    if (ro && ro->timeout_seconds > 0)
        deadline_ms = ((int64_t)ro->timeout_seconds + WATCH_DEADLINE_MARGIN_S) * 1000;
    e = kube_client_stream_handle(c, path, buf_str(&q), deadline_ms, headers, err);
    if (e && ro && ro->metadata_only && kube_client_stream_accept(*headers, KUBE_ACCEPT_METADATA)) {
        kube_error_set(err, KERR_CONFIG, "out of memory setting the metadata-only Accept header");
        curl_easy_cleanup(e);
        curl_slist_free_all(*headers);
        *headers = NULL;
        e = NULL;
    }
out:
    buf_free(&q);
    return e;
}

int kube_client_stream_accept(struct curl_slist *headers, const char *accept)
{
    for (struct curl_slist *l = headers; l; l = l->next) {
        if (strncasecmp(l->data, "Accept:", 7))
            continue;
        char *d = strdup(accept);
        if (!d)
            return -1;
        free(l->data); /* curl_slist_free_all frees it with free() too */
        l->data = d;
        return 0;
    }
    return -1;
}

void kube_client_count_request(kube_client_t *c, const char *method, CURLcode code,
                               long http_status, int64_t started_mono_ns)
{
    char label[16];
    status_label(code, (int)http_status, label, sizeof(label));
    metric_counter_add(c->m_requests, METRIC_LABELS(label, method, c->host), 1);
    metric_histogram_observe(c->m_duration, METRIC_LABELS(method, c->host),
                             (double)(clock_mono_ns() - started_mono_ns) / 1e9);
    c->stats.requests++;
}

void kube_client_set_deadline(kube_client_t *c, int64_t deadline_mono_ns)
{
    c->call_deadline_ns = deadline_mono_ns > 0 ? deadline_mono_ns : 0;
}

