/* Unit tests of the pure reconcile core: plan_compute and the builders behind it.
 *
 * A small simulated API server (world_t) performs a plan's writes the way the real one
 * would: applies come back with defaulted fields, server metadata and other managers'
 * labels added, a StatefulSet's status lags behind its spec until sts_settle() says the
 * controller caught up, finalizer patches and status writes land on the RedisCluster.
 */
#include "buf.h"
#include "clock.h"
#include "cu_table.h"
#include "json_at.h"
#include "plan.h"
#include "plan_fixture.h"
#include "projection.h"
#include "rdc_spec.h"
#include "render.h"
#include "text_case.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T1 (INT64_C(1714564800) * NS_PER_SEC) /* 2024-05-01T12:00:00Z */
#define T1_STR "2024-05-01T12:00:00Z"
#define T2 (T1 + 60 * NS_PER_SEC)
#define T2_STR "2024-05-01T12:01:00Z"
#define T3 (T1 + 120 * NS_PER_SEC)
#define T3_STR "2024-05-01T12:02:00Z"

#define SPEC3                                                                                                    \
    "{\"size\":3,\"image\":\"redis\",\"version\":\"7.2\","                                                    \
    "\"config\":{\"maxmemory\":\"256mb\",\"maxmemoryPolicy\":\"allkeys-lru\"},"                               \
    "\"storage\":{\"size\":\"1Gi\",\"storageClass\":\"standard\"}}"

/* ---- JSON helpers ------------------------------------------------------------------- */

/* Set the last step of path (an object key) to the JSON value, creating objects on the
 * way. */
static void set_at(json_object *o, const char *path, const char *value)
{
    char parent[512];
    const char *last = strrchr(path, ' ');
    json_object *holder = o;
    if (last) {
        size_t n = (size_t)(last - path);
        CU_ASSERT_FATAL(n < sizeof(parent));
        memcpy(parent, path, n);
        parent[n] = '\0';
        /* create missing objects step by step */
        char walked[512] = "";
        size_t wl = 0;
        const char *p = parent;
        holder = o;
        while (*p) {
            const char *end = strchr(p, ' ');
            size_t sn = end ? (size_t)(end - p) : strlen(p);
            memcpy(walked + wl, p, sn);
            wl += sn;
            walked[wl] = '\0';
            json_object *next = at(o, walked);
            if (!next) {
                char key[256];
                memcpy(key, p, sn);
                key[sn] = '\0';
                next = json_object_new_object();
                json_object_object_add(holder, key, next);
            }
            holder = next;
            p += sn;
            if (*p == ' ') {
                p++;
                walked[wl++] = ' ';
                walked[wl] = '\0';
            }
        }
        last++;
    } else {
        last = path;
    }
    CU_ASSERT_FATAL(json_object_is_type(holder, json_type_object));
    json_object_object_add(holder, last, value && strcmp(value, "null") ? parse(value) : NULL);
}

static void del_at(json_object *o, const char *parent_path, const char *key)
{
    json_object *h = parent_path[0] ? at(o, parent_path) : o;
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    json_object_object_del(h, key);
}

/* ---- RedisCluster fixtures ------------------------------------------------------------- */

static json_object *rc_new(const char *spec, int with_finalizer)
{
    return parsef("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
                  "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"uid-1\","
                  "\"generation\":1,\"resourceVersion\":\"100\"%s},\"spec\":%s}",
                  with_finalizer ? ",\"finalizers\":[\"" PLAN_FINALIZER "\"]" : "", spec);
}

/* ---- The simulated API server -------------------------------------------------------- */

typedef struct {
    json_object *rc, *cm, *svc, *sts, *pdb;
} world_t;

static void world_init(world_t *w, const char *spec, int with_finalizer)
{
    memset(w, 0, sizeof(*w));
    w->rc = rc_new(spec, with_finalizer);
}

static void world_free(world_t *w)
{
    json_object_put(w->rc);
    json_object_put(w->cm);
    json_object_put(w->svc);
    json_object_put(w->sts);
    json_object_put(w->pdb);
    memset(w, 0, sizeof(*w));
}

static plan_t *run(world_t *w, int64_t now)
{
    plan_children_t kids = {w->cm, w->svc, w->sts, w->pdb};
    plan_t *p = plan_compute_children(w->rc, &kids, NULL, now);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* What the API server returns for an applied object: our fields plus server metadata,
 * other managers' labels and annotations, and every default it fills in. */
static json_object *server_view(const json_object *applied, const json_object *previous)
{
    json_object *o = json_copy(applied);
    set_at(o, "metadata uid", "\"child-uid\"");
    set_at(o, "metadata resourceVersion", "\"555\"");
    set_at(o, "metadata creationTimestamp", "\"2024-05-01T11:00:00Z\"");
    set_at(o, "metadata managedFields", "[{\"manager\":\"rediscluster-operator\",\"operation\":\"Apply\"}]");
    set_at(o, "metadata labels team", "\"payments\"");
    set_at(o, "metadata annotations note", "\"added by someone else\"");
    const char *kind = str_at(o, "kind");
    if (!strcmp(kind, "Service")) {
        set_at(o, "spec clusterIPs", "[\"None\"]");
        set_at(o, "spec type", "\"ClusterIP\"");
        set_at(o, "spec sessionAffinity", "\"None\"");
        set_at(o, "spec ipFamilies", "[\"IPv4\"]");
        set_at(o, "spec ipFamilyPolicy", "\"SingleStack\"");
        set_at(o, "spec internalTrafficPolicy", "\"Cluster\"");
        set_at(o, "status", "{\"loadBalancer\":{}}");
    } else if (!strcmp(kind, "PodDisruptionBudget")) {
        set_at(o, "status", "{\"currentHealthy\":0,\"desiredHealthy\":0,\"disruptionsAllowed\":0,\"expectedPods\":0}");
    } else if (!strcmp(kind, "StatefulSet")) {
        int64_t gen = previous ? int_at(previous, "metadata generation") : 0;
        char g[32];
        snprintf(g, sizeof(g), "%lld", (long long)gen + 1);
        set_at(o, "metadata generation", g);
        set_at(o, "spec podManagementPolicy", "\"OrderedReady\"");
        set_at(o, "spec revisionHistoryLimit", "10");
        set_at(o, "spec updateStrategy", "{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"partition\":0}}");
        set_at(o, "spec persistentVolumeClaimRetentionPolicy",
               "{\"whenDeleted\":\"Retain\",\"whenScaled\":\"Retain\"}");
        set_at(o, "spec template metadata creationTimestamp", "null");
        set_at(o, "spec template metadata annotations kubectl.kubernetes.io/restartedAt", "\"2024-05-01T10:00:00Z\"");
        set_at(o, "spec template spec dnsPolicy", "\"ClusterFirst\"");
        set_at(o, "spec template spec restartPolicy", "\"Always\"");
        set_at(o, "spec template spec schedulerName", "\"default-scheduler\"");
        if (!at(o, "spec template spec securityContext"))
            set_at(o, "spec template spec securityContext", "{}");
        set_at(o, "spec template spec terminationGracePeriodSeconds", "30");
        json_object *c = at(o, "spec template spec containers 0");
        set_at(c, "imagePullPolicy", "\"IfNotPresent\"");
        set_at(c, "terminationMessagePath", "\"/dev/termination-log\"");
        set_at(c, "terminationMessagePolicy", "\"File\"");
        for (int i = 0; i < 2; i++) {
            json_object *probe = at(c, i ? "readinessProbe" : "livenessProbe");
            set_at(probe, "timeoutSeconds", "1");
            set_at(probe, "successThreshold", "1");
            set_at(probe, "failureThreshold", "3");
        }
        set_at(o, "spec template spec volumes 0 configMap defaultMode", "420");
        json_object *pvc = at(o, "spec volumeClaimTemplates 0");
        if (pvc) {
            set_at(pvc, "apiVersion", "\"v1\"");
            set_at(pvc, "kind", "\"PersistentVolumeClaim\"");
            set_at(pvc, "metadata creationTimestamp", "null");
            set_at(pvc, "spec volumeMode", "\"Filesystem\"");
            set_at(pvc, "status", "{\"phase\":\"Pending\"}");
            /* The API server stores quantities in canonical form. */
            const char *size = str_at(pvc, "spec resources requests storage");
            if (size && !strcmp(size, "1024Mi"))
                set_at(pvc, "spec resources requests storage", "\"1Gi\"");
        }
        /* The controller has not seen the new generation yet: the status lags. */
        json_object *st = previous ? at(previous, "status") : NULL;
        json_object_object_add(o, "status", st ? json_copy(st) : parse("{\"replicas\":0,\"availableReplicas\":0}"));
    }
    return o;
}

/* The StatefulSet controller caught up: all replicas created and updated, ready given. */
static void sts_settle(world_t *w, int ready)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(w->sts);
    int64_t replicas = int_at(w->sts, "spec replicas");
    char s[512];
    snprintf(s, sizeof(s),
             "{\"observedGeneration\":%lld,\"replicas\":%lld,\"readyReplicas\":%d,\"currentReplicas\":%lld,"
             "\"updatedReplicas\":%lld,\"availableReplicas\":%d,\"currentRevision\":\"cache-6d4f\","
             "\"updateRevision\":\"cache-6d4f\",\"collisionCount\":0}",
             (long long)int_at(w->sts, "metadata generation"), (long long)replicas, ready, (long long)replicas,
             (long long)replicas, ready);
    json_object_object_add(w->sts, "status", parse(s));
}

/* Perform every write of the plan as the API server would. */
static void perform(world_t *w, const plan_t *p)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        switch (a->kind) {
        case PLAN_ADD_FINALIZER:
        case PLAN_REMOVE_FINALIZER:
            json_object_object_add(at(w->rc, "metadata"), "finalizers", json_copy(at(a->body, "metadata finalizers")));
            set_at(w->rc, "metadata resourceVersion", "\"101\"");
            break;
        case PLAN_CLEANUP:
        case PLAN_SLOT_MOVE: /* (Cluster mode: test_plan_cluster.c) */
            break;
        case PLAN_CREATE:
        case PLAN_APPLY: {
            json_object **slot = !strcmp(a->resource, "configmaps")             ? &w->cm
                                 : !strcmp(a->resource, "services")             ? &w->svc
                                 : !strcmp(a->resource, "poddisruptionbudgets") ? &w->pdb
                                                                                 : &w->sts;
            /* A create is only planned for what was observed absent, an apply only for
             * what is ours. */
            if (a->kind == PLAN_CREATE) {
                CU_ASSERT_PTR_NULL(*slot);
            } else {
                CU_ASSERT_PTR_NOT_NULL_FATAL(str_at(*slot, "metadata ownerReferences 0 uid"));
                CU_ASSERT_STRING_EQUAL(str_at(*slot, "metadata ownerReferences 0 uid"), "uid-1");
            }
            json_object *fresh = server_view(a->body, *slot);
            json_object_put(*slot);
            *slot = fresh;
            break;
        }
        case PLAN_REPLACE:
        case PLAN_DELETE: {
            json_object **slot = !strcmp(a->resource, "configmaps")             ? &w->cm
                                 : !strcmp(a->resource, "services")             ? &w->svc
                                 : !strcmp(a->resource, "poddisruptionbudgets") ? &w->pdb
                                                                                 : &w->sts;
            CU_ASSERT_PTR_NOT_NULL_FATAL(*slot);
            json_object *fresh = a->kind == PLAN_REPLACE ? server_view(a->body, *slot) : NULL;
            json_object_put(*slot);
            *slot = fresh;
            break;
        }
        case PLAN_UPDATE_STATUS:
            json_object_object_add(w->rc, "status", json_copy(at(a->body, "status")));
            break;
        case PLAN_LABEL_POD:
        case PLAN_REDIS:
        case PLAN_AUTH_RECORD:
        case PLAN_ANNOTATE_POD:
        case PLAN_ACL_FILE:
        case PLAN_RESIZE_CLAIM:
            break; /* pods, Redis, Secrets and claims are outside the simulated world */
        }
    }
}

/* ---- Plan inspection ------------------------------------------------------------------- */

/* The create or apply of a child resource, or NULL. */
static const plan_action_t *find_write(const plan_t *p, const char *resource)
{
    const plan_action_t *a = find_action(p, PLAN_CREATE, resource);
    a = a ? a : find_action(p, PLAN_APPLY, resource);
    return a ? a : find_action(p, PLAN_REPLACE, resource); /* a changed spec hash (REMOVED KNOBS) */
}

/* Creates and applies of children. */
static size_t count_writes(const plan_t *p)
{
    return count_kind(p, PLAN_CREATE) + count_kind(p, PLAN_APPLY) + count_kind(p, PLAN_REPLACE);
}

static json_object *cond(const plan_t *p, const char *type)
{
    json_object *list = at(plan_status(p), "conditions");
    for (size_t i = 0; list && i < json_object_array_length(list); i++) {
        json_object *c = json_object_array_get_idx(list, i);
        const char *t = str_at(c, "type");
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

static void sha256_hex(const char *s, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* Bring a world to Running: create everything, settle the StatefulSet, write status. */
static void converge(world_t *w, int64_t now)
{
    for (int round = 0; round < 4; round++) {
        plan_t *p = run(w, now);
        perform(w, p);
        plan_destroy(&p);
        if (w->sts)
            sts_settle(w, (int)int_at(w->sts, "spec replicas"));
    }
}

/* ---- Fresh create ---------------------------------------------------------------------- */

static void test_fresh_create_order_and_requests(void)
{
    world_t w;
    world_init(&w, SPEC3, 0);
    set_at(w.rc, "metadata finalizers", "[\"other.io/keep\"]");
    plan_t *p = run(&w, T1);
    CU_ASSERT_PTR_NULL(plan_error(p));
    CU_ASSERT_EQUAL_FATAL(plan_action_count(p), 6);
    const plan_action_t *a0 = plan_action(p, 0), *a1 = plan_action(p, 1), *a2 = plan_action(p, 2),
                        *a3 = plan_action(p, 3), *a4 = plan_action(p, 5), *a5 = plan_action(p, 4);
    /* Finalizer first: a merge patch keeping the other finalizer, with RV precondition. */
    CU_ASSERT_EQUAL(a0->kind, PLAN_ADD_FINALIZER);
    CU_ASSERT_STRING_EQUAL(a0->method, "PATCH");
    CU_ASSERT_STRING_EQUAL(a0->content_type, "application/merge-patch+json");
    CU_ASSERT_STRING_EQUAL(a0->path, "/apis/cache.example.com/v1/namespaces/default/redisclusters/cache");
    CU_ASSERT_STRING_EQUAL(str_at(a0->body, "metadata finalizers 0"), "other.io/keep");
    CU_ASSERT_STRING_EQUAL(str_at(a0->body, "metadata finalizers 1"), PLAN_FINALIZER);
    CU_ASSERT_STRING_EQUAL(str_at(a0->body, "metadata resourceVersion"), "100");
    CU_ASSERT_PTR_NULL(a0->field_manager);
    /* Then the three creates (POST to the collection, never a forced apply), ConfigMap
     * before the StatefulSet that mounts it. */
    CU_ASSERT_EQUAL(a1->kind, PLAN_CREATE);
    CU_ASSERT_STRING_EQUAL(a1->method, "POST");
    CU_ASSERT_STRING_EQUAL(a1->resource, "configmaps");
    CU_ASSERT_STRING_EQUAL(a1->name, "cache");
    CU_ASSERT_STRING_EQUAL(a1->path, "/api/v1/namespaces/default/configmaps?fieldManager=rediscluster-operator");
    CU_ASSERT_STRING_EQUAL(a1->content_type, "application/json");
    CU_ASSERT_STRING_EQUAL(a1->field_manager, "rediscluster-operator");
    CU_ASSERT_STRING_EQUAL(str_at(a1->body, "metadata name"), "cache");
    CU_ASSERT_EQUAL(a2->kind, PLAN_CREATE);
    CU_ASSERT_STRING_EQUAL(a2->resource, "services");
    CU_ASSERT_STRING_EQUAL(a2->path, "/api/v1/namespaces/default/services?fieldManager=rediscluster-operator");
    CU_ASSERT_EQUAL(a3->kind, PLAN_CREATE);
    CU_ASSERT_STRING_EQUAL(a3->resource, "statefulsets");
    CU_ASSERT_STRING_EQUAL(a3->group_version, "apps/v1");
    CU_ASSERT_STRING_EQUAL(a3->path,
                           "/apis/apps/v1/namespaces/default/statefulsets?fieldManager=rediscluster-operator");
    /* The PodDisruptionBudget after the StatefulSet (issue 20). */
    CU_ASSERT_EQUAL(a5->kind, PLAN_CREATE);
    CU_ASSERT_STRING_EQUAL(a5->resource, "poddisruptionbudgets");
    CU_ASSERT_STRING_EQUAL(a5->path, "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
                                     "?fieldManager=rediscluster-operator");
    /* And the status, on the subresource. */
    CU_ASSERT_EQUAL(a4->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_STRING_EQUAL(a4->subresource, "status");
    CU_ASSERT_STRING_EQUAL(a4->path, "/apis/cache.example.com/v1/namespaces/default/redisclusters/cache/status"
                                     "?fieldManager=rediscluster-operator&force=true");
    CU_ASSERT_STRING_EQUAL(a4->content_type, "application/apply-patch+yaml");
    CU_ASSERT_STRING_EQUAL(a4->field_manager, "rediscluster-operator");
    CU_ASSERT_STRING_EQUAL(str_at(a4->body, "status phase"), "Pending");
    CU_ASSERT_STRING_EQUAL(str_at(a4->body, "metadata name"), "cache");
    /* One Created event per child, each tied to its apply. */
    CU_ASSERT_EQUAL(plan_event_count(p), 4);
    for (size_t i = 0; i < 4; i++) {
        CU_ASSERT_STRING_EQUAL(plan_event(p, i)->type, "Normal");
        CU_ASSERT_STRING_EQUAL(plan_event(p, i)->reason, "Created");
        CU_ASSERT_EQUAL(plan_event(p, i)->action, (int)i + 1);
    }
    CU_ASSERT(text_contains(plan_event(p, 2)->message, "StatefulSet default/cache"));
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 10 * NS_PER_SEC);
    plan_destroy(&p);
    CU_ASSERT_PTR_NULL(p);
    world_free(&w);
}

static void check_child_metadata(const json_object *o)
{
    ASSERT_STRS_AT(o, {"metadata name", "cache"}, {"metadata namespace", "default"},
                   {"metadata labels app.kubernetes.io/name", "redis"},
                   {"metadata labels app.kubernetes.io/instance", "cache"},
                   {"metadata labels app.kubernetes.io/managed-by", "rediscluster-operator"},
                   {"metadata labels app.kubernetes.io/part-of", "rediscluster"});
    json_object *refs = at(o, "metadata ownerReferences");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(refs), 1);
    ASSERT_STRS_AT(refs, {"0 apiVersion", "cache.example.com/v1"}, {"0 kind", "RedisCluster"}, {"0 name", "cache"},
                   {"0 uid", "uid-1"});
    CU_ASSERT(json_object_get_boolean(at(refs, "0 controller")));
    CU_ASSERT(json_object_get_boolean(at(refs, "0 blockOwnerDeletion")));
}

static void test_fresh_create_children(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    plan_t *p = run(&w, T1);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_ADD_FINALIZER), 0);
    CU_ASSERT_EQUAL_FATAL(count_writes(p), 4);
    const json_object *cm = find_write(p, "configmaps")->body;
    const json_object *svc = find_write(p, "services")->body;
    const json_object *sts = find_write(p, "statefulsets")->body;
    check_child_metadata(cm);
    check_child_metadata(svc);
    check_child_metadata(sts);

    /* ConfigMap: redis.conf with the spec's memory settings and the defaults. */
    CU_ASSERT_STRING_EQUAL(str_at(cm, "apiVersion"), "v1");
    CU_ASSERT_STRING_EQUAL(str_at(cm, "kind"), "ConfigMap");
    const char *conf = str_at(cm, "data redis.conf");
    CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
    static const char *const lines[] = {"\nmaxmemory 256mb\n", "\nmaxmemory-policy allkeys-lru\n", "\ndir /data\n",
                                        "\nappendonly yes\n",  "\nport 6379\n",
                                        "\nprotected-mode no\n", "\nsave 900 1\n"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        CU_ASSERT(text_contains(conf, lines[i]));
    /* No bind directive: Redis listens on every interface of its pod. */
    CU_ASSERT(!text_contains(conf, "\nbind "));

    /* Service: headless, port 6379 named redis, selector name+instance only. */
    CU_ASSERT_STRING_EQUAL(str_at(svc, "spec clusterIP"), "None");
    CU_ASSERT_STRING_EQUAL(str_at(svc, "spec ports 0 name"), "redis");
    CU_ASSERT_EQUAL(int_at(svc, "spec ports 0 port"), 6379);
    CU_ASSERT_EQUAL(int_at(svc, "spec ports 0 targetPort"), 6379);
    CU_ASSERT_EQUAL(json_object_object_length(at(svc, "spec selector")), 2);
    CU_ASSERT_STRING_EQUAL(str_at(svc, "spec selector app.kubernetes.io/instance"), "cache");

    /* StatefulSet. */
    CU_ASSERT_EQUAL(int_at(sts, "spec replicas"), 3);
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec serviceName"), "cache");
    json_object *sel = at(sts, "spec selector matchLabels");
    CU_ASSERT_EQUAL(json_object_object_length(sel), 2);
    CU_ASSERT_STRING_EQUAL(str_at(sel, "app.kubernetes.io/name"), "redis");
    CU_ASSERT_STRING_EQUAL(str_at(sel, "app.kubernetes.io/instance"), "cache");
    CU_ASSERT_EQUAL(json_object_object_length(at(sts, "spec template metadata labels")), 4);
    char hash[65];
    sha256_hex(conf, hash);
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec template metadata annotations cache.example.com/config-hash"), hash);
    json_object *c = at(sts, "spec template spec containers 0");
    CU_ASSERT_EQUAL(json_object_array_length(at(sts, "spec template spec containers")), 1);
    ASSERT_STRS_AT(c, {"name", "redis"}, {"image", "redis:7.2"}, {"command 0", "redis-server"},
                   {"command 1", "/etc/redis/redis.conf"}, {"ports 0 name", "redis"},
                   {"resources requests cpu", "100m"}, {"resources requests memory", "256Mi"},
                   {"resources limits cpu", "500m"}, {"resources limits memory", "1Gi"},
                   {"livenessProbe exec command 0", "redis-cli"}, {"livenessProbe exec command 1", "ping"},
                   {"readinessProbe exec command 0", "redis-cli"}, {"readinessProbe exec command 1", "ping"},
                   {"volumeMounts 0 name", "data"}, {"volumeMounts 0 mountPath", "/data"},
                   {"volumeMounts 1 name", "config"}, {"volumeMounts 1 mountPath", "/etc/redis"});
    CU_ASSERT_EQUAL(int_at(c, "ports 0 containerPort"), 6379);
    CU_ASSERT_EQUAL(int_at(c, "livenessProbe initialDelaySeconds"), 10);
    CU_ASSERT_EQUAL(int_at(c, "livenessProbe periodSeconds"), 10);
    CU_ASSERT_EQUAL(int_at(c, "readinessProbe initialDelaySeconds"), 1);
    CU_ASSERT_EQUAL(int_at(c, "readinessProbe periodSeconds"), 5);
    ASSERT_STRS_AT(sts, {"spec template spec volumes 0 name", "config"},
                   {"spec template spec volumes 0 configMap name", "cache"});
    json_object *pvc = at(sts, "spec volumeClaimTemplates 0");
    CU_ASSERT_EQUAL(json_object_array_length(at(sts, "spec volumeClaimTemplates")), 1);
    ASSERT_STRS_AT(pvc, {"metadata name", "data"}, {"spec accessModes 0", "ReadWriteOnce"},
                   {"spec resources requests storage", "1Gi"}, {"spec storageClassName", "standard"});
    /* Defaults the API server owns are left to it. */
    CU_ASSERT_PTR_NULL(at(c, "imagePullPolicy"));
    CU_ASSERT_PTR_NULL(at(sts, "spec template spec dnsPolicy"));

    /* Status of a fresh object: Pending, with the /scale selector. */
    json_object *st = plan_status(p);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_EQUAL(int_at(st, "replicas"), 0);
    CU_ASSERT_EQUAL(int_at(st, "readyReplicas"), 0);
    CU_ASSERT_EQUAL(int_at(st, "observedGeneration"), 1);
    CU_ASSERT_STRING_EQUAL(str_at(st, "selector"), "app.kubernetes.io/name=redis,app.kubernetes.io/instance=cache");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "status"), "False");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "reason"), "Creating");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "lastTransitionTime"), T1_STR);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "status"), "True");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "False");
    plan_destroy(&p);
    world_free(&w);
}

/* ---- No-op ----------------------------------------------------------------------------- */

static void test_converged_world_plans_nothing(void)
{
    world_t w;
    world_init(&w, SPEC3, 0);
    converge(&w, T1);
    /* The simulated server added defaults, extra labels and annotations everywhere. */
    CU_ASSERT_STRING_EQUAL(str_at(w.sts, "spec template spec containers 0 terminationMessagePath"),
                           "/dev/termination-log");
    CU_ASSERT_STRING_EQUAL(str_at(w.svc, "metadata labels team"), "payments");
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_EQUAL(plan_event_count(p), 0);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "status"), "True");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "reason"), "AllReplicasReady");
    CU_ASSERT_EQUAL(int_at(plan_status(p), "readyReplicas"), 3);
    plan_destroy(&p);
    world_free(&w);
}

/* A Service exactly as `kubectl get -o json` shows one the operator applied. */
static void test_literal_server_service_is_not_drift(void)
{
    json_object *rc = rc_new(SPEC3, 1);
    json_object *svc = parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"creationTimestamp\":\"2024-05-01T11:00:00Z\","
        "\"labels\":{\"app.kubernetes.io/instance\":\"cache\","
        "\"app.kubernetes.io/managed-by\":\"rediscluster-operator\","
        "\"app.kubernetes.io/name\":\"redis\",\"app.kubernetes.io/part-of\":\"rediscluster\"},\"name\":\"cache\","
        "\"namespace\":\"default\",\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\","
        "\"blockOwnerDeletion\":true,\"controller\":true,\"kind\":\"RedisCluster\",\"name\":\"cache\","
        "\"uid\":\"uid-1\"}],"
        "\"resourceVersion\":\"812\",\"uid\":\"5b0e\"},\"spec\":{\"clusterIP\":\"None\",\"clusterIPs\":[\"None\"],"
        "\"internalTrafficPolicy\":\"Cluster\",\"ipFamilies\":[\"IPv4\"],\"ipFamilyPolicy\":\"SingleStack\","
        "\"ports\":[{\"name\":\"redis\",\"port\":6379,\"protocol\":\"TCP\",\"targetPort\":6379}],"
        "\"selector\":{\"app.kubernetes.io/instance\":\"cache\",\"app.kubernetes.io/name\":\"redis\"},"
        "\"sessionAffinity\":\"None\",\"type\":\"ClusterIP\"},\"status\":{\"loadBalancer\":{}}}");
    plan_t *p = plan_compute(rc, NULL, svc, NULL, T1);
    CU_ASSERT_PTR_NOT_NULL(find_write(p, "configmaps"));
    CU_ASSERT_PTR_NULL(find_write(p, "services"));
    plan_destroy(&p);
    json_object_put(svc);
    json_object_put(rc);
}

