/* test_tls_acl: spec.tls and spec.acl in workerd (docs/tls-and-acl.md), without a server:
 *
 * - render: redis.conf's TLS directives (port 0 or the plain-text port, tls-port 6379,
 *   the files, tls-auth-clients, tls-replication, tls-cluster in Cluster mode), the
 *   Secret's volume and mounts, the probes' and the preStop hook's redis-cli over TLS, the
 *   Services' ports; the ACL file (the default user spec.auth's, each user's rules, tokens
 *   for the hashes, never a password) and its Secret; a spec without either renders as
 *   before;
 * - secretset: a spec.tls Secret made of certificates from OpenSSL's API checked for the
 *   pods' names, the client settings, a missing Secret refused; the ACL users' hashes as
 *   tokens, salted fingerprints, a missing key said;
 * - plan: TLSReady for each case (valid, expiring, expired, missing, rotating), the
 *   Degraded finding and events, CONFIG SET ${current} on a pod that serves another
 *   certificate; the ACL file written by digest (before the children when new), each pod
 *   given the users with ACL SETUSER, a removed user dropped with ACL DELUSER, recorded;
 *   no password and no hash in the plan's JSON;
 * - redisexec_expand_text: every token in a text.
 */
#include "cu_table.h"
#include "plan.h"
#include "plan_fixture.h"
#include "plan_acl.h"
#include "rdc_spec.h"
#include "redisexec.h"
#include "render.h"
#include "secretset.h"
#include "text_assert.h"

#include "json_at.h"
#include "redis_tls_certs.h"

#include <CUnit/CUnit.h>
#include <openssl/evp.h>
#include <time.h>

#define T0 INT64_C(1700000000000000000)
#define APP_PW "app-Secret-pw-1"
#define RO_PW "ro-Secret-pw-2"
#define AUTH_PW "auth-Secret-pw-0"

static tc_pki_t pki;
static tc_cert_t pods_cert, old_cert;

static int suite_init(void)
{
    tc_pki_make(&pki);
    pods_cert = tc_make("cache", &pki.ca, 0, "DNS:*.cache.ns1.svc", "serverAuth,clientAuth", -3600, 90 * 86400);
    old_cert = tc_make("cache", &pki.ca, 0, "DNS:*.cache.ns1.svc", "serverAuth,clientAuth", -80 * 86400, 86400);
    return 0;
}

static int suite_clean(void)
{
    tc_cert_free(&pods_cert);
    tc_cert_free(&old_cert);
    tc_pki_free(&pki);
    return 0;
}

/* A RedisCluster ns1/cache with the finalizer and spec members extra after size/image. */
static json_object *rc_of(const char *extra)
{
    return parsef("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\","
                  "\"namespace\":\"ns1\",\"uid\":\"uid-1\",\"generation\":1,\"resourceVersion\":\"10\","
                  "\"finalizers\":[\"cache.example.com/finalizer\"]},\"spec\":{\"size\":3,"
                  "\"image\":\"redis:7.2\"%s%s}}",
                  *extra ? "," : "", extra);
}

static void spec_of(const json_object *rc, rdc_spec_t *spec)
{
    rdc_field_errors_t *e = rdc_field_errors_new();
    CU_ASSERT_EQUAL_FATAL(rdc_spec_parse(rc, spec, e), 0);
    rdc_field_errors_destroy(&e);
}

#define TLS_SPEC "\"tls\":{\"secretRef\":{\"name\":\"cache-tls\"},\"clientAuth\":true}"
#define AUTH_SPEC "\"auth\":{\"secretRef\":{\"name\":\"pw\"}}"
#define ACL_SPEC                                                                                                      \
    "\"acl\":{\"users\":[{\"name\":\"ro\",\"rules\":\"~* +@read\",\"passwordSecretRef\":{\"name\":\"ro-pw\"}},"      \
    "{\"name\":\"app\",\"rules\":\"~app:*  +@all (~x* +get)\",\"passwordSecretRef\":{\"name\":\"app-pw\","         \
    "\"key\":\"pw\"}}]}"

/* ---- render ------------------------------------------------------------------------- */

static void conf_of(const char *extra, buf_t *out, json_object **sts, json_object **svc)
{
    json_object *rc = rc_of(extra);
    rdc_spec_t spec;
    spec_of(rc, &spec);
    render_input_t in = {"cache", "ns1", "uid-1", &spec, spec.mode == RDC_MODE_CLUSTER ? 0 : -1, 0, NULL};
    buf_init(out, 0);
    CU_ASSERT_EQUAL(render_redis_conf(&in, out), 0);
    if (sts)
        *sts = render_statefulset(&in, "hash");
    if (svc)
        *svc = render_service(&in);
    json_object_put(rc);
}

