/* Unit tests of the storage migration (supervisor/migrate.h) against an in-process fake
 * API server (libmicrohttpd on 127.0.0.1, as in test_kube_client.c) that keeps
 * RedisClusters with the version each is stored in, pages LISTs with continue tokens,
 * checks resourceVersion preconditions, and holds the CRD's storage version and
 * status.storedVersions. The rate limit runs on a fake clock.
 */
#include "buf.h"
#include "cu_curl.h"
#include "cu_table.h"
#include "fake_api.h"
#include "fake_clock.h"
#include "kube_client.h"
#include "kube_config.h"
#include "migrate.h"

#include <CUnit/CUnit.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- The fake API server ---------------------------------------------------------------- */

#define MAX_OBJS 64
#define MAX_LOG 512

typedef struct {
    char name[32];
    int rv;
    int stored_v1;     /* 0: stored as v1alpha1 */
    int deleted;       /* deleted after the listing: still listed, PUT and GET answer 404 */
    int conflict_once; /* the next PUT meets a concurrent write (rv bumps, 409) */
    int invalid;       /* PUT answers 422 */
} fobj_t;

typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    fobj_t objs[MAX_OBJS];
    int nobjs;
    int next_rv;
    char storage[16];          /* the CRD's storage version */
    char stored[4][16];        /* status.storedVersions */
    int nstored;
    char fail_list_at[32];     /* a LIST with this continue token answers 500 */
    int expire_tokens;         /* LISTs with a continue token answer 410 while > 0 */
    char log[MAX_LOG][160];    /* "METHOD path?query" */
    int nlog;
} fake_t;

static void fobj_json(const fobj_t *o, buf_t *b)
{
    buf_printf(b, "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"%s\","
                  "\"namespace\":\"ns\",\"resourceVersion\":\"%d\"},\"spec\":{\"size\":1,\"mode\":\"Standalone\"}}",
               o->name, o->rv);
}

static void crd_json(const fake_t *f, buf_t *b)
{
    buf_printf(
        b,
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"redisclusters.cache.example.com\"},\"spec\":{\"versions\":["
        "{\"name\":\"v1\",\"served\":true,\"storage\":%s},{\"name\":\"v1alpha1\",\"served\":true,\"storage\":%s}]},"
        "\"status\":{\"storedVersions\":[",
        strcmp(f->storage, "v1") ? "false" : "true", strcmp(f->storage, "v1") ? "true" : "false");
    for (int i = 0; i < f->nstored; i++)
        buf_printf(b, "%s\"%s\"", i ? "," : "", f->stored[i]);
    buf_puts(b, "]}}");
}

static int status_body(buf_t *b, int code, const char *reason, const char *msg)
{
    buf_printf(b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"%s\",\"code\":%d,"
                  "\"message\":\"%s\"}",
               reason, code, msg);
    return code;
}

static fobj_t *find(fake_t *f, const char *name)
{
    for (int i = 0; i < f->nobjs; i++)
        if (!strcmp(f->objs[i].name, name))
            return &f->objs[i];
    return NULL;
}

static const char *arg(struct MHD_Connection *c, const char *k)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

#define CRD_PATH "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/redisclusters.cache.example.com"
#define LIST_PATH "/apis/cache.example.com/v1/redisclusters"
#define OBJ_PREFIX "/apis/cache.example.com/v1/namespaces/ns/redisclusters/"

