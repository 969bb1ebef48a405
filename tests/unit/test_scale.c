/* SCALE-IN (plan_scale.h, topology.h SCALE-IN, docs/replication.md "Scaling in"): spec.size
 * shrinks in Replication and Standalone mode. The topology's decisions as a table over
 * observed states (the primary among the pods that go or not, the candidates' links and
 * offsets, a handover recorded), then the plan: the StatefulSet's replicas held while the
 * primary is handed over, lowered once it stays, at once in Standalone; the Progressing
 * condition ScalingIn; the claims' retention on the StatefulSet; and the rules of
 * spec.scaleDownPolicy (rdc_spec) and the CRD's CEL rule.
 *
 * Invariant under test: the StatefulSet is never lowered past the ordinal of the primary
 * named by status.primary or of a switchover's old primary (status.switchoverFrom), so
 * the pod that holds the writes is never the one removed; its role moves by the planned
 * switchover's FAILOVER (writes paused until the new primary has them). */
#include "crd_file.h"
#include "cu_table.h"
#include "jsonx.h"
#include "plan.h"
#include "plan_fixture.h"
#include "rdc_spec.h"
#include "split_fields.h"
#include "topology.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#define NPODS 5
#define NOW (INT64_C(1714564800) * 1000000000)

/* A pod "name ip label" (label "-": none), Ready, on revision r1: plan_fixture's pod_of
 * row "name ip r1 1 0 label". */
static json_object *ready_pod_of(const char *spec)
{
    char f[3][64], row[256];
    CU_ASSERT_EQUAL_FATAL(split_fields(spec, f, 3), 3);
    snprintf(row, sizeof(row), "%s %s r1 1 0 %s", f[0], f[1], f[2]);
    return pod_of(row);
}

/* The n pods of rows, as ready_pod_of gives them, in an array. */
static json_object *ready_pods_of(const char *const *rows, size_t n)
{
    json_object *pods = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(pods, ready_pod_of(rows[i]));
    return pods;
}

/* Five pods, the primary at ordinal 4 (S4) or 0 (S0P); every replica linked at offset 1000. */
#define S0 "c-0 10.0.0.1 replica"
#define S1 "c-1 10.0.0.2 replica"
#define S2 "c-2 10.0.0.3 replica"
#define S3 "c-3 10.0.0.4 replica"
#define S4 "c-4 10.0.0.5 primary"
#define M4 "c-4 10.0.0.5 master - 1 1000"
#define L0 "c-0 10.0.0.1 slave 10.0.0.5 1 1000"
#define L1 "c-1 10.0.0.2 slave 10.0.0.5 1 1000"
#define L2 "c-2 10.0.0.3 slave 10.0.0.5 1 1000"
#define L3 "c-3 10.0.0.4 slave 10.0.0.5 1 1000"

typedef struct {
    const char *what;
    int keep;                     /* roll.keep: the new spec.size (the topology sees all five) */
    const char *primary, *from;   /* status.primary, status.switchoverFrom */
    const char *nodes[NPODS];     /* the observation (every pod present: S0..S4, c-4 labelled primary) */
    /* expected */
    const char *record;           /* switch_to of a record, "" none */
    const char *cmds;             /* "pod FAILOVER TO ip;" */
    int wait, blocked;
    const char *why;              /* in switch_why, NULL: not checked */
} scale_case_t;