static void test_render_tls(void)
{
    buf_t conf;
    json_object *sts = NULL, *svc = NULL;
    conf_of("\"mode\":\"Replication\"," TLS_SPEC, &conf, &sts, &svc);
    CU_ASSERT(text_contains(buf_str(&conf), "rediscluster-operator; edits are overwritten.\nport 0\ntls-port 6379\n"
                                            "tls-cert-file /etc/redis-tls/tls.crt\n"
                                            "tls-key-file /etc/redis-tls/tls.key\n"
                                            "tls-ca-cert-file /etc/redis-tls/ca.crt\ntls-auth-clients yes\n"
                                            "tls-replication yes\nunixsocket /data/redis.sock\nunixsocketperm 700\n"
                                            "protected-mode no\ndir /data\n"));
    CU_ASSERT(!text_contains(buf_str(&conf), "tls-cluster"));
    const json_object *pod = at(sts, "spec template spec");
    CU_ASSERT_STRING_EQUAL(str_at(pod, "volumes 1 name"), "tls");
    CU_ASSERT_STRING_EQUAL(str_at(pod, "volumes 1 secret secretName"), "cache-tls");
    CU_ASSERT_EQUAL(int_at(pod, "volumes 1 secret defaultMode"), 0440);
    CU_ASSERT_STRING_EQUAL(str_at(pod, "volumes 1 secret items 2 key"), "ca.crt");
    CU_ASSERT_STRING_EQUAL(str_at(pod, "containers 0 volumeMounts 2 mountPath"), "/etc/redis-tls");
    CU_ASSERT_EQUAL(json_object_get_boolean(at(pod, "containers 0 volumeMounts 2 readOnly")), 1);
    /* the probes over the pod's own Unix socket: their health never hangs on the Secret's
     * certificate (an expired one reaching the files would fail a TLS probe, and the
     * liveness probe would restart every pod onto it) */
    const char *probe[] = {"redis-cli", "-s", "/data/redis.sock", "ping"};
    for (size_t i = 0; i < 4; i++) {
        char path[96];
        snprintf(path, sizeof(path), "containers 0 readinessProbe exec command %zu", i);
        CU_ASSERT_STRING_EQUAL(str_at(pod, path), probe[i]);
        snprintf(path, sizeof(path), "containers 0 livenessProbe exec command %zu", i);
        CU_ASSERT_STRING_EQUAL(str_at(pod, path), probe[i]);
    }
    CU_ASSERT_PTR_NULL(at(pod, "containers 0 livenessProbe exec command 4"));
    const char *pre = str_at(pod, "containers 0 lifecycle preStop exec command 2");
    CU_ASSERT(text_contains(pre, "redis-cli --tls --cacert \"$REDIS_TLS_DIR/ca.crt\" --cert \"$REDIS_TLS_DIR/tls.crt\" "
                                 "--key \"$REDIS_TLS_DIR/tls.key\" info replication"));
    const json_object *env = at(pod, "containers 0 env");
    int dir_env = 0;
    for (size_t i = 0; env && i < json_object_array_length(env); i++)
        dir_env |= !strcmp(str_at(json_object_array_get_idx(env, i), "name"), "REDIS_TLS_DIR") &&
                   !strcmp(str_at(json_object_array_get_idx(env, i), "value"), "/etc/redis-tls");
    CU_ASSERT(dir_env);
    CU_ASSERT(!text_contains(pre, "redis-cli info"));
    CU_ASSERT_PTR_NULL(at(pod, "containers 0 ports 1")); /* no plain text */
    CU_ASSERT_PTR_NULL(at(svc, "spec ports 1"));
    buf_free(&conf);
    json_object_put(sts);
    json_object_put(svc);

    /* a migration: plain text on 6380 too, in the pod and the Services */
    conf_of("\"tls\":{\"secretRef\":{\"name\":\"cache-tls\"},\"allowPlaintext\":true}", &conf, &sts, &svc);
    ASSERT_TEXT_HAS(buf_str(&conf), "\nport 6380\ntls-port 6379\n", "tls-auth-clients no\n");
    CU_ASSERT_EQUAL(int_at(sts, "spec template spec containers 0 ports 1 containerPort"), 6380);
    CU_ASSERT_STRING_EQUAL(str_at(svc, "spec ports 1 name"), "redis-plain");
    CU_ASSERT_EQUAL(int_at(svc, "spec ports 0 port"), 6379);
    buf_free(&conf);
    json_object_put(sts);
    json_object_put(svc);

    /* Cluster mode: the bus speaks TLS */
    conf_of("\"mode\":\"Cluster\",\"size\":6," TLS_SPEC, &conf, NULL, NULL);
    CU_ASSERT(text_contains(buf_str(&conf),
                            "tls-replication yes\nunixsocket /data/redis.sock\nunixsocketperm 700\ntls-cluster yes\n"));
    buf_free(&conf);

    /* without spec.tls: as before, byte for byte in its first lines */
    conf_of("", &conf, &sts, NULL);
    CU_ASSERT(text_contains(buf_str(&conf), "overwritten.\nport 6379\nprotected-mode no\ndir /data\n"));
    CU_ASSERT(!text_contains(buf_str(&conf), "tls"));
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec template spec containers 0 readinessProbe exec command 1"), "ping");
    CU_ASSERT_PTR_NULL(at(sts, "spec template spec volumes 1"));
    buf_free(&conf);
    json_object_put(sts);
}

