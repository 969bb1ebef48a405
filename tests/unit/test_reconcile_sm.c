/* test_reconcile_sm: the reconcile job's state machine (workerd/reconcile_sm.h).
 *
 *   - the table: every (state, event) pair, against the transitions written here again,
 *     row by row; every other pair keeps the state and is IGNORE;
 *   - the job: reconciles driven through a scripted fake API server (read refused, a
 *     conflict, a write whose connection dies mid-run, a deadline, a refused write
 *     reported, a create meeting an object the cache does not hold, a cancel), each
 *     checked against the exact sequence of transitions the job made (reconcile_set_trace)
 *     and its outcome, with no event handled in a state that does not expect it.
 */
#include "buf.h"
#include "clock.h"
#include "cu_table.h"
#include "executor.h"
#include "fake_api.h"
#include "json_at.h"
#include "reconcile.h"
#include "reconcile_sm.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the table ------------------------------------------------------------------------ */

typedef struct {
    reconcile_state_t from;
    reconcile_event_t ev;
    reconcile_state_t to;
    reconcile_action_t action;
} row_t;

/* The transitions that can happen, written out again (reconcile_sm.h's table). */
static const row_t rows[] = {
    {RS_IDLE, REV_START, RS_READ, RA_READ_FIRST},
    {RS_READ, REV_READ_OK, RS_PLAN, RA_PLAN},
    {RS_READ, REV_READ_FAILED, RS_FINISH, RA_READ_FAILED},
    {RS_PLAN, REV_PLANNED, RS_RUN, RA_RUN},
    {RS_PLAN, REV_NEED_MORE, RS_READ_MORE, RA_READ_MORE},
    {RS_PLAN, REV_SETTLED, RS_FINISH, RA_NONE},
    {RS_READ_MORE, REV_READ_OK, RS_PLAN, RA_PLAN},
    {RS_READ_MORE, REV_EXPLAIN, RS_READ_MORE, RA_READ_EXPLAIN},
    {RS_RUN, REV_RUN_OK, RS_FINISH, RA_FINISH_OK},
    {RS_RUN, REV_RUN_EXISTS, RS_READ, RA_REPLAN},
    {RS_RUN, REV_RUN_REFUSED, RS_TAKE_BACK, RA_TAKE_BACK},
    {RS_RUN, REV_RUN_FAILED, RS_FINISH, RA_FINISH_FAILED},
    {RS_RUN, REV_RUN_REPORT, RS_READ_FRESH, RA_READ_FRESH},
    {RS_TAKE_BACK, REV_RUN_REFUSED, RS_TAKE_BACK, RA_RECREATE},
    {RS_TAKE_BACK, REV_RUN_FAILED, RS_FINISH, RA_FINISH_FAILED},
    {RS_TAKE_BACK, REV_RUN_REPORT, RS_READ_FRESH, RA_READ_FRESH},
    {RS_TAKE_BACK, REV_TAKEN_BACK, RS_FINISH, RA_FINISH_TAKEN_BACK},
    {RS_READ_FRESH, REV_READ_OK, RS_REPORT, RA_REPORT},
    {RS_REPORT, REV_REPORTED, RS_FINISH, RA_NONE},
    {RS_FINISH, REV_DELIVER, RS_DONE, RA_DELIVER},
};

/* The states a deadline ends (they wait for a request). */
static int waits(reconcile_state_t s)
{
    return s == RS_READ || s == RS_READ_MORE || s == RS_RUN || s == RS_TAKE_BACK || s == RS_READ_FRESH ||
           s == RS_REPORT;
}

static void test_every_pair(void)
{
    int allowed = 0;
    for (int s = 0; s < RS_NSTATES; s++)
        for (int e = 0; e < REV_NEVENTS; e++) {
            reconcile_transition_t t = rcsm_step((reconcile_state_t)s, (reconcile_event_t)e);
            reconcile_transition_t want = {(reconcile_state_t)s, RA_IGNORE};
            for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
                if (rows[r].from == (reconcile_state_t)s && rows[r].ev == (reconcile_event_t)e)
                    want = (reconcile_transition_t){rows[r].to, rows[r].action};
            if (e == REV_CANCEL && s != RS_DONE)
                want = (reconcile_transition_t){RS_DONE, RA_FREE};
            if (e == REV_DEADLINE && waits((reconcile_state_t)s))
                want = (reconcile_transition_t){RS_FINISH, RA_EXPIRE};
            if (t.next != want.next || t.action != want.action)
                fprintf(stderr, "\n  %s x %s: %s/%s, want %s/%s", rcsm_state_name((reconcile_state_t)s),
                        rcsm_event_name((reconcile_event_t)e), rcsm_state_name(t.next), rcsm_action_name(t.action),
                        rcsm_state_name(want.next), rcsm_action_name(want.action));
            CU_ASSERT_EQUAL(t.next, want.next);
            CU_ASSERT_EQUAL(t.action, want.action);
            allowed += t.action != RA_IGNORE;
            CU_ASSERT(t.action != RA_IGNORE || t.next == (reconcile_state_t)s);
        }
    /* the rows, a cancel from each of 9 states, a deadline from each of 6 */
    CU_ASSERT_EQUAL(allowed, (int)(sizeof(rows) / sizeof(rows[0])) + 9 + 6);
    /* out of range: kept, ignored */
    CU_ASSERT_EQUAL(rcsm_step((reconcile_state_t)99, REV_START).action, RA_IGNORE);
    CU_ASSERT_EQUAL(rcsm_step(RS_READ, (reconcile_event_t)99).next, RS_READ);
}

