/* Unit tests for kube_client against an in-process fake API server (libmicrohttpd on
 * 127.0.0.1, an ephemeral port, a thread per connection), over plain HTTP and HTTPS
 * with a CA and server certificate generated here with OpenSSL.
 *
 * Time: retries and limiter waits use a fake clock (kube_client_set_clock) so nothing
 * waits for real except the one timeout test. */
#include "buf.h"
#include "clock.h"
#include "cu_curl.h"
#include "cu_table.h"
#include "fake_clock.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_config_internal.h"
#include "log.h"
#include "loopback.h"
#include "metrics.h"
#include "watch.h"

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <dlfcn.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the fake API server ------------------------------------------------------- */

#define MAX_REQS 64

typedef struct {
    char method[16];
    char path[512];
    char query[2048]; /* decoded k=v pairs joined with & in arrival order */
    char auth[512];
    char ua[128];
    char accept[128];
    char ctype[128];
    char host[128];
    char imp[1024];   /* Impersonate-* headers as "Name: value|..." in arrival order */
    char body[16384];
    size_t body_len;
    int client_certs; /* certificates the TLS client presented; -1 = unknown */
} fake_req_t;

typedef struct {
    int status;
    char body[65536];
    const char *retry_after; /* header value or NULL */
    int delay_ms;            /* wait before answering */
} fake_resp_t;

typedef struct fake fake_t;
typedef void (*fake_handler_fn)(fake_t *f, const fake_req_t *req, int n, fake_resp_t *out);

struct fake {
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    fake_req_t reqs[MAX_REQS];
    int nreqs;
    int connections;
    int tls;
    fake_handler_fn handler; /* NULL: every answer is 200 with body */
    const char *body;        /* the answer's body before the handler; NULL: "{}" */
};

/* How many certificates the client presented. gnutls is already loaded by libmicrohttpd;
 * look the function up at run time rather than link the test against it. */
/* A wall clock that stands still (kube_config's exec backoff, in whole seconds). */
static int64_t frozen_wall_s(void)
{
    return INT64_C(1764590400);
}

static int peer_certs(struct MHD_Connection *conn)
{
    typedef const void *(*get_peers_fn)(void *session, unsigned *n);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    void *sym = dlsym(RTLD_DEFAULT, "gnutls_certificate_get_peers");
    if (!ci || !sym)
        return -1;
    get_peers_fn get_peers;
    memcpy(&get_peers, &sym, sizeof(get_peers));
    unsigned n = 0;
    if (!get_peers(ci->tls_session, &n))
        return 0;
    return (int)n;
}

typedef struct {
    fake_req_t req;
    int overflow;
} conn_state_t;

static const char *lookup(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *k)
{
    const char *v = MHD_lookup_connection_value(c, kind, k);
    return v ? v : "";
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    fake_req_t *r = cls;
    size_t off = strlen(r->query);
    snprintf(r->query + off, sizeof(r->query) - off, "%s%s=%s", off ? "&" : "", key,
             value ? value : "");
    return MHD_YES;
}

static enum MHD_Result collect_imp(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    fake_req_t *r = cls;
    if (strncasecmp(key, "Impersonate-", 12) != 0)
        return MHD_YES;
    size_t off = strlen(r->imp);
    snprintf(r->imp + off, sizeof(r->imp) - off, "%s%s: %s", off ? "|" : "", key,
             value ? value : "");
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    fake_t *f = cls;
    conn_state_t *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof(*st));
        snprintf(st->req.method, sizeof(st->req.method), "%s", method);
        snprintf(st->req.path, sizeof(st->req.path), "%s", url);
        *con_cls = st;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t room = sizeof(st->req.body) - 1 - st->req.body_len;
        size_t n = *upload_size < room ? *upload_size : room;
        memcpy(st->req.body + st->req.body_len, upload, n);
        st->req.body_len += n;
        *upload_size = 0;
        return MHD_YES;
    }
    fake_req_t *r = &st->req;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, r);
    snprintf(r->auth, sizeof(r->auth), "%s", lookup(conn, MHD_HEADER_KIND, "Authorization"));
    snprintf(r->ua, sizeof(r->ua), "%s", lookup(conn, MHD_HEADER_KIND, "User-Agent"));
    snprintf(r->accept, sizeof(r->accept), "%s", lookup(conn, MHD_HEADER_KIND, "Accept"));
    snprintf(r->ctype, sizeof(r->ctype), "%s", lookup(conn, MHD_HEADER_KIND, "Content-Type"));
    snprintf(r->host, sizeof(r->host), "%s", lookup(conn, MHD_HEADER_KIND, "Host"));
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_imp, r);
    r->client_certs = f->tls ? peer_certs(conn) : -1;

    pthread_mutex_lock(&f->mu);
    int n = f->nreqs;
    if (f->nreqs < MAX_REQS)
        f->reqs[f->nreqs++] = *r;
    pthread_mutex_unlock(&f->mu);

    fake_resp_t *out = calloc(1, sizeof(*out));
    out->status = 200;
    snprintf(out->body, sizeof(out->body), "%s", f->body ? f->body : "{}");
    if (f->handler)
        f->handler(f, r, n, out);
    if (out->delay_ms) {
        struct timespec ts = {out->delay_ms / 1000, (long)(out->delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(out->body), out->body,
                                                                MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (out->retry_after)
        MHD_add_response_header(resp, "Retry-After", out->retry_after);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)out->status, resp);
    MHD_destroy_response(resp);
    free(out);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)conn;
    (void)socket_context;
    fake_t *f = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        pthread_mutex_lock(&f->mu);
        f->connections++;
        pthread_mutex_unlock(&f->mu);
    }
}

/* Start a fake server; with key/cert PEM it speaks HTTPS and asks clients for a
 * certificate issued by trust_pem. */
static fake_t *fake_start_tls(fake_handler_fn handler, const char *key_pem,
                              const char *cert_pem, const char *trust_pem)
{
    fake_t *f = calloc(1, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    f->handler = handler;
    struct sockaddr_in sa = loopback_any_port();
    /* No MHD_USE_ERROR_LOG: the TLS tests abort handshakes on purpose. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
    if (key_pem) {
        flags |= MHD_USE_TLS;
        f->tls = 1;
        f->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, f, MHD_OPTION_SOCK_ADDR, &sa,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                                MHD_OPTION_NOTIFY_CONNECTION, on_connection, f,
                                MHD_OPTION_HTTPS_MEM_KEY, key_pem, MHD_OPTION_HTTPS_MEM_CERT,
                                cert_pem, MHD_OPTION_HTTPS_MEM_TRUST, trust_pem,
                                MHD_OPTION_END);
    } else {
        f->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, f, MHD_OPTION_SOCK_ADDR, &sa,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                                MHD_OPTION_NOTIFY_CONNECTION, on_connection, f,
                                MHD_OPTION_END);
    }
    if (!f->d) {
        free(f);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    f->port = info ? info->port : 0;
    return f;
}

static fake_t *fake_start(fake_handler_fn handler, const char *key_pem, const char *cert_pem)
{
    return fake_start_tls(handler, key_pem, cert_pem, NULL);
}

static void fake_stop(fake_t **fp)
{
    fake_t *f = *fp;
    if (!f)
        return;
    MHD_stop_daemon(f->d);
    pthread_mutex_destroy(&f->mu);
    free(f);
    *fp = NULL;
}

static int fake_nreqs(fake_t *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->nreqs;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static int fake_connections(fake_t *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->connections;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* ---- client helpers ------------------------------------------------------------ */

static const char TOKEN[] = "test-token-0123456789";

/* A kubeconfig for the fake server. extra_cluster / extra_user: more lines under
 * cluster: / user:. */
static kube_config_t *make_config_ex(const char *scheme, int port, const char *extra_cluster,
                                     const char *extra_user)
{
    char yaml[32768];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\n"
             "kind: Config\n"
             "clusters:\n"
             "- name: fake\n"
             "  cluster:\n"
             "    server: %s://127.0.0.1:%d\n"
             "%s"
             "contexts:\n"
             "- name: fake\n"
             "  context: {cluster: fake, user: u, namespace: default}\n"
             "current-context: fake\n"
             "users:\n"
             "- name: u\n"
             "  user:\n"
             "    token: %s\n"
             "%s",
             scheme, port, extra_cluster ? extra_cluster : "", TOKEN,
             extra_user ? extra_user : "");
    kube_config_t *cfg = NULL;
    char err[512];
    if (kube_config_load_buffer(yaml, strlen(yaml), "test-kubeconfig", NULL, &cfg, err,
                                sizeof(err))) {
        fprintf(stderr, "kubeconfig: %s\n", err);
        return NULL;
    }
    return cfg;
}

static kube_config_t *make_config(const char *scheme, int port, const char *extra_cluster)
{
    return make_config_ex(scheme, port, extra_cluster, NULL);
}

/* Client options for the tests: the defaults without the rate limit (qps 0). */
static kube_client_opts_t unlimited_opts(void)
{
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 0;
    return o;
}

typedef struct {
    fake_t *srv;
    kube_config_t *cfg;
    kube_client_t *c;
    fake_clock_t clk;
} env_t;

static int env_open(env_t *e, fake_handler_fn h, const kube_client_opts_t *opts)
{
    memset(e, 0, sizeof(*e));
    e->srv = fake_start(h, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->srv);
    e->cfg = make_config("http", e->srv->port, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->cfg);
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.user_agent = "informerd/0.1.0";
    o.qps = 0; /* unlimited unless a test says otherwise */
    if (opts)
        o = *opts;
    kube_error_t err;
    e->c = kube_client_new(e->cfg, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e->c);
    e->clk.now = 1000 * NS_PER_SEC;
    kube_client_clock_t clk = {fc_now, fc_sleep, &e->clk};
    kube_client_set_clock(e->c, &clk);
    return 0;
}

/* env_open with a server that answers every request 200 with body. */
static int env_open_body(env_t *e, const char *body, const kube_client_opts_t *opts)
{
    env_open(e, NULL, opts);
    e->srv->body = body;
    return 0;
}

static void env_close(env_t *e)
{
    kube_client_destroy(&e->c);
    CU_ASSERT_PTR_NULL(e->c);
    kube_config_destroy(&e->cfg);
    fake_stop(&e->srv);
}

static const char *jstr(json_object *o, const char *path)
{
    /* "a.b.c" lookup for assertions. */
    char key[128];
    const char *p = path;
    while (o && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v))
            return NULL;
        o = v;
        p = dot ? dot + 1 : p + n;
    }
    return o ? json_object_get_string(o) : NULL;
}

static double counter(const char *name, const char *const *labels)
{
    metrics_registry_t *reg = metrics_default();
    metric_family_t *f = NULL;
    if (strstr(name, "seconds"))
        f = metrics_histogram(reg, name, "", "verb,host", NULL, 0);
    else if (strcmp(name, "rest_client_requests_total") == 0)
        f = metrics_counter(reg, name, "", "code,method,host");
    else
        f = metrics_counter(reg, name, "", "code,verb,host");
    return metric_value(f, labels);
}