static void test_render_acl(void)
{
    buf_t conf, file;
    json_object *sts = NULL;
    conf_of(AUTH_SPEC "," ACL_SPEC, &conf, &sts, NULL);
    CU_ASSERT(text_contains(buf_str(&conf), "dir /data\naclfile /etc/redis-acl/users.acl\n"));
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec template spec volumes 1 secret secretName"), "cache-redis-acl");
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec template spec containers 0 volumeMounts 2 mountPath"), "/etc/redis-acl");
    buf_free(&conf);
    json_object_put(sts);
    json_object *rc = rc_of(AUTH_SPEC "," ACL_SPEC);
    rdc_spec_t spec;
    spec_of(rc, &spec);
    buf_init(&file, 0);
    CU_ASSERT_EQUAL(render_acl_file(&spec, &file), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&file), "user default on #${acl-hash:default} ~* &* +@all\n"
                                           "user app on #${acl-hash:app} ~app:* +@all (~x* +get)\n"
                                           "user ro on #${acl-hash:ro} ~* +@read\n");
    render_input_t in = {"cache", "ns1", "uid-1", &spec, -1, 0, NULL};
    json_object *s = render_acl_secret(&in, buf_str(&file), "d1", "app,ro");
    CU_ASSERT_STRING_EQUAL(str_at(s, "metadata name"), "cache-redis-acl");
    CU_ASSERT_STRING_EQUAL(str_at(s, "metadata annotations cache.example.com/acl-digest"), "d1");
    CU_ASSERT_STRING_EQUAL(str_at(s, "metadata annotations cache.example.com/acl-users"), "app,ro");
    CU_ASSERT_STRING_EQUAL(str_at(s, "metadata ownerReferences 0 uid"), "uid-1");
    CU_ASSERT_STRING_EQUAL(str_at(s, "stringData users.acl"), buf_str(&file));
    json_object_put(s);
    buf_free(&file);
    json_object_put(rc);
}

/* ---- secretset ----------------------------------------------------------------------- */

static char *b64(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)text, (int)n);
    return out;
}

/* A Secret whose data keys (NULL-terminated pairs) hold values, base64'd. */
static json_object *secret_of(const char *const *kv)
{
    json_object *s = parse("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"5\"},\"data\":{}}");
    for (size_t i = 0; kv[i]; i += 2) {
        char *v = b64(kv[i + 1]);
        json_object_object_add(at(s, "data"), kv[i], json_object_new_string(v));
        free(v);
    }
    return s;
}

static json_object *tls_secret(const tc_cert_t *c)
{
    const char *kv[] = {"tls.crt", c->crt_pem, "tls.key", c->key_pem, "ca.crt", pki.ca.crt_pem, NULL};
    return secret_of(kv);
}

static void sha_hex(const char *s, char out[65])
{
    CU_ASSERT_EQUAL_FATAL(render_sha256_hex(s, strlen(s), out), 0);
}