/* Every state, event and action has a name, and the names are distinct. */
static void test_names(void)
{
    const char *(*fn[3])(int) = {(const char *(*)(int))rcsm_state_name, (const char *(*)(int))rcsm_event_name,
                                 (const char *(*)(int))rcsm_action_name};
    int n[3] = {RS_NSTATES, REV_NEVENTS, RA_NACTIONS};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < n[k]; i++) {
            CU_ASSERT_STRING_NOT_EQUAL(fn[k](i), "unknown");
            for (int m = 0; m < i; m++)
                CU_ASSERT_STRING_NOT_EQUAL(fn[k](i), fn[k](m));
        }
        CU_ASSERT_STRING_EQUAL(fn[k](n[k]), "unknown");
    }
}

/* ---- a scripted API server ------------------------------------------------------------ */

/* What the server answers a request whose method is method and whose path contains part:
 * code (-1: the connection dropped without an answer), body (NULL: an echo of the
 * request's body, or a Status for an error), after delay_ms. The first rule that matches
 * wins; none: GET 404, POST 201, anything else 200, with the body echoed. */
typedef struct {
    const char *method, *part;
    int code;
    const char *body;
    int delay_ms;
} rule_t;

#define MAX_RULES 8
typedef struct {
    fake_api_t srv;
    pthread_mutex_t mu;
    rule_t rule[MAX_RULES];
    fake_log_t log;
} script_t;

static int serve(void *user, struct MHD_Connection *c, const char *method, const char *url, const char *body,
                 buf_t *out)
{
    (void)c;
    script_t *s = user;
    pthread_mutex_lock(&s->mu);
    fake_log_add(&s->log, method, url);
    rule_t r = {NULL, NULL, !strcmp(method, "GET") ? 404 : !strcmp(method, "POST") ? 201 : 200, NULL, 0};
    for (int i = 0; i < MAX_RULES && s->rule[i].method; i++)
        if (!strcmp(s->rule[i].method, method) && strstr(url, s->rule[i].part)) {
            r = s->rule[i];
            break;
        }
    pthread_mutex_unlock(&s->mu);
    if (r.delay_ms)
        usleep((useconds_t)r.delay_ms * 1000);
    if (r.body)
        buf_puts(out, r.body);
    else if (r.code >= 400)
        buf_printf(out,
                   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":%d,"
                   "\"reason\":\"%s\",\"message\":\"scripted\"}",
                   r.code,
                   r.code == 404 ? "NotFound" : r.code == 409 ? "Conflict" : r.code == 403 ? "Forbidden" : "Invalid");
    else
        buf_puts(out, *body ? body : "{}");
    return r.code;
}

/* ---- the job, traced ----------------------------------------------------------------- */

#define MAX_STEPS 64
typedef struct {
    char steps[MAX_STEPS * 48];
    int ignored;
} trace_t;

static void on_step(const char *rid, reconcile_state_t from, reconcile_event_t ev, reconcile_transition_t t,
                    void *arg)
{
    (void)rid;
    trace_t *tr = arg;
    size_t n = strlen(tr->steps);
    snprintf(tr->steps + n, sizeof(tr->steps) - n, "%s%s:%s>%s", n ? " " : "", rcsm_state_name(from),
             rcsm_event_name(ev), rcsm_state_name(t.next));
    tr->ignored += t.action == RA_IGNORE;
}

typedef struct {
    script_t s;
    kube_config_t *cfg;
    kube_client_t *client;
    existsmemo_t *exists;
    trace_t trace;
    exec_local_t l;
    int finished;
    reconcile_outcome_t out;
} env_t;

static void env_open(env_t *e, const rule_t *rules, size_t n, int worker)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->s.mu, NULL);
    for (size_t i = 0; i < n && i < MAX_RULES; i++)
        e->s.rule[i] = rules[i];
    kube_client_opts_t o = fake_api_opts(0);
    fake_api_open(&e->s.srv, serve, &e->s, &o, &e->cfg, &e->client);
    if (worker)
        e->exists = existsmemo_new(0);
    exec_ctx_t x = {.client = e->client, .reconcile_id = "sm-test", .instance = "test", .exists = e->exists};
    CU_ASSERT_FATAL(exec_local_open(&e->l, &x) == 0);
    reconcile_set_trace(on_step, &e->trace);
}