static void test_foreign_additions_are_not_drift(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    /* A sidecar injected by someone else, a second owner, extra template labels. */
    json_object_array_add(at(w.sts, "spec template spec containers"),
                          parse("{\"name\":\"istio-proxy\",\"image\":\"istio/proxyv2\"}"));
    json_object_array_add(at(w.cm, "metadata ownerReferences"),
                          parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"name\":\"x\",\"uid\":\"uid-9\"}"));
    set_at(w.sts, "spec template metadata labels sidecar", "\"yes\"");
    set_at(w.cm, "data extra.conf", "\"# someone else's key\"");
    /* Quantities in another, equal form. */
    set_at(w.sts, "spec template spec containers 0 resources limits cpu", "\"0.5\"");
    set_at(w.sts, "spec template spec containers 0 resources limits memory", "\"1024Mi\"");
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    plan_destroy(&p);
    world_free(&w);
}

/* ---- Drift ------------------------------------------------------------------------------ */

static void change_cm_data(world_t *w)
{
    set_at(w->cm, "data redis.conf", "\"maxmemory 1gb\\n\"");
}

static void change_svc_port(world_t *w)
{
    set_at(w->svc, "spec ports 0 port", "6380");
}

static void change_svc_port_name(world_t *w)
{
    set_at(w->svc, "spec ports 0 name", "\"other\"");
}

static void change_sts_replicas(world_t *w)
{
    set_at(w->sts, "spec replicas", "2"); /* someone ran kubectl scale on the StatefulSet */
}

static void change_image(world_t *w)
{
    set_at(w->sts, "spec template spec containers 0 image", "\"redis:6.0\"");
}

static void change_probe(world_t *w)
{
    del_at(w->sts, "spec template spec containers 0", "readinessProbe");
}

static void change_delete_children(world_t *w)
{
    json_object_put(w->svc);
    w->svc = NULL;
    json_object_put(w->cm);
    w->cm = NULL;
}

static void change_owner_refs(world_t *w)
{
    del_at(w->cm, "metadata", "ownerReferences");
    set_at(w->svc, "metadata labels app.kubernetes.io/managed-by", "\"helm\"");
}

/* What only one case checks. */
static void more_cm_data(const plan_t *p)
{
    CU_ASSERT_EQUAL(find_event(p, "Updated")->action, 0); /* the Event names the apply */
}

static void more_image(const plan_t *p)
{
    /* A new pod template is about to roll: not Running any more. */
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "reason"), "RollingUpdate");
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 10 * NS_PER_SEC);
}

static void more_children_deleted(const plan_t *p)
{
    CU_ASSERT_STRING_EQUAL(plan_action(p, 0)->resource, "configmaps");
    CU_ASSERT_STRING_EQUAL(plan_action(p, 1)->resource, "services");
    CU_ASSERT_EQUAL(plan_event_count(p), 2);
    CU_ASSERT_STRING_EQUAL(plan_event(p, 1)->reason, "Created");
    CU_ASSERT_EQUAL(plan_event(p, 1)->action, 1);
}

/* A ConfigMap without our controller reference is not ours any more: never taken back
 * (plan.h, OWNERSHIP), and the StatefulSet that mounts it is left as it is. */
static void more_owner_refs(const plan_t *p)
{
    CU_ASSERT_PTR_NULL(find_write(p, "configmaps"));
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "reason"), "OwnerConflict");
    CU_ASSERT_PTR_NULL(find_write(p, "statefulsets"));
}

/* Converge, let change() tamper with the world, and plan again: the plan must put back
 * what changed and say so. A NULL or negative field is not checked. */
static const struct {
    const char *name; /* the CUnit test's name (drift_tests) */
    void (*change)(world_t *);
    int actions;          /* plan_action_count */
    const char *resource; /* the write (create or apply) that puts it back ... */
    int first;            /* ... is the plan's first action */
    int kind;             /* ... of this kind */
    const char *why;      /* ... and its why holds this */
    const char *body_path, *body_has, *body_is; /* the string at body_path holds / is */
    int64_t body_int;                           /* ... or, without them, this integer */
    const char *event, *event_says; /* an Event with this reason, its message holding this */
    const char *no_event;           /* no Event with this reason */
    const char *phase;
    void (*more)(const plan_t *p);
} drift_cases[] = {
    {"ConfigMap data changed", change_cm_data, 1, "configmaps", 1, PLAN_APPLY, "data.redis.conf",
     "data redis.conf", "maxmemory 256mb", NULL, 0, "Updated", "ConfigMap default/cache", NULL, "Running",
     more_cm_data},
    {"Service port changed", change_svc_port, 1, "services", 1, -1, "spec.ports[redis].port: want 6379, have 6380",
     "spec ports 0 port", NULL, NULL, 6379, NULL, NULL, NULL, NULL, NULL},
    {"Service port renamed", change_svc_port_name, -1, "services", 1, -1, "spec.ports[redis]: missing", NULL, NULL,
     NULL, 0, NULL, NULL, NULL, NULL, NULL},
    /* apply, and the status now says Scaling; nothing else differs */
    {"StatefulSet replicas changed", change_sts_replicas, 2, "statefulsets", 0, -1, "spec.replicas: want 3, have 2",
     "spec replicas", NULL, NULL, 3, "Scaled", "from 2 to 3 replicas", "Updated", "Scaling", NULL},
    {"container image changed", change_image, -1, "statefulsets", 0, -1,
     "spec.template.spec.containers[redis].image: want \"redis:7.2\", have \"redis:6.0\"",
     "spec template spec containers 0 image", NULL, "redis:7.2", 0, "Updated", NULL, "Scaled", "Scaling", more_image},
    {"probe removed", change_probe, -1, "statefulsets", 0, -1, "readinessProbe", NULL, NULL, NULL, 0, NULL, NULL,
     NULL, NULL, NULL},
    {"children deleted", change_delete_children, 2, "services", 0, -1, "missing", NULL, NULL, NULL, 0, NULL, NULL,
     NULL, NULL, more_children_deleted},
    {"owner reference and label changed", change_owner_refs, -1, "services", 0, PLAN_APPLY,
     "app.kubernetes.io/managed-by", NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, more_owner_refs},
};

/* Every test of drift_tests: the case named as the running test. */
static void test_drift_case(void)
{
    const char *name = CU_get_current_test()->pName;
    size_t i = 0;
    while (i < sizeof(drift_cases) / sizeof(drift_cases[0]) && strcmp(drift_cases[i].name, name))
        i++;
    CU_ASSERT_FATAL(i < sizeof(drift_cases) / sizeof(drift_cases[0]));
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    drift_cases[i].change(&w);
    plan_t *p = run(&w, T2);
    if (drift_cases[i].actions >= 0)
        CU_ASSERT_EQUAL_FATAL(plan_action_count(p), (size_t)drift_cases[i].actions);
    const plan_action_t *a = find_write(p, drift_cases[i].resource);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    if (drift_cases[i].first)
        CU_ASSERT_PTR_EQUAL(a, plan_action(p, 0));
    if (drift_cases[i].kind >= 0)
        CU_ASSERT_EQUAL(a->kind, (plan_action_kind_t)drift_cases[i].kind);
    CU_ASSERT(text_contains(a->why, drift_cases[i].why));
    const char *path = drift_cases[i].body_path;
    if (path && drift_cases[i].body_has)
        CU_ASSERT(text_contains(str_at(a->body, path), drift_cases[i].body_has));
    if (path && drift_cases[i].body_is)
        CU_ASSERT_STRING_EQUAL(str_at(a->body, path), drift_cases[i].body_is);
    if (path && !drift_cases[i].body_has && !drift_cases[i].body_is)
        CU_ASSERT_EQUAL(int_at(a->body, path), drift_cases[i].body_int);
    if (drift_cases[i].event) {
        const plan_event_t *e = find_event(p, drift_cases[i].event);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        if (drift_cases[i].event_says)
            CU_ASSERT(text_contains(e->message, drift_cases[i].event_says));
    }
    if (drift_cases[i].no_event)
        CU_ASSERT_PTR_NULL(find_event(p, drift_cases[i].no_event));
    if (drift_cases[i].phase)
        CU_ASSERT_STRING_EQUAL(plan_phase(p), drift_cases[i].phase);
    if (drift_cases[i].more)
        drift_cases[i].more(p);
    plan_destroy(&p);
    world_free(&w);
}

/* ---- Scaling and config changes --------------------------------------------------------- */

static void test_scale_up_and_down(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    for (int step = 0; step < 2; step++) {
        int want = step == 0 ? 5 : 1, from = step == 0 ? 3 : 5;
        char n[8];
        snprintf(n, sizeof(n), "%d", want);
        set_at(w.rc, "spec size", n);
        set_at(w.rc, "metadata generation", step == 0 ? "2" : "3");
        plan_t *p = run(&w, T2);
        const plan_action_t *a = find_write(p, "statefulsets");
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(int_at(a->body, "spec replicas"), want);
        CU_ASSERT_PTR_NULL(find_write(p, "configmaps"));
        char msg[64];
        snprintf(msg, sizeof(msg), "from %d to %d replicas", from, want);
        CU_ASSERT(text_contains(find_event(p, "Scaled")->message, msg));
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Scaling");
        /* a decrease is a scale-in (its own reason: plan_scale.h) */
        CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "reason"), step == 0 ? "Scaling" : "ScalingIn");
        CU_ASSERT_EQUAL(int_at(plan_status(p), "observedGeneration"), step + 2);
        CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 10 * NS_PER_SEC);
        perform(&w, p);
        plan_destroy(&p);
        /* Until the StatefulSet controller catches up, still Scaling and no new writes. */
        p = run(&w, T2);
        CU_ASSERT_EQUAL(count_writes(p), 0);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Scaling");
        plan_destroy(&p);
        sts_settle(&w, want);
        p = run(&w, T3);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
        CU_ASSERT_EQUAL(int_at(plan_status(p), "replicas"), want);
        perform(&w, p);
        plan_destroy(&p);
    }
    world_free(&w);
}

static void test_config_change_rolls_pods(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    const char *old_hash = str_at(w.sts, "spec template metadata annotations cache.example.com/config-hash");
    char before[65];
    snprintf(before, sizeof(before), "%s", old_hash);
    set_at(w.rc, "spec config maxmemory", "\"512mb\"");
    plan_t *p = run(&w, T2);
    const plan_action_t *cm = find_write(p, "configmaps");
    const plan_action_t *sts = find_write(p, "statefulsets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cm);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
    CU_ASSERT(plan_action(p, 0) == cm); /* config first, then the pods that read it */
    const char *conf = str_at(cm->body, "data redis.conf");
    CU_ASSERT(text_contains(conf, "\nmaxmemory 512mb\n"));
    char hash[65];
    sha256_hex(conf, hash);
    const char *new_hash = str_at(sts->body, "spec template metadata annotations cache.example.com/config-hash");
    CU_ASSERT_STRING_EQUAL(new_hash, hash);
    CU_ASSERT_STRING_NOT_EQUAL(new_hash, before);
    CU_ASSERT(text_contains(sts->why, "cache.example.com/config-hash"));
    plan_destroy(&p);
    world_free(&w);
}

static void test_same_config_same_hash(void)
{
    json_object *a = rc_new(SPEC3, 1), *b = rc_new(SPEC3, 1);
    set_at(b, "metadata name", "\"other\"");
    set_at(b, "spec size", "7");
    plan_t *pa = plan_compute(a, NULL, NULL, NULL, T1), *pb = plan_compute(b, NULL, NULL, NULL, T2);
    const char *path = "spec template metadata annotations cache.example.com/config-hash";
    CU_ASSERT_STRING_EQUAL(str_at(find_write(pa, "statefulsets")->body, path),
                           str_at(find_write(pb, "statefulsets")->body, path));
    plan_destroy(&pa);
    plan_destroy(&pb);
    json_object_put(a);
    json_object_put(b);
}

/* ---- Images ------------------------------------------------------------------------------ */

static void test_image_reference_rules(void)
{
    static const struct {
        const char *image, *version, *want;
    } cases[] = {
        {"redis", "7.2", "redis:7.2"},
        {"redis", NULL, "redis"},
        {"redis", "", "redis"},
        {"redis:7.0", "7.2", "redis:7.0"},
        {"docker.io/library/redis", "7.2", "docker.io/library/redis:7.2"},
        {"host:5000/redis", "7.2", "host:5000/redis:7.2"},
        {"host:5000/team/redis", NULL, "host:5000/team/redis"},
        {"host:5000/redis:6", "7.2", "host:5000/redis:6"},
        {"redis@sha256:0123abcd", "7.2", "redis@sha256:0123abcd"},
        {"host:5000/redis@sha256:0123abcd", "7.2", "host:5000/redis@sha256:0123abcd"},
        {"redis:7.2@sha256:0123abcd", "7.4", "redis:7.2@sha256:0123abcd"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        buf_t b;
        buf_init(&b, 0);
        CU_ASSERT_EQUAL(render_image_ref(cases[i].image, cases[i].version, &b), 0);
        CU_ASSERT_STRING_EQUAL(buf_str(&b), cases[i].want);
        if (strcmp(buf_str(&b), cases[i].want))
            fprintf(stderr, "image %s version %s: got %s\n", cases[i].image,
                    cases[i].version ? cases[i].version : "(none)", buf_str(&b));
        buf_free(&b);
    }
}

static void test_image_through_plan(void)
{
    static const text_case_t cases[] = {
        {"{\"size\":1,\"image\":\"registry.local:5000/redis\",\"version\":\"7.2\"}", "registry.local:5000/redis:7.2"},
        {"{\"size\":1,\"image\":\"redis@sha256:abc\",\"version\":\"7.2\"}", "redis@sha256:abc"},
        {"{\"size\":1,\"image\":\"bitnami/redis:7.0.15\",\"version\":\"7.2\"}", "bitnami/redis:7.0.15"},
        {"{\"size\":1,\"image\":\"redis\"}", "redis:" RDC_SPEC_DEFAULT_VERSION},
        {"{\"size\":1,\"image\":\"host:5000/redis\",\"version\":null}", "host:5000/redis:7.2"},
        {"{\"size\":1,\"image\":\"redis:6.2\"}", "redis:6.2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *rc = rc_new(cases[i].in, 1);
        plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
        const plan_action_t *a = find_write(p, "statefulsets");
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_STRING_EQUAL(str_at(a->body, "spec template spec containers 0 image"), cases[i].want);
        plan_destroy(&p);
        json_object_put(rc);
    }
}

/* ---- Optional fields --------------------------------------------------------------------- */

/* Without the defaulting webhook the reconcile fills in the same defaults it would have
 * written (version, maxmemoryPolicy, storage.size): one object, one result, webhook or not. */
static void test_minimal_spec_defaults(void)
{
    json_object *rc = rc_new("{\"size\":1,\"image\":\"redis\"}", 1);
    plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
    CU_ASSERT_EQUAL(count_writes(p), 4);
    const json_object *cm = find_write(p, "configmaps")->body;
    const json_object *sts = find_write(p, "statefulsets")->body;
    const char *conf = str_at(cm, "data redis.conf");
    CU_ASSERT(!text_contains(conf, "\nmaxmemory "));
    ASSERT_TEXT_HAS(conf, "\nmaxmemory-policy allkeys-lru\n", "\nappendonly yes\n");
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec template spec containers 0 image"), "redis:7.2");
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec volumeClaimTemplates 0 spec resources requests storage"), "1Gi");
    CU_ASSERT_PTR_NULL(at(sts, "spec volumeClaimTemplates 0 spec storageClassName"));
    CU_ASSERT_EQUAL(int_at(sts, "spec replicas"), 1);
    plan_destroy(&p);
    json_object_put(rc);

    /* Empty strings and nulls mean "not set", as omitempty fields do. */
    rc = rc_new("{\"size\":2,\"image\":\"redis\",\"version\":\"\",\"config\":{\"maxmemory\":\"\","
                "\"maxmemoryPolicy\":null},"
                "\"storage\":{\"size\":\"\",\"storageClass\":\"\"}}",
                1);
    p = plan_compute(rc, NULL, NULL, NULL, T1);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    sts = find_write(p, "statefulsets")->body;
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec template spec containers 0 image"), "redis:7.2");
    CU_ASSERT_STRING_EQUAL(str_at(sts, "spec volumeClaimTemplates 0 spec resources requests storage"), "1Gi");
    CU_ASSERT_PTR_NULL(at(sts, "spec volumeClaimTemplates 0 spec storageClassName"));
    conf = str_at(find_write(p, "configmaps")->body, "data redis.conf");
    CU_ASSERT(!text_contains(conf, "\nmaxmemory "));
    CU_ASSERT(text_contains(conf, "\nmaxmemory-policy allkeys-lru\n"));
    plan_destroy(&p);
    json_object_put(rc);

    /* The webhook's output plans exactly the children the bare object plans. */
    rc = rc_new("{\"size\":1,\"image\":\"redis\"}", 1);
    json_object *defaulted = rdc_spec_defaulted(rc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(defaulted);
    json_object *rc2 = rc_new(json_object_to_json_string(defaulted), 1);
    plan_t *p1 = plan_compute(rc, NULL, NULL, NULL, T1), *p2 = plan_compute(rc2, NULL, NULL, NULL, T1);
    static const char *const kinds[] = {"configmaps", "services", "statefulsets"};
    for (size_t i = 0; i < 3; i++)
        CU_ASSERT(json_object_equal(find_write(p1, kinds[i])->body,
                                    find_write(p2, kinds[i])->body));
    plan_destroy(&p1);
    plan_destroy(&p2);
    json_object_put(defaulted);
    json_object_put(rc2);
    json_object_put(rc);

    /* Only a policy. */
    rc = rc_new("{\"size\":2,\"image\":\"redis\",\"config\":{\"maxmemoryPolicy\":\"noeviction\"}}", 1);
    p = plan_compute(rc, NULL, NULL, NULL, T1);
    const char *c2 = str_at(find_write(p, "configmaps")->body, "data redis.conf");
    CU_ASSERT(text_contains(c2, "\nmaxmemory-policy noeviction\n"));
    CU_ASSERT(!text_contains(c2, "\nmaxmemory "));
    plan_destroy(&p);
    json_object_put(rc);
}

static void test_storage_quantity_normalised_by_server(void)
{
    world_t w;
    world_init(&w, "{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"1024Mi\"}}", 1);
    converge(&w, T1);
    CU_ASSERT_STRING_EQUAL(str_at(w.sts, "spec volumeClaimTemplates 0 spec resources requests storage"), "1Gi");
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "False");
    plan_destroy(&p);
    world_free(&w);
}

/* ---- Invalid specs ----------------------------------------------------------------------- */

static void test_invalid_specs(void)
{
    static const text_case_t cases[] = {
        {"{\"size\":0,\"image\":\"redis\"}", "spec.size: Invalid value: 0: must be between 1 and 10"},
        {"{\"size\":11,\"image\":\"redis\"}", "spec.size: Invalid value: 11: must be between 1 and 10"},
        {"{\"size\":-3,\"image\":\"redis\"}", "spec.size"},
        {"{\"size\":\"3\",\"image\":\"redis\"}", "spec.size: Invalid value: \"3\": must be an integer"},
        {"{\"size\":2.5,\"image\":\"redis\"}", "spec.size: Invalid value: 2.5: must be an integer"},
        {"{\"image\":\"redis\"}", "spec.size: Required value"},
        {"{\"size\":3,\"image\":\"\"}", "spec.image: Required value: must not be empty"},
        {"{\"size\":3}", "spec.image: Required value"},
        {"{\"size\":3,\"image\":5}", "spec.image: Invalid value: 5: must be a string"},
        {"{\"size\":3,\"image\":\"re dis\"}", "spec.image: Invalid value: \"re dis\": must be an image reference"},
        {"{\"size\":3,\"image\":\"redis\\nmaxmemory 1\"}", "spec.image"},
        {"{\"size\":3,\"image\":\"redis\",\"version\":\"7 2\"}",
         "spec.version: Invalid value: \"7 2\": must be an image tag"},
        {"{\"size\":3,\"image\":\"redis\",\"version\":7}", "spec.version: Invalid value: 7: must be a string"},
        {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"10GB\"}}",
         "spec.storage.size: Invalid value: \"10GB\": must match"},
        {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"1.5Gi\"}}", "spec.storage.size"},
        {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"0Gi\"}}",
         "spec.storage.size: Invalid value: \"0Gi\": must be greater than zero"},
        {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":10}}",
         "spec.storage.size: Invalid value: 10: must be a string"},
        {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"99999999999999999999Ti\"}}", "spec.storage.size"},
        {"{\"size\":3,\"image\":\"redis\",\"storage\":{\"storageClass\":\"Fast_SSD\"}}", "spec.storage.storageClass"},
        {"{\"size\":3,\"image\":\"redis\",\"storage\":[]}", "spec.storage: Invalid value: []: must be an object"},
        {"{\"size\":3,\"image\":\"redis\",\"config\":\"maxmemory 1\"}",
         "spec.config: Invalid value: \"maxmemory 1\": must be an object"},
        {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemory\":\"lots\"}}",
         "spec.config.maxmemory: Invalid value: \"lots\": must be a memory size"},
        {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1gb\\nslaveof evil 6379\"}}",
         "spec.config.maxmemory"},
        {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemory\":256}}",
         "spec.config.maxmemory: Invalid value: 256: must be a string"},
        {"{\"size\":3,\"image\":\"redis\",\"config\":{\"maxmemoryPolicy\":\"allkeys-lfu\"}}",
         "spec.config.maxmemoryPolicy: Unsupported value: \"allkeys-lfu\": supported values"},
        {"\"size=3\"", "spec: Invalid value: \"size=3\": must be an object"},
        {"[1,2]", "spec: Invalid value: [1,2]: must be an object"},
        {"null", "spec: Required value"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *rc = rc_new(cases[i].in, 1);
        plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Failed");
        CU_ASSERT_EQUAL(count_writes(p), 0);
        CU_ASSERT_EQUAL(plan_action_count(p), 1);
        const plan_action_t *st = find_action(p, PLAN_UPDATE_STATUS, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(st);
        json_object *ready = cond(p, "Ready");
        CU_ASSERT_STRING_EQUAL(str_at(ready, "status"), "False");
        CU_ASSERT_STRING_EQUAL(str_at(ready, "reason"), "InvalidSpec");
        CU_ASSERT(text_contains(str_at(ready, "message"), cases[i].want));
        if (!text_contains(str_at(ready, "message"), cases[i].want))
            fprintf(stderr, "spec %s: message %s\n", cases[i].in, str_at(ready, "message"));
        CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "True");
        const plan_event_t *e = find_event(p, "InvalidSpec");
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_STRING_EQUAL(e->type, "Warning");
        CU_ASSERT_EQUAL(e->action, 0);
        CU_ASSERT(text_contains(e->message, cases[i].want));
        CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
        plan_destroy(&p);
        json_object_put(rc);
    }
}

static void test_invalid_spec_lists_every_problem_and_is_quiet_after(void)
{
    world_t w;
    world_init(&w, "{\"size\":12,\"image\":\"\",\"storage\":{\"size\":\"10GB\"}}", 0);
    plan_t *p = run(&w, T1);
    /* The finalizer still goes on, so a later delete runs the cleanup. */
    CU_ASSERT_EQUAL(plan_action(p, 0)->kind, PLAN_ADD_FINALIZER);
    const char *msg = str_at(cond(p, "Ready"), "message");
    ASSERT_TEXT_HAS(msg, "spec.size", "spec.image", "spec.storage.size");
    perform(&w, p);
    plan_destroy(&p);
    /* Nothing changed: no status write and no repeated Warning on a resync. */
    p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_EQUAL(plan_event_count(p), 0);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Failed");
    plan_destroy(&p);
    /* Fixed: the children appear and the failure clears. */
    json_object_object_add(w.rc, "spec", parse(SPEC3));
    set_at(w.rc, "metadata generation", "2");
    p = run(&w, T3);
    CU_ASSERT_EQUAL(count_writes(p), 4);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "reason"), "Creating");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "False");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "lastTransitionTime"), T3_STR);
    plan_destroy(&p);
    world_free(&w);
}

static void test_invalid_names(void)
{
    static const char *const names[] = {"Cache", "1cache", "cache.example",
                                        "a-very-long-name-that-goes-past-the-fifty-two-limit-x"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        json_object *rc = rc_new(SPEC3, 1);
        json_object_object_add(at(rc, "metadata"), "name", json_object_new_string(names[i]));
        plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Failed");
        CU_ASSERT(text_contains(str_at(cond(p, "Ready"), "message"), "metadata.name"));
        CU_ASSERT_EQUAL(count_writes(p), 0);
        plan_destroy(&p);
        json_object_put(rc);
    }
    /* 52 characters is fine. */
    json_object *rc = rc_new(SPEC3, 1);
    json_object_object_add(at(rc, "metadata"), "name",
                           json_object_new_string("abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefgh"));
    plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    plan_destroy(&p);
    json_object_put(rc);
}

static void test_missing_uid(void)
{
    json_object *rc = rc_new(SPEC3, 1);
    del_at(rc, "metadata", "uid");
    plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Failed");
    CU_ASSERT_EQUAL(count_writes(p), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "reason"), "InvalidObject");
    CU_ASSERT(text_contains(str_at(cond(p, "Ready"), "message"), "metadata.uid"));
    CU_ASSERT_PTR_NOT_NULL(find_event(p, "InvalidObject"));
    plan_destroy(&p);
    json_object_put(rc);
}

/* The reconcile and the admission webhook apply one set of rules (rdc_spec): the plan
 * fails exactly when rdc_spec_validate finds a problem, and says what it says. */