/* Process-wide set-up around the suite: curl's globals, and only errors in the log. */
static int suite_init(void)
{
    rlog_init("test_kube_client", RLOG_ERROR, RLOG_TEXT, NULL);
    return cu_curl_init();
}

static int suite_clean(void)
{
    metrics_default_free();
    return cu_curl_clean();
}

CU_HOOKS({"kube_client", suite_init, suite_clean, NULL, NULL});

/* ---- tests: paths -------------------------------------------------------------- */

static void test_path_builder(void)
{
    buf_t b;
    buf_init(&b, 0);
    CU_ASSERT_EQUAL(kube_path(&b, "", "v1", "default", "configmaps", "x", NULL), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "/api/v1/namespaces/default/configmaps/x");
    buf_reset(&b);
    CU_ASSERT_EQUAL(kube_path(&b, NULL, "v1", NULL, "namespaces", NULL, NULL), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "/api/v1/namespaces");
    buf_reset(&b);
    CU_ASSERT_EQUAL(kube_path(&b, "apps", "v1", "prod", "statefulsets", "cache", "scale"), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "/apis/apps/v1/namespaces/prod/statefulsets/cache/scale");
    buf_reset(&b);
    CU_ASSERT_EQUAL(kube_path(&b, "cache.example.com", "v1alpha1", "default", "redisclusters",
                              "c", "status"),
                    0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b),
                           "/apis/cache.example.com/v1alpha1/namespaces/default/"
                           "redisclusters/c/status");
    buf_reset(&b);
    CU_ASSERT_EQUAL(kube_path(&b, "rbac.authorization.k8s.io", "v1", NULL, "clusterroles",
                              "system:controller:x y/z", NULL),
                    0);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "/apis/rbac.authorization.k8s.io/v1/clusterroles/"
                                        "system%3Acontroller%3Ax%20y%2Fz");
    /* Refusals leave the buffer as it was. */
    buf_reset(&b);
    buf_puts(&b, "keep");
    CU_ASSERT_EQUAL(kube_path(&b, "", "v1", "default", "configmaps", "..", NULL), -1);
    CU_ASSERT_EQUAL(kube_path(&b, "", "v1", "", "configmaps", NULL, NULL), -1);
    CU_ASSERT_EQUAL(kube_path(&b, "", NULL, NULL, "configmaps", NULL, NULL), -1);
    CU_ASSERT_EQUAL(kube_path(&b, "", "v1", NULL, "", NULL, NULL), -1);
    CU_ASSERT_EQUAL(kube_path(&b, "", "v1", NULL, "pods", ".", NULL), -1);
    CU_ASSERT_STRING_EQUAL(buf_str(&b), "keep");
    buf_free(&b);
}

/* ---- tests: verbs -------------------------------------------------------------- */

static void h_echo(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    (void)f;
    (void)n;
    if (strcmp(r->method, "POST") == 0)
        out->status = 201;
    snprintf(out->body, sizeof(out->body),
             "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\","
             "\"namespace\":\"default\",\"resourceVersion\":\"77\"},\"data\":{\"path\":\"%s\"}}",
             r->path);
}

static void test_get(void)
{
    env_t e;
    env_open(&e, h_echo, NULL);
    json_object *obj = NULL;
    kube_error_t err;
    kube_req_opts_t ro = {0};
    ro.resource_version = "0";
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces/default/configmaps/x", &ro, &obj,
                                    &err),
                    0);
    CU_ASSERT_EQUAL(err.code, KERR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(obj);
    CU_ASSERT_STRING_EQUAL(jstr(obj, "metadata.resourceVersion"), "77");
    json_object_put(obj);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 1);
    fake_req_t *r = &e.srv->reqs[0];
    CU_ASSERT_STRING_EQUAL(r->method, "GET");
    CU_ASSERT_STRING_EQUAL(r->path, "/api/v1/namespaces/default/configmaps/x");
    CU_ASSERT_STRING_EQUAL(r->query, "resourceVersion=0");
    char want[128];
    snprintf(want, sizeof(want), "Bearer %s", TOKEN);
    CU_ASSERT_STRING_EQUAL(r->auth, want);
    CU_ASSERT_STRING_EQUAL(r->ua, "informerd/0.1.0");
    CU_ASSERT_STRING_EQUAL(r->accept, "application/json");
    CU_ASSERT_EQUAL(r->body_len, 0);
    /* out may be NULL: the body is then just checked for success. */
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces", NULL, NULL, NULL), 0);
    /* A path without '/' is refused before anything is sent. */
    CU_ASSERT_EQUAL(kube_client_get(e.c, "api/v1/pods", NULL, &obj, &err), KERR_CONFIG);
    CU_ASSERT_PTR_NULL(obj);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 2);
    env_close(&e);
}

/* A caller's deadline (fencing) bounds the request: past it nothing is sent at all. */
static void test_deadline(void)
{
    env_t e;
    env_open(&e, h_echo, NULL);
    kube_error_t err;
    kube_client_set_deadline(e.c, e.clk.now - NS_PER_MS); /* the client's (fake) clock */
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces/default/configmaps/x", NULL, NULL,
                                    &err),
                    KERR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "deadline"));
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 0);
    /* A deadline in the future lets it through; 0 removes the bound. */
    kube_client_set_deadline(e.c, e.clk.now + 10 * NS_PER_SEC);
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces/default/configmaps/x", NULL, NULL,
                                    &err),
                    0);
    kube_client_set_deadline(e.c, 0);
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces/default/configmaps/x", NULL, NULL,
                                    &err),
                    0);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 2);
    env_close(&e);
}

static void test_create_update(void)
{
    env_t e;
    env_open(&e, h_echo, NULL);
    json_object *body = json_tokener_parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"},"
        "\"data\":{\"url\":\"http://a/b\"}}");
    json_object *out = NULL;
    kube_error_t err;
    kube_req_opts_t ro = {0};
    ro.field_manager = "rdc-operator";
    ro.dry_run = 1;
    CU_ASSERT_EQUAL(kube_client_create(e.c, "/api/v1/namespaces/default/configmaps", body, &ro,
                                       &out, &err),
                    0);
    CU_ASSERT_PTR_NOT_NULL(out);
    json_object_put(out);
    CU_ASSERT_EQUAL(kube_client_update(e.c, "/api/v1/namespaces/default/configmaps/x/status",
                                       body, NULL, &out, &err),
                    0);
    CU_ASSERT_STRING_EQUAL(jstr(out, "data.path"), "/api/v1/namespaces/default/configmaps/x/status");
    json_object_put(out);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 2);
    fake_req_t *p = &e.srv->reqs[0], *u = &e.srv->reqs[1];
    CU_ASSERT_STRING_EQUAL(p->method, "POST");
    CU_ASSERT_STRING_EQUAL(p->path, "/api/v1/namespaces/default/configmaps");
    CU_ASSERT_STRING_EQUAL(p->query, "fieldManager=rdc-operator&dryRun=All");
    CU_ASSERT_STRING_EQUAL(p->ctype, "application/json");
    /* Plain JSON, slashes unescaped. */
    CU_ASSERT_STRING_EQUAL(p->body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                                    "{\"name\":\"x\"},\"data\":{\"url\":\"http://a/b\"}}");
    CU_ASSERT_STRING_EQUAL(u->method, "PUT");
    CU_ASSERT_STRING_EQUAL(u->query, "");
    CU_ASSERT_STRING_EQUAL(u->body, p->body);
    json_object_put(body);
    env_close(&e);
}

static void test_patch(void)
{
    env_t e;
    env_open(&e, h_echo, NULL);
    kube_error_t err;
    json_object *apply = json_tokener_parse(
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"c\","
        "\"namespace\":\"default\"},\"spec\":{\"replicas\":3}}");
    kube_req_opts_t ro = {0};
    ro.field_manager = "rdc";
    ro.force = 1;
    const char *path = "/apis/apps/v1/namespaces/default/statefulsets/c";
    json_object *out = NULL;
    CU_ASSERT_EQUAL(kube_client_patch(e.c, path, KUBE_PATCH_APPLY, apply, &ro, &out, &err), 0);
    CU_ASSERT_PTR_NOT_NULL(out);
    json_object_put(out);
    ro.force = 0;
    CU_ASSERT_EQUAL(kube_client_patch(e.c, path, KUBE_PATCH_APPLY, apply, &ro, NULL, &err), 0);
    json_object *merge = json_tokener_parse("{\"spec\":{\"replicas\":5}}");
    CU_ASSERT_EQUAL(kube_client_patch(e.c, path, KUBE_PATCH_MERGE, merge, NULL, NULL, &err), 0);
    json_object *jp = json_tokener_parse(
        "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":4}]");
    CU_ASSERT_EQUAL(kube_client_patch(e.c, "/apis/apps/v1/namespaces/default/statefulsets/c/scale",
                                      KUBE_PATCH_JSON, jp, NULL, NULL, &err),
                    0);
    CU_ASSERT_EQUAL(kube_client_patch(e.c, path, KUBE_PATCH_STRATEGIC, merge, NULL, NULL, &err),
                    0);
    /* Apply without a field manager is refused locally. */
    CU_ASSERT_EQUAL(kube_client_patch(e.c, path, KUBE_PATCH_APPLY, apply, NULL, NULL, &err),
                    KERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "field manager"));

    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 5);
    fake_req_t *r = e.srv->reqs;
    for (int i = 0; i < 5; i++)
        CU_ASSERT_STRING_EQUAL(r[i].method, "PATCH");
    CU_ASSERT_STRING_EQUAL(r[0].ctype, "application/apply-patch+yaml");
    CU_ASSERT_STRING_EQUAL(r[0].query, "fieldManager=rdc&force=true");
    CU_ASSERT_STRING_EQUAL(r[0].body, json_object_to_json_string_ext(
                                          apply, JSON_C_TO_STRING_PLAIN |
                                                     JSON_C_TO_STRING_NOSLASHESCAPE));
    CU_ASSERT_STRING_EQUAL(r[1].query, "fieldManager=rdc&force=false");
    CU_ASSERT_STRING_EQUAL(r[2].ctype, "application/merge-patch+json");
    CU_ASSERT_STRING_EQUAL(r[2].body, "{\"spec\":{\"replicas\":5}}");
    CU_ASSERT_STRING_EQUAL(r[3].ctype, "application/json-patch+json");
    CU_ASSERT_STRING_EQUAL(r[3].path, "/apis/apps/v1/namespaces/default/statefulsets/c/scale");
    CU_ASSERT_EQUAL(r[3].body[0], '[');
    CU_ASSERT_STRING_EQUAL(r[4].ctype, "application/strategic-merge-patch+json");
    json_object_put(apply);
    json_object_put(merge);
    json_object_put(jp);
    env_close(&e);
}

