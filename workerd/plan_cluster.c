/* plan_cluster: Cluster mode's Redis side of a plan. See plan_cluster.h and
 * docs/cluster-mode.md. */
#include "plan_cluster.h"

#include "cluster_observe.h"
#include "clock.h"
#include "jsonx.h"
#include "plan_backup.h"
#include "plan_build.h"
#include "render.h"
#include "slotmove.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROOM_KEPT 4 /* actions left for what comes after (the status write, the runtime config) */

/* The shards' StatefulSets summed: present only when every one is there and ours. */
static plan_sts_view_t shards_view(const plan_ctx_t *c, const plan_kids_t *kids)
{
    plan_sts_view_t sum = {0};
    sum.present = kids->shards_ours == c->spec->cluster.shards;
    for (int k = 0; k < c->spec->cluster.shards; k++) {
        plan_sts_view_t v =
            plan_view_statefulset(plan_shard_object(c, c->more ? c->more->shard_statefulsets : NULL, k));
        sum.spec_replicas += v.present ? v.spec_replicas : 0;
        sum.replicas += v.replicas;
        sum.ready += v.ready;
        sum.updated += v.updated;
        sum.rolling |= v.rolling;
    }
    return sum;
}

/* Each kind's Event: its reason and what it says of one command. */
static const struct {
    const char *reason, *verb;
} kind_event[] = {
    [CTOPO_MEET] = {"ClusterMeet", "met"},
    [CTOPO_FORGET] = {"ClusterForget", "forgot a gone node on"},
    [CTOPO_ADDSLOTS] = {"ClusterSlotsAssigned", "assigned slots never assigned to"},
    [CTOPO_REPLICATE] = {"ClusterReplicate", "made a replica of its shard's master:"},
    [CTOPO_FAILOVER] = {"ClusterFailover", "handed a master's role over to"},
    [CTOPO_FLUSH] = {NULL, NULL},
    [CTOPO_DELSLOTS] = {NULL, NULL},
    [CTOPO_RESET] = {"ClusterNodeRetired", "forgot and reset a node leaving the cluster:"},
    [CTOPO_EPOCH] = {"ClusterEpochBumped", "gave a unique config epoch to"},
};
#define NKINDS (sizeof(kind_event) / sizeof(kind_event[0]))

/* FAILOVER FORCE's gone master and other candidates as its action's body
 * (plan_set_redis_body; executor.c reads it). */
static json_object *force_body(const ctopo_input_t *in, const ctopo_cmd_t *cmd, int *oom)
{
    json_object *body = jsonx_new_obj(oom), *list = jsonx_new_arr(oom);
    for (int k = 0; k < cmd->npeers; k++) {
        json_object *o = jsonx_new_obj(oom);
        jsonx_put(o, "pod", jsonx_new_str(in->pod[cmd->peer[k]].pod, oom), oom);
        jsonx_put(o, "ip", jsonx_new_str(in->pod[cmd->peer[k]].ip, oom), oom);
        jsonx_push(list, o, oom);
    }
    jsonx_put(body, "master", jsonx_new_str(cmd->gone, oom), oom);
    jsonx_put(body, "candidates", list, oom);
    return body;
}

/* The commands as PLAN_REDIS actions, as many as the plan has room for, and one Event a
 * kind on its last command naming the pods. Returns how many did not fit (the next
 * reconcile's), or -1 when out of memory. */
