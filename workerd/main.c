/* workerd: pulls RedisCluster keys from informerd, reconciles their ConfigMap, Service
 * and StatefulSet, and reports the result.
 *
 *   workerd [flags]                              serve informerd's work queue
 *   workerd --once NAMESPACE/NAME [--dry-run]    reconcile one key from the API and exit
 *   workerd --whoami                             who the API server takes us for, and exit
 */
#include "clock.h"
#include "daemon.h"
#include "jsonx.h"
#include "kube_client.h"
#include "kube_config.h"
#include "log.h"
#include "metrics.h"
#include "opts.h"
#include "proto.h"
#include "ratelimit_shared.h"
#include "rdc_api.h"
#include "reconcile.h"
#include "redisexec.h"
#include "render.h"
#include "secretset.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The environment variable that names the operator's own image (deploy/ may set it; the
 * supervisor's children inherit it): the restore init container runs it. */
#define OPERATOR_IMAGE_ENV "RDC_OPERATOR_IMAGE"

static const char summary[] =
    "Reconciles RedisClusters into their ConfigMap, headless Service and StatefulSet.\n"
    "Under the supervisor it pulls work from informerd; alone, --once NAMESPACE/NAME reads\n"
    "one RedisCluster and its children straight from the API, reconciles it and exits\n"
    "(--dry-run prints the planned writes as JSON instead of making them).\n"
    "--whoami prints the SelfSubjectReview the API server returns for the configured\n"
    "credentials (as `kubectl auth whoami -o json`) and how they were chosen, and exits.";

