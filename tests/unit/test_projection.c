/* Unit tests of the projections (common/projection.h): what informerd compares of a
 * child before it queues the child's RedisCluster, and keeps of it.
 *
 * The tie to the plan: worlds as the API server and kwok hand them out (children with
 * every default, status and foreign label; pods with their whole spec and status), in
 * the states a reconcile meets (converged, a pod crash-looping or unschedulable, a
 * rollout, a changed spec replacing children, Replication with a switchover, a failover
 * and a password rotation, a runtime directive, a child in the way, a pod going away;
 * backups Pending, succeeded and failed with their RedisBackup, Job and the Job's pod, a
 * schedule due; Cluster mode's shards converged and a sharded backup's start and finish).
 * In each, the plan (plan_compute_children, plan_diagnosis_reads: workerd/plan.h) must
 *   - be the same when every child is cut down to its READ and WRITE rows, and to the
 *     compact form informerd keeps (PROJ_KEPT);
 *   - stay the same when any value outside the READ and WRITE rows changes, one at a
 *     time (a field the plan starts reading without a READ row fails here, naming it);
 * and the digest moves with a READ value and with nothing else.
 */
#include "buf.h"
#include "clock.h"
#include "cluster_fixture.h"
#include "cu_table.h"
#include "plan.h"
#include "projection.h"
#include "render.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 (INT64_C(1764547200) * NS_PER_SEC) /* 2025-12-01T00:00:00Z: the cluster is made */
#define T0_STR "2025-12-01T00:00:00Z"
#define T1 (T0 + 600 * NS_PER_SEC) /* settled by then */
#define NOW (T1 + 60 * NS_PER_SEC) /* when the plans of the tests run */

/* ---- JSON in a test ---------------------------------------------------------------------- */

/* The JSON of the printf-style text; a fatal test error when it does not parse. */
static json_object *jf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_object *jf(const char *fmt, ...)
{
    static char text[32768];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    CU_ASSERT_FATAL(n > 0 && (size_t)n < sizeof(text));
    json_object *o = json_tokener_parse(text);
    if (!o && strcmp(text, "null"))
        fprintf(stderr, "\n  test JSON does not parse: %s\n", text);
    CU_ASSERT_FATAL(o || !strcmp(text, "null"));
    return o;
}

/* The node at the space-separated path (numeric steps index arrays); with make, objects
 * missing on the way are added. NULL when it is not there. */
static json_object *node(json_object *o, const char *path, int make)
{
    char steps[512];
    snprintf(steps, sizeof(steps), "%s", path);
    json_object *cur = o;
    for (char *s = steps, *next; cur && s && *s; s = next) {
        next = strchr(s, ' ');
        if (next)
            *next++ = '\0';
        json_object *v = NULL;
        if (json_object_is_type(cur, json_type_array)) {
            v = json_object_array_get_idx(cur, (size_t)strtol(s, NULL, 10));
        } else if (!json_object_object_get_ex(cur, s, &v) && make) {
            v = json_object_new_object();
            json_object_object_add(cur, s, v);
        }
        cur = v;
    }
    return cur;
}

static const char *sval(json_object *o, const char *path)
{
    json_object *v = node(o, path, 0);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* Set the member at path (its last step) to v, taking v. */
static void put(json_object *o, const char *path, json_object *v)
{
    char parent[512];
    const char *last = strrchr(path, ' ');
    snprintf(parent, sizeof(parent), "%.*s", last ? (int)(last - path) : 0, path);
    json_object *holder = last ? node(o, parent, 1) : o;
    CU_ASSERT_FATAL(json_object_is_type(holder, json_type_object));
    json_object_object_add(holder, last ? last + 1 : path, v);
}

static json_object *dup(json_object *o)
{
    json_object *c = NULL;
    CU_ASSERT_FATAL(json_object_deep_copy(o, &c, NULL) == 0);
    return c;
}

static void time_str(int64_t t, char out[40])
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(clock_format_rfc3339(t, 0, out, 40));
}

/* ---- A world as the API server and kwok show it -------------------------------------------- */

enum { K_CM, K_SVC, K_STS, K_PDB, K_PRIMARY, K_REPLICAS, N_KIDS };
static const char *const kid_kind[N_KIDS] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget",
                                              "Service", "Service"};

/* What the work item carries in lists: the pods, Cluster mode's shard StatefulSets and
 * their budgets, and the backups with their Jobs and the Jobs' pods (BACKUP). */
enum { L_PODS, L_SHARD_STS, L_SHARD_PDB, L_BACKUPS, L_JOBS, L_BACKUP_PODS, N_LISTS };
static const char *const list_kind[N_LISTS] = {"Pod", "StatefulSet", "PodDisruptionBudget",
                                                "RedisBackup", "Job", "BackupPod"};

typedef struct {
    json_object *rc;
    json_object *kid[N_KIDS];
    json_object *list[N_LISTS]; /* arrays; NULL: none (the pods: always an array) */
    json_object *redis; /* observerd's observation, or NULL */
    plan_auth_t auth;
} world_t;

static void world_free(world_t *w)
{
    json_object_put(w->rc);
    for (int k = 0; k < N_KIDS; k++)
        json_object_put(w->kid[k]);
    for (int l = 0; l < N_LISTS; l++)
        json_object_put(w->list[l]);
    json_object_put(w->redis);
    memset(w, 0, sizeof(*w));
}

/* What the API server adds to every object it stores, and to each kind. */
static const struct {
    const char *kind; /* NULL: every kind */
    const char *path, *json;
} server_adds[] = {
    {NULL, "metadata resourceVersion", "\"4711\""},
    {NULL, "metadata creationTimestamp", "\"" T0_STR "\""},
    {NULL, "metadata managedFields",
     "[{\"manager\":\"rediscluster-operator\",\"operation\":\"Apply\",\"apiVersion\":\"v1\",\"time\":\"" T0_STR
     "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{}}}}]"},
    {NULL, "metadata labels example.com/team", "\"payments\""},
    {NULL, "metadata annotations example.com/note", "\"set by someone else\""},
    {"Service", "spec clusterIPs", "[\"10.96.0.10\"]"},
    {"Service", "spec sessionAffinity", "\"None\""},
    {"Service", "spec ipFamilies", "[\"IPv4\"]"},
    {"Service", "spec ipFamilyPolicy", "\"SingleStack\""},
    {"Service", "spec internalTrafficPolicy", "\"Cluster\""},
    {"Service", "status", "{\"loadBalancer\":{}}"},
    {"StatefulSet", "metadata generation", "1"},
    {"StatefulSet", "spec podManagementPolicy", "\"OrderedReady\""},
    {"StatefulSet", "spec revisionHistoryLimit", "10"},
    {"StatefulSet", "spec persistentVolumeClaimRetentionPolicy",
     "{\"whenDeleted\":\"Retain\",\"whenScaled\":\"Retain\"}"},
    {"StatefulSet", "spec template metadata creationTimestamp", "null"},
    {"StatefulSet", "spec template spec dnsPolicy", "\"ClusterFirst\""},
    {"StatefulSet", "spec template spec restartPolicy", "\"Always\""},
    {"StatefulSet", "spec template spec schedulerName", "\"default-scheduler\""},
    {"StatefulSet", "spec template spec terminationGracePeriodSeconds", "30"},
    {"RedisBackup", "metadata generation", "1"},
    {"Job", "metadata generation", "1"},
    {"Job", "spec completions", "1"},
    {"Job", "spec parallelism", "1"},
    {"Job", "spec completionMode", "\"NonIndexed\""},
    {"Job", "spec suspend", "false"},
    {"Job", "spec podReplacementPolicy", "\"TerminatingOrFailed\""},
    {"Job", "spec manualSelector", "false"},
    {"Job", "spec selector", "{\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"uid-job\"}}"},
    {"Job", "spec template metadata creationTimestamp", "null"},
    {"Job", "spec template metadata labels batch.kubernetes.io/controller-uid", "\"uid-job\""},
    {"Job", "spec template metadata labels batch.kubernetes.io/job-name", "\"job\""},
    {"Job", "spec template spec dnsPolicy", "\"ClusterFirst\""},
    {"Job", "spec template spec schedulerName", "\"default-scheduler\""},
    {"Job", "spec template spec terminationGracePeriodSeconds", "30"},
    {"Job", "status", "{\"active\":1,\"ready\":0,\"terminating\":0,\"startTime\":\"2025-12-01T00:10:01Z\","
                      "\"uncountedTerminatedPods\":{}}"},
    {"PodDisruptionBudget", "metadata generation", "1"},
    {"PodDisruptionBudget", "status",
     "{\"observedGeneration\":1,\"disruptionsAllowed\":1,\"currentHealthy\":3,\"desiredHealthy\":2,"
     "\"expectedPods\":3,\"conditions\":[{\"type\":\"DisruptionAllowed\",\"status\":\"True\",\"reason\":"
     "\"SufficientPods\",\"message\":\"\",\"observedGeneration\":1,\"lastTransitionTime\":\"" T0_STR "\"}]}"},
};

