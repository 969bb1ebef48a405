/* SWITCHOVER (topology.h, docs/failover.md "Planned switchover"): the rollout and the
 * handover of the primary role as tables over observed states (pod revisions, readiness,
 * links, offsets, deletionTimestamp, the record), the plan's actions for them (the pod
 * DELETE with its uid precondition, FAILOVER TO, the record as a compare-and-swap), the
 * rendered StatefulSet (OnDelete, preStop), and the executor's FAILOVER guard on INFO
 * text and against two real redis-servers.
 *
 * Invariant under test: at every step the record (status.primary) names one pod, and
 * Redis is asked to make that pod primary only from a master that has it linked; a crash
 * after any step replays the same step or the next from what is observed, so no state
 * reached by a crash has two primaries or a lost record. */
#include "hothint.h"
#include "jsonx.h"
#include "plan.h"
#include "plan_fixture.h"
#include "redisexec.h"
#include "render.h"
#include "topology.h"

#include "redis_servers.h"
#include "split_fields.h"
#include "tmpdir.h"

#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS (INT64_C(1000000))
#define DOWN_AFTER 3000

#define NMAX 3

typedef struct {
    const char *what;
    int size;
    const char *primary, *from, *rev; /* status.primary, status.switchoverFrom, updateRevision */
    const char *pods[NMAX];           /* NULL: absent */
    const char *nodes[NMAX];          /* NULL: not observed */
    /* expected */
    const char *record;   /* switch_to of a record, "" none */
    const char *from_out; /* status.switchoverFrom to write */
    const char *del;      /* delete_pod */
    const char *cmds;     /* "pod ARGS;" each */
    const char *labels;   /* "pod=role;" each */
    int wait, blocked, elect;
    const char *reason; /* ReplicationHealthy reason, NULL: not checked */
} sw_case_t;

/* The commands of t as "pod REPLICAOF ip|NO ONE|FAILOVER TO ip;". */
static void cmds_of(const topo_t *t, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < t->n_cmds; i++) {
        size_t l = strlen(out);
        const topo_cmd_t *c = &t->cmds[i];
        snprintf(out + l, cap - l, "%s %s;", c->pod,
                 c->no_one ? "NO ONE" : c->failover_to ? "FAILOVER TO" : "REPLICAOF");
        l = strlen(out);
        if (!c->no_one)
            snprintf(out + l - 1, cap - l + 1, " %s;", c->primary_ip);
    }
}

static void labels_of(const topo_t *t, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < t->n_labels; i++) {
        size_t l = strlen(out);
        snprintf(out + l, cap - l, "%s=%s;", t->labels[i].pod, t->labels[i].role);
    }
}

/* Up to date (r2), Ready, linked: the settled rollout. */
#define P0 "c-0 10.0.0.1 r2 1 0 primary"
#define P1 "c-1 10.0.0.2 r2 1 0 replica"
#define P2 "c-2 10.0.0.3 r2 1 0 replica"
#define O0 "c-0 10.0.0.1 r1 1 0 primary"
#define O1 "c-1 10.0.0.2 r1 1 0 replica"
#define O2 "c-2 10.0.0.3 r1 1 0 replica"
#define M0 "c-0 10.0.0.1 master - 1 1000"
#define L1 "c-1 10.0.0.2 slave 10.0.0.1 1 1000"
#define L2 "c-2 10.0.0.3 slave 10.0.0.1 1 1000"