static void test_secretset(void)
{
    json_object *rc = rc_of(AUTH_SPEC "," TLS_SPEC "," ACL_SPEC);
    rdc_spec_t spec;
    spec_of(rc, &spec);
    secretset_t *s = secretset_new(&spec, "ns1", "cache", "uid-1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(secretset_name(s, 0), "cache-tls");
    CU_ASSERT_STRING_EQUAL(secretset_name(s, 1), "cache-redis-acl");
    CU_ASSERT_STRING_EQUAL(secretset_name(s, 2), "app-pw"); /* users by name */
    CU_ASSERT_STRING_EQUAL(secretset_name(s, 3), "ro-pw");
    CU_ASSERT_PTR_NULL(secretset_name(s, 4));
    json_object *tls = tls_secret(&pods_cert);
    const char *app[] = {"pw", APP_PW, NULL}, *ro[] = {"password", RO_PW, NULL};
    json_object *app_s = secret_of(app), *ro_s = secret_of(ro);
    secretset_take(s, "cache-tls", tls, NULL);
    secretset_take(s, "cache-redis-acl", NULL, NULL);
    secretset_take(s, "app-pw", app_s, NULL);
    secretset_take(s, "ro-pw", ro_s, NULL);
    json_object_put(tls); /* the set keeps what it needs */
    CU_ASSERT_EQUAL(secretset_finish(s, AUTH_PW, (int64_t)time(NULL)), 0);
    const plan_tls_t *t = secretset_tls(s);
    CU_ASSERT(t->read && t->found && !t->error[0]);
    CU_ASSERT_EQUAL(t->check.status, TLSCERT_OK);
    CU_ASSERT_PTR_NOT_NULL(secretset_client_tls(s));
    CU_ASSERT_PTR_NULL(secretset_refused(s));
    CU_ASSERT_STRING_EQUAL(secretset_domain(s), "cache.ns1.svc");
    const plan_acl_t *a = secretset_acl(s);
    CU_ASSERT_EQUAL(a->known, 1);
    CU_ASSERT_PTR_NULL(a->secret);
    size_t n = 0;
    const redisexec_secret_t *tok = secretset_tokens(s, &n);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    char h[65];
    sha_hex(AUTH_PW, h);
    CU_ASSERT_STRING_EQUAL(tok[0].token, "${acl-hash:default}");
    CU_ASSERT_STRING_EQUAL(tok[0].value, h);
    sha_hex(APP_PW, h);
    CU_ASSERT_STRING_EQUAL(tok[1].token, "${acl-hash:app}");
    CU_ASSERT_STRING_EQUAL(tok[1].value, h);
    /* the fingerprints are neither a password nor a hash */
    CU_ASSERT(strcmp(a->users_fp, h) && strlen(a->users_fp) == 64 && strlen(a->default_fp) == 64);
    char fp[65];
    snprintf(fp, sizeof(fp), "%s", a->users_fp);
    secretset_destroy(&s);
    CU_ASSERT_PTR_NULL(s);

    /* the ro password changes: so does the fingerprint; its key goes: said */
    const char *ro2[] = {"password", "another", NULL}, *nokey[] = {"pw", "x", NULL};
    json_object *ro2_s = secret_of(ro2), *nokey_s = secret_of(nokey);
    s = secretset_new(&spec, "ns1", "cache", "uid-1");
    secretset_take(s, "app-pw", app_s, NULL);
    secretset_take(s, "ro-pw", ro2_s, NULL);
    secretset_take(s, "cache-redis-acl", NULL, NULL);
    secretset_finish(s, AUTH_PW, (int64_t)time(NULL));
    CU_ASSERT(secretset_acl(s)->known && strcmp(secretset_acl(s)->users_fp, fp));
    /* spec.tls's Secret not answered: not read, refused */
    CU_ASSERT_EQUAL(secretset_tls(s)->read, 0);
    CU_ASSERT(text_contains(secretset_refused(s), "spec.tls: Secret ns1/cache-tls was not read"));
    secretset_destroy(&s);
    s = secretset_new(&spec, "ns1", "cache", "uid-1");
    secretset_take(s, "app-pw", app_s, NULL);
    secretset_take(s, "ro-pw", nokey_s, NULL);
    secretset_take(s, "cache-redis-acl", NULL, NULL);
    kube_error_t nf;
    kube_error_set(&nf, KERR_NOT_FOUND, "not found");
    nf.http_status = 404;
    secretset_take(s, "cache-tls", NULL, &nf);
    secretset_finish(s, AUTH_PW, (int64_t)time(NULL));
    CU_ASSERT_EQUAL(secretset_acl(s)->known, 0);
    CU_ASSERT_STRING_EQUAL(secretset_acl(s)->missing,
                           "user ro: Secret ns1/ro-pw has no key \"password\" (base64 text)");
    CU_ASSERT(secretset_tls(s)->read && !secretset_tls(s)->found);
    CU_ASSERT_STRING_EQUAL(secretset_refused(s), "spec.tls: Secret ns1/cache-tls not found");
    secretset_destroy(&s);
    /* no spec.auth password: the default user's hash is not known */
    s = secretset_new(&spec, "ns1", "cache", "uid-1");
    secretset_finish(s, NULL, (int64_t)time(NULL));
    CU_ASSERT(text_contains(secretset_acl(s)->missing, "spec.auth's password"));
    secretset_destroy(&s);
    json_object_put(app_s);
    json_object_put(ro_s);
    json_object_put(ro2_s);
    json_object_put(nokey_s);
    json_object_put(rc);
}

/* ---- plan ---------------------------------------------------------------------------- */

/* The children a first plan creates, as if the API had them, into kids (the caller puts). */
static void children_of(const json_object *rc, const plan_observed_t *more, json_object *kids[4])
{
    plan_children_t none = {NULL, NULL, NULL, NULL};
    plan_t *p = plan_compute_children(rc, &none, more, T0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    static const char *const res[4] = {"configmaps", "services", "statefulsets", "poddisruptionbudgets"};
    memset(kids, 0, 4 * sizeof(kids[0]));
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        for (int k = 0; k < 4; k++)
            if (a->kind == PLAN_CREATE && !strcmp(a->resource, res[k]) && !kids[k] && !strcmp(a->name, "cache"))
                json_object_deep_copy(a->body, &kids[k], NULL);
    }
    /* the StatefulSet settled, every pod ready */
    json_object_object_add(kids[2], "status",
                           parse("{\"observedGeneration\":1,\"replicas\":3,\"readyReplicas\":3,\"currentReplicas\":3,"
                                 "\"updatedReplicas\":3,\"availableReplicas\":3,\"currentRevision\":\"r1\","
                                 "\"updateRevision\":\"r1\"}"));
    json_object_object_add(at(kids[2], "metadata"), "generation", json_object_new_int(1));
    plan_destroy(&p);
}

/* The pods cache-0..2, ready, each with annotations ann (JSON members, or ""). */
static json_object *pods_of(const char *ann)
{
    char doc[4096] = "[";
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(doc);
        snprintf(doc + n, sizeof(doc) - n,
                 "%s{\"metadata\":{\"name\":\"cache-%d\",\"annotations\":{%s}},\"status\":{\"podIP\":\"10.0.0.%d\","
                 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                 "\"containerStatuses\":[{\"name\":\"redis\",\"restartCount\":0}]}}",
                 i ? "," : "", i, ann, i + 1);
    }
    size_t n = strlen(doc);
    snprintf(doc + n, sizeof(doc) - n, "]");
    return parse(doc);
}

