/* Unit tests of rdc_spec_parse: the typed spec (every field, the DEFAULTS of rdc_spec.h),
 * and the field errors of bad input, the same texts in the same order as the validator
 * gave before it became the parser (the table below was recorded from it). */
#include "cu_table.h"
#include "rdc_spec.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parse the RedisCluster text into *out; returns the problems' count, *text their joined
 * form ("" when none; the caller frees). */
static size_t parse_text(const char *rc_text, rdc_spec_t *out, char **text, json_object **rc_out)
{
    json_object *rc = json_tokener_parse(rc_text);
    rdc_field_errors_t *e = rdc_field_errors_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    size_t n = rdc_spec_parse(rc, out, e);
    buf_t b;
    buf_init(&b, 0);
    if (rdc_field_errors_count(e))
        rdc_field_errors_format(e, &b);
    *text = buf_detach(&b);
    if (!*text)
        *text = strdup("");
    rdc_field_errors_destroy(&e);
    *rc_out = rc; /* the strings of *out point into it */
    return n;
}

/* {"metadata":{"name":"cache"},"spec":<spec>} */
static size_t parse_spec(const char *spec, rdc_spec_t *out, json_object **rc)
{
    char doc[8192], *text = NULL;
    snprintf(doc, sizeof(doc), "{\"metadata\":{\"name\":\"cache\"},\"spec\":%s}", spec);
    size_t n = parse_text(doc, out, &text, rc);
    if (n)
        fprintf(stderr, "\n  %s\n", text);
    free(text);
    return n;
}

#define EVERY_FIELD                                                                                         \
    "{\"size\":3,\"image\":\"registry:5000/redis\",\"version\":\"7.4\",\"mode\":\"Replication\","           \
    "\"persistence\":\"rdb\",\"config\":{\"maxmemory\":\"256mb\",\"maxmemoryPolicy\":\"noeviction\","        \
    "\"extra\":{\"timeout\":\"300\",\"hz\":\"20\",\"databases\":\"32\",\"save\":\"60 1\"}},"                  \
    "\"storage\":{\"size\":\"10Gi\",\"storageClass\":\"fast\",\"retention\":{\"whenDeleted\":\"Delete\"}},"    \
    "\"auth\":{\"secretRef\":{\"name\":\"redis-pw\",\"key\":\"pw\"}},"                                       \
    "\"failover\":{\"downAfter\":\"1m30s\",\"minReplicasToWrite\":2,\"minReplicasMaxLag\":30},"              \
    "\"resources\":{\"limits\":{\"cpu\":2}},\"securityContext\":{\"readOnlyRootFilesystem\":false},"          \
    "\"podSecurityContext\":{\"runAsUser\":1000},\"affinity\":{\"nodeAffinity\":{}},"                        \
    "\"tolerations\":[{\"key\":\"k\"}],\"topologySpreadConstraints\":[{\"maxSkew\":1}],"                     \
    "\"imagePullSecrets\":[{\"name\":\"regcred\"}],\"nodeSelector\":{\"disk\":\"ssd\"},"                      \
    "\"priorityClassName\":\"high\",\"terminationGracePeriodSeconds\":90,"                                   \
    "\"podMetadata\":{\"labels\":{\"team\":\"a\"}},\"serviceMetadata\":{\"annotations\":{\"x.io/y\":\"z\"}}," \
    "\"podDisruptionBudget\":{\"maxUnavailable\":\"50%\"}}"

