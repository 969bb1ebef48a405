#include "reconcile.h"

#include "backoff.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "rdc_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *reconcile_result_name(reconcile_result_t r)
{
    switch (r) {
    case RECONCILE_DONE: return "done";
    case RECONCILE_REQUEUE_AFTER: return "requeue_after";
    case RECONCILE_REQUEUE: return "requeue";
    case RECONCILE_ERROR: return "error";
    case RECONCILE_FENCED: return "fenced";
    }
    return "unknown";
}

void reconcile_new_id(char out[37])
{
    static uint64_t rng;
    if (!rng)
        rng = backoff_rng_seed();
    uint64_t a = backoff_rng_next(&rng), b = backoff_rng_next(&rng);
    /* Version 4, variant 10xx. */
    a = (a & ~UINT64_C(0xf000)) | UINT64_C(0x4000);
    b = (b & ~(UINT64_C(0xc) << 60)) | (UINT64_C(0x8) << 60);
    snprintf(out, 37, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xffff), (unsigned)(b >> 48),
             (unsigned long long)(b & UINT64_C(0xffffffffffff)));
}

static const char *str_at(const json_object *o, const char *k)
{
    json_object *md = NULL, *v = NULL;
    if (!json_object_object_get_ex(o, "metadata", &md) || !json_object_object_get_ex(md, k, &v))
        return "";
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

/* controller-runtime's result label values. */
static const char *metric_result(reconcile_result_t r)
{
    switch (r) {
    case RECONCILE_DONE: return "success";
    case RECONCILE_REQUEUE_AFTER: return "requeue_after";
    case RECONCILE_REQUEUE: return "requeue";
    case RECONCILE_FENCED: return "requeue";
    case RECONCILE_ERROR: return "error";
    }
    return "error";
}

static void record_metrics(reconcile_result_t r, double seconds)
{
    metrics_registry_t *reg = metrics_default();
    metric_family_t *total = metrics_counter(reg, "controller_runtime_reconcile_total",
                                             "Total number of reconciliations per controller",
                                             "controller,result");
    metric_family_t *errors = metrics_counter(reg, "controller_runtime_reconcile_errors_total",
                                              "Total number of reconciliation errors per controller",
                                              "controller");
    static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3,
                                     0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
                                     1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9,
                                     10, 15, 20, 25, 30, 40, 50, 60};
    metric_family_t *time = metrics_histogram(
        reg, "controller_runtime_reconcile_time_seconds",
        "Length of time per reconciliation per controller", "controller", buckets,
        sizeof(buckets) / sizeof(buckets[0]));
    metric_counter_add(total, METRIC_LABELS(RECONCILE_CONTROLLER, metric_result(r)), 1);
    if (r == RECONCILE_ERROR)
        metric_counter_add(errors, METRIC_LABELS(RECONCILE_CONTROLLER), 1);
    metric_histogram_observe(time, METRIC_LABELS(RECONCILE_CONTROLLER), seconds);
}

#ifdef RDC_FAULT_INJECTION
/* Test-only fault switch, compiled into `make fault` builds and never into releases: a
 * RedisCluster annotated cache.example.com/test-fault: crash kills the worker that
 * reconciles it, so the end-to-end tests can show quarantine and isolation. */
static void maybe_crash(const json_object *rc)
{
    json_object *md = NULL, *ann = NULL, *v = NULL;
    if (json_object_object_get_ex(rc, "metadata", &md) &&
        json_object_object_get_ex(md, "annotations", &ann) &&
        json_object_object_get_ex(ann, "cache.example.com/test-fault", &v) &&
        strcmp(json_object_get_string(v), "crash") == 0)
        abort();
}
#endif

/* GET one object into *out (the caller puts it); 404 gives NULL and 0. Returns 0, or -1
 * with err. */
