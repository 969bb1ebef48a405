/* test_rdc_spec_v1: the rules of the fields only cache.example.com/v1 has (rdc_spec.h),
 * as the webhooks apply them to every request (v1alpha1 ones arrive converted to v1),
 * and their agreement with the CRD's v1 schema. */
#include "admission.h"
#include "crd_file.h"
#include "cu_table.h"
#include "jsonx.h"
#include "rdc_spec.h"
#include "spec_errors.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The errors rdc_spec_validate records for spec (a JSON text), joined as the API does. */
static char *errors_of(const char *spec_json)
{
    char doc[4096];
    snprintf(doc, sizeof(doc),
             "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\"},"
             "\"spec\":%s}",
             spec_json);
    json_object *rc = json_tokener_parse(doc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rc);
    char *s = spec_errors(rc);
    json_object_put(rc);
    return s;
}

static void test_v1_fields_table(void)
{
    static const struct {
        const char *spec;
        const char *want; /* "" = valid; else a substring of the joined errors */
    } cases[] = {
        /* valid: every v1 field at its usual values, and at the bounds */
        {"{\"size\":3,\"image\":\"redis\",\"mode\":\"Replication\",\"persistence\":\"aof\","
         "\"auth\":{\"secretRef\":{\"name\":\"redis-pw\",\"key\":\"password\"}},"
         "\"failover\":{\"downAfter\":\"3s\",\"minReplicasToWrite\":1,\"minReplicasMaxLag\":10}}", ""},
        {"{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\",\"persistence\":\"none\"}", ""},
        {"{\"size\":1,\"image\":\"redis\",\"persistence\":\"rdb\",\"failover\":{\"downAfter\":\"1s\"}}", ""},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"5m\",\"minReplicasToWrite\":0}}", ""},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"4m59.5s\",\"minReplicasMaxLag\":3600}}", ""},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"1500ms\"}}", ""},
        {"{\"size\":1,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"a.b-c\",\"key\":\"_x.Y-9\"}}}", ""},
        {"{\"size\":1,\"image\":\"redis\",\"mode\":null,\"failover\":{}}", ""},
        /* enums */
        {"{\"size\":1,\"image\":\"redis\",\"mode\":\"Sentinel\"}",
         "spec.mode: Unsupported value: \"Sentinel\": supported values: \"Replication\", \"Standalone\", \"Cluster\""},
        /* Cluster mode: size is shards x (1 + replicasPerShard), up to 100 */
        {"{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\"}", ""},
        {"{\"size\":100,\"image\":\"redis\",\"mode\":\"Cluster\","
         "\"cluster\":{\"shards\":20,\"replicasPerShard\":4}}", ""},
        {"{\"size\":3,\"image\":\"redis\",\"mode\":\"Cluster\",\"cluster\":{\"shards\":3,\"replicasPerShard\":0}}",
         ""},
        {"{\"size\":1,\"image\":\"redis\",\"mode\":\"Cluster\"}",
         "spec.size: Invalid value: 1: in Cluster mode spec.size is the number of pods, spec.cluster.shards x (1 + "
         "spec.cluster.replicasPerShard) = 6"},
        {"{\"size\":7,\"image\":\"redis\",\"mode\":\"Cluster\"}", "not kubectl scale"},
        {"{\"size\":11,\"image\":\"redis\"}", "spec.size: Invalid value: 11: must be between 1 and 10"},
        {"{\"size\":4,\"image\":\"redis\",\"mode\":\"Cluster\",\"cluster\":{\"shards\":2,\"replicasPerShard\":1}}",
         "spec.cluster.shards: Invalid value: 2: must be between 3 and 20"},
        {"{\"size\":18,\"image\":\"redis\",\"mode\":\"Cluster\","
         "\"cluster\":{\"shards\":3,\"replicasPerShard\":5}}",
         "spec.cluster.replicasPerShard: Invalid value: 5: must be between 0 and 4"},
        {"{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\",\"cluster\":[]}", "spec.cluster: Invalid value"},
        {"{\"size\":1,\"image\":\"redis\",\"mode\":3}", "spec.mode: Invalid value: 3: must be a string"},
        {"{\"size\":1,\"image\":\"redis\",\"persistence\":\"AOF\"}",
         "spec.persistence: Unsupported value: \"AOF\": supported values: \"aof\", \"none\", \"rdb\""},
        /* auth */
        {"{\"size\":1,\"image\":\"redis\",\"auth\":{}}", "spec.auth.secretRef: Required value"},
        {"{\"size\":1,\"image\":\"redis\",\"auth\":\"pw\"}", "spec.auth: Invalid value: \"pw\": must be an object"},
        {"{\"size\":1,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"key\":\"k\"}}}",
         "spec.auth.secretRef.name: Required value"},
        {"{\"size\":1,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"Redis_PW\"}}}",
         "spec.auth.secretRef.name: Invalid value: \"Redis_PW\": must be the name of a Secret"},
        {"{\"size\":1,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\",\"key\":\"a/b\"}}}",
         "spec.auth.secretRef.key: Invalid value: \"a/b\": must be a Secret data key"},
        /* failover */
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"999ms\"}}",
         "spec.failover.downAfter: Invalid value: \"999ms\": must be between 1s and 5m"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"5m0.001s\"}}",
         "spec.failover.downAfter: Invalid value: \"5m0.001s\": must be between 1s and 5m"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"1h\"}}", "must be between 1s and 5m"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"3\"}}",
         "spec.failover.downAfter: Invalid value: \"3\": must be a duration"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"-3s\"}}", "must be a duration"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"3s \"}}", "must be a duration"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\".5s\"}}", "must be a duration"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"1.s\"}}", "must be a duration"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"1us\"}}", "must be a duration"},
        {"{\"size\":1,\"image\":\"redis\",\"failover\":{\"downAfter\":\"000000000000000000000000000000001s\"}}",
         "must be a duration"},
        {"{\"size\":3,\"image\":\"redis\",\"failover\":{\"minReplicasToWrite\":3}}",
         "spec.failover.minReplicasToWrite: Invalid value: 3: must be less than spec.size"},
        {"{\"size\":3,\"image\":\"redis\",\"failover\":{\"minReplicasToWrite\":-1}}",
         "spec.failover.minReplicasToWrite: Invalid value: -1: must be between 0 and 9"},
        {"{\"size\":3,\"image\":\"redis\",\"failover\":{\"minReplicasMaxLag\":0}}",
         "spec.failover.minReplicasMaxLag: Invalid value: 0: must be between 1 and 3600"},
        {"{\"size\":3,\"image\":\"redis\",\"failover\":{\"minReplicasMaxLag\":\"10\"}}",
         "spec.failover.minReplicasMaxLag: Invalid value: \"10\": must be an integer"},
        {"{\"size\":3,\"image\":\"redis\",\"failover\":[]}", "spec.failover: Invalid value"},
        /* tls */
        {"{\"size\":3,\"image\":\"redis\",\"tls\":{\"secretRef\":{\"name\":\"cache-tls\"},\"clientAuth\":true,"
         "\"allowPlaintext\":false}}", ""},
        {"{\"size\":3,\"image\":\"redis\",\"tls\":{}}", "spec.tls.secretRef: Required value"},
        {"{\"size\":3,\"image\":\"redis\",\"tls\":{\"secretRef\":{}}}", "spec.tls.secretRef.name: Required value"},
        {"{\"size\":3,\"image\":\"redis\",\"tls\":{\"secretRef\":{\"name\":\"TLS\"}}}",
         "spec.tls.secretRef.name: Invalid value: \"TLS\": must be the name of a Secret"},
        {"{\"size\":3,\"image\":\"redis\",\"tls\":{\"secretRef\":{\"name\":\"t\"},\"clientAuth\":\"yes\"}}",
         "spec.tls.clientAuth: Invalid value: \"yes\": must be a boolean"},
        {"{\"size\":3,\"image\":\"redis\",\"tls\":true}", "spec.tls: Invalid value: true: must be an object"},
        /* acl */
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"app\",\"rules\":\"~app:* +@read +@write -@dangerous\",\"passwordSecretRef\":{\"name\":\"app\"}},"
         "{\"name\":\"ro\",\"rules\":\"~* +@read (~k* +get)\","
         "\"passwordSecretRef\":{\"name\":\"ro\",\"key\":\"p\"}}]}}",
         ""},
        {"{\"size\":3,\"image\":\"redis\",\"acl\":{\"users\":[{\"name\":\"app\",\"rules\":\"~*\","
         "\"passwordSecretRef\":{\"name\":\"app\"}}]}}",
         "spec.acl: Forbidden: ACL users need spec.auth"},
        {"{\"size\":3,\"image\":\"redis\",\"acl\":{\"users\":[]}}", ""},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"default\",\"rules\":\"~*\",\"passwordSecretRef\":{\"name\":\"a\"}}]}}",
         "spec.acl.users[0].name: Forbidden: the default user is spec.auth's"},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"a b\",\"rules\":\"~*\",\"passwordSecretRef\":{\"name\":\"a\"}}]}}",
         "spec.acl.users[0].name: Invalid value: \"a b\": must be 1 to 64 characters of [A-Za-z0-9_.-]"},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"a\",\"rules\":\"~* >secret\",\"passwordSecretRef\":{\"name\":\"a\"}}]}}",
         "spec.acl.users[0].rules: Invalid value: \"~* >secret\": ACL rules of Redis: passwords come from "
         "passwordSecretRef"},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"a\",\"rules\":\"NoPass ~*\",\"passwordSecretRef\":{\"name\":\"a\"}}]}}",
         "the operator sets the user on, with its password, and from a reset"},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"a\",\"rules\":\"(~k* +get\",\"passwordSecretRef\":{\"name\":\"a\"}}]}}",
         "a selector \"(\" without its \")\""},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"a\",\"rules\":\"~*\\n+@all\",\"passwordSecretRef\":{\"name\":\"a\"}}]}}",
         "only printable ASCII and blanks"},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"a\",\"passwordSecretRef\":{\"name\":\"a\"}}]}}",
         "spec.acl.users[0].rules: Required value"},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"a\",\"rules\":\"~*\"}]}}",
         "spec.acl.users[0].passwordSecretRef: Required value"},
        {"{\"size\":3,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"acl\":{\"users\":["
         "{\"name\":\"a\",\"rules\":\"~*\",\"passwordSecretRef\":{\"name\":\"a\"}},"
         "{\"name\":\"a\",\"rules\":\"~*\",\"passwordSecretRef\":{\"name\":\"b\"}}]}}",
         "spec.acl.users[1].name: Invalid value: \"a\": must be unique"},
        {"{\"size\":3,\"image\":\"redis\",\"acl\":{\"users\":{}}}", "spec.acl.users: Invalid value"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = errors_of(cases[i].spec);
        int ok = cases[i].want[0] ? strstr(got, cases[i].want) != NULL : got[0] == '\0';
        if (!ok)
            fprintf(stderr, "\ncase %zu: %s\n  want %s\n  got  %s\n", i, cases[i].spec,
                    cases[i].want[0] ? cases[i].want : "(valid)", got);
        CU_ASSERT(ok);
        free(got);
    }
}