static void test_every_field(void)
{
    rdc_spec_t s;
    json_object *rc = NULL;
    CU_ASSERT_EQUAL_FATAL(parse_spec(EVERY_FIELD, &s, &rc), 0);
    CU_ASSERT_EQUAL(s.size, 3);
    CU_ASSERT_STRING_EQUAL(s.image, "registry:5000/redis");
    CU_ASSERT_STRING_EQUAL(s.version, "7.4");
    CU_ASSERT_STRING_EQUAL(s.tag, "7.4"); /* a registry's port is not a tag */
    CU_ASSERT_EQUAL(s.mode, RDC_MODE_REPLICATION);
    CU_ASSERT_EQUAL(s.persistence, RDC_PERSISTENCE_RDB);
    CU_ASSERT_TRUE(s.persistence_set);
    CU_ASSERT_STRING_EQUAL(rdc_spec_persistence_name(s.persistence), "rdb");
    CU_ASSERT_STRING_EQUAL(s.config.maxmemory, "256mb");
    CU_ASSERT_STRING_EQUAL(s.config.maxmemory_policy, "noeviction");
    /* config.extra, sorted by name */
    static const char *const names[] = {"databases", "hz", "save", "timeout"};
    static const char *const values[] = {"32", "20", "60 1", "300"};
    CU_ASSERT_EQUAL_FATAL(s.config.n_extra, 4);
    for (size_t i = 0; i < 4; i++) {
        CU_ASSERT_STRING_EQUAL(s.config.extra[i].name, names[i]);
        CU_ASSERT_STRING_EQUAL(s.config.extra[i].value, values[i]);
    }
    CU_ASSERT_STRING_EQUAL(s.storage.size, "10Gi");
    CU_ASSERT_STRING_EQUAL(s.storage.storage_class, "fast");
    CU_ASSERT_TRUE(s.storage.retention_set);
    CU_ASSERT_EQUAL(s.storage.when_deleted, RDC_DELETE);
    CU_ASSERT_EQUAL(s.storage.when_scaled, RDC_RETAIN); /* unset within retention */
    CU_ASSERT_STRING_EQUAL(rdc_spec_retention_name(s.storage.when_deleted), "Delete");
    CU_ASSERT_STRING_EQUAL(s.auth.secret, "redis-pw");
    CU_ASSERT_STRING_EQUAL(s.auth.key, "pw");
    CU_ASSERT_EQUAL(s.failover.down_after_ns, 90000000000LL);
    CU_ASSERT_EQUAL(s.failover.min_replicas_to_write, 2);
    CU_ASSERT_EQUAL(s.failover.min_replicas_max_lag, 30);
    CU_ASSERT_STRING_EQUAL(s.pdb.max_unavailable_percent, "50%");
    /* The free-form knobs are the spec's own JSON. */
    const json_object *spec = json_object_object_get(rc, "spec");
    static const struct {
        const char *key;
        size_t off;
    } knobs[] = {
        {"resources", offsetof(rdc_spec_t, pod.resources)},
        {"securityContext", offsetof(rdc_spec_t, pod.security_context)},
        {"podSecurityContext", offsetof(rdc_spec_t, pod.pod_security_context)},
        {"affinity", offsetof(rdc_spec_t, pod.affinity)},
        {"tolerations", offsetof(rdc_spec_t, pod.tolerations)},
        {"topologySpreadConstraints", offsetof(rdc_spec_t, pod.topology_spread_constraints)},
        {"imagePullSecrets", offsetof(rdc_spec_t, pod.image_pull_secrets)},
        {"nodeSelector", offsetof(rdc_spec_t, pod.node_selector)},
        {"podMetadata", offsetof(rdc_spec_t, pod.pod_metadata)},
        {"serviceMetadata", offsetof(rdc_spec_t, pod.service_metadata)},
    };
    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
        const json_object *have = *(const json_object *const *)((const char *)&s + knobs[i].off);
        CU_ASSERT_PTR_EQUAL(have, json_object_object_get(spec, knobs[i].key));
    }
    CU_ASSERT_STRING_EQUAL(s.pod.priority_class_name, "high");
    CU_ASSERT_EQUAL(s.pod.termination_grace_period_seconds, 90);
    json_object_put(rc);
}