static const sw_case_t cases[] = {
    {"no rollout: nothing", 3, "c-0", NULL, "r2", {P0, P1, P2}, {M0, L1, L2},
     "", "", "", "", "", 0, 0, 0, "AllReplicasLinked"},
    {"every pod outdated: the replica of highest ordinal first", 3, "c-0", NULL, "r2", {O0, O1, O2}, {M0, L1, L2},
     "", "", "c-2", "", "", 0, 0, 0, "AllReplicasLinked"},
    {"the restarted replica is back as a master: repointed, the next waits", 3, "c-0", NULL, "r2", {O0, O1, P2},
     {M0, L1, "c-2 10.0.0.3 master - 1 0"}, "", "", "", "c-2 REPLICAOF 10.0.0.1;", "", 1, 0, 0, "Repointing"},
    {"the restarted replica's pod not created yet: wait", 3, "c-0", NULL, "r2", {O0, O1, NULL}, {M0, L1, NULL},
     "", "", "", "", "", 1, 0, 0, NULL},
    {"the restarted replica not Ready yet: wait", 3, "c-0", NULL, "r2", {O0, O1, "c-2 10.0.0.3 r2 0 0 replica"},
     {M0, L1, L2}, "", "", "", "", "", 1, 0, 0, NULL},
    {"c-2 back and linked: c-1 next", 3, "c-0", NULL, "r2", {O0, O1, P2}, {M0, L1, L2},
     "", "", "c-1", "", "", 0, 0, 0, NULL},
    {"replicas done, the primary outdated: record the highest offset", 3, "c-0", NULL, "r2", {O0, P1, P2},
     {"c-0 10.0.0.1 master - 1 2000", "c-1 10.0.0.2 slave 10.0.0.1 1 1990", "c-2 10.0.0.3 slave 10.0.0.1 1 2000"},
     "c-2", "c-0", "", "", "", 0, 0, 0, "SwitchingOver"},
    {"two candidates, equal offsets: the lowest ordinal", 3, "c-0", NULL, "r2", {O0, P1, P2}, {M0, L1, L2},
     "c-1", "c-0", "", "", "", 0, 0, 0, "SwitchingOver"},
    {"a replica not caught up: the other one", 3, "c-0", NULL, "r2", {O0, P1, P2},
     {"c-0 10.0.0.1 master - 1 5000000", "c-1 10.0.0.2 slave 10.0.0.1 1 10", "c-2 10.0.0.3 slave 10.0.0.1 1 4999000"},
     "c-2", "c-0", "", "", "", 0, 0, 0, NULL},
    {"no replica caught up: wait", 3, "c-0", NULL, "r2", {O0, P1, P2},
     {"c-0 10.0.0.1 master - 1 5000000", "c-1 10.0.0.2 slave 10.0.0.1 1 10", "c-2 10.0.0.3 slave 10.0.0.1 1 20"},
     "", "", "", "", "", 1, 0, 0, NULL},
    {"the primary outdated, no replica linked: no switchover, Degraded", 3, "c-0", NULL, "r2", {O0, P1, P2},
     {M0, "c-1 10.0.0.2 slave 10.0.0.1 0 1000", "c-2 10.0.0.3 slave 10.0.0.1 0 1000"},
     "", "", "", "", "", 0, 1, 0, NULL},
    {"the record (crash after it: the same step): FAILOVER on the old primary, its label taken, none given", 3,
     "c-1", "c-0", "r2", {O0, P1, P2}, {M0, L1, L2},
     "", "c-0", "", "c-0 FAILOVER TO 10.0.0.2;", "c-0=replica;", 0, 0, 0, "SwitchingOver"},
    {"crash after FAILOVER (the handoff under way): nothing sent, nobody promoted", 3, "c-1", "c-0", "r2",
     {"c-0 10.0.0.1 r1 1 0 replica", P1, P2},
     {"c-0 10.0.0.1 slave 10.0.0.2 0 1000", "c-1 10.0.0.2 slave 10.0.0.1 0 1000", L2},
     "", "c-0", "", "", "", 0, 0, 0, "SwitchingOver"},
    /* The plan that gives role=primary takes it from every other pod first, whatever the
     * pod cache shows (it may not hold the operator's own last label patches: finding 5
     * of docs/simulation.md). */
    {"handed over: the record cleared, labels follow, the chained replica repointed", 3, "c-1", "c-0", "r2",
     {"c-0 10.0.0.1 r1 1 0 replica", "c-1 10.0.0.2 r2 1 0 replica", P2},
     {"c-0 10.0.0.1 slave 10.0.0.2 1 1000", "c-1 10.0.0.2 master - 1 1000", L2},
     "", "", "", "c-2 REPLICAOF 10.0.0.2;", "c-0=replica;c-2=replica;c-1=primary;", 1, 0, 0, "Repointing"},
    {"handed over and repointed: the old primary's pod is deleted", 3, "c-1", NULL, "r2",
     {"c-0 10.0.0.1 r1 1 0 replica", "c-1 10.0.0.2 r2 1 0 primary", P2},
     {"c-0 10.0.0.1 slave 10.0.0.2 1 1000", "c-1 10.0.0.2 master - 1 1000", "c-2 10.0.0.3 slave 10.0.0.2 1 1000"},
     "", "", "c-0", "", "", 0, 0, 0, "AllReplicasLinked"},
    {"the old primary died after the record: the failover rules promote the recorded one", 3, "c-1", "c-0", "r2",
     {O0, P1, P2}, {"c-0 10.0.0.1 - - 0 0", "c-1 10.0.0.2 slave 10.0.0.1 0 1000", "c-2 10.0.0.3 slave 10.0.0.1 0 900"},
     "", "", "", "c-2 REPLICAOF 10.0.0.2;c-1 NO ONE;", "c-0=replica;c-2=replica;c-1=primary;", 0, 0, 0, "Promoting"},
    {"kubectl delete pod of the primary: record the replica with the highest offset", 3, "c-0", NULL, "r2",
     {"c-0 10.0.0.1 r2 0 1 primary", P1, P2},
     {M0, L1, "c-2 10.0.0.3 slave 10.0.0.1 1 1200"}, "c-2", "c-0", "", "", "", 0, 0, 0, "SwitchingOver"},
    {"the terminating primary's record: FAILOVER, its label taken", 3, "c-2", "c-0", "r2",
     {"c-0 10.0.0.1 r2 0 1 primary", P1, P2}, {M0, L1, L2},
     "", "c-0", "", "c-0 FAILOVER TO 10.0.0.3;", "c-0=replica;", 0, 0, 0, "SwitchingOver"},
    {"a terminating primary with no replica linked: no switchover, Degraded", 3, "c-0", NULL, "r2",
     {"c-0 10.0.0.1 r2 0 1 primary", P1, P2},
     {M0, "c-1 10.0.0.2 master - 1 0", "c-2 10.0.0.3 - - 0 0"}, "", "", "", "", "", 0, 1, 0, NULL},
    {"a FAILOVER done by Redis itself (a preStop): the record follows it", 3, "c-0", NULL, "r2", {P0, P1, P2},
     {"c-0 10.0.0.1 slave 10.0.0.2 1 1000", "c-1 10.0.0.2 master - 1 1000", "c-2 10.0.0.3 slave 10.0.0.1 1 1000"},
     "", "", "", "", "", 0, 0, 1, "FailingOver"},
    {"the primary down: the failover first, no rollout step", 3, "c-0", NULL, "r2", {O0, O1, O2},
     {"c-0 10.0.0.1 - - 0 0", "c-1 10.0.0.2 slave 10.0.0.1 1 1000", "c-2 10.0.0.3 slave 10.0.0.1 1 900"},
     "", "", "", "", "", 0, 0, 1, "FailingOver"},
    {"a replica of the old revision not Ready: restarted, not waited for", 3, "c-0", NULL, "r2",
     {O0, O1, "c-2 10.0.0.3 r1 0 0 replica"}, {M0, L1, "c-2 10.0.0.3 - - 0 0"}, "", "", "c-2", "", "", 0, 0, 0, NULL},
    {"nothing answers (a partition, fake pods): the StatefulSet's order", 3, "c-0", NULL, "r2", {O0, O1, O2},
     {"c-0 10.0.0.1 - - 0 0", "c-1 10.0.0.2 - - 0 0", "c-2 10.0.0.3 - - 0 0"}, "", "", "c-2", "", "", 0, 0, 0,
     "NoFailoverCandidate"},
    {"nothing answers, the restarted pod not Ready yet: wait", 3, "c-0", NULL, "r2",
     {O0, O1, "c-2 10.0.0.3 r2 0 0 replica"}, {"c-0 10.0.0.1 - - 0 0", "c-1 10.0.0.2 - - 0 0", "c-2 10.0.0.3 - - 0 0"},
     "", "", "", "", "", 1, 0, 0, NULL},
    {"nothing answers, only the primary outdated: restarted too", 3, "c-0", NULL, "r2", {O0, P1, P2},
     {"c-0 10.0.0.1 - - 0 0", "c-1 10.0.0.2 - - 0 0", "c-2 10.0.0.3 - - 0 0"}, "", "", "c-0", "", "", 0, 0, 0, NULL},
    /* Finding 6: a primary's pod being deleted (frozen: its grace period runs) while a
     * failover elected another keeps no role=primary, given or not. */
    {"a terminating pod labelled primary, another elected and labelled: its label taken", 3, "c-1", NULL, "r1",
     {"c-0 10.0.0.1 r1 0 1 primary", "c-1 10.0.0.2 r1 1 0 primary", "c-2 10.0.0.3 r1 1 0 replica"},
     {"c-0 10.0.0.1 - - 0 0", "c-1 10.0.0.2 master - 1 1000", "c-2 10.0.0.3 slave 10.0.0.2 1 1000"},
     "", "", "", "", "c-0=replica;", 0, 0, 0, "ReplicasMissing"},
    {"a terminating pod labelled primary, another elected: taken before the new one is given", 3, "c-1", NULL, "r1",
     {"c-0 10.0.0.1 r1 0 1 primary", "c-1 10.0.0.2 r1 1 0 replica", "c-2 10.0.0.3 r1 1 0 replica"},
     {"c-0 10.0.0.1 - - 0 0", "c-1 10.0.0.2 master - 1 1000", "c-2 10.0.0.3 slave 10.0.0.2 1 1000"},
     "", "", "", "", "c-2=replica;c-0=replica;c-1=primary;", 0, 0, 0, "ReplicasMissing"},
    {"size 1, outdated: restarted in place", 1, "c-0", NULL, "r2", {O0}, {M0},
     "", "", "c-0", "", "", 0, 0, 0, NULL},
};

