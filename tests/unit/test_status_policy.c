/* Unit tests of the status write policy (workerd/status_policy.h) and of how plan uses it
 * (plan.h STATUS, CREATING): which status differences are written at once, which are held
 * for the coalescing window, and the writes a converging cluster makes.
 *
 * The plan tests keep a small world: the RedisCluster, and the children as the plan
 * created them (the StatefulSet's status set by the test, as the controller would). */
#include "clock.h"
#include "json_at.h"
#include "plan.h"
#include "plan_fixture.h"
#include "status_policy.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#define T0 (INT64_C(1714564800) * NS_PER_SEC) /* 2024-05-01T12:00:00Z */
#define W STATUS_POLICY_COALESCE_NS
#define C STATUS_POLICY_CREATING_NS /* the first rollout's window */

/* ---- status_policy_hold_ns, by table --------------------------------------------------- */

/* A status as plan writes it; %s are phase, the Ready message, Progressing's status and
 * reason, and the extra fields (",\"k\":v..." or ""). */
static json_object *status_of(const char *phase, int ready, const char *ready_update, const char *prog_status,
                              const char *prog_reason, const char *degraded_msg, const char *extra)
{
    char text[4096], upd[128] = "";
    if (ready_update)
        snprintf(upd, sizeof(upd), ",\"lastUpdateTime\":\"%s\"", ready_update);
    snprintf(text, sizeof(text),
             "{\"phase\":\"%s\",\"replicas\":%d,\"readyReplicas\":%d,\"ready\":\"%d/3\",\"observedGeneration\":1,"
             "\"selector\":\"app=x\"%s,\"conditions\":["
             "{\"type\":\"Ready\",\"status\":\"False\",\"observedGeneration\":1,"
             "\"lastTransitionTime\":\"2024-05-01T11:59:00Z\",\"reason\":\"ReplicasNotReady\","
             "\"message\":\"%d/3 replicas ready\"%s},"
             "{\"type\":\"Progressing\",\"status\":\"%s\",\"observedGeneration\":1,"
             "\"lastTransitionTime\":\"2024-05-01T11:59:00Z\",\"reason\":\"%s\",\"message\":\"creating\"},"
             "{\"type\":\"Degraded\",\"status\":\"False\",\"observedGeneration\":1,"
             "\"lastTransitionTime\":\"2024-05-01T11:59:00Z\",\"reason\":\"AsExpected\"%s%s%s}]}",
             phase, ready, ready, ready, extra, ready, upd, prog_status, prog_reason,
             degraded_msg ? ",\"message\":\"" : "", degraded_msg ? degraded_msg : "", degraded_msg ? "\"" : "");
    return parse(text);
}

typedef struct {
    const char *name;
    /* observed */
    const char *o_phase;
    int o_ready;
    const char *o_update; /* Ready's lastUpdateTime, NULL: none */
    const char *o_extra;
    /* computed */
    const char *c_phase;
    int c_ready;
    const char *c_prog_status, *c_prog_reason, *c_degraded_msg, *c_extra;
    int64_t now;
    int64_t want;              /* hold_ns */
    const char *o_prog_reason; /* observed Progressing reason; NULL: Creating (Scaling if Scaling) */
} hold_case_t;

