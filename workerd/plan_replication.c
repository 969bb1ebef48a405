/* plan_replication: the topology's decisions as actions. See plan_replication.h and
 * plan.h (REPLICATION, FAILOVER, SWITCHOVER). */
#include "plan_replication.h"

#include "clock.h"
#include "jsonx.h"
#include "plan_build.h"
#include "plan_observe.h"
#include "rdc_spec.h"
#include "render.h"

#include <stdio.h>
#include <string.h>

/* spec.failover.downAfter in milliseconds (FAILOVER; default rdc_spec.h's). */
static int64_t down_after_ms(const plan_ctx_t *c)
{
    return c->spec->failover.down_after_ns / 1000000;
}

/* How old the observation is, in ms, as evidence. observerd reports a node that answers
 * again at once, so "down for X ms, Y ms ago" is down for X + Y now. At most 1 s of it:
 * observerd repeats a down primary every second until downAfter + 2 s have passed (then
 * once a minute, when the decision has long been taken), so before that an older
 * observation means observerd is not running and nobody would report the primary's
 * return; the evidence never runs more than 1 s ahead of what an observer saw. */
static int64_t observation_age_ms(const plan_ctx_t *c)
{
    const plan_observed_t *m = c->more;
    int64_t age = m && m->redis ? plan_age_ns(jsonx_str_set(m->redis, "observedAt"), c->now) : -1;
    return age > 0 ? (age < INT64_C(1000000000) ? age : INT64_C(1000000000)) / 1000000 : 0;
}

int64_t plan_last_command_ns(const plan_ctx_t *c)
{
    const char *t = JSONX_STR_AT(c->rc, "status", "lastRedisCommandTime");
    int64_t at = 0;
    return t && !clock_parse_rfc3339(t, &at) ? at : 0;
}

/* The pods the topology decides over: spec.size, or while SCALE-IN holds the StatefulSet
 * at more (plan_scale.h), those it still runs. */
static int plan_members(const plan_ctx_t *c)
{
    return c->in.shard_replicas > c->spec->size ? c->in.shard_replicas : c->spec->size;
}

/* The observation the topology decides from (FRESHNESS): the work item's, unless some
 * pod was not probed since the operator's last Redis command: then none, as if nothing
 * were known of Redis (the status keeps what it says of it), and the plan looks again
 * soon (observerd probes the pods again when that command's record reaches it). A record
 * still in the future is the window of a plan that stopped before its last status write
 * (a command failed, the worker died): that plan has ended, since this one runs (one
 * worker per key, within its lease), so every command of it went out before now; this
 * plan closes the window (COMMAND RECORD) and decides nothing else. */
static const json_object *current_observation(const plan_ctx_t *c)
{
    const plan_observed_t *m = c->more;
    const json_object *obs = m ? m->redis : NULL;
    int64_t cmd = plan_last_command_ns(c), at = 0;
    if (cmd > c->now) {
        plan_set_command_window(c->plan, plan_action_count(c->plan), 0);
        plan_requeue_within(c->plan, PLAN_REQUEUE_OBSERVE_NS);
        return NULL;
    }
    if (!obs || !cmd)
        return obs;
    const char *t = jsonx_str_set(obs, "observedAt");
    int64_t lead_ms = t && !clock_parse_rfc3339(t, &at) ? (at - cmd) / 1000000 : -1;
    char why[512];
    if (topo_observation_current(c->name, plan_members(c), m->members, obs, lead_ms, why, sizeof(why)))
        return obs;
    plan_requeue_within(c->plan, PLAN_REQUEUE_OBSERVE_NS);
    return NULL;
}

/* Plan the role label patch l (REPLICATION). Returns 0, or -1 when out of memory. */
static int plan_label(const plan_ctx_t *c, const topo_label_t *l)
{
    plan_t *p = c->plan;
    int *oom = plan_oom(p);
    char why[600];
    json_object *body = jsonx_new_obj(oom), *meta = jsonx_new_obj(oom), *labels = jsonx_new_obj(oom);
    jsonx_put(labels, RENDER_LABEL_ROLE, jsonx_new_str(l->role, oom), oom);
    jsonx_put(meta, "labels", labels, oom);
    jsonx_put(body, "metadata", meta, oom);
    snprintf(why, sizeof(why), "pod %s/%s: label %s is \"%s\", its role is %s", c->ns, l->pod, RENDER_LABEL_ROLE,
             l->have, l->role);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    return plan_add_action(p, PLAN_LABEL_POD, "v1", "pods", c->ns, l->pod, body, why) < 0 ? -1 : 0;
}

/* The role labels that take role=primary away (primary 0) or give it (primary 1).
 * Returns 0, or -1 when out of memory. */
static int plan_labels(const plan_ctx_t *c, const topo_t *t, int primary)
{
    for (size_t i = 0; i < t->n_labels; i++)
        if ((strcmp(t->labels[i].role, RENDER_ROLE_PRIMARY) == 0) == primary && plan_label(c, &t->labels[i]))
            return -1;
    return 0;
}

/* The Redis command topology decided, as argv (at most 6) and its event's reason;
 * returns argc. */