static void test_switchover_table(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const sw_case_t *k = &cases[i];
        json_object *pods = pods_of_rows(k->pods, NMAX), *obs = redis_observation_of(k->nodes, NMAX, NULL);
        topo_roll_t roll = {k->rev, k->from, 0};
        topo_t t;
        topo_compute_switchover("c", k->size, k->primary, pods, obs, DOWN_AFTER, 0, &roll, &t);
        char cmds[1024], labels[512];
        cmds_of(&t, cmds, sizeof(cmds));
        labels_of(&t, labels, sizeof(labels));
        int ok = !strcmp(t.switch_record ? t.switch_to : "", k->record) && !strcmp(t.switchover_from, k->from_out) &&
                 !strcmp(t.delete_pod, k->del) && !strcmp(cmds, k->cmds) && !strcmp(labels, k->labels) &&
                 t.switch_wait == k->wait && t.switch_blocked == k->blocked && t.elect == k->elect &&
                 (!k->reason || !strcmp(t.reason, k->reason));
        if (!ok)
            fprintf(stderr,
                    "\n  case \"%s\": record \"%s\" from \"%s\" delete \"%s\" cmds \"%s\" labels \"%s\" wait %d "
                    "blocked %d elect %d reason %s (%s; %s)\n",
                    k->what, t.switch_record ? t.switch_to : "", t.switchover_from, t.delete_pod, cmds, labels,
                    t.switch_wait, t.switch_blocked, t.elect, t.reason, t.message, t.switch_why);
        CU_ASSERT_TRUE(ok);
        /* The record is a name: one primary, whatever the step. */
        if (t.switch_record)
            CU_ASSERT_STRING_EQUAL(t.primary, k->record);
        if (k->del[0] && t.delete_pod[0]) {
            char uid[80];
            snprintf(uid, sizeof(uid), "uid-%s", k->del);
            CU_ASSERT_STRING_EQUAL(t.delete_uid, uid);
        }
        /* Never FAILOVER and a promotion, or a record and a command, in one step. */
        int fo = strstr(cmds, "FAILOVER") != NULL, no_one = strstr(cmds, "NO ONE") != NULL;
        CU_ASSERT_FALSE(fo && no_one);
        CU_ASSERT_FALSE(t.switch_record && (t.n_cmds || t.n_labels || t.delete_pod[0]));
        json_object_put(pods);
        json_object_put(obs);
    }
}