static void env_close(env_t *e)
{
    reconcile_set_trace(NULL, NULL);
    exec_local_close(&e->l);
    fake_api_stop(&e->s.srv);
    pthread_mutex_destroy(&e->s.mu);
    existsmemo_destroy(&e->exists);
    kube_client_destroy(&e->client);
    kube_config_destroy(&e->cfg);
}

static void on_done(const reconcile_outcome_t *out, void *arg)
{
    env_t *e = arg;
    e->out = *out;
    e->finished = 1;
}

#define RC_JSON                                                                                                 \
    "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\","     \
    "\"namespace\":\"default\",\"uid\":\"uid-1\",\"generation\":1,\"resourceVersion\":\"1\","                  \
    "\"finalizers\":[\"cache.example.com/finalizer\"]},\"spec\":{\"size\":1,\"image\":\"redis\"}}"

/* Start a reconcile of a new cluster (no child in the cache); deadline_ms > 0 moves its
 * deadline that far ahead. Runs it to its end. */
static void run_job(env_t *e, int deadline_ms)
{
    json_object *rc = parse(RC_JSON);
    plan_children_t kids = {NULL, NULL, NULL, NULL};
    reconcile_job_t *j = reconcile_start(e->l.a, &e->l.x, rc, &kids, NULL, NULL, on_done, e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_FALSE(e->finished); /* never from inside reconcile_start */
    if (deadline_ms > 0)
        reconcile_set_deadline(j, clock_mono_ns() + (int64_t)deadline_ms * NS_PER_MS);
    exec_local_wait(&e->l, &e->finished);
    CU_ASSERT_TRUE(e->finished);
    json_object_put(rc);
}

static void expect_trace(env_t *e, const char *want)
{
    if (strcmp(e->trace.steps, want))
        fprintf(stderr, "\n  trace: %s\n  want:  %s\n", e->trace.steps, want);
    CU_ASSERT_STRING_EQUAL(e->trace.steps, want);
    CU_ASSERT_EQUAL(e->trace.ignored, 0);
}

#define START "idle:start>read"
#define PLAN_RUN "read:read-ok>plan plan:planned>run"
#define END "finish:deliver>done"

/* A child read by name is refused: READ ends the job in error, nothing is written. */
static void test_read_failed(void)
{
    rule_t r[] = {{"GET", "/configmaps/cache", 403, NULL, 0}};
    env_t e;
    env_open(&e, r, 1, 0);
    run_job(&e, 0);
    expect_trace(&e, START " read:read-failed>finish " END);
    CU_ASSERT_EQUAL(e.out.result, RECONCILE_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.out.message, "403"));
    CU_ASSERT_EQUAL(e.out.plans, 0);
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "POST", "") + fake_log_count(&e.s.log, "PATCH", ""), 0);
    env_close(&e);
}

/* A write meets 409 Conflict: the run stops there, RECONCILE_REQUEUE, one plan. */
static void test_conflict(void)
{
    rule_t r[] = {{"POST", "/configmaps", 409, NULL, 0}};
    env_t e;
    env_open(&e, r, 1, 1);
    run_job(&e, 0);
    expect_trace(&e, START " " PLAN_RUN " run:run-failed>finish " END);
    CU_ASSERT_EQUAL(e.out.result, RECONCILE_REQUEUE);
    CU_ASSERT_EQUAL(e.out.plans, 1);
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "POST", "/statefulsets"), 0); /* after the ConfigMap: not sent */
    env_close(&e);
}

/* The server dies in the middle of a write (the StatefulSet's POST: no answer, the
 * connection dropped). A POST that may have been acted on is not sent again: the run ends
 * there in error, the status write after it is not made, and the next reconcile plans
 * from what is there. */
static void test_write_dies_mid_run(void)
{
    rule_t r[] = {{"POST", "/statefulsets", -1, NULL, 0}};
    env_t e;
    env_open(&e, r, 1, 1);
    run_job(&e, 0);
    expect_trace(&e, START " " PLAN_RUN " run:run-failed>finish " END);
    CU_ASSERT_EQUAL(e.out.result, RECONCILE_ERROR);
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "POST", "/statefulsets"), 1);
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "PATCH", "/status"), 0);
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "POST", "/configmaps"), 1); /* made before, once */
    env_close(&e);
}

/* The deadline passes while a write hangs: the job drops it and ends in error saying so,
 * long before the request's own timeout. */