static int get_object(const exec_ctx_t *x, const char *group, const char *version, const char *resource,
                      const char *ns, const char *name, json_object **out, kube_error_t *err)
{
    buf_t path;
    buf_init(&path, 4096);
    int rc = kube_path(&path, group, version, ns, resource, name, NULL);
    if (rc) {
        kube_error_set(err, KERR_CONFIG, "%s %s/%s: cannot build the request path", resource, ns, name);
    } else if (kube_client_get(x->client, buf_str(&path), NULL, out, err)) {
        rc = -1;
        if (kube_error_is_not_found(err)) {
            kube_error_clear(err);
            rc = 0;
        }
    }
    buf_free(&path);
    if (rc || (*out && !json_object_is_type(*out, json_type_object))) {
        json_object_put(*out);
        *out = NULL;
    }
    return rc;
}

/* The cache lists children by our label only: an unlabelled object of the same name
 * looks absent there. Ask the API by name for each child the cache does not have (a
 * read, only then: a resync of healthy clusters reads nothing). fetched[i] gets what was
 * found (owned by the caller); child[i] points to it. Returns 0, or -1 with err. */
static int find_absent_children(const exec_ctx_t *x, const json_object *rc, const json_object *child[3],
                                json_object *fetched[3], kube_error_t *err)
{
    static const char *const group[3] = {"", "", "apps"}, *const resource[3] = {"configmaps", "services",
                                                                                  "statefulsets"};
    json_object *md = NULL;
    const char *ns = str_at(rc, "namespace"), *name = str_at(rc, "name");
    /* Deletion looks at no child, and an object that cannot be addressed is the plan's
     * to report. */
    if (!*ns || !*name || !json_object_object_get_ex(rc, "metadata", &md) ||
        json_object_object_get_ex(md, "deletionTimestamp", NULL))
        return 0;
    for (int i = 0; i < 3; i++) {
        if (child[i] || !x->client)
            continue;
        if (get_object(x, group[i], "v1", resource[i], ns, name, &fetched[i], err))
            return -1;
        child[i] = fetched[i];
    }
    return 0;
}

/* The API refused the write (an answer, not a transport failure or overload that a
 * retry may get past): worth saying in the status. */
static int refused_by_api(const kube_error_t *err)
{
    return err->http_status >= 400 && !kube_error_retryable(err) && !kube_error_is_conflict(err) &&
           !kube_error_is_already_exists(err);
}

/* Put the failure of action failed into the status (plan_write_failed) before the
 * caller backs off. The RedisCluster is read afresh first: a retry is often dispatched
 * before the watch has brought the status an earlier attempt wrote (maybe by another
 * worker), and comparing with that stale copy would write and record the same failure
 * again. Failing to report is logged, never more. */
static void report_write_failure(const exec_ctx_t *x, const json_object *rc, const plan_t *plan, size_t failed,
                                 const kube_error_t *err)
{
    json_object *fresh = NULL;
    kube_error_t gerr;
    kube_error_clear(&gerr);
    char line[1024];
    if (get_object(x, RDC_API_GROUP, RDC_API_VERSION, "redisclusters", str_at(rc, "namespace"), str_at(rc, "name"),
                   &fresh, &gerr)) {
        rlog_warn("cannot read the RedisCluster again; comparing with the cached one", "reconcileID",
                  x->reconcile_id, "error", kube_error_str(&gerr, line, sizeof(line)));
        fresh = json_object_get((json_object *)rc);
    } else if (!fresh) {
        return; /* deleted meanwhile: nothing to report on */
    }
    plan_t *fp = plan_write_failed(fresh, plan, failed, err->http_status, err->reason, err->message,
                                   clock_wall_ns());
    if (!fp) {
        rlog_warn("out of memory while reporting a failed write", "reconcileID", x->reconcile_id);
        json_object_put(fresh);
        return;
    }
    size_t at = 0;
    kube_error_t serr;
    if (plan_action_count(fp) && exec_plan(x, fresh, fp, &at, &serr) != EXEC_OK)
        rlog_warn("cannot report the failed write in the status", "reconcileID", x->reconcile_id, "error",
                  kube_error_str(&serr, line, sizeof(line)));
    plan_destroy(&fp);
    json_object_put(fresh);
}