/* Cluster mode's other rules: the name's length, no change of mode to or from it, and the
 * defaulting webhook's size. */
static void test_cluster_rules(void)
{
    json_object *rc = json_tokener_parse(
        "{\"metadata\":{\"name\":\"a-name-that-is-forty-five-characters-long-xyz\"},"
        "\"spec\":{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\"}}");
    char *got = spec_errors(rc);
    CU_ASSERT_PTR_NOT_NULL(strstr(got, "metadata.name: Invalid value: \"a-name-that-is-forty-five-characters-long-xyz\""
                                       ": must be at most 44 characters in Cluster mode"));
    free(got);
    json_object_put(rc);

    static const char *const modes[][2] = {{"Replication", "Cluster"}, {"Cluster", "Standalone"}};
    for (int i = 0; i < 2; i++) {
        char a[256], b[256];
        snprintf(a, sizeof(a), "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"size\":6,\"image\":\"r\",\"mode\":\"%s\"}}",
                 modes[i][0]);
        snprintf(b, sizeof(b), "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"size\":6,\"image\":\"r\",\"mode\":\"%s\"}}",
                 modes[i][1]);
        json_object *o = json_tokener_parse(a), *n = json_tokener_parse(b);
        rdc_field_errors_t *e = rdc_field_errors_new();
        CU_ASSERT(rdc_spec_validate_update(o, n, e) >= 1);
        buf_t t;
        buf_init(&t, 0);
        rdc_field_errors_format(e, &t);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf_str(&t), "spec.mode: Forbidden: cannot change to or from Cluster mode"));
        buf_free(&t);
        rdc_field_errors_destroy(&e);
        json_object_put(o);
        json_object_put(n);
    }

    json_object *nosize = json_tokener_parse(
        "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"image\":\"redis:7.2\",\"mode\":\"Cluster\","
        "\"cluster\":{\"shards\":5,\"replicasPerShard\":2}}}");
    json_object *d = rdc_spec_defaulted(nosize);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    json_object *size = NULL;
    CU_ASSERT_TRUE(json_object_object_get_ex(d, "size", &size));
    CU_ASSERT_EQUAL(json_object_get_int(size), 15);
    json_object_put(d);
    /* without spec.cluster: the defaults written out */
    json_object *bare = json_tokener_parse(
        "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"image\":\"redis:7.2\",\"mode\":\"Cluster\"}}");
    d = rdc_spec_defaulted(bare);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(jsonx_get(d, "cluster"), JSON_C_TO_STRING_PLAIN),
                           "{\"shards\":3,\"replicasPerShard\":1}");
    CU_ASSERT_EQUAL(json_object_get_int(jsonx_get(d, "size")), 6);
    json_object_put(d);
    json_object_put(bare);
    json_object_put(nosize);
}

