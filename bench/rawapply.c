/* rawapply: the leanest client for the operator's create writes, to show what the API
 * server can take (bench/README.md, "raw limit").
 *
 * One process, no cache, no rate limiter, every request pipelined on one libcurl multi
 * handle: HTTP/2 streams multiplexed over one TLS connection (--http 2, the default), or
 * --concurrency parallel HTTP/1.1 connections (--http 1). Handles come from the
 * operator's own client (kube_client_stream_handle: the kubeconfig's server, CA, client
 * certificate and token), bodies from the operator's own renderer (workerd/render.o), so
 * the requests are the ones workerd sends.
 *
 *   phase 1  POST --count RedisClusters (the user's creates; timed on their own)
 *   phase 2  per cluster, as workerd does it: the finalizer merge patch (with the
 *            resourceVersion precondition), then the three server-side applies
 *            (ConfigMap, Service, StatefulSet; concurrently), then one status
 *            server-side apply. Every cluster's chain runs at once, --concurrency requests in flight.
 *
 * Prints one JSON object with the timings, request rates and status codes. Requests are
 * retried (at most 3 times) on 429, 5xx and transport errors. Bounded: every transfer
 * has a 60 s timeout and the run stops after --max-seconds.
 */
#include "buf.h"
#include "kube_client.h"
#include "kube_config.h"
#include "render.h"

#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TRIES 4
#define CODES 600

enum { ST_CREATE, ST_FINALIZER, ST_APPLY_CM, ST_APPLY_SVC, ST_APPLY_STS, ST_STATUS };

typedef struct {
    char name[64];
    char uid[64];
    char rv[32];
    int applies_left;
} cluster_t;

typedef struct req {
    CURL *h;
    struct curl_slist *hdrs;
    char *body;
    buf_t resp;
    int cluster;
    int step;
    int tries;
    double t_start;
    struct req *next;
} req_t;

typedef struct {
    long codes[CODES];
    long requests, failed, retries;
    double t0, t1;
    double *lat;
    size_t nlat, caplat;
} phase_t;

static kube_client_t *g_client;
static CURLM *g_multi;
static const char *g_ns = "default";
static const char *g_sc;
static int g_http = 2;
static cluster_t *g_clusters;
static req_t *g_queue_head, *g_queue_tail;
static int g_inflight;
static phase_t *g_phase;
static long g_connects;
static long g_http_version_seen;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "rawapply: %s\n", what);
    exit(1);
}

static size_t on_body(char *p, size_t sz, size_t n, void *user)
{
    req_t *r = user;
    if (buf_append(&r->resp, p, sz * n))
        return 0;
    return sz * n;
}

static char *to_string(json_object *o)
{
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *d = strdup(s);
    if (!d)
        die("out of memory");
    return d;
}

