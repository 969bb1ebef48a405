/* observerd over TLS (docs/tls-and-acl.md), against a REAL redis-server --tls-port
 * --tls-auth-clients yes on 127.0.0.1 with certificates made in the test, observerd's
 * Secrets served by a fake API server:
 *   - obsdiff: the certificate a node presents is news when it changes, and in the JSON;
 *   - redisnode: a TLS probe records the server's certificate; a reconnect shows a
 *     renewed one once Redis read its files again (CONFIG SET tls-cert-file <its path>);
 *   - observer_run: reads spec.tls's Secret, probes the pod that says it speaks TLS
 *     (its name under the headless Service checked, the client certificate presented),
 *     reports tlsCert, exports rdc_redis_tls_cert_expiry_seconds; the Secret renewed (its
 *     metadata on the delta stream): read again, the metric follows, and the pod's new
 *     certificate is reported once Redis took it (fresh connections meanwhile);
 *   - observer_once over TLS. */
#include "cu_table.h"
#include "fake_api.h"
#include "obsdiff.h"
#include "observer_harness.h"
#include "redis_servers.h"
#include "redis_tls_certs.h"
#include "redisnode.h"
#include "redisexec.h"

#include <CUnit/CUnit.h>
#include <openssl/evp.h>

static char dir[64];
static tc_pki_t pki;
static tc_cert_t cert1, cert2;
static char sha1[65], sha2[65];
static server_t srv;

/* The fake API's Secret ns1/cache-tls (under mu: the server's threads read it). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const tc_cert_t *served = &cert1;
static int secret_rv = 1;

static void sha(const tc_cert_t *c, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    X509_digest(c->crt, EVP_sha256(), md, &n);
    for (unsigned int i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static int setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/rdc-observer-tls-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    tc_pki_make(&pki);
    tc_pki_write(&pki, dir);
    cert1 = tc_make("cache", &pki.ca, 0, "DNS:*.cache.ns1.svc", "serverAuth,clientAuth", -60, 30 * 86400);
    cert2 = tc_make("cache", &pki.ca, 0, "DNS:*.cache.ns1.svc", "serverAuth,clientAuth", -60, 60 * 86400);
    sha(&cert1, sha1);
    sha(&cert2, sha2);
    tc_write_file(dir, "live.crt", cert1.crt_pem);
    tc_write_file(dir, "live.key", cert1.key_pem);
    return server_start_tls(&srv, dir, "live.crt", "live.key", 1, NULL) ? 1 : 0;
}

static int teardown(void)
{
    server_stop(&srv);
    tc_cert_free(&cert1);
    tc_cert_free(&cert2);
    tc_pki_free(&pki);
    return tmpdir_remove(dir);
}

CU_HOOKS({"observerd over TLS", setup, teardown, NULL, NULL});

static void b64_into(buf_t *out, const char *text)
{
    size_t n = strlen(text);
    char *b = malloc(4 * ((n + 2) / 3) + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    EVP_EncodeBlock((unsigned char *)b, (const unsigned char *)text, (int)n);
    buf_puts(out, b);
    free(b);
}

static const char RC_JSON[] =
    "{\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\",\"namespace\":\"ns1\"},\"spec\":{\"size\":1,"
    "\"mode\":\"Standalone\",\"tls\":{\"secretRef\":{\"name\":\"cache-tls\"},\"clientAuth\":true}}}";

static char pod_json[512];

static void make_pod(void)
{
    snprintf(pod_json, sizeof(pod_json),
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"cache-0\",\"namespace\":\"ns1\",\"labels\":"
             "{\"app.kubernetes.io/instance\":\"cache\",\"app.kubernetes.io/managed-by\":\"rediscluster-operator\"},"
             "\"annotations\":{\"cache.example.com/tls\":\"on\"}},\"status\":{\"phase\":\"Running\","
             "\"podIP\":\"127.0.0.1\"}}");
}

/* The fake API: the Secret, the RedisCluster and its pod (observer_once). */
static int api(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
               buf_t *out)
{
    (void)user, (void)c, (void)body;
    if (strcmp(method, "GET"))
        return 405;
    if (!strcmp(url, "/api/v1/namespaces/ns1/secrets/cache-tls")) {
        pthread_mutex_lock(&mu);
        buf_printf(out, "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"cache-tls\",\"resourceVersion\":\"%d\"},"
                        "\"data\":{\"tls.crt\":\"",
                   secret_rv);
        b64_into(out, served->crt_pem);
        buf_puts(out, "\",\"tls.key\":\"");
        b64_into(out, served->key_pem);
        buf_puts(out, "\",\"ca.crt\":\"");
        b64_into(out, pki.ca.crt_pem);
        buf_puts(out, "\"}}");
        pthread_mutex_unlock(&mu);
        return 200;
    }
    if (!strcmp(url, "/apis/cache.example.com/v1/namespaces/ns1/redisclusters/cache"))
        return buf_puts(out, RC_JSON) ? 500 : 200;
    if (!strcmp(url, "/api/v1/namespaces/ns1/pods"))
        return buf_printf(out, "{\"kind\":\"PodList\",\"metadata\":{},\"items\":[%s]}", pod_json) ? 500 : 200;
    return 404;
}

