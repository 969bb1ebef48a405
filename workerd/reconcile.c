#include "reconcile.h"

#include "b64.h"
#include "backoff.h"
#include "clock.h"
#include "jsonx.h"
#include "log.h"
#include "metrics.h"
#include "rdc_api.h"
#include "readmemo.h"
#include "render.h"


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

/* metadata.<k> of o as a string, "" when absent. */
static const char *meta_str(const json_object *o, const char *k)
{
    const char *v = JSONX_STR_AT(o, "metadata", k);
    return v ? v : "";
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
    const char *fault = JSONX_STR_AT(rc, "metadata", "annotations", "cache.example.com/test-fault");
    if (fault && strcmp(fault, "crash") == 0)
        abort();
}

/* cache.example.com/test-fault: pod-security makes the pod template break Pod Security
 * "restricted" (and "baseline"): the container adds the NET_ADMIN capability. Only added
 * to what the operator sends, so the plan's comparison (desired a subset of observed)
 * still sees no drift afterwards and a resync writes nothing. */
static void maybe_break_pod_security(const json_object *rc, const plan_t *plan)
{
    const char *fault = JSONX_STR_AT(rc, "metadata", "annotations", "cache.example.com/test-fault");
    if (!fault || strcmp(fault, "pod-security") != 0)
        return;
    for (size_t i = 0; i < plan_action_count(plan); i++) {
        const plan_action_t *a = plan_action(plan, i);
        json_object *spec = NULL, *tmpl = NULL, *pspec = NULL, *cs = NULL, *sc = NULL, *caps = NULL;
        if (strcmp(a->resource, "statefulsets") || !a->body ||
            !json_object_object_get_ex(a->body, "spec", &spec) ||
            !json_object_object_get_ex(spec, "template", &tmpl) ||
            !json_object_object_get_ex(tmpl, "spec", &pspec) ||
            !json_object_object_get_ex(pspec, "containers", &cs) || !json_object_is_type(cs, json_type_array) ||
            !json_object_object_get_ex(json_object_array_get_idx(cs, 0), "securityContext", &sc) ||
            !json_object_object_get_ex(sc, "capabilities", &caps))
            continue;
        json_object *add = json_object_new_array();
        json_object_array_add(add, json_object_new_string("NET_ADMIN"));
        json_object_object_add(caps, "add", add);
    }
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
 * read, only then: a resync of healthy clusters reads nothing) when the context has no
 * memo of existing names (workerd --once, the serial path); with one (x->exists and
 * x->batch), only when the memo names one of them (a create of it met 409 AlreadyExists,
 * or a read found it), and then all of them, so the plan sees every object in the way
 * at once, as without a memo. A new cluster reads nothing: its creates are POSTs, which
 * an object of that name refuses with 409 (existsmemo.h). The memo forgets a name the
 * cache holds or a read answers 404 for, and keeps one a read finds. fetched[i] gets
 * what was found (owned by the caller); child[i] points to it. Returns 0, or -1 with
 * err. */
#define N_CHILDREN 6 /* ConfigMap, Service, StatefulSet, PDB, then the role Services */
static const char *const child_group[N_CHILDREN] = {"", "", "apps", "policy", "", ""};
static const char *const child_resource[N_CHILDREN] = {"configmaps", "services", "statefulsets",
                                                       "poddisruptionbudgets", "services", "services"};
#define ROLE_CHILD 4 /* the first role Service's index */

/* The memo's say (x->exists): 1 when the absent children must be read by name (no
 * usable memo, or it names one of them), 0 when the cache can be trusted. Children the
 * cache holds leave the memo. */
static int must_read_absent(const exec_ctx_t *x, const char *ns, const json_object *const child[N_CHILDREN],
                            char names[N_CHILDREN][300], const int absent[], int n)
{
    existsmemo_t *m = x->batch ? x->exists : NULL;
    if (!m)
        return 1;
    for (int i = 0; i < N_CHILDREN; i++)
        if (child[i])
            existsmemo_drop(m, child_resource[i], ns, meta_str(child[i], "name"));
    int known = existsmemo_saturated(m);
    for (int k = 0; k < n && !known; k++)
        known = existsmemo_has(m, child_resource[absent[k]], ns, names[absent[k]]);
    return known;
}

