#include "reconcile.h"

#include "b64.h"
#include "backoff.h"
#include "clock.h"
#include "jsonx.h"
#include "log.h"
#include "metrics.h"
#include "rdc_api.h"
#include "reads.h"
#include "readmemo.h"
#include "render.h"
#include "secretset.h"


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

/* cache.example.com/test-fault: finalizer-conflict makes a real concurrent update: before
 * this worker's first finalizer PATCH of the object (once per process and object, so the
 * retry goes through), another write of the object (an annotation, with the blocking
 * client) lands first; the PATCH then carries an outdated resourceVersion and the API
 * server answers 409 Conflict, the path a concurrent client (kubectl) takes in real life. */
static void maybe_update_before_finalizer(const json_object *rcobj, const plan_t *plan, kube_client_t *client)
{
    static char bumped[8][64];
    const char *fault = JSONX_STR_AT(rcobj, "metadata", "annotations", "cache.example.com/test-fault");
    const char *uid = JSONX_STR_AT(rcobj, "metadata", "uid");
    if (!fault || strcmp(fault, "finalizer-conflict") || !uid || !plan)
        return;
    const plan_action_t *fin = NULL;
    for (size_t i = 0; i < plan_action_count(plan) && !fin; i++)
        if (plan_action(plan, i)->kind == PLAN_ADD_FINALIZER)
            fin = plan_action(plan, i);
    size_t slot = 0;
    while (slot < 8 && bumped[slot][0] && strcmp(bumped[slot], uid))
        slot++;
    if (!fin || slot == 8 || bumped[slot][0])
        return;
    snprintf(bumped[slot], sizeof(bumped[slot]), "%s", uid);
    char path[512];
    snprintf(path, sizeof(path), "%s", fin->path);
    char *q = strchr(path, '?');
    if (q)
        *q = '\0';
    json_object *patch =
        json_tokener_parse("{\"metadata\":{\"annotations\":{\"cache.example.com/test-bumped\":\"1\"}}}");
    kube_error_t err = {0};
    int rc = kube_client_patch(client, path, KUBE_PATCH_MERGE, patch, NULL, NULL, &err);
    rlog_info("test-fault: a concurrent update before the finalizer PATCH", "path", path, "result",
              rc ? err.message : "updated");
    json_object_put(patch);
}
#endif

/* ---- what the children, the auth and the diagnosis reads are ---------------------------- */

/* The cache lists children by our label only: an unlabelled object of the same name
 * looks absent there. Each child the cache does not have is asked from the API by name
 * (a read, only then: a resync of healthy clusters reads nothing) when the context has
 * no memo of existing names (x->exists NULL); with one, only when the memo names one of
 * them (a create of it met 409 AlreadyExists, or a read found it), and then all of them,
 * so the plan sees every object in the way at once, as without a memo. A new cluster
 * reads nothing: its creates are POSTs, which an object of that name refuses with 409
 * (existsmemo.h). The memo forgets a name the cache holds or a read answers 404 for, and
 * keeps one a read finds. */
#define N_CHILDREN 6 /* ConfigMap, Service, StatefulSet, PDB, then the role Services */
static const char *const child_group[N_CHILDREN] = {"", "", "apps", "policy", "", ""};
static const char *const child_resource[N_CHILDREN] = {"configmaps", "services", "statefulsets",
                                                       "poddisruptionbudgets", "services", "services"};
#define ROLE_CHILD 4 /* the first role Service's index */
static const char *const child_kind[N_CHILDREN] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget",
                                                   "Service", "Service"};

/* The name of child i of the RedisCluster named name into out (the role Services'
 * <name>-primary and <name>-replicas, the others' the cluster's). */
static void child_name(const char *name, int i, char *out, size_t len)
{
    if (i >= ROLE_CHILD)
        render_role_service_name(name, i == ROLE_CHILD ? RENDER_ROLE_PRIMARY : RENDER_ROLE_REPLICA, out, len);
    else
        snprintf(out, len, "%s", name);
}

/* The memo's say (x->exists): 1 when the absent children must be read by name (no
 * memo, or it names one of them), 0 when the cache can be trusted. Children the cache
 * holds leave the memo. */
static int must_read_absent(const exec_ctx_t *x, const char *ns, const json_object *const child[N_CHILDREN],
                            char names[N_CHILDREN][300], const int absent[], int n)
{
    existsmemo_t *m = x->exists;
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

/* The password of rc's spec.auth.secretRef from secret (NULL: the Secret is absent).
 * Returns 0 with *password a new string (NULL when rc has no spec.auth), or -1 with err;
 * the password never appears in err. */
static int password_from_secret(const json_object *rc, const json_object *secret, char **password,
                                kube_error_t *err)
{
    *password = NULL;
    const char *ns = meta_str(rc, "namespace");
    const char *sname = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "name");
    const char *key = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "key");
    if (!sname || !*sname)
        return 0;
    if (!key || !*key)
        key = RENDER_AUTH_DEFAULT_KEY;
    const char *b64 = JSONX_STR_AT(secret, "data", key);
    if (!secret)
        kube_error_set(err, KERR_NOT_FOUND, "Secret %s/%s (spec.auth.secretRef) not found", ns, sname);
    else if (!b64)
        kube_error_set(err, KERR_CONFIG, "Secret %s/%s has no key \"%s\" (spec.auth.secretRef.key)", ns, sname, key);
    else if (!(*password = b64_text(b64)))
        kube_error_set(err, KERR_CONFIG, "Secret %s/%s key \"%s\": not base64 text", ns, sname, key);
    else
        return 0;
    return -1;
}

int reconcile_read_password(kube_client_t *client, const json_object *rc, char **password, kube_error_t *err)
{
    *password = NULL;
    const char *sname = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "name");
    if (!sname || !*sname)
        return 0;
    buf_t path;
    buf_init(&path, 4096);
    json_object *secret = NULL;
    int rc_ = -1;
    if (kube_path(&path, "", "v1", meta_str(rc, "namespace"), "secrets", sname, NULL))
        kube_error_set(err, KERR_CONFIG, "Secret %s: cannot build the request path", sname);
    else if (kube_client_get(client, buf_str(&path), NULL, &secret, err) && !kube_error_is_not_found(err))
        ;
    else
        rc_ = password_from_secret(rc, secret, password, err);
    buf_free(&path);
    json_object_put(secret);
    return rc_;
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

/* STORAGE CLASS (plan.h): whether the class the plan would create claims of is absent
 * (404). A class found is kept per worker process for SC_CACHE_TTL_NS (a class rarely
 * goes; each new cluster would otherwise read it again). A class missing is not kept: it
 * is read again by every reconcile of a cluster that names it, so that once it is
 * created no worker goes on saying StorageClassNotFound from its own older answer while
 * another says what comes next (the keys go to whichever worker is free: two answers
 * flipped the status at every reconcile, test_status's resync that must write nothing).
 * A failed read is not kept (the StatefulSet is then created as before, and a diagnosis
 * explains pending claims). */
#define SC_CACHE_SLOTS 8
#define SC_CACHE_TTL_NS (INT64_C(30) * NS_PER_SEC)
static readmemo_t *sc_cache; /* class name -> true, or "found nothing" (404) */

/* 1 with *missing when the answer for cls is kept, else 0. */
static int sc_cache_find(const char *cls, int *missing)
{
    json_object *kept = NULL;
    if (!sc_cache || !readmemo_get(sc_cache, cls, clock_mono_ns(), &kept))
        return 0;
    *missing = kept == NULL;
    json_object_put(kept);
    return 1;
}

static void sc_cache_keep(const char *cls, int missing)
{
    if (!sc_cache)
        sc_cache = readmemo_new(SC_CACHE_SLOTS, SC_CACHE_TTL_NS); /* NULL: every cluster reads */
    if (missing)
        return; /* read again next time (above) */
    json_object *found = json_object_new_boolean(1);
    if (sc_cache && found)
        readmemo_put(sc_cache, cls, found, clock_mono_ns());
    json_object_put(found);
}

/* A worker (x->exists set: not --once) keeps a cluster's diagnosis reads DIAG_MEMO_TTL_NS
 * under the StatefulSet's resourceVersion and the RedisCluster's: a cluster that does not
 * move is reconciled again at every pod label, observation and condition change, and each
 * reconcile read the same LISTs anew. A pod created, gone, Ready or not changes the
 * StatefulSet's resourceVersion and reads anew; what changes one pod only (unschedulable,
 * waiting for its image) reaches the status at most the ttl late, as its counts may
 * (docs/status-and-drift.md). The RedisCluster's resourceVersion: each worker has its own
 * memo and a key goes to whichever worker is free, so a memo older than the status
 * another worker wrote from fresher reads would flip the conditions back; every write
 * changes that resourceVersion, so no plan rests on reads older than the status it
 * changes. Kept as text: parsed, a LIST of pods costs ten times its text in json-c
 * objects. */