static const scale_case_t cases[] = {
    {"5 -> 3, the primary at 4: the role to the lowest ordinal of equal offsets that stays", 3, "c-4", NULL,
     {L0, L1, L2, L3, M4}, "c-0", "", 0, 0, "scaling in to 3 pods: the primary c-4 is to go"},
    {"the best offset among the pods that stay, never one that goes", 3, "c-4", NULL,
     {L0, L1, "c-2 10.0.0.3 slave 10.0.0.5 1 1500", "c-3 10.0.0.4 slave 10.0.0.5 1 2000",
      "c-4 10.0.0.5 master - 1 2000"},
     "c-2", "", 0, 0, NULL},
    {"only a pod that goes is linked: no switchover, blocked", 3, "c-4", NULL,
     {"c-0 10.0.0.1 slave 10.0.0.5 0 1000", "c-1 10.0.0.2 slave 10.0.0.5 0 1000", "c-2 10.0.0.3 slave 10.0.0.5 0 1000",
      L3, M4},
     "", "", 0, 1, "no replica that stays can take its role"},
    {"the replicas that stay linked but behind: wait", 3, "c-4", NULL,
     {"c-0 10.0.0.1 slave 10.0.0.5 1 10", "c-1 10.0.0.2 slave 10.0.0.5 1 10", "c-2 10.0.0.3 slave 10.0.0.5 1 10", L3,
      "c-4 10.0.0.5 master - 1 5000000"},
     "", "", 1, 0, ": waiting"},
    {"recorded: FAILOVER TO the pod that stays, from the primary that goes", 3, "c-1", "c-4", {L0, L1, L2, L3, M4},
     "", "c-4 FAILOVER TO 10.0.0.2;", 0, 0, NULL},
    {"5 -> 1, the primary at 4: the role to c-0", 1, "c-4", NULL, {L0, L1, L2, L3, M4}, "c-0", "", 0, 0, NULL},
};

static void test_scale_in_table(void)
{
    static const char *const pods_spec[NPODS] = {S0, S1, S2, S3, S4};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const scale_case_t *k = &cases[i];
        json_object *pods = ready_pods_of(pods_spec, NPODS), *obs = redis_observation_of(k->nodes, NPODS, NULL);
        topo_roll_t roll = {"r1", k->from, k->keep};
        topo_t t;
        topo_compute_switchover("c", NPODS, k->primary, pods, obs, 3000, 0, &roll, &t);
        char cmds[512] = "";
        for (size_t c = 0; c < t.n_cmds; c++) {
            size_t l = strlen(cmds);
            snprintf(cmds + l, sizeof(cmds) - l, "%s %s %s;", t.cmds[c].pod,
                     t.cmds[c].failover_to ? "FAILOVER TO" : "REPLICAOF", t.cmds[c].primary_ip);
        }
        int ok = !strcmp(t.switch_record ? t.switch_to : "", k->record) && !strcmp(cmds, k->cmds) &&
                 t.switch_wait == k->wait && t.switch_blocked == k->blocked &&
                 (!k->why || strstr(t.switch_why, k->why)) && !t.elect && !t.delete_pod[0];
        if (!ok)
            fprintf(stderr, "\n  case \"%s\": record \"%s\" cmds \"%s\" wait %d blocked %d elect %d delete %s (%s)\n",
                    k->what, t.switch_record ? t.switch_to : "", cmds, t.switch_wait, t.switch_blocked, t.elect,
                    t.delete_pod, t.switch_why);
        CU_ASSERT_TRUE(ok);
        if (t.switch_record) { /* the record: the new primary, the old one as switchoverFrom */
            CU_ASSERT_STRING_EQUAL(t.primary, k->record);
            CU_ASSERT_STRING_EQUAL(t.switchover_from, "c-4");
        }
        json_object_put(pods);
        json_object_put(obs);
    }
}