/* Every crash point of a rollout's handover replays into the same next step: walking
 * the observed states of one switchover in order, each plan names exactly one primary
 * (the record) and sends FAILOVER only from the recorded old primary while it is a
 * master with the new one linked. */
static void test_switchover_walk(void)
{
    static const struct {
        const char *primary, *from, *n0, *n1;
    } steps[] = {
        {"c-0", NULL, M0, L1},                                                   /* before: record c-1 */
        {"c-1", "c-0", M0, L1},                                                  /* recorded: FAILOVER */
        {"c-1", "c-0", M0, L1},                                                  /* crash, replay: FAILOVER again */
        {"c-1", "c-0", "c-0 10.0.0.1 slave 10.0.0.2 0 1000", "c-1 10.0.0.2 slave 10.0.0.1 0 1000"}, /* handoff */
        {"c-1", "c-0", "c-0 10.0.0.1 slave 10.0.0.2 1 1000", "c-1 10.0.0.2 master - 1 1000"},       /* done */
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        static const char *const pod_rows[] = {O0, P1};
        const char *const node_rows[] = {steps[i].n0, steps[i].n1};
        json_object *pods = pods_of_rows(pod_rows, 2), *obs = redis_observation_of(node_rows, 2, NULL);
        topo_roll_t roll = {"r2", steps[i].from, 0};
        topo_t t;
        topo_compute_switchover("c", 2, steps[i].primary, pods, obs, DOWN_AFTER, 0, &roll, &t);
        CU_ASSERT_STRING_EQUAL(t.primary, "c-1"); /* recorded from the first step on */
        char cmds[512], labels[256];
        cmds_of(&t, cmds, sizeof(cmds));
        labels_of(&t, labels, sizeof(labels));
        CU_ASSERT_PTR_NULL(strstr(cmds, "NO ONE"));
        CU_ASSERT_EQUAL(strstr(cmds, "FAILOVER") != NULL, i == 1 || i == 2);
        /* role=primary is given only to a pod that says it is a master. */
        CU_ASSERT_EQUAL(strstr(labels, "c-1=primary") != NULL, i == 4);
        CU_ASSERT_FALSE(t.elect);
        json_object_put(pods);
        json_object_put(obs);
    }
}

/* ---- The plan --------------------------------------------------------------------- */

#define RC_JSON(status)                                                                                          \
    "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","                                       \
    "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"rc-uid\",\"resourceVersion\":\"77\","          \
    "\"generation\":1,\"finalizers\":[\"" PLAN_FINALIZER "\"]},"                                                 \
    "\"spec\":{\"size\":3,\"image\":\"redis\",\"version\":\"7.2\",\"mode\":\"Replication\"},\"status\":" status "}"

#define STS_JSON                                                                                                 \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\","   \
    "\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"name\":\"c\","   \
    "\"uid\":\"rc-uid\",\"controller\":true}]},\"spec\":{\"replicas\":3,\"serviceName\":\"c\","             \
    "\"selector\":{\"matchLabels\":{\"app.kubernetes.io/name\":\"redis\",\"app.kubernetes.io/instance\":\"c\"}}}," \
    "\"status\":{\"replicas\":3,\"readyReplicas\":3,\"currentRevision\":\"r1\",\"updateRevision\":\"r2\"}}"

/* plan_compute_observed over RC_JSON(status), STS_JSON, the pods and nodes given. */
static plan_t *plan_of(const char *rc_text, const char *const pods_spec[3], const char *const nodes_spec[3])
{
    json_object *pods = pods_of_rows(pods_spec, 3), *obs = redis_observation_of(nodes_spec, 3, "2024-05-01T12:00:00Z");
    plan_t *p = plan_observed_of(rc_text, STS_JSON, pods, obs, INT64_C(1714564800) * 1000000000);
    PUT_EACH(pods, obs);
    return p;
}