/* POST a SelfSubjectReview and print it; the credential choice goes to stderr. */
static int run_whoami(kube_config_t *cfg, kube_client_t *client)
{
    const kube_rest_config_t *r = kube_config_rest(cfg);
    fprintf(stderr, "workerd: server %s context \"%s\" user \"%s\" auth %s%s%s proxy %s%s%s\n",
            r->server, r->context, r->user, r->auth_source,
            r->impersonate_user ? " impersonating " : "",
            r->impersonate_user ? r->impersonate_user : "", r->proxy ? r->proxy : "none",
            r->proxy_source ? " from " : "", r->proxy_source ? r->proxy_source : "");
    json_object *body = json_object_new_object(), *out = NULL;
    json_object_object_add(body, "apiVersion", json_object_new_string("authentication.k8s.io/v1"));
    json_object_object_add(body, "kind", json_object_new_string("SelfSubjectReview"));
    kube_error_t err;
    char line[1024];
    int rc = kube_client_create(client, "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                body, NULL, &out, &err);
    json_object_put(body);
    if (rc) {
        fprintf(stderr, "workerd: whoami: %s\n", kube_error_str(&err, line, sizeof(line)));
        return 1;
    }
    printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(out);
    return 0;
}

/* GET one object; NotFound gives NULL and success. */
static int get_object(kube_client_t *c, const char *group, const char *version,
                      const char *ns, const char *resource, const char *name,
                      json_object **out, kube_error_t *err)
{
    buf_t path;
    buf_init(&path, 4096);
    kube_path(&path, group, version, ns, resource, name, NULL);
    int rc = kube_client_get(c, buf_str(&path), NULL, out, err);
    buf_free(&path);
    if (rc && kube_error_is_not_found(err)) {
        *out = NULL;
        kube_error_clear(err);
        return 0;
    }
    return rc;
}

/* What --once reads from the API (NULL when absent), freed by once_free. */
typedef struct {
    union {
        struct {
            json_object *rc, *cm, *svc, *sts;
            json_object *pods, *psvc, *rsvc, *observation; /* REPLICATION, CLUSTER */
            json_object *shard_sts, *shard_pdbs;           /* CLUSTER: arrays */
        };
        json_object *all[10]; /* the same, for once_free */
    };
    char *password;
} once_t;

static void once_free(once_t *o)
{
    for (size_t i = 0; i < sizeof(o->all) / sizeof(o->all[0]); i++)
        json_object_put(o->all[i]);
    if (o->password) {
        memset(o->password, 0, strlen(o->password));
        free(o->password);
    }
    memset(o, 0, sizeof(*o));
}

/* NAMESPACE/NAME into ns and name. Returns 0, or -1 after saying why. */
static int once_parse_key(const char *key, char ns[256], char name[256])
{
    const char *slash = strchr(key, '/');
    if (!slash || slash == key || !slash[1] || (size_t)(slash - key) >= 256 || strlen(slash + 1) >= 256) {
        fprintf(stderr, "workerd: --once wants NAMESPACE/NAME, got \"%s\"\n", key);
        return -1;
    }
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    snprintf(name, 256, "%s", slash + 1);
    return 0;
}

/* The RedisCluster ns/name and its ConfigMap, Service and StatefulSet. Returns 0, or -1
 * with err. */
static int once_read_cluster(kube_client_t *client, const char *ns, const char *name, once_t *o, kube_error_t *err)
{
    return get_object(client, RDC_API_GROUP, RDC_API_VERSION, ns, "redisclusters", name, &o->rc, err) ||
                   get_object(client, "", "v1", ns, "configmaps", name, &o->cm, err) ||
                   get_object(client, "", "v1", ns, "services", name, &o->svc, err) ||
                   get_object(client, "apps", "v1", ns, "statefulsets", name, &o->sts, err)
               ? -1
               : 0;
}

/* CLUSTER: the shards' StatefulSets and PodDisruptionBudgets by name into o's arrays (the
 * work item's ShardStatefulSets and ShardBudgets). Returns 0, or -1 with err. */
static int once_read_shards(kube_client_t *client, const char *ns, const char *name, once_t *o, kube_error_t *err)
{
    int shards = 0;
    rdc_spec_cluster_layout(jsonx_get(o->rc, "spec"), &shards, NULL);
    o->shard_sts = json_object_new_array();
    o->shard_pdbs = json_object_new_array();
    for (int k = 0; k < shards && k < RDC_SPEC_CLUSTER_SHARDS_MAX; k++) {
        char sn[300];
        json_object *sts = NULL, *pdb = NULL;
        if (render_shard_name(name, k, sn, sizeof(sn)) ||
            get_object(client, "apps", "v1", ns, "statefulsets", sn, &sts, err) ||
            get_object(client, "policy", "v1", ns, "poddisruptionbudgets", sn, &pdb, err))
            return -1;
        if (sts)
            json_object_array_add(o->shard_sts, sts);
        if (pdb)
            json_object_array_add(o->shard_pdbs, pdb);
    }
    return 0;
}

/* --once's look at Redis (redisexec_observe_with), over TLS with spec.tls's Secret (read
 * here, blocking, as a reconcile reads it: secretset.h). A new object, or NULL. */
static json_object *once_observe(kube_client_t *client, const char *ns, const char *name, const once_t *o,
                                 const char *at, int cluster)
{
    rdc_spec_t spec;
    rdc_field_errors_t *errs = rdc_field_errors_new();
    int ok = errs && !rdc_spec_parse(o->rc, &spec, errs);
    rdc_field_errors_destroy(&errs);
    secretset_t *set = ok && spec.tls.secret ? secretset_new(&spec, ns, name, JSONX_STR_AT(o->rc, "metadata", "uid"))
                                             : NULL;
    for (size_t i = 0; set && secretset_name(set, i); i++) {
        kube_error_t err;
        json_object *secret = NULL;
        kube_error_clear(&err);
        get_object(client, "", "v1", ns, "secrets", secretset_name(set, i), &secret, &err);
        secretset_take(set, secretset_name(set, i), secret, &err);
        json_object_put(secret);
    }
    if (set)
        secretset_finish(set, o->password, clock_wall_ns() / NS_PER_SEC);
    redisexec_client_t cl = {.password = o->password,
                             .tls = set ? secretset_client_tls(set) : NULL,
                             .tls_domain = set ? secretset_domain(set) : NULL};
    if (set && secretset_refused(set))
        fprintf(stderr, "workerd: %s\n", secretset_refused(set));
    json_object *obs = redisexec_observe_with(o->pods, &cl, RENDER_REDIS_PORT, REDISEXEC_TIMEOUT_NS / 4, at, cluster);
    secretset_destroy(&set);
    return obs;
}

/* REPLICATION, CLUSTER: the pods, the role Services, and a look at Redis of our own
 * (under the supervisor observerd's observation comes with the work item). Returns 0, or
 * -1 with err. */
static int once_read_replication(kube_client_t *client, const char *ns, const char *name, once_t *o,
                                 kube_error_t *err)
{
    char pname[300], rname[300], sel[600];
    render_role_service_name(name, RENDER_ROLE_PRIMARY, pname, sizeof(pname));
    render_role_service_name(name, RENDER_ROLE_REPLICA, rname, sizeof(rname));
    buf_t path;
    buf_init(&path, 4096);
    kube_path(&path, "", "v1", ns, "pods", NULL, NULL);
    snprintf(sel, sizeof(sel), RENDER_LABEL_INSTANCE "=%s," RENDER_LABEL_MANAGED_BY "=" RENDER_FIELD_MANAGER, name);
    kube_req_opts_t ro = {.label_selector = sel, .limit = 500};
    char *lrv = NULL;
    int lrc = kube_client_list_all(client, buf_str(&path), &ro, &o->pods, &lrv, err);
    free(lrv);
    buf_free(&path);
    if (lrc || get_object(client, "", "v1", ns, "services", pname, &o->psvc, err) ||
        get_object(client, "", "v1", ns, "services", rname, &o->rsvc, err) ||
        reconcile_read_password(client, o->rc, &o->password, err))
        return -1;
    char at[40];
    clock_format_rfc3339(clock_wall_ns(), 3, at, sizeof(at));
    int cluster = rdc_spec_cluster_layout(jsonx_get(o->rc, "spec"), NULL, NULL);
    o->observation = once_observe(client, ns, name, o, at, cluster);
    return cluster ? once_read_shards(client, ns, name, o, err) : 0;
}

/* Reconcile what o holds to its end (reconcile_run: a loop of its own, on one
 * connection, the Events through a recorder of its own that gets up to
 * EXEC_LOCAL_FLUSH_NS to send them before it returns) and say how it ended. Returns the
 * exit code. */
static int once_reconcile(kube_client_t *client, const char *key, const once_t *o, int dry_run)
{
    plan_observed_t seen = {.members = o->pods, .redis = o->observation, .primary_service = o->psvc,
                            .replicas_service = o->rsvc, .shard_statefulsets = o->shard_sts,
                            .shard_budgets = o->shard_pdbs};
    char rid[37], host[256] = "";
    reconcile_new_id(rid);
    gethostname(host, sizeof(host) - 1);
    exec_ctx_t x = {.client = client, .reconcile_id = rid, .instance = host};
    reconcile_outcome_t out;
    reconcile_run(&x, o->rc, o->cm, o->svc, o->sts, &seen, dry_run ? stdout : NULL, &out);
    if (out.result == RECONCILE_ERROR || out.result == RECONCILE_REQUEUE) {
        fprintf(stderr, "workerd: %s: %s\n", reconcile_result_name(out.result), out.message);
        return 1;
    }
    if (!dry_run && out.result == RECONCILE_REQUEUE_AFTER)
        printf("%s: %s (look again in %.1fs)\n", key, reconcile_result_name(out.result),
               (double)out.requeue_after_ns / 1e9);
    else if (!dry_run)
        printf("%s: %s\n", key, reconcile_result_name(out.result));
    return 0;
}

/* --once NAMESPACE/NAME: read the RedisCluster and its children from the API, reconcile
 * once, exit. Returns the exit code. */
static int run_once(kube_client_t *client, const char *key, int dry_run)
{
    char ns[256], name[256], line[1024];
    if (once_parse_key(key, ns, name))
        return 2;
    once_t o = {0};
    kube_error_t err;
    kube_error_clear(&err);
    int code = 1;
    if (once_read_cluster(client, ns, name, &o, &err)) {
        rlog_error("cannot read the objects", "key", key, "error", kube_error_str(&err, line, sizeof(line)));
    } else if (!o.rc) {
        rlog_info("RedisCluster not found: nothing to do", "key", key);
        code = 0;
    } else {
        const char *mode = JSONX_STR_AT(o.rc, "spec", "mode");
        if (mode && (!strcmp(mode, "Replication") || !strcmp(mode, "Cluster")) &&
            once_read_replication(client, ns, name, &o, &err))
            rlog_error("cannot read the pods, role Services or Secret", "key", key, "error",
                       kube_error_str(&err, line, sizeof(line)));
        else
            code = once_reconcile(client, key, &o, dry_run);
    }
    once_free(&o);
    return code;
}

/* The recorder's client (recorder.h): the configuration and options of the worker's
 * client, with the operator's Events bucket in place of its requests' one (alone: a
 * bucket of its own of the same flags). NULL after logging. */
static kube_client_t *events_client(const rdc_common_opts_t *c, kube_config_t *cfg,
                                    const kube_client_opts_t *co)
{
    kube_client_opts_t eo = *co;
    const char *bucket = getenv(RATELIMIT_SHARED_EVENTS_ENV);
    eo.shared_bucket = bucket && *bucket && c->kube_api_qps > 0 ? bucket : NULL;
    kube_error_t kerr;
    kube_error_clear(&kerr);
    kube_client_t *ev = kube_client_new(cfg, &eo, &kerr);
    if (!ev) {
        char line[512];
        rlog_error("cannot create the Events' API client", "error", kube_error_str(&kerr, line, sizeof(line)));
    }
    return ev;
}

/* Serve informerd's work queue until SIGTERM. Returns the exit code. */
static int run_worker(const rdc_common_opts_t *c, kube_client_t *client, kube_client_t *events,
                      const char *work_ep, const char *leader_ep, const kube_config_t *cfg,
                      const char *operator_image)
{
    if (c->max_concurrent_reconciles < 1 || c->max_concurrent_reconciles > WORKER_MAX_INFLIGHT) {
        fprintf(stderr, "workerd: --max-concurrent-reconciles must be from 1 to %d\n", WORKER_MAX_INFLIGHT);
        return 1;
    }
    char rtdir[4096], wep[4200], lep[4200];
    int sfd = daemon_loop_setup(c->runtime_dir, rtdir, sizeof(rtdir));
    if (sfd < 0)
        return 1;
    worker_config_t wc = {
        .client = client,
        .runtime_dir = rtdir,
        .name = daemon_child_name("workerd"),
        .work_endpoint = work_ep ? work_ep : daemon_endpoint(rtdir, PROTO_EP_WORK, wep, sizeof(wep)),
        .leader_endpoint = !c->leader_elect ? NULL
                           : leader_ep ? leader_ep
                                       : daemon_endpoint(rtdir, PROTO_EP_LEADER, lep, sizeof(lep)),
        .signal_fd = sfd,
        .max_inflight = c->max_concurrent_reconciles,
        .events_client = events,
        .operator_image = operator_image && *operator_image ? operator_image : NULL,
    };
    /* DAY-2: in a pod, the operator's namespace is its own (the NetworkPolicy's peer). */
    const kube_rest_config_t *rest = cfg ? kube_config_rest(cfg) : NULL;
    if (rest && rest->source && !strcmp(rest->source, "in-cluster"))
        wc.operator_namespace = rest->namespace_;
    rlog_info("workerd started", "version", RDC_VERSION, "work", wc.work_endpoint, "leader",
              wc.leader_endpoint ? wc.leader_endpoint : "(leader election off)");
    int code = worker_run(&wc);
    close(sfd);
    return code;
}

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    const char *once = NULL, *work_ep = NULL, *leader_ep = NULL, *operator_image = NULL;
    int dry_run = 0, whoami = 0;
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    const opt_t own[] = {
        {"once", OPT_STRING, &once, "reconcile NAMESPACE/NAME once, reading from the API, and exit"},
        {"dry-run", OPT_BOOL, &dry_run, "with --once: print the planned writes as JSON, write nothing"},
        {"work-endpoint", OPT_STRING, &work_ep,
         "informerd's work socket (default ipc://<runtime-dir>/work.sock)"},
        {"leader-endpoint", OPT_STRING, &leader_ep,
         "electord's leader socket (default ipc://<runtime-dir>/leader.sock)"},
        {"whoami", OPT_BOOL, &whoami,
         "print who the API server takes these credentials for (a SelfSubjectReview) and exit"},
        {"operator-image", OPT_STRING, &operator_image,
         "the image of spec.restore's init container, the operator's own (default $" OPERATOR_IMAGE_ENV
         ", else " RENDER_OPERATOR_IMAGE_DEFAULT ")"},
        {NULL, OPT_END, NULL, NULL},
    };
    /* Accepts every shared flag (the supervisor passes them all), lists those it uses. */
    int early = opts_daemon_main("workerd", summary, &c, own, argc, argv,
                                 "kubeconfig,context,leader-elect,max-concurrent-reconciles,log-level,log-format,"
                                 "kube-api-qps,kube-api-burst,runtime-dir");
    if (early >= 0)
        return early;
    kube_client_opts_t co = daemon_client_opts("workerd/" RDC_VERSION);
    co.max_retries = 3;
    if (daemon_kube_connect(&c, &co, &cfg, &client))
        return 1;
    kube_client_t *events = NULL;
    int code = whoami ? run_whoami(cfg, client)
               : once ? run_once(client, once, dry_run)
               : (events = events_client(&c, cfg, &co)) == NULL
                   ? 1
                   : run_worker(&c, client, events, work_ep, leader_ep, cfg,
                                operator_image ? operator_image : getenv(OPERATOR_IMAGE_ENV));
    kube_client_destroy(&events);
    daemon_release(-1, &client, &cfg);
    return code;
}