/* obsdiff: a node's certificate is news, and in the JSON. */
static void test_obsdiff_cert(void)
{
    obs_node_t a, b;
    memset(&a, 0, sizeof(a));
    snprintf(a.pod, sizeof(a.pod), "cache-0");
    a.offset = a.last_ok_ago_ms = a.link_down_ms = -1;
    a.reachable = 1;
    b = a;
    snprintf(a.tls_cert, sizeof(a.tls_cert), "%s", sha1);
    snprintf(b.tls_cert, sizeof(b.tls_cert), "%s", sha2);
    CU_ASSERT_EQUAL(obsdiff_compare(&a, 1, &a, 1), OBSDIFF_SAME);
    CU_ASSERT_EQUAL(obsdiff_compare(&a, 1, &b, 1), OBSDIFF_CHANGED);
    char why[200];
    obsdiff_explain(&a, 1, &b, 1, why, sizeof(why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "cache-0: tlsCert "));
    buf_t j;
    buf_init(&j, 0);
    CU_ASSERT_EQUAL(obsdiff_json(&b, 1, "t", &j), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf_str(&j), sha2));
    buf_free(&j);
}

static void on_probe_done(redisnode_t *n, void *arg)
{
    (void)n;
    ++*(int *)arg;
}

static const redisnode_state_t *probe(loop_t *loop, redisnode_t *n)
{
    CU_ASSERT_EQUAL(redisnode_probe(n, 0), 0);
    int64_t end = clock_mono_ns() + 3 * NS_PER_SEC;
    while (redisnode_busy(n) && clock_mono_ns() < end)
        loop_run_once(loop, 100 * NS_PER_MS);
    return redisnode_state(n);
}

/* Redis reads its files again: CONFIG SET of the paths it has. */
static void reload(const char *pem_crt, const char *pem_key)
{
    tc_write_file(dir, "live.crt", pem_crt);
    tc_write_file(dir, "live.key", pem_key);
    char err[512];
    redis_tls_config_t cfg = {.ca_pem = pki.ca.crt_pem, .ca_len = strlen(pki.ca.crt_pem),
                              .cert_pem = pki.client.crt_pem, .cert_len = strlen(pki.client.crt_pem),
                              .key_pem = pki.client.key_pem, .key_len = strlen(pki.client.key_pem)};
    redis_tls_t *t = redis_tls_new(&cfg, err, sizeof(err));
    redisexec_client_t cl = {.tls = t, .tls_domain = "cache.ns1.svc"};
    const char *av[] = {"CONFIG", "SET", "tls-cert-file", REDISEXEC_CURRENT_TOKEN, "tls-key-file",
                        REDISEXEC_CURRENT_TOKEN};
    CU_ASSERT_EQUAL(
        redisexec_run(&cl, "cache-0", "127.0.0.1", srv.port, 6, av, 2 * NS_PER_SEC, NULL, 0, err, sizeof(err)), 0);
    redis_tls_destroy(&t);
}

static void test_redisnode_cert(void)
{
    char err[256];
    redis_tls_config_t cfg = {.ca_pem = pki.ca.crt_pem, .ca_len = strlen(pki.ca.crt_pem),
                              .cert_pem = pki.client.crt_pem, .cert_len = strlen(pki.client.crt_pem),
                              .key_pem = pki.client.key_pem, .key_len = strlen(pki.client.key_pem)};
    redis_tls_t *t = redis_tls_new(&cfg, err, sizeof(err));
    loop_t *loop = loop_new();
    int calls = 0;
    redisnode_t *n = redisnode_new(loop, "127.0.0.1", srv.port, 500 * NS_PER_MS, on_probe_done, &calls);
    redisnode_set_tls(n, t, "cache-0.cache.ns1.svc");
    const redisnode_state_t *st = probe(loop, n);
    CU_ASSERT_EQUAL(st->reachable, 1);
    CU_ASSERT_STRING_EQUAL(st->tls_cert, sha1);
    reload(cert2.crt_pem, cert2.key_pem);
    CU_ASSERT_STRING_EQUAL(probe(loop, n)->tls_cert, sha1); /* the same connection */
    redisnode_reconnect(n);
    CU_ASSERT_STRING_EQUAL(probe(loop, n)->tls_cert, sha2); /* a new handshake */
    reload(cert1.crt_pem, cert1.key_pem);
    redisnode_destroy(&n);
    loop_destroy(&loop);
    redis_tls_destroy(&t);
}