static void test_hold_table(void)
{
    static const hold_case_t cases[] = {
        {"count only, 2 s after the last count: held the rest of the first rollout's window", "Pending", 0,
         "2024-05-01T12:00:00Z", "", "Pending", 1, "True", "Creating", NULL, "", T0 + 2 * NS_PER_SEC,
         C - 2 * NS_PER_SEC, NULL},
        {"count only, just written: held the whole window", "Pending", 0, "2024-05-01T12:00:00Z", "", "Pending", 1,
         "True", "Creating", NULL, "", T0, C, NULL},
        {"count only in a first rollout, 10 s after: still held", "Pending", 1, "2024-05-01T12:00:00Z", "", "Pending",
         2, "True", "Creating", NULL, "", T0 + W, C - W, NULL},
        {"count only in a first rollout, 60 s after: written", "Pending", 1, "2024-05-01T12:00:00Z", "", "Pending", 2,
         "True", "Creating", NULL, "", T0 + C, 0, NULL},
        {"count only, Pending but another rollout (RollingUpdate): the 10 s window", "Pending", 1,
         "2024-05-01T12:00:00Z", "", "Pending", 2, "True", "RollingUpdate", NULL, "", T0 + NS_PER_SEC, W - NS_PER_SEC,
         "RollingUpdate"},
        {"count only, long after: written", "Scaling", 1, "2024-05-01T12:00:00Z", "", "Scaling", 2, "True", "Scaling",
         NULL, "", T0 + 60 * NS_PER_SEC, 0, NULL},
        {"count only while Scaling: held", "Scaling", 1, "2024-05-01T12:00:00Z", "", "Scaling", 2, "True", "Scaling",
         NULL, "", T0 + NS_PER_SEC, W - NS_PER_SEC, NULL},
        {"a phase change: written", "Pending", 1, "2024-05-01T12:00:00Z", "", "Scaling", 2, "True", "Creating", NULL,
         "", T0 + NS_PER_SEC, 0, NULL},
        {"Running: written", "Pending", 2, "2024-05-01T12:00:00Z", "", "Running", 3, "True", "Creating", NULL, "",
         T0 + NS_PER_SEC, 0, NULL},
        {"a condition's reason changes: written", "Pending", 0, "2024-05-01T12:00:00Z", "", "Pending", 1, "True",
         "RollingUpdate", NULL, "", T0 + NS_PER_SEC, 0, NULL},
        {"not progressing (a pod lost, nothing rolling): written", "Pending", 2, "2024-05-01T12:00:00Z", "", "Pending",
         1, "False", "Stable", NULL, "", T0 + NS_PER_SEC, 0, NULL},
        {"Degraded's message changes: written", "Pending", 0, "2024-05-01T12:00:00Z", "", "Pending", 1, "True",
         "Creating", "new trouble", "", T0 + NS_PER_SEC, 0, NULL},
        {"no lastUpdateTime (an older operator wrote it): written", "Pending", 0, NULL, "", "Pending", 1, "True",
         "Creating", NULL, "", T0 + NS_PER_SEC, 0, NULL},
        {"unreadable lastUpdateTime: written", "Pending", 0, "yesterday", "", "Pending", 1, "True", "Creating", NULL,
         "", T0 + NS_PER_SEC, 0, NULL},
        {"lastUpdateTime ahead of now (clock step): held one window at most", "Pending", 0, "2024-05-01T12:10:00Z", "",
         "Pending", 1, "True", "Creating", NULL, "", T0, C, NULL},
        {"the primary changes: written", "Pending", 0, "2024-05-01T12:00:00Z", ",\"primary\":\"cache-0\"", "Pending", 1,
         "True", "Creating", NULL, ",\"primary\":\"cache-1\"", T0 + NS_PER_SEC, 0, NULL},
        {"a field the policy does not know changes: written", "Pending", 0, "2024-05-01T12:00:00Z", ",\"future\":1",
         "Pending", 1, "True", "Creating", NULL, ",\"future\":2", T0 + NS_PER_SEC, 0, NULL},
        {"status.nodes only (pods getting IPs): held", "Pending", 0, "2024-05-01T12:00:00Z",
         ",\"nodes\":[{\"pod\":\"cache-0\"}]", "Pending", 0, "True", "Creating", NULL,
         ",\"nodes\":[{\"pod\":\"cache-0\",\"ip\":\"10.0.0.1\"}]", T0 + NS_PER_SEC, C - NS_PER_SEC, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const hold_case_t *k = &cases[i];
        json_object *o = status_of(k->o_phase, k->o_ready, k->o_update, "True", "Creating", NULL, k->o_extra);
        json_object *c = status_of(k->c_phase, k->c_ready, k->o_update, k->c_prog_status, k->c_prog_reason,
                                   k->c_degraded_msg, k->c_extra);
        if (!strcmp(k->o_phase, "Scaling") || k->o_prog_reason) {
            /* an observed Scaling is Progressing Scaling, unless the row says */
            json_object_put(o);
            o = status_of(k->o_phase, k->o_ready, k->o_update, "True", k->o_prog_reason ? k->o_prog_reason : "Scaling",
                          NULL, k->o_extra);
        }
        int64_t got = status_policy_hold_ns(c, o, k->now);
        if (got != k->want)
            fprintf(stderr, "\n  case \"%s\": hold %lld, want %lld\n", k->name, (long long)got, (long long)k->want);
        CU_ASSERT_EQUAL(got, k->want);
        json_object_put(o);
        json_object_put(c);
    }
}

static void test_hold_without_observed_status(void)
{
    json_object *c = status_of("Pending", 0, NULL, "True", "Creating", NULL, "");
    CU_ASSERT_EQUAL(status_policy_hold_ns(c, NULL, T0), 0);
    json_object *arr = parse("[]");
    CU_ASSERT_EQUAL(status_policy_hold_ns(c, arr, T0), 0);
    CU_ASSERT_EQUAL(status_policy_progress_only(c, NULL), 0);
    CU_ASSERT_EQUAL(status_policy_progress_only(c, c), 1);
    json_object_put(arr);
    json_object_put(c);
}

/* A condition of ours that the computed status no longer has is news. */
static void test_hold_condition_gone_is_news(void)
{
    json_object *o = status_of("Pending", 0, "2024-05-01T12:00:00Z", "True", "Creating", NULL, "");
    json_object *c = status_of("Pending", 1, "2024-05-01T12:00:00Z", "True", "Creating", NULL, "");
    json_object_array_del_idx(json_object_object_get(c, "conditions"), 2, 1); /* Degraded */
    CU_ASSERT_EQUAL(status_policy_hold_ns(c, o, T0 + NS_PER_SEC), 0);
    /* Someone else's condition on the observed object is not ours to compare. */
    json_object_put(c);
    c = status_of("Pending", 1, "2024-05-01T12:00:00Z", "True", "Creating", NULL, "");
    json_object_array_add(json_object_object_get(o, "conditions"),
                          parse("{\"type\":\"ReconcileCrashed\",\"status\":\"False\",\"reason\":\"Ok\"}"));
    CU_ASSERT_EQUAL(status_policy_hold_ns(c, o, T0 + NS_PER_SEC), C - NS_PER_SEC);
    json_object_put(o);
    json_object_put(c);
}

/* ---- plan: a converging cluster ------------------------------------------------------- */

#define SPEC3 "{\"size\":3,\"image\":\"redis\",\"version\":\"7.2\",\"mode\":\"Standalone\"}"

enum { KID_CM, KID_SVC, KID_STS, KID_PDB, KIDS };

typedef struct {
    json_object *rc, *kid[KIDS]; /* the RedisCluster, its children as created */
    int status_writes;
} world_t;

static void world_init(world_t *w)
{
    memset(w, 0, sizeof(*w));
    w->rc = parse("{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
                  "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\",\"uid\":\"uid-1\","
                  "\"generation\":1,\"resourceVersion\":\"100\",\"finalizers\":[\"" PLAN_FINALIZER "\"]},"
                  "\"spec\":" SPEC3 "}");
}

static void world_free(world_t *w)
{
    json_object_put(w->rc);
    for (int i = 0; i < KIDS; i++)
        json_object_put(w->kid[i]);
}

static plan_t *run(world_t *w, int64_t now)
{
    plan_children_t kids = {w->kid[KID_CM], w->kid[KID_SVC], w->kid[KID_STS], w->kid[KID_PDB]};
    plan_t *p = plan_compute_children(w->rc, &kids, NULL, now);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* Perform the plan's creates and status write as the API server would (the status
 * replaces the observed one; the StatefulSet starts with an empty status). */
static void perform(world_t *w, const plan_t *p)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_CREATE) {
            int k = !strcmp(a->resource, "configmaps")             ? KID_CM
                    : !strcmp(a->resource, "services")             ? KID_SVC
                    : !strcmp(a->resource, "poddisruptionbudgets") ? KID_PDB
                                                                   : KID_STS;
            CU_ASSERT_PTR_NULL(w->kid[k]);
            w->kid[k] = json_copy(a->body);
            if (k == KID_STS)
                json_object_object_add(w->kid[k], "status", parse("{\"replicas\":0}"));
        } else if (a->kind == PLAN_UPDATE_STATUS) {
            json_object_object_add(w->rc, "status", json_copy(json_object_object_get(a->body, "status")));
            w->status_writes++;
        } else {
            CU_FAIL("a write other than a create or the status");
        }
    }
}

