/* test_day2: the day-2 knobs of issue 34 (docs/knobs.md "Day-2"): spec.service on the role
 * Services, spec.serviceMetadata on every Service, the pod extras (imagePullPolicy,
 * serviceAccountName, env, volumes, volumeMounts, initContainers, containers) and
 * spec.networkPolicy.
 *
 *   - rdc_spec's rules, one row a problem, with the message the webhook and workerd give;
 *   - render: each field where it lands (the role Services, the pod template, the
 *     NetworkPolicy);
 *   - plan: a change is drift, repaired (a type change replaced with the clusterIP and the
 *     allocated node ports kept; a field taken out is gone);
 *   - the CRD's CEL rules and bounds for them;
 *   - conversion: every new field survives v1 -> v1alpha1 -> v1.
 */
#include "admission.h"
#include "conversion.h"
#include "crd_file.h"
#include "cu_table.h"
#include "json_at.h"
#include "plan.h"
#include "plan_fixture.h"
#include "rdc_spec.h"
#include "render.h"
#include "spec_errors.h"
#include "spec_rows.h"
#include "text_assert.h"
#include "text_case.h"
#include "v1_only.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T1 INT64_C(1714564800000000000)

/* The body of the first create, apply or replace of resource named name (NULL: any). */
static const plan_action_t *write_of(const plan_t *p, const char *resource, const char *name)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->resource && !strcmp(a->resource, resource) && (!name || (a->name && !strcmp(a->name, name))))
            return a;
    }
    return NULL;
}

static const json_object *body_of(const plan_t *p, const char *resource, const char *name)
{
    const plan_action_t *a = write_of(p, resource, name);
    return a ? a->body : NULL;
}