static void test_plan_actions(void)
{
    /* A replica restarted: DELETE with the uid precondition, the event. */
    const char *pods_a[3] = {O0, O1, O2}, *nodes_a[3] = {M0, L1, L2};
    plan_t *p = plan_of(RC_JSON("{\"primary\":\"c-0\"}"), pods_a, nodes_a);
    const plan_action_t *d = find_action(p, PLAN_DELETE, "pods");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_STRING_EQUAL(d->method, "DELETE");
    CU_ASSERT_STRING_EQUAL(d->path, "/api/v1/namespaces/ns/pods/c-2");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(d->body, "preconditions", "uid"), "uid-c-2");
    CU_ASSERT_TRUE(has_event(p, "RolledPod"));
    CU_ASSERT_EQUAL(plan_requeue_after_ns(p), PLAN_REQUEUE_SWITCHOVER_NS);
    plan_destroy(&p);

    /* The primary's turn: the record alone, a compare-and-swap, status.switchoverFrom. */
    const char *pods_b[3] = {O0, P1, P2};
    p = plan_of(RC_JSON("{\"primary\":\"c-0\"}"), pods_b, nodes_a);
    const plan_action_t *s = find_action(p, PLAN_UPDATE_STATUS, "redisclusters");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(s->body, "metadata", "resourceVersion"), "77");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(s->body, "status", "primary"), "c-1");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(s->body, "status", "switchoverFrom"), "c-0");
    CU_ASSERT_PTR_NULL(find_action(p, PLAN_REDIS, "pods"));
    CU_ASSERT_PTR_NULL(find_action(p, PLAN_LABEL_POD, "pods"));
    CU_ASSERT_PTR_NULL(find_action(p, PLAN_DELETE, "pods"));
    CU_ASSERT_TRUE(has_event(p, "SwitchingOver"));
    plan_destroy(&p);

    /* From the record: the label taken, then FAILOVER TO with its timeout. */
    p = plan_of(RC_JSON("{\"primary\":\"c-1\",\"switchoverFrom\":\"c-0\"}"), pods_b, nodes_a);
    size_t label = plan_action_count(p), redis = plan_action_count(p);
    for (size_t i = 0; i < plan_action_count(p); i++) {
        if (plan_action(p, i)->kind == PLAN_LABEL_POD && label == plan_action_count(p))
            label = i;
        if (plan_action(p, i)->kind == PLAN_REDIS && redis == plan_action_count(p))
            redis = i;
    }
    CU_ASSERT_FATAL(redis < plan_action_count(p) && label < redis);
    const plan_action_t *r = plan_action(p, redis);
    CU_ASSERT_STRING_EQUAL(r->name, "c-0");
    CU_ASSERT_EQUAL_FATAL(r->argc, 6);
    const char *want[6] = {"FAILOVER", "TO", "10.0.0.2", "6379", "TIMEOUT", "5000"};
    for (int i = 0; i < 6; i++)
        CU_ASSERT_STRING_EQUAL(r->argv[i], want[i]);
    CU_ASSERT_STRING_EQUAL(plan_action(p, label)->name, "c-0");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(plan_action(p, label)->body, "metadata", "labels", TOPO_ROLE_LABEL), "replica");
    CU_ASSERT_TRUE(has_event(p, "SwitchedOver"));
    s = find_action(p, PLAN_UPDATE_STATUS, "redisclusters");
    if (s) /* the record as it stands: no compare-and-swap, the same names */
        CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(s->body, "status", "switchoverFrom"), "c-0");
    plan_destroy(&p);

    /* No replica linked: Degraded NoSwitchoverCandidate, nothing deleted. */
    const char *nodes_c[3] = {M0, "c-1 10.0.0.2 slave 10.0.0.1 0 1000", "c-2 10.0.0.3 slave 10.0.0.1 0 1000"};
    p = plan_of(RC_JSON("{\"primary\":\"c-0\"}"), pods_b, nodes_c);
    s = find_action(p, PLAN_UPDATE_STATUS, "redisclusters");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    json_object *conds = jsonx_get(jsonx_get(s->body, "status"), "conditions");
    int degraded = 0;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        const json_object *c = json_object_array_get_idx(conds, i);
        if (!strcmp(JSONX_STR_AT(c, "type"), "Degraded") && !strcmp(JSONX_STR_AT(c, "reason"), "NoSwitchoverCandidate"))
            degraded = strstr(JSONX_STR_AT(c, "message"), "no switchover") != NULL;
    }
    CU_ASSERT_TRUE(degraded);
    CU_ASSERT_PTR_NULL(find_action(p, PLAN_DELETE, "pods"));
    plan_destroy(&p);

    /* Replicas linked but none caught up: the rollout waits, and Progressing says why. */
    const char *nodes_d[3] = {"c-0 10.0.0.1 master - 1 5000000", "c-1 10.0.0.2 slave 10.0.0.1 1 10",
                              "c-2 10.0.0.3 slave 10.0.0.1 1 20"};
    p = plan_of(RC_JSON("{\"primary\":\"c-0\"}"), pods_b, nodes_d);
    s = find_action(p, PLAN_UPDATE_STATUS, "redisclusters");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    conds = jsonx_get(jsonx_get(s->body, "status"), "conditions");
    const char *progressing = NULL;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        const json_object *c = json_object_array_get_idx(conds, i);
        if (!strcmp(JSONX_STR_AT(c, "type"), "Progressing"))
            progressing = JSONX_STR_AT(c, "message");
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(progressing);
    CU_ASSERT_PTR_NOT_NULL(strstr(progressing, "c-1 behind"));
    CU_ASSERT_PTR_NOT_NULL(strstr(progressing, "waiting"));
    CU_ASSERT_PTR_NULL(find_action(p, PLAN_DELETE, "pods"));
    CU_ASSERT_PTR_NULL(find_action(p, PLAN_REDIS, "pods"));
    plan_destroy(&p);
}