void reconcile_run(const exec_ctx_t *x, const json_object *rc, const json_object *cm,
                   const json_object *svc, const json_object *sts, FILE *dry_run,
                   reconcile_outcome_t *out)
{
#ifdef RDC_FAULT_INJECTION
    maybe_crash(rc);
#endif
    memset(out, 0, sizeof(*out));
    int64_t start = clock_mono_ns();
    const char *ns = str_at(rc, "namespace"), *name = str_at(rc, "name");
    metric_family_t *active = metrics_gauge(metrics_default(),
                                            "controller_runtime_active_workers",
                                            "Number of currently used workers per controller",
                                            "controller");
    metric_gauge_add(active, METRIC_LABELS(RECONCILE_CONTROLLER), 1);

    const json_object *child[3] = {cm, svc, sts};
    json_object *fetched[3] = {NULL, NULL, NULL};
    plan_t *plan = NULL;
    kube_error_t ferr;
    kube_error_clear(&ferr);
    if (find_absent_children(x, rc, child, fetched, &ferr)) {
        out->result = RECONCILE_ERROR;
        kube_error_str(&ferr, out->message, sizeof(out->message));
        rlog_error("Reconciler error", "controller", RECONCILE_CONTROLLER, "namespace", ns, "name", name,
                   "reconcileID", x->reconcile_id, "action", "get", "error", out->message);
        goto out;
    }
    plan = plan_compute(rc, child[0], child[1], child[2], clock_wall_ns());
    if (!plan) {
        out->result = RECONCILE_ERROR;
        snprintf(out->message, sizeof(out->message), "out of memory while planning");
        goto out;
    }
    if (plan_error(plan)) {
        rlog_error("cannot reconcile this object", "controller", RECONCILE_CONTROLLER,
                   "namespace", ns, "name", name, "reconcileID", x->reconcile_id, "error",
                   plan_error(plan));
        out->result = RECONCILE_DONE;
        goto out;
    }
    if (dry_run) {
        json_object *j = plan_to_json(plan);
        fprintf(dry_run, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
        out->result = RECONCILE_DONE;
        goto out;
    }
    size_t failed = 0;
    kube_error_t err;
    exec_result_t r = exec_plan(x, rc, plan, &failed, &err);
    if (r == EXEC_OK) {
        out->requeue_after_ns = plan_requeue_after_ns(plan);
        out->result = out->requeue_after_ns > 0 ? RECONCILE_REQUEUE_AFTER : RECONCILE_DONE;
    } else {
        out->result = r == EXEC_CONFLICT ? RECONCILE_REQUEUE
                      : r == EXEC_FENCED ? RECONCILE_FENCED
                                         : RECONCILE_ERROR;
        kube_error_str(&err, out->message, sizeof(out->message));
        const plan_action_t *a = plan_action(plan, failed);
        rlog(r == EXEC_CONFLICT || r == EXEC_FENCED ? RLOG_INFO : RLOG_ERROR,
             "Reconciler error", "controller", RECONCILE_CONTROLLER, "namespace", ns, "name",
             name, "reconcileID", x->reconcile_id, "action",
             a ? plan_action_kind_name(a->kind) : "", "result", exec_result_name(r), "error",
             out->message);
        /* A write the API refused will likely be refused again: the status says so
         * (once: an unchanged failure writes and records nothing more). */
        if (r == EXEC_ERROR && refused_by_api(&err))
            report_write_failure(x, rc, plan, failed, &err);
    }
out:;
    double seconds = (double)(clock_mono_ns() - start) / 1e9;
    char secs[32], actions[16];
    snprintf(secs, sizeof(secs), "%.3f", seconds);
    snprintf(actions, sizeof(actions), "%zu", plan ? plan_action_count(plan) : 0);
    rlog_info("reconciled", "controller", RECONCILE_CONTROLLER, "namespace", ns, "name", name,
              "reconcileID", x->reconcile_id, "result", reconcile_result_name(out->result),
              "phase", plan && plan_phase(plan) ? plan_phase(plan) : "", "writes", actions,
              "seconds", secs);
    if (!dry_run)
        record_metrics(out->result, seconds);
    metric_gauge_add(active, METRIC_LABELS(RECONCILE_CONTROLLER), -1);
    plan_destroy(&plan);
    for (int i = 0; i < 3; i++)
        json_object_put(fetched[i]);
}