static void test_spec_rules_are_the_webhook_rules(void)
{
    char image1024[1025], image1025[1026], tag128[129], tag129[130], class253[254], spec[4096];
    memset(image1024, 'r', 1024);
    image1024[1024] = '\0';
    memset(image1025, 'r', 1025);
    image1025[1025] = '\0';
    memset(tag128, '7', 128);
    tag128[128] = '\0';
    memset(tag129, '7', 129);
    tag129[129] = '\0';
    memset(class253, 'c', 253);
    class253[253] = '\0';
    for (size_t i = 63; i < 253; i += 64)
        class253[i] = '.';
    static const char *const fixed[] = {
        "{\"size\":1,\"image\":\"redis\"}",
        "{\"size\":10,\"image\":\"redis\"}",
        "{\"size\":10.0,\"image\":\"redis\"}",
        "{\"size\":true,\"image\":\"redis\"}",
        "{\"size\":1,\"image\":\"redis\",\"version\":\"_7.2-x\"}",
        "{\"size\":1,\"image\":\"redis\",\"version\":\".7\"}",
        "{\"size\":1,\"image\":\"redis\",\"version\":null}",
        "{\"size\":1,\"image\":\"r\\u00e9dis\"}",
        "{\"size\":1,\"image\":\"re\\u0000dis\"}",
        "{\"size\":1,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1234567890123456789GB\"}}",
        "{\"size\":1,\"image\":\"redis\",\"config\":{\"maxmemory\":\"12345678901234567890\"}}",
        "{\"size\":1,\"image\":\"redis\",\"config\":{\"maxmemory\":\"1tb\"}}",
        "{\"size\":1,\"image\":\"redis\",\"config\":null,\"storage\":null}",
        "{\"size\":1,\"image\":\"redis\",\"config\":{\"maxmemoryPolicy\":\"\"}}",
        "{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"4194304Ti\"}}",
        "{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"4194305Ti\"}}",
        "{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"0000000000000000000000000000000001Gi\"}}",
        "{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"1gi\"}}",
        "{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"0Mi\"}}",
        "{\"size\":1,\"image\":\"redis\",\"storage\":{\"storageClass\":\"a.-b\"}}",
        "{\"size\":1,\"image\":\"redis\",\"storage\":{\"storageClass\":\"fast.ssd-1\"}}",
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) + 6; i++) {
        size_t k = i - sizeof(fixed) / sizeof(fixed[0]);
        if (i < sizeof(fixed) / sizeof(fixed[0]))
            snprintf(spec, sizeof(spec), "%s", fixed[i]);
        else if (k < 2)
            snprintf(spec, sizeof(spec), "{\"size\":1,\"image\":\"%s\"}", k ? image1025 : image1024);
        else if (k < 4)
            snprintf(spec, sizeof(spec), "{\"size\":1,\"image\":\"redis\",\"version\":\"%s\"}",
                     k == 3 ? tag129 : tag128);
        else
            snprintf(spec, sizeof(spec), "{\"size\":1,\"image\":\"redis\",\"storage\":{\"storageClass\":\"%s%s\"}}",
                     class253, k == 5 ? "c" : "");
        json_object *rc = rc_new(spec, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rc);
        rdc_field_errors_t *e = rdc_field_errors_new();
        size_t n = rdc_spec_validate(rc, e);
        buf_t want;
        buf_init(&want, 0);
        if (n)
            CU_ASSERT_EQUAL(rdc_field_errors_format(e, &want), 0);
        plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), n ? "Failed" : "Pending");
        CU_ASSERT_EQUAL(count_writes(p), n ? 0 : 4);
        if (n) {
            CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "reason"), "InvalidSpec");
            CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "message"), buf_str(&want));
            CU_ASSERT_PTR_NOT_NULL_FATAL(find_event(p, "InvalidSpec"));
            CU_ASSERT_STRING_EQUAL(find_event(p, "InvalidSpec")->message, buf_str(&want));
        }
        if (strcmp(plan_phase(p), n ? "Failed" : "Pending"))
            fprintf(stderr, "spec %.80s: %zu problems, phase %s\n", spec, n, plan_phase(p));
        plan_destroy(&p);
        buf_free(&want);
        rdc_field_errors_destroy(&e);
        json_object_put(rc);
    }
}

/* Every field wrong, with values of control bytes that quote four times as long: the
 * message still fits a condition, whole texts only, and says how many it left out. */
static void test_invalid_spec_message_is_bounded(void)
{
    char spec[4096];
    buf_t j;
    buf_init(&j, 0);
    for (size_t i = 0; i < 64; i++)
        buf_puts(&j, "\\u0001");
    const char *v = buf_str(&j);
    snprintf(spec, sizeof(spec),
             "{\"size\":\"%s\",\"image\":\"%s\",\"version\":\"%s\",\"config\":{\"maxmemory\":\"%s\","
             "\"maxmemoryPolicy\":\"%s\"},\"storage\":{\"size\":\"%s\",\"storageClass\":\"%s\"}}",
             v, v, v, v, v, v, v);
    json_object *rc = rc_new(spec, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rc);
    char name[65] = "Not-A-Label-";
    memset(name + 12, '\x01', 52);
    name[64] = '\0';
    json_object_object_add(at(rc, "metadata"), "name", json_object_new_string(name));
    plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Failed");
    const char *msg = str_at(cond(p, "Ready"), "message");
    CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
    size_t len = strlen(msg);
    CU_ASSERT(len < 2048);
    CU_ASSERT(len > 1024);
    CU_ASSERT(msg[0] == '[' && msg[len - 1] == ']');
    ASSERT_TEXT_HAS(msg, "[metadata.name: Invalid value: \"Not-A-Label-\\x01", ", spec.size: Invalid value: \"\\x01",
                    " more]");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "message"), msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(find_event(p, "InvalidSpec"));
    CU_ASSERT_STRING_EQUAL(find_event(p, "InvalidSpec")->message, msg);
    plan_destroy(&p);
    json_object_put(rc);
    buf_free(&j);
}

/* ---- Deletion ---------------------------------------------------------------------------- */

static void test_deletion_with_finalizer(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    set_at(w.rc, "metadata deletionTimestamp", "\"2024-05-01T12:05:00Z\"");
    set_at(w.rc, "metadata finalizers", "[\"a.io/first\",\"" PLAN_FINALIZER "\",\"b.io/last\"]");
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL_FATAL(plan_action_count(p), 2);
    CU_ASSERT_EQUAL(plan_action(p, 0)->kind, PLAN_CLEANUP);
    CU_ASSERT_PTR_NULL(plan_action(p, 0)->path);
    CU_ASSERT_PTR_NULL(plan_action(p, 0)->body);
    const plan_action_t *rm = plan_action(p, 1);
    CU_ASSERT_EQUAL(rm->kind, PLAN_REMOVE_FINALIZER);
    CU_ASSERT_STRING_EQUAL(rm->content_type, "application/merge-patch+json");
    json_object *list = at(rm->body, "metadata finalizers");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(list), 2);
    CU_ASSERT_STRING_EQUAL(str_at(list, "0"), "a.io/first");
    CU_ASSERT_STRING_EQUAL(str_at(list, "1"), "b.io/last");
    CU_ASSERT_PTR_NOT_NULL(str_at(rm->body, "metadata resourceVersion"));
    CU_ASSERT_EQUAL_FATAL(plan_event_count(p), 1);
    CU_ASSERT_STRING_EQUAL(plan_event(p, 0)->reason, "CleanedUp");
    CU_ASSERT_STRING_EQUAL(plan_event(p, 0)->type, "Normal");
    CU_ASSERT_EQUAL(plan_event(p, 0)->action, 0);
    CU_ASSERT_PTR_NULL(plan_status(p));
    CU_ASSERT_PTR_NULL(plan_phase(p));
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
    /* Deletion needs neither a valid spec nor a uid. */
    perform(&w, p);
    plan_destroy(&p);
    json_object_object_add(w.rc, "spec", parse("\"broken\""));
    set_at(w.rc, "metadata finalizers", "[\"" PLAN_FINALIZER "\"]");
    del_at(w.rc, "metadata", "uid");
    p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 2);
    CU_ASSERT_EQUAL(json_object_array_length(at(plan_action(p, 1)->body, "metadata finalizers")), 0);
    plan_destroy(&p);
    world_free(&w);
}

static void test_deletion_without_finalizer(void)
{
    world_t w;
    world_init(&w, SPEC3, 0);
    set_at(w.rc, "metadata deletionTimestamp", "\"2024-05-01T12:05:00Z\"");
    set_at(w.rc, "metadata finalizers", "[\"someone.else/keep\"]");
    plan_t *p = run(&w, T1);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_EQUAL(plan_event_count(p), 0);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
    CU_ASSERT_PTR_NULL(plan_error(p));
    plan_destroy(&p);
    world_free(&w);
}

/* ---- Status ------------------------------------------------------------------------------ */

static void test_status_transitions_and_transition_times(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    /* T1: nothing exists: Pending. */
    plan_t *p = run(&w, T1);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    perform(&w, p);
    plan_destroy(&p);
    /* T2: the StatefulSet runs 1 of 3 ready pods, 2 created so far: still Pending,
     * Progressing Creating (the first rollout, plan.h CREATING). Ready stays False, so
     * its lastTransitionTime stays T1. */
    json_object_object_add(w.sts, "status",
                           parse("{\"observedGeneration\":1,\"replicas\":2,\"readyReplicas\":1,\"updatedReplicas\":2,"
                                 "\"currentRevision\":\"cache-1\",\"updateRevision\":\"cache-1\"}"));
    p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "reason"), "Creating");
    CU_ASSERT_EQUAL(int_at(plan_status(p), "replicas"), 2);
    CU_ASSERT_EQUAL(int_at(plan_status(p), "readyReplicas"), 1);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "status"), "False");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "reason"), "Creating");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "message"), "1/3 replicas ready");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "lastTransitionTime"), T1_STR);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "lastTransitionTime"), T1_STR);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_UPDATE_STATUS), 1);
    CU_ASSERT_EQUAL(count_writes(p), 0);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 10 * NS_PER_SEC);
    perform(&w, p);
    plan_destroy(&p);
    /* T3: all ready: Running. Ready flips (new time), Progressing flips (new time),
     * Degraded stays False (old time). */
    sts_settle(&w, 3);
    p = run(&w, T3);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "status"), "True");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "lastTransitionTime"), T3_STR);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "status"), "False");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "lastTransitionTime"), T3_STR);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "lastTransitionTime"), T1_STR);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
    const plan_action_t *st = find_action(p, PLAN_UPDATE_STATUS, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    CU_ASSERT_STRING_EQUAL(str_at(st->body, "status phase"), "Running");
    perform(&w, p);
    plan_destroy(&p);
    /* Later: nothing changes, nothing is written, the times stay. */
    p = run(&w, T3 + 3600 * NS_PER_SEC);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "lastTransitionTime"), T3_STR);
    plan_destroy(&p);
    /* A pod dies: 2/3 ready, nothing rolling: Pending, Ready flips back. */
    set_at(w.sts, "status readyReplicas", "2");
    p = run(&w, T3 + 7200 * NS_PER_SEC);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "status"), "False");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "lastTransitionTime"), "2024-05-01T14:02:00Z");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "status"), "False");
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 10 * NS_PER_SEC);
    plan_destroy(&p);
    world_free(&w);
}

static void test_rolling_statefulset_is_scaling(void)
{
    static const char *const statuses[] = {
        /* revisions differ */
        "{\"observedGeneration\":1,\"replicas\":3,\"readyReplicas\":3,\"updatedReplicas\":3,"
        "\"currentRevision\":\"cache-1\",\"updateRevision\":\"cache-2\"}",
        /* not all pods updated */
        "{\"observedGeneration\":1,\"replicas\":3,\"readyReplicas\":3,\"updatedReplicas\":1,"
        "\"currentRevision\":\"cache-1\",\"updateRevision\":\"cache-1\"}",
        /* the controller has not seen the latest generation */
        "{\"observedGeneration\":0,\"replicas\":3,\"readyReplicas\":3,\"updatedReplicas\":3,"
        "\"currentRevision\":\"cache-1\",\"updateRevision\":\"cache-1\"}",
    };
    for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        world_t w;
        world_init(&w, SPEC3, 1);
        converge(&w, T1);
        json_object_object_add(w.sts, "status", parse(statuses[i]));
        plan_t *p = run(&w, T2);
        CU_ASSERT_EQUAL(count_writes(p), 0);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Scaling");
        CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "reason"), "RollingUpdate");
        CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Ready"), "status"), "False");
        CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 10 * NS_PER_SEC);
        plan_destroy(&p);
        world_free(&w);
    }
}

static void test_zero_ready_is_pending(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    sts_settle(&w, 0);
    plan_t *p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    plan_destroy(&p);
    world_free(&w);
}

static void test_status_leaves_foreign_conditions_and_tracks_generation(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    json_object_array_add(at(w.rc, "status conditions"),
                          parse("{\"type\":\"Quarantined\",\"status\":\"False\",\"reason\":\"Healthy\","
                                "\"lastTransitionTime\":\"2024-04-01T00:00:00Z\"}"));
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0); /* someone else's condition is not our business */
    plan_destroy(&p);
    /* A new generation (a label edit, say) needs a status write for observedGeneration. */
    set_at(w.rc, "metadata generation", "2");
    p = run(&w, T2);
    CU_ASSERT_EQUAL_FATAL(plan_action_count(p), 1);
    const plan_action_t *st = plan_action(p, 0);
    CU_ASSERT_EQUAL(st->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_EQUAL(int_at(st->body, "status observedGeneration"), 2);
    CU_ASSERT_EQUAL(int_at(st->body, "status conditions 0 observedGeneration"), 2);
    /* Applied, not merged: only our three conditions, so the other one (owned by its own
     * field manager) is neither rewritten from this snapshot nor dropped by the server. */
    CU_ASSERT_STRING_EQUAL(st->content_type, "application/apply-patch+yaml");
    json_object *list = at(st->body, "status conditions");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(list), 3);
    for (size_t i = 0; i < 3; i++)
        CU_ASSERT_STRING_NOT_EQUAL(str_at(json_object_array_get_idx(list, i), "type"), "Quarantined");
    CU_ASSERT_EQUAL(plan_event_count(p), 0);
    plan_destroy(&p);
    world_free(&w);
}

static void test_status_tampered_is_rewritten(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    set_at(w.rc, "status phase", "\"Failed\"");
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL_FATAL(plan_action_count(p), 1);
    CU_ASSERT_EQUAL(plan_action(p, 0)->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_STRING_EQUAL(str_at(plan_action(p, 0)->body, "status phase"), "Running");
    plan_destroy(&p);
    world_free(&w);
}

/* ---- Immutable StatefulSet fields and ownership ------------------------------------------ */

static void test_storage_change_is_reported_not_applied(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    /* A shrink (which the CRD and the webhook refuse; a growth is VOLUME EXPANSION, test_volume.c) */
    set_at(w.rc, "spec storage size", "\"512Mi\"");
    set_at(w.rc, "metadata generation", "2");
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL(count_writes(p), 0);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    json_object *deg = cond(p, "Degraded");
    CU_ASSERT_STRING_EQUAL(str_at(deg, "status"), "True");
    CU_ASSERT_STRING_EQUAL(str_at(deg, "reason"), "ImmutableFieldChanged");
    ASSERT_TEXT_HAS(str_at(deg, "message"), "spec.storage", "want \"512Mi\", have \"1Gi\"");
    const plan_event_t *e = find_event(p, "ImmutableFieldChanged");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(e->type, "Warning");
    CU_ASSERT_EQUAL(plan_action(p, (size_t)e->action)->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
    perform(&w, p);
    plan_destroy(&p);
    /* Reported once: the next resync writes nothing. */
    p = run(&w, T3);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_EQUAL(plan_event_count(p), 0);
    plan_destroy(&p);
    /* Other drift still converges, carrying the StatefulSet's own claim template. */
    set_at(w.rc, "spec size", "4");
    set_at(w.rc, "spec storage", "{\"size\":\"1Gi\",\"storageClass\":\"fast\"}");
    p = run(&w, T3);
    const plan_action_t *a = find_write(p, "statefulsets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(int_at(a->body, "spec replicas"), 4);
    json_object *pvc = at(a->body, "spec volumeClaimTemplates 0");
    CU_ASSERT_STRING_EQUAL(str_at(pvc, "spec resources requests storage"), "1Gi");
    CU_ASSERT_STRING_EQUAL(str_at(pvc, "spec storageClassName"), "standard");
    CU_ASSERT_PTR_NULL(at(pvc, "status"));
    CU_ASSERT_PTR_NULL(at(pvc, "metadata creationTimestamp"));
    CU_ASSERT(text_contains(str_at(cond(p, "Degraded"), "message"), "storageClassName"));
    plan_destroy(&p);
    /* Storage back to what exists: Degraded clears. */
    set_at(w.rc, "spec size", "3");
    set_at(w.rc, "spec storage", "{\"size\":\"1Gi\",\"storageClass\":\"standard\"}");
    p = run(&w, T3);
    CU_ASSERT_EQUAL(count_writes(p), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "False");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "lastTransitionTime"), T3_STR);
    plan_destroy(&p);
    world_free(&w);
}

static void test_selector_mismatch_blocks_statefulset_apply(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    set_at(w.sts, "spec selector", "{\"matchLabels\":{\"app\":\"cache\"}}");
    set_at(w.sts, "spec replicas", "1");
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL(count_writes(p), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "reason"), "ImmutableFieldChanged");
    CU_ASSERT(text_contains(str_at(cond(p, "Degraded"), "message"), "spec.selector"));
    CU_ASSERT_PTR_NOT_NULL(find_event(p, "ImmutableFieldChanged"));
    plan_destroy(&p);
    world_free(&w);
}

static void test_child_controlled_by_another_owner(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    set_at(w.cm, "metadata ownerReferences",
           "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"x\",\"uid\":\"uid-other\","
           "\"controller\":true}]");
    set_at(w.cm, "data redis.conf", "\"theirs\"");
    plan_t *p = run(&w, T2);
    CU_ASSERT_PTR_NULL(find_write(p, "configmaps"));
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "reason"), "OwnerConflict");
    CU_ASSERT(text_contains(str_at(cond(p, "Degraded"), "message"),
                            "ConfigMap default/cache is controlled by another Deployment"));
    plan_destroy(&p);
    world_free(&w);
}

/* ---- Ownership: a table of observed children -------------------------------------------- */

#define USER_CM                                                                                                  \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\","   \
    "\"uid\":\"user-cm\",\"resourceVersion\":\"7\"%s},\"data\":{\"redis.conf\":\"maxmemory 1mb\\n\","             \
    "\"app.properties\":\"mine=1\"}}"
#define USER_SVC                                                                                                 \
    "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\","     \
    "\"uid\":\"user-svc\"%s},\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":\"10.0.0.7\","                        \
    "\"selector\":{\"app\":\"web\"},\"ports\":[{\"name\":\"http\",\"port\":80}]}}"
#define USER_STS                                                                                                 \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"cache\",\"namespace\":"        \
    "\"default\",\"uid\":\"user-sts\",\"generation\":1%s},\"spec\":{\"replicas\":3,\"serviceName\":\"web\","      \
    "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},"  \
    "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx\"}]}}},"                                         \
    "\"status\":{\"observedGeneration\":1,\"replicas\":3,\"readyReplicas\":3,\"updatedReplicas\":3}}"

/* metadata additions of the rows (spliced into USER_* after the uid) */
#define NO_REFS ""
#define FOREIGN_CTL                                                                                              \
    ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"web\","                \
    "\"uid\":\"uid-deploy\",\"controller\":true}]"
#define OLD_RC_CTL                                                                                               \
    ",\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","            \
    "\"name\":\"cache\",\"uid\":\"uid-0\",\"controller\":true}]"
#define OURS_NOT_CTL                                                                                             \
    ",\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","            \
    "\"name\":\"cache\",\"uid\":\"uid-1\"}]"
#define OURS_CTL                                                                                                 \
    ",\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","            \
    "\"name\":\"cache\",\"uid\":\"uid-1\",\"controller\":true}]"
#define LABELLED ",\"labels\":{\"app.kubernetes.io/managed-by\":\"rediscluster-operator\"}"

typedef struct {
    const char *what;
    const char *resource; /* the child under test; the other two are absent (a new cluster) */
    const char *object;   /* printf format: one of USER_*, %s = metadata additions */
    const char *meta;
    plan_action_kind_t write; /* expected write of that child; PLAN_CLEANUP = none */
    const char *message;      /* expected in the Degraded message, or NULL for no conflict */
} owner_row_t;

static const owner_row_t owner_rows[] = {
    {"unlabelled ConfigMap, no owner", "configmaps", USER_CM, NO_REFS, PLAN_CLEANUP,
     "ConfigMap default/cache exists and was not created by this RedisCluster (it has no controller owner reference)"},
    {"labelled ConfigMap, no owner", "configmaps", USER_CM, LABELLED, PLAN_CLEANUP, "no controller owner reference"},
    {"ConfigMap controlled by a Deployment", "configmaps", USER_CM, FOREIGN_CTL, PLAN_CLEANUP,
     "ConfigMap default/cache is controlled by another Deployment \"web\""},
    {"ConfigMap of an earlier RedisCluster", "configmaps", USER_CM, OLD_RC_CTL, PLAN_CLEANUP,
     "controlled by another RedisCluster \"cache\""},
    {"ConfigMap we own but do not control", "configmaps", USER_CM, OURS_NOT_CTL, PLAN_CLEANUP,
     "no controller owner reference"},
    {"ConfigMap we control, drifted", "configmaps", USER_CM, OURS_CTL, PLAN_APPLY, NULL},
    {"unlabelled ClusterIP Service", "services", USER_SVC, NO_REFS, PLAN_CLEANUP,
     "Service default/cache exists and was not created by this RedisCluster"},
    {"Service controlled by a Deployment", "services", USER_SVC, FOREIGN_CTL, PLAN_CLEANUP,
     "Service default/cache is controlled by another Deployment \"web\""},
    {"Service we control, drifted", "services", USER_SVC, OURS_CTL, PLAN_APPLY, NULL},
    {"unlabelled StatefulSet, another selector", "statefulsets", USER_STS, NO_REFS, PLAN_CLEANUP,
     "StatefulSet default/cache exists and was not created by this RedisCluster"},
    {"StatefulSet of an earlier RedisCluster", "statefulsets", USER_STS, OLD_RC_CTL, PLAN_CLEANUP,
     "StatefulSet default/cache is controlled by another RedisCluster"},
    {"absent ConfigMap", "configmaps", NULL, NULL, PLAN_CREATE, NULL},
    {"absent Service", "services", NULL, NULL, PLAN_CREATE, NULL},
    {"absent StatefulSet", "statefulsets", NULL, NULL, PLAN_CREATE, NULL},
};

static json_object **slot_of(world_t *w, const char *resource)
{
    return !strcmp(resource, "configmaps") ? &w->cm : !strcmp(resource, "services") ? &w->svc : &w->sts;
}

/* One row: a new RedisCluster meets the observed child. */
static void owner_row(const owner_row_t *r)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    char text[4096], *before = NULL;
    if (r->object) {
        snprintf(text, sizeof(text), r->object, r->meta);
        *slot_of(&w, r->resource) = parse(text);
        before = strdup(json_object_to_json_string_ext(*slot_of(&w, r->resource), JSON_C_TO_STRING_PLAIN));
    }
    plan_t *p = run(&w, T1);
    const plan_action_t *a = find_write(p, r->resource);
    if (r->write == PLAN_CLEANUP) {
        CU_ASSERT_PTR_NULL(a);
    } else {
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(a->kind, r->write);
    }
    /* force=true goes only to an object whose controller reference is ours. */
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *x = plan_action(p, i);
        if (text_contains(x->path, "force=true") && x->kind == PLAN_APPLY)
            CU_ASSERT(!strcmp(x->resource, r->resource) && !strcmp(r->meta, OURS_CTL));
    }
    json_object *deg = cond(p, "Degraded");
    if (!r->message) {
        CU_ASSERT_STRING_EQUAL(str_at(deg, "status"), "False");
        CU_ASSERT_PTR_NULL(find_event(p, "OwnerConflict"));
        goto out;
    }
    CU_ASSERT_STRING_EQUAL(str_at(deg, "status"), "True");
    CU_ASSERT_STRING_EQUAL(str_at(deg, "reason"), "OwnerConflict");
    if (!text_contains(str_at(deg, "message"), r->message))
        fprintf(stderr, "\n%s: Degraded message is: %s\n", r->what, str_at(deg, "message"));
    CU_ASSERT(text_contains(str_at(deg, "message"), r->message));
    const plan_event_t *e = find_event(p, "OwnerConflict");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(e->type, "Warning");
    CU_ASSERT_STRING_EQUAL(e->message, str_at(deg, "message"));
    CU_ASSERT_EQUAL(plan_action(p, (size_t)e->action)->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), PLAN_REQUEUE_NOT_READY_NS);
    /* A StatefulSet that is not ours says nothing about our replicas. */
    CU_ASSERT_EQUAL(int_at(plan_status(p), "readyReplicas"), 0);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    if (!strcmp(r->resource, "configmaps")) {
        /* Pods would mount the other ConfigMap: no StatefulSet while it stands. */
        CU_ASSERT_PTR_NULL(find_write(p, "statefulsets"));
        CU_ASSERT(text_contains(str_at(deg, "message"),
                                "StatefulSet default/cache is not created while the ConfigMap"));
    } else {
        CU_ASSERT_EQUAL(find_write(p, "configmaps")->kind, PLAN_CREATE);
    }
    /* Perform and look again, as resyncs would: the object stays untouched, nothing more
     * is written or recorded, the conflict stays reported and looked at again. */
    for (int round = 0; round < 4; round++) {
        perform(&w, p);
        plan_destroy(&p);
        if (w.sts && strcmp(r->resource, "statefulsets"))
            sts_settle(&w, 3);
        p = run(&w, T2);
    }
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_EQUAL(plan_event_count(p), 0);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), PLAN_REQUEUE_NOT_READY_NS);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "reason"), "OwnerConflict");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "lastTransitionTime"), T1_STR);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(*slot_of(&w, r->resource), JSON_C_TO_STRING_PLAIN), before);
    /* The user removes it: the operator creates its own and converges. */
    json_object_put(*slot_of(&w, r->resource));
    *slot_of(&w, r->resource) = NULL;
    plan_destroy(&p);
    p = run(&w, T3);
    a = find_write(p, r->resource);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->kind, PLAN_CREATE);
    plan_destroy(&p);
    converge(&w, T3);
    p = run(&w, T3);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "False");
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
out:
    plan_destroy(&p);
    free(before);
    world_free(&w);
}