static void test_defaults(void)
{
    rdc_spec_t s;
    json_object *rc = NULL;
    CU_ASSERT_EQUAL_FATAL(parse_spec("{\"size\":1,\"image\":\"redis\"}", &s, &rc), 0);
    CU_ASSERT_EQUAL(s.size, 1);
    CU_ASSERT_STRING_EQUAL(s.image, "redis");
    CU_ASSERT_PTR_NULL(s.version);
    CU_ASSERT_STRING_EQUAL(s.tag, RDC_SPEC_DEFAULT_VERSION);
    CU_ASSERT_EQUAL(s.mode, RDC_MODE_STANDALONE);
    CU_ASSERT_EQUAL(s.persistence, RDC_PERSISTENCE_AOF);
    CU_ASSERT_FALSE(s.persistence_set);
    CU_ASSERT_PTR_NULL(s.config.maxmemory);
    CU_ASSERT_STRING_EQUAL(s.config.maxmemory_policy, "allkeys-lru");
    CU_ASSERT_EQUAL(s.config.n_extra, 0);
    CU_ASSERT_STRING_EQUAL(s.storage.size, "1Gi");
    CU_ASSERT_PTR_NULL(s.storage.storage_class);
    CU_ASSERT_FALSE(s.storage.retention_set);
    CU_ASSERT_PTR_NULL(s.auth.secret);
    CU_ASSERT_STRING_EQUAL(s.auth.key, "password");
    CU_ASSERT_EQUAL(s.failover.down_after_ns, 3000000000LL);
    CU_ASSERT_EQUAL(s.failover.min_replicas_to_write, 0); /* size < 3 */
    CU_ASSERT_EQUAL(s.failover.min_replicas_max_lag, 10);
    CU_ASSERT_EQUAL(s.pdb.max_unavailable, 1);
    CU_ASSERT_PTR_NULL(s.pdb.max_unavailable_percent);
    CU_ASSERT_EQUAL(s.cluster.shards, 3);
    CU_ASSERT_EQUAL(s.cluster.replicas_per_shard, 1);
    CU_ASSERT_PTR_NULL(s.pod.resources);
    CU_ASSERT_PTR_NULL(s.pod.affinity);
    CU_ASSERT_PTR_NULL(s.pod.priority_class_name);
    CU_ASSERT_EQUAL(s.pod.termination_grace_period_seconds, -1);
    json_object_put(rc);
    /* minReplicasToWrite by size; the tag from the image */
    static const struct {
        const char *spec, *tag;
        int min_write;
    } rows[] = {
        {"{\"size\":3,\"image\":\"redis\"}", RDC_SPEC_DEFAULT_VERSION, 1},
        {"{\"size\":3,\"image\":\"redis:7.0\",\"version\":\"7.2\"}", NULL, 1},
        {"{\"size\":2,\"image\":\"redis@sha256:abc\"}", NULL, 0},
        {"{\"size\":2,\"image\":\"host:5000/redis\",\"version\":\"6.2\"}", "6.2", 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        CU_ASSERT_EQUAL_FATAL(parse_spec(rows[i].spec, &s, &rc), 0);
        if (rows[i].tag) {
            CU_ASSERT_STRING_EQUAL(s.tag ? s.tag : "(none)", rows[i].tag);
        } else {
            CU_ASSERT_PTR_NULL(s.tag);
        }
        CU_ASSERT_EQUAL(s.failover.min_replicas_to_write, rows[i].min_write);
        json_object_put(rc);
    }
    /* rdc_spec_defaults alone: what a plan without a valid spec reads */
    rdc_spec_defaults(&s);
    CU_ASSERT_EQUAL(s.size, 0);
    CU_ASSERT_PTR_NULL(s.image);
    CU_ASSERT_STRING_EQUAL(s.storage.size, RDC_SPEC_DEFAULT_STORAGE_SIZE);
}

/* An optional string that is "" or null is unset, and takes its default. */
static void test_empty_is_unset(void)
{
    rdc_spec_t s;
    json_object *rc = NULL;
    CU_ASSERT_EQUAL_FATAL(parse_spec("{\"size\":1,\"image\":\"redis\",\"version\":\"\",\"mode\":null,"
                                     "\"persistence\":\"\",\"config\":{\"maxmemoryPolicy\":\"\"},"
                                     "\"storage\":{\"size\":null,\"storageClass\":\"\"}}",
                                     &s, &rc),
                          0);
    CU_ASSERT_PTR_NULL(s.version);
    CU_ASSERT_STRING_EQUAL(s.tag, RDC_SPEC_DEFAULT_VERSION);
    CU_ASSERT_EQUAL(s.mode, RDC_MODE_STANDALONE);
    CU_ASSERT_FALSE(s.persistence_set);
    CU_ASSERT_STRING_EQUAL(s.config.maxmemory_policy, RDC_SPEC_DEFAULT_MAXMEMORY_POLICY);
    CU_ASSERT_STRING_EQUAL(s.storage.size, RDC_SPEC_DEFAULT_STORAGE_SIZE);
    CU_ASSERT_PTR_NULL(s.storage.storage_class);
    json_object_put(rc);
}

static void test_cluster_mode(void)
{
    rdc_spec_t s;
    json_object *rc = NULL;
    CU_ASSERT_EQUAL_FATAL(parse_spec("{\"size\":15,\"image\":\"redis\",\"mode\":\"Cluster\","
                                     "\"cluster\":{\"shards\":5,\"replicasPerShard\":2}}",
                                     &s, &rc),
                          0);
    CU_ASSERT_EQUAL(s.mode, RDC_MODE_CLUSTER);
    CU_ASSERT_EQUAL(s.size, 15);
    CU_ASSERT_EQUAL(s.cluster.shards, 5);
    CU_ASSERT_EQUAL(s.cluster.replicas_per_shard, 2);
    json_object_put(rc);
    CU_ASSERT_EQUAL_FATAL(parse_spec("{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\"}", &s, &rc), 0);
    CU_ASSERT_EQUAL(s.cluster.shards, 3);
    CU_ASSERT_EQUAL(s.cluster.replicas_per_shard, 1);
    /* the move's rate: 24 MB/s when not said, and 0 (no bound) only when said */
    CU_ASSERT_EQUAL(s.cluster.migration_bytes_per_second, 24000000);
    CU_ASSERT_EQUAL(s.cluster.migration_batch_bytes, 1 << 20);
    json_object_put(rc);
    CU_ASSERT_EQUAL_FATAL(parse_spec("{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\","
                                     "\"cluster\":{\"migration\":{\"bytesPerSecond\":0}}}",
                                     &s, &rc),
                          0);
    CU_ASSERT_EQUAL(s.cluster.migration_bytes_per_second, 0);
    json_object_put(rc);
}

/* Bad input: the errors the validator gave before it became the parser, recorded. */
static const struct {
    const char *rc;
    size_t n;
    const char *errors;
} bad[] = {
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":0,\"image\":\"\"}}",
     2,
     "[spec.size: Invalid value: 0: must be between 1 and 10, spec.image: Required value: must not be "
     "empty]"},
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":\"3\",\"image\":\"redis img\",\"version\":"
     "\"-bad\"}}",
     3,
     "[spec.size: Invalid value: \"3\": must be an integer, spec.image: Invalid value: \"redis img\": "
     "must be an image reference: printable ASCII without blanks, at most 512 bytes, spec.version: Inv"
     "alid value: \"-bad\": must be an image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})]"},
    {"{\"metadata\":{\"name\":\"Cache\"},\"spec\":{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmem"
     "ory\":\"lots\",\"maxmemoryPolicy\":\"allkeys-lfu\"}}}",
     3,
     "[metadata.name: Invalid value: \"Cache\": must be a DNS-1035 label of at most 52 characters ([a-"
     "z]([-a-z0-9]*[a-z0-9])?): it names the Service and the StatefulSet's pods, spec.config.maxmemory"
     ": Invalid value: \"lots\": must be a memory size: digits with an optional unit b, k, kb, m, mb, "
     "g or gb, e.g. 256mb, spec.config.maxmemoryPolicy: Unsupported value: \"allkeys-lfu\": supported "
     "values: \"allkeys-lru\", \"noeviction\", \"volatile-lru\"]"},
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":3,\"image\":\"redis\",\"storage\":{\"size"
     "\":\"0Gi\",\"storageClass\":\"Fast_SSD\"}}}",
     2,
     "[spec.storage.size: Invalid value: \"0Gi\": must be greater than zero, spec.storage.storageClass"
     ": Invalid value: \"Fast_SSD\": must be the name of a StorageClass: a DNS subdomain of lower case"
     " alphanumerics, '-' and '.', at most 253 characters]"},
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":2,\"image\":\"redis\",\"mode\":\"Cluster\""
     ",\"persistence\":\"always\",\"auth\":{\"secretRef\":{\"key\":\"a b\"}},\"failover\":{\"downAfter"
     "\":\"100ms\",\"minReplicasToWrite\":2,\"minReplicasMaxLag\":0}}}",
     7,
     "[spec.size: Invalid value: 2: in Cluster mode spec.size is the number of pods, spec.cluster.shar"
     "ds x (1 + spec.cluster.replicasPerShard) = 6, which the defaulting webhook sets; to add capacity"
     " change spec.cluster.shards, not kubectl scale, spec.persistence: Unsupported value: \"always\":"
     " supported values: \"aof\", \"none\", \"rdb\", spec.auth.secretRef.name: Required value, spec.au"
     "th.secretRef.key: Invalid value: \"a b\": must be a Secret data key ([-._a-zA-Z0-9]+, at most 25"
     "3 characters), spec.failover.downAfter: Invalid value: \"100ms\": must be between 1s and 5m, spe"
     "c.failover.minReplicasMaxLag: Invalid value: 0: must be between 1 and 3600, spec.failover.minRep"
     "licasToWrite: Invalid value: 2: must be less than spec.size (the primary counts replicas besides"
     " itself)]"},
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":3,\"image\":\"redis\",\"resources\":{\"req"
     "uests\":{\"cpu\":\"x\"},\"other\":{}},\"tolerations\":[1],\"imagePullSecrets\":[{\"name\":\"Bad"
     "\"}],\"nodeSelector\":{\"k\":\"v v\"},\"priorityClassName\":\"A\",\"terminationGracePeriodSecond"
     "s\":-1}}",
     7,
     "[spec.resources.requests[cpu]: Invalid value: \"x\": must be a quantity, e.g. 500m, 1Gi or 2, sp"
     "ec.resources.other: Forbidden: only requests and limits may be set, spec.tolerations[0]: Invalid"
     " value: 1: must be an object, spec.imagePullSecrets[0].name: Invalid value: \"Bad\": must be the"
     " name of a Secret (a DNS subdomain), spec.nodeSelector[k]: Invalid value: \"v v\": must be a lab"
     "el value: at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends, spec.priorityClass"
     "Name: Invalid value: \"A\": must be the name of a PriorityClass (a DNS subdomain), spec.terminat"
     "ionGracePeriodSeconds: Invalid value: -1: must be between 0 and 86400]"},
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":3,\"image\":\"redis\",\"podMetadata\":{\"l"
     "abels\":{\"app.kubernetes.io/name\":\"x\"}},\"serviceMetadata\":{\"annotations\":{\"cache.exampl"
     "e.com/x\":\"y\"}},\"podDisruptionBudget\":{\"maxUnavailable\":\"150%\"},\"storage\":{\"retention"
     "\":{\"whenDeleted\":\"Keep\"}}}}",
     4,
     "[spec.podMetadata.labels[app.kubernetes.io/name]: Forbidden: app.kubernetes.io/name is set by th"
     "e operator, spec.serviceMetadata.annotations[cache.example.com/x]: Forbidden: cache.example.com/"
     "x is set by the operator, spec.podDisruptionBudget.maxUnavailable: Invalid value: \"150%\": must"
     " be an integer or a percentage from 0% to 100%, spec.storage.retention.whenDeleted: Unsupported "
     "value: \"Keep\": supported values: \"Delete\", \"Retain\"]"},
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":3,\"image\":\"redis\",\"persistence\":\"no"
     "ne\",\"config\":{\"extra\":{\"save\":\"1 1\",\"port\":\"1\",\"Hz\":\"1\",\"hz\":\"\"}}}}",
     4,
     "[spec.config.extra.save: Forbidden: directive \"save\" is owned by the operator: spec.persistenc"
     "e is none (no snapshots); with rdb or aof, save may be tuned here, spec.config.extra.port: Forbi"
     "dden: directive \"port\" is owned by the operator: the operator listens on port 6379 (probes, Se"
     "rvices and replication use it), spec.config.extra.Hz: Invalid value: null: must be a redis.conf "
     "directive name in lower case ([a-z][a-z0-9-]{0,63}), spec.config.extra.hz: Invalid value: \"\": "
     "must be a string of 1 to 1024 printable characters (no line breaks)]"},
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":[]}",
     1,
     "spec: Invalid value: []: must be an object"},
    {"{\"spec\":{\"size\":3}}",
     2,
     "[metadata.name: Required value, spec.image: Required value]"},
    {"[]",
     1,
     "<object>: Invalid value: []: must be an object"},
    {"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":3,\"image\":\"redis\",\"config\":\"x\",\"s"
     "torage\":7,\"auth\":{},\"failover\":[]}}",
     4,
     "[spec.config: Invalid value: \"x\": must be an object, spec.storage: Invalid value: 7: must be a"
     "n object, spec.auth.secretRef: Required value, spec.failover: Invalid value: []: must be an obje"
     "ct]"},
};