static void test_duration(void)
{
    static const struct {
        const char *s;
        int rc;
        long long ns;
    } cases[] = {
        {"3s", 0, 3000000000LL},       {"1m30s", 0, 90000000000LL}, {"500ms", 0, 500000000LL},
        {"1.5s", 0, 1500000000LL},     {"1h", 0, 3600000000000LL},  {"2m0.25s", 0, 120250000000LL},
        {"", -1, 0},                   {"s", -1, 0},                {"3", -1, 0},
        {"3S", -1, 0},                 {"3 s", -1, 0},              {"1e3s", -1, 0},
        {"3s3", -1, 0},                {"+3s", -1, 0},              {"99999999999999999h", -1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t ns = -7;
        int rc = rdc_spec_duration_ns(cases[i].s, &ns);
        CU_ASSERT_EQUAL(rc, cases[i].rc);
        if (rc == 0 && cases[i].rc == 0)
            CU_ASSERT_EQUAL(ns, cases[i].ns);
        if (rc != cases[i].rc)
            fprintf(stderr, "\nduration \"%s\": rc %d, want %d\n", cases[i].s, rc, cases[i].rc);
    }
    CU_ASSERT_EQUAL(rdc_spec_duration_ns(NULL, NULL), -1);
}

/* The webhook refuses a v1 object with a bad v1-only field, naming it, and admits a good
 * one: the API server sends every request in v1 (the rules name v1, matchPolicy
 * Equivalent). */
static void test_admission_v1(void)
{
    static const char *fmt =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u1\","
        "\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1\",\"kind\":\"RedisCluster\"},"
        "\"resource\":{\"group\":\"cache.example.com\",\"version\":\"v1\",\"resource\":\"redisclusters\"},"
        "\"operation\":\"CREATE\",\"name\":\"cache\",\"namespace\":\"default\",\"object\":{\"apiVersion\":"
        "\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\",\"namespace\":"
        "\"default\"},\"spec\":%s}}}";
    char body[2048];
    snprintf(body, sizeof(body), fmt,
             "{\"size\":3,\"image\":\"redis:7.2\",\"mode\":\"Replication\",\"failover\":{\"downAfter\":\"10m\"}}");
    char *resp = NULL;
    admission_outcome_t o;
    CU_ASSERT_EQUAL(admission_review(body, strlen(body), ADMISSION_VALIDATE, &resp, &o), 0);
    CU_ASSERT_EQUAL(o.allowed, 0);
    CU_ASSERT_EQUAL(o.code, 422);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(o.message, "spec.failover.downAfter: Invalid value: \"10m\": must be between 1s and 5m"));
    free(resp);
    snprintf(body, sizeof(body), fmt,
             "{\"size\":3,\"image\":\"redis:7.2\",\"mode\":\"Replication\",\"failover\":{\"downAfter\":\"10s\"},"
             "\"auth\":{\"secretRef\":{\"name\":\"pw\"}}}");
    resp = NULL;
    CU_ASSERT_EQUAL(admission_review(body, strlen(body), ADMISSION_VALIDATE, &resp, &o), 0);
    CU_ASSERT_EQUAL(o.allowed, 1);
    free(resp);
}