/* The primary below keep: SCALE-IN decides nothing (the pods that go are not rolled). */
static void test_scale_in_primary_stays(void)
{
    static const char *const p[NPODS] = {"c-0 10.0.0.1 primary", S1, S2, S3, "c-4 10.0.0.5 replica"};
    static const char *const n[NPODS] = {
        "c-0 10.0.0.1 master - 1 1000", "c-1 10.0.0.2 slave 10.0.0.1 1 1000", "c-2 10.0.0.3 slave 10.0.0.1 1 1000",
        "c-3 10.0.0.4 slave 10.0.0.1 1 1000", "c-4 10.0.0.5 slave 10.0.0.1 1 1000"};
    json_object *pods = ready_pods_of(p, NPODS), *obs = redis_observation_of(n, NPODS, NULL);
    topo_roll_t roll = {"r2", NULL, 3}; /* c-3 and c-4 outdated too: not rolled, they go */
    topo_t t;
    topo_compute_switchover("c", NPODS, "c-0", pods, obs, 3000, 0, &roll, &t);
    CU_ASSERT_FALSE(t.switch_record);
    CU_ASSERT_STRING_EQUAL(t.primary, "c-0");
    CU_ASSERT_EQUAL(t.n_cmds, 0);
    /* c-0..c-2 outdated as well: the rollout deletes the replica of highest ordinal that stays */
    CU_ASSERT_STRING_EQUAL(t.delete_pod, "c-2");
    json_object_put(pods);
    json_object_put(obs);
}

/* ---- The plan ------------------------------------------------------------------------ */

#define RC_JSON(mode, size, status)                                                                          \
    "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","                                   \
    "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"rc-uid\",\"resourceVersion\":\"77\","      \
    "\"generation\":2,\"finalizers\":[\"" PLAN_FINALIZER "\"]},"                                             \
    "\"spec\":{\"size\":" size ",\"image\":\"redis\",\"version\":\"7.2\",\"mode\":\"" mode "\","             \
    "\"storage\":{\"retention\":{\"whenScaled\":\"Delete\"}}},\"status\":" status "}"

#define STS5_JSON                                                                                            \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\","     \
    "\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"name\":\"c\","     \
    "\"uid\":\"rc-uid\",\"controller\":true}]},\"spec\":{\"replicas\":5,\"serviceName\":\"c\","               \
    "\"selector\":{\"matchLabels\":{\"app.kubernetes.io/name\":\"redis\",\"app.kubernetes.io/instance\":\"c\"}}}," \
    "\"status\":{\"replicas\":5,\"readyReplicas\":5,\"currentRevision\":\"r1\",\"updateRevision\":\"r1\"}}"

/* The plan of rc_text over STS5_JSON, five pods (the primary's pod labelled so) and
 * their observation (nodes NULL: none). */
static plan_t *plan_of(const char *rc_text, const char *const pods_spec[NPODS], const char *const nodes_spec[NPODS])
{
    json_object *pods = ready_pods_of(pods_spec, NPODS);
    json_object *obs = nodes_spec ? redis_observation_of(nodes_spec, NPODS, "2024-05-01T12:00:00Z") : NULL;
    plan_t *p = plan_observed_of(rc_text, STS5_JSON, pods, obs, NOW);
    PUT_EACH(pods, obs);
    return p;
}

/* The StatefulSet write of p (an apply, or a replace), or NULL. */
static const plan_action_t *sts_write(const plan_t *p)
{
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if ((a->kind == PLAN_APPLY || a->kind == PLAN_REPLACE) && !strcmp(a->resource, "statefulsets"))
            return a;
    }
    return NULL;
}

static long long sts_replicas(const plan_t *p)
{
    const plan_action_t *a = sts_write(p);
    return a ? (long long)jsonx_int_or(jsonx_get(a->body, "spec"), "replicas", -1) : -1;
}

/* The condition of type in p's computed status, or NULL. */
static const json_object *cond_of(const plan_t *p, const char *type)
{
    const json_object *conds = jsonx_get(plan_status(p), "conditions");
    for (size_t i = 0; i < jsonx_len(conds); i++) {
        const json_object *c = json_object_array_get_idx(conds, i);
        if (jsonx_str_is(c, "type", type))
            return c;
    }
    return NULL;
}

static const char *const pods5[NPODS] = {S0, S1, S2, S3, S4};
static const char *const nodes5[NPODS] = {L0, L1, L2, L3, M4};

