/* test_knobs: the v1 pod, disruption-budget, storage and config knobs (issue 20).
 *
 *   - redisconf's tables: every owned directive is refused by rdc_spec_validate with its
 *     name (the webhook's and workerd's rule), appendonly only with spec.persistence;
 *     the runtime-settable table;
 *   - rdc_spec's rules of the knobs, one row a problem, with the message expected;
 *   - render: every knob's default, and every knob set, in the StatefulSet, Service,
 *     ConfigMap and PodDisruptionBudget;
 *   - plan: a change to a runtime-settable directive rewrites the ConfigMap only (the
 *     pods do not roll), any other change rolls them; the PodDisruptionBudget is created,
 *     its drift healed, left alone when it is not ours;
 *   - conversion: a v1 object with every knob reads back from v1alpha1 unchanged.
 */
#include "conversion.h"
#include "crd_file.h"
#include "cu_table.h"
#include "json_at.h"
#include "plan.h"
#include "plan_fixture.h"
#include "rdc_spec.h"
#include "redisconf.h"
#include "render.h"
#include "spec_errors.h"
#include "text_assert.h"
#include "text_case.h"
#include "v1_only.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T1 INT64_C(1714564800000000000)

/* The render input of the RedisCluster rc (valid: asserted), its spec parsed into *spec. */
static render_input_t input_of(const json_object *rc, rdc_spec_t *spec)
{
    rdc_field_errors_t *errs = rdc_field_errors_new();
    CU_ASSERT_EQUAL_FATAL(rdc_spec_parse(rc, spec, errs), 0);
    rdc_field_errors_destroy(&errs);
    return (render_input_t){.name = "cache", .ns = "default", .uid = "uid-1", .spec = spec};
}

static const json_object *body_of(const plan_t *p, const char *resource);

/* ---- The deny-list and the runtime table -------------------------------------------- */

static void test_every_owned_directive_is_refused_by_name(void)
{
    static const char *const owned[] = {
        "bind", "port", "tls-port", "unixsocket", "unixsocketperm", "daemonize", "supervised", "pidfile",
        "logfile", "dir", "include", "replicaof", "slaveof", "masterauth", "masteruser", "requirepass", "user",
        "aclfile", "rename-command", "protected-mode", "cluster-enabled", "cluster-config-file",
        "replica-announce-ip", "slave-announce-ip", "replica-announce-port", "slave-announce-port",
        "min-replicas-to-write", "min-slaves-to-write", "min-replicas-max-lag", "min-slaves-max-lag",
        "maxmemory", "maxmemory-policy"};
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
        char spec[512], field[128], named[128];
        snprintf(spec, sizeof(spec), "{\"size\":1,\"image\":\"redis\",\"config\":{\"extra\":{\"%s\":\"x\"}}}",
                 owned[i]);
        char *err = errors_of(spec);
        snprintf(field, sizeof(field), "spec.config.extra.%s: Forbidden: ", owned[i]);
        snprintf(named, sizeof(named), "directive \"%s\" is owned by the operator: ", owned[i]);
        ASSERT_TEXT_HAS(err, field, named);
        CU_ASSERT_PTR_NOT_NULL(redisconf_owned(owned[i], NULL));
        CU_ASSERT_FALSE(redisconf_runtime_settable(owned[i]));
        free(err);
    }
    /* Case does not hide one (Redis folds it), though the CRD and rdc_spec want lower case. */
    CU_ASSERT_PTR_NOT_NULL(redisconf_owned("RequirePass", NULL));
    char *err = errors_of("{\"size\":1,\"image\":\"redis\",\"config\":{\"extra\":{\"Port\":\"7000\"}}}");
    ASSERT_TEXT_HAS(err, "spec.config.extra.Port: Invalid value", "lower case");
    free(err);
    /* appendonly: the operator's only when spec.persistence says what to write. */
    err = errors_of("{\"size\":1,\"image\":\"redis\",\"config\":{\"extra\":{\"appendonly\":\"no\"}}}");
    CU_ASSERT_STRING_EQUAL(err, "");
    free(err);
    err = errors_of(
        "{\"size\":1,\"image\":\"redis\",\"persistence\":\"rdb\",\"config\":{\"extra\":{\"appendonly\":\"no\"}}}");
    ASSERT_TEXT_HAS(err, "spec.config.extra.appendonly: Forbidden: directive \"appendonly\" is owned by the operator: "
                         "set by spec.persistence");
    free(err);
}

/* The CRD's CEL rule refuses the same directives (the API server says so even without the
 * webhook): its list, read from the file, is redisconf's table in the same order. */
static void test_crd_lists_the_owned_directives(void)
{
    FILE *f = crd_open();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char line[4096], want[4096] = "";
    size_t off = 0;
    for (size_t i = 0; redisconf_owned_name(i); i++)
        off += (size_t)snprintf(want + off, sizeof(want) - off, "%s'%s'", i ? ", " : "", redisconf_owned_name(i));
    int rules = 0;
    while (fgets(line, sizeof(line), f)) {
        const char *r = strstr(line, "self.all(k, !(k in [");
        if (!r)
            continue;
        rules++;
        r += strlen("self.all(k, !(k in [");
        const char *end = strchr(r, ']');
        CU_ASSERT_PTR_NOT_NULL_FATAL(end);
        if ((size_t)(end - r) != strlen(want) || strncmp(r, want, strlen(want)))
            fprintf(stderr, "\n  CRD: %.*s\n  redisconf: %s\n", (int)(end - r), r, want);
        CU_ASSERT_EQUAL((size_t)(end - r), strlen(want));
        CU_ASSERT_EQUAL(strncmp(r, want, strlen(want)), 0);
    }
    fclose(f);
    CU_ASSERT_EQUAL(rules, 1); /* on v1 only */
}