static int command_argv(const topo_cmd_t *t, const char *argv[6], char timeout[24], const char **reason)
{
    snprintf(timeout, 24, "%d", TOPO_FAILOVER_TIMEOUT_MS);
    if (t->no_one) {
        const char *v[] = {"REPLICAOF", "NO", "ONE"};
        memcpy(argv, v, sizeof(v));
        *reason = "Promoted";
        return 3;
    }
    if (t->failover_to) {
        const char *v[] = {"FAILOVER", "TO", t->primary_ip, "6379", "TIMEOUT", timeout};
        memcpy(argv, v, sizeof(v));
        *reason = "SwitchedOver";
        return 6;
    }
    const char *v[] = {"REPLICAOF", t->primary_ip, "6379"};
    memcpy(argv, v, sizeof(v));
    *reason = "Repointed";
    return 3;
}

/* The Redis commands, each with its event, none sent after until (COMMAND RECORD).
 * Returns 0, or -1 when out of memory. */
static int plan_commands(const plan_ctx_t *c, const topo_t *t, int64_t until)
{
    for (size_t i = 0; i < t->n_cmds; i++) {
        const char *argv[6], *reason = NULL;
        char timeout[24];
        int argc = command_argv(&t->cmds[i], argv, timeout, &reason);
        int k = plan_add_redis_action(c->plan, c->ns, t->cmds[i].pod, t->cmds[i].ip, argc, argv, t->cmds[i].why);
        plan_set_not_after(c->plan, k, until);
        plan_add_event(c->plan, "Normal", reason, k, "%s", t->cmds[i].why);
    }
    return *plan_oom(c->plan) ? -1 : 0;
}

/* SWITCHOVER: PLAN_DELETE of the pod t names, with its uid as precondition (a pod
 * recreated meanwhile under the same name is not deleted), and its event. Returns 0, or
 * -1 when out of memory. */
static int plan_delete_pod(const plan_ctx_t *c, const topo_t *t)
{
    plan_t *p = c->plan;
    int *oom = plan_oom(p);
    json_object *body = jsonx_new_obj(oom), *pre = jsonx_new_obj(oom);
    jsonx_put(body, "apiVersion", jsonx_new_str("v1", oom), oom);
    jsonx_put(body, "kind", jsonx_new_str("DeleteOptions", oom), oom);
    jsonx_put(pre, "uid", jsonx_new_str(t->delete_uid, oom), oom);
    jsonx_put(body, "preconditions", pre, oom);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    int i = plan_add_action(p, PLAN_DELETE, "v1", "pods", c->ns, t->delete_pod, body, t->delete_why);
    plan_add_event(p, "Normal", "RolledPod", i, "%s", t->delete_why);
    return *oom ? -1 : 0;
}

/* What the topology says besides actions: the findings, and when to look again (at
 * downAfter rather than at the next "still down"; soon while a rollout or a handover is
 * under way: a pod coming back is a watch event, a replica catching up or a role
 * changing hands is not). */
static void replication_findings(const plan_ctx_t *c, const topo_t *t)
{
    if (t->recheck_after_ms > 0)
        plan_requeue_within(c->plan, t->recheck_after_ms * 1000000);
    if (t->no_candidate)
        plan_degrade(c, "NoFailoverCandidate", "%s", t->elect_why);
    if (t->switch_blocked)
        plan_degrade(c, "NoSwitchoverCandidate", "%s", t->switch_why);
    if (t->switch_wait || t->switch_record || t->switchover_from[0] || t->delete_pod[0])
        plan_requeue_within(c->plan, PLAN_REQUEUE_SWITCHOVER_NS);
}

int plan_replication(const plan_ctx_t *c, const json_object *sts, int rotating, topo_t *topo)
{
    const plan_observed_t *m = c->more;
    const json_object *status = jsonx_get(c->rc, "status"), *obs = current_observation(c);
    topo_roll_t roll = {jsonx_str_set(jsonx_get(sts, "status"), "updateRevision"),
                        jsonx_str_set(status, "switchoverFrom"),
                        plan_members(c) > c->spec->size ? c->spec->size : 0};
    topo_compute_switchover(c->name, plan_members(c), jsonx_str_set(status, "primary"), m ? m->members : NULL, obs,
                            down_after_ms(c), observation_age_ms(c), &roll, topo);
    replication_findings(c, topo);
    /* Labels that take the primary role away first, the Redis commands next, the label
     * that gives it last. Without an observation nothing is known of Redis: no command;
     * nor while the password rotates (the observer cannot authenticate then). A plan
     * that sends commands records it before and after them (COMMAND RECORD,
     * plan_status.h): the status write that goes first takes its place here. */
    int redis = obs && !rotating;
    size_t at = plan_action_count(c->plan);
    int64_t until = c->now + PLAN_COMMAND_WINDOW_NS;
    if (redis && topo->n_cmds)
        plan_set_command_window(c->plan, at, until); /* obs: none is open (current_observation) */
    if (plan_labels(c, topo, 0) || (redis && plan_commands(c, topo, until)) || plan_labels(c, topo, 1) ||
        (redis && topo->delete_pod[0] && plan_delete_pod(c, topo)))
        return -1;
    return *plan_oom(c->plan) ? -1 : 0;
}