static json_object *observed_with(oh_t *h, const char *cert, int ms)
{
    char key[128];
    int64_t end = clock_mono_ns() + (int64_t)ms * NS_PER_MS;
    while (clock_mono_ns() < end) {
        json_object *o = oh_next_observed(h, 500, key, sizeof(key));
        json_object *n = o ? oh_node_of(o, "cache-0") : NULL;
        if (n && oh_int(n, "reachable") == 1 && !strcmp(oh_str(n, "tlsCert"), cert))
            return o;
        json_object_put(o);
    }
    return NULL;
}

static void test_observer_run_tls(void)
{
    fake_api_t a;
    fake_api_start(&a, api, NULL);
    make_pod();
    oh_t h;
    memset(&h, 0, sizeof(h));
    oh_item_t items[2] = {{"RedisCluster", "ns1/cache", RC_JSON}, {"Pod", "ns1/cache-0", pod_json}};
    h.items = items;
    h.nitems = 2;
    h.seq = 3;
    h.api_port = a.port;
    CU_ASSERT_EQUAL_FATAL(oh_start(&h, "observer-tls", srv.port), 0);
    json_object *o = observed_with(&h, sha1, 8000);
    CU_ASSERT_PTR_NOT_NULL(o);
    json_object_put(o);
    double left = -1;
    for (int i = 0; i < 40 && left <= 0; i++) {
        nap_ms(100);
        left = oh_metric(&h, "rdc_redis_tls_cert_expiry_seconds{namespace=\"ns1\",rediscluster=\"cache\"}");
    }
    CU_ASSERT(left > 29 * 86400 && left <= 30 * 86400);
    /* renewed: the Secret first (its metadata on the delta stream), then Redis */
    pthread_mutex_lock(&mu);
    served = &cert2;
    secret_rv = 2;
    pthread_mutex_unlock(&mu);
    oh_delta(&h, "MODIFIED", "Secret", "ns1/cache-tls",
             "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"cache-tls\",\"namespace\":\"ns1\","
             "\"resourceVersion\":\"2\"}}");
    for (int i = 0; i < 40 && left < 31 * 86400; i++) {
        nap_ms(100);
        left = oh_metric(&h, "rdc_redis_tls_cert_expiry_seconds{namespace=\"ns1\",rediscluster=\"cache\"}");
    }
    CU_ASSERT(left > 59 * 86400);
    reload(cert2.crt_pem, cert2.key_pem);
    o = observed_with(&h, sha2, 8000);
    CU_ASSERT_PTR_NOT_NULL(o); /* a fresh connection shows it */
    json_object_put(o);
    CU_ASSERT_EQUAL(oh_sigterm(&h), 1);
    oh_stop(&h);
    fake_api_stop(&a);
    reload(cert1.crt_pem, cert1.key_pem);
    pthread_mutex_lock(&mu);
    served = &cert1;
    pthread_mutex_unlock(&mu);
}

static void test_once_tls(void)
{
    fake_api_t a;
    fake_api_start(&a, api, NULL);
    make_pod();
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    fake_api_connect(&a, NULL, &cfg, &client);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CU_ASSERT_EQUAL(observer_once(client, "ns1", "cache", srv.port, 500 * NS_PER_MS, f), 0);
    fclose(f);
    json_object *o = json_tokener_parse(text);
    json_object *n = oh_node_of(o, "cache-0");
    CU_ASSERT_EQUAL(oh_int(n, "reachable"), 1);
    CU_ASSERT_STRING_EQUAL(oh_str(n, "tlsCert"), sha1);
    json_object_put(o);
    free(text);
    fake_api_close(&a, &cfg, &client);
}

static const cu_entry_t tests[] = {
    CU_SUITE("observerd over TLS"),
    {"obsdiff: the certificate a node presents is news", test_obsdiff_cert},
    {"redisnode: the server's certificate, renewed, on a new connection", test_redisnode_cert},
    {"observer_once over TLS", test_once_tls},
    {"observer_run: the TLS Secret, tlsCert, the expiry metric, a renewal", test_observer_run_tls},
};
CU_MAIN(tests)