static int plan_commands(const plan_ctx_t *c, const ctopo_input_t *in, const ctopo_result_t *r, int64_t until)
{
    plan_t *p = c->plan;
    buf_t pods[NKINDS];
    int last[NKINDS], left = 0;
    for (size_t k = 0; k < NKINDS; k++) {
        buf_init(&pods[k], PLAN_MESSAGE_CAP / 2);
        last[k] = -1;
    }
    int skip = 0;
    for (size_t i = 0; i < r->ncmds; i++) {
        const ctopo_cmd_t *cmd = &r->cmd[i];
        /* a FLUSHALL (and a DELSLOTSRANGE) goes only with the REPLICATE that follows it */
        size_t need = cmd->kind == CTOPO_FLUSH ? 3 : 1;
        if (skip || plan_room(p) < need + ROOM_KEPT) {
            skip = cmd->kind == CTOPO_FLUSH || (skip && cmd->kind == CTOPO_DELSLOTS);
            left++;
            continue;
        }
        const char *argv[CTOPO_MAX_ARGS];
        for (int a = 0; a < cmd->argc; a++)
            argv[a] = cmd->argv[a];
        int at = plan_add_redis_action(p, c->ns, in->pod[cmd->pod].pod, in->pod[cmd->pod].ip, cmd->argc, argv,
                                       cmd->why);
        if (at < 0)
            break;
        plan_set_not_after(p, at, until); /* COMMAND RECORD */
        if (cmd->kind == CTOPO_FAILOVER && *cmd->gone)
            plan_set_redis_body(p, at, force_body(in, cmd, plan_oom(p)));
        last[cmd->kind] = at;
        buf_printf(&pods[cmd->kind], "%s%s", pods[cmd->kind].len ? ", " : "", in->pod[cmd->pod].pod);
    }
    for (size_t k = 0; k < NKINDS; k++) {
        if (last[k] >= 0 && kind_event[k].reason)
            plan_add_event(p, "Normal", kind_event[k].reason, last[k], "Redis Cluster: %s %s", kind_event[k].verb,
                           buf_str(&pods[k]));
        buf_free(&pods[k]);
    }
    return *plan_oom(p) ? -1 : left;
}

/* The role label patch of pod i (role). Returns 0, or -1 when out of memory. */
static int plan_label(const plan_ctx_t *c, const ctopo_pod_t *pod, const char *role)
{
    int *oom = plan_oom(c->plan);
    char why[600];
    json_object *body = jsonx_new_obj(oom), *meta = jsonx_new_obj(oom), *labels = jsonx_new_obj(oom);
    jsonx_put(labels, RENDER_LABEL_ROLE, jsonx_new_str(role, oom), oom);
    jsonx_put(meta, "labels", labels, oom);
    jsonx_put(body, "metadata", meta, oom);
    snprintf(why, sizeof(why), "pod %s/%s: label %s is \"%s\", its Redis Cluster role is %s", c->ns, pod->pod,
             RENDER_LABEL_ROLE, pod->label ? pod->label : "", role);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    return plan_add_action(c->plan, PLAN_LABEL_POD, "v1", "pods", c->ns, pod->pod, body, why) < 0 ? -1 : 0;
}

/* ROLLOUT: the pod i deleted, with its uid as precondition. Returns 0, or -1 when out of
 * memory. */
static int plan_delete_pod(const plan_ctx_t *c, const ctopo_pod_t *pod)
{
    int *oom = plan_oom(c->plan);
    const char *uid = NULL;
    const json_object *members = c->more ? c->more->members : NULL;
    for (size_t i = 0; i < jsonx_len(members) && !uid; i++) {
        const json_object *m = json_object_array_get_idx(members, i);
        if (jsonx_str_is(jsonx_get(m, "metadata"), "name", pod->pod))
            uid = JSONX_STR_AT(m, "metadata", "uid");
    }
    if (!uid)
        return 0; /* not known: the next reconcile */
    json_object *body = plan_delete_options(uid, NULL, oom);
    if (!body)
        return -1;
    char why[600];
    snprintf(why, sizeof(why), "pod %s/%s runs an old revision; every other pod is settled: restart it", c->ns,
             pod->pod);
    int i = plan_add_action(c->plan, PLAN_DELETE, "v1", "pods", c->ns, pod->pod, body, why);
    plan_add_event(c->plan, "Normal", "RolledPod", i, "%s", why);
    return *oom ? -1 : 0;
}

/* Pod i of in as a slot move's end. */
static void move_node(const ctopo_input_t *in, int i, slotmove_node_t *n)
{
    const cn_node_t *me = cn_myself(in->pod[i].view);
    snprintf(n->pod, sizeof(n->pod), "%s", in->pod[i].pod);
    snprintf(n->ip, sizeof(n->ip), "%s", in->pod[i].ip);
    n->port = CTOPO_PORT;
    snprintf(n->id, sizeof(n->id), "%s", me ? me->id : "");
}