/* workerd's side of the same rule (no webhook, an object stored past it): Failed, named. */
static void test_owned_directive_fails_the_reconcile(void)
{
    json_object *rc = rc_with("{\"size\":1,\"image\":\"redis\",\"config\":{\"extra\":{\"requirepass\":\"x\"}}}");
    plan_t *p = plan_compute_children(rc, &(plan_children_t){NULL, NULL, NULL, NULL}, NULL, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Failed");
    CU_ASSERT_PTR_NULL(body_of(p, "statefulsets"));
    CU_ASSERT_PTR_NULL(body_of(p, "configmaps"));
    ASSERT_TEXT_HAS(
        json_object_to_json_string_ext(plan_status(p), JSON_C_TO_STRING_NOSLASHESCAPE), "InvalidSpec",
        "spec.config.extra.requirepass: Forbidden: directive \\\"requirepass\\\" is owned by the operator: set by "
        "spec.auth");
    plan_destroy(&p);
    json_object_put(rc);
}

static void test_extra_values_and_names(void)
{
    static const struct {
        const char *extra;
        const char *want; /* "" = valid */
    } rows[] = {
        {"{\"hz\":\"20\",\"timeout\":\"300\",\"lazyfree-lazy-eviction\":\"yes\",\"save\":\"900 1 300 10\"}", ""},
        {"{\"notify-keyspace-events\":\"Ex\",\"loadmodule\":\"/opt/m.so arg\"}", ""},
        {"{\"hz\":\"20\\nrequirepass x\"}",
         "spec.config.extra.hz: Invalid value: \"20\\x0arequirepass x\": must be a string"},
        {"{\"hz\":\"\"}", "spec.config.extra.hz: Invalid value: \"\""},
        {"{\"hz\":20}", "spec.config.extra.hz: Invalid value: 20"},
        {"{\"1hz\":\"20\"}", "spec.config.extra.1hz: Invalid value"},
        {"{\"h z\":\"20\"}", "spec.config.extra.h z: Invalid value"},
        {"[\"hz 20\"]", "spec.config.extra: Invalid value: [\"hz 20\"]: must be an object"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char spec[1024];
        snprintf(spec, sizeof(spec), "{\"size\":1,\"image\":\"redis\",\"config\":{\"extra\":%s}}", rows[i].extra);
        char *err = errors_of(spec);
        if (!*rows[i].want) {
            CU_ASSERT_STRING_EQUAL(err, "");
        } else {
            ASSERT_TEXT_HAS(err, rows[i].want);
        }
        free(err);
    }
    /* At most REDISCONF_EXTRA_MAX directives. */
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"size\":1,\"image\":\"redis\",\"config\":{\"extra\":{");
    for (int i = 0; i <= REDISCONF_EXTRA_MAX; i++)
        buf_printf(&b, "%s\"x%d\":\"1\"", i ? "," : "", i);
    buf_puts(&b, "}}}");
    char *err = errors_of(buf_str(&b));
    ASSERT_TEXT_HAS(err, "spec.config.extra: Invalid value: null: must have at most 64 directives");
    free(err);
    buf_free(&b);
}

static void test_runtime_table(void)
{
    /* appendonly: CONFIG SET turns the AOF on (a rewrite) or off, so spec.persistence
     * changes without a restart (render.h PERSISTENCE) */
    static const char *const runtime[] = {"hz", "HZ", "timeout", "maxclients", "slowlog-max-len", "save",
                                          "appendfsync", "appendonly", "notify-keyspace-events", "lfu-log-factor"};
    static const char *const restart[] = {"databases", "io-threads", "loadmodule", "daemonize",
                                          "unixsocket", "enable-debug-command", "nonsense"};
    for (size_t i = 0; i < sizeof(runtime) / sizeof(runtime[0]); i++)
        CU_ASSERT_TRUE(redisconf_runtime_settable(runtime[i]));
    for (size_t i = 0; i < sizeof(restart) / sizeof(restart[0]); i++)
        CU_ASSERT_FALSE(redisconf_runtime_settable(restart[i]));
}

/* ---- rdc_spec rules of the pod knobs ------------------------------------------------- */

static void test_knob_rules(void)
{
    static const struct {
        const char *fields; /* added to {"size":3,"image":"redis", ...} */
        const char *want;   /* "" = valid */
    } rows[] = {
        {"\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"512Mi\"},\"limits\":{\"cpu\":2,\"memory\":"
         "\"1.5Gi\"}}",
         ""},
        {"\"resources\":{\"requests\":{\"cpu\":\"a lot\"}}", "spec.resources.requests[cpu]: Invalid value: \"a lot\""},
        {"\"resources\":{\"requests\":{\"cpu\":-1}}", "spec.resources.requests[cpu]: Invalid value: -1"},
        {"\"resources\":{\"claims\":[]}", "spec.resources.claims: Forbidden: only requests and limits"},
        {"\"resources\":[]", "spec.resources: Invalid value: []: must be an object"},
        {"\"securityContext\":{\"runAsUser\":1000},\"podSecurityContext\":{\"fsGroup\":2000},\"affinity\":{}", ""},
        {"\"affinity\":\"anywhere\"", "spec.affinity: Invalid value: \"anywhere\": must be an object"},
        {"\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}],\"topologySpreadConstraints\":[]", ""},
        {"\"tolerations\":{}", "spec.tolerations: Invalid value: {}: must be an array"},
        {"\"tolerations\":[1]", "spec.tolerations[0]: Invalid value: 1: must be an object"},
        {"\"nodeSelector\":{\"disktype\":\"ssd\",\"topology.kubernetes.io/zone\":\"a\"}", ""},
        {"\"nodeSelector\":{\"disk type\":\"ssd\"}", "spec.nodeSelector[disk type]: Invalid value"},
        {"\"nodeSelector\":{\"disktype\":\"s s\"}",
         "spec.nodeSelector[disktype]: Invalid value: \"s s\": must be a label value"},
        {"\"priorityClassName\":\"high-priority\"", ""},
        {"\"priorityClassName\":\"High\"", "spec.priorityClassName: Invalid value: \"High\""},
        {"\"imagePullSecrets\":[{\"name\":\"regcred\"}]", ""},
        {"\"imagePullSecrets\":[{}]",
         "spec.imagePullSecrets[0].name: Invalid value: null: must be the name of a Secret"},
        {"\"terminationGracePeriodSeconds\":60", ""},
        {"\"terminationGracePeriodSeconds\":-1",
         "spec.terminationGracePeriodSeconds: Invalid value: -1: must be between 0 and 86400"},
        {"\"podMetadata\":{\"labels\":{\"team\":\"payments\"},\"annotations\":{\"prometheus.io/scrape\":\"true\"}}",
         ""},
        {"\"podMetadata\":{\"labels\":{\"app.kubernetes.io/instance\":\"other\"}}",
         "spec.podMetadata.labels[app.kubernetes.io/instance]: Forbidden: app.kubernetes.io/instance is set by the "
         "operator"},
        {"\"podMetadata\":{\"annotations\":{\"cache.example.com/config-hash\":\"x\"}}",
         "spec.podMetadata.annotations[cache.example.com/config-hash]: Forbidden"},
        {"\"serviceMetadata\":{\"labels\":{\"app.kubernetes.io/name\":\"x\"}}",
         "spec.serviceMetadata.labels[app.kubernetes.io/name]: Forbidden"},
        {"\"serviceMetadata\":{\"annotations\":{\"external-dns.alpha.kubernetes.io/hostname\":\"r.example.com\"}}", ""},
        {"\"podDisruptionBudget\":{\"maxUnavailable\":0}", ""},
        {"\"podDisruptionBudget\":{\"maxUnavailable\":\"50%\"}", ""},
        {"\"podDisruptionBudget\":{\"maxUnavailable\":11}",
         "spec.podDisruptionBudget.maxUnavailable: Invalid value: 11: must be between 0 and 10"},
        {"\"podDisruptionBudget\":{\"maxUnavailable\":\"150%\"}",
         "spec.podDisruptionBudget.maxUnavailable: Invalid value: \"150%\": must be an integer or a percentage"},
        {"\"podDisruptionBudget\":{\"maxUnavailable\":\"one\"}", "must be an integer or a percentage"},
        {"\"storage\":{\"retention\":{\"whenDeleted\":\"Delete\",\"whenScaled\":\"Retain\"}}", ""},
        {"\"storage\":{\"retention\":{\"whenDeleted\":\"Keep\"}}",
         "spec.storage.retention.whenDeleted: Unsupported value: \"Keep\": supported values: \"Delete\", \"Retain\""},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char spec[2048];
        snprintf(spec, sizeof(spec), "{\"size\":3,\"image\":\"redis\",%s}", rows[i].fields);
        char *err = errors_of(spec);
        if (!*rows[i].want) {
            if (*err)
                fprintf(stderr, "\n  row %zu: %s\n", i, err);
            CU_ASSERT_STRING_EQUAL(err, "");
        } else {
            ASSERT_TEXT_HAS(err, rows[i].want);
        }
        free(err);
    }
}

/* ---- Rendering ---------------------------------------------------------------------- */

typedef struct {
    json_object *rc;
    plan_t *plan;
    const json_object *cm, *svc, *sts, *pdb;
} rendered_t;

static const json_object *body_of(const plan_t *p, const char *resource)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if ((a->kind == PLAN_CREATE || a->kind == PLAN_APPLY || a->kind == PLAN_REPLACE) &&
            !strcmp(a->resource, resource))
            return a->body;
    }
    return NULL;
}