/* The Status a DELETE answers with. */
static const char DELETE_STATUS[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\","
    "\"details\":{\"name\":\"x\",\"kind\":\"configmaps\",\"uid\":\"u-1\"}}";

static void test_delete(void)
{
    env_t e;
    env_open_body(&e, DELETE_STATUS, NULL);
    kube_req_opts_t ro = {0};
    ro.propagation = KUBE_PROPAGATION_FOREGROUND;
    ro.precondition_uid = "u-1";
    ro.precondition_rv = "42";
    ro.has_grace_period = 1;
    ro.grace_period_seconds = 0;
    json_object *out = NULL;
    kube_error_t err;
    CU_ASSERT_EQUAL(kube_client_delete(e.c, "/api/v1/namespaces/default/configmaps/x", &ro, &out,
                                       &err),
                    0);
    CU_ASSERT_STRING_EQUAL(jstr(out, "status"), "Success");
    json_object_put(out);
    ro = (kube_req_opts_t){0};
    ro.propagation = KUBE_PROPAGATION_ORPHAN;
    ro.dry_run = 1;
    CU_ASSERT_EQUAL(kube_client_delete(e.c, "/api/v1/namespaces/default/configmaps/y", &ro, NULL,
                                       NULL),
                    0);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 2);
    fake_req_t *r = e.srv->reqs;
    CU_ASSERT_STRING_EQUAL(r[0].method, "DELETE");
    CU_ASSERT_STRING_EQUAL(r[0].ctype, "application/json");
    json_object *b = json_tokener_parse(r[0].body);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(jstr(b, "kind"), "DeleteOptions");
    CU_ASSERT_STRING_EQUAL(jstr(b, "propagationPolicy"), "Foreground");
    CU_ASSERT_STRING_EQUAL(jstr(b, "preconditions.uid"), "u-1");
    CU_ASSERT_STRING_EQUAL(jstr(b, "preconditions.resourceVersion"), "42");
    CU_ASSERT_STRING_EQUAL(jstr(b, "gracePeriodSeconds"), "0");
    json_object_put(b);
    b = json_tokener_parse(r[1].body);
    CU_ASSERT_STRING_EQUAL(jstr(b, "propagationPolicy"), "Orphan");
    CU_ASSERT_PTR_NULL(jstr(b, "preconditions"));
    CU_ASSERT_STRING_EQUAL(r[1].query, "dryRun=All");
    json_object_put(b);
    env_close(&e);
}

/* ---- tests: LIST --------------------------------------------------------------- */

/* Three pages of 2, 2 and 1 items; the continue token says which page is next. */
static void h_pages(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    (void)f;
    (void)n;
    int page = 0;
    const char *c = strstr(r->query, "continue=");
    if (c)
        page = c[strlen("continue=tok")] - '0';
    const char *next[] = {"tok1", "tok2", ""};
    int first = page * 2;
    int count = page == 2 ? 1 : 2;
    size_t off = (size_t)snprintf(out->body, sizeof(out->body),
                                  "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
                                  "\"metadata\":{\"resourceVersion\":\"500\"%s%s%s},"
                                  "\"items\":[",
                                  *next[page] ? ",\"continue\":\"" : "", next[page],
                                  *next[page] ? "\"" : "");
    for (int i = 0; i < count; i++)
        off += (size_t)snprintf(out->body + off, sizeof(out->body) - off,
                                "%s{\"metadata\":{\"name\":\"cm%d\"}}", i ? "," : "",
                                first + i);
    snprintf(out->body + off, sizeof(out->body) - off, "]}");
}

static int count_page(json_object *page, void *user)
{
    int *pages = user;
    (*pages)++;
    CU_ASSERT_STRING_EQUAL(jstr(page, "kind"), "ConfigMapList");
    return 0;
}

static int stop_first(json_object *page, void *user)
{
    (void)page;
    (*(int *)user)++;
    return 1;
}

/* The list options h_pages expects: pages of 2 from the watch cache, with a selector. */
static kube_req_opts_t pages_opts(void)
{
    kube_req_opts_t ro = {0};
    ro.limit = 2;
    ro.label_selector = "app.kubernetes.io/managed-by=rdc";
    ro.resource_version = "0";
    ro.resource_version_match = "NotOlderThan";
    return ro;
}

static void test_list_pagination(void)
{
    env_t e;
    env_open(&e, h_pages, NULL);
    kube_req_opts_t ro = pages_opts();
    json_object *items = NULL;
    char *rv = NULL;
    kube_error_t err;
    CU_ASSERT_EQUAL(kube_client_list_all(e.c, "/api/v1/configmaps", &ro, &items, &rv, &err), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(items);
    CU_ASSERT_EQUAL(json_object_array_length(items), 5);
    for (int i = 0; i < 5; i++) {
        char want[16];
        snprintf(want, sizeof(want), "cm%d", i);
        CU_ASSERT_STRING_EQUAL(jstr(json_object_array_get_idx(items, (size_t)i), "metadata.name"),
                               want);
    }
    CU_ASSERT_STRING_EQUAL(rv, "500");
    json_object_put(items);
    free(rv);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 3);
    fake_req_t *r = e.srv->reqs;
    CU_ASSERT_STRING_EQUAL(r[0].query, "labelSelector=app.kubernetes.io/managed-by=rdc&limit=2&"
                                       "resourceVersion=0&resourceVersionMatch=NotOlderThan");
    /* Later pages: the continue token instead of resourceVersion. */
    CU_ASSERT_STRING_EQUAL(r[1].query, "labelSelector=app.kubernetes.io/managed-by=rdc&limit=2&"
                                       "continue=tok1");
    CU_ASSERT_STRING_EQUAL(r[2].query, "labelSelector=app.kubernetes.io/managed-by=rdc&limit=2&"
                                       "continue=tok2");
    /* Page callback form. */
    int pages = 0;
    CU_ASSERT_EQUAL(kube_client_list(e.c, "/api/v1/configmaps", &ro, count_page, &pages, &err), 0);
    CU_ASSERT_EQUAL(pages, 3);
    pages = 0;
    CU_ASSERT_EQUAL(kube_client_list(e.c, "/api/v1/configmaps", &ro, stop_first, &pages, &err), 0);
    CU_ASSERT_EQUAL(pages, 1);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 7);
    env_close(&e);
}

/* The continue token expires on page 2: the list starts over without paging. */
static void h_expired_continue(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    if (strstr(r->query, "continue=tok1")) {
        out->status = 410;
        snprintf(out->body, sizeof(out->body),
                 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                 "\"Failure\",\"message\":\"The provided continue parameter is too old to "
                 "display a consistent list result.\",\"reason\":\"Expired\",\"code\":410}");
        return;
    }
    if (!strstr(r->query, "limit=")) {
        snprintf(out->body, sizeof(out->body),
                 "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"900\"},"
                 "\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}},"
                 "{\"metadata\":{\"name\":\"c\"}}]}");
        return;
    }
    h_pages(f, r, n, out);
}

static void test_list_expired_continue(void)
{
    env_t e;
    env_open(&e, h_expired_continue, NULL);
    kube_req_opts_t ro = {0};
    ro.limit = 2;
    json_object *items = NULL;
    char *rv = NULL;
    kube_error_t err;
    CU_ASSERT_EQUAL(kube_client_list_all(e.c, "/api/v1/configmaps", &ro, &items, &rv, &err), 0);
    CU_ASSERT_EQUAL(json_object_array_length(items), 3);
    CU_ASSERT_STRING_EQUAL(rv, "900");
    json_object_put(items);
    free(rv);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 3);
    /* The page form reports the 410 (the caller relists). */
    int pages = 0;
    CU_ASSERT_EQUAL(kube_client_list(e.c, "/api/v1/configmaps", &ro, count_page, &pages, &err),
                    KERR_GONE);
    CU_ASSERT_EQUAL(pages, 1);
    env_close(&e);
}

static void h_404(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out);

/* Drive a pager to its end through a curl multi handle, as informerd's loop does.
 * Returns the last state; *pages counts the requests. */
static kube_pager_state_t run_pager(kube_pager_t *p, int *pages, kube_error_t *err)
{
    CURLM *m = curl_multi_init();
    kube_pager_state_t st = KUBE_PAGER_ERROR;
    for (*pages = 0; *pages < 20; (*pages)++) {
        CURL *h = kube_pager_start(p, err);
        if (!h)
            break;
        curl_multi_add_handle(m, h);
        int running = 1;
        CURLcode code = CURLE_OK;
        while (running) {
            curl_multi_perform(m, &running);
            if (running)
                curl_multi_poll(m, NULL, 0, 1000, NULL);
        }
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left)) != NULL)
            if (msg->msg == CURLMSG_DONE)
                code = msg->data.result;
        curl_multi_remove_handle(m, h);
        st = kube_pager_finish(p, code, err);
        if (st != KUBE_PAGER_MORE) {
            (*pages)++;
            break;
        }
    }
    curl_multi_cleanup(m);
    return st;
}

/* A pager for path with ro on e's client, driven to its end, which must be DONE; *pages
 * counts its requests. The caller destroys the pager. */
static kube_pager_t *pager_done(env_t *e, const char *path, const kube_req_opts_t *ro, int *pages)
{
    kube_pager_t *p = kube_pager_new(e->c, path, ro);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    kube_error_t err;
    CU_ASSERT_EQUAL_FATAL(run_pager(p, pages, &err), KUBE_PAGER_DONE);
    return p;
}