/* spec.tls and spec.acl in the typed spec; the rules split as ACL SETUSER takes them. */
static void test_tls_acl_typed(void)
{
    json_object *rc = json_tokener_parse(
        "{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":3,\"image\":\"redis\","
        "\"auth\":{\"secretRef\":{\"name\":\"pw\"}},\"tls\":{\"secretRef\":{\"name\":\"cache-tls\"},"
        "\"clientAuth\":true},\"acl\":{\"users\":[{\"name\":\"ro\",\"rules\":\"~* +@read\","
        "\"passwordSecretRef\":{\"name\":\"ro-pw\",\"key\":\"pw\"}},{\"name\":\"app\",\"rules\":\"~app:*  +@all\","
        "\"passwordSecretRef\":{\"name\":\"app-pw\"}}]}}}");
    rdc_field_errors_t *errs = rdc_field_errors_new();
    rdc_spec_t sp;
    CU_ASSERT_EQUAL_FATAL(rdc_spec_parse(rc, &sp, errs), 0);
    CU_ASSERT_STRING_EQUAL(sp.tls.secret, "cache-tls");
    CU_ASSERT_EQUAL(sp.tls.client_auth, 1);
    CU_ASSERT_EQUAL(sp.tls.allow_plaintext, 0);
    CU_ASSERT_EQUAL_FATAL(sp.acl.n_users, 2);
    CU_ASSERT_STRING_EQUAL(sp.acl.users[0].name, "app"); /* sorted by name */
    CU_ASSERT_STRING_EQUAL(sp.acl.users[0].secret, "app-pw");
    CU_ASSERT_STRING_EQUAL(sp.acl.users[0].key, "password");
    CU_ASSERT_STRING_EQUAL(sp.acl.users[1].key, "pw");
    rdc_acl_token_t tok[8];
    const char *why = NULL;
    CU_ASSERT_EQUAL(rdc_spec_acl_rules_split(sp.acl.users[0].rules, tok, 8, &why), 2);
    CU_ASSERT_EQUAL(tok[1].len, 5);
    CU_ASSERT_EQUAL(strncmp(tok[1].s, "+@all", 5), 0);
    CU_ASSERT_EQUAL(rdc_spec_acl_rules_split("~* (~k* +get) -@all", tok, 8, &why), 3);
    CU_ASSERT_EQUAL(strncmp(tok[1].s, "(~k* +get)", tok[1].len), 0);
    CU_ASSERT_EQUAL(rdc_spec_acl_rules_split("a b c", tok, 2, &why), -1);
    CU_ASSERT_EQUAL(rdc_spec_acl_rules_split("", tok, 2, &why), 0);
    CU_ASSERT_EQUAL(rdc_spec_acl_rules_split("~* #abc", tok, 2, &why), -1);
    json_object_put(rc);
    rdc_field_errors_destroy(&errs);
    /* no spec.tls: plain text */
    rc = json_tokener_parse("{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":1,\"image\":\"redis\"}}");
    errs = rdc_field_errors_new();
    CU_ASSERT_EQUAL(rdc_spec_parse(rc, &sp, errs), 0);
    CU_ASSERT_PTR_NULL(sp.tls.secret);
    CU_ASSERT_EQUAL(sp.acl.n_users, 0);
    json_object_put(rc);
    rdc_field_errors_destroy(&errs);
}