#define DIAG_MEMO_SLOTS 32
#define DIAG_MEMO_TTL_NS (INT64_C(10) * NS_PER_SEC)
static readmemo_t *diag_memo;

/* The memo key of rc's diagnosis with StatefulSet sts into key: with need (the pods came
 * from the cache), what was read is part of it; 0, or -1 without one. */
static int diag_memo_key(const json_object *rc, const json_object *sts, const plan_diag_reads_t *need, char *key,
                         size_t size)
{
    const char *rv = sts ? meta_str(sts, "resourceVersion") : "", *own = meta_str(rc, "resourceVersion");
    int n = *rv && *own ? snprintf(key, size, "%s/%s@%s@%s@%s@%s", meta_str(rc, "namespace"), meta_str(rc, "name"), rv,
                                   own, !need ? "pods" : need->sts_events ? "events" : "-",
                                   need && need->pod ? need->pod : "")
                        : -1;
    if (n < 0 || (size_t)n >= size) {
        *key = '\0';
        return -1;
    }
    return 0;
}

/* The three diagnosis answers kept under key into diag[] (new references); 1, or 0. */
static int diag_memo_get(const char *key, json_object *diag[3])
{
    json_object *kept = NULL;
    if (!diag_memo || !readmemo_get(diag_memo, key, clock_mono_ns(), &kept) ||
        !json_object_is_type(kept, json_type_string)) {
        json_object_put(kept);
        return 0;
    }
    json_object *was = json_tokener_parse(json_object_get_string(kept));
    json_object_put(kept);
    int ok = was && json_object_is_type(was, json_type_array) && json_object_array_length(was) == 3;
    for (int i = 0; ok && i < 3; i++)
        diag[i] = json_object_get(json_object_array_get_idx(was, (size_t)i));
    json_object_put(was);
    return ok;
}

/* Keep diag[] (borrowed) under key, as text. */
static void diag_memo_put(const char *key, json_object *const diag[3])
{
    if (!diag_memo)
        diag_memo = readmemo_new(DIAG_MEMO_SLOTS, DIAG_MEMO_TTL_NS); /* NULL: every diagnosis reads */
    json_object *all = diag_memo ? json_object_new_array() : NULL, *text = NULL;
    for (int i = 0; all && i < 3; i++)
        json_object_array_add(all, json_object_get(diag[i]));
    if (all && (text = json_object_new_string(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PLAIN))))
        readmemo_put(diag_memo, key, text, clock_mono_ns());
    json_object_put(text);
    json_object_put(all);
}