/* The children a first reconcile of spec creates. */
static void render_spec(rendered_t *r, const char *spec)
{
    r->rc = rc_with(spec);
    r->plan = plan_compute_children(r->rc, &(plan_children_t){NULL, NULL, NULL, NULL}, NULL, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->plan);
    CU_ASSERT_PTR_NULL(plan_error(r->plan));
    r->cm = body_of(r->plan, "configmaps");
    r->svc = body_of(r->plan, "services");
    r->sts = body_of(r->plan, "statefulsets");
    r->pdb = body_of(r->plan, "poddisruptionbudgets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->cm);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->svc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->sts);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->pdb);
}

static void rendered_free(rendered_t *r)
{
    plan_destroy(&r->plan);
    json_object_put(r->rc);
}

static void test_render_defaults(void)
{
    rendered_t r;
    render_spec(&r, "{\"size\":3,\"image\":\"redis\"}");
    const json_object *pod = at(r.sts, "spec template spec"), *c = at(pod, "containers 0");
    /* Resources: the guide's values. */
    CU_ASSERT_STRING_EQUAL(str_at(c, "resources requests cpu"), RENDER_CPU_REQUEST);
    CU_ASSERT_STRING_EQUAL(str_at(c, "resources requests memory"), RENDER_MEMORY_REQUEST);
    CU_ASSERT_STRING_EQUAL(str_at(c, "resources limits cpu"), RENDER_CPU_LIMIT);
    CU_ASSERT_STRING_EQUAL(str_at(c, "resources limits memory"), RENDER_MEMORY_LIMIT);
    /* Pod Security "restricted". */
    CU_ASSERT_TRUE(json_object_get_boolean(at(pod, "securityContext runAsNonRoot")));
    CU_ASSERT_EQUAL(int_at(pod, "securityContext runAsUser"), RENDER_REDIS_UID);
    CU_ASSERT_EQUAL(int_at(pod, "securityContext fsGroup"), RENDER_REDIS_UID);
    CU_ASSERT_STRING_EQUAL(str_at(pod, "securityContext seccompProfile type"), "RuntimeDefault");
    CU_ASSERT_FALSE(json_object_get_boolean(at(c, "securityContext allowPrivilegeEscalation")));
    CU_ASSERT_STRING_EQUAL(str_at(c, "securityContext capabilities drop 0"), "ALL");
    CU_ASSERT_TRUE(json_object_get_boolean(at(c, "securityContext readOnlyRootFilesystem")));
    /* Affinity: preferred anti-affinity across nodes for the cluster's pods. */
    const json_object *pref = at(pod, "affinity podAntiAffinity preferredDuringSchedulingIgnoredDuringExecution 0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pref);
    CU_ASSERT_EQUAL(int_at(pref, "weight"), 100);
    CU_ASSERT_STRING_EQUAL(str_at(pref, "podAffinityTerm topologyKey"), "kubernetes.io/hostname");
    CU_ASSERT_STRING_EQUAL(str_at(pref, "podAffinityTerm labelSelector matchLabels app.kubernetes.io/instance"),
                           "cache");
    CU_ASSERT_STRING_EQUAL(str_at(pref, "podAffinityTerm labelSelector matchLabels app.kubernetes.io/name"), "redis");
    CU_ASSERT_PTR_NULL(at(pod, "affinity podAntiAffinity requiredDuringSchedulingIgnoredDuringExecution"));
    /* Unset knobs are absent: the API's defaults stand. */
    static const char *const absent[] = {"tolerations", "nodeSelector", "topologySpreadConstraints",
                                         "priorityClassName", "imagePullSecrets", "terminationGracePeriodSeconds"};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        CU_ASSERT_PTR_NULL(at(pod, absent[i]));
    CU_ASSERT_PTR_NULL(at(r.sts, "spec persistentVolumeClaimRetentionPolicy"));
    /* Only the spec hash and the keys set (REMOVED KNOBS in plan.h). */
    CU_ASSERT_EQUAL(json_object_object_length(at(r.svc, "metadata annotations")), 2);
    CU_ASSERT_PTR_NOT_NULL(str_at(r.svc, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION));
    CU_ASSERT_STRING_EQUAL(str_at(r.svc, "metadata annotations " PLAN_RENDERED_KEYS_ANNOTATION),
                           "labels:app.kubernetes.io/name,labels:app.kubernetes.io/instance,"
                           "labels:app.kubernetes.io/managed-by,labels:app.kubernetes.io/part-of");
    CU_ASSERT_EQUAL(json_object_object_length(at(r.sts, "spec template metadata labels")), 4);
    CU_ASSERT_EQUAL(json_object_object_length(at(r.sts, "spec template metadata annotations")), 1);
    /* The PodDisruptionBudget: maxUnavailable 1, the selector's labels, owned. */
    CU_ASSERT_STRING_EQUAL(str_at(r.pdb, "apiVersion"), "policy/v1");
    CU_ASSERT_STRING_EQUAL(str_at(r.pdb, "kind"), "PodDisruptionBudget");
    CU_ASSERT_STRING_EQUAL(str_at(r.pdb, "metadata name"), "cache");
    CU_ASSERT_EQUAL(int_at(r.pdb, "spec maxUnavailable"), 1);
    CU_ASSERT_TRUE(json_object_equal(at(r.pdb, "spec selector"), at(r.sts, "spec selector")));
    CU_ASSERT_STRING_EQUAL(str_at(r.pdb, "metadata ownerReferences 0 uid"), "uid-1");
    CU_ASSERT_TRUE(json_object_get_boolean(at(r.pdb, "metadata ownerReferences 0 controller")));
    CU_ASSERT_STRING_EQUAL(str_at(r.pdb, "metadata labels app.kubernetes.io/managed-by"), "rediscluster-operator");
    /* redis.conf: the operator's lines only. */
    const char *conf = str_at(r.cm, "data redis.conf");
    ASSERT_TEXT_HAS(conf, "port 6379\n", "maxmemory-policy allkeys-lru\n");
    CU_ASSERT_PTR_NULL(strstr(conf, "\nhz "));
    rendered_free(&r);
}

#define EVERY_KNOB                                                                                                    \
    "{\"size\":3,\"image\":\"redis\",\"persistence\":\"aof\","                                                        \
    "\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"512Mi\"},\"limits\":{\"cpu\":2,\"memory\":\"2Gi\"}},"  \
    "\"securityContext\":{\"readOnlyRootFilesystem\":false},"                                                         \
    "\"podSecurityContext\":{\"runAsUser\":1000,\"fsGroup\":2000},"                                                   \
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"     \
    "[{\"matchExpressions\":[{\"key\":\"disktype\",\"operator\":\"In\",\"values\":[\"ssd\"]}]}]}}},"                  \
    "\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"redis\",\"effect\":\"NoSchedule\"}]," \
    "\"nodeSelector\":{\"disktype\":\"ssd\"},"                                                                        \
    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"topology.kubernetes.io/zone\","                  \
    "\"whenUnsatisfiable\":\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app.kubernetes.io/instance\":"     \
    "\"cache\"}}}],"                                                                                                  \
    "\"priorityClassName\":\"redis-high\",\"imagePullSecrets\":[{\"name\":\"regcred\"}],"                            \
    "\"terminationGracePeriodSeconds\":90,"                                                                           \
    "\"podMetadata\":{\"labels\":{\"team\":\"payments\"},\"annotations\":{\"prometheus.io/scrape\":\"true\"}},"        \
    "\"serviceMetadata\":{\"labels\":{\"tier\":\"cache\"},\"annotations\":{\"example.com/dns\":\"r.example.com\"}},"   \
    "\"podDisruptionBudget\":{\"maxUnavailable\":\"50%\"},"                                                          \
    "\"storage\":{\"size\":\"1Gi\",\"retention\":{\"whenDeleted\":\"Delete\"}},"                                      \
    "\"config\":{\"extra\":{\"timeout\":\"300\",\"hz\":\"20\",\"databases\":\"32\"}}}"

static void test_render_every_knob(void)
{
    char *err = errors_of(EVERY_KNOB);
    CU_ASSERT_STRING_EQUAL(err, "");
    free(err);
    rendered_t r;
    render_spec(&r, EVERY_KNOB);
    const json_object *spec = at(r.rc, "spec"), *pod = at(r.sts, "spec template spec"), *c = at(pod, "containers 0");
    /* As given, integer quantities as strings. */
    CU_ASSERT_STRING_EQUAL(str_at(c, "resources requests cpu"), "250m");
    CU_ASSERT_STRING_EQUAL(str_at(c, "resources requests memory"), "512Mi");
    CU_ASSERT_STRING_EQUAL(str_at(c, "resources limits cpu"), "2");
    CU_ASSERT_STRING_EQUAL(str_at(c, "resources limits memory"), "2Gi");
    /* Merged over the restricted defaults. */
    CU_ASSERT_FALSE(json_object_get_boolean(at(c, "securityContext readOnlyRootFilesystem")));
    CU_ASSERT_STRING_EQUAL(str_at(c, "securityContext capabilities drop 0"), "ALL");
    CU_ASSERT_EQUAL(int_at(pod, "securityContext runAsUser"), 1000);
    CU_ASSERT_EQUAL(int_at(pod, "securityContext fsGroup"), 2000);
    CU_ASSERT_EQUAL(int_at(pod, "securityContext runAsGroup"), RENDER_REDIS_UID);
    CU_ASSERT_TRUE(json_object_get_boolean(at(pod, "securityContext runAsNonRoot")));
    CU_ASSERT_STRING_EQUAL(str_at(pod, "securityContext seccompProfile type"), "RuntimeDefault");
    /* Copied whole, the default affinity replaced. */
    static const char *const copied[] = {"affinity", "tolerations", "nodeSelector", "topologySpreadConstraints",
                                         "priorityClassName", "imagePullSecrets", "terminationGracePeriodSeconds"};
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
        if (!json_object_equal(at(pod, copied[i]), at(spec, copied[i])))
            fprintf(stderr, "\n  pod spec %s differs\n", copied[i]);
        CU_ASSERT_TRUE(json_object_equal(at(pod, copied[i]), at(spec, copied[i])));
    }
    CU_ASSERT_PTR_NULL(at(pod, "affinity podAntiAffinity"));
    /* Extra metadata beside the operator's. */
    CU_ASSERT_STRING_EQUAL(str_at(r.sts, "spec template metadata labels team"), "payments");
    CU_ASSERT_STRING_EQUAL(str_at(r.sts, "spec template metadata labels app.kubernetes.io/instance"), "cache");
    CU_ASSERT_STRING_EQUAL(str_at(r.sts, "spec template metadata annotations prometheus.io/scrape"), "true");
    CU_ASSERT_PTR_NOT_NULL(str_at(r.sts, "spec template metadata annotations " RENDER_CONFIG_HASH_ANNOTATION));
    CU_ASSERT_PTR_NULL(at(r.sts, "metadata labels team")); /* the pods', not the StatefulSet's */
    CU_ASSERT_STRING_EQUAL(str_at(r.svc, "metadata labels tier"), "cache");
    CU_ASSERT_STRING_EQUAL(str_at(r.svc, "metadata labels app.kubernetes.io/managed-by"), "rediscluster-operator");
    CU_ASSERT_STRING_EQUAL(str_at(r.svc, "metadata annotations example.com/dns"), "r.example.com");
    /* Claims and budget. */
    CU_ASSERT_STRING_EQUAL(str_at(r.sts, "spec persistentVolumeClaimRetentionPolicy whenDeleted"), "Delete");
    CU_ASSERT_STRING_EQUAL(str_at(r.sts, "spec persistentVolumeClaimRetentionPolicy whenScaled"), "Retain");
    CU_ASSERT_STRING_EQUAL(str_at(r.pdb, "spec maxUnavailable"), "50%");
    /* redis.conf: the extra directives after the operator's, by name. */
    const char *conf = str_at(r.cm, "data redis.conf");
    CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
    const char *mp = strstr(conf, "maxmemory-policy"), *db = strstr(conf, "\ndatabases 32\n"),
               *hz = strstr(conf, "\nhz 20\n"), *to = strstr(conf, "\ntimeout 300\n");
    CU_ASSERT(mp && db && hz && to && mp < db && db < hz && hz < to);
    /* The restart part leaves out what CONFIG SET can change. */
    rdc_spec_t typed;
    render_input_t in = input_of(r.rc, &typed);
    buf_t full, restart;
    buf_init(&full, 0);
    buf_init(&restart, 0);
    CU_ASSERT_EQUAL(render_redis_conf(&in, &full), 0);
    CU_ASSERT_EQUAL(render_redis_conf_restart(&in, &restart), 0);
    CU_ASSERT_STRING_EQUAL(buf_str(&full), conf);
    ASSERT_TEXT_HAS(buf_str(&restart), "\ndatabases 32\n");
    ASSERT_TEXT_LACKS(buf_str(&restart), "\nhz ", "\ntimeout ");
    buf_free(&full);
    buf_free(&restart);
    rendered_free(&r);
}

/* ---- Plan: rolls, drift, ownership ---------------------------------------------------- */

/* The pod template's config hash of spec. */
static char *hash_of(const char *spec)
{
    rendered_t r;
    render_spec(&r, spec);
    char *h = strdup(str_at(r.sts, "spec template metadata annotations " RENDER_CONFIG_HASH_ANNOTATION));
    rendered_free(&r);
    return h;
}

/* The plan of new_spec against the observed children kids (ConfigMap, Service,
 * StatefulSet, PDB); frees the kids and the rendered r they were copied from. */
static plan_t *plan_of_kids(const char *new_spec, json_object *kids[4], rendered_t *r)
{
    json_object *rc = rc_with(new_spec);
    plan_t *p = plan_compute_children(rc, &(plan_children_t){kids[0], kids[1], kids[2], kids[3]}, NULL, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    put_all(kids, 4);
    json_object_put(rc);
    rendered_free(r);
    return p;
}

/* Observed children that are exactly what a first reconcile of spec created, then the
 * plan of new_spec against them. */
static plan_t *plan_change(const char *spec, const char *new_spec, const char *pdb_patch)
{
    rendered_t r;
    render_spec(&r, spec);
    json_object *kids[4] = {NULL, NULL, NULL, NULL};
    const json_object *src[4] = {r.cm, r.svc, r.sts, r.pdb};
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(json_object_deep_copy((json_object *)src[i], &kids[i], NULL), 0);
    if (pdb_patch)
        json_object_object_add(kids[3], "spec", parse(pdb_patch));
    return plan_of_kids(new_spec, kids, &r);
}

static int writes_to(const plan_t *p, const char *resource)
{
    return body_of(p, resource) != NULL;
}

#define BASE "{\"size\":3,\"image\":\"redis\",\"config\":{\"extra\":{\"hz\":\"10\",\"databases\":\"16\"}}}"
#define HZ20 "{\"size\":3,\"image\":\"redis\",\"config\":{\"extra\":{\"hz\":\"20\",\"databases\":\"16\"}}}"
#define DB32 "{\"size\":3,\"image\":\"redis\",\"config\":{\"extra\":{\"hz\":\"10\",\"databases\":\"32\"}}}"

static void test_runtime_change_does_not_roll(void)
{
    char *a = hash_of(BASE), *b = hash_of(HZ20), *c = hash_of(DB32);
    CU_ASSERT_STRING_EQUAL(a, b); /* hz: CONFIG SET-able, same pod template */
    CU_ASSERT_STRING_NOT_EQUAL(a, c);
    free(a);
    free(b);
    free(c);
    /* Unchanged: nothing to write. */
    plan_t *p = plan_change(BASE, BASE, NULL);
    CU_ASSERT_EQUAL(plan_action_count(p), 1); /* the first status */
    CU_ASSERT_FALSE(writes_to(p, "configmaps") || writes_to(p, "statefulsets") || writes_to(p, "poddisruptionbudgets"));
    plan_destroy(&p);
    /* hz 10 -> 20: the ConfigMap only. */
    p = plan_change(BASE, HZ20, NULL);
    CU_ASSERT_TRUE(writes_to(p, "configmaps"));
    ASSERT_TEXT_HAS(str_at(body_of(p, "configmaps"), "data redis.conf"), "\nhz 20\n");
    CU_ASSERT_FALSE(writes_to(p, "statefulsets"));
    plan_destroy(&p);
    /* databases 16 -> 32: the ConfigMap and a new pod template (the pods roll). */
    p = plan_change(BASE, DB32, NULL);
    CU_ASSERT_TRUE(writes_to(p, "configmaps"));
    CU_ASSERT_TRUE(writes_to(p, "statefulsets"));
    plan_destroy(&p);
    /* A pod knob rolls the pods too. */
    p = plan_change(BASE,
                    "{\"size\":3,\"image\":\"redis\",\"config\":{\"extra\":{\"hz\":\"10\",\"databases\":\"16\"}},"
                    "\"terminationGracePeriodSeconds\":120}",
                    NULL);
    CU_ASSERT_TRUE(writes_to(p, "statefulsets"));
    CU_ASSERT_FALSE(writes_to(p, "configmaps"));
    plan_destroy(&p);
}

static void test_pdb_drift_and_ownership(void)
{
    /* Someone set maxUnavailable 0 (drains blocked): applied back to 1. */
    plan_t *p = plan_change(BASE, BASE, "{\"maxUnavailable\":0,\"selector\":{\"matchLabels\":{}}}");
    const json_object *b = body_of(p, "poddisruptionbudgets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(int_at(b, "spec maxUnavailable"), 1);
    const plan_action_t *a = NULL;
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (!strcmp(plan_action(p, i)->resource, "poddisruptionbudgets"))
            a = plan_action(p, i);
    CU_ASSERT_EQUAL(a->kind, PLAN_APPLY);
    CU_ASSERT_STRING_EQUAL(a->path, "/apis/policy/v1/namespaces/default/poddisruptionbudgets/cache"
                                    "?fieldManager=rediscluster-operator&force=true");
    plan_destroy(&p);
    /* Configured: 2. */
    p = plan_change(BASE,
                    "{\"size\":3,\"image\":\"redis\",\"config\":{\"extra\":{\"hz\":\"10\",\"databases\":\"16\"}},"
                    "\"podDisruptionBudget\":{\"maxUnavailable\":2}}",
                    NULL);
    CU_ASSERT_EQUAL(int_at(body_of(p, "poddisruptionbudgets"), "spec maxUnavailable"), 2);
    CU_ASSERT_FALSE(writes_to(p, "statefulsets"));
    plan_destroy(&p);
    /* A PodDisruptionBudget of that name that is not ours: left alone, reported. */
    json_object *rc = rc_with(BASE);
    json_object *theirs = parse("{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":"
                                "\"cache\",\"namespace\":\"default\"},\"spec\":{\"minAvailable\":3}}");
    p = plan_compute_children(rc, &(plan_children_t){NULL, NULL, NULL, theirs}, NULL, T1);
    CU_ASSERT_FALSE(writes_to(p, "poddisruptionbudgets"));
    const char *deg = json_object_to_json_string_ext(plan_status(p), JSON_C_TO_STRING_NOSLASHESCAPE);
    ASSERT_TEXT_HAS(deg, "OwnerConflict",
                    "PodDisruptionBudget default/cache exists and was not created by this RedisCluster");
    plan_destroy(&p);
    json_object_put(theirs);
    json_object_put(rc);
}

/* ---- Plan: a removed knob is removed (REMOVED KNOBS in plan.h) ------------------------- */

#define PLAIN "{\"size\":3,\"image\":\"redis\"}"

/* The first action on resource, or NULL. */
static const plan_action_t *action_on(const plan_t *p, const char *resource)
{
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->resource && !strcmp(plan_action(p, i)->resource, resource))
            return plan_action(p, i);
    return NULL;
}

/* Observed children as a first reconcile of spec created them, as the API server shows
 * them (a resourceVersion, someone else's Service label team; no managedFields, which
 * the informer cache drops), with their spec hash dropped when strip_hash; then the plan
 * of new_spec against them. */
static plan_t *plan_against(const char *spec, const char *new_spec, int strip_hash)
{
    rendered_t r;
    render_spec(&r, spec);
    json_object *kids[4] = {NULL, NULL, NULL, NULL};
    const json_object *src[4] = {r.cm, r.svc, r.sts, r.pdb};
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL_FATAL(json_object_deep_copy((json_object *)src[i], &kids[i], NULL), 0);
        json_object *meta = at(kids[i], "metadata");
        json_object_object_add(meta, "resourceVersion", json_object_new_string("777"));
        json_object *ann = at(meta, "annotations");
        if (strip_hash && ann)
            json_object_object_del(ann, PLAN_SPEC_HASH_ANNOTATION);
    }
    json_object *svc_labels = at(kids[1], "metadata labels");
    CU_ASSERT_PTR_NOT_NULL_FATAL(svc_labels);
    json_object_object_add(svc_labels, "team", json_object_new_string("payments"));
    return plan_of_kids(new_spec, kids, &r);
}

static void test_removed_knob_is_removed(void)
{
    static const struct {
        const char *knob;     /* the knob, appended to PLAIN's members */
        const char *resource; /* the child that must be replaced */
        const char *gone;     /* a path the replaced body must lack */
        const char *kept;     /* a path it must keep (NULL: none) */
    } rows[] = {
        {"\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\"}]", "statefulsets",
         "spec template spec tolerations", "spec template spec containers 0 image"},
        {"\"nodeSelector\":{\"disktype\":\"ssd\"}", "statefulsets", "spec template spec nodeSelector", NULL},
        {"\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
         "[{\"matchExpressions\":[{\"key\":\"disktype\",\"operator\":\"In\",\"values\":[\"ssd\"]}]}]}}}",
         "statefulsets", "spec template spec affinity nodeAffinity", "spec template spec affinity podAntiAffinity"},
        {"\"priorityClassName\":\"redis-high\"", "statefulsets", "spec template spec priorityClassName", NULL},
        {"\"podMetadata\":{\"labels\":{\"team\":\"payments\"}}", "statefulsets",
         "spec template metadata labels team", "spec template metadata labels app.kubernetes.io/instance"},
        {"\"podMetadata\":{\"annotations\":{\"prometheus.io/scrape\":\"true\"}}", "statefulsets",
         "spec template metadata annotations prometheus.io/scrape", NULL},
        {"\"imagePullSecrets\":[{\"name\":\"regcred\"}]", "statefulsets", "spec template spec imagePullSecrets", NULL},
        {"\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"topology.kubernetes.io/zone\","
         "\"whenUnsatisfiable\":\"ScheduleAnyway\"}]",
         "statefulsets", "spec template spec topologySpreadConstraints", NULL},
        {"\"terminationGracePeriodSeconds\":90", "statefulsets", "spec template spec terminationGracePeriodSeconds",
         NULL},
        {"\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"2Gi\",\"ephemeral-storage\":\"1Gi\"}}", "statefulsets",
         "spec template spec containers 0 resources limits ephemeral-storage", NULL},
        {"\"serviceMetadata\":{\"labels\":{\"tier\":\"cache\"}}", "services", "metadata labels tier",
         "metadata labels team"},
        {"\"serviceMetadata\":{\"annotations\":{\"example.com/dns\":\"r.example.com\"}}", "services",
         "metadata annotations example.com/dns", "metadata labels team"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char with[2048];
        snprintf(with, sizeof(with), "{\"size\":3,\"image\":\"redis\",%s}", rows[i].knob);
        char *err = errors_of(with);
        CU_ASSERT_STRING_EQUAL(err, "");
        free(err);
        /* Unchanged: no write to any child. */
        plan_t *p = plan_against(with, with, 0);
        CU_ASSERT_PTR_NULL(action_on(p, "statefulsets"));
        CU_ASSERT_PTR_NULL(action_on(p, "services"));
        plan_destroy(&p);
        /* Removed: a PUT that drops it, with the observed resourceVersion and the new hash. */
        p = plan_against(with, PLAIN, 0);
        const plan_action_t *a = action_on(p, rows[i].resource);
        if (!a || a->kind != PLAN_REPLACE || at(a->body, rows[i].gone))
            fprintf(stderr, "\n  row %zu (%s): not removed\n", i, rows[i].knob);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(a->kind, PLAN_REPLACE);
        CU_ASSERT_STRING_EQUAL(a->method, "PUT");
        CU_ASSERT_PTR_NULL(at(a->body, rows[i].gone));
        if (rows[i].kept)
            CU_ASSERT_PTR_NOT_NULL(at(a->body, rows[i].kept));
        CU_ASSERT_STRING_EQUAL(str_at(a->body, "metadata resourceVersion"), "777");
        CU_ASSERT_PTR_NULL(at(a->body, "metadata managedFields"));
        CU_ASSERT_PTR_NOT_NULL(str_at(a->body, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION));
        /* The other child is not written for it. */
        CU_ASSERT_PTR_NULL(action_on(p, strcmp(rows[i].resource, "services") ? "services" : "statefulsets"));
        plan_destroy(&p);
        /* The same removal on children of an older operator (no hash): as before, no write. */
        p = plan_against(with, PLAIN, 1);
        a = action_on(p, rows[i].resource);
        /* Except where a default comes back in its place (affinity, resources): that is
         * drift, applied as before. */
        int dflt = strstr(rows[i].knob, "\"affinity\"") || strstr(rows[i].knob, "\"resources\"");
        if (dflt) {
            CU_ASSERT_PTR_NOT_NULL_FATAL(a);
            CU_ASSERT_EQUAL(a->kind, PLAN_APPLY);
        } else {
            CU_ASSERT_PTR_NULL(a);
        }
        plan_destroy(&p);
    }
}

static void test_spec_hash_rules(void)
{
    /* Created with the hash; the hash is the same for the same spec and another for another. */
    rendered_t r1, r2;
    render_spec(&r1, PLAIN);
    render_spec(&r2, "{\"size\":3,\"image\":\"redis\",\"nodeSelector\":{\"a\":\"b\"}}");
    const char *h1 = str_at(r1.sts, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION);
    const char *h2 = str_at(r2.sts, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h2);
    CU_ASSERT_EQUAL(strlen(h1), 64);
    CU_ASSERT_STRING_NOT_EQUAL(h1, h2);
    CU_ASSERT_PTR_NOT_NULL(str_at(r1.svc, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION));
    CU_ASSERT_PTR_NULL(str_at(r1.cm, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION));
    rendered_free(&r2);
    /* Same spec again: same hash. */
    render_spec(&r2, PLAIN);
    CU_ASSERT_STRING_EQUAL(h1, str_at(r2.sts, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION));
    rendered_free(&r2);
    rendered_free(&r1);
    /* An older child (no hash), unchanged spec: nothing written. */
    plan_t *p = plan_against(PLAIN, PLAIN, 1);
    CU_ASSERT_PTR_NULL(action_on(p, "statefulsets"));
    CU_ASSERT_PTR_NULL(action_on(p, "services"));
    plan_destroy(&p);
    /* An older child, drift: applied as before, and the apply records the hash. */
    p = plan_against(PLAIN, "{\"size\":3,\"image\":\"redis:7.4\"}", 1);
    const plan_action_t *a = action_on(p, "statefulsets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_APPLY);
    CU_ASSERT_PTR_NOT_NULL(str_at(a->body, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION));
    plan_destroy(&p);
    /* A value change of a knob with the hash present: replaced (the template wholesale). */
    p = plan_against("{\"size\":3,\"image\":\"redis\",\"nodeSelector\":{\"a\":\"b\"}}",
                     "{\"size\":3,\"image\":\"redis\",\"nodeSelector\":{\"c\":\"d\"}}", 0);
    a = action_on(p, "statefulsets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_REPLACE);
    CU_ASSERT_PTR_NULL(at(a->body, "spec template spec nodeSelector a"));
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "spec template spec nodeSelector c"), "d");
    plan_destroy(&p);
}

/* ---- Conversion --------------------------------------------------------------------- */

static void test_knobs_survive_v1alpha1(void)
{
    json_object *v1 = rc_with(EVERY_KNOB);
    json_object *down = V1_ONLY_ROUND_TRIP(
        v1, "spec resources", "spec securityContext", "spec podSecurityContext", "spec affinity", "spec tolerations",
        "spec nodeSelector", "spec topologySpreadConstraints", "spec priorityClassName", "spec imagePullSecrets",
        "spec podMetadata", "spec serviceMetadata", "spec terminationGracePeriodSeconds", "spec podDisruptionBudget",
        "spec storage retention", "spec config extra");
    CU_ASSERT_STRING_EQUAL(str_at(down, "spec storage size"), "1Gi");
    CU_ASSERT_PTR_NOT_NULL(str_at(down, "metadata annotations " CONVERSION_ANNOTATION));
    json_object_put(v1);
    json_object_put(down);
}


/* ---- spec.persistence (render.h PERSISTENCE) ----------------------------------------- */

/* The persistence lines of the redis.conf rendered for spec (the lines from appendonly to
 * the last save, in the order redis.conf has them), and the restart text's hash. */
static void persistence_of(const char *spec, char *lines, size_t len, char hash[65])
{
    /* the rows' spec fields, with the size and image every spec needs */
    json_object *s = parse(spec);
    json_object_object_add(s, "size", json_object_new_int(1));
    json_object_object_add(s, "image", json_object_new_string("redis"));
    json_object *rc = rc_with(json_object_to_json_string(s));
    rdc_spec_t typed;
    render_input_t in = input_of(rc, &typed);
    buf_t conf, restart;
    buf_init(&conf, 0);
    buf_init(&restart, 0);
    CU_ASSERT_EQUAL_FATAL(render_redis_conf(&in, &conf), 0);
    CU_ASSERT_EQUAL_FATAL(render_redis_conf_restart(&in, &restart), 0);
    CU_ASSERT_EQUAL(render_sha256_hex(restart.data, restart.len, hash), 0);
    lines[0] = '\0';
    size_t off = 0;
    for (const char *l = buf_str(&conf); *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) + 1 : strlen(l);
        if (!strncmp(l, "append", 6) || !strncmp(l, "save ", 5))
            off += (size_t)snprintf(lines + off, len - off, "%.*s", (int)n, l);
        l += n;
    }
    buf_free(&conf);
    buf_free(&restart);
    json_object_put(rc);
    json_object_put(s);
}

/* Each mode's redis.conf, what config.extra may tune, and one restart hash for all. */
static void test_persistence_renders_each_mode(void)
{
    static const text_case_t rows[] = {
        {"{}", "appendonly yes\nappendfsync everysec\nsave 900 1\nsave 300 10\nsave 60 10000\n"},
        {"{\"persistence\":\"aof\"}", "appendonly yes\nappendfsync everysec\nsave 900 1\nsave 300 10\nsave 60 10000\n"},
        {"{\"persistence\":\"rdb\"}", "appendonly no\nsave 900 1\nsave 300 10\nsave 60 10000\n"},
        {"{\"persistence\":\"none\"}", "appendonly no\nsave \"\"\n"},
        /* extra's save and appendfsync replace the mode's lines (not added to them:
         * redis.conf's save lines accumulate) */
        {"{\"persistence\":\"aof\",\"config\":{\"extra\":{\"save\":\"3600 1\",\"appendfsync\":\"always\"}}}",
         "appendonly yes\nappendfsync always\nsave 3600 1\n"},
        {"{\"persistence\":\"rdb\",\"config\":{\"extra\":{\"save\":\"60 1\"}}}", "appendonly no\nsave 60 1\n"},
    };
    char first[65] = "";
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char lines[512], hash[65];
        persistence_of(rows[i].in, lines, sizeof(lines), hash);
        if (strcmp(lines, rows[i].want))
            fprintf(stderr, "\n%s: persistence lines\n%s", rows[i].in, lines);
        CU_ASSERT_STRING_EQUAL(lines, rows[i].want);
        /* a change of persistence (or of the run-time directives extra tunes) rolls no pod */
        if (!*first)
            memcpy(first, hash, sizeof(first));
        CU_ASSERT_STRING_EQUAL(hash, first);
    }
}

/* What config.extra may set beside each mode, refused with the owner's reason. */
static void test_persistence_owns_what_it_sets(void)
{
    static const struct {
        const char *persistence, *directive;
        const char *why; /* NULL: allowed */
    } rows[] = {
        {"aof", "appendonly", "set by spec.persistence"},
        {"rdb", "appendonly", "set by spec.persistence"},
        {"none", "appendonly", "set by spec.persistence"},
        {NULL, "appendonly", NULL},
        {"aof", "save", NULL},
        {"rdb", "save", NULL},
        {"none", "save", "spec.persistence is none (no snapshots)"},
        {"aof", "appendfsync", NULL},
        {"rdb", "appendfsync", "applies to the append-only file only"},
        {"none", "appendfsync", "applies to the append-only file only"},
        {"none", "hz", NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char spec[256];
        snprintf(spec, sizeof(spec), "{\"size\":1,\"image\":\"redis\"%s%s%s,\"config\":{\"extra\":{\"%s\":\"1\"}}}",
                 rows[i].persistence ? ",\"persistence\":\"" : "", rows[i].persistence ? rows[i].persistence : "",
                 rows[i].persistence ? "\"" : "", rows[i].directive);
        char *err = errors_of(spec);
        if (!rows[i].why) {
            CU_ASSERT_STRING_EQUAL(err, "");
        } else {
            char field[128];
            snprintf(field, sizeof(field), "spec.config.extra.%s: Forbidden: directive \"%s\" is owned by the operator",
                     rows[i].directive, rows[i].directive);
            ASSERT_TEXT_HAS(err, field, rows[i].why);
        }
        free(err);
    }
}

/* The CRD says the same (the API server refuses them without the webhook). */
static void test_crd_persistence_rules(void)
{
    FILE *f = crd_open();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char line[4096];
    int save = 0, fsync = 0, appendonly = 0;
    while (fgets(line, sizeof(line), f)) {
        save += strstr(line, "self.persistence != 'none'") && strstr(line, "!('save' in self.config.extra)");
        fsync += strstr(line, "self.persistence == 'aof'") && strstr(line, "!('appendfsync' in self.config.extra)");
        appendonly += strstr(line, "!has(self.persistence)") && strstr(line, "!('appendonly' in self.config.extra)");
    }
    fclose(f);
    CU_ASSERT_EQUAL(save, 1);
    CU_ASSERT_EQUAL(fsync, 1);
    CU_ASSERT_EQUAL(appendonly, 1);
}

static const cu_entry_t tests[] = {
    CU_SUITE("knobs"),
    {"every owned directive refused by name", test_every_owned_directive_is_refused_by_name},
    {"extra directive names and values", test_extra_values_and_names},
    {"the CRD's CEL rule lists the same directives", test_crd_lists_the_owned_directives},
    {"an owned directive fails the reconcile, named", test_owned_directive_fails_the_reconcile},
    {"runtime-settable table", test_runtime_table},
    {"persistence: each mode's redis.conf, one restart hash", test_persistence_renders_each_mode},
    {"persistence: what config.extra may tune beside each mode", test_persistence_owns_what_it_sets},
    {"persistence: the CRD's CEL rules", test_crd_persistence_rules},
    {"pod knob rules (table)", test_knob_rules},
    {"render: every default", test_render_defaults},
    {"render: every knob set", test_render_every_knob},
    {"plan: a runtime directive does not roll, others do", test_runtime_change_does_not_roll},
    {"plan: the PDB's drift and ownership", test_pdb_drift_and_ownership},
    {"plan: a removed knob is removed (table)", test_removed_knob_is_removed},
    {"plan: the spec hash, unchanged and older children", test_spec_hash_rules},
    {"conversion: the knobs survive v1alpha1", test_knobs_survive_v1alpha1},
};

CU_MAIN(tests)