/* Answer one request (f->mu held). Returns the HTTP status, the body in out. */
static int handle(fake_t *f, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                  buf_t *out)
{
    if (!strcmp(url, CRD_PATH) && !strcmp(method, "GET")) {
        crd_json(f, out);
        return 200;
    }
    if (!strcmp(url, CRD_PATH "/status") && !strcmp(method, "PATCH")) {
        json_object *p = json_tokener_parse(body), *st = NULL, *sv = NULL;
        if (!p || !json_object_object_get_ex(p, "status", &st) ||
            !json_object_object_get_ex(st, "storedVersions", &sv)) {
            json_object_put(p);
            return status_body(out, 400, "BadRequest", "bad patch");
        }
        int has_storage = 0;
        for (size_t i = 0; i < json_object_array_length(sv); i++)
            has_storage |= !strcmp(json_object_get_string(json_object_array_get_idx(sv, i)), f->storage);
        if (!has_storage) {
            json_object_put(p);
            return status_body(out, 422, "Invalid", "status.storedVersions: must have the storage version");
        }
        f->nstored = 0;
        for (size_t i = 0; i < json_object_array_length(sv) && i < 4; i++)
            snprintf(f->stored[f->nstored++], sizeof(f->stored[0]), "%s",
                     json_object_get_string(json_object_array_get_idx(sv, i)));
        json_object_put(p);
        crd_json(f, out);
        return 200;
    }
    if (!strcmp(url, LIST_PATH) && !strcmp(method, "GET")) {
        const char *limit = arg(c, "limit"), *cont = arg(c, "continue");
        long lim = limit ? strtol(limit, NULL, 10) : 0, start = 0;
        if (cont && *f->fail_list_at && !strcmp(cont, f->fail_list_at))
            return status_body(out, 500, "InternalError", "etcd is having a bad day");
        if (cont && f->expire_tokens > 0) {
            f->expire_tokens--;
            return status_body(out, 410, "Expired", "The provided continue parameter is too old");
        }
        if (cont)
            start = cont[0] == 'p' ? strtol(cont + 1, NULL, 10) : 0;
        buf_puts(out, "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisClusterList\",\"metadata\":{");
        long end = lim > 0 && start + lim < f->nobjs ? start + lim : f->nobjs;
        if (end < f->nobjs)
            buf_printf(out, "\"continue\":\"p%ld\"", end);
        buf_puts(out, "},\"items\":[");
        int first = 1;
        for (long i = start; i < end; i++) {
            if (!first)
                buf_puts(out, ",");
            first = 0;
            fobj_json(&f->objs[i], out);
        }
        buf_puts(out, "]}");
        return 200;
    }
    if (!strncmp(url, OBJ_PREFIX, strlen(OBJ_PREFIX))) {
        fobj_t *o = find(f, url + strlen(OBJ_PREFIX));
        if (!o || o->deleted)
            return status_body(out, 404, "NotFound", "not found");
        if (!strcmp(method, "GET")) {
            fobj_json(o, out);
            return 200;
        }
        if (strcmp(method, "PUT"))
            return status_body(out, 405, "MethodNotAllowed", "method");
        json_object *b = json_tokener_parse(body), *meta = NULL, *rv = NULL;
        json_object_object_get_ex(b, "metadata", &meta);
        json_object_object_get_ex(meta, "resourceVersion", &rv);
        int want = rv ? (int)strtol(json_object_get_string(rv), NULL, 10) : -1;
        json_object_put(b);
        if (o->conflict_once) {
            o->conflict_once = 0;
            o->rv = ++f->next_rv; /* someone else wrote it */
            return status_body(out, 409, "Conflict", "the object has been modified");
        }
        if (want != o->rv)
            return status_body(out, 409, "Conflict", "the object has been modified");
        if (o->invalid)
            return status_body(out, 422, "Invalid", "spec.size: Invalid value");
        const char *dry = arg(c, "dryRun");
        if (!dry && !o->stored_v1) {
            o->stored_v1 = 1;
            o->rv = ++f->next_rv;
        }
        fobj_json(o, out);
        return 200;
    }
    return status_body(out, 404, "NotFound", "no such path");
}

/* The fake_api handler: log the request, answer it from the store. */
static int on_request(void *user, struct MHD_Connection *c, const char *method, const char *url,
                      const char *body, buf_t *out)
{
    fake_t *f = user;
    pthread_mutex_lock(&f->mu);
    if (f->nlog < MAX_LOG) {
        const char *cont = arg(c, "continue"), *dry = arg(c, "dryRun");
        snprintf(f->log[f->nlog++], sizeof(f->log[0]), "%s %s%s%s%s", method, url, cont ? " continue=" : "",
                 cont ? cont : "", dry ? " dryRun" : "");
    }
    int code = handle(f, c, method, url, body, out);
    pthread_mutex_unlock(&f->mu);
    return code;
}

/* A fake with n RedisClusters c0..c{n-1}, the first n_old stored as v1alpha1, the CRD's
 * storage version v1 and storedVersions [v1alpha1, v1]. */