/* An observation of the three pods, each having served cert (NULL: no tlsCert). */
static json_object *seen_of(const char *c0, const char *c1, const char *c2)
{
    const char *certs[3] = {c0, c1, c2};
    json_object *o = parse("{\"observedAt\":\"t\",\"nodes\":[]}");
    for (int i = 0; i < 3; i++) {
        char node[512];
        snprintf(node, sizeof(node),
                 "{\"pod\":\"cache-%d\",\"ip\":\"10.0.0.%d\",\"reachable\":true,\"role\":\"master\","
                 "\"masterHost\":\"\",\"masterPort\":0,\"linkUp\":false,\"offset\":0,\"lastOkAgoMs\":0,"
                 "\"downSinceMs\":0}",
                 i, i + 1);
        json_object *n = parse(node);
        if (certs[i])
            json_object_object_add(n, "tlsCert", json_object_new_string(certs[i]));
        json_object_array_add(at(o, "nodes"), n);
    }
    return o;
}

static plan_t *plan_with(const json_object *rc, const plan_observed_t *more, json_object *kids[4])
{
    plan_children_t k = {kids[0], kids[1], kids[2], kids[3]};
    plan_t *p = plan_compute_children(rc, &k, more, T0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static const json_object *cond_of(const plan_t *p, const char *type)
{
    const json_object *list = at(plan_status(p), "conditions");
    for (size_t i = 0; list && i < json_object_array_length(list); i++)
        if (!strcmp(str_at(json_object_array_get_idx(list, i), "type"), type))
            return json_object_array_get_idx(list, i);
    return NULL;
}

static size_t count_argv0(const plan_t *p, const char *argv1)
{
    size_t n = 0;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        n += a->kind == PLAN_REDIS && a->argc > 1 && !strcmp(a->argv[1], argv1);
    }
    return n;
}

static void tls_input(plan_tls_t *t, const tc_cert_t *c, const char *ca)
{
    const char *names[] = {"cache-0.cache.ns1.svc", "cache-1.cache.ns1.svc", "cache-2.cache.ns1.svc"};
    memset(t, 0, sizeof(*t));
    t->read = t->found = 1;
    tlscert_check(c->crt_pem, strlen(c->crt_pem), c->key_pem, strlen(c->key_pem), ca, strlen(ca), names, 3,
                  (int64_t)time(NULL), SECRETSET_WARN_S, &t->check);
}

#define TLS_ON "\"cache.example.com/tls\":\"on\""

static void test_plan_tls(void)
{
    json_object *rc = rc_of(TLS_SPEC), *kids[4], *pods = pods_of(TLS_ON);
    plan_tls_t t;
    tls_input(&t, &pods_cert, pki.ca.crt_pem);
    plan_observed_t more = {.members = pods, .tls = &t};
    children_of(rc, &more, kids);
    /* valid, served by every pod: True, nothing to do for TLS */
    json_object *seen = seen_of(t.check.sha256, t.check.sha256, t.check.sha256);
    more.redis = seen;
    plan_t *p = plan_with(rc, &more, kids);
    const json_object *k = cond_of(p, "TLSReady");
    CU_ASSERT_STRING_EQUAL(str_at(k, "status"), "True");
    CU_ASSERT_STRING_EQUAL(str_at(k, "reason"), "TLSCertificateValid");
    CU_ASSERT(text_contains(str_at(k, "message"), "Secret ns1/cache-tls: serial "));
    CU_ASSERT_EQUAL(count_argv0(p, "SET"), 0);
    plan_destroy(&p);
    json_object_put(seen);
    /* a renewal: one pod still serves the old certificate: asked to read its files again */
    seen = seen_of(t.check.sha256, "0123456789abcdef", t.check.sha256);
    more.redis = seen;
    p = plan_with(rc, &more, kids);
    k = cond_of(p, "TLSReady");
    CU_ASSERT_STRING_EQUAL(str_at(k, "reason"), "TLSCertificateRotating");
    CU_ASSERT(text_contains(str_at(k, "message"), "2 of 3 pods serve the certificate of Secret ns1/cache-tls"));
    int found = 0;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind != PLAN_REDIS || strcmp(a->argv[0], "CONFIG"))
            continue;
        found++;
        CU_ASSERT_STRING_EQUAL(a->name, "cache-1");
        CU_ASSERT_STRING_EQUAL(a->ip, "10.0.0.2");
        CU_ASSERT_EQUAL(a->argc, 8);
        CU_ASSERT_STRING_EQUAL(a->argv[2], "tls-cert-file");
        CU_ASSERT_STRING_EQUAL(a->argv[3], REDISEXEC_CURRENT_TOKEN);
        CU_ASSERT_STRING_EQUAL(a->argv[6], "tls-ca-cert-file");
    }
    CU_ASSERT_EQUAL(found, 1);
    CU_ASSERT_PTR_NOT_NULL(find_event(p, "TLSReloaded"));
    CU_ASSERT(plan_requeue_after_ns(p) > 0);
    plan_destroy(&p);
    json_object_put(seen);
    more.redis = NULL;
    /* expiring: True, a Warning event */
    tls_input(&t, &old_cert, pki.ca.crt_pem);
    p = plan_with(rc, &more, kids);
    CU_ASSERT_STRING_EQUAL(str_at(cond_of(p, "TLSReady"), "reason"), "TLSCertificateExpiring");
    const plan_event_t *e = find_event(p, "TLSCertificateExpiring");
    CU_ASSERT(e && !strcmp(e->type, "Warning") && text_contains(e->message, "has not been renewed"));
    plan_destroy(&p);
    /* expired: False, Degraded of the same reason with its Warning */
    tls_input(&t, &pki.expired, pki.ca.crt_pem);
    p = plan_with(rc, &more, kids);
    k = cond_of(p, "TLSReady");
    CU_ASSERT_STRING_EQUAL(str_at(k, "status"), "False");
    /* (redis.test's expired certificate: it is checked for expiry before the names) */
    CU_ASSERT_STRING_EQUAL(str_at(k, "reason"), "TLSCertificateExpired");
    CU_ASSERT_STRING_EQUAL(str_at(cond_of(p, "Degraded"), "reason"), "TLSCertificateExpired");
    CU_ASSERT_PTR_NOT_NULL(find_event(p, "TLSCertificateExpired"));
    plan_destroy(&p);
    /* another CA's certificate; a missing Secret */
    tls_input(&t, &pods_cert, pki.other_ca.crt_pem);
    p = plan_with(rc, &more, kids);
    CU_ASSERT_STRING_EQUAL(str_at(cond_of(p, "TLSReady"), "reason"), "TLSCertificateUntrusted");
    plan_destroy(&p);
    t.found = 0;
    p = plan_with(rc, &more, kids);
    CU_ASSERT_STRING_EQUAL(str_at(cond_of(p, "TLSReady"), "reason"), "TLSSecretNotFound");
    CU_ASSERT_STRING_EQUAL(str_at(cond_of(p, "TLSReady"), "message"),
                           "Secret ns1/cache-tls (spec.tls.secretRef) not found");
    plan_destroy(&p);
    /* nothing read: no TLSReady invented */
    more.tls = NULL;
    p = plan_with(rc, &more, kids);
    CU_ASSERT_PTR_NULL(cond_of(p, "TLSReady"));
    plan_destroy(&p);
    put_all(kids, 4);
    PUT_EACH(pods, rc);
}