static void test_ownership_table(void)
{
    for (size_t i = 0; i < sizeof(owner_rows) / sizeof(owner_rows[0]); i++)
        owner_row(&owner_rows[i]);
}

/* Three objects in the way at once: one message names them all, one event. */
static void test_ownership_every_child_in_the_way(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    char text[4096];
    snprintf(text, sizeof(text), USER_CM, NO_REFS);
    w.cm = parse(text);
    snprintf(text, sizeof(text), USER_SVC, FOREIGN_CTL);
    w.svc = parse(text);
    snprintf(text, sizeof(text), USER_STS, NO_REFS);
    w.sts = parse(text);
    plan_t *p = run(&w, T1);
    CU_ASSERT_EQUAL(count_writes(p), 0);
    CU_ASSERT_EQUAL(plan_action_count(p), 1);
    CU_ASSERT_EQUAL(plan_event_count(p), 1);
    const char *m = str_at(cond(p, "Degraded"), "message");
    ASSERT_TEXT_HAS(m, "ConfigMap default/cache exists", "Service default/cache is controlled by another Deployment",
                    "StatefulSet default/cache exists");
    plan_destroy(&p);
    world_free(&w);
}

/* ---- A failed write: a table of API refusals ---------------------------------------------- */

typedef struct {
    const char *what;
    const char *resource;         /* the write that fails (of the fresh plan) */
    int http;
    const char *api_reason, *api_message;
    const char *reason;           /* expected Degraded reason */
    const char *message;          /* expected in the Degraded message */
} fail_row_t;

static const fail_row_t fail_rows[] = {
    {"403 on create", "statefulsets", 403, "Forbidden",
     "statefulsets.apps is forbidden: User \"op\" cannot create resource \"statefulsets\"", "Forbidden",
     "cannot create StatefulSet default/cache: 403 Forbidden: statefulsets.apps is forbidden: User \"op\""},
    {"422 on create", "services", 422, "Invalid", "Service \"cache\" is invalid: spec.ports[1].name: Duplicate value",
     "Invalid", "cannot create Service default/cache: 422 Invalid: Service \"cache\" is invalid: spec.ports[1].name"},
    {"a webhook's 500", "configmaps", 500, "InternalError", "Internal error occurred: failed calling webhook",
     "InternalError", "cannot create ConfigMap default/cache: 500 InternalError: Internal error occurred"},
    {"400 without a Status", "configmaps", 400, "", "<html>bad request</html>", "WriteFailed",
     "cannot create ConfigMap default/cache: 400 error: <html>bad request</html>"},
    {"a reason that is no condition reason", "configmaps", 400, "Bad Request", "x", "WriteFailed",
     "400 Bad Request: x"},
    {"the finalizer patch", "redisclusters", 422, "Invalid", "metadata.finalizers: Forbidden", "Invalid",
     "cannot add the finalizer to RedisCluster default/cache: 422 Invalid"},
};

static size_t index_of(const plan_t *p, const char *resource)
{
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (!strcmp(plan_action(p, i)->resource, resource))
            return i;
    CU_FAIL("no such action");
    return 0;
}

/* Perform a plan's actions before index upto (the ones that succeeded). */
static void perform_until(world_t *w, const plan_t *p, size_t upto)
{
    for (size_t i = 0; i < upto; i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_CREATE) {
            json_object **slot = slot_of(w, a->resource);
            json_object_put(*slot);
            *slot = server_view(a->body, NULL);
        } else if (a->kind == PLAN_ADD_FINALIZER) {
            json_object_object_add(at(w->rc, "metadata"), "finalizers", json_copy(at(a->body, "metadata finalizers")));
        }
    }
}

static void fail_row(const fail_row_t *r)
{
    world_t w;
    world_init(&w, SPEC3, 0);
    plan_t *p = run(&w, T1);
    size_t failed = index_of(p, r->resource);
    perform_until(&w, p, failed);
    plan_destroy(&p);
    p = run(&w, T1); /* the same reconcile as it is seen once the earlier writes landed */
    failed = index_of(p, r->resource);
    plan_t *f = plan_write_failed(w.rc, p, failed, r->http, r->api_reason, r->api_message, T2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL_FATAL(plan_action_count(f), 1);
    const plan_action_t *a = plan_action(f, 0);
    CU_ASSERT_EQUAL(a->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_STRING_EQUAL(a->path, "/apis/cache.example.com/v1/namespaces/default/redisclusters/cache/status"
                                    "?fieldManager=rediscluster-operator&force=true");
    json_object *deg = cond(f, "Degraded");
    CU_ASSERT_STRING_EQUAL(str_at(deg, "status"), "True");
    CU_ASSERT_STRING_EQUAL(str_at(deg, "reason"), r->reason);
    if (!text_contains(str_at(deg, "message"), r->message))
        fprintf(stderr, "\n%s: Degraded message is: %s\n", r->what, str_at(deg, "message"));
    CU_ASSERT(text_contains(str_at(deg, "message"), r->message));
    CU_ASSERT_STRING_EQUAL(str_at(deg, "lastTransitionTime"), T2_STR);
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "status conditions 2 reason"), r->reason);
    /* The rest of the status is the plan's. */
    CU_ASSERT_STRING_EQUAL(plan_phase(f), plan_phase(p));
    CU_ASSERT_STRING_EQUAL(str_at(cond(f, "Ready"), "reason"), str_at(cond(p, "Ready"), "reason"));
    CU_ASSERT_EQUAL_FATAL(plan_event_count(f), 1);
    CU_ASSERT_STRING_EQUAL(plan_event(f, 0)->type, "Warning");
    CU_ASSERT_STRING_EQUAL(plan_event(f, 0)->reason, r->reason);
    CU_ASSERT_STRING_EQUAL(plan_event(f, 0)->message, str_at(deg, "message"));
    CU_ASSERT_EQUAL(plan_event(f, 0)->action, 0);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(f), 0);
    /* The status lands; the same failure again, later: nothing to write or record. */
    json_object *stale = json_copy(w.rc);
    json_object_object_add(w.rc, "status", json_copy(at(a->body, "status")));
    set_at(w.rc, "metadata resourceVersion", "\"102\"");
    plan_destroy(&f);
    plan_destroy(&p);
    /* Even from a plan computed later on the copy from before (a retry that came before
     * the watch, whose conditions are all new to it): compared with the RedisCluster as
     * it is now, nothing to say. */
    p = plan_compute_children(stale, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, NULL, T3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    f = plan_write_failed(w.rc, p, index_of(p, r->resource), r->http, r->api_reason, r->api_message, T3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(plan_action_count(f), 0);
    CU_ASSERT_EQUAL(plan_event_count(f), 0);
    plan_destroy(&f);
    plan_destroy(&p);
    json_object_put(stale);
    p = run(&w, T3);
    f = plan_write_failed(w.rc, p, index_of(p, r->resource), r->http, r->api_reason, r->api_message, T3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(plan_action_count(f), 0);
    CU_ASSERT_EQUAL(plan_event_count(f), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(f, "Degraded"), "lastTransitionTime"), T2_STR);
    plan_destroy(&f);
    /* Another message is news: written and recorded. */
    f = plan_write_failed(w.rc, p, index_of(p, r->resource), r->http, r->api_reason, "something else", T3);
    CU_ASSERT_EQUAL(plan_action_count(f), 1);
    CU_ASSERT_EQUAL(plan_event_count(f), 1);
    CU_ASSERT_STRING_EQUAL(str_at(cond(f, "Degraded"), "lastTransitionTime"), T2_STR);
    plan_destroy(&f);
    /* Once the write goes through, the plan's own status clears Degraded. */
    CU_ASSERT_PTR_NOT_NULL(find_action(p, PLAN_UPDATE_STATUS, NULL));
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "False");
    plan_destroy(&p);
    world_free(&w);
}

static void test_failed_write_table(void)
{
    for (size_t i = 0; i < sizeof(fail_rows) / sizeof(fail_rows[0]); i++)
        fail_row(&fail_rows[i]);
}

static void test_failed_write_edges(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    plan_t *p = run(&w, T1);
    /* A failed status write cannot report itself; nor can an index past the end. */
    size_t st = index_of(p, "redisclusters");
    CU_ASSERT_EQUAL(plan_action(p, st)->kind, PLAN_UPDATE_STATUS);
    plan_t *f = plan_write_failed(w.rc, p, st, 422, "Invalid", "status.phase: bad", T2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(plan_action_count(f), 0);
    CU_ASSERT_EQUAL(plan_event_count(f), 0);
    plan_destroy(&f);
    f = plan_write_failed(w.rc, p, 99, 422, "Invalid", "x", T2);
    CU_ASSERT_EQUAL(plan_action_count(f), 0);
    plan_destroy(&f);
    /* NULL reason and message are fine. */
    f = plan_write_failed(w.rc, p, 0, 403, NULL, NULL, T2);
    CU_ASSERT_STRING_EQUAL(str_at(cond(f, "Degraded"), "reason"), "WriteFailed");
    CU_ASSERT(text_contains(str_at(cond(f, "Degraded"), "message"), "403 error: (no message)"));
    plan_destroy(&f);
    plan_destroy(&p);
    /* An OwnerConflict already degraded: the failure comes first, the conflict stays. */
    char text[4096];
    snprintf(text, sizeof(text), USER_SVC, NO_REFS);
    w.svc = parse(text);
    p = run(&w, T1);
    f = plan_write_failed(w.rc, p, index_of(p, "statefulsets"), 403, "Forbidden", "no", T2);
    const char *m = str_at(cond(f, "Degraded"), "message");
    CU_ASSERT_STRING_EQUAL(str_at(cond(f, "Degraded"), "reason"), "Forbidden");
    CU_ASSERT(
        text_contains(m, "cannot create StatefulSet default/cache: 403 Forbidden: no; Service default/cache exists"));
    plan_destroy(&f);
    plan_destroy(&p);
    /* A RedisCluster that cannot be addressed gives an empty plan, not a crash. */
    json_object *bad = parse("{\"metadata\":{}}");
    p = run(&w, T1);
    f = plan_write_failed(bad, p, 0, 403, "Forbidden", "no", T2);
    CU_ASSERT_PTR_NOT_NULL(f);
    CU_ASSERT_EQUAL(plan_action_count(f), 0);
    plan_destroy(&f);
    plan_destroy(&p);
    json_object_put(bad);
    world_free(&w);
}

/* ---- Malformed input --------------------------------------------------------------------- */

static void test_malformed_input_never_crashes(void)
{
    static const char *const rcs[] = {
        "\"just a string\"",
        "[1,2,3]",
        "42",
        "{}",
        "{\"metadata\":\"x\"}",
        "{\"metadata\":{}}",
        "{\"metadata\":{\"name\":5,\"namespace\":\"default\"}}",
        "{\"metadata\":{\"name\":\"\",\"namespace\":\"default\"}}",
        "{\"metadata\":{\"name\":\"cache\"}}",
        "{\"metadata\":{\"name\":\"cache\",\"namespace\":null}}",
    };
    for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++) {
        json_object *rc = parse(rcs[i]);
        plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_PTR_NOT_NULL(plan_error(p));
        CU_ASSERT_EQUAL(plan_action_count(p), 0);
        CU_ASSERT_EQUAL(plan_event_count(p), 0);
        CU_ASSERT_PTR_NULL(plan_status(p));
        CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
        json_object *j = plan_to_json(p);
        CU_ASSERT_PTR_NOT_NULL(j);
        json_object_put(j);
        plan_destroy(&p);
        json_object_put(rc);
    }
    plan_t *p = plan_compute(NULL, NULL, NULL, NULL, T1);
    CU_ASSERT(text_contains(plan_error(p), "not a JSON object"));
    plan_destroy(&p);

    /* Addressable but broken everywhere else: planned as far as it can be. */
    static const char *const odd[] = {
        "{\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"u\",\"finalizers\":\"x\","
        "\"generation\":\"1\",\"resourceVersion\":7},\"spec\":{\"size\":3,\"image\":\"redis\"},\"status\":\"bad\"}",
        "{\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"u\",\"finalizers\":[1,null,{}]},"
        "\"spec\":{\"size\":3,\"image\":\"redis\"},\"status\":{\"conditions\":[5,{\"type\":7},null,{\"type\":\"Ready\","
        "\"status\":{}}],\"phase\":[]}}",
        "{\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"u\",\"deletionTimestamp\":null},"
        "\"spec\":{\"size\":3,\"image\":\"redis\",\"config\":null,\"storage\":null}}",
    };
    static const char *const children[] = {
        "[]", "\"x\"", "{\"metadata\":[],\"spec\":\"x\",\"status\":5}",
        "{\"spec\":{\"replicas\":\"3\",\"selector\":5,\"volumeClaimTemplates\":{}},"
        "\"status\":{\"readyReplicas\":\"3\"}}",
        "{\"metadata\":{\"ownerReferences\":[{\"controller\":\"yes\",\"uid\":5}]},\"data\":{\"redis.conf\":7},"
        "\"spec\":{\"ports\":[{\"name\":5}],\"template\":{\"spec\":{\"containers\":[{\"name\":\"redis\"}]}}}}",
    };
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        for (size_t k = 0; k < sizeof(children) / sizeof(children[0]); k++) {
            json_object *rc = parse(odd[i]), *child = parse(children[k]);
            plan_t *q = plan_compute(rc, child, child, child, T1);
            CU_ASSERT_PTR_NOT_NULL_FATAL(q);
            CU_ASSERT_PTR_NULL(plan_error(q));
            CU_ASSERT_PTR_NOT_NULL(plan_phase(q));
            CU_ASSERT_EQUAL(count_kind(q, PLAN_ADD_FINALIZER), 1);
            json_object *j = plan_to_json(q);
            CU_ASSERT_PTR_NOT_NULL(j);
            json_object_put(j);
            plan_destroy(&q);
            json_object_put(child);
            json_object_put(rc);
        }
    }
    plan_destroy(NULL);
}

static void test_hostile_names_stay_in_their_path_segment(void)
{
    json_object *rc = rc_new(SPEC3, 1);
    set_at(rc, "metadata name", "\"a/../b?x=1\"");
    set_at(rc, "metadata deletionTimestamp", "\"2024-05-01T12:05:00Z\"");
    plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
    CU_ASSERT_EQUAL_FATAL(plan_action_count(p), 2);
    CU_ASSERT_STRING_EQUAL(plan_action(p, 1)->path,
                           "/apis/cache.example.com/v1/namespaces/default/redisclusters/a%2F..%2Fb%3Fx%3D1");
    plan_destroy(&p);
    json_object_put(rc);
}

/* ---- Comparison and quantities ---------------------------------------------------------- */

/* With o's path set to value, d is no longer a subset of o, and where (reset after)
 * says want (NULL: not looked at). */
static void assert_not_subset(const json_object *d, json_object *o, const char *path, const char *value,
                              buf_t *where, const char *want)
{
    set_at(o, path, value);
    CU_ASSERT_EQUAL(plan_json_subset(d, o, where), 0);
    if (want)
        CU_ASSERT_STRING_EQUAL(buf_str(where), want);
    buf_reset(where);
}

static void test_subset_rules(void)
{
    json_object *d = parse("{\"a\":1,\"l\":[\"x\",\"y\"],\"items\":[{\"name\":\"n1\",\"v\":true},"
                           "{\"name\":\"n2\",\"v\":2}],\"resources\":{\"requests\":{\"memory\":\"1Gi\"}}}");
    json_object *o = parse("{\"a\":1.0,\"extra\":0,\"l\":[\"x\",\"y\"],\"items\":[{\"name\":\"n2\",\"v\":2,\"more\":1},"
                           "{\"name\":\"other\"},{\"name\":\"n1\",\"v\":true}],"
                           "\"resources\":{\"requests\":{\"memory\":\"1073741824\"}}}");
    buf_t where;
    buf_init(&where, 0);
    CU_ASSERT_EQUAL(plan_json_subset(d, o, &where), 1);
    CU_ASSERT_EQUAL(where.len, 0);
    /* Positional lists must match in length and order. */
    assert_not_subset(d, o, "l", "[\"y\",\"x\"]", &where, "l[0]: want \"x\", have \"y\"");
    assert_not_subset(d, o, "l", "[\"x\",\"y\",\"z\"]", &where, "l: want 2 elements, have 3");
    set_at(o, "l", "[\"x\",\"y\"]");
    /* Keyed lists: a missing key is a difference. */
    assert_not_subset(d, o, "items", "[{\"name\":\"n1\",\"v\":true}]", &where, "items[n2]: missing");
    assert_not_subset(d, o, "items", "[{\"name\":\"n1\",\"v\":false},{\"name\":\"n2\",\"v\":2}]", &where,
                      "items[n1].v: want true");
    set_at(o, "items", "[{\"name\":\"n1\",\"v\":true},{\"name\":\"n2\",\"v\":2}]");
    /* Quantities only under requests/limits. */
    assert_not_subset(d, o, "resources requests memory", "\"1Mi\"", &where, NULL);
    set_at(o, "resources requests memory", "\"1024Mi\"");
    CU_ASSERT_EQUAL(plan_json_subset(d, o, NULL), 1);
    json_object *d2 = parse("{\"label\":\"1Gi\"}"), *o2 = parse("{\"label\":\"1024Mi\"}");
    CU_ASSERT_EQUAL(plan_json_subset(d2, o2, NULL), 0);
    /* Types. */
    assert_not_subset(d, o, "a", "\"1\"", &where, "a: want a number, have string");
    CU_ASSERT_EQUAL(plan_json_subset(d, NULL, NULL), 0);
    CU_ASSERT_EQUAL(plan_json_subset(NULL, NULL, NULL), 1);
    buf_free(&where);
    json_object_put(d);
    json_object_put(o);
    json_object_put(d2);
    json_object_put(o2);
}

static void test_quantities(void)
{
    CU_ASSERT(render_quantity_equal("1Gi", "1024Mi"));
    CU_ASSERT(render_quantity_equal("1Gi", "1073741824"));
    CU_ASSERT(render_quantity_equal("500m", "0.5"));
    CU_ASSERT(render_quantity_equal("1", "1000m"));
    CU_ASSERT(render_quantity_equal("1k", "1e3"));
    CU_ASSERT(render_quantity_equal("1M", "1000k"));
    CU_ASSERT(render_quantity_equal("0.5Gi", "512Mi"));
    CU_ASSERT(render_quantity_equal("1Ti", "1024Gi"));
    CU_ASSERT(!render_quantity_equal("1Gi", "1G"));
    CU_ASSERT(!render_quantity_equal("100m", "1"));
    CU_ASSERT(!render_quantity_equal("abc", "abd"));
    CU_ASSERT(render_quantity_equal("abc", "abc"));
    __int128 n = 0;
    CU_ASSERT_EQUAL(render_quantity_nano("10GB", &n), -1);
    CU_ASSERT_EQUAL(render_quantity_nano("", &n), -1);
    CU_ASSERT_EQUAL(render_quantity_nano("Gi", &n), -1);
    CU_ASSERT_EQUAL(render_quantity_nano("1e", &n), -1);
    CU_ASSERT_EQUAL(render_quantity_nano("99999999999999999999999999999999Ei", &n), -1);
    CU_ASSERT_EQUAL(render_quantity_nano("1n", &n), 0);
    CU_ASSERT(n == 1);
    CU_ASSERT_EQUAL(render_quantity_nano("0.1n", &n), 0);
    CU_ASSERT(n == 1); /* rounded up, as the API server does */
    CU_ASSERT_EQUAL(render_quantity_nano("-2", &n), 0);
    CU_ASSERT(n == -2000000000);
}

static void test_plan_to_json(void)
{
    world_t w;
    world_init(&w, SPEC3, 0);
    plan_t *p = run(&w, T1);
    json_object *j = plan_to_json(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(json_object_array_length(at(j, "actions")), 6);
    CU_ASSERT_STRING_EQUAL(str_at(j, "actions 0 kind"), "addFinalizer");
    CU_ASSERT_STRING_EQUAL(str_at(j, "actions 1 kind"), "create");
    CU_ASSERT_STRING_EQUAL(str_at(j, "actions 1 method"), "POST");
    CU_ASSERT_STRING_EQUAL(str_at(j, "actions 1 contentType"), "application/json");
    CU_ASSERT_STRING_EQUAL(str_at(j, "actions 3 body kind"), "StatefulSet");
    CU_ASSERT_STRING_EQUAL(str_at(j, "actions 4 body kind"), "PodDisruptionBudget");
    CU_ASSERT_STRING_EQUAL(str_at(j, "actions 5 kind"), "updateStatus");
    CU_ASSERT_STRING_EQUAL(str_at(j, "events 0 reason"), "Created");
    CU_ASSERT_EQUAL(int_at(j, "events 0 action"), 1);
    CU_ASSERT_STRING_EQUAL(str_at(j, "status phase"), "Pending");
    CU_ASSERT_EQUAL(int_at(j, "requeueAfterNs"), 10 * NS_PER_SEC);
    CU_ASSERT(json_object_is_type(at(j, "error"), json_type_null) || !at(j, "error"));
    json_object_put(j);
    CU_ASSERT_PTR_NULL(plan_action(p, 6));
    CU_ASSERT_PTR_NULL(plan_event(p, 4));
    CU_ASSERT_STRING_EQUAL(plan_action_kind_name(PLAN_REMOVE_FINALIZER), "removeFinalizer");
    plan_destroy(&p);
    world_free(&w);
}

static void test_inputs_are_not_modified(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    set_at(w.rc, "spec storage size", "\"2Gi\"");
    set_at(w.rc, "spec size", "5");
    const char *before[4];
    char *saved[4];
    json_object *objs[4] = {w.rc, w.cm, w.svc, w.sts};
    for (int i = 0; i < 4; i++) {
        before[i] = json_object_to_json_string_ext(objs[i], JSON_C_TO_STRING_PLAIN);
        saved[i] = strdup(before[i]);
    }
    plan_t *p = run(&w, T2);
    CU_ASSERT(plan_action_count(p) > 0);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(objs[i], JSON_C_TO_STRING_PLAIN), saved[i]);
        free(saved[i]);
    }
    plan_destroy(&p);
    world_free(&w);
}


/* ---- Diagnosis, storage class, taking a child back, Scaling ------------------------------ */

#define POD_OLD(name, status)                                                                                      \
    "{\"metadata\":{\"name\":\"" name "\",\"creationTimestamp\":\"" T1_STR "\"},\"status\":" status "}"
#define POD_YOUNG(name, status)                                                                                    \
    "{\"metadata\":{\"name\":\"" name "\",\"creationTimestamp\":\"2024-05-01T12:01:50Z\"},\"status\":" status "}"
#define READY "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}"
#define WAITING(list, reason, msg)                                                                                 \
    "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],\"" list "\":[{\"name\":\"redis\",\"state\":{"    \
    "\"waiting\":{\"reason\":\"" reason "\",\"message\":\"" msg "\"}}}]}"
#define UNSCHED                                                                                                    \
    "{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\","               \
    "\"message\":\"0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims\"}]}"
#define EV(type, reason, at, msg)                                                                                  \
    "{\"type\":\"" type "\",\"reason\":\"" reason "\",\"lastTimestamp\":\"" at "\",\"message\":\"" msg "\"}"
#define QUOTA_MSG "create Pod cache-0 in StatefulSet cache failed error: pods cache-0 is forbidden: exceeded quota: q"

typedef struct {
    const char *name;
    int ready;              /* readyReplicas of the StatefulSet (spec.size is 3) */
    const char *pods, *sts_events, *pod_events;
    const char *reason;     /* the diagnosed reason, or NULL for none */
    const char *message;    /* a part of the Degraded message */
} diag_row_t;

static const diag_row_t diag_rows[] = {
    {"quota: FailedCreate after the last SuccessfulCreate", 0, "[]",
     "[" EV("Normal", "SuccessfulCreate", "2024-05-01T11:00:00Z", "create Pod cache-0 ok") ","
         EV("Warning", "FailedCreate", "2024-05-01T11:59:00Z", QUOTA_MSG) "]", NULL, "FailedCreate",
     "StatefulSet default/cache cannot create its pods: " QUOTA_MSG},
    {"FailedCreate older than a SuccessfulCreate is history", 0, "[]",
     "[" EV("Warning", "FailedCreate", "2024-05-01T11:00:00Z", QUOTA_MSG) ","
         EV("Normal", "SuccessfulCreate", "2024-05-01T11:59:00Z", "create Pod cache-0 ok") "]", NULL, NULL, NULL},
    {"FailedCreate while every pod exists is not the cause", 0,
     "[" POD_OLD("cache-0", "{}") "," POD_OLD("cache-1", "{}") "," POD_OLD("cache-2", "{}") "]",
     "[" EV("Warning", "FailedCreate", "2024-05-01T11:59:00Z", QUOTA_MSG) "]", NULL, NULL, NULL},
    {"ErrImagePull quotes the kubelet", 0,
     "[" POD_OLD("cache-0", WAITING("containerStatuses", "ErrImagePull", "pull access denied for nope")) "]",
     "[]", "[]", "ErrImagePull", "pod default/cache-0, container redis: ErrImagePull: pull access denied for nope"},
    {"ImagePullBackOff of an init container", 0,
     "[" POD_OLD("cache-0", WAITING("initContainerStatuses", "ImagePullBackOff", "Back-off pulling image")) "]",
     "[]", "[]",
     "ImagePullBackOff", "Back-off pulling image"},
    {"CrashLoopBackOff, even on a young pod: how it ended, not the back-off", 1,
     "[" POD_OLD("cache-0", READY) ","
     "{\"metadata\":{\"name\":\"cache-1\",\"creationTimestamp\":\"2024-05-01T12:01:50Z\"},"
     "\"status\":{\"containerStatuses\":[{\"name\":\"redis\",\"restartCount\":4,\"state\":{\"waiting\":{\"reason\":"
     "\"CrashLoopBackOff\",\"message\":\"back-off 40s restarting failed container\"}},\"lastState\":{\"terminated\":"
     "{\"exitCode\":1,\"reason\":\"Error\"}}}]}}]",
     "[]", "[]", "CrashLoopBackOff",
     "pod default/cache-1, container redis: CrashLoopBackOff: it keeps exiting (last exit code 1, Error)"},
    {"a waiting reason that explains nothing", 0,
     "[" POD_OLD("cache-0", WAITING("containerStatuses", "ContainerCreating", "")) "]", "[]", "[]", NULL, NULL},
    {"FailedScheduling on an old pod quotes the scheduler", 0, "[" POD_OLD("cache-0", UNSCHED) "]", "[]", "[]",
     "FailedScheduling", "pod default/cache-0 cannot be scheduled: 0/3 nodes are available: pod has unbound immediate"},
    {"FailedScheduling on a pod 10 s old is not yet a cause", 0, "[" POD_YOUNG("cache-0", UNSCHED) "]", "[]", "[]",
     NULL, NULL},
    {"the pod's latest Warning Event", 0, "[" POD_OLD("cache-0", "{}") "]", "[]",
     "[" EV("Warning", "FailedMount", "2024-05-01T11:58:00Z", "old mount") ","
         EV("Normal", "Pulled", "2024-05-01T11:59:30Z", "pulled") ","
         EV("Warning", "FailedMount", "2024-05-01T11:59:00Z", "MountVolume.SetUp failed for volume config") "]",
     "FailedMount", "pod default/cache-0: FailedMount: MountVolume.SetUp failed for volume config"},
    {"a Warning Event whose reason cannot be a condition reason", 0, "[" POD_OLD("cache-0", "{}") "]", "[]",
     "[" EV("Warning", "bad reason!", "2024-05-01T11:59:00Z", "x") "]", NULL, NULL},
    {"ready pods are skipped", 2,
     "[" POD_OLD("cache-0", READY) "," POD_OLD("cache-1", READY) ","
     POD_OLD("cache-2", WAITING("containerStatuses", "CrashLoopBackOff", "boom")) "]",
     "[]", "[]", "CrashLoopBackOff", "pod default/cache-2"},
    {"all ready: nothing is diagnosed, whatever the Events", 3,
     "[" POD_OLD("cache-0", READY) "," POD_OLD("cache-1", READY) "," POD_OLD("cache-2", READY) "]",
     "[" EV("Warning", "FailedCreate", "2024-05-01T11:59:00Z", QUOTA_MSG) "]", NULL, NULL, NULL},
    {"garbage instead of lists", 0, "{\"items\":1}", "\"x\"", "[1,null,{\"type\":7}]", NULL, NULL},
};