static fake_t *fake_start(int n, int n_old)
{
    fake_t *f = calloc(1, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    f->next_rv = 100;
    for (int i = 0; i < n && i < MAX_OBJS; i++) {
        snprintf(f->objs[i].name, sizeof(f->objs[i].name), "c%d", i);
        f->objs[i].rv = ++f->next_rv;
        f->objs[i].stored_v1 = i >= n_old;
        f->nobjs++;
    }
    snprintf(f->storage, sizeof(f->storage), "v1");
    snprintf(f->stored[0], sizeof(f->stored[0]), "v1alpha1");
    snprintf(f->stored[1], sizeof(f->stored[1]), "v1");
    f->nstored = 2;
    fake_api_start(&f->srv, on_request, f);
    return f;
}

static void fake_stop(fake_t **fp)
{
    fake_api_stop(&(*fp)->srv);
    pthread_mutex_destroy(&(*fp)->mu);
    free(*fp);
    *fp = NULL;
}

/* Requests whose log line starts with prefix. */
static int count_log(fake_t *f, const char *prefix)
{
    int n = 0;
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nlog; i++)
        n += !strncmp(f->log[i], prefix, strlen(prefix));
    pthread_mutex_unlock(&f->mu);
    return n;
}

static int stored_v1_count(fake_t *f)
{
    int n = 0;
    for (int i = 0; i < f->nobjs; i++)
        n += f->objs[i].stored_v1;
    return n;
}

/* ---- Client and clock ------------------------------------------------------------------ */

typedef struct {
    kube_config_t *cfg;
    kube_client_t *c;
} client_t;

static client_t client_for(fake_t *f)
{
    client_t cl = {0};
    /* no client-side limit (the migration's own is what is tested), no retries (a 500
     * ends the call at once) */
    kube_client_opts_t o = fake_api_opts(0);
    o.timeout_ms = 5000;
    fake_api_connect(&f->srv, &o, &cl.cfg, &cl.c);
    return cl;
}

static void client_free(client_t *cl)
{
    kube_client_destroy(&cl->c);
    kube_config_destroy(&cl->cfg);
}

static migrate_opts_t opts_with(fake_clock_t *fc, long page, double qps)
{
    migrate_opts_t o = {0};
    o.page_size = page;
    o.qps = qps;
    o.burst = 1;
    o.now_ns = fc_now;
    o.sleep_ns = fc_sleep;
    o.clock_user = fc;
    return o;
}

/* One migration's world: the fake with n RedisClusters (n_old stored as v1alpha1), a
 * client of it, a fake clock and the options (page size, qps) that use it, and where
 * migrate_storage reports. */
typedef struct {
    fake_t *f;
    client_t cl;
    fake_clock_t fc;
    migrate_opts_t o;
    migrate_report_t r;
    kube_error_t e;
} mig_t;

static void mig_open(mig_t *m, int n, int n_old, long page, double qps)
{
    memset(m, 0, sizeof(*m));
    m->f = fake_start(n, n_old);
    m->cl = client_for(m->f);
    m->o = opts_with(&m->fc, page, qps);
}

static void mig_close(mig_t *m)
{
    client_free(&m->cl);
    fake_stop(&m->f);
}

/* ---- Tests ----------------------------------------------------------------------------------- */

static void test_migrates_every_object_then_stored_versions(void)
{
    mig_t m;
    mig_open(&m, 25, 20, 10, 5.0);
    int rc = migrate_storage(m.cl.c, &m.o, &m.r, &m.e);
    if (rc)
        fprintf(stderr, "migrate: %s\n", m.e.message);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(m.r.listed, 25);
    CU_ASSERT_EQUAL(m.r.rewritten, 20);
    CU_ASSERT_EQUAL(m.r.unchanged, 5);
    CU_ASSERT_EQUAL(m.r.pages, 3);
    CU_ASSERT_EQUAL(m.r.failed + m.r.gone + m.r.conflicts, 0);
    CU_ASSERT_STRING_EQUAL(m.r.stored_before, "v1alpha1,v1");
    CU_ASSERT_STRING_EQUAL(m.r.stored_after, "v1");
    CU_ASSERT(m.r.stored_versions_patched);
    CU_ASSERT_EQUAL(stored_v1_count(m.f), 25);
    CU_ASSERT_EQUAL(m.f->nstored, 1);
    CU_ASSERT_STRING_EQUAL(m.f->stored[0], "v1");
    CU_ASSERT_EQUAL(count_log(m.f, "PUT "), 25);
    CU_ASSERT_EQUAL(count_log(m.f, "GET " LIST_PATH " continue=p10"), 1);
    CU_ASSERT_EQUAL(count_log(m.f, "GET " LIST_PATH " continue=p20"), 1);
    /* 5 per second with a burst of 1: 24 waits of 200 ms. */
    CU_ASSERT_EQUAL(m.fc.sleeps, 24);
    CU_ASSERT(m.fc.slept >= INT64_C(4800000000) - 1000 && m.fc.slept <= INT64_C(4800000000) + 1000);
    buf_t b;
    buf_init(&b, 0);
    migrate_report_format(&m.r, &m.o, &b);
    CU_ASSERT_STRING_EQUAL(buf_str(&b),
                           "migrate-storage redisclusters.cache.example.com to v1: 25 listed, 20 rewritten, "
                           "5 unchanged, 0 conflicts, 0 gone, 0 failed, 3 pages; storedVersions "
                           "[v1alpha1,v1] -> [v1]");
    buf_free(&b);
    /* A second run has nothing to do and lists nothing. */
    int lists = count_log(m.f, "GET " LIST_PATH);
    CU_ASSERT_EQUAL(migrate_storage(m.cl.c, &m.o, &m.r, &m.e), 0);
    CU_ASSERT(m.r.already_done);
    CU_ASSERT_EQUAL(count_log(m.f, "GET " LIST_PATH), lists);
    mig_close(&m);
}