/* Where a plan's text may not hold a secret: its JSON (what --dry-run prints). */
static void no_secret_in(const plan_t *p)
{
    json_object *j = plan_to_json(p);
    const char *text = json_object_to_json_string(j);
    char h[65];
    const char *secrets[] = {APP_PW, RO_PW, AUTH_PW};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT(!text_contains(text, secrets[i]));
        sha_hex(secrets[i], h);
        CU_ASSERT(!text_contains(text, h));
    }
    json_object_put(j);
}

static const plan_action_t *kind_of(const plan_t *p, plan_action_kind_t kind, size_t *index)
{
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == kind) {
            if (index)
                *index = i;
            return plan_action(p, i);
        }
    return NULL;
}

static void test_plan_acl(void)
{
    json_object *rc = rc_of(AUTH_SPEC "," ACL_SPEC), *kids[4];
    plan_acl_t a = {.known = 1, .users_fp = "fp-users-1", .default_fp = "fp-default-1"};
    json_object *pods = pods_of("");
    plan_observed_t more = {.members = pods, .acl = &a, .auth = PLAN_AUTH_CURRENT};
    /* a new cluster: the file before the children */
    plan_children_t none = {NULL, NULL, NULL, NULL};
    plan_t *p = plan_compute_children(rc, &none, &more, T0);
    size_t fi = 0, si = 0;
    const plan_action_t *f = kind_of(p, PLAN_ACL_FILE, &fi);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_PTR_NOT_NULL(kind_of(p, PLAN_CREATE, &si));
    CU_ASSERT(fi < si);
    CU_ASSERT_STRING_EQUAL(f->name, "cache-redis-acl");
    CU_ASSERT_STRING_EQUAL(f->method, "PATCH");
    CU_ASSERT(text_contains(f->path, "/api/v1/namespaces/ns1/secrets/cache-redis-acl?fieldManager="));
    CU_ASSERT(text_contains(str_at(f->body, "stringData users.acl"), "user ro on #${acl-hash:ro} ~* +@read\n"));
    const char *digest = str_at(f->body, "metadata annotations cache.example.com/acl-digest");
    CU_ASSERT_EQUAL(strlen(digest), 64);
    CU_ASSERT_PTR_NOT_NULL(find_event(p, "ACLFileWritten"));
    no_secret_in(p);
    /* the Secret as written */
    json_object *secret = NULL;
    json_object_deep_copy(f->body, &secret, NULL);
    plan_destroy(&p);
    children_of(rc, &more, kids);
    a.secret = secret;

    /* running pods without a record: each gets the users, then the record */
    p = plan_with(rc, &more, kids);
    CU_ASSERT_PTR_NULL(kind_of(p, PLAN_ACL_FILE, NULL)); /* the digest is current */
    CU_ASSERT_EQUAL(count_argv0(p, "SETUSER"), 6);
    CU_ASSERT_EQUAL(count_argv0(p, "DELUSER"), 0);
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *x = plan_action(p, i);
        if (x->kind == PLAN_REDIS && !strcmp(x->argv[1], "SETUSER") && !strcmp(x->argv[2], "app")) {
            const char *want[] = {"ACL", "SETUSER", "app", "reset", "on", "#${acl-hash:app}", "~app:*", "+@all",
                                  "(~x* +get)"};
            CU_ASSERT_EQUAL_FATAL(x->argc, 9);
            for (int k = 0; k < 9; k++)
                CU_ASSERT_STRING_EQUAL(x->argv[k], want[k]);
        }
    }
    size_t ai = 0;
    const plan_action_t *ann = kind_of(p, PLAN_ANNOTATE_POD, &ai);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ann);
    const char *record = str_at(ann->body, "metadata annotations cache.example.com/acl");
    CU_ASSERT(record && strlen(record) == 16 + 2 && !strcmp(record + 16, "/0"));
    CU_ASSERT_STRING_EQUAL(str_at(ann->body, "metadata annotations cache.example.com/acl-users"), "app,ro");
    const plan_event_t *e = find_event(p, "ACLApplied");
    CU_ASSERT(e && text_contains(e->message, "cache-0, cache-1, cache-2"));
    no_secret_in(p);
    char rec[64];
    snprintf(rec, sizeof(rec), "%s", record);
    plan_destroy(&p);

    /* recorded: nothing */
    char ann_json[256];
    snprintf(ann_json, sizeof(ann_json), "\"cache.example.com/acl\":\"%s\",\"cache.example.com/acl-users\":\"app,ro\"",
             rec);
    json_object *recorded = pods_of(ann_json);
    more.members = recorded;
    p = plan_with(rc, &more, kids);
    CU_ASSERT_EQUAL(count_argv0(p, "SETUSER") + count_argv0(p, "DELUSER"), 0);
    CU_ASSERT_PTR_NULL(kind_of(p, PLAN_ACL_FILE, NULL));
    plan_destroy(&p);

    /* ro removed from the spec: app again, ro dropped, then the file (after the pods) */
    json_object *rc2 = rc_of(AUTH_SPEC ",\"acl\":{\"users\":[{\"name\":\"app\",\"rules\":\"~app:*  +@all (~x* +get)\","
                                         "\"passwordSecretRef\":{\"name\":\"app-pw\",\"key\":\"pw\"}}]}");
    p = plan_with(rc2, &more, kids);
    CU_ASSERT_EQUAL(count_argv0(p, "SETUSER"), 3);
    CU_ASSERT_EQUAL(count_argv0(p, "DELUSER"), 3);
    size_t di = 0;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *x = plan_action(p, i);
        if (x->kind == PLAN_REDIS && !strcmp(x->argv[1], "DELUSER")) {
            CU_ASSERT_EQUAL(x->argc, 3);
            CU_ASSERT_STRING_EQUAL(x->argv[2], "ro");
            di = i;
        }
    }
    f = kind_of(p, PLAN_ACL_FILE, &fi);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT(fi > di); /* the file once the pods took it */
    CU_ASSERT(!text_contains(str_at(f->body, "stringData users.acl"), "user ro "));
    e = find_event(p, "ACLApplied");
    CU_ASSERT(e && text_contains(e->message, "removed ro"));
    plan_destroy(&p);

    /* a password not known: nothing written, Degraded says which */
    a.known = 0;
    snprintf(a.missing, sizeof(a.missing), "user ro: Secret ns1/ro-pw not found");
    p = plan_with(rc, &more, kids);
    CU_ASSERT_EQUAL(count_argv0(p, "SETUSER"), 0);
    CU_ASSERT_PTR_NULL(kind_of(p, PLAN_ACL_FILE, NULL));
    CU_ASSERT_STRING_EQUAL(str_at(cond_of(p, "Degraded"), "reason"), "ACLPasswordMissing");
    CU_ASSERT(text_contains(str_at(cond_of(p, "Degraded"), "message"), "user ro: Secret ns1/ro-pw not found"));
    plan_destroy(&p);

    put_all(kids, 4);
    PUT_EACH(secret, pods, recorded, rc, rc2);
}