static void diag_row(const diag_row_t *r)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    sts_settle(&w, r->ready);
    /* The status tells the new counts a window before the diagnosis is asked for. */
    plan_t *told = run(&w, T2);
    perform(&w, told);
    plan_destroy(&told);
    json_object *pods = parse(r->pods), *sev = r->sts_events ? parse(r->sts_events) : NULL,
                *pev = r->pod_events ? parse(r->pod_events) : NULL;
    plan_observed_t more = {.pods = pods, .sts_events = sev, .pod_events = pev};
    plan_t *p = plan_compute_children(w.rc, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, &more, T3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(count_writes(p), 0);
    json_object *deg = cond(p, "Degraded"), *ready = cond(p, "Ready");
    if (r->reason) {
        if (strcmp(str_at(deg, "reason"), r->reason) || !text_contains(str_at(deg, "message"), r->message))
            fprintf(stderr, "\n  row \"%s\": Degraded %s: %s\n", r->name, str_at(deg, "reason"),
                    str_at(deg, "message"));
        CU_ASSERT_STRING_EQUAL(str_at(deg, "status"), "True");
        CU_ASSERT_STRING_EQUAL(str_at(deg, "reason"), r->reason);
        CU_ASSERT(text_contains(str_at(deg, "message"), r->message));
        CU_ASSERT_STRING_EQUAL(str_at(ready, "reason"), r->reason);
        CU_ASSERT(text_contains(str_at(ready, "message"), r->message));
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
        const plan_event_t *e = find_event(p, r->reason);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_STRING_EQUAL(e->type, "Warning");
    } else {
        if (strcmp(str_at(deg, "status"), "False"))
            fprintf(stderr, "\n  row \"%s\": Degraded %s: %s\n", r->name, str_at(deg, "reason"),
                    str_at(deg, "message"));
        CU_ASSERT_STRING_EQUAL(str_at(deg, "status"), "False");
        CU_ASSERT_STRING_EQUAL(str_at(ready, "reason"), r->ready == 3 ? "AllReplicasReady" : "ReplicasNotReady");
    }
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), r->ready < 3);
    /* A worker has the pods from the cache and reads only the Events plan_diagnosis_reads
     * names: that finds the same cause (or none) as reading everything. */
    plan_diag_reads_t need;
    plan_diagnosis_reads(w.sts, pods, T3, &need);
    plan_observed_t less = {.pods = pods, .sts_events = need.sts_events ? sev : NULL,
                            .pod_events = need.pod ? pev : NULL};
    plan_t *q = plan_compute_children(w.rc, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, &less, T3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    json_object *qdeg = cond(q, "Degraded");
    const char *qr = str_at(qdeg, "reason"), *ar = str_at(deg, "reason"), *qm = str_at(qdeg, "message"),
               *am = str_at(deg, "message");
    if (strcmp(qr ? qr : "", ar ? ar : ""))
        fprintf(stderr, "\n  row \"%s\": with the reads asked for (events %d, pod %s): %s, with all: %s\n", r->name,
                need.sts_events, need.pod ? need.pod : "-", qr ? qr : "-", ar ? ar : "-");
    CU_ASSERT_STRING_EQUAL(qr ? qr : "", ar ? ar : "");
    CU_ASSERT_STRING_EQUAL(qm ? qm : "", am ? am : "");
    plan_destroy(&q);
    /* The same cause again writes and records nothing. */
    perform(&w, p);
    plan_destroy(&p);
    p = plan_compute_children(w.rc, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, &more, T3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_EQUAL(plan_event_count(p), 0);
    plan_destroy(&p);
    json_object_put(pods);
    json_object_put(sev);
    json_object_put(pev);
    world_free(&w);
}

static void test_diagnosis_table(void)
{
    for (size_t i = 0; i < sizeof(diag_rows) / sizeof(diag_rows[0]); i++)
        diag_row(&diag_rows[i]);
}

/* What a worker, which has the pods from the cache, still reads for a diagnosis: the
 * StatefulSet's Events when its controller would be creating a pod (a missing ordinal
 * before any pod not Ready), a pod's Events when it is old and its status says nothing. */
static void test_diagnosis_reads_from_cached_pods(void)
{
    static const struct {
        const char *name, *pods;
        int sts_events;
        const char *pod;
    } rows[] = {
        {"no pod yet", "[]", 1, NULL},
        {"the first pod starting", "[" POD_YOUNG("cache-0", "{}") "]", 0, NULL},
        {"the next pod not made", "[" POD_OLD("cache-0", READY) "]", 1, NULL},
        {"all Ready", "[" POD_OLD("cache-0", READY) "," POD_OLD("cache-1", READY) "," POD_OLD("cache-2", READY) "]", 0,
         NULL},
        {"a lower ordinal missing, a higher one not Ready", "[" POD_OLD("cache-1", "{}") "]", 1, "cache-1"},
        {"an old pod whose status says nothing", "[" POD_OLD("cache-0", "{}") "]", 0, "cache-0"},
        {"an old pod unschedulable", "[" POD_OLD("cache-0", UNSCHED) "]", 0, NULL},
        {"an old pod's container waiting",
         "[" POD_OLD("cache-0", WAITING("containerStatuses", "ErrImagePull", "no")) "]",
         0, NULL},
        {"a pod being deleted", "[{\"metadata\":{\"name\":\"cache-0\",\"deletionTimestamp\":\"" T1_STR "\"},"
         "\"status\":" READY "}]", 1, NULL},
        {"Ready, then one not Ready, then one missing", "[" POD_OLD("cache-0", READY) "," POD_OLD("cache-1", "{}") "]",
         0, "cache-1"},
    };
    json_object *sts = parse("{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"replicas\":3}}");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_object *pods = parse(rows[i].pods);
        plan_diag_reads_t need;
        plan_diagnosis_reads(sts, pods, T3, &need);
        if (need.sts_events != rows[i].sts_events || strcmp(need.pod ? need.pod : "-", rows[i].pod ? rows[i].pod : "-"))
            fprintf(stderr, "\n  row \"%s\": events %d, pod %s\n", rows[i].name, need.sts_events,
                    need.pod ? need.pod : "-");
        CU_ASSERT_EQUAL(need.sts_events, rows[i].sts_events);
        CU_ASSERT_STRING_EQUAL(need.pod ? need.pod : "-", rows[i].pod ? rows[i].pod : "-");
        json_object_put(pods);
    }
    json_object_put(sts);
}

/* A missing pod is read for only when the StatefulSet controller could have made it
 * 10 s ago: since the StatefulSet's creation (ordinal 0), since the pod before it turned
 * Ready (the others), so an ordinary rollout's steps read nothing. Now is T3 (12:02:00). */
#define READY_SINCE(t) "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"" t "\"}]}"
static void test_diagnosis_reads_wait_for_the_controller(void)
{
    static const struct {
        const char *name, *sts_created, *pods;
        int sts_events;
    } rows[] = {
        {"no pod, StatefulSet 5 s old", "2024-05-01T12:01:55Z", "[]", 0},
        {"no pod, StatefulSet 15 s old", "2024-05-01T12:01:45Z", "[]", 1},
        {"the next pod missing, the one before Ready 5 s ago", T1_STR,
         "[" POD_OLD("cache-0", READY_SINCE("2024-05-01T12:01:55Z")) "]", 0},
        {"the next pod missing, the one before Ready 15 s ago", T1_STR,
         "[" POD_OLD("cache-0", READY_SINCE("2024-05-01T12:01:45Z")) "]", 1},
        {"the last Ready pod counts, not the first", T1_STR,
         "[" POD_OLD("cache-0", READY_SINCE("2024-05-01T12:01:00Z")) ","
         POD_OLD("cache-1", READY_SINCE("2024-05-01T12:01:58Z")) "]",
         0},
        {"a pod being deleted is read for at once", "2024-05-01T12:01:59Z",
         "[{\"metadata\":{\"name\":\"cache-0\",\"deletionTimestamp\":\"" T3_STR "\"},\"status\":" READY "}]", 1},
        {"a Ready time not known counts as long ago", "2024-05-01T12:01:59Z", "[" POD_OLD("cache-0", READY) "]", 1},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"cache\",\"creationTimestamp\":\"%s\"},\"spec\":{\"replicas\":3}}",
                 rows[i].sts_created);
        json_object *sts = parse(text), *pods = parse(rows[i].pods);
        plan_diag_reads_t need;
        plan_diagnosis_reads(sts, pods, T3, &need);
        if (need.sts_events != rows[i].sts_events)
            fprintf(stderr, "\n  row \"%s\": events %d\n", rows[i].name, need.sts_events);
        CU_ASSERT_EQUAL(need.sts_events, rows[i].sts_events);
        json_object_put(pods);
        json_object_put(sts);
    }
}

/* Who asks for a diagnosis, which pod is explained, and a healthy plan never asks. */
static void test_diagnosis_is_asked_only_when_not_running(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    plan_t *p = run(&w, T1); /* creating: nothing to read yet */
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), 0);
    plan_destroy(&p);
    converge(&w, T1);
    p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), 0);
    CU_ASSERT_STRING_EQUAL(plan_pod_selector(p), "app.kubernetes.io/name=redis,app.kubernetes.io/instance=cache");
    plan_destroy(&p);
    sts_settle(&w, 1);
    /* Counts the status does not tell yet (3/3 written, 1 Ready now): the cluster moves,
     * no diagnosis; the plan writes them, and once they are told one is asked for. */
    p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), 0);
    CU_ASSERT_PTR_NOT_NULL(plan_status(p));
    perform(&w, p);
    plan_destroy(&p);
    p = run(&w, T2 + NS_PER_SEC);
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), 1);
    plan_destroy(&p);
    /* Told, then one more pod Ready: moving again. */
    sts_settle(&w, 2);
    p = run(&w, T2 + 2 * NS_PER_SEC);
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), 0);
    plan_destroy(&p);
    set_at(w.rc, "spec size", "0");
    p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Failed");
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), 0);
    plan_destroy(&p);
    json_object *pods = parse("[" POD_OLD("cache-0", READY) ",{\"metadata\":{}}," POD_OLD("cache-1", "{}") "]");
    CU_ASSERT_STRING_EQUAL(plan_pod_to_explain(pods), "cache-1");
    json_object_put(pods);
    pods = parse("[" POD_OLD("cache-0", READY) "]");
    CU_ASSERT_PTR_NULL(plan_pod_to_explain(pods));
    CU_ASSERT_PTR_NULL(plan_pod_to_explain(NULL));
    json_object_put(pods);
    world_free(&w);
}

/* The StorageClass is looked up when the StatefulSet is created and while the cluster is
 * not Running. Missing, the StatefulSet is created all the same (static PersistentVolumes
 * of that class name may bind), Degraded names the class and the ways out; once the
 * cluster runs, nothing is looked up and Degraded clears. */
static void test_storage_class_checked_before_creating(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    plan_t *p = run(&w, T1);
    CU_ASSERT_STRING_EQUAL(plan_storage_class_to_check(p), "standard");
    plan_destroy(&p);
    plan_observed_t more = {.storage_class_missing = 1};
    p = plan_compute_children(w.rc, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_PTR_NOT_NULL(find_action(p, PLAN_CREATE, "statefulsets"));
    CU_ASSERT_PTR_NOT_NULL(find_write(p, "configmaps"));
    json_object *deg = cond(p, "Degraded");
    CU_ASSERT_STRING_EQUAL(str_at(deg, "reason"), "StorageClassNotFound");
    ASSERT_TEXT_HAS(str_at(deg, "message"), "StorageClass \"standard\" (spec.storage.storageClass) does not exist",
                    "bind only to PersistentVolumes created with that storageClassName");
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), PLAN_REQUEUE_NOT_READY_NS);
    CU_ASSERT_PTR_NOT_NULL(find_event(p, "StorageClassNotFound"));
    perform(&w, p);
    plan_destroy(&p);
    /* Still not ready, still missing: looked up again; the status already says it (the
     * new StatefulSet changes nothing while Creating, plan.h CREATING). */
    p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(plan_storage_class_to_check(p), "standard");
    plan_destroy(&p);
    p = plan_compute_children(w.rc, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, &more, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "reason"), "StorageClassNotFound");
    CU_ASSERT_PTR_NULL(find_event(p, "StorageClassNotFound")); /* said once already */
    perform(&w, p);
    plan_destroy(&p);
    p = plan_compute_children(w.rc, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, &more, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    plan_destroy(&p);
    /* The claims bound to static volumes and the pods run: Running, no look-up, Degraded clears. */
    sts_settle(&w, 3);
    p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    CU_ASSERT_PTR_NULL(plan_storage_class_to_check(p));
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "False");
    perform(&w, p);
    plan_destroy(&p);
    p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0); /* and a resync of it writes nothing */
    plan_destroy(&p);
    world_free(&w);
    /* No class named: nothing to check. */
    world_init(&w, "{\"size\":1,\"image\":\"redis\"}", 1);
    p = run(&w, T1);
    CU_ASSERT_PTR_NULL(plan_storage_class_to_check(p));
    more.storage_class_missing = 1; /* and a stray flag changes nothing */
    plan_destroy(&p);
    p = plan_compute_children(w.rc, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, &more, T1);
    CU_ASSERT_PTR_NOT_NULL(find_action(p, PLAN_CREATE, "statefulsets"));
    plan_destroy(&p);
    world_free(&w);
}

/* The storage advice never leads to a mixed set. */
static void test_storage_change_advice(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    set_at(w.rc, "spec storage storageClass", "\"fast\"");
    plan_t *p = run(&w, T2);
    const char *m = str_at(cond(p, "Degraded"), "message");
    ASSERT_TEXT_HAS(m, "set spec.storage back to what the StatefulSet has", "create a new RedisCluster");
    ASSERT_TEXT_LACKS(m, "recreate the StatefulSet", "delete the StatefulSet");
    plan_destroy(&p);
    world_free(&w);
}

/* kubectl patch made the Service's only port 7000 under our port's name: the apply is
 * refused (422), and the take-back plan replaces it, or recreates it. */
static void test_take_back_table(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    set_at(w.svc, "spec ports", "[{\"name\":\"redis\",\"port\":7000,\"targetPort\":6379,\"protocol\":\"TCP\"}]");
    set_at(w.svc, "metadata managedFields", "[{\"manager\":\"kubectl-patch\"}]");
    plan_t *p = run(&w, T2);
    size_t i = index_of(p, "services");
    CU_ASSERT_EQUAL_FATAL(plan_action(p, i)->kind, PLAN_APPLY);
    const char *msg = "spec.ports[1].name: Duplicate value: \"redis\"";

    plan_t *tb = plan_take_back(p, i, w.svc, 0, 422, "Invalid", msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
    CU_ASSERT_EQUAL_FATAL(plan_action_count(tb), 1);
    const plan_action_t *a = plan_action(tb, 0);
    CU_ASSERT_EQUAL(a->kind, PLAN_REPLACE);
    CU_ASSERT_STRING_EQUAL(a->method, "PUT");
    CU_ASSERT_STRING_EQUAL(a->content_type, "application/json");
    CU_ASSERT_STRING_EQUAL(a->path, "/api/v1/namespaces/default/services/cache?fieldManager=rediscluster-operator");
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "metadata resourceVersion"), "555");
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "metadata labels team"), "payments"); /* others' kept */
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "spec ipFamilyPolicy"), "SingleStack");
    CU_ASSERT_PTR_NULL(at(a->body, "metadata managedFields"));
    CU_ASSERT_PTR_NULL(at(a->body, "status"));
    CU_ASSERT_EQUAL(json_object_array_length(at(a->body, "spec ports")), 1);
    CU_ASSERT_EQUAL(int_at(a->body, "spec ports 0 port"), 6379);
    CU_ASSERT_EQUAL(plan_event_count(tb), 1);
    CU_ASSERT_STRING_EQUAL(plan_event(tb, 0)->reason, "DriftRepaired");
    CU_ASSERT_STRING_EQUAL(plan_event(tb, 0)->type, "Normal");
    ASSERT_TEXT_HAS(plan_event(tb, 0)->message, "Took back Service default/cache",
                    "422 Invalid: spec.ports[1].name: Duplicate value");
    /* Performed, the Service matches: the next plan writes nothing. */
    perform(&w, tb);
    plan_destroy(&tb);
    plan_destroy(&p);
    p = run(&w, T2);
    CU_ASSERT_EQUAL(count_writes(p), 0);
    plan_destroy(&p);

    /* Recreate: DELETE with preconditions, then POST of the desired Service. */
    set_at(w.svc, "spec ports", "[{\"name\":\"redis\",\"port\":7000,\"targetPort\":6379,\"protocol\":\"TCP\"}]");
    p = run(&w, T2);
    i = index_of(p, "services");
    tb = plan_take_back(p, i, w.svc, 1, 422, "Invalid", "put refused");
    CU_ASSERT_EQUAL_FATAL(plan_action_count(tb), 2);
    CU_ASSERT_EQUAL(plan_action(tb, 0)->kind, PLAN_DELETE);
    CU_ASSERT_STRING_EQUAL(plan_action(tb, 0)->method, "DELETE");
    CU_ASSERT_STRING_EQUAL(plan_action(tb, 0)->path, "/api/v1/namespaces/default/services/cache");
    CU_ASSERT_STRING_EQUAL(str_at(plan_action(tb, 0)->body, "preconditions uid"), "child-uid");
    CU_ASSERT_STRING_EQUAL(str_at(plan_action(tb, 0)->body, "preconditions resourceVersion"), "555");
    CU_ASSERT_EQUAL(plan_action(tb, 1)->kind, PLAN_CREATE);
    CU_ASSERT_EQUAL(int_at(plan_action(tb, 1)->body, "spec ports 0 port"), 6379);
    CU_ASSERT_STRING_EQUAL(plan_event(tb, 0)->reason, "Recreated");
    CU_ASSERT_STRING_EQUAL(plan_event(tb, 0)->type, "Warning");
    CU_ASSERT_EQUAL(plan_event(tb, 0)->action, 1);
    plan_destroy(&tb);

    /* Nothing to take back: another action, no observed object, a recreate of anything
     * but the Service. */
    tb = plan_take_back(p, i, NULL, 0, 422, "Invalid", msg);
    CU_ASSERT_EQUAL(plan_action_count(tb), 0);
    plan_destroy(&tb);
    {
        world_t fresh; /* its plan: creates and a status write, no apply */
        world_init(&fresh, SPEC3, 1);
        plan_t *fp = run(&fresh, T1);
        for (size_t k = 0; k < plan_action_count(fp); k++) {
            CU_ASSERT_NOT_EQUAL(plan_action(fp, k)->kind, PLAN_APPLY);
            tb = plan_take_back(fp, k, w.svc, 0, 422, "Invalid", msg);
            CU_ASSERT_EQUAL(plan_action_count(tb), 0);
            plan_destroy(&tb);
        }
        plan_destroy(&fp);
        world_free(&fresh);
    }
    tb = plan_take_back(p, 99, w.svc, 0, 422, "Invalid", msg);
    CU_ASSERT_EQUAL(plan_action_count(tb), 0);
    plan_destroy(&tb);
    plan_destroy(&p);
    set_at(w.sts, "spec template spec containers 0 image", "\"redis:6\"");
    json_object_array_add(at(w.sts, "spec template spec containers"),
                          parse("{\"name\":\"sidecar\",\"image\":\"busybox\"}"));
    p = run(&w, T2);
    i = index_of(p, "statefulsets");
    tb = plan_take_back(p, i, w.sts, 1, 422, "Invalid", msg);
    CU_ASSERT_EQUAL(plan_action_count(tb), 0); /* never the StatefulSet's claims */
    plan_destroy(&tb);
    tb = plan_take_back(p, i, w.sts, 0, 422, "Invalid", msg);
    CU_ASSERT_EQUAL_FATAL(plan_action_count(tb), 1);
    a = plan_action(tb, 0);
    /* Keyed lists merged: our container fixed and keeping the server's defaults, the
     * sidecar kept. */
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "spec template spec containers 0 image"), "redis:7.2");
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "spec template spec containers 0 terminationMessagePath"),
                           "/dev/termination-log");
    CU_ASSERT_STRING_EQUAL(str_at(a->body, "spec template spec containers 1 name"), "sidecar");
    CU_ASSERT_PTR_NOT_NULL(at(a->body, "spec volumeClaimTemplates 0"));
    plan_destroy(&tb);
    plan_destroy(&p);
    world_free(&w);
}

/* A scale-up between two pods stays Scaling; a stable cluster losing a pod is Pending. */
static void test_scale_up_has_no_pending_flicker(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    converge(&w, T1);
    set_at(w.rc, "spec size", "5");
    set_at(w.rc, "metadata generation", "2");
    plan_t *p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Scaling");
    perform(&w, p);
    plan_destroy(&p);
    for (int ready = 3; ready < 5; ready++) {
        sts_settle(&w, ready); /* the controller settled on 5 replicas, some not ready yet */
        p = run(&w, T2);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Scaling");
        CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "reason"), "Scaling");
        CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "status"), "True");
        CU_ASSERT_EQUAL(count_writes(p), 0);
        perform(&w, p);
        plan_destroy(&p);
    }
    sts_settle(&w, 5);
    p = run(&w, T3);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    perform(&w, p);
    plan_destroy(&p);
    /* Running, then a pod is lost: Pending, not Scaling. */
    sts_settle(&w, 4);
    p = run(&w, T3);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Progressing"), "status"), "False");
    plan_destroy(&p);
    /* Scaling, but a cause found: Pending with the cause. */
    set_at(w.rc, "status phase", "\"Scaling\"");
    json_object *pods = parse("[" POD_OLD("cache-4", WAITING("containerStatuses", "CrashLoopBackOff", "boom")) "]");
    plan_observed_t more = {.pods = pods};
    p = plan_compute_children(w.rc, &(plan_children_t){w.cm, w.svc, w.sts, w.pdb}, &more, T3);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "reason"), "CrashLoopBackOff");
    plan_destroy(&p);
    /* Scaling observed, zero ready: Pending. */
    sts_settle(&w, 0);
    p = run(&w, T3);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    plan_destroy(&p);
    json_object_put(pods);
    world_free(&w);
}

/* The pod template passes Pod Security "restricted"; a StatefulSet made by an older
 * operator without it gets one apply (a rolling update), then nothing. */
static void test_pod_template_is_restricted(void)
{
    world_t w;
    world_init(&w, SPEC3, 1);
    plan_t *p = run(&w, T1);
    const plan_action_t *a = find_write(p, "statefulsets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    json_object *ps = at(a->body, "spec template spec securityContext"),
                *cs = at(a->body, "spec template spec containers 0 securityContext");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ps);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cs);
    CU_ASSERT(json_object_get_boolean(at(ps, "runAsNonRoot")));
    CU_ASSERT_EQUAL(int_at(ps, "runAsUser"), 999);
    CU_ASSERT_EQUAL(int_at(ps, "runAsGroup"), 999);
    CU_ASSERT_EQUAL(int_at(ps, "fsGroup"), 999);
    CU_ASSERT_STRING_EQUAL(str_at(ps, "seccompProfile type"), "RuntimeDefault");
    CU_ASSERT(json_object_is_type(at(cs, "allowPrivilegeEscalation"), json_type_boolean));
    CU_ASSERT(!json_object_get_boolean(at(cs, "allowPrivilegeEscalation")));
    CU_ASSERT_STRING_EQUAL(str_at(cs, "capabilities drop 0"), "ALL");
    CU_ASSERT_EQUAL(json_object_array_length(at(cs, "capabilities drop")), 1);
    CU_ASSERT(json_object_get_boolean(at(cs, "readOnlyRootFilesystem")));
    /* Only /data and the config are mounted: nothing else needs to be writable. */
    CU_ASSERT_EQUAL(json_object_array_length(at(a->body, "spec template spec containers 0 volumeMounts")), 2);
    plan_destroy(&p);
    converge(&w, T1);
    /* An older operator's StatefulSet: no securityContext. */
    set_at(w.sts, "spec template spec securityContext", "{}");
    json_object_object_del(at(w.sts, "spec template spec containers 0"), "securityContext");
    p = run(&w, T2);
    a = find_action(p, PLAN_APPLY, "statefulsets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT(text_contains(a->why, "securityContext"));
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Scaling"); /* a rolling update */
    perform(&w, p);
    plan_destroy(&p);
    sts_settle(&w, 3);
    p = run(&w, T3);
    CU_ASSERT_EQUAL(count_writes(p), 0);
    plan_destroy(&p);
    world_free(&w);
}

/* status.ready is "ready/size" (kubectl's READY column); a status written before it
 * existed gets it with one status write, then nothing. */