/* The bounds the webhook applies are the CRD's v1 schema's. */
static void test_crd_agrees(void)
{
    FILE *f = crd_open();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f); /* run from the repository's top (or set RDC_TOP) */
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "enum: [\"Replication\", \"Standalone\", \"Cluster\"]"));
    /* Cluster mode's bounds and rules */
    ASSERT_TEXT_HAS(text, "minimum: 3\n                    maximum: 20\n                    default: 3",
                    "minimum: 0\n                    maximum: 4\n                    default: 1",
                    "self.mode == 'Cluster' || self.size <= 10",
                    "self.mode == 'Cluster') == (has(oldSelf.mode) && oldSelf.mode == 'Cluster')",
                    "enum: [\"none\", \"rdb\", \"aof\"]", "pattern: '^([0-9]+([.][0-9]+)?(ms|s|m|h))+$'",
                    "duration(self) >= duration('1s') && duration(self) <= duration('5m')",
                    "pattern: '^[-._a-zA-Z0-9]+$'", "self.failover.minReplicasToWrite < self.size");
    /* v1 is the storage version, v1alpha1 served and deprecated, converted by /convert */
    ASSERT_TEXT_HAS(text, "  - name: v1\n    served: true\n    storage: true\n",
                    "  - name: v1alpha1\n    served: true\n    storage: false", "deprecated: true", "strategy: Webhook",
                    "path: /convert");
    /* spec.tls and spec.acl */
    ASSERT_TEXT_HAS(text, "!has(self.acl) || !has(self.acl.users) || size(self.acl.users) == 0 || has(self.auth)",
                    "rule: self.name != 'default'", "(^| )([<>#!]|(?i:on|off|nopass|resetpass|reset)( |$))",
                    "maxItems: 16\n                    x-kubernetes-list-type: map",
                    "maxLength: 64\n                          pattern: '^[A-Za-z0-9_.-]+$'",
                    "maxLength: 1024\n                          pattern: '^[ -~]+$'");
    CU_ASSERT_EQUAL(RDC_SPEC_ACL_USERS_MAX, 16);
    CU_ASSERT_EQUAL(RDC_SPEC_ACL_NAME_MAX, 64);
    CU_ASSERT_EQUAL(RDC_SPEC_ACL_RULES_MAX, 1024);
}

static const cu_entry_t tests[] = {
    CU_SUITE("rdc_spec v1"),
    {"v1-only fields: enums, auth, failover, tls, acl (table)", test_v1_fields_table},
    {"durations as the CRD's downAfter pattern", test_duration},
    {"Cluster mode: the name, no change of mode, the default size", test_cluster_rules},
    {"the validating webhook on v1 objects", test_admission_v1},
    {"the CRD's v1 schema states the same rules", test_crd_agrees},
    {"spec.tls and spec.acl in the typed spec; ACL rules split", test_tls_acl_typed},
};

CU_MAIN(tests)