/* Replication 5 -> 3 with the primary at ordinal 4: the StatefulSet stays at 5, the
 * handover is recorded (status.primary c-0, switchoverFrom c-4, resourceVersion
 * precondition), Progressing says ScalingIn and why. */
static void test_plan_primary_leaving(void)
{
    plan_t *p = plan_of(RC_JSON("Replication", "3", "{\"primary\":\"c-4\"}"), pods5, nodes5);
    long long r = sts_replicas(p);
    CU_ASSERT(r == -1 || r == 5); /* held (the template may be applied, never the replicas lowered) */
    CU_ASSERT_FALSE(has_event_in(p, "Scaled", ""));
    const plan_action_t *s = status_action(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(s->body, "status", "primary"), "c-0");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(s->body, "status", "switchoverFrom"), "c-4");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(s->body, "metadata", "resourceVersion"), "77");
    CU_ASSERT_TRUE(has_event_in(p, "SwitchingOver", "scaling in to 3 pods"));
    const json_object *prog = cond_of(p, "Progressing");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(prog, "reason"), "ScalingIn");
    CU_ASSERT_PTR_NOT_NULL(strstr(JSONX_STR_AT(prog, "message"), "scaling in from 5 to 3 replicas: "));
    CU_ASSERT_STRING_EQUAL(plan_phase(p), "Scaling");
    plan_destroy(&p);

    /* From the record: FAILOVER TO c-0 from c-4, the StatefulSet still at 5. */
    p = plan_of(RC_JSON("Replication", "3", "{\"primary\":\"c-0\",\"switchoverFrom\":\"c-4\"}"), pods5, nodes5);
    r = sts_replicas(p);
    CU_ASSERT(r == -1 || r == 5);
    int failover = 0;
    for (size_t i = 0; i < plan_action_count(p); i++) {
        const plan_action_t *a = plan_action(p, i);
        if (a->kind == PLAN_REDIS && !strcmp(a->name, "c-4") && a->argc == 6 && !strcmp(a->argv[0], "FAILOVER"))
            failover = !strcmp(a->argv[2], "10.0.0.1");
    }
    CU_ASSERT_TRUE(failover);
    plan_destroy(&p);

    /* Handed over (c-0 a master, c-4 its replica, the record cleared by that plan's
     * status): the StatefulSet lowered to 3, event Scaled. */
    static const char *const pods_after[NPODS] = {"c-0 10.0.0.1 primary", S1, S2, S3, "c-4 10.0.0.5 replica"};
    static const char *const nodes_after[NPODS] = {
        "c-0 10.0.0.1 master - 1 1000", "c-1 10.0.0.2 slave 10.0.0.1 1 1000", "c-2 10.0.0.3 slave 10.0.0.1 1 1000",
        "c-3 10.0.0.4 slave 10.0.0.1 1 1000", "c-4 10.0.0.5 slave 10.0.0.1 1 1000"};
    p = plan_of(RC_JSON("Replication", "3", "{\"primary\":\"c-0\"}"), pods_after, nodes_after);
    CU_ASSERT_EQUAL(sts_replicas(p), 3);
    CU_ASSERT_TRUE(has_event_in(p, "Scaled", "from 5 to 3 replicas"));
    prog = cond_of(p, "Progressing");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(prog, "reason"), "ScalingIn");
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(prog, "message"), "scaling in from 5 to 3 replicas");
    /* The claims of the pods that go: the StatefulSet's whenScaled, as spec.storage.retention says. */
    CU_ASSERT_STRING_EQUAL(
        JSONX_STR_AT(sts_write(p)->body, "spec", "persistentVolumeClaimRetentionPolicy", "whenScaled"), "Delete");
    plan_destroy(&p);
}

/* The primary at 0 from the start: lowered at once; nothing known of Redis (no
 * observation) does not hold it either (the record alone decides). */