static void test_status_ready_string(void)
{
    world_t w;
    world_init(&w, SPEC3, 0);
    converge(&w, T1);
    plan_t *p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(str_at(plan_status(p), "ready"), "3/3");
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    plan_destroy(&p);
    /* Two of three ready. */
    sts_settle(&w, 2);
    p = run(&w, T2);
    CU_ASSERT_STRING_EQUAL(str_at(plan_status(p), "ready"), "2/3");
    perform(&w, p);
    plan_destroy(&p);
    sts_settle(&w, 3);
    p = run(&w, T2);
    perform(&w, p);
    plan_destroy(&p);
    /* The status of an older operator, without the field: written once. */
    json_object_object_del(at(w.rc, "status"), "ready");
    p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 1);
    CU_ASSERT_PTR_NOT_NULL(find_action(p, PLAN_UPDATE_STATUS, "redisclusters"));
    CU_ASSERT_EQUAL(plan_event_count(p), 0);
    perform(&w, p);
    plan_destroy(&p);
    p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    plan_destroy(&p);
    world_free(&w);
}

/* Children made by the operator of cache.example.com/v1alpha1 carry owner references in
 * that version: still ours, and no drift (no apply per child after the upgrade). Another
 * group with the same uid is drift. */
static void test_owner_reference_of_an_older_version(void)
{
    world_t w;
    world_init(&w, SPEC3, 0);
    converge(&w, T1);
    json_object *children[] = {w.cm, w.svc, w.sts};
    for (size_t i = 0; i < 3; i++)
        set_at(children[i], "metadata ownerReferences 0 apiVersion", "\"cache.example.com/v1alpha1\"");
    plan_t *p = run(&w, T2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "status"), "False");
    plan_destroy(&p);
    set_at(w.cm, "metadata ownerReferences 0 apiVersion", "\"other.example.com/v1\"");
    p = run(&w, T2);
    CU_ASSERT_PTR_NOT_NULL(find_write(p, "configmaps"));
    plan_destroy(&p);
    world_free(&w);
}


/* ---- Replication (plan.h REPLICATION; topology.h) --------------------------------------- */

#define SPEC_REPL "{\"size\":3,\"image\":\"redis\",\"mode\":\"Replication\"}"

/* Pods cache-0..2 at 10.0.0.1..3 with the role labels given ("" = none). */
static json_object *repl_pods(const char *l0, const char *l1, const char *l2)
{
    const char *lab[3] = {l0, l1, l2};
    json_object *arr = json_object_new_array();
    for (int i = 0; i < 3; i++) {
        char t[512];
        snprintf(t, sizeof(t),
                 "{\"metadata\":{\"name\":\"cache-%d\",\"labels\":{\"app.kubernetes.io/instance\":\"cache\"%s%s%s}},"
                 "\"status\":{\"podIP\":\"10.0.0.%d\"}}",
                 i, *lab[i] ? ",\"cache.example.com/role\":\"" : "", lab[i], *lab[i] ? "\"" : "", i + 1);
        json_object_array_add(arr, parse(t));
    }
    return arr;
}

/* An observation node: "pod ip reachable role masterHost masterPort linkUp offset". */
static json_object *obs_node(const char *spec)
{
    char pod[32], ip[32], reach[8], role[16], mh[32], mp[8], link[8], off[24];
    const char *p = spec;
    char *f[8] = {pod, ip, reach, role, mh, mp, link, off};
    size_t cap[8] = {sizeof(pod), sizeof(ip), sizeof(reach), sizeof(role), sizeof(mh), sizeof(mp), sizeof(link),
                     sizeof(off)};
    for (int i = 0; i < 8; i++) {
        size_t n = strcspn(p, " ");
        CU_ASSERT_FATAL(n < cap[i]);
        memcpy(f[i], p, n);
        f[i][n] = '\0';
        p += n + (p[n] == ' ');
    }
    return parsef("{\"pod\":\"%s\",\"ip\":\"%s\",\"reachable\":%s,\"role\":\"%s\",\"masterHost\":\"%s\","
                  "\"masterPort\":%s,\"linkUp\":%s,\"offset\":%s,\"lastOkAgoMs\":100,\"downSinceMs\":0}",
                  pod, ip, reach, strcmp(role, "-") ? role : "", strcmp(mh, "-") ? mh : "", mp, link, off);
}

static json_object *repl_obs(const char *n0, const char *n1, const char *n2)
{
    json_object *o = parse("{\"observedAt\":\"2024-05-01T12:00:00.000Z\",\"nodes\":[]}");
    const char *n[3] = {n0, n1, n2};
    for (int i = 0; i < 3; i++)
        if (n[i])
            json_object_array_add(at(o, "nodes"), obs_node(n[i]));
    return o;
}

/* The plan's Redis commands as "pod@ip ARGV...;" and its label patches as "pod=role;". */
static void redis_actions(const plan_t *p, char *cmds, size_t cl, char *labels, size_t ll)
{
    cmds[0] = labels[0] = '\0';
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        size_t n;
        if (a->kind == PLAN_REDIS) {
            n = strlen(cmds);
            snprintf(cmds + n, cl - n, "%s@%s", a->name, a->ip);
            for (int k = 0; k < a->argc; k++) {
                n = strlen(cmds);
                snprintf(cmds + n, cl - n, " %s", a->argv[k]);
            }
            n = strlen(cmds);
            snprintf(cmds + n, cl - n, ";");
            CU_ASSERT_PTR_NULL(a->path);
            CU_ASSERT_PTR_NULL(a->body);
        } else if (a->kind == PLAN_LABEL_POD) {
            n = strlen(labels);
            snprintf(labels + n, ll - n, "%s=%s;", a->name, str_at(a->body, "metadata labels cache.example.com/role"));
            CU_ASSERT_STRING_EQUAL(a->method, "PATCH");
            CU_ASSERT_STRING_EQUAL(a->content_type, "application/merge-patch+json");
            CU_ASSERT_TRUE(text_contains(a->path, "/api/v1/namespaces/default/pods/"));
        }
    }
}

/* A row of the replication and failover tables: a replicated RedisCluster with
 * status.primary (NULL: none), its pods labelled labels[], the observation obs (owned),
 * and after repl_row_plan the plan of them, its Redis commands and label patches as
 * redis_actions writes them and its ReplicationHealthy condition. */
typedef struct {
    json_object *rc, *pods, *obs;
    plan_t *p;
    char cmds[1024], labels[512];
    const json_object *rh;
} repl_row_t;

static void repl_row_init(repl_row_t *r, const char *spec, const char *primary, const char *const labels[3],
                          json_object *obs)
{
    memset(r, 0, sizeof(*r));
    r->rc = rc_new(spec, 1);
    if (primary) {
        char t[128];
        snprintf(t, sizeof(t), "\"%s\"", primary);
        set_at(r->rc, "status primary", t);
    }
    r->pods = repl_pods(labels[0], labels[1], labels[2]);
    r->obs = obs;
}

static void repl_row_plan(repl_row_t *r)
{
    plan_observed_t more = {.members = r->pods, .redis = r->obs};
    r->p = plan_compute_observed(r->rc, NULL, NULL, NULL, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->p);
    redis_actions(r->p, r->cmds, sizeof(r->cmds), r->labels, sizeof(r->labels));
    r->rh = cond(r->p, "ReplicationHealthy");
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->rh);
}

static void repl_row_free(repl_row_t *r)
{
    plan_destroy(&r->p);
    PUT_EACH(r->rc, r->pods, r->obs);
}

/* r planned again at now from its RedisCluster, pods and observation as they are now:
 * r->p, the plan before destroyed. Nothing else of r is updated (repl_row_plan's). */
static plan_t *repl_row_replan(repl_row_t *r, int64_t now)
{
    plan_destroy(&r->p);
    plan_observed_t more = {.members = r->pods, .redis = r->obs};
    r->p = plan_compute_observed(r->rc, NULL, NULL, NULL, &more, now);
    return r->p;
}

/* r's observation replaced by obs (owned; NULL: none). */
static void repl_row_observe(repl_row_t *r, json_object *obs)
{
    json_object_put(r->obs);
    r->obs = obs;
}

/* r planned again at now (repl_row_replan) has want as status.primary. */
static void assert_elects(repl_row_t *r, int64_t now, const char *want)
{
    CU_ASSERT_STRING_EQUAL(str_at(plan_status(repl_row_replan(r, now)), "primary"), want);
}

/* The labels of a settled replicated cluster whose primary is cache-0. */
static const char *const PRIMARY_FIRST[3] = {"primary", "replica", "replica"};

static void test_replication_table(void)
{
    static const struct {
        const char *name;
        const char *primary; /* status.primary, NULL = none */
        const char *labels[3];
        const char *nodes[3]; /* NULL = not in the observation */
        int no_observation;
        const char *want_cmds, *want_labels, *want_reason, *want_primary;
    } cases[] = {
        {"healthy", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 500", "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 500",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 480"},
         0, "", "", "AllReplicasLinked", "cache-0"},
        {"replica pointing at a wrong address", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 500", "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 500",
          "cache-2 10.0.0.3 true slave 10.9.9.9 6379 false 0"},
         0, "cache-2@10.0.0.3 REPLICAOF 10.0.0.1 6379;", "", "Repointing", "cache-0"},
        {"replica following the primary's host on another port", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 500", "cache-1 10.0.0.2 true slave 10.0.0.1 6380 false 0",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 500"},
         0, "cache-1@10.0.0.2 REPLICAOF 10.0.0.1 6379;", "", "Repointing", "cache-0"},
        {"two primaries: the one not in status is demoted", "cache-1", {"replica", "primary", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 90", "cache-1 10.0.0.2 true master - 0 false 500",
          "cache-2 10.0.0.3 true slave 10.0.0.2 6379 true 500"},
         0, "cache-0@10.0.0.1 REPLICAOF 10.0.0.2 6379;", "", "Repointing", "cache-1"},
        {"no primary, equal offsets: the designated one is promoted", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true slave 10.0.0.2 6379 false 500", "cache-1 10.0.0.2 true slave 10.0.0.3 6379 false 500",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500"},
         0, "cache-1@10.0.0.2 REPLICAOF 10.0.0.1 6379;cache-0@10.0.0.1 REPLICAOF NO ONE;",
         "", "Promoting", "cache-0"},
        {"primary unreachable: no replica is touched", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false 500", "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 500",
          "cache-2 10.0.0.3 true slave 10.9.9.9 6379 false 500"},
         0, "", "", "PrimaryUnreachable", "cache-0"},
        {"a replica unreachable: reported, not acted on", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 500", "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 500",
          "cache-2 10.0.0.3 false slave 10.0.0.1 6379 true 400"},
         0, "", "", "NodeUnreachable", "cache-0"},
        {"an observation of another IP (stale) is not acted on", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 500", "cache-1 10.0.0.99 true master - 0 false 500",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 500"},
         0, "", "", "NodeUnreachable", "cache-0"},
        {"a restarted replica comes up as a master: demoted", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 500", "cache-1 10.0.0.2 true master - 0 false 0",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 500"},
         0, "cache-1@10.0.0.2 REPLICAOF 10.0.0.1 6379;", "", "Repointing", "cache-0"},
        {"first creation: pod -0 is the primary, labels set", NULL, {"", "", "primary"},
         {"cache-0 10.0.0.1 true master - 0 false 0", "cache-1 10.0.0.2 true master - 0 false 0",
          "cache-2 10.0.0.3 true master - 0 false 0"},
         0, "cache-1@10.0.0.2 REPLICAOF 10.0.0.1 6379;cache-2@10.0.0.3 REPLICAOF 10.0.0.1 6379;",
         "cache-1=replica;cache-2=replica;cache-0=primary;", "Repointing", "cache-0"},
        {"no observation: no Redis command", "cache-0", {"primary", "replica", "replica"},
         {NULL, NULL, NULL}, 1, "", "", "NotObserved", "cache-0"},
        /* Finding 5: a pod is labelled primary only once it is known to be one. */
        {"no observation: nobody labelled primary yet", "cache-0", {"", "", ""},
         {NULL, NULL, NULL}, 1, "", "cache-1=replica;cache-2=replica;", "NotObserved", "cache-0"},
        {"the designated primary observed a replica of a live primary: not labelled primary", "cache-0",
         {"", "replica", "primary"},
         {"cache-0 10.0.0.1 true slave 10.0.0.3 6379 true 500", "cache-1 10.0.0.2 true slave 10.0.0.3 6379 true 500",
          "cache-2 10.0.0.3 true master - 0 false 500"},
         0, "", "", "FailingOver", "cache-2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        repl_row_t r;
        repl_row_init(&r, SPEC_REPL, cases[i].primary, cases[i].labels,
                      cases[i].no_observation ? NULL
                                              : repl_obs(cases[i].nodes[0], cases[i].nodes[1], cases[i].nodes[2]));
        repl_row_plan(&r);
        plan_t *p = r.p;
        const char *cmds = r.cmds, *labels = r.labels;
        const json_object *rh = r.rh;
        if (strcmp(cmds, cases[i].want_cmds) || strcmp(labels, cases[i].want_labels))
            fprintf(stderr, "case \"%s\": commands \"%s\" labels \"%s\"\n", cases[i].name, cmds, labels);
        CU_ASSERT_STRING_EQUAL(cmds, cases[i].want_cmds);
        CU_ASSERT_STRING_EQUAL(labels, cases[i].want_labels);
        if (strcmp(str_at(rh, "reason"), cases[i].want_reason))
            fprintf(stderr, "case \"%s\": reason %s: %s\n", cases[i].name, str_at(rh, "reason"), str_at(rh, "message"));
        CU_ASSERT_STRING_EQUAL(str_at(rh, "reason"), cases[i].want_reason);
        CU_ASSERT_STRING_EQUAL(str_at(rh, "status"),
                               strcmp(cases[i].want_reason, "AllReplicasLinked") ? "False" : "True");
        CU_ASSERT_STRING_EQUAL(str_at(plan_status(p), "primary"), cases[i].want_primary);
        /* Every Redis command has its Normal event; the order is labels, commands, status. */
        size_t repointed = 0;
        for (size_t e = 0; e < plan_event_count(p); e++)
            repointed += !strcmp(plan_event(p, e)->reason, "Repointed") ||
                         !strcmp(plan_event(p, e)->reason, "Promoted");
        CU_ASSERT_EQUAL(repointed, count_kind(p, PLAN_REDIS));
        CU_ASSERT_EQUAL(plan_action(p, plan_action_count(p) - 1)->kind, PLAN_UPDATE_STATUS);
        /* The role Services are planned (created: none observed). */
        size_t role_svc = 0;
        for (size_t k = 0; k < plan_action_count(p); k++) {
            const plan_action_t *a = plan_action(p, k);
            role_svc += a->kind == PLAN_CREATE &&
                        (!strcmp(a->name, "cache-primary") || !strcmp(a->name, "cache-replicas"));
        }
        CU_ASSERT_EQUAL(role_svc, 2);
        repl_row_free(&r);
    }
}

/* status.nodes of a healthy cluster, and no status write when only offsets move. */
static void test_replication_status_ignores_offsets(void)
{
    repl_row_t r;
    repl_row_init(&r, SPEC_REPL, NULL, PRIMARY_FIRST,
                  repl_obs("cache-0 10.0.0.1 true master - 0 false 500",
                           "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 500",
                           "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 450"));
    plan_t *p = repl_row_replan(&r, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    json_object *st = plan_status(p);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(at(st, "nodes")), 3);
    CU_ASSERT_STRING_EQUAL(str_at(st, "nodes 0 pod"), "cache-0");
    CU_ASSERT_STRING_EQUAL(str_at(st, "nodes 0 role"), "primary");
    CU_ASSERT_EQUAL(int_at(st, "nodes 0 lagBytes"), 0);
    CU_ASSERT_STRING_EQUAL(str_at(st, "nodes 2 ip"), "10.0.0.3");
    CU_ASSERT_STRING_EQUAL(str_at(st, "nodes 2 role"), "replica");
    CU_ASSERT_EQUAL(int_at(st, "nodes 2 offset"), 450);
    CU_ASSERT_EQUAL(int_at(st, "nodes 2 lagBytes"), 50);
    CU_ASSERT_TRUE(json_object_get_boolean(at(st, "nodes 2 linkUp")));
    /* The status as written; offsets move on, nothing else: no write at all. */
    json_object_object_add(r.rc, "status", json_copy(st));
    repl_row_observe(&r, repl_obs("cache-0 10.0.0.1 true master - 0 false 9000",
                                  "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 8000",
                                  "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 7000"));
    p = repl_row_replan(&r, T2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_UPDATE_STATUS), 0);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_LABEL_POD), 0);
    /* Without an observation (informerd restarted): what the status says of Redis stays. */
    repl_row_observe(&r, NULL);
    p = repl_row_replan(&r, T2);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_UPDATE_STATUS), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "ReplicationHealthy"), "reason"), "AllReplicasLinked");
    /* A link goes down: that is news, the status is written. */
    repl_row_observe(&r, repl_obs("cache-0 10.0.0.1 true master - 0 false 9000",
                                  "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 8000",
                                  "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 7000"));
    p = repl_row_replan(&r, T2);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_UPDATE_STATUS), 1);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "ReplicationHealthy"), "reason"), "ReplicaLinkDown");
    repl_row_free(&r);
}

/* The index of the first action of kind (resource NULL: any), or -1. */
static int first_of(const plan_t *p, plan_action_kind_t kind)
{
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == kind)
            return (int)i;
    return -1;
}

/* Every node of obs probed ms before it was taken (probedAgoMs). */
static void probed_ago(json_object *obs, int64_t ms)
{
    for (size_t i = 0; i < json_object_array_length(at(obs, "nodes")); i++)
        json_object_object_add(json_object_array_get_idx(at(obs, "nodes"), i), "probedAgoMs",
                               json_object_new_int64(ms));
}

/* COMMAND RECORD: a plan that sends Redis commands writes the status first, before its
 * labels and commands, with the resourceVersion precondition and the end of its
 * commands' window as status.lastRedisCommandTime (none sent after it), and last with
 * the time it is sent (PLAN_NOW_TOKEN, the executor's); a plan that sends none keeps the
 * recorded time. FRESHNESS: an observation with a pod probed before that time is none
 * to decide from (findings 1 and 2 of docs/simulation.md: plans decided from the picture
 * before the operator's own FAILOVER or REPLICAOF). */
static void test_command_record_and_freshness(void)
{
    json_object *rc = rc_new(SPEC_REPL, 1);
    set_at(rc, "status primary", "\"cache-0\"");
    set_at(rc, "metadata resourceVersion", "\"4711\"");
    json_object *pods = repl_pods("primary", "replica", "replica");
    /* cache-2 restarted and came up a master: repointed */
    json_object *obs = repl_obs("cache-0 10.0.0.1 true master - 0 false 500",
                                "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 500",
                                "cache-2 10.0.0.3 true master - 0 false 0");
    probed_ago(obs, 0);
    plan_observed_t more = {.members = pods, .redis = obs};
    plan_t *p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int first = first_of(p, PLAN_UPDATE_STATUS), cmd = first_of(p, PLAN_REDIS);
    CU_ASSERT_FATAL(first >= 0 && cmd > first);
    const plan_action_t *rec = plan_action(p, (size_t)first), *last = plan_action(p, plan_action_count(p) - 1);
    CU_ASSERT_STRING_EQUAL(str_at(rec->body, "metadata resourceVersion"), "4711");
    CU_ASSERT_STRING_EQUAL(str_at(rec->body, "status lastRedisCommandTime"), "2024-05-01T12:00:10.000Z");
    CU_ASSERT_STRING_EQUAL(str_at(rec->body, "status primary"), "cache-0");
    CU_ASSERT_EQUAL(plan_action(p, (size_t)cmd)->not_after_wall_ns, T1 + PLAN_COMMAND_WINDOW_NS);
    CU_ASSERT_EQUAL(last->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_STRING_EQUAL(str_at(last->body, "status lastRedisCommandTime"), PLAN_NOW_TOKEN);
    CU_ASSERT_PTR_NULL(str_at(last->body, "metadata resourceVersion"));
    CU_ASSERT_EQUAL(count_kind(p, PLAN_UPDATE_STATUS), 2);
    /* its Repointed event goes with the command, none with the first write */
    for (size_t e = 0; e < plan_event_count(p); e++)
        CU_ASSERT_NOT_EQUAL(plan_event(p, e)->action, first);
    plan_destroy(&p);

    /* Recorded at 12:00:10; the observation (taken at 12:00:00) is older: nothing is
     * decided from it, what the status says of Redis stays, and the plan looks again. */
    set_at(rc, "status lastRedisCommandTime", "\"2024-05-01T12:00:10.000Z\"");
    set_at(rc, "status nodes", "[{\"pod\":\"cache-0\",\"role\":\"primary\",\"linkUp\":true}]");
    set_at(rc, "status conditions",
           "[{\"type\":\"ReplicationHealthy\",\"status\":\"False\",\"reason\":\"Repointing\",\"message\":\"m\"}]");
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1 + 11 * NS_PER_SEC);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_LABEL_POD), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "ReplicationHealthy"), "reason"), "Repointing");
    CU_ASSERT_EQUAL(json_object_array_length(at(plan_status(p), "nodes")), 1);
    CU_ASSERT_STRING_EQUAL(str_at(plan_status(p), "lastRedisCommandTime"), "2024-05-01T12:00:10.000Z");
    CU_ASSERT(plan_requeue_after_ns(p) > 0 && plan_requeue_after_ns(p) <= PLAN_REQUEUE_OBSERVE_NS);
    plan_destroy(&p);

    /* Seen at 12:00:05, the record is a window still open: the plan that opened it
     * stopped before its last status write (a command failed), and has ended since this
     * one runs, so this one closes it (the time it writes the status) and does nothing
     * else. */
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1 + 5 * NS_PER_SEC);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_UPDATE_STATUS), 1);
    last = plan_action(p, plan_action_count(p) - 1);
    CU_ASSERT_EQUAL(last->kind, PLAN_UPDATE_STATUS);
    CU_ASSERT_STRING_EQUAL(str_at(last->body, "status lastRedisCommandTime"), PLAN_NOW_TOKEN);
    CU_ASSERT_STRING_EQUAL(str_at(last->body, "metadata resourceVersion"), "4711");
    CU_ASSERT(plan_requeue_after_ns(p) > 0 && plan_requeue_after_ns(p) <= PLAN_REQUEUE_OBSERVE_NS);
    plan_destroy(&p);

    /* Taken at 12:00:11, every pod probed 900 ms before: after the record, decided from. */
    set_at(obs, "observedAt", "\"2024-05-01T12:00:11.000Z\"");
    probed_ago(obs, 900);
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1 + 11 * NS_PER_SEC);
    char cmds[512], labels[256];
    redis_actions(p, cmds, sizeof(cmds), labels, sizeof(labels));
    CU_ASSERT_STRING_EQUAL(cmds, "cache-2@10.0.0.3 REPLICAOF 10.0.0.1 6379;");
    plan_destroy(&p);
    /* One pod probed at the very moment of the record: not after it. */
    json_object_object_add(at(obs, "nodes 1"), "probedAgoMs", json_object_new_int64(1000));
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1 + 11 * NS_PER_SEC);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
    plan_destroy(&p);
    /* A pod the observation does not show at its IP (recreated since): not probed after. */
    json_object_object_add(at(obs, "nodes 1"), "probedAgoMs", json_object_new_int64(900));
    json_object_object_add(at(obs, "nodes 1"), "ip", json_object_new_string("10.0.0.9"));
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1 + 11 * NS_PER_SEC);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
    plan_destroy(&p);

    /* Nothing to send: the recorded time is kept as it is. */
    json_object_put(obs);
    obs = repl_obs("cache-0 10.0.0.1 true master - 0 false 500", "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 500",
                   "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 500");
    set_at(obs, "observedAt", "\"2024-05-01T12:00:11.000Z\"");
    probed_ago(obs, 100);
    more.redis = obs;
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1 + 11 * NS_PER_SEC);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_UPDATE_STATUS), 1);
    CU_ASSERT_STRING_EQUAL(str_at(plan_status(p), "lastRedisCommandTime"), "2024-05-01T12:00:10.000Z");
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "ReplicationHealthy"), "reason"), "AllReplicasLinked");
    plan_destroy(&p);
    json_object_put(rc);
    json_object_put(pods);
    json_object_put(obs);
}

/* Standalone: independent servers, whatever Redis says. */
static void test_standalone_has_no_topology(void)
{
    json_object *rc = rc_new("{\"size\":3,\"image\":\"redis\",\"mode\":\"Standalone\"}", 1);
    json_object *pods = repl_pods("", "", "");
    json_object *obs = repl_obs("cache-0 10.0.0.1 true master - 0 false 1", "cache-1 10.0.0.2 true master - 0 false 1",
                                "cache-2 10.0.0.3 true slave 10.9.9.9 6379 false 1");
    plan_observed_t more = {.members = pods, .redis = obs};
    plan_t *p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_LABEL_POD), 0);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_CREATE), 4); /* ConfigMap, headless Service, StatefulSet, PDB */
    CU_ASSERT_PTR_NULL(cond(p, "ReplicationHealthy"));
    CU_ASSERT_PTR_NULL(at(plan_status(p), "primary"));
    plan_destroy(&p);
    json_object_put(rc);
    json_object_put(pods);
    json_object_put(obs);
}

/* The role Services: selector with the role, owned, not rewritten when right. */
static void test_role_services(void)
{
    json_object *rc = rc_new(SPEC_REPL, 1);
    plan_observed_t more = {0};
    plan_t *p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    const plan_action_t *ps = NULL, *rs = NULL;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_CREATE && !strcmp(a->name, "cache-primary"))
            ps = a;
        if (a->kind == PLAN_CREATE && !strcmp(a->name, "cache-replicas"))
            rs = a;
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(ps);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rs);
    CU_ASSERT_STRING_EQUAL(str_at(ps->body, "spec selector cache.example.com/role"), "primary");
    CU_ASSERT_STRING_EQUAL(str_at(ps->body, "spec selector app.kubernetes.io/instance"), "cache");
    CU_ASSERT_STRING_EQUAL(str_at(rs->body, "spec selector cache.example.com/role"), "replica");
    CU_ASSERT_STRING_EQUAL(str_at(ps->body, "metadata ownerReferences 0 uid"), "uid-1");
    CU_ASSERT_TRUE(text_contains(ps->path, "/api/v1/namespaces/default/services"));
    /* As the server keeps them: no drift. */
    json_object *psv = server_view(ps->body, NULL), *rsv = server_view(rs->body, NULL);
    plan_destroy(&p);
    more.primary_service = psv;
    more.replicas_service = rsv;
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    for (size_t i = 0; i < plan_action_count(p); i++)
        CU_ASSERT_FALSE(!strcmp(plan_action(p, i)->resource, "services") && strcmp(plan_action(p, i)->name, "cache"));
    plan_destroy(&p);
    /* A selector changed by hand is drift: applied back. */
    set_at(psv, "spec selector cache.example.com/role", "\"replica\"");
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    const plan_action_t *ap = find_action(p, PLAN_APPLY, "services");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ap);
    CU_ASSERT_STRING_EQUAL(ap->name, "cache-primary");
    plan_destroy(&p);
    json_object_put(psv);
    json_object_put(rsv);
    json_object_put(rc);
}