static void test_render(void)
{
    for (int repl = 0; repl < 2; repl++) {
        render_input_t in = {0};
        json_object *spec = json_tokener_parse(repl ? "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"size\":3,"
                                                      "\"image\":\"redis:7.2\",\"mode\":\"Replication\"}}"
                                                    : "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"size\":3,"
                                                      "\"image\":\"redis:7.2\",\"mode\":\"Standalone\"}}");
        rdc_spec_t typed;
        rdc_field_errors_t *errs = rdc_field_errors_new();
        CU_ASSERT_EQUAL_FATAL(rdc_spec_parse(spec, &typed, errs), 0);
        rdc_field_errors_destroy(&errs);
        in.name = "c";
        in.ns = "ns";
        in.uid = "u";
        in.spec = &typed;
        json_object *sts = render_statefulset(&in, "hash");
        CU_ASSERT_PTR_NOT_NULL_FATAL(sts);
        const char *type = JSONX_STR_AT(sts, "spec", "updateStrategy", "type");
        const json_object *c0 = json_object_array_get_idx(jsonx_get(jsonx_get(jsonx_get(jsonx_get(sts, "spec"),
                                                                                        "template"), "spec"),
                                                                  "containers"), 0);
        const json_object *cmd = jsonx_get(jsonx_get(jsonx_get(jsonx_get(c0, "lifecycle"), "preStop"), "exec"),
                                           "command");
        if (repl) {
            CU_ASSERT_STRING_EQUAL(type ? type : "", "OnDelete");
            CU_ASSERT_PTR_NOT_NULL_FATAL(cmd);
            CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(cmd, 2)), RENDER_PRESTOP_SCRIPT);
            /* FAILOVER TO <pod ip> finds the replica by the address it announces. */
            const json_object *rc = jsonx_get(c0, "command");
            size_t n = json_object_array_length(rc);
            CU_ASSERT_FATAL(n >= 2);
            CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(rc, n - 2)),
                                   "--replica-announce-ip");
            CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(rc, n - 1)),
                                   "$(" RENDER_POD_IP_ENV ")");
            CU_ASSERT_STRING_EQUAL(
                JSONX_STR_AT(json_object_array_get_idx(jsonx_get(c0, "env"), 0), "valueFrom", "fieldRef", "fieldPath"),
                "status.podIP");
        } else {
            CU_ASSERT_PTR_NULL(type);
            CU_ASSERT_PTR_NULL(cmd);
        }
        json_object_put(sts);
        json_object_put(spec);
    }
}

/* ---- The executor's guard --------------------------------------------------------- */

#define INFO_MASTER(state, off)                                                                                  \
    "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nmaster_failover_state:" state "\r\n"               \
    "slave0:ip=10.0.0.2,port=6379,state=online,offset=" off ",lag=0\r\nmaster_repl_offset:5000000\r\n"

static void test_guard_table(void)
{
    static const struct {
        const char *info, *target;
        int want;
    } t[] = {
        {INFO_MASTER("no-failover", "5000000"), "10.0.0.2", 0},
        {INFO_MASTER("no-failover", "4000000"), "10.0.0.2", 0},      /* 1 MB behind: within */
        {INFO_MASTER("no-failover", "10"), "10.0.0.2", -1},          /* behind */
        {INFO_MASTER("no-failover", "5000000"), "10.0.0.3", -1},     /* not a replica of it */
        {INFO_MASTER("waiting-for-sync", "10"), "10.0.0.2", 1},      /* under way */
        {"# Replication\r\nrole:slave\r\nmaster_host:10.0.0.2\r\nmaster_port:6379\r\n", "10.0.0.2", 1}, /* done */
        {"# Replication\r\nrole:slave\r\nmaster_host:10.0.0.9\r\nmaster_port:6379\r\n", "10.0.0.2", -1},
        {"# Replication\r\nrole:master\r\nconnected_slaves:1\r\n"
         "slave0:ip=10.0.0.2,port=6379,state=wait_bgsave,offset=0,lag=0\r\nmaster_repl_offset:0\r\n",
         "10.0.0.2", -1}, /* linked, not online yet */
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char err[256] = "";
        int got = redisexec_switchover_check(t[i].info, t[i].target, 6379, TOPO_SWITCHOVER_MAX_LAG, err, sizeof(err));
        if (got != t[i].want)
            fprintf(stderr, "\n  guard case %zu: %d (%s)\n", i, got, err);
        CU_ASSERT_EQUAL(got, t[i].want);
        CU_ASSERT_TRUE(got >= 0 || err[0]);
    }
}