static void test_plan_primary_stays(void)
{
    static const char *const pods0[NPODS] = {"c-0 10.0.0.1 primary", S1, S2, S3, "c-4 10.0.0.5 replica"};
    plan_t *p = plan_of(RC_JSON("Replication", "3", "{\"primary\":\"c-0\"}"), pods0, NULL);
    CU_ASSERT_EQUAL(sts_replicas(p), 3);
    plan_destroy(&p);
    /* No status.primary yet: the first primary is c-0. */
    p = plan_of(RC_JSON("Replication", "3", "{}"), pods0, NULL);
    CU_ASSERT_EQUAL(sts_replicas(p), 3);
    plan_destroy(&p);
    /* The primary at 4 and no observation: held, nothing sent. */
    p = plan_of(RC_JSON("Replication", "3", "{\"primary\":\"c-4\"}"), pods5, NULL);
    long long r = sts_replicas(p);
    CU_ASSERT(r == -1 || r == 5);
    for (size_t i = 0; i < plan_action_count(p); i++)
        CU_ASSERT_NOT_EQUAL(plan_action(p, i)->kind, PLAN_REDIS);
    plan_destroy(&p);
}

/* Standalone: independent servers, no role: lowered at once whatever status says. */
static void test_plan_standalone(void)
{
    plan_t *p = plan_of(RC_JSON("Standalone", "3", "{\"primary\":\"c-4\"}"), pods5, NULL);
    CU_ASSERT_EQUAL(sts_replicas(p), 3);
    CU_ASSERT_TRUE(has_event_in(p, "Scaled", "from 5 to 3 replicas"));
    CU_ASSERT_STRING_EQUAL(JSONX_STR_AT(cond_of(p, "Progressing"), "reason"), "ScalingIn");
    plan_destroy(&p);
}

/* ---- The rules: spec.scaleDownPolicy, minReplicasToWrite, the CRD ------------------- */

static size_t update_errors(const char *old_spec, const char *new_spec, char *first, size_t cap)
{
    char o[512], n[512];
    snprintf(o, sizeof(o), "{\"metadata\":{\"name\":\"c\"},\"spec\":%s}", old_spec);
    snprintf(n, sizeof(n), "{\"metadata\":{\"name\":\"c\"},\"spec\":%s}", new_spec);
    json_object *ov = json_tokener_parse(o), *nv = json_tokener_parse(n);
    rdc_field_errors_t *e = rdc_field_errors_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    size_t k = rdc_spec_validate_update(ov, nv, e);
    first[0] = '\0';
    if (rdc_field_errors_count(e))
        snprintf(first, cap, "%s", rdc_field_error_text(e, 0));
    rdc_field_errors_destroy(&e);
    json_object_put(ov);
    json_object_put(nv);
    return k;
}