/* Auth: the password comes from the Secret by reference, never into the ConfigMap. */
static void test_auth_rendering(void)
{
    json_object *rc = rc_new("{\"size\":1,\"image\":\"redis\",\"auth\":{\"secretRef\":{\"name\":\"pw\"}}}", 1);
    plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
    const plan_action_t *sts = find_action(p, PLAN_CREATE, "statefulsets");
    const plan_action_t *cm = find_action(p, PLAN_CREATE, "configmaps");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cm);
    json_object *c = at(sts->body, "spec template spec containers 0");
    CU_ASSERT_STRING_EQUAL(str_at(c, "env 0 name"), "REDIS_PASSWORD");
    CU_ASSERT_STRING_EQUAL(str_at(c, "env 0 valueFrom secretKeyRef name"), "pw");
    CU_ASSERT_STRING_EQUAL(str_at(c, "env 0 valueFrom secretKeyRef key"), "password");
    CU_ASSERT_STRING_EQUAL(str_at(c, "env 1 name"), "REDISCLI_AUTH");
    CU_ASSERT_STRING_EQUAL(str_at(c, "command 2"), "--requirepass");
    CU_ASSERT_STRING_EQUAL(str_at(c, "command 3"), "$(REDIS_PASSWORD)");
    CU_ASSERT_STRING_EQUAL(str_at(c, "command 5"), "$(REDIS_PASSWORD)");
    CU_ASSERT_FALSE(text_contains(str_at(cm->body, "data redis.conf"), "requirepass"));
    plan_destroy(&p);
    json_object_put(rc);
}

/* AUTH: the record, and a rotation as exact Redis commands. */
static void test_auth_record_and_rotation(void)
{
    json_object *rc = rc_new("{\"size\":3,\"image\":\"redis\",\"mode\":\"Replication\",\"auth\":{\"secretRef\":"
                             "{\"name\":\"pw\"}}}", 1);
    set_at(rc, "status primary", "\"cache-0\"");
    json_object *pods = repl_pods("primary", "replica", "replica");
    /* Two primaries observed: not acted on while rotating. */
    json_object *obs = repl_obs("cache-0 10.0.0.1 true master - 0 false 1", "cache-1 10.0.0.2 true master - 0 false 1",
                                "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 1");
    plan_observed_t more = {.members = pods, .redis = obs, .auth = PLAN_AUTH_CURRENT};
    plan_t *p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_AUTH_RECORD), 0);
    CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 1); /* the demotion */
    plan_destroy(&p);

    more.auth = PLAN_AUTH_UNRECORDED;
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    const plan_action_t *r = find_action(p, PLAN_AUTH_RECORD, "secrets");
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_STRING_EQUAL(r->path, "/api/v1/namespaces/default/secrets/cache-redis-auth"
                                    "?fieldManager=rediscluster-operator&force=true");
    CU_ASSERT_STRING_EQUAL(r->content_type, "application/apply-patch+yaml");
    CU_ASSERT_STRING_EQUAL(str_at(r->body, "stringData password"), "${password}");
    CU_ASSERT_STRING_EQUAL(str_at(r->body, "metadata ownerReferences 0 uid"), "uid-1");
    plan_destroy(&p);

    more.auth = PLAN_AUTH_ROTATE;
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    char cmds[2048], labels[256];
    redis_actions(p, cmds, sizeof(cmds), labels, sizeof(labels));
    CU_ASSERT_STRING_EQUAL(cmds, "cache-0@10.0.0.1 ACL SETUSER default on >${password};"
                                 "cache-0@10.0.0.1 CONFIG SET masterauth ${password};"
                                 "cache-1@10.0.0.2 ACL SETUSER default on >${password};"
                                 "cache-1@10.0.0.2 CONFIG SET masterauth ${password};"
                                 "cache-2@10.0.0.3 ACL SETUSER default on >${password};"
                                 "cache-2@10.0.0.3 CONFIG SET masterauth ${password};"
                                 "cache-0@10.0.0.1 ACL SETUSER default <${old-password};"
                                 "cache-1@10.0.0.2 ACL SETUSER default <${old-password};"
                                 "cache-2@10.0.0.3 ACL SETUSER default <${old-password};");
    /* The record after the last drop; its event. */
    size_t last_redis = 0, record = 0;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        if (plan_action(p, i)->kind == PLAN_REDIS)
            last_redis = i;
        if (plan_action(p, i)->kind == PLAN_AUTH_RECORD)
            record = i;
    }
    CU_ASSERT_EQUAL(record, last_redis + 1);
    int rotated = 0;
    for (size_t e = 0; e < plan_event_count(p); e++)
        rotated += !strcmp(plan_event(p, e)->reason, "PasswordRotated") && plan_event(p, e)->action == (int)record;
    CU_ASSERT_EQUAL(rotated, 1);
    plan_destroy(&p);

    /* A pod without an IP yet: wait. */
    del_at(json_object_array_get_idx(pods, 2), "status", "podIP");
    p = plan_compute_observed(rc, NULL, NULL, NULL, &more, T1);
    redis_actions(p, cmds, sizeof(cmds), labels, sizeof(labels));
    /* No ACL; the topology is kept meanwhile (AUTH falls back to the old password). */
    CU_ASSERT_STRING_EQUAL(cmds, "cache-1@10.0.0.2 REPLICAOF 10.0.0.1 6379;");
    CU_ASSERT_EQUAL(count_kind(p, PLAN_AUTH_RECORD), 0);
    CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "reason"), "PasswordRotationWaiting");
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), PLAN_REQUEUE_NOT_READY_NS);
    plan_destroy(&p);
    json_object_put(rc);
    json_object_put(pods);
    json_object_put(obs);
}

/* FAILOVER: a node "pod ip reachable role masterHost masterPort linkUp offset downSinceMs
 * linkDownSinceMs [keys=N]" (obs_node's eight fields and two more, and the keys). */
static json_object *fo_node(const char *spec)
{
    char head[256], down[24], ldown[24];
    const char *p = spec;
    for (int sp = 0; sp < 8; sp++)
        p = strchr(p, ' ') + 1;
    size_t hl = (size_t)(p - spec) - 1;
    CU_ASSERT_FATAL(hl < sizeof(head));
    memcpy(head, spec, hl);
    head[hl] = '\0';
    size_t n = strcspn(p, " ");
    CU_ASSERT_FATAL(n < sizeof(down));
    memcpy(down, p, n);
    down[n] = '\0';
    snprintf(ldown, sizeof(ldown), "%s", p + n + 1);
    json_object *o = obs_node(head);
    json_object_object_add(o, "downSinceMs", json_object_new_int64(strtoll(down, NULL, 10)));
    json_object_object_add(o, "linkDownSinceMs", json_object_new_int64(strtoll(ldown, NULL, 10)));
    /* An unreachable node's last answer: -1 (never heard), or 3000 ms ago for the case
     * that counts from it (downSinceMs 2000). */
    if (!json_object_get_boolean(json_object_object_get(o, "reachable")))
        json_object_object_add(o, "lastOkAgoMs", json_object_new_int64(strtoll(down, NULL, 10) == 2000 ? 3000 : -1));
    const char *keys = strstr(p, "keys="); /* INFO keyspace's, when the spec ends with keys=N */
    if (keys)
        json_object_object_add(o, "keys", json_object_new_int64(strtoll(keys + 5, NULL, 10)));
    return o;
}

/* An observation of the three nodes n[] (fo_node's format). */
static json_object *fo_obs(const char *n0, const char *n1, const char *n2)
{
    json_object *obs = parse("{\"observedAt\":\"2024-05-01T12:00:00.000Z\",\"nodes\":[]}");
    const char *n[3] = {n0, n1, n2};
    for (int k = 0; k < 3; k++)
        json_object_array_add(at(obs, "nodes"), fo_node(n[k]));
    return obs;
}

static void test_failover_table(void)
{
    static const struct {
        const char *name;
        const char *primary; /* status.primary */
        const char *labels[3];
        const char *nodes[3];
        const char *want_cmds, *want_labels, *want_reason, *want_primary;
        int want_cas;        /* the status write is the record of an election */
    } cases[] = {
        {"primary down 2.9 s: not yet (downAfter 3 s)", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false 500 2900 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 2000 2000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500 2000 2000"},
         "", "", "PrimaryUnreachable", "cache-0", 0},
        {"down 2 s since the first failed probe, 3 s since the last answer (Sentinel's count)", "cache-0",
         {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false 500 2000 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 0 3000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500 0 3000"},
         "", "", "FailingOver", "cache-2", 1},
        {"a fresh observer (operator restart): no history, no failover", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false -1 400 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 0 90000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500 0 90000"},
         "", "", "PrimaryUnreachable", "cache-0", 0},
        {"primary down 3 s: the highest offset is elected, recorded first", "cache-0",
         {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false 500 3000 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 0 3000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500 0 3000"},
         "", "", "FailingOver", "cache-2", 1},
        {"two candidates with equal offsets: the lowest ordinal", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false 500 3500 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 500 0 3000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500 0 3000"},
         "", "", "FailingOver", "cache-1", 1},
        {"SIGSTOP: the replicas still see their link up", "cache-1", {"replica", "primary", "replica"},
         {"cache-0 10.0.0.1 true slave 10.0.0.2 6379 true 700 0 -1",
          "cache-1 10.0.0.2 false master - 0 false 700 4000 -1",
          "cache-2 10.0.0.3 true slave 10.0.0.2 6379 true 690 0 -1"},
         "", "", "FailingOver", "cache-0", 1},
        {"no candidate linked recently: no promotion", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false 500 3000 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 0 60000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500 0 -1"},
         "", "", "NoFailoverCandidate", "cache-0", 0},
        {"the best replica unreachable: the next one", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false 500 3000 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 0 3000",
          "cache-2 10.0.0.3 false slave 10.0.0.1 6379 false 500 3000 3000"},
         "", "", "FailingOver", "cache-1", 1},
        {"primary pod deleted, its successor not answering yet: evidence by name", "cache-0",
         {"primary", "replica", "replica"},
         {"cache-0 10.0.0.99 false - - 0 false -1 3100 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 0 5000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 470 0 5000"},
         "", "", "FailingOver", "cache-1", 1},
        {"recorded: the elected replica is promoted, labels around it", "cache-2", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 false master - 0 false 500 4000 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 0 4000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500 0 4000"},
         "cache-1@10.0.0.2 REPLICAOF 10.0.0.3 6379;cache-2@10.0.0.3 REPLICAOF NO ONE;",
         "cache-0=replica;cache-1=replica;cache-2=primary;",
         "Promoting", "cache-2", 0},
        {"promoted: the other replica is repointed, the old primary still down", "cache-2",
         {"replica", "replica", "primary"},
         {"cache-0 10.0.0.1 false master - 0 false 500 5000 -1",
          "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 480 0 5000",
          "cache-2 10.0.0.3 true master - 0 false 520 0 -1"},
         "cache-1@10.0.0.2 REPLICAOF 10.0.0.3 6379;", "", "Repointing", "cache-2", 0},
        {"the old primary returns (thawed, more data): demoted, not re-elected", "cache-2",
         {"replica", "replica", "primary"},
         {"cache-0 10.0.0.1 true master - 0 false 900 0 -1", "cache-1 10.0.0.2 true slave 10.0.0.3 6379 true 520 0 -1",
          "cache-2 10.0.0.3 true master - 0 false 520 0 -1"},
         "cache-0@10.0.0.1 REPLICAOF 10.0.0.3 6379;", "", "Repointing", "cache-2", 0},
        {"the old primary returns before the promotion: it stays primary", "cache-2", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 510 0 -1", "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 510 0 -1",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 510 0 -1"},
         "", "", "FailingOver", "cache-0", 1},
        {"primary restarted empty within downAfter: not resynced from, the best replica elected", "cache-0",
         {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 0 0 -1", "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 500 0 2000",
          "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 480 0 2000"},
         "", "", "FailingOver", "cache-1", 1},
        {"all restarted as masters: the highest offset", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 0 0 -1", "cache-1 10.0.0.2 true master - 0 false 300 0 -1",
          "cache-2 10.0.0.3 true master - 0 false 200 0 -1"},
         "", "", "FailingOver", "cache-1", 1},
        {"all restarted as masters, equal offsets: the designated one stays, the others follow", "cache-0",
         {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 0 0 -1", "cache-1 10.0.0.2 true master - 0 false 0 0 -1",
          "cache-2 10.0.0.3 true master - 0 false 0 0 -1"},
         "cache-1@10.0.0.2 REPLICAOF 10.0.0.1 6379;cache-2@10.0.0.3 REPLICAOF 10.0.0.1 6379;", "", "Repointing",
         "cache-0", 0},
        /* Finding 4: the operator away longer than 10 x downAfter while the primary was
         * replaced empty (a new IP): "linked recently" counts from when the replicas
         * lost the primary they follow, and they are not repointed to the empty one. */
        {"back after an outage, the primary replaced empty: the replicas' data elected", "cache-0",
         {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 0 0 -1",
          "cache-1 10.0.0.2 true slave 10.9.9.9 6379 false 35000 0 170500",
          "cache-2 10.0.0.3 true slave 10.9.9.9 6379 false 34900 0 171000"},
         "", "", "FailingOver", "cache-1", 1},
        {"the primary behind, the replica holding more linked too long before the others: none elected, none "
         "repointed", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 100 0 -1 keys=0",
          "cache-1 10.0.0.2 true slave 10.9.9.9 6379 false 500 0 200000 keys=900",
          "cache-2 10.0.0.3 true slave 10.9.9.9 6379 false 50 0 1000 keys=0"},
         "", "", "NoFailoverCandidate", "cache-0", 0},
        /* Restarted from its AOF with its keys (its offset starts again): offsets of other
         * histories say nothing of more data; it keeps the role, the others follow it. */
        {"the primary restarted with its keys, a replica of an old history further on: kept", "cache-0",
         {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true master - 0 false 0 0 -1 keys=900",
          "cache-1 10.0.0.2 true slave 10.9.9.9 6379 false 136700 0 -1 keys=900",
          "cache-2 10.0.0.3 true master - 0 false 0 0 -1 keys=900"},
         "cache-1@10.0.0.2 REPLICAOF 10.0.0.1 6379;cache-2@10.0.0.3 REPLICAOF 10.0.0.1 6379;", "", "Repointing",
         "cache-0", 0},
        {"every pod a replica of a dead address: the highest offset", "cache-0", {"primary", "replica", "replica"},
         {"cache-0 10.0.0.1 true slave 10.9.9.9 6379 false 400 0 1000",
          "cache-1 10.0.0.2 true slave 10.9.9.9 6379 false 500 0 1000",
          "cache-2 10.0.0.3 true slave 10.9.9.9 6379 false 450 0 1000"},
         "", "", "FailingOver", "cache-1", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        repl_row_t r;
        repl_row_init(&r, SPEC_REPL, cases[i].primary, cases[i].labels,
                      fo_obs(cases[i].nodes[0], cases[i].nodes[1], cases[i].nodes[2]));
        set_at(r.rc, "metadata resourceVersion", "\"4711\"");
        repl_row_plan(&r);
        plan_t *p = r.p;
        const char *cmds = r.cmds, *labels = r.labels;
        const json_object *rh = r.rh;
        if (strcmp(cmds, cases[i].want_cmds) || strcmp(labels, cases[i].want_labels) ||
            strcmp(str_at(rh, "reason"), cases[i].want_reason) ||
            strcmp(str_at(plan_status(p), "primary"), cases[i].want_primary))
            fprintf(stderr, "case \"%s\": commands \"%s\" labels \"%s\" reason %s: %s; primary %s\n", cases[i].name,
                    cmds, labels, str_at(rh, "reason"), str_at(rh, "message"), str_at(plan_status(p), "primary"));
        CU_ASSERT_STRING_EQUAL(cmds, cases[i].want_cmds);
        CU_ASSERT_STRING_EQUAL(labels, cases[i].want_labels);
        CU_ASSERT_STRING_EQUAL(str_at(rh, "reason"), cases[i].want_reason);
        CU_ASSERT_STRING_EQUAL(str_at(plan_status(p), "primary"), cases[i].want_primary);
        /* An election is a status write with the resourceVersion precondition and the
         * FailedOver event, and nothing else of Redis: no label, no command. */
        const plan_action_t *last = plan_action(p, plan_action_count(p) - 1);
        CU_ASSERT_EQUAL_FATAL(last->kind, PLAN_UPDATE_STATUS);
        const char *rv = str_at(last->body, "metadata resourceVersion");
        CU_ASSERT_EQUAL(rv != NULL && !strcmp(rv, "4711"), cases[i].want_cas);
        size_t failed_over = 0, promoted = 0;
        for (size_t e = 0; e < plan_event_count(p); e++) {
            failed_over += !strcmp(plan_event(p, e)->reason, "FailedOver");
            promoted += !strcmp(plan_event(p, e)->reason, "Promoted");
        }
        CU_ASSERT_EQUAL(failed_over, (size_t)cases[i].want_cas);
        CU_ASSERT_EQUAL(promoted, (size_t)(strstr(cases[i].want_cmds, "NO ONE") != NULL));
        if (!strcmp(cases[i].want_reason, "NoFailoverCandidate"))
            CU_ASSERT_STRING_EQUAL(str_at(cond(p, "Degraded"), "reason"), "NoFailoverCandidate");
        /* Never two pods labelled primary, even for a moment: a label that gives the role
         * comes after every label that takes it and after every Redis command. */
        size_t give = 0, last_take_or_cmd = 0;
        for (size_t k = 0; k < plan_action_count(p); k++) {
            const plan_action_t *a = plan_action(p, k);
            if (a->kind == PLAN_LABEL_POD &&
                !strcmp(str_at(a->body, "metadata labels cache.example.com/role"), "primary"))
                give = k;
            else if (a->kind == PLAN_LABEL_POD || a->kind == PLAN_REDIS)
                last_take_or_cmd = k;
        }
        CU_ASSERT(give == 0 || give > last_take_or_cmd);
        repl_row_free(&r);
    }
}

/* Finding 7, "one observer": a primary that does not answer the operator while a replica
 * linked to it heard from it more recently than the operator did is alive (cut off
 * from the operator alone) and not replaced; once its replicas stop hearing it (frozen,
 * isolated, dead), the election goes on. */
static void test_failover_witness(void)
{
    repl_row_t r;
    repl_row_init(&r, SPEC_REPL, "cache-0", PRIMARY_FIRST,
                  fo_obs("cache-0 10.0.0.1 false master - 0 false 500 3000 -1",
                         "cache-1 10.0.0.2 true slave 10.0.0.1 6379 true 500 0 -1",
                         "cache-2 10.0.0.3 true slave 10.0.0.1 6379 true 480 0 -1"));
    json_object *obs = r.obs;
    /* cache-0 failed every probe for the last 3 s (downSinceMs 3000); cache-1 was probed
     * 100 ms ago and heard from it at most 1.1 s ago: after that began. */
    json_object_object_add(at(obs, "nodes 0"), "downSinceMs", json_object_new_int64(3000));
    for (int k = 1; k < 3; k++) {
        json_object_object_add(at(obs, k == 1 ? "nodes 1" : "nodes 2"), "probedAgoMs", json_object_new_int64(100));
        json_object_object_add(at(obs, k == 1 ? "nodes 1" : "nodes 2"), "masterIoAgoMs", json_object_new_int64(5100));
    }
    json_object_object_add(at(obs, "nodes 1"), "masterIoAgoMs", json_object_new_int64(1100));
    assert_elects(&r, T1, "cache-0");
    CU_ASSERT_STRING_EQUAL(str_at(cond(r.p, "ReplicationHealthy"), "reason"), "PrimaryUnreachable");
    CU_ASSERT_TRUE(text_contains(str_at(cond(r.p, "ReplicationHealthy"), "message"), "cache-1 heard from it"));
    CU_ASSERT_EQUAL(count_kind(r.p, PLAN_REDIS), 0);
    /* Probed 2.5 s ago, half a second after the failures began: it cannot tell yet (Redis
     * counts whole seconds); the plan waits for its next probe. */
    json_object_object_add(at(obs, "nodes 1"), "probedAgoMs", json_object_new_int64(2500));
    json_object_object_add(at(obs, "nodes 1"), "masterIoAgoMs", json_object_new_int64(3500));
    assert_elects(&r, T1, "cache-0");
    CU_ASSERT_TRUE(text_contains(str_at(cond(r.p, "ReplicationHealthy"), "message"),
                                 "waiting for cache-1's next probe"));
    CU_ASSERT(plan_requeue_after_ns(r.p) > 0 && plan_requeue_after_ns(r.p) <= NS_PER_SEC);
    /* It stopped hearing it before the failures began (frozen, dead): elected as ever. */
    json_object_object_add(at(obs, "nodes 1"), "probedAgoMs", json_object_new_int64(100));
    json_object_object_add(at(obs, "nodes 1"), "masterIoAgoMs", json_object_new_int64(3100));
    assert_elects(&r, T1, "cache-1");
    /* What a replica of another address hears says nothing of it. */
    json_object_object_add(at(obs, "nodes 1"), "masterIoAgoMs", json_object_new_int64(100));
    json_object_object_add(at(obs, "nodes 1"), "masterHost", json_object_new_string("10.9.9.9"));
    assert_elects(&r, T1, "cache-1");
    repl_row_free(&r);
}

/* A primary lost with its volume, back empty, while no write came since it last
 * restarted from its AOF (offsets start again at a restart: the replicas resynchronised
 * from that restart show the empty one's offset): the keys (INFO keyspace) tell it is
 * behind, and one that holds them is elected. Restarted with its data, it stays and the
 * replicas follow it. (seed 0x537 of the ten-million-step hunt) */
static void test_failover_empty_primary(void)
{
    repl_row_t r;
    repl_row_init(&r, SPEC_REPL, "cache-0", PRIMARY_FIRST,
                  fo_obs("cache-0 10.0.0.1 true master - 0 false 0 0 -1 keys=0",
                         "cache-1 10.0.0.2 true slave 10.9.9.9 6379 false 0 0 2000 keys=0",
                         "cache-2 10.0.0.3 true slave 10.9.9.9 6379 false 0 0 2000 keys=500"));
    assert_elects(&r, T1, "cache-2");
    CU_ASSERT_TRUE(text_contains(str_at(cond(r.p, "ReplicationHealthy"), "message"), "holding no key"));
    CU_ASSERT_EQUAL(count_kind(r.p, PLAN_REDIS), 0);
    json_object_object_add(at(r.obs, "nodes 0"), "keys", json_object_new_int64(500));
    assert_elects(&r, T1, "cache-0");
    char cmds[512], labels[256];
    redis_actions(r.p, cmds, sizeof(cmds), labels, sizeof(labels));
    CU_ASSERT_STRING_EQUAL(cmds, "cache-1@10.0.0.2 REPLICAOF 10.0.0.1 6379;cache-2@10.0.0.3 REPLICAOF 10.0.0.1 6379;");
    /* Every candidate started empty and took nothing (two volumes lost), the keys only on
     * a replica never linked since (its link-down time unknown: not "linked recently"):
     * it is elected rather than emptied. (overlapping faults, seeds 0x477 and 0x483) */
    repl_row_observe(&r, fo_obs("cache-0 10.0.0.1 true master - 0 false 0 0 -1 keys=0",
                                "cache-1 10.0.0.2 true master - 0 false 0 0 -1 keys=0",
                                "cache-2 10.0.0.3 true slave 10.9.9.9 6379 false 0 0 -1 keys=2096"));
    assert_elects(&r, T1, "cache-2");
    repl_row_free(&r);
}

/* spec.failover.downAfter is read: 10s holds a failover that 3s would start. */
static void test_failover_down_after(void)
{
    repl_row_t r;
    repl_row_init(&r, "{\"size\":3,\"image\":\"redis\",\"mode\":\"Replication\",\"failover\":{\"downAfter\":\"10s\"}}",
                  "cache-0", PRIMARY_FIRST,
                  fo_obs("cache-0 10.0.0.1 false master - 0 false 500 9999 -1",
                         "cache-1 10.0.0.2 true slave 10.0.0.1 6379 false 500 0 9999",
                         "cache-2 10.0.0.3 true slave 10.0.0.1 6379 false 500 0 9999"));
    assert_elects(&r, T1, "cache-0");
    /* Looked at again when downAfter is reached, not 10 s later. */
    CU_ASSERT_EQUAL(plan_requeue_after_ns(r.p), INT64_C(1) * 1000000);
    /* The same observation 1 ms later: it is 1 ms older, so the primary was down 10 s. */
    assert_elects(&r, T1 + 1000000, "cache-1");
    /* An old observation (observerd not running) counts for 1 s at most: 8 s + 1 s. */
    json_object_object_add(at(r.obs, "nodes 0"), "downSinceMs", json_object_new_int64(8000));
    assert_elects(&r, T1 + 5 * NS_PER_SEC, "cache-0");
    json_object_object_add(at(r.obs, "nodes 0"), "downSinceMs", json_object_new_int64(10000));
    assert_elects(&r, T1, "cache-1");
    repl_row_free(&r);
}