static void test_expand_text(void)
{
    const redisexec_secret_t sec[] = {{"${acl-hash:app}", "AAA"}, {"${acl-hash:default}", "DDD"}};
    redisexec_client_t cl = {.password = "pw", .secrets = sec, .n_secrets = 2};
    char *t = redisexec_expand_text(&cl, "user default on #${acl-hash:default} x\nuser app on #${acl-hash:app}\n"
                                         "${password} ${acl-hash:other}");
    CU_ASSERT_STRING_EQUAL(t, "user default on #DDD x\nuser app on #AAA\npw ${acl-hash:other}");
    free(t);
    t = redisexec_expand_text(&cl, "");
    CU_ASSERT_STRING_EQUAL(t, "");
    free(t);
}

CU_HOOKS({"tls and acl", suite_init, suite_clean, NULL, NULL});

/* TLS turned on for running pods: once the StatefulSet runs the TLS template, every pod
 * that speaks plain text is deleted at once (uid preconditions), no Redis command with
 * it; turned off, the same the other way. */
static void test_plan_tls_restart(void)
{
    json_object *rc = rc_of("\"mode\":\"Replication\"," TLS_SPEC), *kids[4];
    json_object *plain = parse("[{\"metadata\":{\"name\":\"cache-0\",\"uid\":\"u0\"},"
                               "\"status\":{\"podIP\":\"10.0.0.1\"}},"
                               "{\"metadata\":{\"name\":\"cache-1\",\"uid\":\"u1\"},"
                               "\"status\":{\"podIP\":\"10.0.0.2\"}},"
                               "{\"metadata\":{\"name\":\"cache-2\",\"uid\":\"u2\",\"annotations\":{" TLS_ON "}},"
                               "\"status\":{\"podIP\":\"10.0.0.3\"}}]");
    json_object *seen = seen_of(NULL, NULL, NULL);
    plan_observed_t more = {.members = plain, .redis = seen};
    children_of(rc, &more, kids);
    plan_t *p = plan_with(rc, &more, kids);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_DELETE), 2);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_DELETE)
            CU_ASSERT(!strcmp(str_at(a->body, "preconditions uid"), "u0") ||
                      !strcmp(str_at(a->body, "preconditions uid"), "u1"));
    }
    const plan_event_t *e = find_event(p, "TLSRestart");
    CU_ASSERT(e && text_contains(e->message, "restarting cache-0, cache-1 at once"));
    plan_destroy(&p);
    /* the StatefulSet's controller has not seen the template yet: nothing */
    json_object_object_add(at(kids[2], "status"), "observedGeneration", json_object_new_int(0));
    p = plan_with(rc, &more, kids);
    CU_ASSERT_PTR_NULL(find_event(p, "TLSRestart"));
    plan_destroy(&p);
    put_all(kids, 4);
    /* TLS off: the pod that still speaks TLS restarts */
    json_object *rc2 = rc_of("\"mode\":\"Replication\"");
    children_of(rc2, &more, kids);
    p = plan_with(rc2, &more, kids);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_DELETE), 1);
    e = find_event(p, "TLSRestart");
    CU_ASSERT(e && text_contains(e->message, "TLS off: restarting cache-2 at once"));
    plan_destroy(&p);
    put_all(kids, 4);
    PUT_EACH(seen, plain, rc, rc2);
}

static const cu_entry_t tests[] = {
    CU_SUITE("tls and acl"),
    {"render: TLS directives, volumes, probes, preStop, ports", test_render_tls},
    {"render: the ACL file and its Secret", test_render_acl},
    {"secretset: TLS settings and checks, ACL hashes and fingerprints", test_secretset},
    {"plan: TLSReady, Degraded, rotation", test_plan_tls},
    {"plan: TLS on or off restarts every pod at once", test_plan_tls_restart},
    {"plan: the ACL file, the users on each pod, a user removed", test_plan_acl},
    {"redisexec_expand_text", test_expand_text},
};
CU_MAIN(tests)