/* A world whose first reconcile (the creates, the first status) was performed at T0. */
static void world_created(world_t *w)
{
    world_init(w);
    plan_t *p = run(w, T0);
    perform(w, p);
    plan_destroy(&p);
}

/* The StatefulSet controller's view: created pods and ready pods of 3. */
static void sts_pods(world_t *w, int created, int ready)
{
    char s[512];
    snprintf(s, sizeof(s),
             "{\"observedGeneration\":1,\"replicas\":%d,\"readyReplicas\":%d,\"updatedReplicas\":%d,"
             "\"currentRevision\":\"cache-1\",\"updateRevision\":\"cache-1\"}",
             created, ready, created);
    json_object_object_add(w->kid[KID_STS], "status", parse(s));
}

static const char *cond_str(const plan_t *p, const char *type, const char *key)
{
    json_object *list = json_object_object_get(plan_status(p), "conditions");
    for (size_t i = 0; list && i < json_object_array_length(list); i++) {
        json_object *k = json_object_array_get_idx(list, i);
        if (!strcmp(json_object_get_string(json_object_object_get(k, "type")), type))
            return json_object_get_string(json_object_object_get(k, key));
    }
    return NULL;
}

/* Pods ready one a second: the first status (Pending, Creating) and Running are written,
 * the counts between are held; the phase stays Pending, Progressing Creating. */