/* The request for one step of one cluster: path, content type and body. */
static req_t *build(int ci, int step)
{
    cluster_t *c = &g_clusters[ci];
    buf_t path;
    buf_init(&path, 4096);
    const char *ctype = "application/json", *method = "PATCH";
    json_object *body = NULL;
    char *text = NULL;
    int oom = 0;
    rdc_spec_t spec;
    rdc_spec_defaults(&spec);
    spec.size = 3;
    spec.image = "redis:7.2";
    spec.tag = NULL; /* the image names its tag */
    spec.storage.storage_class = g_sc;
    spec.config.maxmemory = "256mb";
    render_input_t in = {.name = c->name, .ns = g_ns, .uid = c->uid, .spec = &spec};
    buf_t conf;
    buf_init(&conf, 1 << 16);
    char hash[65] = "";
    if (step == ST_APPLY_CM || step == ST_APPLY_STS) {
        if (render_redis_conf(&in, &conf) || render_sha256_hex(conf.data, conf.len, hash))
            die("render_redis_conf failed");
    }
    switch (step) {
    case ST_CREATE: {
        method = "POST";
        kube_path(&path, "cache.example.com", "v1", g_ns, "redisclusters", NULL, NULL);
        buf_t b;
        buf_init(&b, 4096);
        buf_printf(&b,
                   "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
                   "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"rdc-bench\":\"raw\"}},"
                   "\"spec\":{\"size\":3,\"image\":\"redis\",\"version\":\"7.2\","
                   "\"config\":{\"maxmemory\":\"256mb\",\"maxmemoryPolicy\":\"allkeys-lru\"},"
                   "\"storage\":{\"size\":\"1Gi\"%s%s%s}}}",
                   c->name, g_ns, g_sc ? ",\"storageClass\":\"" : "", g_sc ? g_sc : "", g_sc ? "\"" : "");
        text = buf_detach(&b);
        break;
    }
    case ST_FINALIZER:
        ctype = "application/merge-patch+json";
        kube_path(&path, "cache.example.com", "v1", g_ns, "redisclusters", c->name, NULL);
        body = jsonx_new_obj(&oom);
        {
            json_object *md = jsonx_new_obj(&oom), *fin = jsonx_new_arr(&oom);
            jsonx_push(fin, jsonx_new_str("cache.example.com/finalizer", &oom), &oom);
            jsonx_put(md, "finalizers", fin, &oom);
            jsonx_put(md, "resourceVersion", jsonx_new_str(c->rv, &oom), &oom);
            jsonx_put(body, "metadata", md, &oom);
        }
        break;
    case ST_APPLY_CM:
        ctype = "application/apply-patch+yaml";
        kube_path(&path, "", "v1", g_ns, "configmaps", c->name, NULL);
        body = render_configmap(&in, buf_str(&conf));
        break;
    case ST_APPLY_SVC:
        ctype = "application/apply-patch+yaml";
        kube_path(&path, "", "v1", g_ns, "services", c->name, NULL);
        body = render_service(&in);
        break;
    case ST_APPLY_STS:
        ctype = "application/apply-patch+yaml";
        kube_path(&path, "apps", "v1", g_ns, "statefulsets", c->name, NULL);
        body = render_statefulset(&in, hash);
        break;
    case ST_STATUS: {
        ctype = "application/apply-patch+yaml";
        kube_path(&path, "cache.example.com", "v1", g_ns, "redisclusters", c->name, "status");
        buf_t b;
        buf_init(&b, 4096);
        char ts[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
        buf_printf(
            &b,
            "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"status\":{\"phase\":\"Pending\","
            "\"replicas\":0,\"readyReplicas\":0,\"observedGeneration\":1,"
            "\"selector\":\"app.kubernetes.io/name=redis,app.kubernetes.io/instance=%s\",\"conditions\":["
            "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Creating\",\"message\":\"0/3 replicas ready\","
            "\"lastTransitionTime\":\"%s\",\"observedGeneration\":1},"
            "{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"Creating\",\"message\":\"creating\","
            "\"lastTransitionTime\":\"%s\",\"observedGeneration\":1},"
            "{\"type\":\"Degraded\",\"status\":\"False\",\"reason\":\"AsExpected\",\"message\":\"\","
            "\"lastTransitionTime\":\"%s\",\"observedGeneration\":1}]}}",
            c->name, g_ns, c->name, ts, ts, ts);
        text = buf_detach(&b);
        break;
    }
    }
    buf_free(&conf);
    if (step == ST_APPLY_CM || step == ST_APPLY_SVC || step == ST_APPLY_STS || step == ST_STATUS)
        buf_puts(&path, "?fieldManager=rediscluster-operator&force=true");
    if (body) {
        if (oom)
            die("out of memory rendering");
        text = to_string(body);
        json_object_put(body);
    }
    if (!text)
        die("no body");

    req_t *r = calloc(1, sizeof(*r));
    if (!r)
        die("out of memory");
    r->cluster = ci;
    r->step = step;
    r->body = text;
    buf_init(&r->resp, 1 << 20);
    /* kube_client_stream_handle wants path and query apart */
    char *q = strchr(path.data, '?');
    if (q)
        *q++ = '\0';
    kube_error_t err;
    kube_error_clear(&err);
    r->h = kube_client_stream_handle(g_client, path.data, q, 60000, &r->hdrs, &err);
    if (!r->h) {
        char line[1024];
        fprintf(stderr, "rawapply: %s\n", kube_error_str(&err, line, sizeof(line)));
        exit(1);
    }
    buf_free(&path);
    char ct[128];
    snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
    r->hdrs = curl_slist_append(r->hdrs, ct);
    curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
    curl_easy_setopt(r->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->body));
    curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(r->h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
    curl_easy_setopt(r->h, CURLOPT_HTTP_VERSION,
                     g_http == 2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(r->h, CURLOPT_PIPEWAIT, 1L);
    return r;
}

static void req_free(req_t *r)
{
    curl_easy_cleanup(r->h);
    curl_slist_free_all(r->hdrs);
    free(r->body);
    buf_free(&r->resp);
    free(r);
}

static void enqueue(req_t *r)
{
    r->next = NULL;
    if (g_queue_tail)
        g_queue_tail->next = r;
    else
        g_queue_head = r;
    g_queue_tail = r;
}

static void start_queued(int concurrency)
{
    while (g_queue_head && g_inflight < concurrency) {
        req_t *r = g_queue_head;
        g_queue_head = r->next;
        if (!g_queue_head)
            g_queue_tail = NULL;
        buf_reset(&r->resp);
        r->t_start = now_s();
        if (curl_multi_add_handle(g_multi, r->h) != CURLM_OK)
            die("curl_multi_add_handle failed");
        g_inflight++;
    }
}

static void lat_add(phase_t *p, double v)
{
    if (p->nlat == p->caplat) {
        p->caplat = p->caplat ? 2 * p->caplat : 1024;
        p->lat = realloc(p->lat, p->caplat * sizeof(double));
        if (!p->lat)
            die("out of memory");
    }
    p->lat[p->nlat++] = v;
}

/* A request finished: account for it and queue what comes next in its cluster's chain. */
static void finished(req_t *r, CURLcode res)
{
    long code = 0;
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
    long conns = 0;
    curl_easy_getinfo(r->h, CURLINFO_NUM_CONNECTS, &conns);
    g_connects += conns;
    long ver = 0;
    curl_easy_getinfo(r->h, CURLINFO_HTTP_VERSION, &ver);
    if (ver)
        g_http_version_seen = ver;
    g_phase->requests++;
    if (code >= 0 && code < CODES)
        g_phase->codes[code]++;
    int transient = res != CURLE_OK || code == 429 || code >= 500;
    if (transient && ++r->tries < MAX_TRIES) {
        g_phase->retries++;
        enqueue(r);
        return;
    }
    lat_add(g_phase, now_s() - r->t_start);
    if (res != CURLE_OK || code < 200 || code >= 300) {
        g_phase->failed++;
        if (g_phase->failed <= 5)
            fprintf(stderr, "rawapply: step %d of %s: %s HTTP %ld %.300s\n", r->step,
                    g_clusters[r->cluster].name, curl_easy_strerror(res), code, buf_str(&r->resp));
        req_free(r);
        return;
    }
    cluster_t *c = &g_clusters[r->cluster];
    int ci = r->cluster;
    switch (r->step) {
    case ST_CREATE: {
        json_object *o = json_tokener_parse(buf_str(&r->resp)), *md = NULL, *v = NULL;
        if (o && json_object_object_get_ex(o, "metadata", &md)) {
            if (json_object_object_get_ex(md, "uid", &v))
                snprintf(c->uid, sizeof(c->uid), "%s", json_object_get_string(v));
            if (json_object_object_get_ex(md, "resourceVersion", &v))
                snprintf(c->rv, sizeof(c->rv), "%s", json_object_get_string(v));
        }
        json_object_put(o);
        break;
    }
    case ST_FINALIZER:
        c->applies_left = 3;
        enqueue(build(ci, ST_APPLY_CM));
        enqueue(build(ci, ST_APPLY_SVC));
        enqueue(build(ci, ST_APPLY_STS));
        break;
    case ST_APPLY_CM:
    case ST_APPLY_SVC:
    case ST_APPLY_STS:
        if (--c->applies_left == 0)
            enqueue(build(ci, ST_STATUS));
        break;
    default:
        break;
    }
    req_free(r);
}

static int run_phase(phase_t *p, int concurrency, double deadline)
{
    g_phase = p;
    p->t0 = now_s();
    start_queued(concurrency);
    while ((g_inflight > 0 || g_queue_head) && now_s() < deadline) {
        int running = 0;
        curl_multi_perform(g_multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(g_multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            req_t *r = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            CURLcode res = m->data.result;
            curl_multi_remove_handle(g_multi, m->easy_handle);
            g_inflight--;
            finished(r, res);
        }
        start_queued(concurrency);
        if (g_inflight > 0)
            curl_multi_poll(g_multi, NULL, 0, 100, NULL);
    }
    p->t1 = now_s();
    return g_inflight > 0 || g_queue_head ? -1 : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double q(const phase_t *p, double f)
{
    if (!p->nlat)
        return 0;
    size_t i = (size_t)(f * (double)(p->nlat - 1) + 0.5);
    return p->lat[i] * 1000.0;
}

static void print_phase(const char *name, phase_t *p, int last)
{
    qsort(p->lat, p->nlat, sizeof(double), cmp_double);
    double secs = p->t1 - p->t0;
    printf("\"%s\":{\"requests\":%ld,\"retries\":%ld,\"failed\":%ld,\"seconds\":%.3f,\"rps\":%.1f,"
           "\"latency_ms\":{\"p50\":%.1f,\"p95\":%.1f,\"p99\":%.1f,\"max\":%.1f},\"codes\":{",
           name, p->requests, p->retries, p->failed, secs, secs > 0 ? (double)(p->requests - p->retries) / secs : 0,
           q(p, 0.5), q(p, 0.95), q(p, 0.99), q(p, 1.0));
    int first = 1;
    for (int i = 0; i < CODES; i++)
        if (p->codes[i]) {
            printf("%s\"%d\":%ld", first ? "" : ",", i, p->codes[i]);
            first = 0;
        }
    printf("}}%s", last ? "" : ",");
    free(p->lat);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: rawapply [--kubeconfig PATH] [--namespace NS] [--count N] [--concurrency C]\n"
            "                [--http 2|1] [--storage-class SC] [--prefix c] [--max-seconds S]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *kubeconfig = NULL, *prefix = "c";
    long count = 10, concurrency = 100, max_seconds = 300;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help"))
            usage();
        if (!v)
            usage();
        if (!strcmp(a, "--kubeconfig"))
            kubeconfig = v;
        else if (!strcmp(a, "--namespace"))
            g_ns = v;
        else if (!strcmp(a, "--count"))
            count = strtol(v, NULL, 10);
        else if (!strcmp(a, "--concurrency"))
            concurrency = strtol(v, NULL, 10);
        else if (!strcmp(a, "--http"))
            g_http = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--storage-class"))
            g_sc = v;
        else if (!strcmp(a, "--prefix"))
            prefix = v;
        else if (!strcmp(a, "--max-seconds"))
            max_seconds = strtol(v, NULL, 10);
        else
            usage();
        i++;
    }
    if (count < 1 || count > 100000 || concurrency < 1 || concurrency > 10000 || max_seconds < 1)
        usage();

    curl_global_init(CURL_GLOBAL_DEFAULT);
    kube_config_opts_t co = {.kubeconfig_path = kubeconfig};
    kube_config_t *cfg = NULL;
    char err[1024];
    if (kube_config_load(&co, &cfg, err, sizeof(err)))
        die(err);
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.user_agent = "rawapply/1";
    o.qps = 0;
    kube_error_t kerr;
    kube_error_clear(&kerr);
    g_client = kube_client_new(cfg, &o, &kerr);
    if (!g_client)
        die("kube_client_new failed");
    g_multi = curl_multi_init();
    if (g_http == 2) {
        curl_multi_setopt(g_multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
        curl_multi_setopt(g_multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    } else {
        curl_multi_setopt(g_multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
        curl_multi_setopt(g_multi, CURLMOPT_MAX_HOST_CONNECTIONS, concurrency);
    }
    curl_multi_setopt(g_multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, g_http == 2 ? 1L : concurrency);
    curl_multi_setopt(g_multi, CURLMOPT_MAXCONNECTS, concurrency);

    g_clusters = calloc((size_t)count, sizeof(cluster_t));
    if (!g_clusters)
        die("out of memory");
    for (long i = 0; i < count; i++)
        snprintf(g_clusters[i].name, sizeof(g_clusters[i].name), "%s%04ld", prefix, i);

    double deadline = now_s() + (double)max_seconds;
    phase_t creates = {0}, writes = {0};
    for (long i = 0; i < count; i++)
        enqueue(build((int)i, ST_CREATE));
    int rc1 = run_phase(&creates, (int)concurrency, deadline);
    for (long i = 0; i < count; i++)
        if (g_clusters[i].uid[0])
            enqueue(build((int)i, ST_FINALIZER));
    int rc2 = rc1 ? -1 : run_phase(&writes, (int)concurrency, deadline);

    printf("{\"n\":%ld,\"concurrency\":%ld,\"protocol\":\"%s\",\"connections\":%ld,\"timed_out\":%s,",
           count, concurrency,
           g_http_version_seen == CURL_HTTP_VERSION_2_0 ? "HTTP/2" :
           g_http_version_seen == CURL_HTTP_VERSION_1_1 ? "HTTP/1.1" : "?",
           g_connects, rc1 || rc2 ? "true" : "false");
    print_phase("creates", &creates, 0);
    print_phase("writes", &writes, 1);
    printf("}\n");

    curl_multi_cleanup(g_multi);
    kube_client_destroy(&g_client);
    kube_config_destroy(&cfg);
    free(g_clusters);
    curl_global_cleanup();
    return rc1 || rc2 || creates.failed || writes.failed ? 1 : 0;
}