/* The defaults the API server fills into each container of a pod spec. */
static void container_defaults(json_object *pod_spec)
{
    json_object *cs = node(pod_spec, "containers", 0);
    for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        put(c, "imagePullPolicy", jf("\"IfNotPresent\""));
        put(c, "terminationMessagePath", jf("\"/dev/termination-log\""));
        put(c, "terminationMessagePolicy", jf("\"File\""));
        const char *probes[] = {"livenessProbe", "readinessProbe"};
        for (int k = 0; k < 2; k++)
            if (node(c, probes[k], 0)) {
                put(node(c, probes[k], 0), "timeoutSeconds", jf("1"));
                put(node(c, probes[k], 0), "successThreshold", jf("1"));
                put(node(c, probes[k], 0), "failureThreshold", jf("3"));
            }
    }
}

/* The object the API server returns for the create body: ours plus its fields. */
static json_object *stored(json_object *body)
{
    json_object *o = dup(body);
    const char *kind = sval(o, "kind");
    char uid[320];
    snprintf(uid, sizeof(uid), "\"uid-%s-%s\"", kind, sval(o, "metadata name"));
    put(o, "metadata uid", jf("%s", uid));
    for (size_t i = 0; i < sizeof(server_adds) / sizeof(server_adds[0]); i++) /* defaults: what the body lacks */
        if ((!server_adds[i].kind || !strcmp(server_adds[i].kind, kind)) && !node(o, server_adds[i].path, 0))
            put(o, server_adds[i].path, jf("%s", server_adds[i].json));
    if (!strcmp(kind, "Service") && !strcmp(sval(o, "spec clusterIP") ? sval(o, "spec clusterIP") : "", ""))
        put(o, "spec clusterIP", jf("\"10.96.0.10\""));
    if (!strcmp(kind, "Job"))
        container_defaults(node(o, "spec template spec", 0));
    if (!strcmp(kind, "StatefulSet")) {
        container_defaults(node(o, "spec template spec", 0));
        json_object *vct = node(o, "spec volumeClaimTemplates 0", 0);
        if (vct) {
            put(vct, "apiVersion", jf("\"v1\""));
            put(vct, "kind", jf("\"PersistentVolumeClaim\""));
            put(vct, "spec volumeMode", jf("\"Filesystem\""));
            put(vct, "status", jf("{\"phase\":\"Pending\"}"));
        }
    }
    return o;
}

/* The StatefulSet controller's status: replicas made, ready of them, at revisions. */
static void sts_status(json_object *sts, int ready, const char *current, const char *update, int updated)
{
    int64_t n = json_object_get_int64(node(sts, "spec replicas", 0));
    int64_t gen = json_object_get_int64(node(sts, "metadata generation", 0));
    put(sts, "status",
        jf("{\"observedGeneration\":%lld,\"replicas\":%lld,\"readyReplicas\":%d,\"currentReplicas\":%lld,"
           "\"updatedReplicas\":%d,\"availableReplicas\":%d,\"currentRevision\":\"%s\",\"updateRevision\":\"%s\","
           "\"collisionCount\":0}",
           (long long)gen, (long long)n, ready, (long long)n, updated, ready, current, update));
}

/* Pod <sts>-<ordinal> of the StatefulSet sts, the world's i-th (its IP 10.0.0.<i+1>), as
 * kwok shows one Ready: the template's spec and metadata with everything the API server,
 * the scheduler and the kubelet add. */
static json_object *make_pod(json_object *sts, int ordinal, int i, const char *rev)
{
    char created[40], ready[40], name[300];
    const char *owner = sval(sts, "metadata name");
    snprintf(name, sizeof(name), "%s-%d", owner, ordinal);
    time_str(T0 + (int64_t)(5 + 10 * i) * NS_PER_SEC, created);
    time_str(T0 + (int64_t)(9 + 10 * i) * NS_PER_SEC, ready);
    json_object *pod = jf("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                          "\"generateName\":\"%s-\",\"namespace\":\"ns\",\"uid\":\"uid-pod-%d\","
                          "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"%s\",\"ownerReferences\":[{"
                          "\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":\"%s\",\"uid\":\"%s\","
                          "\"controller\":true,\"blockOwnerDeletion\":true}]}}",
                          name, owner, i, 900 + i, created, owner, sval(sts, "metadata uid"));
    json_object *tmpl = node(sts, "spec template", 0);
    put(pod, "metadata labels", dup(node(tmpl, "metadata labels", 0)));
    if (node(tmpl, "metadata annotations", 0))
        put(pod, "metadata annotations", dup(node(tmpl, "metadata annotations", 0)));
    put(pod, "metadata labels controller-revision-hash", jf("\"%s\"", rev));
    put(pod, "metadata labels statefulset.kubernetes.io/pod-name", jf("\"%s\"", name));
    put(pod, "metadata labels apps.kubernetes.io/pod-index", jf("\"%d\"", ordinal));
    put(pod, "spec", dup(node(tmpl, "spec", 0)));
    put(pod, "spec nodeName", jf("\"kwok-node-%d\"", i % 2));
    put(pod, "spec hostname", jf("\"%s\"", name));
    put(pod, "spec subdomain", jf("\"%s\"", sval(sts, "spec serviceName")));
    put(pod, "spec serviceAccountName", jf("\"default\""));
    put(pod, "spec tolerations",
        jf("[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
           "\"tolerationSeconds\":300}]"));
    put(pod, "status",
        jf("{\"phase\":\"Running\",\"conditions\":[{\"type\":\"PodReadyToStartContainers\",\"status\":\"True\","
           "\"lastProbeTime\":null,\"lastTransitionTime\":\"%s\"},{\"type\":\"Initialized\",\"status\":\"True\","
           "\"lastProbeTime\":null,\"lastTransitionTime\":\"%s\"},{\"type\":\"Ready\",\"status\":\"True\","
           "\"lastProbeTime\":null,\"lastTransitionTime\":\"%s\"},{\"type\":\"ContainersReady\",\"status\":\"True\","
           "\"lastProbeTime\":null,\"lastTransitionTime\":\"%s\"},{\"type\":\"PodScheduled\",\"status\":\"True\","
           "\"lastProbeTime\":null,\"lastTransitionTime\":\"%s\"}],\"hostIP\":\"172.18.0.%d\",\"hostIPs\":[{\"ip\":"
           "\"172.18.0.%d\"}],\"podIP\":\"10.0.0.%d\",\"podIPs\":[{\"ip\":\"10.0.0.%d\"}],\"startTime\":\"%s\","
           "\"qosClass\":\"Burstable\",\"containerStatuses\":[{\"name\":\"redis\",\"ready\":true,\"started\":true,"
           "\"restartCount\":0,\"image\":\"docker.io/library/redis:7.2\",\"imageID\":\"docker.io/library/redis@"
           "sha256:0123abcd\",\"containerID\":\"containerd://c0ffee%d\",\"state\":{\"running\":{\"startedAt\":"
           "\"%s\"}},\"lastState\":{}}]}}",
           created, created, ready, ready, created, 2 + i % 2, 2 + i % 2, i + 1, i + 1, created, i, created));
    return pod;
}

/* An observation of the pods: cache-<primary> the master, the others its replicas with
 * their links up (primary -1: every pod a master of its own, Standalone); down: that pod
 * does not answer since long. */
static json_object *observe(int n, int primary, int down)
{
    json_object *o = jf("{\"observedAt\":\"2025-12-01T00:11:00.000Z\",\"nodes\":[]}");
    for (int i = 0; i < n; i++)
        json_object_array_add(
            node(o, "nodes", 0),
            i == down ? jf("{\"pod\":\"cache-%d\",\"ip\":\"10.0.0.%d\",\"reachable\":false,\"role\":\"\","
                           "\"masterHost\":\"\",\"masterPort\":0,\"linkUp\":false,\"offset\":0,\"lastOkAgoMs\":60000,"
                           "\"downSinceMs\":60000}",
                           i, i + 1)
                      : jf("{\"pod\":\"cache-%d\",\"ip\":\"10.0.0.%d\",\"reachable\":true,\"role\":\"%s\","
                           "\"masterHost\":\"%s%d\",\"masterPort\":%d,\"linkUp\":%s,\"offset\":%d,\"lastOkAgoMs\":100,"
                           "\"downSinceMs\":0}",
                           i, i + 1, primary < 0 || i == primary ? "master" : "slave",
                           primary < 0 || i == primary ? "" : "10.0.0.", primary + 1,
                           primary < 0 || i == primary ? 0 : 6379, primary < 0 || i == primary ? "false" : "true",
                           5000 - i));
    return o;
}