static void test_fast_convergence_writes_twice(void)
{
    world_t w;
    world_init(&w);
    plan_t *p = run(&w, T0);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_STRING_EQUAL(cond_str(p, "Progressing", "reason"), "Creating");
    CU_ASSERT_STRING_EQUAL(cond_str(p, "Ready", "lastUpdateTime"), "2024-05-01T12:00:00Z");
    perform(&w, p);
    plan_destroy(&p);
    CU_ASSERT_EQUAL(w.status_writes, 1);
    /* The StatefulSet appears with an empty status: still Creating, nothing to write. */
    p = run(&w, T0 + NS_PER_SEC / 2);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_EQUAL(plan_status_held_ns(p), 0);
    plan_destroy(&p);
    for (int ready = 0; ready < 3; ready++) {
        sts_pods(&w, ready + 1, ready);
        int64_t now = T0 + (ready + 1) * NS_PER_SEC;
        p = run(&w, now);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
        CU_ASSERT_STRING_EQUAL(cond_str(p, "Progressing", "reason"), "Creating");
        CU_ASSERT_PTR_NULL(status_action(p));
        /* held until the first rollout's window after the last count; looked at again
         * at the not-Running requeue (10 s) all the same */
        CU_ASSERT_EQUAL(plan_status_held_ns(p), C - (ready + 1) * NS_PER_SEC);
        CU_ASSERT_EQUAL(plan_requeue_after_ns(p), PLAN_REQUEUE_NOT_READY_NS);
        perform(&w, p);
        plan_destroy(&p);
    }
    sts_pods(&w, 3, 3);
    p = run(&w, T0 + 4 * NS_PER_SEC);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    const plan_action_t *a = status_action(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(json_object_object_get(a->body, "status"),
                                                               "readyReplicas")),
                    3);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
    perform(&w, p);
    plan_destroy(&p);
    CU_ASSERT_EQUAL(w.status_writes, 2);
    /* Invariant 6: a resync of the converged cluster writes nothing, holds nothing. */
    p = run(&w, T0 + 3600 * NS_PER_SEC);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_EQUAL(plan_status_held_ns(p), 0);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), 0);
    plan_destroy(&p);
    world_free(&w);
}