/* What the reads of the absent children found, into the memo (see must_read_absent). */
static void note_absent_read(const exec_ctx_t *x, const char *ns, const json_object *const fetched[N_CHILDREN],
                             char names[N_CHILDREN][300], const int absent[], int n)
{
    existsmemo_t *m = x->batch ? x->exists : NULL;
    for (int k = 0; m && k < n; k++) {
        int i = absent[k];
        if (fetched[i])
            existsmemo_add(m, child_resource[i], ns, names[i]);
        else
            existsmemo_drop(m, child_resource[i], ns, names[i]);
    }
}

static int find_absent_children(const exec_ctx_t *x, const json_object *rc, const json_object *child[N_CHILDREN],
                                json_object *fetched[N_CHILDREN], kube_error_t *err)
{
    json_object *md = NULL;
    const char *ns = meta_str(rc, "namespace"), *name = meta_str(rc, "name");
    /* Deletion looks at no child, and an object that cannot be addressed is the plan's
     * to report. */
    if (!*ns || !*name || !json_object_object_get_ex(rc, "metadata", &md) ||
        json_object_object_get_ex(md, "deletionTimestamp", NULL))
        return 0;
    const char *mode = JSONX_STR_AT(rc, "spec", "mode");
    int replication = mode && !strcmp(mode, "Replication");
    char names[N_CHILDREN][300];
    int absent[N_CHILDREN], n = 0;
    for (int i = 0; i < N_CHILDREN; i++) {
        if (child[i] || !x->client || (i >= ROLE_CHILD && !replication))
            continue;
        if (i >= ROLE_CHILD)
            render_role_service_name(name, i == ROLE_CHILD ? RENDER_ROLE_PRIMARY : RENDER_ROLE_REPLICA, names[i],
                                     sizeof(names[i]));
        else
            snprintf(names[i], sizeof(names[i]), "%s", name);
        absent[n++] = i;
    }
    if (!must_read_absent(x, ns, child, names, absent, n))
        return 0;
    if (n >= 2 && x->batch) {
        /* independent reads: at once (a new cluster's 404s in one round trip) */
        buf_t path[N_CHILDREN];
        const char *paths[N_CHILDREN];
        json_object *got[N_CHILDREN] = {NULL};
        int rc = 0;
        for (int k = 0; k < n; k++) {
            int i = absent[k];
            buf_init(&path[k], 4096);
            if (kube_path(&path[k], child_group[i], "v1", ns, child_resource[i], names[i], NULL)) {
                kube_error_set(err, KERR_CONFIG, "%s %s/%s: cannot build the request path", child_resource[i], ns,
                               names[i]);
                rc = -1;
            }
            paths[k] = buf_str(&path[k]);
        }
        if (!rc)
            rc = exec_get_many(x, paths, (size_t)n, got, err);
        for (int k = 0; k < n; k++) {
            buf_free(&path[k]);
            fetched[absent[k]] = got[k];
            child[absent[k]] = got[k];
        }
        if (!rc)
            note_absent_read(x, ns, (const json_object *const *)fetched, names, absent, n);
        return rc;
    }
    for (int k = 0; k < n; k++) {
        int i = absent[k];
        if (get_object(x, child_group[i], "v1", child_resource[i], ns, names[i], &fetched[i], err))
            return -1;
        child[i] = fetched[i];
    }
    note_absent_read(x, ns, (const json_object *const *)fetched, names, absent, n);
    return 0;
}

int reconcile_read_password(kube_client_t *client, const json_object *rc, char **password, kube_error_t *err)
{
    *password = NULL;
    const char *ns = meta_str(rc, "namespace");
    const char *sname = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "name");
    const char *key = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "key");
    if (!sname || !*sname)
        return 0;
    if (!key || !*key)
        key = RENDER_AUTH_DEFAULT_KEY;
    exec_ctx_t x = {.client = client};
    json_object *secret = NULL;
    if (get_object(&x, "", "v1", "secrets", ns, sname, &secret, err))
        return -1;
    int rc_ = -1;
    const char *b64 = JSONX_STR_AT(secret, "data", key);
    if (!secret)
        kube_error_set(err, KERR_NOT_FOUND, "Secret %s/%s (spec.auth.secretRef) not found", ns, sname);
    else if (!b64)
        kube_error_set(err, KERR_CONFIG, "Secret %s/%s has no key \"%s\" (spec.auth.secretRef.key)", ns, sname, key);
    else if (!(*password = b64_text(b64)))
        kube_error_set(err, KERR_CONFIG, "Secret %s/%s key \"%s\": not base64 text", ns, sname, key);
    else
        rc_ = 0;
    json_object_put(secret);
    return rc_;
}