/* One plan of the world at now. */
static plan_t *plan_of(const world_t *w, int64_t now)
{
    plan_children_t kids = {w->kid[K_CM], w->kid[K_SVC], w->kid[K_STS], w->kid[K_PDB]};
    plan_observed_t more = {.pods = w->list[L_PODS],
                            .members = w->list[L_PODS],
                            .redis = w->redis,
                            .primary_service = w->kid[K_PRIMARY],
                            .replicas_service = w->kid[K_REPLICAS],
                            .shard_statefulsets = w->list[L_SHARD_STS],
                            .shard_budgets = w->list[L_SHARD_PDB],
                            .backups = w->list[L_BACKUPS],
                            .jobs = w->list[L_JOBS],
                            .backup_pods = w->list[L_BACKUP_PODS],
                            .auth = w->auth};
    plan_t *p = plan_compute_children(w->rc, &kids, &more, now);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* The object of that name in arr (NULL: none), or NULL. */
static json_object *named(json_object *arr, const char *name)
{
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        if (!strcmp(sval(o, "metadata name"), name))
            return o;
    }
    return NULL;
}

/* Append o to the world's list l (made when there is none), taking o. */
static void add_to(world_t *w, int l, json_object *o)
{
    if (!w->list[l])
        w->list[l] = json_object_new_array();
    json_object_array_add(w->list[l], o);
}

/* Put the members of the plan's label or annotation patch a on its pod. */
static void patch_pod(world_t *w, const plan_action_t *a)
{
    const char *field = a->kind == PLAN_LABEL_POD ? "labels" : "annotations";
    json_object *set = node(a->body, a->kind == PLAN_LABEL_POD ? "metadata labels" : "metadata annotations", 0);
    json_object *pod = named(w->list[L_PODS], a->name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pod);
    json_object_object_foreach(set, k, v)
    {
        char path[300];
        snprintf(path, sizeof(path), "metadata %s %s", field, k);
        put(pod, path, dup(v));
    }
}

/* Perform what of the plan lands on the RedisCluster, the RedisBackups and the pods
 * (status, labels, annotations) and the Jobs it creates, as the API server would. */
static void perform(world_t *w, const plan_t *p)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_UPDATE_STATUS) {
            json_object *o = !strcmp(a->resource, "redisbackups") ? named(w->list[L_BACKUPS], a->name) : w->rc;
            CU_ASSERT_PTR_NOT_NULL_FATAL(o);
            put(o, "status", dup(node(a->body, "status", 0)));
        } else if (a->kind == PLAN_CREATE && !strcmp(a->resource, "jobs")) {
            add_to(w, L_JOBS, stored(a->body));
        } else if (a->kind == PLAN_LABEL_POD || a->kind == PLAN_ANNOTATE_POD) {
            patch_pod(w, a);
        }
    }
}

/* A world's topology: spec.mode. */
enum { W_STANDALONE, W_REPLICATION, W_CLUSTER };
#define REV "cache-5d8f" /* the StatefulSets' revision */

/* Keep the child the plan's create a makes, as the API server stores it: Cluster mode's
 * shard StatefulSets and budgets (<name>-shard<k>) in their lists. */
static void keep_child(world_t *w, const plan_action_t *a)
{
    const char *name = sval(a->body, "metadata name");
    int sts = !strcmp(a->resource, "statefulsets"), pdb = !strcmp(a->resource, "poddisruptionbudgets");
    if (strstr(name, "-shard") && (sts || pdb)) {
        add_to(w, sts ? L_SHARD_STS : L_SHARD_PDB, stored(a->body));
        return;
    }
    int k = !strcmp(a->resource, "configmaps") ? K_CM
            : sts                              ? K_STS
            : pdb                              ? K_PDB
            : strstr(name, "-primary")         ? K_PRIMARY
            : strstr(name, "-replicas")        ? K_REPLICAS
                                               : K_SVC;
    w->kid[k] = stored(a->body);
}

/* The StatefulSet sts all Ready at REV, and its pods, the world's from the i-th on (their
 * IPs follow); the index after them. */
static int sts_pods(world_t *w, json_object *sts, int i)
{
    int n = (int)json_object_get_int64(node(sts, "spec replicas", 0));
    sts_status(sts, n, REV, REV, n);
    for (int k = 0; k < n; k++)
        json_object_array_add(w->list[L_PODS], make_pod(sts, k, i + k, REV));
    return i + n;
}

/* A world of spec (topo, knobs) whose children the plan created at T0, whose pods all
 * run Ready, with the status the plan wrote since. */
static void world_new(world_t *w, const char *spec, int topo)
{
    memset(w, 0, sizeof(*w));
    w->rc = jf("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\","
               "\"namespace\":\"ns\",\"uid\":\"uid-rc\",\"generation\":1,\"resourceVersion\":\"100\","
               "\"creationTimestamp\":\"" T0_STR "\",\"finalizers\":[\"" PLAN_FINALIZER "\"]},\"spec\":%s}",
               spec);
    w->list[L_PODS] = json_object_new_array();
    plan_t *p = plan_of(w, T0);
    for (size_t i = 0; i < plan_action_count(p); i++)
        if (plan_action(p, i)->kind == PLAN_CREATE)
            keep_child(w, plan_action(p, i));
    plan_destroy(&p);
    int n = 0;
    if (topo == W_CLUSTER) {
        for (size_t k = 0; k < json_object_array_length(w->list[L_SHARD_STS]); k++)
            n = sts_pods(w, json_object_array_get_idx(w->list[L_SHARD_STS], k), n);
        w->redis = cluster_observation("cache", MET, n, "ok");
    } else {
        CU_ASSERT_PTR_NOT_NULL_FATAL(w->kid[K_STS]);
        n = sts_pods(w, w->kid[K_STS], 0);
        w->redis = observe(n, topo == W_REPLICATION ? 0 : -1, -1);
    }
    CU_ASSERT_FATAL(n > 0);
    for (int round = 0; round < 3; round++) {
        p = plan_of(w, T1);
        perform(w, p);
        plan_destroy(&p);
    }
}

/* ---- What a plan is, to compare two ----------------------------------------------------- */

/* Everything the plan decides at now, as text: the plan (actions with their bodies and
 * reasons, events, status, requeue), what it asks to read, and plan_diagnosis_reads. */
static void fingerprint(const world_t *w, int64_t now, buf_t *out)
{
    plan_t *p = plan_of(w, now);
    json_object *j = plan_to_json(p);
    plan_diag_reads_t dr;
    plan_diagnosis_reads(w->kid[K_STS], w->list[L_PODS], now, &dr);
    buf_reset(out);
    buf_printf(out, "%s\nwants_diagnosis %d selector %s storage_class %s held %lld\ndiag_reads %d %s\n",
               json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN), plan_wants_diagnosis(p),
               plan_pod_selector(p) ? plan_pod_selector(p) : "-",
               plan_storage_class_to_check(p) ? plan_storage_class_to_check(p) : "-",
               (long long)plan_status_held_ns(p), dr.sts_events, dr.pod ? dr.pod : "-");
    json_object_put(j);
    plan_destroy(&p);
}

/* The world with every child and pod cut down to the rows of uses. */
static void world_reduced(const world_t *w, unsigned uses, world_t *out)
{
    memset(out, 0, sizeof(*out));
    out->rc = json_object_get(w->rc);
    out->redis = json_object_get(w->redis);
    out->auth = w->auth;
    int oom = 0;
    for (int k = 0; k < N_KIDS; k++)
        out->kid[k] = w->kid[k] ? projection_reduce(projection_of(kid_kind[k]), w->kid[k], uses, &oom) : NULL;
    for (int l = 0; l < N_LISTS; l++) {
        const projection_t *pl = projection_of(list_kind[l]);
        out->list[l] = w->list[l] ? json_object_new_array() : NULL;
        for (size_t i = 0; w->list[l] && i < json_object_array_length(w->list[l]); i++)
            json_object_array_add(out->list[l], projection_reduce(pl, json_object_array_get_idx(w->list[l], i), uses,
                                                                  &oom));
    }
    CU_ASSERT_FALSE(oom);
}

/* ---- The scenarios ---------------------------------------------------------------------- */

#define SPEC_KNOBS                                                                                                  \
    "\"image\":\"redis\",\"version\":\"7.2\",\"config\":{\"maxmemory\":\"256mb\",\"extra\":{\"hz\":\"20\"}},"     \
    "\"storage\":{\"size\":\"1Gi\",\"storageClass\":\"standard\"},\"serviceMetadata\":{\"annotations\":{"           \
    "\"example.com/lb\":\"internal\"}},\"podMetadata\":{\"labels\":{\"example.com/tier\":\"cache\"}},"              \
    "\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"redis\",\"effect\":\"NoSchedule\"}]"
#define SPEC_STANDALONE "{\"size\":3,\"mode\":\"Standalone\"," SPEC_KNOBS "}"
#define SPEC_REPLICATION "{\"size\":3,\"mode\":\"Replication\"," SPEC_KNOBS "}"
#define SPEC_AUTH                                                                                                   \
    "{\"size\":3,\"mode\":\"Replication\",\"auth\":{\"secretRef\":{\"name\":\"cache-pass\"}}," SPEC_KNOBS "}"

#define SPEC_RESTORE                                                                                                \
    "{\"size\":3,\"mode\":\"Standalone\",\"restore\":{\"from\":{\"endpoint\":\"http://127.0.0.1:7070\","            \
    "\"bucket\":\"backups\",\"key\":\"cache.rdb\",\"credentialsSecret\":\"s3\"}}," SPEC_KNOBS "}"