/* A first rollout whose pods are ready 20 s apart (between two 10 s windows, within
 * the first rollout's 60 s): the counts between Pending and Running are held, so the
 * status is written twice, the minimum; the phase stays Pending until Running. */
static void test_first_rollout_writes_twice(void)
{
    world_t w;
    world_created(&w);
    plan_t *p = NULL;
    for (int ready = 1; ready < 3; ready++) {
        sts_pods(&w, ready + 1, ready);
        p = run(&w, T0 + ready * 2 * W);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
        CU_ASSERT_PTR_NULL(status_action(p));
        CU_ASSERT_EQUAL(plan_status_held_ns(p), C - ready * 2 * W);
        plan_destroy(&p);
    }
    sts_pods(&w, 3, 3);
    p = run(&w, T0 + 6 * W);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    CU_ASSERT_PTR_NOT_NULL(status_action(p));
    perform(&w, p);
    plan_destroy(&p);
    CU_ASSERT_EQUAL(w.status_writes, 2);
    world_free(&w);
}

/* CRITICAL PATH: with the client-side budget short, the plan that creates a new
 * cluster's StatefulSet leaves the PodDisruptionBudget and the first status to the next
 * reconcile, which writes it as Creating; a status that tells a problem is not left. */
static void test_budget_short_statefulset_first(void)
{
    world_t w;
    world_init(&w);
    plan_observed_t more = {.budget_short = 1};
    plan_children_t kids = {0};
    plan_t *p = plan_compute_children(w.rc, &kids, &more, T0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(plan_action_count(p), 3); /* ConfigMap, Service, StatefulSet */
    for (size_t i = 0; i < plan_action_count(p); i++) {
        CU_ASSERT_EQUAL(plan_action(p, i)->kind, PLAN_CREATE);
        CU_ASSERT_STRING_NOT_EQUAL(plan_action(p, i)->resource, "poddisruptionbudgets");
    }
    CU_ASSERT_PTR_NULL(status_action(p));
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT(plan_requeue_after_ns(p) > 0); /* looked at again even without an event */
    perform(&w, p);
    plan_destroy(&p);
    /* the next reconcile, still short: the budget and the first status, Creating */
    plan_children_t kids2 = {w.kid[KID_CM], w.kid[KID_SVC], w.kid[KID_STS], NULL};
    p = plan_compute_children(w.rc, &kids2, &more, T0 + NS_PER_SEC);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(plan_action_count(p), 2);
    CU_ASSERT_STRING_EQUAL(plan_action(p, 0)->resource, "poddisruptionbudgets");
    CU_ASSERT_PTR_NOT_NULL(status_action(p));
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
    CU_ASSERT_STRING_EQUAL(cond_str(p, "Progressing", "reason"), "Creating");
    perform(&w, p);
    plan_destroy(&p);
    CU_ASSERT_EQUAL(w.status_writes, 1);
    world_free(&w);

    /* A problem is told at once, short or not: a StorageClass that does not exist. */
    world_init(&w);
    json_object_object_add(json_object_object_get(w.rc, "spec"), "storage",
                           parse("{\"storageClass\":\"nosuch\",\"size\":\"1Gi\"}"));
    more.storage_class_missing = 1;
    p = plan_compute_children(w.rc, &kids, &more, T0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_PTR_NOT_NULL(status_action(p));
    CU_ASSERT_STRING_EQUAL(cond_str(p, "Degraded", "reason"), "StorageClassNotFound");
    plan_destroy(&p);
    world_free(&w);
}

/* A first rollout's count held longer than 10 s does not keep the cluster from being
 * diagnosed (a stuck pod's cause is written at once, being what the status says); one
 * that moved within the last 10 s is not looked at yet. */
static void test_held_first_rollout_is_diagnosed(void)
{
    world_t w;
    world_created(&w);
    sts_pods(&w, 2, 1);
    plan_t *p = run(&w, T0 + 5 * NS_PER_SEC);
    CU_ASSERT(plan_status_held_ns(p) > 0);
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), 0);
    plan_destroy(&p);
    p = run(&w, T0 + 15 * NS_PER_SEC);
    CU_ASSERT(plan_status_held_ns(p) > 0);
    CU_ASSERT_EQUAL(plan_wants_diagnosis(p), 1);
    CU_ASSERT_EQUAL(status_policy_diagnosis_due(json_object_object_get(w.rc, "status"), 2, 1, 1, T0 + W), 1);
    CU_ASSERT_EQUAL(status_policy_diagnosis_due(json_object_object_get(w.rc, "status"), 2, 1, 0, T0 + W), 0);
    CU_ASSERT_EQUAL(status_policy_diagnosis_due(json_object_object_get(w.rc, "status"), 0, 0, 0, T0), 1);
    plan_destroy(&p);
    world_free(&w);
}