/* AUTH (plan.h): the Secret's password into *password and the recorded one (Secret
 * <name>-redis-auth) into *applied (new strings the caller wipes and frees, NULL when
 * absent), and what they say. A Secret that cannot be read is logged: PLAN_AUTH_UNKNOWN
 * (no auth action; Redis commands then go without a password and fail, saying why). */
static plan_auth_t read_auth(const exec_ctx_t *x, const json_object *rc, char **password, char **applied)
{
    *password = *applied = NULL;
    const char *sname = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "name");
    if (!x->client || !sname || !*sname)
        return PLAN_AUTH_UNKNOWN;
    kube_error_t err;
    kube_error_clear(&err);
    char line[1024], rec[300];
    if (reconcile_read_password(x->client, rc, password, &err)) {
        rlog_warn("cannot read the cluster's password", "reconcileID", x->reconcile_id, "error",
                  kube_error_str(&err, line, sizeof(line)));
        return PLAN_AUTH_UNKNOWN;
    }
    snprintf(rec, sizeof(rec), "%s" RENDER_AUTH_RECORD_SUFFIX, meta_str(rc, "name"));
    json_object *s = NULL;
    if (get_object(x, "", "v1", "secrets", meta_str(rc, "namespace"), rec, &s, &err)) {
        rlog_warn("cannot read the password record", "reconcileID", x->reconcile_id, "secret", rec, "error",
                  kube_error_str(&err, line, sizeof(line)));
        return PLAN_AUTH_UNKNOWN;
    }
    const char *b64 = JSONX_STR_AT(s, "data", RENDER_AUTH_DEFAULT_KEY);
    *applied = b64 ? b64_text(b64) : NULL;
    json_object_put(s);
    if (!*applied)
        return PLAN_AUTH_UNRECORDED;
    return strcmp(*applied, *password) ? PLAN_AUTH_ROTATE : PLAN_AUTH_CURRENT;
}