static json_object *pod_at(const world_t *w, int i)
{
    return json_object_array_get_idx(w->list[L_PODS], (size_t)i);
}

/* The StatefulSet counts ready pods, and the rest as given. */
static void sts_ready(world_t *w, int ready)
{
    sts_status(w->kid[K_STS], ready, REV, REV, 3);
}

static void vary_none(world_t *w)
{
    (void)w;
}

/* cache-1's container keeps crashing. */
static void vary_crashloop(world_t *w)
{
    json_object *pod = pod_at(w, 1);
    put(node(pod, "status conditions 2", 0), "status", jf("\"False\""));
    put(node(pod, "status conditions 2", 0), "reason", jf("\"ContainersNotReady\""));
    put(node(pod, "status conditions 3", 0), "status", jf("\"False\""));
    json_object *c = node(pod, "status containerStatuses 0", 0);
    put(c, "ready", jf("false"));
    put(c, "restartCount", jf("4"));
    put(c, "state", jf("{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off 40s restarting failed "
                       "container=redis pod=cache-1\"}}"));
    put(c, "lastState", jf("{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\",\"startedAt\":\"" T0_STR "\","
                           "\"finishedAt\":\"" T0_STR "\",\"containerID\":\"containerd://dead1\"}}"));
    sts_ready(w, 2);
}

/* RESTORE: cache-1's restore init container failed and waits to run again. */
static void vary_restore_failed(world_t *w)
{
    json_object *pod = pod_at(w, 1);
    put(node(pod, "status conditions 2", 0), "status", jf("\"False\""));
    put(node(pod, "status conditions 3", 0), "status", jf("\"False\""));
    put(node(pod, "status containerStatuses 0", 0), "ready", jf("false"));
    put(node(pod, "status", 0), "initContainerStatuses",
        jf("[{\"name\":\"restore\",\"ready\":false,\"restartCount\":2,\"state\":{\"waiting\":{\"reason\":"
           "\"CrashLoopBackOff\",\"message\":\"back-off 20s\"}},\"lastState\":{\"terminated\":{\"exitCode\":1,"
           "\"reason\":\"Error\",\"message\":\"rdc-backup restore: GetObject backups/cache.rdb: SHA-256 mismatch\","
           "\"startedAt\":\"" T0_STR "\",\"finishedAt\":\"" T0_STR "\"}}}]"));
    sts_ready(w, 2);
}

/* cache-2 cannot be scheduled. */
static void vary_unschedulable(world_t *w)
{
    json_object *pod = pod_at(w, 2);
    json_object_object_del(node(pod, "spec", 0), "nodeName");
    put(pod, "status",
        jf("{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"lastProbeTime\":"
           "null,\"lastTransitionTime\":\"" T0_STR "\",\"reason\":\"Unschedulable\",\"message\":\"0/2 nodes are "
           "available: 2 node(s) had untolerated taint {dedicated: db}.\"}],\"qosClass\":\"Burstable\"}"));
    sts_ready(w, 2);
}

/* cache-2 is gone and not made again (the StatefulSet waits): its Events may say why. */
static void vary_missing(world_t *w)
{
    json_object_array_del_idx(w->list[L_PODS], 2, 1);
    sts_status(w->kid[K_STS], 2, REV, REV, 2);
    put(w->kid[K_STS], "status replicas", jf("2"));
}

/* cache-2 is not made yet: cache-1 turned Ready 5 s ago, so the StatefulSet controller
 * had no time to fail (no Events to read). */
static void vary_next_pod(world_t *w)
{
    char just[40];
    time_str(NOW - 5 * NS_PER_SEC, just);
    vary_missing(w);
    put(node(pod_at(w, 1), "status conditions 2", 0), "lastTransitionTime", jf("\"%s\"", just));
}

/* The StatefulSet rolls out a new revision: cache-2 has it. */
static void vary_rolling(world_t *w)
{
    sts_status(w->kid[K_STS], 3, REV, "cache-77aa", 1);
    put(pod_at(w, 2), "metadata labels controller-revision-hash", jf("\"cache-77aa\""));
}

/* The spec changed: the Service and the StatefulSet are replaced (their spec hash is
 * another), the ConfigMap applied. */
static void vary_spec_changed(world_t *w)
{
    put(w->rc, "spec config maxmemory", jf("\"512mb\""));
    put(w->rc, "spec serviceMetadata annotations example.com/lb", jf("\"external\""));
    put(w->rc, "metadata generation", jf("2"));
}

/* cache-1 is being deleted (a drain). */
static void vary_deleting(world_t *w)
{
    put(pod_at(w, 1), "metadata deletionTimestamp", jf("\"2025-12-01T00:10:30Z\""));
    put(pod_at(w, 1), "metadata deletionGracePeriodSeconds", jf("30"));
    sts_ready(w, 2);
}

/* cache-0's Redis restarted: its runtime directives are applied again. */
static void vary_restarted(world_t *w)
{
    put(node(pod_at(w, 0), "status containerStatuses 0", 0), "restartCount", jf("1"));
}

/* The ConfigMap is another object's. */
static void vary_owner_conflict(world_t *w)
{
    put(w->kid[K_CM], "metadata ownerReferences",
        jf("[{\"apiVersion\":\"example.com/v1\",\"kind\":\"Other\",\"name\":\"x\",\"uid\":\"uid-x\","
           "\"controller\":true}]"));
}

/* REPLICATION: a new revision rolls out, one replica at a time (SWITCHOVER). */
static void vary_switchover(world_t *w)
{
    sts_status(w->kid[K_STS], 3, REV, "cache-77aa", 0);
}

/* REPLICATION: the primary does not answer since long (FAILOVER). */
static void vary_failover(world_t *w)
{
    json_object_put(w->redis);
    w->redis = observe(3, 0, 0);
}

/* AUTH: the Secret's password is not the recorded one. */
static void vary_rotate(world_t *w)
{
    w->auth = PLAN_AUTH_ROTATE;
}

/* ---- BACKUP: RedisBackups, their Jobs and the Jobs' pods ------------------------------------ */

#define BACKUP_SPEC                                                                                                 \
    "{\"source\":{\"cluster\":\"cache\"},\"destination\":{\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":"       \
    "\"backups\",\"prefix\":\"prod/cache\"},\"credentialsSecret\":{\"name\":\"s3\"}}"
#define SPEC_SCHEDULE                                                                                               \
    "{\"size\":3,\"mode\":\"Standalone\",\"backup\":{\"schedule\":\"*/5 * * * *\",\"keep\":2,\"destination\":{"     \
    "\"endpoint\":\"http://127.0.0.1:7070\",\"bucket\":\"backups\",\"prefix\":\"sched/cache\"},"                    \
    "\"credentialsSecret\":\"s3\"}," SPEC_KNOBS "}"
#define SPEC_CLUSTER                                                                                                \
    "{\"size\":6,\"mode\":\"Cluster\",\"cluster\":{\"shards\":3,\"replicasPerShard\":1}," SPEC_KNOBS "}"
#define BAD_LINE                                                                                                   \
    "rdc-backup take: PutObject backups/prod/cache/nightly.rdb: HTTP 404 NoSuchBucket: The specified bucket does " \
    "not exist."

/* The RedisBackup name of the cluster as the API server stores it, created at created,
 * with labels (JSON members, "" none) and status (a JSON object, "" none). */
static void add_backup(world_t *w, const char *name, const char *created, const char *labels, const char *status)
{
    json_object *rb = jf("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisBackup\",\"metadata\":{\"name\":"
                         "\"%s\",\"namespace\":\"ns\",\"labels\":{%s}},\"spec\":" BACKUP_SPEC "%s%s}",
                         name, labels, *status ? ",\"status\":" : "", status);
    json_object *o = stored(rb);
    put(o, "metadata creationTimestamp", jf("\"%s\"", created));
    add_to(w, L_BACKUPS, o);
    json_object_put(rb);
}

/* The argument after flag in the command cmd (an array), or "?". */
static const char *arg_after(json_object *cmd, const char *flag)
{
    for (size_t i = 0; i + 1 < json_object_array_length(cmd); i++)
        if (!strcmp(json_object_get_string(json_object_array_get_idx(cmd, i)), flag))
            return json_object_get_string(json_object_array_get_idx(cmd, i + 1));
    return "?";
}

/* The status of the backup container c, ended with exit code code and message (NULL:
 * rdc-backup's ok line of the key and source its command names), as the kubelet shows it. */