/* FAILOVER: min-replicas-to-write / -max-lag in redis.conf (Replication only). */
static void test_failover_min_replicas(void)
{
    static const struct {
        const char *spec;
        const char *want; /* NULL: absent */
    } cases[] = {
        {SPEC_REPL, "min-replicas-to-write 1\nmin-replicas-max-lag 10\n"},
        {"{\"size\":2,\"image\":\"redis\",\"mode\":\"Replication\"}",
         "min-replicas-to-write 0\nmin-replicas-max-lag 10\n"},
        {"{\"size\":3,\"image\":\"redis\",\"mode\":\"Replication\",\"failover\":{\"minReplicasToWrite\":2,"
         "\"minReplicasMaxLag\":5}}",
         "min-replicas-to-write 2\nmin-replicas-max-lag 5\n"},
        {"{\"size\":3,\"image\":\"redis\",\"mode\":\"Replication\",\"failover\":{\"minReplicasToWrite\":0}}",
         "min-replicas-to-write 0\nmin-replicas-max-lag 10\n"},
        {"{\"size\":3,\"image\":\"redis\"}", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *rc = rc_new(cases[i].spec, 1);
        plan_t *p = plan_compute(rc, NULL, NULL, NULL, T1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        const char *conf = NULL;
        for (size_t k = 0; k < plan_action_count(p); k++) {
            const plan_action_t *a = plan_action(p, k);
            if (a->kind == PLAN_CREATE && !strcmp(a->resource, "configmaps"))
                conf = str_at(a->body, "data redis.conf");
        }
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        if (cases[i].want) {
            CU_ASSERT_PTR_NOT_NULL(strstr(conf, cases[i].want));
        } else {
            CU_ASSERT_PTR_NULL(strstr(conf, "min-replicas"));
        }
        plan_destroy(&p);
        json_object_put(rc);
    }
}

/* ---- RUNTIME CONFIG (plan.h; runtimecfg.h) ----------------------------------------------- */

#define SPEC_RT(mode, extra) "{\"size\":3,\"image\":\"redis\"" mode ",\"config\":{\"extra\":{" extra "}}}"
/* The run-time directives of the default persistence (aof, render.h PERSISTENCE) around
 * config.extra's, sorted by name: as CONFIG SET's arguments and as the record's lines. */
#define PERSIST_AOF_ARGS(extra) "appendfsync everysec appendonly yes " extra " save 900 1 300 10 60 10000"
#define PERSIST_AOF_LINES(extra) "appendfsync everysec\nappendonly yes\n" extra "save 900 1 300 10 60 10000\n"

/* Pod cache-<i>: ready or not, ip ("" = none), the redis container's restarts, the
 * runtime-config annotation (NULL = none). */
static json_object *rt_pod(int i, int ready, const char *ip, int restarts, const char *ann)
{
    return parsef("{\"metadata\":{\"name\":\"cache-%d\",\"labels\":{\"app.kubernetes.io/instance\":\"cache\"}%s%s%s},"
                  "\"status\":{%s%s%s\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}],"
                  "\"containerStatuses\":[{\"name\":\"redis\",\"restartCount\":%d}]}}",
                  i, ann ? ",\"annotations\":{\"cache.example.com/runtime-config\":\"" : "", ann ? ann : "",
                  ann ? "\"}" : "", *ip ? "\"podIP\":\"" : "", ip, *ip ? "\"," : "", ready ? "True" : "False",
                  restarts);
}

static json_object *rt_pods(const char *a0, const char *a1, const char *a2)
{
    json_object *arr = json_object_new_array();
    const char *a[3] = {a0, a1, a2};
    for (int i = 0; i < 3; i++) {
        char ip[32];
        snprintf(ip, sizeof(ip), "10.0.0.%d", i + 1);
        json_object_array_add(arr, rt_pod(i, 1, ip, 0, a[i]));
    }
    return arr;
}

/* The plan for w with pods (and observation obs) as the work item's. */
static plan_t *rt_run(world_t *w, const json_object *pods, const json_object *obs)
{
    plan_children_t kids = {w->cm, w->svc, w->sts, w->pdb};
    plan_observed_t more = {.members = pods, .redis = obs};
    plan_t *p = plan_compute_children(w->rc, &kids, &more, T2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* The record for the directives' lines and restarts. */
static void rt_record(const char *lines, int restarts, char *out, size_t len)
{
    char hex[65];
    CU_ASSERT_EQUAL_FATAL(render_sha256_hex(lines, strlen(lines), hex), 0);
    snprintf(out, len, "%s/%d", hex, restarts);
}

/* The plan's runtime-config actions as "pod@ip ARGV;" and "pod=RECORD;". */
static void rt_actions(const plan_t *p, char *cmds, size_t cl, char *anns, size_t al)
{
    char labels[256];
    redis_actions(p, cmds, cl, labels, sizeof(labels));
    anns[0] = '\0';
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind != PLAN_ANNOTATE_POD)
            continue;
        size_t n = strlen(anns);
        snprintf(anns + n, al - n, "%s=%s;", a->name,
                 str_at(a->body, "metadata annotations cache.example.com/runtime-config"));
        CU_ASSERT_STRING_EQUAL(a->method, "PATCH");
        CU_ASSERT_STRING_EQUAL(a->content_type, "application/merge-patch+json");
        CU_ASSERT_TRUE(text_contains(a->path, "/api/v1/namespaces/default/pods/cache-"));
    }
}

/* A changed run-time directive: CONFIG SET on every pod, recorded, no roll; then nothing. */
static void test_runtime_config_applied_without_roll(void)
{
    /* Standalone, then Replication (the same children: the world converges Standalone,
     * then the spec says Replication; only the runtime config is looked at there). */
    for (int m = 0; m < 2; m++) {
        world_t w;
        world_init(&w, SPEC_RT("", "\"maxmemory-samples\":\"7\",\"hz\":\"20\",\"databases\":\"4\""), 1);
        converge(&w, T1);
        if (m)
            set_at(w.rc, "spec mode", "\"Replication\"");
        char rec[128], cmds[4096], anns[1024], want[1024];
        rt_record(PERSIST_AOF_LINES("hz 20\nmaxmemory-samples 7\n"), 0, rec, sizeof(rec));
        json_object *pods = rt_pods(rec, rec, rec);
        /* Recorded on every pod: a resync sends nothing and writes nothing. */
        plan_t *p = rt_run(&w, pods, NULL);
        if (!m)
            CU_ASSERT_EQUAL(plan_action_count(p), 0);
        /* Replication's StatefulSet differs from Standalone's (OnDelete, the preStop
         * hook): written for the mode change, whatever the runtime config does. */
        int sts_for_mode = find_write(p, "statefulsets") != NULL;
        CU_ASSERT_EQUAL(sts_for_mode, m);
        CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
        CU_ASSERT_EQUAL(count_kind(p, PLAN_ANNOTATE_POD), 0);
        plan_destroy(&p);

        /* hz changes: the ConfigMap is applied, the StatefulSet is not (no roll), and
         * every pod gets CONFIG SET of all run-time directives, then its record. */
        set_at(w.rc, "spec config extra hz", "\"30\"");
        p = rt_run(&w, pods, NULL);
        CU_ASSERT_EQUAL(find_write(p, "configmaps")->kind, PLAN_APPLY);
        CU_ASSERT_EQUAL(find_write(p, "statefulsets") != NULL, sts_for_mode);
        rt_actions(p, cmds, sizeof(cmds), anns, sizeof(anns));
        CU_ASSERT_STRING_EQUAL(cmds, "cache-0@10.0.0.1 CONFIG SET " PERSIST_AOF_ARGS("hz 30 maxmemory-samples 7") ";"
                                     "cache-1@10.0.0.2 CONFIG SET " PERSIST_AOF_ARGS("hz 30 maxmemory-samples 7") ";"
                                     "cache-2@10.0.0.3 CONFIG SET " PERSIST_AOF_ARGS("hz 30 maxmemory-samples 7") ";");
        rt_record(PERSIST_AOF_LINES("hz 30\nmaxmemory-samples 7\n"), 0, rec, sizeof(rec));
        snprintf(want, sizeof(want), "cache-0=%s;cache-1=%s;cache-2=%s;", rec, rec, rec);
        CU_ASSERT_STRING_EQUAL(anns, want);
        /* Order: each command right before its record, after everything else. */
        size_t n = plan_action_count(p);
        CU_ASSERT_FATAL(n >= 6);
        for (size_t i = n - 6; i < n; i += 2) {
            CU_ASSERT_EQUAL(plan_action(p, i)->kind, PLAN_REDIS);
            CU_ASSERT_EQUAL(plan_action(p, i + 1)->kind, PLAN_ANNOTATE_POD);
            CU_ASSERT_STRING_EQUAL(plan_action(p, i)->name, plan_action(p, i + 1)->name);
        }
        const plan_event_t *e = find_event(p, "ConfigApplied");
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_EQUAL(e->action, (int)n - 1);
        CU_ASSERT(text_contains(e->message, "cache-0, cache-1, cache-2"));
        json_object *j = plan_to_json(p);
        CU_ASSERT(text_contains(json_object_to_json_string(j), "\"annotatePod\""));
        json_object_put(j);
        if (!m)
            perform(&w, p);
        plan_destroy(&p);
        /* The pods now carry the record: nothing more. */
        json_object_put(pods);
        pods = rt_pods(rec, rec, rec);
        p = rt_run(&w, pods, NULL);
        CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS) + count_kind(p, PLAN_ANNOTATE_POD), 0);
        if (!m)
            CU_ASSERT_EQUAL(plan_action_count(p), 0);
        plan_destroy(&p);
        /* A directive that is not run-time settable rolls the pods, as before. */
        set_at(w.rc, "spec config extra databases", "\"8\"");
        p = rt_run(&w, pods, NULL);
        CU_ASSERT_PTR_NOT_NULL(find_write(p, "statefulsets"));
        CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
        plan_destroy(&p);
        json_object_put(pods);
        world_free(&w);
    }
}


/* An observation that projection_observation_news calls no news to a Standalone plan
 * without TLS changes no such plan: the run-time config of three pods (every pod needs
 * CONFIG SET) planned with each observation below, and any two the projection calls the
 * same give the same plan. Fails when the plan starts reading a field of the observation
 * the projection leaves out (common/projection.h OBSERVATIONS). */
static void test_observation_news_to_no_standalone_plan(void)
{
    world_t w;
    world_init(&w, SPEC_RT("", "\"hz\":\"20\""), 1);
    converge(&w, T1);
    rdc_spec_t spec;
    rdc_field_errors_t *errs = rdc_field_errors_new();
    CU_ASSERT_EQUAL_FATAL(rdc_spec_parse(w.rc, &spec, errs), 0);
    CU_ASSERT_EQUAL_FATAL(spec.mode, RDC_MODE_STANDALONE);
    const char *obs_text[] = {
        NULL, /* none yet */
        "{\"nodes\":[]}",
        "{\"nodes\":[{\"pod\":\"cache-0\",\"ip\":\"10.0.0.1\",\"reachable\":true,\"role\":\"master\"}]}",
        "{\"nodes\":[{\"pod\":\"cache-0\",\"ip\":\"10.0.0.9\",\"reachable\":true,\"role\":\"slave\","
        "\"masterHost\":\"10.0.0.2\",\"linkUp\":true,\"tlsCert\":\"ab\"},{\"pod\":\"cache-1\",\"reachable\":true},"
        "{\"pod\":\"cache-2\",\"ip\":\"10.0.0.3\",\"reachable\":true,\"role\":\"master\"}],"
        "\"observedAt\":\"2026-12-07T00:00:00Z\"}",
        "{\"nodes\":[{\"pod\":\"cache-1\",\"ip\":\"10.0.0.2\",\"reachable\":false}]}",
        "{\"nodes\":[{\"pod\":\"cache-1\",\"ip\":\"10.0.0.7\",\"reachable\":false,\"role\":\"master\"},"
        "{\"pod\":\"cache-2\",\"reachable\":true}]}",
        "{\"nodes\":[{\"pod\":\"cache-2\",\"reachable\":false}]}",
    };
    enum { NOBS = sizeof(obs_text) / sizeof(obs_text[0]) };
    json_object *obs[NOBS];
    char *plans[NOBS];
    json_object *pods = rt_pods(NULL, NULL, NULL);
    for (size_t i = 0; i < NOBS; i++) {
        obs[i] = obs_text[i] ? parsef("%s", obs_text[i]) : NULL;
        plan_t *p = rt_run(&w, pods, obs[i]);
        json_object *j = plan_to_json(p);
        plans[i] = strdup(json_object_to_json_string(j));
        json_object_put(j);
        plan_destroy(&p);
    }
    int same = 0, differ = 0;
    for (size_t a = 0; a < NOBS; a++) {
        for (size_t b = 0; b < NOBS; b++) {
            int news = projection_observation_news(&spec, obs[a], obs[b]);
            CU_ASSERT_EQUAL(news, projection_observation_news(&spec, obs[b], obs[a]));
            if (!news) {
                same++;
                if (strcmp(plans[a], plans[b]))
                    fprintf(stderr, "observations %zu and %zu: no news, different plans\n", a, b);
                CU_ASSERT_STRING_EQUAL(plans[a], plans[b]);
            } else if (strcmp(plans[a], plans[b])) {
                differ++;
            }
        }
    }
    /* Both kinds were there: 0-3 are one class (no pod unreachable), 4-5 another. */
    CU_ASSERT_EQUAL(projection_observation_news(&spec, obs[0], obs[3]), 0);
    CU_ASSERT_EQUAL(projection_observation_news(&spec, obs[4], obs[5]), 0);
    CU_ASSERT_EQUAL(projection_observation_news(&spec, obs[3], obs[4]), 1);
    CU_ASSERT_EQUAL(projection_observation_news(&spec, obs[5], obs[6]), 1);
    CU_ASSERT(same >= 16 + 4 + 1);
    CU_ASSERT(differ > 0);
    /* Replication mode, and TLS: every difference is news. */
    spec.mode = RDC_MODE_REPLICATION;
    CU_ASSERT_EQUAL(projection_observation_news(&spec, obs[0], obs[3]), 1);
    CU_ASSERT_EQUAL(projection_observation_news(&spec, obs[2], obs[2]), 1);
    spec.mode = RDC_MODE_STANDALONE;
    spec.tls.secret = "t";
    CU_ASSERT_EQUAL(projection_observation_news(&spec, obs[0], obs[3]), 1);
    CU_ASSERT_EQUAL(projection_observation_news(NULL, obs[2], obs[2]), 1);
    for (size_t i = 0; i < NOBS; i++) {
        json_object_put(obs[i]);
        free(plans[i]);
    }
    json_object_put(pods);
    rdc_field_errors_destroy(&errs);
    world_free(&w);
}

/* spec.persistence changed on a running cluster: the ConfigMap is applied, no pod rolls,
 * and every pod is given the mode's directives with CONFIG SET and recorded; a default
 * cluster whose pods carry no record is given nothing (they started with its redis.conf). */
/* w's spec.persistence set to mode, planned with pods recorded have (NULL: none): no roll,
 * and when args is not NULL every pod gets CONFIG SET args and the record of lines. */
static void persistence_step(world_t *w, const char *mode, const char *have, const char *args, const char *lines)
{
    char cmds[4096], anns[1024], want[4096], rec[128];
    json_object *pods = rt_pods(have, have, have);
    char v[32];
    snprintf(v, sizeof(v), "\"%s\"", mode);
    set_at(w->rc, "spec persistence", v);
    plan_t *p = rt_run(w, pods, NULL);
    CU_ASSERT_PTR_NULL(find_write(p, "statefulsets"));
    rt_actions(p, cmds, sizeof(cmds), anns, sizeof(anns));
    want[0] = '\0';
    for (int i = 0; args && i < 3; i++)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "cache-%d@10.0.0.%d CONFIG SET %s;", i, i + 1, args);
    CU_ASSERT_STRING_EQUAL(cmds, want);
    if (lines) {
        rt_record(lines, 0, rec, sizeof(rec));
        snprintf(want, sizeof(want), "cache-0=%s;cache-1=%s;cache-2=%s;", rec, rec, rec);
        CU_ASSERT_STRING_EQUAL(anns, want);
    }
    perform(w, p);
    plan_destroy(&p);
    json_object_put(pods);
}

/* spec.persistence changed on a running cluster: the ConfigMap is applied, no pod rolls,
 * and every pod is given the mode's directives with CONFIG SET and recorded; a default
 * cluster whose pods carry no record is given nothing (they started with its redis.conf). */
static void test_persistence_change_applied_without_roll(void)
{
    world_t w;
    world_init(&w, "{\"size\":3,\"image\":\"redis\",\"persistence\":\"aof\"}", 1);
    converge(&w, T1);
    char rdb[128];
    rt_record("appendonly no\nsave 900 1 300 10 60 10000\n", 0, rdb, sizeof(rdb));
    persistence_step(&w, "aof", NULL, NULL, NULL); /* the default, no record: nothing */
    persistence_step(&w, "rdb", NULL, "appendonly no save 900 1 300 10 60 10000",
                     "appendonly no\nsave 900 1 300 10 60 10000\n");
    CU_ASSERT(text_contains(json_object_get_string(jsonx_get(jsonx_get(w.cm, "data"), "redis.conf")),
                            "appendonly no\nsave 900 1\n"));
    /* none, from pods that run rdb: snapshots off too (save's value is "") */
    persistence_step(&w, "none", rdb, "appendonly no save ", "appendonly no\nsave \n");
    CU_ASSERT(text_contains(json_object_get_string(jsonx_get(jsonx_get(w.cm, "data"), "redis.conf")), "save \"\"\n"));
    /* back to aof from pods recorded rdb: CONFIG SET of the default directives */
    persistence_step(&w, "aof", rdb, "appendfsync everysec appendonly yes save 900 1 300 10 60 10000",
                     PERSIST_AOF_LINES(""));
    world_free(&w);
}

/* Which pods get the directives (runtimecfg.h), as a table. */
typedef struct {
    const char *what;
    int ready, restarts, reachable, deleting;
    const char *ip;
    int annotated; /* carries the record of restart count 0 */
    int sent;
} rt_row_t;

static const rt_row_t rt_rows[] = {
    {"no annotation (new pod): sent", 1, 0, 1, 0, "10.0.0.1", 0, 1},
    {"recorded: nothing", 1, 0, 1, 0, "10.0.0.1", 1, 0},
    {"recorded, the container restarted since: sent again", 1, 1, 1, 0, "10.0.0.1", 1, 1},
    {"not Ready: not yet", 0, 0, 1, 0, "10.0.0.1", 0, 0},
    {"no IP: not yet", 1, 0, 1, 0, "", 0, 0},
    {"observed unreachable: not now", 1, 0, 0, 0, "10.0.0.1", 0, 0},
    {"being deleted: never", 1, 0, 1, 1, "10.0.0.1", 0, 0},
};

static void test_runtime_config_pods_table(void)
{
    world_t w;
    world_init(&w, SPEC_RT("", "\"hz\":\"20\""), 1);
    converge(&w, T1);
    char rec[128], cmds[1024], anns[512];
    rt_record(PERSIST_AOF_LINES("hz 20\n"), 0, rec, sizeof(rec));
    for (size_t r = 0; r < sizeof(rt_rows) / sizeof(rt_rows[0]); r++) {
        const rt_row_t *row = &rt_rows[r];
        json_object *pods = json_object_new_array();
        json_object *pod = rt_pod(0, row->ready, row->ip, row->restarts, row->annotated ? rec : NULL);
        if (row->deleting)
            set_at(pod, "metadata deletionTimestamp", "\"2024-05-01T12:00:00Z\"");
        json_object_array_add(pods, pod);
        /* cache-3 is past spec.size: never. */
        json_object_array_add(pods, rt_pod(3, 1, "10.0.0.4", 0, NULL));
        json_object *obs = repl_obs(row->reachable ? "cache-0 10.0.0.1 true master - 0 false 1"
                                                   : "cache-0 10.0.0.1 false - - 0 false 0",
                                    NULL, NULL);
        plan_t *p = rt_run(&w, pods, obs);
        rt_actions(p, cmds, sizeof(cmds), anns, sizeof(anns));
        const char *sent = "cache-0@10.0.0.1 CONFIG SET " PERSIST_AOF_ARGS("hz 20") ";";
        if (strcmp(cmds, row->sent ? sent : ""))
            fprintf(stderr, "\n%s: commands are \"%s\"\n", row->what, cmds);
        CU_ASSERT_STRING_EQUAL(cmds, row->sent ? sent : "");
        CU_ASSERT_EQUAL(count_kind(p, PLAN_ANNOTATE_POD), row->sent ? 1 : 0);
        if (row->sent) {
            char want[160];
            snprintf(want, sizeof(want), "cache-0=%.64s/%d;", rec, row->restarts);
            CU_ASSERT_STRING_EQUAL(anns, want);
        }
        plan_destroy(&p);
        json_object_put(pods);
        json_object_put(obs);
    }
    world_free(&w);
}

/* Nothing without run-time directives; a value that would carry a password token is
 * never sent; an invalid spec sends nothing. */
static void test_runtime_config_nothing_to_send(void)
{
    static const char *const specs[] = {
        SPEC_RT("", "\"databases\":\"4\""),
        "{\"size\":3,\"image\":\"redis\"}",
        SPEC_RT("", "\"notify-keyspace-events\":\"x${password}\""),
        SPEC_RT("", "\"hz\":\"20\",\"port\":\"7000\""), /* invalid: port is owned */
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        world_t w;
        world_init(&w, specs[i], 1);
        converge(&w, T1);
        json_object *pods = rt_pods(NULL, NULL, NULL);
        plan_t *p = rt_run(&w, pods, NULL);
        CU_ASSERT_EQUAL(count_kind(p, PLAN_REDIS), 0);
        CU_ASSERT_EQUAL(count_kind(p, PLAN_ANNOTATE_POD), 0);
        if (i < 3)
            CU_ASSERT_EQUAL(plan_action_count(p), 0);
        plan_destroy(&p);
        json_object_put(pods);
        world_free(&w);
    }
}

static const cu_entry_t tests[] = {
    CU_SUITE("plan: replication"),
    {"failover: min-replicas-to-write in redis.conf", test_failover_min_replicas},
    {"failover decisions (table)", test_failover_table},
    {"failover: not while a replica still hears the primary", test_failover_witness},
    {"failover: a primary back empty, equal offsets: the keys tell", test_failover_empty_primary},
    {"failover: spec.failover.downAfter", test_failover_down_after},
    {"topologies and their Redis actions (table)", test_replication_table},
    {"status.nodes; offsets alone write nothing", test_replication_status_ignores_offsets},
    {"the command record, and no decision from before it", test_command_record_and_freshness},
    {"Standalone: no topology", test_standalone_has_no_topology},
    {"role Services", test_role_services},
    {"auth from the Secret, not the ConfigMap", test_auth_rendering},
    {"auth: the record, a rotation's exact commands", test_auth_record_and_rotation},
    CU_SUITE("plan: runtime config"),
    {"a run-time directive: CONFIG SET and a record, no roll, then nothing",
     test_runtime_config_applied_without_roll},
    {"an observation news to no Standalone plan changes none (projection_observation_news)",
     test_observation_news_to_no_standalone_plan},
    {"spec.persistence changed: CONFIG SET on every pod, recorded, no roll",
     test_persistence_change_applied_without_roll},
    {"which pods get it (table)", test_runtime_config_pods_table},
    {"nothing to send", test_runtime_config_nothing_to_send},
    CU_SUITE("plan: create"),
    {"fresh create: finalizer, three applies, status, in order", test_fresh_create_order_and_requests},
    {"fresh create: children's fields, labels, owner refs, hash", test_fresh_create_children},
    {"converged world plans nothing", test_converged_world_plans_nothing},
    {"literal server Service is not drift", test_literal_server_service_is_not_drift},
    {"sidecars, extra owners, labels, quantity forms are not drift", test_foreign_additions_are_not_drift},
    {"minimal spec and defaults", test_minimal_spec_defaults},
    {"storage quantity normalised by the server", test_storage_quantity_normalised_by_server},
    {"image reference rules", test_image_reference_rules},
    {"image through the plan", test_image_through_plan},
    {"same config, same hash", test_same_config_same_hash},
    CU_SUITE("plan: drift"),
    {"ConfigMap data changed", test_drift_case},
    {"Service port changed", test_drift_case},
    {"Service port renamed", test_drift_case},
    {"StatefulSet replicas changed", test_drift_case},
    {"container image changed", test_drift_case},
    {"probe removed", test_drift_case},
    {"children deleted", test_drift_case},
    {"owner reference and label changed", test_drift_case},
    {"scale up and down", test_scale_up_and_down},
    {"config change rolls the pods", test_config_change_rolls_pods},
    {"storage change reported, not applied", test_storage_change_is_reported_not_applied},
    {"selector mismatch blocks the apply", test_selector_mismatch_blocks_statefulset_apply},
    {"child controlled by another owner", test_child_controlled_by_another_owner},
    CU_SUITE("plan: ownership and failed writes"),
    {"observed children: ours, not ours, absent (table)", test_ownership_table},
    {"every child in the way", test_ownership_every_child_in_the_way},
    {"a failed write in the status, once (table)", test_failed_write_table},
    {"a failed write: edges", test_failed_write_edges},
    CU_SUITE("plan: spec"),
    {"invalid specs, one field each", test_invalid_specs},
    {"every problem listed, quiet afterwards, recovers",
     test_invalid_spec_lists_every_problem_and_is_quiet_after},
    {"invalid names", test_invalid_names},
    {"missing uid", test_missing_uid},
    {"the spec rules are the webhook's", test_spec_rules_are_the_webhook_rules},
    {"invalid-spec message is bounded", test_invalid_spec_message_is_bounded},
    {"malformed input never crashes", test_malformed_input_never_crashes},
    {"hostile names stay in their path segment", test_hostile_names_stay_in_their_path_segment},
    {"inputs are not modified", test_inputs_are_not_modified},
    CU_SUITE("plan: lifecycle"),
    {"deletion with finalizer", test_deletion_with_finalizer},
    {"deletion without finalizer", test_deletion_without_finalizer},
    {"status transitions and lastTransitionTime", test_status_transitions_and_transition_times},
    {"rolling StatefulSet is Scaling", test_rolling_statefulset_is_scaling},
    {"zero ready is Pending", test_zero_ready_is_pending},
    {"foreign conditions left to their owner, generation tracked",
     test_status_leaves_foreign_conditions_and_tracks_generation},
    {"tampered status rewritten", test_status_tampered_is_rewritten},
    CU_SUITE("plan: compare"),
    {"subset rules", test_subset_rules},
    {"quantities", test_quantities},
    {"plan_to_json", test_plan_to_json},
    CU_SUITE("plan: status and take-back"),
    {"diagnosis of a cluster that is not Running (table)", test_diagnosis_table},
    {"diagnosis: the reads a worker with the cache's pods still makes", test_diagnosis_reads_from_cached_pods},
    {"diagnosis: a missing pod read for once the controller had time", test_diagnosis_reads_wait_for_the_controller},
    {"diagnosis asked only when not Running", test_diagnosis_is_asked_only_when_not_running},
    {"StorageClass checked before creating", test_storage_class_checked_before_creating},
    {"storage advice never leads to a mixed set", test_storage_change_advice},
    {"a refused child taken back (replace, recreate)", test_take_back_table},
    {"scale-up: no Pending flicker", test_scale_up_has_no_pending_flicker},
    {"pod template passes Pod Security restricted", test_pod_template_is_restricted},
    {"status.ready reads ready/size", test_status_ready_string},
    {"an owner reference of an older API version is ours, no drift",
     test_owner_reference_of_an_older_version},
};

CU_MAIN(tests)