/* A slow first rollout (pods 70 s apart, longer than its window) writes each count when
 * seen, so a user watching sees each pod. (A later rollout's 10 s window: the table.) */
static void test_slow_convergence_writes_each_count(void)
{
    world_t w;
    world_created(&w);
    plan_t *p = NULL;
    int64_t now = T0;
    for (int ready = 1; ready < 3; ready++) {
        sts_pods(&w, ready + 1, ready);
        now += C + 10 * NS_PER_SEC;
        p = run(&w, now);
        CU_ASSERT_STRING_EQUAL(plan_phase(p), "Pending");
        const plan_action_t *a = status_action(p);
        CU_ASSERT_PTR_NOT_NULL(a);
        CU_ASSERT_EQUAL(plan_status_held_ns(p), 0);
        perform(&w, p);
        plan_destroy(&p);
        char msg[64];
        snprintf(msg, sizeof(msg), "%d/3 replicas ready", ready);
        json_object *ready_cond = json_object_array_get_idx(
            json_object_object_get(json_object_object_get(w.rc, "status"), "conditions"), 0);
        CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(ready_cond, "message")), msg);
    }
    CU_ASSERT_EQUAL(w.status_writes, 3);
    sts_pods(&w, 3, 3);
    now += NS_PER_SEC;
    p = run(&w, now);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Running");
    perform(&w, p);
    plan_destroy(&p);
    world_free(&w);
}

/* The Ready condition's lastUpdateTime as written on the RedisCluster, or NULL. */
static const char *cond_str_rc(const world_t *w)
{
    json_object *list = json_object_object_get(json_object_object_get(w->rc, "status"), "conditions");
    for (size_t i = 0; list && i < json_object_array_length(list); i++) {
        json_object *k = json_object_array_get_idx(list, i);
        if (!strcmp(json_object_get_string(json_object_object_get(k, "type")), "Ready"))
            return json_object_get_string(json_object_object_get(k, "lastUpdateTime"));
    }
    return NULL;
}