void reconcile_forget_storage_classes(void)
{
    readmemo_clear(sc_cache);
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

/* ---- the reconcile as a job on the loop (reconcile_sm.h) -------------------------------- */

/* What each read of the job is (reads_req_t req[k] answers what[k]). */
enum {
    W_CHILD = 0,                  /* W_CHILD + i: child i by name */
    W_SECRET = W_CHILD + N_CHILDREN, /* the Secret of spec.auth.secretRef */
    W_RECORD,                     /* the password record <name>-redis-auth */
    W_STORAGE_CLASS,
    W_PODS,
    W_STS_EVENTS,
    W_POD_EVENTS,
    W_CLAIMS,                     /* VOLUME EXPANSION: the claims of the pods' selector */
    W_RESTORE_BACKUP,             /* the RedisBackup spec.restore.from names (plan_restore.h) */
    W_FRESH_RC,                   /* the RedisCluster again, for a refused write's status */
    W_SET                         /* W_SET + i: secretset_name(j->secrets, i) (spec.tls, spec.acl) */
};

static reconcile_trace_fn *trace_fn;
static void *trace_arg;

void reconcile_set_trace(reconcile_trace_fn *fn, void *arg)
{
    trace_fn = fn;
    trace_arg = arg;
}

struct reconcile_job {
    reconcile_state_t state;    /* changed by job_event only */
    exec_async_t *a;
    exec_ctx_t xr;              /* the caller's context with the Redis passwords */
    const json_object *rc;      /* the caller's, or rc_own */
    json_object *rc_own;        /* REPLAN: the RedisCluster as the first run left it */
    json_object *rc_after;      /* the RedisCluster as the API answered its last write */
    const json_object *child[N_CHILDREN];
    json_object *after[N_CHILDREN]; /* each child as the API answered this job's write of it */
    json_object *fetched[N_CHILDREN], *diag[3];
    json_object *claims;        /* VOLUME EXPANSION: the claims read (plan_wants_claims) */
    json_object *restore_backup; /* the RedisBackup read (plan_restore_backup_to_read) */
    char restore_error[512];    /* ... or why it could not be read */
    plan_t *plan;
    plan_observed_t more;       /* what the plan is computed from besides the children */
    int plans;                  /* plan computations so far (reconcile_outcome_t) */
    int new_input;              /* READ_MORE brought what the plan has not seen */
    char *password, *applied;
    char sc_name[254];          /* the StorageClass being read */
    int64_t start;
    FILE *dry_run;
    int64_t diag_wait_ns;       /* the diagnosis was put off this long (requeue then) */
    char diag_key[700];         /* the diagnosis memo's key ("" = not kept) */
    int diag_kept;              /* diag[] came from the memo */
    int diag_cached;            /* the pods are the cache's (seen.members), not diag[0] */
    int diag_failed;            /* a diagnosis read failed: nothing is kept */
    plan_observed_t seen;       /* the caller's (what it points to is borrowed) */
    int has_seen;
    /* in flight: reads, a run, the deadline, the delivery */
    reads_t *reads;
    reads_req_t *req;           /* cap of them (grown by job_slot) */
    int *what;
    size_t nreq, cap;
    rdc_spec_t spec;            /* the spec, parsed for the Secrets to read (secretset.h) */
    secretset_t *secrets;       /* spec.tls's and spec.acl's Secrets: NULL when none */
    exec_run_t *run;
    int finish_timer;
    int deadline_timer;
    int64_t deadline_ns;        /* monotonic; the deadline timer's */
    /* after a create met 409 AlreadyExists (REPLAN): the first plan, kept in case the
     * second cannot be made */
    int replans;
    plan_t *first;
    char *first_password, *first_applied;
    /* the run's result, then the tails' (take back, a refused write's status) */
    exec_result_t r;
    size_t failed;
    kube_error_t err;
    int recreate;               /* the take-back step: 0 replace, 1 recreate */
    plan_t *tail;               /* the take-back's or the failure report's plan */
    json_object *fresh;         /* the RedisCluster read again for the report */
    reconcile_outcome_t out;
    char absent_name[N_CHILDREN][300]; /* the names the children are read by */
    reconcile_done_fn *done;
    void *arg;
};

static void job_event(reconcile_job_t *j, reconcile_event_t ev);

/* ---- reads (READ, READ_MORE, READ_FRESH) ---- */

/* Put every answer still held in j->req (what was taken was set to NULL) and forget the
 * reads. */
static void job_reads_clear(reconcile_job_t *j)
{
    for (size_t k = 0; k < j->nreq; k++) {
        json_object_put(j->req[k].obj);
        j->req[k].obj = NULL;
    }
    j->nreq = 0;
}

/* The next free read of j->req (grown as needed, READS_MAX at most), or NULL when out of
 * memory or full. */
static reads_req_t *job_slot(reconcile_job_t *j)
{
    if (j->nreq < j->cap)
        return &j->req[j->nreq];
    size_t cap = j->cap ? 2 * j->cap : 8;
    if (cap > READS_MAX || j->reads) /* (never while a set reads them) */
        return NULL;
    reads_req_t *req = realloc(j->req, cap * sizeof(*req));
    if (req)
        j->req = req;
    int *what = req ? realloc(j->what, cap * sizeof(*what)) : NULL;
    if (what)
        j->what = what;
    if (!req || !what)
        return NULL;
    j->cap = cap;
    return &j->req[j->nreq];
}

/* Add a GET to j->req; 0, or -1 with err when its path cannot be made. */
static int job_add_get(reconcile_job_t *j, int what, const char *group, const char *version, const char *resource,
                       const char *ns, const char *name, kube_error_t *err)
{
    reads_req_t *q = job_slot(j);
    if (!q) {
        kube_error_set(err, KERR_CONFIG, "%s %s/%s: out of memory", resource, ns ? ns : "", name ? name : "");
        return -1;
    }
    if (reads_get(q, group, version, ns, resource, name)) {
        *err = q->err;
        return -1;
    }
    j->what[j->nreq++] = what;
    return 0;
}

static void job_add_list(reconcile_job_t *j, int what, const char *resource, const char *label_selector,
                         const char *field_selector)
{
    reads_req_t *q = job_slot(j);
    if (q && reads_list(q, meta_str(j->rc, "namespace"), resource, label_selector, field_selector) == 0)
        j->what[j->nreq++] = what;
}

static void on_reads(void *arg);

/* Start reading j->req[0..j->nreq) (their what[] set); on_reads hears when every one has
 * ended. Nothing to read: on_reads at once (the next step, in this turn). Returns 0, or
 * -1 when out of memory (nothing started, the answers put). */
static int job_read(reconcile_job_t *j)
{
    if (!j->nreq) {
        on_reads(j);
        return 0;
    }
    j->reads = reads_start(exec_async_curl(j->a), j->xr.client, j->req, j->nreq, on_reads, j);
    if (!j->reads)
        job_reads_clear(j);
    return j->reads ? 0 : -1;
}

/* AUTH (plan.h): the Secret's password into j->password and the recorded one into
 * j->applied from the reads k_secret and k_record (-1: not read), and what they say. A
 * Secret that cannot be read is logged: PLAN_AUTH_UNKNOWN (no auth action; Redis
 * commands then go without a password and fail, saying why). */
static plan_auth_t job_auth(reconcile_job_t *j, int k_secret, int k_record)
{
    const exec_ctx_t *x = &j->xr;
    char line[1024];
    if (k_secret < 0 || k_record < 0)
        return PLAN_AUTH_UNKNOWN;
    kube_error_t err = j->req[k_secret].err;
    if (err.code == KERR_OK)
        password_from_secret(j->rc, j->req[k_secret].obj, &j->password, &err);
    if (err.code != KERR_OK) {
        rlog_warn("cannot read the cluster's password", "reconcileID", x->reconcile_id, "error",
                  kube_error_str(&err, line, sizeof(line)));
        return PLAN_AUTH_UNKNOWN;
    }
    if (j->req[k_record].err.code != KERR_OK) {
        char rec[300];
        snprintf(rec, sizeof(rec), "%s" RENDER_AUTH_RECORD_SUFFIX, meta_str(j->rc, "name"));
        rlog_warn("cannot read the password record", "reconcileID", x->reconcile_id, "secret", rec, "error",
                  kube_error_str(&j->req[k_record].err, line, sizeof(line)));
        return PLAN_AUTH_UNKNOWN;
    }
    const char *b64 = JSONX_STR_AT(j->req[k_record].obj, "data", RENDER_AUTH_DEFAULT_KEY);
    j->applied = b64 ? b64_text(b64) : NULL;
    if (!j->applied)
        return PLAN_AUTH_UNRECORDED;
    return strcmp(j->applied, j->password) ? PLAN_AUTH_ROTATE : PLAN_AUTH_CURRENT;
}

/* spec.tls's and spec.acl's Secrets (secretset.h), read with the first reads; a spec
 * that does not parse reads none (the plan reports it). */
static void job_add_secrets(reconcile_job_t *j, const char *ns)
{
    rdc_field_errors_t *errs = rdc_field_errors_new();
    secretset_destroy(&j->secrets);
    int ok = errs && !rdc_spec_parse(j->rc, &j->spec, errs);
    rdc_field_errors_destroy(&errs);
    if (!ok || (!j->spec.tls.secret && !j->spec.acl.n_users))
        return;
    j->xr.redis_refused = j->spec.tls.secret ? "spec.tls: its Secret was not read" : NULL;
    if (!j->xr.client || !(j->secrets = secretset_new(&j->spec, ns, meta_str(j->rc, "name"), meta_str(j->rc, "uid"))))
        return;
    kube_error_t err;
    for (size_t i = 0; secretset_name(j->secrets, i); i++)
        if (job_add_get(j, W_SET + (int)i, "", "v1", "secrets", ns, secretset_name(j->secrets, i), &err))
            rlog_warn("cannot read a Secret of spec.tls or spec.acl", "reconcileID", j->xr.reconcile_id, "error",
                      err.message);
}

/* READ's answers of secretset's reads, then what they say with the password: for the
 * plan (TLS, ACL) and the executor (TLS settings, the users' hashes). */
static void job_take_secrets(reconcile_job_t *j)
{
    if (!j->secrets)
        return;
    for (size_t k = 0; k < j->nreq; k++)
        if (j->what[k] >= W_SET)
            secretset_take(j->secrets, secretset_name(j->secrets, (size_t)(j->what[k] - W_SET)), j->req[k].obj,
                           &j->req[k].err);
    if (secretset_finish(j->secrets, j->password, clock_wall_ns() / NS_PER_SEC))
        rlog_warn("cannot make the TLS settings or the ACL users (out of memory)", "reconcileID", j->xr.reconcile_id);
    j->more.tls = secretset_tls(j->secrets);
    j->more.acl = secretset_acl(j->secrets);
    j->xr.redis_tls = secretset_client_tls(j->secrets);
    j->xr.redis_tls_domain = secretset_domain(j->secrets);
    j->xr.redis_secrets = secretset_tokens(j->secrets, &j->xr.redis_n_secrets);
    j->xr.redis_refused = secretset_refused(j->secrets);
}

/* READ's answers: the children into j->child (and the memo), the auth into j->more.
 * Returns the event: READ_FAILED (j->err set) when a child could not be read. */
static reconcile_event_t job_take_first(reconcile_job_t *j)
{
    const exec_ctx_t *x = &j->xr;
    const char *ns = meta_str(j->rc, "namespace");
    int k_secret = -1, k_record = -1;
    for (size_t k = 0; k < j->nreq; k++) {
        int w = j->what[k];
        k_secret = w == W_SECRET ? (int)k : k_secret;
        k_record = w == W_RECORD ? (int)k : k_record;
        if (w < W_CHILD + N_CHILDREN && j->req[k].err.code != KERR_OK) {
            j->err = j->req[k].err;
            job_reads_clear(j);
            return REV_READ_FAILED;
        }
    }
    for (size_t k = 0; k < j->nreq; k++) {
        int i = j->what[k] - W_CHILD;
        if (i < 0 || i >= N_CHILDREN)
            continue;
        json_object_put(j->fetched[i]);
        j->fetched[i] = j->req[k].obj;
        j->req[k].obj = NULL;
        j->child[i] = j->fetched[i];
        /* what the reads found, into the memo (see must_read_absent) */
        if (x->exists && j->fetched[i])
            existsmemo_add(x->exists, child_resource[i], ns, j->absent_name[i]);
        else if (x->exists)
            existsmemo_drop(x->exists, child_resource[i], ns, j->absent_name[i]);
    }
    j->more.auth = job_auth(j, k_secret, k_record);
    job_take_secrets(j);
    job_reads_clear(j);
    return REV_READ_OK;
}

/* The answer of read k, taken (the caller puts it), or NULL after a warning what says. */
static json_object *job_take(reconcile_job_t *j, size_t k, const char *what)
{
    if (j->req[k].err.code != KERR_OK) {
        char line[1024];
        rlog_warn(what, "reconcileID", j->xr.reconcile_id, "error", kube_error_str(&j->req[k].err, line, sizeof(line)));
        return NULL;
    }
    json_object *o = j->req[k].obj;
    j->req[k].obj = NULL;
    return o;
}

/* RESTORE FROM A REDISBACKUP: read k's answer, the RedisBackup (NULL: absent) or why it
 * could not be read, into j->more; the plan is made again with it either way. */
static void job_take_restore_backup(reconcile_job_t *j, size_t k)
{
    json_object_put(j->restore_backup);
    j->restore_backup = job_take(j, k, "cannot read the RedisBackup to restore from");
    if (j->req[k].err.code != KERR_OK)
        kube_error_str(&j->req[k].err, j->restore_error, sizeof(j->restore_error));
    j->more.restore_backup = j->restore_backup;
    j->more.restore_backup_error = j->req[k].err.code != KERR_OK ? j->restore_error : NULL;
    j->more.restore_backup_read = 1;
    j->new_input = 1;
}

/* READ_MORE's answers into j->more and j->diag (each optional: a failed one is logged and
 * counted absent). Returns EXPLAIN when the pods read name a pod whose Events are still to
 * read, else READ_OK. */
static reconcile_event_t job_take_more(reconcile_job_t *j)
{
    static const char *const why[] = {"cannot read the pods to explain the status",
                                      "cannot read the StatefulSet's Events", "cannot read the pod's Events"};
    int explained = 0;
    for (size_t k = 0; k < j->nreq; k++) {
        int w = j->what[k];
        if (w == W_STORAGE_CLASS && j->req[k].err.code != KERR_OK) {
            char line[1024];
            rlog_warn("cannot read the StorageClass", "reconcileID", j->xr.reconcile_id, "storageClass", j->sc_name,
                      "error", kube_error_str(&j->req[k].err, line, sizeof(line)));
        } else if (w == W_STORAGE_CLASS) {
            j->more.storage_class_missing = j->req[k].obj == NULL;
            j->new_input |= j->more.storage_class_missing;
            sc_cache_keep(j->sc_name, j->more.storage_class_missing);
        } else if (w >= W_PODS && w <= W_POD_EVENTS) {
            int d = w - W_PODS;
            j->diag_failed |= j->req[k].err.code != KERR_OK;
            json_object_put(j->diag[d]);
            j->diag[d] = job_take(j, k, why[d]);
            explained |= w == W_POD_EVENTS;
        } else if (w == W_CLAIMS) {
            json_object_put(j->claims);
            j->claims = job_take(j, k, "cannot read the PersistentVolumeClaims");
            j->new_input |= j->claims != NULL;
        } else if (w == W_RESTORE_BACKUP) {
            job_take_restore_backup(j, k);
        }
    }
    job_reads_clear(j);
    const char *pod = !explained && j->diag[0] && !j->diag_kept ? plan_pod_to_explain(j->diag[0]) : NULL;
    if (pod) {
        char fs[600];
        snprintf(fs, sizeof(fs), "involvedObject.kind=Pod,involvedObject.name=%s", pod);
        job_add_list(j, W_POD_EVENTS, "events", NULL, fs);
        if (j->nreq)
            return REV_EXPLAIN;
    }
    if (*j->diag_key && !j->diag_kept && !j->diag_failed && (j->diag_cached || (j->diag[0] && j->diag[1])))
        diag_memo_put(j->diag_key, j->diag);
    j->new_input |= j->diag[0] || j->diag[1] || j->diag[2] || (j->diag_cached && j->seen.members);
    return REV_READ_OK;
}

/* READ_FRESH's answer into j->fresh: the RedisCluster as the API has it, or the cached one
 * when it cannot be read; NULL when it is gone (nothing to report on). */
static void job_take_fresh(reconcile_job_t *j)
{
    char line[1024];
    if (j->nreq && j->req[0].err.code != KERR_OK) {
        rlog_warn("cannot read the RedisCluster again; comparing with the cached one", "reconcileID",
                  j->xr.reconcile_id, "error", kube_error_str(&j->req[0].err, line, sizeof(line)));
        j->fresh = json_object_get((json_object *)j->rc);
    } else if (j->nreq) {
        j->fresh = j->req[0].obj;
        j->req[0].obj = NULL;
    }
    job_reads_clear(j);
}

/* A set of reads ended: the event its state makes of the answers. */
static void on_reads(void *arg)
{
    reconcile_job_t *j = arg;
    j->reads = NULL;
    reconcile_event_t ev = REV_READ_OK;
    if (j->state == RS_READ)
        ev = job_take_first(j);
    else if (j->state == RS_READ_MORE)
        ev = job_take_more(j);
    else if (j->state == RS_READ_FRESH)
        job_take_fresh(j);
    job_event(j, ev);
}

/* ---- runs (RUN, TAKE_BACK, REPORT) ---- */

/* The run's result as the event of a run: a create that met 409 AlreadyExists (once, with
 * a memo to keep the name: REPLAN), a refused apply (TAKE_BACK), a write the API refused
 * (RUN_REPORT), or RUN_FAILED. */
static reconcile_event_t run_event(reconcile_job_t *j, const plan_t *plan, exec_result_t r, size_t failed,
                                   const kube_error_t *err)
{
    const exec_ctx_t *x = &j->xr;
    const plan_action_t *fa = r == EXEC_OK ? NULL : plan_action(plan, failed);
    if (r == EXEC_OK)
        return REV_RUN_OK;
    if (j->state == RS_RUN && r == EXEC_CONFLICT && fa && fa->kind == PLAN_CREATE && x->exists &&
        kube_error_is_already_exists(err)) {
        if (!j->replans)
            return REV_RUN_EXISTS;
        /* another appeared meanwhile: read next time */
        existsmemo_add(x->exists, fa->resource, fa->ns ? fa->ns : meta_str(j->rc, "namespace"), fa->name);
    }
    int refused = r == EXEC_ERROR && err->http_status == 422 && fa;
    if (refused && (j->state == RS_RUN ? fa->kind == PLAN_APPLY : !j->recreate))
        return REV_RUN_REFUSED;
    if (r == EXEC_ERROR && refused_by_api(err) && x->client)
        return REV_RUN_REPORT;
    return REV_RUN_FAILED;
}

static void on_run_done(exec_result_t r, size_t failed, const kube_error_t *err, void *arg)
{
    reconcile_job_t *j = arg;
    j->run = NULL;
    if (j->state == RS_REPORT) {
        char line[1024];
        if (r != EXEC_OK)
            rlog_warn("cannot report the failed write in the status", "reconcileID", j->xr.reconcile_id, "error",
                      kube_error_str(err, line, sizeof(line)));
        plan_destroy(&j->tail);
        job_event(j, REV_REPORTED);
        return;
    }
    const plan_t *plan = j->state == RS_TAKE_BACK ? j->tail : j->plan;
    reconcile_event_t ev = run_event(j, plan, r, failed, err);
    if (j->state == RS_TAKE_BACK) {
        const plan_action_t *a = plan_action(j->tail, failed);
        char line[1024];
        if (r == EXEC_OK)
            rlog_info(j->recreate ? "recreated a child the API refused to update" : "took back a refused child",
                      "reconcileID", j->xr.reconcile_id, "path", a->path, "why", a->why);
        else
            rlog_warn("cannot take the child back", "reconcileID", j->xr.reconcile_id, "action",
                      plan_action_kind_name(a->kind), "error", kube_error_str(err, line, sizeof(line)));
        plan_destroy(&j->tail);
        if (ev == REV_RUN_OK)
            ev = REV_TAKEN_BACK;
        /* the take-back's failure stands for the run's, but the failed action stays the
         * plan's (the report names it) */
        failed = j->failed;
    }
    j->r = r;
    j->failed = failed;
    if (err && r != EXEC_OK)
        j->err = *err;
    job_event(j, ev);
}

/* Start running plan (j->plan or j->tail) for rc. Returns 0, or -1 when out of memory. */
static int job_run(reconcile_job_t *j, const json_object *rc, const plan_t *plan)
{
    j->run = exec_run_start(j->a, &j->xr, rc, plan, on_run_done, j);
    return j->run ? 0 : -1;
}

/* ---- the actions ---- */

/* RA_READ_FIRST: the reads a plan needs first: the children the cache lacks (when the
 * memo says so) and, with spec.auth, the Secret and the password record, all at once. */
static void act_read_first(reconcile_job_t *j)
{
    const exec_ctx_t *x = &j->xr;
    const json_object *rc = j->rc;
    json_object *md = NULL;
    const char *ns = meta_str(rc, "namespace"), *name = meta_str(rc, "name");
    kube_error_t err;
    kube_error_clear(&err);
    j->nreq = 0;
    /* Deletion looks at no child, and an object that cannot be addressed is the plan's
     * to report. */
    int children = x->client && *ns && *name && json_object_object_get_ex(rc, "metadata", &md) &&
                   !json_object_object_get_ex(md, "deletionTimestamp", NULL);
    const char *mode = JSONX_STR_AT(rc, "spec", "mode");
    int replication = mode && !strcmp(mode, "Replication");
    char (*names)[300] = j->absent_name;
    int absent[N_CHILDREN], n = 0;
    for (int i = 0; children && i < N_CHILDREN; i++) {
        if (j->child[i] || (i >= ROLE_CHILD && !replication))
            continue;
        child_name(name, i, names[i], sizeof(names[i]));
        absent[n++] = i;
    }
    /* (asked even when none is absent: the children the cache holds leave the memo) */
    int must = children && must_read_absent(x, ns, j->child, names, absent, n);
    for (int k = 0; must && k < n; k++)
        if (job_add_get(j, W_CHILD + absent[k], child_group[absent[k]], "v1", child_resource[absent[k]], ns,
                        names[absent[k]], &err)) {
            job_reads_clear(j);
            j->err = err;
            job_event(j, REV_READ_FAILED);
            return;
        }
    const char *sname = JSONX_STR_AT(rc, "spec", "auth", "secretRef", "name");
    char rec[300];
    snprintf(rec, sizeof(rec), "%s" RENDER_AUTH_RECORD_SUFFIX, name);
    size_t before = j->nreq;
    if (x->client && sname && *sname &&
        (job_add_get(j, W_SECRET, "", "v1", "secrets", ns, sname, &err) ||
         job_add_get(j, W_RECORD, "", "v1", "secrets", ns, rec, &err))) {
        j->nreq = before;
        rlog_warn("cannot read the cluster's password", "reconcileID", x->reconcile_id, "error", err.message);
    }
    if (children)
        job_add_secrets(j, ns);
    if (job_read(j)) {
        kube_error_set(&j->err, KERR_CONFIG, "out of memory");
        job_event(j, REV_READ_FAILED);
    }
}

/* The diagnosis reads (reconcile.h, step 2). With the pods of informerd's cache (a
 * worker's work item: seen.members), only the Events plan_diagnosis_reads names, at once;
 * without (workerd --once, a caller without them), the pods and the StatefulSet's
 * Events, then the Events of the pod to explain (EXPLAIN). A worker keeps the answers
 * (the memo above). */
static void job_add_diagnosis(reconcile_job_t *j)
{
    const json_object *sts = j->child[2];
    plan_diag_reads_t need = {1, NULL};
    if (j->has_seen && j->seen.members) {
        j->diag_cached = 1;
        plan_diagnosis_reads(sts, j->seen.members, clock_wall_ns(), &need);
        if (!need.sts_events && !need.pod)
            return; /* the pods say all there is to say */
    }
    if (j->xr.exists && !diag_memo_key(j->rc, sts, j->diag_cached ? &need : NULL, j->diag_key, sizeof(j->diag_key)) &&
        diag_memo_get(j->diag_key, j->diag)) {
        j->diag_kept = 1;
        return;
    }
    char fs[600];
    if (!j->diag_cached)
        job_add_list(j, W_PODS, "pods", plan_pod_selector(j->plan), NULL);
    if (need.sts_events) {
        snprintf(fs, sizeof(fs), "involvedObject.kind=StatefulSet,involvedObject.name=%s", meta_str(j->rc, "name"));
        job_add_list(j, W_STS_EVENTS, "events", NULL, fs);
    }
    if (need.pod) {
        snprintf(fs, sizeof(fs), "involvedObject.kind=Pod,involvedObject.name=%s", need.pod);
        job_add_list(j, W_POD_EVENTS, "events", NULL, fs);
    }
}

/* 1 when the plan asks for what it has not been given yet: the StorageClass, the
 * diagnosis; the reads are then in j->req (none when all was known: the memos). */
static int job_wants_more(reconcile_job_t *j)
{
    const exec_ctx_t *x = &j->xr;
    j->nreq = 0;
    if (j->plans > 1 || !x->client || j->dry_run)
        return 0;
    kube_error_t err;
    const char *cls = plan_storage_class_to_check(j->plan);
    int known = 0;
    if (cls && !(known = sc_cache_find(cls, &j->more.storage_class_missing)) &&
        job_add_get(j, W_STORAGE_CLASS, "storage.k8s.io", "v1", "storageclasses", NULL, cls, &err) == 0)
        snprintf(j->sc_name, sizeof(j->sc_name), "%s", cls);
    j->new_input |= known && j->more.storage_class_missing;
    const char *sel = plan_pod_selector(j->plan);
    if (plan_wants_claims(j->plan) && !j->claims && sel && *sel)
        job_add_list(j, W_CLAIMS, "persistentvolumeclaims", sel, NULL);
    const char *rb = plan_restore_backup_to_read(j->plan), *ns = meta_str(j->rc, "namespace");
    if (rb && !j->more.restore_backup_read &&
        job_add_get(j, W_RESTORE_BACKUP, RDC_API_GROUP, RDC_API_VERSION, "redisbackups", ns, rb, &err))
        rlog_warn("cannot read the RedisBackup to restore from", "reconcileID", x->reconcile_id, "error",
                  err.message);
    if (plan_wants_diagnosis(j->plan) && !(j->diag_wait_ns = diagnosis_wait_ns(j->child[2]))) {
        job_add_diagnosis(j);
        j->new_input |= j->diag_kept || (j->diag_cached && j->seen.members);
    }
    return j->nreq > 0 || j->new_input;
}

/* The second plan after a 409 could not be made (a read or the plan failed): back to the
 * first one and its conflict; the next reconcile reads (the name is kept). */
static void job_replan_abandon(reconcile_job_t *j)
{
    plan_destroy(&j->plan);
    wipe(&j->password);
    wipe(&j->applied);
    j->plan = j->first;
    j->password = j->first_password;
    j->applied = j->first_applied;
    j->first = NULL;
    j->first_password = j->first_applied = NULL;
    j->xr.redis_password = j->password;
    j->xr.redis_old_password = j->applied;
    j->r = EXEC_CONFLICT;
}

/* The outcome of a failed run (j->r, j->err, j->failed), logged. */
static void job_failed_outcome(reconcile_job_t *j)
{
    reconcile_outcome_t *out = &j->out;
    exec_result_t r = j->r;
    out->result = r == EXEC_CONFLICT ? RECONCILE_REQUEUE : r == EXEC_FENCED ? RECONCILE_FENCED : RECONCILE_ERROR;
    kube_error_str(&j->err, out->message, sizeof(out->message));
    const plan_action_t *a = j->plan ? plan_action(j->plan, j->failed) : NULL;
    rlog(r == EXEC_CONFLICT || r == EXEC_FENCED ? RLOG_INFO : RLOG_ERROR, "Reconciler error", "controller",
         RECONCILE_CONTROLLER, "namespace", meta_str(j->rc, "namespace"), "name", meta_str(j->rc, "name"),
         "reconcileID", j->xr.reconcile_id, "action", a ? plan_action_kind_name(a->kind) : "", "result",
         exec_result_name(r), "error", out->message);
}

/* The plan's outcome when planning decides it (a dry run, an object that cannot be
 * reconciled, out of memory), else 0: the plan is to run. */
static int job_settled(reconcile_job_t *j)
{
    const char *ns = meta_str(j->rc, "namespace"), *name = meta_str(j->rc, "name");
    if (j->replans && (!j->plan || plan_error(j->plan))) {
        job_replan_abandon(j);
        job_failed_outcome(j);
        return 1;
    }
    if (!j->plan) {
        j->out.result = RECONCILE_ERROR;
        snprintf(j->out.message, sizeof(j->out.message), "out of memory while planning");
        return 1;
    }
    if (plan_error(j->plan)) {
        rlog_error("cannot reconcile this object", "controller", RECONCILE_CONTROLLER, "namespace", ns, "name",
                   name, "reconcileID", j->xr.reconcile_id, "error", plan_error(j->plan));
        j->out.result = RECONCILE_DONE;
        return 1;
    }
    if (j->dry_run) {
        json_object *pj = plan_to_json(j->plan);
        fprintf(j->dry_run, "%s\n",
                json_object_to_json_string_ext(pj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(pj);
        j->out.result = RECONCILE_DONE;
        return 1;
    }
    return 0;
}

/* RA_PLAN: the plan from the children, what observerd saw and the auth, computed when an
 * input changed since the last one (the first time, and after READ_MORE brought
 * something); then whether it asks for more (NEED_MORE), settles the outcome (SETTLED)
 * or is to run (PLANNED). */
static void act_plan(reconcile_job_t *j)
{
    const exec_ctx_t *x = &j->xr;
    if (!j->plan || j->new_input) {
        if (j->has_seen) {
            j->more.members = j->seen.members;
            j->more.redis = j->seen.redis;
            j->more.shard_statefulsets = j->seen.shard_statefulsets;
            j->more.shard_budgets = j->seen.shard_budgets;
            j->more.network_policy = j->seen.network_policy;
            j->more.operator_namespace = j->seen.operator_namespace;
            j->more.operator_image = j->seen.operator_image;
            j->more.backups = j->seen.backups;
            j->more.jobs = j->seen.jobs;
            j->more.backup_pods = j->seen.backup_pods;
        }
        j->more.budget_short = x->client && kube_client_budget_short(x->client);
        j->more.primary_service = j->child[ROLE_CHILD];
        j->more.replicas_service = j->child[ROLE_CHILD + 1];
        j->more.pods = j->diag_cached ? j->seen.members : j->diag[0];
        j->more.sts_events = j->diag[1];
        j->more.pod_events = j->diag[2];
        j->more.claims = j->claims;
        j->xr.redis_password = j->password;
        j->xr.redis_old_password = j->applied;
        plan_children_t observed = {j->child[0], j->child[1], j->child[2], j->child[3]};
        plan_destroy(&j->plan);
        j->plan = plan_compute_children(j->rc, &observed, &j->more, clock_wall_ns());
        j->plans++;
        j->out.plans++;
        j->new_input = 0;
#ifdef RDC_FAULT_INJECTION
        if (j->plan)
            maybe_break_pod_security(j->rc, j->plan);
        maybe_update_before_finalizer(j->rc, j->plan, j->xr.client);
#endif
    }
    if (j->plan && !plan_error(j->plan) && job_wants_more(j)) {
        job_event(j, REV_NEED_MORE);
        return;
    }
    job_event(j, job_settled(j) ? REV_SETTLED : REV_PLANNED);
}

/* RA_READ_MORE: start what job_wants_more put in j->req (nothing: PLAN at once). */
static void act_read_more(reconcile_job_t *j)
{
    if (job_read(j)) /* out of memory: plan without them */
        job_event(j, REV_READ_OK);
}

/* RA_RUN: the plan runs on the loop. */
static void act_run(reconcile_job_t *j)
{
    plan_destroy(&j->first);
    wipe(&j->first_password);
    wipe(&j->first_applied);
    if (job_run(j, j->rc, j->plan)) {
        j->r = EXEC_ERROR;
        j->failed = 0;
        kube_error_set(&j->err, KERR_CONFIG, "out of memory");
        job_event(j, REV_RUN_FAILED);
    }
}

/* REPLAN: the first run added our finalizer (an action before the failed one): the
 * second plan starts from a copy of the RedisCluster that has it, or it would add it
 * again with the resourceVersion it was observed at and meet 409 Conflict (the first
 * run's PATCH changed that version). Nothing happens when the first run did not add it,
 * or when out of memory (the second run then meets the conflict and requeues). */
static void job_rc_with_finalizer(reconcile_job_t *j, size_t failed)
{
    int added = 0;
    for (size_t i = 0; i < failed && i < plan_action_count(j->plan); i++)
        added |= plan_action(j->plan, i)->kind == PLAN_ADD_FINALIZER;
    json_object *copy = NULL, *md = NULL, *list = NULL;
    if (!added || json_object_deep_copy((json_object *)j->rc, &copy, NULL) ||
        !json_object_object_get_ex(copy, "metadata", &md)) {
        json_object_put(copy);
        return;
    }
    if (!json_object_object_get_ex(md, "finalizers", &list) || !json_object_is_type(list, json_type_array)) {
        list = json_object_new_array();
        json_object_object_add(md, "finalizers", list);
    }
    json_object_array_add(list, json_object_new_string(PLAN_FINALIZER));
    json_object_put(j->rc_own);
    j->rc_own = copy;
    j->rc = copy;
}

/* RA_REPLAN: a create met 409 AlreadyExists, an object of that name the cache does not
 * hold. Keep the name (existsmemo.h), read the absent children by name,
 * plan again from them and run that plan (once), so that the reconcile ends as the
 * read-first path ends (a foreign object left alone and reported, one of ours taken back)
 * and no other reconcile, with an older RedisCluster, reports it again. When the reads or
 * the plan fail, the first plan's conflict stands (RA_READ_FAILED, job_settled). */
static void act_replan(reconcile_job_t *j)
{
    const plan_action_t *fa = plan_action(j->plan, j->failed);
    const char *ns = fa->ns ? fa->ns : meta_str(j->rc, "namespace");
    rlog_info("create met an object the cache does not hold: reading the children, planning again",
              "reconcileID", j->xr.reconcile_id, "resource", fa->resource, "namespace", ns, "name", fa->name);
    existsmemo_add(j->xr.exists, fa->resource, ns, fa->name);
    job_rc_with_finalizer(j, j->failed);
    j->replans++;
    j->first = j->plan;
    j->first_password = j->password;
    j->first_applied = j->applied;
    j->plan = NULL;
    j->password = j->applied = NULL;
    for (int i = 0; i < 3; i++) {
        json_object_put(j->diag[i]);
        j->diag[i] = NULL;
    }
    json_object_put(j->claims);
    j->claims = NULL;
    memset(&j->more, 0, sizeof(j->more));
    j->plans = 0;
    j->diag_wait_ns = 0;
    j->diag_kept = j->diag_cached = j->diag_failed = 0;
    j->diag_key[0] = '\0';
    act_read_first(j);
}

/* RA_TAKE_BACK, RA_RECREATE (TAKING A CHILD BACK, plan.h): the apply j->failed was refused
 * with j->err (422); replace the child, and when that is refused too and it is the
 * Service, recreate it. Nothing to take back: the run's failure stands. */
static void act_take_back(reconcile_job_t *j, int recreate)
{
    j->recreate = recreate;
    const plan_action_t *fa = plan_action(j->plan, j->failed);
    j->tail = plan_take_back(j->plan, j->failed, child_written(fa, j->child), j->recreate, j->err.http_status,
                             j->err.reason, j->err.message);
    if (j->tail && plan_action_count(j->tail) && job_run(j, j->rc, j->tail) == 0)
        return;
    if (!j->tail || plan_action_count(j->tail))
        j->r = EXEC_ERROR; /* out of memory */
    plan_destroy(&j->tail);
    job_event(j, j->r == EXEC_ERROR && refused_by_api(&j->err) && j->xr.client ? REV_RUN_REPORT : REV_RUN_FAILED);
}

/* RA_READ_FRESH: the outcome is the run's failure; before the caller backs off, the
 * failure goes into the status (plan_write_failed). The RedisCluster is read afresh
 * first: a retry is often dispatched before the watch has brought the status an earlier
 * attempt wrote (maybe by another worker), and comparing with that stale copy would write
 * and record the same failure again. Failing to report is logged, never more. */
static void act_read_fresh(reconcile_job_t *j)
{
    job_failed_outcome(j);
    kube_error_t err;
    j->nreq = 0;
    if (job_add_get(j, W_FRESH_RC, RDC_API_GROUP, RDC_API_VERSION, "redisclusters", meta_str(j->rc, "namespace"),
                    meta_str(j->rc, "name"), &err) == 0 &&
        job_read(j) == 0)
        return;
    rlog_warn("cannot read the RedisCluster again; comparing with the cached one", "reconcileID", j->xr.reconcile_id);
    j->nreq = 0;
    j->fresh = json_object_get((json_object *)j->rc);
    job_event(j, REV_READ_OK);
}

/* RA_REPORT: the status write that says the failure, from the fresh RedisCluster (gone:
 * nothing to report). */
static void act_report(reconcile_job_t *j)
{
    if (j->fresh)
        j->tail = plan_write_failed(j->fresh, j->plan, j->failed, j->err.http_status, j->err.reason, j->err.message,
                                    clock_wall_ns());
    if (j->fresh && !j->tail)
        rlog_warn("out of memory while reporting a failed write", "reconcileID", j->xr.reconcile_id);
    if (j->tail && plan_action_count(j->tail) && job_run(j, j->fresh, j->tail) == 0)
        return;
    plan_destroy(&j->tail);
    job_event(j, REV_REPORTED);
}

/* The child slot action a of j's plan wrote (a create, apply or replace of one of the
 * children by its kind's resource and name), or -1. */
static int written_slot(const reconcile_job_t *j, const plan_action_t *a)
{
    char name[300];
    for (int i = 0; a->name && a->resource && i < N_CHILDREN; i++) {
        child_name(meta_str(j->rc, "name"), i, name, sizeof(name));
        if ((a->kind == PLAN_CREATE || a->kind == PLAN_APPLY || a->kind == PLAN_REPLACE) &&
            !strcmp(a->resource, child_resource[i]) && !strcmp(a->name, name))
            return i;
    }
    return -1;
}

/* The executor's word (exec_ctx_t child_written): the child action a wrote, as answered. */
static void job_child_written(void *user, const plan_action_t *a, json_object *answer)
{
    reconcile_job_t *j = user;
    int i = written_slot(j, a);
    if (i < 0)
        return;
    json_object_put(j->after[i]);
    j->after[i] = json_object_get(answer);
}

/* The children as j's writes left them into kid[] (each written one as the API answered
 * it, the others as observed), *written the mask of the slots written. Returns 1 when
 * every write of j's plan is one whose result is known so (the finalizer, the status, a
 * child's create, apply or replace answered), 0 otherwise: a run that wrote anything else
 * (a Redis command, a Secret, a pod deleted) is not quiet without its result, nor one
 * that planned again after a 409. */
static int job_left(const reconcile_job_t *j, const json_object *kid[N_CHILDREN], unsigned *written)
{
    memcpy(kid, j->child, sizeof(j->child));
    *written = 0;
    for (size_t i = 0; j->plan && i < plan_action_count(j->plan); i++) {
        const plan_action_t *a = plan_action(j->plan, i);
        int slot = written_slot(j, a);
        if ((a->kind == PLAN_ADD_FINALIZER || a->kind == PLAN_UPDATE_STATUS) && !strcmp(a->resource, "redisclusters")) {
            if (!j->rc_after || !j->out.rc_written_rv[0])
                return 0;
        } else if (slot < 0 || !j->after[slot] || j->replans) {
            return 0;
        } else {
            kid[slot] = j->after[slot];
            *written |= 1u << slot;
        }
    }
    return 1;
}

/* The requeue the reconcile of what j left would ask, planned as again (0: none): its
 * plan's, or sooner when that plan wants a diagnosis j's did not and the StatefulSet is
 * too young to read it (reconcile.h). -1 when that reconcile would read what j did not
 * (the diagnosis now, a StorageClass, the claims, a RedisBackup): it might find more to
 * do, so its echo must queue. */
static int64_t again_requeue_ns(const reconcile_job_t *j, const plan_t *again, const json_object *sts)
{
    int64_t req = plan_requeue_after_ns(again);
    const char *cls = plan_storage_class_to_check(again), *had = plan_storage_class_to_check(j->plan);
    if ((cls && (!had || strcmp(cls, had))) || (plan_wants_claims(again) && !j->claims) ||
        (plan_restore_backup_to_read(again) && !j->more.restore_backup_read))
        return -1;
    if (plan_wants_diagnosis(again) && !plan_wants_diagnosis(j->plan)) {
        int64_t wait = diagnosis_wait_ns(sts);
        if (!wait)
            return -1;
        if (!req || wait < req)
            req = wait;
    }
    return req;
}

/* Quiet: the outcome names the children j wrote (the slots of written), at the versions
 * answered. */
static void name_children_written(reconcile_job_t *j, unsigned written)
{
    reconcile_outcome_t *out = &j->out;
    out->n_child_written = 0;
    for (int i = 0; i < N_CHILDREN && out->n_child_written < RECONCILE_CHILD_WRITES_MAX; i++) {
        if (!(written & (1u << i)))
            continue;
        const char *name = JSONX_STR_AT(j->after[i], "metadata", "name");
        const char *rv = JSONX_STR_AT(j->after[i], "metadata", "resourceVersion");
        if (!name || !rv || strlen(rv) >= EXEC_RV_MAX)
            continue; /* not named: its echo queues */
        out->child_written[out->n_child_written].kind = child_kind[i];
        snprintf(out->child_written[out->n_child_written].name, sizeof(out->child_written[0].name), "%s", name);
        memcpy(out->child_written[out->n_child_written++].rv, rv, strlen(rv) + 1);
    }
}

/* Whether the RedisCluster and its children as this job's writes left them need no
 * reconcile: the plan of those objects (each written one as the API answered the write,
 * the RedisCluster as its last write left it), from the same observations, has nothing
 * to do and reads nothing this job did not. Then the watch's echoes of its writes may
 * queue nothing (DONE says so and names them: informerd/echo.h): each brings exactly the
 * object that plan was made from. So that no reconcile it would have asked for is lost,
 * the outcome then asks to look again no later than that plan would, and tells observerd
 * the hotter of the two hints. A status that records a step for the next plan to take (a
 * handover's new primary, a switchover begun) makes that plan act: not quiet, and the
 * echo queues the key as any change does. */
static int job_quiet_after_write(reconcile_job_t *j, rdc_mode_t mode)
{
    const json_object *kid[N_CHILDREN];
    unsigned written = 0;
    if (!job_left(j, kid, &written) || (!j->out.rc_written_rv[0] && !written))
        return 0;
    plan_observed_t more = j->more;
    more.primary_service = kid[ROLE_CHILD];
    more.replicas_service = kid[ROLE_CHILD + 1];
    plan_children_t observed = {kid[0], kid[1], kid[2], kid[3]};
    plan_t *again = plan_compute_children(j->rc_after ? j->rc_after : j->rc, &observed, &more, clock_wall_ns());
    int64_t req = again && !plan_error(again) && plan_action_count(again) == 0 ? again_requeue_ns(j, again, kid[2])
                                                                               : -1;
    reconcile_outcome_t *out = &j->out;
    if (req > 0 && (!out->requeue_after_ns || req < out->requeue_after_ns))
        out->requeue_after_ns = req;
    hothint_t hint = req >= 0 ? hothint_of(mode, again) : HOTHINT_NONE;
    if (hint > out->hint)
        out->hint = hint;
    plan_destroy(&again);
    if (req >= 0)
        name_children_written(j, written);
    return req >= 0;
}

/* RA_FINISH_OK: the outcome of a plan that ran to its end. */
static void act_finish_ok(reconcile_job_t *j)
{
    reconcile_outcome_t *out = &j->out;
    const char *m = JSONX_STR_AT(j->rc, "spec", "mode");
    rdc_mode_t mode = m && !strcmp(m, "Replication") ? RDC_MODE_REPLICATION : RDC_MODE_STANDALONE;
    out->hint = hothint_of(mode, j->plan);
    out->requeue_after_ns = plan_requeue_after_ns(j->plan);
    /* a diagnosis put off: look again when it is due, whatever else happens */
    if (j->diag_wait_ns > 0 && (!out->requeue_after_ns || j->diag_wait_ns < out->requeue_after_ns))
        out->requeue_after_ns = j->diag_wait_ns;
    out->rc_write_quiet = job_quiet_after_write(j, mode);
    out->result = out->requeue_after_ns > 0 ? RECONCILE_REQUEUE_AFTER : RECONCILE_DONE;
}

/* RA_READ_FAILED: a read of the children failed: RECONCILE_ERROR (or, planning again after
 * a 409, the first plan's conflict). */
static void act_read_failed(reconcile_job_t *j)
{
    if (j->replans) {
        job_replan_abandon(j);
        job_failed_outcome(j);
        return;
    }
    j->out.result = RECONCILE_ERROR;
    kube_error_str(&j->err, j->out.message, sizeof(j->out.message));
    rlog_error("Reconciler error", "controller", RECONCILE_CONTROLLER, "namespace", meta_str(j->rc, "namespace"),
               "name", meta_str(j->rc, "name"), "reconcileID", j->xr.reconcile_id, "action", "get", "error",
               j->out.message);
}

/* RA_EXPIRE: the deadline passed while waiting in state was: what is in flight is dropped
 * (a write may or may not have been made; the next reconcile plans from what is there). */
static void act_expire(reconcile_job_t *j, reconcile_state_t was)
{
    reads_cancel(&j->reads);
    j->nreq = 0;
    exec_run_cancel(&j->run);
    plan_destroy(&j->tail);
    j->out.result = RECONCILE_ERROR;
    snprintf(j->out.message, sizeof(j->out.message), "the reconcile's deadline passed after %.3f s (in state %s)",
             (double)(clock_mono_ns() - j->start) / 1e9, rcsm_state_name(was));
    rlog_error("Reconciler error", "controller", RECONCILE_CONTROLLER, "namespace", meta_str(j->rc, "namespace"),
               "name", meta_str(j->rc, "name"), "reconcileID", j->xr.reconcile_id, "error", j->out.message);
}

/* ---- the end of a job ---- */

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
    reads_cancel(&j->reads);
    exec_run_cancel(&j->run);
    loop_t *loop = exec_async_loop(j->a);
    if (j->finish_timer)
        loop_cancel_timer(loop, j->finish_timer);
    if (j->deadline_timer)
        loop_cancel_timer(loop, j->deadline_timer);
    job_reads_clear(j);
    plan_destroy(&j->plan);
    plan_destroy(&j->first);
    plan_destroy(&j->tail);
    for (int i = 0; i < N_CHILDREN; i++) {
        json_object_put(j->fetched[i]);
        json_object_put(j->after[i]);
    }
    for (int i = 0; i < 3; i++)
        json_object_put(j->diag[i]);
    json_object_put(j->claims);
    json_object_put(j->restore_backup);
    json_object_put(j->fresh);
    json_object_put(j->rc_after);
    json_object_put(j->rc_own);
    wipe(&j->password);
    wipe(&j->applied);
    wipe(&j->first_password);
    wipe(&j->first_applied);
    secretset_destroy(&j->secrets);
    free(j->req);
    free(j->what);
    free(j);
}

/* The finish timer (DELIVER) or the deadline's (DEADLINE) fired. */
static int on_job_timer(loop_t *loop, int id, void *arg)
{
    (void)loop;
    reconcile_job_t *j = arg;
    int finish = id == j->finish_timer;
    if (finish)
        j->finish_timer = 0;
    else
        j->deadline_timer = 0;
    job_event(j, finish ? REV_DELIVER : REV_DEADLINE);
    return 0;
}

/* Entering FINISH: the deadline no longer applies; the outcome goes to the caller on the
 * next turn of the loop (never from inside reconcile_start). */
static void job_finish(reconcile_job_t *j)
{
    loop_t *loop = exec_async_loop(j->a);
    if (j->deadline_timer)
        loop_cancel_timer(loop, j->deadline_timer);
    j->deadline_timer = 0;
    j->finish_timer = loop_add_timer(loop, 0, 0, on_job_timer, j);
    if (j->finish_timer < 0) {
        j->finish_timer = 0;
        job_event(j, REV_DELIVER); /* out of memory: at once rather than never */
    }
}

/* RA_DELIVER: free the job, then tell the caller. */
static void act_deliver(reconcile_job_t *j)
{
    reconcile_done_fn *done = j->done;
    void *darg = j->arg;
    reconcile_outcome_t out = j->out;
    job_free(j, &out);
    done(&out, darg);
}

/* Perform action a of a transition out of state was. */
static void job_act(reconcile_job_t *j, reconcile_action_t a, reconcile_state_t was)
{
    switch (a) {
    case RA_READ_FIRST: act_read_first(j); break;
    case RA_PLAN: act_plan(j); break;
    case RA_READ_MORE: act_read_more(j); break;
    case RA_READ_EXPLAIN: act_read_more(j); break; /* job_take_more put the read in j->req */
    case RA_RUN: act_run(j); break;
    case RA_REPLAN: act_replan(j); break;
    case RA_TAKE_BACK: act_take_back(j, 0); break;
    case RA_RECREATE: act_take_back(j, 1); break;
    case RA_READ_FRESH: act_read_fresh(j); break;
    case RA_REPORT: act_report(j); break;
    case RA_FINISH_OK: act_finish_ok(j); break;
    case RA_FINISH_FAILED: job_failed_outcome(j); break;
    case RA_FINISH_TAKEN_BACK:
        /* The rest of the plan is the next reconcile's, with the child as it is now. */
        j->out.result = RECONCILE_REQUEUE_AFTER;
        j->out.requeue_after_ns = RECONCILE_TAKE_BACK_REQUEUE_NS;
        break;
    case RA_READ_FAILED: act_read_failed(j); break;
    case RA_EXPIRE: act_expire(j, was); break;
    case RA_DELIVER: act_deliver(j); return;
    case RA_FREE: {
        reconcile_outcome_t out = {.result = RECONCILE_FENCED};
        job_free(j, &out);
        return;
    }
    case RA_NONE:
    case RA_IGNORE: break;
    }
}

/* The one function that changes a job's state: the transition of ev (reconcile_sm.h),
 * logged at debug and traced, then its action. An event the state does not expect is a
 * bug: logged, the state kept. Entering FINISH schedules the delivery. Nothing touches j
 * after the action (it may have ended the job). */
static void job_event(reconcile_job_t *j, reconcile_event_t ev)
{
    reconcile_state_t was = j->state;
    reconcile_transition_t t = rcsm_step(was, ev);
    if (trace_fn)
        trace_fn(j->xr.reconcile_id, was, ev, t, trace_arg);
    if (t.action == RA_IGNORE) {
        rlog_error("reconcile: an event its state does not expect (a bug); ignored", "reconcileID",
                   j->xr.reconcile_id, "state", rcsm_state_name(was), "event", rcsm_event_name(ev));
        return;
    }
    if (rlog_enabled(RLOG_DEBUG))
        rlog_debug("reconcile step", "controller", RECONCILE_CONTROLLER, "namespace", meta_str(j->rc, "namespace"),
                   "name", meta_str(j->rc, "name"), "reconcileID", j->xr.reconcile_id, "from", rcsm_state_name(was),
                   "event", rcsm_event_name(ev), "to", rcsm_state_name(t.next), "action", rcsm_action_name(t.action));
    j->state = t.next;
    job_act(j, t.action, was);
    if (t.next == RS_FINISH) /* the action set the outcome (and never ends the job) */
        job_finish(j);
    /* else j may be gone here */
}

reconcile_job_t *reconcile_start(exec_async_t *a, const exec_ctx_t *x, const json_object *rc,
                                 const plan_children_t *kids, const plan_observed_t *seen, FILE *dry_run,
                                 reconcile_done_fn *done, void *arg)
{
#ifdef RDC_FAULT_INJECTION
    maybe_crash(rc);
#endif
    reconcile_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->state = RS_IDLE;
    j->a = a;
    j->start = clock_mono_ns();
    j->rc = rc;
    j->xr = *x;
    j->xr.rc_written_rv = j->out.rc_written_rv; /* the outcome says it (reconcile_outcome_t) */
    j->xr.rc_earlier_rv = j->out.rc_earlier_rv;
    j->xr.rc_written_obj = &j->rc_after;
    j->xr.child_written = job_child_written;
    j->xr.child_written_user = j;
    j->dry_run = dry_run;
    j->done = done;
    j->arg = arg;
    if (seen) {
        j->seen = *seen;
        j->has_seen = 1;
    }
    j->child[0] = kids->configmap;
    j->child[1] = kids->service;
    j->child[2] = kids->statefulset;
    j->child[3] = kids->pdb;
    j->child[4] = seen ? seen->primary_service : NULL;
    j->child[5] = seen ? seen->replicas_service : NULL;
    reconcile_set_deadline(j, j->start + RECONCILE_DEADLINE_NS);
    metric_family_t *active = metrics_gauge(metrics_default(), "controller_runtime_active_workers",
                                            "Number of currently used workers per controller", "controller");
    metric_gauge_add(active, METRIC_LABELS(RECONCILE_CONTROLLER), 1);
    job_event(j, REV_START);
    return j;
}

void reconcile_set_deadline(reconcile_job_t *j, int64_t deadline_mono_ns)
{
    if (!j || !rcsm_waiting(j->state == RS_IDLE ? RS_READ : j->state))
        return;
    loop_t *loop = exec_async_loop(j->a);
    if (j->deadline_timer)
        loop_cancel_timer(loop, j->deadline_timer);
    j->deadline_ns = deadline_mono_ns;
    int64_t wait = deadline_mono_ns - clock_mono_ns();
    j->deadline_timer = loop_add_timer(loop, wait > 0 ? wait : 0, 0, on_job_timer, j);
    if (j->deadline_timer < 0)
        j->deadline_timer = 0; /* out of memory: the requests' own timeouts still bound it */
}

reconcile_state_t reconcile_state(const reconcile_job_t *j)
{
    return j ? j->state : RS_DONE;
}

void reconcile_cancel(reconcile_job_t **job_p)
{
    if (!job_p || !*job_p)
        return;
    reconcile_job_t *j = *job_p;
    *job_p = NULL;
    job_event(j, REV_CANCEL);
}

/* ---- to its end, for synchronous callers ------------------------------------------------- */

typedef struct {
    int finished;
    reconcile_outcome_t out;
} sync_wait_t;

static void keep_outcome(const reconcile_outcome_t *out, void *arg)
{
    sync_wait_t *w = arg;
    w->out = *out;
    w->finished = 1;
}

void reconcile_run_children(const exec_ctx_t *x, const json_object *rc, const plan_children_t *kids,
                            const plan_observed_t *seen, FILE *dry_run, reconcile_outcome_t *out)
{
    memset(out, 0, sizeof(*out));
    exec_local_t l;
    sync_wait_t w = {0};
    reconcile_job_t *j = NULL;
    if (exec_local_open(&l, x) == 0 && (j = reconcile_start(l.a, &l.x, rc, kids, seen, dry_run, keep_outcome, &w)))
        exec_local_wait(&l, &w.finished);
    if (!w.finished) { /* out of memory, or the loop failed */
        reconcile_cancel(&j);
        w.out.result = RECONCILE_ERROR;
        snprintf(w.out.message, sizeof(w.out.message), "out of memory or the event loop failed");
    }
    if (l.loop)
        exec_local_close(&l);
    *out = w.out;
}

void reconcile_run(const exec_ctx_t *x, const json_object *rc, const json_object *cm,
                   const json_object *svc, const json_object *sts, const plan_observed_t *seen,
                   FILE *dry_run, reconcile_outcome_t *out)
{
    plan_children_t kids = {cm, svc, sts, NULL};
    reconcile_run_children(x, rc, &kids, seen, dry_run, out);
}