static void test_conflicts_reread_and_deleted_objects(void)
{
    mig_t m;
    mig_open(&m, 6, 6, 100, -1);
    m.f->objs[2].conflict_once = 1;
    m.f->objs[4].deleted = 1;
    CU_ASSERT_EQUAL(migrate_storage(m.cl.c, &m.o, &m.r, &m.e), 0);
    CU_ASSERT_EQUAL(m.r.listed, 6);
    CU_ASSERT_EQUAL(m.r.rewritten, 5);
    CU_ASSERT_EQUAL(m.r.conflicts, 1);
    CU_ASSERT_EQUAL(m.r.gone, 1);
    CU_ASSERT_EQUAL(m.r.failed, 0);
    CU_ASSERT_EQUAL(count_log(m.f, "GET " OBJ_PREFIX "c2"), 1); /* the re-read */
    CU_ASSERT_EQUAL(count_log(m.f, "PUT " OBJ_PREFIX "c2"), 2);
    CU_ASSERT(m.r.stored_versions_patched);
    CU_ASSERT_EQUAL(m.fc.sleeps, 0); /* unlimited */
    mig_close(&m);
}

static void test_failed_object_keeps_stored_versions(void)
{
    mig_t m;
    mig_open(&m, 4, 4, 100, -1);
    m.f->objs[1].invalid = 1;
    int rc = migrate_storage(m.cl.c, &m.o, &m.r, &m.e);
    CU_ASSERT_EQUAL(rc, KERR_INVALID);
    CU_ASSERT_EQUAL(m.r.failed, 1);
    CU_ASSERT_EQUAL(m.r.rewritten, 3); /* the others went on */
    CU_ASSERT(!m.r.stored_versions_patched);
    CU_ASSERT_EQUAL(m.f->nstored, 2);
    CU_ASSERT_EQUAL(count_log(m.f, "PATCH "), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(m.r.last_error, "ns/c1: PUT"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m.r.last_error, "Invalid"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(m.e.message, "1 object(s) could not be rewritten, storedVersions left as [v1alpha1,v1]"));
    mig_close(&m);
}

static void test_refuses_before_the_crd_is_v1(void)
{
    mig_t m;
    mig_open(&m, 3, 3, 100, -1);
    snprintf(m.f->storage, sizeof(m.f->storage), "v1alpha1");
    CU_ASSERT_EQUAL(migrate_storage(m.cl.c, NULL, &m.r, &m.e), KERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(m.e.message, "the storage version is v1alpha1, not v1"));
    CU_ASSERT_EQUAL(count_log(m.f, "GET " LIST_PATH), 0);
    CU_ASSERT_EQUAL(count_log(m.f, "PUT "), 0);
    mig_close(&m);
}

/* A fresh path for a state file in state (a mkstemp template): holding text, or, when
 * text is NULL, not there at all. */
static void state_file_at(char *state, const char *text)
{
    int fd = mkstemp(state);
    CU_ASSERT_FATAL(fd >= 0);
    if (text)
        CU_ASSERT_EQUAL((size_t)write(fd, text, strlen(text)), strlen(text));
    close(fd);
    if (!text)
        unlink(state);
}

static void test_resumes_from_the_state_file(void)
{
    char state[] = "/tmp/test_migrate_state_XXXXXX";
    state_file_at(state, NULL);
    mig_t m;
    mig_open(&m, 25, 25, 10, -1);
    snprintf(m.f->fail_list_at, sizeof(m.f->fail_list_at), "p20");
    m.o.state_file = state;
    /* The third page fails: 20 done, the state file points at p20. */
    CU_ASSERT_EQUAL(migrate_storage(m.cl.c, &m.o, &m.r, &m.e), KERR_INTERNAL);
    CU_ASSERT_EQUAL(m.r.rewritten, 20);
    CU_ASSERT(!m.r.stored_versions_patched);
    FILE *sf = fopen(state, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sf);
    char text[1024] = "";
    CU_ASSERT(fread(text, 1, sizeof(text) - 1, sf) > 0);
    fclose(sf);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"continue\":\"p20\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"rewritten\":20"));
    /* The second run starts at p20 and finishes; the counts add up. */
    m.f->fail_list_at[0] = '\0';
    int first_pages = count_log(m.f, "GET " LIST_PATH " continue=p10");
    CU_ASSERT_EQUAL(migrate_storage(m.cl.c, &m.o, &m.r, &m.e), 0);
    CU_ASSERT(m.r.resumed);
    CU_ASSERT_EQUAL(m.r.pages, 1);
    CU_ASSERT_EQUAL(m.r.listed, 25);
    CU_ASSERT_EQUAL(m.r.rewritten, 25);
    CU_ASSERT_EQUAL(count_log(m.f, "GET " LIST_PATH " continue=p10"), first_pages); /* pages 1-2 not listed again */
    CU_ASSERT_EQUAL(stored_v1_count(m.f), 25);
    CU_ASSERT(m.r.stored_versions_patched);
    CU_ASSERT_EQUAL(access(state, F_OK), -1); /* removed when done */
    mig_close(&m);
}