static void test_pager(void)
{
    env_t e;
    env_open(&e, h_pages, NULL);
    kube_req_opts_t ro = pages_opts();
    kube_pager_t *p = kube_pager_new(e.c, "/api/v1/configmaps", &ro);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    ro.label_selector = "changed-after"; /* the pager keeps its own copy */
    kube_error_t err;
    int pages = 0;
    CU_ASSERT_EQUAL(run_pager(p, &pages, &err), KUBE_PAGER_DONE);
    CU_ASSERT_EQUAL(pages, 3);
    json_object *items = kube_pager_items(p);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(items), 5);
    for (int i = 0; i < 5; i++) {
        char want[16];
        snprintf(want, sizeof(want), "cm%d", i);
        CU_ASSERT_STRING_EQUAL(jstr(json_object_array_get_idx(items, (size_t)i), "metadata.name"), want);
    }
    CU_ASSERT_STRING_EQUAL(kube_pager_rv(p), "500");
    kube_pager_destroy(&p);
    CU_ASSERT_PTR_NULL(p);
    /* The same requests as the blocking pager. */
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 3);
    fake_req_t *r = e.srv->reqs;
    CU_ASSERT_STRING_EQUAL(r[0].query, "labelSelector=app.kubernetes.io/managed-by=rdc&limit=2&"
                                       "resourceVersion=0&resourceVersionMatch=NotOlderThan");
    CU_ASSERT_STRING_EQUAL(r[1].query, "labelSelector=app.kubernetes.io/managed-by=rdc&limit=2&continue=tok1");
    CU_ASSERT_STRING_EQUAL(r[2].query, "labelSelector=app.kubernetes.io/managed-by=rdc&limit=2&continue=tok2");
    /* Counted like the client's own requests. */
    kube_client_stats_t st;
    kube_client_stats(e.c, &st);
    CU_ASSERT_EQUAL(st.requests, 3);
    env_close(&e);

    /* An expired continue token: one restart without paging. */
    env_open(&e, h_expired_continue, NULL);
    ro.label_selector = NULL;
    ro.resource_version = ro.resource_version_match = NULL;
    p = kube_pager_new(e.c, "/api/v1/configmaps", &ro);
    CU_ASSERT_EQUAL(run_pager(p, &pages, &err), KUBE_PAGER_DONE);
    CU_ASSERT_EQUAL(pages, 3);
    CU_ASSERT_EQUAL(json_object_array_length(kube_pager_items(p)), 3);
    CU_ASSERT_STRING_EQUAL(kube_pager_rv(p), "900");
    CU_ASSERT_PTR_NULL(strstr(e.srv->reqs[2].query, "limit="));
    kube_pager_destroy(&p);
    env_close(&e);

    /* A refusal is an error with the API's reason and the request. */
    env_open(&e, h_404, NULL);
    p = kube_pager_new(e.c, "/api/v1/namespaces/x/configmaps", &ro);
    CU_ASSERT_EQUAL(run_pager(p, &pages, &err), KUBE_PAGER_ERROR);
    CU_ASSERT_EQUAL(pages, 1);
    CU_ASSERT(kube_error_is_not_found(&err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.target, "/api/v1/namespaces/x/configmaps"));
    kube_pager_destroy(&p);
    env_close(&e);
}

/* Ten ConfigMaps of different sizes behind continue tokens "i<next index>": most are
 * small, cm4 is 3 kB, cm7 alone is 20 kB (over the 8 kB cap of the test) and cm8 1.5 kB.
 * The limit and the token decide the page, as on a real server; a metadata-only request
 * (PartialObjectMetadataList) gets the items without their data. */
#define BIG_ITEMS 10
static size_t big_item_size(int i)
{
    return i == 7 ? 20000 : i == 4 ? 3000 : i == 8 ? 1500 : 100;
}

static void h_big_pages(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    (void)f;
    (void)n;
    int first = 0, limit = BIG_ITEMS;
    const char *c = strstr(r->query, "continue=i");
    const char *l = strstr(r->query, "limit=");
    if (c)
        first = (int)strtol(c + strlen("continue=i"), NULL, 10);
    if (l)
        limit = (int)strtol(l + strlen("limit="), NULL, 10);
    int meta = strstr(r->accept, "as=PartialObjectMetadataList") != NULL;
    int end = first + limit < BIG_ITEMS ? first + limit : BIG_ITEMS;
    char next[32] = "";
    if (end < BIG_ITEMS)
        snprintf(next, sizeof(next), "i%d", end);
    size_t off = (size_t)snprintf(
        out->body, sizeof(out->body),
        "{\"kind\":\"%s\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"700\"%s%s%s},"
        "\"items\":[",
        meta ? "PartialObjectMetadataList" : "ConfigMapList", *next ? ",\"continue\":\"" : "", next, *next ? "\"" : "");
    for (int i = first; i < end && off < sizeof(out->body); i++) {
        off += (size_t)snprintf(out->body + off, sizeof(out->body) - off,
                                "%s{\"metadata\":{\"name\":\"cm%d\",\"resourceVersion\":\"%d\"}",
                                i > first ? "," : "", i, 100 + i);
        if (!meta && off + big_item_size(i) + 32 < sizeof(out->body)) {
            off += (size_t)snprintf(out->body + off, sizeof(out->body) - off, ",\"data\":{\"k\":\"");
            memset(out->body + off, 'x', big_item_size(i));
            off += big_item_size(i);
            off += (size_t)snprintf(out->body + off, sizeof(out->body) - off, "\"}");
        }
        off += (size_t)snprintf(out->body + off, sizeof(out->body) - off, "}");
    }
    if (off < sizeof(out->body))
        snprintf(out->body + off, sizeof(out->body) - off, "]}");
}

/* The limit of request i, from its query (0 when none). */
static long req_limit(fake_t *f, int i)
{
    const char *l = strstr(f->reqs[i].query, "limit=");
    return l ? strtol(l + strlen("limit="), NULL, 10) : 0;
}

static void test_pager_shrinks(void)
{
    kube_client_opts_t o = unlimited_opts();
    o.max_response_bytes = 8192;
    env_t e;
    env_open(&e, h_big_pages, &o);
    kube_req_opts_t ro = {.limit = 8};
    int pages = 0;
    kube_pager_t *p = pager_done(&e, "/api/v1/configmaps", &ro, &pages);
    /* Every item exactly once and in order, except cm7, which only its metadata names. */
    json_object *items = kube_pager_items(p);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(items), BIG_ITEMS - 1);
    for (int i = 0, k = 0; i < BIG_ITEMS; i++) {
        if (i == 7)
            continue;
        char want[16];
        snprintf(want, sizeof(want), "cm%d", i);
        json_object *it = json_object_array_get_idx(items, (size_t)k++);
        CU_ASSERT_STRING_EQUAL(jstr(it, "metadata.name"), want);
        CU_ASSERT_EQUAL(strlen(jstr(it, "data.k")), big_item_size(i));
    }
    json_object *skipped = kube_pager_take_skipped(p);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(skipped), 1);
    CU_ASSERT_STRING_EQUAL(jstr(json_object_array_get_idx(skipped, 0), "metadata.name"), "cm7");
    CU_ASSERT_STRING_EQUAL(jstr(json_object_array_get_idx(skipped, 0), "metadata.resourceVersion"), "107");
    CU_ASSERT_PTR_NULL(jstr(json_object_array_get_idx(skipped, 0), "data"));
    json_object_put(skipped);
    CU_ASSERT_STRING_EQUAL(kube_pager_rv(p), "700");
    /* The requests: limit 8 from the start is over the cap (cm4 + cm7), then 4 fits
     * (cm0..cm3) and, its items being small, the next page is 8 again: from cm4 it is
     * over, 4 (cm4..cm7) over, 2 (cm4, cm5) fits; those average 1.6 kB, so the next
     * page is asked at 3 (what fills 3/4 of the cap), not 4: cm6..cm8 over, 1 (cm6)
     * fits, 2 over, 1 over, the metadata of cm7, then 1 (cm8) and 2 (cm9). */
    static const long want_limits[] = {8, 4, 8, 4, 2, 3, 1, 2, 1, 1, 1, 2};
    size_t nwant = sizeof(want_limits) / sizeof(want_limits[0]);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), (int)nwant);
    CU_ASSERT_EQUAL(pages, (int)nwant);
    for (size_t i = 0; i < nwant; i++) {
        CU_ASSERT_EQUAL(req_limit(e.srv, (int)i), want_limits[i]);
        int meta = strstr(e.srv->reqs[i].accept, "PartialObjectMetadataList") != NULL;
        CU_ASSERT_EQUAL(meta, i == 9);
    }
    CU_ASSERT_EQUAL(kube_pager_shrinks(p), 6);
    CU_ASSERT_EQUAL(kube_pager_limit(p), 4); /* growing back */
    /* The metadata request kept the other headers (the token). */
    CU_ASSERT_PTR_NOT_NULL(strstr(e.srv->reqs[9].auth, TOKEN));
    kube_pager_destroy(&p);
    env_close(&e);

    /* Even the metadata of one object over the cap: an error naming the cap, not a loop. */
    o.max_response_bytes = 64;
    env_open(&e, h_big_pages, &o);
    p = kube_pager_new(e.c, "/api/v1/configmaps", &ro);
    kube_error_t err;
    CU_ASSERT_EQUAL(run_pager(p, &pages, &err), KUBE_PAGER_ERROR);
    CU_ASSERT_EQUAL(err.code, KERR_DECODE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "even for the metadata of one object"));
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 5); /* 8, 4, 2, 1, metadata */
    kube_pager_destroy(&p);
    env_close(&e);
}

/* A metadata-only LIST (ro.metadata_only): every page asked as PartialObjectMetadataList
 * with no fallback, the token kept, every item (cm7 too) in the items, without data. */
static void test_pager_metadata_only(void)
{
    kube_client_opts_t o = unlimited_opts();
    env_t e;
    env_open(&e, h_big_pages, &o);
    kube_req_opts_t ro = {.limit = 4, .metadata_only = 1};
    int pages = 0;
    kube_pager_t *p = pager_done(&e, "/api/v1/secrets", &ro, &pages);
    json_object *items = kube_pager_items(p);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(items), BIG_ITEMS);
    for (int i = 0; i < BIG_ITEMS; i++)
        CU_ASSERT_PTR_NULL(jstr(json_object_array_get_idx(items, (size_t)i), "data.k"));
    json_object *skipped = kube_pager_take_skipped(p);
    CU_ASSERT_EQUAL(json_object_array_length(skipped), 0);
    json_object_put(skipped);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 3);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL(e.srv->reqs[i].accept,
                               "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
        CU_ASSERT_PTR_NOT_NULL(strstr(e.srv->reqs[i].auth, TOKEN));
    }
    kube_pager_destroy(&p);
    env_close(&e);
}

/* A server that is not there: a transport error, no crash, no leak. */
static void test_pager_transport_error(void)
{
    kube_config_t *cfg = make_config("http", 1, NULL); /* port 1: refused */
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    kube_error_t err;
    kube_client_t *c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    kube_pager_t *p = kube_pager_new(c, "/api/v1/configmaps", NULL);
    int pages = 0;
    CU_ASSERT_EQUAL(run_pager(p, &pages, &err), KUBE_PAGER_ERROR);
    CU_ASSERT_EQUAL(err.code, KERR_TRANSPORT);
    /* finish without a page in flight is an error, not a crash. */
    CU_ASSERT_EQUAL(kube_pager_finish(p, CURLE_OK, &err), KUBE_PAGER_ERROR);
    kube_pager_destroy(&p);
    kube_pager_destroy(&p);
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);
}

/* ---- tests: errors and retries ------------------------------------------------- */

static void h_429_twice(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    (void)f;
    (void)r;
    if (n < 2) {
        out->status = 429;
        out->retry_after = "1";
        snprintf(out->body, sizeof(out->body),
                 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                 "\"Failure\",\"message\":\"Too many requests, please try again later.\","
                 "\"reason\":\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":1},"
                 "\"code\":429}");
        return;
    }
    snprintf(out->body, sizeof(out->body), "{\"kind\":\"Pod\"}");
}