/* The plan of a first reconcile of spec (nothing observed), or against what more says. */
static plan_t *plan_of(const char *spec, const plan_observed_t *more)
{
    json_object *rc = rc_with(spec);
    plan_t *p = plan_compute_children(rc, &(plan_children_t){NULL, NULL, NULL, NULL}, more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    json_object_put(rc);
    return p;
}

#define REPL "{\"size\":3,\"image\":\"redis\",\"mode\":\"Replication\""

/* ---- rdc_spec's rules (the webhook's and workerd's) ------------------------------------ */

static void test_day2_rules(void)
{
    static const spec_row_t rows[] = {
        /* spec.service */
        {"\"service\":{\"type\":\"NodePort\",\"externalTrafficPolicy\":\"Local\"}", ""},
        {"\"service\":{\"type\":\"LoadBalancer\",\"loadBalancerSourceRanges\":[\"10.0.0.0/8\",\"2001:db8::/32\"],"
         "\"annotations\":{\"service.beta.kubernetes.io/aws-load-balancer-internal\":\"true\"},"
         "\"labels\":{\"expose\":\"yes\"}}",
         ""},
        {"\"service\":{\"type\":\"ClusterIP\"}", ""},
        {"\"service\":{\"type\":\"ExternalName\"}",
         "spec.service.type: Unsupported value: \"ExternalName\": supported values: \"ClusterIP\", "
         "\"LoadBalancer\", \"NodePort\""},
        {"\"service\":{\"externalTrafficPolicy\":\"Local\"}",
         "spec.service.externalTrafficPolicy: Forbidden: may only be set with spec.service.type NodePort or "
         "LoadBalancer"},
        {"\"service\":{\"type\":\"NodePort\",\"externalTrafficPolicy\":\"Nearby\"}",
         "spec.service.externalTrafficPolicy: Unsupported value: \"Nearby\""},
        {"\"service\":{\"type\":\"NodePort\",\"loadBalancerSourceRanges\":[\"10.0.0.0/8\"]}",
         "spec.service.loadBalancerSourceRanges: Forbidden: may only be set with spec.service.type LoadBalancer"},
        {"\"service\":{\"type\":\"LoadBalancer\",\"loadBalancerSourceRanges\":[\"10.0.0.0\"]}",
         "spec.service.loadBalancerSourceRanges[0]: Invalid value: \"10.0.0.0\": must be a CIDR"},
        {"\"service\":{\"type\":\"LoadBalancer\",\"loadBalancerSourceRanges\":[\"10.0.0.0/33\"]}",
         "spec.service.loadBalancerSourceRanges[0]: Invalid value: \"10.0.0.0/33\": must be a CIDR"},
        {"\"service\":{\"type\":\"LoadBalancer\",\"loadBalancerSourceRanges\":[\"300.0.0.0/8\"]}",
         "spec.service.loadBalancerSourceRanges[0]: Invalid value"},
        {"\"service\":{\"labels\":{\"app.kubernetes.io/instance\":\"x\"}}",
         "spec.service.labels[app.kubernetes.io/instance]: Forbidden: app.kubernetes.io/instance is set by the "
         "operator"},
        {"\"service\":{\"annotations\":{\"cache.example.com/spec-hash\":\"x\"}}",
         "spec.service.annotations[cache.example.com/spec-hash]: Forbidden"},
        {"\"service\":\"NodePort\"", "spec.service: Invalid value: \"NodePort\": must be an object"},
        /* the pod extras */
        {"\"imagePullPolicy\":\"Always\",\"serviceAccountName\":\"redis-sa\"", ""},
        {"\"imagePullPolicy\":\"Sometimes\"",
         "spec.imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", "
         "\"Never\""},
        {"\"serviceAccountName\":\"Redis SA\"",
         "spec.serviceAccountName: Invalid value: \"Redis SA\": must be the name of a ServiceAccount"},
        {"\"env\":[{\"name\":\"TZ\",\"value\":\"UTC\"},{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":"
         "{\"fieldPath\":\"spec.nodeName\"}}}]",
         ""},
        {"\"env\":[{\"name\":\"REDIS_PASSWORD\",\"value\":\"x\"}]",
         "spec.env[0].name: Forbidden: REDIS_PASSWORD is set by the operator"},
        {"\"env\":[{\"name\":\"POD_IP\",\"value\":\"x\"}]", "spec.env[0].name: Forbidden: POD_IP is set by"},
        {"\"env\":[{\"name\":\"TZ\",\"value\":\"UTC\"},{\"name\":\"TZ\",\"value\":\"CET\"}]",
         "spec.env[1].name: Invalid value: \"TZ\": must be unique (spec.env[0] has it)"},
        {"\"env\":[{\"name\":\"1TZ\"}]", "spec.env[0].name: Invalid value: \"1TZ\": must be an environment variable"},
        {"\"env\":[{\"value\":\"x\"}]", "spec.env[0].name: Invalid value: null"},
        {"\"env\":[{\"name\":\"A\",\"value\":\"x\",\"valueFrom\":{}}]",
         "spec.env[0].valueFrom: Invalid value: null: may not be set with value"},
        {"\"volumes\":[{\"name\":\"scratch\",\"emptyDir\":{}}],\"volumeMounts\":[{\"name\":\"scratch\","
         "\"mountPath\":\"/scratch\"}]",
         ""},
        {"\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}]",
         "spec.volumes[0].name: Forbidden: \"data\" is the operator's volume"},
        {"\"volumes\":[{\"name\":\"config\",\"emptyDir\":{}}]", "spec.volumes[0].name: Forbidden: \"config\""},
        {"\"volumes\":[{\"name\":\"tls\",\"emptyDir\":{}}]", "spec.volumes[0].name: Forbidden: \"tls\""},
        {"\"volumes\":[{\"name\":\"a\",\"emptyDir\":{}},{\"name\":\"a\",\"emptyDir\":{}}]",
         "spec.volumes[1].name: Invalid value: \"a\": must be unique among the volumes"},
        {"\"volumes\":[{\"name\":\"Big\"}]", "spec.volumes[0].name: Invalid value: \"Big\": must be a DNS-1123 label"},
        {"\"volumeMounts\":[{\"name\":\"nope\",\"mountPath\":\"/x\"}]",
         "spec.volumeMounts[0].name: Invalid value: \"nope\": must name a volume of spec.volumes"},
        {"\"volumes\":[{\"name\":\"s\",\"emptyDir\":{}}],\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":\"/data\"}]",
         "spec.volumeMounts[0].mountPath: Forbidden: /data is (or is below) a path the operator mounts"},
        {"\"volumes\":[{\"name\":\"s\",\"emptyDir\":{}}],\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":"
         "\"/etc/redis/x\"}]",
         "spec.volumeMounts[0].mountPath: Forbidden: /etc/redis/x is (or is below)"},
        {"\"volumes\":[{\"name\":\"s\",\"emptyDir\":{}}],\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":"
         "\"/etc/redis-extra\"}]",
         ""},
        {"\"volumes\":[{\"name\":\"s\",\"emptyDir\":{}}],\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":\"rel\"}]",
         "spec.volumeMounts[0].mountPath: Invalid value: \"rel\": must be an absolute path"},
        {"\"volumes\":[{\"name\":\"s\",\"emptyDir\":{}}],\"volumeMounts\":[{\"name\":\"s\"}]",
         "spec.volumeMounts[0].mountPath: Required value"},
        {"\"containers\":[{\"name\":\"exporter\",\"image\":\"oliver006/redis_exporter:v1.62.0\"}],"
         "\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox\",\"command\":[\"true\"]}]",
         ""},
        {"\"containers\":[{\"name\":\"redis\",\"image\":\"x\"}]",
         "spec.containers[0].name: Forbidden: \"redis\" is the operator's container"},
        {"\"initContainers\":[{\"name\":\"redis\",\"image\":\"x\"}]",
         "spec.initContainers[0].name: Forbidden: \"redis\" is the operator's container"},
        {"\"initContainers\":[{\"name\":\"a\",\"image\":\"x\"}],\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]",
         "spec.containers[0].name: Invalid value: \"a\": must be unique among the containers"},
        {"\"containers\":[{\"name\":\"a\"}]", "spec.containers[0].image: Required value"},
        {"\"containers\":[{\"name\":\"a\",\"image\":\"has blank\"}]",
         "spec.containers[0].image: Invalid value: null: must be an image reference"},
        {"\"containers\":[{\"image\":\"x\"}]", "spec.containers[0].name: Invalid value: null: must be a DNS-1123"},
        {"\"containers\":{}", "spec.containers: Invalid value: {}: must be an array"},
        /* spec.networkPolicy */
        {"\"networkPolicy\":{\"enabled\":true,\"allowedPeers\":[{\"namespaceSelector\":{\"matchLabels\":"
         "{\"team\":\"a\"}}},{\"podSelector\":{}}]}",
         ""},
        {"\"networkPolicy\":{\"enabled\":\"yes\"}", "spec.networkPolicy.enabled: Invalid value: \"yes\""},
        {"\"networkPolicy\":{\"enabled\":true,\"allowedPeers\":[{}]}",
         "spec.networkPolicy.allowedPeers[0]: Required value: a namespaceSelector, a podSelector or both"},
        {"\"networkPolicy\":{\"allowedPeers\":[{\"podSelector\":[]}]}",
         "spec.networkPolicy.allowedPeers[0].podSelector: Invalid value: []: must be an object"},
    };
    check_spec_rows(REPL, rows, sizeof(rows) / sizeof(rows[0]));
}

/* A role Service type outside Replication: no role Service to put it on, refused. */
static void test_service_type_needs_replication(void)
{
    char *err =
        errors_of("{\"size\":1,\"image\":\"redis\",\"mode\":\"Standalone\",\"service\":{\"type\":\"NodePort\"}}");
    ASSERT_TEXT_HAS(err, "spec.service.type: Forbidden: NodePort applies to the role Services <name>-primary and "
                         "<name>-replicas, which only spec.mode Replication has");
    free(err);
    err = errors_of("{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\",\"service\":{\"type\":\"LoadBalancer\"}}");
    ASSERT_TEXT_HAS(err, "spec.service.type: Forbidden: LoadBalancer applies to the role Services");
    free(err);
    /* ClusterIP, metadata: fine anywhere (there is simply nothing to put them on). */
    err = errors_of("{\"size\":1,\"image\":\"redis\",\"service\":{\"type\":\"ClusterIP\",\"labels\":{\"a\":\"b\"}}}");
    CU_ASSERT_STRING_EQUAL(err, "");
    free(err);
    /* Bounds: more source ranges, env vars, volumes, containers, peers than allowed. */
    static const struct {
        const char *key, *item, *want;
        int n;
    } over[] = {
        {"env", "{\"name\":\"V%d\",\"value\":\"x\"}", "spec.env: Invalid value: null: must have at most 64 items",
         RDC_SPEC_ENV_MAX + 1},
        {"volumes", "{\"name\":\"v%d\",\"emptyDir\":{}}", "spec.volumes: Invalid value: null: must have at most 16",
         RDC_SPEC_VOLUMES_MAX + 1},
        {"containers", "{\"name\":\"c%d\",\"image\":\"x\"}",
         "spec.containers: Invalid value: null: must have at most 8",
         RDC_SPEC_CONTAINERS_MAX + 1},
    };
    for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
        buf_t b;
        buf_init(&b, 0);
        buf_printf(&b, REPL ",\"%s\":[", over[i].key);
        for (int k = 0; k < over[i].n; k++) {
            buf_puts(&b, k ? "," : "");
            buf_printf(&b, over[i].item, k);
        }
        buf_puts(&b, "]}");
        err = errors_of(buf_str(&b));
        ASSERT_TEXT_HAS(err, over[i].want);
        free(err);
        buf_free(&b);
    }
}