static void test_expired_token_lists_again(void)
{
    char state[] = "/tmp/test_migrate_state_XXXXXX";
    state_file_at(
        state, "{\"crd\":\"redisclusters.cache.example.com\",\"version\":\"v1\",\"continue\":\"p10\",\"listed\":10}\n");
    mig_t m;
    mig_open(&m, 15, 15, 10, -1);
    m.f->expire_tokens = 1;
    m.o.state_file = state;
    CU_ASSERT_EQUAL(migrate_storage(m.cl.c, &m.o, &m.r, &m.e), 0);
    CU_ASSERT(m.r.resumed && m.r.restarted);
    CU_ASSERT_EQUAL(m.r.rewritten, 15); /* everything, from the first page */
    CU_ASSERT_EQUAL(stored_v1_count(m.f), 15);
    CU_ASSERT(m.r.stored_versions_patched);
    unlink(state);
    mig_close(&m);
}

static void test_dry_run_writes_nothing(void)
{
    mig_t m;
    mig_open(&m, 5, 5, 100, -1);
    m.o.dry_run = 1;
    CU_ASSERT_EQUAL(migrate_storage(m.cl.c, &m.o, &m.r, &m.e), 0);
    CU_ASSERT_EQUAL(m.r.unchanged, 5);
    CU_ASSERT_EQUAL(m.r.rewritten, 0);
    CU_ASSERT_EQUAL(count_log(m.f, "PUT "), 5);
    CU_ASSERT_EQUAL(stored_v1_count(m.f), 0);
    CU_ASSERT_EQUAL(count_log(m.f, "PATCH "), 0);
    CU_ASSERT_EQUAL(m.f->nstored, 2);
    mig_close(&m);
}

CU_HOOKS({"migrate", cu_curl_init, cu_curl_clean, NULL, NULL});

static const cu_entry_t tests[] = {
    CU_SUITE("migrate"),
    {"every object rewritten, rate limited, then storedVersions [v1]",
     test_migrates_every_object_then_stored_versions},
    {"conflicts re-read, deleted objects counted gone", test_conflicts_reread_and_deleted_objects},
    {"a failed object leaves storedVersions alone", test_failed_object_keeps_stored_versions},
    {"refused while the storage version is not v1", test_refuses_before_the_crd_is_v1},
    {"resumes from the state file", test_resumes_from_the_state_file},
    {"an expired continue token lists again from the start", test_expired_token_lists_again},
    {"dry run writes nothing", test_dry_run_writes_nothing},
};

CU_MAIN(tests)