static void test_retry_429(void)
{
    kube_client_opts_t o = unlimited_opts();
    o.retry_after_cap_ms = 50; /* honour Retry-After: 1, capped to 50 ms */
    env_t e;
    env_open(&e, h_429_twice, &o);
    const char *host = kube_client_host(e.c);
    /* The process's metrics are labelled by host: an earlier test's fake server may have had
     * this port, so what this one adds is counted from here. */
    double retries0 = counter("rest_client_request_retries_total", METRIC_LABELS("429", "GET", host));
    double r429_0 = counter("rest_client_requests_total", METRIC_LABELS("429", "GET", host));
    double r200_0 = counter("rest_client_requests_total", METRIC_LABELS("200", "GET", host));
    double dur0 = counter("rest_client_request_duration_seconds", METRIC_LABELS("GET", host));
    json_object *out = NULL;
    kube_error_t err;
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces/default/pods/p", NULL, &out, &err), 0);
    CU_ASSERT_STRING_EQUAL(jstr(out, "kind"), "Pod");
    json_object_put(out);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 3);
    CU_ASSERT_EQUAL(e.clk.sleeps, 2);
    CU_ASSERT_EQUAL(e.clk.slept, 2 * 50 * NS_PER_MS);
    kube_client_stats_t st;
    kube_client_stats(e.c, &st);
    CU_ASSERT_EQUAL(st.requests, 3);
    CU_ASSERT_EQUAL(st.retries, 2);
    CU_ASSERT_DOUBLE_EQUAL(counter("rest_client_request_retries_total", METRIC_LABELS("429", "GET", host)) - retries0,
                           2, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(counter("rest_client_requests_total", METRIC_LABELS("429", "GET", host)) - r429_0, 2,
                           1e-9);
    CU_ASSERT_DOUBLE_EQUAL(counter("rest_client_requests_total", METRIC_LABELS("200", "GET", host)) - r200_0, 1,
                           1e-9);
    CU_ASSERT_DOUBLE_EQUAL(counter("rest_client_request_duration_seconds", METRIC_LABELS("GET", host)) - dur0, 3,
                           1e-9);
    /* Out of retries: the last error comes back with its retry-after. */
    o.max_retries = 1;
    kube_client_t *c1 = kube_client_new(e.cfg, &o, NULL);
    kube_client_clock_t clk = {fc_now, fc_sleep, &e.clk};
    kube_client_set_clock(c1, &clk);
    e.srv->nreqs = 0;
    CU_ASSERT_EQUAL(kube_client_get(c1, "/api/v1/pods", NULL, &out, &err), KERR_TOO_MANY_REQUESTS);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(err.http_status, 429);
    CU_ASSERT_EQUAL(err.retry_after_s, 1);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 2);
    kube_client_destroy(&c1);
    env_close(&e);
}

static void h_always(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    (void)f;
    (void)n;
    /* The status to answer is in the path: /status/<code>[/ra] */
    const char *p = strstr(r->path, "/code/");
    out->status = p ? (int)strtol(p + 6, NULL, 10) : 500;
    if (strstr(r->path, "/ra"))
        out->retry_after = "1";
    snprintf(out->body, sizeof(out->body),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"boom %d\",\"code\":%d}",
             out->status, out->status);
}

/* Which failures are retried, by method and status (max_retries 2: 3 requests at most). */
typedef enum { R_GET, R_POST, R_PUT, R_MERGE_PATCH, R_APPLY } retry_call_t;
static const struct {
    retry_call_t call;
    const char *path;
    kube_error_code_t code;
    int requests;
} retry_cases[] = {
    {R_POST, "/code/500", KERR_INTERNAL, 1},               /* POST 500: not retried */
    {R_POST, "/code/503", KERR_UNAVAILABLE, 1},            /* the server may have acted */
    {R_POST, "/code/429", KERR_TOO_MANY_REQUESTS, 3},      /* rejected before processing */
    {R_GET, "/code/504", KERR_TIMEOUT, 3},                 /* GET 503 and 504: retried */
    {R_PUT, "/code/500", KERR_INTERNAL, 1},                /* PUT 500: not (client-go) ... */
    {R_PUT, "/code/500/ra", KERR_INTERNAL, 3},             /* ... unless with Retry-After */
    {R_GET, "/code/404", KERR_NOT_FOUND, 1},               /* 404 and 409 are answers, */
    {R_PUT, "/code/409", KERR_CONFLICT, 1},                /* not failures to retry */
    {R_MERGE_PATCH, "/code/503", KERR_UNAVAILABLE, 1},     /* merge patch: not idempotent */
    {R_APPLY, "/code/503", KERR_UNAVAILABLE, 3},           /* apply is */
};

static kube_error_code_t retry_call(kube_client_t *c, retry_call_t call, const char *path,
                                    json_object *body, kube_error_t *err)
{
    kube_req_opts_t ro = {0};
    ro.field_manager = "rdc";
    switch (call) {
    case R_GET:
        return kube_client_get(c, path, NULL, NULL, err);
    case R_POST:
        return kube_client_create(c, path, body, NULL, NULL, err);
    case R_PUT:
        return kube_client_update(c, path, body, NULL, NULL, err);
    case R_MERGE_PATCH:
        return kube_client_patch(c, path, KUBE_PATCH_MERGE, body, NULL, NULL, err);
    case R_APPLY:
        return kube_client_patch(c, path, KUBE_PATCH_APPLY, body, &ro, NULL, err);
    }
    return KERR_OTHER;
}

static void test_retry_rules(void)
{
    kube_client_opts_t o = unlimited_opts();
    o.max_retries = 2;
    env_t e;
    env_open(&e, h_always, &o);
    kube_error_t err;
    json_object *body = json_tokener_parse("{\"kind\":\"ConfigMap\"}");
    for (size_t i = 0; i < sizeof(retry_cases) / sizeof(retry_cases[0]); i++) {
        e.srv->nreqs = 0;
        CU_ASSERT_EQUAL(retry_call(e.c, retry_cases[i].call, retry_cases[i].path, body, &err),
                        retry_cases[i].code);
        CU_ASSERT_EQUAL(fake_nreqs(e.srv), retry_cases[i].requests);
    }
    /* GET 503: retried with backoff, 100 ms then 200 ms, each plus up to 50 % jitter. */
    e.srv->nreqs = 0;
    e.clk.sleeps = 0;
    CU_ASSERT_EQUAL(retry_call(e.c, R_GET, "/code/503", body, &err), KERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 3);
    CU_ASSERT_EQUAL(e.clk.sleeps, 2);
    CU_ASSERT(e.clk.last_sleep >= 200 * NS_PER_MS && e.clk.last_sleep < 300 * NS_PER_MS);
    /* A retry that would pass the call's timeout is not made. */
    kube_client_opts_t o2 = o;
    o2.timeout_ms = 1000;
    o2.retry_after_cap_ms = 5000;
    kube_client_t *c2 = kube_client_new(e.cfg, &o2, NULL);
    kube_client_clock_t clk = {fc_now, fc_sleep, &e.clk};
    kube_client_set_clock(c2, &clk);
    e.srv->nreqs = 0;
    CU_ASSERT_EQUAL(kube_client_get(c2, "/code/429/ra", NULL, NULL, &err),
                    KERR_TOO_MANY_REQUESTS);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 1);
    kube_client_destroy(&c2);
    json_object_put(body);
    env_close(&e);
}

static void h_404(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    (void)f;
    (void)r;
    (void)n;
    out->status = 404;
    snprintf(out->body, sizeof(out->body),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"configmaps \\\"x\\\" not found\",\"reason\":\"NotFound\","
             "\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":404}");
}

static void test_error_status(void)
{
    env_t e;
    env_open(&e, h_404, NULL);
    json_object *out = (json_object *)1;
    kube_error_t err;
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces/default/configmaps/x", NULL, &out,
                                    &err),
                    KERR_NOT_FOUND);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT(kube_error_is_not_found(&err));
    CU_ASSERT_EQUAL(err.http_status, 404);
    CU_ASSERT_EQUAL(err.curl_code, 0);
    CU_ASSERT_STRING_EQUAL(err.method, "GET");
    char line[1024], want[512];
    snprintf(want, sizeof(want),
             "GET http://127.0.0.1:%d/api/v1/namespaces/default/configmaps/x: 404 NotFound: "
             "configmaps \"x\" not found",
             e.srv->port);
    CU_ASSERT_STRING_EQUAL(kube_error_str(&err, line, sizeof(line)), want);
    env_close(&e);
}

static void test_connection_refused(void)
{
    /* A port nobody listens on: bind, read the port, close. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = loopback_any_port();
    socklen_t sl = sizeof(sa);
    CU_ASSERT_EQUAL_FATAL(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    getsockname(s, (struct sockaddr *)&sa, &sl);
    int port = ntohs(sa.sin_port);
    close(s);

    kube_config_t *cfg = make_config("http", port, NULL);
    kube_client_opts_t o = unlimited_opts();
    o.max_retries = 2;
    kube_client_t *c = kube_client_new(cfg, &o, NULL);
    fake_clock_t fc = {.now = NS_PER_SEC};
    kube_client_clock_t clk = {fc_now, fc_sleep, &fc};
    kube_client_set_clock(c, &clk);
    kube_error_t err;
    json_object *body = json_object_new_object();
    /* Even a POST is retried when the connection was never made. */
    CU_ASSERT_EQUAL(kube_client_create(c, "/api/v1/namespaces/default/configmaps", body, NULL,
                                       NULL, &err),
                    KERR_TRANSPORT);
    CU_ASSERT_EQUAL(err.curl_code, CURLE_COULDNT_CONNECT);
    CU_ASSERT_EQUAL(err.http_status, 0);
    kube_client_stats_t st;
    kube_client_stats(c, &st);
    CU_ASSERT_EQUAL(st.requests, 3);
    CU_ASSERT_EQUAL(fc.sleeps, 2);
    char line[1024], prefix[256];
    kube_error_str(&err, line, sizeof(line));
    snprintf(prefix, sizeof(prefix),
             "POST http://127.0.0.1:%d/api/v1/namespaces/default/configmaps: transport: curl 7 "
             "(Couldn't connect to server)",
             port);
    CU_ASSERT_EQUAL(strncmp(line, prefix, strlen(prefix)), 0);
    char hostport[64];
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", port);
    CU_ASSERT_STRING_EQUAL(kube_client_host(c), hostport);
    CU_ASSERT_DOUBLE_EQUAL(counter("rest_client_requests_total",
                                   METRIC_LABELS("<error>", "POST", hostport)), 3, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(counter("rest_client_request_retries_total",
                                   METRIC_LABELS("<error>", "POST", hostport)), 2, 1e-9);
    json_object_put(body);
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);
}