static json_object *container_ended(json_object *c, int code, const char *message)
{
    char ok[1024];
    json_object *cmd = node(c, "command", 0);
    snprintf(ok, sizeof(ok),
             "{\"result\":\"ok\",\"source\":\"%s\",\"bucket\":\"backups\",\"key\":\"%s\",\"size\":26889072,\"sha256\":"
             "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\",\"offset\":29188913,\"startTime\":"
             "\"2025-12-01T00:10:02Z\",\"completionTime\":\"2025-12-01T00:10:40Z\"}\n",
             arg_after(cmd, "--redis"), arg_after(cmd, "--key"));
    json_object *st = jf("{\"name\":\"%s\",\"ready\":false,\"started\":false,\"restartCount\":0,\"image\":\"%s\","
                         "\"imageID\":\"registry.example.com/rdc@sha256:feed\",\"containerID\":\"containerd://b4c\","
                         "\"lastState\":{},\"state\":{\"terminated\":{\"exitCode\":%d,\"reason\":\"%s\",\"startedAt\":"
                         "\"2025-12-01T00:10:02Z\",\"finishedAt\":\"2025-12-01T00:10:40Z\",\"containerID\":"
                         "\"containerd://b4c\"}}}",
                         sval(c, "name"), sval(c, "image"), code, code ? "Error" : "Completed");
    put(st, "state terminated message", json_object_new_string(message ? message : ok));
    return st;
}

/* The pod of the Job job as the API server, the scheduler and the kubelet show it ended
 * in phase, each container with exit code code and message (container_ended). */
static json_object *job_pod(json_object *job, const char *phase, int code, const char *message)
{
    const char *name = sval(job, "metadata name");
    json_object *tmpl = node(job, "spec template", 0);
    json_object *pod = jf("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-x7k2p\","
                          "\"generateName\":\"%s-\",\"namespace\":\"ns\",\"uid\":\"uid-bpod\","
                          "\"resourceVersion\":\"977\","
                          "\"creationTimestamp\":\"2025-12-01T00:10:01Z\",\"ownerReferences\":[{\"apiVersion\":"
                          "\"batch/v1\",\"kind\":\"Job\",\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true,"
                          "\"blockOwnerDeletion\":true}]}}",
                          name, name, name, sval(job, "metadata uid"));
    put(pod, "metadata labels", dup(node(tmpl, "metadata labels", 0)));
    put(pod, "spec", dup(node(tmpl, "spec", 0)));
    put(pod, "spec nodeName", jf("\"kwok-node-1\""));
    put(pod, "spec serviceAccountName", jf("\"default\""));
    put(pod, "status",
        jf("{\"phase\":\"%s\",\"conditions\":[{\"type\":\"PodReadyToStartContainers\",\"status\":\"False\","
           "\"lastProbeTime\":null,\"lastTransitionTime\":\"2025-12-01T00:10:41Z\"},{\"type\":\"Initialized\","
           "\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2025-12-01T00:10:01Z\",\"reason\":"
           "\"PodCompleted\"},{\"type\":\"Ready\",\"status\":\"False\",\"lastProbeTime\":null,\"lastTransitionTime\":"
           "\"2025-12-01T00:10:41Z\",\"reason\":\"PodCompleted\"},{\"type\":\"PodScheduled\",\"status\":\"True\","
           "\"lastProbeTime\":null,\"lastTransitionTime\":\"2025-12-01T00:10:01Z\"}],\"hostIP\":\"172.18.0.3\","
           "\"podIP\":\"10.0.0.40\",\"podIPs\":[{\"ip\":\"10.0.0.40\"}],\"startTime\":\"2025-12-01T00:10:01Z\","
           "\"qosClass\":\"BestEffort\",\"containerStatuses\":[]}",
           phase));
    json_object *cs = node(tmpl, "spec containers", 0), *out = node(pod, "status containerStatuses", 0);
    for (size_t i = 0; i < json_object_array_length(cs); i++)
        json_object_array_add(out, container_ended(json_object_array_get_idx(cs, i), code, message));
    return pod;
}

/* BACKUP: the RedisBackup nightly, Pending (no Ready pod a moment ago): START makes its Job. */
static void vary_backup_pending(world_t *w)
{
    add_backup(w, "nightly", "2025-12-01T00:10:30Z", "",
               "{\"phase\":\"Pending\",\"message\":\"waiting for a Ready pod of the cluster to take the backup "
               "from\"}");
}

/* BACKUP: nightly started (the plan made its Job and wrote Running), and the Job's pod
 * ended in phase with each container's exit code and message (NULL: the ok line); the
 * Job controller's status says how the Job ended. */
static void backup_ended(world_t *w, const char *phase, int code, const char *message)
{
    add_backup(w, "nightly", "2025-12-01T00:09:30Z", "", "");
    plan_t *p = plan_of(w, T1);
    perform(w, p);
    plan_destroy(&p);
    json_object *job = named(w->list[L_JOBS], "nightly");
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    add_to(w, L_BACKUP_PODS, job_pod(job, phase, code, message));
    put(job, "status",
        jf("{\"%s\":1,\"ready\":0,\"terminating\":0,\"startTime\":\"2025-12-01T00:10:01Z\",\"uncountedTerminatedPods\":"
           "{},\"conditions\":[{\"type\":\"%s\",\"status\":\"True\",\"lastProbeTime\":\"2025-12-01T00:10:42Z\","
           "\"lastTransitionTime\":\"2025-12-01T00:10:42Z\",\"reason\":\"%s\",\"message\":\"%s\"},{\"type\":\"%s\","
           "\"status\":\"True\",\"lastProbeTime\":\"2025-12-01T00:10:42Z\",\"lastTransitionTime\":"
           "\"2025-12-01T00:10:42Z\",\"reason\":\"%s\",\"message\":\"%s\"}]}",
           code ? "failed" : "succeeded", code ? "FailureTarget" : "SuccessCriteriaMet",
           code ? "BackoffLimitExceeded" : "CompletionsReached",
           code ? "Job has reached the specified backoff limit" : "Reached expected number of succeeded pods",
           code ? "Failed" : "Complete", code ? "BackoffLimitExceeded" : "CompletionsReached",
           code ? "Job has reached the specified backoff limit" : "Reached expected number of succeeded pods"));
}

/* BACKUP: rdc-backup said ok in every container (FINISH: Succeeded). */
static void vary_backup_succeeded(world_t *w)
{
    backup_ended(w, "Succeeded", 0, NULL);
}

/* BACKUP: rdc-backup's bucket is missing (FINISH: Failed with its message). */
static void vary_backup_failed(world_t *w)
{
    backup_ended(w, "Failed", 1, BAD_LINE "\n");
}

/* SCHEDULE: the last run was at 00:05 (00:10's is due), and three of the schedule's
 * backups Succeeded before (keep 2: the oldest goes). */
static void vary_schedule_due(world_t *w)
{
    static const char *const made[][2] = {{"cache-202511302300", "2025-11-30T23:00:00Z"},
                                          {"cache-202511302330", "2025-11-30T23:30:00Z"},
                                          {"cache-202512010000", "2025-12-01T00:00:00Z"}};
    put(w->rc, "status backup lastScheduleTime", jf("\"2025-12-01T00:05:00Z\""));
    for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++)
        add_backup(w, made[i][0], made[i][1], "\"" RENDER_LABEL_SCHEDULE "\":\"cache\"",
                   "{\"phase\":\"Succeeded\",\"key\":\"sched/cache/x.rdb\",\"size\":100}");
}

typedef struct {
    const char *name;
    const char *spec;
    int topo;
    void (*vary)(world_t *w);
    const char *shows; /* the plan says this: the scenario is what it claims */
} scenario_t;