static int role_is(int port, const char *role)
{
    const char *av[2] = {"INFO", "replication"};
    char info[8192], err[256], r[16], host[256];
    int mport = 0, link = 0;
    int64_t off = -1;
    if (redisexec_command("127.0.0.1", port, NULL, NULL, 2, av, 500 * MS, info, sizeof(info), err, sizeof(err)))
        return 0;
    redisexec_parse_info(info, r, sizeof(r), host, sizeof(host), &mport, &link, &off);
    return !strcmp(r, role) && (strcmp(role, "slave") || link);
}

/* Two real redis-servers: the guard refuses before the replica links, FAILOVER TO hands
 * the role over with every write, and a repeat counts as done. */
static void test_real_failover(void)
{
    server_t p = {0}, q = {0};
    CU_ASSERT_EQUAL_FATAL(server_start(&p, 0, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(server_start(&q, 0, NULL), 0);
    char pport[16], qport[16], err[256], reply[64];
    snprintf(pport, sizeof(pport), "%d", p.port);
    snprintf(qport, sizeof(qport), "%d", q.port);
    const char *fo[6] = {"FAILOVER", "TO", "127.0.0.1", qport, "TIMEOUT", "5000"};
    /* q follows nobody: refused. */
    CU_ASSERT_EQUAL(
        redisexec_switchover("127.0.0.1", p.port, NULL, NULL, 6, fo, TOPO_SWITCHOVER_MAX_LAG, err, sizeof(err)), -1);
    const char *rof[3] = {"REPLICAOF", "127.0.0.1", pport};
    CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", q.port, NULL, NULL, 3, rof, 500 * MS, NULL, 0, err, sizeof(err)), 0);
    for (int i = 0; i < 200 && !role_is(q.port, "slave"); i++)
        nap_ms(25);
    CU_ASSERT_TRUE_FATAL(role_is(q.port, "slave"));
    for (int i = 0; i < 100; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        const char *set[3] = {"SET", key, "v"};
        CU_ASSERT_EQUAL(redisexec_command("127.0.0.1", p.port, NULL, NULL, 3, set, 500 * MS, NULL, 0, err, sizeof(err)),
                        0);
    }
    /* The replica line shows once the replica has acknowledged; wait for online. */
    int sent = -1;
    for (int i = 0; i < 100 && sent < 0; i++) {
        sent = redisexec_switchover("127.0.0.1", p.port, NULL, NULL, 6, fo, TOPO_SWITCHOVER_MAX_LAG, err, sizeof(err));
        if (sent < 0)
            nap_ms(50);
    }
    CU_ASSERT_EQUAL(sent, 0);
    for (int i = 0; i < 200 && !(role_is(q.port, "master") && role_is(p.port, "slave")); i++)
        nap_ms(25);
    CU_ASSERT_TRUE(role_is(q.port, "master"));
    CU_ASSERT_TRUE(role_is(p.port, "slave"));
    const char *dbsize[1] = {"DBSIZE"};
    CU_ASSERT_EQUAL(
        redisexec_command("127.0.0.1", q.port, NULL, NULL, 1, dbsize, 500 * MS, reply, sizeof(reply), err, sizeof(err)),
        0);
    CU_ASSERT_STRING_EQUAL(reply, "100");
    /* A repeat (a crash after the command, the plan replayed): done, nothing sent. */
    CU_ASSERT_EQUAL(
        redisexec_switchover("127.0.0.1", p.port, NULL, NULL, 6, fo, TOPO_SWITCHOVER_MAX_LAG, err, sizeof(err)), 1);
    server_stop(&p);
    server_stop(&q);
}

/* ---- The preStop hook, run ------------------------------------------------------- */

/* A redis-cli that answers INFO replication from the lines of $STATES ("role n", the
 * last repeating), one per call, and counts the calls in $STATES.n. */
static const char FAKE_CLI[] =
    "#!/bin/sh\n"
    "n=$(cat \"$STATES.n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$STATES.n\"\n"
    "line=$(sed -n \"${n}p\" \"$STATES\"); [ -z \"$line\" ] && line=$(tail -1 \"$STATES\")\n"
    "set -- $line\n"
    "printf '# Replication\\r\\nrole:%s\\r\\nconnected_slaves:%s\\r\\n' \"$1\" \"$2\"\n";

/* RENDER_PRESTOP_SCRIPT with redis-cli answering states (lines): the polls it made, or
 * -1 when it could not be run. */
static int hook_polls(const char *dir, const char *states)
{
    char path[512], cli[512], count[600], env_path[1024], env_states[600];
    snprintf(path, sizeof(path), "%s/states", dir);
    snprintf(count, sizeof(count), "%s/states.n", dir);
    snprintf(cli, sizeof(cli), "%s/redis-cli", dir);
    FILE *f = fopen(path, "w"), *c = fopen(cli, "w");
    if (!f || !c) {
        if (f)
            fclose(f);
        if (c)
            fclose(c);
        return -1;
    }
    fputs(states, f);
    fputs(FAKE_CLI, c);
    fclose(f);
    fclose(c);
    chmod(cli, 0755);
    unlink(count);
    snprintf(env_path, sizeof(env_path), "PATH=%s:/usr/bin:/bin", dir);
    snprintf(env_states, sizeof(env_states), "STATES=%s", path);
    pid_t pid = fork();
    if (pid == 0) {
        char *const argv[] = {"sh", "-c", (char *)RENDER_PRESTOP_SCRIPT, NULL}, *const envp[] = {env_path, env_states,
                                                                                                   NULL};
        execve("/bin/sh", argv, envp);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        return -1;
    FILE *n = fopen(count, "r");
    int polls = -1;
    if (n && fscanf(n, "%d", &polls) != 1)
        polls = -1;
    if (n)
        fclose(n);
    return polls;
}

/* A replica goes at once; a pod the hook saw a master waits until no replica has been
 * connected for 2 s (20 polls): after its FAILOVER Redis drops its replicas, which come
 * back to it chained within a second, and a successor at its address would take them as
 * a fresh master (docs/simulation.md, finding 1; seed 0x139e of the hunt). */
static void test_prestop_hook(void)
{
    char dir[] = "/tmp/rdc-test-prestop.XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    CU_ASSERT_EQUAL(hook_polls(dir, "slave 0\n"), 1);
    CU_ASSERT_EQUAL(hook_polls(dir, "slave 1\nslave 1\nslave 0\n"), 3);
    /* handed over: dropped, back for three polls, repointed away, then 20 quiet polls */
    CU_ASSERT_EQUAL(hook_polls(dir, "master 2\nmaster 2\nslave 0\nslave 0\nslave 1\nslave 1\nslave 1\nslave 0\n"), 27);
    CU_ASSERT_EQUAL(hook_polls(dir, "master 0\n"), 20);
    CU_ASSERT_EQUAL(tmpdir_remove(dir), 0);
}

/* The probe cadence each step asks of observerd (hothint.h): hot while a step is in
 * flight or awaited, cold once the cluster is settled. */
static void test_hot_hint_steps(void)
{
    static const struct {
        const char *what, *status;
        const char *pods[3], *nodes[3];
        hothint_t want;
    } rows[] = {
        {"a replica deleted", "{\"primary\":\"c-0\"}", {O0, O1, O2}, {M0, L1, L2}, HOTHINT_HOT},
        {"back as a master: repointed", "{\"primary\":\"c-0\"}", {O0, P1, P2},
         {M0, L1, "c-2 10.0.0.3 master - 0 0"}, HOTHINT_HOT},
        {"the primary's turn: the record", "{\"primary\":\"c-0\"}", {O0, P1, P2}, {M0, L1, L2}, HOTHINT_HOT},
        {"from the record: FAILOVER", "{\"primary\":\"c-1\",\"switchoverFrom\":\"c-0\"}", {O0, P1, P2},
         {M0, L1, L2}, HOTHINT_HOT},
        {"settled", "{\"primary\":\"c-0\"}", {P0, P1, P2}, {M0, L1, L2}, HOTHINT_COLD},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char rc[2048];
        snprintf(rc, sizeof(rc), RC_JSON("%s"), rows[i].status);
        plan_t *p = plan_of(rc, rows[i].pods, rows[i].nodes);
        hothint_t got = hothint_of(RDC_MODE_REPLICATION, p);
        if (got != rows[i].want)
            fprintf(stderr, "\n%s: hint %d (requeue %lld ns)\n", rows[i].what, (int)got,
                    (long long)plan_requeue_after_ns(p));
        CU_ASSERT_EQUAL(got, rows[i].want);
        plan_destroy(&p);
    }
}

static CU_TestInfo tests[] = {
    {"switchover decisions (table)", test_switchover_table},
    {"a handover's steps, replayed after a crash at each", test_switchover_walk},
    {"the plan: pod DELETE, the record, FAILOVER TO, NoSwitchoverCandidate", test_plan_actions},
    {"the probe cadence each step asks of observerd", test_hot_hint_steps},
    {"render: OnDelete and the preStop hook in Replication only", test_render},
    {"the preStop hook, run against a fake redis-cli", test_prestop_hook},
    {"the FAILOVER guard on INFO text (table)", test_guard_table},
    {"FAILOVER TO between two real redis-servers", test_real_failover},
    CU_TEST_INFO_NULL,
};

#define CU_ONE_SUITE "switchover", NULL, NULL, tests
#include "cu_main.h"