static void test_connection_reuse(void)
{
    env_t e;
    env_open(&e, h_echo, NULL);
    json_object *body = json_tokener_parse("{\"kind\":\"ConfigMap\"}");
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces/default/configmaps/x", NULL,
                                        NULL, NULL),
                        0);
    CU_ASSERT_EQUAL(kube_client_create(e.c, "/api/v1/namespaces/default/configmaps", body, NULL,
                                       NULL, NULL),
                    0);
    CU_ASSERT_EQUAL(kube_client_update(e.c, "/api/v1/namespaces/default/configmaps/x", body,
                                       NULL, NULL, NULL),
                    0);
    CU_ASSERT_EQUAL(kube_client_delete(e.c, "/api/v1/namespaces/default/configmaps/x", NULL,
                                       NULL, NULL),
                    0);
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces", NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 9);
    /* The method of each request was reset properly between them. */
    CU_ASSERT_STRING_EQUAL(e.srv->reqs[8].method, "GET");
    CU_ASSERT_EQUAL(e.srv->reqs[8].body_len, 0);
    kube_client_stats_t st;
    kube_client_stats(e.c, &st);
    CU_ASSERT_EQUAL(st.requests, 9);
    CU_ASSERT_EQUAL(st.connects, 1);
    CU_ASSERT_EQUAL(fake_connections(e.srv), 1);
    json_object_put(body);
    env_close(&e);
}

static void test_rate_limiter(void)
{
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 10;
    o.burst = 2;
    env_t e;
    env_open(&e, h_echo, &o);
    const char *host = kube_client_host(e.c);
    /* The budget is short once a request now would wait: after the burst. */
    CU_ASSERT_EQUAL(kube_client_budget_short(e.c), 0);
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces", NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(kube_client_budget_short(e.c), 0);
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces", NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(kube_client_budget_short(e.c), 1);
    for (int i = 2; i < 6; i++)
        CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces", NULL, NULL, NULL), 0);
    /* Two from the burst, then four spaced 100 ms apart on the fake clock. */
    CU_ASSERT_EQUAL(e.clk.sleeps, 4);
    CU_ASSERT(e.clk.slept >= 400 * NS_PER_MS - 1000 && e.clk.slept <= 400 * NS_PER_MS + 1000);
    kube_client_stats_t st;
    kube_client_stats(e.c, &st);
    CU_ASSERT_EQUAL(st.throttled_ns, e.clk.slept);
    CU_ASSERT_DOUBLE_EQUAL(counter("rest_client_rate_limiter_duration_seconds",
                                   METRIC_LABELS("GET", host)), 6, 1e-9);
    /* The external-request hook takes from the same bucket. */
    int64_t w = kube_client_throttle(e.c);
    CU_ASSERT(w >= 100 * NS_PER_MS - 1000 && w <= 100 * NS_PER_MS + 1000);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 6);
    env_close(&e);

    /* Without a limit the budget is never short. */
    env_open(&e, h_echo, NULL);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces", NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(kube_client_budget_short(e.c), 0);
    env_close(&e);

    /* A limiter wait longer than the call's timeout fails the call before sending. */
    o.qps = 0.1; /* one request per 10 s */
    o.burst = 1;
    o.timeout_ms = 2000;
    env_open(&e, h_echo, &o);
    kube_error_t err;
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces", NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/namespaces", NULL, NULL, &err), KERR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "rate limiter"));
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 1);
    env_close(&e);
}

static void h_big(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    (void)f;
    (void)n;
    if (strstr(r->path, "/bad")) {
        snprintf(out->body, sizeof(out->body), "{\"kind\":\"Pod\",");
        return;
    }
    if (strstr(r->path, "/slow")) {
        out->delay_ms = 600;
        return;
    }
    memset(out->body, ' ', 4000);
    memcpy(out->body, "{\"a\":1}", 7);
    out->body[4000] = '\0';
}

static void test_response_cap_decode_timeout(void)
{
    kube_client_opts_t o = unlimited_opts();
    o.max_response_bytes = 1024;
    o.timeout_ms = 200;
    env_t e;
    env_open(&e, h_big, &o);
    json_object *out = NULL;
    kube_error_t err;
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/big", NULL, &out, &err), KERR_DECODE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "exceeds 1024 bytes"));
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/bad", NULL, &out, &err), KERR_DECODE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "decode response"));
    CU_ASSERT_EQUAL(err.http_status, 200);
    CU_ASSERT_PTR_NULL(out);
    /* The call's timeout ends a slow answer (real time: the fake clock does not move). */
    CU_ASSERT_EQUAL(kube_client_get(e.c, "/api/v1/slow", NULL, &out, &err), KERR_TIMEOUT);
    char line[512];
    kube_error_str(&err, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "/api/v1/slow: timeout: curl 28"));
    CU_ASSERT_EQUAL(err.curl_code, CURLE_OPERATION_TIMEDOUT);
    CU_ASSERT_EQUAL(fake_nreqs(e.srv), 3);
    env_close(&e);
}

/* ---- tests: watch handle ------------------------------------------------------- */

/* A watch stream: ADDED at 11, a BOOKMARK at 15, then 410 Expired. */
static const char WATCH_STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":"
    "\"11\"}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"15\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
    "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 11 "
    "(14)\",\"reason\":\"Expired\",\"code\":410}}\n";

static size_t feed_decoder(char *data, size_t size, size_t n, void *user)
{
    return watch_decoder_feed(user, data, size * n) == WATCH_OK ? size * n : 0;
}

static int count_events(const watch_event_t *ev, void *user)
{
    (void)ev;
    (*(int *)user)++;
    return 0;
}

static void test_watch_handle(void)
{
    env_t e;
    env_open_body(&e, WATCH_STREAM, NULL);
    kube_req_opts_t ro = {0};
    ro.resource_version = "10";
    ro.allow_watch_bookmarks = 1;
    ro.timeout_seconds = 300;
    ro.label_selector = "app=x";
    struct curl_slist *hdrs = NULL;
    kube_error_t err;
    CURL *h = kube_client_watch_handle(e.c, "/api/v1/namespaces/default/configmaps", &ro, &hdrs,
                                       &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_PTR_NOT_NULL(hdrs);
    int events = 0;
    watch_decoder_t *d = watch_decoder_new(0, count_events, &events);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, feed_decoder);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, d);
    CU_ASSERT_EQUAL(curl_easy_perform(h), CURLE_OK);
    CU_ASSERT_EQUAL(watch_decoder_finish(d), WATCH_OK);
    CU_ASSERT_EQUAL(events, 3);
    CU_ASSERT_STRING_EQUAL(watch_decoder_last_rv(d), "15");
    CU_ASSERT(kube_error_is_gone(watch_decoder_server_error(d)));
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    watch_decoder_destroy(&d);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 1);
    fake_req_t *r = &e.srv->reqs[0];
    CU_ASSERT_STRING_EQUAL(r->query, "watch=1&labelSelector=app=x&resourceVersion=10&"
                                     "allowWatchBookmarks=true&timeoutSeconds=300");
    char want[128];
    snprintf(want, sizeof(want), "Bearer %s", TOKEN);
    CU_ASSERT_STRING_EQUAL(r->auth, want);
    CU_ASSERT_STRING_EQUAL(r->ua, "informerd/0.1.0");
    CU_ASSERT_STRING_EQUAL(r->accept, "application/json");
    /* Metadata only (informerd's Secrets): Accept PartialObjectMetadata without a
     * fallback, the token and the rest kept. */
    ro.metadata_only = 1;
    h = kube_client_watch_handle(e.c, "/api/v1/namespaces/default/secrets", &ro, &hdrs, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    events = 0;
    d = watch_decoder_new(0, count_events, &events);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, feed_decoder);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, d);
    CU_ASSERT_EQUAL(curl_easy_perform(h), CURLE_OK);
    watch_decoder_destroy(&d);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(e.srv), 2);
    r = &e.srv->reqs[1];
    CU_ASSERT_STRING_EQUAL(r->accept, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");
    CU_ASSERT_STRING_EQUAL(r->auth, want);
    /* Bad path: no handle, nothing to free. */
    h = kube_client_watch_handle(e.c, "nope", NULL, &hdrs, &err);
    CU_ASSERT_PTR_NULL(h);
    CU_ASSERT_PTR_NULL(hdrs);
    CU_ASSERT_EQUAL(err.code, KERR_CONFIG);
    env_close(&e);
}

/* ---- tests: HTTPS -------------------------------------------------------------- */

typedef struct {
    char *ca_pem;
    char *key_pem;
    char *cert_pem;
    char *client_key_pem;
    char *client_cert_pem;
} certs_t;

/* The PEM text (malloc'd) of the certificate x, or else of the private key k. */
static char *pem_of(X509 *x, EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    if (x)
        PEM_write_bio_X509(b, x);
    else
        PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *s = malloc((size_t)n + 1);
    memcpy(s, p, (size_t)n);
    s[n] = '\0';
    BIO_free(b);
    return s;
}

static X509 *make_cert(EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key, const char *cn,
                       const char *san, const char *eku, int serial)
{
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x));
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    const char *exts[][2] = {
        {"basicConstraints", issuer ? "critical,CA:FALSE" : "critical,CA:TRUE"},
        {"keyUsage", issuer ? "critical,digitalSignature,keyEncipherment"
                            : "critical,keyCertSign,cRLSign"},
        {"subjectKeyIdentifier", "hash"},
        {eku ? "extendedKeyUsage" : NULL, eku},
        {san ? "subjectAltName" : NULL, san},
    };
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        if (!exts[i][0])
            continue;
        X509_EXTENSION *ext = X509V3_EXT_conf(NULL, &ctx, exts[i][0], exts[i][1]);
        X509_add_ext(x, ext, -1);
        X509_EXTENSION_free(ext);
    }
    X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256());
    return x;
}

/* A CA and a server certificate for kubernetes.test (no IP SAN: connecting by IP must
 * fail verification unless tls-server-name says which name to check). */
static int make_certs(certs_t *c)
{
    EVP_PKEY *cakey = EVP_EC_gen("P-256");
    EVP_PKEY *key = EVP_EC_gen("P-256");
    EVP_PKEY *ckey = EVP_EC_gen("P-256");
    if (!cakey || !key || !ckey)
        return -1;
    X509 *ca = make_cert(cakey, NULL, NULL, "test-ca", NULL, NULL, 1);
    X509 *srv = make_cert(key, ca, cakey, "kubernetes.test", "DNS:kubernetes.test",
                          "serverAuth", 2);
    X509 *cli = make_cert(ckey, ca, cakey, "system:node:test", NULL, "clientAuth", 3);
    c->ca_pem = pem_of(ca, NULL);
    c->cert_pem = pem_of(srv, NULL);
    c->key_pem = pem_of(NULL, key);
    c->client_cert_pem = pem_of(cli, NULL);
    c->client_key_pem = pem_of(NULL, ckey);
    X509_free(ca);
    X509_free(srv);
    X509_free(cli);
    EVP_PKEY_free(cakey);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ckey);
    return 0;
}

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