static void wipe(char **s)
{
    if (*s) {
        memset(*s, 0, strlen(*s));
        free(*s);
        *s = NULL;
    }
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
    if (get_object(x, RDC_API_GROUP, RDC_API_VERSION, "redisclusters", meta_str(rc, "namespace"), meta_str(rc, "name"),
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

/* LIST one resource of the namespace with a label or field selector into *items (the
 * caller puts it). Returns 0, or -1 with err. */
static int list_in(const exec_ctx_t *x, const char *ns, const char *resource, const char *label_selector,
                   const char *field_selector, json_object **items, kube_error_t *err)
{
    buf_t path;
    buf_init(&path, 4096);
    /* resourceVersion "0": any recent state will do for a diagnosis, and the API server
     * answers it from its watch cache instead of reading etcd (as a reflector's first
     * LIST does). */
    kube_req_opts_t ro = {
        .label_selector = label_selector, .field_selector = field_selector, .limit = 500, .resource_version = "0"};
    char *rv = NULL;
    int rc = kube_path(&path, "", "v1", ns, resource, NULL, NULL);
    if (rc)
        kube_error_set(err, KERR_CONFIG, "%s in %s: cannot build the request path", resource, ns);
    else
        rc = kube_client_list_all(x->client, buf_str(&path), &ro, items, &rv, err) ? -1 : 0;
    free(rv);
    buf_free(&path);
    return rc;
}

/* The diagnosis reads of a worker (the async path) are kept DIAG_MEMO_TTL_NS under the
 * StatefulSet's resourceVersion (diag_memo_key): a converging cluster is reconciled again
 * at every change of its pods (labels, observerd's observation, each condition), and
 * each reconcile read the same three LISTs anew, blocking the worker's loop. A pod
 * created or gone, or one more or less Ready, changes the StatefulSet's status and
 * reads anew; what changes only a pod (unschedulable, waiting for its image) reaches
 * the status up to the ttl late, as its ready count may (docs/status-and-drift.md). */
#define DIAG_MEMO_SLOTS 32 /* kept as text: ~30 KB each for 3 pods and their Events */
#define DIAG_MEMO_TTL_NS (INT64_C(10) * NS_PER_SEC)
static readmemo_t *diag_memo;

/* The memo key of rc's diagnosis with StatefulSet sts, into key; 0, or -1 without one. */
static int diag_memo_key(const json_object *rc, const json_object *sts, buf_t *key)
{
    const char *rv = sts ? meta_str(sts, "resourceVersion") : "";
    if (!*rv)
        return -1;
    return buf_printf(key, "%s/%s@%s", meta_str(rc, "namespace"), meta_str(rc, "name"), rv) ? -1 : 0;
}

/* What plan_wants_diagnosis asks for (plan.h, DIAGNOSIS): the StatefulSet's pods, its
 * Events, and the Events of the first pod not Ready, from the memo under memo_key when
 * it has them (memo_key NULL: read). got[] takes what was read (the caller puts each);
 * more points into it. A failed read is logged and leaves that part NULL (and nothing
 * is kept): a diagnosis is a help, never a reason to fail the reconcile. */
static void read_diagnosis(const exec_ctx_t *x, const json_object *rc, const plan_t *plan, const char *memo_key,
                           json_object *got[3], plan_observed_t *more)
{
    const char *ns = meta_str(rc, "namespace"), *name = meta_str(rc, "name");
    char fs[600], line[1024];
    kube_error_t err;
    json_object *kept = NULL;
    int failed = 0;
    if (memo_key && !diag_memo)
        diag_memo = readmemo_new(DIAG_MEMO_SLOTS, DIAG_MEMO_TTL_NS); /* NULL: every diagnosis reads */
    if (memo_key && readmemo_get(diag_memo, memo_key, clock_mono_ns(), &kept) &&
        json_object_is_type(kept, json_type_string)) {
        /* kept as text: a parsed LIST of pods costs ten times its text in json-c objects */
        json_object *was = json_tokener_parse(json_object_get_string(kept));
        for (int i = 0; was && json_object_is_type(was, json_type_array) && i < 3; i++)
            got[i] = json_object_get(json_object_array_get_idx(was, (size_t)i));
        json_object_put(was);
        goto out;
    }
    kube_error_clear(&err);
    if (list_in(x, ns, "pods", plan_pod_selector(plan), NULL, &got[0], &err)) {
        failed = 1;
        rlog_warn("cannot read the pods to explain the status", "reconcileID", x->reconcile_id, "error",
                  kube_error_str(&err, line, sizeof(line)));
    }
    snprintf(fs, sizeof(fs), "involvedObject.kind=StatefulSet,involvedObject.name=%s", name);
    kube_error_clear(&err);
    if (list_in(x, ns, "events", NULL, fs, &got[1], &err)) {
        failed = 1;
        rlog_warn("cannot read the StatefulSet's Events", "reconcileID", x->reconcile_id, "error",
                  kube_error_str(&err, line, sizeof(line)));
    }
    const char *pod = plan_pod_to_explain(got[0]);
    if (pod) {
        snprintf(fs, sizeof(fs), "involvedObject.kind=Pod,involvedObject.name=%s", pod);
        kube_error_clear(&err);
        if (list_in(x, ns, "events", NULL, fs, &got[2], &err)) {
            failed = 1;
            rlog_warn("cannot read the pod's Events", "reconcileID", x->reconcile_id, "error",
                      kube_error_str(&err, line, sizeof(line)));
        }
    }
    json_object *all = memo_key && !failed ? json_object_new_array() : NULL, *keep = NULL;
    for (int i = 0; all && i < 3; i++)
        json_object_array_add(all, json_object_get(got[i]));
    if (all && (keep = json_object_new_string(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PLAIN))))
        readmemo_put(diag_memo, memo_key, keep, clock_mono_ns());
    json_object_put(keep);
    json_object_put(all);
out:
    json_object_put(kept);
    more->pods = got[0];
    more->sts_events = got[1];
    more->pod_events = got[2];
}

/* STORAGE CLASS (plan.h): 1 when the class the plan would create claims of is absent
 * (404), 0 when it exists or cannot be read (then the StatefulSet is created as before,
 * and a diagnosis explains pending claims). The answer is kept per worker process for
 * SC_MEMO_TTL_NS (a class rarely comes or goes; each new cluster would otherwise read
 * it again); a failed read is not kept. */
#define SC_MEMO_SLOTS 8
#define SC_MEMO_TTL_NS (INT64_C(30) * NS_PER_SEC)
static readmemo_t *sc_memo;

static int storage_class_missing(const exec_ctx_t *x, const char *cls)
{
    int64_t now = clock_mono_ns();
    json_object *kept = NULL;
    if (!sc_memo)
        sc_memo = readmemo_new(SC_MEMO_SLOTS, SC_MEMO_TTL_NS); /* NULL: every check reads */
    if (readmemo_get(sc_memo, cls, now, &kept)) {
        int missing = json_object_get_boolean(kept);
        json_object_put(kept);
        return missing;
    }
    json_object *sc = NULL;
    kube_error_t err;
    kube_error_clear(&err);
    char line[1024];
    if (get_object(x, "storage.k8s.io", "v1", "storageclasses", NULL, cls, &sc, &err)) {
        rlog_warn("cannot read the StorageClass", "reconcileID", x->reconcile_id, "storageClass", cls, "error",
                  kube_error_str(&err, line, sizeof(line)));
        return 0;
    }
    int missing = sc == NULL;
    json_object_put(sc);
    json_object *answer = json_object_new_boolean(missing);
    readmemo_put(sc_memo, cls, answer, now);
    json_object_put(answer);
    return missing;
}

void reconcile_forget_reads(void)
{
    readmemo_clear(sc_memo);
    readmemo_clear(diag_memo);
}

/* DIAGNOSIS is read only once the StatefulSet is RECONCILE_DIAGNOSIS_AFTER_NS old: pods
 * that are merely starting need no explanation, and a new cluster would read pods and
 * Events on every status change while they start. Returns how long to wait still (0 =
 * read now: older, or its age unknown). */
static int64_t diagnosis_wait_ns(const json_object *sts)
{
    const char *created = JSONX_STR_AT(sts, "metadata", "creationTimestamp");
    int64_t at = 0;
    if (!created || clock_parse_rfc3339(created, &at))
        return 0;
    int64_t age = clock_wall_ns() - at;
    return age >= 0 && age < RECONCILE_DIAGNOSIS_AFTER_NS ? RECONCILE_DIAGNOSIS_AFTER_NS - age : 0;
}

/* The observed child an action writes (child[] is ConfigMap, Service, StatefulSet, PDB and
 * the role Services: three Services, told apart by name). */
static const json_object *child_written(const plan_action_t *a, const json_object *const child[N_CHILDREN])
{
    for (int i = 0; a && i < N_CHILDREN; i++)
        if (child[i] && a->name && !strcmp(a->resource, child_resource[i]) &&
            !strcmp(meta_str(child[i], "name"), a->name))
            return child[i];
    return NULL;
}

/* TAKING A CHILD BACK (plan.h): the apply at index failed was refused with err (422);
 * replace the child, and when that is refused too and it is the Service, recreate it.
 * Returns EXEC_OK when the child was taken back; otherwise the last attempt's result,
 * with err describing it. */
static exec_result_t take_back(const exec_ctx_t *x, const json_object *rc, const plan_t *plan, size_t failed,
                               const json_object *obs, kube_error_t *err)
{
    exec_result_t r = EXEC_ERROR;
    char line[1024];
    for (int recreate = 0; recreate < 2; recreate++) {
        plan_t *tb = plan_take_back(plan, failed, obs, recreate, err->http_status, err->reason, err->message);
        if (!tb)
            return EXEC_ERROR;
        if (!plan_action_count(tb)) {
            plan_destroy(&tb);
            return r;
        }
        size_t at = 0;
        kube_error_t terr;
        r = exec_plan(x, rc, tb, &at, &terr);
        const plan_action_t *a = plan_action(tb, at);
        if (r == EXEC_OK)
            rlog_info(recreate ? "recreated a child the API refused to update" : "took back a refused child",
                      "reconcileID", x->reconcile_id, "path", a->path, "why", a->why);
        else
            rlog_warn("cannot take the child back", "reconcileID", x->reconcile_id, "action",
                      plan_action_kind_name(a->kind), "error", kube_error_str(&terr, line, sizeof(line)));
        plan_destroy(&tb);
        if (r == EXEC_OK)
            return r;
        *err = terr;
        if (r != EXEC_ERROR || err->http_status != 422)
            return r;
    }
    return r;
}

void reconcile_run(const exec_ctx_t *x, const json_object *rc, const json_object *cm,
                   const json_object *svc, const json_object *sts, const plan_observed_t *seen,
                   FILE *dry_run, reconcile_outcome_t *out)
{
    plan_children_t kids = {cm, svc, sts, NULL};
    reconcile_run_children(x, rc, &kids, seen, dry_run, out);
}

struct reconcile_job {
    exec_ctx_t xr;              /* the caller's context with the Redis passwords */
    const json_object *rc;
    const json_object *child[N_CHILDREN];
    json_object *fetched[N_CHILDREN], *diag[3];
    plan_t *plan;
    char *password, *applied;
    int64_t start;
    int dry_run;
    int64_t diag_wait_ns;       /* the diagnosis was put off this long (requeue then) */
    plan_observed_t seen;       /* the caller's (what it points to is borrowed) */
    int has_seen;
};

/* Log, count and free: the end of every reconcile. */
static void job_free(reconcile_job_t *j, const reconcile_outcome_t *out)
{
    const char *ns = meta_str(j->rc, "namespace"), *name = meta_str(j->rc, "name");
    double seconds = (double)(clock_mono_ns() - j->start) / 1e9;
    char secs[32], actions[16];
    snprintf(secs, sizeof(secs), "%.3f", seconds);
    snprintf(actions, sizeof(actions), "%zu", j->plan ? plan_action_count(j->plan) : 0);
    rlog_info("reconciled", "controller", RECONCILE_CONTROLLER, "namespace", ns, "name", name, "reconcileID",
              j->xr.reconcile_id, "result", reconcile_result_name(out->result), "phase",
              j->plan && plan_phase(j->plan) ? plan_phase(j->plan) : "", "writes", actions, "seconds", secs);
    if (!j->dry_run)
        record_metrics(out->result, seconds);
    metric_family_t *active = metrics_gauge(metrics_default(), "controller_runtime_active_workers",
                                            "Number of currently used workers per controller", "controller");
    metric_gauge_add(active, METRIC_LABELS(RECONCILE_CONTROLLER), -1);
    plan_destroy(&j->plan);
    for (int i = 0; i < N_CHILDREN; i++)
        json_object_put(j->fetched[i]);
    for (int i = 0; i < 3; i++)
        json_object_put(j->diag[i]);
    wipe(&j->password);
    wipe(&j->applied);
    free(j);
}

/* reconcile_begin: j's plan from the children (j->child, the absent ones read), what
 * observerd saw, the auth Secret and, only when the first plan asks, the StorageClass and
 * the diagnosis reads; NULL plan on out of memory. */
static void plan_job(reconcile_job_t *j, const exec_ctx_t *x, const json_object *rc, const plan_observed_t *seen,
                     int dry_run)
{
    const json_object **child = j->child;
    plan_observed_t more;
    memset(&more, 0, sizeof(more));
    if (seen) {
        more.members = seen->members;
        more.redis = seen->redis;
    }
    more.primary_service = child[ROLE_CHILD];
    more.replicas_service = child[ROLE_CHILD + 1];
    more.auth = read_auth(x, rc, &j->password, &j->applied);
    j->xr.redis_password = j->password;
    j->xr.redis_old_password = j->applied;
    plan_children_t observed = {child[0], child[1], child[2], child[3]};
    j->plan = plan_compute_children(rc, &observed, &more, clock_wall_ns());
    /* Only when the first plan asks: a healthy resync reads nothing more. */
    if (j->plan && x->client && !dry_run) {
        const char *cls = plan_storage_class_to_check(j->plan);
        more.storage_class_missing = cls && storage_class_missing(x, cls);
        if (plan_wants_diagnosis(j->plan) && !(j->diag_wait_ns = diagnosis_wait_ns(child[2]))) {
            buf_t key;
            buf_init(&key, 1024);
            int memo = x->batch && !diag_memo_key(rc, child[2], &key);
            read_diagnosis(x, rc, j->plan, memo ? buf_str(&key) : NULL, j->diag, &more);
            buf_free(&key);
        }
    }
    if (more.storage_class_missing || more.pods || more.sts_events) {
        plan_destroy(&j->plan);
        j->plan = plan_compute_children(rc, &observed, &more, clock_wall_ns());
    }
}

reconcile_job_t *reconcile_begin(const exec_ctx_t *x, const json_object *rc, const plan_children_t *kids,
                                 const plan_observed_t *seen, FILE *dry_run, reconcile_outcome_t *out)
{
#ifdef RDC_FAULT_INJECTION
    maybe_crash(rc);
#endif
    memset(out, 0, sizeof(*out));
    reconcile_job_t *j = calloc(1, sizeof(*j));
    if (!j) {
        out->result = RECONCILE_ERROR;
        snprintf(out->message, sizeof(out->message), "out of memory");
        return NULL;
    }
    j->start = clock_mono_ns();
    j->rc = rc;
    j->xr = *x;
    j->dry_run = dry_run != NULL;
    if (seen) {
        j->seen = *seen;
        j->has_seen = 1;
    }
    const char *ns = meta_str(rc, "namespace"), *name = meta_str(rc, "name");
    metric_family_t *active = metrics_gauge(metrics_default(), "controller_runtime_active_workers",
                                            "Number of currently used workers per controller", "controller");
    metric_gauge_add(active, METRIC_LABELS(RECONCILE_CONTROLLER), 1);

    const json_object **child = j->child;
    child[0] = kids->configmap;
    child[1] = kids->service;
    child[2] = kids->statefulset;
    child[3] = kids->pdb;
    child[4] = seen ? seen->primary_service : NULL;
    child[5] = seen ? seen->replicas_service : NULL;
    kube_error_t ferr;
    kube_error_clear(&ferr);
    if (find_absent_children(x, rc, child, j->fetched, &ferr)) {
        out->result = RECONCILE_ERROR;
        kube_error_str(&ferr, out->message, sizeof(out->message));
        rlog_error("Reconciler error", "controller", RECONCILE_CONTROLLER, "namespace", ns, "name", name,
                   "reconcileID", x->reconcile_id, "action", "get", "error", out->message);
        goto done;
    }
    plan_job(j, x, rc, seen, dry_run != NULL);
#ifdef RDC_FAULT_INJECTION
    if (j->plan)
        maybe_break_pod_security(rc, j->plan);
#endif
    if (!j->plan) {
        out->result = RECONCILE_ERROR;
        snprintf(out->message, sizeof(out->message), "out of memory while planning");
        goto done;
    }
    if (plan_error(j->plan)) {
        rlog_error("cannot reconcile this object", "controller", RECONCILE_CONTROLLER, "namespace", ns, "name",
                   name, "reconcileID", x->reconcile_id, "error", plan_error(j->plan));
        out->result = RECONCILE_DONE;
        goto done;
    }
    if (dry_run) {
        json_object *pj = plan_to_json(j->plan);
        fprintf(dry_run, "%s\n", json_object_to_json_string_ext(pj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(pj);
        out->result = RECONCILE_DONE;
        goto done;
    }
    return j;
done:
    job_free(j, out);
    return NULL;
}

const exec_ctx_t *reconcile_job_ctx(const reconcile_job_t *j)
{
    return &j->xr;
}

const plan_t *reconcile_job_plan(const reconcile_job_t *j)
{
    return j->plan;
}

/* A create met 409 AlreadyExists: an object of that name the cache does not hold. Keep
 * the name (existsmemo.h), read the absent children by name, plan again from them and
 * run that plan to its end (on a loop of its own, as take_back's), so that the
 * reconcile ends as the read-first path ends (a foreign object left alone and reported,
 * one of ours taken back) and no other reconcile, with an older RedisCluster, reports it
 * again. Returns the second run's result (failed and err as exec_plan's); EXEC_CONFLICT
 * with failed and err unchanged when the reads or the plan fail (the next reconcile
 * reads: the name is kept). */
static exec_result_t replan_after_exists(reconcile_job_t *j, const plan_action_t *fa, size_t *failed,
                                         kube_error_t *err)
{
    const exec_ctx_t *x = &j->xr;
    const char *ns = fa->ns ? fa->ns : meta_str(j->rc, "namespace");
    rlog_info("create met an object the cache does not hold: reading the children, planning again",
              "reconcileID", x->reconcile_id, "resource", fa->resource, "namespace", ns, "name", fa->name);
    existsmemo_add(x->exists, fa->resource, ns, fa->name);
    kube_error_t rerr;
    kube_error_clear(&rerr);
    if (find_absent_children(x, j->rc, j->child, j->fetched, &rerr))
        return EXEC_CONFLICT;
    plan_t *first = j->plan;
    char *password = j->password, *applied = j->applied;
    j->plan = NULL;
    j->password = j->applied = NULL;
    for (int i = 0; i < 3; i++) {
        json_object_put(j->diag[i]);
        j->diag[i] = NULL;
    }
    plan_job(j, x, j->rc, j->has_seen ? &j->seen : NULL, 0);
    if (!j->plan || plan_error(j->plan)) {
        plan_destroy(&j->plan);
        wipe(&j->password);
        wipe(&j->applied);
        j->plan = first;
        j->password = password;
        j->applied = applied;
        j->xr.redis_password = password;
        j->xr.redis_old_password = applied;
        return EXEC_CONFLICT;
    }
    plan_destroy(&first);
    wipe(&password);
    wipe(&applied);
    return exec_plan(x, j->rc, j->plan, failed, err);
}

/* 1 when the run ended on a create that met 409 AlreadyExists, with a memo to keep the
 * name in (workerd's context). */
static int create_met_existing(const exec_ctx_t *x, exec_result_t r, const plan_action_t *fa,
                               const kube_error_t *err)
{
    return r == EXEC_CONFLICT && fa && fa->kind == PLAN_CREATE && x->batch && x->exists &&
           kube_error_is_already_exists(err);
}

void reconcile_end(reconcile_job_t **job_p, exec_result_t r, size_t failed, const kube_error_t *ferr,
                   reconcile_outcome_t *out)
{
    reconcile_job_t *j = *job_p;
    *job_p = NULL;
    memset(out, 0, sizeof(*out));
    const exec_ctx_t *x = &j->xr;
    const json_object *rc = j->rc;
    const plan_t *plan = j->plan;
    const char *ns = meta_str(rc, "namespace"), *name = meta_str(rc, "name");
    kube_error_t err;
    if (ferr)
        err = *ferr;
    else
        kube_error_clear(&err);
    const plan_action_t *fa = r == EXEC_OK ? NULL : plan_action(plan, failed);
    if (create_met_existing(x, r, fa, &err)) {
        r = replan_after_exists(j, fa, &failed, &err);
        plan = j->plan;
        fa = r == EXEC_OK ? NULL : plan_action(plan, failed);
        if (create_met_existing(x, r, fa, &err)) /* another appeared meanwhile: read next time */
            existsmemo_add(x->exists, fa->resource, fa->ns ? fa->ns : ns, fa->name);
    }
    if (r == EXEC_ERROR && err.http_status == 422 && fa && fa->kind == PLAN_APPLY) {
        /* Applying again would be refused again: take the child back. */
        r = take_back(x, rc, plan, failed, child_written(fa, j->child), &err);
        if (r == EXEC_OK) {
            /* The rest of the plan is the next reconcile's, with the child as it is now. */
            out->result = RECONCILE_REQUEUE_AFTER;
            out->requeue_after_ns = RECONCILE_TAKE_BACK_REQUEUE_NS;
            goto out;
        }
    }
    if (r == EXEC_OK) {
        out->requeue_after_ns = plan_requeue_after_ns(plan);
        /* a diagnosis put off: look again when it is due, whatever else happens */
        if (j->diag_wait_ns > 0 && (!out->requeue_after_ns || j->diag_wait_ns < out->requeue_after_ns))
            out->requeue_after_ns = j->diag_wait_ns;
        out->result = out->requeue_after_ns > 0 ? RECONCILE_REQUEUE_AFTER : RECONCILE_DONE;
    } else {
        out->result = r == EXEC_CONFLICT ? RECONCILE_REQUEUE : r == EXEC_FENCED ? RECONCILE_FENCED : RECONCILE_ERROR;
        kube_error_str(&err, out->message, sizeof(out->message));
        const plan_action_t *a = plan_action(plan, failed);
        rlog(r == EXEC_CONFLICT || r == EXEC_FENCED ? RLOG_INFO : RLOG_ERROR, "Reconciler error", "controller",
             RECONCILE_CONTROLLER, "namespace", ns, "name", name, "reconcileID", x->reconcile_id, "action",
             a ? plan_action_kind_name(a->kind) : "", "result", exec_result_name(r), "error", out->message);
        /* A write the API refused will likely be refused again: the status says so
         * (once: an unchanged failure writes and records nothing more). */
        if (r == EXEC_ERROR && refused_by_api(&err))
            report_write_failure(x, rc, plan, failed, &err);
    }
out:
    job_free(j, out);
}

void reconcile_cancel(reconcile_job_t **job_p)
{
    if (!job_p || !*job_p)
        return;
    reconcile_outcome_t out = {.result = RECONCILE_FENCED};
    job_free(*job_p, &out);
    *job_p = NULL;
}

void reconcile_run_children(const exec_ctx_t *x, const json_object *rc, const plan_children_t *kids,
                            const plan_observed_t *seen, FILE *dry_run, reconcile_outcome_t *out)
{
    reconcile_job_t *j = reconcile_begin(x, rc, kids, seen, dry_run, out);
    if (!j)
        return;
    size_t failed = 0;
    kube_error_t err;
    exec_result_t r = exec_plan(reconcile_job_ctx(j), rc, reconcile_job_plan(j), &failed, &err);
    reconcile_end(&j, r, failed, &err, out);
}