static const scenario_t scenarios[] = {
    {"Standalone, converged", SPEC_STANDALONE, W_STANDALONE, vary_none, "\"phase\":\"Running\""},
    {"Standalone, a pod crash-looping", SPEC_STANDALONE, W_STANDALONE, vary_crashloop, "CrashLoopBackOff"},
    {"Standalone, a pod unschedulable", SPEC_STANDALONE, W_STANDALONE, vary_unschedulable, "FailedScheduling"},
    {"Standalone, a pod missing", SPEC_STANDALONE, W_STANDALONE, vary_missing, "diag_reads 1"},
    {"Standalone, the next pod not made yet", SPEC_STANDALONE, W_STANDALONE, vary_next_pod, "diag_reads 0"},
    {"Standalone, a rollout", SPEC_STANDALONE, W_STANDALONE, vary_rolling, "RollingUpdate"},
    {"Standalone, the spec changed", SPEC_STANDALONE, W_STANDALONE, vary_spec_changed, "\"kind\":\"replace\""},
    {"Standalone, a pod deleted", SPEC_STANDALONE, W_STANDALONE, vary_deleting, "ReplicasNotReady"},
    {"Standalone, Redis restarted", SPEC_STANDALONE, W_STANDALONE, vary_restarted, "ConfigApplied"},
    {"Standalone, a child in the way", SPEC_STANDALONE, W_STANDALONE, vary_owner_conflict, "OwnerConflict"},
    {"Standalone, a restore failed", SPEC_RESTORE, W_STANDALONE, vary_restore_failed, "RestoreFailed"},
    {"Replication, converged", SPEC_REPLICATION, W_REPLICATION, vary_none, "\"phase\":\"Running\""},
    {"Replication, a rollout", SPEC_REPLICATION, W_REPLICATION, vary_switchover, "RolledPod"},
    {"Replication, the primary down", SPEC_REPLICATION, W_REPLICATION, vary_failover, "FailedOver"},
    {"Replication, a password rotation", SPEC_AUTH, W_REPLICATION, vary_rotate, "PasswordRotated"},
    {"Replication, a pod deleted", SPEC_REPLICATION, W_REPLICATION, vary_deleting, "ReplicasMissing"},
    {"Standalone, a backup Pending", SPEC_STANDALONE, W_STANDALONE, vary_backup_pending, "BackupStarted"},
    {"Standalone, a backup succeeded", SPEC_STANDALONE, W_STANDALONE, vary_backup_succeeded, "BackupSucceeded"},
    {"Standalone, a backup failed", SPEC_STANDALONE, W_STANDALONE, vary_backup_failed, "NoSuchBucket"},
    {"Standalone, a scheduled backup due", SPEC_SCHEDULE, W_STANDALONE, vary_schedule_due, "BackupScheduled"},
    {"Cluster, converged", SPEC_CLUSTER, W_CLUSTER, vary_none,
     "{\"actions\":[],\"events\":[],\"status\":{\"phase\":\"Running\""},
    {"Cluster, a backup Pending", SPEC_CLUSTER, W_CLUSTER, vary_backup_pending, "BackupStarted"},
    {"Cluster, a backup succeeded", SPEC_CLUSTER, W_CLUSTER, vary_backup_succeeded, "BackupSucceeded"},
    {"Cluster, a backup failed", SPEC_CLUSTER, W_CLUSTER, vary_backup_failed, "shard 0: rdc-backup take"},
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static void scenario_world(const scenario_t *sc, world_t *w)
{
    world_new(w, sc->spec, sc->topo);
    sc->vary(w);
}

/* ---- The tests ---------------------------------------------------------------------------- */

/* Every scenario is what it says, and its plan is the same from the children cut down to
 * their READ and WRITE rows, and to the compact form. */
static void test_plan_same_from_projection(void)
{
    buf_t base, cut;
    buf_init(&base, 0);
    buf_init(&cut, 0);
    for (size_t i = 0; i < N_SCENARIOS; i++) {
        world_t w, r;
        scenario_world(&scenarios[i], &w);
        fingerprint(&w, NOW, &base);
        if (!strstr(buf_str(&base), scenarios[i].shows)) {
            fprintf(stderr, "\n  %s: the plan does not show %s:\n%s\n", scenarios[i].name, scenarios[i].shows,
                    buf_str(&base));
            CU_FAIL("a scenario is not what it claims");
        }
        const unsigned cuts[] = {PROJ_BIT(PROJ_READ) | PROJ_BIT(PROJ_WRITE) | PROJ_BIT(PROJ_LATE), PROJ_KEPT};
        for (size_t k = 0; k < 2; k++) {
            world_reduced(&w, cuts[k], &r);
            fingerprint(&r, NOW, &cut);
            if (strcmp(buf_str(&base), buf_str(&cut))) {
                fprintf(stderr, "\n  %s (%s): the plan differs from the projection's:\n%s\nvs\n%s\n",
                        scenarios[i].name, k ? "compact form" : "READ and WRITE rows", buf_str(&base), buf_str(&cut));
                CU_FAIL("a plan reads a field the projection drops");
            }
            world_free(&r);
        }
        world_free(&w);
    }
    buf_free(&base);
    buf_free(&cut);
}

/* One mutation walk: the world, its plan's fingerprint, and what was found. */
typedef struct {
    world_t *w;
    const scenario_t *sc;
    const projection_t *p;
    const char *object;  /* "StatefulSet cache", for messages */
    buf_t base, now;
    const char *steps[64]; /* the path of the node walked (projection_element_step for elements) */
    char element[64][160]; /* the element steps steps[] points to */
    char shown[64][24];    /* the same path, with the element indexes, for messages */
    size_t mutated, failures;
    int late;              /* mutate the LATE rows only (else what no row reads) */
} walk_t;

/* Another value of v's type: a time an hour earlier, a string or number changed, a boolean
 * flipped, a member or element added to an empty object or array, a string for a null. */
static json_object *other_value(json_object *v)
{
    int64_t t = 0;
    char when[40];
    switch (json_object_get_type(v)) {
    case json_type_string:
        if (!clock_parse_rfc3339(json_object_get_string(v), &t)) {
            time_str(t - 3600 * NS_PER_SEC, when);
            return jf("\"%s\"", when);
        }
        return jf("\"%s-x\"", json_object_get_string(v));
    case json_type_int: return json_object_new_int64(json_object_get_int64(v) + 1);
    case json_type_double: return json_object_new_double(json_object_get_double(v) + 0.5);
    case json_type_boolean: return json_object_new_boolean(!json_object_get_boolean(v));
    case json_type_object: return jf("{\"example.com/x\":\"1\"}");
    case json_type_array: return jf("[\"x\"]");
    case json_type_null: break;
    }
    return jf("\"x\"");
}

/* Put v in parent at key (an object) or idx (an array), taking v. */
static void place(json_object *parent, const char *key, size_t idx, json_object *v)
{
    if (key)
        json_object_object_add(parent, key, v);
    else
        json_object_array_put_idx(parent, idx, v);
}

/* Say that how the node at depth changed (changing it, adding a member to it) changed
 * the plan. */
static void differs(walk_t *k, size_t depth, const char *how)
{
    char path[1024] = "";
    for (size_t i = 0; i < depth; i++)
        snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s", i && k->shown[i][0] != '[' ? "." : "",
                 k->shown[i]);
    fprintf(stderr, "\n  %s: %s: %s %s (%s in the projection) changes the plan\n", k->sc->name, k->object, how, path,
            projection_use_name(projection_use_at(k->p, k->steps, depth)));
    k->failures++;
}

/* Change the value at parent[key or idx] to another one, plan, compare, put it back. */
static void mutate_one(walk_t *k, json_object *parent, const char *key, size_t idx, json_object *v, size_t depth)
{
    json_object *keep = json_object_get(v);
    place(parent, key, idx, other_value(v));
    fingerprint(k->w, NOW, &k->now);
    k->mutated++;
    if (strcmp(buf_str(&k->base), buf_str(&k->now)))
        differs(k, depth, "changing");
    place(parent, key, idx, keep);
}

/* Walk v (at parent[key or idx], depth steps down): mutate every leaf, and add a member to
 * every object, outside the READ and WRITE rows. */
static void walk(walk_t *k, json_object *parent, const char *key, size_t idx, json_object *v, size_t depth)
{
    if (depth >= 64)
        return;
    proj_use_t use = projection_use_at(k->p, k->steps, depth);
    int mutable = k->late ? use == PROJ_LATE : depth && use != PROJ_READ && use != PROJ_WRITE && use != PROJ_LATE;
    json_type t = json_object_get_type(v);
    size_t n = t == json_type_object  ? (size_t)json_object_object_length(v)
               : t == json_type_array ? json_object_array_length(v)
                                      : 0;
    if (mutable && !n)
        mutate_one(k, parent, key, idx, v, depth);
    if (mutable && n && t == json_type_object) { /* a member someone adds */
        json_object_object_add(v, "example.com/added", json_object_new_string("x"));
        fingerprint(k->w, NOW, &k->now);
        k->mutated++;
        json_object_object_del(v, "example.com/added");
        if (strcmp(buf_str(&k->base), buf_str(&k->now)))
            differs(k, depth, "adding a member to");
    }
    if (t == json_type_object) {
        json_object_object_foreach(v, ck, cv)
        {
            k->steps[depth] = ck;
            snprintf(k->shown[depth], sizeof(k->shown[depth]), "%s", ck);
            walk(k, v, ck, 0, cv, depth + 1);
        }
    } else if (t == json_type_array) {
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(v, i);
            projection_element_step(e, k->element[depth], sizeof(k->element[depth]));
            k->steps[depth] = k->element[depth];
            snprintf(k->shown[depth], sizeof(k->shown[depth]), "[%zu]", i);
            walk(k, v, NULL, i, e, depth + 1);
        }
    }
}

static void walk_object(walk_t *k, json_object *obj, const char *kind)
{
    char what[300];
    snprintf(what, sizeof(what), "%s %s", kind, sval(obj, "metadata name"));
    k->object = what;
    k->p = projection_of(kind);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k->p);
    walk(k, NULL, NULL, 0, obj, 0);
}

/* Whatever of a child or pod lies outside its READ and WRITE rows, changed one value at a
 * time, changes no plan. */
static void test_unread_fields_change_no_plan(void)
{
    size_t total = 0;
    for (size_t i = 0; i < N_SCENARIOS; i++) {
        world_t w;
        scenario_world(&scenarios[i], &w);
        walk_t k = {.w = &w, .sc = &scenarios[i]};
        buf_init(&k.base, 0);
        buf_init(&k.now, 0);
        fingerprint(&w, NOW, &k.base);
        for (int c = 0; c < N_KIDS; c++)
            if (w.kid[c])
                walk_object(&k, w.kid[c], kid_kind[c]);
        for (int l = 0; l < N_LISTS; l++)
            for (size_t o = 0; w.list[l] && o < json_object_array_length(w.list[l]); o++)
                walk_object(&k, json_object_array_get_idx(w.list[l], o), list_kind[l]);
        CU_ASSERT_EQUAL(k.failures, 0);
        /* the walk left the world as it found it */
        fingerprint(&w, NOW, &k.now);
        CU_ASSERT_STRING_EQUAL(buf_str(&k.base), buf_str(&k.now));
        CU_ASSERT(k.mutated > 50);
        total += k.mutated;
        buf_free(&k.base);
        buf_free(&k.now);
        world_free(&w);
    }
    printf(" (%zu mutations) ", total);
}