static void test_https(void)
{
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        fprintf(stderr, "libmicrohttpd without TLS: HTTPS test skipped\n");
        return;
    }
    certs_t certs = {0};
    CU_ASSERT_EQUAL_FATAL(make_certs(&certs), 0);
    fake_t *srv = fake_start_tls(h_echo, certs.key_pem, certs.cert_pem, certs.ca_pem);
    CU_ASSERT_PTR_NOT_NULL_FATAL(srv);
    char *ca64 = b64(certs.ca_pem);
    char extra[8192];
    kube_client_opts_t o = unlimited_opts();
    o.max_retries = 0;
    kube_error_t err;
    char line[1024];

    /* 1. CA given, connecting by IP: the name does not match, verification fails. */
    snprintf(extra, sizeof(extra), "    certificate-authority-data: %s\n", ca64);
    kube_config_t *cfg = make_config("https", srv->port, extra);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    kube_client_t *c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(kube_client_get(c, "/api/v1/namespaces", NULL, NULL, &err), KERR_TRANSPORT);
    CU_ASSERT_EQUAL(err.curl_code, CURLE_PEER_FAILED_VERIFICATION);
    kube_error_str(&err, line, sizeof(line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "transport: curl 60"));
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);

    /* 2. tls-server-name: verified against kubernetes.test, connection to 127.0.0.1,
     *    and the connection is reused. */
    snprintf(extra, sizeof(extra),
             "    certificate-authority-data: %s\n    tls-server-name: kubernetes.test\n", ca64);
    cfg = make_config("https", srv->port, extra);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(kube_client_get(c, "/api/v1/namespaces", NULL, NULL, &err), 0);
        if (err.code)
            fprintf(stderr, "%s\n", kube_error_str(&err, line, sizeof(line)));
    }
    kube_client_stats_t st;
    kube_client_stats(c, &st);
    CU_ASSERT_EQUAL(st.connects, 1);
    int nbefore = fake_nreqs(srv);
    CU_ASSERT(nbefore >= 3);
    /* Host: keeps the real address, as client-go does. */
    char hostport[64];
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", srv->port);
    CU_ASSERT_STRING_EQUAL(srv->reqs[nbefore - 1].host, hostport);
    CU_ASSERT_EQUAL(srv->reqs[nbefore - 1].client_certs, 0); /* bearer token only */
    CU_ASSERT_STRING_EQUAL(kube_client_host(c), hostport);
    /* The watch handle is set up the same way. */
    struct curl_slist *hdrs = NULL;
    CURL *h = kube_client_stream_handle(c, "/api/v1/namespaces", NULL, 5000, &hdrs, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, NULL);
    FILE *devnull = fopen("/dev/null", "w");
    curl_easy_setopt(h, CURLOPT_WRITEDATA, devnull);
    CU_ASSERT_EQUAL(curl_easy_perform(h), CURLE_OK);
    fclose(devnull);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);

    /* 3. No CA but insecure-skip-tls-verify: accepted without verification. */
    cfg = make_config("https", srv->port, "    insecure-skip-tls-verify: true\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_EQUAL(kube_client_get(c, "/api/v1/namespaces", NULL, NULL, &err), 0);
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);

    /* 4. A client certificate and key from the kubeconfig are loaded from memory and
     *    presented to the server. */
    char *cc64 = b64(certs.client_cert_pem), *ck64 = b64(certs.client_key_pem);
    char user[8192];
    snprintf(user, sizeof(user),
             "    client-certificate-data: %s\n    client-key-data: %s\n", cc64, ck64);
    snprintf(extra, sizeof(extra),
             "    certificate-authority-data: %s\n    tls-server-name: kubernetes.test\n", ca64);
    cfg = make_config_ex("https", srv->port, extra, user);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_EQUAL(kube_client_get(c, "/api/v1/namespaces", NULL, NULL, &err), 0);
    if (err.code)
        fprintf(stderr, "%s\n", kube_error_str(&err, line, sizeof(line)));
    int last = fake_nreqs(srv) - 1;
    /* 1 or 2: OpenSSL adds the CA to the chain it sends when it can build one. */
    CU_ASSERT(srv->reqs[last].client_certs >= 1);
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);
    free(cc64);
    free(ck64);

    /* 5. No CA at all: the system store does not know our CA. */
    cfg = make_config("https", srv->port, NULL);
    c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_EQUAL(kube_client_get(c, "/api/v1/namespaces", NULL, NULL, &err), KERR_TRANSPORT);
    CU_ASSERT_EQUAL(err.curl_code, CURLE_PEER_FAILED_VERIFICATION);
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);

    fake_stop(&srv);
    free(ca64);
    free(certs.ca_pem);
    free(certs.cert_pem);
    free(certs.key_pem);
    free(certs.client_cert_pem);
    free(certs.client_key_pem);
}

/* ---- tests: credentials, impersonation, proxy ------------------------------------- */

/* An exec plugin in a fresh directory: each run appends to <dir>/count and prints token
 * "t<run number>", or "bad" when <dir>/mode says "same". */
static const char *PLUGIN_SH =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "echo run >> \"$d/count\"\n"
    "n=$(wc -l < \"$d/count\")\n"
    "tok=t$((n))\n"
    "[ \"$(cat \"$d/mode\" 2>/dev/null)\" = same ] && tok=bad\n"
    "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
    "\"status\":{\"token\":\"%s\"}}' \"$tok\"\n";

typedef struct {
    char dir[64];
    char plugin[128];
} plugin_dir_t;

static void plugin_setup(plugin_dir_t *pd, const char *mode)
{
    snprintf(pd->dir, sizeof(pd->dir), "/tmp/kc-plugin-XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(pd->dir));
    snprintf(pd->plugin, sizeof(pd->plugin), "%s/plugin.sh", pd->dir);
    FILE *f = fopen(pd->plugin, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(PLUGIN_SH, f);
    fclose(f);
    chmod(pd->plugin, 0755);
    char p[160];
    snprintf(p, sizeof(p), "%s/mode", pd->dir);
    f = fopen(p, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(mode, f);
    fclose(f);
}

static int plugin_runs(const plugin_dir_t *pd)
{
    char p[160];
    snprintf(p, sizeof(p), "%s/count", pd->dir);
    FILE *f = fopen(p, "r");
    int n = 0, ch;
    while (f && (ch = fgetc(f)) != EOF)
        n += ch == '\n';
    if (f)
        fclose(f);
    return n;
}

static void plugin_cleanup(plugin_dir_t *pd)
{
    char p[160];
    static const char *const files[] = {"plugin.sh", "mode", "count"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", pd->dir, files[i]);
        unlink(p);
    }
    rmdir(pd->dir);
}

/* A kubeconfig for the fake server using the plugin and impersonating jane. */
static kube_config_t *make_exec_config(int port, const plugin_dir_t *pd)
{
    char yaml[4096], err[512];
    snprintf(yaml, sizeof(yaml),
             "current-context: fake\n"
             "clusters:\n- name: fake\n  cluster: {server: 'http://127.0.0.1:%d'}\n"
             "contexts:\n- name: fake\n  context: {cluster: fake, user: u}\n"
             "users:\n- name: u\n  user:\n"
             "    as: jane\n    as-groups: [dev, ops]\n"
             "    as-user-extra: {reason/why: [test]}\n"
             "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: %s\n      interactiveMode: Never\n",
             port, pd->plugin);
    kube_config_t *cfg = NULL;
    if (kube_config_load_buffer(yaml, strlen(yaml), "exec-kubeconfig", NULL, &cfg, err,
                                sizeof(err)))
        fprintf(stderr, "kubeconfig: %s\n", err);
    return cfg;
}

/* 401 for the tokens "t1" and "bad", as an API server that does not know them. */
static void h_reject_t1(fake_t *f, const fake_req_t *r, int n, fake_resp_t *out)
{
    if (strcmp(r->auth, "Bearer t1") == 0 || strcmp(r->auth, "Bearer bad") == 0) {
        out->status = 401;
        snprintf(out->body, sizeof(out->body),
                 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}");
        return;
    }
    h_echo(f, r, n, out);
}

static kube_client_t *exec_client(kube_config_t *cfg)
{
    kube_client_opts_t o = unlimited_opts();
    o.max_retries = 0;
    kube_error_t err;
    kube_client_t *c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

/* The 401 tests' setting: the plugin in mode, a fake server that refuses t1 (and "bad"),
 * a kubeconfig using the plugin as jane, and a client of it without retries. */
typedef struct {
    plugin_dir_t pd;
    fake_t *srv;
    kube_config_t *cfg;
    kube_client_t *c;
} exec_env_t;

static void exec_env_open(exec_env_t *x, const char *mode)
{
    plugin_setup(&x->pd, mode);
    x->srv = fake_start(h_reject_t1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x->srv);
    x->cfg = make_exec_config(x->srv->port, &x->pd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x->cfg);
    x->c = exec_client(x->cfg);
}

static void exec_env_close(exec_env_t *x)
{
    kube_client_destroy(&x->c);
    kube_config_destroy(&x->cfg);
    fake_stop(&x->srv);
    plugin_cleanup(&x->pd);
}

#define JANE_HEADERS                                                                     \
    "Impersonate-User: jane|Impersonate-Group: dev|Impersonate-Group: ops|"              \
    "Impersonate-Extra-reason%2Fwhy: test"

/* The server rejects the first exec credential once: the plugin is run again and the
 * request retried with the new token, transparently. */
static void test_401_refresh_retry(void)
{
    exec_env_t x;
    exec_env_open(&x, "rotate");
    kube_error_t err;
    json_object *obj = NULL;

    CU_ASSERT_EQUAL(kube_client_get(x.c, "/api/v1/namespaces/default/configmaps/x", NULL, &obj,
                                    &err), 0);
    CU_ASSERT_PTR_NOT_NULL(obj);
    json_object_put(obj);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(x.srv), 2);
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[0].auth, "Bearer t1");
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[1].auth, "Bearer t2");
    CU_ASSERT_EQUAL(plugin_runs(&x.pd), 2);
    /* Impersonation on every request, the retry included. */
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[0].imp, JANE_HEADERS);
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[1].imp, JANE_HEADERS);
    kube_client_stats_t st;
    kube_client_stats(x.c, &st);
    CU_ASSERT_EQUAL(st.requests, 2);
    CU_ASSERT_EQUAL(st.retries, 1);
    /* The new token is kept. */
    CU_ASSERT_EQUAL(kube_client_get(x.c, "/api/v1/namespaces", NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL(fake_nreqs(x.srv), 3);
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[2].auth, "Bearer t2");
    CU_ASSERT_EQUAL(plugin_runs(&x.pd), 2);
    exec_env_close(&x);

    /* A plugin that keeps handing out a token the server refuses: the 401 is returned
     * after one re-run, no resend of the same token, and the next requests do not run it
     * again within the backoff. The backoff is on kube_config's wall clock in whole
     * seconds: frozen here, or a first run just before a second boundary would see its
     * "1 s" end a moment later (and a loaded machine lets a second pass anyway). */
    kcfg_test_set_clock(frozen_wall_s);
    exec_env_open(&x, "same");
    CU_ASSERT_EQUAL(kube_client_get(x.c, "/api/v1/namespaces", NULL, NULL, &err),
                    KERR_UNAUTHORIZED);
    CU_ASSERT_EQUAL(fake_nreqs(x.srv), 1);
    CU_ASSERT_EQUAL(plugin_runs(&x.pd), 2);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(kube_client_get(x.c, "/api/v1/namespaces", NULL, NULL, &err),
                        KERR_UNAUTHORIZED);
    CU_ASSERT_EQUAL(fake_nreqs(x.srv), 6);
    CU_ASSERT_EQUAL(plugin_runs(&x.pd), 2);
    kcfg_test_set_clock(NULL);
    exec_env_close(&x);
}