static void test_same_errors_as_before(void)
{
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rdc_spec_t s;
        char *text = NULL;
        json_object *rc = NULL;
        size_t n = parse_text(bad[i].rc, &s, &text, &rc);
        if (strcmp(text, bad[i].errors))
            fprintf(stderr, "\n  row %zu:\n  have %s\n  want %s\n", i, text, bad[i].errors);
        CU_ASSERT_EQUAL(n, bad[i].n);
        CU_ASSERT_STRING_EQUAL(text, bad[i].errors);
        /* rdc_spec_validate says the same */
        rdc_field_errors_t *e = rdc_field_errors_new();
        CU_ASSERT_EQUAL(rdc_spec_validate(rc, e), bad[i].n);
        rdc_field_errors_destroy(&e);
        free(text);
        json_object_put(rc);
    }
}

/* With problems, the fields that passed their own rules are kept and the rest are the
 * defaults (the admission webhook's warning reads image and version so). */
static void test_partial_when_invalid(void)
{
    rdc_spec_t s;
    char *text = NULL;
    json_object *rc = NULL;
    size_t n = parse_text("{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"size\":11,\"image\":\"redis:7.0\","
                          "\"version\":\"7.2\",\"storage\":{\"size\":\"0Gi\"},\"config\":{\"maxmemory\":\"1gb\"}}}",
                          &s, &text, &rc);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(s.size, 0);
    CU_ASSERT_STRING_EQUAL(s.image, "redis:7.0");
    CU_ASSERT_STRING_EQUAL(s.version, "7.2");
    CU_ASSERT_STRING_EQUAL(s.storage.size, RDC_SPEC_DEFAULT_STORAGE_SIZE);
    CU_ASSERT_STRING_EQUAL(s.config.maxmemory, "1gb");
    free(text);
    json_object_put(rc);
    /* Not an object at all: the defaults. */
    n = parse_text("42", &s, &text, &rc);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_STRING_EQUAL(text, "<object>: Invalid value: 42: must be an object");
    CU_ASSERT_EQUAL(s.size, 0);
    CU_ASSERT_STRING_EQUAL(s.auth.key, RDC_SPEC_DEFAULT_AUTH_KEY);
    free(text);
    json_object_put(rc);
}

static const cu_entry_t tests[] = {
    CU_SUITE("rdc_spec_parse"),
    {"every field of the typed spec", test_every_field},
    {"the defaults, in one place", test_defaults},
    {"an empty or null string is unset", test_empty_is_unset},
    {"Cluster mode's layout", test_cluster_mode},
    {"bad input: the same field errors as before", test_same_errors_as_before},
    {"with problems: the valid fields and the defaults", test_partial_when_invalid},
};

CU_MAIN(tests)