static void test_scale_down_policy(void)
{
    char m[512];
    CU_ASSERT_EQUAL(update_errors("{\"size\":5,\"image\":\"redis\"}", "{\"size\":3,\"image\":\"redis\"}", m, sizeof(m)),
                    0);
    CU_ASSERT_EQUAL(update_errors("{\"size\":5,\"image\":\"redis\",\"scaleDownPolicy\":\"Allow\"}",
                                  "{\"size\":1,\"image\":\"redis\",\"scaleDownPolicy\":\"Allow\"}", m, sizeof(m)),
                    0);
    CU_ASSERT_EQUAL(update_errors("{\"size\":5,\"image\":\"redis\",\"scaleDownPolicy\":\"Forbid\"}",
                                  "{\"size\":3,\"image\":\"redis\",\"scaleDownPolicy\":\"Forbid\"}", m, sizeof(m)),
                    1);
    CU_ASSERT_STRING_EQUAL(m, "spec.size: Forbidden: may not decrease from 5 to 3 (spec.scaleDownPolicy is Forbid: "
                              "scaling this RedisCluster down is not allowed)");
    /* Forbid to Allow with the decrease: the new spec's policy decides (lifting it is the user's own act). */
    CU_ASSERT_EQUAL(update_errors("{\"size\":5,\"image\":\"redis\",\"scaleDownPolicy\":\"Forbid\"}",
                                  "{\"size\":3,\"image\":\"redis\",\"scaleDownPolicy\":\"Allow\"}", m, sizeof(m)),
                    0);

    /* The value itself, and minReplicasToWrite against the new size. */
    rdc_field_errors_t *e = rdc_field_errors_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    json_object *rc = json_tokener_parse("{\"apiVersion\":\"cache.example.com/v1\",\"metadata\":{\"name\":\"c\"},"
                                         "\"spec\":{\"size\":2,\"image\":\"redis\",\"mode\":\"Replication\","
                                         "\"scaleDownPolicy\":\"Never\",\"failover\":{\"minReplicasToWrite\":2}}}");
    rdc_spec_t spec;
    CU_ASSERT_EQUAL(rdc_spec_parse(rc, &spec, e), 2);
    int policy = 0, mrw = 0;
    for (size_t i = 0; i < rdc_field_errors_count(e); i++) {
        const char *f = rdc_field_error_field(e, i), *t = rdc_field_error_text(e, i);
        policy |= !strcmp(f, "spec.scaleDownPolicy") && strstr(t, "supported values: \"Allow\", \"Forbid\"");
        mrw |= !strcmp(f, "spec.failover.minReplicasToWrite") && strstr(t, "must be less than spec.size");
    }
    CU_ASSERT_TRUE(policy);
    CU_ASSERT_TRUE(mrw);
    rdc_field_errors_destroy(&e);
    json_object_put(rc);

    e = rdc_field_errors_new();
    rc = json_tokener_parse("{\"apiVersion\":\"cache.example.com/v1\",\"metadata\":{\"name\":\"c\"},"
                            "\"spec\":{\"size\":3,\"image\":\"redis\",\"scaleDownPolicy\":\"Forbid\"}}");
    CU_ASSERT_EQUAL(rdc_spec_parse(rc, &spec, e), 0);
    CU_ASSERT_TRUE(spec.scale_down_forbidden);
    rdc_field_errors_destroy(&e);
    json_object_put(rc);
}

/* The CRD (v1) carries the rule with the policy, the field with its values; v1alpha1
 * keeps the rule of old (no policy there). */
static void test_crd_rules(void)
{
    FILE *f = crd_open();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "self.size >= oldSelf.size || (has(self.mode) && self.mode == 'Cluster') ||\n"
                                        "                !has(self.scaleDownPolicy) || "
                                        "self.scaleDownPolicy != 'Forbid'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "may not decrease while spec.scaleDownPolicy is Forbid"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "scaleDownPolicy:\n                type: string\n"
                                        "                enum: [\"Allow\", \"Forbid\"]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "- rule: self.size >= oldSelf.size\n"
                                        "              message: may not decrease (scaling a RedisCluster down is not "
                                        "allowed)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "self.failover.minReplicasToWrite < self.size"));
}

static const cu_entry_t tests[] = {
    CU_SUITE("scale-in topology"),
    {"the primary among the pods that go: handed to one that stays (table)", test_scale_in_table},
    {"the primary stays: nothing, the pods that go not rolled", test_scale_in_primary_stays},
    CU_SUITE("scale-in plan"),
    {"Replication, the primary at 4: held, switched over, then lowered", test_plan_primary_leaving},
    {"Replication, the primary at 0: lowered at once", test_plan_primary_stays},
    {"Standalone: lowered at once", test_plan_standalone},
    CU_SUITE("scale-in rules"),
    {"spec.scaleDownPolicy, minReplicasToWrite < size", test_scale_down_policy},
    {"the CRD's CEL rules", test_crd_rules},
};
CU_MAIN(tests)