/* What is read late (projection.h PROJ_LATE: a pod's PodScheduled condition), changed
 * one value at a time, changes no plan while the pod is younger than PROJ_LATE_AFTER_NS:
 * informerd queues such a change for when it is read (informerd/dispatcher.c). Every
 * pod of every scenario is made 5 s old, unscheduled and then walked. */
static void test_late_fields_change_no_young_plan(void)
{
    size_t total = 0;
    char young[40];
    time_str(NOW - 5 * NS_PER_SEC, young);
    for (size_t i = 0; i < N_SCENARIOS; i++) {
        world_t w;
        scenario_world(&scenarios[i], &w);
        for (size_t o = 0; w.list[L_PODS] && o < json_object_array_length(w.list[L_PODS]); o++) {
            json_object *pod = json_object_array_get_idx(w.list[L_PODS], o);
            put(pod, "metadata creationTimestamp", jf("\"%s\"", young));
            json_object *conds = node(pod, "status conditions", 0);
            if (!json_object_is_type(conds, json_type_array))
                put(pod, "status conditions", conds = json_object_new_array());
            int scheduled = 0;
            for (size_t c = 0; c < json_object_array_length(conds); c++)
                scheduled |= sval(json_object_array_get_idx(conds, c), "type") &&
                             !strcmp(sval(json_object_array_get_idx(conds, c), "type"), "PodScheduled");
            if (!scheduled)
                json_object_array_add(conds, jf("{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":"
                                                "\"Unschedulable\",\"message\":\"pod has unbound immediate "
                                                "PersistentVolumeClaims\"}"));
        }
        walk_t k = {.w = &w, .sc = &scenarios[i], .late = 1};
        buf_init(&k.base, 0);
        buf_init(&k.now, 0);
        fingerprint(&w, NOW, &k.base);
        for (size_t o = 0; w.list[L_PODS] && o < json_object_array_length(w.list[L_PODS]); o++)
            walk_object(&k, json_object_array_get_idx(w.list[L_PODS], o), "Pod");
        CU_ASSERT_EQUAL(k.failures, 0);
        total += k.mutated;
        buf_free(&k.base);
        buf_free(&k.now);
        world_free(&w);
    }
    CU_ASSERT(total > 50);
    printf(" (%zu mutations) ", total);
}

/* One change of a digest test: put json at path of obj (a kind's), which moves its
 * digest or leaves it. */
typedef struct {
    json_object *obj;
    const char *kind, *path, *json;
    int moves;
} digest_step_t;

/* Make the n changes in order: each moves the digest of its object from what it was just
 * before, or leaves it, as it says. */
static void digest_steps(const digest_step_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const projection_t *p = projection_of(s[i].kind);
        uint64_t before = projection_digest(p, s[i].obj);
        CU_ASSERT_NOT_EQUAL(before, 0);
        put(s[i].obj, s[i].path, jf("%s", s[i].json));
        int moved = projection_digest(p, s[i].obj) != before;
        if (moved != s[i].moves)
            fprintf(stderr, "\n  %s: setting %s to %s %s its digest\n", s[i].kind, s[i].path, s[i].json,
                    moved ? "moves" : "leaves");
        CU_ASSERT_EQUAL(moved, s[i].moves);
    }
}

/* What the kubelet, kwok and the controllers change all the time leaves the digest as
 * it is; what a plan reads moves it: of a Replication cluster's StatefulSet, budget and
 * pod, and of a Cluster-mode backup's RedisBackup, Job and the Job's pod. */
static void test_digest_moves_with_read_fields_only(void)
{
    world_t w, c;
    world_new(&w, SPEC_REPLICATION, W_REPLICATION);
    world_new(&c, SPEC_CLUSTER, W_CLUSTER);
    vary_backup_succeeded(&c);
    json_object *sts = w.kid[K_STS], *pdb = w.kid[K_PDB], *pod = pod_at(&w, 1);
    json_object *rb = json_object_array_get_idx(c.list[L_BACKUPS], 0);
    json_object *job = json_object_array_get_idx(c.list[L_JOBS], 0);
    json_object *bpod = json_object_array_get_idx(c.list[L_BACKUP_PODS], 0);
    /* churn (0): versions, managed fields, counts and stamps no plan reads; read (1): a
     * ready count, a budget's spec, a pod's readiness, a label; a backup's phase, its Job's
     * count, a container's name (which shard it took) and its line */
    const digest_step_t steps[] = {
        {sts, "StatefulSet", "metadata resourceVersion", "\"5000\"", 0},
        {sts, "StatefulSet", "metadata managedFields", "[{\"manager\":\"kube-controller-manager\"}]", 0},
        {sts, "StatefulSet", "status availableReplicas", "1", 0},
        {sts, "StatefulSet", "status currentReplicas", "2", 0},
        {sts, "StatefulSet", "status collisionCount", "1", 0},
        {pdb, "PodDisruptionBudget", "status", "{\"disruptionsAllowed\":0,\"currentHealthy\":2}", 0},
        {pdb, "PodDisruptionBudget", "metadata resourceVersion", "\"5001\"", 0},
        {pod, "Pod", "status conditions 0 lastProbeTime", "\"2025-12-01T00:11:00Z\"", 0},
        {pod, "Pod", "status containerStatuses 0 state", "{\"running\":{\"startedAt\":\"2025-12-01T00:11:00Z\"}}", 0},
        {pod, "Pod", "status containerStatuses 0 ready", "false", 0},
        {pod, "Pod", "status hostIP", "\"172.18.0.9\"", 0},
        {pod, "Pod", "status conditions 3 status", "\"False\"", 0}, /* ContainersReady alone */
        {pod, "Pod", "status conditions 0 lastTransitionTime", "\"2025-12-01T00:11:00Z\"", 0},
        {pod, "Pod", "status phase", "\"Running\"", 0},
        {rb, "RedisBackup", "metadata resourceVersion", "\"6000\"", 0},
        {rb, "RedisBackup", "metadata managedFields", "[{\"manager\":\"rediscluster-operator\"}]", 0},
        {job, "Job", "metadata resourceVersion", "\"6001\"", 0},
        {job, "Job", "status ready", "1", 0},
        {job, "Job", "status uncountedTerminatedPods", "{\"succeeded\":[\"uid-bpod\"]}", 0},
        {job, "Job", "status completionTime", "\"2025-12-01T00:10:43Z\"", 0},
        {bpod, "BackupPod", "metadata resourceVersion", "\"6002\"", 0},
        {bpod, "BackupPod", "status conditions 2 lastTransitionTime", "\"2025-12-01T00:10:50Z\"", 0},
        {bpod, "BackupPod", "status containerStatuses 0 state terminated finishedAt", "\"2025-12-01T00:10:50Z\"", 0},
        {bpod, "BackupPod", "status containerStatuses 1 imageID", "\"registry.example.com/rdc@sha256:beef\"", 0},
        {bpod, "BackupPod", "status podIP", "\"10.0.0.41\"", 0},
        {sts, "StatefulSet", "status readyReplicas", "2", 1},
        {pdb, "PodDisruptionBudget", "spec maxUnavailable", "0", 1},
        {pod, "Pod", "status conditions 2 status", "\"False\"", 1},
        {pod, "Pod", "metadata labels " RENDER_LABEL_ROLE, "\"primary\"", 1},
        {rb, "RedisBackup", "status phase", "\"Succeeded\"", 1},
        {job, "Job", "status succeeded", "0", 1},
        {bpod, "BackupPod", "status containerStatuses 1 name", "\"shard-7\"", 1},
        {bpod, "BackupPod", "status containerStatuses 2 state terminated message", "\"{}\"", 1},
    };
    digest_steps(steps, sizeof(steps) / sizeof(steps[0]));
    world_free(&c);
    world_free(&w);
}

/* The compact form is never larger than the object informerd kept before (managedFields
 * stripped), for every child and pod of a converged cluster, and the children's are
 * smaller together; the figures are printed. */