static void test_deadline(void)
{
    rule_t r[] = {{"POST", "/configmaps", 201, NULL, 3000}};
    env_t e;
    env_open(&e, r, 1, 1);
    int64_t t0 = clock_mono_ns();
    run_job(&e, 300);
    int64_t took = clock_mono_ns() - t0;
    expect_trace(&e, START " " PLAN_RUN " run:deadline>finish " END);
    CU_ASSERT_EQUAL(e.out.result, RECONCILE_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.out.message, "deadline passed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.out.message, "in state run"));
    CU_ASSERT(took < 2 * NS_PER_SEC);
    env_close(&e);
}

/* The API refuses a create (403, a quota): the RedisCluster is read again and the failure
 * written into its status before the job ends in error. */
static void test_refused_write_reported(void)
{
    rule_t r[] = {{"POST", "/configmaps", 403, NULL, 0}, {"GET", "/redisclusters/cache", 200, RC_JSON, 0}};
    env_t e;
    env_open(&e, r, 2, 1);
    run_job(&e, 0);
    expect_trace(&e, START " " PLAN_RUN " run:run-report>read-fresh read-fresh:read-ok>report"
                     " report:reported>finish " END);
    CU_ASSERT_EQUAL(e.out.result, RECONCILE_ERROR);
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "GET", "/redisclusters/cache"), 1);
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "PATCH", "/redisclusters/cache/status"), 1);
    env_close(&e);
}

/* A create meets an object the cache does not hold (409 AlreadyExists, in a worker's
 * context): the job reads the children by name, plans again (a foreign ConfigMap: left
 * alone) and runs that plan, in the same reconcile: two plans, one per input change. */
static void test_create_meets_existing(void)
{
    rule_t r[] = {{"POST", "/configmaps", 409,
                   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":409,"
                   "\"reason\":\"AlreadyExists\",\"message\":\"configmaps \\\"cache\\\" already exists\"}",
                   0},
                  {"GET", "/configmaps/cache", 200,
                   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cache\","
                   "\"namespace\":\"default\",\"resourceVersion\":\"7\"},\"data\":{}}",
                   0}};
    env_t e;
    env_open(&e, r, 2, 1);
    run_job(&e, 0);
    expect_trace(&e, START " " PLAN_RUN " run:run-exists>read " PLAN_RUN " run:run-ok>finish " END);
    CU_ASSERT_EQUAL(e.out.plans, 2);
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "POST", "/configmaps"), 1); /* not again */
    CU_ASSERT_EQUAL(fake_log_count(&e.s.log, "GET", "/configmaps/cache"), 1);
    env_close(&e);
}

/* A healthy run: one plan, its writes, done or a requeue after. */
static void test_ok(void)
{
    env_t e;
    env_open(&e, NULL, 0, 1);
    run_job(&e, 0);
    expect_trace(&e, START " " PLAN_RUN " run:run-ok>finish " END);
    CU_ASSERT(e.out.result == RECONCILE_DONE || e.out.result == RECONCILE_REQUEUE_AFTER);
    CU_ASSERT_EQUAL(e.out.plans, 1);
    env_close(&e);
}

/* Cancelled while a write is in flight (a worker that lost its link): freed, never
 * delivered. */
static void test_cancel_mid_run(void)
{
    rule_t r[] = {{"POST", "/configmaps", 201, NULL, 500}};
    env_t e;
    env_open(&e, r, 1, 1);
    json_object *rc = parse(RC_JSON);
    plan_children_t kids = {NULL, NULL, NULL, NULL};
    reconcile_job_t *j = reconcile_start(e.l.a, &e.l.x, rc, &kids, NULL, NULL, on_done, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(reconcile_state(j), RS_RUN);
    int64_t until = clock_mono_ns() + 100 * NS_PER_MS;
    while (clock_mono_ns() < until)
        loop_run_once(e.l.loop, 10 * NS_PER_MS);
    reconcile_cancel(&j);
    CU_ASSERT_PTR_NULL(j);
    expect_trace(&e, START " " PLAN_RUN " run:cancel>done");
    CU_ASSERT_FALSE(e.finished);
    json_object_put(rc);
    env_close(&e);
}

static const cu_entry_t tests[] = {
    CU_SUITE("reconcile state machine"),
    {"the table: every state x event pair", test_every_pair},
    {"names", test_names},
    CU_SUITE("reconcile job, traced"),
    {"a healthy run", test_ok},
    {"a read refused", test_read_failed},
    {"a conflict mid-run", test_conflict},
    {"a write whose connection dies mid-run", test_write_dies_mid_run},
    {"the deadline passes during a write", test_deadline},
    {"a refused write reported in the status", test_refused_write_reported},
    {"a create meets an object the cache does not hold: read, plan again", test_create_meets_existing},
    {"cancelled mid-run", test_cancel_mid_run},
};

CU_MAIN(tests)
