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
#include "rdc_api.h"
#include "reconcile.h"
#include "redisexec.h"
#include "render.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int run_once(kube_client_t *client, const char *key, int dry_run)
{
    char ns[256], name[256];
    const char *slash = strchr(key, '/');
    if (!slash || slash == key || !slash[1] || (size_t)(slash - key) >= sizeof(ns) ||
        strlen(slash + 1) >= sizeof(name)) {
        fprintf(stderr, "workerd: --once wants NAMESPACE/NAME, got \"%s\"\n", key);
        return 2;
    }
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    snprintf(name, sizeof(name), "%s", slash + 1);
    json_object *rc = NULL, *cm = NULL, *svc = NULL, *sts = NULL, *pods = NULL, *psvc = NULL, *rsvc = NULL,
                *observation = NULL;
    char *password = NULL;
    kube_error_t err;
    kube_error_clear(&err);
    int code = 1;
    char line[1024];
    if (get_object(client, RDC_API_GROUP, RDC_API_VERSION, ns, "redisclusters", name, &rc, &err) ||
        get_object(client, "", "v1", ns, "configmaps", name, &cm, &err) ||
        get_object(client, "", "v1", ns, "services", name, &svc, &err) ||
        get_object(client, "apps", "v1", ns, "statefulsets", name, &sts, &err)) {
        rlog_error("cannot read the objects", "key", key, "error",
                   kube_error_str(&err, line, sizeof(line)));
        goto out;
    }
    if (!rc) {
        rlog_info("RedisCluster not found: nothing to do", "key", key);
        code = 0;
        goto out;
    }
    /* REPLICATION: the pods, the role Services, and a look at Redis of our own (under the
     * supervisor observerd's observation comes with the work item). */
    const char *mode = JSONX_STR_AT(rc, "spec", "mode");
    if (mode && !strcmp(mode, "Replication")) {
        char pname[300], rname[300], sel[600];
        render_role_service_name(name, RENDER_ROLE_PRIMARY, pname, sizeof(pname));
        render_role_service_name(name, RENDER_ROLE_REPLICA, rname, sizeof(rname));
        buf_t path;
        buf_init(&path, 4096);
        kube_path(&path, "", "v1", ns, "pods", NULL, NULL);
        snprintf(sel, sizeof(sel), RENDER_LABEL_INSTANCE "=%s," RENDER_LABEL_MANAGED_BY "=" RENDER_FIELD_MANAGER, name);
        kube_req_opts_t ro = {.label_selector = sel, .limit = 500};
        char *lrv = NULL;
        int lrc = kube_client_list_all(client, buf_str(&path), &ro, &pods, &lrv, &err);
        free(lrv);
        buf_free(&path);
        if (lrc || get_object(client, "", "v1", ns, "services", pname, &psvc, &err) ||
            get_object(client, "", "v1", ns, "services", rname, &rsvc, &err) ||
            reconcile_read_password(client, rc, &password, &err)) {
            rlog_error("cannot read the pods, role Services or Secret", "key", key, "error",
                       kube_error_str(&err, line, sizeof(line)));
            goto out;
        }
        char at[40];
        clock_format_rfc3339(clock_wall_ns(), 3, at, sizeof(at));
        observation = redisexec_observe(pods, password, RENDER_REDIS_PORT, REDISEXEC_TIMEOUT_NS / 4, at);
    }
    plan_observed_t seen = {.members = pods, .redis = observation, .primary_service = psvc, .replicas_service = rsvc};
    char rid[37];
    reconcile_new_id(rid);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    exec_ctx_t x = {.client = client, .reconcile_id = rid, .instance = host};
    reconcile_outcome_t o;
    reconcile_run(&x, rc, cm, svc, sts, &seen, dry_run ? stdout : NULL, &o);
    if (o.result == RECONCILE_ERROR || o.result == RECONCILE_REQUEUE) {
        fprintf(stderr, "workerd: %s: %s\n", reconcile_result_name(o.result), o.message);
        code = 1;
    } else {
        if (!dry_run)
            printf("%s: %s%s\n", key, reconcile_result_name(o.result),
                   o.result == RECONCILE_REQUEUE_AFTER ? " (not ready yet; look again in 10s)" : "");
        code = 0;
    }
out:
    json_object_put(rc);
    json_object_put(cm);
    json_object_put(svc);
    json_object_put(sts);
    json_object_put(pods);
    json_object_put(psvc);
    json_object_put(rsvc);
    json_object_put(observation);
    if (password) {
        memset(password, 0, strlen(password));
        free(password);
    }
    return code;
}

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    const char *once = NULL, *work_ep = NULL, *leader_ep = NULL;
    int dry_run = 0, whoami = 0;
    /* Released at out: */
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    int code = 1, sfd = -1;
    const opt_t own[] = {
        {"once", OPT_STRING, &once, "reconcile NAMESPACE/NAME once, reading from the API, and exit"},
        {"dry-run", OPT_BOOL, &dry_run, "with --once: print the planned writes as JSON, write nothing"},
        {"work-endpoint", OPT_STRING, &work_ep,
         "informerd's work socket (default ipc://<runtime-dir>/work.sock)"},
        {"leader-endpoint", OPT_STRING, &leader_ep,
         "electord's leader socket (default ipc://<runtime-dir>/leader.sock)"},
        {"whoami", OPT_BOOL, &whoami,
         "print who the API server takes these credentials for (a SelfSubjectReview) and exit"},
        {NULL, OPT_END, NULL, NULL},
    };
    /* Accepts every shared flag (the supervisor passes them all), lists those it uses. */
    int early = opts_daemon_main("workerd", summary, &c, own, argc, argv,
                                 "kubeconfig,context,leader-elect,max-concurrent-reconciles,log-level,log-format,"
                                 "kube-api-qps,kube-api-burst,runtime-dir");
    if (early >= 0)
        return early;
    kube_client_opts_t co;
    kube_client_opts_init(&co);
    co.user_agent = "workerd/" RDC_VERSION;
    co.max_retries = 3;
    if (daemon_kube_connect(&c, &co, &cfg, &client))
        return 1;
    if (whoami) {
        code = run_whoami(cfg, client);
        goto out;
    }
    if (once) {
        code = run_once(client, once, dry_run);
        goto out;
    }
    if (c.max_concurrent_reconciles < 1 || c.max_concurrent_reconciles > WORKER_MAX_INFLIGHT) {
        fprintf(stderr, "workerd: --max-concurrent-reconciles must be from 1 to %d\n", WORKER_MAX_INFLIGHT);
        goto out;
    }
    char rtdir[4096], wep[4200], lep[4200];
    sfd = daemon_loop_setup(c.runtime_dir, rtdir, sizeof(rtdir));
    if (sfd < 0)
        goto out;
    worker_config_t wc = {
        .client = client,
        .runtime_dir = rtdir,
        .name = daemon_child_name("workerd"),
        .work_endpoint = work_ep ? work_ep : daemon_endpoint(rtdir, PROTO_EP_WORK, wep, sizeof(wep)),
        .leader_endpoint = !c.leader_elect ? NULL
                           : leader_ep ? leader_ep
                                       : daemon_endpoint(rtdir, PROTO_EP_LEADER, lep, sizeof(lep)),
        .signal_fd = sfd,
        .max_inflight = c.max_concurrent_reconciles,
    };
    rlog_info("workerd started", "version", RDC_VERSION, "work", wc.work_endpoint, "leader",
              wc.leader_endpoint ? wc.leader_endpoint : "(leader election off)");
    code = worker_run(&wc);
out:
    daemon_release(sfd, &client, &cfg);
    return code;
}