static void test_compact_form_is_smaller(void)
{
    const char *const specs[] = {SPEC_STANDALONE, SPEC_REPLICATION};
    for (int m = 0; m < 2; m++) {
        world_t w, r;
        world_new(&w, specs[m], m);
        world_reduced(&w, PROJ_KEPT, &r);
        size_t whole = 0, kept = 0, kids_whole = 0, kids_kept = 0;
        for (int k = 0; k < N_KIDS + 3; k++) {
            json_object *o = k < N_KIDS ? w.kid[k] : pod_at(&w, k - N_KIDS);
            json_object *c = k < N_KIDS ? r.kid[k] : pod_at(&r, k - N_KIDS);
            if (!o)
                continue;
            json_object *meta = node(o, "metadata", 0), *mf = json_object_get(node(meta, "managedFields", 0));
            json_object_object_del(meta, "managedFields");
            size_t a = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
            size_t b = strlen(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN));
            CU_ASSERT(b <= a);
            whole += a;
            kept += b;
            kids_whole += k < N_KIDS ? a : 0;
            kids_kept += k < N_KIDS ? b : 0;
            if (mf)
                json_object_object_add(meta, "managedFields", mf);
        }
        CU_ASSERT(kids_kept < kids_whole);
        printf(" (%s: children %zu bytes, %zu kept; with 3 pods %zu, %zu kept) ", m ? "Replication" : "Standalone",
               kids_whole, kids_kept, whole, kept);
        world_free(&r);
        world_free(&w);
    }
}

/* The rules of a row: the longest prefix decides, "[]" walks arrays, a node under a
 * deeper row is dropped when none of its steps is there, and only objects are reduced. */
static void test_reduce_rules(void)
{
    static const proj_row_t rows[] = {
        {PROJ_READ, {"metadata"}, "t"},
        {PROJ_WRITE, {"metadata", "resourceVersion"}, "t"},
        {PROJ_DROP, {"metadata", "managedFields"}, "t"},
        {PROJ_KEEP, {"status", "phase"}, "t"},
        {PROJ_READ, {"status", "list", "[]", "name"}, "t"},
        {PROJ_READ, {"status", "deep", "a", "b"}, "t"},
        {PROJ_READ, {"status", "conds", "[type=A]", "type"}, "t"},
        {PROJ_READ, {"status", "conds", "[type=A]", "status"}, "t"},
    };
    const projection_t p = {"Test", rows, sizeof(rows) / sizeof(rows[0])};
    char text[64];
    json_object *o = jf("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\",\"managedFields\":[1],"
                        "\"labels\":{\"a\":\"b\"},\"n\":null},\"spec\":{\"big\":1},\"status\":{\"phase\":\"Up\","
                        "\"list\":[{\"name\":\"one\",\"size\":1},{\"size\":2},3],\"deep\":{\"a\":{\"c\":1}},"
                        "\"other\":1,\"conds\":[{\"type\":\"B\",\"status\":\"y\"},{\"type\":\"A\",\"status\":\"x\","
                        "\"at\":\"t\"},{\"status\":\"z\"}]}}");
    int oom = 0;
    const struct {
        unsigned uses;
        const char *want;
    } cases[] = {
        {PROJ_KEPT, "{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\",\"labels\":{\"a\":\"b\"},\"n\":null},"
                    "\"status\":{\"phase\":\"Up\",\"list\":[{\"name\":\"one\"}],\"conds\":[{\"type\":\"A\","
                    "\"status\":\"x\"}]}}"},
        {PROJ_BIT(PROJ_READ), "{\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"b\"},\"n\":null},\"status\":{\"list\":"
                              "[{\"name\":\"one\"}],\"conds\":[{\"type\":\"A\",\"status\":\"x\"}]}}"},
        {PROJ_BIT(PROJ_WRITE), "{\"metadata\":{\"resourceVersion\":\"7\"}}"},
        {PROJ_BIT(PROJ_DROP), "{\"metadata\":{\"managedFields\":[1]},\"spec\":{\"big\":1},\"status\":{\"list\":"
                              "[{\"size\":1},{\"size\":2},3],\"deep\":{\"a\":{\"c\":1}},\"other\":1,\"conds\":"
                              "[{\"type\":\"B\",\"status\":\"y\"},{\"at\":\"t\"},{\"status\":\"z\"}]}}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *r = projection_reduce(&p, o, cases[i].uses, &oom);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN), cases[i].want);
        json_object_put(r);
    }
    /* {"size":2} lost its only kept step: dropped from the list, not kept as {}. Nothing
     * wanted, or no object: NULL without oom. */
    json_object *none = jf("{\"spec\":{}}"), *arr = jf("[1]");
    CU_ASSERT_PTR_NULL(projection_reduce(&p, none, PROJ_KEPT, &oom));
    CU_ASSERT_PTR_NULL(projection_reduce(&p, arr, PROJ_KEPT, &oom));
    CU_ASSERT_PTR_NULL(projection_reduce(NULL, o, PROJ_KEPT, &oom));
    CU_ASSERT_FALSE(oom);
    const char *path[] = {"status", "list", "[]", "name", "more"};
    CU_ASSERT_EQUAL(projection_use_at(&p, path, 5), PROJ_READ);
    CU_ASSERT_EQUAL(projection_use_at(&p, path, 3), PROJ_DROP);
    const char *ca[] = {"status", "conds", "[type=A]", "status"}, *cb[] = {"status", "conds", "[type=B]", "status"};
    CU_ASSERT_EQUAL(projection_use_at(&p, ca, 4), PROJ_READ);
    CU_ASSERT_EQUAL(projection_use_at(&p, cb, 4), PROJ_DROP);
    json_object *elem = jf("{\"type\":\"Ready\"}");
    CU_ASSERT_EQUAL(projection_element_step(elem, text, sizeof(text)), 0);
    CU_ASSERT_STRING_EQUAL(text, "[type=Ready]");
    CU_ASSERT_EQUAL(projection_element_step(arr, text, sizeof(text)), 0);
    CU_ASSERT_STRING_EQUAL(text, "[]");
    json_object_put(elem);
    const char *rv[] = {"metadata", "resourceVersion"}, *mf[] = {"metadata", "managedFields", "[]"};
    CU_ASSERT_EQUAL(projection_use_at(&p, rv, 2), PROJ_WRITE);
    CU_ASSERT_EQUAL(projection_use_at(&p, rv, 1), PROJ_READ);
    CU_ASSERT_EQUAL(projection_use_at(&p, mf, 3), PROJ_DROP);
    CU_ASSERT_EQUAL(projection_row_path(&rows[4], text, sizeof(text)), 0);
    CU_ASSERT_STRING_EQUAL(text, "status.list[].name");
    CU_ASSERT_EQUAL(projection_row_path(&rows[4], text, 8), -1);
    /* the digest is the READ parts' */
    json_object *o2 = dup(o);
    put(o2, "metadata resourceVersion", jf("\"8\""));
    put(o2, "status phase", jf("\"Down\""));
    put(o2, "spec big", jf("2"));
    CU_ASSERT_EQUAL(projection_digest(&p, o), projection_digest(&p, o2));
    put(o2, "metadata labels a", jf("\"c\""));
    CU_ASSERT_NOT_EQUAL(projection_digest(&p, o), projection_digest(&p, o2));
    json_object_put(o2);
    json_object_put(none);
    json_object_put(arr);
    json_object_put(o);
}

/* docs/projections.md lists every row of every table, with its use, under the kind's
 * heading: the table and its documentation do not drift apart. */
static void test_docs_list_every_row(void)
{
    const char *top = getenv("RDC_TOP");
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/projections.md", top && *top ? top : ".");
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char doc[65536];
    size_t n = fread(doc, 1, sizeof(doc) - 1, f);
    fclose(f);
    doc[n] = '\0';
    const projection_t *p;
    for (size_t t = 0; (p = projection_at(t)); t++) {
        char heading[128], want[256], rp[200];
        CU_ASSERT(p->nrows <= 64); /* the rows of a walk are a 64-bit mask */
        snprintf(heading, sizeof(heading), "\n## %s\n", p->kind);
        const char *sec = strstr(doc, heading), *end = sec ? strstr(sec + 1, "\n## ") : NULL;
        if (!sec)
            fprintf(stderr, "\n  docs/projections.md: no section \"## %s\"\n", p->kind);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
        for (size_t i = 0; i < p->nrows; i++) {
            CU_ASSERT_EQUAL_FATAL(projection_row_path(&p->rows[i], rp, sizeof(rp)), 0);
            snprintf(want, sizeof(want), "| `%s` | %s |", rp, projection_use_name(p->rows[i].use));
            const char *hit = strstr(sec, want);
            if (!hit || (end && hit > end))
                fprintf(stderr, "\n  docs/projections.md, ## %s: no row \"%s\"\n", p->kind, want);
            CU_ASSERT(hit && (!end || hit < end));
        }
    }
}

static const cu_entry_t tests[] = {
    CU_SUITE("projection and plan"),
    {"every scenario plans the same from the projection", test_plan_same_from_projection},
    {"a field outside the READ rows changes no plan", test_unread_fields_change_no_plan},
    {"a young pod's late fields change no plan", test_late_fields_change_no_young_plan},
    CU_SUITE("projection"),
    {"the digest moves with read fields only", test_digest_moves_with_read_fields_only},
    {"the compact form is no larger", test_compact_form_is_smaller},
    {"the rules of a row", test_reduce_rules},
    {"docs/projections.md lists every row", test_docs_list_every_row},
};
CU_MAIN(tests)