/* A held count with no further event: the requeue at the window's end writes it. */
static void test_held_count_written_at_window_end(void)
{
    world_t w;
    world_created(&w);
    sts_pods(&w, 2, 1);
    plan_t *p = run(&w, T0 + 2 * NS_PER_SEC);
    CU_ASSERT_PTR_NULL(status_action(p));
    int64_t held = plan_status_held_ns(p);
    CU_ASSERT_EQUAL(held, C - 2 * NS_PER_SEC);
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), PLAN_REQUEUE_NOT_READY_NS);
    plan_destroy(&p);
    p = run(&w, T0 + 2 * NS_PER_SEC + held);
    const plan_action_t *a = status_action(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(
                               json_object_object_get(a->body, "status"), "ready")),
                           "1/3");
    perform(&w, p);
    plan_destroy(&p);
    CU_ASSERT_STRING_EQUAL(cond_str_rc(&w), "2024-05-01T12:01:00Z"); /* T0 + C */
    world_free(&w);
}

/* A spec change (observedGeneration) and a resize mid-creation are written at once: the
 * size change is Scaling. */
static void test_generation_change_written_at_once(void)
{
    world_t w;
    world_created(&w);
    sts_pods(&w, 2, 1);
    json_object_object_add(json_object_object_get(w.rc, "metadata"), "generation", json_object_new_int(2));
    json_object_object_add(json_object_object_get(w.rc, "spec"), "size", json_object_new_int(4));
    plan_t *p = run(&w, T0 + NS_PER_SEC);
    CU_ASSERT_PTR_NOT_NULL(status_action(p));
    CU_ASSERT_EQUAL(plan_status_held_ns(p), 0);
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Scaling");
    CU_ASSERT_STRING_EQUAL(cond_str(p, "Progressing", "reason"), "Scaling");
    plan_destroy(&p);
    world_free(&w);
}

/* After an upgrade: a status written without lastUpdateTime, unchanged, stays unwritten;
 * the next real change writes it with lastUpdateTime. */
static void test_status_without_update_time(void)
{
    world_t w;
    world_created(&w);
    sts_pods(&w, 3, 3);
    plan_t *p = run(&w, T0 + NS_PER_SEC);
    perform(&w, p);
    plan_destroy(&p);
    json_object *list = json_object_object_get(json_object_object_get(w.rc, "status"), "conditions");
    for (size_t i = 0; i < json_object_array_length(list); i++)
        json_object_object_del(json_object_array_get_idx(list, i), "lastUpdateTime");
    p = run(&w, T0 + 60 * NS_PER_SEC);
    CU_ASSERT_EQUAL(plan_action_count(p), 0);
    CU_ASSERT_PTR_NULL(cond_str(p, "Ready", "lastUpdateTime"));
    plan_destroy(&p);
    sts_pods(&w, 3, 2); /* a pod lost: Pending, written at once with a fresh time */
    p = run(&w, T0 + 61 * NS_PER_SEC);
    CU_ASSERT_PTR_NOT_NULL(status_action(p));
    CU_ASSERT_STRING_EQUAL(cond_str(p, "Ready", "lastUpdateTime"), "2024-05-01T12:01:01Z");
    /* Degraded said the same all along: no time invented for it. */
    CU_ASSERT_PTR_NULL(cond_str(p, "Degraded", "lastUpdateTime"));
    plan_destroy(&p);
    world_free(&w);
}

static CU_TestInfo tests[] = {
    {"hold: table", test_hold_table},
    {"hold: no observed status", test_hold_without_observed_status},
    {"hold: a condition gone is news", test_hold_condition_gone_is_news},
    {"plan: fast convergence writes twice", test_fast_convergence_writes_twice},
    {"plan: a first rollout within its window writes twice", test_first_rollout_writes_twice},
    {"plan: a held first rollout is still diagnosed", test_held_first_rollout_is_diagnosed},
    {"plan: budget short: the StatefulSet first", test_budget_short_statefulset_first},
    {"plan: slow convergence writes each count", test_slow_convergence_writes_each_count},
    {"plan: a held count is written at the window's end", test_held_count_written_at_window_end},
    {"plan: a spec change is written at once", test_generation_change_written_at_once},
    {"plan: a status without lastUpdateTime", test_status_without_update_time},
    CU_TEST_INFO_NULL,
};

#define CU_ONE_SUITE "status write policy", NULL, NULL, tests
#include "cu_main.h"