/* The admission webhook refuses them as rdc_spec does: 422 (Invalid) with the field errors,
 * 403 when every one is Forbidden. */
static void test_webhook_refuses(void)
{
#define REPL_WITH(fields) REPL "," fields "}"
    static const review_row_t rows[] = {
        {"CREATE", NULL, REPL_WITH("\"service\":{\"externalTrafficPolicy\":\"Local\"}"),
         "spec.service.externalTrafficPolicy: Forbidden: may only be set with spec.service.type NodePort or "
         "LoadBalancer",
         403},
        {"CREATE", NULL,
         REPL_WITH("\"service\":{\"type\":\"LoadBalancer\",\"loadBalancerSourceRanges\":[\"nowhere\"]}"),
         "spec.service.loadBalancerSourceRanges[0]: Invalid value: \"nowhere\": must be a CIDR", 422},
        {"CREATE", NULL, REPL_WITH("\"containers\":[{\"name\":\"redis\",\"image\":\"busybox\"}]"),
         "spec.containers[0].name: Forbidden: \"redis\" is the operator's container", 403},
        {"CREATE", NULL, REPL_WITH("\"volumes\":[{\"name\":\"config\",\"emptyDir\":{}}]"),
         "spec.volumes[0].name: Forbidden: \"config\" is the operator's volume", 403},
        {"CREATE", NULL, REPL_WITH("\"env\":[{\"name\":\"REDISCLI_AUTH\",\"value\":\"x\"}]"),
         "spec.env[0].name: Forbidden: REDISCLI_AUTH is set by the operator", 403},
        {"CREATE", NULL, REPL_WITH("\"networkPolicy\":{\"enabled\":true,\"allowedPeers\":[{}]}"),
         "spec.networkPolicy.allowedPeers[0]: Required value: a namespaceSelector, a podSelector or both", 422},
    };
#undef REPL_WITH
    check_review_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

/* ---- render ----------------------------------------------------------------------------- */

#define EVERY_DAY2                                                                                                   \
    REPL ",\"serviceMetadata\":{\"labels\":{\"tier\":\"cache\"},"                                                     \
    "\"annotations\":{\"example.com/dns\":\"r.example\"}},"                                                         \
    "\"service\":{\"type\":\"LoadBalancer\",\"externalTrafficPolicy\":\"Local\","                                     \
    "\"loadBalancerSourceRanges\":[\"203.0.113.0/24\"],\"labels\":{\"expose\":\"public\"},"                          \
    "\"annotations\":{\"example.com/lb\":\"internal\",\"example.com/dns\":\"primary.example\"}},"                    \
    "\"imagePullPolicy\":\"IfNotPresent\",\"serviceAccountName\":\"redis-sa\","                                       \
    "\"env\":[{\"name\":\"TZ\",\"value\":\"UTC\"}],"                                                                  \
    "\"volumes\":[{\"name\":\"scratch\",\"emptyDir\":{}}],"                                                           \
    "\"volumeMounts\":[{\"name\":\"scratch\",\"mountPath\":\"/scratch\"}],"                                           \
    "\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox\",\"command\":[\"true\"]}],"                          \
    "\"containers\":[{\"name\":\"exporter\",\"image\":\"oliver006/redis_exporter\"}],"                                \
    "\"networkPolicy\":{\"enabled\":true,\"allowedPeers\":[{\"namespaceSelector\":{\"matchLabels\":"                  \
    "{\"team\":\"web\"}},\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]}}"

static void test_render_services(void)
{
    char *err = errors_of(EVERY_DAY2);
    CU_ASSERT_STRING_EQUAL(err, "");
    free(err);
    plan_t *p = plan_of(EVERY_DAY2, NULL);
    const json_object *primary = body_of(p, "services", "cache-primary");
    const json_object *replicas = body_of(p, "services", "cache-replicas");
    const json_object *headless = body_of(p, "services", "cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(primary);
    CU_ASSERT_PTR_NOT_NULL_FATAL(replicas);
    CU_ASSERT_PTR_NOT_NULL_FATAL(headless);
    const json_object *role[] = {primary, replicas};
    for (int i = 0; i < 2; i++) {
        ASSERT_STRS_AT(role[i], {"spec type", "LoadBalancer"}, {"spec externalTrafficPolicy", "Local"},
                       {"spec loadBalancerSourceRanges 0", "203.0.113.0/24"}, {"metadata labels expose", "public"},
                       {"metadata labels tier", "cache"}, {"metadata annotations example.com/lb", "internal"},
                       /* spec.service's wins over serviceMetadata's */
                       {"metadata annotations example.com/dns", "primary.example"},
                       {"metadata labels app.kubernetes.io/managed-by", "rediscluster-operator"});
        CU_ASSERT_PTR_NULL(at(role[i], "spec clusterIP"));
        CU_ASSERT_PTR_NULL(at(role[i], "spec ports 0 nodePort"));
        CU_ASSERT_PTR_NOT_NULL(str_at(role[i], "metadata annotations " PLAN_SPEC_HASH_ANNOTATION));
    }
    /* The headless Service: serviceMetadata only, never a type of spec.service. */
    ASSERT_STRS_AT(headless, {"spec clusterIP", "None"}, {"metadata labels tier", "cache"},
                   {"metadata annotations example.com/dns", "r.example"}, {"metadata labels expose", NULL},
                   {"spec type", NULL}, {"spec externalTrafficPolicy", NULL});
    plan_destroy(&p);
    /* NodePort: the traffic policy always said (Cluster by default); no source ranges. */
    p = plan_of(REPL ",\"service\":{\"type\":\"NodePort\"}}", NULL);
    primary = body_of(p, "services", "cache-primary");
    CU_ASSERT_PTR_NOT_NULL_FATAL(primary);
    ASSERT_STRS_AT(primary, {"spec type", "NodePort"}, {"spec externalTrafficPolicy", "Cluster"});
    CU_ASSERT_PTR_NULL(at(primary, "spec loadBalancerSourceRanges"));
    plan_destroy(&p);
    /* Default: ClusterIP, nothing else. */
    p = plan_of(REPL "}", NULL);
    primary = body_of(p, "services", "cache-primary");
    CU_ASSERT_PTR_NOT_NULL_FATAL(primary);
    ASSERT_STRS_AT(primary, {"spec type", "ClusterIP"}, {"spec externalTrafficPolicy", NULL});
    plan_destroy(&p);
}

static void test_render_pod_extras(void)
{
    plan_t *p = plan_of(EVERY_DAY2, NULL);
    const json_object *sts = body_of(p, "statefulsets", "cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
    const json_object *pod = at(sts, "spec template spec");
    ASSERT_STRS_AT(pod, {"serviceAccountName", "redis-sa"}, {"containers 0 name", "redis"},
                   {"containers 0 imagePullPolicy", "IfNotPresent"}, {"containers 1 name", "exporter"},
                   {"containers 1 image", "oliver006/redis_exporter"}, {"initContainers 0 name", "init"},
                   {"initContainers 0 command 0", "true"});
    CU_ASSERT_EQUAL(json_object_array_length(at(pod, "containers")), 2);
    /* The user's env after the operator's (REDIS_PASSWORD, POD_IP, ... come first). */
    const json_object *env = at(pod, "containers 0 env");
    CU_ASSERT_PTR_NOT_NULL_FATAL(env);
    size_t n = json_object_array_length(env);
    CU_ASSERT_STRING_EQUAL(str_at(env, "0 name"), RENDER_POD_IP_ENV);
    const json_object *last = json_object_array_get_idx(env, n - 1);
    ASSERT_STRS_AT(last, {"name", "TZ"}, {"value", "UTC"});
    /* Volumes and mounts: ours first, the user's after. */
    const json_object *vols = at(pod, "volumes"), *mounts = at(pod, "containers 0 volumeMounts");
    CU_ASSERT_STRING_EQUAL(str_at(vols, "0 name"), "config");
    CU_ASSERT_STRING_EQUAL(str_at(json_object_array_get_idx(vols, json_object_array_length(vols) - 1), "name"),
                           "scratch");
    CU_ASSERT_STRING_EQUAL(str_at(mounts, "0 name"), "data");
    ASSERT_STRS_AT(json_object_array_get_idx(mounts, json_object_array_length(mounts) - 1), {"name", "scratch"},
                   {"mountPath", "/scratch"});
    /* The sidecar runs as given (not the redis container's command or mounts). */
    CU_ASSERT_PTR_NULL(at(pod, "containers 1 volumeMounts"));
    CU_ASSERT_PTR_NULL(at(pod, "containers 1 env"));
    plan_destroy(&p);
    /* Unset: none of it. */
    p = plan_of(REPL "}", NULL);
    pod = at(body_of(p, "statefulsets", "cache"), "spec template spec");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pod);
    static const char *const absent[] = {"serviceAccountName", "initContainers", "containers 1",
                                         "containers 0 imagePullPolicy"};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        CU_ASSERT_PTR_NULL(at(pod, absent[i]));
    plan_destroy(&p);
}

/* ---- plan: drift and removal ------------------------------------------------------------ */

/* The role Service <cache-primary> as the API server shows what a first reconcile of spec
 * created (a clusterIP, node ports allocated for NodePort/LoadBalancer, a resourceVersion);
 * the caller puts it. */
/* What the first reconcile of spec created of resource/name, with a resourceVersion, as
 * the API server shows it; the caller puts it. */
static json_object *observed_of(const char *spec, const char *resource, const char *name, const char *rv)
{
    plan_t *p = plan_of(spec, NULL);
    json_object *o = NULL;
    CU_ASSERT_EQUAL_FATAL(json_object_deep_copy((json_object *)body_of(p, resource, name), &o, NULL), 0);
    plan_destroy(&p);
    json_object_object_add(at(o, "metadata"), "resourceVersion", json_object_new_string(rv));
    return o;
}

static json_object *observed_primary(const char *spec, int strip_hash)
{
    json_object *o = observed_of(spec, "services", "cache-primary", "777");
    json_object_object_add(at(o, "spec"), "clusterIP", json_object_new_string("10.96.0.42"));
    const char *type = str_at(o, "spec type");
    if (strcmp(type, "ClusterIP"))
        json_object_object_add(at(o, "spec ports 0"), "nodePort", json_object_new_int(31234));
    if (!strcmp(type, "LoadBalancer"))
        json_object_object_add(at(o, "spec"), "allocateLoadBalancerNodePorts", json_object_new_boolean(1));
    if (strip_hash)
        json_object_object_del(at(o, "metadata annotations"), PLAN_SPEC_HASH_ANNOTATION);
    return o;
}

static const plan_action_t *primary_write(const char *old_spec, const char *new_spec, int strip_hash, plan_t **p)
{
    json_object *obs = observed_primary(old_spec, strip_hash);
    plan_observed_t more = {.primary_service = obs};
    *p = plan_of(new_spec, &more);
    json_object_put(obs);
    return write_of(*p, "services", "cache-primary");
}

static void test_service_drift(void)
{
    static const struct {
        const char *from, *to; /* spec.service before and after (members of REPL) */
        const char *path, *want; /* in the written body; want NULL: absent */
    } rows[] = {
        {"", "\"service\":{\"type\":\"NodePort\"}", "spec type", "NodePort"},
        {"\"service\":{\"type\":\"NodePort\"}", "\"service\":{\"type\":\"LoadBalancer\"}", "spec type", "LoadBalancer"},
        {"\"service\":{\"type\":\"NodePort\"}", "", "spec type", "ClusterIP"},
        {"\"service\":{\"type\":\"NodePort\",\"externalTrafficPolicy\":\"Local\"}",
         "\"service\":{\"type\":\"NodePort\"}",
         "spec externalTrafficPolicy", "Cluster"},
        {"\"service\":{\"type\":\"LoadBalancer\",\"loadBalancerSourceRanges\":[\"10.0.0.0/8\"]}",
         "\"service\":{\"type\":\"LoadBalancer\"}", "spec loadBalancerSourceRanges", NULL},
        {"\"service\":{\"annotations\":{\"example.com/lb\":\"x\"}}", "", "metadata annotations example.com/lb", NULL},
        {"\"service\":{\"labels\":{\"expose\":\"yes\"}}", "\"service\":{\"labels\":{\"expose\":\"no\"}}",
         "metadata labels expose", "no"},
        {"", "\"serviceMetadata\":{\"annotations\":{\"example.com/dns\":\"r\"}}",
         "metadata annotations example.com/dns",
         "r"},
        {"\"serviceMetadata\":{\"labels\":{\"tier\":\"cache\"}}", "", "metadata labels tier", NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char from[1024], to[1024];
        snprintf(from, sizeof(from), REPL "%s%s}", *rows[i].from ? "," : "", rows[i].from);
        snprintf(to, sizeof(to), REPL "%s%s}", *rows[i].to ? "," : "", rows[i].to);
        /* Unchanged: nothing written. */
        plan_t *p = NULL;
        CU_ASSERT_PTR_NULL(primary_write(from, from, 0, &p));
        plan_destroy(&p);
        const plan_action_t *a = primary_write(from, to, 0, &p);
        if (!a)
            fprintf(stderr, "\n  row %zu: no write\n", i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        /* A changed spec: replaced (PUT), the clusterIP and the resourceVersion kept. */
        CU_ASSERT_EQUAL(a->kind, PLAN_REPLACE);
        CU_ASSERT_STRING_EQUAL(str_at(a->body, rows[i].path) ? str_at(a->body, rows[i].path) : "(none)",
                               rows[i].want ? rows[i].want : "(none)");
        ASSERT_STRS_AT(a->body, {"spec clusterIP", "10.96.0.42"}, {"metadata resourceVersion", "777"});
        /* A node port the API server allocated is kept while the type needs one. */
        const char *type = str_at(a->body, "spec type");
        if (strcmp(type, "ClusterIP") && strstr(from, "\"type\""))
            CU_ASSERT_EQUAL(int_at(a->body, "spec ports 0 nodePort"), 31234);
        if (!strcmp(type, "ClusterIP"))
            CU_ASSERT_PTR_NULL(at(a->body, "spec ports 0 nodePort"));
        /* what the API server added for a LoadBalancer goes with it */
        if (strcmp(type, "LoadBalancer"))
            CU_ASSERT_PTR_NULL(at(a->body, "spec allocateLoadBalancerNodePorts"));
        plan_destroy(&p);
    }
}

/* Drift by hand (the hash unchanged): applied back; an older Service (no hash) unchanged:
 * no write, changed: applied with the hash. */
static void test_service_drift_by_hand(void)
{
    const char *spec = REPL ",\"service\":{\"type\":\"NodePort\",\"annotations\":{\"example.com/lb\":\"x\"}}}";
    json_object *obs = observed_primary(spec, 0);
    json_object_object_add(at(obs, "spec"), "type", json_object_new_string("ClusterIP"));
    json_object_object_add(at(obs, "metadata annotations"), "example.com/lb", json_object_new_string("edited"));
    plan_observed_t more = {.primary_service = obs};
    plan_t *p = plan_of(spec, &more);
    const plan_action_t *a = write_of(p, "services", "cache-primary");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_APPLY);
    ASSERT_STRS_AT(a->body, {"spec type", "NodePort"}, {"metadata annotations example.com/lb", "x"});
    plan_destroy(&p);
    json_object_put(obs);
    /* An operator before this one: no hash; unchanged spec, no write. */
    plan_t *q = NULL;
    CU_ASSERT_PTR_NULL(primary_write(REPL "}", REPL "}", 1, &q));
    plan_destroy(&q);
    a = primary_write(REPL "}", REPL ",\"service\":{\"type\":\"NodePort\"}}", 1, &q);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_APPLY);
    CU_ASSERT_PTR_NOT_NULL(str_at(a->body, "metadata annotations " PLAN_SPEC_HASH_ANNOTATION));
    plan_destroy(&q);
}

/* A pod extra added, changed or taken out changes the StatefulSet's template: replaced. */
static void test_pod_extras_drift(void)
{
    /* in: the knob's fields; want: the path of the StatefulSet it is at, gone when taken out */
    static const text_case_t rows[] = {
        {"\"imagePullPolicy\":\"Always\"", "spec template spec containers 0 imagePullPolicy"},
        {"\"serviceAccountName\":\"redis-sa\"", "spec template spec serviceAccountName"},
        {"\"env\":[{\"name\":\"TZ\",\"value\":\"UTC\"}]", "spec template spec containers 0 env 1"},
        {"\"volumes\":[{\"name\":\"s\",\"emptyDir\":{}}]", "spec template spec volumes 1"},
        {"\"initContainers\":[{\"name\":\"i\",\"image\":\"busybox\"}]", "spec template spec initContainers"},
        {"\"containers\":[{\"name\":\"side\",\"image\":\"redis\",\"command\":[\"sleep\",\"infinity\"]}]",
         "spec template spec containers 1"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char with[1024];
        snprintf(with, sizeof(with), REPL ",%s}", rows[i].in);
        plan_t *p = plan_of(with, NULL);
        json_object *sts = NULL;
        CU_ASSERT_EQUAL_FATAL(json_object_deep_copy((json_object *)body_of(p, "statefulsets", "cache"), &sts, NULL), 0);
        plan_destroy(&p);
        json_object_object_add(at(sts, "metadata"), "resourceVersion", json_object_new_string("9"));
        json_object *rc = rc_with(with);
        /* unchanged: no write */
        p = plan_compute_children(rc, &(plan_children_t){NULL, NULL, sts, NULL}, NULL, T1);
        CU_ASSERT_PTR_NULL(write_of(p, "statefulsets", NULL));
        plan_destroy(&p);
        json_object_put(rc);
        /* taken out: replaced without it */
        rc = rc_with(REPL "}");
        p = plan_compute_children(rc, &(plan_children_t){NULL, NULL, sts, NULL}, NULL, T1);
        const plan_action_t *a = write_of(p, "statefulsets", NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(a->kind, PLAN_REPLACE);
        if (at(a->body, rows[i].want))
            fprintf(stderr, "\n  row %zu: %s still there\n", i, rows[i].want);
        CU_ASSERT_PTR_NULL(at(a->body, rows[i].want));
        plan_destroy(&p);
        json_object_put(rc);
        json_object_put(sts);
    }
}

/* ---- spec.networkPolicy ----------------------------------------------------------------- */

/* The ports (as "6379,6380") and the number of peers of ingress rule i of np. */
static void rule_of(const json_object *np, int i, char *ports, size_t len, size_t *peers)
{
    char path[64];
    snprintf(path, sizeof(path), "spec ingress %d", i);
    const json_object *r = at(np, path);
    ports[0] = '\0';
    *peers = 0;
    if (!r)
        return;
    size_t off = 0;
    for (size_t k = 0; k < json_object_array_length(at(r, "ports")); k++) {
        const json_object *p = json_object_array_get_idx(at(r, "ports"), k);
        off += (size_t)snprintf(ports + off, len - off, "%s%lld", k ? "," : "", (long long)int_at(p, "port"));
    }
    *peers = json_object_array_length(at(r, "from"));
}

static void test_render_network_policy(void)
{
    static const struct {
        const char *spec;
        const char *ports0, *ports1; /* the rules' ports; ports1 "" = no second rule */
        size_t peers0;
    } rows[] = {
        {REPL ",\"networkPolicy\":{\"enabled\":true}}", "6379", "", 3},
        {REPL ",\"networkPolicy\":{\"enabled\":true,\"allowedPeers\":[{\"podSelector\":{\"matchLabels\":{\"app\":"
              "\"web\"}}},{\"namespaceSelector\":{}}]}}",
         "6379", "", 5},
        {REPL ",\"tls\":{\"secretRef\":{\"name\":\"cache-tls\"},\"allowPlaintext\":true},"
              "\"networkPolicy\":{\"enabled\":true}}",
         "6379,6380", "", 3},
        {"{\"size\":6,\"image\":\"redis\",\"mode\":\"Cluster\",\"networkPolicy\":{\"enabled\":true}}", "6379",
         "16379", 3},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        plan_t *p = plan_of(rows[i].spec, NULL);
        const plan_action_t *a = write_of(p, "networkpolicies", "cache");
        if (!a)
            fprintf(stderr, "\n  row %zu: no NetworkPolicy (%s)\n", i, plan_error(p) ? plan_error(p) : "");
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(a->kind, PLAN_CREATE);
        const json_object *np = a->body;
        ASSERT_STRS_AT(np, {"apiVersion", "networking.k8s.io/v1"}, {"kind", "NetworkPolicy"},
                       {"metadata name", "cache"}, {"metadata ownerReferences 0 uid", "uid-1"},
                       {"metadata labels app.kubernetes.io/managed-by", "rediscluster-operator"},
                       {"spec podSelector matchLabels app.kubernetes.io/instance", "cache"},
                       {"spec policyTypes 0", "Ingress"},
                       /* the cluster's own pods, then the operator's */
                       {"spec ingress 0 from 0 podSelector matchLabels app.kubernetes.io/instance", "cache"},
                       {"spec ingress 0 from 1 podSelector matchLabels app.kubernetes.io/name",
                        "rediscluster-operator"},
                       {"spec ingress 0 from 1 namespaceSelector matchLabels kubernetes.io/metadata.name",
                        RENDER_OPERATOR_NAMESPACE},
                       /* and the cluster's backup pods (BACKUP) */
                       {"spec ingress 0 from 2 podSelector matchLabels " RENDER_LABEL_BACKUP_CLUSTER, "cache"});
        CU_ASSERT_PTR_NULL(at(np, "spec ingress 0 from 2 namespaceSelector"));
        CU_ASSERT_PTR_NULL(at(np, "spec podSelector matchLabels " RENDER_LABEL_SHARD));
        char ports[64];
        size_t peers = 0;
        rule_of(np, 0, ports, sizeof(ports), &peers);
        CU_ASSERT_STRING_EQUAL(ports, rows[i].ports0);
        CU_ASSERT_EQUAL(peers, rows[i].peers0);
        rule_of(np, 1, ports, sizeof(ports), &peers);
        CU_ASSERT_STRING_EQUAL(ports, rows[i].ports1);
        if (*rows[i].ports1) /* the bus: the cluster's own pods only */
            CU_ASSERT_EQUAL(peers, 1);
        plan_destroy(&p);
    }
    /* The user's peers as given, after ours. */
    plan_t *p = plan_of(EVERY_DAY2, NULL);
    const json_object *np = body_of(p, "networkpolicies", "cache");
    ASSERT_STRS_AT(np, {"spec ingress 0 from 3 namespaceSelector matchLabels team", "web"},
                   {"spec ingress 0 from 3 podSelector matchLabels app", "web"});
    plan_destroy(&p);
    /* The operator's namespace when workerd knows it (in a pod). */
    plan_observed_t more = {.operator_namespace = "ops"};
    p = plan_of(REPL ",\"networkPolicy\":{\"enabled\":true}}", &more);
    ASSERT_STRS_AT(body_of(p, "networkpolicies", "cache"),
                   {"spec ingress 0 from 1 namespaceSelector matchLabels kubernetes.io/metadata.name", "ops"});
    plan_destroy(&p);
    /* Not enabled: none. */
    p = plan_of(REPL ",\"networkPolicy\":{\"allowedPeers\":[{\"podSelector\":{}}]}}", NULL);
    CU_ASSERT_PTR_NULL(write_of(p, "networkpolicies", NULL));
    plan_destroy(&p);
}

/* The NetworkPolicy observed as the first reconcile of spec created it. */
static json_object *observed_np(const char *spec)
{
    json_object *o = observed_of(spec, "networkpolicies", "cache", "5");
    json_object_object_add(at(o, "metadata"), "uid", json_object_new_string("np-uid"));
    return o;
}

static void test_network_policy_lifecycle(void)
{
    const char *on = REPL ",\"networkPolicy\":{\"enabled\":true,\"allowedPeers\":[{\"podSelector\":{}}]}}";
    json_object *obs = observed_np(on);
    plan_observed_t more = {.network_policy = obs};
    /* Unchanged: nothing. */
    plan_t *p = plan_of(on, &more);
    CU_ASSERT_PTR_NULL(write_of(p, "networkpolicies", NULL));
    plan_destroy(&p);
    /* A peer more: applied. */
    p = plan_of(REPL ",\"networkPolicy\":{\"enabled\":true,\"allowedPeers\":[{\"podSelector\":{}},"
                     "{\"namespaceSelector\":{\"matchLabels\":{\"t\":\"a\"}}}]}}",
                &more);
    const plan_action_t *a = write_of(p, "networkpolicies", "cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_APPLY);
    CU_ASSERT_EQUAL(json_object_array_length(at(a->body, "spec ingress 0 from")), 5);
    plan_destroy(&p);
    /* A peer fewer: applied (the rule's list is the rendered one). */
    p = plan_of(REPL ",\"networkPolicy\":{\"enabled\":true}}", &more);
    a = write_of(p, "networkpolicies", "cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_APPLY);
    CU_ASSERT_EQUAL(json_object_array_length(at(a->body, "spec ingress 0 from")), 3);
    plan_destroy(&p);
    /* Edited by hand (a port taken out): applied back. */
    json_object_object_add(at(obs, "spec ingress 0"), "ports", json_object_new_array());
    p = plan_of(on, &more);
    a = write_of(p, "networkpolicies", "cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(int_at(a->body, "spec ingress 0 ports 0 port"), RENDER_REDIS_PORT);
    plan_destroy(&p);
    /* Disabled: deleted, with its uid as precondition. */
    p = plan_of(REPL ",\"networkPolicy\":{\"enabled\":false}}", &more);
    a = write_of(p, "networkpolicies", "cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_DELETE);
    CU_ASSERT_STRING_EQUAL(a->method, "DELETE");
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "preconditions uid"), "np-uid");
    plan_destroy(&p);
    p = plan_of(REPL "}", &more); /* the field gone altogether: the same */
    a = write_of(p, "networkpolicies", "cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_DELETE);
    plan_destroy(&p);
    /* Not ours: never written nor deleted; OwnerConflict while enabled. */
    json_object_object_del(at(obs, "metadata"), "ownerReferences");
    p = plan_of(REPL "}", &more);
    CU_ASSERT_PTR_NULL(write_of(p, "networkpolicies", NULL));
    plan_destroy(&p);
    p = plan_of(on, &more);
    CU_ASSERT_PTR_NULL(write_of(p, "networkpolicies", NULL));
    ASSERT_TEXT_HAS(json_object_to_json_string_ext(plan_status(p), JSON_C_TO_STRING_NOSLASHESCAPE), "OwnerConflict",
                    "NetworkPolicy default/cache exists and was not created by this RedisCluster");
    plan_destroy(&p);
    json_object_put(obs);
}

/* ---- the CRD: CEL rules and bounds ------------------------------------------------------ */

/* The CRD's text (the caller frees), run from the repository's top (or RDC_TOP). */
static char *crd_text(void)
{
    FILE *f = crd_open();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    buf_t b;
    buf_init(&b, 0);
    char line[4096];
    while (fgets(line, sizeof(line), f))
        buf_puts(&b, line);
    fclose(f);
    return buf_detach(&b);
}

/* The API server refuses what the webhook refuses, without the webhook: the rules are in
 * the CRD (their texts here, as the CEL test of the persistence rules reads them). */
static void test_crd_day2_rules(void)
{
    char *crd = crd_text();
    static const char *const rules[] = {
        "!has(self.externalTrafficPolicy) || (has(self.type) && self.type != 'ClusterIP')",
        "!has(self.loadBalancerSourceRanges) || size(self.loadBalancerSourceRanges) == 0 || (has(self.type) && "
        "self.type == 'LoadBalancer')",
        "rule: isCIDR(self)",
        "self.service.type == 'ClusterIP' || (has(self.mode) && self.mode == 'Replication')",
        "self.all(e, !(e.name in ['REDIS_PASSWORD', 'REDISCLI_AUTH', 'POD_IP', 'REDIS_TLS_DIR']))",
        "self.all(v, !(v.name in ['data', 'config', 'tls', 'acl']))",
        "self.all(c, c.name != 'redis')",
        "self.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name))",
        "self.containers.all(c, !self.initContainers.exists(i, i.name == c.name))",
        "['/data', '/etc/redis', '/etc/redis-tls', '/etc/redis-acl'].exists(p, m.mountPath == p || "
        "m.mountPath.startsWith(p + '/'))",
        "has(self.namespaceSelector) || has(self.podSelector)",
        "!(has(self.value) && has(self.valueFrom))",
    };
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        if (!strstr(crd, rules[i]))
            fprintf(stderr, "\n  CRD lacks the rule %s\n", rules[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(crd, rules[i]));
    }
    /* Names unique by the schema itself: list-type map keyed by name. */
    const char *from = strstr(crd, "# DAY-2 (issue 34): the role Services");
    CU_ASSERT_PTR_NOT_NULL_FATAL(from);
    const char *to = strstr(from, "terminationGracePeriodSeconds:");
    CU_ASSERT_PTR_NOT_NULL_FATAL(to);
    int maps = 0, strings = 0, arrays = 0;
    /* Every string has a maxLength and every array a maxItems (the file's invariant), each
     * within the next lines of its type. */
    for (const char *l = from; l && l < to; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *t = l + strspn(l, " ");
        int is_str = !strncmp(t, "type: string\n", 13), is_arr = !strncmp(t, "type: array\n", 12);
        maps += !strncmp(t, "x-kubernetes-list-type: map\n", 28);
        if (!is_str && !is_arr)
            continue;
        strings += is_str;
        arrays += is_arr;
        const char *end = l;
        for (int k = 0; k < 5 && end; k++)
            end = strchr(end + 1, '\n');
        char window[1024];
        snprintf(window, sizeof(window), "%.*s", end ? (int)(end - l) : 200, l);
        const char *want = is_str ? "maxLength:" : "maxItems:";
        if (!strstr(window, want))
            fprintf(stderr, "\n  no %s near:\n%s\n", want, window);
        CU_ASSERT_PTR_NOT_NULL(strstr(window, want));
    }
    CU_ASSERT_EQUAL(maps, 4); /* env, volumes, initContainers, containers */
    CU_ASSERT(strings >= 15);
    CU_ASSERT(arrays >= 7);
    /* The bounds are rdc_spec's. */
    char want[64];
    static const struct {
        const char *key;
        int max;
    } bounds[] = {{"env", RDC_SPEC_ENV_MAX}, {"volumes", RDC_SPEC_VOLUMES_MAX}, {"volumeMounts", RDC_SPEC_VOLUMES_MAX},
                  {"initContainers", RDC_SPEC_CONTAINERS_MAX}, {"containers", RDC_SPEC_CONTAINERS_MAX},
                  {"loadBalancerSourceRanges", RDC_SPEC_SOURCE_RANGES_MAX}, {"allowedPeers", RDC_SPEC_PEERS_MAX}};
    for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
        snprintf(want, sizeof(want), " %s:\n", bounds[i].key);
        const char *at_key = strstr(from, want);
        CU_ASSERT_PTR_NOT_NULL_FATAL(at_key);
        const char *mi = strstr(at_key, "maxItems: ");
        CU_ASSERT_PTR_NOT_NULL_FATAL(mi);
        CU_ASSERT_EQUAL(strtol(mi + strlen("maxItems: "), NULL, 10), bounds[i].max);
    }
    free(crd);
}

/* ---- conversion ------------------------------------------------------------------------- */

static void test_day2_survives_v1alpha1(void)
{
    json_object *v1 = rc_with(EVERY_DAY2);
    json_object *down = V1_ONLY_ROUND_TRIP(v1, "spec service", "spec imagePullPolicy", "spec serviceAccountName",
                                           "spec env", "spec volumes", "spec volumeMounts", "spec initContainers",
                                           "spec containers", "spec networkPolicy");
    PUT_EACH(v1, down);
}

static const cu_entry_t tests[] = {
    CU_SUITE("day-2 knobs"),
    {"rules (table): service, pod extras, networkPolicy", test_day2_rules},
    {"a role Service type needs Replication; bounds", test_service_type_needs_replication},
    {"the admission webhook refuses them, with the messages", test_webhook_refuses},
    {"render: the role Services and the headless one", test_render_services},
    {"render: the pod extras", test_render_pod_extras},
    {"plan: a Service change replaced, node ports and clusterIP kept (table)", test_service_drift},
    {"plan: a Service edited by hand, and an older one", test_service_drift_by_hand},
    {"plan: a pod extra taken out is gone (table)", test_pod_extras_drift},
    {"render: the NetworkPolicy (table)", test_render_network_policy},
    {"plan: the NetworkPolicy created, kept, deleted, left alone", test_network_policy_lifecycle},
    {"the CRD: CEL rules, maxLength and maxItems of the day-2 fields", test_crd_day2_rules},
    {"conversion: the day-2 fields survive v1alpha1", test_day2_survives_v1alpha1},
};
CU_MAIN(tests)