void plan_cluster_move_job(const ctopo_input_t *in, const ctopo_move_t *mv, const char *cluster,
                           int64_t batch_bytes, int64_t bytes_per_second, int replicated, slotmove_job_t *job)
{
    memset(job, 0, sizeof(*job));
    snprintf(job->cluster, sizeof(job->cluster), "%s", cluster);
    move_node(in, mv->source, &job->source);
    move_node(in, mv->target, &job->target);
    for (size_t i = 0; i < mv->nothers && i < SLOTMOVE_MAX_OTHERS; i++)
        move_node(in, mv->others[i], &job->others[job->nothers++]);
    job->nranges = mv->nranges < SLOTMOVE_MAX_RANGES ? mv->nranges : SLOTMOVE_MAX_RANGES;
    memcpy(job->ranges, mv->ranges, job->nranges * sizeof(job->ranges[0]));
    job->batch_bytes = batch_bytes;
    job->budget_ns = SLOTMOVE_DEFAULT_BUDGET_NS;
    job->bytes_per_second = bytes_per_second;
    /* slotmove.h, REPLICATED: one replica, as a client's WAIT 1 (a move inside a shard
     * with two masters may have a target nobody follows yet: nothing to wait for) */
    job->wait_replicas = replicated && in->replicas > 0 && mv->nreplicas > 0;
    for (size_t i = 0; replicated && i < mv->nreplicas && i < SLOTMOVE_MAX_REPLICAS; i++)
        move_node(in, mv->replicas[i], &job->replicas[job->nreplicas++]);
}

/* RESHARD: the move mv as a PLAN_SLOT_MOVE (slotmove.h's job: the spec's batch size,
 * budget and rate), with its Event. Returns 0, or -1 when out of memory. */
static int plan_move(const plan_ctx_t *c, const ctopo_input_t *in, const ctopo_result_t *r, const ctopo_move_t *mv)
{
    static slotmove_job_t job;
    plan_cluster_move_job(in, mv, c->name, c->spec->cluster.migration_batch_bytes,
                          c->spec->cluster.migration_bytes_per_second, 1, &job);
    json_object *body = slotmove_job_to_json(&job);
    if (!body)
        return -1;
    char ranges[160], why[600];
    cn_ranges_text(mv->ranges, mv->nranges, ranges, sizeof(ranges));
    snprintf(why, sizeof(why), "%s%d slot(s) %s from %s to %s (%d slot(s) to move in all)",
             mv->resume ? "finish a move cut off: " : "", mv->slots, ranges, in->pod[mv->source].pod,
             in->pod[mv->target].pod, r->slots_to_move);
    int i = plan_add_action(c->plan, PLAN_SLOT_MOVE, "v1", "pods", c->ns, in->pod[mv->source].pod, body, why);
    plan_add_event(c->plan, "Normal", "ClusterReshard", i, "Redis Cluster: moving %s", why);
    return *plan_oom(c->plan) ? -1 : 0;
}

/* The decisions' actions: commands, labels, the rollout's deletion; Degraded findings
 * and the requeue. Returns 0, or -1 when out of memory. */
static int plan_decisions(const plan_ctx_t *c, const ctopo_input_t *in, const ctopo_result_t *r)
{
    plan_t *p = c->plan;
    /* COMMAND RECORD (plan.h): the status says when the commands may go, before them */
    int64_t until = c->now + PLAN_COMMAND_WINDOW_NS;
    if (r->ncmds)
        plan_set_command_window(p, plan_action_count(p), until);
    int left = plan_commands(c, in, r, until);
    if (left < 0)
        return -1;
    for (size_t m = 0; m < r->nmoves && plan_room(p) > ROOM_KEPT; m++)
        if (plan_move(c, in, r, &r->moves[m]))
            return -1;
    /* the replica labels first: a pod of a shard loses role=primary before another gains it */
    int n = r->nshards * (in->width ? in->width : 1 + in->replicas);
    for (int give = 0; give < 2; give++)
        for (int i = 0; i < n; i++)
            if (r->label[i] && (strcmp(r->label[i], "primary") == 0) == give && plan_room(p) > ROOM_KEPT &&
                plan_label(c, &in->pod[i], r->label[i]))
                return -1;
    if (r->delete_pod >= 0 && !r->ncmds && plan_room(p) > ROOM_KEPT && plan_delete_pod(c, &in->pod[r->delete_pod]))
        return -1;
    if (r->degraded)
        plan_degrade(c, r->reason, "%s", r->message);
    if (r->waiting || left)
        plan_requeue_within(p, r->nmoves ? PLAN_REQUEUE_RESHARD_NS : PLAN_REQUEUE_SWITCHOVER_NS);
    return 0;
}