static size_t discard(char *d, size_t size, size_t n, void *u)
{
    (void)d;
    (void)u;
    return size * n;
}

/* A 401 on a stream (watch, pager page) reaches kube_config too, once per burst: two
 * streams opened with t1 both get 401; only the first one's invalidates. */
static void test_401_on_streams(void)
{
    exec_env_t x;
    exec_env_open(&x, "rotate");
    kube_error_t err;
    struct curl_slist *h1s = NULL, *h2s = NULL;
    kube_req_opts_t ro = {0};
    CURL *h1 = kube_client_watch_handle(x.c, "/api/v1/configmaps", &ro, &h1s, &err);
    CURL *h2 = kube_client_stream_handle(x.c, "/api/v1/configmaps", NULL, 5000, &h2s, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h2);
    CU_ASSERT_EQUAL(plugin_runs(&x.pd), 1);
    curl_easy_setopt(h1, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h2, CURLOPT_WRITEFUNCTION, discard);
    CU_ASSERT_EQUAL(curl_easy_perform(h1), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(h1, CURLINFO_RESPONSE_CODE, &status);
    CU_ASSERT_EQUAL(status, 401);
    /* The next request gets a new token at once: no 401 first. */
    CU_ASSERT_EQUAL(kube_client_get(x.c, "/api/v1/namespaces", NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL(plugin_runs(&x.pd), 2);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(x.srv), 2);
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[1].auth, "Bearer t2");
    /* The second stream's 401 (sent with t1) is part of the same burst: t2 is kept. */
    CU_ASSERT_EQUAL(curl_easy_perform(h2), CURLE_OK);
    curl_easy_getinfo(h2, CURLINFO_RESPONSE_CODE, &status);
    CU_ASSERT_EQUAL(status, 401);
    CU_ASSERT_EQUAL(kube_client_get(x.c, "/api/v1/namespaces", NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL(plugin_runs(&x.pd), 2);
    curl_easy_cleanup(h1);
    curl_easy_cleanup(h2);
    curl_slist_free_all(h1s);
    curl_slist_free_all(h2s);
    /* Impersonation on watches and pager pages as well. */
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[0].imp, JANE_HEADERS);
    kube_pager_t *p = kube_pager_new(x.c, "/api/v1/configmaps", NULL);
    int pages = 0;
    CU_ASSERT_EQUAL(run_pager(p, &pages, &err), KUBE_PAGER_DONE);
    kube_pager_destroy(&p);
    int n = fake_nreqs(x.srv);
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[n - 1].imp, JANE_HEADERS);
    CU_ASSERT_STRING_EQUAL(x.srv->reqs[n - 1].auth, "Bearer t2");
    exec_env_close(&x);
}

/* proxy-url routes requests through the proxy; an environment proxy is not used for a
 * loopback server; a dead proxy-url is an error even for a loopback server. */
static void test_proxy(void)
{
    fake_t *srv = fake_start(h_echo, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(srv);
    kube_client_opts_t o = unlimited_opts();
    o.max_retries = 0;
    kube_error_t err;
    char extra[256];

    /* The fake server as an HTTP proxy for a host that does not resolve. */
    snprintf(extra, sizeof(extra), "    proxy-url: http://127.0.0.1:%d\n", srv->port);
    char yaml[2048], cerr[512];
    snprintf(yaml, sizeof(yaml),
             "current-context: x\nclusters:\n- name: c\n  cluster:\n"
             "    server: http://api.rdc-test.invalid:81\n%s"
             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
             "users:\n- name: u\n  user: {token: tok}\n", extra);
    kube_config_t *cfg = NULL;
    CU_ASSERT_EQUAL_FATAL(kube_config_load_buffer(yaml, strlen(yaml), "p", NULL, &cfg, cerr,
                                                  sizeof(cerr)), 0);
    CU_ASSERT_STRING_EQUAL(kube_config_rest(cfg)->proxy_source, "proxy-url");
    kube_client_t *c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(kube_client_get(c, "/api/v1/namespaces", NULL, NULL, &err), 0);
    CU_ASSERT_EQUAL_FATAL(fake_nreqs(srv), 1);
    CU_ASSERT_STRING_EQUAL(srv->reqs[0].host, "api.rdc-test.invalid:81");
    CU_ASSERT_PTR_NOT_NULL(strstr(srv->reqs[0].path, "/api/v1/namespaces"));
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);

    /* HTTP_PROXY set to a dead port, server on 127.0.0.1 and localhost: direct. */
    setenv("HTTP_PROXY", "http://127.0.0.1:1", 1);
    setenv("http_proxy", "http://127.0.0.1:1", 1);
    const char *hosts[] = {"127.0.0.1", "localhost"};
    for (int i = 0; i < 2; i++) {
        snprintf(yaml, sizeof(yaml),
                 "current-context: x\nclusters:\n- name: c\n  cluster:\n"
                 "    server: http://%s:%d\n"
                 "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                 "users:\n- name: u\n  user: {token: tok}\n", hosts[i], srv->port);
        CU_ASSERT_EQUAL_FATAL(kube_config_load_buffer(yaml, strlen(yaml), "p", NULL, &cfg,
                                                      cerr, sizeof(cerr)), 0);
        CU_ASSERT_PTR_NULL(kube_config_rest(cfg)->proxy);
        c = kube_client_new(cfg, &o, &err);
        CU_ASSERT_EQUAL(kube_client_get(c, "/api/v1/namespaces", NULL, NULL, &err), 0);
        kube_client_destroy(&c);
        kube_config_destroy(&cfg);
    }
    CU_ASSERT_EQUAL(fake_nreqs(srv), 3);
    unsetenv("HTTP_PROXY");
    unsetenv("http_proxy");

    /* proxy-url to a dead port wins even for a loopback server: a transport error. */
    snprintf(yaml, sizeof(yaml),
             "current-context: x\nclusters:\n- name: c\n  cluster:\n"
             "    server: http://127.0.0.1:%d\n    proxy-url: http://127.0.0.1:1\n"
             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
             "users:\n- name: u\n  user: {token: tok}\n", srv->port);
    CU_ASSERT_EQUAL_FATAL(kube_config_load_buffer(yaml, strlen(yaml), "p", NULL, &cfg, cerr,
                                                  sizeof(cerr)), 0);
    c = kube_client_new(cfg, &o, &err);
    CU_ASSERT_EQUAL(kube_client_get(c, "/api/v1/namespaces", NULL, NULL, &err), KERR_TRANSPORT);
    CU_ASSERT_EQUAL(err.curl_code, CURLE_COULDNT_CONNECT);
    CU_ASSERT_EQUAL(fake_nreqs(srv), 3);
    kube_client_destroy(&c);
    kube_config_destroy(&cfg);
    fake_stop(&srv);
}

static void test_bad_server(void)
{
    const char *yaml = "apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n"
                       "    server: https://exa mple:1\ncontexts:\n- name: x\n  context: "
                       "{cluster: x, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user: {}\n";
    kube_config_t *cfg = NULL;
    char errbuf[256];
    if (kube_config_load_buffer(yaml, strlen(yaml), "bad", NULL, &cfg, errbuf, sizeof(errbuf)) ==
        0) {
        kube_error_t err;
        kube_client_t *c = kube_client_new(cfg, NULL, &err);
        CU_ASSERT_PTR_NULL(c);
        CU_ASSERT_EQUAL(err.code, KERR_CONFIG);
        kube_client_destroy(&c);
        kube_config_destroy(&cfg);
    } else {
        /* The config loader already refuses it: fine as well. */
        CU_ASSERT_PTR_NULL(cfg);
    }
    /* Defaults with NULL opts. */
    kube_config_t *ok = make_config("http", 1, NULL);
    kube_client_t *c = kube_client_new(ok, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL(c);
    CU_ASSERT_STRING_EQUAL(kube_client_host(c), "127.0.0.1:1");
    kube_client_destroy(&c);
    kube_client_destroy(&c); /* NULL-safe */
    kube_config_destroy(&ok);
}

static const cu_entry_t tests[] = {
    CU_SUITE("kube_client"),
    {"path builder", test_path_builder},
    {"GET: method, path, headers", test_get},
    {"caller's deadline (fencing)", test_deadline},
    {"POST and PUT", test_create_update},
    {"PATCH: apply, merge, json, strategic", test_patch},
    {"DELETE with DeleteOptions", test_delete},
    {"LIST pagination over 3 pages", test_list_pagination},
    {"LIST with expired continue", test_list_expired_continue},
    {"non-blocking pager", test_pager},
    {"non-blocking pager: transport error", test_pager_transport_error},
    {"non-blocking pager: pages shrink under the response cap", test_pager_shrinks},
    {"non-blocking pager: metadata only (PartialObjectMetadataList, no fallback)", test_pager_metadata_only},
    {"429 Retry-After retried then succeeds", test_retry_429},
    {"retry rules per method and status", test_retry_rules},
    {"Status error mapped", test_error_status},
    {"connection refused", test_connection_refused},
    {"connection reuse", test_connection_reuse},
    {"QPS limiter", test_rate_limiter},
    {"response cap, bad JSON, timeout", test_response_cap_decode_timeout},
    {"watch handle", test_watch_handle},
    {"HTTPS: verification, tls-server-name", test_https},
    {"bad server URL, default opts", test_bad_server},
    {"401: exec plugin re-run, request retried once", test_401_refresh_retry},
    {"401 on streams: once per burst; impersonation on streams", test_401_on_streams},
    {"proxy-url, environment proxy and loopback", test_proxy},
};

CU_MAIN(tests)