/* FRESHNESS (plan.h), for Cluster mode's pods: 1 when every pod of the cluster with an IP
 * was probed after status.lastRedisCommandTime (its node at the pod's IP, probedAgoMs
 * below the observation's lead over that moment), or no command was ever sent. A record
 * still in the future is the window of a plan that stopped before its last status write:
 * this one closes it and decides nothing (as Replication mode does). */
static int cluster_fresh(const plan_ctx_t *c)
{
    const plan_observed_t *m = c->more;
    int64_t cmd = plan_last_command_ns(c), at = 0;
    if (cmd > c->now) {
        plan_set_command_window(c->plan, plan_action_count(c->plan), 0);
        return 0;
    }
    const json_object *obs = m ? m->redis : NULL;
    if (!obs || !cmd)
        return 1;
    const char *t = jsonx_str_set(obs, "observedAt");
    int64_t lead_ms = t && !clock_parse_rfc3339(t, &at) ? (at - cmd) / 1000000 : -1;
    const json_object *nodes = jsonx_get(obs, "nodes");
    for (size_t i = 0; i < jsonx_len(m->members); i++) {
        const char *ip = JSONX_STR_AT(json_object_array_get_idx(m->members, i), "status", "podIP");
        int64_t ago = -1;
        for (size_t k = 0; ip && *ip && k < jsonx_len(nodes) && ago < 0; k++) {
            const json_object *x = json_object_array_get_idx(nodes, k);
            if (jsonx_str_is(x, "ip", ip))
                ago = jsonx_int_or(x, "probedAgoMs", -1);
        }
        if (ip && *ip && (ago < 0 || ago >= lead_ms))
            return 0;
    }
    return 1;
}

int plan_cluster_decide(const plan_ctx_t *c, plan_cluster_t *out)
{
    memset(out, 0, sizeof(*out));
    out->in = calloc(1, sizeof(*out->in));
    out->r = calloc(1, sizeof(*out->r));
    if (!out->in || !out->r) {
        plan_cluster_free(out);
        return -1;
    }
    const plan_observed_t *m = c->more;
    const json_object *sets[CTOPO_MAX_SHARDS];
    size_t nsets = 0;
    for (int k = 0; k < CTOPO_MAX_SHARDS; k++) {
        const json_object *o = plan_shard_object(c, m ? m->shard_statefulsets : NULL, k);
        if (o)
            sets[nsets++] = o;
    }
    int bootstrapped = jsonx_true(JSONX_AT(c->rc, "status", "cluster"), "bootstrapped");
    int fresh = cluster_fresh(c);
    if (!fresh)
        plan_requeue_within(c->plan, PLAN_REQUEUE_OBSERVE_NS);
    int bad = cluster_observe(c->name, c->spec->cluster.shards, c->spec->cluster.replicas_per_shard, bootstrapped,
                              m ? m->members : NULL, m ? m->redis : NULL, sets, nsets, out->in, out->views);
    if (!bad) {
        out->in->stale = !fresh;
        out->in->moves_held = plan_backup_running(c);
        bad = ctopo_compute(out->in, out->r);
    }
    if (bad) {
        plan_cluster_free(out);
        return 0; /* not a layout (the spec was validated): no decision */
    }
    return 0;
}

int plan_cluster(const plan_ctx_t *c, const plan_kids_t *kids, plan_cluster_t *out)
{
    out->view = shards_view(c, kids);
    if (!out->view.present || !out->r)
        return 0;
    return plan_decisions(c, out->in, out->r);
}

void plan_cluster_free(plan_cluster_t *x)
{
    for (int i = 0; i < CTOPO_MAX_PODS; i++)
        cn_view_destroy(&x->views[i]);
    free(x->in);
    free(x->r);
    x->in = NULL;
    x->r = NULL;
}
